/* test_tokenizer_api.c — the public tokenizer API (plumb.h) on models loaded with
 * PL_MODEL_VOCAB_ONLY from demo vocabularies: pl_tokenize, pieces, detokenize, streaming,
 * vocabulary getters, chat rendering with the model's template. Not the algorithms' details.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_vocab.h"
#include "testutil.h"
#include "tokfix.h"

typedef struct api_model {
    void *bytes;
    size_t size;
    pl_model *m;
} api_model;

static pl_status open_model(api_model *a, int kind, uint32_t n_vocab, int with_vocab, pl_error *err)
{
    memset(a, 0, sizeof *a);
    pl_gguf_writer *w = tf_writer();
    if (with_vocab)
        demo_vocab_write(w, (enum demo_vocab_kind)kind, n_vocab, err);
    else
        tf_str(w, "general.architecture", "llama");
    pl_gguf_writer_write_memory(w, &a->bytes, &a->size, err);
    pl_gguf_writer_free(w);
    pl_model_params p = {.flags = PL_MODEL_VOCAB_ONLY};
    return pl_model_load_memory(&a->m, a->bytes, a->size, &p, err);
}

static void close_model(api_model *a)
{
    pl_model_free(a->m);
    pl_buffer_free(a->bytes);
}

static void api_tokenize_round_trips_through_the_model(void)
{
    for (int kind = 0; kind < DEMO_VOCAB_COUNT; kind++) {
        api_model a;
        pl_error err;
        TU_CHECK(open_model(&a, kind, 2000, 1, &err) == PL_OK, "kind %d: %s", kind, err.msg);
        static const char text[] = "The river starts in the hills, 1743 🙂 你好.";
        int32_t ids[128];
        size_t n;
        TU_CHECK(pl_tokenize(a.m, text, sizeof text - 1, PL_TOKENIZE_ADD_BOS, ids, 128, &n, &err) ==
                     PL_OK,
                 "kind %d: %s", kind, err.msg);
        TU_CHECK(n > 5 && n < sizeof text, "kind %d: %zu tokens", kind, n);
        /* the BPE (Qwen2) and Phi-3 vocabularies say add_bos_token = false */
        if (pl_vocab_bos(a.m) >= 0 && kind != DEMO_VOCAB_BPE && kind != DEMO_VOCAB_PHI3)
            TU_CHECK(ids[0] == pl_vocab_bos(a.m), "kind %d: BOS first", kind);
        char back[256];
        size_t len;
        TU_CHECK(pl_detokenize(a.m, ids, n, PL_DETOK_STRIP_PREFIX, back, sizeof back, &len, &err) ==
                         PL_OK &&
                     len == sizeof text - 1 && memcmp(back, text, len) == 0,
                 "kind %d: round trip", kind);
        /* streaming gives the same bytes */
        pl_detok *d;
        TU_CHECK(pl_detok_new(&d, a.m, PL_DETOK_STRIP_PREFIX, &err) == PL_OK, "detok: %s", err.msg);
        char cat[256];
        size_t o = 0, k;
        for (size_t i = 0; i < n; i++) {
            TU_CHECK(pl_detok_push(d, ids[i], cat + o, sizeof cat - o, &k, &err) == PL_OK, "push");
            o += k;
        }
        TU_CHECK(pl_detok_flush(d, cat + o, sizeof cat - o, &k, &err) == PL_OK, "flush");
        o += k;
        TU_CHECK(o == len && memcmp(cat, back, o) == 0, "kind %d: stream == one-shot", kind);
        pl_detok_free(d);
        char piece[64];
        TU_CHECK(pl_token_to_piece(a.m, ids[n - 1], 0, piece, sizeof piece, &k, &err) == PL_OK &&
                     k >= 1,
                 "piece");
        TU_CHECK(pl_token_to_piece(a.m, ids[n - 1], 0, piece, 0, &k, &err) ==
                     PL_ERR_BUFFER_TOO_SMALL,
                 "piece into an empty buffer");
        close_model(&a);
    }
}

static void api_vocab_getters_report_the_special_tokens(void)
{
    api_model a;
    pl_error err;
    TU_CHECK(open_model(&a, DEMO_VOCAB_BPE, 1000, 1, &err) == PL_OK, "%s", err.msg);
    TU_CHECK(pl_vocab_n_tokens(a.m) == 1000, "n_tokens %d", pl_vocab_n_tokens(a.m));
    int32_t eot = pl_vocab_eot(a.m);
    pl_str t = pl_vocab_token_text(a.m, eot);
    TU_CHECK(eot == 999 && t.len == 10 && memcmp(t.ptr, "<|im_end|>", 10) == 0, "eot %d", eot);
    TU_CHECK(pl_vocab_is_eog(a.m, eot) && !pl_vocab_is_eog(a.m, 5), "is_eog");
    TU_CHECK(pl_vocab_token_type(a.m, eot) == PL_TOKEN_CONTROL, "control");
    TU_CHECK(pl_vocab_token_type(a.m, 65) == PL_TOKEN_NORMAL, "normal");
    TU_CHECK(pl_vocab_token_type(a.m, 1000) == PL_TOKEN_INVALID, "out of range");
    TU_CHECK(pl_vocab_bos(a.m) == 997 && pl_vocab_eos(a.m) == 999 && pl_vocab_pad(a.m) == 997,
             "bos %d eos %d pad %d", pl_vocab_bos(a.m), pl_vocab_eos(a.m), pl_vocab_pad(a.m));
    TU_CHECK(pl_vocab_unk(a.m) == -1, "no unk");
    close_model(&a);
    TU_CHECK(pl_vocab_n_tokens(NULL) == 0 && pl_vocab_bos(NULL) == -1, "NULL model");
}

static void api_chat_renders_with_the_models_template_and_tokens(void)
{
    static const pl_chat_message msgs[] = {{"user", "Hi!"}};
    static const struct {
        int kind;
        const char *name, *text;
    } want[] = {
        {DEMO_VOCAB_SPM, "llama2", "<s>[INST] Hi! [/INST]"},
        {DEMO_VOCAB_BPE, "qwen2",
         "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi!"
         "<|im_end|>\n<|im_start|>assistant\n"},
        {DEMO_VOCAB_BPE_LLAMA3, "llama3",
         "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
         "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    };
    for (int i = 0; i < 3; i++) {
        api_model a;
        pl_error err;
        TU_CHECK(open_model(&a, want[i].kind, 1000, 1, &err) == PL_OK, "%s", err.msg);
        /* the model's template compiled at load; a built-in renders exactly that source */
        const char *src = NULL, *name = NULL;
        size_t src_len = 0;
        TU_CHECK(pl_model_chat_template(a.m, &src, &src_len, &err) == PL_OK && src && src_len > 0,
                 "%s: %s", want[i].name, err.msg);
        TU_CHECK(pl_chat_template_detect(src, src_len, &name, &err) == PL_OK && name &&
                     strcmp(name, want[i].name) == 0,
                 "template %s", name ? name : err.msg);
        char buf[512];
        size_t len;
        TU_CHECK(pl_chat_render(a.m, NULL, msgs, 1, 1, buf, sizeof buf, &len, &err) == PL_OK &&
                     len == strlen(want[i].text) && memcmp(buf, want[i].text, len) == 0,
                 "%s: '%.*s'", want[i].name, (int)len, buf);
        /* the rendered prompt tokenizes with its control tokens parsed */
        int32_t ids[256];
        size_t n;
        TU_CHECK(pl_tokenize(a.m, buf, len, PL_TOKENIZE_PARSE_SPECIAL, ids, 256, &n, &err) == PL_OK,
                 "%s", err.msg);
        TU_CHECK(pl_vocab_token_type(a.m, ids[0]) == PL_TOKEN_CONTROL,
                 "%s: starts with a control "
                 "token",
                 want[i].name);
        close_model(&a);
    }
}

static void api_model_without_tokenizer_is_not_found(void)
{
    api_model a;
    pl_error err;
    pl_status s = open_model(&a, 0, 0, 0, &err);
    TU_CHECK(s == PL_ERR_NOT_FOUND && tf_mentions(err.msg, "tokenizer.ggml.model"),
             "vocab-only load of a file without a tokenizer: %s: %s", pl_status_str(s), err.msg);
    TU_CHECK(a.m == NULL, "no model");
    close_model(&a);
    int32_t ids[4];
    size_t n;
    TU_CHECK(pl_tokenize(NULL, "a", 1, 0, ids, 4, &n, &err) == PL_ERR_INVALID_ARG, "NULL model");
}

int main(void)
{
    static const tu_test tests[] = {
        {"api_tokenize_round_trips_through_the_model", api_tokenize_round_trips_through_the_model},
        {"api_vocab_getters_report_the_special_tokens",
         api_vocab_getters_report_the_special_tokens},
        {"api_chat_renders_with_the_models_template_and_tokens",
         api_chat_renders_with_the_models_template_and_tokens},
        {"api_model_without_tokenizer_is_not_found", api_model_without_tokenizer_is_not_found},
        {NULL, NULL},
    };
    return tu_run("tokenizer_api", tests);
}
