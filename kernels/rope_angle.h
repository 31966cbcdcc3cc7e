/* rope_angle.h — RoPE's per-pair cos and sin (pl_rope_args), in double, shared by every set so
 * that each computes the same angle and the same cos and sin bit for bit. Not the rotation. */
#ifndef PLUMB_KERNELS_ROPE_ANGLE_H
#define PLUMB_KERNELS_ROPE_ANGLE_H

#include <math.h>

#include "kernels.h"

/* What one call needs beyond the pair index: the rotated dims and YaRN's ramp and mscale. */
typedef struct pl_rope_plan {
    int64_t n_rot, half; /* n_rot clamped to D; pairs [0, half) rotate */
    double lo, hi;       /* YaRN's correction dims (ext_factor != 0) */
    double mscale;
} pl_rope_plan;

/* YaRN's correction dims for n_rot rotated dims: [lo, hi] of the pair indices where the ramp
 * runs, c(b) = n_rot ln(n_ctx_orig / (2 pi b)) / (2 ln freq_base), lo = max(0,
 * floor(c(beta_fast))), hi = min(n_rot - 1, ceil(c(beta_slow))) (yarn_no_truncate: not rounded,
 * transformers' truncate = false). In double (ggml uses float: the
 * two may differ only where c(b) lands within a float rounding of an integer). */
static inline pl_rope_plan pl_rope_plan_of(const pl_rope_args *a, int64_t D)
{
    pl_rope_plan p = {.n_rot = a->n_rot > D ? D : a->n_rot, .mscale = (double)a->attn_factor};
    p.half = p.n_rot / 2;
    if (a->ext_factor != 0.0f) {
        const double two_pi = 6.283185307179586476925286766559;
        const double den = 2.0 * log((double)a->freq_base);
        const double c_fast =
            (double)p.n_rot * log((double)a->n_ctx_orig / (two_pi * a->beta_fast)) / den;
        const double c_slow =
            (double)p.n_rot * log((double)a->n_ctx_orig / (two_pi * a->beta_slow)) / den;
        p.lo = fmax(0.0, a->yarn_no_truncate ? c_fast : floor(c_fast));
        p.hi = fmin((double)(p.n_rot - 1), a->yarn_no_truncate ? c_slow : ceil(c_slow));
        p.mscale *= 1.0 + 0.1 * log(1.0 / (double)a->freq_scale);
    }
    return p;
}

/* freq_base^(-2i/n_rot): pair i's frequency before the position, the same at every position. */
static inline double pl_rope_freq(const pl_rope_plan *p, const pl_rope_args *a, int64_t i)
{
    return pow((double)a->freq_base, -2.0 * (double)i / (double)p->n_rot);
}

/* cos(theta_i) mscale and sin(theta_i) mscale for pair i at position pos from its frequency f
 * (pl_rope_freq; kernels.h says how theta_i is made). */
static inline void pl_rope_cos_sin_f(const pl_rope_plan *p, const pl_rope_args *a, int32_t pos,
                                     int64_t i, double f, double *c, double *s)
{
    double theta = (double)pos * f;
    if (a->freq_factors) theta /= (double)a->freq_factors[i];
    const double interp = (double)a->freq_scale * theta;
    if (a->ext_factor != 0.0f) {
        const double y = ((double)i - p->lo) / fmax(0.001, p->hi - p->lo);
        const double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * (double)a->ext_factor;
        theta = interp * (1.0 - mix) + theta * mix;
    } else {
        theta = interp;
    }
    *c = cos(theta) * p->mscale;
    *s = sin(theta) * p->mscale;
}

/* Pair i's cos and sin at pos, shared by every head: a->cos_sin's where the caller gave them. */
static inline void pl_rope_cos_sin(const pl_rope_plan *p, const pl_rope_args *a, int32_t pos,
                                   int64_t i, double *c, double *s)
{
    if (a->cos_sin) {
        *c = a->cos_sin[2 * i];
        *s = a->cos_sin[2 * i + 1];
        return;
    }
    pl_rope_cos_sin_f(p, a, pos, i, pl_rope_freq(p, a, i), c, s);
}

/* a's pl_rope_args.cos_sin for head dim D at positions pos0 + t, t in [0, n): table t at
 * out + t * stride (stride >= min(n_rot, D) doubles), each pair's frequency computed once. */
static inline void pl_rope_fill(const pl_rope_args *a, int64_t D, int32_t pos0, int64_t n,
                                double *out, int64_t stride)
{
    const pl_rope_plan p = pl_rope_plan_of(a, D);
    for (int64_t i = 0; i < p.half; i++) {
        const double f = pl_rope_freq(&p, a, i);
        for (int64_t t = 0; t < n; t++)
            pl_rope_cos_sin_f(&p, a, (int32_t)(pos0 + t), i, f, &out[t * stride + 2 * i],
                              &out[t * stride + 2 * i + 1]);
    }
}

/* The SIMD sets' table for pairs [i0, i0 + n): c, s per pair, and cd, sd per element of a
 * normal-style pair (cos twice; -sin, sin), so the rotation is x cd + swap(x) sd. */
static inline void pl_rope_chunk(const pl_rope_plan *p, const pl_rope_args *a, int32_t pos,
                                 int64_t i0, int64_t n, double *c, double *s, double *cd,
                                 double *sd)
{
    for (int64_t k = 0; k < n; k++) {
        pl_rope_cos_sin(p, a, pos, i0 + k, &c[k], &s[k]);
        cd[2 * k] = cd[2 * k + 1] = c[k];
        sd[2 * k] = -s[k], sd[2 * k + 1] = s[k];
    }
}

#endif
