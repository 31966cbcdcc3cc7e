/* quant_inputs.h — inputs shared by the quantization and matmul suites: the implemented
 * types, the resolved table of every supported kernel set, Gaussian and stress rows. */
#ifndef PLUMB_QUANT_INPUTS_H
#define PLUMB_QUANT_INPUTS_H

#include <stdint.h>

#include "registry.h"
#include "testutil.h"
#include "types.h"

/* Every type with a quantizer, dequantizer and matmul: kernels/types.h's PL_TYPES, in its order. */
#define QI_N_TYPES PL_TYPE_LIST_COUNT
extern const pl_type qi_types[QI_N_TYPES];

/* Resolves every compiled kernel set this CPU supports into tables[0..n); returns n, or -1
 * (after saying why on stderr) if one of them cannot be resolved. */
int qi_load_tables(pl_kernel_table *tables, int max);

/* Row patterns. Stress patterns start from Gaussian data and plant their feature in one
 * block of `block` elements (or, for QI_BOUNDARY, in every 32-element group). */
enum qi_pattern {
    QI_GAUSS,      /* N(0, 1) */
    QI_EQUAL,      /* every element the same (nonzero) value */
    QI_ZERO_BLOCK, /* one block of +0 */
    QI_OUTLIER,    /* one element of magnitude ~1e4 */
    QI_DENORMAL,   /* a block of denormals, one of tiny normals, scattered denormals */
    QI_NEG_ZERO,   /* one block of -0, and some scattered ones */
    QI_BOUNDARY,   /* values exactly on q4/q5/q8/E2M1 rounding ties and f16/bf16 midpoints */
    QI_COUNT
};
const char *qi_pattern_name(int pattern);
void qi_fill(float *x, int64_t n, int pattern, int64_t block, tu_rng *rng);

/* The matmul bound |y - y_ref| <= c u K sum|a_i b_i| + K eta (kernels/README.md): c per weight
 * type (0 for a type without one), and eta, the underflow allowance per element (Q8_K
 * activation scales may be denormal, MXFP4's 2^(e - 128) times an f16 may underflow:
 * kernels/ref/matmul.c). */
double qi_matmul_c(pl_type t);
double qi_matmul_eta(pl_type t);

/* A set with repacked layouts is tested twice: as it is, and as a "<set>+repack" view. For
 * every set s < n with a repacked type, appends (while n < max) a copy of tables[s] named
 * "<set>+repack" in names[], with repacked[view] = &tables[s].k (entries below n are left as
 * they are: the caller zeroes them). Returns the new count. The suites run a view's repacked
 * types through pack + repack->matmul (with x_prep where the layout has it). */
int qi_add_repacked_views(pl_kernel_table *tables, const struct pl_kernels **repacked,
                          char (*names)[32], int n, int max);

#endif
