/* wasm128.h — the wasm128 kernel set's functions (WebAssembly SIMD128; natively through
 * SIMDe), declared for set.c only; the engine reaches them through struct pl_kernels. */
#ifndef PLUMB_KERNELS_WASM128_H
#define PLUMB_KERNELS_WASM128_H

#include "kernels.h"

#ifndef PL_W_RELAXED
#define PL_W_RELAXED 0
#endif

#define PL_WASM128_MATMUL_ARGS                                                                     \
    float *restrict y, int64_t ldy, const void *restrict w, size_t w_row_bytes,                    \
        const void *restrict x, size_t x_row_bytes, int64_t K, int64_t r0, int64_t r1, int64_t T

/* matmul_q.c: 32-blocks against Q8_0, super-blocks against Q8_K. Compiled twice: plain
 * (_wasm128) and with PL_W_RELAXED (matmul_q_relaxed.c: _wasm128r, the relaxed integer dot);
 * PL_WQ names the flavour being compiled. */
#if PL_W_RELAXED
#define PL_WQ(f) f##_wasm128r
#else
#define PL_WQ(f) f##_wasm128
#endif
#define PL_WASM128_MATMUL_Q(suffix)                                                                \
    void matmul_q8_0_q8_0_##suffix(PL_WASM128_MATMUL_ARGS);                                        \
    void matmul_q4_0_q8_0_##suffix(PL_WASM128_MATMUL_ARGS);                                        \
    void matmul_q4_1_q8_0_##suffix(PL_WASM128_MATMUL_ARGS);                                        \
    void matmul_q5_0_q8_0_##suffix(PL_WASM128_MATMUL_ARGS);                                        \
    void matmul_q5_1_q8_0_##suffix(PL_WASM128_MATMUL_ARGS);                                        \
    void matmul_q4_k_q8_k_##suffix(PL_WASM128_MATMUL_ARGS);                                        \
    void matmul_q5_k_q8_k_##suffix(PL_WASM128_MATMUL_ARGS);                                        \
    void matmul_q6_k_q8_k_##suffix(PL_WASM128_MATMUL_ARGS);                                        \
    void matmul_iq4_nl_q8_0_##suffix(PL_WASM128_MATMUL_ARGS);                                      \
    void matmul_mxfp4_q8_0_##suffix(PL_WASM128_MATMUL_ARGS);                                       \
    void matmul_q2_k_q8_k_##suffix(PL_WASM128_MATMUL_ARGS);                                        \
    void matmul_q3_k_q8_k_##suffix(PL_WASM128_MATMUL_ARGS);                                        \
    void matmul_iq4_xs_q8_k_##suffix(PL_WASM128_MATMUL_ARGS);
PL_WASM128_MATMUL_Q(wasm128)
PL_WASM128_MATMUL_Q(wasm128r)
/* repack_relaxed.c: wasm128r's repacked layouts (4 rows interleaved, prepared activations) */
extern const pl_repack pl_repack_q4_0_wasm128r, pl_repack_q5_0_wasm128r, pl_repack_q8_0_wasm128r;
/* matmul_f.c: float weights against f32 activations */
void matmul_f32_wasm128(PL_WASM128_MATMUL_ARGS);
void matmul_f16_wasm128(PL_WASM128_MATMUL_ARGS);
void matmul_bf16_wasm128(PL_WASM128_MATMUL_ARGS);
/* quant.c: activation quantizers, bit-exact with ref */
void quantize_row_q8_0_wasm128(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q8_k_wasm128(void *restrict y, const float *restrict x, int64_t n);
/* ops.c */
void layernorm_wasm128(float *restrict y, const float *restrict x, const float *restrict w,
                       int64_t n, float eps);
void swiglu_oai_wasm128(float *restrict y, const float *restrict gate, const float *restrict up,
                        int64_t n, float alpha, float limit);
void rmsnorm_wasm128(float *restrict y, const float *restrict x, const float *restrict w, int64_t n,
                     float eps);
void rope_wasm128(float *restrict x, int64_t n_heads, int64_t D, int32_t pos,
                  const pl_rope_args *a);
void softmax_wasm128(float *restrict y, const float *restrict x, int64_t n);
void swiglu_wasm128(float *restrict y, const float *restrict gate, const float *restrict up,
                    int64_t n);
void geglu_wasm128(float *restrict y, const float *restrict gate, const float *restrict up,
                   int64_t n);
void softcap_wasm128(float *y, const float *x, int64_t n, float cap);
/* attention.c */
void attention_wasm128(float *restrict out, const pl_attn_args *a, int64_t h0, int64_t h1,
                       float *restrict scratch);

#endif
