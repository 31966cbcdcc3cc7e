/* repack_k.c — the avx512 set's repacked layout for Q4_K, Q5_K and Q6_K and its matmul: 8 rows
 * interleaved, 8 bytes of each, so that a 512-bit vector holds 8 rows x 2 four-byte chunks.
 * Not a new format: a permutation of the bytes.
 *
 * Layout, per group of 8 rows, per super-block (the same bytes as 8 ggml super-blocks):
 *   Q4_K: d[8] f16, dmin[8] f16, scales as 3 u32 words per row (s0[8], s1[8], s2[8]), then
 *         16 vectors of 64 bytes: bytes 8r..8r+7 of vector 4p + m are row r's
 *         qs[32p + 8m .. 32p + 8m + 7] (low nibbles: elements 64p + 8m + i; high nibbles:
 *         64p + 32 + 8m + i).
 *   Q5_K: Q4_K's d, dmin and scales (128 bytes), then qh as 4 vectors (bytes 8r..8r+7 of
 *         vector m are row r's qh[8m .. 8m + 7]: bits 2p, 2p + 1 are the fifth bits of the
 *         elements of qs vector 4p + m), then Q4_K's 16 qs vectors.
 *   Q6_K: d[8] f16, scales[16][8] int8 (sub-block major), then ql as 2 x 8 vectors (bytes
 *         8r.. of vector (h, k) are row r's ql[64h + 8k ..], k < 8) and qh as 2 x 4 vectors
 *         (row r's qh[32h + 8k ..]).
 * Lane 2r + c of a vector is row r's chunk c of the 8 bytes, so one 64-bit broadcast of 8
 * consecutive activation bytes meets every row's 8 elements; the two lanes of a row are
 * added (as integers, after the scales) once per super-block.
 *
 * Bit-identical to ref (and so to matmul_q.c): each row's super-block integer sums are exact
 * and its float term is formed and summed with ref's operations, one row per lane. A tile of
 * up to NT tokens (NT_Q2K, NT_Q3K for those types) shares each weight vector's load, unpacking
 * and scaling; every token keeps its own accumulators, so a token's row is the same bits at
 * any T. */
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "avx512.h"

#define G      8
#define NT     4 /* tokens per tile: Q4_K, Q5_K, Q6_K, IQ4_XS */
#define NT_Q2K 8 /* ... Q2_K */
#define NT_Q3K 8 /* ... Q3_K */
#define NTMAX  8
#define INLINE static inline __attribute__((always_inline))

static inline __m256i bd(const void *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

static inline __m256 f16x8(const uint8_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static inline __m256i ld(const uint8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

static inline __m512i ldz(const uint8_t *p)
{
    return _mm512_loadu_si512((const void *)p);
}

/* Each int32 lane of v twice: lane 2r + c of the result is lane r of v. */
static inline __m512i dup32(__m256i v)
{
    const __m512i idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    return _mm512_permutexvar_epi32(idx, _mm512_castsi256_si512(v));
}

/* Row r's two lanes added: lane r of the result is lanes 2r + 2r + 1 of v (exact). */
static inline __m256i pairsum(__m512i v)
{
    const __m512i s = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
    const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(idx, s));
}

/* Writes the 8-byte chunks of the 8 rows' byte arrays interleaved: out[64k + 8r + e] =
 * row r's src[8k + e], for k < n_chunks. */
/* ref's (dw dx) float(isum) - (dmin dx) float(summs) for the 8 rows (lane r: row r). */
static inline __m256 min_float(__m256i isum, __m256i summs, float x_d, __m256 dw, __m256 dmw)
{
    const __m256 dx = _mm256_set1_ps(x_d);
    const __m256 d = _mm256_mul_ps(dw, dx), dmin = _mm256_mul_ps(dmw, dx);
    return _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(isum)),
                         _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(summs)));
}

/* A super-block's term with mins (Q4_K, Q5_K), ref's (dw dx) float(isum) -
 * (dmin dx) float(summs) for the 8 rows: isum as pairs of lanes, summs = sum_j m_j
 * (bsums[2j] + bsums[2j + 1]), row r's (m_j, m_j) as int16 in int32 lane r of mp[j]. */
static inline __m256 min_term(__m512i isum, const __m256i mp[8], const pl_block_q8_k *x, __m256 dw,
                              __m256 dmw)
{
    __m256i summs = _mm256_setzero_si256();
    for (int j = 0; j < 8; j++) summs = _mm256_dpwssd_epi32(summs, mp[j], bd(x->bsums + 2 * j));
    return min_float(pairsum(isum), summs, x->d, dw, dmw);
}

static void interleave8(uint8_t *out, const uint8_t *const rows[G], size_t off, int n_chunks)
{
    for (int k = 0; k < n_chunks; k++)
        for (int r = 0; r < G; r++) memcpy(out + 64 * k + 8 * r, rows[r] + off + 8 * k, 8);
}

/* The super-block b of each of the group's 8 rows (zeros past R). */
static void group_rows(const uint8_t *rows[G], const uint8_t *src, size_t srb, int64_t g, int64_t b,
                       size_t bbytes, int64_t R, const uint8_t *zero)
{
    for (int r = 0; r < G; r++) {
        const int64_t row = g * G + r;
        rows[r] = row < R ? src + (size_t)row * srb + (size_t)b * bbytes : zero;
    }
}

/* Writes one block of a group: the header fields and interleaved quants of its G rows. */
typedef void (*pack_block_fn)(uint8_t *o, const uint8_t *const rows[G]);

/* The R x K matrix of blocks of bs elements and bbytes bytes, in groups of G rows (the last
 * padded with zero blocks): block b of group g at (g nb + b) G bbytes, written by fn. */
static void pack_groups(void *restrict dst, const void *restrict src, size_t srb, int64_t K,
                        int64_t R, int64_t bs, size_t bbytes, pack_block_fn fn)
{
    static const uint8_t zero[256]; /* at least the largest block: Q6_K's */
    static_assert(sizeof(pl_block_q6_k) <= sizeof zero, "zero block");
    const int64_t nb = K / bs;
    for (int64_t g = 0; g < (R + G - 1) / G; g++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *rows[G];
            group_rows(rows, src, srb, g, b, bbytes, R, zero);
            fn((uint8_t *)dst + ((size_t)g * (size_t)nb + (size_t)b) * G * bbytes, rows);
        }
}

/* Bytes of the packed R x K matrix: groups of 8 rows (the last padded), group_bytes per
 * super-block. */
static size_t packed_size(int64_t K, int64_t R, size_t group_bytes)
{
    return (size_t)((R + G - 1) / G) * (size_t)(K / PL_QK_K) * group_bytes;
}

/* Token blocks: a block sweeps the thread's row groups once, its activations staying in L2. */
#define XBLOCK_BYTES (384 * 1024)

/* The tile loop shared by every type: groups of the thread's rows, tokens in blocks that stay
 * in L2, tiles of TILE (<= NTMAX) tokens (constant sizes, so the token loops unroll). */
#define K_DRIVER(fn, GROUP_BYTES) K_DRIVER_X(fn, GROUP_BYTES, pl_block_q8_k, PL_QK_K, NT)
/* ... with activation blocks of type XBLOCK, BS elements each (IQ4_NL: Q8_0, 32) */
#define K_MIN(a, b) ((a) < (b) ? (a) : (b))
#define K_CALL(fn, c, TILE)                                                                        \
    case c:                                                                                        \
        fn(base, nb, xb, K_MIN(c, TILE), s);                                                       \
        break
#define K_DRIVER_X(fn, GROUP_BYTES, XBLOCK, BS, TILE)                                              \
    do {                                                                                           \
        static_assert((TILE) >= 1 && (TILE) <= NTMAX, "tile size");                                \
        (void)w_row_bytes;                                                                         \
        const int64_t nb = K / (BS);                                                               \
        int64_t TB = (int64_t)(XBLOCK_BYTES / x_row_bytes) / (TILE) * (TILE);                      \
        if (TB < (TILE)) TB = (TILE);                                                              \
        for (int64_t t0 = 0; t0 < T; t0 += TB) {                                                   \
            const int64_t tn = T - t0 < TB ? T - t0 : TB;                                          \
            for (int64_t g = r0 / G; g * G < r1; g++) {                                            \
                const uint8_t *base = (const uint8_t *)w + (size_t)g * (size_t)nb * (GROUP_BYTES); \
                const int64_t lo = r0 > g * G ? r0 - g * G : 0,                                    \
                              hi = r1 < (g + 1) * G ? r1 - g * G : G;                              \
                const __mmask8 rows = (__mmask8)((0xffu << lo) & (0xffu >> (G - hi)));             \
                for (int64_t k0 = 0; k0 < tn; k0 += (TILE)) {                                      \
                    const int n = tn - k0 < (TILE) ? (int)(tn - k0) : (TILE);                      \
                    const XBLOCK *xb[TILE];                                                        \
                    for (int k = 0; k < n; k++)                                                    \
                        xb[k] = (const XBLOCK *)((const uint8_t *)x +                              \
                                                 (size_t)(t0 + k0 + k) * x_row_bytes);             \
                    __m256 s[TILE];                                                                \
                    if ((TILE) > 4 && n > 4) {                                                     \
                        switch (n) {                                                               \
                            K_CALL(fn, 5, TILE);                                                   \
                            K_CALL(fn, 6, TILE);                                                   \
                            K_CALL(fn, 7, TILE);                                                   \
                        default:                                                                   \
                            fn(base, nb, xb, TILE, s);                                             \
                            break;                                                                 \
                        }                                                                          \
                    } else {                                                                       \
                        switch (n) {                                                               \
                            K_CALL(fn, 1, TILE);                                                   \
                            K_CALL(fn, 2, TILE);                                                   \
                            K_CALL(fn, 3, TILE);                                                   \
                        default:                                                                   \
                            fn(base, nb, xb, K_MIN(4, TILE), s);                                   \
                            break;                                                                 \
                        }                                                                          \
                    }                                                                              \
                    for (int k = 0; k < n; k++)                                                    \
                        _mm256_mask_storeu_ps(y + (t0 + k0 + k) * ldy + g * G, rows, s[k]);        \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* ---- Q4_K and Q5_K -------------------------------------------------------------------- */
/* The two share d, dmin, scales and the nibbles; q5 (a constant in every caller) adds Q5_K's
 * fifth bits, or-ed into each nibble as bit 4. */

#define Q4K_GROUP (G * sizeof(pl_block_q4_k))
#define Q5K_GROUP (G * sizeof(pl_block_q5_k))
#define K4_QH     128 /* Q5_K: offset of the qh vectors in a group's super-block */

static size_t size_q4_k(int64_t K, int64_t R)
{
    return packed_size(K, R, Q4K_GROUP);
}

static size_t size_q5_k(int64_t K, int64_t R)
{
    return packed_size(K, R, Q5K_GROUP);
}

/* d, dmin, scales: the same offsets in Q4_K and Q5_K blocks */
static void k4_head(uint8_t *o, const uint8_t *const rows[G])
{
    for (int r = 0; r < G; r++) {
        const pl_block_q4_k *blk = (const pl_block_q4_k *)rows[r];
        memcpy(o + 2 * r, &blk->d, 2);
        memcpy(o + 16 + 2 * r, &blk->dmin, 2);
        for (int w = 0; w < 3; w++) memcpy(o + 32 + 32 * w + 4 * r, blk->scales + 4 * w, 4);
    }
}

static void block_q4_k(uint8_t *o, const uint8_t *const rows[G])
{
    k4_head(o, rows);
    interleave8(o + 128, rows, offsetof(pl_block_q4_k, qs), 16);
}

static void block_q5_k(uint8_t *o, const uint8_t *const rows[G])
{
    k4_head(o, rows);
    interleave8(o + K4_QH, rows, offsetof(pl_block_q5_k, qh), 4);
    interleave8(o + K4_QH + 256, rows, offsetof(pl_block_q5_k, qs), 16);
}

static void pack_q4_k(void *restrict dst, const void *restrict src, size_t srb, int64_t K,
                      int64_t R)
{
    pack_groups(dst, src, srb, K, R, PL_QK_K, sizeof(pl_block_q4_k), block_q4_k);
}

static void pack_q5_k(void *restrict dst, const void *restrict src, size_t srb, int64_t K,
                      int64_t R)
{
    pack_groups(dst, src, srb, K, R, PL_QK_K, sizeof(pl_block_q5_k), block_q5_k);
}

/* Bit 4 of each byte of the result is bit j of that byte of hb (16-bit shifts by at most 4
 * bring bit 4 of each byte from inside the same byte). */
INLINE __m512i bit_to_4(__m512i hb, int j)
{
    const __m512i v = j <= 4 ? _mm512_slli_epi16(hb, (unsigned)(4 - j))
                             : _mm512_srli_epi16(hb, (unsigned)(j - 4));
    return _mm512_and_si512(v, _mm512_set1_epi8(0x10));
}

/* s[k] = the n tokens' dots with the group's 8 rows, super-block by super-block as ref. */
INLINE void tile_k4(const uint8_t *restrict base, int64_t nb, const pl_block_q8_k *const *xb,
                    const int n, __m256 s[], const int q5)
{
    const size_t gbytes = q5 ? Q5K_GROUP : Q4K_GROUP;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m256i m6 = _mm256_set1_epi32(63), m4d = _mm256_set1_epi32(0x0f),
                  m2d = _mm256_set1_epi32(3);
    for (int k = 0; k < n; k++) s[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *o = base + (size_t)b * gbytes;
        const uint8_t *qs = o + 128 + (q5 ? 256 : 0);
        /* the hardware prefetcher alone leaves interleaved rows latency-bound */
        for (size_t c = 0; c < gbytes; c += 64)
            _mm_prefetch((const char *)o + 2 * gbytes + c, _MM_HINT_T0);
        /* scales (duplicated per lane pair) and mins (int16, twice per int32: (m, m)) */
        const __m256i s0 = ld(o + 32), s1 = ld(o + 64), s2 = ld(o + 96);
        __m512i sc[8];
        __m256i mm[8];
        for (int j = 0; j < 4; j++) {
            const __m256i a = _mm256_and_si256(_mm256_srli_epi32(s0, 8 * j), m6);
            const __m256i c = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi32(s2, 8 * j), m4d),
                _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(s0, 8 * j + 6), m2d), 4));
            const __m256i ma = _mm256_and_si256(_mm256_srli_epi32(s1, 8 * j), m6);
            const __m256i mc = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi32(s2, 8 * j + 4), m4d),
                _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(s1, 8 * j + 6), m2d), 4));
            sc[j] = dup32(a);
            sc[j + 4] = dup32(c);
            mm[j] = _mm256_or_si256(ma, _mm256_slli_epi32(ma, 16));
            mm[j + 4] = _mm256_or_si256(mc, _mm256_slli_epi32(mc, 16));
        }
        __m512i isum[NT];
        for (int k = 0; k < n; k++) isum[k] = _mm512_setzero_si512();
        for (int p = 0; p < 4; p++) {
            __m512i a[NT], c[NT];
            for (int k = 0; k < n; k++) a[k] = c[k] = _mm512_setzero_si512();
            for (int m = 0; m < 4; m++) {
                const __m512i v = ldz(qs + 64 * (4 * p + m));
                __m512i lo = _mm512_and_si512(v, m4);
                __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                if (q5) { /* bits 2p and 2p + 1 of qh vector m */
                    const __m512i hb = ldz(o + K4_QH + 64 * m);
                    lo = _mm512_or_si512(lo, bit_to_4(hb, 2 * p));
                    hi = _mm512_or_si512(hi, bit_to_4(hb, 2 * p + 1));
                }
                for (int k = 0; k < n; k++) {
                    const int8_t *xq = xb[k][b].qs + 64 * p + 8 * m;
                    a[k] = _mm512_dpbusd_epi32(a[k], lo, pl_avx512_bcast8(xq));
                    c[k] = _mm512_dpbusd_epi32(c[k], hi, pl_avx512_bcast8(xq + 32));
                }
            }
            for (int k = 0; k < n; k++) {
                isum[k] = _mm512_add_epi32(isum[k], _mm512_mullo_epi32(a[k], sc[2 * p]));
                isum[k] = _mm512_add_epi32(isum[k], _mm512_mullo_epi32(c[k], sc[2 * p + 1]));
            }
        }
        const __m256 dw = f16x8(o), dmw = f16x8(o + 16);
        for (int k = 0; k < n; k++)
            s[k] = _mm256_add_ps(s[k], min_term(isum[k], mm, &xb[k][b], dw, dmw));
    }
}

INLINE void tile_q4_k(const uint8_t *restrict base, int64_t nb, const pl_block_q8_k *const *xb,
                      const int n, __m256 s[])
{
    tile_k4(base, nb, xb, n, s, 0);
}

INLINE void tile_q5_k(const uint8_t *restrict base, int64_t nb, const pl_block_q8_k *const *xb,
                      const int n, __m256 s[])
{
    tile_k4(base, nb, xb, n, s, 1);
}

static void matmul_q4_k_packed(PL_AVX512_MATMUL_ARGS)
{
    K_DRIVER(tile_q4_k, Q4K_GROUP);
}

static void matmul_q5_k_packed(PL_AVX512_MATMUL_ARGS)
{
    K_DRIVER(tile_q5_k, Q5K_GROUP);
}

const pl_repack pl_repack_q4_k_avx512 = {size_q4_k, pack_q4_k, matmul_q4_k_packed, NULL, NULL};
const pl_repack pl_repack_q5_k_avx512 = {size_q5_k, pack_q5_k, matmul_q5_k_packed, NULL, NULL};

/* ---- Q6_K ----------------------------------------------------------------------------- */

#define Q6K_GROUP (G * sizeof(pl_block_q6_k))

static size_t size_q6_k(int64_t K, int64_t R)
{
    return packed_size(K, R, Q6K_GROUP);
}

static void block_q6_k(uint8_t *o, const uint8_t *const rows[G])
{
    for (int r = 0; r < G; r++) {
        const pl_block_q6_k *blk = (const pl_block_q6_k *)rows[r];
        memcpy(o + 2 * r, &blk->d, 2);
        for (int j = 0; j < 16; j++) o[16 + 8 * j + r] = (uint8_t)blk->scales[j];
    }
    interleave8(o + 144, rows, offsetof(pl_block_q6_k, ql), 16);
    interleave8(o + 144 + 1024, rows, offsetof(pl_block_q6_k, qh), 8);
}

static void pack_q6_k(void *restrict dst, const void *restrict src, size_t srb, int64_t K,
                      int64_t R)
{
    pack_groups(dst, src, srb, K, R, PL_QK_K, sizeof(pl_block_q6_k), block_q6_k);
}

INLINE void tile_q6_k(const uint8_t *restrict base, int64_t nb, const pl_block_q8_k *const *xb,
                      const int n, __m256 s[])
{
    const __m512i m4 = _mm512_set1_epi8(0x0f), m2 = _mm512_set1_epi8(0x03);
    for (int k = 0; k < n; k++) s[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *o = base + (size_t)b * Q6K_GROUP;
        const uint8_t *ql = o + 144, *qh = o + 144 + 1024;
        for (size_t c = 0; c < Q6K_GROUP; c += 64)
            _mm_prefetch((const char *)o + 2 * Q6K_GROUP + c, _MM_HINT_T0);
        /* isum = sum_j sc_j (S_j - 32 bsums_j): the lanes carry sum_j sc_j S_j, and
         * corr = sum_j sc_j bsums_j per row comes from int16 pairs (sc_2i, sc_2i+1). */
        __m512i isum[NT];
        for (int k = 0; k < n; k++) isum[k] = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++)
            for (int half = 0; half < 2; half++) {
                /* l = 8m + 4c + e with m in {2 half, 2 half + 1}: sub-blocks 8h + 2i + half */
                __m512i acc[NT][4];
                for (int k = 0; k < n; k++)
                    for (int i = 0; i < 4; i++) acc[k][i] = _mm512_setzero_si512();
                for (int mm = 0; mm < 2; mm++) {
                    const int m = 2 * half + mm;
                    const __m512i a = ldz(ql + 512 * h + 64 * m);
                    const __m512i c = ldz(ql + 512 * h + 256 + 64 * m);
                    const __m512i hb = ldz(qh + 256 * h + 64 * m);
                    const __m512i q[4] = {
                        _mm512_or_si512(_mm512_and_si512(a, m4),
                                        _mm512_slli_epi16(_mm512_and_si512(hb, m2), 4)),
                        _mm512_or_si512(
                            _mm512_and_si512(c, m4),
                            _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 2), m2), 4)),
                        _mm512_or_si512(
                            _mm512_and_si512(_mm512_srli_epi16(a, 4), m4),
                            _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 4), m2), 4)),
                        _mm512_or_si512(
                            _mm512_and_si512(_mm512_srli_epi16(c, 4), m4),
                            _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 6), m2), 4)),
                    };
                    for (int k = 0; k < n; k++) {
                        const int8_t *xh = xb[k][b].qs + 128 * h + 8 * m;
                        for (int i = 0; i < 4; i++)
                            acc[k][i] =
                                _mm512_dpbusd_epi32(acc[k][i], q[i], pl_avx512_bcast8(xh + 32 * i));
                    }
                }
                for (int i = 0; i < 4; i++) {
                    const int js = 8 * h + 2 * i + half;
                    const __m512i sc = _mm512_cvtepi8_epi32(
                        _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(o + 16 + 8 * js)),
                                          _mm_loadl_epi64((const __m128i *)(o + 16 + 8 * js))));
                    for (int k = 0; k < n; k++)
                        isum[k] = _mm512_add_epi32(isum[k], _mm512_mullo_epi32(acc[k][i], sc));
                }
            }
        __m256i scp[8]; /* row r's (sc_2i, sc_2i+1) as int16 in int32 lane r */
        for (int i = 0; i < 8; i++)
            scp[i] = _mm256_cvtepi8_epi16(
                _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(o + 16 + 16 * i)),
                                  _mm_loadl_epi64((const __m128i *)(o + 16 + 16 * i + 8))));
        const __m256 dw = f16x8(o);
        for (int k = 0; k < n; k++) {
            __m256i corr = _mm256_setzero_si256();
            for (int i = 0; i < 8; i++)
                corr = _mm256_dpwssd_epi32(corr, scp[i], bd(xb[k][b].bsums + 2 * i));
            const __m256i is =
                _mm256_sub_epi32(pairsum(isum[k]), _mm256_slli_epi32(corr, 5)); /* 32 corr */
            const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(xb[k][b].d));
            s[k] = _mm256_add_ps(s[k], _mm256_mul_ps(d, _mm256_cvtepi32_ps(is)));
        }
    }
}

static void matmul_q6_k_packed(PL_AVX512_MATMUL_ARGS)
{
    K_DRIVER(tile_q6_k, Q6K_GROUP);
}

const pl_repack pl_repack_q6_k_avx512 = {size_q6_k, pack_q6_k, matmul_q6_k_packed, NULL, NULL};

/* ---- Q2_K, Q3_K and IQ4_XS (IQ4_NL: repack.c, with the 32-block types) ------------------ */
/* Layouts, per group of 8 rows, per (super-)block (the same bytes as 8 ggml blocks):
 *   Q2_K:   d[8] f16, dmin[8] f16, scales[16][8] (sub-block major), then qs as 8 vectors
 *           (bytes 8r.. of vector m are row r's qs[8m ..]).
 *   Q3_K:   d[8] f16, scales as 3 u32 words per row (s0[8], s1[8], s2[8]), hmask as 4
 *           vectors (row r's hmask[8m ..]), then qs as 8 vectors (as Q2_K).
 *   IQ4_XS: d[8] f16, scales_h[8] u16, scales_l as 1 u32 word per row, then qs as 16 vectors.
 * Qs vector m = 4 h + mm of Q2_K/Q3_K shifted by 2 s holds elements 128 h + 32 s + 8 mm + e
 * (sub-block 8 h + 2 s + mm / 2), and the high bits of those elements are bit 4 h + s of
 * hmask vector mm. IQ4_XS vector m, low nibbles: elements 32 (m / 2) + 8 (m % 2) + e, high
 * nibbles 16 further.
 *
 * Integer sums, exact for every byte value (vpdpbusd adds u8 x s8 products into int32, no
 * saturation): Q2_K's q sc_j <= 45 (the scale folded into the weights) and Q3_K's u = q + 4 hbit
 * <= 7 are unsigned against int8 x, Q3_K's sub-block sums packed to int16 and scaled by
 * vpdpwssd, its -4 back through the activation's bsums; IQ4_XS's levels + 128 (unsigned) against x,
 * less 128 sum(x) through the bsums. Then each row's float term as ref forms it, added into
 * one float per row in block order. */

#define Q2K_GROUP (G * sizeof(pl_block_q2_k))
#define Q3K_GROUP (G * sizeof(pl_block_q3_k))
#define XS_GROUP  (G * sizeof(pl_block_iq4_xs))
#define Q2K_QS    160 /* offsets in a group's super-block */
#define Q3K_HM    112
#define Q3K_QS    368
#define XS_QS     64

static size_t size_q2_k(int64_t K, int64_t R)
{
    return packed_size(K, R, Q2K_GROUP);
}

static size_t size_q3_k(int64_t K, int64_t R)
{
    return packed_size(K, R, Q3K_GROUP);
}

static size_t size_iq4_xs(int64_t K, int64_t R)
{
    return packed_size(K, R, XS_GROUP);
}

static void block_q2_k(uint8_t *o, const uint8_t *const rows[G])
{
    for (int r = 0; r < G; r++) {
        const pl_block_q2_k *blk = (const pl_block_q2_k *)rows[r];
        memcpy(o + 2 * r, &blk->d, 2);
        memcpy(o + 16 + 2 * r, &blk->dmin, 2);
        for (int j = 0; j < 16; j++) o[32 + 8 * j + r] = blk->scales[j];
    }
    interleave8(o + Q2K_QS, rows, offsetof(pl_block_q2_k, qs), 8);
}

static void pack_q2_k(void *restrict dst, const void *restrict src, size_t srb, int64_t K,
                      int64_t R)
{
    pack_groups(dst, src, srb, K, R, PL_QK_K, sizeof(pl_block_q2_k), block_q2_k);
}

static void block_q3_k(uint8_t *o, const uint8_t *const rows[G])
{
    for (int r = 0; r < G; r++) {
        const pl_block_q3_k *blk = (const pl_block_q3_k *)rows[r];
        memcpy(o + 2 * r, &blk->d, 2);
        for (int w = 0; w < 3; w++) memcpy(o + 16 + 32 * w + 4 * r, blk->scales + 4 * w, 4);
    }
    interleave8(o + Q3K_HM, rows, offsetof(pl_block_q3_k, hmask), 4);
    interleave8(o + Q3K_QS, rows, offsetof(pl_block_q3_k, qs), 8);
}

static void pack_q3_k(void *restrict dst, const void *restrict src, size_t srb, int64_t K,
                      int64_t R)
{
    pack_groups(dst, src, srb, K, R, PL_QK_K, sizeof(pl_block_q3_k), block_q3_k);
}

static void block_iq4_xs(uint8_t *o, const uint8_t *const rows[G])
{
    for (int r = 0; r < G; r++) {
        const pl_block_iq4_xs *blk = (const pl_block_iq4_xs *)rows[r];
        memcpy(o + 2 * r, &blk->d, 2);
        memcpy(o + 16 + 2 * r, &blk->scales_h, 2);
        memcpy(o + 32 + 4 * r, blk->scales_l, 4);
    }
    interleave8(o + XS_QS, rows, offsetof(pl_block_iq4_xs, qs), 16);
}

static void pack_iq4_xs(void *restrict dst, const void *restrict src, size_t srb, int64_t K,
                        int64_t R)
{
    pack_groups(dst, src, srb, K, R, PL_QK_K, sizeof(pl_block_iq4_xs), block_iq4_xs);
}

/* Q2_K sub-block j's scales as words: row r's sc_j (the low nibble of its byte r at sj) in
 * each of the 4 words of the row's 8 bytes. */
INLINE __m512i q2_scale_words(const uint8_t *sj)
{
    /* 128-bit lane L holds rows 2L (bytes 0..7) and 2L + 1 (8..15); the broadcast puts sj's
     * 8 bytes in each half of every lane */
    const __m512i idx =
        _mm512_set_epi8(-1, 7, -1, 7, -1, 7, -1, 7, -1, 6, -1, 6, -1, 6, -1, 6, -1, 5, -1, 5, -1, 5,
                        -1, 5, -1, 4, -1, 4, -1, 4, -1, 4, -1, 3, -1, 3, -1, 3, -1, 3, -1, 2, -1, 2,
                        -1, 2, -1, 2, -1, 1, -1, 1, -1, 1, -1, 1, -1, 0, -1, 0, -1, 0, -1, 0);
    return _mm512_and_si512(_mm512_shuffle_epi8(pl_avx512_bcast8(sj), idx),
                            _mm512_set1_epi16(0x0f));
}

/* Q2_K's mins of sub-blocks 4i .. 4i + 3 (the 32 bytes at p) as int16: lane 2r + q holds row
 * r's (m_4i+2q, m_4i+2q+1), so a 64-bit broadcast of bsums 4i .. 4i + 3 meets them. */
INLINE __m512i q2_mins(const uint8_t *p)
{
    /* word 4r + 2q + e takes byte 8 (2q + e) + r */
    const __m512i idx = _mm512_set_epi16(31, 23, 15, 7, 30, 22, 14, 6, 29, 21, 13, 5, 28, 20, 12, 4,
                                         27, 19, 11, 3, 26, 18, 10, 2, 25, 17, 9, 1, 24, 16, 8, 0);
    const __m512i m = _mm512_permutexvar_epi16(idx, _mm512_cvtepu8_epi16(ld(p)));
    return _mm512_and_si512(_mm512_srli_epi16(m, 4), _mm512_set1_epi16(0x0f));
}

/* s[k] = the n tokens' dots with the group's 8 rows, super-block by super-block as ref:
 * s += d * float(isum) - dmin * float(summs), d = dw * dx, dmin = dminw * dx.
 * The scales go into the weights: q sc_j <= 3 * 15 = 45 is still a byte, and a 16-bit
 * product of two such bytes by sc_j carries nothing from the low byte into the high one, so
 * isum = sum (q sc_j) x is one vpdpbusd chain per token, exact. */
INLINE void tile_q2_k(const uint8_t *restrict base, int64_t nb, const pl_block_q8_k *const *xb,
                      const int n, __m256 s[])
{
    const __m512i m3 = _mm512_set1_epi8(3);
    for (int k = 0; k < n; k++) s[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *o = base + (size_t)b * Q2K_GROUP;
        for (size_t c = 0; c < Q2K_GROUP; c += 64)
            _mm_prefetch((const char *)o + 2 * Q2K_GROUP + c, _MM_HINT_T0);
        __m512i isum[NT_Q2K];
        for (int k = 0; k < n; k++) isum[k] = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            __m512i v[4];
            for (int mm = 0; mm < 4; mm++) v[mm] = ldz(o + Q2K_QS + 64 * (4 * h + mm));
            for (int sh = 0; sh < 4; sh++)
                for (int p = 0; p < 2; p++) { /* sub-block j: vectors mm = 2p, 2p + 1 */
                    const __m512i sc = q2_scale_words(o + 32 + 8 * (8 * h + 2 * sh + p));
                    for (int c = 0; c < 2; c++) {
                        const int mm = 2 * p + c;
                        const __m512i q = _mm512_mullo_epi16(
                            _mm512_and_si512(_mm512_srli_epi16(v[mm], (unsigned)(2 * sh)), m3), sc);
                        for (int k = 0; k < n; k++)
                            isum[k] = _mm512_dpbusd_epi32(
                                isum[k], q,
                                pl_avx512_bcast8(xb[k][b].qs + 128 * h + 32 * sh + 8 * mm));
                    }
                }
        }
        __m512i mz[4];
        for (int i = 0; i < 4; i++) mz[i] = q2_mins(o + 32 + 32 * i);
        const __m256 dw = f16x8(o), dmw = f16x8(o + 16);
        for (int k = 0; k < n; k++) {
            __m512i summs = _mm512_setzero_si512(); /* pairs of lanes, as isum */
            for (int i = 0; i < 4; i++)
                summs = _mm512_dpwssd_epi32(summs, mz[i], pl_avx512_bcast8(xb[k][b].bsums + 4 * i));
            s[k] = _mm256_add_ps(s[k],
                                 min_float(pairsum(isum[k]), pairsum(summs), xb[k][b].d, dw, dmw));
        }
    }
}

/* Bit j (< 8) of each byte of v moved to bit 2, the rest cleared (16-bit shifts by at most 5
 * bring bit 2 of each byte from inside the same byte). */
INLINE __m512i bit_to_2(__m512i v, int j)
{
    const __m512i s =
        j <= 2 ? _mm512_slli_epi16(v, (unsigned)(2 - j)) : _mm512_srli_epi16(v, (unsigned)(j - 2));
    return _mm512_and_si512(s, _mm512_set1_epi8(4));
}

/* Q3_K's lane order for a pair of sub-blocks (2i, 2i + 1): int32 lane 4L + e holds row 2L + e
 * of sub-block 2i for e < 2, row 2L + e - 2 of sub-block 2i + 1 for e >= 2 — the order
 * vpackssdw leaves two vectors of (row, chunk) lanes in. */
static inline __m512i q3_pair_rows(const uint8_t *p)
{
    const __m512i idx = _mm512_setr_epi32(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7);
    /* sub-block 2i + 1's bits sit 8 above 2i's in the same word */
    const __m512i sh = _mm512_setr_epi32(0, 0, 8, 8, 0, 0, 8, 8, 0, 0, 8, 8, 0, 0, 8, 8);
    return _mm512_srlv_epi32(_mm512_permutexvar_epi32(idx, _mm512_castsi256_si512(ld(p))), sh);
}

/* ref's s += (dw * dx) * float(isum), isum = sum_j (sc_j - 32) (sum u x - 4 bsums_j).
 * Per token and pair of sub-blocks: two vpdpbusd chains give each (row, chunk) lane's sum of
 * 8 products u x, |.| <= 8 * 7 * 128 < 2^15; vpackssdw packs the pair's two vectors into
 * int16 (exact) and one vpdpwssd against (sc, sc) adds both chunks of each row, scaled. */
INLINE void tile_q3_k(const uint8_t *restrict base, int64_t nb, const pl_block_q8_k *const *xb,
                      const int n, __m256 s[])
{
    const __m512i m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi32(0x0f), m2 = _mm512_set1_epi32(3),
                  c32 = _mm512_set1_epi32(32);
    /* int16 (sc, sc) from int32 sc; and (sc_2i, sc_2i+1) of a row from lanes e, e + 2 */
    const __m512i dupw = _mm512_set4_epi32(0x0d0c0d0c, 0x09080908, 0x05040504, 0x01000100);
    const __m512i pairw = _mm512_set4_epi32(0x0d0c0504, 0x09080100, 0x0d0c0504, 0x09080100);
    const __m512i rows = _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    /* lane 2r + q: row r's lane (4 (r / 2) + r % 2) of the even pair (q = 0), the odd (q = 1) */
    const __m512i spidx =
        _mm512_setr_epi32(0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29);
    for (int k = 0; k < n; k++) s[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *o = base + (size_t)b * Q3K_GROUP;
        const uint8_t *qs = o + Q3K_QS, *hm = o + Q3K_HM;
        for (size_t c = 0; c < Q3K_GROUP; c += 64)
            _mm_prefetch((const char *)o + 2 * Q3K_GROUP + c, _MM_HINT_T0);
        /* scale j of row r: low 4 bits in byte j % 8 of words a0, a1 (high nibble for j >= 8),
         * high 2 bits at 2 (j / 4) in byte j % 4 of word t */
        const __m512i a0 = q3_pair_rows(o + 16), a1 = q3_pair_rows(o + 48),
                      t = q3_pair_rows(o + 80);
        __m512i isum[NT_Q3K];
        for (int k = 0; k < n; k++) isum[k] = _mm512_setzero_si512();
        /* row r's (sc_4i+2q, sc_4i+2q+1) as int16 in lane 2r + q of sp[i], against a 64-bit
         * broadcast of bsums 4i .. 4i + 3; pwe: the even pair's (sc_2i, sc_2i+1) */
        __m512i sp[4], pwe = _mm512_setzero_si512();
        /* unrolled: constant shifts, and no register copies between the pairs (measured 11%) */
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m512i v[4], hb[4];
            for (int mm = 0; mm < 4; mm++) {
                v[mm] = ldz(qs + 64 * (4 * h + mm));
                hb[mm] = ldz(hm + 64 * mm);
            }
#pragma GCC unroll 4
            for (int sh = 0; sh < 4; sh++) {
                const int i = 4 * h + sh, j = 2 * i; /* sub-blocks j (mm 0, 1), j + 1 (mm 2, 3) */
                const __m512i a = (j / 4) % 2 ? a1 : a0;
                const unsigned lo_at = 8 * (j % 4) + (j >= 8 ? 4 : 0),
                               hi_at = 8 * (j % 4) + 2 * (j / 4);
                const __m512i sc = _mm512_sub_epi32(
                    _mm512_or_si512(
                        _mm512_and_si512(_mm512_srli_epi32(a, lo_at), m4),
                        _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(t, hi_at), m2), 4)),
                    c32);
                const __m512i scw = _mm512_shuffle_epi8(sc, dupw);
                const __m512i pw = _mm512_shuffle_epi8(sc, pairw);
                if (i % 2)
                    sp[i / 2] = _mm512_permutex2var_epi32(pwe, spidx, pw);
                else
                    pwe = pw;
                __m512i q[4];
                for (int mm = 0; mm < 4; mm++)
                    q[mm] = _mm512_or_si512(
                        _mm512_and_si512(_mm512_srli_epi16(v[mm], (unsigned)(2 * sh)), m3),
                        bit_to_2(hb[mm], 4 * h + sh));
                for (int k = 0; k < n; k++) {
                    const int8_t *xq = xb[k][b].qs + 128 * h + 32 * sh;
                    __m512i d[2];
                    for (int p = 0; p < 2; p++)
                        d[p] = _mm512_dpbusd_epi32(
                            _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[2 * p],
                                                pl_avx512_bcast8(xq + 16 * p)),
                            q[2 * p + 1], pl_avx512_bcast8(xq + 16 * p + 8));
                    isum[k] = _mm512_dpwssd_epi32(isum[k], _mm512_packs_epi32(d[0], d[1]), scw);
                }
            }
        }
        const __m256 dw = f16x8(o);
        for (int k = 0; k < n; k++) {
            __m512i corr = _mm512_setzero_si512();
            for (int i = 0; i < 4; i++)
                corr = _mm512_dpwssd_epi32(corr, sp[i], pl_avx512_bcast8(xb[k][b].bsums + 4 * i));
            /* row 2L + e: lanes 4L + e and 4L + e + 2 */
            const __m512i r2 =
                _mm512_add_epi32(isum[k], _mm512_shuffle_epi32(isum[k], _MM_PERM_BADC));
            const __m256i is =
                _mm256_sub_epi32(_mm512_castsi512_si256(_mm512_permutexvar_epi32(rows, r2)),
                                 _mm256_slli_epi32(pairsum(corr), 2));
            const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(xb[k][b].d));
            s[k] = _mm256_add_ps(s[k], _mm256_mul_ps(d, _mm256_cvtepi32_ps(is)));
        }
    }
}

/* The 16 levels + 128 (unsigned) in every 128-bit lane. */
static inline __m512i iq4_levels(void)
{
    return _mm512_add_epi8(
        _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)pl_iq4nl_values)),
        _mm512_set1_epi8((char)0x80));
}

/* ref's s += (dw * dx) * float(isum), isum = sum_i (ls_i - 32) (sum (level + 128) x -
 * 128 (bsums_2i + bsums_2i+1)). */
INLINE void tile_iq4_xs(const uint8_t *restrict base, int64_t nb, const pl_block_q8_k *const *xb,
                        const int n, __m256 s[])
{
    const __m512i lv = iq4_levels(), m4 = _mm512_set1_epi8(0x0f);
    for (int k = 0; k < n; k++) s[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *o = base + (size_t)b * XS_GROUP;
        for (size_t c = 0; c < XS_GROUP; c += 64)
            _mm_prefetch((const char *)o + 2 * XS_GROUP + c, _MM_HINT_T0);
        const __m256i sh = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(o + 16)));
        const __m256i sl = ld(o + 32);
        __m512i isum[NT];
        __m256i corr[NT];
        for (int k = 0; k < n; k++) {
            isum[k] = _mm512_setzero_si512();
            corr[k] = _mm256_setzero_si256();
        }
        for (int i = 0; i < 8; i++) {
            const __m256i ls = _mm256_sub_epi32(
                _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi32(sl, 4 * i), _mm256_set1_epi32(0x0f)),
                    _mm256_slli_epi32(
                        _mm256_and_si256(_mm256_srli_epi32(sh, 2 * i), _mm256_set1_epi32(3)), 4)),
                _mm256_set1_epi32(32));
            __m512i acc[NT];
            for (int k = 0; k < n; k++) acc[k] = _mm512_setzero_si512();
            for (int c = 0; c < 2; c++) {
                const __m512i v = ldz(o + XS_QS + 64 * (2 * i + c));
                const __m512i lo = _mm512_shuffle_epi8(lv, _mm512_and_si512(v, m4));
                const __m512i hi =
                    _mm512_shuffle_epi8(lv, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
                for (int k = 0; k < n; k++) {
                    const int8_t *xq = xb[k][b].qs + 32 * i + 8 * c;
                    acc[k] = _mm512_dpbusd_epi32(acc[k], lo, pl_avx512_bcast8(xq));
                    acc[k] = _mm512_dpbusd_epi32(acc[k], hi, pl_avx512_bcast8(xq + 16));
                }
            }
            const __m512i lsd = dup32(ls);
            const __m256i lsp = _mm256_or_si256(_mm256_and_si256(ls, _mm256_set1_epi32(0xffff)),
                                                _mm256_slli_epi32(ls, 16));
            for (int k = 0; k < n; k++) {
                isum[k] = _mm512_add_epi32(isum[k], _mm512_mullo_epi32(acc[k], lsd));
                corr[k] = _mm256_dpwssd_epi32(corr[k], lsp, bd(xb[k][b].bsums + 2 * i));
            }
        }
        const __m256 dw = f16x8(o);
        for (int k = 0; k < n; k++) {
            const __m256i is = _mm256_sub_epi32(pairsum(isum[k]), _mm256_slli_epi32(corr[k], 7));
            const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(xb[k][b].d));
            s[k] = _mm256_add_ps(s[k], _mm256_mul_ps(d, _mm256_cvtepi32_ps(is)));
        }
    }
}

static void matmul_q2_k_packed(PL_AVX512_MATMUL_ARGS)
{
    K_DRIVER_X(tile_q2_k, Q2K_GROUP, pl_block_q8_k, PL_QK_K, NT_Q2K);
}

static void matmul_q3_k_packed(PL_AVX512_MATMUL_ARGS)
{
    K_DRIVER_X(tile_q3_k, Q3K_GROUP, pl_block_q8_k, PL_QK_K, NT_Q3K);
}

static void matmul_iq4_xs_packed(PL_AVX512_MATMUL_ARGS)
{
    K_DRIVER(tile_iq4_xs, XS_GROUP);
}

const pl_repack pl_repack_q2_k_avx512 = {size_q2_k, pack_q2_k, matmul_q2_k_packed, NULL, NULL};
const pl_repack pl_repack_q3_k_avx512 = {size_q3_k, pack_q3_k, matmul_q3_k_packed, NULL, NULL};
const pl_repack pl_repack_iq4_xs_avx512 = {size_iq4_xs, pack_iq4_xs, matmul_iq4_xs_packed, NULL,
                                           NULL};
