/* ops.c — reference rmsnorm, rope (with scaling), softmax, swiglu, geglu and softcap: scalar C, one
 * fixed order per element. Not fast: long reductions run in double because scalar double costs what
 * scalar float does.
 *
 * Error bounds (u = 2^-24, FLT_MIN = 2^-126) are the contract for EVERY kernel set, checked
 * against GSL double references in conformance/test_ops.c. This set sits far inside them. */
#include <math.h>

#include "ref.h"
#include "rope_angle.h"

/* y = x / sqrt(mean(x^2) + eps) * w.
 * Bound: |y - y_ref| <= (n + 8) u |y_ref| + FLT_MIN.
 * Why: a float sum of n non-negative squares is off by <= (n-1)u relative, the sqrt halves
 * that, and mean, +eps, sqrt, 1/x and two products add <= 6u; outputs below FLT_MIN may be
 * flushed. eps > 0 is required (eps = 0 on an all-zero row divides by zero). */
void rmsnorm_ref(float *restrict y, const float *restrict x, const float *restrict w, int64_t n,
                 float eps)
{
    double ss = 0.0; /* double: |x| up to 1e154 squares without overflow */
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
    double s = n > 0 ? 1.0 / sqrt(ss / (double)n + (double)eps) : 0.0;
    for (int64_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * s * (double)w[i]);
}

/* Rotates, for each of the n_heads heads of one token, pairs (a, b) of its first n_rot dims
 * by theta_i (pl_rope_args), i in [0, n_rot/2), with cos and sin scaled by mscale:
 *     normal: (a, b) = (2i, 2i+1)      neox: (a, b) = (i, i + n_rot/2)
 *     x_a' = x_a cos - x_b sin,   x_b' = x_a sin + x_b cos;   dims [n_rot, D) pass untouched.
 * n_rot is even and <= D (a larger n_rot is clamped to D; an odd one leaves its last dim).
 * Bound, with mscale the reference's, "scaled" = any of freq_scale != 1, freq_factors,
 * ext_factor != 0, attn_factor != 1, and k = scaled ? 4 : 0:
 *     |y - y_ref| <= u (8 + k + (n_rot/2 + |ln freq_base| + 4 + k) |theta|
 *                        + 4 |ext_factor| |theta_extrap - theta_interp|) |mscale| (|x_a| + |x_b|)
 *                    + FLT_MIN.
 * Why: a float theta (powf with a rounded exponent, then up to n_rot/2 products, ggml style)
 * is off by that many u times |theta| radians, which moves cos and sin by as much; cos, sin,
 * two products and a sum add <= 8u of |x_a| + |x_b|. Scaling adds a division by the factor,
 * the product by freq_scale and the convex mix (<= 4u |theta| more), the ramp's own
 * rounding (<= 4u of the mixed gap) and mscale's (<= 4u). This set computes in double; the angle,
 * cos and sin come from rope_angle.h, which every set shares.
 * Unscaled (freq_scale 1, no factors, ext_factor 0, attn_factor 1) every step above is exact
 * but the angle, cos, sin and the rotation: the result is the plain rotation, bit for bit. */
void rope_ref(float *restrict x, int64_t n_heads, int64_t D, int32_t pos, const pl_rope_args *a)
{
    const pl_rope_plan p = pl_rope_plan_of(a, D);
    for (int64_t i = 0; i < p.half; i++) {
        double c, s;
        pl_rope_cos_sin(&p, a, pos, i, &c, &s);
        int64_t ia = a->style == PL_ROPE_NEOX ? i : 2 * i;
        int64_t ib = a->style == PL_ROPE_NEOX ? i + p.half : 2 * i + 1;
        for (int64_t h = 0; h < n_heads; h++) {
            float *xh = x + h * D;
            double xa = xh[ia], xb = xh[ib];
            xh[ia] = (float)(xa * c - xb * s);
            xh[ib] = (float)(xa * s + xb * c);
        }
    }
}

/* y = exp(x - max) / sum(exp(x - max)). x holds no NaN. Entries equal to the max get
 * exp(0) = 1 exactly, so an all -inf row comes out uniform (every entry ties) and +inf
 * entries share all the mass. n <= 0 writes nothing.
 * Bound: |y - y_ref| <= (n + 8 + |x - max|) u |y_ref| + FLT_MIN.
 * Why: x - max rounds by u |x - max|, which exp turns into that much relative error; exp,
 * a float sum of n positive terms ((n-1)u) and the division add the rest. */
void softmax_ref(float *restrict y, const float *restrict x, int64_t n)
{
    if (n <= 0) return;
    float m = x[0];
    for (int64_t i = 1; i < n; i++)
        if (x[i] > m) m = x[i];
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = x[i] == m ? 1.0 : exp((double)x[i] - (double)m);
        sum += e;
    }
    /* Recomputing exp keeps y free of a second n-float buffer; it is the same value. */
    double inv = 1.0 / sum;
    for (int64_t i = 0; i < n; i++) {
        double e = x[i] == m ? 1.0 : exp((double)x[i] - (double)m);
        y[i] = (float)(e * inv);
    }
}

/* y = silu(gate) * up = gate / (1 + exp(-gate)) * up. gate is finite.
 * Bound: |y - y_ref| <= 16 u |y_ref| + 2^-120 |up| + FLT_MIN.
 * Why: no cancellation anywhere (gate is an exact input, so exp's argument is exact); exp,
 * 1 + e, the division and the product each round once, and a vector exp may be off by a
 * few ulp. A float exp(-gate) overflows below gate = -88.7, where |silu| < 2^-121: such a
 * set may return 0 there, hence the 2^-120 |up| term. */
void swiglu_ref(float *restrict y, const float *restrict gate, const float *restrict up, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double g = gate[i];
        /* sigmoid without overflow: exp of a non-positive argument only. */
        double sig = g >= 0 ? 1.0 / (1.0 + exp(-g)) : exp(g) / (1.0 + exp(g));
        y[i] = (float)(g * sig * (double)up[i]);
    }
}

/* y = gelu_tanh(gate) * up. gate is finite. gelu_tanh(g) = 0.5 g (1 + tanh(z)) = g sigmoid(2z),
 * z = sqrt(2/pi) (g + 0.044715 g^3): the sigmoid form has no cancellation where tanh -> -1.
 * Bound: |y - y_ref| <= (16 + 16 |z| w) u |y_ref| + 2^-120 |up| + FLT_MIN,
 *     w = 1 / (1 + exp(2z)), the share of an error in 2z that reaches y.
 * Why: as swiglu's, but exp's argument 2z is computed (a float set rounds g^2, the constants,
 * 1 + c g^2 and two products: <= 8 u |2z|), and exp turns that into as much relative error
 * of e, which y feels as e / (1 + e) = w of it. Below g = -9.7 a float exp(-2z) overflows and
 * |y_ref| < 2^-124 |up|: the 2^-120 |up| term. This set computes in double. */
void geglu_ref(float *restrict y, const float *restrict gate, const float *restrict up, int64_t n)
{
    const double k = 0.79788456080286535588; /* sqrt(2/pi) */
    for (int64_t i = 0; i < n; i++) {
        const double g = gate[i];
        const double z2 = 2.0 * k * g * (1.0 + 0.044715 * g * g);
        /* sigmoid without overflow: exp of a non-positive argument only */
        const double sig = z2 >= 0 ? 1.0 / (1.0 + exp(-z2)) : exp(z2) / (1.0 + exp(z2));
        y[i] = (float)(g * sig * (double)up[i]);
    }
}

/* y = cap * tanh(x / cap), cap > 0; y == x allowed. NaN stays NaN, +-inf gives +-cap.
 * Bound: |y - y_ref| <= 8 u |y_ref| + FLT_MIN.
 * Why: x / cap rounds once (u relative), which tanh passes on scaled by
 * |a| (1 - tanh^2 a) / |tanh a| <= 1; a vector tanh within 5 u (avx2/ops.c says how) and the
 * product by cap u: <= 7 u. This set computes in double: one rounding. */
void softcap_ref(float *y, const float *x, int64_t n, float cap)
{
    for (int64_t i = 0; i < n; i++) y[i] = (float)((double)cap * tanh((double)x[i] / (double)cap));
}

/* ---- issue 49 (cohere2) ---- */

/* y = (x - mean) / sqrt(var + eps) * w, mean and var (the mean of (x - mean)^2) over the row.
 * Bound: |y - y_ref| <= (n + 8) u (|y_ref| + |w| s_ref max|x|) + FLT_MIN, s_ref =
 * 1/sqrt(var + eps). Why: the sums run in double (relative n 2^-53 of sum |x| and of the
 * squares), so x - mean is off by <= n 2^-52 max|x| — which s and w carry into y (the second
 * term, what a row of nearly equal values amplifies) — and the rest is rounded once to float.
 * This set: double throughout, in element order, two passes. */
void layernorm_ref(float *restrict y, const float *restrict x, const float *restrict w, int64_t n,
                   float eps)
{
    if (n <= 0) return;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)x[i];
    const double mean = sum / (double)n;
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = (double)x[i] - mean;
        ss += d * d;
    }
    const double s = 1.0 / sqrt(ss / (double)n + (double)eps);
    for (int64_t i = 0; i < n; i++) y[i] = (float)(((double)x[i] - mean) * s * (double)w[i]);
}

/* ---- issue 49 (gpt-oss) ---- */

/* y = g sigmoid(alpha g) (u + 1), g = min(gate, limit), u = clamp(up, -limit, limit).
 * Bound: |y - y_ref| <= (16 + 4 |alpha g| w) u |y_ref| + 2^-120 |u + 1| + FLT_MIN,
 *     w = 1 / (1 + exp(alpha g)), the share of an error in alpha g that reaches y.
 * Why: the clamps are exact; u + 1 rounds once (no error grows from it: its inputs are exact);
 * alpha g rounds in a float set (u |alpha g|, passed on as w of it), exp, 1 + e, the division
 * and two products round once each, a vector exp a few ulp. A float exp(-alpha g) overflows
 * below alpha g = -88.7, where |g sigmoid| < 2^-121: such a set may return 0 there.
 * This set: double throughout, one rounding to float. */
void swiglu_oai_ref(float *restrict y, const float *restrict gate, const float *restrict up,
                    int64_t n, float alpha, float limit)
{
    for (int64_t i = 0; i < n; i++) {
        const double g = gate[i] > limit ? (double)limit : (double)gate[i];
        const double u = up[i] > limit ? (double)limit : up[i] < -limit ? -(double)limit : up[i];
        const double z = (double)alpha * g;
        const double sig = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
        y[i] = (float)(g * sig * (u + 1.0));
    }
}
