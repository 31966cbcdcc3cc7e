/* ops.c — rmsnorm, rope, softmax, swiglu, geglu and softcap in 256-bit AVX2 + FMA (rmsnorm,
 * softmax and swiglu shared by the avx2 and avx512 tables). Not AVX-512.
 *
 * Bounds are ref's (kernels/ref/ops.c, checked in conformance/test_ops.c); u = 2^-24.
 * Lanes never mix elements except in the reductions, whose order is fixed by n alone, and
 * tails run the same vector code under a mask: each output is the same whatever the row's
 * neighbours, the slice or the thread. */
#include <math.h>

#include "ops.h"
#include "rope_angle.h"

/* Lanes [0, rem) on, the rest off (all on for 8 <= rem < 2^31): a tail's mask. */
static __m256i tail_mask(int64_t rem)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rem), idx);
}

/* ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)): a fixed tree. */
static float hsum8(__m256 v)
{
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

/* y = x / sqrt(mean(x^2) + eps) * w.
 * Bound: |y - y_ref| <= (n + 8) u |y_ref| + FLT_MIN.
 * Why: squares are exact in double and summed by FMA in 16 double lanes (relative error
 * <= n 2^-53), the scale is computed in double, and y = (float)(x * s * w) in double, so the
 * only float rounding is the last one: <= u + n 2^-52, and |x| up to FLT_MAX cannot overflow. */
void rmsnorm_avx2(float *restrict y, const float *restrict x, const float *restrict w, int64_t n,
                  float eps)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256d x0 = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        __m256d x1 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
        __m256d x2 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8));
        __m256d x3 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12));
        a0 = _mm256_fmadd_pd(x0, x0, a0);
        a1 = _mm256_fmadd_pd(x1, x1, a1);
        a2 = _mm256_fmadd_pd(x2, x2, a2);
        a3 = _mm256_fmadd_pd(x3, x3, a3);
    }
    for (; i + 4 <= n; i += 4) {
        __m256d x0 = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        a0 = _mm256_fmadd_pd(x0, x0, a0);
    }
    const __m256d a = _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
    double l[4];
    _mm256_storeu_pd(l, a);
    double ss = (l[0] + l[1]) + (l[2] + l[3]);
    for (; i < n; i++) ss += (double)x[i] * (double)x[i];
    const double s = n > 0 ? 1.0 / sqrt(ss / (double)n + (double)eps) : 0.0;

    const __m256d sv = _mm256_set1_pd(s);
    i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d xv = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        __m256d wv = _mm256_cvtps_pd(_mm_loadu_ps(w + i));
        _mm_storeu_ps(y + i, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_mul_pd(xv, sv), wv)));
    }
    for (; i < n; i++) y[i] = (float)((double)x[i] * s * (double)w[i]);
}

/* x == m ? 1 : exp(x - m), x <= m. x - m = s + ds exactly (TwoSum; ds is dropped with s out of
 * exp's range), so exp sees no rounding of the gap. The blend covers m = +-inf (x - m NaN). */
static __m256 softmax_e(__m256 x, __m256 m)
{
    const __m256 s = _mm256_sub_ps(x, m), b = _mm256_sub_ps(s, x);
    const __m256 ds = _mm256_sub_ps(_mm256_sub_ps(x, _mm256_sub_ps(s, b)), _mm256_add_ps(m, b));
    return _mm256_blendv_ps(pl_avx2_exp_plus(s, ds), _mm256_set1_ps(1.0f),
                            _mm256_cmp_ps(x, m, _CMP_EQ_OQ));
}

/* y = exp(x - max) / sum(exp(x - max)); entries equal to the max weigh exactly 1, so an
 * all -inf row is uniform and +inf entries share the mass. n <= 0 writes nothing.
 * Bound: |y - y_ref| <= (n + 8 + |x - max|) u |y_ref| + FLT_MIN.
 * Why: x - max is taken exactly, as s + ds (Knuth's TwoSum), and ds joins exp's reduced
 * argument, so each weight is within 2.6 u and the |x - max| term goes unused; the float sum
 * of n positive weights (32 lanes, then a 5-level tree) adds <= min(n - 1, n/32 + 5) u
 * relative; 1/sum and the product 2 u. Total <= (7.2 + min(n - 1, n/32 + 5)) u <= (n + 8) u;
 * n = 1 gives exactly 1. Weights below FLT_MIN may flush. */
void softmax_avx2(float *restrict y, const float *restrict x, int64_t n)
{
    if (n <= 0) return;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 m0 = ninf, m1 = ninf;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
    }
    __m256 mv = _mm256_max_ps(m0, m1);
    float m;
    {
        float l[8];
        _mm256_storeu_ps(l, mv);
        m = l[0];
        for (int k = 1; k < 8; k++) m = l[k] > m ? l[k] : m;
        for (; i < n; i++) m = x[i] > m ? x[i] : m; /* max is exact in any order */
    }

    mv = _mm256_set1_ps(m);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 e0 = softmax_e(_mm256_loadu_ps(x + i), mv);
        __m256 e1 = softmax_e(_mm256_loadu_ps(x + i + 8), mv);
        __m256 e2 = softmax_e(_mm256_loadu_ps(x + i + 16), mv);
        __m256 e3 = softmax_e(_mm256_loadu_ps(x + i + 24), mv);
        _mm256_storeu_ps(y + i, e0);
        _mm256_storeu_ps(y + i + 8, e1);
        _mm256_storeu_ps(y + i + 16, e2);
        _mm256_storeu_ps(y + i + 24, e3);
        s0 = _mm256_add_ps(s0, e0);
        s1 = _mm256_add_ps(s1, e1);
        s2 = _mm256_add_ps(s2, e2);
        s3 = _mm256_add_ps(s3, e3);
    }
    for (; i < n; i += 8) { /* the last < 32: whole vectors, then a masked one */
        const __m256i mask = tail_mask(n - i);
        __m256 e = softmax_e(_mm256_maskload_ps(x + i, mask), mv);
        e = _mm256_and_ps(e, _mm256_castsi256_ps(mask));
        _mm256_maskstore_ps(y + i, mask, e);
        s0 = _mm256_add_ps(s0, e);
    }
    const float sum = hsum8(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));

    const __m256 inv = _mm256_set1_ps(1.0f / sum);
    i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
    if (i < n) {
        const __m256i mask = tail_mask(n - i);
        _mm256_maskstore_ps(y + i, mask, _mm256_mul_ps(_mm256_maskload_ps(y + i, mask), inv));
    }
}

/* y = silu(gate) * up = gate / (1 + exp(-gate)) * up, 8 elements in the same operations. */
static __m256 swiglu8(__m256 g, __m256 up)
{
    const __m256 e = pl_avx2_exp(_mm256_sub_ps(_mm256_setzero_ps(), g)); /* -g: exact */
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), up);
}

/* y = silu(gate) * up. gate is finite.
 * Bound: |y - y_ref| <= 16 u |y_ref| + 2^-120 |up| + FLT_MIN.
 * Why: exp(-g) is within 2.3 u (its argument is exact); 1 + e adds u and carries e's error
 * scaled by e / (1 + e) < 1; the correctly rounded division and the product add u each:
 * <= 5.3 u in all. Below gate = -88.72 exp overflows to +inf and y = -0 * up, where the
 * exact |y| < 2^-121 |up|: the 2^-120 |up| term. */
void swiglu_avx2(float *restrict y, const float *restrict gate, const float *restrict up, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 y0 = swiglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i));
        __m256 y1 = swiglu8(_mm256_loadu_ps(gate + i + 8), _mm256_loadu_ps(up + i + 8));
        _mm256_storeu_ps(y + i, y0);
        _mm256_storeu_ps(y + i + 8, y1);
    }
    for (; i < n; i += 8) {
        const __m256i mask = tail_mask(n - i < 8 ? n - i : 8);
        __m256 yv = swiglu8(_mm256_maskload_ps(gate + i, mask), _mm256_maskload_ps(up + i, mask));
        _mm256_maskstore_ps(y + i, mask, yv);
    }
}

/* y = gelu_tanh(gate) * up = gate / (1 + exp(-2z)) * up, 2z = 2 sqrt(2/pi) g (1 + 0.044715 g^2),
 * 8 elements in the same operations. */
static __m256 geglu8(__m256 g, __m256 up)
{
    const __m256 t =
        _mm256_fmadd_ps(_mm256_mul_ps(g, g), _mm256_set1_ps(0.044715f), _mm256_set1_ps(1.0f));
    const __m256 m2z = _mm256_mul_ps(_mm256_mul_ps(g, _mm256_set1_ps(-1.5957691216057308f)), t);
    const __m256 e = pl_avx2_exp(m2z);
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), up);
}

/* y = gelu_tanh(gate) * up. gate is finite.
 * Bound (ref's): |y - y_ref| <= (16 + 16 |z| w) u |y_ref| + 2^-120 |up| + FLT_MIN,
 * w = 1 / (1 + exp(2z)).
 * Why: -2z rounds at g^2, the FMA with 0.044715 (itself rounded: u of a term below the sum),
 * the product by the rounded -2 sqrt(2/pi) and by t: <= 6 u |2z|, which exp's result carries
 * as relative error and y as w of it; exp 2.3 u, 1 + e, the division and the product as in
 * swiglu: <= 5.3 u. Past g = -9.7 exp overflows and y = -0 * up (the 2^-120 |up| term); g^2
 * overflowing gives exp(-+inf) and the limits g * up or -0. */
void geglu_avx2(float *restrict y, const float *restrict gate, const float *restrict up, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 y0 = geglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i));
        __m256 y1 = geglu8(_mm256_loadu_ps(gate + i + 8), _mm256_loadu_ps(up + i + 8));
        _mm256_storeu_ps(y + i, y0);
        _mm256_storeu_ps(y + i + 8, y1);
    }
    for (; i < n; i += 8) {
        const __m256i mask = tail_mask(n - i < 8 ? n - i : 8);
        __m256 yv = geglu8(_mm256_maskload_ps(gate + i, mask), _mm256_maskload_ps(up + i, mask));
        _mm256_maskstore_ps(y + i, mask, yv);
    }
}

/* y = cap * tanh(x / cap); y == x allowed (each vector is loaded before it is stored).
 * Bound (ref's): |y - y_ref| <= 8 u |y_ref| + FLT_MIN.
 * Why: x / cap rounds once (u, passed on by tanh scaled by <= 1), pl_avx2_tanh within 5 u,
 * the product u: <= 7 u. */
void softcap_avx2(float *y, const float *x, int64_t n, float cap)
{
    const __m256 c = _mm256_set1_ps(cap);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i,
                         _mm256_mul_ps(c, pl_avx2_tanh(_mm256_div_ps(_mm256_loadu_ps(x + i), c))));
    if (i < n) {
        const __m256i mask = tail_mask(n - i);
        const __m256 v = _mm256_maskload_ps(x + i, mask);
        _mm256_maskstore_ps(y + i, mask, _mm256_mul_ps(c, pl_avx2_tanh(_mm256_div_ps(v, c))));
    }
}

/* RoPE (kernels.h, pl_rope_args) bit for bit as ref: the angle, cos and sin of each pair come
 * from rope_angle.h in scalar double exactly as ref computes them, once per call for every head;
 * only the rotation is vectorised, in double as ref does it (products and the sum in double,
 * one rounding to float), four pairs at a time. Same operations per element: the same bits, so
 * ref's bound. Normal style pairs (2i, 2i+1): y = x c + swap(x) (-s, s), the pair-swapped
 * lanes times a signed sine (x + (-y) is x - y, b c + a s is a s + b c: IEEE, exactly). */
#define ROPE_CHUNK 64 /* pairs whose cos and sin sit on the stack at once */
void rope_avx2(float *restrict x, int64_t n_heads, int64_t D, int32_t pos, const pl_rope_args *a)
{
    const pl_rope_plan p = pl_rope_plan_of(a, D);
    const int neox = a->style == PL_ROPE_NEOX;
    double c[ROPE_CHUNK], s[ROPE_CHUNK], cd[2 * ROPE_CHUNK], sd[2 * ROPE_CHUNK];
    for (int64_t i0 = 0; i0 < p.half; i0 += ROPE_CHUNK) {
        const int64_t n = p.half - i0 < ROPE_CHUNK ? p.half - i0 : ROPE_CHUNK;
        pl_rope_chunk(&p, a, pos, i0, n, c, s, cd, sd);
        for (int64_t h = 0; h < n_heads; h++) {
            float *xh = x + h * D;
            int64_t k = 0;
            if (neox) {
                float *xa = xh + i0, *xb = xh + i0 + p.half;
                for (; k + 4 <= n; k += 4) {
                    const __m256d va = _mm256_cvtps_pd(_mm_loadu_ps(xa + k));
                    const __m256d vb = _mm256_cvtps_pd(_mm_loadu_ps(xb + k));
                    const __m256d vc = _mm256_loadu_pd(c + k), vs = _mm256_loadu_pd(s + k);
                    const __m256d ya = _mm256_sub_pd(_mm256_mul_pd(va, vc), _mm256_mul_pd(vb, vs));
                    const __m256d yb = _mm256_add_pd(_mm256_mul_pd(va, vs), _mm256_mul_pd(vb, vc));
                    _mm_storeu_ps(xa + k, _mm256_cvtpd_ps(ya));
                    _mm_storeu_ps(xb + k, _mm256_cvtpd_ps(yb));
                }
            } else {
                float *xp = xh + 2 * i0;
                for (; k + 2 <= n; k += 2) {
                    const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(xp + 2 * k));
                    const __m256d sw = _mm256_permute_pd(v, 0x5); /* (b0, a0, b1, a1) */
                    const __m256d y = _mm256_add_pd(_mm256_mul_pd(v, _mm256_loadu_pd(cd + 2 * k)),
                                                    _mm256_mul_pd(sw, _mm256_loadu_pd(sd + 2 * k)));
                    _mm_storeu_ps(xp + 2 * k, _mm256_cvtpd_ps(y));
                }
            }
            for (; k < n; k++) { /* the last pairs: ref's scalar code */
                const int64_t i = i0 + k;
                const int64_t ia = neox ? i : 2 * i, ib = neox ? i + p.half : 2 * i + 1;
                const double xa = xh[ia], xb = xh[ib];
                xh[ia] = (float)(xa * c[k] - xb * s[k]);
                xh[ib] = (float)(xa * s[k] + xb * c[k]);
            }
        }
    }
}

/* ---- issue 49 (cohere2) ---- */

/* The sum over n of f(x[i]) in double, 16 lanes (4 accumulators of 4, element i into
 * accumulator (i / 4) mod 4 of the 16-element steps), then ((a0 + a1) + (a2 + a3)), lanes
 * (0 + 1) + (2 + 3), then the last < 16 in order (4 at a time into a0 first): the order is n's
 * alone. sq: f = (x - c)^2 by FMA, else f = x. */
static double sum_pd(const float *restrict x, int64_t n, int sq, double c)
{
    const __m256d cv = _mm256_set1_pd(c);
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
#define TERM(acc, off)                                                                             \
    do {                                                                                           \
        const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i + (off)));                            \
        if (sq) {                                                                                  \
            const __m256d d = _mm256_sub_pd(v, cv);                                                \
            acc = _mm256_fmadd_pd(d, d, acc);                                                      \
        } else {                                                                                   \
            acc = _mm256_add_pd(acc, v);                                                           \
        }                                                                                          \
    } while (0)
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        TERM(a0, 0);
        TERM(a1, 4);
        TERM(a2, 8);
        TERM(a3, 12);
    }
    for (; i + 4 <= n; i += 4) TERM(a0, 0);
#undef TERM
    const __m256d a = _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
    double l[4];
    _mm256_storeu_pd(l, a);
    double s = (l[0] + l[1]) + (l[2] + l[3]);
    for (; i < n; i++) {
        const double d = (double)x[i] - (sq ? c : 0.0);
        s = sq ? fma(d, d, s) : s + d;
    }
    return s;
}

/* y = (x - mean) / sqrt(var + eps) * w: ref's bound (kernels/ref/ops.c).
 * Why: both sums are in double (sum_pd: relative n 2^-53), the scale in double, and
 * y = (float)((x - mean) s w) in double: one float rounding. */
void layernorm_avx2(float *restrict y, const float *restrict x, const float *restrict w, int64_t n,
                    float eps)
{
    if (n <= 0) return;
    const double mean = sum_pd(x, n, 0, 0.0) / (double)n;
    const double s = 1.0 / sqrt(sum_pd(x, n, 1, mean) / (double)n + (double)eps);
    const __m256d mv = _mm256_set1_pd(mean), sv = _mm256_set1_pd(s);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256d xv = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        const __m256d wv = _mm256_cvtps_pd(_mm_loadu_ps(w + i));
        const __m256d d = _mm256_mul_pd(_mm256_sub_pd(xv, mv), sv);
        _mm_storeu_ps(y + i, _mm256_cvtpd_ps(_mm256_mul_pd(d, wv)));
    }
    for (; i < n; i++) y[i] = (float)(((double)x[i] - mean) * s * (double)w[i]);
}

/* ---- issue 49 (gpt-oss) ---- */

/* g sigmoid(alpha g) (u + 1) with the clamps, 8 elements in the same operations: min/max with
 * the limit first so that a NaN lane stays NaN (the second operand is returned on NaN). */
static __m256 swiglu_oai8(__m256 g, __m256 up, __m256 alpha, __m256 lim)
{
    g = _mm256_min_ps(lim, g);
    up = _mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), lim), _mm256_min_ps(lim, up));
    const __m256 e = pl_avx2_exp(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), alpha), g));
    const __m256 s = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    return _mm256_mul_ps(s, _mm256_add_ps(up, _mm256_set1_ps(1.0f)));
}

/* y = g sigmoid(alpha g) (u + 1): ref's bound (kernels/ref/ops.c).
 * Why: -alpha g rounds once (u |alpha g|, passed on as w of it), exp within 2.3 u, 1 + e, the
 * division, u + 1 and the product one rounding each: <= 7.3 u + 4 |alpha g| w u. Below
 * alpha g = -88.72 exp overflows to +inf and the product is -0. */
void swiglu_oai_avx2(float *restrict y, const float *restrict gate, const float *restrict up,
                     int64_t n, float alpha, float limit)
{
    const __m256 av = _mm256_set1_ps(alpha), lv = _mm256_set1_ps(limit);
    for (int64_t i = 0; i < n; i += 8) {
        const __m256i mask = tail_mask(n - i < 8 ? n - i : 8);
        const __m256 yv = swiglu_oai8(_mm256_maskload_ps(gate + i, mask),
                                      _mm256_maskload_ps(up + i, mask), av, lv);
        _mm256_maskstore_ps(y + i, mask, yv);
    }
}
