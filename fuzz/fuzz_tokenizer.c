/* fuzz_tokenizer.c — harness: text through pl_tokenize / pl_detokenize / pl_detok with a fixed
 * real-format vocabulary (SPM, byte-level BPE qwen2, byte-level BPE llama3), or with a
 * vocabulary read from the input (a vocab-only GGUF). Not a GGUF fuzzer (fuzz_gguf is).
 *
 * Input: byte 0 picks the vocabulary (% 4; 3 = from the input), byte 1 the flags. Fixed
 * vocabularies: the rest is the text. With byte 0 % 4 == 1 (byte-level BPE), byte 0 / 4 = k > 0
 * swaps the pre-tokenizer for entry (k - 1) % n of engine/tokenizer/pretok.c's table (every
 * tokenizer.ggml.pre plumb knows; normalizer none, so the round trip stays exact). Mode 3:
 * bytes 2..3 the text length L (little-endian), then L bytes of text, then the GGUF file. Oracles:
 * every buffer call fits an exact-size buffer and refuses a one-too-small one (ASan sees any
 * overflow); ids are in range; byte-level BPE decode(encode(x)) == pl_normalize(x) (x without a
 * declared normalizer), and for SentencePiece with
 * STRIP_PREFIX when x has no U+2581 (plumb.h); the pieces of pl_token_to_piece concatenate to
 * pl_detokenize; streaming decode equals one-shot decode and never splits a UTF-8 character, also
 * when a push is first refused for a too-small buffer; each piece fits an exact buffer and is
 * refused by a one-too-small one (the size in the message); the vocabulary getters keep
 * plumb.h's word (special ids -1 or a token, EOS/EOT end generation, ids out of range have no
 * type, text or piece, a control token's piece is its text only with PL_DETOK_SPECIAL); and a
 * flag bit no call knows is PL_ERR_INVALID_ARG for every call that takes flags. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_vocab.h"
#include "fuzz.h"
#include "plumb.h"
#include "tokenizer/pretok.h"

#define N_FIXED   3
#define VOCAB_N   400  /* a few merges beyond the byte and special tokens */
#define MAX_TEXT  4096 /* longer texts add time, not paths */
#define MAX_TOKEN (1 << 16)

static void *vocab_bytes[N_FIXED];
static pl_model *vocab[N_FIXED];
#define MAX_PRE 64
static void *pre_bytes[MAX_PRE];
static pl_model *pre_vocab[MAX_PRE]; /* DEMO_VOCAB_BPE under each pre-tokenizer of the table */
static size_t n_pre;

/* pre: NULL for the vocabulary's own pre-tokenizer. */
static pl_model *build_vocab(enum demo_vocab_kind kind, const char *pre, void **bytes)
{
    pl_gguf_writer *w = NULL;
    pl_error err = {0};
    size_t n = 0;
    pl_model *m = NULL;
    pl_model_params p = {.flags = PL_MODEL_VOCAB_ONLY};
    pl_status st = pl_gguf_writer_new(&w, 3, &err);
    if (!st) st = pl_gguf_writer_set_string(w, "general.architecture", "llama", 5, &err);
    if (!st) st = demo_vocab_write(w, kind, VOCAB_N, &err);
    if (!st && pre) st = pl_gguf_writer_set_string(w, "tokenizer.ggml.pre", pre, strlen(pre), &err);
    if (!st && pre) st = pl_gguf_writer_set_string(w, "tokenizer.ggml.normalizer", "none", 4, &err);
    if (!st) st = pl_gguf_writer_write_memory(w, bytes, &n, &err);
    if (!st) st = pl_model_load_memory(&m, *bytes, n, &p, &err);
    pl_gguf_writer_free(w);
    FUZZ_CHECK(st == PL_OK, "building vocabulary %d (%s): %s", (int)kind, pre ? pre : "own",
               err.msg);
    return m;
}

void fuzz_init(void)
{
    for (int k = 0; k < N_FIXED; k++)
        vocab[k] = build_vocab((enum demo_vocab_kind)k, NULL, &vocab_bytes[k]);
    const struct pl_pretok_def *tab = pl_pretok_table(&n_pre);
    FUZZ_CHECK(n_pre <= MAX_PRE, "%zu pre-tokenizers, room for %d", n_pre, MAX_PRE);
    for (size_t i = 0; i < n_pre; i++)
        pre_vocab[i] = build_vocab(DEMO_VOCAB_BPE, tab[i].name, &pre_bytes[i]);
}

static void check_error(pl_status st, const pl_error *err, const char *what)
{
    FUZZ_CHECK(st < 0 && err->code == st && err->msg[0] != '\0', "%s: status %d, code %d, msg '%s'",
               what, (int)st, (int)err->code, err->msg);
}

/* Strict UTF-8 (RFC 3629): the length of the character at p, or 0 if none starts there. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 0;
    if (n < len || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return len;
}

/* Tokenize with the exact-size and one-too-small buffers; returns the ids (malloc'ed). */
static int32_t *tokenize(const pl_model *m, const char *text, size_t len, uint32_t flags,
                         size_t *n_tok)
{
    pl_error err = {0};
    size_t need = 0;
    int32_t dummy;
    pl_status st = pl_tokenize(m, text, len, flags, &dummy, 0, &need, &err);
    if (st == PL_OK) {
        FUZZ_CHECK(need == 0, "cap 0 accepted for %zu tokens", need);
    } else if (st != PL_ERR_BUFFER_TOO_SMALL) {
        check_error(st, &err, "pl_tokenize");
        return NULL;
    }
    int32_t *ids = malloc((need ? need : 1) * sizeof *ids);
    FUZZ_CHECK(ids != NULL, "malloc");
    size_t got = 0;
    st = pl_tokenize(m, text, len, flags, ids, need, &got, &err);
    FUZZ_CHECK(st == PL_OK && got == need, "exact buffer of %zu: status %d, n_out %zu: %s", need,
               (int)st, got, err.msg);
    if (need > 1) {
        int32_t *small = malloc((need - 1) * sizeof *small);
        FUZZ_CHECK(small != NULL, "malloc");
        st = pl_tokenize(m, text, len, flags, small, need - 1, &got, &err);
        FUZZ_CHECK(st == PL_ERR_BUFFER_TOO_SMALL && got == need,
                   "buffer of %zu for %zu tokens: status %d, n_out %zu", need - 1, need, (int)st,
                   got);
        FUZZ_CHECK(err.msg[0] != '\0', "BUFFER_TOO_SMALL without a message");
        free(small);
    }
    int32_t n_vocab = pl_vocab_n_tokens(m);
    for (size_t i = 0; i < need; i++)
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < n_vocab, "id %d at %zu outside [0, %d)", ids[i], i,
                   n_vocab);
    *n_tok = need;
    return ids;
}

/* One-shot decode with the same exact / too-small discipline; returns malloc'ed bytes. */
/* pl_normalize(text) in an exact-size buffer. */
static char *normalize(const pl_model *m, const char *text, size_t len, uint32_t flags,
                       size_t *n_bytes)
{
    pl_error err = {0};
    size_t need = 0;
    char dummy;
    pl_status st = pl_normalize(m, text, len, flags, &dummy, 0, &need, &err);
    FUZZ_CHECK(st == PL_OK || st == PL_ERR_BUFFER_TOO_SMALL, "pl_normalize: %d %s", (int)st,
               err.msg);
    char *out = malloc(need ? need : 1);
    FUZZ_CHECK(out != NULL, "malloc");
    size_t got = 0;
    st = pl_normalize(m, text, len, flags, out, need, &got, &err);
    FUZZ_CHECK(st == PL_OK && got == need, "exact normalize buffer %zu: %d, %zu: %s", need, (int)st,
               got, err.msg);
    *n_bytes = got;
    return out;
}

static char *detokenize(const pl_model *m, const int32_t *ids, size_t n, uint32_t flags,
                        size_t *n_bytes)
{
    pl_error err = {0};
    size_t need = 0;
    char dummy;
    pl_status st = pl_detokenize(m, ids, n, flags, &dummy, 0, &need, &err);
    if (st != PL_OK) {
        FUZZ_CHECK(st == PL_ERR_BUFFER_TOO_SMALL, "pl_detokenize of valid ids: %d %s", (int)st,
                   err.msg);
    } else {
        FUZZ_CHECK(need == 0, "cap 0 accepted for %zu bytes", need);
    }
    char *out = malloc(need ? need : 1);
    FUZZ_CHECK(out != NULL, "malloc");
    size_t got = 0;
    st = pl_detokenize(m, ids, n, flags, out, need, &got, &err);
    FUZZ_CHECK(st == PL_OK && got == need, "exact detok buffer %zu: %d, %zu: %s", need, (int)st,
               got, err.msg);
    if (need > 1) {
        char *small = malloc(need - 1);
        FUZZ_CHECK(small != NULL, "malloc");
        st = pl_detokenize(m, ids, n, flags, small, need - 1, &got, &err);
        FUZZ_CHECK(st == PL_ERR_BUFFER_TOO_SMALL && got == need, "small detok buffer: %d, %zu",
                   (int)st, got);
        free(small);
    }
    *n_bytes = need;
    return out;
}

/* pl_token_to_piece of a token whose piece is k > 0 bytes: an exact-size buffer gets them, a
 * one-too-small one is PL_ERR_BUFFER_TOO_SMALL with *n_out = k and k in the message. */
static void check_piece_buffers(const pl_model *m, int32_t id, uint32_t flags, const char *piece,
                                size_t k)
{
    pl_error err = {0};
    size_t got = 0;
    char *buf = malloc(k);
    FUZZ_CHECK(buf != NULL, "malloc");
    pl_status st = pl_token_to_piece(m, id, flags, buf, k, &got, &err);
    FUZZ_CHECK(st == PL_OK && got == k && memcmp(buf, piece, k) == 0,
               "token_to_piece(%d) into its exact %zu bytes: status %d, n_out %zu", id, k, (int)st,
               got);
    free(buf);
    buf = malloc(k - 1 ? k - 1 : 1); /* exact size again: ASan sees a write past k - 1 */
    FUZZ_CHECK(buf != NULL, "malloc");
    st = pl_token_to_piece(m, id, flags, buf, k - 1, &got, &err);
    check_error(st, &err, "token_to_piece into a short buffer");
    char size[32];
    snprintf(size, sizeof size, "%zu", k);
    FUZZ_CHECK(st == PL_ERR_BUFFER_TOO_SMALL && got == k && strstr(err.msg, size),
               "token_to_piece(%d) into %zu of %zu bytes: status %d, n_out %zu, msg '%s'", id,
               k - 1, k, (int)st, got, err.msg);
    free(buf);
}

/* The concatenated pieces equal the one-shot decode without STRIP_PREFIX. */
static void check_pieces(const pl_model *m, const int32_t *ids, size_t n, uint32_t flags)
{
    flags &= PL_DETOK_SPECIAL;
    size_t total = 0;
    char *whole = detokenize(m, ids, n, flags, &total);
    size_t pos = 0;
    char *piece = malloc(MAX_TOKEN);
    FUZZ_CHECK(piece != NULL, "malloc");
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        pl_error err = {0};
        pl_status st = pl_token_to_piece(m, ids[i], flags, piece, MAX_TOKEN, &k, &err);
        FUZZ_CHECK(st == PL_OK, "token_to_piece(%d): %s", ids[i], err.msg);
        FUZZ_CHECK(pos + k <= total && memcmp(whole + pos, piece, k) == 0,
                   "piece of token %d (index %zu) differs from detokenize at byte %zu", ids[i], i,
                   pos);
        if (k > 0) check_piece_buffers(m, ids[i], flags, piece, k);
        pos += k;
    }
    FUZZ_CHECK(pos == total, "pieces give %zu bytes, detokenize %zu", pos, total);
    free(piece);
    free(whole);
}

/* Streams ids through pl_detok (first offering a buffer of cap_hint bytes, which may be too
 * small and must then change nothing) and compares with the one-shot decode. */
static void check_stream(const pl_model *m, const int32_t *ids, size_t n, uint32_t flags,
                         size_t cap_hint)
{
    size_t total = 0;
    char *whole = detokenize(m, ids, n, flags, &total);
    pl_detok *d = NULL;
    pl_error err = {0};
    FUZZ_CHECK(pl_detok_new(&d, m, flags, &err) == PL_OK, "detok_new: %s", err.msg);
    char *out = malloc(total + 1);
    size_t *cuts = malloc((n + 1) * sizeof *cuts);
    FUZZ_CHECK(out && cuts, "malloc");
    size_t pos = 0, n_cuts = 0;
    for (size_t i = 0; i <= n; i++) {
        size_t cap = cap_hint, got = 0;
        char *buf = malloc(cap ? cap : 1);
        FUZZ_CHECK(buf != NULL, "malloc");
        pl_status st = i < n ? pl_detok_push(d, ids[i], buf, cap, &got, &err)
                             : pl_detok_flush(d, buf, cap, &got, &err);
        if (st == PL_ERR_BUFFER_TOO_SMALL) {
            FUZZ_CHECK(got > cap, "too small for %zu but cap was %zu", got, cap);
            free(buf);
            cap = got;
            buf = malloc(cap);
            FUZZ_CHECK(buf != NULL, "malloc");
            st = i < n ? pl_detok_push(d, ids[i], buf, cap, &got, &err)
                       : pl_detok_flush(d, buf, cap, &got, &err);
        }
        FUZZ_CHECK(st == PL_OK, "detok %s of token %zu: %d %s", i < n ? "push" : "flush", i,
                   (int)st, err.msg);
        FUZZ_CHECK(got <= cap && pos + got <= total,
                   "stream longer than one-shot decode (%zu > %zu)", pos + got, total);
        memcpy(out + pos, buf, got);
        pos += got;
        free(buf);
        if (i < n) cuts[n_cuts++] = pos;
    }
    FUZZ_CHECK(pos == total && memcmp(out, whole, total) == 0,
               "stream (%zu bytes) != one-shot decode (%zu bytes)", pos, total);
    /* No cut falls strictly inside a (strictly valid) UTF-8 character of the output. */
    size_t c = 0;
    for (size_t i = 0; i < total;) {
        size_t len = utf8_len((const unsigned char *)out + i, total - i);
        if (len == 0) len = 1;
        while (c < n_cuts && cuts[c] <= i) c++;
        FUZZ_CHECK(c == n_cuts || cuts[c] >= i + len,
                   "a push ended at byte %zu inside the %zu-byte character at %zu", cuts[c], len,
                   i);
        i += len;
    }
    pl_detok_free(d);
    free(cuts);
    free(out);
    free(whole);
}

/* The vocabulary getters against plumb.h: the special ids are -1 or a token, EOS and EOT end a
 * generation, an id outside [0, n) has type INVALID, text "", no piece, and does not end a
 * generation; a control token's piece is empty, or its text with PL_DETOK_SPECIAL. */
static void check_vocab(const pl_model *m, const int32_t *ids, size_t n, size_t len, uint8_t fl)
{
    const int32_t nv = pl_vocab_n_tokens(m);
    const int32_t special[5] = {pl_vocab_bos(m), pl_vocab_eos(m), pl_vocab_eot(m), pl_vocab_pad(m),
                                pl_vocab_unk(m)};
    static const char *const names[5] = {"bos", "eos", "eot", "pad", "unk"};
    for (int i = 0; i < 5; i++)
        FUZZ_CHECK(special[i] >= -1 && special[i] < nv, "%s id %d outside [-1, %d)", names[i],
                   special[i], nv);
    FUZZ_CHECK(special[1] < 0 || pl_vocab_is_eog(m, special[1]), "eos %d is not eog", special[1]);
    FUZZ_CHECK(special[2] < 0 || pl_vocab_is_eog(m, special[2]), "eot %d is not eog", special[2]);
    /* no eot_token_id key: the eot is a token of one of the documented names */
    if (special[2] >= 0 && pl_gguf_find_key(pl_model_gguf(m), "tokenizer.ggml.eot_token_id") < 0) {
        static const char *const eot_names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>",
                                                "<end_of_turn>"};
        pl_str t = pl_vocab_token_text(m, special[2]);
        int named = 0;
        for (int i = 0; i < 4; i++)
            named |= t.len == strlen(eot_names[i]) && memcmp(t.ptr, eot_names[i], t.len) == 0;
        FUZZ_CHECK(named, "eot %d ('%.*s') without the key is none of the documented names",
                   special[2], (int)t.len, t.ptr);
    }

    /* ids outside the vocabulary; one of them (by the input) through the fallible calls */
    const int32_t bad[5] = {-1, nv, INT32_MIN, INT32_MAX, nv + (int32_t)(len % 64)};
    for (int i = 0; i < 5; i++) {
        FUZZ_CHECK(!pl_vocab_is_eog(m, bad[i]), "id %d outside [0, %d) is eog", bad[i], nv);
        FUZZ_CHECK(pl_vocab_token_type(m, bad[i]) == PL_TOKEN_INVALID, "id %d has type %d", bad[i],
                   (int)pl_vocab_token_type(m, bad[i]));
        pl_str t = pl_vocab_token_text(m, bad[i]);
        FUZZ_CHECK(t.ptr != NULL && t.len == 0, "id %d outside [0, %d) has a text of %zu bytes",
                   bad[i], nv, t.len);
    }
    const int32_t b = bad[fl % 5];
    char buf[8];
    size_t got = 0;
    pl_error err = {0};
    pl_status st = pl_token_to_piece(m, b, fl & PL_DETOK_SPECIAL, buf, sizeof buf, &got, &err);
    check_error(st, &err, "token_to_piece of an id out of range");
    FUZZ_CHECK(st == PL_ERR_INVALID_ARG, "token_to_piece(%d), %d tokens: status %d", b, nv,
               (int)st);
    st = pl_detokenize(m, &b, 1, 0, buf, sizeof buf, &got, &err);
    check_error(st, &err, "detokenize of an id out of range");
    FUZZ_CHECK(st == PL_ERR_INVALID_ARG, "detokenize([%d]), %d tokens: status %d", b, nv, (int)st);

    /* ids inside it: the specials, the first tokens of the text, both ends */
    int32_t probe[5 + 16 + 2];
    size_t np = 0;
    for (int i = 0; i < 5; i++)
        if (special[i] >= 0) probe[np++] = special[i];
    for (size_t i = 0; i < n && i < 16; i++) probe[np++] = ids[i];
    probe[np++] = 0;
    probe[np++] = nv - 1;
    char *piece = malloc(MAX_TOKEN);
    FUZZ_CHECK(piece != NULL, "malloc");
    for (size_t i = 0; i < np; i++) {
        const int32_t id = probe[i];
        const pl_token_type type = pl_vocab_token_type(m, id);
        FUZZ_CHECK(type >= PL_TOKEN_UNDEFINED && type <= PL_TOKEN_BYTE, "token %d has type %d", id,
                   (int)type);
        pl_str t = pl_vocab_token_text(m, id);
        FUZZ_CHECK(t.ptr != NULL, "token %d has a NULL text", id);
        if (type != PL_TOKEN_CONTROL) continue;
        size_t k = 1;
        st = pl_token_to_piece(m, id, 0, piece, MAX_TOKEN, &k, &err);
        FUZZ_CHECK(st == PL_OK && k == 0, "control token %d: piece of %zu bytes without SPECIAL",
                   id, k);
        st = pl_token_to_piece(m, id, PL_DETOK_SPECIAL, piece, MAX_TOKEN, &k, &err);
        FUZZ_CHECK(st == PL_OK && k == t.len && memcmp(piece, t.ptr, k) == 0,
                   "control token %d: its SPECIAL piece (%zu bytes) is not its text '%.*s'", id, k,
                   (int)t.len, t.ptr);
    }
    free(piece);
}

/* A flag bit no call knows (bits 2..31, by the input) fails every call that takes flags with
 * PL_ERR_INVALID_ARG, before any work. */
static void check_unknown_flags(const pl_model *m, const char *text, size_t len, uint8_t fl)
{
    const uint32_t bit = 1u << (2 + (fl + len) % 30);
    pl_error err = {0};
    size_t got = 0;
    int32_t id;
    char c;
    pl_status st = pl_tokenize(m, text, len, (fl & 3u) | bit, &id, 1, &got, &err);
    FUZZ_CHECK(st == PL_ERR_INVALID_ARG && err.code == st, "tokenize flags 0x%x: status %d",
               (fl & 3u) | bit, (int)st);
    st = pl_normalize(m, text, len, (fl & 2u) | bit, &c, 1, &got, &err);
    FUZZ_CHECK(st == PL_ERR_INVALID_ARG && err.code == st, "normalize flags 0x%x: status %d",
               (fl & 2u) | bit, (int)st);
    st = pl_token_to_piece(m, 0, (fl >> 2 & 1u) | bit, &c, 1, &got, &err);
    FUZZ_CHECK(st == PL_ERR_INVALID_ARG && err.code == st, "token_to_piece flags 0x%x: status %d",
               (fl >> 2 & 1u) | bit, (int)st);
    id = 0;
    st = pl_detokenize(m, &id, 1, (fl >> 2 & 3u) | bit, &c, 1, &got, &err);
    FUZZ_CHECK(st == PL_ERR_INVALID_ARG && err.code == st, "detokenize flags 0x%x: status %d",
               (fl >> 2 & 3u) | bit, (int)st);
    /* A refusal writes NULL over whatever *out held: start from a live decoder's handle. */
    pl_detok *live = NULL;
    st = pl_detok_new(&live, m, fl >> 2 & 3u, &err);
    FUZZ_CHECK(st == PL_OK && live != NULL, "detok_new flags 0x%x: status %d", fl >> 2 & 3u,
               (int)st);
    pl_detok *d = live;
    st = pl_detok_new(&d, m, (fl >> 2 & 3u) | bit, &err);
    FUZZ_CHECK(st == PL_ERR_INVALID_ARG && err.code == st && d == NULL,
               "detok_new flags 0x%x: status %d", (fl >> 2 & 3u) | bit, (int)st);
    pl_detok_free(live);
}

static int has_u2581(const char *t, size_t n)
{
    for (size_t i = 0; i + 2 < n; i++)
        if (memcmp(t + i, "\xe2\x96\x81", 3) == 0) return 1;
    return 0;
}

static int is_byte_bpe(const pl_model *m)
{
    pl_str s;
    if (pl_gguf_get_string(pl_model_gguf(m), "tokenizer.ggml.model", &s, NULL) != PL_OK) return 0;
    return s.len == 4 && memcmp(s.ptr, "gpt2", 4) == 0;
}

static void run(const pl_model *m, const char *text, size_t len, uint8_t fl, int fixed)
{
    uint32_t tflags = fl & 3u;               /* ADD_BOS, PARSE_SPECIAL */
    uint32_t dflags = (fl >> 2) & 3u;        /* DETOK_SPECIAL, STRIP_PREFIX */
    size_t cap_hint = (size_t)(fl >> 4) * 2; /* 0..30 bytes offered to each push first */
    size_t n = 0;
    int32_t *ids = tokenize(m, text, len, tflags, &n);
    if (!ids) {
        FUZZ_CHECK(!fixed, "tokenize failed on a fixed vocabulary");
        return;
    }
    /* Byte-level BPE: decode(encode(x)) == pl_normalize(x), the text the encoder saw (x itself
     * when the vocabulary declares no normalizer; NFC turns U+2000 into U+2002). */
    if (fixed && is_byte_bpe(m) && !(tflags & PL_TOKENIZE_PARSE_SPECIAL)) {
        size_t k = 0, nn = 0;
        char *back = detokenize(m, ids, n, 0, &k);
        char *norm = normalize(m, text, len, tflags & PL_TOKENIZE_PARSE_SPECIAL, &nn);
        FUZZ_CHECK(k == nn && memcmp(back, norm, nn) == 0,
                   "byte-level BPE round trip: %zu bytes in (%zu normalized), %zu out", len, nn, k);
        free(norm);
        free(back);
    }
    /* SentencePiece: the documented round trip with STRIP_PREFIX, for x without U+2581. */
    if (fixed && !is_byte_bpe(m) && !(tflags & PL_TOKENIZE_PARSE_SPECIAL) &&
        !has_u2581(text, len)) {
        size_t k = 0;
        char *back = detokenize(m, ids, n, PL_DETOK_STRIP_PREFIX, &k);
        FUZZ_CHECK(k == len && memcmp(back, text, len) == 0,
                   "SentencePiece round trip: %zu bytes in, %zu out", len, k);
        free(back);
    }
    check_pieces(m, ids, n, dflags);
    check_stream(m, ids, n, dflags, cap_hint);
    /* Every id, including specials and byte tokens, decodes and streams. */
    int32_t nv = pl_vocab_n_tokens(m);
    if (nv > 0 && n > 0) {
        int32_t probe[4] = {0, nv - 1, ids[0] % nv, (int32_t)(len % (size_t)nv)};
        check_stream(m, probe, 4, dflags | PL_DETOK_SPECIAL, cap_hint);
    }
    if (nv > 0) check_vocab(m, ids, n, len, fl);
    check_unknown_flags(m, text, len, fl);
    free(ids);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    if (size < 2) return;
    unsigned mode = data[0] % 4u;
    uint8_t fl = data[1];
    if (mode < N_FIXED) {
        size_t len = size - 2 > MAX_TEXT ? MAX_TEXT : size - 2;
        unsigned sel = data[0] / 4u;
        const pl_model *m = mode == 1 && sel ? pre_vocab[(sel - 1) % n_pre] : vocab[mode];
        run(m, (const char *)data + 2, len, fl, 1);
        return;
    }
    if (size < 4) return;
    size_t len = (size_t)data[2] | (size_t)data[3] << 8;
    if (len > size - 4) len = size - 4;
    const char *text = (const char *)data + 4;
    const uint8_t *file = data + 4 + len;
    size_t file_size = size - 4 - len;
    pl_model *m = NULL;
    pl_error err = {0};
    pl_model_params p = {.flags = PL_MODEL_VOCAB_ONLY};
    pl_status st = pl_model_load_memory(&m, file, file_size, &p, &err);
    if (st != PL_OK) {
        check_error(st, &err, "vocab-only load");
        return;
    }
    if (len > MAX_TEXT) len = MAX_TEXT;
    if (pl_vocab_n_tokens(m) > 0) run(m, text, len, fl, 0);
    pl_model_free(m);
}
