/* perplexity.c — llama-perplexity's method: windows of n_ctx tokens, each from an empty cache,
 * the second half of each scored with pl_logits_nll. Not a printer: the caller gets numbers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "runtime/model.h"
#include "tokenizer/tokenizer.h"

#define DEFAULT_CTX 512

pl_status pl_ppl_plan_windows(int64_t n_tokens, int64_t n_ctx, int64_t max_windows,
                              pl_ppl_plan *out, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "pl_ppl_plan_windows: out is NULL");
    if (n_ctx < 3)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "window of %lld tokens: perplexity needs >= 3 (it scores positions "
                       "n_ctx/2 .. n_ctx-2)",
                       (long long)n_ctx);
    if (n_tokens < 0 || max_windows < 0)
        return pl_fail(err, PL_ERR_INVALID_ARG, "negative count: %lld tokens, %lld windows",
                       (long long)n_tokens, (long long)max_windows);
    if (n_tokens < n_ctx)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "the text has %lld tokens; a window of %lld needs %lld (%lld more): a "
                       "longer text, or a smaller window",
                       (long long)n_tokens, (long long)n_ctx, (long long)n_ctx,
                       (long long)(n_ctx - n_tokens));
    pl_ppl_plan p = {.n_ctx = n_ctx, .n_windows = n_tokens / n_ctx, .first = n_ctx / 2};
    if (max_windows && p.n_windows > max_windows) p.n_windows = max_windows;
    p.per_window = n_ctx - 1 - p.first;
    p.n_scored = p.n_windows * p.per_window;
    p.n_used = p.n_windows * n_ctx;
    *out = p;
    return pl_ok(err);
}

pl_ppl_params pl_ppl_default_params(const pl_model *m)
{
    pl_ppl_params p = {.bos = -1, .session = pl_session_default_params(m)};
    return p;
}

/* Mean and its standard error sqrt(sum (x - mean)^2 / (N (N - 1))), NaN for N < 2. */
static void mean_se(const double *x, int64_t n, double *mean, double *se)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    double m = s / (double)n, v = 0;
    for (int64_t i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    *mean = m;
    *se = n > 1 ? sqrt(v / ((double)n * (double)(n - 1))) : NAN;
}

/* The window length, the BOS decision and the tokens, checked before anything is allocated. */
static pl_status check_args(const pl_model *m, const int32_t *tokens, int64_t n_tokens,
                            const pl_ppl_params *p, pl_ppl_plan *plan, int32_t *bos, pl_error *err)
{
    if (!m) return pl_fail(err, PL_ERR_INVALID_ARG, "pl_perplexity: model is NULL");
    if (m->vocab_only)
        return pl_fail(err, PL_ERR_INVALID_ARG, "pl_perplexity: the model was loaded vocab-only");
    if (!tokens && n_tokens > 0)
        return pl_fail(err, PL_ERR_INVALID_ARG, "pl_perplexity: tokens is NULL");
    if (p->bos < -1 || p->bos > 1)
        return pl_fail(err, PL_ERR_INVALID_ARG, "bos is %d; expected -1, 0 or 1", p->bos);
    int64_t n_ctx = p->n_ctx;
    if (n_ctx == 0) n_ctx = m->hp.n_ctx_train < DEFAULT_CTX ? m->hp.n_ctx_train : DEFAULT_CTX;
    pl_status s = pl_ppl_plan_windows(n_tokens, n_ctx, p->max_windows, plan, err);
    if (s) return s;
    for (int64_t i = 0; i < plan->n_used; i++)
        if (tokens[i] < 0 || tokens[i] >= m->hp.n_vocab)
            return pl_fail(err, PL_ERR_INVALID_ARG,
                           "token %lld is %d, outside the vocabulary [0, %lld)", (long long)i,
                           tokens[i], (long long)m->hp.n_vocab);
    const struct pl_tokenizer *t = pl_model_tokenizer(m);
    int want = p->bos == -1 ? t && t->add_bos && t->bos >= 0 : p->bos;
    *bos = -1;
    if (want) {
        if (!t || t->bos < 0 || t->bos >= m->hp.n_vocab)
            return pl_fail(err, PL_ERR_INVALID_ARG,
                           "bos = 1, but the model has no BOS token in its vocabulary");
        *bos = t->bos;
    }
    return PL_OK;
}

pl_status pl_perplexity(const pl_model *m, const int32_t *tokens, int64_t n_tokens,
                        const pl_ppl_params *params, pl_ppl_fn on_window, void *user,
                        pl_ppl_result *out, double *nll, size_t nll_cap, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "pl_perplexity: out is NULL");
    pl_ppl_params p = params ? *params : pl_ppl_default_params(m);
    pl_ppl_plan plan;
    int32_t bos;
    pl_status s = check_args(m, tokens, n_tokens, &p, &plan, &bos, err);
    if (s) return s;
    if (nll && nll_cap < (size_t)plan.n_scored)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL,
                       "nll holds %zu values; %lld windows score %lld tokens", nll_cap,
                       (long long)plan.n_windows, (long long)plan.n_scored);
    const int64_t C = plan.n_ctx, S = plan.per_window, V = m->hp.n_vocab, first = plan.first;

    uint64_t cells;
    if (!pl_mul_u64((uint64_t)S, (uint64_t)V, &cells) || cells > SIZE_MAX / sizeof(float))
        return pl_fail(err, PL_ERR_LIMIT, "%lld x %lld logits per window overflow", (long long)S,
                       (long long)V);
    float *logits = pl_malloc((size_t)cells * sizeof(float));
    int32_t *win = pl_malloc((size_t)C * sizeof *win);
    double *all = nll ? NULL : pl_malloc((size_t)plan.n_scored * sizeof *all);
    pl_session *sess = NULL;
    if (!logits || !win || (!nll && !all)) {
        s = pl_fail(err, PL_ERR_NOMEM, "no memory for %lld x %lld logits and %lld NLLs",
                    (long long)S, (long long)V, (long long)plan.n_scored);
        goto out;
    }
    if (!nll) nll = all;

    pl_session_params sp = p.session;
    sp.context_window = C;
    sp.sliding_window = 0;
    sp.attention_sinks = 0;
    if ((s = pl_session_new(&sess, m, &sp, err))) goto out;

    double sum = 0, sum2 = 0, eval_ms = 0;
    for (int64_t w = 0; w < plan.n_windows; w++) {
        memcpy(win, tokens + w * C, (size_t)C * sizeof *win);
        if (bos >= 0) win[0] = bos;
        pl_session_reset(sess);
        /* The first half only fills the cache; the last token is only a target. */
        double t0 = pl_clock_ms();
        if ((s = pl_session_eval(sess, win, first, NULL, 0, err)) ||
            (s = pl_session_eval(sess, win + first, S, logits, PL_EVAL_ALL_LOGITS, err))) {
            char where[64];
            snprintf(where, sizeof where, "window %lld", (long long)w);
            pl_error_prefix(err, where);
            goto out;
        }
        eval_ms += pl_clock_ms() - t0;
        double *x = nll + w * S;
        for (int64_t k = 0; k < S; k++) {
            x[k] = pl_logits_nll(logits + k * V, V, win[first + k + 1]);
            sum += x[k];
            sum2 += x[k] * x[k];
        }
        if (on_window) {
            int64_t n = (w + 1) * S;
            double mean = sum / (double)n, var = sum2 / (double)n - mean * mean;
            pl_ppl_window info = {
                .plan = &plan,
                .index = w,
                .tokens = win,
                .logits = logits,
                .nll = x,
                .n_vocab = V,
                .n_scored = n,
                .ppl = exp(mean),
                .ppl_se = n > 1 ? exp(mean) * sqrt((var > 0 ? var : 0) / (double)(n - 1)) : NAN};
            if (on_window(user, &info)) {
                s = pl_fail(err, PL_ERR_CANCELLED, "cancelled after window %lld of %lld",
                            (long long)(w + 1), (long long)plan.n_windows);
                goto out;
            }
        }
    }
    pl_ppl_result r = {.plan = plan, .bos = bos >= 0, .eval_ms = eval_ms};
    mean_se(nll, plan.n_scored, &r.nll_mean, &r.nll_mean_se);
    r.ppl = exp(r.nll_mean);
    r.ppl_se = r.ppl * r.nll_mean_se;
    *out = r;
    s = pl_ok(err);
out:
    pl_session_free(sess);
    pl_free(all);
    pl_free(win);
    pl_free(logits);
    return s;
}
