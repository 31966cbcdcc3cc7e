/* perf_stats.h — the statistics of the paired A/B report: median, bootstrap interval of the
 * median of per-pair ratios, and the verdict. Pure functions over arrays; no I/O, no timing. */
#ifndef PLUMB_PERF_STATS_H
#define PLUMB_PERF_STATS_H

#include <stddef.h>

typedef enum { PERF_SAME = 0, PERF_FASTER = 1, PERF_REGRESSION = 2 } perf_verdict;

/* Median of x[0..n) (x is left unchanged); NAN when n == 0. */
double perf_median(const double *x, size_t n);

/* The 95% percentile-bootstrap interval of the median of r[0..n): `resamples` draws of n pairs
 * with replacement (gsl mt19937 seeded with `seed`, so the same data give the same interval).
 * *lo = *hi = NAN when n == 0. Returns 0, or -1 on an allocation failure. */
int perf_bootstrap_ci(const double *r, size_t n, int resamples, unsigned long seed, double *lo,
                      double *hi);

/* Verdict of an interval [lo, hi] of candidate/baseline ratios. higher_is_better: tok/s (a
 * REGRESSION only when the whole interval lies below 1 - threshold, FASTER above 1 + threshold);
 * otherwise latency / RSS (REGRESSION above 1 + threshold, FASTER below 1 - threshold). */
perf_verdict perf_judge(double lo, double hi, int higher_is_better, double threshold);

const char *perf_verdict_name(perf_verdict v); /* "same", "faster", "REGRESSION" */

#endif
