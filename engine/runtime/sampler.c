/* sampler.c — the sampler chain over the kernel table's sampling primitives.
 * Not the math: temperature, penalties, softmax, truncations and the draw are kernels. */
#include <math.h>
#include <string.h>

#include "model.h"
#include "registry.h"

struct pl_sampler {
    pl_sampler_params p;
    pl_kernel_table kt;
    int64_t V;
    float *logits;   /* (V) working copy */
    pl_candidate *c; /* (V) */
    uint64_t rng[4]; /* xoshiro256** */
};

pl_sampler_params pl_sampler_default_params(void)
{
    pl_sampler_params p = {
        .temperature = 0.8f,
        .top_k = 40,
        .top_p = 0.95f,
        .min_p = 0.05f,
        .repeat_penalty = 1.0f,
        .freq_penalty = 0.0f,
        .presence_penalty = 0.0f,
        .penalty_last_n = 64,
        .seed = 0xdecafbadu,
    };
    return p;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* Uniform in [0, 1) with 53 random bits. */
static double next_uniform(uint64_t *s)
{
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return (double)(out >> 11) * 0x1p-53;
}

static pl_status check(const pl_sampler_params *p, pl_error *err)
{
    if (!(p->temperature >= 0.0f) || isinf(p->temperature))
        return pl_fail(err, PL_ERR_CONFIG, "temperature=%g must be a finite number >= 0",
                       (double)p->temperature);
    if (!(p->top_p >= 0.0f && p->top_p <= 1.0f))
        return pl_fail(err, PL_ERR_CONFIG, "top_p=%g must be in [0, 1]", (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return pl_fail(err, PL_ERR_CONFIG, "min_p=%g must be in [0, 1]", (double)p->min_p);
    if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty))
        return pl_fail(err, PL_ERR_CONFIG, "repeat_penalty=%g must be finite and > 0",
                       (double)p->repeat_penalty);
    if (!isfinite(p->freq_penalty) || !isfinite(p->presence_penalty))
        return pl_fail(err, PL_ERR_CONFIG, "freq_penalty=%g and presence_penalty=%g must be finite",
                       (double)p->freq_penalty, (double)p->presence_penalty);
    if (p->penalty_last_n < 0)
        return pl_fail(err, PL_ERR_CONFIG, "penalty_last_n=%d must be >= 0", p->penalty_last_n);
    return PL_OK;
}

pl_status pl_sampler_new(pl_sampler **out, const pl_model *m, const pl_sampler_params *params,
                         pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!m || m->vocab_only)
        return pl_fail(err, PL_ERR_INVALID_ARG, "model is NULL or has no weights (vocab only)");
    pl_sampler_params p = params ? *params : pl_sampler_default_params();
    pl_status st = check(&p, err);
    if (st) return st;
    pl_sampler *s = pl_calloc(1, sizeof *s);
    if (!s) return pl_fail(err, PL_ERR_NOMEM, "no memory for the sampler");
    s->p = p;
    s->V = m->hp.n_vocab;
    if (p.kernels && (st = pl_kernels_init(&s->kt, p.kernels, err))) {
        pl_free(s);
        return st;
    }
    if (!p.kernels) s->kt = m->kt; /* the model's set, chosen once at load */
    s->logits = pl_malloc((size_t)s->V * sizeof *s->logits);
    s->c = pl_malloc((size_t)s->V * sizeof *s->c);
    if (!s->logits || !s->c) {
        int64_t V = s->V;
        pl_sampler_free(s);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %lld candidates", (long long)V);
    }
    uint64_t seed = p.seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix(&seed);
    *out = s;
    return pl_ok(err);
}

const char *pl_sampler_kernels(const pl_sampler *s)
{
    return s ? s->kt.k.name : "";
}

void pl_sampler_free(pl_sampler *s)
{
    if (!s) return;
    pl_free(s->logits);
    pl_free(s->c);
    pl_free(s);
}

/* a ranks before b: larger logit, then smaller id (the kernels' sort order). */
static int before(const pl_candidate *a, const pl_candidate *b)
{
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

/* Restores the heap below r in c[0..k): the root holds the worst of the kept ones. */
static void sift_down(pl_candidate *c, int64_t k, int64_t r)
{
    for (;;) {
        int64_t ch = 2 * r + 1;
        if (ch >= k) return;
        if (ch + 1 < k && before(&c[ch], &c[ch + 1])) ch++;
        if (!before(&c[r], &c[ch])) return;
        pl_candidate t = c[r];
        c[r] = c[ch];
        c[ch] = t;
        r = ch;
    }
}

/* Moves the k best candidates (in sort order) to c[0..k) with a min-heap of size k:
 * O(V log k), so top-k = 40 never sorts the whole vocabulary. */
static void select_top_k(pl_candidate *c, int64_t n, int64_t k)
{
    for (int64_t i = k / 2; i-- > 0;) sift_down(c, k, i);
    for (int64_t i = k; i < n; i++) {
        if (!before(&c[i], &c[0])) continue;
        c[0] = c[i];
        sift_down(c, k, 0);
    }
}

pl_status pl_sampler_sample(pl_sampler *s, const float *logits, const int32_t *history,
                            int64_t n_history, int32_t *token, pl_error *err)
{
    if (!s || !logits || !token || (!history && n_history > 0) || n_history < 0)
        return pl_fail(err, PL_ERR_INVALID_ARG, "sampler, logits, token or history is NULL");
    const struct pl_kernels *k = &s->kt.k;
    const pl_sampler_params *p = &s->p;
    int64_t V = s->V;
    memcpy(s->logits, logits, (size_t)V * sizeof *s->logits);
    for (int64_t i = 0; i < V; i++)
        if (isnan(s->logits[i]))
            return pl_fail(err, PL_ERR_INVALID_ARG, "logit %lld is NaN", (long long)i);
    int64_t last = n_history < p->penalty_last_n ? n_history : p->penalty_last_n;
    if (last > 0 &&
        (p->repeat_penalty != 1.0f || p->freq_penalty != 0.0f || p->presence_penalty != 0.0f))
        k->penalties(s->logits, V, history + (n_history - last), last, p->repeat_penalty,
                     p->freq_penalty, p->presence_penalty);
    if (p->temperature <= 0.0f) {
        int64_t best = 0;
        for (int64_t i = 1; i < V; i++)
            if (s->logits[i] > s->logits[best]) best = i;
        *token = (int32_t)best;
        return pl_ok(err);
    }
    /* Top-k on the penalised logits, so it keeps exactly the k best (ties: lower id) however
     * the temperature rounds. */
    for (int64_t i = 0; i < V; i++) s->c[i] = (pl_candidate){(int32_t)i, s->logits[i], 0.0f};
    int64_t n = V;
    if (p->top_k > 0 && p->top_k < V) {
        select_top_k(s->c, V, p->top_k);
        n = k->top_k(s->c, p->top_k, p->top_k);
    }
    /* Then (l - max) / temp: the same softmax, but the max (and its ties) is 0, and every
     * other logit is below it or -inf. l / temp would overflow finite logits to +inf ties
     * and, with a tiny temp, could turn them all into -inf (a uniform draw). l == max stands
     * for l - max where both are one infinity. */
    float max = s->c[0].logit;
    for (int64_t i = 1; i < n; i++)
        if (s->c[i].logit > max) max = s->c[i].logit;
    for (int64_t i = 0; i < n; i++)
        s->logits[i] = s->c[i].logit == max ? 0.0f : s->c[i].logit - max;
    k->temperature(s->logits, n, p->temperature);
    for (int64_t i = 0; i < n; i++) s->c[i].logit = s->logits[i];
    k->cand_softmax(s->c, n);
    if (p->top_p < 1.0f) n = k->top_p(s->c, n, p->top_p, 1);
    if (p->min_p > 0.0f) n = k->min_p(s->c, n, p->min_p, 1);
    int64_t i = k->draw(s->c, n, next_uniform(s->rng));
    *token = s->c[i < 0 ? 0 : i].id;
    return pl_ok(err);
}
