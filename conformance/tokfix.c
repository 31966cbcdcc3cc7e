/* tokfix.c — tokenizer test fixtures (see tokfix.h). Test-only code: plain malloc, abort on a
 * fixture bug, never the library's allocation hook. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_vocab.h"
#include "tokfix.h"

static void must(pl_status s, const pl_error *err, const char *what)
{
    if (s) {
        fprintf(stderr, "fixture failed: %s: %s: %s\n", what, pl_status_str(s), err->msg);
        abort();
    }
}

pl_gguf_writer *tf_writer(void)
{
    pl_gguf_writer *w;
    pl_error err;
    must(pl_gguf_writer_new(&w, 3, &err), &err, "writer");
    return w;
}

void tf_str(pl_gguf_writer *w, const char *key, const char *s)
{
    pl_error err;
    must(pl_gguf_writer_set_string(w, key, s, strlen(s), &err), &err, key);
}

void tf_u32(pl_gguf_writer *w, const char *key, uint32_t v)
{
    pl_error err;
    must(pl_gguf_writer_set_u32(w, key, v, &err), &err, key);
}

void tf_bool(pl_gguf_writer *w, const char *key, int v)
{
    pl_error err;
    uint8_t b = (uint8_t)(v != 0);
    must(pl_gguf_writer_set(w, key, PL_GGUF_BOOL, &b, &err), &err, key);
}

void tf_strs(pl_gguf_writer *w, const char *key, const char *const *s, uint64_t n)
{
    pl_error err;
    must(pl_gguf_writer_set_array_str(w, key, s, NULL, n, &err), &err, key);
}

void tf_i32s(pl_gguf_writer *w, const char *key, const int32_t *v, uint64_t n)
{
    pl_error err;
    must(pl_gguf_writer_set_array(w, key, PL_GGUF_INT32, v, n, &err), &err, key);
}

void tf_f32s(pl_gguf_writer *w, const char *key, const float *v, uint64_t n)
{
    pl_error err;
    must(pl_gguf_writer_set_array(w, key, PL_GGUF_FLOAT32, v, n, &err), &err, key);
}

pl_status tf_open(tf_file *f, pl_gguf_writer *w, pl_error *err)
{
    memset(f, 0, sizeof *f);
    pl_error e;
    must(pl_gguf_writer_write_memory(w, &f->bytes, &f->size, &e), &e, "write_memory");
    pl_gguf_writer_free(w);
    must(pl_gguf_parse(&f->g, f->bytes, f->size, &e), &e, "parse");
    return pl_tokenizer_load(&f->t, f->g, err);
}

void tf_close(tf_file *f)
{
    pl_tokenizer_free(f->t);
    pl_gguf_free(f->g);
    pl_buffer_free(f->bytes);
    memset(f, 0, sizeof *f);
}

char *tf_gpt2(const char *bytes, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned b = (unsigned char)bytes[i];
        unsigned cp;
        if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
            cp = b;
        else
            cp = 0x100 + (b <= 0x20 ? b : b <= 0xA0 ? 33 + (b - 0x7F) : 67);
        if (cp < 0x80) {
            out[o++] = (char)cp;
        } else {
            out[o++] = (char)(0xC0 | (cp >> 6));
            out[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    out[o] = '\0';
    return out;
}

long tf_encode(const struct pl_tokenizer *t, const char *text, size_t len, uint32_t flags,
               int32_t *ids, size_t cap, const char *what)
{
    size_t n;
    pl_error err;
    pl_status s = pl_tok_encode(t, text, len, flags, ids, cap, &n, &err);
    if (s) {
        fprintf(stderr, "  %s: encode failed: %s: %s\n", what, pl_status_str(s), err.msg);
        return -1;
    }
    return (long)n;
}

int tf_same_ids(const int32_t *got, long n, const int32_t *want, long wn, const char *what)
{
    int same = n == wn;
    for (long i = 0; same && i < n; i++) same = got[i] == want[i];
    if (same) return 1;
    fprintf(stderr, "  FAIL %s\n    got  (%ld):", what, n);
    for (long i = 0; i < n; i++) fprintf(stderr, " %d", got[i]);
    fprintf(stderr, "\n    want (%ld):", wn);
    for (long i = 0; i < wn; i++) fprintf(stderr, " %d", want[i]);
    fprintf(stderr, "\n");
    return 0;
}

char *tf_decode(const struct pl_tokenizer *t, const int32_t *ids, size_t n, uint32_t flags,
                size_t *len)
{
    size_t need;
    pl_error err;
    pl_status s = pl_tok_decode(t, ids, n, flags, NULL, 0, &need, &err);
    if (s && s != PL_ERR_BUFFER_TOO_SMALL) return NULL;
    char *buf = malloc(need + 1);
    if (!buf) abort();
    if (pl_tok_decode(t, ids, n, flags, buf, need, len, &err)) {
        free(buf);
        return NULL;
    }
    buf[*len] = '\0';
    return buf;
}

pl_status tf_demo(tf_file *f, int kind, uint32_t n_vocab, pl_error *err)
{
    pl_gguf_writer *w = tf_writer();
    pl_error e;
    must(demo_vocab_write(w, (enum demo_vocab_kind)kind, n_vocab, &e), &e, "demo_vocab_write");
    return tf_open(f, w, err);
}

int tf_mentions(const char *msg, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *h = msg; *h; h++) {
        size_t k = 0;
        while (k < n && h[k] && tolower((unsigned char)h[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n) return 1;
    }
    return n == 0;
}
