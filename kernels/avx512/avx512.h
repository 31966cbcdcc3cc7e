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

/* pl_avx2_exp on 16 lanes: clamp to [-110, 90], n = round(x log2 e), Cody-Waite reduction,
 * Taylor degree 7 by Horner in FMA, 2^n applied as 2^n1 * 2^n2 (avx2/ops.h has the budget). */
static inline __m512 pl_avx512_exp(__m512 x)
{
    x = _mm512_min_ps(_mm512_set1_ps(90.0f), _mm512_max_ps(_mm512_set1_ps(-110.0f), x));
    const __m512 nf = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(0x1.715476p+0f)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0x1.62e43p-1f), x);
    r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(-0x1.05c610p-29f), r);
    __m512 p = _mm512_set1_ps(0x1.a01a02p-13f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.6c16c2p-10f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.111112p-7f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555556p-5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555556p-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    const __m512i n = _mm512_cvtps_epi32(nf);
    const __m512i n1 = _mm512_srai_epi32(n, 1), n2 = _mm512_sub_epi32(n, n1);
    const __m512i bias = _mm512_set1_epi32(127);
    const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
    const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
    return _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
}

/* pl_avx2_tanh on 16 lanes: Taylor to a^13 below |a| = 0.3, (1 - e) / (1 + e) above. */
static inline __m512 pl_avx512_tanh(__m512 a)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 x = _mm512_abs_ps(a);
    const __m512 e = pl_avx512_exp(_mm512_mul_ps(_mm512_set1_ps(-2.0f), x));
    const __m512 big = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
    const __m512 x2 = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(3.5921280365724810e-3f);
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-8.8632355299021966e-3f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(2.1869488536155203e-2f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-5.3968253968253968e-2f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(1.3333333333333333e-1f));
    p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-3.3333333333333333e-1f));
    const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(x2, x), p, x);
    const __mmask16 lt = _mm512_cmp_ps_mask(x, _mm512_set1_ps(0.3f), _CMP_LT_OQ);
    const __m512 t = _mm512_mask_blend_ps(lt, big, small);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    return _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(t), _mm512_and_si512(_mm512_castps_si512(a), sign)));
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
/* repack_k.c: the same for Q4_K, Q5_K and Q6_K, bit-identical to ref */
extern const pl_repack pl_repack_q4_k_avx512, pl_repack_q5_k_avx512, pl_repack_q6_k_avx512;
/* repack_k.c: Q2_K, Q3_K, IQ4_XS; repack.c: IQ4_NL and MXFP4; bit-identical to ref */
extern const pl_repack pl_repack_q2_k_avx512, pl_repack_q3_k_avx512, pl_repack_iq4_xs_avx512,
    pl_repack_iq4_nl_avx512, pl_repack_mxfp4_avx512;
/* attention.c: tiles of queries sharing each K/V row */
void attention_avx512(float *restrict out, const pl_attn_args *a, int64_t h0, int64_t h1,
                      float *restrict scratch);
/* ops.c: the gated GELU unit and soft-capping on 16 lanes (avx2's algorithms) */
void geglu_avx512(float *restrict y, const float *restrict gate, const float *restrict up,
                  int64_t n);
void softcap_avx512(float *y, const float *x, int64_t n, float cap);
/* ops.c: RoPE bit for bit as ref, the rotation in 8 double lanes */
void rope_avx512(float *restrict x, int64_t n_heads, int64_t D, int32_t pos, const pl_rope_args *a);
/* quant.c: activation quantizers, bit-exact with ref */
void quantize_row_q8_0_avx512(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q8_k_avx512(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q4_k_avx512(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q5_k_avx512(void *restrict y, const float *restrict x, int64_t n);
void quantize_row_q6_k_avx512(void *restrict y, const float *restrict x, int64_t n);

#endif
