/* threads.h — the engine's thread pool: workers pinned one per physical core (hwloc), reused
 * across calls, sharing work by stealing, plus the machine topology they run on. Internal: not
 * part of plumb.h. */
#ifndef PLUMB_THREADS_H
#define PLUMB_THREADS_H

#include <stddef.h>
#include <stdint.h>

#include "plumb.h"

/* Thread counts above this are refused (PL_ERR_LIMIT for n_threads, PL_ERR_CONFIG for
 * PLUMB_THREADS). The largest machines have a few hundred cores. */
#define PL_POOL_MAX_THREADS 4096

/* How long an idle worker (and the caller waiting for workers) spins before sleeping on a
 * condition variable, in microseconds. Regions of one decode step follow each other within
 * microseconds, so they hit the spin. It must stay well above the time a sleeping pool takes to
 * wake (tens of microseconds in VMs, more with many threads): below that, one hiccup makes every
 * following run slow enough for the workers to fall asleep again (measured: perf/NOTES.md). */
#define PL_POOL_DEFAULT_SPIN_US 1000
/* The largest spin budget PLUMB_SPIN_US may ask for (one second). */
#define PL_POOL_MAX_SPIN_US 1000000

/* The machine as hwloc sees it. "Usable" means inside the process's CPU affinity mask (taskset,
 * cpuset cgroups): the pool only ever places threads there. */
typedef struct pl_topology {
    int n_packages;
    int n_cores;        /* physical cores hwloc may use (allowed cpuset) */
    int n_cores_usable; /* of which intersect the process's affinity mask */
    int n_pus;          /* hardware threads (PUs) */
    int n_pus_usable;
    int n_numa;         /* NUMA nodes; 0 when unknown */
    int n_l3;           /* L3 caches; 0 when unknown */
    uint64_t l3_bytes;  /* size of one L3 cache (the first one); 0 when unknown */
    char cpu_model[96]; /* hwloc's CPUModel of the first package; "" when unknown */
    /* Non-empty when hwloc could not describe the machine; counts then come from
     * sysconf(_SC_NPROCESSORS_ONLN) (cores == PUs) and no thread is bound. */
    char error[128];
} pl_topology;

/* Where one pool thread runs. Binding is best effort: where the OS refuses it (containers,
 * seccomp, cpusets) the thread runs unbound and the reason is recorded here. */
typedef struct pl_pool_binding {
    int bound;       /* 1 when pinned to `pu` */
    int core;        /* hwloc logical index of the core the thread was meant for; -1 when none */
    int pu;          /* OS index of that core's PU (as taskset and /proc/cpuinfo number CPUs) */
    char error[128]; /* why it is not bound; "" when bound */
} pl_pool_binding;

/* Counters since the pool was created; read them while no pl_pool_run is in progress (stolen
 * and late may still move afterwards: a late worker counts itself when it wakes). */
typedef struct pl_pool_stats {
    uint64_t threads_created; /* successful pthread_create calls: size - 1, never more */
    uint64_t runs;            /* pl_pool_run calls shared with workers (more than one chunk) */
    uint64_t sleeps;          /* times a worker or the caller gave up spinning and slept */
    uint64_t stolen;          /* grains run by a thread outside its own chunk */
    uint64_t late;            /* times a worker woke for a run the others had already finished */
    uint64_t solo;            /* runs the caller did alone, every worker benched after stalls */
    uint64_t benched;         /* runs that left out a worker benched after a stall */
    uint64_t work_ns;         /* the caller's time running grains in shared runs */
    uint64_t wait_ns;         /* the caller's time waiting for workers at the end of runs */
} pl_pool_stats;

typedef struct pl_pool pl_pool;

/* Creates a pool of n_threads threads: the caller of pl_pool_run is thread 0 and
 * n_threads - 1 workers are created here (none for n_threads == 1) and live until
 * pl_pool_free.
 *   n_threads > 0: exactly that many (at most PL_POOL_MAX_THREADS, else PL_ERR_LIMIT;
 *                  negative: PL_ERR_INVALID_ARG).
 *   n_threads == 0: the environment variable PLUMB_THREADS when set and non-empty (a decimal
 *                  integer in 1..PL_POOL_MAX_THREADS, else PL_ERR_CONFIG naming the variable and
 *                  its value), otherwise the number of usable physical cores. PLUMB_THREADS is
 *                  read only in this case, so an explicit count always wins.
 * Placement: threads take the usable PUs in the order "first PU of every core, then the second
 * PU of every core (SMT siblings), ...", thread t the t-th (modulo their number). So up to the
 * number of usable cores every thread has a physical core of its own; thread 0's slot is left
 * to the caller, whose thread the pool does not bind unless asked (pl_pool_bind_caller). Each
 * worker binds itself before pl_pool_new returns; refused binding is recorded
 * (pl_pool_binding_of), never an error. Workers block asynchronous signals and are named
 * "plumb-wN". When threads outnumber usable PUs, spinning is off (spin 0): a spinner would hold
 * the CPU that the thread it waits for needs.
 * Errors: PL_ERR_INVALID_ARG, PL_ERR_LIMIT, PL_ERR_CONFIG as above; PL_ERR_NOMEM when an
 * allocation, a mutex/condvar or pthread_create fails. On failure every worker already started
 * has been joined and *out is NULL. hwloc failing to describe the machine is not an error: the
 * pool then runs unbound (pl_topology.error says why). */
pl_status pl_pool_new(pl_pool **out, int n_threads, pl_error *err);

/* Stops and joins the workers, frees everything. NULL is a no-op. Not while a run is active. */
void pl_pool_free(pl_pool *p);

/* Threads including the caller (>= 1). */
int pl_pool_size(const pl_pool *p);

/* The work function: process items [i0, i1) as pool thread `thread` (0 = the caller). A range
 * is one or more consecutive whole grains (i0 a multiple of grain, i1 a multiple of grain or
 * n), never empty. fn may be called many times per run on one thread, with ranges from any
 * thread's chunk; `thread` is always the calling thread's own index (use it for per-thread
 * scratch: two calls with the same index never overlap in time). So an item's result must not
 * depend on which range or thread computes it. */
typedef void (*pl_pool_fn)(void *ctx, int64_t i0, int64_t i1, int thread);

/* Runs fn over [0, n) in grains of `grain` items (grain < 1 counts as 1; the last grain ends
 * at n; n <= 0 calls nothing) and returns when every item is done, with every thread's writes
 * visible to the caller. Work stealing: thread t starts on the t-th chunk of the initial split
 * (pl_pool_chunk), claiming from its front half of the unclaimed rest at a time (at least one
 * grain; one CAS per claim, so a few calls per thread when nothing stalls), then claims what
 * is left of the other threads' chunks the same way, the other threads' order being t + 1,
 * t + 2, ... So a thread the OS deschedules holds back only the grains it has claimed, and a
 * worker that has not woken yet holds back nothing: the caller waits (spin, then sleep) only
 * for the workers that joined the run, and a worker waking after the run is over leaves the
 * job alone (pl_pool_stats.late). After a run whose caller waited >= 200 us, and at least half
 * as long as it ran grains itself, for the workers still holding grains (ones the OS descheduled),
 * those workers sit out the runs of the next 2 ms (doubling to 256 ms while such stalls recur):
 * the others share the runs (pl_pool_stats.benched), the caller alone when none is left
 * (pl_pool_stats.solo). Long runs wait out their ordinary spread without backing off. Threads
 * beyond the number of grains take no part; a run of one grain, or any run on a pool of size 1, is
 * fn(ctx, 0, n, 0) on the caller with no synchronization at all. One run at a time: not
 * concurrently from several threads, not from inside fn. */
void pl_pool_run(pl_pool *p, pl_pool_fn fn, void *ctx, int64_t n, int64_t grain);

/* The initial split of pl_pool_run, a pure function of (n, grain, size, thread): the
 * G = ceil(n / grain) grains are dealt out contiguously, the first G % size threads getting
 * one grain more; the last chunk ends at n. Sets [*i0, *i1), empty (i0 == i1) when the thread
 * gets nothing. */
void pl_pool_chunk(int64_t n, int64_t grain, int size, int thread, int64_t *i0, int64_t *i1);

/* Resolves a thread count as pl_pool_new does, from the request, the value of PLUMB_THREADS
 * (NULL when unset) and the default (number of usable cores); pure, for tests and tools. */
pl_status pl_pool_resolve_threads(int n_threads, const char *env_value, int default_threads,
                                  int *out, pl_error *err);

/* Pins the calling thread to thread 0's slot (the first PU of the first usable core) and
 * records the result as thread 0's binding. Refusal is recorded, not returned: the status is PL_OK
 * unless p is NULL. pl_pool_free, when it runs on the thread pinned last, restores that thread's
 * previous affinity; otherwise the pin outlives the pool. (A pinned thread also narrows what
 * later pools see as usable when it is the process's only thread.) */
pl_status pl_pool_bind_caller(pl_pool *p, pl_error *err);

/* Turns the stall back-off of pl_pool_run on (the default) or off (every run shared, as tests
 * that check how grains are dealt need); either way clears a back-off in progress. */
void pl_pool_set_stall_backoff(pl_pool *p, int on);

/* Spin budget in microseconds (0: sleep at once); see PL_POOL_DEFAULT_SPIN_US. Safe to change
 * at any time; waits that start afterwards use the new value. */
void pl_pool_set_spin_us(pl_pool *p, int us);
/* The spin budget a new pool starts with: env_value (PLUMB_SPIN_US, microseconds, 0..
 * PL_POOL_MAX_SPIN_US; 0 sleeps at once: for machines shared with other work) or, when NULL or
 * empty, default_us. Anything else is PL_ERR_CONFIG naming the value. */
pl_status pl_pool_resolve_spin(const char *env_value, int default_us, int *out, pl_error *err);
int pl_pool_spin_us(const pl_pool *p);

const pl_topology *pl_pool_topology(const pl_pool *p);
/* Thread `thread` (0..size-1); NULL when out of range. */
const pl_pool_binding *pl_pool_binding_of(const pl_pool *p, int thread);
/* Threads (caller included) whose binding succeeded. */
int pl_pool_n_bound(const pl_pool *p);
pl_pool_stats pl_pool_get_stats(const pl_pool *p);

/* pl_pool_format styles. */
typedef enum pl_pool_format_style {
    PL_POOL_FORMAT_TEXT = 0, /* a few human-readable lines, for `plumb` commands */
    PL_POOL_FORMAT_JSON = 1, /* one JSON object {"topology":{…},"threads":[…]} for perf results */
} pl_pool_format_style;

/* Writes the topology and every thread's binding into buf (always NUL-terminated when
 * size > 0). *len (optional) receives the length the full text needs, without the NUL. When
 * it does not fit, buf holds a truncated prefix and the status is PL_ERR_BUFFER_TOO_SMALL with
 * the needed size in the message; buf may be NULL when size is 0 (a size query). */
pl_status pl_pool_format(const pl_pool *p, pl_pool_format_style style, char *buf, size_t size,
                         size_t *len, pl_error *err);

#endif
