/* test_threads.c — the thread pool: every index exactly once, a pure split, worker reuse, the
 * thread-count rules, binding refusal, allocation failure. No timing assertions (noisy hosts). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include "core/core.h"
#include "runtime/threads.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------- */

/* Threads of this process, as the kernel lists them. */
static int os_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A joined thread can linger in /proc for a moment after pthread_join returns; wait (bounded)
 * for the count to reach `want` and return the last count seen. */
static int os_threads_settle(int want)
{
    int n = os_threads();
    for (int i = 0; i < 300 && n != want; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        n = os_threads();
    }
    return n;
}

/* PLUMB_THREADS as the test found it, restored after tests that set it. */
static char *saved_env;

static void env_clear(void)
{
    unsetenv("PLUMB_THREADS");
}

static void env_restore(void)
{
    if (saved_env)
        setenv("PLUMB_THREADS", saved_env, 1);
    else
        unsetenv("PLUMB_THREADS");
}

/* Records what each thread did in one run: every call's range and thread, in a log. */
#define MAX_T     16
#define MAX_CALLS 4096
typedef struct call {
    int64_t i0, i1;
    int thread;
    int on_caller; /* ran on the thread that called pl_pool_run */
} call;

typedef struct visit {
    _Atomic int *count; /* [n] */
    pthread_t caller;
    _Atomic int n_log;
    call *log; /* [MAX_CALLS]; NULL: not kept */
} visit;

static void visit_fn(void *ctx, int64_t i0, int64_t i1, int thread)
{
    visit *v = ctx;
    if (v->log) {
        int k = atomic_fetch_add(&v->n_log, 1);
        if (k < MAX_CALLS)
            v->log[k] = (call){i0, i1, thread, pthread_equal(pthread_self(), v->caller)};
    }
    for (int64_t i = i0; i < i1; i++)
        atomic_fetch_add_explicit(&v->count[i], 1, memory_order_relaxed);
}

/* The thread whose initial chunk holds item i (-1: none). */
static int chunk_owner(int64_t n, int64_t grain, int size, int64_t i, int64_t *end)
{
    for (int t = 0; t < size; t++) {
        int64_t a, b;
        pl_pool_chunk(n, grain, size, t, &a, &b);
        if (a <= i && i < b) {
            *end = b;
            return t;
        }
    }
    return -1;
}

/* Checks one run's log: every index once, each call one or more whole grains inside one
 * thread's chunk, thread 0 on the caller and no other index there, no thread past the number
 * of grains, and the pool's stolen counter moved by the grains run outside their chunk.
 * *stolen0 (optional) gets the calls thread 0 ran outside its own chunk. */
static int check_log(pl_pool *p, const visit *v, int64_t n, int64_t grain, uint64_t stolen_before,
                     int *stolen0)
{
    int size = pl_pool_size(p), ok = 1, n_log = atomic_load(&v->n_log);
    int64_t g = grain < 1 ? 1 : grain, grains = n > 0 ? (n - 1) / g + 1 : 0;
    uint64_t stolen = 0;
    if (stolen0) *stolen0 = 0;
    for (int64_t i = 0; i < n && ok; i++) {
        int c = atomic_load(&v->count[i]);
        TU_CHECK(c == 1,
                 "size %d n %" PRId64 " grain %" PRId64 ": index %" PRId64 " visited %d times",
                 size, n, grain, i, c);
        ok &= c == 1;
    }
    TU_CHECK(n_log <= MAX_CALLS, "size %d n %" PRId64 " grain %" PRId64 ": %d calls", size, n,
             grain, n_log);
    for (int k = 0; k < n_log && k < MAX_CALLS && ok; k++) {
        const call *c = &v->log[k];
        int64_t end = 0;
        int owner = chunk_owner(n, g, size, c->i0, &end);
        int whole = c->i0 < c->i1 && c->i0 % g == 0 && (c->i1 % g == 0 || c->i1 == n);
        int single = grains <= 1 || size == 1; /* fn(0, n, 0) on the caller */
        int inside = single || (owner >= 0 && c->i1 <= end);
        TU_CHECK(whole && c->i1 <= n && inside,
                 "size %d n %" PRId64 " grain %" PRId64 ": thread %d ran [%" PRId64 ",%" PRId64
                 "), not whole grains inside one chunk",
                 size, n, grain, c->thread, c->i0, c->i1);
        TU_CHECK(c->thread >= 0 && c->thread < size && c->thread < grains,
                 "size %d n %" PRId64 " grain %" PRId64 ": thread index %d took part", size, n,
                 grain, c->thread);
        TU_CHECK(c->on_caller == (c->thread == 0),
                 "size %d n %" PRId64 " grain %" PRId64 ": thread index %d ran %s the caller", size,
                 n, grain, c->thread, c->on_caller ? "on" : "off");
        ok &=
            whole && c->i1 <= n && inside && c->thread < grains && c->on_caller == (c->thread == 0);
        if (!single && owner != c->thread) {
            stolen += (uint64_t)((c->i1 - c->i0 - 1) / g + 1);
            if (stolen0 && c->thread == 0) (*stolen0)++;
        }
    }
    uint64_t counted = pl_pool_get_stats(p).stolen - stolen_before;
    TU_CHECK(counted == stolen,
             "size %d n %" PRId64 " grain %" PRId64 ": stats count %" PRIu64
             " stolen grains, the log %" PRIu64,
             size, n, grain, counted, stolen);
    return ok && counted == stolen;
}

static call *call_log(void)
{
    static call log[MAX_CALLS]; /* tests run one at a time */
    return log;
}

/* Runs one (n, grain) on the pool and checks it (check_log). */
static int check_run(pl_pool *p, int64_t n, int64_t grain, _Atomic int *count)
{
    visit v;
    memset(&v, 0, sizeof v);
    v.count = count;
    v.log = call_log();
    v.caller = pthread_self();
    for (int64_t i = 0; i < n; i++) atomic_store(&count[i], 0);
    uint64_t before = pl_pool_get_stats(p).stolen;
    pl_pool_run(p, visit_fn, &v, n, grain);
    return check_log(p, &v, n, grain, before, NULL);
}

/* ---- the split ----------------------------------------------------------------- */

static int check_split(int64_t n, int64_t grain, int size)
{
    /* Contiguous from 0 to n in thread order, boundaries on grains, and the number of grains
     * per thread non-increasing by at most one overall (the first G % size get one more). */
    int64_t g = grain < 1 ? 1 : grain, expect = 0, first = -1, prev = INT64_MAX;
    for (int t = 0; t < size; t++) {
        int64_t a, b, a2, b2;
        pl_pool_chunk(n, grain, size, t, &a, &b);
        pl_pool_chunk(n, grain, size, t, &a2, &b2);
        if (a != a2 || b != b2 || a > b) goto bad;
        int64_t grains = a == b ? 0 : (b - a - 1) / g + 1;
        if (a < b && (a != expect || a % g != 0 || (b != n && b % g != 0))) goto bad;
        if (a == b && a != 0) goto bad;
        if (grains > prev) goto bad;
        if (first < 0) first = grains;
        if (first - grains > 1) goto bad;
        prev = grains;
        if (a < b) expect = b;
    }
    if (expect != (n > 0 ? n : 0)) goto bad;
    return 1;
bad:
    TU_CHECK(0,
             "split of n %" PRId64 " grain %" PRId64 " over %d threads is not a contiguous, "
             "grain-aligned, balanced cover of [0, n)",
             n, grain, size);
    return 0;
}

static void pool_split_is_pure_contiguous_balanced_and_grain_aligned(void)
{
    static const int64_t ns[] = {0, 1, 2, 3, 5, 7, 31, 32, 33, 64, 1000, 4097, 14336, INT64_MAX};
    static const int64_t grains[] = {-3, 0, 1, 2, 3, 7, 32, 64, 1000, INT64_MAX};
    static const int sizes[] = {1, 2, 3, 4, 7, 16, 64, 4096};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof grains / sizeof grains[0]; b++)
            for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++)
                if (!check_split(ns[a], grains[b], sizes[c])) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    for (int k = 0; k < 20000; k++) {
        int64_t n = tu_rng_range(&r, 0, k % 2 ? 100000 : INT64_MAX);
        int64_t grain = tu_rng_range(&r, 1, k % 3 ? 100 : INT64_MAX);
        int size = (int)tu_rng_range(&r, 1, 300);
        if (!check_split(n, grain, size)) {
            fprintf(stderr, "  seed %" PRIu64 " iteration %d\n", tu_seed(), k);
            return;
        }
    }
    int64_t a, b;
    pl_pool_chunk(10, 1, 2, 2, &a, &b);
    TU_CHECK(a == 0 && b == 0, "thread index past the size gets an empty chunk");
    pl_pool_chunk(10, 1, 2, -1, &a, &b);
    TU_CHECK(a == 0 && b == 0, "negative thread index gets an empty chunk");
}

/* ---- running ------------------------------------------------------------------- */

static void pool_run_visits_every_index_exactly_once(void)
{
    static const int64_t ns[] = {0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 63, 64, 65, 1000, 4097};
    static const int64_t grains[] = {0, 1, 2, 3, 4, 7, 16, 64, 5000};
    static const int sizes[] = {1, 2, 3, 5};
    enum { MAX_N = 5000 };
    _Atomic int *count = malloc(MAX_N * sizeof *count);
    CU_ASSERT_FATAL(count != NULL);
    env_clear();
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x51);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        pl_pool *p = NULL;
        pl_error err;
        pl_status st = pl_pool_new(&p, sizes[s], &err);
        TU_CHECK(st == PL_OK, "pl_pool_new(%d): %s %s", sizes[s], pl_status_str(st), err.msg);
        if (st != PL_OK) continue;
        pl_pool_set_stall_backoff(p, 0);
        TU_CHECK(pl_pool_size(p) == sizes[s], "size %d, asked %d", pl_pool_size(p), sizes[s]);
        int ok = 1;
        for (size_t a = 0; a < sizeof ns / sizeof ns[0] && ok; a++)
            for (size_t b = 0; b < sizeof grains / sizeof grains[0] && ok; b++)
                ok = check_run(p, ns[a], grains[b], count);
        for (int k = 0; k < 50 && ok; k++) {
            int64_t n = tu_rng_range(&r, 0, MAX_N); /* two statements: a fixed draw order */
            int64_t grain = tu_rng_range(&r, 1, 50);
            ok = check_run(p, n, grain, count);
        }
        if (!ok) fprintf(stderr, "  seed %" PRIu64 "\n", tu_seed());
        pl_pool_free(p);
    }
    free(count);
    env_restore();
}

static void pool_runs_correctly_on_both_the_spin_and_the_sleep_path(void)
{
    enum { N = 97 };
    _Atomic int count[N];
    /* Spin 0: every wait sleeps. Spin 1 us: mostly sleeps. Spin 2 ms: mostly spins (2 threads
     * so that the spinners do not starve each other on small hosts). */
    static const struct {
        int size, spin;
    } cases[] = {{3, 0}, {2, 1}, {2, 2000}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        pl_pool *p = NULL;
        CU_ASSERT_FATAL(pl_pool_new(&p, cases[c].size, NULL) == PL_OK);
        pl_pool_set_stall_backoff(p, 0);
        pl_pool_set_spin_us(p, cases[c].spin);
        TU_CHECK(pl_pool_spin_us(p) == cases[c].spin, "spin %d not kept", cases[c].spin);
        int ok = 1;
        for (int k = 0; k < 1000 && ok; k++) {
            ok = check_run(p, 1 + k % N, 1 + k % 5, count);
            if (k % 250 == 0) { /* a gap: spinners give up and sleep */
                struct timespec ts = {0, 3 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        }
        TU_CHECK(ok, "size %d spin %d us: a run went wrong", cases[c].size, cases[c].spin);
        pl_pool_free(p);
    }
    pl_pool_set_spin_us(NULL, 5); /* no-op */
    CU_ASSERT(pl_pool_spin_us(NULL) == 0);
}

typedef struct tid_log {
    pthread_t tid[MAX_T];
    int seen[MAX_T];
    _Atomic int mismatches;
    int size;
    _Atomic int ran; /* calls by workers in the current run */
} tid_log;

/* Empty grains: thread 0 would steal them all before a worker arrives, so its first call
 * waits (up to 1 ms) for the workers to run theirs. */
static void log_fn(void *ctx, int64_t i0, int64_t i1, int thread)
{
    tid_log *l = ctx;
    (void)i1;
    if (!l->seen[thread]) {
        l->tid[thread] = pthread_self();
        l->seen[thread] = 1;
    } else if (!pthread_equal(l->tid[thread], pthread_self())) {
        atomic_fetch_add(&l->mismatches, 1);
    }
    if (thread != 0) {
        atomic_fetch_add(&l->ran, 1);
    } else if (i0 == 0) {
        uint64_t end = pl_clock_ns() + 1000000;
        while (atomic_load(&l->ran) < l->size - 1 && pl_clock_ns() < end) {
        }
    }
}

static void pool_reuses_its_workers_across_10000_runs(void)
{
    static const int sizes[] = {2, 3};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int size = sizes[s], base = os_threads();
        pl_pool *p = NULL;
        CU_ASSERT_FATAL(pl_pool_new(&p, size, NULL) == PL_OK);
        pl_pool_set_stall_backoff(p, 0);
        int after_new = os_threads();
        TU_CHECK(after_new == base + size - 1, "size %d: %d OS threads after new, %d before", size,
                 after_new, base);
        tid_log l;
        memset(&l, 0, sizeof l);
        l.size = size;
        for (int k = 0; k < 10000; k++) {
            atomic_store(&l.ran, 0);
            pl_pool_run(p, log_fn, &l, size, 1);
        }
        int after_runs = os_threads();
        pl_pool_stats st = pl_pool_get_stats(p);
        TU_CHECK(after_runs == after_new, "size %d: %d OS threads after 10^4 runs, %d before", size,
                 after_runs, after_new);
        TU_CHECK(st.threads_created == (uint64_t)size - 1, "size %d: %" PRIu64 " threads created",
                 size, st.threads_created);
        TU_CHECK(st.runs == 10000, "size %d: %" PRIu64 " runs counted", size, st.runs);
        TU_CHECK(atomic_load(&l.mismatches) == 0, "size %d: a thread index ran on %d other threads",
                 size, atomic_load(&l.mismatches));
        for (int t = 0; t < size; t++) TU_CHECK(l.seen[t], "size %d: thread %d never ran", size, t);
        CU_ASSERT(pthread_equal(l.tid[0], pthread_self()));
        for (int t = 1; t < size; t++)
            TU_CHECK(!pthread_equal(l.tid[t], pthread_self()), "thread %d ran on the caller", t);
        pl_pool_free(p);
        int after_free = os_threads_settle(base);
        TU_CHECK(after_free == base, "size %d: %d OS threads after free, %d before", size,
                 after_free, base);
    }
}

static void pool_of_one_runs_everything_on_the_caller(void)
{
    int base = os_threads();
    pl_pool *p = NULL;
    CU_ASSERT_FATAL(pl_pool_new(&p, 1, NULL) == PL_OK);
    pl_pool_set_stall_backoff(p, 0);
    TU_CHECK(os_threads() == base, "a pool of one created threads (%d -> %d)", base, os_threads());
    _Atomic int count[10];
    CU_ASSERT(check_run(p, 10, 1, count));
    CU_ASSERT(check_run(p, 0, 1, count));
    pl_pool_stats st = pl_pool_get_stats(p);
    CU_ASSERT(st.threads_created == 0 && st.runs == 0 && st.sleeps == 0);
    pl_pool_free(p);
}

static void pool_run_with_fewer_items_than_threads_wakes_only_whom_it_needs(void)
{
    pl_pool *p = NULL;
    CU_ASSERT_FATAL(pl_pool_new(&p, 4, NULL) == PL_OK);
    pl_pool_set_stall_backoff(p, 0);
    _Atomic int count[3];
    CU_ASSERT(check_run(p, 1, 1, count)); /* one chunk: the caller alone, no dispatch */
    CU_ASSERT(pl_pool_get_stats(p).runs == 0);
    CU_ASSERT(check_run(p, 3, 1, count)); /* threads 0..2; thread 3 is not woken */
    CU_ASSERT(check_run(p, 3, 2, count)); /* two chunks: [0,2) and [2,3) */
    CU_ASSERT(pl_pool_get_stats(p).runs == 2);
    pl_pool_free(p);
}

/* ---- work stealing ------------------------------------------------------------- */

/* A run in which thread `slow` stalls inside its first call (as if the OS had descheduled it
 * holding a claim) until another thread has run part of the slow thread's chunk: the run can
 * only finish by stealing. The stall gives up after 10 s, failing the test. */
typedef struct stall {
    visit v;
    int slow;
    int64_t c0, c1;      /* the slow thread's chunk */
    _Atomic int stalled; /* 1 once the slow thread has entered its first call */
    _Atomic int stolen;  /* calls by other threads inside [c0, c1) */
    _Atomic int gave_up;
} stall;

static void stall_fn(void *ctx, int64_t i0, int64_t i1, int thread)
{
    stall *s = ctx;
    if (thread == s->slow && atomic_exchange(&s->stalled, 1) == 0) {
        for (int i = 0; i < 200000 && atomic_load(&s->stolen) == 0; i++) {
            struct timespec ts = {0, 50 * 1000};
            nanosleep(&ts, NULL);
        }
        if (atomic_load(&s->stolen) == 0) atomic_store(&s->gave_up, 1);
    }
    visit_fn(&s->v, i0, i1, thread);
    if (thread != s->slow && i0 >= s->c0 && i1 <= s->c1) atomic_fetch_add(&s->stolen, 1);
}

static void pool_steals_the_grains_of_a_stalled_thread(void)
{
    enum { N = 1000 };
    static const int sizes[] = {2, 3, 4};
    static const int64_t grains[] = {1, 7, 64};
    _Atomic int *count = malloc(N * sizeof *count);
    CU_ASSERT_FATAL(count != NULL);
    for (size_t a = 0; a < sizeof sizes / sizeof sizes[0]; a++) {
        int size = sizes[a];
        pl_pool *p = NULL;
        CU_ASSERT_FATAL(pl_pool_new(&p, size, NULL) == PL_OK);
        pl_pool_set_stall_backoff(p, 0);
        const int slows[] = {0, 1, size - 1};
        for (size_t b = 0; b < sizeof slows / sizeof slows[0]; b++)
            for (size_t c = 0; c < sizeof grains / sizeof grains[0]; c++)
                for (int rep = 0; rep < 3; rep++) {
                    stall st;
                    memset(&st, 0, sizeof st);
                    st.v.count = count;
                    st.v.log = call_log();
                    st.v.caller = pthread_self();
                    st.slow = slows[b];
                    pl_pool_chunk(N, grains[c], size, st.slow, &st.c0, &st.c1);
                    for (int i = 0; i < N; i++) atomic_store(&count[i], 0);
                    uint64_t before = pl_pool_get_stats(p).stolen;
                    pl_pool_run(p, stall_fn, &st, N, grains[c]);
                    int stolen0 = 0;
                    int ok = check_log(p, &st.v, N, grains[c], before, &stolen0);
                    TU_CHECK(!atomic_load(&st.gave_up) && atomic_load(&st.stolen) > 0,
                             "size %d grain %" PRId64 ": thread %d stalled and nobody ran any of "
                             "its chunk [%" PRId64 ",%" PRId64 ") within 10 s",
                             size, grains[c], st.slow, st.c0, st.c1);
                    TU_CHECK(pl_pool_get_stats(p).stolen > before,
                             "size %d grain %" PRId64 " slow %d: no stolen grain counted", size,
                             grains[c], st.slow);
                    /* With two threads only the caller can have taken thread 1's grains. */
                    if (size == 2 && st.slow == 1)
                        TU_CHECK(stolen0 > 0,
                                 "size 2 grain %" PRId64 ": thread 0 ran nothing beyond its chunk",
                                 grains[c]);
                    if (!ok) {
                        fprintf(stderr, "  size %d slow %d grain %" PRId64 " rep %d\n", size,
                                st.slow, grains[c], rep);
                        break;
                    }
                }
        pl_pool_free(p);
    }
    free(count);
}

/* Items of 20 us that count their visits; thread 1's first call first sleeps 2 ms (a
 * descheduled worker). */
typedef struct nap {
    _Atomic int count[64];
    _Atomic int napped, calls;
} nap;

static void nap_fn(void *ctx, int64_t i0, int64_t i1, int thread)
{
    nap *z = ctx;
    atomic_fetch_add(&z->calls, 1);
    if (thread == 1 && !atomic_exchange(&z->napped, 1)) {
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (int64_t i = i0; i < i1; i++) {
        /* 20 us of work per item, so a worker has time to join before the caller is done */
        const uint64_t t0 = pl_clock_ns();
        while (pl_clock_ns() - t0 < 20000) continue;
        atomic_fetch_add(&z->count[i], 1);
    }
}

/* A run of 64 nap items, checked exact; 1 when thread 1 took part (and so napped 2 ms). */
static int stalled_run(pl_pool *p)
{
    nap z;
    memset(&z, 0, sizeof z);
    pl_pool_run(p, nap_fn, &z, 64, 1);
    for (int i = 0; i < 64; i++) CU_ASSERT_EQUAL(atomic_load(&z.count[i]), 1);
    return atomic_load(&z.napped);
}

/* After a run whose caller waited >= 200 us for a worker, the next runs go to the caller
 * alone (one call over everything) and are as exact; turning the back-off off ends that. */
static void pool_backs_off_to_the_caller_after_a_stall(void)
{
    pl_pool *p = NULL;
    CU_ASSERT_FATAL(pl_pool_new(&p, 2, NULL) == PL_OK);
    /* a stalled run, then at once the next (a host that deschedules this thread for the
     * whole 2 ms back-off between the two gets another try) */
    int stalled = 0, solo = 0;
    for (int attempt = 0; attempt < 100 && !solo; attempt++) {
        if (!stalled_run(p)) continue; /* thread 1 did not take part */
        stalled = 1;
        const uint64_t solo0 = pl_pool_get_stats(p).solo;
        nap z;
        memset(&z, 0, sizeof z);
        atomic_store(&z.napped, 1);
        pl_pool_run(p, nap_fn, &z, 64, 1);
        for (int i = 0; i < 64; i++) CU_ASSERT_EQUAL(atomic_load(&z.count[i]), 1);
        solo = pl_pool_get_stats(p).solo == solo0 + 1 && atomic_load(&z.calls) == 1;
    }
    TU_CHECK(stalled, "thread 1 never took part in 100 runs");
    TU_CHECK(solo, "no run after a stall was the caller's alone");
    pl_pool_set_stall_backoff(p, 0);
    const uint64_t solo1 = pl_pool_get_stats(p).solo;
    nap z;
    memset(&z, 0, sizeof z);
    pl_pool_run(p, nap_fn, &z, 64, 1);
    for (int i = 0; i < 64; i++) CU_ASSERT_EQUAL(atomic_load(&z.count[i]), 1);
    CU_ASSERT_EQUAL(pl_pool_get_stats(p).solo, solo1);
    pl_pool_free(p);
}

/* On more threads a stall benches only the worker that held the run back: in the next run it
 * makes no call while the others may share the work (and the items stay exact). */
static void pool_benches_only_the_stalled_worker(void)
{
    pl_pool *p = NULL;
    CU_ASSERT_FATAL(pl_pool_new(&p, 4, NULL) == PL_OK);
    pl_pool_set_spin_us(p, 2000); /* the stall is seen while spinning, 200 us in */
    int stalled = 0, benched = 0;
    for (int attempt = 0; attempt < 100 && !benched; attempt++) {
        if (!stalled_run(p)) continue; /* thread 1 did not take part */
        stalled = 1;
        const pl_pool_stats s0 = pl_pool_get_stats(p);
        visit v;
        memset(&v, 0, sizeof v);
        _Atomic int count[64];
        for (int i = 0; i < 64; i++) atomic_store(&count[i], 0);
        v.count = count;
        v.log = call_log();
        v.caller = pthread_self();
        pl_pool_run(p, visit_fn, &v, 64, 1);
        for (int i = 0; i < 64; i++) CU_ASSERT_EQUAL(atomic_load(&count[i]), 1);
        const pl_pool_stats s1 = pl_pool_get_stats(p);
        int thread1 = 0;
        for (int c = 0; c < atomic_load(&v.n_log); c++) thread1 |= v.log[c].thread == 1;
        benched = s1.benched + s1.solo == s0.benched + s0.solo + 1 && !thread1;
    }
    TU_CHECK(stalled, "thread 1 never took part in 100 runs");
    TU_CHECK(benched, "no run after a stall left thread 1 out");
    pl_pool_free(p);
}

/* Items of `us[i]` microseconds each: run by whoever claims them. */
typedef struct slow_items {
    int us[2];
    _Atomic int by[2];
} slow_items;

static void slow_fn(void *ctx, int64_t i0, int64_t i1, int thread)
{
    slow_items *z = ctx;
    for (int64_t i = i0; i < i1; i++) {
        const uint64_t t0 = pl_clock_ns();
        while (pl_clock_ns() - t0 < (uint64_t)z->us[i] * 1000u) continue;
        atomic_store(&z->by[i], thread);
    }
}

/* A long run's ordinary spread is no stall: the caller that ran 6 ms and then waited 1.5 ms for
 * the worker's longer item (more than 200 us, less than half its own time) does not back off
 * (prefill regions on many threads end this way; backing off there cost most of the cores). */
static void a_long_run_with_an_ordinary_spread_does_not_back_off(void)
{
    pl_pool *p = NULL;
    CU_ASSERT_FATAL(pl_pool_new(&p, 2, NULL) == PL_OK);
    pl_pool_set_spin_us(p, 20000);
    int shared = 0, kept = 0;
    for (int attempt = 0; attempt < 50 && !kept; attempt++) {
        slow_items z = {{6000, 7500}, {-1, -1}};
        const pl_pool_stats s0 = pl_pool_get_stats(p);
        pl_pool_run(p, slow_fn, &z, 2, 1);
        if (atomic_load(&z.by[0]) != 0 || atomic_load(&z.by[1]) != 1) continue; /* not shared */
        shared = 1;
        slow_items y = {{1, 1}, {-1, -1}};
        pl_pool_run(p, slow_fn, &y, 2, 1); /* would be the caller's alone after a back-off */
        const pl_pool_stats s1 = pl_pool_get_stats(p);
        kept = s1.solo == s0.solo && s1.benched == s0.benched;
    }
    TU_CHECK(shared, "the worker never took its item in 50 runs");
    TU_CHECK(kept, "every shared run with a 1.5 ms spread backed off");
    pl_pool_free(p);
}

/* A worker that wakes after the others have done its grains (a sleeping pool: spin 0, so
 * every wake is a futex wake, far slower than a run of two empty grains) must leave the job
 * alone: every run stays exact and the pool counts the late wakes. Runs until one is seen; a
 * starved worker (a busy host) may first wake after the last run, hence the wait at the end. */
static void pool_run_does_not_wait_for_a_worker_that_has_not_woken(void)
{
    pl_pool *p = NULL;
    CU_ASSERT_FATAL(pl_pool_new(&p, 2, NULL) == PL_OK);
    pl_pool_set_stall_backoff(p, 0);
    pl_pool_set_spin_us(p, 0);
    _Atomic int count[2];
    int ok = 1, k = 0;
    /* a pause after each run: a worker woken for it then finds it over and no newer run to
     * join instead (back to back, it would join the next one and never be late) */
    for (; k < 20000 && ok && pl_pool_get_stats(p).late == 0; k++) {
        ok = check_run(p, 2, 1, count);
        struct timespec ts = {0, 200 * 1000};
        nanosleep(&ts, NULL);
    }
    for (int j = 0; j < 200 && ok; j++) ok = check_run(p, 2, 1, count); /* runs after a late one */
    for (int i = 0; i < 1000 && pl_pool_get_stats(p).late == 0; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pl_pool_stats st = pl_pool_get_stats(p);
    TU_CHECK(ok, "run %d went wrong", k);
    TU_CHECK(st.late > 0, "no late worker in %d runs of a sleeping pool and 10 s after", k + 200);
    TU_CHECK(st.runs == (uint64_t)k + 200 || !ok, "%" PRIu64 " runs counted, %d made", st.runs,
             k + 200);
    pl_pool_free(p);
}

static void pool_free_and_accessors_accept_null(void)
{
    pl_pool_free(NULL);
    CU_ASSERT(pl_pool_size(NULL) == 0);
    pl_pool_run(NULL, visit_fn, NULL, 10, 1);
    CU_ASSERT(pl_pool_topology(NULL) == NULL);
    CU_ASSERT(pl_pool_binding_of(NULL, 0) == NULL);
    CU_ASSERT(pl_pool_n_bound(NULL) == 0);
    CU_ASSERT(pl_pool_get_stats(NULL).threads_created == 0);
    pl_error err;
    CU_ASSERT(pl_pool_new(NULL, 1, &err) == PL_ERR_INVALID_ARG);
    CU_ASSERT(pl_pool_bind_caller(NULL, &err) == PL_ERR_INVALID_ARG);
    size_t len = 7;
    CU_ASSERT(pl_pool_format(NULL, PL_POOL_FORMAT_TEXT, NULL, 0, &len, &err) == PL_ERR_INVALID_ARG);
    CU_ASSERT(len == 0);
    pl_pool *p = NULL;
    CU_ASSERT_FATAL(pl_pool_new(&p, 2, NULL) == PL_OK);
    pl_pool_set_stall_backoff(p, 0);
    pl_pool_run(p, NULL, NULL, 10, 1); /* no function: nothing to do */
    CU_ASSERT(pl_pool_binding_of(p, 2) == NULL && pl_pool_binding_of(p, -1) == NULL);
    pl_pool_free(p);
}

/* ---- thread counts ------------------------------------------------------------- */

static void threads_resolve_follows_request_then_env_then_default(void)
{
    int n = -5;
    pl_error err;
    CU_ASSERT(pl_pool_resolve_threads(3, "abc", 8, &n, &err) == PL_OK && n == 3);
    CU_ASSERT(pl_pool_resolve_threads(0, "5", 8, &n, &err) == PL_OK && n == 5);
    CU_ASSERT(pl_pool_resolve_threads(0, "0012", 8, &n, &err) == PL_OK && n == 12);
    CU_ASSERT(pl_pool_resolve_threads(0, NULL, 8, &n, &err) == PL_OK && n == 8);
    CU_ASSERT(pl_pool_resolve_threads(0, "", 8, &n, &err) == PL_OK && n == 8);
    CU_ASSERT(pl_pool_resolve_threads(0, NULL, 0, &n, &err) == PL_OK && n == 1);
    char max[16];
    snprintf(max, sizeof max, "%d", PL_POOL_MAX_THREADS);
    CU_ASSERT(pl_pool_resolve_threads(0, max, 8, &n, &err) == PL_OK && n == PL_POOL_MAX_THREADS);
    CU_ASSERT(pl_pool_resolve_threads(-1, NULL, 8, &n, &err) == PL_ERR_INVALID_ARG);
    CU_ASSERT(pl_pool_resolve_threads(PL_POOL_MAX_THREADS + 1, NULL, 8, &n, &err) == PL_ERR_LIMIT);
    CU_ASSERT(strstr(err.msg, "PL_POOL_MAX_THREADS") != NULL);
    CU_ASSERT(pl_pool_resolve_threads(0, NULL, 8, NULL, &err) == PL_ERR_INVALID_ARG);
}

static void threads_env_rejects_values_that_are_not_positive_integers(void)
{
    static const char *bad[] = {"0",    "-1",   "abc", "99999999999999999999",
                                "4097", " 2",   "2 ",  "+2",
                                "2x",   "0x10", "1e3", "3.0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int n = -5;
        pl_error err;
        pl_status st = pl_pool_resolve_threads(0, bad[i], 8, &n, &err);
        TU_CHECK(st == PL_ERR_CONFIG && err.code == PL_ERR_CONFIG,
                 "PLUMB_THREADS='%s': %s, want PL_ERR_CONFIG", bad[i], pl_status_str(st));
        TU_CHECK(strstr(err.msg, "PLUMB_THREADS") && strstr(err.msg, bad[i]),
                 "PLUMB_THREADS='%s': message '%s' names neither the variable nor the value",
                 bad[i], err.msg);
    }
}

static void spin_env_sets_the_budget_and_rejects_other_values(void)
{
    int us = -5;
    pl_error err;
    CU_ASSERT(pl_pool_resolve_spin(NULL, 1000, &us, &err) == PL_OK && us == 1000);
    CU_ASSERT(pl_pool_resolve_spin("", 1000, &us, &err) == PL_OK && us == 1000);
    CU_ASSERT(pl_pool_resolve_spin("0", 1000, &us, &err) == PL_OK && us == 0);
    CU_ASSERT(pl_pool_resolve_spin("250", 1000, &us, &err) == PL_OK && us == 250);
    CU_ASSERT(pl_pool_resolve_spin("1000000", 0, &us, &err) == PL_OK && us == 1000000);
    static const char *bad[] = {"-1", "abc", "1000001", "99999999999999999999", " 2", "2 ",
                                "+2", "1e3", "3.0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pl_status st = pl_pool_resolve_spin(bad[i], 1000, &us, &err);
        TU_CHECK(st == PL_ERR_CONFIG && strstr(err.msg, "PLUMB_SPIN_US") && strstr(err.msg, bad[i]),
                 "PLUMB_SPIN_US='%s': %s '%s'", bad[i], pl_status_str(st), err.msg);
    }
    const char *saved = getenv("PLUMB_SPIN_US");
    char keep[32] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    pl_pool *p = NULL;
    setenv("PLUMB_SPIN_US", "0", 1);
    CU_ASSERT(pl_pool_new(&p, 1, &err) == PL_OK && pl_pool_spin_us(p) == 0);
    pl_pool_free(p);
    p = NULL;
    setenv("PLUMB_SPIN_US", "1234", 1);
    CU_ASSERT(pl_pool_new(&p, 1, &err) == PL_OK && pl_pool_spin_us(p) == 1234);
    pl_pool_free(p);
    setenv("PLUMB_SPIN_US", "fast", 1);
    p = (pl_pool *)&err;
    pl_status st = pl_pool_new(&p, 1, &err);
    TU_CHECK(st == PL_ERR_CONFIG && p == NULL && strstr(err.msg, "PLUMB_SPIN_US='fast'"),
             "PLUMB_SPIN_US=fast: %s '%s'", pl_status_str(st), err.msg);
    if (saved)
        setenv("PLUMB_SPIN_US", keep, 1);
    else
        unsetenv("PLUMB_SPIN_US");
}

static void pool_new_reads_plumb_threads_only_for_the_default(void)
{
    int base = os_threads();
    pl_pool *p = NULL;
    pl_error err;
    setenv("PLUMB_THREADS", "3", 1);
    CU_ASSERT(pl_pool_new(&p, 0, &err) == PL_OK && pl_pool_size(p) == 3);
    pl_pool_free(p);
    setenv("PLUMB_THREADS", "abc", 1);
    p = (pl_pool *)&err; /* must be reset to NULL on failure */
    pl_status st = pl_pool_new(&p, 0, &err);
    TU_CHECK(st == PL_ERR_CONFIG && p == NULL, "PLUMB_THREADS=abc: %s", pl_status_str(st));
    TU_CHECK(strstr(err.msg, "PLUMB_THREADS='abc'") != NULL, "message: %s", err.msg);
    CU_ASSERT(pl_pool_new(&p, 2, &err) == PL_OK && pl_pool_size(p) == 2); /* explicit wins */
    pl_pool_free(p);
    setenv("PLUMB_THREADS", "-1", 1);
    CU_ASSERT(pl_pool_new(&p, 0, &err) == PL_ERR_CONFIG && p == NULL);
    setenv("PLUMB_THREADS", "99999999999999999999", 1);
    CU_ASSERT(pl_pool_new(&p, 0, &err) == PL_ERR_CONFIG && p == NULL);
    env_clear();
    CU_ASSERT(pl_pool_new(&p, 0, &err) == PL_OK);
    if (p) {
        const pl_topology *t = pl_pool_topology(p);
        TU_CHECK(pl_pool_size(p) == t->n_cores_usable, "default %d threads, %d usable cores",
                 pl_pool_size(p), t->n_cores_usable);
    }
    pl_pool_free(p);
    CU_ASSERT(pl_pool_new(&p, -1, &err) == PL_ERR_INVALID_ARG && p == NULL);
    CU_ASSERT(pl_pool_new(&p, PL_POOL_MAX_THREADS + 1, &err) == PL_ERR_LIMIT && p == NULL);
    env_restore();
    TU_CHECK(os_threads_settle(base) == base, "threads left behind");
}

/* ---- topology, binding, formatting --------------------------------------------- */

static void pool_topology_and_bindings_are_consistent(void)
{
    pl_pool *p = NULL;
    env_clear();
    CU_ASSERT_FATAL(pl_pool_new(&p, 0, NULL) == PL_OK);
    pl_pool_set_stall_backoff(p, 0);
    env_restore();
    const pl_topology *t = pl_pool_topology(p);
    TU_CHECK(t->n_cores >= t->n_cores_usable && t->n_cores_usable >= 1 &&
                 t->n_pus >= t->n_pus_usable && t->n_pus_usable >= t->n_cores_usable,
             "cores %d (%d usable), PUs %d (%d usable)", t->n_cores, t->n_cores_usable, t->n_pus,
             t->n_pus_usable);
    int size = pl_pool_size(p);
    for (int i = 0; i < size; i++) {
        const pl_pool_binding *b = pl_pool_binding_of(p, i);
        TU_CHECK(b->bound ? b->error[0] == '\0' : b->error[0] != '\0',
                 "thread %d: bound %d but error '%s'", i, b->bound, b->error);
        if (!t->error[0]) {
            TU_CHECK(b->core >= 0 && b->pu >= 0, "thread %d has no core/PU", i);
            /* One thread per physical core while there are cores. */
            for (int j = 0; j < i; j++)
                TU_CHECK(pl_pool_binding_of(p, j)->core != b->core,
                         "threads %d and %d share core %d", j, i, b->core);
        }
    }
    TU_CHECK(!pl_pool_binding_of(p, 0)->bound, "the caller's thread was bound without asking");
    char buf[4096];
    pl_pool_format(p, PL_POOL_FORMAT_TEXT, buf, sizeof buf, NULL, NULL);
    printf("\n%s", buf);
    pl_pool_free(p);
}

static int balanced_json(const char *s)
{
    int depth = 0, in_str = 0;
    for (; *s; s++) {
        if (in_str) {
            if (*s == '\\' && s[1])
                s++;
            else if (*s == '"')
                in_str = 0;
        } else if (*s == '"')
            in_str = 1;
        else if (*s == '{' || *s == '[')
            depth++;
        else if (*s == '}' || *s == ']') {
            if (--depth < 0) return 0;
        }
    }
    return depth == 0 && !in_str;
}

static void pool_format_fills_the_buffer_or_says_the_size_needed(void)
{
    pl_pool *p = NULL;
    CU_ASSERT_FATAL(pl_pool_new(&p, 3, NULL) == PL_OK);
    pl_pool_set_stall_backoff(p, 0);
    static const pl_pool_format_style styles[] = {PL_POOL_FORMAT_TEXT, PL_POOL_FORMAT_JSON};
    for (size_t s = 0; s < 2; s++) {
        size_t len = 0;
        pl_error err;
        pl_status st = pl_pool_format(p, styles[s], NULL, 0, &len, &err);
        TU_CHECK(st == PL_ERR_BUFFER_TOO_SMALL && len > 0, "size query: %s len %zu",
                 pl_status_str(st), len);
        char *buf = malloc(len + 1);
        CU_ASSERT_FATAL(buf != NULL);
        size_t len2 = 0;
        CU_ASSERT(pl_pool_format(p, styles[s], buf, len + 1, &len2, &err) == PL_OK);
        CU_ASSERT(len2 == len && strlen(buf) == len);
        if (styles[s] == PL_POOL_FORMAT_JSON) {
            TU_CHECK(buf[0] == '{' && buf[len - 1] == '}' && balanced_json(buf), "JSON: %s", buf);
            CU_ASSERT(strstr(buf, "\"threads\":[{\"thread\":0,") != NULL);
            CU_ASSERT(strstr(buf, "\"cores_usable\":") != NULL);
        } else {
            CU_ASSERT(strstr(buf, "topology:") != NULL && strstr(buf, "thread 2:") != NULL);
        }
        st = pl_pool_format(p, styles[s], buf, len, &len2, &err); /* one byte short */
        TU_CHECK(st == PL_ERR_BUFFER_TOO_SMALL && strlen(buf) == len - 1 && len2 == len,
                 "truncation: %s strlen %zu len %zu", pl_status_str(st), strlen(buf), len);
        char need[32];
        snprintf(need, sizeof need, "%zu bytes", len + 1);
        TU_CHECK(strstr(err.msg, need) != NULL, "message '%s' does not say '%s'", err.msg, need);
        free(buf);
    }
    char one[1] = {'x'};
    CU_ASSERT(pl_pool_format(p, PL_POOL_FORMAT_JSON, one, 1, NULL, NULL) ==
              PL_ERR_BUFFER_TOO_SMALL);
    CU_ASSERT(one[0] == '\0');
    CU_ASSERT(pl_pool_format(p, (pl_pool_format_style)7, one, 1, NULL, NULL) == PL_ERR_INVALID_ARG);
    pl_pool_free(p);
}

/* ---- allocation failure -------------------------------------------------------- */

static void pool_new_fails_cleanly_at_every_allocation(void)
{
    for (int persistent = 0; persistent <= 1; persistent++) {
        int covered = 0;
        for (uint64_t n = 1; n < 200; n++) {
            int base = os_threads();
            pl_pool *p = (pl_pool *)&n;
            pl_error err;
            tu_alloc_fail_at(n, persistent);
            pl_status st = pl_pool_new(&p, 4, &err);
            uint64_t failed = tu_alloc_failed();
            tu_alloc_reset();
            if (failed == 0) { /* past the last allocation: it must simply work */
                TU_CHECK(st == PL_OK, "allocation %" PRIu64 " not failed, yet %s", n,
                         pl_status_str(st));
                pl_pool_free(p);
                covered = 1;
                break;
            }
            TU_CHECK(st == PL_ERR_NOMEM && err.code == PL_ERR_NOMEM && p == NULL,
                     "allocation %" PRIu64 " (persistent %d) failed: got %s, pool %p", n,
                     persistent, pl_status_str(st), (void *)p);
            int left = os_threads_settle(base);
            TU_CHECK(left == base, "allocation %" PRIu64 " failed: %d threads left, %d before", n,
                     left, base);
        }
        TU_CHECK(covered, "pl_pool_new still allocating after 200 allocations");
    }
}

/* ---- child processes: binding refused, restricted affinity, caller binding ------ */

/* These run in a fresh process (fork + exec of this binary) because they change what the
 * whole process may do: a seccomp filter, the affinity mask, the caller's pin. */

static int child_failures;
#define CHILD_CHECK(cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  child FAIL %s:%d: ", __FILE__, __LINE__);                           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            child_failures++;                                                                      \
        }                                                                                          \
    } while (0)

/* The calling thread's affinity mask (raw syscall: no _GNU_SOURCE in tests). */
typedef struct cpu_mask {
    unsigned long bits[16];
} cpu_mask;

static int get_mask(cpu_mask *m)
{
    memset(m, 0, sizeof *m);
    return syscall(SYS_sched_getaffinity, 0, sizeof m->bits, m->bits) > 0;
}

static int mask_count(const cpu_mask *m, int *last)
{
    int n = 0;
    for (int i = 0; i < (int)(sizeof m->bits * 8); i++)
        if (m->bits[i / (8 * sizeof m->bits[0])] >> (i % (8 * sizeof m->bits[0])) & 1) {
            n++;
            *last = i;
        }
    return n;
}

static int child_runs_ok(pl_pool *p)
{
    enum { N = 1000 };
    static _Atomic int count[N];
    visit v;
    memset(&v, 0, sizeof v);
    v.count = count;
    for (int k = 0; k < 100; k++) {
        for (int i = 0; i < N; i++) atomic_store(&count[i], 0);
        pl_pool_run(p, visit_fn, &v, N, 7);
        for (int i = 0; i < N; i++)
            if (atomic_load(&count[i]) != 1) return 0;
    }
    return 1;
}

/* sched_setaffinity fails with EPERM, as under a restrictive container profile. */
static int child_binding_refused(void)
{
    pl_pool *p = NULL;
    pl_error err;
    pl_status st = pl_pool_new(&p, 2, &err);
    CHILD_CHECK(st == PL_OK, "pl_pool_new with binding refused: %s %s", pl_status_str(st), err.msg);
    if (st != PL_OK) return 1;
    const pl_pool_binding *b = pl_pool_binding_of(p, 1);
    const char *eperm = strerror(EPERM);
    if (pl_pool_topology(p)->error[0] == '\0') {
        CHILD_CHECK(!b->bound && strstr(b->error, eperm), "worker 1: bound %d error '%s'", b->bound,
                    b->error);
        CHILD_CHECK(pl_pool_bind_caller(p, &err) == PL_OK, "bind_caller failed");
        b = pl_pool_binding_of(p, 0);
        CHILD_CHECK(!b->bound && strstr(b->error, eperm), "caller: bound %d error '%s'", b->bound,
                    b->error);
    }
    CHILD_CHECK(pl_pool_n_bound(p) == 0, "%d threads bound", pl_pool_n_bound(p));
    CHILD_CHECK(child_runs_ok(p), "runs went wrong with binding refused");
    char buf[2048];
    pl_pool_format(p, PL_POOL_FORMAT_TEXT, buf, sizeof buf, NULL, NULL);
    CHILD_CHECK(strstr(buf, "not bound") != NULL, "report does not say 'not bound': %s", buf);
    printf("%s", buf);
    pl_pool_free(p);
    return child_failures != 0;
}

/* The process may run on one CPU only (taskset -c N): the default is one thread, and a pool
 * asked for more stacks them on that CPU with spinning off. */
static int child_one_cpu(void)
{
    cpu_mask m;
    CHILD_CHECK(get_mask(&m), "sched_getaffinity failed");
    int cpu = -1;
    for (int i = 0; i < (int)(sizeof m.bits * 8) && cpu < 0; i++)
        if (m.bits[i / (8 * sizeof m.bits[0])] >> (i % (8 * sizeof m.bits[0])) & 1) cpu = i;
    if (cpu < 0) return 1;
    memset(&m, 0, sizeof m);
    m.bits[cpu / (8 * sizeof m.bits[0])] = 1ul << (cpu % (8 * sizeof m.bits[0]));
    CHILD_CHECK(syscall(SYS_sched_setaffinity, 0, sizeof m.bits, m.bits) == 0,
                "sched_setaffinity(%d) failed", cpu);
    unsetenv("PLUMB_THREADS");
    pl_pool *p = NULL;
    pl_error err;
    CHILD_CHECK(pl_pool_new(&p, 0, &err) == PL_OK, "default pool: %s", err.msg);
    if (!p) return 1;
    const pl_topology *t = pl_pool_topology(p);
    if (t->error[0] == '\0') {
        CHILD_CHECK(t->n_cores_usable == 1 && t->n_pus_usable == 1,
                    "one CPU allowed, yet %d cores / %d PUs usable", t->n_cores_usable,
                    t->n_pus_usable);
        CHILD_CHECK(pl_pool_size(p) == 1, "default size %d on one CPU", pl_pool_size(p));
    }
    pl_pool_free(p);
    CHILD_CHECK(pl_pool_new(&p, 3, &err) == PL_OK, "3 threads on one CPU: %s", err.msg);
    if (!p) return 1;
    CHILD_CHECK(pl_pool_spin_us(p) == 0, "spinning with 3 threads on one CPU");
    if (pl_pool_topology(p)->error[0] == '\0')
        for (int i = 1; i < 3; i++) {
            const pl_pool_binding *b = pl_pool_binding_of(p, i);
            CHILD_CHECK(b->pu == cpu, "worker %d meant for PU %d, only %d allowed", i, b->pu, cpu);
        }
    CHILD_CHECK(child_runs_ok(p), "runs went wrong on one CPU");
    pl_pool_free(p);
    return child_failures != 0;
}

/* pl_pool_bind_caller pins the calling thread to thread 0's PU, or records why not; freeing
 * the pool on that thread restores its mask. */
static int child_bind_caller(void)
{
    cpu_mask before, during, after;
    CHILD_CHECK(get_mask(&before), "sched_getaffinity failed");
    pl_pool *p = NULL;
    pl_error err;
    CHILD_CHECK(pl_pool_new(&p, 2, &err) == PL_OK, "pl_pool_new: %s", err.msg);
    if (!p) return 1;
    CHILD_CHECK(pl_pool_bind_caller(p, &err) == PL_OK, "bind_caller: %s", err.msg);
    CHILD_CHECK(pl_pool_bind_caller(p, &err) == PL_OK, "bind_caller again: %s", err.msg);
    const pl_pool_binding *b = pl_pool_binding_of(p, 0);
    CHILD_CHECK(b->bound ? b->error[0] == '\0' : b->error[0] != '\0', "caller: bound %d error '%s'",
                b->bound, b->error);
    int bound = b->bound, last = -1;
    if (bound) {
        CHILD_CHECK(get_mask(&during), "sched_getaffinity failed");
        int n = mask_count(&during, &last);
        CHILD_CHECK(n == 1 && last == b->pu, "caller bound to PU %d, mask has %d CPUs (last %d)",
                    b->pu, n, last);
    }
    CHILD_CHECK(child_runs_ok(p), "runs went wrong after binding the caller");
    pl_pool_free(p);
    CHILD_CHECK(get_mask(&after), "sched_getaffinity failed");
    CHILD_CHECK(memcmp(&before, &after, sizeof before) == 0,
                "the caller's mask was not restored by pl_pool_free (%d CPUs before, %d after)",
                mask_count(&before, &last), mask_count(&after, &last));
    return child_failures != 0;
}

static const char *self_path;

/* Forks, optionally installs a seccomp filter that makes sched_setaffinity fail with EPERM,
 * and re-executes this binary in `mode`; returns the child's exit status (-1: not run). */
static int run_child(const char *mode, int refuse_affinity)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (refuse_affinity) {
            struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sched_setaffinity, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            };
            struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
            if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
                prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
                _exit(77);
        }
        execl(self_path, self_path, mode, (char *)NULL);
        _exit(78);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void child_result(const char *mode, int rc)
{
    if (rc == 77) {
        printf("\n  note: seccomp unavailable here; '%s' not exercised\n", mode);
        return;
    }
    TU_CHECK(rc == 0, "child '%s' exited with %d", mode, rc);
}

static void pool_records_refused_binding_instead_of_failing(void)
{
    child_result("--child-binding-refused", run_child("--child-binding-refused", 1));
}

static void pool_default_respects_the_process_affinity_mask(void)
{
    child_result("--child-one-cpu", run_child("--child-one-cpu", 0));
}

static void pool_bind_caller_pins_the_caller_until_free(void)
{
    child_result("--child-bind-caller", run_child("--child-bind-caller", 0));
}

int main(int argc, char **argv)
{
    self_path = "/proc/self/exe";
    if (argc == 2 && strcmp(argv[1], "--child-binding-refused") == 0)
        return child_binding_refused();
    if (argc == 2 && strcmp(argv[1], "--child-one-cpu") == 0) return child_one_cpu();
    if (argc == 2 && strcmp(argv[1], "--child-bind-caller") == 0) return child_bind_caller();
    const char *env = getenv("PLUMB_THREADS");
    saved_env = env ? strdup(env) : NULL;
    static const tu_test tests[] = {
        {"pool_split_is_pure_contiguous_balanced_and_grain_aligned",
         pool_split_is_pure_contiguous_balanced_and_grain_aligned},
        {"pool_run_visits_every_index_exactly_once", pool_run_visits_every_index_exactly_once},
        {"pool_runs_correctly_on_both_the_spin_and_the_sleep_path",
         pool_runs_correctly_on_both_the_spin_and_the_sleep_path},
        {"pool_reuses_its_workers_across_10000_runs", pool_reuses_its_workers_across_10000_runs},
        {"pool_of_one_runs_everything_on_the_caller", pool_of_one_runs_everything_on_the_caller},
        {"pool_run_with_fewer_items_than_threads_wakes_only_whom_it_needs",
         pool_run_with_fewer_items_than_threads_wakes_only_whom_it_needs},
        {"pool_steals_the_grains_of_a_stalled_thread", pool_steals_the_grains_of_a_stalled_thread},
        {"pool_backs_off_to_the_caller_after_a_stall", pool_backs_off_to_the_caller_after_a_stall},
        {"pool_benches_only_the_stalled_worker", pool_benches_only_the_stalled_worker},
        {"a_long_run_with_an_ordinary_spread_does_not_back_off",
         a_long_run_with_an_ordinary_spread_does_not_back_off},
        {"pool_run_does_not_wait_for_a_worker_that_has_not_woken",
         pool_run_does_not_wait_for_a_worker_that_has_not_woken},
        {"pool_free_and_accessors_accept_null", pool_free_and_accessors_accept_null},
        {"threads_resolve_follows_request_then_env_then_default",
         threads_resolve_follows_request_then_env_then_default},
        {"threads_env_rejects_values_that_are_not_positive_integers",
         threads_env_rejects_values_that_are_not_positive_integers},
        {"pool_new_reads_plumb_threads_only_for_the_default",
         pool_new_reads_plumb_threads_only_for_the_default},
        {"spin_env_sets_the_budget_and_rejects_other_values",
         spin_env_sets_the_budget_and_rejects_other_values},
        {"pool_topology_and_bindings_are_consistent", pool_topology_and_bindings_are_consistent},
        {"pool_format_fills_the_buffer_or_says_the_size_needed",
         pool_format_fills_the_buffer_or_says_the_size_needed},
        {"pool_new_fails_cleanly_at_every_allocation", pool_new_fails_cleanly_at_every_allocation},
        {"pool_records_refused_binding_instead_of_failing",
         pool_records_refused_binding_instead_of_failing},
        {"pool_default_respects_the_process_affinity_mask",
         pool_default_respects_the_process_affinity_mask},
        {"pool_bind_caller_pins_the_caller_until_free",
         pool_bind_caller_pins_the_caller_until_free},
        {NULL, NULL},
    };
    int rc = tu_run("threads", tests);
    free(saved_env);
    return rc;
}
