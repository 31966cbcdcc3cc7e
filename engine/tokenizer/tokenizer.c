/* tokenizer.c — loads and validates a vocabulary from GGUF tokenizer.ggml.* metadata: token
 * texts, scores, types, merges, special ids, flags. Not the encoder (tokenizer_encode.c) nor
 * the decoder (detok.c). Every rejection names the key, and the array index where there is one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"
#include "utf8.h"

#define KEY_MODEL     "tokenizer.ggml.model"
#define KEY_TOKENS    "tokenizer.ggml.tokens"
#define KEY_SCORES    "tokenizer.ggml.scores"
#define KEY_TYPES     "tokenizer.ggml.token_type"
#define KEY_MERGES    "tokenizer.ggml.merges"
#define KEY_PRE       "tokenizer.ggml.pre"
#define KEY_NORM      PL_TOK_KEY_NORMALIZER
#define KEY_ADD_BOS   "tokenizer.ggml.add_bos_token"
#define KEY_ADD_EOS   "tokenizer.ggml.add_eos_token"
#define KEY_ADD_SPACE "tokenizer.ggml.add_space_prefix"

/* An empty token text is loaded as "[EMPTY_<id>]", the name llama.cpp gives it. */
#define EMPTY_NAME_MAX 24

/* "\xe2\x96\x81" is U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's space. */
#define SPM_SPACE "\xe2\x96\x81"

/* ---- small helpers ---- */

uint32_t pl_tok_hash(const char *p, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, p, n);
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return (uint32_t)(h ^ (h >> 32));
}

/* GPT-2's bytes_to_unicode, inverted: the byte a code point of a token text stands for, or -1.
 * Printable Latin-1 bytes stand for themselves; the other 68 bytes were moved, in order, to
 * U+0100..U+0143. */
static int gpt2_cp_to_byte(uint32_t cp)
{
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
        return (int)cp;
    if (cp < 0x100 || cp >= 0x100 + 68) return -1;
    uint32_t n = cp - 0x100;
    if (n < 33) return (int)n;                    /* 0x00..0x20 */
    if (n < 33 + 34) return (int)(0x7F + n - 33); /* 0x7F..0xA0 */
    return 0xAD;
}

/* Decodes a byte-level token text into out (at most n bytes); returns the length, or -1 when
 * some character is not in the mapping. */
static int64_t gpt2_decode(const char *s, size_t n, char *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        size_t k = pl_utf8_char(p + i, n - i);
        if (k == 0) return -1;
        int b = gpt2_cp_to_byte(pl_utf8_cp(p + i, k));
        if (b < 0) return -1;
        out[o++] = (char)b;
        i += k;
    }
    return (int64_t)o;
}

/* A token text for a message: quoted, C-escaped, cut at 40 bytes. */
static const char *show(char *buf, size_t cap, const char *p, size_t n)
{
    size_t o = 0;
    buf[o++] = '\'';
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        unsigned char c = (unsigned char)p[i];
        if (i == 40) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (c == '\n')
            o += (size_t)snprintf(buf + o, cap - o, "\\n");
        else if (c == '\t')
            o += (size_t)snprintf(buf + o, cap - o, "\\t");
        else if (c == '\\' || c == '\'')
            o += (size_t)snprintf(buf + o, cap - o, "\\%c", c);
        else if (c < 0x20 || c == 0x7F)
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
        else
            buf[o++] = (char)c;
    }
    buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}

static const char *type_name(int type)
{
    static const char *const names[] = {"undefined",    "normal", "unknown", "control",
                                        "user-defined", "unused", "byte"};
    return type >= 0 && type <= 6 ? names[type] : "invalid";
}

static int is_matchable(int type)
{
    return type == PL_TOKEN_NORMAL || type == PL_TOKEN_USER_DEFINED || type == PL_TOKEN_UNDEFINED;
}

static uint32_t slots_for(uint64_t n)
{
    uint64_t s = 16;
    while (s < 2 * n) s <<= 1;
    return (uint32_t)s;
}

/* ---- lookups ---- */

int32_t pl_tok_find(const struct pl_tokenizer *t, const char *p, size_t n)
{
    const uint32_t mask = t->match_mask;
    for (uint32_t h = pl_tok_hash(p, n) & mask;; h = (h + 1) & mask) {
        uint32_t v = t->match_hash[h];
        if (v == 0) return -1;
        const struct pl_tok_entry *e = &t->tok[v - 1];
        if (e->match_len == n && memcmp(t->arena + e->match_off, p, n) == 0) return (int32_t)v - 1;
    }
}

static uint32_t pair_hash(uint32_t a, uint32_t b)
{
    uint64_t k = ((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(k >> 32);
}

const struct pl_tok_merge *pl_tok_find_merge(const struct pl_tokenizer *t, uint32_t left,
                                             uint32_t right)
{
    const uint32_t mask = t->merge_mask;
    for (uint32_t h = pair_hash(left, right) & mask;; h = (h + 1) & mask) {
        const struct pl_tok_merge *m = &t->merges[h];
        if (m->left == UINT32_MAX) return NULL;
        if (m->left == left && m->right == right) return m;
    }
}

/* ---- loading ---- */

struct loader {
    struct pl_tokenizer *t;
    const pl_gguf *g;
    pl_error *err;
    char sb[128], sb2[128]; /* show() buffers */
};

/* An optional array key: *found = 0 when absent; PL_ERR_TYPE if the key is not an array of
 * elem_type; PL_ERR_FORMAT if its length is not want (want = 0: any length). */
static pl_status get_array(struct loader *L, const char *key, pl_gguf_type elem_type, uint64_t want,
                           pl_gguf_array *a, int *found)
{
    *found = 0;
    int64_t i = pl_gguf_find_key(L->g, key);
    if (i < 0) return PL_OK;
    pl_gguf_type type = pl_gguf_kv_type(L->g, (uint64_t)i);
    if (type != PL_GGUF_ARRAY)
        return pl_fail(L->err, PL_ERR_TYPE, "%s has type %s, expected array of %s", key,
                       pl_gguf_type_name(type), pl_gguf_type_name(elem_type));
    pl_status s = pl_gguf_kv_array(L->g, (uint64_t)i, a, L->err);
    if (s) return s;
    if (a->type != elem_type)
        return pl_fail(L->err, PL_ERR_TYPE, "%s is an array of %s, expected array of %s", key,
                       pl_gguf_type_name(a->type), pl_gguf_type_name(elem_type));
    if (want && a->count != want)
        return pl_fail(L->err, PL_ERR_FORMAT,
                       "%s has %llu elements but " KEY_TOKENS " has %llu: they must match", key,
                       (unsigned long long)a->count, (unsigned long long)want);
    *found = 1;
    return PL_OK;
}

/* An optional bool key: *v is left alone when absent. */
static pl_status get_bool(struct loader *L, const char *key, int *v, int *found)
{
    *found = 0;
    int64_t i = pl_gguf_find_key(L->g, key);
    if (i < 0) return PL_OK;
    pl_gguf_type type = pl_gguf_kv_type(L->g, (uint64_t)i);
    if (type != PL_GGUF_BOOL)
        return pl_fail(L->err, PL_ERR_TYPE, "%s has type %s, expected bool", key,
                       pl_gguf_type_name(type));
    uint8_t b;
    pl_status s = pl_gguf_kv_scalar(L->g, (uint64_t)i, PL_GGUF_BOOL, &b, L->err);
    if (s) return s;
    *v = b != 0;
    *found = 1;
    return PL_OK;
}

/* An optional special-token id: uint32 (the format's type) or int32 (-1 = none). */
static pl_status get_id(struct loader *L, const char *key, int32_t *id, int *found)
{
    *found = 0;
    int64_t i = pl_gguf_find_key(L->g, key);
    if (i < 0) return PL_OK;
    pl_gguf_type type = pl_gguf_kv_type(L->g, (uint64_t)i);
    int64_t v;
    pl_status s;
    if (type == PL_GGUF_UINT32) {
        uint32_t u;
        if ((s = pl_gguf_kv_scalar(L->g, (uint64_t)i, type, &u, L->err))) return s;
        v = u;
    } else if (type == PL_GGUF_INT32) {
        int32_t x;
        if ((s = pl_gguf_kv_scalar(L->g, (uint64_t)i, type, &x, L->err))) return s;
        v = x;
    } else {
        return pl_fail(L->err, PL_ERR_TYPE, "%s has type %s, expected uint32", key,
                       pl_gguf_type_name(type));
    }
    *found = 1;
    if (v == -1) {
        *id = -1;
        return PL_OK;
    }
    if (v < 0 || v >= (int64_t)L->t->n_vocab)
        return pl_fail(L->err, PL_ERR_FORMAT,
                       "%s = %lld is out of range: the vocabulary has %u tokens (ids 0..%u)", key,
                       (long long)v, L->t->n_vocab, L->t->n_vocab - 1);
    *id = (int32_t)v;
    return PL_OK;
}

/* "<0xXX>" -> XX (two hex digits, either case), else -1. */
static int parse_byte_token(const char *p, size_t n)
{
    if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static pl_status load_model_kind(struct loader *L)
{
    pl_str model;
    pl_status s = pl_gguf_get_string(L->g, KEY_MODEL, &model, L->err);
    if (s) return s;
    if (model.len == 5 && memcmp(model.ptr, "llama", 5) == 0)
        L->t->kind = PL_TOK_SPM;
    else if (model.len == 4 && memcmp(model.ptr, "gpt2", 4) == 0)
        L->t->kind = PL_TOK_BPE;
    else
        return pl_fail(L->err, PL_ERR_UNSUPPORTED,
                       KEY_MODEL " = %s is not supported (plumb reads 'llama' = SentencePiece BPE "
                                 "and 'gpt2' = byte-level BPE)",
                       show(L->sb, sizeof L->sb, model.ptr, (size_t)model.len));
    return PL_OK;
}

/* Texts, scores and types into entries; the arena holds each text and, where they differ from
 * it, the match bytes and the piece. */
static pl_status load_tokens(struct loader *L)
{
    struct pl_tokenizer *t = L->t;
    pl_gguf_array toks, scores, types;
    int found, has_scores, has_types;
    pl_status s = get_array(L, KEY_TOKENS, PL_GGUF_STRING, 0, &toks, &found);
    if (s) return s;
    if (!found) return pl_fail(L->err, PL_ERR_NOT_FOUND, "metadata key " KEY_TOKENS " not found");
    if (toks.count == 0) return pl_fail(L->err, PL_ERR_FORMAT, KEY_TOKENS " is empty");
    if (toks.count > PL_TOK_MAX_VOCAB)
        return pl_fail(L->err, PL_ERR_LIMIT,
                       KEY_TOKENS " has %llu tokens, over PL_TOK_MAX_VOCAB (%u)",
                       (unsigned long long)toks.count, PL_TOK_MAX_VOCAB);
    t->n_vocab = (uint32_t)toks.count;
    if ((s = get_array(L, KEY_SCORES, PL_GGUF_FLOAT32, toks.count, &scores, &has_scores))) return s;
    if ((s = get_array(L, KEY_TYPES, PL_GGUF_INT32, toks.count, &types, &has_types))) return s;

    /* Pass 1: sizes. Each text appears once, plus at most one derived copy (SPM pieces; BPE
     * decoded bytes, shared by match and piece). */
    uint64_t total = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        pl_str str;
        if ((s = pl_gguf_array_string(&toks, i, &str, L->err))) return s;
        if (str.len > PL_TOK_MAX_TOKEN_BYTES)
            return pl_fail(L->err, PL_ERR_LIMIT,
                           KEY_TOKENS "[%u] is %llu bytes, over PL_TOK_MAX_TOKEN_BYTES (%u)", i,
                           (unsigned long long)str.len, PL_TOK_MAX_TOKEN_BYTES);
        total += 2 * (str.len ? str.len : EMPTY_NAME_MAX);
    }
    if (total > UINT32_MAX)
        return pl_fail(L->err, PL_ERR_LIMIT,
                       KEY_TOKENS " holds %llu bytes of text, over the 4 GiB the tokenizer indexes",
                       (unsigned long long)(total / 2));
    t->tok = pl_calloc(t->n_vocab, sizeof *t->tok);
    t->arena = pl_malloc((size_t)total + 1);
    if (!t->tok || !t->arena)
        return pl_fail(L->err, PL_ERR_NOMEM, "no memory for %u tokens (%llu bytes of text)",
                       t->n_vocab, (unsigned long long)total);

    /* Pass 2: copy, validate types, derive match bytes and pieces. */
    size_t o = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        struct pl_tok_entry *e = &t->tok[i];
        pl_str str;
        if ((s = pl_gguf_array_string(&toks, i, &str, L->err))) return s;
        int32_t type = PL_TOKEN_NORMAL;
        if (has_types && (s = pl_gguf_array_elem(&types, i, &type, L->err))) return s;
        if (type < 0 || type > PL_TOKEN_BYTE)
            return pl_fail(L->err, PL_ERR_FORMAT,
                           KEY_TYPES "[%u] = %d is not a token type (0..6: undefined, normal, "
                                     "unknown, control, user-defined, unused, byte)",
                           i, type);
        e->type = (uint8_t)type;
        if (has_scores) {
            if ((s = pl_gguf_array_elem(&scores, i, &e->score, L->err))) return s;
            if (isnan(e->score)) return pl_fail(L->err, PL_ERR_FORMAT, KEY_SCORES "[%u] is NaN", i);
        }
        char empty[EMPTY_NAME_MAX];
        if (str.len == 0) { /* as llama.cpp: the token is named by its id and behaves as such */
            str.len = (uint64_t)snprintf(empty, sizeof empty, "[EMPTY_%u]", i);
            str.ptr = empty;
        }
        size_t n = (size_t)str.len;
        memcpy(t->arena + o, str.ptr, n);
        e->text_off = e->match_off = e->piece_off = (uint32_t)o;
        e->text_len = e->match_len = e->piece_len = (uint32_t)n;
        e->keyed = t->kind == PL_TOK_SPM && is_matchable(type);
        o += n;

        if (type == PL_TOKEN_BYTE) {
            int b = parse_byte_token(str.ptr, n);
            if (b < 0)
                return pl_fail(L->err, PL_ERR_FORMAT,
                               KEY_TOKENS "[%u] = %s has type byte but is not <0xXX> with two "
                                          "hex digits",
                               i, show(L->sb, sizeof L->sb, str.ptr, n));
            if (t->byte_token[b] >= 0)
                return pl_fail(L->err, PL_ERR_FORMAT,
                               KEY_TOKENS "[%u] = %s duplicates byte 0x%02X of token %d", i,
                               show(L->sb, sizeof L->sb, str.ptr, n), b, t->byte_token[b]);
            t->byte_token[b] = (int32_t)i;
            t->arena[o] = (char)b;
            e->piece_off = (uint32_t)o;
            e->piece_len = 1;
            o += 1;
        } else if (t->kind == PL_TOK_SPM && is_matchable(type)) {
            /* The piece is the text with every ▁ turned back into a space. */
            size_t start = o;
            for (size_t k = 0; k < n;) {
                if (k + 3 <= n && memcmp(str.ptr + k, SPM_SPACE, 3) == 0) {
                    t->arena[o++] = ' ';
                    k += 3;
                } else {
                    t->arena[o++] = str.ptr[k++];
                }
            }
            e->piece_off = (uint32_t)start;
            e->piece_len = (uint32_t)(o - start);
        } else if (t->kind == PL_TOK_BPE) {
            /* Byte-level BPE finds a token by its text in GPT-2's mapping, whatever its type
             * (llama.cpp's text_to_token): the key is the bytes that text spells. A text outside
             * the mapping (added tokens stored raw) has no key; only the splitter finds it. */
            int64_t k = gpt2_decode(str.ptr, n, t->arena + o);
            if (k > 0) {
                e->keyed = 1;
                e->match_off = (uint32_t)o;
                e->match_len = (uint32_t)k;
                if (type == PL_TOKEN_NORMAL || type == PL_TOKEN_UNDEFINED) {
                    e->piece_off = (uint32_t)o;
                    e->piece_len = (uint32_t)k;
                }
                o += (size_t)k;
            }
        }
    }
    t->arena_len = o;
    return PL_OK;
}

/* One text, one token: llama.cpp refuses a vocabulary that holds a text twice (whatever the
 * types), and so does plumb, naming both ids. Texts that differ but spell the same bytes (an added
 * "  " beside byte-level "ĠĠ") are two tokens, told apart by where each is found (README). */
static pl_status check_unique_texts(struct loader *L)
{
    struct pl_tokenizer *t = L->t;
    uint32_t slots = slots_for(t->n_vocab);
    uint32_t *seen = pl_calloc(slots, sizeof *seen);
    if (!seen) return pl_fail(L->err, PL_ERR_NOMEM, "no memory for the token index");
    pl_status s = PL_OK;
    for (uint32_t i = 0; i < t->n_vocab && !s; i++) {
        const struct pl_tok_entry *e = &t->tok[i];
        const char *p = t->arena + e->text_off;
        uint32_t h = pl_tok_hash(p, e->text_len) & (slots - 1);
        for (; seen[h]; h = (h + 1) & (slots - 1)) {
            const struct pl_tok_entry *d = &t->tok[seen[h] - 1];
            if (d->text_len == e->text_len && memcmp(t->arena + d->text_off, p, e->text_len) == 0)
                break;
        }
        if (seen[h])
            s = pl_fail(L->err, PL_ERR_FORMAT,
                        KEY_TOKENS "[%u] = %s (%s) duplicates token %u (%s): a text may name one "
                                   "token only",
                        i, show(L->sb, sizeof L->sb, p, e->text_len), type_name(e->type),
                        seen[h] - 1, type_name(t->tok[seen[h] - 1].type));
        else
            seen[h] = i + 1;
    }
    pl_free(seen);
    return s;
}

/* The index pl_tok_find searches: keyed tokens by their match bytes. Keys are unique once texts
 * are: SentencePiece keys are the texts; byte-level keys are the bytes a text in GPT-2's mapping
 * spells, and that mapping is one-to-one. */
static pl_status build_match_hash(struct loader *L)
{
    struct pl_tokenizer *t = L->t;
    pl_status s = check_unique_texts(L);
    if (s) return s;
    uint32_t slots = slots_for(t->n_vocab);
    t->match_hash = pl_calloc(slots, sizeof *t->match_hash);
    if (!t->match_hash) return pl_fail(L->err, PL_ERR_NOMEM, "no memory for the token index");
    t->match_mask = slots - 1;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        const struct pl_tok_entry *e = &t->tok[i];
        if (!e->keyed) continue;
        if (e->match_len > t->max_match_len) t->max_match_len = e->match_len;
        uint32_t h = pl_tok_hash(t->arena + e->match_off, e->match_len) & t->match_mask;
        while (t->match_hash[h]) h = (h + 1) & t->match_mask;
        t->match_hash[h] = i + 1;
    }
    return PL_OK;
}

/* 1 unless some matchable token has a ▁ right after a character that is not ▁: then merges
 * could cross word starts and SentencePiece must merge whole fragments. */
static int spm_words_safe(const struct pl_tokenizer *t)
{
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        const struct pl_tok_entry *e = &t->tok[i];
        if (!is_matchable(e->type)) continue;
        const char *p = t->arena + e->match_off;
        for (uint32_t j = 1; j + 3 <= e->match_len; j++)
            if (memcmp(p + j, SPM_SPACE, 3) == 0 && (j < 3 || memcmp(p + j - 3, SPM_SPACE, 3) != 0))
                return 0;
    }
    return 1;
}

/* Byte fallback targets not given by <0xXX> tokens: the token whose match bytes are that one
 * byte (byte-level BPE's 256 base tokens; SentencePiece's single-character pieces). */
static void fill_byte_tokens(struct pl_tokenizer *t)
{
    for (int b = 0; b < 256; b++) {
        if (t->byte_token[b] >= 0) continue;
        char c = (char)b;
        t->byte_token[b] = pl_tok_find(t, &c, 1);
    }
}

/* The splitter's order, llama.cpp's: longer texts first; among texts of one length, the lower id
 * (llama.cpp sorts by length only; see README). */
static int cmp_special(const void *a, const void *b, const struct pl_tokenizer *t)
{
    uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
    uint32_t la = t->tok[ia].text_len, lb = t->tok[ib].text_len;
    if (la != lb) return la > lb ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

/* Heapsort with a context (qsort_r is not portable C11). */
static void special_sift(uint32_t *v, size_t root, size_t n, const struct pl_tokenizer *t)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n) return;
        if (c + 1 < n && cmp_special(&v[c + 1], &v[c], t) > 0) c++;
        if (cmp_special(&v[root], &v[c], t) >= 0) return;
        uint32_t tmp = v[root];
        v[root] = v[c];
        v[c] = tmp;
        root = c;
    }
}

static void special_sort(uint32_t *v, size_t n, const struct pl_tokenizer *t)
{
    for (size_t i = n / 2; i-- > 0;) special_sift(v, i, n, t);
    for (size_t end = n; end-- > 1;) {
        uint32_t tmp = v[0];
        v[0] = v[end];
        v[end] = tmp;
        special_sift(v, 0, end, t);
    }
}

static pl_status build_specials(struct loader *L)
{
    struct pl_tokenizer *t = L->t;
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        struct pl_tok_entry *e = &t->tok[i];
        if (e->type == PL_TOKEN_CONTROL || e->type == PL_TOKEN_UNKNOWN)
            e->special = 1;
        else if (e->type == PL_TOKEN_USER_DEFINED)
            e->special = 2;
        if (e->special) n++;
        if (e->special == 2) t->n_user_defined++;
    }
    t->n_special = n;
    t->special = pl_malloc((n ? n : 1) * sizeof *t->special);
    if (!t->special) return pl_fail(L->err, PL_ERR_NOMEM, "no memory for %u special tokens", n);
    n = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++)
        if (t->tok[i].special) t->special[n++] = i;
    special_sort(t->special, n, t);
    uint32_t slots = slots_for(n);
    t->special_hash = pl_calloc(slots, sizeof *t->special_hash);
    if (!t->special_hash) return pl_fail(L->err, PL_ERR_NOMEM, "no memory for the special index");
    t->special_mask = slots - 1;
    for (uint32_t k = 0; k < n; k++) {
        const struct pl_tok_entry *e = &t->tok[t->special[k]];
        unsigned char b = (unsigned char)t->arena[e->text_off];
        t->special_first[b >> 3] |= (uint8_t)(1u << (b & 7));
        uint32_t h = pl_tok_hash(t->arena + e->text_off, e->text_len) & t->special_mask;
        while (t->special_hash[h]) h = (h + 1) & t->special_mask;
        t->special_hash[h] = k + 1;
    }
    return PL_OK;
}

/* Splits "left right" at the first space after the first byte (a token may start with ' '). */
static pl_status load_merges(struct loader *L)
{
    struct pl_tokenizer *t = L->t;
    pl_gguf_array a;
    int found;
    pl_status s = get_array(L, KEY_MERGES, PL_GGUF_STRING, 0, &a, &found);
    if (s) return s;
    if (!found)
        return pl_fail(L->err, PL_ERR_NOT_FOUND,
                       "metadata key " KEY_MERGES
                       " not found (a 'gpt2' vocabulary needs its merges)");
    if (a.count > PL_TOK_MAX_MERGES)
        return pl_fail(L->err, PL_ERR_LIMIT,
                       KEY_MERGES " has %llu entries, over PL_TOK_MAX_MERGES (%u)",
                       (unsigned long long)a.count, PL_TOK_MAX_MERGES);
    uint32_t slots = slots_for(a.count);
    t->merges = pl_malloc((size_t)slots * sizeof *t->merges);
    char *buf = pl_malloc(2 * PL_TOK_MAX_TOKEN_BYTES + 2);
    if (!t->merges || !buf) {
        pl_free(buf);
        return pl_fail(L->err, PL_ERR_NOMEM, "no memory for %llu merges",
                       (unsigned long long)a.count);
    }
    for (uint32_t h = 0; h < slots; h++) t->merges[h].left = UINT32_MAX;
    t->merge_mask = slots - 1;
    for (uint32_t i = 0; i < (uint32_t)a.count && s == PL_OK; i++) {
        pl_str m;
        if ((s = pl_gguf_array_string(&a, i, &m, L->err))) break;
        const char *sp = m.len > 1 ? memchr(m.ptr + 1, ' ', (size_t)m.len - 1) : NULL;
        if (!sp || (uint64_t)(sp - m.ptr) + 1 >= m.len) {
            s = pl_fail(L->err, PL_ERR_FORMAT,
                        KEY_MERGES "[%u] = %s is not two tokens separated by a space", i,
                        show(L->sb, sizeof L->sb, m.ptr, (size_t)m.len));
            break;
        }
        size_t nl = (size_t)(sp - m.ptr), nr = (size_t)m.len - nl - 1;
        if (nl > PL_TOK_MAX_TOKEN_BYTES || nr > PL_TOK_MAX_TOKEN_BYTES) {
            s = pl_fail(L->err, PL_ERR_FORMAT,
                        KEY_MERGES "[%u] names a token longer than any in " KEY_TOKENS, i);
            break;
        }
        int64_t dl = gpt2_decode(m.ptr, nl, buf);
        int64_t dr = dl >= 0 ? gpt2_decode(sp + 1, nr, buf + dl) : -1;
        int32_t left = dl > 0 ? pl_tok_find(t, buf, (size_t)dl) : -1;
        int32_t right = dr > 0 ? pl_tok_find(t, buf + dl, (size_t)dr) : -1;
        if (left < 0 || right < 0) {
            int bad_left = left < 0;
            s = pl_fail(L->err, PL_ERR_FORMAT,
                        KEY_MERGES "[%u] = %s: %s is not a token of " KEY_TOKENS, i,
                        show(L->sb, sizeof L->sb, m.ptr, (size_t)m.len),
                        show(L->sb2, sizeof L->sb2, bad_left ? m.ptr : sp + 1, bad_left ? nl : nr));
            break;
        }
        int32_t result = pl_tok_find(t, buf, (size_t)(dl + dr));
        if (result < 0) {
            s = pl_fail(L->err, PL_ERR_FORMAT,
                        KEY_MERGES
                        "[%u] = %s: the merged token (the two joined) is not in " KEY_TOKENS,
                        i, show(L->sb, sizeof L->sb, m.ptr, (size_t)m.len));
            break;
        }
        uint32_t h = pair_hash((uint32_t)left, (uint32_t)right) & t->merge_mask;
        while (t->merges[h].left != UINT32_MAX &&
               !(t->merges[h].left == (uint32_t)left && t->merges[h].right == (uint32_t)right))
            h = (h + 1) & t->merge_mask;
        if (t->merges[h].left == UINT32_MAX) { /* a repeated pair keeps its first (best) rank */
            t->merges[h] =
                (struct pl_tok_merge){(uint32_t)left, (uint32_t)right, (uint32_t)result, i};
            t->n_merges++;
        }
    }
    pl_free(buf);
    return s;
}

/* s equals the lower-case ASCII word w, ignoring ASCII case */
static int eq_nocase(pl_str s, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)s.len != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s.ptr[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != w[i]) return 0;
    }
    return 1;
}

static pl_status load_pretok(struct loader *L)
{
    struct pl_tokenizer *t = L->t;
    const char *name = "default";
    size_t len = 7;
    int64_t i = pl_gguf_find_key(L->g, KEY_PRE);
    if (i >= 0) {
        pl_str pre;
        pl_status s = pl_gguf_get_string(L->g, KEY_PRE, &pre, L->err);
        if (s) return s;
        name = pre.ptr;
        len = (size_t)pre.len;
    }
    const struct pl_pretok_def *def = pl_pretok_find(name, len);
    const char *why = def ? NULL : pl_pretok_refusal(name, len);
    if (why)
        return pl_fail(L->err, PL_ERR_UNSUPPORTED, KEY_PRE " = %s is refused: %s",
                       show(L->sb, sizeof L->sb, name, len), why);
    if (!def)
        return pl_fail(L->err, PL_ERR_UNSUPPORTED, KEY_PRE " %s unknown; known: %s",
                       show(L->sb, sizeof L->sb, name, len), pl_pretok_names());
    snprintf(t->pre_name, sizeof t->pre_name, "%.*s", (int)(len < 63 ? len : 63), name);
    t->norm = def->norm;
    if (pl_gguf_find_key(L->g, KEY_NORM) >= 0) { /* the declared normalizer wins */
        pl_str nm;
        pl_status s = pl_gguf_get_string(L->g, KEY_NORM, &nm, L->err);
        if (s) return s;
        static const char *const forms[] = {"none", "nfc", "nfd", "nfkc", "nfkd"};
        int found = -1;
        for (int k = 0; k < 5; k++)
            if (eq_nocase(nm, forms[k])) found = k;
        if (found >= 0)
            t->norm = found; /* the order of enum pl_tok_norm */
        else
            return pl_fail(
                L->err, PL_ERR_UNSUPPORTED,
                KEY_NORM
                " = %s is not a normalizer plumb applies (known: none, nfc, nfd, nfkc, nfkd)",
                show(L->sb, sizeof L->sb, nm.ptr, (size_t)nm.len));
    }
    return pl_pretok_compile(&t->pre, def, L->err);
}

static int32_t find_control(const struct pl_tokenizer *t, const char *const *names)
{
    for (; *names; names++) {
        size_t n = strlen(*names);
        for (uint32_t k = 0; k < t->n_special; k++) {
            const struct pl_tok_entry *e = &t->tok[t->special[k]];
            if (e->text_len == n && memcmp(t->arena + e->text_off, *names, n) == 0)
                return (int32_t)t->special[k];
        }
    }
    return -1;
}

static void add_eog(struct pl_tokenizer *t, int32_t id)
{
    if (id < 0 || (uint32_t)id >= t->n_vocab || t->n_eog == PL_TOK_MAX_EOG) return;
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return;
    t->eog[t->n_eog++] = id;
}

/* llama.cpp's end-of-generation set (llama-vocab.cpp): eos, eot, eom and every control token
 * with one of these names, so that a model whose eos is <|im_end|> still ends at <|endoftext|>.
 * As there, <|end|> is not an end where <|return|> and <|call|> exist (gpt-oss's harmony, where
 * <|end|> closes every message, the analysis included), even as the eot token it is found as:
 * gpt-oss ends at <|return|>, <|call|> and <|endoftext|>. */
static void collect_eog(struct pl_tokenizer *t)
{
    static const char *const names[] = {"<|eot_id|>",    "<|im_end|>",      "<|end|>",
                                        "<|return|>",    "<|call|>",        "<end_of_turn>",
                                        "<|endoftext|>", "<|eom_id|>",      "<EOT>",
                                        "_<EOT>",        "<|end_of_text|>", "<end_of_utterance>"};
    const char *const ret[] = {"<|return|>", NULL}, *const call[] = {"<|call|>", NULL},
                      *const end[] = {"<|end|>", NULL};
    int32_t not_an_end =
        find_control(t, ret) >= 0 && find_control(t, call) >= 0 ? find_control(t, end) : -1;
    t->n_eog = 0;
    int32_t ids[3 + sizeof names / sizeof names[0]];
    size_t n = 0;
    ids[n++] = t->eos;
    ids[n++] = t->eot;
    ids[n++] = t->eom;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *const one[] = {names[i], NULL};
        ids[n++] = find_control(t, one);
    }
    for (size_t i = 0; i < n; i++)
        if (not_an_end < 0 || ids[i] != not_an_end) add_eog(t, ids[i]);
}

static pl_status load_specials_and_flags(struct loader *L)
{
    struct pl_tokenizer *t = L->t;
    int found;
    pl_status s;
    t->bos = t->eos = t->eot = t->eom = t->pad = t->unk = t->sep = -1;
    if (t->kind == PL_TOK_SPM) {
        /* SentencePiece's and llama.cpp's defaults when the keys are absent. */
        if (t->n_vocab > 0) t->unk = 0;
        if (t->n_vocab > 1) t->bos = 1;
        if (t->n_vocab > 2) t->eos = 2;
    }
    static const struct {
        const char *key;
        size_t off;
    } ids[] = {
        {"tokenizer.ggml.bos_token_id", offsetof(struct pl_tokenizer, bos)},
        {"tokenizer.ggml.eos_token_id", offsetof(struct pl_tokenizer, eos)},
        {"tokenizer.ggml.eot_token_id", offsetof(struct pl_tokenizer, eot)},
        {"tokenizer.ggml.eom_token_id", offsetof(struct pl_tokenizer, eom)},
        {"tokenizer.ggml.unknown_token_id", offsetof(struct pl_tokenizer, unk)},
        {"tokenizer.ggml.padding_token_id", offsetof(struct pl_tokenizer, pad)},
        {"tokenizer.ggml.seperator_token_id",
         offsetof(struct pl_tokenizer, sep)}, /* sic: GGUF's spelling */
    };
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++)
        if ((s = get_id(L, ids[k].key, (int32_t *)((char *)t + ids[k].off), &found))) return s;
    if (t->eot < 0) {
        static const char *const eot_names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>",
                                                "<end_of_turn>", NULL};
        t->eot = find_control(t, eot_names);
    }
    if (t->eom < 0) {
        static const char *const eom_names[] = {"<|eom_id|>", NULL};
        t->eom = find_control(t, eom_names);
    }
    collect_eog(t);

    int explicit_bos, explicit_eos;
    t->add_bos = t->kind == PL_TOK_SPM ? 1 : t->pre.def->add_bos;
    t->add_eos = 0;
    t->add_space_prefix = t->kind == PL_TOK_SPM;
    if ((s = get_bool(L, KEY_ADD_BOS, &t->add_bos, &explicit_bos))) return s;
    if ((s = get_bool(L, KEY_ADD_EOS, &t->add_eos, &explicit_eos))) return s;
    int space = t->add_space_prefix;
    if ((s = get_bool(L, KEY_ADD_SPACE, &space, &found))) return s;
    /* The dummy prefix is a SentencePiece notion; byte-level BPE ignores the key (llama.cpp too).
     */
    if (t->kind == PL_TOK_SPM) t->add_space_prefix = space;
    if (t->add_bos && t->bos < 0) {
        if (explicit_bos)
            return pl_fail(L->err, PL_ERR_FORMAT,
                           KEY_ADD_BOS " is true but tokenizer.ggml.bos_token_id is not set");
        t->add_bos = 0;
    }
    if (t->add_eos && t->eos < 0)
        return pl_fail(L->err, PL_ERR_FORMAT,
                       KEY_ADD_EOS " is true but tokenizer.ggml.eos_token_id is not set");
    return PL_OK;
}

pl_status pl_tokenizer_load(struct pl_tokenizer **out, const pl_gguf *g, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!g) return pl_fail(err, PL_ERR_INVALID_ARG, "gguf is NULL");
    struct pl_tokenizer *t = pl_calloc(1, sizeof *t);
    if (!t) return pl_fail(err, PL_ERR_NOMEM, "no memory for the tokenizer");
    for (int b = 0; b < 256; b++) t->byte_token[b] = -1;
    struct loader L = {.t = t, .g = g, .err = err};
    pl_status s = load_model_kind(&L);
    if (!s) s = load_tokens(&L);
    if (!s) s = build_match_hash(&L);
    if (!s) fill_byte_tokens(t);
    if (!s && t->kind == PL_TOK_SPM) t->spm_words = spm_words_safe(t);
    if (!s) s = build_specials(&L);
    if (!s && t->kind == PL_TOK_BPE) s = load_pretok(&L);
    if (!s && t->kind == PL_TOK_BPE) s = load_merges(&L);
    if (!s) s = load_specials_and_flags(&L);
    if (s) {
        pl_tokenizer_free(t);
        return s;
    }
    *out = t;
    return pl_ok(err);
}

void pl_tokenizer_free(struct pl_tokenizer *t)
{
    if (!t) return;
    pl_pretok_release(&t->pre);
    pl_free(t->tok);
    pl_free(t->arena);
    pl_free(t->match_hash);
    pl_free(t->merges);
    pl_free(t->special);
    pl_free(t->special_hash);
    pl_free(t);
}
