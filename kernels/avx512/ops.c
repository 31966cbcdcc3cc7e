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

/* gate / (1 + exp(-2z)) * up, -2z = g (-2 sqrt(2/pi)) (1 + 0.044715 g^2). */
static __m512 geglu16(__m512 g, __m512 up)
{
    const __m512 t =
        _mm512_fmadd_ps(_mm512_mul_ps(g, g), _mm512_set1_ps(0.044715f), _mm512_set1_ps(1.0f));
    const __m512 m2z = _mm512_mul_ps(_mm512_mul_ps(g, _mm512_set1_ps(-1.5957691216057308f)), t);
    return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), pl_avx512_exp(m2z))),
                         up);
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
        _mm512_storeu_ps(
            y + i, _mm512_mul_ps(c, pl_avx512_tanh(_mm512_div_ps(_mm512_loadu_ps(x + i), c))));
    if (i < n) {
        const __mmask16 m = lanes(n - i);
        const __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), c);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(c, pl_avx512_tanh(v)));
    }
}
