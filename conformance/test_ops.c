/* test_ops.c — rmsnorm, layernorm, rope, swiglu_oai, softmax, swiglu, geglu and softcap of every
 * supported kernel set against GSL double references, within each kernel's documented bound. Not a
 * speed test. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "kernel_sets.h"
#include "refs/refs_ops.h"
#include "registry.h"
#include "rope_angle.h"
#include "testutil.h"

#define U    REF_U
#define FMIN REF_FLT_MIN
#define SEED ((unsigned long long)tu_seed())

/* Lengths every elementwise suite covers: 1, small odd primes, powers of two, the largest
 * real sizes (K = 14336 FFN, V = 152064 vocab for softmax). */
static const int64_t edge_n[] = {1, 2, 3, 5, 7, 13, 31, 61, 127, 251, 256, 4096, 14336};
#define N_EDGE   (int64_t)(sizeof edge_n / sizeof edge_n[0])
#define N_RANDOM 16

/* ---- inputs ---- */

enum fill { F_NORMAL, F_EQUAL, F_ZERO, F_NEGZERO, F_OUTLIER, F_DENORMAL, F_MIXED, F_COUNT };
static const char *const fill_name[F_COUNT] = {"normal",  "all-equal", "zeros", "neg-zeros",
                                               "outlier", "denormal",  "mixed"};

/* x[n] of the given kind; scale sets the magnitude of the normal parts. */
static void fill(float *x, int64_t n, enum fill f, double scale, tu_rng *r)
{
    float same = (float)(scale * tu_rng_normal(r));
    for (int64_t i = 0; i < n; i++) {
        switch (f) {
        case F_EQUAL:
            x[i] = same;
            break;
        case F_ZERO:
            x[i] = 0.0f;
            break;
        case F_NEGZERO:
            x[i] = -0.0f;
            break;
        case F_DENORMAL:
            x[i] = (float)((tu_rng_uniform(r) < 0.5 ? -1.0 : 1.0) *
                           (double)tu_rng_range(r, 1, (1 << 23) - 1) * 0x1p-149);
            break;
        case F_MIXED: {
            double u = tu_rng_uniform(r);
            x[i] = u < 0.1   ? -0.0f
                   : u < 0.2 ? 0x1p-140f
                   : u < 0.3 ? same
                             : (float)(scale * tu_rng_normal(r));
            break;
        }
        default:
            x[i] = (float)(scale * tu_rng_normal(r));
            break;
        }
    }
    if (f == F_OUTLIER) x[tu_rng_range(r, 0, n - 1)] = (float)(1e6 * scale);
}

static int64_t shape_n(int64_t k, tu_rng *r)
{
    return k < N_EDGE ? edge_n[k] : tu_rng_range(r, 1, 20000);
}

/* Reports one case: ledger entry always, failure message when the worst ratio exceeds 1. */
static void verdict(const char *set, const char *kernel, double worst, const char *where, double y,
                    double ref)
{
    ref_ledger_note(set, kernel, worst, where);
    TU_CHECK(worst <= 1.0, "set %s %s seed %llu %s: y=%.9g ref=%.17g error/bound=%.3g", set, kernel,
             SEED, where, y, ref, worst);
}

/* ---- rmsnorm ---- */

static void rmsnorm_case(const struct pl_kernels *ks, int64_t n, enum fill f, double scale,
                         float eps, tu_rng *r)
{
    float *x = malloc((size_t)n * sizeof *x), *w = malloc((size_t)n * sizeof *w);
    float *y = malloc((size_t)n * sizeof *y);
    double *ref = malloc((size_t)n * sizeof *ref);
    fill(x, n, f, scale, r);
    for (int64_t i = 0; i < n; i++) w[i] = (float)(1.0 + 0.5 * tu_rng_normal(r));
    ks->rmsnorm(y, x, w, n, eps);
    ref_rmsnorm(ref, x, w, n, eps);
    double worst = 0.0;
    int64_t wi = 0;
    for (int64_t i = 0; i < n; i++) {
        double q = ref_ratio(y[i], ref[i], (double)(n + 8) * U * fabs(ref[i]) + FMIN);
        if (!(q <= worst)) worst = q, wi = i;
    }
    char where[160];
    snprintf(where, sizeof where, "n=%" PRId64 " %s scale=%.3g eps=%g i=%" PRId64, n, fill_name[f],
             scale, eps, wi);
    verdict(ks->name, "rmsnorm", worst, where, y[wi], ref[wi]);
    free(x), free(w), free(y), free(ref);
}

static void rmsnorm_random(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->rmsnorm) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x726d73ull);
    for (int64_t k = 0; k < N_EDGE + N_RANDOM; k++) {
        int64_t n = shape_n(k, &r);
        double scale = pow(10.0, tu_rng_uniform(&r) * 6.0 - 3.0);
        rmsnorm_case(ks, n, F_NORMAL, scale, k % 2 ? 1e-5f : 1e-6f, &r);
    }
}

static void rmsnorm_stress(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->rmsnorm) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x726d7332ull);
    static const int64_t ns[] = {1, 7, 4096};
    for (int f = 1; f < F_COUNT; f++)
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
            rmsnorm_case(ks, ns[k], (enum fill)f, 3.0, 1e-6f, &r);
}

/* ---- rope ---- */

/* Plain RoPE: no scaling of any kind. */
static pl_rope_args rope_plain(int64_t n_rot, float base, enum pl_rope_style style)
{
    return (pl_rope_args){
        .n_rot = n_rot, .freq_base = base, .freq_scale = 1.0f, .attn_factor = 1.0f, .style = style};
}

static int rope_scaled(const pl_rope_args *a)
{
    return a->freq_scale != 1.0f || a->freq_factors || a->ext_factor != 0.0f ||
           a->attn_factor != 1.0f;
}

/* The bound of kernels/ref/ops.c rope_ref: unscaled it is the plain rotation's, unchanged;
 * scaling adds k = 4 to both constants, the ramp term, and scales it all by |mscale|. */
static double rope_bound(const pl_rope_args *a, int64_t n_rot, const ref_rope_angle *r, double mag)
{
    const double k = rope_scaled(a) ? 4.0 : 0.0;
    const double c_theta = (double)(n_rot / 2) + fabs(log((double)a->freq_base)) + 4.0 + k;
    const double ramp = 4.0 * fabs((double)a->ext_factor) * fabs(r->extrap - r->interp);
    return U * (8.0 + k + c_theta * fabs(r->theta) + ramp) * fabs(r->mscale) * mag + FMIN;
}

static void rope_case(const struct pl_kernels *ks, int64_t H, int64_t D, int32_t pos,
                      const pl_rope_args *ra, enum fill f, tu_rng *r)
{
    const int64_t n = H * D, n_rot = ra->n_rot;
    const enum pl_rope_style style = ra->style;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double *ref = malloc((size_t)n * sizeof *ref);
    fill(x, n, f, 1.0, r);
    memcpy(y, x, (size_t)n * sizeof *y);
    ks->rope(y, H, D, pos, ra);
    ref_rope(ref, x, H, D, pos, ra);
    double worst = 0.0;
    int64_t wi = 0;
    int passthrough_ok = 1;
    for (int64_t h = 0; h < H; h++) {
        for (int64_t i = 0; i < n_rot / 2; i++) {
            int64_t a = style == PL_ROPE_NEOX ? i : 2 * i;
            int64_t b = style == PL_ROPE_NEOX ? i + n_rot / 2 : 2 * i + 1;
            const ref_rope_angle th = ref_rope_theta(ra, n_rot, i, pos);
            double mag = fabs(x[h * D + a]) + fabs(x[h * D + b]);
            double bound = rope_bound(ra, n_rot, &th, mag);
            int64_t idx[2] = {h * D + a, h * D + b};
            for (int e = 0; e < 2; e++) {
                double q = ref_ratio(y[idx[e]], ref[idx[e]], bound);
                if (!(q <= worst)) worst = q, wi = idx[e];
            }
        }
        /* dims past n_rot pass through bit for bit */
        int64_t first = n_rot / 2 * 2;
        if (memcmp(y + h * D + first, x + h * D + first, (size_t)(D - first) * sizeof *x))
            passthrough_ok = 0;
    }
    char where[320];
    snprintf(where, sizeof where,
             "H=%" PRId64 " D=%" PRId64 " n_rot=%" PRId64
             " pos=%d base=%g %s freq_scale=%g factors=%s ext=%g%s attn=%g beta=%g/%g"
             " n_ctx_orig=%" PRId64 " %s i=%" PRId64,
             H, D, n_rot, (int)pos, ra->freq_base, style == PL_ROPE_NEOX ? "neox" : "normal",
             ra->freq_scale, ra->freq_factors ? "yes" : "no", ra->ext_factor,
             ra->yarn_no_truncate ? " untruncated" : "", ra->attn_factor, ra->beta_fast,
             ra->beta_slow, ra->n_ctx_orig, fill_name[f], wi);
    verdict(ks->name, rope_scaled(ra) ? "rope_scaled" : "rope", worst, where, y[wi], ref[wi]);
    TU_CHECK(passthrough_ok, "set %s rope seed %llu %s: dims past n_rot changed", ks->name, SEED,
             where);
    /* every set takes ref's angles, cos and sin (kernels/rope_angle.h) and rotates in double
     * as ref does: the same bits, not only the same bound */
    float *yr = malloc((size_t)n * sizeof *yr);
    memcpy(yr, x, (size_t)n * sizeof *yr);
    pl_kernels_ref.rope(yr, H, D, pos, ra);
    int64_t diff = -1;
    for (int64_t k = 0; k < n && diff < 0; k++)
        if (memcmp(&yr[k], &y[k], sizeof *y)) diff = k;
    TU_CHECK(diff < 0, "set %s rope seed %llu %s: element %" PRId64 " is %.9g, ref's %.9g",
             ks->name, SEED, where, diff, diff < 0 ? 0.0 : y[diff], diff < 0 ? 0.0 : yr[diff]);
    /* given pl_rope_args.cos_sin, a set rotates by those angles, whatever pos says: the second of
     * two tables pl_rope_fill made for positions p2 and p2 + 1 (a row stride past the pairs)
     * turns x as ref turns it at p2 + 1 from the fields alone, bit for bit */
    const int32_t p2 = (int32_t)((pos * 7 + 3) % 200000);
    const int64_t stride = D + 3;
    double *cs = malloc((size_t)(2 * stride) * sizeof *cs);
    pl_rope_fill(ra, D, p2, 2, cs, stride);
    pl_rope_args rt = *ra;
    rt.cos_sin = cs + stride;
    memcpy(y, x, (size_t)n * sizeof *y);
    ks->rope(y, H, D, pos, &rt);
    memcpy(yr, x, (size_t)n * sizeof *yr);
    pl_kernels_ref.rope(yr, H, D, p2 + 1, ra);
    diff = -1;
    for (int64_t k = 0; k < n && diff < 0; k++)
        if (memcmp(&yr[k], &y[k], sizeof *y)) diff = k;
    TU_CHECK(diff < 0,
             "set %s rope seed %llu %s: with the angles of pos %d, element %" PRId64
             " is %.9g, ref's at that pos %.9g",
             ks->name, SEED, where, (int)p2 + 1, diff, diff < 0 ? 0.0 : y[diff],
             diff < 0 ? 0.0 : yr[diff]);
    free(cs);
    free(x), free(y), free(yr), free(ref);
}

static void rope_shapes(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->rope) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x726f7065ull);
    /* {D, n_rot}: full rotation of the real head dims, partial rotation (phi/neox-partial),
     * odd small heads with a partial even n_rot. */
    static const int64_t dims[][2] = {{64, 64}, {80, 80}, {128, 128}, {128, 64}, {80, 32},  {7, 4},
                                      {5, 2},   {3, 2},   {2, 2},     {9, 0},    {256, 256}};
    static const int32_t poss[] = {0, 1, 2, 17, 511, 4095, 32767, 131071};
    static const float bases[] = {10000.0f, 500000.0f, 1000000.0f};
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
        for (size_t p = 0; p < sizeof poss / sizeof poss[0]; p++)
            for (int style = 0; style < 2; style++) {
                int64_t H = tu_rng_range(&r, 1, 8);
                float base = bases[tu_rng_range(&r, 0, 2)];
                const pl_rope_args ra = rope_plain(dims[d][1], base, (enum pl_rope_style)style);
                rope_case(ks, H, dims[d][0], poss[p], &ra, F_NORMAL, &r);
            }
    for (int k = 0; k < N_RANDOM * 4; k++) {
        int64_t D = tu_rng_range(&r, 1, 160);
        int64_t n_rot = tu_rng_range(&r, 0, D) / 2 * 2;
        int32_t pos = (int32_t)tu_rng_range(&r, 0, 200000);
        float base = (float)pow(10.0, 3.0 + 4.0 * tu_rng_uniform(&r));
        const pl_rope_args ra = rope_plain(n_rot, base, (enum pl_rope_style)(k & 1));
        rope_case(ks, tu_rng_range(&r, 1, 40), D, pos, &ra, F_NORMAL, &r);
    }
}

static void rope_stress(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->rope) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x726f706532ull);
    for (int f = 1; f < F_COUNT; f++)
        for (int style = 0; style < 2; style++) {
            const pl_rope_args ra = rope_plain(128, 10000.0f, (enum pl_rope_style)style);
            rope_case(ks, 4, 128, 1234, &ra, (enum fill)f, &r);
        }
}

/* Linear (freq_scale), llama3 / longrope (freq_factors), YaRN (ext_factor, betas, n_ctx_orig)
 * and attn_factor, alone and together, over random styles, partial n_rot and positions. */
static void rope_scaling(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->rope) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x726f706533ull);
    static const int32_t big[] = {0, 1, 8191, 32767, 131071, 500000};
    float factors[128];
    for (int k = 0; k < N_RANDOM * 12; k++) {
        const int64_t D = k % 3 == 0 ? 128 : tu_rng_range(&r, 2, 256);
        pl_rope_args ra = rope_plain(k % 3 == 0 ? 128 : tu_rng_range(&r, 1, D) / 2 * 2,
                                     (float)pow(10.0, 3.0 + 3.5 * tu_rng_uniform(&r)),
                                     (enum pl_rope_style)tu_rng_range(&r, 0, 1));
        if (k % 5 == 4 && ra.n_rot < D) ra.n_rot = D - D % 2; /* also full rotation */
        const int32_t pos =
            k % 2 ? big[k / 2 % 6]
                  : (int32_t)tu_rng_range(&r, 0, tu_rng_range(&r, 0, 1) ? 4096 : 600000);
        const int64_t pick = tu_rng_range(&r, 0, 2);
        ra.freq_scale = pick == 0 ? 1.0f
                        : pick == 1
                            ? 0.25f
                            : (float)(1.0 / tu_rng_range(&r, 1, 64) * tu_rng_uniform(&r) + 0.01);
        if (tu_rng_range(&r, 0, 1)) {
            for (int64_t i = 0; i < ra.n_rot / 2; i++)
                factors[i] = (float)(1.0 + 31.0 * tu_rng_uniform(&r));
            ra.freq_factors = factors;
        }
        if (tu_rng_range(&r, 0, 1)) {
            ra.ext_factor = tu_rng_range(&r, 0, 3) ? 1.0f : (float)tu_rng_uniform(&r);
            ra.beta_fast = (float)(8.0 + 56.0 * tu_rng_uniform(&r));
            ra.beta_slow = (float)(0.5 + 1.5 * tu_rng_uniform(&r));
            ra.n_ctx_orig = tu_rng_range(&r, 256, 131072);
            ra.yarn_no_truncate = k % 4 == 1; /* issue 49: transformers' truncate = false */
        }
        if (tu_rng_range(&r, 0, 1)) ra.attn_factor = (float)(0.25 + 1.75 * tu_rng_uniform(&r));
        rope_case(ks, tu_rng_range(&r, 1, 8), D, pos, &ra, k % 7 ? F_NORMAL : F_MIXED, &r);
    }
}

/* ---- softmax ---- */

static void softmax_case(const struct pl_kernels *ks, const float *x, int64_t n, const char *what)
{
    float *y = malloc((size_t)n * sizeof *y);
    double *ref = malloc((size_t)n * sizeof *ref);
    ks->softmax(y, x, n);
    ref_softmax(ref, x, n);
    float m = x[0];
    for (int64_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
    double worst = 0.0;
    int64_t wi = 0;
    for (int64_t i = 0; i < n; i++) {
        double gap = x[i] == m ? 0.0 : fabs((double)x[i] - (double)m);
        double bound = isinf(gap) ? FMIN : ((double)n + 8.0 + gap) * U * fabs(ref[i]) + FMIN;
        double q = ref_ratio(y[i], ref[i], bound);
        if (!(q <= worst)) worst = q, wi = i;
    }
    char where[160];
    snprintf(where, sizeof where, "n=%" PRId64 " %s i=%" PRId64, n, what, wi);
    verdict(ks->name, "softmax", worst, where, y[wi], ref[wi]);
    free(y), free(ref);
}

static void softmax_random(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->softmax) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x736d6178ull);
    for (int64_t k = 0; k < N_EDGE + N_RANDOM + 1; k++) {
        int64_t n = k == N_EDGE + N_RANDOM ? 152064 : shape_n(k, &r);
        double scale = pow(10.0, tu_rng_uniform(&r) * 3.0 - 1.5);
        float *x = malloc((size_t)n * sizeof *x);
        fill(x, n, F_NORMAL, scale, &r);
        char what[64];
        snprintf(what, sizeof what, "normal scale=%.3g", scale);
        softmax_case(ks, x, n, what);
        free(x);
    }
}

static void softmax_stress(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->softmax) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x736d617832ull);
    static const int64_t ns[] = {1, 2, 7, 4096};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int64_t n = ns[k];
        float *x = malloc((size_t)n * sizeof *x);
        for (int f = 1; f < F_COUNT; f++) {
            fill(x, n, (enum fill)f, 5.0, &r);
            softmax_case(ks, x, n, fill_name[f]);
        }
        /* masked entries: some -inf, then all -inf (uniform by contract) */
        fill(x, n, F_NORMAL, 5.0, &r);
        for (int64_t i = 0; i < n; i += 2) x[i] = -INFINITY;
        if (n > 1) softmax_case(ks, x, n, "half -inf");
        for (int64_t i = 0; i < n; i++) x[i] = -INFINITY;
        softmax_case(ks, x, n, "all -inf");
        /* a range so wide most entries underflow */
        for (int64_t i = 0; i < n; i++) x[i] = (float)(-200.0 * tu_rng_uniform(&r));
        softmax_case(ks, x, n, "underflowing tail");
        free(x);
    }
}

/* ---- swiglu ---- */

static void swiglu_case(const struct pl_kernels *ks, const float *g, const float *up, int64_t n,
                        const char *what)
{
    float *y = malloc((size_t)n * sizeof *y);
    double *ref = malloc((size_t)n * sizeof *ref);
    ks->swiglu(y, g, up, n);
    ref_swiglu(ref, g, up, n);
    double worst = 0.0;
    int64_t wi = 0;
    for (int64_t i = 0; i < n; i++) {
        double q = ref_ratio(y[i], ref[i], 16.0 * U * fabs(ref[i]) + 0x1p-120 * fabs(up[i]) + FMIN);
        if (!(q <= worst)) worst = q, wi = i;
    }
    char where[160];
    snprintf(where, sizeof where, "n=%" PRId64 " %s i=%" PRId64 " gate=%.9g", n, what, wi, g[wi]);
    verdict(ks->name, "swiglu", worst, where, y[wi], ref[wi]);
    free(y), free(ref);
}

static void swiglu_random(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->swiglu) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x737767ull);
    for (int64_t k = 0; k < N_EDGE + N_RANDOM; k++) {
        int64_t n = shape_n(k, &r);
        double scale = pow(10.0, tu_rng_uniform(&r) * 2.5 - 1.0); /* up to |gate| ~ 1e2 */
        float *g = malloc((size_t)n * sizeof *g), *up = malloc((size_t)n * sizeof *up);
        fill(g, n, F_NORMAL, scale, &r);
        fill(up, n, F_NORMAL, 1.0, &r);
        char what[64];
        snprintf(what, sizeof what, "normal scale=%.3g", scale);
        swiglu_case(ks, g, up, n, what);
        free(g), free(up);
    }
}

static void swiglu_stress(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->swiglu) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x73776732ull);
    const int64_t n = 257;
    float *g = malloc((size_t)n * sizeof *g), *up = malloc((size_t)n * sizeof *up);
    for (int f = 1; f < F_COUNT; f++) {
        fill(g, n, (enum fill)f, 4.0, &r);
        fill(up, n, F_NORMAL, 1.0, &r);
        swiglu_case(ks, g, up, n, fill_name[f]);
        fill(g, n, F_NORMAL, 4.0, &r);
        fill(up, n, (enum fill)f, 1.0, &r);
        swiglu_case(ks, g, up, n, fill_name[f]);
    }
    /* saturation: huge positive gates pass through, huge negative ones vanish */
    for (int64_t i = 0; i < n; i++) {
        static const float sat[] = {1e30f, -1e30f, 88.0f, -80.0f, 20.0f, -20.0f, 3e38f, -3e38f};
        g[i] = sat[i % 8];
        up[i] = (float)tu_rng_normal(&r) * 1e-3f;
    }
    swiglu_case(ks, g, up, n, "saturated gates");
    free(g), free(up);
}

/* ---- geglu ---- */

/* The bound of kernels/ref/ops.c geglu_ref: (16 + 16 |z| w) u |y_ref| + 2^-120 |up| + FLT_MIN,
 * w = 1 / (1 + exp(2z)) the share of exp's argument error that reaches y. */
static double geglu_bound(double ref, double z, float up)
{
    const double w = 2.0 * z > 700.0 ? 0.0 : 1.0 / (1.0 + exp(2.0 * z));
    return (16.0 + 16.0 * fabs(z) * w) * U * fabs(ref) + 0x1p-120 * fabs(up) + FMIN;
}

static void geglu_case(const struct pl_kernels *ks, const float *g, const float *up, int64_t n,
                       const char *what)
{
    float *y = malloc((size_t)n * sizeof *y);
    double *ref = malloc((size_t)n * sizeof *ref), *z = malloc((size_t)n * sizeof *z);
    ks->geglu(y, g, up, n);
    ref_geglu(ref, z, g, up, n);
    double worst = 0.0;
    int64_t wi = 0;
    for (int64_t i = 0; i < n; i++) {
        double q = ref_ratio(y[i], ref[i], geglu_bound(ref[i], z[i], up[i]));
        if (!(q <= worst)) worst = q, wi = i;
    }
    char where[160];
    snprintf(where, sizeof where, "n=%" PRId64 " %s i=%" PRId64 " gate=%.9g", n, what, wi, g[wi]);
    verdict(ks->name, "geglu", worst, where, y[wi], ref[wi]);
    free(y), free(ref), free(z);
}

static void geglu_random(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->geglu) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x67656775ull);
    for (int64_t k = 0; k < N_EDGE + N_RANDOM; k++) {
        int64_t n = shape_n(k, &r);
        double scale = pow(10.0, tu_rng_uniform(&r) * 2.5 - 1.0); /* up to |gate| ~ 1e2 */
        float *g = malloc((size_t)n * sizeof *g), *up = malloc((size_t)n * sizeof *up);
        fill(g, n, F_NORMAL, scale, &r);
        fill(up, n, F_NORMAL, 1.0, &r);
        char what[64];
        snprintf(what, sizeof what, "normal scale=%.3g", scale);
        geglu_case(ks, g, up, n, what);
        free(g), free(up);
    }
}

/* Every float gate in [-20, 20] on a grid of 2^-12 (163841 values, both branches of every
 * approximation and the overflow of exp near -9.7), then stress fills and saturation. */
static void geglu_sweep_and_stress(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->geglu) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6765677532ull);
    int64_t n = 40 * 4096 + 1;
    float *g = malloc((size_t)n * sizeof *g), *up = malloc((size_t)n * sizeof *up);
    for (int64_t i = 0; i < n; i++) {
        g[i] = (float)(-20.0 + (double)i * 0x1p-12);
        up[i] = i % 3 ? 1.0f : (float)tu_rng_normal(&r);
    }
    geglu_case(ks, g, up, n, "sweep [-20, 20] step 2^-12");
    n = 257;
    for (int f = 1; f < F_COUNT; f++) {
        fill(g, n, (enum fill)f, 4.0, &r);
        fill(up, n, F_NORMAL, 1.0, &r);
        geglu_case(ks, g, up, n, fill_name[f]);
        fill(g, n, F_NORMAL, 4.0, &r);
        fill(up, n, (enum fill)f, 1.0, &r);
        geglu_case(ks, g, up, n, fill_name[f]);
    }
    for (int64_t i = 0; i < n; i++) {
        static const float sat[] = {1e30f, -1e30f, 88.0f, -80.0f, 20.0f, -20.0f,
                                    3e38f, -3e38f, 1e13f, -1e13f, -9.7f, 1e-30f};
        g[i] = sat[i % 12];
        up[i] = (float)tu_rng_normal(&r) * 1e-3f;
    }
    geglu_case(ks, g, up, n, "saturated gates");
    free(g), free(up);
}

/* ---- softcap ---- */

/* The bound of kernels/ref/ops.c softcap_ref: 8 u |y_ref| + FLT_MIN. Also: in place (y == x)
 * gives the same bits as out of place. */
static void softcap_case(const struct pl_kernels *ks, const float *x, int64_t n, float cap,
                         const char *what)
{
    float *y = malloc((size_t)n * sizeof *y), *yi = malloc((size_t)n * sizeof *yi);
    double *ref = malloc((size_t)n * sizeof *ref);
    ks->softcap(y, x, n, cap);
    memcpy(yi, x, (size_t)n * sizeof *yi);
    ks->softcap(yi, yi, n, cap);
    ref_softcap(ref, x, n, cap);
    double worst = 0.0;
    int64_t wi = 0;
    for (int64_t i = 0; i < n; i++) {
        double q = ref_ratio(y[i], ref[i], 8.0 * U * fabs(ref[i]) + FMIN);
        if (!(q <= worst)) worst = q, wi = i;
    }
    char where[160];
    snprintf(where, sizeof where, "n=%" PRId64 " cap=%g %s i=%" PRId64 " x=%.9g", n, cap, what, wi,
             x[wi]);
    verdict(ks->name, "softcap", worst, where, y[wi], ref[wi]);
    TU_CHECK(!memcmp(y, yi, (size_t)n * sizeof *y), "set %s softcap seed %llu %s: in place differs",
             ks->name, SEED, where);
    free(y), free(yi), free(ref);
}

static void softcap_random(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->softcap) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x73636170ull);
    for (int64_t k = 0; k < N_EDGE + N_RANDOM; k++) {
        int64_t n = shape_n(k, &r);
        const float cap = k % 3 == 0   ? 50.0f
                          : k % 3 == 1 ? 30.0f
                                       : (float)pow(10.0, 3.0 * tu_rng_uniform(&r) - 1.0);
        double scale = cap * pow(10.0, tu_rng_uniform(&r) * 3.0 - 2.0);
        float *x = malloc((size_t)n * sizeof *x);
        fill(x, n, F_NORMAL, scale, &r);
        char what[64];
        snprintf(what, sizeof what, "normal scale=%.3g", scale);
        softcap_case(ks, x, n, cap, what);
        free(x);
    }
}

/* x / cap over [-20, 20] on a grid of 2^-12 for caps 1, 30 and 50 (both branches of the
 * tanh and its saturation), then stress fills and the non-finite inputs. */
static void softcap_sweep_and_stress(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->softcap) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x7363617032ull);
    int64_t n = 40 * 4096 + 1;
    float *x = malloc((size_t)n * sizeof *x);
    static const float caps[] = {1.0f, 30.0f, 50.0f};
    for (int c = 0; c < 3; c++) {
        for (int64_t i = 0; i < n; i++) x[i] = (float)((-20.0 + (double)i * 0x1p-12) * caps[c]);
        softcap_case(ks, x, n, caps[c], "sweep x/cap in [-20, 20] step 2^-12");
    }
    n = 257;
    for (int f = 1; f < F_COUNT; f++) {
        fill(x, n, (enum fill)f, 40.0, &r);
        softcap_case(ks, x, n, 30.0f, fill_name[f]);
    }
    for (int64_t i = 0; i < n; i++) {
        static const float odd[] = {INFINITY, -INFINITY, 3e38f, -3e38f,
                                    1e-30f,   -1e-45f,   0.3f,  -0.3f};
        x[i] = odd[i % 8];
    }
    softcap_case(ks, x, n, 50.0f, "infinite, huge and tiny");
    free(x);
}

/* ---- mixture-of-experts routing and combining ---- */

/* kernels.h's pl_weighted_sum_fn: against the exact double sum, within (U + 1) u sum|w x| +
 * FLT_MIN (U products and U - 1 adds, each rounding once); and the slot order itself, on
 * values where another order gives other bits. */
static void weighted_sum_case(const struct pl_kernels *ks, int64_t nu, int64_t n, tu_rng *r,
                              enum fill f)
{
    float *x = malloc((size_t)(nu * n) * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    const float *rows[PL_MOE_MAX_USED + 1];
    float w[PL_MOE_MAX_USED + 1];
    for (int64_t u = 0; u < nu; u++) {
        fill(x + u * n, n, u % 2 ? F_NORMAL : f, 1.0, r);
        rows[u] = x + u * n;
        w[u] = (float)tu_rng_uniform(r);
    }
    ks->weighted_sum(y, rows, w, nu, n);
    double worst = 0.0, ref_w = 0.0;
    int64_t wi = 0;
    for (int64_t i = 0; i < n; i++) {
        double ref = 0.0, mag = 0.0;
        for (int64_t u = 0; u < nu; u++) {
            ref += (double)w[u] * (double)rows[u][i];
            mag += fabs((double)w[u] * (double)rows[u][i]);
        }
        const double q = ref_ratio(y[i], ref, (double)(nu + 1) * U * mag + FMIN);
        if (!(q <= worst)) worst = q, wi = i, ref_w = ref;
    }
    char where[160];
    snprintf(where, sizeof where, "U=%" PRId64 " n=%" PRId64 " %s i=%" PRId64, nu, n, fill_name[f],
             wi);
    verdict(ks->name, "weighted_sum", worst, where, y[wi], ref_w);
    free(x), free(y);
}

static void weighted_sum_suite(const struct pl_kernels *ks, void *ctx)
{
    (void)ctx;
    if (!ks->weighted_sum) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x77737573ull);
    for (int64_t k = 0; k < N_EDGE + N_RANDOM; k++)
        weighted_sum_case(ks, tu_rng_range(&r, 1, PL_MOE_MAX_USED + 1), shape_n(k, &r), &r,
                          (enum fill)(k % F_COUNT));
    /* slot order: (1 + 2^-24) + 2^-24 is 1 in float (ties to even, twice); 1 + (2^-24 + 2^-24)
     * would be 1 + 2^-23 */
    const float a[1] = {1.0f}, b[1] = {0x1p-24f}, c[1] = {0x1p-24f};
    const float *rows[3] = {a, b, c};
    const float w[3] = {1.0f, 1.0f, 1.0f};
    float y[1];
    ks->weighted_sum(y, rows, w, 3, 1);
    TU_CHECK(y[0] == 1.0f, "set %s weighted_sum: slot order not kept: %a", ks->name, (double)y[0]);
    /* each product rounded before its add (no fused multiply-add): slot 1's (1 + 2^-12)^2
     * rounds to 1 + 2^-11, so -(1 + 2^-11) + (1 + 2^-11) is 0 exactly; fused into the add it
     * would be 2^-24 */
    const float q[1] = {-(1.0f + 0x1p-11f)}, p[1] = {1.0f + 0x1p-12f};
    const float *rows2[2] = {q, p};
    const float w2[2] = {1.0f, 1.0f + 0x1p-12f};
    ks->weighted_sum(y, rows2, w2, 2, 1);
    TU_CHECK(y[0] == 0.0f, "set %s weighted_sum: a product was not rounded before its add: %a",
             ks->name, (double)y[0]);
}

/* sigmoid against double, within 4 u |ref| + FLT_MIN, over a sweep of [-100, 100] and the
 * extremes. */
static void sigmoid_suite(const struct pl_kernels *ks, void *ctx)
{
    (void)ctx;
    if (!ks->sigmoid) return;
    const int64_t n = 200 * 256 + 9;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    for (int64_t i = 0; i < n - 9; i++) x[i] = (float)(-100.0 + (double)i / 256.0);
    static const float odd[9] = {INFINITY, -INFINITY, 3e38f,   -3e38f, 0.0f,
                                 -0.0f,    1e-30f,    -1e-45f, 88.8f};
    memcpy(x + n - 9, odd, sizeof odd);
    ks->sigmoid(y, x, n);
    double worst = 0.0, rw = 0.0;
    int64_t wi = 0;
    for (int64_t i = 0; i < n; i++) {
        const double a = x[i];
        const double ref = a >= 0 ? 1.0 / (1.0 + exp(-a)) : exp(a) / (1.0 + exp(a));
        const double q = ref_ratio(y[i], ref, 4.0 * U * fabs(ref) + FMIN);
        if (!(q <= worst)) worst = q, wi = i, rw = ref;
    }
    char where[96];
    snprintf(where, sizeof where, "x=%.9g", (double)x[wi]);
    verdict(ks->name, "sigmoid", worst, where, y[wi], rw);
    free(x), free(y);
}

/* moe_route against the double softmax: p within softmax's bound; the chosen experts those of
 * the U largest double p wherever that choice is clear of the bound (a gap between the last
 * chosen and the next larger than twice the bound); ties (equal logits) to the lower expert;
 * weights renormalised to sum 1 within (U + 2) u when norm, equal to p otherwise. */
static void route_case(const struct pl_kernels *ks, const float *logits, int64_t X, int64_t nu,
                       int norm, const char *what)
{
    int32_t ids[PL_MOE_MAX_USED];
    float w[PL_MOE_MAX_USED];
    float *p = malloc((size_t)X * sizeof *p);
    double *ref = malloc((size_t)X * sizeof *ref);
    int *taken = calloc((size_t)X, sizeof *taken);
    ks->moe_route(ids, w, p, logits, X, nu, norm);
    ref_softmax(ref, logits, X);
    float m = logits[0];
    for (int64_t e = 1; e < X; e++) m = logits[e] > m ? logits[e] : m;
    double worst = 0.0, bmax = 0.0;
    int64_t wi = 0;
    for (int64_t e = 0; e < X; e++) {
        const double gap = logits[e] == m ? 0.0 : fabs((double)logits[e] - (double)m);
        const double bound = ((double)X + 8.0 + gap) * U * fabs(ref[e]) + FMIN;
        if (bound > bmax) bmax = bound;
        const double q = ref_ratio(p[e], ref[e], bound);
        if (!(q <= worst)) worst = q, wi = e;
    }
    char where[160];
    snprintf(where, sizeof where, "X=%" PRId64 " U=%" PRId64 " %s e=%" PRId64, X, nu, what, wi);
    verdict(ks->name, "moe_route p", worst, where, p[wi], ref[wi]);
    double sum = 0.0;
    for (int64_t u = 0; u < nu; u++) {
        const int32_t mine = ids[u];
        TU_CHECK(mine >= 0 && mine < X && !taken[mine],
                 "set %s moe_route %s: slot %" PRId64 " id %d out of range or repeated", ks->name,
                 where, u, mine);
        if (!(mine >= 0 && mine < X) || taken[mine]) break;
        /* the reference's u-th choice: the largest double p not chosen in an earlier slot */
        int64_t best = -1;
        for (int64_t e = 0; e < X; e++)
            if (!taken[e] && (best < 0 || ref[e] > ref[best])) best = e;
        TU_CHECK(mine == best || fabs(ref[mine] - ref[best]) <= 2 * bmax,
                 "set %s moe_route %s: slot %" PRId64 " chose %d (p %.9g) over %" PRId64
                 " (p %.9g), a gap beyond the bound",
                 ks->name, where, u, mine, ref[mine], best, ref[best]);
        taken[mine] = 1;
        TU_CHECK(norm || w[u] == p[mine], "set %s moe_route %s: w[%" PRId64 "] %a != p %a",
                 ks->name, where, u, (double)w[u], (double)p[mine]);
        if (u > 0)
            TU_CHECK(p[ids[u - 1]] >= p[mine], "set %s moe_route %s: slots not descending",
                     ks->name, where);
        sum += w[u];
    }
    TU_CHECK(!norm || fabs(sum - 1.0) <= (double)(nu + 2) * 0x1p-24,
             "set %s moe_route %s: renormalised weights sum to %.9g", ks->name, where, sum);
    free(p), free(ref), free(taken);
}

static void moe_route_suite(const struct pl_kernels *ks, void *ctx)
{
    (void)ctx;
    if (!ks->moe_route) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x726f757465ull);
    static const int64_t xs[] = {1, 2, 3, 8, 60, 64, 128, 256};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        for (int k = 0; k < 6; k++) {
            const int64_t X = xs[i], nu = tu_rng_range(&r, 1, X < 8 ? X : 8);
            float *l = malloc((size_t)X * sizeof *l);
            fill(l, X, (enum fill)(k % F_COUNT), pow(10.0, tu_rng_uniform(&r) * 2 - 1), &r);
            char what[48];
            snprintf(what, sizeof what, "%s norm=%d", fill_name[k % F_COUNT], k % 2);
            route_case(ks, l, X, nu, k % 2, what);
            free(l);
        }
    /* ties go to the lower expert: equal logits pick 0, 1, ..., U - 1 in that order */
    float eq[16];
    for (int e = 0; e < 16; e++) eq[e] = 0.25f;
    int32_t ids[8];
    float w[8], p[16];
    ks->moe_route(ids, w, p, eq, 16, 8, 1);
    for (int u = 0; u < 8; u++)
        TU_CHECK(ids[u] == u && w[u] == 0.125f, "set %s moe_route ties: slot %d id %d w %a",
                 ks->name, u, ids[u], (double)w[u]);
}

/* ---- layernorm (issue 49: cohere2) ---- */

/* The worst error / bound of fn over one row (ref's bound, kernels/ref/ops.c:
 * (n + 8) u (|y_ref| + |w| s_ref max|x|) + FLT_MIN); *wi its element. */
static double layernorm_worst(pl_layernorm_fn fn, const float *x, const float *w, float *y,
                              double *ref, int64_t n, float eps, int64_t *wi)
{
    fn(y, x, w, n, eps);
    ref_layernorm(ref, x, w, n, eps);
    double mean = 0.0, var = 0.0, mx = 0.0;
    for (int64_t i = 0; i < n; i++) mean += x[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) {
        var += ((double)x[i] - mean) * ((double)x[i] - mean);
        mx = fabs((double)x[i]) > mx ? fabs((double)x[i]) : mx;
    }
    const double s_ref = 1.0 / sqrt(var / (double)n + (double)eps);
    double worst = 0.0;
    *wi = 0;
    for (int64_t i = 0; i < n; i++) {
        const double b = (double)(n + 8) * U * (fabs(ref[i]) + fabs((double)w[i]) * s_ref * mx);
        double q = ref_ratio(y[i], ref[i], b + FMIN);
        if (!(q <= worst)) worst = q, *wi = i;
    }
    return worst;
}

static void layernorm_case(const struct pl_kernels *ks, int64_t n, enum fill f, double scale,
                           double offset, float eps, tu_rng *r)
{
    float *x = malloc((size_t)n * sizeof *x), *w = malloc((size_t)n * sizeof *w);
    float *y = malloc((size_t)n * sizeof *y);
    double *ref = malloc((size_t)n * sizeof *ref);
    fill(x, n, f, scale, r);
    for (int64_t i = 0; i < n; i++) x[i] += (float)offset; /* a mean to take out */
    for (int64_t i = 0; i < n; i++) w[i] = (float)(1.0 + 0.5 * tu_rng_normal(r));
    int64_t wi;
    const double worst = layernorm_worst(ks->layernorm, x, w, y, ref, n, eps, &wi);
    char where[160];
    snprintf(where, sizeof where, "n=%" PRId64 " %s scale=%.3g offset=%.3g eps=%g i=%" PRId64, n,
             fill_name[f], scale, offset, eps, wi);
    verdict(ks->name, "layernorm", worst, where, y[wi], ref[wi]);
    free(x), free(w), free(y), free(ref);
}

static void layernorm_random(const struct pl_kernels *ks, void *ctx)
{
    (void)ctx;
    if (!ks->layernorm) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6c6e6f726dull);
    for (int64_t k = 0; k < N_EDGE + N_RANDOM; k++) {
        const int64_t n = shape_n(k, &r);
        const double scale = pow(10.0, tu_rng_uniform(&r) * 6.0 - 3.0);
        const double offset = k % 3 == 0 ? 0.0 : scale * 4.0 * tu_rng_normal(&r);
        layernorm_case(ks, n, F_NORMAL, scale, offset, k % 2 ? 1e-5f : 1e-6f, &r);
    }
}

static void layernorm_stress(const struct pl_kernels *ks, void *ctx)
{
    (void)ctx;
    if (!ks->layernorm) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6c6e6f726d32ull);
    static const int64_t ns[] = {1, 7, 4096};
    for (int f = 1; f < F_COUNT; f++)
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            layernorm_case(ks, ns[k], (enum fill)f, 3.0, 0.0, 1e-6f, &r);
            layernorm_case(ks, ns[k], (enum fill)f, 3.0, 1000.0, 1e-5f, &r);
        }
}

/* The check is sharp: rmsnorm in layernorm's place (no mean taken out) fails it on a row with
 * a mean, and so does a layernorm whose epsilon is dropped on a row of small variance. */
static void layernorm_check_catches_a_norm_without_the_mean(void)
{
    enum { N = 256 };
    float x[N], w[N], y[N];
    double ref[N];
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6c6e66ull);
    for (int i = 0; i < N; i++) {
        x[i] = (float)(2.0 + tu_rng_normal(&r));
        w[i] = (float)(1.0 + 0.5 * tu_rng_normal(&r));
    }
    int64_t wi;
    const double no_mean = layernorm_worst(pl_kernels_ref.rmsnorm, x, w, y, ref, N, 1e-5f, &wi);
    TU_CHECK(no_mean > 1e3, "seed %llu: rmsnorm passed as layernorm (error/bound %.3g)", SEED,
             no_mean);
    const double ok = layernorm_worst(pl_kernels_ref.layernorm, x, w, y, ref, N, 1e-5f, &wi);
    TU_CHECK(ok <= 1.0, "seed %llu: ref layernorm error/bound %.3g", SEED, ok);
}

/* ---- swiglu_oai (issue 49: gpt-oss) ---- */

/* The worst error / bound of fn over one row (ref's bound, kernels/ref/ops.c:
 * (16 + 4 |alpha g| w) u |y_ref| + 2^-120 |u + 1| + FLT_MIN, w = 1 / (1 + exp(alpha g))). */
static double swiglu_oai_worst(pl_swiglu_oai_fn fn, const float *g, const float *up, int64_t n,
                               float alpha, float limit, float *y, double *ref, int64_t *wi)
{
    fn(y, g, up, n, alpha, limit);
    ref_swiglu_oai(ref, g, up, n, alpha, limit);
    double worst = 0.0;
    *wi = 0;
    for (int64_t i = 0; i < n; i++) {
        const double gc = g[i] > limit ? (double)limit : (double)g[i];
        const double uc = up[i] > limit ? (double)limit : up[i] < -limit ? -(double)limit : up[i];
        const double z = (double)alpha * gc, w = z > 700 ? 0.0 : 1.0 / (1.0 + exp(z));
        const double b =
            (16.0 + 4.0 * fabs(z) * w) * U * fabs(ref[i]) + 0x1p-120 * fabs(uc + 1.0) + FMIN;
        const double q = ref_ratio(y[i], ref[i], b);
        if (!(q <= worst)) worst = q, *wi = i;
    }
    return worst;
}

static void swiglu_oai_case(const struct pl_kernels *ks, const float *g, const float *up, int64_t n,
                            float alpha, float limit, const char *what)
{
    float *y = malloc((size_t)n * sizeof *y);
    double *ref = malloc((size_t)n * sizeof *ref);
    int64_t wi;
    const double worst = swiglu_oai_worst(ks->swiglu_oai, g, up, n, alpha, limit, y, ref, &wi);
    char where[192];
    snprintf(where, sizeof where,
             "n=%" PRId64 " %s alpha=%g limit=%g i=%" PRId64 " gate=%.9g up=%.9g", n, what, alpha,
             limit, wi, g[wi], up[wi]);
    verdict(ks->name, "swiglu_oai", worst, where, y[wi], ref[wi]);
    free(y), free(ref);
}

static const float oai_params[][2] = {{1.702f, 7.0f}, {1.0f, 3.0f}, {2.5f, 100.0f}};

static void swiglu_oai_random(const struct pl_kernels *ks, void *ctx)
{
    (void)ctx;
    if (!ks->swiglu_oai) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6f6169ull);
    for (int64_t k = 0; k < N_EDGE + N_RANDOM; k++) {
        const int64_t n = shape_n(k, &r);
        const double scale = pow(10.0, tu_rng_uniform(&r) * 2.5 - 1.0); /* |x| to ~1e2 */
        float *g = malloc((size_t)n * sizeof *g), *up = malloc((size_t)n * sizeof *up);
        fill(g, n, F_NORMAL, scale, &r);
        fill(up, n, F_NORMAL, scale, &r);
        char what[64];
        snprintf(what, sizeof what, "normal scale=%.3g", scale);
        const float *pa = oai_params[k % 3];
        swiglu_oai_case(ks, g, up, n, pa[0], pa[1], what);
        free(g), free(up);
    }
}

/* Every gate and up on a grid of 2^-8 over [-20, 20] (both clamps, the sigmoid's tails, up at
 * -1 where the product vanishes), and saturating, zero and denormal inputs. */
static void swiglu_oai_sweep_and_stress(const struct pl_kernels *ks, void *ctx)
{
    (void)ctx;
    if (!ks->swiglu_oai) return;
    const int64_t n = 40 * 256 + 1;
    float *g = malloc((size_t)n * sizeof *g), *up = malloc((size_t)n * sizeof *up);
    for (int64_t i = 0; i < n; i++) {
        g[i] = -20.0f + (float)i / 256.0f;
        up[i] = 20.0f - (float)i / 256.0f;
    }
    for (size_t p = 0; p < 3; p++)
        swiglu_oai_case(ks, g, up, n, oai_params[p][0], oai_params[p][1], "sweep [-20, 20]");
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6f616932ull);
    static const int64_t ns[] = {1, 7, 4096};
    for (int f = 1; f < F_COUNT; f++)
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            fill(g, ns[k], (enum fill)f, 50.0, &r);
            fill(up, ns[k], (enum fill)((f + 2) % F_COUNT), 50.0, &r);
            swiglu_oai_case(ks, g, up, ns[k], 1.702f, 7.0f, fill_name[f]);
        }
    free(g), free(up);
}

/* The check is sharp: a SwiGLU without the clamps, or without the + 1 on up, fails it. */
static void unclamped_oai(float *restrict y, const float *restrict gate, const float *restrict up,
                          int64_t n, float alpha, float limit)
{
    (void)limit;
    pl_kernels_ref.swiglu_oai(y, gate, up, n, alpha, INFINITY);
}
static void no_plus_one_oai(float *restrict y, const float *restrict gate, const float *restrict up,
                            int64_t n, float alpha, float limit)
{
    for (int64_t i = 0; i < n; i++) {
        const float u1 = up[i] - 1.0f; /* so that the kernel's u + 1 gives back up */
        pl_kernels_ref.swiglu_oai(y + i, gate + i, &u1, 1, alpha, limit);
    }
}
static void swiglu_oai_check_catches_a_missing_clamp_or_plus_one(void)
{
    enum { N = 512 };
    float g[N], up[N], y[N];
    double ref[N];
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6f616933ull);
    for (int i = 0; i < N; i++) {
        g[i] = (float)(6.0 * tu_rng_normal(&r));
        up[i] = (float)(0.5 * tu_rng_normal(&r));
    }
    int64_t wi;
    TU_CHECK(swiglu_oai_worst(pl_kernels_ref.swiglu_oai, g, up, N, 1.702f, 7.0f, y, ref, &wi) <=
                 1.0,
             "seed %llu: ref swiglu_oai fails its own bound", SEED);
    TU_CHECK(swiglu_oai_worst(unclamped_oai, g, up, N, 1.702f, 7.0f, y, ref, &wi) > 1e3,
             "seed %llu: swiglu_oai without the gate clamp passed", SEED);
    TU_CHECK(swiglu_oai_worst(no_plus_one_oai, g, up, N, 1.702f, 7.0f, y, ref, &wi) > 1e3,
             "seed %llu: swiglu_oai without up + 1 passed", SEED);
}

/* ---- runner ---- */

#define OVER_SETS(fn)                                                                              \
    static void test_##fn(void)                                                                    \
    {                                                                                              \
        CU_ASSERT(for_each_supported_set(fn, NULL) >= 1);                                          \
    }
OVER_SETS(rmsnorm_random)
OVER_SETS(rmsnorm_stress)
OVER_SETS(rope_shapes)
OVER_SETS(rope_stress)
OVER_SETS(rope_scaling)
OVER_SETS(softmax_random)
OVER_SETS(softmax_stress)
OVER_SETS(swiglu_random)
OVER_SETS(swiglu_stress)
OVER_SETS(geglu_random)
OVER_SETS(geglu_sweep_and_stress)
OVER_SETS(softcap_random)
OVER_SETS(softcap_sweep_and_stress)
OVER_SETS(weighted_sum_suite)
OVER_SETS(sigmoid_suite)
OVER_SETS(moe_route_suite)
OVER_SETS(layernorm_random)
OVER_SETS(layernorm_stress)
OVER_SETS(swiglu_oai_random)
OVER_SETS(swiglu_oai_sweep_and_stress)

/* ---- every kernel family has its conformance case ---- */

/* The suites beside this one that hold the cases of the families tested elsewhere (attention,
 * sampling, quantizers, matmul): binaries in this binary's folder, asked for their case names
 * with PLUMB_TEST_LIST=1. */
static const char *const other_suites[] = {"test_attention", "test_sample", "test_quant",
                                           "test_matmul"};
static const tu_test *own_tests; /* main's table */

/* 1 if a case named name covers the family: its name is "<family>_...". */
static int names_family(const char *name, const char *family)
{
    const size_t n = strlen(family);
    return strncmp(name, family, n) == 0 && name[n] == '_';
}

static void mark_case(const char *name, char *found)
{
    for (int f = 0; f < pl_kernel_family_count(); f++)
        if (names_family(name, pl_kernel_family_name(f))) found[f] = 1;
}

static void every_kernel_family_has_a_case(void)
{
    enum { MAX_FAMILIES = 64 };
    char found[MAX_FAMILIES] = {0};
    const int n = pl_kernel_family_count();
    TU_CHECK(n > 0 && n <= MAX_FAMILIES, "%d kernel families (this check holds %d)", n,
             MAX_FAMILIES);
    if (n <= 0 || n > MAX_FAMILIES) return;
    for (const tu_test *t = own_tests; t->name; t++) mark_case(t->name, found);

    char dir[4096];
    const ssize_t len = readlink("/proc/self/exe", dir, sizeof dir - 1);
    TU_CHECK(len > 0, "cannot find this binary's folder (/proc/self/exe)");
    if (len <= 0) return;
    dir[len] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    for (size_t i = 0; i < sizeof other_suites / sizeof other_suites[0]; i++) {
        char cmd[4200], line[512];
        snprintf(cmd, sizeof cmd, "PLUMB_TEST_LIST=1 '%s/%s'", dir, other_suites[i]);
        FILE *p = popen(cmd, "r");
        TU_CHECK(p != NULL, "cannot run %s", cmd);
        if (!p) continue;
        int names = 0;
        while (fgets(line, sizeof line, p)) {
            line[strcspn(line, "\n")] = '\0';
            mark_case(line, found);
            names++;
        }
        const int rc = pclose(p);
        TU_CHECK(rc == 0 && names > 0, "%s listed %d cases and exited with %d", cmd, names, rc);
    }
    for (int f = 0; f < n; f++)
        TU_CHECK(found[f],
                 "kernel family '%s' (kernels/kernels.h, PL_KERNEL_FAMILIES) has no conformance "
                 "case: name one '%s_...' in conformance/test_ops.c (or the suite that tests it)",
                 pl_kernel_family_name(f), pl_kernel_family_name(f));
}

int main(void)
{
    ref_init();
    static const tu_test tests[] = {
        {"rmsnorm_matches_gsl_on_random_and_edge_lengths", test_rmsnorm_random},
        {"rmsnorm_bounded_on_equal_zero_outlier_denormal_inputs", test_rmsnorm_stress},
        {"rope_normal_and_neox_match_gsl_for_real_and_partial_heads", test_rope_shapes},
        {"rope_bounded_on_stress_inputs_and_passes_dims_past_n_rot", test_rope_stress},
        {"rope_linear_factors_yarn_and_attn_factor_match_gsl", test_rope_scaling},
        {"softmax_matches_gsl_up_to_vocab_152064", test_softmax_random},
        {"softmax_handles_minus_inf_all_equal_outlier_denormal", test_softmax_stress},
        {"swiglu_matches_gsl_on_random_and_edge_lengths", test_swiglu_random},
        {"swiglu_bounded_on_saturating_and_stress_inputs", test_swiglu_stress},
        {"geglu_matches_gsl_on_random_and_edge_lengths", test_geglu_random},
        {"geglu_bounded_over_a_dense_sweep_to_20_and_saturating_inputs",
         test_geglu_sweep_and_stress},
        {"softcap_matches_gsl_on_random_and_edge_lengths_in_place_too", test_softcap_random},
        {"weighted_sum_matches_gsl_keeps_slot_order_and_rounds_each_product",
         test_weighted_sum_suite},
        {"sigmoid_matches_gsl_over_a_sweep_and_extremes", test_sigmoid_suite},
        {"moe_route_matches_gsl_softmax_top_k_ties_lower_and_renormalises", test_moe_route_suite},
        {"softcap_bounded_over_a_dense_sweep_to_20_caps_and_infinities",
         test_softcap_sweep_and_stress},
        {"layernorm_matches_gsl_on_random_and_edge_lengths_with_a_mean", test_layernorm_random},
        {"layernorm_bounded_on_equal_zero_outlier_denormal_inputs", test_layernorm_stress},
        {"layernorm_check_catches_a_norm_without_the_mean",
         layernorm_check_catches_a_norm_without_the_mean},
        {"swiglu_oai_matches_gsl_on_random_lengths_and_clamp_settings", test_swiglu_oai_random},
        {"swiglu_oai_bounded_over_a_sweep_through_both_clamps_and_stress_inputs",
         test_swiglu_oai_sweep_and_stress},
        {"swiglu_oai_check_catches_a_missing_clamp_or_plus_one",
         swiglu_oai_check_catches_a_missing_clamp_or_plus_one},
        {"every_kernel_family_has_a_case_named_after_it", every_kernel_family_has_a_case},
        {NULL, NULL},
    };
    own_tests = tests;
    int rc = tu_run("ops", tests);
    ref_ledger_print(stdout);
    return rc;
}
