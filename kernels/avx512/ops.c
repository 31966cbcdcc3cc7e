/* ops.c — geglu and softcap on 512-bit vectors (AVX-512 F): the avx2 algorithms (exp, tanh,
 * the same operations in the same order per element), 16 lanes at a time, tails under a mask.
 * Not rmsnorm, softmax or swiglu: the avx512 table keeps avx2's for those.
 *
 * Each lane runs exactly the operations of kernels/avx2/ops.h pl_avx2_exp / pl_avx2_tanh and
 * of avx2/ops.c geglu8 / softcap, so the two sets agree bit for bit and share ref's bounds
 * (kernels/ref/ops.c, checked in conformance/test_ops.c). */
#include <immintrin.h>

#include "avx512.h"

/* Lanes [0, rem) of 16. */
static __mmask16 lanes(int64_t rem)
{
    return rem >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << rem) - 1);
}

/* pl_avx2_exp on 16 lanes: clamp to [-110, 90], n = round(x log2 e), Cody-Waite reduction,
 * Taylor degree 7 by Horner in FMA, 2^n applied as 2^n1 * 2^n2 (avx2/ops.h has the budget). */
static __m512 exp16(__m512 x)
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
static __m512 tanh16(__m512 a)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 x = _mm512_abs_ps(a);
    const __m512 e = exp16(_mm512_mul_ps(_mm512_set1_ps(-2.0f), x));
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

/* gate / (1 + exp(-2z)) * up, -2z = g (-2 sqrt(2/pi)) (1 + 0.044715 g^2). */
static __m512 geglu16(__m512 g, __m512 up)
{
    const __m512 t =
        _mm512_fmadd_ps(_mm512_mul_ps(g, g), _mm512_set1_ps(0.044715f), _mm512_set1_ps(1.0f));
    const __m512 m2z = _mm512_mul_ps(_mm512_mul_ps(g, _mm512_set1_ps(-1.5957691216057308f)), t);
    return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(m2z))), up);
}

/* y = gelu_tanh(gate) * up. Bound: ref's (geglu_ref), by avx2/ops.c geglu_avx2's argument. */
void geglu_avx512(float *restrict y, const float *restrict gate, const float *restrict up,
                  int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, geglu16(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
    if (i < n) {
        const __mmask16 m = lanes(n - i);
        const __m512 v =
            geglu16(_mm512_maskz_loadu_ps(m, gate + i), _mm512_maskz_loadu_ps(m, up + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

/* y = cap * tanh(x / cap); y == x allowed. Bound: ref's (softcap_ref), by softcap_avx2's. */
void softcap_avx512(float *y, const float *x, int64_t n, float cap)
{
    const __m512 c = _mm512_set1_ps(cap);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_mul_ps(c, tanh16(_mm512_div_ps(_mm512_loadu_ps(x + i), c))));
    if (i < n) {
        const __mmask16 m = lanes(n - i);
        const __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), c);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(c, tanh16(v)));
    }
}
