/* kvcache.h — the per-session KV cache: slots, positions, and the window policy.
 * Not attention: the kernel reads the slots; this file decides where tokens live. */
#ifndef PLUMB_KVCACHE_H
#define PLUMB_KVCACHE_H

#include "model.h"

/* Layout. Context window C: the token at position p lives in slot p; capacity C.
 * Sliding window W with S sinks: positions < S live in slots [0, S) forever; position
 * p >= S lives in slot S + (p - S) mod R, R = 2 (W - S). A query at p sees the sinks
 * and positions (p - (W - S), p]; evaluating at most W - S tokens per step guarantees
 * every entry a query needs is still in the ring. Slot order, and hence the order in
 * which attention sums, depends only on positions: chunking cannot change a bit. */
typedef struct pl_kvcache {
    pl_type type; /* PL_TYPE_F32 or PL_TYPE_F16 */
    int64_t n_layer, D;
    int64_t cap;        /* slots */
    int64_t n_sinks;    /* S (0 with a context window) */
    int64_t recent;     /* W - S: recent positions visible to a query (0: unlimited) */
    int64_t ring;       /* R (0 with a context window) */
    int64_t n_past;     /* tokens held; the next token's position */
    int64_t evicted;    /* non-sink positions below this were overwritten by the ring */
    int64_t *n_head_kv; /* [n_layer] */
    void **k, **v;      /* [n_layer] -> [cap][Hkv][D] of type */
    int32_t *pos;       /* [cap]; PL_KV_EMPTY for unused slots */
    uint64_t bytes;
} pl_kvcache;

#define PL_KV_EMPTY INT32_MAX

/* Validates the window parameters (PL_ERR_CONFIG naming them) and says how many slots and
 * bytes the cache needs, without allocating. */
pl_status pl_kvcache_plan(const pl_model *m, int64_t context_window, int64_t sliding_window,
                          int64_t sinks, pl_type type, int64_t *cap, uint64_t *bytes,
                          pl_error *err);
/* Validates the window parameters (PL_ERR_CONFIG naming them) and allocates. buffers 0: the
 * positions and the window's bookkeeping only, no K/V rows (a session with an external forward,
 * whose cache lives elsewhere; store must not be called). */
pl_status pl_kvcache_init(pl_kvcache *c, const pl_model *m, int64_t context_window,
                          int64_t sliding_window, int64_t sinks, pl_type type, int buffers,
                          pl_error *err);
void pl_kvcache_free(pl_kvcache *c);

/* Tokens per forward step that keep the window exact (see above); unlimited: INT64_MAX. */
int64_t pl_kvcache_max_step(const pl_kvcache *c);
/* PL_OK if n more tokens fit; PL_ERR_CONTEXT_FULL otherwise. Changes nothing. */
pl_status pl_kvcache_check_room(const pl_kvcache *c, int64_t n, pl_error *err);
int64_t pl_kvcache_slot(const pl_kvcache *c, int64_t pos);
/* Slots attention must scan: [0, n) covers every occupied slot. */
int64_t pl_kvcache_scan(const pl_kvcache *c);
/* Claims the slots of positions [p0, p0 + n) (evicting what the ring held there); call
 * before the step's first layer so the new tokens see each other. */
void pl_kvcache_place(pl_kvcache *c, int64_t p0, int64_t n);
/* Stores one token's K and V rows (Hkv * D floats each) for layer l at position pos. */
void pl_kvcache_store(pl_kvcache *c, int64_t l, int64_t pos, const float *k, const float *v);
/* Drops tokens at positions >= n. PL_ERR_INVALID_ARG (nothing changed) if n > n_past or
 * the window already evicted what the next query would need. */
pl_status pl_kvcache_truncate(pl_kvcache *c, int64_t n, pl_error *err);
/* The checks of pl_kvcache_truncate, changing nothing. */
pl_status pl_kvcache_truncate_check(const pl_kvcache *c, int64_t n, pl_error *err);

#endif
