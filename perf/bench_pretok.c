/* bench_pretok.c — tokenization throughput per pre-tokenizer: GPT-2's byte-level vocabulary
 * (a tokenizer.json) under each pre-tokenizer of the table, encoding the held-out mixed-script
 * text, one encode per line; prints MB/s of the whole encode and of the pre-tokenizer alone, and an
 * FNV-1a hash of the ids (perf/bench_pretok.sh compares it with HF tokenizers' on the same text).
 * A benchmark, not a test. Run: ./bench_pretok tokenizer.json text.txt [repeat=5] [runs=5]
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/pretok.h"
#include "tokenizer/tokenizer.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static pl_status count_piece(void *user, const char *p, size_t n)
{
    (void)p;
    (void)n;
    (*(size_t *)user)++;
    return PL_OK;
}

/* The vocabulary and merges of a tokenizer.json as GGUF metadata, under pre-tokenizer pre. */
static int write_vocab(pl_gguf_writer *w, const json_t *tok, const char *pre, pl_error *err)
{
    const json_t *model = json_object_get(tok, "model");
    const json_t *vocab = json_object_get(model, "vocab"),
                 *merges = json_object_get(model, "merges");
    size_t n = json_object_size(vocab);
    const char **text = calloc(n, sizeof *text);
    int32_t *type = calloc(n, sizeof *type);
    const char **mg = calloc(json_array_size(merges) + 1, sizeof *mg);
    char **own = calloc(json_array_size(merges) + 1, sizeof *own);
    if (!text || !type || !mg || !own) return 1;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)vocab, key, val)
    {
        json_int_t id = json_integer_value(val);
        if (id < 0 || (size_t)id >= n) return 1;
        text[id] = key;
        type[id] = 1;
    }
    for (size_t i = 0; i < json_array_size(merges); i++) {
        const json_t *m = json_array_get(merges, i);
        if (json_is_string(m)) {
            mg[i] = json_string_value(m);
            continue;
        }
        const char *a = json_string_value(json_array_get(m, 0)),
                   *b = json_string_value(json_array_get(m, 1));
        own[i] = malloc(strlen(a) + strlen(b) + 2);
        sprintf(own[i], "%s %s", a, b);
        mg[i] = own[i];
    }
    uint8_t no = 0;
    int rc =
        pl_gguf_writer_set_string(w, "tokenizer.ggml.model", "gpt2", 4, err) ||
        pl_gguf_writer_set_string(w, "tokenizer.ggml.pre", pre, strlen(pre), err) ||
        pl_gguf_writer_set_array_str(w, "tokenizer.ggml.tokens", text, NULL, n, err) ||
        pl_gguf_writer_set_array(w, "tokenizer.ggml.token_type", PL_GGUF_INT32, type, n, err) ||
        pl_gguf_writer_set_array_str(w, "tokenizer.ggml.merges", mg, NULL, json_array_size(merges),
                                     err) ||
        pl_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 0, err) ||
        pl_gguf_writer_set(w, "tokenizer.ggml.add_bos_token", PL_GGUF_BOOL, &no, err);
    for (size_t i = 0; i < json_array_size(merges); i++) free(own[i]);
    free(own);
    free(mg);
    free(text);
    free(type);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_pretok tokenizer.json text.txt [repeat=5] [runs=5]\n");
        return 2;
    }
    int repeat = argc > 3 ? atoi(argv[3]) : 5, runs = argc > 4 ? atoi(argv[4]) : 5;
    if (repeat < 1 || repeat > 100 || runs < 1 || runs > 16) return 2;
    json_error_t je;
    json_t *tok = json_load_file(argv[1], 0, &je);
    FILE *f = fopen(argv[2], "rb");
    if (!tok || !f) {
        fprintf(stderr, "bench_pretok: cannot read %s or %s\n", argv[1], argv[2]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    size_t one = (size_t)ftell(f), len = one * (size_t)repeat;
    fseek(f, 0, SEEK_SET);
    char *text = malloc(len + 1);
    if (!text || fread(text, 1, one, f) != one) return 1;
    fclose(f);
    for (int r = 1; r < repeat; r++) memcpy(text + one * (size_t)r, text, one);
    int32_t *ids = malloc((len + 1) * sizeof *ids);
    size_t n_tab;
    const struct pl_pretok_def *tab = pl_pretok_table(&n_tab);
    for (size_t i = 0; i < n_tab; i++) {
        const char *name = tab[i].name;
        if (strcmp(name, "default") == 0) continue;
        pl_error err;
        pl_gguf_writer *w;
        void *bytes;
        size_t size;
        pl_gguf *g;
        struct pl_tokenizer *t;
        if (pl_gguf_writer_new(&w, 3, &err) || write_vocab(w, tok, name, &err) ||
            pl_gguf_writer_write_memory(w, &bytes, &size, &err) ||
            pl_gguf_parse(&g, bytes, size, &err) || pl_tokenizer_load(&t, g, &err)) {
            fprintf(stderr, "bench_pretok: %s: %s\n", name, err.msg);
            return 1;
        }
        pl_gguf_writer_free(w);
        double enc[16], pre[16];
        size_t n = 0, pieces = 0;
        struct pl_pretok_scratch *s;
        if (pl_pretok_scratch_new(&s, &t->pre, &err)) return 1;
        size_t n_bytes = 0;
        for (int r = -1; r < runs; r++) {
            double a = pl_clock_s();
            n = 0;
            for (size_t p = 0, q; p < len; p = q + 1) { /* each line, without its '\n' */
                const char *nl = memchr(text + p, '\n', len - p);
                q = nl ? (size_t)(nl - text) : len;
                size_t got;
                if (q > p &&
                    pl_tok_encode(t, text + p, q - p, 0, ids + n, len + 1 - n, &got, &err)) {
                    fprintf(stderr, "bench_pretok: %s: %s\n", name, err.msg);
                    return 1;
                }
                if (q > p) n += got;
            }
            double b = pl_clock_s();
            pieces = n_bytes = 0;
            for (size_t p = 0, q; p < len; p = q + 1) {
                const char *nl = memchr(text + p, '\n', len - p);
                q = nl ? (size_t)(nl - text) : len;
                n_bytes += q - p;
                if (pl_pretok_split(&t->pre, s, text + p, q - p, count_piece, &pieces, &err))
                    return 1;
            }
            double c = pl_clock_s();
            if (r >= 0) enc[r] = b - a, pre[r] = c - b;
        }
        qsort(enc, (size_t)runs, sizeof enc[0], cmp_double);
        qsort(pre, (size_t)runs, sizeof pre[0], cmp_double);
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t k = 0; k < n; k++)
            for (int b = 0; b < 4; b++)
                h = (h ^ ((uint32_t)ids[k] >> (8 * b) & 255)) * 0x100000001b3ull;
        double mb = (double)n_bytes / 1e6;
        printf("{\"engine\":\"plumb\",\"pre\":\"%s\",\"bytes\":%zu,\"ids\":%zu,\"pieces\":%zu,"
               "\"ids_fnv\":\"%016llx\",\"encode_mb_s\":%.3f,\"pretok_mb_s\":%.3f}\n",
               name, n_bytes, n, pieces, (unsigned long long)h, mb / enc[runs / 2],
               mb / pre[runs / 2]);
        fflush(stdout);
        pl_pretok_scratch_free(s);
        pl_tokenizer_free(t);
        pl_gguf_free(g);
        pl_buffer_free(bytes);
    }
    free(ids);
    free(text);
    json_decref(tok);
    return 0;
}
