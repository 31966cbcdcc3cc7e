/* test_quant.c — row quantizers and dequantizers of every kernel set this CPU supports:
 * round-trip error, bit-exactness with ref, the NaN/Inf policy, exact decoding, known vectors.
 * Not the matmul suite (test_matmul.c). Replay a failure with PLUMB_SEED=<seed>. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plumb.h"
#include "quant_inputs.h"
#include "refs/refs.h"
#include "testutil.h"

#define MAX_TABLES 8
static pl_kernel_table tables[MAX_TABLES];
static int n_tables;

/* Round-trip bounds, as documented in kernels/ref/quant.c: rms error over rms(x) on N(0, 1)
 * data (a statistic: ~15% above what 64k samples show), and the largest error in a block
 * over the block's largest |x|. The max bounds of F16/BF16 and the 32-blocks follow from the
 * rounding rule (half a step, or a full step where ggml clamps the top level, plus the f16
 * rounding of d and m); those of the K-quants and IQ4 types are measured, with margin. */
/* F32 is exact: no entry (set 0). Every other type of kernels/types.h's PL_TYPES needs one:
 * every_listed_type_is_in_every_quant_table fails without it. */
static const struct {
    double rms, max;
    int set;
} bounds[PL_TYPE_COUNT] = {
    [PL_TYPE_F16] = {0x1p-12, 0x1p-11, 1}, [PL_TYPE_BF16] = {0x1p-9, 0x1p-8, 1},
    [PL_TYPE_Q4_0] = {0.100, 0.130, 1},    [PL_TYPE_Q4_1] = {0.090, 0.070, 1},
    [PL_TYPE_Q5_0] = {0.050, 0.065, 1},    [PL_TYPE_Q5_1] = {0.045, 0.035, 1},
    [PL_TYPE_Q8_0] = {0.0062, 0.0045, 1},  [PL_TYPE_Q4_K] = {0.082, 0.150, 1},
    [PL_TYPE_Q5_K] = {0.042, 0.080, 1},    [PL_TYPE_Q6_K] = {0.021, 0.035, 1},
    [PL_TYPE_Q8_K] = {0.0082, 0.0040, 1},  [PL_TYPE_Q2_K] = {0.34, 0.50, 1},
    [PL_TYPE_Q3_K] = {0.17, 0.32, 1},      [PL_TYPE_IQ4_NL] = {0.086, 0.16, 1},
    [PL_TYPE_IQ4_XS] = {0.086, 0.16, 1},   [PL_TYPE_MXFP4] = {0.13, 0.20, 1},
};

/* Smallest block amax for which the scale is a normal number, so that the relative bound
 * alone applies (below it the absolute floor takes over, and the stats skip the block). */
static double normal_min(pl_type t)
{
    switch (t) {
    case PL_TYPE_F16:
        return 0x1p-14;
    case PL_TYPE_BF16:
        return 0x1p-126;
    case PL_TYPE_Q8_K:
        return 0x1p-119;
    case PL_TYPE_Q4_K:
    case PL_TYPE_Q5_K:
    case PL_TYPE_Q6_K:
    case PL_TYPE_Q2_K: /* d ~ amax / 23 */
    case PL_TYPE_Q3_K: /* d ~ amax / 128 */
        return 0x1p-3;
    case PL_TYPE_IQ4_XS: /* d ~ amax / (127 * 32) */
        return 0x1p-1;
    case PL_TYPE_IQ4_NL: /* d ~ amax / 127 */
        return 0x1p-6;
    case PL_TYPE_MXFP4: /* e0 >= 1: amax > 12 * 2^-129 (below, e = 0 and values round to 0) */
        return 0x1p-124;
    default:
        return 0x1p-7;
    }
}

/* Absolute error allowed on top of the relative bound, for blocks so small that the f16
 * scale underflows (a K-quant scale is d * sc with 6-bit sc and up to 5-bit q). */
static double abs_floor(pl_type t)
{
    switch (t) {
    case PL_TYPE_F16:
        return 0x1p-25;
    case PL_TYPE_BF16:
        return 0x1p-134;
    case PL_TYPE_Q8_K:
        return 0x1p-121; /* d = max / 127 has no reciprocal below ~2^-121 */
    case PL_TYPE_Q4_K:
    case PL_TYPE_Q5_K:
    case PL_TYPE_Q6_K:
    case PL_TYPE_Q2_K:
    case PL_TYPE_Q3_K:
    case PL_TYPE_IQ4_XS: /* d * 32 * 127 */
        return 63.0 * 64.0 * 0x1p-24;
    default:
        return 128.0 * 0x1p-24;
    }
}

/* Worst values seen, for the summary table printed after the run. */
static struct {
    double rms, max, stress;
    int seen;
} stats[PL_TYPE_COUNT];

static const struct pl_type_traits *tr(pl_type t)
{
    return pl_type_traits_of(t);
}

static size_t row_bytes(pl_type t, int64_t n)
{
    return (size_t)(n / tr(t)->block_size) * tr(t)->block_bytes;
}

static int bound_of(pl_type t, double *rms, double *max)
{
    if ((unsigned)t >= PL_TYPE_COUNT || !bounds[t].set) return 0;
    *rms = bounds[t].rms;
    *max = bounds[t].max;
    return 1;
}

static uint64_t test_seed(uint64_t salt)
{
    return tu_seed() * 0x9e3779b97f4a7c15ull + salt;
}

/* Largest error in each block of `block` elements relative to that block's largest |x|,
 * with the type's absolute floor added to the allowance; returns the worst ratio to bound. */
static double worst_block_ratio(pl_type t, const float *x, const float *y, int64_t n, int64_t block,
                                double rel_bound, double *worst_rel)
{
    double worst = 0.0;
    for (int64_t b = 0; b < n; b += block) {
        double amax = 0.0, emax = 0.0;
        for (int64_t j = b; j < b + block; j++) {
            amax = fmax(amax, fabs(x[j]));
            emax = fmax(emax, fabs((double)y[j] - x[j]));
        }
        if (amax >= normal_min(t)) *worst_rel = fmax(*worst_rel, emax / amax);
        worst = fmax(worst, emax / (rel_bound * amax + abs_floor(t)));
    }
    return worst;
}

static void quant_roundtrip_error_within_documented_bounds(void)
{
    const int64_t n = 8192;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    void *q = malloc(row_bytes(PL_TYPE_F32, n));
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            double rms_b, max_b;
            if (!bound_of(t, &rms_b, &max_b)) continue; /* F32: exact */
            const uint64_t seed = test_seed(100 + (uint64_t)t);
            tu_rng rng;
            tu_rng_init(&rng, seed);
            double se = 0, sx = 0, max_rel = 0, worst = 0;
            for (int row = 0; row < 8; row++) {
                qi_fill(x, n, QI_GAUSS, 256, &rng);
                k->quantize_row[t](q, x, n);
                k->dequantize_row[t](y, q, n);
                for (int64_t i = 0; i < n; i++) {
                    se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
                    sx += (double)x[i] * x[i];
                }
                /* f16/bf16 are judged per element, the block types per block */
                const int64_t block = tr(t)->block_size;
                worst = fmax(worst, worst_block_ratio(t, x, y, n, block, max_b, &max_rel));
            }
            const double rms = sqrt(se / sx);
            stats[t].rms = fmax(stats[t].rms, rms);
            stats[t].max = fmax(stats[t].max, max_rel);
            stats[t].seen = 1;
            TU_CHECK(rms <= rms_b,
                     "set %s type %s seed %" PRIu64 " n %" PRId64
                     ": rms error %.6g of rms(x) exceeds the documented %.6g",
                     k->name, tr(t)->name, seed, n, rms, rms_b);
            TU_CHECK(worst <= 1.0,
                     "set %s type %s seed %" PRIu64 " n %" PRId64
                     ": block max error %.6g of block amax exceeds the documented %.6g",
                     k->name, tr(t)->name, seed, n, max_rel, max_b);
        }
    }
    free(x);
    free(y);
    free(q);
}

static void quant_stress_inputs_roundtrip_finite_and_bounded(void)
{
    const int64_t n = 1024;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    void *q = malloc(row_bytes(PL_TYPE_F32, n));
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            double rms_b, max_b;
            if (!bound_of(t, &rms_b, &max_b)) continue;
            /* Non-Gaussian blocks may sit at the worst case of the rounding rule. */
            const double stress_b = 1.25 * max_b;
            for (int p = 1; p < QI_COUNT; p++) {
                for (int rep = 0; rep < 4; rep++) {
                    const uint64_t seed =
                        test_seed(200 + 16 * (uint64_t)t + (uint64_t)p) + (uint64_t)rep;
                    tu_rng rng;
                    tu_rng_init(&rng, seed);
                    const int64_t block = tr(t)->block_size > 1 ? tr(t)->block_size : 32;
                    qi_fill(x, n, p, block, &rng);
                    k->quantize_row[t](q, x, n);
                    k->dequantize_row[t](y, q, n);
                    int64_t bad = -1;
                    for (int64_t i = 0; i < n && bad < 0; i++)
                        if (!isfinite(y[i])) bad = i;
                    TU_CHECK(bad < 0,
                             "set %s type %s pattern %s seed %" PRIu64 ": element %" PRId64
                             " dequantized to %g (input %g)",
                             k->name, tr(t)->name, qi_pattern_name(p), seed, bad,
                             bad >= 0 ? y[bad] : 0.0, bad >= 0 ? x[bad] : 0.0);
                    double rel = 0;
                    const double worst =
                        worst_block_ratio(t, x, y, n, tr(t)->block_size, stress_b, &rel);
                    stats[t].stress = fmax(stats[t].stress, rel);
                    TU_CHECK(worst <= 1.0,
                             "set %s type %s pattern %s seed %" PRIu64
                             ": block max error %.6g of block amax, allowed %.6g + %.3g abs",
                             k->name, tr(t)->name, qi_pattern_name(p), seed, rel, stress_b,
                             abs_floor(t));
                }
            }
        }
    }
    free(x);
    free(y);
    free(q);
}

static void quant_zero_input_roundtrips_to_exact_zero(void)
{
    const int64_t n = 512;
    float x[512], y[512];
    static unsigned char q[512 * 4];
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            for (int neg = 0; neg < 2; neg++) {
                for (int64_t i = 0; i < n; i++) x[i] = neg ? -0.0f : 0.0f;
                k->quantize_row[t](q, x, n);
                k->dequantize_row[t](y, q, n);
                int64_t bad = -1;
                for (int64_t i = 0; i < n && bad < 0; i++)
                    if (y[i] != 0.0f) bad = i;
                TU_CHECK(bad < 0, "set %s type %s: %s0 dequantized to %g at %" PRId64, k->name,
                         tr(t)->name, neg ? "-" : "+", bad >= 0 ? y[bad] : 0.0, bad);
            }
        }
    }
}

static int same_float_bits(float a, float b)
{
    if (isnan(a) && isnan(b)) return 1;
    return memcmp(&a, &b, sizeof a) == 0;
}

/* The Q4_K/Q5_K/Q6_K searches compare weighted errors that differ in their last bits: a set that
 * rounds one product differently (a fused multiply-add) picks another grid only now and then,
 * so these three types are compared over 1024 super-blocks of every pattern, not 3. */
static void k_quant_searches_bit_exact_with_ref_over_many_blocks(void)
{
    enum { NB = 1024, N = NB * PL_QK_K };
    float *x = malloc(N * sizeof *x);
    unsigned char *qa = malloc(NB * sizeof(pl_block_q6_k)),
                  *qb = malloc(NB * sizeof(pl_block_q6_k));
    CU_ASSERT_FATAL(x && qa && qb);
    static const pl_type types[] = {PL_TYPE_Q4_K, PL_TYPE_Q5_K, PL_TYPE_Q6_K};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const pl_type t = types[ti];
        for (int p = 0; p < QI_COUNT; p++) {
            const uint64_t seed = test_seed(900 + 16 * (uint64_t)t + (uint64_t)p);
            tu_rng rng;
            tu_rng_init(&rng, seed);
            qi_fill(x, N, p, PL_QK_K, &rng);
            pl_kernels_ref.quantize_row[t](qb, x, N);
            for (int s = 0; s < n_tables; s++) {
                const struct pl_kernels *k = &tables[s].k;
                if (!k->quantize_row[t] || k->quantize_row[t] == pl_kernels_ref.quantize_row[t])
                    continue;
                memset(qa, 0xa5, NB * sizeof(pl_block_q6_k));
                k->quantize_row[t](qa, x, N);
                const size_t nbytes = row_bytes(t, N);
                size_t at = 0;
                while (at < nbytes && qa[at] == qb[at]) at++;
                TU_CHECK(at == nbytes,
                         "set %s type %s pattern %s seed %" PRIu64 ": byte %zu (block %zu) is "
                         "0x%02x, ref wrote 0x%02x",
                         k->name, tr(t)->name, qi_pattern_name(p), seed, at,
                         at / tr(t)->block_bytes, at < nbytes ? qa[at] : 0,
                         at < nbytes ? qb[at] : 0);
            }
        }
    }
    free(x);
    free(qa);
    free(qb);
}

static void quant_every_set_bit_exact_with_ref(void)
{
    const int64_t n = 768;
    float x[768], ya[768], yb[768];
    static unsigned char qa[768 * 4], qb[768 * 4];
    const struct pl_kernels *ref = &pl_kernels_ref;
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            for (int p = 0; p < QI_COUNT; p++) {
                const uint64_t seed = test_seed(300 + 16 * (uint64_t)t + (uint64_t)p);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                qi_fill(x, n, p, tr(t)->block_size > 1 ? tr(t)->block_size : 32, &rng);
                const double scale = ldexp(1.0, (int)tu_rng_range(&rng, -20, 20));
                for (int64_t i = 0; i < n; i++) x[i] = (float)(x[i] * scale);
                /* different garbage in each buffer: a byte left unwritten shows up */
                memset(qa, 0xa5, sizeof qa);
                memset(qb, 0x5a, sizeof qb);
                k->quantize_row[t](qa, x, n);
                ref->quantize_row[t](qb, x, n);
                const size_t nbytes = row_bytes(t, n);
                size_t at = 0;
                while (at < nbytes && qa[at] == qb[at]) at++;
                TU_CHECK(at == nbytes,
                         "set %s type %s pattern %s seed %" PRIu64
                         ": quantized byte %zu (block %zu) is 0x%02x, ref wrote 0x%02x",
                         k->name, tr(t)->name, qi_pattern_name(p), seed, at,
                         at / tr(t)->block_bytes, at < nbytes ? qa[at] : 0,
                         at < nbytes ? qb[at] : 0);
                k->dequantize_row[t](ya, qb, n);
                ref->dequantize_row[t](yb, qb, n);
                int64_t bad = -1;
                for (int64_t i = 0; i < n && bad < 0; i++)
                    if (!same_float_bits(ya[i], yb[i])) bad = i;
                TU_CHECK(bad < 0,
                         "set %s type %s pattern %s seed %" PRIu64 ": dequantized element %" PRId64
                         " is %a, ref gives %a",
                         k->name, tr(t)->name, qi_pattern_name(p), seed, bad,
                         bad >= 0 ? ya[bad] : 0.0, bad >= 0 ? yb[bad] : 0.0);
            }
        }
    }
}

/* Every dequantizer returns the exact value of each element rounded once to float: the
 * f16/f32 scales times small integers leave a single rounding (in the final subtraction or
 * product). Checked on random block bytes against refs/, an independent decoder. */
static void quant_dequantize_is_exact_value_rounded_once(void)
{
    const int64_t n = 1024;
    static unsigned char q[1024 * 4];
    float y[1024];
    double sc[1024], off[1024];
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            const uint64_t seed = test_seed(400 + (uint64_t)t);
            tu_rng rng;
            tu_rng_init(&rng, seed);
            for (int rep = 0; rep < 16; rep++) {
                for (size_t i = 0; i < sizeof q; i++) q[i] = (unsigned char)tu_rng_u64(&rng);
                k->dequantize_row[t](y, q, n);
                ref_dequantize(t, q, n, sc, off);
                int64_t bad = -1;
                for (int64_t i = 0; i < n && bad < 0; i++) {
                    const float want = (float)(sc[i] + off[i]);
                    if (!(isnan(want) ? isnan(y[i]) : y[i] == want)) bad = i;
                }
                TU_CHECK(bad < 0,
                         "set %s type %s seed %" PRIu64 " rep %d: element %" PRId64
                         " (block %" PRId64 ") dequantized to %a, exact value is %a",
                         k->name, tr(t)->name, seed, rep, bad,
                         bad >= 0 ? bad / tr(t)->block_size : 0, bad >= 0 ? y[bad] : 0.0,
                         bad >= 0 ? sc[bad] + off[bad] : 0.0);
            }
        }
    }
}

/* The documented NaN block: zero bytes but for NaN scales (kernels/ref/quant.c). Returns 0 for a
 * type this table does not know. */
static int nan_block(pl_type t, unsigned char *b)
{
    const uint16_t h = 0x7e00;
    memset(b, 0, tr(t)->block_bytes);
    switch (t) {
    case PL_TYPE_Q4_1:
    case PL_TYPE_Q5_1:
    case PL_TYPE_Q4_K:
    case PL_TYPE_Q5_K: /* d, then the min */
        memcpy(b, &h, 2);
        memcpy(b + 2, &h, 2);
        break;
    case PL_TYPE_Q4_0:
    case PL_TYPE_Q5_0:
    case PL_TYPE_Q8_0:
        memcpy(b, &h, 2);
        break;
    case PL_TYPE_Q6_K:
        memcpy(b + 208, &h, 2);
        break;
    case PL_TYPE_Q2_K: /* d, dmin after scales[16] and qs[64] */
        memcpy(b + 80, &h, 2);
        memcpy(b + 82, &h, 2);
        break;
    case PL_TYPE_Q3_K: /* d after hmask[32], qs[64], scales[12] */
        memcpy(b + 108, &h, 2);
        break;
    case PL_TYPE_IQ4_NL:
    case PL_TYPE_IQ4_XS:
        memcpy(b, &h, 2);
        break;
    case PL_TYPE_MXFP4: /* e = 255, E8M0's NaN */
        b[0] = 255;
        break;
    case PL_TYPE_Q8_K: {
        const float f = NAN;
        memcpy(b, &f, 4);
        break;
    }
    default:
        return 0;
    }
    return 1;
}

static void quant_nonfinite_input_gives_nan_block(void)
{
    static const float bad_values[3] = {NAN, INFINITY, -INFINITY};
    float x[768], y[768];
    static unsigned char q[768 * 4], one[300], want[300];
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            const int64_t bs = tr(t)->block_size, bb = (int64_t)tr(t)->block_bytes;
            const int64_t n = 3 * (bs > 1 ? bs : 32);
            for (int v = 0; v < 3; v++) {
                const uint64_t seed = test_seed(500 + 4 * (uint64_t)t + (uint64_t)v);
                tu_rng rng;
                tu_rng_init(&rng, seed);
                qi_fill(x, n, QI_GAUSS, n, &rng);
                const int64_t at = n / 3 + tu_rng_range(&rng, 0, n / 3 - 1);
                x[at] = bad_values[v];
                k->quantize_row[t](q, x, n);
                k->dequantize_row[t](y, q, n);
                if (bs == 1) { /* F32/F16/BF16: element by element */
                    int64_t wrong = -1;
                    for (int64_t i = 0; i < n && wrong < 0; i++) {
                        const int ok =
                            i == at ? (isnan(x[i]) ? isnan(y[i]) : y[i] == x[i]) : isfinite(y[i]);
                        if (!ok) wrong = i;
                    }
                    TU_CHECK(
                        wrong < 0,
                        "set %s type %s seed %" PRIu64 ": %g at %" PRId64 " gave %g at %" PRId64,
                        k->name, tr(t)->name, seed, x[at], at, wrong >= 0 ? y[wrong] : 0.0, wrong);
                    continue;
                }
                int64_t wrong = -1;
                for (int64_t i = bs; i < 2 * bs && wrong < 0; i++)
                    if (!isnan(y[i])) wrong = i;
                TU_CHECK(wrong < 0,
                         "set %s type %s seed %" PRIu64 ": %g at %" PRId64 " left element %" PRId64
                         " of its block = %g, want NaN",
                         k->name, tr(t)->name, seed, x[at], at, wrong, wrong >= 0 ? y[wrong] : 0.0);
                nan_block(t, want);
                TU_CHECK(memcmp(q + bb, want, (size_t)bb) == 0,
                         "set %s type %s seed %" PRIu64 ": the block holding %g at %" PRId64
                         " is not the documented NaN block",
                         k->name, tr(t)->name, seed, x[at], at);
                for (int b = 0; b < 3; b += 2) { /* the neighbours are untouched */
                    k->quantize_row[t](one, x + b * bs, bs);
                    TU_CHECK(memcmp(q + b * bb, one, (size_t)bb) == 0,
                             "set %s type %s seed %" PRIu64 ": block %d changed by %g in block 1",
                             k->name, tr(t)->name, seed, b, x[at]);
                }
            }
        }
    }
}

static void quant_blocks_are_quantized_independently(void)
{
    const int64_t n = 1280; /* 5 super-blocks, 40 blocks of 32 */
    float x[1280];
    static unsigned char whole[1280 * 4], part[1280 * 4];
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            const int64_t bs = tr(t)->block_size;
            const uint64_t seed = test_seed(600 + (uint64_t)t);
            tu_rng rng;
            tu_rng_init(&rng, seed);
            for (int64_t i = 0; i < n; i += 256) qi_fill(x + i, 256, (int)(i / 256) + 1, 32, &rng);
            k->quantize_row[t](whole, x, n);
            const int64_t step = bs > 1 ? bs : 7 * 5; /* F types: uneven pieces */
            for (int64_t i = 0; i < n; i += step) {
                const int64_t len = i + step <= n ? step : n - i;
                k->quantize_row[t](part + row_bytes(t, i), x + i, len);
            }
            TU_CHECK(memcmp(whole, part, row_bytes(t, n)) == 0,
                     "set %s type %s seed %" PRIu64 ": a row quantized whole differs from the "
                     "same row quantized block by block",
                     k->name, tr(t)->name, seed);
        }
    }
}

static void quant_q8_k_bsums_are_sums_of_quants(void)
{
    const int64_t n = 1024;
    float x[1024];
    pl_block_q8_k q[4];
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int p = 0; p < QI_COUNT; p++) {
            const uint64_t seed = test_seed(700 + (uint64_t)p);
            tu_rng rng;
            tu_rng_init(&rng, seed);
            qi_fill(x, n, p, 256, &rng);
            k->quantize_row[PL_TYPE_Q8_K](q, x, n);
            for (int b = 0; b < 4; b++) {
                for (int j = 0; j < 16; j++) {
                    int sum = 0;
                    for (int l = 0; l < 16; l++) sum += q[b].qs[16 * j + l];
                    TU_CHECK(q[b].bsums[j] == sum,
                             "set %s pattern %s seed %" PRIu64
                             ": block %d bsums[%d] = %d, quants sum to %d",
                             k->name, qi_pattern_name(p), seed, b, j, q[b].bsums[j], sum);
                }
            }
        }
    }
}

/* All 65536 half (or bfloat) bit patterns: dequantizing is exact, and quantizing the
 * result gives the pattern back (NaN stays NaN). */
static void check_all_16bit_patterns(pl_type t)
{
    static uint16_t h[65536], back[65536];
    static float f[65536];
    static double exact[65536];
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    ref_dequantize(t, h, 65536, exact, NULL);
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        k->dequantize_row[t](f, h, 65536);
        k->quantize_row[t](back, f, 65536);
        int bad = -1, bad_back = -1;
        for (int i = 0; i < 65536; i++) {
            const int is_nan = isnan(exact[i]);
            if (bad < 0 &&
                !(is_nan ? isnan(f[i])
                         : (double)f[i] == exact[i] && !signbit(f[i]) == !signbit(exact[i])))
                bad = i;
            const int back_nan = (back[i] & 0x7fff) > (t == PL_TYPE_F16 ? 0x7c00 : 0x7f80);
            if (bad_back < 0 && !(is_nan ? back_nan : back[i] == h[i])) bad_back = i;
        }
        TU_CHECK(bad < 0, "set %s type %s: pattern 0x%04x dequantized to %a, exact is %a", k->name,
                 tr(t)->name, bad, bad >= 0 ? f[bad] : 0.0, bad >= 0 ? exact[bad] : 0.0);
        TU_CHECK(bad_back < 0, "set %s type %s: pattern 0x%04x came back as 0x%04x", k->name,
                 tr(t)->name, bad_back, bad_back >= 0 ? back[bad_back] : 0);
    }
}

static void quant_f16_dequantize_exact_for_all_bit_patterns(void)
{
    check_all_16bit_patterns(PL_TYPE_F16);
}

static void quant_bf16_dequantize_exact_for_all_bit_patterns(void)
{
    check_all_16bit_patterns(PL_TYPE_BF16);
}

/* Midpoints between neighbouring halfs (bfloats) round to the even one; a float either
 * side of a midpoint rounds to its side. Covers subnormals and the overflow to Inf. */
static void check_round_half_even(pl_type t)
{
    const int top = t == PL_TYPE_F16 ? 0x7bff : 0x7f7f; /* largest finite */
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        int bad = -1;
        for (int lo = 0; lo <= top && bad < 0; lo++) {
            uint16_t pair[2] = {(uint16_t)lo, (uint16_t)(lo + 1)};
            double v[2];
            ref_dequantize(t, pair, 2, v, NULL);
            if (lo == top) v[1] = t == PL_TYPE_F16 ? 65536.0 : ldexp(1.0, 128);
            const float mid = (float)((v[0] + v[1]) / 2); /* exact: one more bit */
            float x[6] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY)};
            for (int i = 0; i < 3; i++) x[3 + i] = -x[i];
            uint16_t q[6];
            k->quantize_row[t](q, x, 6);
            const uint16_t even = (uint16_t)((lo & 1) ? lo + 1 : lo);
            const uint16_t want[6] = {even,
                                      (uint16_t)lo,
                                      (uint16_t)(lo + 1),
                                      (uint16_t)(even | 0x8000),
                                      (uint16_t)(lo | 0x8000),
                                      (uint16_t)((lo + 1) | 0x8000)};
            for (int i = 0; i < 6; i++)
                if (q[i] != want[i]) bad = lo;
        }
        TU_CHECK(bad < 0,
                 "set %s type %s: rounding between patterns 0x%04x and 0x%04x is not "
                 "to nearest, ties to even",
                 k->name, tr(t)->name, bad, bad + 1);
    }
}

static void quant_f16_rounds_to_nearest_even(void)
{
    check_round_half_even(PL_TYPE_F16);
}

static void quant_bf16_rounds_to_nearest_even(void)
{
    check_round_half_even(PL_TYPE_BF16);
}

/* ---- known vectors: bytes worked out by hand from the ggml layouts ------------------- */

static void quant_q4_0_known_vector(void)
{
    float x[64] = {0};
    /* block 0: max |x| is x[0] = -8, so d = -8 / -8 = 1 and q = trunc(x + 8.5):
     * x[j] = j - 8 -> q = j; x[16 + j] = 7 - j -> q = 15 - j; qs[j] = q[j] | q[16+j] << 4 */
    for (int j = 0; j < 16; j++) {
        x[j] = (float)(j - 8);
        x[16 + j] = (float)(7 - j);
    }
    /* block 1: max is +2, d = 2 / -8 = -0.25; -2 -> 16.5 -> clamps to 15 (-1.75);
     * 0.125 -> -0.5 + 8.5 = 8 exactly (0); -0.125 -> 9 (-0.25); 0 -> 8 */
    x[32] = 2.0f;
    x[33] = -2.0f;
    x[49] = 0.125f;
    x[50] = -0.125f;
    static const unsigned char want[36] = {
        0x00, 0x3c, 0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87,
        0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0x0f, /* d = 1.0 (f16 0x3c00), little-endian */
        0x00, 0xb4, 0x80, 0x8f, 0x98, 0x88, 0x88, 0x88, 0x88, 0x88,
        0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, /* d = -0.25 (f16 0xb400) */
    };
    float want_y[64] = {0};
    for (int j = 0; j < 32; j++) want_y[j] = x[j];
    want_y[32] = 2.0f;
    want_y[33] = -1.75f;
    want_y[50] = -0.25f;
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        unsigned char q[36];
        float y[64];
        k->quantize_row[PL_TYPE_Q4_0](q, x, 64);
        size_t at = 0;
        while (at < sizeof q && q[at] == want[at]) at++;
        TU_CHECK(at == sizeof q, "set %s: Q4_0 byte %zu is 0x%02x, want 0x%02x", k->name, at,
                 at < sizeof q ? q[at] : 0, at < sizeof q ? want[at] : 0);
        k->dequantize_row[PL_TYPE_Q4_0](y, want, 64);
        for (int j = 0; j < 64; j++)
            TU_CHECK(y[j] == want_y[j], "set %s: Q4_0 element %d is %g, want %g", k->name, j, y[j],
                     want_y[j]);
    }
}

/* Q4_K/Q5_K scales used by the known vectors: sc = {1,2,3,4,17,33,49,63},
 * m = {0,1,2,3,16,32,48,62}. Packed: s[j] = sc[j] | (sc[j+4] >> 4) << 6,
 * s[4+j] = m[j] | (m[j+4] >> 4) << 6, s[8+j] = (sc[j+4] & 15) | (m[j+4] & 15) << 4. */
static const int k4_sc[8] = {1, 2, 3, 4, 17, 33, 49, 63};
static const int k4_m[8] = {0, 1, 2, 3, 16, 32, 48, 62};
static const unsigned char k4_scales[12] = {0x41, 0x82, 0xc3, 0xc4, 0x40, 0x81,
                                            0xc2, 0xc3, 0x01, 0x01, 0x01, 0xef};

static void quant_q4_k_known_vector(void)
{
    pl_block_q4_k b;
    b.d = 0x3c00;    /* 1.0 */
    b.dmin = 0x3800; /* 0.5 */
    memcpy(b.scales, k4_scales, 12);
    /* element 64p + l: low nibble of qs[32p + l]; 64p + 32 + l: its high nibble */
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++)
            b.qs[32 * p + l] = (uint8_t)(((l + 3 * p) % 16) | ((47 - l + p) % 16) << 4);
    float want[256];
    for (int e = 0; e < 256; e++) {
        const int j = e / 32, p = e / 64, l = e % 32;
        const int q = (e % 64) < 32 ? (l + 3 * p) % 16 : (47 - l + p) % 16;
        want[e] = (float)(1.0 * k4_sc[j] * q - 0.5 * k4_m[j]);
    }
    /* spot values by hand: e = 0: sc 1, q 0, m 0 -> 0; e = 32: sc 2, q 15, m 1 -> 29.5;
     * e = 255 (j = 7, p = 3, l = 31): sc 63, q = (47 - 31 + 3) % 16 = 3, m 62 -> 158 */
    TU_CHECK(want[0] == 0.0f && want[32] == 29.5f && want[255] == 158.0f,
             "known-vector arithmetic");
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        float y[256];
        k->dequantize_row[PL_TYPE_Q4_K](y, &b, 256);
        int bad = -1;
        for (int e = 0; e < 256 && bad < 0; e++)
            if (y[e] != want[e]) bad = e;
        TU_CHECK(bad < 0, "set %s: Q4_K element %d (sub-block %d) is %g, want %g", k->name, bad,
                 bad / 32, bad >= 0 ? y[bad] : 0.0, bad >= 0 ? want[bad] : 0.0);
    }
}

static void quant_q5_k_known_vector(void)
{
    pl_block_q5_k b;
    b.d = 0x3800;    /* 0.5 */
    b.dmin = 0x3c00; /* 1.0 */
    memcpy(b.scales, k4_scales, 12);
    for (int l = 0; l < 32; l++) b.qh[l] = (uint8_t)(l * 37 + 11);
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++) b.qs[32 * p + l] = (uint8_t)((l % 16) | ((l + p) % 16) << 4);
    /* fifth bit of element 64p + l: bit 2p of qh[l]; of 64p + 32 + l: bit 2p + 1 */
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        float y[256];
        k->dequantize_row[PL_TYPE_Q5_K](y, &b, 256);
        int bad = -1;
        float want = 0;
        for (int e = 0; e < 256 && bad < 0; e++) {
            const int j = e / 32, p = e / 64, l = e % 32, hi = (e % 64) / 32;
            const int q = (hi ? (l + p) % 16 : l % 16) + 16 * ((b.qh[l] >> (2 * p + hi)) & 1);
            want = (float)(0.5 * k4_sc[j] * q - 1.0 * k4_m[j]);
            if (y[e] != want) bad = e;
        }
        /* spot: e = 0: qh[0] = 11 = 0b1011, bit 0 set -> q = 16, sc 1 -> 8 - 0 = 8 */
        TU_CHECK(bad < 0 && y[0] == 8.0f,
                 "set %s: Q5_K element %d is %g, want %g (y[0] = %g, want 8)", k->name, bad,
                 bad >= 0 ? y[bad] : 0.0, want, y[0]);
    }
}

static void quant_q5_0_known_vector(void)
{
    pl_block_q5_0 b;
    b.d = 0x3c00;          /* 1.0 */
    memset(b.qh, 0xa5, 4); /* bits 0, 2, 5, 7 of each byte */
    for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | (15 - j) << 4);
    /* element e: 4 low bits from qs, bit 4 = bit e of the LE u32 qh; x = q - 16.
     * e = 0: 0 | 16 -> 0; e = 1: 1 -> -15; e = 16: 15 | 16 -> 15; e = 31: 0 | 16 -> 0 */
    float want[32];
    for (int e = 0; e < 32; e++) {
        const int low = e < 16 ? e : 15 - (e - 16);
        const int bit = (0xa5 >> (e % 8)) & 1;
        want[e] = (float)(low + 16 * bit - 16);
    }
    TU_CHECK(want[0] == 0 && want[1] == -15 && want[16] == 15 && want[31] == 0, "arithmetic");
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        float y[32];
        k->dequantize_row[PL_TYPE_Q5_0](y, &b, 32);
        for (int e = 0; e < 32; e++)
            TU_CHECK(y[e] == want[e], "set %s: Q5_0 element %d is %g, want %g", k->name, e, y[e],
                     want[e]);
    }
}

static void quant_q6_k_known_vector(void)
{
    pl_block_q6_k b;
    memset(&b, 0, sizeof b);
    b.d = 0x3400; /* 0.25 */
    for (int s = 0; s < 16; s++) b.scales[s] = (int8_t)(s - 8);
    b.ql[0] = 0x21;  /* element 0: low 4 bits 1; element 64: 2 */
    b.ql[32] = 0x43; /* element 32: 3; element 96: 4 */
    b.qh[0] = 0xe4;  /* 2-bit tops of elements 0, 32, 64, 96: 0, 1, 2, 3 */
    /* q - 32 times d * scales[e / 16]:
     * e 0: (1 - 32) * 0.25 * -8 = 62;   e 32: (19 - 32) * 0.25 * -6 = 19.5;
     * e 64: (34 - 32) * 0.25 * -4 = -2; e 96: (52 - 32) * 0.25 * -2 = -10;
     * everything else has q = 0: -32 * 0.25 * (s - 8) = -8 (s - 8). */
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        float y[256];
        k->dequantize_row[PL_TYPE_Q6_K](y, &b, 256);
        for (int e = 0; e < 256; e++) {
            float want = (float)(-8 * (e / 16 - 8));
            if (e == 0) want = 62.0f;
            if (e == 32) want = 19.5f;
            if (e == 64) want = -2.0f;
            if (e == 96) want = -10.0f;
            TU_CHECK(y[e] == want, "set %s: Q6_K element %d is %g, want %g", k->name, e, y[e],
                     want);
        }
    }
}

static void quant_q8_k_known_vector(void)
{
    float x[256];
    for (int j = 0; j < 256; j++) x[j] = (float)(j - 128);
    /* max |x| is x[0] = -128: iscale = -127 / -128 = 0.9921875 (exact), q = round-half-even
     * of 0.9921875 (j - 128): q[0] = -127, q[64] = -63.5 -> -64, q[192] = 63.5 -> 64,
     * q[128] = 0, q[129] = 1, q[255] = 126.0078 -> 126; d = 1 / 0.9921875. */
    static const struct {
        int j, q;
    } spots[] = {{0, -127}, {64, -64}, {192, 64}, {128, 0}, {129, 1}, {255, 126}};
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        pl_block_q8_k b;
        k->quantize_row[PL_TYPE_Q8_K](&b, x, 256);
        TU_CHECK(b.d == 1.0f / 0.9921875f, "set %s: Q8_K d = %a, want %a", k->name, b.d,
                 1.0f / 0.9921875f);
        for (size_t i = 0; i < sizeof spots / sizeof spots[0]; i++)
            TU_CHECK(b.qs[spots[i].j] == spots[i].q, "set %s: Q8_K q[%d] = %d, want %d", k->name,
                     spots[i].j, b.qs[spots[i].j], spots[i].q);
        for (int j = 0; j < 256; j++) {
            const double v = 0.9921875 * (j - 128);
            double r = nearbyint(v); /* default rounding mode: half to even */
            TU_CHECK(b.qs[j] == (int)r, "set %s: Q8_K q[%d] = %d, want %d", k->name, j, b.qs[j],
                     (int)r);
        }
    }
}

/* IQ4_NL and IQ4_XS on a block that is 113 at element 0 and zero elsewhere, worked by hand
 * through ggml's search (kernels/ref/quant.c): the first grid, d = max / 127, puts 113 on
 * level 15 (113), whose fit is d = 1 exactly; every other grid, (itry - 127) / 113, puts it on
 * level 0 (-127) and only ties that fit. Zeros take the level nearest 0, index 8 (+1). */
static void quant_iq4_known_vectors(void)
{
    float x[256] = {113.0f};
    /* IQ4_NL (32): d = 1.0 (f16 0x3c00); qs[0] = 15 | 8 << 4, the rest 8 | 8 << 4. The zeros
     * come back as +1: IQ4_NL has no zero level. */
    unsigned char want_nl[18] = {0x00, 0x3c, 0x8f};
    memset(want_nl + 3, 0x88, 15);
    /* IQ4_XS (256): sub-block 0 fits 1.0, the seven zero sub-blocks 0; d = -1 / 32 (f16
     * 0xa800); ls_0 = -32 + 32 = 0, ls_i = 0 + 32 = 32 (low nibbles 0, high bits 2):
     * scales_h = 2 << 2 | 2 << 4 | ... | 2 << 14 = 0xaaa8, scales_l all 0. The zero
     * sub-blocks dequantize to d * 0 * 1 = -0. */
    unsigned char want_xs[136] = {0x00, 0xa8, 0xa8, 0xaa, 0, 0, 0, 0, 0x8f};
    memset(want_xs + 9, 0x88, 127);
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        unsigned char q[136];
        float y[256];
        k->quantize_row[PL_TYPE_IQ4_NL](q, x, 32);
        size_t at = 0;
        while (at < sizeof want_nl && q[at] == want_nl[at]) at++;
        TU_CHECK(at == sizeof want_nl, "set %s: IQ4_NL byte %zu is 0x%02x, want 0x%02x", k->name,
                 at, at < sizeof want_nl ? q[at] : 0, at < sizeof want_nl ? want_nl[at] : 0);
        k->dequantize_row[PL_TYPE_IQ4_NL](y, want_nl, 32);
        for (int j = 0; j < 32; j++)
            TU_CHECK(y[j] == (j ? 1.0f : 113.0f), "set %s: IQ4_NL element %d is %g", k->name, j,
                     y[j]);
        k->quantize_row[PL_TYPE_IQ4_XS](q, x, 256);
        at = 0;
        while (at < sizeof want_xs && q[at] == want_xs[at]) at++;
        TU_CHECK(at == sizeof want_xs, "set %s: IQ4_XS byte %zu is 0x%02x, want 0x%02x", k->name,
                 at, at < sizeof want_xs ? q[at] : 0, at < sizeof want_xs ? want_xs[at] : 0);
        k->dequantize_row[PL_TYPE_IQ4_XS](y, want_xs, 256);
        for (int j = 0; j < 256; j++) {
            const float w = j == 0 ? 113.0f : j < 32 ? 1.0f : -0.0f;
            TU_CHECK(y[j] == w && !signbit(y[j]) == !signbit(w),
                     "set %s: IQ4_XS element %d is %g, want %g", k->name, j, y[j], w);
        }
    }
}

/* MXFP4 on two blocks worked by hand through plumb's search (kernels/ref/quant.c). Block 0:
 * amax 6 gives e0 = 127 (levels 0.5 x {0, 1, 2, 3, 4, 6, 8, 12}); e0 - 1 would clip 6 and -6 to 3
 * (squared error >= 18 against 4.82), so e = 127 (0x7f). Every tie goes to the even code: 0.25 ->
 * 0, 0.75 -> 1 (code 2), 1.25 -> 1 (2), 1.75 -> 2 (4), 2.5 -> 2 (4), 3.5 -> 4 (6), 5 -> 4 (6);
 * -0.25 -> code 0, not -0 (8); -5 -> 14, -6 -> 15, 0.1 -> 0. Element 16 (-1.5, code 11) and 31 (3,
 * code 5) sit in the high nibbles of qs[0] and qs[15]. Block 1: 6.5 then 31 x 0.5: at e0 = 128
 * every 0.5 is a tie that goes to 0 (error 8); at 127, 6.5 clips to 6 and the 0.5s are exact
 * (error 0.25), so e = 127, codes 7 and 1. */
static void quant_mxfp4_known_vectors(void)
{
    float x[64] = {6, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, -0.25f, -5, -6, 0.1f};
    x[16] = -1.5f;
    x[31] = 3.0f;
    x[32] = 6.5f;
    for (int j = 33; j < 64; j++) x[j] = 0.5f;
    static const unsigned char want[34] = {0x7f, 0xb7, 0x00, 0x02, 0x02, 0x04, 0x04, 0x06, 0x06,
                                           0x00, 0x0e, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x50, 0x7f,
                                           0x17, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                           0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11};
    float want_y[64] = {6, 0, 1, 1, 2, 2, 4, 4, 0, -4, -6, 0};
    want_y[16] = -1.5f;
    want_y[31] = 3.0f;
    want_y[32] = 6.0f;
    for (int j = 33; j < 64; j++) want_y[j] = 0.5f;
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        unsigned char q[34];
        float y[64];
        k->quantize_row[PL_TYPE_MXFP4](q, x, 64);
        size_t at = 0;
        while (at < sizeof q && q[at] == want[at]) at++;
        TU_CHECK(at == sizeof q, "set %s: MXFP4 byte %zu is 0x%02x, want 0x%02x", k->name, at,
                 at < sizeof q ? q[at] : 0, at < sizeof q ? want[at] : 0);
        k->dequantize_row[PL_TYPE_MXFP4](y, want, 64);
        for (int j = 0; j < 64; j++)
            TU_CHECK(y[j] == want_y[j] && (y[j] != 0 || !signbit(y[j])),
                     "set %s: MXFP4 element %d is %g, want %g", k->name, j, y[j], want_y[j]);
        /* the scale's ends: e = 0 is 2^-128 (a subnormal half scale), e = 254 2^126 (code 7,
         * 12 x 2^126, overflows to Inf; code 3 is 1.5 x 2^127), e = 255 NaN whatever the codes */
        static const unsigned char ends[3][17] = {{0, 0x21}, {254, 0x37}, {255, 0x00}};
        const float lo = ldexpf(1.0f, -128), hi = ldexpf(1.0f, 126);
        const float want_e[3][2] = {{lo, 2 * lo}, {12 * hi, 3 * hi}, {NAN, NAN}};
        float ye[32];
        for (int c = 0; c < 3; c++) {
            k->dequantize_row[PL_TYPE_MXFP4](ye, ends[c], 32);
            const int ok = c == 2 ? isnan(ye[0]) && isnan(ye[16]) && isnan(ye[5])
                                  : ye[0] == want_e[c][0] && ye[16] == want_e[c][1] && ye[5] == 0;
            TU_CHECK(ok, "set %s: MXFP4 e = %d gives %a, %a, %a", k->name, ends[c][0], ye[0],
                     ye[16], ye[5]);
        }
    }
}

/* ---- byte identity with llama-quantize (conformance/data/quant_oracle/README.md) ------- */

/* Reads the whole file dir/name into buf (cap bytes); returns its size, or -1. */
static long read_oracle(const char *name, unsigned char *buf, size_t cap)
{
    const char *dir = getenv("PLUMB_TEST_DATA");
    TU_CHECK(dir != NULL, "PLUMB_TEST_DATA is not set");
    if (!dir) return -1;
    char path[1024];
    snprintf(path, sizeof path, "%s/quant_oracle/%s", dir, name);
    FILE *f = fopen(path, "rb");
    TU_CHECK(f != NULL, "cannot open %s", path);
    if (!f) return -1;
    const size_t n = fread(buf, 1, cap, f);
    const int more = fgetc(f) != EOF;
    fclose(f);
    TU_CHECK(!more, "%s is larger than %zu bytes", path, cap);
    return more ? -1 : (long)n;
}

/* 64 crafted rows of 256 (Gaussian at scales 2^-12 .. 2^12, one-signed, heavy-tailed, zeros,
 * constants, tiny, denormal, half-way integers, ...) quantized by llama.cpp c392e509's
 * llama-quantize without an importance matrix: every set writes the same bytes. */
static void quant_matches_llama_quantize_bytes(void)
{
    enum { ROWS = 64, N = 256 };
    static const struct {
        pl_type t;
        const char *file;
    } oracle[] = {{PL_TYPE_Q2_K, "q2_k.bin"},
                  {PL_TYPE_Q3_K, "q3_k.bin"},
                  {PL_TYPE_IQ4_NL, "iq4_nl.bin"},
                  {PL_TYPE_IQ4_XS, "iq4_xs.bin"}};
    static float x[ROWS * N];
    static unsigned char want[ROWS * N], got[ROWS * N];
    if (read_oracle("input.f32", (unsigned char *)x, sizeof x) != (long)sizeof x) {
        TU_CHECK(0, "input.f32 is not %d rows of %d floats", ROWS, N);
        return;
    }
    for (size_t o = 0; o < sizeof oracle / sizeof oracle[0]; o++) {
        const pl_type t = oracle[o].t;
        const size_t rb = row_bytes(t, N);
        const long n = read_oracle(oracle[o].file, want, sizeof want);
        TU_CHECK(n == (long)(ROWS * rb), "%s: %ld bytes, want %zu", oracle[o].file, n, ROWS * rb);
        if (n != (long)(ROWS * rb)) continue;
        for (int s = 0; s < n_tables; s++) {
            const struct pl_kernels *k = &tables[s].k;
            memset(got, 0x5a, sizeof got);
            k->quantize_row[t](got, x, (int64_t)ROWS * N);
            size_t at = 0;
            while (at < ROWS * rb && got[at] == want[at]) at++;
            TU_CHECK(at == ROWS * rb,
                     "set %s type %s: byte %zu (row %zu, block %zu of the row) is 0x%02x, "
                     "llama-quantize wrote 0x%02x",
                     k->name, tr(t)->name, at, at / rb, at % rb / tr(t)->block_bytes,
                     at < ROWS * rb ? got[at] : 0, at < ROWS * rb ? want[at] : 0);
        }
        /* ggml's bytes read back through every dequantizer within the round-trip bound: the
         * layouts are ggml's, independently of plumb's own quantizer. */
        double rms_b = 0, max_b = 0;
        TU_CHECK(bound_of(t, &rms_b, &max_b), "no bound for %s", tr(t)->name);
        static float y[ROWS * N];
        for (int s = 0; s < n_tables; s++) {
            const struct pl_kernels *k = &tables[s].k;
            k->dequantize_row[t](y, want, (int64_t)ROWS * N);
            for (int r = 0; r < ROWS; r++) {
                double rel = 0;
                const double worst = worst_block_ratio(t, x + r * N, y + r * N, N,
                                                       tr(t)->block_size, 1.25 * max_b, &rel);
                TU_CHECK(worst <= 1.0,
                         "set %s type %s: llama-quantize's row %d dequantizes with block error "
                         "%.3g of amax, allowed %.3g + %.3g abs",
                         k->name, tr(t)->name, r, rel, 1.25 * max_b, abs_floor(t));
            }
        }
    }
}

/* Gaussian rows scaled by 2^e over the range where every block scale is a normal, finite
 * number: the relative bound holds at every magnitude (no hidden absolute threshold). */
static void quant_roundtrip_bound_holds_across_magnitudes(void)
{
    const int64_t n = 1024;
    float x[1024], y[1024];
    static unsigned char q[1024 * 4];
    for (int s = 0; s < n_tables; s++) {
        const struct pl_kernels *k = &tables[s].k;
        for (int ti = 0; ti < QI_N_TYPES; ti++) {
            const pl_type t = qi_types[ti];
            double rms_b, max_b;
            if (tr(t)->block_size == 1 || !bound_of(t, &rms_b, &max_b)) continue;
            for (int e = -2; e <= 14; e++) {
                const uint64_t seed = test_seed(900 + 32 * (uint64_t)t + (uint64_t)(e + 2));
                tu_rng rng;
                tu_rng_init(&rng, seed);
                qi_fill(x, n, QI_GAUSS, tr(t)->block_size, &rng);
                for (int64_t i = 0; i < n; i++) x[i] = ldexpf(x[i], e);
                k->quantize_row[t](q, x, n);
                k->dequantize_row[t](y, q, n);
                double rel = 0;
                const double worst =
                    worst_block_ratio(t, x, y, n, tr(t)->block_size, 1.25 * max_b, &rel);
                TU_CHECK(worst <= 1.0,
                         "set %s type %s seed %" PRIu64 " scale 2^%d: block max error %.3g of "
                         "amax, allowed %.3g",
                         k->name, tr(t)->name, seed, e, rel, 1.25 * max_b);
            }
        }
    }
}

static void print_summary(void)
{
    printf("\nquantization round trip (worst over sets and rows; N(0,1) data unless noted)\n");
    printf("%-6s %12s %10s %12s %10s %14s\n", "type", "rms/rms(x)", "bound", "max/amax", "bound",
           "stress max/amax");
    for (int ti = 0; ti < QI_N_TYPES; ti++) {
        const pl_type t = qi_types[ti];
        double rb, mb;
        if (!stats[t].seen || !bound_of(t, &rb, &mb)) continue;
        printf("%-6s %12.6f %10.6f %12.6f %10.6f %14.6f\n", tr(t)->name, stats[t].rms, rb,
               stats[t].max, mb, stats[t].stress);
    }
}

/* One row of kernels/types.h's PL_TYPES against the per-type tables of the quantization code and
 * its tests, naming the table that lacks it. */
static void check_listed_type(pl_type t, const char *name, int64_t block, size_t bytes, pl_type dot,
                              int weight)
{
    const struct pl_type_traits *x = tr(t);
    TU_CHECK(x && strcmp(x->name, name) == 0 && x->block_size == block && x->block_bytes == bytes &&
                 x->dot_type == dot,
             "type %s: the traits (kernels/types.c) are not the list's", name);
    double rms, max;
    TU_CHECK(t == PL_TYPE_F32 || bound_of(t, &rms, &max),
             "type %s (kernels/types.h PL_TYPES) has no round-trip bound: add it to bounds[] in "
             "conformance/test_quant.c",
             name);
    unsigned char b[512];
    TU_CHECK(block == 1 || (bytes <= sizeof b && nan_block(t, b)),
             "type %s has no documented NaN block: add it to nan_block() in "
             "conformance/test_quant.c",
             name);
    TU_CHECK(qi_matmul_c(t) > 0, "type %s has no matmul bound c (conformance/quant_inputs.c)",
             name);
    int base = 0;
    for (uint32_t f = 0; f < 256 && !base; f++)
        base = pl_ftype_name(f) != NULL && pl_ftype_base_type(f) == t;
    TU_CHECK(!weight || base,
             "weight type %s is no file type's base: `plumb quantize` cannot make it (add it to "
             "pl_ftype in plumb.h and ftypes[] in engine/features/quantize.c)",
             name);
    float zeros[256] = {0}, back[256];
    unsigned char q[512];
    pl_error err = {0};
    TU_CHECK(block > 256 || bytes > sizeof q ||
                 (pl_quantize_rows(t, q, zeros, 1, block, &err) == PL_OK &&
                  pl_dequantize_rows(t, back, q, 1, block, &err) == PL_OK),
             "type %s: pl_quantize_rows / pl_dequantize_rows refuse it: %s", name, err.msg);
}

static void every_listed_type_is_in_every_quant_table(void)
{
#define CHECK_LISTED(T, t, block, bytes, dot, mm, weight, ...)                                     \
    check_listed_type(PL_TYPE_##T, #T, block, bytes, PL_TYPE_##dot, weight);
    PL_TYPES(CHECK_LISTED)
#undef CHECK_LISTED
}

int main(void)
{
    n_tables = qi_load_tables(tables, MAX_TABLES);
    if (n_tables < 1) return 1;
    static const tu_test tests[] = {
        {"quant_roundtrip_error_within_documented_bounds",
         quant_roundtrip_error_within_documented_bounds},
        {"quant_stress_inputs_roundtrip_finite_and_bounded",
         quant_stress_inputs_roundtrip_finite_and_bounded},
        {"quant_zero_input_roundtrips_to_exact_zero", quant_zero_input_roundtrips_to_exact_zero},
        {"quantize_row_of_every_set_bit_exact_with_ref", quant_every_set_bit_exact_with_ref},
        {"k_quant_searches_bit_exact_with_ref_over_many_blocks",
         k_quant_searches_bit_exact_with_ref_over_many_blocks},
        {"every_listed_type_is_in_every_quant_table", every_listed_type_is_in_every_quant_table},
        {"dequantize_row_is_exact_value_rounded_once",
         quant_dequantize_is_exact_value_rounded_once},
        {"quant_nonfinite_input_gives_nan_block", quant_nonfinite_input_gives_nan_block},
        {"quant_blocks_are_quantized_independently", quant_blocks_are_quantized_independently},
        {"quant_q8_k_bsums_are_sums_of_quants", quant_q8_k_bsums_are_sums_of_quants},
        {"quant_f16_dequantize_exact_for_all_bit_patterns",
         quant_f16_dequantize_exact_for_all_bit_patterns},
        {"quant_bf16_dequantize_exact_for_all_bit_patterns",
         quant_bf16_dequantize_exact_for_all_bit_patterns},
        {"quant_f16_rounds_to_nearest_even", quant_f16_rounds_to_nearest_even},
        {"quant_bf16_rounds_to_nearest_even", quant_bf16_rounds_to_nearest_even},
        {"quant_q4_0_known_vector", quant_q4_0_known_vector},
        {"quant_q4_k_known_vector", quant_q4_k_known_vector},
        {"quant_q5_0_known_vector", quant_q5_0_known_vector},
        {"quant_q5_k_known_vector", quant_q5_k_known_vector},
        {"quant_q6_k_known_vector", quant_q6_k_known_vector},
        {"quant_q8_k_known_vector", quant_q8_k_known_vector},
        {"quant_iq4_known_vectors", quant_iq4_known_vectors},
        {"quant_mxfp4_known_vectors", quant_mxfp4_known_vectors},
        {"quant_matches_llama_quantize_bytes", quant_matches_llama_quantize_bytes},
        {"quant_roundtrip_bound_holds_across_magnitudes",
         quant_roundtrip_bound_holds_across_magnitudes},
        {NULL, NULL},
    };
    printf("kernel sets under test:");
    for (int s = 0; s < n_tables; s++) printf(" %s", tables[s].k.name);
    printf("\n");
    const int rc = tu_run("quant", tests);
    print_summary();
    return rc;
}
