/* moe.c — reference mixture-of-experts routing and combining: scalar C, one token (or one row)
 * per call. The definition of correct for every set (the sets take these unless they bring
 * their own, bit-identical ones). */
#include <math.h>

#include "ref.h"

/* The router of one token (kernels.h, pl_moe_route_fn): p = softmax_ref(logits), the U largest
 * p in descending order (ties: the lower expert first: a strict comparison over ascending
 * experts), and with norm each kept p divided by their sum, summed in double in slot order and
 * rounded once (ggml's sum_rows, then its division in float). */
void moe_route_ref(int32_t *restrict ids, float *restrict w, float *restrict p,
                   const float *restrict logits, int64_t X, int64_t U, int norm)
{
    softmax_ref(p, logits, X);
    for (int64_t u = 0; u < U; u++) {
        int64_t best = -1;
        for (int64_t e = 0; e < X; e++) {
            int taken = 0;
            for (int64_t v = 0; v < u && !taken; v++) taken = ids[v] == e;
            if (!taken && (best < 0 || p[e] > p[best])) best = e;
        }
        ids[u] = (int32_t)best;
        w[u] = p[best];
    }
    if (!norm) return;
    double sum = 0.0;
    for (int64_t u = 0; u < U; u++) sum += (double)w[u];
    const float s = (float)sum;
    for (int64_t u = 0; u < U; u++) w[u] = w[u] / s;
}

/* y[i] = (..((w0 x0[i] + w1 x1[i]) + w2 x2[i]) ..) + w[U-1] x[U-1][i]: each product rounded to
 * float, then the adds in slot order (ggml's mul by the weights, then its adds). */
void weighted_sum_ref(float *restrict y, const float *const *x, const float *restrict w, int64_t U,
                      int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float acc = w[0] * x[0][i];
        for (int64_t u = 1; u < U; u++) {
            const float t = w[u] * x[u][i];
            acc = acc + t;
        }
        y[i] = acc;
    }
}

/* y = 1 / (1 + exp(-x)), in double, rounded once (no overflow: exp of a non-positive argument
 * only). */
void sigmoid_ref(float *restrict y, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const double a = x[i];
        y[i] = (float)(a >= 0 ? 1.0 / (1.0 + exp(-a)) : exp(a) / (1.0 + exp(a)));
    }
}
