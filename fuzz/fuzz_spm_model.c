/* fuzz_spm_model.c — harness: the input is a tokenizer.model (SentencePiece's ModelProto in
 * protobuf wire format) → pl_spm_model_parse, then pl_spm_model_check (features/spm_model.c).
 * Oracles: OK, or an error whose code equals the status with a non-empty message and nothing
 * left in the model; on OK at least one piece, every piece's text a non-empty slice of the input
 * of valid UTF-8 within PL_TOK_MAX_TOKEN_BYTES, its type 1..6 and its score finite. When the
 * check accepts the model, the rest of the path must take it: plumb convert --vocab-only of a
 * folder holding it succeeds, the GGUF loads (PL_MODEL_VOCAB_ONLY) with one token per piece of
 * the piece's text, and tokenize / detokenize of fixed texts and of the first pieces' texts
 * succeed with ids in range. ASan/UBSan catch the rest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "features/spm_model.h"
#include "fuzz.h"
#include "plumb.h"
#include "tokenizer/tokenizer.h"

static char dir[64], model_path[128], out_path[128];

static void remove_dir(void)
{
    unlink(out_path);
    unlink(model_path);
    rmdir(dir);
}

/* The folder the converter reads, made by the process that uses it: under AFL++ fuzz_init runs
 * once before the fork server, and each forked child removes its own folder at exit. */
static void make_dir(void)
{
    if (dir[0]) return;
    snprintf(dir, sizeof dir, "/tmp/fuzz-spm-model-XXXXXX");
    FUZZ_CHECK(mkdtemp(dir) != NULL, "cannot make a temporary folder");
    snprintf(model_path, sizeof model_path, "%s/tokenizer.model", dir);
    snprintf(out_path, sizeof out_path, "%s/out.gguf", dir);
    atexit(remove_dir);
}

void fuzz_init(void) {}

static void tokenize(const pl_model *m, const char *text, size_t len)
{
    pl_error err = {0};
    size_t n = 0;
    pl_status s = pl_tokenize(m, text, len, PL_TOKENIZE_ADD_BOS, NULL, 0, &n, &err);
    FUZZ_CHECK(s == PL_OK || s == PL_ERR_BUFFER_TOO_SMALL, "%s (%s)", pl_status_str(s), err.msg);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    size_t k = 0;
    s = pl_tokenize(m, text, len, PL_TOKENIZE_ADD_BOS, ids, n, &k, &err);
    FUZZ_CHECK(s == PL_OK && k == n, "%s (%s), %zu of %zu ids", pl_status_str(s), err.msg, k, n);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < pl_vocab_n_tokens(m), "id %d", ids[i]);
    size_t nb = 0;
    s = pl_detokenize(m, ids, n, PL_DETOK_STRIP_PREFIX, NULL, 0, &nb, &err);
    FUZZ_CHECK(s == PL_OK || s == PL_ERR_BUFFER_TOO_SMALL, "detokenize: %s (%s)", pl_status_str(s),
               err.msg);
    char *buf = malloc(nb ? nb : 1);
    size_t nb2 = 0;
    s = pl_detokenize(m, ids, n, PL_DETOK_STRIP_PREFIX, buf, nb, &nb2, &err);
    FUZZ_CHECK(s == PL_OK && nb2 == nb, "detokenize: %s (%s)", pl_status_str(s), err.msg);
    free(buf);
    free(ids);
}

/* The check accepted m: plumb convert --vocab-only and the vocabulary it writes. */
static void convert_and_load(const uint8_t *data, size_t size, const pl_spm_model *m)
{
    make_dir();
    FILE *f = fopen(model_path, "wb");
    FUZZ_CHECK(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s",
               model_path);
    pl_error err = {0};
    pl_convert_params p = {.ftype = PL_FTYPE_F32, .vocab_only = 1};
    pl_status s = pl_convert_hf(dir, out_path, &p, &err);
    FUZZ_CHECK(s == PL_OK, "convert of an accepted model: %s (%s)", pl_status_str(s), err.msg);
    pl_model *model = NULL;
    pl_model_params mp = {.flags = PL_MODEL_VOCAB_ONLY};
    s = pl_model_load(&model, out_path, &mp, &err);
    FUZZ_CHECK(s == PL_OK, "load of the converted model: %s (%s)", pl_status_str(s), err.msg);
    FUZZ_CHECK(pl_vocab_n_tokens(model) == (int32_t)m->n_pieces, "%d tokens for %u pieces",
               pl_vocab_n_tokens(model), m->n_pieces);
    for (uint32_t i = 0; i < m->n_pieces; i++) {
        pl_str t = pl_vocab_token_text(model, (int32_t)i);
        FUZZ_CHECK(t.len == m->pieces[i].len && memcmp(t.ptr, m->pieces[i].text, t.len) == 0,
                   "token %u is not its piece", i);
    }
    static const char *const texts[] = {"",
                                        " ",
                                        "ab a",
                                        "  x\t\n\n y ",
                                        "\xe2\x96\x81",
                                        "\xff\x80",
                                        "h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        tokenize(model, texts[i], strlen(texts[i]));
    for (uint32_t i = 0; i < m->n_pieces && i < 16; i++)
        tokenize(model, m->pieces[i].text, m->pieces[i].len);
    pl_model_free(model);
    unlink(out_path);
    unlink(model_path);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so ASan sees any read past the end */
    uint8_t *copy = malloc(size ? size : 1);
    if (size) memcpy(copy, data, size);
    pl_spm_model m;
    pl_error err = {0};
    pl_status s = pl_spm_model_parse(&m, copy, size, &err);
    if (s) {
        FUZZ_CHECK(err.code == s && err.msg[0], "status %s, error code %s, message '%s'",
                   pl_status_str(s), pl_status_str(err.code), err.msg);
        FUZZ_CHECK(m.pieces == NULL && m.n_pieces == 0, "pieces left after an error");
        free(copy);
        return;
    }
    FUZZ_CHECK(m.n_pieces >= 1 && m.pieces, "OK with %u pieces", m.n_pieces);
    for (uint32_t i = 0; i < m.n_pieces; i++) {
        const pl_spm_piece *p = &m.pieces[i];
        FUZZ_CHECK((const uint8_t *)p->text >= copy && p->len > 0 &&
                       p->len <= PL_TOK_MAX_TOKEN_BYTES &&
                       (const uint8_t *)p->text + p->len <= copy + size,
                   "piece %u is not a slice of the input", i);
        for (uint32_t k = 0; k < p->len;) {
            size_t c = pl_utf8_char((const unsigned char *)p->text + k, p->len - k);
            FUZZ_CHECK(c > 0, "piece %u: invalid UTF-8 at %u", i, k);
            k += (uint32_t)c;
        }
        FUZZ_CHECK(p->type >= PL_SPM_NORMAL && p->type <= PL_SPM_BYTE && p->score == p->score &&
                       p->score - p->score == 0,
                   "piece %u: type %d score %g", i, p->type, (double)p->score);
    }
    s = pl_spm_model_check(&m, "tokenizer.model", &err);
    if (s)
        FUZZ_CHECK(err.code == s && err.msg[0] && (s == PL_ERR_FORMAT || s == PL_ERR_UNSUPPORTED),
                   "check: status %s, error code %s, message '%s'", pl_status_str(s),
                   pl_status_str(err.code), err.msg);
    else
        convert_and_load(copy, size, &m);
    pl_spm_model_free(&m);
    free(copy);
}
