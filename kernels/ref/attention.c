/* attention.c — reference causal grouped-query attention over the KV cache (F32 or F16).
 * Not flash attention: three plain passes per (token, head), reductions in double.
 *
 * For each query token t and head h in [h0, h1), with KV head g = h / (H / Hkv):
 *     s_j = scale * q[t][h] . k[j][g]            for every entry j visible to t
 *     s_j = softcap * tanh(s_j / softcap)        when softcap != 0 (Gemma 2)
 *     out[t][h] = sum_j exp(s_j - m) v[j][g] / sum_j exp(s_j - m),   m = max_j s_j
 * Visibility is pl_attn_args's rule; a query that sees nothing gets zeros. With sinks
 * (gpt-oss), m = max(max_j s_j, sinks[h]) and the denominator gains exp(sinks[h] - m); the
 * bound gains u sum_j p_j |v_jd| (|sinks[h] - m| + 8) (the sink's weight, rounded as a score's).
 *
 * Bound (u = 2^-24; the contract for every set, checked in conformance/test_attention.c):
 *     |out_d - ref_d| <= u * sum_j p_j |v_jd| * (4 (D + 2) A + |s_j - m| + 2 M + 16) + FLT_MIN
 * where p_j are the reference weights, A = max_j scale * sum_i |q_i k_ji|, M = entries seen.
 * Why: each score is a length-D dot, off by <= (D + 2) u A; softmax turns a score error d
 * into <= 2d relative weight error (numerator and denominator), doubled for a vector exp;
 * s_j - m rounds by u |s_j - m|; float sums of M weights and of M weighted values add
 * <= 2 M u; scale, exp and the final division the constant. This set keeps scores in
 * double until they are stored, so it sits far inside.
 * With softcap != 0 the term 4 (D + 2) A becomes 4 (D + 9) A: the cap's slope is <= 1, so a
 * score error passes through it undiminished at worst, and a float cap (x / c, a vector tanh
 * within 5 u, the product) adds <= 7 u |s_j| <= 7 u A. softcap == 0: not one bit changes.
 *
 * Batch invariance: every output element is produced by the same operations in the same
 * order (j ascending) whatever T, h0, h1 or the caller's thread. With kv_sorted only the
 * entries a binary search leaves inside the windows are tested (attn_span.h): the same set of
 * visible entries, the same order, not one bit different. */
#include <math.h>
#include <string.h>

#include "attn_span.h"
#include "ref.h"

/* Output dims accumulated at once, in double on the stack (2 KiB): every real head dim
 * fits, so V is read in one sweep. Chunking does not change any element's sum order. */
#define ATTN_DCHUNK 256

static int visible(const pl_attn_args *a, int64_t j, int32_t qp)
{
    int32_t kp = a->kv_pos[j];
    if (kp > qp) return 0;
    if (a->layer_window > 0 && (int64_t)qp - (int64_t)kp >= a->layer_window) return 0;
    if (a->window <= 0 || j < a->n_sinks) return 1; /* <= 0: no window */
    return (int64_t)qp - (int64_t)kp < a->window;
}

/* Start of entry j, KV head g, in k or v (elements of kv_type). */
static const void *kv_row(const pl_attn_args *a, const void *base, int64_t j, int64_t g)
{
    size_t esz = a->kv_type == PL_TYPE_F32 ? sizeof(float) : sizeof(pl_f16);
    return (const char *)base + (size_t)((j * a->Hkv + g) * a->D) * esz;
}

/* q . k in double: each float*float product is exact. Four partial sums over d mod 4, then
 * (s0 + s1) + (s2 + s3): a fixed order, and four times the throughput of one chain. */
static double dot_qk(const pl_attn_args *a, const float *restrict q, const void *krow)
{
    const int64_t D = a->D;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t d = 0;
    if (a->kv_type == PL_TYPE_F32) {
        const float *restrict k = krow;
        for (; d + 4 <= D; d += 4) {
            s0 += (double)q[d] * k[d];
            s1 += (double)q[d + 1] * k[d + 1];
            s2 += (double)q[d + 2] * k[d + 2];
            s3 += (double)q[d + 3] * k[d + 3];
        }
        for (; d < D; d++) s0 += (double)q[d] * k[d];
    } else {
        const pl_f16 *restrict k = krow;
        for (; d + 4 <= D; d += 4) {
            s0 += (double)q[d] * pl_f16_to_f32(k[d]);
            s1 += (double)q[d + 1] * pl_f16_to_f32(k[d + 1]);
            s2 += (double)q[d + 2] * pl_f16_to_f32(k[d + 2]);
            s3 += (double)q[d + 3] * pl_f16_to_f32(k[d + 3]);
        }
        for (; d < D; d++) s0 += (double)q[d] * pl_f16_to_f32(k[d]);
    }
    return (s0 + s1) + (s2 + s3);
}

/* acc[0..nd) += w * v[d0 .. d0 + nd) of one V row. */
static void axpy_v(double *restrict acc, double w, const pl_attn_args *a, const void *vrow,
                   int64_t d0, int64_t nd)
{
    if (a->kv_type == PL_TYPE_F32) {
        const float *restrict v = (const float *)vrow + d0;
        for (int64_t dd = 0; dd < nd; dd++) acc[dd] += w * (double)v[dd];
    } else {
        const pl_f16 *restrict v = (const pl_f16 *)vrow + d0;
        for (int64_t dd = 0; dd < nd; dd++) acc[dd] += w * (double)pl_f16_to_f32(v[dd]);
    }
}

static void attend_one(float *restrict o, const pl_attn_args *a, int64_t t, int64_t h,
                       float *restrict scratch)
{
    const int64_t D = a->D;
    const int64_t g = h / (a->H / a->Hkv);
    const float *q = a->q + (t * a->H + h) * D;
    const int32_t qp = a->q_pos[t];
    /* the entries worth testing (all of them unless kv_sorted), in ranges, ascending */
    const pl_attn_span sp = pl_attn_span_of(a, qp, qp, 1);

    /* Pass 1: scores of the visible entries, and their max. */
    int64_t seen = 0;
    float m = -INFINITY;
    for (int r = 0; r < sp.n; r++)
        for (int64_t j = sp.lo[r]; j < sp.hi[r]; j++) {
            if (!visible(a, j, qp)) continue;
            double sd = (double)a->scale * dot_qk(a, q, kv_row(a, a->k, j, g));
            if (a->softcap != 0.0f) sd = (double)a->softcap * tanh(sd / (double)a->softcap);
            float s = (float)sd;
            scratch[j] = s;
            if (seen == 0 || s > m) m = s;
            seen++;
        }
    if (seen == 0) {
        memset(o, 0, (size_t)D * sizeof *o);
        return;
    }

    if (a->sinks && a->sinks[h] > m) m = a->sinks[h]; /* the sink joins the max (gpt-oss) */

    /* Pass 2: unnormalised weights in place of the scores; entries at the max get 1. */
    double sum = 0.0;
    for (int r = 0; r < sp.n; r++)
        for (int64_t j = sp.lo[r]; j < sp.hi[r]; j++) {
            if (!visible(a, j, qp)) continue;
            float e = scratch[j] == m ? 1.0f : (float)exp((double)scratch[j] - (double)m);
            scratch[j] = e;
            sum += e;
        }
    /* a learned sink (gpt-oss): one more term of the denominator, at the max of both */
    if (a->sinks) sum += a->sinks[h] == m ? 1.0 : exp((double)a->sinks[h] - (double)m);
    const double inv = 1.0 / sum;

    /* Pass 3: weighted sum of V rows, ATTN_DCHUNK output dims at a time. */
    for (int64_t d0 = 0; d0 < D; d0 += ATTN_DCHUNK) {
        int64_t nd = D - d0 < ATTN_DCHUNK ? D - d0 : ATTN_DCHUNK;
        double acc[ATTN_DCHUNK] = {0};
        for (int r = 0; r < sp.n; r++)
            for (int64_t j = sp.lo[r]; j < sp.hi[r]; j++) {
                if (!visible(a, j, qp)) continue;
                axpy_v(acc, scratch[j], a, kv_row(a, a->v, j, g), d0, nd);
            }
        for (int64_t dd = 0; dd < nd; dd++) o[d0 + dd] = (float)(acc[dd] * inv);
    }
}

/* out[t][h][d] for h in [h0, h1), every t; scratch holds N floats. kv_type is F32 or F16
 * (anything else is read as F16), H is a multiple of Hkv. */
void attention_ref(float *restrict out, const pl_attn_args *a, int64_t h0, int64_t h1,
                   float *restrict scratch)
{
    for (int64_t t = 0; t < a->T; t++)
        for (int64_t h = h0; h < h1; h++) attend_one(out + (t * a->H + h) * a->D, a, t, h, scratch);
}
