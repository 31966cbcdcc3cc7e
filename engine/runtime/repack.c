/* repack.c — the model's repacked weights: at load, every matmul weight whose type the chosen
 * kernel set repacks is copied once into the set's layout (kernels.h, pl_repack).
 * Not a kernel and not a format: the layouts belong to the sets; this only allocates and asks. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "gguf/gguf.h"
#include "model.h"
#include "registry.h"

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* Calls fn on every matmul weight of the model (output too, even when tied: its copy is
 * separate from the embedding rows, which are looked up, not multiplied). */
static void each_matmul_weight(pl_model *m, void (*fn)(pl_tensor *t, void *ctx), void *ctx)
{
    for (int64_t l = 0; l < m->hp.n_layer; l++) {
        pl_layer *L = &m->layers[l];
        pl_tensor *ts[] = {&L->wq,         &L->wk,       &L->wv,        &L->wo,      &L->w_gate,
                           &L->w_up,       &L->w_down,   &L->gate_exps, &L->up_exps, &L->down_exps,
                           &L->gate_shexp, &L->up_shexp, &L->down_shexp};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) fn(ts[i], ctx);
    }
    fn(&m->output, ctx);
}

typedef struct plan {
    const pl_gguf *gguf; /* to give back the mapped pages of what was copied */
    const struct pl_kernels *set;
    size_t total;
    uint8_t *arena; /* NULL while sizing */
    int n;
} plan;

static void visit(pl_tensor *t, void *ctx)
{
    plan *p = ctx;
    const pl_repack *rp = t->data && t->type < PL_TYPE_COUNT ? p->set->repack[t->type] : NULL;
    if (!rp) return;
    /* stacked experts: each matrix packed on its own, 64-byte aligned, one after the other */
    const size_t one = align64(rp->size(t->ne[0], t->ne[1])), n = (size_t)t->ne[2];
    if (p->arena) {
        const size_t src = t->expert_bytes;
#ifdef MADV_POPULATE_READ
        /* Prefault the source in one call: one fault per 4 KiB page costs more than the
         * packing itself in a VM. A hint only (older kernels refuse it; memory buffers too). */
        const uintptr_t a = (uintptr_t)t->data & ~(uintptr_t)4095;
        (void)madvise((void *)a, (uintptr_t)t->data - a + src * n, MADV_POPULATE_READ);
#endif
        for (size_t e = 0; e < n; e++)
            rp->pack(p->arena + p->total + e * one, (const uint8_t *)t->data + e * src,
                     t->row_bytes, t->ne[0], t->ne[1]);
        /* Peak memory is the copy plus one tensor, not the copy plus the whole file. */
        pl_gguf_release(p->gguf, t->data, src * n);
        t->packed = p->arena + p->total;
        t->packed_expert_bytes = one;
        t->repack = rp;
    }
    const size_t bytes = one * n;
    p->total += bytes;
    p->n++;
}

pl_status pl_model_repack(pl_model *m, pl_error *err)
{
    if (!m || m->vocab_only) return pl_fail(err, PL_ERR_INVALID_ARG, "no model weights to repack");
    if (m->packed) return pl_fail(err, PL_ERR_INVALID_ARG, "model is repacked already");
    const pl_kernel_table kt = m->kt;
    const double t0 = pl_clock_ms();
    plan p = {.gguf = m->gguf, .set = kt.set};
    each_matmul_weight(m, visit, &p);
    if (p.n == 0) return pl_ok(err);
    /* Aligned to 2 MiB and advised as huge pages: 250 page faults instead of 128k per 500 MB
     * at load, and fewer TLB misses when decode streams the weights. */
    const size_t huge = (size_t)2 << 20;
    p.arena = pl_malloc(p.total + huge);
    if (!p.arena)
        return pl_fail(err, PL_ERR_NOMEM,
                       "no memory for %d repacked weights (%zu bytes) for kernel set '%s'; "
                       "PL_MODEL_NO_REPACK runs them from the mapping",
                       p.n, p.total, kt.set->name);
    m->packed = p.arena;
    p.arena = (uint8_t *)(((uintptr_t)p.arena + huge - 1) & ~(uintptr_t)(huge - 1));
#ifdef MADV_HUGEPAGE
    (void)madvise(p.arena, (p.total + huge - 1) & ~(huge - 1), MADV_HUGEPAGE); /* a hint only */
#endif
    p.total = 0;
    p.n = 0;
    each_matmul_weight(m, visit, &p);
    m->packed_bytes = p.total;
    m->n_repacked = p.n;
    snprintf(m->repack_set, sizeof m->repack_set, "%s", kt.set->name);
    m->repack_ms = pl_clock_ms() - t0;
    return pl_ok(err);
}
