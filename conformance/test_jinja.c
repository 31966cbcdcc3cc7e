/* test_jinja.c — the Jinja engine's language, one behaviour per test with the exact bytes
 * jinja2 (as transformers configures it) renders, exact error positions, and hostile templates
 * (deep nesting, huge ranges, recursion, blow-ups, bad UTF-8, unterminated tags, allocation
 * failures) that must end in a clear error. Not the corpus (test_jinja_corpus.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"
#include "testutil.h"

typedef struct result {
    pl_status status;
    char *out;
    size_t len;
    pl_error err;
} result;

/* compiles and renders src with the JSON context ctx (NULL: none) and limits lim */
static result run_lim(const char *src, const char *ctx, const pl_jinja_limits *lim)
{
    result r = {0};
    pl_jinja_template *t = NULL;
    r.status = pl_jinja_compile(src, strlen(src), &t, &r.err);
    if (r.status != PL_OK) return r;
    json_t *j = ctx ? json_loads(ctx, 0, NULL) : NULL;
    if (ctx && !j) {
        r.status = PL_ERR_INVALID_ARG;
        snprintf(r.err.msg, sizeof r.err.msg, "test: bad JSON context");
    } else {
        r.status = pl_jinja_render(t, j, lim, &r.out, &r.len, &r.err);
    }
    json_decref(j);
    pl_jinja_free(t);
    return r;
}

static result run(const char *src, const char *ctx)
{
    pl_jinja_limits lim = {.now = 1721000000, .has_now = 1};
    return run_lim(src, ctx, &lim);
}

/* the render equals want, byte for byte */
#define EXPECT(src, ctx, want)                                                                     \
    do {                                                                                           \
        result r_ = run(src, ctx);                                                                 \
        TU_CHECK(r_.status == PL_OK && r_.len == strlen(want) && !memcmp(r_.out, want, r_.len),    \
                 "template %s\n    want [%s]\n    got  [%s] (%s)", src, want,                      \
                 r_.out ? r_.out : "", r_.err.msg);                                                \
        free(r_.out);                                                                              \
    } while (0)

/* compile or render fails with code, and the message holds each of the given fragments */
static void expect_error(const char *src, const char *ctx, const pl_jinja_limits *lim,
                         pl_status code, const char *frag1, const char *frag2)
{
    pl_jinja_limits def = {.now = 1721000000, .has_now = 1};
    result r = run_lim(src, ctx, lim ? lim : &def);
    TU_CHECK(r.status == code && r.out == NULL, "template %.80s: want %s, got %s (%s)", src,
             pl_status_str(code), pl_status_str(r.status), r.err.msg);
    TU_CHECK(!frag1 || strstr(r.err.msg, frag1), "template %.80s: message [%s] lacks [%s]", src,
             r.err.msg, frag1);
    TU_CHECK(!frag2 || strstr(r.err.msg, frag2), "template %.80s: message [%s] lacks [%s]", src,
             r.err.msg, frag2);
    free(r.out);
}

/* ---- output and values ---------------------------------------------------------------------- */
static void jinja_prints_text_and_expressions(void)
{
    EXPECT("a{{ 1 + 2 }}b{{ 'x' ~ 3 ~ none }}", NULL, "a3bx3None");
}

static void jinja_prints_values_as_python_str(void)
{
    EXPECT("{{ [1, 'a', none, true, 1.5, {'k': 'v'}, (1,), ()] }}", NULL,
           "[1, 'a', None, True, 1.5, {'k': 'v'}, (1,), ()]");
    EXPECT("{{ true }} {{ false }} {{ none }} {{ {} }}", NULL, "True False None {}");
}

static void jinja_repr_quotes_strings_as_python(void)
{
    EXPECT("{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n', 'tab\\t\\x01'] }}", NULL,
           "[\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n', 'tab\\t\\x01']");
}

static void jinja_prints_floats_as_python_repr(void)
{
    EXPECT("{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 2.0 }} {{ 1e-5 }} {{ 1 / 3 }} {{ 123456.5 }} {{ 1e22 }}",
           NULL, "0.30000000000000004 1e+16 2.0 1e-05 0.3333333333333333 123456.5 1e+22");
}

static void jinja_arithmetic_is_pythons(void)
{
    EXPECT("{{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} "
           "{{ 7.5 // 2 }} {{ true + 1 }}",
           NULL, "-4 2 -2 3.5 1024 0.5 3.0 2");
}

static void jinja_string_literal_escapes_as_python(void)
{
    EXPECT("{{ 'a\\tb\\u00e9\\x41\\101\\d' }}|{{ \"q\\\"q\" }}", NULL, "a\tbéAA\\d|q\"q");
}

static void jinja_tojson_is_transformers_json_dumps(void)
{
    EXPECT("{{ {'a': [1, 2.5, none, true], 'é': 'x\"\\n\\u0001/'} | tojson }}", NULL,
           "{\"a\": [1, 2.5, null, true], \"é\": \"x\\\"\\n\\u0001/\"}");
    EXPECT("{{ {'a': [1, {}], 'b': []} | tojson(indent=2) }}", NULL,
           "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}");
    EXPECT("{{ {'b': 1, 'a': 2} | tojson(separators=(',', ':'), sort_keys=true) }}", NULL,
           "{\"a\":2,\"b\":1}");
    EXPECT("{{ 'x' | tojson }}{{ 1e100 | tojson }}", NULL, "\"x\"1e+100");
}

static void jinja_context_values_come_from_json(void)
{
    EXPECT("{{ messages[0].role }}:{{ messages[0]['content'] }} {{ n + 1 }} {{ f }}",
           "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"n\": 41, \"f\": 0.5}",
           "user:hi 42 0.5");
}

/* ---- statements ------------------------------------------------------------------------------ */
static void jinja_loop_variables(void)
{
    EXPECT("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
           "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}"
           "{{ loop.previtem | default('-') }}{{ loop.nextitem | default('-') }};{% endfor %}",
           NULL, "1032TrueFalse3-b;2121FalseFalse3ac;3210FalseTrue3b-;");
    EXPECT("{% for x in [1, 2, 3] %}{{ loop.cycle('o', 'e') }}{% endfor %}", NULL, "oeo");
}

static void jinja_for_else_filter_break_continue(void)
{
    EXPECT("{% for x in [] %}x{% else %}empty{% endfor %}", NULL, "empty");
    EXPECT("{% for x in range(7) if x is odd %}{{ x }}/{{ loop.length }} {% endfor %}", NULL,
           "1/3 3/3 5/3 ");
    EXPECT("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}"
           "{% break %}{% endif %}{{ x }}{% endfor %}",
           NULL, "013");
}

static void jinja_unpacks_tuples_in_for_and_set(void)
{
    EXPECT("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"
           "{% set x, y = 1, 2 %}{{ x + y }}{% for a, b in [[1, 2]] %}{{ a }}{{ b }}{% endfor %}",
           NULL, "a=1;b=2;312");
}

static void jinja_set_in_loop_is_local_namespace_is_not(void)
{
    EXPECT("{% set n = 0 %}{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set n = n + 1 %}"
           "{% set ns.n = ns.n + 1 %}{% endfor %}{{ n }} {{ ns.n }}",
           NULL, "0 3");
}

static void jinja_block_set_and_filter_block(void)
{
    EXPECT(
        "{% set s | upper %} a{{ 1 }} {% endset %}[{{ s }}]{% filter trim %}  t  {% endfilter %}",
        NULL, "[ A1 ]t");
}

static void jinja_macros_take_defaults_keywords_and_caller(void)
{
    EXPECT("{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}"
           "{{ m(1) }}|{{ m(1, c=3) }}|{{ m(a=2, b=4) }}",
           NULL, "1BNone|1B3|24None");
    EXPECT("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}in{% endcall %}", NULL,
           "<in>");
}

static void jinja_whitespace_control_trim_and_lstrip_blocks(void)
{
    /* trim_blocks eats the newline after %}, lstrip_blocks the indent before {% */
    EXPECT("a\n  {% if true %}\n  b\n  {% endif %}\nc", NULL, "a\n  b\nc");
    EXPECT("a  {{- ' b ' -}}  c", NULL, "a b c");
    EXPECT("x {%- if true -%} \n y {%- endif %}", NULL, "xy");
    EXPECT("a\n  {%+ if true %}b{% endif %}", NULL, "a\n  b");
    /* one trailing newline of the source is dropped, as jinja2 does */
    EXPECT("a\n", NULL, "a");
    EXPECT("a\r\nb", NULL, "a\nb");
}

static void jinja_raw_blocks_and_comments(void)
{
    EXPECT("{% raw %}{{ x }}{% endraw %}|{# c {{ }} #}|{#- c -#} |", NULL, "{{ x }}|||");
}

static void jinja_slices_strings_by_code_point(void)
{
    EXPECT("{{ 'aé中'[::-1] }} {{ [1, 2, 3, 4][1:3] }} {{ 'hello'[-3:] }} {{ 'héllo'[1] }} "
           "{{ [1, 2, 3][::2] }} {{ 'héllo' | length }}",
           NULL, "中éa [2, 3] llo é [1, 3] 5");
}

static void jinja_string_and_dict_methods(void)
{
    EXPECT(
        "{{ '  a b  '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' x  y '.split() }}|"
        "{{ 'ab'.startswith('a') }}{{ 'ab'.endswith(('x', 'b')) }}|{{ 'aXa'.replace('a', 'b') }}|"
        "{{ 'hello world'.title() }}|{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}|"
        "{{ 'a</think>b'.split('</think>')[-1].lstrip('\\n') }}|{{ 'xxa'.lstrip('x') }}",
        NULL, "a b|['a', 'b', '', 'c']|['x', 'y']|TrueTrue|bXb|Hello World|ABab|b|a");
    EXPECT("{% set d = {'a': 1} %}{{ d.get('a') }}{{ d.get('z') }}{{ d.get('z', 5) }}"
           "{{ d.keys() | list }}{{ d.values() | list }}{{ d['a'] }}",
           NULL, "1None5['a'][1]1");
}

static void jinja_filters_chat_templates_use(void)
{
    EXPECT("{{ ' x ' | trim }}|{{ [3, 1, 2] | sort | join(',') }}|{{ 'ab' | upper }}|"
           "{{ none | default('d') }}{{ x | default('u') }}{{ '' | default('e', true) }}|"
           "{{ [1, 2] | first }}{{ [1, 2] | last }}{{ [1, 2] | length }}|{{ 'a\\nb' | indent(2) }}|"
           "{{ '5' | int + 1 }}{{ 'x' | int }}{{ 2.7 | int }}|{{ [{'r': 'u'}, {'r': 'a'}] "
           "| selectattr('r', 'equalto', 'u') | list | length }}|"
           "{{ [{'r': 1}, {'r': 2}] | map(attribute='r') | list }}|{{ [1, 2, 3] | reject('odd') | "
           "list }}"
           "|{{ [1, 'a'] | string }}|{{ {'a': 1} | items | list }}|{{ 'a\"<' | e }}",
           NULL, "x|1,2,3|AB|Noneue|122|a\n  b|602|1|[1, 2]|[2]|[1, 'a']|[('a', 1)]|a&#34;&lt;");
}

static void jinja_tests_chat_templates_use(void)
{
    EXPECT("{{ x is defined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}"
           "{{ [] is iterable }}{{ 1 is number }}{{ true is boolean }}{{ 1 is integer }}"
           "{{ 1.0 is float }}{{ 3 is divisibleby 3 }}{{ 'a' is not sameas 'b' }}"
           "{{ 2 is even }}{{ 'a' in 'cat' }}{{ 'z' not in ['a'] }}",
           NULL, "FalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrue");
}

static void jinja_undefined_prints_empty_and_is_falsy(void)
{
    EXPECT("[{{ x }}][{{ m.missing }}]{% if not x %}f{% endif %}{% for i in x %}i{% endfor %}"
           "{{ x | length }}{{ x == y }}",
           "{\"m\": {}}", "[][]f0True");
}

static void jinja_inline_if_and_boolean_operators(void)
{
    EXPECT("{{ 'a' if true else 'b' }}{{ 'a' if false else 'b' }}[{{ 'a' if false }}]"
           "{{ 0 or 'x' }}{{ 1 and 'y' }}{{ not 0 }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}",
           NULL, "ab[]xyTrueTrueFalse");
}

static void jinja_strftime_now_uses_the_given_clock(void)
{
    EXPECT("{{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%d %b %Y') }}", NULL,
           "2024-07-14 23:33:20 14 Jul 2024");
}

static void jinja_generation_tag_renders_its_body(void)
{
    EXPECT("a{% generation %}b{% endgeneration %}c", NULL, "abc");
}

/* ---- errors name the position ----------------------------------------------------------- */
static void jinja_raise_exception_carries_message_and_position(void)
{
    expect_error("ok\n  {{ raise_exception('Roles must alternate') }}", NULL, NULL,
                 PL_ERR_INVALID_ARG, "line 2, column 6", "raised: Roles must alternate");
}

static void jinja_syntax_error_names_line_and_column(void)
{
    expect_error("{% if x %}\n{{ y + }}\n{% endif %}", NULL, NULL, PL_ERR_FORMAT,
                 "line 2, column 8", "unexpected '}}'");
    expect_error("a\n{% for x in y %}\nb", NULL, NULL, PL_ERR_FORMAT, "line 2, column 4",
                 "'for' is never closed");
    expect_error("{% endif %}", NULL, NULL, PL_ERR_FORMAT, "line 1, column 4",
                 "unexpected 'endif'");
    expect_error("{% frobnicate %}", NULL, NULL, PL_ERR_FORMAT, "line 1, column 4",
                 "unknown tag 'frobnicate'");
    expect_error("{% break %}", NULL, NULL, PL_ERR_FORMAT, "line 1, column 4", "outside of a loop");
}

static void jinja_attribute_of_undefined_is_an_error(void)
{
    expect_error("\n\n   {{ x.y }}", NULL, NULL, PL_ERR_INVALID_ARG, "line 3, column 8",
                 "'x' is undefined");
    expect_error("{{ m.a.b }}", "{\"m\": {}}", NULL, PL_ERR_INVALID_ARG, "line 1, column 7",
                 "'dict object' has no attribute 'a'");
}

static void jinja_type_errors_are_errors(void)
{
    expect_error("{{ 'a' + 1 }}", NULL, NULL, PL_ERR_INVALID_ARG, "line 1, column 8",
                 "unsupported operand type(s) for +: 'str' and 'int'");
    expect_error("{{ 1 // 0 }}", NULL, NULL, PL_ERR_INVALID_ARG, "line 1, column 6", "by zero");
    expect_error("{{ x | nosuchfilter }}", NULL, NULL, PL_ERR_UNSUPPORTED, "line 1, column 8",
                 "no filter named 'nosuchfilter'");
    expect_error("{{ [].append(1) }}", NULL, NULL, PL_ERR_INVALID_ARG, NULL, "unsafe");
    /* Python's integers have no bound; plumb's are 64-bit and say so */
    expect_error("{{ 9223372036854775807 + 1 }}", NULL, NULL, PL_ERR_UNSUPPORTED,
                 "line 1, column 24", "integer overflow");
    expect_error("{{ 9223372036854775808 }}", NULL, NULL, PL_ERR_UNSUPPORTED, "line 1, column 4",
                 "past 64 bits");
}

/* ---- hostile templates ------------------------------------------------------------------------
 */
static void jinja_rejects_invalid_utf8_with_position(void)
{
    expect_error("ab\ncd\xff", NULL, NULL, PL_ERR_FORMAT, "line 2, column 3", "not valid UTF-8");
    expect_error("\xc3\x28", NULL, NULL, PL_ERR_FORMAT, "line 1, column 1", "not valid UTF-8");
}

static void jinja_rejects_unterminated_tags(void)
{
    expect_error("x {{ a", NULL, NULL, PL_ERR_FORMAT, "line 1", "'{{' tag is not closed");
    expect_error("{% if x", NULL, NULL, PL_ERR_FORMAT, "line 1", "'{%' tag is not closed");
    expect_error("a\n{# comment", NULL, NULL, PL_ERR_FORMAT, "line 2, column 1",
                 "unterminated comment");
    expect_error("{% raw %}x", NULL, NULL, PL_ERR_FORMAT, "line 1, column 1", "endraw");
    expect_error("{{ 'abc }}", NULL, NULL, PL_ERR_FORMAT, "line 1, column 4",
                 "unterminated string");
    expect_error("{{ (1 }}", NULL, NULL, PL_ERR_FORMAT, NULL, NULL);
}

static char *repeat(const char *a, size_t n, const char *mid, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), lm = strlen(mid);
    char *s = malloc(n * (la + lb) + lm + 1), *p = s;
    for (size_t i = 0; i < n; i++) memcpy(p, a, la), p += la;
    memcpy(p, mid, lm), p += lm;
    for (size_t i = 0; i < n; i++) memcpy(p, b, lb), p += lb;
    *p = 0;
    return s;
}

static void jinja_deep_nesting_is_a_limit(void)
{
    char *parens = repeat("(", 100000, "1", ")");
    char *src = malloc(strlen(parens) + 8);
    sprintf(src, "{{ %s }}", parens);
    expect_error(src, NULL, NULL, PL_ERR_LIMIT, "line 1", "nesting deeper than");
    free(src);
    free(parens);
    char *ifs = repeat("{% if true %}", 50000, "x", "{% endif %}");
    expect_error(ifs, NULL, NULL, PL_ERR_LIMIT, "line 1", "nesting deeper than");
    free(ifs);
    char *lists = repeat("[", 50000, "", "]");
    src = malloc(strlen(lists) + 8);
    sprintf(src, "{{ %s }}", lists);
    expect_error(src, NULL, NULL, PL_ERR_LIMIT, "line 1", NULL);
    free(src);
    free(lists);
    /* 150 levels (more than jinja2's parser survives) parse and render */
    char *ok = repeat("(", 150, "7", ")");
    src = malloc(strlen(ok) + 8);
    sprintf(src, "{{ %s }}", ok);
    EXPECT(src, NULL, "7");
    free(src);
    free(ok);
}

/* values built in a loop nest without bound: printing, tojson and ordering them are limits,
 * equality past 200 levels compares identity (jinja2 raises RecursionError there) */
static void jinja_deeply_nested_values_never_overflow_the_stack(void)
{
    const char *build = "{% set ns = namespace(x=[]) %}{% for i in range(20000) %}"
                        "{% set ns.x = [ns.x] %}{% endfor %}";
    char src[512];
    snprintf(src, sizeof src, "%s{{ ns.x }}", build);
    expect_error(src, NULL, NULL, PL_ERR_LIMIT, "line 1", "deeper than 200");
    snprintf(src, sizeof src, "%s{{ ns.x | tojson }}", build);
    expect_error(src, NULL, NULL, PL_ERR_LIMIT, "line 1", "deeper than 200");
    snprintf(src, sizeof src, "%s{{ [ns.x] < [[ns.x]] }}", build);
    expect_error(src, NULL, NULL, PL_ERR_LIMIT, "line 1", "deeper than 200");
    snprintf(src, sizeof src, "%s{{ ns.x == ns.x }}", build);
    EXPECT(src, NULL, "True");
}

static void jinja_huge_range_is_refused_as_the_sandbox_does(void)
{
    expect_error("{% for i in range(10**9) %}{% endfor %}", NULL, NULL, PL_ERR_LIMIT,
                 "line 1, column 13", "MAX_RANGE (100000)");
}

static void jinja_loop_iterations_are_bounded(void)
{
    pl_jinja_limits lim = {.max_iterations = 1000};
    expect_error("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", NULL,
                 &lim, PL_ERR_LIMIT, "line 1, column 29", "max_iterations");
}

static void jinja_steps_are_bounded(void)
{
    pl_jinja_limits lim = {.max_steps = 5000};
    expect_error("{% for i in range(100000) %}{{ i }}{% endfor %}", NULL, &lim, PL_ERR_LIMIT,
                 "line 1", "max_steps");
}

static void jinja_recursive_macro_hits_the_depth_limit(void)
{
    expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, NULL, PL_ERR_LIMIT,
                 "line 1", "max_depth");
}

static void jinja_string_blowups_hit_the_memory_limit(void)
{
    expect_error("{{ 'x' * 10**9 }}", NULL, NULL, PL_ERR_LIMIT, "line 1, column 8", "max_memory");
    pl_jinja_limits lim = {.max_memory = 8 << 20};
    expect_error("{% set ns = namespace(s='xx') %}{% for i in range(64) %}"
                 "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
                 NULL, &lim, PL_ERR_LIMIT, "line 1", "max_memory");
}

/* An empty string or list repeated any number of times is empty at once: the count is no
 * loop bound (a fuzzer's [] * 11111111112 used to spin for hours in a 0-byte repetition). */
static void jinja_empty_repetition_is_immediate(void)
{
    EXPECT("{{ ([] * 10**18) | length }}{{ ('' * 10**18) | length }}{{ (10**18 * []) | length }}"
           "{{ (10**18 * '') | length }}{{ ([] * 3) | length }}{{ [1, 2] * 2 }}{{ 'ab' * 2 }}",
           NULL, "00000[1, 2, 1, 2]abab");
    expect_error("{{ [0] * 10**18 }}", NULL, NULL, PL_ERR_LIMIT, "line 1", "max_memory");
}

static void jinja_output_is_bounded(void)
{
    pl_jinja_limits lim = {.max_output = 1000};
    expect_error("{% for i in range(1000) %}ab{% endfor %}", NULL, &lim, PL_ERR_LIMIT,
                 "line 1, column 27", "max_output");
}

static void jinja_render_is_repeatable_and_does_not_touch_the_template(void)
{
    const char *src =
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
        "{{ m.content }}{% endfor %}{{ ns.n }}";
    pl_jinja_template *t = NULL;
    pl_error err = {0};
    TU_CHECK(pl_jinja_compile(src, strlen(src), &t, &err) == PL_OK, "%s", err.msg);
    json_t *ctx =
        json_loads("{\"messages\": [{\"content\": \"a\"}, {\"content\": \"b\"}]}", 0, NULL);
    char *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    TU_CHECK(pl_jinja_render(t, ctx, NULL, &a, &la, &err) == PL_OK, "%s", err.msg);
    TU_CHECK(pl_jinja_render(t, ctx, NULL, &b, &lb, &err) == PL_OK, "%s", err.msg);
    TU_CHECK(a && b && la == 3 && lb == 3 && !memcmp(a, "ab2", 3) && !memcmp(b, "ab2", 3),
             "renders [%s] [%s]", a ? a : "", b ? b : "");
    free(a);
    free(b);
    json_decref(ctx);
    pl_jinja_free(t);
}

typedef struct render_job {
    const pl_jinja_template *t;
    const json_t *ctx;
    char *out[50];
    int bad;
} render_job;

static void *render_many(void *arg)
{
    render_job *j = arg;
    for (int i = 0; i < 50; i++) {
        pl_error err = {0};
        if (pl_jinja_render(j->t, j->ctx, NULL, &j->out[i], NULL, &err) != PL_OK) j->bad++;
    }
    return NULL;
}

/* the AST is immutable: four threads rendering one template get the bytes one thread gets */
static void jinja_renders_one_template_from_several_threads(void)
{
    const char *src = "{% set ns = namespace(n=0) %}{% macro m(x) %}<{{ x | upper }}>{% endmacro %}"
                      "{% for msg in messages %}{% set ns.n = ns.n + 1 %}{{ m(msg.content) }}"
                      "{{ msg | tojson }}{% endfor %}{{ ns.n }}";
    pl_jinja_template *t = NULL;
    pl_error err = {0};
    TU_CHECK(pl_jinja_compile(src, strlen(src), &t, &err) == PL_OK, "%s", err.msg);
    json_t *ctx = json_loads("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, "
                             "{\"role\": \"assistant\", \"content\": \"b\u00e9\"}]}",
                             0, NULL);
    char *want = NULL;
    TU_CHECK(pl_jinja_render(t, ctx, NULL, &want, NULL, &err) == PL_OK, "%s", err.msg);
    render_job jobs[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        memset(&jobs[k], 0, sizeof jobs[k]);
        jobs[k].t = t, jobs[k].ctx = ctx;
        TU_CHECK(pthread_create(&th[k], NULL, render_many, &jobs[k]) == 0, "thread %d", k);
    }
    for (int k = 0; k < 4; k++) {
        pthread_join(th[k], NULL);
        TU_CHECK(jobs[k].bad == 0, "thread %d: %d renders failed", k, jobs[k].bad);
        for (int i = 0; i < 50; i++) {
            TU_CHECK(jobs[k].out[i] && want && !strcmp(jobs[k].out[i], want),
                     "thread %d render %d: [%s] want [%s]", k, i,
                     jobs[k].out[i] ? jobs[k].out[i] : "", want ? want : "");
            free(jobs[k].out[i]);
        }
    }
    free(want);
    json_decref(ctx);
    pl_jinja_free(t);
}

static void jinja_free_null_is_a_noop_and_null_args_are_refused(void)
{
    pl_jinja_free(NULL);
    pl_error err = {0};
    pl_jinja_template *t = (pl_jinja_template *)&err;
    TU_CHECK(pl_jinja_compile(NULL, 3, &t, &err) == PL_ERR_INVALID_ARG && t == NULL, "%s", err.msg);
    char *out = (char *)&err;
    TU_CHECK(pl_jinja_render(NULL, NULL, NULL, &out, NULL, &err) == PL_ERR_INVALID_ARG &&
                 out == NULL,
             "%s", err.msg);
    TU_CHECK(pl_jinja_compile("", 0, &t, &err) == PL_OK, "%s", err.msg);
    json_t *arr = json_array();
    TU_CHECK(pl_jinja_render(t, arr, NULL, &out, NULL, &err) == PL_ERR_INVALID_ARG, "%s", err.msg);
    json_decref(arr);
    size_t n = 7;
    TU_CHECK(pl_jinja_render(t, NULL, NULL, &out, &n, &err) == PL_OK && n == 0 && out && !*out,
             "%s", err.msg);
    free(out);
    pl_jinja_free(t);
}

/* SQLite style: allocation N fails (transient, then persistent) until the whole compile and
 * render succeed; every failure is PL_ERR_NOMEM and nothing leaks (ASan checks). */
static void jinja_allocation_failures_are_clean(void)
{
    const char *src = "{% for m in messages %}{{ m.role | upper }}:{{ m.content | tojson }}\n"
                      "{% endfor %}{% macro f(x) %}[{{ x }}]{% endmacro %}{{ f('y') }}";
    json_t *ctx =
        json_loads("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", 0, NULL);
    for (int persistent = 0; persistent < 2; persistent++) {
        for (uint64_t n = 1;; n++) {
            tu_alloc_fail_at(n, persistent);
            pl_jinja_template *t = NULL;
            pl_error err = {0};
            char *out = NULL;
            pl_status s = pl_jinja_compile(src, strlen(src), &t, &err);
            if (s == PL_OK) s = pl_jinja_render(t, ctx, NULL, &out, NULL, &err);
            uint64_t failed = tu_alloc_failed();
            tu_alloc_reset();
            pl_jinja_free(t);
            if (failed == 0) {
                TU_CHECK(s == PL_OK && out && !strcmp(out, "USER:\"hi\"\n[y]"), "n=%llu: %s",
                         (unsigned long long)n, err.msg);
                free(out);
                break;
            }
            TU_CHECK(s == PL_ERR_NOMEM && out == NULL, "allocation %llu failed (%s): got %s (%s)",
                     (unsigned long long)n, persistent ? "persistent" : "transient",
                     pl_status_str(s), err.msg);
            free(out);
            if (n > 10000) break;
        }
    }
    json_decref(ctx);
}

int main(void)
{
    static const tu_test tests[] = {
        {"jinja_prints_text_and_expressions", jinja_prints_text_and_expressions},
        {"jinja_prints_values_as_python_str", jinja_prints_values_as_python_str},
        {"jinja_repr_quotes_strings_as_python", jinja_repr_quotes_strings_as_python},
        {"jinja_prints_floats_as_python_repr", jinja_prints_floats_as_python_repr},
        {"jinja_arithmetic_is_pythons", jinja_arithmetic_is_pythons},
        {"jinja_string_literal_escapes_as_python", jinja_string_literal_escapes_as_python},
        {"jinja_tojson_is_transformers_json_dumps", jinja_tojson_is_transformers_json_dumps},
        {"jinja_context_values_come_from_json", jinja_context_values_come_from_json},
        {"jinja_loop_variables", jinja_loop_variables},
        {"jinja_for_else_filter_break_continue", jinja_for_else_filter_break_continue},
        {"jinja_unpacks_tuples_in_for_and_set", jinja_unpacks_tuples_in_for_and_set},
        {"jinja_set_in_loop_is_local_namespace_is_not",
         jinja_set_in_loop_is_local_namespace_is_not},
        {"jinja_block_set_and_filter_block", jinja_block_set_and_filter_block},
        {"jinja_macros_take_defaults_keywords_and_caller",
         jinja_macros_take_defaults_keywords_and_caller},
        {"jinja_whitespace_control_trim_and_lstrip_blocks",
         jinja_whitespace_control_trim_and_lstrip_blocks},
        {"jinja_raw_blocks_and_comments", jinja_raw_blocks_and_comments},
        {"jinja_slices_strings_by_code_point", jinja_slices_strings_by_code_point},
        {"jinja_string_and_dict_methods", jinja_string_and_dict_methods},
        {"jinja_filters_chat_templates_use", jinja_filters_chat_templates_use},
        {"jinja_tests_chat_templates_use", jinja_tests_chat_templates_use},
        {"jinja_undefined_prints_empty_and_is_falsy", jinja_undefined_prints_empty_and_is_falsy},
        {"jinja_inline_if_and_boolean_operators", jinja_inline_if_and_boolean_operators},
        {"jinja_strftime_now_uses_the_given_clock", jinja_strftime_now_uses_the_given_clock},
        {"jinja_generation_tag_renders_its_body", jinja_generation_tag_renders_its_body},
        {"jinja_raise_exception_carries_message_and_position",
         jinja_raise_exception_carries_message_and_position},
        {"jinja_syntax_error_names_line_and_column", jinja_syntax_error_names_line_and_column},
        {"jinja_attribute_of_undefined_is_an_error", jinja_attribute_of_undefined_is_an_error},
        {"jinja_type_errors_are_errors", jinja_type_errors_are_errors},
        {"jinja_rejects_invalid_utf8_with_position", jinja_rejects_invalid_utf8_with_position},
        {"jinja_rejects_unterminated_tags", jinja_rejects_unterminated_tags},
        {"jinja_deep_nesting_is_a_limit", jinja_deep_nesting_is_a_limit},
        {"jinja_deeply_nested_values_never_overflow_the_stack",
         jinja_deeply_nested_values_never_overflow_the_stack},
        {"jinja_huge_range_is_refused_as_the_sandbox_does",
         jinja_huge_range_is_refused_as_the_sandbox_does},
        {"jinja_loop_iterations_are_bounded", jinja_loop_iterations_are_bounded},
        {"jinja_steps_are_bounded", jinja_steps_are_bounded},
        {"jinja_recursive_macro_hits_the_depth_limit", jinja_recursive_macro_hits_the_depth_limit},
        {"jinja_string_blowups_hit_the_memory_limit", jinja_string_blowups_hit_the_memory_limit},
        {"jinja_empty_repetition_is_immediate", jinja_empty_repetition_is_immediate},
        {"jinja_output_is_bounded", jinja_output_is_bounded},
        {"jinja_render_is_repeatable_and_does_not_touch_the_template",
         jinja_render_is_repeatable_and_does_not_touch_the_template},
        {"jinja_renders_one_template_from_several_threads",
         jinja_renders_one_template_from_several_threads},
        {"jinja_free_null_is_a_noop_and_null_args_are_refused",
         jinja_free_null_is_a_noop_and_null_args_are_refused},
        {"jinja_allocation_failures_are_clean", jinja_allocation_failures_are_clean},
        {NULL, NULL},
    };
    return tu_run("jinja", tests);
}
