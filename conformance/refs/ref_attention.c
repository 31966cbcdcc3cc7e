/* ref_attention.c — GSL double reference for one (query token, head) row of attention:
 * QK^T, the soft-cap (if any), the causal / window / sink / layer-window mask, softmax, then ·V.
 * Test-only; f16 KV is widened exactly, every product and sum is double. */
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_sf_exp.h>
#include <gsl/gsl_vector.h>

#include "refs_ops.h"

/* exp that returns 0 past underflow instead of raising a GSL error. */
static double dexp(double x)
{
    return x < -745.0 ? 0.0 : gsl_sf_exp(x);
}

int ref_attn_visible(const pl_attn_args *a, int64_t t, int64_t j)
{
    int64_t qp = a->q_pos[t], kp = a->kv_pos[j];
    int causal = kp <= qp;
    int in_window = a->window <= 0 || j < a->n_sinks || qp - kp < a->window;
    int in_layer_window = a->layer_window <= 0 || qp - kp < a->layer_window; /* sinks too */
    return causal && in_window && in_layer_window;
}

/* Element d of KV row (j, g) as a double. */
static double kv_elem(const pl_attn_args *a, const void *base, int64_t j, int64_t g, int64_t d)
{
    int64_t idx = (j * a->Hkv + g) * a->D + d;
    if (a->kv_type == PL_TYPE_F32) return ((const float *)base)[idx];
    return pl_f16_to_f32(((const pl_f16 *)base)[idx]);
}

int64_t ref_attention_row(double *out, double *pv, double *pvs, double *A, const pl_attn_args *a,
                          int64_t t, int64_t h)
{
    const int64_t D = a->D, N = a->N, g = h / (a->H / a->Hkv);
    const float *q = a->q + (t * a->H + h) * D;
    for (int64_t d = 0; d < D; d++) out[d] = pv[d] = pvs[d] = 0.0;
    *A = 0.0;

    gsl_vector *qv = gsl_vector_alloc((size_t)D), *qa = gsl_vector_alloc((size_t)D);
    gsl_vector *kv = gsl_vector_alloc((size_t)D), *ka = gsl_vector_alloc((size_t)D);
    gsl_vector *vv = gsl_vector_alloc((size_t)D);
    gsl_vector *ov = gsl_vector_calloc((size_t)D);
    double *s = calloc((size_t)(N > 0 ? N : 1), sizeof *s);
    for (int64_t d = 0; d < D; d++) {
        gsl_vector_set(qv, (size_t)d, q[d]);
        gsl_vector_set(qa, (size_t)d, fabs(q[d]));
    }

    int64_t M = 0;
    double m = -INFINITY;
    for (int64_t j = 0; j < N; j++) {
        if (!ref_attn_visible(a, t, j)) continue;
        for (int64_t d = 0; d < D; d++) {
            double k = kv_elem(a, a->k, j, g, d);
            gsl_vector_set(kv, (size_t)d, k);
            gsl_vector_set(ka, (size_t)d, fabs(k));
        }
        double dot = 0.0, mag = 0.0;
        gsl_blas_ddot(qv, kv, &dot);
        gsl_blas_ddot(qa, ka, &mag);
        s[j] = (double)a->scale * dot;
        if (a->softcap != 0.0f) s[j] = (double)a->softcap * tanh(s[j] / (double)a->softcap);
        mag *= fabs((double)a->scale);
        if (mag > *A) *A = mag;
        if (M == 0 || s[j] > m) m = s[j];
        M++;
    }
    /* a learned sink (gpt-oss): in the max and in the denominator, with no value row */
    const double sk = a->sinks ? (double)a->sinks[h] : -INFINITY;
    if (M > 0 && sk > m) m = sk;
    if (M > 0) {
        double sum = 0.0;
        for (int64_t j = 0; j < N; j++)
            if (ref_attn_visible(a, t, j)) sum += s[j] == m ? 1.0 : dexp(s[j] - m);
        if (a->sinks) sum += sk == m ? 1.0 : dexp(sk - m);
        for (int64_t j = 0; j < N; j++) {
            if (!ref_attn_visible(a, t, j)) continue;
            double p = (s[j] == m ? 1.0 : dexp(s[j] - m)) / sum;
            for (int64_t d = 0; d < D; d++) {
                double v = kv_elem(a, a->v, j, g, d);
                gsl_vector_set(vv, (size_t)d, v);
                pv[d] += p * fabs(v);
                pvs[d] += p * fabs(v) * fabs(s[j] - m);
            }
            gsl_blas_daxpy(p, vv, ov); /* o += p v */
        }
        /* the sink's weight is rounded as a score's: its |s - m| and the exp's constant join
         * the bound's |s_j - m| term (pvs) */
        for (int64_t d = 0; a->sinks && d < D; d++) pvs[d] += pv[d] * (fabs(sk - m) + 8.0);
        for (int64_t d = 0; d < D; d++) out[d] = gsl_vector_get(ov, (size_t)d);
    }

    free(s);
    gsl_vector_free(qv);
    gsl_vector_free(qa);
    gsl_vector_free(kv);
    gsl_vector_free(ka);
    gsl_vector_free(vv);
    gsl_vector_free(ov);
    return M;
}
