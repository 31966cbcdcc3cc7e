/* quirk_vocab.c — the quirk vocabulary of quirk_vocab.h: 255 one-byte tokens (no 0xF5, as
 * DeepSeek's base vocabulary lacks it), a few merges, then the quirks. Not a trainer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quirk_vocab.h"

#define MAX_TOK 320

/* GPT-2's byte -> code point: printable Latin-1 stays, the 68 other bytes go in order to
 * U+0100..U+0143. */
static unsigned gpt2_cp(unsigned char b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) return b;
    unsigned n = 0;
    for (unsigned c = 0; c < b; c++)
        if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE))) n++;
    return 0x100 + n;
}

/* The byte-level text of raw bytes p[0..n) into out (2 n + 1 bytes). */
static char *gpt2_text(const char *p, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned cp = gpt2_cp((unsigned char)p[i]);
        if (cp < 0x80) {
            out[o++] = (char)cp;
        } else {
            out[o++] = (char)(0xC0 | (cp >> 6));
            out[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    out[o] = '\0';
    return out;
}

struct qv {
    char text[MAX_TOK][64];
    const char *tok[MAX_TOK];
    int32_t type[MAX_TOK];
    uint32_t n;
    char mtext[8][64];
    const char *merge[8];
    uint32_t nm;
};

static void add(struct qv *v, const char *text, int32_t type)
{
    snprintf(v->text[v->n], sizeof v->text[v->n], "%s", text);
    v->tok[v->n] = v->text[v->n];
    v->type[v->n++] = type;
}

/* The merge of raw l and r, and its result (a token of the given type). */
static void merge(struct qv *v, const char *l, const char *r, int32_t type)
{
    char a[32], b[32], j[32], t[64];
    snprintf(v->mtext[v->nm], sizeof v->mtext[v->nm], "%s %s", gpt2_text(l, strlen(l), a),
             gpt2_text(r, strlen(r), b));
    v->merge[v->nm] = v->mtext[v->nm];
    v->nm++;
    snprintf(j, sizeof j, "%s%s", l, r);
    add(v, gpt2_text(j, strlen(j), t), type);
}

pl_status quirk_vocab_write(pl_gguf_writer *w, const char *pre, pl_error *err)
{
    struct qv *v = calloc(1, sizeof *v);
    if (!v) {
        if (err) {
            err->code = PL_ERR_NOMEM;
            snprintf(err->msg, sizeof err->msg, "quirk_vocab: no memory");
        }
        return PL_ERR_NOMEM;
    }
    for (int b = 0; b < 256; b++) {
        if (b == 0xF5) continue;
        char c = (char)b, t[8];
        add(v, gpt2_text(&c, 1, t), PL_TOKEN_NORMAL);
    }
    merge(v, " ", " ", PL_TOKEN_NORMAL);       /* ĠĠ, beside the added "  " */
    merge(v, "  ", " ", PL_TOKEN_NORMAL);      /* ĠĠĠ, beside the added "   " */
    merge(v, "\xc3", "\xb5", PL_TOKEN_NORMAL); /* Ãµ, the bytes of the added "õ" */
    merge(v, "a", "b", PL_TOKEN_UNUSED);       /* a merge whose result is unused */
    merge(v, " ", "b", PL_TOKEN_NORMAL);
    add(v, "  ", PL_TOKEN_USER_DEFINED);
    add(v, "   ", PL_TOKEN_USER_DEFINED);
    add(v, "\xc3\xb5", PL_TOKEN_USER_DEFINED); /* "õ": also byte 0xF5's byte-level text */
    add(v,
        "<\xef\xbd\x9c"
        "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
        PL_TOKEN_CONTROL);
    add(v,
        "<\xef\xbd\x9c"
        "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
        PL_TOKEN_CONTROL);
    add(v,
        "<\xef\xbd\x9c"
        "fim\xe2\x96\x81hole\xef\xbd\x9c>",
        PL_TOKEN_CONTROL);
    add(v, "bcd", PL_TOKEN_USER_DEFINED); /* overlaps "ab" and "ba": the splitter's order */
    add(v, "ba", PL_TOKEN_USER_DEFINED);
    add(v, "xyz", PL_TOKEN_NORMAL); /* no merge reaches it */
    add(v, "", PL_TOKEN_NORMAL);    /* empty: "[EMPTY_<id>]" */
    add(v, "", PL_TOKEN_CONTROL);
    add(v, "", PL_TOKEN_USER_DEFINED);
    add(v, "", PL_TOKEN_UNUSED);
    add(v, "[PAD300]", PL_TOKEN_UNUSED);
    add(v, "<|endoftext|>", PL_TOKEN_CONTROL);
    uint32_t eos = v->n - 1;
    pl_status s = pl_gguf_writer_set_string(w, "tokenizer.ggml.model", "gpt2", 4, err);
    if (!s) s = pl_gguf_writer_set_string(w, "tokenizer.ggml.pre", pre, strlen(pre), err);
    if (!s) s = pl_gguf_writer_set_array_str(w, "tokenizer.ggml.tokens", v->tok, NULL, v->n, err);
    if (!s)
        s = pl_gguf_writer_set_array(w, "tokenizer.ggml.token_type", PL_GGUF_INT32, v->type, v->n,
                                     err);
    if (!s)
        s = pl_gguf_writer_set_array_str(w, "tokenizer.ggml.merges", v->merge, NULL, v->nm, err);
    if (!s) s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", eos, err);
    free(v);
    return s;
}
