/* forward.c — sessions and the transformer forward pass, written against the kernel table.
 * Not a kernel: every number is computed by a kernel; this file only moves data and splits work.
 *
 * Dimension legend (used in every comment below):
 *   T tokens in this step   E n_embd   F n_ff (of the layer)   V n_vocab
 *   H query heads   Hkv KV heads   D head dim   N KV slots scanned */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kvcache.h"
#include "model.h"
#include "registry.h"
#include "rope_angle.h"
#include "session.h"
#include "threads.h"

#define DEFAULT_CONTEXT 4096
#define DEFAULT_CHUNK   256
#define MAX_CHUNK       4096

/* The scratch arena: one block, carved at session creation. */
typedef struct scratch {
    float *x;           /* (T, E) residual stream */
    float *xn;          /* (T, E) normalised input to a block */
    float *q;           /* (T, H*D) */
    float *k, *v;       /* (T, Hkv*D) */
    float *att;         /* (T, H*D) attention output */
    float *tmp;         /* (T, max(E, D)) */
    float *gate;        /* (T, F) */
    float *up;          /* (T, F) */
    float *ffh;         /* (T, F) swiglu(gate, up) */
    void *xq;           /* (T, K) activations quantized to a dot type, K <= max(E, F, H*D) */
    size_t xq_row;      /* bytes of one quantized row at the largest K */
    void *xp;           /* (T, K) the quantized rows prepared for a repacked layout */
    float *att_scratch; /* (threads, PL_ATTN_SCRATCH(cap, D)) */
    int32_t *q_pos;     /* (T) */
    double *rope_cs; /* (2, T, D) each RoPE's cos and sin at the step's positions (rope_angle.h) */
    /* mixture-of-experts layers (U = experts used per token, X experts) */
    float *router;       /* (T, X) router logits */
    float *probs;        /* (T, X) their softmax */
    int32_t *ids;        /* (T, U) the chosen experts */
    float *wts;          /* (T, U + 1) their weights, then the shared expert's gate */
    float *yx;           /* (T * U, E) the chosen experts' outputs */
    float *ysh;          /* (T, E) the shared expert's output */
    uint8_t *id_scratch; /* (threads, id_bytes) pl_matmul_id's own */
    size_t id_bytes;
    size_t bytes;
} scratch;

struct pl_session {
    const pl_model *m;
    pl_kernel_table kt;
    pl_pool *pool;
    pl_kvcache kv;
    pl_history hist;      /* the ids the cache holds and their text; hist.n == kv.n_past */
    int64_t chunk;        /* tokens per step */
    int packed;           /* 1: the model's repacked weights are in this session's kernel set */
    pl_rope_args rope[2]; /* the global and local layers' RoPE as this session's context has them
                             (longrope: the long divisors beyond the original context) */
    int rope_used[2];     /* 1: some layer rotates with rope[i] */
    uint64_t eval_ns, attention_ns; /* profile: time in forward steps, in attention */
    scratch s;
    void *arena;
    /* An external forward (pl_session_params.forward): no KV rows, scratch or threads here;
     * kv keeps the positions and the window's bookkeeping. hook_stale: a truncation the hook
     * failed inside pl_session_reset, asked again before the next eval. */
    int has_hook, hook_stale;
    pl_forward_hook hook;
    char hook_name[32];
};

/* ---- parallel helpers ---- */

/* Up to 3 matmuls over the same activations in one pool dispatch (q, k, v; gate, up): their
 * rows are concatenated, so a token costs fewer synchronisations. Rows are split in grains
 * of PL_REPACK_ROWS so no interleaved group is cut between threads. */
#define MM_MAX 3
typedef struct mm_one {
    pl_matmul_fn fn;
    const void *w; /* the mapping, or the repacked copy */
    size_t w_row;
    size_t w_expert; /* bytes from one expert's matrix to the next (stacked experts) */
    float *y;
    int64_t R;
} mm_one;

/* m[i] for the n weights w[i] into ys[i]: the repacked copy and its kernel where the session
 * runs it, else the mapping and the set's kernel for the type. Returns the rows in all. */
static int64_t mm_plan(const pl_session *ss, const pl_tensor *const *w, float *const *ys, int n,
                       mm_one *m)
{
    int64_t rows = 0;
    for (int i = 0; i < n; i++) {
        const int packed = ss->packed && w[i]->packed;
        m[i] = (mm_one){
            .fn = packed ? w[i]->repack->matmul : ss->kt.k.matmul[w[i]->type],
            .w = packed ? w[i]->packed : w[i]->data,
            .w_row = w[i]->row_bytes,
            .w_expert = packed ? w[i]->packed_expert_bytes : w[i]->expert_bytes,
            .y = ys[i],
            .R = w[i]->ne[1],
        };
        rows += w[i]->ne[1];
    }
    return rows;
}

typedef struct mm_job {
    mm_one m[MM_MAX];
    int n;
    const void *x;
    size_t x_row;
    int64_t K, T;
} mm_job;

static void mm_worker(void *ctx, int64_t r0, int64_t r1, int thread)
{
    (void)thread;
    const mm_job *j = ctx;
    int64_t base = 0;
    for (int i = 0; i < j->n; i++) {
        const mm_one *o = &j->m[i];
        const int64_t a = r0 > base ? r0 - base : 0, b = r1 - base < o->R ? r1 - base : o->R;
        if (a < b) o->fn(o->y, o->R, o->w, o->w_row, j->x, j->x_row, j->K, a, b, j->T);
        base += o->R;
    }
}

/* What makes a matmul's input rows, fused into the same parallel region as their
 * quantization: RMSNorm of a's rows by w, or SwiGLU of a's (gate) and b's (up) rows. */
typedef struct pre_op {
    const float *a, *b, *w;
    float eps;
    int act;  /* enum pl_act of the gated unit (with b) */
    int norm; /* enum pl_norm_kind of the norm (with w): RMSNorm or LayerNorm */
} pre_op;

typedef struct quant_job {
    const struct pl_kernels *k;
    pl_quantize_row_fn fn; /* NULL: the rows stay f32 */
    uint8_t *out;
    size_t row;
    float *x;
    int64_t K;
    const pre_op *pre;     /* non-NULL: x's rows are made first */
    const pl_repack *prep; /* non-NULL: then each row is prepared into xp */
    uint8_t *xp;
    size_t xp_row;
} quant_job;

static void quant_worker(void *ctx, int64_t t0, int64_t t1, int thread)
{
    (void)thread;
    const quant_job *j = ctx;
    const int64_t K = j->K;
    for (int64_t t = t0; t < t1; t++) {
        float *x = j->x + t * K;
        const pre_op *p = j->pre;
        if (p && p->w && p->norm == PL_NORM_LAYER)
            j->k->layernorm(x, p->a + t * K, p->w, K, p->eps);
        else if (p && p->w)
            j->k->rmsnorm(x, p->a + t * K, p->w, K, p->eps);
        if (p && p->b && p->act == PL_ACT_GELU_TANH)
            j->k->geglu(x, p->a + t * K, p->b + t * K, K);
        else if (p && p->b && p->act == PL_ACT_SWIGLU_OAI)
            j->k->swiglu_oai(x, p->a + t * K, p->b + t * K, K, PL_OAI_ALPHA, PL_OAI_LIMIT);
        else if (p && p->b)
            j->k->swiglu(x, p->a + t * K, p->b + t * K, K);
        if (!j->fn) continue;
        uint8_t *q = j->out + (size_t)t * j->row;
        j->fn(q, x, K);
        if (j->prep) j->prep->x_prep(j->xp + (size_t)t * j->xp_row, q, K);
    }
}

/* A gated unit's rows made by column blocks (GLU_COLS elements, every thread a share of each
 * row): a decode step's one row of F elements is otherwise a single item, on the caller alone
 * while the other threads wait. The activation is elementwise, so a block's bits are those of the
 * whole row's (blocks are whole vectors but the row's last, whose tail is the row's own). */
#define GLU_COLS 256

/* Item i of rows of K elements cut in blocks of `cols` (nb per row): its row *t, first column
 * *c0 and length (the row's last block may be short). */
static int64_t col_block(int64_t i, int64_t nb, int64_t K, int64_t cols, int64_t *t, int64_t *c0)
{
    *t = i / nb;
    *c0 = i % nb * cols;
    return K - *c0 < cols ? K - *c0 : cols;
}

typedef struct glu_job {
    const struct pl_kernels *k;
    const pre_op *pre;
    float *x;
    int64_t K, nb; /* nb: blocks per row */
} glu_job;

static void glu_worker(void *ctx, int64_t i0, int64_t i1, int thread)
{
    (void)thread;
    const glu_job *j = ctx;
    for (int64_t i = i0; i < i1; i++) {
        int64_t t, c0;
        const int64_t n = col_block(i, j->nb, j->K, GLU_COLS, &t, &c0);
        const size_t at = (size_t)(t * j->K + c0);
        if (j->pre->act == PL_ACT_GELU_TANH)
            j->k->geglu(j->x + at, j->pre->a + at, j->pre->b + at, n);
        else if (j->pre->act == PL_ACT_SWIGLU_OAI)
            j->k->swiglu_oai(j->x + at, j->pre->a + at, j->pre->b + at, n, PL_OAI_ALPHA,
                             PL_OAI_LIMIT);
        else
            j->k->swiglu(j->x + at, j->pre->a + at, j->pre->b + at, n);
    }
}

/* A few rows quantized by column blocks (QUANT_COLS elements, whole blocks of the dot type, the
 * row's last block where the row's is): blocks are quantized each on its own, so the bytes are
 * the whole row's. For rows without a prepared layout (x_prep reads a whole row). */
#define QUANT_COLS 1024

typedef struct qcols_job {
    pl_quantize_row_fn fn;
    uint8_t *out;
    size_t row, block_bytes;
    const float *x;
    int64_t K, nb, block; /* nb: column blocks per row; block: the dot type's elements */
} qcols_job;

static void qcols_worker(void *ctx, int64_t i0, int64_t i1, int thread)
{
    (void)thread;
    const qcols_job *j = ctx;
    for (int64_t i = i0; i < i1; i++) {
        int64_t t, c0;
        const int64_t n = col_block(i, j->nb, j->K, QUANT_COLS, &t, &c0);
        j->fn(j->out + (size_t)t * j->row + (size_t)(c0 / j->block) * j->block_bytes,
              j->x + t * j->K + c0, n);
    }
}

/* The T input rows of matmuls with w's type and layout, made in one dispatch: pre first (when
 * given), then quantized to the dot type and prepared for a repacked layout. *xr and *xrow say
 * where the matmul reads them (x itself for F32 rows). Weights sharing a dispatch share one
 * type, so one layout and one preparation. */
static void make_inputs(pl_session *ss, const pl_tensor *w, float *x, int64_t T, const pre_op *pre,
                        const void **xr, size_t *xrow)
{
    const struct pl_kernels *k = &ss->kt.k;
    const int64_t K = w->ne[0];
    const pl_type dot = pl_type_traits_of(w->type)->dot_type;
    if (pre && pre->b && T < pl_pool_size(ss->pool)) {
        glu_job g = {.k = k, .pre = pre, .x = x, .K = K, .nb = (K + GLU_COLS - 1) / GLU_COLS};
        pl_pool_run(ss->pool, glu_worker, &g, T * g.nb, 1);
        pre = NULL; /* x's rows are made */
    }
    quant_job q = {.k = k, .x = x, .K = K, .pre = pre};
    *xr = x;
    *xrow = (size_t)K * sizeof(float);
    if (dot != PL_TYPE_F32) {
        pl_type_row_bytes(dot, K, &q.row, NULL);
        q.fn = k->quantize_row[dot];
        q.out = ss->s.xq;
        *xr = ss->s.xq;
        *xrow = q.row;
        const pl_repack *rp = ss->packed && w->packed ? w->repack : NULL;
        if (rp && rp->x_prep) {
            q.prep = rp;
            q.xp = ss->s.xp;
            q.xp_row = rp->x_row(K);
            *xr = ss->s.xp;
            *xrow = q.xp_row;
        }
    }
    const struct pl_type_traits *dt = pl_type_traits_of(dot);
    if (q.fn && !q.prep && T < pl_pool_size(ss->pool) && K > QUANT_COLS &&
        QUANT_COLS % dt->block_size == 0) {
        if (pre) { /* the norm needs the whole row: its rows first (decode: on the caller) */
            quant_job n = q;
            n.fn = NULL;
            pl_pool_run(ss->pool, quant_worker, &n, T, 8);
        }
        qcols_job c = {.fn = q.fn,
                       .out = q.out,
                       .row = q.row,
                       .block_bytes = dt->block_bytes,
                       .x = x,
                       .K = K,
                       .nb = (K + QUANT_COLS - 1) / QUANT_COLS,
                       .block = dt->block_size};
        pl_pool_run(ss->pool, qcols_worker, &c, T * c.nb, 1);
        return;
    }
    if (q.fn || pre) pl_pool_run(ss->pool, quant_worker, &q, T, 8);
}

/* ys[i] (T, R_i) = x (T, K) . W_i^T for the n weights (same K, same type). Activations are
 * quantized row by row to the weight type's dot type first, so each row's quantization is
 * the same in any batch; with pre, x's rows are made in the same region (one dispatch). */
static void matmul_n(pl_session *ss, const pl_tensor *const *w, float *const *ys, int n, float *x,
                     int64_t T, const pre_op *pre)
{
    mm_job j = {.n = n, .K = w[0]->ne[0], .T = T};
    const int64_t rows = mm_plan(ss, w, ys, n, j.m);
    make_inputs(ss, w[0], x, T, pre, &j.x, &j.x_row);
    pl_pool_run(ss->pool, mm_worker, &j, rows, PL_REPACK_ROWS);
}

static void matmul(pl_session *ss, const pl_tensor *w, float *y, float *x, int64_t T,
                   const pre_op *pre)
{
    matmul_n(ss, &w, &y, 1, x, T, pre);
}

/* Attention work items: head chunks (whole KV groups when there are enough of them, so the
 * heads sharing a K/V read stay together) x blocks of query tokens, chunk-major. */
#define ATT_TBLOCK 32

typedef struct att_job {
    pl_session *ss;
    float *out;
    pl_attn_args a;
    int64_t hc, n_tb; /* heads per chunk, token blocks */
} att_job;

static void att_worker(void *ctx, int64_t i0, int64_t i1, int thread)
{
    att_job *j = ctx;
    float *buf = j->ss->s.att_scratch +
                 (size_t)thread * PL_ATTN_SCRATCH(j->ss->kv.cap, j->ss->m->hp.head_dim);
    const pl_attn_args *a = &j->a;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t h0 = i / j->n_tb * j->hc, t0 = i % j->n_tb * ATT_TBLOCK;
        const int64_t h1 = h0 + j->hc < a->H ? h0 + j->hc : a->H;
        pl_attn_args sub = *a;
        sub.T = a->T - t0 < ATT_TBLOCK ? a->T - t0 : ATT_TBLOCK;
        sub.q = a->q + t0 * a->H * a->D;
        sub.q_pos = a->q_pos + t0;
        j->ss->kt.k.attention(j->out + t0 * a->H * a->D, &sub, h0, h1, buf);
    }
}

static void add_into(float *restrict y, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

/* Per-head RMSNorm (qwen3's q_norm / k_norm) over one token's heads (heads, D) in place; tmp
 * holds D floats. */
static void head_norm(const pl_session *ss, float *x, const pl_tensor *w, int64_t heads, float *tmp)
{
    if (!w->data) return;
    int64_t D = ss->m->hp.head_dim;
    for (int64_t h = 0; h < heads; h++) {
        float *row = x + h * D;
        ss->kt.k.rmsnorm(tmp, row, w->data, D, ss->m->hp.rms_eps);
        memcpy(row, tmp, (size_t)D * sizeof(float));
    }
}

/* The per-token steps that follow the q/k/v projections (biases, head norms, RoPE at the
 * token's position, its K and V into the cache), token by token over the pool: each token runs
 * steps [0, n) in order. */
typedef struct qkv_job {
    pl_session *ss;
    const pl_layer *L;
    const pl_step *steps;
    size_t n;
    int64_t l, p0;
} qkv_job;

static void qkv_worker(void *ctx, int64_t t0, int64_t t1, int thread)
{
    const qkv_job *j = ctx;
    pl_session *ss = j->ss;
    const pl_layer *L = j->L;
    const struct pl_kernels *k = &ss->kt.k;
    const int64_t D = ss->m->hp.head_dim, H = L->n_head, Hkv = L->n_head_kv;
    float *tmp = ss->s.att_scratch + (size_t)thread * PL_ATTN_SCRATCH(ss->kv.cap, D);
    for (int64_t t = t0; t < t1; t++) {
        float *q = ss->s.q + t * H * D, *kk = ss->s.k + t * Hkv * D, *v = ss->s.v + t * Hkv * D;
        for (size_t i = 0; i < j->n; i++) {
            switch ((enum pl_step_kind)j->steps[i].kind) {
            case PL_STEP_QKV_BIAS:
                if (L->bq.data) add_into(q, L->bq.data, H * D);
                if (L->bk.data) add_into(kk, L->bk.data, Hkv * D);
                if (L->bv.data) add_into(v, L->bv.data, Hkv * D);
                break;
            case PL_STEP_HEAD_NORM:
                head_norm(ss, q, &L->q_norm, H, tmp);
                head_norm(ss, kk, &L->k_norm, Hkv, tmp);
                break;
            case PL_STEP_QK_NORM: {
                /* the whole projections (OLMo 2), through the token's attention output row
                 * (H*D, written only by the attention step after these) */
                float *w = ss->s.att + t * H * D;
                const float eps = ss->m->hp.rms_eps;
                if (L->q_norm.data) {
                    k->rmsnorm(w, q, L->q_norm.data, H * D, eps);
                    memcpy(q, w, (size_t)(H * D) * sizeof(float));
                }
                if (L->k_norm.data) {
                    k->rmsnorm(w, kk, L->k_norm.data, Hkv * D, eps);
                    memcpy(kk, w, (size_t)(Hkv * D) * sizeof(float));
                }
                break;
            }
            case PL_STEP_ROPE: {
                /* the angles step_body computed once for this position */
                pl_rope_args a = ss->rope[L->rope_local];
                a.cos_sin = ss->s.rope_cs + (L->rope_local * ss->chunk + t) * D;
                k->rope(q, H, D, (int32_t)(j->p0 + t), &a);
                k->rope(kk, Hkv, D, (int32_t)(j->p0 + t), &a);
                break;
            }
            case PL_STEP_KV_STORE:
                pl_kvcache_store(&ss->kv, j->l, j->p0 + t, kk, v);
                break;
            case PL_STEP_NORM:
            case PL_STEP_QKV:
            case PL_STEP_ATTENTION:
            case PL_STEP_ATTN_OUT:
            case PL_STEP_RESIDUAL:
            case PL_STEP_FFN_GATED:
            case PL_STEP_FFN_MOE:
            case PL_STEP_COUNT:
                break; /* not per token: layer_forward runs them */
            }
        }
    }
}

/* A branch's output (tmp, T rows of E) into the residual stream x: normalised by its post
 * norm first where the recipe has one (Gemma), through xn (free once q/k/v or gate/up are). */
typedef struct branch_job {
    pl_session *ss;
    const float *post_norm;
    float scale; /* Granite's residual multiplier (1: none) */
} branch_job;

static void branch_worker(void *ctx, int64_t t0, int64_t t1, int thread)
{
    (void)thread;
    const branch_job *j = ctx;
    scratch *s = &j->ss->s;
    const int64_t E = j->ss->m->hp.n_embd;
    for (int64_t t = t0; t < t1; t++) {
        const float *b = s->tmp + t * E;
        if (j->post_norm) {
            const pl_layernorm_fn norm = j->ss->m->hp.arch->recipe.norm == PL_NORM_LAYER
                                             ? j->ss->kt.k.layernorm
                                             : j->ss->kt.k.rmsnorm;
            norm(s->xn + t * E, b, j->post_norm, E, j->ss->m->hp.rms_eps);
            b = s->xn + t * E;
        }
        if (j->scale != 1.0f) {
            float *y = s->x + t * E;
            for (int64_t i = 0; i < E; i++) y[i] += b[i] * j->scale;
        } else {
            add_into(s->x + t * E, b, E);
        }
    }
}

static void branch_out(pl_session *ss, const float *post_norm, int64_t T)
{
    branch_job j = {ss, post_norm, ss->m->hp.residual_scale};
    pl_pool_run(ss->pool, branch_worker, &j, T, 4);
}

/* ---- mixture-of-experts FFN ---- */

/* Up to 2 expert matmuls over the same activations in one dispatch (gate and up), rows split
 * as mm_job's; each thread groups the tokens by expert itself (pl_matmul_id). */
typedef struct mmid_job {
    mm_one m[2];
    int n;
    const void *x;
    size_t x_row;
    const int32_t *ids;
    int64_t n_used, n_expert, K, T;
    uint8_t *scratch;
    size_t scratch_bytes;
} mmid_job;

static void mmid_worker(void *ctx, int64_t r0, int64_t r1, int thread)
{
    const mmid_job *j = ctx;
    void *mine = j->scratch + (size_t)thread * j->scratch_bytes;
    int64_t base = 0;
    for (int i = 0; i < j->n; i++) {
        const mm_one *o = &j->m[i];
        const int64_t a = r0 > base ? r0 - base : 0, b = r1 - base < o->R ? r1 - base : o->R;
        if (a < b)
            (void)pl_matmul_id(o->fn, o->y, o->R, o->w, o->w_row, o->w_expert, j->n_expert, j->x,
                               j->x_row, j->ids, j->n_used, j->K, a, b, j->T, mine);
        base += o->R;
    }
}

/* ys[i] (T * n_used, R_i): row t * n_used + u = expert ids[t * n_used + u] of w[i] on x's row
 * t. x's rows are quantized (made by pre first) as matmul_n's. */
static void matmul_id_n(pl_session *ss, const pl_tensor *const *w, float *const *ys, int n,
                        float *x, int64_t T, const int32_t *ids, int64_t n_used, const pre_op *pre)
{
    mmid_job j = {.n = n,
                  .ids = ids,
                  .n_used = n_used,
                  .n_expert = w[0]->ne[2],
                  .K = w[0]->ne[0],
                  .T = T,
                  .scratch = ss->s.id_scratch,
                  .scratch_bytes = ss->s.id_bytes};
    const int64_t rows = mm_plan(ss, w, ys, n, j.m);
    make_inputs(ss, w[0], x, T, pre, &j.x, &j.x_row);
    pl_pool_run(ss->pool, mmid_worker, &j, rows, PL_REPACK_ROWS);
}

/* Per-token work of a MoE layer, tokens split over the pool: the route (ids, weights) from
 * the router's logits, and the weighted sum of a token's expert rows (slot order, the shared
 * expert's last) into tmp. */
typedef struct moe_job {
    pl_session *ss;
    const pl_layer *L;
    int64_t U, W;
    int has_sh;
} moe_job;

/* gpt-oss's per-expert biases: row r = t * U + u of ys[i] (R_i wide) gains row ids[r] of b[i]
 * (n of them: gate and up, or down). */
typedef struct ebias_job {
    const int32_t *ids;
    const float *b[2];
    float *y[2];
    int64_t R;
    int n;
} ebias_job;

static void ebias_worker(void *ctx, int64_t r0, int64_t r1, int thread)
{
    (void)thread;
    const ebias_job *j = ctx;
    for (int i = 0; i < j->n; i++)
        for (int64_t r = r0; r < r1; r++) {
            const float *b = j->b[i] + (int64_t)j->ids[r] * j->R;
            float *y = j->y[i] + r * j->R;
            for (int64_t c = 0; c < j->R; c++) y[c] += b[c];
        }
}

static void route_worker(void *ctx, int64_t t0, int64_t t1, int thread)
{
    (void)thread;
    const moe_job *j = ctx;
    const scratch *s = &j->ss->s;
    const pl_hparams *hp = &j->ss->m->hp;
    const int64_t X = hp->n_expert;
    const float *rb = j->L->gate_inp_b.data; /* gpt-oss: the router's bias, before routing */
    for (int64_t t = t0; rb && t < t1; t++)
        for (int64_t e = 0; e < X; e++) s->router[t * X + e] += rb[e];
    for (int64_t t = t0; t < t1; t++)
        j->ss->kt.k.moe_route(s->ids + t * j->U, s->wts + t * j->W, s->probs + t * X,
                              s->router + t * X, X, j->U, hp->arch->recipe.moe_norm);
}

static void combine_worker(void *ctx, int64_t t0, int64_t t1, int thread)
{
    (void)thread;
    const moe_job *j = ctx;
    const scratch *s = &j->ss->s;
    const int64_t E = j->ss->m->hp.n_embd, U = j->U;
    for (int64_t t = t0; t < t1; t++) {
        const float *rows[PL_MOE_MAX_USED + 1];
        for (int64_t u = 0; u < U; u++) rows[u] = s->yx + (t * U + u) * E;
        if (j->has_sh) rows[U] = s->ysh + t * E;
        j->ss->kt.k.weighted_sum(s->tmp + t * E, rows, s->wts + t * j->W, j->W, E);
    }
}

/* The FFN of a mixture-of-experts layer into tmp (T rows of E), as llama.cpp's build_moe_ffn
 * computes it: router logits (F32) of the normalised x; per token the route (softmax, the U
 * largest, normalised where the recipe says); gate and up of the chosen experts; down of
 * silu(gate) * up; the outputs times their weights, added in slot order; then, with a shared
 * expert (qwen2moe), its output times sigmoid(gate_inp_shexp . x) added last. */
static void ffn_moe(pl_session *ss, const pl_layer *L, int64_t T, const pre_op *ffn_norm, int act)
{
    const pl_hparams *hp = &ss->m->hp;
    const struct pl_kernels *k = &ss->kt.k;
    scratch *s = &ss->s;
    const int64_t U = hp->n_expert_used;
    const int has_sh = L->gate_shexp.data != NULL;
    const int64_t W = U + has_sh; /* rows combined per token */

    matmul(ss, &L->gate_inp, s->router, s->xn, T, ffn_norm); /* s->xn: the normalised rows */
    moe_job mj = {.ss = ss, .L = L, .U = U, .W = W, .has_sh = has_sh};
    pl_pool_run(ss->pool, route_worker, &mj, T, 8);
    if (has_sh) {
        /* the shared expert first (gate/up/ffh are free again after it): its gate's logits
         * (router's rows are free once routed), their sigmoid, then its FFN */
        matmul(ss, &L->gate_inp_shexp, s->router, s->xn, T, NULL);
        k->sigmoid(s->probs, s->router, T);
        for (int64_t t = 0; t < T; t++) s->wts[t * W + U] = s->probs[t];
        const pl_tensor *w[2] = {&L->gate_shexp, &L->up_shexp};
        float *const y[2] = {s->gate, s->up};
        if (L->gate_shexp.type == L->up_shexp.type) {
            matmul_n(ss, w, y, 2, s->xn, T, NULL);
        } else {
            matmul(ss, w[0], y[0], s->xn, T, NULL);
            matmul(ss, w[1], y[1], s->xn, T, NULL);
        }
        const pre_op gated = {s->gate, s->up, NULL, 0.0f, act, 0};
        matmul(ss, &L->down_shexp, s->ysh, s->ffh, T, &gated);
    }
    const pl_tensor *w[2] = {&L->gate_exps, &L->up_exps};
    float *const y[2] = {s->gate, s->up};
    if (L->gate_exps.type == L->up_exps.type) {
        matmul_id_n(ss, w, y, 2, s->xn, T, s->ids, U, NULL);
    } else {
        matmul_id_n(ss, w, y, 1, s->xn, T, s->ids, U, NULL);
        matmul_id_n(ss, w + 1, y + 1, 1, s->xn, T, s->ids, U, NULL);
    }
    if (L->gate_exps_b.data) { /* gpt-oss: each expert's gate and up biases, per (token, slot) */
        ebias_job bj = {.ids = s->ids,
                        .b = {L->gate_exps_b.data, L->up_exps_b.data},
                        .y = {s->gate, s->up},
                        .R = hp->n_ff_exp,
                        .n = 2};
        pl_pool_run(ss->pool, ebias_worker, &bj, T * U, 8);
    }
    /* down: each (token, slot) row is a token of its own with one expert */
    const pre_op gated = {s->gate, s->up, NULL, 0.0f, act, 0};
    const pl_tensor *wd = &L->down_exps;
    matmul_id_n(ss, &wd, &s->yx, 1, s->ffh, T * U, s->ids, 1, &gated);
    if (L->down_exps_b.data) { /* ... and its down bias, before the router's weight */
        ebias_job bj = {
            .ids = s->ids, .b = {L->down_exps_b.data}, .y = {s->yx}, .R = hp->n_embd, .n = 1};
        pl_pool_run(ss->pool, ebias_worker, &bj, T * U, 8);
    }
    pl_pool_run(ss->pool, combine_worker, &mj, T, 4);
}

/* ---- one step: T tokens at positions [p0, p0 + T) ---- */

/* Attention of the T query rows q (positions q_pos) of layer l into att, over the cache. */
static void attention(pl_session *ss, const pl_layer *L, int64_t l, int64_t T, const float *q,
                      const int32_t *q_pos)
{
    const pl_hparams *hp = &ss->m->hp;
    const int64_t D = hp->head_dim, H = L->n_head, Hkv = L->n_head_kv;
    att_job j = {.ss = ss, .out = ss->s.att};
    j.a = (pl_attn_args){
        .T = T,
        .H = H,
        .Hkv = Hkv,
        .D = D,
        .N = pl_kvcache_scan(&ss->kv),
        .q = q,
        .q_pos = q_pos,
        .k = ss->kv.k[l],
        .v = ss->kv.v[l],
        .kv_type = ss->kv.type,
        .kv_pos = ss->kv.pos,
        .window = ss->kv.recent,
        .n_sinks = ss->kv.n_sinks,
        .scale = hp->attn_scale,
        .softcap = hp->attn_softcap,
        .layer_window = L->window,
        .kv_sorted = ss->kv.ring == 0, /* a context window keeps position p in slot p */
        .sinks = L->sinks.data,        /* gpt-oss's learned sink logits, or NULL */
    };
    /* whole KV groups per thread where there are enough: their heads share each K/V read */
    j.n_tb = (T + ATT_TBLOCK - 1) / ATT_TBLOCK;
    const int64_t nt = pl_pool_size(ss->pool);
    j.hc = Hkv >= nt || Hkv * j.n_tb >= 2 * nt ? H / Hkv : 1;
    const uint64_t t_att = pl_clock_ns();
    pl_pool_run(ss->pool, att_worker, &j, (H + j.hc - 1) / j.hc * j.n_tb, 1);
    ss->attention_ns += pl_clock_ns() - t_att;
}

/* Layer l over the T tokens at positions [p0, p0 + T): its steps (L->steps, arch.h) in order.
 * A norm step becomes the input transform of the projection after it (fused into its
 * quantization pass); a run of per-token steps is one pass over the tokens. Every token's K
 * and V go to the cache; from attention on only rows [keep0, T) are carried on (the last
 * layer, where only those rows' logits are wanted: llama.cpp prunes the same way), moved to
 * rows [0, T - keep0) of x. Each row's bits are those of the full layer (every kernel is
 * batch-invariant, attention per query). */
static void layer_forward(pl_session *ss, int64_t l, int64_t T, int64_t p0, int64_t keep0)
{
    const pl_model *m = ss->m;
    const pl_hparams *hp = &m->hp;
    const pl_layer *L = &m->layers[l];
    scratch *s = &ss->s;
    const int64_t D = hp->head_dim, H = L->n_head;
    pre_op norm = {0};
    const pre_op *in = NULL; /* the pending norm of x, for the next projection */

    for (size_t i = 0; i < L->n_steps; i++) {
        const pl_step *st = &L->steps[i];
        switch ((enum pl_step_kind)st->kind) {
        case PL_STEP_NORM:
            if (st->role == PL_STEP_NO_ROLE) { /* no pre-norm (OLMo 2): the projections read x */
                memcpy(s->xn, s->x, sizeof(float) * (size_t)(T * hp->n_embd));
                in = NULL;
                break;
            }
            norm = (pre_op){s->x, NULL, L->t[st->role].data, hp->rms_eps, 0, st->arg};
            in = &norm;
            break;
        case PL_STEP_QKV:
            if (L->wq.type == L->wk.type && L->wq.type == L->wv.type) {
                const pl_tensor *w[3] = {&L->wq, &L->wk, &L->wv};
                float *const y[3] = {s->q, s->k, s->v};
                matmul_n(ss, w, y, 3, s->xn, T, in);
            } else {
                matmul(ss, &L->wq, s->q, s->xn, T, in);
                matmul(ss, &L->wk, s->k, s->xn, T, NULL);
                matmul(ss, &L->wv, s->v, s->xn, T, NULL);
            }
            in = NULL;
            break;
        case PL_STEP_QKV_BIAS:
        case PL_STEP_HEAD_NORM:
        case PL_STEP_QK_NORM:
        case PL_STEP_ROPE:
        case PL_STEP_KV_STORE: {
            size_t e = i;
            while (e < L->n_steps && pl_step_per_token(L->steps[e].kind)) e++;
            qkv_job qj = {.ss = ss, .L = L, .steps = st, .n = e - i, .l = l, .p0 = p0};
            pl_pool_run(ss->pool, qkv_worker, &qj, T, 2);
            i = e - 1;
            break;
        }
        case PL_STEP_ATTENTION: {
            if (keep0 >= T) return; /* nothing past the cache is wanted */
            const float *q = s->q + keep0 * H * D;
            const int32_t *q_pos = s->q_pos + keep0;
            if (keep0 > 0) {
                T -= keep0;
                memmove(s->x, s->x + keep0 * hp->n_embd, sizeof(float) * (size_t)(T * hp->n_embd));
                /* a parallel block's FFN reads the same normalised rows after attention */
                if (hp->arch->recipe.parallel)
                    memmove(s->xn, s->xn + keep0 * hp->n_embd,
                            sizeof(float) * (size_t)(T * hp->n_embd));
                keep0 = 0;
            }
            attention(ss, L, l, T, q, q_pos);
            break;
        }
        case PL_STEP_ATTN_OUT:
            matmul(ss, &L->t[st->role], s->tmp, s->att, T, NULL);
            if (L->bo.data) /* gpt-oss: the output projection's bias */
                for (int64_t t = 0; t < T; t++)
                    for (int64_t e = 0; e < hp->n_embd; e++)
                        s->tmp[t * hp->n_embd + e] += ((const float *)L->bo.data)[e];
            break;
        case PL_STEP_RESIDUAL:
            branch_out(ss, st->role < PL_L_COUNT ? L->t[st->role].data : NULL, T);
            break;
        case PL_STEP_FFN_GATED: {
            if (L->w_gate.type == L->w_up.type) {
                const pl_tensor *w[2] = {&L->w_gate, &L->w_up};
                float *const y[2] = {s->gate, s->up};
                matmul_n(ss, w, y, 2, s->xn, T, in);
            } else {
                matmul(ss, &L->w_gate, s->gate, s->xn, T, in);
                matmul(ss, &L->w_up, s->up, s->xn, T, NULL);
            }
            in = NULL;
            const pre_op gated = {s->gate, s->up, NULL, 0.0f, st->arg, 0};
            matmul(ss, &L->w_down, s->tmp, s->ffh, T, &gated);
            break;
        }
        case PL_STEP_FFN_MOE:
            ffn_moe(ss, L, T, in, st->arg);
            in = NULL;
            break;
        case PL_STEP_COUNT:
            break;
        }
    }
}

/* Each used RoPE's cos and sin (rope_angle.h) at positions p0 + t, t in [t0, t1): each pair's
 * angle is computed here once, not once per layer and per q and k. */
typedef struct rope_job {
    pl_session *ss;
    int64_t p0;
} rope_job;

static void rope_worker(void *ctx, int64_t t0, int64_t t1, int thread)
{
    (void)thread;
    const rope_job *j = ctx;
    const pl_session *ss = j->ss;
    const int64_t D = ss->m->hp.head_dim;
    for (int i = 0; i < 2; i++)
        if (ss->rope_used[i])
            pl_rope_fill(&ss->rope[i], D, (int32_t)(j->p0 + t0), t1 - t0,
                         ss->s.rope_cs + (i * ss->chunk + t0) * D, D);
}

/* Evaluates tokens[0..T) at positions [p0, ...); writes logits of tokens [out0, T) to
 * logits (rows of V) when logits is non-NULL. */
static void step_body(pl_session *ss, const int32_t *tokens, int64_t T, int64_t out0,
                      float *logits);

static void step(pl_session *ss, const int32_t *tokens, int64_t T, int64_t out0, float *logits)
{
    const uint64_t t0 = pl_clock_ns();
    step_body(ss, tokens, T, out0, logits);
    ss->eval_ns += pl_clock_ns() - t0;
}

static void step_body(pl_session *ss, const int32_t *tokens, int64_t T, int64_t out0, float *logits)
{
    const pl_model *m = ss->m;
    const struct pl_kernels *k = &ss->kt.k;
    scratch *s = &ss->s;
    int64_t E = m->hp.n_embd, p0 = ss->kv.n_past;

    for (int64_t t = 0; t < T; t++) {
        const uint8_t *row =
            (const uint8_t *)m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes;
        k->dequantize_row[m->tok_embd.type](s->x + t * E, row, E);
        if (m->hp.emb_scale != 0.0f) /* Gemma: rows times sqrt(n_embd), in float as the peers */
            for (int64_t i = 0; i < E; i++) s->x[t * E + i] *= m->hp.emb_scale;
        s->q_pos[t] = (int32_t)(p0 + t);
    }
    if (ss->rope_used[0] || ss->rope_used[1]) {
        rope_job rj = {.ss = ss, .p0 = p0};
        pl_pool_run(ss->pool, rope_worker, &rj, T, 8);
    }
    pl_kvcache_place(&ss->kv, p0, T);
    ss->kv.n_past = p0 + T;                              /* attention scans the new slots too */
    const int64_t keep0 = logits && out0 < T ? out0 : T; /* the rows the output needs */
    for (int64_t l = 0; l < m->hp.n_layer; l++)
        layer_forward(ss, l, T, p0, l == m->hp.n_layer - 1 ? keep0 : 0);

    if (!logits || out0 >= T) return;
    int64_t n_out = T - out0; /* x's rows [0, n_out) since the last layer */
    const pre_op out_norm = {s->x,          NULL, m->out_norm.data,
                             m->hp.rms_eps, 0,    m->hp.arch->recipe.norm};
    matmul(ss, &m->output, logits, s->xn, n_out, &out_norm);
    if (m->hp.final_softcap != 0.0f)
        k->softcap(logits, logits, n_out * m->hp.n_vocab, m->hp.final_softcap);
    if (m->hp.logit_div != 0.0f) /* Granite: logits / logits_scaling, as transformers */
        for (int64_t i = 0; i < n_out * m->hp.n_vocab; i++) logits[i] /= m->hp.logit_div;
    if (m->hp.logit_scale != 0.0f) /* cohere2: in float, as transformers and llama.cpp scale */
        for (int64_t i = 0; i < n_out * m->hp.n_vocab; i++) logits[i] *= m->hp.logit_scale;
}

/* The hook's error as the session's: its status (an unknown value or PL_OK with an error
 * meant is PL_ERR_INVALID_ARG) and its message, named. */
static pl_status hook_fail(const pl_session *ss, const char *what, pl_status st, const pl_error *he,
                           pl_error *err)
{
    const char *known = pl_status_str(st);
    pl_status code = st < 0 && strcmp(known, "PL_ERR_UNKNOWN") != 0 ? st : PL_ERR_INVALID_ARG;
    char msg[sizeof he->msg];
    snprintf(msg, sizeof msg, "%.*s", (int)sizeof he->msg - 1, he->msg); /* NUL or not */
    if (!msg[0]) snprintf(msg, sizeof msg, "returned %d (%s) with no message", (int)st, known);
    return pl_fail(err, code, "external forward '%s': %s: %s", ss->hook_name, what, msg);
}

/* Asks the hook to keep the first n positions. */
static pl_status hook_truncate(pl_session *ss, int64_t n, pl_error *err)
{
    pl_error he;
    memset(&he, 0, sizeof he);
    pl_status st = ss->hook.truncate(ss->hook.user, n, &he);
    if (st == PL_OK) return PL_OK;
    char what[64];
    snprintf(what, sizeof what, "truncate to %lld", (long long)n);
    return hook_fail(ss, what, st, &he, err);
}

/* pl_session_eval through the hook, in the steps the session's own forward would take; on an
 * error the hook is rolled back to what it held and the session is unchanged. */
static pl_status eval_hook(pl_session *ss, const int32_t *tokens, int64_t n, float *logits, int all,
                           pl_error *err)
{
    const int64_t V = ss->m->hp.n_vocab, p0 = ss->kv.n_past;
    if (ss->hook_stale) {
        pl_status s = hook_truncate(ss, p0, err);
        if (s) return s;
        ss->hook_stale = 0;
    }
    int64_t step_max =
        ss->chunk < pl_kvcache_max_step(&ss->kv) ? ss->chunk : pl_kvcache_max_step(&ss->kv);
    for (int64_t i = 0; i < n; i += step_max) {
        int64_t T = n - i < step_max ? n - i : step_max;
        float *dst = NULL;
        int64_t out0 = T;
        if (logits && all) {
            dst = logits + i * V;
            out0 = 0;
        } else if (logits && i + T == n) {
            dst = logits;
            out0 = T - 1;
        }
        pl_error he;
        memset(&he, 0, sizeof he);
        const uint64_t t0 = pl_clock_ns();
        pl_status st = ss->hook.eval(ss->hook.user, tokens + i, T, p0 + i, dst, out0, &he);
        ss->eval_ns += pl_clock_ns() - t0;
        if (st != PL_OK) {
            char what[96];
            snprintf(what, sizeof what, "eval of %lld tokens at position %lld", (long long)T,
                     (long long)(p0 + i));
            pl_status s = hook_fail(ss, what, st, &he, err);
            /* What it evaluated of this call goes; if it cannot say so, it is told again. */
            if (hook_truncate(ss, p0, NULL) != PL_OK) ss->hook_stale = 1;
            return s;
        }
    }
    /* The window's bookkeeping, as the steps above placed the tokens. */
    for (int64_t i = 0; i < n; i += step_max)
        pl_kvcache_place(&ss->kv, p0 + i, n - i < step_max ? n - i : step_max);
    ss->kv.n_past = p0 + n;
    pl_history_append(&ss->hist, tokens, n);
    return pl_ok(err);
}

pl_status pl_session_eval(pl_session *ss, const int32_t *tokens, int64_t n, float *logits,
                          uint32_t flags, pl_error *err)
{
    if (!ss || (!tokens && n > 0))
        return pl_fail(err, PL_ERR_INVALID_ARG, "session or tokens is NULL");
    if (flags & ~PL_EVAL_ALL_LOGITS)
        return pl_fail(err, PL_ERR_INVALID_ARG, "unknown eval flags 0x%x", flags);
    if (n <= 0)
        return pl_fail(err, PL_ERR_INVALID_ARG, "token count %lld must be >= 1", (long long)n);
    int64_t V = ss->m->hp.n_vocab;
    for (int64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return pl_fail(err, PL_ERR_INVALID_ARG,
                           "token %lld = %d is outside the vocabulary [0, %lld)", (long long)i,
                           tokens[i], (long long)V);
    pl_status s = pl_kvcache_check_room(&ss->kv, n, err);
    if (!s) s = pl_history_reserve(&ss->hist, tokens, n, err);
    if (s) return s;
    int all = (flags & PL_EVAL_ALL_LOGITS) != 0;
    if (ss->has_hook) return eval_hook(ss, tokens, n, logits, all, err);
    /* Nothing below can fail: the session changes only once everything is known to fit. */
    int64_t step_max =
        ss->chunk < pl_kvcache_max_step(&ss->kv) ? ss->chunk : pl_kvcache_max_step(&ss->kv);
    for (int64_t i = 0; i < n; i += step_max) {
        int64_t T = n - i < step_max ? n - i : step_max;
        int last = i + T == n;
        float *dst = NULL;
        int64_t out0 = T;
        if (logits && all) {
            dst = logits + i * V;
            out0 = 0;
        } else if (logits && last) {
            dst = logits;
            out0 = T - 1;
        }
        step(ss, tokens + i, T, out0, dst);
    }
    pl_history_append(&ss->hist, tokens, n);
    return pl_ok(err);
}

/* ---- session lifetime ---- */

pl_session_params pl_session_default_params(const pl_model *m)
{
    pl_session_params p = {0};
    int64_t train = m && !m->vocab_only ? m->hp.n_ctx_train : DEFAULT_CONTEXT;
    p.context_window = train < DEFAULT_CONTEXT ? train : DEFAULT_CONTEXT;
    p.prefill_chunk = DEFAULT_CHUNK;
    p.kv_type = PL_TYPE_F16;
    return p;
}

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

enum { N_SCRATCH = 22 };

/* Bytes of one activation row of K elements quantized to any dot type (Q8_K rounds K up to
 * 256 elements, Q8_0 to 32; Q8_K is the larger per element, 292 bytes / 256). */
static size_t quant_row_max(uint64_t K)
{
    size_t q8k, q80;
    pl_type_row_bytes(PL_TYPE_Q8_K, (int64_t)((K + 255) / 256 * 256), &q8k, NULL);
    pl_type_row_bytes(PL_TYPE_Q8_0, (int64_t)((K + 31) / 32 * 32), &q80, NULL);
    return q8k > q80 ? q8k : q80;
}

/* Sizes of the scratch buffers, in the order of the slots in alloc_scratch; returns the
 * arena's total (each buffer 64-byte aligned). xq_row: bytes of one quantized activation row
 * at the largest K (Q8_K blocks are the largest per element: 292 bytes / 256). */
static size_t scratch_layout(const pl_hparams *hp, int64_t chunk, int threads, int64_t cap,
                             size_t sizes[N_SCRATCH], size_t *xq_row, size_t *id_out)
{
    uint64_t T = (uint64_t)chunk, E = (uint64_t)hp->n_embd, D = (uint64_t)hp->head_dim;
    uint64_t HD = (uint64_t)hp->max_head * D, KVD = (uint64_t)hp->max_head_kv * D;
    uint64_t F = (uint64_t)hp->max_ff;
    uint64_t Kmax = E > F ? E : F;
    if (HD > Kmax) Kmax = HD;
    *xq_row = quant_row_max(Kmax);
    uint64_t tmp_w = E > D ? E : D;
    /* mixture of experts: the expert FFN's rows are (token, slot) pairs, U per token */
    const uint64_t X = (uint64_t)hp->n_expert, U = (uint64_t)hp->n_expert_used;
    const uint64_t TU = X ? T * U : T,
                   FU = X && U * (uint64_t)hp->n_ff_exp > F ? U * (uint64_t)hp->n_ff_exp : F;
    size_t id_bytes = 0, xq_bytes = T * *xq_row, xp_bytes = T * PL_REPACK_X_ROW_MAX(Kmax);
    if (X) {
        /* the expert matmuls' K and R: n_embd and n_ff_exp, one each way */
        const int64_t R = hp->n_embd > hp->n_ff_exp ? hp->n_embd : hp->n_ff_exp;
        const size_t q = quant_row_max((uint64_t)R), p = PL_REPACK_X_ROW_MAX((uint64_t)R);
        size_t xrow = (size_t)R * 4; /* F32 experts read f32 rows */
        if (q > xrow) xrow = q;
        if (p > xrow) xrow = p;
        /* the down projection's T U input rows */
        if (TU * q > xq_bytes) xq_bytes = TU * q;
        if (TU * p > xp_bytes) xp_bytes = TU * p;
        /* gate/up: T tokens with U slots each; down: the T U (token, slot) rows with one */
        const size_t gu = pl_matmul_id_scratch((int64_t)T, (int64_t)U, (int64_t)X, xrow, 0, R),
                     dn = pl_matmul_id_scratch((int64_t)TU, 1, (int64_t)X, xrow, 0, R);
        id_bytes = align64(gu > dn ? gu : dn);
    }
    size_t s[N_SCRATCH] = {
        T * E * 4,
        T * E * 4,
        T * HD * 4,
        T * KVD * 4,
        T * KVD * 4,
        T * HD * 4,
        T * tmp_w * 4,
        T * FU * 4,
        T * FU * 4,
        T * FU * 4,
        xq_bytes,
        (size_t)threads * PL_ATTN_SCRATCH(cap, D) * 4,
        T * 4,
        2 * T * D * 8,
        xp_bytes,
        T * X * 4,
        T * X * 4,
        T * U * 4,
        T * (U + 1) * 4,
        TU * E * 4 * (X != 0),
        T * E * 4 * (hp->n_ff_shexp != 0 && X != 0),
        (size_t)threads * id_bytes,
    };
    if (id_out) *id_out = id_bytes;
    size_t total = 0;
    for (int i = 0; i < N_SCRATCH; i++) total += align64(sizes[i] = s[i]);
    return total;
}

static pl_status alloc_scratch(pl_session *ss, pl_error *err)
{
    size_t sizes[N_SCRATCH];
    size_t total = scratch_layout(&ss->m->hp, ss->chunk, pl_pool_size(ss->pool), ss->kv.cap, sizes,
                                  &ss->s.xq_row, &ss->s.id_bytes);
    ss->arena = pl_malloc(total);
    if (!ss->arena)
        return pl_fail(err, PL_ERR_NOMEM, "no memory for a %zu-byte scratch arena (chunk %lld)",
                       total, (long long)ss->chunk);
#ifdef MADV_POPULATE_WRITE
    /* Fault the arena in now, in one call, rather than page by page inside the first prompt's
     * evaluation (perf/NOTES.md: a VM's page faults cost that prompt ~10%). A hint only: older
     * kernels refuse it, and the pages then come on first use as before. */
    {
        const uintptr_t a = (uintptr_t)ss->arena & ~(uintptr_t)4095;
        (void)madvise((void *)a, (uintptr_t)ss->arena - a + total, MADV_POPULATE_WRITE);
    }
#endif
    uint8_t *p = ss->arena;
    void **slots[N_SCRATCH] = {
        (void **)&ss->s.x,          (void **)&ss->s.xn,      (void **)&ss->s.q,
        (void **)&ss->s.k,          (void **)&ss->s.v,       (void **)&ss->s.att,
        (void **)&ss->s.tmp,        (void **)&ss->s.gate,    (void **)&ss->s.up,
        (void **)&ss->s.ffh,        (void **)&ss->s.xq,      (void **)&ss->s.att_scratch,
        (void **)&ss->s.q_pos,      (void **)&ss->s.rope_cs, (void **)&ss->s.xp,
        (void **)&ss->s.router,     (void **)&ss->s.probs,   (void **)&ss->s.ids,
        (void **)&ss->s.wts,        (void **)&ss->s.yx,      (void **)&ss->s.ysh,
        (void **)&ss->s.id_scratch,
    };
    for (int i = 0; i < N_SCRATCH; i++) {
        *slots[i] = p;
        p += align64(sizes[i]);
    }
    ss->s.bytes = total;
    return PL_OK;
}

/* The checks of pl_session_new that need no allocation. */
static pl_status check_params(const pl_model *m, const pl_session_params *p, pl_error *err)
{
    if (!m) return pl_fail(err, PL_ERR_INVALID_ARG, "model is NULL");
    if (m->vocab_only)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "model was loaded with PL_MODEL_VOCAB_ONLY: it has no weights to run");
    if (p->prefill_chunk < 1 || p->prefill_chunk > MAX_CHUNK)
        return pl_fail(err, PL_ERR_CONFIG, "prefill_chunk=%lld must be in [1, %d]",
                       (long long)p->prefill_chunk, MAX_CHUNK);
    if (p->n_threads < 0)
        return pl_fail(err, PL_ERR_CONFIG, "n_threads=%d must be >= 0 (0: default)", p->n_threads);
    if (p->forward && (!p->forward->eval || !p->forward->truncate))
        return pl_fail(err, PL_ERR_CONFIG, "forward hook: eval and truncate are both required");
    return PL_OK;
}

pl_status pl_session_estimate(const pl_model *m, const pl_session_params *params,
                              pl_session_info *out, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    memset(out, 0, sizeof *out);
    pl_session_params p = params ? *params : pl_session_default_params(m);
    pl_status s = check_params(m, &p, err);
    if (s) return s;
    int64_t cap;
    uint64_t kv_bytes;
    if ((s = pl_kvcache_plan(m, p.context_window, p.sliding_window, p.attention_sinks, p.kv_type,
                             &cap, &kv_bytes, err)))
        return s;
    size_t sizes[N_SCRATCH], xq_row;
    out->n_threads = p.n_threads > 0 ? p.n_threads : 1;
    out->kv_capacity = cap;
    out->kv_bytes = kv_bytes;
    if (p.forward) { /* the hook's cache and scratch are not this session's */
        out->n_threads = 1;
        out->kv_bytes = 0;
        snprintf(out->kernels, sizeof out->kernels, "%s",
                 p.forward->name ? p.forward->name : "external");
        return pl_ok(err);
    }
    out->scratch_bytes =
        scratch_layout(&m->hp, p.prefill_chunk, out->n_threads, cap, sizes, &xq_row, NULL);
    snprintf(out->kernels, sizeof out->kernels, "%s", p.kernels ? p.kernels : m->kt.k.name);
    return pl_ok(err);
}

/* The model's RoPE for this session: with longrope factors, a context (the context window, or a
 * sliding session's window: the tokens the cache holds, llama.cpp's n_ctx) beyond the original
 * context takes the long divisors wherever the short ones are used, as llama.cpp
 * chooses them (by the context window, once; transformers by each sequence's length, so the two
 * agree while both are on the same side of the original context). */
static void session_rope(pl_session *ss, int64_t context_window)
{
    const pl_hparams *hp = &ss->m->hp;
    ss->rope[0] = hp->rope;
    ss->rope[1] = hp->rope_local;
    for (int i = 0; i < 2; i++)
        if (hp->rope_long && context_window > hp->rope.n_ctx_orig &&
            ss->rope[i].freq_factors == hp->rope.freq_factors)
            ss->rope[i].freq_factors = hp->rope_long;
    for (int64_t l = 0; l < hp->n_layer; l++) {
        const pl_layer *L = &ss->m->layers[l];
        for (size_t i = 0; i < L->n_steps; i++)
            if (L->steps[i].kind == PL_STEP_ROPE) ss->rope_used[L->rope_local] = 1;
    }
}

pl_status pl_session_new(pl_session **out, const pl_model *m, const pl_session_params *params,
                         pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    pl_session_params p = params ? *params : pl_session_default_params(m);
    pl_status st = check_params(m, &p, err);
    if (st) return st;
    pl_session *ss = pl_calloc(1, sizeof *ss);
    if (!ss) return pl_fail(err, PL_ERR_NOMEM, "no memory for the session");
    ss->m = m;
    ss->chunk = p.prefill_chunk;
    pl_history_init(&ss->hist, pl_model_tokenizer(m));
    if (p.forward) {
        ss->has_hook = 1;
        ss->hook = *p.forward;
        snprintf(ss->hook_name, sizeof ss->hook_name, "%s",
                 p.forward->name ? p.forward->name : "external");
        p.n_threads = 1; /* the pool is only the info's: no forward step runs here */
    }
    pl_status s = PL_OK;
    if (p.kernels)
        s = pl_kernels_init(&ss->kt, p.kernels, err);
    else
        ss->kt = m->kt; /* the model's set, chosen once at load */
    if (!s)
        s = pl_kvcache_init(&ss->kv, m, p.context_window, p.sliding_window, p.attention_sinks,
                            p.kv_type, !ss->has_hook, err);
    if (!s) ss->packed = m->packed && strcmp(m->repack_set, ss->kt.k.name) == 0;
    if (!s) session_rope(ss, p.context_window ? p.context_window : p.sliding_window);
    if (!s) s = pl_pool_new(&ss->pool, p.n_threads, err);
    if (!s && !ss->has_hook) s = alloc_scratch(ss, err);
    if (s) {
        pl_session_free(ss);
        return s;
    }
    *out = ss;
    return pl_ok(err);
}

void pl_session_free(pl_session *ss)
{
    if (!ss) return;
    pl_pool_free(ss->pool);
    pl_kvcache_free(&ss->kv);
    pl_history_free(&ss->hist);
    pl_free(ss->arena);
    pl_free(ss);
}

int64_t pl_session_n_past(const pl_session *ss)
{
    return ss ? ss->kv.n_past : 0;
}

pl_status pl_session_truncate(pl_session *ss, int64_t n, pl_error *err)
{
    if (!ss) return pl_fail(err, PL_ERR_INVALID_ARG, "session is NULL");
    pl_status s = pl_kvcache_truncate_check(&ss->kv, n, err);
    if (s) return s;
    if (ss->has_hook && (n < ss->kv.n_past || ss->hook_stale)) {
        if ((s = hook_truncate(ss, n, err))) return s;
        ss->hook_stale = 0;
    }
    pl_kvcache_truncate(&ss->kv, n, NULL);
    pl_history_truncate(&ss->hist, n);
    return pl_ok(err);
}

void pl_session_reset(pl_session *ss)
{
    if (!ss) return;
    if (ss->has_hook && (ss->kv.n_past > 0 || ss->hook_stale))
        ss->hook_stale = hook_truncate(ss, 0, NULL) != PL_OK;
    pl_kvcache_truncate(&ss->kv, 0, NULL);
    pl_history_truncate(&ss->hist, 0);
}

void pl_chat_reset(pl_session *ss)
{
    pl_session_reset(ss);
}

pl_status pl_session_history(const pl_session *ss, const int32_t **ids, int64_t *n,
                             const char **text, size_t *len, pl_error *err)
{
    if (!ss) return pl_fail(err, PL_ERR_INVALID_ARG, "session is NULL");
    if (ids) *ids = ss->hist.ids;
    if (n) *n = ss->hist.n;
    if (text) *text = ss->hist.text ? ss->hist.text : "";
    if (len) *len = ss->hist.len;
    return pl_ok(err);
}

size_t pl_session_text_end(const pl_session *ss, int64_t i)
{
    return ss && i >= 0 && i < ss->hist.n ? ss->hist.end[i] : 0;
}

const pl_model *pl_session_model(const pl_session *ss)
{
    return ss->m;
}

const pl_history *pl_session_hist(const pl_session *ss)
{
    return &ss->hist;
}

pl_status pl_session_check_room(const pl_session *ss, int64_t keep, int64_t n, pl_error *err)
{
    pl_kvcache probe = ss->kv; /* only n_past is read */
    probe.n_past = keep;
    return pl_kvcache_check_room(&probe, n, err);
}

pl_status pl_session_check_truncate(const pl_session *ss, int64_t keep, pl_error *err)
{
    return pl_kvcache_truncate_check(&ss->kv, keep, err);
}

pl_status pl_session_get_info(const pl_session *ss, pl_session_info *out, pl_error *err)
{
    if (!ss || !out) return pl_fail(err, PL_ERR_INVALID_ARG, "session or out is NULL");
    memset(out, 0, sizeof *out);
    out->kv_bytes = ss->kv.bytes;
    out->scratch_bytes = ss->s.bytes;
    out->n_threads = pl_pool_size(ss->pool);
    snprintf(out->kernels, sizeof out->kernels, "%s", ss->has_hook ? ss->hook_name : ss->kt.k.name);
    out->kv_capacity = ss->kv.cap;
    out->repacked = ss->packed;
    out->eval_ns = ss->eval_ns;
    out->attention_ns = ss->attention_ns;
    const pl_pool_stats ps = pl_pool_get_stats(ss->pool);
    out->pool_work_ns = ps.work_ns;
    out->pool_wait_ns = ps.wait_ns;
    out->pool_runs = ps.runs + ps.solo;
    out->pool_benched_runs = ps.benched;
    return pl_ok(err);
}

pl_status pl_session_threads_report(const pl_session *ss, int json, char *buf, size_t size,
                                    size_t *len, pl_error *err)
{
    if (!ss) return pl_fail(err, PL_ERR_INVALID_ARG, "session is NULL");
    return pl_pool_format(ss->pool, json ? PL_POOL_FORMAT_JSON : PL_POOL_FORMAT_TEXT, buf, size,
                          len, err);
}
