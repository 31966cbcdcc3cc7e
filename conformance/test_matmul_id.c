/* test_matmul_id.c — the expert matmul (pl_matmul_id) over every supported kernel set and its
 * "+repack" view, for every weight type: each output row the bits of the set's dense matmul on
 * that token alone, the dot-product bound against a GSL double reference, writes confined to the
 * slice and the used rows, slice and batch invariance, refusals that write nothing.
 * Replay a failure with PLUMB_SEED=<seed>. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "quant_inputs.h"
#include "refs/refs.h"
#include "testutil.h"

#define MAX_TABLES 8
static pl_kernel_table tables[MAX_TABLES];
static int n_tables;
/* repacked[s]: the set whose repacked layouts view s runs (NULL: the set's own matmul). */
static const struct pl_kernels *repacked[MAX_TABLES];
static char view_names[MAX_TABLES][32];

#define SENTINEL 0x7fa5a5a5u /* a NaN no kernel computes */
#define CANARY   0xa5u       /* the bytes past the scratch the driver asked for */

static const struct pl_type_traits *tr(pl_type t)
{
    return pl_type_traits_of(t);
}

static int64_t block_of(pl_type t)
{
    return tr(t)->block_size;
}

static size_t row_bytes(pl_type t, int64_t n)
{
    return (size_t)(n / tr(t)->block_size) * tr(t)->block_bytes;
}

static uint64_t test_seed(uint64_t salt)
{
    return tu_seed() * 0x9e3779b97f4a7c15ull + salt;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float *sentinel_buffer(int64_t n)
{
    float *y = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    const uint32_t s = SENTINEL;
    for (int64_t i = 0; i < n; i++) memcpy(&y[i], &s, sizeof s);
    return y;
}

/* One problem: n_expert experts of R x K weights, T activation rows, n_used ids per token.
 * w and x are the logical operands (expert e's row r at w + e wes + r wrb, quantized by the set
 * under test, padded strides); mm, mw and mx are what the set's matmul reads: the rows as they
 * are, or each expert packed on its own and x prepared where the view repacks the type. */
typedef struct problem {
    const struct pl_kernels *k;
    pl_type wt, xt;
    int64_t n_expert, n_used, K, R, T;
    size_t wrb, xrb, wes; /* wes: bytes from one expert's rows to the next's (with a gap) */
    unsigned char *w, *x;
    int32_t *ids;
    pl_matmul_fn mm;
    unsigned char *mw, *mx; /* packed weights / prepared x, or NULL: w / x */
    size_t mw_row, mw_expert, mx_row;
} problem;

static const unsigned char *mm_w(const problem *p)
{
    return p->mw ? p->mw : p->w;
}

static const unsigned char *mm_x(const problem *p)
{
    return p->mx ? p->mx : p->x;
}

enum { SEL_RANDOM, SEL_ONE_EXPERT, SEL_DUPLICATES, SEL_FEW_EXPERTS, SEL_COUNT };
static const char *const sel_names[SEL_COUNT] = {"random", "all tokens on one expert",
                                                 "duplicates within a token",
                                                 "distinct ids from a few experts"};

static void fill_ids(problem *p, int mode, tu_rng *rng)
{
    const int64_t E = p->n_expert, U = p->n_used;
    const int32_t e0 = (int32_t)tu_rng_range(rng, 0, E - 1);
    const int64_t few = tu_rng_range(rng, U, E < 2 * U ? E : 2 * U); /* experts in play */
    for (int64_t t = 0; t < p->T; t++) {
        int32_t *id = p->ids + t * U;
        for (int64_t u = 0; u < U; u++) {
            switch (mode) {
            case SEL_ONE_EXPERT: /* every slot of every token (duplicates too) */
                id[u] = e0;
                break;
            case SEL_DUPLICATES: /* two experts per token, so most tokens repeat one */
                id[u] = u == 0 ? (int32_t)tu_rng_range(rng, 0, E - 1)
                               : (tu_rng_u64(rng) & 1 ? id[0] : (int32_t)((id[0] + 1) % E));
                break;
            case SEL_FEW_EXPERTS: { /* a router's distinct ids, from experts [e0, e0 + few) */
                int fresh;
                do {
                    id[u] = (int32_t)((e0 + tu_rng_range(rng, 0, few - 1)) % E);
                    fresh = 1;
                    for (int64_t v = 0; v < u; v++) fresh &= id[v] != id[u];
                } while (!fresh);
                break;
            }
            default:
                id[u] = (int32_t)tu_rng_range(rng, 0, E - 1);
                break;
            }
        }
    }
}

/* The experts no id selects hold 0xff bytes (NaN scales, NaN floats): a driver that reads one
 * gives NaN rows. */
static void make_problem(problem *p, int view, pl_type t, int64_t n_expert, int64_t n_used,
                         int64_t K, int64_t R, int64_t T, int mode, tu_rng *rng)
{
    static const size_t pads[3] = {0, 4, 68};
    const struct pl_kernels *k = &tables[view].k;
    memset(p, 0, sizeof *p);
    p->k = k;
    p->wt = t;
    p->xt = tr(t)->dot_type;
    p->n_expert = n_expert;
    p->n_used = n_used;
    p->K = K;
    p->R = R;
    p->T = T;
    p->wrb = row_bytes(p->wt, K) + pads[tu_rng_range(rng, 0, 2)];
    p->xrb = row_bytes(p->xt, K) + pads[tu_rng_range(rng, 0, 2)];
    /* experts apart by more than R rows where the gap is drawn: a driver that steps by
     * R w_row_bytes instead of w_expert_bytes reads the wrong rows */
    const size_t gap = pads[tu_rng_range(rng, 0, 2)];
    p->wes = (size_t)R * p->wrb + gap;
    p->ids = malloc(sizeof(int32_t) * (size_t)(T * n_used));
    fill_ids(p, mode, rng);
    p->w = malloc((size_t)n_expert * p->wes);
    memset(p->w, 0xff, (size_t)n_expert * p->wes);
    p->x = calloc((size_t)T, p->xrb);
    float *row = malloc(sizeof(float) * (size_t)K);
    const int64_t wblock = block_of(p->wt) > 1 ? block_of(p->wt) : 32;
    const int64_t xblock = block_of(p->xt) > 1 ? block_of(p->xt) : 32;
    for (int64_t e = 0; e < n_expert; e++) {
        int used = 0;
        for (int64_t s = 0; s < T * n_used; s++) used |= p->ids[s] == e;
        if (!used) continue;
        for (int64_t r = 0; r < R; r++) {
            qi_fill(row, K, QI_GAUSS, wblock, rng);
            k->quantize_row[p->wt](p->w + (size_t)e * p->wes + (size_t)r * p->wrb, row, K);
        }
    }
    for (int64_t i = 0; i < T; i++) {
        qi_fill(row, K, i % 5 == 4 ? (int)tu_rng_range(rng, 0, QI_COUNT - 1) : QI_GAUSS, xblock,
                rng);
        k->quantize_row[p->xt](p->x + (size_t)i * p->xrb, row, K);
    }
    free(row);
    const pl_repack *rp = repacked[view] ? repacked[view]->repack[t] : NULL;
    p->mm = rp ? rp->matmul : k->matmul[t];
    p->mw_row = rp ? 0 : p->wrb;
    p->mw_expert = rp ? rp->size(K, R) + gap : p->wes;
    p->mx_row = p->xrb;
    if (rp) { /* each expert packed on its own, as the engine's arena will hold them */
        p->mw = malloc((size_t)n_expert * p->mw_expert + 1);
        for (int64_t e = 0; e < n_expert; e++)
            rp->pack(p->mw + (size_t)e * p->mw_expert, p->w + (size_t)e * p->wes, p->wrb, K, R);
    }
    if (rp && rp->x_prep) {
        p->mx_row = rp->x_row(K);
        TU_CHECK(p->mx_row <= PL_REPACK_X_ROW_MAX(K),
                 "set %s: prepared row of K %" PRId64 " is %zu bytes", k->name, K, p->mx_row);
        p->mx = malloc(p->mx_row * (size_t)T + 1);
        for (int64_t i = 0; i < T; i++)
            rp->x_prep(p->mx + (size_t)i * p->mx_row, p->x + (size_t)i * p->xrb, K);
    }
}

static void free_problem(problem *p)
{
    free(p->w);
    free(p->x);
    free(p->ids);
    free(p->mw);
    free(p->mx);
}

/* A random problem of type t on view: n_expert in [1, 64], n_used in [1, min(8, n_expert)],
 * K a random legal length, R in [1, 24] (not a multiple of a repack group in general). */
static void random_problem(problem *p, int view, pl_type t, int64_t T, int mode, tu_rng *rng)
{
    const int64_t b = block_of(t);
    const int64_t K =
        b == 1 ? tu_rng_range(rng, 1, 160) : b * tu_rng_range(rng, 1, b == 32 ? 12 : 2);
    const int64_t R = tu_rng_range(rng, 1, 24);
    const int64_t E = tu_rng_range(rng, 1, 64);
    const int64_t U = tu_rng_range(rng, 1, E < 8 ? E : 8);
    make_problem(p, view, t, E, U, K, R, T, mode, rng);
}

/* pl_matmul_id on tokens [t0, t0 + T) of p into y (T n_used rows of ldy), rows [r0, r1), with
 * exactly the scratch pl_matmul_id_scratch asks for, starting misalign bytes into a buffer, with
 * canary bytes before and after it that must survive. Returns the driver's result, or -2 if it
 * wrote outside its scratch. */
static int run_id(const problem *p, float *y, int64_t ldy, int64_t r0, int64_t r1, int64_t t0,
                  int64_t T, size_t misalign)
{
    const size_t need = pl_matmul_id_scratch(T, p->n_used, p->n_expert, p->mx_row, r0, r1);
    if (need == SIZE_MAX) return -3;
    unsigned char *buf = malloc(misalign + need + 64);
    memset(buf, CANARY, misalign);
    memset(buf + misalign + need, CANARY, 64);
    const int rc =
        pl_matmul_id(p->mm, y, ldy, mm_w(p), p->mw_row, p->mw_expert, p->n_expert,
                     mm_x(p) + (size_t)t0 * p->mx_row, p->mx_row, p->ids + t0 * p->n_used,
                     p->n_used, p->K, r0, r1, T, buf + misalign);
    int past = 0;
    for (size_t i = 0; i < misalign; i++) past |= buf[i] != CANARY;
    for (size_t i = 0; i < 64; i++) past |= buf[misalign + need + i] != CANARY;
    free(buf);
    return past ? -2 : rc;
}

/* The set's dense matmul of expert e on token t alone (T = 1) into y[r0, r1). */
static void mm_alone(const problem *p, float *y, int64_t e, int64_t t, int64_t r0, int64_t r1)
{
    p->mm(y, p->R, mm_w(p) + (size_t)e * p->mw_expert, p->mw_row, mm_x(p) + (size_t)t * p->mx_row,
          p->mx_row, p->K, r0, r1, 1);
}

/* First slot s (and row r) where a and b differ in bits on rows [r0, r1), as s * 1000000 + r;
 * -1 if none. */
static int64_t first_bit_difference(const float *a, int64_t lda, const float *b, int64_t ldb,
                                    int64_t S, int64_t r0, int64_t r1)
{
    for (int64_t s = 0; s < S; s++)
        for (int64_t r = r0; r < r1; r++)
            if (bits(a[s * lda + r]) != bits(b[s * ldb + r])) return s * 1000000 + r;
    return -1;
}

#define SHAPE_FMT                                                                                  \
    "set %s type %s seed %" PRIu64 " E %" PRId64 " n_used %" PRId64 " K %" PRId64 " R %" PRId64    \
    " T %" PRId64 " (%s)"
#define SHAPE_ARGS(p, seed, mode)                                                                  \
    (p)->k->name, tr((p)->wt)->name, (seed), (p)->n_expert, (p)->n_used, (p)->K, (p)->R, (p)->T,   \
        sel_names[mode]

static const int64_t t_list[] = {1, 2, 3, 5, 17, 64, 0, 0}; /* 0: random in [1, 40] */
#define N_T_LIST ((int)(sizeof t_list / sizeof t_list[0]))

static int64_t pick_t(int i, tu_rng *rng)
{
    return t_list[i] ? t_list[i] : tu_rng_range(rng, 1, 40);
}

/* Every output row (t, u) is the bits of the same set's dense matmul (same layout) of expert
 * ids[t n_used + u] on token t alone, on a random row slice. */
static void matmul_id_row_is_dense_matmul_of_its_token_alone(void)
{
    for (int s = 0; s < n_tables; s++) {
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            for (int i = 0; i < N_T_LIST; i++) {
                const uint64_t seed = test_seed(1000 + 64 * (uint64_t)t + (uint64_t)i);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                const int mode = (int)tu_rng_range(&rng, 0, SEL_COUNT - 1);
                problem p;
                random_problem(&p, s, t, pick_t(i, &rng), mode, &rng);
                const int64_t R = p.R, S = p.T * p.n_used;
                const int64_t r0 = tu_rng_range(&rng, 0, R - 1), r1 = tu_rng_range(&rng, r0 + 1, R);
                float *y = sentinel_buffer(S * R), *alone = sentinel_buffer(S * R);
                const int rc = run_id(&p, y, R, r0, r1, 0, p.T, 0);
                TU_CHECK(rc == 0, SHAPE_FMT ": pl_matmul_id returned %d",
                         SHAPE_ARGS(&p, seed, mode), rc);
                for (int64_t sl = 0; sl < S; sl++)
                    mm_alone(&p, alone + sl * R, p.ids[sl], sl / p.n_used, r0, r1);
                const int64_t d = first_bit_difference(y, R, alone, R, S, r0, r1);
                TU_CHECK(d < 0,
                         SHAPE_FMT " rows [%" PRId64 ", %" PRId64 "): y[t=%" PRId64 "][u=%" PRId64
                                   "][r=%" PRId64 "] (expert %d) %a, dense matmul alone %a",
                         SHAPE_ARGS(&p, seed, mode), r0, r1, d / 1000000 / p.n_used,
                         d / 1000000 % p.n_used, d % 1000000, d >= 0 ? p.ids[d / 1000000] : -1,
                         d >= 0 ? (double)y[d / 1000000 * R + d % 1000000] : 0.0,
                         d >= 0 ? (double)alone[d / 1000000 * R + d % 1000000] : 0.0);
                free(y);
                free(alone);
                free_problem(&p);
            }
        }
    }
}

/* |y - y_ref| <= c u K sum|a_i b_i| + K eta against gsl_blas_dgemm on the exactly dequantized
 * expert and token (refs/ref_matmul.c), c and eta as test_matmul holds the dense matmul to. */
static void matmul_id_within_bound_of_gsl(void)
{
    for (int s = 0; s < n_tables; s++) {
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            for (int i = 0; i < N_T_LIST; i++) {
                const uint64_t seed = test_seed(2000 + 64 * (uint64_t)t + (uint64_t)i);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                const int mode = (int)tu_rng_range(&rng, 0, SEL_COUNT - 1);
                problem p;
                random_problem(&p, s, t, pick_t(i, &rng), mode, &rng);
                const int64_t R = p.R, K = p.K, S = p.T * p.n_used;
                float *y = sentinel_buffer(S * R);
                double *yref = malloc(sizeof(double) * (size_t)R);
                double *mag = malloc(sizeof(double) * (size_t)R);
                const int rc = run_id(&p, y, R, 0, R, 0, p.T, 0);
                TU_CHECK(rc == 0, SHAPE_FMT ": pl_matmul_id returned %d",
                         SHAPE_ARGS(&p, seed, mode), rc);
                const double c = qi_matmul_c(t), eta = qi_matmul_eta(t);
                double worst = 0.0, worst_y = 0.0, worst_ref = 0.0, worst_bound = 0.0;
                int64_t ws = -1, wr = -1;
                for (int64_t sl = 0; sl < S; sl++) {
                    const int64_t e = p.ids[sl];
                    const int ok = ref_matmul(t, p.w + (size_t)e * p.wes, p.wrb,
                                              p.x + (size_t)(sl / p.n_used) * p.xrb, p.xrb, K, R, 1,
                                              yref, mag) == 0;
                    TU_CHECK(ok, "ref_matmul failed for type %s", tr(t)->name);
                    if (!ok) break;
                    for (int64_t r = 0; r < R; r++) {
                        const double bound = c * 0x1p-24 * (double)K * mag[r] + (double)K * eta;
                        double ratio = fabs((double)y[sl * R + r] - yref[r]) / bound;
                        if (isnan(ratio)) ratio = INFINITY;
                        if (ratio > worst || ws < 0) {
                            worst = ratio;
                            ws = sl;
                            wr = r;
                            worst_y = y[sl * R + r];
                            worst_ref = yref[r];
                            worst_bound = bound;
                        }
                    }
                }
                TU_CHECK(worst <= 1.0,
                         SHAPE_FMT ": worst y[t=%" PRId64 "][u=%" PRId64 "][r=%" PRId64
                                   "] = %.9g, ref %.17g, |err| %.3g > bound %.3g (c %.3g)",
                         SHAPE_ARGS(&p, seed, mode), ws / p.n_used, ws % p.n_used, wr, worst_y,
                         worst_ref, fabs(worst_y - worst_ref), worst_bound, c);
                free(y);
                free(yref);
                free(mag);
                free_problem(&p);
            }
        }
    }
}

/* With ldy > R, a random slice, rows past the T n_used used ones, scratch at every alignment
 * and canaries past its end: only y's slice of the used rows is written, all of it, and nothing
 * past the scratch pl_matmul_id_scratch asked for. */
static void matmul_id_writes_only_its_slice_and_scratch(void)
{
    for (int s = 0; s < n_tables; s++) {
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            for (int i = 0; i < 4; i++) {
                const uint64_t seed = test_seed(3000 + 64 * (uint64_t)t + (uint64_t)i);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                const int mode = i % SEL_COUNT;
                problem p;
                random_problem(&p, s, t, i == 0 ? 1 : tu_rng_range(&rng, 2, 24), mode, &rng);
                const int64_t R = p.R, S = p.T * p.n_used, ldy = R + tu_rng_range(&rng, 1, 5);
                const int64_t r0 = tu_rng_range(&rng, 0, R - 1), r1 = tu_rng_range(&rng, r0 + 1, R);
                const int64_t extra = 3; /* rows past the used ones */
                float *y = sentinel_buffer((S + extra) * ldy);
                const size_t misalign = (size_t)tu_rng_range(&rng, 0, 63);
                const int rc = run_id(&p, y, ldy, r0, r1, 0, p.T, misalign);
                TU_CHECK(rc == 0,
                         SHAPE_FMT ": pl_matmul_id returned %d (-2: wrote outside its scratch)",
                         SHAPE_ARGS(&p, seed, mode), rc);
                int64_t wrong = -1;
                for (int64_t i2 = 0; i2 < (S + extra) * ldy && wrong < 0; i2++) {
                    const int64_t r = i2 % ldy;
                    const int inside = i2 / ldy < S && r >= r0 && r < r1;
                    if ((bits(y[i2]) == SENTINEL) == inside) wrong = i2;
                }
                TU_CHECK(wrong < 0,
                         SHAPE_FMT " rows [%" PRId64 ", %" PRId64 ") ldy %" PRId64
                                   " scratch +%zu: y[%" PRId64 "] (row %" PRId64 " of %" PRId64
                                   " used, r %" PRId64 ") %s",
                         SHAPE_ARGS(&p, seed, mode), r0, r1, ldy, misalign, wrong, wrong / ldy, S,
                         wrong % ldy,
                         wrong / ldy < S && wrong % ldy >= r0 && wrong % ldy < r1
                             ? "was not written"
                             : "was written");
                free(y);
                free_problem(&p);
            }
        }
    }
}

/* The same bits whatever the row split (random cuts run last first) and whatever batch a token
 * is in (random chunks of tokens, and every token alone: decode). */
static void matmul_id_slice_and_batch_invariant(void)
{
    for (int s = 0; s < n_tables; s++) {
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            for (int i = 0; i < 2; i++) {
                const uint64_t seed = test_seed(4000 + 64 * (uint64_t)t + (uint64_t)i);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                const int mode = i == 0 ? SEL_RANDOM : (int)tu_rng_range(&rng, 1, SEL_COUNT - 1);
                problem p;
                random_problem(&p, s, t, i == 0 ? 17 : tu_rng_range(&rng, 2, 40), mode, &rng);
                const int64_t R = p.R, T = p.T, U = p.n_used, S = T * U;
                float *full = sentinel_buffer(S * R), *y = sentinel_buffer(S * R);
                int ok = run_id(&p, full, R, 0, R, 0, T, 0) == 0;
                /* slices: random cuts over [0, R), last first */
                int64_t cut = R;
                while (cut > 0) {
                    const int64_t lo = tu_rng_range(&rng, 0, cut - 1);
                    ok &= run_id(&p, y, R, lo, cut, 0, T, 0) == 0;
                    cut = lo;
                }
                int64_t d = first_bit_difference(y, R, full, R, S, 0, R);
                TU_CHECK(ok && d < 0,
                         SHAPE_FMT ": split by rows, y[t=%" PRId64 "][u=%" PRId64 "][r=%" PRId64
                                   "] differs from the one-slice result",
                         SHAPE_ARGS(&p, seed, mode), d / 1000000 / U, d / 1000000 % U, d % 1000000);
                /* batches: random chunks of tokens, then every token alone */
                for (int pass = 0; pass < 2; pass++) {
                    for (int64_t i2 = 0; i2 < S * R; i2++) y[i2] = 0.0f;
                    for (int64_t t0 = 0; t0 < T;) {
                        const int64_t n = pass ? 1 : tu_rng_range(&rng, 1, T - t0);
                        ok &= run_id(&p, y + t0 * U * R, R, 0, R, t0, n, 0) == 0;
                        t0 += n;
                    }
                    d = first_bit_difference(y, R, full, R, S, 0, R);
                    TU_CHECK(ok && d < 0,
                             SHAPE_FMT ": %s, y[t=%" PRId64 "][u=%" PRId64 "][r=%" PRId64
                                       "] differs from the whole batch",
                             SHAPE_ARGS(&p, seed, mode),
                             pass ? "every token alone" : "random token chunks", d / 1000000 / U,
                             d / 1000000 % U, d % 1000000);
                }
                free(full);
                free(y);
                free_problem(&p);
            }
        }
    }
}

/* An id outside [0, n_expert) anywhere (the last slot: after every other expert could have
 * run) or an argument out of range: -1 and y untouched; T = 0, n_used = 0 and an empty slice:
 * 0 and y untouched; pl_matmul_id_scratch says SIZE_MAX where the arguments are out of range or
 * the size overflows, and T = 1 needs less than a batch. */
static void matmul_id_rejects_bad_ids_and_arguments_writing_nothing(void)
{
    const uint64_t seed = test_seed(5000);
    tu_rng rng;
    tu_rng_init(&rng, seed);
    problem p;
    make_problem(&p, 0, PL_TYPE_Q8_0, 6, 2, 64, 5, 4, SEL_RANDOM, &rng);
    const int64_t R = p.R, T = p.T, U = p.n_used, S = T * U, E = p.n_expert;
    float *y = sentinel_buffer(S * R);
    const size_t need = pl_matmul_id_scratch(T, U, E, p.mx_row, 0, R);
    TU_CHECK(need != SIZE_MAX && need > pl_matmul_id_scratch(1, U, E, p.mx_row, 0, R),
             "scratch for T %" PRId64 ": %zu, for T 1: %zu", T, need,
             pl_matmul_id_scratch(1, U, E, p.mx_row, 0, R));
    void *scratch = malloc(need);
    const unsigned char *w = mm_w(&p), *x = mm_x(&p);
    const size_t xr = p.mx_row, wr = p.mw_row, we = p.mw_expert;
    const int64_t K = p.K;
    static const int32_t bad_ids[] = {-1, 6, 7, INT32_MIN, INT32_MAX};
    for (size_t b = 0; b < sizeof bad_ids / sizeof bad_ids[0]; b++) {
        for (int empty = 0; empty < 2; empty++) {
            const int32_t keep = p.ids[S - 1];
            p.ids[S - 1] = bad_ids[b];
            const int rc = pl_matmul_id(p.mm, y, R, w, wr, we, E, x, xr, p.ids, U, K, empty ? 2 : 0,
                                        empty ? 2 : R, T, scratch);
            p.ids[S - 1] = keep;
            TU_CHECK(rc == -1, "seed %" PRIu64 ": id %d in the last slot%s: returned %d", seed,
                     bad_ids[b], empty ? " (empty slice)" : "", rc);
        }
    }
    const struct {
        const char *what;
        int rc;
        int64_t ldy, E, U, K, r0, r1, T;
        size_t xr;
        int null; /* 1 mm, 2 y, 3 w, 4 x, 5 ids, 6 scratch */
    } cases[] = {
        {"n_used -1", -1, R, E, -1, K, 0, R, T, xr, 0},
        {"T -1", -1, R, E, U, K, 0, R, -1, xr, 0},
        {"n_expert 0", -1, R, 0, U, K, 0, R, T, xr, 0},
        {"n_expert -3", -1, R, -3, U, K, 0, R, T, xr, 0},
        {"K 0", -1, R, E, U, 0, 0, R, T, xr, 0},
        {"r0 -1", -1, R, E, U, K, -1, R, T, xr, 0},
        {"r1 < r0", -1, R, E, U, K, 3, 2, T, xr, 0},
        {"ldy < r1", -1, R - 1, E, U, K, 0, R, T, xr, 0},
        {"x_row_bytes 0", -1, R, E, U, K, 0, R, T, 0, 0},
        {"T n_used overflows", -1, R, E, 4, K, 0, R, INT64_MAX / 2, xr, 0},
        {"mm NULL", -1, R, E, U, K, 0, R, T, xr, 1},
        {"y NULL", -1, R, E, U, K, 0, R, T, xr, 2},
        {"w NULL", -1, R, E, U, K, 0, R, T, xr, 3},
        {"x NULL", -1, R, E, U, K, 0, R, T, xr, 4},
        {"ids NULL", -1, R, E, U, K, 0, R, T, xr, 5},
        {"scratch NULL", -1, R, E, U, K, 0, R, T, xr, 6},
        {"T 0", 0, R, E, U, K, 0, R, 0, xr, 0},
        {"n_used 0", 0, R, E, 0, K, 0, R, T, xr, 0},
        {"empty slice", 0, R, E, U, K, 2, 2, T, xr, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int n = cases[c].null;
        const int rc = pl_matmul_id(n == 1 ? NULL : p.mm, n == 2 ? NULL : y, cases[c].ldy,
                                    n == 3 ? NULL : w, wr, we, cases[c].E, n == 4 ? NULL : x,
                                    cases[c].xr, n == 5 ? NULL : p.ids, cases[c].U, cases[c].K,
                                    cases[c].r0, cases[c].r1, cases[c].T, n == 6 ? NULL : scratch);
        TU_CHECK(rc == cases[c].rc, "seed %" PRIu64 ": %s: returned %d, want %d", seed,
                 cases[c].what, rc, cases[c].rc);
    }
    int64_t touched = -1;
    for (int64_t i = 0; i < S * R && touched < 0; i++)
        if (bits(y[i]) != SENTINEL) touched = i;
    TU_CHECK(touched < 0, "seed %" PRIu64 ": a refused or empty call wrote y[%" PRId64 "]", seed,
             touched);
    TU_CHECK(pl_matmul_id_scratch(INT64_MAX / 2, 8, 64, 300, 0, 100) == SIZE_MAX &&
                 pl_matmul_id_scratch(1 << 20, 8, 64, SIZE_MAX / 2, 0, 100) == SIZE_MAX &&
                 pl_matmul_id_scratch(1 << 20, 8, 64, 300, 0, INT64_MAX / 2) == SIZE_MAX,
             "pl_matmul_id_scratch sizes past SIZE_MAX");
    free(scratch);
    free(y);
    free_problem(&p);
}

int main(void)
{
    n_tables = qi_load_tables(tables, MAX_TABLES);
    if (n_tables < 1) return 1;
    n_tables = qi_add_repacked_views(tables, repacked, view_names, n_tables, MAX_TABLES);
    static const tu_test tests[] = {
        {"matmul_id_row_is_dense_matmul_of_its_token_alone",
         matmul_id_row_is_dense_matmul_of_its_token_alone},
        {"matmul_id_within_bound_of_gsl", matmul_id_within_bound_of_gsl},
        {"matmul_id_writes_only_its_slice_and_scratch",
         matmul_id_writes_only_its_slice_and_scratch},
        {"matmul_id_slice_and_batch_invariant", matmul_id_slice_and_batch_invariant},
        {"matmul_id_rejects_bad_ids_and_arguments_writing_nothing",
         matmul_id_rejects_bad_ids_and_arguments_writing_nothing},
        {NULL, NULL},
    };
    printf("kernel sets under test:");
    for (int s = 0; s < n_tables; s++) printf(" %s", tables[s].k.name);
    printf("\n");
    return tu_run("matmul_id", tests);
}
