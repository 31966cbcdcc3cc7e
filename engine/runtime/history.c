/* history.c — the ids a session evaluated and their text, kept in step with the KV cache.
 * Not the cache itself (kvcache.c) and not the chat paths (chat.c). */
#include <string.h>

#include "history.h"
#include "tokenizer/tokenizer.h"

void pl_history_init(pl_history *h, const struct pl_tokenizer *tok)
{
    memset(h, 0, sizeof *h);
    h->tok = tok;
    h->strip = tok ? pl_tok_strip_start(tok, PL_HISTORY_DETOK) : 0;
}

void pl_history_free(pl_history *h)
{
    if (!h) return;
    pl_free(h->ids);
    pl_free(h->end);
    pl_free(h->text);
    const struct pl_tokenizer *tok = h->tok;
    pl_history_init(h, tok);
}

/* Bytes of the text of ids[0..n) after the decoder state strip. */
static pl_status text_bytes(const pl_history *h, const int32_t *ids, int64_t n, size_t *out,
                            pl_error *err)
{
    *out = 0;
    if (!h->tok) return PL_OK;
    int strip = h->strip;
    for (int64_t i = 0; i < n; i++) {
        const char *p;
        size_t k;
        pl_status s = pl_tok_piece_next(h->tok, ids[i], PL_HISTORY_DETOK, &strip, &p, &k, err);
        if (s) return s;
        if (!pl_add_size(*out, k, out))
            return pl_fail(err, PL_ERR_LIMIT, "history text exceeds SIZE_MAX");
    }
    return PL_OK;
}

static pl_status grow(void **p, size_t *cap_bytes, size_t need, pl_error *err)
{
    if (need <= *cap_bytes) return PL_OK;
    size_t cap = *cap_bytes ? *cap_bytes : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    void *q = pl_realloc(*p, cap);
    if (!q) return pl_fail(err, PL_ERR_NOMEM, "no memory for %zu bytes of session history", cap);
    *p = q;
    *cap_bytes = cap;
    return PL_OK;
}

pl_status pl_history_reserve(pl_history *h, const int32_t *ids, int64_t n, pl_error *err)
{
    size_t bytes, need_text;
    pl_status s = text_bytes(h, ids, n, &bytes, err);
    if (s) return s;
    if (!pl_add_size(h->len, bytes, &need_text) || n > INT32_MAX - h->n)
        return pl_fail(err, PL_ERR_LIMIT, "session history would exceed its limits");
    size_t need = (size_t)(h->n + n);
    if (need > (size_t)h->cap) {
        size_t cap = (size_t)h->cap ? (size_t)h->cap : 64;
        while (cap < need) cap *= 2;
        size_t ids_bytes = (size_t)h->cap * sizeof *h->ids,
               end_bytes = (size_t)h->cap * sizeof *h->end;
        if ((s = grow((void **)&h->ids, &ids_bytes, cap * sizeof *h->ids, err))) return s;
        /* ids may have grown alone: cap follows the smaller of the two. */
        if ((s = grow((void **)&h->end, &end_bytes, cap * sizeof *h->end, err))) return s;
        h->cap = (int64_t)cap;
    }
    return grow((void **)&h->text, &h->text_cap, need_text ? need_text : 1, err);
}

void pl_history_append(pl_history *h, const int32_t *ids, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        size_t k = 0;
        if (h->tok) {
            const char *p;
            /* Cannot fail: pl_history_reserve decoded the same ids. */
            if (pl_tok_piece_next(h->tok, ids[i], PL_HISTORY_DETOK, &h->strip, &p, &k, NULL)) k = 0;
            memcpy(h->text + h->len, p, k);
        }
        h->len += k;
        h->ids[h->n] = ids[i];
        h->end[h->n] = h->len;
        h->n++;
    }
}

size_t pl_history_end(const pl_history *h, int64_t i)
{
    return i > 0 ? h->end[i - 1] : 0;
}

int pl_history_strip_at(const pl_history *h, int64_t i)
{
    if (!h->tok) return 0;
    int strip = pl_tok_strip_start(h->tok, PL_HISTORY_DETOK);
    for (int64_t j = 0; j < i; j++) {
        const char *p;
        size_t k;
        if (pl_tok_piece_next(h->tok, h->ids[j], PL_HISTORY_DETOK, &strip, &p, &k, NULL)) break;
    }
    return strip;
}

void pl_history_truncate(pl_history *h, int64_t n)
{
    if (n >= h->n) return;
    h->strip = pl_history_strip_at(h, n);
    h->n = n;
    h->len = pl_history_end(h, n);
}
