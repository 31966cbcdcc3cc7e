/* kernels.h — the kernel table: one struct of function pointers per kernel set.
 * The engine calls kernels only through this table; kernels call nothing in engine/. */
#ifndef PLUMB_KERNELS_H
#define PLUMB_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "types.h"

/* Contract for every kernel (DESIGN.md): pure (output from inputs only; no allocation,
 * no threads, no globals), works on a slice, and is batch-invariant: the value of one
 * output element is computed by the same operations in the same order whatever the
 * slice, the batch size or the thread. */

/* Dimension letters used below:
 *   K  reduction length (columns of a weight row)     T  tokens in a batch
 *   R  output rows (weight rows)                       H  query heads, Hkv KV heads
 *   D  head dimension                                  N  KV entries, V vocab size */

/* y[0..n) = quantize(x[0..n)); n is a multiple of the type's block size. */
typedef void (*pl_quantize_row_fn)(void *restrict y, const float *restrict x, int64_t n);
/* y[0..n) = dequantize(x); n is a multiple of the type's block size. */
typedef void (*pl_dequantize_row_fn)(float *restrict y, const void *restrict x, int64_t n);

/* y[t * ldy + r] = sum_k W[r][k] * X[t][k]  for r in [r0, r1), t in [0, T).
 * w: weight rows of K elements of the weight type, w_row_bytes apart (row 0 at w).
 * x: T activation rows of K elements already in the weight type's dot type
 *    (F32 for F32/F16/BF16 weights, Q8_0 or Q8_K blocks otherwise), x_row_bytes apart.
 * The sum over k runs in one fixed order per (r, t), independent of r0, r1 and T. */
typedef void (*pl_matmul_fn)(float *restrict y, int64_t ldy, const void *restrict w,
                             size_t w_row_bytes, const void *restrict x, size_t x_row_bytes,
                             int64_t K, int64_t r0, int64_t r1, int64_t T);

/* y = x / sqrt(mean(x^2) + eps) * w, one row of n. */
typedef void (*pl_rmsnorm_fn)(float *restrict y, const float *restrict x, const float *restrict w,
                              int64_t n, float eps);

enum pl_rope_style {
    PL_ROPE_NORMAL = 0, /* rotate pairs (2i, 2i+1) — llama */
    PL_ROPE_NEOX = 1    /* rotate pairs (i, i + n_rot/2) — qwen2, qwen3 */
};
/* y = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * w, one row of n: LayerNorm with a
 * weight and no bias (Cohere's Command R7B, transformers' Cohere2LayerNorm). */
typedef void (*pl_layernorm_fn)(float *restrict y, const float *restrict x, const float *restrict w,
                                int64_t n, float eps);

/* RoPE parameters, ggml_rope_ext's. For pair i in [0, n_rot/2):
 *     theta_extrap = pos * freq_base^(-2i/n_rot) / freq_factors[i],
 *     theta_interp = freq_scale * theta_extrap;
 * ext_factor == 0: theta = theta_interp and mscale = attn_factor. Otherwise YaRN: with the
 * correction dims lo = max(0, floor(c(beta_fast))), hi = min(n_rot - 1, ceil(c(beta_slow)))
 * (with yarn_no_truncate: c(beta_fast) and c(beta_slow) as they are, clamped the same way),
 * c(b) = n_rot ln(n_ctx_orig / (2 pi b)) / (2 ln freq_base), the ramp
 * r = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1) mixes
 *     theta = theta_interp (1 - r ext_factor) + theta_extrap r ext_factor,
 *     mscale = attn_factor (1 + 0.1 ln(1 / freq_scale)).
 * The pair rotates by theta with cos and sin multiplied by mscale. */
typedef struct pl_rope_args {
    int64_t n_rot;    /* dims rotated per head (even, <= D); the rest pass through */
    float freq_base;  /* theta_i = pos * freq_base^(-2i/n_rot) / freq_factors[i] */
    float freq_scale; /* linear interpolation: 1/factor (1: none) */
    const float
        *freq_factors; /* n_rot/2 divisors (llama3 rope_freqs, phi3 longrope), NULL: all 1 */
    float ext_factor;  /* YaRN ramp mix (0: none) */
    float attn_factor; /* cos and sin are multiplied by this (1: none) */
    float beta_fast, beta_slow; /* YaRN correction range */
    int64_t n_ctx_orig;         /* YaRN: the original training context */
    enum pl_rope_style style;
    /* ---- issue 49 (gpt-oss) ---- */
    /* 1: YaRN's correction dims are not rounded (transformers' rope_parameters.truncate = false,
     * gpt-oss); 0: floor and ceil, as llama.cpp always rounds them */
    int yarn_no_truncate;
    /* NULL, or this call's (cos, sin) per pair, interleaved, for pairs [0, min(n_rot, D)/2) at
     * the call's pos, as rope_angle.h's pl_rope_fill makes them from the fields above: every set
     * rotates by these instead of computing them (the same bits; the caller computes a position's
     * angles once for all its layers and heads) */
    const double *cos_sin;
} pl_rope_args;
/* In place over one token's heads: x[h * D + ...] for h in [0, n_heads); the first a->n_rot
 * dims of each head rotate as pl_rope_args says, the rest pass. */
typedef void (*pl_rope_fn)(float *restrict x, int64_t n_heads, int64_t D, int32_t pos,
                           const pl_rope_args *a);

/* y = exp(x - max) / sum(exp(x - max)), one row of n. */
typedef void (*pl_softmax_fn)(float *restrict y, const float *restrict x, int64_t n);

/* Mixture-of-experts routing of one token over X experts: p[0..X) = softmax(logits) as the
 * set's softmax computes it; ids[0..U) the experts of the U largest p in descending order (ties:
 * the lower expert first); w[u] = p[ids[u]], divided by the sum of the U (in double, slot order,
 * rounded once) when norm. 1 <= U <= X; logits hold no NaN. */
typedef void (*pl_moe_route_fn)(int32_t *restrict ids, float *restrict w, float *restrict p,
                                const float *restrict logits, int64_t X, int64_t U, int norm);
/* y[i] = (..((w[0] x[0][i] + w[1] x[1][i]) + w[2] x[2][i]) ..) + w[U-1] x[U-1][i] for i < n:
 * each product rounded to float before its add, the adds in slot order. U >= 1; y overlaps no
 * row. (The experts' outputs combined by their router weights.) */
typedef void (*pl_weighted_sum_fn)(float *restrict y, const float *const *x,
                                   const float *restrict w, int64_t U, int64_t n);
/* Experts a token may use at most (expert_used_count). */
#define PL_MOE_MAX_USED 64
/* y = 1 / (1 + exp(-x)), n elements. */
typedef void (*pl_sigmoid_fn)(float *restrict y, const float *restrict x, int64_t n);
/* y = silu(gate) * up = gate / (1 + exp(-gate)) * up, n elements. */
typedef void (*pl_swiglu_fn)(float *restrict y, const float *restrict gate,
                             const float *restrict up, int64_t n);

/* gpt-oss's clamped SwiGLU (transformers' GptOssExperts._apply_gate, llama.cpp's swiglu_oai),
 * n elements: g = min(gate, limit), u = clamp(up, -limit, limit) (a NaN stays NaN),
 *     y = g sigmoid(alpha g) (u + 1)         (gpt-oss: alpha 1.702, limit 7) */
typedef void (*pl_swiglu_oai_fn)(float *restrict y, const float *restrict gate,
                                 const float *restrict up, int64_t n, float alpha, float limit);

/* y = gelu_tanh(gate) * up, gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))),
 * n elements: Gemma's gated unit (transformers' gelu_pytorch_tanh). */
typedef void (*pl_geglu_fn)(float *restrict y, const float *restrict gate, const float *restrict up,
                            int64_t n);

/* y[i] = cap * tanh(x[i] / cap), n elements, cap > 0 (Gemma 2: 50 on attention scores, 30 on
 * the final logits). y == x (in place) or the two do not overlap: hence no restrict. */
typedef void (*pl_softcap_fn)(float *y, const float *x, int64_t n, float cap);

/* Attention of T query tokens over N cached entries, grouped-query (query head h uses
 * KV head h / (H / Hkv)). Entry j is visible to query t iff
 *     kv_pos[j] <= q_pos[t]  and  (window == 0 || j < n_sinks || q_pos[t] - kv_pos[j] < window)
 *     and  (layer_window == 0 || q_pos[t] - kv_pos[j] < layer_window).
 * A query that sees no entry gets a zero output. With kv_sorted the kernels find the entries
 * a window excludes by binary search and never read them (nor their K/V rows). */
typedef struct pl_attn_args {
    int64_t T, H, Hkv, D, N;
    const float *q;        /* [T][H][D] */
    const int32_t *q_pos;  /* [T] */
    const void *k;         /* [N][Hkv][D], elements of kv_type */
    const void *v;         /* [N][Hkv][D], elements of kv_type */
    pl_type kv_type;       /* PL_TYPE_F32 or PL_TYPE_F16 */
    const int32_t *kv_pos; /* [N] */
    int64_t window;        /* 0: no window */
    int64_t n_sinks;       /* first n_sinks entries always visible (when causally allowed) */
    float scale;           /* usually 1/sqrt(D) */
    /* 0: none; else scores = softcap * tanh(scores / softcap) before the mask and softmax */
    float softcap;
    /* 0: none; else entry j is also visible only if q_pos[t] - kv_pos[j] < layer_window (the
     * layer's own sliding window, applied on top of the session's window/sinks rule: a sink
     * outside it is not seen either) — Gemma 2/3's local layers */
    int64_t layer_window;
    /* 1: the caller promises kv_pos[0..N) non-decreasing (a cache that is not a ring), so a
     * kernel may skip the entries a window excludes without reading them; 0: any order */
    int kv_sorted;
    /* ---- issue 49 (gpt-oss) ---- */
    /* NULL: none; else [H] learned sink logits: head h's softmax denominator gains
     * exp(sinks[h] - m), m the max over the visible scores and sinks[h] (a weight with no value
     * row: the outputs shrink by it). A query that sees no entry still gets zeros. */
    const float *sinks;
} pl_attn_args;
/* out[t][h][d] for query heads h in [h0, h1), all t. scratch holds PL_ATTN_SCRATCH(N, D)
 * floats. */
#define PL_ATTN_SCRATCH(N, D) (33 * ((size_t)(N) + 16) + 16 * (size_t)(D))
typedef void (*pl_attention_fn)(float *restrict out, const pl_attn_args *a, int64_t h0, int64_t h1,
                                float *restrict scratch);

/* ---- sampling primitives: pure; the random number is an argument ---- */
typedef struct pl_candidate {
    int32_t id;
    float logit;
    float p;
} pl_candidate;

/* logits[i] /= temp (temp > 0). */
typedef void (*pl_temperature_fn)(float *restrict logits, int64_t V, float temp);
/* llama.cpp semantics, for each distinct token in history[0..n) seen c times:
 * logit = logit > 0 ? logit / repeat : logit * repeat; logit -= c * freq + presence.
 * An infinite logit stays as it is; ids outside [0, V) are ignored. */
typedef void (*pl_penalties_fn)(float *restrict logits, int64_t V, const int32_t *restrict history,
                                int64_t n, float repeat, float freq, float presence);
/* Sorts c[0..n) by logit descending (ties: smaller id first) and sets p = softmax(logit). */
typedef void (*pl_cand_softmax_fn)(pl_candidate *restrict c, int64_t n);
/* On a list sorted by pl_cand_softmax_fn, return the new length (>= min_keep, <= n).
 * top_k keeps k (k <= 0: all); top_p keeps the shortest prefix whose mass >= p;
 * min_p keeps candidates with p >= min_p * p_max. p is not renormalised. */
typedef int64_t (*pl_top_k_fn)(pl_candidate *restrict c, int64_t n, int64_t k);
typedef int64_t (*pl_top_p_fn)(pl_candidate *restrict c, int64_t n, float p, int64_t min_keep);
typedef int64_t (*pl_min_p_fn)(pl_candidate *restrict c, int64_t n, float p, int64_t min_keep);
/* Index i of the first candidate whose cumulative p (renormalised over c[0..n)) exceeds
 * u * total, u in [0, 1). */
typedef int64_t (*pl_draw_fn)(const pl_candidate *restrict c, int64_t n, double u);

/* Repacked weights (DESIGN.md): a set may keep a type's rows interleaved in groups of
 * PL_REPACK_ROWS, a layout of its own, so that one activation load feeds several rows.
 * pack() writes the whole R x K matrix (rows src_row_bytes apart) into dst, size(K, R) bytes,
 * padding the last group with zero rows. matmul() has pl_matmul_fn's contract with w = dst
 * (w_row_bytes is ignored) and is bit-identical to the set's own matmul for the type. */
/* A layout may also want its activations in a form of its own: then x_row(K) gives the bytes
 * of one prepared row (at most PL_REPACK_X_ROW_MAX(K)) and x_prep() writes it from one row of
 * the weight type's dot type (K elements); matmul() then reads prepared rows (x_row_bytes
 * apart). Both NULL: matmul() reads the dot type's rows as they are. */
#define PL_REPACK_ROWS         8
#define PL_REPACK_X_ROW_MAX(K) (((size_t)(K) / 32 + 1) * 80)
typedef struct pl_repack {
    size_t (*size)(int64_t K, int64_t R);
    void (*pack)(void *restrict dst, const void *restrict src, size_t src_row_bytes, int64_t K,
                 int64_t R);
    pl_matmul_fn matmul;
    size_t (*x_row)(int64_t K);
    void (*x_prep)(void *restrict dst, const void *restrict src, int64_t K);
} pl_repack;

/* The expert matmul (ggml's mul_mat_id), one driver for every set over the set's dense matmul
 * mm: its own matmul[type], or a repacked layout's repack[type]->matmul. For every token t < T
 * and slot u < n_used, e = ids[t * n_used + u]:
 *   y[(t * n_used + u) * ldy + r] = sum_k W_e[r][k] X[t][k],   r in [r0, r1)
 * W_e: expert e's R x K matrix at w + e * w_expert_bytes, rows w_row_bytes apart, as mm reads it
 * (a repacked layout: each expert packed on its own, w_expert_bytes = repack->size(K, R)).
 * x: T rows as mm reads them (dot-type rows, or prepared rows for a layout with x_prep),
 * x_row_bytes apart (T * x_row_bytes bytes). Tokens are grouped by expert (experts ascending,
 * tokens ascending within one); an expert with one token runs mm on it in place, one with more
 * has its rows gathered into scratch (64-byte aligned), mm run once on them and the outputs
 * scattered: by mm's batch invariance every output row is the bits of mm on that token alone,
 * whatever T, the slice or the other tokens' ids. Duplicate ids in one token and experts with no
 * token are legal. scratch: pl_matmul_id_scratch(...) bytes, any alignment; only it and y's rows
 * [r0, r1) of the T * n_used used rows are written. Returns 0, or -1 with y untouched when an id
 * is outside [0, n_expert) or an argument is out of range (T, n_used < 0, n_expert, K < 1,
 * r0 < 0, r1 < r0, ldy < r1, x_row_bytes 0, a NULL pointer where there is work). Pure. */
int pl_matmul_id(pl_matmul_fn mm, float *restrict y, int64_t ldy, const void *restrict w,
                 size_t w_row_bytes, size_t w_expert_bytes, int64_t n_expert,
                 const void *restrict x, size_t x_row_bytes, const int32_t *restrict ids,
                 int64_t n_used, int64_t K, int64_t r0, int64_t r1, int64_t T,
                 void *restrict scratch);
/* Bytes of scratch pl_matmul_id needs for these arguments (T = 1: the grouping only), or
 * SIZE_MAX when they are out of range or the size overflows. */
size_t pl_matmul_id_scratch(int64_t T, int64_t n_used, int64_t n_expert, size_t x_row_bytes,
                            int64_t r0, int64_t r1);

/* The kernel families: the one list of them, in report order (the per-type ones first). A row is
 *   X(field, fn_type, SLOTS)
 * field: the family's name and its field in struct pl_kernels; fn_type: its typedef above; SLOTS:
 * ONE (one function) or PER_TYPE (an array indexed by pl_type, one entry per row of PL_TYPES).
 * Generated from it: struct pl_kernels' fields (below), the registry's family rows (resolving,
 * fallbacks, `plumb kernels`), the reference set (kernels/ref/set.c: a family whose ref kernel,
 * <field>_ref or per type its REF_<field> row, is missing does not compile) and the check that
 * every family has a conformance case named after it (conformance/test_ops.c). */
#define PL_KERNEL_FAMILIES(X)                                                                      \
    X(quantize_row, pl_quantize_row_fn, PER_TYPE)                                                  \
    X(dequantize_row, pl_dequantize_row_fn, PER_TYPE)                                              \
    X(matmul, pl_matmul_fn, PER_TYPE)                                                              \
    X(rmsnorm, pl_rmsnorm_fn, ONE)                                                                 \
    X(rope, pl_rope_fn, ONE)                                                                       \
    X(softmax, pl_softmax_fn, ONE)                                                                 \
    X(moe_route, pl_moe_route_fn, ONE)                                                             \
    X(weighted_sum, pl_weighted_sum_fn, ONE)                                                       \
    X(sigmoid, pl_sigmoid_fn, ONE)                                                                 \
    X(swiglu, pl_swiglu_fn, ONE)                                                                   \
    X(geglu, pl_geglu_fn, ONE)                                                                     \
    X(softcap, pl_softcap_fn, ONE)                                                                 \
    X(attention, pl_attention_fn, ONE)                                                             \
    X(temperature, pl_temperature_fn, ONE)                                                         \
    X(penalties, pl_penalties_fn, ONE)                                                             \
    X(cand_softmax, pl_cand_softmax_fn, ONE)                                                       \
    X(top_k, pl_top_k_fn, ONE)                                                                     \
    X(top_p, pl_top_p_fn, ONE)                                                                     \
    X(min_p, pl_min_p_fn, ONE)                                                                     \
    X(draw, pl_draw_fn, ONE)                                                                       \
    /* issue 49 (cohere2, gpt-oss): */                                                             \
    X(layernorm, pl_layernorm_fn, ONE)                                                             \
    X(swiglu_oai, pl_swiglu_oai_fn, ONE)

/* 1 for a PER_TYPE family, 0 for a ONE family (PL_KERNEL_PER_TYPE_##SLOTS). */
#define PL_KERNEL_PER_TYPE_ONE      0
#define PL_KERNEL_PER_TYPE_PER_TYPE 1

#define PL_KERNEL_FIELD_ONE(field, fn_type)      fn_type field;
#define PL_KERNEL_FIELD_PER_TYPE(field, fn_type) fn_type field[PL_TYPE_COUNT];
#define PL_KERNEL_FIELD(field, fn_type, slots)   PL_KERNEL_FIELD_##slots(field, fn_type)

struct pl_kernels {
    const char *name;       /* "ref", "avx2", "avx512", "wasm128", "wasm128r" */
    int (*supported)(void); /* 1 if this CPU can run the set */
    /* Indexed by pl_type; NULL: the type runs straight from the mapping (never a fallback: ref
     * has none). Not a family: a layout of the set's own. */
    const pl_repack *repack[PL_TYPE_COUNT];
    /* One field per family; per-type ones indexed by pl_type. NULL where the set leaves the
     * entry to the reference set. */
    PL_KERNEL_FAMILIES(PL_KERNEL_FIELD)
};

/* The reference set: portable scalar C, the definition of correct. */
extern const struct pl_kernels pl_kernels_ref;
#if PLUMB_X86_SETS
/* x86-64 sets, each compiled with its own target flags; supported() checks CPUID + XGETBV. */
extern const struct pl_kernels pl_kernels_avx2;
extern const struct pl_kernels pl_kernels_avx512;
#endif
#if PLUMB_WASM128
/* WebAssembly SIMD128 (natively through SIMDe: a correctness vehicle, chosen only by name). */
extern const struct pl_kernels pl_kernels_wasm128;
extern const struct pl_kernels pl_kernels_wasm128r; /* wasm128 + the relaxed integer dot */
#endif

#endif
