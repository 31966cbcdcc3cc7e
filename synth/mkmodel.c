/* mkmodel.c — writes synthetic llama/qwen2/qwen3 GGUF files: llama.cpp's metadata keys and
 * tensor names, seeded weights at sensible scales, a real vocabulary. Not a trained model. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mkmodel.h"

static pl_status mk_fail(pl_error *err, pl_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static pl_status mk_fail(pl_error *err, pl_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- presets: real dimensions (from the models' config.json), random weights ---- */

static const struct preset {
    const char *name;
    mk_config c;
} presets[] = {
    /* tiny: for tests, < 2 MB at F32. n_embd 256 so K-quants apply to the matrices that read
     * the residual stream (q/k/v/gate/up, embeddings); attn_output (128 wide) and ffn_down
     * (64 wide) take the legacy fallback, as 896-wide rows do in Qwen2-0.5B. head_dim 32 !=
     * n_embd/n_head exercises attention.key_length. */
    {"tiny",
     {.name = "plumb tiny",
      .arch = "llama",
      .n_embd = 256,
      .n_layer = 2,
      .n_head = 4,
      .n_head_kv = 2,
      .head_dim = 32,
      .n_ff = 64,
      .n_vocab = 320,
      .n_ctx = 256,
      .rope_base = 10000.0f,
      .rms_eps = 1e-5f,
      .tied = 0,
      .vocab = DEMO_VOCAB_BPE}},
    /* Qwen/Qwen2.5-0.5B: q/k/v biases, neox RoPE, tied embeddings. */
    {"qwen2-0.5b",
     {.name = "plumb qwen2-0.5b (random weights)",
      .arch = "qwen2",
      .n_embd = 896,
      .n_layer = 24,
      .n_head = 14,
      .n_head_kv = 2,
      .n_ff = 4864,
      .n_vocab = 151936,
      .n_ctx = 32768,
      .rope_base = 1000000.0f,
      .rms_eps = 1e-6f,
      .tied = 1,
      .vocab = DEMO_VOCAB_BPE}},
    /* meta-llama/Llama-3.2-1B (the llama3 rope scaling is not reproduced). */
    {"llama-1b",
     {.name = "plumb llama-1b (random weights)",
      .arch = "llama",
      .n_embd = 2048,
      .n_layer = 16,
      .n_head = 32,
      .n_head_kv = 8,
      .n_ff = 8192,
      .n_vocab = 128256,
      .n_ctx = 131072,
      .rope_base = 500000.0f,
      .rms_eps = 1e-5f,
      .tied = 1,
      .vocab = DEMO_VOCAB_BPE_LLAMA3}},
    /* Qwen/Qwen3-0.6B: head_dim 128 != 1024/16, per-head q/k RMSNorm, tied embeddings. */
    {"qwen3-0.6b",
     {.name = "plumb qwen3-0.6b (random weights)",
      .arch = "qwen3",
      .n_embd = 1024,
      .n_layer = 28,
      .n_head = 16,
      .n_head_kv = 8,
      .head_dim = 128,
      .n_ff = 3072,
      .n_vocab = 151936,
      .n_ctx = 40960,
      .rope_base = 1000000.0f,
      .rms_eps = 1e-6f,
      .tied = 1,
      .vocab = DEMO_VOCAB_BPE}},
    /* google/gemma-2-2b: head_dim 256, soft-caps 50/30, local layers of 4096 every other. */
    {"gemma2-2b",
     {.name = "plumb gemma2-2b (random weights)",
      .arch = "gemma2",
      .n_embd = 2304,
      .n_layer = 26,
      .n_head = 8,
      .n_head_kv = 4,
      .head_dim = 256,
      .n_ff = 9216,
      .n_vocab = 256000,
      .n_ctx = 8192,
      .rope_base = 10000.0f,
      .rms_eps = 1e-6f,
      .tied = 1,
      .local_window = 4096,
      .attn_softcap = 50.0f,
      .final_softcap = 30.0f,
      .vocab = DEMO_VOCAB_GEMMA}},
    /* google/gemma-3-1b-pt: one KV head, q/k norms, local layers of 512 (five of six). */
    {"gemma3-1b",
     {.name = "plumb gemma3-1b (random weights)",
      .arch = "gemma3",
      .n_embd = 1152,
      .n_layer = 26,
      .n_head = 4,
      .n_head_kv = 1,
      .head_dim = 256,
      .n_ff = 6912,
      .n_vocab = 262144,
      .n_ctx = 32768,
      .rope_base = 1000000.0f,
      .rms_eps = 1e-6f,
      .tied = 1,
      .local_window = 512,
      .vocab = DEMO_VOCAB_GEMMA,
      .chat_template = demo_tmpl_gemma3}},
    /* microsoft/Phi-3-mini-4k-instruct: fused qkv and gate/up, 32 KV heads, every layer local
     * with a window of 2047, untied, a SentencePiece vocabulary with Phi-3's specials. */
    {"phi3-mini",
     {.name = "plumb phi3-mini (random weights)",
      .arch = "phi3",
      .n_embd = 3072,
      .n_layer = 32,
      .n_head = 32,
      .n_head_kv = 32,
      .n_ff = 8192,
      .n_vocab = 32064,
      .n_ctx = 4096,
      .rope_base = 10000.0f,
      .rms_eps = 1e-5f,
      .tied = 0,
      .local_window = 2047,
      .vocab = DEMO_VOCAB_PHI3}},
    /* ibm-granite/granite-3.0-2b-base: llama's shape with its four multipliers, tied. */
    {"granite-3-2b",
     {.name = "plumb granite-3-2b (random weights)",
      .arch = "granite",
      .n_embd = 2048,
      .n_layer = 40,
      .n_head = 32,
      .n_head_kv = 8,
      .n_ff = 8192,
      .n_vocab = 49155,
      .n_ctx = 4096,
      .rope_base = 10000.0f,
      .rms_eps = 1e-5f,
      .tied = 1,
      .mult = {12.0f, 0.22f, 0.015625f, 8.0f},
      .vocab = DEMO_VOCAB_BPE}},
    /* HuggingFaceTB/SmolLM3-3B: llama's shape, every 4th layer without RoPE, tied. */
    {"smollm3-3b",
     {.name = "plumb smollm3-3b (random weights)",
      .arch = "smollm3",
      .n_embd = 2048,
      .n_layer = 36,
      .n_head = 16,
      .n_head_kv = 4,
      .n_ff = 11008,
      .n_vocab = 128256,
      .n_ctx = 65536,
      .rope_base = 5000000.0f,
      .rms_eps = 1e-6f,
      .tied = 1,
      .vocab = DEMO_VOCAB_BPE_LLAMA3}},
    /* allenai/OLMo-2-1124-7B: norms after each branch only, q/k norms over the whole
     * projection, untied. */
    {"olmo2-7b",
     {.name = "plumb olmo2-7b (random weights)",
      .arch = "olmo2",
      .n_embd = 4096,
      .n_layer = 32,
      .n_head = 32,
      .n_head_kv = 32,
      .n_ff = 11008,
      .n_vocab = 100352,
      .n_ctx = 4096,
      .rope_base = 500000.0f,
      .rms_eps = 1e-6f,
      .tied = 0,
      .vocab = DEMO_VOCAB_BPE}},
    /* LGAI-EXAONE/EXAONE-4.0-32B: post-norms, per-head q/k norms, 3 local layers (window 4096)
     * to 1 global without RoPE, untied. */
    {"exaone4-32b",
     {.name = "plumb exaone4-32b (random weights)",
      .arch = "exaone4",
      .n_embd = 5120,
      .n_layer = 64,
      .n_head = 40,
      .n_head_kv = 8,
      .head_dim = 128,
      .n_ff = 27392,
      .n_vocab = 102400,
      .n_ctx = 131072,
      .rope_base = 1000000.0f,
      .rms_eps = 1e-5f,
      .tied = 0,
      .local_window = 4096,
      .vocab = DEMO_VOCAB_BPE}},
    /* THUDM/GLM-4-9B-0414: q/k/v biases, fused gate/up, four norms, RoPE over half the head,
     * untied. */
    {"glm4-9b",
     {.name = "plumb glm4-9b (random weights)",
      .arch = "glm4",
      .n_embd = 4096,
      .n_layer = 40,
      .n_head = 32,
      .n_head_kv = 2,
      .head_dim = 128,
      .n_rot = 64,
      .n_ff = 13696,
      .n_vocab = 151552,
      .n_ctx = 32768,
      .rope_base = 10000.0f,
      .rms_eps = 1e-5f,
      .tied = 0,
      .vocab = DEMO_VOCAB_BPE}},
    /* tiny-moe: for tests, qwen3moe with 8 experts of 64, 2 used per token, < 3 MB at F32 */
    {"tiny-moe",
     {.name = "plumb tiny-moe",
      .arch = "qwen3moe",
      .n_embd = 256,
      .n_layer = 2,
      .n_head = 4,
      .n_head_kv = 2,
      .head_dim = 32,
      .n_ff = 128,
      .n_vocab = 320,
      .n_ctx = 256,
      .rope_base = 10000.0f,
      .rms_eps = 1e-6f,
      .tied = 0,
      .n_expert = 8,
      .n_expert_used = 2,
      .n_ff_exp = 64,
      .vocab = DEMO_VOCAB_BPE}},
    /* Qwen/Qwen3-30B-A3B: 128 experts of 768, 8 used (normalised), q/k norms, untied. */
    {"qwen3-30b-a3b",
     {.name = "plumb qwen3-30b-a3b (random weights)",
      .arch = "qwen3moe",
      .n_embd = 2048,
      .n_layer = 48,
      .n_head = 32,
      .n_head_kv = 4,
      .head_dim = 128,
      .n_ff = 6144,
      .n_vocab = 151936,
      .n_ctx = 40960,
      .rope_base = 1000000.0f,
      .rms_eps = 1e-6f,
      .tied = 0,
      .n_expert = 128,
      .n_expert_used = 8,
      .n_ff_exp = 768,
      .vocab = DEMO_VOCAB_BPE}},
    /* Qwen/Qwen1.5-MoE-A2.7B: 60 experts of 1408, 4 used (not normalised), a shared expert of
     * 5632 behind a sigmoid gate, q/k/v biases, untied. */
    {"qwen2-moe-a2.7b",
     {.name = "plumb qwen2-moe-a2.7b (random weights)",
      .arch = "qwen2moe",
      .n_embd = 2048,
      .n_layer = 24,
      .n_head = 16,
      .n_head_kv = 16,
      .n_ff = 5632,
      .n_vocab = 151936,
      .n_ctx = 8192,
      .rope_base = 1000000.0f,
      .rms_eps = 1e-6f,
      .tied = 0,
      .n_expert = 60,
      .n_expert_used = 4,
      .n_ff_exp = 1408,
      .n_ff_shexp = 5632,
      .vocab = DEMO_VOCAB_BPE}},
    /* openai/gpt-oss-20b: 32 experts of 2880, 4 used (softmax over the chosen), router and
     * expert biases, q/k/v/o biases, sinks, the clamped SwiGLU, even layers local (window 128),
     * YaRN 32 over 4096 unrounded, untied; --type MXFP4_MOE makes the experts MXFP4 as shipped */
    {"gpt-oss-20b",
     {.name = "plumb gpt-oss-20b (random weights)",
      .arch = "gpt-oss",
      .n_embd = 2880,
      .n_layer = 24,
      .n_head = 64,
      .n_head_kv = 8,
      .head_dim = 64,
      .n_ff = 2880,
      .n_vocab = 201088,
      .n_ctx = 131072,
      .rope_base = 150000.0f,
      .rms_eps = 1e-5f,
      .tied = 0,
      .local_window = 128,
      .n_expert = 32,
      .n_expert_used = 4,
      .n_ff_exp = 2880,
      .yarn_factor = 32.0f,
      .yarn_orig_ctx = 4096,
      .yarn_no_truncate = 1,
      .vocab = DEMO_VOCAB_BPE}},
    /* mistralai/Mixtral-8x7B-v0.1: llama with 8 experts of 14336, 2 used (normalised). */
    {"mixtral-8x7b",
     {.name = "plumb mixtral-8x7b (random weights)",
      .arch = "llama",
      .n_embd = 4096,
      .n_layer = 32,
      .n_head = 32,
      .n_head_kv = 8,
      .n_ff = 14336,
      .n_vocab = 32000,
      .n_ctx = 32768,
      .rope_base = 1000000.0f,
      .rms_eps = 1e-5f,
      .tied = 0,
      .n_expert = 8,
      .n_expert_used = 2,
      .vocab = DEMO_VOCAB_SPM,
      .chat_template = demo_tmpl_mistral}},
};
enum { N_PRESETS = sizeof presets / sizeof presets[0] };

int mk_preset(const char *name, mk_config *out)
{
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(presets[i].name, name) == 0) {
            *out = presets[i].c;
            out->ftype = PL_FTYPE_F32;
            out->seed = 1;
            return 0;
        }
    return -1;
}

const char *mk_preset_list(void)
{
    return "tiny, qwen2-0.5b, llama-1b, qwen3-0.6b, gemma2-2b, gemma3-1b, phi3-mini, granite-3-2b, "
           "smollm3-3b, olmo2-7b, "
           "exaone4-32b, glm4-9b, "
           "tiny-moe, "
           "qwen3-30b-a3b, qwen2-moe-a2.7b, gpt-oss-20b, mixtral-8x7b";
}

/* The architecture table knows the name when it can list a tensor plan for it. */
int mk_arch_from_name(const char *name, mk_config *c)
{
    /* a dense shape, else one with an expert (the mixture-of-experts architectures) */
    const pl_arch_shape dense = {1, 1, 1, 1, 1, 1, 2, 0, 0, 0, 0, 0, 0};
    const pl_arch_shape moe = {1, 1, 1, 1, 1, 1, 2, 0, 0, 1, 1, 0, 0};
    size_t n;
    if (strlen(name) >= sizeof c->arch ||
        (pl_arch_tensors(name, &dense, NULL, 0, &n, NULL) != PL_OK &&
         pl_arch_tensors(name, &moe, NULL, 0, &n, NULL) != PL_OK))
        return -1;
    snprintf(c->arch, sizeof c->arch, "%s", name);
    return 0;
}

static const char *const vocab_names[DEMO_VOCAB_COUNT] = {"spm", "bpe", "llama3", "gemma", "phi3"};

const char *mk_vocab_name(enum demo_vocab_kind k)
{
    return (unsigned)k < DEMO_VOCAB_COUNT ? vocab_names[k] : "unknown";
}

int mk_vocab_from_name(const char *name, enum demo_vocab_kind *out)
{
    for (int i = 0; i < DEMO_VOCAB_COUNT; i++)
        if (strcmp(vocab_names[i], name) == 0) {
            *out = (enum demo_vocab_kind)i;
            return 0;
        }
    return -1;
}

int64_t mk_head_dim(const mk_config *c)
{
    return c->head_dim > 0 ? c->head_dim : (c->n_head > 0 ? c->n_embd / c->n_head : 0);
}

/* Dimensions are bounded so every product below stays far from overflow and every count
 * fits the uint32 metadata llama.cpp writes. */
#define MK_MAX_DIM ((int64_t)1 << 20)

static pl_arch_shape mk_shape(const mk_config *c);

pl_status mk_validate(const mk_config *c, pl_error *err)
{
    const struct {
        const char *name;
        int64_t v;
    } dims[] = {{"n_embd", c->n_embd}, {"n_layer", c->n_layer},
                {"n_head", c->n_head}, {"n_head_kv", c->n_head_kv},
                {"n_ff", c->n_ff},     {"n_vocab", c->n_vocab},
                {"ctx", c->n_ctx}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].v < 1 || dims[i].v > (i == 6 ? INT32_MAX : MK_MAX_DIM))
            return mk_fail(err, PL_ERR_INVALID_ARG, "%s = %lld: must be in 1..%lld", dims[i].name,
                           (long long)dims[i].v, (long long)(i == 6 ? INT32_MAX : MK_MAX_DIM));
    if (c->n_expert < 0 || c->n_expert > 4096 || (c->n_expert > 0) != (c->n_expert_used > 0) ||
        c->n_expert_used > c->n_expert || c->n_expert_used > PL_ARCH_MAX_EXPERT_USED ||
        c->n_ff_exp < 0 || c->n_ff_exp > MK_MAX_DIM || c->n_ff_shexp < 0 ||
        c->n_ff_shexp > MK_MAX_DIM)
        return mk_fail(err, PL_ERR_INVALID_ARG,
                       "experts: n_expert %lld, n_expert_used %lld: 0 and 0 (dense), or "
                       "1 <= used <= n_expert <= 4096 (used <= %d); expert widths in 0..%lld",
                       (long long)c->n_expert, (long long)c->n_expert_used, PL_ARCH_MAX_EXPERT_USED,
                       (long long)MK_MAX_DIM);
    mk_config probe;
    if (mk_arch_from_name(c->arch, &probe) != 0)
        return mk_fail(err, PL_ERR_INVALID_ARG, "arch '%.16s' is not one plumb runs (%s)", c->arch,
                       pl_arch_list());
    if (c->n_head % c->n_head_kv != 0)
        return mk_fail(err, PL_ERR_INVALID_ARG,
                       "n_head %lld is not a multiple of n_head_kv %lld (grouped-query "
                       "attention shares each KV head among n_head/n_head_kv query heads)",
                       (long long)c->n_head, (long long)c->n_head_kv);
    int64_t hd = mk_head_dim(c);
    if (c->head_dim < 0 || hd > MK_MAX_DIM)
        return mk_fail(err, PL_ERR_INVALID_ARG, "head_dim = %lld: must be in 1..%lld",
                       (long long)c->head_dim, (long long)MK_MAX_DIM);
    if (c->head_dim == 0 && c->n_embd % c->n_head != 0)
        return mk_fail(err, PL_ERR_INVALID_ARG,
                       "n_embd %lld is not a multiple of n_head %lld: give --head-dim",
                       (long long)c->n_embd, (long long)c->n_head);
    if (hd < 2 || hd % 2 != 0)
        return mk_fail(err, PL_ERR_INVALID_ARG, "head_dim %lld must be even (RoPE rotates pairs)",
                       (long long)hd);
    if (c->n_head * hd > MK_MAX_DIM)
        return mk_fail(err, PL_ERR_INVALID_ARG, "n_head * head_dim = %lld exceeds %lld",
                       (long long)(c->n_head * hd), (long long)MK_MAX_DIM);
    if (!(c->rope_base > 0.0f) || !isfinite(c->rope_base))
        return mk_fail(err, PL_ERR_INVALID_ARG, "rope_base %g must be finite and > 0",
                       (double)c->rope_base);
    if (!(c->rms_eps > 0.0f) || !isfinite(c->rms_eps))
        return mk_fail(err, PL_ERR_INVALID_ARG, "rms_eps %g must be finite and > 0",
                       (double)c->rms_eps);
    if ((unsigned)c->vocab >= DEMO_VOCAB_COUNT)
        return mk_fail(err, PL_ERR_INVALID_ARG, "vocabulary kind %d is unknown", (int)c->vocab);
    if (c->n_vocab < (int64_t)demo_vocab_min(c->vocab))
        return mk_fail(err, PL_ERR_INVALID_ARG,
                       "n_vocab %lld is below %u, the smallest %s vocabulary (its byte and "
                       "special tokens)",
                       (long long)c->n_vocab, demo_vocab_min(c->vocab), mk_vocab_name(c->vocab));
    if (!pl_ftype_name(c->ftype))
        return mk_fail(err, PL_ERR_INVALID_ARG, "file type %u is not one plumb writes",
                       (unsigned)c->ftype);
    if (c->n_rot < 0 || c->n_rot > hd || c->n_rot % 2 != 0)
        return mk_fail(err, PL_ERR_INVALID_ARG, "n_rot %lld must be even and in 0..%lld",
                       (long long)c->n_rot, (long long)hd);
    /* an architecture that requires Granite's multipliers (its table writes a residual scale)
     * gets all four, or none is written and the file would not load */
    const int n_mult = (c->mult[0] > 0) + (c->mult[1] > 0) + (c->mult[2] > 0) + (c->mult[3] > 0);
    if (n_mult < 4) {
        pl_gguf_writer *w = NULL;
        pl_error e = {0};
        const pl_arch_shape shape = mk_shape(c);
        const pl_arch_hparams probe_hp = {.rms_eps = 1e-5f, .residual_scale = 1.0f};
        int has = pl_gguf_writer_new(&w, 3, &e) == PL_OK &&
                  pl_arch_write_keys(w, c->arch, &shape, &probe_hp, &e) == PL_OK;
        pl_gguf_writer_free(w);
        if (has)
            return mk_fail(err, PL_ERR_INVALID_ARG,
                           "arch '%.16s' requires its embedding, residual, attention and logit "
                           "multipliers: give all four (--multipliers E,R,A,L)",
                           c->arch);
        if (n_mult)
            return mk_fail(err, PL_ERR_INVALID_ARG,
                           "arch '%.16s' has no multipliers (Granite's): leave them out", c->arch);
    }
    return PL_OK;
}

/* ---- the tensor list ---- */

enum gen_kind { GEN_MATRIX, GEN_NORM, GEN_BIAS };

typedef struct mtensor {
    char name[48];
    enum gen_kind kind;
    float sigma; /* matrices: standard deviation of the entries */
    pl_tensor_spec spec;
    uint64_t seed; /* rows are seeded from it, so a row's values never depend on the type */
} mtensor;

typedef struct mjob {
    mtensor *t;
    uint64_t n;
    float *scratch;
    uint64_t done, total;
    int n_threads;
    pl_progress_fn progress;
    void *user;
} mjob;

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Approximately standard normal: the sum of four 16-bit uniforms (Irwin-Hall), centred and
 * scaled to unit variance. Bounded by +-3.46, which keeps random weights free of outliers. */
static float unit_normal(uint64_t *s)
{
    uint64_t r = splitmix64(s);
    uint32_t sum = (uint32_t)(r & 0xffff) + (uint32_t)(r >> 16 & 0xffff) +
                   (uint32_t)(r >> 32 & 0xffff) + (uint32_t)(r >> 48);
    return (float)(((double)sum + 2.0 - 131072.0) / 65536.0 * 1.7320508075688772);
}

static void gen_row(float *y, int64_t n, const mtensor *t, int64_t row)
{
    uint64_t s = t->seed ^ ((uint64_t)row * 0xD1B54A32D192ED03ull);
    splitmix64(&s);
    for (int64_t i = 0; i < n; i++) {
        float z = unit_normal(&s);
        switch (t->kind) {
        case GEN_MATRIX:
            y[i] = t->sigma * z;
            break;
        case GEN_NORM: /* RMSNorm gains near 1 */
            y[i] = 1.0f + 0.1f * z;
            break;
        case GEN_BIAS:
            y[i] = 0.1f * z;
            break;
        }
    }
}

/* Elements per step: bounds the scratch, sets the progress granularity, and is what the
 * threads split (by rows; rows are seeded independently, so any split gives the same bytes). */
#define MK_CHUNK_ELEMS ((int64_t)1 << 22)
#define MK_MAX_THREADS 256

typedef struct mpart {
    const mtensor *t;
    float *scratch; /* the chunk's rows, this part's at [r0 - chunk start) */
    char *dst;      /* the chunk's first row */
    uint64_t row_bytes;
    int64_t K, row0, r0, r1; /* chunk's first row; this part's rows [r0, r1) */
    pl_status status;
    pl_error err;
} mpart;

static void *mpart_run(void *arg)
{
    mpart *p = arg;
    int64_t K = p->K;
    for (int64_t r = p->r0; r < p->r1; r++) gen_row(p->scratch + (r - p->row0) * K, K, p->t, r);
    if (p->r1 > p->r0)
        p->status =
            pl_quantize_rows(p->t->spec.type, p->dst + (uint64_t)(p->r0 - p->row0) * p->row_bytes,
                             p->scratch + (p->r0 - p->row0) * K, p->r1 - p->r0, K, &p->err);
    return NULL;
}

static pl_status mk_fill(void *user, uint64_t i, void *dst, uint64_t n_bytes, pl_error *err)
{
    mjob *j = user;
    const mtensor *t = &j->t[i];
    int64_t K = t->spec.ne[0];
    int64_t rows = 1;
    for (uint32_t d = 1; d < t->spec.n_dims; d++) rows *= t->spec.ne[d];
    int64_t step = MK_CHUNK_ELEMS / K > 0 ? MK_CHUNK_ELEMS / K : 1;
    uint64_t row_bytes = n_bytes / (uint64_t)rows;
    for (int64_t r = 0; r < rows; r += step) {
        int64_t nr = rows - r < step ? rows - r : step;
        int nt = j->n_threads < nr ? j->n_threads : (int)nr;
        mpart parts[MK_MAX_THREADS];
        pthread_t tid[MK_MAX_THREADS];
        int started[MK_MAX_THREADS] = {0};
        for (int k = 0; k < nt; k++)
            parts[k] = (mpart){.t = t,
                               .scratch = j->scratch,
                               .dst = (char *)dst + (uint64_t)r * row_bytes,
                               .row_bytes = row_bytes,
                               .K = K,
                               .row0 = r,
                               .r0 = r + nr * k / nt,
                               .r1 = r + nr * (k + 1) / nt};
        for (int k = 1; k < nt; k++)
            started[k] = pthread_create(&tid[k], NULL, mpart_run, &parts[k]) == 0;
        mpart_run(&parts[0]);
        for (int k = 1; k < nt; k++) {
            if (started[k])
                pthread_join(tid[k], NULL);
            else
                mpart_run(&parts[k]); /* no thread to be had: do it here */
        }
        for (int k = 0; k < nt; k++)
            if (parts[k].status) {
                if (err) *err = parts[k].err;
                return parts[k].status;
            }
        j->done += (uint64_t)(nr * K);
        if (j->progress && j->progress(j->user, j->done, j->total) != 0)
            return mk_fail(err, PL_ERR_CANCELLED, "cancelled by the progress callback");
    }
    return PL_OK;
}

/* Appends one tensor; matrices are [in, out] (ne[0] = input dimension, as GGUF stores). */
static void add(mtensor *t, uint64_t *n, const char *name, enum gen_kind kind, float sigma,
                int64_t ne0, int64_t ne1, int64_t ne2)
{
    mtensor *m = &t[(*n)++];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->kind = kind;
    m->sigma = sigma;
    m->spec.name = m->name;
    m->spec.type = PL_TYPE_F32;
    m->spec.n_dims = ne2 > 1 ? 3 : ne1 > 0 ? 2 : 1;
    m->spec.ne[0] = ne0;
    m->spec.ne[1] = ne1 > 0 ? ne1 : 1;
    m->spec.ne[2] = ne2 > 1 ? ne2 : 1;
    m->spec.ne[3] = 1;
}

/* ---- metadata ---- */

/* The shape the architecture table reads (its keys and its tensors) from a config. */
static pl_arch_shape mk_shape(const mk_config *c)
{
    return (pl_arch_shape){.n_embd = c->n_embd,
                           .n_layer = c->n_layer,
                           .n_head = c->n_head,
                           .n_head_kv = c->n_head_kv,
                           .n_ff = c->n_ff,
                           .n_vocab = c->n_vocab,
                           .head_dim = mk_head_dim(c),
                           .n_rot = c->n_rot,
                           .tied = c->tied,
                           .n_expert = c->n_expert,
                           .n_expert_used = c->n_expert_used,
                           .n_ff_exp = c->n_ff_exp,
                           .n_ff_shexp = c->n_ff_shexp};
}

#define MULT(c, i) ((c)->mult[i])

static pl_status put_metadata(pl_gguf_writer *w, const mk_config *c, pl_error *err)
{
    /* the keys under "<arch>." through the architecture table's one writer */
    const pl_arch_shape shape = mk_shape(c);
    const pl_arch_hparams hp = {.n_ctx = c->n_ctx,
                                .rms_eps = c->rms_eps,
                                .rope_base = c->rope_base,
                                .window = c->local_window,
                                .attn_softcap = c->attn_softcap,
                                .final_softcap = c->final_softcap,
                                .embedding_scale = MULT(c, 0),
                                .residual_scale = MULT(c, 1),
                                .attention_scale = MULT(c, 2),
                                .logit_divisor = MULT(c, 3),
                                .logit_scale = c->logit_scale,
                                .yarn_factor = c->yarn_factor,
                                .yarn_orig_ctx = c->yarn_orig_ctx,
                                .yarn_no_truncate = c->yarn_no_truncate};
    pl_status s;
    if ((s = pl_arch_write_keys(w, c->arch, &shape, &hp, err)) ||
        (s = pl_gguf_writer_set_string(w, "general.name", c->name, strlen(c->name), err)) ||
        (s = pl_gguf_writer_set_u32(w, "general.file_type", (uint32_t)c->ftype, err)))
        return s;
    s = demo_vocab_write(w, c->vocab, (uint32_t)c->n_vocab, err);
    if (!s && c->chat_template)
        s = pl_gguf_writer_set_string(w, "tokenizer.chat_template", c->chat_template,
                                      strlen(c->chat_template), err);
    if (s) return s;
    /* last, where pl_model_quantize appends it: an F32 file quantized equals a direct one */
    return pl_gguf_writer_set_u32(w, "general.quantization_version", 2, err);
}

pl_status mk_write(const mk_config *c, const char *path, pl_progress_fn progress, void *user,
                   mk_stats *stats, pl_error *err)
{
    if (!c || !path) return mk_fail(err, PL_ERR_INVALID_ARG, "config or path is NULL");
    pl_status s = mk_validate(c, err);
    if (s) return s;
    size_t cap = 3 + (size_t)c->n_layer * 24;
    mjob job = {.progress = progress, .user = user, .n_threads = c->n_threads};
    if (job.n_threads <= 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        job.n_threads = ncpu > 0 ? (int)ncpu : 1;
    }
    if (job.n_threads > MK_MAX_THREADS) job.n_threads = MK_MAX_THREADS;
    pl_tensor_spec *specs = NULL;
    pl_arch_tensor_desc *plan_t = NULL;
    pl_gguf_writer *w = NULL;
    mk_stats st = {0};
    job.t = calloc(cap, sizeof *job.t);
    specs = calloc(cap, sizeof *specs);
    if (!job.t || !specs) {
        s = mk_fail(err, PL_ERR_NOMEM, "no memory for the tensor list");
        goto done;
    }
    /* the tensors of the architecture table (plumb.h: pl_arch_tensors), in its file order;
     * embeddings (and the output projection) give logits of standard deviation ~2.5 after the
     * final norm: peaked enough that argmax comparisons mean something; in-projections keep
     * unit variance; the two that write the residual stream are scaled by 1/sqrt(2 n_layer)
     * so it stays O(1) through depth */
    const pl_arch_shape shape = mk_shape(c);
    size_t n_plan = 0;
    if ((s = pl_arch_tensors(c->arch, &shape, NULL, 0, &n_plan, err))) goto done;
    if (n_plan > cap) {
        s = mk_fail(err, PL_ERR_LIMIT, "%zu tensors: over the %zu planned", n_plan, cap);
        goto done;
    }
    if (!(plan_t = calloc(n_plan, sizeof *plan_t)) ||
        (s = pl_arch_tensors(c->arch, &shape, plan_t, n_plan, &n_plan, err))) {
        if (!s) s = mk_fail(err, PL_ERR_NOMEM, "no memory for the tensor plan");
        goto done;
    }
    const float e_sigma = 2.5f / sqrtf((float)c->n_embd);
    const float in_e = 1.0f / sqrtf((float)c->n_embd);
    const float depth = 1.0f / sqrtf(2.0f * (float)c->n_layer);
    for (size_t i = 0; i < n_plan; i++) {
        const pl_arch_tensor_desc *d = &plan_t[i];
        const int64_t ne1 = d->n_dims >= 2 ? d->ne[1] : 0, ne2 = d->n_dims == 3 ? d->ne[2] : 1;
        switch (d->kind) {
        case PL_ARCH_T_EMBD:
            add(job.t, &job.n, d->name, GEN_MATRIX, e_sigma, d->ne[0], ne1, 1);
            break;
        case PL_ARCH_T_MATRIX_IN:
        case PL_ARCH_T_ROUTER: /* router logits of unit variance: a spread of choices */
            add(job.t, &job.n, d->name, GEN_MATRIX, in_e, d->ne[0], ne1, ne2);
            break;
        case PL_ARCH_T_MATRIX_OUT:
            add(job.t, &job.n, d->name, GEN_MATRIX, depth / sqrtf((float)d->ne[0]), d->ne[0], ne1,
                ne2);
            break;
        case PL_ARCH_T_NORM:
        case PL_ARCH_T_FACTORS: /* near 1: a gentle rescaling */
            add(job.t, &job.n, d->name, GEN_NORM, 0, d->ne[0], 0, 1);
            break;
        case PL_ARCH_T_BIAS:
            /* a vector, or one row per expert (gpt-oss's expert biases) */
            add(job.t, &job.n, d->name, GEN_BIAS, 0, d->ne[0], d->n_dims == 2 ? d->ne[1] : 0, 1);
            break;
        }
    }

    int64_t max_k = 1;
    for (uint64_t i = 0; i < job.n; i++) specs[i] = job.t[i].spec;
    pl_tensor_plan *plans = malloc((job.n ? job.n : 1) * sizeof *plans);
    if (!plans) {
        s = mk_fail(err, PL_ERR_NOMEM, "no memory for the tensor plans");
        goto done;
    }
    const pl_plan_model pm = {.arch = c->arch,
                              .n_layer = c->n_layer,
                              .n_head = c->n_head,
                              .n_head_kv = c->n_head_kv,
                              .n_expert = c->n_expert};
    s = pl_ftype_plan_tensors(c->ftype, c->pure, &pm, specs, job.n, plans, err);
    for (uint64_t i = 0; i < job.n && !s; i++) {
        mtensor *t = &job.t[i];
        uint64_t h = c->seed ^ fnv1a(t->name);
        t->seed = splitmix64(&h);
        const pl_tensor_plan plan = plans[i];
        if (plan.quantize) t->spec.type = plan.type;
        st.n_fallback += plan.quantize && plan.fallback;
        uint64_t el = (uint64_t)t->spec.ne[0] * (uint64_t)t->spec.ne[1] * (uint64_t)t->spec.ne[2];
        st.n_params += el;
        if (t->spec.ne[0] > max_k) max_k = t->spec.ne[0];
        specs[i] = t->spec;
    }
    free(plans);
    if (s) goto done;
    st.n_tensors = job.n;
    job.total = st.n_params;
    job.scratch = malloc(sizeof(float) * (size_t)(max_k > MK_CHUNK_ELEMS ? max_k : MK_CHUNK_ELEMS));
    if (!job.scratch) {
        s = mk_fail(err, PL_ERR_NOMEM, "no memory for the row scratch");
        goto done;
    }
    if ((s = pl_gguf_writer_new(&w, 3, err)) || (s = put_metadata(w, c, err))) goto done;
    if (progress && progress(user, 0, job.total) != 0) {
        s = mk_fail(err, PL_ERR_CANCELLED, "cancelled by the progress callback");
        goto done;
    }
    if ((s = pl_gguf_write_streamed(w, path, specs, job.n, mk_fill, &job, err))) goto done;
    struct stat sb;
    st.file_bytes = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    if (stats) *stats = st;
done:
    pl_gguf_writer_free(w);
    free(job.t);
    free(plan_t);
    free(specs);
    free(job.scratch);
    return s;
}

pl_status mk_load(const mk_config *c, pl_model **out, pl_error *err)
{
    *out = NULL;
    char path[] = "/tmp/plumb-mk-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return mk_fail(err, PL_ERR_IO, "cannot create a temporary file: %s", strerror(errno));
    close(fd);
    pl_status st = mk_write(c, path, NULL, NULL, NULL, err);
    if (!st) st = pl_model_load(out, path, NULL, err);
    remove(path);
    return st;
}

void mk_shrink(mk_config *c)
{
    c->n_embd = 64;
    c->n_layer = 1;
    c->n_head = 2;
    c->n_head_kv = 1;
    c->head_dim = 32;
    c->n_ff = 64;
}

pl_status mk_load_tiny(enum demo_vocab_kind vocab, pl_ftype ftype, int small, pl_model **out,
                       pl_error *err)
{
    mk_config c;
    *out = NULL;
    if (mk_preset("tiny", &c)) return mk_fail(err, PL_ERR_INVALID_ARG, "no tiny preset");
    if (small) mk_shrink(&c);
    c.vocab = vocab;
    c.ftype = ftype;
    c.n_threads = 1;
    c.seed = 7;
    return mk_load(&c, out, err);
}
