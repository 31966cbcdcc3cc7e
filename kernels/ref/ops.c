/* ops.c — reference rmsnorm, rope, softmax and swiglu: scalar C, one fixed order per element.
 * Not fast: long reductions run in double because scalar double costs what scalar float does.
 *
 * Error bounds (u = 2^-24, FLT_MIN = 2^-126) are the contract for EVERY kernel set, checked
 * against GSL double references in conformance/test_ops.c. This set sits far inside them. */
#include <math.h>

#include "ref.h"

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
 * by theta_i = pos * freq_base^(-2i/n_rot), i in [0, n_rot/2):
 *     normal: (a, b) = (2i, 2i+1)      neox: (a, b) = (i, i + n_rot/2)
 *     x_a' = x_a cos - x_b sin,   x_b' = x_a sin + x_b cos;   dims [n_rot, D) pass untouched.
 * n_rot is even and <= D (a larger n_rot is clamped to D; an odd one leaves its last dim).
 * Bound: |y - y_ref| <= u (8 + (n_rot/2 + |ln freq_base| + 4) |theta|) (|x_a| + |x_b|) + FLT_MIN.
 * Why: a float theta (powf with a rounded exponent, then up to n_rot/2 products, ggml style)
 * is off by that many u times |theta| radians, which moves cos and sin by as much; cos, sin,
 * two products and a sum add <= 8u of |x_a| + |x_b|. This set computes theta in double. */
void rope_ref(float *restrict x, int64_t n_heads, int64_t D, int64_t n_rot, int32_t pos,
              float freq_base, enum pl_rope_style style)
{
    if (n_rot > D) n_rot = D;
    const int64_t half = n_rot / 2;
    for (int64_t i = 0; i < half; i++) {
        /* One angle per pair index, shared by every head: computed once, identically. */
        double theta = (double)pos * pow((double)freq_base, -2.0 * (double)i / (double)n_rot);
        double c = cos(theta), s = sin(theta);
        int64_t a = style == PL_ROPE_NEOX ? i : 2 * i;
        int64_t b = style == PL_ROPE_NEOX ? i + half : 2 * i + 1;
        for (int64_t h = 0; h < n_heads; h++) {
            float *xh = x + h * D;
            double xa = xh[a], xb = xh[b];
            xh[a] = (float)(xa * c - xb * s);
            xh[b] = (float)(xa * s + xb * c);
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
