/* test_sample.c — the sampling primitives of every supported kernel set against double
 * references: bounds for temperature, penalties and softmax, exact truncations and draws,
 * distributions through the whole chain, and chi-square fits of 10^5 seeded draws. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_sets.h"
#include "plumb.h"
#include "refs/refs_ops.h"
#include "testutil.h"

#define U    REF_U
#define FMIN REF_FLT_MIN
#define SEED ((unsigned long long)tu_seed())

/* The sampler contract: distributions within 1e-6 (relative, which implies absolute). */
#define P_RTOL      1e-6
#define P_ATOL      0x1p-149
#define DRAWS       100000
#define CHISQ_ALPHA 1e-4

/* ---- inputs ---- */

enum fill {
    F_NORMAL,
    F_TIES, /* a few levels, many ties */
    F_EQUAL,
    F_SOME_NEGINF,
    F_ALL_NEGINF,
    F_OUTLIER,
    F_DENORMAL,
    F_SIGNED_ZERO,
    F_SOME_NAN,
    F_COUNT
};
static const char *const fill_name[F_COUNT] = {"normal",    "ties",     "all-equal",
                                               "some -inf", "all -inf", "outlier",
                                               "denormal",  "+-0",      "some NaN"};

static float fill_one(enum fill f, double z, float same, tu_rng *r)
{
    switch (f) {
    case F_TIES:
        return (float)(0.5 * floor(z));
    case F_EQUAL:
        return same;
    case F_SOME_NEGINF:
        return tu_rng_uniform(r) < 0.4 ? -INFINITY : (float)z;
    case F_ALL_NEGINF:
        return -INFINITY;
    case F_DENORMAL:
        return (float)((z < 0 ? -1.0 : 1.0) * (double)tu_rng_range(r, 1, 1 << 20) * 0x1p-149);
    case F_SIGNED_ZERO:
        return tu_rng_uniform(r) < 0.5 ? -0.0f : 0.0f;
    case F_SOME_NAN:
        return tu_rng_uniform(r) < 0.2 ? NAN : (float)z;
    default:
        return (float)z;
    }
}

static void fill(float *x, int64_t n, enum fill f, double scale, tu_rng *r)
{
    float same = (float)(scale * tu_rng_normal(r));
    for (int64_t i = 0; i < n; i++) x[i] = fill_one(f, scale * tu_rng_normal(r), same, r);
    if (f == F_OUTLIER) x[tu_rng_range(r, 0, n - 1)] = (float)(1e6 * scale);
}

/* Candidates for logits x: ids a random permutation of [0, n), in shuffled order. */
static pl_candidate *make_cands(const float *x, int64_t n, tu_rng *r)
{
    pl_candidate *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
    for (int64_t i = 0; i < n; i++) c[i] = (pl_candidate){.id = (int32_t)i, .logit = x[i]};
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = tu_rng_range(r, 0, i);
        pl_candidate t = c[i];
        c[i] = c[j];
        c[j] = t;
    }
    return c;
}

static void verdict(const char *set, const char *kernel, double worst, const char *where)
{
    ref_ledger_note(set, kernel, worst, where);
    TU_CHECK(worst <= 1.0, "set %s %s seed %llu %s: error/bound=%.3g", set, kernel, SEED, where,
             worst);
}

/* ---- temperature ---- */

static void temperature_cases(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->temperature) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x74656d70ull);
    static const int64_t Vs[] = {1, 7, 61, 4096, 152064};
    static const float temps[] = {0.05f, 0.7f, 1.0f, 1.5f, 3.3f};
    for (size_t vi = 0; vi < sizeof Vs / sizeof Vs[0]; vi++)
        for (size_t ti = 0; ti < sizeof temps / sizeof temps[0]; ti++) {
            int64_t V = Vs[vi];
            enum fill f = (enum fill)((vi * 5 + ti) % F_COUNT);
            float *x = malloc((size_t)V * sizeof *x), *y = malloc((size_t)V * sizeof *y);
            double *ref = malloc((size_t)V * sizeof *ref);
            fill(x, V, f, 4.0, &r);
            memcpy(y, x, (size_t)V * sizeof *y);
            ks->temperature(y, V, temps[ti]);
            ref_temperature(ref, x, V, temps[ti]);
            double worst = 0.0;
            int64_t wi = 0;
            for (int64_t i = 0; i < V; i++) {
                double q = ref_ratio(y[i], ref[i], 2.0 * U * fabs(ref[i]) + FMIN);
                if (!(q <= worst)) worst = q, wi = i;
            }
            char where[160];
            snprintf(where, sizeof where, "V=%" PRId64 " temp=%g %s i=%" PRId64 " y=%.9g ref=%.17g",
                     V, temps[ti], fill_name[f], wi, y[wi], ref[wi]);
            verdict(ks->name, "temperature", worst, where);
            free(x), free(y), free(ref);
        }
}

/* ---- penalties ---- */

static void penalties_case(const struct pl_kernels *ks, int64_t V, int64_t n, float repeat,
                           float freq, float presence, tu_rng *r)
{
    float *x = malloc((size_t)V * sizeof *x), *y = malloc((size_t)V * sizeof *y);
    double *ref = malloc((size_t)V * sizeof *ref), *mag = malloc((size_t)V * sizeof *mag);
    int32_t *hist = malloc((size_t)(n > 0 ? n : 1) * sizeof *hist);
    fill(x, V, F_NORMAL, 3.0, r);
    for (int64_t i = 0; i < V; i += 11) x[i] = i % 2 ? 0.0f : -INFINITY;
    /* a small pool of ids makes repeats likely; a few ids out of range must be ignored */
    int64_t pool = tu_rng_range(r, 1, V < 40 ? V : 40);
    for (int64_t i = 0; i < n; i++) {
        int64_t pick = tu_rng_range(r, 0, 20);
        hist[i] = pick == 0   ? (int32_t)tu_rng_range(r, -3, -1)
                  : pick == 1 ? (int32_t)(V + tu_rng_range(r, 0, 3))
                  : pick < 12 ? (int32_t)tu_rng_range(r, 0, pool - 1)
                              : (int32_t)tu_rng_range(r, 0, V - 1);
    }
    memcpy(y, x, (size_t)V * sizeof *y);
    ks->penalties(y, V, hist, n, repeat, freq, presence);
    ref_penalties(ref, mag, x, V, hist, n, repeat, freq, presence);
    double worst = 0.0;
    int64_t wi = 0;
    int untouched_ok = 1;
    for (int64_t i = 0; i < V; i++) {
        if (mag[i] == 0.0 && isfinite(ref[i]) && memcmp(&y[i], &x[i], sizeof y[i]))
            untouched_ok = 0; /* ids not in history keep their bits */
        double q = ref_ratio(y[i], ref[i], 4.0 * U * mag[i] + FMIN);
        if (!(q <= worst)) worst = q, wi = i;
    }
    char where[200];
    snprintf(where, sizeof where,
             "V=%" PRId64 " n=%" PRId64 " repeat=%g freq=%g presence=%g id=%" PRId64
             " y=%.9g ref=%.17g",
             V, n, repeat, freq, presence, wi, y[wi], ref[wi]);
    verdict(ks->name, "penalties", worst, where);
    TU_CHECK(untouched_ok, "set %s seed %llu %s: a token absent from history changed", ks->name,
             SEED, where);
    free(x), free(y), free(ref), free(mag), free(hist);
}

static void penalties_cases(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->penalties) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x70656e61ull);
    static const int64_t Vs[] = {1, 50, 1000, 32000};
    static const int64_t ns[] = {0, 1, 64, 300};
    static const float params[][3] = {
        {1.0f, 0.0f, 0.0f}, {1.1f, 0.0f, 0.0f},   {1.3f, 0.1f, 0.2f},
        {1.0f, 0.5f, 0.0f}, {0.9f, -0.2f, -0.5f}, /* negative penalties reward repeats; must still
                                                     be exact */
    };
    for (size_t vi = 0; vi < sizeof Vs / sizeof Vs[0]; vi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t pi = 0; pi < sizeof params / sizeof params[0]; pi++)
                penalties_case(ks, Vs[vi], ns[ni], params[pi][0], params[pi][1], params[pi][2], &r);
    penalties_case(ks, 152064, 4096, 1.1f, 0.05f, 0.1f, &r); /* long history, full vocab */
}

/* ---- cand_softmax ---- */

static void cand_softmax_case(const struct pl_kernels *ks, const float *x, int64_t n,
                              const char *what, tu_rng *r)
{
    pl_candidate *c = make_cands(x, n, r);
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    double *p = malloc((size_t)n * sizeof *p);
    ref_cand_softmax(ids, p, c, n);
    double t0 = pl_clock_s();
    ks->cand_softmax(c, n);
    double dt = pl_clock_s() - t0;
    int64_t bad_order = -1;
    double worst = 0.0;
    int64_t wi = 0;
    for (int64_t i = 0; i < n; i++) {
        if (c[i].id != ids[i] && bad_order < 0) bad_order = i;
        double q = ref_ratio(c[i].p, p[i], P_RTOL * fabs(p[i]) + P_ATOL);
        if (!(q <= worst)) worst = q, wi = i;
    }
    char where[200];
    snprintf(where, sizeof where, "n=%" PRId64 " %s i=%" PRId64 " p=%.9g ref=%.17g", n, what, wi,
             (double)c[wi].p, p[wi]);
    verdict(ks->name, "cand_softmax", worst, where);
    TU_CHECK(bad_order < 0,
             "set %s seed %llu %s: order differs at %" PRId64 " (id %d, reference %d)", ks->name,
             SEED, where, bad_order, bad_order < 0 ? 0 : c[bad_order].id,
             bad_order < 0 ? 0 : ids[bad_order]);
    if (n >= 100000)
        printf("  [%s] cand_softmax n=%" PRId64 " %s: %.1f ms\n", ks->name, n, what, 1e3 * dt);
    free(c), free(ids), free(p);
}

static void cand_softmax_cases(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->cand_softmax) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x63616e64ull);
    static const int64_t ns[] = {1, 2, 3, 17, 31, 1000, 152064};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (int f = 0; f < F_COUNT; f++) {
            int64_t n = ns[ni];
            if (n > 1000 && f != F_NORMAL && f != F_TIES) continue;
            float *x = malloc((size_t)n * sizeof *x);
            fill(x, n, (enum fill)f, 3.0, &r);
            cand_softmax_case(ks, x, n, fill_name[f], &r);
            free(x);
        }
    for (int k = 0; k < 12; k++) {
        int64_t n = tu_rng_range(&r, 1, 5000);
        double scale = pow(10.0, 2.0 * tu_rng_uniform(&r) - 1.0);
        float *x = malloc((size_t)n * sizeof *x);
        enum fill f = k % 2 ? F_TIES : F_NORMAL;
        fill(x, n, f, scale, &r);
        char what[64];
        snprintf(what, sizeof what, "%s scale=%.3g", fill_name[f], scale);
        cand_softmax_case(ks, x, n, what, &r);
        free(x);
    }
    /* already sorted, reverse sorted: the quicksort's classic worst cases */
    int64_t n = 20000;
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = (float)i * 1e-3f;
    pl_candidate *c = malloc((size_t)n * sizeof *c);
    for (int rev = 0; rev < 2; rev++) {
        for (int64_t i = 0; i < n; i++) {
            int64_t j = rev ? n - 1 - i : i;
            c[i] = (pl_candidate){.id = (int32_t)j, .logit = x[j]};
        }
        ks->cand_softmax(c, n);
        int ok = 1;
        for (int64_t i = 0; i < n; i++) ok &= c[i].id == (int32_t)(n - 1 - i);
        TU_CHECK(ok, "set %s seed %llu: %s input of n=%" PRId64 " mis-sorted", ks->name, SEED,
                 rev ? "reversed" : "sorted", n);
    }
    free(c), free(x);
}

/* ---- truncations: exact ---- */

/* A sorted candidate list of n for the truncation tests: cand_softmax of the set itself. */
static pl_candidate *sorted_list(const struct pl_kernels *ks, int64_t n, enum fill f, tu_rng *r)
{
    float *x = malloc((size_t)n * sizeof *x);
    fill(x, n, f, 2.0, r);
    pl_candidate *c = make_cands(x, n, r);
    ks->cand_softmax(c, n);
    free(x);
    return c;
}

/* (logit desc, id asc) with NaN last: a before b? */
static int cand_before(const pl_candidate *a, const pl_candidate *b)
{
    if (a->logit != b->logit) return a->logit > b->logit;
    return a->id < b->id;
}

static void top_k_cases(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->top_k) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x746f706bull);
    int all_ok = 1;
    for (int rep = 0; rep < 20; rep++) {
        int64_t n = rep == 0 ? 1 : tu_rng_range(&r, 1, 300);
        pl_candidate *c = sorted_list(ks, n, rep % 2 ? F_TIES : F_NORMAL, &r);
        pl_candidate *copy = malloc((size_t)n * sizeof *copy);
        memcpy(copy, c, (size_t)n * sizeof *c);
        const int64_t ks_[] = {-5, 0, 1, 2, n / 2, n - 1, n, n + 1, 1000};
        for (size_t i = 0; i < sizeof ks_ / sizeof ks_[0]; i++) {
            int64_t k = ks_[i];
            int64_t L = ks->top_k(c, n, k);
            int ok = L == ref_top_k(n, k) && !memcmp(c, copy, (size_t)n * sizeof *c);
            /* exactly the L largest: L - 1 candidates come before the last kept one */
            if (ok && L > 0 && L < n) {
                int64_t before = 0;
                for (int64_t j = 0; j < n; j++) before += cand_before(&copy[j], &c[L - 1]);
                ok = before == L - 1 && cand_before(&c[L - 1], &c[L]);
            }
            all_ok &= ok;
            TU_CHECK(ok, "set %s seed %llu: top_k n=%" PRId64 " k=%" PRId64 " kept %" PRId64,
                     ks->name, SEED, n, k, L);
        }
        free(c), free(copy);
    }
    TU_CHECK(ks->top_k(NULL, 0, 5) == 0, "set %s: top_k on n = 0 must keep 0", ks->name);
    ref_ledger_note(ks->name, "top_k (exact)", all_ok ? 0.0 : INFINITY, "");
}

static long double prefix_mass(const pl_candidate *c, int64_t L)
{
    long double s = 0.0L;
    for (int64_t i = 0; i < L; i++) s += c[i].p;
    return s;
}

static void top_p_cases(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->top_p) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x746f7070ull);
    static const float ps[] = {-1.0f, 0.0f,  1e-9f,     0.1f, 0.5f, 0.9f,
                               0.95f, 0.99f, 0.999999f, 1.0f, 2.0f};
    int all_ok = 1;
    for (int rep = 0; rep < 24; rep++) {
        int64_t n = rep == 0 ? 1 : tu_rng_range(&r, 1, 400);
        pl_candidate *c = sorted_list(ks, n, (enum fill)(rep % 3), &r);
        int64_t len = rep % 4 == 3 ? tu_rng_range(&r, 1, n) : n; /* as if cut by top-k */
        const int64_t mks[] = {0, 1, 3, len, len + 5};
        long double total = prefix_mass(c, len);
        double *pd = malloc((size_t)len * sizeof *pd);
        for (int64_t i = 0; i < len; i++) pd[i] = c[i].p;
        for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
            for (size_t mi = 0; mi < sizeof mks / sizeof mks[0]; mi++) {
                float p = ps[pi];
                int64_t mk = mks[mi], floor_keep = mk < 1 ? 1 : (mk > len ? len : mk);
                int64_t L = ks->top_p(c, len, p, mk);
                int ok = L >= floor_keep && L <= len;
                if (p >= 1.0f) ok &= L == len;
                long double target = (long double)p * total, slack = 1e-12L * total;
                if (ok && p < 1.0f && L > floor_keep) /* the shortest: one less falls short */
                    ok &= prefix_mass(c, L - 1) < target + slack;
                if (ok && p < 1.0f && L < len) /* and it reaches the mass */
                    ok &= prefix_mass(c, L) >= target - slack;
                ok &= L == ref_top_p(pd, len, p, mk); /* the double reference, same p */
                all_ok &= ok;
                TU_CHECK(ok,
                         "set %s seed %llu: top_p n=%" PRId64 " p=%.9g min_keep=%" PRId64
                         " kept %" PRId64 " (reference %" PRId64 ")",
                         ks->name, SEED, len, p, mk, L, ref_top_p(pd, len, p, mk));
            }
        free(pd), free(c);
    }
    TU_CHECK(ks->top_p(NULL, 0, 0.5f, 3) == 0, "set %s: top_p on n = 0 must keep 0", ks->name);
    ref_ledger_note(ks->name, "top_p (exact)", all_ok ? 0.0 : INFINITY, "");
}

static void min_p_cases(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->min_p) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6d696e70ull);
    static const float ps[] = {-1.0f, 0.0f, 1e-6f, 0.05f, 0.1f, 0.5f, 1.0f, 2.0f};
    int all_ok = 1;
    for (int rep = 0; rep < 24; rep++) {
        int64_t n = rep == 0 ? 1 : tu_rng_range(&r, 1, 400);
        pl_candidate *c = sorted_list(ks, n, (enum fill)(rep % 3), &r);
        const int64_t mks[] = {0, 1, 3, n + 1};
        double *pd = malloc((size_t)n * sizeof *pd);
        for (int64_t i = 0; i < n; i++) pd[i] = c[i].p;
        for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
            for (size_t mi = 0; mi < sizeof mks / sizeof mks[0]; mi++) {
                float p = ps[pi];
                int64_t mk = mks[mi];
                int64_t L = ks->min_p(c, n, p, mk);
                int ok = L >= 1 && L <= n && L >= (mk < n ? mk : n);
                if (p <= 0.0f) ok &= L == n;
                double thr = (double)p * (double)c[0].p;
                for (int64_t i = 0; ok && p > 0.0f && i < L; i++)
                    ok &= c[i].p >= thr || i < (mk > 1 ? mk : 1);
                if (ok && p > 0.0f && L < n) ok &= c[L].p < thr;
                ok &= L == ref_min_p(pd, n, p, mk);
                all_ok &= ok;
                TU_CHECK(ok,
                         "set %s seed %llu: min_p n=%" PRId64 " p=%g min_keep=%" PRId64
                         " kept %" PRId64,
                         ks->name, SEED, n, p, mk, L);
            }
        free(pd), free(c);
    }
    TU_CHECK(ks->min_p(NULL, 0, 0.5f, 3) == 0, "set %s: min_p on n = 0 must keep 0", ks->name);
    ref_ledger_note(ks->name, "min_p (exact)", all_ok ? 0.0 : INFINITY, "");
}

/* ---- draw: exact edges ---- */

static pl_candidate *list_of(const float *p, int64_t n)
{
    pl_candidate *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
    for (int64_t i = 0; i < n; i++) c[i] = (pl_candidate){.id = (int32_t)i, .p = p[i]};
    return c;
}

static void draw_edges(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->draw) return;
    int all_ok = 1;
#define DRAW_IS(c, n, u, want)                                                                     \
    do {                                                                                           \
        int64_t got_ = ks->draw(c, n, u);                                                          \
        all_ok &= got_ == (want);                                                                  \
        TU_CHECK(got_ == (want), "set %s: draw(n=%d, u=%.17g) = %" PRId64 ", want %d", ks->name,   \
                 (int)(n), (double)(u), got_, (int)(want));                                        \
    } while (0)
    const double below_one = nextafter(1.0, 0.0);
    static const float p1[] = {0.5f, 0.0f, 0.25f, 0.0f, 0.25f}; /* sums exact in binary */
    pl_candidate *c = list_of(p1, 5);
    DRAW_IS(c, 5, 0.0, 0);
    DRAW_IS(c, 5, 0.49, 0);
    DRAW_IS(c, 5, 0.5, 2); /* cumulative must EXCEED u * total */
    DRAW_IS(c, 5, 0.75, 4);
    DRAW_IS(c, 5, below_one, 4);
    DRAW_IS(c, 5, 1.0, 4);
    DRAW_IS(c, 5, 7.0, 4);
    DRAW_IS(c, 5, -0.5, 0);
    DRAW_IS(c, 5, NAN, 0);
    free(c);
    static const float p2[] = {0.0f, 0.6f, 0.4f, 0.0f, 0.0f}; /* zeros at both ends */
    c = list_of(p2, 5);
    DRAW_IS(c, 5, 0.0, 1);
    DRAW_IS(c, 5, below_one, 2);
    DRAW_IS(c, 5, 1.0, 2);
    DRAW_IS(c, 2, below_one, 1); /* renormalised over the prefix */
    free(c);
    static const float p3[] = {0.0f, 0.0f, 0.0f, 0.0f}; /* no mass: uniform */
    c = list_of(p3, 4);
    DRAW_IS(c, 4, 0.0, 0);
    DRAW_IS(c, 4, 0.3, 1);
    DRAW_IS(c, 4, below_one, 3);
    DRAW_IS(c, 4, 1.0, 3);
    DRAW_IS(c, 4, 1e300, 3);
    free(c);
    static const float p4[] = {1e-30f, 1.0f}; /* tiny mass first, u = 0 still picks it */
    c = list_of(p4, 2);
    DRAW_IS(c, 2, 0.0, 0);
    DRAW_IS(c, 2, 1e-20, 1);
    free(c);
    DRAW_IS(NULL, 0, 0.5, -1);
#undef DRAW_IS

    /* random lists and u: the index satisfies the definition, checked in long double */
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x64726177ull);
    for (int rep = 0; rep < 2000; rep++) {
        int64_t n = tu_rng_range(&r, 1, 30);
        float p[30];
        for (int64_t i = 0; i < n; i++)
            p[i] = tu_rng_uniform(&r) < 0.2 ? 0.0f : (float)tu_rng_uniform(&r);
        c = list_of(p, n);
        double u = tu_rng_uniform(&r);
        int64_t i = ks->draw(c, n, u);
        long double total = prefix_mass(c, n), slack = 1e-12L * total;
        int ok = i >= 0 && i < n;
        if (ok && total > 0) {
            ok = p[i] > 0.0f && prefix_mass(c, i + 1) > u * total - slack &&
                 prefix_mass(c, i) <= u * total + slack;
        }
        all_ok &= ok;
        TU_CHECK(ok, "set %s seed %llu: draw n=%" PRId64 " u=%.17g returned %" PRId64, ks->name,
                 SEED, n, u, i);
        free(c);
    }
    ref_ledger_note(ks->name, "draw (exact)", all_ok ? 0.0 : INFINITY, "");
}

/* ---- the chain: distributions after each transform, and chi-square of draws ---- */

typedef struct chain_case {
    const char *name;
    int64_t V;
    enum fill f;
    double scale;
    int64_t n_hist;
    float repeat, freq, presence, temp;
    int64_t top_k;
    float top_p, min_p;
    int64_t min_keep;
} chain_case;

static const chain_case chain_cases[] = {
    {"plain V=50", 50, F_NORMAL, 1.0, 0, 1, 0, 0, 1.0f, 0, 1.0f, 0.0f, 1},
    {"top-k 40, top-p .95, min-p .05", 1000, F_NORMAL, 2.0, 0, 1, 0, 0, 0.7f, 40, 0.95f, 0.05f, 1},
    {"penalties, top-k 100, top-p .9", 32000, F_NORMAL, 3.0, 64, 1.3f, 0.1f, 0.2f, 1.3f, 100, 0.9f,
     0.02f, 1},
    {"full vocab 152064, min-p .05", 152064, F_NORMAL, 4.0, 256, 1.1f, 0.0f, 0.0f, 0.8f, 0, 0.9f,
     0.05f, 1},
    {"ties in 3 levels", 20, F_TIES, 1.0, 0, 1, 0, 0, 1.0f, 0, 1.0f, 0.0f, 1},
    {"all-equal", 10, F_EQUAL, 1.0, 0, 1, 0, 0, 1.0f, 0, 1.0f, 0.0f, 1},
    {"banned tokens at -inf", 64, F_SOME_NEGINF, 1.5, 0, 1, 0, 0, 1.0f, 0, 1.0f, 0.0f, 1},
    {"top-p .1 with min_keep 5", 500, F_NORMAL, 2.0, 0, 1, 0, 0, 1.0f, 0, 0.1f, 0.0f, 5},
    {"hot temperature 2.5, top-k 8", 300, F_NORMAL, 2.0, 0, 1, 0, 0, 2.5f, 8, 1.0f, 0.0f, 1},
};

/* Kernel distribution over c[0..L) renormalised vs the reference p[0..L) renormalised. */
static double compare_dist(const pl_candidate *c, const double *p, int64_t L, int64_t *wi)
{
    double kt = 0.0, rt = 0.0, worst = 0.0;
    for (int64_t i = 0; i < L; i++) kt += c[i].p, rt += p[i];
    for (int64_t i = 0; i < L; i++) {
        double qr = p[i] / rt;
        double q = ref_ratio((double)c[i].p / kt, qr, P_RTOL * qr + P_ATOL);
        if (!(q <= worst)) worst = q, *wi = i;
    }
    return worst;
}

static void chain_run(const struct pl_kernels *ks, const chain_case *cc, tu_rng *r)
{
    const int64_t V = cc->V;
    float *x = malloc((size_t)V * sizeof *x);
    int32_t *hist = malloc((size_t)(cc->n_hist > 0 ? cc->n_hist : 1) * sizeof *hist);
    fill(x, V, cc->f, cc->scale, r);
    for (int64_t i = 0; i < cc->n_hist; i++)
        hist[i] = (int32_t)tu_rng_range(r, 0, V < 50 ? V - 1 : 49);
    if (ks->penalties) ks->penalties(x, V, hist, cc->n_hist, cc->repeat, cc->freq, cc->presence);
    if (ks->temperature) ks->temperature(x, V, cc->temp);
    pl_candidate *c = make_cands(x, V, r);
    /* the reference distribution, from the exact logits cand_softmax sees */
    int32_t *ids = malloc((size_t)V * sizeof *ids);
    double *p = malloc((size_t)V * sizeof *p);
    ref_cand_softmax(ids, p, c, V);
    ks->cand_softmax(c, V);

    char where[200];
    double worst = 0.0;
    int64_t wi = 0, L = V, Lref = V;
    const char *stage = "softmax";
#define STAGE(name)                                                                                \
    do {                                                                                           \
        int64_t i_ = 0;                                                                            \
        double w_ = compare_dist(c, p, L, &i_);                                                    \
        if (!(w_ <= worst)) worst = w_, wi = i_, stage = name;                                     \
    } while (0)
    STAGE("softmax");
    /* each truncation: the kept length must agree unless the reference itself sat within
     * 1e-5 (relative) of deciding otherwise; then the kernel's choice is taken for both */
    int64_t Lk = ks->top_k(c, L, cc->top_k);
    Lref = ref_top_k(L, cc->top_k);
    TU_CHECK(Lk == Lref, "set %s seed %llu %s: top_k kept %" PRId64 ", reference %" PRId64,
             ks->name, SEED, cc->name, Lk, Lref);
    L = Lk;
    STAGE("top_k");
    int64_t Lp = ks->top_p(c, L, cc->top_p, cc->min_keep);
    Lref = ref_top_p(p, L, cc->top_p, cc->min_keep);
    TU_CHECK(Lp == Lref || ref_top_p_margin(p, L, cc->top_p, Lref) < 1e-5,
             "set %s seed %llu %s: top_p kept %" PRId64 ", reference %" PRId64, ks->name, SEED,
             cc->name, Lp, Lref);
    L = Lp;
    STAGE("top_p");
    int64_t Lm = ks->min_p(c, L, cc->min_p, cc->min_keep);
    Lref = ref_min_p(p, L, cc->min_p, cc->min_keep);
    TU_CHECK(Lm == Lref || ref_min_p_margin(p, L, cc->min_p, Lref) < 1e-5,
             "set %s seed %llu %s: min_p kept %" PRId64 ", reference %" PRId64, ks->name, SEED,
             cc->name, Lm, Lref);
    L = Lm;
    STAGE("min_p");
#undef STAGE
    snprintf(where, sizeof where, "%s V=%" PRId64 " kept %" PRId64 " worst at i=%" PRId64 " (%s)",
             cc->name, V, L, wi, stage);
    verdict(ks->name, "chain dist", worst, where);

    /* 10^5 draws with fixed-seed uniforms vs the reference distribution over the kept list */
    uint64_t *counts = calloc((size_t)L, sizeof *counts);
    double *q = malloc((size_t)L * sizeof *q);
    double qt = 0.0;
    for (int64_t i = 0; i < L; i++) qt += p[i];
    for (int64_t i = 0; i < L; i++) q[i] = p[i] / qt;
    tu_rng ur;
    tu_rng_init(&ur, tu_seed() ^ 0x636869ull ^ (uint64_t)V);
    int in_range = 1;
    for (int k = 0; k < DRAWS; k++) {
        int64_t i = ks->draw(c, L, tu_rng_uniform(&ur));
        if (i < 0 || i >= L) {
            in_range = 0;
            continue;
        }
        counts[i]++;
    }
    int zero_ok = 1;
    for (int64_t i = 0; i < L; i++) zero_ok &= q[i] > 0.0 || counts[i] == 0;
    int dof = 0;
    double pv = ref_chisq_p(counts, q, L, DRAWS, &dof);
    snprintf(where, sizeof where, "%s: chi2 p=%.3g dof=%d", cc->name, pv, dof);
    verdict(ks->name, "draw chi2", CHISQ_ALPHA / fmax(pv, 1e-300), where);
    TU_CHECK(in_range && zero_ok, "set %s seed %llu %s: draws out of range or of zero mass",
             ks->name, SEED, cc->name);
    free(counts), free(q), free(x), free(hist), free(c), free(ids), free(p);
}

static void chain_cases_run(const struct pl_kernels *ks, void *ctx)
{
    if (!ks->cand_softmax || !ks->top_k || !ks->top_p || !ks->min_p || !ks->draw) return;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x636861696eull);
    for (size_t i = 0; i < sizeof chain_cases / sizeof chain_cases[0]; i++)
        chain_run(ks, &chain_cases[i], &r);
}

#define OVER_SETS(fn)                                                                              \
    static void test_##fn(void)                                                                    \
    {                                                                                              \
        CU_ASSERT(for_each_supported_set(fn, NULL) >= 1);                                          \
    }
OVER_SETS(temperature_cases)
OVER_SETS(penalties_cases)
OVER_SETS(cand_softmax_cases)
OVER_SETS(top_k_cases)
OVER_SETS(top_p_cases)
OVER_SETS(min_p_cases)
OVER_SETS(draw_edges)
OVER_SETS(chain_cases_run)

int main(void)
{
    ref_init();
    static const tu_test tests[] = {
        {"temperature_divides_within_2u_and_keeps_minus_inf", test_temperature_cases},
        {"penalties_follow_llama_cpp_and_leave_other_tokens_bit_identical", test_penalties_cases},
        {"cand_softmax_sorts_by_logit_then_id_and_matches_gsl", test_cand_softmax_cases},
        {"top_k_keeps_exactly_the_k_largest", test_top_k_cases},
        {"top_p_keeps_the_shortest_prefix_reaching_p_and_min_keep", test_top_p_cases},
        {"min_p_keeps_candidates_above_the_threshold_and_min_keep", test_min_p_cases},
        {"draw_picks_first_cumulative_exceeding_u_and_never_zero_mass", test_draw_edges},
        {"distributions_match_reference_after_each_transform_and_draws_fit_chi2",
         test_chain_cases_run},
        {NULL, NULL},
    };
    int rc = tu_run("sample", tests);
    ref_ledger_print(stdout);
    return rc;
}
