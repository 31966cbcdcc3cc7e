/* avx2.h — the avx2 kernel set's functions (AVX2 + FMA + F16C, no AVX-512, no VNNI),
 * declared for set.c only; the engine reaches them through struct pl_kernels, never by name. */
#ifndef PLUMB_KERNELS_AVX2_H
#define PLUMB_KERNELS_AVX2_H

#include "kernels.h"

#define PL_AVX2_MATMUL_ARGS                                                                        \
    float *restrict y, int64_t ldy, const void *restrict w, size_t w_row_bytes,                    \
        const void *restrict x, size_t x_row_bytes, int64_t K, int64_t r0, int64_t r1, int64_t T

/* matmul_q.c: 32-blocks against Q8_0, super-blocks against Q8_K */
void matmul_q8_0_q8_0_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_q4_0_q8_0_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_q4_1_q8_0_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_q5_0_q8_0_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_q5_1_q8_0_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_q4_k_q8_k_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_q5_k_q8_k_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_q6_k_q8_k_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_q2_k_q8_k_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_q3_k_q8_k_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_iq4_xs_q8_k_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_iq4_nl_q8_0_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_mxfp4_q8_0_avx2(PL_AVX2_MATMUL_ARGS);
/* matmul_f.c: float weights against f32 activations */
void matmul_f32_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_f16_avx2(PL_AVX2_MATMUL_ARGS);
void matmul_bf16_avx2(PL_AVX2_MATMUL_ARGS);
/* repack.c: 8 rows interleaved (kernels.h pl_repack), bit-identical to matmul_q.c */
extern const pl_repack pl_repack_q4_0_avx2, pl_repack_q4_1_avx2, pl_repack_q5_0_avx2,
    pl_repack_q5_1_avx2, pl_repack_q8_0_avx2;
/* quant.c: activation quantizers, bit-exact with ref */
void quantize_row_q8_0_avx2(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q8_k_avx2(void *restrict y, const float *restrict x, int64_t n);

#endif
