/* types.c — the type-traits table and the scalar half/bfloat16 conversions.
 * Not kernels: no quantization math here, only layouts and names. */
#include <string.h>

#include "types.h"

const int8_t pl_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                    1,    13,   25,  38,  53,  69,  89,  113};

const int8_t pl_mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

#define TRAITS(T, t, block, bytes, dot, ...)                                                       \
    [PL_TYPE_##                                                                                    \
        T] = {.name = #T, .block_size = block, .block_bytes = bytes, .dot_type = PL_TYPE_##dot},
static const struct pl_type_traits traits[PL_TYPE_COUNT] = {
    PL_TYPES(TRAITS)
        /* ggml ids plumb knows by name only, so errors can say what a file holds. */
        [9] = {.name = "Q8_1"},
    [16] = {.name = "IQ2_XXS"},
    [17] = {.name = "IQ2_XS"},
    [18] = {.name = "IQ3_XXS"},
    [19] = {.name = "IQ1_S"},
    [21] = {.name = "IQ3_S"},
    [22] = {.name = "IQ2_S"},
    [24] = {.name = "I8"},
    [25] = {.name = "I16"},
    [26] = {.name = "I32"},
    [27] = {.name = "I64"},
    [28] = {.name = "F64"},
    [29] = {.name = "IQ1_M"},
    [34] = {.name = "TQ1_0"},
    [35] = {.name = "TQ2_0"},
};
#undef TRAITS

const struct pl_type_traits *pl_type_traits_of(uint32_t type)
{
    if (type >= PL_TYPE_COUNT) return NULL;
    return &traits[type];
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

pl_f16 pl_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) /* inf stays inf; nan keeps a quiet payload bit */
        return (pl_f16)(sign | 0x7c00u | (a > 0x7f800000u ? (0x200u | ((a >> 13) & 0x3ffu)) : 0));
    if (a >= 0x477ff000u) return (pl_f16)(sign | 0x7c00u); /* rounds past 65504: inf */
    if (a < 0x38800000u) {
        /* result is subnormal or zero: round a * 2^24 to an integer, ties to even */
        if (a < 0x33000000u) return sign; /* below half the smallest subnormal */
        uint32_t man = (a & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(a >> 23); /* exponent e: value = man * 2^(e-150) */
        /* we want man * 2^(e-150) * 2^24 = man >> (126 - e) */
        uint32_t q = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (pl_f16)(sign | q);
    }
    uint32_t r = a - 0x38000000u; /* rebias exponent 127 -> 15, in place */
    uint32_t q = r >> 13;
    uint32_t rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;
    return (pl_f16)(sign | q);
}

pl_bf16 pl_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (pl_bf16)((u >> 16) | 64u); /* quiet nan */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even, as ggml does */
    return (pl_bf16)(u >> 16);
}
