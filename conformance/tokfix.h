/* tokfix.h — fixtures for the tokenizer tests: small vocabularies written with the public GGUF
 * writer and loaded through the internal tokenizer API. Not a test framework (testutil.h is). */
#ifndef PLUMB_TOKFIX_H
#define PLUMB_TOKFIX_H

#include <stddef.h>
#include <stdint.h>

#include "plumb.h"
#include "tokenizer/tokenizer.h"

/* A GGUF image in memory with its view and tokenizer. */
typedef struct tf_file {
    void *bytes;
    size_t size;
    pl_gguf *g;
    struct pl_tokenizer *t; /* NULL when loading failed */
} tf_file;

/* Writes w to memory (then frees w), parses it and loads the tokenizer. Returns the load's
 * status; aborts the test binary if writing or parsing fails (a fixture bug). */
pl_status tf_open(tf_file *f, pl_gguf_writer *w, pl_error *err);
void tf_close(tf_file *f);

/* A fresh GGUF v3 writer (aborts on failure). */
pl_gguf_writer *tf_writer(void);
/* Shorthands that abort on failure. */
void tf_str(pl_gguf_writer *w, const char *key, const char *s);
void tf_u32(pl_gguf_writer *w, const char *key, uint32_t v);
void tf_bool(pl_gguf_writer *w, const char *key, int v);
void tf_strs(pl_gguf_writer *w, const char *key, const char *const *s, uint64_t n);
void tf_i32s(pl_gguf_writer *w, const char *key, const int32_t *v, uint64_t n);
void tf_f32s(pl_gguf_writer *w, const char *key, const float *v, uint64_t n);

/* GPT-2's byte->unicode text of n raw bytes into out (2 * n + 1 bytes); returns out. */
char *tf_gpt2(const char *bytes, size_t n, char *out);

/* Encodes text (len bytes) into ids (cap); returns the count, or -1 on error (message
 * printed with `what`). */
long tf_encode(const struct pl_tokenizer *t, const char *text, size_t len, uint32_t flags,
               int32_t *ids, size_t cap, const char *what);
/* 1 if got[0..n) == want[0..wn); else prints both (with `what`) and returns 0. */
int tf_same_ids(const int32_t *got, long n, const int32_t *want, long wn, const char *what);
/* Decodes ids into a malloc'ed buffer (*len bytes); NULL on error. */
char *tf_decode(const struct pl_tokenizer *t, const int32_t *ids, size_t n, uint32_t flags,
                size_t *len);

/* A demo vocabulary (synth/demo_vocab.h kind) of n_vocab tokens, loaded. */
pl_status tf_demo(tf_file *f, int kind, uint32_t n_vocab, pl_error *err);

/* Case-insensitive: does msg contain needle? */
int tf_mentions(const char *msg, const char *needle);

#endif
