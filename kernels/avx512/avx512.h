/* avx512.h — the avx512 kernel set's functions (AVX-512 F/BW/VL/DQ + VNNI), declared for
 * set.c only; the engine reaches them through struct pl_kernels, never by name. */
#ifndef PLUMB_KERNELS_AVX512_H
#define PLUMB_KERNELS_AVX512_H

#include <immintrin.h>
#include <string.h>

#include "kernels.h"

/* The 8 bytes at p in every 64-bit lane: the repacked layouts' activation broadcast. */
static inline __m512i pl_avx512_bcast8(const void *p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi64(v);
}

#define PL_AVX512_MATMUL_ARGS                                                                      \
    float *restrict y, int64_t ldy, const void *restrict w, size_t w_row_bytes,                    \
        const void *restrict x, size_t x_row_bytes, int64_t K, int64_t r0, int64_t r1, int64_t T

/* matmul_q.c: 32-blocks against Q8_0, super-blocks against Q8_K */
void matmul_q8_0_q8_0_avx512(PL_AVX512_MATMUL_ARGS);
void matmul_q4_0_q8_0_avx512(PL_AVX512_MATMUL_ARGS);
void matmul_q4_1_q8_0_avx512(PL_AVX512_MATMUL_ARGS);
void matmul_q5_0_q8_0_avx512(PL_AVX512_MATMUL_ARGS);
void matmul_q5_1_q8_0_avx512(PL_AVX512_MATMUL_ARGS);
void matmul_q4_k_q8_k_avx512(PL_AVX512_MATMUL_ARGS);
void matmul_q5_k_q8_k_avx512(PL_AVX512_MATMUL_ARGS);
void matmul_q6_k_q8_k_avx512(PL_AVX512_MATMUL_ARGS);
/* matmul_f.c: float weights against f32 activations */
void matmul_f32_avx512(PL_AVX512_MATMUL_ARGS);
void matmul_f16_avx512(PL_AVX512_MATMUL_ARGS);
void matmul_bf16_avx512(PL_AVX512_MATMUL_ARGS);
/* repack.c: 8 rows interleaved (kernels.h pl_repack), bit-identical to matmul_q.c */
extern const pl_repack pl_repack_q4_0_avx512, pl_repack_q4_1_avx512, pl_repack_q5_0_avx512,
    pl_repack_q5_1_avx512, pl_repack_q8_0_avx512;
/* matmul_f.c: the float types copied into the repack arena (same rows, huge pages) */
extern const pl_repack pl_repack_f32_avx512, pl_repack_f16_avx512, pl_repack_bf16_avx512;
/* repack_k.c: the same for Q4_K and Q6_K, bit-identical to ref */
extern const pl_repack pl_repack_q4_k_avx512, pl_repack_q6_k_avx512;
/* attention.c: tiles of queries sharing each K/V row */
void attention_avx512(float *restrict out, const pl_attn_args *a, int64_t h0, int64_t h1,
                      float *restrict scratch);
/* ops.c: the gated GELU unit and soft-capping on 16 lanes (avx2's algorithms) */
void geglu_avx512(float *restrict y, const float *restrict gate, const float *restrict up,
                  int64_t n);
void softcap_avx512(float *y, const float *x, int64_t n, float cap);
/* quant.c: activation quantizers, bit-exact with ref */
void quantize_row_q8_0_avx512(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q8_k_avx512(void *restrict y, const float *restrict x, int64_t n);

#endif
