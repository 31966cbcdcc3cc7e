/* fuzz_sampler.c — harness: the public sampler chain (pl_sampler_new, pl_sampler_sample) on tiny
 * in-memory models of several vocabulary sizes, and the kernel table's sampling primitives on
 * candidates built from the same input. Not a distribution test: conformance/test_sampler_chain.c
 * holds the chi-square; this one hunts UB, NaN leaks and broken edge rules.
 *
 * Oracles (the rules of plumb.h and kernels.h, restated here apart from the library):
 * pl_sampler_new fails with PL_ERR_CONFIG, a message naming a bad field and *out NULL exactly
 * when a parameter is out of its documented range; pl_sampler_sample returns
 * PL_ERR_INVALID_ARG for a NaN logit or a bad argument (neither advances the random stream),
 * else OK with 0 <= id < V, never modifying logits or history; temperature 0 picks the argmax of
 * the penalised logits (ties: lowest id); otherwise the id ranks among the top_k best penalised
 * logits (top_k = 1: the argmax), is never one whose probability underflows to 0 (a -Inf
 * logit while any is larger, a finite one while any is +Inf, (max - l) / T > 110), survives
 * min-p and top-p (with slack for float rounding), and two samplers with one seed give the
 * same ids over two steps. Each kernel set's primitives: penalties and temperature as
 * documented, bit for bit; cand_softmax sorts (logit descending, ties and -0 == +0 by id, NaN
 * last) and gives finite p in [0, 1] summing to 1 within 1e-5, 0 for NaN and (below a larger
 * max) -Inf; top_k, top_p, min_p keep what their contracts say; draw returns the candidate the
 * cumulative mass names for u in [0, 1) and never one of zero mass while any has mass. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_data.h"
#include "plumb.h"
#include "registry.h"

#define N_MODELS 5
#define MAX_HIST 96 /* history ids taken from the input */
#define MAX_SETS 8
#define E_MODEL  8 /* the models' embedding width: the sampler never runs them */

static const int64_t vocab_sizes[N_MODELS] = {1, 2, 7, 64, 300};
static pl_model *models[N_MODELS];
static void *model_bufs[N_MODELS];
static pl_kernel_table tables[MAX_SETS];
static int n_tables;

/* ---- models: a one-layer llama of width 8 with n_vocab rows, zero weights ---- */

static void *build_model(int64_t V, size_t *size)
{
    const int64_t E = E_MODEL;
    float *zeros = calloc((size_t)(E * (V > E ? V : E)), sizeof *zeros);
    pl_gguf_writer *w = NULL;
    pl_error err = {0};
    FUZZ_CHECK(zeros && pl_gguf_writer_new(&w, 3, &err) == PL_OK, "writer: %s", err.msg);
    pl_status st = pl_gguf_writer_set_string(w, "general.architecture", "llama", 5, &err);
    static const char *const keys[] = {
        "llama.context_length",      "llama.embedding_length",     "llama.block_count",
        "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv"};
    const uint32_t vals[] = {16, (uint32_t)E, 1, (uint32_t)E, 1, 1};
    for (int i = 0; i < 6 && !st; i++) st = pl_gguf_writer_set_u32(w, keys[i], vals[i], &err);
    if (!st) st = pl_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f, &err);
    static const char *const vecs[] = {"output_norm.weight", "blk.0.attn_norm.weight",
                                       "blk.0.ffn_norm.weight"};
    static const char *const mats[] = {"blk.0.attn_q.weight",   "blk.0.attn_k.weight",
                                       "blk.0.attn_v.weight",   "blk.0.attn_output.weight",
                                       "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight",
                                       "blk.0.ffn_down.weight"};
    int64_t ne[2] = {E, V};
    if (!st)
        st = pl_gguf_writer_add_tensor(w, "token_embd.weight", PL_TYPE_F32, 2, ne, zeros, &err);
    ne[1] = E;
    for (int i = 0; i < 3 && !st; i++)
        st = pl_gguf_writer_add_tensor(w, vecs[i], PL_TYPE_F32, 1, ne, zeros, &err);
    for (int i = 0; i < 7 && !st; i++)
        st = pl_gguf_writer_add_tensor(w, mats[i], PL_TYPE_F32, 2, ne, zeros, &err);
    void *buf = NULL;
    if (!st) st = pl_gguf_writer_write_memory(w, &buf, size, &err);
    FUZZ_CHECK(st == PL_OK, "model with n_vocab %lld: %s", (long long)V, err.msg);
    pl_gguf_writer_free(w);
    free(zeros);
    return buf;
}

void fuzz_init(void)
{
    pl_error err = {0};
    for (int i = 0; i < N_MODELS; i++) {
        size_t size = 0;
        model_bufs[i] = build_model(vocab_sizes[i], &size);
        FUZZ_CHECK(pl_model_load_memory(&models[i], model_bufs[i], size, NULL, &err) == PL_OK,
                   "load n_vocab %lld: %s", (long long)vocab_sizes[i], err.msg);
        pl_model_info info;
        FUZZ_CHECK(pl_model_get_info(models[i], &info, &err) == PL_OK &&
                       info.n_vocab == vocab_sizes[i],
                   "n_vocab %lld: %s", (long long)vocab_sizes[i], err.msg);
    }
    pl_sampler *s = NULL;
    FUZZ_CHECK(pl_sampler_new(&s, models[0], NULL, &err) == PL_OK, "defaults: %s", err.msg);
    pl_sampler_free(s);
    FUZZ_CHECK(pl_kernels_resolve(&tables[0], &pl_kernels_ref, &err) == PL_OK, "ref: %s", err.msg);
    n_tables = 1;
    for (int i = 0; i < pl_kernel_set_count() && n_tables < MAX_SETS; i++) {
        const struct pl_kernels *k = pl_kernel_set(i);
        if (k == &pl_kernels_ref || !k->supported()) continue;
        FUZZ_CHECK(pl_kernels_resolve(&tables[n_tables], k, &err) == PL_OK, "%s: %s", k->name,
                   err.msg);
        n_tables++;
    }
}

/* ---- parameters from the input: a table of edge values, or raw bits ---- */

static float pick_f32(fuzz_data *d, const float *table, uint32_t n)
{
    uint32_t i = fuzz_data_u32_range(d, 0, n);
    return i < n ? table[i] : fuzz_data_f32_bits(d);
}

static int32_t pick_i32(fuzz_data *d, const int32_t *table, uint32_t n)
{
    uint32_t i = fuzz_data_u32_range(d, 0, n);
    return i < n ? table[i] : (int32_t)fuzz_data_u32_range(d, 0, UINT32_MAX);
}

#define N_OF(a) ((uint32_t)(sizeof(a) / sizeof(a)[0]))

static const float temps[] = {0.0f,  -0.0f,  0.8f,     1.0f,      2.0f,  0.5f,
                              1e-3f, 1e-20f, 1e-38f,   1e-45f,    1e30f, FLT_MAX,
                              -1.0f, NAN,    INFINITY, -INFINITY, 1e-10f};
static const float top_ps[] = {1.0f,  0.95f,      0.5f,    0.0f, 0.1f,     0.99999994f, 1e-30f,
                               -0.0f, 1.0000001f, -1e-30f, NAN,  INFINITY, -INFINITY,   2.0f};
static const float min_ps[] = {0.0f,  0.05f,      0.5f,  1.0f, 0.999f,   1e-30f,    -0.0f,
                               1e-6f, 1.0000001f, -0.1f, NAN,  INFINITY, -INFINITY, 0.3f};
static const float repeats[] = {1.0f,   1.1f, 1.5f,  0.5f,  2.0f, 1e30f,    FLT_MAX,  1e-30f,
                                1e-45f, 0.0f, -0.0f, -1.0f, NAN,  INFINITY, -INFINITY};
static const float shifts[] = {0.0f,     0.5f,    -0.5f,  1.0f, 1e30f,    -1e30f,   FLT_MAX,
                               -FLT_MAX, 1.7e38f, 1e-45f, NAN,  INFINITY, -INFINITY};
static const int32_t last_ns[] = {64, 0, 1, 2, 4, 1000, -1, INT32_MAX, INT32_MIN};

/* One byte per logit: 1/8 steps in [-12, 12) (many ties), then the edges. */
static float logit_of_code(uint8_t c)
{
    static const float edges[] = {NAN,     INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, 1e-45f, -1e-45f,
                                  FLT_MIN, -0.0f,    1e30f,     -1e30f,  3e38f,    -3e38f};
    if (c < 192) return (float)((int)c - 96) / 8.0f;
    if (c < 192 + N_OF(edges)) return edges[c - 192];
    c -= 192 + N_OF(edges); /* 0..50: +-2^e, e from -149 to 126 */
    float v = ldexpf(1.0f, -149 + (int)(c / 2) * 11);
    return c & 1 ? -v : v;
}

static const float fills[] = {0.0f, -INFINITY, INFINITY, 1.0f, -1e30f, 1e-45f, NAN};

/* ---- the documented rules, written apart from the library ---- */

/* The parameters pl_sampler_new must refuse (plumb.h): their names into bad[], the count. */
static int bad_params(const pl_sampler_params *p, const char *bad[7])
{
    int n = 0;
    if (isnan(p->temperature) || isinf(p->temperature) || p->temperature < 0.0f)
        bad[n++] = "temperature";
    if (isnan(p->top_p) || p->top_p < 0.0f || p->top_p > 1.0f) bad[n++] = "top_p";
    if (isnan(p->min_p) || p->min_p < 0.0f || p->min_p > 1.0f) bad[n++] = "min_p";
    if (isnan(p->repeat_penalty) || isinf(p->repeat_penalty) || p->repeat_penalty <= 0.0f)
        bad[n++] = "repeat_penalty";
    if (isnan(p->freq_penalty) || isinf(p->freq_penalty)) bad[n++] = "freq_penalty";
    if (isnan(p->presence_penalty) || isinf(p->presence_penalty)) bad[n++] = "presence_penalty";
    if (p->penalty_last_n < 0) bad[n++] = "penalty_last_n";
    return n;
}

/* The penalties of plumb.h / kernels.h over history[0..n): for each id in [0, V) seen c times,
 * l = l > 0 ? l / repeat : l * repeat, then, if l is finite, l -= c * freq + presence.
 * Counts in an array here, where the kernel rescans. */
static void penalise(float *l, int64_t V, const int32_t *hist, int64_t n, float repeat, float freq,
                     float presence)
{
    int64_t *count = calloc((size_t)V, sizeof *count);
    FUZZ_CHECK(count != NULL, "calloc");
    for (int64_t i = 0; i < n; i++)
        if (hist[i] >= 0 && hist[i] < V) count[hist[i]]++;
    for (int64_t id = 0; id < V; id++) {
        if (!count[id]) continue;
        float x = l[id];
        x = x > 0 ? x / repeat : x * repeat;
        if (isfinite(x)) x -= (float)count[id] * freq + presence;
        l[id] = x;
    }
    free(count);
}

typedef struct ranked {
    float l;
    int32_t id;
} ranked;

/* Penalised logit descending, ties by id (no NaN here: the rules leave none). */
static int cmp_ranked(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->l != y->l) return x->l > y->l ? -1 : 1;
    return x->id < y->id ? -1 : 1;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static int same_bits_or_nan(float a, float b)
{
    return fbits(a) == fbits(b) || (isnan(a) && isnan(b));
}

/* The id drawn from penalised logits pl against the chain's rules. */
static void check_pick(const char *what, int32_t id, const float *pl, int64_t V,
                       const pl_sampler_params *p)
{
    FUZZ_CHECK(id >= 0 && id < V, "%s: id %d outside [0, %lld)", what, id, (long long)V);
    ranked *r = malloc((size_t)V * sizeof *r);
    FUZZ_CHECK(r != NULL, "malloc");
    for (int64_t i = 0; i < V; i++) {
        FUZZ_CHECK(!isnan(pl[i]), "%s: the penalties rule made logit %lld NaN", what, (long long)i);
        r[i] = (ranked){pl[i], (int32_t)i};
    }
    qsort(r, (size_t)V, sizeof *r, cmp_ranked);
    const float m = r[0].l;
    const int32_t argmax = r[0].id;
    int64_t pos = 0;
    while (r[pos].id != id) pos++;
    const float T = p->temperature;
    if (T <= 0.0f) {
        FUZZ_CHECK(id == argmax, "%s: greedy gave %d (logit %g), argmax is %d (%g)", what, id,
                   (double)pl[id], argmax, (double)m);
        free(r);
        return;
    }
    const int64_t k = p->top_k > 0 && p->top_k < V ? p->top_k : V;
    FUZZ_CHECK(pos < k, "%s: id %d ranks %lld, outside top_k %d (logit %g, max %g)", what, id,
               (long long)pos, p->top_k, (double)pl[id], (double)m);
    FUZZ_CHECK(pl[id] != -INFINITY || m == -INFINITY,
               "%s: id %d has a -Inf logit while the max is %g", what, id, (double)m);
    /* p_id / p_max = exp((l - max) / T): below 2^-149 p_id rounds to 0 and is never drawn. */
    const double gap = ((double)m - (double)pl[id]) / (double)T;
    FUZZ_CHECK(!(gap > 110.0), "%s: id %d drawn with (max - l) / T = %g (l %g, max %g, T %g)", what,
               id, gap, (double)pl[id], (double)m, (double)T);
    if (isfinite(m)) {
        double W = 0.0, before = 0.0;
        const double wid = exp(-gap);
        for (int64_t i = 0; i < k; i++) {
            double w = exp(((double)r[i].l - (double)m) / (double)T);
            W += w;
            if (w > wid * (1.0 + 1e-4)) before += w; /* ahead of id in any rounding */
        }
        if (p->min_p >= 1e-20f) /* smaller thresholds would sit among float denormals */
            FUZZ_CHECK(!(wid < (double)p->min_p * (1.0 - 1e-3)),
                       "%s: id %d has p / p_max = %g < min_p %g", what, id, wid, (double)p->min_p);
        if (p->top_p < 1.0f)
            FUZZ_CHECK(!(before / W > (double)p->top_p * (1.0 + 1e-4) + 1e-6),
                       "%s: id %d lies past top_p %g: the mass ahead of it is already %g", what, id,
                       (double)p->top_p, before / W);
    }
    free(r);
}

/* ---- the kernel table's sampling primitives ---- */

/* a comes before b in cand_softmax's order: logit descending (-0 == +0), NaN last, then id. */
static int cand_before(const pl_candidate *a, const pl_candidate *b)
{
    if (isnan(a->logit) || isnan(b->logit))
        return isnan(a->logit) != isnan(b->logit) ? !isnan(a->logit) : a->id < b->id;
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static void check_draw(const struct pl_kernels *k, const pl_candidate *c, int64_t n, double u)
{
    int64_t i = k->draw(c, n, u);
    FUZZ_CHECK(i >= 0 && i < n, "set %s: draw(n %lld, u %.17g) = %lld", k->name, (long long)n, u,
               (long long)i);
    double total = 0.0;
    for (int64_t j = 0; j < n; j++) total += c[j].p;
    double uu = u >= 0.0 ? u : 0.0;
    if (!(total > 0.0)) { /* every p zero: uniform by u */
        int64_t want = uu >= 1.0 ? n - 1 : (int64_t)(uu * (double)n);
        FUZZ_CHECK(i == (want < n ? want : n - 1), "set %s: zero-mass draw(n %lld, u %.17g) = %lld",
                   k->name, (long long)n, u, (long long)i);
        return;
    }
    FUZZ_CHECK(c[i].p > 0.0f, "set %s: draw(u %.17g) chose candidate %lld of zero mass", k->name, u,
               (long long)i);
    const double target = uu * total;
    double cum = 0.0;
    int64_t last = 0;
    for (int64_t j = 0; j < n; j++)
        if (c[j].p > 0.0f) last = j;
    for (int64_t j = 0; j < i; j++) cum += c[j].p > 0.0f ? c[j].p : 0.0f;
    FUZZ_CHECK(!(cum > target),
               "set %s: draw(u %.17g) = %lld, but the mass before it %.17g > %.17g", k->name, u,
               (long long)i, cum, target);
    cum += c[i].p;
    FUZZ_CHECK(cum > target || i == last,
               "set %s: draw(u %.17g) = %lld stops short (%.17g <= %.17g)", k->name, u,
               (long long)i, cum, target);
}

static void check_kernels(const struct pl_kernels *k, const float *logits, int64_t V,
                          const int32_t *hist, int64_t nh, const pl_sampler_params *p, int valid,
                          int64_t min_keep, double u)
{
    float *x = malloc((size_t)V * sizeof *x), *y = malloc((size_t)V * sizeof *y);
    pl_candidate *c = malloc((size_t)V * sizeof *c);
    FUZZ_CHECK(x && y && c, "malloc");

    /* penalties over the whole history and temperature, bit for bit with the rules */
    if (valid) {
        memcpy(x, logits, (size_t)V * sizeof *x);
        memcpy(y, logits, (size_t)V * sizeof *y);
        k->penalties(x, V, hist, nh, p->repeat_penalty, p->freq_penalty, p->presence_penalty);
        penalise(y, V, hist, nh, p->repeat_penalty, p->freq_penalty, p->presence_penalty);
        for (int64_t i = 0; i < V; i++)
            FUZZ_CHECK(same_bits_or_nan(x[i], y[i]) && (isnan(x[i]) == isnan(logits[i])),
                       "set %s: penalties: logit %lld: %g -> %g, the rule gives %g", k->name,
                       (long long)i, (double)logits[i], (double)x[i], (double)y[i]);
    }
    const float T = p->temperature > 0.0f && isfinite(p->temperature) ? p->temperature : 1.7f;
    memcpy(x, logits, (size_t)V * sizeof *x);
    k->temperature(x, V, T);
    for (int64_t i = 0; i < V; i++)
        FUZZ_CHECK(same_bits_or_nan(x[i], logits[i] / T), "set %s: temperature %g: %g -> %g",
                   k->name, (double)T, (double)logits[i], (double)x[i]);

    /* cand_softmax on the raw logits, listed backwards so that the sort has work to do */
    k->cand_softmax(c, 0);
    for (int64_t i = 0; i < V; i++)
        c[i] = (pl_candidate){(int32_t)(V - 1 - i), logits[V - 1 - i], -1.0f};
    k->cand_softmax(c, V);
    int64_t n_nan = 0;
    double sum = 0.0;
    for (int64_t i = 0; i < V; i++) {
        FUZZ_CHECK(c[i].id >= 0 && c[i].id < V && same_bits_or_nan(c[i].logit, logits[c[i].id]),
                   "set %s: cand_softmax lost candidate %lld (id %d)", k->name, (long long)i,
                   c[i].id);
        FUZZ_CHECK(i == 0 || cand_before(&c[i - 1], &c[i]),
                   "set %s: cand_softmax order: (%d, %g) then (%d, %g)", k->name, c[i - 1].id,
                   (double)c[i - 1].logit, c[i].id, (double)c[i].logit);
        n_nan += isnan(c[i].logit);
        sum += c[i].p;
    }
    int skip_p = n_nan == V; /* every logit NaN: p is NaN, as documented */
    for (int64_t i = 0; i < V && !skip_p; i++) {
        const float pi = c[i].p;
        FUZZ_CHECK(pi >= 0.0f && pi <= 1.0f, "set %s: cand_softmax p[%lld] = %g (logit %g)",
                   k->name, (long long)i, (double)pi, (double)c[i].logit);
        FUZZ_CHECK(!isnan(c[i].logit) || pi == 0.0f, "set %s: NaN logit got p %g", k->name,
                   (double)pi);
        FUZZ_CHECK(c[i].logit != -INFINITY || c[0].logit == -INFINITY || pi == 0.0f,
                   "set %s: -Inf logit got p %g under max %g", k->name, (double)pi,
                   (double)c[0].logit);
        FUZZ_CHECK(i == 0 || pi <= c[i - 1].p, "set %s: p rises along the sorted list at %lld",
                   k->name, (long long)i);
    }
    FUZZ_CHECK(skip_p || fabs(sum - 1.0) <= 1e-5, "set %s: cand_softmax p sums to %.9g", k->name,
               sum);
    /* identical ids in both orders: the sort is unique */
    for (int64_t i = 0; i < V; i++) y[i] = c[i].p;
    for (int64_t i = 0; i < V; i++) c[i] = (pl_candidate){(int32_t)i, logits[i], -1.0f};
    k->cand_softmax(c, V);
    for (int64_t i = 0; i < V; i++)
        FUZZ_CHECK(same_bits_or_nan(c[i].p, y[i]) && same_bits_or_nan(c[i].logit, logits[c[i].id]),
                   "set %s: cand_softmax depends on the input order at %lld", k->name,
                   (long long)i);
    if (skip_p) goto done;

    /* truncations: the lengths their contracts give */
    FUZZ_CHECK(k->top_k(c, 0, 3) == 0, "set %s: top_k on 0", k->name);
    int64_t n = k->top_k(c, V, p->top_k);
    FUZZ_CHECK(n == (p->top_k <= 0 || p->top_k >= V ? V : p->top_k),
               "set %s: top_k(%lld, %d) = %lld", k->name, (long long)V, p->top_k, (long long)n);
    const int64_t lo = min_keep < 1 ? 1 : min_keep < n ? min_keep : n;
    int64_t r = k->top_p(c, n, p->top_p, min_keep);
    FUZZ_CHECK(r >= lo && r <= n, "set %s: top_p(%lld, %g, min_keep %lld) = %lld", k->name,
               (long long)n, (double)p->top_p, (long long)min_keep, (long long)r);
    if (p->top_p >= 1.0f) FUZZ_CHECK(r == n, "set %s: top_p %g cut", k->name, (double)p->top_p);
    double total = 0.0, cum = 0.0;
    for (int64_t i = 0; i < n; i++) total += c[i].p;
    const double target = (double)p->top_p * total;
    for (int64_t i = 0; i < r; i++) {
        cum += c[i].p;
        if (i + 1 >= lo && i + 1 < r && p->top_p < 1.0f)
            FUZZ_CHECK(!(cum >= target), "set %s: top_p %g kept %lld, %lld had mass %.17g >= %.17g",
                       k->name, (double)p->top_p, (long long)r, (long long)(i + 1), cum, target);
    }
    FUZZ_CHECK(r == n || cum >= target, "set %s: top_p %g stopped at %lld short of the mass",
               k->name, (double)p->top_p, (long long)r);
    int64_t r2 = k->min_p(c, r, p->min_p, min_keep);
    const int64_t lo2 = min_keep < 1 ? 1 : min_keep < r ? min_keep : r;
    FUZZ_CHECK(r2 >= lo2 && r2 <= r, "set %s: min_p(%lld, %g) = %lld", k->name, (long long)r,
               (double)p->min_p, (long long)r2);
    if (!(p->min_p > 0.0f))
        FUZZ_CHECK(r2 == r, "set %s: min_p %g cut", k->name, (double)p->min_p);
    else {
        const double th = (double)p->min_p * (double)c[0].p;
        for (int64_t i = lo2; i < r2; i++)
            FUZZ_CHECK((double)c[i].p >= th, "set %s: min_p %g kept p %g < %g", k->name,
                       (double)p->min_p, (double)c[i].p, th);
        FUZZ_CHECK(r2 == r || r2 == lo2 || (double)c[r2].p < th, "set %s: min_p %g cut p %g >= %g",
                   k->name, (double)p->min_p, (double)c[r2].p, th);
    }
    /* the draw, on the final list and on the whole one, at the edges of [0, 1) and at u */
    FUZZ_CHECK(k->draw(c, 0, 0.5) == -1, "set %s: draw on 0 candidates", k->name);
    /* u outside [0, 1) too: below 0 or NaN acts as 0, >= 1 gives the last candidate of mass */
    const double us[] = {0.0, 0x1p-53, 0.5, 1.0 - 0x1p-53, u, -1.0, NAN, 1.0, 2.0};
    int64_t z = V; /* the zero-mass tail of the sorted list (-Inf logits under a finite max) */
    while (z > 0 && c[z - 1].p == 0.0f) z--;
    for (int j = 0; j < (int)N_OF(us); j++) {
        check_draw(k, c, r2, us[j]);
        check_draw(k, c, V, us[j]);
        if (z < V) check_draw(k, c + z, V - z, us[j]);
    }
done:
    free(c);
    free(y);
    free(x);
}

/* ---- the chain ---- */

static void check_error(pl_status st, const pl_error *err, pl_status want, const char *what)
{
    FUZZ_CHECK(st == want && err->code == st && err->msg[0] != '\0',
               "%s: status %d (want %d), code %d, msg '%s'", what, (int)st, (int)want,
               (int)err->code, err->msg);
}

/* Samples once with s, checks status, untouched inputs and the pick; returns the id or -1. */
static int32_t sample(pl_sampler *s, const float *logits, const int32_t *hist, int64_t nh,
                      int64_t V, const pl_sampler_params *p, int has_nan, const char *what)
{
    pl_error err = {0};
    int32_t id = -7;
    float *keep_l = malloc((size_t)V * sizeof *keep_l);
    int32_t *keep_h = malloc((size_t)(nh + 1) * sizeof *keep_h);
    FUZZ_CHECK(keep_l && keep_h, "malloc");
    memcpy(keep_l, logits, (size_t)V * sizeof *keep_l);
    if (nh) memcpy(keep_h, hist, (size_t)nh * sizeof *keep_h);
    pl_status st = pl_sampler_sample(s, logits, hist, nh, &id, &err);
    FUZZ_CHECK(memcmp(keep_l, logits, (size_t)V * sizeof *keep_l) == 0, "%s: logits modified",
               what);
    FUZZ_CHECK(!nh || memcmp(keep_h, hist, (size_t)nh * sizeof *keep_h) == 0,
               "%s: history modified", what);
    free(keep_h);
    free(keep_l);
    if (has_nan) {
        check_error(st, &err, PL_ERR_INVALID_ARG, what);
        FUZZ_CHECK(strstr(err.msg, "NaN") != NULL, "%s: message '%s' does not say NaN", what,
                   err.msg);
        return -1;
    }
    FUZZ_CHECK(st == PL_OK && err.code == PL_OK, "%s: status %d: %s", what, (int)st, err.msg);
    float *pl = malloc((size_t)V * sizeof *pl);
    FUZZ_CHECK(pl != NULL, "malloc");
    memcpy(pl, logits, (size_t)V * sizeof *pl);
    int64_t last = nh < p->penalty_last_n ? nh : p->penalty_last_n;
    penalise(pl, V, hist + (nh - last), last, p->repeat_penalty, p->freq_penalty,
             p->presence_penalty);
    check_pick(what, id, pl, V, p);
    free(pl);
    return id;
}

void fuzz_one(const uint8_t *data, size_t size)
{
    fuzz_data d = fuzz_data_init(data, size);
    const int mi = (int)fuzz_data_u32_range(&d, 0, N_MODELS - 1);
    const int64_t V = vocab_sizes[mi];
    const int32_t top_ks[] = {
        40, 0, -1, 1, 2, 3, (int32_t)V - 1, (int32_t)V, (int32_t)V + 1, INT32_MAX, INT32_MIN};
    pl_sampler_params p = pl_sampler_default_params();
    p.temperature = pick_f32(&d, temps, N_OF(temps));
    p.top_k = pick_i32(&d, top_ks, N_OF(top_ks));
    p.top_p = pick_f32(&d, top_ps, N_OF(top_ps));
    p.min_p = pick_f32(&d, min_ps, N_OF(min_ps));
    p.repeat_penalty = pick_f32(&d, repeats, N_OF(repeats));
    p.freq_penalty = pick_f32(&d, shifts, N_OF(shifts));
    p.presence_penalty = pick_f32(&d, shifts, N_OF(shifts));
    p.penalty_last_n = pick_i32(&d, last_ns, N_OF(last_ns));
    if (fuzz_data_bool(&d)) {
        uint64_t hi = fuzz_data_u32_range(&d, 0, UINT32_MAX);
        p.seed = hi << 32 | fuzz_data_u32_range(&d, 0, UINT32_MAX);
    }
    const int64_t nh = fuzz_data_u32_range(&d, 0, MAX_HIST);
    const int raw_logits = fuzz_data_bool(&d);
    const float fill = pick_f32(&d, fills, N_OF(fills));
    const int64_t min_keep = (int64_t)fuzz_data_u32_range(&d, 0, 8) - 2;
    const double u = (double)fuzz_data_u32_range(&d, 0, UINT32_MAX) * 0x1p-32; /* [0, 1) */

    /* payload: history (int16 ids: negative and past V too), then the logits */
    int32_t *hist = malloc((size_t)(nh + 1) * sizeof *hist); /* + the first step's id */
    float *logits = malloc((size_t)V * sizeof *logits);      /* exact size: ASan sees over-reads */
    FUZZ_CHECK(hist && logits, "malloc");
    for (int64_t i = 0; i < nh; i++) {
        int16_t v;
        fuzz_data_fill(&d, &v, sizeof v);
        hist[i] = v;
    }
    int has_nan = 0;
    for (int64_t i = 0; i < V; i++) {
        const uint8_t *b;
        if (raw_logits && fuzz_data_remaining(&d) >= 4) {
            fuzz_data_take(&d, &b, 4);
            memcpy(&logits[i], b, 4);
        } else if (!raw_logits && fuzz_data_take(&d, &b, 1) == 1)
            logits[i] = logit_of_code(b[0]);
        else
            logits[i] = fill;
        has_nan |= isnan(logits[i]);
    }

    const char *bad[7];
    const int n_bad = bad_params(&p, bad);
    for (int t = 0; t < n_tables; t++)
        check_kernels(&tables[t].k, logits, V, hist, nh, &p, n_bad == 0, min_keep, u);

    pl_error err = {0};
    pl_sampler *a = (pl_sampler *)&err, *b = NULL; /* must become NULL on failure */
    pl_status st = pl_sampler_new(&a, models[mi], &p, &err);
    if (n_bad) {
        check_error(st, &err, PL_ERR_CONFIG, "pl_sampler_new");
        FUZZ_CHECK(a == NULL, "pl_sampler_new failed but left *out set");
        int named = 0;
        for (int i = 0; i < n_bad; i++) named |= strstr(err.msg, bad[i]) != NULL;
        FUZZ_CHECK(named, "pl_sampler_new: message '%s' names none of the %d bad fields (%s...)",
                   err.msg, n_bad, bad[0]);
        goto done;
    }
    FUZZ_CHECK(st == PL_OK && a != NULL, "pl_sampler_new (T %g, top_p %g, min_p %g): %s",
               (double)p.temperature, (double)p.top_p, (double)p.min_p, err.msg);
    FUZZ_CHECK(pl_sampler_new(&b, models[mi], &p, &err) == PL_OK, "second sampler: %s", err.msg);

    pl_sampler *none = (pl_sampler *)&err;
    check_error(pl_sampler_new(&none, NULL, &p, &err), &err, PL_ERR_INVALID_ARG, "NULL model");
    FUZZ_CHECK(none == NULL, "pl_sampler_new(NULL model) left *out set");
    check_error(pl_sampler_new(NULL, models[mi], &p, &err), &err, PL_ERR_INVALID_ARG, "NULL out");
    /* bad arguments fail, and do not advance a's stream (b, untouched, must still agree) */
    int32_t id = -7;
    check_error(pl_sampler_sample(a, logits, NULL, 1, &id, &err), &err, PL_ERR_INVALID_ARG,
                "NULL history");
    check_error(pl_sampler_sample(a, logits, hist, -1, &id, &err), &err, PL_ERR_INVALID_ARG,
                "n_history -1");
    check_error(pl_sampler_sample(a, NULL, hist, nh, &id, &err), &err, PL_ERR_INVALID_ARG,
                "NULL logits");
    check_error(pl_sampler_sample(a, logits, hist, nh, NULL, &err), &err, PL_ERR_INVALID_ARG,
                "NULL token");

    /* two steps, the second with the first id appended, from two samplers of one seed */
    int32_t a1 = sample(a, logits, hist, nh, V, &p, has_nan, "step 1");
    int32_t b1 = sample(b, logits, hist, nh, V, &p, has_nan, "step 1 (second sampler)");
    FUZZ_CHECK(a1 == b1, "same seed, step 1: %d vs %d", a1, b1);
    hist[nh] = a1;
    int32_t a2 = sample(a, logits, hist, nh + 1, V, &p, has_nan, "step 2");
    int32_t b2 = sample(b, logits, hist, nh + 1, V, &p, has_nan, "step 2 (second sampler)");
    FUZZ_CHECK(a2 == b2, "same seed, step 2: %d vs %d", a2, b2);
done:
    pl_sampler_free(b);
    pl_sampler_free(a);
    free(logits);
    free(hist);
}
