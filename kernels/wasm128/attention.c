/* attention.c — causal grouped-query attention over the KV cache (F32 or F16) in WebAssembly
 * SIMD128. Not flash attention: ref's three passes per (token, head), scores in scratch.
 *
 * For query t, head h, KV head g = h / (H / Hkv), over the visible entries j (ascending):
 *     s_j = scale * (q . k_j),  e_j = s_j == m ? 1 : exp(s_j - m),  out = sum e_j v_j / sum e_j
 * with s_j = softcap * tanh(s_j / softcap) first when softcap != 0 (in double, one rounding).
 * Bound (ref's, kernels/ref/attention.c, checked in conformance/test_attention.c):
 *     |out_d - ref_d| <= u * sum_j p_j |v_jd| * (4 (D + 2) A + |s_j - m| + 2 M + 16) + FLT_MIN
 * Why this set meets it: q . k runs in 4 x 4 float lanes (product, then sum: no FMA), chunk i
 * of 4 into accumulator i mod 4, then ((a0 + a1) + (a2 + a3)) and the lane tree: each term is
 * rounded once as a product and passes through <= min(D - 1, D/16 + 4) additions, <= D u sum
 * |q k|; scale adds u: a score error <= (D + 1) u A. s_j - m is taken in double and exp there
 * (simd.h), one rounding to float: 0.51 u in the weights and their sum; e_j summed in lane
 * j mod 4 then the lane tree (<= M u), sum_j e_j v_jd as one chain per d, each product rounded
 * (<= (M + 1) u); the division u.
 *
 * Batch invariance: every float of a (t, h) row comes from the same operations in the same
 * order whatever T, h0, h1 or N past the last visible entry: lanes of the weight sum are fixed
 * by j mod 4, invisible entries add exact zeros, the V sum runs j ascending per d. Blocks of 4
 * entries with no visible entry are skipped (attn_span.h, then the first and last visible
 * block pass 1 found): that changes no bit. */
#include <math.h>

#include "attn_span.h"
#include "simd.h"
#include "wasm128.h"

#define B 4 /* entries per block: one float lane each */

static int visible(const pl_attn_args *a, int64_t j, int32_t qp)
{
    const int32_t kp = a->kv_pos[j];
    if (kp > qp) return 0;
    if (a->layer_window > 0 && (int64_t)qp - (int64_t)kp >= a->layer_window) return 0;
    if (a->window <= 0 || j < a->n_sinks) return 1;
    return (int64_t)qp - (int64_t)kp < a->window;
}

/* Bit i set where entry j0 + i (< N) is visible. */
static unsigned vis4(const pl_attn_args *a, int64_t j0, int32_t qp)
{
    unsigned bits = 0;
    for (int i = 0; i < B && j0 + i < a->N; i++) bits |= (unsigned)visible(a, j0 + i, qp) << i;
    return bits;
}

static v128_t lanes_of(unsigned bits)
{
    return wasm_i32x4_ne(
        wasm_v128_and(wasm_i32x4_splat((int32_t)bits), wasm_i32x4_make(1, 2, 4, 8)),
        wasm_i32x4_splat(0));
}

#define FOR_SPAN(sp, j0)                                                                           \
    for (int r_ = 0; r_ < (sp)->n; r_++)                                                           \
        for (int64_t j0 = B * (sp)->lo[r_]; j0 < B * (sp)->hi[r_]; j0 += B)

/* 4 consecutive K or V elements as floats (F16 widening is exact). */
PL_W_INLINE v128_t load4(const void *row, int f16, int64_t d)
{
    if (f16) return pl_w_load_f16x4((const pl_f16 *)row + d);
    return wasm_v128_load((const float *)row + d);
}

/* The last rem < 4 elements from d, zero beyond: no byte read past the row. */
static v128_t load_tail(const void *row, int f16, int64_t d, int64_t rem)
{
    const size_t esz = f16 ? 2 : 4;
    uint8_t b[16] = {0};
    memcpy(b, (const uint8_t *)row + (size_t)d * esz, (size_t)rem * esz);
    return load4(b, f16, 0);
}

static v128_t load_q_tail(const float *q, int64_t rem)
{
    float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(b, q, (size_t)rem * sizeof *b);
    return wasm_v128_load(b);
}

/* q . k in float: chunk i of 4 into accumulator i mod 4, the zero-padded tail likewise; then
 * ((a0 + a1) + (a2 + a3)) and the lane tree. Fixed by D alone. */
PL_W_INLINE float dot_qk(const float *restrict q, const void *krow, int f16, int64_t D)
{
    v128_t a[4];
    for (int i = 0; i < 4; i++) a[i] = wasm_f32x4_splat(0.0f);
    int64_t d = 0;
    for (; d + 16 <= D; d += 16)
        for (int i = 0; i < 4; i++)
            a[i] = wasm_f32x4_add(
                a[i], wasm_f32x4_mul(wasm_v128_load(q + d + 4 * i), load4(krow, f16, d + 4 * i)));
    for (int i = 0; d < D; i++, d += 4) {
        const int64_t rem = D - d;
        const v128_t p =
            rem >= 4 ? wasm_f32x4_mul(wasm_v128_load(q + d), load4(krow, f16, d))
                     : wasm_f32x4_mul(load_q_tail(q + d, rem), load_tail(krow, f16, d, rem));
        a[i] = wasm_f32x4_add(a[i], p);
    }
    return pl_w_hsum(wasm_f32x4_add(wasm_f32x4_add(a[0], a[1]), wasm_f32x4_add(a[2], a[3])));
}

/* o[d0 .. d0 + 4 NV) = sum over visible j (ascending) of e_j v_j[...], one chain per d, divided
 * by sum. */
#define ATTN_V_CHUNK(NV)                                                                           \
    static void v_chunk_##NV(float *restrict o, const pl_attn_args *a, const pl_attn_span *sp,     \
                             int32_t qp, const float *e, const char *vbase, size_t vstride,        \
                             int f16, int64_t d0, v128_t sum)                                      \
    {                                                                                              \
        v128_t acc[NV];                                                                            \
        for (int k = 0; k < NV; k++) acc[k] = wasm_f32x4_splat(0.0f);                              \
        FOR_SPAN (sp, j0) {                                                                        \
            for (unsigned bits = vis4(a, j0, qp); bits; bits &= bits - 1) {                        \
                const int64_t j = j0 + __builtin_ctz(bits);                                        \
                const v128_t w = wasm_f32x4_splat(e[j]);                                           \
                const void *row = vbase + (size_t)j * vstride;                                     \
                for (int k = 0; k < NV; k++)                                                       \
                    acc[k] =                                                                       \
                        wasm_f32x4_add(acc[k], wasm_f32x4_mul(w, load4(row, f16, d0 + 4 * k)));    \
            }                                                                                      \
        }                                                                                          \
        for (int k = 0; k < NV; k++) wasm_v128_store(o + d0 + 4 * k, wasm_f32x4_div(acc[k], sum)); \
    }
ATTN_V_CHUNK(8)
ATTN_V_CHUNK(4)
ATTN_V_CHUNK(2)
ATTN_V_CHUNK(1)
#undef ATTN_V_CHUNK

/* The last rem < 4 dims: the same per-lane chain and division on zero-padded rows. */
static void v_tail(float *restrict o, const pl_attn_args *a, const pl_attn_span *sp, int32_t qp,
                   const float *e, const char *vbase, size_t vstride, int f16, int64_t d0,
                   int64_t rem, v128_t sum)
{
    v128_t acc = wasm_f32x4_splat(0.0f);
    FOR_SPAN (sp, j0) {
        for (unsigned bits = vis4(a, j0, qp); bits; bits &= bits - 1) {
            const int64_t j = j0 + __builtin_ctz(bits);
            const void *row = vbase + (size_t)j * vstride;
            acc = wasm_f32x4_add(
                acc, wasm_f32x4_mul(wasm_f32x4_splat(e[j]), load_tail(row, f16, d0, rem)));
        }
    }
    float b[4];
    wasm_v128_store(b, wasm_f32x4_div(acc, sum));
    memcpy(o + d0, b, (size_t)rem * sizeof *b);
}

/* cap * tanh(s / cap) for 4 scores, in double, one rounding. */
static v128_t softcap4(v128_t v, float cap)
{
    const v128_t c = wasm_f64x2_splat((double)cap);
    const v128_t lo = wasm_f64x2_mul(c, pl_w_tanh_f64(wasm_f64x2_div(pl_w_lo_f64(v), c)));
    const v128_t hi = wasm_f64x2_mul(c, pl_w_tanh_f64(wasm_f64x2_div(pl_w_hi_f64(v), c)));
    return pl_w_to_f32(lo, hi);
}

static void attend_one(float *restrict o, const pl_attn_args *a, int64_t t, int64_t h,
                       float *restrict scratch)
{
    const int64_t D = a->D;
    const int64_t g = h / (a->H / a->Hkv);
    const float *q = a->q + (t * a->H + h) * D;
    const int f16 = a->kv_type != PL_TYPE_F32; /* as ref: anything else reads as F16 */
    const size_t esz = f16 ? sizeof(pl_f16) : sizeof(float);
    const size_t stride = (size_t)(a->Hkv * D) * esz; /* bytes from entry j to j + 1 */
    const char *kbase = (const char *)a->k + (size_t)(g * D) * esz;
    const char *vbase = (const char *)a->v + (size_t)(g * D) * esz;
    const int32_t qp = a->q_pos[t];
    pl_attn_span sp = pl_attn_span_of(a, qp, qp, B);
    const float cap = a->softcap;

    /* Pass 1: scores of the visible entries, and their max (ref's rule: first, then >). */
    int64_t seen = 0, b_first = INT64_MAX, b_last = -1;
    float m = -INFINITY;
    FOR_SPAN (&sp, j0) {
        const unsigned bits = vis4(a, j0, qp);
        if (!bits) continue;
        if (b_first == INT64_MAX) b_first = j0 / B;
        b_last = j0 / B;
        float sc[B] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (unsigned b = bits; b; b &= b - 1) {
            const int i = __builtin_ctz(b);
            sc[i] = a->scale * dot_qk(q, kbase + (size_t)(j0 + i) * stride, f16, D);
        }
        if (cap != 0.0f) wasm_v128_store(sc, softcap4(wasm_v128_load(sc), cap));
        for (unsigned b = bits; b; b &= b - 1) {
            const int i = __builtin_ctz(b);
            scratch[j0 + i] = sc[i];
            if (seen == 0 || sc[i] > m) m = sc[i];
            seen++;
        }
    }
    if (seen == 0) {
        memset(o, 0, (size_t)D * sizeof *o);
        return;
    }
    pl_attn_span_clip(&sp, b_first, b_last + 1);         /* passes 2 and 3: visible blocks only */
    const float sk = a->sinks ? a->sinks[h] : -INFINITY; /* gpt-oss: the sink joins the max */
    if (a->sinks && sk > m) m = sk;

    /* Pass 2: weights in place of the scores (the max and its ties weigh exactly 1), in
     * double, summed in lane j mod 4; invisible lanes add +0. */
    const double md = m;
    v128_t acc = wasm_f32x4_splat(0.0f);
    FOR_SPAN (&sp, j0) {
        const unsigned bits = vis4(a, j0, qp);
        if (!bits) continue;
        float sv[B] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (unsigned b = bits; b; b &= b - 1)
            sv[__builtin_ctz(b)] = scratch[j0 + __builtin_ctz(b)];
        const v128_t s = wasm_v128_load(sv), mv = wasm_f64x2_splat(md);
        const v128_t lo = pl_w_exp_f64(wasm_f64x2_sub(pl_w_lo_f64(s), mv));
        const v128_t hi = pl_w_exp_f64(wasm_f64x2_sub(pl_w_hi_f64(s), mv));
        v128_t e = wasm_v128_bitselect(wasm_f32x4_splat(1.0f), pl_w_to_f32(lo, hi),
                                       wasm_f32x4_eq(s, wasm_f32x4_splat(m)));
        e = wasm_v128_and(e, lanes_of(bits));
        float ev[B];
        wasm_v128_store(ev, e);
        for (unsigned b = bits; b; b &= b - 1)
            scratch[j0 + __builtin_ctz(b)] = ev[__builtin_ctz(b)];
        acc = wasm_f32x4_add(acc, e);
    }
    float total = pl_w_hsum(acc);
    if (a->sinks) /* ... and the denominator (ref's rule: at the max it weighs 1) */
        total += sk == m ? 1.0f
                         : (float)wasm_f64x2_extract_lane(
                               pl_w_exp_f64(wasm_f64x2_splat((double)sk - md)), 0);
    const v128_t sum = wasm_f32x4_splat(total);

    /* Pass 3: weighted sum of V rows, 32 dims (8 vectors) per sweep over the entries. */
    int64_t d0 = 0;
    for (; d0 + 32 <= D; d0 += 32) v_chunk_8(o, a, &sp, qp, scratch, vbase, stride, f16, d0, sum);
    if (d0 + 16 <= D) v_chunk_4(o, a, &sp, qp, scratch, vbase, stride, f16, d0, sum), d0 += 16;
    if (d0 + 8 <= D) v_chunk_2(o, a, &sp, qp, scratch, vbase, stride, f16, d0, sum), d0 += 8;
    if (d0 + 4 <= D) v_chunk_1(o, a, &sp, qp, scratch, vbase, stride, f16, d0, sum), d0 += 4;
    if (d0 < D) v_tail(o, a, &sp, qp, scratch, vbase, stride, f16, d0, D - d0, sum);
}

/* ---- heads that share a KV head, F16 cache (issue 52) -----------------------------------
 * The same three passes and the same float operations per head as attend_one, in the same
 * order per (head, entry, dim); only the F16 -> F32 widening of each K and V row (exact) is
 * done once per block of 4 entries for all n heads instead of once per head, into kv (4 D
 * floats). Pass 3 keeps each head's running sums in its output row (exact stores) instead of
 * registers, entries ascending per dim as there, then divides. Scores: head i's in
 * scratch + i (N + 16). Same bits as attend_one per head. */
#define GMAX 32 /* heads at a time: PL_ATTN_SCRATCH's 33 rows of N + 16 */

/* The visible rows of block j0 (bits) from base, widened: row i at kv + i D. */
static void widen4(float *restrict kv, const char *base, size_t stride, unsigned bits, int64_t j0,
                   int64_t D)
{
    for (unsigned b = bits; b; b &= b - 1) {
        const int i = __builtin_ctz(b);
        const pl_f16 *row = (const pl_f16 *)(base + (size_t)(j0 + i) * stride);
        float *o = kv + (size_t)i * (size_t)D;
        int64_t d = 0;
        for (; d + 8 <= D; d += 8) {
            v128_t lo, hi;
            pl_w_load_f16x8(&lo, &hi, row + d);
            wasm_v128_store(o + d, lo);
            wasm_v128_store(o + d + 4, hi);
        }
        for (; d < D; d++) o[d] = pl_f16_to_f32(row[d]);
    }
}

static void attend_group(float *restrict out, const pl_attn_args *a, int64_t t, int64_t h0, int n,
                         float *restrict scratch)
{
    const int64_t D = a->D, N = a->N;
    const int64_t g = h0 / (a->H / a->Hkv);
    const size_t stride = (size_t)(a->Hkv * D) * sizeof(pl_f16);
    const char *kbase = (const char *)a->k + (size_t)(g * D) * sizeof(pl_f16);
    const char *vbase = (const char *)a->v + (size_t)(g * D) * sizeof(pl_f16);
    const int32_t qp = a->q_pos[t];
    pl_attn_span sp = pl_attn_span_of(a, qp, qp, B);
    const float cap = a->softcap;
    float *kv = scratch + 33 * (size_t)(N + 16); /* 16 D floats there; 4 D used */
    float m[GMAX];
    int64_t seen = 0, b_first = INT64_MAX, b_last = -1;
    for (int i = 0; i < n; i++) m[i] = -INFINITY;

    /* Pass 1 */
    FOR_SPAN (&sp, j0) {
        const unsigned bits = vis4(a, j0, qp);
        if (!bits) continue;
        if (b_first == INT64_MAX) b_first = j0 / B;
        b_last = j0 / B;
        widen4(kv, kbase, stride, bits, j0, D);
        for (int hh = 0; hh < n; hh++) {
            const float *q = a->q + (t * a->H + h0 + hh) * D;
            float *sc_row = scratch + (size_t)hh * (size_t)(N + 16);
            float sc[B] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (unsigned b = bits; b; b &= b - 1) {
                const int i = __builtin_ctz(b);
                sc[i] = a->scale * dot_qk(q, kv + (size_t)i * (size_t)D, 0, D);
            }
            if (cap != 0.0f) wasm_v128_store(sc, softcap4(wasm_v128_load(sc), cap));
            int64_t s = seen;
            for (unsigned b = bits; b; b &= b - 1) {
                const int i = __builtin_ctz(b);
                sc_row[j0 + i] = sc[i];
                if (s == 0 || sc[i] > m[hh]) m[hh] = sc[i];
                s++;
            }
        }
        seen += __builtin_popcount(bits);
    }
    if (seen == 0) {
        for (int hh = 0; hh < n; hh++) memset(out + (t * a->H + h0 + hh) * D, 0, (size_t)D * 4);
        return;
    }
    pl_attn_span_clip(&sp, b_first, b_last + 1);

    /* Pass 2, per head: as attend_one's */
    float total[GMAX];
    for (int hh = 0; hh < n; hh++) {
        const int64_t h = h0 + hh;
        float *row = scratch + (size_t)hh * (size_t)(N + 16);
        const float sk = a->sinks ? a->sinks[h] : -INFINITY;
        if (a->sinks && sk > m[hh]) m[hh] = sk;
        const float mh = m[hh];
        const double md = mh;
        v128_t acc = wasm_f32x4_splat(0.0f);
        FOR_SPAN (&sp, j0) {
            const unsigned bits = vis4(a, j0, qp);
            if (!bits) continue;
            float sv[B] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (unsigned b = bits; b; b &= b - 1)
                sv[__builtin_ctz(b)] = row[j0 + __builtin_ctz(b)];
            const v128_t s = wasm_v128_load(sv), mv = wasm_f64x2_splat(md);
            const v128_t lo = pl_w_exp_f64(wasm_f64x2_sub(pl_w_lo_f64(s), mv));
            const v128_t hi = pl_w_exp_f64(wasm_f64x2_sub(pl_w_hi_f64(s), mv));
            v128_t e = wasm_v128_bitselect(wasm_f32x4_splat(1.0f), pl_w_to_f32(lo, hi),
                                           wasm_f32x4_eq(s, wasm_f32x4_splat(mh)));
            e = wasm_v128_and(e, lanes_of(bits));
            float ev[B];
            wasm_v128_store(ev, e);
            for (unsigned b = bits; b; b &= b - 1)
                row[j0 + __builtin_ctz(b)] = ev[__builtin_ctz(b)];
            acc = wasm_f32x4_add(acc, e);
        }
        total[hh] = pl_w_hsum(acc);
        if (a->sinks)
            total[hh] += sk == mh ? 1.0f
                                  : (float)wasm_f64x2_extract_lane(
                                        pl_w_exp_f64(wasm_f64x2_splat((double)sk - md)), 0);
        memset(out + (t * a->H + h) * D, 0, (size_t)D * sizeof(float)); /* pass 3's sums */
    }

    /* Pass 3: o_d += e_j v_jd, entries ascending, each head's sums in its output row */
    const int64_t D4 = D / 4 * 4;
    FOR_SPAN (&sp, j0) {
        const unsigned bits = vis4(a, j0, qp);
        if (!bits) continue;
        widen4(kv, vbase, stride, bits, j0, D);
        for (int hh = 0; hh < n; hh++) {
            float *o = out + (t * a->H + h0 + hh) * D;
            const float *e = scratch + (size_t)hh * (size_t)(N + 16);
            for (unsigned b = bits; b; b &= b - 1) {
                const int i = __builtin_ctz(b);
                const float ej = e[j0 + i];
                const v128_t w = wasm_f32x4_splat(ej);
                const float *v = kv + (size_t)i * (size_t)D;
                for (int64_t d = 0; d < D4; d += 4)
                    wasm_v128_store(o + d,
                                    wasm_f32x4_add(wasm_v128_load(o + d),
                                                   wasm_f32x4_mul(w, wasm_v128_load(v + d))));
                for (int64_t d = D4; d < D; d++) o[d] = o[d] + ej * v[d];
            }
        }
    }
    for (int hh = 0; hh < n; hh++) {
        float *o = out + (t * a->H + h0 + hh) * D;
        const v128_t sum = wasm_f32x4_splat(total[hh]);
        for (int64_t d = 0; d < D4; d += 4)
            wasm_v128_store(o + d, wasm_f32x4_div(wasm_v128_load(o + d), sum));
        for (int64_t d = D4; d < D; d++) o[d] = o[d] / total[hh];
    }
}

/* out[t][h][d] for h in [h0, h1), every t; scratch holds PL_ATTN_SCRATCH(N, D) floats. An F16
 * cache: the heads of one KV head together (attend_group), else one at a time. */
void attention_wasm128(float *restrict out, const pl_attn_args *a, int64_t h0, int64_t h1,
                       float *restrict scratch)
{
    const int64_t per = a->H / a->Hkv;
    for (int64_t t = 0; t < a->T; t++)
        for (int64_t h = h0; h < h1;) {
            int64_t he = (h / per + 1) * per; /* the KV head's last query head + 1 */
            if (he > h1) he = h1;
            if (he > h + GMAX) he = h + GMAX;
            if (a->kv_type != PL_TYPE_F32 && he - h > 1) {
                attend_group(out, a, t, h, (int)(he - h), scratch);
                h = he;
            } else {
                attend_one(out + (t * a->H + h) * a->D, a, t, h, scratch);
                h++;
            }
        }
}
