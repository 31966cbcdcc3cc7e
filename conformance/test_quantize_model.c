/* test_quantize_model.c — pl_quantize_rows/pl_dequantize_rows, the llama.cpp per-tensor type
 * rules, streamed GGUF writing and pl_model_quantize. Kernel accuracy is test_quant's job. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "kernels.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------------ */

static char tmpdir[64];

/* PATH_LEN bytes: "<tmpdir>/<name>" */
enum { PATH_LEN = 256 };
static void tmp_path(char *path, const char *name)
{
    if (!tmpdir[0]) {
        strcpy(tmpdir, "/tmp/plumb-quantize-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
            exit(2);
        }
    }
    snprintf(path, PATH_LEN, "%s/%s", tmpdir, name);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static int tmp_exists(const char *path)
{
    char t[PATH_LEN + 8];
    snprintf(t, sizeof t, "%s.tmp", path);
    return exists(t);
}

static void fill_normal(tu_rng *r, float *x, int64_t n, double scale)
{
    for (int64_t i = 0; i < n; i++) x[i] = (float)(scale * tu_rng_normal(r));
}

/* Round-trip error bounds on N(0,1) data: RMS relative to the input's RMS, and the largest
 * error relative to the largest |x| of its 32-element block. Legacy types: from the formats
 * (half a step, a full step for Q4_0/Q5_0's one-sided range, plus f16 scale rounding); K-quants
 * and F16/BF16: measured x1.5 (their search-based scales have no simple closed form); Q2_K, Q3_K,
 * IQ4_NL, IQ4_XS: the worst of seeds 1-6, x1.5. */
static const struct tol {
    pl_type type;
    double rms, max_rel;
} tols[] = {
    {PL_TYPE_F32, 0, 0},
    {PL_TYPE_F16, 5e-4, 1e-3},
    {PL_TYPE_BF16, 4e-3, 8e-3},
    {PL_TYPE_Q8_0, 0.01, 0.006},
    {PL_TYPE_Q4_0, 0.13, 0.13},
    {PL_TYPE_Q4_1, 0.12, 0.07},
    {PL_TYPE_Q5_0, 0.065, 0.066},
    {PL_TYPE_Q5_1, 0.056, 0.036},
    {PL_TYPE_Q4_K, 0.11, 0.125},
    {PL_TYPE_Q5_K, 0.055, 0.08},
    {PL_TYPE_Q6_K, 0.027, 0.025},
    {PL_TYPE_Q8_K, 0.011, 0.014},
    /* the larger of two measurements x1.5: 200 rows of 16384 (rms 0.301, 0.154, 0.077, 0.078;
     * max 0.505, 0.253, 0.123, 0.142) and the whole-model quantizations below */
    {PL_TYPE_Q2_K, 0.47, 0.76},
    {PL_TYPE_Q3_K, 0.23, 0.38},
    {PL_TYPE_IQ4_NL, 0.124, 0.19},
    {PL_TYPE_IQ4_XS, 0.121, 0.21},
    /* rms: the worst of seeds 1-20 of test_quant (0.112) x1.5; max: kernels/ref/quant.c's
     * proof (amax / 5) */
    {PL_TYPE_MXFP4, 0.17, 0.20},
};
enum { N_TOLS = sizeof tols / sizeof tols[0] };

static const struct tol *tol_of(uint32_t t)
{
    for (int i = 0; i < N_TOLS; i++)
        if ((uint32_t)tols[i].type == t) return &tols[i];
    return NULL;
}

/* RMS of (y - x) relative to RMS of x. */
static double rms_rel(const float *x, const float *y, int64_t n)
{
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)y[i] - (double)x[i];
        se += e * e;
        sx += (double)x[i] * x[i];
    }
    return sx > 0 ? sqrt(se / sx) : sqrt(se);
}

/* ---- rows --------------------------------------------------------------------------- */

static void quantize_rows_round_trip_within_type_bound(void)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x51);
    for (int ti = 0; ti < N_TOLS; ti++) {
        pl_type t = tols[ti].type;
        int64_t bs = pl_type_block_size(t);
        const int64_t lens[] = {bs, 2 * bs, 7 * bs, bs < 256 ? 256 : 3 * bs};
        for (int li = 0; li < 4; li++) {
            int64_t K = lens[li], R = 1 + (int64_t)tu_rng_range(&r, 0, 4);
            size_t rb;
            CU_ASSERT_FATAL(pl_type_row_bytes(t, K, &rb, NULL) == PL_OK);
            float *x = malloc(sizeof(float) * (size_t)(K * R));
            float *y = malloc(sizeof(float) * (size_t)(K * R));
            uint8_t *q = malloc(rb * (size_t)R), *qref = malloc(rb);
            fill_normal(&r, x, K * R, 1.0);
            pl_error err;
            TU_CHECK(pl_quantize_rows(t, q, x, R, K, &err) == PL_OK, "%s K=%lld: %s",
                     pl_type_name(t), (long long)K, err.msg);
            TU_CHECK(pl_dequantize_rows(t, y, q, R, K, &err) == PL_OK, "%s K=%lld: %s",
                     pl_type_name(t), (long long)K, err.msg);
            for (int64_t row = 0; row < R; row++) {
                /* bit-exact with the reference set's row quantizer */
                pl_kernels_ref.quantize_row[t](qref, x + row * K, K);
                TU_CHECK(memcmp(qref, q + (size_t)row * rb, rb) == 0,
                         "%s K=%lld row %lld differs from quantize_row_ref (seed %llu)",
                         pl_type_name(t), (long long)K, (long long)row,
                         (unsigned long long)tu_seed());
            }
            double e = rms_rel(x, y, K * R);
            TU_CHECK(e <= tols[ti].rms, "%s K=%lld R=%lld: rms_rel %.4g > %.4g (seed %llu)",
                     pl_type_name(t), (long long)K, (long long)R, e, tols[ti].rms,
                     (unsigned long long)tu_seed());
            int64_t sub = K % 32 == 0 ? 32 : 1;
            double worst = 0;
            for (int64_t b = 0; b < K * R; b += sub) {
                double amax = 0, emax = 0;
                for (int64_t i = b; i < b + sub; i++) {
                    amax = fmax(amax, fabs(x[i]));
                    emax = fmax(emax, fabs((double)y[i] - x[i]));
                }
                if (amax > 0) worst = fmax(worst, emax / amax);
            }
            TU_CHECK(worst <= tols[ti].max_rel, "%s K=%lld: max err/amax %.4g > %.4g (seed %llu)",
                     pl_type_name(t), (long long)K, worst, tols[ti].max_rel,
                     (unsigned long long)tu_seed());
            free(x);
            free(y);
            free(q);
            free(qref);
        }
    }
}

static void quantize_rows_rejects_bad_arguments(void)
{
    float x[64] = {0};
    uint8_t q[256];
    pl_error err;
    TU_CHECK(pl_quantize_rows(PL_TYPE_Q4_0, q, x, 1, 48, &err) == PL_ERR_INVALID_ARG,
             "48 is not a multiple of 32");
    TU_CHECK(strstr(err.msg, "48") && strstr(err.msg, "32") && strstr(err.msg, "Q4_0"),
             "message names the row length, the block and the type: %s", err.msg);
    TU_CHECK(pl_quantize_rows(PL_TYPE_Q4_K, q, x, 1, 64, &err) == PL_ERR_INVALID_ARG,
             "Q4_K needs multiples of 256");
    TU_CHECK(pl_quantize_rows((pl_type)16, q, x, 1, 256, &err) == PL_ERR_UNSUPPORTED,
             "IQ2_XXS is not implemented");
    TU_CHECK(strstr(err.msg, "IQ2_XXS") != NULL, "message names the type: %s", err.msg);
    TU_CHECK(pl_quantize_rows((pl_type)99, q, x, 1, 32, &err) == PL_ERR_UNSUPPORTED, "id 99");
    TU_CHECK(pl_quantize_rows(PL_TYPE_Q8_0, NULL, x, 1, 32, &err) == PL_ERR_INVALID_ARG, "dst");
    TU_CHECK(pl_dequantize_rows(PL_TYPE_Q8_0, x, NULL, 1, 32, &err) == PL_ERR_INVALID_ARG, "src");
    TU_CHECK(pl_quantize_rows(PL_TYPE_Q8_0, q, x, -1, 32, &err) == PL_ERR_INVALID_ARG, "rows");
    TU_CHECK(pl_quantize_rows(PL_TYPE_Q8_0, q, x, 1, 0, &err) == PL_ERR_INVALID_ARG, "row_len");
    TU_CHECK(pl_quantize_rows(PL_TYPE_Q8_0, q, x, INT64_MAX / 2, 64, &err) == PL_ERR_LIMIT,
             "overflowing size");
    TU_CHECK(pl_quantize_rows(PL_TYPE_Q8_0, q, x, 0, 32, &err) == PL_OK, "zero rows is a no-op");
}

static void quantize_rows_never_allocate(void)
{
    float x[256], y[256];
    uint8_t q[1024];
    for (int i = 0; i < 256; i++) x[i] = (float)i / 256.0f - 0.5f;
    tu_alloc_fail_at(1, 1);
    pl_status a = pl_quantize_rows(PL_TYPE_Q4_K, q, x, 1, 256, NULL);
    pl_status b = pl_dequantize_rows(PL_TYPE_Q4_K, y, q, 1, 256, NULL);
    uint64_t n = tu_alloc_count();
    tu_alloc_reset();
    TU_CHECK(a == PL_OK && b == PL_OK, "with every allocation failing: %d %d", a, b);
    TU_CHECK(n == 0, "%llu allocations attempted", (unsigned long long)n);
}

/* ---- file types and per-tensor rules ---------------------------------------------------- */

static void ftype_names_parse_and_print(void)
{
    static const struct {
        const char *name;
        pl_ftype f;
    } cases[] = {{"F32", PL_FTYPE_F32},        {"f16", PL_FTYPE_F16},
                 {"BF16", PL_FTYPE_BF16},      {"Q8_0", PL_FTYPE_Q8_0},
                 {"q4_0", PL_FTYPE_Q4_0},      {"Q4_1", PL_FTYPE_Q4_1},
                 {"Q5_0", PL_FTYPE_Q5_0},      {"Q5_1", PL_FTYPE_Q5_1},
                 {"Q4_K", PL_FTYPE_Q4_K_M},    {"Q4_K_S", PL_FTYPE_Q4_K_S},
                 {"q4_k_m", PL_FTYPE_Q4_K_M},  {"Q5_K", PL_FTYPE_Q5_K_M},
                 {"Q5_K_S", PL_FTYPE_Q5_K_S},  {"Q5_K_M", PL_FTYPE_Q5_K_M},
                 {"Q6_K", PL_FTYPE_Q6_K},      {"Q2_K", PL_FTYPE_Q2_K},
                 {"q2_k_s", PL_FTYPE_Q2_K_S},  {"Q3_K", PL_FTYPE_Q3_K_M},
                 {"Q3_K_S", PL_FTYPE_Q3_K_S},  {"Q3_K_M", PL_FTYPE_Q3_K_M},
                 {"Q3_K_L", PL_FTYPE_Q3_K_L},  {"iq4_nl", PL_FTYPE_IQ4_NL},
                 {"IQ4_XS", PL_FTYPE_IQ4_XS},  {"MXFP4_MOE", PL_FTYPE_MXFP4_MOE},
                 {"mxfp4", PL_FTYPE_MXFP4_MOE}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pl_ftype f = (pl_ftype)-1;
        pl_error err;
        TU_CHECK(pl_ftype_from_name(cases[i].name, &f, &err) == PL_OK && f == cases[i].f,
                 "'%s' -> %d", cases[i].name, (int)f);
        TU_CHECK(pl_ftype_name(f) != NULL, "name of %d", (int)f);
    }
    /* llama.cpp's numbers, which general.file_type carries */
    CU_ASSERT_EQUAL(PL_FTYPE_Q8_0, 7);
    CU_ASSERT_EQUAL(PL_FTYPE_Q4_K_M, 15);
    CU_ASSERT_EQUAL(PL_FTYPE_Q5_K_M, 17);
    CU_ASSERT_EQUAL(PL_FTYPE_BF16, 32);
    /* and the new mixes' numbers (llama-quantize --help at c392e509) */
    CU_ASSERT_EQUAL(PL_FTYPE_Q2_K, 10);
    CU_ASSERT_EQUAL(PL_FTYPE_Q3_K_S, 11);
    CU_ASSERT_EQUAL(PL_FTYPE_Q3_K_M, 12);
    CU_ASSERT_EQUAL(PL_FTYPE_Q3_K_L, 13);
    CU_ASSERT_EQUAL(PL_FTYPE_Q2_K_S, 21);
    CU_ASSERT_EQUAL(PL_FTYPE_IQ4_NL, 25);
    CU_ASSERT_EQUAL(PL_FTYPE_IQ4_XS, 30);
    CU_ASSERT_EQUAL(PL_FTYPE_MXFP4_MOE, 38);
    CU_ASSERT_EQUAL(pl_ftype_base_type(PL_FTYPE_MXFP4_MOE), PL_TYPE_MXFP4);
    CU_ASSERT_EQUAL(pl_ftype_base_type(PL_FTYPE_Q4_K_M), PL_TYPE_Q4_K);
    CU_ASSERT_EQUAL(pl_ftype_base_type(PL_FTYPE_Q2_K_S), PL_TYPE_Q2_K);
    CU_ASSERT_EQUAL(pl_ftype_base_type(PL_FTYPE_Q3_K_L), PL_TYPE_Q3_K);
    CU_ASSERT_EQUAL(pl_ftype_base_type(PL_FTYPE_IQ4_NL), PL_TYPE_IQ4_NL);
    CU_ASSERT_EQUAL(pl_ftype_base_type(PL_FTYPE_IQ4_XS), PL_TYPE_IQ4_XS);
    CU_ASSERT_EQUAL(pl_ftype_base_type(19), PL_TYPE_COUNT);
    CU_ASSERT_PTR_NULL(pl_ftype_name(19));
    pl_ftype f;
    pl_error err;
    TU_CHECK(pl_ftype_from_name("IQ2_XXS", &f, &err) == PL_ERR_UNSUPPORTED,
             "IQ2_XXS is not written");
    TU_CHECK(strstr(err.msg, "IQ2_XXS") && strstr(err.msg, "Q4_K_M") && strstr(err.msg, "IQ4_XS"),
             "message names the input and the choices: %s", err.msg);
}

/* A dense model's tensor as llama-quantize sees it: one attn_v and one ffn_down per layer, so
 * both counters are the layer index, and n_attention_wv is n_layer. */
static pl_tensor_plan plan(pl_ftype f, int pure, const char *name, int64_t ne0, int64_t ne1,
                           int64_t n_layer, int tied)
{
    pl_tensor_plan p;
    int64_t ne[2] = {ne0, ne1};
    pl_error err;
    int layer = 0;
    if (sscanf(name, "blk.%d.", &layer) != 1) layer = 0;
    pl_plan_model m = {
        .arch = "llama", .n_layer = n_layer, .tied = tied, .n_attention_wv = n_layer};
    pl_status s = pl_ftype_tensor_plan(f, pure, name, ne1 ? 2 : 1, ne, &m, layer, layer, &p, &err);
    TU_CHECK(s == PL_OK, "%s: %s", name, err.msg);
    return p;
}

#define CHECK_TYPE(p, want)                                                                        \
    TU_CHECK((p).quantize && (p).type == (want), "%s: got %s, want %s", #p,                        \
             pl_type_name((p).type), pl_type_name(want))

static void plan_q4_k_m_follows_llama_cpp(void)
{
    /* use_more_bits on 24 layers (Qwen2-0.5B): the first and last 3, and 5, 8, ..., 20 */
    for (int64_t il = 0; il < 24; il++) {
        char nv[64], nd[64], nq[64];
        snprintf(nv, sizeof nv, "blk.%lld.attn_v.weight", (long long)il);
        snprintf(nd, sizeof nd, "blk.%lld.ffn_down.weight", (long long)il);
        snprintf(nq, sizeof nq, "blk.%lld.attn_q.weight", (long long)il);
        int more = il < 3 || il >= 21 || (il - 3) % 3 == 2;
        pl_type want = more ? PL_TYPE_Q6_K : PL_TYPE_Q4_K;
        pl_tensor_plan v = plan(PL_FTYPE_Q4_K_M, 0, nv, 1024, 128, 24, 1);
        pl_tensor_plan d = plan(PL_FTYPE_Q4_K_M, 0, nd, 4864, 1024, 24, 1);
        pl_tensor_plan q = plan(PL_FTYPE_Q4_K_M, 0, nq, 1024, 1024, 24, 1);
        TU_CHECK(v.type == want && d.type == want && !v.fallback && !d.fallback,
                 "layer %lld: attn_v %s ffn_down %s, want %s", (long long)il, pl_type_name(v.type),
                 pl_type_name(d.type), pl_type_name(want));
        CHECK_TYPE(q, PL_TYPE_Q4_K);
        pl_tensor_plan v5 = plan(PL_FTYPE_Q5_K_M, 0, nv, 1024, 128, 24, 1);
        TU_CHECK(v5.type == (more ? PL_TYPE_Q6_K : PL_TYPE_Q5_K), "Q5_K_M layer %lld: %s",
                 (long long)il, pl_type_name(v5.type));
    }
    CHECK_TYPE(plan(PL_FTYPE_Q4_K_M, 0, "output.weight", 1024, 5000, 24, 0), PL_TYPE_Q6_K);
    CHECK_TYPE(plan(PL_FTYPE_Q4_K_M, 0, "token_embd.weight", 1024, 5000, 24, 0), PL_TYPE_Q4_K);
    CHECK_TYPE(plan(PL_FTYPE_Q4_K_M, 0, "token_embd.weight", 1024, 5000, 24, 1), PL_TYPE_Q6_K);
    CHECK_TYPE(plan(PL_FTYPE_Q5_K_M, 0, "attn_qkv.weight", 1024, 64, 24, 0), PL_TYPE_Q6_K);
    CHECK_TYPE(plan(PL_FTYPE_Q4_K_M, 0, "blk.0.attn_qkv.weight", 1024, 64, 24, 0), PL_TYPE_Q5_K);
    /* Q4_K_S: attn_v on layers < 4 and ffn_down on the first eighth get Q5_K */
    CHECK_TYPE(plan(PL_FTYPE_Q4_K_S, 0, "blk.3.attn_v.weight", 256, 8, 16, 1), PL_TYPE_Q5_K);
    CHECK_TYPE(plan(PL_FTYPE_Q4_K_S, 0, "blk.4.attn_v.weight", 256, 8, 16, 1), PL_TYPE_Q4_K);
    CHECK_TYPE(plan(PL_FTYPE_Q4_K_S, 0, "blk.1.ffn_down.weight", 256, 8, 16, 1), PL_TYPE_Q5_K);
    CHECK_TYPE(plan(PL_FTYPE_Q4_K_S, 0, "blk.2.ffn_down.weight", 256, 8, 16, 1), PL_TYPE_Q4_K);
}

static void plan_output_and_legacy_types_follow_llama_cpp(void)
{
    CHECK_TYPE(plan(PL_FTYPE_Q8_0, 0, "output.weight", 256, 8, 2, 0), PL_TYPE_Q8_0);
    CHECK_TYPE(plan(PL_FTYPE_Q4_0, 0, "output.weight", 256, 8, 2, 0), PL_TYPE_Q6_K);
    CHECK_TYPE(plan(PL_FTYPE_Q4_0, 0, "blk.0.attn_v.weight", 256, 8, 2, 0), PL_TYPE_Q4_0);
    CHECK_TYPE(plan(PL_FTYPE_Q6_K, 0, "output.weight", 256, 8, 2, 0), PL_TYPE_Q6_K);
    /* 896 does not fit Q4_K's 256: the output takes Q8_0 (no fallback: that is the rule) */
    pl_tensor_plan o = plan(PL_FTYPE_Q4_K_M, 0, "token_embd.weight", 896, 8, 24, 1);
    TU_CHECK(o.type == PL_TYPE_Q8_0 && !o.fallback, "tied 896-wide embedding: %s fallback %d",
             pl_type_name(o.type), o.fallback);
    /* Q4_0's output wants Q6_K, which 96 cannot hold: fallback Q8_0 */
    pl_tensor_plan o96 = plan(PL_FTYPE_Q4_0, 0, "output.weight", 96, 8, 2, 0);
    TU_CHECK(o96.type == PL_TYPE_Q8_0 && o96.wanted == PL_TYPE_Q6_K && o96.fallback,
             "96-wide Q4_0 output: %s", pl_type_name(o96.type));
    /* pure: no mix, the base type everywhere */
    CHECK_TYPE(plan(PL_FTYPE_Q4_0, 1, "output.weight", 256, 8, 2, 0), PL_TYPE_Q4_0);
    CHECK_TYPE(plan(PL_FTYPE_Q4_K_M, 1, "blk.0.attn_v.weight", 256, 8, 8, 0), PL_TYPE_Q4_K);
    /* float targets do not mix */
    CHECK_TYPE(plan(PL_FTYPE_F16, 0, "output.weight", 96, 8, 2, 0), PL_TYPE_F16);
    CHECK_TYPE(plan(PL_FTYPE_BF16, 0, "blk.0.attn_v.weight", 96, 8, 2, 0), PL_TYPE_BF16);
    CHECK_TYPE(plan(PL_FTYPE_F32, 0, "blk.0.attn_v.weight", 96, 8, 2, 0), PL_TYPE_F32);
}

static void plan_falls_back_where_rows_do_not_fit(void)
{
    static const struct {
        pl_ftype f;
        int64_t ne0;
        pl_type want, got;
    } cases[] = {
        {PL_FTYPE_Q4_K_S, 96, PL_TYPE_Q4_K, PL_TYPE_Q5_0},
        {PL_FTYPE_Q5_K_S, 96, PL_TYPE_Q5_K, PL_TYPE_Q5_1},
        {PL_FTYPE_Q6_K, 96, PL_TYPE_Q6_K, PL_TYPE_Q8_0},
        {PL_FTYPE_Q4_K_M, 4864 + 32, PL_TYPE_Q4_K, PL_TYPE_Q5_0},
        {PL_FTYPE_Q4_K_S, 48, PL_TYPE_Q4_K, PL_TYPE_F16}, /* not even 32 fits */
        {PL_FTYPE_Q4_0, 48, PL_TYPE_Q4_0, PL_TYPE_F16},
        {PL_FTYPE_Q8_0, 40, PL_TYPE_Q8_0, PL_TYPE_F16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pl_tensor_plan p = plan(cases[i].f, 0, "blk.5.attn_q.weight", cases[i].ne0, 8, 8, 0);
        TU_CHECK(p.quantize && p.wanted == cases[i].want && p.type == cases[i].got && p.fallback,
                 "%s ne0 %lld: wanted %s got %s fallback %d", pl_ftype_name(cases[i].f),
                 (long long)cases[i].ne0, pl_type_name(p.wanted), pl_type_name(p.type), p.fallback);
    }
    pl_tensor_plan p = plan(PL_FTYPE_Q4_K_M, 1, "blk.0.ffn_up.weight", 96, 8, 8, 0);
    TU_CHECK(p.type == PL_TYPE_Q5_0 && p.fallback, "pure still falls back: %s",
             pl_type_name(p.type));
}

static void plan_leaves_norms_biases_and_vectors_alone(void)
{
    const char *names[] = {"blk.0.attn_norm.weight",    "output_norm.weight",
                           "blk.0.attn_q.bias",         "blk.0.attn_q_norm.weight",
                           "blk.1.ffn_gate_inp.weight", "position_embd.weight"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        pl_tensor_plan p = plan(PL_FTYPE_Q4_K_M, 0, names[i], 256, 16, 2, 0);
        TU_CHECK(!p.quantize, "%s must not be quantized", names[i]);
    }
    TU_CHECK(!plan(PL_FTYPE_Q8_0, 0, "blk.0.attn_q.weight", 256, 0, 2, 0).quantize,
             "a 1-D weight stays");
    TU_CHECK(!plan(PL_FTYPE_Q8_0, 0, "blk.0.attn_q.weight", 256, 1, 2, 0).quantize,
             "[256, 1] has one dimension as ggml counts them");
    pl_tensor_plan p;
    int64_t ne[2] = {256, 8};
    pl_error err;
    pl_plan_model m = {.n_layer = 1};
    TU_CHECK(pl_ftype_tensor_plan((pl_ftype)19, 0, "x.weight", 2, ne, &m, 0, 0, &p, &err) ==
                 PL_ERR_INVALID_ARG,
             "unknown ftype");
    TU_CHECK(pl_ftype_tensor_plan(PL_FTYPE_Q8_0, 0, "x.weight", 2, ne, NULL, 0, 0, &p, &err) ==
                 PL_ERR_INVALID_ARG,
             "no model");
    TU_CHECK(pl_ftype_tensor_plan(PL_FTYPE_Q8_0, 0, "x.weight", 2, ne, &m, -1, 0, &p, &err) ==
                 PL_ERR_INVALID_ARG,
             "negative counter");
    ne[1] = 0;
    TU_CHECK(pl_ftype_tensor_plan(PL_FTYPE_Q8_0, 0, "x.weight", 2, ne, &m, 0, 0, &p, &err) ==
                 PL_ERR_INVALID_ARG,
             "zero dimension");
}

/* ---- the new mixes on real model shapes ------------------------------------------------------
 * Expectations come from the rule text (plumb.h, llama_tensor_get_type at c392e509), worked by
 * hand for each shape: a role gets `lo` on layers below `split` and `hi` on the others. */

typedef struct shape {
    const char *arch;
    int64_t E, L, H, Hkv, F, V, n_expert;
} shape;

/* Qwen2.5-0.5B: 896-wide rows fit no 256-block (fallbacks), GQA 14/2 = 7, tied. */
static const shape qwen2_05b = {"qwen2", 896, 24, 14, 2, 4864, 151936, 0};
/* Llama-3.2-1B: every width a multiple of 256, GQA 32/8 = 4, tied. */
static const shape llama_1b = {"llama", 2048, 16, 32, 8, 8192, 128256, 0};

enum { R_Q, R_K, R_V, R_O, R_GATE, R_UP, R_DOWN, R_N };
static const char *const role_names[R_N] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                            "ffn_gate", "ffn_up", "ffn_down"};

typedef struct role_rule {
    pl_type lo;
    int64_t split; /* layers < split get lo */
    pl_type hi;
} role_rule;

typedef struct mix_case {
    pl_ftype f;
    const shape *sh;
    pl_type embd;        /* token_embd.weight (tied: the output's rule) */
    role_rule role[R_N]; /* per layer */
} mix_case;

#define ALL(t)                                                                                     \
    {                                                                                              \
        t, 0, t                                                                                    \
    }
#define BELOW(n, a, b)                                                                             \
    {                                                                                              \
        a, n, b                                                                                    \
    }

/* The tensor list of a llama-style dense model (file order: by layer, then q k v o gate up
 * down and the norms), or of a mixture of experts (ffn_*_exps, three dimensions). */
static int shape_specs(const shape *sh, int64_t n_layer, int reverse, pl_tensor_spec *sp,
                       char (*names)[48])
{
    int n = 0;
    const int64_t hd = sh->E / sh->H;
#define ADD(nd, a, b, c)                                                                           \
    (sp[n] =                                                                                       \
         (pl_tensor_spec){                                                                         \
             .name = names[n], .type = PL_TYPE_F32, .n_dims = nd, .ne = {a, b, c, 1}},             \
     n++)
    snprintf(names[n], 48, "token_embd.weight");
    ADD(2, sh->E, sh->V, 1);
    snprintf(names[n], 48, "output_norm.weight");
    ADD(1, sh->E, 1, 1);
    for (int64_t k = 0; k < n_layer; k++) {
        int64_t il = reverse ? n_layer - 1 - k : k;
        const int64_t out[R_N] = {sh->H * hd, sh->Hkv * hd, sh->Hkv * hd, sh->E,
                                  sh->F,      sh->F,        sh->E};
        for (int r = 0; r < R_N; r++) {
            const char *sfx = sh->n_expert && r >= R_GATE ? "_exps" : "";
            snprintf(names[n], 48, "blk.%lld.%s%s.weight", (long long)il, role_names[r], sfx);
            int64_t ne0 = r == R_DOWN ? sh->F : (r == R_O ? sh->H * hd : sh->E);
            if (sh->n_expert && r >= R_GATE)
                ADD(3, ne0, out[r], sh->n_expert);
            else
                ADD(2, ne0, out[r], 1);
        }
        snprintf(names[n], 48, "blk.%lld.attn_norm.weight", (long long)il);
        ADD(1, sh->E, 1, 1);
        snprintf(names[n], 48, "blk.%lld.ffn_norm.weight", (long long)il);
        ADD(1, sh->E, 1, 1);
        if (sh->n_expert) {
            snprintf(names[n], 48, "blk.%lld.ffn_gate_inp.weight", (long long)il);
            ADD(2, sh->E, sh->n_expert, 1);
        }
    }
#undef ADD
    return n;
}

enum { MAX_SPECS = 2 + 80 * (R_N + 3) };

static void plan_shape(pl_ftype f, const shape *sh, int64_t n_layer, int reverse,
                       pl_tensor_spec *sp, pl_tensor_plan *pl, int *n, char (*names)[48])
{
    *n = shape_specs(sh, n_layer, reverse, sp, names);
    pl_plan_model m = {.arch = sh->arch,
                       .n_layer = n_layer,
                       .n_head = sh->H,
                       .n_head_kv = sh->Hkv,
                       .n_expert = sh->n_expert};
    pl_error err;
    TU_CHECK(pl_ftype_plan_tensors(f, 0, &m, sp, (uint64_t)*n, pl, &err) == PL_OK, "%s %s: %s",
             pl_ftype_name(f), sh->arch, err.msg);
}

static pl_type planned(const pl_tensor_spec *sp, const pl_tensor_plan *pl, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(sp[i].name, name) == 0) return pl[i].quantize ? pl[i].type : PL_TYPE_COUNT;
    return PL_TYPE_COUNT;
}

static void check_mix(const mix_case *c)
{
    static pl_tensor_spec sp[MAX_SPECS];
    static pl_tensor_plan pl[MAX_SPECS];
    static char names[MAX_SPECS][48];
    int n;
    plan_shape(c->f, c->sh, c->sh->L, 0, sp, pl, &n, names);
    pl_type e = planned(sp, pl, n, "token_embd.weight");
    TU_CHECK(e == c->embd, "%s %s token_embd: %s, want %s", pl_ftype_name(c->f), c->sh->arch,
             pl_type_name(e), pl_type_name(c->embd));
    TU_CHECK(planned(sp, pl, n, "output_norm.weight") == PL_TYPE_COUNT, "norm quantized");
    for (int64_t il = 0; il < c->sh->L; il++)
        for (int r = 0; r < R_N; r++) {
            char nm[48];
            snprintf(nm, sizeof nm, "blk.%lld.%s.weight", (long long)il, role_names[r]);
            const role_rule *rr = &c->role[r];
            pl_type want = il < rr->split ? rr->lo : rr->hi, got = planned(sp, pl, n, nm);
            TU_CHECK(got == want, "%s %s %s: %s, want %s", pl_ftype_name(c->f), c->sh->arch, nm,
                     pl_type_name(got), pl_type_name(want));
        }
}

static void plan_new_mixes_on_qwen2_05b(void)
{
    /* 896 % 256 != 0: Q2_K/Q3_K/IQ4_XS -> IQ4_NL, Q4_K -> Q5_0, Q5_K -> Q5_1, and the tied
     * embedding -> Q8_0; ffn_down (4864 = 19 x 256 wide) keeps K-quants. 24 layers: n/8 = 3,
     * n/16 = 1; GQA 7 >= 4. */
    const pl_type NL = PL_TYPE_IQ4_NL, Q8 = PL_TYPE_Q8_0;
    const mix_case cases[] = {
        {PL_FTYPE_Q2_K,
         &qwen2_05b,
         Q8,
         {ALL(NL), ALL(NL), ALL(PL_TYPE_Q5_0), ALL(NL), ALL(NL), ALL(NL), ALL(PL_TYPE_Q3_K)}},
        {PL_FTYPE_Q2_K_S,
         &qwen2_05b,
         Q8,
         {ALL(NL), ALL(NL), ALL(PL_TYPE_Q5_0), ALL(NL), ALL(NL), ALL(NL),
          BELOW(3, PL_TYPE_Q4_K, PL_TYPE_Q2_K)}},
        {PL_FTYPE_Q3_K_S,
         &qwen2_05b,
         Q8,
         {ALL(NL), ALL(NL), ALL(NL), ALL(NL), ALL(NL), ALL(NL), ALL(PL_TYPE_Q3_K)}},
        {PL_FTYPE_Q3_K_M,
         &qwen2_05b,
         Q8,
         {ALL(NL), ALL(NL), BELOW(2, PL_TYPE_Q5_1, PL_TYPE_Q5_0), ALL(PL_TYPE_Q5_0), ALL(NL),
          ALL(NL), BELOW(1, PL_TYPE_Q5_K, PL_TYPE_Q4_K)}},
        {PL_FTYPE_Q3_K_L,
         &qwen2_05b,
         Q8,
         {ALL(NL), ALL(NL), ALL(PL_TYPE_Q5_1), ALL(PL_TYPE_Q5_1), ALL(NL), ALL(NL),
          ALL(PL_TYPE_Q5_K)}},
        {PL_FTYPE_IQ4_NL,
         &qwen2_05b,
         Q8,
         {ALL(NL), ALL(NL), ALL(PL_TYPE_Q5_1), ALL(NL), ALL(NL), ALL(NL),
          BELOW(3, PL_TYPE_Q5_K, NL)}},
        {PL_FTYPE_IQ4_XS,
         &qwen2_05b,
         Q8,
         {ALL(NL), ALL(NL), ALL(PL_TYPE_Q5_1), ALL(NL), ALL(NL), ALL(NL),
          BELOW(3, PL_TYPE_Q5_K, PL_TYPE_IQ4_XS)}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_mix(&cases[i]);
}

static void plan_new_mixes_on_llama_1b(void)
{
    /* every width fits 256: no fallback; the tied embedding -> Q6_K. 16 layers: n/8 = 2,
     * n/16 = 1; GQA 4 >= 4. */
    const pl_type Q2 = PL_TYPE_Q2_K, Q3 = PL_TYPE_Q3_K, Q4 = PL_TYPE_Q4_K, Q5 = PL_TYPE_Q5_K;
    const pl_type Q6 = PL_TYPE_Q6_K, NL = PL_TYPE_IQ4_NL, XS = PL_TYPE_IQ4_XS;
    const mix_case cases[] = {
        {PL_FTYPE_Q2_K,
         &llama_1b,
         Q6,
         {ALL(Q2), ALL(Q2), ALL(Q4), ALL(Q3), ALL(Q2), ALL(Q2), ALL(Q3)}},
        {PL_FTYPE_Q2_K_S,
         &llama_1b,
         Q6,
         {ALL(Q2), ALL(Q2), ALL(Q4), ALL(Q2), ALL(Q2), ALL(Q2), BELOW(2, Q4, Q2)}},
        {PL_FTYPE_Q3_K_S,
         &llama_1b,
         Q6,
         {ALL(Q3), ALL(Q3), ALL(Q3), ALL(Q3), ALL(Q3), ALL(Q3), ALL(Q3)}},
        {PL_FTYPE_Q3_K_M,
         &llama_1b,
         Q6,
         {ALL(Q3), ALL(Q3), BELOW(2, Q5, Q4), ALL(Q4), ALL(Q3), ALL(Q3), BELOW(1, Q5, Q4)}},
        {PL_FTYPE_Q3_K_L,
         &llama_1b,
         Q6,
         {ALL(Q3), ALL(Q3), ALL(Q5), ALL(Q5), ALL(Q3), ALL(Q3), ALL(Q5)}},
        {PL_FTYPE_IQ4_NL,
         &llama_1b,
         Q6,
         {ALL(NL), ALL(NL), ALL(Q5), ALL(NL), ALL(NL), ALL(NL), BELOW(2, Q5, NL)}},
        {PL_FTYPE_IQ4_XS,
         &llama_1b,
         Q6,
         {ALL(XS), ALL(XS), ALL(Q5), ALL(XS), ALL(XS), ALL(XS), BELOW(2, Q5, XS)}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_mix(&cases[i]);
}

static void plan_attn_v_reads_gqa_and_model_size(void)
{
    /* without GQA (n_gqa 1 < 4) the Q2_K, Q2_K_S and IQ4 attn_v rules do not lift */
    const shape mha = {"llama", 2048, 16, 32, 32, 8192, 32000, 0};
    const pl_type Q2 = PL_TYPE_Q2_K, Q3 = PL_TYPE_Q3_K, Q4 = PL_TYPE_Q4_K, Q5 = PL_TYPE_Q5_K;
    const mix_case cases[] = {
        {PL_FTYPE_Q2_K,
         &mha,
         PL_TYPE_Q6_K,
         {ALL(Q2), ALL(Q2), ALL(Q3), ALL(Q3), ALL(Q2), ALL(Q2), ALL(Q3)}},
        {PL_FTYPE_Q2_K_S,
         &mha,
         PL_TYPE_Q6_K,
         {ALL(Q2), ALL(Q2), ALL(Q2), ALL(Q2), ALL(Q2), ALL(Q2), BELOW(2, Q4, Q2)}},
        {PL_FTYPE_IQ4_XS,
         &mha,
         PL_TYPE_Q6_K,
         {ALL(PL_TYPE_IQ4_XS), ALL(PL_TYPE_IQ4_XS), ALL(PL_TYPE_IQ4_XS), ALL(PL_TYPE_IQ4_XS),
          ALL(PL_TYPE_IQ4_XS), ALL(PL_TYPE_IQ4_XS), BELOW(2, Q5, PL_TYPE_IQ4_XS)}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_mix(&cases[i]);
    /* 80 layers with GQA is llama.cpp's 70B: attn_v's Q3_K/Q4_K lift to Q5_K; without GQA
     * (65B) they do not */
    const shape l70 = {"llama", 1024, 80, 64, 8, 1024, 1024, 0};
    const shape l65 = {"llama", 1024, 80, 64, 64, 1024, 1024, 0};
    static pl_tensor_spec sp[MAX_SPECS];
    static pl_tensor_plan pl[MAX_SPECS];
    static char names[MAX_SPECS][48];
    int n;
    plan_shape(PL_FTYPE_Q3_K_S, &l70, 80, 0, sp, pl, &n, names);
    TU_CHECK(planned(sp, pl, n, "blk.40.attn_v.weight") == Q5, "70B Q3_K_S attn_v lifts");
    TU_CHECK(planned(sp, pl, n, "blk.40.attn_k.weight") == Q3, "70B Q3_K_S attn_k stays");
    plan_shape(PL_FTYPE_Q3_K_M, &l70, 80, 0, sp, pl, &n, names);
    TU_CHECK(planned(sp, pl, n, "blk.40.attn_v.weight") == Q5, "70B Q3_K_M attn_v Q4_K lifts");
    plan_shape(PL_FTYPE_Q2_K, &l70, 80, 0, sp, pl, &n, names);
    TU_CHECK(planned(sp, pl, n, "blk.0.attn_v.weight") == Q5, "70B Q2_K attn_v Q4_K lifts");
    plan_shape(PL_FTYPE_Q3_K_S, &l65, 80, 0, sp, pl, &n, names);
    TU_CHECK(planned(sp, pl, n, "blk.40.attn_v.weight") == Q3, "65B Q3_K_S attn_v stays");
    plan_shape(PL_FTYPE_Q3_K_S, &l70, 79, 0, sp, pl, &n, names);
    TU_CHECK(planned(sp, pl, n, "blk.40.attn_v.weight") == Q3, "79 layers is no 70B");
}

static void plan_eight_experts_follow_llama_cpp(void)
{
    /* Mixtral-like: 32 layers of 8 experts. attn_v and attn_k -> Q8_0, attn_output -> Q5_K for
     * the mixes llama.cpp lists (not Q3_K_L, not Q2_K_S); ffn_down_exps reads its layer from
     * the name: Q3_K_M gives Q5_K below 32/16 = 2. */
    const shape moe = {"llama", 1024, 32, 8, 2, 1024, 1024, 8};
    static pl_tensor_spec sp[MAX_SPECS];
    static pl_tensor_plan pl[MAX_SPECS];
    static char names[MAX_SPECS][48];
    int n;
    static const struct {
        pl_ftype f;
        pl_type o, down1, down5;
    } cases[] = {
        {PL_FTYPE_Q2_K, PL_TYPE_Q5_K, PL_TYPE_Q3_K, PL_TYPE_Q3_K},
        {PL_FTYPE_Q2_K_S, PL_TYPE_Q2_K, PL_TYPE_Q4_K, PL_TYPE_Q2_K},
        {PL_FTYPE_Q3_K_S, PL_TYPE_Q5_K, PL_TYPE_Q3_K, PL_TYPE_Q3_K},
        {PL_FTYPE_Q3_K_M, PL_TYPE_Q5_K, PL_TYPE_Q5_K, PL_TYPE_Q4_K},
        {PL_FTYPE_Q3_K_L, PL_TYPE_Q3_K, PL_TYPE_Q5_K, PL_TYPE_Q5_K},
        {PL_FTYPE_IQ4_NL, PL_TYPE_Q5_K, PL_TYPE_Q5_K, PL_TYPE_IQ4_NL},
        {PL_FTYPE_IQ4_XS, PL_TYPE_Q5_K, PL_TYPE_Q5_K, PL_TYPE_IQ4_XS},
        {PL_FTYPE_Q4_K_M, PL_TYPE_Q5_K, PL_TYPE_Q6_K, PL_TYPE_Q4_K},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        plan_shape(cases[i].f, &moe, 32, 1, sp, pl, &n, names);
        const char *fn = pl_ftype_name(cases[i].f);
        pl_type v = planned(sp, pl, n, "blk.9.attn_v.weight");
        pl_type k = planned(sp, pl, n, "blk.9.attn_k.weight");
        pl_type o = planned(sp, pl, n, "blk.9.attn_output.weight");
        pl_type d1 = planned(sp, pl, n, "blk.1.ffn_down_exps.weight");
        pl_type d5 = planned(sp, pl, n, "blk.5.ffn_down_exps.weight");
        TU_CHECK(v == PL_TYPE_Q8_0 && k == PL_TYPE_Q8_0, "%s: attn_v %s attn_k %s", fn,
                 pl_type_name(v), pl_type_name(k));
        TU_CHECK(o == cases[i].o, "%s attn_output: %s, want %s", fn, pl_type_name(o),
                 pl_type_name(cases[i].o));
        TU_CHECK(d1 == cases[i].down1 && d5 == cases[i].down5, "%s ffn_down: %s %s, want %s %s", fn,
                 pl_type_name(d1), pl_type_name(d5), pl_type_name(cases[i].down1),
                 pl_type_name(cases[i].down5));
        TU_CHECK(planned(sp, pl, n, "blk.1.ffn_gate_inp.weight") == PL_TYPE_COUNT,
                 "the router stays");
    }
    /* an expert model's ffn_down without a layer in its name: llama-quantize refuses it */
    pl_plan_model m = {.arch = "llama", .n_layer = 4, .n_expert = 8};
    int64_t ne[3] = {1024, 256, 8};
    pl_tensor_plan p;
    pl_error err;
    TU_CHECK(pl_ftype_tensor_plan(PL_FTYPE_Q3_K_M, 0, "ffn_down_exps.weight", 3, ne, &m, 0, 0, &p,
                                  &err) == PL_ERR_UNSUPPORTED &&
                 strstr(err.msg, "ffn_down_exps.weight"),
             "no layer: %s", err.msg);
    TU_CHECK(pl_ftype_tensor_plan(PL_FTYPE_Q3_K_M, 0, "blk.4.ffn_down_exps.weight", 3, ne, &m, 0, 0,
                                  &p, &err) == PL_ERR_UNSUPPORTED,
             "layer 4 of 4: %s", err.msg);
}

static void plan_counters_follow_llama_quantize_order(void)
{
    /* Q3_K_M gives Q5_K to the first two attn_v llama-quantize meets, which sorts by layer (not
     * by name: blk.10 is not second), whatever the file's order. 12 layers. */
    const shape sh = {"llama", 1024, 12, 16, 4, 1024, 1024, 0};
    static pl_tensor_spec sp[MAX_SPECS];
    static pl_tensor_plan pl[MAX_SPECS];
    static char names[MAX_SPECS][48];
    for (int reverse = 0; reverse < 2; reverse++) {
        int n;
        plan_shape(PL_FTYPE_Q3_K_M, &sh, 12, reverse, sp, pl, &n, names);
        for (int il = 0; il < 12; il++) {
            char nm[48];
            snprintf(nm, sizeof nm, "blk.%d.attn_v.weight", il);
            pl_type want = il < 2 ? PL_TYPE_Q5_K : PL_TYPE_Q4_K, got = planned(sp, pl, n, nm);
            TU_CHECK(got == want, "reverse %d %s: %s, want %s", reverse, nm, pl_type_name(got),
                     pl_type_name(want));
        }
        /* Q4_K_S: attn_v counter < 4, ffn_down counter < 12/8 = 1 */
        plan_shape(PL_FTYPE_Q4_K_S, &sh, 12, reverse, sp, pl, &n, names);
        TU_CHECK(planned(sp, pl, n, "blk.3.attn_v.weight") == PL_TYPE_Q5_K &&
                     planned(sp, pl, n, "blk.10.attn_v.weight") == PL_TYPE_Q4_K &&
                     planned(sp, pl, n, "blk.0.ffn_down.weight") == PL_TYPE_Q5_K &&
                     planned(sp, pl, n, "blk.1.ffn_down.weight") == PL_TYPE_Q4_K,
                 "Q4_K_S counters (reverse %d)", reverse);
    }
    /* the counters count attn_v tensors, not layers: a model whose layer 0 has no attn_v gives
     * Q5_K to layers 1 and 2 */
    pl_tensor_spec s3[3] = {
        {.name = "blk.0.attn_q.weight", .n_dims = 2, .ne = {1024, 1024, 1, 1}},
        {.name = "blk.1.attn_v.weight", .n_dims = 2, .ne = {1024, 256, 1, 1}},
        {.name = "blk.2.attn_v.weight", .n_dims = 2, .ne = {1024, 256, 1, 1}},
    };
    pl_tensor_plan p3[3];
    pl_plan_model m = {.arch = "llama", .n_layer = 3, .n_head = 16, .n_head_kv = 4};
    CU_ASSERT_FATAL(pl_ftype_plan_tensors(PL_FTYPE_Q3_K_M, 0, &m, s3, 3, p3, NULL) == PL_OK);
    TU_CHECK(p3[1].type == PL_TYPE_Q5_K && p3[2].type == PL_TYPE_Q5_K, "counted: %s %s",
             pl_type_name(p3[1].type), pl_type_name(p3[2].type));
    /* pure: every matrix the base type, the fallback still applies */
    CU_ASSERT_FATAL(pl_ftype_plan_tensors(PL_FTYPE_Q3_K_M, 1, &m, s3, 3, p3, NULL) == PL_OK);
    TU_CHECK(p3[1].type == PL_TYPE_Q3_K && p3[0].type == PL_TYPE_Q3_K, "pure");
}

/* ---- a small model written in the test --------------------------------------------------- */

enum { TM_LAYERS = 8, TM_E = 256, TM_V = 16, TM_Q = 8, TM_FF = 96 };

typedef struct tmodel_tensor {
    char name[48];
    uint32_t type;
    uint32_t n_dims;
    int64_t ne[2];
    float *f32; /* the values (already rounded through type for non-F32 inputs) */
    void *data; /* the stored bytes */
} tmodel_tensor;

typedef struct tmodel {
    tmodel_tensor t[8 * TM_LAYERS + 8];
    int n;
} tmodel;

static void tm_add(tmodel *m, tu_rng *r, const char *name, uint32_t type, int64_t ne0, int64_t ne1,
                   double scale, double offset)
{
    tmodel_tensor *t = &m->t[m->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->n_dims = ne1 ? 2 : 1;
    t->ne[0] = ne0;
    t->ne[1] = ne1 ? ne1 : 1;
    int64_t n = ne0 * t->ne[1];
    size_t rb;
    CU_ASSERT_FATAL(pl_type_row_bytes(type, ne0, &rb, NULL) == PL_OK);
    t->f32 = malloc(sizeof(float) * (size_t)n);
    t->data = malloc(rb * (size_t)t->ne[1]);
    fill_normal(r, t->f32, n, scale);
    for (int64_t i = 0; i < n; i++) t->f32[i] += (float)offset;
    CU_ASSERT_FATAL(pl_quantize_rows(type, t->data, t->f32, t->ne[1], ne0, NULL) == PL_OK);
    CU_ASSERT_FATAL(pl_dequantize_rows(type, t->f32, t->data, t->ne[1], ne0, NULL) == PL_OK);
}

/* 8 layers (so use_more_bits picks layers 0, 3, 6, 7), 256-wide rows for the K-quants and
 * 96-wide ffn_down rows for the fallback; one F16 and one Q8_0 input matrix. */
static void tm_build(tmodel *m, int tied, uint64_t seed)
{
    tu_rng r;
    tu_rng_init(&r, seed);
    memset(m, 0, sizeof *m);
    char nm[48];
    tm_add(m, &r, "token_embd.weight", PL_TYPE_F32, TM_E, TM_V, 0.1, 0);
    for (int il = 0; il < TM_LAYERS; il++) {
#define N(s) (snprintf(nm, sizeof nm, "blk.%d." s, il), nm)
        tm_add(m, &r, N("attn_norm.weight"), PL_TYPE_F32, TM_E, 0, 0.1, 1.0);
        tm_add(m, &r, N("attn_q.weight"), il == 1 ? PL_TYPE_F16 : PL_TYPE_F32, TM_E, TM_Q, 0.06, 0);
        tm_add(m, &r, N("attn_q.bias"), PL_TYPE_F32, TM_Q, 0, 0.1, 0);
        tm_add(m, &r, N("attn_v.weight"), il == 2 ? PL_TYPE_Q8_0 : PL_TYPE_F32, TM_E, TM_Q, 0.06,
               0);
        tm_add(m, &r, N("ffn_down.weight"), PL_TYPE_F32, TM_FF, TM_Q, 0.1, 0);
#undef N
    }
    tm_add(m, &r, "output_norm.weight", PL_TYPE_F32, TM_E, 0, 0.1, 1.0);
    if (!tied) tm_add(m, &r, "output.weight", PL_TYPE_F32, TM_E, TM_V, 0.1, 0);
}

static void tm_free(tmodel *m)
{
    for (int i = 0; i < m->n; i++) {
        free(m->t[i].f32);
        free(m->t[i].data);
    }
}

static const char *const tm_strings[] = {"a", "", "b\nc"};
static const float tm_floats[] = {1.5f, -2.0f};

static void tm_write(const tmodel *m, const char *path)
{
    pl_gguf_writer *w = NULL;
    pl_error err;
    CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
    pl_status s = pl_gguf_writer_set_string(w, "general.architecture", "llama", 5, &err);
    if (!s) s = pl_gguf_writer_set_u32(w, "general.file_type", 0, &err);
    if (!s) s = pl_gguf_writer_set_u32(w, "llama.block_count", TM_LAYERS, &err);
    if (!s) s = pl_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f, &err);
    if (!s) s = pl_gguf_writer_set_u32(w, "split.count", 1, &err);
    if (!s) s = pl_gguf_writer_set_array_str(w, "tokenizer.ggml.tokens", tm_strings, NULL, 3, &err);
    if (!s) s = pl_gguf_writer_set_array(w, "test.floats", PL_GGUF_FLOAT32, tm_floats, 2, &err);
    for (int i = 0; i < m->n && !s; i++)
        s = pl_gguf_writer_add_tensor(w, m->t[i].name, m->t[i].type, m->t[i].n_dims, m->t[i].ne,
                                      m->t[i].data, &err);
    if (!s) s = pl_gguf_writer_write_file(w, path, &err);
    TU_CHECK(s == PL_OK, "writing the test model: %s", err.msg);
    pl_gguf_writer_free(w);
}

static const pl_ftype all_ftypes[] = {
    PL_FTYPE_F32,       PL_FTYPE_F16,    PL_FTYPE_BF16,   PL_FTYPE_Q8_0,   PL_FTYPE_Q4_0,
    PL_FTYPE_Q4_1,      PL_FTYPE_Q5_0,   PL_FTYPE_Q5_1,   PL_FTYPE_Q4_K_S, PL_FTYPE_Q4_K_M,
    PL_FTYPE_Q5_K_S,    PL_FTYPE_Q5_K_M, PL_FTYPE_Q6_K,   PL_FTYPE_Q2_K,   PL_FTYPE_Q2_K_S,
    PL_FTYPE_Q3_K_S,    PL_FTYPE_Q3_K_M, PL_FTYPE_Q3_K_L, PL_FTYPE_IQ4_NL, PL_FTYPE_IQ4_XS,
    PL_FTYPE_MXFP4_MOE,
};
enum { N_FTYPES = sizeof all_ftypes / sizeof all_ftypes[0] };

/* Checks one quantized output against its input model. */
static void check_output(const tmodel *m, const char *out, pl_ftype f, int tied,
                         const pl_quantize_stats *st)
{
    pl_gguf *g = NULL;
    pl_error err;
    pl_status s = pl_gguf_open(&g, out, &err);
    TU_CHECK(s == PL_OK, "%s: output does not parse: %s", pl_ftype_name(f), err.msg);
    if (s) return;
    /* metadata: everything copied except split.*, file_type set, quantization_version added */
    uint32_t ft = 99, qv = 0;
    float rb = 0;
    pl_str arch;
    pl_gguf_array a;
    CU_ASSERT(pl_gguf_get_u32(g, "general.file_type", &ft, NULL) == PL_OK && ft == (uint32_t)f);
    CU_ASSERT(pl_gguf_get_u32(g, "general.quantization_version", &qv, NULL) == PL_OK && qv == 2);
    CU_ASSERT(pl_gguf_get_f32(g, "llama.rope.freq_base", &rb, NULL) == PL_OK && rb == 10000.0f);
    CU_ASSERT(pl_gguf_get_string(g, "general.architecture", &arch, NULL) == PL_OK &&
              arch.len == 5 && memcmp(arch.ptr, "llama", 5) == 0);
    CU_ASSERT(pl_gguf_find_key(g, "split.count") < 0);
    CU_ASSERT_EQUAL(pl_gguf_n_kv(g), 7);
    CU_ASSERT_EQUAL(pl_gguf_kv_key(g, 1).len, strlen("general.file_type"));
    if (pl_gguf_get_array(g, "tokenizer.ggml.tokens", &a, NULL) == PL_OK && a.count == 3) {
        pl_str e;
        CU_ASSERT(pl_gguf_array_string(&a, 2, &e, NULL) == PL_OK && e.len == 3 &&
                  memcmp(e.ptr, "b\nc", 3) == 0);
    } else {
        CU_FAIL("tokenizer.ggml.tokens not copied");
    }
    if (pl_gguf_get_array(g, "test.floats", &a, NULL) == PL_OK && a.count == 2) {
        float v;
        CU_ASSERT(pl_gguf_array_elem(&a, 1, &v, NULL) == PL_OK && v == -2.0f);
    } else {
        CU_FAIL("test.floats not copied");
    }
    TU_CHECK(pl_gguf_n_tensors(g) == (uint64_t)m->n, "%s: %llu tensors", pl_ftype_name(f),
             (unsigned long long)pl_gguf_n_tensors(g));
    uint64_t fallbacks = 0, converted = 0;
    /* the plan as pl_model_quantize makes it: the file says llama, 8 blocks, no head counts */
    pl_tensor_spec specs[8 * TM_LAYERS + 8];
    pl_tensor_plan plans[8 * TM_LAYERS + 8];
    for (int i = 0; i < m->n; i++)
        specs[i] = (pl_tensor_spec){.name = m->t[i].name,
                                    .type = m->t[i].type,
                                    .n_dims = m->t[i].n_dims,
                                    .ne = {m->t[i].ne[0], m->t[i].ne[1], 1, 1}};
    const pl_plan_model pm = {.arch = "llama", .n_layer = TM_LAYERS};
    CU_ASSERT_FATAL(pl_ftype_plan_tensors(f, 0, &pm, specs, (uint64_t)m->n, plans, NULL) == PL_OK);
    (void)tied;
    for (int i = 0; i < m->n && i < (int)pl_gguf_n_tensors(g); i++) {
        const tmodel_tensor *t = &m->t[i];
        pl_tensor_info ti;
        CU_ASSERT_FATAL(pl_gguf_tensor(g, (uint64_t)i, &ti, NULL) == PL_OK);
        TU_CHECK(ti.name.len == strlen(t->name) && memcmp(ti.name.ptr, t->name, ti.name.len) == 0,
                 "tensor %d is not %s", i, t->name);
        pl_tensor_plan p = plans[i];
        uint32_t want = p.quantize ? (uint32_t)p.type : t->type;
        TU_CHECK(ti.type == want, "%s %s: type %s, want %s", pl_ftype_name(f), t->name,
                 pl_type_name(ti.type), pl_type_name(want));
        if (ti.type != want) continue;
        if (want == t->type) { /* copied: byte for byte */
            size_t rb2;
            CU_ASSERT_FATAL(pl_type_row_bytes(t->type, t->ne[0], &rb2, NULL) == PL_OK);
            TU_CHECK(memcmp(ti.data, t->data, rb2 * (size_t)t->ne[1]) == 0, "%s %s not copied",
                     pl_ftype_name(f), t->name);
            TU_CHECK(p.quantize || t->type == PL_TYPE_F32, "%s stays F32", t->name);
            continue;
        }
        converted++;
        fallbacks += p.fallback;
        int64_t n = t->ne[0] * t->ne[1];
        float *y = malloc(sizeof(float) * (size_t)n), *z = malloc(sizeof(float) * (size_t)n);
        size_t rb2;
        CU_ASSERT_FATAL(pl_type_row_bytes(want, t->ne[0], &rb2, NULL) == PL_OK);
        uint8_t *q = malloc(rb2 * (size_t)t->ne[1]);
        CU_ASSERT_FATAL(pl_dequantize_rows(want, y, ti.data, t->ne[1], t->ne[0], NULL) == PL_OK);
        /* exactly what quantizing the input's values gives ... */
        CU_ASSERT_FATAL(pl_quantize_rows(want, q, t->f32, t->ne[1], t->ne[0], NULL) == PL_OK);
        TU_CHECK(memcmp(q, ti.data, rb2 * (size_t)t->ne[1]) == 0, "%s %s: bytes differ",
                 pl_ftype_name(f), t->name);
        CU_ASSERT_FATAL(pl_dequantize_rows(want, z, q, t->ne[1], t->ne[0], NULL) == PL_OK);
        /* ... and within the type's round-trip bound of the input */
        double e = rms_rel(t->f32, y, n);
        TU_CHECK(e <= tol_of(want)->rms, "%s %s (%s): rms_rel %.4g > %.4g", pl_ftype_name(f),
                 t->name, pl_type_name(want), e, tol_of(want)->rms);
        free(y);
        free(z);
        free(q);
    }
    if (st) {
        TU_CHECK(st->n_tensors == (uint64_t)m->n && st->n_converted == converted &&
                     st->n_fallback == fallbacks,
                 "%s stats: %llu tensors, %llu converted (want %llu), %llu fallbacks (want %llu)",
                 pl_ftype_name(f), (unsigned long long)st->n_tensors,
                 (unsigned long long)st->n_converted, (unsigned long long)converted,
                 (unsigned long long)st->n_fallback, (unsigned long long)fallbacks);
        TU_CHECK(st->out_bytes == pl_gguf_size(g), "out_bytes %llu, file %zu",
                 (unsigned long long)st->out_bytes, pl_gguf_size(g));
    }
    pl_gguf_free(g);
}

static void model_quantize_writes_every_target(void)
{
    for (int tied = 0; tied < 2; tied++) {
        tmodel m;
        tm_build(&m, tied, tu_seed() + (uint64_t)tied);
        char in[PATH_LEN], out[PATH_LEN];
        tmp_path(in, "in.gguf");
        tm_write(&m, in);
        for (int i = 0; i < N_FTYPES; i++) {
            tmp_path(out, "out.gguf");
            pl_quantize_stats st;
            memset(&st, 0xff, sizeof st);
            pl_quantize_params p = {.ftype = all_ftypes[i], .stats = &st};
            pl_error err;
            pl_status s = pl_model_quantize(in, out, &p, &err);
            TU_CHECK(s == PL_OK, "%s (tied %d): %s", pl_ftype_name(all_ftypes[i]), tied, err.msg);
            if (s == PL_OK) check_output(&m, out, all_ftypes[i], tied, &st);
            TU_CHECK(!tmp_exists(out), "%s.tmp left behind", out);
            remove(out);
        }
        remove(in);
        tm_free(&m);
    }
}

static uint32_t out_type(const pl_gguf *g, const char *name)
{
    int64_t i = pl_gguf_find_tensor(g, name);
    pl_tensor_info ti;
    if (i < 0 || pl_gguf_tensor(g, (uint64_t)i, &ti, NULL) != PL_OK) return 9999;
    return ti.type;
}

static void model_quantize_q4_k_m_mixes_per_tensor(void)
{
    tmodel m;
    tm_build(&m, 0, tu_seed());
    char in[PATH_LEN], out[PATH_LEN];
    tmp_path(in, "mix-in.gguf");
    tmp_path(out, "mix-out.gguf");
    tm_write(&m, in);
    pl_quantize_stats st;
    pl_quantize_params p = {.ftype = PL_FTYPE_Q4_K_M, .stats = &st};
    pl_error err;
    CU_ASSERT_FATAL(pl_model_quantize(in, out, &p, &err) == PL_OK);
    pl_gguf *g = NULL;
    CU_ASSERT_FATAL(pl_gguf_open(&g, out, &err) == PL_OK);
    static const struct {
        const char *name;
        pl_type want;
    } cases[] = {
        {"token_embd.weight", PL_TYPE_Q4_K},     {"output.weight", PL_TYPE_Q6_K},
        {"output_norm.weight", PL_TYPE_F32},     {"blk.0.attn_norm.weight", PL_TYPE_F32},
        {"blk.0.attn_q.bias", PL_TYPE_F32},      {"blk.0.attn_q.weight", PL_TYPE_Q4_K},
        {"blk.1.attn_q.weight", PL_TYPE_Q4_K}, /* from F16 */
        {"blk.0.attn_v.weight", PL_TYPE_Q6_K},   {"blk.1.attn_v.weight", PL_TYPE_Q4_K},
        {"blk.2.attn_v.weight", PL_TYPE_Q4_K}, /* from Q8_0 */
        {"blk.3.attn_v.weight", PL_TYPE_Q6_K},   {"blk.6.attn_v.weight", PL_TYPE_Q6_K},
        {"blk.7.attn_v.weight", PL_TYPE_Q6_K},   {"blk.5.attn_v.weight", PL_TYPE_Q4_K},
        {"blk.0.ffn_down.weight", PL_TYPE_Q8_0}, /* Q6_K wanted, 96 wide */
        {"blk.1.ffn_down.weight", PL_TYPE_Q5_0}, /* Q4_K wanted, 96 wide */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        TU_CHECK(out_type(g, cases[i].name) == (uint32_t)cases[i].want, "%s: %s, want %s",
                 cases[i].name, pl_type_name(out_type(g, cases[i].name)),
                 pl_type_name(cases[i].want));
    /* every ffn_down (8) fell back; nothing else did */
    TU_CHECK(st.n_fallback == TM_LAYERS, "fallbacks: %llu", (unsigned long long)st.n_fallback);
    TU_CHECK(st.n_by_type[PL_TYPE_Q8_0] == 4 && st.n_by_type[PL_TYPE_Q5_0] == 4,
             "ffn_down split: Q8_0 %llu, Q5_0 %llu", (unsigned long long)st.n_by_type[PL_TYPE_Q8_0],
             (unsigned long long)st.n_by_type[PL_TYPE_Q5_0]);
    pl_gguf_free(g);
    remove(in);
    remove(out);
    tm_free(&m);
}

static void model_quantize_tied_embedding_takes_output_type(void)
{
    tmodel m;
    tm_build(&m, 1, tu_seed());
    char in[PATH_LEN], out[PATH_LEN];
    tmp_path(in, "tied-in.gguf");
    tmp_path(out, "tied-out.gguf");
    tm_write(&m, in);
    pl_quantize_params p = {.ftype = PL_FTYPE_Q4_K_M};
    CU_ASSERT_FATAL(pl_model_quantize(in, out, &p, NULL) == PL_OK);
    pl_gguf *g = NULL;
    CU_ASSERT_FATAL(pl_gguf_open(&g, out, NULL) == PL_OK);
    TU_CHECK(out_type(g, "token_embd.weight") == PL_TYPE_Q6_K, "tied token_embd: %s",
             pl_type_name(out_type(g, "token_embd.weight")));
    pl_gguf_free(g);
    /* pure: the base type even there */
    p.pure = 1;
    CU_ASSERT_FATAL(pl_model_quantize(in, out, &p, NULL) == PL_OK);
    CU_ASSERT_FATAL(pl_gguf_open(&g, out, NULL) == PL_OK);
    TU_CHECK(out_type(g, "token_embd.weight") == PL_TYPE_Q4_K &&
                 out_type(g, "blk.0.attn_v.weight") == PL_TYPE_Q4_K &&
                 out_type(g, "blk.0.ffn_down.weight") == PL_TYPE_Q5_0,
             "pure Q4_K_M: %s %s %s", pl_type_name(out_type(g, "token_embd.weight")),
             pl_type_name(out_type(g, "blk.0.attn_v.weight")),
             pl_type_name(out_type(g, "blk.0.ffn_down.weight")));
    pl_gguf_free(g);
    remove(in);
    remove(out);
    tm_free(&m);
}

/* MXFP4_MOE as llama.cpp plans it: a tensor with ne[2] > 1 (the experts) MXFP4, every other
 * weight matrix Q8_0 (output.weight too), norms and the router as they are; a row that is no
 * multiple of 32 falls back to F16; pure: every weight matrix MXFP4. */
static void plan_mxfp4_moe_takes_the_experts(void)
{
    const pl_plan_model m = {
        .arch = "llama", .n_layer = 2, .n_head = 8, .n_head_kv = 2, .n_expert = 32};
    static const struct {
        const char *name;
        uint32_t n_dims;
        int64_t ne[3];
        int quantize;
        pl_type mix, pure;
    } cases[] = {
        {"blk.1.ffn_down_exps.weight", 3, {2880, 2880, 32}, 1, PL_TYPE_MXFP4, PL_TYPE_MXFP4},
        {"blk.0.ffn_gate_exps.weight", 3, {64, 96, 2}, 1, PL_TYPE_MXFP4, PL_TYPE_MXFP4},
        {"blk.0.ffn_up_exps.weight", 3, {40, 96, 4}, 1, PL_TYPE_F16, PL_TYPE_F16},
        {"blk.0.ffn_up_exps.weight", 3, {64, 96, 1}, 1, PL_TYPE_Q8_0, PL_TYPE_MXFP4},
        {"blk.0.attn_v.weight", 2, {2880, 512, 1}, 1, PL_TYPE_Q8_0, PL_TYPE_MXFP4},
        {"blk.0.attn_output.weight", 2, {4096, 2880, 1}, 1, PL_TYPE_Q8_0, PL_TYPE_MXFP4},
        {"output.weight", 2, {2880, 201088, 1}, 1, PL_TYPE_Q8_0, PL_TYPE_MXFP4},
        {"token_embd.weight", 2, {2880, 201088, 1}, 1, PL_TYPE_Q8_0, PL_TYPE_MXFP4},
        {"blk.0.ffn_gate_inp.weight", 2, {2880, 32, 1}, 0, PL_TYPE_COUNT, PL_TYPE_COUNT},
        {"blk.0.attn_norm.weight", 1, {2880, 1, 1}, 0, PL_TYPE_COUNT, PL_TYPE_COUNT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int pure = 0; pure < 2; pure++) {
            pl_tensor_plan p;
            pl_error err;
            const pl_status s =
                pl_ftype_tensor_plan(PL_FTYPE_MXFP4_MOE, pure, cases[i].name, cases[i].n_dims,
                                     cases[i].ne, &m, 0, 0, &p, &err);
            const pl_type want = pure ? cases[i].pure : cases[i].mix;
            TU_CHECK(s == PL_OK && p.quantize == cases[i].quantize &&
                         (!p.quantize || p.type == want),
                     "MXFP4_MOE%s %s [%lld, %lld, %lld]: %s, quantize %d, type %s, want %s",
                     pure ? " pure" : "", cases[i].name, (long long)cases[i].ne[0],
                     (long long)cases[i].ne[1], (long long)cases[i].ne[2], pl_status_str(s),
                     p.quantize, pl_type_name(p.type), pl_type_name(want));
        }
}

/* A file with 3-D expert tensors to MXFP4_MOE and back to Q8_0: each written tensor holds the
 * bytes pl_quantize_rows gives on the input's rows (the experts' ne[1] ne[2] rows, MXFP4's
 * quantizer), and from MXFP4 the bytes of Q8_0 on MXFP4's exact dequantized values. */
static void model_quantize_mxfp4_moe_experts_and_back(void)
{
    enum { E = 64, F = 32, X = 4, V = 16 };
    static const struct {
        const char *name;
        uint32_t n_dims;
        int64_t ne[3];
        pl_type moe, back; /* MXFP4_MOE, then Q8_0 from that */
    } ts[] = {
        {"token_embd.weight", 2, {E, V, 1}, PL_TYPE_Q8_0, PL_TYPE_Q8_0},
        {"blk.0.attn_norm.weight", 1, {E, 1, 1}, PL_TYPE_F32, PL_TYPE_F32},
        {"blk.0.attn_q.weight", 2, {E, E, 1}, PL_TYPE_Q8_0, PL_TYPE_Q8_0},
        {"blk.0.ffn_gate_inp.weight", 2, {E, X, 1}, PL_TYPE_F32, PL_TYPE_F32},
        {"blk.0.ffn_up_exps.weight", 3, {E, F, X}, PL_TYPE_MXFP4, PL_TYPE_Q8_0},
        {"blk.0.ffn_down_exps.weight", 3, {F, E, X}, PL_TYPE_MXFP4, PL_TYPE_Q8_0},
        {"blk.0.ffn_gate_exps.weight", 3, {40, F, X}, PL_TYPE_F16, PL_TYPE_F16},
        {"output.weight", 2, {E, V, 1}, PL_TYPE_Q8_0, PL_TYPE_Q8_0},
    };
    enum { NT = sizeof ts / sizeof ts[0] };
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x4d58);
    float *data[NT];
    pl_gguf_writer *w = NULL;
    pl_error err;
    CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
    pl_status s = pl_gguf_writer_set_string(w, "general.architecture", "llama", 5, &err);
    if (!s) s = pl_gguf_writer_set_u32(w, "llama.block_count", 1, &err);
    for (int i = 0; i < NT; i++) {
        const int64_t n = ts[i].ne[0] * ts[i].ne[1] * ts[i].ne[2];
        data[i] = malloc(sizeof(float) * (size_t)n);
        fill_normal(&r, data[i], n, 0.05);
        if (!s)
            s = pl_gguf_writer_add_tensor(w, ts[i].name, PL_TYPE_F32, ts[i].n_dims, ts[i].ne,
                                          data[i], &err);
    }
    char in[PATH_LEN], mid[PATH_LEN], out[PATH_LEN];
    tmp_path(in, "moe-in.gguf");
    tmp_path(mid, "moe-mxfp4.gguf");
    tmp_path(out, "moe-q8.gguf");
    if (!s) s = pl_gguf_writer_write_file(w, in, &err);
    pl_gguf_writer_free(w);
    TU_CHECK(s == PL_OK, "writing the test model: %s", err.msg);
    pl_quantize_params p = {.ftype = PL_FTYPE_MXFP4_MOE};
    s = pl_model_quantize(in, mid, &p, &err);
    TU_CHECK(s == PL_OK, "to MXFP4_MOE: %s", err.msg);
    p.ftype = PL_FTYPE_Q8_0;
    if (!s) s = pl_model_quantize(mid, out, &p, &err);
    TU_CHECK(s == PL_OK, "MXFP4_MOE to Q8_0: %s", err.msg);
    pl_gguf *gm = NULL, *go = NULL;
    if (!s) s = pl_gguf_open(&gm, mid, &err);
    if (!s) s = pl_gguf_open(&go, out, &err);
    for (int i = 0; i < NT && !s; i++) {
        const int64_t K = ts[i].ne[0], rows = ts[i].ne[1] * ts[i].ne[2];
        pl_tensor_info a, b;
        TU_CHECK(pl_gguf_tensor(gm, (uint64_t)pl_gguf_find_tensor(gm, ts[i].name), &a, NULL) ==
                         PL_OK &&
                     pl_gguf_tensor(go, (uint64_t)pl_gguf_find_tensor(go, ts[i].name), &b, NULL) ==
                         PL_OK,
                 "%s missing", ts[i].name);
        TU_CHECK(a.type == ts[i].moe && b.type == ts[i].back && a.n_dims == ts[i].n_dims &&
                     a.ne[2] == ts[i].ne[2] && b.ne[2] == ts[i].ne[2],
                 "%s: %s then %s, want %s then %s", ts[i].name, pl_type_name(a.type),
                 pl_type_name(b.type), pl_type_name(ts[i].moe), pl_type_name(ts[i].back));
        if (a.type != ts[i].moe || b.type != ts[i].back) continue;
        size_t ra, rb;
        CU_ASSERT_FATAL(pl_type_row_bytes(a.type, K, &ra, NULL) == PL_OK);
        CU_ASSERT_FATAL(pl_type_row_bytes(b.type, K, &rb, NULL) == PL_OK);
        uint8_t *qa = malloc(ra * (size_t)rows), *qb = malloc(rb * (size_t)rows);
        float *y = malloc(sizeof(float) * (size_t)(K * rows));
        CU_ASSERT_FATAL(pl_quantize_rows(a.type, qa, data[i], rows, K, NULL) == PL_OK);
        TU_CHECK(a.n_bytes == ra * (size_t)rows && memcmp(qa, a.data, a.n_bytes) == 0,
                 "%s: the MXFP4_MOE file's %s bytes are not pl_quantize_rows'", ts[i].name,
                 pl_type_name(a.type));
        CU_ASSERT_FATAL(pl_dequantize_rows(a.type, y, a.data, rows, K, NULL) == PL_OK);
        CU_ASSERT_FATAL(pl_quantize_rows(b.type, qb, y, rows, K, NULL) == PL_OK);
        TU_CHECK(b.n_bytes == rb * (size_t)rows && memcmp(qb, b.data, b.n_bytes) == 0,
                 "%s: %s from %s is not the requantized dequantization", ts[i].name,
                 pl_type_name(b.type), pl_type_name(a.type));
        if (a.type == PL_TYPE_MXFP4) {
            const double e = rms_rel(data[i], y, K * rows);
            TU_CHECK(e <= tol_of(PL_TYPE_MXFP4)->rms, "%s: MXFP4 rms_rel %.4g", ts[i].name, e);
        }
        free(qa);
        free(qb);
        free(y);
    }
    TU_CHECK(s == PL_OK, "%s", err.msg);
    pl_gguf_free(gm);
    pl_gguf_free(go);
    for (int i = 0; i < NT; i++) free(data[i]);
    remove(in);
    remove(mid);
    remove(out);
}

static int read_all(const char *path, uint8_t **out, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc(n > 0 ? (size_t)n : 1);
    *size = fread(*out, 1, (size_t)n, f);
    fclose(f);
    return *size == (size_t)n ? 0 : -1;
}

static void model_quantize_same_bytes_for_any_thread_count(void)
{
    tmodel m;
    tm_build(&m, 0, tu_seed());
    char in[PATH_LEN], out[PATH_LEN];
    tmp_path(in, "th-in.gguf");
    tmp_path(out, "th-out.gguf");
    tm_write(&m, in);
    uint8_t *first = NULL;
    size_t first_size = 0;
    const int counts[] = {1, 2, 3, 0};
    for (int i = 0; i < 4; i++) {
        pl_quantize_params p = {.ftype = PL_FTYPE_Q4_K_M, .n_threads = counts[i]};
        pl_error err;
        TU_CHECK(pl_model_quantize(in, out, &p, &err) == PL_OK, "%d threads: %s", counts[i],
                 err.msg);
        uint8_t *b = NULL;
        size_t n = 0;
        CU_ASSERT_FATAL(read_all(out, &b, &n) == 0);
        if (!first) {
            first = b;
            first_size = n;
            continue;
        }
        TU_CHECK(n == first_size && memcmp(b, first, n) == 0, "%d threads: different bytes",
                 counts[i]);
        free(b);
    }
    free(first);
    remove(in);
    remove(out);
    tm_free(&m);
}

/* general.alignment 1 puts tensor data at odd offsets: the conversion must not load f16/f32
 * fields from misaligned addresses (UBSan checks this build) and must give the same bytes. */
static void model_quantize_reads_misaligned_tensor_data(void)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0xa11);
    tmodel m;
    memset(&m, 0, sizeof m);
    tm_add(&m, &r, "blk.0.attn_norm.weight", PL_TYPE_F32, 3, 0, 1.0, 0); /* 12 bytes */
    tm_add(&m, &r, "blk.0.attn_q.bias", PL_TYPE_F16, 1, 0, 1.0, 0);      /* 2 bytes: odd */
    tm_add(&m, &r, "blk.0.attn_q.weight", PL_TYPE_F32, 64, 3, 1.0, 0);
    tm_add(&m, &r, "blk.0.attn_k.weight", PL_TYPE_F16, 64, 3, 1.0, 0);
    tm_add(&m, &r, "blk.0.attn_v.weight", PL_TYPE_Q4_1, 64, 3, 1.0, 0);
    char in[PATH_LEN], out[PATH_LEN];
    tmp_path(in, "al-in.gguf");
    tmp_path(out, "al-out.gguf");
    /* every tensor size here is even, so the data offset's parity is every tensor's: pick the
     * name length that makes it odd */
    int odd = 0;
    for (int len = 3; len <= 4 && odd < 2; len++) {
        pl_gguf_writer *w = NULL;
        CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, NULL) == PL_OK);
        CU_ASSERT(pl_gguf_writer_set_string(w, "general.name", "odd1", (size_t)len, NULL) == 0);
        CU_ASSERT(pl_gguf_writer_set_u32(w, "general.alignment", 1, NULL) == PL_OK);
        for (int i = 0; i < m.n; i++)
            CU_ASSERT(pl_gguf_writer_add_tensor(w, m.t[i].name, m.t[i].type, m.t[i].n_dims,
                                                m.t[i].ne, m.t[i].data, NULL) == PL_OK);
        CU_ASSERT_FATAL(pl_gguf_writer_write_file(w, in, NULL) == PL_OK);
        pl_gguf_writer_free(w);
        pl_gguf *g = NULL;
        CU_ASSERT_FATAL(pl_gguf_open(&g, in, NULL) == PL_OK);
        odd = 0;
        for (uint64_t i = 0; i < pl_gguf_n_tensors(g); i++) {
            pl_tensor_info ti;
            CU_ASSERT_FATAL(pl_gguf_tensor(g, i, &ti, NULL) == PL_OK);
            odd += (uintptr_t)ti.data % 2 != 0;
        }
        pl_gguf_free(g);
    }
    TU_CHECK(odd >= 2, "only %d tensors at odd addresses: the test does not test", odd);
    pl_quantize_params p = {.ftype = PL_FTYPE_Q8_0};
    pl_error err;
    TU_CHECK(pl_model_quantize(in, out, &p, &err) == PL_OK, "%s", err.msg);
    pl_gguf *g = NULL;
    CU_ASSERT_FATAL(pl_gguf_open(&g, out, NULL) == PL_OK);
    for (int i = 2; i < m.n; i++) {
        pl_tensor_info ti;
        CU_ASSERT_FATAL(pl_gguf_tensor(g, (uint64_t)i, &ti, NULL) == PL_OK);
        uint8_t q[3 * 68];
        CU_ASSERT_FATAL(pl_quantize_rows(PL_TYPE_Q8_0, q, m.t[i].f32, 3, 64, NULL) == PL_OK);
        TU_CHECK(ti.type == PL_TYPE_Q8_0 && memcmp(ti.data, q, sizeof q) == 0,
                 "%s: converted bytes differ", m.t[i].name);
    }
    pl_gguf_free(g);
    remove(in);
    remove(out);
    tm_free(&m);
}

/* ---- cancellation and errors ------------------------------------------------------------- */

typedef struct cancel_at {
    int calls, at;
    uint64_t last_done, total;
    int monotonic;
} cancel_at;

static int cancel_cb(void *user, uint64_t done, uint64_t total)
{
    cancel_at *c = user;
    if (done < c->last_done || done > total) c->monotonic = 0;
    c->last_done = done;
    c->total = total;
    return ++c->calls == c->at;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
}

static int file_is(const char *path, const char *text)
{
    char buf[128] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n == strlen(text) && memcmp(buf, text, n) == 0;
}

static void model_quantize_cancel_leaves_no_file(void)
{
    tmodel m;
    tm_build(&m, 0, tu_seed());
    char in[PATH_LEN], out[PATH_LEN];
    tmp_path(in, "c-in.gguf");
    tmp_path(out, "c-out.gguf");
    tm_write(&m, in);
    /* how many times the callback runs when left alone */
    cancel_at all = {.monotonic = 1};
    pl_quantize_params p = {.ftype = PL_FTYPE_Q4_K_M, .progress = cancel_cb, .progress_user = &all};
    CU_ASSERT_FATAL(pl_model_quantize(in, out, &p, NULL) == PL_OK);
    TU_CHECK(all.monotonic && all.last_done == all.total && all.calls > 2,
             "progress: %d calls, ended at %llu of %llu", all.calls,
             (unsigned long long)all.last_done, (unsigned long long)all.total);
    remove(out);
    for (int at = 1; at <= all.calls; at++) {
        cancel_at c = {.at = at, .monotonic = 1};
        p.progress_user = &c;
        pl_error err;
        pl_status s = pl_model_quantize(in, out, &p, &err);
        TU_CHECK(s == PL_ERR_CANCELLED, "cancel at call %d: %s (%s)", at, pl_status_str(s),
                 err.msg);
        TU_CHECK(!exists(out) && !tmp_exists(out), "cancel at call %d left a file", at);
    }
    /* an existing output survives a cancelled run untouched */
    write_file(out, "previous contents");
    cancel_at c = {.at = all.calls / 2 + 1, .monotonic = 1};
    p.progress_user = &c;
    CU_ASSERT(pl_model_quantize(in, out, &p, NULL) == PL_ERR_CANCELLED);
    TU_CHECK(file_is(out, "previous contents") && !tmp_exists(out), "old output damaged");
    remove(out);
    remove(in);
    tm_free(&m);
}

static void model_quantize_reports_bad_inputs(void)
{
    tmodel m;
    tm_build(&m, 0, tu_seed());
    char in[PATH_LEN], out[PATH_LEN];
    tmp_path(in, "e-in.gguf");
    tmp_path(out, "e-out.gguf");
    tm_write(&m, in);
    pl_quantize_params p = {.ftype = PL_FTYPE_Q8_0};
    pl_error err;
    char missing[PATH_LEN], other[PATH_LEN];
    tmp_path(missing, "missing.gguf");
    tmp_path(other, "e2.gguf");
    pl_status s = pl_model_quantize(missing, out, &p, &err);
    TU_CHECK(s == PL_ERR_IO && strstr(err.msg, "missing.gguf"), "missing input: %s %s",
             pl_status_str(s), err.msg);
    p.ftype = (pl_ftype)19; /* IQ2_XXS */
    s = pl_model_quantize(in, out, &p, &err);
    TU_CHECK(s == PL_ERR_UNSUPPORTED && strstr(err.msg, "19"), "unsupported target: %s %s",
             pl_status_str(s), err.msg);
    p.ftype = PL_FTYPE_Q8_0;
    char bad[256];
    snprintf(bad, sizeof bad, "%s/no/such/dir/out.gguf", tmpdir);
    s = pl_model_quantize(in, bad, &p, &err);
    TU_CHECK(s == PL_ERR_IO && strstr(err.msg, "no/such/dir"), "missing directory: %s %s",
             pl_status_str(s), err.msg);
    TU_CHECK(pl_model_quantize(NULL, out, &p, &err) == PL_ERR_INVALID_ARG, "NULL in");
    TU_CHECK(pl_model_quantize(in, out, NULL, &err) == PL_ERR_INVALID_ARG, "NULL params");
    /* a file that is not GGUF */
    write_file(out, "not a gguf file at all");
    s = pl_model_quantize(out, other, &p, &err);
    TU_CHECK(s == PL_ERR_FORMAT, "garbage input: %s %s", pl_status_str(s), err.msg);
    remove(out);
    TU_CHECK(!exists(out) && !tmp_exists(out), "nothing left");
    remove(in);
    tm_free(&m);
}

static void model_quantize_fails_cleanly_at_every_allocation(void)
{
    tmodel m;
    tm_build(&m, 0, tu_seed());
    char in[PATH_LEN], out[PATH_LEN];
    tmp_path(in, "a-in.gguf");
    tmp_path(out, "a-out.gguf");
    tm_write(&m, in);
    pl_quantize_params p = {.ftype = PL_FTYPE_Q4_K_M};
    for (int persistent = 0; persistent < 2; persistent++) {
        p.n_threads = persistent ? 0 : 2; /* with and without the thread pool */
        int ok = 0;
        for (uint64_t n = 1; n < 10000 && !ok; n++) {
            tu_alloc_fail_at(n, persistent);
            pl_error err;
            pl_status s = pl_model_quantize(in, out, &p, &err);
            uint64_t failed = tu_alloc_failed();
            tu_alloc_reset();
            if (failed == 0) {
                TU_CHECK(s == PL_OK, "no failure injected at %llu: %s", (unsigned long long)n,
                         err.msg);
                ok = 1;
            } else {
                TU_CHECK(s == PL_ERR_NOMEM, "allocation %llu (persistent %d) failed: got %s (%s)",
                         (unsigned long long)n, persistent, pl_status_str(s), err.msg);
                TU_CHECK(!exists(out) && !tmp_exists(out), "allocation %llu: file left",
                         (unsigned long long)n);
            }
        }
        TU_CHECK(ok, "never succeeded");
        remove(out);
    }
    remove(in);
    tm_free(&m);
}

/* ---- streamed writing --------------------------------------------------------------------- */

typedef struct stream_src {
    const tmodel *m;
    int fail_at; /* tensor index whose fill fails, or -1 */
} stream_src;

static pl_status stream_fill(void *user, uint64_t i, void *dst, uint64_t n_bytes, pl_error *err)
{
    stream_src *s = user;
    if ((int)i == s->fail_at) {
        if (err) {
            err->code = PL_ERR_TYPE;
            snprintf(err->msg, sizeof err->msg, "fill refused tensor %llu", (unsigned long long)i);
        }
        return PL_ERR_TYPE;
    }
    memcpy(dst, s->m->t[i].data, (size_t)n_bytes);
    return PL_OK;
}

static void write_streamed_equals_the_writer(void)
{
    tmodel m;
    tm_build(&m, 0, tu_seed());
    for (int align = 0; align < 2; align++) {
        pl_gguf_writer *w = NULL, *ws = NULL;
        CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, NULL) == PL_OK);
        CU_ASSERT_FATAL(pl_gguf_writer_new(&ws, 3, NULL) == PL_OK);
        pl_gguf_writer *both[2] = {w, ws};
        for (int k = 0; k < 2; k++) {
            pl_gguf_writer *x = both[k];
            CU_ASSERT(pl_gguf_writer_set_string(x, "general.name", "s", 1, NULL) == PL_OK);
            if (align) CU_ASSERT(pl_gguf_writer_set_u32(x, "general.alignment", 64, NULL) == 0);
            CU_ASSERT(pl_gguf_writer_set_array_str(x, "strs", tm_strings, NULL, 3, NULL) == 0);
            CU_ASSERT(pl_gguf_writer_set_array(x, "f", PL_GGUF_FLOAT32, tm_floats, 2, NULL) == 0);
            uint8_t b = 1;
            CU_ASSERT(pl_gguf_writer_set(x, "b", PL_GGUF_BOOL, &b, NULL) == PL_OK);
        }
        pl_tensor_spec specs[8 * TM_LAYERS + 8];
        for (int i = 0; i < m.n; i++) {
            CU_ASSERT(pl_gguf_writer_add_tensor(w, m.t[i].name, m.t[i].type, m.t[i].n_dims,
                                                m.t[i].ne, m.t[i].data, NULL) == PL_OK);
            specs[i] = (pl_tensor_spec){.name = m.t[i].name,
                                        .type = m.t[i].type,
                                        .n_dims = m.t[i].n_dims,
                                        .ne = {m.t[i].ne[0], m.t[i].ne[1], 1, 1}};
        }
        void *img = NULL;
        size_t size = 0;
        CU_ASSERT_FATAL(pl_gguf_writer_write_memory(w, &img, &size, NULL) == PL_OK);
        char path[PATH_LEN];
        tmp_path(path, "streamed.gguf");
        stream_src src = {.m = &m, .fail_at = -1};
        pl_error err;
        pl_status s =
            pl_gguf_write_streamed(ws, path, specs, (uint64_t)m.n, stream_fill, &src, &err);
        TU_CHECK(s == PL_OK, "streamed write: %s", err.msg);
        FILE *f = fopen(path, "rb");
        uint8_t *got = malloc(size + 1);
        size_t n = f ? fread(got, 1, size + 1, f) : 0;
        if (f) fclose(f);
        TU_CHECK(n == size && memcmp(got, img, size) == 0,
                 "alignment %d: streamed file (%zu bytes) differs from the writer's (%zu)",
                 align ? 64 : 32, n, size);
        /* a failing fill: its error passes through and nothing is left */
        src.fail_at = 5;
        remove(path);
        s = pl_gguf_write_streamed(ws, path, specs, (uint64_t)m.n, stream_fill, &src, &err);
        TU_CHECK(s == PL_ERR_TYPE && strstr(err.msg, "refused"), "fill error: %s %s",
                 pl_status_str(s), err.msg);
        TU_CHECK(!exists(path) && !tmp_exists(path), "failed write left a file");
        /* duplicate names are refused before anything is written */
        specs[1].name = specs[0].name;
        s = pl_gguf_write_streamed(ws, path, specs, (uint64_t)m.n, stream_fill, &src, &err);
        TU_CHECK(s == PL_ERR_INVALID_ARG && !exists(path), "duplicate names: %s", pl_status_str(s));
        free(got);
        pl_buffer_free(img);
        pl_gguf_writer_free(w);
        pl_gguf_writer_free(ws);
    }
    tm_free(&m);
}

int main(void)
{
    static const tu_test tests[] = {
        {"quantize_rows_round_trip_within_type_bound", quantize_rows_round_trip_within_type_bound},
        {"quantize_rows_rejects_bad_arguments", quantize_rows_rejects_bad_arguments},
        {"quantize_rows_never_allocate", quantize_rows_never_allocate},
        {"ftype_names_parse_and_print", ftype_names_parse_and_print},
        {"plan_q4_k_m_follows_llama_cpp", plan_q4_k_m_follows_llama_cpp},
        {"plan_output_and_legacy_types_follow_llama_cpp",
         plan_output_and_legacy_types_follow_llama_cpp},
        {"plan_falls_back_where_rows_do_not_fit", plan_falls_back_where_rows_do_not_fit},
        {"plan_leaves_norms_biases_and_vectors_alone", plan_leaves_norms_biases_and_vectors_alone},
        {"plan_new_mixes_on_qwen2_05b", plan_new_mixes_on_qwen2_05b},
        {"plan_new_mixes_on_llama_1b", plan_new_mixes_on_llama_1b},
        {"plan_attn_v_reads_gqa_and_model_size", plan_attn_v_reads_gqa_and_model_size},
        {"plan_eight_experts_follow_llama_cpp", plan_eight_experts_follow_llama_cpp},
        {"plan_counters_follow_llama_quantize_order", plan_counters_follow_llama_quantize_order},
        {"plan_mxfp4_moe_takes_the_experts", plan_mxfp4_moe_takes_the_experts},
        {"model_quantize_writes_every_target", model_quantize_writes_every_target},
        {"model_quantize_q4_k_m_mixes_per_tensor", model_quantize_q4_k_m_mixes_per_tensor},
        {"model_quantize_mxfp4_moe_experts_and_back", model_quantize_mxfp4_moe_experts_and_back},
        {"model_quantize_tied_embedding_takes_output_type",
         model_quantize_tied_embedding_takes_output_type},
        {"model_quantize_same_bytes_for_any_thread_count",
         model_quantize_same_bytes_for_any_thread_count},
        {"model_quantize_reads_misaligned_tensor_data",
         model_quantize_reads_misaligned_tensor_data},
        {"model_quantize_cancel_leaves_no_file", model_quantize_cancel_leaves_no_file},
        {"model_quantize_reports_bad_inputs", model_quantize_reports_bad_inputs},
        {"model_quantize_fails_cleanly_at_every_allocation",
         model_quantize_fails_cleanly_at_every_allocation},
        {"write_streamed_equals_the_writer", write_streamed_equals_the_writer},
        {NULL, NULL},
    };
    int rc = tu_run("quantize_model", tests);
    if (tmpdir[0]) rmdir(tmpdir);
    return rc;
}
