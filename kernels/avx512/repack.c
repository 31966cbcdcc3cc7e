/* repack.c — the avx512 set's repacked layout for the 32-block types (Q4_0, Q4_1, Q5_0,
 * Q5_1, Q8_0, IQ4_NL, MXFP4), its prepared activations and its matmul: 8 rows interleaved and two
 * consecutive blocks side by side, so that a 512-bit vector holds 8 rows x 2 blocks.
 * Not a new format: every block's bytes are a permutation of ggml's (Q8_0 quants stored +128).
 *
 * Weights, per group of 8 rows, per pair p of blocks (2p, 2p + 1; past the row's last block a
 * zero block), in a unit of 16 ggml blocks' bytes. Lane l = 2r + h is row r's block 2p + h:
 *   d[16] f16 (lane l) (MXFP4: e[16], E8M0 bytes, then 16 bytes of 0), [m[16] f16 for
 *   Q4_1/Q5_1], [hmask[8] u64 for Q5_0/Q5_1], quants
 *   Q4/Q5/IQ4_NL/MXFP4: 4 x 64 bytes; bytes 4l..4l+3 of vector k are lane l's qs[4k..4k+3]: low
 *          nibbles elements 4k.., high nibbles elements 16 + 4k.. (IQ4_NL: indices of levels,
 *          looked up as level + 128 when the vector is used)
 *   Q5: bit 4l + e of hmask[c] is lane l's fifth bit of element 4c + e (c < 8 chunks).
 *   Q8_0: 8 x 64 bytes; bytes 4l..4l+3 of vector c are lane l's qs[4c..4c+3] + 128 (unsigned).
 * Prepared activations (x_prep, once per row per matmul call, not once per row group): per
 * pair, the two blocks' quants chunk by chunk (8 bytes per chunk c: block 2p's qs[4c..4c+3],
 * then block 2p + 1's), so one 64-bit broadcast puts each block's 4 bytes in its own lanes;
 * then per block the offset correction (offset x the block's sum), the block sum as a float
 * (the min term) and the scale as a float. One vpdpbusd adds 4 products to each lane.
 *
 * Bit-identical to matmul_q.c: the same exact integer block sums (offsets folded in through
 * the activation's block sum), the same float ops per block, d = dw * dx and
 * acc[b % 8] = fma(float(isum), d, acc[b % 8]) (then the min term for Q4_1/Q5_1), and the
 * same final tree ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)) per row. Accumulator
 * b % 8 of row r lives in lane 2r + (b % 2) of the vector for pair class (b / 2) % 4; a pad
 * block adds fma(0, 0, acc), which leaves acc as it is (acc starts at +0 and never becomes
 * -0 under round-to-nearest).
 *
 * IQ4_NL has ref's arithmetic of its own (avx2's matmul_q.c serves the mapping): isum =
 * sum (level + 128) x - 128 sum(x) per block, exact, and s += (dw * dx) * float(isum), one
 * float per row, blocks in order. Row r's running s sits in both lanes 2r and 2r + 1; with
 * the pair's terms t, s + t in lane 2r copied to both lanes, then t's lane 2r + 1 added, is
 * (s + t_2p) + t_2p+1 as ref adds them. The pad block's term is +0 (d = 0, isum = 0), which
 * leaves s as it is (s starts at +0 and never becomes -0). MXFP4 is IQ4_NL with its own
 * levels (the doubled E2M1 values, + 128) and dw = 2^(e - 128) (pl_e8m0_half, NaN for e = 255)
 * made from the e bytes in the lanes; its pad block has e = 0 but dx = 0 and isum = 0, so its
 * term is +0 as well. */
#include <immintrin.h>
#include <string.h>

#include "avx512.h"

#define G      8
#define INLINE static inline __attribute__((always_inline))

typedef struct layout {
    size_t block; /* ggml block bytes */
    size_t unit;  /* bytes of one pair of blocks of 8 rows (16 ggml blocks) */
    size_t m_off; /* offset of m[16], or 0 */
    size_t h_off; /* offset of hmask[8], or 0 */
    size_t q_off; /* offset of the quants */
    int offset;   /* subtracted from unsigned quants: 8, 16, 128 (Q8_0) or 0 (with a min) */
} layout;

static layout layout_of(pl_type t)
{
    switch (t) {
    case PL_TYPE_Q4_0:
        return (layout){18, 288, 0, 0, 32, 8};
    case PL_TYPE_Q4_1:
        return (layout){20, 320, 32, 0, 64, 0};
    case PL_TYPE_Q5_0:
        return (layout){22, 352, 0, 32, 96, 16};
    case PL_TYPE_Q5_1:
        return (layout){24, 384, 32, 64, 128, 0};
    case PL_TYPE_IQ4_NL: /* levels + 128, unsigned */
        return (layout){18, 288, 0, 0, 32, 128};
    case PL_TYPE_MXFP4: /* levels + 128, unsigned; e[16] where the others have d[16] */
        return (layout){17, 288, 0, 0, 32, 128};
    default: /* Q8_0 */
        return (layout){34, 544, 0, 0, 32, 128};
    }
}

/* ---- pack ----------------------------------------------------------------------------- */

/* The quants and fifth bits of one ggml block (offsets of the fields inside it). */
static const uint8_t *blk_qs(pl_type t, const uint8_t *b)
{
    switch (t) {
    case PL_TYPE_Q4_1:
        return b + 4;
    case PL_TYPE_Q5_0:
        return b + 6;
    case PL_TYPE_Q5_1:
        return b + 8;
    case PL_TYPE_MXFP4:
        return b + 1;
    default: /* Q4_0, Q8_0, IQ4_NL */
        return b + 2;
    }
}

static uint32_t blk_qh(pl_type t, const uint8_t *b)
{
    uint32_t h = 0;
    if (t == PL_TYPE_Q5_0) memcpy(&h, b + 2, 4);
    if (t == PL_TYPE_Q5_1) memcpy(&h, b + 4, 4);
    return h;
}

static uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static int64_t pairs_of(int64_t K)
{
    return (K / 32 + 1) / 2;
}

static void pack_32(pl_type t, uint8_t *restrict dst, const uint8_t *restrict src, size_t srb,
                    int64_t K, int64_t R)
{
    const layout L = layout_of(t);
    const int64_t nb = K / 32, np = pairs_of(K);
    static const uint8_t zero[34];
    for (int64_t g = 0; g < (R + G - 1) / G; g++)
        for (int64_t p = 0; p < np; p++) {
            uint8_t *o = dst + ((size_t)g * (size_t)np + (size_t)p) * L.unit;
            uint32_t q[128];
            uint64_t h[8] = {0};
            if (t == PL_TYPE_MXFP4) memset(o + 16, 0, 16); /* after e[16]: padding, zeroed */
            for (int l = 0; l < 2 * G; l++) {
                const int64_t row = g * G + l / 2, b = 2 * p + l % 2;
                const uint8_t *blk =
                    row < R && b < nb ? src + (size_t)row * srb + (size_t)b * L.block : zero;
                if (t == PL_TYPE_MXFP4)
                    o[l] = blk[0]; /* e */
                else
                    memcpy(o + 2 * l, blk, 2); /* d */
                if (L.m_off) memcpy(o + L.m_off + 2 * l, blk + 2, 2);
                const uint8_t *qs = blk_qs(t, blk);
                if (t == PL_TYPE_Q8_0) {
                    for (int c = 0; c < 8; c++) q[16 * c + l] = ld32(qs + 4 * c) ^ 0x80808080u;
                    continue;
                }
                for (int k = 0; k < 4; k++) q[16 * k + l] = ld32(qs + 4 * k);
                if (L.h_off) {
                    const uint32_t qh = blk_qh(t, blk);
                    for (int c = 0; c < 8; c++) h[c] |= (uint64_t)(qh >> (4 * c) & 0xfu) << (4 * l);
                }
            }
            memcpy(o + L.q_off, q, t == PL_TYPE_Q8_0 ? 512 : 256);
            if (L.h_off) memcpy(o + L.h_off, h, sizeof h);
        }
}

static size_t size_32(pl_type t, int64_t K, int64_t R)
{
    return (size_t)((R + G - 1) / G) * (size_t)pairs_of(K) * layout_of(t).unit;
}

/* ---- prepared activations --------------------------------------------------------------- */

/* A prepared row: np x 64 quant bytes, then per block (2 np, the pad block's zero)
 * int32 corr, float sx, float dx. */
typedef struct xrow {
    const uint8_t *q;
    const int32_t *corr;
    const float *sx, *dx;
} xrow;

static size_t xrow_bytes(int64_t K)
{
    return (size_t)pairs_of(K) * (64 + 2 * 12);
}

static xrow xrow_at(const void *x, int64_t K)
{
    const size_t np = (size_t)pairs_of(K);
    const uint8_t *b = x;
    return (xrow){b, (const int32_t *)(const void *)(b + 64 * np),
                  (const float *)(const void *)(b + 72 * np),
                  (const float *)(const void *)(b + 80 * np)};
}

static inline uint16_t ld16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* sum of the 32 int8 of an activation block */
static inline int32_t xsum32(const int8_t *q)
{
    const __m256i u =
        _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)q), _mm256_set1_epi8((char)0x80));
    const __m256i s = _mm256_sad_epu8(u, _mm256_setzero_si256());
    const __m128i a = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    return (int32_t)(_mm_cvtsi128_si64(a) + _mm_extract_epi64(a, 1)) - 32 * 128;
}

static void prep_32(pl_type t, void *restrict dst, const void *restrict src, int64_t K)
{
    const layout L = layout_of(t);
    const int64_t nb = K / 32, np = pairs_of(K);
    const pl_block_q8_0 *xb = src;
    uint8_t *q = dst;
    int32_t *corr = (int32_t *)(void *)(q + 64 * np);
    float *sx = (float *)(void *)(q + 72 * np), *dx = (float *)(void *)(q + 80 * np);
    for (int64_t b = 0; b < 2 * np; b++) {
        uint8_t *o = q + 64 * (b / 2) + 4 * (b % 2);
        if (b == nb) { /* the pad block */
            for (int c = 0; c < 8; c++) memset(o + 8 * c, 0, 4);
            corr[b] = 0;
            sx[b] = dx[b] = 0.0f;
            continue;
        }
        for (int c = 0; c < 8; c++) memcpy(o + 8 * c, xb[b].qs + 4 * c, 4);
        const int32_t s = xsum32(xb[b].qs);
        corr[b] = L.offset * s;
        sx[b] = (float)s;
        dx[b] = _cvtsh_ss(ld16(&xb[b].d));
    }
}

/* ---- matmul --------------------------------------------------------------------------- */

static inline __m512 bqf(const void *p)
{
    double v;
    memcpy(&v, p, sizeof v);
    return _mm512_castpd_ps(_mm512_set1_pd(v));
}

static inline __m512 f16x16(const uint8_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

/* Weight vector j (< 8) of a pair unit, unsigned, fifth bits merged, and the chunk of the
 * prepared activations it multiplies. */
INLINE __m512i wvec(pl_type t, const layout *L, const uint8_t *restrict o, int j, int *chunk)
{
    if (t == PL_TYPE_Q8_0) {
        *chunk = j;
        return _mm512_loadu_si512((const void *)(o + L->q_off + 64 * j));
    }
    const int k = j / 2, hi = j % 2;
    const __m512i v = _mm512_loadu_si512((const void *)(o + L->q_off + 64 * k));
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512i u = hi ? _mm512_and_si512(_mm512_srli_epi16(v, 4), m4) : _mm512_and_si512(v, m4);
    *chunk = 4 * hi + k;
    if (t == PL_TYPE_IQ4_NL || t == PL_TYPE_MXFP4) {
        const int8_t *levels = t == PL_TYPE_MXFP4 ? pl_mxfp4_values : pl_iq4nl_values;
        const __m512i lv =
            _mm512_add_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)levels)),
                            _mm512_set1_epi8((char)0x80));
        return _mm512_shuffle_epi8(lv, u);
    }
    if (L->h_off) {
        uint64_t m;
        memcpy(&m, o + L->h_off + 8 * *chunk, 8);
        u = _mm512_or_si512(u, _mm512_maskz_mov_epi8((__mmask64)m, _mm512_set1_epi8(0x10)));
    }
    return u;
}

/* acc + the pair's float terms, given its integer sums (the GEMV's ops, lane by lane). */
INLINE __m512 pair_term(const layout *L, __m512i is, __m512 dw, __m512 mw, const xrow *x, int64_t p,
                        __m512 acc)
{
    if (L->offset) is = _mm512_sub_epi32(is, pl_avx512_bcast8(x->corr + 2 * p));
    const __m512 dx = bqf(x->dx + 2 * p);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), _mm512_mul_ps(dw, dx), acc);
    if (L->m_off) acc = _mm512_fmadd_ps(bqf(x->sx + 2 * p), _mm512_mul_ps(mw, dx), acc);
    return acc;
}

/* The fixed tree per row from the four pair-class accumulators, rows [lo, hi) stored. */
INLINE void finish(const __m512 a[4], float *restrict y, int64_t lo, int64_t hi)
{
    /* even lanes (a0 + a4) + (a2 + a6), odd lanes (a1 + a5) + (a3 + a7) */
    const __m512 s = _mm512_add_ps(_mm512_add_ps(a[0], a[2]), _mm512_add_ps(a[1], a[3]));
    const __m512 f = _mm512_add_ps(s, _mm512_permute_ps(s, 0xb1));
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
    const __mmask8 rows = (__mmask8)((0xffu << lo) & (0xffu >> (G - hi)));
    _mm256_mask_storeu_ps(y, rows, _mm512_castps512_ps256(_mm512_permutexvar_ps(even, f)));
}

/* MXFP4's 16 lanes' scales 2^(e - 128) from the e bytes at p: (e - 1) << 23 as float bits, the
 * subnormals 2^-128, 2^-127 for e = 0, 1, NaN for e = 255 (pl_e8m0_half, lane by lane). */
INLINE __m512 e8m0x16(const uint8_t *p)
{
    const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
    __m512i u = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    u = _mm512_mask_sllv_epi32(u, _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)),
                               _mm512_set1_epi32(0x00200000), e);
    u = _mm512_mask_mov_epi32(u, _mm512_cmpeq_epu32_mask(e, _mm512_set1_epi32(255)),
                              _mm512_set1_epi32(0x7fc00000));
    return _mm512_castsi512_ps(u);
}

/* The pair unit's 16 block scales as floats: f16 d, or MXFP4's E8M0 e. */
INLINE __m512 dw16(pl_type t, const uint8_t *o)
{
    return t == PL_TYPE_MXFP4 ? e8m0x16(o) : f16x16(o);
}

/* One float chain per row, blocks in ref's order (IQ4_NL, MXFP4). */
#define SEQ(t) ((t) == PL_TYPE_IQ4_NL || (t) == PL_TYPE_MXFP4)

/* IQ4_NL, MXFP4: s (row r in lanes 2r, 2r + 1) + the pair's two terms, in block order. */
INLINE __m512 seq_term(__m512i is, __m512 dw, const xrow *x, int64_t p, __m512 s)
{
    is = _mm512_sub_epi32(is, pl_avx512_bcast8(x->corr + 2 * p));
    const __m512 t = _mm512_mul_ps(_mm512_mul_ps(dw, bqf(x->dx + 2 * p)), _mm512_cvtepi32_ps(is));
    return _mm512_add_ps(_mm512_moveldup_ps(_mm512_add_ps(s, t)), _mm512_movehdup_ps(t));
}

/* IQ4_NL, MXFP4: rows [lo, hi) of s (lane 2r) stored. */
INLINE void finish_seq(__m512 s, float *restrict y, int64_t lo, int64_t hi)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
    const __mmask8 rows = (__mmask8)((0xffu << lo) & (0xffu >> (G - hi)));
    _mm256_mask_storeu_ps(y, rows, _mm512_castps512_ps256(_mm512_permutexvar_ps(even, s)));
}

INLINE __m512 gemv_pair(pl_type t, const layout *L, const uint8_t *restrict o, const xrow *x,
                        int64_t p, __m512 acc)
{
    /* the hardware prefetcher alone leaves interleaved rows latency-bound */
    if ((p & 1) == 0)
        for (size_t c = 0; c < 2 * L->unit; c += 64)
            _mm_prefetch((const char *)o + 8 * L->unit + c, _MM_HINT_T0);
    __m512i is = _mm512_setzero_si512();
    for (int j = 0; j < 8; j++) {
        int c;
        const __m512i w = wvec(t, L, o, j, &c);
        is = _mm512_dpbusd_epi32(is, w, pl_avx512_bcast8(x->q + 64 * p + 8 * c));
    }
    const __m512 dw = dw16(t, o), mw = L->m_off ? f16x16(o + L->m_off) : dw;
    if (SEQ(t)) return seq_term(is, dw, x, p, acc);
    return pair_term(L, is, dw, mw, x, p, acc);
}

/* One token (decode): pairs in order, so the weights stream through memory once. */
INLINE void gemv(pl_type t, const layout *L, const uint8_t *restrict base, int64_t np,
                 const xrow *x, float *restrict y, int64_t lo, int64_t hi)
{
    if (SEQ(t)) { /* one chain, pairs in order */
        __m512 s = _mm512_setzero_ps();
        for (int64_t p = 0; p < np; p++) s = gemv_pair(t, L, base + (size_t)p * L->unit, x, p, s);
        finish_seq(s, y, lo, hi);
        return;
    }
    __m512 acc[4];
    for (int i = 0; i < 4; i++) acc[i] = _mm512_setzero_ps();
    int64_t p = 0;
#define PAIR(i) acc[i] = gemv_pair(t, L, base + (size_t)(p + (i)) * L->unit, x, p + (i), acc[i])
    for (; p + 4 <= np; p += 4) {
        PAIR(0);
        PAIR(1);
        PAIR(2);
        PAIR(3);
    }
    if (p < np) PAIR(0);
    if (p + 1 < np) PAIR(1);
    if (p + 2 < np) PAIR(2);
#undef PAIR
    finish(acc, y, lo, hi);
}

/* Tokens per register tile: 6 (two accumulator classes each), IQ4_NL's and MXFP4's one chain
 * per token 8. */
#define NT         8
#define NT_ACC     6
#define tile_of(t) (SEQ(t) ? NT : NT_ACC)

/* acc[k] + pair p's terms for the tile's n tokens: each weight vector is loaded and expanded
 * once for the n tokens. */
INLINE void tile_pair(pl_type t, const layout *L, const uint8_t *restrict o, const xrow *x,
                      int64_t p, const int n, __m512 acc[NT])
{
    __m512i is[NT];
    for (int k = 0; k < n; k++) is[k] = _mm512_setzero_si512();
    for (int j = 0; j < 8; j++) {
        int c;
        const __m512i w = wvec(t, L, o, j, &c);
        for (int k = 0; k < n; k++)
            is[k] = _mm512_dpbusd_epi32(is[k], w, pl_avx512_bcast8(x[k].q + 64 * p + 8 * c));
    }
    const __m512 dw = dw16(t, o), mw = L->m_off ? f16x16(o + L->m_off) : dw;
    for (int k = 0; k < n; k++)
        acc[k] = SEQ(t) ? seq_term(is[k], dw, &x[k], p, acc[k])
                        : pair_term(L, is[k], dw, mw, &x[k], p, acc[k]);
}

/* A tile of n <= NT tokens x one group of 8 rows, pair class by pair class: class q holds
 * accumulators 2q and 2q + 1 and takes pairs q, q + 4, q + 8, ... in increasing order, so
 * each accumulator sees its blocks in the GEMV's order. Two classes at a time give
 * independent chains; a tile holds 2n accumulators instead of 4n, so n can be 6. first: the
 * group's first tile, which reads its weights from memory (a MoE expert's few tokens: the
 * only one) and prefetches them, as the hardware prefetcher does not follow pairs 0, 1, 4, 5. */
INLINE void tile(pl_type t, const layout *L, const uint8_t *restrict base, int64_t np,
                 const xrow *x, const int n, float *restrict y, int64_t ldy, int64_t lo, int64_t hi,
                 int first)
{
    if (SEQ(t)) { /* one chain per token, pairs in order */
        __m512 s[NT];
        for (int k = 0; k < n; k++) s[k] = _mm512_setzero_ps();
        for (int64_t p = 0; p < np; p++) {
            const uint8_t *o = base + (size_t)p * L->unit;
            if ((p & 1) == 0)
                for (size_t c = 0; c < 2 * L->unit; c += 64)
                    _mm_prefetch((const char *)o + 8 * L->unit + c, _MM_HINT_T0);
            tile_pair(t, L, o, x, p, n, s);
        }
        for (int k = 0; k < n; k++) finish_seq(s[k], y + k * ldy, lo, hi);
        return;
    }
    __m512 part[4][NT];
    for (int q = 0; q < 4; q += 2) {
        __m512 a0[NT], a1[NT];
        for (int k = 0; k < n; k++) a0[k] = a1[k] = _mm512_setzero_ps();
        for (int64_t p = q; p < np; p += 4) {
            if (q == 0 && first) /* streaming the group from memory: 4 units, 16 ahead */
                for (size_t c = 0; c < 4 * L->unit; c += 64)
                    _mm_prefetch((const char *)base + (size_t)(p + 16) * L->unit + c, _MM_HINT_T0);
            tile_pair(t, L, base + (size_t)p * L->unit, x, p, n, a0);
            if (p + 1 < np) tile_pair(t, L, base + (size_t)(p + 1) * L->unit, x, p + 1, n, a1);
        }
        for (int k = 0; k < n; k++) {
            part[q][k] = a0[k];
            part[q + 1][k] = a1[k];
        }
    }
    for (int k = 0; k < n; k++) {
        const __m512 a[4] = {part[0][k], part[1][k], part[2][k], part[3][k]};
        finish(a, y + k * ldy, lo, hi);
    }
}

/* Prepared activation bytes per token block: a block sweeps the thread's row groups once
 * (their weights from L2 or memory), its activations staying in L2. */
#define XBLOCK_BYTES (384 * 1024)

INLINE void matmul_packed(pl_type t, PL_AVX512_MATMUL_ARGS)
{
    (void)w_row_bytes;
    const layout L = layout_of(t);
    const int64_t np = pairs_of(K);
    const int nt = tile_of(t);
    int64_t TB = (int64_t)(XBLOCK_BYTES / x_row_bytes) / nt * nt;
    if (TB < nt) TB = nt;
    for (int64_t t0 = 0; t0 < T; t0 += TB) {
        const int64_t tn = T - t0 < TB ? T - t0 : TB;
        for (int64_t g = r0 / G; g * G < r1; g++) {
            const uint8_t *base = (const uint8_t *)w + (size_t)g * (size_t)np * L.unit;
            const int64_t lo = r0 > g * G ? r0 - g * G : 0, hi = r1 < (g + 1) * G ? r1 - g * G : G;
            float *yg = y + t0 * ldy + g * G;
            if (tn == 1) {
                const xrow x1 = xrow_at((const uint8_t *)x + (size_t)t0 * x_row_bytes, K);
                gemv(t, &L, base, np, &x1, yg, lo, hi);
                continue;
            }
            for (int64_t k0 = 0; k0 < tn; k0 += nt) {
                const int n = tn - k0 < nt ? (int)(tn - k0) : nt;
                xrow xr[NT];
                for (int k = 0; k < n; k++)
                    xr[k] = xrow_at((const uint8_t *)x + (size_t)(t0 + k0 + k) * x_row_bytes, K);
                float *yt = yg + k0 * ldy;
                switch (n) { /* constant tile sizes: the compiler unrolls the token loops */
                case 1:
                    gemv(t, &L, base, np, xr, yt, lo, hi);
                    break;
                case 2:
                    tile(t, &L, base, np, xr, 2, yt, ldy, lo, hi, k0 == 0);
                    break;
                case 3:
                    tile(t, &L, base, np, xr, 3, yt, ldy, lo, hi, k0 == 0);
                    break;
                case 4:
                    tile(t, &L, base, np, xr, 4, yt, ldy, lo, hi, k0 == 0);
                    break;
                case 5:
                    tile(t, &L, base, np, xr, 5, yt, ldy, lo, hi, k0 == 0);
                    break;
                case 6:
                    tile(t, &L, base, np, xr, 6, yt, ldy, lo, hi, k0 == 0);
                    break;
                case 7: /* IQ4_NL and MXFP4 only (their tile is 8): the others never get here */
                    if (tile_of(t) > 6) tile(t, &L, base, np, xr, 7, yt, ldy, lo, hi, k0 == 0);
                    break;
                default:
                    if (tile_of(t) > 6) tile(t, &L, base, np, xr, NT, yt, ldy, lo, hi, k0 == 0);
                    break;
                }
            }
        }
    }
}

#define REPACK(tname, TYPE)                                                                        \
    static size_t size_##tname(int64_t K, int64_t R)                                               \
    {                                                                                              \
        return size_32(TYPE, K, R);                                                                \
    }                                                                                              \
    static void pack_##tname(void *restrict dst, const void *restrict src, size_t srb, int64_t K,  \
                             int64_t R)                                                            \
    {                                                                                              \
        pack_32(TYPE, dst, src, srb, K, R);                                                        \
    }                                                                                              \
    static void prep_##tname(void *restrict dst, const void *restrict src, int64_t K)              \
    {                                                                                              \
        prep_32(TYPE, dst, src, K);                                                                \
    }                                                                                              \
    static void matmul_##tname(PL_AVX512_MATMUL_ARGS)                                              \
    {                                                                                              \
        matmul_packed(TYPE, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);                 \
    }                                                                                              \
    const pl_repack pl_repack_##tname##_avx512 = {size_##tname, pack_##tname, matmul_##tname,      \
                                                  xrow_bytes, prep_##tname};

REPACK(q4_0, PL_TYPE_Q4_0)
REPACK(q4_1, PL_TYPE_Q4_1)
REPACK(q5_0, PL_TYPE_Q5_0)
REPACK(q5_1, PL_TYPE_Q5_1)
REPACK(q8_0, PL_TYPE_Q8_0)
REPACK(iq4_nl, PL_TYPE_IQ4_NL)
REPACK(mxfp4, PL_TYPE_MXFP4)
