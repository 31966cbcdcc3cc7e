/* perf_stats.c — median, bootstrap interval and verdict for the paired A/B report (GSL).
 * Not the report itself (perf_report.c) and not the runs (perf.sh). */
#include "perf_stats.h"

#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double perf_median(const double *x, size_t n)
{
    if (n == 0) return NAN;
    double *s = malloc(n * sizeof *s);
    if (!s) return NAN;
    memcpy(s, x, n * sizeof *s);
    gsl_sort(s, 1, n);
    double m = gsl_stats_median_from_sorted_data(s, 1, n);
    free(s);
    return m;
}

int perf_bootstrap_ci(const double *r, size_t n, int resamples, unsigned long seed, double *lo,
                      double *hi)
{
    *lo = *hi = NAN;
    if (n == 0 || resamples < 1) return 0;
    double *draw = malloc(n * sizeof *draw);
    double *meds = malloc((size_t)resamples * sizeof *meds);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!draw || !meds || !rng) {
        free(draw);
        free(meds);
        if (rng) gsl_rng_free(rng);
        return -1;
    }
    gsl_rng_set(rng, seed);
    for (int b = 0; b < resamples; b++) {
        for (size_t i = 0; i < n; i++) draw[i] = r[gsl_rng_uniform_int(rng, n)];
        gsl_sort(draw, 1, n);
        meds[b] = gsl_stats_median_from_sorted_data(draw, 1, n);
    }
    gsl_sort(meds, 1, (size_t)resamples);
    *lo = gsl_stats_quantile_from_sorted_data(meds, 1, (size_t)resamples, 0.025);
    *hi = gsl_stats_quantile_from_sorted_data(meds, 1, (size_t)resamples, 0.975);
    gsl_rng_free(rng);
    free(draw);
    free(meds);
    return 0;
}

perf_verdict perf_judge(double lo, double hi, int higher_is_better, double threshold)
{
    if (!isfinite(lo) || !isfinite(hi)) return PERF_SAME; /* nothing measured: no claim */
    int below = hi<1.0 - threshold, above = lo> 1.0 + threshold;
    if (higher_is_better) return below ? PERF_REGRESSION : above ? PERF_FASTER : PERF_SAME;
    return above ? PERF_REGRESSION : below ? PERF_FASTER : PERF_SAME;
}

const char *perf_verdict_name(perf_verdict v)
{
    return v == PERF_FASTER ? "faster" : v == PERF_REGRESSION ? "REGRESSION" : "same";
}
