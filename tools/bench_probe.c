/* bench_probe.c — the machine's limits for `plumb bench`: streaming read bandwidth over a buffer
 * far larger than L3 and the peak int8 dot rate, on pinned threads in a child process. Not
 * kernels: the x86 loops live in bench_probe_{x86,avx2}.c, chosen here by CPUID. */
#if defined(__linux__)
#define _GNU_SOURCE /* pthread_setaffinity_np, cpu_set_t */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

enum { READ_PASSES = 10, INT8_REPS = 5 };
#define INT8_TARGET_S 0.05 /* seconds per int8 rep */

int bench_parse_pus(const char *json, int *pus, int cap)
{
    const char *p = strstr(json, "\"threads\":[");
    if (!p) return -1;
    int n = 0;
    while ((p = strstr(p, "\"pu\":")) != NULL) {
        p += 5;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) return -1;
        if (n < cap) pus[n] = (int)v;
        n++;
        p = end;
    }
    return n < cap ? n : cap;
}

uint64_t bench_parse_l3(const char *json)
{
    const char *c = strstr(json, "\"l3_count\":"), *b = strstr(json, "\"l3_bytes\":");
    if (!c || !b) return 0;
    unsigned long long n = strtoull(c + 11, NULL, 10), bytes = strtoull(b + 11, NULL, 10);
    return n > 0 && bytes > 0 && bytes <= UINT64_MAX / n ? (uint64_t)(n * bytes) : 0;
}

/* ---- which int8 loop ---- */

typedef uint64_t (*int8_fn)(int64_t iters, const uint8_t *src, double *macs);

static int8_fn pick_int8(const char **name)
{
#if defined(PLUMB_BENCH_X86)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512vnni")) {
        *name = "vpdpbusd zmm (AVX512-VNNI)";
        return bench_int8_vnni512;
    }
    if (__builtin_cpu_supports("avx2")) {
        *name = "vpmaddubsw+vpmaddwd+vpaddd ymm (AVX2)";
        return bench_int8_avx2;
    }
#endif
    *name = "none";
    return NULL;
}

const char *bench_int8_kernel_name(void)
{
    const char *name;
    pick_int8(&name);
    return name;
}

/* Sum of 64-bit words with eight independent accumulators: loads never wait on an add. */
static uint64_t sum_words(const uint64_t *p, size_t n)
{
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
        s4 += p[i + 4];
        s5 += p[i + 5];
        s6 += p[i + 6];
        s7 += p[i + 7];
    }
    for (; i < n; i++) s0 += p[i];
    return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
}

typedef uint64_t (*read_fn)(const uint64_t *p, size_t n);

/* The widest loads: on the dev VM (Zen 5) 64-byte loads read 12-15% more per second than the
 * portable loop (gcc: 16-byte SSE2, clang: 8-byte scalar), and a low roofline flatters. */
static read_fn pick_read(const char **name)
{
#if defined(PLUMB_BENCH_X86)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *name = "64-byte loads (AVX-512)";
        return bench_read_avx512;
    }
    if (__builtin_cpu_supports("avx2")) {
        *name = "32-byte loads (AVX2)";
        return bench_read_avx2;
    }
#endif
    *name = "portable C";
    return sum_words;
}

const char *bench_read_kernel_name(void)
{
    const char *name;
    pick_read(&name);
    return name;
}

/* ---- the probe threads ---- */

typedef struct shared {
    int n;
    uint64_t *buf;
    size_t words; /* 64-bit words in buf */
    pthread_barrier_t bar;
    int8_fn int8;
    read_fn read;
    int64_t int8_iters;
    double t_read[READ_PASSES + 1];
    double t_int8[INT8_REPS + 1];
    double macs_per_thread;
    volatile uint64_t sink;
} shared;

typedef struct worker {
    shared *sh;
    int index, pu, pinned;
    pthread_t tid;
} worker;

static int pin_self(int pu)
{
#if defined(__linux__)
    if (pu < 0 || pu >= CPU_SETSIZE) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(pu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
#else
    (void)pu;
    return 0;
#endif
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    w->pinned = pin_self(w->pu);
    /* Each thread first-touches its own slice, so its pages sit on its NUMA node. */
    size_t per = sh->words / (size_t)sh->n;
    uint64_t *mine = sh->buf + per * (size_t)w->index;
    for (size_t i = 0; i < per; i++) mine[i] = i * 0x9E3779B97F4A7C15ull + (uint64_t)w->index;
    uint64_t acc = 0;
    for (int pass = 0; pass <= READ_PASSES; pass++) { /* pass 0 warms up */
        pthread_barrier_wait(&sh->bar);
        double t0 = pl_clock_s();
        acc += sh->read(mine, per);
        pthread_barrier_wait(&sh->bar);
        if (w->index == 0) sh->t_read[pass] = pl_clock_s() - t0;
    }
    uint8_t src[64];
    for (int i = 0; i < 64; i++) src[i] = (uint8_t)((acc >> (i % 8)) ^ (uint64_t)i);
    for (int rep = 0; sh->int8 && rep <= INT8_REPS; rep++) {
        pthread_barrier_wait(&sh->bar);
        double t0 = pl_clock_s(), macs = 0;
        acc += sh->int8(sh->int8_iters, src, &macs);
        pthread_barrier_wait(&sh->bar);
        if (w->index == 0) {
            sh->t_int8[rep] = pl_clock_s() - t0;
            sh->macs_per_thread = macs;
        }
    }
    sh->sink = acc;
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Iterations of the int8 loop that take about INT8_TARGET_S on one thread. */
static int64_t calibrate_int8(int8_fn f)
{
    uint8_t src[64];
    for (int i = 0; i < 64; i++) src[i] = (uint8_t)(i * 37 + 1);
    int64_t iters = 1 << 12;
    for (;;) {
        double macs, t0 = pl_clock_s();
        volatile uint64_t sink = f(iters, src, &macs);
        (void)sink;
        double dt = pl_clock_s() - t0;
        if (dt >= INT8_TARGET_S / 4 || iters > ((int64_t)1 << 40))
            return (int64_t)((double)iters * INT8_TARGET_S / (dt > 0 ? dt : 1e-9)) + 1;
        iters *= 4;
    }
}

/* The child's work: fills p (pus, pinned, rates); returns 0 or an errno-style failure. */
static int probe_in_child(bench_probe *p, int n, const int *pus, uint64_t bytes)
{
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.n = n;
    sh.words = (size_t)(bytes / 8 / (uint64_t)n / 8 * 8 * (uint64_t)n);
    if (sh.words == 0) return EINVAL;
    size_t len = sh.words * 8;
    void *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) return errno;
#if defined(MADV_HUGEPAGE)
    madvise(buf, len, MADV_HUGEPAGE); /* fewer TLB misses: the bound is DRAM, not page walks */
#endif
    sh.buf = buf;
    const char *name;
    sh.int8 = pick_int8(&name);
    sh.read = pick_read(&name);
    if (sh.int8) sh.int8_iters = calibrate_int8(sh.int8);
    worker *w = calloc((size_t)n, sizeof *w);
    if (!w || pthread_barrier_init(&sh.bar, NULL, (unsigned)n) != 0) return ENOMEM;
    int started = 0, rc = 0;
    for (int i = 0; i < n; i++) {
        w[i] = (worker){.sh = &sh, .index = i, .pu = pus ? pus[i] : -1};
        if (i > 0 && pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) {
            rc = EAGAIN;
            break;
        }
        started++;
    }
    if (rc) _exit(3); /* the barrier would never open: nothing to clean up in a child */
    w[0].tid = pthread_self();
    worker_main(&w[0]);
    for (int i = 1; i < started; i++) pthread_join(w[i].tid, NULL);
    p->buffer_bytes = (uint64_t)len;
    p->passes = READ_PASSES;
    double gbps[READ_PASSES];
    for (int i = 0; i < READ_PASSES; i++) gbps[i] = (double)len / sh.t_read[i + 1] * 1e-9;
    p->read_gbps_median = median_of(gbps, READ_PASSES); /* sorts: the last is the best */
    p->read_gbps = gbps[READ_PASSES - 1];
    if (sh.int8) {
        double gops[INT8_REPS];
        for (int i = 0; i < INT8_REPS; i++)
            gops[i] = sh.macs_per_thread * n / sh.t_int8[i + 1] * 1e-9;
        p->int8_gops_median = median_of(gops, INT8_REPS);
        p->int8_gops = gops[INT8_REPS - 1];
    }
    for (int i = 0; i < n; i++) {
        p->pus[i] = w[i].pinned ? w[i].pu : -1;
        p->pinned += w[i].pinned;
    }
    pthread_barrier_destroy(&sh.bar);
    free(w);
    munmap(buf, len);
    return 0;
}

int bench_run_probe(bench_probe *p, int n_threads, const int *pus, uint64_t buffer_bytes, char *why,
                    size_t why_size)
{
    p->n_threads = n_threads;
    p->int8_kernel = bench_int8_kernel_name();
    p->read_kernel = bench_read_kernel_name();
    if (n_threads < 1 || n_threads > BENCH_MAX_THREADS) {
        snprintf(why, why_size, "probe: %d threads is outside [1, %d]", n_threads,
                 BENCH_MAX_THREADS);
        return -1;
    }
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(why, why_size, "probe: pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL); /* the child must not write this process's buffered output */
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_size, "probe: fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        bench_probe r = *p;
        int rc = probe_in_child(&r, n_threads, pus, buffer_bytes);
        if (rc == 0 && write(fd[1], &r, sizeof r) != (ssize_t)sizeof r) rc = EIO;
        _exit(rc ? 2 : 0);
    }
    close(fd[1]);
    bench_probe r;
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t k = read(fd[0], (char *)&r + got, sizeof r - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got != sizeof r || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(why, why_size,
                 "probe: the child measuring %d thread(s) over %llu MiB failed (%s %d); "
                 "try a smaller --probe-mib or --no-probe",
                 n_threads, (unsigned long long)(buffer_bytes >> 20),
                 WIFSIGNALED(status) ? "signal" : "exit status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        return -1;
    }
    char *bj = p->binding_json, *bt = p->binding_text;
    *p = r;
    p->binding_json = bj; /* the child's pointers mean nothing here */
    p->binding_text = bt;
    p->int8_kernel = bench_int8_kernel_name();
    p->read_kernel = bench_read_kernel_name();
    return 0;
}
