/* ref_ops.c — GSL double references for rmsnorm, rope, softmax and swiglu, and the
 * error-ratio ledger. Test-only; written from the math, not from kernels/ref/ops.c. */
#include <math.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
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

double ref_rope_theta(int64_t i, int64_t n_rot, int32_t pos, float freq_base)
{
    /* freq_base^(-2i/n_rot) = exp(-2i/n_rot * ln freq_base) */
    double inv_freq = dexp(-2.0 * (double)i / (double)n_rot * gsl_sf_log((double)freq_base));
    return (double)pos * inv_freq;
}

void ref_rope(double *y, const float *x, int64_t n_heads, int64_t D, int64_t n_rot, int32_t pos,
              float freq_base, enum pl_rope_style style)
{
    for (int64_t k = 0; k < n_heads * D; k++) y[k] = x[k];
    for (int64_t h = 0; h < n_heads; h++) {
        for (int64_t i = 0; i < n_rot / 2; i++) {
            double th = ref_rope_theta(i, n_rot, pos, freq_base);
            double c = gsl_sf_cos(th), s = gsl_sf_sin(th);
            int64_t a = style == PL_ROPE_NEOX ? i : 2 * i;
            int64_t b = style == PL_ROPE_NEOX ? i + n_rot / 2 : 2 * i + 1;
            double xa = x[h * D + a], xb = x[h * D + b];
            y[h * D + a] = xa * c - xb * s;
            y[h * D + b] = xa * s + xb * c;
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
