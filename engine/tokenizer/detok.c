/* detok.c — token ids -> bytes: one token's piece, a whole sequence, and the streaming decoder
 * that never emits part of a UTF-8 character. Not encoding (tokenizer_encode.c).
 */
#include <string.h>

#include "tokenizer.h"
#include "utf8.h"

/* SentencePiece renders the unknown token as U+2585 (as llama.cpp does). */
#define SPM_UNK_PIECE "\xe2\x96\x85"

struct pl_detok {
    const struct pl_tokenizer *t;
    uint32_t flags;
    int strip;             /* drop one leading space of the next piece */
    unsigned char held[4]; /* the start of a character not yet complete */
    size_t n_held;
};

static int strips_prefix(const struct pl_tokenizer *t, uint32_t flags)
{
    return (flags & PL_DETOK_STRIP_PREFIX) && t->kind == PL_TOK_SPM && t->add_space_prefix;
}

pl_status pl_tok_piece(const struct pl_tokenizer *t, int32_t id, uint32_t flags, const char **p,
                       size_t *n, pl_error *err)
{
    *p = "";
    *n = 0;
    if (id < 0 || (uint32_t)id >= t->n_vocab)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "token %d is out of range: the vocabulary has %u tokens", id, t->n_vocab);
    const struct pl_tok_entry *e = &t->tok[id];
    switch (e->type) {
    case PL_TOKEN_UNUSED:
        return PL_OK;
    case PL_TOKEN_UNKNOWN:
    case PL_TOKEN_CONTROL:
        /* Byte-level vocabularies treat the unknown token as a control token. */
        if (e->type == PL_TOKEN_UNKNOWN && t->kind == PL_TOK_SPM) {
            *p = SPM_UNK_PIECE;
            *n = 3;
            return PL_OK;
        }
        if (!(flags & PL_DETOK_SPECIAL)) return PL_OK;
        *p = t->arena + e->text_off;
        *n = e->text_len;
        return PL_OK;
    default:
        *p = t->arena + e->piece_off;
        *n = e->piece_len;
        return PL_OK;
    }
}

/* Whether the encoder puts a dummy space before the text that follows this token. */
static int resets_prefix(const struct pl_tokenizer *t, int32_t id)
{
    int type = t->tok[id].type;
    return type == PL_TOKEN_CONTROL || type == PL_TOKEN_USER_DEFINED;
}

/* The piece of id after the strip rule, and the rule's next state. */
static pl_status piece_stripped(const struct pl_tokenizer *t, int32_t id, uint32_t flags,
                                int *strip, const char **p, size_t *n, pl_error *err)
{
    pl_status s = pl_tok_piece(t, id, flags, p, n, err);
    if (s) return s;
    size_t rendered = *n;
    if (*strip && *n > 0 && (*p)[0] == ' ') {
        (*p)++;
        (*n)--;
    }
    if (strips_prefix(t, flags)) {
        if (resets_prefix(t, id))
            *strip = 1;
        else if (rendered > 0)
            *strip = 0; /* an empty piece (unused token) leaves it pending */
    }
    return PL_OK;
}

int pl_tok_strip_start(const struct pl_tokenizer *t, uint32_t flags)
{
    return strips_prefix(t, flags);
}

pl_status pl_tok_piece_next(const struct pl_tokenizer *t, int32_t id, uint32_t flags, int *strip,
                            const char **p, size_t *n, pl_error *err)
{
    return piece_stripped(t, id, flags, strip, p, n, err);
}

pl_status pl_tok_decode(const struct pl_tokenizer *t, const int32_t *ids, size_t n, uint32_t flags,
                        char *buf, size_t cap, size_t *n_out, pl_error *err)
{
    if (n_out) *n_out = 0;
    if (!t || !n_out) return pl_fail(err, PL_ERR_INVALID_ARG, "tokenizer or n_out is NULL");
    if (!ids && n > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "tokens is NULL");
    if (!buf && cap > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "buf is NULL but cap is %zu", cap);
    if (flags & ~(PL_DETOK_SPECIAL | PL_DETOK_STRIP_PREFIX))
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "unknown detokenize flags 0x%x (known: PL_DETOK_SPECIAL, "
                       "PL_DETOK_STRIP_PREFIX)",
                       flags);
    int strip = strips_prefix(t, flags);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const char *p;
        size_t k;
        pl_status s = piece_stripped(t, ids[i], flags, &strip, &p, &k, err);
        if (s) {
            if (err) pl_error_prefix(err, "detokenize");
            return s;
        }
        if (total < cap) memcpy(buf + total, p, k <= cap - total ? k : cap - total);
        total += k;
    }
    *n_out = total;
    if (total > cap)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL,
                       "the text needs %zu bytes but the output buffer holds %zu", total, cap);
    return pl_ok(err);
}

/* ---- streaming ---- */

pl_status pl_detok_create(pl_detok **out, const struct pl_tokenizer *t, uint32_t flags,
                          pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!t) return pl_fail(err, PL_ERR_INVALID_ARG, "tokenizer is NULL");
    if (flags & ~(PL_DETOK_SPECIAL | PL_DETOK_STRIP_PREFIX))
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "unknown detokenize flags 0x%x (known: PL_DETOK_SPECIAL, "
                       "PL_DETOK_STRIP_PREFIX)",
                       flags);
    pl_detok *d = pl_calloc(1, sizeof *d);
    if (!d) return pl_fail(err, PL_ERR_NOMEM, "no memory for the streaming decoder");
    d->t = t;
    d->flags = flags;
    d->strip = strips_prefix(t, flags);
    *out = d;
    return pl_ok(err);
}

void pl_detok_free(pl_detok *d)
{
    pl_free(d);
}

/* Byte i of held bytes followed by the piece. */
static unsigned char at(const pl_detok *d, const char *p, size_t i)
{
    return i < d->n_held ? d->held[i] : (unsigned char)p[i - d->n_held];
}

pl_status pl_detok_push(pl_detok *d, int32_t token, char *buf, size_t cap, size_t *n_out,
                        pl_error *err)
{
    if (n_out) *n_out = 0;
    if (!d || !n_out) return pl_fail(err, PL_ERR_INVALID_ARG, "decoder or n_out is NULL");
    if (!buf && cap > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "buf is NULL but cap is %zu", cap);
    int strip = d->strip;
    const char *p;
    size_t k;
    pl_status s = piece_stripped(d->t, token, d->flags, &strip, &p, &k, err);
    if (s) return s;
    /* Hold back the tail from the last lead byte among the final three when it starts a
     * character that more bytes could still complete; everything before it is final. */
    size_t total = d->n_held + k, keep = 0;
    for (size_t j = 1; j <= 3 && j <= total; j++) {
        unsigned char c = at(d, p, total - j);
        if (c < 0xC0) continue;
        unsigned char tail[3];
        for (size_t q = 0; q < j; q++) tail[q] = at(d, p, total - j + q);
        if (pl_utf8_incomplete(tail, j)) keep = j;
        break;
    }
    size_t emit = total - keep;
    *n_out = emit;
    if (emit > cap)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL,
                       "token %d completes %zu bytes but the output buffer holds %zu", token, emit,
                       cap);
    for (size_t i = 0; i < emit; i++) buf[i] = (char)at(d, p, i);
    unsigned char tail[3];
    for (size_t q = 0; q < keep; q++) tail[q] = at(d, p, emit + q);
    memcpy(d->held, tail, keep);
    d->n_held = keep;
    d->strip = strip;
    return pl_ok(err);
}

pl_status pl_detok_flush(pl_detok *d, char *buf, size_t cap, size_t *n_out, pl_error *err)
{
    if (n_out) *n_out = 0;
    if (!d || !n_out) return pl_fail(err, PL_ERR_INVALID_ARG, "decoder or n_out is NULL");
    if (!buf && cap > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "buf is NULL but cap is %zu", cap);
    *n_out = d->n_held;
    if (d->n_held > cap)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL,
                       "%zu held bytes but the output buffer holds %zu", d->n_held, cap);
    memcpy(buf, d->held, d->n_held);
    d->n_held = 0;
    d->strip = strips_prefix(d->t, d->flags);
    return pl_ok(err);
}
