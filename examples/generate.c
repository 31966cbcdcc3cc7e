/* generate.c — the smallest text generator on libplumb: streams a prompt's continuation to
 * stdout, then the stop reason and speed to stderr. Not a CLI: `plumb run` has the options. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plumb.h>

/* pl_text_fn: each call is whole UTF-8 characters, so it can go straight to the terminal. */
static int print_text(void *user, const char *text, size_t len)
{
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0; /* nonzero would cancel the generation */
}

int main(int argc, char **argv)
{
    long n_tokens = 64;
    char *end = NULL;
    if (argc == 4) n_tokens = strtol(argv[3], &end, 10);
    if (argc < 3 || argc > 4 || (end && (*end != '\0' || end == argv[3])) || n_tokens < 0) {
        fprintf(stderr, "usage: generate MODEL.gguf \"prompt\" [n_tokens (default 64)]\n");
        return 2;
    }
    const char *prompt = argv[2];

    pl_error err = {PL_OK, ""};
    pl_model *model = NULL;
    pl_session *s = NULL; /* the KV cache and the history it holds */
    pl_sampler *sampler = NULL;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    pl_gen_stats stats = {0};

    pl_status st = pl_model_load(&model, argv[1], NULL, &err);
    if (st == PL_OK) {
        pl_session_params sp = pl_session_default_params(model);
        st = pl_session_new(&s, model, &sp, &err);
    }
    /* Ask for the token count first (a too-small buffer says the size needed), then tokenize. */
    if (st == PL_OK) {
        st = pl_tokenize(model, prompt, strlen(prompt), PL_TOKENIZE_ADD_BOS, NULL, 0, &n_ids, &err);
        if (st == PL_ERR_BUFFER_TOO_SMALL) st = PL_OK;
    }
    if (st == PL_OK && !(ids = malloc((n_ids ? n_ids : 1) * sizeof *ids))) {
        st = PL_ERR_NOMEM;
        snprintf(err.msg, sizeof err.msg, "%zu prompt tokens", n_ids);
    }
    if (st == PL_OK)
        st = pl_tokenize(model, prompt, strlen(prompt), PL_TOKENIZE_ADD_BOS, ids, n_ids, &n_ids,
                         &err);
    if (st == PL_OK) {
        pl_sampler_params smp = pl_sampler_default_params();
        st = pl_sampler_new(&sampler, model, &smp, &err);
    }
    if (st == PL_OK) {
        pl_gen_params gp = pl_gen_default_params();
        gp.max_tokens = n_tokens;
        st = pl_generate(s, ids, (int64_t)n_ids, sampler, &gp, print_text, NULL, &stats, &err);
    }

    if (st == PL_OK) {
        fprintf(stderr,
                "\nstop: %s\n"
                "prompt %lld tokens, prefill %.1f ms, ttft %.1f ms; "
                "%lld tokens generated, %.1f tok/s\n",
                pl_stop_reason_str(stats.stop), (long long)stats.n_prompt, stats.prefill_ms,
                stats.ttft_ms, (long long)stats.n_generated, stats.decode_tps);
    } else {
        fprintf(stderr, "generate: %s: %s\n", pl_status_str(st), err.msg);
    }
    free(ids);
    pl_sampler_free(sampler);
    pl_session_free(s);
    pl_model_free(model);
    return st == PL_OK ? 0 : 1;
}
