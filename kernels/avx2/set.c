/* set.c — the avx2 kernel table (AVX2 + FMA + F16C; no AVX-512, no VNNI). Entries left
 * NULL fall back to ref, explicitly: the registry records them and `plumb kernels` prints
 * them. Integer dots avoid maddubs saturation and sign_epi8's -128 (matmul_q.c says how). */
#include "avx2.h"
#include "cpu.h"
#include "ops.h"

static int avx2_supported(void)
{
    return pl_cpu_avx2();
}

const struct pl_kernels pl_kernels_avx2 = {
    .name = "avx2",
    .supported = avx2_supported,
    .rmsnorm = rmsnorm_avx2,
    .layernorm = layernorm_avx2,   /* issue 49 (cohere2) */
    .swiglu_oai = swiglu_oai_avx2, /* issue 49 (gpt-oss) */
    .rope = rope_avx2,
    .softmax = softmax_avx2,
    .swiglu = swiglu_avx2,
    .geglu = geglu_avx2,
    .softcap = softcap_avx2,
    .attention = attention_avx2,
    .quantize_row =
        {
            [PL_TYPE_Q8_0] = quantize_row_q8_0_avx2,
            [PL_TYPE_Q8_K] = quantize_row_q8_k_avx2,
        },
    .matmul =
        {
            [PL_TYPE_F32] = matmul_f32_avx2,
            [PL_TYPE_F16] = matmul_f16_avx2,
            [PL_TYPE_BF16] = matmul_bf16_avx2,
            [PL_TYPE_Q4_0] = matmul_q4_0_q8_0_avx2,
            [PL_TYPE_Q4_1] = matmul_q4_1_q8_0_avx2,
            [PL_TYPE_Q5_0] = matmul_q5_0_q8_0_avx2,
            [PL_TYPE_Q5_1] = matmul_q5_1_q8_0_avx2,
            [PL_TYPE_Q8_0] = matmul_q8_0_q8_0_avx2,
            [PL_TYPE_Q4_K] = matmul_q4_k_q8_k_avx2,
            [PL_TYPE_Q5_K] = matmul_q5_k_q8_k_avx2,
            [PL_TYPE_Q6_K] = matmul_q6_k_q8_k_avx2,
            [PL_TYPE_Q2_K] = matmul_q2_k_q8_k_avx2,
            [PL_TYPE_Q3_K] = matmul_q3_k_q8_k_avx2,
            [PL_TYPE_IQ4_NL] = matmul_iq4_nl_q8_0_avx2,
            [PL_TYPE_IQ4_XS] = matmul_iq4_xs_q8_k_avx2,
            [PL_TYPE_MXFP4] = matmul_mxfp4_q8_0_avx2,
        },
    .repack =
        {
            [PL_TYPE_Q4_0] = &pl_repack_q4_0_avx2,
            [PL_TYPE_Q4_1] = &pl_repack_q4_1_avx2,
            [PL_TYPE_Q5_0] = &pl_repack_q5_0_avx2,
            [PL_TYPE_Q5_1] = &pl_repack_q5_1_avx2,
            [PL_TYPE_Q8_0] = &pl_repack_q8_0_avx2,
        },
};
