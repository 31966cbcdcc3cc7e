/* test_arch.c — no file runs silently wrong: a tensor without a role, a key plumb does not read,
 * a value it does not compute are refused by name; keys that change nothing change nothing.
 * Not the arithmetic of the architectures (test_e2e, test_oracle). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/arch.h"
#include "testutil.h"
#include "tinymodel.h"

/* One edit of a tiny file: a key (string, u32, f32 or bool) or a 1-D F32 tensor. */
typedef struct edit {
    const char *key;
    enum { E_STR, E_U32, E_F32, E_BOOL, E_TENSOR, E_ARRAY } kind;
    const char *s;
    double v;
} edit;

static const float tensor_data[4096];

static void apply(pl_gguf_writer *w, const tiny_spec *s)
{
    pl_error e;
    for (const edit *x = s->edit_user; x && x->key; x++) {
        pl_status st = PL_OK;
        switch (x->kind) {
        case E_STR:
            st = pl_gguf_writer_set_string(w, x->key, x->s, strlen(x->s), &e);
            break;
        case E_U32:
            st = pl_gguf_writer_set_u32(w, x->key, (uint32_t)x->v, &e);
            break;
        case E_F32:
            st = pl_gguf_writer_set_f32(w, x->key, (float)x->v, &e);
            break;
        case E_BOOL: {
            const uint8_t b = x->v != 0;
            st = pl_gguf_writer_set(w, x->key, PL_GGUF_BOOL, &b, &e);
            break;
        }
        case E_ARRAY: {
            static const char *const tags[] = {"text-generation", "plumb"};
            st = pl_gguf_writer_set_array_str(w, x->key, tags, NULL, 2, &e);
            break;
        }
        case E_TENSOR: {
            const int64_t ne[1] = {(int64_t)x->v};
            st = pl_gguf_writer_add_tensor(w, x->key, PL_TYPE_F32, 1, ne, tensor_data, &e);
            break;
        }
        }
        if (st) fprintf(stderr, "  edit %s: %s\n", x->key, e.msg);
    }
}

/* Loads a tiny file of arch with the edits; returns the status, err filled. With out, the
 * model (NULL unless loaded) and the buffer it reads in place go to the caller to free. */
static pl_status load_edited(const char *arch, const edit *edits, pl_model **out, void **buf_out,
                             pl_error *err)
{
    tiny_spec s = tiny_default(arch, PL_TYPE_F32);
    s.L = 1;
    s.edit = apply;
    s.edit_user = edits;
    void *buf = NULL;
    size_t size = 0;
    if (tiny_build(&s, &buf, &size)) {
        snprintf(err->msg, sizeof err->msg, "tiny_build failed");
        return err->code = PL_ERR_INVALID_ARG;
    }
    pl_model *m = NULL;
    pl_status st = pl_model_load_memory(&m, buf, size, NULL, err);
    if (out) {
        *out = m;
        *buf_out = buf;
    } else {
        pl_model_free(m);
        pl_buffer_free(buf);
    }
    return st;
}

static void expect_refused(const char *arch, const edit *edits, const char *want1,
                           const char *want2)
{
    pl_error err = {0};
    pl_status st = load_edited(arch, edits, NULL, NULL, &err);
    TU_CHECK(st == PL_ERR_UNSUPPORTED, "%s + %s: expected PL_ERR_UNSUPPORTED, got %s (%s)", arch,
             edits[0].key, pl_status_str(st), err.msg);
    TU_CHECK(strstr(err.msg, want1) != NULL, "%s + %s: message '%s' lacks '%s'", arch, edits[0].key,
             err.msg, want1);
    if (want2)
        TU_CHECK(strstr(err.msg, want2) != NULL, "%s + %s: message '%s' lacks '%s'", arch,
                 edits[0].key, err.msg, want2);
}

static void arch_refuses_a_tensor_without_a_role(void)
{
    /* a Gemma-style post-norm in a llama file: llama.cpp would ignore nothing here either */
    const edit post[] = {{"blk.0.attn_post_norm.weight", E_TENSOR, NULL, 256}, {0}};
    expect_refused("llama", post,
                   "tensor 'blk.0.attn_post_norm.weight' has no role in architecture 'llama'",
                   NULL);
    const edit freqs[] = {{"rope_freqs.weight", E_TENSOR, NULL, 32}, {0}};
    expect_refused("qwen3", freqs, "tensor 'rope_freqs.weight' has no role in architecture 'qwen3'",
                   NULL);
    const edit stray[] = {{"blk.7.attn_q.weight", E_TENSOR, NULL, 256}, {0}};
    expect_refused("qwen2", stray, "tensor 'blk.7.attn_q.weight' has no role", NULL);
    /* Phi-3 fuses q, k and v: a separate q beside attn_qkv would be computed by nothing */
    const edit sep[] = {{"blk.0.attn_q.weight", E_TENSOR, NULL, 256}, {0}};
    expect_refused("phi3", sep, "tensor 'blk.0.attn_q.weight' has no role in architecture 'phi3'",
                   NULL);
}

/* A small phi3 file: L layers, context ctx, the window key only when window > 0, edits. */
static pl_status load_phi3(int64_t L, int64_t ctx, int64_t window, const edit *edits, pl_model **m,
                           void **buf, pl_error *err)
{
    tiny_spec s = tiny_default("phi3", PL_TYPE_F32);
    s.E = 64;
    s.H = s.Hkv = 2;
    s.D = 32;
    s.n_rot = 16;
    s.F = 64;
    s.L = L;
    s.ctx = ctx;
    s.window = window;
    s.edit = apply;
    s.edit_user = edits;
    size_t size = 0;
    *m = NULL;
    if (tiny_build(&s, buf, &size)) {
        snprintf(err->msg, sizeof err->msg, "tiny_build failed");
        return err->code = PL_ERR_INVALID_ARG;
    }
    return pl_model_load_memory(m, *buf, size, NULL, err);
}

/* Logits of the same n random ids at every position of a fresh session (context ctx). */
static float *phi3_logits(const pl_model *m, int64_t n, int64_t ctx)
{
    pl_session_params p = pl_session_default_params(m);
    p.context_window = ctx;
    p.prefill_chunk = 256;
    pl_session *s = NULL;
    pl_error err = {0};
    float *y = malloc((size_t)n * 320 * sizeof *y);
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    tu_rng r;
    tu_rng_init(&r, 7);
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(tu_rng_u64(&r) % 320);
    if (pl_session_new(&s, m, &p, &err) ||
        pl_session_eval(s, ids, n, y, PL_EVAL_ALL_LOGITS, &err)) {
        TU_CHECK(0, "phi3 eval: %s", err.msg);
        free(y);
        y = NULL;
    }
    pl_session_free(s);
    free(ids);
    return y;
}

/* Phi-3's window: 0 is none; absent, llama.cpp's default for the releases that lacked the key
 * (2047 for 32 layers and a 4096 context), else refused by name. Longrope needs both sets. */
static void arch_phi3_window_and_factor_rules(void)
{
    pl_model *m = NULL, *m0 = NULL, *m2047 = NULL;
    void *buf = NULL, *buf0 = NULL, *buf2047 = NULL;
    pl_error err = {0};
    const edit none[] = {{0}};
    pl_status st = load_phi3(1, 512, 0, none, &m, &buf, &err);
    TU_CHECK(st == PL_ERR_NOT_FOUND && strstr(err.msg, "'phi3.attention.sliding_window'") &&
                 strstr(err.msg, "is missing"),
             "phi3 of 1 layer without a window: %s (%s)", pl_status_str(st), err.msg);
    pl_model_free(m);
    pl_buffer_free(buf);

    const edit half[] = {{"rope_factors_long.weight", E_TENSOR, NULL, 8}, {0}};
    st = load_phi3(1, 512, 8, half, &m, &buf, &err);
    TU_CHECK(st == PL_ERR_FORMAT && strstr(err.msg, "'rope_factors_short.weight' is missing"),
             "longrope with one set: %s (%s)", pl_status_str(st), err.msg);
    pl_model_free(m);
    pl_buffer_free(buf);

    /* Phi-3-mini-4k's shape without the key: its 2047, bit for bit as the key written, and
     * unlike no window once the sequence is longer than it */
    const edit zero[] = {{"phi3.attention.sliding_window", E_U32, NULL, 0}, {0}};
    st = load_phi3(32, 4096, 0, none, &m, &buf, &err);
    TU_CHECK(st == PL_OK, "phi3-mini-4k's shape without a window: %s (%s)", pl_status_str(st),
             err.msg);
    st = load_phi3(32, 4096, 2047, none, &m2047, &buf2047, &err);
    TU_CHECK(st == PL_OK, "window 2047: %s (%s)", pl_status_str(st), err.msg);
    st = load_phi3(32, 4096, 0, zero, &m0, &buf0, &err);
    TU_CHECK(st == PL_OK, "window 0: %s (%s)", pl_status_str(st), err.msg);
    if (m && m0 && m2047) {
        const int64_t n = 2056;
        float *y = phi3_logits(m, n, 4096), *y0 = phi3_logits(m0, n, 4096),
              *y2047 = phi3_logits(m2047, n, 4096);
        const size_t row = 320 * sizeof(float);
        if (y && y0 && y2047) {
            TU_CHECK(memcmp(y, y2047, (size_t)n * row) == 0,
                     "the default window differs from an explicit 2047");
            TU_CHECK(memcmp(y, y0, 2047 * row) == 0,
                     "within the window, windowed logits differ from unwindowed ones");
            TU_CHECK(memcmp(y + 2047 * 320, y0 + 2047 * 320, (size_t)(n - 2047) * row) != 0,
                     "beyond 2047 tokens the window changed nothing");
        }
        free(y);
        free(y0);
        free(y2047);
    }
    pl_model_free(m);
    pl_model_free(m0);
    pl_model_free(m2047);
    pl_buffer_free(buf);
    pl_buffer_free(buf0);
    pl_buffer_free(buf2047);
}

static void arch_refuses_an_unknown_rope_scaling_type(void)
{
    const edit e[] = {{"llama.rope.scaling.type", E_STR, "bogus-scaling", 0}, {0}};
    expect_refused("llama", e, "llama.rope.scaling.type = 'bogus-scaling'", NULL);
}

static void arch_refuses_an_unknown_key_that_changes_the_math(void)
{
    const edit cap[] = {{"llama.attn_logit_softcapping", E_F32, NULL, 50.0}, {0}};
    expect_refused("llama", cap, "metadata key 'llama.attn_logit_softcapping' = 50",
                   "it may change what is computed");
    /* another architecture's key, and an unknown tokenizer key */
    const edit other[] = {{"qwen2.rope.freq_base", E_F32, NULL, 1e6}, {0}};
    expect_refused("llama", other, "metadata key 'qwen2.rope.freq_base'", NULL);
    const edit tok[] = {{"tokenizer.ggml.bogus_normalization", E_BOOL, NULL, 1}, {0}};
    expect_refused("qwen3", tok, "metadata key 'tokenizer.ggml.bogus_normalization' = true", NULL);
    const edit other_prefix[] = {{"mystery.scale", E_F32, NULL, 2.0}, {0}};
    expect_refused("qwen2", other_prefix, "metadata key 'mystery.scale' = 2", NULL);
}

static void arch_refuses_values_it_does_not_compute(void)
{
    /* experts where the architecture has none; counts that do not fit; a file whose layers
     * are dense while its keys say experts (the router is missing) */
    const edit experts[] = {{"qwen2.expert_count", E_U32, NULL, 8}, {0}};
    expect_refused("qwen2", experts, "qwen2.expert_count = 8", "no mixture-of-experts");
    static const struct {
        const char *arch;
        edit e[3];
        pl_status want;
        const char *msg;
    } bad[] = {
        {"llama",
         {{"llama.expert_count", E_U32, NULL, 8}, {0}},
         PL_ERR_FORMAT,
         "llama.expert_used_count = 0 is outside [1, 8]"},
        {"llama",
         {{"llama.expert_count", E_U32, NULL, 4}, {"llama.expert_used_count", E_U32, NULL, 5}},
         PL_ERR_FORMAT,
         "llama.expert_used_count = 5 is outside [1, 4]"},
        {"llama",
         {{"llama.expert_used_count", E_U32, NULL, 2}, {0}},
         PL_ERR_FORMAT,
         "expert_used_count = 2 in a model without experts"},
        {"llama",
         {{"llama.expert_count", E_U32, NULL, 4}, {"llama.expert_used_count", E_U32, NULL, 2}},
         PL_ERR_NOT_FOUND,
         "tensor 'blk.0.ffn_gate_inp.weight' [256, 4] is missing"},
        {"llama",
         {{"llama.expert_used_count", E_U32, NULL, 65}, {0}},
         PL_ERR_FORMAT,
         "llama.expert_used_count = 65 is outside [0, 64]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pl_error err = {0};
        const pl_status st = load_edited(bad[i].arch, bad[i].e, NULL, NULL, &err);
        TU_CHECK(st == bad[i].want && strstr(err.msg, bad[i].msg),
                 "%s + %s: want %s '%s', got %s '%s'", bad[i].arch, bad[i].e[0].key,
                 pl_status_str(bad[i].want), bad[i].msg, pl_status_str(st), err.msg);
    }
    const edit causal[] = {{"qwen2.attention.causal", E_BOOL, NULL, 0}, {0}};
    expect_refused("qwen2", causal, "qwen2.attention.causal = false", NULL);
    const edit split[] = {{"split.count", E_U32, NULL, 3}, {0}};
    expect_refused("llama", split, "split.count = 3", "merge the parts");
    /* issue 49: how YaRN rounds its range, in a file without YaRN */
    const edit untrunc[] = {{"qwen2.rope.scaling.yarn_truncate", E_BOOL, NULL, 0}, {0}};
    expect_refused("qwen2", untrunc, "qwen2.rope.scaling.yarn_truncate = false", "YaRN");
}

/* Each key listed as changing nothing, at once: the file loads and its logits are bit for bit
 * those of the same file without them. */
static void arch_keys_that_change_nothing_change_nothing(void)
{
    const edit inert[] = {
        {"general.author", E_STR, "plumb", 0},
        {"general.tags", E_ARRAY, NULL, 0},
        {"general.quantized_by", E_STR, "nobody", 0},
        {"tokenizer.ggml.fim_pre_token_id", E_U32, NULL, 3},
        {"tokenizer.chat_template.tool_use", E_STR, "{{ messages }}", 0},
        {"quantize.imatrix.file", E_STR, "imatrix.dat", 0},
        {"split.count", E_U32, NULL, 1},
        {"llama.rope.scaling.finetuned", E_BOOL, NULL, 0},
        {"llama.tensor_data_layout", E_STR, "Meta AI original pth", 0},
        {"llama.rope.scaling.type", E_STR, "none", 0},
        {"llama.expert_count", E_U32, NULL, 0},
        {"llama.attention.causal", E_BOOL, NULL, 1},
        {0},
    };
    const edit none[] = {{0}};
    pl_model *a = NULL, *b = NULL;
    void *abuf = NULL, *bbuf = NULL;
    pl_error err = {0};
    pl_status st = load_edited("llama", inert, &a, &abuf, &err);
    TU_CHECK(st == PL_OK, "llama + inert keys: %s (%s)", pl_status_str(st), err.msg);
    st = load_edited("llama", none, &b, &bbuf, &err);
    TU_CHECK(st == PL_OK, "llama: %s (%s)", pl_status_str(st), err.msg);
    if (!a || !b) goto done;
    const int32_t ids[] = {1, 5, 9, 300, 2, 77};
    const int64_t n = sizeof ids / sizeof ids[0];
    pl_model_info info;
    pl_model_get_info(a, &info, NULL);
    float *la = malloc((size_t)info.n_vocab * sizeof *la), *lb = malloc((size_t)info.n_vocab * 4);
    pl_session *sa = NULL, *sb = NULL;
    TU_CHECK(pl_session_new(&sa, a, NULL, &err) == PL_OK, "session: %s", err.msg);
    TU_CHECK(pl_session_new(&sb, b, NULL, &err) == PL_OK, "session: %s", err.msg);
    if (sa && sb) {
        TU_CHECK(pl_session_eval(sa, ids, n, la, 0, &err) == PL_OK, "eval: %s", err.msg);
        TU_CHECK(pl_session_eval(sb, ids, n, lb, 0, &err) == PL_OK, "eval: %s", err.msg);
        TU_CHECK(memcmp(la, lb, (size_t)info.n_vocab * sizeof *la) == 0,
                 "the inert keys changed the logits");
    }
    pl_session_free(sa);
    pl_session_free(sb);
    free(la);
    free(lb);
done:
    pl_model_free(a);
    pl_model_free(b);
    pl_buffer_free(abuf);
    pl_buffer_free(bbuf);
}

/* The lists the help texts and messages show are the table's, whole and in its order. */
static void arch_lists_are_the_tables_names(void)
{
    char want[1024] = "", want_hf[2048] = "";
    size_t n = 0, h = 0;
    for (size_t i = 0; pl_arch_at(i); i++) {
        const pl_arch *a = pl_arch_at(i);
        n += (size_t)snprintf(want + n, sizeof want - n, "%s%s", i ? ", " : "", a->name);
        h += (size_t)snprintf(want_hf + h, sizeof want_hf - h, "%s%s", i ? ", " : "", a->hf_class);
        if (a->hf_moe_class)
            h += (size_t)snprintf(want_hf + h, sizeof want_hf - h, ", %s", a->hf_moe_class);
    }
    TU_CHECK(strcmp(pl_arch_list(), want) == 0, "pl_arch_list() is '%s', the table '%s'",
             pl_arch_list(), want);
    TU_CHECK(strcmp(pl_arch_hf_list(), want_hf) == 0, "pl_arch_hf_list() is '%s', the table '%s'",
             pl_arch_hf_list(), want_hf);
}

/* The one key writer refuses what the loader would refuse, naming it. */
static void arch_write_keys_refuses_what_the_loader_would(void)
{
    const pl_arch_shape shape = {
        .n_embd = 64, .n_layer = 1, .n_head = 2, .n_head_kv = 1, .n_ff = 64, .n_vocab = 320};
    static const struct {
        const char *arch;
        pl_arch_hparams hp;
        pl_status want;
        const char *named;
    } cases[] = {
        {"llama",
         {.rms_eps = 1e-6f, .attn_softcap = 5},
         PL_ERR_UNSUPPORTED,
         "attn_logit_softcapping"},
        {"qwen2", {.rms_eps = 1e-6f, .window = 8}, PL_ERR_UNSUPPORTED, "sliding_window"},
        {"llama",
         {.rms_eps = 1e-6f, .n_ctx = (int64_t)INT32_MAX + 1},
         PL_ERR_INVALID_ARG,
         "context_length"},
        {"llama", {.rms_eps = 0}, PL_ERR_INVALID_ARG, "rms_eps"},
        {"gpt-j", {.rms_eps = 1e-6f}, PL_ERR_UNSUPPORTED, "gpt-j"},
        /* issue 49 (archA): Granite's multipliers only where the table has them, in range */
        {"qwen2", {.rms_eps = 1e-6f, .residual_scale = 0.5f}, PL_ERR_UNSUPPORTED, "residual_scale"},
        {"granite", {.rms_eps = 1e-6f, .logit_divisor = 2e6f}, PL_ERR_INVALID_ARG, "logit_scale"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pl_gguf_writer *w = NULL;
        pl_error e = {0};
        TU_CHECK(pl_gguf_writer_new(&w, 3, &e) == PL_OK, "writer: %s", e.msg);
        pl_status st = pl_arch_write_keys(w, cases[i].arch, &shape, &cases[i].hp, &e);
        TU_CHECK(st == cases[i].want && strstr(e.msg, cases[i].named),
                 "case %zu (%s): status %d '%s', want %d naming '%s'", i, cases[i].arch, st, e.msg,
                 cases[i].want, cases[i].named);
        pl_gguf_writer_free(w);
    }
}

/* Every architecture's rows say where convert gets the value (a field read as it is names
 * it), and every size rule names its source. */
static void arch_rows_name_their_sources(void)
{
    for (size_t i = 0; pl_arch_at(i); i++) {
        const pl_arch *a = pl_arch_at(i);
        size_t n;
        const pl_arch_key *common = pl_arch_keys(&n);
        for (size_t pass = 0; pass < 2; pass++) {
            const pl_arch_key *k = pass ? a->keys : common;
            for (size_t j = 0; j < (pass ? a->n_keys : n); j++)
                TU_CHECK(k[j].hf_how == PL_HF_NONE ? k[j].hf == NULL : k[j].hf && k[j].hf[0],
                         "%s: key '%s' (hf_how %d) and its config.json field disagree", a->name,
                         k[j].suffix, k[j].hf_how);
        }
        for (size_t j = 0; j < a->n_quirks; j++)
            TU_CHECK(a->quirks[j].source && strstr(a->quirks[j].source, "llama.cpp"),
                     "%s: quirk %zu names no source", a->name, j);
    }
}

/* What each architecture's layers compile to, from the tensors they must bind (arch.h): the list
 * forward.c and the reference transformer both run. Layer 0 of every architecture, and the
 * layers that differ from it (cohere2's global layer 3: no RoPE). A LayerNorm step reads
 * "norm:layer". */
static void arch_layers_compile_to_their_steps(void)
{
    static const struct {
        const char *arch;
        int64_t layer;
        const char *steps;
    } want[] = {
        {"llama", 0, "norm qkv rope kv_store attention attn_out residual norm ffn_gated residual"},
        {"qwen2", 0,
         "norm qkv qkv_bias rope kv_store attention attn_out residual norm ffn_gated residual"},
        {"qwen3", 0,
         "norm qkv head_norm rope kv_store attention attn_out residual norm ffn_gated residual"},
        {"qwen2moe", 0,
         "norm qkv qkv_bias rope kv_store attention attn_out residual norm ffn_moe residual"},
        {"qwen3moe", 0,
         "norm qkv head_norm rope kv_store attention attn_out residual norm ffn_moe residual"},
        {"gemma2", 0,
         "norm qkv rope kv_store attention attn_out residual+attn_post_norm norm "
         "ffn_gated residual+ffn_post_norm"},
        {"gemma3", 0,
         "norm qkv head_norm rope kv_store attention attn_out residual+attn_post_norm "
         "norm ffn_gated residual+ffn_post_norm"},
        {"phi3", 0, "norm qkv rope kv_store attention attn_out residual norm ffn_gated residual"},
        /* issue 49 (archA) */
        {"granite", 0,
         "norm qkv rope kv_store attention attn_out residual norm ffn_gated residual"},
        {"smollm3", 0,
         "norm qkv rope kv_store attention attn_out residual norm ffn_gated residual"},
        {"smollm3", 3, "norm qkv kv_store attention attn_out residual norm ffn_gated residual"},
        {"olmo2", 0,
         "norm qkv qk_norm rope kv_store attention attn_out residual+attn_post_norm norm "
         "ffn_gated residual+ffn_post_norm"},
        {"exaone4", 0,
         "norm qkv head_norm rope kv_store attention attn_out residual+attn_post_norm "
         "norm ffn_gated residual+ffn_post_norm"},
        {"exaone4", 3,
         "norm qkv head_norm kv_store attention attn_out residual+attn_post_norm "
         "norm ffn_gated residual+ffn_post_norm"},
        {"glm4", 0,
         "norm qkv qkv_bias rope kv_store attention attn_out residual+attn_post_norm norm "
         "ffn_gated residual+ffn_post_norm"},
        /* issue 49: cohere2's parallel block (one LayerNorm), RoPE on the local layers only */
        {"cohere2", 0,
         "norm:layer qkv rope kv_store attention attn_out residual ffn_gated residual"},
        {"cohere2", 3, "norm:layer qkv kv_store attention attn_out residual ffn_gated residual"},
        /* issue 49: gpt-oss (its sinks, o bias, router and expert biases are read by the
         * attention, attn_out and ffn_moe steps where bound) */
        {"gpt-oss", 0,
         "norm qkv qkv_bias rope kv_store attention attn_out residual norm ffn_moe residual"},
    };
    const size_t n_want = sizeof want / sizeof want[0];
    size_t n_archs = 0, n_first = 0;
    for (size_t i = 0; pl_arch_at(i); i++) n_archs++;
    for (size_t r = 0; r < n_want; r++) {
        const pl_arch *a = pl_arch_find(want[r].arch, strlen(want[r].arch));
        TU_CHECK(a != NULL, "no architecture '%s'", want[r].arch);
        if (!a) continue;
        n_first += want[r].layer == 0;
        uint8_t has[PL_L_COUNT] = {0};
        const int64_t X = a->recipe.moe == PL_MOE_REQUIRED ? 8 : 0;
        for (size_t j = 0; j < a->n_layer; j++) {
            int required;
            if (pl_arch_row_applies(&a->layer[j], X, &required) && required)
                has[a->layer[j].role] = 1;
            if (a->layer[j].split == PL_SPLIT_QKV) has[PL_L_WK] = has[PL_L_WV] = 1;
            if (a->layer[j].split == PL_SPLIT_GATE_UP) has[PL_L_UP] = 1;
        }
        pl_step st[PL_MAX_STEPS];
        const size_t n =
            pl_arch_compile_layer(a, has, pl_arch_layer_has_rope(a, want[r].layer, 1), st);
        char got[512] = "";
        size_t k = 0;
        for (size_t j = 0; j < n; j++) {
            k += (size_t)snprintf(got + k, sizeof got - k, "%s%s", j ? " " : "",
                                  pl_step_name(st[j].kind));
            if (st[j].kind == PL_STEP_NORM && st[j].arg == PL_NORM_LAYER)
                k += (size_t)snprintf(got + k, sizeof got - k, ":layer");
            if (st[j].kind == PL_STEP_RESIDUAL && st[j].role != PL_STEP_NO_ROLE)
                k += (size_t)snprintf(got + k, sizeof got - k, "+%s",
                                      st[j].role == PL_L_ATTN_POST_NORM ? "attn_post_norm"
                                                                        : "ffn_post_norm");
        }
        TU_CHECK(strcmp(got, want[r].steps) == 0, "%s layer %lld compiles to '%s', want '%s'",
                 a->name, (long long)want[r].layer, got, want[r].steps);
    }
    TU_CHECK(n_archs == n_first, "the table has %zu architectures, this test %zu layer-0 rows",
             n_archs, n_first);
}

/* ---- issue 49 (archA) ---- */

/* EXAONE 4's sliding_window_pattern, as llama.cpp's loader reads it (a period) or its converter
 * writes it (one bool per layer), loads only as the recipe's 3 local : 1 global. */
static void pattern_edit(pl_gguf_writer *w, const tiny_spec *s)
{
    const int *v = s->edit_user;
    const char *key = "exaone4.attention.sliding_window_pattern";
    pl_error e;
    if (v[0] == 0) {
        pl_gguf_writer_set_u32(w, key, (uint32_t)v[1], &e);
        return;
    }
    uint8_t b[4];
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)v[1 + i];
    pl_gguf_writer_set_array(w, key, PL_GGUF_BOOL, b, 4, &e);
}

/* Granite's four multipliers are keys llama.cpp requires: a file without one is refused by
 * name, one with all four loads. */
static void arch_granite_requires_its_multipliers(void)
{
    for (int gone = -1; gone < 4; gone++) {
        tiny_spec s = tiny_default("granite", PL_TYPE_F32);
        TU_CHECK(s.mult[0] > 0 && s.mult[3] > 0, "granite's tiny model has its multipliers");
        if (gone >= 0) s.mult[gone] = 0.0f;
        void *buf = NULL;
        size_t size = 0;
        pl_error e = {0};
        pl_model *m = NULL;
        TU_CHECK(tiny_build(&s, &buf, &size) == 0, "tiny_build without multiplier %d", gone);
        const pl_status st = pl_model_load_memory(&m, buf, size, NULL, &e);
        static const char *const names[] = {"embedding_scale", "residual_scale", "attention.scale",
                                            "logit_scale"};
        TU_CHECK(gone < 0 ? st == PL_OK
                          : st == PL_ERR_NOT_FOUND && strstr(e.msg, names[gone]) != NULL,
                 "without multiplier %d: %s '%s'", gone, pl_status_str(st), e.msg);
        pl_model_free(m);
        pl_buffer_free(buf);
    }
}

static void arch_exaone4_pattern_key_is_the_recipes(void)
{
    static const struct {
        int v[5]; /* 0, period | 1, one bool per layer */
        pl_status want;
    } cases[] = {
        {{0, 4}, PL_OK},
        {{0, 2}, PL_ERR_UNSUPPORTED},
        {{1, 1, 1, 1, 0}, PL_OK},
        {{1, 1, 0, 1, 0}, PL_ERR_UNSUPPORTED},
        {{1, 1, 1, 1, 1}, PL_ERR_UNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tiny_spec s = tiny_default("exaone4", PL_TYPE_F32);
        TU_CHECK(s.L == 4 && s.window > 0, "exaone4's tiny model: 4 layers with a window");
        s.edit = pattern_edit;
        s.edit_user = cases[i].v;
        void *buf = NULL;
        size_t size = 0;
        pl_error e = {0};
        pl_model *m = NULL;
        TU_CHECK(tiny_build(&s, &buf, &size) == 0, "case %zu: tiny_build", i);
        const pl_status st = pl_model_load_memory(&m, buf, size, NULL, &e);
        TU_CHECK(st == cases[i].want && (st == PL_OK || strstr(e.msg, "sliding_window_pattern")),
                 "case %zu: %s '%s', want %s naming the key", i, pl_status_str(st), e.msg,
                 pl_status_str(cases[i].want));
        pl_model_free(m);
        pl_buffer_free(buf);
    }
}

int main(void)
{
    static const tu_test tests[] = {
        {"arch_lists_are_the_tables_names", arch_lists_are_the_tables_names},
        {"arch_write_keys_refuses_what_the_loader_would",
         arch_write_keys_refuses_what_the_loader_would},
        {"arch_rows_name_their_sources", arch_rows_name_their_sources},
        {"arch_layers_compile_to_their_steps", arch_layers_compile_to_their_steps},
        {"arch_refuses_a_tensor_without_a_role", arch_refuses_a_tensor_without_a_role},
        {"arch_refuses_an_unknown_rope_scaling_type", arch_refuses_an_unknown_rope_scaling_type},
        {"arch_phi3_window_and_factor_rules", arch_phi3_window_and_factor_rules},
        {"arch_exaone4_pattern_key_is_the_recipes", arch_exaone4_pattern_key_is_the_recipes},
        {"arch_granite_requires_its_multipliers", arch_granite_requires_its_multipliers},
        {"arch_refuses_an_unknown_key_that_changes_the_math",
         arch_refuses_an_unknown_key_that_changes_the_math},
        {"arch_refuses_values_it_does_not_compute", arch_refuses_values_it_does_not_compute},
        {"arch_keys_that_change_nothing_change_nothing",
         arch_keys_that_change_nothing_change_nothing},
        {NULL, NULL},
    };
    return tu_run("arch", tests);
}
