/* fuzz_http.c — harness: the server's request path without the network (serve/request.c):
 * headers + body -> routing -> auth -> JSON -> validation -> prompt rendering on a tiny ChatML
 * model, then tokenization of the rendered prompt and the reply JSON. Not the HTTP parser
 * (libmicrohttpd's) nor generation (fuzz_chat).
 *
 * Input framing: an optional '!' first (the server then has the API key "fuzzkey"), an optional
 * '~' and one byte b choosing the chat template as `plumb serve --chat-template` does (b % the
 * number of choices: every built-in by name, then the caller Jinja sources below; without '~'
 * the model's own), a request line "METHOD URL\n", header lines "Name: value\n" up to an empty line
 * "\n", then the body (every byte after it, NUL and invalid UTF-8 included). Oracles: an accepted
 * request has a known endpoint and is a preflight (OPTIONS: nothing else parsed) or has sampler
 * parameters pl_sampler_new takes, 1 <= max_tokens <= INT32_MAX, at most 4 non-empty stop strings
 * of <= 256 bytes, a prompt of exactly prompt_len bytes that tokenizes; a refused one has a 4xx
 * status whose OpenAI error JSON parses and names its param in the message; replies built from the
 * body bytes are valid JSON. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "mkmodel.h"
#include "serve.h"

#define MAX_INPUT   (64u << 10)
#define MAX_HEADERS 16

static pl_model *model;

/* Caller templates (--chat-template-file): one that raises on a conversation it refuses (as
 * Gemma's and Mistral's do on roles out of order), one that spells bos_token and tools. */
static const char *const JINJA_TEMPLATES[] = {
    "{% for m in messages %}{% if loop.index0 % 2 == 0 and m.role == 'assistant' %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant') }}{% endif %}"
    "[{{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant] "
    "{% endif %}",
    "{{ bos_token }}{% if tools %}{{ tools | tojson }}{% endif %}{% for m in messages %}"
    "<{{ m.role }}>{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}"
    "{{ p.text }}{% endfor %}{% endif %}</{{ m.role }}>{% endfor %}",
};
#define N_JINJA (sizeof JINJA_TEMPLATES / sizeof *JINJA_TEMPLATES)
static pl_chat_template **templates; /* every built-in, then JINJA_TEMPLATES */
static size_t n_templates;

void fuzz_init(void)
{
    /* The request path (tokenizer, template) is under test, not the arithmetic. */
    pl_error e = {0};
    FUZZ_CHECK(mk_load_tiny(DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 1, &model, &e) == PL_OK,
               "tiny model: %s", e.msg);
    const char *const *names = pl_chat_template_names();
    size_t n_builtin = 0;
    while (names[n_builtin]) n_builtin++;
    templates = calloc(n_builtin + N_JINJA, sizeof *templates);
    FUZZ_CHECK(templates != NULL, "calloc");
    for (size_t i = 0; i < n_builtin; i++)
        FUZZ_CHECK(pl_chat_template_builtin(&templates[n_templates++], names[i], &e) == PL_OK,
                   "built-in %s: %s", names[i], e.msg);
    for (size_t i = 0; i < N_JINJA; i++)
        FUZZ_CHECK(pl_chat_template_compile(&templates[n_templates++], JINJA_TEMPLATES[i],
                                            strlen(JINJA_TEMPLATES[i]), &e) == PL_OK,
                   "template %zu: %s", i, e.msg);
}

/* The next line of in[*at..n) (without its '\n') as a NUL-terminated copy; NULL at the end. */
static char *next_line(const uint8_t *in, size_t n, size_t *at)
{
    if (*at >= n) return NULL;
    const uint8_t *nl = memchr(in + *at, '\n', n - *at);
    size_t len = nl ? (size_t)(nl - (in + *at)) : n - *at;
    char *s = malloc(len + 1);
    FUZZ_CHECK(s != NULL, "malloc");
    memcpy(s, in + *at, len);
    s[len] = 0;
    *at += len + (nl ? 1 : 0);
    return s;
}

static void check_error(const sv_error *e)
{
    FUZZ_CHECK(e->status == 400 || e->status == 401 || e->status == 404 || e->status == 405,
               "status %d: %s", e->status, e->message);
    FUZZ_CHECK(e->message[0] && e->type, "empty error");
    if (e->param[0])
        FUZZ_CHECK(strstr(e->message, e->param) != NULL, "message '%s' does not name '%s'",
                   e->message, e->param);
    char *j = sv_error_json(e);
    FUZZ_CHECK(j != NULL, "error JSON");
    json_error_t je;
    json_t *o = json_loads(j, JSON_REJECT_DUPLICATES, &je);
    FUZZ_CHECK(o && json_is_object(json_object_get(o, "error")), "error JSON does not parse: %s",
               j);
    json_decref(o);
    free(j);
}

static void check_request(const sv_request *r)
{
    FUZZ_CHECK(r->ep > SV_EP_NONE && r->ep < SV_EP_COUNT, "endpoint %d", (int)r->ep);
    /* A preflight (OPTIONS) is answered from the endpoint alone: nothing parsed, nothing held. */
    if (r->preflight) {
        FUZZ_CHECK(r->prompt == NULL && r->n_stops == 0, "a preflight holds a request");
        return;
    }
    if (r->ep != SV_EP_CHAT && r->ep != SV_EP_COMPLETIONS) return;
    FUZZ_CHECK(r->prompt && strlen(r->prompt) == r->prompt_len && r->prompt_len > 0,
               "prompt of %zu bytes", r->prompt_len);
    FUZZ_CHECK(r->max_tokens >= 1 && r->max_tokens <= INT32_MAX, "max_tokens %lld",
               (long long)r->max_tokens);
    FUZZ_CHECK(r->n_stops <= SV_MAX_STOP, "%zu stops", r->n_stops);
    for (size_t i = 0; i < r->n_stops; i++) {
        size_t l = strlen(r->stops[i]);
        FUZZ_CHECK(l >= 1 && l <= PL_GEN_MAX_STOP_LEN, "stop %zu of %zu bytes", i, l);
    }
    pl_sampler *smp = NULL;
    pl_error e = {0};
    FUZZ_CHECK(pl_sampler_new(&smp, model, &r->sp, &e) == PL_OK, "sampler refused: %s", e.msg);
    pl_sampler_free(smp);
    /* The rendered prompt tokenizes (as pl_chat will), control tokens parsed. */
    size_t n = 0;
    pl_status st =
        pl_tokenize(model, r->prompt, r->prompt_len, PL_TOKENIZE_PARSE_SPECIAL, NULL, 0, &n, &e);
    FUZZ_CHECK(st == PL_OK || st == PL_ERR_BUFFER_TOO_SMALL, "tokenize: %s", e.msg);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    FUZZ_CHECK(ids != NULL, "malloc");
    FUZZ_CHECK(pl_tokenize(model, r->prompt, r->prompt_len, PL_TOKENIZE_PARSE_SPECIAL, ids, n, &n,
                           &e) == PL_OK,
               "tokenize: %s", e.msg);
    free(ids);
}

/* Replies carry model text that may be any bytes: they must still be valid JSON. The endpoint
 * and the chunk kind come from the length (every kind of either endpoint). */
static void check_replies(const uint8_t *text, size_t n)
{
    sv_result r = {.id = "chatcmpl-x", .finish = "stop", .cache_path = "fast"};
    sv_endpoint ep = n % 2 ? SV_EP_COMPLETIONS : SV_EP_CHAT;
    char *j = sv_response_json(ep, "m", &r, (const char *)text, n);
    FUZZ_CHECK(j != NULL, "response JSON");
    json_error_t je;
    json_t *o = json_loads(j, JSON_ALLOW_NUL, &je);
    FUZZ_CHECK(o != NULL, "response JSON does not parse: %s", je.text);
    json_decref(o);
    free(j);
    int kind = (int)(n / 2 % 4);
    char *ev = sv_chunk_event(ep, "m", &r, kind, (const char *)text, n);
    FUZZ_CHECK(ev != NULL, "chunk of kind %d", kind);
    FUZZ_CHECK(strncmp(ev, "data: ", 6) == 0, "chunk");
    size_t len = strlen(ev);
    FUZZ_CHECK(len >= 8 && strcmp(ev + len - 2, "\n\n") == 0, "chunk framing");
    o = json_loadb(ev + 6, len - 8, JSON_ALLOW_NUL, &je);
    FUZZ_CHECK(o != NULL, "chunk JSON does not parse: %s", je.text);
    json_decref(o);
    free(ev);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT) size = MAX_INPUT;
    size_t at = 0;
    int keyed = size > 0 && data[0] == '!';
    at += (size_t)keyed;
    const pl_chat_template *tmpl = NULL; /* the model's own, on the Jinja engine */
    if (at + 1 < size && data[at] == '~') {
        tmpl = templates[data[at + 1] % n_templates];
        at += 2;
    }
    char *line = next_line(data, size, &at);
    if (!line) return;
    char *url = strchr(line, ' ');
    if (url) *url++ = 0;
    sv_header h[MAX_HEADERS];
    char *lines[MAX_HEADERS];
    size_t nh = 0;
    for (;;) {
        char *l = next_line(data, size, &at);
        if (!l) break;
        if (!l[0] || nh == MAX_HEADERS) {
            free(l);
            break;
        }
        lines[nh] = l;
        char *colon = strchr(l, ':');
        h[nh].name = l;
        h[nh].value = "";
        if (colon) {
            *colon = 0;
            h[nh].value = colon + 1 + (colon[1] == ' ');
        }
        nh++;
    }
    const char *body = (const char *)data + at;
    size_t len = size - at;
    sv_api api = {.model = model,
                  .tmpl = tmpl,
                  .alias = "tiny",
                  .api_key = keyed ? "fuzzkey" : NULL,
                  .max_tokens = 16};
    sv_request req;
    sv_error err;
    if (sv_parse_request(&api, line, url ? url : "", h, nh, body, len, &req, &err) == 0) {
        check_request(&req);
        sv_request_free(&req);
    } else {
        check_error(&err);
        FUZZ_CHECK(req.prompt == NULL && req.n_stops == 0, "a refused request holds memory");
    }
    check_replies((const uint8_t *)body, len);
    for (size_t i = 0; i < nh; i++) free(lines[i]);
    free(line);
}
