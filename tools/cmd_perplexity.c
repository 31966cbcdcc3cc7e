/* cmd_perplexity.c — `plumb perplexity`: llama-perplexity's windows over a text file, a progress
 * bar with the running estimate, PPL ± SE; optionally the KLD against a saved base run. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "logits_report.h"
#include "progress.h"
#include "run_text.h"

static void usage(FILE *out)
{
    fputs("usage: plumb perplexity -m FILE -f TEXT [options]\n"
          "\n"
          "Perplexity of the model on a text, as llama-perplexity computes it: the text is\n"
          "tokenized (BOS first when the model adds one) and cut into windows of N tokens (a\n"
          "partial last window is dropped); each window is evaluated from an empty cache, its\n"
          "first token replaced by BOS when the model adds one, and only its second half is\n"
          "scored: positions N/2 .. N-2 each predict the next token, NLL = -log softmax (in\n"
          "double). Prints PPL = exp(mean NLL) ± its standard error (PPL x SE of the mean NLL).\n"
          "The result is bit-identical for any -t and --batch.\n"
          "\n"
          "With --save-logits, the scored logits go to a windowed .logits file (README.md);\n"
          "a later run with --kl-divergence-base FILE (another weight type of the same model,\n"
          "the same text and windows) prints the KLD statistics of `plumb logits compare`\n"
          "against it: mean KLD ± SE, percentiles, top-1 agreement, PPL(base) and the change.\n"
          "\n"
          "options:\n"
          "  -m, --model FILE             GGUF model\n"
          "  -f, --file FILE              the text\n"
          "  -c, --ctx N                  window length in tokens, >= 3 (default: the base's\n"
          "                               window, else min(the model's context, 512))\n"
          "  --chunks N                   evaluate at most N windows (default: all; with a\n"
          "                               base, at most the base's)\n"
          "  -b, --batch N                tokens per forward step (default 256); no effect on\n"
          "                               the result\n"
          "  -t, --threads N              threads (default: PLUMB_THREADS, else physical\n"
          "                               cores); no effect on the result\n"
          "  --save-logits FILE           write the scored logits (a windowed .logits file)\n"
          "  --kl-divergence-base FILE    compare with the logits a previous --save-logits run\n"
          "                               wrote\n"
          "  --kv-type f16|f32            KV cache element type (default f16)\n"
          "  --kernels NAME               kernel set (default: PLUMB_KERNELS, else the best)\n"
          "  --no-repack                  run every weight from the mapping\n"
          "  -h, --help                   show this help\n"
          "\n"
          "Exit status: 0 success, 1 failure (a missing file, a text shorter than one window,\n"
          "a base of another text or window), 2 bad command line.\n",
          out);
}

typedef struct ppl_opts {
    const char *model, *text, *save, *base;
    cli_engine_opts eng;
    int64_t ctx, chunks, batch;
    int no_repack;
} ppl_opts;

/* One option of the command line (cli_parse_options). */
static int option(cli_args *a, void *user)
{
    ppl_opts *o = user;
    const char *v = cli_value_ahead(a);
    int rc = 0;
    if (cli_is(a, "-m", "--model"))
        o->model = v;
    else if (cli_is(a, "-f", "--file"))
        o->text = v;
    else if (cli_is(a, NULL, "--save-logits"))
        o->save = v;
    else if (cli_is(a, NULL, "--kl-divergence-base"))
        o->base = v;
    else if (cli_is(a, "-c", "--ctx"))
        rc = cli_parse_i64(a, v, 3, INT32_MAX / 2, &o->ctx);
    else if (cli_is(a, NULL, "--chunks"))
        rc = cli_parse_i64(a, v, 1, INT32_MAX, &o->chunks);
    else if (cli_is(a, "-b", "--batch"))
        rc = cli_parse_i64(a, v, 1, 4096, &o->batch);
    else if (cli_engine_option(a, v, &o->eng, &rc))
        ;
    else
        return CLI_OPTION_UNKNOWN;
    return rc;
}

static int parse(int argc, char **argv, ppl_opts *o)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "perplexity", usage);
    const cli_flag flags[] = {{NULL, "--no-repack", &o->no_repack}, {NULL, NULL, NULL}};
    int rc = cli_parse_options(&a, flags, option, o);
    if (rc) return rc;
    if (!o->model) return cli_usage_error(&a, "no model: give -m FILE");
    if (!o->text) return cli_usage_error(&a, "no text: give -f FILE");
    return 0;
}

/* What the window callback keeps: the scored rows and the evaluated ids of every window, when
 * they are saved or compared, and the progress bar. */
typedef struct ppl_run {
    progress_bar bar;
    int keep;      /* collect rows and ids */
    float *rows;   /* n_scored x n_vocab */
    int32_t *ids;  /* n_used */
    int no_memory; /* the collection could not be allocated */
} ppl_run;

static int on_window(void *user, const pl_ppl_window *w)
{
    ppl_run *r = user;
    const pl_ppl_plan *p = w->plan;
    if (r->keep) {
        size_t row_cells = (size_t)p->per_window * (size_t)w->n_vocab;
        if (!r->rows) {
            r->rows = malloc((size_t)p->n_windows * row_cells * sizeof *r->rows);
            r->ids = malloc((size_t)p->n_used * sizeof *r->ids);
            if (!r->rows || !r->ids) {
                r->no_memory = 1;
                return 1;
            }
        }
        memcpy(r->rows + (size_t)w->index * row_cells, w->logits, row_cells * sizeof *r->rows);
        memcpy(r->ids + w->index * p->n_ctx, w->tokens, (size_t)p->n_ctx * sizeof *r->ids);
    }
    char note[96];
    snprintf(note, sizeof note, "[%lld/%lld] ppl %.2f", (long long)(w->index + 1),
             (long long)p->n_windows, w->ppl);
    return progress_bar_update(&r->bar, (uint64_t)w->index + 1, (uint64_t)p->n_windows, note);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The base must be a windowed file of this text: checked before the (long) run, except each
 * window's first id, which BOS may replace (pl_logits_compare checks every id afterwards). */
static int check_base(const pl_logits *b, const char *path, const int32_t *tok, int64_t n_tok,
                      int64_t ctx, int64_t n_vocab)
{
    if (!b->window)
        return cli_errorf("%s: not a perplexity base: its rows are one evaluation, not windows "
                          "(write one with plumb perplexity --save-logits)",
                          path);
    if (b->n_vocab != n_vocab)
        return cli_errorf("%s: vocabulary of %lld tokens; the model has %lld", path,
                          (long long)b->n_vocab, (long long)n_vocab);
    if (b->window != ctx)
        return cli_errorf("%s: windows of %lld tokens; this run uses -c %lld", path,
                          (long long)b->window, (long long)ctx);
    if (b->n_tokens > n_tok)
        return cli_errorf("%s: covers %lld tokens; the text has only %lld: not the same text", path,
                          (long long)b->n_tokens, (long long)n_tok);
    for (int64_t i = 0; i < b->n_tokens; i++)
        if (i % ctx && b->tokens[i] != tok[i])
            return cli_errorf("%s: token %lld is %d, the text's is %d: not the same text (or "
                              "tokenizer)",
                              path, (long long)i, b->tokens[i], tok[i]);
    return CLI_EXIT_OK;
}

int cmd_perplexity(int argc, char **argv)
{
    ppl_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc >= 100 ? rc - 100 : rc;
    pl_error err;
    pl_model *m = NULL;
    run_text *text = NULL;
    int32_t *tok = NULL;
    int64_t n_tok = 0;
    pl_logits *base = NULL;
    ppl_run run = {0};
    pl_status st;

    /* The paths first: a typo fails now, not after the whole text was evaluated. */
    if ((o.save && (rc = cli_check_output(o.save))) || (o.base && (rc = cli_check_input(o.base))) ||
        (rc = cli_check_input(o.text)))
        goto out;
    const pl_model_params mp = {.flags = o.no_repack ? PL_MODEL_NO_REPACK : 0u,
                                .kernels = o.eng.kernels};
    if ((st = pl_model_load(&m, o.model, &mp, &err))) goto fail;
    pl_model_info info;
    if ((st = pl_model_get_info(m, &info, &err))) goto fail;
    if ((st = run_text_new(&text, m, 0, NULL, 0, &err)) ||
        (st = run_text_tokenize_file(text, o.text, &tok, &n_tok, &err)))
        goto fail;

    pl_ppl_params pp = pl_ppl_default_params(m);
    pp.n_ctx = o.ctx;
    pp.max_windows = o.chunks;
    if (o.batch) pp.session.prefill_chunk = o.batch;
    pp.session.n_threads = (int)o.eng.threads;
    if (o.eng.kv) pp.session.kv_type = strcmp(o.eng.kv, "f32") == 0 ? PL_TYPE_F32 : PL_TYPE_F16;
    pp.session.kernels = o.eng.kernels;
    if (o.base) {
        if ((st = pl_logits_read(&base, o.base, &err))) goto fail;
        if (!pp.n_ctx) pp.n_ctx = base->window;
        if ((rc = check_base(base, o.base, tok, n_tok, pp.n_ctx, info.n_vocab))) goto out;
        int64_t wins = base->n_tokens / base->window;
        if (!pp.max_windows || pp.max_windows > wins) pp.max_windows = wins;
    }
    run.keep = o.save || o.base;

    pl_ppl_result res;
    progress_bar_init(&run.bar, "perplexity");
    st = pl_perplexity(m, tok, n_tok, &pp, on_window, &run, &res, NULL, 0, &err);
    int interrupted = progress_bar_finish(&run.bar);
    if (st == PL_ERR_CANCELLED && run.no_memory) {
        rc = cli_errorf("out of memory for the logits to %s",
                        o.save ? "save" : "compare with the base");
        goto out;
    }
    if (st == PL_ERR_CANCELLED && interrupted) {
        rc = cli_errorf("interrupted");
        goto out;
    }
    if (st) goto fail;

    const pl_ppl_plan *p = &res.plan;
    printf("model: %s, text: %s (%lld tokens)\n", base_name(o.model), o.text, (long long)n_tok);
    char span[128]; /* the words of the KLD report's file lines, for the same span */
    logits_report_span(span, sizeof span, p->first, p->n_ctx);
    printf("windows: %lld of %lld tokens%s, %s scored: %lld tokens\n", (long long)p->n_windows,
           (long long)p->n_ctx, res.bos ? " (BOS first)" : "", span, (long long)p->n_scored);
    printf("PPL = %.4f ± %.5f\n", res.ppl, res.ppl_se);
    fprintf(stderr, "eval: %lld tokens in %.2f s = %.1f tok/s\n",
            (long long)(p->n_windows * (p->n_ctx - 1)), res.eval_ms * 1e-3,
            res.eval_ms > 0 ? (double)(p->n_windows * (p->n_ctx - 1)) * 1e3 / res.eval_ms : 0.0);

    if (!run.keep) goto done;
    uint64_t hash = 0;
    if ((st = pl_logits_tokenizer_hash(pl_model_gguf(m), &hash, &err))) goto fail;
    pl_logits cur = {.n_vocab = info.n_vocab,
                     .n_tokens = p->n_used,
                     .first_row = p->first,
                     .n_rows = p->n_scored,
                     .window = p->n_ctx,
                     .tokenizer_hash = hash,
                     .model_name = base_name(o.model),
                     .tokens = run.ids,
                     .logits = run.rows};
    if (o.save) {
        if ((st = pl_logits_write(&cur, o.save, &err))) goto fail;
        fprintf(stderr, "wrote %s: %lld windows of %lld, %lld rows, vocab %lld\n", o.save,
                (long long)p->n_windows, (long long)p->n_ctx, (long long)p->n_scored,
                (long long)info.n_vocab);
    }
    if (o.base) {
        /* The base may hold more windows than this run (--chunks): compare its first ones. */
        pl_logits b = *base;
        b.n_tokens = p->n_used;
        b.n_rows = p->n_scored;
        pl_logits_stats s;
        if ((st = pl_logits_compare(&b, &cur, &s, NULL, 0, &err))) goto fail;
        printf("\n");
        logits_report_file(stdout, "A (base)", o.base, base);
        logits_report_file(stdout, "B (this run)", o.model, &cur);
        if (s.tokenizer_match == 0)
            cli_warnf("the tokenizer hashes differ (same token ids, though)");
        logits_report_stats(stdout, &s, &b);
    }
done:
    rc = CLI_EXIT_OK;
    goto out;
fail:
    rc = cli_fail(st, &err);
out:
    free(run.rows);
    free(run.ids);
    free(tok);
    pl_logits_free(base);
    run_text_free(text);
    pl_model_free(m);
    return rc;
}
