/* server.c — the HTTP layer of `plumb serve` on libmicrohttpd (a thread per connection):
 * bodies read within --max-body, the pure request path (request.c), a slot (slots.c),
 * pl_chat, and the reply, whole or as Server-Sent Events. Not the request validation. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

struct sv_server {
    struct MHD_Daemon *d;
    sv_config cfg;
    const pl_model *m;
    sv_slots *slots;
    sv_metrics metrics;
    int port;
    /* LOADING until the model is attached, READY, DRAINING after sv_server_drain. The slots,
     * the model and cfg.api.model/tmpl/session are written before READY is stored and read
     * only by a request that found the state past LOADING. */
    atomic_int state;
    atomic_int in_flight;         /* generation requests accepted, not yet answered to their end */
    int64_t created;              /* the model's "created" time: server start */
    atomic_uint_fast64_t counter; /* ids and default seeds */
    uint64_t nonce;
    pthread_mutex_t log_mu;
    /* The request deadline: every connection is watched from its accept; a request must be
     * whole (headers and body) within --timeout of the connection's start or of its previous
     * answer, however slowly its bytes trickle in (libmicrohttpd's own timeout restarts at
     * every byte). A watchdog shuts down the sockets past their deadline. */
    pthread_mutex_t wd_mu;
    pthread_cond_t wd_cv;
    pthread_t wd;
    int wd_running, wd_stop;
    struct watch *watched;
};

typedef struct watch {
    struct watch *prev, *next;
    int fd;
    double deadline; /* 0: none (the request is whole, or the socket was shut down) */
} watch;

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* ---- the request deadline ---------------------------------------------------------------- */

static void *watchdog(void *arg)
{
    sv_server *srv = arg;
    pthread_mutex_lock(&srv->wd_mu);
    while (!srv->wd_stop) {
        double now = pl_clock_s();
        for (watch *w = srv->watched; w; w = w->next)
            if (w->deadline > 0 && now >= w->deadline) {
                /* Under wd_mu the socket is still open: libmicrohttpd reports the close
                 * (on_connection) before it closes the descriptor. */
                shutdown(w->fd, SHUT_RDWR);
                w->deadline = 0;
                sv_metrics_reject(&srv->metrics, SV_REJ_TIMEOUT);
            }
        sv_cond_wait_ms(&srv->wd_cv, &srv->wd_mu, 200);
    }
    pthread_mutex_unlock(&srv->wd_mu);
    return NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    sv_server *srv = cls;
    watch *w = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci || !(w = calloc(1, sizeof *w)))
            return; /* unwatched: the idle timeout still holds */
        w->fd = ci->connect_fd;
        w->deadline = pl_clock_s() + srv->cfg.timeout_s;
        pthread_mutex_lock(&srv->wd_mu);
        w->next = srv->watched;
        if (w->next) w->next->prev = w;
        srv->watched = w;
        pthread_mutex_unlock(&srv->wd_mu);
        *socket_context = w;
    } else if (w) {
        pthread_mutex_lock(&srv->wd_mu);
        if (w->prev)
            w->prev->next = w->next;
        else
            srv->watched = w->next;
        if (w->next) w->next->prev = w->prev;
        pthread_mutex_unlock(&srv->wd_mu);
        free(w);
        *socket_context = NULL;
    }
}

/* Arm (the next request's deadline from now) or disarm (0) a connection's deadline. */
static void set_deadline(sv_server *srv, struct MHD_Connection *c, int arm)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    watch *w = ci ? ci->socket_context : NULL;
    if (!w) return;
    pthread_mutex_lock(&srv->wd_mu);
    w->deadline = arm ? pl_clock_s() + srv->cfg.timeout_s : 0;
    pthread_mutex_unlock(&srv->wd_mu);
}

/* ---- per request -------------------------------------------------------------------------- */

typedef struct conn {
    sv_server *srv;
    int fd;
    double t0;
    char *body;
    size_t len, cap;
    int too_large;
    /* What the log line and the request counter say (set before the response is queued). */
    sv_endpoint ep;
    char method[8];
    int status;
    int counted;   /* the generation path logged and counted the request itself */
    int in_flight; /* counted in srv->in_flight until the request completes */
    char path[80]; /* the URL's path as asked for (printable ASCII), for the log */
    char why[360]; /* an error's code (or type) and message, for the log */
} conn;

/* 1 when the client closed its end (or the socket failed): nothing more will be read. */
static int peer_gone(int fd)
{
    if (fd < 0) return 0;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return 0;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    return 1;
}

/* One line per request: method, path, status, time, the slot and its cache path, and for an
 * error what the reply said (its code and message). */
static void log_line(sv_server *srv, const char *method, const char *path, int status, double ms,
                     int slot, const char *what, const char *why)
{
    if (!srv->cfg.log) return;
    pthread_mutex_lock(&srv->log_mu);
    fprintf(srv->cfg.log, "%s %s %d %.1f ms", method, path, status, ms);
    if (slot >= 0) fprintf(srv->cfg.log, " slot %d%s%s", slot, what ? " " : "", what ? what : "");
    if (status >= 400 && why && why[0]) fprintf(srv->cfg.log, ": %s", why);
    fputc('\n', srv->cfg.log);
    fflush(srv->cfg.log);
    pthread_mutex_unlock(&srv->log_mu);
}

/* Every answer (errors, streams and pages included) names the idle timeout: a client that
 * pools connections and reads the hint (Node's fetch) retires a kept-alive connection before
 * the server closes it, instead of racing the close with its next request. With --cors, every
 * answer also names the origin allowed. */
static void add_server_headers(const sv_server *srv, struct MHD_Response *r)
{
    char v[32];
    snprintf(v, sizeof v, "timeout=%u", srv->cfg.timeout_s);
    MHD_add_response_header(r, "Keep-Alive", v);
    if (srv->cfg.cors) MHD_add_response_header(r, "Access-Control-Allow-Origin", srv->cfg.cors);
    /* Draining: no connection outlives its answer, so a client (or a balancer) that keeps
     * connections sends its next request to an instance that takes it. */
    if (atomic_load((atomic_int *)&srv->state) == SV_DRAINING)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
}

static enum MHD_Result send_text(struct MHD_Connection *c, conn *q, int status, const char *type,
                                 char *body, int retry_after)
{
    if (!body) return MHD_NO;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    add_server_headers(q->srv, r);
    if (status == 405)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, sv_endpoint_methods(q->ep));
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (retry_after) {
        char v[16];
        snprintf(v, sizeof v, "%d", retry_after);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
    }
    q->status = status;
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, conn *q, const sv_error *e)
{
    snprintf(q->why, sizeof q->why, "%s: %.*s", e->code ? e->code : e->type, 300, e->message);
    return send_text(c, q, e->status, "application/json", sv_error_json(e), e->retry_after);
}

/* ---- generation --------------------------------------------------------------------------- */

typedef struct job {
    sv_server *srv;
    const char *method;
    sv_request req;
    int slot;
    int fd;
    double t0;
    char id[40];
    pl_sampler *smp;
    /* Outcome. */
    pl_status st;
    pl_error err;
    int64_t n_prompt, n_ctx; /* on PL_ERR_CONTEXT_FULL: the prompt's tokens and the context */
    pl_chat_stats stats;
    /* Non-streaming: the text; streaming: the SSE bytes not yet sent. */
    char *out;
    size_t out_len, out_cap, out_sent;
    int oom;
    /* Streaming. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int thread_started;
    int started; /* the first piece (or the end) is there: the status is 200 */
    int done;
    atomic_int gone; /* the client went away (or the response was dropped) */
} job;

static int append(job *j, const char *s, size_t n)
{
    if (j->out_len + n + 1 > j->out_cap) {
        size_t cap = j->out_cap ? j->out_cap : 1024;
        while (cap < j->out_len + n + 1) cap *= 2;
        char *o = realloc(j->out, cap);
        if (!o) {
            j->oom = 1;
            return -1;
        }
        j->out = o;
        j->out_cap = cap;
    }
    memcpy(j->out + j->out_len, s, n);
    j->out_len += n;
    j->out[j->out_len] = 0;
    return 0;
}

static int should_stop(job *j)
{
    if (atomic_load(&j->gone)) return 1;
    if (sv_slots_cancelled(j->srv->slots, j->slot)) return 1;
    if (peer_gone(j->fd)) {
        atomic_store(&j->gone, 1);
        return 1;
    }
    return 0;
}

static void fill_result(const job *j, sv_result *r)
{
    const pl_chat_stats *s = &j->stats;
    *r = (sv_result){
        .id = j->id,
        .created = (int64_t)time(NULL),
        .finish = s->gen.stop == PL_STOP_MAX_TOKENS || s->gen.stop == PL_STOP_CONTEXT_FULL
                      ? "length"
                      : "stop",
        .prompt_tokens = s->n_reused + s->n_prefilled,
        .completion_tokens = s->n_generated,
        .cached_tokens = s->n_reused,
        .slot = j->slot,
        .cache_path = pl_chat_path_str(s->path),
        .reused = s->n_reused,
        .prefilled = s->n_prefilled,
        .ttft_ms = s->tokenize_ms + s->gen.ttft_ms,
        .total_ms = s->total_ms,
    };
}

static int on_text_plain(void *user, const char *text, size_t len)
{
    job *j = user;
    if (append(j, text, len)) return 1;
    return should_stop(j);
}

static int on_text_stream(void *user, const char *text, size_t len)
{
    job *j = user;
    sv_result r;
    fill_result(j, &r);
    char *ev = sv_chunk_event(j->req.ep, j->srv->cfg.api.alias, &r, 1, text, len);
    pthread_mutex_lock(&j->mu);
    if (!ev || append(j, ev, strlen(ev))) j->oom = 1;
    j->started = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    free(ev);
    return j->oom || should_stop(j);
}

/* pl_chat on the job's slot, then the slot back; records the generation's metrics. */
static void run_chat(job *j)
{
    sv_server *srv = j->srv;
    const char *stops[SV_MAX_STOP];
    for (size_t i = 0; i < j->req.n_stops; i++) stops[i] = j->req.stops[i];
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = j->req.max_tokens;
    gp.ignore_eog = j->req.ignore_eos;
    gp.stops = stops;
    gp.n_stops = j->req.n_stops;
    double t_start = pl_clock_s();
    j->st = pl_chat(sv_slots_session(srv->slots, j->slot), j->req.prompt, j->req.prompt_len, j->smp,
                    &gp, j->req.stream ? on_text_stream : on_text_plain, j, &j->stats, &j->err);
    sv_slots_release(srv->slots, j->slot);
    if (j->st == PL_OK) {
        const pl_chat_stats *s = &j->stats;
        double ttft = (t_start - j->t0) + (s->tokenize_ms + s->gen.ttft_ms) * 1e-3;
        sv_metrics_generation(&srv->metrics, s->path, s->n_reused + s->n_prefilled, s->n_generated,
                              s->n_reused, ttft);
        if (s->gen.stop == PL_STOP_CANCELLED && atomic_load(&j->gone))
            sv_metrics_cancel(&srv->metrics);
    } else if (j->st == PL_ERR_CONTEXT_FULL) {
        /* The numbers the client can act on: its prompt's tokens (as pl_chat tokenizes a
         * prompt from scratch) and the slot's context. */
        pl_session_info si = {0};
        size_t n = 0;
        int32_t one;
        pl_session_get_info(sv_slots_session(srv->slots, j->slot), &si, NULL);
        pl_tokenize(srv->m, j->req.prompt, j->req.prompt_len, PL_TOKENIZE_PARSE_SPECIAL, &one, 1,
                    &n, NULL);
        j->n_prompt = (int64_t)n;
        j->n_ctx = si.kv_capacity;
        sv_metrics_reject(&srv->metrics, SV_REJ_CONTEXT);
    }
}

static void job_free(job *j)
{
    if (!j) return;
    pl_sampler_free(j->smp);
    sv_request_free(&j->req);
    free(j->out);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

/* The error a failed pl_chat answers with. */
static void chat_error(const job *j, sv_error *e)
{
    const char *param = j->req.ep == SV_EP_CHAT ? "messages" : "prompt";
    if (j->st == PL_ERR_CONTEXT_FULL && j->n_prompt > j->n_ctx)
        sv_error_set(e, 413, "invalid_request_error", "context_length_exceeded", param,
                     "the prompt is %lld token%s; the context (-c) is %lld: shorten the %s, or "
                     "start the server with a larger -c",
                     (long long)j->n_prompt, j->n_prompt == 1 ? "" : "s", (long long)j->n_ctx,
                     param);
    else if (j->st == PL_ERR_CONTEXT_FULL)
        sv_error_set(e, 413, "invalid_request_error", "context_length_exceeded", param,
                     "the %s (%lld token%s) do%s not fit the context (-c %lld): %s", param,
                     (long long)j->n_prompt, j->n_prompt == 1 ? "" : "s",
                     j->req.ep == SV_EP_CHAT ? "" : "es", (long long)j->n_ctx, j->err.msg);
    else
        sv_error_set(e, 500, "server_error", NULL, NULL, "generation failed: %s: %s",
                     pl_status_str(j->st), j->err.msg);
}

static void *stream_thread(void *arg)
{
    job *j = arg;
    run_chat(j);
    sv_result r;
    fill_result(j, &r);
    /* Counted before the last bytes are released: a client that reads /metrics right after its
     * [DONE] finds its request there. */
    double ms = (pl_clock_s() - j->t0) * 1e3;
    if (j->started || j->st == PL_OK)
        sv_metrics_request(&j->srv->metrics, j->req.ep, 200, ms * 1e-3);
    pthread_mutex_lock(&j->mu);
    if (j->st == PL_OK) {
        char *ev = sv_chunk_event(j->req.ep, j->srv->cfg.api.alias, &r, 2, NULL, 0);
        if (!ev || append(j, ev, strlen(ev))) j->oom = 1;
        free(ev);
        if (j->req.include_usage) {
            ev = sv_chunk_event(j->req.ep, j->srv->cfg.api.alias, &r, 3, NULL, 0);
            if (!ev || append(j, ev, strlen(ev))) j->oom = 1;
            free(ev);
        }
        append(j, "data: [DONE]\n\n", 14);
    } else if (j->started) {
        /* Too late for a status: the error goes in the stream, as OpenAI does. */
        sv_error e;
        chat_error(j, &e);
        char *body = sv_error_json(&e);
        if (body && !append(j, "data: ", 6) && !append(j, body, strlen(body))) append(j, "\n\n", 2);
        free(body);
    }
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (j->started || j->st == PL_OK)
        log_line(j->srv, j->method, sv_endpoint_path(j->req.ep), 200, ms, j->slot,
                 pl_chat_path_str(j->stats.path), NULL);
    return NULL;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    job *j = cls;
    (void)pos;
    pthread_mutex_lock(&j->mu);
    while (j->out_sent == j->out_len && !j->done) pthread_cond_wait(&j->cv, &j->mu);
    size_t n = j->out_len - j->out_sent;
    if (n > max) n = max;
    if (n) {
        memcpy(buf, j->out + j->out_sent, n);
        j->out_sent += n;
    }
    int end = n == 0 && j->done;
    int failed = end && (j->oom || (j->st != PL_OK && !j->started));
    pthread_mutex_unlock(&j->mu);
    if (end) return failed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    job *j = cls;
    atomic_store(&j->gone, 1);
    pthread_join(j->thread, NULL);
    job_free(j);
}

static int gone_cb(void *user)
{
    return peer_gone(*(const int *)user);
}

static enum MHD_Result generate(struct MHD_Connection *c, conn *q, sv_request *req)
{
    sv_server *srv = q->srv;
    sv_error e;
    /* Counted before the state is read (both sequentially consistent): either this request
     * sees DRAINING and is refused, or the drain sees it in flight and waits for it. */
    atomic_fetch_add(&srv->in_flight, 1);
    if (atomic_load(&srv->state) == SV_DRAINING) {
        atomic_fetch_sub(&srv->in_flight, 1);
        sv_request_free(req);
        sv_error_set(&e, 503, "overloaded_error", "draining", NULL,
                     "the server is draining (shutting down): it finishes the requests it has and "
                     "takes no new ones; send this one to another instance");
        e.retry_after = 1;
        return send_error(c, q, &e);
    }
    q->in_flight = 1;
    job *j = calloc(1, sizeof *j);
    if (!j) {
        sv_request_free(req);
        sv_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
        return send_error(c, q, &e);
    }
    pthread_mutex_init(&j->mu, NULL);
    sv_cond_init(&j->cv);
    j->srv = srv;
    j->method = "POST";
    j->req = *req;
    memset(req, 0, sizeof *req);
    j->fd = q->fd;
    j->t0 = q->t0;
    j->slot = -1;
    uint64_t k = atomic_fetch_add(&srv->counter, 1);
    snprintf(j->id, sizeof j->id, "%s-%016llx", j->req.ep == SV_EP_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)mix64(srv->nonce ^ k));
    if (!j->req.has_seed) j->req.sp.seed = mix64(srv->nonce + 0x5eed + k);

    pl_error pe = {0};
    if (pl_sampler_new(&j->smp, srv->m, &j->req.sp, &pe)) {
        sv_error_set(&e, 400, "invalid_request_error", "invalid_value", NULL,
                     "sampling parameters: %s", pe.msg);
        job_free(j);
        return send_error(c, q, &e);
    }
    int rc =
        sv_slots_acquire(srv->slots, j->req.prompt, j->req.prompt_len, gone_cb, &j->fd, &j->slot);
    if (rc != SV_ACQ_OK) {
        job_free(j);
        if (rc == SV_ACQ_GONE) {
            sv_metrics_cancel(&srv->metrics);
            q->status = 499; /* nginx's "client closed request", for the log only */
            return MHD_NO;
        }
        if (rc == SV_ACQ_FULL) sv_metrics_reject(&srv->metrics, SV_REJ_OVERLOAD);
        sv_error_set(&e, 503, "overloaded_error",
                     rc == SV_ACQ_FULL ? "overloaded" : "shutting_down", NULL,
                     rc == SV_ACQ_FULL ? "every slot is busy and the queue is full; retry later"
                                       : "the server is shutting down");
        e.retry_after = 1;
        return send_error(c, q, &e);
    }

    if (!j->req.stream) {
        run_chat(j);
        enum MHD_Result ok;
        if (j->st) {
            chat_error(j, &e);
            ok = send_error(c, q, &e);
        } else if (j->oom) {
            sv_error_set(&e, 500, "server_error", NULL, NULL, "out of memory for the reply");
            ok = send_error(c, q, &e);
        } else {
            sv_result r;
            fill_result(j, &r);
            ok = send_text(c, q, 200, "application/json",
                           sv_response_json(j->req.ep, srv->cfg.api.alias, &r, j->out, j->out_len),
                           0);
        }
        double ms = (pl_clock_s() - q->t0) * 1e3;
        sv_metrics_request(&srv->metrics, j->req.ep, q->status, ms * 1e-3);
        log_line(srv, j->method, q->path, q->status, ms, j->slot,
                 j->st ? NULL : pl_chat_path_str(j->stats.path), q->why);
        q->counted = 1;
        job_free(j);
        return ok;
    }

    /* Streaming: the opening chunk, then the generation on its own thread; the status waits
     * for the first piece, so a conversation that does not fit is still a 413. */
    if (j->req.ep == SV_EP_CHAT) {
        sv_result r;
        fill_result(j, &r);
        char *ev = sv_chunk_event(j->req.ep, srv->cfg.api.alias, &r, 0, NULL, 0);
        if (!ev || append(j, ev, strlen(ev))) j->oom = 1;
        free(ev);
    }
    if (pthread_create(&j->thread, NULL, stream_thread, j)) {
        sv_slots_release(srv->slots, j->slot);
        job_free(j);
        sv_error_set(&e, 500, "server_error", NULL, NULL, "cannot start a thread");
        return send_error(c, q, &e);
    }
    pthread_mutex_lock(&j->mu);
    while (!j->started && !j->done) {
        sv_cond_wait_ms(&j->cv, &j->mu, 100);
        if (!j->started && !j->done && peer_gone(j->fd)) atomic_store(&j->gone, 1);
    }
    int failed = !j->started && j->st != PL_OK;
    pthread_mutex_unlock(&j->mu);
    q->counted = 1;
    if (failed) {
        pthread_join(j->thread, NULL);
        chat_error(j, &e);
        enum MHD_Result ok = send_error(c, q, &e);
        double ms = (pl_clock_s() - q->t0) * 1e3;
        sv_metrics_request(&srv->metrics, j->req.ep, q->status, ms * 1e-3);
        log_line(srv, j->method, q->path, q->status, ms, j->slot, NULL, q->why);
        job_free(j);
        return ok;
    }
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, j, stream_free);
    if (!r) {
        stream_free(j);
        return MHD_NO;
    }
    add_server_headers(srv, r);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    q->status = 200;
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

/* ---- the access handler --------------------------------------------------------------------- */

/* /health: 200 {"status":"ok",...} only when READY (a busy server is still healthy: its
 * requests queue); else 503 with the state and why, which is what a balancer's check reads. */
static char *health_json(sv_server *srv, int *status)
{
    sv_state st = (sv_state)atomic_load(&srv->state);
    char *s = malloc(320);
    if (!s) return NULL;
    *status = st == SV_READY ? 200 : 503;
    if (st == SV_LOADING) {
        snprintf(s, 320,
                 "{\"status\":\"loading\",\"reason\":\"the model is loading; /health answers 200 "
                 "once it is ready\"}");
        return s;
    }
    int busy, queued;
    sv_slots_counts(srv->slots, &busy, &queued);
    int total = sv_slots_total(srv->slots);
    if (st == SV_DRAINING)
        snprintf(s, 320,
                 "{\"status\":\"draining\",\"reason\":\"the server is shutting down: it finishes "
                 "the requests in flight and takes no new ones\",\"in_flight\":%d,"
                 "\"slots_total\":%d,\"slots_idle\":%d,\"queue\":%d}",
                 atomic_load(&srv->in_flight), total, total - busy, queued);
    else
        snprintf(s, 320, "{\"status\":\"ok\",\"slots_total\":%d,\"slots_idle\":%d,\"queue\":%d}",
                 total, total - busy, queued);
    return s;
}

/* OPTIONS: 204 with Allow; with --cors also the preflight's answer (the origin, the methods
 * and the headers a browser may send, cached for a day). */
static enum MHD_Result preflight(struct MHD_Connection *c, conn *q)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    const char *methods = sv_endpoint_methods(q->ep);
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, methods);
    add_server_headers(q->srv, r);
    if (q->srv->cfg.cors) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", methods);
        MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
        MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    }
    q->status = MHD_HTTP_NO_CONTENT;
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_NO_CONTENT, r);
    MHD_destroy_response(r);
    return ok;
}

/* How far past --max-body a declared body is still read (and dropped) before its 413: up to
 * the limit again, at most 8 MiB. */
#define SV_DRAIN_MAX (8u << 20)
static unsigned long long drain_limit(size_t max_body)
{
    return (unsigned long long)max_body + (max_body < SV_DRAIN_MAX ? max_body : SV_DRAIN_MAX);
}

static enum MHD_Result body_too_large(struct MHD_Connection *c, conn *q)
{
    sv_error e;
    sv_metrics_reject(&q->srv->metrics, SV_REJ_BODY);
    sv_error_set(&e, 413, "invalid_request_error", "request_too_large", NULL,
                 "the body is over the server's limit of %zu bytes (--max-body)",
                 q->srv->cfg.max_body);
    return send_error(c, q, &e);
}

/* ---- the chat page ---------------------------------------------------------------------- */

/* What every answer of the page carries: isolation (SharedArrayBuffer needs COOP + COEP; CORP
 * lets a require-corp document load these files), no sniffing, no stale copies. */
static void page_headers(const sv_server *srv, struct MHD_Response *r)
{
    add_server_headers(srv, r);
    MHD_add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
    MHD_add_response_header(r, "Cross-Origin-Embedder-Policy", "require-corp");
    MHD_add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
}

/* "/" and the files of the page (embedded, or in --web-dir): 1 with *res set when answered;
 * 0 when url names none of them, and the API answers it (a 404 there). url is the path,
 * percent-decoded by libmicrohttpd: sv_web_name_ok keeps it to one segment without "..". */
static int serve_page(struct MHD_Connection *c, conn *q, const char *method, const char *url,
                      enum MHD_Result *res)
{
    sv_server *srv = q->srv;
    if (url[0] != '/') return 0;
    const char *name = url + 1;
    if (name[0] && !sv_web_name_ok(name)) return 0;
    const sv_asset *a = sv_web_embedded(name);
    int fd = -1;
    struct stat st;
    if (!a) {
        char path[4096];
        if (!srv->cfg.web_dir || !name[0] ||
            snprintf(path, sizeof path, "%s/%s", srv->cfg.web_dir, name) >= (int)sizeof path)
            return 0;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return 0;
        if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
            close(fd);
            return 0;
        }
    }
    struct MHD_Response *r;
    int status = 200;
    int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (!get) {
        if (fd >= 0) close(fd);
        int options = strcmp(method, "OPTIONS") == 0;
        sv_error e;
        sv_error_set(&e, 405, "invalid_request_error", "method_not_allowed", NULL,
                     "%.200s takes GET or HEAD, not %.16s", url, method);
        char *body = options ? NULL : sv_error_json(&e);
        status = options ? MHD_HTTP_NO_CONTENT : 405;
        r = options ? MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT)
            : body  ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
                    : NULL;
        if (!r) {
            free(body);
            *res = MHD_NO;
            return 1;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD, OPTIONS");
        if (!options) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    } else {
        r = a ? MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT)
              : MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
        if (!r) {
            if (fd >= 0) close(fd);
            *res = MHD_NO;
            return 1;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                sv_web_type(name[0] ? name : "index.html"));
    }
    page_headers(srv, r);
    q->status = status;
    *res = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return 1;
}

/* GET /model.gguf: the file the server runs, read again from its path (the page's wasm engine
 * loads it into its own heap). The API key was checked by the request path. */
static enum MHD_Result send_model_file(struct MHD_Connection *c, conn *q)
{
    sv_server *srv = q->srv;
    sv_error e;
    int fd = srv->cfg.model_file ? open(srv->cfg.model_file, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        if (srv->cfg.model_file)
            sv_error_set(&e, 404, "invalid_request_error", "not_found", NULL,
                         "the model file '%.200s' can no longer be read: %s", srv->cfg.model_file,
                         strerror(errno));
        else
            sv_error_set(&e, 404, "invalid_request_error", "not_found", NULL,
                         "this server does not offer its model file (started with "
                         "--no-model-file)");
        return send_error(c, q, &e);
    }
    struct MHD_Response *r = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    page_headers(srv, r);
    q->status = 200;
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    sv_server *srv = cls;
    conn *q = *con_cls;
    (void)version;
    if (!q) {
        if (!(q = calloc(1, sizeof *q))) return MHD_NO;
        q->srv = srv;
        q->t0 = pl_clock_s();
        q->fd = -1;
        snprintf(q->method, sizeof q->method, "%s", method);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) q->fd = ci->connect_fd;
        *con_cls = q;
        size_t path_len = strcspn(url, "?"), k = 0;
        /* the path for the log: a log line is one line of printable text */
        for (size_t i = 0; i < path_len && k + 4 < sizeof q->path; i++)
            q->path[k++] = url[i] > ' ' && url[i] < 0x7f ? url[i] : '?';
        if (k < path_len) memcpy(q->path + k, "...", 3), k += 3;
        q->path[k] = 0;
        for (int ep = SV_EP_NONE + 1; ep < SV_EP_COUNT; ep++)
            if (strlen(sv_endpoint_path((sv_endpoint)ep)) == path_len &&
                memcmp(sv_endpoint_path((sv_endpoint)ep), url, path_len) == 0)
                q->ep = (sv_endpoint)ep;
        /* A declared length over the limit: far over it, refused before a byte of the body is
         * read; within drain_limit, the body is read and dropped first, so that the
         * client, still sending, reads the 413 instead of a reset connection (closing a socket
         * with unread input resets it, and a reset can discard the answer in flight). */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (errno == ERANGE || n > drain_limit(srv->cfg.max_body)) return body_too_large(c, q);
            if (n > srv->cfg.max_body) q->too_large = 1;
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (q->too_large || n > srv->cfg.max_body - q->len) {
            /* Chunked bodies have no length up front: stop keeping them at the limit. */
            q->too_large = 1;
            free(q->body);
            q->body = NULL;
            return MHD_YES;
        }
        if (q->len + n + 1 > q->cap) {
            size_t cap = q->cap ? q->cap : 4096;
            while (cap < q->len + n + 1) cap *= 2;
            if (cap > srv->cfg.max_body + 1) cap = srv->cfg.max_body + 1;
            char *b = realloc(q->body, cap);
            if (!b) return MHD_NO;
            q->body = b;
            q->cap = cap;
        }
        memcpy(q->body + q->len, upload_data, n);
        q->len += n;
        return MHD_YES;
    }
    set_deadline(srv, c, 0);
    if (q->too_large) return body_too_large(c, q);
    enum MHD_Result page;
    if (serve_page(c, q, method, url, &page)) return page;

    /* No model yet: the request path cannot render a prompt, and there are no slots. */
    if (atomic_load(&srv->state) == SV_LOADING &&
        (q->ep == SV_EP_CHAT || q->ep == SV_EP_COMPLETIONS || q->ep == SV_EP_SLOTS) &&
        strcmp(method, "OPTIONS") != 0) {
        sv_error e;
        sv_error_set(&e, 503, "overloaded_error", "loading", NULL,
                     "the model is loading; retry when /health answers 200");
        e.retry_after = 1;
        return send_error(c, q, &e);
    }
    sv_header h[2] = {
        {"Authorization", MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")},
        {"Content-Type", MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type")},
    };
    sv_request req;
    sv_error e;
    if (sv_parse_request(&srv->cfg.api, method, url, h, 2, q->body, q->len, &req, &e)) {
        if (e.status == 401) sv_metrics_reject(&srv->metrics, SV_REJ_AUTH);
        return send_error(c, q, &e);
    }
    q->ep = req.ep;
    if (req.preflight) return preflight(c, q);
    /* HEAD: the GET's answer; libmicrohttpd sends its headers (Content-Length included) and
     * leaves out the body. */
    switch (req.ep) {
    case SV_EP_HEALTH: {
        int status = 503;
        char *body = health_json(srv, &status);
        return send_text(c, q, status, "application/json", body, status == 503 ? 1 : 0);
    }
    case SV_EP_MODELS:
        return send_text(c, q, 200, "application/json", sv_models_json(&srv->cfg.api, srv->created),
                         0);
    case SV_EP_METRICS: {
        sv_gauges g = {.state = (sv_state)atomic_load(&srv->state),
                       .in_flight = atomic_load(&srv->in_flight)};
        if (g.state != SV_LOADING) {
            sv_slots_counts(srv->slots, &g.busy, &g.queue);
            g.total = sv_slots_total(srv->slots);
        }
        return send_text(c, q, 200, "text/plain; version=0.0.4; charset=utf-8",
                         sv_metrics_text(&srv->metrics, &g), 0);
    }
    case SV_EP_SLOTS:
        return send_text(c, q, 200, "application/json", sv_slots_json(srv->slots), 0);
    case SV_EP_MODEL_FILE:
        return send_model_file(c, q);
    default:
        return generate(c, q, &req);
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    sv_server *srv = cls;
    conn *q = *con_cls;
    (void)toe;
    set_deadline(srv, c, 1); /* a kept-alive connection's next request */
    if (!q) return;
    if (q->in_flight) atomic_fetch_sub(&srv->in_flight, 1);
    if (!q->counted && q->status) {
        double ms = (pl_clock_s() - q->t0) * 1e3;
        sv_metrics_request(&srv->metrics, q->ep, q->status, ms * 1e-3);
        log_line(srv, q->method, q->path, q->status, ms, -1, NULL, q->why);
    }
    free(q->body);
    free(q);
    *con_cls = NULL;
}

/* ---- start and stop ----------------------------------------------------------------------- */

static pl_status fail(pl_error *err, pl_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static pl_status fail(pl_error *err, pl_status st, const char *fmt, ...)
{
    if (err) {
        err->code = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* Everything but the daemon (stopped first): the watchdog, the slots, the metrics. */
static void server_free(sv_server *s)
{
    if (s->wd_running) {
        pthread_mutex_lock(&s->wd_mu);
        s->wd_stop = 1;
        pthread_cond_signal(&s->wd_cv);
        pthread_mutex_unlock(&s->wd_mu);
        pthread_join(s->wd, NULL);
    }
    if (s->slots) sv_slots_free(s->slots);
    sv_metrics_destroy(&s->metrics);
    pthread_cond_destroy(&s->wd_cv);
    pthread_mutex_destroy(&s->wd_mu);
    pthread_mutex_destroy(&s->log_mu);
    free(s);
}

int sv_resolve_host(const char *host, int port, struct sockaddr_storage *out, char *why,
                    size_t why_cap)
{
    memset(out, 0, sizeof *out);
    struct sockaddr_in *a4 = (struct sockaddr_in *)out;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        return 0;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        return 0;
    }
    /* A name: the resolver's answer (/etc/hosts first: "localhost" is loopback), IPv4 first
     * because that is where clients that say "localhost" look first too. */
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
    int rc = host[0] ? getaddrinfo(host, NULL, &hints, &res) : EAI_NONAME;
    if (rc) {
        snprintf(why, why_cap,
                 "host '%.200s': not an address or a name this machine resolves (%s); e.g. "
                 "127.0.0.1, ::1, 0.0.0.0, localhost",
                 host, gai_strerror(rc));
        return -1;
    }
    const struct addrinfo *pick = NULL;
    for (const struct addrinfo *a = res; a; a = a->ai_next)
        if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
            (!pick || (pick->ai_family != AF_INET && a->ai_family == AF_INET)))
            pick = a;
    if (pick) {
        memcpy(out, pick->ai_addr, pick->ai_addrlen);
        if (pick->ai_family == AF_INET)
            a4->sin_port = htons((uint16_t)port);
        else
            a6->sin6_port = htons((uint16_t)port);
    } else {
        snprintf(why, why_cap, "host '%.200s': resolves to no IPv4 or IPv6 address", host);
    }
    freeaddrinfo(res);
    return pick ? 0 : -1;
}

pl_status sv_server_start(sv_server **out, const pl_model *m, const sv_config *cfg, pl_error *err)
{
    *out = NULL;
    struct sockaddr_storage ss;
    const char *host = cfg->host ? cfg->host : "127.0.0.1";
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ITC;
    char why[320];
    if (sv_resolve_host(host, cfg->port, &ss, why, sizeof why))
        return fail(err, PL_ERR_INVALID_ARG, "%s", why);
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    sv_server *s = calloc(1, sizeof *s);
    if (!s) return fail(err, PL_ERR_NOMEM, "no memory for the server");
    s->cfg = *cfg;
    s->created = (int64_t)time(NULL);
    s->nonce = mix64((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)s);
    atomic_init(&s->counter, 0);
    pthread_mutex_init(&s->log_mu, NULL);
    pthread_mutex_init(&s->wd_mu, NULL);
    sv_cond_init(&s->wd_cv);
    if (sv_metrics_init(&s->metrics)) {
        server_free(s);
        return fail(err, PL_ERR_NOMEM, "cannot set up the metrics");
    }
    atomic_init(&s->state, SV_LOADING);
    atomic_init(&s->in_flight, 0);
    s->cfg.api.model = NULL;
    s->cfg.api.tmpl = NULL;
    if (m) {
        pl_status st = sv_server_attach(s, m, cfg->api.tmpl, &cfg->session, err);
        if (st) {
            server_free(s);
            return st;
        }
    }
    if (pthread_create(&s->wd, NULL, watchdog, s)) {
        server_free(s);
        return fail(err, PL_ERR_NOMEM, "cannot start the request-deadline thread");
    }
    s->wd_running = 1;
    s->d =
        MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &ss,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
                         MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
                         on_connection, s, MHD_OPTION_CONNECTION_LIMIT, (unsigned)512,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024, MHD_OPTION_END);
    if (!s->d) {
        int e = errno;
        server_free(s);
        return fail(err, PL_ERR_IO, "cannot listen on %.100s port %d: %s", host, cfg->port,
                    e ? strerror(e) : "libmicrohttpd could not start");
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : cfg->port;
    *out = s;
    return PL_OK;
}

pl_status sv_server_attach(sv_server *s, const pl_model *m, const pl_chat_template *tmpl,
                           const pl_session_params *sp, pl_error *err)
{
    if (!m || !sp) return fail(err, PL_ERR_INVALID_ARG, "sv_server_attach: no model");
    if (atomic_load(&s->state) != SV_LOADING || s->slots)
        return fail(err, PL_ERR_INVALID_ARG, "sv_server_attach: the server has a model already");
    pl_status st = sv_slots_new(&s->slots, m, sp, s->cfg.n_slots, s->cfg.queue, err);
    if (st) return st;
    s->m = m;
    s->cfg.api.model = m;
    s->cfg.api.tmpl = tmpl;
    s->cfg.session = *sp;
    atomic_store(&s->state, SV_READY);
    return PL_OK;
}

sv_state sv_server_state(sv_server *s)
{
    return (sv_state)atomic_load(&s->state);
}

void sv_server_drain(sv_server *s)
{
    if (s) atomic_store(&s->state, SV_DRAINING);
}

int sv_server_in_flight(sv_server *s)
{
    return s ? atomic_load(&s->in_flight) : 0;
}

int sv_server_port(const sv_server *s)
{
    return s->port;
}

sv_slots *sv_server_slots(sv_server *s)
{
    return s->slots;
}

sv_metrics *sv_server_metrics(sv_server *s)
{
    return &s->metrics;
}

void sv_server_stop(sv_server *s)
{
    if (!s) return;
    MHD_socket ls = MHD_quiesce_daemon(s->d);
    if (s->slots) sv_slots_stop(s->slots);
    MHD_stop_daemon(s->d);
    s->d = NULL;
    if (ls != MHD_INVALID_SOCKET) close(ls);
    server_free(s);
}
