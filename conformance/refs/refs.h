/* refs.h — double-precision references (GSL) for the quantization and matmul suites.
 * Written from the block layouts, not from kernels/: a layout bug in a kernel cannot hide
 * behind the same bug here. The ops references are declared in refs_ops.h. */
#ifndef PLUMB_CONFORMANCE_REFS_H
#define PLUMB_CONFORMANCE_REFS_H

#include <stddef.h>
#include <stdint.h>

#include "types.h"

/* Exact dequantization of n elements (a multiple of the block size) of `type`: element i
 * is scale[i] + offset[i] exactly, where scale[i] is the d*q part and offset[i] the
 * min/offset part (0 for symmetric types and for F32/F16/BF16). offset may be NULL.
 * Every value is exact in double (f16/f32 scales times small integers).
 * Returns 0, or -1 for a type it does not know. */
int ref_dequantize(pl_type type, const void *x, int64_t n, double *scale, double *offset);

/* The reference of pl_matmul_fn over all R rows and T tokens, by gsl_blas_dgemm on the
 * exactly dequantized weights and activations (activations in the weight type's dot type):
 *   y[t * R + r]   = sum_k W[r][k] X[t][k]
 *   mag[t * R + r] = sum_k (|scale_W[r][k]| + |offset_W[r][k]|) |X[t][k]|
 * mag is the sum_i |a_i b_i| of the dot-product error bound (see kernels/ref/matmul.c).
 * Returns 0, or -1 for an unknown type or when memory runs out. */
int ref_matmul(pl_type wtype, const void *w, size_t w_row_bytes, const void *x, size_t x_row_bytes,
               int64_t K, int64_t R, int64_t T, double *y, double *mag);

#endif
