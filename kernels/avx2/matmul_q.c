/* matmul_q.c — avx2 matmul of quantized weights against quantized activations (AVX2, no
 * VNNI). Not ref, and not a repacked layout: it reads ggml's blocks straight from the mapping.
 *
 * Order of operations, the same for every (r, t) whatever r0, r1, T or the thread (the
 * tokens of a tile only share the decoded weights; each token has its own accumulators):
 * - 32-blocks x Q8_0 (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): each block's integer dot is exact,
 *   reduced as integers. Blocks go in groups of 8, block 8g + i into float lane i:
 *   lane_i = fma(float(isum), dw * dx, lane_i) (+ fma(float(xsum), mw * dx) for the types
 *   with a min). In the last group the missing blocks count as zero blocks (adds 0 * 0),
 *   without reading past the row. The 8 lanes are summed once, at the end, in a fixed tree.
 * - super-blocks x Q8_K (Q4_K, Q5_K, Q6_K): the integer sums are exact and the float term
 *   is formed and summed exactly as ref does it, so these are bit-identical to ref.
 * Bound: ref's (kernels/ref/matmul.c) with the same c. Each block term is formed with at
 * most as many roundings as ref's (the fma rounds product and sum once) and the argument
 * there holds for any summation order of the block terms.
 *
 * Exact for every byte value. The traps: maddubs (u8 x s8, pairs added into int16)
 * saturates, and sign_epi8 cannot negate -128 (so it is not used). maddubs only ever sees
 * unsigned weight quants <= 63 (or a constant <= 16) against int8 activations, a pair at
 * most 2 * 63 * 128 = 16128, or activations + 128 (<= 255) against signed weights in
 * [-16, 15], a pair at most 2 * 255 * 16 = 8160; both < 2^15. Q8_0 x Q8_0 (s8 x s8, a pair
 * up to 2 * 128 * 128 = 2^15) widens both to int16 and uses madd (int16 x int16 into int32,
 * exact). Where int16 pair sums are added further (hsum8x16), the comment there bounds
 * them. Which exact integer method runs may depend on the tile (grp_token): the integers,
 * hence every float operation, do not. */
#include <immintrin.h>
#include <string.h>

#include "avx2.h"

#define NT     4 /* tokens that share one decode of a weight row */
#define INLINE static inline __attribute__((always_inline))

/* ---- helpers -------------------------------------------------------------------------- */

/* The fixed tree ((0+4)+(2+6)) + ((1+5)+(3+7)). */
INLINE float hsum_ps8(__m256 v)
{
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
}

/* Lane-sums of 8 vectors: result lane i = the sum of v[i]'s lanes, in int32, by unpack and
 * add (hadd is microcoded on AMD and two shuffles on Intel). Per 128-bit half: level 1
 * pairs v[2i], v[2i+1] 32-bit unit by unit, level 2 pairs those 64-bit unit by unit, leaving
 * [v0 v1 v2 v3] and [v4 v5 v6 v7]; level 3 adds the halves. Unpacks move 32-bit units, so
 * with int16 lanes (in16) the two lanes of a unit stay one vector's and are added apart;
 * madd_epi16 by 1 then widens each unit into int32. Exact: int32 sums are within range by
 * the callers' bounds, and in16 adds at most 4 lanes in int16, exact when every lane is at
 * most 8191 in magnitude (4 * 8191 < 2^15). */

/* levels 2 and 3, from p[i] = level 1 of v[2i], v[2i+1] */
INLINE __m256i hsum_l23(const __m256i p[4], const int in16)
{
    __m256i q[2];
    for (int i = 0; i < 2; i++) {
        const __m256i lo = _mm256_unpacklo_epi64(p[2 * i], p[2 * i + 1]);
        const __m256i hi = _mm256_unpackhi_epi64(p[2 * i], p[2 * i + 1]);
        q[i] = in16 ? _mm256_madd_epi16(_mm256_add_epi16(lo, hi), _mm256_set1_epi16(1))
                    : _mm256_add_epi32(lo, hi);
    }
    return _mm256_add_epi32(_mm256_permute2x128_si256(q[0], q[1], 0x20),
                            _mm256_permute2x128_si256(q[0], q[1], 0x31));
}

INLINE __m256i hsum8x8_(const __m256i v[8], const int in16)
{
    __m256i p[4];
    for (int i = 0; i < 4; i++) {
        const __m256i lo = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        const __m256i hi = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
        p[i] = in16 ? _mm256_add_epi16(lo, hi) : _mm256_add_epi32(lo, hi);
    }
    return hsum_l23(p, in16);
}

/* 8 vectors of 8 int32 */
INLINE __m256i hsum8x8(const __m256i v[8])
{
    return hsum8x8_(v, 0);
}

/* 8 vectors of 16 int16, each lane at most 8191 in magnitude */
INLINE __m256i hsum8x16(const __m256i v[8])
{
    return hsum8x8_(v, 1);
}

/* 8 vectors of 32 unsigned bytes: sad_epu8 against 0 sums each 8 bytes into a 64-bit unit
 * (<= 2040); two vectors share the units as low and high 32 bits, the shape of level 1. */
INLINE __m256i hsum8x32u(const __m256i u[8])
{
    const __m256i zero = _mm256_setzero_si256();
    __m256i p[4];
    for (int i = 0; i < 4; i++)
        p[i] = _mm256_or_si256(_mm256_sad_epu8(u[2 * i], zero),
                               _mm256_slli_epi64(_mm256_sad_epu8(u[2 * i + 1], zero), 32));
    return hsum_l23(p, 0);
}

INLINE int32_t hsum_epi32x8(__m256i v)
{
    __m128i a = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    a = _mm_add_epi32(a, _mm_unpackhi_epi64(a, a));
    a = _mm_add_epi32(a, _mm_shuffle_epi32(a, 1));
    return _mm_cvtsi128_si32(a);
}

INLINE uint64_t ld16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The f16 values at p, p + s, ..., p + 7s as floats; lanes n.. are 0 and not read. Put
 * together in general registers: two 64-bit words, one insert, one conversion. */
INLINE __m256 f16x8(const uint8_t *p, size_t s, const int n)
{
    uint64_t lo = 0, hi = 0;
    for (int i = 0; i < 4; i++)
        if (i < n) lo |= ld16(p + (size_t)i * s) << (16 * i);
    for (int i = 4; i < 8; i++)
        if (i < n) hi |= ld16(p + (size_t)i * s) << (16 * (i - 4));
    return _mm256_cvtph_ps(_mm_insert_epi64(_mm_cvtsi64_si128((long long)lo), (long long)hi, 1));
}

/* 32 nibbles of a 32-block: element j in the low nibble of qs[j], j + 16 in the high. */
INLINE __m256i nibbles32(const uint8_t *qs)
{
    const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    return _mm256_and_si256(_mm256_srlv_epi64(v, _mm256_set_epi64x(4, 4, 0, 0)),
                            _mm256_set1_epi8(0x0f));
}

/* 0x10 in byte j where bit j of qh (little-endian) is set. */
INLINE __m256i fifth_bits32(const uint8_t *qh)
{
    uint32_t h;
    memcpy(&h, qh, sizeof h);
    /* byte j gets byte j / 8 of h, then tests its bit j % 8 */
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                         2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201ll);
    const __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h), sel);
    const __m256i on = _mm256_cmpeq_epi8(_mm256_and_si256(b, bit), bit);
    return _mm256_and_si256(on, _mm256_set1_epi8(0x10));
}

/* ---- 32-blocks ------------------------------------------------------------------------ */

#define GROUP 8

/* One group of 8 weight blocks, decoded once for the tokens of a tile. */
typedef struct grp {
    __m256i q[GROUP][2]; /* the quants: Q8_0 as int16 (2 halves), Q4_0/Q5_0 as q - 8 or
                            q - 16 (int8), Q4_1/Q5_1 as they are (uint8) */
    __m256i wc;          /* Q4_0/Q5_0: 128 * sum(q - off) of block i in lane i */
    __m256 dw, mw;       /* weight scales (and mins), lane i for block i */
} grp;

enum kind { K_Q8_0, K_OFF8, K_OFF16, K_MIN };

/* One group's (n <= 8 blocks) integer sums against one token's blocks xb, into acc.
 * Q4_0, Q5_0 (offset off = 8, 16) shared by several tokens: the signed weight w = q - off
 * meets x + 128, unsigned: sum w x = sum w (x + 128) - 128 sum w, the last term the
 * weights' own (g->wc), so a block costs one maddubs; |w (x + 128)| <= 16 * 255, a pair at
 * most 8160. For one token alone: maddubs(q, x) - maddubs(off, x), no wc to compute; pairs
 * <= 2 * 31 * 128 = 7936 and 2 * 16 * 128 = 4096, the difference <= 4096. Both ways give
 * the same exact integers, hence the same float operations. Q4_1, Q5_1: q <= 31 meets x,
 * a pair <= 7936, and sum x = the bytes of x + 128 summed, less 32 * 128. All under 8191,
 * so hsum8x16 is exact. */
INLINE void grp_token(__m256 *acc, const grp *g, enum kind kind, const pl_block_q8_0 *restrict xb,
                      const int n, const int shared)
{
    __m256i s[GROUP], xu[GROUP];
    const __m256i zero = _mm256_setzero_si256(), c80 = _mm256_set1_epi8((char)0x80);
    const __m256i off = _mm256_set1_epi8(kind == K_OFF16 ? 16 : 8);
    const int has_off = kind == K_OFF8 || kind == K_OFF16;
    for (int i = 0; i < GROUP; i++) {
        s[i] = zero;
        xu[i] = c80; /* a zero block: x + 128 = 128, so its sum of x is 0 */
        if (i >= n) continue;
        if (kind == K_Q8_0) {
            const __m256i x0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)xb[i].qs));
            const __m256i x1 =
                _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(xb[i].qs + 16)));
            s[i] = _mm256_add_epi32(_mm256_madd_epi16(g->q[i][0], x0),
                                    _mm256_madd_epi16(g->q[i][1], x1));
            continue;
        }
        const __m256i xq = _mm256_loadu_si256((const __m256i *)xb[i].qs);
        if (has_off && shared) {
            s[i] = _mm256_maddubs_epi16(_mm256_xor_si256(xq, c80), g->q[i][0]);
        } else if (has_off) {
            s[i] = _mm256_sub_epi16(_mm256_maddubs_epi16(g->q[i][0], xq),
                                    _mm256_maddubs_epi16(off, xq));
        } else {
            s[i] = _mm256_maddubs_epi16(g->q[i][0], xq);
            xu[i] = _mm256_xor_si256(xq, c80);
        }
    }
    const __m256 dx = f16x8((const uint8_t *)&xb[0].d, sizeof(pl_block_q8_0), n);
    __m256i isum;
    if (kind == K_Q8_0)
        isum = hsum8x8(s);
    else if (has_off && shared)
        isum = _mm256_sub_epi32(hsum8x16(s), g->wc);
    else
        isum = hsum8x16(s);
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(g->dw, dx), *acc);
    if (kind == K_MIN) {
        const __m256i xsum = _mm256_sub_epi32(hsum8x32u(xu), _mm256_set1_epi32(32 * 128));
        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(xsum), _mm256_mul_ps(g->mw, dx), *acc);
    }
}

/* Q4_0/Q5_0 shared by several tokens: g->q[i] = q - off, and g->wc from the unsigned
 * quants u (zero blocks: u = off, so w = 0 and wc 0); for one token g->q[i] = u. */
INLINE void grp_offset(grp *g, const __m256i u[GROUP], int off, const int shared)
{
    if (!shared) {
        for (int i = 0; i < GROUP; i++) g->q[i][0] = u[i];
        return;
    }
    for (int i = 0; i < GROUP; i++) g->q[i][0] = _mm256_sub_epi8(u[i], _mm256_set1_epi8((char)off));
    g->wc = _mm256_sub_epi32(_mm256_slli_epi32(hsum8x32u(u), 7), _mm256_set1_epi32(128 * 32 * off));
}

/* Decodes n <= 8 consecutive weight blocks of one of the 32-block types into g. Blocks n..
 * are not read: their quants and scales are 0 and grp_token gives them zero sums. */
INLINE void grp_load(grp *g, pl_type type, const void *restrict wb, const int n, const int shared)
{
    const __m256i zero = _mm256_setzero_si256();
    for (int i = 0; i < GROUP; i++) g->q[i][0] = g->q[i][1] = zero;
    __m256i u[GROUP];
    switch (type) {
    case PL_TYPE_Q8_0: {
        const pl_block_q8_0 *b = wb;
        for (int i = 0; i < n; i++) {
            g->q[i][0] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b[i].qs));
            g->q[i][1] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b[i].qs + 16)));
        }
        g->dw = f16x8((const uint8_t *)&b[0].d, sizeof *b, n);
        break;
    }
    case PL_TYPE_Q4_0: {
        const pl_block_q4_0 *b = wb;
        for (int i = 0; i < GROUP; i++) u[i] = i < n ? nibbles32(b[i].qs) : _mm256_set1_epi8(8);
        grp_offset(g, u, 8, shared);
        g->dw = f16x8((const uint8_t *)&b[0].d, sizeof *b, n);
        break;
    }
    case PL_TYPE_Q4_1: {
        const pl_block_q4_1 *b = wb;
        for (int i = 0; i < n; i++) g->q[i][0] = nibbles32(b[i].qs);
        g->dw = f16x8((const uint8_t *)&b[0].d, sizeof *b, n);
        g->mw = f16x8((const uint8_t *)&b[0].m, sizeof *b, n);
        break;
    }
    case PL_TYPE_Q5_0: {
        const pl_block_q5_0 *b = wb;
        for (int i = 0; i < GROUP; i++)
            u[i] = i < n ? _mm256_or_si256(nibbles32(b[i].qs), fifth_bits32(b[i].qh))
                         : _mm256_set1_epi8(16);
        grp_offset(g, u, 16, shared);
        g->dw = f16x8((const uint8_t *)&b[0].d, sizeof *b, n);
        break;
    }
    case PL_TYPE_Q5_1: {
        const pl_block_q5_1 *b = wb;
        for (int i = 0; i < n; i++)
            g->q[i][0] = _mm256_or_si256(nibbles32(b[i].qs), fifth_bits32(b[i].qh));
        g->dw = f16x8((const uint8_t *)&b[0].d, sizeof *b, n);
        g->mw = f16x8((const uint8_t *)&b[0].m, sizeof *b, n);
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

/* One weight row of nb blocks (wbytes each) against nt <= NT tokens. */
INLINE void row_32(pl_type type, size_t wbytes, float *restrict y, int64_t ldy,
                   const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t nb,
                   const int nt)
{
    const enum kind kind = kind_of(type);
    __m256 acc[NT];
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    const int64_t full = nb / GROUP * GROUP;
    grp g;
    for (int64_t b = 0; b < full; b += GROUP) {
        grp_load(&g, type, w + (size_t)b * wbytes, GROUP, nt > 1);
#pragma GCC unroll 4 /* acc[] in registers, not on the stack */
        for (int t = 0; t < nt; t++)
            grp_token(&acc[t], &g, kind, (const pl_block_q8_0 *)(x + (size_t)t * xrb) + b, GROUP,
                      nt > 1);
    }
    if (full < nb) { /* the same operations as a group padded with zero blocks */
        const int n = (int)(nb - full);
        grp_load(&g, type, w + (size_t)full * wbytes, n, nt > 1);
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            grp_token(&acc[t], &g, kind, (const pl_block_q8_0 *)(x + (size_t)t * xrb) + full, n,
                      nt > 1);
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = hsum_ps8(acc[t]);
}

#define MATMUL_32(name, type, block)                                                               \
    void name(PL_AVX2_MATMUL_ARGS)                                                                 \
    {                                                                                              \
        const int64_t nb = K / 32;                                                                 \
        const size_t wb = sizeof(block), xrb = x_row_bytes;                                        \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_row_bytes;                      \
            for (int64_t t = 0; t < T; t += NT) {                                                  \
                float *yt = y + t * ldy + r;                                                       \
                const uint8_t *xt = (const uint8_t *)x + (size_t)t * xrb;                          \
                switch (T - t < NT ? T - t : NT) {                                                 \
                case 1:                                                                            \
                    row_32(type, wb, yt, ldy, wr, xt, xrb, nb, 1);                                 \
                    break;                                                                         \
                case 2:                                                                            \
                    row_32(type, wb, yt, ldy, wr, xt, xrb, nb, 2);                                 \
                    break;                                                                         \
                case 3:                                                                            \
                    row_32(type, wb, yt, ldy, wr, xt, xrb, nb, 3);                                 \
                    break;                                                                         \
                default:                                                                           \
                    row_32(type, wb, yt, ldy, wr, xt, xrb, nb, 4);                                 \
                    break;                                                                         \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

MATMUL_32(matmul_q8_0_q8_0_avx2, PL_TYPE_Q8_0, pl_block_q8_0)
MATMUL_32(matmul_q4_0_q8_0_avx2, PL_TYPE_Q4_0, pl_block_q4_0)
MATMUL_32(matmul_q4_1_q8_0_avx2, PL_TYPE_Q4_1, pl_block_q4_1)
MATMUL_32(matmul_q5_0_q8_0_avx2, PL_TYPE_Q5_0, pl_block_q5_0)
MATMUL_32(matmul_q5_1_q8_0_avx2, PL_TYPE_Q5_1, pl_block_q5_1)

/* ---- super-blocks --------------------------------------------------------------------- */

INLINE float f16f(pl_f16 h)
{
    return _cvtsh_ss(h);
}

/* isum and summs of one token from its int32 accumulators (exact, any order). */
INLINE void hsum2(__m256i a, __m256i m, int32_t *sa, int32_t *sm)
{
    const __m256i u = _mm256_add_epi32(_mm256_unpacklo_epi32(a, m), _mm256_unpackhi_epi32(a, m));
    __m128i v = _mm_add_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
    v = _mm_add_epi32(v, _mm_unpackhi_epi64(v, v)); /* [a m . .] */
    *sa = _mm_cvtsi128_si32(v);
    *sm = _mm_extract_epi32(v, 1);
}

/* Q4_K/Q5_K: one super-block's weights decoded for the tokens of a tile. */
typedef struct kblk {
    __m256i sc2;  /* the 8 sub-block scales as int16, in both 128-bit halves */
    __m256i mins; /* int16 [m0 m0 m1 m1 ... m7 m7], paired with the activation's bsums */
    float d, dmin;
} kblk;

/* The 6-bit scales and mins of a Q4_K/Q5_K super-block (layout: kernels/ref/quant.c),
 * unpacked four at a time in 32-bit words. */
INLINE void kblk_load(kblk *k, const uint8_t s[12], pl_f16 d, pl_f16 dmin)
{
    uint32_t u[4];
    memcpy(u, s, 12);
    const uint32_t m6 = 0x3f3f3f3fu, m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    u[3] = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4); /* mins 4..7 */
    const uint32_t mn03 = u[1] & m6;                       /* mins 0..3 */
    u[1] = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);        /* scales 4..7 */
    u[0] &= m6;                                            /* scales 0..3 */
    u[2] = mn03;
    const __m128i b = _mm_setr_epi32((int)u[0], (int)u[1], (int)u[2], (int)u[3]);
    const __m128i sc = _mm_cvtepu8_epi16(b), mn = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(b, b));
    k->sc2 = _mm256_set_m128i(sc, sc);
    k->mins = _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn));
    k->d = f16f(d);
    k->dmin = f16f(dmin);
}

/* Sub-block j's scale in every int16 lane. */
INLINE __m256i kscale(const kblk *k, int j)
{
    return _mm256_shuffle_epi8(k->sc2, _mm256_set1_epi16((short)(0x0100 + 0x0202 * j)));
}

/* One Q4_K/Q5_K weight row against nt tokens (has_qh: Q5_K's fifth bits). Per token and
 * super-block: isum = sum_j sc_j * (q . x)_j, summs = sum_j m_j * (bsums 2j + 2j+1), then
 * ref's s += d * float(isum) - dmin * float(summs) with d = dw * dx, dmin = dminw * dx.
 * maddubs(q, x): q <= 31, a pair at most 2 * 31 * 128 = 7936; madd by sc <= 63 into int32. */
INLINE void row_k4(float *restrict y, int64_t ldy, const uint8_t *restrict w, size_t wbytes,
                   size_t qs_off, size_t qh_off, int has_qh, const uint8_t *restrict x, size_t xrb,
                   int64_t nb, const int nt)
{
    float s[NT];
    for (int t = 0; t < nt; t++) s[t] = 0.0f;
    const __m256i m4 = _mm256_set1_epi8(0x0f), b5 = _mm256_set1_epi8(0x10);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *wb = w + (size_t)b * wbytes;
        const pl_block_q4_k *hdr = (const pl_block_q4_k *)wb; /* d, dmin, scales: same in Q5_K */
        kblk k;
        kblk_load(&k, hdr->scales, hdr->d, hdr->dmin);
        __m256i acc[NT];
        for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_si256();
        __m256i hb =
            has_qh ? _mm256_loadu_si256((const __m256i *)(wb + qh_off)) : _mm256_setzero_si256();
        for (int p = 0; p < 4; p++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(wb + qs_off + 32 * p));
            __m256i lo = _mm256_and_si256(v, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            if (has_qh) {
                lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hb, 4), b5));
                hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(hb, 3), b5));
                hb = _mm256_srli_epi16(hb, 2);
            }
            const __m256i sl = kscale(&k, 2 * p), sh = kscale(&k, 2 * p + 1);
            for (int t = 0; t < nt; t++) {
                const pl_block_q8_k *xb = (const pl_block_q8_k *)(x + (size_t)t * xrb) + b;
                const __m256i x0 = _mm256_loadu_si256((const __m256i *)(xb->qs + 64 * p));
                const __m256i x1 = _mm256_loadu_si256((const __m256i *)(xb->qs + 64 * p + 32));
                acc[t] = _mm256_add_epi32(
                    acc[t], _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(lo, x0), sl),
                                             _mm256_madd_epi16(_mm256_maddubs_epi16(hi, x1), sh)));
            }
        }
        for (int t = 0; t < nt; t++) {
            const pl_block_q8_k *xb = (const pl_block_q8_k *)(x + (size_t)t * xrb) + b;
            const __m256i bs = _mm256_loadu_si256((const __m256i *)xb->bsums);
            int32_t isum, summs;
            hsum2(acc[t], _mm256_madd_epi16(bs, k.mins), &isum, &summs);
            const float d = k.d * xb->d, dmin = k.dmin * xb->d;
            s[t] += d * (float)isum - dmin * (float)summs;
        }
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = s[t];
}

/* The scale of sub-blocks 2i (low 128-bit half) and 2i + 1 (high half) in int16 lanes, from
 * sc = 8 int16 scales repeated in both halves. */
INLINE __m256i q6_scale(__m256i sc, int i)
{
    const __m128i lo = _mm_set1_epi16((short)(0x0100 + 0x0404 * i));
    const __m128i hi = _mm_set1_epi16((short)(0x0302 + 0x0404 * i));
    return _mm256_shuffle_epi8(sc, _mm256_set_m128i(hi, lo));
}

/* One Q6_K weight row against nt tokens: ref's s += (d * dx) * float(isum), isum =
 * sum_j sc_j * sum_l (q - 32) x, the -32 folded in through the activation's bsums (which
 * the Q8_K quantizer writes as the sums of its quants). maddubs(q, x): q <= 63, a pair at
 * most 2 * 63 * 128 = 16128; madd by the int8 scale into int32. */
/* ref's s[t] += (dw dx) float(isum) for each token, isum = acc[t] - 2^shift (sc . bsums):
 * the offset of Q6_K's q - 32 (shift 5) and Q3_K's q - 4 (shift 2) taken off exactly through
 * the activations' block sums (sc: the 16 sub-block scales as int16). */
INLINE void add_terms_less_offset(float *s, int nt, const uint8_t *x, size_t xrb, int64_t b,
                                  const __m256i *acc, __m256i sc, const int shift, float dw)
{
    for (int t = 0; t < nt; t++) {
        const pl_block_q8_k *xb = (const pl_block_q8_k *)(x + (size_t)t * xrb) + b;
        const __m256i bs = _mm256_loadu_si256((const __m256i *)xb->bsums);
        const __m256i corr = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc), shift);
        const int32_t isum = hsum_epi32x8(_mm256_sub_epi32(acc[t], corr));
        const float d = dw * xb->d;
        s[t] += d * (float)isum;
    }
}

INLINE void row_q6_k(float *restrict y, int64_t ldy, const pl_block_q6_k *restrict w,
                     const uint8_t *restrict x, size_t xrb, int64_t nb, const int nt)
{
    float s[NT];
    for (int t = 0; t < nt; t++) s[t] = 0.0f;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03);
    for (int64_t b = 0; b < nb; b++) {
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[b].scales));
        __m256i acc[NT];
        for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = w[b].ql + 64 * h, *qh = w[b].qh + 32 * h;
            const __m256i sch = h ? _mm256_permute2x128_si256(sc, sc, 0x11)
                                  : _mm256_permute2x128_si256(sc, sc, 0x00);
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
                const __m256i si = q6_scale(sch, i);
                for (int t = 0; t < nt; t++) {
                    const pl_block_q8_k *xb = (const pl_block_q8_k *)(x + (size_t)t * xrb) + b;
                    const __m256i xv =
                        _mm256_loadu_si256((const __m256i *)(xb->qs + 128 * h + 32 * i));
                    acc[t] = _mm256_add_epi32(
                        acc[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q[i], xv), si));
                }
            }
        }
        add_terms_less_offset(s, nt, x, xrb, b, acc, sc, 5, f16f(w[b].d));
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = s[t];
}

#define TILE_K(call)                                                                               \
    for (int64_t r = r0; r < r1; r++) {                                                            \
        const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_row_bytes;                          \
        for (int64_t t = 0; t < T; t += NT) {                                                      \
            float *yt = y + t * ldy + r;                                                           \
            const uint8_t *xt = (const uint8_t *)x + (size_t)t * x_row_bytes;                      \
            switch (T - t < NT ? T - t : NT) {                                                     \
            case 1:                                                                                \
                call(1);                                                                           \
                break;                                                                             \
            case 2:                                                                                \
                call(2);                                                                           \
                break;                                                                             \
            case 3:                                                                                \
                call(3);                                                                           \
                break;                                                                             \
            default:                                                                               \
                call(4);                                                                           \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
    }

void matmul_q4_k_q8_k_avx2(PL_AVX2_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK_K;
#define CALL(n)                                                                                    \
    row_k4(yt, ldy, wr, sizeof(pl_block_q4_k), offsetof(pl_block_q4_k, qs), 0, 0, xt, x_row_bytes, \
           nb, n)
    TILE_K(CALL)
#undef CALL
}

void matmul_q5_k_q8_k_avx2(PL_AVX2_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK_K;
#define CALL(n)                                                                                    \
    row_k4(yt, ldy, wr, sizeof(pl_block_q5_k), offsetof(pl_block_q5_k, qs),                        \
           offsetof(pl_block_q5_k, qh), 1, xt, x_row_bytes, nb, n)
    TILE_K(CALL)
#undef CALL
}

void matmul_q6_k_q8_k_avx2(PL_AVX2_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK_K;
#define CALL(n) row_q6_k(yt, ldy, (const pl_block_q6_k *)wr, xt, x_row_bytes, nb, n)
    TILE_K(CALL)
#undef CALL
}

/* ---- Q2_K, Q3_K, IQ4_XS (x Q8_K), IQ4_NL and MXFP4 (x Q8_0): bit-identical to ref ------- */
/* Each keeps ref's operations exactly: the integer sums are exact (any order), then per block
 * the float term of kernels/ref/matmul.c, added into one float in block order. */

/* The levels of IQ4_NL/IQ4_XS in both 128-bit halves: shuffle_epi8 by nibble maps them. */
INLINE __m256i iq4_levels(void)
{
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)pl_iq4nl_values));
}

/* v . x in int16 pairs for signed levels v (|v| <= 127: IQ4's, MXFP4's) and any int8 x (-128
 * included): maddubs(|x|, sign(v, x)), |x| <= 128 as an unsigned byte and v negated never overflows
 * (no level is -128); a pair at most 2 * 128 * 127 = 32512 < 2^15. */
INLINE __m256i dot_levels(__m256i ax, __m256i v, __m256i x)
{
    return _mm256_maddubs_epi16(ax, _mm256_sign_epi8(v, x));
}

/* One Q2_K weight row against nt tokens: per super-block isum = sum_j (sc_j & 15) (q . x)_j
 * and summs = sum_j (sc_j >> 4) bsums_j, then ref's s += d * float(isum) - dmin *
 * float(summs). q <= 3: a maddubs pair at most 2 * 3 * 128 = 768; madd by sc <= 15. The qs
 * vector of half h shifted by 2 s holds elements 128 h + 32 s + l: sub-block 8 h + 2 s in its
 * low 128-bit half, 8 h + 2 s + 1 in the high. */
INLINE void row_q2_k(float *restrict y, int64_t ldy, const pl_block_q2_k *restrict w,
                     const uint8_t *restrict x, size_t xrb, int64_t nb, const int nt)
{
    float s[NT];
    for (int t = 0; t < nt; t++) s[t] = 0.0f;
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++) {
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)w[b].scales);
        const __m256i sc = _mm256_cvtepu8_epi16(_mm_and_si128(sc8, m4));
        const __m256i mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), m4));
        __m256i acc[NT];
        for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i sch = h ? _mm256_permute2x128_si256(sc, sc, 0x11)
                                  : _mm256_permute2x128_si256(sc, sc, 0x00);
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * h));
            for (int i = 0; i < 4; i++) {
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(v, 2 * i), m3);
                const __m256i si = q6_scale(sch, i);
                for (int t = 0; t < nt; t++) {
                    const pl_block_q8_k *xb = (const pl_block_q8_k *)(x + (size_t)t * xrb) + b;
                    const __m256i xv =
                        _mm256_loadu_si256((const __m256i *)(xb->qs + 128 * h + 32 * i));
                    acc[t] = _mm256_add_epi32(acc[t],
                                              _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv), si));
                }
            }
        }
        const float dw = f16f(w[b].d), dmw = f16f(w[b].dmin);
        for (int t = 0; t < nt; t++) {
            const pl_block_q8_k *xb = (const pl_block_q8_k *)(x + (size_t)t * xrb) + b;
            const __m256i bs = _mm256_loadu_si256((const __m256i *)xb->bsums);
            int32_t isum, summs;
            hsum2(acc[t], _mm256_madd_epi16(bs, mn), &isum, &summs);
            const float d = dw * xb->d, dmin = dmw * xb->d;
            s[t] += d * (float)isum - dmin * (float)summs;
        }
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = s[t];
}

/* The 16 six-bit scales of a Q3_K super-block less 32, as int8 (layout: kernels/types.h). */
INLINE __m128i q3_scales(const uint8_t s[12])
{
    uint32_t a[3];
    memcpy(a, s, 12);
    const uint32_t m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    const uint32_t u0 = (a[0] & m4) | (a[2] & m2) << 4;
    const uint32_t u1 = (a[1] & m4) | (a[2] >> 2 & m2) << 4;
    const uint32_t u2 = (a[0] >> 4 & m4) | (a[2] >> 4 & m2) << 4;
    const uint32_t u3 = (a[1] >> 4 & m4) | (a[2] >> 6 & m2) << 4;
    return _mm_sub_epi8(_mm_setr_epi32((int)u0, (int)u1, (int)u2, (int)u3), _mm_set1_epi8(32));
}

/* Bit j (< 8) of each byte of v moved to bit 2, the rest cleared (16-bit shifts by at most 5
 * bring bit 2 of each byte from inside the same byte). */
INLINE __m256i bit_to_2(__m256i v, int j)
{
    const __m256i s = j <= 2 ? _mm256_slli_epi16(v, 2 - j) : _mm256_srli_epi16(v, j - 2);
    return _mm256_and_si256(s, _mm256_set1_epi8(4));
}

/* One Q3_K weight row against nt tokens: ref's s += (d * dx) * float(isum), isum =
 * sum_j (sc_j - 32) sum_l (u - 4) x with u = q + 4 hbit in 0..7 unsigned, the -4 folded in
 * through the activation's bsums. maddubs(u, x): a pair at most 2 * 7 * 128 = 1792; madd by
 * the signed scale into int32. hmask byte l lines up with qs byte l of either half. */
INLINE void row_q3_k(float *restrict y, int64_t ldy, const pl_block_q3_k *restrict w,
                     const uint8_t *restrict x, size_t xrb, int64_t nb, const int nt)
{
    float s[NT];
    for (int t = 0; t < nt; t++) s[t] = 0.0f;
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int64_t b = 0; b < nb; b++) {
        const __m256i sc = _mm256_cvtepi8_epi16(q3_scales(w[b].scales));
        const __m256i hm = _mm256_loadu_si256((const __m256i *)w[b].hmask);
        __m256i acc[NT];
        for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i sch = h ? _mm256_permute2x128_si256(sc, sc, 0x11)
                                  : _mm256_permute2x128_si256(sc, sc, 0x00);
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * h));
            for (int i = 0; i < 4; i++) {
                const __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 2 * i), m3),
                                                  bit_to_2(hm, 4 * h + i));
                const __m256i si = q6_scale(sch, i);
                for (int t = 0; t < nt; t++) {
                    const pl_block_q8_k *xb = (const pl_block_q8_k *)(x + (size_t)t * xrb) + b;
                    const __m256i xv =
                        _mm256_loadu_si256((const __m256i *)(xb->qs + 128 * h + 32 * i));
                    acc[t] = _mm256_add_epi32(acc[t],
                                              _mm256_madd_epi16(_mm256_maddubs_epi16(u, xv), si));
                }
            }
        }
        add_terms_less_offset(s, nt, x, xrb, b, acc, sc, 2, f16f(w[b].d));
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = s[t];
}

/* The 8 scales ls_i - 32 of an IQ4_XS super-block as int16, in both 128-bit halves. */
INLINE __m256i iq4xs_scales(const pl_block_iq4_xs *restrict w)
{
    uint32_t l;
    memcpy(&l, w->scales_l, 4);
    const __m256i lo =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)l),
                                           _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                         _mm256_set1_epi32(0x0f));
    const __m256i hi =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)w->scales_h),
                                           _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                         _mm256_set1_epi32(3));
    const __m256i ls =
        _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
    const __m128i p = _mm_packs_epi32(_mm256_castsi256_si128(ls), _mm256_extracti128_si256(ls, 1));
    return _mm256_broadcastsi128_si256(p);
}

/* One IQ4_XS weight row against nt tokens: ref's s += (d * dx) * float(isum), isum =
 * sum_i (ls_i - 32) sum_l level(q) x (dot_levels' pairs, then madd by the scale: int32). */
INLINE void row_iq4_xs(float *restrict y, int64_t ldy, const pl_block_iq4_xs *restrict w,
                       const uint8_t *restrict x, size_t xrb, int64_t nb, const int nt)
{
    float s[NT];
    for (int t = 0; t < nt; t++) s[t] = 0.0f;
    const __m256i lv = iq4_levels();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i sc = iq4xs_scales(&w[b]);
        __m256i acc[NT];
        for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_si256();
        for (int i = 0; i < 8; i++) {
            const __m256i v = _mm256_shuffle_epi8(lv, nibbles32(w[b].qs + 16 * i));
            const __m256i si =
                _mm256_shuffle_epi8(sc, _mm256_set1_epi16((short)(0x0100 + 0x0202 * i)));
            for (int t = 0; t < nt; t++) {
                const pl_block_q8_k *xb = (const pl_block_q8_k *)(x + (size_t)t * xrb) + b;
                const __m256i xv = _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * i));
                acc[t] = _mm256_add_epi32(
                    acc[t], _mm256_madd_epi16(dot_levels(_mm256_abs_epi8(xv), v, xv), si));
            }
        }
        const float dw = f16f(w[b].d);
        for (int t = 0; t < nt; t++) {
            const pl_block_q8_k *xb = (const pl_block_q8_k *)(x + (size_t)t * xrb) + b;
            const float d = dw * xb->d;
            s[t] += d * (float)hsum_epi32x8(acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = s[t];
}

/* MXFP4's scales 2^(e - 128) (pl_e8m0_half, lane by lane) of the blocks whose e bytes are at
 * p, p + s, ..., p + 7s; lanes n.. hold e = 0 and are not read. (e - 1) << 23 as float bits,
 * the subnormals 0x00200000 << e for e < 2, NaN for 255. */
INLINE __m256 e8m0x8(const uint8_t *p, size_t s, const int n)
{
    uint64_t b = 0;
    for (int i = 0; i < GROUP; i++)
        if (i < n) b |= (uint64_t)p[(size_t)i * s] << (8 * i);
    const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)b));
    __m256i u = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    u = _mm256_blendv_epi8(u, _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e),
                           _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e));
    u = _mm256_blendv_epi8(u, _mm256_set1_epi32(0x7fc00000),
                           _mm256_cmpeq_epi32(e, _mm256_set1_epi32(255)));
    return _mm256_castsi256_ps(u);
}

/* One IQ4_NL or MXFP4 (mx) weight row against nt tokens: a 32-block of 4-bit codes in Q4_0's
 * nibble order, each mapped to an int8 level (IQ4_NL's 16, |v| <= 127; MXFP4's doubled E2M1
 * values, |v| <= 12) by shuffle_epi8, and one scale (IQ4_NL: f16 d first; MXFP4: E8M0 e
 * first). Blocks in groups of 8 decoded once: per token the 8 exact block sums come out in
 * lanes (hsum8x8 of dot_levels' pairs widened by madd), each term (dw * dx) * float(isum) is
 * formed in its lane as ref forms it, and the terms are added into one float in block order,
 * as ref adds them. */
INLINE void row_levels32(float *restrict y, int64_t ldy, const uint8_t *restrict w, size_t wbytes,
                         const int mx, const uint8_t *restrict x, size_t xrb, int64_t nb,
                         const int nt)
{
    float s[NT];
    for (int t = 0; t < nt; t++) s[t] = 0.0f;
    const __m256i lv =
        mx ? _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)pl_mxfp4_values))
           : iq4_levels();
    const __m256i one = _mm256_set1_epi16(1);
    const size_t qs_at = mx ? offsetof(pl_block_mxfp4, qs) : offsetof(pl_block_iq4_nl, qs);
    for (int64_t b = 0; b < nb; b += GROUP) {
        const int n = nb - b < GROUP ? (int)(nb - b) : GROUP;
        const uint8_t *wb = w + (size_t)b * wbytes;
        __m256i v[GROUP];
        for (int i = 0; i < n; i++)
            v[i] = _mm256_shuffle_epi8(lv, nibbles32(wb + (size_t)i * wbytes + qs_at));
        const __m256 dw = mx ? e8m0x8(wb, wbytes, n) : f16x8(wb, wbytes, n);
        for (int t = 0; t < nt; t++) {
            const pl_block_q8_0 *xb = (const pl_block_q8_0 *)(x + (size_t)t * xrb) + b;
            __m256i p[GROUP];
            for (int i = 0; i < GROUP; i++) {
                p[i] = _mm256_setzero_si256();
                if (i >= n) continue;
                const __m256i xv = _mm256_loadu_si256((const __m256i *)xb[i].qs);
                p[i] = _mm256_madd_epi16(dot_levels(_mm256_abs_epi8(xv), v[i], xv), one);
            }
            const __m256 dx = f16x8((const uint8_t *)&xb[0].d, sizeof(pl_block_q8_0), n);
            float term[GROUP];
            _mm256_storeu_ps(term,
                             _mm256_mul_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(hsum8x8(p))));
            for (int i = 0; i < n; i++) s[t] += term[i];
        }
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = s[t];
}

void matmul_q2_k_q8_k_avx2(PL_AVX2_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK_K;
#define CALL(n) row_q2_k(yt, ldy, (const pl_block_q2_k *)wr, xt, x_row_bytes, nb, n)
    TILE_K(CALL)
#undef CALL
}

void matmul_q3_k_q8_k_avx2(PL_AVX2_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK_K;
#define CALL(n) row_q3_k(yt, ldy, (const pl_block_q3_k *)wr, xt, x_row_bytes, nb, n)
    TILE_K(CALL)
#undef CALL
}

void matmul_iq4_xs_q8_k_avx2(PL_AVX2_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK_K;
#define CALL(n) row_iq4_xs(yt, ldy, (const pl_block_iq4_xs *)wr, xt, x_row_bytes, nb, n)
    TILE_K(CALL)
#undef CALL
}

void matmul_iq4_nl_q8_0_avx2(PL_AVX2_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK4_NL;
#define CALL(n) row_levels32(yt, ldy, wr, sizeof(pl_block_iq4_nl), 0, xt, x_row_bytes, nb, n)
    TILE_K(CALL)
#undef CALL
}

void matmul_mxfp4_q8_0_avx2(PL_AVX2_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK_MXFP4;
#define CALL(n) row_levels32(yt, ldy, wr, sizeof(pl_block_mxfp4), 1, xt, x_row_bytes, nb, n)
    TILE_K(CALL)
#undef CALL
}
