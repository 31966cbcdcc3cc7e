/* ops.c — rmsnorm, rope, softmax, swiglu, geglu and softcap in WebAssembly SIMD128. Not the
 * matmuls or attention. Bounds are ref's (kernels/ref/ops.c, conformance/test_ops.c), u = 2^-24.
 *
 * Lanes never mix elements except in the reductions, whose order is fixed by n alone, and the
 * last < 4 elements run the same vector code on a zero-padded copy: each output is the same
 * whatever the row's neighbours, the slice or the thread. Without an FMA in SIMD128, what the
 * x86 sets do in float with FMA runs here in f64x2 lanes with one rounding to float. */
#include <math.h>

#include "rope_angle.h"
#include "simd.h"
#include "wasm128.h"

/* The n < 4 floats at p, zero beyond (no read past the row). */
static v128_t load_part(const float *p, int64_t n)
{
    float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(b, p, (size_t)n * sizeof *b);
    return wasm_v128_load(b);
}

static void store_part(float *p, v128_t v, int64_t n)
{
    float b[4];
    wasm_v128_store(b, v);
    memcpy(p, b, (size_t)n * sizeof *b);
}

/* y = x / sqrt(mean(x^2) + eps) * w.
 * Bound: |y - y_ref| <= (n + 8) u |y_ref| + FLT_MIN.
 * Why: squares are exact in double, summed in 4 x 2 double lanes (8 elements per step, chunk
 * i into accumulator i mod 4), then ((a0 + a1) + (a2 + a3)), lane 0 + lane 1, then the last
 * < 8 in order: relative error <= n 2^-53. The scale is computed in double and y = (float)(x s
 * w) in double, so the only float rounding is the last one, and no |x| can overflow. */
void rmsnorm_wasm128(float *restrict y, const float *restrict x, const float *restrict w, int64_t n,
                     float eps)
{
    v128_t a0 = wasm_f64x2_splat(0.0), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const v128_t v0 = wasm_v128_load(x + i), v1 = wasm_v128_load(x + i + 4);
        const v128_t d0 = pl_w_lo_f64(v0), d1 = pl_w_hi_f64(v0);
        const v128_t d2 = pl_w_lo_f64(v1), d3 = pl_w_hi_f64(v1);
        a0 = wasm_f64x2_add(a0, wasm_f64x2_mul(d0, d0));
        a1 = wasm_f64x2_add(a1, wasm_f64x2_mul(d1, d1));
        a2 = wasm_f64x2_add(a2, wasm_f64x2_mul(d2, d2));
        a3 = wasm_f64x2_add(a3, wasm_f64x2_mul(d3, d3));
    }
    const v128_t a = wasm_f64x2_add(wasm_f64x2_add(a0, a1), wasm_f64x2_add(a2, a3));
    double ss = wasm_f64x2_extract_lane(a, 0) + wasm_f64x2_extract_lane(a, 1);
    for (; i < n; i++) ss += (double)x[i] * (double)x[i];
    const double s = n > 0 ? 1.0 / sqrt(ss / (double)n + (double)eps) : 0.0;

    const v128_t sv = wasm_f64x2_splat(s);
    i = 0;
    for (; i + 4 <= n; i += 4) {
        const v128_t xv = wasm_v128_load(x + i), wv = wasm_v128_load(w + i);
        const v128_t lo = wasm_f64x2_mul(wasm_f64x2_mul(pl_w_lo_f64(xv), sv), pl_w_lo_f64(wv));
        const v128_t hi = wasm_f64x2_mul(wasm_f64x2_mul(pl_w_hi_f64(xv), sv), pl_w_hi_f64(wv));
        wasm_v128_store(y + i, pl_w_to_f32(lo, hi));
    }
    for (; i < n; i++) y[i] = (float)((double)x[i] * s * (double)w[i]);
}

/* RoPE bit for bit as ref: the angle, cos and sin of each pair from rope_angle.h (scalar
 * double, once per call for every head); the rotation in double as ref does it, two pairs
 * (neox) or one pair (normal) per f64x2: the same operations per element, so the same bits.
 * Normal pairs: y = x cd + swap(x) sd with sd = (-s, s) (x c + (-(b s)) is x c - b s, b c + a s
 * is a s + b c: exactly, in IEEE). */
#define ROPE_CHUNK 64
void rope_wasm128(float *restrict x, int64_t n_heads, int64_t D, int32_t pos, const pl_rope_args *a)
{
    const pl_rope_plan p = pl_rope_plan_of(a, D);
    const int neox = a->style == PL_ROPE_NEOX;
    double c[ROPE_CHUNK], s[ROPE_CHUNK], cd[2 * ROPE_CHUNK], sd[2 * ROPE_CHUNK];
    for (int64_t i0 = 0; i0 < p.half; i0 += ROPE_CHUNK) {
        const int64_t n = p.half - i0 < ROPE_CHUNK ? p.half - i0 : ROPE_CHUNK;
        pl_rope_chunk(&p, a, pos, i0, n, c, s, cd, sd);
        for (int64_t h = 0; h < n_heads; h++) {
            float *xh = x + h * D;
            int64_t k = 0;
            if (neox) {
                float *xa = xh + i0, *xb = xh + i0 + p.half;
                for (; k + 2 <= n; k += 2) {
                    const v128_t va = pl_w_lo_f64(wasm_v128_load64_zero(xa + k));
                    const v128_t vb = pl_w_lo_f64(wasm_v128_load64_zero(xb + k));
                    const v128_t vc = wasm_v128_load(c + k), vs = wasm_v128_load(s + k);
                    const v128_t ya =
                        wasm_f64x2_sub(wasm_f64x2_mul(va, vc), wasm_f64x2_mul(vb, vs));
                    const v128_t yb =
                        wasm_f64x2_add(wasm_f64x2_mul(va, vs), wasm_f64x2_mul(vb, vc));
                    wasm_v128_store64_lane(xa + k, wasm_f32x4_demote_f64x2_zero(ya), 0);
                    wasm_v128_store64_lane(xb + k, wasm_f32x4_demote_f64x2_zero(yb), 0);
                }
            } else {
                float *xp = xh + 2 * i0;
                for (; k < n; k++) {
                    const v128_t v = pl_w_lo_f64(wasm_v128_load64_zero(xp + 2 * k));
                    const v128_t sw = wasm_i64x2_shuffle(v, v, 1, 0);
                    const v128_t yv =
                        wasm_f64x2_add(wasm_f64x2_mul(v, wasm_v128_load(cd + 2 * k)),
                                       wasm_f64x2_mul(sw, wasm_v128_load(sd + 2 * k)));
                    wasm_v128_store64_lane(xp + 2 * k, wasm_f32x4_demote_f64x2_zero(yv), 0);
                }
            }
            for (; k < n; k++) { /* the last neox pair: ref's scalar code */
                const int64_t i = i0 + k, ia = i, ib = i + p.half;
                const double xa = xh[ia], xb = xh[ib];
                xh[ia] = (float)(xa * c[k] - xb * s[k]);
                xh[ib] = (float)(xa * s[k] + xb * c[k]);
            }
        }
    }
}

/* x == m ? 1 : exp(x - m) for 4 floats, x <= m: x - m in double (exact while it matters: where
 * it is not, exp underflows to 0 whatever the rounding), exp in double, one rounding. The
 * select covers m = +-inf (x - m NaN there). */
static v128_t softmax_e(v128_t x, v128_t m)
{
    const v128_t lo = pl_w_exp_f64(wasm_f64x2_sub(pl_w_lo_f64(x), pl_w_lo_f64(m)));
    const v128_t hi = pl_w_exp_f64(wasm_f64x2_sub(pl_w_hi_f64(x), pl_w_hi_f64(m)));
    return wasm_v128_bitselect(wasm_f32x4_splat(1.0f), pl_w_to_f32(lo, hi), wasm_f32x4_eq(x, m));
}

/* y = exp(x - max) / sum(exp(x - max)); entries equal to the max weigh exactly 1, so an all
 * -inf row is uniform and +inf entries share the mass. n <= 0 writes nothing.
 * Bound: |y - y_ref| <= (n + 8 + |x - max|) u |y_ref| + FLT_MIN.
 * Why: each weight is within 0.51 u (simd.h's exp, x - max taken exactly); the float sum of n
 * positive weights (4 x 4 lanes, chunk i of 4 into accumulator i mod 4, the zero-padded tail
 * into accumulator 0, then ((s0 + s1) + (s2 + s3)) and the lane tree) adds <= min(n - 1, n/16
 * + 4) u relative; 1/sum and the product 2 u: <= (3.6 + min(n - 1, n/16 + 4)) u. n = 1 gives 1. */
void softmax_wasm128(float *restrict y, const float *restrict x, int64_t n)
{
    if (n <= 0) return;
    float m = x[0];
    {
        v128_t mv = wasm_f32x4_splat(-INFINITY);
        int64_t i = 0;
        for (; i + 4 <= n; i += 4) mv = wasm_f32x4_max(mv, wasm_v128_load(x + i));
        float l[4];
        wasm_v128_store(l, mv);
        for (int k = 0; k < 4; k++) m = l[k] > m ? l[k] : m;
        for (; i < n; i++) m = x[i] > m ? x[i] : m; /* max is exact in any order */
    }
    const v128_t mv = wasm_f32x4_splat(m);
    v128_t s[4] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f),
                   wasm_f32x4_splat(0.0f)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 4; k++) {
            const v128_t e = softmax_e(wasm_v128_load(x + i + 4 * k), mv);
            wasm_v128_store(y + i + 4 * k, e);
            s[k] = wasm_f32x4_add(s[k], e);
        }
    for (; i < n; i += 4) { /* the last < 16: whole vectors, then a zero-padded one */
        const int64_t r = n - i < 4 ? n - i : 4;
        v128_t e = softmax_e(load_part(x + i, r), mv);
        if (r < 4) {
            e = wasm_v128_and(
                e, wasm_i32x4_gt(wasm_i32x4_splat((int32_t)r), wasm_i32x4_make(0, 1, 2, 3)));
        }
        store_part(y + i, e, r);
        s[0] = wasm_f32x4_add(s[0], e);
    }
    const float sum =
        pl_w_hsum(wasm_f32x4_add(wasm_f32x4_add(s[0], s[1]), wasm_f32x4_add(s[2], s[3])));
    const v128_t inv = wasm_f32x4_splat(1.0f / sum);
    i = 0;
    for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, wasm_f32x4_mul(wasm_v128_load(y + i), inv));
    if (i < n) store_part(y + i, wasm_f32x4_mul(load_part(y + i, n - i), inv), n - i);
}

/* silu(g) * up for one double pair: g / (1 + exp(-g)) * up in double. */
static v128_t swiglu2(v128_t g, v128_t up)
{
    const v128_t e = pl_w_exp_f64(wasm_f64x2_neg(g));
    return wasm_f64x2_mul(wasm_f64x2_div(g, wasm_f64x2_add(wasm_f64x2_splat(1.0), e)), up);
}

/* gelu_tanh(g) * up for one double pair: g / (1 + exp(-2z)) * up, 2z = 2 sqrt(2/pi) g (1 +
 * 0.044715 g^2), all in double. */
static v128_t geglu2(v128_t g, v128_t up)
{
    const v128_t t = wasm_f64x2_add(
        wasm_f64x2_mul(wasm_f64x2_mul(g, g), wasm_f64x2_splat(0.044715)), wasm_f64x2_splat(1.0));
    const v128_t m2z = wasm_f64x2_mul(wasm_f64x2_mul(wasm_f64x2_splat(-1.5957691216057308), g), t);
    const v128_t e = pl_w_exp_f64(m2z);
    return wasm_f64x2_mul(wasm_f64x2_div(g, wasm_f64x2_add(wasm_f64x2_splat(1.0), e)), up);
}

typedef v128_t (*gated2_fn)(v128_t g, v128_t up);

/* 4 elements of a gated unit: two double pairs, one rounding each. */
static inline __attribute__((always_inline)) v128_t gated4(gated2_fn f, v128_t g, v128_t up)
{
    return pl_w_to_f32(f(pl_w_lo_f64(g), pl_w_lo_f64(up)), f(pl_w_hi_f64(g), pl_w_hi_f64(up)));
}

static inline __attribute__((always_inline)) void gated(gated2_fn f, float *restrict y,
                                                        const float *restrict gate,
                                                        const float *restrict up, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        wasm_v128_store(y + i, gated4(f, wasm_v128_load(gate + i), wasm_v128_load(up + i)));
    if (i < n)
        store_part(y + i, gated4(f, load_part(gate + i, n - i), load_part(up + i, n - i)), n - i);
}

/* y = silu(gate) * up. gate is finite.
 * Bound: |y - y_ref| <= 16 u |y_ref| + 2^-120 |up| + FLT_MIN.
 * Why: in double exp is within 1e-13 and 1 + e, the division and the product round at 2^-53
 * each: the one rounding to float dominates (<= 0.51 u). Below gate = -200 exp is clamped at
 * e^200 and y underflows to -0 (exact |y| < 2^-280 |up|). */
void swiglu_wasm128(float *restrict y, const float *restrict gate, const float *restrict up,
                    int64_t n)
{
    gated(swiglu2, y, gate, up, n);
}

/* y = gelu_tanh(gate) * up. gate is finite.
 * Bound (ref's): |y - y_ref| <= (16 + 16 |z| w) u |y_ref| + 2^-120 |up| + FLT_MIN.
 * Why: as swiglu's, with 2z computed in double (<= 4 roundings of 2^-53 |2z|, passed on as w of
 * it): <= 0.51 u plus a negligible part of the 16 |z| w u term. */
void geglu_wasm128(float *restrict y, const float *restrict gate, const float *restrict up,
                   int64_t n)
{
    gated(geglu2, y, gate, up, n);
}

/* cap * tanh(x / cap) for 4 floats, in double: one rounding to float. */
static v128_t softcap4(v128_t v, v128_t capd)
{
    const v128_t lo = wasm_f64x2_mul(capd, pl_w_tanh_f64(wasm_f64x2_div(pl_w_lo_f64(v), capd)));
    const v128_t hi = wasm_f64x2_mul(capd, pl_w_tanh_f64(wasm_f64x2_div(pl_w_hi_f64(v), capd)));
    return pl_w_to_f32(lo, hi);
}

/* y = cap * tanh(x / cap); y == x allowed (each vector is loaded before it is stored).
 * Bound (ref's): |y - y_ref| <= 8 u |y_ref| + FLT_MIN.
 * Why: in double x / cap, tanh (1e-10 relative) and the product; then one rounding: <= 0.51 u. */
void softcap_wasm128(float *y, const float *x, int64_t n, float cap)
{
    const v128_t c = wasm_f64x2_splat((double)cap);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, softcap4(wasm_v128_load(x + i), c));
    if (i < n) store_part(y + i, softcap4(load_part(x + i, n - i), c), n - i);
}

/* ---- issue 49 (cohere2) ---- */

/* The sum over n of f(x[i]) in double, 4 x 2 lanes (8 elements per step, chunk i into
 * accumulator i mod 4), then ((a0 + a1) + (a2 + a3)), lane 0 + lane 1, then the last < 8 in
 * order: the order is n's alone. sq: f = (x - c)^2, else f = x. */
static double sum_f64(const float *restrict x, int64_t n, int sq, double c)
{
    const v128_t cv = wasm_f64x2_splat(c);
    v128_t a[4] = {wasm_f64x2_splat(0.0), wasm_f64x2_splat(0.0), wasm_f64x2_splat(0.0),
                   wasm_f64x2_splat(0.0)};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const v128_t v0 = wasm_v128_load(x + i), v1 = wasm_v128_load(x + i + 4);
        const v128_t d[4] = {pl_w_lo_f64(v0), pl_w_hi_f64(v0), pl_w_lo_f64(v1), pl_w_hi_f64(v1)};
        for (int k = 0; k < 4; k++) {
            if (sq) {
                const v128_t e = wasm_f64x2_sub(d[k], cv);
                a[k] = wasm_f64x2_add(a[k], wasm_f64x2_mul(e, e));
            } else {
                a[k] = wasm_f64x2_add(a[k], d[k]);
            }
        }
    }
    const v128_t t = wasm_f64x2_add(wasm_f64x2_add(a[0], a[1]), wasm_f64x2_add(a[2], a[3]));
    double s = wasm_f64x2_extract_lane(t, 0) + wasm_f64x2_extract_lane(t, 1);
    for (; i < n; i++) {
        const double e = (double)x[i] - (sq ? c : 0.0);
        s += sq ? e * e : e;
    }
    return s;
}

/* y = (x - mean) / sqrt(var + eps) * w: ref's bound (kernels/ref/ops.c).
 * Why: both sums in double (sum_f64: relative n 2^-53), the scale in double, and
 * y = (float)((x - mean) s w) in double: one float rounding. */
void layernorm_wasm128(float *restrict y, const float *restrict x, const float *restrict w,
                       int64_t n, float eps)
{
    if (n <= 0) return;
    const double mean = sum_f64(x, n, 0, 0.0) / (double)n;
    const double s = 1.0 / sqrt(sum_f64(x, n, 1, mean) / (double)n + (double)eps);
    const v128_t mv = wasm_f64x2_splat(mean), sv = wasm_f64x2_splat(s);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const v128_t xv = wasm_v128_load(x + i), wv = wasm_v128_load(w + i);
        const v128_t lo = wasm_f64x2_mul(wasm_f64x2_mul(wasm_f64x2_sub(pl_w_lo_f64(xv), mv), sv),
                                         pl_w_lo_f64(wv));
        const v128_t hi = wasm_f64x2_mul(wasm_f64x2_mul(wasm_f64x2_sub(pl_w_hi_f64(xv), mv), sv),
                                         pl_w_hi_f64(wv));
        wasm_v128_store(y + i, pl_w_to_f32(lo, hi));
    }
    for (; i < n; i++) y[i] = (float)(((double)x[i] - mean) * s * (double)w[i]);
}

/* ---- issue 49 (gpt-oss) ---- */

/* y = g sigmoid(alpha g) (u + 1), g = min(gate, limit), u = clamp(up, -limit, limit): ref's
 * bound (kernels/ref/ops.c). The clamps in float by comparisons (a NaN lane stays NaN), the rest
 * in f64x2 lanes with one rounding to float, as swiglu's. */
void swiglu_oai_wasm128(float *restrict y, const float *restrict gate, const float *restrict up,
                        int64_t n, float alpha, float limit)
{
    const v128_t lim = wasm_f32x4_splat(limit), nlim = wasm_f32x4_splat(-limit);
    const v128_t ad = wasm_f64x2_splat((double)alpha), one = wasm_f64x2_splat(1.0);
    for (int64_t i = 0; i < n; i += 4) {
        const int64_t k = n - i < 4 ? n - i : 4;
        v128_t g = k == 4 ? wasm_v128_load(gate + i) : load_part(gate + i, k);
        v128_t u = k == 4 ? wasm_v128_load(up + i) : load_part(up + i, k);
        g = wasm_v128_bitselect(lim, g, wasm_f32x4_gt(g, lim));
        u = wasm_v128_bitselect(lim, u, wasm_f32x4_gt(u, lim));
        u = wasm_v128_bitselect(nlim, u, wasm_f32x4_lt(u, nlim));
        v128_t r[2];
        for (int h = 0; h < 2; h++) {
            const v128_t gd = h ? pl_w_hi_f64(g) : pl_w_lo_f64(g);
            const v128_t ud = h ? pl_w_hi_f64(u) : pl_w_lo_f64(u);
            const v128_t e = pl_w_exp_f64(wasm_f64x2_neg(wasm_f64x2_mul(ad, gd)));
            r[h] =
                wasm_f64x2_mul(wasm_f64x2_div(gd, wasm_f64x2_add(one, e)), wasm_f64x2_add(ud, one));
        }
        const v128_t yv = pl_w_to_f32(r[0], r[1]);
        if (k == 4)
            wasm_v128_store(y + i, yv);
        else
            store_part(y + i, yv, k);
    }
}
