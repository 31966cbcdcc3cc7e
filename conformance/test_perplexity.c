/* test_perplexity.c — pl_perplexity against an independent computation (the session's logits of
 * each window, log-softmax in double with GSL), its window arithmetic, determinism, and KLD. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_sf_exp.h>
#include <gsl/gsl_sf_log.h>
#include <gsl/gsl_statistics_double.h>

#include "mkmodel.h"
#include "testutil.h"
#include "tinymodel.h"

static char tmpdir[64];

static void tmp_path(char *path, size_t cap, const char *name)
{
    if (!tmpdir[0]) {
        strcpy(tmpdir, "/tmp/plumb-ppl-XXXXXX");
        if (!mkdtemp(tmpdir)) abort();
    }
    snprintf(path, cap, "%s/%s", tmpdir, name);
}

/* The tiny random llama (no tokenizer) at wtype, written to a file (quantization reads files). */
static void write_tiny(const char *path, uint32_t wtype)
{
    tiny_spec sp = tiny_default("llama", wtype);
    sp.seed = 42;
    void *img;
    size_t size;
    CU_ASSERT_FATAL(tiny_build(&sp, &img, &size) == 0);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f && fwrite(img, 1, size, f) == size && fclose(f) == 0);
    pl_buffer_free(img);
}

static pl_model *load(const char *path)
{
    pl_model *m = NULL;
    pl_error err;
    TU_CHECK(pl_model_load(&m, path, NULL, &err) == PL_OK, "%s: %s", path, err.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    return m;
}

static pl_model *tiny_f32(void)
{
    static char path[128];
    if (!path[0]) {
        tmp_path(path, sizeof path, "f32.gguf");
        write_tiny(path, PL_TYPE_F32);
    }
    return load(path);
}

static void random_tokens(int32_t *t, int64_t n, int64_t V, uint64_t seed)
{
    tu_rng r;
    tu_rng_init(&r, seed);
    for (int64_t i = 0; i < n; i++) t[i] = (int32_t)tu_rng_range(&r, 0, V - 1);
}

static pl_ppl_params params(const pl_model *m, int64_t n_ctx, int64_t batch, int threads)
{
    pl_ppl_params p = pl_ppl_default_params(m);
    p.n_ctx = n_ctx;
    p.bos = 0;
    p.session.prefill_chunk = batch;
    p.session.n_threads = threads;
    return p;
}

/* ---- the window arithmetic ------------------------------------------------------------ */

static void ppl_plan_matches_hand_computed_windows(void)
{
    /* n_tokens, n_ctx, max -> windows, first, per window (= n_ctx - 1 - n_ctx / 2) */
    const int64_t cases[][6] = {
        {100, 24, 0, 4, 12, 11},     /* 96 tokens used, targets 13..23 of each window */
        {100, 25, 0, 4, 12, 12},     /* odd: positions 12..23 */
        {3, 3, 0, 1, 1, 1},          /* the smallest window scores one token */
        {7, 4, 0, 1, 2, 1},          /* 4: position 2 scores token 3 */
        {10, 5, 0, 2, 2, 2},         /* 5: positions 2, 3 */
        {4096, 512, 3, 3, 256, 255}, /* llama.cpp's defaults, capped at 3 windows */
        {1023, 512, 0, 1, 256, 255}, /* a partial last window is dropped */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t *c = cases[i];
        pl_ppl_plan p;
        pl_error err;
        TU_CHECK(pl_ppl_plan_windows(c[0], c[1], c[2], &p, &err) == PL_OK, "case %zu: %s", i,
                 err.msg);
        TU_CHECK(p.n_windows == c[3] && p.first == c[4] && p.per_window == c[5] &&
                     p.n_scored == c[3] * c[5] && p.n_used == c[3] * c[1] && p.n_ctx == c[1],
                 "case %zu (%lld tokens, n_ctx %lld): %lld windows, first %lld, %lld per window", i,
                 (long long)c[0], (long long)c[1], (long long)p.n_windows, (long long)p.first,
                 (long long)p.per_window);
    }
    pl_ppl_plan p;
    pl_error err;
    CU_ASSERT_EQUAL(pl_ppl_plan_windows(100, 2, 0, &p, &err), PL_ERR_INVALID_ARG);
    TU_CHECK(strstr(err.msg, ">= 3") != NULL, "%s", err.msg);
    CU_ASSERT_EQUAL(pl_ppl_plan_windows(19, 256, 0, &p, &err), PL_ERR_INVALID_ARG);
    TU_CHECK(strstr(err.msg, "the text has 19 tokens; a window of 256 needs 256 (237 more)"), "%s",
             err.msg);
}

/* What the callback saw, for the hand-computed case. */
typedef struct seen {
    int64_t n_calls, index[8], first_token[8], n_scored[8];
    double ppl[8];
} seen;

static int record(void *user, const pl_ppl_window *w)
{
    seen *s = user;
    if (s->n_calls < 8) {
        s->index[s->n_calls] = w->index;
        s->first_token[s->n_calls] = w->tokens[0];
        s->n_scored[s->n_calls] = w->n_scored;
        s->ppl[s->n_calls] = w->ppl;
    }
    s->n_calls++;
    return 0;
}

static void ppl_scores_the_second_half_of_each_window(void)
{
    /* 13 tokens, windows of 6: tokens [0, 6) and [6, 12) (token 12 is dropped); each scores
     * positions 3 and 4, i.e. tokens 4, 5 and 10, 11 from the logits at 3, 4 and 9, 10. */
    pl_model *m = tiny_f32();
    int32_t tok[13];
    random_tokens(tok, 13, 320, 77);
    pl_ppl_params p = params(m, 6, 64, 1);
    double nll[4];
    pl_ppl_result r;
    seen s = {0};
    pl_error err;
    TU_CHECK(pl_perplexity(m, tok, 13, &p, record, &s, &r, nll, 4, &err) == PL_OK, "%s", err.msg);
    CU_ASSERT(r.plan.n_windows == 2 && r.plan.first == 3 && r.plan.per_window == 2);
    CU_ASSERT(r.plan.n_scored == 4 && r.bos == 0);
    CU_ASSERT(s.n_calls == 2 && s.index[0] == 0 && s.index[1] == 1);
    CU_ASSERT(s.first_token[0] == tok[0] && s.first_token[1] == tok[6]);
    CU_ASSERT(s.n_scored[0] == 2 && s.n_scored[1] == 4);
    /* By hand: each window from an empty session, all logits, the four targets. */
    pl_session_params sp = pl_session_default_params(m);
    sp.context_window = 6;
    sp.n_threads = 1;
    pl_session *ss = NULL;
    CU_ASSERT_FATAL(pl_session_new(&ss, m, &sp, NULL) == PL_OK);
    float *lg = malloc(6 * 320 * sizeof *lg);
    const int pos[4] = {3, 4, 9, 10}; /* logits row (text position) -> target pos + 1 */
    double want[4];
    for (int k = 0; k < 4; k++) {
        int w = pos[k] / 6;
        pl_session_reset(ss);
        CU_ASSERT_FATAL(pl_session_eval(ss, tok + 6 * w, 6, lg, PL_EVAL_ALL_LOGITS, NULL) == PL_OK);
        want[k] = pl_logits_nll(lg + (pos[k] - 6 * w) * 320, 320, tok[pos[k] + 1]);
        TU_CHECK(nll[k] == want[k], "scored token %d (text position %d): %.17g, by hand %.17g", k,
                 pos[k] + 1, nll[k], want[k]);
    }
    double m2 = (want[0] + want[1]) / 2, m4 = (want[0] + want[1] + want[2] + want[3]) / 4;
    TU_CHECK(fabs(s.ppl[0] - exp(m2)) <= 1e-12 * exp(m2), "running ppl after window 0: %.17g",
             s.ppl[0]);
    TU_CHECK(fabs(r.ppl - exp(m4)) <= 1e-12 * exp(m4), "ppl %.17g, by hand %.17g", r.ppl, exp(m4));
    free(lg);
    pl_session_free(ss);
    pl_model_free(m);
}

/* ---- against an independent computation -------------------------------------------- */

/* -log softmax(x)[t] in double with GSL's exp and log. */
static double ref_nll(const float *x, int64_t V, int32_t t)
{
    double mx = -INFINITY, s = 0;
    for (int64_t j = 0; j < V; j++) mx = fmax(mx, x[j]);
    for (int64_t j = 0; j < V; j++) s += gsl_sf_exp((double)x[j] - mx);
    return -((double)x[t] - mx - gsl_sf_log(s));
}

static void ppl_nll_matches_log_softmax_of_session_logits(void)
{
    pl_model *m = tiny_f32();
    enum { T = 150, C = 40, V = 320 };
    int32_t tok[T];
    uint64_t seed = tu_seed();
    random_tokens(tok, T, V, seed);
    pl_ppl_params p = params(m, C, 16, 2);
    pl_ppl_result r;
    double nll[3 * 19];
    pl_error err;
    TU_CHECK(pl_perplexity(m, tok, T, &p, NULL, NULL, &r, nll, 3 * 19, &err) == PL_OK, "%s",
             err.msg);
    CU_ASSERT_FATAL(r.plan.n_windows == 3 && r.plan.per_window == 19);
    pl_session_params sp = pl_session_default_params(m);
    sp.context_window = C;
    pl_session *s = NULL;
    CU_ASSERT_FATAL(pl_session_new(&s, m, &sp, NULL) == PL_OK);
    float *lg = malloc((size_t)C * V * sizeof *lg);
    double ref[3 * 19];
    for (int w = 0; w < 3; w++) {
        pl_session_reset(s);
        CU_ASSERT_FATAL(pl_session_eval(s, tok + w * C, C, lg, PL_EVAL_ALL_LOGITS, NULL) == PL_OK);
        for (int k = 0; k < 19; k++) {
            int at = C / 2 + k;
            double x = ref_nll(lg + at * V, V, tok[w * C + at + 1]);
            ref[w * 19 + k] = x;
            double got = nll[w * 19 + k];
            TU_CHECK(fabs(got - x) <= 1e-12 + 1e-12 * fabs(x),
                     "seed %llu window %d position %d: nll %.17g, reference %.17g",
                     (unsigned long long)seed, w, at, got, x);
        }
    }
    double mean = gsl_stats_mean(ref, 1, 57), sd = gsl_stats_sd(ref, 1, 57);
    double ppl = exp(mean), se = ppl * sd / sqrt(57.0);
    TU_CHECK(fabs(r.nll_mean - mean) <= 1e-12 * mean, "mean nll %.17g, reference %.17g", r.nll_mean,
             mean);
    TU_CHECK(fabs(r.ppl - ppl) <= 1e-11 * ppl, "ppl %.17g, reference %.17g", r.ppl, ppl);
    TU_CHECK(fabs(r.ppl_se - se) <= 1e-9 * se, "ppl se %.17g, reference %.17g", r.ppl_se, se);
    free(lg);
    pl_session_free(s);
    pl_model_free(m);
}

static void ppl_is_bit_identical_for_any_batch_and_threads(void)
{
    pl_model *m = tiny_f32();
    enum { T = 200, C = 64 };
    int32_t tok[T];
    random_tokens(tok, T, 320, tu_seed() + 1);
    double ref[3 * 31], nll[3 * 31];
    pl_ppl_result r0, r;
    pl_error err;
    pl_ppl_params p = params(m, C, 64, 1);
    CU_ASSERT_FATAL(pl_perplexity(m, tok, T, &p, NULL, NULL, &r0, ref, 93, &err) == PL_OK);
    const int64_t batches[] = {1, 7, 64};
    for (int b = 0; b < 3; b++)
        for (int threads = 1; threads <= 2; threads++) {
            p = params(m, C, batches[b], threads);
            TU_CHECK(pl_perplexity(m, tok, T, &p, NULL, NULL, &r, nll, 93, &err) == PL_OK, "%s",
                     err.msg);
            TU_CHECK(memcmp(&r.ppl, &r0.ppl, sizeof r.ppl) == 0 &&
                         memcmp(&r.ppl_se, &r0.ppl_se, sizeof r.ppl) == 0 &&
                         memcmp(nll, ref, sizeof nll) == 0,
                     "batch %lld threads %d: ppl %.17g ± %.17g, batch 64 threads 1: %.17g ± %.17g",
                     (long long)batches[b], threads, r.ppl, r.ppl_se, r0.ppl, r0.ppl_se);
        }
    pl_model_free(m);
}

/* ---- BOS ---------------------------------------------------------------------------- */

static void ppl_replaces_each_window_first_token_with_bos(void)
{
    mk_config c;
    CU_ASSERT_FATAL(mk_preset("tiny", &c) == 0);
    c.vocab = DEMO_VOCAB_SPM; /* adds BOS */
    c.n_threads = 1;
    char path[128];
    tmp_path(path, sizeof path, "spm.gguf");
    pl_error err;
    CU_ASSERT_FATAL(mk_write(&c, path, NULL, NULL, NULL, &err) == PL_OK);
    pl_model *m = load(path);
    int32_t bos = pl_vocab_bos(m);
    CU_ASSERT_FATAL(bos >= 0);
    int32_t tok[40];
    random_tokens(tok, 40, c.n_vocab, 5);
    for (int i = 0; i < 40; i++)
        if (tok[i] == bos) tok[i] = bos + 1;
    pl_ppl_params p = pl_ppl_default_params(m); /* bos -1: the model's choice */
    p.n_ctx = 10;
    seen s = {0};
    pl_ppl_result r;
    double with[16], without[16];
    TU_CHECK(pl_perplexity(m, tok, 40, &p, record, &s, &r, with, 16, &err) == PL_OK, "%s", err.msg);
    CU_ASSERT(r.bos == 1 && s.n_calls == 4);
    for (int w = 0; w < 4; w++) CU_ASSERT_EQUAL(s.first_token[w], bos);
    /* The same as giving BOS in the tokens; different from not replacing. */
    int32_t rep[40];
    memcpy(rep, tok, sizeof rep);
    for (int w = 0; w < 4; w++) rep[10 * w] = bos;
    p.bos = 0;
    double mine[16];
    pl_ppl_result r2;
    CU_ASSERT_EQUAL(pl_perplexity(m, rep, 40, &p, NULL, NULL, &r2, mine, 16, NULL), PL_OK);
    CU_ASSERT(memcmp(mine, with, sizeof mine) == 0 && r2.bos == 0);
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 40, &p, NULL, NULL, &r2, without, 16, NULL), PL_OK);
    CU_ASSERT(memcmp(without, with, sizeof with) != 0);
    pl_model_free(m);
    /* A model without a tokenizer has no BOS: -1 means none, 1 is an error. */
    m = tiny_f32();
    p = params(m, 10, 64, 1);
    p.bos = -1;
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 40, &p, NULL, NULL, &r, NULL, 0, NULL), PL_OK);
    CU_ASSERT_EQUAL(r.bos, 0);
    p.bos = 1;
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 40, &p, NULL, NULL, &r, NULL, 0, &err),
                    PL_ERR_INVALID_ARG);
    TU_CHECK(strstr(err.msg, "no BOS token") != NULL, "%s", err.msg);
    pl_model_free(m);
}

/* ---- KLD through the windowed .logits files -------------------------------------------- */

typedef struct collect {
    float *rows;
    int32_t *ids;
} collect;

static int keep(void *user, const pl_ppl_window *w)
{
    collect *c = user;
    size_t cells = (size_t)(w->plan->per_window * w->n_vocab);
    if (!c->rows) {
        c->rows = malloc((size_t)w->plan->n_windows * cells * sizeof *c->rows);
        c->ids = malloc((size_t)w->plan->n_used * sizeof *c->ids);
    }
    memcpy(c->rows + (size_t)w->index * cells, w->logits, cells * sizeof *c->rows);
    memcpy(c->ids + w->index * w->plan->n_ctx, w->tokens, (size_t)w->plan->n_ctx * sizeof *c->ids);
    return 0;
}

/* Runs the model over tok and returns its windowed logits (rows/ids owned by c). */
static pl_logits run_windows(pl_model *m, const int32_t *tok, int64_t n, int64_t ctx, collect *c,
                             pl_ppl_result *r)
{
    pl_ppl_params p = params(m, ctx, 64, 2);
    pl_error err;
    TU_CHECK(pl_perplexity(m, tok, n, &p, keep, c, r, NULL, 0, &err) == PL_OK, "%s", err.msg);
    pl_logits l = {.n_vocab = 320,
                   .n_tokens = r->plan.n_used,
                   .first_row = r->plan.first,
                   .n_rows = r->plan.n_scored,
                   .window = ctx,
                   .model_name = "m.gguf",
                   .tokens = c->ids,
                   .logits = c->rows};
    return l;
}

static void ppl_kld_of_a_model_against_itself_is_zero(void)
{
    pl_model *m = tiny_f32();
    int32_t tok[130];
    random_tokens(tok, 130, 320, tu_seed() + 2);
    collect c = {0};
    pl_ppl_result r;
    pl_logits l = run_windows(m, tok, 130, 32, &c, &r);
    /* Through a file and back, as --save-logits and --kl-divergence-base do. */
    char path[128];
    tmp_path(path, sizeof path, "self.logits");
    pl_error err;
    TU_CHECK(pl_logits_write(&l, path, &err) == PL_OK, "%s", err.msg);
    pl_logits *base = NULL;
    CU_ASSERT_FATAL(pl_logits_read(&base, path, &err) == PL_OK);
    pl_logits_stats s;
    TU_CHECK(pl_logits_compare(base, &l, &s, NULL, 0, &err) == PL_OK, "%s", err.msg);
    CU_ASSERT(s.n_rows == r.plan.n_scored && s.n_ppl == r.plan.n_scored);
    CU_ASSERT(s.kld_mean == 0 && s.kld_max == 0 && s.top1_agree == 1 && s.top5_overlap == 1);
    /* The comparison scores the same tokens with the same function: the same PPL, bit for bit. */
    TU_CHECK(s.ppl_a == r.ppl && s.ppl_b == r.ppl && s.ppl_a_se == r.ppl_se,
             "compare: PPL %.17g ± %.17g, perplexity: %.17g ± %.17g", s.ppl_a, s.ppl_a_se, r.ppl,
             r.ppl_se);
    CU_ASSERT(s.ppl_diff == 0 && s.ppl_diff_se == 0);
    pl_logits_free(base);
    remove(path);
    free(c.rows), free(c.ids);
    pl_model_free(m);
}

static void ppl_kld_of_q8_0_against_f32_is_small(void)
{
    pl_model *mf = tiny_f32();
    char f32[128], q8[128];
    tmp_path(f32, sizeof f32, "f32.gguf");
    tmp_path(q8, sizeof q8, "q8_0.gguf");
    pl_quantize_params qp = {.ftype = PL_FTYPE_Q8_0, .n_threads = 1};
    pl_error err;
    CU_ASSERT_FATAL(pl_model_quantize(f32, q8, &qp, &err) == PL_OK);
    pl_model *mq = load(q8);
    enum { T = 260 };
    int32_t tok[T];
    random_tokens(tok, T, 320, tu_seed() + 3);
    collect cf = {0}, cq = {0};
    pl_ppl_result rf, rq;
    pl_logits lf = run_windows(mf, tok, T, 64, &cf, &rf);
    pl_logits lq = run_windows(mq, tok, T, 64, &cq, &rq);
    pl_logits_stats s;
    TU_CHECK(pl_logits_compare(&lf, &lq, &s, NULL, 0, &err) == PL_OK, "%s", err.msg);
    printf("\n  Q8_0 vs F32, %lld windows of 64: KLD %.6f ± %.6f (max %.6f), top-1 %.2f %%, "
           "PPL %.4f -> %.4f (%+.3f %%)\n",
           (long long)rf.plan.n_windows, s.kld_mean, s.kld_mean_se, s.kld_max, 100 * s.top1_agree,
           rf.ppl, rq.ppl, 100 * (rq.ppl / rf.ppl - 1));
    CU_ASSERT(s.kld_mean > 0 && s.kld_mean < 0.01 && s.kld_max < 0.1);
    CU_ASSERT(s.top1_agree > 0.9);
    CU_ASSERT(s.ppl_a == rf.ppl && s.ppl_b == rq.ppl);
    CU_ASSERT(fabs(s.ln_ratio) < 0.02 && s.ppl_corr > 0.99);
    free(cf.rows), free(cf.ids), free(cq.rows), free(cq.ids);
    remove(q8);
    pl_model_free(mf);
    pl_model_free(mq);
}

/* ---- errors -------------------------------------------------------------------------- */

static int stop_after_one(void *user, const pl_ppl_window *w)
{
    (void)user;
    return w->index == 0;
}

static void ppl_rejects_bad_arguments_with_clear_errors(void)
{
    pl_model *m = tiny_f32();
    int32_t tok[100];
    random_tokens(tok, 100, 320, 9);
    pl_ppl_result r;
    pl_error err;
    pl_ppl_params p = params(m, 40, 64, 1);
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 30, &p, NULL, NULL, &r, NULL, 0, &err),
                    PL_ERR_INVALID_ARG);
    TU_CHECK(strstr(err.msg, "the text has 30 tokens; a window of 40 needs 40 (10 more)"), "%s",
             err.msg);
    p.n_ctx = 2;
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 100, &p, NULL, NULL, &r, NULL, 0, &err),
                    PL_ERR_INVALID_ARG);
    p.n_ctx = 40;
    tok[57] = 320;
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 100, &p, NULL, NULL, &r, NULL, 0, &err),
                    PL_ERR_INVALID_ARG);
    TU_CHECK(strstr(err.msg, "token 57 is 320") != NULL, "%s", err.msg);
    tok[57] = 0;
    tok[85] = -1; /* past the last whole window (80 tokens): never read */
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 100, &p, NULL, NULL, &r, NULL, 0, &err), PL_OK);
    double nll[38];
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 100, &p, NULL, NULL, &r, nll, 37, &err),
                    PL_ERR_BUFFER_TOO_SMALL);
    TU_CHECK(strstr(err.msg, "score 38 tokens") != NULL, "%s", err.msg);
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 100, &p, stop_after_one, NULL, &r, nll, 38, &err),
                    PL_ERR_CANCELLED);
    p.session.prefill_chunk = 0;
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 100, &p, NULL, NULL, &r, NULL, 0, &err), PL_ERR_CONFIG);
    CU_ASSERT_EQUAL(pl_perplexity(NULL, tok, 100, NULL, NULL, NULL, &r, NULL, 0, &err),
                    PL_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(pl_perplexity(m, tok, 100, &p, NULL, NULL, NULL, NULL, 0, &err),
                    PL_ERR_INVALID_ARG);
    pl_model_free(m);
}

static void ppl_alloc_failure_at_every_n_is_nomem(void)
{
    pl_model *m = tiny_f32();
    int32_t tok[50];
    random_tokens(tok, 50, 320, 10);
    pl_ppl_params p = params(m, 16, 64, 1);
    for (int persistent = 0; persistent < 2; persistent++)
        for (uint64_t n = 1;; n++) {
            pl_ppl_result r;
            tu_alloc_fail_at(n, persistent);
            pl_status st = pl_perplexity(m, tok, 50, &p, NULL, NULL, &r, NULL, 0, NULL);
            uint64_t failed = tu_alloc_failed();
            tu_alloc_reset();
            if (!failed) {
                CU_ASSERT_EQUAL(st, PL_OK);
                break;
            }
            TU_CHECK(st == PL_ERR_NOMEM, "allocation %llu (persistent %d): %s",
                     (unsigned long long)n, persistent, pl_status_str(st));
        }
    pl_model_free(m);
}

int main(void)
{
    static const tu_test tests[] = {
        {"ppl_plan_matches_hand_computed_windows", ppl_plan_matches_hand_computed_windows},
        {"ppl_scores_the_second_half_of_each_window", ppl_scores_the_second_half_of_each_window},
        {"ppl_nll_matches_log_softmax_of_session_logits",
         ppl_nll_matches_log_softmax_of_session_logits},
        {"ppl_is_bit_identical_for_any_batch_and_threads",
         ppl_is_bit_identical_for_any_batch_and_threads},
        {"ppl_replaces_each_window_first_token_with_bos",
         ppl_replaces_each_window_first_token_with_bos},
        {"ppl_kld_of_a_model_against_itself_is_zero", ppl_kld_of_a_model_against_itself_is_zero},
        {"ppl_kld_of_q8_0_against_f32_is_small", ppl_kld_of_q8_0_against_f32_is_small},
        {"ppl_rejects_bad_arguments_with_clear_errors",
         ppl_rejects_bad_arguments_with_clear_errors},
        {"ppl_alloc_failure_at_every_n_is_nomem", ppl_alloc_failure_at_every_n_is_nomem},
        {NULL, NULL},
    };
    int rc = tu_run("perplexity", tests);
    char path[128];
    tmp_path(path, sizeof path, "f32.gguf");
    remove(path);
    tmp_path(path, sizeof path, "spm.gguf");
    remove(path);
    rmdir(tmpdir);
    return rc;
}
