/* simd.h — the wasm128 set's one include: WebAssembly SIMD128 intrinsics (wasm_*), from
 * <wasm_simd128.h> under emcc -msimd128, else from SIMDe (portable C/SSE) so x86 CI proves the
 * very sources the browser runs; plus the small vector helpers the set's files share. */
#ifndef PLUMB_KERNELS_WASM128_SIMD_H
#define PLUMB_KERNELS_WASM128_SIMD_H

#include <stdint.h>
#include <string.h>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#else
#define SIMDE_WASM_SIMD128_ENABLE_NATIVE_ALIASES
#include <simde/wasm/simd128.h>
#endif

/* Relaxed SIMD: only i32x4.relaxed_dot_i8x16_i7x16_add_s, and only with its second operand in
 * [0, 127], where every implementation computes the same exact value (its implementation-
 * defined part is the sign of bytes >= 0x80 and an int16 saturation that products of an int8
 * and a 7-bit value never reach). relaxed_madd, min/max, laneselect, swizzle and trunc differ
 * between engines and CPUs and are never used. PL_W_RELAXED (set by matmul_q_relaxed.c and
 * set_relaxed.c, the wasm128r set) turns the dot on; SIMD128 has no FMA either, so every
 * float product below rounds on its own (the bounds count that rounding). */
#ifndef PL_W_RELAXED
#define PL_W_RELAXED 0
#endif

#define PL_W_INLINE static inline __attribute__((always_inline))

#if PL_W_RELAXED && defined(__wasm_simd128__)
#if !defined(__wasm_relaxed_simd__)
#error "the wasm128r files need -mrelaxed-simd (clang >= 16: clang-14 emits prototype opcodes)"
#endif
/* c + the 4 products a_j b_j of each int32 lane; b must be in [0, 127] (see above). */
#define pl_w_dot_i8_u7_add(a, b, c) wasm_i32x4_relaxed_dot_i8x16_i7x16_add(a, b, c)
#elif PL_W_RELAXED && defined(__SSE2__)
#include <emmintrin.h>
/* Natively (SIMDe has no relaxed dot): the x86 engines' lowering (pmaddubsw, then pmaddwd by
 * ones): b read as unsigned bytes, each pair sum saturated to int16. For b in [0, 127] that
 * is the exact value every engine computes; outside it, it differs from the signed reading
 * of other CPUs, so a misuse (operands swapped, an offset not removed) fails the suites.
 * In SSE2 (the native build's baseline; pmaddubsw is SSSE3): the even and odd bytes apart as
 * int16 (every product of an int8 and a uint8 fits), their sums saturated, then pairs of
 * those summed exactly into int32 lanes, as the scalar loop below defines. */
PL_W_INLINE v128_t pl_w_dot_i8_u7_add(v128_t a, v128_t b, v128_t c)
{
    __m128i va, vb, vc;
    memcpy(&va, &a, 16);
    memcpy(&vb, &b, 16);
    memcpy(&vc, &c, 16);
    const __m128i a_even = _mm_srai_epi16(_mm_slli_epi16(va, 8), 8), a_odd = _mm_srai_epi16(va, 8);
    const __m128i b_even = _mm_and_si128(vb, _mm_set1_epi16(0xff)), b_odd = _mm_srli_epi16(vb, 8);
    const __m128i pairs =
        _mm_adds_epi16(_mm_mullo_epi16(a_even, b_even), _mm_mullo_epi16(a_odd, b_odd));
    const __m128i r = _mm_add_epi32(vc, _mm_madd_epi16(pairs, _mm_set1_epi16(1)));
    v128_t out;
    memcpy(&out, &r, 16);
    return out;
}
#elif PL_W_RELAXED
/* Natively without SSE2: the definition itself (see above). */
PL_W_INLINE v128_t pl_w_dot_i8_u7_add(v128_t a, v128_t b, v128_t c)
{
    int8_t av[16];
    uint8_t bv[16];
    int32_t cv[4];
    memcpy(av, &a, 16);
    memcpy(bv, &b, 16);
    memcpy(cv, &c, 16);
    for (int l = 0; l < 4; l++)
        for (int p = 0; p < 2; p++) {
            int32_t s = av[4 * l + 2 * p] * bv[4 * l + 2 * p] +
                        av[4 * l + 2 * p + 1] * bv[4 * l + 2 * p + 1];
            s = s > INT16_MAX ? INT16_MAX : s < INT16_MIN ? INT16_MIN : s;
            cv[l] = (int32_t)((uint32_t)cv[l] + (uint32_t)s);
        }
    v128_t r;
    memcpy(&r, cv, 16);
    return r;
}
#endif

/* ((l0 + l2) + (l1 + l3)): the fixed tree every float lane sum of the set uses. */
PL_W_INLINE float pl_w_hsum(v128_t v)
{
    const v128_t s = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1);
}

/* Exact integer lane sum. */
PL_W_INLINE int32_t pl_w_hsum_i32(v128_t v)
{
    const v128_t s = wasm_i32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    return wasm_i32x4_extract_lane(s, 0) + wasm_i32x4_extract_lane(s, 1);
}

/* Lane i = the (exact, int32) lane sum of v[i]. */
PL_W_INLINE v128_t pl_w_hsum4x4_i32(v128_t v0, v128_t v1, v128_t v2, v128_t v3)
{
    const v128_t a = wasm_i32x4_add(wasm_i32x4_shuffle(v0, v1, 0, 4, 1, 5),
                                    wasm_i32x4_shuffle(v0, v1, 2, 6, 3, 7)); /* v0 v1 v0 v1 */
    const v128_t b = wasm_i32x4_add(wasm_i32x4_shuffle(v2, v3, 0, 4, 1, 5),
                                    wasm_i32x4_shuffle(v2, v3, 2, 6, 3, 7)); /* v2 v3 v2 v3 */
    return wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 1, 4, 5),
                          wasm_i32x4_shuffle(a, b, 2, 3, 6, 7));
}

/* IEEE half -> float, exactly pl_f16_to_f32, for 4 halves in the low 16 bits of u32 lanes.
 * (h & 0x7fff) << 13 read as a float is the value times 2^-112 (normal or, for a subnormal
 * half, a float subnormal): the product by 2^112 is exact. Inf and NaN keep their payload. */
PL_W_INLINE v128_t pl_w_f16_to_f32(v128_t h)
{
    const v128_t em = wasm_v128_and(h, wasm_i32x4_splat(0x7fff));
    const v128_t sign = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16);
    const v128_t o = wasm_i32x4_shl(em, 13);
    const v128_t fin = wasm_f32x4_mul(o, wasm_f32x4_splat(0x1p112f));
    const v128_t special = wasm_v128_or(o, wasm_i32x4_splat(0x7f800000));
    const v128_t is_special = wasm_i32x4_ge(em, wasm_i32x4_splat(0x7c00));
    return wasm_v128_or(sign, wasm_v128_bitselect(special, fin, is_special));
}

/* 8 halves at p as two float vectors (elements 0..3, 4..7). */
PL_W_INLINE void pl_w_load_f16x8(v128_t *lo, v128_t *hi, const void *p)
{
    const v128_t h = wasm_v128_load(p);
    *lo = pl_w_f16_to_f32(wasm_u32x4_extend_low_u16x8(h));
    *hi = pl_w_f16_to_f32(wasm_u32x4_extend_high_u16x8(h));
}

/* 4 halves at p as floats. */
PL_W_INLINE v128_t pl_w_load_f16x4(const void *p)
{
    return pl_w_f16_to_f32(wasm_u32x4_extend_low_u16x8(wasm_v128_load64_zero(p)));
}

/* 4 bfloat16 at p as floats (exact: the bits move up). */
PL_W_INLINE v128_t pl_w_load_bf16x4(const void *p)
{
    return wasm_i32x4_shl(wasm_u32x4_extend_low_u16x8(wasm_v128_load64_zero(p)), 16);
}

/* ---- exp in double lanes ----------------------------------------------------------------
 * SIMD128 has no FMA, so a float exp would lose the exact Cody-Waite step the x86 sets build
 * on; the set computes exp (and what is made of it) in f64x2 and rounds to float once.
 * exp(x) = 2^n e^r, n = nearest(x log2 e), r = (x - n ln2_hi) - n ln2_lo (fdlibm's split:
 * n ln2_hi exact for |n| < 2^20), e^r by Taylor to degree 11 in Horner form (|r| <= 0.35:
 * truncation < 1e-14), 2^n built from its bits (x clamped to [-200, 200], so n + 1023 is a
 * normal exponent). Relative error < 1e-13, far below a float ulp: after the one rounding to
 * float the result is within 0.51 u (u = 2^-24) or 2^-150 absolute. NaN stays NaN (min and max
 * propagate it); +-inf give +inf and 0 after that rounding. */
PL_W_INLINE v128_t pl_w_exp_f64(v128_t x)
{
    x = wasm_f64x2_min(wasm_f64x2_splat(200.0), wasm_f64x2_max(wasm_f64x2_splat(-200.0), x));
    const v128_t n =
        wasm_f64x2_nearest(wasm_f64x2_mul(x, wasm_f64x2_splat(1.44269504088896338700)));
    v128_t r = wasm_f64x2_sub(x, wasm_f64x2_mul(n, wasm_f64x2_splat(6.93147180369123816490e-01)));
    r = wasm_f64x2_sub(r, wasm_f64x2_mul(n, wasm_f64x2_splat(1.90821492927058770002e-10)));
    v128_t p = wasm_f64x2_splat(1.0 / 39916800.0); /* 1/11! */
    static const double c[11] = {
        1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0,
        1.0 / 24.0,      1.0 / 6.0,      0.5,           1.0,          1.0};
    for (int i = 0; i < 11; i++) p = wasm_f64x2_add(wasm_f64x2_mul(p, r), wasm_f64x2_splat(c[i]));
    const v128_t ni = wasm_i64x2_extend_low_i32x4(wasm_i32x4_trunc_sat_f64x2_zero(n));
    const v128_t scale = wasm_i64x2_shl(wasm_i64x2_add(ni, wasm_i64x2_splat(1023)), 52);
    return wasm_f64x2_mul(p, scale);
}

/* Low and high float pairs of v, widened (exact). */
PL_W_INLINE v128_t pl_w_lo_f64(v128_t v)
{
    return wasm_f64x2_promote_low_f32x4(v);
}
PL_W_INLINE v128_t pl_w_hi_f64(v128_t v)
{
    return wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(v, v, 2, 3, 2, 3));
}

/* Two double pairs rounded to one float vector [lo0 lo1 hi0 hi1]. */
PL_W_INLINE v128_t pl_w_to_f32(v128_t lo, v128_t hi)
{
    return wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(lo), wasm_f32x4_demote_f64x2_zero(hi), 0,
                              1, 4, 5);
}

/* tanh in double lanes, odd, NaN kept, within 1e-10 relative: |a| < 0.3 by Taylor to a^13
 * (first dropped term < 7e-11 a), else (1 - e) / (1 + e), e = exp(-2|a|), whose error
 * (< 1e-13) the quotient passes on at most 1.6 times. Both run; the select picks per lane. */
PL_W_INLINE v128_t pl_w_tanh_f64(v128_t a)
{
    const v128_t sign = wasm_f64x2_splat(-0.0), one = wasm_f64x2_splat(1.0);
    const v128_t x = wasm_v128_andnot(a, sign);
    const v128_t e = pl_w_exp_f64(wasm_f64x2_mul(wasm_f64x2_splat(-2.0), x));
    const v128_t big = wasm_f64x2_div(wasm_f64x2_sub(one, e), wasm_f64x2_add(one, e));
    const v128_t x2 = wasm_f64x2_mul(x, x);
    static const double c[6] = {-1382.0 / 155925.0, 62.0 / 2835.0, -17.0 / 315.0,
                                2.0 / 15.0,         -1.0 / 3.0,    0.0};
    v128_t p = wasm_f64x2_splat(21844.0 / 6081075.0);
    for (int i = 0; i < 5; i++) p = wasm_f64x2_add(wasm_f64x2_mul(p, x2), wasm_f64x2_splat(c[i]));
    const v128_t small = wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_mul(x2, x), p), x);
    const v128_t t = wasm_v128_bitselect(small, big, wasm_f64x2_lt(x, wasm_f64x2_splat(0.3)));
    return wasm_v128_or(t, wasm_v128_and(a, sign));
}

#endif
