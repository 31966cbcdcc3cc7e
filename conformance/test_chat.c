/* test_chat.c — chat templates: each built-in renderer produces, byte for byte, the text its
 * model's Jinja template renders, and each official template text is recognised. Not the
 * session prefix cache. The expected strings were written out from the official templates and
 * confirmed by rendering those templates with jinja2 3.1 on the same messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static const char *const qwen25_tmpl =
    "{%- if tools %}...{%- else %}{%- if messages[0]['role'] == 'system' %}{{- "
    "'<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}{%- else %}{{- "
    "'<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}{%- endif %}{%- endif %}...";
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
static const char *const llama31_tmpl =
    "{{- bos_token }}{%- if not date_string is defined %}{%- set date_string = \"26 Jul 2024\" %}"
    "{%- endif %}{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}{{- \"Cutting "
    "Knowledge Date: December 2023\\n\" }}<|eot_id|>";
static const char *const mistral_v3_tmpl =
    "{{- bos_token }}{%- for message in loop_messages %}{%- if message[\"role\"] == \"user\" %}{{- "
    "\"[INST] \" + message[\"content\"] + \"[/INST]\" }}{%- endif %}{%- endfor %}";

static void detect(const char *tmpl, const char *want, int line)
{
    const char *name = "untouched";
    pl_error err;
    pl_status s = pl_chat_template_detect(tmpl, strlen(tmpl), &name, &err);
    if (want) {
        TU_CHECK(s == PL_OK && name && strcmp(name, want) == 0, "line %d: %s -> %s (%s)", line,
                 want, name ? name : "NULL", err.msg);
    } else {
        TU_CHECK(s == PL_ERR_UNSUPPORTED && name == NULL &&
                     tf_mentions(err.msg, "chatml, qwen2, qwen2.5, llama3, llama2, mistral"),
                 "line %d: %s: %s", line, pl_status_str(s), err.msg);
    }
}

static void detect_recognises_official_templates(void)
{
    detect(chatml_tmpl, "chatml", __LINE__);
    detect(qwen25_tmpl, "qwen2.5", __LINE__);
    detect(mistral_tmpl, "mistral", __LINE__);
    detect("llama3", "llama3", __LINE__); /* a name is accepted as itself */
    /* the demo vocabularies carry the official Qwen2, Llama 3 and Llama 2 templates */
    static const char *const want[] = {"llama2", "qwen2", "llama3"};
    for (int kind = 0; kind <= 2; kind++) {
        tf_file f;
        pl_error err;
        TU_CHECK(tf_demo(&f, kind, 600, &err) == PL_OK, "demo: %s", err.msg);
        pl_str t;
        TU_CHECK(pl_gguf_get_string(f.g, "tokenizer.chat_template", &t, &err) == PL_OK, "%s",
                 err.msg);
        const char *name = NULL;
        TU_CHECK(pl_chat_template_detect(t.ptr, (size_t)t.len, &name, &err) == PL_OK && name &&
                     strcmp(name, want[kind]) == 0,
                 "kind %d -> %s, want %s", kind, name ? name : "NULL", want[kind]);
        tf_close(&f);
    }
}

static void detect_rejects_unknown_templates_listing_known_names(void)
{
    detect("{{ messages }}", NULL, __LINE__);
    detect(llama31_tmpl, NULL, __LINE__);
    detect(mistral_v3_tmpl, NULL, __LINE__);
    detect("<|im_start|>{{ x }}<think>", NULL, __LINE__);
    detect("", NULL, __LINE__);
    const char *name;
    pl_error err;
    pl_chat_template_detect(llama31_tmpl, strlen(llama31_tmpl), &name, &err);
    TU_CHECK(tf_mentions(err.msg, "Llama 3.1"), "says why: %s", err.msg);
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
        {"detect_recognises_official_templates", detect_recognises_official_templates},
        {"detect_rejects_unknown_templates_listing_known_names",
         detect_rejects_unknown_templates_listing_known_names},
        {NULL, NULL},
    };
    return tu_run("chat", tests);
}
