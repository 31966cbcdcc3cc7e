/* refs_ops.h — GSL double-precision references for rmsnorm, rope, softmax, swiglu, attention
 * and the sampling primitives, plus the error-ratio ledger the suites print. Test-only: each
 * reference reads the exact float (or f16) inputs the kernel saw and computes in double. */
#ifndef PLUMB_REFS_OPS_H
#define PLUMB_REFS_OPS_H

#include <stdint.h>
#include <stdio.h>

#include "kernels.h"

#define REF_U       0x1p-24  /* unit roundoff of float */
#define REF_FLT_MIN 0x1p-126 /* the atol every elementwise bound carries */

/* Turns GSL's abort-on-error handler off (underflow in gsl_sf_exp is expected). Call once. */
void ref_init(void);

/* ---- ops (ref_ops.c) ---- */
void ref_rmsnorm(double *y, const float *x, const float *w, int64_t n, float eps);
/* y = g sigmoid(alpha g) (u + 1), g = min(gate, limit), u = clamp(up, -limit, limit). */
void ref_swiglu_oai(double *y, const float *gate, const float *up, int64_t n, float alpha,
                    float limit);
/* y = (x - mean) / sqrt(mean((x - mean)^2) + eps) * w (LayerNorm, weight only). */
void ref_layernorm(double *y, const float *x, const float *w, int64_t n, float eps);
/* The rotation of pair i (of n_rot = min(a->n_rot, D) dims) at pos, from pl_rope_args's
 * definition in double: theta_extrap, theta_interp, the final theta, and mscale. */
typedef struct ref_rope_angle {
    double extrap, interp, theta, mscale;
} ref_rope_angle;
ref_rope_angle ref_rope_theta(const pl_rope_args *a, int64_t n_rot, int64_t i, int32_t pos);
/* y[n_heads * D] from x (not in place); dims past n_rot copied. */
void ref_rope(double *y, const float *x, int64_t n_heads, int64_t D, int32_t pos,
              const pl_rope_args *a);
/* Entries equal to the max weigh exp(0) = 1, as the kernel contract says (all -inf: uniform). */
void ref_softmax(double *y, const float *x, int64_t n);
void ref_swiglu(double *y, const float *gate, const float *up, int64_t n);
/* y = 0.5 g (1 + tanh z) up, z = sqrt(2/pi) (g + 0.044715 g^3); z[n] (may be NULL) gets z. */
void ref_geglu(double *y, double *z, const float *gate, const float *up, int64_t n);
/* y = cap tanh(x / cap). */
void ref_softcap(double *y, const float *x, int64_t n, float cap);

/* ---- attention (ref_attention.c) ---- */
/* One query token t and head h: out[D] in double. Also the terms of the documented bound:
 * pv[d] = sum_j p_j |v_jd|, pvs[d] = sum_j p_j |v_jd| |s_j - m| (with sinks: plus pv[d] (|sink - m|
 * + 8)), *A = max_j scale sum_i |q_i k_ji| (before any soft-cap, which only shrinks a score).
 * Returns M, the entries visible (0: out, pv, pvs are zeros). */
int64_t ref_attention_row(double *out, double *pv, double *pvs, double *A, const pl_attn_args *a,
                          int64_t t, int64_t h);
/* The visibility rule of pl_attn_args, written out independently. */
int ref_attn_visible(const pl_attn_args *a, int64_t t, int64_t j);

/* ---- sampling (ref_sample.c) ---- */
void ref_temperature(double *y, const float *logits, int64_t V, float temp);
/* y[V] after llama.cpp's penalties; mag[V] = |l'| + c |freq| + |presence| for penalised
 * ids, 0 for the others (which must come out unchanged). Counts with a V-sized table. */
void ref_penalties(double *y, double *mag, const float *logits, int64_t V, const int32_t *history,
                   int64_t n, float repeat, float freq, float presence);
/* Sorts the candidates' (id, logit) by logit descending, ties by smaller id (qsort on a
 * copy) into ids[n], and p[n] = softmax of the logits in that order (gsl_sf_exp). */
void ref_cand_softmax(int32_t *ids, double *p, const pl_candidate *c, int64_t n);
/* Truncations over a double distribution sorted descending; same contracts as kernels.h. */
int64_t ref_top_k(int64_t n, int64_t k);
int64_t ref_top_p(const double *p, int64_t n, double top_p, int64_t min_keep);
int64_t ref_min_p(const double *p, int64_t n, double min_p, int64_t min_keep);
/* The smallest prefix mass and largest share margins of a top-p / min-p decision: how far
 * (relative) the reference was from choosing another length. Near 0: the float kernel may
 * legitimately decide the other way. */
double ref_top_p_margin(const double *p, int64_t n, double top_p, int64_t keep);
double ref_min_p_margin(const double *p, int64_t n, double min_p, int64_t keep);
/* Goodness of fit of counts[n] (sum = draws) to probabilities q[n] (sum 1): cells with an
 * expected count under 5 are pooled; returns gsl_cdf_chisq_Q of the statistic (1 if fewer
 * than two cells remain). *dof receives the degrees of freedom. */
double ref_chisq_p(const uint64_t *counts, const double *q, int64_t n, uint64_t draws, int *dof);

/* ---- the error-ratio ledger: worst observed |y - ref| / bound per (set, kernel) ---- */
/* Ratio of one element: |y - ref| / bound; 0 when both are the same infinity or NaN,
 * +inf when only one is non-finite. */
double ref_ratio(double y, double ref, double bound);
/* Records a case's worst ratio and a description of where (shape, seed, element). */
void ref_ledger_note(const char *set, const char *kernel, double ratio, const char *where);
/* Prints the table: set, kernel, cases, worst ratio, where. */
void ref_ledger_print(FILE *f);

#endif
