/* bench_chat.c — per-turn latency of a multi-turn chat with the prefix cache on and off: a fixed
 * 10-turn conversation (each user turn ~60 new tokens of deterministic text, 64 greedy tokens
 * generated per reply, end-of-generation ignored) replayed on one session with pl_chat_messages,
 * keeping the cache; then the same turns without it: pl_chat_reset before every turn and the
 * whole prompt of that turn (the very ids the cached run held) prefilled again. Prints time to
 * first token, cache path and prefilled tokens per turn; writes JSON for a report. A benchmark,
 * not a test: it checks the goal (with the cache, turn 10's ttft <= 1.3x turn 2's) and says so.
 *
 * Why the same ids and not the same text without the cache: a synthetic model's replies are
 * runs of random tokens, many of them synthetic merges that re-tokenize into ~10 tokens each, so
 * re-rendering its own replies multiplies the conversation's length (a real model's output
 * re-tokenizes to about its own length). --literal adds that run too (pl_chat_reset, then
 * pl_chat_messages on its own conversation, until the context is full).
 *
 * Each turn's time to first token is the median of --reps measurements (3): reps - 1 probes that
 * draw one token and truncate the session back, then the turn itself.
 *
 * Run: ./bench_chat MODEL.gguf [-t THREADS] [-o OUT.json] [--turns N] [--user-tokens N]
 *                   [--gen N] [--reps N] [--kernels NAME] [--literal]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plumb.h"

#define MAX_TURNS 64

#define MAX_REPS 16

typedef struct turn_result {
    pl_chat_stats st; /* of the turn that was kept; st.gen.ttft_ms is the median of ttft[] */
    double ttft[MAX_REPS];
    int n_ttft;
} turn_result;

/* One replay of the conversation: its turns (n_done of them finished). */
typedef struct run {
    const char *name;
    turn_result t[MAX_TURNS];
    int n_done;
} run;

typedef struct bench {
    const pl_model *m;
    pl_session *s;
    int turns, reps;
    int64_t user_tokens, gen;
    char *user[MAX_TURNS];   /* the user messages, the same in every run */
    int32_t *ids[MAX_TURNS]; /* the cached run's prompt ids of each turn */
    int64_t n_ids[MAX_TURNS];
} bench;

static uint64_t rnd(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static const char *const words[] = {
    "the",   "river",   "a",        "small",   "town",   "where",   "people",  "walked",
    "every", "morning", "to",       "market",  "and",    "talked",  "about",   "weather",
    "of",    "summer",  "children", "played",  "near",   "old",     "bridge",  "while",
    "their", "parents", "sold",     "bread",   "apples", "fresh",   "fish",    "from",
    "boats", "that",    "came",     "in",      "before", "sunrise", "teacher", "asked",
    "why",   "stars",   "shine",    "at",      "night",  "answer",  "was",     "simple",
    "light", "travels", "far",      "through", "cold",   "space",   "library", "kept",
    "books", "on",      "history",  "science", "music",  "cooking", "gardens", "machines",
};
enum { N_WORDS = sizeof words / sizeof words[0] };

/* Turn t's user message: words drawn from a fixed stream until the text alone is at least
 * `tokens` tokens. Deterministic for a given model. */
static char *make_user_text(const pl_model *m, int t, int64_t tokens)
{
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    int32_t *ids = malloc(4096 * sizeof *ids);
    if (!s || !ids) goto fail;
    uint64_t seed = 1000 + (uint64_t)t;
    len = (size_t)snprintf(s, cap, "Question %d:", t + 1);
    for (;;) {
        size_t n_ids = 0;
        if (pl_tokenize(m, s, len, 0, ids, 4096, &n_ids, NULL)) goto fail;
        if ((int64_t)n_ids >= tokens) break;
        const char *w = words[rnd(&seed) % N_WORDS];
        size_t wl = strlen(w);
        if (len + wl + 3 >= cap) goto fail;
        s[len++] = ' ';
        memcpy(s + len, w, wl);
        len += wl;
        if (rnd(&seed) % 9 == 0) s[len++] = rnd(&seed) % 3 ? ',' : '.';
        s[len] = 0;
    }
    s[len++] = '?';
    s[len] = 0;
    free(ids);
    return s;
fail:
    free(s);
    free(ids);
    return NULL;
}

typedef struct reply {
    char *text;
    size_t len, cap;
} reply;

static int on_text(void *user, const char *text, size_t len)
{
    reply *r = user;
    if (r->len + len + 1 > r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 1024;
        while (cap < r->len + len + 1) cap *= 2;
        char *p = realloc(r->text, cap);
        if (!p) return 1;
        r->text = p;
        r->cap = cap;
    }
    memcpy(r->text + r->len, text, len);
    r->len += len;
    r->text[r->len] = 0;
    return 0;
}

static void progress(const char *name, int t, const turn_result *tr)
{
    const pl_chat_stats *st = &tr->st;
    fprintf(stderr, "  %-13s turn %2d: %-4s reused %5lld, prefilled %5lld, ttft %9.1f ms (", name,
            t + 1, pl_chat_path_str(st->path), (long long)st->n_reused, (long long)st->n_prefilled,
            st->gen.ttft_ms);
    for (int i = 0; i < tr->n_ttft; i++) fprintf(stderr, "%s%.1f", i ? " " : "", tr->ttft[i]);
    fputs(")\n", stderr);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[MAX_REPS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static void fail_turn(const run *r, int t, pl_status s, const pl_error *err)
{
    fprintf(stderr, "  %-13s turn %2d: %s: %s (the run stops here)\n", r->name, t + 1,
            pl_status_str(s), err->msg);
}

/* The conversation through pl_chat_messages: cache = 1 keeps the session's cache (and records
 * each turn's prompt ids), 0 resets it before every turn. Each turn is first probed reps - 1
 * times for its time to first token (one token drawn, then the session is truncated back to
 * where it was, so the probe and the kept turn see the same state). Stops at the first error. */
static void replay_chat(bench *b, int cache, run *r)
{
    pl_chat_message msgs[1 + 2 * MAX_TURNS];
    size_t n = 0;
    msgs[n++] = (pl_chat_message){"system", "You are a helpful assistant. Answer in detail."};
    pl_gen_params gp = pl_gen_default_params(), probe;
    gp.max_tokens = b->gen;
    gp.ignore_eog = 1;
    probe = gp;
    probe.max_tokens = 1;
    pl_chat_reset(b->s);
    for (int t = 0; t < b->turns; t++) {
        msgs[n++] = (pl_chat_message){"user", b->user[t]};
        turn_result *tr = &r->t[t];
        pl_error err;
        pl_status s = PL_OK;
        int64_t n_before = pl_session_n_past(b->s);
        tr->n_ttft = 0;
        for (int k = 0; k < b->reps - 1 && !s; k++) {
            pl_chat_stats ps;
            if (!cache) pl_chat_reset(b->s);
            s = pl_chat_messages(b->s, NULL, msgs, n, NULL, &probe, NULL, NULL, &ps, &err);
            if (!s) s = pl_session_truncate(b->s, cache ? n_before : 0, &err);
            tr->ttft[tr->n_ttft++] = ps.gen.ttft_ms;
        }
        reply rep = {0};
        if (!s) {
            if (!cache) pl_chat_reset(b->s);
            s = pl_chat_messages(b->s, NULL, msgs, n, NULL, &gp, on_text, &rep, &tr->st, &err);
        }
        if (s) {
            fail_turn(r, t, s, &err);
            free(rep.text);
            break;
        }
        tr->ttft[tr->n_ttft++] = tr->st.gen.ttft_ms;
        tr->st.gen.ttft_ms = median(tr->ttft, tr->n_ttft);
        if (cache) {
            const int32_t *ids;
            const char *text;
            size_t text_len;
            int64_t n_hist, n_prompt = tr->st.n_reused + tr->st.n_prefilled;
            pl_session_history(b->s, &ids, &n_hist, &text, &text_len, NULL);
            if (n_prompt > n_hist || !(b->ids[t] = malloc((size_t)n_prompt * sizeof *ids))) {
                free(rep.text);
                break;
            }
            memcpy(b->ids[t], ids, (size_t)n_prompt * sizeof *ids);
            b->n_ids[t] = n_prompt;
        }
        msgs[n++] = (pl_chat_message){"assistant", rep.text ? rep.text : strdup("")};
        progress(r->name, t, tr);
        r->n_done = t + 1;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(msgs[i].role, "assistant") == 0) free((char *)msgs[i].content);
}

/* Without the cache, on the cached run's prompts: reset, prefill the turn's whole prompt,
 * generate as the cached run did (probed reps - 1 times first, as replay_chat does). */
static void replay_ids(bench *b, int n_turns, run *r)
{
    pl_gen_params gp = pl_gen_default_params(), probe;
    gp.max_tokens = b->gen;
    gp.ignore_eog = 1;
    probe = gp;
    probe.max_tokens = 1;
    for (int t = 0; t < n_turns; t++) {
        turn_result *tr = &r->t[t];
        pl_error err;
        pl_gen_stats gs;
        pl_status s = PL_OK;
        double t0 = 0;
        tr->n_ttft = 0;
        for (int k = 0; k < b->reps && !s; k++) {
            int last = k == b->reps - 1;
            pl_chat_reset(b->s);
            t0 = (1e3 * pl_clock_s());
            s = pl_generate(b->s, b->ids[t], b->n_ids[t], NULL, last ? &gp : &probe, NULL, NULL,
                            &gs, &err);
            if (!s) tr->ttft[tr->n_ttft++] = gs.ttft_ms;
        }
        if (s) {
            fail_turn(r, t, s, &err);
            break;
        }
        tr->st = (pl_chat_stats){.path = PL_CHAT_SLOW,
                                 .n_prefilled = gs.n_prompt,
                                 .n_generated = gs.n_generated,
                                 .gen = gs,
                                 .total_ms = (1e3 * pl_clock_s()) - t0};
        tr->st.gen.ttft_ms = median(tr->ttft, tr->n_ttft);
        progress(r->name, t, tr);
        r->n_done = t + 1;
    }
}

/* A JSON string literal of a file name (pl_json_escape). */
static void put_str(FILE *f, const char *s)
{
    const size_t n = strlen(s), len = pl_json_escape(NULL, 0, s, n);
    char *e = malloc(len + 1);
    if (!e) {
        fputs("null", f);
        return;
    }
    pl_json_escape(e, len + 1, s, n);
    fprintf(f, "\"%s\"", e);
    free(e);
}

static void put_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.3f", v);
    else
        fputs("null", f);
}

static void put_run(FILE *f, const run *r)
{
    fprintf(f, "\"%s\": [", r->name);
    for (int t = 0; t < r->n_done; t++) {
        const pl_chat_stats *s = &r->t[t].st;
        fprintf(f,
                "%s\n      {\"turn\": %d, \"path\": \"%s\", \"reused\": %lld, \"prefilled\": "
                "%lld, \"generated\": %lld, \"ttft_ms\": ",
                t ? "," : "", t + 1, pl_chat_path_str(s->path), (long long)s->n_reused,
                (long long)s->n_prefilled, (long long)s->n_generated);
        put_num(f, s->gen.ttft_ms);
        fputs(", \"ttft_ms_samples\": [", f);
        for (int k = 0; k < r->t[t].n_ttft; k++) {
            if (k) fputs(", ", f);
            put_num(f, r->t[t].ttft[k]);
        }
        fputs("], \"tokenize_ms\": ", f);
        put_num(f, s->tokenize_ms);
        fputs(", \"prefill_ms\": ", f);
        put_num(f, s->gen.prefill_ms);
        fputs(", \"decode_tps\": ", f);
        put_num(f, s->gen.decode_tps);
        fputs(", \"total_ms\": ", f);
        put_num(f, s->total_ms);
        fprintf(f, ", \"stop\": \"%s\"}", pl_stop_reason_str(s->gen.stop));
    }
    fputs(r->n_done ? "\n    ]" : "]", f);
}

/* ttft of the last turn over turn 2's; NaN when the run did not get that far. */
static double growth(const run *r, int turns)
{
    if (r->n_done < turns) return NAN;
    return r->t[turns - 1].st.gen.ttft_ms / r->t[1].st.gen.ttft_ms;
}

static int usage(void)
{
    fputs(
        "usage: bench_chat MODEL.gguf [-t THREADS] [-o OUT.json] [--turns N (10)]\n"
        "                  [--user-tokens N (60)] [--gen N (64)] [--reps N (3)] [--kernels NAME]\n"
        "                  [--literal]\n",
        stderr);
    return 2;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *json = NULL, *kernels = NULL;
    int threads = 0, literal = 0;
    bench b = {.turns = 10, .reps = 3, .user_tokens = 60, .gen = 64};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (model) return usage();
            model = a;
            continue;
        }
        if (strcmp(a, "--literal") == 0) {
            literal = 1;
            continue;
        }
        if (!v) return usage();
        i++;
        if (strcmp(a, "-t") == 0)
            threads = atoi(v);
        else if (strcmp(a, "-o") == 0)
            json = v;
        else if (strcmp(a, "--turns") == 0)
            b.turns = atoi(v);
        else if (strcmp(a, "--user-tokens") == 0)
            b.user_tokens = atoi(v);
        else if (strcmp(a, "--reps") == 0)
            b.reps = atoi(v);
        else if (strcmp(a, "--gen") == 0)
            b.gen = atoi(v);
        else if (strcmp(a, "--kernels") == 0)
            kernels = v;
        else
            return usage();
    }
    if (!model || b.turns < 2 || b.turns > MAX_TURNS || b.user_tokens < 1 || b.gen < 1 ||
        threads < 0 || b.reps < 1 || b.reps > MAX_REPS)
        return usage();

    pl_error err;
    pl_model *m = NULL;
    const pl_model_params mp = {.kernels = kernels};
    pl_status st = pl_model_load(&m, model, &mp, &err);
    if (st) {
        fprintf(stderr, "bench_chat: %s: %s\n", pl_status_str(st), err.msg);
        return 1;
    }
    b.m = m;
    pl_session_params sp = pl_session_default_params(m);
    sp.n_threads = threads;
    sp.kernels = kernels;
    if ((st = pl_session_new(&b.s, m, &sp, &err))) {
        fprintf(stderr, "bench_chat: %s: %s\n", pl_status_str(st), err.msg);
        pl_model_free(m);
        return 1;
    }
    pl_model_info mi;
    pl_model_get_info(m, &mi, NULL);
    pl_session_info si;
    pl_session_get_info(b.s, &si, NULL);
    int rc = 0;
    static run cached = {.name = "cache"}, fresh = {.name = "no_cache"},
               lit = {.name = "no_cache_chat"};
    double load[2][3] = {{0}};
    for (int t = 0; t < b.turns; t++)
        if (!(b.user[t] = make_user_text(m, t, b.user_tokens))) {
            fprintf(stderr, "bench_chat: cannot make the text of turn %d\n", t + 1);
            rc = 1;
            goto out;
        }
    fprintf(stderr,
            "bench_chat: %s (%s, %.1fM params), %d threads, kernels %s, context %lld; %d turns, "
            "~%lld user tokens + %lld generated each; ttft: median of %d\n",
            model, mi.arch, (double)mi.n_params * 1e-6, si.n_threads, si.kernels,
            (long long)si.kv_capacity, b.turns, (long long)b.user_tokens, (long long)b.gen, b.reps);

    /* Warm-up: touch the weights and the scratch once, so turn 1 does not pay for them. */
    {
        int32_t warm[32];
        for (int i = 0; i < 32; i++) warm[i] = i + 1;
        if ((st = pl_session_eval(b.s, warm, 32, NULL, 0, &err))) {
            fprintf(stderr, "bench_chat: warm-up: %s: %s\n", pl_status_str(st), err.msg);
            rc = 1;
            goto out;
        }
    }
    getloadavg(load[0], 3);
    replay_chat(&b, 1, &cached);
    replay_ids(&b, cached.n_done, &fresh);
    if (literal) replay_chat(&b, 0, &lit);
    getloadavg(load[1], 3);
    if (cached.n_done < b.turns || fresh.n_done < cached.n_done) rc = 1;

    printf(
        "| turn | cache: path | reused | prefilled | ttft ms | no cache: prefilled | ttft ms |%s\n"
        "|---:|---|---:|---:|---:|---:|---:|%s\n",
        literal ? " literal: prefilled | ttft ms |" : "", literal ? "---:|---:|" : "");
    for (int t = 0; t < cached.n_done; t++) {
        const pl_chat_stats *c = &cached.t[t].st, *f = &fresh.t[t].st, *l = &lit.t[t].st;
        printf("| %d | %s | %lld | %lld | %.1f |", t + 1, pl_chat_path_str(c->path),
               (long long)c->n_reused, (long long)c->n_prefilled, c->gen.ttft_ms);
        if (t < fresh.n_done)
            printf(" %lld | %.1f |", (long long)f->n_prefilled, f->gen.ttft_ms);
        else
            printf(" - | - |");
        if (literal && t < lit.n_done)
            printf(" %lld | %.1f |", (long long)l->n_prefilled, l->gen.ttft_ms);
        else if (literal)
            printf(" (context full) | - |");
        putchar('\n');
    }
    double r_cache = growth(&cached, b.turns), r_fresh = growth(&fresh, b.turns);
    int met = r_cache <= 1.3;
    /* The same ratio per prefilled token: what grows with the context, apart from the count. */
    double per_token = NAN;
    if (cached.n_done == b.turns) {
        const pl_chat_stats *a = &cached.t[1].st, *z = &cached.t[b.turns - 1].st;
        per_token =
            (z->gen.ttft_ms / (double)z->n_prefilled) / (a->gen.ttft_ms / (double)a->n_prefilled);
    }
    printf("\ngoal: with the cache, turn %d's ttft <= 1.3x turn 2's: %.2fx, %s; without: %.2fx "
           "(%s)\nper prefilled token, with the cache: turn %d / turn 2 = %.2fx\n"
           "load average: %.2f at the start, %.2f at the end\n",
           b.turns, r_cache, met ? "met" : "NOT met", r_fresh,
           r_fresh > 1.3 ? "grows" : "does not grow", b.turns, per_token, load[0][0], load[1][0]);

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            rc = 1;
            goto out;
        }
        fputs("{\n  \"bench\": \"chat\",\n  \"model\": ", f);
        put_str(f, model);
        fprintf(f,
                ",\n  \"arch\": \"%s\",\n  \"n_params\": %llu,\n  \"threads\": %d,\n  "
                "\"kernels\": \"%s\",\n  \"context\": %lld,\n  \"turns\": %d,\n  "
                "\"user_tokens\": %lld,\n  \"generated_per_turn\": %lld,\n  \"reps\": %d,\n  "
                "\"loadavg\": {\"start\": %.2f, \"end\": %.2f},\n  \"runs\": {\n    ",
                mi.arch, (unsigned long long)mi.n_params, si.n_threads, si.kernels,
                (long long)si.kv_capacity, b.turns, (long long)b.user_tokens, (long long)b.gen,
                b.reps, load[0][0], load[1][0]);
        put_run(f, &cached);
        fputs(",\n    ", f);
        put_run(f, &fresh);
        if (literal) {
            fputs(",\n    ", f);
            put_run(f, &lit);
        }
        fputs("\n  },\n  \"goal\": {\"cache_ttft_last_over_turn2\": ", f);
        put_num(f, r_cache);
        fputs(", \"no_cache_ttft_last_over_turn2\": ", f);
        put_num(f, r_fresh);
        fputs(", \"cache_ttft_per_token_last_over_turn2\": ", f);
        put_num(f, per_token);
        fprintf(f, ", \"limit\": 1.3, \"met\": %s}\n}\n", met ? "true" : "false");
        if (fclose(f) != 0) {
            perror(json);
            rc = 1;
        }
    }
out:
    for (int t = 0; t < b.turns; t++) {
        free(b.user[t]);
        free(b.ids[t]);
    }
    pl_session_free(b.s);
    pl_model_free(m);
    return rc;
}
