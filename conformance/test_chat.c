/* test_chat.c — the built-in chat templates: each renders, byte for byte, what the real Jinja
 * templates it is named after render through the Jinja engine (whose corpus test proves it equal
 * to Python's jinja2), and detection names a built-in for those exact sources only. Not the
 * session prefix cache. The expected strings were written out from the official templates and
 * confirmed by rendering those templates with jinja2 3.1 on the same messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "demo_vocab.h"
#include "jinja/jinja.h"
#include "tokenizer/template.h"
#include "testutil.h"
#include "tokfix.h"

static const pl_chat_message with_system[] = {
    {"system", "You are terse."},
    {"user", "Hi!"},
    {"assistant", "Hello."},
    {"user", "2+2?"},
};
static const pl_chat_message no_system[] = {
    {"user", "Hi!"},
    {"assistant", " Hello. "},
    {"user", "2+2?"},
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Renders with the default BOS/EOS texts and compares with want. */
static void expect(const char *name, const pl_chat_message *m, size_t n, int gen, const char *want,
                   int line)
{
    char buf[2048];
    size_t len = 0;
    pl_error err;
    pl_status s =
        pl_chat_render_named(name, NULL, 0, NULL, 0, m, n, gen, buf, sizeof buf, &len, &err);
    TU_CHECK(s == PL_OK, "line %d: %s: %s", line, name, err.msg);
    int same = s == PL_OK && len == strlen(want) && memcmp(buf, want, len) == 0;
    if (!same && s == PL_OK)
        fprintf(stderr, "  line %d %s:\n    got  \"%.*s\"\n    want \"%s\"\n", line, name, (int)len,
                buf, want);
    TU_CHECK(same, "line %d: %s renders differently", line, name);
}
#define EXPECT(name, msgs, gen, want) expect(name, msgs, N(msgs), gen, want, __LINE__)

static void chatml_renders_every_message_and_the_generation_prompt(void)
{
    EXPECT("chatml", with_system, 1,
           "<|im_start|>system\nYou are terse.<|im_end|>\n"
           "<|im_start|>user\nHi!<|im_end|>\n"
           "<|im_start|>assistant\nHello.<|im_end|>\n"
           "<|im_start|>user\n2+2?<|im_end|>\n"
           "<|im_start|>assistant\n");
    EXPECT("chatml", no_system, 0,
           "<|im_start|>user\nHi!<|im_end|>\n"
           "<|im_start|>assistant\n Hello. <|im_end|>\n"
           "<|im_start|>user\n2+2?<|im_end|>\n");
    char buf[64];
    size_t len;
    pl_error err;
    TU_CHECK(pl_chat_render_named("chatml", NULL, 0, NULL, 0, NULL, 0, 1, buf, sizeof buf, &len,
                                  &err) == PL_OK &&
                 len == 22 && memcmp(buf, "<|im_start|>assistant\n", 22) == 0,
             "no messages: only the generation prompt");
}

static void qwen2_adds_its_default_system_message(void)
{
    EXPECT("qwen2", no_system, 1,
           "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
           "<|im_start|>user\nHi!<|im_end|>\n"
           "<|im_start|>assistant\n Hello. <|im_end|>\n"
           "<|im_start|>user\n2+2?<|im_end|>\n"
           "<|im_start|>assistant\n");
    EXPECT("qwen2", with_system, 0,
           "<|im_start|>system\nYou are terse.<|im_end|>\n"
           "<|im_start|>user\nHi!<|im_end|>\n"
           "<|im_start|>assistant\nHello.<|im_end|>\n"
           "<|im_start|>user\n2+2?<|im_end|>\n");
    EXPECT("qwen2.5", no_system, 1,
           "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
           "assistant.<|im_end|>\n"
           "<|im_start|>user\nHi!<|im_end|>\n"
           "<|im_start|>assistant\n Hello. <|im_end|>\n"
           "<|im_start|>user\n2+2?<|im_end|>\n"
           "<|im_start|>assistant\n");
}

static void qwen25_rejects_tool_messages(void)
{
    static const pl_chat_message m[] = {{"user", "x"}, {"tool", "{}"}};
    char buf[512];
    size_t len;
    pl_error err;
    pl_status s =
        pl_chat_render_named("qwen2.5", NULL, 0, NULL, 0, m, 2, 1, buf, sizeof buf, &len, &err);
    TU_CHECK(s == PL_ERR_UNSUPPORTED && tf_mentions(err.msg, "'tool'"), "%s: %s", pl_status_str(s),
             err.msg);
}

static void llama3_trims_content_and_writes_bos_once(void)
{
    EXPECT("llama3", with_system, 1,
           "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT("llama3", no_system, 0,
           "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>");
    /* Jinja's trim is Python's str.strip(): Unicode whitespace (U+3000, U+00A0, \x1c) goes too,
     * U+200B (not whitespace) stays. */
    static const pl_chat_message u[] = {{"user", "\xe3\x80\x80\xc2\xa0 hi \x1c\n"},
                                        {"assistant", "\xe2\x80\x8bok"}};
    EXPECT("llama3", u, 0,
           "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n\xe2\x80\x8bok<|eot_id|>");
}

static void llama2_folds_the_system_message_into_the_first_turn(void)
{
    EXPECT("llama2", with_system, 1,
           "<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi! [/INST] Hello. </s>"
           "<s>[INST] 2+2? [/INST]");
    EXPECT("llama2", no_system, 0, "<s>[INST] Hi! [/INST] Hello. </s><s>[INST] 2+2? [/INST]");
    /* .strip() applies to the system block plus the user text: an all-blank user message strips
     * back into the block. */
    static const pl_chat_message blank[] = {{"system", "S"}, {"user", " \n "}};
    EXPECT("llama2", blank, 1, "<s>[INST] <<SYS>>\nS\n<</SYS>> [/INST]");
}

static void llama2_and_mistral_reject_roles_that_do_not_alternate(void)
{
    static const pl_chat_message m[] = {{"user", "a"}, {"user", "b"}};
    char buf[512];
    size_t len;
    pl_error err;
    pl_status s =
        pl_chat_render_named("llama2", NULL, 0, NULL, 0, m, 2, 1, buf, sizeof buf, &len, &err);
    TU_CHECK(s == PL_ERR_INVALID_ARG && tf_mentions(err.msg, "alternate") &&
                 tf_mentions(err.msg, "message 1"),
             "llama2: %s: %s", pl_status_str(s), err.msg);
    s = pl_chat_render_named("mistral", NULL, 0, NULL, 0, m, 2, 1, buf, sizeof buf, &len, &err);
    TU_CHECK(s == PL_ERR_INVALID_ARG && tf_mentions(err.msg, "alternate"), "mistral: %s: %s",
             pl_status_str(s), err.msg);
    static const pl_chat_message tool[] = {{"user", "a"}, {"tool", "b"}};
    s = pl_chat_render_named("mistral", NULL, 0, NULL, 0, tool, 2, 1, buf, sizeof buf, &len, &err);
    TU_CHECK(s == PL_ERR_INVALID_ARG && tf_mentions(err.msg, "Only user and assistant roles"),
             "mistral tool: %s", err.msg);
}

static void mistral_v1_spaces_and_system_prefix(void)
{
    EXPECT("mistral", with_system, 1,
           "<s> [INST] You are terse.\n\nHi! [/INST] Hello.</s> [INST] 2+2? [/INST]");
    EXPECT("mistral", no_system, 1, "<s> [INST] Hi! [/INST]  Hello. </s> [INST] 2+2? [/INST]");
}

static void render_uses_the_given_bos_and_eos_texts(void)
{
    char buf[256];
    size_t len;
    pl_error err;
    pl_status s = pl_chat_render_named("llama2", "<B>", 3, "<E>", 3, no_system, N(no_system), 1,
                                       buf, sizeof buf, &len, &err);
    static const char want[] = "<B>[INST] Hi! [/INST] Hello. <E><B>[INST] 2+2? [/INST]";
    TU_CHECK(s == PL_OK && len == sizeof want - 1 && memcmp(buf, want, len) == 0, "%.*s", (int)len,
             buf);
}

static void render_too_small_buffer_says_size(void)
{
    char buf[8] = "xxxxxxx";
    size_t len;
    pl_error err;
    pl_status s = pl_chat_render_named("chatml", NULL, 0, NULL, 0, no_system, N(no_system), 1, buf,
                                       4, &len, &err);
    TU_CHECK(s == PL_ERR_BUFFER_TOO_SMALL && len > 4 && buf[4] == 'x', "%s len %zu",
             pl_status_str(s), len);
    char num[32];
    snprintf(num, sizeof num, "%zu bytes", len);
    TU_CHECK(tf_mentions(err.msg, num), "message '%s' lacks '%s'", err.msg, num);
}

static void render_rejects_unknown_names_listing_known_ones(void)
{
    char buf[64];
    size_t len;
    pl_error err;
    pl_status s = pl_chat_render_named("vicuna", NULL, 0, NULL, 0, no_system, 1, 1, buf, sizeof buf,
                                       &len, &err);
    TU_CHECK(s == PL_ERR_NOT_FOUND && tf_mentions(err.msg, "vicuna") &&
                 tf_mentions(err.msg, "chatml, qwen2, qwen2.5, llama3, llama2, mistral"),
             "%s: %s", pl_status_str(s), err.msg);
    static const pl_chat_message bad[] = {{"user", NULL}};
    s = pl_chat_render_named("chatml", NULL, 0, NULL, 0, bad, 1, 1, buf, sizeof buf, &len, &err);
    TU_CHECK(s == PL_ERR_INVALID_ARG && tf_mentions(err.msg, "message 0"), "NULL content: %s",
             err.msg);
    s = pl_chat_render(NULL, NULL, no_system, 1, 1, buf, sizeof buf, &len, &err);
    TU_CHECK(s == PL_ERR_INVALID_ARG, "no name and no model");
    const char *const *names = pl_chat_template_names();
    int count = 0;
    while (names[count]) count++;
    TU_CHECK(count == 6, "%d names", count);
}

/* Official template texts (tokenizer_config.json) and what they are recognised as. */
static const char *const chatml_tmpl =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\\n' "
    "}}{% endif %}";
static const char *const mistral_tmpl =
    "{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] %}"
    "{%- set loop_messages = messages[1:] %}{%- else %}{%- set loop_messages = messages %}{%- "
    "endif %}{{- bos_token }}{%- for message in loop_messages %}{%- if (message['role'] == 'user') "
    "!= (loop.index0 % 2 == 0) %}{{- raise_exception('After the optional system message, "
    "conversation roles must alternate user/assistant/user/assistant/...') }}{%- endif %}{%- if "
    "message['role'] == 'user' %}{%- if loop.first and system_message is defined %}{{- ' [INST] ' "
    "+ "
    "system_message + '\\n\\n' + message['content'] + ' [/INST]' }}{%- else %}{{- ' [INST] ' + "
    "message['content'] + ' [/INST]' }}{%- endif %}{%- elif message['role'] == 'assistant' %}{{- ' "
    "' + message['content'] + eos_token}}{%- else %}{{- raise_exception('Only user and assistant "
    "roles are supported, with the exception of an initial optional system message!') }}{%- endif "
    "%}{%- endfor %}";

/* ---- each built-in against the real templates it claims to be ---- */

static char *slurp(const char *name, size_t *n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/templates/%s", PLUMB_JINJA_CORPUS, name);
    return tu_read_file(path, n);
}

/* A built-in and one source it must render byte for byte: a literal, a demo vocabulary's
 * template (the official Qwen2 / Llama 3 / Llama 2 texts), or a corpus file. */
typedef struct claim {
    const char *name;
    const char *literal;
    int demo; /* demo vocabulary kind + 1, or 0 */
    const char *file;
} claim;

static const claim claims[] = {
    {"chatml", chatml_tmpl, 0, NULL},
    {"qwen2", NULL, DEMO_VOCAB_BPE + 1, NULL},
    {"qwen2.5", NULL, 0, "qwen2.5.jinja"},
    {"llama3", NULL, DEMO_VOCAB_BPE_LLAMA3 + 1, NULL},
    {"llama3", NULL, 0, "llama-3.1-lenml.jinja"},
    {"llama2", NULL, DEMO_VOCAB_SPM + 1, NULL},
    {"mistral", mistral_tmpl, 0, NULL},
};
#define N_CLAIMS (sizeof claims / sizeof claims[0])

/* The claim's source, malloc'd. */
static char *claim_source(const claim *c, size_t *n)
{
    if (c->literal) {
        *n = strlen(c->literal);
        return strdup(c->literal);
    }
    if (c->file) return slurp(c->file, n);
    tf_file f;
    pl_error err;
    char *out = NULL;
    if (tf_demo(&f, c->demo - 1, 600, &err) != PL_OK) return NULL;
    pl_str t;
    if (pl_gguf_get_string(f.g, "tokenizer.chat_template", &t, &err) == PL_OK &&
        (out = malloc((size_t)t.len + 1))) {
        memcpy(out, t.ptr, (size_t)t.len);
        out[t.len] = 0;
        *n = (size_t)t.len;
    }
    tf_close(&f);
    return out;
}

/* Role-and-content conversations: with and without a system message, whitespace at the edges,
 * a blank user turn, roles that do not alternate, a tool message, non-ASCII and quotes, the
 * assistant last, only a system message, none at all. */
static const pl_chat_message c_blank[] = {{"system", "S"}, {"user", " \n "}};
static const pl_chat_message c_edges[] = {
    {"user", " Hi! "}, {"assistant", " Hello. \n"}, {"user", "\t2+2?\n"}};
static const pl_chat_message c_twice[] = {{"user", "a"}, {"user", "b"}};
static const pl_chat_message c_tool[] = {{"user", "x"}, {"tool", "{}"}};
static const pl_chat_message c_text[] = {{"system", "\xe3\x80\x80sys "},
                                         {"user", "h\xc3\xa9llo \"q\" \\ \xe2\x80\x8b"}};
static const pl_chat_message c_last[] = {{"user", "x"}, {"assistant", "y"}};
static const pl_chat_message c_sys[] = {{"system", "only"}};
static const struct {
    const pl_chat_message *m;
    size_t n;
} convs[] = {
    {with_system, N(with_system)},
    {no_system, N(no_system)},
    {c_blank, N(c_blank)},
    {c_edges, N(c_edges)},
    {c_twice, N(c_twice)},
    {c_tool, N(c_tool)},
    {c_text, N(c_text)},
    {c_last, N(c_last)},
    {c_sys, N(c_sys)},
    {NULL, 0},
};

/* The claim's source through the Jinja engine: transformers' variables for these messages. */
static pl_status jinja_render(const pl_jinja_template *t, const pl_chat_message *m, size_t n,
                              int gen, const char *bos, const char *eos, char **out, size_t *len,
                              pl_error *err)
{
    json_t *ctx = json_object(), *msgs = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(msgs,
                              json_pack("{s:s,s:s}", "role", m[i].role, "content", m[i].content));
    json_object_set_new(ctx, "messages", msgs);
    json_object_set_new(ctx, "add_generation_prompt", json_boolean(gen));
    json_object_set_new(ctx, "bos_token", json_string(bos));
    json_object_set_new(ctx, "eos_token", json_string(eos));
    json_object_set_new(ctx, "tools", json_null());
    json_object_set_new(ctx, "documents", json_null());
    pl_status s = pl_jinja_render(t, ctx, NULL, out, len, err);
    json_decref(ctx);
    return s;
}

static void built_ins_render_their_templates_byte_for_byte(void)
{
    for (size_t k = 0; k < N_CLAIMS; k++) {
        const claim *c = &claims[k];
        size_t src_len = 0;
        char *src = claim_source(c, &src_len);
        TU_CHECK(src != NULL, "claim %zu (%s): no source", k, c->name);
        if (!src) continue;
        pl_jinja_template *t = NULL;
        pl_error err;
        TU_CHECK(pl_jinja_compile(src, src_len, &t, &err) == PL_OK, "claim %zu: %s", k, err.msg);
        const char *bos = strcmp(c->name, "llama3") == 0 ? "<|begin_of_text|>" : "<s>";
        const char *eos = strcmp(c->name, "llama3") == 0 ? "<|end_of_text|>" : "</s>";
        for (size_t v = 0; t && v < N(convs); v++)
            for (int gen = 0; gen <= 1; gen++) {
                char *want = NULL, got[2048];
                size_t want_len = 0, got_len = 0;
                pl_error je, be;
                pl_status js =
                    jinja_render(t, convs[v].m, convs[v].n, gen, bos, eos, &want, &want_len, &je);
                pl_status bs =
                    pl_chat_render_named(c->name, bos, strlen(bos), eos, strlen(eos), convs[v].m,
                                         convs[v].n, gen, got, sizeof got, &got_len, &be);
                /* a built-in renders role and content only: it may refuse what it does not
                 * take (PL_ERR_UNSUPPORTED: qwen2.5's tool messages), never render otherwise */
                if (bs == PL_ERR_UNSUPPORTED && js == PL_OK) {
                    pl_free(want);
                    continue;
                }
                TU_CHECK((js == PL_OK) == (bs == PL_OK),
                         "%s vs claim %zu, conversation %zu, gen %d: the template %s (%s), the "
                         "built-in %s (%s)",
                         c->name, k, v, gen, pl_status_str(js), js ? je.msg : "", pl_status_str(bs),
                         bs ? be.msg : "");
                if (!js && !bs) {
                    int same = want_len == got_len && memcmp(want, got, got_len) == 0;
                    TU_CHECK(same,
                             "%s vs claim %zu, conversation %zu, gen %d:\n  jinja    '%s'\n  "
                             "built-in '%.*s'",
                             c->name, k, v, gen, want, (int)got_len, got);
                }
                pl_free(want);
            }
        /* detection names the built-in for exactly this source */
        const char *name = NULL;
        TU_CHECK(pl_chat_template_detect(src, src_len, &name, &err) == PL_OK && name &&
                     strcmp(name, c->name) == 0,
                 "claim %zu (%s) is not detected: add {%zu, 0x%016llxull} to template.c", k,
                 c->name, src_len, (unsigned long long)pl_chat_template_fnv(src, src_len));
        pl_jinja_free(t);
        free(src);
    }
}

static void detect_names_no_built_in_for_any_other_template(void)
{
    /* the corpus templates no built-in is proven on (the chatml and mistral-instruct files are
     * stricter variants: they strip content and raise on roles; llama-2-chat is Llama 2's
     * template re-indented, so it renders the indentation too) */
    static const char *const others[] = {
        "chatml.jinja",       "mistral-instruct.jinja",
        "llama-3.jinja",      "llama-3.2.jinja",
        "qwen3.jinja",        "deepseek-r1-distill-qwen.jinja",
        "gemma-3.jinja",      "phi-3.5-mini.jinja",
        "mistral-nemo.jinja", "hermes-tool-use.jinja",
    };
    for (size_t i = 0; i < N(others); i++) {
        size_t n = 0;
        char *src = slurp(others[i], &n);
        TU_CHECK(src != NULL, "%s: missing", others[i]);
        if (!src) continue;
        const char *name = "untouched";
        pl_error err;
        pl_status s = pl_chat_template_detect(src, n, &name, &err);
        TU_CHECK(s == PL_ERR_NOT_FOUND && name == NULL && tf_mentions(err.msg, "Jinja engine"),
                 "%s: %s -> %s", others[i], pl_status_str(s), name ? name : "NULL");
        free(src);
    }
    /* one byte more than a proven source is another template */
    size_t n = strlen(chatml_tmpl);
    char *edited = malloc(n + 2);
    memcpy(edited, chatml_tmpl, n);
    edited[n] = ' ';
    const char *name = "untouched";
    TU_CHECK(pl_chat_template_detect(edited, n + 1, &name, NULL) == PL_ERR_NOT_FOUND && !name,
             "an edited ChatML template is not chatml");
    free(edited);
    TU_CHECK(pl_chat_template_detect("chatml", 6, &name, NULL) == PL_ERR_NOT_FOUND,
             "a name is not a template");
    TU_CHECK(pl_chat_template_detect(NULL, 0, &name, NULL) == PL_ERR_NOT_FOUND, "empty");
}

int main(void)
{
    static const tu_test tests[] = {
        {"chatml_renders_every_message_and_the_generation_prompt",
         chatml_renders_every_message_and_the_generation_prompt},
        {"qwen2_adds_its_default_system_message", qwen2_adds_its_default_system_message},
        {"qwen25_rejects_tool_messages", qwen25_rejects_tool_messages},
        {"llama3_trims_content_and_writes_bos_once", llama3_trims_content_and_writes_bos_once},
        {"llama2_folds_the_system_message_into_the_first_turn",
         llama2_folds_the_system_message_into_the_first_turn},
        {"llama2_and_mistral_reject_roles_that_do_not_alternate",
         llama2_and_mistral_reject_roles_that_do_not_alternate},
        {"mistral_v1_spaces_and_system_prefix", mistral_v1_spaces_and_system_prefix},
        {"render_uses_the_given_bos_and_eos_texts", render_uses_the_given_bos_and_eos_texts},
        {"render_too_small_buffer_says_size", render_too_small_buffer_says_size},
        {"render_rejects_unknown_names_listing_known_ones",
         render_rejects_unknown_names_listing_known_ones},
        {"built_ins_render_their_templates_byte_for_byte",
         built_ins_render_their_templates_byte_for_byte},
        {"detect_names_no_built_in_for_any_other_template",
         detect_names_no_built_in_for_any_other_template},
        {NULL, NULL},
    };
    return tu_run("chat", tests);
}
