/* run_text.c — the text side of `plumb run`: prompt tokenization through the model's
 * tokenizer and streaming output through pl_detok; token ids when there is no tokenizer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hold.h"
#include "run_text.h"

struct run_text {
    const pl_model *m;
    pl_detok *detok; /* NULL when the model has no tokenizer: ids are printed */
    hold stops;      /* the generated text passes through it (--stop) */
    int generating;  /* 1 after the prompt was echoed */
};

static pl_status fail(pl_error *err, pl_status code, const char *msg)
{
    if (err) {
        err->code = code;
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    return code;
}

pl_status run_text_new(run_text **out, const pl_model *m, int special, const char *const *stops,
                       size_t n_stops, pl_error *err)
{
    *out = NULL;
    run_text *t = calloc(1, sizeof *t);
    if (!t) return fail(err, PL_ERR_NOMEM, "out of memory");
    t->m = m;
    if (hold_init(&t->stops, HOLD_STOP, stops, n_stops)) {
        run_text_free(t);
        return fail(err, PL_ERR_NOMEM, "out of memory");
    }
    if (pl_vocab_n_tokens(m) > 0) {
        pl_status st = pl_detok_new(&t->detok, m, special ? PL_DETOK_SPECIAL : 0u, err);
        if (st) {
            run_text_free(t);
            return st;
        }
    } else if (n_stops) {
        run_text_free(t);
        return fail(err, PL_ERR_UNSUPPORTED,
                    "--stop needs text: this model has no tokenizer (no tokenizer.ggml.model)");
    }
    *out = t;
    return PL_OK;
}

void run_text_free(run_text *t)
{
    if (!t) return;
    pl_detok_free(t->detok);
    hold_free(&t->stops);
    free(t);
}

static pl_status tokenize_flags(run_text *t, const char *text, size_t len, uint32_t flags,
                                int32_t **out, int64_t *n, pl_error *err)
{
    if (!t->detok)
        return fail(err, PL_ERR_UNSUPPORTED,
                    "this model has no tokenizer (no tokenizer.ggml.model): use --tokens ID,...");
    size_t need = 0;
    /* Ask for the size first: the library says how many ids the text needs. */
    pl_status st = pl_tokenize(t->m, text, len, flags, NULL, 0, &need, err);
    if (st && st != PL_ERR_BUFFER_TOO_SMALL) return st;
    int32_t *ids = malloc((need ? need : 1) * sizeof *ids);
    if (!ids) return fail(err, PL_ERR_NOMEM, "out of memory for the prompt's tokens");
    if ((st = pl_tokenize(t->m, text, len, flags, ids, need, &need, err))) {
        free(ids);
        return st;
    }
    *out = ids;
    *n = (int64_t)need;
    return PL_OK;
}

static pl_status tokenize_bytes(run_text *t, const char *text, size_t len, int32_t **out,
                                int64_t *n, pl_error *err)
{
    return tokenize_flags(t, text, len, PL_TOKENIZE_ADD_BOS, out, n, err);
}

pl_status run_text_tokenize(run_text *t, const char *text, int32_t **out, int64_t *n, pl_error *err)
{
    return tokenize_bytes(t, text, strlen(text), out, n, err);
}

/* The file's bytes ("-": standard input), NUL-terminated, in a malloc'd buffer. Errors name
 * the file and the reason. */
static pl_status read_file(const char *path, char **out, size_t *out_len, pl_error *err)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "standard input" : path;
    char msg[256];
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(msg, sizeof msg, "cannot read the prompt file '%s': %s", name, strerror(errno));
        return fail(err, PL_ERR_IO, msg);
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    errno = 0;
    for (size_t got; buf && (got = fread(buf + len, 1, cap - 1 - len, f)) > 0;) {
        len += got;
        if (len == cap - 1) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    int bad = ferror(f), e = errno;
    if (!is_stdin) fclose(f);
    if (!buf) {
        snprintf(msg, sizeof msg, "out of memory reading the prompt file '%s'", name);
        return fail(err, PL_ERR_NOMEM, msg);
    }
    if (bad) {
        free(buf);
        snprintf(msg, sizeof msg, "cannot read the prompt file '%s': %s", name,
                 e ? strerror(e) : "read error");
        return fail(err, PL_ERR_IO, msg);
    }
    buf[len] = 0;
    *out = buf;
    *out_len = len;
    return PL_OK;
}

pl_status run_text_tokenize_file(run_text *t, const char *path, int32_t **out, int64_t *n,
                                 pl_error *err)
{
    char *buf;
    size_t len;
    pl_status st = read_file(path, &buf, &len, err);
    if (st) return st;
    st = tokenize_bytes(t, buf, len, out, n, err);
    free(buf);
    return st;
}

pl_status run_text_tokenize_chat(run_text *t, const pl_chat_template *tmpl, const char *system,
                                 const char *text, const char *path, int32_t **out, int64_t *n,
                                 pl_error *err)
{
    char *file = NULL, *prompt = NULL;
    size_t len = 0;
    pl_status st = path ? read_file(path, &file, &len, err) : PL_OK;
    if (st) return st;
    pl_chat_message msgs[2];
    size_t k = 0;
    if (system) msgs[k++] = (pl_chat_message){"system", system};
    msgs[k++] = (pl_chat_message){"user", file ? file : text};
    st = pl_chat_render_with(t->m, tmpl, msgs, k, 1, NULL, 0, &len, err);
    if (st == PL_ERR_BUFFER_TOO_SMALL || st == PL_OK) {
        if (!(prompt = malloc(len + 1))) st = fail(err, PL_ERR_NOMEM, "out of memory");
        if (prompt) st = pl_chat_render_with(t->m, tmpl, msgs, k, 1, prompt, len + 1, &len, err);
    }
    if (!st) st = tokenize_flags(t, prompt, len, PL_TOKENIZE_PARSE_SPECIAL, out, n, err);
    free(prompt);
    free(file);
    return st;
}

/* Writes what the streaming decoder releases for tok (never half a character). */
static pl_status put_token(run_text *t, int32_t tok, pl_error *err)
{
    char buf[512];
    size_t n = 0;
    pl_status st = pl_detok_push(t->detok, tok, buf, sizeof buf, &n, err);
    if (st) return st;
    if (!t->generating) {
        fwrite(buf, 1, n, stdout);
    } else if (hold_push(&t->stops, stdout, buf, n) < 0) {
        return fail(err, PL_ERR_NOMEM, "out of memory holding back the text for --stop");
    }
    return PL_OK;
}

pl_status run_text_echo_prompt(run_text *t, const int32_t *tok, int64_t n, pl_error *err)
{
    for (int64_t i = 0; i < n; i++) {
        if (!t->detok) {
            printf("%s%d", i ? " " : "", tok[i]);
            continue;
        }
        pl_status st = put_token(t, tok[i], err);
        if (st) return st;
    }
    if (!t->detok) printf(" |");
    t->generating = 1;
    fflush(stdout);
    return PL_OK;
}

pl_status run_text_emit(run_text *t, int32_t tok, pl_error *err)
{
    if (!t->detok) {
        printf(" %d", tok);
    } else {
        pl_status st = put_token(t, tok, err);
        if (st) return st;
    }
    fflush(stdout);
    return PL_OK;
}

int run_text_stopped(const run_text *t)
{
    return t->stops.stopped;
}

int run_text_is_eog(const run_text *t, int32_t tok)
{
    return t->detok && pl_vocab_is_eog(t->m, tok);
}

void run_text_finish(run_text *t)
{
    if (t->detok) {
        char buf[64];
        size_t n = 0;
        if (pl_detok_flush(t->detok, buf, sizeof buf, &n, NULL) == PL_OK)
            hold_push(&t->stops, stdout, buf, n);
        hold_flush(&t->stops, stdout);
    }
    printf("\n");
    fflush(stdout);
}
