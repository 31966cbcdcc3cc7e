/* fuzz_jinja.c — harness: the Jinja engine (engine/jinja) on hostile template source and
 * message data. Not a corpus check: what jinja2 renders is test_jinja_corpus's business; here
 * only the engine's own promises are checked.
 *
 * Input: the template source, then optionally a NUL byte and a JSON object (the render's
 * variables: messages, tools, add_generation_prompt...); without one, or when it does not
 * parse, a fixed conversation with a tool call is used. Oracles: compile and render are OK or
 * an error whose message names "line N, column M", with *out NULL; the limits are honoured
 * (small budgets: a render that loops or blows up ends in PL_ERR_LIMIT, so AFL++ sees no hang);
 * the output is at most max_output bytes of valid UTF-8; the same template renders the same
 * bytes twice, and again under a budget four times larger (limits never change what renders). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "jinja/jinja.h"

/* a real template whole, with one of its conversations: gpt-oss's is 16738 bytes */
#define MAX_INPUT 32768

static json_t *fixed_ctx;

static const char fixed_json[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": \" Hi \\u00e9 \\u4e2d\"},"
    " {\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"call_123456789\","
    " \"type\": \"function\", \"function\": {\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": "
    "2.5}}}]},"
    " {\"role\": \"tool\", \"tool_call_id\": \"call_123456789\", \"name\": \"add\", \"content\": "
    "\"3.5\"},"
    " {\"role\": \"assistant\", \"content\": \"<think>x</think>3.5\", \"reasoning_content\": "
    "\"r\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"add\", \"description\": "
    "\"Add.\","
    " \"parameters\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"number\"}},"
    " \"required\": [\"a\"]}}}],"
    " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\","
    " \"enable_thinking\": false}";

void fuzz_init(void)
{
    fixed_ctx = json_loads(fixed_json, 0, NULL);
    FUZZ_CHECK(fixed_ctx != NULL, "the fixed context does not parse");
}

static int valid_utf8(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80             ? 1
                     : (c & 0xE0) == 0xC0 ? 2
                     : (c & 0xF0) == 0xE0 ? 3
                     : (c & 0xF8) == 0xF0 ? 4
                                          : 0;
        if (!len || i + len > n) return 0;
        uint32_t cp = len == 1 ? c : c & (0x7F >> len);
        for (size_t k = 1; k < len; k++) {
            if (((unsigned char)s[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | ((unsigned char)s[i + k] & 0x3F);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

static void check_error(pl_status s, const pl_error *err, const char *what)
{
    FUZZ_CHECK(err->code == s, "%s: error code %d, status %d", what, err->code, s);
    FUZZ_CHECK(strstr(err->msg, "line ") && strstr(err->msg, ", column "),
               "%s: %s without a position: %s", what, pl_status_str(s), err->msg);
    FUZZ_CHECK(s == PL_ERR_FORMAT || s == PL_ERR_LIMIT || s == PL_ERR_UNSUPPORTED ||
                   s == PL_ERR_INVALID_ARG,
               "%s: unexpected status %s: %s", what, pl_status_str(s), err->msg);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT) size = MAX_INPUT;
    const char *src = (const char *)data;
    const uint8_t *nul = memchr(data, 0, size);
    size_t src_len = nul ? (size_t)(nul - data) : size;
    json_t *ctx = NULL;
    if (nul) ctx = json_loadb((const char *)nul + 1, size - src_len - 1, 0, NULL);
    if (!json_is_object(ctx)) {
        json_decref(ctx);
        ctx = json_incref(fixed_ctx);
    }

    pl_jinja_template *t = (pl_jinja_template *)&src; /* must become NULL on error */
    pl_error err = {0};
    pl_status s = pl_jinja_compile(src, src_len, &t, &err);
    if (s != PL_OK) {
        FUZZ_CHECK(t == NULL, "compile failed but *out is set");
        check_error(s, &err, "compile");
        json_decref(ctx);
        return;
    }
    pl_jinja_limits lim = {.max_steps = 200000,
                           .max_depth = 128,
                           .max_iterations = 50000,
                           .max_output = 1 << 20,
                           .max_memory = 32 << 20,
                           .now = 1721000000,
                           .has_now = 1};
    char *out[3] = {(char *)&err, NULL, NULL};
    size_t len[3] = {0};
    pl_error e[3] = {0};
    pl_status r[3];
    r[0] = pl_jinja_render(t, ctx, &lim, &out[0], &len[0], &e[0]);
    r[1] = pl_jinja_render(t, ctx, &lim, &out[1], &len[1], &e[1]);
    pl_jinja_limits big = lim;
    big.max_steps *= 4, big.max_iterations *= 4, big.max_memory *= 2, big.max_output *= 4;
    r[2] = r[0] == PL_OK ? pl_jinja_render(t, ctx, &big, &out[2], &len[2], &e[2]) : PL_OK;
    if (r[0] != PL_OK) {
        FUZZ_CHECK(out[0] == NULL, "render failed but *out is set");
        check_error(r[0], &e[0], "render");
    } else {
        FUZZ_CHECK(out[0] && out[0][len[0]] == 0 && strlen(out[0]) <= len[0],
                   "output not NUL-terminated at its length");
        FUZZ_CHECK(len[0] <= lim.max_output, "output %zu bytes past max_output", len[0]);
        FUZZ_CHECK(valid_utf8(out[0], len[0]), "output is not valid UTF-8");
        FUZZ_CHECK(r[2] == PL_OK && len[2] == len[0] && !memcmp(out[2], out[0], len[0]),
                   "a larger budget renders otherwise (%s: %s)", pl_status_str(r[2]), e[2].msg);
    }
    FUZZ_CHECK(r[1] == r[0] && len[1] == len[0] &&
                   (r[0] != PL_OK || !memcmp(out[0], out[1], len[0])) &&
                   !strcmp(e[0].msg, e[1].msg),
               "two renders differ: %s / %s", e[0].msg, e[1].msg);
    for (int i = 0; i < 3; i++) free(out[i]);
    pl_jinja_free(t);
    json_decref(ctx);
}
