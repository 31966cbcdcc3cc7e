/* cmd_tokenize.c — `plumb tokenize`: text -> token ids and pieces with a model's vocabulary
 * (loaded vocab-only, so a GGUF holding only tokenizer metadata works). Like llama-tokenize;
 * not a benchmark (perf/bench_tokenize.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_tokenize(int argc, char **argv); /* declared in cli.h too */

static void usage(FILE *out)
{
    fputs("usage: plumb tokenize -m FILE [options] [TEXT]\n"
          "\n"
          "Tokenizes TEXT (or -f FILE, or standard input with -f -) with the model's vocabulary\n"
          "and prints one token per line: its id and its piece, as llama-tokenize does.\n"
          "\n"
          "options:\n"
          "  -m, --model FILE   GGUF file (only its tokenizer is loaded)\n"
          "  -f, --file FILE    read the text from FILE ('-': standard input)\n"
          "  --ids-only         print only the ids, as [1, 2, 3]\n"
          "  --batch            the input is NUL-terminated records (the last terminator may\n"
          "                     be left out), each tokenized on its own; prints one line per\n"
          "                     record: its ids separated by spaces, a tab, and the hex bytes\n"
          "                     of their detokenization (control tokens as their text)\n"
          "  --special          parse control tokens written in the text (<|im_start|>, <s>)\n"
          "  --no-bos           do not add the BOS/EOS tokens the vocabulary asks for\n"
          "  -h, --help         show this help\n",
          out);
}

/* Reads a whole file ("-" = stdin) into a malloc'ed buffer; NULL on failure. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *b = realloc(buf, cap *= 2);
        if (!b) free(buf);
        buf = b;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    if (f != stdin) fclose(f);
    *len = n;
    return buf;
}

/* One record: ids into *ids (grown as needed), then the line. */
static int batch_record(pl_model *m, const char *text, size_t len, uint32_t flags, int32_t **ids,
                        size_t *cap, char **buf, size_t *buf_cap)
{
    pl_error err;
    size_t n = 0, k = 0;
    pl_status s = pl_tokenize(m, text, len, flags, *ids, *cap, &n, &err);
    if (s == PL_ERR_BUFFER_TOO_SMALL) {
        int32_t *p = realloc(*ids, (n + 1) * sizeof *p);
        if (!p) return cli_errorf("no memory for %zu token ids", n);
        *ids = p;
        *cap = n + 1;
        s = pl_tokenize(m, text, len, flags, *ids, *cap, &n, &err);
    }
    if (!s) s = pl_detokenize(m, *ids, n, PL_DETOK_SPECIAL, *buf, *buf_cap, &k, &err);
    if (s == PL_ERR_BUFFER_TOO_SMALL) {
        char *p = realloc(*buf, k + 1);
        if (!p) return cli_errorf("no memory for %zu bytes of text", k);
        *buf = p;
        *buf_cap = k + 1;
        s = pl_detokenize(m, *ids, n, PL_DETOK_SPECIAL, *buf, *buf_cap, &k, &err);
    }
    if (s) return cli_fail(s, &err);
    for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (*ids)[i]);
    putchar('\t');
    for (size_t i = 0; i < k; i++) printf("%02x", (unsigned char)(*buf)[i]);
    putchar('\n');
    return CLI_EXIT_OK;
}

/* --batch: each NUL-terminated record of text on its own line. */
static int run_batch(pl_model *m, const char *text, size_t len, uint32_t flags)
{
    int32_t *ids = NULL;
    char *buf = NULL;
    size_t cap = 0, buf_cap = 0;
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < len && rc == CLI_EXIT_OK;) {
        const char *end = memchr(text + i, 0, len - i);
        size_t n = end ? (size_t)(end - (text + i)) : len - i;
        rc = batch_record(m, text + i, n, flags, &ids, &cap, &buf, &buf_cap);
        i += n + 1;
    }
    free(ids);
    free(buf);
    return rc;
}

int cmd_tokenize(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "tokenize", usage);
    const char *model = NULL, *file = NULL, *text = NULL;
    int ids_only = 0, special = 0, no_bos = 0, batch = 0;
    for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
        if (k == CLI_ARG_POSITIONAL) {
            if (text) return cli_usage_error(&a, "more than one TEXT (quote the text)");
            text = a.arg;
            continue;
        }
        if (cli_is_help(&a)) return cli_help(&a);
        if (cli_is(&a, "-m", "--model")) {
            if (!(model = cli_value(&a))) return CLI_EXIT_USAGE;
        } else if (cli_is(&a, "-f", "--file")) {
            if (!(file = cli_value(&a))) return CLI_EXIT_USAGE;
        } else if (cli_is(&a, NULL, "--ids-only")) {
            if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
            ids_only = 1;
        } else if (cli_is(&a, NULL, "--batch")) {
            if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
            batch = 1;
        } else if (cli_is(&a, NULL, "--special")) {
            if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
            special = 1;
        } else if (cli_is(&a, NULL, "--no-bos")) {
            if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
            no_bos = 1;
        } else {
            return cli_unknown_option(&a);
        }
    }
    if (!model) return cli_usage_error(&a, "-m FILE is required");
    if (!text == !file) return cli_usage_error(&a, "give either TEXT or -f FILE");

    size_t len = 0;
    char *owned = NULL;
    if (file) {
        if (!(owned = read_all(file, &len))) return cli_errorf("cannot read '%s'", file);
        text = owned;
    } else {
        len = strlen(text);
    }
    pl_model *m = NULL;
    pl_error err;
    pl_model_params params = {.flags = PL_MODEL_VOCAB_ONLY};
    int32_t *ids = NULL;
    int rc = CLI_EXIT_OK;
    pl_status s = pl_model_load(&m, model, &params, &err);
    uint32_t flags = (no_bos ? 0 : PL_TOKENIZE_ADD_BOS) | (special ? PL_TOKENIZE_PARSE_SPECIAL : 0);
    size_t n = 0;
    if (!s && batch) {
        rc = run_batch(m, text, len, flags);
        free(owned);
        pl_model_free(m);
        return cli_finish(rc);
    }
    if (!s) {
        s = pl_tokenize(m, text, len, flags, NULL, 0, &n, &err); /* size query */
        if (s == PL_ERR_BUFFER_TOO_SMALL) {
            ids = malloc((n ? n : 1) * sizeof *ids);
            s = ids ? pl_tokenize(m, text, len, flags, ids, n, &n, &err) : PL_ERR_NOMEM;
            if (!ids) snprintf(err.msg, sizeof err.msg, "no memory for %zu token ids", n);
        }
    }
    if (s) {
        rc = cli_fail(s, &err);
    } else if (ids_only) {
        putchar('[');
        for (size_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
        puts("]");
    } else {
        char piece[65536]; /* tokens are at most a few KB */
        for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
            size_t k;
            s = pl_token_to_piece(m, ids[i], PL_DETOK_SPECIAL, piece, sizeof piece, &k, &err);
            if (s) {
                rc = cli_fail(s, &err);
                break;
            }
            printf("%6d -> '", ids[i]);
            cli_put_escaped(stdout, piece, k);
            puts("'");
        }
    }
    free(ids);
    free(owned);
    pl_model_free(m);
    return cli_finish(rc);
}
