/* matmul_f.c — wasm128 matmul of F32, F16 and BF16 weights against f32 activations. Not ref:
 * the sum over k runs in 4 x 4 float lanes, then a fixed tree.
 *
 * Order, the same for every (r, t): chunk c of 4 elements (the last one zero-padded) goes into
 * accumulator c % 4 as acc + w * x (SIMD128 has no FMA: the product rounds, then the sum);
 * then (a0 + a1) + (a2 + a3) and the lanes as (l0 + l2) + (l1 + l3). F16 and BF16 widen
 * exactly (simd.h). Tokens of a tile share the weight loads, never an accumulator.
 * Bound: ref's gamma(K) (c = 1.01): ref's own order also rounds each product once and then
 * adds it, and no term here passes through more than K - 1 additions with a nonzero operand. */
#include "simd.h"
#include "wasm128.h"

#define NT 2 /* tokens per tile: 8 accumulators and 4 weight vectors in registers */

/* 4 weights from element k, widened to f32. */
PL_W_INLINE v128_t load_w(pl_type type, const void *w, int64_t k)
{
    switch (type) {
    case PL_TYPE_F16:
        return pl_w_load_f16x4((const pl_f16 *)w + k);
    case PL_TYPE_BF16:
        return pl_w_load_bf16x4((const pl_bf16 *)w + k);
    default:
        return wasm_v128_load((const float *)w + k);
    }
}

/* The n < 4 weights from element k, widened, the other lanes 0 (no read past the row). */
static v128_t load_w_part(pl_type type, const void *w, int64_t k, int n)
{
    const size_t esz = type == PL_TYPE_F32 ? 4 : 2;
    uint8_t b[16] = {0};
    memcpy(b, (const uint8_t *)w + (size_t)k * esz, (size_t)n * esz);
    return load_w(type, b, 0);
}

static v128_t load_x_part(const float *x, int n)
{
    float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(b, x, (size_t)n * sizeof *b);
    return wasm_v128_load(b);
}

/* One weight row against nt tokens (a constant at every call). */
PL_W_INLINE void row_f(pl_type type, float *restrict y, int64_t ldy, const void *restrict w,
                       const float *restrict x, size_t xrow, int64_t K, const int nt)
{
    v128_t acc[NT][4];
    for (int t = 0; t < nt; t++)
        for (int a = 0; a < 4; a++) acc[t][a] = wasm_f32x4_splat(0.0f);
    const int64_t full = K / 16 * 16;
    for (int64_t k = 0; k < full; k += 16) {
        v128_t wv[4];
        for (int a = 0; a < 4; a++) wv[a] = load_w(type, w, k + 4 * a);
        for (int t = 0; t < nt; t++)
            for (int a = 0; a < 4; a++)
                acc[t][a] = wasm_f32x4_add(
                    acc[t][a],
                    wasm_f32x4_mul(wv[a], wasm_v128_load(x + (size_t)t * xrow + k + 4 * a)));
    }
    for (int a = 0; a < 4; a++) { /* the last < 16: chunks into accumulators 0, 1, 2, 3 */
        const int64_t k = full + 4 * a;
        if (k >= K) break;
        const int n = K - k >= 4 ? 4 : (int)(K - k);
        const v128_t wv = n == 4 ? load_w(type, w, k) : load_w_part(type, w, k, n);
        for (int t = 0; t < nt; t++) {
            const float *xt = x + (size_t)t * xrow + k;
            const v128_t xv = n == 4 ? wasm_v128_load(xt) : load_x_part(xt, n);
            acc[t][a] = wasm_f32x4_add(acc[t][a], wasm_f32x4_mul(wv, xv));
        }
    }
    for (int t = 0; t < nt; t++)
        y[t * ldy] = pl_w_hsum(wasm_f32x4_add(wasm_f32x4_add(acc[t][0], acc[t][1]),
                                              wasm_f32x4_add(acc[t][2], acc[t][3])));
}

PL_W_INLINE void matmul_f(pl_type type, PL_WASM128_MATMUL_ARGS)
{
    const size_t xrow = x_row_bytes / sizeof(float);
    for (int64_t r = r0; r < r1; r++) {
        const void *wr = (const uint8_t *)w + (size_t)r * w_row_bytes;
        int64_t t = 0;
        for (; t + 2 <= T; t += 2)
            row_f(type, y + t * ldy + r, ldy, wr, (const float *)x + (size_t)t * xrow, xrow, K, 2);
        if (t < T)
            row_f(type, y + t * ldy + r, ldy, wr, (const float *)x + (size_t)t * xrow, xrow, K, 1);
    }
}

void matmul_f32_wasm128(PL_WASM128_MATMUL_ARGS)
{
    matmul_f(PL_TYPE_F32, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
}

void matmul_f16_wasm128(PL_WASM128_MATMUL_ARGS)
{
    matmul_f(PL_TYPE_F16, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
}

void matmul_bf16_wasm128(PL_WASM128_MATMUL_ARGS)
{
    matmul_f(PL_TYPE_BF16, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
}
