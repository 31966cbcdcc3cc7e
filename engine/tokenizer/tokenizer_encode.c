/* tokenizer_encode.c — text -> token ids: the special-token splitter, SentencePiece BPE and
 * byte-level BPE. Not loading (tokenizer.c) nor decoding (detok.c).
 *
 * Both BPE flavours keep the symbols of one word (or, for SentencePiece, one fragment) in a
 * linked list and the candidate merges in a binary heap with lazy invalidation, so a word of
 * n bytes costs O(n log n) whatever its length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer.h"
#include "utf8.h"

#define NONE UINT32_MAX

struct sym {
    uint32_t start, len; /* bytes of the symbol in its word; len 0 = merged away */
    uint32_t prev, next; /* NONE at the ends */
    int32_t id;          /* BPE: the token, -1 for a byte with no token */
};

struct spm_bigram {
    float score;
    uint32_t left, right, size;
};

struct bpe_pair {
    uint32_t rank, left, right;
    int32_t lid, rid, result;
};

struct enc {
    const struct pl_tokenizer *t;
    int32_t *out;
    size_t cap, n; /* n counts past cap so the caller learns the size needed */
    pl_error *err;
    const char *text; /* for offsets in messages */
    const char *seg;  /* the memory byte-level pieces point into: text, or nfc */
    size_t seg_off;   /* where seg's bytes begin in text (nfc: the run's offset) */
    int32_t *nfc;     /* a run in normal form: code points, then re-encoded in place */
    size_t nfc_cap;   /* in code points */
    int normalize;    /* pl_tok_normalize: no ids, the text the encoder would see into norm */
    char *norm;
    size_t norm_cap, norm_n; /* norm_n counts past norm_cap, as n does */
    struct sym *sym;
    size_t sym_cap;
    void *heap;
    size_t heap_cap, heap_n; /* in items of the heap in use */
    char *buf;               /* SentencePiece: the escaped fragment */
    size_t buf_cap;
    struct pl_pretok_scratch *ps;
    struct claim *claim; /* the splitter's matches */
    size_t claim_cap;
    uint8_t *taken; /* bit per text byte: inside a match already */
    uint32_t *pos;  /* text positions by first byte (find_specials) */
    size_t pos_cap;
    struct claim *cand; /* one text length's occurrences (find_specials) */
    size_t cand_cap;
};

/* A special or user-defined token found in the text by the splitter. */
struct claim {
    size_t pos;
    uint32_t len;
    int32_t id;
};

static inline void put(struct enc *e, int32_t id)
{
    if (e->n < e->cap) e->out[e->n] = id;
    e->n++;
}

/* Normalize only: bytes the encoder would tokenize (or a matched special token's text). */
static void put_text(struct enc *e, const char *p, size_t n)
{
    if (e->norm_n < e->norm_cap) {
        size_t room = e->norm_cap - e->norm_n;
        memcpy(e->norm + e->norm_n, p, n < room ? n : room);
    }
    e->norm_n += n;
}

static pl_status grow(struct enc *e, void **p, size_t *cap, size_t need, size_t elem,
                      const char *what)
{
    if (need <= *cap) return PL_OK;
    size_t n = *cap ? *cap : 64;
    while (n < need) n = n > SIZE_MAX / 2 ? need : 2 * n;
    uint64_t bytes;
    if (!pl_mul_u64(n, elem, &bytes) || bytes > SIZE_MAX)
        return pl_fail(e->err, PL_ERR_LIMIT, "%s: %zu elements overflow size_t", what, n);
    void *q = pl_realloc(*p, (size_t)bytes);
    if (!q) return pl_fail(e->err, PL_ERR_NOMEM, "no memory for %s (%zu elements)", what, n);
    *p = q;
    *cap = n;
    return PL_OK;
}

/* A symbol with no token: each byte's token, else the unknown token. in_text: p points into
 * the caller's text (byte-level BPE), so the message can give the offset. */
static pl_status fallback(struct enc *e, const char *p, size_t n, int in_text)
{
    const struct pl_tokenizer *t = e->t;
    size_t k = 0;
    while (k < n && t->byte_token[(unsigned char)p[k]] >= 0) k++;
    if (k == n) {
        for (k = 0; k < n; k++) put(e, t->byte_token[(unsigned char)p[k]]);
        return PL_OK;
    }
    if (t->unk >= 0) {
        put(e, t->unk);
        return PL_OK;
    }
    char at[40] = "";
    if (in_text)
        snprintf(at, sizeof at, " at offset %zu%s", e->seg_off + (size_t)(p + k - e->seg),
                 e->seg == e->text ? "" : " of the normalized text");
    return pl_fail(e->err, PL_ERR_UNSUPPORTED,
                   "byte 0x%02X%s cannot be encoded: the vocabulary has no token for it, no "
                   "<0x%02X> byte token and no unknown token",
                   (unsigned char)p[k], at, (unsigned char)p[k]);
}

/* ---- SentencePiece BPE ---- */

/* Max-heap: higher score first, then the leftmost pair. */
static int spm_above(const struct spm_bigram *a, const struct spm_bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static pl_status spm_push(struct enc *e, struct spm_bigram v)
{
    pl_status s = grow(e, &e->heap, &e->heap_cap, e->heap_n + 1, sizeof v, "merge queue");
    if (s) return s;
    struct spm_bigram *h = e->heap;
    size_t i = e->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!spm_above(&v, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
    return PL_OK;
}

static struct spm_bigram spm_pop(struct enc *e)
{
    struct spm_bigram *h = e->heap;
    struct spm_bigram top = h[0], v = h[--e->heap_n];
    size_t n = e->heap_n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && spm_above(&h[c + 1], &h[c])) c++;
        if (!spm_above(&h[c], &v)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = v;
    return top;
}

static pl_status spm_try(struct enc *e, uint32_t l, uint32_t r)
{
    if (l == NONE || r == NONE) return PL_OK;
    uint32_t size = e->sym[l].len + e->sym[r].len;
    if (size > e->t->max_match_len) return PL_OK;
    int32_t id = pl_tok_find(e->t, e->buf + e->sym[l].start, size);
    if (id < 0) return PL_OK;
    return spm_push(e, (struct spm_bigram){e->t->tok[id].score, l, r, size});
}

/* Merges the symbols of buf[a..b) by score and emits their ids. */
static pl_status spm_merge(struct enc *e, size_t a, size_t b)
{
    pl_status s;
    if ((s = grow(e, (void **)&e->sym, &e->sym_cap, b - a, sizeof *e->sym, "symbols"))) return s;
    /* Symbols: whole UTF-8 characters; a byte that is not part of one stands alone. */
    uint32_t ns = 0;
    for (size_t i = a; i < b;) {
        size_t k = pl_utf8_char((const unsigned char *)e->buf + i, b - i);
        if (k == 0) k = 1;
        e->sym[ns] = (struct sym){(uint32_t)i, (uint32_t)k, ns ? ns - 1 : NONE, ns + 1, -1};
        i += k;
        ns++;
    }
    e->sym[ns - 1].next = NONE;
    e->heap_n = 0;
    for (uint32_t i = 1; i < ns; i++)
        if ((s = spm_try(e, i - 1, i))) return s;
    while (e->heap_n) {
        struct spm_bigram g = spm_pop(e);
        struct sym *L = &e->sym[g.left], *R = &e->sym[g.right];
        if (L->len == 0 || R->len == 0 || L->next != g.right || L->len + R->len != g.size)
            continue; /* stale: one side changed since the pair was queued */
        L->len += R->len;
        R->len = 0;
        L->next = R->next;
        if (R->next != NONE) e->sym[R->next].prev = g.left;
        if ((s = spm_try(e, L->prev, g.left))) return s;
        if ((s = spm_try(e, g.left, L->next))) return s;
    }
    for (uint32_t i = 0; i != NONE; i = e->sym[i].next) {
        const char *q = e->buf + e->sym[i].start;
        int32_t id = pl_tok_find(e->t, q, e->sym[i].len);
        if (id >= 0)
            put(e, id);
        else if ((s = fallback(e, q, e->sym[i].len, 0)))
            return s;
    }
    return PL_OK;
}

/* One raw fragment: ' ' -> ▁, the dummy prefix when asked, then merges by score. When no token
 * has a ▁ right after another character (pl_tokenizer.spm_words), no merge can cross such a
 * ▁, so each word (a ▁ run and what follows it) merges on its own: same ids, small heaps. */
static pl_status spm_encode(struct enc *e, const char *p, size_t n, int prefix)
{
    pl_status s;
    size_t need = 3 * n + 3;
    if ((s = grow(e, (void **)&e->buf, &e->buf_cap, need, 1, "escaped text"))) return s;
    size_t o = 0;
    if (prefix) {
        memcpy(e->buf, "\xe2\x96\x81", 3);
        o = 3;
    }
    for (size_t i = 0; i < n; i++) {
        if (p[i] == ' ') {
            memcpy(e->buf + o, "\xe2\x96\x81", 3);
            o += 3;
        } else {
            e->buf[o++] = p[i];
        }
    }
    if (!e->t->spm_words) return o ? spm_merge(e, 0, o) : PL_OK;
    size_t word = 0;
    for (size_t i = 3; i + 3 <= o; i++)
        if (memcmp(e->buf + i, "\xe2\x96\x81", 3) == 0 &&
            memcmp(e->buf + i - 3, "\xe2\x96\x81", 3) != 0) {
            if ((s = spm_merge(e, word, i))) return s;
            word = i;
            i += 2;
        }
    return o > word ? spm_merge(e, word, o) : PL_OK;
}

/* ---- byte-level BPE ---- */

/* Min-heap: lower rank first, then the leftmost pair. */
static int bpe_above(const struct bpe_pair *a, const struct bpe_pair *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static pl_status bpe_push(struct enc *e, struct bpe_pair v)
{
    pl_status s = grow(e, &e->heap, &e->heap_cap, e->heap_n + 1, sizeof v, "merge queue");
    if (s) return s;
    struct bpe_pair *h = e->heap;
    size_t i = e->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bpe_above(&v, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
    return PL_OK;
}

static struct bpe_pair bpe_pop(struct enc *e)
{
    struct bpe_pair *h = e->heap;
    struct bpe_pair top = h[0], v = h[--e->heap_n];
    size_t n = e->heap_n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && bpe_above(&h[c + 1], &h[c])) c++;
        if (!bpe_above(&h[c], &v)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = v;
    return top;
}

static pl_status bpe_try(struct enc *e, uint32_t l, uint32_t r)
{
    if (l == NONE || r == NONE) return PL_OK;
    int32_t a = e->sym[l].id, b = e->sym[r].id;
    if (a < 0 || b < 0) return PL_OK;
    const struct pl_tok_merge *m = pl_tok_find_merge(e->t, (uint32_t)a, (uint32_t)b);
    if (!m) return PL_OK;
    return bpe_push(e, (struct bpe_pair){m->rank, l, r, a, b, (int32_t)m->result});
}

/* One pre-token: its bytes are the initial symbols; merges apply lowest rank first. */
static pl_status bpe_word(void *user, const char *w, size_t n)
{
    struct enc *e = user;
    const struct pl_tokenizer *t = e->t;
    pl_status s;
    if (t->pre.def->ignore_merges) {
        int32_t id = pl_tok_find(t, w, n);
        if (id >= 0) {
            put(e, id);
            return PL_OK;
        }
    }
    if ((s = grow(e, (void **)&e->sym, &e->sym_cap, n, sizeof *e->sym, "symbols"))) return s;
    for (uint32_t i = 0; i < n; i++)
        e->sym[i] = (struct sym){i, 1, i ? i - 1 : NONE, i + 1 < n ? i + 1 : NONE,
                                 t->byte_token[(unsigned char)w[i]]};
    e->heap_n = 0;
    for (uint32_t i = 1; i < n; i++)
        if ((s = bpe_try(e, i - 1, i))) return s;
    while (e->heap_n) {
        struct bpe_pair p = bpe_pop(e);
        struct sym *L = &e->sym[p.left], *R = &e->sym[p.right];
        if (L->len == 0 || R->len == 0 || L->next != p.right || L->id != p.lid || R->id != p.rid)
            continue; /* stale: a side was merged away or changed since the pair was queued */
        L->id = p.result;
        L->len += R->len;
        R->len = 0;
        L->next = R->next;
        if (R->next != NONE) e->sym[R->next].prev = p.left;
        if ((s = bpe_try(e, L->prev, p.left))) return s;
        if ((s = bpe_try(e, p.left, L->next))) return s;
    }
    for (uint32_t i = 0; i != NONE; i = e->sym[i].next) {
        if (e->sym[i].id >= 0)
            put(e, e->sym[i].id);
        else if ((s = fallback(e, w + e->sym[i].start, e->sym[i].len, 1)))
            return s;
    }
    return PL_OK;
}

/* The utf8proc options of each normal form, and the smallest byte that may begin a character
 * the form changes or composes: below U+0300 (lead bytes below 0xCC) everything is NFC and
 * composes with nothing; below U+00C0 (0xC3) nothing decomposes; the compatibility forms
 * change U+00A0 already, so only ASCII passes. */
static const struct {
    utf8proc_option_t opt;
    unsigned char first;
} norm_forms[] = {
    [PL_TOK_NORM_NFC] = {UTF8PROC_STABLE | UTF8PROC_COMPOSE, 0xCC},
    [PL_TOK_NORM_NFD] = {UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, 0xC3},
    [PL_TOK_NORM_NFKC] = {UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, 0x80},
    [PL_TOK_NORM_NFKD] = {UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, 0x80},
};

/* A valid UTF-8 run in the vocabulary's normal form (utf8proc, from the Unicode tables), then
 * pre-tokenized. A run with no byte from norm_forms[].first up is left as it is. */
static pl_status bpe_run(struct enc *e, const char *p, size_t n)
{
    const struct pl_tokenizer *t = e->t;
    size_t i = 0;
    const int form = t->norm;
    while (form && i < n && (unsigned char)p[i] < norm_forms[form].first) i++;
    if (!form || i == n) {
        if (e->normalize) {
            put_text(e, p, n);
            return PL_OK;
        }
        return pl_pretok_split(&t->pre, e->ps, p, n, bpe_word, e, e->err);
    }
    const utf8proc_option_t opt = norm_forms[form].opt;
    utf8proc_ssize_t m = 0;
    for (;;) { /* the decomposition's length, then again with room for it and a NUL byte */
        utf8proc_ssize_t cap = (utf8proc_ssize_t)e->nfc_cap;
        m = utf8proc_decompose((const utf8proc_uint8_t *)p, (utf8proc_ssize_t)n, e->nfc,
                               cap > 0 ? cap - 1 : 0, opt);
        if (m < 0)
            return pl_fail(e->err, PL_ERR_INVALID_ARG,
                           "Unicode normalization of %zu bytes failed: %s", n, utf8proc_errmsg(m));
        if (m < cap) break;
        pl_status s = grow(e, (void **)&e->nfc, &e->nfc_cap, (size_t)m + 1, sizeof *e->nfc,
                           "the normal form of the text");
        if (s) return s;
    }
    const utf8proc_ssize_t len = utf8proc_reencode(e->nfc, m, opt);
    if (len < 0)
        return pl_fail(e->err, PL_ERR_INVALID_ARG, "Unicode normalization of %zu bytes failed: %s",
                       n, utf8proc_errmsg(len));
    const char *q = (const char *)e->nfc;
    if (e->normalize) {
        put_text(e, q, (size_t)len);
        return PL_OK;
    }
    const char *seg = e->seg;
    const size_t seg_off = e->seg_off;
    e->seg = q;
    e->seg_off = (size_t)(p - e->text);
    pl_status s = pl_pretok_split(&t->pre, e->ps, q, (size_t)len, bpe_word, e, e->err);
    e->seg = seg;
    e->seg_off = seg_off;
    return s;
}

/* Valid UTF-8 runs go through the pre-tokenizer (bpe_run); each run of bytes that are not part
 * of a valid character is one word of its own. */
static pl_status bpe_encode(struct enc *e, const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    pl_status s;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n) {
            if (u[j] < 0x80) {
                j++;
                continue;
            }
            size_t k = pl_utf8_char(u + j, n - j);
            if (k == 0) break;
            j += k;
        }
        if (j > i && (s = bpe_run(e, p + i, j - i))) return s;
        size_t k = j;
        while (k < n && pl_utf8_char(u + k, n - k) == 0) k++;
        if (k > j && e->normalize)
            put_text(e, p + j, k - j);
        else if (k > j && (s = bpe_word(e, p + j, k - j)))
            return s;
        i = k;
    }
    return PL_OK;
}

/* ---- the driver ---- */

static pl_status encode_raw(struct enc *e, const char *p, size_t n, int prefix)
{
    if (e->normalize && e->t->kind == PL_TOK_SPM) { /* SentencePiece: no normalizer */
        put_text(e, p, n);
        return PL_OK;
    }
    if (e->t->kind == PL_TOK_SPM) return spm_encode(e, p, n, prefix && e->t->add_space_prefix);
    return bpe_encode(e, p, n);
}

/* taken[pos .. pos + n) all clear */
static int is_free(const uint8_t *taken, size_t pos, size_t n)
{
    for (size_t i = pos; i < pos + n; i++)
        if (taken[i >> 3] & (1u << (i & 7))) return 0;
    return 1;
}

static int claim_before(const void *a, const void *b)
{
    size_t x = ((const struct claim *)a)->pos, y = ((const struct claim *)b)->pos;
    return x < y ? -1 : x > y;
}

/* Candidates in t->special's order (id holds the index), then by position. */
static int cand_before(const void *a, const void *b)
{
    const struct claim *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The index in t->special of the candidate whose text is p[0..n), or -1. */
static int32_t special_at(const struct pl_tokenizer *t, const char *p, size_t n)
{
    for (uint32_t h = pl_tok_hash(p, n) & t->special_mask;; h = (h + 1) & t->special_mask) {
        uint32_t v = t->special_hash[h];
        if (v == 0) return -1;
        const struct pl_tok_entry *x = &t->tok[t->special[v - 1]];
        if (x->text_len == n && memcmp(t->arena + x->text_off, p, n) == 0) return (int32_t)v - 1;
    }
}

/* Claims text[i .. i + tl) for the candidate with index k in t->special. */
static pl_status claim(struct enc *e, size_t len, size_t i, uint32_t tl, uint32_t k, size_t *n)
{
    pl_status s;
    if (!e->taken && !(e->taken = pl_calloc(len / 8 + 1, 1)))
        return pl_fail(e->err, PL_ERR_NOMEM, "no memory to split %zu bytes of text", len);
    if ((s = grow(e, (void **)&e->claim, &e->claim_cap, *n + 1, sizeof *e->claim,
                  "special-token matches")))
        return s;
    e->claim[(*n)++] = (struct claim){i, tl, (int32_t)e->t->special[k]};
    for (size_t b = i; b < i + tl; b++) e->taken[b >> 3] |= (uint8_t)(1u << (b & 7));
    return PL_OK;
}

static int is_taken(const uint8_t *taken, size_t i)
{
    return taken && (taken[i >> 3] & (1u << (i & 7)));
}

/* A group of texts this short is scanned candidate by candidate; a longer one by hashing each
 * place once (many "<|reserved_…|>" tokens of one length share their first bytes). */
#define FEW_OF_ONE_LENGTH 8

/* llama.cpp's partition: each candidate in t->special's order (longest text first, then lower
 * id) claims its occurrences left to right where no earlier claim is; control and unknown
 * tokens only when parse. Done one text length at a time, over the places that hold a byte
 * some candidate starts with. Claims come back by position in e->claim[0 .. *n). */
static pl_status find_specials(struct enc *e, const char *text, size_t len, int parse, size_t *n)
{
    const struct pl_tokenizer *t = e->t;
    /* The positions of each byte some candidate starts with: at[c] .. at[c + 1] in e->pos. */
    uint32_t at[257] = {0}, fill[256];
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (t->special_first[c >> 3] & (1u << (c & 7))) at[c + 1]++;
    }
    for (int c = 0; c < 256; c++) at[c + 1] += at[c];
    if (at[256] == 0) return PL_OK;
    pl_status s =
        grow(e, (void **)&e->pos, &e->pos_cap, at[256], sizeof *e->pos, "special-token positions");
    if (s) return s;
    memcpy(fill, at, sizeof fill);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (t->special_first[c >> 3] & (1u << (c & 7))) e->pos[fill[c]++] = (uint32_t)i;
    }
    for (uint32_t g = 0, end; g < t->n_special; g = end) {
        const uint32_t tl = t->tok[t->special[g]].text_len;
        uint8_t first[32] = {0};
        for (end = g; end < t->n_special && t->tok[t->special[end]].text_len == tl; end++) {
            const struct pl_tok_entry *x = &t->tok[t->special[end]];
            unsigned char c = (unsigned char)t->arena[x->text_off];
            if (parse || x->special == 2) first[c >> 3] |= (uint8_t)(1u << (c & 7));
        }
        if (tl > len) continue;
        if (end - g <= FEW_OF_ONE_LENGTH) {
            for (uint32_t k = g; k < end; k++) {
                const struct pl_tok_entry *x = &t->tok[t->special[k]];
                const char *xt = t->arena + x->text_off;
                const unsigned char c = (unsigned char)xt[0];
                if (x->special == 1 && !parse) continue;
                size_t next = 0; /* past this candidate's last claim */
                for (uint32_t j = at[c]; j < at[c + 1] && e->pos[j] <= len - tl; j++) {
                    const size_t i = e->pos[j];
                    if (i < next || is_taken(e->taken, i) || memcmp(text + i, xt, tl) != 0 ||
                        (e->taken && !is_free(e->taken, i, tl)))
                        continue;
                    if ((s = claim(e, len, i, tl, k, n))) return s;
                    next = i + tl;
                }
            }
            continue;
        }
        size_t nc = 0; /* every place one of the group's texts occurs, then in their order */
        for (int c = 0; c < 256; c++) {
            if (!(first[c >> 3] & (1u << (c & 7)))) continue;
            for (uint32_t j = at[c]; j < at[c + 1] && e->pos[j] <= len - tl; j++) {
                if (is_taken(e->taken, e->pos[j])) continue;
                int32_t k = special_at(t, text + e->pos[j], tl);
                if (k < 0 || (!parse && t->tok[t->special[k]].special == 1)) continue;
                if ((s = grow(e, (void **)&e->cand, &e->cand_cap, nc + 1, sizeof *e->cand,
                              "special-token candidates")))
                    return s;
                e->cand[nc++] = (struct claim){e->pos[j], tl, k};
            }
        }
        if (nc > 1) qsort(e->cand, nc, sizeof *e->cand, cand_before);
        for (size_t q = 0; q < nc; q++)
            if (!(e->taken && !is_free(e->taken, e->cand[q].pos, tl)) &&
                (s = claim(e, len, e->cand[q].pos, tl, (uint32_t)e->cand[q].id, n)))
                return s;
    }
    if (*n > 1) qsort(e->claim, *n, sizeof *e->claim, claim_before);
    return PL_OK;
}

static pl_status encode_text(struct enc *e, const char *text, size_t len, uint32_t flags,
                             int prefix)
{
    const struct pl_tokenizer *t = e->t;
    pl_status s;
    int parse = (flags & PL_TOKENIZE_PARSE_SPECIAL) != 0;
    size_t n_claim = 0;
    if ((parse ? t->n_special > 0 : t->n_user_defined > 0) &&
        (s = find_specials(e, text, len, parse, &n_claim)))
        return s;
    /* prefix: SentencePiece's dummy space, at the start and after a special token */
    size_t frag = 0;
    if (flags & PL_TOKENIZE_ADD_BOS && t->add_bos) put(e, t->bos);
    for (size_t k = 0; k < n_claim; k++) {
        const struct claim *c = &e->claim[k];
        if (c->pos > frag && (s = encode_raw(e, text + frag, c->pos - frag, prefix))) return s;
        put(e, c->id);
        if (e->normalize) put_text(e, text + c->pos, c->len);
        prefix = 1;
        frag = c->pos + c->len;
    }
    if (frag < len && (s = encode_raw(e, text + frag, len - frag, prefix))) return s;
    if (flags & PL_TOKENIZE_ADD_BOS && t->add_eos) put(e, t->eos);
    return PL_OK;
}

/* The arguments both entry points take; known: the flags they accept, spelled for messages. */
static pl_status check_args(const struct pl_tokenizer *t, const char *text, size_t len,
                            uint32_t flags, uint32_t known, const char *known_names,
                            const void *out, size_t cap, size_t *n_out, pl_error *err)
{
    if (n_out) *n_out = 0;
    if (!t || !n_out) return pl_fail(err, PL_ERR_INVALID_ARG, "tokenizer or n_out is NULL");
    if (!text && len > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "text is NULL");
    if (!out && cap > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL but cap is %zu", cap);
    if (flags & ~known)
        return pl_fail(err, PL_ERR_INVALID_ARG, "unknown pl_tokenize flags 0x%x (known: %s)", flags,
                       known_names);
    if (len > PL_TOK_MAX_TEXT)
        return pl_fail(err, PL_ERR_LIMIT, "text of %zu bytes exceeds PL_TOK_MAX_TEXT (%zu)", len,
                       PL_TOK_MAX_TEXT);
    return PL_OK;
}

/* Runs the encoder over text and frees its scratch; the count is e->n or e->norm_n. */
static pl_status run_enc(struct enc *e, const char *text, size_t len, uint32_t flags, int prefix)
{
    pl_status s = PL_OK;
    if (e->t->kind == PL_TOK_BPE && !e->normalize)
        s = pl_pretok_scratch_new(&e->ps, &e->t->pre, e->err);
    if (!s) s = encode_text(e, text ? text : "", len, flags, prefix);
    pl_pretok_scratch_free(e->ps);
    pl_free(e->sym);
    pl_free(e->heap);
    pl_free(e->buf);
    pl_free(e->nfc);
    pl_free(e->claim);
    pl_free(e->taken);
    pl_free(e->pos);
    pl_free(e->cand);
    return s;
}

pl_status pl_tok_normalize(const struct pl_tokenizer *t, const char *text, size_t len,
                           uint32_t flags, char *out, size_t cap, size_t *n_out, pl_error *err)
{
    pl_status s = check_args(t, text, len, flags, PL_TOKENIZE_PARSE_SPECIAL,
                             "PL_TOKENIZE_PARSE_SPECIAL", out, cap, n_out, err);
    if (s) return s;
    struct enc e = {.t = t,
                    .err = err,
                    .text = text,
                    .seg = text,
                    .normalize = 1,
                    .norm = out,
                    .norm_cap = cap};
    if ((s = run_enc(&e, text, len, flags, 1))) return s;
    *n_out = e.norm_n;
    if (e.norm_n > cap)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL,
                       "the normalized text is %zu bytes but the output buffer holds %zu", e.norm_n,
                       cap);
    return pl_ok(err);
}

pl_status pl_tok_encode(const struct pl_tokenizer *t, const char *text, size_t len, uint32_t flags,
                        int32_t *out, size_t cap, size_t *n_out, pl_error *err)
{
    return pl_tok_encode_cont(t, text, len, flags, 1, out, cap, n_out, err);
}

pl_status pl_tok_encode_cont(const struct pl_tokenizer *t, const char *text, size_t len,
                             uint32_t flags, int prefix, int32_t *out, size_t cap, size_t *n_out,
                             pl_error *err)
{
    pl_status s =
        check_args(t, text, len, flags, PL_TOKENIZE_ADD_BOS | PL_TOKENIZE_PARSE_SPECIAL,
                   "PL_TOKENIZE_ADD_BOS, PL_TOKENIZE_PARSE_SPECIAL", out, cap, n_out, err);
    if (s) return s;
    struct enc e = {.t = t, .out = out, .cap = cap, .err = err, .text = text, .seg = text};
    if ((s = run_enc(&e, text, len, flags, prefix))) return s;
    *n_out = e.n;
    if (e.n > cap)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL,
                       "the text needs %zu tokens but the output buffer holds %zu", e.n, cap);
    return pl_ok(err);
}
