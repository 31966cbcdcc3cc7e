/* set.c — the avx512 kernel table (AVX-512 F/BW/VL/DQ + VNNI, FMA, F16C). Entries left
 * NULL fall back to ref, explicitly: the registry records them and `plumb kernels` prints
 * them. BF16 instructions are not used: vdpbf16ps rounds differently from IEEE FMA and
 * flushes denormals, so BF16 weights are widened exactly and go through FMA instead.
 * Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4 straight from the mapping (repacking off) run the avx2
 * kernels, bit-identical to ref as the repacked ones are. */
#include "avx512.h"
#include "cpu.h"
#include "avx2/avx2.h"
#include "avx2/ops.h"

static int avx512_supported(void)
{
    return pl_cpu_avx512();
}

const struct pl_kernels pl_kernels_avx512 = {
    .name = "avx512",
    .supported = avx512_supported,
    .rmsnorm = rmsnorm_avx2,
    .layernorm = layernorm_avx2,   /* issue 49 (cohere2) */
    .swiglu_oai = swiglu_oai_avx2, /* issue 49 (gpt-oss) */
    .rope = rope_avx512,
    .softmax = softmax_avx2,
    .swiglu = swiglu_avx2,
    .geglu = geglu_avx512,
    .softcap = softcap_avx512,
    .attention = attention_avx512,
    .quantize_row =
        {
            [PL_TYPE_Q8_0] = quantize_row_q8_0_avx512,
            [PL_TYPE_Q8_K] = quantize_row_q8_k_avx512,
            [PL_TYPE_Q4_K] = quantize_row_q4_k_avx512,
            [PL_TYPE_Q5_K] = quantize_row_q5_k_avx512,
            [PL_TYPE_Q6_K] = quantize_row_q6_k_avx512,
        },
    .matmul =
        {
            [PL_TYPE_F32] = matmul_f32_avx512,
            [PL_TYPE_F16] = matmul_f16_avx512,
            [PL_TYPE_BF16] = matmul_bf16_avx512,
            [PL_TYPE_Q4_0] = matmul_q4_0_q8_0_avx512,
            [PL_TYPE_Q4_1] = matmul_q4_1_q8_0_avx512,
            [PL_TYPE_Q5_0] = matmul_q5_0_q8_0_avx512,
            [PL_TYPE_Q5_1] = matmul_q5_1_q8_0_avx512,
            [PL_TYPE_Q8_0] = matmul_q8_0_q8_0_avx512,
            [PL_TYPE_Q4_K] = matmul_q4_k_q8_k_avx512,
            [PL_TYPE_Q5_K] = matmul_q5_k_q8_k_avx512,
            [PL_TYPE_Q6_K] = matmul_q6_k_q8_k_avx512,
            [PL_TYPE_Q2_K] = matmul_q2_k_q8_k_avx2,
            [PL_TYPE_Q3_K] = matmul_q3_k_q8_k_avx2,
            [PL_TYPE_IQ4_NL] = matmul_iq4_nl_q8_0_avx2,
            [PL_TYPE_IQ4_XS] = matmul_iq4_xs_q8_k_avx2,
            [PL_TYPE_MXFP4] = matmul_mxfp4_q8_0_avx2,
        },
    .repack =
        {
            [PL_TYPE_F32] = &pl_repack_f32_avx512,
            [PL_TYPE_F16] = &pl_repack_f16_avx512,
            [PL_TYPE_BF16] = &pl_repack_bf16_avx512,
            [PL_TYPE_Q4_0] = &pl_repack_q4_0_avx512,
            [PL_TYPE_Q4_1] = &pl_repack_q4_1_avx512,
            [PL_TYPE_Q5_0] = &pl_repack_q5_0_avx512,
            [PL_TYPE_Q5_1] = &pl_repack_q5_1_avx512,
            [PL_TYPE_Q8_0] = &pl_repack_q8_0_avx512,
            [PL_TYPE_Q4_K] = &pl_repack_q4_k_avx512,
            [PL_TYPE_Q5_K] = &pl_repack_q5_k_avx512,
            [PL_TYPE_Q6_K] = &pl_repack_q6_k_avx512,
            [PL_TYPE_Q2_K] = &pl_repack_q2_k_avx512,
            [PL_TYPE_Q3_K] = &pl_repack_q3_k_avx512,
            [PL_TYPE_IQ4_NL] = &pl_repack_iq4_nl_avx512,
            [PL_TYPE_IQ4_XS] = &pl_repack_iq4_xs_avx512,
            [PL_TYPE_MXFP4] = &pl_repack_mxfp4_avx512,
        },
};
