/* repack_k.c — the avx512 set's repacked layout for Q4_K and Q6_K and its matmul: 8 rows
 * interleaved so that a vector lane is a row. Not a new format: a permutation of the bytes.
 *
 * Layout, per group of 8 rows, per super-block (the same bytes as 8 ggml super-blocks):
 *   Q4_K: d[8] f16, dmin[8] f16, scales as 3 u32 words per row (s0[8], s1[8], s2[8]), then
 *         4 x 8 vectors of 32 bytes: byte 4r + e of vector (p, k) is row r's qs[32p + 4k + e]
 *         (low nibbles: elements 64p + 4k + e; high nibbles: 64p + 32 + 4k + e).
 *   Q6_K: d[8] f16, scales[16][8] int8 (sub-block major), then ql as 2 x 16 vectors (byte
 *         4r + e of vector (h, k) is row r's ql[64h + 4k + e], k < 16) and qh as 2 x 8
 *         vectors (row r's qh[32h + 4k + e]).
 * Bit-identical to ref (and so to matmul_q.c): each row's super-block integer sums are exact
 * and its float term is formed and summed with ref's operations, one row per lane. */
#include <immintrin.h>
#include <string.h>

#include "avx512.h"

#define G 8

static inline __m256i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

static inline __m256i dp(__m256i acc, __m256i u, const int8_t *x)
{
    return _mm256_dpbusd_epi32(acc, u, bcast4(x));
}

static inline __m256 f16x8(const uint8_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static inline __m256i ld(const uint8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

/* Writes the 4-byte chunks of the 8 rows' byte arrays interleaved: out[32k + 4r + e] =
 * row r's src[4k + e], for k < n_chunks. */
static void interleave4(uint8_t *out, const uint8_t *const rows[G], size_t off, int n_chunks)
{
    for (int k = 0; k < n_chunks; k++)
        for (int r = 0; r < G; r++) memcpy(out + 32 * k + 4 * r, rows[r] + off + 4 * k, 4);
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

/* Bytes of the packed R x K matrix: groups of 8 rows (the last padded), group_bytes per
 * super-block. */
static size_t packed_size(int64_t K, int64_t R, size_t group_bytes)
{
    return (size_t)((R + G - 1) / G) * (size_t)(K / PL_QK_K) * group_bytes;
}

/* ---- Q4_K ----------------------------------------------------------------------------- */

#define Q4K_GROUP (G * sizeof(pl_block_q4_k))

static size_t size_q4_k(int64_t K, int64_t R)
{
    return packed_size(K, R, Q4K_GROUP);
}

static void pack_q4_k(void *restrict dst, const void *restrict src, size_t srb, int64_t K,
                      int64_t R)
{
    static const uint8_t zero[sizeof(pl_block_q4_k)];
    const int64_t nb = K / PL_QK_K;
    for (int64_t g = 0; g < (R + G - 1) / G; g++)
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *o = (uint8_t *)dst + ((size_t)g * (size_t)nb + (size_t)b) * Q4K_GROUP;
            const uint8_t *rows[G];
            group_rows(rows, src, srb, g, b, sizeof(pl_block_q4_k), R, zero);
            for (int r = 0; r < G; r++) {
                const pl_block_q4_k *blk = (const pl_block_q4_k *)rows[r];
                memcpy(o + 2 * r, &blk->d, 2);
                memcpy(o + 16 + 2 * r, &blk->dmin, 2);
                for (int w = 0; w < 3; w++) memcpy(o + 32 + 32 * w + 4 * r, blk->scales + 4 * w, 4);
            }
            interleave4(o + 128, rows, offsetof(pl_block_q4_k, qs), 32);
        }
}

static void matmul_q4_k_packed(PL_AVX512_MATMUL_ARGS)
{
    (void)w_row_bytes;
    const int64_t nb = K / PL_QK_K;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m6 = _mm256_set1_epi32(63),
                  m4d = _mm256_set1_epi32(0x0f), m2d = _mm256_set1_epi32(3);
    for (int64_t g = r0 / G; g * G < r1; g++) {
        const uint8_t *base = (const uint8_t *)w + (size_t)g * (size_t)nb * Q4K_GROUP;
        const int64_t lo = r0 > g * G ? r0 - g * G : 0, hi = r1 < (g + 1) * G ? r1 - g * G : G;
        for (int64_t tk = 0; tk < T; tk++) {
            const pl_block_q8_k *xb =
                (const pl_block_q8_k *)((const uint8_t *)x + (size_t)tk * x_row_bytes);
            __m256 s = _mm256_setzero_ps();
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *o = base + (size_t)b * Q4K_GROUP;
                const int8_t *xq = xb[b].qs;
                for (size_t c = 0; c < Q4K_GROUP; c += 64)
                    _mm_prefetch((const char *)o + 2 * Q4K_GROUP + c, _MM_HINT_T0);
                const __m256i s0 = ld(o + 32), s1 = ld(o + 64), s2 = ld(o + 96);
                __m256i sc[8], mn[8];
                for (int j = 0; j < 4; j++) {
                    sc[j] = _mm256_and_si256(_mm256_srli_epi32(s0, 8 * j), m6);
                    mn[j] = _mm256_and_si256(_mm256_srli_epi32(s1, 8 * j), m6);
                    sc[j + 4] = _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi32(s2, 8 * j), m4d),
                        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(s0, 8 * j + 6), m2d),
                                          4));
                    mn[j + 4] = _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi32(s2, 8 * j + 4), m4d),
                        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(s1, 8 * j + 6), m2d),
                                          4));
                }
                __m256i isum = _mm256_setzero_si256(), summs = _mm256_setzero_si256();
                for (int p = 0; p < 4; p++) {
                    __m256i a = _mm256_setzero_si256(), c = _mm256_setzero_si256();
                    for (int k = 0; k < 8; k++) {
                        const __m256i v = ld(o + 128 + 256 * p + 32 * k);
                        a = dp(a, _mm256_and_si256(v, m4), xq + 64 * p + 4 * k);
                        c = dp(c, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
                               xq + 64 * p + 32 + 4 * k);
                    }
                    isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(a, sc[2 * p]));
                    isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(c, sc[2 * p + 1]));
                }
                for (int j = 0; j < 8; j++)
                    summs = _mm256_add_epi32(
                        summs,
                        _mm256_mullo_epi32(
                            mn[j], _mm256_set1_epi32(xb[b].bsums[2 * j] + xb[b].bsums[2 * j + 1])));
                const __m256 dx = _mm256_set1_ps(xb[b].d);
                const __m256 d = _mm256_mul_ps(f16x8(o), dx),
                             dmin = _mm256_mul_ps(f16x8(o + 16), dx);
                const __m256 term = _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(isum)),
                                                  _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(summs)));
                s = _mm256_add_ps(s, term);
            }
            float out[G];
            _mm256_storeu_ps(out, s);
            for (int64_t r = lo; r < hi; r++) y[tk * ldy + g * G + r] = out[r];
        }
    }
}

const pl_repack pl_repack_q4_k_avx512 = {size_q4_k, pack_q4_k, matmul_q4_k_packed, NULL, NULL};

/* ---- Q6_K ----------------------------------------------------------------------------- */

#define Q6K_GROUP (G * sizeof(pl_block_q6_k))

static size_t size_q6_k(int64_t K, int64_t R)
{
    return packed_size(K, R, Q6K_GROUP);
}

static void pack_q6_k(void *restrict dst, const void *restrict src, size_t srb, int64_t K,
                      int64_t R)
{
    static const uint8_t zero[sizeof(pl_block_q6_k)];
    const int64_t nb = K / PL_QK_K;
    for (int64_t g = 0; g < (R + G - 1) / G; g++)
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *o = (uint8_t *)dst + ((size_t)g * (size_t)nb + (size_t)b) * Q6K_GROUP;
            const uint8_t *rows[G];
            group_rows(rows, src, srb, g, b, sizeof(pl_block_q6_k), R, zero);
            for (int r = 0; r < G; r++) {
                const pl_block_q6_k *blk = (const pl_block_q6_k *)rows[r];
                memcpy(o + 2 * r, &blk->d, 2);
                for (int j = 0; j < 16; j++) o[16 + 8 * j + r] = (uint8_t)blk->scales[j];
            }
            interleave4(o + 144, rows, offsetof(pl_block_q6_k, ql), 32);
            interleave4(o + 144 + 1024, rows, offsetof(pl_block_q6_k, qh), 16);
        }
}

static void matmul_q6_k_packed(PL_AVX512_MATMUL_ARGS)
{
    (void)w_row_bytes;
    const int64_t nb = K / PL_QK_K;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03);
    for (int64_t g = r0 / G; g * G < r1; g++) {
        const uint8_t *base = (const uint8_t *)w + (size_t)g * (size_t)nb * Q6K_GROUP;
        const int64_t lo = r0 > g * G ? r0 - g * G : 0, hi = r1 < (g + 1) * G ? r1 - g * G : G;
        for (int64_t tk = 0; tk < T; tk++) {
            const pl_block_q8_k *xb =
                (const pl_block_q8_k *)((const uint8_t *)x + (size_t)tk * x_row_bytes);
            __m256 s = _mm256_setzero_ps();
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *o = base + (size_t)b * Q6K_GROUP;
                const uint8_t *ql = o + 144, *qh = o + 144 + 1024;
                /* the hardware prefetcher alone leaves interleaved rows latency-bound */
                for (size_t c = 0; c < Q6K_GROUP; c += 64)
                    _mm_prefetch((const char *)o + 2 * Q6K_GROUP + c, _MM_HINT_T0);
                const int8_t *xq = xb[b].qs;
                __m256i isum = _mm256_setzero_si256();
                for (int h = 0; h < 2; h++)
                    for (int half = 0; half < 2; half++) {
                        /* elements 4k.. (k in 4 half .. 4 half + 3) of each 32 of this 128:
                         * sub-blocks 8h + half (q0), + 2 (q1), + 4 (q2), + 6 (q3) */
                        __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
                        for (int kk = 0; kk < 4; kk++) {
                            const int k = 4 * half + kk;
                            const __m256i a = ld(ql + 512 * h + 32 * k);
                            const __m256i c = ld(ql + 512 * h + 256 + 32 * k);
                            const __m256i hb = ld(qh + 256 * h + 32 * k);
                            const __m256i q0 =
                                _mm256_or_si256(_mm256_and_si256(a, m4),
                                                _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
                            const __m256i q1 = _mm256_or_si256(
                                _mm256_and_si256(c, m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2),
                                                  4));
                            const __m256i q2 = _mm256_or_si256(
                                _mm256_and_si256(_mm256_srli_epi16(a, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2),
                                                  4));
                            const __m256i q3 = _mm256_or_si256(
                                _mm256_and_si256(_mm256_srli_epi16(c, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2),
                                                  4));
                            const int8_t *xh = xq + 128 * h + 4 * k;
                            s0 = dp(s0, q0, xh);
                            s1 = dp(s1, q1, xh + 32);
                            s2 = dp(s2, q2, xh + 64);
                            s3 = dp(s3, q3, xh + 96);
                        }
                        const __m256i sv[4] = {s0, s1, s2, s3};
                        for (int i = 0; i < 4; i++) {
                            const int js = 8 * h + 2 * i + half; /* sub-block of 16 */
                            const __m256i sc = _mm256_cvtepi8_epi32(
                                _mm_loadl_epi64((const __m128i *)(o + 16 + 8 * js)));
                            const __m256i v =
                                _mm256_sub_epi32(sv[i], _mm256_set1_epi32(32 * xb[b].bsums[js]));
                            isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(v, sc));
                        }
                    }
                const __m256 d = _mm256_mul_ps(f16x8(o), _mm256_set1_ps(xb[b].d));
                s = _mm256_add_ps(s, _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum)));
            }
            float out[G];
            _mm256_storeu_ps(out, s);
            for (int64_t r = lo; r < hi; r++) y[tk * ldy + g * G + r] = out[r];
        }
    }
}

const pl_repack pl_repack_q6_k_avx512 = {size_q6_k, pack_q6_k, matmul_q6_k_packed, NULL, NULL};
