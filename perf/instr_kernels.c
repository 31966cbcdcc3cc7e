/* instr_kernels.c — calls each kernel of one set through the resolved kernel table on fixed,
 * deterministic inputs, once per row, between callgrind client requests, so that a run under
 * `valgrind --tool=callgrind --collect-atstart=no` dumps the instructions of exactly that call
 * (one dump per row, named by the row). Natively the requests are no-ops. Not a benchmark of
 * time and not a test of values (conformance/ does that). perf/perf_instr.sh drives it.
 *
 * Run: ./instr_kernels SET   (SET: ref, avx2, ...; prints one line per row: name unit)
 *
 * Shapes (fixed: a change of shape is a change of baseline):
 *   matmul:    K = 1024, R = 64 rows, T = 1 (decode GEMV) and T = 8 (prefill GEMM), per type;
 *              repacked layouts (where the set has one) as the engine runs them: x_prep + matmul
 *   attention: T = 1, H = 8, Hkv = 2, D = 64, N = 128 cached entries, F16 and F32 KV; F16 with
 *              scores soft-capped at 50 (Gemma 2); F16 over N = 4096 sorted entries with a
 *              layer window of 64 (Gemma's local layers), kv_sorted off (scan) and on (skip)
 *   rmsnorm, softmax, swiglu, geglu, softcap (cap 30): n = 1024; rope: 8 heads x 64, neox,
 *   unscaled, and 8 heads x 128 with n_rot = 64, normal, freq_factors + YaRN (every knob);
 *   quantize: n = 1024 rows of activations to Q8_0 and Q8_K (the matmul's dot types) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <valgrind/callgrind.h>

#include "plumb.h"
#include "registry.h"
#include "types.h"

#define K_MM  1024
#define R_MM  64
#define T_MAX 8
#define N_OPS 1024

/* Starts counting: everything until measure_end is the row's. */
static void measure_begin(void)
{
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
}

/* Stops counting and dumps the row's count under its name. */
static void measure_end(const char *name, const char *unit)
{
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT(name);
    printf("%s %s\n", name, unit);
}

static uint64_t rnd(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* n floats in [-1, 1) from a fixed seed. */
static void fill(float *x, int64_t n, uint64_t seed)
{
    for (int64_t i = 0; i < n; i++) x[i] = (float)((double)(rnd(&seed) >> 11) * 0x1p-52 - 1.0);
}

static size_t row_bytes(pl_type t, int64_t n)
{
    size_t b = 0;
    if (pl_type_row_bytes(t, n, &b, NULL) != PL_OK) {
        fprintf(stderr, "instr_kernels: no row size for type %d, n %lld\n", (int)t, (long long)n);
        exit(1);
    }
    return b;
}

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "instr_kernels: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* Writes an R x K weight matrix of type t (quantized by ref, so every set sees the same bytes). */
static void *make_weights(pl_type t, int64_t K, int64_t R, uint64_t seed)
{
    size_t rb = row_bytes(t, K);
    uint8_t *w = xmalloc(rb * (size_t)R);
    float *row = xmalloc((size_t)K * sizeof(float));
    for (int64_t r = 0; r < R; r++) {
        fill(row, K, seed + (uint64_t)r);
        if (t == PL_TYPE_F32)
            memcpy(w + rb * (size_t)r, row, rb);
        else
            pl_kernels_ref.quantize_row[t](w + rb * (size_t)r, row, K);
    }
    free(row);
    return w;
}

static const pl_type MM_TYPES[] = {PL_TYPE_F32,  PL_TYPE_F16,  PL_TYPE_BF16, PL_TYPE_Q4_0,
                                   PL_TYPE_Q4_1, PL_TYPE_Q5_0, PL_TYPE_Q5_1, PL_TYPE_Q8_0,
                                   PL_TYPE_Q4_K, PL_TYPE_Q5_K, PL_TYPE_Q6_K};

static void lower(char *dst, const char *src, size_t cap)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++)
        dst[i] = (char)(src[i] >= 'A' && src[i] <= 'Z' ? src[i] - 'A' + 'a' : src[i]);
    dst[i] = 0;
}

static void bench_matmul(const struct pl_kernels *k, pl_type t, float *xf)
{
    const struct pl_type_traits *tr = pl_type_traits_of(t);
    char tn[16], name[64];
    lower(tn, tr->name, sizeof tn);
    void *w = make_weights(t, K_MM, R_MM, 1000 + (uint64_t)t);
    size_t wrb = row_bytes(t, K_MM);
    /* Activations in the dot type, quantized by the set (as the engine does, outside the row). */
    pl_type dot = tr->dot_type;
    size_t xrb = dot == PL_TYPE_F32 ? K_MM * sizeof(float) : row_bytes(dot, K_MM);
    uint8_t *x = xmalloc(xrb * T_MAX);
    for (int t_ = 0; t_ < T_MAX; t_++) {
        if (dot == PL_TYPE_F32)
            memcpy(x + xrb * (size_t)t_, xf + (size_t)t_ * K_MM, xrb);
        else
            k->quantize_row[dot](x + xrb * (size_t)t_, xf + (size_t)t_ * K_MM, K_MM);
    }
    float *y = xmalloc((size_t)R_MM * T_MAX * sizeof(float));
    static const int Ts[] = {1, T_MAX};
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "matmul_%s_t%d", tn, Ts[i]);
        measure_begin();
        k->matmul[t](y, R_MM, w, wrb, x, xrb, K_MM, 0, R_MM, Ts[i]);
        measure_end(name, "per call");
    }
    const pl_repack *rp = k->repack[t];
    if (rp) {
        uint8_t *pw = xmalloc(rp->size(K_MM, R_MM));
        rp->pack(pw, w, wrb, K_MM, R_MM);
        size_t prb = rp->x_prep ? rp->x_row(K_MM) : xrb;
        uint8_t *px = rp->x_prep ? xmalloc(prb * T_MAX) : x;
        for (int i = 0; i < 2; i++) {
            snprintf(name, sizeof name, "matmul_repack_%s_t%d", tn, Ts[i]);
            measure_begin();
            if (rp->x_prep)
                for (int t_ = 0; t_ < Ts[i]; t_++)
                    rp->x_prep(px + prb * (size_t)t_, x + xrb * (size_t)t_, K_MM);
            rp->matmul(y, R_MM, pw, wrb, px, prb, K_MM, 0, R_MM, Ts[i]);
            measure_end(name, "per call");
        }
        if (px != x) free(px);
        free(pw);
    }
    free(y);
    free(x);
    free(w);
}

/* One decode call; softcap, layer_window and kv_sorted as pl_attn_args; N entries at 0..N-1. */
static void bench_attention(const struct pl_kernels *k, pl_type kv, const char *name, int64_t N,
                            float softcap, int64_t layer_window, int sorted)
{
    enum { T = 1, H = 8, HKV = 2, D = 64 };
    size_t es = kv == PL_TYPE_F32 ? sizeof(float) : sizeof(pl_f16);
    float *q = xmalloc((size_t)T * H * D * sizeof(float));
    float *tmp = xmalloc((size_t)N * HKV * D * sizeof(float));
    uint8_t *kc = xmalloc((size_t)N * HKV * D * es), *vc = xmalloc((size_t)N * HKV * D * es);
    fill(q, T * H * D, 7);
    for (int pass = 0; pass < 2; pass++) {
        fill(tmp, N * HKV * D, 8 + (uint64_t)pass);
        uint8_t *dst = pass ? vc : kc;
        for (int64_t i = 0; i < N * HKV * D; i++) {
            if (kv == PL_TYPE_F32)
                memcpy(dst + i * 4, &tmp[i], 4);
            else {
                pl_f16 h = pl_f32_to_f16(tmp[i]);
                memcpy(dst + i * 2, &h, 2);
            }
        }
    }
    int32_t q_pos[T] = {(int32_t)N - 1}, *kv_pos = xmalloc((size_t)N * sizeof *kv_pos);
    for (int i = 0; i < N; i++) kv_pos[i] = i;
    pl_attn_args a = {.T = T,
                      .H = H,
                      .Hkv = HKV,
                      .D = D,
                      .N = N,
                      .q = q,
                      .q_pos = q_pos,
                      .k = kc,
                      .v = vc,
                      .kv_type = kv,
                      .kv_pos = kv_pos,
                      .scale = 0.125f,
                      .softcap = softcap,
                      .layer_window = layer_window,
                      .kv_sorted = sorted};
    float *out = xmalloc((size_t)T * H * D * sizeof(float));
    float *scratch = xmalloc(PL_ATTN_SCRATCH(N, D) * sizeof(float));
    measure_begin();
    k->attention(out, &a, 0, H, scratch);
    measure_end(name, "per call");
    free(kv_pos);
    free(scratch);
    free(out);
    free(vc);
    free(kc);
    free(tmp);
    free(q);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: instr_kernels SET\n");
        return 2;
    }
    pl_kernel_table kt;
    pl_error err = {0};
    if (pl_kernels_init(&kt, argv[1], &err) != PL_OK) {
        fprintf(stderr, "instr_kernels: %s\n", err.msg);
        return 1;
    }
    const struct pl_kernels *k = &kt.k;
    float *xf = xmalloc((size_t)K_MM * T_MAX * sizeof(float));
    fill(xf, (int64_t)K_MM * T_MAX, 42);

    for (size_t i = 0; i < sizeof MM_TYPES / sizeof MM_TYPES[0]; i++)
        bench_matmul(k, MM_TYPES[i], xf);
    bench_attention(k, PL_TYPE_F16, "attention_f16kv_n128", 128, 0.0f, 0, 0);
    bench_attention(k, PL_TYPE_F32, "attention_f32kv_n128", 128, 0.0f, 0, 0);
    bench_attention(k, PL_TYPE_F16, "attention_f16kv_n128_cap50", 128, 50.0f, 0, 0);
    bench_attention(k, PL_TYPE_F16, "attention_f16kv_n4096_lw64_scan", 4096, 0.0f, 64, 0);
    bench_attention(k, PL_TYPE_F16, "attention_f16kv_n4096_lw64_sorted", 4096, 0.0f, 64, 1);

    float *w = xmalloc(N_OPS * sizeof(float)), *y = xmalloc(N_OPS * sizeof(float));
    fill(w, N_OPS, 3);
    measure_begin();
    k->rmsnorm(y, xf, w, N_OPS, 1e-6f);
    measure_end("rmsnorm_n1024", "per call");
    measure_begin();
    k->softmax(y, xf, N_OPS);
    measure_end("softmax_n1024", "per call");
    measure_begin();
    k->swiglu(y, xf, xf + N_OPS, N_OPS);
    measure_end("swiglu_n1024", "per call");
    measure_begin();
    k->geglu(y, xf, xf + N_OPS, N_OPS);
    measure_end("geglu_n1024", "per call");
    measure_begin();
    k->softcap(y, xf, N_OPS, 30.0f);
    measure_end("softcap_n1024", "per call");
    memcpy(y, xf, 8 * 64 * sizeof(float));
    measure_begin();
    const pl_rope_args rope = {.n_rot = 64,
                               .freq_base = 1e6f,
                               .freq_scale = 1.0f,
                               .attn_factor = 1.0f,
                               .style = PL_ROPE_NEOX};
    k->rope(y, 8, 64, 100, &rope);
    measure_end("rope_neox_8x64", "per call");
    float factors[32];
    for (int i = 0; i < 32; i++) factors[i] = 1.0f + 0.25f * (float)(i % 5);
    memcpy(y, xf, 8 * 128 * sizeof(float));
    const pl_rope_args yarn = {.n_rot = 64,
                               .freq_base = 1e4f,
                               .freq_scale = 0.25f,
                               .freq_factors = factors,
                               .ext_factor = 1.0f,
                               .attn_factor = 1.0f,
                               .beta_fast = 32.0f,
                               .beta_slow = 1.0f,
                               .n_ctx_orig = 4096,
                               .style = PL_ROPE_NORMAL};
    measure_begin();
    k->rope(y, 8, 128, 5000, &yarn);
    measure_end("rope_normal_yarn_8x128_rot64", "per call");

    static const pl_type QT[] = {PL_TYPE_Q8_0, PL_TYPE_Q8_K};
    for (int i = 0; i < 2; i++) {
        uint8_t *q = xmalloc(row_bytes(QT[i], N_OPS));
        measure_begin();
        k->quantize_row[QT[i]](q, xf, N_OPS);
        measure_end(i ? "quantize_q8_k_n1024" : "quantize_q8_0_n1024", "per call");
        free(q);
    }
    free(y);
    free(w);
    free(xf);
    return 0;
}
