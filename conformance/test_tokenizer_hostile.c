/* test_tokenizer_hostile.c — one test per malformed tokenizer section: each must be rejected at
 * load with the right code and a message naming the key (and index), never crash or leak;
 * and loading survives an allocation failure at every point. Not encoding (test_tokenizer.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tokfix.h"
#include "demo_vocab.h"

/* Keys a base vocabulary may leave out. */
enum { NO_MODEL = 1, NO_TOKENS = 2, NO_MERGES = 4, NO_TYPES = 8, NO_SCORES = 16 };

/* A valid SentencePiece vocabulary of 8 tokens: <unk> <s> </s> <0x41> ▁ a b ab. */
static pl_gguf_writer *base_spm(unsigned omit)
{
    static const char *const toks[] = {"<unk>",        "<s>", "</s>", "<0x41>",
                                       "\xe2\x96\x81", "a",   "b",    "ab"};
    static const int32_t types[] = {2, 3, 3, 6, 1, 1, 1, 1};
    static const float scores[] = {0, 0, 0, 0, -1, -2, -3, -4};
    pl_gguf_writer *w = tf_writer();
    if (!(omit & NO_MODEL)) tf_str(w, "tokenizer.ggml.model", "llama");
    if (!(omit & NO_TOKENS)) tf_strs(w, "tokenizer.ggml.tokens", toks, 8);
    if (!(omit & NO_TYPES)) tf_i32s(w, "tokenizer.ggml.token_type", types, 8);
    if (!(omit & NO_SCORES)) tf_f32s(w, "tokenizer.ggml.scores", scores, 8);
    return w;
}

/* A valid byte-level vocabulary of 5 tokens: a b ab Ġ <|end|>, merge "a b". */
static pl_gguf_writer *base_bpe(unsigned omit)
{
    static const char *const toks[] = {"a", "b", "ab", "\xc4\xa0", "<|end|>"};
    static const int32_t types[] = {1, 1, 1, 1, 3};
    static const char *const merges[] = {"a b"};
    pl_gguf_writer *w = tf_writer();
    if (!(omit & NO_MODEL)) tf_str(w, "tokenizer.ggml.model", "gpt2");
    tf_str(w, "tokenizer.ggml.pre", "gpt2");
    if (!(omit & NO_TOKENS)) tf_strs(w, "tokenizer.ggml.tokens", toks, 5);
    if (!(omit & NO_TYPES)) tf_i32s(w, "tokenizer.ggml.token_type", types, 5);
    if (!(omit & NO_MERGES)) tf_strs(w, "tokenizer.ggml.merges", merges, 1);
    return w;
}

/* Loading must fail with `want` and a message containing every '|'-separated needle. */
static void reject(pl_gguf_writer *w, pl_status want, const char *needles, int line)
{
    tf_file f;
    pl_error err = {PL_OK, "untouched"};
    pl_status s = tf_open(&f, w, &err);
    TU_CHECK(s == want, "line %d: load -> %s, want %s (%s)", line, pl_status_str(s),
             pl_status_str(want), err.msg);
    TU_CHECK(f.t == NULL, "line %d: *out not NULL after failure", line);
    TU_CHECK(err.code == want, "line %d: err.code %s", line, pl_status_str(err.code));
    char buf[256];
    snprintf(buf, sizeof buf, "%s", needles);
    for (char *n = strtok(buf, "|"); n; n = strtok(NULL, "|"))
        TU_CHECK(tf_mentions(err.msg, n), "line %d: message '%s' does not mention '%s'", line,
                 err.msg, n);
    tf_close(&f);
}
#define REJECT(w, code, needles) reject(w, code, needles, __LINE__)

static void tok_accepts_the_base_vocabularies(void)
{
    tf_file f;
    pl_error err;
    TU_CHECK(tf_open(&f, base_spm(0), &err) == PL_OK, "spm: %s", err.msg);
    tf_close(&f);
    TU_CHECK(tf_open(&f, base_bpe(0), &err) == PL_OK, "bpe: %s", err.msg);
    tf_close(&f);
}

static void tok_rejects_missing_model_key(void)
{
    REJECT(base_spm(NO_MODEL), PL_ERR_NOT_FOUND, "tokenizer.ggml.model");
}

static void tok_rejects_unknown_model(void)
{
    pl_gguf_writer *w = base_spm(0);
    tf_str(w, "tokenizer.ggml.model", "bert");
    REJECT(w, PL_ERR_UNSUPPORTED, "tokenizer.ggml.model|'bert'|llama|gpt2");
}

static void tok_rejects_model_of_wrong_type(void)
{
    pl_gguf_writer *w = base_spm(0);
    tf_u32(w, "tokenizer.ggml.model", 1);
    REJECT(w, PL_ERR_TYPE, "tokenizer.ggml.model|uint32|string");
}

static void tok_rejects_missing_tokens(void)
{
    REJECT(base_spm(NO_TOKENS), PL_ERR_NOT_FOUND, "tokenizer.ggml.tokens");
}

static void tok_rejects_tokens_that_are_not_strings(void)
{
    pl_gguf_writer *w = base_spm(0);
    static const int32_t v[8] = {0};
    tf_i32s(w, "tokenizer.ggml.tokens", v, 8);
    REJECT(w, PL_ERR_TYPE, "tokenizer.ggml.tokens|int32|string");
}

static void tok_rejects_tokens_that_are_not_an_array(void)
{
    pl_gguf_writer *w = base_spm(0);
    tf_str(w, "tokenizer.ggml.tokens", "abc");
    REJECT(w, PL_ERR_TYPE, "tokenizer.ggml.tokens|array");
}

static void tok_rejects_empty_vocabulary(void)
{
    pl_gguf_writer *w = base_spm(NO_TYPES | NO_SCORES);
    tf_strs(w, "tokenizer.ggml.tokens", NULL, 0);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.tokens|empty");
}

static void tok_rejects_scores_length_mismatch(void)
{
    pl_gguf_writer *w = base_spm(0);
    static const float s[7] = {0};
    tf_f32s(w, "tokenizer.ggml.scores", s, 7);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.scores|7|8");
}

static void tok_rejects_scores_of_wrong_element_type(void)
{
    pl_gguf_writer *w = base_spm(0);
    static const int32_t s[8] = {0};
    tf_i32s(w, "tokenizer.ggml.scores", s, 8);
    REJECT(w, PL_ERR_TYPE, "tokenizer.ggml.scores|int32|float32");
}

static void tok_rejects_nan_score(void)
{
    pl_gguf_writer *w = base_spm(0);
    float s[8] = {0};
    s[3] = nanf("");
    tf_f32s(w, "tokenizer.ggml.scores", s, 8);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.scores[3]|NaN");
}

static void tok_rejects_token_type_length_mismatch(void)
{
    pl_gguf_writer *w = base_spm(0);
    static const int32_t t[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tf_i32s(w, "tokenizer.ggml.token_type", t, 9);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.token_type|9|8");
}

static void tok_rejects_token_type_of_wrong_element_type(void)
{
    pl_gguf_writer *w = base_spm(0);
    static const float t[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    tf_f32s(w, "tokenizer.ggml.token_type", t, 8);
    REJECT(w, PL_ERR_TYPE, "tokenizer.ggml.token_type|float32|int32");
}

static void tok_rejects_token_type_out_of_range(void)
{
    pl_gguf_writer *w = base_spm(0);
    static const int32_t t[8] = {2, 3, 3, 6, 9, 1, 1, 1};
    tf_i32s(w, "tokenizer.ggml.token_type", t, 8);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.token_type[4]|= 9");
}

static void tok_rejects_bos_id_out_of_range(void)
{
    pl_gguf_writer *w = base_spm(0);
    tf_u32(w, "tokenizer.ggml.bos_token_id", 8);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.bos_token_id|= 8|8 tokens");
}

static void tok_rejects_eos_id_out_of_range(void)
{
    pl_gguf_writer *w = base_bpe(0);
    tf_u32(w, "tokenizer.ggml.eos_token_id", 4000000000u);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.eos_token_id|4000000000");
}

static void tok_rejects_special_id_of_wrong_type(void)
{
    pl_gguf_writer *w = base_spm(0);
    tf_str(w, "tokenizer.ggml.unknown_token_id", "0");
    REJECT(w, PL_ERR_TYPE, "tokenizer.ggml.unknown_token_id|string");
}

static void tok_rejects_negative_special_id(void)
{
    pl_gguf_writer *w = base_spm(0);
    int32_t v = -5;
    pl_error e;
    pl_gguf_writer_set(w, "tokenizer.ggml.padding_token_id", PL_GGUF_INT32, &v, &e);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.padding_token_id|-5");
}

static pl_gguf_writer *spm_with_token(int index, const char *text, int32_t type)
{
    const char *toks[] = {"<unk>", "<s>", "</s>", "<0x41>", "\xe2\x96\x81", "a", "b", "ab"};
    int32_t types[] = {2, 3, 3, 6, 1, 1, 1, 1};
    toks[index] = text;
    types[index] = type;
    pl_gguf_writer *w = base_spm(0);
    tf_strs(w, "tokenizer.ggml.tokens", toks, 8);
    tf_i32s(w, "tokenizer.ggml.token_type", types, 8);
    return w;
}

static void tok_rejects_byte_token_0x_minus_1(void)
{
    REJECT(spm_with_token(3, "<0x-1>", PL_TOKEN_BYTE), PL_ERR_FORMAT,
           "tokenizer.ggml.tokens[3]|<0x-1>|byte");
}

static void tok_rejects_byte_token_0xZZ(void)
{
    REJECT(spm_with_token(3, "<0xZZ>", PL_TOKEN_BYTE), PL_ERR_FORMAT,
           "tokenizer.ggml.tokens[3]|<0xZZ>");
}

static void tok_rejects_byte_token_with_three_digits(void)
{
    REJECT(spm_with_token(3, "<0x041>", PL_TOKEN_BYTE), PL_ERR_FORMAT,
           "tokenizer.ggml.tokens[3]|<0x041>");
}

static void tok_rejects_duplicate_byte_tokens(void)
{
    REJECT(spm_with_token(7, "<0x41>", PL_TOKEN_BYTE), PL_ERR_FORMAT,
           "tokenizer.ggml.tokens[7]|0x41|token 3");
}

static void tok_rejects_duplicate_normal_tokens(void)
{
    REJECT(spm_with_token(7, "a", PL_TOKEN_NORMAL), PL_ERR_FORMAT,
           "tokenizer.ggml.tokens[7]|'a'|token 5|duplicate");
}

static void tok_rejects_duplicate_control_tokens(void)
{
    REJECT(spm_with_token(2, "<s>", PL_TOKEN_CONTROL), PL_ERR_FORMAT,
           "tokenizer.ggml.tokens[2]|<s>|token 1");
}

/* An empty token loads as "[EMPTY_<id>]" (llama.cpp's name); a real token of that text beside it
 * is then a duplicate. */
static void tok_rejects_a_token_named_like_an_empty_one(void)
{
    const char *toks[] = {"<unk>", "<s>", "</s>", "<0x41>", "\xe2\x96\x81", "a", "", "[EMPTY_6]"};
    int32_t types[] = {2, 3, 3, 6, 1, 1, 1, 1};
    pl_gguf_writer *w = base_spm(0);
    tf_strs(w, "tokenizer.ggml.tokens", toks, 8);
    tf_i32s(w, "tokenizer.ggml.token_type", types, 8);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.tokens[7]|[EMPTY_6]|token 6");
}

/* One text, two types: llama.cpp refuses it (its text -> id map holds one id), so does plumb. */
static void tok_rejects_duplicate_text_across_types(void)
{
    REJECT(spm_with_token(7, "<s>", PL_TOKEN_NORMAL), PL_ERR_FORMAT,
           "tokenizer.ggml.tokens[7]|<s>|token 1|control");
}

/* Byte-level: an added token stored with the same text as a vocabulary token is a duplicate;
 * one that only spells the same bytes ("  " beside "ĠĠ") is not (test_tokenizer_quirks.c). */
static void tok_rejects_bpe_added_token_with_a_vocabulary_text(void)
{
    static const char *const toks[] = {"a", "b", "ab", "\xc4\xa0", "<|end|>", "ab"};
    static const int32_t types[] = {1, 1, 1, 1, 3, 4};
    pl_gguf_writer *w = base_bpe(NO_TOKENS | NO_TYPES);
    tf_strs(w, "tokenizer.ggml.tokens", toks, 6);
    tf_i32s(w, "tokenizer.ggml.token_type", types, 6);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.tokens[5]|'ab'|token 2|user-defined");
}

/* An empty unused token loads (as "[EMPTY_6]"); it can never match. */
static void tok_accepts_empty_unused_token(void)
{
    tf_file f;
    pl_error err;
    TU_CHECK(tf_open(&f, spm_with_token(6, "", PL_TOKEN_UNUSED), &err) == PL_OK, "load: %s",
             err.msg);
    tf_close(&f);
}

static void tok_rejects_token_longer_than_the_limit(void)
{
    char *big = malloc(PL_TOK_MAX_TOKEN_BYTES + 2);
    if (!big) abort();
    memset(big, 'x', PL_TOK_MAX_TOKEN_BYTES + 1);
    big[PL_TOK_MAX_TOKEN_BYTES + 1] = '\0';
    REJECT(spm_with_token(6, big, PL_TOKEN_NORMAL), PL_ERR_LIMIT,
           "tokenizer.ggml.tokens[6]|PL_TOK_MAX_TOKEN_BYTES|4097");
    free(big);
}

/* More tokens than PL_TOK_MAX_VOCAB: rejected before any per-token work. */
static void tok_rejects_vocabulary_larger_than_the_limit(void)
{
    uint64_t n = (uint64_t)PL_TOK_MAX_VOCAB + 1;
    const char **toks = malloc(n * sizeof *toks);
    if (!toks) abort();
    for (uint64_t i = 0; i < n; i++) toks[i] = "";
    pl_gguf_writer *w = tf_writer();
    tf_str(w, "tokenizer.ggml.model", "llama");
    tf_strs(w, "tokenizer.ggml.tokens", toks, n);
    free(toks);
    REJECT(w, PL_ERR_LIMIT, "tokenizer.ggml.tokens|PL_TOK_MAX_VOCAB|4194305");
}

static void tok_rejects_merge_naming_an_unknown_token(void)
{
    pl_gguf_writer *w = base_bpe(0);
    static const char *const m[] = {"a b", "a zz"};
    tf_strs(w, "tokenizer.ggml.merges", m, 2);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.merges[1]|'zz'|not a token");
}

static void tok_rejects_merge_whose_result_is_not_a_token(void)
{
    pl_gguf_writer *w = base_bpe(0);
    static const char *const m[] = {"b a"};
    tf_strs(w, "tokenizer.ggml.merges", m, 1);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.merges[0]|'b a'|merged");
}

static void tok_rejects_merge_without_a_space(void)
{
    pl_gguf_writer *w = base_bpe(0);
    static const char *const m[] = {"a b", "ab"};
    tf_strs(w, "tokenizer.ggml.merges", m, 2);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.merges[1]|'ab'|space");
}

static void tok_rejects_merge_with_an_empty_side(void)
{
    pl_gguf_writer *w = base_bpe(0);
    static const char *const m[] = {"a "};
    tf_strs(w, "tokenizer.ggml.merges", m, 1);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.merges[0]");
}

static void tok_rejects_missing_merges_for_gpt2(void)
{
    REJECT(base_bpe(NO_MERGES), PL_ERR_NOT_FOUND, "tokenizer.ggml.merges");
}

static void tok_rejects_merges_of_wrong_element_type(void)
{
    pl_gguf_writer *w = base_bpe(0);
    static const int32_t m[1] = {0};
    tf_i32s(w, "tokenizer.ggml.merges", m, 1);
    REJECT(w, PL_ERR_TYPE, "tokenizer.ggml.merges|int32");
}

static void tok_rejects_unknown_pre_tokenizer_listing_known_ones(void)
{
    pl_gguf_writer *w = base_bpe(0);
    tf_str(w, "tokenizer.ggml.pre", "made-up");
    REJECT(w, PL_ERR_UNSUPPORTED,
           "tokenizer.ggml.pre|made-up|default|gpt-2|llama-bpe|qwen2|smollm");
}

static void tok_rejects_add_bos_without_bos_id(void)
{
    pl_gguf_writer *w = base_bpe(0);
    tf_bool(w, "tokenizer.ggml.add_bos_token", 1);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.add_bos_token|bos_token_id");
}

static void tok_rejects_add_eos_without_eos_id(void)
{
    pl_gguf_writer *w = base_bpe(0);
    tf_bool(w, "tokenizer.ggml.add_eos_token", 1);
    REJECT(w, PL_ERR_FORMAT, "tokenizer.ggml.add_eos_token|eos_token_id");
}

static void tok_rejects_flag_of_wrong_type(void)
{
    pl_gguf_writer *w = base_spm(0);
    tf_u32(w, "tokenizer.ggml.add_space_prefix", 1);
    REJECT(w, PL_ERR_TYPE, "tokenizer.ggml.add_space_prefix|bool");
}

/* Every allocation of a load, failed in turn (once, then persistently from there), gives a
 * clean PL_ERR_NOMEM with nothing leaked (the sanitizer build checks leaks). */
static void load_under_alloc_failure(int kind, uint32_t n_vocab, int persistent)
{
    tf_file f;
    pl_error err;
    TU_CHECK(tf_demo(&f, kind, n_vocab, &err) == PL_OK, "demo %d: %s", kind, err.msg);
    uint64_t n_ok = 0;
    for (uint64_t n = 1; n < 100000; n++) {
        struct pl_tokenizer *t = (struct pl_tokenizer *)(uintptr_t)1;
        tu_alloc_fail_at(n, persistent);
        pl_status s = pl_tokenizer_load(&t, f.g, &err);
        uint64_t failed = tu_alloc_failed();
        tu_alloc_reset();
        if (failed == 0) {
            TU_CHECK(s == PL_OK, "kind %d: no failure injected at %llu but %s: %s", kind,
                     (unsigned long long)n, pl_status_str(s), err.msg);
            pl_tokenizer_free(t);
            n_ok = n;
            break;
        }
        TU_CHECK(s == PL_ERR_NOMEM || s == PL_OK, "kind %d, allocation %llu failed%s: got %s (%s)",
                 kind, (unsigned long long)n, persistent ? " persistently" : "", pl_status_str(s),
                 err.msg);
        if (s == PL_OK)
            pl_tokenizer_free(t);
        else
            TU_CHECK(t == NULL, "kind %d: *out not NULL after failure %llu", kind,
                     (unsigned long long)n);
    }
    TU_CHECK(n_ok > 1, "kind %d: the load never succeeded", kind);
    tf_close(&f);
}

static void tok_load_fails_cleanly_at_every_allocation(void)
{
    load_under_alloc_failure(0, 600, 0);
    load_under_alloc_failure(0, 600, 1);
    load_under_alloc_failure(1, 600, 0);
    load_under_alloc_failure(1, 600, 1);
    load_under_alloc_failure(2, 600, 1);
}

/* Encoding allocates its scratch per call: a failure there is PL_ERR_NOMEM too. */
static void tok_encode_fails_cleanly_at_every_allocation(void)
{
    for (int kind = 0; kind < DEMO_VOCAB_COUNT; kind++) {
        tf_file f;
        pl_error err;
        TU_CHECK(tf_demo(&f, kind, 700, &err) == PL_OK, "demo: %s", err.msg);
        static const char text[] = "The river starts in the hills, 1743 🙂 你好 \xff end.";
        int32_t ids[256];
        size_t n;
        int done = 0;
        for (uint64_t k = 1; k < 10000 && !done; k++) {
            tu_alloc_fail_at(k, 1);
            pl_status s = pl_tok_encode(f.t, text, sizeof text - 1, 0, ids, 256, &n, &err);
            uint64_t failed = tu_alloc_failed();
            tu_alloc_reset();
            if (!failed) {
                TU_CHECK(s == PL_OK, "kind %d: %s", kind, err.msg);
                done = 1;
            } else {
                TU_CHECK(s == PL_ERR_NOMEM, "kind %d, allocation %llu: %s (%s)", kind,
                         (unsigned long long)k, pl_status_str(s), err.msg);
            }
        }
        TU_CHECK(done, "kind %d: encode never succeeded", kind);
        tf_close(&f);
    }
}

int main(void)
{
    static const tu_test tests[] = {
        {"tok_accepts_the_base_vocabularies", tok_accepts_the_base_vocabularies},
        {"tok_rejects_missing_model_key", tok_rejects_missing_model_key},
        {"tok_rejects_unknown_model", tok_rejects_unknown_model},
        {"tok_rejects_model_of_wrong_type", tok_rejects_model_of_wrong_type},
        {"tok_rejects_missing_tokens", tok_rejects_missing_tokens},
        {"tok_rejects_tokens_that_are_not_strings", tok_rejects_tokens_that_are_not_strings},
        {"tok_rejects_tokens_that_are_not_an_array", tok_rejects_tokens_that_are_not_an_array},
        {"tok_rejects_empty_vocabulary", tok_rejects_empty_vocabulary},
        {"tok_rejects_scores_length_mismatch", tok_rejects_scores_length_mismatch},
        {"tok_rejects_scores_of_wrong_element_type", tok_rejects_scores_of_wrong_element_type},
        {"tok_rejects_nan_score", tok_rejects_nan_score},
        {"tok_rejects_token_type_length_mismatch", tok_rejects_token_type_length_mismatch},
        {"tok_rejects_token_type_of_wrong_element_type",
         tok_rejects_token_type_of_wrong_element_type},
        {"tok_rejects_token_type_out_of_range", tok_rejects_token_type_out_of_range},
        {"tok_rejects_bos_id_out_of_range", tok_rejects_bos_id_out_of_range},
        {"tok_rejects_eos_id_out_of_range", tok_rejects_eos_id_out_of_range},
        {"tok_rejects_special_id_of_wrong_type", tok_rejects_special_id_of_wrong_type},
        {"tok_rejects_negative_special_id", tok_rejects_negative_special_id},
        {"tok_rejects_byte_token_0x_minus_1", tok_rejects_byte_token_0x_minus_1},
        {"tok_rejects_byte_token_0xZZ", tok_rejects_byte_token_0xZZ},
        {"tok_rejects_byte_token_with_three_digits", tok_rejects_byte_token_with_three_digits},
        {"tok_rejects_duplicate_byte_tokens", tok_rejects_duplicate_byte_tokens},
        {"tok_rejects_duplicate_normal_tokens", tok_rejects_duplicate_normal_tokens},
        {"tok_rejects_duplicate_control_tokens", tok_rejects_duplicate_control_tokens},
        {"tok_rejects_a_token_named_like_an_empty_one",
         tok_rejects_a_token_named_like_an_empty_one},
        {"tok_rejects_duplicate_text_across_types", tok_rejects_duplicate_text_across_types},
        {"tok_rejects_bpe_added_token_with_a_vocabulary_text",
         tok_rejects_bpe_added_token_with_a_vocabulary_text},
        {"tok_accepts_empty_unused_token", tok_accepts_empty_unused_token},
        {"tok_rejects_token_longer_than_the_limit", tok_rejects_token_longer_than_the_limit},
        {"tok_rejects_vocabulary_larger_than_the_limit",
         tok_rejects_vocabulary_larger_than_the_limit},
        {"tok_rejects_merge_naming_an_unknown_token", tok_rejects_merge_naming_an_unknown_token},
        {"tok_rejects_merge_whose_result_is_not_a_token",
         tok_rejects_merge_whose_result_is_not_a_token},
        {"tok_rejects_merge_without_a_space", tok_rejects_merge_without_a_space},
        {"tok_rejects_merge_with_an_empty_side", tok_rejects_merge_with_an_empty_side},
        {"tok_rejects_missing_merges_for_gpt2", tok_rejects_missing_merges_for_gpt2},
        {"tok_rejects_merges_of_wrong_element_type", tok_rejects_merges_of_wrong_element_type},
        {"tok_rejects_unknown_pre_tokenizer_listing_known_ones",
         tok_rejects_unknown_pre_tokenizer_listing_known_ones},
        {"tok_rejects_add_bos_without_bos_id", tok_rejects_add_bos_without_bos_id},
        {"tok_rejects_add_eos_without_eos_id", tok_rejects_add_eos_without_eos_id},
        {"tok_rejects_flag_of_wrong_type", tok_rejects_flag_of_wrong_type},
        {"tok_load_fails_cleanly_at_every_allocation", tok_load_fails_cleanly_at_every_allocation},
        {"tok_encode_fails_cleanly_at_every_allocation",
         tok_encode_fails_cleanly_at_every_allocation},
        {NULL, NULL},
    };
    return tu_run("tokenizer_hostile", tests);
}
