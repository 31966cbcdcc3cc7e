/* attention.c — the avx512 set's causal grouped-query attention over the KV cache (F32 or
 * F16): tiles of up to QT queries of one KV head (the heads of its group x consecutive
 * tokens) share every K and V row they read. ref's three passes, on 512-bit vectors:
 *
 *   scores  K rows are read 16 at a time and transposed once per tile, so s_ij for 16 keys
 *           is one vector: acc = fma(K_t[d], q_i[d], acc) for d = 0 .. D-1 in order (one
 *           FMA chain per score), then s = scale * acc, and with softcap != 0
 *           s = softcap * tanh(s / softcap) (pl_avx512_tanh; the bound's 4 (D + 2) A becomes
 *           4 (D + 9) A, kernels/ref/attention.c says why).
 *   weights per query: m = the max over the visible scores (exact), e_j = s_j == m ? 1 :
 *           exp(s_j - m) (the avx2 vector exp on each half), summed in lane j mod 16 in
 *           ascending j, then the fixed tree ((l0 + l8) + (l4 + l12)) + ... (tree16).
 *   values  out_d = sum over visible j, ascending, of e_j v_jd: one FMA chain per d; then
 *           out_d / sum. An entry a query cannot see is never read for it.
 *
 * Bound (ref's, kernels/ref/attention.c, checked by conformance/test_attention.c):
 *     |out_d - ref_d| <= u * sum_j p_j |v_jd| * (4 (D + 2) A + |s_j - m| + 2 M + 16) + FLT_MIN
 * Why: the score is D FMAs in a chain (<= D u sum |q k|) and the scale one rounding: a
 * score error <= (D + 1) u A; the exp within 2.3 u (avx2/ops.h), in a weight and in the sum
 * 4.6 u; s_j - m rounds by u |s_j - m|; the weight sum in lane j mod 16 then 4 levels
 * (<= M u) and the V sum as one FMA chain per d (<= M u); the final division u.
 *
 * Batch invariance: every float of a (t, h) row comes from the same operations in the same
 * order whatever T, h0, h1, the tile it shares or N past its last visible entry: a score
 * depends only on q and k, the lanes of the weight sum are fixed by j mod 16, invisible
 * entries add exact zeros to it, the V sum runs over the visible j ascending per d. Blocks
 * of 16 (from j = 0) that no query of the tile sees are skipped: by pass 1 only where
 * kv_sorted lets a binary search rule them out (attn_span.h), by passes 2 and 3 outside the
 * first and last block pass 1 found visible. Skipping them changes no bit. */
#include <math.h>
#include <string.h>

#include "attn_span.h"
#include "avx2/ops.h"
#include "avx512.h"

#define QT 32 /* queries per tile: their scores sit in scratch, QT rows of NS floats */
#define QC 8  /* queries whose score chains run together (registers) */
#define QV 6  /* queries whose V sums run together, 64 dims each (registers) */

static __m512 exp16(__m512 x)
{
    const __m256 lo = pl_avx2_exp(_mm512_castps512_ps256(x));
    const __m256 hi = pl_avx2_exp(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

/* ((l0 + l8) + (l4 + l12)) + ((l2 + l10) + (l6 + l14)) + ... : a fixed tree over 16 lanes. */
static float tree16(__m512 v)
{
    const __m256 a =
        _mm256_add_ps(_mm512_castps512_ps256(v),
                      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
    return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

/* The visible entries among j0 .. j0 + 15 for a query at position qp (pl_attn_args's rule:
 * kv_pos[j] <= qp, within the window unless j < n_sinks, within the layer window; none at or
 * past N). */
static __mmask16 vis16(const pl_attn_args *a, int32_t qp, int64_t j0)
{
    const int64_t left = a->N - j0;
    const __mmask16 exist = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
    const __m512i kp = _mm512_maskz_loadu_epi32(exist, a->kv_pos + j0);
    __mmask16 ok = _mm512_mask_cmple_epi32_mask(exist, kp, _mm512_set1_epi32(qp));
    const int64_t lo = pl_attn_floor(qp, a->window);
    if (a->window > 0 && lo >= INT32_MIN) {
        const int64_t s = a->n_sinks - j0;
        const __mmask16 sink = s <= 0 ? 0 : s >= 16 ? 0xffff : (__mmask16)((1u << s) - 1);
        ok &= _mm512_cmpgt_epi32_mask(kp, _mm512_set1_epi32((int32_t)lo)) | sink;
    }
    const int64_t llo = pl_attn_floor(qp, a->layer_window); /* the layer's window binds sinks too */
    if (a->layer_window > 0 && llo >= INT32_MIN)
        ok &= _mm512_cmpgt_epi32_mask(kp, _mm512_set1_epi32((int32_t)llo));
    return ok;
}

/* b over the blocks of 16 entries of span sp, ascending. */
#define FOR_SPAN(sp, b)                                                                            \
    for (int r_ = 0; r_ < (sp)->n; r_++)                                                           \
        for (int64_t b = (sp)->lo[r_]; b < (sp)->hi[r_]; b++)

static float elem(const void *row, int f16, int64_t d)
{
    if (f16) return _cvtsh_ss(((const pl_f16 *)row)[d]);
    return ((const float *)row)[d];
}

/* 16 consecutive K or V elements as floats (F16 widening is exact). */
static __m512 load16(const void *row, int f16, int64_t d)
{
    if (f16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const pl_f16 *)row + d)));
    return _mm512_loadu_ps((const float *)row + d);
}

/* The last rem < 16 elements from d, zeros beyond: no byte past the row is read. */
static __m512 load_tail(const void *row, int f16, int64_t d, int64_t rem)
{
    const __mmask16 m = (__mmask16)((1u << rem) - 1);
    if (f16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const pl_f16 *)row + d));
    return _mm512_maskz_loadu_ps(m, (const float *)row + d);
}

/* r[i] (16 floats each) -> r[c][i] = old r[i][c]: a 16 x 16 transpose. */
static void transpose16(__m512 r[16])
{
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int k = 0; k < 16; k += 4) { /* rows k .. k + 3 of columns 4L + c in u[k + c] */
        u[k] = _mm512_shuffle_ps(t[k], t[k + 2], 0x44);
        u[k + 1] = _mm512_shuffle_ps(t[k], t[k + 2], 0xee);
        u[k + 2] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0x44);
        u[k + 3] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) {
        const __m512 v = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
        const __m512 w = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
        const __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
        const __m512 w2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
        r[c] = _mm512_shuffle_f32x4(v, v2, 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(v, v2, 0xdd);
        r[4 + c] = _mm512_shuffle_f32x4(w, w2, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(w, w2, 0xdd);
    }
}

/* kt[16 d + j] = K row (j0 + j)[d], zeros for rows at or past N. */
static void load_k_block(float *restrict kt, const char *kbase, size_t stride, int f16, int64_t D,
                         int64_t j0, int64_t N)
{
    const int64_t nj = N - j0 < 16 ? N - j0 : 16;
    int64_t d = 0;
    if (nj == 16)
        for (; d + 16 <= D; d += 16) {
            __m512 r[16];
            for (int j = 0; j < 16; j++) r[j] = load16(kbase + (size_t)(j0 + j) * stride, f16, d);
            transpose16(r);
            for (int c = 0; c < 16; c++) _mm512_storeu_ps(kt + 16 * (d + c), r[c]);
        }
    for (; d < D; d++)
        for (int64_t j = 0; j < 16; j++)
            kt[16 * d + j] = j < nj ? elem(kbase + (size_t)(j0 + j) * stride, f16, d) : 0.0f;
}

/* Scores of n <= QC queries against the 16 keys of kt: s[i][0..16) = scale * (q_i . k). */
static inline __attribute__((always_inline)) void score_chunk(float *const *s,
                                                              const float *const *q,
                                                              const float *restrict kt, int64_t D,
                                                              float scale, float cap, const int n)
{
    __m512 acc[QC];
    for (int i = 0; i < n; i++) acc[i] = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d++) {
        const __m512 k = _mm512_loadu_ps(kt + 16 * d);
        for (int i = 0; i < n; i++) acc[i] = _mm512_fmadd_ps(k, _mm512_set1_ps(q[i][d]), acc[i]);
    }
    for (int i = 0; i < n; i++) {
        __m512 v = _mm512_mul_ps(_mm512_set1_ps(scale), acc[i]);
        if (cap != 0.0f) { /* soft-capping: cap * tanh(v / cap), 16 scores at a time */
            const __m512 c = _mm512_set1_ps(cap);
            v = _mm512_mul_ps(c, pl_avx512_tanh(_mm512_div_ps(v, c)));
        }
        _mm512_storeu_ps(s[i], v);
    }
}

/* The V sum of n <= QV queries over dims [d0, d0 + 16 NV) (NV vectors, or one masked tail
 * vector of rem dims when rem > 0), visible entries ascending, then / sum. */
static inline __attribute__((always_inline)) void
v_chunk(float *const *o, const float *const *e, const uint16_t *const *vis, const float *sum,
        const char *vbase, size_t stride, int f16, const pl_attn_span *sp, int64_t d0, const int NV,
        int64_t rem, const int n)
{
    __m512 acc[QV][4];
    for (int i = 0; i < n; i++)
        for (int k = 0; k < NV; k++) acc[i][k] = _mm512_setzero_ps();
    FOR_SPAN (sp, b) {
        unsigned any = 0;
        for (int i = 0; i < n; i++) any |= vis[i][b];
        for (; any; any &= any - 1) {
            const int jj = __builtin_ctz(any);
            const int64_t j = 16 * b + jj;
            const char *row = vbase + (size_t)j * stride;
            __m512 v[4];
            for (int k = 0; k < NV; k++)
                v[k] = rem ? load_tail(row, f16, d0, rem) : load16(row, f16, d0 + 16 * k);
            for (int i = 0; i < n; i++) {
                if (!(vis[i][b] >> jj & 1)) continue;
                const __m512 w = _mm512_set1_ps(e[i][j]);
                for (int k = 0; k < NV; k++) acc[i][k] = _mm512_fmadd_ps(w, v[k], acc[i][k]);
            }
        }
    }
    for (int i = 0; i < n; i++) {
        const __m512 s = _mm512_set1_ps(sum[i]);
        for (int k = 0; k < NV; k++) {
            const __m512 r = _mm512_div_ps(acc[i][k], s);
            if (rem)
                _mm512_mask_storeu_ps(o[i] + d0, (__mmask16)((1u << rem) - 1), r);
            else
                _mm512_storeu_ps(o[i] + d0 + 16 * k, r);
        }
    }
}

typedef struct tile {
    int n;
    const float *q[QT];
    float *o[QT];
    int32_t qp[QT];
    int sinks; /* 1: sink[] holds each query's head's sink logit (gpt-oss) */
    float sink[QT];
} tile;

static void v_pass(const tile *tl, float *const *e, const uint16_t *const *vis, const float *sum,
                   const char *vbase, size_t stride, int f16, const pl_attn_span *sp, int64_t D)
{
    for (int i0 = 0; i0 < tl->n; i0 += QV) {
        const int n = tl->n - i0 < QV ? tl->n - i0 : QV;
        const float *const *ei = (const float *const *)e + i0;
        float *const *oi = tl->o + i0;
        const uint16_t *const *vi = vis + i0;
        const float *si = sum + i0;
        int64_t d0 = 0;
#define V(NV, REM)                                                                                 \
    switch (n) {                                                                                   \
    case 1:                                                                                        \
        v_chunk(oi, ei, vi, si, vbase, stride, f16, sp, d0, NV, REM, 1);                           \
        break;                                                                                     \
    case 2:                                                                                        \
        v_chunk(oi, ei, vi, si, vbase, stride, f16, sp, d0, NV, REM, 2);                           \
        break;                                                                                     \
    case 3:                                                                                        \
        v_chunk(oi, ei, vi, si, vbase, stride, f16, sp, d0, NV, REM, 3);                           \
        break;                                                                                     \
    case 4:                                                                                        \
        v_chunk(oi, ei, vi, si, vbase, stride, f16, sp, d0, NV, REM, 4);                           \
        break;                                                                                     \
    case 5:                                                                                        \
        v_chunk(oi, ei, vi, si, vbase, stride, f16, sp, d0, NV, REM, 5);                           \
        break;                                                                                     \
    default:                                                                                       \
        v_chunk(oi, ei, vi, si, vbase, stride, f16, sp, d0, NV, REM, QV);                          \
        break;                                                                                     \
    }
        for (; d0 + 64 <= D; d0 += 64) V(4, 0);
        for (; d0 + 16 <= D; d0 += 16) V(1, 0);
        if (d0 < D) V(1, D - d0);
#undef V
    }
}

/* One tile: n queries of KV head g. */
static void attend_tile(const pl_attn_args *a, const tile *tl, int64_t g, float *restrict scratch)
{
    const int64_t D = a->D, N = a->N, NS = (N + 15) & ~(int64_t)15, nbk = NS / 16;
    const int f16 = a->kv_type != PL_TYPE_F32; /* as ref: anything else reads as F16 */
    const size_t esz = f16 ? sizeof(pl_f16) : sizeof(float);
    const size_t stride = (size_t)(a->Hkv * D) * esz; /* bytes from entry j to j + 1 */
    const char *kbase = (const char *)a->k + (size_t)(g * D) * esz;
    const char *vbase = (const char *)a->v + (size_t)(g * D) * esz;
    float *S = scratch;                                      /* [QT][NS] scores, then weights */
    uint16_t *vis = (uint16_t *)(void *)(S + QT * NS);       /* [QT][nbk] visible entries */
    float *kt = S + QT * NS + (QT * nbk * 2 + 63) / 64 * 16; /* [D][16] a transposed K block */
    float *e[QT];
    uint16_t *vq[QT];
    float sum[QT];
    for (int i = 0; i < tl->n; i++) {
        e[i] = S + (size_t)i * (size_t)NS;
        vq[i] = vis + (size_t)i * (size_t)nbk;
    }

    /* Pass 1: visibility, then the scores of every key block some query sees; only the blocks
     * of the span are tested, and passes 2 and 3 see only those between the first and the last
     * block some query sees. */
    int32_t qmin = tl->qp[0], qmax = tl->qp[0];
    for (int i = 1; i < tl->n; i++) {
        if (tl->qp[i] < qmin) qmin = tl->qp[i];
        if (tl->qp[i] > qmax) qmax = tl->qp[i];
    }
    pl_attn_span sp = pl_attn_span_of(a, qmin, qmax, 16);
    int64_t b_first = INT64_MAX, b_last = -1;
    FOR_SPAN (&sp, b) {
        unsigned any = 0;
        for (int i = 0; i < tl->n; i++) any |= vq[i][b] = vis16(a, tl->qp[i], 16 * b);
        if (!any) continue;
        if (b_first == INT64_MAX) b_first = b;
        b_last = b;
        load_k_block(kt, kbase, stride, f16, D, 16 * b, N);
        for (int i0 = 0; i0 < tl->n; i0 += QC) {
            const int n = tl->n - i0 < QC ? tl->n - i0 : QC;
            float *s[QC];
            for (int i = 0; i < n; i++) s[i] = e[i0 + i] + 16 * b;
            switch (n) { /* constant chunk sizes: the accumulators stay in registers */
#define SC(c)                                                                                      \
    case c:                                                                                        \
        score_chunk(s, tl->q + i0, kt, D, a->scale, a->softcap, c);                                \
        break;
                SC(1)
                SC(2)
                SC(3)
                SC(4)
                SC(5)
                SC(6) SC(7) default : score_chunk(s, tl->q + i0, kt, D, a->scale, a->softcap, QC);
#undef SC
            }
        }
    }

    pl_attn_span_clip(&sp, b_first, b_last + 1);

    /* Pass 2: per query, the max, the weights in place of the scores, their sum. */
    for (int i = 0; i < tl->n; i++) {
        __m512 mx = _mm512_set1_ps(-INFINITY);
        int seen = 0;
        FOR_SPAN (&sp, b)
            if (vq[i][b]) {
                mx = _mm512_mask_max_ps(mx, vq[i][b], mx, _mm512_loadu_ps(e[i] + 16 * b));
                seen = 1;
            }
        if (!seen) {
            memset(tl->o[i], 0, (size_t)D * sizeof(float));
            sum[i] = 1.0f;
            continue;
        }
        /* the max of the visible scores: exact in any order (NaN scores are not kept, as in
         * ref's first-then-greater rule only when the first is NaN: see below) */
        float m = _mm512_reduce_max_ps(mx);
        if (tl->sinks && tl->sink[i] > m) m = tl->sink[i]; /* gpt-oss: the sink joins the max */
        const __m512 mv = _mm512_set1_ps(m);
        __m512 acc = _mm512_setzero_ps();
        FOR_SPAN (&sp, b) {
            const __mmask16 v = vq[i][b];
            if (!v) continue;
            const __m512 s = _mm512_loadu_ps(e[i] + 16 * b);
            const __mmask16 eq = _mm512_cmp_ps_mask(s, mv, _CMP_EQ_OQ);
            __m512 w = _mm512_mask_blend_ps(eq, exp16(_mm512_sub_ps(s, mv)), _mm512_set1_ps(1.0f));
            w = _mm512_maskz_mov_ps(v, w);
            _mm512_storeu_ps(e[i] + 16 * b, w);
            acc = _mm512_add_ps(acc, w);
        }
        sum[i] = tree16(acc);
        if (tl->sinks) /* ... and the denominator (ref's rule: at the max it weighs 1) */
            sum[i] +=
                tl->sink[i] == m ? 1.0f : _mm512_cvtss_f32(exp16(_mm512_set1_ps(tl->sink[i] - m)));
    }

    /* Pass 3: the weighted sums of V rows. Queries that saw nothing have no visible bits. */
    v_pass(tl, e, (const uint16_t *const *)vq, sum, vbase, stride, f16, &sp, D);
}

/* out[t][h][d] for h in [h0, h1), every t. */
void attention_avx512(float *restrict out, const pl_attn_args *a, int64_t h0, int64_t h1,
                      float *restrict scratch)
{
    const int64_t gs = a->H / a->Hkv;
    for (int64_t g = h0 / gs; g * gs < h1; g++) {
        const int64_t hs = h0 > g * gs ? h0 : g * gs, he = h1 < (g + 1) * gs ? h1 : (g + 1) * gs;
        for (int64_t hc = hs; hc < he; hc += QT) {
            const int64_t nh = he - hc < QT ? he - hc : QT, tt = QT / nh;
            for (int64_t t0 = 0; t0 < a->T; t0 += tt) {
                tile tl = {0};
                for (int64_t t = t0; t < a->T && t < t0 + tt; t++)
                    for (int64_t h = hc; h < hc + nh; h++) {
                        tl.q[tl.n] = a->q + (t * a->H + h) * a->D;
                        tl.o[tl.n] = out + (t * a->H + h) * a->D;
                        tl.qp[tl.n] = a->q_pos[t];
                        tl.sink[tl.n] = a->sinks ? a->sinks[h] : 0.0f;
                        tl.sinks = a->sinks != NULL;
                        tl.n++;
                    }
                attend_tile(a, &tl, g, scratch);
            }
        }
    }
}
