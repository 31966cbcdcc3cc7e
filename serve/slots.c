/* slots.c — the server's slots: N sessions over one model, the choice of a slot for a prompt
 * (longest cached prefix, then least recently used) and the bounded first-come wait queue.
 * Not the generation itself (server.c runs pl_chat on the slot it gets). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

size_t sv_common_prefix(const char *s, size_t ns, const char *t, size_t nt)
{
    size_t n = ns < nt ? ns : nt, i = 0;
    while (i < n && s[i] == t[i]) i++;
    return i;
}

int sv_pick_slot(const sv_slot_view *slots, int n, const char *prompt, size_t len, size_t *lcp)
{
    /* A slot whose whole text starts the prompt (the fast path), the longest; else the least
     * recently used. A longest common prefix alone would send every conversation to one slot:
     * they all share the template's opening (and often a system prompt). */
    int best = -1, lru = -1;
    for (int i = 0; i < n; i++) {
        if (slots[i].busy) continue;
        if (lru < 0 || slots[i].last_used < slots[lru].last_used) lru = i;
        if (slots[i].len == 0 || slots[i].len > len ||
            sv_common_prefix(slots[i].text, slots[i].len, prompt, len) != slots[i].len)
            continue;
        if (best < 0 || slots[i].len > slots[best].len ||
            (slots[i].len == slots[best].len && slots[i].last_used < slots[best].last_used))
            best = i;
    }
    if (lcp) *lcp = best >= 0 ? slots[best].len : 0;
    return best >= 0 ? best : lru;
}

typedef struct slot {
    pl_session *s;
    int busy;
    int cancel; /* atomic: set by sv_slots_stop, read by the generation */
    uint64_t last_used;
    int64_t last_used_unix; /* for /slots */
} slot;

/* One waiting request; the queue is a list in arrival order. */
typedef struct waiter {
    struct waiter *next;
} waiter;

struct sv_slots {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot *slots;
    int n;
    int queue_max;
    int n_waiting;
    waiter *head, *tail;
    uint64_t clock;
    int stopping;
    const pl_model *m;
};

void sv_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

int sv_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(cv, mu, &ts);
}

pl_status sv_slots_new(sv_slots **out, const pl_model *m, const pl_session_params *sp, int n,
                       int queue_max, pl_error *err)
{
    *out = NULL;
    if (n < 1 || n > SV_MAX_SLOTS || queue_max < 0) {
        if (err) {
            err->code = PL_ERR_INVALID_ARG;
            snprintf(err->msg, sizeof err->msg,
                     "slots %d, queue %d: need 1 <= slots <= %d, queue >= 0", n, queue_max,
                     SV_MAX_SLOTS);
        }
        return PL_ERR_INVALID_ARG;
    }
    sv_slots *s = calloc(1, sizeof *s);
    if (s) s->slots = calloc((size_t)n, sizeof *s->slots);
    if (!s || !s->slots) {
        free(s);
        if (err) {
            err->code = PL_ERR_NOMEM;
            snprintf(err->msg, sizeof err->msg, "no memory for %d slots", n);
        }
        return PL_ERR_NOMEM;
    }
    pthread_mutex_init(&s->mu, NULL);
    sv_cond_init(&s->cv);
    s->n = n;
    s->queue_max = queue_max;
    s->m = m;
    for (int i = 0; i < n; i++) {
        pl_status st = pl_session_new(&s->slots[i].s, m, sp, err);
        if (st) {
            sv_slots_free(s);
            return st;
        }
    }
    *out = s;
    return PL_OK;
}

void sv_slots_free(sv_slots *s)
{
    if (!s) return;
    for (int i = 0; i < s->n; i++) pl_session_free(s->slots[i].s);
    free(s->slots);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Under the lock: the free slot for the prompt (sv_pick_slot), or -1. */
static int pick_locked(sv_slots *s, const char *prompt, size_t len)
{
    sv_slot_view v[SV_MAX_SLOTS];
    int n = s->n;
    for (int i = 0; i < n; i++) {
        slot *sl = &s->slots[i];
        v[i] = (sv_slot_view){.busy = sl->busy, .last_used = sl->last_used};
        const int32_t *ids;
        int64_t n_ids;
        if (!sl->busy &&
            pl_session_history(sl->s, &ids, &n_ids, &v[i].text, &v[i].len, NULL) != PL_OK) {
            v[i].text = NULL;
            v[i].len = 0;
        }
    }
    return sv_pick_slot(v, n, prompt, len, NULL);
}

static void take(sv_slots *s, int i)
{
    s->slots[i].busy = 1;
    __atomic_store_n(&s->slots[i].cancel, 0, __ATOMIC_RELAXED);
    s->slots[i].last_used = ++s->clock;
    s->slots[i].last_used_unix = (int64_t)time(NULL);
}

static void unlink_waiter(sv_slots *s, waiter *w)
{
    waiter **p = &s->head, *prev = NULL;
    while (*p && *p != w) {
        prev = *p;
        p = &(*p)->next;
    }
    if (!*p) return;
    *p = w->next;
    if (s->tail == w) s->tail = prev;
    s->n_waiting--;
}

int sv_slots_acquire(sv_slots *s, const char *prompt, size_t len, sv_gone_fn gone, void *user,
                     int *slot_out)
{
    *slot_out = -1;
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        return SV_ACQ_STOPPING;
    }
    int i = s->head ? -1 : pick_locked(s, prompt, len);
    if (i >= 0) {
        take(s, i);
        pthread_mutex_unlock(&s->mu);
        *slot_out = i;
        return SV_ACQ_OK;
    }
    if (s->n_waiting >= s->queue_max) {
        pthread_mutex_unlock(&s->mu);
        return SV_ACQ_FULL;
    }
    waiter w = {0};
    if (s->tail)
        s->tail->next = &w;
    else
        s->head = &w;
    s->tail = &w;
    s->n_waiting++;
    int rc = SV_ACQ_OK;
    for (;;) {
        if (s->stopping) {
            rc = SV_ACQ_STOPPING;
            break;
        }
        if (s->head == &w && (i = pick_locked(s, prompt, len)) >= 0) break;
        int e = sv_cond_wait_ms(&s->cv, &s->mu, 100);
        if (e == ETIMEDOUT && gone) {
            pthread_mutex_unlock(&s->mu);
            int g = gone(user);
            pthread_mutex_lock(&s->mu);
            if (g) {
                rc = SV_ACQ_GONE;
                break;
            }
        }
    }
    unlink_waiter(s, &w);
    if (rc == SV_ACQ_OK) {
        take(s, i);
        *slot_out = i;
    }
    /* The next in line may find a slot too (or is now at the head). */
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

pl_session *sv_slots_session(sv_slots *s, int i)
{
    return i >= 0 && i < s->n ? s->slots[i].s : NULL;
}

int sv_slots_cancelled(sv_slots *s, int i)
{
    return __atomic_load_n(&s->slots[i].cancel, __ATOMIC_RELAXED);
}

void sv_slots_release(sv_slots *s, int i)
{
    pthread_mutex_lock(&s->mu);
    s->slots[i].busy = 0;
    s->slots[i].last_used_unix = (int64_t)time(NULL);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void sv_slots_stop(sv_slots *s)
{
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    for (int i = 0; i < s->n; i++)
        if (s->slots[i].busy) __atomic_store_n(&s->slots[i].cancel, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

int sv_slots_total(const sv_slots *s)
{
    return s->n;
}

void sv_slots_counts(sv_slots *s, int *busy, int *queued)
{
    pthread_mutex_lock(&s->mu);
    int b = 0;
    for (int i = 0; i < s->n; i++) b += s->slots[i].busy;
    if (busy) *busy = b;
    if (queued) *queued = s->n_waiting;
    pthread_mutex_unlock(&s->mu);
}

/* Under the lock, on an idle slot: history text == pl_detokenize(ids, SPECIAL |
 * STRIP_PREFIX), and the KV cache holds exactly those ids (n_past == n). */
static int consistent_locked(const sv_slots *s, const slot *sl)
{
    const int32_t *ids;
    int64_t n;
    const char *text;
    size_t len, got = 0;
    if (pl_session_history(sl->s, &ids, &n, &text, &len, NULL)) return 0;
    if (pl_session_n_past(sl->s) != n) return 0;
    char *buf = malloc(len + 1);
    if (!buf) return 0;
    pl_status st = pl_detokenize(s->m, ids, (size_t)n, PL_DETOK_SPECIAL | PL_DETOK_STRIP_PREFIX,
                                 buf, len + 1, &got, NULL);
    int ok = st == PL_OK && got == len && memcmp(buf, text, len) == 0;
    free(buf);
    return ok;
}

int sv_slots_consistent(sv_slots *s, int i)
{
    pthread_mutex_lock(&s->mu);
    int r = s->slots[i].busy ? -1 : consistent_locked(s, &s->slots[i]);
    pthread_mutex_unlock(&s->mu);
    return r;
}

char *sv_slots_json(sv_slots *s)
{
    json_t *a = json_array();
    if (!a) return NULL;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n; i++) {
        slot *sl = &s->slots[i];
        const int32_t *ids;
        int64_t n = 0;
        const char *text;
        size_t len = 0;
        json_t *o;
        if (sl->busy) {
            o = json_pack("{s:i,s:b,s:n,s:n,s:I,s:n}", "id", i, "busy", 1, "n_past", "text_bytes",
                          "last_used", (json_int_t)sl->last_used_unix, "consistent");
        } else {
            pl_session_history(sl->s, &ids, &n, &text, &len, NULL);
            o = json_pack("{s:i,s:b,s:I,s:I,s:I,s:b}", "id", i, "busy", 0, "n_past",
                          (json_int_t)pl_session_n_past(sl->s), "text_bytes", (json_int_t)len,
                          "last_used", (json_int_t)sl->last_used_unix, "consistent",
                          consistent_locked(s, sl));
        }
        if (!o || json_array_append_new(a, o)) {
            pthread_mutex_unlock(&s->mu);
            json_decref(a);
            return NULL;
        }
    }
    pthread_mutex_unlock(&s->mu);
    char *j = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return j;
}
