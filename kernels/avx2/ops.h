/* ops.h — the 256-bit (AVX2 + FMA + F16C) non-matmul kernels, declared for the avx2 and
 * avx512 tables, plus the vector exp they share. Not the matmuls; not AVX-512 code. */
#ifndef PLUMB_KERNELS_AVX2_OPS_H
#define PLUMB_KERNELS_AVX2_OPS_H

#include "kernels.h"

/* ops.c */
void rmsnorm_avx2(float *restrict y, const float *restrict x, const float *restrict w, int64_t n,
                  float eps);
void layernorm_avx2(float *restrict y, const float *restrict x, const float *restrict w, int64_t n,
                    float eps);
void swiglu_oai_avx2(float *restrict y, const float *restrict gate, const float *restrict up,
                     int64_t n, float alpha, float limit);
void rope_avx2(float *restrict x, int64_t n_heads, int64_t D, int32_t pos, const pl_rope_args *a);
void softmax_avx2(float *restrict y, const float *restrict x, int64_t n);
void swiglu_avx2(float *restrict y, const float *restrict gate, const float *restrict up,
                 int64_t n);
void geglu_avx2(float *restrict y, const float *restrict gate, const float *restrict up, int64_t n);
void softcap_avx2(float *y, const float *x, int64_t n, float cap);
/* attention.c */
void attention_avx2(float *restrict out, const pl_attn_args *a, int64_t h0, int64_t h1,
                    float *restrict scratch);

/* ---- exp of 8 floats, for the kernel files above (compiled with -mavx2 -mfma) ----
 *
 * exp(x) = 2^n * e^r,  n = round(x log2 e),  r = x - n ln2,  |r| <= ln2/2 + 6e-6 < 0.3467.
 * Cody-Waite: ln2 = L_hi + L_lo, L_hi = float(ln2). With x clamped to [-110, 90], |n| <= 159
 * and x - n L_hi is a multiple of 2^-25 below 0.5 in magnitude (|x| >= 0.34 when n != 0), so
 * the first FMA is exact; the second rounds once (<= u |r|) and L_lo's own rounding costs
 * <= 159 * 2^-49. e^r: Taylor to degree 7 (coefficients 1/k!), Horner in FMA.
 * Measured over every float in [-111, 90.5] against double exp: <= 1.33 u.
 * Error budget, relative to e^x, u = 2^-24:
 *   truncation |r|^8 / 8! * e^(2|r|)                         <= 0.18 u
 *   Horner: u |P0| + |r| u |P1| + r^2 u |P2| + ... over P0 >= 0.707  <= 1.70 u
 *   coefficient rounding (1/6, 1/24, ...: each u relative)           <= 0.01 u
 *   reduced argument r rounded (e^(r + d) = e^r (1 + d))              <= 0.35 u
 *   total                                                            <= 2.3 u
 * 2^n: n = n1 + n2 with n1 = floor(n / 2), both in [-80, 65], so p * 2^n1 is exact and
 * p * 2^n1 * 2^n2 rounds once: exact scaling in the normal range, one correct rounding
 * into the subnormals (absolute <= 2^-150), +inf past ln(FLT_MAX), +0 below -103.98.
 * NaN propagates (the clamp keeps it). Every lane runs the same operations. */
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

/* e^r * 2^nf for |r| < 0.3467, nf integral in [-159, 130]: the polynomial and the scaling. */
static inline __m256 pl_avx2_exp_tail(__m256 nf, __m256 r)
{
    __m256 p = _mm256_set1_ps(0x1.a01a02p-13f); /* 1/7!; each 1/k! rounded to float */
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.6c16c2p-10f)); /* 1/6! */
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.111112p-7f));  /* 1/5! */
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.555556p-5f));  /* 1/4! */
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.555556p-3f));  /* 1/3! */
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i n = _mm256_cvtps_epi32(nf); /* exact: nf is integral, |nf| <= 159 */
    const __m256i n1 = _mm256_srai_epi32(n, 1), n2 = _mm256_sub_epi32(n, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* Clamps *x to [-110, 90] (NaN kept: the NaN operand is second); returns round(x log2 e). */
static inline __m256 pl_avx2_exp_reduce(__m256 *x)
{
    *x = _mm256_min_ps(_mm256_set1_ps(90.0f), _mm256_max_ps(_mm256_set1_ps(-110.0f), *x));
    return _mm256_round_ps(_mm256_mul_ps(*x, _mm256_set1_ps(0x1.715476p+0f)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

static inline __m256 pl_avx2_exp(__m256 x)
{
    const __m256 nf = pl_avx2_exp_reduce(&x);
    __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(0x1.62e43p-1f), x); /* L_hi: exact */
    r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(-0x1.05c610p-29f), r);     /* L_lo */
    return pl_avx2_exp_tail(nf, r);
}

/* exp(x + dx), dx the rounding error of a float x (|dx| <= u |x|): dx joins the reduced
 * argument, one more rounding of <= u |r|, so within 2.6 u. Where x is clamped (or NaN) dx is
 * dropped: e^x is 0 or +inf there whatever dx is. */
static inline __m256 pl_avx2_exp_plus(__m256 x, __m256 dx)
{
    const __m256 x0 = x;
    const __m256 nf = pl_avx2_exp_reduce(&x);
    dx = _mm256_and_ps(dx, _mm256_cmp_ps(x, x0, _CMP_EQ_OQ));
    __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(0x1.62e43p-1f), x);
    r = _mm256_add_ps(r, dx);
    r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(-0x1.05c610p-29f), r);
    return pl_avx2_exp_tail(nf, r);
}

/* tanh of 8 floats, odd, within 5 u of tanh (relative), +-1 where exp(-2|a|) < 2^-25, NaN kept.
 * |a| < 0.3: a + a^3 p(a^2), p the Taylor series of (tanh a - a) / a^3 to a^10 (coefficients
 * rounded to float): the first dropped term is < 1e-10 a, the a^3 p part is < 0.031 a, so its
 * roundings cost < 0.2 u and the final FMA u: <= 1.3 u.
 * |a| >= 0.3: (1 - e) / (1 + e), e = exp(-2|a|) <= 0.549 within 2.3 u (2|a| is exact):
 * 1 - e carries e's error times e / (1 - e) <= 1.22 (2.8 u) plus u, 1 + e u, the division u:
 * <= 5 u. Both branches run in every lane; the blend picks one (deterministic per element). */
static inline __m256 pl_avx2_tanh(__m256 a)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    const __m256 x = _mm256_andnot_ps(sign, a);
    const __m256 e = pl_avx2_exp(_mm256_mul_ps(_mm256_set1_ps(-2.0f), x));
    const __m256 big = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
    const __m256 x2 = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(3.5921280365724810e-3f);                   /* 21844/6081075 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-8.8632355299021966e-3f)); /* -1382/155925 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.1869488536155203e-2f));  /* 62/2835 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-5.3968253968253968e-2f)); /* -17/315 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(1.3333333333333333e-1f));  /* 2/15 */
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-3.3333333333333333e-1f)); /* -1/3 */
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(x2, x), p, x);
    const __m256 t =
        _mm256_blendv_ps(big, small, _mm256_cmp_ps(x, _mm256_set1_ps(0.3f), _CMP_LT_OQ));
    return _mm256_or_ps(t, _mm256_and_ps(a, sign));
}
#endif

#endif
