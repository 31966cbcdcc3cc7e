/* test_text.c — the small helpers plumb.h shares with its clients (engine/core/text.c): the
 * monotonic clock, UTF-8 character lengths, JSON string escaping and JSON kind names. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "plumb.h"
#include "testutil.h"

static void clock_never_goes_back_and_counts_in_ns(void)
{
    uint64_t last = pl_clock_ns();
    for (int i = 0; i < 1000; i++) {
        const uint64_t now = pl_clock_ns();
        TU_CHECK(now >= last, "call %d: %llu after %llu", i, (unsigned long long)now,
                 (unsigned long long)last);
        last = now;
    }
    const double s = pl_clock_s(), ms = pl_clock_ms();
    TU_CHECK(ms >= s * 1e3 && ms - s * 1e3 < 1e3, "pl_clock_ms %.3f vs pl_clock_s %.6f", ms, s);
}

static void utf8_char_accepts_exactly_the_strict_forms(void)
{
    static const struct {
        const char *bytes;
        size_t len, want;
    } cases[] = {
        {"a", 1, 1},
        {"\xC2\x80", 2, 2},
        {"\xC1\x80", 2, 0}, /* overlong */
        {"\xDF\xBF", 2, 2},
        {"\xE0\x9F\x80", 3, 0}, /* overlong */
        {"\xE0\xA0\x80", 3, 3},
        {"\xED\xA0\x80", 3, 0}, /* surrogate */
        {"\xED\x9F\xBF", 3, 3},
        {"\xF0\x8F\xBF\xBF", 4, 0}, /* overlong */
        {"\xF0\x90\x80\x80", 4, 4},
        {"\xF4\x8F\xBF\xBF", 4, 4},
        {"\xF4\x90\x80\x80", 4, 0}, /* past U+10FFFF */
        {"\xF5\x80\x80\x80", 4, 0},
        {"\xE2\x82", 2, 0}, /* cut short */
        {"\x80", 1, 0},     /* a continuation byte alone */
        {"\xE2\x28\xA1", 3, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const size_t got = pl_utf8_char((const unsigned char *)cases[i].bytes, cases[i].len);
        TU_CHECK(got == cases[i].want, "case %zu: length %zu, want %zu", i, got, cases[i].want);
    }
    TU_CHECK(pl_utf8_char((const unsigned char *)"", 0) == 0, "no bytes: no character");
}

static void json_escape_escapes_controls_keeps_utf8_and_replaces_bad_bytes(void)
{
    static const char in[] = "a\"\\\n\t\b\f\r\x01\x1f\x7f\xC3\xA9\xFF/";
    static const char want[] = "a\\\"\\\\\\n\\t\\b\\f\\r\\u0001\\u001f\\u007f\xC3\xA9\\ufffd/";
    char buf[128];
    const size_t n = pl_json_escape(buf, sizeof buf, in, sizeof in - 1);
    TU_CHECK(n == strlen(want) && strcmp(buf, want) == 0, "escaped to '%s' (%zu bytes), want '%s'",
             buf, n, want);
    char small[5];
    const size_t m = pl_json_escape(small, sizeof small, in, sizeof in - 1);
    TU_CHECK(m == n && strcmp(small, "a\\\"\\") == 0, "cut to 5: '%s', length %zu", small, m);
    TU_CHECK(pl_json_escape(NULL, 0, in, sizeof in - 1) == n, "measuring gives the length");
    char quoted[140];
    snprintf(quoted, sizeof quoted, "\"%s\"", buf);
    json_t *back = json_loads(quoted, JSON_DECODE_ANY, NULL);
    TU_CHECK(back && json_is_string(back), "the escape is a JSON string's body: %s", quoted);
    json_decref(back);
}

static void json_kind_names_every_jansson_type(void)
{
    json_t *v[] = {json_object(),  json_array(), json_string("x"), json_integer(1),
                   json_real(1.5), json_true(),  json_false(),     json_null()};
    static const char *const want[] = {"an object",     "an array",  "a string",  "an integer",
                                       "a real number", "a boolean", "a boolean", "null"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        TU_CHECK(strcmp(pl_json_kind(v[i]), want[i]) == 0, "value %zu: '%s', want '%s'", i,
                 pl_json_kind(v[i]), want[i]);
        json_decref(v[i]);
    }
    TU_CHECK(strcmp(pl_json_kind(NULL), "a JSON value") == 0, "NULL: '%s'", pl_json_kind(NULL));
}

/* The server's path (a parsed request handed over as it is) renders what the text path renders. */
static void chat_render_jansson_equals_render_json(void)
{
    static const char conv[] =
        "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": "
        "\"user\", \"content\": \"h\\u00e9llo \\\"there\\\"\\n\"}], \"x\": 1.5}";
    static const char src[] = "{% for m in messages %}<{{ m.role }}>{{ m.content }}|{{ x }}"
                              "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}";
    pl_chat_template *t = NULL;
    pl_error err = {0};
    TU_CHECK(pl_chat_template_compile(&t, src, sizeof src - 1, &err) == PL_OK, "compile: %s",
             err.msg);
    char a[256], b[256];
    size_t na = 0, nb = 0, need = 0;
    TU_CHECK(pl_chat_render_json(NULL, t, conv, sizeof conv - 1, 1, a, sizeof a, &na, &err) ==
                 PL_OK,
             "render_json: %s", err.msg);
    json_t *j = json_loads(conv, JSON_REJECT_DUPLICATES, NULL);
    char *before = json_dumps(j, JSON_COMPACT);
    TU_CHECK(pl_chat_render_jansson(NULL, t, j, 1, NULL, 0, &need, &err) ==
                     PL_ERR_BUFFER_TOO_SMALL &&
                 need == na,
             "size query: %zu bytes, want %zu", need, na);
    TU_CHECK(pl_chat_render_jansson(NULL, t, j, 1, b, sizeof b, &nb, &err) == PL_OK,
             "render_jansson: %s", err.msg);
    TU_CHECK(na == nb && memcmp(a, b, na) == 0, "'%.*s' vs '%.*s'", (int)na, a, (int)nb, b);
    char *after = json_dumps(j, JSON_COMPACT);
    TU_CHECK(before && after && strcmp(before, after) == 0, "the conversation changed: %s -> %s",
             before, after);
    json_t *bad = json_array();
    TU_CHECK(pl_chat_render_jansson(NULL, t, bad, 1, b, sizeof b, &nb, &err) ==
                     PL_ERR_INVALID_ARG &&
                 strstr(err.msg, "\"messages\" array"),
             "an array is refused: %s", err.msg);
    free(before);
    free(after);
    json_decref(bad);
    json_decref(j);
    pl_chat_template_free(t);
}

int main(void)
{
    static const tu_test tests[] = {
        {"clock_never_goes_back_and_counts_in_ns", clock_never_goes_back_and_counts_in_ns},
        {"utf8_char_accepts_exactly_the_strict_forms", utf8_char_accepts_exactly_the_strict_forms},
        {"json_escape_escapes_controls_keeps_utf8_and_replaces_bad_bytes",
         json_escape_escapes_controls_keeps_utf8_and_replaces_bad_bytes},
        {"json_kind_names_every_jansson_type", json_kind_names_every_jansson_type},
        {"chat_render_jansson_equals_render_json", chat_render_jansson_equals_render_json},
        {NULL, NULL},
    };
    return tu_run("text", tests);
}
