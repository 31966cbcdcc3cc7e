/* matmul_q.c — wasm128 matmul of quantized weights against quantized activations: integer
 * dots by i32x4.dot_i16x8_s (int16 pairs into int32, exact). Not ref, and not a repacked
 * layout: it reads ggml's blocks straight from the mapping.
 *
 * Order of operations, the same for every (r, t) whatever r0, r1, T or the thread (the tokens
 * of a tile share only the decoded weights; each token has its own accumulators):
 * - 32-blocks x Q8_0 (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4): each block's integer dot
 *   is exact.
 *   Blocks go in groups of 4, block 4g + i's term in float lane i: (dw dx) float(isum) (+ (mw
 *   dx) float(xsum) inside the term for the types with a min, as ref forms it). In the last
 *   group the missing blocks are zero blocks (+0), never read. Q4_0 .. Q8_0 add block 4g + i
 *   into lane i and sum the 4 lanes once, at the end, as (l0 + l2) + (l1 + l3); IQ4_NL and
 *   MXFP4 (dw = 2^(e - 128), pl_e8m0_half) add the terms to one float in block order, as ref
 *   does: bit-identical to ref.
 * - super-blocks x Q8_K (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS): the integer sums are exact and
 *   the float term is formed and summed exactly as ref does it: bit-identical to ref.
 * Bound: ref's (kernels/ref/matmul.c) with the same c: each block term is formed with as many
 * roundings as ref's, and the argument there holds for any summation order of the terms.
 * Integers: weights are decoded to int16 (|q| <= 128), activations widened from int8, so every
 * pair product sum is < 2^15 * 2^8 and int32 sums stay far from overflow (bounds below).
 * PL_W_RELAXED (matmul_q_relaxed.c, the wasm128r set): the same integer sums, exact, by the
 * relaxed dot of the int8 activations with the weights' unsigned quants (< 128, in [0, 127] as
 * simd.h requires), the offsets taken off after: q - o as dot(x, q) - dot(x, o) (Q4_0, Q5_0,
 * Q3_K, Q6_K); an int8 weight w (Q8_0, IQ4_NL's, IQ4_XS's and MXFP4's levels) as
 * dot(x, w & 0x7f) - 128 dot(x, [w < 0]). Equal integers give equal floats: bit-identical to
 * wasm128. Decode (T <= NT): the activation side of those offsets and of Q4_1/Q5_1's mins is
 * sum(x) per block, the same for every row: taken once per call (x_sums) instead of once per
 * row and block (two dots each); the integers are the same, so are the bits. */
#include "simd.h"
#include "wasm128.h"

#define NT 4 /* tokens that share one decode of a weight row */

/* ---- 32-blocks ------------------------------------------------------------------------- */

#define GROUP 4

/* One group of up to 4 weight blocks, decoded once for the tokens of a tile. */
typedef struct grp {
#if PL_W_RELAXED
    v128_t u[GROUP][2];  /* unsigned quants as bytes (no offset; int8 w: w & 0x7f), 16 a vector */
    v128_t hb[GROUP][2]; /* Q8_0, IQ4_NL, MXFP4: 1 where w < 0 */
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

/* The 32 values of the block at b as bytes, elements 0..15 in *lo, 16..31 in *hi: Q8_0's int8
 * weights and IQ4_NL's and MXFP4's levels (signed_32), else the unsigned quants, the offset
 * not taken. */
PL_W_INLINE void bytes_32(v128_t *lo, v128_t *hi, pl_type type, const uint8_t *b)
{
    if (type == PL_TYPE_Q8_0) {
        const pl_block_q8_0 *p = (const pl_block_q8_0 *)b;
        *lo = wasm_v128_load(p->qs);
        *hi = wasm_v128_load(p->qs + 16);
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
    case PL_TYPE_Q5_1:
        qs = ((const pl_block_q5_1 *)b)->qs;
        memcpy(&h, ((const pl_block_q5_1 *)b)->qh, 4);
        break;
    case PL_TYPE_MXFP4:
        qs = ((const pl_block_mxfp4 *)b)->qs;
        break;
    default: /* PL_TYPE_IQ4_NL */
        qs = ((const pl_block_iq4_nl *)b)->qs;
        break;
    }
    const v128_t v = wasm_v128_load(qs);
    *lo = wasm_v128_and(v, wasm_i8x16_splat(0x0f));
    *hi = wasm_u8x16_shr(v, 4);
    if (type == PL_TYPE_Q5_0 || type == PL_TYPE_Q5_1) {
        *lo = wasm_v128_or(*lo, fifth_bits16(h, 0));
        *hi = wasm_v128_or(*hi, fifth_bits16(h, 16));
    }
    if (type == PL_TYPE_IQ4_NL || type == PL_TYPE_MXFP4) {
        const v128_t levels =
            wasm_v128_load(type == PL_TYPE_MXFP4 ? pl_mxfp4_values : pl_iq4nl_values);
        *lo = wasm_i8x16_swizzle(levels, *lo);
        *hi = wasm_i8x16_swizzle(levels, *hi);
    }
}

#if PL_W_RELAXED
/* Whether bytes_32 gives the type's values as int8 (else unsigned quants). */
PL_W_INLINE int signed_32(pl_type type)
{
    return type == PL_TYPE_Q8_0 || type == PL_TYPE_IQ4_NL || type == PL_TYPE_MXFP4;
}

/* Block i of the group: 32 unsigned quants as 2 byte vectors (elements 16k .. 16k + 15 in
 * u[k]), the offset not taken; int8 values (Q8_0, IQ4_NL): the low 7 bits in u, the sign bit
 * (0/1) in hb. */
PL_W_INLINE void decode_32(v128_t u[2], v128_t hb[2], pl_type type, const uint8_t *b)
{
    bytes_32(&u[0], &u[1], type, b);
    hb[0] = hb[1] = wasm_i8x16_splat(0);
    if (signed_32(type))
        for (int k = 0; k < 2; k++) {
            hb[k] = wasm_u8x16_shr(u[k], 7);
            u[k] = wasm_v128_and(u[k], wasm_i8x16_splat(0x7f));
        }
}
#else
/* Block i of the group: 32 quants as 4 int16 vectors (elements 8k .. 8k + 7 in q[k]). */
PL_W_INLINE void decode_32(v128_t q[4], pl_type type, const uint8_t *b)
{
    v128_t lo, hi; /* elements 0..15 and 16..31 as int8 */
    bytes_32(&lo, &hi, type, b);
    if (type == PL_TYPE_Q4_0 || type == PL_TYPE_Q5_0) {
        const v128_t off = wasm_i8x16_splat(type == PL_TYPE_Q4_0 ? 8 : 16);
        lo = wasm_i8x16_sub(lo, off);
        hi = wasm_i8x16_sub(hi, off);
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

/* MXFP4: the scales 2^(e - 128) (pl_e8m0_half) of the n blocks at w, lane i for block i; +0
 * for missing blocks. Kept out of grp_load's loop: with the scale chosen per type inside it,
 * emscripten's clang stopped unrolling that loop for every type (each block's d went through
 * the stack, 4 stores and a v128 load per group), and wasm128's decode ran 25-30% slower in
 * node (perf/NOTES.md, issue 52); as it is, the other types' code is byte for byte what it
 * was before MXFP4. */
PL_W_INLINE v128_t e8m0x4(const uint8_t *w, const int n)
{
    float e[GROUP] = {0};
    for (int i = 0; i < n; i++) e[i] = pl_e8m0_half(w[(size_t)i * sizeof(pl_block_mxfp4)]);
    return wasm_f32x4_make(e[0], e[1], e[2], e[3]);
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
    g->dw = type == PL_TYPE_MXFP4 ? e8m0x4(w, n) : f16x4(dw[0], dw[1], dw[2], dw[3]);
    g->mw = f16x4(mw[0], mw[1], mw[2], mw[3]);
}

#if PL_W_RELAXED
#define XS_MAX 512 /* blocks of one row whose sums x_sums keeps (K <= 16384): 8 KiB of stack */

/* Whether the type's term needs sum(x) per block: an offset (Q4_0, Q5_0) or a min. */
PL_W_INLINE int needs_xsum(pl_type type)
{
    return type == PL_TYPE_Q4_0 || type == PL_TYPE_Q5_0 || type == PL_TYPE_Q4_1 ||
           type == PL_TYPE_Q5_1;
}

/* xs[t * nb + b] = sum of token t's block b (|sum| <= 32 * 128: exact). */
static void x_sums(int32_t *restrict xs, const uint8_t *restrict x, size_t xrb, int64_t nb,
                   int64_t nt)
{
    for (int64_t t = 0; t < nt; t++) {
        const pl_block_q8_0 *xb = (const pl_block_q8_0 *)(x + (size_t)t * xrb);
        for (int64_t b = 0; b < nb; b++) {
            const v128_t x0 = wasm_v128_load(xb[b].qs), x1 = wasm_v128_load(xb[b].qs + 16);
            xs[t * nb + b] = pl_w_hsum_i32(wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_add(
                wasm_i16x8_extadd_pairwise_i8x16(x0), wasm_i16x8_extadd_pairwise_i8x16(x1))));
        }
    }
}
#endif

/* One group's (n <= 4 blocks) terms against one token's blocks xb, block i's in lane i (+0
 * for missing blocks). |isum| <= 32 * 128 * 128 = 2^19 (Q8_0), the sums of x <= 32 * 128:
 * exact in int32 and as floats. xsum (relaxed, needs_xsum types; NULL: none): the blocks'
 * sum(x), lane i for block i (0 for missing blocks), in place of the per-block offset dots. */
PL_W_INLINE v128_t grp_terms(const grp *g, pl_type type, const pl_block_q8_0 *restrict xb,
                             const int n, const int32_t *restrict xsum)
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
        if (signed_32(type)) { /* w = (w & 0x7f) - 128 [w < 0] */
            const v128_t neg =
                pl_w_dot_i8_u7_add(x1, g->hb[i][1], pl_w_dot_i8_u7_add(x0, g->hb[i][0], z));
            s[i] = wasm_i32x4_sub(s[i], wasm_i32x4_shl(neg, 7));
        } else if (!xsum && (type == PL_TYPE_Q4_0 || type == PL_TYPE_Q5_0)) { /* q - 8, q - 16 */
            const v128_t off = wasm_i8x16_splat(type == PL_TYPE_Q4_0 ? 8 : 16);
            s[i] =
                wasm_i32x4_sub(s[i], pl_w_dot_i8_u7_add(x1, off, pl_w_dot_i8_u7_add(x0, off, z)));
        }
        if (has_min && !xsum) {
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
    v128_t is = pl_w_hsum4x4_i32(s[0], s[1], s[2], s[3]);
    v128_t xsv = has_min ? pl_w_hsum4x4_i32(xs[0], xs[1], xs[2], xs[3]) : wasm_i32x4_splat(0);
#if PL_W_RELAXED
    if (xsum) {
        xsv = wasm_v128_load(xsum);
        if (type == PL_TYPE_Q4_0 || type == PL_TYPE_Q5_0) /* sum (q - o) x = dot(q, x) - o sum(x) */
            is = wasm_i32x4_sub(is, wasm_i32x4_shl(xsv, type == PL_TYPE_Q4_0 ? 3 : 4));
    }
#else
    (void)xsum;
#endif
    const v128_t isum = wasm_f32x4_convert_i32x4(is);
    v128_t term = wasm_f32x4_mul(wasm_f32x4_mul(g->dw, vdx), isum);
    if (has_min) {
        const v128_t xsumf = wasm_f32x4_convert_i32x4(xsv);
        term = wasm_f32x4_add(term, wasm_f32x4_mul(wasm_f32x4_mul(g->mw, vdx), xsumf));
    }
    return term;
}

/* Adds a group's terms: IQ4_NL and MXFP4 into s[t] one block after the other, as ref does (the new
 * types are bit-identical to ref); the others block i into lane i of acc[t]. */
PL_W_INLINE void grp_add(v128_t *acc, float *s, pl_type type, v128_t term, const int n)
{
    if (type == PL_TYPE_IQ4_NL || type == PL_TYPE_MXFP4) {
        *s += wasm_f32x4_extract_lane(term, 0);
        if (n > 1) *s += wasm_f32x4_extract_lane(term, 1);
        if (n > 2) *s += wasm_f32x4_extract_lane(term, 2);
        if (n > 3) *s += wasm_f32x4_extract_lane(term, 3);
    } else
        *acc = wasm_f32x4_add(*acc, term);
}

/* One weight row of nb blocks against nt tokens (a constant at every call). xs: x_sums of
 * the nt tokens (nb a token), or NULL. */
PL_W_INLINE void row_32(pl_type type, size_t wbytes, float *restrict y, int64_t ldy,
                        const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb,
                        int64_t nb, const int nt, const int32_t *restrict xs)
{
    v128_t acc[NT];
    float s[NT];
    for (int t = 0; t < nt; t++) acc[t] = wasm_f32x4_splat(0.0f), s[t] = 0.0f;
    grp g;
    const int64_t full = nb / GROUP * GROUP;
    for (int64_t b = 0; b < full; b += GROUP) { /* whole groups: n a constant, no branches */
        grp_load(&g, type, w + (size_t)b * wbytes, wbytes, GROUP);
        for (int t = 0; t < nt; t++)
            grp_add(&acc[t], &s[t], type,
                    grp_terms(&g, type, (const pl_block_q8_0 *)(x + (size_t)t * xrb) + b, GROUP,
                              xs ? xs + t * nb + b : NULL),
                    GROUP);
    }
    if (full < nb) { /* the last group, padded with zero blocks */
        const int n = (int)(nb - full);
        grp_load(&g, type, w + (size_t)full * wbytes, wbytes, n);
        for (int t = 0; t < nt; t++) {
            int32_t last[GROUP] = {0}; /* the missing blocks' sums are 0, never read */
            if (xs)
                for (int i = 0; i < n; i++) last[i] = xs[t * nb + full + i];
            grp_add(&acc[t], &s[t], type,
                    grp_terms(&g, type, (const pl_block_q8_0 *)(x + (size_t)t * xrb) + full, n,
                              xs ? last : NULL),
                    n);
        }
    }
    for (int t = 0; t < nt; t++)
        y[t * ldy] = type == PL_TYPE_IQ4_NL || type == PL_TYPE_MXFP4 ? s[t] : pl_w_hsum(acc[t]);
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

#if PL_W_RELAXED
/* Decode (T <= NT tokens, every row): the sums of x once, then each row. */
#define ROWS_XS(n)                                                                                 \
    for (int64_t r = r0; r < r1; r++)                                                              \
        row_32(ty, wb, y + r, ldy, (const uint8_t *)w + (size_t)r * w_row_bytes, x, x_row_bytes,   \
               nb, n, xs);
#define DECODE_XS                                                                                  \
    if (needs_xsum(ty) && T <= NT && nb <= XS_MAX) {                                               \
        int32_t xs[NT * XS_MAX];                                                                   \
        x_sums(xs, x, x_row_bytes, nb, T);                                                         \
        switch (T) {                                                                               \
        case 1:                                                                                    \
            ROWS_XS(1) break;                                                                      \
        case 2:                                                                                    \
            ROWS_XS(2) break;                                                                      \
        case 3:                                                                                    \
            ROWS_XS(3) break;                                                                      \
        default:                                                                                   \
            ROWS_XS(4) break;                                                                      \
        }                                                                                          \
        return;                                                                                    \
    }
#else
#define DECODE_XS
#endif

#define MATMUL_32(name, type, block)                                                               \
    void name(PL_WASM128_MATMUL_ARGS)                                                              \
    {                                                                                              \
        const int64_t nb = K / 32;                                                                 \
        const pl_type ty = type;                                                                   \
        const size_t wb = sizeof(block);                                                           \
        DECODE_XS                                                                                  \
        TILE(CALL_32)                                                                              \
    }
#define CALL_32(n) row_32(ty, wb, yt, ldy, wr, xt, x_row_bytes, nb, n, NULL)

MATMUL_32(PL_WQ(matmul_q8_0_q8_0), PL_TYPE_Q8_0, pl_block_q8_0)
MATMUL_32(PL_WQ(matmul_q4_0_q8_0), PL_TYPE_Q4_0, pl_block_q4_0)
MATMUL_32(PL_WQ(matmul_q4_1_q8_0), PL_TYPE_Q4_1, pl_block_q4_1)
MATMUL_32(PL_WQ(matmul_q5_0_q8_0), PL_TYPE_Q5_0, pl_block_q5_0)
MATMUL_32(PL_WQ(matmul_q5_1_q8_0), PL_TYPE_Q5_1, pl_block_q5_1)
MATMUL_32(PL_WQ(matmul_iq4_nl_q8_0), PL_TYPE_IQ4_NL, pl_block_iq4_nl)
MATMUL_32(PL_WQ(matmul_mxfp4_q8_0), PL_TYPE_MXFP4, pl_block_mxfp4)

/* ---- super-blocks ---------------------------------------------------------------------- */

/* One super-block's 256 weight values in 16 chunks of 16 (chunk c = elements 16c .. 16c + 15),
 * its sub-block scales and mins. */
typedef struct kblk {
#if PL_W_RELAXED
    v128_t u[16];  /* chunk c's unsigned quants as bytes, the offset not taken (Q3_K 4, Q6_K
                      32); IQ4_XS: the level's low 7 bits */
    v128_t hb[16]; /* IQ4_XS: 1 where the level is < 0 */
#else
    v128_t q[32]; /* chunk c's values as int16 in q[2c], q[2c + 1] */
#endif
    v128_t sc[16]; /* sub-block j's scale in every lane (8 sub-blocks of 32 or 16 of 16) */
#if PL_W_RELAXED
    int16_t sc16[16]; /* the sub-block scales (8 or 16; not IQ4_XS): kdot's pairs, and Q3_K's and
                         Q6_K's offset side sum_j sc_j bsum_j */
#endif
    v128_t m[4]; /* Q4_K/Q5_K: the mins of sub-blocks 4i .. 4i + 3 (i < 2); Q2_K: i < 4 */
    float d, dmin;
} kblk;

/* Sub-block j's scale (IQ4_XS sets k->sc itself). */
PL_W_INLINE void kput_sc(kblk *k, int j, int32_t sc)
{
#if PL_W_RELAXED
    k->sc16[j] = (int16_t)sc;
#else
    k->sc[j] = wasm_i32x4_splat(sc);
#endif
}

/* Chunk c from 16 unsigned bytes v (< 128), whose value is v - off. */
PL_W_INLINE void kput_u(kblk *k, int c, v128_t v, const int off)
{
#if PL_W_RELAXED
    (void)off;
    k->u[c] = v;
#else
    if (off) v = wasm_i8x16_sub(v, wasm_i8x16_splat((int8_t)off));
    k->q[2 * c] = wasm_i16x8_extend_low_i8x16(v);
    k->q[2 * c + 1] = wasm_i16x8_extend_high_i8x16(v);
#endif
}

/* Chunk c from 16 int8 values. */
PL_W_INLINE void kput_s(kblk *k, int c, v128_t v)
{
#if PL_W_RELAXED
    k->u[c] = wasm_v128_and(v, wasm_i8x16_splat(0x7f));
    k->hb[c] = wasm_u8x16_shr(v, 7);
#else
    kput_u(k, c, v, 0);
#endif
}

#if PL_W_RELAXED
/* A K-quant block's scale pairs for the one-i16-dot scaling: sp[i] = [sc_2i x4, sc_2i+1 x4]
 * (per 2: sixteen sub-blocks of 16, their scales from two vectors; per 4: eight of 32, sp[0..3]
 * used). */
PL_W_INLINE void k_scale_pairs(const kblk *k, const int per, v128_t sp[8])
{
    const v128_t s0 = wasm_v128_load(k->sc16), s1 = per == 2 ? wasm_v128_load(k->sc16 + 8) : s0;
    sp[0] = wasm_i16x8_shuffle(s0, s0, 0, 0, 0, 0, 1, 1, 1, 1);
    sp[1] = wasm_i16x8_shuffle(s0, s0, 2, 2, 2, 2, 3, 3, 3, 3);
    sp[2] = wasm_i16x8_shuffle(s0, s0, 4, 4, 4, 4, 5, 5, 5, 5);
    sp[3] = wasm_i16x8_shuffle(s0, s0, 6, 6, 6, 6, 7, 7, 7, 7);
    sp[4] = wasm_i16x8_shuffle(s1, s1, 0, 0, 0, 0, 1, 1, 1, 1);
    sp[5] = wasm_i16x8_shuffle(s1, s1, 2, 2, 2, 2, 3, 3, 3, 3);
    sp[6] = wasm_i16x8_shuffle(s1, s1, 4, 4, 4, 4, 5, 5, 5, 5);
    sp[7] = wasm_i16x8_shuffle(s1, s1, 6, 6, 6, 6, 7, 7, 7, 7);
}
#endif

/* isum = sum_j sc_j * (q . x)_j over the super-block's sub-blocks of 16 * per / 2 elements
 * (per: int16 vectors in a sub-block), exact. off: the relaxed flavour's offset of the quants
 * (Q3_K 4, Q6_K 32); sgn: the values are int8 split as (v & 0x7f) - 128 [v < 0] (IQ4_XS).
 * Bounds, |(q . x)_j| times |sc_j|, times the count: Q4_K/Q5_K 31 * 128 * 32 * 63 * 8 < 2^26;
 * Q6_K 32 * 128 * 16 * 128 * 16 < 2^28; Q2_K 3 * 128 * 16 * 15 * 16 < 2^21; Q3_K
 * 4 * 128 * 16 * 32 * 16 < 2^22; IQ4_XS 127 * 128 * 32 * 32 * 8 < 2^27. */
PL_W_INLINE int32_t kdot(const kblk *k, const int per, const int off, const int sgn,
                         const int8_t *restrict xq)
{
    v128_t acc = wasm_i32x4_splat(0);
#if PL_W_RELAXED
    const v128_t z = wasm_i32x4_splat(0), o = wasm_i8x16_splat((int8_t)off);
    if (!sgn && !off) {
        /* A sub-block's 4 lane sums fit int16 (|x| <= 128 times the unsigned quants: Q4_K 8 *
         * 128 * 15, Q5_K 8 * 128 * 31, Q6_K 4 * 128 * 63 = 32256, Q3_K 4 * 128 * 7, Q2_K 4 * 128
         * * 3): two sub-blocks narrowed (exact) into one int16 vector and multiplied by their
         * scales [sc_j x4, sc_j+1 x4] with one i16 dot, in place of two i32 multiplies and adds.
         * The same exact integer. */
        v128_t sp[8];
        k_scale_pairs(k, per, sp);
        for (int j = 0; j < 32 / per; j += 2) {
            v128_t a = z, b = z;
            for (int c = j * per / 2; c < (j + 1) * per / 2; c++)
                a = pl_w_dot_i8_u7_add(wasm_v128_load(xq + 16 * c), k->u[c], a);
            for (int c = (j + 1) * per / 2; c < (j + 2) * per / 2; c++)
                b = pl_w_dot_i8_u7_add(wasm_v128_load(xq + 16 * c), k->u[c], b);
            acc =
                wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_i16x8_narrow_i32x4(a, b), sp[j / 2]));
        }
        return pl_w_hsum_i32(acc);
    }
    for (int j = 0; j < 32 / per; j++) {
        v128_t s = z, neg = z, offs = z;
        for (int c = j * per / 2; c < (j + 1) * per / 2; c++) {
            const v128_t xv = wasm_v128_load(xq + 16 * c);
            s = pl_w_dot_i8_u7_add(xv, k->u[c], s);
            if (sgn) neg = pl_w_dot_i8_u7_add(xv, k->hb[c], neg);
            if (off) offs = pl_w_dot_i8_u7_add(xv, o, offs);
        }
        if (sgn) s = wasm_i32x4_sub(s, wasm_i32x4_shl(neg, 7));
        if (off) s = wasm_i32x4_sub(s, offs);
        acc = wasm_i32x4_add(acc, wasm_i32x4_mul(s, k->sc[j]));
    }
#else
    (void)off;
    (void)sgn;
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

/* Q4_K/Q5_K: elements 16e .. 16e + 15 of sub-blocks 2p (lo) and 2p + 1 (hi) from the 16 quant
 * bytes at q, with Q5_K's fifth bits (bits 2p, 2p + 1 of the 16 bytes at *qh; NULL: Q4_K). */
PL_W_INLINE void k4_quants16(const uint8_t *q, const v128_t *qh, const int p, v128_t *lo,
                             v128_t *hi)
{
    const v128_t v = wasm_v128_load(q), m4 = wasm_i8x16_splat(0x0f), one = wasm_i8x16_splat(1);
    *lo = wasm_v128_and(v, m4), *hi = wasm_u8x16_shr(v, 4);
    if (qh) {
        *lo = wasm_v128_or(*lo, wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(*qh, 2 * p), one), 4));
        *hi = wasm_v128_or(*hi,
                           wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(*qh, 2 * p + 1), one), 4));
    }
}

/* Q4_K/Q5_K super-block at b (has_qh: Q5_K's fifth bits): ref's element order, sub-block j =
 * elements 32j .. 32j + 31; scales and mins unpacked as ref's scale_min_k4 does. */
PL_W_INLINE void kblk_load_k4(kblk *k, const uint8_t *b, size_t qs_off, size_t qh_off,
                              const int has_qh, const int quants)
{
    const pl_block_q4_k *hdr = (const pl_block_q4_k *)b; /* d, dmin, scales: same in Q5_K */
    const uint8_t *s = hdr->scales;
#if PL_W_RELAXED
    /* The 8 scales and 8 mins in bytes 0..7 and 8..15 at once: sc_j = s_j & 63, m_j = s_j+4 & 63
     * (j < 4); sc_j = (s_j+4 & 15) | (s_j-4 >> 6) << 4, m_j = (s_j+4 >> 4) | (s_j >> 6) << 4
     * (j >= 4). The 16 bytes at s end inside the block (its quants follow). 16-bit shifts, each
     * masked to bits of the byte's own. */
    const v128_t sv = wasm_v128_load(s);
    const v128_t a = wasm_i8x16_shuffle(sv, sv, 0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11);
    const v128_t t = wasm_i8x16_shuffle(sv, sv, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 7);
    const v128_t low = wasm_v128_or(
        wasm_v128_and(a,
                      wasm_i8x16_make(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0)),
        wasm_v128_and(wasm_u16x8_shr(a, 4),
                      wasm_i8x16_make(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
    const v128_t sm =
        wasm_v128_or(low, wasm_v128_and(wasm_u16x8_shr(t, 2),
                                        wasm_i8x16_make(0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30, 0, 0, 0,
                                                        0, 0x30, 0x30, 0x30, 0x30)));
    wasm_v128_store(k->sc16, wasm_u16x8_extend_low_u8x16(sm));
    const v128_t m16 = wasm_u16x8_extend_high_u8x16(sm);
    k->m[0] = wasm_u32x4_extend_low_u16x8(m16);
    k->m[1] = wasm_u32x4_extend_high_u16x8(m16);
    const v128_t dd = pl_w_f16_to_f32(wasm_u32x4_extend_low_u16x8(wasm_v128_load32_zero(b)));
    k->d = wasm_f32x4_extract_lane(dd, 0); /* d, dmin: the two halves at b */
    k->dmin = wasm_f32x4_extract_lane(dd, 1);
#else
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
        kput_sc(k, j, sc);
    }
    k->m[0] = wasm_v128_load(m);
    k->m[1] = wasm_v128_load(m + 4);
    k->d = f16f(hdr->d);
    k->dmin = f16f(hdr->dmin);
#endif
    if (!quants) return; /* kdot_k4_x takes them */
    v128_t h[2] = {wasm_i8x16_splat(0), wasm_i8x16_splat(0)};
    if (has_qh) h[0] = wasm_v128_load(b + qh_off), h[1] = wasm_v128_load(b + qh_off + 16);
    for (int p = 0; p < 4; p++)
        for (int e = 0; e < 2; e++) { /* elements 16e .. 16e + 15 of sub-blocks 2p, 2p + 1 */
            v128_t lo, hi;
            k4_quants16(b + qs_off + 32 * p + 16 * e, has_qh ? &h[e] : NULL, p, &lo, &hi);
            kput_u(k, 2 * (2 * p) + e, lo, 0);
            kput_u(k, 2 * (2 * p + 1) + e, hi, 0);
        }
}

/* Q6_K super-block: ref's q = (4 low bits | 2 high bits << 4) - 32, sub-block j = elements
 * 16j .. 16j + 15 with the int8 scale scales[j]. */
PL_W_INLINE void kblk_load_q6(kblk *k, const pl_block_q6_k *b, const int quants)
{
    for (int j = 0; j < 16; j++) kput_sc(k, j, b->scales[j]);
    k->d = f16f(b->d);
    if (!quants) return; /* kdot_q6_x takes them */
    /* 16-bit shifts (SIMD128 has no byte shift; engines emulate one), each masked to bits of
     * the byte's own: the high bits' pair 2i moved to bits 4, 5. */
    const v128_t m4 = wasm_i8x16_splat(0x0f), m30 = wasm_i8x16_splat(0x30);
    for (int h = 0; h < 2; h++)
        for (int e = 0; e < 2; e++) { /* elements 16e .. 16e + 15 of each quarter of 32 */
            const v128_t a = wasm_v128_load(b->ql + 64 * h + 16 * e);
            const v128_t c = wasm_v128_load(b->ql + 64 * h + 32 + 16 * e);
            const v128_t hb = wasm_v128_load(b->qh + 32 * h + 16 * e);
            const v128_t q[4] = {
                wasm_v128_or(wasm_v128_and(a, m4), wasm_v128_and(wasm_i16x8_shl(hb, 4), m30)),
                wasm_v128_or(wasm_v128_and(c, m4), wasm_v128_and(wasm_i16x8_shl(hb, 2), m30)),
                wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(a, 4), m4), wasm_v128_and(hb, m30)),
                wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(c, 4), m4),
                             wasm_v128_and(wasm_u16x8_shr(hb, 2), m30)),
            };
            for (int i = 0; i < 4; i++) kput_u(k, 8 * h + 2 * i + e, q[i], 32); /* sub-block */
        }
}

/* The 2-bit quants of Q2_K and Q3_K: element 128h + 32s + l (l < 32) in bits 2s, 2s + 1 of
 * qs[32h + l], so chunk 8h + 2s + e is (qs[32h + 16e ..] >> 2s) & 3. Q3_K (hm: its hmask)
 * adds 4 where the element's bit 4h + s of hmask[l] is set: q + 4 in 0..7. The shifts are
 * 16-bit (SIMD128 has no byte shift; engines emulate one): the mask keeps only bits of the
 * byte's own. */
PL_W_INLINE void kblk_load_q2bits(kblk *k, const uint8_t *qs, const uint8_t *hm, const int off)
{
    const v128_t m2 = wasm_i8x16_splat(0x03), four = wasm_i8x16_splat(4);
    for (int e = 0; e < 2; e++) {
        const v128_t h = hm ? wasm_v128_load(hm + 16 * e) : wasm_i8x16_splat(0);
        for (int hh = 0; hh < 2; hh++) {
            const v128_t a = wasm_v128_load(qs + 32 * hh + 16 * e);
            for (int s = 0; s < 4; s++) {
                v128_t v = wasm_v128_and(wasm_u16x8_shr(a, 2 * s), m2);
                if (hm) {
                    const v128_t bit = wasm_i8x16_splat((int8_t)(1 << (4 * hh + s)));
                    v = wasm_v128_or(
                        v, wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(h, bit), bit), four));
                }
                kput_u(k, 8 * hh + 2 * s + e, v, off);
            }
        }
    }
}

/* Q2_K: x = d (sc & 15) q - dmin (sc >> 4) per 16. */
PL_W_INLINE void kblk_load_q2_k(kblk *k, const pl_block_q2_k *b)
{
    int32_t m[16];
    for (int j = 0; j < 16; j++) {
        kput_sc(k, j, b->scales[j] & 15);
        m[j] = b->scales[j] >> 4;
    }
    for (int i = 0; i < 4; i++) k->m[i] = wasm_v128_load(m + 4 * i);
    k->d = f16f(b->d);
    k->dmin = f16f(b->dmin);
    kblk_load_q2bits(k, b->qs, NULL, 0);
}

/* Q3_K: x = d (sc - 32) (q - 4 [hbit clear]) per 16; sc's low 4 bits in scales[j % 8] (high
 * nibble for j >= 8), high 2 in bits 2 (j / 4) of scales[8 + j % 4]. */
PL_W_INLINE void kblk_load_q3_k(kblk *k, const pl_block_q3_k *b)
{
    for (int j = 0; j < 16; j++) {
        const int lo = (b->scales[j % 8] >> (j < 8 ? 0 : 4)) & 15;
        const int hi = (b->scales[8 + j % 4] >> (2 * (j / 4))) & 3;
        kput_sc(k, j, (lo | hi << 4) - 32);
    }
    k->d = f16f(b->d);
    kblk_load_q2bits(k, b->qs, b->hmask, 4);
}

/* IQ4_XS: x = d (ls - 32) level(q) per 32; sub-block i's 16 bytes in Q4_0's nibble order. */
PL_W_INLINE void kblk_load_iq4_xs(kblk *k, const pl_block_iq4_xs *b)
{
    const v128_t levels = wasm_v128_load(pl_iq4nl_values), m4 = wasm_i8x16_splat(0x0f);
    for (int i = 0; i < 8; i++) {
        const int ls = ((b->scales_l[i / 2] >> 4 * (i % 2)) & 15) | ((b->scales_h >> 2 * i) & 3)
                                                                        << 4;
        k->sc[i] = wasm_i32x4_splat(ls - 32);
        const v128_t v = wasm_v128_load(b->qs + 16 * i);
        kput_s(k, 2 * i, wasm_i8x16_swizzle(levels, wasm_v128_and(v, m4)));
        kput_s(k, 2 * i + 1, wasm_i8x16_swizzle(levels, wasm_u8x16_shr(v, 4)));
    }
    k->d = f16f(b->d);
}

PL_W_INLINE void kblk_load(kblk *k, pl_type type, const uint8_t *b)
{
    switch (type) {
    case PL_TYPE_Q4_K:
        kblk_load_k4(k, b, offsetof(pl_block_q4_k, qs), 0, 0, 1);
        break;
    case PL_TYPE_Q5_K:
        kblk_load_k4(k, b, offsetof(pl_block_q5_k, qs), offsetof(pl_block_q5_k, qh), 1, 1);
        break;
    case PL_TYPE_Q6_K:
        kblk_load_q6(k, (const pl_block_q6_k *)b, 1);
        break;
    case PL_TYPE_Q2_K:
        kblk_load_q2_k(k, (const pl_block_q2_k *)b);
        break;
    case PL_TYPE_Q3_K:
        kblk_load_q3_k(k, (const pl_block_q3_k *)b);
        break;
    default: /* PL_TYPE_IQ4_XS */
        kblk_load_iq4_xs(k, (const pl_block_iq4_xs *)b);
        break;
    }
}

/* The block's term, formed as ref forms it: d = dw dx, then d float(isum), minus (dminw dx)
 * float(summs) for the types with mins (summs = sum_j m_j bsums of sub-block j, exact). */
/* k_term with the quants' exact dot sum isum given (relaxed: without the offset's side). */
PL_W_INLINE float k_term_i(const kblk *k, pl_type type, const pl_block_q8_k *xb, int32_t isum)
{
#if PL_W_RELAXED
    const int per = type == PL_TYPE_Q4_K || type == PL_TYPE_Q5_K || type == PL_TYPE_IQ4_XS ? 4 : 2;
    const int off = type == PL_TYPE_Q6_K ? 32 : type == PL_TYPE_Q3_K ? 4 : 0;
    /* The offset's side, sum_j sc_j dot(x_j, off) = off sum_j sc_j bsum_j (Q8_K's sums per
     * 16: |sum| <= 16 * 128 * 128 * 16 < 2^23), off the exact sum of the quants' dots. */
    if (off) {
        const v128_t s0 = wasm_v128_load(k->sc16), s1 = per == 2 ? wasm_v128_load(k->sc16 + 8) : s0;
        const v128_t b0 = wasm_v128_load(xb->bsums), b1 = wasm_v128_load(xb->bsums + 8);
        isum -= off * pl_w_hsum_i32(wasm_i32x4_add(wasm_i32x4_dot_i16x8(s0, b0),
                                                   wasm_i32x4_dot_i16x8(s1, b1)));
    }
#endif
    const float d = k->d * xb->d;
    if (type != PL_TYPE_Q4_K && type != PL_TYPE_Q5_K && type != PL_TYPE_Q2_K)
        return d * (float)isum;
    const v128_t b0 = wasm_v128_load(xb->bsums), b1 = wasm_v128_load(xb->bsums + 8);
    v128_t sm;
    if (type == PL_TYPE_Q2_K) /* a min per 16 */
        sm = wasm_i32x4_add(
            wasm_i32x4_add(wasm_i32x4_mul(wasm_i32x4_extend_low_i16x8(b0), k->m[0]),
                           wasm_i32x4_mul(wasm_i32x4_extend_high_i16x8(b0), k->m[1])),
            wasm_i32x4_add(wasm_i32x4_mul(wasm_i32x4_extend_low_i16x8(b1), k->m[2]),
                           wasm_i32x4_mul(wasm_i32x4_extend_high_i16x8(b1), k->m[3])));
    else /* a min per 32: bsums 2j + bsums 2j + 1 */
        sm = wasm_i32x4_add(wasm_i32x4_mul(wasm_i32x4_extadd_pairwise_i16x8(b0), k->m[0]),
                            wasm_i32x4_mul(wasm_i32x4_extadd_pairwise_i16x8(b1), k->m[1]));
    const int32_t summs = pl_w_hsum_i32(sm);
    const float dmin = k->dmin * xb->d;
    return d * (float)isum - dmin * (float)summs;
}

PL_W_INLINE float k_term(const kblk *k, pl_type type, const pl_block_q8_k *xb)
{
    const int per = type == PL_TYPE_Q4_K || type == PL_TYPE_Q5_K || type == PL_TYPE_IQ4_XS ? 4 : 2;
#if PL_W_RELAXED
    return k_term_i(k, type, xb, kdot(k, per, 0, type == PL_TYPE_IQ4_XS, xb->qs));
#else
    const int off = type == PL_TYPE_Q6_K ? 32 : type == PL_TYPE_Q3_K ? 4 : 0;
    return k_term_i(k, type, xb, kdot(k, per, off, type == PL_TYPE_IQ4_XS, xb->qs));
#endif
}

#if PL_W_RELAXED
/* Decode (one token): the quants' dots taken as each 16 are decoded, never stored in a kblk
 * and read back (kblk_load then kdot spill 16 vectors a super-block through memory). The same
 * exact integers, summed as kdot sums them (kdot's bounds), sp: k_scale_pairs. */

/* Q4_K/Q5_K (kblk_load_k4's decode): sub-blocks 2p, 2p + 1 from the 32 bytes of pair p. */
PL_W_INLINE int32_t kdot_k4_x(const kblk *k, const uint8_t *b, size_t qs_off, size_t qh_off,
                              const int has_qh, const int8_t *restrict xq)
{
    v128_t sp[8];
    k_scale_pairs(k, 4, sp);
    const v128_t z = wasm_i32x4_splat(0);
    v128_t h[2] = {z, z}, acc = z;
    if (has_qh) h[0] = wasm_v128_load(b + qh_off), h[1] = wasm_v128_load(b + qh_off + 16);
    for (int p = 0; p < 4; p++) {
        v128_t lo_s = z, hi_s = z;
        for (int e = 0; e < 2; e++) {
            v128_t lo, hi;
            k4_quants16(b + qs_off + 32 * p + 16 * e, has_qh ? &h[e] : NULL, p, &lo, &hi);
            lo_s = pl_w_dot_i8_u7_add(wasm_v128_load(xq + 64 * p + 16 * e), lo, lo_s);
            hi_s = pl_w_dot_i8_u7_add(wasm_v128_load(xq + 64 * p + 32 + 16 * e), hi, hi_s);
        }
        acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_i16x8_narrow_i32x4(lo_s, hi_s), sp[p]));
    }
    return pl_w_hsum_i32(acc);
}

/* Q6_K (kblk_load_q6's decode): sub-blocks 8h + 2i + e, the pair e = 0, 1 together. */
PL_W_INLINE int32_t kdot_q6_x(const kblk *k, const pl_block_q6_k *b, const int8_t *restrict xq)
{
    v128_t sp[8];
    k_scale_pairs(k, 2, sp);
    const v128_t m4 = wasm_i8x16_splat(0x0f), m30 = wasm_i8x16_splat(0x30), z = wasm_i32x4_splat(0);
    v128_t acc = z;
    for (int h = 0; h < 2; h++) {
        v128_t q[2][4];
        for (int e = 0; e < 2; e++) {
            const v128_t a = wasm_v128_load(b->ql + 64 * h + 16 * e);
            const v128_t c = wasm_v128_load(b->ql + 64 * h + 32 + 16 * e);
            const v128_t hb = wasm_v128_load(b->qh + 32 * h + 16 * e);
            q[e][0] = wasm_v128_or(wasm_v128_and(a, m4), wasm_v128_and(wasm_i16x8_shl(hb, 4), m30));
            q[e][1] = wasm_v128_or(wasm_v128_and(c, m4), wasm_v128_and(wasm_i16x8_shl(hb, 2), m30));
            q[e][2] = wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(a, 4), m4), wasm_v128_and(hb, m30));
            q[e][3] = wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(c, 4), m4),
                                   wasm_v128_and(wasm_u16x8_shr(hb, 2), m30));
        }
        for (int i = 0; i < 4; i++) {
            const int c = 8 * h + 2 * i; /* sub-blocks c (e = 0) and c + 1 (e = 1) */
            const v128_t s0 = pl_w_dot_i8_u7_add(wasm_v128_load(xq + 16 * c), q[0][i], z);
            const v128_t s1 = pl_w_dot_i8_u7_add(wasm_v128_load(xq + 16 * c + 16), q[1][i], z);
            acc = wasm_i32x4_add(acc,
                                 wasm_i32x4_dot_i16x8(wasm_i16x8_narrow_i32x4(s0, s1), sp[c / 2]));
        }
    }
    return pl_w_hsum_i32(acc);
}
#endif

/* One weight row of nb super-blocks against nt tokens: ref's s += term, block by block. */
PL_W_INLINE void row_k(pl_type type, size_t wbytes, float *restrict y, int64_t ldy,
                       const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t nb,
                       const int nt)
{
    float s[NT];
    for (int t = 0; t < nt; t++) s[t] = 0.0f;
    kblk k;
#if PL_W_RELAXED
    if (nt == 1 && (type == PL_TYPE_Q4_K || type == PL_TYPE_Q5_K || type == PL_TYPE_Q6_K)) {
        for (int64_t b = 0; b < nb; b++) { /* decode: the dots as the quants are decoded */
            const uint8_t *wb = w + (size_t)b * wbytes;
            const pl_block_q8_k *xb = (const pl_block_q8_k *)x + b;
            int32_t isum;
            if (type == PL_TYPE_Q6_K) {
                kblk_load_q6(&k, (const pl_block_q6_k *)wb, 0);
                isum = kdot_q6_x(&k, (const pl_block_q6_k *)wb, xb->qs);
            } else {
                const int q5 = type == PL_TYPE_Q5_K;
                const size_t qs_off =
                    q5 ? offsetof(pl_block_q5_k, qs) : offsetof(pl_block_q4_k, qs);
                const size_t qh_off = q5 ? offsetof(pl_block_q5_k, qh) : 0;
                kblk_load_k4(&k, wb, qs_off, qh_off, q5, 0);
                isum = kdot_k4_x(&k, wb, qs_off, qh_off, q5, xb->qs);
            }
            s[0] += k_term_i(&k, type, xb, isum);
        }
        y[0] = s[0];
        return;
    }
#endif
    for (int64_t b = 0; b < nb; b++) {
        kblk_load(&k, type, w + (size_t)b * wbytes);
        for (int t = 0; t < nt; t++)
            s[t] += k_term(&k, type, (const pl_block_q8_k *)(x + (size_t)t * xrb) + b);
    }
    for (int t = 0; t < nt; t++) y[t * ldy] = s[t];
}

#define MATMUL_K(name, type, block)                                                                \
    void name(PL_WASM128_MATMUL_ARGS)                                                              \
    {                                                                                              \
        const int64_t nb = K / PL_QK_K;                                                            \
        const pl_type ty = type;                                                                   \
        const size_t wb = sizeof(block);                                                           \
        TILE(CALL_K)                                                                               \
    }
#define CALL_K(n) row_k(ty, wb, yt, ldy, wr, xt, x_row_bytes, nb, n)

MATMUL_K(PL_WQ(matmul_q4_k_q8_k), PL_TYPE_Q4_K, pl_block_q4_k)
MATMUL_K(PL_WQ(matmul_q5_k_q8_k), PL_TYPE_Q5_K, pl_block_q5_k)
MATMUL_K(PL_WQ(matmul_q6_k_q8_k), PL_TYPE_Q6_K, pl_block_q6_k)
MATMUL_K(PL_WQ(matmul_q2_k_q8_k), PL_TYPE_Q2_K, pl_block_q2_k)
MATMUL_K(PL_WQ(matmul_q3_k_q8_k), PL_TYPE_Q3_K, pl_block_q3_k)
MATMUL_K(PL_WQ(matmul_iq4_xs_q8_k), PL_TYPE_IQ4_XS, pl_block_iq4_xs)
