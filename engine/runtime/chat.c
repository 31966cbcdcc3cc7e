/* chat.c — the chat prefix cache: match a rendered conversation against what the session
 * holds (fast, partial or slow path), keep what matches, then generate. Not the template
 * rendering (tokenizer/template.c) and not the decode loop (generate.c). */
#include <string.h>

#include "chat_template.h"
#include "session.h"
#include "tokenizer/tokenizer.h"

const char *pl_chat_path_str(pl_chat_path p)
{
    switch (p) {
    case PL_CHAT_FAST:
        return "fast";
    case PL_CHAT_PARTIAL:
        return "partial";
    case PL_CHAT_SLOW:
        return "slow";
    default:
        return "none";
    }
}

/* ids of text (control tokens parsed, no BOS added) into a new array. */
static pl_status encode(const struct pl_tokenizer *t, const char *text, size_t len, int prefix,
                        int32_t **out, size_t *n, pl_error *err)
{
    *out = NULL;
    *n = 0;
    size_t need = 0;
    pl_status s =
        pl_tok_encode_cont(t, text, len, PL_TOKENIZE_PARSE_SPECIAL, prefix, NULL, 0, &need, err);
    if (s && s != PL_ERR_BUFFER_TOO_SMALL) return s;
    int32_t *ids = pl_malloc((need ? need : 1) * sizeof *ids);
    if (!ids) return pl_fail(err, PL_ERR_NOMEM, "no memory for %zu token ids", need);
    if ((s = pl_tok_encode_cont(t, text, len, PL_TOKENIZE_PARSE_SPECIAL, prefix, ids, need, n,
                                err))) {
        pl_free(ids);
        return s;
    }
    *out = ids;
    return PL_OK;
}

/* The turn's plan: keep the first `keep` held tokens, then evaluate ids[from..n). */
typedef struct plan {
    pl_chat_path path;
    int64_t keep;
    int32_t *ids;
    size_t from, n;
} plan;

/* Fast path: the held text is a byte prefix of text. The last held token is tokenized again
 * with the new bytes, so a token that would have merged with them (a cut word, a trailing
 * space) is replaced by the merged tokens instead of leaving a split no tokenizer makes. */
static pl_status plan_retokenize(pl_session *ss, const pl_history *h, const char *text, size_t len,
                                 plan *pl, pl_error *err);

static pl_status plan_fast(pl_session *ss, const pl_history *h, const char *text, size_t len,
                           plan *pl, pl_error *err)
{
    int64_t last = h->n - 1;
    if (pl_session_check_truncate(ss, last, NULL) != PL_OK) {
        /* A sliding window after a deep truncation: the last token cannot be evaluated
         * again, so the new bytes are tokenized alone after it. */
        if (len == h->len) return plan_retokenize(ss, h, text, len, pl, err);
        pl_status s = encode(h->tok, text + h->len, len - h->len, pl_history_strip_at(h, h->n),
                             &pl->ids, &pl->n, err);
        if (!s && pl->n == 0) {
            pl_free(pl->ids);
            pl->ids = NULL;
            return plan_retokenize(ss, h, text, len, pl, err);
        }
        pl->path = PL_CHAT_FAST;
        pl->keep = h->n;
        pl->from = 0;
        return s;
    }
    size_t from = pl_history_end(h, last);
    pl_status s = encode(h->tok, text + from, len - from, pl_history_strip_at(h, last), &pl->ids,
                         &pl->n, err);
    if (s) return s;
    pl->path = PL_CHAT_FAST;
    if (pl->n > 0 && pl->ids[0] == h->ids[last] && pl->n > 1) {
        pl->keep = h->n;
        pl->from = 1;
    } else {
        pl->keep = last; /* merged, or nothing new: evaluate the last token again */
        pl->from = 0;
    }
    return PL_OK;
}

/* Partial or slow path: the whole text, and the longest common prefix of ids with the
 * history that the cache can still be truncated to. */
static pl_status plan_retokenize(pl_session *ss, const pl_history *h, const char *text, size_t len,
                                 plan *pl, pl_error *err)
{
    pl_status s = encode(h->tok, text, len, 1, &pl->ids, &pl->n, err);
    if (s) return s;
    if (pl->n == 0) return pl_fail(err, PL_ERR_INVALID_ARG, "the text has no tokens");
    size_t lcp = 0;
    while (lcp < pl->n && (int64_t)lcp < h->n && pl->ids[lcp] == h->ids[lcp]) lcp++;
    if (lcp == pl->n) lcp--; /* at least one token is evaluated: its logits are the next ones */
    if (lcp > 0 && pl_session_check_truncate(ss, (int64_t)lcp, NULL) == PL_OK) {
        pl->path = PL_CHAT_PARTIAL;
        pl->keep = (int64_t)lcp;
    } else {
        pl->path = PL_CHAT_SLOW;
        pl->keep = 0;
    }
    pl->from = (size_t)pl->keep;
    return PL_OK;
}

static pl_status chat_turn(pl_session *ss, const pl_history *h, const char *text, size_t len,
                           pl_sampler *sampler, const pl_gen_params *gp, pl_text_fn on_text,
                           void *user, pl_chat_stats *stats, pl_error *err, double t0);

pl_status pl_chat(pl_session *ss, const char *text, size_t len, pl_sampler *sampler,
                  const pl_gen_params *params, pl_text_fn on_text, void *user, pl_chat_stats *stats,
                  pl_error *err)
{
    double t0 = pl_clock_ms();
    if (stats) memset(stats, 0, sizeof *stats);
    if (!ss || (!text && len > 0))
        return pl_fail(err, PL_ERR_INVALID_ARG, "session is NULL, or text is NULL");
    pl_gen_params p = params ? *params : pl_gen_default_params();
    pl_status s = pl_gen_check(&p, err);
    if (s) return s;
    const pl_history *h = pl_session_hist(ss);
    if (!h->tok)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "the model has no tokenizer: chat needs one to match text");
    if (len == 0 && h->n == 0)
        return pl_fail(err, PL_ERR_INVALID_ARG, "the conversation text is empty");

    /* The vocabulary's normal form, so the history text (its ids' text) can be a prefix of it. */
    char *nf = NULL;
    if (h->tok->norm != PL_TOK_NORM_NONE) {
        size_t nlen = 0;
        s = pl_tok_normalize(h->tok, text, len, PL_TOKENIZE_PARSE_SPECIAL, NULL, 0, &nlen, err);
        if (s && s != PL_ERR_BUFFER_TOO_SMALL) return s;
        if (!(nf = pl_malloc(nlen ? nlen : 1)))
            return pl_fail(err, PL_ERR_NOMEM, "no memory for the %zu-byte normal form", nlen);
        s = pl_tok_normalize(h->tok, text, len, PL_TOKENIZE_PARSE_SPECIAL, nf, nlen, &nlen, err);
        if (s) {
            pl_free(nf);
            return s;
        }
        text = nf;
        len = nlen;
    }
    s = chat_turn(ss, h, text, len, sampler, &p, on_text, user, stats, err, t0);
    pl_free(nf);
    return s;
}

static pl_status chat_turn(pl_session *ss, const pl_history *h, const char *text, size_t len,
                           pl_sampler *sampler, const pl_gen_params *gp, pl_text_fn on_text,
                           void *user, pl_chat_stats *stats, pl_error *err, double t0)
{
    pl_gen_params p = *gp;
    pl_status s = PL_OK;
    plan pl = {0};
    if (h->n > 0 && len >= h->len && memcmp(text, h->text, h->len) == 0)
        s = plan_fast(ss, h, text, len, &pl, err);
    else
        s = plan_retokenize(ss, h, text, len, &pl, err);
    if (!s && pl.keep < h->n && pl.keep > 0) s = pl_session_check_truncate(ss, pl.keep, err);
    /* The prompt (at least one token: the last kept one again when nothing is new). */
    int32_t again;
    const int32_t *prompt = s ? NULL : pl.ids + pl.from; /* ids is NULL after an error */
    int64_t n_prompt = s ? 0 : (int64_t)(pl.n - pl.from);
    if (!s && n_prompt == 0) { /* the fast path's new bytes spelled no token */
        if (pl.keep == h->n) pl.keep--;
        again = h->ids[pl.keep];
        prompt = &again;
        n_prompt = 1;
    }
    if (!s) s = pl_session_check_room(ss, pl.keep, n_prompt, err);
    if (s) {
        pl_free(pl.ids);
        return s;
    }
    double t_plan = pl_clock_ms();
    /* Everything is known to fit: from here the session changes. */
    if (pl.keep < h->n) s = pl_session_truncate(ss, pl.keep, err);
    pl_gen_stats gs = {0};
    if (!s) s = pl_generate(ss, prompt, n_prompt, sampler, &p, on_text, user, &gs, err);
    pl_free(pl.ids);
    if (stats) {
        stats->path = pl.path;
        stats->n_reused = pl.keep;
        stats->n_prefilled = n_prompt;
        stats->n_generated = gs.n_generated;
        stats->tokenize_ms = t_plan - t0;
        stats->gen = gs;
        stats->total_ms = pl_clock_ms() - t0;
    }
    return s;
}

/* Runs the turn on a rendered prompt (owned). */
static pl_status chat_text(pl_session *ss, char *text, size_t len, pl_sampler *sampler,
                           const pl_gen_params *params, pl_text_fn on_text, void *user,
                           pl_chat_stats *stats, pl_error *err)
{
    pl_status s = pl_chat(ss, text, len, sampler, params, on_text, user, stats, err);
    pl_free(text);
    return s;
}

pl_status pl_chat_messages_with(pl_session *ss, const pl_chat_template *t,
                                const pl_chat_message *msgs, size_t n, pl_sampler *sampler,
                                const pl_gen_params *params, pl_text_fn on_text, void *user,
                                pl_chat_stats *stats, pl_error *err)
{
    if (stats) memset(stats, 0, sizeof *stats);
    if (!ss) return pl_fail(err, PL_ERR_INVALID_ARG, "session is NULL");
    char *text;
    size_t len;
    pl_status s = pl_chat_render_messages(pl_session_model(ss), t, msgs, n, 1, &text, &len, err);
    if (s) return s; /* the session is untouched */
    return chat_text(ss, text, len, sampler, params, on_text, user, stats, err);
}

pl_status pl_chat_messages(pl_session *ss, const char *tmpl, const pl_chat_message *msgs, size_t n,
                           pl_sampler *sampler, const pl_gen_params *params, pl_text_fn on_text,
                           void *user, pl_chat_stats *stats, pl_error *err)
{
    if (stats) memset(stats, 0, sizeof *stats);
    pl_chat_template *t = NULL;
    pl_status s = tmpl ? pl_chat_template_builtin(&t, tmpl, err) : PL_OK;
    if (!s) s = pl_chat_messages_with(ss, t, msgs, n, sampler, params, on_text, user, stats, err);
    pl_chat_template_free(t);
    return s;
}

pl_status pl_chat_messages_json(pl_session *ss, const pl_chat_template *t, const char *json,
                                size_t len, pl_sampler *sampler, const pl_gen_params *params,
                                pl_text_fn on_text, void *user, pl_chat_stats *stats, pl_error *err)
{
    if (stats) memset(stats, 0, sizeof *stats);
    if (!ss) return pl_fail(err, PL_ERR_INVALID_ARG, "session is NULL");
    json_t *ctx;
    pl_status s = pl_chat_parse_conversation(json, len, &ctx, err);
    if (s) return s;
    char *text;
    size_t n;
    s = pl_chat_render_ctx(pl_session_model(ss), t, ctx, 1, &text, &n, err);
    json_decref(ctx);
    if (s) return s; /* the session is untouched */
    return chat_text(ss, text, n, sampler, params, on_text, user, stats, err);
}
