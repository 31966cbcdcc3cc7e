/* cmd_logits.c — `plumb logits`: evaluate a text and dump its logits to a .logits file, and
 * `plumb logits compare A B`: KL divergence and top-k agreement of two dumps, with gates. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "logits_report.h"
#include "run_text.h"

static void usage(FILE *out)
{
    fputs("usage: plumb logits -m FILE (-p TEXT | -f FILE | --tokens ID,...) -o OUT.logits\n"
          "                    [--all | --last] [options]\n"
          "       plumb logits compare A.logits B.logits [--max-kld X] [--min-top1 P]\n"
          "\n"
          "The first form evaluates the text and writes the logits of every position (--all,\n"
          "the default) or of the last one (--last) to OUT, with the token ids, the model's\n"
          "file name and a hash of its tokenizer (the format is in tools/README.md).\n"
          "\n"
          "The second compares B with A over the positions both hold: KL divergence of B\n"
          "from A (mean with its standard error, median, 99th, 99.9th percentile, max), max\n"
          "and RMS logit difference, top-1 agreement and top-5 overlap, and the perplexity\n"
          "of each (PPL(B) - PPL(A) with its standard error). Files of different texts\n"
          "(token ids) or vocab sizes are refused. Files that `plumb perplexity\n"
          "--save-logits` wrote compare too, when both used the same windows.\n"
          "\n"
          "options (evaluate):\n"
          "  -m, --model FILE     GGUF model\n"
          "  -p, --prompt TEXT    the text (tokenized with the model's tokenizer, BOS added\n"
          "                       when the model asks for it)\n"
          "  -f, --file FILE      read the text from FILE ('-': standard input)\n"
          "  --tokens LIST        the text as token ids, comma-separated\n"
          "  -o, --output FILE    the .logits file to write (through FILE.tmp)\n"
          "  --all                logits of every position (default)\n"
          "  --last               logits of the last position only\n"
          "  -c, --ctx N          context window (default: the number of tokens)\n"
          "  -t, --threads N      threads (default: PLUMB_THREADS, else physical cores);\n"
          "                       the logits do not depend on it\n"
          "  --kv-type f16|f32    KV cache element type (default f16)\n"
          "  --kernels NAME       kernel set (default: PLUMB_KERNELS, else the best)\n"
          "options (compare):\n"
          "  --max-kld X          exit 1 when the mean KLD is above X\n"
          "  --min-top1 P         exit 1 when top-1 agreement is below P percent\n"
          "  -h, --help           show this help\n"
          "\n"
          "Exit status: 0 success (gates met), 1 failure or a gate violated, 2 bad command line.\n",
          out);
}

/* ---- compare -------------------------------------------------------------------------- */

static int compare(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "logits compare", usage);
    cli_set_command("logits compare"); /* every message: "plumb logits compare: ..." */
    const char *pos[2] = {NULL, NULL};
    int n_pos = 0;
    double max_kld = -1, min_top1 = -1;
    for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
        const char *v;
        if (k == CLI_ARG_POSITIONAL) {
            if (n_pos == 2) return cli_usage_error(&a, "unexpected argument '%s'", a.arg);
            pos[n_pos++] = a.arg;
            continue;
        }
        if (cli_is_help(&a)) return cli_help(&a);
        int rc;
        if (cli_is(&a, NULL, "--max-kld")) {
            if (!(v = cli_value(&a))) return CLI_EXIT_USAGE;
            if ((rc = cli_parse_f64(&a, v, 0, INFINITY, &max_kld))) return rc;
        } else if (cli_is(&a, NULL, "--min-top1")) {
            if (!(v = cli_value(&a))) return CLI_EXIT_USAGE;
            if ((rc = cli_parse_f64(&a, v, 0, 100, &min_top1))) return rc;
        } else {
            return cli_unknown_option(&a);
        }
    }
    if (n_pos != 2)
        return cli_usage_error(&a, "expected A.logits B.logits, got %d file%s", n_pos,
                               n_pos == 1 ? "" : "s");
    pl_error err;
    pl_logits *la = NULL, *lb = NULL;
    pl_logits_stats s;
    pl_status st;
    int rc = CLI_EXIT_OK;
    if ((st = pl_logits_read(&la, pos[0], &err)) || (st = pl_logits_read(&lb, pos[1], &err)) ||
        (st = pl_logits_compare(la, lb, &s, NULL, 0, &err))) {
        rc = cli_fail(st, &err);
        goto out;
    }
    logits_report_file(stdout, "A", pos[0], la);
    logits_report_file(stdout, "B", pos[1], lb);
    if (s.tokenizer_match == 0) cli_warnf("the tokenizer hashes differ (same token ids, though)");
    logits_report_stats(stdout, &s, la);
    if (max_kld >= 0 && !(s.kld_mean <= max_kld))
        rc = cli_errorf("mean KLD %.6g is above --max-kld %g", s.kld_mean, max_kld);
    if (min_top1 >= 0 && !(s.top1_agree * 100 >= min_top1))
        rc = cli_errorf("top-1 agreement %.4g %% is below --min-top1 %g %%", s.top1_agree * 100,
                        min_top1);
out:
    pl_logits_free(la);
    pl_logits_free(lb);
    return rc;
}

/* ---- evaluate ------------------------------------------------------------------------- */

typedef struct logits_opts {
    const char *model, *output;
    cli_text_opts text;
    cli_engine_opts eng;
    int64_t ctx;
    int last, all; /* --last, --all: one of them at most */
} logits_opts;

/* One option of the command line (cli_parse_options). */
static int option(cli_args *a, void *user)
{
    logits_opts *o = user;
    if (cli_is(a, NULL, "--all") || cli_is(a, NULL, "--last")) {
        if (cli_reject_value(a)) return CLI_EXIT_USAGE;
        if (cli_is(a, NULL, "--last"))
            o->last = 1;
        else
            o->all = 1;
        if (o->last && o->all) return cli_usage_error(a, "give --all or --last, not both");
        return 0;
    }
    const char *v = cli_value_ahead(a);
    int rc = 0;
    if (cli_is(a, "-m", "--model"))
        o->model = v;
    else if (cli_text_option(a, v, &o->text, &rc))
        ;
    else if (cli_is(a, "-o", "--output"))
        o->output = v;
    else if (cli_engine_option(a, v, &o->eng, &rc))
        ;
    else if (cli_is(a, "-c", "--ctx"))
        rc = cli_parse_i64(a, v, 1, INT32_MAX / 2, &o->ctx);
    else
        return CLI_OPTION_UNKNOWN;
    return rc;
}

static int parse(int argc, char **argv, logits_opts *o)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "logits", usage);
    int rc = cli_parse_options(&a, NULL, option, o);
    if (rc) return rc;
    if (!o->model) return cli_usage_error(&a, "no model: give -m FILE");
    if (!o->output) return cli_usage_error(&a, "no output: give -o OUT.logits");
    if (cli_text_sources(&o->text) != 1)
        return cli_usage_error(&a, "give exactly one text: -p TEXT, -f FILE or --tokens LIST");
    return 0;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int evaluate(int argc, char **argv)
{
    logits_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) {
        free(o.text.tokens);
        return rc >= 100 ? rc - 100 : rc;
    }
    pl_error err;
    pl_model *m = NULL;
    pl_session *s = NULL;
    run_text *text = NULL;
    float *logits = NULL;
    pl_status st;
    if ((rc = cli_check_output(o.output))) goto out;
    if ((st = pl_model_load(&m, o.model, NULL, &err))) goto fail;
    pl_model_info info;
    if ((st = pl_model_get_info(m, &info, &err))) goto fail;
    if (!o.text.tokens) {
        if ((st = run_text_new(&text, m, 0, NULL, 0, &err))) goto fail;
        st =
            o.text.prompt
                ? run_text_tokenize(text, o.text.prompt, &o.text.tokens, &o.text.n_tokens, &err)
                : run_text_tokenize_file(text, o.text.file, &o.text.tokens, &o.text.n_tokens, &err);
        if (st) goto fail;
    }
    if (o.text.n_tokens == 0) {
        rc = cli_errorf("the text is empty (no tokens)");
        goto out;
    }
    for (int64_t i = 0; i < o.text.n_tokens; i++)
        if (o.text.tokens[i] >= info.n_vocab) {
            rc = cli_errorf("token %lld is %d, outside the vocabulary [0, %lld)", (long long)i,
                            o.text.tokens[i], (long long)info.n_vocab);
            goto out;
        }
    uint64_t hash = 0;
    if ((st = pl_logits_tokenizer_hash(pl_model_gguf(m), &hash, &err))) goto fail;

    pl_session_params sp = pl_session_default_params(m);
    sp.n_threads = (int)o.eng.threads;
    sp.context_window = o.ctx ? o.ctx : o.text.n_tokens;
    if (o.eng.kv) sp.kv_type = strcmp(o.eng.kv, "f32") == 0 ? PL_TYPE_F32 : PL_TYPE_F16;
    sp.kernels = o.eng.kernels;
    if (o.text.n_tokens > sp.context_window) {
        rc = cli_errorf("the text is %lld token%s; the context (-c) is %lld: raise -c or shorten "
                        "the text",
                        (long long)o.text.n_tokens, cli_s(o.text.n_tokens),
                        (long long)sp.context_window);
        goto out;
    }
    if ((st = pl_session_new(&s, m, &sp, &err))) goto fail;
    int64_t rows = o.last ? 1 : o.text.n_tokens;
    logits = malloc((size_t)rows * (size_t)info.n_vocab * sizeof *logits);
    if (!logits) {
        rc = cli_errorf("out of memory for %lld x %lld logits", (long long)rows,
                        (long long)info.n_vocab);
        goto out;
    }
    if ((st = pl_session_eval(s, o.text.tokens, o.text.n_tokens, logits,
                              o.last ? 0 : PL_EVAL_ALL_LOGITS, &err)))
        goto fail;
    pl_logits l = {.n_vocab = info.n_vocab,
                   .n_tokens = o.text.n_tokens,
                   .first_row = o.text.n_tokens - rows,
                   .n_rows = rows,
                   .tokenizer_hash = hash,
                   .model_name = base_name(o.model),
                   .tokens = o.text.tokens,
                   .logits = logits};
    if ((st = pl_logits_write(&l, o.output, &err))) goto fail;
    fprintf(stderr,
            "wrote %s: %lld tokens, rows [%lld, %lld), vocab %lld, tokenizer %016" PRIx64 "\n",
            o.output, (long long)o.text.n_tokens, (long long)l.first_row,
            (long long)o.text.n_tokens, (long long)info.n_vocab, hash);
    rc = CLI_EXIT_OK;
    goto out;
fail:
    rc = cli_fail(st, &err);
out:
    free(logits);
    free(o.text.tokens);
    run_text_free(text);
    pl_session_free(s);
    pl_model_free(m);
    return rc;
}

int cmd_logits(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "compare") == 0) return compare(argc - 1, argv + 1);
    return evaluate(argc, argv);
}
