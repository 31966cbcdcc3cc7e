/* test_jinja_harmony.c — gpt-oss (the harmony format) end to end through a GGUF: a vocabulary laid
 * out as llama.cpp's converter writes gpt-oss's (o200k_base's 199998 pieces, the 21 harmony
 * tokens at 199998..200018 as control tokens, [PAD<i>] up to the model's 201088 rows; bos
 * <|startoftext|>, eos <|return|>, pad <|endoftext|>, no eot key) with tokenizer.chat_template set
 * to the model's template (conformance/jinja/templates/gpt-oss.jinja), loaded vocab-only:
 * - the chat path takes the GGUF's template (the Jinja engine, no built-in) and renders every
 *   conversation of the corpus as jinja2 did (expected/gpt-oss/, the date being today's), or
 *   fails where jinja2 raised;
 * - the end-of-generation set is llama.cpp's for gpt-oss: <|return|>, <|call|> and
 *   <|endoftext|>, not <|end|> (it closes every message, analysis included; with <|return|> and
 *   <|call|> present it is not an end, though it is the eot token);
 * - the rendered prompt tokenizes with each harmony token as one control id.
 * The pieces below 199998 are placeholders (the ids and roles are what is under test here; the
 * real o200k merges are tokparity_gptoss's). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "tokfix.h"

#ifndef PLUMB_JINJA_CORPUS
#error "PLUMB_JINJA_CORPUS must name conformance/jinja"
#endif

#define N_VOCAB   201088 /* gpt-oss's embedding rows */
#define N_BASE    199998 /* o200k_base's mergeable ranks */
#define N_HARMONY 21     /* 199998 <|startoftext|> .. 200018 <|endofprompt|> */

/* The harmony tokens of gpt-oss's tokenizer.json, in id order from 199998. */
static const char *const harmony[N_HARMONY] = {"<|startoftext|>",
                                               "<|endoftext|>",
                                               "<|reserved_200000|>",
                                               "<|reserved_200001|>",
                                               "<|return|>",
                                               "<|constrain|>",
                                               "<|reserved_200004|>",
                                               "<|channel|>",
                                               "<|start|>",
                                               "<|end|>",
                                               "<|message|>",
                                               "<|reserved_200009|>",
                                               "<|reserved_200010|>",
                                               "<|reserved_200011|>",
                                               "<|call|>",
                                               "<|reserved_200013|>",
                                               "<|reserved_200014|>",
                                               "<|reserved_200015|>",
                                               "<|reserved_200016|>",
                                               "<|reserved_200017|>",
                                               "<|endofprompt|>"};
enum {
    ID_STARTOFTEXT = 199998,
    ID_ENDOFTEXT = 199999,
    ID_RETURN = 200002,
    ID_CHANNEL = 200005,
    ID_START = 200006,
    ID_END = 200007,
    ID_MESSAGE = 200008,
    ID_CALL = 200012,
};

typedef struct harmony_model {
    void *bytes;
    size_t size;
    pl_model *m;
} harmony_model;

/* Writes the gpt-oss-shaped vocabulary (with tmpl as its chat template unless NULL) and loads it
 * vocab-only. */
static pl_status harmony_open(harmony_model *h, const char *tmpl, size_t tmpl_len, pl_error *err)
{
    memset(h, 0, sizeof *h);
    char **text = malloc(N_VOCAB * sizeof *text);
    const char **toks = malloc(N_VOCAB * sizeof *toks);
    int32_t *types = malloc(N_VOCAB * sizeof *types);
    if (!text || !toks || !types) abort();
    for (int i = 0; i < N_VOCAB; i++) {
        text[i] = malloc(24);
        if (!text[i]) abort();
        if (i < 256) {
            char c = (char)i;
            tf_gpt2(&c, 1, text[i]);
            types[i] = PL_TOKEN_NORMAL;
        } else if (i == 256) {
            snprintf(text[i], 24, "\xc4\xa0\xc4\xa0"); /* "ĠĠ", o200k's first merge */
            types[i] = PL_TOKEN_NORMAL;
        } else if (i < N_BASE) {
            snprintf(text[i], 24, "x%d", i);
            types[i] = PL_TOKEN_NORMAL;
        } else if (i < N_BASE + N_HARMONY) {
            snprintf(text[i], 24, "%s", harmony[i - N_BASE]);
            types[i] = PL_TOKEN_CONTROL;
        } else {
            snprintf(text[i], 24, "[PAD%d]", i); /* convert_hf_to_gguf's padding rows */
            types[i] = PL_TOKEN_UNUSED;
        }
        toks[i] = text[i];
    }
    static const char *const merges[] = {"\xc4\xa0 \xc4\xa0"};
    pl_gguf_writer *w = tf_writer();
    tf_str(w, "general.architecture", "gpt-oss");
    tf_str(w, "tokenizer.ggml.model", "gpt2");
    tf_str(w, "tokenizer.ggml.pre", "gpt-4o");
    tf_strs(w, "tokenizer.ggml.tokens", toks, N_VOCAB);
    tf_i32s(w, "tokenizer.ggml.token_type", types, N_VOCAB);
    tf_strs(w, "tokenizer.ggml.merges", merges, 1);
    tf_u32(w, "tokenizer.ggml.bos_token_id", ID_STARTOFTEXT);
    tf_u32(w, "tokenizer.ggml.eos_token_id", ID_RETURN);
    tf_u32(w, "tokenizer.ggml.padding_token_id", ID_ENDOFTEXT);
    if (tmpl && pl_gguf_writer_set_string(w, "tokenizer.chat_template", tmpl, tmpl_len, err))
        abort();
    for (int i = 0; i < N_VOCAB; i++) free(text[i]);
    free(text);
    free(toks);
    free(types);
    if (pl_gguf_writer_write_memory(w, &h->bytes, &h->size, err)) abort();
    pl_gguf_writer_free(w);
    pl_model_params p = {.flags = PL_MODEL_VOCAB_ONLY};
    return pl_model_load_memory(&h->m, h->bytes, h->size, &p, err);
}

static void harmony_close(harmony_model *h)
{
    pl_model_free(h->m);
    pl_buffer_free(h->bytes);
}

static void harmony_end_of_generation_is_return_call_endoftext(void)
{
    harmony_model h;
    pl_error err;
    TU_CHECK(harmony_open(&h, NULL, 0, &err) == PL_OK, "load: %s", err.msg);
    if (!h.m) return;
    TU_CHECK(pl_vocab_n_tokens(h.m) == N_VOCAB, "n_tokens %d", pl_vocab_n_tokens(h.m));
    TU_CHECK(pl_vocab_eos(h.m) == ID_RETURN && pl_vocab_bos(h.m) == ID_STARTOFTEXT, "eos %d bos %d",
             pl_vocab_eos(h.m), pl_vocab_bos(h.m));
    /* llama.cpp: eot is found by name (<|end|>), but with <|return|> and <|call|> present it is
     * taken out of the end-of-generation set */
    TU_CHECK(pl_vocab_eot(h.m) == ID_END, "eot %d", pl_vocab_eot(h.m));
    int n_eog = 0;
    for (int32_t id = 0; id < N_VOCAB; id++) n_eog += pl_vocab_is_eog(h.m, id);
    TU_CHECK(n_eog == 3, "%d end-of-generation ids (want 3)", n_eog);
    TU_CHECK(pl_vocab_is_eog(h.m, ID_RETURN), "<|return|> ends a generation");
    TU_CHECK(pl_vocab_is_eog(h.m, ID_CALL), "<|call|> ends a generation");
    TU_CHECK(pl_vocab_is_eog(h.m, ID_ENDOFTEXT), "<|endoftext|> ends a generation");
    TU_CHECK(!pl_vocab_is_eog(h.m, ID_END), "<|end|> does not end a generation");
    TU_CHECK(!pl_vocab_is_eog(h.m, ID_CHANNEL) && !pl_vocab_is_eog(h.m, ID_START) &&
                 !pl_vocab_is_eog(h.m, ID_MESSAGE) && !pl_vocab_is_eog(h.m, ID_STARTOFTEXT),
             "the other harmony tokens do not end one");
    harmony_close(&h);
}

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n > k && strcmp(s + n - k, suf) == 0;
}

/* want with every "Current date: 2024-07-14" (render.py's fixed clock) as date. */
static char *with_date(const char *want, size_t len, const char *date, size_t *out_len)
{
    static const char fixed[] = "Current date: 2024-07-14";
    char *out = malloc(len + 1);
    if (!out) abort();
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        if (len - i >= sizeof fixed - 1 && memcmp(want + i, fixed, sizeof fixed - 1) == 0) {
            memcpy(out + o, "Current date: ", 14);
            memcpy(out + o + 14, date, 10);
            o += 24, i += sizeof fixed - 1;
        } else {
            out[o++] = want[i++];
        }
    }
    *out_len = o;
    return out;
}

static void today(char date[11])
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, 11, "%Y-%m-%d", &tm);
}

static void harmony_chat_path_renders_the_ggufs_template_as_jinja2(void)
{
    size_t tmpl_len;
    char *tmpl = tu_read_file(PLUMB_JINJA_CORPUS "/templates/gpt-oss.jinja", &tmpl_len);
    TU_CHECK(tmpl != NULL, "gpt-oss.jinja unreadable");
    if (!tmpl) return;
    harmony_model h;
    pl_error err;
    TU_CHECK(harmony_open(&h, tmpl, tmpl_len, &err) == PL_OK, "load: %s", err.msg);
    if (!h.m) {
        free(tmpl);
        return;
    }
    const char *src = NULL, *name = NULL;
    size_t src_len = 0;
    TU_CHECK(pl_model_chat_template(h.m, &src, &src_len, &err) == PL_OK && src_len == tmpl_len &&
                 memcmp(src, tmpl, tmpl_len) == 0,
             "the GGUF's template, byte for byte: %s", err.msg);
    TU_CHECK(pl_chat_template_detect(tmpl, tmpl_len, &name, &err) == PL_ERR_NOT_FOUND,
             "no built-in claims it (%s)", name ? name : "-");
    TU_CHECK(pl_chat_template_knows_role(h.m, NULL, "developer"), "its developer role");

    DIR *d = opendir(PLUMB_JINJA_CORPUS "/conversations");
    TU_CHECK(d != NULL, "conversations/");
    size_t same = 0, raised = 0, n_conv = 0, n_harmony_tokens = 0;
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!buf || !ids) abort();
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!has_suffix(e->d_name, ".json")) continue;
        char conv[256], path[512];
        snprintf(conv, sizeof conv, "%.*s", (int)(strlen(e->d_name) - 5), e->d_name);
        snprintf(path, sizeof path, "%s/conversations/%s", PLUMB_JINJA_CORPUS, e->d_name);
        size_t json_len;
        char *json = tu_read_file(path, &json_len);
        TU_CHECK(json != NULL, "%s", path);
        if (!json) continue;
        n_conv++;
        /* the conversation's own add_generation_prompt: the JSON's value wins only when the
         * argument agrees, so read it */
        int agp = strstr(json, "\"add_generation_prompt\": true") != NULL;
        snprintf(path, sizeof path, "%s/expected/gpt-oss/%s.txt", PLUMB_JINJA_CORPUS, conv);
        size_t want_len;
        char *want = tu_read_file(path, &want_len);
        char d0[11], d1[11];
        size_t n = 0;
        pl_status s;
        do { /* the template reads today's date: render again if midnight passed meanwhile */
            today(d0);
            s = pl_chat_render_json(h.m, NULL, json, json_len, agp, buf, cap - 1, &n, &err);
            today(d1);
        } while (strcmp(d0, d1) != 0);
        if (want) {
            size_t exp_len;
            char *exp = with_date(want, want_len, d0, &exp_len);
            int eq = s == PL_OK && n == exp_len && memcmp(buf, exp, n) == 0;
            TU_CHECK(eq, "%s: %s", conv, s ? err.msg : "differs from jinja2");
            same += eq;
            if (eq) {       /* every harmony token of the prompt is one control id */
                buf[n] = 0; /* the render is not NUL-terminated */
                size_t n_ids = 0;
                TU_CHECK(pl_tokenize(h.m, buf, n, PL_TOKENIZE_PARSE_SPECIAL, ids, cap, &n_ids,
                                     &err) == PL_OK,
                         "%s: tokenize: %s", conv, err.msg);
                size_t starts = 0, ends = 0;
                for (const char *p = buf; (p = strstr(p, "<|start|>")); p++) starts++;
                for (const char *p = buf; (p = strstr(p, "<|end|>")); p++) ends++;
                size_t got_starts = 0, got_ends = 0;
                for (size_t i = 0; i < n_ids; i++) {
                    got_starts += ids[i] == ID_START;
                    got_ends += ids[i] == ID_END;
                    n_harmony_tokens += ids[i] >= N_BASE && ids[i] < N_BASE + N_HARMONY;
                }
                TU_CHECK(starts > 0 && got_starts == starts && got_ends == ends,
                         "%s: <|start|> %zu/%zu, <|end|> %zu/%zu", conv, got_starts, starts,
                         got_ends, ends);
            }
            free(exp);
        } else {
            snprintf(path, sizeof path, "%s/expected/gpt-oss/%s.error", PLUMB_JINJA_CORPUS, conv);
            FILE *f = fopen(path, "rb");
            TU_CHECK(f != NULL, "%s: no expected output", conv);
            if (f) fclose(f);
            TU_CHECK(s == PL_ERR_INVALID_ARG && strstr(err.msg, "line ") != NULL,
                     "%s: jinja2 raised; plumb: %s %s", conv, pl_status_str(s),
                     s ? err.msg : "rendered");
            raised += s == PL_ERR_INVALID_ARG;
        }
        free(want);
        free(json);
    }
    if (d) closedir(d);
    TU_CHECK(n_conv >= 22 && same + raised == n_conv, "%zu conversations: %zu same, %zu raised",
             n_conv, same, raised);
    printf("\n  gpt-oss from a GGUF: %zu conversations, %zu byte-identical to jinja2, %zu raise "
           "in both; %zu harmony control ids in the prompts\n",
           n_conv, same, raised, n_harmony_tokens);
    free(buf);
    free(ids);
    harmony_close(&h);
    free(tmpl);
}

int main(void)
{
    static const tu_test tests[] = {
        {"harmony_end_of_generation_is_return_call_endoftext",
         harmony_end_of_generation_is_return_call_endoftext},
        {"harmony_chat_path_renders_the_ggufs_template_as_jinja2",
         harmony_chat_path_renders_the_ggufs_template_as_jinja2},
        {NULL, NULL},
    };
    return tu_run("jinja_harmony", tests);
}
