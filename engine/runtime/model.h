/* model.h — the model's bound shape and weights, shared by model.c and forward.c.
 * Not public: programs see pl_model as an opaque handle. */
#ifndef PLUMB_MODEL_H
#define PLUMB_MODEL_H

#include "core/core.h"
#include "kernels.h"

struct pl_tokenizer;

enum pl_arch { PL_ARCH_LLAMA, PL_ARCH_QWEN2, PL_ARCH_QWEN3 };

/* A weight in the mapping. ne[0] is the row length (input features). */
typedef struct pl_tensor {
    const void *data; /* NULL when absent (optional tensors) */
    uint32_t type;
    int64_t ne[4];
    size_t row_bytes;
    const void *packed;      /* the repacked copy (repack.c), or NULL */
    const pl_repack *repack; /* the layout and matmul of packed */
} pl_tensor;

/* E = n_embd, F = n_ff, D = head_dim, H = n_head, Hkv = n_head_kv, V = n_vocab */
typedef struct pl_layer {
    int64_t n_head, n_head_kv, n_ff;
    pl_tensor attn_norm;      /* (E) f32 */
    pl_tensor wq, wk, wv;     /* (E) -> (H*D), (Hkv*D), (Hkv*D) */
    pl_tensor bq, bk, bv;     /* qwen2: (H*D), (Hkv*D), (Hkv*D) f32 */
    pl_tensor q_norm, k_norm; /* qwen3: (D) f32 */
    pl_tensor wo;             /* (H*D) -> (E) */
    pl_tensor ffn_norm;       /* (E) f32 */
    pl_tensor w_gate, w_up;   /* (E) -> (F) */
    pl_tensor w_down;         /* (F) -> (E) */
} pl_layer;

typedef struct pl_hparams {
    enum pl_arch arch;
    int64_t n_vocab, n_ctx_train, n_embd, n_layer, head_dim, n_rot;
    int64_t max_head, max_head_kv, max_ff; /* maxima over layers, for scratch sizing */
    float rms_eps, rope_base;
    enum pl_rope_style rope_style;
} pl_hparams;

struct pl_model {
    pl_gguf *gguf;
    struct pl_tokenizer *tok; /* NULL when the file has no tokenizer */
    int vocab_only;
    pl_hparams hp;
    pl_tensor tok_embd; /* (E) x V rows */
    pl_tensor out_norm; /* (E) f32 */
    pl_tensor output;   /* (E) -> (V); == tok_embd when tied */
    int tied;
    pl_layer *layers; /* n_layer */
    uint64_t weight_bytes, n_params;
    /* repack.c: the weights copied into one kernel set's layouts */
    char repack_set[16]; /* "" when none */
    void *packed;        /* one arena holding every copy */
    uint64_t packed_bytes;
    int n_repacked;
    double repack_ms;
};

/* Builds the repacked copies for the kernel set named (NULL: PLUMB_KERNELS, else the best).
 * On failure the model is unchanged (still runs from the mapping). */
pl_status pl_model_repack(pl_model *m, const char *kernels, pl_error *err);

/* The tokenizer bound at load, or NULL. */
const struct pl_tokenizer *pl_model_tokenizer(const pl_model *m);

#endif
