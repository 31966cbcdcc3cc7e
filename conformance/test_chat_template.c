/* test_chat_template.c — the chat paths on the model's own Jinja template: compiled at load,
 * rendered with transformers' variables (JSON conversations: tools, tool calls, extra keys),
 * errors that leave the session unchanged (a template that raises, passes a bound, does not
 * compile), and the prefix cache under templates that re-render earlier turns differently
 * (Qwen3 dropping earlier <think> blocks, a dated system message). Not the Jinja language
 * (test_jinja, test_jinja_corpus) nor the built-ins (test_chat). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mkmodel.h"
#include "testutil.h"

#define N(a)              (sizeof(a) / sizeof((a)[0]))
#define tf_mentions(m, s) (strstr((m), (s)) != NULL)

static char *corpus(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/templates/%s", PLUMB_JINJA_CORPUS, name);
    size_t n;
    return tu_read_file(path, &n);
}

/* A small model of vocabulary v whose tokenizer.chat_template is tmpl (NULL: the vocabulary's). */
static pl_model *model_with(enum demo_vocab_kind v, const char *tmpl)
{
    mk_config c;
    pl_model *m = NULL;
    pl_error e = {0};
    if (mk_preset("tiny", &c)) return NULL;
    mk_shrink(&c);
    c.vocab = v;
    c.ftype = PL_FTYPE_F32;
    c.n_threads = 1;
    c.seed = 7;
    c.chat_template = tmpl;
    if (mk_load(&c, &m, &e)) fprintf(stderr, "model: %s\n", e.msg);
    return m;
}

static pl_session *session(const pl_model *m)
{
    pl_session_params p = pl_session_default_params(m);
    p.n_threads = 1;
    p.context_window = 512;
    p.prefill_chunk = 16;
    pl_session *s = NULL;
    if (pl_session_new(&s, m, &p, NULL)) return NULL;
    return s;
}

/* The rendered text of a JSON conversation (malloc'd, NUL-terminated), or NULL. */
static char *render_json(const pl_model *m, const pl_chat_template *t, const char *json, int gen,
                         size_t *len, pl_error *err)
{
    size_t need = 0;
    pl_status s = pl_chat_render_json(m, t, json, strlen(json), gen, NULL, 0, &need, err);
    if (s != PL_OK && s != PL_ERR_BUFFER_TOO_SMALL) return NULL;
    char *buf = malloc(need + 1);
    if (pl_chat_render_json(m, t, json, strlen(json), gen, buf, need + 1, &need, err)) {
        free(buf);
        return NULL;
    }
    buf[need] = 0;
    *len = need;
    return buf;
}

/* ---- compiled at load ---- */

static void a_template_that_does_not_compile_is_reported_and_the_model_still_runs(void)
{
    pl_model *m = model_with(DEMO_VOCAB_BPE, "{{ messages }}\n  {% if %}");
    TU_CHECK(m != NULL, "the model loads although its template does not compile");
    if (!m) return;
    pl_error e = {0};
    const char *src = "untouched";
    size_t len = 1;
    pl_status s = pl_model_chat_template(m, &src, &len, &e);
    TU_CHECK(s == PL_ERR_FORMAT && !src && len == 0 &&
                 tf_mentions(e.msg, "the model's chat template does not compile: template line 2, "
                                    "column 9"),
             "%s: %s", pl_status_str(s), e.msg);
    static const pl_chat_message u[] = {{"user", "hi"}};
    char buf[256];
    size_t n;
    s = pl_chat_render(m, NULL, u, 1, 1, buf, sizeof buf, &n, &e);
    TU_CHECK(s == PL_ERR_FORMAT && tf_mentions(e.msg, "line 2, column 9"), "render: %s: %s",
             pl_status_str(s), e.msg);
    pl_session *ss = session(m);
    s = pl_chat_messages(ss, NULL, u, 1, NULL, NULL, NULL, NULL, NULL, &e);
    TU_CHECK(s == PL_ERR_FORMAT && pl_session_n_past(ss) == 0, "chat: %s, %lld tokens held",
             pl_status_str(s), (long long)pl_session_n_past(ss));
    /* completions and an explicit built-in still work */
    TU_CHECK(pl_chat_render(m, "chatml", u, 1, 1, buf, sizeof buf, &n, &e) == PL_OK, "%s", e.msg);
    int32_t ids[8];
    size_t nid = 0;
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 3;
    TU_CHECK(pl_tokenize(m, "Hello", 5, 0, ids, 8, &nid, &e) == PL_OK &&
                 pl_generate(ss, ids, (int64_t)nid, NULL, &gp, NULL, NULL, NULL, &e) == PL_OK,
             "completion: %s", e.msg);
    pl_session_free(ss);
    pl_model_free(m);
}

static void an_empty_template_is_no_template(void)
{
    pl_model *m = model_with(DEMO_VOCAB_BPE, "");
    TU_CHECK(m != NULL, "loads");
    if (!m) return;
    pl_error e = {0};
    pl_status s = pl_model_chat_template(m, NULL, NULL, &e);
    TU_CHECK(s == PL_ERR_NOT_FOUND && tf_mentions(e.msg, "no chat template"), "%s: %s",
             pl_status_str(s), e.msg);
    size_t n;
    s = pl_chat_render_json(m, NULL, "{\"messages\":[]}", 15, 1, NULL, 0, &n, &e);
    TU_CHECK(s == PL_ERR_NOT_FOUND, "render: %s", pl_status_str(s));
    pl_model_free(m);
}

/* ---- transformers' variables ---- */

static const char vars_tmpl[] =
    "{{ bos_token }}|{{ eos_token }}|{{ tools | tojson }}|{{ documents }}|"
    "{{ add_generation_prompt }}|{{ enable_thinking | default('unset') }}|"
    "{%- for m in messages %}[{{ m.role }}"
    "{%- if m.content is string %}:{{ m.content }}{% elif m.content is none %}:none"
    "{%- else %}:parts {{ m.content | map(attribute='text') | join('+') }}{% endif %}"
    "{%- if m.reasoning_content %} reasoning {{ m.reasoning_content }}{% endif %}"
    "{%- for c in m.tool_calls | default([]) %} call {{ c.id }} {{ c.function.name }} "
    "{{ c.function.arguments | tojson }}{% endfor %}"
    "{%- if m.tool_call_id %} for {{ m.tool_call_id }} by {{ m.name }}{% endif %}]"
    "{%- endfor %}";

static void json_conversations_reach_the_template_as_transformers_passes_them(void)
{
    pl_model *m = model_with(DEMO_VOCAB_BPE, vars_tmpl);
    TU_CHECK(m != NULL, "loads");
    if (!m) return;
    pl_error e = {0};
    TU_CHECK(pl_model_chat_template(m, NULL, NULL, &e) == PL_OK, "%s", e.msg);
    const char *json =
        "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
        "{\"type\":\"text\",\"text\":\"b\"}]},"
        "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"hmm\","
        "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
        "\"arguments\":{\"x\":1,\"y\":[true,null]}}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"name\":\"f\",\"content\":\"42\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
        "\"enable_thinking\":false,\"add_generation_prompt\":false}";
    size_t len = 0;
    char *got = render_json(m, NULL, json, 1, &len, &e);
    /* BPE demo: no BOS text of its own beyond <|endoftext|>; EOS <|im_end|> */
    char bos[64] = "", eos[64] = "";
    pl_str b = pl_vocab_token_text(m, pl_vocab_bos(m)), x = pl_vocab_token_text(m, pl_vocab_eos(m));
    snprintf(bos, sizeof bos, "%.*s", (int)b.len, b.ptr);
    snprintf(eos, sizeof eos, "%.*s", (int)x.len, x.ptr);
    char want[1024];
    snprintf(want, sizeof want,
             "%s|%s|[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]|None|True|False|"
             "[user:parts a+b][assistant:none reasoning hmm call c1 f {\"x\": 1, \"y\": [true, "
             "null]}][tool:42 for c1 by f]",
             bos, eos);
    TU_CHECK(got && strcmp(got, want) == 0, "got  '%s'\nwant '%s' (%s)", got ? got : "NULL", want,
             got ? "" : e.msg);
    free(got);
    /* the argument sets add_generation_prompt; bos_token given in the JSON wins */
    got = render_json(m, NULL, "{\"messages\":[],\"bos_token\":\"B\",\"tools\":[]}", 0, &len, &e);
    snprintf(want, sizeof want, "B|%s|[]|None|False|unset|", eos);
    TU_CHECK(got && strcmp(got, want) == 0, "got '%s' want '%s'", got ? got : e.msg, want);
    free(got);
    pl_model_free(m);
}

static void bad_json_conversations_are_refused_with_their_position(void)
{
    pl_model *m = model_with(DEMO_VOCAB_BPE, NULL);
    TU_CHECK(m != NULL, "loads");
    if (!m) return;
    static const struct {
        const char *json, *says;
    } bad[] = {
        {"{\"messages\": [}", "line 1, column"},
        {"[]", "an object with a \"messages\" array"},
        {"{\"messages\": {}}", "an object with a \"messages\" array"},
        {"{}", "an object with a \"messages\" array"},
        {"{\"messages\": [], \"messages\": []}", "duplicate"},
        {"{\"messages\": [\"\xff\"]}", "line 1"},
    };
    for (size_t i = 0; i < N(bad); i++) {
        pl_error e = {0};
        size_t n = 7;
        pl_status s =
            pl_chat_render_json(m, NULL, bad[i].json, strlen(bad[i].json), 1, NULL, 0, &n, &e);
        TU_CHECK(s == PL_ERR_INVALID_ARG && n == 0 && tf_mentions(e.msg, bad[i].says), "%s: %s: %s",
                 bad[i].json, pl_status_str(s), e.msg);
    }
    /* a built-in renders role and content only: it refuses what it cannot render */
    pl_chat_template *t = NULL;
    pl_error e = {0};
    TU_CHECK(pl_chat_template_builtin(&t, "chatml", &e) == PL_OK, "%s", e.msg);
    static const char *const refused[] = {
        "{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{}]}]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{}]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}]}",
    };
    for (size_t i = 0; i < N(refused); i++) {
        size_t n;
        pl_status s = pl_chat_render_json(m, t, refused[i], strlen(refused[i]), 1, NULL, 0, &n, &e);
        TU_CHECK(s == PL_ERR_UNSUPPORTED && tf_mentions(e.msg, "chatml"), "%s: %s: %s", refused[i],
                 pl_status_str(s), e.msg);
    }
    pl_chat_template *none = NULL;
    TU_CHECK(pl_chat_template_builtin(&none, "chatml3", &e) == PL_ERR_NOT_FOUND && !none &&
                 tf_mentions(e.msg, "chatml, qwen2"),
             "%s", e.msg);
    pl_chat_template_free(t);
    pl_model_free(m);
}

static void bytes_that_are_not_utf8_reach_the_prompt_unchanged(void)
{
    pl_model *m = model_with(DEMO_VOCAB_BPE, NULL);
    TU_CHECK(m != NULL, "loads");
    if (!m) return;
    /* a reply cut inside a character, a lone continuation byte, and a real U+00E9 */
    static const pl_chat_message msgs[] = {{"user", "caf\xc3"}, {"assistant", "x\x80y \xc3\xa9"}};
    const char *want = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                       "<|im_start|>user\ncaf\xc3<|im_end|>\n<|im_start|>assistant\nx\x80y "
                       "\xc3\xa9<|im_end|>\n<|im_start|>assistant\n";
    char buf[512];
    size_t n = 0;
    pl_error e = {0};
    pl_status s = pl_chat_render(m, NULL, msgs, 2, 1, buf, sizeof buf, &n, &e);
    TU_CHECK(s == PL_OK && n == strlen(want) && memcmp(buf, want, n) == 0, "%s: '%.*s'",
             s ? e.msg : "differs", (int)n, buf);
    pl_model_free(m);
}

/* ---- hostile templates: a clear error, the session unchanged ---- */

static void hostile_templates_fail_clearly_and_leave_the_session_unchanged(void)
{
    pl_model *m = model_with(DEMO_VOCAB_BPE, NULL);
    pl_session *s = m ? session(m) : NULL;
    TU_CHECK(s != NULL, "model and session");
    if (!s) {
        pl_model_free(m);
        return;
    }
    static const pl_chat_message u[] = {{"user", "Tell me about the sea."}};
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 4;
    gp.ignore_eog = 1;
    pl_error e = {0};
    TU_CHECK(pl_chat_messages(s, NULL, u, 1, NULL, &gp, NULL, NULL, NULL, &e) == PL_OK, "%s",
             e.msg);
    const char *t0;
    size_t l0;
    int64_t n0;
    pl_session_history(s, NULL, &n0, &t0, &l0, NULL);
    char *before = malloc(l0 + 1);
    memcpy(before, t0, l0);
    static const struct {
        const char *src;
        pl_status want;
        const char *says;
    } hostile[] = {
        {"{{ raise_exception('roles must alternate') }}", PL_ERR_INVALID_ARG,
         "raised: roles must alternate"},
        {"{% for i in range(1000000000) %}{% endfor %}", PL_ERR_LIMIT, "line 1"},
        {"{{ 'x' * 1000000000 }}", PL_ERR_LIMIT, "line 1"},
        {"{% for i in range(100000) %}{{ 'y' * 10000 }}{% endfor %}", PL_ERR_LIMIT, "line 1"},
        {"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", PL_ERR_LIMIT, "line 1"},
        {"{{ messages[0].content.nope.deeper }}", PL_ERR_INVALID_ARG, "line 1"},
        {"{{ messages | frobnicate }}", PL_ERR_UNSUPPORTED, "frobnicate"},
    };
    for (size_t i = 0; i < N(hostile); i++) {
        pl_chat_template *t = NULL;
        TU_CHECK(pl_chat_template_compile(&t, hostile[i].src, strlen(hostile[i].src), &e) == PL_OK,
                 "%s: %s", hostile[i].src, e.msg);
        const char *json = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
        pl_chat_stats st;
        pl_status r =
            pl_chat_messages_json(s, t, json, strlen(json), NULL, &gp, NULL, NULL, &st, &e);
        TU_CHECK(r == hostile[i].want && tf_mentions(e.msg, hostile[i].says) &&
                     tf_mentions(e.msg, "the given chat template"),
                 "%s: %s: %s", hostile[i].src, pl_status_str(r), e.msg);
        const char *t1;
        size_t l1;
        int64_t n1;
        pl_session_history(s, NULL, &n1, &t1, &l1, NULL);
        TU_CHECK(n1 == n0 && l1 == l0 && memcmp(t1, before, l0) == 0,
                 "%s: the session changed (%lld -> %lld tokens)", hostile[i].src, (long long)n0,
                 (long long)n1);
        pl_chat_template_free(t);
    }
    /* a template that does not compile names its position */
    pl_chat_template *t = NULL;
    pl_status r = pl_chat_template_compile(&t, "a\n{{ x }\n", 9, &e);
    TU_CHECK(r == PL_ERR_FORMAT && !t && tf_mentions(e.msg, "line 2"), "%s: %s", pl_status_str(r),
             e.msg);
    r = pl_chat_template_compile(&t, "\xff{{ x }}", 8, &e);
    TU_CHECK(r == PL_ERR_FORMAT && !t && tf_mentions(e.msg, "UTF-8"), "%s: %s", pl_status_str(r),
             e.msg);
    free(before);
    pl_session_free(s);
    pl_model_free(m);
}

/* ---- the prefix cache under templates that re-render earlier turns ---- */

/* The next-token logits the session's cache gives equal a fresh session's over the same ids. */
static int logits_match_a_fresh_session(const pl_model *m, pl_session *s)
{
    const int32_t *ids;
    int64_t n;
    pl_session_history(s, &ids, &n, NULL, NULL, NULL);
    int32_t *copy = malloc((size_t)n * sizeof *copy);
    memcpy(copy, ids, (size_t)n * sizeof *copy);
    pl_model_info info;
    pl_model_get_info(m, &info, NULL);
    int64_t V = info.n_vocab;
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    pl_session *f = session(m);
    int ok = pl_session_truncate(s, n - 1, NULL) == PL_OK &&
             pl_session_eval(s, copy + n - 1, 1, a, 0, NULL) == PL_OK &&
             pl_session_eval(f, copy, n, b, 0, NULL) == PL_OK &&
             memcmp(a, b, (size_t)V * sizeof *a) == 0;
    pl_session_free(f);
    free(a);
    free(b);
    free(copy);
    return ok;
}

/* Primes s with conversation `held` (prefill only) as if the model had written the last reply,
 * then runs a turn on `next`: returns its stats. */
static pl_chat_stats turn_after(const pl_model *m, pl_session *s, const char *held,
                                const char *reply, const char *next, char **rendered)
{
    pl_chat_stats st = {0};
    pl_error e = {0};
    size_t len = 0;
    char *a = render_json(m, NULL, held, 1, &len, &e);
    TU_CHECK(a != NULL, "render: %s", e.msg);
    if (!a) return st;
    char *primed = malloc(len + strlen(reply) + 1);
    memcpy(primed, a, len);
    strcpy(primed + len, reply);
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 0;
    TU_CHECK(pl_chat(s, primed, strlen(primed), NULL, &gp, NULL, NULL, NULL, &e) == PL_OK, "%s",
             e.msg);
    TU_CHECK(pl_chat_messages_json(s, NULL, next, strlen(next), NULL, &gp, NULL, NULL, &st, &e) ==
                 PL_OK,
             "turn: %s", e.msg);
    *rendered = render_json(m, NULL, next, 1, &len, &e);
    free(a);
    free(primed);
    return st;
}

/* The corpus template `file` on a model of vocabulary v: the session holds `held` and `reply`
 * (as if generated), then a turn on `next` must take path `want`, its prompt holding `has` and
 * not `lacks` (NULL: no check), the history must be that prompt, and the next-token logits
 * those of a fresh session. */
static void rerender_case(const char *file, enum demo_vocab_kind v, const char *held,
                          const char *reply, const char *next, pl_chat_path want, const char *has,
                          const char *lacks)
{
    char *tmpl = corpus(file);
    pl_model *m = tmpl ? model_with(v, tmpl) : NULL;
    pl_session *s = m ? session(m) : NULL;
    TU_CHECK(s != NULL, "%s: model and session", file);
    if (s) {
        char *text = NULL;
        pl_chat_stats st = turn_after(m, s, held, reply, next, &text);
        TU_CHECK(text && strstr(text, has) && (!lacks || !strstr(text, lacks)),
                 "%s: the prompt holds '%s'%s%s: '%s'", file, has, lacks ? " and not " : "",
                 lacks ? lacks : "", text ? text : "NULL");
        TU_CHECK(st.path == want && st.n_reused > 0, "%s: path %s (want %s), reused %lld", file,
                 pl_chat_path_str(st.path), pl_chat_path_str(want), (long long)st.n_reused);
        const char *h;
        size_t hl;
        pl_session_history(s, NULL, NULL, &h, &hl, NULL);
        TU_CHECK(text && hl == strlen(text) && memcmp(h, text, hl) == 0,
                 "%s: the history is the new conversation", file);
        TU_CHECK(logits_match_a_fresh_session(m, s), "%s: logits differ from a fresh session's",
                 file);
        free(text);
    }
    pl_session_free(s);
    pl_model_free(m);
    free(tmpl);
}

#define SEA "{\"role\":\"user\",\"content\":\"Tell me about the sea.\"}"

/* Qwen3 writes an earlier reply without its <think> block: the cache keeps the tokens up to
 * the reply and re-evaluates from there. */
static void qwen3_dropping_earlier_thinking_takes_the_partial_path_and_stays_exact(void)
{
    rerender_case("qwen3.jinja", DEMO_VOCAB_BPE, "{\"messages\":[" SEA "]}",
                  "<think>\nThe sea is large.\n</think>\n\nIt is wide and deep.",
                  "{\"messages\":[" SEA ",{\"role\":\"assistant\",\"content\":\"<think>\\nThe sea "
                  "is large.\\n</think>\\n\\nIt is wide and deep.\"},{\"role\":\"user\","
                  "\"content\":\"And the sky?\"}]}",
                  PL_CHAT_PARTIAL, "It is wide and deep.", "The sea is large");
}

/* The next turn is rendered on a later day: Llama 3.2's system message changes its date. */
static void a_dated_system_message_takes_the_partial_path_and_stays_exact(void)
{
    rerender_case("llama-3.2-3b-official.jinja", DEMO_VOCAB_BPE_LLAMA3,
                  "{\"date_string\":\"26 Jul 2024\",\"messages\":[" SEA "]}", "Hi.",
                  "{\"date_string\":\"27 Jul 2024\",\"messages\":[" SEA ",{\"role\":\"assistant\","
                  "\"content\":\"Hi.\"},{\"role\":\"user\",\"content\":\"How are you?\"}]}",
                  PL_CHAT_PARTIAL, "27 Jul 2024", "26 Jul 2024");
}

/* The same template, a reply without reasoning: the next turn appends, the fast path. */
static void a_template_that_appends_keeps_the_fast_path(void)
{
    rerender_case("qwen3.jinja", DEMO_VOCAB_BPE, "{\"messages\":[" SEA "]}", "It is wide.",
                  "{\"messages\":[" SEA ",{\"role\":\"assistant\",\"content\":\"It is wide.\"},"
                  "{\"role\":\"user\",\"content\":\"And the sky?\"}]}",
                  PL_CHAT_FAST, "And the sky?", NULL);
}

/* ---- one compiled template, many threads ---- */

typedef struct render_job {
    const pl_model *m;
    const char *json, *want;
    int bad;
} render_job;

static void *render_many(void *arg)
{
    render_job *j = arg;
    for (int i = 0; i < 40 && !j->bad; i++) {
        size_t len = 0;
        char *got = render_json(j->m, NULL, j->json, 1, &len, NULL);
        j->bad = !got || strcmp(got, j->want) != 0;
        free(got);
    }
    return NULL;
}

static void threads_render_the_models_template_as_one_thread_does(void)
{
    char *tmpl = corpus("qwen3.jinja");
    pl_model *m = tmpl ? model_with(DEMO_VOCAB_BPE, tmpl) : NULL;
    TU_CHECK(m != NULL, "qwen3 model");
    if (!m) {
        free(tmpl);
        return;
    }
    const char *json =
        "{\"messages\":[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":"
        "\"Q\"},{\"role\":\"assistant\",\"content\":\"<think>\\nr\\n</think>\\n\\nA\"},"
        "{\"role\":\"user\",\"content\":\"Q2\"}],\"tools\":[{\"type\":\"function\",\"function\":"
        "{\"name\":\"f\"}}],\"enable_thinking\":false}";
    size_t len = 0;
    pl_error e = {0};
    char *want = render_json(m, NULL, json, 1, &len, &e);
    TU_CHECK(want != NULL, "%s", e.msg);
    render_job jobs[4];
    pthread_t th[4];
    for (int i = 0; want && i < 4; i++) {
        jobs[i] = (render_job){m, json, want, 0};
        pthread_create(&th[i], NULL, render_many, &jobs[i]);
    }
    for (int i = 0; want && i < 4; i++) {
        pthread_join(th[i], NULL);
        TU_CHECK(!jobs[i].bad, "thread %d rendered other bytes", i);
    }
    free(want);
    pl_model_free(m);
    free(tmpl);
}

/* ---- mkmodel's family vocabularies (issue 47 item 13) ---- */

static int is_eog(const pl_model *m, const char *text)
{
    int32_t id[4];
    size_t n = 0;
    if (pl_tokenize(m, text, strlen(text), PL_TOKENIZE_PARSE_SPECIAL, id, 4, &n, NULL) || n != 1)
        return -1;
    return pl_vocab_is_eog(m, id[0]);
}

/* Each family vocabulary carries its family's real template, byte for byte the corpus file; its
 * turn markers are one special token each, at the last ids; the template renders a conversation
 * whose markers tokenize to those ids; the end-of-turn marker ends generation. */
static void family_vocabularies_carry_their_real_template_and_turn_tokens(void)
{
    static const struct {
        enum demo_vocab_kind v;
        const char *file, *json, *first_turn, *end_turn;
        int n_tail; /* the markers' distance from the end: first_turn's, end_turn's */
        int first_at, end_at;
    } fam[] = {
        {DEMO_VOCAB_GEMMA, "gemma-2-it.jinja",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", "<start_of_turn>",
         "<end_of_turn>", 2, 2, 1},
        {DEMO_VOCAB_PHI3, "phi-3.jinja", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
         "<|user|>", "<|end|>", 5, 1, 2},
    };
    for (size_t i = 0; i < N(fam); i++) {
        char *want = corpus(fam[i].file);
        pl_model *m = model_with(fam[i].v, NULL);
        TU_CHECK(want && m, "%s: corpus file or model missing", fam[i].file);
        if (!want || !m) {
            free(want);
            pl_model_free(m);
            continue;
        }
        const char *src = NULL;
        size_t len = 0;
        CU_ASSERT(pl_model_chat_template(m, &src, &len, NULL) == PL_OK);
        TU_CHECK(src && len == strlen(want) && memcmp(src, want, len) == 0,
                 "%s: the vocabulary's template is not the corpus file", fam[i].file);
        pl_model_info info;
        CU_ASSERT_FATAL(pl_model_get_info(m, &info, NULL) == PL_OK);
        pl_error err;
        size_t n = 0;
        char *text = render_json(m, NULL, fam[i].json, 1, &n, &err);
        TU_CHECK(text && strstr(text, fam[i].first_turn) && strstr(text, fam[i].end_turn),
                 "%s: render: %s", fam[i].file, text ? text : err.msg);
        int32_t ids[64];
        size_t nid = 0;
        if (text &&
            pl_tokenize(m, text, n, PL_TOKENIZE_PARSE_SPECIAL, ids, 64, &nid, &err) == PL_OK) {
            int saw_first = 0, saw_end = 0;
            for (size_t k = 0; k < nid; k++) {
                saw_first |= ids[k] == (int32_t)(info.n_vocab - fam[i].first_at);
                saw_end |= ids[k] == (int32_t)(info.n_vocab - fam[i].end_at);
            }
            TU_CHECK(saw_first && saw_end,
                     "%s: the rendered turn markers are not the ids %lld "
                     "and %lld",
                     fam[i].file, (long long)(info.n_vocab - fam[i].first_at),
                     (long long)(info.n_vocab - fam[i].end_at));
        } else {
            TU_CHECK(0, "%s: tokenize: %s", fam[i].file, err.msg);
        }
        TU_CHECK(is_eog(m, fam[i].end_turn) == 1, "%s: %s does not end generation", fam[i].file,
                 fam[i].end_turn);
        TU_CHECK(is_eog(m, fam[i].first_turn) == 0, "%s: %s ends generation", fam[i].file,
                 fam[i].first_turn);
        free(text);
        free(want);
        pl_model_free(m);
    }
    /* the presets' own templates, for families that share a vocabulary layout */
    static const struct {
        const char *text, *file;
    } own[] = {{demo_tmpl_gemma3, "gemma-3.jinja"}, {demo_tmpl_mistral, "mistral-instruct.jinja"}};
    for (size_t i = 0; i < N(own); i++) {
        char *want = corpus(own[i].file);
        TU_CHECK(want && strcmp(want, own[i].text) == 0, "%s: the preset's template differs",
                 own[i].file);
        free(want);
    }
    mk_config c;
    CU_ASSERT(mk_preset("gemma3-1b", &c) == 0 && c.vocab == DEMO_VOCAB_GEMMA &&
              c.chat_template == demo_tmpl_gemma3);
    CU_ASSERT(mk_preset("gemma2-2b", &c) == 0 && c.vocab == DEMO_VOCAB_GEMMA && !c.chat_template);
    CU_ASSERT(mk_preset("phi3-mini", &c) == 0 && c.vocab == DEMO_VOCAB_PHI3);
    CU_ASSERT(mk_preset("mixtral-8x7b", &c) == 0 && c.chat_template == demo_tmpl_mistral);
}

int main(void)
{
    static const tu_test tests[] = {
        {"a_template_that_does_not_compile_is_reported_and_the_model_still_runs",
         a_template_that_does_not_compile_is_reported_and_the_model_still_runs},
        {"an_empty_template_is_no_template", an_empty_template_is_no_template},
        {"family_vocabularies_carry_their_real_template_and_turn_tokens",
         family_vocabularies_carry_their_real_template_and_turn_tokens},
        {"json_conversations_reach_the_template_as_transformers_passes_them",
         json_conversations_reach_the_template_as_transformers_passes_them},
        {"bad_json_conversations_are_refused_with_their_position",
         bad_json_conversations_are_refused_with_their_position},
        {"bytes_that_are_not_utf8_reach_the_prompt_unchanged",
         bytes_that_are_not_utf8_reach_the_prompt_unchanged},
        {"hostile_templates_fail_clearly_and_leave_the_session_unchanged",
         hostile_templates_fail_clearly_and_leave_the_session_unchanged},
        {"qwen3_dropping_earlier_thinking_takes_the_partial_path_and_stays_exact",
         qwen3_dropping_earlier_thinking_takes_the_partial_path_and_stays_exact},
        {"a_dated_system_message_takes_the_partial_path_and_stays_exact",
         a_dated_system_message_takes_the_partial_path_and_stays_exact},
        {"a_template_that_appends_keeps_the_fast_path",
         a_template_that_appends_keeps_the_fast_path},
        {"threads_render_the_models_template_as_one_thread_does",
         threads_render_the_models_template_as_one_thread_does},
        {NULL, NULL},
    };
    return tu_run("chat_template", tests);
}
