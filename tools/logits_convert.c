/* logits_convert.c — turns another engine's float32 row dump into a plumb .logits file.
 * Standalone (no libplumb): the format is simple enough to write by hand; see README. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_u32(FILE *f, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    fwrite(b, 1, 4, f);
}

static void put_u64(FILE *f, uint64_t v)
{
    put_u32(f, (uint32_t)v);
    put_u32(f, (uint32_t)(v >> 32));
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: logits_convert ROWS.f32 N_VOCAB IDS.txt MODEL_NAME OUT.logits\n"
                        "ROWS.f32: float32 little-endian logits, row by row (every position,\n"
                        "or the last rows); IDS.txt: the token ids, decimal, separated by\n"
                        "spaces, commas or newlines\n");
        return 2;
    }
    uint64_t n_vocab = strtoull(argv[2], NULL, 10), n_tok = 0, cap = 1024;
    FILE *rows = fopen(argv[1], "rb"), *ids = fopen(argv[3], "r"), *out = NULL;
    int32_t *tok = malloc(cap * 4);
    if (!rows || !ids || !tok || n_vocab == 0) return fprintf(stderr, "bad input\n"), 1;
    for (long v; fscanf(ids, "%ld%*[ ,\n\r\t]", &v) == 1; tok[n_tok++] = (int32_t)v)
        if (n_tok == cap && !(tok = realloc(tok, (cap *= 2) * 4))) return 1;
    fseek(rows, 0, SEEK_END);
    uint64_t bytes = (uint64_t)ftell(rows), n_rows = bytes / 4 / n_vocab;
    if (n_tok == 0 || bytes % (4 * n_vocab) || n_rows == 0 || n_rows > n_tok)
        return fprintf(stderr, "%llu bytes is not 1..%llu rows of %llu floats\n",
                       (unsigned long long)bytes, (unsigned long long)n_tok,
                       (unsigned long long)n_vocab),
               1;
    if (!(out = fopen(argv[5], "wb"))) return perror(argv[5]), 1;
    fwrite("PLLOGITS", 1, 8, out);
    put_u32(out, 1); /* version */
    put_u32(out, 0); /* flags */
    put_u64(out, n_vocab);
    put_u64(out, n_tok);
    put_u64(out, n_tok - n_rows); /* first_row: the dump holds the last n_rows positions */
    put_u64(out, n_rows);
    put_u64(out, 0); /* tokenizer hash: unknown */
    put_u32(out, (uint32_t)strlen(argv[4]));
    put_u32(out, 0); /* reserved */
    fwrite(argv[4], 1, strlen(argv[4]), out);
    for (uint64_t i = 0; i < n_tok; i++) put_u32(out, (uint32_t)tok[i]);
    fseek(rows, 0, SEEK_SET);
    for (uint64_t i = 0; i < bytes / 4; i++) {
        unsigned char b[4];
        if (fread(b, 1, 4, rows) != 4) return fprintf(stderr, "read error\n"), 1;
        fwrite(b, 1, 4, out); /* the dump is already little-endian float32 */
    }
    free(tok);
    fclose(rows);
    fclose(ids);
    return fclose(out) != 0 ? (perror(argv[5]), 1) : 0;
}
