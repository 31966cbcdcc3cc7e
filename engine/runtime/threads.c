/* threads.c — hwloc-aware thread pool: workers pinned one per physical core, woken by a
 * generation counter (spin, then condition variable), sharing each run's grains by work
 * stealing. The only file that touches hwloc. */
#define _GNU_SOURCE /* pthread_setname_np; GNU strerror_r */

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if PLUMB_HAVE_HWLOC
#include <hwloc.h>
#else
/* Built without hwloc (the wasm build): no topology and no pinning; the pool runs unbound,
 * its topology error says why, and no hwloc call is compiled. */
typedef void *hwloc_topology_t;
typedef void *hwloc_bitmap_t;
#endif

#include "core/core.h"
#include "threads.h"

/* Hot shared words sit on their own lines; 128 bytes because x86 prefetches line pairs. */
#define POOL_LINE 128

/* pool->ctrl: the run generation in the high 32 bits, in the low 32 one past the highest thread
 * taking part in the run (threads from there on need not join). Workers wait for it to change;
 * it changes once per run. */
#define CTRL_ACTIVE(c) ((int)((c)&0xffffffffu))
#define CTRL_GEN(c)    ((uint32_t)((c) >> 32))

/* pool->state: who is inside the current run. The run generation in the high 32 bits, CLOSED
 * once the caller has seen every grain claimed, and in the low bits the workers that joined
 * and have not left. A worker joins only an open run of the generation it was woken for, so
 * the caller waits for the workers that joined, never for one that is not scheduled yet. */
#define STATE_CLOSED  (UINT64_C(1) << 31)
#define STATE_REFS(s) ((s) & (STATE_CLOSED - 1))
#define STATE_OPEN(g) ((uint64_t)(g) << 32)

/* One thread's share of a run: grains [first, first + count) of the initial split, handed out
 * from the front through `next` (which may overshoot count). The owner and thieves claim
 * through the same cursor; one line each, as the owner claims several times per run. */
typedef struct lane {
    _Alignas(POOL_LINE) _Atomic uint64_t next;
    int64_t first;
    uint64_t count;
} lane;

/* Where thread t is meant to run: an hwloc core (logical index) and one PU in it (OS index). */
typedef struct slot {
    int core;
    int pu;
} slot;

typedef struct worker {
    pl_pool *pool;
    int index;
    pthread_t tid;
    _Atomic uint64_t sleeps, stolen, late;
    _Atomic int inside;     /* 1 from joining a run to leaving it */
    uint64_t benched_until; /* caller-only: runs before this time leave this worker out */
} worker;

struct pl_pool {
    /* Written by the caller once per run, read by every worker: the control word, and the job
     * it publishes (stored before ctrl with release, read after loading ctrl with acquire). */
    _Alignas(POOL_LINE) _Atomic uint64_t ctrl;
    pl_pool_fn job_fn;
    void *job_ctx;
    int64_t job_n, job_grain, job_grains;
    int job_active; /* lanes in the run */
    lane *lanes;    /* [size]; lanes[k] written by the caller before a run, claimed during it */
    int *lane_of;   /* [size]; thread t's lane in this run, -1: it takes no part (caller-written
                       before the run is published, read by a worker only once it has joined) */
    _Atomic int stop;
    _Atomic int spin_us;
    int size;     /* threads, caller included; fixed at creation */
    uint32_t gen; /* run generation; caller-only, like runs */
    uint64_t runs;
    /* Stall back-off (caller-only): a worker that stalled a run is left out of the runs until
     * its benched_until; bench_ns is the current period, n_benched how many are out. */
    uint64_t bench_ns, last_stall, solo_runs, benched_runs;
    int n_benched;
    int backoff;               /* 1: back off after stalls (the default) */
    uint64_t work_ns, wait_ns; /* caller: time running grains, time waiting for workers */
    /* Who is inside the current run (STATE_*); every worker joins with a CAS and leaves. */
    _Alignas(POOL_LINE) _Atomic uint64_t state;
    /* Sleep path: who is blocked on the condition variables. */
    _Alignas(POOL_LINE) _Atomic int sleepers;
    _Atomic int caller_waiting;
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* workers wait here for ctrl to change */
    pthread_cond_t cv_done; /* the caller waits here for no refs in state (and startup) */
    int sync_init;          /* 1 once mu and both condvars are initialized */

    /* Cold: set up by pl_pool_new, read by queries. */
    int n_created;         /* workers with a live thread */
    int n_ready;           /* workers done binding themselves (under mu) */
    worker **workers;      /* [size]; [0] unused (the caller) */
    pl_pool_binding *bind; /* [size] */
    uint64_t threads_created;
    _Atomic uint64_t caller_sleeps, caller_stolen;

    pl_topology topo;
    hwloc_topology_t hw; /* the process's (machine, below); NULL when hwloc could not describe it */
    slot *slots;         /* usable PUs, one per core first, then SMT siblings */
    int n_slots;
    /* pl_pool_bind_caller: the thread it pinned and that thread's affinity before. */
    hwloc_bitmap_t caller_saved;
    pthread_t caller_tid;
    int caller_pinned;
};

/* ---- small helpers ------------------------------------------------------------- */

static const char *errstr(int e, char *buf, size_t n)
{
#if defined(__GLIBC__)
    return strerror_r(e, buf, n); /* the GNU variant under _GNU_SOURCE */
#else
    return strerror_r(e, buf, n) == 0 ? buf : "unknown error";
#endif
}

/* pl_malloc'd memory aligned to POOL_LINE; the raw pointer sits just below the block. */
static void *alloc_lines(size_t size)
{
    void *raw = pl_malloc(size + POOL_LINE + sizeof(void *));
    if (!raw) return NULL;
    uintptr_t a = ((uintptr_t)raw + sizeof(void *) + POOL_LINE - 1) & ~(uintptr_t)(POOL_LINE - 1);
    ((void **)a)[-1] = raw;
    memset((void *)a, 0, size);
    return (void *)a;
}

static void free_lines(void *p)
{
    if (p) pl_free(((void **)p)[-1]);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

/* Spin-wait pacing: pause between checks until the budget is spent. The clock is read every
 * 32 pauses, so a quick arrival costs no clock reads. No sched_yield phase: measured on a loaded
 * host it turned every wait into a lost time slice (perf/NOTES.md); oversubscribed pools do not
 * spin at all instead. */
typedef struct spinner {
    unsigned i;
    uint64_t budget_ns, deadline; /* deadline: 0 until the clock is first read */
} spinner;

static spinner spinner_start(int spin_us)
{
    spinner s = {0, (uint64_t)spin_us * 1000u, 0};
    return s;
}

/* One wait step; 0 once the budget is spent. */
static int spinner_step(spinner *s)
{
    cpu_relax();
    if ((++s->i & 31) != 0) return 1;
    uint64_t t = pl_clock_ns();
    if (s->deadline == 0) s->deadline = t + s->budget_ns;
    return t < s->deadline;
}

/* Spins until *word != seen (returns the new value) or the budget is spent (returns seen). */
static uint64_t spin_until_changed(_Atomic uint64_t *word, uint64_t seen, int spin_us)
{
    spinner s = spinner_start(spin_us);
    do {
        uint64_t c = atomic_load_explicit(word, memory_order_acquire);
        if (c != seen) return c;
    } while (spinner_step(&s));
    return seen;
}

/* ---- the split and the thread count -------------------------------------------- */

/* Grains [*first, *first + *count) of g dealt over size threads: thread t gets the t-th
 * contiguous share, the first g % size threads one grain more. */
static void deal(int64_t g, int size, int thread, int64_t *first, int64_t *count)
{
    int64_t q = g / size, r = g % size;
    *first = thread * q + (thread < r ? thread : r);
    *count = q + (thread < r);
}

void pl_pool_chunk(int64_t n, int64_t grain, int size, int thread, int64_t *i0, int64_t *i1)
{
    *i0 = *i1 = 0;
    if (n <= 0 || size < 1 || thread < 0 || thread >= size) return;
    if (grain < 1) grain = 1;
    int64_t g = (n - 1) / grain + 1; /* grains; no overflow for any n, grain */
    int64_t first, count;
    deal(g, size, thread, &first, &count);
    if (count == 0) return;
    /* first < g, so first * grain < n; the end grain may overshoot n, hence the clamp. */
    *i0 = first * grain;
    *i1 = (first + count == g) ? n : (first + count) * grain;
}

pl_status pl_pool_resolve_threads(int n_threads, const char *env_value, int default_threads,
                                  int *out, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = 0;
    if (n_threads < 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "n_threads = %d is negative (0 selects the default)", n_threads);
    if (n_threads > PL_POOL_MAX_THREADS)
        return pl_fail(err, PL_ERR_LIMIT, "n_threads = %d exceeds PL_POOL_MAX_THREADS (%d)",
                       n_threads, PL_POOL_MAX_THREADS);
    if (n_threads > 0) {
        *out = n_threads;
        return pl_ok(err);
    }
    if (env_value && env_value[0]) {
        long v = 0;
        const char *s = env_value;
        for (; *s >= '0' && *s <= '9'; s++) {
            v = v * 10 + (*s - '0');
            if (v > PL_POOL_MAX_THREADS) break;
        }
        if (v > PL_POOL_MAX_THREADS)
            return pl_fail(err, PL_ERR_CONFIG,
                           "PLUMB_THREADS='%.64s' exceeds the limit of %d threads", env_value,
                           PL_POOL_MAX_THREADS);
        if (*s != '\0' || v < 1)
            return pl_fail(err, PL_ERR_CONFIG,
                           "PLUMB_THREADS='%.64s' is not a positive integer (expected 1..%d)",
                           env_value, PL_POOL_MAX_THREADS);
        *out = (int)v;
        return pl_ok(err);
    }
    if (default_threads < 1) default_threads = 1;
    if (default_threads > PL_POOL_MAX_THREADS) default_threads = PL_POOL_MAX_THREADS;
    *out = default_threads;
    return pl_ok(err);
}

pl_status pl_pool_resolve_spin(const char *env_value, int default_us, int *out, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = default_us;
    if (!env_value || !env_value[0]) return pl_ok(err);
    long v = 0;
    const char *s = env_value;
    for (; *s >= '0' && *s <= '9' && v <= PL_POOL_MAX_SPIN_US; s++) v = v * 10 + (*s - '0');
    if (*s != '\0' || v > PL_POOL_MAX_SPIN_US)
        return pl_fail(err, PL_ERR_CONFIG,
                       "PLUMB_SPIN_US='%.64s' is not an integer from 0 to %d (microseconds)",
                       env_value, PL_POOL_MAX_SPIN_US);
    *out = (int)v;
    return pl_ok(err);
}

/* ---- topology ------------------------------------------------------------------ */

static void topology_fallback(pl_pool *p, const char *what, int e)
{
    char eb[96];
    p->hw = NULL;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > PL_POOL_MAX_THREADS) n = PL_POOL_MAX_THREADS;
    pl_topology *t = &p->topo;
    memset(t, 0, sizeof *t);
    t->n_cores = t->n_cores_usable = t->n_pus = t->n_pus_usable = (int)n;
    snprintf(t->error, sizeof t->error, "%s failed: %s; no thread is bound", what,
             errstr(e, eb, sizeof eb));
}

#if PLUMB_HAVE_HWLOC
/* The machine's topology, loaded once per process and only read after (hwloc allows concurrent
 * readers): every pool shares it. Loading it is ~100 file reads under /sys, 3.4 ms on the
 * 2-core VM, which each session paid when each pool loaded its own. Never freed: it describes
 * the machine for as long as the process runs. */
static struct {
    hwloc_topology_t hw; /* NULL: loading failed (what, err say why) */
    const char *what;
    int err;
} machine;
static pthread_once_t machine_once = PTHREAD_ONCE_INIT;

static void machine_load(void)
{
    hwloc_topology_t hw;
    if (hwloc_topology_init(&hw) != 0) {
        machine.what = "hwloc_topology_init", machine.err = errno;
        return;
    }
    if (hwloc_topology_load(hw) != 0) {
        machine.what = "hwloc_topology_load", machine.err = errno;
        hwloc_topology_destroy(hw);
        return;
    }
    machine.hw = hw;
}
#endif

/* Fills p->topo and p->slots. Only our own allocation failing is an error; hwloc failing
 * leaves the pool working, unbound, with the reason in topo.error. */
static pl_status topology_discover(pl_pool *p, pl_error *err)
{
#if !PLUMB_HAVE_HWLOC
    topology_fallback(p, "topology discovery (plumb built without hwloc)", ENOSYS);
    return pl_ok(err);
#else
    pthread_once(&machine_once, machine_load);
    if (!machine.hw) {
        topology_fallback(p, machine.what, machine.err);
        return pl_ok(err);
    }
    hwloc_topology_t hw = p->hw = machine.hw;
    hwloc_bitmap_t usable = hwloc_bitmap_alloc(), tmp = hwloc_bitmap_alloc();
    if (!usable || !tmp) {
        hwloc_bitmap_free(usable);
        hwloc_bitmap_free(tmp);
        topology_fallback(p, "hwloc_bitmap_alloc", ENOMEM);
        return pl_ok(err);
    }
    /* Usable = allowed by hwloc (cgroup cpuset) and by the process affinity (taskset). */
    hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(hw);
    if (hwloc_get_cpubind(hw, usable, HWLOC_CPUBIND_PROCESS) != 0)
        hwloc_bitmap_copy(usable, allowed);
    hwloc_bitmap_and(usable, usable, allowed);
    if (hwloc_bitmap_iszero(usable)) hwloc_bitmap_copy(usable, allowed);

    pl_topology *t = &p->topo;
    t->n_packages = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PACKAGE);
    t->n_pus = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU);
    t->n_numa = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE);
    t->n_l3 = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_L3CACHE);
    if (t->n_l3 > 0)
        t->l3_bytes = hwloc_get_obj_by_type(hw, HWLOC_OBJ_L3CACHE, 0)->attr->cache.size;
    hwloc_obj_t pkg = hwloc_get_obj_by_type(hw, HWLOC_OBJ_PACKAGE, 0);
    const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
    if (model) {
        snprintf(t->cpu_model, sizeof t->cpu_model, "%s", model);
        size_t m = strlen(t->cpu_model); /* firmware pads model strings with spaces */
        while (m > 0 && t->cpu_model[m - 1] == ' ') t->cpu_model[--m] = '\0';
    }

    /* Some platforms expose no Core objects: then every PU counts as a core. */
    hwloc_obj_type_t ctype =
        hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int n_cores = hwloc_get_nbobjs_by_type(hw, ctype);
    t->n_cores = n_cores;
    int max_per_core = 0, n_slots = 0;
    for (int c = 0; c < n_cores; c++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(hw, ctype, (unsigned)c);
        hwloc_bitmap_and(tmp, core->cpuset, usable);
        int w = hwloc_bitmap_weight(tmp);
        if (w <= 0) continue;
        t->n_cores_usable++;
        n_slots += w;
        if (w > max_per_core) max_per_core = w;
    }
    t->n_pus_usable = n_slots;
    pl_status st = PL_OK;
    if (n_slots == 0) {
        hwloc_bitmap_free(usable);
        hwloc_bitmap_free(tmp);
        topology_fallback(p, "finding a usable core", ENODEV);
        return pl_ok(err);
    }
    p->slots = pl_malloc((size_t)n_slots * sizeof *p->slots);
    if (!p->slots) {
        st = pl_fail(err, PL_ERR_NOMEM, "thread pool: cannot allocate %d topology slots", n_slots);
    } else {
        /* Round r takes the r-th usable PU of every core: one PU per core comes first, SMT
         * siblings only once every core has a thread. */
        for (int r = 0; r < max_per_core; r++) {
            for (int c = 0; c < n_cores; c++) {
                hwloc_obj_t core = hwloc_get_obj_by_type(hw, ctype, (unsigned)c);
                hwloc_bitmap_and(tmp, core->cpuset, usable);
                int pu = hwloc_bitmap_first(tmp);
                for (int k = 0; k < r && pu >= 0; k++) pu = hwloc_bitmap_next(tmp, pu);
                if (pu < 0) continue;
                p->slots[p->n_slots].core = (int)core->logical_index;
                p->slots[p->n_slots].pu = pu;
                p->n_slots++;
            }
        }
    }
    hwloc_bitmap_free(usable);
    hwloc_bitmap_free(tmp);
    return st;
#endif
}

static const slot *slot_for(const pl_pool *p, int thread)
{
    return p->n_slots > 0 ? &p->slots[thread % p->n_slots] : NULL;
}

/* Pins the calling thread to slot s and records the outcome. Every thread binds itself rather
 * than being bound by its creator (hwloc_set_thread_cpubind): that needs only
 * sched_setaffinity on the caller, which works even where a statically linked hwloc has no
 * pthread_setaffinity_np and answers ENOSYS. */
static void bind_self(pl_pool *p, pl_pool_binding *b, const slot *s)
{
    b->bound = 0;
    b->core = s ? s->core : -1;
    b->pu = s ? s->pu : -1;
    b->error[0] = '\0';
    if (!p->hw || !s) {
        snprintf(b->error, sizeof b->error, "%s", p->topo.error[0] ? p->topo.error : "no topology");
        return;
    }
#if PLUMB_HAVE_HWLOC
    char eb[96];
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) {
        snprintf(b->error, sizeof b->error, "hwloc_bitmap_alloc failed");
        return;
    }
    hwloc_bitmap_only(set, (unsigned)s->pu);
    int rc = hwloc_set_cpubind(p->hw, set, HWLOC_CPUBIND_THREAD);
    int e = errno;
    hwloc_bitmap_free(set);
    if (rc == 0)
        b->bound = 1;
    else
        snprintf(b->error, sizeof b->error, "hwloc_set_cpubind(PU %d): %s", s->pu,
                 errstr(e, eb, sizeof eb));
#endif
}

/* ---- workers ------------------------------------------------------------------- */

/* Waits until ctrl differs from `seen`: spin first, then sleep on cv_work. */
static uint64_t await_run(pl_pool *p, worker *w, uint64_t seen)
{
    int spin = atomic_load_explicit(&p->spin_us, memory_order_relaxed);
    uint64_t c = spin > 0 ? spin_until_changed(&p->ctrl, seen, spin) : seen;
    if (c != seen) return c;
    pthread_mutex_lock(&p->mu);
    /* seq_cst pairs with the caller's store to ctrl then load of sleepers: either the caller
     * sees us here and broadcasts under the mutex, or we see its new ctrl before waiting. */
    atomic_fetch_add(&p->sleepers, 1);
    while ((c = atomic_load(&p->ctrl)) == seen) pthread_cond_wait(&p->cv_work, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_add_explicit(&w->sleeps, 1, memory_order_relaxed);
    return c;
}

/* Claims grains from lane L: half of what is unclaimed there, at least one. Halving keeps the
 * quiet case at a few calls per thread (kernels amortise per-call set-up over the rows of a
 * call), while a thread that stalls holds at most half of its unclaimed rest, the other half
 * being left to thieves. Returns the number claimed (0: the lane is exhausted) and the first
 * in *at (an index into the lane). */
static uint64_t claim(lane *L, uint64_t count, uint64_t *at)
{
    uint64_t cur = atomic_load_explicit(&L->next, memory_order_relaxed);
    for (;;) {
        if (cur >= count) return 0;
        uint64_t k = (count - cur) / 2;
        if (k == 0) k = 1;
        if (atomic_compare_exchange_weak_explicit(&L->next, &cur, cur + k, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *at = cur;
            return k;
        }
    }
}

/* Thread t's part of the run: its own lane first, then the other lanes in the order own + 1,
 * own + 2, ... (so thieves spread over victims). Returns the grains it ran from other lanes. */
static uint64_t run_grains(pl_pool *p, int t, int own, int active)
{
    const pl_pool_fn fn = p->job_fn;
    void *const ctx = p->job_ctx;
    const int64_t n = p->job_n, grain = p->job_grain, grains = p->job_grains;
    uint64_t stolen = 0;
    for (int k = 0, v = own; k < active; k++, v = v + 1 == active ? 0 : v + 1) {
        lane *L = &p->lanes[v];
        const uint64_t count = L->count;
        uint64_t at, got;
        while ((got = claim(L, count, &at)) > 0) {
            const int64_t g0 = L->first + (int64_t)at, g1 = g0 + (int64_t)got;
            /* g1 < grains implies g1 * grain < n: no overflow. */
            fn(ctx, g0 * grain, g1 == grains ? n : g1 * grain, t);
            if (k > 0) stolen += got;
        }
    }
    return stolen;
}

/* Enters the run of generation gen unless it is over (or another one has begun). */
static int join_run(pl_pool *p, uint32_t gen)
{
    uint64_t s = atomic_load(&p->state);
    for (;;) {
        if ((uint32_t)(s >> 32) != gen || (s & STATE_CLOSED)) return 0;
        if (atomic_compare_exchange_weak(&p->state, &s, s + 1)) return 1;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pl_pool *p = w->pool;
    const int t = w->index;
    bind_self(p, &p->bind[t], slot_for(p, t));
    pthread_mutex_lock(&p->mu);
    p->n_ready++;
    pthread_cond_broadcast(&p->cv_done);
    pthread_mutex_unlock(&p->mu);
    uint64_t seen = 0; /* workers start before the first run is published */
    for (;;) {
        seen = await_run(p, w, seen);
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) break;
        /* A worker that comes too late (the others already ran its grains) must not touch the
         * job: the caller may be writing the next one. Once joined, the run cannot end before
         * it leaves, so its lane (or none: a benched worker, one beyond the grains) is stable. */
        if (t >= CTRL_ACTIVE(seen)) continue;
        if (!join_run(p, CTRL_GEN(seen))) {
            atomic_fetch_add_explicit(&w->late, 1, memory_order_relaxed);
            continue;
        }
        const int own = p->lane_of[t];
        if (own >= 0) {
            atomic_store_explicit(&w->inside, 1, memory_order_relaxed);
            uint64_t stolen = run_grains(p, t, own, p->job_active);
            if (stolen) atomic_fetch_add_explicit(&w->stolen, stolen, memory_order_relaxed);
            atomic_store_explicit(&w->inside, 0, memory_order_relaxed);
        }
        /* seq_cst pairs with the caller's store to caller_waiting then load of state. */
        uint64_t s = atomic_fetch_sub(&p->state, 1);
        if (STATE_REFS(s) == 1 && (s & STATE_CLOSED) && atomic_load(&p->caller_waiting)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->cv_done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

/* Stores the new control word (p->gen already advanced) and wakes sleeping workers. */
static void publish(pl_pool *p, int active)
{
    atomic_store(&p->ctrl, ((uint64_t)p->gen << 32) | (uint32_t)active);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv_work);
        pthread_mutex_unlock(&p->mu);
    }
}

static void stop_workers(pl_pool *p)
{
    if (p->n_created == 0) return;
    atomic_store(&p->stop, 1);
    p->gen++; /* a new generation: any worker waiting for a run sees it */
    atomic_store(&p->ctrl, (uint64_t)p->gen << 32);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->size; i++)
        if (p->workers[i] && p->workers[i]->pool) pthread_join(p->workers[i]->tid, NULL);
    p->n_created = 0;
}

/* Starts worker i with every asynchronous signal blocked (signals belong to the application's
 * threads); synchronous ones stay deliverable so crashes are still reported. */
static pl_status start_worker(pl_pool *p, int i, pl_error *err)
{
    worker *w = alloc_lines(sizeof *w);
    if (!w) return pl_fail(err, PL_ERR_NOMEM, "thread pool: cannot allocate worker %d", i);
    p->workers[i] = w;
    w->index = i;
    sigset_t all, old;
    sigfillset(&all);
    static const int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    for (size_t k = 0; k < sizeof sync_signals / sizeof sync_signals[0]; k++)
        sigdelset(&all, sync_signals[k]);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    w->pool = p;
    int rc = pthread_create(&w->tid, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        char eb[96];
        w->pool = NULL; /* no thread to join */
        return pl_fail(err, PL_ERR_NOMEM, "thread pool: cannot create worker %d of %d: %s", i,
                       p->size - 1, errstr(rc, eb, sizeof eb));
    }
    p->n_created++;
    p->threads_created++;
#ifndef __EMSCRIPTEN__ /* no thread names on Web Workers */
    char name[16];
    snprintf(name, sizeof name, "plumb-w%u", (unsigned)i % 10000u); /* 15 chars max */
    pthread_setname_np(w->tid, name);
#endif
    return pl_ok(err);
}

static void pool_destroy(pl_pool *p)
{
    if (p->sync_init) stop_workers(p);
#if PLUMB_HAVE_HWLOC
    if (p->caller_pinned && pthread_equal(p->caller_tid, pthread_self()))
        hwloc_set_cpubind(p->hw, p->caller_saved, HWLOC_CPUBIND_THREAD); /* best effort */
    if (p->caller_saved) hwloc_bitmap_free(p->caller_saved);
#endif
    if (p->workers)
        for (int i = 1; i < p->size; i++) free_lines(p->workers[i]);
    pl_free(p->workers);
    free_lines(p->lanes);
    pl_free(p->lane_of);
    pl_free(p->bind);
    pl_free(p->slots);
    if (p->sync_init) {
        pthread_cond_destroy(&p->cv_done);
        pthread_cond_destroy(&p->cv_work);
        pthread_mutex_destroy(&p->mu);
    }
    free_lines(p);
}

static pl_status sync_init(pl_pool *p, pl_error *err)
{
    int rc = pthread_mutex_init(&p->mu, NULL);
    if (rc == 0) {
        rc = pthread_cond_init(&p->cv_work, NULL);
        if (rc == 0) {
            rc = pthread_cond_init(&p->cv_done, NULL);
            if (rc == 0) {
                p->sync_init = 1;
                return pl_ok(err);
            }
            pthread_cond_destroy(&p->cv_work);
        }
        pthread_mutex_destroy(&p->mu);
    }
    char eb[96];
    return pl_fail(err, PL_ERR_NOMEM, "thread pool: cannot initialize mutex/condvar: %s",
                   errstr(rc, eb, sizeof eb));
}

/* ---- public -------------------------------------------------------------------- */

pl_status pl_pool_new(pl_pool **out, int n_threads, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    int size = 0;
    /* Validate the request before any work; the default is resolved after discovery. */
    if (n_threads != 0) {
        pl_status st = pl_pool_resolve_threads(n_threads, NULL, 1, &size, err);
        if (st != PL_OK) return st;
    }
    pl_pool *p = alloc_lines(sizeof *p);
    if (!p) return pl_fail(err, PL_ERR_NOMEM, "thread pool: cannot allocate the pool");
    pl_status st = sync_init(p, err);
    if (st == PL_OK) st = topology_discover(p, err);
    if (st == PL_OK && n_threads == 0)
        st =
            pl_pool_resolve_threads(0, getenv("PLUMB_THREADS"), p->topo.n_cores_usable, &size, err);
    if (st != PL_OK) {
        pool_destroy(p);
        return st;
    }
    int spin = 0;
    st =
        pl_pool_resolve_spin(getenv("PLUMB_SPIN_US"),
                             size > p->topo.n_pus_usable ? 0 : PL_POOL_DEFAULT_SPIN_US, &spin, err);
    if (st != PL_OK) {
        pool_destroy(p);
        return st;
    }
    p->size = size;
    atomic_store(&p->spin_us, spin);
    p->backoff = 1;
    p->bind = pl_calloc((size_t)size, sizeof *p->bind);
    p->workers = pl_calloc((size_t)size, sizeof *p->workers);
    p->lanes = alloc_lines((size_t)size * sizeof *p->lanes);
    p->lane_of = pl_calloc((size_t)size, sizeof *p->lane_of);
    if (!p->bind || !p->workers || !p->lanes || !p->lane_of) {
        pool_destroy(p);
        return pl_fail(err, PL_ERR_NOMEM, "thread pool: cannot allocate %d thread records", size);
    }
    const slot *s0 = slot_for(p, 0);
    p->bind[0].core = s0 ? s0->core : -1;
    p->bind[0].pu = s0 ? s0->pu : -1;
    snprintf(p->bind[0].error, sizeof p->bind[0].error,
             "caller's thread: the pool binds it only in pl_pool_bind_caller");
    for (int i = 1; i < size; i++) {
        st = start_worker(p, i, err);
        if (st != PL_OK) {
            pool_destroy(p);
            return st;
        }
    }
    /* Wait until every worker has bound itself, so the bindings can be read at once. */
    pthread_mutex_lock(&p->mu);
    while (p->n_ready < p->n_created) pthread_cond_wait(&p->cv_done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    *out = p;
    return pl_ok(err);
}

void pl_pool_free(pl_pool *p)
{
    if (p) pool_destroy(p);
}

int pl_pool_size(const pl_pool *p)
{
    return p ? p->size : 0;
}

/* A caller that waited at least STALL_NS for the workers still holding grains, and at least
 * half as long as it ran grains itself, met a descheduled worker (a busy machine: another
 * process on its core), not the ordinary spread of a long run. The workers still inside then
 * sit out the runs of the next period, 2 ms doubling to 256 ms while stalls recur (reset after
 * 1 s without one): a busy core costs one stall per period instead of one per run, and the
 * other cores keep working (on 2 threads the caller runs alone). The results are the same
 * bits, whoever computes them. */
#define STALL_NS     (200u * 1000u)
#define BENCH_MIN_NS (2u * 1000u * 1000u)
#define BENCH_MAX_NS (256u * 1000u * 1000u)

/* Marks the workers still inside the run (those the caller waited for) benched. */
static void note_wait(pl_pool *p, uint64_t waited, uint64_t worked, const uint8_t *suspects)
{
    if (!p->backoff) return;
    const uint64_t now = pl_clock_ns();
    if (waited < STALL_NS || 2 * waited < worked || !suspects) {
        if (p->bench_ns && now - p->last_stall > 4 * (uint64_t)BENCH_MAX_NS) p->bench_ns = 0;
        return;
    }
    p->bench_ns = p->bench_ns == 0                 ? BENCH_MIN_NS
                  : 2 * p->bench_ns > BENCH_MAX_NS ? BENCH_MAX_NS
                                                   : 2 * p->bench_ns;
    p->last_stall = now;
    for (int t = 1; t < p->size; t++)
        if (suspects[t]) {
            if (p->workers[t]->benched_until <= now) p->n_benched++;
            p->workers[t]->benched_until = now + p->bench_ns;
        }
}

/* Deals the run's lanes: the caller first, then every worker not benched, up to `want`
 * threads. Returns how many take part; lane_of says who has which lane, *limit is one past the
 * highest thread taking part. */
static int deal_lanes(pl_pool *p, int want, int64_t g, int *limit)
{
    uint64_t now = 0;
    if (p->n_benched > 0) {
        now = pl_clock_ns();
        p->n_benched = 0;
        for (int t = 1; t < p->size; t++) p->n_benched += p->workers[t]->benched_until > now;
    }
    int active = 0;
    for (int t = 0; t < p->size; t++) {
        const int out =
            t > 0 && (active >= want || (p->n_benched > 0 && p->workers[t]->benched_until > now));
        p->lane_of[t] = out ? -1 : active++;
        if (!out) *limit = t + 1;
    }
    for (int k = 0; k < active; k++) {
        int64_t first, count;
        deal(g, active, k, &first, &count);
        p->lanes[k].first = first;
        p->lanes[k].count = (uint64_t)count;
        atomic_store_explicit(&p->lanes[k].next, 0, memory_order_relaxed);
    }
    if (active < want) p->benched_runs++;
    return active;
}

void pl_pool_run(pl_pool *p, pl_pool_fn fn, void *ctx, int64_t n, int64_t grain)
{
    if (!p || !fn || n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t g = (n - 1) / grain + 1;
    int want = g < p->size ? (int)g : p->size;
    if (want == 1) { /* nothing to share: no synchronization at all */
        fn(ctx, 0, n, 0);
        return;
    }
    const uint64_t t0 = pl_clock_ns();
    /* Every worker of the last run has left (refs 0, closed), and a late one cannot join it,
     * so the job and the lanes are the caller's to rewrite. */
    int limit = 1;
    const int active = deal_lanes(p, want, g, &limit);
    if (active == 1) { /* every worker benched: the caller alone */
        p->solo_runs++;
        fn(ctx, 0, n, 0);
        p->work_ns += pl_clock_ns() - t0;
        return;
    }
    p->job_fn = fn;
    p->job_ctx = ctx;
    p->job_n = n;
    p->job_grain = grain;
    p->job_grains = g;
    p->job_active = active;
    p->runs++;
    p->gen++;
    atomic_store(&p->state, STATE_OPEN(p->gen));
    publish(p, limit);

    uint64_t stolen = run_grains(p, 0, 0, active);
    if (stolen) atomic_fetch_add_explicit(&p->caller_stolen, stolen, memory_order_relaxed);

    /* Every grain is claimed: close the run to latecomers and wait for those inside, who hold
     * the last grains (or are about to find nothing left). */
    uint64_t s = atomic_fetch_or(&p->state, STATE_CLOSED);
    const uint64_t t_wait = pl_clock_ns();
    p->work_ns += t_wait - t0;
    if (STATE_REFS(s) == 0) return;
    /* Who is still inside once STALL_NS have passed: the suspects, should this be a stall. */
    uint8_t few[64], *suspects = NULL;
    int spin = atomic_load_explicit(&p->spin_us, memory_order_relaxed);
    spinner sp = spinner_start(spin);
    int done = 0;
    while (!done) {
        if (STATE_REFS(atomic_load_explicit(&p->state, memory_order_acquire)) == 0) {
            done = 1;
            break;
        }
        const int more = spin > 0 && spinner_step(&sp);
        if (!suspects && (!more || ((sp.i & 31) == 0 && pl_clock_ns() - t_wait >= STALL_NS))) {
            suspects = p->size <= (int)sizeof few ? few : NULL;
            if (suspects)
                for (int t = 0; t < p->size; t++)
                    suspects[t] =
                        t > 0 && atomic_load_explicit(&p->workers[t]->inside, memory_order_relaxed);
        }
        if (!more) break;
    }
    if (!done) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->caller_waiting, 1);
        int slept = 0;
        while (STATE_REFS(atomic_load(&p->state)) != 0) {
            pthread_cond_wait(&p->cv_done, &p->mu);
            slept = 1;
        }
        atomic_store(&p->caller_waiting, 0);
        pthread_mutex_unlock(&p->mu);
        if (slept) atomic_fetch_add_explicit(&p->caller_sleeps, 1, memory_order_relaxed);
    }
    const uint64_t waited = pl_clock_ns() - t_wait;
    p->wait_ns += waited;
    note_wait(p, waited, t_wait - t0, suspects);
}

pl_status pl_pool_bind_caller(pl_pool *p, pl_error *err)
{
    if (!p) return pl_fail(err, PL_ERR_INVALID_ARG, "pool is NULL");
    pthread_t self = pthread_self();
    /* Remember the affinity to restore, unless this thread is pinned already (by us). */
    int saved = p->caller_pinned && pthread_equal(p->caller_tid, self);
#if PLUMB_HAVE_HWLOC
    if (!saved && p->hw) {
        if (!p->caller_saved) p->caller_saved = hwloc_bitmap_alloc();
        saved =
            p->caller_saved && hwloc_get_cpubind(p->hw, p->caller_saved, HWLOC_CPUBIND_THREAD) == 0;
    }
#endif
    bind_self(p, &p->bind[0], slot_for(p, 0));
    p->caller_pinned = p->bind[0].bound && saved;
    p->caller_tid = self;
    return pl_ok(err);
}

void pl_pool_set_stall_backoff(pl_pool *p, int on)
{
    if (!p) return;
    p->backoff = on != 0;
    p->bench_ns = 0;
    p->n_benched = 0;
    for (int t = 1; t < p->size; t++)
        if (p->workers[t]) p->workers[t]->benched_until = 0;
}

void pl_pool_set_spin_us(pl_pool *p, int us)
{
    if (p) atomic_store_explicit(&p->spin_us, us < 0 ? 0 : us, memory_order_relaxed);
}

int pl_pool_spin_us(const pl_pool *p)
{
    return p ? atomic_load_explicit(&((pl_pool *)p)->spin_us, memory_order_relaxed) : 0;
}

const pl_topology *pl_pool_topology(const pl_pool *p)
{
    return p ? &p->topo : NULL;
}

const pl_pool_binding *pl_pool_binding_of(const pl_pool *p, int thread)
{
    if (!p || thread < 0 || thread >= p->size) return NULL;
    return &p->bind[thread];
}

int pl_pool_n_bound(const pl_pool *p)
{
    int n = 0;
    if (p)
        for (int i = 0; i < p->size; i++) n += p->bind[i].bound;
    return n;
}

pl_pool_stats pl_pool_get_stats(const pl_pool *p)
{
    pl_pool_stats s;
    memset(&s, 0, sizeof s);
    if (!p) return s;
    pl_pool *q = (pl_pool *)p; /* atomics are read-only here, but C11 loads take non-const */
    s.threads_created = p->threads_created;
    s.runs = p->runs;
    s.solo = p->solo_runs;
    s.benched = p->benched_runs;
    s.work_ns = p->work_ns;
    s.wait_ns = p->wait_ns;
    s.sleeps = atomic_load_explicit(&q->caller_sleeps, memory_order_relaxed);
    s.stolen = atomic_load_explicit(&q->caller_stolen, memory_order_relaxed);
    for (int i = 1; i < p->size; i++) {
        worker *w = q->workers[i];
        s.sleeps += atomic_load_explicit(&w->sleeps, memory_order_relaxed);
        s.stolen += atomic_load_explicit(&w->stolen, memory_order_relaxed);
        s.late += atomic_load_explicit(&w->late, memory_order_relaxed);
    }
    return s;
}

/* ---- formatting ---------------------------------------------------------------- */

typedef struct sbuf {
    char *buf;
    size_t size, len;
} sbuf;

static void sb_printf(sbuf *s, const char *fmt, ...) PL_PRINTF(2, 3);
static void sb_printf(sbuf *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = s->len < s->size ? s->buf + s->len : NULL;
    int n = vsnprintf(dst, dst ? s->size - s->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0) s->len += (size_t)n;
}

static void sb_json_str(sbuf *s, const char *str)
{
    sb_printf(s, "\"");
    char *dst = s->len < s->size ? s->buf + s->len : NULL;
    s->len += pl_json_escape(dst, dst ? s->size - s->len : 0, str, strlen(str));
    sb_printf(s, "\"");
}

static const char *plural(int n)
{
    return n == 1 ? "" : "s";
}

static void format_text(const pl_pool *p, sbuf *s)
{
    const pl_topology *t = &p->topo;
    sb_printf(
        s, "topology: %d package%s, %d core%s (%d usable), %d PU%s (%d usable), %d NUMA node%s",
        t->n_packages, plural(t->n_packages), t->n_cores, plural(t->n_cores), t->n_cores_usable,
        t->n_pus, plural(t->n_pus), t->n_pus_usable, t->n_numa, plural(t->n_numa));
    if (t->n_l3 > 0)
        sb_printf(s, ", %d x %.1f MiB L3", t->n_l3, (double)t->l3_bytes / (1024.0 * 1024.0));
    else
        sb_printf(s, ", L3 unknown");
    if (t->cpu_model[0]) sb_printf(s, ", %s", t->cpu_model);
    sb_printf(s, "\n");
    if (t->error[0]) sb_printf(s, "topology error: %s\n", t->error);
    sb_printf(s, "threads: %d (%d bound), spin %d us\n", p->size, pl_pool_n_bound(p),
              pl_pool_spin_us(p));
    for (int i = 0; i < p->size; i++) {
        const pl_pool_binding *b = &p->bind[i];
        sb_printf(s, "  thread %d%s: core %d, PU %d, %s%s\n", i, i == 0 ? " (caller)" : "", b->core,
                  b->pu, b->bound ? "bound" : "not bound: ", b->bound ? "" : b->error);
    }
}

static void format_json(const pl_pool *p, sbuf *s)
{
    const pl_topology *t = &p->topo;
    sb_printf(s,
              "{\"topology\":{\"packages\":%d,\"cores\":%d,\"cores_usable\":%d,\"pus\":%d,"
              "\"pus_usable\":%d,\"numa_nodes\":%d,\"l3_count\":%d,\"l3_bytes\":%llu,"
              "\"cpu_model\":",
              t->n_packages, t->n_cores, t->n_cores_usable, t->n_pus, t->n_pus_usable, t->n_numa,
              t->n_l3, (unsigned long long)t->l3_bytes);
    sb_json_str(s, t->cpu_model);
    sb_printf(s, ",\"error\":");
    if (t->error[0])
        sb_json_str(s, t->error);
    else
        sb_printf(s, "null");
    sb_printf(s, "},\"n_threads\":%d,\"n_bound\":%d,\"spin_us\":%d,\"threads\":[", p->size,
              pl_pool_n_bound(p), pl_pool_spin_us(p));
    for (int i = 0; i < p->size; i++) {
        const pl_pool_binding *b = &p->bind[i];
        sb_printf(s, "%s{\"thread\":%d,\"caller\":%s,\"bound\":%s,\"core\":%d,\"pu\":%d,\"error\":",
                  i ? "," : "", i, i == 0 ? "true" : "false", b->bound ? "true" : "false", b->core,
                  b->pu);
        if (b->bound)
            sb_printf(s, "null}");
        else {
            sb_json_str(s, b->error);
            sb_printf(s, "}");
        }
    }
    sb_printf(s, "]}");
}

pl_status pl_pool_format(const pl_pool *p, pl_pool_format_style style, char *buf, size_t size,
                         size_t *len, pl_error *err)
{
    if (len) *len = 0;
    if (!p) return pl_fail(err, PL_ERR_INVALID_ARG, "pool is NULL");
    if (!buf && size > 0)
        return pl_fail(err, PL_ERR_INVALID_ARG, "buf is NULL but size is %zu", size);
    if (style != PL_POOL_FORMAT_TEXT && style != PL_POOL_FORMAT_JSON)
        return pl_fail(err, PL_ERR_INVALID_ARG, "unknown format style %d", (int)style);
    sbuf s = {buf, size, 0};
    if (size > 0) buf[0] = '\0';
    if (style == PL_POOL_FORMAT_JSON)
        format_json(p, &s);
    else
        format_text(p, &s);
    if (len) *len = s.len;
    if (s.len >= size)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL,
                       "thread pool description needs %zu bytes (with the NUL), buffer has %zu",
                       s.len + 1, size);
    return pl_ok(err);
}
