/* tokenizer_api.c — the public tokenizer and chat-template functions that take a pl_model:
 * each finds the model's tokenizer and calls the internal one. Not the algorithms (tokenizer*.c,
 * detok.c), which tests reach without a model. The chat-template calls are in chat_template.c.
 */
#include <string.h>

#include "model.h"
#include "tokenizer/tokenizer.h"

static pl_status need(const pl_model *m, const struct pl_tokenizer **t, pl_error *err)
{
    *t = NULL;
    if (!m) return pl_fail(err, PL_ERR_INVALID_ARG, "model is NULL");
    *t = pl_model_tokenizer(m);
    if (!*t)
        return pl_fail(err, PL_ERR_NOT_FOUND,
                       "the model has no tokenizer (its file has no tokenizer.ggml.model key)");
    return PL_OK;
}

pl_status pl_tokenize(const pl_model *m, const char *text, size_t len, uint32_t flags, int32_t *out,
                      size_t cap, size_t *n_out, pl_error *err)
{
    const struct pl_tokenizer *t;
    if (n_out) *n_out = 0;
    pl_status s = need(m, &t, err);
    if (s) return s;
    return pl_tok_encode(t, text, len, flags, out, cap, n_out, err);
}

pl_status pl_normalize(const pl_model *m, const char *text, size_t len, uint32_t flags, char *out,
                       size_t cap, size_t *n_out, pl_error *err)
{
    const struct pl_tokenizer *t;
    if (n_out) *n_out = 0;
    pl_status s = need(m, &t, err);
    if (s) return s;
    return pl_tok_normalize(t, text, len, flags, out, cap, n_out, err);
}

pl_status pl_token_to_piece(const pl_model *m, int32_t token, uint32_t flags, char *buf, size_t cap,
                            size_t *n_out, pl_error *err)
{
    const struct pl_tokenizer *t;
    if (n_out) *n_out = 0;
    pl_status s = need(m, &t, err);
    if (s) return s;
    if (!n_out) return pl_fail(err, PL_ERR_INVALID_ARG, "n_out is NULL");
    if (!buf && cap > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "buf is NULL but cap is %zu", cap);
    if (flags & ~PL_DETOK_SPECIAL)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "unknown pl_token_to_piece flags 0x%x (known: PL_DETOK_SPECIAL)", flags);
    const char *p;
    size_t n;
    if ((s = pl_tok_piece(t, token, flags, &p, &n, err))) return s;
    *n_out = n;
    if (n > cap)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL,
                       "token %d's piece is %zu bytes but the output buffer holds %zu", token, n,
                       cap);
    memcpy(buf, p, n);
    return pl_ok(err);
}

pl_status pl_detokenize(const pl_model *m, const int32_t *tokens, size_t n, uint32_t flags,
                        char *buf, size_t cap, size_t *n_out, pl_error *err)
{
    const struct pl_tokenizer *t;
    if (n_out) *n_out = 0;
    pl_status s = need(m, &t, err);
    if (s) return s;
    return pl_tok_decode(t, tokens, n, flags, buf, cap, n_out, err);
}

pl_status pl_detok_new(pl_detok **out, const pl_model *m, uint32_t flags, pl_error *err)
{
    const struct pl_tokenizer *t;
    if (out) *out = NULL;
    pl_status s = need(m, &t, err);
    if (s) return s;
    return pl_detok_create(out, t, flags, err);
}

/* ---- vocabulary getters ---- */

static const struct pl_tokenizer *tok_of(const pl_model *m)
{
    return m ? pl_model_tokenizer(m) : NULL;
}

int32_t pl_vocab_n_tokens(const pl_model *m)
{
    const struct pl_tokenizer *t = tok_of(m);
    return t ? (int32_t)t->n_vocab : 0;
}

int32_t pl_vocab_bos(const pl_model *m)
{
    const struct pl_tokenizer *t = tok_of(m);
    return t ? t->bos : -1;
}

int32_t pl_vocab_eos(const pl_model *m)
{
    const struct pl_tokenizer *t = tok_of(m);
    return t ? t->eos : -1;
}

int32_t pl_vocab_eot(const pl_model *m)
{
    const struct pl_tokenizer *t = tok_of(m);
    return t ? t->eot : -1;
}

int32_t pl_vocab_pad(const pl_model *m)
{
    const struct pl_tokenizer *t = tok_of(m);
    return t ? t->pad : -1;
}

int32_t pl_vocab_unk(const pl_model *m)
{
    const struct pl_tokenizer *t = tok_of(m);
    return t ? t->unk : -1;
}

int pl_vocab_is_eog(const pl_model *m, int32_t token)
{
    const struct pl_tokenizer *t = tok_of(m);
    if (!t || token < 0) return 0;
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] == token) return 1;
    return 0;
}

pl_token_type pl_vocab_token_type(const pl_model *m, int32_t token)
{
    const struct pl_tokenizer *t = tok_of(m);
    if (!t || token < 0 || (uint32_t)token >= t->n_vocab) return PL_TOKEN_INVALID;
    return (pl_token_type)t->tok[token].type;
}

pl_str pl_vocab_token_text(const pl_model *m, int32_t token)
{
    const struct pl_tokenizer *t = tok_of(m);
    pl_str none = {"", 0};
    if (!t || token < 0 || (uint32_t)token >= t->n_vocab) return none;
    pl_str s = {t->arena + t->tok[token].text_off, t->tok[token].text_len};
    return s;
}
