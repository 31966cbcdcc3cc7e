/* spm_pb.h — a protobuf writer for tests and seeds: builds SentencePiece ModelProto bytes
 * (tokenizer.model) field by field, well-formed or not, in a growing buffer. Header-only. */
#ifndef PLUMB_CONFORMANCE_SPM_PB_H
#define PLUMB_CONFORMANCE_SPM_PB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pb_buf {
    uint8_t *p;
    size_t n, cap;
} pb_buf;

static inline void pb_raw(pb_buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n) cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) abort();
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

static inline void pb_varint(pb_buf *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    do {
        t[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[n] |= 0x80;
        n++;
    } while (v);
    pb_raw(b, t, n);
}

static inline void pb_tag(pb_buf *b, uint32_t field, int wt)
{
    pb_varint(b, (uint64_t)field << 3 | (uint64_t)wt);
}

/* int32 / enum / bool: negative values as ten bytes, as protobuf writes them */
static inline void pb_int(pb_buf *b, uint32_t field, int64_t v)
{
    pb_tag(b, field, 0);
    pb_varint(b, (uint64_t)v);
}

static inline void pb_bytes(pb_buf *b, uint32_t field, const void *d, size_t n)
{
    pb_tag(b, field, 2);
    pb_varint(b, n);
    pb_raw(b, d, n);
}

static inline void pb_str(pb_buf *b, uint32_t field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

static inline void pb_float(pb_buf *b, uint32_t field, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint8_t t[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    pb_tag(b, field, 5);
    pb_raw(b, t, 4);
}

/* a sub-message: its bytes as a length-delimited field (sub is freed) */
static inline void pb_msg(pb_buf *b, uint32_t field, pb_buf *sub)
{
    pb_bytes(b, field, sub->p, sub->n);
    free(sub->p);
    *sub = (pb_buf){0};
}

/* ModelProto.pieces: {piece 1, score 2, type 3} */
static inline void pb_piece(pb_buf *b, const char *text, float score, int type)
{
    pb_buf s = {0};
    pb_str(&s, 1, text);
    pb_float(&s, 2, score);
    pb_int(&s, 3, type);
    pb_msg(b, 1, &s);
}

/* A small Llama-style BPE model: <unk> <s> </s>, the 256 byte pieces, then ▁ a b ▁a ab ▁ab
 * (ids 259..264, scores -1 -2 -3 0 -1 -2: ▁a merges before ab), byte fallback, identity
 * normalizer with the dummy prefix, spaces kept. */
static inline void pb_small_model(pb_buf *b)
{
    pb_piece(b, "<unk>", 0, 2);
    pb_piece(b, "<s>", 0, 3);
    pb_piece(b, "</s>", 0, 3);
    for (int i = 0; i < 256; i++) {
        static const char hex[] = "0123456789ABCDEF";
        char name[7] = {'<', '0', 'x', hex[i >> 4], hex[i & 15], '>', 0};
        pb_piece(b, name, 0, 6);
    }
    static const char *const texts[] = {"\xe2\x96\x81",
                                        "a",
                                        "b",
                                        "\xe2\x96\x81"
                                        "a",
                                        "ab",
                                        "\xe2\x96\x81"
                                        "ab"};
    static const float scores[] = {-1, -2, -3, 0, -1, -2};
    for (int i = 0; i < 6; i++) pb_piece(b, texts[i], scores[i], 1);
    pb_buf t = {0};
    pb_int(&t, 3, 2); /* BPE */
    pb_int(&t, 4, 265);
    pb_int(&t, 35, 1); /* byte_fallback */
    pb_int(&t, 40, 0);
    pb_int(&t, 41, 1);
    pb_int(&t, 42, 2);
    pb_int(&t, 43, -1);
    pb_msg(b, 2, &t);
    pb_buf n = {0};
    pb_str(&n, 1, "identity");
    pb_bytes(&n, 2, "", 0);
    pb_int(&n, 3, 1);
    pb_int(&n, 4, 0);
    pb_msg(b, 3, &n);
}

#endif
