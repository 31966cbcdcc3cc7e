/* types.h — block layouts and type traits for every tensor type plumb implements.
 * Layouts are ggml's, bit for bit (static_asserts pin them); no kernel code lives here. */
#ifndef PLUMB_KERNELS_TYPES_H
#define PLUMB_KERNELS_TYPES_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pl_base.h"

typedef uint16_t pl_f16;  /* IEEE half, stored as its bits */
typedef uint16_t pl_bf16; /* bfloat16, stored as its bits */

#define PL_QK4_0        32
#define PL_QK4_1        32
#define PL_QK5_0        32
#define PL_QK5_1        32
#define PL_QK8_0        32
#define PL_QK_K         256
#define PL_QK4_NL       32
#define PL_QK_MXFP4     32
#define PL_K_SCALE_SIZE 12

/* x = d * (q - 8), q in 0..15; element j in low nibble of qs[j], j + 16 in the high. */
typedef struct {
    pl_f16 d;
    uint8_t qs[PL_QK4_0 / 2];
} pl_block_q4_0;
static_assert(sizeof(pl_block_q4_0) == 18, "block_q4_0 size");

/* x = d * q + m, q in 0..15; nibble order as q4_0. */
typedef struct {
    pl_f16 d;
    pl_f16 m;
    uint8_t qs[PL_QK4_1 / 2];
} pl_block_q4_1;
static_assert(sizeof(pl_block_q4_1) == 20, "block_q4_1 size");

/* x = d * (q - 16), q in 0..31; bit 4 of element j is bit j of qh (little-endian u32). */
typedef struct {
    pl_f16 d;
    uint8_t qh[4];
    uint8_t qs[PL_QK5_0 / 2];
} pl_block_q5_0;
static_assert(sizeof(pl_block_q5_0) == 22, "block_q5_0 size");

/* x = d * q + m, q in 0..31; bits as q5_0. */
typedef struct {
    pl_f16 d;
    pl_f16 m;
    uint8_t qh[4];
    uint8_t qs[PL_QK5_1 / 2];
} pl_block_q5_1;
static_assert(sizeof(pl_block_q5_1) == 24, "block_q5_1 size");

/* x = d * q, q in -127..127. */
typedef struct {
    pl_f16 d;
    int8_t qs[PL_QK8_0];
} pl_block_q8_0;
static_assert(sizeof(pl_block_q8_0) == 34, "block_q8_0 size");

/* 8 sub-blocks of 32: x = d * sc * q - dmin * m, 6-bit sc/m packed in scales[12]. */
typedef struct {
    pl_f16 d;
    pl_f16 dmin;
    uint8_t scales[PL_K_SCALE_SIZE];
    uint8_t qs[PL_QK_K / 2];
} pl_block_q4_k;
static_assert(sizeof(pl_block_q4_k) == 144, "block_q4_k size");

/* As q4_k with a fifth bit per element in qh. */
typedef struct {
    pl_f16 d;
    pl_f16 dmin;
    uint8_t scales[PL_K_SCALE_SIZE];
    uint8_t qh[PL_QK_K / 8];
    uint8_t qs[PL_QK_K / 2];
} pl_block_q5_k;
static_assert(sizeof(pl_block_q5_k) == 176, "block_q5_k size");

/* 16 sub-blocks of 16: x = d * scales[i] * (q - 32), q 6 bits (4 in ql, 2 in qh). */
typedef struct {
    uint8_t ql[PL_QK_K / 2];
    uint8_t qh[PL_QK_K / 4];
    int8_t scales[PL_QK_K / 16];
    pl_f16 d;
} pl_block_q6_k;
static_assert(sizeof(pl_block_q6_k) == 210, "block_q6_k size");

/* 16 sub-blocks of 16: x = d * (scales[i] & 15) * q - dmin * (scales[i] >> 4), q 2 bits.
 * Byte qs[32 * h + l] holds q of elements 128 h + 32 s + l in bits 2 s .. 2 s + 1
 * (h in 0..1, s in 0..3, l in 0..31). */
typedef struct {
    uint8_t scales[PL_QK_K / 16];
    uint8_t qs[PL_QK_K / 4];
    pl_f16 d;
    pl_f16 dmin;
} pl_block_q2_k;
static_assert(sizeof(pl_block_q2_k) == 84, "block_q2_k size");

/* 16 sub-blocks of 16: x = d * (sc[i] - 32) * (q - 4 * !hbit), q 2 bits as q2_k's qs, the
 * high bit of element 32 j + l in bit j of hmask[l] (j in 0..7); the 6-bit sc packed in
 * scales[12]: low 4 bits of sc[i] in scales[i % 8] (high nibble for i >= 8), high 2 bits
 * of sc[i] in bits 2 (i / 4) .. of scales[8 + i % 4]. */
typedef struct {
    uint8_t hmask[PL_QK_K / 8];
    uint8_t qs[PL_QK_K / 4];
    uint8_t scales[12];
    pl_f16 d;
} pl_block_q3_k;
static_assert(sizeof(pl_block_q3_k) == 110, "block_q3_k size");

/* The 16 non-linear levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl). */
extern const int8_t pl_iq4nl_values[16];

/* x = d * pl_iq4nl_values[q], q 4 bits; nibble order as q4_0. */
typedef struct {
    pl_f16 d;
    uint8_t qs[PL_QK4_NL / 2];
} pl_block_iq4_nl;
static_assert(sizeof(pl_block_iq4_nl) == 18, "block_iq4_nl size");

/* 8 sub-blocks of 32: x = d * (ls[i] - 32) * pl_iq4nl_values[q], ls 6 bits: low 4 in
 * scales_l[i / 2] (high nibble for odd i), high 2 in bits 2 i .. 2 i + 1 of scales_h; each
 * sub-block's 16 qs bytes in q4_0's nibble order. */
typedef struct {
    pl_f16 d;
    uint16_t scales_h;
    uint8_t scales_l[PL_QK_K / 64];
    uint8_t qs[PL_QK_K / 2];
} pl_block_iq4_xs;
static_assert(sizeof(pl_block_iq4_xs) == 136, "block_iq4_xs size");

/* OCP microscaling FP4 (MXFP4, ggml type 39; gpt-oss's expert weights): 32 E2M1 codes sharing
 * one E8M0 scale byte e. x = pl_mxfp4_values[q] * 2^(e - 128): the values are the E2M1 ones
 * (+-{0, 0.5, 1, 1.5, 2, 3, 4, 6}, bit 3 the sign) doubled to integers, so the scale is half
 * of E8M0's 2^(e - 127) (pl_e8m0_half). Nibble order as q4_0: element j (0..15) in the low
 * nibble of qs[j], element j + 16 in its high nibble (ggml's GGUF order; transformers' blocks
 * hold elements 2j, 2j + 1 in byte j, which a converter reorders). e = 255 is E8M0's NaN:
 * every element of the block is NaN (ggml reads it as 2^127; no ggml quantizer writes it). */
typedef struct {
    uint8_t e;
    uint8_t qs[PL_QK_MXFP4 / 2];
} pl_block_mxfp4;
static_assert(sizeof(pl_block_mxfp4) == 17, "block_mxfp4 size");

/* The 16 E2M1 values of MXFP4 doubled (ggml's kvalues_mxfp4): codes 0..7 are
 * 0, 1, 2, 3, 4, 6, 8, 12, codes 8..15 their negatives (code 8 is -0, stored as 0). */
extern const int8_t pl_mxfp4_values[16];

/* MXFP4's block scale 2^(e - 128) as a float (ggml's ggml_e8m0_to_fp32_half), NaN for e = 255.
 * e = 0 and 1 give the subnormals 2^-128 and 2^-127; every value is exact. */
static inline float pl_e8m0_half(uint8_t e)
{
    const uint32_t u = e == 255 ? 0x7fc00000u : e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Activation dot type of the K-quants: x = d * q; bsums[i] = sum of qs[16i .. 16i+15]. */
typedef struct {
    float d;
    int8_t qs[PL_QK_K];
    int16_t bsums[PL_QK_K / 16];
} pl_block_q8_k;
static_assert(sizeof(pl_block_q8_k) == 292, "block_q8_k size");

/* The implemented tensor types: the one list of them, in pl_type order. A row is
 *   X(T, t, block, bytes, dot, mm, weight, fallback, mm_c)
 * T         the ggml name and PL_TYPE_<T>; t its lower case, as kernel names spell it
 * block     elements per block; bytes, bytes per block (the block struct above)
 * dot       the type activations are quantized to for matmul (PL_TYPE_<dot>)
 * mm        the matmul's name between "matmul_" and the set: matmul_<mm>_ref
 * weight    1: a weight type a file may be quantized to (a pl_ftype has it as its base); 0: an
 *           activation dot type only
 * fallback  the type llama.cpp's quantizer stores a tensor in when its rows are no multiple of
 *           block (engine/features/quantize.c)
 * mm_c      c of the matmul bound |y - y_ref| <= c u K sum|a_i b_i| (kernels/README.md)
 * Read by: the traits (types.c), the reference set (ref/set.c: a row without its ref kernels
 * does not compile), the quantizer (engine/features/quantize.c), the conformance suites
 * (conformance/quant_inputs.c, test_quant.c, test_matmul.c) and fuzz/fuzz_quant.c; each of them
 * fails a test when it lacks a listed type (README.md, "Where new things go"). */
#define PL_TYPES(X)                                                                                \
    X(F32, f32, 1, 4, F32, f32, 1, F16, 1.01)                                                      \
    X(F16, f16, 1, 2, F32, f16, 1, F16, 1.01)                                                      \
    X(Q4_0, q4_0, PL_QK4_0, sizeof(pl_block_q4_0), Q8_0, q4_0_q8_0, 1, F16, 0.064)                 \
    X(Q4_1, q4_1, PL_QK4_1, sizeof(pl_block_q4_1), Q8_0, q4_1_q8_0, 1, F16, 0.095)                 \
    X(Q5_0, q5_0, PL_QK5_0, sizeof(pl_block_q5_0), Q8_0, q5_0_q8_0, 1, F16, 0.064)                 \
    X(Q5_1, q5_1, PL_QK5_1, sizeof(pl_block_q5_1), Q8_0, q5_1_q8_0, 1, F16, 0.095)                 \
    X(Q8_0, q8_0, PL_QK8_0, sizeof(pl_block_q8_0), Q8_0, q8_0_q8_0, 1, F16, 0.064)                 \
    X(Q2_K, q2_k, PL_QK_K, sizeof(pl_block_q2_k), Q8_K, q2_k_q8_k, 1, IQ4_NL, 0.012)               \
    X(Q3_K, q3_k, PL_QK_K, sizeof(pl_block_q3_k), Q8_K, q3_k_q8_k, 1, IQ4_NL, 0.008)               \
    X(Q4_K, q4_k, PL_QK_K, sizeof(pl_block_q4_k), Q8_K, q4_k_q8_k, 1, Q5_0, 0.016)                 \
    X(Q5_K, q5_k, PL_QK_K, sizeof(pl_block_q5_k), Q8_K, q5_k_q8_k, 1, Q5_1, 0.016)                 \
    X(Q6_K, q6_k, PL_QK_K, sizeof(pl_block_q6_k), Q8_K, q6_k_q8_k, 1, Q8_0, 0.012)                 \
    X(Q8_K, q8_k, PL_QK_K, sizeof(pl_block_q8_k), Q8_K, q8_k_q8_k, 0, F16, 0.008)                  \
    X(IQ4_NL, iq4_nl, PL_QK4_NL, sizeof(pl_block_iq4_nl), Q8_0, iq4_nl_q8_0, 1, F16, 0.064)        \
    X(IQ4_XS, iq4_xs, PL_QK_K, sizeof(pl_block_iq4_xs), Q8_K, iq4_xs_q8_k, 1, IQ4_NL, 0.012)       \
    X(BF16, bf16, 1, 2, F32, bf16, 1, F16, 1.01)                                                   \
    X(MXFP4, mxfp4, PL_QK_MXFP4, sizeof(pl_block_mxfp4), Q8_0, mxfp4_q8_0, 1, F16, 0.064)

/* How many rows PL_TYPES has. */
#define PL_TYPE_LIST_ONE(T, ...) +1
#define PL_TYPE_LIST_COUNT       (0 PL_TYPES(PL_TYPE_LIST_ONE))

struct pl_type_traits {
    const char *name;   /* ggml's name, e.g. "Q4_K" */
    int64_t block_size; /* elements per block; 0 marks a type plumb does not implement */
    size_t block_bytes; /* bytes per block */
    pl_type dot_type;   /* what activations are quantized to for matmul */
};

/* Traits for a type id; NULL when the id is >= PL_TYPE_COUNT. A known-but-unimplemented
 * id returns traits with block_size 0 and its ggml name. */
const struct pl_type_traits *pl_type_traits_of(uint32_t type);

/* IEEE half and bfloat16 conversions (exact; round-to-nearest-even on the way down). The
 * widening ones are inline: the reference kernels call them per element (out of line, the call
 * was a fifth of the reference set's time in test_e2e). */
static inline float pl_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float pl_f16_to_f32(pl_f16 h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return pl_bits_f32(sign | 0x7f800000u | (man << 13)); /* inf / nan */
    if (exp == 0) {
        if (man == 0) return pl_bits_f32(sign);
        /* subnormal: man * 2^-24, exact in float */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return pl_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline float pl_bf16_to_f32(pl_bf16 h)
{
    return pl_bits_f32((uint32_t)h << 16);
}

pl_f16 pl_f32_to_f16(float f);
pl_bf16 pl_f32_to_bf16(float f);

#endif
