/* ref_sample.c — double references for the sampling primitives and the chi-square
 * goodness-of-fit test of draws. Test-only: allocates freely, sorts with qsort, counts
 * with a V-sized table — deliberately other algorithms than kernels/ref/sample.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sf_exp.h>
#include <gsl/gsl_vector.h>

#include "refs_ops.h"

static double dexp(double x)
{
    return x < -745.0 ? 0.0 : gsl_sf_exp(x);
}

void ref_temperature(double *y, const float *logits, int64_t V, float temp)
{
    for (int64_t i = 0; i < V; i++) y[i] = (double)logits[i] / (double)temp;
}

void ref_penalties(double *y, double *mag, const float *logits, int64_t V, const int32_t *history,
                   int64_t n, float repeat, float freq, float presence)
{
    int64_t *count = calloc((size_t)(V > 0 ? V : 1), sizeof *count);
    for (int64_t i = 0; i < n; i++)
        if (history[i] >= 0 && history[i] < V) count[history[i]]++;
    for (int64_t i = 0; i < V; i++) {
        double l = logits[i];
        y[i] = l;
        mag[i] = 0.0;
        if (count[i] == 0) continue;
        double lr = l > 0 ? l / (double)repeat : l * (double)repeat;
        y[i] = lr - ((double)count[i] * (double)freq + (double)presence);
        mag[i] = fabs(lr) + (double)count[i] * fabs((double)freq) + fabs((double)presence);
    }
    free(count);
}

static int cand_cmp(const void *pa, const void *pb)
{
    const pl_candidate *a = pa, *b = pb;
    int an = isnan(a->logit), bn = isnan(b->logit);
    if (an != bn) return an ? 1 : -1; /* NaN last */
    if (!an && a->logit != b->logit) return a->logit > b->logit ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

void ref_cand_softmax(int32_t *ids, double *p, const pl_candidate *c, int64_t n)
{
    if (n <= 0) return;
    pl_candidate *s = malloc((size_t)n * sizeof *s);
    memcpy(s, c, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cand_cmp);
    gsl_vector *e = gsl_vector_alloc((size_t)n);
    double m = s[0].logit;
    for (int64_t i = 0; i < n; i++) {
        double l = s[i].logit;
        gsl_vector_set(e, (size_t)i, isnan(l) ? 0.0 : l == m ? 1.0 : dexp(l - m));
        ids[i] = s[i].id;
    }
    double sum = gsl_blas_dasum(e);
    for (int64_t i = 0; i < n; i++) p[i] = gsl_vector_get(e, (size_t)i) / sum;
    gsl_vector_free(e);
    free(s);
}

int64_t ref_top_k(int64_t n, int64_t k)
{
    if (n <= 0) return 0;
    return k <= 0 || k > n ? n : k;
}

int64_t ref_top_p(const double *p, int64_t n, double top_p, int64_t min_keep)
{
    if (n <= 0) return 0;
    if (top_p >= 1.0) return n;
    double total = 0.0, cum = 0.0;
    for (int64_t i = 0; i < n; i++) total += p[i];
    for (int64_t i = 0; i < n; i++) {
        cum += p[i];
        if (cum >= top_p * total && i + 1 >= min_keep) return i + 1;
    }
    return n;
}

int64_t ref_min_p(const double *p, int64_t n, double min_p, int64_t min_keep)
{
    if (n <= 0) return 0;
    if (!(min_p > 0.0)) return n;
    int64_t keep = 1;
    while (keep < n && p[keep] >= min_p * p[0]) keep++;
    if (keep < min_keep) keep = min_keep < n ? min_keep : n;
    return keep;
}

double ref_top_p_margin(const double *p, int64_t n, double top_p, int64_t keep)
{
    if (n <= 0 || top_p >= 1.0) return INFINITY;
    double total = 0.0, before = 0.0;
    for (int64_t i = 0; i < n; i++) total += p[i];
    for (int64_t i = 0; i + 1 < keep && i < n; i++) before += p[i];
    double at = keep >= 1 && keep <= n ? before + p[keep - 1] : before;
    double target = top_p * total;
    if (!(target > 0.0)) return INFINITY;
    double mg = fabs(at - target);
    if (keep > 1) mg = fmin(mg, fabs(before - target));
    return mg / target;
}

double ref_min_p_margin(const double *p, int64_t n, double min_p, int64_t keep)
{
    if (n <= 0 || !(min_p > 0.0)) return INFINITY;
    double thr = min_p * p[0];
    if (!(thr > 0.0)) return INFINITY;
    double mg = fabs(p[keep - 1] - thr);
    if (keep < n) mg = fmin(mg, fabs(p[keep] - thr));
    return mg / thr;
}

double ref_chisq_p(const uint64_t *counts, const double *q, int64_t n, uint64_t draws, int *dof)
{
    /* Cells expecting >= 5 stand alone; the rest pool into one cell, which itself joins the
     * smallest standing cell when it still expects < 5. */
    double pool_e = 0.0, pool_o = 0.0;
    int64_t smallest = -1;
    for (int64_t i = 0; i < n; i++) {
        double e = q[i] * (double)draws;
        if (e < 5.0) {
            pool_e += e;
            pool_o += (double)counts[i];
        } else if (smallest < 0 || e < q[smallest] * (double)draws) {
            smallest = i;
        }
    }
    *dof = 0;
    if (pool_e == 0.0 && pool_o > 0.0) return 0.0; /* draws where the reference has no mass */
    int pool_alone = pool_e >= 5.0 || smallest < 0;
    double stat = 0.0;
    int cells = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = q[i] * (double)draws, o = (double)counts[i];
        if (e < 5.0) continue;
        if (i == smallest && !pool_alone) {
            e += pool_e;
            o += pool_o;
        }
        stat += (o - e) * (o - e) / e;
        cells++;
    }
    if (pool_alone && pool_e > 0.0) {
        stat += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
        cells++;
    }
    if (cells < 2) return 1.0;
    *dof = cells - 1;
    return gsl_cdf_chisq_Q(stat, (double)(cells - 1));
}
