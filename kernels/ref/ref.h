/* ref.h — the reference kernel set's functions: scalar C, no intrinsics, no threads.
 * Declared here only so set.c can fill the table; the engine never calls them by name. */
#ifndef PLUMB_KERNELS_REF_H
#define PLUMB_KERNELS_REF_H

#include "kernels.h"

/* quant.c: row quantizers and dequantizers (ggml's reference algorithms, bit-exact). */
void quantize_row_f32_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_f16_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_bf16_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q4_0_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q4_1_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q5_0_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q5_1_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q8_0_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q4_k_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q5_k_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q6_k_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q8_k_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q2_k_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q3_k_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_iq4_nl_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_iq4_xs_ref(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_mxfp4_ref(void *restrict y, const float *restrict x, int64_t n);

/* Q4_K / Q5_K super-blocks from their 8 sub-blocks' fits (scales, mins: the negated offsets,
 * L: the fit's quants, re-quantized here in place): the part of quantize_row_q4_k_ref /
 * quantize_row_q5_k_ref after the fits, shared with the sets that fit several sub-blocks at
 * once (bit-identical fits give bit-identical blocks). A block of non-finite input is
 * pl_ref_k_nonfinite_block: zeros with d = dmin = NaN. */
void pl_ref_q4_k_block(void *b, const float *x, const float scales[8], const float mins[8],
                       uint8_t L[256]);
void pl_ref_q5_k_block(void *b, const float *x, const float scales[8], const float mins[8],
                       uint8_t L[256]);
void pl_ref_k_nonfinite_block(void *b, size_t size);
/* Q6_K from its 16 sub-blocks' fits (ggml's make_qx_quants, nmax 32: scales, offset quants L,
 * re-quantized here in place). */
void pl_ref_q6_k_block(void *b, const float *x, const float scales[16], int8_t L[256]);

void dequantize_row_f32_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_f16_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_bf16_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q4_0_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q4_1_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q5_0_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q5_1_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q8_0_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q4_k_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q5_k_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q6_k_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q8_k_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q2_k_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_q3_k_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_iq4_nl_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_iq4_xs_ref(float *restrict y, const void *restrict x, int64_t n);
void dequantize_row_mxfp4_ref(float *restrict y, const void *restrict x, int64_t n);

/* matmul.c: weights of each type against activations in the type's dot type. */
#define PL_REF_MATMUL_ARGS                                                                         \
    float *restrict y, int64_t ldy, const void *restrict w, size_t w_row_bytes,                    \
        const void *restrict x, size_t x_row_bytes, int64_t K, int64_t r0, int64_t r1, int64_t T
void matmul_f32_ref(PL_REF_MATMUL_ARGS);
void matmul_f16_ref(PL_REF_MATMUL_ARGS);
void matmul_bf16_ref(PL_REF_MATMUL_ARGS);
void matmul_q4_0_q8_0_ref(PL_REF_MATMUL_ARGS);
void matmul_q4_1_q8_0_ref(PL_REF_MATMUL_ARGS);
void matmul_q5_0_q8_0_ref(PL_REF_MATMUL_ARGS);
void matmul_q5_1_q8_0_ref(PL_REF_MATMUL_ARGS);
void matmul_q8_0_q8_0_ref(PL_REF_MATMUL_ARGS);
void matmul_q4_k_q8_k_ref(PL_REF_MATMUL_ARGS);
void matmul_q5_k_q8_k_ref(PL_REF_MATMUL_ARGS);
void matmul_q6_k_q8_k_ref(PL_REF_MATMUL_ARGS);
void matmul_q8_k_q8_k_ref(PL_REF_MATMUL_ARGS);
void matmul_q2_k_q8_k_ref(PL_REF_MATMUL_ARGS);
void matmul_q3_k_q8_k_ref(PL_REF_MATMUL_ARGS);
void matmul_iq4_nl_q8_0_ref(PL_REF_MATMUL_ARGS);
void matmul_iq4_xs_q8_k_ref(PL_REF_MATMUL_ARGS);
void matmul_mxfp4_q8_0_ref(PL_REF_MATMUL_ARGS);

/* ops.c */
void rmsnorm_ref(float *restrict y, const float *restrict x, const float *restrict w, int64_t n,
                 float eps);
void layernorm_ref(float *restrict y, const float *restrict x, const float *restrict w, int64_t n,
                   float eps);
void swiglu_oai_ref(float *restrict y, const float *restrict gate, const float *restrict up,
                    int64_t n, float alpha, float limit);
void rope_ref(float *restrict x, int64_t n_heads, int64_t D, int32_t pos, const pl_rope_args *a);
void softmax_ref(float *restrict y, const float *restrict x, int64_t n);
void moe_route_ref(int32_t *restrict ids, float *restrict w, float *restrict p,
                   const float *restrict logits, int64_t X, int64_t U, int norm);
void weighted_sum_ref(float *restrict y, const float *const *x, const float *restrict w, int64_t U,
                      int64_t n);
void sigmoid_ref(float *restrict y, const float *restrict x, int64_t n);
void geglu_ref(float *restrict y, const float *restrict gate, const float *restrict up, int64_t n);
void softcap_ref(float *y, const float *x, int64_t n, float cap);
void swiglu_ref(float *restrict y, const float *restrict gate, const float *restrict up, int64_t n);
/* attention.c */
void attention_ref(float *restrict out, const pl_attn_args *a, int64_t h0, int64_t h1,
                   float *restrict scratch);
/* sample.c */
void temperature_ref(float *restrict logits, int64_t V, float temp);
void penalties_ref(float *restrict logits, int64_t V, const int32_t *restrict history, int64_t n,
                   float repeat, float freq, float presence);
void cand_softmax_ref(pl_candidate *restrict c, int64_t n);
int64_t top_k_ref(pl_candidate *restrict c, int64_t n, int64_t k);
int64_t top_p_ref(pl_candidate *restrict c, int64_t n, float p, int64_t min_keep);
int64_t min_p_ref(pl_candidate *restrict c, int64_t n, float p, int64_t min_keep);
int64_t draw_ref(const pl_candidate *restrict c, int64_t n, double u);

#endif
