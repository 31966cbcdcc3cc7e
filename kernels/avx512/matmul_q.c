/* matmul_q.c — avx512 matmul of quantized weights against quantized activations (VNNI).
 * Not ref, and not a repacked layout: it reads ggml's blocks straight from the mapping.
 *
 * Order of operations, the same for every (r, t) whatever r0, r1, T or the thread (the
 * tokens of a tile only share the decoded weights; each token has its own accumulators):
 * - 32-blocks x Q8_0 (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): each block's integer dot is exact
 *   (vpdpbusd lanes, reduced as integers). Blocks go in groups of 8, block 8g + i into
 *   float lane i: lane_i = fma(float(isum), dw * dx, lane_i) (+ fma(float(xsum), mw * dx)
 *   for the types with a min). The last group's missing blocks are zero lanes (adds 0 * 0). The
 *   8 lanes are summed once, at the end, in a fixed tree.
 * - super-blocks x Q8_K (Q4_K, Q5_K, Q6_K): the integer sums are exact and the float term
 *   is formed and summed exactly as ref does it, so these are bit-identical to ref.
 * Bound: ref's (kernels/ref/matmul.c) with the same c. Each block term is formed with at
 * most as many roundings as ref's (the fma rounds product and sum once) and the argument
 * there holds for any summation order of the block terms.
 * Exact for every byte value: unsigned x signed products only ever see the weight's
 * unsigned quants or x + 128 (Q8_0 weights: x.w = (x + 128).w - 128 sum(w)). */
#include <immintrin.h>
#include <string.h>

#include "avx512.h"

#define NT     4 /* tokens that share one decode of a weight row */
#define INLINE static inline __attribute__((always_inline))

/* ---- helpers -------------------------------------------------------------------------- */

/* Lane-sums of 8 vectors of 8 int32: result lane i = sum of v[i]'s lanes (exact). */
static inline __m256i hsum8x8(const __m256i v[8])
{
    const __m256i a = _mm256_hadd_epi32(v[0], v[1]), b = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i c = _mm256_hadd_epi32(v[4], v[5]), d = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
    return _mm256_add_epi32(_mm256_permute2x128_si256(ab, cd, 0x20),
                            _mm256_permute2x128_si256(ab, cd, 0x31));
}

/* The fixed tree ((0+4)+(2+6)) + ((1+5)+(3+7)). */
static inline float hsum_ps8(__m256 v)
{
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
}

static inline int32_t hsum_epi32x8(__m256i v)
{
    __m128i a = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    a = _mm_add_epi32(a, _mm_unpackhi_epi64(a, a));
    a = _mm_add_epi32(a, _mm_shuffle_epi32(a, 1));
    return _mm_cvtsi128_si32(a);
}

static inline uint16_t ld16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The f16 values at p[i] + off, i < 8, as floats. */
static inline __m256 f16x8(const uint8_t *const p[8], size_t off)
{
    const __m128i h =
        _mm_set_epi16((short)ld16(p[7] + off), (short)ld16(p[6] + off), (short)ld16(p[5] + off),
                      (short)ld16(p[4] + off), (short)ld16(p[3] + off), (short)ld16(p[2] + off),
                      (short)ld16(p[1] + off), (short)ld16(p[0] + off));
    return _mm256_cvtph_ps(h);
}

static inline __m256i dp(__m256i u, __m256i s)
{
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
}

/* 32 nibbles of a 32-block: element j in the low nibble of qs[j], j + 16 in the high. */
static inline __m256i nibbles32(const uint8_t *qs)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
}

/* Bit 4 of element j is bit j of qh (little-endian). */
static inline __m256i fifth_bits32(const uint8_t *qh)
{
    uint32_t h;
    memcpy(&h, qh, sizeof h);
    return _mm256_maskz_mov_epi8((__mmask32)h, _mm256_set1_epi8(0x10));
}

/* ---- 32-blocks ------------------------------------------------------------------------ */

/* One group of 8 weight blocks against one token's 8 activation blocks: the 8 block
 * integer sums (and, for the types with a min, the 8 activation sums). Per type. */
#define GROUP 8

typedef struct grp {
    __m256i q[GROUP];  /* unsigned weight quants (Q8_0: the signed weights) */
    __m256i wc[GROUP]; /* Q8_0: 128 * sum(w) per block, in lanes */
    __m256 dw, mw;     /* weight scales (and mins) */
} grp;

enum kind { K_Q8_0, K_OFF8, K_OFF16, K_MIN };

/* xb[i]: the token's activation block for weight block i. */
INLINE void grp_token(__m256 *acc, const grp *g, enum kind kind, const uint8_t *const xb[GROUP])
{
    __m256i s[GROUP], xs[GROUP];
    const __m256i c80 = _mm256_set1_epi8((char)0x80), one = _mm256_set1_epi8(1);
    for (int i = 0; i < GROUP; i++) {
        const __m256i xq = _mm256_loadu_si256((const __m256i *)(xb[i] + 2));
        switch (kind) {
        case K_Q8_0:
            s[i] = _mm256_sub_epi32(dp(_mm256_xor_si256(xq, c80), g->q[i]), g->wc[i]);
            break;
        case K_OFF8:
            s[i] = _mm256_sub_epi32(dp(g->q[i], xq), dp(_mm256_set1_epi8(8), xq));
            break;
        case K_OFF16:
            s[i] = _mm256_sub_epi32(dp(g->q[i], xq), dp(_mm256_set1_epi8(16), xq));
            break;
        case K_MIN:
            s[i] = dp(g->q[i], xq);
            xs[i] = dp(one, xq);
            break;
        }
    }
    const __m256 dx = f16x8(xb, 0);
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8x8(s)), _mm256_mul_ps(g->dw, dx), *acc);
    if (kind == K_MIN)
        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8x8(xs)), _mm256_mul_ps(g->mw, dx), *acc);
}

/* Decodes the 8 weight blocks at wp[i] (one of the 32-block types) into g. */
INLINE void grp_load(grp *g, pl_type type, const uint8_t *const wp[GROUP])
{
    switch (type) {
    case PL_TYPE_Q8_0: {
#define b(i) ((const pl_block_q8_0 *)wp[i])
        for (int i = 0; i < GROUP; i++) {
            g->q[i] = _mm256_loadu_si256((const __m256i *)b(i)->qs);
            g->wc[i] = dp(_mm256_set1_epi8((char)0x80), g->q[i]);
        }
        g->dw = f16x8(wp, 0);
#undef b
        break;
    }
    case PL_TYPE_Q4_0: {
#define b(i) ((const pl_block_q4_0 *)wp[i])
        for (int i = 0; i < GROUP; i++) g->q[i] = nibbles32(b(i)->qs);
        g->dw = f16x8(wp, 0);
#undef b
        break;
    }
    case PL_TYPE_Q4_1: {
#define b(i) ((const pl_block_q4_1 *)wp[i])
        for (int i = 0; i < GROUP; i++) g->q[i] = nibbles32(b(i)->qs);
        g->dw = f16x8(wp, 0);
        g->mw = f16x8(wp, 2);
#undef b
        break;
    }
    case PL_TYPE_Q5_0: {
#define b(i) ((const pl_block_q5_0 *)wp[i])
        for (int i = 0; i < GROUP; i++)
            g->q[i] = _mm256_or_si256(nibbles32(b(i)->qs), fifth_bits32(b(i)->qh));
        g->dw = f16x8(wp, 0);
#undef b
        break;
    }
    case PL_TYPE_Q5_1: {
#define b(i) ((const pl_block_q5_1 *)wp[i])
        for (int i = 0; i < GROUP; i++)
            g->q[i] = _mm256_or_si256(nibbles32(b(i)->qs), fifth_bits32(b(i)->qh));
        g->dw = f16x8(wp, 0);
        g->mw = f16x8(wp, 2);
#undef b
        break;
    }
    default:
        break;
    }
}

INLINE enum kind kind_of(pl_type type)
{
    switch (type) {
    case PL_TYPE_Q8_0:
        return K_Q8_0;
    case PL_TYPE_Q4_0:
        return K_OFF8;
    case PL_TYPE_Q5_0:
        return K_OFF16;
    default:
        return K_MIN;
    }
}

/* Stands in for the blocks missing from a row's last group: scale 0, quants 0, so the
 * lane adds 0 * 0 (34 bytes: the largest 32-block). */
static const _Alignas(32) uint8_t zero_block[64];

/* One weight row of nb blocks (wbytes each) against nt <= NT tokens. */
INLINE void row_32(pl_type type, size_t wbytes, float *restrict y, int64_t ldy,
                   const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t nb,
                   const int nt)
{
    const enum kind kind = kind_of(type);
    const size_t xb = sizeof(pl_block_q8_0);
    __m256 acc[NT];
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    grp g;
    for (int64_t b = 0; b < nb; b += GROUP) {
        const uint8_t *wp[GROUP], *xp[GROUP];
        if (nb - b >= GROUP) {
            for (int i = 0; i < GROUP; i++) wp[i] = w + (size_t)(b + i) * wbytes;
        } else {
            for (int i = 0; i < GROUP; i++)
                wp[i] = b + i < nb ? w + (size_t)(b + i) * wbytes : zero_block;
        }
        grp_load(&g, type, wp);
        for (int t = 0; t < nt; t++) {
            const uint8_t *xt = x + (size_t)t * xrb;
            for (int i = 0; i < GROUP; i++)
                xp[i] = b + i < nb ? xt + (size_t)(b + i) * xb : zero_block;
            grp_token(&acc[t], &g, kind, xp);
        }
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = hsum_ps8(acc[t]);
}

#define MATMUL_32(name, type, block)                                                               \
    void name(PL_AVX512_MATMUL_ARGS)                                                               \
    {                                                                                              \
        const int64_t nb = K / 32;                                                                 \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_row_bytes;                      \
            for (int64_t t = 0; t < T; t += NT) {                                                  \
                float *yt = y + t * ldy + r;                                                       \
                const uint8_t *xt = (const uint8_t *)x + (size_t)t * x_row_bytes;                  \
                switch (T - t < NT ? T - t : NT) {                                                 \
                case 1:                                                                            \
                    row_32(type, sizeof(block), yt, ldy, wr, xt, x_row_bytes, nb, 1);              \
                    break;                                                                         \
                case 2:                                                                            \
                    row_32(type, sizeof(block), yt, ldy, wr, xt, x_row_bytes, nb, 2);              \
                    break;                                                                         \
                case 3:                                                                            \
                    row_32(type, sizeof(block), yt, ldy, wr, xt, x_row_bytes, nb, 3);              \
                    break;                                                                         \
                default:                                                                           \
                    row_32(type, sizeof(block), yt, ldy, wr, xt, x_row_bytes, nb, 4);              \
                    break;                                                                         \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

MATMUL_32(matmul_q8_0_q8_0_avx512, PL_TYPE_Q8_0, pl_block_q8_0)
MATMUL_32(matmul_q4_0_q8_0_avx512, PL_TYPE_Q4_0, pl_block_q4_0)
MATMUL_32(matmul_q4_1_q8_0_avx512, PL_TYPE_Q4_1, pl_block_q4_1)
MATMUL_32(matmul_q5_0_q8_0_avx512, PL_TYPE_Q5_0, pl_block_q5_0)
MATMUL_32(matmul_q5_1_q8_0_avx512, PL_TYPE_Q5_1, pl_block_q5_1)

/* ---- super-blocks --------------------------------------------------------------------- */

static inline float f16f(pl_f16 h)
{
    return _cvtsh_ss(h);
}

/* The 6-bit scales and mins of a Q4_K/Q5_K super-block (layout: kernels/ref/quant.c). */
static inline void scales_k4(const uint8_t s[12], int32_t sc[8], int32_t mn[8])
{
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (s[j + 8] & 0x0f) | (s[j] >> 6) << 4;
        mn[j + 4] = (s[j + 8] >> 4) | (s[j + 4] >> 6) << 4;
    }
}

/* sum_j mn[j] * (bsums[2j] + bsums[2j + 1]) */
static inline int32_t mins_k4(const int32_t mn[8], const int16_t bsums[16])
{
    const __m256i b = _mm256_loadu_si256((const __m256i *)bsums);
    const __m256i m = _mm256_set_epi16((short)mn[7], (short)mn[7], (short)mn[6], (short)mn[6],
                                       (short)mn[5], (short)mn[5], (short)mn[4], (short)mn[4],
                                       (short)mn[3], (short)mn[3], (short)mn[2], (short)mn[2],
                                       (short)mn[1], (short)mn[1], (short)mn[0], (short)mn[0]);
    return hsum_epi32x8(_mm256_madd_epi16(b, m));
}

/* Q4_K/Q5_K: ref's term d * float(isum) - dmin * float(summs), with hb the fifth bits
 * (NULL for Q4_K). */
static inline float term_k4(const uint8_t *qs, const uint8_t *qh, const uint8_t scales[12],
                            pl_f16 dw, pl_f16 dminw, const pl_block_q8_k *restrict x)
{
    int32_t sc[8], mn[8];
    scales_k4(scales, sc, mn);
    const __m256i m4 = _mm256_set1_epi8(0x0f), b5 = _mm256_set1_epi8(0x10);
    __m256i hb = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    __m256i acc = _mm256_setzero_si256();
    for (int p = 0; p < 4; p++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * p));
        __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        if (qh) {
            lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hb, 4), b5));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(hb, 3), b5));
            hb = _mm256_srli_epi16(hb, 2);
        }
        const __m256i x0 = _mm256_loadu_si256((const __m256i *)(x->qs + 64 * p));
        const __m256i x1 = _mm256_loadu_si256((const __m256i *)(x->qs + 64 * p + 32));
        acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(dp(lo, x0), _mm256_set1_epi32(sc[2 * p])));
        acc =
            _mm256_add_epi32(acc, _mm256_mullo_epi32(dp(hi, x1), _mm256_set1_epi32(sc[2 * p + 1])));
    }
    const int32_t isum = hsum_epi32x8(acc), summs = mins_k4(mn, x->bsums);
    const float d = f16f(dw) * x->d, dmin = f16f(dminw) * x->d;
    return d * (float)isum - dmin * (float)summs;
}

static inline float dot_q4_k(const pl_block_q4_k *restrict w, const pl_block_q8_k *restrict x,
                             int64_t nb)
{
    float s = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        s += term_k4(w[b].qs, NULL, w[b].scales, w[b].d, w[b].dmin, &x[b]);
    return s;
}

static inline float dot_q5_k(const pl_block_q5_k *restrict w, const pl_block_q8_k *restrict x,
                             int64_t nb)
{
    float s = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        s += term_k4(w[b].qs, w[b].qh, w[b].scales, w[b].d, w[b].dmin, &x[b]);
    return s;
}

/* Q6_K: ref's (d * dx) * float(sum_j sc_j * sum_l (q - 32) x), the -32 folded in through
 * the activation's bsums. */
static inline float dot_q6_k(const pl_block_q6_k *restrict w, const pl_block_q8_k *restrict x,
                             int64_t nb)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03);
    const __m256i idx[4] = {
        _mm256_set_epi32(1, 1, 1, 1, 0, 0, 0, 0), _mm256_set_epi32(3, 3, 3, 3, 2, 2, 2, 2),
        _mm256_set_epi32(5, 5, 5, 5, 4, 4, 4, 4), _mm256_set_epi32(7, 7, 7, 7, 6, 6, 6, 6)};
    float s = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)w[b].scales);
        __m256i acc = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = w[b].ql + 64 * h, *qh = w[b].qh + 32 * h;
            const int8_t *xq = x[b].qs + 128 * h;
            const __m256i sc = _mm256_cvtepi8_epi32(h ? _mm_unpackhi_epi64(sc8, sc8) : sc8);
            const __m256i a = _mm256_loadu_si256((const __m256i *)ql);
            const __m256i c = _mm256_loadu_si256((const __m256i *)(ql + 32));
            const __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(a, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
            q[1] = _mm256_or_si256(
                _mm256_and_si256(c, m4),
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
            q[2] = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(a, 4), m4),
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
            q[3] = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(c, 4), m4),
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
            for (int i = 0; i < 4; i++) {
                const __m256i xv = _mm256_loadu_si256((const __m256i *)(xq + 32 * i));
                acc = _mm256_add_epi32(
                    acc, _mm256_mullo_epi32(dp(q[i], xv), _mm256_permutevar8x32_epi32(sc, idx[i])));
            }
        }
        const __m256i bs = _mm256_loadu_si256((const __m256i *)x[b].bsums);
        const int32_t corr = hsum_epi32x8(_mm256_madd_epi16(bs, _mm256_cvtepi8_epi16(sc8)));
        const int32_t isum = hsum_epi32x8(acc) - 32 * corr;
        const float d = f16f(w[b].d) * x[b].d;
        s += d * (float)isum;
    }
    return s;
}

#define MATMUL_K(name, block, dot)                                                                 \
    void name(PL_AVX512_MATMUL_ARGS)                                                               \
    {                                                                                              \
        const int64_t nb = K / PL_QK_K;                                                            \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const block *wr = (const block *)((const uint8_t *)w + (size_t)r * w_row_bytes);       \
            for (int64_t t = 0; t < T; t++)                                                        \
                y[t * ldy + r] =                                                                   \
                    dot(wr, (const pl_block_q8_k *)((const uint8_t *)x + (size_t)t * x_row_bytes), \
                        nb);                                                                       \
        }                                                                                          \
    }

MATMUL_K(matmul_q4_k_q8_k_avx512, pl_block_q4_k, dot_q4_k)
MATMUL_K(matmul_q5_k_q8_k_avx512, pl_block_q5_k, dot_q5_k)
MATMUL_K(matmul_q6_k_q8_k_avx512, pl_block_q6_k, dot_q6_k)
