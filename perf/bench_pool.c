/* bench_pool.c — round trip of a pl_pool_run in which every thread takes part (publish,
 * every thread runs one item that waits until all have started, all done), as medians over
 * many calls. The items wait for each other because an empty item would be stolen by the
 * caller before a worker woke (work stealing), and the series would time the caller alone. A
 * benchmark, not a test: no asserts. Results and how they were taken: perf/NOTES.md, "Thread pool
 * dispatch". Build (until perf/CMakeLists.txt has a target for it), from the repo root after
 * `make`:
 *   cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Iengine -Iengine/include perf/bench_pool.c \
 *      build/engine/libplumb.a $(pkg-config --libs hwloc libpcre2-8) -lpthread -lm -o bench_pool
 * Run: ./bench_pool [threads=2] [calls=10000] [--bind-caller] [--spin=US]
 * Prints the pool's topology/binding report, then one JSON line per series. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/threads.h"

/* Items that meet: each waits until every thread has started one (10 ms at most). */
typedef struct meet {
    _Atomic int arrived;
    int size;
} meet;

static void empty(void *ctx, int64_t i0, int64_t i1, int thread)
{
    (void)thread;
    meet *m = ctx;
    for (int64_t i = i0; i < i1; i++) {
        atomic_fetch_add(&m->arrived, 1);
        uint64_t until = 0;
        while (atomic_load(&m->arrived) < m->size) {
            uint64_t t = pl_clock_ns();
            if (!until) until = t + 10000000u;
            if (t > until) break;
        }
    }
}

static void run_once(pl_pool *p, int size)
{
    meet m = {0, size};
    pl_pool_run(p, empty, &m, size, 1);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One series: `calls` timed runs after 1000 warm-up runs; gap_ns of idle time between runs
 * (0: back to back, as regions of one decode step are). */
static void series(pl_pool *p, int calls, uint64_t gap_ns, const char *label)
{
    uint64_t *t = malloc((size_t)calls * sizeof *t);
    if (!t) return;
    int size = pl_pool_size(p);
    for (int k = 0; k < 1000; k++) run_once(p, size);
    pl_pool_stats s0 = pl_pool_get_stats(p);
    for (int k = 0; k < calls; k++) {
        if (gap_ns) {
            uint64_t until = pl_clock_ns() + gap_ns;
            while (pl_clock_ns() < until) {
            }
        }
        uint64_t a = pl_clock_ns();
        run_once(p, size);
        t[k] = pl_clock_ns() - a;
    }
    pl_pool_stats s1 = pl_pool_get_stats(p);
    qsort(t, (size_t)calls, sizeof *t, cmp_u64);
    printf("{\"series\":\"%s\",\"threads\":%d,\"spin_us\":%d,\"gap_us\":%.0f,\"calls\":%d,"
           "\"p10_ns\":%llu,\"median_ns\":%llu,\"p90_ns\":%llu,\"p99_ns\":%llu,\"sleeps\":%llu}\n",
           label, size, pl_pool_spin_us(p), gap_ns / 1e3, calls, (unsigned long long)t[calls / 10],
           (unsigned long long)t[calls / 2], (unsigned long long)t[calls * 9 / 10],
           (unsigned long long)t[calls * 99 / 100], (unsigned long long)(s1.sleeps - s0.sleeps));
    free(t);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2, calls = argc > 2 ? atoi(argv[2]) : 10000;
    int bind_caller = 0, spin = -1;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--bind-caller") == 0) bind_caller = 1;
        if (strncmp(argv[i], "--spin=", 7) == 0) spin = atoi(argv[i] + 7);
    }
    if (calls < 100) calls = 100;
    pl_pool *p = NULL;
    pl_error err;
    uint64_t a = pl_clock_ns();
    if (pl_pool_new(&p, threads, &err) != PL_OK) {
        fprintf(stderr, "pl_pool_new: %s\n", err.msg);
        return 1;
    }
    uint64_t new_ns = pl_clock_ns() - a;
    if (bind_caller) pl_pool_bind_caller(p, NULL);
    if (spin >= 0) pl_pool_set_spin_us(p, spin);
    char buf[8192];
    pl_pool_format(p, PL_POOL_FORMAT_TEXT, buf, sizeof buf, NULL, NULL);
    printf("%spl_pool_new: %.2f ms\n", buf, new_ns / 1e6);
    spin = pl_pool_spin_us(p);
    series(p, calls, 0, "back_to_back");
    series(p, calls, 20000, "gap_20us");
    pl_pool_set_spin_us(p, 0);
    series(p, calls, 0, "no_spin");
    pl_pool_set_spin_us(p, spin);
    pl_pool_format(p, PL_POOL_FORMAT_JSON, buf, sizeof buf, NULL, NULL);
    printf("%s\n", buf);
    pl_pool_free(p);
    return 0;
}
