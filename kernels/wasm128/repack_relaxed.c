/* repack_relaxed.c — the wasm128r set's repacked layouts for Q4_0, Q5_0 and Q8_0 (issue 52), their
 * prepared activations and their matmuls: 4 rows interleaved so that one relaxed dot
 * (simd.h: i32x4.relaxed_dot_i8x16_i7x16_add_s, second operand in [0, 127]) adds 4 products
 * to each of 4 rows, row r in lane r, from one 4-byte broadcast of the activations. No
 * horizontal sum, no f16 conversion and no nibble offset in the row loop.
 * Not a new format: every block's bytes are a permutation of ggml's, the half scale stored as
 * the float it converts to (exact).
 *
 * Weights, per group of 4 rows (a pad row past R is a zero row), per block b (row r's block b
 * for r < 4), one unit:
 *   d[4] float: row r's scale (pl_w_f16_to_f32 of its half: exact)
 *   Q4_0: q[64]: bytes 16k + 4r .. 16k + 4r + 3 are row r's qs[4k .. 4k + 3] (k < 4): the low
 *         nibbles of vector k are chunk k (elements 4k ..), the high ones chunk 4 + k
 *         (elements 16 + 4k ..)
 *   Q5_0: h[16], then q[64] as Q4_0's: bit c of byte 4r + j of h is row r's fifth bit of
 *         element 4c + j (bit 4c + j of its qh), so chunk c's 0x10s are h shifted by 4 - c
 *         (16-bit lanes: a byte's bit 4 comes from a bit of its own) and masked
 *   Q8_0: q[128]: bytes 16c + 4r .. 16c + 4r + 3 are row r's qs[4c .. 4c + 3] (c < 8)
 * Prepared activations (x_prep: once per token per call, not per row), per block:
 *   Q4_0, Q5_0: qs[32] as they are, dx (float), sum(qs) (int32): 40 bytes
 *   Q8_0: lo[32] = qs & 0x7f, hi[32] = 1 where qs < 0, dx (float), 4 bytes of 0: 72 bytes
 * The dots: Q4_0 dot(x, q) (x first: any int8; q a nibble, 0..15), less 8 sum(x); Q5_0 the
 * same with q in 0..31, less 16 sum(x); Q8_0
 * dot(w, lo) - 128 dot(w, hi) (w first: any int8; lo in [0, 127], hi 0 or 1), since
 * x = lo - 128 hi. Pair sums |a b + a' b'| <= 2 * 128 * 127 < 2^15: the dot is exact.
 *
 * Bit-identical to wasm128r's (and so wasm128's) own matmul (matmul_q.c): the same exact
 * integer block sums, term = (dw * dx) * float(isum) per block as there, block b's term added
 * to accumulator b % 4 (there: lane b % 4 of one vector; here: vector b % 4, lane r), and the
 * same final ((a0 + a2) + (a1 + a3)) per row. Blocks past the row's last add nothing there
 * either (their +0 terms leave an accumulator as it is: it starts at +0 and a sum that is
 * exactly zero is +0 under round-to-nearest, so it never holds -0). Rows [r0, r1) are
 * written, whatever groups they cut. */
#define PL_W_RELAXED 1
#include "simd.h"
#include "wasm128.h"

#define G  4 /* rows of a group: the 4 int32 lanes */
#define NT 4 /* tokens that share one decode of a group's block */

static size_t unit_of(pl_type t)
{
    return t == PL_TYPE_Q8_0 ? 16 + 128 : t == PL_TYPE_Q5_0 ? 16 + 16 + 64 : 16 + 64;
}

static size_t xblk_of(pl_type t)
{
    return t == PL_TYPE_Q8_0 ? 72 : 40;
}

static size_t size_t_(pl_type t, int64_t K, int64_t R)
{
    return (size_t)((R + G - 1) / G) * (size_t)(K / 32) * unit_of(t);
}

static void pack_t(pl_type t, uint8_t *restrict dst, const uint8_t *restrict src, size_t srb,
                   int64_t K, int64_t R)
{
    const int64_t nb = K / 32;
    const size_t bb = t == PL_TYPE_Q8_0   ? sizeof(pl_block_q8_0)
                      : t == PL_TYPE_Q5_0 ? sizeof(pl_block_q5_0)
                                          : sizeof(pl_block_q4_0);
    const size_t unit = unit_of(t), qoff = t == PL_TYPE_Q5_0 ? 32 : 16;
    const size_t nq = (unit - qoff) / 16;  /* q vectors */
    const size_t qs_at = bb - 16 * nq / G; /* the block's qs: after d (and qh) */
    for (int64_t g = 0; g < (R + G - 1) / G; g++)
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *o = dst + ((size_t)g * (size_t)nb + (size_t)b) * unit;
            if (g * G + G > R) memset(o, 0, unit);        /* pad rows: zero quants */
            if (t == PL_TYPE_Q5_0) memset(o + 16, 0, 16); /* h: or-ed in below */
            uint32_t dh[G] = {0};
            for (int r = 0; r < G && g * G + r < R; r++) {
                const uint8_t *blk = src + (size_t)(g * G + r) * srb + (size_t)b * bb;
                pl_f16 h;
                memcpy(&h, blk, sizeof h);
                dh[r] = h;
                for (size_t k = 0; k < nq; k++)
                    memcpy(o + qoff + 16 * k + 4 * r, blk + qs_at + 4 * k, 4);
                if (t == PL_TYPE_Q5_0) {
                    uint32_t qh;
                    memcpy(&qh, ((const pl_block_q5_0 *)blk)->qh, 4);
                    for (int c = 0; c < 8; c++)
                        for (int j = 0; j < 4; j++)
                            o[16 + 4 * r + j] |= (uint8_t)(((qh >> (4 * c + j)) & 1u) << c);
                }
            }
            const v128_t d = pl_w_f16_to_f32(
                wasm_i32x4_make((int32_t)dh[0], (int32_t)dh[1], (int32_t)dh[2], (int32_t)dh[3]));
            wasm_v128_store(o, d);
        }
}

static void x_prep_t(pl_type t, uint8_t *restrict dst, const void *restrict src, int64_t K)
{
    const pl_block_q8_0 *xb = src;
    const size_t xbb = xblk_of(t);
    for (int64_t b = 0; b < K / 32; b++) {
        uint8_t *o = dst + (size_t)b * xbb;
        const v128_t x0 = wasm_v128_load(xb[b].qs), x1 = wasm_v128_load(xb[b].qs + 16);
        const float dx = pl_f16_to_f32(xb[b].d);
        if (t == PL_TYPE_Q8_0) {
            const v128_t m = wasm_i8x16_splat(0x7f);
            wasm_v128_store(o, wasm_v128_and(x0, m));
            wasm_v128_store(o + 16, wasm_v128_and(x1, m));
            wasm_v128_store(o + 32, wasm_u8x16_shr(x0, 7));
            wasm_v128_store(o + 48, wasm_u8x16_shr(x1, 7));
            memcpy(o + 64, &dx, 4);
            memset(o + 68, 0, 4);
        } else {
            const int32_t s = pl_w_hsum_i32(wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_add(
                wasm_i16x8_extadd_pairwise_i8x16(x0), wasm_i16x8_extadd_pairwise_i8x16(x1))));
            wasm_v128_store(o, x0);
            wasm_v128_store(o + 16, x1);
            memcpy(o + 32, &dx, 4);
            memcpy(o + 36, &s, 4);
        }
    }
}

/* 4 bytes at p in every lane. */
PL_W_INLINE v128_t splat4(const uint8_t *p)
{
    return wasm_v128_load32_splat(p);
}

/* One group of 4 rows (unit at wg, nb blocks) against nt tokens (a constant at every call):
 * ys[t] gets the 4 rows' outputs for token t. */
PL_W_INLINE void group_t(pl_type t, v128_t *restrict ys, const uint8_t *restrict wg,
                         const uint8_t *restrict x, size_t xrb, int64_t nb, const int nt)
{
    const size_t unit = unit_of(t), xbb = xblk_of(t);
    v128_t acc[NT][4];
    for (int i = 0; i < nt; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = wasm_f32x4_splat(0.0f);
    const v128_t z = wasm_i32x4_splat(0);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *o = wg + (size_t)b * unit;
        const v128_t d = wasm_v128_load(o);
        v128_t q[8];
        if (t == PL_TYPE_Q8_0)
            for (int c = 0; c < 8; c++) q[c] = wasm_v128_load(o + 16 + 16 * c);
        else {
            const v128_t m4 = wasm_i8x16_splat(0x0f);
            const size_t qoff = t == PL_TYPE_Q5_0 ? 32 : 16;
            for (int k = 0; k < 4; k++) {
                const v128_t v = wasm_v128_load(o + qoff + 16 * k);
                q[k] = wasm_v128_and(v, m4);
                q[4 + k] = wasm_v128_and(wasm_u16x8_shr(v, 4), m4);
            }
            if (t == PL_TYPE_Q5_0) { /* chunk c's fifth bits: bit c of h, moved to bit 4 */
                const v128_t h = wasm_v128_load(o + 16), m = wasm_i8x16_splat(0x10);
                q[0] = wasm_v128_or(q[0], wasm_v128_and(wasm_i16x8_shl(h, 4), m));
                q[1] = wasm_v128_or(q[1], wasm_v128_and(wasm_i16x8_shl(h, 3), m));
                q[2] = wasm_v128_or(q[2], wasm_v128_and(wasm_i16x8_shl(h, 2), m));
                q[3] = wasm_v128_or(q[3], wasm_v128_and(wasm_i16x8_shl(h, 1), m));
                q[4] = wasm_v128_or(q[4], wasm_v128_and(h, m));
                q[5] = wasm_v128_or(q[5], wasm_v128_and(wasm_u16x8_shr(h, 1), m));
                q[6] = wasm_v128_or(q[6], wasm_v128_and(wasm_u16x8_shr(h, 2), m));
                q[7] = wasm_v128_or(q[7], wasm_v128_and(wasm_u16x8_shr(h, 3), m));
            }
        }
        for (int i = 0; i < nt; i++) {
            const uint8_t *xb = x + (size_t)i * xrb + (size_t)b * xbb;
            v128_t is;
            float dx;
            if (t == PL_TYPE_Q8_0) {
                v128_t s = z, n = z;
                for (int c = 0; c < 8; c++) {
                    s = pl_w_dot_i8_u7_add(q[c], splat4(xb + 4 * c), s);
                    n = pl_w_dot_i8_u7_add(q[c], splat4(xb + 32 + 4 * c), n);
                }
                is = wasm_i32x4_sub(s, wasm_i32x4_shl(n, 7));
                memcpy(&dx, xb + 64, 4);
            } else {
                v128_t s = z;
                for (int c = 0; c < 8; c++) s = pl_w_dot_i8_u7_add(splat4(xb + 4 * c), q[c], s);
                is = wasm_i32x4_sub(
                    s, wasm_i32x4_shl(wasm_v128_load32_splat(xb + 36), t == PL_TYPE_Q5_0 ? 4 : 3));
                memcpy(&dx, xb + 32, 4);
            }
            const v128_t term = wasm_f32x4_mul(wasm_f32x4_mul(d, wasm_f32x4_splat(dx)),
                                               wasm_f32x4_convert_i32x4(is));
            acc[i][b % 4] = wasm_f32x4_add(acc[i][b % 4], term);
        }
    }
    for (int i = 0; i < nt; i++)
        ys[i] = wasm_f32x4_add(wasm_f32x4_add(acc[i][0], acc[i][2]),
                               wasm_f32x4_add(acc[i][1], acc[i][3]));
}

/* Inlined into each type's matmul (t a constant there): as one function for the three types
 * (clang-19 did not specialise it), every block paid the type's tests. */
PL_W_INLINE void matmul_t(pl_type t, float *restrict y, int64_t ldy, const uint8_t *restrict w,
                          const uint8_t *restrict x, size_t xrb, int64_t K, int64_t r0, int64_t r1,
                          int64_t T)
{
    const int64_t nb = K / 32;
    const size_t gbytes = (size_t)nb * unit_of(t);
    for (int64_t g = r0 / G; g * G < r1; g++) {
        const uint8_t *wg = w + (size_t)g * gbytes;
        const int64_t lo = g * G < r0 ? r0 - g * G : 0, hi = r1 - g * G < G ? r1 - g * G : G;
        for (int64_t t0 = 0; t0 < T; t0 += NT) {
            const uint8_t *xt = x + (size_t)t0 * xrb;
            v128_t ys[NT];
            const int n = T - t0 < NT ? (int)(T - t0) : NT;
            switch (n) {
            case 1:
                group_t(t, ys, wg, xt, xrb, nb, 1);
                break;
            case 2:
                group_t(t, ys, wg, xt, xrb, nb, 2);
                break;
            case 3:
                group_t(t, ys, wg, xt, xrb, nb, 3);
                break;
            default:
                group_t(t, ys, wg, xt, xrb, nb, 4);
                break;
            }
            for (int i = 0; i < n; i++) {
                float *yr = y + (t0 + i) * ldy + g * G;
                if (lo == 0 && hi == G) {
                    wasm_v128_store(yr, ys[i]);
                    continue;
                }
                float v[G];
                wasm_v128_store(v, ys[i]);
                for (int64_t r = lo; r < hi; r++) yr[r] = v[r];
            }
        }
    }
}

#define LAYOUT(tname, TYPE)                                                                        \
    static size_t size_##tname(int64_t K, int64_t R)                                               \
    {                                                                                              \
        return size_t_(TYPE, K, R);                                                                \
    }                                                                                              \
    static void pack_##tname(void *restrict dst, const void *restrict src, size_t srb, int64_t K,  \
                             int64_t R)                                                            \
    {                                                                                              \
        pack_t(TYPE, dst, src, srb, K, R);                                                         \
    }                                                                                              \
    static void matmul_##tname(PL_WASM128_MATMUL_ARGS)                                             \
    {                                                                                              \
        (void)w_row_bytes;                                                                         \
        matmul_t(TYPE, y, ldy, w, x, x_row_bytes, K, r0, r1, T);                                   \
    }                                                                                              \
    static size_t x_row_##tname(int64_t K)                                                         \
    {                                                                                              \
        return (size_t)(K / 32) * xblk_of(TYPE);                                                   \
    }                                                                                              \
    static void x_prep_##tname(void *restrict dst, const void *restrict src, int64_t K)            \
    {                                                                                              \
        x_prep_t(TYPE, dst, src, K);                                                               \
    }                                                                                              \
    const pl_repack pl_repack_##tname##_wasm128r = {size_##tname, pack_##tname, matmul_##tname,    \
                                                    x_row_##tname, x_prep_##tname};

LAYOUT(q4_0, PL_TYPE_Q4_0)
LAYOUT(q5_0, PL_TYPE_Q5_0)
LAYOUT(q8_0, PL_TYPE_Q8_0)
