/* model.h — the model's bound shape and weights, shared by model.c and forward.c.
 * Not public: programs see pl_model as an opaque handle. */
#ifndef PLUMB_MODEL_H
#define PLUMB_MODEL_H

#include "core/core.h"
#include <stddef.h>

#include "arch.h"
#include "kernels.h"
#include "registry.h"

struct pl_tokenizer;
struct pl_jinja_template;

/* A weight in the mapping. ne[0] is the row length (input features). */
typedef struct pl_tensor {
    const void *data; /* NULL when absent (optional tensors) */
    uint32_t type;
    int64_t ne[4];
    size_t row_bytes;
    const void *packed;      /* the repacked copy (repack.c), or NULL */
    const pl_repack *repack; /* the layout and matmul of packed */
    /* stacked experts (ne[2] matrices): bytes from one expert's matrix to the next, in the
     * mapping and in the repacked copy */
    size_t expert_bytes, packed_expert_bytes;
} pl_tensor;

/* E = n_embd, F = n_ff, D = head_dim, H = n_head, Hkv = n_head_kv, V = n_vocab.
 * The named tensors and t[] are the same storage: t[] is indexed by enum pl_layer_role
 * (arch.h), the order below, so the loader binds by the architecture table. */
typedef struct pl_layer {
    int64_t n_head, n_head_kv, n_ff;
    int64_t window; /* 0: attends to the whole cache; else a local layer's own sliding window */
    int rope_local; /* 1: the local layers' RoPE (hp.rope_local), 0: hp.rope */
    pl_step steps[PL_MAX_STEPS]; /* what the layer computes, in order (arch.h), from its tensors */
    size_t n_steps;
    union {
        struct {
            pl_tensor attn_norm;      /* (E) f32 */
            pl_tensor wq, bq;         /* (E) -> (H*D); bias (H*D) f32 */
            pl_tensor wk, bk;         /* (E) -> (Hkv*D); bias (Hkv*D) f32 */
            pl_tensor wv, bv;         /* (E) -> (Hkv*D); bias (Hkv*D) f32 */
            pl_tensor q_norm, k_norm; /* per-head RMSNorm weights (D) f32 */
            pl_tensor wo;             /* (H*D) -> (E) */
            pl_tensor attn_post_norm; /* (E) f32: the attention branch's output norm */
            pl_tensor ffn_norm;       /* (E) f32 */
            pl_tensor w_gate, w_up;   /* (E) -> (F) */
            pl_tensor w_down;         /* (F) -> (E) */
            pl_tensor ffn_post_norm;  /* (E) f32: the FFN branch's output norm */
            /* mixture-of-experts layers (hp.n_expert > 0); X = n_expert, FX, FS as hp */
            pl_tensor gate_inp;             /* (E) -> (X) f32 router */
            pl_tensor gate_exps, up_exps;   /* X x ((E) -> (FX)), ne[2] = X */
            pl_tensor down_exps;            /* X x ((FX) -> (E)) */
            pl_tensor gate_inp_shexp;       /* (E) f32 */
            pl_tensor gate_shexp, up_shexp; /* (E) -> (FS) */
            pl_tensor down_shexp;           /* (FS) -> (E) */
            /* gpt-oss (issue 49) */
            pl_tensor bo;                     /* (E) f32 attn_output's bias */
            pl_tensor sinks;                  /* (H) f32 the heads' sink logits */
            pl_tensor gate_inp_b;             /* (X) f32 the router's bias */
            pl_tensor gate_exps_b, up_exps_b; /* (FX, X) f32 per expert */
            pl_tensor down_exps_b;            /* (E, X) f32 per expert */
        };
        pl_tensor t[PL_L_COUNT];
    };
} pl_layer;
static_assert(offsetof(pl_layer, ffn_post_norm) - offsetof(pl_layer, attn_norm) ==
                  (PL_L_FFN_POST_NORM - PL_L_ATTN_NORM) * sizeof(pl_tensor),
              "pl_layer's named tensors follow enum pl_layer_role");
static_assert(offsetof(pl_layer, down_exps_b) - offsetof(pl_layer, attn_norm) ==
                      (PL_L_DOWN_EXPS_B - PL_L_ATTN_NORM) * sizeof(pl_tensor) &&
                  offsetof(pl_layer, bo) - offsetof(pl_layer, attn_norm) ==
                      (PL_L_BO - PL_L_ATTN_NORM) * sizeof(pl_tensor) &&
                  PL_L_DOWN_EXPS_B + 1 == PL_L_COUNT,
              "pl_layer's named tensors follow enum pl_layer_role");
static_assert(offsetof(pl_layer, wo) - offsetof(pl_layer, attn_norm) == PL_L_WO * sizeof(pl_tensor),
              "pl_layer's named tensors follow enum pl_layer_role");

typedef struct pl_hparams {
    const pl_arch *arch; /* the table row: name, tensors, recipe */
    int64_t n_vocab, n_ctx_train, n_embd, n_layer, head_dim, n_rot;
    int64_t max_head, max_head_kv, max_ff; /* maxima over layers, for scratch sizing */
    /* mixture of experts (0: a dense model): experts per layer, used per token, an expert's
     * FFN width, the shared expert's (0: none) */
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    float rms_eps, rope_base;
    pl_rope_args rope;       /* the global layers' RoPE: base, scaling (linear, YaRN), llama3,
                                longrope's short factors */
    pl_rope_args rope_local; /* the local layers' (the recipe's own base, unscaled; or rope) */
    /* longrope (Phi-3): the divisors that replace rope.freq_factors in a session whose context
     * window exceeds rope.n_ctx_orig, as llama.cpp chooses them; NULL: none */
    const float *rope_long;
    float attn_scale;    /* scores = attn_scale * q . k */
    float attn_softcap;  /* 0, or scores capped: c tanh(s / c) */
    float final_softcap; /* 0, or logits capped */
    float emb_scale;     /* 0, or the embedding rows multiplied by it (sqrt(n_embd)) */
    /* issue 49 (archA): Granite's residual multiplier and logit divisor */
    float residual_scale; /* each branch's output times it before the add (1: none) */
    float logit_div;      /* 0, or the logits divided by it */
    float logit_scale;    /* 0, or the logits multiplied by it (cohere2, issue 49) */
} pl_hparams;

struct pl_model {
    pl_gguf *gguf;
    struct pl_tokenizer *tok; /* NULL when the file has no tokenizer */
    int vocab_only;
    /* tokenizer.chat_template compiled at load (chat_template.c): chat_status is PL_OK with
     * chat_tmpl set, PL_ERR_NOT_FOUND when the file has none, else the compile error, whose
     * message (line and column) is chat_msg. */
    struct pl_jinja_template *chat_tmpl;
    pl_status chat_status;
    char chat_msg[256];
    pl_hparams hp;
    union { /* t[] indexed by enum pl_global_role */
        struct {
            pl_tensor tok_embd;              /* (E) x V rows */
            pl_tensor out_norm;              /* (E) f32 */
            pl_tensor output;                /* (E) -> (V); == tok_embd when tied */
            pl_tensor rope_freqs;            /* (n_rot/2) f32 RoPE frequency divisors, or absent */
            pl_tensor rope_long, rope_short; /* (n_rot/2) f32 longrope divisors, or absent */
        };
        pl_tensor g[PL_G_COUNT];
    };
    int tied;
    pl_layer *layers; /* n_layer */
    uint64_t weight_bytes, n_params;
    uint64_t expert_bytes, expert_params; /* of the stacked experts (in the above) */
    /* the kernel set chosen once, at load (pl_model_params.kernels, else PLUMB_KERNELS, else the
     * best this CPU runs): sessions and samplers use it unless their params name another */
    pl_kernel_table kt;
    /* repack.c: the weights copied into one kernel set's layouts */
    char repack_set[16]; /* "" when none */
    void *packed;        /* one arena holding every copy */
    uint64_t packed_bytes;
    int n_repacked;
    double repack_ms;
};

/* Builds the repacked copies for the model's kernel set (m->kt). On failure the model is
 * unchanged (still runs from the mapping). */
pl_status pl_model_repack(pl_model *m, pl_error *err);

/* Compiles the file's tokenizer.chat_template into m (chat_template.c). Only PL_ERR_NOMEM fails
 * the load; a template that does not compile is recorded in m->chat_status / chat_msg. */
pl_status pl_model_compile_chat_template(pl_model *m, pl_error *err);
/* Frees what pl_model_compile_chat_template built. */
void pl_model_free_chat_template(pl_model *m);

/* The tokenizer bound at load, or NULL. */
const struct pl_tokenizer *pl_model_tokenizer(const pl_model *m);

#endif
