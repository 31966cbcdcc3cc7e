/* cmd_bench.c — `plumb bench`: llama-bench's interface over plumb. Loads each model once per
 * kernel set, runs pp<N>/tg<N> tests per thread count, depth and background load, and rates them
 * against the machine's measured limits (bench_probe.c). Output in bench_output.c. Not a
 * regression report. */
#define _GNU_SOURCE /* sched_setaffinity, cpu_set_t */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

enum { TG_PROMPT = 1 }; /* tokens evaluated before a tg test's timed steps */
enum { BENCH_MAX_LOAD = 1024 };

static void usage(FILE *out)
{
    fputs(
        "usage: plumb bench -m FILE[,FILE...] [options]\n"
        "\n"
        "Measures prefill and decode speed like llama-bench: for every model x kernel set x\n"
        "thread count x depth x background load, one row per test. pp<N>: N tokens in one\n"
        "evaluation, the last token's logits out. tg<N>: after a 1-token prompt, N tokens\n"
        "decoded one at a time (greedy).\n"
        "At depth D (\"pp512 @ d2048\") the KV cache holds D tokens before each repetition\n"
        "(filled untimed, the cache cut back to D between repetitions); at depth 0 each\n"
        "repetition starts from an empty cache. Each test runs once to warm up, then -r\n"
        "times; tok/s is the median (and min-max) over those, decode latency the\n"
        "p50/p90/p99 over every token. The same run measures the machine's limits on the\n"
        "threads the session pinned: streaming read bandwidth (each tg row: % of roofline =\n"
        "tok/s x bytes a token reads / bandwidth) and the int8 dot rate (each row of a\n"
        "quantized model: % of that peak).\n"
        "Progress goes to stderr, results to stdout.\n"
        "\n"
        "options (LIST: comma-separated; options may repeat and add to the list):\n"
        "  -m, --model FILE[,FILE...]  GGUF models\n"
        "  -p, --n-prompt LIST         prefill tests, tokens (default 512; 0: none)\n"
        "  -n, --n-gen LIST            decode tests, tokens (default 128; 0: none)\n"
        "  -t, --threads LIST          thread counts (default: PLUMB_THREADS, else one per\n"
        "                              physical core)\n"
        "  -r, --repetitions N         timed repetitions per test (default 5)\n"
        "  -d, --depth LIST            tokens in the KV cache before each test (default 0)\n"
        "  --background-load LIST      busy processes spinning on the bench's CPUs (its\n"
        "                              affinity mask) during each test, warm-up included\n"
        "                              (default 0): a loaded machine\n"
        "  --kernels LIST              kernel sets, e.g. ref,avx2,avx512 (default: PLUMB_KERNELS,\n"
        "                              else the best); each load builds that set's layouts\n"
        "  --no-repack                 run every weight from the mapping (PL_MODEL_NO_REPACK)\n"
        "  --chunk N                   prefill chunk in tokens (default 256)\n"
        "  -o, --output md|json|csv    output format (default md)\n"
        "  --probe-mib N               read probe buffer in MiB (default 1024; far beyond L3)\n"
        "  --no-probe                  skip both probes (no % of roofline or peak)\n"
        "  --latencies                 json: every decode token's latency in each tg row\n"
        "                              (\"latency_ms\".\"samples\", timed reps in order)\n"
        "  -h, --help                  show this help\n"
        "\n"
        "Exit status: 0 success, 1 failure (a model that does not load, a kernel set this CPU\n"
        "does not run, depth + test past the model's context), 2 bad command line.\n",
        out);
}

/* ---- options ---- */

static int push(void **arr, int *n, size_t elem, const void *v)
{
    void *p = realloc(*arr, (size_t)(*n + 1) * elem);
    if (!p) return -1;
    memcpy((char *)p + (size_t)*n * elem, v, elem);
    *arr = p;
    (*n)++;
    return 0;
}

/* "64,512" appended to *arr; 0 entries are kept here and dropped by the caller. */
static int parse_i64_list(const cli_args *a, const char *v, int64_t lo, int64_t hi, int64_t **arr,
                          int *n)
{
    char item[64];
    for (const char *p = v;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item)
            return cli_usage_error(a, "%s: '%s' is not a comma-separated list of numbers", a->arg,
                                   v);
        memcpy(item, p, len);
        item[len] = '\0';
        int64_t x;
        int rc = cli_parse_i64(a, item, lo, hi, &x);
        if (rc) return rc;
        if (push((void **)arr, n, sizeof x, &x)) return cli_errorf("out of memory");
        if (!p[len]) return 0;
        p += len + 1;
    }
}

static int parse_str_list(const cli_args *a, const char *v, char ***arr, int *n)
{
    for (const char *p = v;;) {
        size_t len = strcspn(p, ",");
        if (len == 0) return cli_usage_error(a, "%s: empty name in '%s'", a->arg, v);
        char *s = malloc(len + 1);
        if (!s) return cli_errorf("out of memory");
        memcpy(s, p, len);
        s[len] = '\0';
        if (push((void **)arr, n, sizeof s, &s)) {
            free(s);
            return cli_errorf("out of memory");
        }
        if (!p[len]) return 0;
        p += len + 1;
    }
}

static void drop_zeros(int64_t *v, int *n)
{
    int k = 0;
    for (int i = 0; i < *n; i++)
        if (v[i] != 0) v[k++] = v[i];
    *n = k;
}

static void free_opts(bench_opts *o)
{
    for (int i = 0; i < o->n_models; i++) free(o->models[i]);
    for (int i = 0; i < o->n_kernels; i++) free(o->kernels[i]);
    free(o->models);
    free(o->kernels);
    free(o->pp);
    free(o->tg);
    free(o->threads);
    free(o->depth);
    free(o->bg_load);
}

static int parse(int argc, char **argv, bench_opts *o)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "bench", usage);
    int pp_given = 0, tg_given = 0;
    for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
        const char *v;
        if (k == CLI_ARG_POSITIONAL)
            return cli_usage_error(&a, "unexpected argument '%s' (models go after -m)", a.arg);
        if (cli_is_help(&a)) return cli_help(&a) + 100;
        if (cli_is(&a, NULL, "--no-repack") || cli_is(&a, NULL, "--no-probe") ||
            cli_is(&a, NULL, "--latencies")) {
            if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
            if (cli_is(&a, NULL, "--no-repack"))
                o->no_repack = 1;
            else if (cli_is(&a, NULL, "--no-probe"))
                o->no_probe = 1;
            else
                o->latencies = 1;
            continue;
        }
        v = cli_value_ahead(&a);
        int rc = 0;
        if (cli_is(&a, "-m", "--model"))
            rc = parse_str_list(&a, v, &o->models, &o->n_models);
        else if (cli_is(&a, "-p", "--n-prompt")) {
            rc = parse_i64_list(&a, v, 0, 1 << 20, &o->pp, &o->n_pp);
            pp_given = 1;
        } else if (cli_is(&a, "-n", "--n-gen")) {
            rc = parse_i64_list(&a, v, 0, 1 << 20, &o->tg, &o->n_tg);
            tg_given = 1;
        } else if (cli_is(&a, "-t", "--threads"))
            rc = parse_i64_list(&a, v, 1, BENCH_MAX_THREADS, &o->threads, &o->n_threads);
        else if (cli_is(&a, "-d", "--depth"))
            rc = parse_i64_list(&a, v, 0, 1 << 24, &o->depth, &o->n_depth);
        else if (cli_is(&a, NULL, "--background-load"))
            rc = parse_i64_list(&a, v, 0, BENCH_MAX_LOAD, &o->bg_load, &o->n_bg_load);
        else if (cli_is(&a, "-r", "--repetitions"))
            rc = cli_parse_i64(&a, v, 1, 100000, &o->reps);
        else if (cli_is(&a, NULL, "--kernels"))
            rc = parse_str_list(&a, v, &o->kernels, &o->n_kernels);
        else if (cli_is(&a, NULL, "--chunk"))
            rc = cli_parse_i64(&a, v, 1, 1 << 20, &o->chunk);
        else if (cli_is(&a, NULL, "--probe-mib"))
            rc = cli_parse_i64(&a, v, 1, 1 << 20, &o->probe_mib);
        else if (cli_is(&a, "-o", "--output")) {
            if (strcmp(v, "md") == 0)
                o->format = BENCH_MD;
            else if (strcmp(v, "json") == 0)
                o->format = BENCH_JSON;
            else if (strcmp(v, "csv") == 0)
                o->format = BENCH_CSV;
            else
                return cli_usage_error(&a, "%s: '%s' is not md, json or csv", a.arg, v);
        } else
            return cli_unknown_option(&a);
        if (rc || (rc = cli_value_given(&a))) return rc;
    }
    if (o->n_models == 0) return cli_usage_error(&a, "no model: give -m FILE");
    int64_t dflt_pp = 512, dflt_tg = 128;
    if (!pp_given && push((void **)&o->pp, &o->n_pp, sizeof dflt_pp, &dflt_pp))
        return cli_errorf("out of memory");
    if (!tg_given && push((void **)&o->tg, &o->n_tg, sizeof dflt_tg, &dflt_tg))
        return cli_errorf("out of memory");
    drop_zeros(o->pp, &o->n_pp);
    drop_zeros(o->tg, &o->n_tg);
    if (o->n_pp + o->n_tg == 0) return cli_usage_error(&a, "no tests: -p and -n are all 0");
    int64_t zero = 0;
    if (o->n_threads == 0 && push((void **)&o->threads, &o->n_threads, sizeof zero, &zero))
        return cli_errorf("out of memory");
    if (o->n_depth == 0 && push((void **)&o->depth, &o->n_depth, sizeof zero, &zero))
        return cli_errorf("out of memory");
    if (o->n_bg_load == 0 && push((void **)&o->bg_load, &o->n_bg_load, sizeof zero, &zero))
        return cli_errorf("out of memory");
    char *none = NULL;
    if (o->n_kernels == 0 && push((void **)&o->kernels, &o->n_kernels, sizeof none, &none))
        return cli_errorf("out of memory");
    return 0;
}

/* ---- measurements ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double percentile(const double *v, size_t n, double q)
{
    size_t k = (size_t)(q / 100.0 * (double)n + 0.999999);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return v[k - 1];
}

/* VmHWM is reset to the current RSS by writing 5 to clear_refs (Linux 4.0+). */
static int reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static uint64_t peak_rss(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kib = 0;
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", &kib) == 1) {
            found = 1;
            break;
        }
    if (f) fclose(f);
    if (found) return (uint64_t)kib * 1024;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (uint64_t)ru.ru_maxrss * 1024; /* KiB on Linux */
}

static int32_t argmax(const float *v, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return (int32_t)best;
}

typedef struct runner {
    const bench_opts *o;
    bench_report rep;
    int cap_rows;
    int tty, header_done;
    const char *model_name, *set;
    int n_threads;
    cpu_set_t cpus; /* the process's affinity mask at start: where background load runs */
    int have_cpus;
} runner;

static void progress(const runner *r, const char *test, int rep, int reps)
{
    if (rep == 0)
        fprintf(stderr, "%s%s set %s threads %d: %s warm-up%s", r->tty ? "\r\033[K" : "",
                r->model_name, r->set, r->n_threads, test, r->tty ? "" : "\n");
    else
        fprintf(stderr, "%s%s set %s threads %d: %s rep %d/%d%s", r->tty ? "\r\033[K" : "",
                r->model_name, r->set, r->n_threads, test, rep, reps, r->tty ? "" : "\n");
}

/* One test: warm-up + reps, each from row->depth tokens in the cache (tokens[0..depth), which
 * the caller has put there; every rep cuts the cache back to them). tokens holds
 * depth + max(n, TG_PROMPT) ids; lat (tg) n * reps slots; sorted reps slots. */
static pl_status run_test(runner *r, pl_session *s, bench_row *row, const int32_t *tokens,
                          float *logits, int64_t n_vocab, double *lat, double *sorted,
                          pl_error *err)
{
    int tg = row->n_gen > 0;
    int64_t n = tg ? row->n_gen : row->n_prompt, d = row->depth;
    uint64_t eval_ns = 0, attn_ns = 0; /* over the timed steps of the timed reps */
    uint64_t work_ns = 0, wait_ns = 0, runs = 0, benched = 0;
    pl_session_info i0, i1;
#define ADD_PROFILE()                                                                              \
    do {                                                                                           \
        eval_ns += i1.eval_ns - i0.eval_ns;                                                        \
        attn_ns += i1.attention_ns - i0.attention_ns;                                              \
        work_ns += i1.pool_work_ns - i0.pool_work_ns;                                              \
        wait_ns += i1.pool_wait_ns - i0.pool_wait_ns;                                              \
        runs += i1.pool_runs - i0.pool_runs;                                                       \
        benched += i1.pool_benched_runs - i0.pool_benched_runs;                                    \
    } while (0)
    for (int rep = 0; rep <= row->reps; rep++) {
        progress(r, row->test, rep, row->reps);
        pl_status st = pl_session_truncate(s, d, err);
        if (st) return st;
        double t_sum = 0;
        if (!tg) {
            pl_session_get_info(s, &i0, NULL);
            double t0 = pl_clock_s();
            /* the last token's logits, as a prompt before sampling (and llama-bench) */
            if ((st = pl_session_eval(s, tokens + d, n, logits, 0, err))) return st;
            t_sum = pl_clock_s() - t0;
            pl_session_get_info(s, &i1, NULL);
            if (rep > 0) ADD_PROFILE();
        } else {
            if ((st = pl_session_eval(s, tokens + d, TG_PROMPT, logits, 0, err))) return st;
            for (int64_t i = 0; i < n; i++) {
                int32_t tok = argmax(logits, n_vocab);
                pl_session_get_info(s, &i0, NULL);
                double t0 = pl_clock_s();
                if ((st = pl_session_eval(s, &tok, 1, logits, 0, err))) return st;
                double dt = pl_clock_s() - t0;
                pl_session_get_info(s, &i1, NULL);
                if (rep > 0) ADD_PROFILE();
                t_sum += dt;
                if (rep > 0) lat[(size_t)(rep - 1) * (size_t)n + (size_t)i] = dt * 1e3;
            }
        }
        if (rep > 0) row->tok_s[rep - 1] = (double)n / (t_sum > 0 ? t_sum : 1e-12);
    }
    if (r->tty) fputs("\r\033[K", stderr);
#undef ADD_PROFILE
    row->attention_share = eval_ns > 0 ? (double)attn_ns / (double)eval_ns : -1;
    row->wait_share = eval_ns > 0 ? (double)wait_ns / (double)eval_ns : -1;
    row->serial_share = eval_ns > 0 && work_ns + wait_ns <= eval_ns
                            ? (double)(eval_ns - work_ns - wait_ns) / (double)eval_ns
                            : -1;
    row->runs_per_token = (double)runs / (double)(n * row->reps);
    row->benched_runs = benched;
    memcpy(sorted, row->tok_s, (size_t)row->reps * sizeof *sorted);
    qsort(sorted, (size_t)row->reps, sizeof *sorted, cmp_double);
    int k = row->reps;
    row->tok_s_min = sorted[0];
    row->tok_s_max = sorted[k - 1];
    row->tok_s_med = k % 2 ? sorted[k / 2] : 0.5 * (sorted[k / 2 - 1] + sorted[k / 2]);
    if (tg) {
        size_t m = (size_t)n * (size_t)row->reps;
        if (r->o->latencies && (row->lat_samples = malloc(m * sizeof *lat))) {
            memcpy(row->lat_samples, lat, m * sizeof *lat); /* before the sort: time order */
            row->n_lat_samples = m;
        }
        qsort(lat, m, sizeof *lat, cmp_double);
        row->has_latency = 1;
        row->lat_p50 = percentile(lat, m, 50);
        row->lat_p90 = percentile(lat, m, 90);
        row->lat_p99 = percentile(lat, m, 99);
    }
    return PL_OK;
}

/* Puts tokens[0..depth) in the cache, untimed. *valid is how many leading entries of the
 * cache are tokens[0..valid) (every test evaluates the ids that follow its depth), so a
 * deeper fill extends what is there and a shallower one only cuts. */
static pl_status fill_depth(runner *r, pl_session *s, const int32_t *tokens, int64_t depth,
                            int64_t *valid, pl_error *err)
{
    int64_t keep = *valid < depth ? *valid : depth;
    pl_status st = pl_session_truncate(s, keep, err);
    *valid = keep;
    if (st || keep == depth) return st;
    fprintf(stderr, "%s%s set %s threads %d: filling the cache to depth %lld%s",
            r->tty ? "\r\033[K" : "", r->model_name, r->set, r->n_threads, (long long)depth,
            r->tty ? "" : "\n");
    st = pl_session_eval(s, tokens + keep, depth - keep, NULL, 0, err);
    if (!st) *valid = depth;
    return st;
}

/* ---- background load ---- */

/* The busy processes of one test, forked from the main thread (the parent-death signal
 * follows the thread that forked, and this one lives until the bench ends). */
typedef struct bg_procs {
    pid_t *pid;
    int n;
} bg_procs;

/* A busy process: integer work until killed; SIGKILL too when the bench dies, however. */
static _Noreturn void bg_child(pid_t parent, const cpu_set_t *cpus)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0); /* the bench died before prctl took */
    if (cpus) sched_setaffinity(0, sizeof *cpus, cpus);
    prctl(PR_SET_NAME, "plumb-bgload");
    volatile uint64_t x = (uint64_t)getpid();
    for (;;) x = x * 6364136223846793005u + 1442695040888963407u;
}

static void bg_stop(bg_procs *b)
{
    for (int i = 0; i < b->n; i++) kill(b->pid[i], SIGKILL);
    for (int i = 0; i < b->n; i++)
        while (waitpid(b->pid[i], NULL, 0) < 0 && errno == EINTR) {
        }
    free(b->pid);
    b->pid = NULL;
    b->n = 0;
}

/* Starts n busy processes on the bench's CPUs; on failure none is left running. */
static int bg_start(runner *r, bg_procs *b, int n)
{
    if (n == 0) return 0;
    if (!(b->pid = malloc((size_t)n * sizeof *b->pid))) return cli_errorf("out of memory");
    pid_t parent = getpid();
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) bg_child(parent, r->have_cpus ? &r->cpus : NULL);
        if (pid < 0) {
            int e = errno;
            bg_stop(b);
            return cli_errorf("background load: fork of busy process %d of %d: %s", i + 1, n,
                              strerror(e));
        }
        b->pid[b->n++] = pid;
    }
    return 0;
}

/* "0-3,8" from a CPU mask. */
static void format_cpus(char *buf, size_t cap, const cpu_set_t *set)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, set)) continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set)) e++;
        int w = e > c ? snprintf(buf + len, cap - len, "%s%d-%d", len ? "," : "", c, e)
                      : snprintf(buf + len, cap - len, "%s%d", len ? "," : "", c);
        if (w < 0 || (size_t)w >= cap - len) { /* does not fit: say so */
            snprintf(buf, cap, "%d CPUs", CPU_COUNT(set));
            return;
        }
        len += (size_t)w;
        c = e;
    }
}

/* The limits a row is rated against: bytes and multiply-adds per token, and the shares. */
static void rate_row(bench_row *row, const bench_probe *p)
{
    const pl_model_info *mi = &row->mi;
    row->macs_per_token = (double)mi->n_active_params -
                          (mi->tied_embeddings ? 0.0 : (double)mi->n_vocab * (double)mi->n_embd);
    if (row->n_gen > 0) {
        row->avg_n_past = (double)row->depth + TG_PROMPT + ((double)row->n_gen + 1) / 2;
        row->bytes_per_token = (double)mi->step_weight_bytes +
                               (double)mi->n_layer * row->avg_n_past * (double)mi->n_head_kv *
                                   (double)mi->head_dim * 2.0 * row->kv_bytes;
    }
    if (!p) return;
    row->read_gbps = p->read_gbps;
    row->int8_gops = p->int8_gops;
    if (row->n_gen > 0 && p->read_gbps > 0)
        row->roofline_pct = row->tok_s_med * row->bytes_per_token / (p->read_gbps * 1e9) * 100;
    if (row->quantized && p->int8_gops > 0)
        row->int8_pct = row->tok_s_med * row->macs_per_token / (p->int8_gops * 1e9) * 100;
}

static bench_row *new_row(runner *r)
{
    if (r->rep.n_rows == r->cap_rows) {
        int cap = r->cap_rows ? 2 * r->cap_rows : 16;
        bench_row *p = realloc(r->rep.rows, (size_t)cap * sizeof *p);
        if (!p) return NULL;
        r->rep.rows = p;
        r->cap_rows = cap;
    }
    bench_row *row = &r->rep.rows[r->rep.n_rows];
    memset(row, 0, sizeof *row);
    return row;
}

/* The session's binding report and, unless --no-probe, the probes at its thread count on the
 * PUs its pool chose: once per thread count. */
static int ensure_probe(runner *r, pl_session *s, int n_threads)
{
    if (bench_find_probe(&r->rep, n_threads)) return 0;
    bench_probe *ps = realloc(r->rep.probes, (size_t)(r->rep.n_probes + 1) * sizeof *ps);
    if (!ps) return cli_errorf("out of memory");
    r->rep.probes = ps;
    bench_probe *p = &ps[r->rep.n_probes];
    memset(p, 0, sizeof *p);
    p->n_threads = n_threads;
    p->int8_kernel = bench_int8_kernel_name();
    size_t len = 0, tlen = 0;
    pl_session_threads_report(s, 1, NULL, 0, &len, NULL);
    pl_session_threads_report(s, 0, NULL, 0, &tlen, NULL);
    p->binding_json = malloc(len + 1);
    p->binding_text = malloc(tlen + 1);
    r->rep.n_probes++; /* from here on the report owns the two strings */
    if (!p->binding_json || !p->binding_text) return cli_errorf("out of memory");
    pl_error err;
    pl_status st = pl_session_threads_report(s, 1, p->binding_json, len + 1, NULL, &err);
    if (!st) st = pl_session_threads_report(s, 0, p->binding_text, tlen + 1, NULL, &err);
    if (st) return cli_fail(st, &err);
    if (r->o->no_probe) return 0;
    int *pus = malloc((size_t)n_threads * sizeof *pus);
    if (!pus) return cli_errorf("out of memory");
    int got = bench_parse_pus(p->binding_json, pus, n_threads);
    for (int i = got < 0 ? 0 : got; i < n_threads; i++) pus[i] = -1;
    fprintf(stderr, "%sprobing %d thread(s): read bandwidth over %lld MiB, int8 dot rate (%s)%s",
            r->tty ? "\r\033[K" : "", n_threads, (long long)r->o->probe_mib, p->int8_kernel,
            r->tty ? "" : "\n");
    uint64_t l3 = bench_parse_l3(p->binding_json), buf = (uint64_t)r->o->probe_mib << 20;
    if (l3 && buf <= l3)
        fprintf(stderr,
                "%swarning: the probe buffer (%lld MiB) fits in the L3 hwloc reports (%.0f MiB): "
                "the read rate may be a cache rate (raise --probe-mib)\n",
                r->tty ? "\r\033[K" : "", (long long)r->o->probe_mib, (double)l3 / 1048576.0);
    char why[256];
    int rc = bench_run_probe(p, n_threads, pus, (uint64_t)r->o->probe_mib << 20, why, sizeof why);
    free(pus);
    if (rc) return cli_errorf("%s", why);
    p->measured = 1;
    return 0;
}

static void name_of(char *out, size_t cap, const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 5 && strcmp(b + n - 5, ".gguf") == 0) n -= 5;
    snprintf(out, cap, "%.*s", (int)n, b);
}

/* Every test of one model at one kernel set, for each thread count. */
static int bench_load(runner *r, const char *path, const char *set)
{
    const bench_opts *o = r->o;
    bench_row base;
    memset(&base, 0, sizeof base);
    base.path = path;
    name_of(base.name, sizeof base.name, path);
    base.kernels_requested = set;
    base.peak_rss_scope_model = reset_peak_rss();
    r->model_name = base.name;
    r->set = set ? set : "default";
    pl_error err;
    pl_model *m = NULL;
    pl_session *s = NULL;
    int32_t *tokens = NULL;
    float *logits = NULL;
    double *lat = NULL, *sorted = NULL;
    bg_procs bg = {NULL, 0};
    pl_status st;
    int rc = CLI_EXIT_FAIL;
    pl_model_params mp = {.flags = o->no_repack ? PL_MODEL_NO_REPACK : 0, .kernels = set};
    fprintf(stderr, "%sloading %s (set %s)%s", r->tty ? "\r\033[K" : "", path, r->set,
            r->tty ? "" : "\n");
    double t0 = pl_clock_s();
    if ((st = pl_model_load(&m, path, &mp, &err))) goto fail;
    base.load_ms = (pl_clock_s() - t0) * 1e3;
    if ((st = pl_model_get_info(m, &base.mi, &err))) goto fail;
    const pl_gguf *g = pl_model_gguf(m);
    base.file_bytes = (uint64_t)pl_gguf_size(g);
    uint32_t ft;
    const char *ftn = pl_gguf_get_u32(g, "general.file_type", &ft, NULL) ? NULL : pl_ftype_name(ft);
    snprintf(base.ftype, sizeof base.ftype, "%s", ftn ? ftn : "?");
    pl_type bt = ftn ? pl_ftype_base_type(ft) : PL_TYPE_COUNT;
    base.quantized =
        bt != PL_TYPE_COUNT && bt != PL_TYPE_F32 && bt != PL_TYPE_F16 && bt != PL_TYPE_BF16;

    int64_t max_pp = 0, max_tg = 0, max_depth = 0;
    for (int i = 0; i < o->n_pp; i++) max_pp = o->pp[i] > max_pp ? o->pp[i] : max_pp;
    for (int i = 0; i < o->n_tg; i++) max_tg = o->tg[i] > max_tg ? o->tg[i] : max_tg;
    for (int i = 0; i < o->n_depth; i++)
        max_depth = o->depth[i] > max_depth ? o->depth[i] : max_depth;
    int64_t test_ctx = max_pp > TG_PROMPT + max_tg ? max_pp : TG_PROMPT + max_tg;
    int64_t n_ctx = max_depth + test_ctx;
    if (base.mi.n_ctx_train > 0 && n_ctx > base.mi.n_ctx_train) {
        rc = cli_errorf("%s: depth %lld + the longest test (%lld tokens%s) needs a context of "
                        "%lld tokens, more than the model's %lld (n_ctx_train); lower -d, -p or -n",
                        path, (long long)max_depth, (long long)test_ctx,
                        max_tg ? ", tg counting its 1-token prompt" : "", (long long)n_ctx,
                        (long long)base.mi.n_ctx_train);
        goto out;
    }
    int64_t n_tok = max_depth + (max_pp > TG_PROMPT ? max_pp : TG_PROMPT);
    int64_t n_vocab = base.mi.n_vocab;
    tokens = malloc((size_t)n_tok * sizeof *tokens);
    logits = malloc((size_t)n_vocab * sizeof *logits);
    lat = malloc(((size_t)max_tg * (size_t)o->reps + 1) * sizeof *lat);
    sorted = malloc((size_t)o->reps * sizeof *sorted);
    if (!tokens || !logits || !lat || !sorted) {
        rc = cli_errorf("out of memory");
        goto out;
    }
    for (int64_t i = 0; i < n_tok; i++) /* fixed ids spread over the vocabulary */
        tokens[i] = (int32_t)((i * 7919 + 13) % n_vocab);

    for (int ti = 0; ti < o->n_threads; ti++) {
        pl_session_params sp = pl_session_default_params(m);
        sp.n_threads = (int)o->threads[ti];
        sp.context_window = n_ctx;
        sp.sliding_window = 0;
        sp.kernels = set;
        if (o->chunk) sp.prefill_chunk = o->chunk;
        if ((st = pl_session_new(&s, m, &sp, &err))) goto fail;
        pl_session_info si;
        if ((st = pl_session_get_info(s, &si, &err))) goto fail;
        r->n_threads = si.n_threads;
        r->set = set ? set : si.kernels;
        if ((rc = ensure_probe(r, s, si.n_threads))) goto out;
        rc = CLI_EXIT_FAIL;
        int64_t valid = 0; /* leading cache entries that are tokens[0..valid) */
        for (int di = 0; di < o->n_depth; di++)
            for (int k = 0; k < o->n_pp + o->n_tg; k++)
                for (int bi = 0; bi < o->n_bg_load; bi++) {
                    int64_t depth = o->depth[di];
                    bench_row *row = new_row(r);
                    if (!row) {
                        rc = cli_errorf("out of memory");
                        goto out;
                    }
                    *row = base;
                    snprintf(row->kernels, sizeof row->kernels, "%s", si.kernels);
                    row->n_threads = si.n_threads;
                    row->repacked = si.repacked;
                    row->chunk = sp.prefill_chunk;
                    row->kv_bytes = sp.kv_type == PL_TYPE_F32 ? 4 : 2;
                    row->reps = (int)o->reps;
                    row->depth = depth;
                    row->bg_load = (int)o->bg_load[bi];
                    char at[32] = "";
                    if (depth > 0) snprintf(at, sizeof at, " @ d%lld", (long long)depth);
                    if (k < o->n_pp) {
                        row->n_prompt = o->pp[k];
                        snprintf(row->test, sizeof row->test, "pp%lld%s", (long long)row->n_prompt,
                                 at);
                    } else {
                        row->n_prompt = TG_PROMPT;
                        row->n_gen = o->tg[k - o->n_pp];
                        snprintf(row->test, sizeof row->test, "tg%lld%s", (long long)row->n_gen,
                                 at);
                    }
                    if (!(row->tok_s = calloc((size_t)row->reps, sizeof *row->tok_s))) {
                        rc = cli_errorf("out of memory");
                        goto out;
                    }
                    r->rep.n_rows++;
                    if ((st = fill_depth(r, s, tokens, depth, &valid, &err))) goto fail;
                    if ((rc = bg_start(r, &bg, row->bg_load))) goto out;
                    rc = CLI_EXIT_FAIL;
                    st = run_test(r, s, row, tokens, logits, n_vocab, lat, sorted, &err);
                    bg_stop(&bg);
                    if (st) goto fail;
                    /* what the test left: pp its ids after the depth, tg only its prompt */
                    valid = depth + (row->n_gen > 0 ? TG_PROMPT : row->n_prompt);
                    row->peak_rss = peak_rss();
                    rate_row(row, bench_find_probe(&r->rep, si.n_threads));
                    if (!r->header_done) bench_print_header(stdout, o);
                    r->header_done = 1;
                    bench_print_row(stdout, o, row);
                    fflush(stdout);
                }
        pl_session_free(s);
        s = NULL;
    }
    rc = CLI_EXIT_OK;
    goto out;
fail:
    if (r->tty) fputs("\r\033[K", stderr);
    rc = cli_fail(st, &err);
out:
    bg_stop(&bg);
    free(tokens);
    free(logits);
    free(lat);
    free(sorted);
    pl_session_free(s);
    pl_model_free(m);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    bench_opts o = {.reps = 5, .probe_mib = 1024};
    int rc = parse(argc, argv, &o);
    if (rc) {
        free_opts(&o);
        return rc >= 100 ? rc - 100 : rc;
    }
    /* Every model path before the first is measured: a typo in the last of -m a,b,c fails
     * now, not after the others ran. */
    for (int mi = 0; mi < o.n_models; mi++)
        if ((rc = cli_check_input(o.models[mi]))) {
            free_opts(&o);
            return rc;
        }
    runner r = {.o = &o, .rep = {.o = &o}, .tty = isatty(fileno(stderr))};
    /* Background load runs where the bench may run: the process's mask, taken before any
     * thread could be pinned (the children inherit the forking thread's mask otherwise). */
    r.have_cpus = sched_getaffinity(0, sizeof r.cpus, &r.cpus) == 0;
    if (r.have_cpus) format_cpus(r.rep.bg_cpus, sizeof r.rep.bg_cpus, &r.cpus);
    r.rep.load_avg[0] = bench_load_avg();
    for (int mi = 0; mi < o.n_models && rc == 0; mi++)
        for (int ki = 0; ki < o.n_kernels && rc == 0; ki++)
            rc = bench_load(&r, o.models[mi], o.kernels[ki]);
    r.rep.load_avg[1] = bench_load_avg();
    if (rc == 0) bench_print_footer(stdout, &r.rep);
    for (int i = 0; i < r.rep.n_rows; i++) {
        free(r.rep.rows[i].tok_s);
        free(r.rep.rows[i].lat_samples);
    }
    for (int i = 0; i < r.rep.n_probes; i++) {
        free(r.rep.probes[i].binding_json);
        free(r.rep.probes[i].binding_text);
    }
    free(r.rep.rows);
    free(r.rep.probes);
    free_opts(&o);
    return rc;
}
