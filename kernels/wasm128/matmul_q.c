/* matmul_q.c — wasm128 matmul of quantized weights against quantized activations: integer
 * dots by i32x4.dot_i16x8_s (int16 pairs into int32, exact). Not ref, and not a repacked
 * layout: it reads ggml's blocks straight from the mapping.
 *
 * Order of operations, the same for every (r, t) whatever r0, r1, T or the thread (the tokens
 * of a tile share only the decoded weights; each token has its own accumulators):
 * - 32-blocks x Q8_0 (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): each block's integer dot is exact. Blocks
 *   go in groups of 4, block 4g + i into float lane i: lane_i = lane_i + (dw dx) float(isum)
 *   (+ (mw dx) float(xsum) inside the term for the types with a min, as ref forms it). In the
 *   last group the missing blocks are zero blocks (add +0), never read. The 4 lanes are summed
 *   once, at the end, as (l0 + l2) + (l1 + l3).
 * - super-blocks x Q8_K (Q4_K, Q5_K, Q6_K): the integer sums are exact and the float term is
 *   formed and summed exactly as ref does it: bit-identical to ref.
 * Bound: ref's (kernels/ref/matmul.c) with the same c: each block term is formed with as many
 * roundings as ref's, and the argument there holds for any summation order of the terms.
 * Integers: weights are decoded to int16 (|q| <= 128), activations widened from int8, so every
 * pair product sum is < 2^15 * 2^8 and int32 sums stay far from overflow (bounds below).
 * PL_W_RELAXED (matmul_q_relaxed.c, the wasm128r set): the same integer sums, exact, by the
 * relaxed dot of the int8 activations with the weights' unsigned quants (< 64, in [0, 127] as
 * simd.h requires), the offsets taken off after: q - o as dot(x, q) - dot(x, o); a Q8_0 weight
 * w as (w & 0x7f) - 128 [w < 0]. Equal integers give equal floats: bit-identical to wasm128. */
#include "simd.h"
#include "wasm128.h"

#define NT 4 /* tokens that share one decode of a weight row */

/* ---- 32-blocks ------------------------------------------------------------------------- */

#define GROUP 4

/* One group of up to 4 weight blocks, decoded once for the tokens of a tile. */
typedef struct grp {
#if PL_W_RELAXED
    v128_t u[GROUP][2];  /* unsigned quants as bytes (no offset; Q8_0: w & 0x7f), 16 per vector */
    v128_t hb[GROUP][2]; /* Q8_0: 1 where w < 0 */
#else
    v128_t q[GROUP][4]; /* int16 quants (q - offset where the type has one), 8 per vector */
#endif
    v128_t dw, mw; /* weight scales (and mins), lane i for block i; 0 for missing blocks */
} grp;

/* 0x10 in byte j (of 16) where bit j0 + j of the little-endian qh is set. */
PL_W_INLINE v128_t fifth_bits16(uint32_t h, const int j0)
{
    const v128_t b = wasm_i8x16_swizzle(
        wasm_i32x4_splat((int32_t)h),
        j0 == 0 ? wasm_i8x16_make(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)
                : wasm_i8x16_make(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const v128_t bit = wasm_i8x16_make(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    return wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(b, bit), bit), wasm_i8x16_splat(0x10));
}

/* One half as a float, inline (simd.h's exact conversion in lane 0). */
PL_W_INLINE float f16f(pl_f16 h)
{
    return wasm_f32x4_extract_lane(pl_w_f16_to_f32(wasm_i32x4_splat(h)), 0);
}

/* Four halves (lanes of u32) as floats. */
PL_W_INLINE v128_t f16x4(uint32_t h0, uint32_t h1, uint32_t h2, uint32_t h3)
{
    return pl_w_f16_to_f32(wasm_i32x4_make((int32_t)h0, (int32_t)h1, (int32_t)h2, (int32_t)h3));
}

#if PL_W_RELAXED
/* Block i of the group: 32 unsigned quants as 2 byte vectors (elements 16k .. 16k + 15 in
 * u[k]), the offset not taken; Q8_0: the low 7 bits in u, the sign bit (0/1) in hb. */
PL_W_INLINE void decode_32(v128_t u[2], v128_t hb[2], pl_type type, const uint8_t *b)
{
    if (type == PL_TYPE_Q8_0) {
        const pl_block_q8_0 *p = (const pl_block_q8_0 *)b;
        const v128_t lo = wasm_v128_load(p->qs), hi = wasm_v128_load(p->qs + 16);
        u[0] = wasm_v128_and(lo, wasm_i8x16_splat(0x7f));
        u[1] = wasm_v128_and(hi, wasm_i8x16_splat(0x7f));
        hb[0] = wasm_u8x16_shr(lo, 7);
        hb[1] = wasm_u8x16_shr(hi, 7);
        return;
    }
    const uint8_t *qs;
    uint32_t h = 0;
    switch (type) {
    case PL_TYPE_Q4_0:
        qs = ((const pl_block_q4_0 *)b)->qs;
        break;
    case PL_TYPE_Q4_1:
        qs = ((const pl_block_q4_1 *)b)->qs;
        break;
    case PL_TYPE_Q5_0:
        qs = ((const pl_block_q5_0 *)b)->qs;
        memcpy(&h, ((const pl_block_q5_0 *)b)->qh, 4);
        break;
    default:
        qs = ((const pl_block_q5_1 *)b)->qs;
        memcpy(&h, ((const pl_block_q5_1 *)b)->qh, 4);
        break;
    }
    const v128_t v = wasm_v128_load(qs);
    u[0] = wasm_v128_and(v, wasm_i8x16_splat(0x0f));
    u[1] = wasm_u8x16_shr(v, 4);
    if (type == PL_TYPE_Q5_0 || type == PL_TYPE_Q5_1) {
        u[0] = wasm_v128_or(u[0], fifth_bits16(h, 0));
        u[1] = wasm_v128_or(u[1], fifth_bits16(h, 16));
    }
    hb[0] = hb[1] = wasm_i8x16_splat(0);
}
#else
/* Block i of the group: 32 quants as 4 int16 vectors (elements 8k .. 8k + 7 in q[k]). */
PL_W_INLINE void decode_32(v128_t q[4], pl_type type, const uint8_t *b)
{
    v128_t lo, hi; /* elements 0..15 and 16..31 as int8 */
    if (type == PL_TYPE_Q8_0) {
        const pl_block_q8_0 *p = (const pl_block_q8_0 *)b;
        lo = wasm_v128_load(p->qs);
        hi = wasm_v128_load(p->qs + 16);
    } else {
        const uint8_t *qs;
        uint32_t h = 0;
        switch (type) {
        case PL_TYPE_Q4_0:
            qs = ((const pl_block_q4_0 *)b)->qs;
            break;
        case PL_TYPE_Q4_1:
            qs = ((const pl_block_q4_1 *)b)->qs;
            break;
        case PL_TYPE_Q5_0:
            qs = ((const pl_block_q5_0 *)b)->qs;
            memcpy(&h, ((const pl_block_q5_0 *)b)->qh, 4);
            break;
        default:
            qs = ((const pl_block_q5_1 *)b)->qs;
            memcpy(&h, ((const pl_block_q5_1 *)b)->qh, 4);
            break;
        }
        const v128_t v = wasm_v128_load(qs);
        lo = wasm_v128_and(v, wasm_i8x16_splat(0x0f));
        hi = wasm_u8x16_shr(v, 4);
        if (type == PL_TYPE_Q5_0 || type == PL_TYPE_Q5_1) {
            lo = wasm_v128_or(lo, fifth_bits16(h, 0));
            hi = wasm_v128_or(hi, fifth_bits16(h, 16));
        }
        if (type == PL_TYPE_Q4_0 || type == PL_TYPE_Q5_0) {
            const v128_t off = wasm_i8x16_splat(type == PL_TYPE_Q4_0 ? 8 : 16);
            lo = wasm_i8x16_sub(lo, off);
            hi = wasm_i8x16_sub(hi, off);
        }
    }
    q[0] = wasm_i16x8_extend_low_i8x16(lo);
    q[1] = wasm_i16x8_extend_high_i8x16(lo);
    q[2] = wasm_i16x8_extend_low_i8x16(hi);
    q[3] = wasm_i16x8_extend_high_i8x16(hi);
}
#endif

/* The d (and m, for Q4_1/Q5_1: it follows d in both) of the block at b. */
PL_W_INLINE pl_f16 blk_d(const uint8_t *b)
{
    pl_f16 d;
    memcpy(&d, b, sizeof d);
    return d;
}

PL_W_INLINE void grp_load(grp *g, pl_type type, const uint8_t *w, size_t wbytes, const int n)
{
    uint32_t dw[GROUP] = {0}, mw[GROUP] = {0}; /* half bits; +0 for missing blocks */
    for (int i = 0; i < GROUP; i++) {
        if (i >= n) {
#if PL_W_RELAXED
            g->u[i][0] = g->u[i][1] = g->hb[i][0] = g->hb[i][1] = wasm_i8x16_splat(0);
#else
            for (int k = 0; k < 4; k++) g->q[i][k] = wasm_i16x8_splat(0);
#endif
            continue;
        }
        const uint8_t *b = w + (size_t)i * wbytes;
#if PL_W_RELAXED
        decode_32(g->u[i], g->hb[i], type, b);
#else
        decode_32(g->q[i], type, b);
#endif
        dw[i] = blk_d(b);
        if (type == PL_TYPE_Q4_1 || type == PL_TYPE_Q5_1) mw[i] = blk_d(b + 2);
    }
    g->dw = f16x4(dw[0], dw[1], dw[2], dw[3]);
    g->mw = f16x4(mw[0], mw[1], mw[2], mw[3]);
}

/* One group's (n <= 4 blocks) terms against one token's blocks xb, added into acc.
 * |isum| <= 32 * 128 * 128 = 2^19 (Q8_0), the sums of x <= 32 * 128: exact in int32 and as
 * floats. */
PL_W_INLINE v128_t grp_token(v128_t acc, const grp *g, pl_type type,
                             const pl_block_q8_0 *restrict xb, const int n)
{
    const int has_min = type == PL_TYPE_Q4_1 || type == PL_TYPE_Q5_1;
    v128_t s[GROUP], xs[GROUP];
    uint32_t dx[GROUP] = {0};
    for (int i = 0; i < GROUP; i++) {
        s[i] = xs[i] = wasm_i32x4_splat(0);
        if (i >= n) continue;
        dx[i] = xb[i].d;
        const v128_t x0 = wasm_v128_load(xb[i].qs), x1 = wasm_v128_load(xb[i].qs + 16);
#if PL_W_RELAXED
        const v128_t z = wasm_i32x4_splat(0);
        s[i] = pl_w_dot_i8_u7_add(x1, g->u[i][1], pl_w_dot_i8_u7_add(x0, g->u[i][0], z));
        if (type == PL_TYPE_Q8_0) { /* w = (w & 0x7f) - 128 [w < 0] */
            const v128_t neg =
                pl_w_dot_i8_u7_add(x1, g->hb[i][1], pl_w_dot_i8_u7_add(x0, g->hb[i][0], z));
            s[i] = wasm_i32x4_sub(s[i], wasm_i32x4_shl(neg, 7));
        } else if (type == PL_TYPE_Q4_0 || type == PL_TYPE_Q5_0) { /* q - 8, q - 16 */
            const v128_t off = wasm_i8x16_splat(type == PL_TYPE_Q4_0 ? 8 : 16);
            s[i] =
                wasm_i32x4_sub(s[i], pl_w_dot_i8_u7_add(x1, off, pl_w_dot_i8_u7_add(x0, off, z)));
        }
        if (has_min) {
            const v128_t one = wasm_i8x16_splat(1);
            xs[i] = pl_w_dot_i8_u7_add(x1, one, pl_w_dot_i8_u7_add(x0, one, z));
        }
#else
        s[i] = wasm_i32x4_add(
            wasm_i32x4_add(wasm_i32x4_dot_i16x8(g->q[i][0], wasm_i16x8_extend_low_i8x16(x0)),
                           wasm_i32x4_dot_i16x8(g->q[i][1], wasm_i16x8_extend_high_i8x16(x0))),
            wasm_i32x4_add(wasm_i32x4_dot_i16x8(g->q[i][2], wasm_i16x8_extend_low_i8x16(x1)),
                           wasm_i32x4_dot_i16x8(g->q[i][3], wasm_i16x8_extend_high_i8x16(x1))));
        if (has_min)
            xs[i] = wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_add(
                wasm_i16x8_extadd_pairwise_i8x16(x0), wasm_i16x8_extadd_pairwise_i8x16(x1)));
#endif
    }
    const v128_t vdx = f16x4(dx[0], dx[1], dx[2], dx[3]);
    const v128_t isum = wasm_f32x4_convert_i32x4(pl_w_hsum4x4_i32(s[0], s[1], s[2], s[3]));
    v128_t term = wasm_f32x4_mul(wasm_f32x4_mul(g->dw, vdx), isum);
    if (has_min) {
        const v128_t xsum = wasm_f32x4_convert_i32x4(pl_w_hsum4x4_i32(xs[0], xs[1], xs[2], xs[3]));
        term = wasm_f32x4_add(term, wasm_f32x4_mul(wasm_f32x4_mul(g->mw, vdx), xsum));
    }
    return wasm_f32x4_add(acc, term);
}

/* One weight row of nb blocks against nt tokens (a constant at every call). */
PL_W_INLINE void row_32(pl_type type, size_t wbytes, float *restrict y, int64_t ldy,
                        const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb,
                        int64_t nb, const int nt)
{
    v128_t acc[NT];
    for (int t = 0; t < nt; t++) acc[t] = wasm_f32x4_splat(0.0f);
    grp g;
    const int64_t full = nb / GROUP * GROUP;
    for (int64_t b = 0; b < full; b += GROUP) { /* whole groups: n a constant, no branches */
        grp_load(&g, type, w + (size_t)b * wbytes, wbytes, GROUP);
        for (int t = 0; t < nt; t++)
            acc[t] = grp_token(acc[t], &g, type, (const pl_block_q8_0 *)(x + (size_t)t * xrb) + b,
                               GROUP);
    }
    if (full < nb) { /* the last group, padded with zero blocks */
        const int n = (int)(nb - full);
        grp_load(&g, type, w + (size_t)full * wbytes, wbytes, n);
        for (int t = 0; t < nt; t++)
            acc[t] =
                grp_token(acc[t], &g, type, (const pl_block_q8_0 *)(x + (size_t)t * xrb) + full, n);
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = pl_w_hsum(acc[t]);
}

#define TILE(call)                                                                                 \
    for (int64_t r = r0; r < r1; r++) {                                                            \
        const uint8_t *wr = (const uint8_t *)w + (size_t)r * w_row_bytes;                          \
        for (int64_t t = 0; t < T; t += NT) {                                                      \
            float *yt = y + t * ldy + r;                                                           \
            const uint8_t *xt = (const uint8_t *)x + (size_t)t * x_row_bytes;                      \
            switch (T - t < NT ? T - t : NT) {                                                     \
            case 1:                                                                                \
                call(1);                                                                           \
                break;                                                                             \
            case 2:                                                                                \
                call(2);                                                                           \
                break;                                                                             \
            case 3:                                                                                \
                call(3);                                                                           \
                break;                                                                             \
            default:                                                                               \
                call(4);                                                                           \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
    }

#define MATMUL_32(name, type, block)                                                               \
    void name(PL_WASM128_MATMUL_ARGS)                                                              \
    {                                                                                              \
        const int64_t nb = K / 32;                                                                 \
        const pl_type ty = type;                                                                   \
        const size_t wb = sizeof(block);                                                           \
        TILE(CALL_32)                                                                              \
    }
#define CALL_32(n) row_32(ty, wb, yt, ldy, wr, xt, x_row_bytes, nb, n)

MATMUL_32(PL_WQ(matmul_q8_0_q8_0), PL_TYPE_Q8_0, pl_block_q8_0)
MATMUL_32(PL_WQ(matmul_q4_0_q8_0), PL_TYPE_Q4_0, pl_block_q4_0)
MATMUL_32(PL_WQ(matmul_q4_1_q8_0), PL_TYPE_Q4_1, pl_block_q4_1)
MATMUL_32(PL_WQ(matmul_q5_0_q8_0), PL_TYPE_Q5_0, pl_block_q5_0)
MATMUL_32(PL_WQ(matmul_q5_1_q8_0), PL_TYPE_Q5_1, pl_block_q5_1)

/* ---- super-blocks ---------------------------------------------------------------------- */

/* One super-block's 256 weight quants as 32 int16 vectors, and its sub-block scales. */
typedef struct kblk {
#if PL_W_RELAXED
    v128_t u[16]; /* unsigned quants as bytes (Q6_K: the 32 offset not taken), 16 per vector */
#else
    v128_t q[32];
#endif
    v128_t sc[16];   /* sub-block j's scale in every lane (8 sub-blocks of 32 or 16 of 16) */
    v128_t m03, m47; /* Q4_K/Q5_K: the mins of sub-blocks 0..3 and 4..7 */
    float d, dmin;
} kblk;

/* isum = sum_j sc_j * (q . x)_j over the super-block's sub-blocks of 8 * per elements, exact:
 * Q4_K/Q5_K |(q . x)_j| <= 31 * 128 * 32, times sc <= 63, 8 of them: < 2^26; Q6_K
 * |(q . x)_j| <= 32 * 128 * 16, times |sc| <= 128, 16 of them: < 2^28. */
PL_W_INLINE int32_t kdot(const kblk *k, const int per, const int8_t *restrict xq)
{
    v128_t acc = wasm_i32x4_splat(0);
#if PL_W_RELAXED
    const v128_t z = wasm_i32x4_splat(0);
    if (per == 4) /* Q4_K/Q5_K: sub-block j = bytes u[2j], u[2j + 1] */
        for (int j = 0; j < 8; j++) {
            const v128_t s =
                pl_w_dot_i8_u7_add(wasm_v128_load(xq + 32 * j + 16), k->u[2 * j + 1],
                                   pl_w_dot_i8_u7_add(wasm_v128_load(xq + 32 * j), k->u[2 * j], z));
            acc = wasm_i32x4_add(acc, wasm_i32x4_mul(s, k->sc[j]));
        }
    else /* Q6_K: sub-block j = u[j], q - 32 */
        for (int j = 0; j < 16; j++) {
            const v128_t xv = wasm_v128_load(xq + 16 * j);
            const v128_t s = wasm_i32x4_sub(pl_w_dot_i8_u7_add(xv, k->u[j], z),
                                            pl_w_dot_i8_u7_add(xv, wasm_i8x16_splat(32), z));
            acc = wasm_i32x4_add(acc, wasm_i32x4_mul(s, k->sc[j]));
        }
#else
    for (int j = 0; j < 32 / per; j++) {
        v128_t s = wasm_i32x4_splat(0);
        for (int i = 0; i < per; i += 2) {
            const v128_t xv = wasm_v128_load(xq + 8 * (j * per + i));
            s = wasm_i32x4_add(
                s, wasm_i32x4_dot_i16x8(k->q[j * per + i], wasm_i16x8_extend_low_i8x16(xv)));
            s = wasm_i32x4_add(
                s, wasm_i32x4_dot_i16x8(k->q[j * per + i + 1], wasm_i16x8_extend_high_i8x16(xv)));
        }
        acc = wasm_i32x4_add(acc, wasm_i32x4_mul(s, k->sc[j]));
    }
#endif
    return pl_w_hsum_i32(acc);
}

/* 16 unsigned bytes (< 64) as two int16 vectors. */
PL_W_INLINE void widen_u8(v128_t *q, v128_t v)
{
    q[0] = wasm_u16x8_extend_low_u8x16(v);
    q[1] = wasm_u16x8_extend_high_u8x16(v);
}

/* Q4_K/Q5_K super-block at b (has_qh: Q5_K's fifth bits): ref's element order, sub-block j =
 * elements 32j .. 32j + 31; scales and mins unpacked as ref's scale_min_k4 does. */
PL_W_INLINE void kblk_load_k4(kblk *k, const uint8_t *b, size_t qs_off, size_t qh_off,
                              const int has_qh)
{
    const pl_block_q4_k *hdr = (const pl_block_q4_k *)b; /* d, dmin, scales: same in Q5_K */
    const uint8_t *s = hdr->scales;
    int32_t m[8];
    for (int j = 0; j < 8; j++) {
        int32_t sc;
        if (j < 4) {
            sc = s[j] & 63;
            m[j] = s[j + 4] & 63;
        } else {
            sc = (s[j + 4] & 0x0f) | (s[j - 4] >> 6) << 4;
            m[j] = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
        }
        k->sc[j] = wasm_i32x4_splat(sc);
    }
    k->m03 = wasm_v128_load(m);
    k->m47 = wasm_v128_load(m + 4);
    k->d = f16f(hdr->d);
    k->dmin = f16f(hdr->dmin);
    const v128_t m4 = wasm_i8x16_splat(0x0f), one = wasm_i8x16_splat(1);
    v128_t h[2] = {wasm_i8x16_splat(0), wasm_i8x16_splat(0)};
    if (has_qh) h[0] = wasm_v128_load(b + qh_off), h[1] = wasm_v128_load(b + qh_off + 16);
    for (int p = 0; p < 4; p++)
        for (int e = 0; e < 2; e++) { /* elements 16e .. 16e + 15 of sub-blocks 2p, 2p + 1 */
            const v128_t v = wasm_v128_load(b + qs_off + 32 * p + 16 * e);
            v128_t lo = wasm_v128_and(v, m4), hi = wasm_u8x16_shr(v, 4);
            if (has_qh) {
                lo = wasm_v128_or(
                    lo, wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(h[e], 2 * p), one), 4));
                hi = wasm_v128_or(
                    hi, wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(h[e], 2 * p + 1), one), 4));
            }
#if PL_W_RELAXED
            k->u[2 * (2 * p) + e] = lo;
            k->u[2 * (2 * p + 1) + e] = hi;
#else
            widen_u8(&k->q[4 * (2 * p) + 2 * e], lo);
            widen_u8(&k->q[4 * (2 * p + 1) + 2 * e], hi);
#endif
        }
}

/* ref's s += d * float(isum) - dmin * float(summs), d = dw * dx, dmin = dminw * dx; summs =
 * sum_j m_j (bsums 2j + bsums 2j+1), exact. */
PL_W_INLINE float k4_term(const kblk *k, const pl_block_q8_k *xb)
{
    const int32_t isum = kdot(k, 4, xb->qs);
    const v128_t b0 = wasm_i32x4_extadd_pairwise_i16x8(wasm_v128_load(xb->bsums));
    const v128_t b1 = wasm_i32x4_extadd_pairwise_i16x8(wasm_v128_load(xb->bsums + 8));
    const int32_t summs =
        pl_w_hsum_i32(wasm_i32x4_add(wasm_i32x4_mul(b0, k->m03), wasm_i32x4_mul(b1, k->m47)));
    const float d = k->d * xb->d, dmin = k->dmin * xb->d;
    return d * (float)isum - dmin * (float)summs;
}

PL_W_INLINE void row_k4(float *restrict y, int64_t ldy, const uint8_t *restrict w, size_t wbytes,
                        size_t qs_off, size_t qh_off, const int has_qh, const uint8_t *restrict x,
                        size_t xrb, int64_t nb, const int nt)
{
    float s[NT];
    for (int t = 0; t < nt; t++) s[t] = 0.0f;
    kblk k;
    for (int64_t b = 0; b < nb; b++) {
        kblk_load_k4(&k, w + (size_t)b * wbytes, qs_off, qh_off, has_qh);
        for (int t = 0; t < nt; t++)
            s[t] += k4_term(&k, (const pl_block_q8_k *)(x + (size_t)t * xrb) + b);
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = s[t];
}

/* Q6_K super-block: ref's q = (4 low bits | 2 high bits << 4) - 32, sub-block j = elements
 * 16j .. 16j + 15 with the int8 scale scales[j]. */
PL_W_INLINE void kblk_load_q6(kblk *k, const pl_block_q6_k *b)
{
    for (int j = 0; j < 16; j++) k->sc[j] = wasm_i32x4_splat(b->scales[j]);
    k->d = f16f(b->d);
    const v128_t m4 = wasm_i8x16_splat(0x0f), m2 = wasm_i8x16_splat(0x03);
    const v128_t o32 = wasm_i8x16_splat(32);
    for (int h = 0; h < 2; h++)
        for (int e = 0; e < 2; e++) { /* elements 16e .. 16e + 15 of each quarter of 32 */
            const v128_t a = wasm_v128_load(b->ql + 64 * h + 16 * e);
            const v128_t c = wasm_v128_load(b->ql + 64 * h + 32 + 16 * e);
            const v128_t hb = wasm_v128_load(b->qh + 32 * h + 16 * e);
            const v128_t q[4] = {
                wasm_v128_or(wasm_v128_and(a, m4), wasm_i8x16_shl(wasm_v128_and(hb, m2), 4)),
                wasm_v128_or(wasm_v128_and(c, m4),
                             wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(hb, 2), m2), 4)),
                wasm_v128_or(wasm_u8x16_shr(a, 4),
                             wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(hb, 4), m2), 4)),
                wasm_v128_or(wasm_u8x16_shr(c, 4), wasm_i8x16_shl(wasm_u8x16_shr(hb, 6), 4)),
            };
            for (int i = 0; i < 4; i++) { /* sub-block 8h + 2i + e */
#if PL_W_RELAXED
                (void)o32;
                k->u[8 * h + 2 * i + e] = q[i];
#else
                const v128_t v = wasm_i8x16_sub(q[i], o32);
                v128_t *dst = &k->q[2 * (8 * h + 2 * i + e)];
                dst[0] = wasm_i16x8_extend_low_i8x16(v);
                dst[1] = wasm_i16x8_extend_high_i8x16(v);
#endif
            }
        }
}

PL_W_INLINE void row_q6_k(float *restrict y, int64_t ldy, const pl_block_q6_k *restrict w,
                          const uint8_t *restrict x, size_t xrb, int64_t nb, const int nt)
{
    float s[NT];
    for (int t = 0; t < nt; t++) s[t] = 0.0f;
    kblk k;
    for (int64_t b = 0; b < nb; b++) {
        kblk_load_q6(&k, &w[b]);
        for (int t = 0; t < nt; t++) {
            const pl_block_q8_k *xb = (const pl_block_q8_k *)(x + (size_t)t * xrb) + b;
            const int32_t isum = kdot(&k, 2, xb->qs);
            const float d = k.d * xb->d;
            s[t] += d * (float)isum;
        }
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = s[t];
}

void PL_WQ(matmul_q4_k_q8_k)(PL_WASM128_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK_K;
#define CALL(n)                                                                                    \
    row_k4(yt, ldy, wr, sizeof(pl_block_q4_k), offsetof(pl_block_q4_k, qs), 0, 0, xt, x_row_bytes, \
           nb, n)
    TILE(CALL)
#undef CALL
}

void PL_WQ(matmul_q5_k_q8_k)(PL_WASM128_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK_K;
#define CALL(n)                                                                                    \
    row_k4(yt, ldy, wr, sizeof(pl_block_q5_k), offsetof(pl_block_q5_k, qs),                        \
           offsetof(pl_block_q5_k, qh), 1, xt, x_row_bytes, nb, n)
    TILE(CALL)
#undef CALL
}

void PL_WQ(matmul_q6_k_q8_k)(PL_WASM128_MATMUL_ARGS)
{
    const int64_t nb = K / PL_QK_K;
#define CALL(n) row_q6_k(yt, ldy, (const pl_block_q6_k *)wr, xt, x_row_bytes, nb, n)
    TILE(CALL)
#undef CALL
}
