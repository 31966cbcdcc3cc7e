/* generate.c — pl_generate: prefill, then draw, evaluate and stream tokens until a stop, with
 * stop strings held back until decided. Not the chat paths (chat.c) and not the sampler math. */
#include <math.h>
#include <string.h>

#include "session.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

#define DEFAULT_MAX_TOKENS 256

pl_gen_params pl_gen_default_params(void)
{
    pl_gen_params p = {.max_tokens = DEFAULT_MAX_TOKENS};
    return p;
}

const char *pl_stop_reason_str(pl_stop_reason r)
{
    switch (r) {
    case PL_STOP_EOG:
        return "eog";
    case PL_STOP_MAX_TOKENS:
        return "max_tokens";
    case PL_STOP_STRING:
        return "stop_string";
    case PL_STOP_CANCELLED:
        return "cancelled";
    case PL_STOP_CONTEXT_FULL:
        return "context_full";
    default:
        return "none";
    }
}

pl_status pl_gen_check(const pl_gen_params *p, pl_error *err)
{
    if (p->max_tokens < 0 || p->max_tokens > INT32_MAX)
        return pl_fail(err, PL_ERR_CONFIG, "max_tokens=%lld must be in [0, %d]",
                       (long long)p->max_tokens, INT32_MAX);
    if (p->n_stops > PL_GEN_MAX_STOP)
        return pl_fail(err, PL_ERR_CONFIG, "n_stops=%zu exceeds PL_GEN_MAX_STOP (%d)", p->n_stops,
                       PL_GEN_MAX_STOP);
    if (p->n_stops > 0 && !p->stops)
        return pl_fail(err, PL_ERR_INVALID_ARG, "stops is NULL but n_stops is %zu", p->n_stops);
    for (size_t i = 0; i < p->n_stops; i++) {
        if (!p->stops[i]) return pl_fail(err, PL_ERR_INVALID_ARG, "stops[%zu] is NULL", i);
        size_t n = strnlen(p->stops[i], PL_GEN_MAX_STOP_LEN + 1);
        if (n == 0 || n > PL_GEN_MAX_STOP_LEN)
            return pl_fail(err, PL_ERR_CONFIG, "stops[%zu] must be 1 to %d bytes long", i,
                           PL_GEN_MAX_STOP_LEN);
    }
    return PL_OK;
}

/* The generated text not yet delivered is g[0..n): where the earliest stop string starts in
 * it (*cut, returns 1), else (returns 0) how many bytes may go now: all but the longest tail
 * that could still begin a stop string, and never part of a character. */
static int scan_pending(const pl_gen_params *p, const char *g, size_t n, size_t *safe_or_cut)
{
    size_t best = n + 1;
    for (size_t i = 0; i < p->n_stops; i++) {
        size_t k = strlen(p->stops[i]);
        for (size_t at = 0; at + k <= n && at < best; at++)
            if (memcmp(g + at, p->stops[i], k) == 0) {
                best = at;
                break;
            }
    }
    if (best <= n) {
        *safe_or_cut = best;
        return 1;
    }
    size_t hold = 0;
    for (size_t i = 0; i < p->n_stops; i++) {
        size_t k = strlen(p->stops[i]);
        for (size_t t = (k - 1 < n ? k - 1 : n); t > hold; t--)
            if (memcmp(g + n - t, p->stops[i], t) == 0) {
                hold = t;
                break;
            }
    }
    /* Never end inside a character: not one still incomplete, nor one the held-back bytes
     * complete (its lead byte is within the last 3 bytes that go). */
    size_t go = n - hold;
    for (size_t t = 1; t <= 3 && t <= go; t++) {
        unsigned char c = (unsigned char)g[go - t];
        if ((c & 0xC0) == 0x80) continue;
        if (c >= 0xC0 && pl_utf8_incomplete((const unsigned char *)g + go - t, t)) hold += t;
        break;
    }
    *safe_or_cut = n - hold;
    return 0;
}

/* Makes the session hold exactly its history text up to byte `cut` (>= the end of token
 * `floor`): drops the tokens that cross the cut, then tokenizes and evaluates the bytes
 * between the last whole token and the cut (if a context window has room for them). */
static pl_status cut_to(pl_session *ss, int64_t floor, size_t cut, pl_error *err)
{
    const pl_history *h = pl_session_hist(ss);
    if (cut >= h->len) return PL_OK;
    int64_t k = h->n;
    while (k > floor && pl_history_end(h, k) > cut) k--;
    size_t from = pl_history_end(h, k), n = cut - from;
    char *rest = NULL;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    pl_status s = PL_OK;
    if (n > 0) {
        rest = pl_malloc(n);
        ids = pl_malloc((n + 2) * sizeof *ids); /* a token spells a byte, or the dummy space */
        if (!rest || !ids) {
            s = pl_fail(err, PL_ERR_NOMEM, "no memory to re-tokenize %zu bytes", n);
            goto done;
        }
        memcpy(rest, h->text + from, n);
        s = pl_tok_encode_cont(h->tok, rest, n, PL_TOKENIZE_PARSE_SPECIAL,
                               pl_history_strip_at(h, k), ids, n + 2, &n_ids, err);
        if (s) goto done;
    }
    if ((s = pl_session_truncate(ss, k, err))) goto done;
    /* The remainder may take more tokens than the one it came from: when a full context
     * window has no room for them, the history ends at the last whole token instead. */
    if (n_ids > 0 && pl_session_check_room(ss, k, (int64_t)n_ids, NULL) == PL_OK)
        s = pl_session_eval(ss, ids, (int64_t)n_ids, NULL, 0, err);
done:
    pl_free(rest);
    pl_free(ids);
    return s;
}

/* The logits after the last held token: that token evaluated again, or, when a sliding
 * window already evicted what it attends to (after a deep truncation), the whole history
 * evaluated from scratch, which gives the same logits (the window decides what is seen). */
static pl_status reeval_last(pl_session *ss, float *logits, int64_t *n_eval, pl_error *err)
{
    const pl_history *h = pl_session_hist(ss);
    int64_t n = h->n;
    if (pl_session_check_truncate(ss, n - 1, NULL) == PL_OK) {
        int32_t last = h->ids[n - 1];
        *n_eval = 1;
        pl_status s = pl_session_truncate(ss, n - 1, err);
        return s ? s : pl_session_eval(ss, &last, 1, logits, 0, err);
    }
    int32_t *ids = pl_malloc((size_t)n * sizeof *ids);
    if (!ids)
        return pl_fail(err, PL_ERR_NOMEM, "no memory to evaluate %lld ids again", (long long)n);
    memcpy(ids, h->ids, (size_t)n * sizeof *ids);
    *n_eval = n;
    pl_session_reset(ss);
    pl_status s = pl_session_eval(ss, ids, n, logits, 0, err);
    pl_free(ids);
    return s;
}

typedef struct gen {
    pl_session *ss;
    const pl_gen_params *p;
    pl_text_fn on_text;
    void *user;
    size_t start;     /* history byte where the generated text begins */
    size_t delivered; /* generated bytes given to the callback */
    int64_t floor;    /* tokens held before the first drawn one */
} gen;

/* Delivers what may go of the pending text. Returns 1 when generation must stop (a stop
 * string was found: *stop set, *cut is where the text ends; or the callback cancelled). */
static int deliver(gen *g, int final, pl_stop_reason *stop, size_t *cut)
{
    const pl_history *h = pl_session_hist(g->ss);
    const char *pend = h->text + g->start + g->delivered;
    size_t n = h->len - g->start - g->delivered, go;
    int found = scan_pending(g->p, pend, n, &go);
    if (!found && final) go = n;
    int cancel = 0;
    if (go > 0) {
        if (g->on_text) cancel = g->on_text(g->user, pend, go) != 0;
        g->delivered += go;
    }
    if (found) {
        *stop = PL_STOP_STRING;
        *cut = g->start + g->delivered;
        return 1;
    }
    if (cancel) {
        *stop = PL_STOP_CANCELLED;
        *cut = g->start + g->delivered;
        return 1;
    }
    return 0;
}

pl_status pl_generate(pl_session *ss, const int32_t *prompt, int64_t n_prompt, pl_sampler *sampler,
                      const pl_gen_params *params, pl_text_fn on_text, void *user,
                      pl_gen_stats *stats, pl_error *err)
{
    double t0 = pl_clock_ms();
    if (stats) memset(stats, 0, sizeof *stats);
    if (!ss || (!prompt && n_prompt > 0) || n_prompt < 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "session is NULL, or prompt is NULL or n_prompt < 0");
    pl_gen_params p = params ? *params : pl_gen_default_params();
    pl_status s = pl_gen_check(&p, err);
    if (s) return s;
    const pl_model *m = pl_session_model(ss);
    const pl_history *h = pl_session_hist(ss);
    if (n_prompt == 0 && h->n == 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "n_prompt is 0 and the session holds nothing to continue from");
    if (p.max_tokens > 0 && !h->tok)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "the model has no tokenizer: generation needs one to deliver text");
    int64_t V = m->hp.n_vocab;
    float *logits = pl_malloc((size_t)V * sizeof *logits);
    if (!logits) return pl_fail(err, PL_ERR_NOMEM, "no memory for %lld logits", (long long)V);
    /* ignore_eog: the end-of-generation ids, whose logits become -inf before every draw. */
    const struct pl_tokenizer *tk = pl_model_tokenizer(m);
    int n_eog = p.ignore_eog && tk ? tk->n_eog : 0;

    /* The prompt; with none, the last held token again (its logits are not kept). */
    if (n_prompt > 0)
        s = pl_session_eval(ss, prompt, n_prompt, logits, 0, err);
    else
        s = reeval_last(ss, logits, &n_prompt, err);
    if (s) {
        pl_free(logits);
        return s;
    }
    double t_prefill = pl_clock_ms(), t_first = 0;
    gen g = {.ss = ss, .p = &p, .on_text = on_text, .user = user, .start = h->len, .floor = h->n};
    pl_stop_reason stop = PL_STOP_NONE;
    size_t cut = SIZE_MAX;
    int64_t n_gen = 0;
    int done = 0;
    while (!done && n_gen < p.max_tokens) {
        int32_t tok;
        for (int i = 0; i < n_eog; i++) logits[tk->eog[i]] = -INFINITY;
        if (sampler) {
            if ((s = pl_sampler_sample(sampler, logits, h->ids, h->n, &tok, err))) break;
        } else {
            int64_t best = 0; /* greedy: the first maximum */
            for (int64_t i = 1; i < V; i++)
                if (logits[i] > logits[best]) best = i;
            tok = (int32_t)best;
        }
        if (n_gen == 0) t_first = pl_clock_ms();
        /* With ignore_eog only when every logit is -inf (a tie the sampler breaks). */
        if (pl_vocab_is_eog(m, tok)) {
            stop = PL_STOP_EOG;
            break;
        }
        if (pl_session_check_room(ss, h->n, 1, NULL)) {
            stop = PL_STOP_CONTEXT_FULL;
            break;
        }
        if ((s = pl_session_eval(ss, &tok, 1, logits, 0, err))) break;
        n_gen++;
        done = deliver(&g, 0, &stop, &cut);
    }
    if (!s && !done) {
        if (stop == PL_STOP_NONE && p.max_tokens > 0) stop = PL_STOP_MAX_TOKENS;
        deliver(&g, 1, &stop, &cut);
    }
    if (!s && cut != SIZE_MAX) s = cut_to(ss, g.floor, cut, err);
    pl_free(logits);
    double t_end = pl_clock_ms();
    if (stats) {
        stats->stop = stop;
        stats->n_prompt = n_prompt;
        stats->n_generated = n_gen;
        stats->n_text = g.delivered;
        stats->prefill_ms = t_prefill - t0;
        stats->ttft_ms = t_first > 0 ? t_first - t0 : 0;
        stats->decode_ms = t_first > 0 ? t_end - t_first : 0;
        stats->decode_tps =
            n_gen > 1 && t_end > t_first ? (double)(n_gen - 1) * 1e3 / (t_end - t_first) : 0;
    }
    return s ? s : pl_ok(err);
}
