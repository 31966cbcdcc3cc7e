/* request.c — the pure request path of the server: routing, auth, JSON parsing (jansson),
 * parameter validation and prompt rendering. No network, no state; the HTTP layer calls it. */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve.h"

static const char *const ep_paths[SV_EP_COUNT] = {
    [SV_EP_NONE] = "other",
    [SV_EP_HEALTH] = "/health",
    [SV_EP_MODELS] = "/v1/models",
    [SV_EP_CHAT] = "/v1/chat/completions",
    [SV_EP_COMPLETIONS] = "/v1/completions",
    [SV_EP_METRICS] = "/metrics",
    [SV_EP_SLOTS] = "/slots",
    [SV_EP_MODEL_FILE] = "/model.gguf",
};

const char *sv_endpoint_path(sv_endpoint ep)
{
    return ep > SV_EP_NONE && ep < SV_EP_COUNT ? ep_paths[ep] : ep_paths[SV_EP_NONE];
}

const char *sv_endpoint_methods(sv_endpoint ep)
{
    return ep == SV_EP_CHAT || ep == SV_EP_COMPLETIONS ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
}

int sv_error_set(sv_error *e, int status, const char *type, const char *code, const char *param,
                 const char *fmt, ...)
{
    e->status = status;
    e->type = type;
    e->code = code;
    e->retry_after = 0;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

char *sv_error_json(const sv_error *e)
{
    size_t n;
    char *msg = sv_utf8_clean(e->message, strlen(e->message), &n);
    if (!msg) return NULL;
    json_t *o = json_pack("{s:{s:s%,s:s,s:o,s:o}}", "error", "message", msg, n, "type",
                          e->type ? e->type : "server_error", "param",
                          e->param[0] ? json_string(e->param) : json_null(), "code",
                          e->code ? json_string(e->code) : json_null());
    free(msg);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

void sv_request_free(sv_request *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_stops; i++) free(r->stops[i]);
    free(r->prompt);
    memset(r, 0, sizeof *r);
}

/* ---- routing and auth ------------------------------------------------------------------- */

static const char *header(const sv_header *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].name && h[i].value && strcasecmp(h[i].name, name) == 0) return h[i].value;
    return NULL;
}

/* Compares without an early exit, so the time says nothing about where a guess went wrong. */
static int same_secret(const char *a, size_t na, const char *b, size_t nb)
{
    unsigned char d = na != nb;
    for (size_t i = 0; i < na; i++) d |= (unsigned char)(a[i] ^ b[i < nb ? i : 0]);
    return nb > 0 && d == 0;
}

/* 1 when key is unset or the Authorization header carries it as a bearer token. */
static int authorized(const char *key, const sv_header *h, size_t n)
{
    if (!key || !key[0]) return 1;
    const char *v = header(h, n, "Authorization");
    if (!v) return 0;
    while (*v == ' ') v++;
    if (strncasecmp(v, "Bearer ", 7) != 0) return 0;
    v += 7;
    while (*v == ' ') v++;
    size_t len = strlen(v);
    while (len && (v[len - 1] == ' ' || v[len - 1] == '\t')) len--;
    return same_secret(key, strlen(key), v, len);
}

/* The key an endpoint needs: none on /health; /metrics its own (--metrics-key), else none, so
 * a scraper needs no client's key; the rest the API key. */
static const char *key_for(const sv_api *api, sv_endpoint ep)
{
    if (ep == SV_EP_HEALTH) return NULL;
    if (ep == SV_EP_METRICS) return api->metrics_key;
    return api->api_key;
}

static int route(const char *url, size_t *path_len, int *is_post)
{
    static const struct {
        const char *path;
        sv_endpoint ep;
        int post;
    } routes[] = {
        {"/health", SV_EP_HEALTH, 0},
        {"/v1/models", SV_EP_MODELS, 0},
        {"/v1/chat/completions", SV_EP_CHAT, 1},
        {"/v1/completions", SV_EP_COMPLETIONS, 1},
        {"/metrics", SV_EP_METRICS, 0},
        {"/slots", SV_EP_SLOTS, 0},
        {"/model.gguf", SV_EP_MODEL_FILE, 0},
    };
    *path_len = strcspn(url, "?#");
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strlen(routes[i].path) == *path_len && memcmp(routes[i].path, url, *path_len) == 0) {
            *is_post = routes[i].post;
            return routes[i].ep;
        }
    return SV_EP_NONE;
}

/* ---- fields ----------------------------------------------------------------------------- */

static int bad_field(sv_error *e, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int bad_field(sv_error *e, const char *field, const char *fmt, ...)
{
    char what[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sv_error_set(e, 400, "invalid_request_error", "invalid_value", field, "'%s': %s", field,
                        what);
}

static int wrong_type(sv_error *e, const char *field, const json_t *v, const char *want)
{
    return sv_error_set(e, 400, "invalid_request_error", "invalid_type", field,
                        "'%s' must be %s, not %s", field, want, pl_json_kind(v));
}

/* A number field in [lo, hi] (lo excluded when lo_open). 1 absent, 0 read, -1 error. */
static int get_number(const json_t *body, const char *field, double lo, int lo_open, double hi,
                      float *out, sv_error *e)
{
    json_t *v = json_object_get(body, field);
    if (!v || json_is_null(v)) return 1;
    if (!json_is_number(v)) return wrong_type(e, field, v, "a number");
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
        return bad_field(e, field, "%g is outside %s%g, %g]", x, lo_open ? "(" : "[", lo, hi);
    *out = (float)x;
    return 0;
}

/* An integer field >= lo (larger values are clamped to hi). 1 absent, 0 read, -1 error. */
static int get_int(const json_t *body, const char *field, json_int_t lo, json_int_t hi,
                   json_int_t *out, sv_error *e)
{
    json_t *v = json_object_get(body, field);
    if (!v || json_is_null(v)) return 1;
    if (!json_is_integer(v)) return wrong_type(e, field, v, "an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo) return bad_field(e, field, "%lld is less than %lld", (long long)x, (long long)lo);
    *out = x > hi ? hi : x;
    return 0;
}

/* A boolean field. 1 absent, 0 read, -1 error. */
static int get_bool(const json_t *obj, const char *field, const char *name, int *out, sv_error *e)
{
    json_t *v = json_object_get(obj, field);
    if (!v || json_is_null(v)) return 1;
    if (!json_is_boolean(v)) return wrong_type(e, name, v, "a boolean");
    *out = json_is_true(v);
    return 0;
}

static int get_stops(const json_t *body, sv_request *r, sv_error *e)
{
    json_t *v = json_object_get(body, "stop");
    if (!v || json_is_null(v)) return 0;
    const json_t *one[1] = {v};
    size_t n = 1;
    if (json_is_array(v)) {
        n = json_array_size(v);
        if (n > SV_MAX_STOP)
            return bad_field(e, "stop", "%zu strings; at most %d are allowed", n, SV_MAX_STOP);
    } else if (!json_is_string(v)) {
        return wrong_type(e, "stop", v, "a string or an array of strings");
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_is_array(v) ? json_array_get(v, i) : one[0];
        char field[32];
        if (json_is_array(v))
            snprintf(field, sizeof field, "stop[%zu]", i);
        else
            snprintf(field, sizeof field, "stop");
        if (!json_is_string(s)) return wrong_type(e, field, s, "a string");
        size_t len = json_string_length(s);
        if (len == 0) return bad_field(e, field, "must not be empty");
        if (len > PL_GEN_MAX_STOP_LEN)
            return bad_field(e, field, "%zu bytes; at most %d are allowed", len,
                             PL_GEN_MAX_STOP_LEN);
        if (!(r->stops[r->n_stops] = strdup(json_string_value(s))))
            return sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        r->n_stops++;
    }
    return 0;
}

/* The sampling and generation fields both endpoints share. */
static int get_common(const sv_api *api, const json_t *body, sv_request *r, sv_error *e)
{
    json_t *v;
    if ((v = json_object_get(body, "model")) && !json_is_null(v) && !json_is_string(v))
        return wrong_type(e, "model", v, "a string");
    r->sp = pl_sampler_default_params();
    r->sp.temperature = 0.8f;
    if (get_number(body, "temperature", 0, 0, 2, &r->sp.temperature, e) < 0 ||
        get_number(body, "top_p", 0, 1, 1, &r->sp.top_p, e) < 0 ||
        get_number(body, "min_p", 0, 0, 1, &r->sp.min_p, e) < 0 ||
        get_number(body, "frequency_penalty", -2, 0, 2, &r->sp.freq_penalty, e) < 0 ||
        get_number(body, "presence_penalty", -2, 0, 2, &r->sp.presence_penalty, e) < 0)
        return -1;
    json_int_t x = 0;
    int rc;
    if ((rc = get_int(body, "top_k", 0, INT32_MAX, &x, e)) < 0) return -1;
    if (rc == 0) r->sp.top_k = (int32_t)x;
    r->max_tokens = api->max_tokens;
    if ((rc = get_int(body, "max_completion_tokens", 1, INT32_MAX, &x, e)) < 0) return -1;
    if (rc == 0) r->max_tokens = x;
    if ((rc = get_int(body, "max_tokens", 1, INT32_MAX, &x, e)) < 0) return -1;
    if (rc == 0) r->max_tokens = x;
    if ((v = json_object_get(body, "seed")) && !json_is_null(v)) {
        if (!json_is_integer(v)) return wrong_type(e, "seed", v, "an integer");
        r->sp.seed = (uint64_t)json_integer_value(v);
        r->has_seed = 1;
    }
    if ((rc = get_int(body, "n", 1, INT32_MAX, &x, e)) < 0) return -1;
    if (rc == 0 && x != 1) return bad_field(e, "n", "only n = 1 is supported");
    int flag = 0;
    if (get_bool(body, "logprobs", "logprobs", &flag, e) < 0) return -1;
    if (flag) return bad_field(e, "logprobs", "log probabilities are not supported");
    if ((v = json_object_get(body, "response_format")) && !json_is_null(v)) {
        json_t *t = json_is_object(v) ? json_object_get(v, "type") : NULL;
        if (!json_is_string(t) || strcmp(json_string_value(t), "text") != 0)
            return bad_field(e, "response_format",
                             "only {\"type\": \"text\"} is supported (no JSON mode or schema)");
    }
    if (get_bool(body, "stream", "stream", &r->stream, e) < 0 ||
        get_bool(body, "ignore_eos", "ignore_eos", &r->ignore_eos, e) < 0)
        return -1;
    if ((v = json_object_get(body, "stream_options")) && !json_is_null(v)) {
        if (!json_is_object(v)) return wrong_type(e, "stream_options", v, "an object");
        if (get_bool(v, "include_usage", "stream_options.include_usage", &r->include_usage, e) < 0)
            return -1;
    }
    return get_stops(body, r, e);
}

/* ---- chat messages ---------------------------------------------------------------------- */

/* OpenAI's roles. "developer" reaches the template as it is where the template names it (a
 * branch of its own, as gpt-oss's has); elsewhere as "system", its meaning for models that predate
 * it, so a Llama or Qwen template renders its system turn rather than an unknown header. */
static const char *const roles[] = {"system", "developer", "user", "assistant", "tool", "function"};
#define ROLE_LIST "system, developer, user, assistant, tool, function"

/* What the checks of one conversation carry from message to message. */
typedef struct msg_state {
    int developer_as_is;     /* the template knows the "developer" role */
    const json_t *called;    /* the tool_calls of the last assistant turn still being answered */
    size_t called_at;        /* that assistant message's index */
    unsigned char *answered; /* answered[k]: called[k] has had its tool message */
} msg_state;

static int oom(sv_error *e)
{
    return sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
}

/* An optional string field of obj: absent or null is fine, anything else but a string is 400. */
static int optional_string(const json_t *obj, const char *key, const char *field, sv_error *e)
{
    const json_t *v = json_object_get(obj, key);
    if (v && !json_is_null(v) && !json_is_string(v)) return wrong_type(e, field, v, "a string");
    return 0;
}

/* A required string field of obj, named field in the error. */
static int required_string(const json_t *obj, const char *key, const char *field, sv_error *e)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return bad_field(e, field, "is required");
    if (!json_is_string(v)) return wrong_type(e, field, v, "a string");
    return 0;
}

/* Content as a string or an array of parts: text parts everywhere, refusal parts in assistant
 * turns; the parts are joined into one string, as llama-server does for templates written for
 * string content. */
static int check_content(json_t *msg, const char *prefix, int assistant, sv_error *e)
{
    char field[160];
    json_t *c = json_object_get(msg, "content");
    snprintf(field, sizeof field, "%s.content", prefix);
    if (json_is_string(c)) return 0;
    if (!json_is_array(c)) return wrong_type(e, field, c, "a string or an array of text parts");
    size_t total = 0;
    for (size_t k = 0; k < json_array_size(c); k++) {
        const json_t *p = json_array_get(c, k), *t;
        snprintf(field, sizeof field, "%s.content[%zu]", prefix, k);
        if (!json_is_object(p))
            return wrong_type(e, field, p, "an object {\"type\": \"text\", \"text\": …}");
        t = json_object_get(p, "type");
        const char *key = "text";
        if (assistant && json_is_string(t) && strcmp(json_string_value(t), "refusal") == 0)
            key = "refusal";
        else if (!json_is_string(t) || strcmp(json_string_value(t), "text") != 0) {
            snprintf(field + strlen(field), sizeof field - strlen(field), ".type");
            return bad_field(e, field, "only \"text\" parts are supported%s",
                             assistant ? " (and \"refusal\" in an assistant turn)" : "");
        }
        t = json_object_get(p, key);
        if (!json_is_string(t)) {
            snprintf(field + strlen(field), sizeof field - strlen(field), ".%s", key);
            return wrong_type(e, field, t ? t : json_null(), "a string");
        }
        total += json_string_length(t);
    }
    char *joined = malloc(total + 1);
    if (!joined) return oom(e);
    size_t at = 0;
    for (size_t k = 0; k < json_array_size(c); k++) {
        const json_t *p = json_array_get(c, k);
        const json_t *t = json_object_get(
            p, strcmp(json_string_value(json_object_get(p, "type")), "text") ? "refusal" : "text");
        memcpy(joined + at, json_string_value(t), json_string_length(t));
        at += json_string_length(t);
    }
    int bad = json_object_set_new(msg, "content", json_stringn(joined, at));
    free(joined);
    return bad ? oom(e) : 0;
}

/* An assistant turn's tool_calls: each {"id", "type": "function", "function": {"name",
 * "arguments"}} with string arguments, as OpenAI sends them. Arguments that parse as a JSON object
 * reach the template as that object, the shape transformers' templates expect ("arguments |
 * tojson"); other strings stay strings. */
static int check_tool_calls(json_t *calls, const char *prefix, sv_error *e)
{
    char field[160];
    for (size_t k = 0; k < json_array_size(calls); k++) {
        json_t *c = json_array_get(calls, k), *f, *args;
        snprintf(field, sizeof field, "%s.tool_calls[%zu]", prefix, k);
        if (!json_is_object(c)) return wrong_type(e, field, c, "an object");
        size_t at = strlen(field);
        snprintf(field + at, sizeof field - at, ".id");
        if (required_string(c, "id", field, e)) return -1;
        snprintf(field + at, sizeof field - at, ".type");
        if (required_string(c, "type", field, e)) return -1;
        if (strcmp(json_string_value(json_object_get(c, "type")), "function") != 0)
            return bad_field(e, field, "must be \"function\"");
        snprintf(field + at, sizeof field - at, ".function");
        f = json_object_get(c, "function");
        if (!f) return bad_field(e, field, "is required");
        if (!json_is_object(f)) return wrong_type(e, field, f, "an object");
        snprintf(field + at, sizeof field - at, ".function.name");
        if (required_string(f, "name", field, e)) return -1;
        snprintf(field + at, sizeof field - at, ".function.arguments");
        if (required_string(f, "arguments", field, e)) return -1;
        args = json_object_get(f, "arguments");
        json_t *obj = json_loadb(json_string_value(args), json_string_length(args),
                                 JSON_REJECT_DUPLICATES, NULL);
        if (json_is_object(obj) ? json_object_set_new(f, "arguments", obj) : (json_decref(obj), 0))
            return oom(e);
    }
    return 0;
}

/* The index in calls of the call whose id is id; -1 when none. */
static long call_index(const json_t *calls, const char *id)
{
    for (size_t k = 0; k < json_array_size(calls); k++) {
        const json_t *v = json_object_get(json_array_get(calls, k), "id");
        if (json_is_string(v) && strcmp(json_string_value(v), id) == 0) return (long)k;
    }
    return -1;
}

/* Ends the answers to the last assistant turn's tool calls: each call needs its tool message. */
static int close_calls(msg_state *st, sv_error *e)
{
    for (size_t k = 0; st->called && k < json_array_size(st->called); k++)
        if (!st->answered[k]) {
            char field[96];
            snprintf(field, sizeof field, "messages[%zu].tool_calls", st->called_at);
            return bad_field(
                e, field,
                "tool call '%s' has no tool message answering it (each call needs "
                "one, right after the assistant turn)",
                json_string_value(json_object_get(json_array_get(st->called, k), "id")));
        }
    free(st->answered);
    st->answered = NULL;
    st->called = NULL;
    return 0;
}

/* Checks message i where OpenAI checks it: an object whose role is one of OpenAI's, a name that
 * is a string, content by role (required but beside an assistant's tool calls), tool calls only
 * in assistant turns and in OpenAI's shape, each answered by a tool message naming its id right
 * after that turn. Other keys (reasoning_content, ...) go to the template as they are. */
static int check_message(json_t *msg, size_t i, msg_state *st, sv_error *e)
{
    char prefix[48], field[160];
    snprintf(prefix, sizeof prefix, "messages[%zu]", i);
    if (!json_is_object(msg)) return wrong_type(e, prefix, msg, "an object");
    const json_t *role = json_object_get(msg, "role"), *c = json_object_get(msg, "content");
    snprintf(field, sizeof field, "%s.role", prefix);
    if (!role) return bad_field(e, field, "is required");
    if (!json_is_string(role)) return wrong_type(e, field, role, "a string");
    const char *r = json_string_value(role);
    size_t ri = 0;
    while (ri < sizeof roles / sizeof roles[0] && strcmp(roles[ri], r) != 0) ri++;
    if (ri == sizeof roles / sizeof roles[0])
        return bad_field(e, field, "'%.40s' is not a role: one of " ROLE_LIST, r);
    r = roles[ri]; /* the request's string goes when developer becomes system */
    int assistant = strcmp(r, "assistant") == 0, tool = strcmp(r, "tool") == 0;
    if (strcmp(r, "developer") == 0 && !st->developer_as_is &&
        json_object_set_new(msg, "role", json_string("system")))
        return oom(e);
    snprintf(field, sizeof field, "%s.name", prefix);
    if (strcmp(r, "function") == 0 ? required_string(msg, "name", field, e)
                                   : optional_string(msg, "name", field, e))
        return -1;

    json_t *calls = json_object_get(msg, "tool_calls"), *fc = json_object_get(msg, "function_call");
    snprintf(field, sizeof field, "%s.tool_calls", prefix);
    if (calls && !json_is_null(calls)) {
        if (!assistant) return bad_field(e, field, "only an assistant message carries tool calls");
        if (!json_is_array(calls)) return wrong_type(e, field, calls, "an array");
        if (check_tool_calls(calls, prefix, e)) return -1;
    }
    snprintf(field, sizeof field, "%s.function_call", prefix);
    if (fc && !json_is_null(fc)) {
        if (!assistant) return bad_field(e, field, "only an assistant message carries a call");
        if (!json_is_object(fc)) return wrong_type(e, field, fc, "an object");
        snprintf(field, sizeof field, "%s.function_call.name", prefix);
        if (required_string(fc, "name", field, e)) return -1;
        snprintf(field, sizeof field, "%s.function_call.arguments", prefix);
        if (required_string(fc, "arguments", field, e)) return -1;
    }

    /* Tool messages answer the calls of the assistant turn just before them, one each. */
    if (tool) {
        snprintf(field, sizeof field, "%s.tool_call_id", prefix);
        if (required_string(msg, "tool_call_id", field, e)) return -1;
        const char *id = json_string_value(json_object_get(msg, "tool_call_id"));
        if (!st->called)
            return bad_field(e, field,
                             "a tool message must answer a call of the assistant turn before it, "
                             "which has none");
        long k = call_index(st->called, id);
        if (k < 0 || st->answered[k])
            return bad_field(e, field, "'%.40s' is %s tool call of messages[%zu]", id,
                             k < 0 ? "no" : "an already answered", st->called_at);
        st->answered[k] = 1;
    } else {
        if (close_calls(st, e)) return -1;
        if (assistant && json_array_size(calls) > 0) {
            if (!(st->answered = calloc(json_array_size(calls), 1))) return oom(e);
            st->called = calls;
            st->called_at = i;
        }
    }

    snprintf(field, sizeof field, "%s.content", prefix);
    if (!c || json_is_null(c)) {
        /* an assistant turn that only calls tools, or the deprecated function call */
        if (assistant && (json_array_size(calls) > 0 || (fc && !json_is_null(fc)))) return 0;
        if (strcmp(r, "function") == 0 && c) return 0; /* OpenAI: string or null */
        return c ? wrong_type(e, field, c, "a string or an array of text parts")
                 : bad_field(e, field, "is required");
    }
    return check_content(msg, prefix, assistant, e);
}

/* tools: [{"type": "function", "function": {"name", "description"?, "parameters"?,
 * "strict"?}}] with names as OpenAI allows them (letters, digits, _ and -, 1 to 64); tool_choice
 * "none" or "auto" beside them. "required" and a named function would promise a call that
 * nothing here forces (no constrained decoding): refused rather than ignored. */
static int check_tools(const json_t *body, sv_error *e)
{
    const json_t *tools = json_object_get(body, "tools"), *v;
    if (tools && !json_is_null(tools) && !json_is_array(tools))
        return wrong_type(e, "tools", tools, "an array of tool definitions");
    char field[96];
    for (size_t k = 0; k < json_array_size(tools); k++) {
        const json_t *t = json_array_get(tools, k), *f;
        snprintf(field, sizeof field, "tools[%zu]", k);
        if (!json_is_object(t)) return wrong_type(e, field, t, "an object");
        snprintf(field, sizeof field, "tools[%zu].type", k);
        if (required_string(t, "type", field, e)) return -1;
        if (strcmp(json_string_value(json_object_get(t, "type")), "function") != 0)
            return bad_field(e, field, "must be \"function\"");
        snprintf(field, sizeof field, "tools[%zu].function", k);
        if (!(f = json_object_get(t, "function"))) return bad_field(e, field, "is required");
        if (!json_is_object(f)) return wrong_type(e, field, f, "an object");
        snprintf(field, sizeof field, "tools[%zu].function.name", k);
        if (required_string(f, "name", field, e)) return -1;
        const char *name = json_string_value(json_object_get(f, "name"));
        size_t n = strlen(name), ok = n >= 1 && n <= 64;
        for (size_t j = 0; ok && j < n; j++)
            ok = isalnum((unsigned char)name[j]) || name[j] == '_' || name[j] == '-';
        if (!ok || n != json_string_length(json_object_get(f, "name")))
            return bad_field(e, field, "must be 1 to 64 letters, digits, '_' or '-'");
        snprintf(field, sizeof field, "tools[%zu].function.description", k);
        if (optional_string(f, "description", field, e)) return -1;
        snprintf(field, sizeof field, "tools[%zu].function.parameters", k);
        if ((v = json_object_get(f, "parameters")) && !json_is_null(v) && !json_is_object(v))
            return wrong_type(e, field, v, "an object (a JSON Schema)");
        snprintf(field, sizeof field, "tools[%zu].function.strict", k);
        if ((v = json_object_get(f, "strict")) && !json_is_null(v) && !json_is_boolean(v))
            return wrong_type(e, field, v, "a boolean");
    }
    if ((v = json_object_get(body, "parallel_tool_calls")) && !json_is_null(v) &&
        !json_is_boolean(v))
        return wrong_type(e, "parallel_tool_calls", v, "a boolean");
    if (!(v = json_object_get(body, "tool_choice")) || json_is_null(v)) return 0;
    if (json_array_size(tools) == 0)
        return bad_field(e, "tool_choice", "is only allowed when tools are given");
    if (json_is_string(v) &&
        (strcmp(json_string_value(v), "none") == 0 || strcmp(json_string_value(v), "auto") == 0))
        return 0;
    if (json_is_string(v) && strcmp(json_string_value(v), "required") == 0)
        return bad_field(e, "tool_choice",
                         "\"required\" is not supported (nothing forces a "
                         "call): use \"auto\" or \"none\"");
    if (json_is_object(v))
        return bad_field(e, "tool_choice",
                         "naming a function is not supported (nothing forces "
                         "a call): use \"auto\" or \"none\"");
    return bad_field(e, "tool_choice", "must be \"none\", \"auto\", \"required\" or an object");
}

/* The variables the template sees: messages (checked, text parts joined, developer mapped) and
 * tools as the request gives them, and chat_template_kwargs (llama-server's extension:
 * enable_thinking, ...) merged in. */
static json_t *template_vars(const sv_api *api, const json_t *body, sv_error *e)
{
    const json_t *msgs = json_object_get(body, "messages"), *v;
    if (!msgs) return bad_field(e, "messages", "is required"), NULL;
    if (!json_is_array(msgs)) return wrong_type(e, "messages", msgs, "an array"), NULL;
    size_t n = json_array_size(msgs);
    if (n == 0) return bad_field(e, "messages", "must hold at least one message"), NULL;
    if (check_tools(body, e)) return NULL;
    v = json_object_get(body, "tools");
    const json_t *kw = json_object_get(body, "chat_template_kwargs");
    if (kw && !json_is_null(kw) && !json_is_object(kw))
        return wrong_type(e, "chat_template_kwargs", kw, "an object"), NULL;
    json_t *ctx = json_object(), *copy = json_deep_copy(msgs);
    if (!ctx || !copy || (kw && json_is_object(kw) && json_object_update(ctx, (json_t *)kw)) ||
        json_object_set(ctx, "messages", copy) ||
        (v && json_object_set(ctx, "tools", (json_t *)v))) {
        json_decref(copy);
        json_decref(ctx);
        return oom(e), NULL;
    }
    msg_state st = {.developer_as_is =
                        pl_chat_template_knows_role(api->model, api->tmpl, "developer")};
    int bad = 0;
    for (size_t i = 0; i < n && !bad; i++) bad = check_message(json_array_get(copy, i), i, &st, e);
    if (!bad) bad = close_calls(&st, e);
    free(st.answered);
    json_decref(copy);
    if (bad) {
        json_decref(ctx);
        return NULL;
    }
    return ctx;
}

static int render_chat(const sv_api *api, const json_t *body, sv_request *r, sv_error *e)
{
    json_t *ctx = template_vars(api, body, e);
    if (!ctx) return -1;
    pl_error pe = {0};
    size_t need = 0;
    pl_status st = pl_chat_render_jansson(api->model, api->tmpl, ctx, 1, NULL, 0, &need, &pe);
    if (st == PL_ERR_BUFFER_TOO_SMALL || st == PL_OK) {
        if (!(r->prompt = malloc(need + 1))) {
            json_decref(ctx);
            return sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        }
        st = pl_chat_render_jansson(api->model, api->tmpl, ctx, 1, r->prompt, need + 1, &need, &pe);
    }
    json_decref(ctx);
    if (st == PL_ERR_INVALID_ARG || st == PL_ERR_LIMIT || st == PL_ERR_UNSUPPORTED)
        return bad_field(e, "messages", "the chat template rejects them: %s", pe.msg);
    if (st)
        return sv_error_set(e, 500, "server_error", NULL, NULL,
                            "the chat endpoint cannot render: %s: %s", pl_status_str(st), pe.msg);
    r->prompt[need] = 0;
    r->prompt_len = need;
    if (need == 0) { /* Llama 2's template with a lone system message, say: nothing to continue */
        free(r->prompt);
        r->prompt = NULL;
        return bad_field(e, "messages",
                         "render to an empty prompt with this chat template (it writes none of "
                         "them: a user message is needed)");
    }
    return 0;
}

/* The BOS text when the vocabulary adds one (a raw completion prompt gets it as a template
 * would write it); "" otherwise. */
static size_t bos_text(const pl_model *m, char *buf, size_t cap)
{
    int32_t ids[2];
    size_t n = 0, len = 0;
    if (!m || pl_tokenize(m, "", 0, PL_TOKENIZE_ADD_BOS, ids, 2, &n, NULL) || n != 1 ||
        ids[0] != pl_vocab_bos(m))
        return 0;
    if (pl_token_to_piece(m, ids[0], PL_DETOK_SPECIAL, buf, cap, &len, NULL)) return 0;
    return len;
}

static int get_prompt(const sv_api *api, const json_t *body, sv_request *r, sv_error *e)
{
    json_t *p = json_object_get(body, "prompt");
    if (!p) return bad_field(e, "prompt", "is required");
    if (!json_is_string(p)) return wrong_type(e, "prompt", p, "a string");
    size_t len = json_string_length(p);
    if (len == 0) return bad_field(e, "prompt", "must not be empty");
    char bos[64];
    size_t nb = bos_text(api->model, bos, sizeof bos);
    if (nb && len >= nb && memcmp(json_string_value(p), bos, nb) == 0) nb = 0;
    if (!(r->prompt = malloc(nb + len + 1)))
        return sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    memcpy(r->prompt, bos, nb);
    memcpy(r->prompt + nb, json_string_value(p), len + 1);
    r->prompt_len = nb + len;
    return 0;
}

int sv_parse_request(const sv_api *api, const char *method, const char *url,
                     const sv_header *headers, size_t n_headers, const char *body, size_t len,
                     sv_request *req, sv_error *err)
{
    memset(req, 0, sizeof *req);
    if (!method || !url)
        return sv_error_set(err, 400, "invalid_request_error", NULL, NULL, "no method or no URL");
    size_t path_len;
    int is_post = 0;
    sv_endpoint ep = (sv_endpoint)route(url, &path_len, &is_post);
    if (ep == SV_EP_NONE)
        return sv_error_set(err, 404, "invalid_request_error", "not_found", NULL,
                            "no endpoint %.*s (known: /v1/chat/completions, /v1/completions, "
                            "/v1/models, /health, /metrics, /slots, /model.gguf)",
                            (int)(path_len > 120 ? 120 : path_len), url);
    /* A preflight carries no credentials: it is answered before the key is asked. */
    if (strcmp(method, "OPTIONS") == 0) {
        req->ep = ep;
        req->preflight = 1;
        return 0;
    }
    int head = !is_post && strcmp(method, "HEAD") == 0;
    if (strcmp(method, is_post ? "POST" : "GET") != 0 && !head)
        return sv_error_set(err, 405, "invalid_request_error", "method_not_allowed", NULL,
                            "%s takes %s, not %.16s", ep_paths[ep],
                            is_post ? "POST" : "GET or HEAD", method);
    const char *key = key_for(api, ep);
    if (!authorized(key, headers, n_headers))
        return sv_error_set(err, 401, "authentication_error", "invalid_api_key", NULL,
                            header(headers, n_headers, "Authorization")
                                ? "invalid %s key in the Authorization header"
                                : "missing %s key: send 'Authorization: Bearer KEY'",
                            ep == SV_EP_METRICS ? "metrics" : "API");
    req->ep = ep;
    req->head = head;
    if (!is_post) return 0;

    json_error_t je;
    json_t *root = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        sv_error_set(err, 400, "invalid_request_error", "invalid_json", NULL,
                     "the body is not valid JSON: %s (byte %d)", je.text, je.position);
        goto fail;
    }
    if (!json_is_object(root)) {
        sv_error_set(err, 400, "invalid_request_error", "invalid_json", NULL,
                     "the body must be a JSON object, not %s", pl_json_kind(root));
        goto fail;
    }
    if (get_common(api, root, req, err) < 0) goto fail;
    if ((ep == SV_EP_CHAT ? render_chat(api, root, req, err) : get_prompt(api, root, req, err)) < 0)
        goto fail;
    json_decref(root);
    return 0;
fail:
    json_decref(root);
    sv_request_free(req);
    return -1;
}

char *sv_models_json(const sv_api *api, int64_t created)
{
    json_t *o = json_pack("{s:s,s:[{s:s,s:s,s:I,s:s}]}", "object", "list", "data", "id",
                          api->alias ? api->alias : "", "object", "model", "created",
                          (json_int_t)created, "owned_by", "plumb");
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}
