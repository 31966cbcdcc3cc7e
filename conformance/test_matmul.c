/* test_matmul.c — the matmul kernel of every supported kernel set, for every weight type:
 * the dot-product error bound against a GSL double reference, batch and slice invariance,
 * writes confined to the slice, NaN propagation. Replay a failure with PLUMB_SEED=<seed>. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant_inputs.h"
#include "refs/refs.h"
#include "testutil.h"

#define MAX_TABLES 8
static pl_kernel_table tables[MAX_TABLES];
static int n_tables;
/* A set with repacked layouts is tested twice: as it is, and as a "<set>+repack" view whose
 * matmul packs the operands' weights first and runs the repacked kernel (repacked[s]). */
static const struct pl_kernels *repacked[MAX_TABLES];
static char view_names[MAX_TABLES][32];

/* Worst observed |y - y_ref| / bound per type, for the summary printed after the run. */
static struct {
    double worst, worst_big; /* all K; K >= 1024 only */
    int64_t outputs;
} stats[PL_TYPE_COUNT];

static const struct pl_type_traits *tr(pl_type t)
{
    return pl_type_traits_of(t);
}

static size_t row_bytes(pl_type t, int64_t n)
{
    return (size_t)(n / tr(t)->block_size) * tr(t)->block_bytes;
}

static uint64_t test_seed(uint64_t salt)
{
    return tu_seed() * 0x9e3779b97f4a7c15ull + salt;
}

/* W (R x K, weight type) and X (T x K, its dot type), quantized by the set under test,
 * with padded row strides so a kernel that ignores the stride reads the wrong data. */
typedef struct operands {
    pl_type wt, xt;
    int64_t K, R, T;
    size_t wrb, xrb;
    unsigned char *w, *x;
} operands;

/* wpat/xpat: a qi_pattern for every row, or -1 to cycle through all patterns by row. */
static void make_operands(operands *o, const struct pl_kernels *k, pl_type t, int64_t K, int64_t R,
                          int64_t T, int wpat, int xpat, tu_rng *rng)
{
    static const size_t pads[3] = {0, 4, 68};
    o->wt = t;
    o->xt = tr(t)->dot_type;
    o->K = K;
    o->R = R;
    o->T = T;
    o->wrb = row_bytes(o->wt, K) + pads[tu_rng_range(rng, 0, 2)];
    o->xrb = row_bytes(o->xt, K) + pads[tu_rng_range(rng, 0, 2)];
    o->w = calloc((size_t)R, o->wrb);
    o->x = calloc((size_t)T, o->xrb);
    float *row = malloc(sizeof(float) * (size_t)K);
    const int64_t wblock = tr(o->wt)->block_size > 1 ? tr(o->wt)->block_size : 32;
    const int64_t xblock = tr(o->xt)->block_size > 1 ? tr(o->xt)->block_size : 32;
    for (int64_t r = 0; r < R; r++) {
        qi_fill(row, K, wpat >= 0 ? wpat : (int)(r % QI_COUNT), wblock, rng);
        k->quantize_row[o->wt](o->w + (size_t)r * o->wrb, row, K);
    }
    for (int64_t i = 0; i < T; i++) {
        qi_fill(row, K, xpat >= 0 ? xpat : (int)(i % QI_COUNT), xblock, rng);
        k->quantize_row[o->xt](o->x + (size_t)i * o->xrb, row, K);
    }
    free(row);
}

static void free_operands(operands *o)
{
    free(o->w);
    free(o->x);
}

static const pl_repack *repack_of(const struct pl_kernels *k, pl_type t)
{
    for (int s = 0; s < n_tables; s++)
        if (k == &tables[s].k) return repacked[s] ? repacked[s]->repack[t] : NULL;
    return NULL;
}

static void run(const struct pl_kernels *k, const operands *o, float *y, int64_t ldy, int64_t r0,
                int64_t r1, int64_t t0, int64_t T)
{
    const pl_repack *rp = repack_of(k, o->wt);
    if (!rp) {
        k->matmul[o->wt](y, ldy, o->w, o->wrb, o->x + (size_t)t0 * o->xrb, o->xrb, o->K, r0, r1, T);
        return;
    }
    void *packed = malloc(rp->size(o->K, o->R) + 1);
    rp->pack(packed, o->w, o->wrb, o->K, o->R);
    const uint8_t *x = o->x + (size_t)t0 * o->xrb;
    size_t xrb = o->xrb;
    uint8_t *xp = NULL;
    if (rp->x_prep) { /* the layout's own activation rows, made from the dot type's */
        xrb = rp->x_row(o->K);
        TU_CHECK(xrb <= PL_REPACK_X_ROW_MAX(o->K), "set %s: prepared row of K %lld is %zu bytes",
                 k->name, (long long)o->K, xrb);
        xp = malloc(xrb * (size_t)T + 1);
        for (int64_t t = 0; t < T; t++)
            rp->x_prep(xp + (size_t)t * xrb, x + (size_t)t * o->xrb, o->K);
        x = xp;
    }
    rp->matmul(y, ldy, packed, 0, x, xrb, o->K, r0, r1, T);
    free(xp);
    free(packed);
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

#define SENTINEL 0x7fa5a5a5u /* a NaN no kernel computes */

static float *sentinel_buffer(int64_t n)
{
    float *y = malloc(sizeof(float) * (size_t)n);
    const uint32_t s = SENTINEL;
    for (int64_t i = 0; i < n; i++) memcpy(&y[i], &s, sizeof s);
    return y;
}

/* Runs the set on all R rows and T tokens and checks every output against the bound.
 * Returns 1 if all outputs pass. */
static int check_bound(const struct pl_kernels *k, const operands *o, uint64_t seed,
                       const char *what)
{
    const int64_t K = o->K, R = o->R, T = o->T, ldy = R + 3;
    float *y = sentinel_buffer(T * ldy);
    double *yref = malloc(sizeof(double) * (size_t)(T * R));
    double *mag = malloc(sizeof(double) * (size_t)(T * R));
    run(k, o, y, ldy, 0, R, 0, T);
    const int rc = ref_matmul(o->wt, o->w, o->wrb, o->x, o->xrb, K, R, T, yref, mag);
    TU_CHECK(rc == 0, "ref_matmul failed for type %s", tr(o->wt)->name);
    const double c = qi_matmul_c(o->wt), eta = qi_matmul_eta(o->wt);
    double worst = 0.0;
    int64_t wt_ = -1, wr = -1, bad_pad = -1;
    for (int64_t t = 0; t < T && rc == 0; t++) {
        for (int64_t r = 0; r < R; r++) {
            const double bound = c * 0x1p-24 * (double)K * mag[t * R + r] + (double)K * eta;
            const double err = fabs((double)y[t * ldy + r] - yref[t * R + r]);
            double ratio = err / bound; /* bound > 0: it has the K eta term */
            if (isnan(ratio)) ratio = INFINITY;
            if (ratio > worst) {
                worst = ratio;
                wt_ = t;
                wr = r;
            }
        }
        for (int64_t r = R; r < ldy; r++)
            if (bits(y[t * ldy + r]) != SENTINEL) bad_pad = t * ldy + r;
    }
    if (rc == 0) {
        stats[o->wt].worst = fmax(stats[o->wt].worst, worst);
        if (K >= 1024) stats[o->wt].worst_big = fmax(stats[o->wt].worst_big, worst);
    }
    stats[o->wt].outputs += R * T;
    int ok = rc == 0 && worst <= 1.0;
    TU_CHECK(ok,
             "set %s type %s %s seed %" PRIu64 " K %" PRId64 " R %" PRId64 " T %" PRId64
             ": worst y[t=%" PRId64 "][r=%" PRId64 "] = %.9g, ref %.17g, |err| %.3g > bound "
             "c u K sum|ab| + K eta = %.3g (c %.3g)",
             k->name, tr(o->wt)->name, what, seed, K, R, T, wt_, wr,
             wt_ >= 0 ? y[wt_ * ldy + wr] : 0.0, wt_ >= 0 ? yref[wt_ * R + wr] : 0.0,
             wt_ >= 0 ? fabs((double)y[wt_ * ldy + wr] - yref[wt_ * R + wr]) : 0.0,
             wt_ >= 0 ? c * 0x1p-24 * (double)K * mag[wt_ * R + wr] + (double)K * eta : 0.0, c);
    TU_CHECK(bad_pad < 0,
             "set %s type %s %s seed %" PRIu64 ": wrote y[%" PRId64 "], outside the R = %" PRId64
             " rows of a row of ldy = %" PRId64,
             k->name, tr(o->wt)->name, what, seed, bad_pad, R, ldy);
    ok = ok && bad_pad < 0;
    free(y);
    free(yref);
    free(mag);
    return ok;
}

static int64_t block_of(pl_type t)
{
    return tr(t)->block_size;
}

static void matmul_within_bound_of_gsl_on_edge_shapes(void)
{
    /* K in block multiples (1, 2, 3, 7) and the largest real K; R = 1 and odd primes;
     * T = 1, a few, 17 and 64. */
    static const struct {
        int64_t kb, R, T; /* K = kb blocks, or 14336 when kb = 0 */
    } shapes[] = {{1, 1, 1},  {1, 7, 3}, {2, 3, 17}, {3, 5, 2}, {7, 11, 4},
                  {2, 5, 64}, {0, 1, 1}, {0, 3, 5},  {0, 2, 9}};
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
                const int64_t K = shapes[i].kb ? shapes[i].kb * block_of(t) : 14336;
                const uint64_t seed = test_seed(1000 + 64 * (uint64_t)t + i);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                operands o;
                make_operands(&o, k, t, K, shapes[i].R, shapes[i].T, QI_GAUSS, QI_GAUSS, &rng);
                check_bound(k, &o, seed, "edge shape");
                free_operands(&o);
            }
        }
    }
}

static void matmul_within_bound_of_gsl_on_random_shapes(void)
{
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            for (int i = 0; i < 16; i++) {
                const uint64_t seed = test_seed(2000 + 64 * (uint64_t)t + (uint64_t)i);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                const int64_t K = block_of(t) > 1
                                      ? block_of(t) * tu_rng_range(&rng, 1, 2048 / block_of(t))
                                      : tu_rng_range(&rng, 1, 2048);
                const int64_t R = tu_rng_range(&rng, 1, 13);
                const int64_t T = tu_rng_range(&rng, 0, 9) == 0 ? 64 : tu_rng_range(&rng, 1, 17);
                operands o;
                make_operands(&o, k, t, K, R, T, QI_GAUSS, QI_GAUSS, &rng);
                check_bound(k, &o, seed, "random shape");
                free_operands(&o);
            }
        }
    }
}

/* Rows of W and of X cycle through every pattern, so each (weight, activation) pattern
 * pair meets in one output. */
static void matmul_within_bound_on_stress_inputs(void)
{
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            for (int rep = 0; rep < 3; rep++) {
                const uint64_t seed = test_seed(3000 + 8 * (uint64_t)t + (uint64_t)rep);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                const int64_t K = rep == 2 ? 768 : 512;
                operands o;
                make_operands(&o, k, t, K, QI_COUNT, QI_COUNT, -1, -1, &rng);
                check_bound(k, &o, seed, "stress patterns (row r, token t: pattern r % 7, t % 7)");
                free_operands(&o);
            }
        }
    }
}

/* Overwrites the scale fields of every block of a row with finite f16 (or, for Q8_K, f32)
 * values in [2^-10, 2^4) (MXFP4: an E8M0 byte for 2^-12 .. 2^3, or one of the three smallest),
 * and makes Q8_K bsums agree with the quants. */
static void sanitize_row(pl_type t, unsigned char *row, int64_t K, tu_rng *rng)
{
    const size_t bb = tr(t)->block_bytes;
    for (int64_t b = 0; b < K / tr(t)->block_size; b++) {
        unsigned char *blk = row + (size_t)b * bb;
        size_t at[2] = {0, 0};
        int n = 1;
        switch (t) {
        case PL_TYPE_Q4_1:
        case PL_TYPE_Q5_1:
        case PL_TYPE_Q4_K:
        case PL_TYPE_Q5_K:
            at[1] = 2;
            n = 2;
            break;
        case PL_TYPE_Q6_K:
            at[0] = 208;
            break;
        case PL_TYPE_Q2_K: /* d, dmin after scales[16] and qs[64] */
            at[0] = 80;
            at[1] = 82;
            n = 2;
            break;
        case PL_TYPE_Q3_K: /* d after hmask[32], qs[64] and scales[12] */
            at[0] = 108;
            break;
        case PL_TYPE_MXFP4: /* now and then e = 0..2: 2^-128 .. 2^-126, dw dx subnormal */
            blk[0] = (uint8_t)(tu_rng_range(rng, 0, 7) ? tu_rng_range(rng, 115, 130)
                                                       : tu_rng_range(rng, 0, 2));
            continue;
        case PL_TYPE_Q8_K: {
            const float d = (float)ldexp(1.0 + tu_rng_uniform(rng), (int)tu_rng_range(rng, -10, 3));
            memcpy(blk, &d, 4);
            pl_block_q8_k *q = (pl_block_q8_k *)blk;
            for (int j = 0; j < 16; j++) {
                int sum = 0;
                for (int l = 0; l < 16; l++) sum += q->qs[16 * j + l];
                q->bsums[j] = (int16_t)sum;
            }
            continue;
        }
        default:
            break;
        }
        for (int i = 0; i < n; i++) {
            const uint16_t h =
                (uint16_t)((tu_rng_u64(rng) & 0x8000u) |
                           (uint16_t)(tu_rng_range(rng, 5, 18) << 10) | (tu_rng_u64(rng) & 0x3ffu));
            memcpy(blk + at[i], &h, 2);
        }
    }
}

/* Every byte of W and X random, then each row's scales made finite (sanitize_row). */
static void arbitrary_bits(operands *o, tu_rng *rng)
{
    for (size_t i = 0; i < (size_t)o->R * o->wrb; i++) o->w[i] = (unsigned char)tu_rng_u64(rng);
    for (size_t i = 0; i < (size_t)o->T * o->xrb; i++) o->x[i] = (unsigned char)tu_rng_u64(rng);
    for (int64_t r = 0; r < o->R; r++) sanitize_row(o->wt, o->w + (size_t)r * o->wrb, o->K, rng);
    for (int64_t i = 0; i < o->T; i++) sanitize_row(o->xt, o->x + (size_t)i * o->xrb, o->K, rng);
}

/* Random bits in every quant, sub-block scale and min, including values the quantizers
 * never write (q8 -128, q6_k scale -128, every 6-bit scale at 63), with finite scales. */
static void matmul_within_bound_on_arbitrary_quant_bits(void)
{
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            if (block_of(t) == 1) continue; /* float weights: no bit fields */
            for (int rep = 0; rep < 4; rep++) {
                const uint64_t seed = test_seed(8000 + 8 * (uint64_t)t + (uint64_t)rep);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                const int64_t K = block_of(t) * tu_rng_range(&rng, 1, 8);
                operands o;
                make_operands(&o, k, t, K, 5, 7, QI_GAUSS, QI_GAUSS, &rng);
                arbitrary_bits(&o, &rng);
                check_bound(k, &o, seed, "arbitrary quant bits");
                free_operands(&o);
            }
        }
    }
}

static int64_t first_bit_difference(const float *a, int64_t lda, const float *b, int64_t ldb,
                                    int64_t T, int64_t r0, int64_t r1)
{
    for (int64_t t = 0; t < T; t++)
        for (int64_t r = r0; r < r1; r++)
            if (bits(a[t * lda + r]) != bits(b[t * ldb + r])) return t * 1000000 + r;
    return -1;
}

static void matmul_batch_invariant_n_1_to_17_and_64(void)
{
    static const int64_t batch[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 64};
    const int64_t R = 5, NT = 80;
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            const uint64_t seed = test_seed(4000 + (uint64_t)t);
            tu_rng rng;
            tu_rng_init(&rng, seed);
            const int64_t K = block_of(t) > 1 ? 3 * block_of(t) : 101;
            operands o;
            make_operands(&o, k, t, K, R, NT, QI_GAUSS, -1, &rng);
            float *alone = sentinel_buffer(NT * R), *y = sentinel_buffer(64 * R);
            for (int64_t i = 0; i < NT; i++) run(k, &o, alone + i * R, R, 0, R, i, 1);
            for (size_t b = 0; b < sizeof batch / sizeof batch[0]; b++) {
                const int64_t n = batch[b], t0 = tu_rng_range(&rng, 0, NT - n);
                run(k, &o, y, R, 0, R, t0, n);
                const int64_t d = first_bit_difference(y, R, alone + t0 * R, R, n, 0, R);
                TU_CHECK(d < 0,
                         "set %s type %s seed %" PRIu64 " K %" PRId64 " R %" PRId64
                         ": token %" PRId64 " row %" PRId64 " in a batch of %" PRId64
                         " (tokens %" PRId64 "..) differs from it computed alone",
                         k->name, tr(t)->name, seed, K, R, t0 + d / 1000000, d % 1000000, n, t0);
            }
            free(alone);
            free(y);
            free_operands(&o);
        }
    }
}

static void matmul_slice_invariant(void)
{
    const int64_t R = 13, T = 17;
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            const uint64_t seed = test_seed(5000 + (uint64_t)t);
            tu_rng rng;
            tu_rng_init(&rng, seed);
            const int64_t K = block_of(t) > 1 ? 2 * block_of(t) : 67;
            operands o;
            make_operands(&o, k, t, K, R, T, -1, QI_GAUSS, &rng);
            float *full = sentinel_buffer(T * R), *y = sentinel_buffer(T * R);
            run(k, &o, full, R, 0, R, 0, T);
            for (int split = 0; split < 3; split++) {
                const uint32_t sv = SENTINEL;
                for (int64_t i = 0; i < T * R; i++) memcpy(&y[i], &sv, sizeof sv);
                if (split == 0) { /* one row at a time, last first */
                    for (int64_t r = R - 1; r >= 0; r--) run(k, &o, y, R, r, r + 1, 0, T);
                } else {                      /* random cuts, the slices in reverse order */
                    int64_t cuts[14], nc = 0; /* R + 1 */
                    cuts[nc++] = 0;
                    for (int64_t r = 1; r < R; r++)
                        if (tu_rng_range(&rng, 0, 2) == 0) cuts[nc++] = r;
                    cuts[nc] = R;
                    for (int64_t c = nc - 1; c >= 0; c--)
                        run(k, &o, y, R, cuts[c], cuts[c + 1], 0, T);
                }
                const int64_t d = first_bit_difference(y, R, full, R, T, 0, R);
                TU_CHECK(d < 0,
                         "set %s type %s seed %" PRIu64 " K %" PRId64 " split %d: "
                         "y[t=%" PRId64 "][r=%" PRId64 "] differs from the one-slice result",
                         k->name, tr(t)->name, seed, K, split, d / 1000000, d % 1000000);
            }
            free(full);
            free(y);
            free_operands(&o);
        }
    }
}

static void matmul_writes_only_its_slice(void)
{
    const int64_t R = 13, T = 5, ldy = 16, r0 = 3, r1 = 9;
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            const uint64_t seed = test_seed(6000 + (uint64_t)t);
            tu_rng rng;
            tu_rng_init(&rng, seed);
            operands o;
            make_operands(&o, k, t, block_of(t) > 1 ? block_of(t) : 9, R, T, QI_GAUSS, QI_GAUSS,
                          &rng);
            float *y = sentinel_buffer(T * ldy);
            run(k, &o, y, ldy, r0, r1, 0, T);
            int64_t wrong = -1;
            for (int64_t i = 0; i < T * ldy && wrong < 0; i++) {
                const int64_t r = i % ldy;
                const int inside = r >= r0 && r < r1;
                if ((bits(y[i]) == SENTINEL) == inside) wrong = i;
            }
            TU_CHECK(wrong < 0,
                     "set %s type %s seed %" PRIu64 ": rows [%" PRId64 ", %" PRId64
                     ") with ldy %" PRId64 ": y[%" PRId64 "] (t %" PRId64 ", r %" PRId64 ") %s",
                     k->name, tr(t)->name, seed, r0, r1, ldy, wrong, wrong / ldy, wrong % ldy,
                     wrong % ldy >= r0 && wrong % ldy < r1 ? "was not written" : "was written");
            free(y);
            free_operands(&o);
        }
    }
}

/* A NaN weight makes its whole output row NaN, a NaN activation its whole token. */
static void matmul_propagates_nan(void)
{
    const int64_t R = 5, T = 4, wbad = 2, xbad = 1;
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            const uint64_t seed = test_seed(7000 + (uint64_t)t);
            tu_rng rng;
            tu_rng_init(&rng, seed);
            const int64_t K = block_of(t) > 1 ? 2 * block_of(t) : 40;
            operands o;
            make_operands(&o, k, t, K, R, T, QI_GAUSS, QI_GAUSS, &rng);
            float *row = malloc(sizeof(float) * (size_t)K);
            qi_fill(row, K, QI_GAUSS, 32, &rng);
            row[tu_rng_range(&rng, 0, K - 1)] = NAN;
            k->quantize_row[o.wt](o.w + (size_t)wbad * o.wrb, row, K);
            qi_fill(row, K, QI_GAUSS, 32, &rng);
            row[tu_rng_range(&rng, 0, K - 1)] = NAN;
            k->quantize_row[o.xt](o.x + (size_t)xbad * o.xrb, row, K);
            float y[4 * 5];
            run(k, &o, y, R, 0, R, 0, T);
            int64_t wrong = -1;
            for (int64_t i = 0; i < T * R && wrong < 0; i++) {
                const int want_nan = i / R == xbad || i % R == wbad;
                if ((isnan(y[i]) != 0) != want_nan) wrong = i;
            }
            TU_CHECK(wrong < 0,
                     "set %s type %s seed %" PRIu64 " K %" PRId64 ": NaN in weight row %" PRId64
                     " and token %" PRId64 ", but y[t=%" PRId64 "][r=%" PRId64 "] = %g",
                     k->name, tr(t)->name, seed, K, wbad, xbad, wrong / R, wrong % R,
                     wrong >= 0 ? y[wrong] : 0.0);
            free(row);
            free_operands(&o);
        }
    }
}

/* Runs view (a set, or a "+repack" view of own) on random shapes of type t, R not a multiple
 * of the group, random slices, and checks its outputs are the bits of against's matmul. */
static void check_repacked_bits(const struct pl_kernels *view, const struct pl_kernels *own,
                                const struct pl_kernels *against, pl_type t, uint64_t seed0,
                                int64_t max_kb, int64_t max_t)
{
    /* every token count 1..max_t in turn (at least 12 shapes): each tile size a layout has,
     * and the remainders after its full tiles */
    const int n = max_t > 12 ? (int)max_t : 12;
    for (int i = 0; i < n; i++) {
        const uint64_t seed = test_seed(seed0 + 64 * (uint64_t)t + (uint64_t)i);
        tu_rng rng;
        tu_rng_init(&rng, seed);
        const int64_t K = block_of(t) * tu_rng_range(&rng, 1, max_kb);
        const int64_t R = tu_rng_range(&rng, 1, 40), T = 1 + i % max_t;
        const int64_t r0 = tu_rng_range(&rng, 0, R - 1), r1 = tu_rng_range(&rng, r0 + 1, R);
        operands o;
        make_operands(&o, own, t, K, R, T, -1, -1, &rng);
        float *a = sentinel_buffer(T * R), *b = sentinel_buffer(T * R);
        against->matmul[t](a, R, o.w, o.wrb, o.x, o.xrb, K, r0, r1, T);
        run(view, &o, b, R, r0, r1, 0, T);
        const int64_t d = first_bit_difference(b, R, a, R, T, 0, R);
        TU_CHECK(d < 0,
                 "set %s type %s seed %" PRIu64 " K %" PRId64 " R %" PRId64 " T %" PRId64
                 " rows [%" PRId64 ", %" PRId64 "): y[t=%" PRId64 "][r=%" PRId64
                 "] differs from %s's matmul",
                 view->name, tr(t)->name, seed, K, R, T, r0, r1, d / 1000000, d % 1000000,
                 against->name);
        free(a);
        free(b);
        free_operands(&o);
    }
}

/* DESIGN.md: a repacked layout is a permutation of the same blocks and its per-element
 * sum order is the set's own matmul's, so a session gives the same logits with repacking on
 * or off. */
static void matmul_repacked_is_bit_identical_to_own_matmul(void)
{
    for (int s = 0; s < n_tables; s++) {
        if (!repacked[s]) continue;
        for (int ti = 0; ti < QI_N_TYPES; ti++)
            if (repacked[s]->repack[qi_types[ti]])
                check_repacked_bits(&tables[s].k, repacked[s], repacked[s], qi_types[ti], 7000, 64,
                                    6);
    }
}

/* avx512's repack_k.c forms each row's super-block sums exactly and its float terms with
 * ref's operations, so its K-quant (and IQ4) layouts give ref's bits, not only the set's own. */
static void matmul_repacked_k_quants_are_bit_identical_to_ref(void)
{
    const struct pl_kernels *ref = NULL;
    for (int s = 0; s < n_tables; s++)
        if (strcmp(tables[s].k.name, "ref") == 0) ref = &tables[s].k;
    TU_CHECK(ref != NULL, "the ref set is under test");
    static const pl_type ktypes[] = {PL_TYPE_Q4_K, PL_TYPE_Q5_K,   PL_TYPE_Q6_K,   PL_TYPE_Q2_K,
                                     PL_TYPE_Q3_K, PL_TYPE_IQ4_XS, PL_TYPE_IQ4_NL, PL_TYPE_MXFP4};
    for (int s = 0; ref && s < n_tables; s++) {
        if (!repacked[s] || strcmp(repacked[s]->name, "avx512") != 0) continue;
        for (size_t ti = 0; ti < sizeof ktypes / sizeof ktypes[0]; ti++)
            if (repacked[s]->repack[ktypes[ti]])
                check_repacked_bits(&tables[s].k, repacked[s], ref, ktypes[ti], 9000, 24, 17);
    }
}

/* Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4: every set forms each block's integer sums exactly and its
 * float term with ref's operations (kernels/README.md), so every set, repacked or not, gives
 * ref's bits: on quantized rows and on arbitrary quant bits (q8 -128 activations, every scale
 * and level), random shapes and slices. */
static void matmul_low_bit_types_are_bit_identical_to_ref(void)
{
    const struct pl_kernels *ref = NULL;
    for (int s = 0; s < n_tables; s++)
        if (strcmp(tables[s].k.name, "ref") == 0) ref = &tables[s].k;
    TU_CHECK(ref != NULL, "the ref set is under test");
    static const pl_type ltypes[] = {PL_TYPE_Q2_K, PL_TYPE_Q3_K, PL_TYPE_IQ4_NL, PL_TYPE_IQ4_XS,
                                     PL_TYPE_MXFP4};
    for (int s = 0; ref && s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        if (k == ref) continue;
        for (size_t ti = 0; ti < sizeof ltypes / sizeof ltypes[0]; ti++) {
            const pl_type t = ltypes[ti];
            for (int i = 0; i < 17; i++) { /* T = 1..17: every tile size and remainder */
                const uint64_t seed = test_seed(12000 + 64 * (uint64_t)t + (uint64_t)i);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                const int64_t K = block_of(t) * tu_rng_range(&rng, 1, block_of(t) == 32 ? 96 : 12);
                const int64_t R = tu_rng_range(&rng, 1, 40), T = 1 + i;
                const int64_t r0 = tu_rng_range(&rng, 0, R - 1), r1 = tu_rng_range(&rng, r0 + 1, R);
                operands o;
                make_operands(&o, k, t, K, R, T, -1, -1, &rng);
                const int arbitrary = i % 2;
                if (arbitrary) arbitrary_bits(&o, &rng);
                float *a = sentinel_buffer(T * R), *b = sentinel_buffer(T * R);
                ref->matmul[t](a, R, o.w, o.wrb, o.x, o.xrb, K, r0, r1, T);
                run(k, &o, b, R, r0, r1, 0, T);
                const int64_t d = first_bit_difference(b, R, a, R, T, 0, R);
                TU_CHECK(d < 0,
                         "set %s type %s seed %" PRIu64 " K %" PRId64 " R %" PRId64 " T %" PRId64
                         " rows [%" PRId64 ", %" PRId64 ") %s: y[t=%" PRId64 "][r=%" PRId64
                         "] %a, ref %a",
                         k->name, tr(t)->name, seed, K, R, T, r0, r1,
                         arbitrary ? "arbitrary bits" : "quantized", d / 1000000, d % 1000000,
                         (double)b[(d / 1000000) * R + d % 1000000],
                         (double)a[(d / 1000000) * R + d % 1000000]);
                free(a);
                free(b);
                free_operands(&o);
            }
        }
    }
}

/* Matmul t of sets a and b on the same operands, 16 random shapes and slices (seeds from
 * seed0): quantized inputs, and on odd i arbitrary quant bits (q8 -128 weights and
 * activations, every nibble, scales sanitized); wants a's bits equal to b's. */
static void check_same_bits(const struct pl_kernels *a, const struct pl_kernels *b, pl_type t,
                            uint64_t seed0)
{
    for (int i = 0; i < 16; i++) {
        const uint64_t seed = test_seed(seed0 + 64 * (uint64_t)t + (uint64_t)i);
        tu_rng rng;
        tu_rng_init(&rng, seed);
        const int64_t K = block_of(t) * tu_rng_range(&rng, 1, 24);
        const int64_t R = tu_rng_range(&rng, 1, 12), T = tu_rng_range(&rng, 1, 9);
        const int64_t r0 = tu_rng_range(&rng, 0, R - 1), r1 = tu_rng_range(&rng, r0 + 1, R);
        operands o;
        make_operands(&o, b, t, K, R, T, -1, -1, &rng);
        const int arbitrary = i % 2;
        if (arbitrary) arbitrary_bits(&o, &rng);
        float *ya = sentinel_buffer(T * R), *yb = sentinel_buffer(T * R);
        a->matmul[t](ya, R, o.w, o.wrb, o.x, o.xrb, K, r0, r1, T);
        b->matmul[t](yb, R, o.w, o.wrb, o.x, o.xrb, K, r0, r1, T);
        const int64_t d = first_bit_difference(ya, R, yb, R, T, 0, R);
        TU_CHECK(d < 0,
                 "type %s seed %" PRIu64 " K %" PRId64 " R %" PRId64 " T %" PRId64 " rows [%" PRId64
                 ", %" PRId64 ") %s: y[t=%" PRId64 "][r=%" PRId64 "] %s %a, %s %a",
                 tr(t)->name, seed, K, R, T, r0, r1, arbitrary ? "arbitrary bits" : "quantized",
                 d / 1000000, d % 1000000, a->name, (double)ya[(d / 1000000) * R + d % 1000000],
                 b->name, (double)yb[(d / 1000000) * R + d % 1000000]);
        free(ya);
        free(yb);
        free_operands(&o);
    }
}

/* The table named name, or NULL where it is not under test. */
static const struct pl_kernels *table_named(const char *name)
{
    for (int s = 0; s < n_tables; s++)
        if (strcmp(tables[s].k.name, name) == 0) return &tables[s].k;
    return NULL;
}

/* The wasm128r set's quantized matmuls take the same exact integer sums by the relaxed dot
 * (kernels/wasm128/simd.h), so their outputs are wasm128's bits: on quantized inputs and on
 * arbitrary quant bits, random shapes and slices. Skipped where the sets are not compiled (no
 * SIMDe). */
static void matmul_wasm128r_is_bit_identical_to_wasm128(void)
{
    const struct pl_kernels *plain = table_named("wasm128"), *relaxed = table_named("wasm128r");
    TU_CHECK((plain == NULL) == (relaxed == NULL), "wasm128 and wasm128r come together");
    if (!plain || !relaxed) return;
    /* the types whose matmul matmul_q.c implements (float weights: the same functions) */
    static const pl_type qtypes[] = {PL_TYPE_Q4_0, PL_TYPE_Q4_1, PL_TYPE_Q5_0,   PL_TYPE_Q5_1,
                                     PL_TYPE_Q8_0, PL_TYPE_Q4_K, PL_TYPE_Q5_K,   PL_TYPE_Q6_K,
                                     PL_TYPE_Q2_K, PL_TYPE_Q3_K, PL_TYPE_IQ4_NL, PL_TYPE_IQ4_XS,
                                     PL_TYPE_MXFP4};
    for (size_t ti = 0; ti < sizeof qtypes / sizeof qtypes[0]; ti++) {
        const pl_type t = qtypes[ti];
        TU_CHECK(relaxed->matmul[t] != plain->matmul[t], "type %s: wasm128r has its own matmul",
                 tr(t)->name);
        check_same_bits(relaxed, plain, t, 11000);
    }
}

/* wasm128's super-block types, IQ4_NL and MXFP4 form each block's exact integer sum and ref's float
 * term, added in block order (kernels/wasm128/matmul_q.c): ref's bits, for wasm128 and
 * wasm128r. */
static void matmul_wasm128_k_quants_and_iq4_are_bit_identical_to_ref(void)
{
    const struct pl_kernels *ref = table_named("ref");
    TU_CHECK(ref != NULL, "the ref set is under test");
    static const pl_type types[] = {PL_TYPE_Q2_K, PL_TYPE_Q3_K,   PL_TYPE_Q4_K,   PL_TYPE_Q5_K,
                                    PL_TYPE_Q6_K, PL_TYPE_IQ4_NL, PL_TYPE_IQ4_XS, PL_TYPE_MXFP4};
    static const char *const sets[] = {"wasm128", "wasm128r"};
    for (size_t si = 0; ref && si < sizeof sets / sizeof sets[0]; si++) {
        const struct pl_kernels *k = table_named(sets[si]);
        if (!k) continue; /* not compiled (no SIMDe) */
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            TU_CHECK(k->matmul[types[ti]] != NULL, "%s: type %s has a matmul", k->name,
                     tr(types[ti])->name);
            if (k->matmul[types[ti]]) check_same_bits(k, ref, types[ti], 13000 + 4096 * si);
        }
    }
}

static void print_summary(void)
{
    printf(
        "\nmatmul error vs GSL dgemm: worst |y - y_ref| / (c u K sum|a_i b_i| + K eta) per type\n");
    printf("%-6s %8s %14s %18s %10s\n", "type", "c", "worst ratio", "worst, K >= 1024", "outputs");
    for (int ti = 0; ti < QI_N_TYPES; ti++) {
        const pl_type t = qi_types[ti];
        printf("%-6s %8.3f %14.3e %18.3e %10" PRId64 "\n", tr(t)->name, qi_matmul_c(t),
               stats[t].worst, stats[t].worst_big, stats[t].outputs);
    }
}

int main(void)
{
    n_tables = qi_load_tables(tables, MAX_TABLES);
    if (n_tables < 1) return 1;
    n_tables = qi_add_repacked_views(tables, repacked, view_names, n_tables, MAX_TABLES);
    static const tu_test tests[] = {
        {"matmul_within_bound_of_gsl_on_edge_shapes", matmul_within_bound_of_gsl_on_edge_shapes},
        {"matmul_within_bound_of_gsl_on_random_shapes",
         matmul_within_bound_of_gsl_on_random_shapes},
        {"matmul_within_bound_on_stress_inputs", matmul_within_bound_on_stress_inputs},
        {"matmul_within_bound_on_arbitrary_quant_bits",
         matmul_within_bound_on_arbitrary_quant_bits},
        {"matmul_batch_invariant_n_1_to_17_and_64", matmul_batch_invariant_n_1_to_17_and_64},
        {"matmul_slice_invariant", matmul_slice_invariant},
        {"matmul_writes_only_its_slice", matmul_writes_only_its_slice},
        {"matmul_propagates_nan", matmul_propagates_nan},
        {"matmul_repacked_is_bit_identical_to_own_matmul",
         matmul_repacked_is_bit_identical_to_own_matmul},
        {"matmul_repacked_k_quants_are_bit_identical_to_ref",
         matmul_repacked_k_quants_are_bit_identical_to_ref},
        {"matmul_low_bit_types_are_bit_identical_to_ref",
         matmul_low_bit_types_are_bit_identical_to_ref},
        {"matmul_wasm128r_is_bit_identical_to_wasm128",
         matmul_wasm128r_is_bit_identical_to_wasm128},
        {"matmul_wasm128_k_quants_and_iq4_are_bit_identical_to_ref",
         matmul_wasm128_k_quants_and_iq4_are_bit_identical_to_ref},
        {NULL, NULL},
    };
    printf("kernel sets under test:");
    for (int s = 0; s < n_tables; s++) printf(" %s", tables[s].k.name);
    printf("\n");
    const int rc = tu_run("matmul", tests);
    print_summary();
    return rc;
}
