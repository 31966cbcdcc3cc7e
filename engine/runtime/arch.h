/* arch.h — the architectures plumb runs, as data: per architecture its key prefix, its tensors
 * (GGUF and Hugging Face names, shapes, required or not), hyperparameter keys with their defaults
 * and config.json fields, the block recipe, size rules (quirks) naming their source, and the step
 * list a layer compiles to; and the one list of metadata keys that change nothing. Read by the
 * loader, `convert`, the key writer (arch_write.c), the public tensor plan, the forward pass and
 * the tests' builders and reference transformer. No I/O: tables, lookups and the step compiler. */
#ifndef PLUMB_RUNTIME_ARCH_H
#define PLUMB_RUNTIME_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "plumb.h"

/* Dimension symbols of a tensor's shape, resolved per layer (Q = H*D, KV = Hkv*D). */
enum pl_dim {
    PL_DIM_1,    /* ne1 of a vector */
    PL_DIM_E,    /* n_embd */
    PL_DIM_F,    /* n_ff of the layer */
    PL_DIM_V,    /* n_vocab */
    PL_DIM_D,    /* head_dim */
    PL_DIM_Q,    /* n_head * head_dim */
    PL_DIM_KV,   /* n_head_kv * head_dim */
    PL_DIM_QKV,  /* (n_head + 2 n_head_kv) * head_dim: fused q, k, v */
    PL_DIM_F2,   /* 2 n_ff: fused gate and up */
    PL_DIM_ROT2, /* n_rot / 2: RoPE frequency factors */
    PL_DIM_FX,   /* an expert's FFN width (expert_feed_forward_length, else n_ff) */
    PL_DIM_FS,   /* the shared expert's FFN width */
    PL_DIM_X,    /* n_expert: the experts of a stacked tensor (ne2) */
    PL_DIM_H     /* n_head: one value per query head (gpt-oss's attention sinks) */
};

/* Per-layer tensor roles; the order is pl_layer's (model.h pins it with static_asserts). */
enum pl_layer_role {
    PL_L_ATTN_NORM,
    PL_L_WQ,
    PL_L_BQ,
    PL_L_WK,
    PL_L_BK,
    PL_L_WV,
    PL_L_BV,
    PL_L_Q_NORM,
    PL_L_K_NORM,
    PL_L_WO,
    PL_L_ATTN_POST_NORM,
    PL_L_FFN_NORM,
    PL_L_GATE,
    PL_L_UP,
    PL_L_DOWN,
    PL_L_FFN_POST_NORM,
    /* mixture-of-experts layers: the router, the stacked experts, the shared expert */
    PL_L_GATE_INP,       /* (E) -> (X) router logits, F32 */
    PL_L_GATE_EXPS,      /* X matrices (E) -> (FX) */
    PL_L_UP_EXPS,        /* X matrices (E) -> (FX) */
    PL_L_DOWN_EXPS,      /* X matrices (FX) -> (E) */
    PL_L_GATE_INP_SHEXP, /* (E) f32: the shared expert's scalar gate, sigmoid(w . x) */
    PL_L_GATE_SHEXP,     /* (E) -> (FS) */
    PL_L_UP_SHEXP,       /* (E) -> (FS) */
    PL_L_DOWN_SHEXP,     /* (FS) -> (E) */
    /* issue 49 (gpt-oss) */
    PL_L_BO,          /* (E) f32: attn_output's bias */
    PL_L_SINKS,       /* (H) f32: each head's learned sink logit (pl_attn_args.sinks) */
    PL_L_GATE_INP_B,  /* (X) f32: the router's bias, added to its logits before routing */
    PL_L_GATE_EXPS_B, /* (FX, X) f32: per expert, added to its gate rows */
    PL_L_UP_EXPS_B,   /* (FX, X) f32: per expert, added to its up rows */
    PL_L_DOWN_EXPS_B, /* (E, X) f32: per expert, added to its output before its weight */
    PL_L_COUNT
};

/* Whole-model tensor roles. */
enum pl_global_role {
    PL_G_TOK_EMBD,
    PL_G_OUT_NORM,
    PL_G_OUTPUT,
    PL_G_ROPE_FREQS, /* llama3-style RoPE frequency factors (n_rot/2 divisors) */
    PL_G_ROPE_LONG,  /* Phi-3's longrope divisors for a context beyond the original */
    PL_G_ROPE_SHORT, /* ... and within it */
    PL_G_COUNT
};

/* What a tensor is, for binding (vectors are F32) and for generators (scales). */
enum pl_tensor_kind {
    PL_TK_EMBD,       /* the token embedding (and an untied output projection) */
    PL_TK_MATRIX_IN,  /* reads the normalised residual stream (q, k, v, gate, up) */
    PL_TK_MATRIX_OUT, /* writes into the residual stream (attn_output, ffn_down) */
    PL_TK_NORM,       /* a norm's weight vector (stored as the multiplier itself) */
    PL_TK_BIAS,       /* a bias vector */
    PL_TK_FACTORS,    /* RoPE frequency factors */
    PL_TK_ROUTER      /* a mixture-of-experts router (or shared-expert gate): kept F32 */
};

/* A Hugging Face tensor's transform on its way into GGUF (convert). */
enum pl_hf_xform {
    PL_XF_NONE,
    PL_XF_PERMUTE_Q, /* llama's q row permutation over n_head heads (normal RoPE pairs) */
    PL_XF_PERMUTE_K, /* the same over n_head_kv heads */
    PL_XF_ADD_ONE,   /* a Gemma norm: HF stores w of x * (1 + w), GGUF the multiplier 1 + w */
    /* gpt-oss's gate_up_proj interleaves gate and up along its output: the gate is outputs
     * 0, 2, 4, ... (EVEN), up 1, 3, 5, ... (ODD), of the experts and of their biases */
    PL_XF_EVEN,
    PL_XF_ODD
};

/* A fused tensor: one file tensor whose consecutive row ranges are several roles' matrices
 * (rows are independent in every weight type, so each range is bound as its own tensor). */
enum pl_split {
    PL_SPLIT_NONE,
    PL_SPLIT_QKV,    /* rows [0, Q) wq, [Q, Q + KV) wk, [Q + KV, Q + 2 KV) wv (Phi-3 attn_qkv) */
    PL_SPLIT_GATE_UP /* rows [0, F) the gate, [F, 2 F) up (Phi-3 ffn_up) */
};

/* Whether a tensor must be there: */
enum pl_req {
    PL_REQ_OPT,   /* optional: bound when present */
    PL_REQ_ALL,   /* required */
    PL_REQ_DENSE, /* required in a dense model (expert_count 0), absent in a MoE one */
    PL_REQ_MOE    /* required in a MoE model (expert_count > 0), absent in a dense one */
};

typedef struct pl_arch_tensor {
    int role;         /* enum pl_layer_role (per layer) or enum pl_global_role; for a fused
                         tensor the first role it splits into (wq, gate) */
    const char *gguf; /* per layer: after "blk.N."; global: the whole name */
    const char *hf;   /* per layer: after "model.layers.N."; global: the whole name */
    uint8_t ne0, ne1; /* enum pl_dim; ne1 == PL_DIM_1: a vector */
    uint8_t kind;     /* enum pl_tensor_kind */
    uint8_t required; /* enum pl_req */
    uint8_t xform;    /* enum pl_hf_xform */
    uint8_t split;    /* enum pl_split */
    uint8_t ne2;      /* PL_DIM_X: X stacked matrices (hf: "%d" is the expert; without "%d" one
                         fused HF tensor [X, in, out], transformers 5's layout, or its MXFP4
                         pair hf_blocks [X, out, in/32, 16] and hf_scales [X, out, in/32]);
                         else PL_DIM_1 */
} pl_arch_tensor;

/* Hyperparameters the table names; pl_hparams gets them from these. */
enum pl_hp {
    PL_HP_CONTEXT_LENGTH,
    PL_HP_EMBEDDING_LENGTH,
    PL_HP_BLOCK_COUNT,
    PL_HP_FEED_FORWARD_LENGTH, /* per layer */
    PL_HP_HEAD_COUNT,          /* per layer */
    PL_HP_HEAD_COUNT_KV,       /* per layer; default: head_count */
    PL_HP_KEY_LENGTH,          /* default: n_embd / head_count */
    PL_HP_VALUE_LENGTH,        /* default: key_length; must equal it */
    PL_HP_ROPE_DIMS,           /* default: key_length */
    PL_HP_RMS_EPS,
    PL_HP_ROPE_FREQ_BASE,
    PL_HP_VOCAB_SIZE, /* default: rows of token_embd.weight; must equal them */
    PL_HP_ROPE_SCALING_TYPE,
    PL_HP_ROPE_SCALING_FACTOR,
    PL_HP_ROPE_SCALE_LINEAR, /* the older key for a linear factor */
    PL_HP_ROPE_ORIG_CTX,
    PL_HP_ROPE_ATTN_FACTOR,
    PL_HP_YARN_EXT_FACTOR,
    PL_HP_YARN_ATTN_FACTOR,
    PL_HP_YARN_BETA_FAST,
    PL_HP_YARN_BETA_SLOW,
    PL_HP_EXPERT_COUNT,
    PL_HP_EXPERT_USED_COUNT,
    PL_HP_EXPERT_FF_LENGTH,        /* an expert's FFN width; default: feed_forward_length */
    PL_HP_EXPERT_SHARED_FF_LENGTH, /* the shared expert's (qwen2moe) */
    PL_HP_CAUSAL,
    /* architecture-specific keys (pl_arch.keys): */
    PL_HP_ATTN_SOFTCAP,   /* attention scores: cap * tanh(s / cap); 0: none */
    PL_HP_FINAL_SOFTCAP,  /* logits: cap * tanh(l / cap); 0: none */
    PL_HP_SLIDING_WINDOW, /* the local layers' window (Phi-3: 0, none) */
    /* issue 49 (archA): Granite's multipliers, each a key of its own */
    PL_HP_EMBEDDING_SCALE, /* the embedding rows times it */
    PL_HP_RESIDUAL_SCALE,  /* each branch's output times it before the residual add */
    PL_HP_ATTENTION_SCALE, /* the scores' scale itself, replacing 1/sqrt(head_dim) */
    PL_HP_LOGIT_DIVISOR,   /* the logits divided by it (granite.logit_scale) */
    PL_HP_SWA_PATTERN,     /* EXAONE 4's local/global pattern: checked against the recipe's */
    /* issue 49 (cohere2, gpt-oss): */
    PL_HP_LOGIT_SCALE, /* cohere2: the logits are multiplied by it */
    /* YaRN's correction range rounded (1, llama.cpp's only way) or not (0: transformers'
     * rope_parameters.truncate = false, gpt-oss); plumb's own key, llama.cpp has none */
    PL_HP_YARN_TRUNCATE,
    PL_HP_COUNT
};

enum pl_key_kind {
    PL_KEY_INT,       /* any GGUF integer type */
    PL_KEY_PER_LAYER, /* an integer, or an array of one integer per layer */
    PL_KEY_FLOAT,     /* float32 or float64 */
    PL_KEY_STRING,
    PL_KEY_BOOL,
    /* issue 49 (archA): a layer pattern, a period or one bool per layer (llama.cpp's
     * sliding_window_pattern), checked against the recipe's at load (model.c); never written */
    PL_KEY_PATTERN
};

/* How convert gets a key's value from a Hugging Face config.json: */
enum pl_hf_how {
    PL_HF_NONE,   /* nothing in config.json says it: the key is left to its default */
    PL_HF_READ,   /* the number at `hf` (hf_def when absent; NAN: required), in [lo, hi] */
    PL_HF_DERIVED /* computed by convert from the fields `hf` names (convert.c) */
};

/* How pl_arch_write_keys writes a value it is given: */
enum pl_write_how {
    PL_W_GIVEN,         /* whenever given */
    PL_W_UNLESS_DEFAULT /* when given and not `def` (an absent key reads as def) */
};

/* A key under "<arch>.". A key whose value equals `neutral` changes nothing and is accepted
 * even where plumb implements no other value (e.g. expert_count = 0). The last four say where
 * its value comes from in a config.json and how a writer puts it. */
typedef struct pl_arch_key {
    int hp;             /* enum pl_hp */
    const char *suffix; /* after "<arch>." */
    uint8_t kind;       /* enum pl_key_kind; written as u32, f32, string or bool */
    uint8_t required;
    double def; /* when absent and not required (NAN: computed, see enum pl_hp) */
    double lo, hi;
    const char *hf; /* config.json field(s): read (PL_HF_READ) or derived from */
    uint8_t hf_how; /* enum pl_hf_how */
    double hf_def;  /* PL_HF_READ: the value when the field is absent; NAN: required */
    uint8_t write;  /* enum pl_write_how */
} pl_arch_key;

/* The gated FFN's activation; PL_ACT_SWIGLU_OAI: gpt-oss's clamped SwiGLU (kernels.h
 * pl_swiglu_oai_fn) with alpha PL_OAI_ALPHA and limit PL_OAI_LIMIT, llama.cpp's constants (no key
 * carries them; convert checks swiglu_limit) */
enum pl_act { PL_ACT_SILU, PL_ACT_GELU_TANH, PL_ACT_SWIGLU_OAI };
#define PL_OAI_ALPHA 1.702f
#define PL_OAI_LIMIT 7.0f

/* The normalisation of every norm of a model (issue 49): RMSNorm, or LayerNorm with a weight
 * and no bias (mean-centred; cohere2). */
enum pl_norm_kind { PL_NORM_RMS, PL_NORM_LAYER };

/* Whether an architecture's layers have experts: */
enum pl_moe {
    PL_MOE_NONE,     /* dense only: expert_count must be 0 */
    PL_MOE_OPTIONAL, /* dense with expert_count 0, experts with more (llama: Mixtral) */
    PL_MOE_REQUIRED  /* experts in every layer (qwen2moe, qwen3moe) */
};

/* How a block computes, read by the forward pass instead of the architecture's name. */
typedef struct pl_arch_recipe {
    enum pl_rope_style rope_style;
    uint8_t act;         /* enum pl_act: the gated FFN's activation */
    uint8_t post_norms;  /* 1: attn_post_norm / ffn_post_norm on each branch before the residual */
    uint8_t full_rotary; /* 1: rope.dimension_count must equal the head dimension (llama) */
    uint8_t emb_sqrt;    /* 1: the embedding rows are multiplied by sqrt(n_embd) (Gemma) */
    /* Local (sliding-window) layers: layer l is local iff swa_period > 0 and l % swa_period <
     * swa_period - 1, or swa_period == 1: every layer (Gemma 2: 2, even layers; Gemma 3: 6, five
     * of six; Phi-3: 1). Their RoPE has base swa_rope_base and no scaling when swa_rope_base >
     * 0, else the global layers' RoPE. */
    uint8_t swa_period;
    /* 1: a sliding_window of 0 means none, and an absent key takes llama.cpp's default for the
     * Phi-3 releases converted before the key existed (by layer count and training context) */
    uint8_t window_by_shape;
    float swa_rope_base;
    /* The attention scale is 1/sqrt(head_dim), except where a PL_QUIRK_ATTN_SCALE_EMBD row of
     * the architecture matches the model: 1/sqrt(n_embd / n_head). */
    /* Mixture-of-experts routing (with expert_count > 0): p = softmax(router logits) over
     * all experts, the expert_used_count largest kept (ties: the lower expert first), and
     * with moe_norm the kept p divided by their sum (Mixtral, Qwen3-MoE; Qwen2-MoE keeps
     * them as they are). */
    uint8_t moe_norm;
    uint8_t moe; /* enum pl_moe */
    /* issue 49 (archA): layers without RoPE (pl_arch_layer_has_rope): with nope_period > 0,
     * layer l iff (l + 1) % nope_period == 0 (SmolLM3: 4, llama.cpp's n_no_rope_layer_step,
     * which no key carries); with nope_global, the global (non-local) layers of a model whose
     * local layers have a window (EXAONE 4) */
    uint8_t nope_period;
    uint8_t nope_global;
    /* 1: an absent attention.sliding_window is none: no window, every layer global (EXAONE 4's
     * sliding_window null) */
    uint8_t window_optional;
    /* ---- issue 49 (cohere2, gpt-oss) ---- */
    uint8_t norm; /* enum pl_norm_kind: the layers' norms and the output norm */
    /* 1: attention and the FFN both read the one attn_norm of x, and both outputs are added to
     * x (cohere2: x + attn(n) + ffn(n)); the layer has no ffn_norm */
    uint8_t parallel;
    /* 1: the router softmaxes its top-k logits only (transformers' GptOssTopKRouter, llama.cpp's
     * SOFTMAX_WEIGHT): equal to the renormalised softmax over all (moe_norm must be 1); config.json
     * has no norm_topk_prob to say it */
    uint8_t moe_topk_softmax;
} pl_arch_recipe;

/* A rule llama.cpp applies by a model's size rather than by a key: data, with its source, so
 * that no code compares an architecture's name. A row matches a model when every nonzero
 * condition holds. */
enum pl_quirk_kind {
    PL_QUIRK_ATTN_SCALE_EMBD, /* attention scale 1/sqrt(n_embd / n_head), not 1/sqrt(head_dim) */
    PL_QUIRK_DEFAULT_WINDOW,  /* an absent attention.sliding_window is `value` */
    PL_QUIRK_QUANT_70B        /* pl_ftype_* mixes treat the model as llama.cpp's LLM_TYPE_70B */
};
typedef struct pl_arch_quirk {
    uint8_t kind;         /* enum pl_quirk_kind */
    uint8_t gqa;          /* 1: only with grouped-query attention (n_head != n_head_kv) */
    int64_t n_layer;      /* block_count */
    int64_t n_ctx;        /* context_length */
    int64_t n_head_kv;    /* of layer 0 */
    int64_t n_expert_not; /* > 0: not with exactly this many experts */
    int64_t value;
    const char *source; /* where llama.cpp has it */
} pl_arch_quirk;

/* What a quirk row is matched against; a field of 0 is unknown and fails a condition on it. */
typedef struct pl_arch_quirk_model {
    int64_t n_layer, n_ctx, n_head, n_head_kv, n_expert;
} pl_arch_quirk_model;

typedef struct pl_arch {
    const char *name;         /* general.architecture and the key prefix */
    const char *hf_class;     /* config.json "architectures"[0] */
    const char *hf_moe_class; /* the class of its mixture-of-experts variant (llama: Mixtral),
                                 or NULL */
    const pl_arch_tensor *globals;
    size_t n_globals;
    const pl_arch_tensor *layer;
    size_t n_layer;
    const pl_arch_key *keys; /* its own keys under "<arch>.", beyond pl_arch_keys()' */
    size_t n_keys;
    pl_arch_recipe recipe;
    const pl_arch_quirk *quirks; /* its size rules (see pl_arch_quirk_of) */
    size_t n_quirks;
} pl_arch;

/* The architectures plumb runs, in table order; NULL past the end. */
const pl_arch *pl_arch_at(size_t i);
/* By general.architecture (len bytes, not NUL-terminated) or by HF class name (hf_class or
 * hf_moe_class); NULL: unknown. */
const pl_arch *pl_arch_find(const char *name, size_t len);
const pl_arch *pl_arch_find_hf(const char *hf_class);
/* The table's names in its order, joined by ", " ("llama, qwen2, ..."). */
const char *pl_arch_names(void);
/* The table's HF classes, each hf_class followed by its hf_moe_class ("LlamaForCausalLM,
 * MixtralForCausalLM, Qwen2ForCausalLM, ..."). */
const char *pl_arch_hf_names(void);

/* The keys under "<arch>." every architecture reads (and their defaults and ranges). */
const pl_arch_key *pl_arch_keys(size_t *n);
/* The row of hp: the architecture's own (a may be NULL), else the common one; NULL if none. */
const pl_arch_key *pl_arch_key_of_arch(const pl_arch *a, int hp);
const pl_arch_key *pl_arch_key_of(int hp);
/* The first of a's quirk rows of this kind that matches m; NULL: none. */
const pl_arch_quirk *pl_arch_quirk_of(const pl_arch *a, int kind, const pl_arch_quirk_model *m);
/* 1 when a has a per-layer (layer != 0) or whole-model tensor row of this role; with
 * required, only a row that must be there (PL_REQ_ALL). */
int pl_arch_has_layer_role(const pl_arch *a, int role, int required);
int pl_arch_has_global_role(const pl_arch *a, int role);
/* 1 when the architecture layer l is a local (sliding-window) layer. */
int pl_arch_layer_is_local(const pl_arch *a, int64_t l);
/* 1 when layer l rotates q and k (the recipe's NoPE layers do not); windowed: the model's local
 * layers have a window. */
int pl_arch_layer_has_rope(const pl_arch *a, int64_t l, int windowed);
/* 1 and *why set when "<arch>." + suffix is a key that changes nothing (arch.c). */
int pl_arch_key_inert(const char *suffix, const char **why);

/* The rule for a key outside "<arch>.": 1 and *why set when it is read elsewhere in plumb or
 * changes nothing (the one list of such keys, arch.c); 0: unknown. */
int pl_key_known(const char *key, const char **why);

/* Visits the architecture's rows in file order (llama.cpp's): the whole-model tensors before the
 * layers (the embedding), every layer's rows (layer >= 0), the rest (layer -1). A nonzero return
 * of fn stops the walk and is returned. */
typedef int (*pl_arch_visit_fn)(void *user, const pl_arch_tensor *row, int64_t layer);
int pl_arch_walk(const pl_arch *a, int64_t n_layer, pl_arch_visit_fn fn, void *user);

/* Resolves a dimension symbol for a layer: E, F, V, D, H, Hkv, n_rot (and the expert sizes)
 * given. */
typedef struct pl_arch_dims {
    int64_t E, F, V, D, H, Hkv, n_rot;
    int64_t FX, FS, X; /* expert FFN, shared expert FFN, n_expert (0 in a dense model) */
} pl_arch_dims;
/* 1 when a row is bound in a model with n_expert experts (enum pl_req), 0 when it must be
 * absent; *required: whether it must be present. */
int pl_arch_row_applies(const pl_arch_tensor *row, int64_t n_expert, int *required);
int64_t pl_arch_dim(const pl_arch_dims *d, int dim);

/* ---- a layer as a list of steps ----
 * At load, the tensors bound in a layer compile into the steps it runs (pl_arch_compile_layer);
 * the forward pass (forward.c) and the double-precision reference transformer
 * (conformance/refs/ref_transformer.c) both execute that list, each with a case per kind and
 * no default, so a new mechanism is a new kind here, its compile rule, and a case in both. */
enum pl_step_kind {
    PL_STEP_NORM,      /* xn = rmsnorm(x) * w[role]: the input of the next projection step;
                          role none (a block without a pre-norm, OLMo 2): xn = x */
    PL_STEP_QKV,       /* q, k, v = wq xn, wk xn, wv xn */
    PL_STEP_QKV_BIAS,  /* per token: q, k, v += bq, bk, bv (those bound) */
    PL_STEP_HEAD_NORM, /* per token: per-head RMSNorm of q (q_norm) and k (k_norm) */
    PL_STEP_ROPE,      /* per token: q and k rotated at the token's position (the layer's RoPE) */
    PL_STEP_KV_STORE,  /* per token: k and v into the cache */
    PL_STEP_ATTENTION, /* att = softmax(scale q K^T, soft-capped, masked to the window) V;
                          with sinks bound, each head's sink logit in the softmax (gpt-oss) */
    PL_STEP_ATTN_OUT,  /* tmp = wo att (+ bo where bound) */
    PL_STEP_RESIDUAL,  /* x += rmsnorm(tmp) * w[role] (a post norm), or x += tmp (role none) */
    PL_STEP_FFN_GATED, /* tmp = down (act(gate xn) * up xn), act = arg (enum pl_act) */
    PL_STEP_FFN_MOE,   /* tmp = the routed experts' gated FFNs of xn (and the shared expert's);
                          the router's and the experts' biases where bound (gpt-oss) */
    /* issue 49 (archA) */
    PL_STEP_QK_NORM, /* per token: RMSNorm of the whole q (H*D, q_norm) and k (Hkv*D, k_norm)
                        projections, before the heads are split (OLMo 2) */
    PL_STEP_COUNT
};
#define PL_STEP_NO_ROLE PL_L_COUNT
enum { PL_MAX_STEPS = 16 };
typedef struct pl_step {
    uint8_t kind; /* enum pl_step_kind */
    uint8_t role; /* the layer tensor it reads (enum pl_layer_role), or PL_STEP_NO_ROLE */
    uint8_t arg;  /* PL_STEP_FFN_*: enum pl_act; PL_STEP_NORM: enum pl_norm_kind */
} pl_step;
/* The steps of a layer of a whose bound tensors are has[role] != 0 (PL_L_COUNT entries), into
 * out (PL_MAX_STEPS); returns their count. rope: 0 for a layer without RoPE
 * (pl_arch_layer_has_rope), whose list has no rope step. A norm step's arg is the recipe's enum
 * pl_norm_kind. */
size_t pl_arch_compile_layer(const pl_arch *a, const uint8_t *has, int rope, pl_step *out);
/* 1 for the kinds that work token by token, between QKV and ATTENTION (one pass over the
 * tokens runs a sequence of them). */
int pl_step_per_token(int kind);
const char *pl_step_name(int kind);

/* The values of an architecture's keys, for the one writer (arch_write.c) that convert, the
 * public pl_arch_write_keys (mkmodel, the tests' tiny models, the seed maker) go through. */
typedef struct pl_arch_values {
    double num[PL_HP_COUNT];      /* NAN: not given */
    const char *str[PL_HP_COUNT]; /* PL_KEY_STRING keys; NULL: not given */
} pl_arch_values;
void pl_arch_values_init(pl_arch_values *v);
/* Writes general.architecture and every given value under "<arch>." in the table's order
 * (the common keys, then a's own), each as its row's kind says. A value for a key a does not
 * have is PL_ERR_UNSUPPORTED, one outside its row's range PL_ERR_INVALID_ARG, both naming it. */
struct pl_gguf_writer;
pl_status pl_arch_values_write(struct pl_gguf_writer *w, const pl_arch *a, const pl_arch_values *v,
                               pl_error *err);

#endif
