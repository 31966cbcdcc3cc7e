/* set.c — the reference kernel table. Every entry is filled: ref is the fallback for
 * every other set, so it may leave nothing out. */
#include "ref.h"

static int ref_supported(void)
{
    return 1;
}

const struct pl_kernels pl_kernels_ref = {
    .name = "ref",
    .supported = ref_supported,
    .quantize_row =
        {
            [PL_TYPE_F32] = quantize_row_f32_ref,
            [PL_TYPE_F16] = quantize_row_f16_ref,
            [PL_TYPE_BF16] = quantize_row_bf16_ref,
            [PL_TYPE_Q4_0] = quantize_row_q4_0_ref,
            [PL_TYPE_Q4_1] = quantize_row_q4_1_ref,
            [PL_TYPE_Q5_0] = quantize_row_q5_0_ref,
            [PL_TYPE_Q5_1] = quantize_row_q5_1_ref,
            [PL_TYPE_Q8_0] = quantize_row_q8_0_ref,
            [PL_TYPE_Q4_K] = quantize_row_q4_k_ref,
            [PL_TYPE_Q5_K] = quantize_row_q5_k_ref,
            [PL_TYPE_Q6_K] = quantize_row_q6_k_ref,
            [PL_TYPE_Q8_K] = quantize_row_q8_k_ref,
            [PL_TYPE_Q2_K] = quantize_row_q2_k_ref,
            [PL_TYPE_Q3_K] = quantize_row_q3_k_ref,
            [PL_TYPE_IQ4_NL] = quantize_row_iq4_nl_ref,
            [PL_TYPE_IQ4_XS] = quantize_row_iq4_xs_ref,
        },
    .dequantize_row =
        {
            [PL_TYPE_F32] = dequantize_row_f32_ref,
            [PL_TYPE_F16] = dequantize_row_f16_ref,
            [PL_TYPE_BF16] = dequantize_row_bf16_ref,
            [PL_TYPE_Q4_0] = dequantize_row_q4_0_ref,
            [PL_TYPE_Q4_1] = dequantize_row_q4_1_ref,
            [PL_TYPE_Q5_0] = dequantize_row_q5_0_ref,
            [PL_TYPE_Q5_1] = dequantize_row_q5_1_ref,
            [PL_TYPE_Q8_0] = dequantize_row_q8_0_ref,
            [PL_TYPE_Q4_K] = dequantize_row_q4_k_ref,
            [PL_TYPE_Q5_K] = dequantize_row_q5_k_ref,
            [PL_TYPE_Q6_K] = dequantize_row_q6_k_ref,
            [PL_TYPE_Q8_K] = dequantize_row_q8_k_ref,
            [PL_TYPE_Q2_K] = dequantize_row_q2_k_ref,
            [PL_TYPE_Q3_K] = dequantize_row_q3_k_ref,
            [PL_TYPE_IQ4_NL] = dequantize_row_iq4_nl_ref,
            [PL_TYPE_IQ4_XS] = dequantize_row_iq4_xs_ref,
        },
    .matmul =
        {
            [PL_TYPE_F32] = matmul_f32_ref,
            [PL_TYPE_F16] = matmul_f16_ref,
            [PL_TYPE_BF16] = matmul_bf16_ref,
            [PL_TYPE_Q4_0] = matmul_q4_0_q8_0_ref,
            [PL_TYPE_Q4_1] = matmul_q4_1_q8_0_ref,
            [PL_TYPE_Q5_0] = matmul_q5_0_q8_0_ref,
            [PL_TYPE_Q5_1] = matmul_q5_1_q8_0_ref,
            [PL_TYPE_Q8_0] = matmul_q8_0_q8_0_ref,
            [PL_TYPE_Q4_K] = matmul_q4_k_q8_k_ref,
            [PL_TYPE_Q5_K] = matmul_q5_k_q8_k_ref,
            [PL_TYPE_Q6_K] = matmul_q6_k_q8_k_ref,
            [PL_TYPE_Q8_K] = matmul_q8_k_q8_k_ref,
            [PL_TYPE_Q2_K] = matmul_q2_k_q8_k_ref,
            [PL_TYPE_Q3_K] = matmul_q3_k_q8_k_ref,
            [PL_TYPE_IQ4_NL] = matmul_iq4_nl_q8_0_ref,
            [PL_TYPE_IQ4_XS] = matmul_iq4_xs_q8_k_ref,
        },
    .rmsnorm = rmsnorm_ref,
    .rope = rope_ref,
    .softmax = softmax_ref,
    .moe_route = moe_route_ref,
    .weighted_sum = weighted_sum_ref,
    .sigmoid = sigmoid_ref,
    .swiglu = swiglu_ref,
    .geglu = geglu_ref,
    .softcap = softcap_ref,
    .attention = attention_ref,
    .temperature = temperature_ref,
    .penalties = penalties_ref,
    .cand_softmax = cand_softmax_ref,
    .top_k = top_k_ref,
    .top_p = top_p_ref,
    .min_p = min_p_ref,
    .draw = draw_ref,
};
