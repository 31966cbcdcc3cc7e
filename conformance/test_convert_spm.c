/* test_convert_spm.c — plumb convert of SentencePiece-style tokenizer.json (byte_fallback BPE over
 * ▁ pieces) and --vocab-only: the keys, scores and types written, the ids plumb then computes,
 * what is refused, allocation failure. Real vocabularies against HF: conformance/tokparity/. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plumb.h"
#include "testutil.h"

static char root[64];

#define SP "\xe2\x96\x81" /* ▁ */

/* A tiny Llama-2-style tokenizer.json: <unk> <s> </s>, the 256 byte tokens, then
 * ▁ a b ▁a ab ▁ab; merges "▁ a" (0), "a b" (1), "▁a b" (2), "▁ ab" (3). */
static json_t *spm_json(void)
{
    json_t *vocab = json_object();
    json_object_set_new(vocab, "<unk>", json_integer(0));
    json_object_set_new(vocab, "<s>", json_integer(1));
    json_object_set_new(vocab, "</s>", json_integer(2));
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        json_object_set_new(vocab, name, json_integer(3 + b));
    }
    static const char *const pieces[] = {SP, "a", "b", SP "a", "ab", SP "ab"};
    for (int i = 0; i < 6; i++) json_object_set_new(vocab, pieces[i], json_integer(259 + i));
    json_t *added = json_array();
    for (int i = 0; i < 3; i++) {
        static const char *const sp[] = {"<unk>", "<s>", "</s>"};
        json_array_append_new(added, json_pack("{s:i,s:s,s:b,s:b,s:b,s:b,s:b}", "id", i, "content",
                                               sp[i], "special", 1, "normalized", 0, "single_word",
                                               0, "lstrip", 0, "rstrip", 0));
    }
    json_t *repl =
        json_pack("{s:s,s:{s:s},s:s}", "type", "Replace", "pattern", "String", " ", "content", SP);
    json_t *norm = json_pack("{s:s,s:[{s:s,s:s},o]}", "type", "Sequence", "normalizers", "type",
                             "Prepend", "prepend", SP, repl);
    json_t *dec = json_pack("{s:s,s:[{s:s,s:{s:s},s:s},{s:s},{s:s},{s:s,s:s,s:i,s:i}]}", "type",
                            "Sequence", "decoders", "type", "Replace", "pattern", "String", SP,
                            "content", " ", "type", "ByteFallback", "type", "Fuse", "type", "Strip",
                            "content", " ", "start", 1, "stop", 0);
    json_t *merges = json_pack("[s,s,s,s]", SP " a", "a b", SP "a b", SP " ab");
    return json_pack("{s:s,s:o,s:o,s:n,s:o,s:{s:s,s:n,s:s,s:b,s:b,s:o,s:o}}", "version", "1.0",
                     "added_tokens", added, "normalizer", norm, "pre_tokenizer", "decoder", dec,
                     "model", "type", "BPE", "dropout", "unk_token", "<unk>", "fuse_unk", 1,
                     "byte_fallback", 1, "vocab", vocab, "merges", merges);
}

static void write_json(const char *dir, const char *name, json_t *j)
{
    char path[512];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    TU_CHECK(json_dump_file(j, path, 0) == 0, "cannot write %s", path);
    json_decref(j);
}

static pl_status convert_vocab(const char *dir, const char *out, pl_convert_stats *st,
                               pl_error *err)
{
    pl_convert_params p = {.ftype = PL_FTYPE_F32, .stats = st, .vocab_only = 1};
    return pl_convert_hf(dir, out, &p, err);
}

/* A directory holding spm_json() with key (a path "a.b") replaced by value; value NULL: as is. */
static void write_spm(const char *dir, const char *obj, const char *key, json_t *value)
{
    json_t *j = spm_json();
    if (value) json_object_set_new(obj ? json_object_get(j, obj) : j, key, value);
    write_json(dir, "tokenizer.json", j);
    write_json(dir, "tokenizer_config.json",
               json_pack("{s:b,s:b,s:s,s:s,s:s}", "add_bos_token", 1, "add_eos_token", 0,
                         "bos_token", "<s>", "eos_token", "</s>", "unk_token", "<unk>"));
}

static void spm_vocab_only_writes_llama_vocab_with_merge_rank_scores(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/spm", root);
    snprintf(out, sizeof out, "%s/spm.gguf", root);
    write_spm(dir, NULL, NULL, NULL);
    pl_error err = {0};
    pl_convert_stats st;
    pl_status s = convert_vocab(dir, out, &st, &err);
    TU_CHECK(s == PL_OK && st.n_vocab == 265 && st.n_tensors == 0,
             "convert -> %s (%s), %llu tokens", pl_status_str(s), err.msg,
             (unsigned long long)st.n_vocab);
    pl_gguf *g = NULL;
    if (s || pl_gguf_open(&g, out, &err) != PL_OK) return;
    pl_str model = {0}, pre = {0};
    pl_gguf_array scores = {0}, types = {0};
    int prefix = 0, add_bos = 0;
    uint32_t bos = 0, eos = 0, unk = 0;
    pl_gguf_get_string(g, "tokenizer.ggml.model", &model, NULL);
    pl_gguf_get_string(g, "tokenizer.ggml.pre", &pre, NULL);
    pl_gguf_get_array(g, "tokenizer.ggml.scores", &scores, NULL);
    pl_gguf_get_array(g, "tokenizer.ggml.token_type", &types, NULL);
    pl_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &prefix, NULL);
    pl_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos, NULL);
    pl_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos, NULL);
    pl_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos, NULL);
    pl_gguf_get_u32(g, "tokenizer.ggml.unknown_token_id", &unk, NULL);
    TU_CHECK(model.len == 5 && memcmp(model.ptr, "llama", 5) == 0, "model '%.*s'", (int)model.len,
             model.ptr);
    TU_CHECK(pre.len == 7 && memcmp(pre.ptr, "default", 7) == 0, "pre '%.*s'", (int)pre.len,
             pre.ptr);
    TU_CHECK(pl_gguf_find_key(g, "tokenizer.ggml.merges") < 0, "no merges written");
    TU_CHECK(pl_gguf_n_tensors(g) == 0 && pl_gguf_find_key(g, "general.architecture") < 0,
             "vocabulary only: %llu tensors", (unsigned long long)pl_gguf_n_tensors(g));
    TU_CHECK(prefix == 1 && add_bos == 1 && bos == 1 && eos == 2 && unk == 0,
             "prefix %d add_bos %d bos %u eos %u unk %u", prefix, add_bos, bos, eos, unk);
    /* scores: minus the first rank making each token; -(4 + 1) for the rest */
    float sc[265] = {0};
    int32_t ty[265] = {0};
    for (uint64_t i = 0; i < 265 && scores.count == 265 && types.count == 265; i++) {
        pl_gguf_array_elem(&scores, i, &sc[i], NULL);
        pl_gguf_array_elem(&types, i, &ty[i], NULL);
    }
    TU_CHECK(sc[262] == 0.0f && sc[263] == -1.0f && sc[264] == -2.0f && sc[259] == -5.0f &&
                 sc[260] == -5.0f && sc[3] == -5.0f,
             "scores ▁a %g ab %g ▁ab %g ▁ %g a %g <0x00> %g", (double)sc[262], (double)sc[263],
             (double)sc[264], (double)sc[259], (double)sc[260], (double)sc[3]);
    TU_CHECK(ty[0] == 3 && ty[1] == 3 && ty[2] == 3 && ty[3] == 6 && ty[258] == 6 && ty[259] == 1 &&
                 ty[264] == 1,
             "types unk %d <s> %d </s> %d <0x00> %d <0xFF> %d ▁ %d ▁ab %d", ty[0], ty[1], ty[2],
             ty[3], ty[258], ty[259], ty[264]);
    pl_gguf_free(g);

    /* what plumb's SentencePiece encoder makes of it: HF's merges, the dummy prefix, bytes */
    pl_model *m = NULL;
    pl_model_params mp = {.flags = PL_MODEL_VOCAB_ONLY};
    s = pl_model_load(&m, out, &mp, &err);
    TU_CHECK(s == PL_OK, "load -> %s (%s)", pl_status_str(s), err.msg);
    if (s) return;
    static const struct {
        const char *text;
        int32_t ids[6];
        size_t n;
    } cases[] = {
        {"ab a", {1, 264, 262}, 3},  /* ▁a first (rank 0), then ▁a+b -> ▁ab (rank 2) */
        {"c", {1, 259, 3 + 'c'}, 3}, /* no token: byte fallback */
        {"a<s>b",
         {1, 262, 1, 259, 261},
         5}, /* a control token in the text (parsed), prefix after it */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t ids[16];
        size_t n = 0;
        s = pl_tokenize(m, cases[i].text, strlen(cases[i].text),
                        PL_TOKENIZE_ADD_BOS | PL_TOKENIZE_PARSE_SPECIAL, ids, 16, &n, &err);
        TU_CHECK(s == PL_OK && n == cases[i].n && memcmp(ids, cases[i].ids, n * sizeof *ids) == 0,
                 "'%s' -> %s, %zu ids (%d %d %d ...)", cases[i].text, pl_status_str(s), n, ids[0],
                 n > 1 ? ids[1] : -1, n > 2 ? ids[2] : -1);
    }
    pl_model_free(m);
}

#define EXPECT_REFUSED(obj, key, value, code, word)                                                \
    do {                                                                                           \
        write_spm(dir, obj, key, value);                                                           \
        pl_status s_ = convert_vocab(dir, out, NULL, &err);                                        \
        TU_CHECK(s_ == (code) && strstr(err.msg, word) && access(out, F_OK) != 0,                  \
                 "%s.%s: -> %s (%s), want '%s'", obj ? obj : "", key, pl_status_str(s_), err.msg,  \
                 word);                                                                            \
    } while (0)

static void spm_refuses_what_llama_cpp_encoder_would_not_compute(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/spm-bad", root);
    snprintf(out, sizeof out, "%s/spm-bad.gguf", root);
    pl_error err = {0};
    EXPECT_REFUSED(NULL, "pre_tokenizer",
                   json_pack("{s:s,s:s,s:s,s:b}", "type", "Metaspace", "replacement", SP,
                             "prepend_scheme", "first", "split", 0),
                   PL_ERR_UNSUPPORTED, "Metaspace");
    EXPECT_REFUSED(NULL, "normalizer", json_pack("{s:s}", "type", "NFKC"), PL_ERR_UNSUPPORTED,
                   "normalizer");
    EXPECT_REFUSED(NULL, "decoder", json_pack("{s:s}", "type", "Metaspace"), PL_ERR_UNSUPPORTED,
                   "decoder");
    EXPECT_REFUSED("model", "dropout", json_real(0.1), PL_ERR_UNSUPPORTED, "dropout");
    EXPECT_REFUSED("model", "merges", json_pack("[s]", "b a"), PL_ERR_FORMAT, "not in model.vocab");
    /* ▁ab is ▁ + ab, both tokens, with no merge "▁ ab": the score-driven encoder would join
     * them where this BPE does not */
    EXPECT_REFUSED("model", "merges", json_pack("[s,s,s]", SP " a", "a b", SP "a b"),
                   PL_ERR_UNSUPPORTED, "no merge \"" SP " ab\"");
    /* a byte with no <0xXX> token (and not an ASCII character with a token of its own) */
    json_t *j = spm_json();
    json_object_del(json_object_get(json_object_get(j, "model"), "vocab"), "<0x80>");
    write_json(dir, "tokenizer.json", j);
    pl_status s = convert_vocab(dir, out, NULL, &err);
    TU_CHECK(s == PL_ERR_UNSUPPORTED && strstr(err.msg, "<0x80>"), "no <0x80> -> %s (%s)",
             pl_status_str(s), err.msg);
}

/* No file names the BOS token (ChatGLM 3's tokenizer_config.json): the one the post-processor's
 * single template starts with, added; the EOS token, named, is added when the template ends
 * with it and add_eos_token is not given. */
static void spm_bos_and_eos_from_the_post_processor(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/spm-post", root);
    snprintf(out, sizeof out, "%s/spm-post.gguf", root);
    json_t *j = spm_json();
    json_object_set_new(j, "post_processor",
                        json_pack("{s:s,s:[{s:{s:s,s:i}},{s:{s:s,s:i}},{s:{s:s,s:i}}]}", "type",
                                  "TemplateProcessing", "single", "SpecialToken", "id", "<s>",
                                  "type_id", 0, "Sequence", "id", "A", "type_id", 0, "SpecialToken",
                                  "id", "</s>", "type_id", 0));
    write_json(dir, "tokenizer.json", j);
    write_json(dir, "tokenizer_config.json",
               json_pack("{s:s,s:s}", "unk_token", "<unk>", "eos_token", "</s>"));
    pl_error err = {0};
    pl_status s = convert_vocab(dir, out, NULL, &err);
    TU_CHECK(s == PL_OK, "convert -> %s (%s)", pl_status_str(s), err.msg);
    pl_model *m = NULL;
    pl_model_params mp = {.flags = PL_MODEL_VOCAB_ONLY};
    if (s || (s = pl_model_load(&m, out, &mp, &err)) != PL_OK) {
        TU_CHECK(0, "load -> %s (%s)", pl_status_str(s), err.msg);
        return;
    }
    int32_t ids[8];
    size_t n = 0;
    s = pl_tokenize(m, "ab a", 4, PL_TOKENIZE_ADD_BOS, ids, 8, &n, &err);
    TU_CHECK(s == PL_OK && n == 4 && ids[0] == 1 && ids[1] == 264 && ids[2] == 262 && ids[3] == 2,
             "'ab a' -> %s, %zu ids (%d ... %d)", pl_status_str(s), n, ids[0], n ? ids[n - 1] : -1);
    pl_model_free(m);
}

/* A whole checkpoint (the transformers-made tiny llama of data/hf, 409 embedding rows) with the
 * SentencePiece tokenizer.json: the model loads and runs, its vocabulary padded to the rows. */
static void spm_full_checkpoint_converts_and_pads_to_embedding_rows(void)
{
    const char *data = getenv("PLUMB_TEST_DATA");
    if (!data) {
        fprintf(stderr, "PLUMB_TEST_DATA not set: skipped\n");
        return;
    }
    char dir[256], out[300], cmd[800];
    snprintf(dir, sizeof dir, "%s/spm-llama", root);
    snprintf(out, sizeof out, "%s/spm-llama.gguf", root);
    snprintf(cmd, sizeof cmd, "cp -r '%s/hf/llama-bf16' '%s'", data, dir);
    TU_CHECK(system(cmd) == 0, "%s", cmd);
    write_spm(dir, NULL, NULL, NULL);
    pl_error err = {0};
    pl_convert_stats st;
    pl_convert_params p = {.ftype = PL_FTYPE_F32, .stats = &st};
    pl_status s = pl_convert_hf(dir, out, &p, &err);
    TU_CHECK(s == PL_OK && st.n_vocab == 409 && st.n_tensors > 0 && strcmp(st.arch, "llama") == 0,
             "convert -> %s (%s), %llu tokens", pl_status_str(s), err.msg,
             (unsigned long long)st.n_vocab);
    if (s) return;
    pl_model *m = NULL;
    s = pl_model_load(&m, out, NULL, &err);
    TU_CHECK(s == PL_OK, "load -> %s (%s)", pl_status_str(s), err.msg);
    if (s) return;
    int32_t ids[8];
    size_t n = 0;
    s = pl_tokenize(m, "ab a", 4, PL_TOKENIZE_ADD_BOS, ids, 8, &n, &err);
    TU_CHECK(s == PL_OK && n == 3 && ids[0] == 1 && ids[1] == 264 && ids[2] == 262,
             "'ab a' -> %s, %zu ids", pl_status_str(s), n);
    char piece[32];
    size_t k = 0;
    s = pl_token_to_piece(m, 300, PL_DETOK_SPECIAL, piece, sizeof piece, &k, &err);
    TU_CHECK(s == PL_OK, "the padding token 300 -> %s (%s)", pl_status_str(s), err.msg);
    pl_model_free(m);
}

/* Allocation N fails (transient, then persistent): PL_ERR_NOMEM and nothing written. */
static void spm_vocab_only_survives_allocation_failure(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/spm-alloc", root);
    snprintf(out, sizeof out, "%s/spm-alloc.gguf", root);
    write_spm(dir, NULL, NULL, NULL);
    pl_error err = {0};
    tu_alloc_fail_at(0, 0);
    pl_status s = convert_vocab(dir, out, NULL, &err);
    uint64_t n = tu_alloc_count();
    tu_alloc_reset();
    TU_CHECK(s == PL_OK && n > 0, "without failures -> %s (%s)", pl_status_str(s), err.msg);
    remove(out);
    for (int persistent = 0; persistent <= 1; persistent++)
        for (uint64_t k = 1; k <= n; k++) {
            tu_alloc_fail_at(k, persistent);
            s = convert_vocab(dir, out, NULL, &err);
            tu_alloc_reset();
            TU_CHECK(s == PL_ERR_NOMEM && access(out, F_OK) != 0,
                     "allocation %llu of %llu (%s) -> %s (%s)", (unsigned long long)k,
                     (unsigned long long)n, persistent ? "persistent" : "transient",
                     pl_status_str(s), err.msg);
            if (s != PL_ERR_NOMEM) return;
        }
}

/* The commands the parity harness drives: convert --vocab-only, then tokenize --batch (one line
 * per NUL-terminated record: ids, a tab, the hex of their text). */
static void spm_cli_vocab_only_and_tokenize_batch(void)
{
    const char *cli = getenv("PLUMB_CLI");
    if (!cli) {
        fprintf(stderr, "PLUMB_CLI not set: skipped\n");
        return;
    }
    char dir[256], cmd[1400], log[300];
    snprintf(dir, sizeof dir, "%s/spm-cli", root);
    snprintf(log, sizeof log, "%s/cli.log", root);
    write_spm(dir, NULL, NULL, NULL);
    snprintf(cmd, sizeof cmd,
             "'%s' convert --vocab-only '%s' '%s/cli.gguf' >/dev/null && printf 'ab a\\0\\0c\\377' "
             "| '%s' tokenize -m '%s/cli.gguf' -f - --batch --no-bos >'%s'",
             cli, dir, root, cli, root, log);
    int rc = system(cmd);
    FILE *f = fopen(log, "rb");
    char text[512] = "";
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    /* "ab a" -> ▁ab ▁a; the empty record; "c\xff" -> ▁, <0x63>, <0xFF> (invalid UTF-8 as bytes) */
    const char *want = "264 262\t2061622061\n\t\n259 102 258\t2063ff\n";
    TU_CHECK(rc == 0 && strcmp(text, want) == 0, "exit %d, output \"%s\", want \"%s\"", rc, text,
             want);
}

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/plumb-convert-spm-XXXXXX");
    if (!mkdtemp(root)) return 1;
    static const tu_test tests[] = {
        {"spm_vocab_only_writes_llama_vocab_with_merge_rank_scores",
         spm_vocab_only_writes_llama_vocab_with_merge_rank_scores},
        {"spm_refuses_what_llama_cpp_encoder_would_not_compute",
         spm_refuses_what_llama_cpp_encoder_would_not_compute},
        {"spm_bos_and_eos_from_the_post_processor", spm_bos_and_eos_from_the_post_processor},
        {"spm_full_checkpoint_converts_and_pads_to_embedding_rows",
         spm_full_checkpoint_converts_and_pads_to_embedding_rows},
        {"spm_vocab_only_survives_allocation_failure", spm_vocab_only_survives_allocation_failure},
        {"spm_cli_vocab_only_and_tokenize_batch", spm_cli_vocab_only_and_tokenize_batch},
        {NULL, NULL},
    };
    int rc = tu_run("convert_spm", tests);
    cleanup();
    return rc;
}
