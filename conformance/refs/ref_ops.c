/* ref_ops.c — GSL double references for rmsnorm, rope, softmax and swiglu, and the
 * error-ratio ledger. Test-only; written from the math, not from kernels/ref/ops.c. */
#include <math.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_statistics_double.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_math.h>
#include <gsl/gsl_sf_exp.h>
#include <gsl/gsl_sf_log.h>
#include <gsl/gsl_sf_trig.h>
#include <gsl/gsl_vector.h>

#include "refs_ops.h"

void ref_init(void)
{
    gsl_set_error_handler_off();
}

/* exp that returns 0 past underflow instead of raising a GSL error. */
static double dexp(double x)
{
    if (x == -INFINITY || x < -745.0) return 0.0;
    return gsl_sf_exp(x);
}

void ref_rmsnorm(double *y, const float *x, const float *w, int64_t n, float eps)
{
    gsl_vector *xv = gsl_vector_alloc((size_t)n);
    for (int64_t i = 0; i < n; i++) gsl_vector_set(xv, (size_t)i, x[i]);
    double ss = 0.0;
    gsl_blas_ddot(xv, xv, &ss);
    double s = 1.0 / sqrt(ss / (double)n + (double)eps);
    for (int64_t i = 0; i < n; i++) y[i] = gsl_vector_get(xv, (size_t)i) * s * (double)w[i];
    gsl_vector_free(xv);
}

/* LayerNorm (issue 49, cohere2): the mean by GSL's gsl_stats_mean, the variance of x - mean
 * by a dot product, in double from the float inputs. */
void ref_layernorm(double *y, const float *x, const float *w, int64_t n, float eps)
{
    gsl_vector *xv = gsl_vector_alloc((size_t)n);
    for (int64_t i = 0; i < n; i++) gsl_vector_set(xv, (size_t)i, x[i]);
    const double mean = gsl_stats_mean(xv->data, 1, (size_t)n);
    gsl_vector_add_constant(xv, -mean);
    double ss = 0.0;
    gsl_blas_ddot(xv, xv, &ss);
    const double s = 1.0 / sqrt(ss / (double)n + (double)eps);
    for (int64_t i = 0; i < n; i++) y[i] = gsl_vector_get(xv, (size_t)i) * s * (double)w[i];
    gsl_vector_free(xv);
}

/* gpt-oss's clamped SwiGLU (issue 49): the clamps, then g sigmoid(alpha g) (u + 1) with GSL's
 * exp, in double. */
void ref_swiglu_oai(double *y, const float *gate, const float *up, int64_t n, float alpha,
                    float limit)
{
    for (int64_t i = 0; i < n; i++) {
        const double g = gate[i] > limit ? (double)limit : (double)gate[i];
        const double u = up[i] > limit ? (double)limit : up[i] < -limit ? -(double)limit : up[i];
        const double z = (double)alpha * g;
        const double sig = z >= 0 ? 1.0 / (1.0 + gsl_sf_exp(-z))
                                  : (z < -700 ? 0.0 : gsl_sf_exp(z) / (1.0 + gsl_sf_exp(z)));
        y[i] = g * sig * (u + 1.0);
    }
}

ref_rope_angle ref_rope_theta(const pl_rope_args *a, int64_t n_rot, int64_t i, int32_t pos)
{
    ref_rope_angle r;
    const double ln_base = gsl_sf_log((double)a->freq_base);
    /* freq_base^(-2i/n_rot) = exp(-2i/n_rot * ln freq_base) */
    r.extrap = (double)pos * dexp(-2.0 * (double)i / (double)n_rot * ln_base);
    if (a->freq_factors) r.extrap /= (double)a->freq_factors[i];
    r.interp = (double)a->freq_scale * r.extrap;
    r.theta = r.interp;
    r.mscale = a->attn_factor;
    if (a->ext_factor != 0.0f) {
        /* YaRN: the pair index where a wavelength 2 pi / theta_1 fits b rotations in the
         * original context, n_rot ln(n_ctx_orig / (2 pi b)) / (2 ln base), for b = beta_fast
         * (floored) and beta_slow (ceiled) unless yarn_no_truncate (transformers' truncate =
         * false: as they are), clamped to the dims. */
        const double c_fast = (double)n_rot *
                              gsl_sf_log((double)a->n_ctx_orig / (2.0 * M_PI * a->beta_fast)) /
                              (2.0 * ln_base);
        const double c_slow = (double)n_rot *
                              gsl_sf_log((double)a->n_ctx_orig / (2.0 * M_PI * a->beta_slow)) /
                              (2.0 * ln_base);
        const double lo = GSL_MAX_DBL(0.0, a->yarn_no_truncate ? c_fast : floor(c_fast));
        const double hi =
            GSL_MIN_DBL((double)(n_rot - 1), a->yarn_no_truncate ? c_slow : ceil(c_slow));
        const double ramp =
            1.0 -
            GSL_MIN_DBL(1.0, GSL_MAX_DBL(0.0, ((double)i - lo) / GSL_MAX_DBL(0.001, hi - lo)));
        const double mix = ramp * (double)a->ext_factor;
        r.theta = r.interp * (1.0 - mix) + r.extrap * mix;
        r.mscale *= 1.0 + 0.1 * gsl_sf_log(1.0 / (double)a->freq_scale);
    }
    return r;
}

void ref_rope(double *y, const float *x, int64_t n_heads, int64_t D, int32_t pos,
              const pl_rope_args *a)
{
    const int64_t n_rot = a->n_rot < D ? a->n_rot : D;
    for (int64_t k = 0; k < n_heads * D; k++) y[k] = x[k];
    for (int64_t h = 0; h < n_heads; h++) {
        for (int64_t i = 0; i < n_rot / 2; i++) {
            const ref_rope_angle r = ref_rope_theta(a, n_rot, i, pos);
            double c = r.mscale * gsl_sf_cos(r.theta), s = r.mscale * gsl_sf_sin(r.theta);
            int64_t ia = a->style == PL_ROPE_NEOX ? i : 2 * i;
            int64_t ib = a->style == PL_ROPE_NEOX ? i + n_rot / 2 : 2 * i + 1;
            double xa = x[h * D + ia], xb = x[h * D + ib];
            y[h * D + ia] = xa * c - xb * s;
            y[h * D + ib] = xa * s + xb * c;
        }
    }
}

void ref_softmax(double *y, const float *x, int64_t n)
{
    if (n <= 0) return;
    double m = x[0];
    for (int64_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
    gsl_vector *e = gsl_vector_alloc((size_t)n);
    for (int64_t i = 0; i < n; i++)
        gsl_vector_set(e, (size_t)i, (double)x[i] == m ? 1.0 : dexp((double)x[i] - m));
    double sum = gsl_blas_dasum(e); /* every term is >= 0 */
    for (int64_t i = 0; i < n; i++) y[i] = gsl_vector_get(e, (size_t)i) / sum;
    gsl_vector_free(e);
}

void ref_swiglu(double *y, const float *gate, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double g = gate[i];
        /* logistic in the form whose exp cannot overflow */
        double sig = g >= 0 ? 1.0 / (1.0 + dexp(-g)) : dexp(g) / (1.0 + dexp(g));
        y[i] = g * sig * (double)up[i];
    }
}

void ref_geglu(double *y, double *z, const float *gate, const float *up, int64_t n)
{
    const double k = M_SQRT2 / M_SQRTPI; /* sqrt(2/pi) */
    for (int64_t i = 0; i < n; i++) {
        const double g = gate[i], zi = k * (g + 0.044715 * g * g * g);
        /* 1 + tanh z: as it is where z >= 0; 2 e^{2z} / (1 + e^{2z}) below, where it cancels */
        const double one_plus_tanh =
            zi >= 0 ? 1.0 + tanh(zi) : 2.0 * dexp(2.0 * zi) / (1.0 + dexp(2.0 * zi));
        y[i] = 0.5 * g * one_plus_tanh * (double)up[i];
        if (z) z[i] = zi;
    }
}

void ref_softcap(double *y, const float *x, int64_t n, float cap)
{
    for (int64_t i = 0; i < n; i++) {
        const double a = (double)x[i] / (double)cap;
        /* tanh a = sign(a) (1 - e^{-2|a|}) / (1 + e^{-2|a|}), with expm1 where a is small */
        const double em = gsl_sf_expm1(-2.0 * fabs(a));
        const double t = isnan(a) ? a : -em / (2.0 + em);
        y[i] = (double)cap * (a < 0 ? -t : t);
    }
}

/* ---- ledger ---- */

#define LEDGER_MAX 64

static struct ledger_row {
    char set[16], kernel[24], where[160];
    double worst;
    uint64_t cases;
} ledger[LEDGER_MAX];
static int ledger_n;

double ref_ratio(double y, double ref, double bound)
{
    if (isnan(ref) || isinf(ref)) {
        if (isnan(ref) && isnan(y)) return 0.0;
        return y == ref ? 0.0 : INFINITY;
    }
    if (!isfinite(y)) return INFINITY;
    double d = fabs(y - ref);
    if (d == 0.0) return 0.0;
    return bound > 0.0 ? d / bound : INFINITY;
}

void ref_ledger_note(const char *set, const char *kernel, double ratio, const char *where)
{
    struct ledger_row *r = NULL;
    for (int i = 0; i < ledger_n; i++)
        if (!strcmp(ledger[i].set, set) && !strcmp(ledger[i].kernel, kernel)) r = &ledger[i];
    if (!r) {
        if (ledger_n == LEDGER_MAX) return;
        r = &ledger[ledger_n++];
        snprintf(r->set, sizeof r->set, "%s", set);
        snprintf(r->kernel, sizeof r->kernel, "%s", kernel);
        r->worst = -1.0;
    }
    r->cases++;
    if (ratio > r->worst || isnan(ratio)) {
        r->worst = ratio;
        snprintf(r->where, sizeof r->where, "%s", where);
    }
}

void ref_ledger_print(FILE *f)
{
    fprintf(f, "\nworst observed error / documented bound, per kernel set:\n");
    fprintf(f, "  %-8s %-14s %8s %12s  %s\n", "set", "kernel", "cases", "worst", "where");
    for (int i = 0; i < ledger_n; i++)
        fprintf(f, "  %-8s %-14s %8llu %12.3e  %s\n", ledger[i].set, ledger[i].kernel,
                (unsigned long long)ledger[i].cases, ledger[i].worst, ledger[i].where);
}
