/* set.c — the wasm128 kernel table (WebAssembly SIMD128), and with PL_W_RELAXED
 * (set_relaxed.c) the wasm128r table: the same entries but the quantized matmuls, which use
 * the relaxed integer dot. In the browser the best set the module has; natively it runs
 * through SIMDe, chosen only by name, to prove the sources. Entries left NULL fall back to
 * ref, explicitly (the registry records and reports them). */
#include "cpu.h"
#include "wasm128.h"

static int wasm128_supported(void)
{
#if defined(__AVX2__) && !defined(__wasm_simd128__)
    return pl_cpu_avx2(); /* natively on x86, SIMDe compiled for AVX2 (kernels/CMakeLists.txt) */
#else
    return 1; /* compiled for SIMD128 (emcc -msimd128) or portable through SIMDe */
#endif
}

const struct pl_kernels PL_WQ(pl_kernels) = {
    .name = PL_W_RELAXED ? "wasm128r" : "wasm128",
    .supported = wasm128_supported,
    .rmsnorm = rmsnorm_wasm128,
    .layernorm = layernorm_wasm128,   /* issue 49 (cohere2) */
    .swiglu_oai = swiglu_oai_wasm128, /* issue 49 (gpt-oss) */
    .rope = rope_wasm128,
    .softmax = softmax_wasm128,
    .swiglu = swiglu_wasm128,
    .geglu = geglu_wasm128,
    .softcap = softcap_wasm128,
    .attention = attention_wasm128,
#if PL_W_RELAXED
    .repack =
        {
            [PL_TYPE_Q4_0] = &pl_repack_q4_0_wasm128r,
            [PL_TYPE_Q5_0] = &pl_repack_q5_0_wasm128r,
            [PL_TYPE_Q8_0] = &pl_repack_q8_0_wasm128r,
        },
#endif
    .quantize_row =
        {
            [PL_TYPE_Q8_0] = quantize_row_q8_0_wasm128,
            [PL_TYPE_Q8_K] = quantize_row_q8_k_wasm128,
        },
    .matmul =
        {
            [PL_TYPE_F32] = matmul_f32_wasm128,
            [PL_TYPE_F16] = matmul_f16_wasm128,
            [PL_TYPE_BF16] = matmul_bf16_wasm128,
            [PL_TYPE_Q4_0] = PL_WQ(matmul_q4_0_q8_0),
            [PL_TYPE_Q4_1] = PL_WQ(matmul_q4_1_q8_0),
            [PL_TYPE_Q5_0] = PL_WQ(matmul_q5_0_q8_0),
            [PL_TYPE_Q5_1] = PL_WQ(matmul_q5_1_q8_0),
            [PL_TYPE_Q8_0] = PL_WQ(matmul_q8_0_q8_0),
            [PL_TYPE_Q4_K] = PL_WQ(matmul_q4_k_q8_k),
            [PL_TYPE_Q5_K] = PL_WQ(matmul_q5_k_q8_k),
            [PL_TYPE_Q6_K] = PL_WQ(matmul_q6_k_q8_k),
            [PL_TYPE_Q2_K] = PL_WQ(matmul_q2_k_q8_k),
            [PL_TYPE_Q3_K] = PL_WQ(matmul_q3_k_q8_k),
            [PL_TYPE_IQ4_NL] = PL_WQ(matmul_iq4_nl_q8_0),
            [PL_TYPE_IQ4_XS] = PL_WQ(matmul_iq4_xs_q8_k),
            [PL_TYPE_MXFP4] = PL_WQ(matmul_mxfp4_q8_0),
        },
};

#if defined(__EMSCRIPTEN__) && !PL_W_RELAXED
/* A module has wasm128r only where the relaxed variant links its clang-19 objects
 * (web/CMakeLists.txt): their strong definition replaces this one, which no engine offers.
 * Here, not in registry.c, so that no compiler folds this table into the registry's loops. */
static int wasm128r_absent(void)
{
    return 0;
}
__attribute__((weak)) const struct pl_kernels pl_kernels_wasm128r = {
    .name = "wasm128r",
    .supported = wasm128r_absent,
};
#endif
