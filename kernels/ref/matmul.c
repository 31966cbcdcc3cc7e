/* matmul.c — reference matmul for every weight type: y[t * ldy + r] = W[r] . X[t].
 * Plain scalar C, one dot product per (r, t); not blocked, not threaded, not fast.
 *
 * Each (r, t) is one call of the type's dot function on weight row r and activation row t,
 * so the value cannot depend on r0, r1, T or the thread: batch- and slice-invariant by
 * construction. (The float types run four tokens' dots in one loop: each is the same
 * operations in the same order as its one-token dot, REF_MATMUL_FLOAT below.) Inside a dot,
 * quantized types sum integer products per block exactly (as ggml does) and accumulate the
 * per-block float terms in block order.
 *
 * Error bound documented per kernel (conformance/test_matmul.c enforces it against a GSL
 * double reference on the exactly dequantized operands, u = 2^-24, K = reduction length):
 *     |y - y_ref| <= c * u * K * sum_i |a_i b_i| + K * eta
 * eta covers underflow: 2^-149 in general; 2^-130 for the K-quants, whose float Q8_K scale
 * can be denormal, so dw * dx may underflow (absolute error 2^-150) before it multiplies the
 * block's integer sum (< 2^28 for 256 elements): 2^-150 * 2^28 / 256 = 2^-130 per element.
 * Q8_0's f16 scales cannot underflow that product (f16 * f16 >= 2^-48).
 * For Q4_1/Q5_1/Q4_K/Q5_K the weight is a sum of two terms, d*q and the min; a_i b_i then
 * counts both terms' magnitudes, (|d q_i| + |m|) |b_i|, since the kernel sums them
 * separately and cancellation between them is not the kernel's rounding error.
 * The general argument: a float result that is a sum of nb block terms, each formed with
 * at most m roundings, is within gamma(m + nb - 1) of exact, and m + nb - 1 <= K * m / bs
 * (bs = block size). c = 1.01 * m / bs covers gamma's 1 / (1 - n u) factor (K < 10^5).
 * The bound holds for any summation order, so faster sets can be held to the same c. */
#include "ref.h"

typedef float (*dot_fn)(const void *w, const void *x, int64_t K);

static void matmul_rows(dot_fn dot, float *restrict y, int64_t ldy, const void *restrict w,
                        size_t w_row_bytes, const void *restrict x, size_t x_row_bytes, int64_t K,
                        int64_t r0, int64_t r1, int64_t T)
{
    for (int64_t r = r0; r < r1; r++) {
        const void *wr = (const char *)w + (size_t)r * w_row_bytes;
        for (int64_t t = 0; t < T; t++)
            y[t * ldy + r] = dot(wr, (const char *)x + (size_t)t * x_row_bytes, K);
    }
}

/* The exported kernel of a dot: every row of the slice against every token. */
#define REF_MATMUL(name, dot)                                                                      \
    void name(PL_REF_MATMUL_ARGS)                                                                  \
    {                                                                                              \
        matmul_rows(dot, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);                    \
    }

/* ---- float weights x f32 activations: c = 1.01 --------------------------------------- */
/* Each product rounds once and K - 1 additions follow: gamma(K) (Higham 3.1). */

static float dot_f32(const void *vw, const void *vx, int64_t K)
{
    const float *w = vw, *x = vx;
    float s = 0.0f;
    for (int64_t k = 0; k < K; k++) s += w[k] * x[k];
    return s;
}

/* f16 -> f32 is exact, so the bound is the f32 one. */
static float dot_f16(const void *vw, const void *vx, int64_t K)
{
    const pl_f16 *w = vw;
    const float *x = vx;
    float s = 0.0f;
    for (int64_t k = 0; k < K; k++) s += pl_f16_to_f32(w[k]) * x[k];
    return s;
}

/* bf16 -> f32 is exact, so the bound is the f32 one. */
static float dot_bf16(const void *vw, const void *vx, int64_t K)
{
    const pl_bf16 *w = vw;
    const float *x = vx;
    float s = 0.0f;
    for (int64_t k = 0; k < K; k++) s += pl_bf16_to_f32(w[k]) * x[k];
    return s;
}

/* The float weights' matmul: for each (r, t) the chain of dot_f32 / dot_f16 / dot_bf16 above,
 * four tokens' chains interleaved in one pass over the row: each chain is the same operations in
 * the same order (the same bits as the one-token dot, which the tail uses), and the four
 * independent additions fill the adder latency that one chain leaves idle. */
static float widen_f32(float v)
{
    return v;
}

#define REF_MATMUL_FLOAT(name, wtype, widen, dot)                                                  \
    void name(PL_REF_MATMUL_ARGS)                                                                  \
    {                                                                                              \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const wtype *wr = (const wtype *)((const char *)w + (size_t)r * w_row_bytes);          \
            int64_t t = 0;                                                                         \
            for (; t + 4 <= T; t += 4) {                                                           \
                const float *x0 = (const float *)((const char *)x + (size_t)t * x_row_bytes);      \
                const float *x1 = (const float *)((const char *)x0 + x_row_bytes);                 \
                const float *x2 = (const float *)((const char *)x1 + x_row_bytes);                 \
                const float *x3 = (const float *)((const char *)x2 + x_row_bytes);                 \
                float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;                                  \
                for (int64_t k = 0; k < K; k++) {                                                  \
                    const float wk = widen(wr[k]);                                                 \
                    s0 += wk * x0[k];                                                              \
                    s1 += wk * x1[k];                                                              \
                    s2 += wk * x2[k];                                                              \
                    s3 += wk * x3[k];                                                              \
                }                                                                                  \
                y[t * ldy + r] = s0;                                                               \
                y[(t + 1) * ldy + r] = s1;                                                         \
                y[(t + 2) * ldy + r] = s2;                                                         \
                y[(t + 3) * ldy + r] = s3;                                                         \
            }                                                                                      \
            for (; t < T; t++)                                                                     \
                y[t * ldy + r] = dot(wr, (const char *)x + (size_t)t * x_row_bytes, K);            \
        }                                                                                          \
    }

REF_MATMUL_FLOAT(matmul_f32_ref, float, widen_f32, dot_f32)

REF_MATMUL_FLOAT(matmul_f16_ref, pl_f16, pl_f16_to_f32, dot_f16)

REF_MATMUL_FLOAT(matmul_bf16_ref, pl_bf16, pl_bf16_to_f32, dot_bf16)

/* ---- 32-blocks x Q8_0 ------------------------------------------------------------------ */
/* Per block the integer sum is exact (|sum| <= 32 * 31 * 127 < 2^24, so also exact as a
 * float); the block term (dw * dx) * sum rounds twice: m = 2, c = 1.01 * 2 / 32 = 0.064.
 * With a min (q4_1, q5_1) the term adds (mw * dx) * sum(qx): m = 3, c = 0.095. */

static void unpack_q4(int q[32], const uint8_t qs[16])
{
    for (int j = 0; j < 16; j++) {
        q[j] = qs[j] & 0x0f;
        q[j + 16] = qs[j] >> 4;
    }
}

static void unpack_q5(int q[32], const uint8_t qs[16], const uint8_t qh[4])
{
    const uint32_t h =
        (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 0x0f) | (int)(h >> j & 1) << 4;
        q[j + 16] = (qs[j] >> 4) | (int)(h >> (j + 16) & 1) << 4;
    }
}

static int32_t isum32(const int q[32], const int8_t xq[32], int offset)
{
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += (q[j] - offset) * xq[j];
    return s;
}

static int32_t xsum32(const int8_t xq[32])
{
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += xq[j];
    return s;
}

static float dot_q4_0_q8_0(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q4_0 *w = vw;
    const pl_block_q8_0 *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK8_0; b++) {
        int q[32];
        unpack_q4(q, w[b].qs);
        const float d = pl_f16_to_f32(w[b].d) * pl_f16_to_f32(x[b].d);
        s += d * (float)isum32(q, x[b].qs, 8);
    }
    return s;
}

static float dot_q4_1_q8_0(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q4_1 *w = vw;
    const pl_block_q8_0 *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK8_0; b++) {
        int q[32];
        unpack_q4(q, w[b].qs);
        const float dx = pl_f16_to_f32(x[b].d);
        const float d = pl_f16_to_f32(w[b].d) * dx, m = pl_f16_to_f32(w[b].m) * dx;
        s += d * (float)isum32(q, x[b].qs, 0) + m * (float)xsum32(x[b].qs);
    }
    return s;
}

static float dot_q5_0_q8_0(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q5_0 *w = vw;
    const pl_block_q8_0 *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK8_0; b++) {
        int q[32];
        unpack_q5(q, w[b].qs, w[b].qh);
        const float d = pl_f16_to_f32(w[b].d) * pl_f16_to_f32(x[b].d);
        s += d * (float)isum32(q, x[b].qs, 16);
    }
    return s;
}

static float dot_q5_1_q8_0(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q5_1 *w = vw;
    const pl_block_q8_0 *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK8_0; b++) {
        int q[32];
        unpack_q5(q, w[b].qs, w[b].qh);
        const float dx = pl_f16_to_f32(x[b].d);
        const float d = pl_f16_to_f32(w[b].d) * dx, m = pl_f16_to_f32(w[b].m) * dx;
        s += d * (float)isum32(q, x[b].qs, 0) + m * (float)xsum32(x[b].qs);
    }
    return s;
}

static float dot_q8_0_q8_0(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q8_0 *w = vw;
    const pl_block_q8_0 *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK8_0; b++) {
        int32_t sum = 0;
        for (int j = 0; j < PL_QK8_0; j++) sum += w[b].qs[j] * x[b].qs[j];
        const float d = pl_f16_to_f32(w[b].d) * pl_f16_to_f32(x[b].d);
        s += d * (float)sum;
    }
    return s;
}

REF_MATMUL(matmul_q4_0_q8_0_ref, dot_q4_0_q8_0)

REF_MATMUL(matmul_q4_1_q8_0_ref, dot_q4_1_q8_0)

REF_MATMUL(matmul_q5_0_q8_0_ref, dot_q5_0_q8_0)

REF_MATMUL(matmul_q5_1_q8_0_ref, dot_q5_1_q8_0)

REF_MATMUL(matmul_q8_0_q8_0_ref, dot_q8_0_q8_0)

/* ---- super-blocks of 256 x Q8_K ------------------------------------------------------- */
/* Per super-block: isum = sum over sub-blocks of sc * (integer dot), exact in int32
 * (|isum| <= 63 * 31 * 127 * 256 < 2^26 for q5_k, 128 * 32 * 127 * 256 < 2^28 for q6_k) but
 * not always exact as a float; the min term uses the activation's bsums (exact).
 * q4_k, q5_k: (dw*dx) * float(isum) - (dminw*dx) * summs: m = 4, c = 1.01 * 4 / 256 = 0.016.
 * q6_k: (d*dx) * float(isum): m = 3, c = 0.012.  q8_k: isum < 2^22 is exact: m = 2, c = 0.008. */

/* Scales and mins of a Q4_K/Q5_K super-block; layout in kernels/ref/quant.c. */
static void scale_min_k4(int j, const uint8_t *s, int32_t *sc, int32_t *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0f) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* isum and summs of one Q4_K/Q5_K super-block whose 256 unsigned quants are q[]. */
static float k4_block_term(const int16_t q[PL_QK_K], const uint8_t scales[12], pl_f16 dw,
                           pl_f16 dminw, const pl_block_q8_k *x)
{
    int32_t isum = 0, summs = 0;
    for (int j = 0; j < PL_QK_K / 32; j++) {
        int32_t sc, m, sub = 0;
        scale_min_k4(j, scales, &sc, &m);
        for (int l = 0; l < 32; l++) sub += q[32 * j + l] * x->qs[32 * j + l];
        isum += sc * sub;
        summs += m * (x->bsums[2 * j] + x->bsums[2 * j + 1]);
    }
    const float d = pl_f16_to_f32(dw) * x->d, dmin = pl_f16_to_f32(dminw) * x->d;
    return d * (float)isum - dmin * (float)summs;
}

static float dot_q4_k_q8_k(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q4_k *w = vw;
    const pl_block_q8_k *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK_K; b++) {
        int16_t q[PL_QK_K];
        for (int p = 0; p < PL_QK_K / 64; p++) {
            for (int l = 0; l < 32; l++) {
                q[64 * p + l] = w[b].qs[32 * p + l] & 0x0f;
                q[64 * p + 32 + l] = w[b].qs[32 * p + l] >> 4;
            }
        }
        s += k4_block_term(q, w[b].scales, w[b].d, w[b].dmin, &x[b]);
    }
    return s;
}

static float dot_q5_k_q8_k(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q5_k *w = vw;
    const pl_block_q8_k *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK_K; b++) {
        int16_t q[PL_QK_K];
        for (int p = 0; p < PL_QK_K / 64; p++) {
            for (int l = 0; l < 32; l++) {
                const int qs = w[b].qs[32 * p + l], qh = w[b].qh[l];
                q[64 * p + l] = (qs & 0x0f) | (qh >> (2 * p) & 1) << 4;
                q[64 * p + 32 + l] = (qs >> 4) | (qh >> (2 * p + 1) & 1) << 4;
            }
        }
        s += k4_block_term(q, w[b].scales, w[b].d, w[b].dmin, &x[b]);
    }
    return s;
}

static float dot_q6_k_q8_k(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q6_k *w = vw;
    const pl_block_q8_k *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK_K; b++) {
        int16_t q[PL_QK_K];
        for (int h = 0; h < PL_QK_K / 128; h++) {
            const uint8_t *ql = w[b].ql + 64 * h, *qh = w[b].qh + 32 * h;
            int16_t *qq = q + 128 * h;
            for (int l = 0; l < 32; l++) {
                qq[l] = ((ql[l] & 0x0f) | (qh[l] >> 0 & 3) << 4) - 32;
                qq[l + 32] = ((ql[l + 32] & 0x0f) | (qh[l] >> 2 & 3) << 4) - 32;
                qq[l + 64] = ((ql[l] >> 4) | (qh[l] >> 4 & 3) << 4) - 32;
                qq[l + 96] = ((ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4) - 32;
            }
        }
        int32_t isum = 0;
        for (int j = 0; j < PL_QK_K / 16; j++) {
            int32_t sub = 0;
            for (int l = 0; l < 16; l++) sub += q[16 * j + l] * x[b].qs[16 * j + l];
            isum += w[b].scales[j] * sub;
        }
        const float d = pl_f16_to_f32(w[b].d) * x[b].d;
        s += d * (float)isum;
    }
    return s;
}

static float dot_q8_k_q8_k(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q8_k *w = vw;
    const pl_block_q8_k *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK_K; b++) {
        int32_t isum = 0;
        for (int j = 0; j < PL_QK_K; j++) isum += w[b].qs[j] * x[b].qs[j];
        s += (w[b].d * x[b].d) * (float)isum;
    }
    return s;
}

REF_MATMUL(matmul_q4_k_q8_k_ref, dot_q4_k_q8_k)

REF_MATMUL(matmul_q5_k_q8_k_ref, dot_q5_k_q8_k)

REF_MATMUL(matmul_q6_k_q8_k_ref, dot_q6_k_q8_k)

REF_MATMUL(matmul_q8_k_q8_k_ref, dot_q8_k_q8_k)

/* ---- Q2_K, Q3_K, IQ4_XS x Q8_K and IQ4_NL x Q8_0 ----------------------------------------- */
/* Integer sums as the preamble of issue 32 fixes them (every fast set builds to these):
 * q2_k: isum = sum_j (sc_j & 15) * (q . x)_j, summs = sum_j (sc_j >> 4) * bsums_j, both exact
 *   as floats (|isum| <= 15 * 3 * 127 * 256 < 2^21, |summs| <= 15 * 16 * 2048 < 2^19);
 *   (dw*dx) * isum - (dminw*dx) * summs: 3 roundings per part, m = 3, c = 1.01 * 3 / 256 = 0.012.
 * q3_k: isum = sum_j (sc_j - 32) * (q . x)_j, q in -4..3: |isum| <= 32 * 4 * 127 * 256 < 2^23,
 *   exact; (dw*dx) * isum: m = 2, c = 1.01 * 2 / 256 = 0.008.
 * iq4_xs: isum = sum_i (ls_i - 32) * (v[q] . x)_i: |isum| <= 32 * 127 * 127 * 256 < 2^28, not
 *   always exact as a float: m = 3, c = 0.012.
 * iq4_nl (32-blocks x Q8_0): |isum| <= 127 * 127 * 32 < 2^19, exact; (dw*dx) * isum: m = 2,
 *   c = 1.01 * 2 / 32 = 0.064. */

/* Element 128 h + 32 s + l is bits 2s..2s+1 of byte 32 h + l. */
static void unpack_q2_k(int16_t q[PL_QK_K], const uint8_t qs[PL_QK_K / 4])
{
    for (int h = 0; h < PL_QK_K / 128; h++)
        for (int sh = 0; sh < 4; sh++)
            for (int l = 0; l < 32; l++) q[128 * h + 32 * sh + l] = qs[32 * h + l] >> (2 * sh) & 3;
}

static float dot_q2_k_q8_k(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q2_k *w = vw;
    const pl_block_q8_k *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK_K; b++) {
        int16_t q[PL_QK_K];
        unpack_q2_k(q, w[b].qs);
        int32_t isum = 0, summs = 0;
        for (int j = 0; j < PL_QK_K / 16; j++) {
            int32_t sub = 0;
            for (int l = 0; l < 16; l++) sub += q[16 * j + l] * x[b].qs[16 * j + l];
            isum += (w[b].scales[j] & 15) * sub;
            summs += (w[b].scales[j] >> 4) * x[b].bsums[j];
        }
        const float d = pl_f16_to_f32(w[b].d) * x[b].d, dmin = pl_f16_to_f32(w[b].dmin) * x[b].d;
        s += d * (float)isum - dmin * (float)summs;
    }
    return s;
}

static float dot_q3_k_q8_k(const void *vw, const void *vx, int64_t K)
{
    const pl_block_q3_k *w = vw;
    const pl_block_q8_k *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK_K; b++) {
        int16_t q[PL_QK_K];
        unpack_q2_k(q, w[b].qs);
        for (int e8 = 0; e8 < PL_QK_K / 32; e8++) /* element 32 e8 + l: bit e8 of hmask[l] */
            for (int l = 0; l < 32; l++) q[32 * e8 + l] -= w[b].hmask[l] >> e8 & 1 ? 0 : 4;
        const uint8_t *sc = w[b].scales;
        int32_t isum = 0;
        for (int j = 0; j < PL_QK_K / 16; j++) {
            const int lo = j < 8 ? sc[j] & 0x0f : sc[j - 8] >> 4;
            const int scale = (lo | (sc[8 + j % 4] >> (2 * (j / 4)) & 3) << 4) - 32;
            int32_t sub = 0;
            for (int l = 0; l < 16; l++) sub += q[16 * j + l] * x[b].qs[16 * j + l];
            isum += scale * sub;
        }
        const float d = pl_f16_to_f32(w[b].d) * x[b].d;
        s += d * (float)isum;
    }
    return s;
}

/* sum_l v[q_l] x_l over 32 elements whose 4-bit indices are packed as q4_0's (element l < 16
 * in the low nibble of byte l, 16 + l in its high one), exact: IQ4_NL's, IQ4_XS's and MXFP4's
 * integer sums. (Looking the levels up into an int16 array first and then taking a plain dot
 * measured twice as slow: the array's 16-bit stores stall the vector loads that read them.) */
static int32_t lut4_dot32(const int8_t v[16], const uint8_t qs[16], const int8_t x[32])
{
    int32_t sum = 0;
    for (int l = 0; l < 16; l++) {
        sum += v[qs[l] & 0x0f] * x[l];
        sum += v[qs[l] >> 4] * x[l + 16];
    }
    return sum;
}

static float dot_iq4_nl_q8_0(const void *vw, const void *vx, int64_t K)
{
    const pl_block_iq4_nl *w = vw;
    const pl_block_q8_0 *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK4_NL; b++) {
        const int32_t isum = lut4_dot32(pl_iq4nl_values, w[b].qs, x[b].qs);
        const float d = pl_f16_to_f32(w[b].d) * pl_f16_to_f32(x[b].d);
        s += d * (float)isum;
    }
    return s;
}

static float dot_iq4_xs_q8_k(const void *vw, const void *vx, int64_t K)
{
    const pl_block_iq4_xs *w = vw;
    const pl_block_q8_k *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK_K; b++) {
        int32_t isum = 0;
        for (int i = 0; i < PL_QK_K / 32; i++) {
            const int ls = (w[b].scales_l[i / 2] >> (4 * (i % 2)) & 0x0f) |
                           (w[b].scales_h >> (2 * i) & 3) << 4;
            isum += (ls - 32) * lut4_dot32(pl_iq4nl_values, w[b].qs + 16 * i, x[b].qs + 32 * i);
        }
        const float d = pl_f16_to_f32(w[b].d) * x[b].d;
        s += d * (float)isum;
    }
    return s;
}

REF_MATMUL(matmul_q2_k_q8_k_ref, dot_q2_k_q8_k)

REF_MATMUL(matmul_q3_k_q8_k_ref, dot_q3_k_q8_k)

REF_MATMUL(matmul_iq4_nl_q8_0_ref, dot_iq4_nl_q8_0)

REF_MATMUL(matmul_iq4_xs_q8_k_ref, dot_iq4_xs_q8_k)

/* ---- MXFP4 x Q8_0 ---------------------------------------------------------------------------- */
/* isum = sum_l v[q_l] x_l over the doubled E2M1 values (|v| <= 12): |isum| <= 12 * 128 * 32 <
 * 2^16, exact. Term (dw * dx) * isum, dw = 2^(e - 128) (ggml's order): dw * dx is a power of two
 * times an f16, exact unless it falls below 2^-126 (a small e times a small dx); there it rounds
 * with an absolute error <= 2^-150, which isum carries to < 2^-134 per block, 2^-139 per
 * element: eta 2^-130, as for Q8_K. Then one rounding in the product and one in the sum: m = 2,
 * c = 0.064. e = 255 (E8M0's NaN) gives dw NaN: the row's output is NaN. */
static float dot_mxfp4_q8_0(const void *vw, const void *vx, int64_t K)
{
    const pl_block_mxfp4 *w = vw;
    const pl_block_q8_0 *x = vx;
    float s = 0.0f;
    for (int64_t b = 0; b < K / PL_QK_MXFP4; b++) {
        const int32_t isum = lut4_dot32(pl_mxfp4_values, w[b].qs, x[b].qs);
        const float d = pl_e8m0_half(w[b].e) * pl_f16_to_f32(x[b].d);
        s += d * (float)isum;
    }
    return s;
}

REF_MATMUL(matmul_mxfp4_q8_0_ref, dot_mxfp4_q8_0)
