/* bench.h — what the parts of `plumb bench` share: the options, one result row, the machine
 * probes (read bandwidth, int8 dot rate) and the writers (md, json, csv). Tools only. */
#ifndef PLUMB_TOOLS_BENCH_H
#define PLUMB_TOOLS_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "plumb.h"

enum { BENCH_MD = 0, BENCH_JSON = 1, BENCH_CSV = 2 };
enum { BENCH_MAX_THREADS = 1024 };

typedef struct bench_opts {
    char **models; /* paths */
    int n_models;
    int64_t *pp, *tg, *threads; /* test sizes (0 entries dropped) and thread counts (0: default) */
    int n_pp, n_tg, n_threads;
    int64_t *depth; /* tokens in the KV cache before each test (-d; default {0}) */
    int n_depth;
    int64_t *bg_load; /* busy processes running during each test (--background-load; {0}) */
    int n_bg_load;
    char **kernels; /* set names; one NULL entry: the default set */
    int n_kernels;
    int64_t reps, chunk, probe_mib;
    int no_repack, no_probe, format;
    int latencies; /* --latencies: json rows carry every decode token's latency */
} bench_opts;

/* One line of the table: one test of one (model, kernel set, thread count). Times in ms. */
typedef struct bench_row {
    /* the model and how it was loaded */
    const char *path;
    char name[128]; /* file name without directory and ".gguf" */
    char ftype[16]; /* "Q8_0", or "?" when general.file_type is absent or unknown */
    int quantized;  /* the ftype's base type is an int8-dot type (not F32/F16/BF16) */
    pl_model_info mi;
    uint64_t file_bytes;
    double load_ms;
    /* the session */
    const char *kernels_requested; /* NULL: the default set */
    char kernels[32];
    int n_threads, repacked;
    int64_t chunk; /* prefill_chunk */
    int kv_bytes;  /* bytes of one KV element: 2 (F16) or 4 (F32) */
    /* the test */
    char test[48];           /* "pp512", "tg128", "pp512 @ d2048" (llama-bench's names) */
    int64_t n_prompt, n_gen; /* pp: N, 0; tg: the prompt before it, N */
    int64_t depth;           /* tokens already in the KV cache when the test starts */
    int bg_load;             /* busy processes on the bench's CPUs during the test */
    int reps;
    double *tok_s; /* reps samples */
    double tok_s_med, tok_s_min, tok_s_max;
    int has_latency; /* tg rows: per-token latency over every rep */
    double lat_p50, lat_p90, lat_p99;
    double *lat_samples; /* --latencies: n_gen x reps, in time order (malloc'd), else NULL */
    size_t n_lat_samples;
    uint64_t peak_rss;
    int peak_rss_scope_model; /* 1: since this model was loaded (VmHWM reset); 0: process */
    /* against the machine's limits (0 or negative: unknown) */
    double avg_n_past;      /* tg: mean KV entries a decode step attends to */
    double attention_share; /* attention's share of the timed steps (pl_session_info), -1: none */
    double wait_share;      /* the caller's wait at the ends of parallel regions, same base */
    double serial_share;    /* time no other thread could help (one-thread regions, serial code) */
    double runs_per_token;  /* parallel regions per token */
    uint64_t benched_runs;  /* regions that left out a thread after a stall */
    double bytes_per_token; /* tg: step weights + KV read */
    double read_gbps;       /* the probe's, at this thread count */
    double roofline_pct;    /* tg: tok/s x bytes_per_token / read bandwidth */
    double macs_per_token;  /* matmul multiply-adds per token */
    double int8_gops;       /* the probe's, at this thread count */
    double int8_pct;        /* tok/s x macs_per_token / int8 dot rate (quantized models) */
} bench_row;

/* The probes at one thread count, run on the PUs the session's pool reported (zeros when
 * --no-probe: the binding report is kept all the same). */
typedef struct bench_probe {
    int n_threads;
    int measured;
    int pus[BENCH_MAX_THREADS]; /* -1: not pinned */
    int pinned;                 /* probe threads whose pinning succeeded */
    uint64_t buffer_bytes;
    int passes;
    double read_gbps, read_gbps_median; /* best and median pass, 1e9 bytes/s */
    double int8_gops, int8_gops_median; /* int8 multiply-adds per second / 1e9; 0: no probe */
    const char *int8_kernel;            /* "vpdpbusd zmm (AVX512-VNNI)", "none" */
    const char *read_kernel;            /* "64-byte loads (AVX-512)", "portable C" */
    char *binding_json;                 /* the session's pl_session_threads_report (malloc'd) */
    char *binding_text;
} bench_probe;

/* Reads the PU of every thread out of a pl_session_threads_report JSON; returns how many
 * (at most cap), or -1 when the report has no "threads" array. */
int bench_parse_pus(const char *report_json, int *pus, int cap);
/* The L3 bytes of the whole machine in that report (count x size), 0 when unknown. */
uint64_t bench_parse_l3(const char *report_json);
/* Runs both probes with n_threads threads pinned to pus[i] (negative: left unpinned), in a
 * child process, so the buffer never counts in this process's peak RSS. 0, or -1 with
 * a message in why. */
int bench_run_probe(bench_probe *p, int n_threads, const int *pus, uint64_t buffer_bytes, char *why,
                    size_t why_size);
/* The loops the probes use on this CPU. */
const char *bench_int8_kernel_name(void);
const char *bench_read_kernel_name(void);

/* x86 loops (bench_probe_x86.c, bench_probe_avx2.c): iters rounds of independent dot
 * instructions over src (64 bytes); return a checksum and set *macs to the multiply-adds. */
uint64_t bench_int8_vnni512(int64_t iters, const uint8_t *src, double *macs);
uint64_t bench_int8_avx2(int64_t iters, const uint8_t *src, double *macs);
/* Sum of n 64-bit words with the widest loads the CPU has (same result as portable C). */
uint64_t bench_read_avx512(const uint64_t *p, size_t n);
uint64_t bench_read_avx2(const uint64_t *p, size_t n);

/* ---- output (bench_output.c) ---- */
typedef struct bench_report {
    const bench_opts *o;
    bench_row *rows;
    int n_rows;
    bench_probe *probes;
    int n_probes;
    double load_avg[2]; /* /proc/loadavg (1 minute) at the start and the end; -1: unknown */
    char bg_cpus[256];  /* the CPUs background load runs on, "0-1,4"; "" when not known */
} bench_report;

/* The 1-minute load average, -1 when unknown: a busy machine makes every figure noisy. */
double bench_load_avg(void);

/* md and csv print the header before the first row and each row as it is measured;
 * json prints the whole document at the end. md has a "load" column only when some test runs
 * under a background load (as llama-bench shows a parameter only when it is set). */
void bench_print_header(FILE *f, const bench_opts *o);
void bench_print_row(FILE *f, const bench_opts *o, const bench_row *r);
void bench_print_footer(FILE *f, const bench_report *rep);
const bench_probe *bench_find_probe(const bench_report *rep, int n_threads);

#endif
