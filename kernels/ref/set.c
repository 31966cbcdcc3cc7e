/* set.c — the reference kernel table. Every entry is filled: ref is the fallback for
 * every other set, so it may leave nothing out. */
#include "ref.h"

static int ref_supported(void)
{
    return 1;
}

/* Every entry comes from the lists (kernels.h PL_KERNEL_FAMILIES, types.h PL_TYPES): a family
 * whose <field>_ref is not declared, a per-type family without its REF_<field> row below, or a
 * type without its ref kernels is a compile error, never a NULL found at run time. */
#define REF_quantize_row(T, t, ...)                  [PL_TYPE_##T] = quantize_row_##t##_ref,
#define REF_dequantize_row(T, t, ...)                [PL_TYPE_##T] = dequantize_row_##t##_ref,
#define REF_matmul(T, t, block, bytes, dot, mm, ...) [PL_TYPE_##T] = matmul_##mm##_ref,
#define REF_ONE(field)                               .field = field##_ref,
#define REF_PER_TYPE(field)                          .field = {PL_TYPES(REF_##field)},
#define REF_FAMILY(field, fn_type, slots)            REF_##slots(field)

const struct pl_kernels pl_kernels_ref = {
    .name = "ref", .supported = ref_supported, PL_KERNEL_FAMILIES(REF_FAMILY)};
