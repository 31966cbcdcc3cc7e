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
#include "spm_pb.h"
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

/* Allocation N of converting dir to out fails (transient, then persistent): PL_ERR_NOMEM and
 * nothing written. */
static void convert_survives_allocation_failure(const char *dir, const char *out)
{
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

static void spm_vocab_only_survives_allocation_failure(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/spm-alloc", root);
    snprintf(out, sizeof out, "%s/spm-alloc.gguf", root);
    write_spm(dir, NULL, NULL, NULL);
    convert_survives_allocation_failure(dir, out);
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

/* ---- tokenizer.model (no tokenizer.json) ---- */

/* dir/tokenizer.model: spm_pb.h's small model, with extra fields appended (later ones win). */
static void write_model(const char *dir, void (*extra)(pb_buf *))
{
    char path[512];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/tokenizer.model", dir);
    pb_buf b = {0};
    pb_small_model(&b);
    if (extra) extra(&b);
    FILE *f = fopen(path, "wb");
    TU_CHECK(f && fwrite(b.p, 1, b.n, f) == b.n, "cannot write %s", path);
    if (f) fclose(f);
    free(b.p);
}

/* A folder holding only tokenizer.model (and tokenizer_config.json naming nothing): the
 * vocabulary, scores and types as sentencepiece has them, the ids from trainer_spec, BOS added
 * (transformers' LlamaTokenizer default), the dummy prefix from normalizer_spec. */
static void model_vocab_only_writes_pieces_scores_types_and_ids(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/model", root);
    snprintf(out, sizeof out, "%s/model.gguf", root);
    write_model(dir, NULL);
    write_json(dir, "tokenizer_config.json",
               json_pack("{s:s}", "tokenizer_class", "LlamaTokenizer"));
    pl_error err = {0};
    pl_convert_stats st;
    pl_status s = convert_vocab(dir, out, &st, &err);
    TU_CHECK(s == PL_OK && st.n_vocab == 265 && strcmp(st.pre, "default") == 0,
             "convert -> %s (%s), %llu tokens", pl_status_str(s), err.msg,
             (unsigned long long)st.n_vocab);
    pl_gguf *g = NULL;
    if (s || pl_gguf_open(&g, out, &err) != PL_OK) return;
    pl_str model = {0};
    pl_gguf_array scores = {0}, types = {0};
    int prefix = 0, add_bos = 0;
    uint32_t bos = 0, eos = 0, unk = 9;
    pl_gguf_get_string(g, "tokenizer.ggml.model", &model, NULL);
    pl_gguf_get_array(g, "tokenizer.ggml.scores", &scores, NULL);
    pl_gguf_get_array(g, "tokenizer.ggml.token_type", &types, NULL);
    pl_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &prefix, NULL);
    pl_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos, NULL);
    pl_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos, NULL);
    pl_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos, NULL);
    pl_gguf_get_u32(g, "tokenizer.ggml.unknown_token_id", &unk, NULL);
    TU_CHECK(model.len == 5 && memcmp(model.ptr, "llama", 5) == 0, "model '%.*s'", (int)model.len,
             model.ptr);
    TU_CHECK(prefix == 1 && add_bos == 1 && bos == 1 && eos == 2 && unk == 0 &&
                 pl_gguf_find_key(g, "tokenizer.ggml.padding_token_id") < 0 &&
                 pl_gguf_find_key(g, "tokenizer.ggml.merges") < 0,
             "prefix %d add_bos %d bos %u eos %u unk %u", prefix, add_bos, bos, eos, unk);
    static const float want_score[6] = {-1, -2, -3, 0, -1, -2};
    int bad = 0;
    for (uint32_t i = 0; i < 265; i++) {
        float sc = 1;
        int32_t ty = 0;
        pl_gguf_array_elem(&scores, i, &sc, NULL);
        pl_gguf_array_elem(&types, i, &ty, NULL);
        const int32_t wt = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
        const float ws = i < 259 ? 0 : want_score[i - 259];
        if (ty != wt || sc != ws) {
            if (bad++ < 3) fprintf(stderr, "  token %u: type %d score %g\n", i, ty, (double)sc);
        }
    }
    TU_CHECK(bad == 0, "%d tokens with another type or score than the piece", bad);
    pl_gguf_free(g);
    pl_model *m = NULL;
    pl_model_params mp = {.flags = PL_MODEL_VOCAB_ONLY};
    if ((s = pl_model_load(&m, out, &mp, &err))) {
        TU_CHECK(0, "load -> %s (%s)", pl_status_str(s), err.msg);
        return;
    }
    int32_t ids[8];
    size_t n = 0;
    s = pl_tokenize(m, "ab a", 4, PL_TOKENIZE_ADD_BOS, ids, 8, &n, &err);
    TU_CHECK(s == PL_OK && n == 3 && ids[0] == 1 && ids[1] == 264 && ids[2] == 262,
             "'ab a' -> %s, %zu ids", pl_status_str(s), n);
    pl_model_free(m);
}

static void x_unigram(pb_buf *b)
{
    pb_buf t = {0};
    pb_int(&t, 3, 1);
    pb_msg(b, 2, &t);
}

/* What the tokenizer.model path refuses, by name. */
static void model_refusals_name_what(void)
{
    static const struct {
        const char *name;
        void (*extra)(pb_buf *);
        int added_json;  /* an added_tokens.json beside it: 1 <pad> at 5, 2 <pad> at 300 */
        int no_model;    /* no tokenizer.model either */
        int rows;        /* config.json vocab_size (0: none) */
        const char *dec; /* added_tokens_decoder JSON */
        pl_status want;
        const char *needle;
    } cases[] = {
        {"none", NULL, 0, 1, 0, NULL, PL_ERR_NOT_FOUND, "tokenizer.json is missing (and no "},
        {"unigram", x_unigram, 0, 0, 0, NULL, PL_ERR_UNSUPPORTED, "a unigram model"},
        {"added-json", NULL, 1, 0, 0, NULL, PL_ERR_FORMAT,
         "added_tokens.json: '<pad>' is id 5, which is already '<0x02>'"},
        {"added-json-rows", NULL, 2, 0, 300, NULL, PL_ERR_FORMAT,
         "added_tokens.json: token id 300 has no row in the embedding (300 rows"},
        {"rows", NULL, 0, 0, 100, NULL, PL_ERR_FORMAT, "token id 264 has no row"},
        {"dec-text", NULL, 0, 0, 0, "{\"5\": {\"content\": \"x\"}}", PL_ERR_FORMAT,
         "piece 5 of tokenizer.model is '<0x02>'"},
        {"dec-id", NULL, 0, 0, 0, "{\"x5\": {\"content\": \"x\"}}", PL_ERR_FORMAT,
         "added_tokens_decoder['x5']"},
        {"dec-dup", NULL, 0, 0, 0, "{\"270\": {\"content\": \"ab\"}}", PL_ERR_FORMAT,
         "are both 'ab'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[256], out[300];
        snprintf(dir, sizeof dir, "%s/model-%s", root, cases[i].name);
        snprintf(out, sizeof out, "%s/model-%s.gguf", root, cases[i].name);
        mkdir(dir, 0755);
        if (!cases[i].no_model) write_model(dir, cases[i].extra);
        if (cases[i].added_json)
            write_json(dir, "added_tokens.json",
                       json_pack("{s:i}", "<pad>", cases[i].added_json == 1 ? 5 : 300));
        if (cases[i].rows)
            write_json(dir, "config.json", json_pack("{s:i}", "vocab_size", cases[i].rows));
        if (cases[i].dec)
            write_json(
                dir, "tokenizer_config.json",
                json_pack("{s:o}", "added_tokens_decoder", json_loads(cases[i].dec, 0, NULL)));
        pl_error err = {0};
        pl_status s = convert_vocab(dir, out, NULL, &err);
        TU_CHECK(s == cases[i].want && strstr(err.msg, cases[i].needle) && access(out, F_OK) != 0,
                 "%s -> %s (%s), want %s '%s'", cases[i].name, pl_status_str(s), err.msg,
                 pl_status_str(cases[i].want), cases[i].needle);
    }
}

/* A whole checkpoint (the transformers-made tiny llama of data/hf, 409 embedding rows) with
 * tokenizer.model instead of tokenizer.json: added_tokens.json adds <pad> at 300 and <extra2>
 * at 303 past the 265 pieces (user-defined), tokenizer_config.json's added_tokens_decoder makes
 * <pad> control and adds <extra> at 301; the rest are [PADn]; the model loads and runs. */
static void model_full_checkpoint_converts_and_pads_to_embedding_rows(void)
{
    const char *data = getenv("PLUMB_TEST_DATA");
    if (!data) {
        fprintf(stderr, "PLUMB_TEST_DATA not set: skipped\n");
        return;
    }
    char dir[256], out[300], cmd[800];
    snprintf(dir, sizeof dir, "%s/model-llama", root);
    snprintf(out, sizeof out, "%s/model-llama.gguf", root);
    snprintf(cmd, sizeof cmd, "cp -r '%s/hf/llama-bf16' '%s' && rm '%s/tokenizer.json'", data, dir,
             dir);
    TU_CHECK(system(cmd) == 0, "%s", cmd);
    write_model(dir, NULL);
    write_json(dir, "added_tokens.json", json_pack("{s:i,s:i}", "<pad>", 300, "<extra2>", 303));
    write_json(dir, "tokenizer_config.json",
               json_pack("{s:s,s:{s:{s:s,s:b},s:{s:s,s:b},s:{s:s,s:b}}}", "pad_token", "<pad>",
                         "added_tokens_decoder", "0", "content", "<unk>", "special", 1, "300",
                         "content", "<pad>", "special", 1, "301", "content", "<extra>", "special",
                         0));
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
    s = pl_tokenize(m, "ab a<extra>", 11, PL_TOKENIZE_ADD_BOS, ids, 8, &n, &err);
    TU_CHECK(s == PL_OK && n == 4 && ids[0] == 1 && ids[1] == 264 && ids[2] == 262 && ids[3] == 301,
             "'ab a<extra>' -> %s, %zu ids", pl_status_str(s), n);
    pl_str t302 = pl_vocab_token_text(m, 302), t303 = pl_vocab_token_text(m, 303);
    TU_CHECK(pl_vocab_token_type(m, 303) == PL_TOKEN_USER_DEFINED && t303.len == 8 &&
                 memcmp(t303.ptr, "<extra2>", 8) == 0,
             "added_tokens.json's <extra2>: type %d", pl_vocab_token_type(m, 303));
    TU_CHECK(pl_vocab_n_tokens(m) == 409 && pl_vocab_pad(m) == 300 && pl_vocab_bos(m) == 1 &&
                 pl_vocab_eos(m) == 2 && pl_vocab_unk(m) == 0 &&
                 pl_vocab_token_type(m, 300) == PL_TOKEN_CONTROL &&
                 pl_vocab_token_type(m, 301) == PL_TOKEN_USER_DEFINED &&
                 pl_vocab_token_type(m, 0) == PL_TOKEN_UNKNOWN &&
                 pl_vocab_token_type(m, 302) == PL_TOKEN_UNUSED && t302.len == 8 &&
                 memcmp(t302.ptr, "[PAD302]", 8) == 0,
             "vocabulary: %d tokens, pad %d, types %d %d %d", pl_vocab_n_tokens(m), pl_vocab_pad(m),
             pl_vocab_token_type(m, 300), pl_vocab_token_type(m, 301), pl_vocab_token_type(m, 302));
    pl_model_free(m);
}

/* plumb convert --vocab-only on a folder that has only tokenizer.model, then tokenize --batch. */
static void model_cli_vocab_only_and_tokenize(void)
{
    const char *cli = getenv("PLUMB_CLI");
    if (!cli) {
        fprintf(stderr, "PLUMB_CLI not set: skipped\n");
        return;
    }
    char dir[256], cmd[1400], log[300];
    snprintf(dir, sizeof dir, "%s/model-cli", root);
    snprintf(log, sizeof log, "%s/model-cli.log", root);
    write_model(dir, NULL);
    snprintf(cmd, sizeof cmd,
             "'%s' convert --vocab-only '%s' '%s/model-cli.gguf' >/dev/null && printf 'ab a\\0c' "
             "| '%s' tokenize -m '%s/model-cli.gguf' -f - --batch --no-bos >'%s'",
             cli, dir, root, cli, root, log);
    int rc = system(cmd);
    FILE *f = fopen(log, "rb");
    char text[512] = "";
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    const char *want = "264 262\t2061622061\n259 102\t2063\n";
    TU_CHECK(rc == 0 && strcmp(text, want) == 0, "exit %d, output \"%s\", want \"%s\"", rc, text,
             want);
}

static void model_vocab_only_survives_allocation_failure(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/model-alloc", root);
    snprintf(out, sizeof out, "%s/model-alloc.gguf", root);
    write_model(dir, NULL);
    convert_survives_allocation_failure(dir, out);
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
        {"model_vocab_only_writes_pieces_scores_types_and_ids",
         model_vocab_only_writes_pieces_scores_types_and_ids},
        {"model_refusals_name_what", model_refusals_name_what},
        {"model_full_checkpoint_converts_and_pads_to_embedding_rows",
         model_full_checkpoint_converts_and_pads_to_embedding_rows},
        {"model_cli_vocab_only_and_tokenize", model_cli_vocab_only_and_tokenize},
        {"model_vocab_only_survives_allocation_failure",
         model_vocab_only_survives_allocation_failure},
        {NULL, NULL},
    };
    int rc = tu_run("convert_spm", tests);
    cleanup();
    return rc;
}
