/* serve.h — the library behind `plumb serve` (plumb_serve): the pure request path, the slot
 * manager, the metrics and the HTTP server (libmicrohttpd). Not the command line (tools/). */
#ifndef PLUMB_SERVE_H
#define PLUMB_SERVE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plumb.h"

/* ---- the pure request path -------------------------------------------------------------
 * (method, url, headers, body) -> routing -> auth -> JSON -> validation -> prompt rendering
 * -> an sv_request, or an OpenAI-shaped error. No network, no globals, no printing. */

#define SV_MAX_STOP  4   /* stop strings per request (OpenAI's limit) */
#define SV_MAX_SLOTS 256 /* sessions per server */

typedef enum sv_endpoint {
    SV_EP_NONE = 0,
    SV_EP_HEALTH,
    SV_EP_MODELS,
    SV_EP_CHAT,        /* POST /v1/chat/completions */
    SV_EP_COMPLETIONS, /* POST /v1/completions */
    SV_EP_METRICS,
    SV_EP_SLOTS,
    SV_EP_MODEL_FILE, /* GET /model.gguf: the served model's file, for the page's wasm engine */
    SV_EP_COUNT
} sv_endpoint;

/* "/v1/chat/completions", …; "other" for SV_EP_NONE (the metrics label). */
const char *sv_endpoint_path(sv_endpoint ep);

typedef struct sv_header {
    const char *name; /* matched case-insensitively */
    const char *value;
} sv_header;

/* What the request path needs to know about the server. */
typedef struct sv_api {
    const pl_model *model;        /* tokenizer and chat template */
    const pl_chat_template *tmpl; /* the chat template; NULL: the model's own */
    const char *alias;            /* the model id clients see */
    const char *api_key;          /* NULL or "": no key needed (never asked on /health, /metrics) */
    const char *metrics_key;      /* NULL or "": /metrics is open; else it needs this key */
    int64_t max_tokens;           /* the cap for a request without max_tokens */
} sv_api;

/* A validated generation request. Free with sv_request_free. */
typedef struct sv_request {
    sv_endpoint ep;
    int head;      /* HEAD on a GET endpoint: the GET's answer without its body */
    int preflight; /* OPTIONS (a CORS preflight): answered without auth or body */
    int stream;
    int include_usage; /* stream_options.include_usage */
    int has_seed;      /* 0: the server picks one */
    int ignore_eos;    /* llama.cpp's extension: end-of-generation tokens are ordinary */
    pl_sampler_params sp;
    int64_t max_tokens;
    char *stops[SV_MAX_STOP]; /* NUL-terminated copies */
    size_t n_stops;
    char *prompt; /* the rendered conversation (chat) or the prompt (completions); NUL-ended */
    size_t prompt_len;
} sv_request;

void sv_request_free(sv_request *r);

/* An error as OpenAI shapes it. */
typedef struct sv_error {
    int status;       /* HTTP status */
    const char *type; /* "invalid_request_error", "authentication_error", … */
    const char *code; /* "invalid_json", … or NULL */
    char param[96];   /* the field, e.g. "messages[1].content"; "" for null */
    char message[320];
    int retry_after; /* seconds for a Retry-After header; 0: none */
} sv_error;

/* Fills e (the message formatted) and returns -1. */
int sv_error_set(sv_error *e, int status, const char *type, const char *code, const char *param,
                 const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/* {"error":{"message":…,"type":…,"param":…,"code":…}} as a malloc'd NUL-terminated string;
 * NULL when out of memory. */
char *sv_error_json(const sv_error *e);

/* The methods an endpoint takes, for Allow and Access-Control-Allow-Methods:
 * "GET, HEAD, OPTIONS" or "POST, OPTIONS". */
const char *sv_endpoint_methods(sv_endpoint ep);

/* The request path. Returns 0 with *req filled (ep set; for POST endpoints everything else
 * too), or -1 with *err filled (req is then empty). GET endpoints take HEAD too (req->head);
 * OPTIONS on any endpoint is a preflight (req->preflight), which needs no key. Bodies are any bytes
 * (NUL, invalid UTF-8, truncated JSON): they are an error, never undefined behaviour. */
int sv_parse_request(const sv_api *api, const char *method, const char *url,
                     const sv_header *headers, size_t n_headers, const char *body, size_t len,
                     sv_request *req, sv_error *err);

/* GET /v1/models, malloc'd (NULL: out of memory). */
char *sv_models_json(const sv_api *api, int64_t created);

/* ---- responses ------------------------------------------------------------------------- */
/* s[0..n) with each byte that does not start a valid UTF-8 sequence replaced by U+FFFD:
 * malloc'd, NUL-terminated, *out_len set; NULL when out of memory. */
char *sv_utf8_clean(const char *s, size_t n, size_t *out_len);

/* The figures a response reports. */
typedef struct sv_result {
    const char *id; /* "chatcmpl-…" / "cmpl-…" */
    int64_t created;
    const char *finish; /* "stop", "length" */
    int64_t prompt_tokens, completion_tokens, cached_tokens;
    int slot;
    const char *cache_path;
    int64_t reused, prefilled;
    double ttft_ms, total_ms;
} sv_result;

/* The whole (non-streaming) response: chat.completion or text_completion. */
char *sv_response_json(sv_endpoint ep, const char *alias, const sv_result *r, const char *text,
                       size_t len);
/* One SSE event "data: {...}\n\n": kind 0 the opening (role), 1 a text piece, 2 the final
 * chunk (finish_reason, plumb), 3 the usage-only chunk (choices [], usage), sent last and only
 * with stream_options.include_usage. Completions have no opening. */
char *sv_chunk_event(sv_endpoint ep, const char *alias, const sv_result *r, int kind,
                     const char *text, size_t len);

/* ---- slot choice (pure) ---------------------------------------------------------------- */
typedef struct sv_slot_view {
    int busy;
    const char *text; /* the slot's cached text */
    size_t len;
    uint64_t last_used; /* a clock that only goes up; 0: never */
} sv_slot_view;

/* Bytes s and t share at the start. */
size_t sv_common_prefix(const char *s, size_t ns, const char *t, size_t nt);
/* The free slot for a prompt: among those whose whole cached text (non-empty) is a byte prefix
 * of the prompt (a request there takes the fast path), the longest, ties to the least recently
 * used; else the least recently used free slot (never used: 0). -1 when every slot is busy.
 * *lcp (optional) gets the cached bytes reused (0 when no slot's text is a prefix). */
int sv_pick_slot(const sv_slot_view *slots, int n, const char *prompt, size_t len, size_t *lcp);

/* ---- metrics --------------------------------------------------------------------------- */
#define SV_HIST_BUCKETS 14
typedef struct sv_hist {
    uint64_t count[SV_HIST_BUCKETS + 1]; /* per bucket (not cumulative); the last is +Inf */
    double sum;
    uint64_t n;
} sv_hist;

#define SV_MAX_STATUS 16 /* distinct status codes counted per endpoint */

/* Refusal reasons; TIMEOUT: a connection whose request was not whole within --timeout. */
enum {
    SV_REJ_OVERLOAD = 0,
    SV_REJ_CONTEXT,
    SV_REJ_BODY,
    SV_REJ_AUTH,
    SV_REJ_TIMEOUT,
    SV_REJ_COUNT
};

/* What the server is doing, as /health and /metrics say: LOADING (listening, no model yet:
 * /health 503), READY, DRAINING (SIGTERM: the requests accepted before it finish, new ones
 * are refused with 503, /health 503, so that a balancer sends them elsewhere). */
typedef enum sv_state { SV_LOADING = 0, SV_READY, SV_DRAINING } sv_state;

/* "loading", "ready", "draining". */
const char *sv_state_str(sv_state st);

/* The gauges /metrics reports beside the counters: read when it is asked. */
typedef struct sv_gauges {
    int queue, busy, total; /* requests waiting for a slot, slots generating, slots in all */
    int in_flight;          /* generation requests accepted and not yet answered to the end */
    sv_state state;
} sv_gauges;

typedef struct sv_metrics {
    pthread_mutex_t mu;
    struct {
        int status;
        uint64_t n;
    } req[SV_EP_COUNT][SV_MAX_STATUS];
    uint64_t prompt_tokens, completion_tokens, cached_tokens, prefilled_tokens;
    uint64_t path[4]; /* by pl_chat_path */
    uint64_t rejected[SV_REJ_COUNT];
    uint64_t cancelled;
    sv_hist duration, ttft;
} sv_metrics;

/* The upper bounds (seconds) of the histogram buckets, SV_HIST_BUCKETS of them. */
extern const double sv_hist_bounds[SV_HIST_BUCKETS];

int sv_metrics_init(sv_metrics *m);
void sv_metrics_destroy(sv_metrics *m);
void sv_metrics_request(sv_metrics *m, sv_endpoint ep, int status, double seconds);
void sv_metrics_reject(sv_metrics *m, int reason);
void sv_metrics_cancel(sv_metrics *m);
void sv_metrics_generation(sv_metrics *m, int path, int64_t prompt, int64_t completion,
                           int64_t cached, double ttft_seconds);
/* The Prometheus text exposition (version 0.0.4), malloc'd; NULL when out of memory. */
char *sv_metrics_text(sv_metrics *m, const sv_gauges *g);

/* ---- the slot manager ------------------------------------------------------------------- */
/* Condition variables on CLOCK_MONOTONIC (a wall-clock jump neither stalls nor hurries a
 * wait): sv_cond_init, and sv_cond_wait_ms, a timed wait of ms milliseconds at most (returns
 * pthread_cond_timedwait's result: 0, ETIMEDOUT, ...). */
void sv_cond_init(pthread_cond_t *cv);
int sv_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long ms);

typedef struct sv_slots sv_slots;

/* n sessions over m with these params. */
pl_status sv_slots_new(sv_slots **out, const pl_model *m, const pl_session_params *sp, int n,
                       int queue_max, pl_error *err);
void sv_slots_free(sv_slots *s);

/* Returns nonzero when the waiting request should give up (its client went away). */
typedef int (*sv_gone_fn)(void *user);

enum { SV_ACQ_OK = 0, SV_ACQ_FULL = 1, SV_ACQ_GONE = 2, SV_ACQ_STOPPING = 3 };
/* A free slot for prompt (sv_pick_slot), waiting in the queue (first come, first served) when
 * none is free. SV_ACQ_FULL at once when the queue already holds queue_max requests;
 * SV_ACQ_GONE when gone() says so while waiting (checked every 100 ms); SV_ACQ_STOPPING after
 * sv_slots_stop. */
int sv_slots_acquire(sv_slots *s, const char *prompt, size_t len, sv_gone_fn gone, void *user,
                     int *slot);
pl_session *sv_slots_session(sv_slots *s, int slot);
/* 1 once sv_slots_stop asked the generation on the slot to stop (a generation polls it). */
int sv_slots_cancelled(sv_slots *s, int slot);
void sv_slots_release(sv_slots *s, int slot);
/* Wakes every waiter with SV_ACQ_STOPPING and cancels the generations running. */
void sv_slots_stop(sv_slots *s);
int sv_slots_total(const sv_slots *s);
void sv_slots_counts(sv_slots *s, int *busy, int *queued);
/* GET /slots: the JSON array, with the chat invariant checked on each idle slot. */
char *sv_slots_json(sv_slots *s);
/* The invariant on one idle slot: 1 consistent, 0 not, -1 busy. */
int sv_slots_consistent(sv_slots *s, int slot);

/* ---- the chat page (web.c) ---------------------------------------------------------------
 * GET / answers web/index.html; the page's own files are embedded at build time
 * (sv_web_assets, generated by cmake/embed_web.cmake); the wasm engine files are read from a
 * directory (--web-dir). Every answer carries COOP same-origin, COEP require-corp and CORP
 * same-origin, so the page is cross-origin isolated (SharedArrayBuffer). */
typedef struct sv_asset {
    const char *name; /* "index.html", … (one path segment) */
    const unsigned char *data;
    size_t len;
} sv_asset;
extern const sv_asset sv_web_assets[]; /* ends with {0} */

/* The Content-Type of a file name by its extension; NULL for one the page never serves. */
const char *sv_web_type(const char *name);
/* 1 when a path (after "/", percent-decoded) may name a file of the page: one segment of
 * [A-Za-z0-9._-], not starting with '.', at most 128 bytes, of a served type. The guard
 * against path traversal: no '/', no "..". */
int sv_web_name_ok(const char *name);
/* The embedded file of that name ("" is index.html); NULL: none. */
const sv_asset *sv_web_embedded(const char *name);

/* ---- the server ------------------------------------------------------------------------- */
/* host -> an address to listen on: an IPv4 or IPv6 literal, or a name the resolver knows
 * ("localhost": loopback), IPv4 first. 0, or -1 with why[] filled. */
struct sockaddr_storage;
int sv_resolve_host(const char *host, int port, struct sockaddr_storage *out, char *why,
                    size_t why_cap);

typedef struct sv_config {
    const char *host; /* "127.0.0.1"; see sv_resolve_host */
    const char *cors; /* NULL: no CORS headers; else Access-Control-Allow-Origin on every
                       * answer and preflights answered */
    int port;         /* 0: a free port */
    int n_slots;
    int queue;
    size_t max_body;
    unsigned timeout_s;
    pl_session_params session;
    sv_api api;
    FILE *log;           /* one line per request; NULL: none */
    const char *web_dir; /* the wasm engine files (plumb-engine.mjs, *.wasm); NULL: none */
    /* The model's file, answered at GET /model.gguf (with the API key when one is set) so the
     * page can run the same file in the browser; NULL: not offered (404). */
    const char *model_file;
} sv_config;

typedef struct sv_server sv_server;

/* Loads nothing: m must outlive the server. Listens before it returns. m NULL: the server
 * listens at once and is LOADING (/health 503 "loading", generation requests and /slots 503
 * with Retry-After, /metrics and /v1/models answered) until sv_server_attach gives it the
 * model; cfg->api.model, cfg->api.tmpl and cfg->session are then not read. */
pl_status sv_server_start(sv_server **out, const pl_model *m, const sv_config *cfg, pl_error *err);
/* The model of a server started LOADING, its chat template (NULL: the model's own) and the
 * slots' session params: creates the slots and makes it READY. PL_ERR_INVALID_ARG when the
 * server already has a model. */
pl_status sv_server_attach(sv_server *s, const pl_model *m, const pl_chat_template *tmpl,
                           const pl_session_params *sp, pl_error *err);
int sv_server_port(const sv_server *s);
sv_state sv_server_state(sv_server *s);
/* DRAINING from now on: /health says 503 "draining", a new generation request is a 503
 * (code "draining", Retry-After) and every answer closes its connection; the requests already
 * accepted (running, streaming or waiting for a slot) go on to their end. */
void sv_server_drain(sv_server *s);
/* Generation requests accepted and not yet answered to their last byte (the queue included):
 * a drain is over when this is 0. */
int sv_server_in_flight(sv_server *s);
/* Stops accepting, cancels the generations running and the requests waiting, waits for every
 * connection to end and frees everything. */
void sv_server_stop(sv_server *s);
/* For tests: the slots (their sessions are idle only between requests). */
sv_slots *sv_server_slots(sv_server *s);
sv_metrics *sv_server_metrics(sv_server *s);

#endif
