/* ops.c — geglu, softcap and rope on 512-bit vectors (AVX-512 F): the avx2 algorithms (exp,
 * tanh, the same operations in the same order per element), 16 lanes at a time, tails under a
 * mask; rope's rotation in 8 double lanes. Not rmsnorm, softmax or swiglu: the avx512 table
 * keeps avx2's for those.
 *
 * Each lane runs exactly the operations of kernels/avx2/ops.h pl_avx2_exp / pl_avx2_tanh and
 * of avx2/ops.c geglu8 / softcap, so the two sets agree bit for bit and share ref's bounds
 * (kernels/ref/ops.c, checked in conformance/test_ops.c). */
#include <immintrin.h>

#include "avx512.h"
#include "rope_angle.h"

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

/* RoPE bit for bit as ref (avx2/ops.c rope_avx2 says how): rope_angle.h's cos and sin in scalar
 * double once per call, the rotation in double, eight pairs (neox) or four (normal) at a time,
 * the last ones under a mask with the same operations. */
#define ROPE_CHUNK 64
void rope_avx512(float *restrict x, int64_t n_heads, int64_t D, int32_t pos, const pl_rope_args *a)
{
    const pl_rope_plan p = pl_rope_plan_of(a, D);
    const int neox = a->style == PL_ROPE_NEOX;
    double c[ROPE_CHUNK], s[ROPE_CHUNK], cd[2 * ROPE_CHUNK], sd[2 * ROPE_CHUNK];
    for (int64_t i0 = 0; i0 < p.half; i0 += ROPE_CHUNK) {
        const int64_t n = p.half - i0 < ROPE_CHUNK ? p.half - i0 : ROPE_CHUNK;
        pl_rope_chunk(&p, a, pos, i0, n, c, s, cd, sd);
        for (int64_t h = 0; h < n_heads; h++) {
            float *xh = x + h * D;
            if (neox) {
                float *xa = xh + i0, *xb = xh + i0 + p.half;
                for (int64_t k = 0; k < n; k += 8) {
                    const __mmask8 m =
                        n - k >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - k)) - 1);
                    const __m512d va = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, xa + k));
                    const __m512d vb = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, xb + k));
                    const __m512d vc = _mm512_maskz_loadu_pd(m, c + k);
                    const __m512d vs = _mm512_maskz_loadu_pd(m, s + k);
                    const __m512d ya = _mm512_sub_pd(_mm512_mul_pd(va, vc), _mm512_mul_pd(vb, vs));
                    const __m512d yb = _mm512_add_pd(_mm512_mul_pd(va, vs), _mm512_mul_pd(vb, vc));
                    _mm256_mask_storeu_ps(xa + k, m, _mm512_cvtpd_ps(ya));
                    _mm256_mask_storeu_ps(xb + k, m, _mm512_cvtpd_ps(yb));
                }
            } else {
                float *xp = xh + 2 * i0;
                for (int64_t e = 0; e < 2 * n; e += 8) { /* e: float index, 4 pairs a vector */
                    const int64_t r = 2 * n - e;
                    const __mmask8 m = r >= 8 ? (__mmask8)0xff : (__mmask8)((1u << r) - 1);
                    const __m512d v = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, xp + e));
                    const __m512d sw = _mm512_permute_pd(v, 0x55); /* (b0, a0, b1, a1, ...) */
                    const __m512d y =
                        _mm512_add_pd(_mm512_mul_pd(v, _mm512_maskz_loadu_pd(m, cd + e)),
                                      _mm512_mul_pd(sw, _mm512_maskz_loadu_pd(m, sd + e)));
                    _mm256_mask_storeu_ps(xp + e, m, _mm512_cvtpd_ps(y));
                }
            }
        }
    }
}
