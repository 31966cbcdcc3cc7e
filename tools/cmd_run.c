/* cmd_run.c — `plumb run`: load a model, prefill a prompt, generate N tokens, report
 * load time, prefill and decode speed, and memory. Not a chat: one prompt, one answer. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run_text.h"

static void usage(FILE *out)
{
    fputs("usage: plumb run -m FILE (-p TEXT | -f FILE | --tokens ID,ID,...) [options]\n"
          "\n"
          "Evaluates the prompt, then generates tokens, printing them as they come, and\n"
          "reports load time, prefill and decode speed (tokens/s) and memory.\n"
          "\n"
          "options:\n",
          out);
    cli_put_model_option(out);
    fputs("  -p, --prompt TEXT        prompt text (tokenized with the model's tokenizer)\n"
          "  -f, --file FILE          read the prompt from FILE ('-': standard input)\n"
          "  --tokens LIST            prompt as token ids, comma-separated\n"
          "  --chat                   the prompt is a user message: rendered with the chat\n"
          "                           template and the assistant's opening, then generated\n"
          "  --system TEXT            with --chat: a system message before it\n"
          "  --chat-template-file FILE\n"
          "                           with --chat: the template as Jinja source (default: the\n"
          "                           model's own tokenizer.chat_template)\n"
          "  --chat-template NAME     with --chat: a built-in template instead (chatml, qwen2,\n"
          "                           qwen2.5, llama3, llama2, mistral)\n"
          "  -n, --n-predict N        tokens to generate (default 32; 0: prefill only; -1: until\n"
          "                           end of generation or a full context)\n"
          "  --temp F                 temperature (default 0.8; 0: greedy)\n"
          "  --top-k N                top-k (default 40; 0: off)\n"
          "  --top-p F                top-p (default 0.95; 1: off)\n"
          "  --min-p F                min-p (default 0.05; 0: off)\n"
          "  --repeat-penalty F       repetition penalty (default 1.0: off)\n"
          "  --presence-penalty F     presence penalty (default 0: off)\n"
          "  --frequency-penalty F    frequency penalty (default 0: off)\n"
          "  --repeat-last-n N        tokens the penalties look back over (default 64; 0: off;\n"
          "                           -1: the context size)\n"
          "  -s, --seed N             sampler seed (default -1: a random seed, printed)\n"
          "  -r, --reverse-prompt S, --stop S\n"
          "                           stop before the text S (not printed); repeatable\n"
          "  -t, --threads N          threads (default: PLUMB_THREADS, else physical cores)\n"
          "  -c, --ctx N              context window in tokens (default min(train, 4096))\n"
          "  --sliding-window N       sliding window instead of a context window\n"
          "  --sinks N                attention sinks kept by the sliding window (default 4)\n"
          "  --chunk N                prefill chunk in tokens (default 256)\n"
          "  --kv-type f16|f32        KV cache element type (default f16)\n"
          "  --kernels NAME           kernel set (default: PLUMB_KERNELS, else the best)\n"
          "  --no-repack              run every weight from the mapping (no repacked copies)\n"
          "  --ignore-eos             never draw an end-of-generation token (generate to -n)\n"
          "  --special                print control tokens (<|endoftext|>, ...) as their text\n"
          "  -v, --verbose            also print the CPU topology and thread binding\n"
          "  -h, --help               show this help\n"
          "\n"
          "At the end it says why generation stopped: end of generation, -n, a full context,\n"
          "a stop string or Ctrl-C (then the exit status is 130, after the timings).\n",
          out);
}

/* Ctrl-C: ends the generation after the token being drawn; the stop line and timings follow. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct run_opts {
    const char *model, *system;
    cli_text_opts text;
    int64_t n_predict;
    int ignore_eos, verbose, no_repack, special, chat;
    cli_tmpl_opts tmpl;
    cli_gen_opts g;
} run_opts;

/* One option of the command line (cli_parse_options). */
static int option(cli_args *a, void *user)
{
    run_opts *o = user;
    const char *v = cli_value_ahead(a);
    int rc = 0;
    if (cli_is(a, "-m", "--model"))
        o->model = v;
    else if (cli_text_option(a, v, &o->text, &rc))
        ;
    else if (cli_is(a, NULL, "--system"))
        o->system = v;
    else if (cli_tmpl_option(a, v, &o->tmpl, &rc))
        ;
    else if (cli_is(a, "-n", "--n-predict"))
        rc = cli_parse_i64(a, v, -1, 1 << 30, &o->n_predict);
    else if (cli_gen_option(a, v, &o->g, &rc))
        ;
    else
        return CLI_OPTION_UNKNOWN;
    return rc;
}

static int parse(int argc, char **argv, run_opts *o)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "run", usage);
    const cli_flag flags[] = {
        {NULL, "--ignore-eos", &o->ignore_eos},
        {"-v", "--verbose", &o->verbose},
        {NULL, "--no-repack", &o->no_repack},
        {NULL, "--special", &o->special},
        {NULL, "--chat", &o->chat},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_options(&a, flags, option, o);
    if (rc) return rc;
    if (!o->model) return cli_usage_error(&a, "no model: give -m FILE");
    rc = cli_gen_check(&a, &o->g);
    if (rc) return rc;
    int sources = cli_text_sources(&o->text);
    if (sources != 1)
        return cli_usage_error(&a, "give exactly one prompt: -p TEXT, -f FILE or --tokens LIST");
    if (!o->chat && (o->system || o->tmpl.name || o->tmpl.file))
        return cli_usage_error(&a, "--system and the chat template options need --chat");
    if (o->chat && o->text.tokens)
        return cli_usage_error(&a, "--chat renders text: give -p TEXT or -f FILE, not --tokens");
    return 0;
}

static void print_size(const char *label, uint64_t bytes)
{
    char b[32];
    cli_format_size(b, sizeof b, bytes);
    fprintf(stderr, "%s%s", label, b);
}

int cmd_run(int argc, char **argv)
{
    run_opts o = {.n_predict = 32, .g = cli_gen_defaults()};
    int rc = parse(argc, argv, &o);
    if (rc) {
        free(o.text.tokens);
        return rc >= 100 ? rc - 100 : rc;
    }
    /* the prompt file before the model's load, named as typed */
    if (o.text.file && strcmp(o.text.file, "-") != 0 && cli_check_input(o.text.file))
        return CLI_EXIT_FAIL;
    pl_error err;
    pl_model *m = NULL;
    pl_session *s = NULL;
    pl_sampler *smp = NULL;
    run_text *text = NULL;
    pl_chat_template *tmpl = NULL;
    float *logits = NULL;
    int32_t *hist = NULL;
    struct sigaction old_int;
    int sig_set = 0;

    double t0 = pl_clock_s();
    /* The repacked layouts built at load are those of the set the session will use. */
    const pl_model_params mp = {.flags = o.no_repack ? PL_MODEL_NO_REPACK : 0u,
                                .kernels = o.g.kernels};
    pl_status st = pl_model_load(&m, o.model, &mp, &err);
    if (st) goto fail;
    double t_load = pl_clock_s() - t0;
    pl_model_info info;
    pl_model_get_info(m, &info, NULL);

    if ((st = run_text_new(&text, m, o.special, o.g.stops, o.g.n_stops, &err))) goto fail;
    if (o.chat) {
        char desc[128];
        if ((rc = cli_tmpl_load(m, o.model, &o.tmpl, 1, &tmpl, desc, sizeof desc))) goto out;
        fprintf(stderr, "chat template: %s\n", desc);
        st = run_text_tokenize_chat(text, tmpl, o.system, o.text.prompt, o.text.file,
                                    &o.text.tokens, &o.text.n_tokens, &err);
        if (st) goto fail;
    } else if (!o.text.tokens) {
        st =
            o.text.prompt
                ? run_text_tokenize(text, o.text.prompt, &o.text.tokens, &o.text.n_tokens, &err)
                : run_text_tokenize_file(text, o.text.file, &o.text.tokens, &o.text.n_tokens, &err);
        if (st) goto fail;
    }
    if (o.text.n_tokens == 0) {
        rc = cli_errorf("the prompt is empty (no tokens)");
        goto out;
    }

    pl_session_params sp = cli_gen_session(&o.g, m);
    cli_gen_warn_ctx(&o.g, m);
    if ((st = pl_session_new(&s, m, &sp, &err))) goto fail;
    pl_session_info si;
    pl_session_get_info(s, &si, NULL);
    if (sp.context_window > 0 && o.text.n_tokens > sp.context_window) {
        rc = cli_errorf("the prompt is %lld token%s; the context (-c) is %lld: raise -c or "
                        "shorten the prompt",
                        (long long)o.text.n_tokens, cli_s(o.text.n_tokens),
                        (long long)sp.context_window);
        goto out;
    }
    pl_sampler_params smp_params = cli_gen_sampler(&o.g, si.kv_capacity);
    if ((st = pl_sampler_new(&smp, m, &smp_params, &err))) goto fail;

    double mparams = (double)info.n_params * 1e-6;
    fprintf(stderr, "model: %s, %lld layers, n_embd %lld, vocab %lld, %.2f %s params\n", info.arch,
            (long long)info.n_layer, (long long)info.n_embd, (long long)info.n_vocab,
            mparams >= 1000 ? mparams * 1e-3 : mparams, mparams >= 1000 ? "B" : "M");
    fprintf(stderr, "load: %.3f s; ", t_load);
    print_size("weights ", info.weight_bytes);
    print_size(" (mapped), KV cache ", si.kv_bytes);
    print_size(", scratch ", si.scratch_bytes);
    fprintf(stderr, "; %d threads, kernels %s", si.n_threads, si.kernels);
    if (si.repacked) {
        fprintf(stderr, "; %d weights repacked (", info.n_repacked);
        print_size("", info.repack_bytes);
        fprintf(stderr, ", %.0f ms)", info.repack_ms);
    }
    fputc('\n', stderr);
    fprintf(stderr, "seed: %lld (-s %lld repeats this run)\n", (long long)o.g.seed,
            (long long)o.g.seed);
    if (o.verbose) {
        char report[4096];
        pl_session_threads_report(s, 0, report, sizeof report, NULL, NULL);
        fprintf(stderr, "%s", report);
    }

    /* -n -1: until the end of generation or, with a context window, a full one. */
    int64_t n_predict = o.n_predict >= 0 ? o.n_predict : INT64_MAX;
    int64_t n_hist_cap = o.text.n_tokens + 1 + (o.n_predict >= 0 ? o.n_predict : si.kv_capacity);
    logits = malloc((size_t)info.n_vocab * sizeof *logits);
    hist = malloc((size_t)n_hist_cap * sizeof *hist);
    if (!logits || !hist) {
        rc = cli_errorf("out of memory");
        goto out;
    }
    memcpy(hist, o.text.tokens, (size_t)o.text.n_tokens * sizeof *hist);
    /* --ignore-eos: the end-of-generation ids, whose logits become -inf before every draw. */
    int32_t eog[16];
    int n_eog = 0;
    for (int32_t i = 0; o.ignore_eos && i < info.n_vocab && n_eog < 16; i++)
        if (run_text_is_eog(text, i)) eog[n_eog++] = i;
    int64_t n_hist = o.text.n_tokens;

    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sig_set = 1;
    double t1 = pl_clock_s();
    if ((st = pl_session_eval(s, o.text.tokens, o.text.n_tokens, logits, 0, &err))) goto fail;
    double t_prefill = pl_clock_s() - t1;
    if ((st = run_text_echo_prompt(text, o.text.tokens, o.text.n_tokens, &err))) goto fail;

    int64_t n_gen = 0;
    pl_stop_reason why = PL_STOP_NONE;
    double t2 = pl_clock_s();
    while (n_gen < n_predict) {
        int32_t tok;
        if (interrupted) {
            why = PL_STOP_CANCELLED;
            break;
        }
        for (int i = 0; i < n_eog; i++) logits[eog[i]] = -INFINITY;
        if ((st = pl_sampler_sample(smp, logits, hist, n_hist, &tok, &err))) goto fail;
        if (n_hist == n_hist_cap) { /* -n -1 with a sliding window: keep the recent history */
            memmove(hist, hist + n_hist_cap / 2,
                    (size_t)(n_hist_cap - n_hist_cap / 2) * sizeof *hist);
            n_hist -= n_hist_cap / 2;
        }
        hist[n_hist++] = tok;
        n_gen++;
        if (run_text_is_eog(text, tok)) { /* with --ignore-eos: only if every logit is -inf */
            why = PL_STOP_EOG;
            if (o.special && (st = run_text_emit(text, tok, &err))) goto fail;
            break;
        }
        if ((st = run_text_emit(text, tok, &err))) goto fail;
        if (run_text_stopped(text)) {
            why = PL_STOP_STRING;
            break;
        }
        if (n_gen == n_predict) {
            why = PL_STOP_MAX_TOKENS;
            break;
        }
        st = pl_session_eval(s, &tok, 1, logits, 0, &err);
        if (st == PL_ERR_CONTEXT_FULL) {
            why = PL_STOP_CONTEXT_FULL;
            break;
        }
        if (st) goto fail;
    }
    if (why == PL_STOP_NONE && o.n_predict == 0) why = PL_STOP_MAX_TOKENS;
    double t_decode = pl_clock_s() - t2;
    run_text_finish(text);

    fprintf(stderr, "\nprefill: %lld token%s in %.3f s = %.2f tok/s\n", (long long)o.text.n_tokens,
            cli_s(o.text.n_tokens), t_prefill, (double)o.text.n_tokens / t_prefill);
    if (n_gen > 1)
        fprintf(stderr, "decode:  %lld token%s in %.3f s = %.2f tok/s\n", (long long)(n_gen - 1),
                cli_s(n_gen - 1), t_decode, (double)(n_gen - 1) / t_decode);
    switch (why) {
    case PL_STOP_EOG:
        fprintf(stderr, "stopped: end of generation (the model's end token) after %lld token%s\n",
                (long long)n_gen, cli_s(n_gen));
        break;
    case PL_STOP_STRING:
        fprintf(stderr, "stopped: a stop string (--stop) after %lld token%s\n", (long long)n_gen,
                cli_s(n_gen));
        break;
    case PL_STOP_CONTEXT_FULL:
        fprintf(stderr, "stopped: the context is full (-c %lld) after %lld token%s\n",
                (long long)si.kv_capacity, (long long)n_gen, cli_s(n_gen));
        break;
    case PL_STOP_CANCELLED:
        fprintf(stderr, "stopped: interrupted (Ctrl-C) after %lld token%s\n", (long long)n_gen,
                cli_s(n_gen));
        break;
    default:
        fprintf(stderr, "stopped: %lld token%s generated (-n %lld)\n", (long long)n_gen,
                cli_s(n_gen), (long long)o.n_predict);
    }
    rc = why == PL_STOP_CANCELLED ? CLI_EXIT_INTERRUPTED : CLI_EXIT_OK;
    goto out;
fail:
    rc = cli_fail(st, &err);
out:
    if (sig_set) sigaction(SIGINT, &old_int, NULL);
    free(logits);
    free(hist);
    free(o.text.tokens);
    run_text_free(text);
    pl_chat_template_free(tmpl);
    pl_sampler_free(smp);
    pl_session_free(s);
    pl_model_free(m);
    return cli_finish(rc);
}
