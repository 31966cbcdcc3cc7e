/* metrics.c — the server's counters and fixed-bucket histograms under one mutex, and their
 * Prometheus text exposition (format 0.0.4). Not a general metrics library. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

const double sv_hist_bounds[SV_HIST_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                1,     2.5,  5,     10,   30,  60,   120};

int sv_metrics_init(sv_metrics *m)
{
    memset(m, 0, sizeof *m);
    return pthread_mutex_init(&m->mu, NULL) ? -1 : 0;
}

void sv_metrics_destroy(sv_metrics *m)
{
    pthread_mutex_destroy(&m->mu);
}

static void hist_add(sv_hist *h, double v)
{
    int b = 0;
    while (b < SV_HIST_BUCKETS && v > sv_hist_bounds[b]) b++;
    h->count[b]++;
    h->sum += v;
    h->n++;
}

void sv_metrics_request(sv_metrics *m, sv_endpoint ep, int status, double seconds)
{
    if (ep < 0 || ep >= SV_EP_COUNT) ep = SV_EP_NONE;
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < SV_MAX_STATUS; i++) {
        if (m->req[ep][i].status == 0) m->req[ep][i].status = status;
        if (m->req[ep][i].status == status) {
            m->req[ep][i].n++;
            break;
        }
    }
    if (ep == SV_EP_CHAT || ep == SV_EP_COMPLETIONS) hist_add(&m->duration, seconds);
    pthread_mutex_unlock(&m->mu);
}

void sv_metrics_reject(sv_metrics *m, int reason)
{
    if (reason < 0 || reason >= SV_REJ_COUNT) return;
    pthread_mutex_lock(&m->mu);
    m->rejected[reason]++;
    pthread_mutex_unlock(&m->mu);
}

void sv_metrics_cancel(sv_metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->cancelled++;
    pthread_mutex_unlock(&m->mu);
}

void sv_metrics_generation(sv_metrics *m, int path, int64_t prompt, int64_t completion,
                           int64_t cached, double ttft_seconds)
{
    pthread_mutex_lock(&m->mu);
    if (path >= PL_CHAT_FAST && path <= PL_CHAT_SLOW) m->path[path]++;
    m->prompt_tokens += (uint64_t)(prompt > 0 ? prompt : 0);
    m->completion_tokens += (uint64_t)(completion > 0 ? completion : 0);
    m->cached_tokens += (uint64_t)(cached > 0 ? cached : 0);
    if (prompt > cached && cached >= 0) m->prefilled_tokens += (uint64_t)(prompt - cached);
    if (ttft_seconds >= 0) hist_add(&m->ttft, ttft_seconds);
    pthread_mutex_unlock(&m->mu);
}

/* A growing text buffer; on allocation failure it stops growing and remembers. */
typedef struct buf {
    char *s;
    size_t len, cap;
    int oom;
} buf;

static void put(buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(buf *b, const char *fmt, ...)
{
    for (;;) {
        if (b->oom) return;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap <= b->len + (size_t)n) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static void put_hist(buf *b, const char *name, const char *help, const sv_hist *h)
{
    put(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < SV_HIST_BUCKETS; i++) {
        cum += h->count[i];
        put(b, "%s_bucket{le=\"%g\"} %llu\n", name, sv_hist_bounds[i], (unsigned long long)cum);
    }
    cum += h->count[SV_HIST_BUCKETS];
    put(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
        (unsigned long long)cum, name, h->sum, name, (unsigned long long)h->n);
}

const char *sv_state_str(sv_state st)
{
    return st == SV_LOADING ? "loading" : st == SV_READY ? "ready" : "draining";
}

char *sv_metrics_text(sv_metrics *m, const sv_gauges *g)
{
    static const char *const paths[4] = {"", "fast", "partial", "slow"};
    static const char *const reasons[SV_REJ_COUNT] = {"overload", "context", "body", "auth",
                                                      "timeout"};
    buf b = {0};
    pthread_mutex_lock(&m->mu);
    put(&b, "# HELP plumb_requests_total HTTP requests answered, by endpoint and status.\n"
            "# TYPE plumb_requests_total counter\n");
    for (int ep = 0; ep < SV_EP_COUNT; ep++)
        for (int i = 0; i < SV_MAX_STATUS && m->req[ep][i].status; i++)
            put(&b, "plumb_requests_total{endpoint=\"%s\",status=\"%d\"} %llu\n",
                sv_endpoint_path((sv_endpoint)ep), m->req[ep][i].status,
                (unsigned long long)m->req[ep][i].n);
    put(&b,
        "# HELP plumb_prompt_tokens_total Prompt tokens of finished generations.\n"
        "# TYPE plumb_prompt_tokens_total counter\nplumb_prompt_tokens_total %llu\n"
        "# HELP plumb_completion_tokens_total Tokens generated.\n"
        "# TYPE plumb_completion_tokens_total counter\nplumb_completion_tokens_total %llu\n"
        "# HELP plumb_cached_tokens_total Prompt tokens reused from a slot's prefix cache.\n"
        "# TYPE plumb_cached_tokens_total counter\nplumb_cached_tokens_total %llu\n"
        "# HELP plumb_prefilled_tokens_total Prompt tokens prefilled (not found in a slot's "
        "prefix cache).\n"
        "# TYPE plumb_prefilled_tokens_total counter\nplumb_prefilled_tokens_total %llu\n"
        "# HELP plumb_cache_path_total Generations by the prefix-cache path they took.\n"
        "# TYPE plumb_cache_path_total counter\n",
        (unsigned long long)m->prompt_tokens, (unsigned long long)m->completion_tokens,
        (unsigned long long)m->cached_tokens, (unsigned long long)m->prefilled_tokens);
    for (int p = 1; p <= 3; p++)
        put(&b, "plumb_cache_path_total{path=\"%s\"} %llu\n", paths[p],
            (unsigned long long)m->path[p]);
    put(&b, "# HELP plumb_rejected_total Requests refused before generation, by reason.\n"
            "# TYPE plumb_rejected_total counter\n");
    for (int r = 0; r < SV_REJ_COUNT; r++)
        put(&b, "plumb_rejected_total{reason=\"%s\"} %llu\n", reasons[r],
            (unsigned long long)m->rejected[r]);
    put(&b,
        "# HELP plumb_cancelled_total Generations cancelled because the client went away.\n"
        "# TYPE plumb_cancelled_total counter\nplumb_cancelled_total %llu\n"
        "# HELP plumb_queue_length Requests waiting for a slot.\n"
        "# TYPE plumb_queue_length gauge\nplumb_queue_length %d\n"
        "# HELP plumb_slots_busy Slots generating.\n"
        "# TYPE plumb_slots_busy gauge\nplumb_slots_busy %d\n"
        "# HELP plumb_slots_total Slots (sessions).\n"
        "# TYPE plumb_slots_total gauge\nplumb_slots_total %d\n"
        "# HELP plumb_requests_in_flight Generation requests accepted and not yet answered to "
        "the end (waiting ones included).\n"
        "# TYPE plumb_requests_in_flight gauge\nplumb_requests_in_flight %d\n"
        "# HELP plumb_state The server's state: 1 for the one it is in (ready: /health is 200).\n"
        "# TYPE plumb_state gauge\n",
        (unsigned long long)m->cancelled, g->queue, g->busy, g->total, g->in_flight);
    for (int st = SV_LOADING; st <= SV_DRAINING; st++)
        put(&b, "plumb_state{state=\"%s\"} %d\n", sv_state_str((sv_state)st),
            g->state == (sv_state)st);
    put_hist(&b, "plumb_request_duration_seconds",
             "Time from a generation request's arrival to its last byte.", &m->duration);
    put_hist(&b, "plumb_ttft_seconds",
             "Time from a generation request's arrival to its first "
             "token.",
             &m->ttft);
    pthread_mutex_unlock(&m->mu);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
