/* hold.c — the streaming filter of hold.h: a pattern split across pushes is still found,
 * because the longest tail that could begin a pattern is kept until it is decided. */
#include <stdlib.h>
#include <string.h>

#include "hold.h"

int hold_init(hold *h, int mode, const char *const *pats, size_t n_pats)
{
    memset(h, 0, sizeof *h);
    h->mode = mode;
    if (n_pats && !(h->pats = calloc(n_pats, sizeof *h->pats))) return -1;
    for (size_t i = 0; i < n_pats; i++) {
        if (!pats[i][0]) continue; /* an empty pattern matches nothing */
        if (!(h->pats[h->n_pats] = strdup(pats[i]))) return hold_free(h), -1;
        h->n_pats++;
    }
    return 0;
}

int hold_init_control(hold *h, const pl_model *m)
{
    memset(h, 0, sizeof *h);
    h->mode = HOLD_DROP;
    int32_t n = pl_vocab_n_tokens(m);
    size_t cap = 0;
    for (int32_t id = 0; id < n; id++) {
        if (pl_vocab_token_type(m, id) != PL_TOKEN_CONTROL) continue;
        char piece[256];
        size_t len = 0;
        if (pl_token_to_piece(m, id, PL_DETOK_SPECIAL, piece, sizeof piece - 1, &len, NULL) ||
            len == 0)
            continue;
        piece[len] = '\0';
        if (h->n_pats == cap) {
            char **np = realloc(h->pats, (cap = cap ? 2 * cap : 16) * sizeof *np);
            if (!np) return hold_free(h), -1;
            h->pats = np;
        }
        if (!(h->pats[h->n_pats] = strdup(piece))) return hold_free(h), -1;
        h->n_pats++;
    }
    return 0;
}

void hold_free(hold *h)
{
    for (size_t i = 0; i < h->n_pats; i++) free(h->pats[i]);
    free(h->pats);
    free(h->buf);
    memset(h, 0, sizeof *h);
}

/* The earliest pattern in buf: its offset (len when none) and length. */
static size_t find_first(const hold *h, size_t *plen)
{
    size_t best = h->len;
    for (size_t i = 0; i < h->n_pats; i++) {
        size_t pl = strlen(h->pats[i]);
        for (size_t at = 0; at + pl <= h->len && at < best; at++)
            if (memcmp(h->buf + at, h->pats[i], pl) == 0) {
                best = at;
                *plen = pl;
                break;
            }
    }
    return best;
}

/* The longest tail of buf that is a proper prefix of some pattern. */
static size_t open_tail(const hold *h)
{
    size_t keep = 0;
    for (size_t i = 0; i < h->n_pats; i++) {
        size_t pl = strlen(h->pats[i]);
        for (size_t t = pl - 1 < h->len ? pl - 1 : h->len; t > keep; t--)
            if (memcmp(h->buf + h->len - t, h->pats[i], t) == 0) {
                keep = t;
                break;
            }
    }
    return keep;
}

static void consume(hold *h, size_t n)
{
    if (n == 0) return; /* h->buf may still be NULL (nothing pushed yet) */
    memmove(h->buf, h->buf + n, h->len - n);
    h->len -= n;
}

int hold_push(hold *h, FILE *f, const char *text, size_t n)
{
    if (h->stopped) return 1;
    if (h->len + n > h->cap) {
        size_t cap = h->cap ? h->cap : 256;
        while (cap < h->len + n) cap *= 2;
        char *nb = realloc(h->buf, cap);
        if (!nb) return -1;
        h->buf = nb;
        h->cap = cap;
    }
    if (n > 0) { /* an empty piece may come before the buffer exists (h->buf NULL) */
        memcpy(h->buf + h->len, text, n);
        h->len += n;
    }
    for (;;) {
        size_t plen = 0, at = find_first(h, &plen);
        if (at == h->len) break;
        fwrite(h->buf, 1, at, f);
        if (h->mode == HOLD_STOP) {
            h->stopped = 1;
            h->len = 0;
            return 1;
        }
        consume(h, at + plen);
    }
    size_t out = h->len - open_tail(h);
    fwrite(h->buf, 1, out, f);
    consume(h, out);
    return 0;
}

void hold_flush(hold *h, FILE *f)
{
    if (!h->stopped) fwrite(h->buf, 1, h->len, f);
    h->len = 0;
}
