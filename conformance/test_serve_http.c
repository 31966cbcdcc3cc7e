/* test_serve_http.c — the real server (serve/server.c) started on port 0 in this process and
 * driven over loopback by a minimal socket client: replies whole and streamed, the cache path,
 * seeds, overflow (413, slots unchanged), disconnects (cancelled, slots consistent), the queue
 * (503), body limits, shutdown. Not the curl/SDK tests (those run the `plumb serve` binary). */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"
#include "testutil.h"

static pl_model *model;
static pl_chat_template *chatml; /* the built-in the tests' prompts are written for */

/* The demo model (PLUMB_SERVE_TEST_MODEL): its replies are English, so a client can send
 * them back as JSON byte for byte (a random model's bytes are not valid UTF-8). */
static pl_model *load_model(void)
{
    const char *path = getenv("PLUMB_SERVE_TEST_MODEL");
    if (!path) {
        fprintf(stderr, "test_serve_http: set PLUMB_SERVE_TEST_MODEL to the demo model\n");
        return NULL;
    }
    pl_error e = {0};
    pl_model *m = NULL;
    if (pl_model_load(&m, path, NULL, &e)) fprintf(stderr, "%s: %s\n", path, e.msg);
    return m;
}

/* A server with n slots; sliding: a sliding window (generation never fills it: it runs until
 * max_tokens or a cancel), else a 256-token context window. */
static sv_server *start(int n_slots, int queue, int sliding, size_t max_body)
{
    sv_config cfg = {.host = "127.0.0.1",
                     .port = 0,
                     .n_slots = n_slots,
                     .queue = queue,
                     .max_body = max_body,
                     .timeout_s = 5,
                     .session = pl_session_default_params(model),
                     .api = {.model = model, .tmpl = chatml, .alias = "tiny", .max_tokens = 16}};
    cfg.session.n_threads = 1;
    if (sliding) {
        cfg.session.context_window = 0;
        cfg.session.sliding_window = 64;
        cfg.session.attention_sinks = 4;
    } else {
        cfg.session.context_window = 256;
    }
    sv_server *s = NULL;
    pl_error e = {0};
    pl_status st = sv_server_start(&s, model, &cfg, &e);
    TU_CHECK(st == PL_OK, "start: %s", e.msg);
    return s;
}

/* ---- a minimal HTTP/1.1 client -------------------------------------------------------------- */

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* extra: more header lines, each ended by \r\n ("" for none). */
static int send_request_h(int fd, const char *method, const char *path, const char *extra,
                          const char *body)
{
    char head[1024];
    size_t len = body ? strlen(body) : 0;
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                     method, path, extra, len);
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) != n) return -1;
    size_t at = 0;
    while (at < len) {
        ssize_t k = send(fd, body + at, len - at, MSG_NOSIGNAL);
        if (k <= 0) return -1;
        at += (size_t)k;
    }
    return 0;
}

static int send_request(int fd, const char *method, const char *path, const char *body)
{
    return send_request_h(fd, method, path, "", body);
}

typedef struct reply {
    int status;
    char *head; /* the header block */
    char *body; /* de-chunked */
    size_t len;
} reply;

static void reply_free(reply *r)
{
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* Reads to the end of the connection and splits status, headers, body (chunked decoded). */
static int read_reply(int fd, reply *r)
{
    memset(r, 0, sizeof *r);
    size_t cap = 4096, n = 0;
    char *raw = malloc(cap);
    for (;;) {
        if (n + 1 >= cap) raw = realloc(raw, cap *= 2);
        ssize_t k = recv(fd, raw + n, cap - n - 1, 0);
        if (k <= 0) break;
        n += (size_t)k;
    }
    raw[n] = 0;
    char *sep = strstr(raw, "\r\n\r\n");
    if (!sep || sscanf(raw, "HTTP/1.%*d %d", &r->status) != 1) {
        free(raw);
        return -1;
    }
    r->head = strndup(raw, (size_t)(sep - raw));
    const char *b = sep + 4;
    size_t blen = n - (size_t)(b - raw);
    r->body = malloc(blen + 1);
    if (strstr(r->head, "Transfer-Encoding: chunked")) {
        r->len = 0;
        while (b < raw + n) {
            char *end;
            unsigned long sz = strtoul(b, &end, 16);
            if (end == b || strncmp(end, "\r\n", 2) != 0) break;
            b = end + 2;
            if (sz == 0 || b + sz > raw + n) break;
            memcpy(r->body + r->len, b, sz);
            r->len += sz;
            b += sz + 2;
        }
    } else {
        memcpy(r->body, b, blen);
        r->len = blen;
    }
    r->body[r->len] = 0;
    free(raw);
    return 0;
}

static int request(int port, const char *method, const char *path, const char *body, reply *r)
{
    int fd = connect_to(port);
    int rc = fd < 0 || send_request(fd, method, path, body) || read_reply(fd, r) ? -1 : 0;
    if (fd >= 0) close(fd);
    return rc;
}

static int request_h(int port, const char *method, const char *path, const char *extra,
                     const char *body, reply *r)
{
    int fd = connect_to(port);
    int rc = fd < 0 || send_request_h(fd, method, path, extra, body) || read_reply(fd, r) ? -1 : 0;
    if (fd >= 0) close(fd);
    return rc;
}

/* The value of header name in r (case-insensitive name), copied into buf; NULL when absent. */
static const char *header_of(const reply *r, const char *name, char *buf, size_t cap)
{
    size_t n = strlen(name);
    for (const char *l = r->head; l && *l;) {
        const char *e = strstr(l, "\r\n");
        size_t len = e ? (size_t)(e - l) : strlen(l);
        if (len > n && l[n] == ':' && strncasecmp(l, name, n) == 0) {
            const char *v = l + n + 1;
            while (*v == ' ') v++;
            snprintf(buf, cap, "%.*s", (int)(len - (size_t)(v - l)), v);
            return buf;
        }
        l = e ? e + 2 : NULL;
    }
    return NULL;
}

static json_t *body_json(const reply *r)
{
    json_error_t je;
    return json_loadb(r->body, r->len, 0, &je);
}

static const char *json_str(json_t *o, const char *path)
{
    /* "a.b.c" with numeric parts as array indices. */
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *v = o;
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(tok)) : json_object_get(v, tok);
    return json_string_value(v);
}

static json_int_t json_int(json_t *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *v = o;
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(tok)) : json_object_get(v, tok);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* The slots' histories (ids and text), to compare before and after. */
typedef struct snapshot {
    int n;
    int32_t *ids[8];
    int64_t n_ids[8];
    char *text[8];
    size_t len[8];
} snapshot;

static void snap(sv_server *s, snapshot *sn)
{
    sv_slots *sl = sv_server_slots(s);
    sn->n = sv_slots_total(sl);
    for (int i = 0; i < sn->n; i++) {
        const int32_t *ids;
        const char *text;
        pl_session_history(sv_slots_session(sl, i), &ids, &sn->n_ids[i], &text, &sn->len[i], NULL);
        sn->ids[i] = malloc(((size_t)sn->n_ids[i] + 1) * sizeof(int32_t));
        memcpy(sn->ids[i], ids, (size_t)sn->n_ids[i] * sizeof(int32_t));
        sn->text[i] = malloc(sn->len[i] + 1);
        memcpy(sn->text[i], text, sn->len[i]);
    }
}

static int same_snap(const snapshot *a, const snapshot *b)
{
    for (int i = 0; i < a->n; i++)
        if (a->n_ids[i] != b->n_ids[i] || a->len[i] != b->len[i] ||
            memcmp(a->ids[i], b->ids[i], (size_t)a->n_ids[i] * sizeof(int32_t)) ||
            memcmp(a->text[i], b->text[i], a->len[i]))
            return 0;
    return 1;
}

static void snap_free(snapshot *sn)
{
    for (int i = 0; i < sn->n; i++) {
        free(sn->ids[i]);
        free(sn->text[i]);
    }
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to 10 s until every slot is idle and no one waits. */
static int wait_idle(sv_server *s)
{
    for (int i = 0; i < 1000; i++) {
        int busy, queued;
        sv_slots_counts(sv_server_slots(s), &busy, &queued);
        if (!busy && !queued) return 1;
        sleep_ms(10);
    }
    return 0;
}

static int all_consistent(sv_server *s)
{
    sv_slots *sl = sv_server_slots(s);
    for (int i = 0; i < sv_slots_total(sl); i++)
        if (sv_slots_consistent(sl, i) != 1) return 0;
    return 1;
}

static uint64_t cancelled(sv_server *s)
{
    sv_metrics *m = sv_server_metrics(s);
    pthread_mutex_lock(&m->mu);
    uint64_t n = m->cancelled;
    pthread_mutex_unlock(&m->mu);
    return n;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void health_models_and_errors_over_http(void)
{
    sv_server *s = start(2, 4, 0, 4096);
    if (!s) return;
    int port = sv_server_port(s);
    TU_CHECK(port > 0, "port %d", port);
    reply r;
    TU_CHECK(request(port, "GET", "/health", NULL, &r) == 0 && r.status == 200 &&
                 strstr(r.body, "\"slots_total\":2") && strstr(r.body, "\"slots_idle\":2"),
             "health: %d %s", r.status, r.body);
    reply_free(&r);
    TU_CHECK(request(port, "GET", "/v1/models", NULL, &r) == 0 && r.status == 200 &&
                 strstr(r.body, "\"id\":\"tiny\""),
             "models: %d %s", r.status, r.body);
    reply_free(&r);
    TU_CHECK(request(port, "GET", "/nowhere", NULL, &r) == 0 && r.status == 404, "404: %d",
             r.status);
    reply_free(&r);
    TU_CHECK(request(port, "POST", "/v1/chat/completions", "{\"messages\": 1}", &r) == 0 &&
                 r.status == 400 && strstr(r.body, "\"param\":\"messages\""),
             "400: %d %s", r.status, r.body);
    reply_free(&r);
    /* A declared body over the limit: 413 before the body is read. */
    int fd = connect_to(port);
    const char *big = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                      "100000\r\n\r\n{\"messages\":";
    send(fd, big, strlen(big), MSG_NOSIGNAL);
    TU_CHECK(read_reply(fd, &r) == 0 && r.status == 413 && strstr(r.body, "request_too_large"),
             "413 on Content-Length: %d %s", r.status, r.body);
    close(fd);
    reply_free(&r);
    /* Just over the limit (4096 < 6000 <= 2 x 4096): read whole and dropped, then the 413, so a
     * client still writing its body reads the answer instead of a reset connection. */
    fd = connect_to(port);
    char head[160], *body = malloc(6000);
    memset(body, 'a', 6000);
    snprintf(head, sizeof head,
             "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 6000\r\n\r\n");
    send(fd, head, strlen(head), MSG_NOSIGNAL);
    TU_CHECK(send(fd, body, 6000, MSG_NOSIGNAL) == 6000, "the 6000-byte body was not accepted");
    TU_CHECK(read_reply(fd, &r) == 0 && r.status == 413 && strstr(r.body, "request_too_large"),
             "413 after a body just over the limit: %d %s", r.status, r.body);
    close(fd);
    free(body);
    reply_free(&r);
    /* A chunked body that grows past the limit. */
    fd = connect_to(port);
    const char *chunked = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
                          "chunked\r\nConnection: close\r\n\r\n";
    send(fd, chunked, strlen(chunked), MSG_NOSIGNAL);
    char chunk[1100];
    memset(chunk, 'a', sizeof chunk);
    for (int i = 0; i < 6; i++) {
        char h[16];
        int hn = snprintf(h, sizeof h, "%zx\r\n", sizeof chunk);
        send(fd, h, (size_t)hn, MSG_NOSIGNAL);
        send(fd, chunk, sizeof chunk, MSG_NOSIGNAL);
        send(fd, "\r\n", 2, MSG_NOSIGNAL);
    }
    send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL);
    TU_CHECK(read_reply(fd, &r) == 0 && r.status == 413, "413 on a chunked body: %d", r.status);
    close(fd);
    reply_free(&r);
    TU_CHECK(request(port, "GET", "/metrics", NULL, &r) == 0 && r.status == 200 &&
                 strstr(r.head, "text/plain; version=0.0.4") &&
                 strstr(r.body, "plumb_rejected_total{reason=\"body\"} 3"),
             "metrics: %s", r.body);
    reply_free(&r);
    sv_server_stop(s);
}

#define CHAT1 "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello there\"}],\"seed\":11"
#define TURN2                                                                                      \
    "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello there\"},{\"role\":\"assistant\","      \
    "\"content\":%s},{\"role\":\"user\",\"content\":\"More\"}],\"seed\":12,\"max_tokens\":8}"

static void chat_replies_whole_and_streamed_agree(void)
{
    sv_server *s = start(2, 4, 0, 1 << 20);
    if (!s) return;
    int port = sv_server_port(s);
    reply r;
    TU_CHECK(request(port, "POST", "/v1/chat/completions", CHAT1 ",\"max_tokens\":12}", &r) == 0 &&
                 r.status == 200,
             "chat: %d %s", r.status, r.body);
    json_t *o = body_json(&r);
    const char *text1 = json_str(o, "choices.0.message.content");
    TU_CHECK(o && text1 && strcmp(json_str(o, "object"), "chat.completion") == 0 &&
                 json_int(o, "usage.completion_tokens") >= 1 &&
                 json_int(o, "usage.total_tokens") ==
                     json_int(o, "usage.prompt_tokens") + json_int(o, "usage.completion_tokens"),
             "chat body: %s", r.body);
    char *first = strdup(text1 ? text1 : "");
    const char *finish = json_str(o, "choices.0.finish_reason");
    TU_CHECK(finish && (strcmp(finish, "stop") == 0 || strcmp(finish, "length") == 0),
             "finish_reason %s", finish ? finish : "null");
    json_decref(o);
    reply_free(&r);

    /* The next turn extends the conversation: the fast path, on the same slot. */
    json_t *t = json_string(first);
    char *enc = json_dumps(t, JSON_ENCODE_ANY);
    json_decref(t);
    char body[4096];
    snprintf(body, sizeof body, TURN2, enc);
    free(enc);
    TU_CHECK(request(port, "POST", "/v1/chat/completions", body, &r) == 0 && r.status == 200,
             "turn 2: %d %s", r.status, r.body);
    o = body_json(&r);
    TU_CHECK(o && strcmp(json_str(o, "plumb.cache_path"), "fast") == 0 &&
                 json_int(o, "usage.prompt_tokens_details.cached_tokens") > 0,
             "turn 2 takes the fast path: %s", r.body);
    json_decref(o);
    reply_free(&r);

    /* Same seed, same text; streamed, the deltas concatenate to it. */
    TU_CHECK(request(port, "POST", "/v1/chat/completions", CHAT1 ",\"max_tokens\":12}", &r) == 0 &&
                 r.status == 200,
             "again: %d", r.status);
    o = body_json(&r);
    TU_CHECK(o && strcmp(json_str(o, "choices.0.message.content"), first) == 0,
             "same seed, same text: '%s' vs '%s'", json_str(o, "choices.0.message.content"), first);
    json_decref(o);
    reply_free(&r);
    TU_CHECK(request(port, "POST", "/v1/chat/completions",
                     CHAT1 ",\"max_tokens\":12,\"stream\":true,\"stream_options\":"
                           "{\"include_usage\":true}}",
                     &r) == 0 &&
                 r.status == 200 && strstr(r.head, "text/event-stream"),
             "stream: %d", r.status);
    char text[2048] = "";
    int events = 0, done = 0, usage_only = 0, finished = 0;
    for (char *ev = r.body; ev && *ev;) {
        char *end = strstr(ev, "\n\n");
        TU_CHECK(end && strncmp(ev, "data: ", 6) == 0, "SSE framing at byte %td", ev - r.body);
        if (!end) break;
        *end = 0;
        events++;
        TU_CHECK(!done, "an event after [DONE]");
        if (strcmp(ev + 6, "[DONE]") == 0) {
            done = 1;
        } else {
            json_error_t je;
            json_t *c = json_loads(ev + 6, 0, &je);
            TU_CHECK(c && strcmp(json_str(c, "object"), "chat.completion.chunk") == 0, "chunk: %s",
                     ev);
            json_t *ch = json_object_get(c, "choices");
            if (json_array_size(ch) == 0) {
                usage_only = json_int(c, "usage.total_tokens") > 0;
            } else {
                const char *piece = json_str(c, "choices.0.delta.content");
                if (piece) strncat(text, piece, sizeof text - strlen(text) - 1);
                if (json_str(c, "choices.0.finish_reason")) finished++;
            }
            json_decref(c);
        }
        ev = end + 2;
    }
    TU_CHECK(done && usage_only && finished == 1 && events >= 4,
             "events %d, [DONE] %d, usage chunk %d, finish chunks %d", events, done, usage_only,
             finished);
    TU_CHECK(strcmp(text, first) == 0, "streamed '%s' vs whole '%s'", text, first);
    reply_free(&r);

    TU_CHECK(request(port, "POST", "/v1/completions",
                     "{\"prompt\":\"Once upon\",\"max_tokens\":5,\"stream\":true}", &r) == 0 &&
                 r.status == 200 && strstr(r.body, "\"object\":\"text_completion\"") &&
                 strstr(r.body, "data: [DONE]\n\n"),
             "completions stream: %d %s", r.status, r.body);
    reply_free(&r);
    TU_CHECK(wait_idle(s) && all_consistent(s), "slots consistent");
    free(first);
    sv_server_stop(s);
}

static void overflow_is_413_and_leaves_every_slot_unchanged(void)
{
    sv_server *s = start(2, 4, 0, 1 << 20);
    if (!s) return;
    int port = sv_server_port(s);
    reply r;
    request(port, "POST", "/v1/chat/completions", CHAT1 ",\"max_tokens\":6}", &r);
    reply_free(&r);
    request(port, "POST", "/v1/completions", "{\"prompt\":\"abc\",\"max_tokens\":6}", &r);
    reply_free(&r);
    TU_CHECK(wait_idle(s), "idle");
    snapshot before, after;
    snap(s, &before);
    char *big = malloc(16384);
    int n = snprintf(big, 16384, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello there");
    for (int i = 0; i < 600; i++) n += snprintf(big + n, 16384 - (size_t)n, " w%d", i);
    snprintf(big + n, 16384 - (size_t)n, "\"}]%s}", "");
    /* The prompt's token count as the server should report it. */
    int64_t n_big = -1;
    {
        char *content = strdup(big + strlen("{\"messages\":[{\"role\":\"user\",\"content\":\""));
        content[strlen(content) - strlen("\"}]}")] = 0;
        pl_chat_message msg = {.role = "user", .content = content};
        size_t need = 0, nt = 0;
        pl_chat_render(model, "chatml", &msg, 1, 1, NULL, 0, &need, NULL);
        char *text = malloc(need + 1);
        int32_t *ids = malloc((need + 8) * sizeof *ids);
        if (pl_chat_render(model, "chatml", &msg, 1, 1, text, need + 1, &need, NULL) == PL_OK &&
            pl_tokenize(model, text, need, PL_TOKENIZE_PARSE_SPECIAL, ids, need + 8, &nt, NULL) ==
                PL_OK)
            n_big = (int64_t)nt;
        TU_CHECK(n_big > 256, "the big prompt is over the context: %lld tokens", (long long)n_big);
        free(ids);
        free(text);
        free(content);
    }
    for (int stream = 0; stream < 2; stream++) {
        char *b = strdup(big);
        if (stream) {
            b = realloc(b, strlen(b) + 32);
            strcpy(b + strlen(b) - 1, ",\"stream\":true}");
        }
        TU_CHECK(request(port, "POST", "/v1/chat/completions", b, &r) == 0 && r.status == 413 &&
                     strstr(r.body, "context_length_exceeded"),
                 "stream %d: status %d %s", stream, r.status, r.body);
        /* The message gives the numbers a client can change: the prompt's tokens (the
         * rendered conversation, tokenized here) and the context. */
        json_t *o = body_json(&r);
        char want[160];
        snprintf(want, sizeof want, "the prompt is %lld tokens; the context (-c) is %d",
                 (long long)n_big, 256);
        const char *msg = o ? json_str(o, "error.message") : NULL;
        TU_CHECK(msg && strstr(msg, want), "stream %d: message '%s' lacks '%s'", stream,
                 msg ? msg : "(none)", want);
        json_decref(o);
        reply_free(&r);
        free(b);
    }
    free(big);
    TU_CHECK(wait_idle(s), "idle");
    snap(s, &after);
    TU_CHECK(same_snap(&before, &after), "a slot changed after the 413");
    TU_CHECK(all_consistent(s), "slots consistent");
    snap_free(&before);
    snap_free(&after);
    sv_server_stop(s);
}

/* A server started from cfg-like options: the 256-token context of start(), with a CORS
 * origin, an API key and a metrics key as given (NULL: none). */
static sv_server *start_with(const char *host, const char *cors, const char *api_key,
                             const char *metrics_key)
{
    sv_config cfg = {.host = host,
                     .cors = cors,
                     .port = 0,
                     .n_slots = 1,
                     .queue = 2,
                     .max_body = 4096,
                     .timeout_s = 5,
                     .session = pl_session_default_params(model),
                     .api = {.model = model,
                             .tmpl = chatml,
                             .alias = "tiny",
                             .api_key = api_key,
                             .metrics_key = metrics_key,
                             .max_tokens = 4}};
    cfg.session.n_threads = 1;
    cfg.session.context_window = 256;
    sv_server *s = NULL;
    pl_error e = {0};
    TU_CHECK(sv_server_start(&s, model, &cfg, &e) == PL_OK, "start on %s: %s", host, e.msg);
    return s;
}

#define ORIGIN "https://app.example"

static void cors_headers_on_every_answer_and_preflight(void)
{
    sv_server *s = start_with("127.0.0.1", ORIGIN, "k3y", NULL);
    if (!s) return;
    int port = sv_server_port(s);
    reply r;
    char v[256];
    TU_CHECK(request_h(port, "OPTIONS", "/v1/chat/completions",
                       "Origin: " ORIGIN "\r\nAccess-Control-Request-Method: POST\r\n"
                       "Access-Control-Request-Headers: authorization, content-type\r\n",
                       NULL, &r) == 0 &&
                 r.status == 204,
             "preflight without a key: status %d", r.status);
    TU_CHECK(header_of(&r, "Access-Control-Allow-Origin", v, sizeof v) && !strcmp(v, ORIGIN),
             "preflight: Allow-Origin %s", r.head);
    TU_CHECK(header_of(&r, "Access-Control-Allow-Methods", v, sizeof v) && strstr(v, "POST") &&
                 !strstr(v, "GET"),
             "preflight: Allow-Methods: %s", r.head);
    TU_CHECK(header_of(&r, "Access-Control-Allow-Headers", v, sizeof v) &&
                 strcasestr(v, "authorization") && strcasestr(v, "content-type"),
             "preflight: Allow-Headers: %s", r.head);
    reply_free(&r);
    TU_CHECK(request_h(port, "OPTIONS", "/v1/models", "", NULL, &r) == 0 && r.status == 204 &&
                 header_of(&r, "Access-Control-Allow-Methods", v, sizeof v) && strstr(v, "GET") &&
                 strstr(v, "HEAD") && !strstr(v, "POST"),
             "preflight of a GET endpoint: %d %s", r.status, r.head);
    reply_free(&r);
    /* The answers themselves, errors and streams included. */
    const struct {
        const char *method, *path, *extra, *body;
        int status;
    } cases[] = {
        {"GET", "/health", "", NULL, 200},
        {"GET", "/v1/models", "", NULL, 401},
        {"GET", "/v1/models", "Authorization: Bearer k3y\r\n", NULL, 200},
        {"GET", "/nowhere", "", NULL, 404},
        {"POST", "/v1/completions", "Authorization: Bearer k3y\r\n",
         "{\"prompt\":\"Once\",\"max_tokens\":2}", 200},
        {"POST", "/v1/completions", "Authorization: Bearer k3y\r\n",
         "{\"prompt\":\"Once\",\"max_tokens\":2,\"stream\":true}", 200},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TU_CHECK(request_h(port, cases[i].method, cases[i].path, cases[i].extra, cases[i].body,
                           &r) == 0 &&
                     r.status == cases[i].status,
                 "case %zu %s %s: status %d, want %d", i, cases[i].method, cases[i].path, r.status,
                 cases[i].status);
        TU_CHECK(header_of(&r, "Access-Control-Allow-Origin", v, sizeof v) && !strcmp(v, ORIGIN),
                 "case %zu %s %s: no Allow-Origin: %s", i, cases[i].method, cases[i].path, r.head);
        reply_free(&r);
    }
    sv_server_stop(s);

    /* Without an origin: no CORS header anywhere; OPTIONS still says what is allowed. */
    s = start_with("127.0.0.1", NULL, NULL, NULL);
    if (!s) return;
    port = sv_server_port(s);
    TU_CHECK(request_h(port, "OPTIONS", "/v1/chat/completions", "Origin: " ORIGIN "\r\n", NULL,
                       &r) == 0 &&
                 r.status == 204 && header_of(&r, "Allow", v, sizeof v) && strstr(v, "POST") &&
                 !strcasestr(r.head, "Access-Control-"),
             "OPTIONS without --cors: %d %s", r.status, r.head);
    reply_free(&r);
    TU_CHECK(request_h(port, "GET", "/health", "Origin: " ORIGIN "\r\n", NULL, &r) == 0 &&
                 r.status == 200 && !strcasestr(r.head, "Access-Control-"),
             "GET without --cors: %s", r.head);
    reply_free(&r);
    sv_server_stop(s);
}

static void head_answers_the_get_headers_without_a_body(void)
{
    sv_server *s = start_with("127.0.0.1", NULL, NULL, NULL);
    if (!s) return;
    int port = sv_server_port(s);
    const char *paths[] = {"/health", "/v1/models", "/slots", "/metrics"};
    for (size_t i = 0; i < 4; i++) {
        reply g, h;
        char lg[32], lh[32], tg[128], th[128];
        TU_CHECK(request(port, "GET", paths[i], NULL, &g) == 0 && g.status == 200, "GET %s: %d",
                 paths[i], g.status);
        TU_CHECK(request(port, "HEAD", paths[i], NULL, &h) == 0 && h.status == 200, "HEAD %s: %d",
                 paths[i], h.status);
        TU_CHECK(h.len == 0, "HEAD %s: a body of %zu bytes", paths[i], h.len);
        TU_CHECK(header_of(&h, "Content-Type", th, sizeof th) &&
                     header_of(&g, "Content-Type", tg, sizeof tg) && !strcmp(th, tg),
                 "HEAD %s: Content-Type as GET's", paths[i]);
        /* /metrics and /slots change between the two requests; /health and /v1/models not. */
        if (i < 2)
            TU_CHECK(header_of(&h, "Content-Length", lh, sizeof lh) &&
                         header_of(&g, "Content-Length", lg, sizeof lg) && !strcmp(lh, lg) &&
                         (size_t)atol(lg) == g.len,
                     "HEAD %s: Content-Length %s, GET's %s (%zu bytes)", paths[i], lh, lg, g.len);
        reply_free(&g);
        reply_free(&h);
    }
    reply r;
    TU_CHECK(request(port, "HEAD", "/v1/chat/completions", NULL, &r) == 0 && r.status == 405,
             "HEAD on a POST endpoint: %d", r.status);
    reply_free(&r);
    sv_server_stop(s);
}

static void metrics_open_unless_a_metrics_key(void)
{
    sv_server *s = start_with("127.0.0.1", NULL, "k3y", NULL);
    if (!s) return;
    reply r;
    TU_CHECK(request(sv_server_port(s), "GET", "/metrics", NULL, &r) == 0 && r.status == 200,
             "--api-key alone: /metrics open: %d", r.status);
    reply_free(&r);
    sv_server_stop(s);
    s = start_with("127.0.0.1", NULL, "k3y", "m3t");
    if (!s) return;
    int port = sv_server_port(s);
    const struct {
        const char *extra;
        int status;
    } cases[] = {
        {"", 401},
        {"Authorization: Bearer k3y\r\n", 401},
        {"Authorization: Bearer m3t\r\n", 200},
    };
    for (size_t i = 0; i < 3; i++) {
        TU_CHECK(request_h(port, "GET", "/metrics", cases[i].extra, NULL, &r) == 0 &&
                     r.status == cases[i].status,
                 "--metrics-key, case %zu: %d, want %d", i, r.status, cases[i].status);
        reply_free(&r);
    }
    sv_server_stop(s);
}

static void localhost_listens_on_loopback(void)
{
    struct sockaddr_storage ss;
    char why[320] = "";
    TU_CHECK(sv_resolve_host("localhost", 8080, &ss, why, sizeof why) == 0, "localhost: %s", why);
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        TU_CHECK((ntohl(a->sin_addr.s_addr) >> 24) == 127 && ntohs(a->sin_port) == 8080,
                 "localhost is 127/8, port kept");
    } else {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        TU_CHECK(ss.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&a->sin6_addr),
                 "localhost is ::1");
    }
    TU_CHECK(sv_resolve_host("", 0, &ss, why, sizeof why) == -1 && strstr(why, "host ''"),
             "an empty host is refused: %s", why);
    TU_CHECK(sv_resolve_host("300.1.2.3.", 0, &ss, why, sizeof why) == -1 &&
                 strstr(why, "300.1.2.3."),
             "a bad address is refused, named: %s", why);
    sv_server *s = start_with("localhost", NULL, NULL, NULL);
    if (!s) return;
    reply r;
    if (ss.ss_family == AF_INET) { /* the client below speaks IPv4 */
        TU_CHECK(request(sv_server_port(s), "GET", "/health", NULL, &r) == 0 && r.status == 200,
                 "GET /health on 127.0.0.1 of a server on localhost: %d", r.status);
        reply_free(&r);
    }
    sv_server_stop(s);
}

/* One turn of conversation c (its messages so far in msgs, JSON): appends the reply. Returns
 * the cache path and slot of the reply. */
static void turn(int port, json_t *msgs, const char *user, char *path, size_t cap, int *slot)
{
    json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content", user));
    json_t *req = json_pack("{s:O,s:i,s:i}", "messages", msgs, "max_tokens", 6, "seed", 5);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    reply r;
    path[0] = 0;
    *slot = -1;
    if (request(port, "POST", "/v1/chat/completions", body, &r) == 0 && r.status == 200) {
        json_t *o = body_json(&r);
        snprintf(path, cap, "%s", json_str(o, "plumb.cache_path"));
        *slot = (int)json_int(o, "plumb.slot");
        json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "assistant", "content",
                                              json_str(o, "choices.0.message.content")));
        json_decref(o);
    }
    reply_free(&r);
    free(body);
}

static void interleaved_conversations_keep_their_slots_fast(void)
{
    sv_server *s = start(2, 4, 0, 1 << 20);
    if (!s) return;
    int port = sv_server_port(s);
    json_t *c[2];
    int home[2] = {-1, -1};
    for (int k = 0; k < 2; k++)
        c[k] =
            json_pack("[{s:s,s:s}]", "role", "system", "content", "You are a helpful assistant.");
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 2; k++) {
            char user[64], path[16];
            int slot;
            snprintf(user, sizeof user, "Conversation %d, turn %d.", k, t);
            turn(port, c[k], user, path, sizeof path, &slot);
            if (t == 0)
                home[k] = slot;
            else
                TU_CHECK(strcmp(path, "fast") == 0 && slot == home[k],
                         "conversation %d turn %d: path %s on slot %d (first on %d)", k, t, path,
                         slot, home[k]);
        }
    TU_CHECK(home[0] != home[1], "the two conversations share slot %d", home[0]);
    json_decref(c[0]);
    json_decref(c[1]);
    sv_server_stop(s);
}

/* Starts a generation that only a cancel ends (sliding window, huge max_tokens). */
static int endless(int port, int stream)
{
    int fd = connect_to(port);
    char body[256];
    snprintf(body, sizeof body,
             "{\"messages\":[{\"role\":\"user\",\"content\":\"go\"}],\"max_tokens\":100000000,"
             "\"ignore_eos\":true,\"stream\":%s}",
             stream ? "true" : "false");
    send_request(fd, "POST", "/v1/chat/completions", body);
    return fd;
}

static void disconnect_cancels_and_the_slot_stays_consistent(void)
{
    sv_server *s = start(1, 2, 1, 1 << 20);
    if (!s) return;
    int port = sv_server_port(s);
    for (int stream = 1; stream >= 0; stream--) {
        uint64_t c0 = cancelled(s);
        int fd = endless(port, stream);
        char buf[512];
        if (stream) {
            /* Read the start of the stream, then go away mid-stream. */
            ssize_t k = recv(fd, buf, sizeof buf, 0);
            TU_CHECK(k > 0 && strncmp(buf, "HTTP/1.1 200", 12) == 0, "stream started");
        } else {
            /* Mid-generation: wait until the slot is busy. */
            int busy = 0;
            for (int i = 0; i < 500 && !busy; i++, sleep_ms(10))
                sv_slots_counts(sv_server_slots(s), &busy, NULL);
            TU_CHECK(busy, "the generation started");
        }
        sleep_ms(50);
        close(fd);
        TU_CHECK(wait_idle(s), "stream %d: the slot was not freed after the disconnect", stream);
        TU_CHECK(cancelled(s) == c0 + 1, "stream %d: cancelled %llu -> %llu", stream,
                 (unsigned long long)c0, (unsigned long long)cancelled(s));
        TU_CHECK(all_consistent(s), "stream %d: slot consistent", stream);
    }
    reply r;
    TU_CHECK(request(port, "POST", "/v1/chat/completions", CHAT1 ",\"max_tokens\":4}", &r) == 0 &&
                 r.status == 200,
             "serves after the disconnects: %d", r.status);
    reply_free(&r);
    sv_server_stop(s);
}

static void full_queue_is_503_with_retry_after(void)
{
    sv_server *s = start(1, 1, 1, 1 << 20);
    if (!s) return;
    int port = sv_server_port(s);
    int a = endless(port, 1); /* holds the slot */
    char buf[256];
    TU_CHECK(recv(a, buf, sizeof buf, 0) > 0, "A streams");
    int b = endless(port, 0); /* waits in the queue */
    int queued = 0;
    for (int i = 0; i < 500 && !queued; i++, sleep_ms(10))
        sv_slots_counts(sv_server_slots(s), NULL, &queued);
    TU_CHECK(queued == 1, "B waits");
    reply r;
    TU_CHECK(request(port, "POST", "/v1/chat/completions", CHAT1 "}", &r) == 0 && r.status == 503 &&
                 strstr(r.head, "Retry-After: 1") && strstr(r.body, "\"code\":\"overloaded\""),
             "C: %d %s", r.status, r.body);
    reply_free(&r);
    TU_CHECK(request(port, "GET", "/health", NULL, &r) == 0 && strstr(r.body, "\"queue\":1"),
             "health shows the queue: %s", r.body);
    reply_free(&r);
    close(b); /* gives up while waiting */
    for (int i = 0; i < 500 && queued; i++, sleep_ms(10))
        sv_slots_counts(sv_server_slots(s), NULL, &queued);
    TU_CHECK(queued == 0, "B left the queue");
    /* Stopping with A still generating: cancelled, and stop returns. */
    sv_server_stop(s);
    close(a);
}

/* A server started without a model listens at once and is LOADING: /health 503 "loading" (a
 * balancer's check fails), generation and /slots 503 with Retry-After, /metrics and
 * /v1/models answered; once the model is attached, 200 and a reply. */
static void health_is_503_loading_until_the_model_is_attached(void)
{
    sv_config cfg = {.host = "127.0.0.1",
                     .n_slots = 2,
                     .queue = 2,
                     .max_body = 1 << 20,
                     .timeout_s = 5,
                     .api = {.alias = "tiny", .max_tokens = 16}};
    sv_server *s = NULL;
    pl_error e = {0};
    TU_CHECK(sv_server_start(&s, NULL, &cfg, &e) == PL_OK, "start without a model: %s", e.msg);
    if (!s) return;
    int port = sv_server_port(s);
    TU_CHECK(sv_server_state(s) == SV_LOADING, "state %d", (int)sv_server_state(s));
    reply r;
    char v[64];
    TU_CHECK(request(port, "GET", "/health", NULL, &r) == 0 && r.status == 503 &&
                 strstr(r.body, "\"status\":\"loading\"") && strstr(r.body, "\"reason\":") &&
                 header_of(&r, "Retry-After", v, sizeof v),
             "health while loading: %d %s", r.status, r.body);
    reply_free(&r);
    TU_CHECK(request(port, "POST", "/v1/chat/completions", CHAT1 "}", &r) == 0 && r.status == 503 &&
                 strstr(r.body, "\"code\":\"loading\"") &&
                 header_of(&r, "Retry-After", v, sizeof v),
             "chat while loading: %d %s", r.status, r.body);
    reply_free(&r);
    TU_CHECK(request(port, "GET", "/slots", NULL, &r) == 0 && r.status == 503,
             "slots while loading: %d", r.status);
    reply_free(&r);
    TU_CHECK(request(port, "GET", "/metrics", NULL, &r) == 0 && r.status == 200 &&
                 strstr(r.body, "plumb_state{state=\"loading\"} 1\n") &&
                 strstr(r.body, "plumb_state{state=\"ready\"} 0\n") &&
                 strstr(r.body, "plumb_slots_total 0\n"),
             "metrics while loading: %d", r.status);
    reply_free(&r);
    TU_CHECK(request(port, "GET", "/v1/models", NULL, &r) == 0 && r.status == 200 &&
                 strstr(r.body, "\"id\":\"tiny\""),
             "models while loading: %d %s", r.status, r.body);
    reply_free(&r);

    pl_session_params sp = pl_session_default_params(model);
    sp.n_threads = 1;
    sp.context_window = 256;
    TU_CHECK(sv_server_attach(s, model, chatml, &sp, &e) == PL_OK, "attach: %s", e.msg);
    TU_CHECK(sv_server_attach(s, model, chatml, &sp, &e) == PL_ERR_INVALID_ARG &&
                 strstr(e.msg, "already"),
             "a second attach is refused: %s", e.msg);
    TU_CHECK(sv_server_state(s) == SV_READY, "ready after attach");
    TU_CHECK(request(port, "GET", "/health", NULL, &r) == 0 && r.status == 200 &&
                 strstr(r.body, "\"status\":\"ok\"") && strstr(r.body, "\"slots_total\":2") &&
                 !header_of(&r, "Retry-After", v, sizeof v),
             "health when ready: %d %s", r.status, r.body);
    reply_free(&r);
    TU_CHECK(request(port, "POST", "/v1/chat/completions", CHAT1 ",\"max_tokens\":4}", &r) == 0 &&
                 r.status == 200,
             "chat when ready: %d %s", r.status, r.body);
    reply_free(&r);
    sv_server_stop(s);
}

/* Reads one socket until its peer closes it (a reply sent with Connection: close). */
static void *read_to_end(void *p)
{
    int *fd = p;
    reply *r = calloc(1, sizeof *r);
    if (read_reply(*fd, r)) r->status = -1;
    return r;
}

static int64_t metric_value(int port, const char *series)
{
    reply r;
    int64_t v = -1;
    if (request(port, "GET", "/metrics", NULL, &r) == 0) {
        const char *at = strstr(r.body, series);
        if (at) v = strtoll(at + strlen(series), NULL, 10);
    }
    reply_free(&r);
    return v;
}

/* A drain (what SIGTERM does): /health 503 "draining", a new generation request 503 "draining"
 * with Retry-After, every answer closing its connection; the stream running and the request
 * waiting for the slot both finish whole, and only then is nothing in flight. */
static void drain_finishes_what_it_has_and_refuses_new_requests(void)
{
    sv_server *s = start(1, 2, 1, 1 << 20);
    if (!s) return;
    int port = sv_server_port(s);
    /* A: a stream that holds the only slot for a while; B: waits in the queue behind it. */
    int a = connect_to(port);
    send_request(a, "POST", "/v1/chat/completions",
                 "{\"messages\":[{\"role\":\"user\",\"content\":\"go\"}],\"max_tokens\":1000,"
                 "\"ignore_eos\":true,\"stream\":true}");
    char first[64];
    TU_CHECK(recv(a, first, sizeof first, MSG_PEEK) > 0, "A streams");
    int b = connect_to(port);
    send_request(b, "POST", "/v1/chat/completions", CHAT1 ",\"max_tokens\":4}");
    int queued = 0;
    for (int i = 0; i < 500 && !queued; i++, sleep_ms(10))
        sv_slots_counts(sv_server_slots(s), NULL, &queued);
    TU_CHECK(queued == 1, "B waits for the slot");
    pthread_t ta, tb;
    pthread_create(&ta, NULL, read_to_end, &a);
    pthread_create(&tb, NULL, read_to_end, &b);

    sv_server_drain(s);
    TU_CHECK(sv_server_state(s) == SV_DRAINING, "draining");
    TU_CHECK(sv_server_in_flight(s) == 2, "A and B in flight: %d", sv_server_in_flight(s));
    reply r;
    char v[64];
    /* A kept-alive request (no Connection: close of its own): the server closes after it. */
    int h = connect_to(port);
    struct timeval tv = {.tv_sec = 3};
    setsockopt(h, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const char *get = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    send(h, get, strlen(get), MSG_NOSIGNAL);
    TU_CHECK(read_reply(h, &r) == 0 && r.status == 503 &&
                 strstr(r.body, "\"status\":\"draining\"") && strstr(r.body, "\"in_flight\":2") &&
                 header_of(&r, "Connection", v, sizeof v) && strcasecmp(v, "close") == 0,
             "health while draining (kept alive): %d %s", r.status, r.body);
    close(h);
    reply_free(&r);
    TU_CHECK(request(port, "POST", "/v1/chat/completions", CHAT1 "}", &r) == 0 && r.status == 503 &&
                 strstr(r.body, "\"code\":\"draining\"") &&
                 header_of(&r, "Retry-After", v, sizeof v),
             "a new request while draining: %d %s", r.status, r.body);
    reply_free(&r);
    TU_CHECK(metric_value(port, "\nplumb_state{state=\"draining\"} ") == 1 &&
                 metric_value(port, "\nplumb_requests_in_flight ") == 2,
             "metrics say draining, 2 in flight");

    reply *ra = NULL, *rb = NULL;
    pthread_join(ta, (void **)&ra);
    pthread_join(tb, (void **)&rb);
    TU_CHECK(ra->status == 200 && strstr(ra->body, "\"finish_reason\":\"length\"") &&
                 strstr(ra->body, "data: [DONE]\n\n"),
             "A's stream ends whole: %d ...%s", ra->status,
             ra->body ? ra->body + (ra->len > 200 ? ra->len - 200 : 0) : "");
    TU_CHECK(rb->status == 200 && strstr(rb->body, "\"chat.completion\""), "B answered: %d %s",
             rb->status, rb->body);
    reply_free(ra);
    reply_free(rb);
    free(ra);
    free(rb);
    close(a);
    close(b);
    int n = -1;
    for (int i = 0; i < 500 && n; i++, sleep_ms(10)) n = sv_server_in_flight(s);
    TU_CHECK(n == 0, "nothing in flight after both ended: %d", n);
    TU_CHECK(cancelled(s) == 0, "nothing cancelled");
    sv_server_stop(s);
}

/* --queue 0: every slot busy is a 503 at once, with Retry-After. */
static void busy_slots_without_a_queue_are_503_with_retry_after(void)
{
    sv_server *s = start(1, 0, 1, 1 << 20);
    if (!s) return;
    int port = sv_server_port(s);
    int a = endless(port, 1);
    char buf[64];
    TU_CHECK(recv(a, buf, sizeof buf, 0) > 0, "A streams");
    reply r;
    char v[16];
    TU_CHECK(request(port, "POST", "/v1/chat/completions", CHAT1 "}", &r) == 0 && r.status == 503 &&
                 header_of(&r, "Retry-After", v, sizeof v) && atoi(v) >= 1 &&
                 strstr(r.body, "\"code\":\"overloaded\""),
             "B: %d %s", r.status, r.body);
    reply_free(&r);
    TU_CHECK(request(port, "GET", "/health", NULL, &r) == 0 && r.status == 200 &&
                 strstr(r.body, "\"slots_idle\":0"),
             "a busy server is still healthy: %d %s", r.status, r.body);
    reply_free(&r);
    sv_server_stop(s);
    close(a);
}

/* The slot manager alone: first come first served, FULL, GONE, STOPPING. */
typedef struct waiter_arg {
    sv_slots *sl;
    int rc, slot;
} waiter_arg;

static void *wait_for_slot(void *p)
{
    waiter_arg *w = p;
    w->rc = sv_slots_acquire(w->sl, "x", 1, NULL, NULL, &w->slot);
    return NULL;
}

static int always_gone(void *user)
{
    (void)user;
    return 1;
}

static void slot_queue_waits_refuses_and_stops(void)
{
    pl_session_params sp = pl_session_default_params(model);
    sp.n_threads = 1;
    sp.context_window = 64;
    sv_slots *sl = NULL;
    TU_CHECK(sv_slots_new(&sl, model, &sp, 1, 1, NULL) == PL_OK, "slots");
    if (!sl) return;
    int first = -1, other = -1;
    TU_CHECK(sv_slots_acquire(sl, "x", 1, NULL, NULL, &first) == SV_ACQ_OK && first == 0,
             "first acquire");
    waiter_arg w = {.sl = sl, .rc = -1};
    pthread_t t;
    pthread_create(&t, NULL, wait_for_slot, &w);
    int queued = 0;
    for (int i = 0; i < 500 && !queued; i++, sleep_ms(10)) sv_slots_counts(sl, NULL, &queued);
    TU_CHECK(queued == 1, "the second waits");
    TU_CHECK(sv_slots_acquire(sl, "x", 1, NULL, NULL, &other) == SV_ACQ_FULL && other == -1,
             "the third finds the queue full");
    sv_slots_release(sl, first);
    pthread_join(t, NULL);
    TU_CHECK(w.rc == SV_ACQ_OK && w.slot == 0, "the waiter got the slot: rc %d", w.rc);
    TU_CHECK(sv_slots_acquire(sl, "x", 1, always_gone, NULL, &other) == SV_ACQ_GONE,
             "a waiter whose client left gives up");
    w.rc = -1;
    pthread_create(&t, NULL, wait_for_slot, &w);
    for (int i = 0, q = 0; i < 500 && !q; i++, sleep_ms(10)) sv_slots_counts(sl, NULL, &q);
    sv_slots_stop(sl);
    pthread_join(t, NULL);
    TU_CHECK(w.rc == SV_ACQ_STOPPING, "stop wakes the waiter: rc %d", w.rc);
    TU_CHECK(sv_slots_cancelled(sl, 0) == 1, "stop cancels the busy slot");
    sv_slots_free(sl);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (!(model = load_model()) || pl_chat_template_builtin(&chatml, "chatml", NULL)) {
        return 1;
    }
    static const tu_test tests[] = {
        {"health_models_and_errors_over_http", health_models_and_errors_over_http},
        {"chat_replies_whole_and_streamed_agree", chat_replies_whole_and_streamed_agree},
        {"interleaved_conversations_keep_their_slots_fast",
         interleaved_conversations_keep_their_slots_fast},
        {"overflow_is_413_and_leaves_every_slot_unchanged",
         overflow_is_413_and_leaves_every_slot_unchanged},
        {"disconnect_cancels_and_the_slot_stays_consistent",
         disconnect_cancels_and_the_slot_stays_consistent},
        {"full_queue_is_503_with_retry_after", full_queue_is_503_with_retry_after},
        {"busy_slots_without_a_queue_are_503_with_retry_after",
         busy_slots_without_a_queue_are_503_with_retry_after},
        {"health_is_503_loading_until_the_model_is_attached",
         health_is_503_loading_until_the_model_is_attached},
        {"drain_finishes_what_it_has_and_refuses_new_requests",
         drain_finishes_what_it_has_and_refuses_new_requests},
        {"slot_queue_waits_refuses_and_stops", slot_queue_waits_refuses_and_stops},
        {"cors_headers_on_every_answer_and_preflight", cors_headers_on_every_answer_and_preflight},
        {"head_answers_the_get_headers_without_a_body",
         head_answers_the_get_headers_without_a_body},
        {"metrics_open_unless_a_metrics_key", metrics_open_unless_a_metrics_key},
        {"localhost_listens_on_loopback", localhost_listens_on_loopback},
        {NULL, NULL},
    };
    int rc = tu_run("serve_http", tests);
    pl_chat_template_free(chatml);
    pl_model_free(model);
    return rc;
}
