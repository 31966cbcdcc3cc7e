/* history.h — what a session holds, as ids and as text: the ids evaluated (token i at
 * position i) and their text. Not the KV cache (kvcache.h) and not the chat paths (chat.c). */
#ifndef PLUMB_HISTORY_H
#define PLUMB_HISTORY_H

#include "core/core.h"

struct pl_tokenizer;

/* The text of the ids is pl_tok_decode(ids, PL_HISTORY_DETOK): control tokens rendered, the
 * SentencePiece dummy prefix undone. Without a tokenizer the text stays empty. */
#define PL_HISTORY_DETOK (PL_DETOK_SPECIAL | PL_DETOK_STRIP_PREFIX)

typedef struct pl_history {
    const struct pl_tokenizer *tok; /* NULL: ids only */
    int32_t *ids;                   /* (n) */
    size_t *end;                    /* (n) byte offset where token i's text ends */
    int64_t n, cap;
    char *text; /* (len) */
    size_t len, text_cap;
    int strip; /* the decoder's state after the last id (pl_tok_piece_next) */
} pl_history;

void pl_history_init(pl_history *h, const struct pl_tokenizer *tok);
void pl_history_free(pl_history *h);

/* Makes room to append ids[0..n) (their text included): PL_ERR_NOMEM changes nothing else. */
pl_status pl_history_reserve(pl_history *h, const int32_t *ids, int64_t n, pl_error *err);
/* Appends ids[0..n) after a successful pl_history_reserve of the same ids; cannot fail. */
void pl_history_append(pl_history *h, const int32_t *ids, int64_t n);
/* Keeps the first n ids (n <= h->n). */
void pl_history_truncate(pl_history *h, int64_t n);
/* The byte offset where the first i ids' text ends (0 for i = 0). */
size_t pl_history_end(const pl_history *h, int64_t i);
/* The decoder state after the first i ids: 1 when the next text starts a SentencePiece
 * fragment (so it gets the dummy prefix), else 0. */
int pl_history_strip_at(const pl_history *h, int64_t i);

#endif
