/* run_text.c — token ids in and out for `plumb run` on models without a tokenizer.
 * Not a tokenizer: models with one get text through the library's tokenizer API. */
#include <stdio.h>
#include <stdlib.h>

#include "run_text.h"

struct run_text {
    const pl_model *m;
    int64_t printed;
};

pl_status run_text_new(run_text **out, const pl_model *m, pl_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out) {
        if (err) snprintf(err->msg, sizeof err->msg, "out of memory");
        return PL_ERR_NOMEM;
    }
    (*out)->m = m;
    return PL_OK;
}

void run_text_free(run_text *t)
{
    free(t);
}

static pl_status no_tokenizer(pl_error *err)
{
    if (err) {
        err->code = PL_ERR_UNSUPPORTED;
        snprintf(err->msg, sizeof err->msg,
                 "text prompts need the tokenizer, which this build lacks: use --tokens ID,ID,...");
    }
    return PL_ERR_UNSUPPORTED;
}

pl_status run_text_tokenize(run_text *t, const char *text, int32_t **out, int64_t *n, pl_error *err)
{
    (void)t, (void)text, (void)out, (void)n;
    return no_tokenizer(err);
}

pl_status run_text_tokenize_file(run_text *t, const char *path, int32_t **out, int64_t *n,
                                 pl_error *err)
{
    (void)t, (void)path, (void)out, (void)n;
    return no_tokenizer(err);
}

pl_status run_text_echo_prompt(run_text *t, const int32_t *tok, int64_t n, pl_error *err)
{
    (void)err;
    for (int64_t i = 0; i < n; i++) printf("%s%d", i ? " " : "", tok[i]);
    printf(" |");
    t->printed = n;
    fflush(stdout);
    return PL_OK;
}

pl_status run_text_emit(run_text *t, int32_t tok, pl_error *err)
{
    (void)err;
    printf(" %d", tok);
    t->printed++;
    fflush(stdout);
    return PL_OK;
}

int run_text_is_eog(const run_text *t, int32_t tok)
{
    (void)t, (void)tok;
    return 0;
}

void run_text_finish(run_text *t)
{
    (void)t;
    printf("\n");
    fflush(stdout);
}
