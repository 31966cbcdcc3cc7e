/* quant.c — wasm128 activation quantizers (Q8_0, Q8_K), bit-exact with ref's for every input:
 * the same IEEE operations per element, four at a time. Not the weight quantizers (offline:
 * ref's). */
#include <math.h>

#include "simd.h"
#include "wasm128.h"

/* 1 if none of x[0..n) is NaN or +-Inf (exponent bits all ones); n is a multiple of 4. */
static int all_finite(const float *x, int n)
{
    const v128_t e = wasm_i32x4_splat(0x7f800000);
    v128_t bad = wasm_i32x4_splat(0);
    for (int i = 0; i < n; i += 4)
        bad = wasm_v128_or(bad, wasm_i32x4_eq(wasm_v128_and(wasm_v128_load(x + i), e), e));
    return !wasm_v128_any_true(bad);
}

/* The largest of 4 lanes (no NaN here; exact in any order). */
static float hmax(v128_t v)
{
    v = wasm_f32x4_max(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    v = wasm_f32x4_max(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
    return wasm_f32x4_extract_lane(v, 0);
}

/* ref's to_int8(roundf(v), -128, 127): half away from zero, non-finite -> 0, clamped; as int32. */
static v128_t round_to_i8_range(v128_t v)
{
    const v128_t t = wasm_f32x4_trunc(v);
    const v128_t frac = wasm_f32x4_abs(wasm_f32x4_sub(v, t)); /* exact: |v| < 2^23 or frac 0 */
    const v128_t up = wasm_f32x4_ge(frac, wasm_f32x4_splat(0.5f));
    const v128_t one =
        wasm_v128_or(wasm_f32x4_splat(1.0f), wasm_v128_and(v, wasm_f32x4_splat(-0.0f)));
    v128_t r = wasm_v128_bitselect(wasm_f32x4_add(t, one), t, up); /* t +- 1: exact */
    r = wasm_v128_and(r, wasm_f32x4_lt(wasm_f32x4_abs(r), wasm_f32x4_splat(INFINITY)));
    r = wasm_f32x4_min(wasm_f32x4_max(r, wasm_f32x4_splat(-128.0f)), wasm_f32x4_splat(127.0f));
    return wasm_i32x4_trunc_sat_f32x4(r);
}

void quantize_row_q8_0_wasm128(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / PL_QK8_0; i++, x += PL_QK8_0) {
        pl_block_q8_0 *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK8_0)) {
            b->d = 0x7e00u;
            continue;
        }
        v128_t v[8], am = wasm_f32x4_splat(0.0f);
        for (int j = 0; j < 8; j++) {
            v[j] = wasm_v128_load(x + 4 * j);
            am = wasm_f32x4_max(am, wasm_f32x4_abs(v[j]));
        }
        const float d = hmax(am) / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = pl_f32_to_f16(d);
        const v128_t vid = wasm_f32x4_splat(id);
        v128_t q[8];
        for (int j = 0; j < 8; j++) q[j] = round_to_i8_range(wasm_f32x4_mul(v[j], vid));
        for (int j = 0; j < 2; j++) { /* in range: the saturating narrows are exact */
            const v128_t lo = wasm_i16x8_narrow_i32x4(q[4 * j], q[4 * j + 1]);
            const v128_t hi = wasm_i16x8_narrow_i32x4(q[4 * j + 2], q[4 * j + 3]);
            wasm_v128_store(b->qs + 16 * j, wasm_i8x16_narrow_i16x8(lo, hi));
        }
    }
}

/* ref's signed_absmax: the first element of largest magnitude (0 if all are 0). */
static float signed_absmax(const float *x)
{
    v128_t m = wasm_f32x4_splat(0.0f);
    for (int i = 0; i < PL_QK_K; i += 4)
        m = wasm_f32x4_max(m, wasm_f32x4_abs(wasm_v128_load(x + i)));
    const float amax = hmax(m);
    if (amax == 0.0f) return 0.0f;
    const v128_t va = wasm_f32x4_splat(amax);
    for (int i = 0; i < PL_QK_K; i += 4) {
        const uint32_t hit =
            wasm_i32x4_bitmask(wasm_f32x4_eq(wasm_f32x4_abs(wasm_v128_load(x + i)), va));
        if (hit) return x[i + __builtin_ctz(hit)];
    }
    return 0.0f; /* unreachable: amax is one of the |x| */
}

void quantize_row_q8_k_wasm128(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q8_k *y = vy;
    for (int64_t i = 0; i < n / PL_QK_K; i++, x += PL_QK_K) {
        pl_block_q8_k *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK_K)) {
            b->d = NAN;
            continue;
        }
        const float max = signed_absmax(x);
        if (max == 0.0f) continue;
        const float iscale = -127.f / max;
        const v128_t vs = wasm_f32x4_splat(iscale), magic = wasm_f32x4_splat(12582912.f);
        for (int s = 0; s < PL_QK_K / 16; s++) {
            v128_t q[4];
            for (int j = 0; j < 4; j++) {
                /* ref's nearest_int (the 1.5 * 2^23 trick: mul, then add), imin(127, .), and
                 * its modular store: the low byte, which the unsigned narrows carry as is */
                const v128_t t =
                    wasm_f32x4_add(wasm_f32x4_mul(wasm_v128_load(x + 16 * s + 4 * j), vs), magic);
                const v128_t v = wasm_i32x4_sub(wasm_v128_and(t, wasm_i32x4_splat(0x007fffff)),
                                                wasm_i32x4_splat(0x00400000));
                q[j] =
                    wasm_v128_and(wasm_i32x4_min(v, wasm_i32x4_splat(127)), wasm_i32x4_splat(0xff));
            }
            const v128_t qs = wasm_u8x16_narrow_i16x8(wasm_u16x8_narrow_i32x4(q[0], q[1]),
                                                      wasm_u16x8_narrow_i32x4(q[2], q[3]));
            wasm_v128_store(b->qs + 16 * s, qs);
            /* exact: 16 int8 summed pairwise into int16, then int32 */
            b->bsums[s] = (int16_t)pl_w_hsum_i32(
                wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_extadd_pairwise_i8x16(qs)));
        }
        b->d = 1 / iscale;
    }
}
