/* quant_inputs.h — inputs shared by the quantization and matmul suites: the implemented
 * types, the resolved table of every supported kernel set, Gaussian and stress rows. */
#ifndef PLUMB_QUANT_INPUTS_H
#define PLUMB_QUANT_INPUTS_H

#include <stdint.h>

#include "registry.h"
#include "testutil.h"
#include "types.h"

/* Every type with a quantizer, dequantizer and matmul, in pl_type order. */
#define QI_N_TYPES 16
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
    QI_BOUNDARY,   /* values exactly on q4/q5/q8 rounding ties and f16/bf16 midpoints */
    QI_COUNT
};
const char *qi_pattern_name(int pattern);
void qi_fill(float *x, int64_t n, int pattern, int64_t block, tu_rng *rng);

#endif
