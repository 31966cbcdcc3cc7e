/* test_oracle.c — plumb against an implementation this project did not write: the demo model
 * (models/plumb-en-8m-hf, trained by tools/train/train.py) converted with pl_convert_hf, its
 * logits compared with PyTorch's (conformance/oracle/oracle_logits.bin: transformers'
 * LlamaForCausalLM in float32 on the same bf16 weights) and its tokenizer's ids with the
 * `tokenizers` library's (conformance/oracle/tokenizer_parity.jsonl; and, for Qwen2's NFC
 * pipeline and Llama 3's, conformance/data/hf/{qwen2,llama3}-tok). Bounds (README,
 * "The outside oracle"): F32 max |dlogit| <= 2e-4 and the same argmax at every position;
 * mean KLD against PyTorch <= 5e-4 for Q8_0 and <= 2e-2 for Q4_K_M; ids exactly equal.
 * Environment: PLUMB_ORACLE_DIR (the fixtures), PLUMB_ORACLE_HF (the checkpoint), PLUMB_TOK_HF
 * (conformance/data/hf). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plumb.h"
#include "testutil.h"

#define F32_MAX_DLOGIT 2e-4
#define Q8_0_MAX_KLD   5e-4
#define Q4KM_MAX_KLD   2e-2

static char tmpdir[] = "/tmp/plumb-oracle-XXXXXX";
static char path_f32[128], path_q8[128], path_q4[128], path_qwen2[128], path_llama3[128];

/* oracle_logits.bin: "PLOR", u32 version 1, u32 n_prompts, u32 vocab; per prompt u32 n, then
 * n int32 ids and n x vocab float32 logits (conformance/oracle/README.md). */
typedef struct prompt {
    int64_t n;
    int32_t *ids;
    float *logits;
} prompt;

static prompt prompts[16];
static uint32_t n_prompts, n_vocab;

static int read_u32(FILE *f, uint32_t *v)
{
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4) return 0;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return 1;
}

static int load_fixture(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/oracle_logits.bin", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "%s: %s\n", path, strerror(errno)), 0;
    char magic[4];
    uint32_t version;
    int ok = fread(magic, 1, 4, f) == 4 && memcmp(magic, "PLOR", 4) == 0 && read_u32(f, &version) &&
             version == 1 && read_u32(f, &n_prompts) && n_prompts >= 1 && n_prompts <= 16 &&
             read_u32(f, &n_vocab) && n_vocab >= 2 && n_vocab <= (1u << 20);
    for (uint32_t p = 0; ok && p < n_prompts; p++) {
        uint32_t n;
        ok = read_u32(f, &n) && n >= 1 && n <= 4096;
        if (!ok) break;
        prompts[p].n = n;
        prompts[p].ids = malloc(n * sizeof(int32_t));
        prompts[p].logits = malloc((size_t)n * n_vocab * sizeof(float));
        ok = prompts[p].ids && prompts[p].logits &&
             fread(prompts[p].ids, sizeof(int32_t), n, f) == n &&
             fread(prompts[p].logits, sizeof(float), (size_t)n * n_vocab, f) == (size_t)n * n_vocab;
    }
    fclose(f);
    if (!ok) fprintf(stderr, "%s: not the fixture README.md describes\n", path);
    return ok;
}

static int convert(const char *hf, const char *out, pl_ftype ftype)
{
    pl_convert_params cp = {.ftype = ftype};
    pl_error err;
    if (pl_convert_hf(hf, out, &cp, &err) == PL_OK) return 1;
    fprintf(stderr, "convert %s -> %s: %s\n", hf, out, err.msg);
    return 0;
}

static int setup(void)
{
    const char *dir = getenv("PLUMB_ORACLE_DIR"), *hf = getenv("PLUMB_ORACLE_HF");
    if (!dir || !hf || !getenv("PLUMB_TOK_HF"))
        return fprintf(stderr, "PLUMB_ORACLE_DIR / PLUMB_ORACLE_HF / PLUMB_TOK_HF not set\n"), 0;
    if (!mkdtemp(tmpdir)) return fprintf(stderr, "mkdtemp: %s\n", strerror(errno)), 0;
    snprintf(path_f32, sizeof path_f32, "%s/f32.gguf", tmpdir);
    snprintf(path_q8, sizeof path_q8, "%s/q8_0.gguf", tmpdir);
    snprintf(path_q4, sizeof path_q4, "%s/q4_k_m.gguf", tmpdir);
    snprintf(path_qwen2, sizeof path_qwen2, "%s/qwen2-tok.gguf", tmpdir);
    snprintf(path_llama3, sizeof path_llama3, "%s/llama3-tok.gguf", tmpdir);
    char qwen2[1024], llama3[1024];
    snprintf(qwen2, sizeof qwen2, "%s/qwen2-tok", getenv("PLUMB_TOK_HF"));
    snprintf(llama3, sizeof llama3, "%s/llama3-tok", getenv("PLUMB_TOK_HF"));
    pl_ftype q8, q4;
    pl_error err;
    if (pl_ftype_from_name("Q8_0", &q8, &err) || pl_ftype_from_name("Q4_K_M", &q4, &err))
        return fprintf(stderr, "ftype: %s\n", err.msg), 0;
    return load_fixture(dir) && convert(hf, path_f32, PL_FTYPE_F32) && convert(hf, path_q8, q8) &&
           convert(hf, path_q4, q4) && convert(qwen2, path_qwen2, PL_FTYPE_F32) &&
           convert(llama3, path_llama3, PL_FTYPE_F32);
}

static void teardown(void)
{
    remove(path_f32);
    remove(path_q8);
    remove(path_q4);
    remove(path_qwen2);
    remove(path_llama3);
    rmdir(tmpdir);
    for (uint32_t p = 0; p < n_prompts; p++) {
        free(prompts[p].ids);
        free(prompts[p].logits);
    }
}

/* plumb's logits for every position of every prompt, each prompt from an empty cache (f32 KV,
 * one thread), compared with PyTorch's; worst max |dlogit| and mean KLD over all rows. */
static int compare_model(const char *path, double *max_dlogit, double *mean_kld, double *top1)
{
    pl_model *m = NULL;
    pl_session *s = NULL;
    pl_error err;
    if (pl_model_load(&m, path, NULL, &err)) return fprintf(stderr, "%s: %s\n", err.msg, path), 0;
    pl_session_params sp = pl_session_default_params(m);
    sp.n_threads = 1;
    sp.kv_type = PL_TYPE_F32;
    int ok = pl_session_new(&s, m, &sp, &err) == PL_OK;
    double kld_sum = 0, agree = 0;
    int64_t rows = 0;
    *max_dlogit = 0;
    for (uint32_t p = 0; ok && p < n_prompts; p++) {
        const prompt *q = &prompts[p];
        float *got = malloc((size_t)q->n * n_vocab * sizeof(float));
        pl_session_reset(s);
        ok = got && pl_session_eval(s, q->ids, q->n, got, PL_EVAL_ALL_LOGITS, &err) == PL_OK;
        pl_logits a = {.n_vocab = n_vocab,
                       .n_tokens = q->n,
                       .n_rows = q->n,
                       .model_name = "pytorch",
                       .tokens = q->ids,
                       .logits = q->logits};
        pl_logits b = a;
        b.model_name = path;
        b.logits = got;
        pl_logits_stats st;
        if (ok) ok = pl_logits_compare(&a, &b, &st, NULL, 0, &err) == PL_OK;
        if (ok) {
            if (st.max_abs_diff > *max_dlogit) *max_dlogit = st.max_abs_diff;
            kld_sum += st.kld_mean * (double)st.n_rows;
            agree += st.top1_agree * (double)st.n_rows;
            rows += st.n_rows;
        } else {
            fprintf(stderr, "prompt %u: %s\n", p, err.msg);
        }
        free(got);
    }
    pl_session_free(s);
    pl_model_free(m);
    *mean_kld = rows ? kld_sum / (double)rows : NAN;
    *top1 = rows ? agree / (double)rows : NAN;
    return ok;
}

static void f32_logits_match_pytorch(void)
{
    double d, kld, top1;
    TU_CHECK(compare_model(path_f32, &d, &kld, &top1), "F32 conversion evaluates");
    printf("\n  F32: max |dlogit| %.3g, mean KLD %.3g, top-1 %.4f\n", d, kld, top1);
    TU_CHECK(d <= F32_MAX_DLOGIT, "F32 max |dlogit| %.3g > %.3g", d, F32_MAX_DLOGIT);
    TU_CHECK(top1 == 1.0, "F32 argmax agrees at %.4f of the positions, not all", top1);
}

static void quantized_kld_against_pytorch(void)
{
    double d, kld, top1;
    TU_CHECK(compare_model(path_q8, &d, &kld, &top1), "Q8_0 conversion evaluates");
    printf("\n  Q8_0: max |dlogit| %.3g, mean KLD %.3g, top-1 %.4f\n", d, kld, top1);
    TU_CHECK(kld <= Q8_0_MAX_KLD, "Q8_0 mean KLD %.3g > %.3g", kld, Q8_0_MAX_KLD);
    TU_CHECK(compare_model(path_q4, &d, &kld, &top1), "Q4_K_M conversion evaluates");
    printf("  Q4_K_M: max |dlogit| %.3g, mean KLD %.3g, top-1 %.4f\n", d, kld, top1);
    TU_CHECK(kld <= Q4KM_MAX_KLD, "Q4_K_M mean KLD %.3g > %.3g", kld, Q4KM_MAX_KLD);
}

/* Every line of a tokenizer_parity.jsonl: plumb's ids for "text" (control tokens parsed, as the
 * `tokenizers` library matches special tokens; no BOS) equal "ids". */
static void parity(const char *gguf, const char *dir, int min_lines)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizer_parity.jsonl", dir);
    FILE *f = fopen(path, "r");
    TU_CHECK(f != NULL, "%s: %s", path, strerror(errno));
    if (!f) return;
    pl_model *m = NULL;
    pl_error err;
    pl_model_params mp = {.flags = PL_MODEL_VOCAB_ONLY};
    TU_CHECK(pl_model_load(&m, gguf, &mp, &err) == PL_OK, "%s", err.msg);
    char *line = NULL;
    size_t cap = 0;
    int lines = 0, bad = 0;
    while (m && getline(&line, &cap, f) > 0) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        json_t *text = json_object_get(o, "text"), *ids = json_object_get(o, "ids");
        TU_CHECK(json_is_string(text) && json_is_array(ids), "%s:%d: %s", path, lines + 1, je.text);
        if (!json_is_string(text) || !json_is_array(ids)) {
            json_decref(o);
            break;
        }
        int32_t got[4096];
        size_t n = 0;
        pl_status s = pl_tokenize(m, json_string_value(text), json_string_length(text),
                                  PL_TOKENIZE_PARSE_SPECIAL, got, 4096, &n, &err);
        int same = s == PL_OK && n == json_array_size(ids);
        for (size_t i = 0; same && i < n; i++)
            same = got[i] == (int32_t)json_integer_value(json_array_get(ids, i));
        if (!same && bad++ < 5) {
            fprintf(stderr, "line %d (%s): %s\n  want", lines + 1,
                    json_string_value(json_object_get(o, "kind")), json_string_value(text));
            for (size_t i = 0; i < json_array_size(ids); i++)
                fprintf(stderr, " %lld", (long long)json_integer_value(json_array_get(ids, i)));
            fprintf(stderr, "\n  got ");
            for (size_t i = 0; i < n && i < 4096; i++) fprintf(stderr, " %d", got[i]);
            fprintf(stderr, "\n");
        }
        lines++;
        json_decref(o);
    }
    free(line);
    fclose(f);
    pl_model_free(m);
    printf("\n  tokenizer parity (%s): %d lines, %d differ\n", path, lines, bad);
    TU_CHECK(lines >= min_lines, "only %d lines in %s", lines, path);
    TU_CHECK(bad == 0, "%d of %d lines tokenize differently from the tokenizers library", bad,
             lines);
}

static void tokenizer_matches_tokenizers_library(void)
{
    parity(path_f32, getenv("PLUMB_ORACLE_DIR"), 350);
}

/* Qwen2's pipeline (NFC, then its Split regex, then ByteLevel) and Llama 3's (its regex,
 * ignore_merges) as `tokenizers` runs them, on small vocabularies trained with exactly those
 * tokenizer.json settings (conformance/data/hf/make_tok_fixtures.py). */
static void qwen2_nfc_pipeline_matches_tokenizers_library(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/qwen2-tok", getenv("PLUMB_TOK_HF"));
    parity(path_qwen2, dir, 300);
}

static void llama3_pipeline_matches_tokenizers_library(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/llama3-tok", getenv("PLUMB_TOK_HF"));
    parity(path_llama3, dir, 300);
}

int main(void)
{
    if (!setup()) {
        teardown();
        return 1;
    }
    static const tu_test tests[] = {
        {"f32_logits_match_pytorch", f32_logits_match_pytorch},
        {"quantized_kld_against_pytorch", quantized_kld_against_pytorch},
        {"tokenizer_matches_tokenizers_library", tokenizer_matches_tokenizers_library},
        {"qwen2_nfc_pipeline_matches_tokenizers_library",
         qwen2_nfc_pipeline_matches_tokenizers_library},
        {"llama3_pipeline_matches_tokenizers_library", llama3_pipeline_matches_tokenizers_library},
        {NULL, NULL},
    };
    int rc = tu_run("oracle", tests);
    teardown();
    return rc;
}
