/* perf_report.c — reads the `plumb bench -o json` files of a paired run (perf.sh) and writes the
 * report: per row the median candidate/baseline ratio, its bootstrap interval and the verdict
 * (md + json + gnuplot data); also the absolute baseline file and the history table. Not a
 * benchmark: it measures nothing.
 *
 *   perf_report pairs   DIR PREFIX [--threshold T] [--load-max L] [--baseline FILE]
 *   perf_report baseline DIR OUT.json SIGNATURE
 *   perf_report history DIR PREFIX
 *
 * DIR/runs.tsv, one line per round and model: "round model order load_before load_after json..."
 * (pairs: json 1 is the candidate A, json 2 the baseline B; order "AB" or "BA" says which ran
 * first; history: one json per rev, rev labels in DIR/revs.txt). A json is a `plumb bench -o
 * json` document or a bench_chat one ("bench": "chat": its per-turn time to first token with and
 * without the prefix cache). Exit: 0, 1 a REGRESSION, 2 bad input. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_stats.h"

enum { MAX_SIDES = 16, MAX_METRICS = 256, MAX_ROUNDS = 256, RESAMPLES = 2000, SEED = 20240515 };

typedef struct metric {
    char name[96]; /* "qwen2-0.5b-Q8_0 tg128 tok/s" */
    char unit[16];
    int higher_is_better;
    int hidden;                         /* per-turn chat values: the plot's, not a table row */
    int n;                              /* rounds seen */
    double v[MAX_SIDES][MAX_ROUNDS];    /* per side, per round */
    double roof[MAX_SIDES][MAX_ROUNDS]; /* tg tok/s rows: % of roofline, NAN when unknown */
    int loaded[MAX_ROUNDS];             /* that round's load average was high */
    double load[MAX_ROUNDS];
} metric;

typedef struct report {
    metric *m;
    int n_m;
    int n_sides;
    json_t *first[MAX_SIDES];  /* one bench document per side: machine, build */
    double *lat[MAX_SIDES][8]; /* per-token latencies per side, per tg model (CDF) */
    size_t n_lat[MAX_SIDES][8];
    char lat_model[8][64];
    int n_lat_models;
} report;

static metric *get_metric(report *r, const char *name, const char *unit, int hib)
{
    for (int i = 0; i < r->n_m; i++)
        if (strcmp(r->m[i].name, name) == 0) return &r->m[i];
    if (r->n_m == MAX_METRICS) return NULL;
    metric *m = &r->m[r->n_m++];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->unit, sizeof m->unit, "%s", unit);
    m->higher_is_better = hib;
    for (int s = 0; s < MAX_SIDES; s++)
        for (int k = 0; k < MAX_ROUNDS; k++) m->v[s][k] = m->roof[s][k] = NAN;
    return m;
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void put(report *r, int round, int side, const char *name, const char *unit, int hib,
                double v, double roof, int loaded, double load)
{
    metric *m = get_metric(r, name, unit, hib);
    if (!m || round >= MAX_ROUNDS) return;
    m->v[side][round] = v;
    m->roof[side][round] = roof;
    m->loaded[round] = loaded;
    m->load[round] = load;
    if (round + 1 > m->n) m->n = round + 1;
}

static void add_latencies(report *r, int side, const char *model, json_t *samples)
{
    int k = 0;
    while (k < r->n_lat_models && strcmp(r->lat_model[k], model) != 0) k++;
    if (k == r->n_lat_models) {
        if (k == 8) return;
        snprintf(r->lat_model[k], sizeof r->lat_model[k], "%s", model);
        r->n_lat_models++;
    }
    size_t n = json_array_size(samples), old = r->n_lat[side][k];
    double *p = realloc(r->lat[side][k], (old + n) * sizeof *p);
    if (!p) return;
    for (size_t i = 0; i < n; i++) p[old + i] = json_number_value(json_array_get(samples, i));
    r->lat[side][k] = p;
    r->n_lat[side][k] = old + n;
}

enum { MAX_CHAT_TURNS = 64 };

/* A bench_chat document: per run (cache, no_cache) a visible row, the median time to first token
 * over turns 2.. (turn 1 is the same prefill either way; the median, since one turn's single
 * measurement can catch a stall), and a hidden metric per turn (the per-turn plot). */
static void read_chat(report *r, json_t *doc, int round, int side, int loaded, double load)
{
    const char *path = json_string_value(json_object_get(doc, "model"));
    char model[64];
    const char *b = path ? strrchr(path, '/') : NULL;
    snprintf(model, sizeof model, "%s", b ? b + 1 : path ? path : "?");
    char *dot = strstr(model, ".gguf");
    if (dot) *dot = 0;
    static const char *const runs[] = {"cache", "no_cache"};
    for (int k = 0; k < 2; k++) {
        json_t *turns = json_object_get(json_object_get(doc, "runs"), runs[k]);
        double ttft[MAX_CHAT_TURNS];
        int n = 0;
        size_t i;
        json_t *t;
        json_array_foreach(turns, i, t)
        {
            double ms = num(t, "ttft_ms");
            if (!isfinite(ms) || i >= MAX_CHAT_TURNS) continue;
            char name[96];
            snprintf(name, sizeof name, "chat %s turn %zu ttft (%s)", model, i + 1, runs[k]);
            put(r, round, side, name, "ms", 0, ms, NAN, loaded, load);
            metric *m = get_metric(r, name, "ms", 0);
            if (m) m->hidden = 1;
            if (i > 0) ttft[n++] = ms;
        }
        if (n) {
            char name[96];
            snprintf(name, sizeof name, "chat %s ttft turns 2-%d (%s)", model, n + 1, runs[k]);
            put(r, round, side, name, "ms", 0, perf_median(ttft, (size_t)n), NAN, loaded, load);
        }
    }
}

/* Every row of one bench document into the metrics of (round, side). */
static int read_bench(report *r, const char *path, int round, int side, int loaded, double load)
{
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    if (!doc) {
        fprintf(stderr, "perf_report: %s:%d: %s\n", path, e.line, e.text);
        return -1;
    }
    const char *kind = json_string_value(json_object_get(doc, "bench"));
    if (kind && strcmp(kind, "chat") == 0) { /* "missing": that build has no bench_chat */
        if (!json_is_true(json_object_get(doc, "missing")))
            read_chat(r, doc, round, side, loaded, load);
        json_decref(doc);
        return 0;
    }
    json_t *rows = json_object_get(doc, "results");
    size_t i;
    json_t *row;
    double rss = NAN, ttft = NAN;
    char model[64] = "";
    long long ttft_n = 0;
    json_array_foreach(rows, i, row)
    {
        const char *mod = json_string_value(json_object_get(row, "model"));
        const char *test = json_string_value(json_object_get(row, "test"));
        if (!mod || !test) continue;
        snprintf(model, sizeof model, "%s", mod);
        char name[96];
        double tok = num(json_object_get(row, "tok_s"), "median");
        double roof = num(row, "roofline_pct");
        double n_prompt = num(row, "n_prompt"), n_gen = num(row, "n_gen");
        snprintf(name, sizeof name, "%s %s tok/s", mod, test);
        put(r, round, side, name, "tok/s", 1, tok, roof, loaded, load);
        if (n_gen == 0 && (ttft_n == 0 || n_prompt < (double)ttft_n) && tok > 0) {
            ttft_n = (long long)n_prompt; /* the shortest prefill: its prompt's time */
            ttft = 1e3 * n_prompt / tok;
        }
        json_t *lat = json_object_get(row, "latency_ms");
        if (json_is_object(lat)) {
            snprintf(name, sizeof name, "%s %s latency p50", mod, test);
            put(r, round, side, name, "ms", 0, num(lat, "p50"), NAN, loaded, load);
            snprintf(name, sizeof name, "%s %s latency p99", mod, test);
            put(r, round, side, name, "ms", 0, num(lat, "p99"), NAN, loaded, load);
            json_t *s = json_object_get(lat, "samples");
            if (json_is_array(s)) add_latencies(r, side, mod, s);
        }
        double pr = num(row, "peak_rss");
        if (isfinite(pr) && (!isfinite(rss) || pr > rss)) rss = pr;
    }
    if (model[0] && ttft_n > 0) {
        char name[96];
        snprintf(name, sizeof name, "%s ttft (pp%lld)", model, ttft_n);
        put(r, round, side, name, "ms", 0, ttft, NAN, loaded, load);
    }
    if (model[0] && isfinite(rss)) {
        char name[96];
        snprintf(name, sizeof name, "%s peak RSS", model);
        put(r, round, side, name, "MiB", 0, rss / 1048576.0, NAN, loaded, load);
    }
    if (!r->first[side])
        r->first[side] = doc;
    else
        json_decref(doc);
    return 0;
}

/* DIR/runs.tsv into r; the load of a round is the higher of its before/after readings. */
static int read_runs(report *r, const char *dir, double load_max)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/runs.tsv", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "perf_report: cannot open %s\n", path);
        return -1;
    }
    char line[16384];
    int n_lines = 0;
    while (fgets(line, sizeof line, f)) {
        char *save = NULL, *tok[2 + 3 + MAX_SIDES];
        int nt = 0;
        for (char *t = strtok_r(line, " \t\n", &save); t && nt < (int)(sizeof tok / sizeof *tok);
             t = strtok_r(NULL, " \t\n", &save))
            tok[nt++] = t;
        if (nt < 6) continue;
        int round = atoi(tok[0]);
        double lb = atof(tok[3]), la = atof(tok[4]), load = lb > la ? lb : la;
        int sides = nt - 5;
        if (r->n_sides && sides != r->n_sides) {
            fprintf(stderr, "perf_report: %s: rows with %d and %d sides\n", path, r->n_sides,
                    sides);
            fclose(f);
            return -1;
        }
        r->n_sides = sides;
        for (int s = 0; s < sides; s++) {
            char jp[8192];
            snprintf(jp, sizeof jp, "%s/%s", dir, tok[5 + s]);
            if (read_bench(r, jp, round, s, load > load_max, load)) {
                fclose(f);
                return -1;
            }
        }
        n_lines++;
    }
    fclose(f);
    if (!n_lines) fprintf(stderr, "perf_report: %s: no runs\n", path);
    return n_lines ? 0 : -1;
}

/* Values of one side over the rounds where every side measured. */
static size_t side_values(const metric *m, int side, int n_sides, double *out)
{
    size_t k = 0;
    for (int i = 0; i < m->n; i++) {
        int ok = 1;
        for (int s = 0; s < n_sides; s++) ok &= isfinite(m->v[s][i]) && m->v[s][i] > 0;
        if (ok) out[k++] = m->v[side][i];
    }
    return k;
}

static const char *jstr_at(json_t *doc, const char *a, const char *b)
{
    const char *s = json_string_value(json_object_get(json_object_get(doc, a), b));
    return s ? s : "?";
}

static const char *row_kernels(json_t *doc)
{
    json_t *row = json_array_get(json_object_get(doc, "results"), 0);
    const char *s = json_string_value(json_object_get(row, "kernels"));
    return s ? s : "?";
}

static int row_threads(json_t *doc)
{
    json_t *row = json_array_get(json_object_get(doc, "results"), 0);
    return (int)json_integer_value(json_object_get(row, "n_threads"));
}

typedef struct row_stat {
    double a, b, ratio, lo, hi;
    int n, n_loaded;
    perf_verdict v;
} row_stat;

static void stat_row(const metric *m, double threshold, row_stat *st)
{
    double a[MAX_ROUNDS], b[MAX_ROUNDS], q[MAX_ROUNDS];
    size_t n = side_values(m, 0, 2, a);
    side_values(m, 1, 2, b);
    for (size_t i = 0; i < n; i++) q[i] = a[i] / b[i];
    st->n = (int)n;
    st->n_loaded = 0;
    for (int i = 0; i < m->n; i++) st->n_loaded += m->loaded[i];
    st->a = perf_median(a, n);
    st->b = perf_median(b, n);
    st->ratio = perf_median(q, n);
    perf_bootstrap_ci(q, n, RESAMPLES, SEED, &st->lo, &st->hi);
    st->v = perf_judge(st->lo, st->hi, m->higher_is_better, threshold);
}

static double median_roof(const metric *m, int side)
{
    double x[MAX_ROUNDS];
    size_t k = 0;
    for (int i = 0; i < m->n; i++)
        if (isfinite(m->roof[side][i])) x[k++] = m->roof[side][i];
    return perf_median(x, k);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The one-line absolute check against perf/baselines/<signature>.json (tok/s rows only). */
static void baseline_check(const report *r, const char *path, FILE *md)
{
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    if (!doc) return;
    json_t *rows = json_object_get(doc, "medians");
    double q[MAX_METRICS];
    size_t k = 0;
    for (int i = 0; i < r->n_m; i++) {
        const metric *m = &r->m[i];
        double base = num(rows, m->name);
        if (!m->higher_is_better || !isfinite(base) || base <= 0) continue;
        double a[MAX_ROUNDS];
        size_t n = side_values(m, 0, r->n_sides, a);
        if (n) q[k++] = perf_median(a, n) / base;
    }
    if (k) {
        char line[512];
        snprintf(line, sizeof line,
                 "absolute check (secondary) against %s (commit %.12s): candidate tok/s at %.3fx "
                 "of the recorded medians (median over %zu rows; absolute figures swing with load)",
                 path, jstr_at(doc, "build", "commit"), perf_median(q, k), k);
        printf("%s\n", line);
        fprintf(md, "\n%s\n", line);
    }
    json_decref(doc);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The median per turn of each side's hidden chat metrics: PREFIX-chat.dat, one line a turn
 * "turn A_cache A_no_cache B_cache B_no_cache" (the first chat model only). 1 when written. */
static int write_chat_dat(const report *r, const char *prefix)
{
    char path[4096], want[96] = "";
    for (int i = 0; i < r->n_m && !want[0]; i++)
        if (r->m[i].hidden) {
            snprintf(want, sizeof want, "%s", r->m[i].name);
            char *t = strstr(want, " turn ");
            if (t) *t = 0; /* "chat <model>" */
        }
    if (!want[0]) return 0;
    snprintf(path, sizeof path, "%s-chat.dat", prefix);
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fprintf(f,
            "# %s: turn, ttft ms (median over rounds): A cache, A no cache, B cache, B no "
            "cache\n",
            want);
    int lines = 0;
    for (int turn = 1; turn <= MAX_CHAT_TURNS; turn++) {
        double v[4];
        int ok = 0;
        for (int k = 0; k < 4; k++) {
            char name[128];
            snprintf(name, sizeof name, "%s turn %d ttft (%s)", want, turn,
                     k % 2 ? "no_cache" : "cache");
            v[k] = NAN;
            for (int i = 0; i < r->n_m; i++)
                if (strcmp(r->m[i].name, name) == 0) {
                    double a[MAX_ROUNDS];
                    size_t n = side_values(&r->m[i], k / 2, 2, a);
                    v[k] = perf_median(a, n);
                    ok += n > 0;
                }
        }
        if (ok < 4) break;
        fprintf(f, "%d %.6g %.6g %.6g %.6g\n", turn, v[0], v[1], v[2], v[3]);
        lines++;
    }
    fclose(f);
    return lines > 0;
}

static int do_pairs(report *r, const char *prefix, double threshold, double load_max,
                    const char *baseline)
{
    if (r->n_sides != 2) {
        fprintf(stderr, "perf_report: pairs need 2 runs a line, got %d\n", r->n_sides);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s.md", prefix);
    FILE *md = fopen(path, "w");
    snprintf(path, sizeof path, "%s.json", prefix);
    FILE *js = fopen(path, "w");
    snprintf(path, sizeof path, "%s-ratios.dat", prefix);
    FILE *rd = fopen(path, "w");
    snprintf(path, sizeof path, "%s-roofline.dat", prefix);
    FILE *rf = fopen(path, "w");
    if (!md || !js || !rd || !rf) {
        fprintf(stderr, "perf_report: cannot write %s.*\n", prefix);
        return 2;
    }
    json_t *A = r->first[0], *B = r->first[1];
    const char *pname = base_name(prefix);
    json_t *out = json_object();
    json_object_set_new(out, "candidate", json_string(jstr_at(A, "build", "commit")));
    json_object_set_new(out, "baseline", json_string(jstr_at(B, "build", "commit")));
    json_object_set(out, "machine", json_object_get(A, "machine"));
    json_object_set(out, "build_candidate", json_object_get(A, "build"));
    json_object_set(out, "build_baseline", json_object_get(B, "build"));
    json_object_set(out, "probes", json_object_get(A, "probes"));
    json_object_set_new(out, "kernels", json_string(row_kernels(A)));
    json_object_set_new(out, "threads", json_integer(row_threads(A)));
    json_object_set_new(out, "threshold", json_real(threshold));
    json_object_set_new(out, "load_max", json_real(load_max));
    json_object_set_new(out, "resamples", json_integer(RESAMPLES));
    json_object_set_new(out, "seed", json_integer(SEED));
    json_t *jrows = json_array();

    fprintf(md, "# perf: %.12s (A, candidate) against %.12s (B, baseline)\n\n",
            jstr_at(A, "build", "commit"), jstr_at(B, "build", "commit"));
    fprintf(md,
            "Paired, interleaved `plumb bench` runs (A B / B A alternating), same pinned cores, "
            "same threads (%d), kernel set %s. Ratio = A/B per pair; the median ratio and its "
            "95%% bootstrap interval (%d resamples, seed %d); the verdict needs the whole "
            "interval past %.0f%%. `load`: pairs whose 1-minute load average went above %.2f "
            "(kept in the statistics, marked here).\n\n",
            row_threads(A), row_kernels(A), RESAMPLES, SEED, threshold * 100, load_max);
    fprintf(md, "| row | A | B | A/B | 95%% interval | verdict | pairs | load |\n"
                "|---|---:|---:|---:|---|---|---:|---|\n");
    int regress = 0, idx = 0;
    for (int i = 0; i < r->n_m; i++) {
        const metric *m = &r->m[i];
        if (m->hidden) continue;
        row_stat st;
        stat_row(m, threshold, &st);
        if (st.n == 0) continue;
        regress |= st.v == PERF_REGRESSION;
        char loadtxt[32];
        snprintf(loadtxt, sizeof loadtxt, st.n_loaded ? "**high** %d/%d" : "ok", st.n_loaded, m->n);
        fprintf(md, "| %s | %.4g %s | %.4g %s | %.3f | [%.3f, %.3f] | %s | %d | %s |\n", m->name,
                st.a, m->unit, st.b, m->unit, st.ratio, st.lo, st.hi,
                st.v == PERF_REGRESSION ? "**REGRESSION**" : perf_verdict_name(st.v), st.n,
                loadtxt);
        fprintf(rd, "%d \"%s\" %.6g %.6g %.6g %d\n", idx++, m->name, st.ratio, st.lo, st.hi,
                m->higher_is_better);
        json_t *jr =
            json_pack("{s:s, s:s, s:b, s:f, s:f, s:f, s:f, s:f, s:s, s:i, s:i}", "row", m->name,
                      "unit", m->unit, "higher_is_better", m->higher_is_better, "a", st.a, "b",
                      st.b, "ratio", st.ratio, "lo", st.lo, "hi", st.hi, "verdict",
                      perf_verdict_name(st.v), "pairs", st.n, "loaded_pairs", st.n_loaded);
        json_t *pa = json_array(), *pb = json_array(), *pl = json_array();
        for (int k = 0; k < m->n; k++) {
            json_array_append_new(pa, json_real(m->v[0][k]));
            json_array_append_new(pb, json_real(m->v[1][k]));
            json_array_append_new(pl, json_real(m->load[k]));
        }
        json_object_set_new(jr, "a_pairs", pa);
        json_object_set_new(jr, "b_pairs", pb);
        json_object_set_new(jr, "load_pairs", pl);
        json_array_append_new(jrows, jr);
        double ra = median_roof(m, 0), rb = median_roof(m, 1);
        if (isfinite(ra) && isfinite(rb)) fprintf(rf, "\"%s\" %.4g %.4g\n", m->name, ra, rb);
    }
    json_object_set_new(out, "rows", jrows);
    /* latency CDFs: sorted samples per side and model */
    for (int k = 0; k < r->n_lat_models; k++)
        for (int s = 0; s < 2; s++) {
            size_t n = r->n_lat[s][k];
            if (!n) continue;
            qsort(r->lat[s][k], n, sizeof(double), cmp_d);
            snprintf(path, sizeof path, "%s-cdf-%d-%c.dat", prefix, k, s ? 'B' : 'A');
            FILE *c = fopen(path, "w");
            if (!c) continue;
            fprintf(c, "# %s\n", r->lat_model[k]);
            for (size_t i = 0; i < n; i++)
                fprintf(c, "%.6g %.6g\n", r->lat[s][k][i], (double)(i + 1) / (double)n);
            fclose(c);
        }
    int chat = write_chat_dat(r, prefix);
    fprintf(md, "\n**Verdict: %s.**\n",
            regress ? "REGRESSION (exit status 1)" : "no regression (exit status 0)");
    fprintf(md, "\n![ratio per row with its 95%% interval](%s-ratio.svg)\n", pname);
    if (r->n_lat_models) fprintf(md, "\n![decode latency CDF, A against B](%s-cdf.svg)\n", pname);
    fprintf(md, "\n![%% of the read roofline per tg row](%s-roofline.svg)\n", pname);
    if (chat)
        fprintf(md,
                "\n![chat: time to first token per turn, with and without the prefix cache, A "
                "and B](%s-chat.svg)\n",
                pname);
    json_t *mach = json_object_get(A, "machine");
    fprintf(md, "\n## Machine and binding\n\n- CPU: %s\n- topology: %s\n",
            json_string_value(json_object_get(mach, "cpu")),
            json_string_value(json_object_get(mach, "topology")));
    char *bind = json_dumps(json_object_get(mach, "bindings"), JSON_COMPACT);
    fprintf(md, "- binding (A's session): `%s`\n", bind ? bind : "?");
    free(bind);
    fprintf(md, "- compiler: A %s, B %s; build type %s\n", jstr_at(A, "build", "compiler"),
            jstr_at(B, "build", "compiler"), jstr_at(A, "build", "build_type"));
    fprintf(md, "- kernel set: %s, threads %d\n", row_kernels(A), row_threads(A));
    if (baseline) baseline_check(r, baseline, md);
    json_dumpf(out, js, JSON_INDENT(2));
    fputc('\n', js);
    json_decref(out);
    fclose(md);
    fclose(js);
    fclose(rd);
    fclose(rf);
    return regress ? 1 : 0;
}

static int do_baseline(report *r, const char *out_path, const char *sig)
{
    json_t *out = json_object(), *med = json_object();
    json_object_set_new(out, "cpu_signature", json_string(sig));
    json_object_set(out, "build", json_object_get(r->first[0], "build"));
    json_object_set_new(out, "cpu", json_string(jstr_at(r->first[0], "machine", "cpu")));
    json_object_set_new(out, "kernels", json_string(row_kernels(r->first[0])));
    json_object_set_new(out, "threads", json_integer(row_threads(r->first[0])));
    for (int i = 0; i < r->n_m; i++) {
        double a[MAX_ROUNDS];
        if (r->m[i].hidden) continue;
        size_t n = side_values(&r->m[i], 0, 1, a);
        if (n) json_object_set_new(med, r->m[i].name, json_real(perf_median(a, n)));
    }
    json_object_set_new(out, "medians", med);
    int rc = json_dump_file(out, out_path, JSON_INDENT(2));
    json_decref(out);
    return rc ? 2 : 0;
}

/* The instructions per token of each rev (DIR/instr-<rev>.json, perf_instr.sh's JSON, where the
 * rev has the callgrind drivers): a table in md and PREFIX-instr.dat (rev, one column per
 * "set model/phase" row, NaN where a rev has no count). */
static void history_instr(const char *dir, const char *prefix, char revs[][64], int nr, FILE *md)
{
    json_t *doc[MAX_SIDES] = {0};
    int any = 0;
    for (int s = 0; s < nr; s++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/instr-%s.json", dir, revs[s]);
        doc[s] = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
        any |= doc[s] != NULL;
    }
    if (!any) return;
    /* The rows: every per-token row of any rev, in first-seen order, with each rev's count. */
    char names[64][96];
    double v[64][MAX_SIDES];
    int n_names = 0;
    for (int s = 0; s < nr; s++) {
        size_t i;
        json_t *row;
        json_array_foreach(json_object_get(doc[s], "rows"), i, row)
        {
            const char *unit = json_string_value(json_object_get(row, "unit"));
            const char *set = json_string_value(json_object_get(row, "set"));
            const char *name = json_string_value(json_object_get(row, "name"));
            if (!unit || !set || !name || strcmp(unit, "per token") != 0) continue;
            char key[96];
            snprintf(key, sizeof key, "%s %s", set, name);
            int k = 0;
            while (k < n_names && strcmp(names[k], key) != 0) k++;
            if (k == n_names) {
                if (n_names == 64) continue;
                snprintf(names[n_names++], sizeof names[0], "%s", key);
                for (int t = 0; t < nr; t++) v[k][t] = NAN;
            }
            v[k][s] = (double)json_integer_value(json_object_get(row, "instructions"));
        }
    }
    fprintf(md, "\n## Instructions per token (callgrind; `-` where a rev predates the drivers)\n\n"
                "| row |");
    for (int s = 0; s < nr; s++) fprintf(md, " %s |", revs[s]);
    fprintf(md, "\n|---|");
    for (int s = 0; s < nr; s++) fprintf(md, "---:|");
    fprintf(md, "\n");
    for (int k = 0; k < n_names; k++) {
        fprintf(md, "| %s |", names[k]);
        for (int s = 0; s < nr; s++)
            isfinite(v[k][s]) ? fprintf(md, " %.0f |", v[k][s]) : fprintf(md, " - |");
        fprintf(md, "\n");
    }
    fprintf(md, "\n![instructions per token per rev](%s-instr.svg)\n", base_name(prefix));
    char path[4096];
    snprintf(path, sizeof path, "%s-instr.dat", prefix);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "rev");
        for (int k = 0; k < n_names; k++) fprintf(f, " \"%s\"", names[k]);
        fprintf(f, "\n");
        for (int s = 0; s < nr; s++) {
            fprintf(f, "%s", revs[s]);
            for (int k = 0; k < n_names; k++) fprintf(f, " %.6g", v[k][s]);
            fprintf(f, "\n");
        }
        fclose(f);
    }
    for (int s = 0; s < nr; s++) json_decref(doc[s]);
}

static int do_history(report *r, const char *dir, const char *prefix)
{
    char path[4096], revs[MAX_SIDES][64];
    snprintf(path, sizeof path, "%s/revs.txt", dir);
    FILE *f = fopen(path, "r");
    int nr = 0;
    while (f && nr < MAX_SIDES && fscanf(f, "%63s", revs[nr]) == 1) nr++;
    if (f) fclose(f);
    if (nr != r->n_sides) {
        fprintf(stderr, "perf_report: %s names %d revs, runs have %d\n", path, nr, r->n_sides);
        return 2;
    }
    snprintf(path, sizeof path, "%s.md", prefix);
    FILE *md = fopen(path, "w");
    snprintf(path, sizeof path, "%s.dat", prefix);
    FILE *dat = fopen(path, "w");
    if (!md || !dat) return 2;
    fprintf(md, "# perf history: tok/s per rev (median over the rounds)\n\n| row |");
    for (int s = 0; s < nr; s++) fprintf(md, " %s |", revs[s]);
    fprintf(md, "\n|---|");
    for (int s = 0; s < nr; s++) fprintf(md, "---:|");
    fprintf(md, "\n");
    fprintf(dat, "rev");
    for (int i = 0; i < r->n_m; i++)
        if (r->m[i].higher_is_better) fprintf(dat, " \"%s\"", r->m[i].name);
    fprintf(dat, "\n");
    double med[MAX_METRICS][MAX_SIDES];
    for (int i = 0; i < r->n_m; i++) {
        if (!r->m[i].higher_is_better) continue;
        fprintf(md, "| %s |", r->m[i].name);
        for (int s = 0; s < nr; s++) {
            double a[MAX_ROUNDS];
            size_t n = side_values(&r->m[i], s, nr, a);
            med[i][s] = perf_median(a, n);
            fprintf(md, " %.4g |", med[i][s]);
        }
        fprintf(md, "\n");
    }
    for (int s = 0; s < nr; s++) {
        fprintf(dat, "%s", revs[s]);
        for (int i = 0; i < r->n_m; i++)
            if (r->m[i].higher_is_better) fprintf(dat, " %.6g", med[i][s]);
        fprintf(dat, "\n");
    }
    fprintf(md, "\n![tok/s per rev](%s.svg)\n", base_name(prefix));
    history_instr(dir, prefix, revs, nr, md);
    fclose(md);
    fclose(dat);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fputs("usage: perf_report pairs DIR PREFIX [--threshold T] [--load-max L] "
              "[--baseline FILE]\n       perf_report baseline DIR OUT.json SIGNATURE\n"
              "       perf_report history DIR PREFIX\n",
              stderr);
        return 2;
    }
    double threshold = 0.03, load_max = 1e9;
    const char *baseline = NULL;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--threshold") == 0)
            threshold = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--load-max") == 0)
            load_max = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--baseline") == 0)
            baseline = argv[i + 1];
    }
    static report r;
    r.m = calloc(MAX_METRICS, sizeof *r.m);
    if (!r.m) return 2;
    if (read_runs(&r, argv[2], load_max)) return 2;
    if (strcmp(argv[1], "pairs") == 0) return do_pairs(&r, argv[3], threshold, load_max, baseline);
    if (strcmp(argv[1], "baseline") == 0 && argc >= 5) return do_baseline(&r, argv[3], argv[4]);
    if (strcmp(argv[1], "history") == 0) return do_history(&r, argv[2], argv[3]);
    fprintf(stderr, "perf_report: unknown mode '%s'\n", argv[1]);
    return 2;
}
