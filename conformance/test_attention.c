/* test_attention.c — attention of every supported kernel set against a GSL double reference
 * (causal, GQA, F32/F16 KV, windows with sinks, layer windows), and its batch and head-slice
 * invariance. */
#define _POSIX_C_SOURCE 200809L /* mprotect, sigaction, sigsetjmp: the no-read test */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel_sets.h"
#include "refs/refs_ops.h"
#include "testutil.h"

#define U    REF_U
#define FMIN REF_FLT_MIN
#define SEED ((unsigned long long)tu_seed())

enum fill { F_NORMAL, F_EQUAL, F_ZERO, F_NEGZERO, F_OUTLIER, F_DENORMAL, F_COUNT };
static const char *const fill_name[F_COUNT] = {"normal",    "all-equal", "zeros",
                                               "neg-zeros", "outlier",   "denormal"};

/* How positions are laid out. */
enum pos_mode {
    POS_PREFILL,   /* kv_pos[j] = j; the T queries are the last T entries */
    POS_STREAMING, /* sinks at 0.., then a gap (evicted entries), queries last */
    POS_RANDOM,    /* kv_pos and q_pos anywhere: some queries see nothing */
    POS_COUNT
};
static const char *const pos_name[POS_COUNT] = {"prefill", "streaming", "random"};

typedef struct attn_case {
    int64_t T, H, Hkv, D, N, window, n_sinks;
    pl_type kv_type;
    enum pos_mode pos;
    enum fill fq, fk, fv;
    float softcap;        /* pl_attn_args.softcap: 0 none */
    int64_t layer_window; /* pl_attn_args.layer_window: 0 none */
    int kv_sorted;        /* ask for pl_attn_args.kv_sorted (granted where positions ascend) */
    float sink_sd;        /* > 0: learned sinks N(sink_mean, sink_sd^2) per head (gpt-oss) */
    float sink_mean;
} attn_case;

typedef struct attn_data {
    pl_attn_args a;
    float *q;
    int32_t *q_pos, *kv_pos;
    void *k, *v;
    float *sinks; /* [H] or NULL */
} attn_data;

static float fill_one(enum fill f, float same, tu_rng *r)
{
    switch (f) {
    case F_EQUAL:
        return same;
    case F_ZERO:
        return 0.0f;
    case F_NEGZERO:
        return -0.0f;
    case F_DENORMAL:
        return (float)((tu_rng_uniform(r) < 0.5 ? -1.0 : 1.0) *
                       (double)tu_rng_range(r, 1, (1 << 23) - 1) * 0x1p-149);
    default:
        return (float)tu_rng_normal(r);
    }
}

/* Fills n values; F_OUTLIER puts one entry of 1e3 (a key that dominates every score). */
static void fill_kv(void *dst, pl_type t, int64_t n, enum fill f, tu_rng *r)
{
    float same = (float)tu_rng_normal(r);
    int64_t out_at = f == F_OUTLIER ? tu_rng_range(r, 0, n - 1) : -1;
    for (int64_t i = 0; i < n; i++) {
        float x = i == out_at ? 1e3f : fill_one(f, same, r);
        if (t == PL_TYPE_F16 && f == F_DENORMAL) /* f16's own subnormals */
            ((pl_f16 *)dst)[i] =
                (pl_f16)((tu_rng_range(r, 0, 1) << 15) | tu_rng_range(r, 1, 0x3ff));
        else if (t == PL_TYPE_F32)
            ((float *)dst)[i] = x;
        else
            ((pl_f16 *)dst)[i] = pl_f32_to_f16(x);
    }
}

static void make_case(attn_data *d, const attn_case *c, tu_rng *r)
{
    memset(d, 0, sizeof *d);
    size_t esz = c->kv_type == PL_TYPE_F32 ? sizeof(float) : sizeof(pl_f16);
    int64_t nq = c->T * c->H * c->D, nkv = c->N * c->Hkv * c->D;
    d->q = malloc((size_t)(nq > 0 ? nq : 1) * sizeof *d->q);
    d->q_pos = malloc((size_t)(c->T > 0 ? c->T : 1) * sizeof *d->q_pos);
    d->kv_pos = malloc((size_t)(c->N > 0 ? c->N : 1) * sizeof *d->kv_pos);
    d->k = malloc((size_t)(nkv > 0 ? nkv : 1) * esz);
    d->v = malloc((size_t)(nkv > 0 ? nkv : 1) * esz);
    fill_kv(d->q, PL_TYPE_F32, nq, c->fq, r);
    fill_kv(d->k, c->kv_type, nkv, c->fk, r);
    fill_kv(d->v, c->kv_type, nkv, c->fv, r);

    int64_t gap = c->pos == POS_STREAMING ? tu_rng_range(r, 1, 1000) : 0;
    for (int64_t j = 0; j < c->N; j++) {
        if (c->pos == POS_RANDOM)
            d->kv_pos[j] = (int32_t)tu_rng_range(r, 0, 2 * c->N);
        else
            d->kv_pos[j] = (int32_t)(j < c->n_sinks ? j : j + gap);
    }
    for (int64_t t = 0; t < c->T; t++) {
        int64_t j = c->N - c->T + t;
        if (c->pos == POS_RANDOM || j < 0)
            d->q_pos[t] = (int32_t)tu_rng_range(r, -1, 2 * c->N + 1);
        else
            d->q_pos[t] = d->kv_pos[j];
    }
    d->a = (pl_attn_args){
        .T = c->T,
        .H = c->H,
        .Hkv = c->Hkv,
        .D = c->D,
        .N = c->N,
        .q = d->q,
        .q_pos = d->q_pos,
        .k = d->k,
        .v = d->v,
        .kv_type = c->kv_type,
        .kv_pos = d->kv_pos,
        .window = c->window,
        .n_sinks = c->n_sinks,
        .scale = (float)(1.0 / sqrt((double)c->D)),
        .softcap = c->softcap,
        .layer_window = c->layer_window,
        .kv_sorted = c->kv_sorted && c->pos != POS_RANDOM,
    };
    if (c->sink_sd > 0) {
        d->sinks = malloc((size_t)(c->H > 0 ? c->H : 1) * sizeof *d->sinks);
        for (int64_t h = 0; h < c->H; h++)
            d->sinks[h] = (float)(c->sink_mean + c->sink_sd * tu_rng_normal(r));
        d->a.sinks = d->sinks;
    }
}

static void free_case(attn_data *d)
{
    free(d->q), free(d->q_pos), free(d->kv_pos), free(d->k), free(d->v), free(d->sinks);
}

static void describe(char *buf, size_t size, const attn_case *c)
{
    snprintf(buf, size,
             "T=%" PRId64 " H=%" PRId64 " Hkv=%" PRId64 " D=%" PRId64 " N=%" PRId64
             " window=%" PRId64 " sinks=%" PRId64 " layer_window=%" PRId64
             " sorted=%d softcap=%g sinks~N(%g,%g) kv=%s pos=%s q/k/v=%s/%s/%s",
             c->T, c->H, c->Hkv, c->D, c->N, c->window, c->n_sinks, c->layer_window,
             c->kv_sorted && c->pos != POS_RANDOM, c->softcap, c->sink_mean, c->sink_sd,
             c->kv_type == PL_TYPE_F32 ? "f32" : "f16", pos_name[c->pos], fill_name[c->fq],
             fill_name[c->fk], fill_name[c->fv]);
}

/* Runs all heads in one call; out[T][H][D]. */
static float *run_all(const struct pl_kernels *ks, const pl_attn_args *a)
{
    float *out = malloc((size_t)(a->T * a->H * a->D > 0 ? a->T * a->H * a->D : 1) * sizeof *out);
    float *scratch = malloc(PL_ATTN_SCRATCH(a->N, a->D) * sizeof *scratch);
    ks->attention(out, a, 0, a->H, scratch);
    free(scratch);
    return out;
}

/* Kernel vs reference over every (t, h, d), within the documented bound. */
static void check_case(const struct pl_kernels *ks, const attn_case *c, tu_rng *r)
{
    attn_data d;
    make_case(&d, c, r);
    const pl_attn_args *a = &d.a;
    float *out = run_all(ks, a);
    const int64_t D = c->D;
    double *ref = malloc((size_t)D * sizeof *ref), *pv = malloc((size_t)D * sizeof *pv);
    double *pvs = malloc((size_t)D * sizeof *pvs);
    double worst = 0.0, wy = 0.0, wref = 0.0;
    int64_t wt = 0, wh = 0, wd = 0;
    for (int64_t t = 0; t < c->T; t++) {
        for (int64_t h = 0; h < c->H; h++) {
            double A = 0.0;
            int64_t M = ref_attention_row(ref, pv, pvs, &A, a, t, h);
            const float *o = out + (t * c->H + h) * D;
            for (int64_t k = 0; k < D; k++) {
                /* soft-capping adds 7 u A to a score's error (kernels/ref/attention.c) */
                const double Dc = (double)D + (c->softcap != 0.0f ? 9.0 : 2.0);
                double bound =
                    U * (pv[k] * (4.0 * Dc * A + 2.0 * (double)M + 16.0) + pvs[k]) + FMIN;
                /* a query that sees nothing must give exact zeros */
                double q =
                    M == 0 ? (o[k] == 0.0f ? 0.0 : INFINITY) : ref_ratio(o[k], ref[k], bound);
                if (!(q <= worst)) worst = q, wt = t, wh = h, wd = k, wy = o[k], wref = ref[k];
            }
        }
    }
    char shape[200], where[320];
    describe(shape, sizeof shape, c);
    snprintf(where, sizeof where, "%s at t=%" PRId64 " h=%" PRId64 " d=%" PRId64, shape, wt, wh,
             wd);
    ref_ledger_note(ks->name,
                    c->sink_sd > 0         ? "attention_sinks"
                    : c->softcap != 0.0f   ? "attention_softcap"
                    : c->layer_window != 0 ? "attention_layer_window"
                                           : "attention",
                    worst, where);
    TU_CHECK(worst <= 1.0, "set %s attention seed %llu %s: y=%.9g ref=%.17g error/bound=%.3g",
             ks->name, SEED, where, wy, wref, worst);

    /* Skipping by binary search (kv_sorted) changes no bit; neither does a layer window that
     * excludes nothing (one past the largest distance, one far beyond int32, INT64_MAX). */
    const size_t bytes = (size_t)(c->T * c->H * D) * sizeof *out;
    pl_attn_args b = *a;
    int sorted_same = 1, wide_same = 1;
    if (c->pos != POS_RANDOM) {
        b.kv_sorted = !a->kv_sorted;
        float *o2 = run_all(ks, &b);
        sorted_same = !memcmp(o2, out, bytes);
        free(o2);
        b.kv_sorted = a->kv_sorted;
    }
    if (c->layer_window == 0) {
        int64_t far = 1;
        for (int64_t t = 0; t < c->T; t++)
            for (int64_t j = 0; j < c->N; j++)
                if ((int64_t)d.q_pos[t] - d.kv_pos[j] + 1 > far)
                    far = (int64_t)d.q_pos[t] - d.kv_pos[j] + 1;
        for (int k = 0; k < 3; k++) {
            b.layer_window = k == 2 ? INT64_MAX : k ? (int64_t)1 << 40 : far;
            float *o2 = run_all(ks, &b);
            wide_same &= !memcmp(o2, out, bytes);
            free(o2);
        }
    }
    TU_CHECK(sorted_same, "set %s seed %llu %s: kv_sorted changes the output", ks->name, SEED,
             shape);
    TU_CHECK(wide_same, "set %s seed %llu %s: a layer window excluding nothing changes the output",
             ks->name, SEED, shape);
    free(ref), free(pv), free(pvs), free(out);
    free_case(&d);
}

/* A layer window of kind k: 0 none, 1, 2, small (3 .. 16), past every distance (> N). */
static int64_t layer_window_of(int k, int64_t N, tu_rng *r)
{
    switch (k) {
    case 0:
        return 0;
    case 1:
        return 1;
    case 2:
        return 2;
    case 3:
        return tu_rng_range(r, 3, 16);
    default:
        return N + tu_rng_range(r, 1, 40);
    }
}

static const int64_t head_dims[] = {64, 80, 128};
static const int64_t gqa_ratios[] = {1, 4, 7};
static const int64_t windows[][2] = {{0, 0}, {5, 0}, {5, 3}, {1, 1}, {1000, 0}, {1000, 2}};

static void attention_grid(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->attention) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x617474ull);
    for (size_t di = 0; di < 3; di++)
        for (size_t gi = 0; gi < 3; gi++)
            for (int kv = 0; kv < 2; kv++)
                for (size_t wi = 0; wi < sizeof windows / sizeof windows[0]; wi++) {
                    attn_case c = {
                        .Hkv = tu_rng_range(&r, 1, 2),
                        .D = head_dims[di],
                        .T = tu_rng_range(&r, 1, 9),
                        .N = tu_rng_range(&r, 1, 96),
                        .window = windows[wi][0],
                        .n_sinks = windows[wi][1],
                        .kv_type = kv ? PL_TYPE_F16 : PL_TYPE_F32,
                        .pos = (enum pos_mode)tu_rng_range(&r, 0, POS_COUNT - 1),
                    };
                    c.H = c.Hkv * gqa_ratios[gi];
                    c.layer_window = layer_window_of((int)tu_rng_range(&r, 0, 4), c.N, &r);
                    c.kv_sorted = (int)tu_rng_range(&r, 0, 1);
                    check_case(ks, &c, &r);
                }
}

static void attention_random(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->attention) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x61747432ull);
    for (int k = 0; k < 40; k++) {
        attn_case c = {
            .Hkv = tu_rng_range(&r, 1, 3),
            .D = k < 2 ? 257 + 300 * k : tu_rng_range(&r, 1, 160), /* > 256: chunked dims */
            .T = tu_rng_range(&r, 1, 12),
            .N = tu_rng_range(&r, 0, 150),
            .kv_type = tu_rng_range(&r, 0, 1) ? PL_TYPE_F16 : PL_TYPE_F32,
            .pos = (enum pos_mode)tu_rng_range(&r, 0, POS_COUNT - 1),
        };
        c.H = c.Hkv * tu_rng_range(&r, 1, 8);
        if (tu_rng_range(&r, 0, 1)) {
            c.window = tu_rng_range(&r, 1, 200);
            c.n_sinks = tu_rng_range(&r, 0, c.window - 1 < 8 ? c.window - 1 : 8);
        }
        c.layer_window = layer_window_of((int)tu_rng_range(&r, 0, 4), c.N, &r);
        c.kv_sorted = (int)tu_rng_range(&r, 0, 1);
        check_case(ks, &c, &r);
    }
}

static void attention_stress(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->attention) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x61747433ull);
    for (int kv = 0; kv < 2; kv++)
        for (int f = 0; f < F_COUNT; f++)
            for (int which = 0; which < 3; which++) {
                attn_case c = {.T = 5,
                               .H = 8,
                               .Hkv = 2,
                               .D = 64,
                               .N = 40,
                               .kv_type = kv ? PL_TYPE_F16 : PL_TYPE_F32,
                               .pos = POS_PREFILL,
                               .window = 16,
                               .n_sinks = 2};
                if (which == 0) c.fq = (enum fill)f;
                if (which == 1) c.fk = (enum fill)f;
                if (which == 2) c.fv = (enum fill)f;
                check_case(ks, &c, &r);
            }
}

/* Gemma 2's soft-capped scores: caps from far below the scores to far above them, random
 * shapes and windows, and keys with an outlier that every cap must tame. */
static void attention_softcap(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->attention) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x61747435ull);
    static const float caps[] = {50.0f, 30.0f, 5.0f, 1.0f, 0.5f};
    for (int k = 0; k < 40; k++) {
        attn_case c = {
            .Hkv = tu_rng_range(&r, 1, 3),
            .D = k < 2 ? 257 + 300 * k : tu_rng_range(&r, 1, 160),
            .T = tu_rng_range(&r, 1, 12),
            .N = tu_rng_range(&r, 0, 150),
            .kv_type = tu_rng_range(&r, 0, 1) ? PL_TYPE_F16 : PL_TYPE_F32,
            .pos = (enum pos_mode)tu_rng_range(&r, 0, POS_COUNT - 1),
            .fk = k % 4 == 3 ? F_OUTLIER : F_NORMAL,
            .softcap = k % 6 == 5 ? (float)(0.1 + 100.0 * tu_rng_uniform(&r)) : caps[k % 5],
        };
        c.H = c.Hkv * tu_rng_range(&r, 1, 8);
        if (tu_rng_range(&r, 0, 1)) {
            c.window = tu_rng_range(&r, 1, 200);
            c.n_sinks = tu_rng_range(&r, 0, c.window - 1 < 8 ? c.window - 1 : 8);
        }
        c.layer_window = layer_window_of((int)tu_rng_range(&r, 0, 4), c.N, &r);
        c.kv_sorted = (int)tu_rng_range(&r, 0, 1);
        check_case(ks, &c, &r);
    }
}

/* gpt-oss's learned sinks (issue 49): one logit per head in the softmax's max and denominator,
 * from far below the scores (no effect) to far above them (the outputs shrink toward zero), with
 * every window kind, GQA, F16 KV, and queries that see nothing (still zeros). */
static void attention_sinks(const struct pl_kernels *ks, void *ctx)
{
    (void)ctx;
    if (!ks->attention) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x73696e6bull);
    static const float means[] = {0.0f, -30.0f, 8.0f, 2.0f};
    for (int k = 0; k < 48; k++) {
        attn_case c = {
            .Hkv = tu_rng_range(&r, 1, 3),
            .D = k < 2 ? 257 + 300 * k : tu_rng_range(&r, 1, 160),
            .T = tu_rng_range(&r, 1, 12),
            .N = tu_rng_range(&r, 0, 150),
            .kv_type = tu_rng_range(&r, 0, 1) ? PL_TYPE_F16 : PL_TYPE_F32,
            .pos = (enum pos_mode)tu_rng_range(&r, 0, POS_COUNT - 1),
            .softcap = k % 8 == 7 ? 20.0f : 0.0f,
            .sink_sd = 2.0f,
            .sink_mean = means[k % 4],
        };
        c.H = c.Hkv * tu_rng_range(&r, 1, 8);
        if (tu_rng_range(&r, 0, 1)) {
            c.window = tu_rng_range(&r, 1, 200);
            c.n_sinks = tu_rng_range(&r, 0, c.window - 1 < 8 ? c.window - 1 : 8);
        }
        c.layer_window = layer_window_of((int)tu_rng_range(&r, 0, 4), c.N, &r);
        c.kv_sorted = (int)tu_rng_range(&r, 0, 1);
        check_case(ks, &c, &r);
    }
}

/* The sink check is sharp: a kernel that ignores the sinks (run on the same arguments without
 * them) is outside the bound of the reference with them, by two orders of magnitude (the
 * conformance check fails at 1). */
static void attention_sinks_check_catches_an_ignored_sink(void)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x73696e6cull);
    attn_case c = {.T = 4,
                   .H = 4,
                   .Hkv = 2,
                   .D = 64,
                   .N = 24,
                   .kv_type = PL_TYPE_F32,
                   .pos = POS_PREFILL,
                   .sink_sd = 1.0f,
                   .sink_mean = 1.0f};
    attn_data d;
    make_case(&d, &c, &r);
    pl_attn_args no_sinks = d.a;
    no_sinks.sinks = NULL;
    float *out = run_all(&pl_kernels_ref, &no_sinks);
    double ref[64], pv[64], pvs[64], A, worst = 0.0;
    for (int64_t t = 0; t < c.T; t++)
        for (int64_t h = 0; h < c.H; h++) {
            const int64_t M = ref_attention_row(ref, pv, pvs, &A, &d.a, t, h);
            for (int64_t k = 0; k < c.D; k++) {
                const double bound =
                    U * (pv[k] * (4.0 * (c.D + 2.0) * A + 2.0 * (double)M + 16.0) + pvs[k]) + FMIN;
                const double q = ref_ratio(out[(t * c.H + h) * c.D + k], ref[k], bound);
                if (q > worst) worst = q;
            }
        }
    TU_CHECK(worst > 100, "seed %llu: attention without its sinks passed (error/bound %.3g)", SEED,
             worst);
    free(out);
    free_case(&d);
}

/* Gemma 2/3's local layers: every kind of layer window (1, 2, small, past N) against every
 * session rule (none, windows with and without sinks), sorted or not, with and without a cap;
 * then decodes over a long sorted cache, where the kernels must binary-search the window. */
static void attention_layer_window(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->attention) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6c77696eull);
    for (int k = 0; k < 64; k++) {
        attn_case c = {
            .Hkv = tu_rng_range(&r, 1, 2),
            .D = tu_rng_range(&r, 1, 140),
            .T = tu_rng_range(&r, 1, 12),
            .N = tu_rng_range(&r, 1, 150),
            .kv_type = tu_rng_range(&r, 0, 1) ? PL_TYPE_F16 : PL_TYPE_F32,
            .pos = (enum pos_mode)tu_rng_range(&r, 0, POS_COUNT - 1),
            .softcap = k % 8 == 7 ? 20.0f : 0.0f,
            .kv_sorted = k % 2,
        };
        c.H = c.Hkv * tu_rng_range(&r, 1, 4);
        c.layer_window = layer_window_of(1 + k % 4, c.N, &r);
        switch (k / 4 % 3) {
        case 0:
            break;
        case 1:
            c.window = tu_rng_range(&r, 1, 40);
            break;
        default:
            c.window = tu_rng_range(&r, 2, 40);
            c.n_sinks = tu_rng_range(&r, 1, c.window - 1 < 6 ? c.window - 1 : 6);
        }
        check_case(ks, &c, &r);
    }
    for (int k = 0; k < 6; k++) {
        attn_case c = {.Hkv = 1,
                       .H = 4,
                       .D = 64,
                       .T = tu_rng_range(&r, 1, 3),
                       .N = tu_rng_range(&r, 2000, 3000),
                       .kv_type = k % 2 ? PL_TYPE_F16 : PL_TYPE_F32,
                       .pos = k < 4 ? POS_PREFILL : POS_STREAMING,
                       .kv_sorted = 1,
                       .window = k >= 4 ? 500 : 0,
                       .n_sinks = k >= 4 ? 4 : 0};
        static const int64_t lws[] = {1, 7, 64, 33, 16, 100};
        c.layer_window = lws[k];
        check_case(ks, &c, &r);
    }
}

/* The window's skip is real: a decode over a sorted cache whose K and V rows before the
 * window, and kv_pos entries between the first page (the sinks) and the window, are
 * unreadable (PROT_NONE) gives the bits of the same decode over readable memory with
 * kv_sorted off. A fault is caught and reported, not a crash. */
static sigjmp_buf fault_jmp;
static void on_fault(int sig)
{
    siglongjmp(fault_jmp, sig);
}

/* ks->attention over every head into out; the signal it faulted with, else 0. */
static int run_guarded(const struct pl_kernels *ks, const pl_attn_args *a, float *out,
                       float *scratch)
{
    struct sigaction sa = {0}, old_segv, old_bus;
    sa.sa_handler = on_fault;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    const int sig = sigsetjmp(fault_jmp, 1);
    if (sig == 0) ks->attention(out, a, 0, a->H, scratch);
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    return sig;
}

static void attention_layer_window_reads_no_row_outside(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->attention) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6e6f7264ull);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (int kv = 0; kv < 2; kv++)
        for (int sinks = 0; sinks < 2; sinks++) {
            const int64_t D = 64, H = 2, Hkv = 1, P = 8192, N = P + 200, T = 2, lw = 40;
            const size_t esz = kv ? sizeof(pl_f16) : sizeof(float);
            const size_t row = (size_t)(Hkv * D) * esz, kv_bytes = (size_t)N * row;
            const size_t pos0 = page, pos1 = (size_t)P * sizeof(int32_t); /* kv_pos: unreadable */
            void *k = NULL, *v = NULL, *pos = NULL;
            int ok = (size_t)P * row % page == 0 && pos1 % page == 0 && pos1 > pos0 &&
                     !posix_memalign(&k, page, kv_bytes) && !posix_memalign(&v, page, kv_bytes) &&
                     !posix_memalign(&pos, page, (size_t)N * sizeof(int32_t));
            TU_CHECK(ok, "no page-aligned memory");
            if (!ok) {
                free(k), free(v), free(pos);
                return;
            }
            attn_case c = {.T = T, .H = H, .Hkv = Hkv, .D = D, .N = N, .pos = POS_PREFILL};
            c.kv_type = kv ? PL_TYPE_F16 : PL_TYPE_F32;
            attn_data d;
            make_case(&d, &c, &r);
            memcpy(k, d.k, kv_bytes);
            memcpy(v, d.v, kv_bytes);
            memcpy(pos, d.kv_pos, (size_t)N * sizeof(int32_t));
            d.a.layer_window = lw; /* queries at N-2, N-1 see [N - 41, N) at most */
            if (sinks) d.a.window = 100, d.a.n_sinks = 4;
            float *want = run_all(ks, &d.a);
            d.a.k = k, d.a.v = v, d.a.kv_pos = pos, d.a.kv_sorted = 1;
            mprotect(k, (size_t)P * row, PROT_NONE);
            mprotect(v, (size_t)P * row, PROT_NONE);
            mprotect((char *)pos + pos0, pos1 - pos0, PROT_NONE);
            float *got = malloc((size_t)(T * H * D) * sizeof *got);
            float *scratch = malloc(PL_ATTN_SCRATCH(N, D) * sizeof *scratch);
            const int sig = run_guarded(ks, &d.a, got, scratch);
            mprotect(k, (size_t)P * row, PROT_READ | PROT_WRITE);
            mprotect(v, (size_t)P * row, PROT_READ | PROT_WRITE);
            mprotect((char *)pos + pos0, pos1 - pos0, PROT_READ | PROT_WRITE);
            TU_CHECK(sig == 0,
                     "set %s seed %llu kv=%s sinks=%d: a decode with layer_window=%" PRId64
                     " over a sorted cache of %" PRId64 " read an entry far outside its window",
                     ks->name, SEED, kv ? "f16" : "f32", sinks, lw, N);
            TU_CHECK(sig != 0 || !memcmp(got, want, (size_t)(T * H * D) * sizeof *got),
                     "set %s seed %llu kv=%s sinks=%d: the skipping decode changed bits", ks->name,
                     SEED, kv ? "f16" : "f32", sinks);
            free(got), free(want), free(scratch), free(k), free(v), free(pos);
            free_case(&d);
        }
}

/* A query whose every entry is in its future, or outside its window, gets exact zeros. */
static void attention_blind(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->attention) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x61747434ull);
    attn_case c = {.T = 3, .H = 4, .Hkv = 1, .D = 80, .N = 10, .kv_type = PL_TYPE_F32};
    attn_data d;
    make_case(&d, &c, &r);
    for (int64_t j = 0; j < c.N; j++) d.kv_pos[j] = (int32_t)(100 + j);
    d.q_pos[0] = 99;  /* everything in the future */
    d.q_pos[1] = 100; /* sees entry 0 only */
    d.q_pos[2] = 500; /* window 50 leaves nothing, and there are no sinks */
    d.a.window = 50;
    float *out = run_all(ks, &d.a);
    int zeros_ok = 1, seen_ok = 0;
    for (int64_t k = 0; k < c.H * c.D; k++) {
        zeros_ok &= out[k] == 0.0f && out[2 * c.H * c.D + k] == 0.0f;
        seen_ok |= out[c.H * c.D + k] != 0.0f;
    }
    TU_CHECK(zeros_ok, "set %s seed %llu: blind queries must give zeros", ks->name, SEED);
    TU_CHECK(seen_ok, "set %s seed %llu: a query seeing entry 0 gave zeros", ks->name, SEED);
    free(out);
    /* N = 0: no entries at all */
    d.a.N = 0;
    out = run_all(ks, &d.a);
    zeros_ok = 1;
    for (int64_t k = 0; k < c.T * c.H * c.D; k++) zeros_ok &= out[k] == 0.0f;
    TU_CHECK(zeros_ok, "set %s seed %llu: N = 0 must give zeros", ks->name, SEED);
    free(out);
    /* a layer window hides even the sinks: the query at 500 sees nothing, sorted or not */
    d.a.N = c.N;
    d.a.n_sinks = 3;
    d.a.layer_window = 300;
    for (int sorted = 0; sorted < 2; sorted++) {
        d.a.kv_sorted = sorted;
        out = run_all(ks, &d.a);
        zeros_ok = 1;
        for (int64_t k = 0; k < c.H * c.D; k++) zeros_ok &= out[2 * c.H * c.D + k] == 0.0f;
        TU_CHECK(zeros_ok, "set %s seed %llu sorted=%d: sinks outside the layer window were seen",
                 ks->name, SEED, sorted);
        free(out);
    }
    free_case(&d);
}

/* With one visible entry the output is that entry's V row: every f16 bit pattern must come
 * out as its exact f32 value (NaN as NaN; -0 may add to +0). */
static void attention_f16_exhaustive(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->attention) return;
    const int64_t D = 65536;
    pl_f16 *k = calloc((size_t)D, sizeof *k), *v = malloc((size_t)D * sizeof *v);
    float *q = calloc((size_t)D, sizeof *q), *out = malloc((size_t)D * sizeof *out);
    float *scratch = malloc(PL_ATTN_SCRATCH(1, D) * sizeof *scratch);
    for (int64_t d = 0; d < D; d++) v[d] = (pl_f16)d;
    int32_t pos = 0;
    pl_attn_args a = {.T = 1,
                      .H = 1,
                      .Hkv = 1,
                      .D = D,
                      .N = 1,
                      .q = q,
                      .q_pos = &pos,
                      .k = k,
                      .v = v,
                      .kv_type = PL_TYPE_F16,
                      .kv_pos = &pos,
                      .scale = 1.0f};
    ks->attention(out, &a, 0, 1, scratch);
    int64_t bad = -1;
    for (int64_t d = 0; d < D && bad < 0; d++) {
        float want = pl_f16_to_f32(v[d]);
        if (isnan(want) ? !isnan(out[d]) : out[d] != want) bad = d;
    }
    TU_CHECK(bad < 0, "set %s: f16 V entry 0x%04x read as %.9g, want %.9g", ks->name,
             (unsigned)(bad < 0 ? 0 : bad), bad < 0 ? 0.0 : out[bad],
             bad < 0 ? 0.0 : pl_f16_to_f32((pl_f16)bad));
    free(k), free(v), free(q), free(out), free(scratch);
}

/* Every output row of a T-query batch equals, bit for bit, the same row computed alone, the
 * same row with the cache cut just after its last visible entry (decode after a prefix), and
 * the batch with heads split into arbitrary slices. */
static void batch_case(const struct pl_kernels *ks, int64_t T, pl_type kv, int64_t window,
                       int64_t sinks, float softcap, int64_t layer_window, int sorted, tu_rng *r)
{
    attn_case c = {.T = T,
                   .Hkv = 2,
                   .H = 8,
                   .D = 64,
                   .N = T + 37,
                   .kv_type = kv,
                   .pos = POS_PREFILL,
                   .window = window,
                   .n_sinks = sinks,
                   .softcap = softcap,
                   .layer_window = layer_window,
                   .kv_sorted = sorted};
    attn_data d;
    make_case(&d, &c, r);
    const int64_t row = c.H * c.D;
    float *batch = run_all(ks, &d.a);
    float *one = malloc((size_t)row * sizeof *one);
    float *scratch = malloc(PL_ATTN_SCRATCH(c.N, c.D) * sizeof *scratch);
    int64_t bad_alone = -1, bad_prefix = -1;
    for (int64_t t = 0; t < T; t++) {
        pl_attn_args a1 = d.a;
        a1.T = 1;
        a1.q = d.q + t * row;
        a1.q_pos = d.q_pos + t;
        ks->attention(one, &a1, 0, c.H, scratch);
        if (memcmp(one, batch + t * row, (size_t)row * sizeof *one) && bad_alone < 0) bad_alone = t;
        a1.N = c.N - T + t + 1; /* the cache as a token-by-token decode would hold it */
        ks->attention(one, &a1, 0, c.H, scratch);
        if (memcmp(one, batch + t * row, (size_t)row * sizeof *one) && bad_prefix < 0)
            bad_prefix = t;
    }
    /* heads in random slices, computed last slice first */
    float *sliced = malloc((size_t)(T * row) * sizeof *sliced);
    int64_t cuts[9], nc = 0;
    cuts[nc++] = c.H;
    for (int64_t h = c.H - 1; h > 0; h--)
        if (tu_rng_range(r, 0, 2) == 0) cuts[nc++] = h;
    cuts[nc++] = 0;
    for (int64_t i = 0; i + 1 < nc; i++) ks->attention(sliced, &d.a, cuts[i + 1], cuts[i], scratch);
    int sliced_ok = !memcmp(sliced, batch, (size_t)(T * row) * sizeof *sliced);

    char shape[200];
    describe(shape, sizeof shape, &c);
    TU_CHECK(bad_alone < 0, "set %s seed %llu %s: row t=%" PRId64 " differs from it alone",
             ks->name, SEED, shape, bad_alone);
    TU_CHECK(bad_prefix < 0,
             "set %s seed %llu %s: row t=%" PRId64 " differs from it over the cut cache", ks->name,
             SEED, shape, bad_prefix);
    TU_CHECK(sliced_ok, "set %s seed %llu %s: head slices change the output", ks->name, SEED,
             shape);
    free(batch), free(one), free(scratch), free(sliced);
    free_case(&d);
}

static void attention_batch_invariance(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->attention) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x62617463ull);
    for (int64_t T = 1; T <= 18; T++) {
        int64_t TT = T == 18 ? 64 : T;
        pl_type kv = T % 2 ? PL_TYPE_F16 : PL_TYPE_F32;
        batch_case(ks, TT, kv, 0, 0, 0.0f, 0, 0, &r);
        batch_case(ks, TT, kv, 9, T % 4, 0.0f, 0, (int)(T % 2), &r);
        batch_case(ks, TT, kv, T % 2 ? 0 : 9, T % 4, T % 3 ? 50.0f : 1.5f, 0, 0, &r);
        /* layer windows of 1, 2, small and past N, over both session rules, sorted or not */
        batch_case(ks, TT, kv, T % 3 ? 0 : 12, T % 3 ? 0 : 3, T % 5 ? 0.0f : 30.0f,
                   layer_window_of(1 + (int)(T % 4), TT + 37, &r), (int)(T / 2 % 2), &r);
    }
}

#define OVER_SETS(fn)                                                                              \
    static void test_##fn(void)                                                                    \
    {                                                                                              \
        CU_ASSERT(for_each_supported_set(fn, NULL) >= 1);                                          \
    }
OVER_SETS(attention_grid)
OVER_SETS(attention_random)
OVER_SETS(attention_stress)
OVER_SETS(attention_softcap)
OVER_SETS(attention_layer_window)
OVER_SETS(attention_layer_window_reads_no_row_outside)
OVER_SETS(attention_blind)
OVER_SETS(attention_f16_exhaustive)
OVER_SETS(attention_batch_invariance)
OVER_SETS(attention_sinks)

int main(void)
{
    ref_init();
    static const tu_test tests[] = {
        {"attention_matches_gsl_over_head_dims_gqa_windows_sinks_f32_f16", test_attention_grid},
        {"attention_matches_gsl_on_random_shapes", test_attention_random},
        {"attention_bounded_on_equal_zero_outlier_denormal_inputs", test_attention_stress},
        {"attention_soft_capped_scores_match_gsl", test_attention_softcap},
        {"attention_layer_window_matches_gsl_with_session_windows_and_sinks",
         test_attention_layer_window},
        {"attention_sorted_decode_reads_no_kv_row_outside_the_layer_window",
         test_attention_layer_window_reads_no_row_outside},
        {"attention_query_seeing_nothing_gets_zeros", test_attention_blind},
        {"attention_sinks_match_gsl_in_max_and_denominator_every_window", test_attention_sinks},
        {"attention_sinks_check_catches_an_ignored_sink",
         attention_sinks_check_catches_an_ignored_sink},
        {"attention_reads_every_f16_kv_value_exactly", test_attention_f16_exhaustive},
        {"attention_rows_bit_identical_alone_after_prefix_and_over_head_slices",
         test_attention_batch_invariance},
        {NULL, NULL},
    };
    int rc = tu_run("attention", tests);
    ref_ledger_print(stdout);
    return rc;
}
