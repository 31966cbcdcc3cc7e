/* wasm128_hash.c — runs every wasm128 kernel (matmul of each weight type, the Q8_0/Q8_K
 * quantizers, rmsnorm, softmax, swiglu, geglu, softcap, attention) on fixed pseudo-random inputs
 * and prints a running FNV-1a hash of their output bits. Built natively (SIMDe) and with emcc
 * -msimd128 (run in node) by wasm128_native_vs_wasm.sh, which wants the two outputs identical:
 * the browser's kernels compute what the native suite proved, bit for bit. Not rope: its cos
 * and sin come from libm (musl in wasm, glibc natively), which is the ref set's concern. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wasm128/wasm128.h"

static uint64_t g_rng = 88172645463325252ull, g_hash = 1469598103934665603ull;

static uint32_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)g_rng;
}

static float rnd_f(void)
{
    return (float)((int)(rnd() % 2000001) - 1000000) / 99991.0f;
}

static void hash(const char *what, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) g_hash = (g_hash ^ b[i]) * 1099511628211ull;
    printf("%-10s %016llx\n", what, (unsigned long long)g_hash);
}

enum { KF = 1093, K32 = 1120, KK = 2048, R = 5, T = 6 };

/* Random weight bytes with finite, moderate f16 scales (and signed mins). */
static uint8_t *weights(pl_type type, int64_t k, size_t *row_bytes)
{
    const struct pl_type_traits *tr = pl_type_traits_of(type);
    const int64_t nb = k / tr->block_size;
    *row_bytes = (size_t)nb * tr->block_bytes;
    uint8_t *w = malloc(*row_bytes * R);
    for (size_t i = 0; i < *row_bytes * R; i++) w[i] = (uint8_t)rnd();
    for (int64_t b = 0; b < nb * R; b++) {
        uint8_t *p = w + (size_t)b * tr->block_bytes;
        const float v = rnd_f();
        const uint16_t d = (uint16_t)(0x2000 + rnd() % 0x2000);
        const uint16_t m = (uint16_t)((0x2000 + rnd() % 0x2000) | (rnd() & 0x8000));
        const uint16_t h = type == PL_TYPE_BF16 ? pl_f32_to_bf16(v) : pl_f32_to_f16(v);
        if (type == PL_TYPE_F32)
            memcpy(p, &v, 4);
        else if (type == PL_TYPE_F16 || type == PL_TYPE_BF16)
            memcpy(p, &h, 2);
        else if (type == PL_TYPE_MXFP4)
            p[0] = (uint8_t)(120 + rnd() % 12); /* E8M0 scale 2^(e - 127) near 1 */
        else if (type == PL_TYPE_Q6_K)
            memcpy(p + offsetof(pl_block_q6_k, d), &d, 2);
        else if (type == PL_TYPE_Q3_K)
            memcpy(p + offsetof(pl_block_q3_k, d), &d, 2);
        else if (type == PL_TYPE_Q2_K) {
            memcpy(p + offsetof(pl_block_q2_k, d), &d, 2);
            memcpy(p + offsetof(pl_block_q2_k, dmin), &m, 2);
        } else {
            memcpy(p, &d, 2); /* the min follows d where there is one */
            if (type == PL_TYPE_Q4_1 || type == PL_TYPE_Q5_1 || type == PL_TYPE_Q4_K ||
                type == PL_TYPE_Q5_K)
                memcpy(p + 2, &m, 2);
        }
    }
    return w;
}

static void matmuls(void)
{
    static const struct {
        pl_type type;
        pl_matmul_fn fn;
    } mm[] = {
        {PL_TYPE_F32, matmul_f32_wasm128},
        {PL_TYPE_F16, matmul_f16_wasm128},
        {PL_TYPE_BF16, matmul_bf16_wasm128},
        {PL_TYPE_Q4_0, matmul_q4_0_q8_0_wasm128},
        {PL_TYPE_Q4_1, matmul_q4_1_q8_0_wasm128},
        {PL_TYPE_Q5_0, matmul_q5_0_q8_0_wasm128},
        {PL_TYPE_Q5_1, matmul_q5_1_q8_0_wasm128},
        {PL_TYPE_Q8_0, matmul_q8_0_q8_0_wasm128},
        {PL_TYPE_Q4_K, matmul_q4_k_q8_k_wasm128},
        {PL_TYPE_Q5_K, matmul_q5_k_q8_k_wasm128},
        {PL_TYPE_Q6_K, matmul_q6_k_q8_k_wasm128},
        {PL_TYPE_Q2_K, matmul_q2_k_q8_k_wasm128},
        {PL_TYPE_Q3_K, matmul_q3_k_q8_k_wasm128},
        {PL_TYPE_IQ4_NL, matmul_iq4_nl_q8_0_wasm128},
        {PL_TYPE_IQ4_XS, matmul_iq4_xs_q8_k_wasm128},
        {PL_TYPE_MXFP4, matmul_mxfp4_q8_0_wasm128},
    };
    static float xf[T][KK], y[T * R];
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
        const struct pl_type_traits *tr = pl_type_traits_of(mm[i].type);
        const int64_t k = tr->block_size == PL_QK_K ? KK : tr->block_size == 1 ? KF : K32;
        size_t wrb, xrb = sizeof xf[0];
        uint8_t *w = weights(mm[i].type, k, &wrb), *x = (uint8_t *)xf;
        for (int t = 0; t < T; t++)
            for (int64_t j = 0; j < k; j++) xf[t][j] = rnd_f();
        if (tr->dot_type != PL_TYPE_F32) {
            const struct pl_type_traits *dt = pl_type_traits_of(tr->dot_type);
            xrb = (size_t)(k / dt->block_size) * dt->block_bytes;
            x = malloc(xrb * T);
            for (int t = 0; t < T; t++)
                (tr->dot_type == PL_TYPE_Q8_0 ? quantize_row_q8_0_wasm128
                                              : quantize_row_q8_k_wasm128)(x + t * xrb, xf[t], k);
            hash(dt->name, x, xrb * T);
        }
        mm[i].fn(y, R, w, wrb, x, xrb, k, 0, R, T);
        hash(tr->name, y, sizeof y);
        free(w);
        if (x != (uint8_t *)xf) free(x);
    }
}

static void ops(void)
{
    enum { N = 1001 };
    static float a[N], b[N], o[N];
    for (int i = 0; i < N; i++) a[i] = rnd_f(), b[i] = rnd_f();
    rmsnorm_wasm128(o, a, b, N, 1e-5f);
    hash("rmsnorm", o, sizeof o);
    softmax_wasm128(o, a, N);
    hash("softmax", o, sizeof o);
    swiglu_wasm128(o, a, b, N);
    hash("swiglu", o, sizeof o);
    geglu_wasm128(o, a, b, N);
    hash("geglu", o, sizeof o);
    softcap_wasm128(o, a, N, 30.0f);
    hash("softcap", o, sizeof o);
}

static void attention(void)
{
    enum { AT = 3, AH = 4, AHKV = 2, AD = 70, AN = 37 };
    static float q[AT * AH * AD], out[AT * AH * AD], scratch[PL_ATTN_SCRATCH(AN, AD)];
    static pl_f16 k[AN * AHKV * AD], v[AN * AHKV * AD];
    static int32_t qp[AT], kp[AN];
    for (int i = 0; i < AT * AH * AD; i++) q[i] = rnd_f() / 4;
    for (int i = 0; i < AN * AHKV * AD; i++)
        k[i] = pl_f32_to_f16(rnd_f() / 4), v[i] = pl_f32_to_f16(rnd_f());
    for (int j = 0; j < AN; j++) kp[j] = j;
    for (int t = 0; t < AT; t++) qp[t] = 30 + t;
    pl_attn_args a = {.T = AT,
                      .H = AH,
                      .Hkv = AHKV,
                      .D = AD,
                      .N = AN,
                      .q = q,
                      .q_pos = qp,
                      .k = k,
                      .v = v,
                      .kv_type = PL_TYPE_F16,
                      .kv_pos = kp,
                      .window = 20,
                      .n_sinks = 2,
                      .scale = 0.12f,
                      .kv_sorted = 1};
    attention_wasm128(out, &a, 0, AH, scratch);
    hash("attention", out, sizeof out);
    a.softcap = 5.0f;
    attention_wasm128(out, &a, 0, AH, scratch);
    hash("attn-cap", out, sizeof out);
}

int main(void)
{
    matmuls();
    ops();
    attention();
    return 0;
}
