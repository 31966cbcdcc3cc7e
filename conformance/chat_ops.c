/* chat_ops.c — operation sequences over a chat session with the prefix cache's invariants as
 * the oracle (see chat_ops.h). Not a test runner: test_chat_cache.c and fuzz_chat.c drive it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_ops.h"
#include "core/core.h"
#include "tokenizer/utf8.h"

#define MAX_MSGS 48
#define MAX_USER 40 /* bytes of one user message from the input */
#define MAX_RAW  24 /* bytes a raw pl_chat adds */
/* Bytes of an overflowing message per token of the window: more tokens than it holds */
#define OVERFLOW_PER_SLOT 6

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static unsigned u8(rd *r)
{
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

typedef struct msg {
    char role[12];
    char *text;
    size_t len;
} msg;

typedef struct ctx {
    const chat_ops_model *cm;
    pl_session_params sp;
    pl_session *s, *oracle;
    chat_ops_relay relay; /* cm->hook: the forward of s */
    pl_forward_hook hook;
    int64_t V;
    float *l1, *l2;
    msg msgs[MAX_MSGS];
    size_t n_msgs;
    int op; /* index of the operation running, for messages */
    char *why;
    size_t why_cap;
    int failed;
    /* the turn being delivered */
    char *out;
    size_t out_len, out_cap;
    int calls, cancel_at;
    const char *const *stops;
    size_t n_stops;
} ctx;

static int last_count;

/* ---- the relay hook ---- */

static pl_status relay_eval(void *user, const int32_t *ids, int64_t n, int64_t pos0, float *logits,
                            int64_t out0, pl_error *err)
{
    chat_ops_relay *r = user;
    r->n_eval++;
    if (r->fail_eval && r->n_eval == r->fail_eval)
        return pl_fail(err, r->fail_status ? r->fail_status : PL_ERR_IO, "%s",
                       r->fail_msg ? r->fail_msg : "the relay's planted eval failure");
    if (!(r->faults & CHAT_RELAY_NO_POS_CHECK) && pos0 != pl_session_n_past(r->inner))
        return pl_fail(err, PL_ERR_INVALID_ARG, "relay: asked for position %lld, holds %lld",
                       (long long)pos0, (long long)pl_session_n_past(r->inner));
    if (!logits || out0 >= n) return pl_session_eval(r->inner, ids, n, NULL, 0, err);
    if (out0 == n - 1) return pl_session_eval(r->inner, ids, n, logits, 0, err);
    const int64_t V = r->V;
    if (out0 == 0) return pl_session_eval(r->inner, ids, n, logits, PL_EVAL_ALL_LOGITS, err);
    if (n * V > r->rows_cap) {
        float *p = realloc(r->rows, (size_t)(n * V) * sizeof *p);
        if (!p) return pl_fail(err, PL_ERR_NOMEM, "relay: no memory for %lld rows", (long long)n);
        r->rows = p;
        r->rows_cap = n * V;
    }
    pl_status st = pl_session_eval(r->inner, ids, n, r->rows, PL_EVAL_ALL_LOGITS, err);
    if (!st) memcpy(logits, r->rows + out0 * V, (size_t)((n - out0) * V) * sizeof *logits);
    return st;
}

static pl_status relay_truncate(void *user, int64_t n, pl_error *err)
{
    chat_ops_relay *r = user;
    r->n_truncate++;
    if (r->fail_truncate && r->n_truncate == r->fail_truncate)
        return pl_fail(err, r->fail_status ? r->fail_status : PL_ERR_IO, "%s",
                       r->fail_msg ? r->fail_msg : "the relay's planted truncate failure");
    if (r->faults & CHAT_RELAY_NO_TRUNCATE) return PL_OK;
    return pl_session_truncate(r->inner, n, err);
}

pl_status chat_ops_relay_init(chat_ops_relay *r, pl_forward_hook *hook, const pl_model *m,
                              const pl_session_params *sp, pl_error *err)
{
    memset(r, 0, sizeof *r);
    pl_session_params ip = *sp;
    ip.forward = NULL;
    r->V = pl_vocab_n_tokens(m);
    *hook = (pl_forward_hook){
        .eval = relay_eval, .truncate = relay_truncate, .user = r, .name = "relay"};
    return pl_session_new(&r->inner, m, &ip, err);
}

void chat_ops_relay_free(chat_ops_relay *r)
{
    pl_session_free(r->inner);
    free(r->rows);
    memset(r, 0, sizeof *r);
}

int chat_ops_last_count(void)
{
    return last_count;
}

static int fail(ctx *c, const char *fmt, ...)
{
    if (c->failed) return 1;
    c->failed = 1;
    int n =
        snprintf(c->why, c->why_cap,
                 "operation %d (context %lld, window %lld, sinks %lld, chunk %lld, kv %s): ", c->op,
                 (long long)c->sp.context_window, (long long)c->sp.sliding_window,
                 (long long)c->sp.attention_sinks, (long long)c->sp.prefill_chunk,
                 c->sp.kv_type == PL_TYPE_F32 ? "f32" : "f16");
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < c->why_cap) vsnprintf(c->why + n, c->why_cap - (size_t)n, fmt, ap);
    va_end(ap);
    return 1;
}

/* ---- allocation failure (the library's hook) ---- */

typedef struct alloc_fail {
    uint64_t count, at;
    int persistent;
} alloc_fail;

static uint64_t alloc_failures; /* in the last chat_ops_run */

static int alloc_hook(void *user)
{
    alloc_fail *a = user;
    a->count++;
    int f = a->count == a->at || (a->persistent && a->count > a->at);
    alloc_failures += (uint64_t)f;
    return f;
}

uint64_t chat_ops_alloc_failures(void)
{
    return alloc_failures;
}

/* ---- snapshots of the history ---- */

typedef struct snap {
    int32_t *ids;
    int64_t n;
    char *text;
    size_t len;
} snap;

static snap take(const pl_session *s)
{
    snap t = {0};
    const int32_t *ids;
    const char *text;
    pl_session_history(s, &ids, &t.n, &text, &t.len, NULL);
    t.ids = malloc((size_t)(t.n + 1) * sizeof *t.ids);
    t.text = malloc(t.len + 1);
    if (t.n) memcpy(t.ids, ids, (size_t)t.n * sizeof *ids);
    if (t.len) memcpy(t.text, text, t.len);
    return t;
}

static void drop(snap *t)
{
    free(t->ids);
    free(t->text);
}

static int same(const snap *a, const snap *b)
{
    return a->n == b->n && a->len == b->len &&
           (a->n == 0 || memcmp(a->ids, b->ids, (size_t)a->n * sizeof *a->ids) == 0) &&
           (a->len == 0 || memcmp(a->text, b->text, a->len) == 0);
}

/* ---- the invariants ---- */

/* 1 when one more token fits (always with a sliding window). */
static int has_room(const ctx *c)
{
    return c->sp.sliding_window > 0 || pl_session_n_past(c->s) < c->sp.context_window;
}

/* (1) text of ids, KV length; (2) next-token logits equal a fresh evaluation's, bit for bit. */
static int check_state(ctx *c, const char *after)
{
    snap h = take(c->s);
    int rc = 0;
    if (h.n != pl_session_n_past(c->s)) {
        rc = fail(c, "after %s: history holds %lld ids but the KV cache %lld", after,
                  (long long)h.n, (long long)pl_session_n_past(c->s));
        goto out;
    }
    size_t need = 0;
    char *dt = malloc(h.len + 64);
    pl_error e = {0};
    pl_status st =
        pl_detokenize(c->cm->m, h.ids, (size_t)h.n, PL_DETOK_SPECIAL | PL_DETOK_STRIP_PREFIX, dt,
                      h.len + 64, &need, &e);
    if (st || need != h.len || (need && memcmp(dt, h.text, need) != 0))
        rc = fail(
            c, "after %s: history text (%zu bytes) is not the text of its %lld ids (%zu bytes, %s)",
            after, h.len, (long long)h.n, need, st ? e.msg : "bytes differ");
    free(dt);
    for (int64_t i = 1; !rc && i < h.n; i++)
        if (pl_session_text_end(c->s, i) < pl_session_text_end(c->s, i - 1))
            rc = fail(c, "after %s: text_end decreases at %lld", after, (long long)i);
    if (!rc && h.n > 0 && pl_session_text_end(c->s, h.n - 1) != h.len)
        rc = fail(c, "after %s: text_end of the last id != text length", after);
    if (rc || h.n == 0) goto out;
    /* The cache's next-token state, probed by evaluating one more token and dropping it (in a
     * full context window: the last one again): the logits must be a fresh session's after
     * the same ids. */
    int32_t probe = h.ids[h.n - 1];
    int64_t keep = has_room(c) ? h.n : h.n - 1;
    if ((keep < h.n && (st = pl_session_truncate(c->s, keep, &e))) ||
        (st = pl_session_eval(c->s, &probe, 1, c->l1, 0, &e)) ||
        (keep == h.n && (st = pl_session_truncate(c->s, h.n, &e)))) {
        rc = fail(c, "after %s: probing the next token failed: %s", after, e.msg);
        goto out;
    }
    pl_session_reset(c->oracle);
    h.ids[keep] = probe;
    if ((st = pl_session_eval(c->oracle, h.ids, keep + 1, c->l2, 0, &e))) {
        rc = fail(c, "after %s: the fresh session could not evaluate %lld ids: %s", after,
                  (long long)h.n, e.msg);
        goto out;
    }
    if (memcmp(c->l1, c->l2, (size_t)c->V * sizeof *c->l1) != 0) {
        int64_t i = 0;
        while (c->l1[i] == c->l2[i]) i++;
        rc = fail(c,
                  "after %s: next-token logit %lld differs from a fresh session's (%.9g vs %.9g, "
                  "%lld ids)",
                  after, (long long)i, (double)c->l1[i], (double)c->l2[i], (long long)h.n);
        goto out;
    }
    snap h2 = take(c->s);
    if (!same(&h, &h2))
        rc = fail(c, "after %s: re-evaluating the last id changed the history", after);
    drop(&h2);
out:
    drop(&h);
    return rc;
}

/* ---- the conversation ---- */

static void push(ctx *c, const char *role, const char *text, size_t len)
{
    if (c->n_msgs == MAX_MSGS) return;
    msg *m = &c->msgs[c->n_msgs++];
    snprintf(m->role, sizeof m->role, "%s", role);
    m->text = malloc(len + 1);
    if (len) memcpy(m->text, text, len);
    m->text[len] = 0; /* pl_chat_message content is a C string: a NUL in the input ends it */
    m->len = strlen(m->text);
}

static void pop(ctx *c)
{
    if (c->n_msgs) free(c->msgs[--c->n_msgs].text);
}

static void clear(ctx *c)
{
    while (c->n_msgs) pop(c);
}

/* The conversation rendered with the model's template and the assistant's opening. */
static char *render(ctx *c, size_t *len)
{
    pl_chat_message m[MAX_MSGS];
    for (size_t i = 0; i < c->n_msgs; i++)
        m[i] = (pl_chat_message){c->msgs[i].role, c->msgs[i].text};
    size_t need = 0;
    pl_chat_render(c->cm->m, NULL, m, c->n_msgs, 1, NULL, 0, &need, NULL);
    char *buf = malloc(need + 1);
    if (pl_chat_render(c->cm->m, NULL, m, c->n_msgs, 1, buf, need, len, NULL)) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- delivery ---- */

static int on_text(void *user, const char *text, size_t len)
{
    ctx *c = user;
    if (len == 0) fail(c, "the callback got an empty piece");
    /* A valid character split between the previous piece and this one? */
    if (c->calls > 0 && c->out_len > 0) {
        unsigned char j[8];
        size_t back = c->out_len < 3 ? c->out_len : 3;
        for (size_t t = 1; t <= back; t++) {
            size_t k = len < 3 ? len : 3;
            memcpy(j, c->out + c->out_len - t, t);
            memcpy(j + t, text, k);
            size_t ch = pl_utf8_char(j, t + k);
            if (ch > t) {
                fail(c,
                     "a UTF-8 character was split between two pieces (%zu bytes before, then %zu: "
                     "%02x %02x %02x | %02x %02x %02x)",
                     c->out_len, len, c->out_len > 2 ? (unsigned char)c->out[c->out_len - 3] : 0,
                     c->out_len > 1 ? (unsigned char)c->out[c->out_len - 2] : 0,
                     (unsigned char)c->out[c->out_len - 1], (unsigned char)text[0],
                     len > 1 ? (unsigned char)text[1] : 0, len > 2 ? (unsigned char)text[2] : 0);
                break;
            }
        }
    }
    if (c->out_len + len > c->out_cap) {
        c->out_cap = 2 * (c->out_len + len) + 64;
        c->out = realloc(c->out, c->out_cap);
    }
    memcpy(c->out + c->out_len, text, len);
    c->out_len += len;
    c->calls++;
    return c->cancel_at > 0 && c->calls >= c->cancel_at;
}

/* The path the rules predict for text against the history h (partial is only a candidate:
 * with a sliding window the cache may not be truncatable there, which makes it slow). */
static pl_chat_path predict(ctx *c, const snap *h, const char *text, size_t len, int64_t *lcp_out)
{
    *lcp_out = 0;
    if (h->n > 0 && len >= h->len && memcmp(text, h->text, h->len) == 0) return PL_CHAT_FAST;
    size_t need = 0;
    pl_tokenize(c->cm->m, text, len, PL_TOKENIZE_PARSE_SPECIAL, NULL, 0, &need, NULL);
    int32_t *ids = malloc((need + 1) * sizeof *ids);
    pl_tokenize(c->cm->m, text, len, PL_TOKENIZE_PARSE_SPECIAL, ids, need, &need, NULL);
    int64_t lcp = 0;
    while (lcp < (int64_t)need && lcp < h->n && ids[lcp] == h->ids[lcp]) lcp++;
    if (lcp == (int64_t)need && lcp > 0) lcp--;
    free(ids);
    *lcp_out = lcp;
    return lcp > 0 ? PL_CHAT_PARTIAL : PL_CHAT_SLOW;
}

/* History text == conversation + delivered text; or, where a full context window had no
 * room for the re-tokenized remainder of a cut token, a prefix of it that ends at most that
 * remainder short (plumb.h, pl_generate). */
static int conv_plus_delivered(const ctx *c, const snap *after, const char *t, size_t len)
{
    size_t want = len + c->out_len;
    if (after->len > want || after->len < len || memcmp(after->text, t, len) != 0 ||
        memcmp(after->text + len, c->out, after->len - len) != 0)
        return 0;
    if (after->len == want) return 1;
    size_t short_by = want - after->len;
    return c->sp.context_window > 0 && short_by <= 64 &&
           c->sp.context_window - after->n < (int64_t)short_by + 2;
}

typedef struct turn_args {
    const char *text; /* raw pl_chat text, or NULL: the conversation through pl_chat_messages */
    size_t len;
    int cancel_at;
    alloc_fail *af; /* fail an allocation during the call */
} turn_args;

static int stop_in(const char *const *stops, size_t n_stops, const char *t, size_t len)
{
    for (size_t i = 0; i < n_stops; i++) {
        size_t k = strlen(stops[i]);
        for (size_t at = 0; at + k <= len; at++)
            if (memcmp(t + at, stops[i], k) == 0) return 1;
    }
    return 0;
}

/* One turn with parameters from the input; checks the path, the delivered text and, on
 * overflow, that nothing changed. Returns 1 if the turn succeeded. */
static int turn(ctx *c, rd *r, const turn_args *a)
{
    pl_gen_params gp = pl_gen_default_params();
    unsigned b = u8(r);
    gp.max_tokens = b % 12;
    gp.ignore_eog = (b >> 4) & 1;
    char stop_buf[3][4];
    const char *stops[3];
    gp.n_stops = u8(r) % 3;
    for (size_t i = 0; i < gp.n_stops; i++) {
        size_t k = 1 + u8(r) % 3;
        for (size_t j = 0; j < k; j++) {
            unsigned ch = u8(r);
            stop_buf[i][j] = (char)(ch ? ch : 'e');
        }
        stop_buf[i][k] = 0;
        stops[i] = stop_buf[i];
    }
    gp.stops = stops;
    unsigned mode = u8(r) % 3;
    pl_sampler *smp = NULL;
    if (mode) {
        pl_sampler_params sp = pl_sampler_default_params();
        sp.seed = u8(r);
        if (mode == 2) { /* nearly uniform: end-of-generation tokens come up */
            sp.temperature = 50.0f;
            sp.top_k = 0;
            sp.top_p = 1.0f;
            sp.min_p = 0.0f;
        }
        if (pl_sampler_new(&smp, c->cm->m, &sp, NULL)) return fail(c, "pl_sampler_new failed"), 0;
    }
    size_t len = a->len;
    char *text = a->text ? NULL : render(c, &len);
    const char *t = a->text ? a->text : text;
    if (!t) {
        pl_sampler_free(smp);
        return fail(c, "the conversation does not render"), 0;
    }
    /* The rules apply to the vocabulary's normal form of the text (pl_chat's own view). */
    size_t nlen = 0;
    pl_normalize(c->cm->m, t, len, PL_TOKENIZE_PARSE_SPECIAL, NULL, 0, &nlen, NULL);
    char *nt = malloc(nlen + 1);
    if (!nt || pl_normalize(c->cm->m, t, len, PL_TOKENIZE_PARSE_SPECIAL, nt, nlen, &nlen, NULL)) {
        free(nt);
        free(text);
        pl_sampler_free(smp);
        return fail(c, "the conversation does not normalize"), 0;
    }
    snap before = take(c->s);
    int64_t lcp;
    pl_chat_path want = predict(c, &before, nt, nlen, &lcp);
    c->out_len = 0;
    c->calls = 0;
    c->cancel_at = a->cancel_at;
    pl_chat_stats st;
    pl_error e = {0};
    if (a->af) pl_alloc_set_hook(alloc_hook, a->af);
    pl_status s;
    if (a->text) {
        s = pl_chat(c->s, t, len, smp, &gp, on_text, c, &st, &e);
    } else {
        pl_chat_message m[MAX_MSGS];
        for (size_t i = 0; i < c->n_msgs; i++)
            m[i] = (pl_chat_message){c->msgs[i].role, c->msgs[i].text};
        s = pl_chat_messages(c->s, NULL, m, c->n_msgs, smp, &gp, on_text, c, &st, &e);
    }
    if (a->af) pl_alloc_set_hook(NULL, NULL);
    pl_sampler_free(smp);
    int ok = 0;
    snap after = take(c->s);
    if (s == PL_ERR_CONTEXT_FULL) {
        if (c->sp.context_window == 0)
            fail(c, "PL_ERR_CONTEXT_FULL in a sliding-window session");
        else if (!same(&before, &after))
            fail(c, "PL_ERR_CONTEXT_FULL changed the session");
        else if (c->out_len)
            fail(c, "PL_ERR_CONTEXT_FULL after delivering text");
    } else if (s == PL_ERR_NOMEM && a->af) {
        /* consistency is checked by check_state */
    } else if (s) {
        fail(c, "pl_chat: %s: %s", pl_status_str(s), e.msg);
    } else {
        ok = 1;
        /* With a sliding window a partial path may be impossible (evicted), and so may a fast
         * one that adds nothing (the last token cannot be evaluated again). */
        int sliding = c->sp.sliding_window > 0;
        if (st.path != want && !(sliding && want == PL_CHAT_PARTIAL && st.path == PL_CHAT_SLOW) &&
            !(sliding && want == PL_CHAT_FAST && nlen == before.len))
            fail(c, "path %s, the rules say %s (history %lld ids, %zu bytes; text %zu bytes)",
                 pl_chat_path_str(st.path), pl_chat_path_str(want), (long long)before.n, before.len,
                 len);
        else if (st.path == PL_CHAT_FAST && st.n_reused != before.n && st.n_reused != before.n - 1)
            fail(c, "fast path reused %lld of %lld ids", (long long)st.n_reused,
                 (long long)before.n);
        else if (st.path == PL_CHAT_PARTIAL && st.n_reused != lcp)
            fail(c, "partial path reused %lld ids, the common prefix is %lld",
                 (long long)st.n_reused, (long long)lcp);
        else if (st.path == PL_CHAT_SLOW && st.n_reused != 0)
            fail(c, "slow path reused %lld ids", (long long)st.n_reused);
        else if (st.n_prefilled < 1)
            fail(c, "nothing was evaluated (prefilled %lld)", (long long)st.n_prefilled);
        else if (st.gen.n_text != c->out_len)
            fail(c, "stats say %zu bytes delivered, the callback got %zu", st.gen.n_text,
                 c->out_len);
        else if (stop_in(stops, gp.n_stops, c->out, c->out_len))
            fail(c, "a stop string was delivered");
        else if (gp.max_tokens == 0 && c->out_len)
            fail(c, "max_tokens 0 delivered text");
        else if (c->cm->byte_level && !conv_plus_delivered(c, &after, nt, nlen))
            fail(c, "history text (%zu bytes) != conversation (%zu) + delivered (%zu) [stop %s]",
                 after.len, len, c->out_len, pl_stop_reason_str(st.gen.stop));
        else if (st.gen.stop == PL_STOP_CANCELLED && a->cancel_at == 0)
            fail(c, "cancelled without a cancel");
    }
    drop(&before);
    drop(&after);
    free(text);
    free(nt);
    return ok;
}

/* ---- operations ---- */

enum {
    OP_TURN,
    OP_EDIT,
    OP_TRUNCATE,
    OP_RESET,
    OP_RAW,
    OP_OVERFLOW,
    OP_GENERATE,
    OP_NOMEM,
    OP_CANCEL,
    OP_PARAMS,
    N_OPS
};

static const char *const op_names[N_OPS] = {"turn",     "edit",          "truncate", "reset",
                                            "raw chat", "overflow",      "generate", "nomem",
                                            "cancel",   "raw parameters"};

static void user_turn(ctx *c, rd *r, int cancel_at, alloc_fail *af)
{
    size_t n = u8(r) % MAX_USER;
    char buf[MAX_USER];
    for (size_t i = 0; i < n; i++) buf[i] = (char)u8(r);
    if (c->n_msgs + 2 > MAX_MSGS) clear(c);
    push(c, "user", buf, n);
    turn_args a = {.cancel_at = cancel_at, .af = af};
    if (turn(c, r, &a))
        push(c, "assistant", c->out, c->out_len);
    else
        pop(c);
}

static void op_truncate(ctx *c, rd *r)
{
    snap before = take(c->s);
    int64_t n = before.n ? (int64_t)(u8(r) | u8(r) << 8) % (before.n + 1) : 0;
    pl_error e = {0};
    pl_status s = pl_session_truncate(c->s, n, &e);
    if (getenv("PLUMB_CHAT_TRACE"))
        fprintf(stderr, "  truncate %lld -> %lld: %s\n", (long long)before.n, (long long)n,
                pl_status_str(s));
    snap after = take(c->s);
    if (s) {
        if (s != PL_ERR_INVALID_ARG || c->sp.sliding_window == 0)
            fail(c, "truncate to %lld of %lld: %s: %s", (long long)n, (long long)before.n,
                 pl_status_str(s), e.msg);
        else if (!same(&before, &after))
            fail(c, "a refused truncation changed the session");
    } else if (after.n != n || memcmp(after.ids, before.ids, (size_t)n * sizeof *after.ids) ||
               after.len > before.len || memcmp(after.text, before.text, after.len)) {
        fail(c, "truncate to %lld did not keep the first %lld ids and their text", (long long)n,
             (long long)n);
    }
    drop(&before);
    drop(&after);
}

static void op_raw(ctx *c, rd *r)
{
    snap h = take(c->s);
    size_t keep = u8(r) & 1 ? h.len : 0, n = u8(r) % MAX_RAW;
    char *t = malloc(keep + n + 1);
    memcpy(t, h.text, keep);
    for (size_t i = 0; i < n; i++) t[keep + i] = (char)u8(r);
    turn_args a = {.text = t, .len = keep + n};
    if (keep + n > 0) turn(c, r, &a);
    free(t);
    drop(&h);
}

static void op_overflow(ctx *c, rd *r)
{
    int64_t slots = c->sp.context_window ? c->sp.context_window : c->sp.sliding_window;
    size_t n = (size_t)slots * OVERFLOW_PER_SLOT;
    char *buf = malloc(n);
    unsigned seed = u8(r);
    for (size_t i = 0; i < n; i++) buf[i] = (char)('a' + (i * 7 + seed) % 26);
    if (c->n_msgs + 2 > MAX_MSGS) clear(c);
    push(c, "user", buf, n);
    free(buf);
    snap before = take(c->s);
    turn_args a = {0};
    int ok = turn(c, r, &a);
    if (ok && c->sp.context_window > 0)
        fail(c, "an overflowing turn fit a %lld-token context", (long long)c->sp.context_window);
    if (ok)
        push(c, "assistant", c->out, c->out_len);
    else
        pop(c);
    drop(&before);
}

/* pl_generate(ids, n) with smp and gp on the session under test, and its oracle. want: the
 * status pl_gen_params' contract demands (PL_OK for valid parameters; continuing an empty
 * session is PL_ERR_INVALID_ARG too); any_refusal: some error must come back (an id outside the
 * vocabulary). A refusal and PL_ERR_CONTEXT_FULL leave the session as it was; a success leaves a
 * history that ends with the delivered text. */
static void generate_checked(ctx *c, const int32_t *ids, int64_t n, pl_sampler *smp,
                             const pl_gen_params *gp, pl_status want, int any_refusal)
{
    snap before = take(c->s);
    if (want == PL_OK && n == 0 && before.n == 0) want = PL_ERR_INVALID_ARG;
    c->out_len = 0;
    c->calls = 0;
    c->cancel_at = 0;
    pl_gen_stats st;
    pl_error e = {0};
    pl_status s = pl_generate(c->s, ids, n, smp, gp, on_text, c, &st, &e);
    snap after = take(c->s);
    if (want != PL_OK || any_refusal) {
        if (s == PL_OK || (want != PL_OK && s != want))
            fail(c, "pl_generate with max_tokens %lld, %zu stops, n_prompt %lld%s: %s, not %s",
                 (long long)gp->max_tokens, gp->n_stops, (long long)n,
                 any_refusal ? " (an id outside the vocabulary)" : "", pl_status_str(s),
                 pl_status_str(want));
        else if (!same(&before, &after))
            fail(c, "a refused pl_generate (%s) changed the session", pl_status_str(s));
    } else if (s == PL_ERR_CONTEXT_FULL) {
        if (!same(&before, &after))
            fail(c, "PL_ERR_CONTEXT_FULL from pl_generate changed the session");
    } else if (s) {
        fail(c, "pl_generate: %s: %s", pl_status_str(s), e.msg);
    } else if (c->cm->byte_level &&
               (after.len < before.len + c->out_len ||
                memcmp(after.text + after.len - c->out_len, c->out, c->out_len))) {
        fail(c, "pl_generate: the history does not end with the delivered text");
    }
    drop(&before);
    drop(&after);
}

static void op_generate(ctx *c, rd *r)
{
    int32_t ids[3];
    int64_t n = u8(r) % 4;
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)((u8(r) | u8(r) << 8) % c->V);
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = u8(r) % 6;
    generate_checked(c, ids, n, NULL, &gp, PL_OK, 0);
}

/* pl_generate as a careless caller calls it: max_tokens negative, 0 or past INT32_MAX, up to 19
 * stops (NULL, empty or longer than PL_GEN_MAX_STOP_LEN among them), a prompt whose ids may lie
 * outside the vocabulary, n_prompt negative, and a nearly uniform sampler that draws
 * end-of-generation tokens. Oracle: pl_gen_params' contract decides, before anything runs,
 * PL_ERR_CONFIG or PL_ERR_INVALID_ARG exactly as it is broken; an id outside the vocabulary is
 * refused; a refusal leaves the session as it was; what runs delivers what the history gains. */
static void op_params(ctx *c, rd *r)
{
    static char long_stop[PL_GEN_MAX_STOP_LEN + 2];
    memset(long_stop, 'x', sizeof long_stop - 1);
    unsigned b = u8(r);
    static const int64_t maxes[] = {-1, 0, 1, 3, (int64_t)INT32_MAX + 1, INT64_MIN};
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = maxes[b % 6];
    gp.ignore_eog = 0;
    char stop_buf[PL_GEN_MAX_STOP + 3][3];
    const char *stops[PL_GEN_MAX_STOP + 3];
    gp.n_stops = (b >> 3) % 4 == 3 ? PL_GEN_MAX_STOP + 1 + u8(r) % 3 : (b >> 3) % 4;
    int bad_arg = 0, bad_config = gp.max_tokens < 0 || gp.max_tokens > INT32_MAX;
    bad_config |= gp.n_stops > PL_GEN_MAX_STOP;
    for (size_t i = 0; i < gp.n_stops; i++) {
        unsigned k = u8(r);
        stops[i] = stop_buf[i];
        stop_buf[i][0] = (char)('a' + k % 26);
        stop_buf[i][1] = 0;
        if (k >= 250)
            stops[i] = NULL;
        else if (k >= 240)
            stops[i] = "";
        else if (k >= 230)
            stops[i] = long_stop;
        /* the first broken rule in stop order decides (pl_gen_check's order) */
        if (!bad_config && !bad_arg && gp.n_stops <= PL_GEN_MAX_STOP) {
            if (!stops[i])
                bad_arg = 1;
            else if (!stops[i][0] || strlen(stops[i]) > PL_GEN_MAX_STOP_LEN)
                bad_config = 1;
        }
    }
    gp.stops = stops;
    int32_t ids[3];
    int64_t n = u8(r) % 4;
    int out_of_vocab = 0;
    for (int64_t i = 0; i < n; i++) {
        unsigned k = u8(r);
        ids[i] = k >= 250 ? (k & 1 ? -1 : (int32_t)c->V) : (int32_t)(k % c->V);
        out_of_vocab |= ids[i] < 0 || ids[i] >= c->V;
    }
    if (b & 0x80) n = -n - 1;
    pl_sampler_params spp = pl_sampler_default_params();
    spp.seed = u8(r);
    spp.temperature = 50.0f;
    spp.top_k = 0;
    spp.top_p = 1.0f;
    spp.min_p = 0.0f;
    pl_sampler *smp = NULL;
    if (pl_sampler_new(&smp, c->cm->m, &spp, NULL)) {
        fail(c, "pl_sampler_new failed");
        return;
    }
    pl_status want = n < 0        ? PL_ERR_INVALID_ARG
                     : bad_config ? PL_ERR_CONFIG
                     : bad_arg    ? PL_ERR_INVALID_ARG
                                  : PL_OK;
    generate_checked(c, ids, n, smp, &gp, want, out_of_vocab);
    pl_sampler_free(smp);
}

static void op_nomem(ctx *c, rd *r)
{
    alloc_fail af = {.at = 1 + u8(r) % 48, .persistent = u8(r) & 1};
    user_turn(c, r, 0, &af);
    if (c->failed) return;
    /* The session stays usable: a plain turn afterwards must work. */
    user_turn(c, r, 0, NULL);
}

/* Byte 0: bit 0 sliding window; bits 1-2 window size; bit 3 F32 KV; bits 4-7 the chunk. */
static int configure(ctx *c, unsigned b)
{
    const pl_model *m = c->cm->m;
    c->sp = pl_session_default_params(m);
    c->sp.n_threads = c->cm->n_threads;
    int64_t size = 48 + 24 * ((b >> 1) & 3);
    if (b & 1) {
        c->sp.context_window = 0;
        c->sp.sliding_window = size;
        c->sp.attention_sinks = (b >> 4) & 3;
    } else {
        c->sp.context_window = size;
    }
    c->sp.kv_type = b & 8 ? PL_TYPE_F32 : PL_TYPE_F16;
    c->sp.prefill_chunk = 1 + ((b >> 4) * 5) % 33;
    pl_session_params op = c->sp;
    op.n_threads = 1;
    op.prefill_chunk = 64; /* the oracle evaluates in other chunks: results may not differ */
    pl_error e = {0};
    if (c->cm->hook) {
        if (chat_ops_relay_init(&c->relay, &c->hook, m, &c->sp, &e))
            return fail(c, "relay session: %s", e.msg);
        /* the planted fault also skips the relay's own position check, as a forward that
         * trusts its cache would */
        if (c->cm->hook == 2) c->relay.faults = CHAT_RELAY_NO_TRUNCATE | CHAT_RELAY_NO_POS_CHECK;
        c->sp.forward = &c->hook;
    }
    if (pl_session_new(&c->s, m, &c->sp, &e) || pl_session_new(&c->oracle, m, &op, &e))
        return fail(c, "sessions: %s", e.msg);
    c->V = pl_vocab_n_tokens(m);
    c->l1 = malloc((size_t)c->V * sizeof *c->l1);
    c->l2 = malloc((size_t)c->V * sizeof *c->l2);
    return 0;
}

/* Both sessions continue greedily from the same ids: same text, same history. */
static void differential(ctx *c)
{
    snap h = take(c->s);
    if (h.n == 0) {
        drop(&h);
        return;
    }
    pl_session_reset(c->oracle);
    pl_error e = {0};
    if (pl_session_eval(c->oracle, h.ids, h.n, NULL, 0, &e)) {
        fail(c, "differential: %s", e.msg);
        drop(&h);
        return;
    }
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 6;
    gp.ignore_eog = 1;
    c->out_len = 0;
    c->calls = c->cancel_at = 0;
    pl_status s1 = pl_generate(c->s, NULL, 0, NULL, &gp, on_text, c, NULL, &e);
    size_t n1 = c->out_len;
    char *t1 = malloc(n1 + 1);
    memcpy(t1, c->out, n1);
    c->out_len = 0;
    c->calls = 0;
    pl_status s2 = pl_generate(c->oracle, NULL, 0, NULL, &gp, on_text, c, NULL, &e);
    snap a = take(c->s), b = take(c->oracle);
    if (s1 != s2 || n1 != c->out_len || memcmp(t1, c->out, n1) || !same(&a, &b))
        fail(c,
             "differential: the session and a fresh one that evaluated the same %lld ids "
             "generate differently (%s/%s, %zu/%zu bytes)",
             (long long)h.n, pl_status_str(s1), pl_status_str(s2), n1, c->out_len);
    free(t1);
    drop(&a);
    drop(&b);
    drop(&h);
}

int chat_ops_run(const chat_ops_model *cm, const uint8_t *data, size_t size, char *why,
                 size_t why_cap)
{
    ctx c = {.cm = cm, .why = why, .why_cap = why_cap, .op = -1};
    c.out_cap = 256; /* never NULL: memcmp/memcpy of 0 bytes still need a valid pointer */
    c.out = malloc(c.out_cap);
    if (why_cap) why[0] = 0;
    rd r = {data, size};
    last_count = 0;
    alloc_failures = 0;
    if (configure(&c, u8(&r)) == 0 && check_state(&c, "creation") == 0) {
        for (c.op = 0; r.n > 0 && !c.failed && c.op < 256; c.op++) {
            unsigned op = u8(&r) % N_OPS;
            switch (op) {
            case OP_TURN:
                user_turn(&c, &r, 0, NULL);
                break;
            case OP_CANCEL:
                user_turn(&c, &r, 1 + (int)(u8(&r) % 3), NULL);
                break;
            case OP_NOMEM:
                op_nomem(&c, &r);
                break;
            case OP_EDIT:
                if (c.n_msgs) {
                    msg *m = &c.msgs[u8(&r) % c.n_msgs];
                    if (m->len) {
                        size_t at = u8(&r) % m->len;
                        char x = (char)(m->text[at] ^ (char)(u8(&r) | 1));
                        m->text[at] = x ? x : '0';
                    }
                }
                break;
            case OP_TRUNCATE:
                op_truncate(&c, &r);
                break;
            case OP_RESET:
                pl_chat_reset(c.s);
                if (pl_session_n_past(c.s) != 0) fail(&c, "reset left tokens");
                if (u8(&r) & 1) clear(&c);
                break;
            case OP_RAW:
                op_raw(&c, &r);
                break;
            case OP_OVERFLOW:
                op_overflow(&c, &r);
                break;
            case OP_GENERATE:
                op_generate(&c, &r);
                break;
            case OP_PARAMS:
                op_params(&c, &r);
                break;
            }
            if (getenv("PLUMB_CHAT_TRACE"))
                fprintf(stderr, "op %d %s -> n_past %lld%s\n", c.op, op_names[op],
                        (long long)pl_session_n_past(c.s), c.failed ? " FAILED" : "");
            if (!c.failed) check_state(&c, op_names[op]);
            last_count = c.op + 1;
        }
        if (!c.failed) differential(&c);
    }
    clear(&c);
    pl_session_free(c.s);
    pl_session_free(c.oracle);
    chat_ops_relay_free(&c.relay);
    free(c.l1);
    free(c.l2);
    free(c.out);
    return c.failed;
}

int chat_ops_random(const chat_ops_model *cm, void *rng, int64_t (*range)(void *, int64_t, int64_t),
                    uint64_t (*u64)(void *), int runs, int stop, int *run, size_t *size, char *why,
                    size_t why_cap)
{
    int failed = 0;
    char w[512];
    for (int i = 0; i < runs; i++) {
        const size_t n = (size_t)range(rng, 64, 700);
        uint8_t *b = malloc(n);
        if (!b) return failed + 1;
        for (size_t k = 0; k < n; k++) b[k] = (uint8_t)u64(rng);
        const int bad = chat_ops_run(cm, b, n, w, sizeof w);
        free(b);
        if (!bad) continue;
        if (!failed++) {
            *run = i;
            *size = n;
            snprintf(why, why_cap, "%s", w);
        }
        if (stop) break;
    }
    return failed;
}
