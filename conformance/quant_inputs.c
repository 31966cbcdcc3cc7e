/* quant_inputs.c — the row generators and set enumeration behind quant_inputs.h.
 * Test-only; deterministic from the tu_rng it is given. */
#include <math.h>

#include "quant_inputs.h"

#define TYPE_ID(T, ...) PL_TYPE_##T,
const pl_type qi_types[QI_N_TYPES] = {PL_TYPES(TYPE_ID)};
#undef TYPE_ID

int qi_load_tables(pl_kernel_table *tables, int max)
{
    int n = 0;
    for (int i = 0; i < pl_kernel_set_count(); i++) {
        const struct pl_kernels *s = pl_kernel_set(i);
        if (!s->supported()) continue;
        pl_error err;
        if (n == max || pl_kernels_resolve(&tables[n], s, &err) != PL_OK) {
            fprintf(stderr, "cannot test kernel set '%s': %s\n", s->name,
                    n == max ? "too many sets" : err.msg);
            return -1;
        }
        n++;
    }
    return n;
}

static const char *const pattern_names[QI_COUNT] = {
    "gauss", "all-equal", "zero-block", "outlier", "denormal", "neg-zero", "boundary",
};

const char *qi_pattern_name(int pattern)
{
    return pattern >= 0 && pattern < QI_COUNT ? pattern_names[pattern] : "?";
}

/* 32 values on a rounding tie of one grid, scaled by 2^e. */
static void fill_boundary_group(float *x, int n, tu_rng *rng)
{
    const int e = (int)tu_rng_range(rng, -4, 4);
    const int variant = (int)tu_rng_range(rng, 0, 6);
    static const double e2m1_ties[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
    for (int j = 0; j < n; j++) {
        double v;
        switch (variant) {
        case 0:
            v = (double)tu_rng_range(rng, -8, 7) + 0.5;
            break; /* q4_0: d = 2^e */
        case 1:
            v = (double)tu_rng_range(rng, -16, 15) + 0.5;
            break; /* q5_0 */
        case 2:
            v = (double)tu_rng_range(rng, -127, 126) + 0.5;
            break; /* q8_0, q8_k */
        case 3:
            v = 3.0 + (double)tu_rng_range(rng, 0, 14) + 0.5;
            break; /* q4_1 over [3, 18] */
        case 4:
            v = -5.0 + (double)tu_rng_range(rng, 0, 30) + 0.5;
            break; /* q5_1 over [-5, 26] */
        case 6:    /* MXFP4: E2M1's midpoints at scale 2^e (amax 6: e0's levels) */
            v = e2m1_ties[tu_rng_range(rng, 0, 6)];
            if (tu_rng_u64(rng) & 1) v = -v;
            break;
        default: /* f16 and bf16 midpoints */
            v = (j & 1) ? 1.0 + (2.0 * (double)tu_rng_range(rng, 0, 1023) + 1.0) * 0x1p-11
                        : 1.0 + (2.0 * (double)tu_rng_range(rng, 0, 127) + 1.0) * 0x1p-8;
            if (tu_rng_u64(rng) & 1) v = -v;
            break;
        }
        x[j] = (float)ldexp(v, e);
    }
    /* Pin the block scale so the grid step is exactly 2^e. */
    switch (variant) {
    case 0:
        x[0] = (float)ldexp(-8.0, e);
        break;
    case 1:
        x[0] = (float)ldexp(-16.0, e);
        break;
    case 2:
        x[0] = (float)ldexp(127.0, e);
        break;
    case 3:
        x[0] = (float)ldexp(3.0, e);
        if (n > 1) x[1] = (float)ldexp(18.0, e);
        break;
    case 4:
        x[0] = (float)ldexp(-5.0, e);
        if (n > 1) x[1] = (float)ldexp(26.0, e);
        break;
    case 6:
        x[0] = (float)ldexp(6.0, e);
        break;
    default:
        break;
    }
}

void qi_fill(float *x, int64_t n, int pattern, int64_t block, tu_rng *rng)
{
    for (int64_t i = 0; i < n; i++) x[i] = (float)tu_rng_normal(rng);
    if (block > n) block = n;
    const int64_t nb = n / block;
    const int64_t b0 = block * tu_rng_range(rng, 0, nb - 1);
    switch (pattern) {
    case QI_EQUAL: {
        float c = (float)tu_rng_normal(rng);
        if (c == 0.0f) c = 1.0f;
        for (int64_t i = 0; i < n; i++) x[i] = c;
        break;
    }
    case QI_ZERO_BLOCK:
        for (int64_t i = 0; i < block; i++) x[b0 + i] = 0.0f;
        break;
    case QI_OUTLIER: {
        const double s = (tu_rng_u64(rng) & 1) ? -1.0 : 1.0;
        x[tu_rng_range(rng, 0, n - 1)] = (float)(s * 1e4 * (1.0 + tu_rng_uniform(rng)));
        break;
    }
    case QI_DENORMAL:
        if (nb > 1) { /* tiny normals: the block's own scale (max / 127 for q8_k) is denormal */
            const int64_t b1 = block * ((b0 / block + 1 + tu_rng_range(rng, 0, nb - 2)) % nb);
            for (int64_t i = 0; i < block; i++) x[b1 + i] = (float)(tu_rng_normal(rng) * 0x1p-122);
        }
        for (int64_t i = 0; i < block; i++) x[b0 + i] = (float)(tu_rng_normal(rng) * 0x1p-135);
        for (int64_t i = 0; i < n; i++)
            if (tu_rng_uniform(rng) < 0.1) x[i] = (float)(tu_rng_normal(rng) * 0x1p-140);
        break;
    case QI_NEG_ZERO:
        for (int64_t i = 0; i < block; i++) x[b0 + i] = -0.0f;
        for (int64_t i = 0; i < n; i++)
            if (tu_rng_uniform(rng) < 0.1) x[i] = -0.0f;
        break;
    case QI_BOUNDARY:
        for (int64_t i = 0; i + 32 <= n; i += 32) fill_boundary_group(x + i, 32, rng);
        if (n % 32) fill_boundary_group(x + n - n % 32, (int)(n % 32), rng);
        break;
    default:
        break;
    }
}

/* c of |y - y_ref| <= c u K sum|a_i b_i| + K eta, per weight type (types.h PL_TYPES); the
 * derivation is in kernels/ref/matmul.c and holds for any summation order of the same block
 * terms. */
#define MATMUL_C(T, t, block, bytes, dot, mm, weight, fallback, c) [PL_TYPE_##T] = c,
static const double matmul_cs[PL_TYPE_COUNT] = {PL_TYPES(MATMUL_C)};
#undef MATMUL_C

double qi_matmul_c(pl_type t)
{
    return (unsigned)t < PL_TYPE_COUNT ? matmul_cs[t] : 0.0;
}

/* 2^-130 where a block's dw * dx may underflow (kernels/ref/matmul.c): Q8_K's float scale,
 * MXFP4's 2^(e - 128) against a small f16; 2^-149 otherwise. */
double qi_matmul_eta(pl_type t)
{
    return pl_type_traits_of(t)->dot_type == PL_TYPE_Q8_K || t == PL_TYPE_MXFP4 ? 0x1p-130
                                                                                : 0x1p-149;
}

int qi_add_repacked_views(pl_kernel_table *tables, const struct pl_kernels **repacked,
                          char (*names)[32], int n, int max)
{
    const int n0 = n;
    for (int s = 0; s < n0 && n < max; s++) {
        int any = 0;
        for (int t = 0; t < PL_TYPE_COUNT; t++) any |= tables[s].k.repack[t] != NULL;
        if (!any) continue;
        tables[n] = tables[s];
        snprintf(names[n], sizeof names[0], "%s+repack", tables[s].k.name);
        tables[n].k.name = names[n];
        repacked[n] = &tables[s].k;
        n++;
    }
    return n;
}
