/* test_serve_api.c — the server's pure parts without a network: the request path under
 * hostile input (routing, auth, JSON, every field's type and range, rendering), the slot
 * choice, the metrics text and the reply JSON. The HTTP server itself: test_serve_http.c. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mkmodel.h"
#include "serve.h"
#include "testutil.h"

static pl_model *model;
static pl_chat_template *chatml; /* the built-in the tests' prompts are written for */
static sv_api api;

static pl_model *make_model(void)
{
    pl_error e = {0};
    pl_model *m = NULL;
    if (mk_load_tiny(DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 0, &m, &e))
        fprintf(stderr, "model: %s\n", e.msg);
    return m;
}

/* The request path on a POST body; returns the status (200 when accepted). */
static int post(const char *url, const char *body, size_t len, sv_request *r, sv_error *e)
{
    int rc = sv_parse_request(&api, "POST", url, NULL, 0, body, len, r, e);
    return rc ? e->status : 200;
}

static int chat(const char *body, sv_request *r, sv_error *e)
{
    return post("/v1/chat/completions", body, strlen(body), r, e);
}

/* The error JSON parses and holds message, type, param, code. */
static int error_json_ok(const sv_error *e)
{
    char *s = sv_error_json(e);
    if (!s) return 0;
    json_error_t je;
    json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &je);
    free(s);
    json_t *err = o ? json_object_get(o, "error") : NULL;
    int ok = err && json_is_string(json_object_get(err, "message")) &&
             json_is_string(json_object_get(err, "type")) && json_object_get(err, "param") &&
             json_object_get(err, "code");
    json_decref(o);
    return ok;
}

/* ---- routing and auth ---------------------------------------------------------------------- */

static void unknown_path_is_404_and_wrong_method_405(void)
{
    sv_request r;
    sv_error e;
    static const struct {
        const char *method, *url;
        int status;
    } cases[] = {
        {"GET", "/", 404},
        {"GET", "/v1/model", 404},
        {"GET", "/v1/models/", 404},
        {"GET", "/V1/MODELS", 404},
        {"POST", "/v1/embeddings", 404},
        {"GET", "/v1/chat/completions", 405},
        {"PUT", "/v1/completions", 405},
        {"POST", "/health", 405},
        {"DELETE", "/metrics", 405},
        {"HEAD", "/v1/chat/completions", 405},
        {"GET", "/health?x=1", 200},
        {"HEAD", "/v1/models", 200},
        {"HEAD", "/health", 200},
        {"HEAD", "/metrics", 200},
        {"OPTIONS", "/v1/chat/completions", 200},
        {"OPTIONS", "/slots", 200},
        {"OPTIONS", "/nowhere", 404},
        {"GET", "/v1/models", 200},
        {"GET", "/slots", 200},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = sv_parse_request(&api, cases[i].method, cases[i].url, NULL, 0, NULL, 0, &r, &e);
        int status = rc ? e.status : 200;
        TU_CHECK(status == cases[i].status, "%s %s: status %d, want %d (%s)", cases[i].method,
                 cases[i].url, status, cases[i].status, rc ? e.message : "");
        if (!rc)
            TU_CHECK(r.head == !strcmp(cases[i].method, "HEAD") &&
                         r.preflight == !strcmp(cases[i].method, "OPTIONS"),
                     "%s %s: head %d preflight %d", cases[i].method, cases[i].url, r.head,
                     r.preflight);
        if (status == 405) {
            const char *want =
                strstr(cases[i].url, "completions") ? "takes POST," : "takes GET or HEAD";
            TU_CHECK(strstr(e.message, want) != NULL, "%s %s: 405 says '%s': %s", cases[i].method,
                     cases[i].url, want, e.message);
        }
        if (rc) TU_CHECK(error_json_ok(&e), "%s %s: error JSON", cases[i].method, cases[i].url);
        sv_request_free(&r);
    }
}

static void api_key_is_required_everywhere_but_health_and_metrics(void)
{
    sv_api keyed = api;
    keyed.api_key = "s3cret";
    sv_request r;
    sv_error e;
    sv_header none[1] = {{"X-Other", "1"}};
    sv_header wrong[1] = {{"Authorization", "Bearer s3cre"}};
    sv_header longer[1] = {{"Authorization", "Bearer s3cret2"}};
    sv_header basic[1] = {{"Authorization", "Basic s3cret"}};
    sv_header right[1] = {{"authorization", "bearer  s3cret "}};
    const char *urls[] = {"/v1/models", "/slots"};
    for (size_t i = 0; i < 2; i++) {
        const sv_header *bad[] = {NULL, none, wrong, longer, basic};
        for (size_t k = 0; k < 5; k++) {
            int rc =
                sv_parse_request(&keyed, "GET", urls[i], bad[k], bad[k] ? 1 : 0, NULL, 0, &r, &e);
            TU_CHECK(rc && e.status == 401 && strcmp(e.type, "authentication_error") == 0,
                     "%s with bad auth %zu: rc %d status %d", urls[i], k, rc, e.status);
        }
        TU_CHECK(sv_parse_request(&keyed, "GET", urls[i], right, 1, NULL, 0, &r, &e) == 0,
                 "%s with the key: %s", urls[i], e.message);
    }
    TU_CHECK(sv_parse_request(&keyed, "GET", "/health", NULL, 0, NULL, 0, &r, &e) == 0,
             "/health without the key: %s", e.message);
    TU_CHECK(sv_parse_request(&keyed, "GET", "/metrics", NULL, 0, NULL, 0, &r, &e) == 0,
             "/metrics without --metrics-key needs no key: %s", e.message);
    TU_CHECK(sv_parse_request(&keyed, "OPTIONS", "/v1/models", NULL, 0, NULL, 0, &r, &e) == 0 &&
                 r.preflight,
             "a preflight needs no key: %s", e.message);
    TU_CHECK(sv_parse_request(&keyed, "HEAD", "/slots", NULL, 0, NULL, 0, &r, &e) &&
                 e.status == 401,
             "HEAD needs the key as GET does: status %d", e.status);
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    TU_CHECK(sv_parse_request(&keyed, "POST", "/v1/chat/completions", none, 1, body, strlen(body),
                              &r, &e) &&
                 e.status == 401,
             "chat without the key: status %d", e.status);
    TU_CHECK(sv_parse_request(&keyed, "POST", "/v1/chat/completions", right, 1, body, strlen(body),
                              &r, &e) == 0,
             "chat with the key: %s", e.message);
    sv_request_free(&r);
}

/* ---- malformed bodies ------------------------------------------------------------------------ */

static void metrics_key_guards_metrics_alone(void)
{
    sv_api keyed = api;
    keyed.api_key = "s3cret";
    keyed.metrics_key = "m3trics";
    sv_request r;
    sv_error e;
    sv_header api_key[1] = {{"Authorization", "Bearer s3cret"}};
    sv_header metrics_key[1] = {{"Authorization", "Bearer m3trics"}};
    TU_CHECK(sv_parse_request(&keyed, "GET", "/metrics", NULL, 0, NULL, 0, &r, &e) &&
                 e.status == 401 && strstr(e.message, "metrics key"),
             "/metrics without a key: status %d %s", e.status, e.message);
    TU_CHECK(sv_parse_request(&keyed, "GET", "/metrics", api_key, 1, NULL, 0, &r, &e) &&
                 e.status == 401,
             "/metrics with the API key: status %d", e.status);
    TU_CHECK(sv_parse_request(&keyed, "GET", "/metrics", metrics_key, 1, NULL, 0, &r, &e) == 0,
             "/metrics with the metrics key: %s", e.message);
    TU_CHECK(sv_parse_request(&keyed, "GET", "/v1/models", metrics_key, 1, NULL, 0, &r, &e) &&
                 e.status == 401,
             "the metrics key opens nothing else: status %d", e.status);
    keyed.api_key = NULL;
    TU_CHECK(sv_parse_request(&keyed, "GET", "/metrics", NULL, 0, NULL, 0, &r, &e) &&
                 e.status == 401,
             "--metrics-key without --api-key still guards /metrics: status %d", e.status);
}

static void malformed_json_is_400_invalid_json(void)
{
    static const struct {
        const char *body;
        size_t len;
    } cases[] = {
        {"", 0},
        {"{", 1},
        {"}", 1},
        {"[]", 2},
        {"null", 4},
        {"\"text\"", 6},
        {"42", 2},
        {"{\"messages\": [}", 15},
        {"{\"a\":1,\"a\":2}", 13},
        {"{\"messages\":\"\\u0000\"}", 21},
        {"{\"messages\":\"a\0b\"}", 18},
        {"{\"messages\":\"\xff\xfe\"}", 17},
        {"{\"messages\":\"\xc0\xaf\"}", 17},
        {"{\"temperature\": 1e999}", 22},
        {"{\"max_tokens\": 99999999999999999999999}", 39},
        {"{\"x\": NaN}", 10},
        {"{\"x\": Infinity}", 15},
        {"{\"x\": 01}", 9},
        {"{'x': 1}", 8},
        {"{\"x\": 1} trailing", 17},
        {"\xef\xbb\xbf{}", 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sv_request r;
        sv_error e;
        int st = post("/v1/chat/completions", cases[i].body, cases[i].len, &r, &e);
        TU_CHECK(st == 400 && e.code && strcmp(e.code, "invalid_json") == 0,
                 "case %zu: status %d code %s (%s)", i, st, e.code ? e.code : "null",
                 st == 200 ? "" : e.message);
        TU_CHECK(st == 200 || error_json_ok(&e), "case %zu: the error is not valid JSON", i);
        if (st == 200) sv_request_free(&r);
    }
}

static void each_field_checks_its_type_and_range(void)
{
#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
    char long_stop[400];
    snprintf(long_stop, sizeof long_stop, "{" MSG ",\"stop\":\"%0300d\"}", 7);
    static const struct {
        const char *body, *param;
    } fixed[] = {
        {"{}", "messages"},
        {"{\"messages\":{}}", "messages"},
        {"{\"messages\":\"hi\"}", "messages"},
        {"{\"messages\":[]}", "messages"},
        {"{\"messages\":[1]}", "messages[0]"},
        {"{\"messages\":[{}]}", "messages[0].role"},
        {"{\"messages\":[{\"role\":1,\"content\":\"a\"}]}", "messages[0].role"},
        {"{\"messages\":[{\"role\":\"user\"}]}", "messages[0].content"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":null}]}", "messages[0].content"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages[0].content"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":"
         "{}}]}",
         "messages[1].content"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[1]}]}", "messages[0].content[0]"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
         "messages[0].content[0].type"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":3}]}]}",
         "messages[0].content[0].text"},
        {"{" MSG ",\"model\":5}", "model"},
        {"{" MSG ",\"temperature\":\"1\"}", "temperature"},
        {"{" MSG ",\"temperature\":-0.1}", "temperature"},
        {"{" MSG ",\"temperature\":2.5}", "temperature"},
        {"{" MSG ",\"top_p\":0}", "top_p"},
        {"{" MSG ",\"top_p\":1.01}", "top_p"},
        {"{" MSG ",\"top_p\":true}", "top_p"},
        {"{" MSG ",\"top_k\":-1}", "top_k"},
        {"{" MSG ",\"top_k\":1.5}", "top_k"},
        {"{" MSG ",\"min_p\":-1}", "min_p"},
        {"{" MSG ",\"min_p\":1.5}", "min_p"},
        {"{" MSG ",\"max_tokens\":0}", "max_tokens"},
        {"{" MSG ",\"max_tokens\":-9223372036854775807}", "max_tokens"},
        {"{" MSG ",\"max_tokens\":\"5\"}", "max_tokens"},
        {"{" MSG ",\"max_tokens\":5.0}", "max_tokens"},
        {"{" MSG ",\"max_completion_tokens\":0}", "max_completion_tokens"},
        {"{" MSG ",\"stop\":5}", "stop"},
        {"{" MSG ",\"stop\":\"\"}", "stop"},
        {"{" MSG ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop"},
        {"{" MSG ",\"stop\":[\"a\",\"\"]}", "stop[1]"},
        {"{" MSG ",\"stop\":[\"a\",null]}", "stop[1]"},
        {"{" MSG ",\"seed\":1.5}", "seed"},
        {"{" MSG ",\"seed\":\"1\"}", "seed"},
        {"{" MSG ",\"stream\":\"yes\"}", "stream"},
        {"{" MSG ",\"stream\":1}", "stream"},
        {"{" MSG ",\"stream_options\":1}", "stream_options"},
        {"{" MSG ",\"stream_options\":{\"include_usage\":1}}", "stream_options.include_usage"},
        {"{" MSG ",\"n\":2}", "n"},
        {"{" MSG ",\"n\":0}", "n"},
        {"{" MSG ",\"logprobs\":true}", "logprobs"},
        {"{" MSG ",\"tools\":{}}", "tools"},
        {"{" MSG ",\"chat_template_kwargs\":[]}", "chat_template_kwargs"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":{}}]}", "messages[0].tool_calls"},
        /* roles and names where OpenAI checks them */
        {"{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", "messages[0].role"},
        {"{\"messages\":[{\"role\":\"User\",\"content\":\"x\"}]}", "messages[0].role"},
        {"{\"messages\":[{\"role\":\"\",\"content\":\"x\"}]}", "messages[0].role"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"name\":5}]}", "messages[0].name"},
        {"{\"messages\":[{\"role\":\"function\",\"content\":\"x\"}]}", "messages[0].name"},
        {"{\"messages\":[{\"role\":\"system\",\"content\":[{\"type\":\"refusal\","
         "\"refusal\":\"no\"}]}]}",
         "messages[0].content[0].type"},
        {"{\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"refusal\","
         "\"refusal\":1}]}]}",
         "messages[0].content[0].refusal"},
        {"{\"messages\":[{\"role\":\"developer\"}]}", "messages[0].content"},
        /* tool calls: only in assistant turns, in OpenAI's shape, each answered right after */
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]}",
         "messages[0].tool_calls"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"function_call\":{}}]}",
         "messages[0].function_call"},
        {"{\"messages\":[{\"role\":\"assistant\",\"function_call\":{\"name\":\"f\"}}]}",
         "messages[0].function_call.arguments"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[1]}]}",
         "messages[0].tool_calls[0]"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"type\":\"function\"}]}]}",
         "messages[0].tool_calls[0].id"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":"
         "\"code\"}]}]}",
         "messages[0].tool_calls[0].type"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":"
         "\"function\"}]}]}",
         "messages[0].tool_calls[0].function"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":"
         "\"function\",\"function\":{\"arguments\":\"{}\"}}]}]}",
         "messages[0].tool_calls[0].function.name"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":"
         "\"function\",\"function\":{\"name\":\"f\",\"arguments\":{}}}]}]}",
         "messages[0].tool_calls[0].function.arguments"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\","
         "\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":"
         "\"f\",\"arguments\":\"{}\"}}]}]}",
         "messages[1].tool_calls"},
        {"{\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", "messages[0].tool_call_id"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"tool\","
         "\"tool_call_id\":\"c\",\"content\":\"x\"}]}",
         "messages[1].tool_call_id"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":"
         "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":"
         "\"tool\",\"tool_call_id\":\"d\",\"content\":\"x\"}]}",
         "messages[1].tool_call_id"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":"
         "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":"
         "\"tool\",\"tool_call_id\":\"c\",\"content\":\"x\"},{\"role\":\"tool\","
         "\"tool_call_id\":\"c\",\"content\":\"x\"}]}",
         "messages[2].tool_call_id"},
        {"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":"
         "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":"
         "\"tool\",\"tool_call_id\":\"c\"}]}",
         "messages[1].content"},
        /* tool definitions and the choice among them */
        {"{" MSG ",\"tools\":[1]}", "tools[0]"},
        {"{" MSG ",\"tools\":[{\"type\":\"retrieval\"}]}", "tools[0].type"},
        {"{" MSG ",\"tools\":[{\"type\":\"function\"}]}", "tools[0].function"},
        {"{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{}}]}", "tools[0].function.name"},
        {"{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get weather\"}}]}",
         "tools[0].function.name"},
        {"{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"\"}}]}",
         "tools[0].function.name"},
        {"{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
         "\"parameters\":[]}}]}",
         "tools[0].function.parameters"},
        {"{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
         "\"description\":1}}]}",
         "tools[0].function.description"},
        {"{" MSG ",\"tool_choice\":\"auto\"}", "tool_choice"},
        {"{" MSG ",\"parallel_tool_calls\":\"yes\"}", "parallel_tool_calls"},
        {"{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
         "\"tool_choice\":\"required\"}",
         "tool_choice"},
        {"{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
         "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}",
         "tool_choice"},
        {"{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
         "\"tool_choice\":\"sometimes\"}",
         "tool_choice"},
        /* the built-in chatml renders role and content only: what it cannot render is 400 */
        {"{" MSG ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}", "messages"},
        {"{" MSG ",\"response_format\":{\"type\":\"json_object\"}}", "response_format"},
        {"{" MSG ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{}}}",
         "response_format"},
        {"{" MSG ",\"response_format\":\"text\"}", "response_format"},
        {"{" MSG ",\"response_format\":{}}", "response_format"},
        {"{" MSG ",\"frequency_penalty\":3}", "frequency_penalty"},
        {"{" MSG ",\"presence_penalty\":-2.5}", "presence_penalty"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] + 1; i++) {
        const char *body = i < sizeof fixed / sizeof fixed[0] ? fixed[i].body : long_stop;
        const char *param = i < sizeof fixed / sizeof fixed[0] ? fixed[i].param : "stop";
        sv_request r;
        sv_error e;
        int st = chat(body, &r, &e);
        TU_CHECK(st == 400, "%s: status %d, want 400", body, st);
        if (st == 200) {
            sv_request_free(&r);
            continue;
        }
        TU_CHECK(strcmp(e.param, param) == 0, "%s: param '%s', want '%s' (%s)", body, e.param,
                 param, e.message);
        TU_CHECK(strstr(e.message, param) != NULL, "%s: the message does not name %s: %s", body,
                 param, e.message);
        TU_CHECK(error_json_ok(&e), "%s: error JSON", body);
    }
}

/* ---- accepted requests ------------------------------------------------------------------------
 */

static void a_valid_chat_request_renders_the_template(void)
{
    const char *body = "{\"model\":\"whatever\",\"messages\":[{\"role\":\"system\",\"content\":"
                       "\"Be brief.\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                       "\"text\":\"Hel\"},{\"type\":\"text\",\"text\":\"lo \\u00e9\"}]},"
                       "{\"role\":\"assistant\",\"content\":\"Hi\"},{\"role\":\"user\","
                       "\"content\":\"again\"}],\"temperature\":0,\"top_p\":0.5,\"top_k\":"
                       "99999999999,\"min_p\":0,\"max_tokens\":99999999999,\"stop\":[\"x\","
                       "\"yz\"],\"seed\":-5,\"stream\":true,\"stream_options\":{"
                       "\"include_usage\":true},\"response_format\":{\"type\":\"text\"},\"n\":1,"
                       "\"unknown_field\":{\"deep\":[1,2]}}";
    sv_request r;
    sv_error e;
    int st = chat(body, &r, &e);
    TU_CHECK(st == 200, "status %d: %s", st, e.message);
    if (st != 200) return;
    pl_chat_message m[] = {{"system", "Be brief."},
                           {"user", "Hello \xc3\xa9"},
                           {"assistant", "Hi"},
                           {"user", "again"}};
    char want[1024];
    size_t n = 0;
    pl_status ps = pl_chat_render(model, "chatml", m, 4, 1, want, sizeof want, &n, NULL);
    TU_CHECK(ps == PL_OK && r.prompt_len == n && memcmp(r.prompt, want, n) == 0,
             "prompt differs from pl_chat_render: '%s'", r.prompt);
    TU_CHECK(r.ep == SV_EP_CHAT && r.stream && r.include_usage && r.has_seed, "flags");
    TU_CHECK(r.sp.temperature == 0 && r.sp.top_p == 0.5f && r.sp.top_k == INT32_MAX &&
                 r.sp.min_p == 0 && r.sp.seed == (uint64_t)-5,
             "sampler fields: T %g top_p %g top_k %d", r.sp.temperature, r.sp.top_p, r.sp.top_k);
    TU_CHECK(r.max_tokens == INT32_MAX, "max_tokens clamped to INT32_MAX: %lld",
             (long long)r.max_tokens);
    TU_CHECK(r.n_stops == 2 && strcmp(r.stops[0], "x") == 0 && strcmp(r.stops[1], "yz") == 0,
             "stops");
    sv_request_free(&r);

    st = chat("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stop\":\"END\"}", &r, &e);
    TU_CHECK(st == 200 && r.sp.temperature == 0.8f && r.max_tokens == api.max_tokens && !r.stream &&
                 !r.has_seed && r.n_stops == 1 && strcmp(r.stops[0], "END") == 0,
             "defaults: status %d T %g max_tokens %lld", st, r.sp.temperature,
             (long long)r.max_tokens);
    sv_request_free(&r);
}

static void completions_take_a_nonempty_string_prompt(void)
{
    sv_request r;
    sv_error e;
    const char *bad[][2] = {{"{}", "prompt"},
                            {"{\"prompt\":5}", "prompt"},
                            {"{\"prompt\":[\"a\"]}", "prompt"},
                            {"{\"prompt\":\"\"}", "prompt"},
                            {"{\"prompt\":\"a\",\"temperature\":9}", "temperature"}};
    for (size_t i = 0; i < 5; i++) {
        int st = post("/v1/completions", bad[i][0], strlen(bad[i][0]), &r, &e);
        TU_CHECK(st == 400 && strcmp(e.param, bad[i][1]) == 0, "%s: status %d param '%s'",
                 bad[i][0], st, st == 400 ? e.param : "");
        if (st == 200) sv_request_free(&r);
    }
    const char *ok = "{\"prompt\":\"Once upon\",\"max_tokens\":3}";
    int st = post("/v1/completions", ok, strlen(ok), &r, &e);
    TU_CHECK(st == 200 && r.ep == SV_EP_COMPLETIONS && r.prompt_len == 9 &&
                 strcmp(r.prompt, "Once upon") == 0 && r.max_tokens == 3,
             "status %d prompt '%s'", st, st == 200 ? r.prompt : e.message);
    if (st == 200) sv_request_free(&r);
}

/* Random mutations of valid requests and random bytes: a status, never a crash (ASan and
 * UBSan watch), and every error is valid JSON. */
static void random_bodies_never_break_the_request_path(void)
{
    static const char *seeds[] = {
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":4,\"stop\":[\"a\"]}",
        "{\"prompt\":\"x\",\"temperature\":0.5,\"stream\":true,\"seed\":3}",
        "{\"messages\":[{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"s\"}]}]}",
    };
    tu_rng rng;
    tu_rng_init(&rng, tu_seed());
    char buf[256];
    int accepted = 0;
    for (int it = 0; it < 3000; it++) {
        const char *s = seeds[it % 3];
        size_t n = strlen(s);
        memcpy(buf, s, n);
        int edits = (int)tu_rng_range(&rng, 1, 4);
        for (int k = 0; k < edits; k++) {
            size_t at = (size_t)tu_rng_range(&rng, 0, (int64_t)n - 1);
            int op = (int)tu_rng_range(&rng, 0, 2);
            if (op == 0)
                buf[at] = (char)tu_rng_range(&rng, 0, 255);
            else if (op == 1 && n > 1) {
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
            } else if (n < sizeof buf - 1) {
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = "{}[]\",:0-e\\u"[tu_rng_range(&rng, 0, 12)];
                n++;
            }
        }
        sv_request r;
        sv_error e;
        const char *url = it % 2 ? "/v1/completions" : "/v1/chat/completions";
        int st = post(url, buf, n, &r, &e);
        if (st == 200) {
            accepted++;
            TU_CHECK(r.prompt && strlen(r.prompt) == r.prompt_len, "seed %llu it %d: prompt",
                     (unsigned long long)tu_seed(), it);
            sv_request_free(&r);
        } else {
            TU_CHECK(st == 400 && error_json_ok(&e), "seed %llu it %d: status %d",
                     (unsigned long long)tu_seed(), it, st);
        }
    }
    TU_CHECK(accepted > 0, "no mutation was accepted (seed %llu)", (unsigned long long)tu_seed());
}

/* ---- slot choice ------------------------------------------------------------------------------
 */

static void slot_choice_takes_the_fast_path_slot_else_lru(void)
{
    sv_slot_view v[5] = {
        {0, "<|im_start|>user\nabc", 20, 5},      {0, "<|im_start|>user\nabcdef", 23, 9},
        {1, "<|im_start|>user\nabcdefgh", 25, 1}, {0, "", 0, 2},
        {0, "<|im_start|>user\nabcdef", 23, 7},
    };
    size_t lcp;
    const char *p = "<|im_start|>user\nabcdefgh and more";
    TU_CHECK(sv_pick_slot(v, 5, p, strlen(p), &lcp) == 4 && lcp == 23,
             "the longest cached text that starts the prompt, ties to the older (busy slot 2 is "
             "skipped)");
    const char *q = "<|im_start|>user\nabX";
    TU_CHECK(sv_pick_slot(v, 5, q, strlen(q), &lcp) == 3 && lcp == 0,
             "a shared template opening is no match: the least recently used");
    TU_CHECK(sv_pick_slot(v, 5, "<|im_start|>user\nab", 19, &lcp) == 3,
             "a prompt shorter than every cached text: least recently used");
    TU_CHECK(sv_pick_slot(v, 5, "zzz", 3, &lcp) == 3 && lcp == 0, "no match: least recent");
    sv_slot_view busy[2] = {{1, "a", 1, 1}, {1, "b", 1, 2}};
    TU_CHECK(sv_pick_slot(busy, 2, "a", 1, &lcp) == -1, "all busy: -1");
    TU_CHECK(sv_common_prefix("abc", 3, "abd", 3) == 2 && sv_common_prefix("", 0, "a", 1) == 0 &&
                 sv_common_prefix("a\0b", 3, "a\0c", 3) == 2,
             "common prefix counts bytes, NUL included");
}

/* ---- metrics ------------------------------------------------------------------------------------
 */

/* Every line is a comment or `name{labels} value` with a finite or +Inf number. */
static int prometheus_lines_ok(const char *text, char *why, size_t cap)
{
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        if (!end) {
            snprintf(why, cap, "text does not end with a newline");
            return 0;
        }
        if (*line != '#') {
            const char *sp = memchr(line, ' ', (size_t)(end - line));
            if (!sp) {
                snprintf(why, cap, "no value: %.*s", (int)(end - line), line);
                return 0;
            }
            for (const char *c = line; c < sp && *c != '{'; c++)
                if (!((*c >= 'a' && *c <= 'z') || *c == '_')) {
                    snprintf(why, cap, "bad name: %.*s", (int)(end - line), line);
                    return 0;
                }
            char *e;
            strtod(sp + 1, &e);
            if (e != end) {
                snprintf(why, cap, "bad value: %.*s", (int)(end - line), line);
                return 0;
            }
        }
        line = end + 1;
    }
    return 1;
}

static void metrics_text_is_prometheus_with_cumulative_buckets(void)
{
    sv_metrics m;
    TU_CHECK(sv_metrics_init(&m) == 0, "init");
    sv_metrics_request(&m, SV_EP_CHAT, 200, 0.003);
    sv_metrics_request(&m, SV_EP_CHAT, 200, 0.2);
    sv_metrics_request(&m, SV_EP_CHAT, 413, 1000);
    sv_metrics_request(&m, SV_EP_NONE, 404, 0);
    sv_metrics_reject(&m, SV_REJ_CONTEXT);
    sv_metrics_cancel(&m);
    sv_metrics_generation(&m, PL_CHAT_FAST, 10, 5, 8, 0.02);
    sv_metrics_generation(&m, PL_CHAT_SLOW, 7, 1, 0, 0.03);
    sv_gauges g = {.queue = 3, .busy = 1, .total = 2, .in_flight = 4, .state = SV_DRAINING};
    char *t = sv_metrics_text(&m, &g);
    TU_CHECK(t != NULL, "text");
    if (!t) return;
    char why[256] = "";
    TU_CHECK(prometheus_lines_ok(t, why, sizeof why), "%s", why);
    const char *want[] = {
        "plumb_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 2\n",
        "plumb_requests_total{endpoint=\"/v1/chat/completions\",status=\"413\"} 1\n",
        "plumb_requests_total{endpoint=\"other\",status=\"404\"} 1\n",
        "plumb_prompt_tokens_total 17\n",
        "plumb_completion_tokens_total 6\n",
        "plumb_cached_tokens_total 8\n",
        "plumb_prefilled_tokens_total 9\n", /* (10 - 8) + (7 - 0) */
        "plumb_cache_path_total{path=\"fast\"} 1\n",
        "plumb_cache_path_total{path=\"partial\"} 0\n",
        "plumb_cache_path_total{path=\"slow\"} 1\n",
        "plumb_requests_in_flight 4\n",
        "plumb_state{state=\"loading\"} 0\n",
        "plumb_state{state=\"ready\"} 0\n",
        "plumb_state{state=\"draining\"} 1\n",
        "plumb_rejected_total{reason=\"context\"} 1\n",
        "plumb_rejected_total{reason=\"overload\"} 0\n",
        "plumb_cancelled_total 1\n",
        "plumb_queue_length 3\n",
        "plumb_slots_busy 1\n",
        "plumb_slots_total 2\n",
        "plumb_request_duration_seconds_bucket{le=\"0.005\"} 1\n",
        "plumb_request_duration_seconds_bucket{le=\"0.25\"} 2\n",
        "plumb_request_duration_seconds_bucket{le=\"120\"} 2\n",
        "plumb_request_duration_seconds_bucket{le=\"+Inf\"} 3\n",
        "plumb_request_duration_seconds_count 3\n",
        "plumb_ttft_seconds_bucket{le=\"0.025\"} 1\n",
        "plumb_ttft_seconds_count 2\n",
        "# TYPE plumb_ttft_seconds histogram\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        TU_CHECK(strstr(t, want[i]) != NULL, "missing: %s", want[i]);
    free(t);
    sv_metrics_destroy(&m);
}

/* ---- replies ------------------------------------------------------------------------------------
 */

static void replies_are_valid_json_whatever_the_text(void)
{
    size_t n;
    char *c = sv_utf8_clean("a\xff\xc3\xa9\xed\xa0\x80z\xe2\x82", 10, &n);
    TU_CHECK(c && n == 3 + 2 + 9 + 1 + 6 + 1 &&
                 memcmp(c, "a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz", 15) == 0,
             "bad bytes become U+FFFD one by one");
    free(c);
    sv_result r = {.id = "chatcmpl-1",
                   .created = 5,
                   .finish = "stop",
                   .prompt_tokens = 3,
                   .completion_tokens = 2,
                   .cached_tokens = 1,
                   .cache_path = "fast"};
    const char text[] = "x\xff\"\\\n\0y";
    for (int ep = SV_EP_CHAT; ep <= SV_EP_COMPLETIONS; ep++) {
        char *j = sv_response_json((sv_endpoint)ep, "m", &r, text, sizeof text - 1);
        json_error_t je;
        json_t *o = j ? json_loads(j, JSON_ALLOW_NUL, &je) : NULL;
        TU_CHECK(o != NULL, "endpoint %d: response JSON: %s", ep, j ? je.text : "NULL");
        json_t *u = json_object_get(o, "usage");
        TU_CHECK(json_integer_value(json_object_get(u, "total_tokens")) == 5, "total_tokens");
        json_decref(o);
        free(j);
        for (int kind = 0; kind < 4; kind++) {
            char *ev = sv_chunk_event((sv_endpoint)ep, "m", &r, kind, text, sizeof text - 1);
            size_t len = ev ? strlen(ev) : 0;
            TU_CHECK(ev && strncmp(ev, "data: ", 6) == 0 && len > 8 &&
                         strcmp(ev + len - 2, "\n\n") == 0,
                     "endpoint %d kind %d: SSE framing", ep, kind);
            if (!ev) continue;
            ev[len - 2] = 0;
            o = json_loads(ev + 6, JSON_ALLOW_NUL, &je);
            TU_CHECK(o != NULL, "endpoint %d kind %d: chunk JSON: %s", ep, kind, je.text);
            TU_CHECK(json_is_array(json_object_get(o, "choices")), "choices");
            /* usage once per stream: in the include_usage chunk (3) alone. */
            TU_CHECK(!json_object_get(o, "usage") == (kind != 3), "endpoint %d kind %d: usage %s",
                     ep, kind, json_object_get(o, "usage") ? "present" : "absent");
            json_decref(o);
            free(ev);
        }
    }
}

/* ---- the model's own template: tools, tool calls, a model without a template ---- */

/* A tool-calling template (tojson of tools and of each call's arguments, tool results by id). */
static const char tool_tmpl[] =
    "{%- if tools %}TOOLS {{ tools | tojson }}\n{% endif %}"
    "{%- for m in messages %}<{{ m.role }}>"
    "{%- if m.tool_calls %}{% for c in m.tool_calls %}CALL {{ c.function.name }} "
    "{{ c.function.arguments | tojson }}{% endfor %}"
    "{%- elif m.role == 'tool' %}RESULT {{ m.tool_call_id }}: {{ m.content }}"
    "{%- else %}{{ m.content }}{% endif %}</>\n{% endfor %}"
    "{%- if enable_thinking is defined %}THINK {{ enable_thinking }}\n{% endif %}"
    "{%- if add_generation_prompt %}<assistant>{% endif %}";

static void tools_and_tool_calls_reach_the_template(void)
{
    pl_chat_template *t = NULL;
    pl_error pe;
    TU_CHECK(pl_chat_template_compile(&t, tool_tmpl, strlen(tool_tmpl), &pe) == PL_OK, "%s",
             pe.msg);
    sv_api saved = api;
    api.tmpl = t;
    const char *body =
        "{\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":"
        "\"function\",\"function\":{\"name\":\"get\",\"arguments\":"
        "\"{\\\"city\\\":\\\"Oslo\\\"}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"-3 C\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get\"}}],"
        "\"chat_template_kwargs\":{\"enable_thinking\":false}}";
    const char *want = "TOOLS [{\"type\": \"function\", \"function\": {\"name\": \"get\"}}]\n"
                       "<user>weather?</>\n<assistant>CALL get {\"city\": \"Oslo\"}</>\n"
                       "<tool>RESULT c1: -3 C</>\nTHINK False\n<assistant>";
    sv_request r;
    sv_error e;
    int st = chat(body, &r, &e);
    TU_CHECK(st == 200, "status %d: %s", st, e.message);
    if (st == 200) {
        TU_CHECK(r.prompt_len == strlen(want) && memcmp(r.prompt, want, r.prompt_len) == 0,
                 "prompt '%s'", r.prompt);
        sv_request_free(&r);
    }
    /* what the template raises is the client's 400, naming the template's line and column */
    static const char raising[] = "{{ raise_exception('no tools here') }}";
    pl_chat_template *bad = NULL;
    TU_CHECK(pl_chat_template_compile(&bad, raising, strlen(raising), &pe) == PL_OK, "%s", pe.msg);
    api.tmpl = bad;
    st = chat("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}", &r, &e);
    TU_CHECK(st == 400 && strstr(e.message, "no tools here") && strstr(e.message, "line 1"),
             "status %d: %s", st, e.message);
    if (st == 200) sv_request_free(&r);
    api = saved;
    pl_chat_template_free(bad);
    pl_chat_template_free(t);
}

/* OpenAI's six roles are accepted; "developer" reaches a template that does not name it as
 * "system" and one that does as itself; arguments that are no JSON object stay a string; a
 * refusal part of an assistant turn joins its content. */
static void openai_roles_are_accepted_and_developer_maps_to_system(void)
{
    static const char plain[] = "{%- for m in messages %}<{{ m.role }}{% if m.name %} "
                                "{{ m.name }}{% endif %}>{{ m.content or '' }}"
                                "{% if m.tool_calls %}{{ m.tool_calls[0].function.arguments "
                                "| tojson }}{% endif %}\n{% endfor %}";
    static const char knows[] = "{%- for m in messages %}{% if m.role == 'developer' %}DEV "
                                "{% endif %}<{{ m.role }}>{{ m.content or '' }}\n{% endfor %}";
    pl_chat_template *tp = NULL, *tk = NULL;
    pl_error pe;
    TU_CHECK(pl_chat_template_compile(&tp, plain, strlen(plain), &pe) == PL_OK, "%s", pe.msg);
    TU_CHECK(pl_chat_template_compile(&tk, knows, strlen(knows), &pe) == PL_OK, "%s", pe.msg);
    TU_CHECK(!pl_chat_template_knows_role(NULL, tp, "developer") &&
                 pl_chat_template_knows_role(NULL, tk, "developer") &&
                 !pl_chat_template_knows_role(NULL, chatml, "developer"),
             "knows_role: the plain template, the one naming 'developer', the built-in");
    sv_api saved = api;
    const char *body =
        "{\"messages\":[{\"role\":\"developer\",\"content\":\"D\"},{\"role\":\"system\","
        "\"content\":\"S\"},{\"role\":\"user\",\"name\":\"ann\",\"content\":\"U\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"A\"},{\"type\":"
        "\"refusal\",\"refusal\":\"R\"}]},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":"
        "[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":"
        "\"not json\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"T\"},"
        "{\"role\":\"function\",\"name\":\"g\",\"content\":\"F\"}]}";
    static const char *const want[2] = {
        /* trim_blocks eats a newline after a block tag */
        "<system>D<system>S<user ann>U<assistant>AR<assistant>\"not json\"<tool>T<function g>F",
        "DEV <developer>D\n<system>S\n<user>U\n<assistant>AR\n<assistant>\n<tool>T\n<function>F\n"};
    for (int k = 0; k < 2; k++) {
        api.tmpl = k ? tk : tp;
        sv_request r;
        sv_error e;
        int st = chat(body, &r, &e);
        TU_CHECK(st == 200, "template %d: status %d: %s", k, st, e.message);
        if (st != 200) continue;
        TU_CHECK(r.prompt_len == strlen(want[k]) && memcmp(r.prompt, want[k], r.prompt_len) == 0,
                 "template %d: prompt '%s'", k, r.prompt);
        sv_request_free(&r);
    }
    /* the role's error names the field and every allowed value */
    sv_request r;
    sv_error e;
    int st = chat("{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", &r, &e);
    TU_CHECK(st == 400 && strcmp(e.param, "messages[0].role") == 0 && strstr(e.message, "wizard") &&
                 strstr(e.message, "system, developer, user, assistant, tool, function"),
             "status %d param %s: %s", st, e.param, e.message);
    if (st == 200) sv_request_free(&r);
    api = saved;
    pl_chat_template_free(tk);
    pl_chat_template_free(tp);
}

/* Llama 2's template folds the system prompt into the first user turn and has no generation
 * prompt: a lone system message renders nothing, which no model can continue from. The client's
 * 400 naming messages, not an accepted request with an empty prompt (found by fuzz_http). */
static void a_conversation_that_renders_nothing_is_refused(void)
{
    pl_chat_template *llama2 = NULL;
    pl_error pe;
    TU_CHECK(pl_chat_template_builtin(&llama2, "llama2", &pe) == PL_OK, "%s", pe.msg);
    static const char empty_tmpl[] = "{% for m in messages %}{% endfor %}";
    pl_chat_template *empty = NULL;
    TU_CHECK(pl_chat_template_compile(&empty, empty_tmpl, strlen(empty_tmpl), &pe) == PL_OK, "%s",
             pe.msg);
    pl_chat_template *const ts[] = {llama2, empty};
    sv_api saved = api;
    for (int k = 0; k < 2; k++) {
        api.tmpl = ts[k];
        sv_request r;
        sv_error e;
        int st = chat("{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"}]}", &r, &e);
        TU_CHECK(st == 400 && strcmp(e.param, "messages") == 0 && strstr(e.message, "empty") &&
                     r.prompt == NULL && error_json_ok(&e),
                 "template %d: status %d: %s", k, st, st == 200 ? r.prompt : e.message);
        if (st == 200) sv_request_free(&r);
        /* with a user turn the same template renders a prompt */
        st = chat("{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                  "{\"role\":\"user\",\"content\":\"Hi\"}]}",
                  &r, &e);
        TU_CHECK(k == 1 ? st == 400 : st == 200 && r.prompt_len > 0, "template %d: status %d", k,
                 st);
        if (st == 200) sv_request_free(&r);
    }
    api = saved;
    pl_chat_template_free(empty);
    pl_chat_template_free(llama2);
}

static void a_model_without_a_usable_template_still_completes(void)
{
    static const char *const tmpls[] = {"", "{% for %}"};
    for (int k = 0; k < 2; k++) {
        mk_config c;
        pl_error pe = {0};
        pl_model *m = NULL;
        TU_CHECK(mk_preset("tiny", &c) == 0, "preset");
        mk_shrink(&c);
        c.vocab = DEMO_VOCAB_BPE;
        c.n_threads = 1;
        c.chat_template = tmpls[k];
        TU_CHECK(mk_load(&c, &m, &pe) == PL_OK, "template '%s': the model loads: %s", tmpls[k],
                 pe.msg);
        if (!m) continue;
        sv_api saved = api;
        api = (sv_api){.model = m, .alias = "tiny", .max_tokens = 8};
        sv_request r;
        sv_error e;
        int st = chat("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}", &r, &e);
        const char *want =
            k == 0 ? "no chat template" : "does not compile: template line 1, column 8";
        TU_CHECK(st == 500 && strstr(e.message, want), "template '%s': status %d: %s", tmpls[k], st,
                 e.message);
        if (st == 200) sv_request_free(&r);
        st = post("/v1/completions", "{\"prompt\":\"Hello\"}", 18, &r, &e);
        TU_CHECK(st == 200, "template '%s': completions: status %d: %s", tmpls[k], st, e.message);
        if (st == 200) sv_request_free(&r);
        api = saved;
        pl_model_free(m);
    }
}

/* The page's file names: one segment, no traversal, a served type; the embedded page is there. */
static void page_names_are_one_safe_segment_of_a_served_type(void)
{
    static const char *const ok[] = {"index.html",        "app.js",       "plumb-engine.mjs",
                                     "plumb-engine.wasm", "a_b-c.1.json", "style.css"};
    static const char *const bad[] = {"",        ".hidden.js", "..",      "../x.js", "a/b.js",
                                      "a..b.js", "x.exe",      "x",       "x.js/",   "%2e%2e.js",
                                      "a b.js",  "a\\b.js",    "\x80.js", "x.wasm~", "..js"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        TU_CHECK(sv_web_name_ok(ok[i]), "'%s' should be a page name", ok[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        TU_CHECK(!sv_web_name_ok(bad[i]), "'%s' should not be a page name", bad[i]);
    char longname[200];
    memset(longname, 'a', sizeof longname);
    memcpy(longname + sizeof longname - 4, ".js", 4);
    TU_CHECK(!sv_web_name_ok(longname), "a 199-byte name should not be a page name");
    TU_CHECK(strcmp(sv_web_type("x.wasm"), "application/wasm") == 0, "wasm type");
    TU_CHECK(strcmp(sv_web_type("x.mjs"), "text/javascript; charset=utf-8") == 0, "mjs type");
    TU_CHECK(sv_web_type("x.gguf") == NULL, "a .gguf is never served");
    const sv_asset *a = sv_web_embedded("");
    TU_CHECK(a && strcmp(a->name, "index.html") == 0 && a->len > 0, "\"\" is index.html");
    static const char *const files[] = {"app.js", "worker.js", "ring.js", "style.css"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        TU_CHECK(sv_web_embedded(files[i]) != NULL, "'%s' is embedded", files[i]);
    TU_CHECK(sv_web_embedded("plumb-engine.mjs") == NULL, "the engine is not embedded");
}

int main(void)
{
    if (!(model = make_model()) || pl_chat_template_builtin(&chatml, "chatml", NULL)) {
        fprintf(stderr, "test_serve_api: could not build the model\n");
        return 1;
    }
    api = (sv_api){.model = model, .tmpl = chatml, .alias = "tiny", .max_tokens = 77};
    static const tu_test tests[] = {
        {"unknown_path_is_404_and_wrong_method_405", unknown_path_is_404_and_wrong_method_405},
        {"api_key_is_required_everywhere_but_health_and_metrics",
         api_key_is_required_everywhere_but_health_and_metrics},
        {"metrics_key_guards_metrics_alone", metrics_key_guards_metrics_alone},
        {"malformed_json_is_400_invalid_json", malformed_json_is_400_invalid_json},
        {"each_field_checks_its_type_and_range", each_field_checks_its_type_and_range},
        {"a_valid_chat_request_renders_the_template", a_valid_chat_request_renders_the_template},
        {"completions_take_a_nonempty_string_prompt", completions_take_a_nonempty_string_prompt},
        {"random_bodies_never_break_the_request_path", random_bodies_never_break_the_request_path},
        {"slot_choice_takes_the_fast_path_slot_else_lru",
         slot_choice_takes_the_fast_path_slot_else_lru},
        {"metrics_text_is_prometheus_with_cumulative_buckets",
         metrics_text_is_prometheus_with_cumulative_buckets},
        {"replies_are_valid_json_whatever_the_text", replies_are_valid_json_whatever_the_text},
        {"tools_and_tool_calls_reach_the_template", tools_and_tool_calls_reach_the_template},
        {"openai_roles_are_accepted_and_developer_maps_to_system",
         openai_roles_are_accepted_and_developer_maps_to_system},
        {"a_conversation_that_renders_nothing_is_refused",
         a_conversation_that_renders_nothing_is_refused},
        {"a_model_without_a_usable_template_still_completes",
         a_model_without_a_usable_template_still_completes},
        {"page_names_are_one_safe_segment_of_a_served_type",
         page_names_are_one_safe_segment_of_a_served_type},
        {NULL, NULL},
    };
    int rc = tu_run("serve_api", tests);
    pl_chat_template_free(chatml);
    pl_model_free(model);
    return rc;
}
