/* fuzz_quant.c — harness: random blocks of every weight type through quantize_row,
 * dequantize_row and matmul of every kernel set this CPU supports, against the reference set.
 * Not a precision test (conformance/test_matmul.c holds the GSL bounds); this one hunts UB.
 *
 * Oracles: quantizers and dequantizers of every set are bit-exact with ref; matmul is within
 * twice the conformance bound of ref (both are within it of the exact result) and non-finite
 * exactly where ref is; a matmul never writes outside its slice; row slices and single tokens
 * give bit-identical results (batch invariance); the non-finite rules of kernels/ref/quant.c:
 * a block holding NaN or Inf quantizes to a NaN block, which dequantizes to all NaN, and a
 * non-finite weight or activation makes every output it touches non-finite. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_data.h"
#include "plumb.h"
#include "registry.h"

#define MAX_SETS 8
#define MAX_R    10 /* > PL_REPACK_ROWS: a full interleaved group and a padded one */
#define MAX_T    3
#define SENTINEL 0x7fa5a5a5u /* a NaN no kernel computes */

static pl_kernel_table tables[MAX_SETS]; /* [0] is ref */
static int n_tables;
static uint32_t types[PL_TYPE_COUNT];
static int n_types;

/* c of |y - y_ref| <= c u K sum|a_i b_i| + K eta (kernels/types.h PL_TYPES, the bound
 * conformance/test_matmul.c holds every set to). */
#define MATMUL_C(T, t, block, bytes, dot, mm, weight, fallback, c) [PL_TYPE_##T] = c,
static const double matmul_c[PL_TYPE_COUNT] = {PL_TYPES(MATMUL_C)};
#undef MATMUL_C

/* Inputs seen of each type: the replay fails when the corpus leaves a listed type out. */
static uint64_t seen[PL_TYPE_COUNT];

static double c_of(uint32_t t)
{
    return t < PL_TYPE_COUNT ? matmul_c[t] : 0.0;
}

void fuzz_init(void)
{
    pl_error err = {0};
    FUZZ_CHECK(pl_kernels_resolve(&tables[0], &pl_kernels_ref, &err) == PL_OK, "ref: %s", err.msg);
    n_tables = 1;
    for (int i = 0; i < pl_kernel_set_count() && n_tables < MAX_SETS; i++) {
        const struct pl_kernels *k = pl_kernel_set(i);
        if (k == &pl_kernels_ref || !k->supported()) continue;
        FUZZ_CHECK(pl_kernels_resolve(&tables[n_tables], k, &err) == PL_OK, "%s: %s", k->name,
                   err.msg);
        n_tables++;
    }
    for (uint32_t t = 0; t < PL_TYPE_COUNT; t++)
        if (pl_type_supported(t)) types[n_types++] = t;
}

int fuzz_replay_done(void)
{
    int missing = 0;
#define SEEN(T, ...)                                                                               \
    if (!seen[PL_TYPE_##T]) {                                                                      \
        fprintf(                                                                                   \
            stderr,                                                                                \
            "fuzz_quant: no input of the corpus exercises type %s (kernels/types.h PL_TYPES): "    \
            "add seeds for it (fuzz/mkseeds.c)\n",                                                 \
            #T);                                                                                   \
        missing++;                                                                                 \
    }
    PL_TYPES(SEEN)
#undef SEEN
    return missing ? 1 : 0;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Bit-identical, NaN payloads aside: which of two NaN operands an add or fma returns depends
 * on the instruction form the compiler picks, so two NaNs count as the same result. */
static int same_or_both_nan(float a, float b)
{
    return fbits(a) == fbits(b) || (isnan(a) && isnan(b));
}

static int all_finite(const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* q = quantize(x) with every set, bit-exact with ref; then the NaN-block rule. */
static void quantize_all(uint32_t t, void *q, const float *x, int64_t rows, int64_t K,
                         size_t row_bytes)
{
    const int64_t bs = pl_type_block_size(t);
    uint8_t *tmp = malloc((size_t)rows * row_bytes);
    float *back = malloc((size_t)K * sizeof *back);
    FUZZ_CHECK(tmp && back, "malloc");
    for (int s = 0; s < n_tables; s++) {
        uint8_t *dst = s == 0 ? q : tmp;
        for (int64_t r = 0; r < rows; r++)
            tables[s].k.quantize_row[t](dst + r * row_bytes, x + r * K, K);
        if (s > 0)
            FUZZ_CHECK(memcmp(q, tmp, (size_t)rows * row_bytes) == 0,
                       "set %s quantize %s differs from ref (K %lld)", tables[s].k.name,
                       pl_type_name(t), (long long)K);
    }
    for (int64_t r = 0; r < rows && bs > 1; r++) {
        tables[0].k.dequantize_row[t](back, (const uint8_t *)q + r * row_bytes, K);
        for (int64_t b = 0; b < K; b += bs) {
            if (all_finite(x + r * K + b, bs)) continue;
            for (int64_t j = 0; j < bs; j++)
                FUZZ_CHECK(isnan(back[b + j]),
                           "%s: block %lld of row %lld holds a non-finite value but element %lld "
                           "dequantizes to %g, not NaN",
                           pl_type_name(t), (long long)(b / bs), (long long)r, (long long)j,
                           (double)back[b + j]);
        }
    }
    free(back);
    free(tmp);
}

/* Dequantized rows with every set, bit-exact with ref. */
static float *dequantize_all(uint32_t t, const uint8_t *q, int64_t rows, int64_t K,
                             size_t row_bytes)
{
    float *y = malloc((size_t)(rows * K) * sizeof *y);
    float *tmp = malloc((size_t)(rows * K) * sizeof *tmp);
    FUZZ_CHECK(y && tmp, "malloc");
    for (int s = 0; s < n_tables; s++) {
        float *dst = s == 0 ? y : tmp;
        for (int64_t r = 0; r < rows; r++)
            tables[s].k.dequantize_row[t](dst + r * K, q + r * row_bytes, K);
        if (s > 0)
            FUZZ_CHECK(memcmp(y, tmp, (size_t)(rows * K) * sizeof *y) == 0,
                       "set %s dequantize %s differs from ref", tables[s].k.name, pl_type_name(t));
    }
    free(tmp);
    return y;
}

static float *sentinels(int64_t n)
{
    float *y = malloc((size_t)n * sizeof *y);
    FUZZ_CHECK(y != NULL, "malloc");
    const uint32_t s = SENTINEL;
    for (int64_t i = 0; i < n; i++) memcpy(&y[i], &s, sizeof s);
    return y;
}

void fuzz_one(const uint8_t *data, size_t size)
{
    fuzz_data d = fuzz_data_init(data, size);
    const uint32_t wt = types[fuzz_data_u32_range(&d, 0, (uint32_t)n_types - 1)];
    const uint32_t xt = pl_type_traits_of(wt)->dot_type;
    seen[wt]++;
    const int64_t bs = pl_type_block_size(wt);
    /* up to 20 blocks of 32: the SIMD sets take groups of 8 blocks, then a tail */
    const int64_t K = bs > 1 ? bs * (int64_t)fuzz_data_u32_range(&d, 1, bs == 32 ? 20 : 3)
                             : (int64_t)fuzz_data_u32_range(&d, 1, 80);
    const int64_t R = fuzz_data_u32_range(&d, 1, MAX_R), T = fuzz_data_u32_range(&d, 1, MAX_T);
    const int raw = fuzz_data_bool(&d); /* weight bytes from the input, else floats quantized */
    const size_t pad = fuzz_data_u32_range(&d, 0, 1) * 4;
    size_t wrb = 0, xrb = 0;
    FUZZ_CHECK(pl_type_row_bytes(wt, K, &wrb, NULL) == PL_OK, "row bytes");
    FUZZ_CHECK(pl_type_row_bytes(xt, K, &xrb, NULL) == PL_OK, "row bytes");
    wrb += pad; /* a padded stride: a kernel that ignores it reads the wrong row */

    uint8_t *w = calloc((size_t)R, wrb);
    float *wf = malloc((size_t)(R * K) * sizeof *wf);
    float *xf = malloc((size_t)(T * K) * sizeof *xf);
    uint8_t *x = calloc((size_t)T, xrb);
    FUZZ_CHECK(w && wf && xf && x, "malloc");
    if (raw) {
        for (int64_t r = 0; r < R; r++) fuzz_data_fill(&d, w + r * wrb, wrb - pad);
        memset(wf, 0, (size_t)(R * K) * sizeof *wf);
    } else {
        fuzz_data_fill(&d, wf, (size_t)(R * K) * sizeof *wf);
        uint8_t *packed = malloc((size_t)R * (wrb - pad));
        FUZZ_CHECK(packed != NULL, "malloc");
        quantize_all(wt, packed, wf, R, K, wrb - pad);
        for (int64_t r = 0; r < R; r++) memcpy(w + r * wrb, packed + r * (wrb - pad), wrb - pad);
        free(packed);
    }
    fuzz_data_fill(&d, xf, (size_t)(T * K) * sizeof *xf);
    quantize_all(xt, x, xf, T, K, xrb);

    float *wd = dequantize_all(wt, w, R, K, wrb);
    float *xd = dequantize_all(xt, x, T, K, xrb);

    /* The weight's min per element (Q4_1/Q5_1: w = d q + m; Q2_K: w = d sc q - dmin m), so
     * the bound's magnitude counts |d q| + |m| as conformance/test_matmul.c does: the kernels
     * sum the two terms apart, and their cancellation is not a kernel's rounding error. 0 for
     * the other types (Q4_K and Q5_K are bit-identical to ref in every set). */
    double *mins = calloc((size_t)(R * K), sizeof *mins);
    FUZZ_CHECK(mins != NULL, "malloc");
    if (wt == PL_TYPE_Q4_1 || wt == PL_TYPE_Q5_1)
        for (int64_t r = 0; r < R; r++)
            for (int64_t i = 0; i < K; i++) {
                pl_f16 m;
                memcpy(&m, w + r * wrb + (size_t)(i / 32) * pl_type_traits_of(wt)->block_bytes + 2,
                       sizeof m);
                mins[r * K + i] = (double)pl_f16_to_f32(m);
            }
    if (wt == PL_TYPE_Q2_K) /* scales[16] | qs[64] | d | dmin: the min's 4 bits, high nibble */
        for (int64_t r = 0; r < R; r++)
            for (int64_t i = 0; i < K; i++) {
                const uint8_t *b = w + r * wrb + (size_t)(i / 256) * sizeof(pl_block_q2_k);
                pl_f16 dmin;
                memcpy(&dmin, b + 82, sizeof dmin);
                mins[r * K + i] = -(double)pl_f16_to_f32(dmin) * (b[(i % 256) / 16] >> 4);
            }

    /* Reference outputs and magnitudes for the bound. */
    const int64_t ldy = R + 2;
    float *yref = sentinels(T * ldy);
    tables[0].k.matmul[wt](yref, ldy, w, wrb, x, xrb, K, 0, R, T);
    /* eta: 2^-130 where dw * dx may underflow (Q8_K's float scale, MXFP4's 2^(e - 128)) */
    const double c = c_of(wt),
                 eta = xt == PL_TYPE_Q8_K || wt == PL_TYPE_MXFP4 ? 0x1p-130 : 0x1p-149;
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        float *y = sentinels(T * ldy);
        k->matmul[wt](y, ldy, w, wrb, x, xrb, K, 0, R, T);
        for (int64_t t = 0; t < T; t++) {
            for (int64_t r = R; r < ldy; r++)
                FUZZ_CHECK(fbits(y[t * ldy + r]) == SENTINEL, "set %s %s wrote y[%lld] past R",
                           k->name, pl_type_name(wt), (long long)(t * ldy + r));
            for (int64_t r = 0; r < R; r++) {
                const float v = y[t * ldy + r], vr = yref[t * ldy + r];
                FUZZ_CHECK(fbits(v) != SENTINEL, "set %s %s left y[%lld][%lld] unwritten", k->name,
                           pl_type_name(wt), (long long)t, (long long)r);
                double mag = 0.0;
                for (int64_t i = 0; i < K; i++)
                    mag += (fabs((double)wd[r * K + i] - mins[r * K + i]) +
                            fabs((double)mins[r * K + i])) *
                           fabs((double)xd[t * K + i]);
                if (isfinite(v) && isfinite(vr) && isfinite(mag)) {
                    const double bound = 2 * (c * 0x1p-24 * (double)K * mag + (double)K * eta);
                    FUZZ_CHECK(fabs((double)v - (double)vr) <= bound,
                               "set %s %s K %lld: y[%lld][%lld] = %.9g, ref %.9g, bound %.3g",
                               k->name, pl_type_name(wt), (long long)K, (long long)t, (long long)r,
                               (double)v, (double)vr, bound);
                } else if (isfinite(mag) && mag < 0x1p127) {
                    /* No partial sum can overflow (each is <= mag (1 + K u) < FLT_MAX), so a
                     * non-finite result must come from the inputs, the same in every set.
                     * Past that, the summation order decides inf, -inf, NaN or a finite
                     * value, outside any set's contract. */
                    FUZZ_CHECK(isnan(v) == isnan(vr) && (isnan(v) || v == vr),
                               "set %s %s: y[%lld][%lld] = %g where ref has %g", k->name,
                               pl_type_name(wt), (long long)t, (long long)r, (double)v, (double)vr);
                }
            }
        }
        /* Batch invariance: each token alone and each row slice, bit for bit. */
        float *y1 = sentinels(ldy);
        for (int64_t t = 0; t < T; t++) {
            for (int64_t r0 = 0; r0 < R; r0++) {
                k->matmul[wt](y1, ldy, w, wrb, x + t * xrb, xrb, K, r0, r0 + 1, 1);
                FUZZ_CHECK(same_or_both_nan(y1[r0], y[t * ldy + r0]),
                           "set %s %s: y[%lld][%lld] alone %a != in the batch %a", k->name,
                           pl_type_name(wt), (long long)t, (long long)r0, (double)y1[r0],
                           (double)y[t * ldy + r0]);
            }
        }
        free(y1);
        /* A repacked layout (kernels.h pl_repack) gives the set's own results, bit for bit. */
        const pl_repack *rp = k->repack[wt];
        if (rp) {
            uint8_t *packed = malloc(rp->size(K, R) + 1);
            float *yp = sentinels(T * ldy);
            FUZZ_CHECK(packed && yp, "malloc");
            rp->pack(packed, w, wrb, K, R);
            const int64_t r0 = fuzz_data_u32_range(&d, 0, (uint32_t)R - 1);
            const uint8_t *xr = x;
            size_t xprb = xrb;
            uint8_t *xp = NULL;
            if (rp->x_prep) { /* the layout's own activation rows */
                xprb = rp->x_row(K);
                FUZZ_CHECK(xprb <= PL_REPACK_X_ROW_MAX(K), "prepared row of %zu bytes", xprb);
                xp = malloc(xprb * (size_t)T + 1);
                FUZZ_CHECK(xp != NULL, "malloc");
                for (int64_t t = 0; t < T; t++)
                    rp->x_prep(xp + (size_t)t * xprb, (const uint8_t *)x + (size_t)t * xrb, K);
                xr = xp;
            }
            rp->matmul(yp, ldy, packed, wrb, xr, xprb, K, r0, R, T);
            free(xp);
            for (int64_t t = 0; t < T; t++)
                for (int64_t r = 0; r < ldy; r++)
                    FUZZ_CHECK(r < r0 || r >= R ? fbits(yp[t * ldy + r]) == SENTINEL
                                                : same_or_both_nan(yp[t * ldy + r], y[t * ldy + r]),
                               "set %s %s repacked, rows [%lld, %lld): y[%lld][%lld] = %a, its own "
                               "matmul %a",
                               k->name, pl_type_name(wt), (long long)r0, (long long)R, (long long)t,
                               (long long)r, (double)yp[t * ldy + r], (double)y[t * ldy + r]);
            free(yp);
            free(packed);
        }
        free(y);
    }
    /* Non-finite inputs never give a plausible number. */
    for (int64_t t = 0; t < T; t++)
        for (int64_t r = 0; r < R; r++) {
            const float v = yref[t * ldy + r];
            if (!all_finite(xf + t * K, K))
                FUZZ_CHECK(!isfinite(v), "%s: activation row %lld is not finite but y = %g",
                           pl_type_name(wt), (long long)t, (double)v);
            if (!raw && !all_finite(wf + r * K, K))
                FUZZ_CHECK(!isfinite(v), "%s: weight row %lld is not finite but y = %g",
                           pl_type_name(wt), (long long)r, (double)v);
        }
    free(yref);
    free(mins);
    free(xd);
    free(wd);
    free(x);
    free(xf);
    free(wf);
    free(w);
}
