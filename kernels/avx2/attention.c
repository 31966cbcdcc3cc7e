/* attention.c — causal grouped-query attention over the KV cache (F32 or F16) in 256-bit
 * AVX2 + FMA + F16C, shared by the avx2 and avx512 tables. Not flash attention: ref's three
 * passes per (token, head) with float arithmetic and the scores in scratch (N floats).
 *
 * For query t, head h, KV head g = h / (H / Hkv), over the visible entries j (ascending):
 *     s_j = scale * (q . k_j),  e_j = s_j == m ? 1 : exp(s_j - m),  out = sum e_j v_j / sum e_j
 * with s_j = softcap * tanh(s_j / softcap) first when softcap != 0 (pl_avx2_tanh on the visible
 * scores of a block of 8 at once, the same operations per lane: ref's bound with 4 (D + 9) A,
 * kernels/ref/attention.c says why).
 * Bound (ref's, kernels/ref/attention.c, checked in conformance/test_attention.c):
 *     |out_d - ref_d| <= u * sum_j p_j |v_jd| * (4 (D + 2) A + |s_j - m| + 2 M + 16) + FLT_MIN
 * Why this set meets it: q . k runs in 4 x 8 float lanes by FMA then a 5-level tree, off by
 * <= min(D, D/32 + 7) u sum |q k|, and scale adds u: a score error <= (D + 2) u A; the vector
 * exp is within 2.3 u (ops.h), in the weights and their sum: 4.6 u; s_j - m rounds by
 * u |s_j - m|; e_j summed in lane j mod 8 then a 3-level tree (<= M u) and sum_j e_j v_jd as
 * one FMA chain per d (<= M u): 2 M u; the final division u.
 *
 * Batch invariance: every float of a (t, h) row comes from the same operations in the same
 * order whatever T, h0, h1 or N past the last visible entry: lanes of the weight sum are
 * fixed by j mod 8, invisible entries add exact zeros, the V sum runs j ascending per d.
 * Blocks of 8 entries (from j = 0) with no visible entry are skipped: by pass 1 only where
 * kv_sorted lets a binary search rule them out (attn_span.h), by passes 2 and 3 outside the
 * first and last visible blocks pass 1 found. Skipping them changes no bit. */
#include <math.h>
#include <string.h>

#include "attn_span.h"
#include "ops.h"

/* Lanes [0, rem) on; rem <= 0 none, rem >= 8 all. */
static __m256i lanes_below(int64_t rem)
{
    const int r = rem < 0 ? 0 : rem > 8 ? 8 : (int)rem;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)): a fixed tree. */
static float hsum8(__m256 v)
{
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

/* The visibility rule of pl_attn_args for one query position, in a form that compares int32
 * lanes: kv_pos[j] <= qp and (no window or j < sinks or kv_pos[j] > qp - window) and (no
 * layer window or kv_pos[j] > qp - layer_window); and the blocks of 8 entries worth testing. */
typedef struct vis_rule {
    __m256i qp;       /* q_pos, broadcast */
    __m256i lo;       /* qp - window, broadcast (when windowed) */
    __m256i llo;      /* qp - layer_window, broadcast (when layer-windowed) */
    int windowed;     /* a window that can exclude anything */
    int lwindowed;    /* a layer window that can exclude anything */
    int64_t sinks, N; /* entries [0, sinks) ignore the window; [0, N) exist */
    const int32_t *kv_pos;
    pl_attn_span span; /* blocks of 8 that may hold a visible entry, ascending */
} vis_rule;

static vis_rule vis_init(const pl_attn_args *a, int32_t qp)
{
    vis_rule v = {.qp = _mm256_set1_epi32(qp), .sinks = a->n_sinks, .N = a->N, .kv_pos = a->kv_pos};
    /* qp - kp < window <=> kp > qp - window, in int64; below INT32_MIN every kp qualifies */
    const int64_t lo = pl_attn_floor(qp, a->window), llo = pl_attn_floor(qp, a->layer_window);
    v.windowed = a->window > 0 && lo >= INT32_MIN;
    v.lo = _mm256_set1_epi32(v.windowed ? (int32_t)lo : 0);
    v.lwindowed = a->layer_window > 0 && llo >= INT32_MIN;
    v.llo = _mm256_set1_epi32(v.lwindowed ? (int32_t)llo : 0);
    v.span = pl_attn_span_of(a, qp, qp, 8);
    return v;
}

/* All-ones lanes for the visible entries among j0 .. j0 + 7 (none at or past N). */
static __m256i vis8(const vis_rule *v, int64_t j0)
{
    const __m256i exist = lanes_below(v->N - j0);
    const __m256i kp = _mm256_maskload_epi32(v->kv_pos + j0, exist);
    __m256i ok = _mm256_andnot_si256(_mm256_cmpgt_epi32(kp, v->qp), exist);
    if (v->windowed)
        ok = _mm256_and_si256(
            ok, _mm256_or_si256(_mm256_cmpgt_epi32(kp, v->lo), lanes_below(v->sinks - j0)));
    if (v->lwindowed) ok = _mm256_and_si256(ok, _mm256_cmpgt_epi32(kp, v->llo));
    return ok;
}

/* j0 over the blocks of vr's span, ascending. */
#define FOR_SPAN(vr, j0)                                                                           \
    for (int r_ = 0; r_ < (vr)->span.n; r_++)                                                      \
        for (int64_t j0 = 8 * (vr)->span.lo[r_]; j0 < 8 * (vr)->span.hi[r_]; j0 += 8)

/* 8 consecutive K or V elements as floats (F16 widening is exact). */
static __m256 load8(const void *row, int f16, int64_t d)
{
    if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const pl_f16 *)row + d)));
    return _mm256_loadu_ps((const float *)row + d);
}

/* The last rem < 8 elements from d, zero beyond: read no byte past the row. */
static __m256 load_tail(const void *row, int f16, int64_t d, int64_t rem)
{
    if (f16) {
        pl_f16 h[8] = {0};
        memcpy(h, (const pl_f16 *)row + d, (size_t)rem * sizeof *h);
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
    }
    return _mm256_maskload_ps((const float *)row + d, lanes_below(rem));
}

/* q . k in float: vector i of D/8 goes to accumulator i mod 4, the tail (masked, zeros
 * beyond D) to accumulator 0; then (a0 + a1) + (a2 + a3) and hsum8. Fixed by D alone. */
static inline __attribute__((always_inline)) float dot_qk(const float *restrict q, const void *krow,
                                                          int f16, int64_t D)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t d = 0;
    for (; d + 32 <= D; d += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), load8(krow, f16, d), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + 8), load8(krow, f16, d + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + 16), load8(krow, f16, d + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + 24), load8(krow, f16, d + 24), a3);
    }
    if (d + 8 <= D) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), load8(krow, f16, d), a0), d += 8;
    if (d + 8 <= D) a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), load8(krow, f16, d), a1), d += 8;
    if (d + 8 <= D) a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), load8(krow, f16, d), a2), d += 8;
    if (d < D) {
        const __m256 qt = _mm256_maskload_ps(q + d, lanes_below(D - d));
        a3 = _mm256_fmadd_ps(qt, load_tail(krow, f16, d, D - d), a3);
    }
    return hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

/* o[d0 .. d0 + 8 NV) = sum over visible j (ascending) of e_j v_j[...], one FMA chain per d,
 * divided by sum. NV accumulators stay in registers for the whole sweep over j. */
#define ATTN_V_CHUNK(NV)                                                                           \
    static void v_chunk_##NV(float *restrict o, const vis_rule *vr, const float *e,                \
                             const char *vbase, size_t vstride, int f16, int64_t d0, __m256 sum)   \
    {                                                                                              \
        __m256 acc[NV];                                                                            \
        for (int k = 0; k < NV; k++) acc[k] = _mm256_setzero_ps();                                 \
        FOR_SPAN (vr, j0) {                                                                        \
            unsigned bits = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(vis8(vr, j0)));       \
            for (; bits; bits &= bits - 1) {                                                       \
                const int64_t j = j0 + __builtin_ctz(bits);                                        \
                const __m256 w = _mm256_broadcast_ss(e + j);                                       \
                const void *row = vbase + (size_t)j * vstride;                                     \
                for (int k = 0; k < NV; k++)                                                       \
                    acc[k] = _mm256_fmadd_ps(w, load8(row, f16, d0 + 8 * k), acc[k]);              \
            }                                                                                      \
        }                                                                                          \
        for (int k = 0; k < NV; k++) _mm256_storeu_ps(o + d0 + 8 * k, _mm256_div_ps(acc[k], sum)); \
    }
ATTN_V_CHUNK(8)
ATTN_V_CHUNK(4)
ATTN_V_CHUNK(2)
ATTN_V_CHUNK(1)
#undef ATTN_V_CHUNK

/* The last rem < 8 dims: the same per-lane FMA chain and division, through a zero-padded
 * copy of each row's tail. */
static void v_tail(float *restrict o, const vis_rule *vr, const float *e, const char *vbase,
                   size_t vstride, int f16, int64_t d0, int64_t rem, __m256 sum)
{
    __m256 acc = _mm256_setzero_ps();
    FOR_SPAN (vr, j0) {
        unsigned bits = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(vis8(vr, j0)));
        for (; bits; bits &= bits - 1) {
            const int64_t j = j0 + __builtin_ctz(bits);
            const void *row = vbase + (size_t)j * vstride;
            acc = _mm256_fmadd_ps(_mm256_broadcast_ss(e + j), load_tail(row, f16, d0, rem), acc);
        }
    }
    _mm256_maskstore_ps(o + d0, lanes_below(rem), _mm256_div_ps(acc, sum));
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
    vis_rule vr = vis_init(a, a->q_pos[t]);
    const float cap = a->softcap;

    /* Pass 1: scores of the visible entries, and their max (ref's rule: first, then >). */
    int64_t seen = 0, b_first = INT64_MAX, b_last = -1;
    float m = -INFINITY;
    FOR_SPAN (&vr, j0) {
        const __m256i vis = vis8(&vr, j0);
        const unsigned bits = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(vis));
        if (!bits) continue;
        if (b_first == INT64_MAX) b_first = j0 / 8;
        b_last = j0 / 8;
        if (cap == 0.0f) {
            for (unsigned b = bits; b; b &= b - 1) {
                const int64_t j = j0 + __builtin_ctz(b);
                const float s = a->scale * dot_qk(q, kbase + (size_t)j * stride, f16, D);
                scratch[j] = s;
                if (seen == 0 || s > m) m = s;
                seen++;
            }
            continue;
        }
        for (unsigned b = bits; b; b &= b - 1) {
            const int64_t j = j0 + __builtin_ctz(b);
            scratch[j] = a->scale * dot_qk(q, kbase + (size_t)j * stride, f16, D);
        }
        /* the block's visible scores at once: cap * tanh(s / cap) per lane, then the max */
        const __m256 sv = _mm256_maskload_ps(scratch + j0, vis), c = _mm256_set1_ps(cap);
        _mm256_maskstore_ps(scratch + j0, vis,
                            _mm256_mul_ps(c, pl_avx2_tanh(_mm256_div_ps(sv, c))));
        for (unsigned b = bits; b; b &= b - 1) {
            const float s = scratch[j0 + __builtin_ctz(b)];
            if (seen == 0 || s > m) m = s;
            seen++;
        }
    }
    if (seen == 0) {
        memset(o, 0, (size_t)D * sizeof *o);
        return;
    }
    pl_attn_span_clip(&vr.span, b_first, b_last + 1);    /* passes 2 and 3: visible blocks only */
    const float sk = a->sinks ? a->sinks[h] : -INFINITY; /* gpt-oss: the sink joins the max */
    if (a->sinks && sk > m) m = sk;

    /* Pass 2: weights in place of the scores (the max and its ties weigh exactly 1), summed
     * in lane j mod 8; invisible lanes are neither read nor written and add +0. */
    const __m256 mv = _mm256_set1_ps(m), one = _mm256_set1_ps(1.0f);
    __m256 acc = _mm256_setzero_ps();
    FOR_SPAN (&vr, j0) {
        const __m256i vis = vis8(&vr, j0);
        if (_mm256_testz_si256(vis, vis)) continue;
        const __m256 s = _mm256_maskload_ps(scratch + j0, vis);
        __m256 e = _mm256_blendv_ps(pl_avx2_exp(_mm256_sub_ps(s, mv)), one,
                                    _mm256_cmp_ps(s, mv, _CMP_EQ_OQ));
        e = _mm256_and_ps(e, _mm256_castsi256_ps(vis));
        _mm256_maskstore_ps(scratch + j0, vis, e);
        acc = _mm256_add_ps(acc, e);
    }
    float total = hsum8(acc);
    if (a->sinks) /* ... and the denominator (ref's rule: at the max it weighs 1) */
        total += sk == m ? 1.0f : _mm256_cvtss_f32(pl_avx2_exp(_mm256_set1_ps(sk - m)));
    const __m256 sum = _mm256_set1_ps(total);

    /* Pass 3: weighted sum of V rows, 64 dims (8 registers) per sweep over the entries. */
    int64_t d0 = 0;
    for (; d0 + 64 <= D; d0 += 64) v_chunk_8(o, &vr, scratch, vbase, stride, f16, d0, sum);
    if (d0 + 32 <= D) v_chunk_4(o, &vr, scratch, vbase, stride, f16, d0, sum), d0 += 32;
    if (d0 + 16 <= D) v_chunk_2(o, &vr, scratch, vbase, stride, f16, d0, sum), d0 += 16;
    if (d0 + 8 <= D) v_chunk_1(o, &vr, scratch, vbase, stride, f16, d0, sum), d0 += 8;
    if (d0 < D) v_tail(o, &vr, scratch, vbase, stride, f16, d0, D - d0, sum);
}

/* out[t][h][d] for h in [h0, h1), every t; scratch holds N floats. */
void attention_avx2(float *restrict out, const pl_attn_args *a, int64_t h0, int64_t h1,
                    float *restrict scratch)
{
    for (int64_t t = 0; t < a->T; t++)
        for (int64_t h = h0; h < h1; h++) attend_one(out + (t * a->H + h) * a->D, a, t, h, scratch);
}
