/* kvcache.c — slot placement, window validation, store, truncate for the KV cache.
 * Not attention and not the forward pass; see kvcache.h for the layout and positions. */
#include <string.h>

#include "kvcache.h"

static pl_status validate(const pl_model *m, int64_t cw, int64_t sw, int64_t sinks, pl_type type,
                          pl_error *err)
{
    if ((cw > 0) == (sw > 0) || cw < 0 || sw < 0)
        return pl_fail(err, PL_ERR_CONFIG,
                       "exactly one of context_window and sliding_window must be positive; got "
                       "context_window=%lld, sliding_window=%lld",
                       (long long)cw, (long long)sw);
    if (cw > 0 && sinks != 0)
        return pl_fail(err, PL_ERR_CONFIG,
                       "attention_sinks=%lld needs a sliding_window; with context_window=%lld it "
                       "must be 0",
                       (long long)sinks, (long long)cw);
    if (sw > 0 && (sinks < 0 || sinks >= sw))
        return pl_fail(err, PL_ERR_CONFIG,
                       "attention_sinks must satisfy 0 <= attention_sinks < sliding_window; got "
                       "attention_sinks=%lld, sliding_window=%lld",
                       (long long)sinks, (long long)sw);
    if (cw > INT32_MAX / 2 || sw > INT32_MAX / 4)
        return pl_fail(err, PL_ERR_CONFIG, "window of %lld tokens exceeds the limit (%d)",
                       (long long)(cw > 0 ? cw : sw), INT32_MAX / 4);
    if (type != PL_TYPE_F32 && type != PL_TYPE_F16)
        return pl_fail(err, PL_ERR_CONFIG, "kv_type %s: the KV cache holds F32 or F16",
                       pl_type_name(type) ? pl_type_name(type) : "unknown");
    (void)m;
    return PL_OK;
}

/* Slots for the window parameters (see kvcache.h): the context window, or S + 2 (W - S). */
static int64_t capacity(int64_t cw, int64_t sw, int64_t sinks)
{
    return cw > 0 ? cw : sinks + 2 * (sw - sinks);
}

static size_t elem_bytes(pl_type type)
{
    return type == PL_TYPE_F32 ? 4 : 2;
}

pl_status pl_kvcache_plan(const pl_model *m, int64_t cw, int64_t sw, int64_t sinks, pl_type type,
                          int64_t *cap, uint64_t *bytes, pl_error *err)
{
    pl_status s = validate(m, cw, sw, sinks, type, err);
    if (s) return s;
    *cap = capacity(cw, sw, sinks);
    *bytes = 0;
    for (int64_t l = 0; l < m->hp.n_layer; l++) {
        uint64_t b;
        if (!pl_mul_u64((uint64_t)*cap * (uint64_t)m->layers[l].n_head_kv,
                        (uint64_t)m->hp.head_dim * elem_bytes(type), &b) ||
            b > SIZE_MAX / 4 || !pl_add_u64(*bytes, 2 * b, bytes))
            return pl_fail(err, PL_ERR_CONFIG, "KV cache of %lld slots does not fit in memory",
                           (long long)*cap);
    }
    return PL_OK;
}

pl_status pl_kvcache_init(pl_kvcache *c, const pl_model *m, int64_t cw, int64_t sw, int64_t sinks,
                          pl_type type, int buffers, pl_error *err)
{
    memset(c, 0, sizeof *c);
    int64_t cap;
    uint64_t total;
    pl_status s = pl_kvcache_plan(m, cw, sw, sinks, type, &cap, &total, err);
    if (s) return s;
    const pl_hparams *hp = &m->hp;
    c->type = type;
    c->n_layer = buffers ? hp->n_layer : 0;
    c->D = hp->head_dim;
    c->cap = cap;
    if (sw > 0) {
        c->n_sinks = sinks;
        c->recent = sw - sinks;
        c->ring = 2 * c->recent;
    }
    c->pos = pl_malloc((size_t)c->cap * sizeof *c->pos);
    if (!c->pos) goto nomem;
    if (buffers) {
        c->n_head_kv = pl_calloc((size_t)c->n_layer, sizeof *c->n_head_kv);
        c->k = pl_calloc((size_t)c->n_layer, sizeof *c->k);
        c->v = pl_calloc((size_t)c->n_layer, sizeof *c->v);
        if (!c->n_head_kv || !c->k || !c->v) goto nomem;
    }
    for (int64_t l = 0; l < c->n_layer; l++) {
        c->n_head_kv[l] = m->layers[l].n_head_kv;
        size_t bytes = (size_t)c->cap * (size_t)c->n_head_kv[l] * (size_t)c->D * elem_bytes(type);
        c->k[l] = pl_malloc(bytes);
        c->v[l] = pl_malloc(bytes);
        if (!c->k[l] || !c->v[l]) goto nomem;
        c->bytes += 2 * bytes;
    }
    for (int64_t j = 0; j < c->cap; j++) c->pos[j] = PL_KV_EMPTY;
    return PL_OK;
nomem:
    pl_kvcache_free(c);
    return pl_fail(err, PL_ERR_NOMEM, "no memory for a KV cache of %lld slots", (long long)cap);
}

void pl_kvcache_free(pl_kvcache *c)
{
    if (!c) return;
    for (int64_t l = 0; l < c->n_layer; l++) {
        if (c->k) pl_free(c->k[l]);
        if (c->v) pl_free(c->v[l]);
    }
    pl_free(c->k);
    pl_free(c->v);
    pl_free(c->pos);
    pl_free(c->n_head_kv);
    memset(c, 0, sizeof *c);
}

int64_t pl_kvcache_max_step(const pl_kvcache *c)
{
    return c->ring ? c->recent : INT64_MAX;
}

pl_status pl_kvcache_check_room(const pl_kvcache *c, int64_t n, pl_error *err)
{
    if (n < 0) return pl_fail(err, PL_ERR_INVALID_ARG, "token count %lld < 0", (long long)n);
    if (c->ring == 0 && n > c->cap - c->n_past)
        return pl_fail(err, PL_ERR_CONTEXT_FULL,
                       "context window full: %lld tokens held, %lld more requested, "
                       "context_window=%lld",
                       (long long)c->n_past, (long long)n, (long long)c->cap);
    if (n > (int64_t)INT32_MAX - 1 - c->n_past)
        return pl_fail(err, PL_ERR_CONTEXT_FULL, "position %lld would overflow int32",
                       (long long)(c->n_past + n));
    return PL_OK;
}

int64_t pl_kvcache_slot(const pl_kvcache *c, int64_t pos)
{
    if (c->ring == 0 || pos < c->n_sinks) return pos;
    return c->n_sinks + (pos - c->n_sinks) % c->ring;
}

int64_t pl_kvcache_scan(const pl_kvcache *c)
{
    return c->n_past < c->cap ? c->n_past : c->cap;
}

void pl_kvcache_store(pl_kvcache *c, int64_t l, int64_t pos, const float *k, const float *v)
{
    int64_t slot = pl_kvcache_slot(c, pos);
    int64_t n = c->n_head_kv[l] * c->D;
    if (c->type == PL_TYPE_F32) {
        memcpy((float *)c->k[l] + slot * n, k, (size_t)n * sizeof(float));
        memcpy((float *)c->v[l] + slot * n, v, (size_t)n * sizeof(float));
    } else {
        pl_f16 *kd = (pl_f16 *)c->k[l] + slot * n, *vd = (pl_f16 *)c->v[l] + slot * n;
        for (int64_t i = 0; i < n; i++) {
            kd[i] = pl_f32_to_f16(k[i]);
            vd[i] = pl_f32_to_f16(v[i]);
        }
    }
}

void pl_kvcache_place(pl_kvcache *c, int64_t p0, int64_t n)
{
    for (int64_t p = p0; p < p0 + n; p++) c->pos[pl_kvcache_slot(c, p)] = (int32_t)p;
    /* A truncation does not bring back what the ring overwrote: remember how far it went. */
    if (c->ring && p0 + n - c->ring > c->evicted) c->evicted = p0 + n - c->ring;
}

pl_status pl_kvcache_truncate_check(const pl_kvcache *c, int64_t n, pl_error *err)
{
    if (n < 0 || n > c->n_past)
        return pl_fail(err, PL_ERR_INVALID_ARG, "cannot truncate to %lld tokens: %lld are held",
                       (long long)n, (long long)c->n_past);
    if (c->ring && n < c->n_past) {
        /* The next query (at n) needs positions [max(S, n - recent + 1), n). */
        int64_t need = n - c->recent + 1;
        if (need < c->n_sinks) need = c->n_sinks;
        int64_t oldest = c->evicted; /* oldest non-sink position still in the ring */
        if (need < n && need < oldest)
            return pl_fail(err, PL_ERR_INVALID_ARG,
                           "cannot truncate to %lld tokens: position %lld was evicted by the "
                           "sliding window (oldest kept: %lld)",
                           (long long)n, (long long)need, (long long)oldest);
    }
    return PL_OK;
}

pl_status pl_kvcache_truncate(pl_kvcache *c, int64_t n, pl_error *err)
{
    pl_status s = pl_kvcache_truncate_check(c, n, err);
    if (s) return s;
    for (int64_t j = 0; j < c->cap; j++)
        if (c->pos[j] != PL_KV_EMPTY && c->pos[j] >= n) c->pos[j] = PL_KV_EMPTY;
    c->n_past = n;
    if (c->evicted > n) c->evicted = n;
    return PL_OK;
}
