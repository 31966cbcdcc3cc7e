/* test_perf_stats.c — the statistics of `make perf` (perf/perf_stats.c) on fixed data: medians,
 * the seeded bootstrap interval, and the verdict at and around its threshold. No timing. */
#include <math.h>

#include "perf_stats.h"
#include "testutil.h"

enum { B = 2000, SEED = 20240515 };

static void test_median_of_odd_even_and_empty(void)
{
    const double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2};
    CU_ASSERT_DOUBLE_EQUAL(perf_median(odd, 3), 3.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(perf_median(even, 4), 2.5, 0);
    CU_ASSERT(odd[0] == 5); /* input left as it was */
    CU_ASSERT(isnan(perf_median(odd, 0)));
}

static void test_bootstrap_of_all_equal_pairs_is_a_point(void)
{
    const double r[] = {1, 1, 1, 1, 1, 1};
    double lo, hi;
    CU_ASSERT_EQUAL(perf_bootstrap_ci(r, 6, B, SEED, &lo, &hi), 0);
    CU_ASSERT_DOUBLE_EQUAL(lo, 1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(hi, 1.0, 0);
    CU_ASSERT_EQUAL(perf_judge(lo, hi, 1, 0.03), PERF_SAME);
    CU_ASSERT_EQUAL(perf_judge(lo, hi, 0, 0.03), PERF_SAME);
}

static void test_bootstrap_is_seeded_and_brackets_the_median(void)
{
    const double r[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    double lo, hi, lo2, hi2;
    perf_bootstrap_ci(r, 9, B, SEED, &lo, &hi);
    perf_bootstrap_ci(r, 9, B, SEED, &lo2, &hi2);
    CU_ASSERT(lo == lo2 && hi == hi2);
    /* the median of 9 draws from 1..9: its 2.5% and 97.5% points are near 3 and 7 */
    CU_ASSERT(lo >= 2 && lo <= 4);
    CU_ASSERT(hi >= 6 && hi <= 8);
    CU_ASSERT(lo <= perf_median(r, 9) && perf_median(r, 9) <= hi);
}

static void test_bootstrap_of_one_pair_and_of_none(void)
{
    const double r[] = {0.93};
    double lo, hi;
    perf_bootstrap_ci(r, 1, B, SEED, &lo, &hi);
    CU_ASSERT(lo == 0.93 && hi == 0.93);
    perf_bootstrap_ci(r, 0, B, SEED, &lo, &hi);
    CU_ASSERT(isnan(lo) && isnan(hi));
    CU_ASSERT_EQUAL(perf_judge(lo, hi, 1, 0.03), PERF_SAME);
}

static void test_a_clear_slowdown_is_a_regression_and_noise_is_not(void)
{
    const double slow[] = {0.91, 0.93, 0.92, 0.90, 0.94, 0.92}; /* tok/s ratios: ~8% slower */
    const double noise[] = {0.95, 1.06, 0.99, 1.03, 0.97, 1.01};
    double lo, hi;
    perf_bootstrap_ci(slow, 6, B, SEED, &lo, &hi);
    CU_ASSERT(hi < 0.97);
    CU_ASSERT_EQUAL(perf_judge(lo, hi, 1, 0.03), PERF_REGRESSION);
    perf_bootstrap_ci(noise, 6, B, SEED, &lo, &hi);
    CU_ASSERT_EQUAL(perf_judge(lo, hi, 1, 0.03), PERF_SAME);
}

static void test_judge_needs_the_whole_interval_past_the_threshold(void)
{
    /* higher is better (tok/s) */
    CU_ASSERT_EQUAL(perf_judge(0.90, 0.96, 1, 0.03), PERF_REGRESSION);
    CU_ASSERT_EQUAL(perf_judge(0.90, 0.98, 1, 0.03), PERF_SAME); /* straddles 0.97 */
    CU_ASSERT_EQUAL(perf_judge(0.90, 0.97, 1, 0.03), PERF_SAME); /* touching is not past */
    CU_ASSERT_EQUAL(perf_judge(1.04, 1.10, 1, 0.03), PERF_FASTER);
    CU_ASSERT_EQUAL(perf_judge(1.02, 1.10, 1, 0.03), PERF_SAME);
    /* lower is better (latency, RSS): the same interval means the opposite */
    CU_ASSERT_EQUAL(perf_judge(1.04, 1.10, 0, 0.03), PERF_REGRESSION);
    CU_ASSERT_EQUAL(perf_judge(0.90, 0.96, 0, 0.03), PERF_FASTER);
    CU_ASSERT_EQUAL(perf_judge(0.99, 1.10, 0, 0.03), PERF_SAME);
    /* a threshold of 0: any interval off 1 */
    CU_ASSERT_EQUAL(perf_judge(0.98, 0.99, 1, 0.0), PERF_REGRESSION);
    CU_ASSERT_EQUAL(perf_judge(NAN, 0.5, 1, 0.03), PERF_SAME);
    CU_ASSERT_STRING_EQUAL(perf_verdict_name(PERF_REGRESSION), "REGRESSION");
}

int main(void)
{
    static const tu_test tests[] = {
        {"median_of_odd_even_and_empty", test_median_of_odd_even_and_empty},
        {"bootstrap_of_all_equal_pairs_is_a_point", test_bootstrap_of_all_equal_pairs_is_a_point},
        {"bootstrap_is_seeded_and_brackets_the_median",
         test_bootstrap_is_seeded_and_brackets_the_median},
        {"bootstrap_of_one_pair_and_of_none", test_bootstrap_of_one_pair_and_of_none},
        {"a_clear_slowdown_is_a_regression_and_noise_is_not",
         test_a_clear_slowdown_is_a_regression_and_noise_is_not},
        {"judge_needs_the_whole_interval_past_the_threshold",
         test_judge_needs_the_whole_interval_past_the_threshold},
        {NULL, NULL},
    };
    return tu_run("perf_stats", tests);
}
