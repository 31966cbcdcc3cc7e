/* arch.c — the architecture table (arch.h): tensors, keys (with their config.json fields),
 * recipes, quirk rows and the layer step compiler of every architecture plumb runs
 * (pl_arch_names), and the list of metadata keys that change nothing. Data and lookups only;
 * binding is model.c, writing arch_write.c. */
#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "core/core.h"

#define REQ     1
#define OPT     0
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- tensors ---- */

/* The whole-model tensors. An absent output.weight means tied embeddings (token_embd.weight is
 * the output projection too). */
#define GX(role, gguf, hf, ne0, ne1, kind, req, xf)                                                \
    {                                                                                              \
        PL_G_##role, gguf, hf, PL_DIM_##ne0, PL_DIM_##ne1, PL_TK_##kind, req, PL_XF_##xf,          \
            PL_SPLIT_NONE, PL_DIM_1                                                                \
    }
#define G(role, gguf, hf, ne0, ne1, kind, req) GX(role, gguf, hf, ne0, ne1, kind, req, NONE)
#define GLOBALS                                                                                    \
    G(TOK_EMBD, "token_embd.weight", "model.embed_tokens.weight", E, V, EMBD, REQ),                \
        G(OUT_NORM, "output_norm.weight", "model.norm.weight", E, 1, NORM, REQ),                   \
        G(OUTPUT, "output.weight", "lm_head.weight", E, V, EMBD, OPT)
static const pl_arch_tensor globals_common[] = {GLOBALS};
/* llama adds the RoPE frequency divisors llama.cpp's converter writes for Llama 3.1+'s
 * rope_scaling (rope_type llama3): computed by convert, not an HF tensor. */
static const pl_arch_tensor globals_llama[] = {
    GLOBALS,
    G(ROPE_FREQS, "rope_freqs.weight", NULL, ROT2, 1, FACTORS, OPT),
};

#define TS(role, gguf, hf, ne0, ne1, kind, req, xf, split)                                         \
    {                                                                                              \
        PL_L_##role, gguf, hf, PL_DIM_##ne0, PL_DIM_##ne1, PL_TK_##kind, req, PL_XF_##xf,          \
            PL_SPLIT_##split, PL_DIM_1                                                             \
    }
#define T(role, gguf, hf, ne0, ne1, kind, req, xf) TS(role, gguf, hf, ne0, ne1, kind, req, xf, NONE)
#define ROW_ATTN_NORM                                                                              \
    T(ATTN_NORM, "attn_norm.weight", "input_layernorm.weight", E, 1, NORM, REQ, NONE)
#define ROW_WO T(WO, "attn_output.weight", "self_attn.o_proj.weight", Q, E, MATRIX_OUT, REQ, NONE)
#define ROW_FFN_NORM                                                                               \
    T(FFN_NORM, "ffn_norm.weight", "post_attention_layernorm.weight", E, 1, NORM, REQ, NONE)
#define ROW_GATE T(GATE, "ffn_gate.weight", "mlp.gate_proj.weight", E, F, MATRIX_IN, REQ, NONE)
#define ROW_UP   T(UP, "ffn_up.weight", "mlp.up_proj.weight", E, F, MATRIX_IN, REQ, NONE)
#define ROW_DOWN T(DOWN, "ffn_down.weight", "mlp.down_proj.weight", F, E, MATRIX_OUT, REQ, NONE)
/* q, k, v as the checkpoint holds them (no q/k row permutation: NeoX RoPE, or none) */
#define ROW_QKV                                                                                    \
    T(WQ, "attn_q.weight", "self_attn.q_proj.weight", E, Q, MATRIX_IN, REQ, NONE),                 \
        T(WK, "attn_k.weight", "self_attn.k_proj.weight", E, KV, MATRIX_IN, REQ, NONE),            \
        T(WV, "attn_v.weight", "self_attn.v_proj.weight", E, KV, MATRIX_IN, REQ, NONE)
/* RMSNorm of a branch's output before the residual add (OLMo 2, EXAONE 4) */
#define ROW_ATTN_POST_NORM                                                                         \
    T(ATTN_POST_NORM, "post_attention_norm.weight", "post_attention_layernorm.weight", E, 1, NORM, \
      REQ, NONE)
#define ROW_FFN_POST_NORM                                                                          \
    T(FFN_POST_NORM, "post_ffw_norm.weight", "post_feedforward_layernorm.weight", E, 1, NORM, REQ, \
      NONE)
/* Stacked experts: X matrices in one tensor (ne2), HF's one per expert ("%d": the expert). */
#define TX(role, gguf, hf, ne0, ne1, kind)                                                         \
    {                                                                                              \
        PL_L_##role, gguf, hf, PL_DIM_##ne0, PL_DIM_##ne1, PL_TK_##kind, PL_REQ_MOE, PL_XF_NONE,   \
            PL_SPLIT_NONE, PL_DIM_X                                                                \
    }
#define ROWS_MOE(router, gate, up, down)                                                           \
    T(GATE_INP, "ffn_gate_inp.weight", router, E, X, ROUTER, PL_REQ_MOE, NONE),                    \
        TX(GATE_EXPS, "ffn_gate_exps.weight", gate, E, FX, MATRIX_IN),                             \
        TX(UP_EXPS, "ffn_up_exps.weight", up, E, FX, MATRIX_IN),                                   \
        TX(DOWN_EXPS, "ffn_down_exps.weight", down, FX, E, MATRIX_OUT)
#define ROWS_QWEN_MOE                                                                              \
    ROWS_MOE("mlp.gate.weight", "mlp.experts.%d.gate_proj.weight",                                 \
             "mlp.experts.%d.up_proj.weight", "mlp.experts.%d.down_proj.weight")
#define BIAS(role, gguf, hf, n, req) T(role, gguf, hf, n, 1, BIAS, req, NONE)

/* Qwen2's attention (q/k/v biases required) and Qwen3's (per-head q/k norms, no biases), with
 * the FFN norm: shared by the dense and the mixture-of-experts variants. */
#define ROWS_QWEN2_ATTN                                                                            \
    ROW_ATTN_NORM, T(WQ, "attn_q.weight", "self_attn.q_proj.weight", E, Q, MATRIX_IN, REQ, NONE),  \
        BIAS(BQ, "attn_q.bias", "self_attn.q_proj.bias", Q, REQ),                                  \
        T(WK, "attn_k.weight", "self_attn.k_proj.weight", E, KV, MATRIX_IN, REQ, NONE),            \
        BIAS(BK, "attn_k.bias", "self_attn.k_proj.bias", KV, REQ),                                 \
        T(WV, "attn_v.weight", "self_attn.v_proj.weight", E, KV, MATRIX_IN, REQ, NONE),            \
        BIAS(BV, "attn_v.bias", "self_attn.v_proj.bias", KV, REQ), ROW_WO, ROW_FFN_NORM
#define ROWS_QWEN3_ATTN                                                                            \
    ROW_ATTN_NORM, T(WQ, "attn_q.weight", "self_attn.q_proj.weight", E, Q, MATRIX_IN, REQ, NONE),  \
        T(WK, "attn_k.weight", "self_attn.k_proj.weight", E, KV, MATRIX_IN, REQ, NONE),            \
        T(WV, "attn_v.weight", "self_attn.v_proj.weight", E, KV, MATRIX_IN, REQ, NONE),            \
        T(Q_NORM, "attn_q_norm.weight", "self_attn.q_norm.weight", D, 1, NORM, REQ, NONE),         \
        T(K_NORM, "attn_k_norm.weight", "self_attn.k_norm.weight", D, 1, NORM, REQ, NONE), ROW_WO, \
        ROW_FFN_NORM

/* llama: normal (adjacent-pair) RoPE, so HF's q/k rows are permuted on conversion; the q/k/v
 * biases are optional, as llama.cpp loads them. With expert_count > 0 (Mixtral) the FFN is
 * the router and the stacked experts. */
static const pl_arch_tensor layer_llama[] = {
    ROW_ATTN_NORM,
    T(WQ, "attn_q.weight", "self_attn.q_proj.weight", E, Q, MATRIX_IN, REQ, PERMUTE_Q),
    BIAS(BQ, "attn_q.bias", "self_attn.q_proj.bias", Q, OPT),
    T(WK, "attn_k.weight", "self_attn.k_proj.weight", E, KV, MATRIX_IN, REQ, PERMUTE_K),
    BIAS(BK, "attn_k.bias", "self_attn.k_proj.bias", KV, OPT),
    T(WV, "attn_v.weight", "self_attn.v_proj.weight", E, KV, MATRIX_IN, REQ, NONE),
    BIAS(BV, "attn_v.bias", "self_attn.v_proj.bias", KV, OPT),
    ROW_WO,
    ROW_FFN_NORM,
    T(GATE, "ffn_gate.weight", "mlp.gate_proj.weight", E, F, MATRIX_IN, PL_REQ_DENSE, NONE),
    T(UP, "ffn_up.weight", "mlp.up_proj.weight", E, F, MATRIX_IN, PL_REQ_DENSE, NONE),
    T(DOWN, "ffn_down.weight", "mlp.down_proj.weight", F, E, MATRIX_OUT, PL_REQ_DENSE, NONE),
    ROWS_MOE("block_sparse_moe.gate.weight", "block_sparse_moe.experts.%d.w1.weight",
             "block_sparse_moe.experts.%d.w3.weight", "block_sparse_moe.experts.%d.w2.weight"),
};

/* qwen2: neox RoPE, q/k/v biases required. */
static const pl_arch_tensor layer_qwen2[] = {
    ROWS_QWEN2_ATTN,
    ROW_GATE,
    ROW_UP,
    ROW_DOWN,
};

/* qwen3: neox RoPE, per-head RMSNorm of q and k (before RoPE), no biases. */
static const pl_arch_tensor layer_qwen3[] = {
    ROWS_QWEN3_ATTN,
    ROW_GATE,
    ROW_UP,
    ROW_DOWN,
};

/* qwen2moe: qwen2's attention; every layer's FFN is the router, the stacked experts and a
 * shared expert whose output is scaled by sigmoid(gate_inp_shexp . x). */
static const pl_arch_tensor layer_qwen2moe[] = {
    ROWS_QWEN2_ATTN,
    ROWS_QWEN_MOE,
    T(GATE_INP_SHEXP, "ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight", E, 1, ROUTER,
      REQ, NONE),
    T(GATE_SHEXP, "ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight", E, FS, MATRIX_IN,
      REQ, NONE),
    T(UP_SHEXP, "ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight", E, FS, MATRIX_IN, REQ,
      NONE),
    T(DOWN_SHEXP, "ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight", FS, E, MATRIX_OUT,
      REQ, NONE),
};

/* qwen3moe: qwen3's attention (q/k norms, no biases), every layer's FFN the router and the
 * stacked experts. */
static const pl_arch_tensor layer_qwen3moe[] = {
    ROWS_QWEN3_ATTN,
    ROWS_QWEN_MOE,
};

/* The MoE architectures' own keys: the expert FFN widths (llama.cpp's converters write them). */
#define KEY_EXPERT_FF                                                                              \
    {                                                                                              \
        PL_HP_EXPERT_FF_LENGTH, "expert_feed_forward_length", PL_KEY_INT, REQ, 0, 1, 1 << 18,      \
            "moe_intermediate_size", PL_HF_READ, NAN, PL_W_GIVEN                                   \
    }
static const pl_arch_key keys_qwen2moe[] = {
    KEY_EXPERT_FF,
    {PL_HP_EXPERT_SHARED_FF_LENGTH, "expert_shared_feed_forward_length", PL_KEY_INT, OPT, NAN, 1,
     1 << 18, "shared_expert_intermediate_size", PL_HF_READ, NAN, PL_W_GIVEN},
};
static const pl_arch_key keys_qwen3moe[] = {KEY_EXPERT_FF};

/* Gemma: tied embeddings only (no output.weight row), every norm stored as its multiplier
 * 1 + w (convert adds the one), a norm on each branch's output too, GeGLU. */
static const pl_arch_tensor globals_gemma[] = {
    G(TOK_EMBD, "token_embd.weight", "model.embed_tokens.weight", E, V, EMBD, REQ),
    GX(OUT_NORM, "output_norm.weight", "model.norm.weight", E, 1, NORM, REQ, ADD_ONE),
};
#define GEMMA_NORM(role, gguf, hf) T(role, gguf, hf, E, 1, NORM, REQ, ADD_ONE)
#define GEMMA_QKV                                                                                  \
    T(WQ, "attn_q.weight", "self_attn.q_proj.weight", E, Q, MATRIX_IN, REQ, NONE),                 \
        T(WK, "attn_k.weight", "self_attn.k_proj.weight", E, KV, MATRIX_IN, REQ, NONE),            \
        T(WV, "attn_v.weight", "self_attn.v_proj.weight", E, KV, MATRIX_IN, REQ, NONE)
#define GEMMA_BRANCHES                                                                             \
    ROW_WO,                                                                                        \
        GEMMA_NORM(ATTN_POST_NORM, "post_attention_norm.weight",                                   \
                   "post_attention_layernorm.weight"),                                             \
        GEMMA_NORM(FFN_NORM, "ffn_norm.weight", "pre_feedforward_layernorm.weight"), ROW_GATE,     \
        ROW_UP, ROW_DOWN,                                                                          \
        GEMMA_NORM(FFN_POST_NORM, "post_ffw_norm.weight", "post_feedforward_layernorm.weight")
static const pl_arch_tensor layer_gemma2[] = {
    GEMMA_NORM(ATTN_NORM, "attn_norm.weight", "input_layernorm.weight"),
    GEMMA_QKV,
    GEMMA_BRANCHES,
};
/* Gemma 3 adds per-head q/k RMSNorm (stored 1 + w as well). */
static const pl_arch_tensor layer_gemma3[] = {
    GEMMA_NORM(ATTN_NORM, "attn_norm.weight", "input_layernorm.weight"),
    GEMMA_QKV,
    T(Q_NORM, "attn_q_norm.weight", "self_attn.q_norm.weight", D, 1, NORM, REQ, ADD_ONE),
    T(K_NORM, "attn_k_norm.weight", "self_attn.k_norm.weight", D, 1, NORM, REQ, ADD_ONE),
    GEMMA_BRANCHES,
};

/* Phi-3: q, k and v fused in one tensor, the gate and up projections in another (the gate's
 * rows first), neox RoPE over rope.dimension_count dims (Phi-4-mini: 3/4 of the head), every
 * layer local; longrope's two divisor sets, computed by convert, not HF tensors. */
static const pl_arch_tensor globals_phi3[] = {
    GLOBALS,
    G(ROPE_LONG, "rope_factors_long.weight", NULL, ROT2, 1, FACTORS, OPT),
    G(ROPE_SHORT, "rope_factors_short.weight", NULL, ROT2, 1, FACTORS, OPT),
};
static const pl_arch_tensor layer_phi3[] = {
    ROW_ATTN_NORM,
    TS(WQ, "attn_qkv.weight", "self_attn.qkv_proj.weight", E, QKV, MATRIX_IN, REQ, NONE, QKV),
    ROW_WO,
    ROW_FFN_NORM,
    TS(GATE, "ffn_up.weight", "mlp.gate_up_proj.weight", E, F2, MATRIX_IN, REQ, NONE, GATE_UP),
    ROW_DOWN,
};

/* Their own keys, with llama.cpp's defaults (Gemma 2: caps 50 and 30, window 4096). */
static const pl_arch_key keys_gemma2[] = {
    {PL_HP_ATTN_SOFTCAP, "attn_logit_softcapping", PL_KEY_FLOAT, OPT, 50.0, 0.0, 1e6,
     "attn_logit_softcapping (null: none)", PL_HF_DERIVED, NAN, PL_W_UNLESS_DEFAULT},
    {PL_HP_FINAL_SOFTCAP, "final_logit_softcapping", PL_KEY_FLOAT, OPT, 30.0, 0.0, 1e6,
     "final_logit_softcapping (null: none)", PL_HF_DERIVED, NAN, PL_W_UNLESS_DEFAULT},
    {PL_HP_SLIDING_WINDOW, "attention.sliding_window", PL_KEY_INT, OPT, 4096, 1, INT32_MAX,
     "sliding_window", PL_HF_DERIVED, NAN, PL_W_GIVEN},
};
static const pl_arch_key keys_gemma3[] = {
    {PL_HP_FINAL_SOFTCAP, "final_logit_softcapping", PL_KEY_FLOAT, OPT, 0.0, 0.0, 1e6,
     "final_logit_softcapping (null: none)", PL_HF_DERIVED, NAN, PL_W_UNLESS_DEFAULT},
    {PL_HP_SLIDING_WINDOW, "attention.sliding_window", PL_KEY_INT, REQ, 0, 1, INT32_MAX,
     "sliding_window", PL_HF_DERIVED, NAN, PL_W_GIVEN},
};

/* Phi-3: 0 is no window (Phi-4); absent: by shape (window_by_shape) */
static const pl_arch_key keys_phi3[] = {
    {PL_HP_SLIDING_WINDOW, "attention.sliding_window", PL_KEY_INT, OPT, NAN, 0, INT32_MAX,
     "sliding_window (null: 0, none)", PL_HF_DERIVED, NAN, PL_W_GIVEN},
};

/* ---- issue 49 (archA): Granite 3, SmolLM3, OLMo 2, EXAONE 4, GLM-4 ---- */

/* granite and smollm3: llama's tensors (normal RoPE, q/k rows permuted on conversion) without
 * biases. */
static const pl_arch_tensor layer_llama_plain[] = {
    ROW_ATTN_NORM,
    T(WQ, "attn_q.weight", "self_attn.q_proj.weight", E, Q, MATRIX_IN, REQ, PERMUTE_Q),
    T(WK, "attn_k.weight", "self_attn.k_proj.weight", E, KV, MATRIX_IN, REQ, PERMUTE_K),
    T(WV, "attn_v.weight", "self_attn.v_proj.weight", E, KV, MATRIX_IN, REQ, NONE),
    ROW_WO,
    ROW_FFN_NORM,
    ROW_GATE,
    ROW_UP,
    ROW_DOWN,
};
#define KEY_MULT(hp, suffix, hf)                                                                   \
    {                                                                                              \
        PL_HP_##hp, suffix, PL_KEY_FLOAT, REQ, 1.0, 1e-6, 1e6, hf, PL_HF_READ, 1.0, PL_W_GIVEN     \
    }
/* olmo2: no norm before either branch: RMSNorm on each branch's output instead (HF's
 * post_attention_layernorm is GGUF's post_attention_norm here, not ffn_norm), q and k
 * normalised over the whole projection before the heads split, NeoX RoPE. */
static const pl_arch_tensor layer_olmo2[] = {
    ROW_QKV,
    T(Q_NORM, "attn_q_norm.weight", "self_attn.q_norm.weight", Q, 1, NORM, REQ, NONE),
    T(K_NORM, "attn_k_norm.weight", "self_attn.k_norm.weight", KV, 1, NORM, REQ, NONE),
    ROW_WO,
    ROW_ATTN_POST_NORM,
    ROW_GATE,
    ROW_UP,
    ROW_DOWN,
    ROW_FFN_POST_NORM,
};

/* exaone4: OLMo 2's post-norms with per-head q/k norms; 3 local layers to 1 global, RoPE only
 * on the local layers when the model has a window (transformers' Exaone4Attention), NeoX
 * RoPE; llama3 RoPE divisors as llama's. */
static const pl_arch_tensor layer_exaone4[] = {
    ROW_QKV,
    T(Q_NORM, "attn_q_norm.weight", "self_attn.q_norm.weight", D, 1, NORM, REQ, NONE),
    T(K_NORM, "attn_k_norm.weight", "self_attn.k_norm.weight", D, 1, NORM, REQ, NONE),
    ROW_WO,
    ROW_ATTN_POST_NORM,
    ROW_GATE,
    ROW_UP,
    ROW_DOWN,
    ROW_FFN_POST_NORM,
};
/* The window is optional (absent: none); the pattern key llama.cpp's converter writes (one bool
 * per layer) or its loader reads (a period) must be the recipe's. */
static const pl_arch_key keys_exaone4[] = {
    {PL_HP_SLIDING_WINDOW, "attention.sliding_window", PL_KEY_INT, OPT, 0, 1, INT32_MAX,
     "sliding_window (null: none)", PL_HF_DERIVED, NAN, PL_W_GIVEN},
    {PL_HP_SWA_PATTERN, "attention.sliding_window_pattern", PL_KEY_PATTERN, OPT, 4, 0, 1,
     "sliding_window_pattern / layer_types: checked, not written", PL_HF_DERIVED, NAN, PL_W_GIVEN},
};

/* glm4: pre-norms and a norm on each branch's output too (HF's post_self_attn_layernorm is
 * GGUF's post_attention_norm, its post_attention_layernorm the FFN's pre-norm ffn_norm, its
 * post_mlp_layernorm post_ffw_norm), q/k/v biases, gate and up fused in ffn_up (the gate's rows
 * first, HF's gate_up_proj), normal RoPE (transformers' GLM rotates adjacent pairs: no row
 * permutation) over rope.dimension_count dims (partial_rotary_factor of the head). */
static const pl_arch_tensor layer_glm4[] = {
    ROW_ATTN_NORM,
    T(WQ, "attn_q.weight", "self_attn.q_proj.weight", E, Q, MATRIX_IN, REQ, NONE),
    BIAS(BQ, "attn_q.bias", "self_attn.q_proj.bias", Q, REQ),
    T(WK, "attn_k.weight", "self_attn.k_proj.weight", E, KV, MATRIX_IN, REQ, NONE),
    BIAS(BK, "attn_k.bias", "self_attn.k_proj.bias", KV, REQ),
    T(WV, "attn_v.weight", "self_attn.v_proj.weight", E, KV, MATRIX_IN, REQ, NONE),
    BIAS(BV, "attn_v.bias", "self_attn.v_proj.bias", KV, REQ),
    ROW_WO,
    T(ATTN_POST_NORM, "post_attention_norm.weight", "post_self_attn_layernorm.weight", E, 1, NORM,
      REQ, NONE),
    ROW_FFN_NORM,
    TS(GATE, "ffn_up.weight", "mlp.gate_up_proj.weight", E, F2, MATRIX_IN, REQ, NONE, GATE_UP),
    ROW_DOWN,
    T(FFN_POST_NORM, "post_ffw_norm.weight", "post_mlp_layernorm.weight", E, 1, NORM, REQ, NONE),
};

/* granite: four multipliers, each a key llama.cpp requires: embedding rows times
 * embedding_scale, each branch's output times residual_scale before the add, scores times
 * attention.scale (not 1/sqrt(head_dim)), logits divided by logit_scale (transformers'
 * GraniteForCausalLM). */
static const pl_arch_key keys_granite[] = {
    KEY_MULT(EMBEDDING_SCALE, "embedding_scale", "embedding_multiplier"),
    KEY_MULT(RESIDUAL_SCALE, "residual_scale", "residual_multiplier"),
    KEY_MULT(ATTENTION_SCALE, "attention.scale", "attention_multiplier"),
    KEY_MULT(LOGIT_DIVISOR, "logit_scale", "logits_scaling"),
};

/* ---- size rules (quirks), each with where llama.cpp has it ---- */

/* Gemma's 27B: llama.cpp scales the scores by 1/sqrt(n_embd / n_head) where the model has this
 * many layers (GGUF carries no query_pre_attn_scalar). */
static const pl_arch_quirk quirks_gemma2[] = {
    {.kind = PL_QUIRK_ATTN_SCALE_EMBD,
     .n_layer = 46,
     .source = "llama.cpp llm_build_gemma2_iswa: LLM_TYPE_27B (46 layers)"},
};
static const pl_arch_quirk quirks_gemma3[] = {
    {.kind = PL_QUIRK_ATTN_SCALE_EMBD,
     .n_layer = 62,
     .source = "llama.cpp llm_build_gemma3_iswa: LLM_TYPE_27B (62 layers)"},
};
/* The Phi-3 releases converted before attention.sliding_window existed: llama.cpp's windows
 * by layer count, training context (and KV heads). */
static const pl_arch_quirk quirks_phi3[] = {
    {.kind = PL_QUIRK_DEFAULT_WINDOW,
     .n_layer = 32,
     .n_ctx = 4096,
     .value = 2047,
     .source = "llama.cpp llm_load_hparams LLM_ARCH_PHI3: mini-4k"},
    {.kind = PL_QUIRK_DEFAULT_WINDOW,
     .n_layer = 40,
     .n_ctx = 4096,
     .value = 2047,
     .source = "llama.cpp llm_load_hparams LLM_ARCH_PHI3: medium-4k"},
    {.kind = PL_QUIRK_DEFAULT_WINDOW,
     .n_layer = 32,
     .n_ctx = 131072,
     .n_head_kv = 32,
     .value = 262144,
     .source = "llama.cpp llm_load_hparams LLM_ARCH_PHI3: mini-128k"},
    {.kind = PL_QUIRK_DEFAULT_WINDOW,
     .n_layer = 40,
     .n_ctx = 131072,
     .value = 131072,
     .source = "llama.cpp llm_load_hparams LLM_ARCH_PHI3: medium-128k"},
};
/* llama-quantize's LLM_TYPE_70B: 80 layers (llama: with grouped-query attention, else 65B,
 * and not the 8-expert models) */
static const pl_arch_quirk quirks_llama[] = {
    {.kind = PL_QUIRK_QUANT_70B,
     .n_layer = 80,
     .gqa = 1,
     .n_expert_not = 8,
     .source = "llama.cpp llm_load_hparams LLM_ARCH_LLAMA: case 80, n_head != n_head_kv"},
};
static const pl_arch_quirk quirks_qwen2[] = {
    {.kind = PL_QUIRK_QUANT_70B,
     .n_layer = 80,
     .source = "llama.cpp llm_load_hparams LLM_ARCH_QWEN2: case 80"},
};

/* ---- issue 49: cohere2 (Command R7B), gpt-oss ---- */

/* cohere2: tied embeddings only (llama.cpp duplicates token_embd.weight as the output), every
 * norm a LayerNorm weight (no bias), attention and the FFN in parallel from the one attn_norm
 * (no ffn_norm), RoPE on adjacent pairs as transformers' rotate_half interleaves them (so no q/k
 * permutation), and only on the local layers (3 of every 4). */
static const pl_arch_tensor globals_cohere2[] = {
    G(TOK_EMBD, "token_embd.weight", "model.embed_tokens.weight", E, V, EMBD, REQ),
    G(OUT_NORM, "output_norm.weight", "model.norm.weight", E, 1, NORM, REQ),
};
static const pl_arch_tensor layer_cohere2[] = {
    ROW_ATTN_NORM, ROW_QKV, ROW_WO, ROW_GATE, ROW_UP, ROW_DOWN,
};
/* llama.cpp's LLM_ARCH_COHERE2 requires all three; the epsilon is LayerNorm's key, not RMSNorm's */
static const pl_arch_key keys_cohere2[] = {
    {PL_HP_RMS_EPS, "attention.layer_norm_epsilon", PL_KEY_FLOAT, REQ, 0, 1e-12, 1.0,
     "layer_norm_eps", PL_HF_READ, 1e-5, PL_W_GIVEN},
    {PL_HP_SLIDING_WINDOW, "attention.sliding_window", PL_KEY_INT, REQ, 0, 1, INT32_MAX,
     "sliding_window", PL_HF_DERIVED, NAN, PL_W_GIVEN},
    {PL_HP_LOGIT_SCALE, "logit_scale", PL_KEY_FLOAT, REQ, 1.0, 1e-6, 1e6, "logit_scale", PL_HF_READ,
     0.0625, PL_W_GIVEN}, /* Cohere2Config's default */
};

/* gpt-oss: qwen2's attention with an output bias and one learned sink logit per head, NeoX
 * RoPE (transformers' halves), the FFN's pre-norm named post_attention_norm in llama.cpp's
 * files; every layer's FFN the router (with a bias) and the stacked experts (with biases), HF's
 * experts fused in one tensor per projection (transformers 5: [X, in, out], gate and up
 * interleaved along out) or MXFP4 (_blocks, _scales); even layers local. */
#define TXF(role, gguf, hf, ne0, ne1, kind, xf)                                                    \
    {                                                                                              \
        PL_L_##role, gguf, hf, PL_DIM_##ne0, PL_DIM_##ne1, PL_TK_##kind, PL_REQ_MOE, PL_XF_##xf,   \
            PL_SPLIT_NONE, PL_DIM_X                                                                \
    }
static const pl_arch_tensor layer_gpt_oss[] = {
    ROW_ATTN_NORM,
    T(WQ, "attn_q.weight", "self_attn.q_proj.weight", E, Q, MATRIX_IN, REQ, NONE),
    BIAS(BQ, "attn_q.bias", "self_attn.q_proj.bias", Q, REQ),
    T(WK, "attn_k.weight", "self_attn.k_proj.weight", E, KV, MATRIX_IN, REQ, NONE),
    BIAS(BK, "attn_k.bias", "self_attn.k_proj.bias", KV, REQ),
    T(WV, "attn_v.weight", "self_attn.v_proj.weight", E, KV, MATRIX_IN, REQ, NONE),
    BIAS(BV, "attn_v.bias", "self_attn.v_proj.bias", KV, REQ),
    ROW_WO,
    BIAS(BO, "attn_output.bias", "self_attn.o_proj.bias", E, REQ),
    BIAS(SINKS, "attn_sinks.weight", "self_attn.sinks", H, REQ),
    T(FFN_NORM, "post_attention_norm.weight", "post_attention_layernorm.weight", E, 1, NORM, REQ,
      NONE),
    T(GATE_INP, "ffn_gate_inp.weight", "mlp.router.weight", E, X, ROUTER, PL_REQ_MOE, NONE),
    BIAS(GATE_INP_B, "ffn_gate_inp.bias", "mlp.router.bias", X, PL_REQ_MOE),
    TXF(GATE_EXPS, "ffn_gate_exps.weight", "mlp.experts.gate_up_proj", E, FX, MATRIX_IN, EVEN),
    TXF(UP_EXPS, "ffn_up_exps.weight", "mlp.experts.gate_up_proj", E, FX, MATRIX_IN, ODD),
    TXF(DOWN_EXPS, "ffn_down_exps.weight", "mlp.experts.down_proj", FX, E, MATRIX_OUT, NONE),
    T(GATE_EXPS_B, "ffn_gate_exps.bias", "mlp.experts.gate_up_proj_bias", FX, X, BIAS, PL_REQ_MOE,
      EVEN),
    T(UP_EXPS_B, "ffn_up_exps.bias", "mlp.experts.gate_up_proj_bias", FX, X, BIAS, PL_REQ_MOE, ODD),
    T(DOWN_EXPS_B, "ffn_down_exps.bias", "mlp.experts.down_proj_bias", E, X, BIAS, PL_REQ_MOE,
      NONE),
};
/* the experts' width is config.json's intermediate_size; llama.cpp's LLM_ARCH_OPENAI_MOE reads
 * the window and the expert width as required keys */
static const pl_arch_key keys_gpt_oss[] = {
    {PL_HP_EXPERT_FF_LENGTH, "expert_feed_forward_length", PL_KEY_INT, REQ, 0, 1, 1 << 18,
     "intermediate_size", PL_HF_READ, NAN, PL_W_GIVEN},
    {PL_HP_SLIDING_WINDOW, "attention.sliding_window", PL_KEY_INT, REQ, 0, 1, INT32_MAX,
     "sliding_window", PL_HF_DERIVED, NAN, PL_W_GIVEN},
};

#define LAYER(a)  a, N_OF(a)
#define QUIRKS(q) q, N_OF(q)
#define NO_QUIRKS NULL, 0
#define NO_KEYS   NULL, 0
#define KEYS(k)   k, N_OF(k)
static const pl_arch archs[] = {
    {"llama",
     "LlamaForCausalLM",
     "MixtralForCausalLM",
     globals_llama,
     N_OF(globals_llama),
     LAYER(layer_llama),
     NO_KEYS,
     {.rope_style = PL_ROPE_NORMAL,
      .act = PL_ACT_SILU,
      .full_rotary = 1,
      .moe = PL_MOE_OPTIONAL,
      .moe_norm = 1},
     QUIRKS(quirks_llama)},
    {"qwen2",
     "Qwen2ForCausalLM",
     NULL,
     globals_common,
     N_OF(globals_common),
     LAYER(layer_qwen2),
     NO_KEYS,
     {.rope_style = PL_ROPE_NEOX, .act = PL_ACT_SILU},
     QUIRKS(quirks_qwen2)},
    {"qwen3",
     "Qwen3ForCausalLM",
     NULL,
     globals_common,
     N_OF(globals_common),
     LAYER(layer_qwen3),
     NO_KEYS,
     {.rope_style = PL_ROPE_NEOX, .act = PL_ACT_SILU},
     NO_QUIRKS},
    {"qwen2moe",
     "Qwen2MoeForCausalLM",
     NULL,
     globals_common,
     N_OF(globals_common),
     LAYER(layer_qwen2moe),
     KEYS(keys_qwen2moe),
     {.rope_style = PL_ROPE_NEOX, .act = PL_ACT_SILU, .moe = PL_MOE_REQUIRED, .moe_norm = 0},
     NO_QUIRKS},
    {"qwen3moe",
     "Qwen3MoeForCausalLM",
     NULL,
     globals_common,
     N_OF(globals_common),
     LAYER(layer_qwen3moe),
     KEYS(keys_qwen3moe),
     {.rope_style = PL_ROPE_NEOX, .act = PL_ACT_SILU, .moe = PL_MOE_REQUIRED, .moe_norm = 1},
     NO_QUIRKS},
    {"gemma2",
     "Gemma2ForCausalLM",
     NULL,
     globals_gemma,
     N_OF(globals_gemma),
     LAYER(layer_gemma2),
     KEYS(keys_gemma2),
     {.rope_style = PL_ROPE_NEOX,
      .act = PL_ACT_GELU_TANH,
      .post_norms = 1,
      .emb_sqrt = 1,
      .swa_period = 2},
     QUIRKS(quirks_gemma2)},
    {"gemma3",
     "Gemma3ForCausalLM",
     NULL,
     globals_gemma,
     N_OF(globals_gemma),
     LAYER(layer_gemma3),
     KEYS(keys_gemma3),
     {.rope_style = PL_ROPE_NEOX,
      .act = PL_ACT_GELU_TANH,
      .post_norms = 1,
      .emb_sqrt = 1,
      .swa_period = 6,
      .swa_rope_base = 10000.0f},
     QUIRKS(quirks_gemma3)},
    {"phi3",
     "Phi3ForCausalLM",
     NULL,
     globals_phi3,
     N_OF(globals_phi3),
     LAYER(layer_phi3),
     KEYS(keys_phi3),
     {.rope_style = PL_ROPE_NEOX, .act = PL_ACT_SILU, .swa_period = 1, .window_by_shape = 1},
     QUIRKS(quirks_phi3)},
    /* issue 49 (archA) */
    {"granite",
     "GraniteForCausalLM",
     NULL,
     globals_common,
     N_OF(globals_common),
     LAYER(layer_llama_plain),
     KEYS(keys_granite),
     {.rope_style = PL_ROPE_NORMAL, .act = PL_ACT_SILU, .full_rotary = 1},
     NO_QUIRKS},
    /* smollm3: every 4th layer without RoPE (llama.cpp: n_no_rope_layer_step 4, no key) */
    {"smollm3",
     "SmolLM3ForCausalLM",
     NULL,
     globals_common,
     N_OF(globals_common),
     LAYER(layer_llama_plain),
     NO_KEYS,
     {.rope_style = PL_ROPE_NORMAL, .act = PL_ACT_SILU, .full_rotary = 1, .nope_period = 4},
     NO_QUIRKS},
    {"olmo2",
     "Olmo2ForCausalLM",
     NULL,
     globals_common,
     N_OF(globals_common),
     LAYER(layer_olmo2),
     NO_KEYS,
     {.rope_style = PL_ROPE_NEOX, .act = PL_ACT_SILU, .full_rotary = 1},
     NO_QUIRKS},
    {"exaone4",
     "Exaone4ForCausalLM",
     NULL,
     globals_llama,
     N_OF(globals_llama),
     LAYER(layer_exaone4),
     KEYS(keys_exaone4),
     {.rope_style = PL_ROPE_NEOX,
      .act = PL_ACT_SILU,
      .full_rotary = 1,
      .swa_period = 4,
      .nope_global = 1,
      .window_optional = 1},
     NO_QUIRKS},
    {"glm4",
     "Glm4ForCausalLM",
     NULL,
     globals_common,
     N_OF(globals_common),
     LAYER(layer_glm4),
     NO_KEYS,
     {.rope_style = PL_ROPE_NORMAL, .act = PL_ACT_SILU},
     NO_QUIRKS},
    /* ---- issue 49: cohere2, gpt-oss ---- */
    {"cohere2",
     "Cohere2ForCausalLM",
     NULL,
     globals_cohere2,
     N_OF(globals_cohere2),
     LAYER(layer_cohere2),
     KEYS(keys_cohere2),
     {.rope_style = PL_ROPE_NORMAL,
      .act = PL_ACT_SILU,
      .swa_period = 4,
      .norm = PL_NORM_LAYER,
      .parallel = 1,
      .nope_global = 1},
     NO_QUIRKS},
    {"gpt-oss",
     "GptOssForCausalLM",
     NULL,
     globals_common,
     N_OF(globals_common),
     LAYER(layer_gpt_oss),
     KEYS(keys_gpt_oss),
     {.rope_style = PL_ROPE_NEOX,
      .act = PL_ACT_SWIGLU_OAI,
      .full_rotary = 1,
      .swa_period = 2,
      .moe = PL_MOE_REQUIRED,
      .moe_norm = 1,
      .moe_topk_softmax = 1},
     NO_QUIRKS},
};

const pl_arch *pl_arch_at(size_t i)
{
    return i < N_OF(archs) ? &archs[i] : NULL;
}

const pl_arch *pl_arch_find(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OF(archs); i++)
        if (strlen(archs[i].name) == len && memcmp(archs[i].name, name, len) == 0) return &archs[i];
    return NULL;
}

const pl_arch *pl_arch_find_hf(const char *hf_class)
{
    for (size_t i = 0; i < N_OF(archs); i++)
        if (strcmp(archs[i].hf_class, hf_class) == 0 ||
            (archs[i].hf_moe_class && strcmp(archs[i].hf_moe_class, hf_class) == 0))
            return &archs[i];
    return NULL;
}

/* The lists below are joined from the table once; like the table they never change after. */
static char arch_names[256], arch_hf_names[768];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void join(char *buf, size_t cap, size_t *len, const char *name)
{
    int k = snprintf(buf + *len, cap - *len, "%s%s", *len ? ", " : "", name);
    assert(k > 0 && (size_t)k < cap - *len); /* the buffers hold the table's names */
    *len += (size_t)k;
}

static void join_names(void)
{
    size_t n = 0, h = 0;
    for (size_t i = 0; i < N_OF(archs); i++) {
        join(arch_names, sizeof arch_names, &n, archs[i].name);
        join(arch_hf_names, sizeof arch_hf_names, &h, archs[i].hf_class);
        if (archs[i].hf_moe_class)
            join(arch_hf_names, sizeof arch_hf_names, &h, archs[i].hf_moe_class);
    }
}

const char *pl_arch_names(void)
{
    pthread_once(&names_once, join_names);
    return arch_names;
}

const char *pl_arch_hf_names(void)
{
    pthread_once(&names_once, join_names);
    return arch_hf_names;
}

const pl_arch_quirk *pl_arch_quirk_of(const pl_arch *a, int kind, const pl_arch_quirk_model *m)
{
    for (size_t i = 0; i < a->n_quirks; i++) {
        const pl_arch_quirk *q = &a->quirks[i];
        if (q->kind == kind && (!q->n_layer || q->n_layer == m->n_layer) &&
            (!q->n_ctx || q->n_ctx == m->n_ctx) &&
            (!q->n_head_kv || q->n_head_kv == m->n_head_kv) &&
            (!q->gqa || m->n_head != m->n_head_kv) &&
            (!q->n_expert_not || q->n_expert_not != m->n_expert))
            return q;
    }
    return NULL;
}

int pl_arch_has_layer_role(const pl_arch *a, int role, int required)
{
    for (size_t i = 0; i < a->n_layer; i++)
        if (a->layer[i].role == role && (!required || a->layer[i].required == PL_REQ_ALL)) return 1;
    return 0;
}

int pl_arch_has_global_role(const pl_arch *a, int role)
{
    for (size_t i = 0; i < a->n_globals; i++)
        if (a->globals[i].role == role) return 1;
    return 0;
}

/* ---- a layer as a list of steps ---- */

/* 1 when the architecture's q norm spans the whole projection (its row is Q wide, not D). */
static int qk_norm_whole(const pl_arch *a)
{
    for (size_t i = 0; i < a->n_layer; i++)
        if (a->layer[i].role == PL_L_Q_NORM) return a->layer[i].ne0 == PL_DIM_Q;
    return 0;
}

size_t pl_arch_compile_layer(const pl_arch *a, const uint8_t *has, int rope, pl_step *out)
{
    size_t n = 0;
    const pl_arch_recipe *rc = &a->recipe;
#define STEP(k, r, x) (out[n++] = (pl_step){.kind = (k), .role = (uint8_t)(r), .arg = (x)})
#define ROLE_IF(r)    (has[r] ? (r) : PL_STEP_NO_ROLE)
    STEP(PL_STEP_NORM, ROLE_IF(PL_L_ATTN_NORM), rc->norm);
    STEP(PL_STEP_QKV, PL_STEP_NO_ROLE, 0);
    if (has[PL_L_BQ] || has[PL_L_BK] || has[PL_L_BV]) STEP(PL_STEP_QKV_BIAS, PL_STEP_NO_ROLE, 0);
    /* q/k norms per head (D wide), or over the whole projection (OLMo 2: the table's row is Q
     * wide) */
    if (has[PL_L_Q_NORM] || has[PL_L_K_NORM])
        STEP(qk_norm_whole(a) ? PL_STEP_QK_NORM : PL_STEP_HEAD_NORM, PL_STEP_NO_ROLE, 0);
    if (rope) STEP(PL_STEP_ROPE, PL_STEP_NO_ROLE, 0);
    STEP(PL_STEP_KV_STORE, PL_STEP_NO_ROLE, 0);
    STEP(PL_STEP_ATTENTION, PL_STEP_NO_ROLE, 0);
    STEP(PL_STEP_ATTN_OUT, PL_L_WO, 0);
    STEP(PL_STEP_RESIDUAL, ROLE_IF(PL_L_ATTN_POST_NORM), 0);
    /* a parallel block's FFN reads the attention's normalised input, still in xn */
    if (!rc->parallel) STEP(PL_STEP_NORM, ROLE_IF(PL_L_FFN_NORM), rc->norm);
    STEP(has[PL_L_GATE_EXPS] ? PL_STEP_FFN_MOE : PL_STEP_FFN_GATED, PL_STEP_NO_ROLE, a->recipe.act);
    STEP(PL_STEP_RESIDUAL, ROLE_IF(PL_L_FFN_POST_NORM), 0);
#undef STEP
#undef ROLE_IF
    assert(n <= PL_MAX_STEPS);
    return n;
}

int pl_step_per_token(int kind)
{
    return kind == PL_STEP_QKV_BIAS || kind == PL_STEP_HEAD_NORM || kind == PL_STEP_ROPE ||
           kind == PL_STEP_KV_STORE || kind == PL_STEP_QK_NORM;
}

const char *pl_step_name(int kind)
{
    static const char *const names[PL_STEP_COUNT] = {
        [PL_STEP_NORM] = "norm",           [PL_STEP_QKV] = "qkv",
        [PL_STEP_QKV_BIAS] = "qkv_bias",   [PL_STEP_HEAD_NORM] = "head_norm",
        [PL_STEP_ROPE] = "rope",           [PL_STEP_KV_STORE] = "kv_store",
        [PL_STEP_ATTENTION] = "attention", [PL_STEP_ATTN_OUT] = "attn_out",
        [PL_STEP_RESIDUAL] = "residual",   [PL_STEP_FFN_GATED] = "ffn_gated",
        [PL_STEP_FFN_MOE] = "ffn_moe",     [PL_STEP_QK_NORM] = "qk_norm"};
    return kind >= 0 && kind < PL_STEP_COUNT && names[kind] ? names[kind] : "?";
}

int pl_arch_layer_is_local(const pl_arch *a, int64_t l)
{
    const int64_t p = a->recipe.swa_period;
    return p == 1 || (p > 1 && l % p < p - 1);
}

int pl_arch_layer_has_rope(const pl_arch *a, int64_t l, int windowed)
{
    const int64_t p = a->recipe.nope_period;
    if (p > 0 && (l + 1) % p == 0) return 0;
    return !(a->recipe.nope_global && windowed && !pl_arch_layer_is_local(a, l));
}

int pl_arch_walk(const pl_arch *a, int64_t n_layer, pl_arch_visit_fn fn, void *user)
{
    int rc;
    for (size_t i = 0; i < a->n_globals; i++)
        if (a->globals[i].role == PL_G_TOK_EMBD && (rc = fn(user, &a->globals[i], -1))) return rc;
    for (int64_t l = 0; l < n_layer; l++)
        for (size_t i = 0; i < a->n_layer; i++)
            if ((rc = fn(user, &a->layer[i], l))) return rc;
    for (size_t i = 0; i < a->n_globals; i++)
        if (a->globals[i].role != PL_G_TOK_EMBD && (rc = fn(user, &a->globals[i], -1))) return rc;
    return 0;
}

int64_t pl_arch_dim(const pl_arch_dims *d, int dim)
{
    switch (dim) {
    case PL_DIM_1:
        return 1;
    case PL_DIM_E:
        return d->E;
    case PL_DIM_F:
        return d->F;
    case PL_DIM_V:
        return d->V;
    case PL_DIM_D:
        return d->D;
    case PL_DIM_Q:
        return d->H * d->D;
    case PL_DIM_KV:
        return d->Hkv * d->D;
    case PL_DIM_QKV:
        return (d->H + 2 * d->Hkv) * d->D;
    case PL_DIM_F2:
        return 2 * d->F;
    case PL_DIM_ROT2:
        return d->n_rot / 2;
    case PL_DIM_FX:
        return d->FX;
    case PL_DIM_FS:
        return d->FS;
    case PL_DIM_X:
        return d->X;
    case PL_DIM_H:
        return d->H;
    }
    return 0;
}

int pl_arch_row_applies(const pl_arch_tensor *row, int64_t n_expert, int *required)
{
    const int moe = n_expert > 0;
    *required = row->required == PL_REQ_ALL || (row->required == PL_REQ_DENSE && !moe) ||
                (row->required == PL_REQ_MOE && moe);
    return !((row->required == PL_REQ_DENSE && moe) || (row->required == PL_REQ_MOE && !moe));
}

/* ---- keys under "<arch>." ---- */

/* Ranges keep scratch sizing and int32 positions sane; real models are far below them. */
#define NONE_HF NULL, PL_HF_NONE, NAN
#define G_      PL_W_GIVEN
#define UD_     PL_W_UNLESS_DEFAULT
static const pl_arch_key keys[] = {
    {PL_HP_CONTEXT_LENGTH, "context_length", PL_KEY_INT, OPT, 2048, 1, INT32_MAX,
     "max_position_embeddings", PL_HF_READ, NAN, G_},
    {PL_HP_EMBEDDING_LENGTH, "embedding_length", PL_KEY_INT, REQ, 0, 1, 1 << 16, "hidden_size",
     PL_HF_READ, NAN, G_},
    {PL_HP_BLOCK_COUNT, "block_count", PL_KEY_INT, REQ, 0, 1, 1024, "num_hidden_layers", PL_HF_READ,
     NAN, G_},
    {PL_HP_FEED_FORWARD_LENGTH, "feed_forward_length", PL_KEY_PER_LAYER, REQ, 0, 1, 1 << 18,
     "intermediate_size", PL_HF_READ, NAN, G_},
    {PL_HP_HEAD_COUNT, "attention.head_count", PL_KEY_PER_LAYER, REQ, 0, 1, 1024,
     "num_attention_heads", PL_HF_READ, NAN, G_},
    {PL_HP_HEAD_COUNT_KV, "attention.head_count_kv", PL_KEY_PER_LAYER, OPT, NAN, 1, 1024,
     "num_key_value_heads (else num_attention_heads; at most it)", PL_HF_DERIVED, NAN, G_},
    {PL_HP_KEY_LENGTH, "attention.key_length", PL_KEY_INT, OPT, NAN, 2, 4096,
     "head_dim (else hidden_size / num_attention_heads)", PL_HF_DERIVED, NAN, G_},
    {PL_HP_VALUE_LENGTH, "attention.value_length", PL_KEY_INT, OPT, NAN, 1, 4096,
     "head_dim: the key length", PL_HF_DERIVED, NAN, G_},
    {PL_HP_ROPE_DIMS, "rope.dimension_count", PL_KEY_INT, OPT, NAN, 2, 4096,
     "partial_rotary_factor x head_dim", PL_HF_DERIVED, NAN, G_},
    /* llama.cpp requires the epsilon too: a default would be a guess (1e-5 vs 1e-6) */
    {PL_HP_RMS_EPS, "attention.layer_norm_rms_epsilon", PL_KEY_FLOAT, REQ, 0, 1e-12, 1.0,
     "rms_norm_eps", PL_HF_READ, 1e-6, G_},
    {PL_HP_ROPE_FREQ_BASE, "rope.freq_base", PL_KEY_FLOAT, OPT, 10000.0, 1.0001, 1e12, "rope_theta",
     PL_HF_READ, 10000.0, G_},
    {PL_HP_VOCAB_SIZE, "vocab_size", PL_KEY_INT, OPT, NAN, 1, 1 << 22, "vocab_size", PL_HF_READ,
     NAN, G_},
    {PL_HP_ROPE_SCALING_TYPE, "rope.scaling.type", PL_KEY_STRING, OPT, 0, 0, 0,
     "rope_scaling / rope_parameters: rope_type (linear, yarn)", PL_HF_DERIVED, NAN, G_},
    {PL_HP_ROPE_SCALING_FACTOR, "rope.scaling.factor", PL_KEY_FLOAT, OPT, 0.0, 0.0, 1e6,
     "rope_scaling.factor", PL_HF_DERIVED, NAN, G_},
    {PL_HP_ROPE_SCALE_LINEAR, "rope.scale_linear", PL_KEY_FLOAT, OPT, 1.0, 1e-6, 1e6, NONE_HF, G_},
    {PL_HP_ROPE_ORIG_CTX, "rope.scaling.original_context_length", PL_KEY_INT, OPT, NAN, 1,
     INT32_MAX, "rope_scaling.original_max_position_embeddings", PL_HF_DERIVED, NAN, G_},
    {PL_HP_ROPE_ATTN_FACTOR, "rope.scaling.attn_factor", PL_KEY_FLOAT, OPT, 1.0, 1e-6, 1e6,
     "rope_scaling.attention_factor (longrope)", PL_HF_DERIVED, NAN, G_},
    {PL_HP_YARN_EXT_FACTOR, "rope.scaling.yarn_ext_factor", PL_KEY_FLOAT, OPT, -1.0, -1.0, 1e6,
     NONE_HF, G_},
    {PL_HP_YARN_ATTN_FACTOR, "rope.scaling.yarn_attn_factor", PL_KEY_FLOAT, OPT, 1.0, 1e-6, 1e6,
     NONE_HF, G_},
    {PL_HP_YARN_BETA_FAST, "rope.scaling.yarn_beta_fast", PL_KEY_FLOAT, OPT, 32.0, 0.0, 1e6,
     "rope_scaling.beta_fast", PL_HF_DERIVED, NAN, UD_},
    {PL_HP_YARN_BETA_SLOW, "rope.scaling.yarn_beta_slow", PL_KEY_FLOAT, OPT, 1.0, 0.0, 1e6,
     "rope_scaling.beta_slow", PL_HF_DERIVED, NAN, UD_},
    /* mixture-of-experts: 0 is a dense model; more where the recipe has experts */
    {PL_HP_EXPERT_COUNT, "expert_count", PL_KEY_INT, OPT, 0, 0, 1 << 12,
     "num_experts | num_local_experts", PL_HF_DERIVED, NAN, G_},
    {PL_HP_EXPERT_USED_COUNT, "expert_used_count", PL_KEY_INT, OPT, 0, 0, PL_MOE_MAX_USED,
     "num_experts_per_tok", PL_HF_DERIVED, NAN, G_},
    {PL_HP_CAUSAL, "attention.causal", PL_KEY_BOOL, OPT, 1, 0, 1, NONE_HF, G_},
    /* issue 49: plumb's own key (llama.cpp always rounds the range), written only when false */
    {PL_HP_YARN_TRUNCATE, "rope.scaling.yarn_truncate", PL_KEY_BOOL, OPT, 1, 0, 1,
     "rope_scaling.truncate (yarn; false: the correction range unrounded)", PL_HF_DERIVED, NAN,
     UD_},
};

const pl_arch_key *pl_arch_keys(size_t *n)
{
    *n = N_OF(keys);
    return keys;
}

const pl_arch_key *pl_arch_key_of_arch(const pl_arch *a, int hp)
{
    for (size_t i = 0; a && i < a->n_keys; i++)
        if (a->keys[i].hp == hp) return &a->keys[i];
    return pl_arch_key_of(hp);
}

const pl_arch_key *pl_arch_key_of(int hp)
{
    for (size_t i = 0; i < N_OF(keys); i++)
        if (keys[i].hp == hp) return &keys[i];
    return NULL;
}

/* ---- every other key: read elsewhere, or changing nothing ---- */

/* One list, so the rule is visible: a key in a GGUF file is either read and checked (the
 * architecture's keys above; these, by the part of plumb named), or listed here as changing
 * nothing that plumb computes. Anything else is refused at load (model.c), by name. A pattern
 * ending in '.' matches every key under it. */
static const struct {
    const char *key, *why;
} known[] = {
    {"general.architecture", "read: selects the architecture"},
    {"general.alignment", "read by the GGUF parser: the data section's alignment"},
    {"general.", "descriptive: name, author, license, file type, quantization version, ..."},
    {"tokenizer.ggml.model", "read by the tokenizer"},
    {"tokenizer.ggml.pre", "read by the tokenizer"},
    {"tokenizer.ggml.tokens", "read by the tokenizer"},
    {"tokenizer.ggml.scores", "read by the tokenizer"},
    {"tokenizer.ggml.token_type", "read by the tokenizer"},
    {"tokenizer.ggml.merges", "read by the tokenizer"},
    {"tokenizer.ggml.normalizer", "read by the tokenizer"},
    {"tokenizer.ggml.add_bos_token", "read by the tokenizer"},
    {"tokenizer.ggml.add_eos_token", "read by the tokenizer"},
    {"tokenizer.ggml.add_space_prefix", "read by the tokenizer"},
    {"tokenizer.ggml.bos_token_id", "read by the tokenizer"},
    {"tokenizer.ggml.eos_token_id", "read by the tokenizer"},
    {"tokenizer.ggml.eot_token_id", "read by the tokenizer"},
    {"tokenizer.ggml.eom_token_id", "read by the tokenizer"},
    {"tokenizer.ggml.unknown_token_id", "read by the tokenizer"},
    {"tokenizer.ggml.padding_token_id", "read by the tokenizer"},
    {"tokenizer.ggml.seperator_token_id", "read by the tokenizer"},
    {"tokenizer.chat_template", "read by the chat paths"},
    {"tokenizer.chat_template.", "named alternative templates (tool_use, rag): not rendered"},
    {"tokenizer.ggml.cls_token_id", "a special id for classifiers: not used in generation"},
    {"tokenizer.ggml.mask_token_id", "a special id for masked models: not used in generation"},
    {"tokenizer.ggml.prefix_token_id", "fill-in-the-middle ids: not used in generation"},
    {"tokenizer.ggml.suffix_token_id", "fill-in-the-middle ids: not used in generation"},
    {"tokenizer.ggml.middle_token_id", "fill-in-the-middle ids: not used in generation"},
    {"tokenizer.ggml.fim_pre_token_id", "fill-in-the-middle ids: not used in generation"},
    {"tokenizer.ggml.fim_suf_token_id", "fill-in-the-middle ids: not used in generation"},
    {"tokenizer.ggml.fim_mid_token_id", "fill-in-the-middle ids: not used in generation"},
    {"tokenizer.ggml.fim_pad_token_id", "fill-in-the-middle ids: not used in generation"},
    {"tokenizer.ggml.fim_rep_token_id", "fill-in-the-middle ids: not used in generation"},
    {"tokenizer.ggml.fim_sep_token_id", "fill-in-the-middle ids: not used in generation"},
    {"tokenizer.ggml.token_type_count", "BERT's segment count: not used by decoders"},
    {"tokenizer.ggml.add_sep_token", "BERT's separator: not used by decoders"},
    {"tokenizer.ggml.remove_extra_whitespaces",
     "llama.cpp applies it to UGM (T5) vocabularies only, which plumb refuses by model"},
    {"tokenizer.ggml.precompiled_charsmap",
     "llama.cpp applies it to UGM (T5) vocabularies only, which plumb refuses by model"},
    {"tokenizer.huggingface.json", "a copy of tokenizer.json: the ggml keys are what is read"},
    {"quantize.imatrix.", "how the importance matrix was made: its effect is in the weights"},
    {"split.no", "read: a split file's part number (only whole files load)"},
    {"split.count", "read: only a file of one part loads"},
    {"split.tensors.count", "read: only a file of one part loads"},
};

/* Keys under "<arch>." that change nothing. */
static const struct {
    const char *suffix, *why;
} arch_inert[] = {
    {"rope.scaling.finetuned", "whether the scaled model was fine-tuned: descriptive"},
    {"tensor_data_layout", "where the weights came from (e.g. 'Meta AI original pth'): "
                           "the permutation is already applied"},
};

int pl_key_known(const char *key, const char **why)
{
    for (size_t i = 0; i < N_OF(known); i++) {
        size_t n = strlen(known[i].key);
        int prefix = known[i].key[n - 1] == '.';
        if (prefix ? strncmp(key, known[i].key, n) == 0 : strcmp(key, known[i].key) == 0) {
            if (why) *why = known[i].why;
            return 1;
        }
    }
    return 0;
}

int pl_arch_key_inert(const char *suffix, const char **why)
{
    for (size_t i = 0; i < N_OF(arch_inert); i++)
        if (strcmp(suffix, arch_inert[i].suffix) == 0) {
            if (why) *why = arch_inert[i].why;
            return 1;
        }
    return 0;
}

/* ---- the public view (plumb.h) ---- */

static_assert(PL_ARCH_MAX_EXPERT_USED == PL_MOE_MAX_USED, "one limit on experts per token");
static_assert(PL_ARCH_T_EMBD == (int)PL_TK_EMBD && PL_ARCH_T_MATRIX_IN == (int)PL_TK_MATRIX_IN &&
                  PL_ARCH_T_MATRIX_OUT == (int)PL_TK_MATRIX_OUT &&
                  PL_ARCH_T_NORM == (int)PL_TK_NORM && PL_ARCH_T_BIAS == (int)PL_TK_BIAS &&
                  PL_ARCH_T_FACTORS == (int)PL_TK_FACTORS && PL_ARCH_T_ROUTER == (int)PL_TK_ROUTER,
              "pl_arch_tensor_kind mirrors enum pl_tensor_kind");

typedef struct desc_walk {
    pl_arch_tensor_desc *out;
    size_t cap, k;
    const pl_arch_dims *d;
    int tied;
} desc_walk;

static int desc_visit(void *user, const pl_arch_tensor *r, int64_t l)
{
    desc_walk *w = user;
    const int output = l < 0 && r->role == PL_G_OUTPUT;
    int required;
    if (!pl_arch_row_applies(r, w->d->X, &required)) return 0;
    if (output ? w->tied : !required) return 0;
    if (w->out && w->k < w->cap) {
        pl_arch_tensor_desc *o = &w->out[w->k];
        memset(o, 0, sizeof *o);
        if (l >= 0)
            snprintf(o->name, sizeof o->name, "blk.%lld.%s", (long long)l, r->gguf);
        else
            snprintf(o->name, sizeof o->name, "%s", r->gguf);
        o->n_dims = r->ne2 != PL_DIM_1 ? 3 : r->ne1 == PL_DIM_1 ? 1 : 2;
        o->ne[0] = pl_arch_dim(w->d, r->ne0);
        o->ne[1] = pl_arch_dim(w->d, r->ne1);
        o->ne[2] = pl_arch_dim(w->d, r->ne2);
        o->layer = l;
        o->kind = (pl_arch_tensor_kind)r->kind;
    }
    w->k++;
    return 0;
}

const char *pl_arch_list(void)
{
    return pl_arch_names();
}

const char *pl_arch_hf_list(void)
{
    return pl_arch_hf_names();
}

pl_status pl_arch_tensors(const char *arch, const pl_arch_shape *shape, pl_arch_tensor_desc *out,
                          size_t cap, size_t *n, pl_error *err)
{
    if (!arch || !shape || !n) return pl_fail(err, PL_ERR_INVALID_ARG, "arch, shape or n is NULL");
    *n = 0;
    const pl_arch *a = pl_arch_find(arch, strlen(arch));
    if (!a)
        return pl_fail(err, PL_ERR_UNSUPPORTED, "architecture '%.40s' is not one plumb runs (%s)",
                       arch, pl_arch_names());
    if (shape->n_embd < 1 || shape->n_layer < 1 || shape->n_head < 1 || shape->n_head_kv < 1 ||
        shape->n_ff < 1 || shape->n_vocab < 1 || shape->head_dim < 0 || shape->n_rot < 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "shape: n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab must be >= 1");
    pl_arch_dims d = {.E = shape->n_embd,
                      .F = shape->n_ff,
                      .V = shape->n_vocab,
                      .H = shape->n_head,
                      .Hkv = shape->n_head_kv};
    const int moe = a->recipe.moe;
    if (shape->n_expert < 0 || shape->n_expert > (1 << 12) ||
        (shape->n_expert > 0) != (shape->n_expert_used > 0) ||
        shape->n_expert_used > shape->n_expert || shape->n_expert_used > PL_MOE_MAX_USED ||
        shape->n_ff_exp < 0 || shape->n_ff_shexp < 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "shape: n_expert %lld, n_expert_used %lld must be 0 and 0 or 1 <= used <= "
                       "n_expert (used <= %d), expert widths >= 0",
                       (long long)shape->n_expert, (long long)shape->n_expert_used,
                       PL_MOE_MAX_USED);
    if ((moe == PL_MOE_NONE && shape->n_expert) || (moe == PL_MOE_REQUIRED && !shape->n_expert))
        return pl_fail(err, PL_ERR_INVALID_ARG, "shape: architecture '%s' %s experts", a->name,
                       moe == PL_MOE_NONE ? "has no" : "needs");
    d.X = shape->n_expert;
    d.FX = shape->n_ff_exp ? shape->n_ff_exp : shape->n_ff;
    d.FS = shape->n_ff_shexp ? shape->n_ff_shexp : shape->n_ff;
    d.D = shape->head_dim ? shape->head_dim : shape->n_embd / shape->n_head;
    d.n_rot = shape->n_rot ? shape->n_rot : d.D;
    desc_walk w = {.out = out, .cap = cap, .d = &d, .tied = shape->tied};
    pl_arch_walk(a, shape->n_layer, desc_visit, &w);
    const size_t k = w.k;
    *n = k;
    if (out && k > cap)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL, "%zu tensors do not fit in %zu entries", k,
                       cap);
    return pl_ok(err);
}
