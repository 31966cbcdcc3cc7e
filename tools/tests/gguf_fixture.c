/* gguf_fixture.c — writes the small GGUF files the CLI tests inspect, through the public
 * writer API: one valid file exercising every value type and escape, and broken variants. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plumb.h"

#define N_VOCAB 1000

static int fail(const char *what, pl_status st, const pl_error *err)
{
    fprintf(stderr, "gguf_fixture: %s: %s: %s\n", what, pl_status_str(st), err->msg);
    return 1;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        pl_status st_ = (call);                                                                    \
        if (st_ != PL_OK) {                                                                        \
            rc = fail(#call, st_, &err);                                                           \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* The valid fixture, in memory (pl_buffer_free). Its contents are what cli_test.sh expects. */
static int build(void **out, size_t *out_size)
{
    pl_error err;
    memset(&err, 0, sizeof err);
    pl_gguf_writer *w = NULL;
    int rc = 0;
    static char tok_buf[N_VOCAB][16];
    static const char *toks[N_VOCAB];
    static float scores[N_VOCAB];
    static float embd[8 * 4];
    static unsigned char q8[2 * 34];
    static unsigned short norm[8];
    char tmpl[501];

    for (int i = 0; i < N_VOCAB; i++) {
        if (i == 0)
            snprintf(tok_buf[i], sizeof tok_buf[i], "<unk>");
        else if (i == 1)
            snprintf(tok_buf[i], sizeof tok_buf[i], "<s>");
        else if (i == 2)
            snprintf(tok_buf[i], sizeof tok_buf[i], "</s>");
        else
            snprintf(tok_buf[i], sizeof tok_buf[i], "tok%d", i);
        toks[i] = tok_buf[i];
        scores[i] = (float)-i;
    }
    for (int i = 0; i < 8 * 4; i++) embd[i] = (float)i * 0.5f;
    for (size_t i = 0; i < sizeof q8; i++) q8[i] = (unsigned char)i;
    for (int i = 0; i < 8; i++) norm[i] = 0x3C00; /* 1.0 in IEEE half */
    for (int i = 0; i < 500; i++) tmpl[i] = "{% for m in messages %}"[i % 23];
    tmpl[500] = '\0';

    static const char weird[] = "tiny \"test\"\n\x01 caf\xc3\xa9 bad\xff end";
    const int32_t dims[3] = {2, 4, 8};
    const uint8_t yes = 1;
    const int8_t i8 = -5;
    const uint8_t u8 = 200;
    const int16_t i16 = -300;
    const uint16_t u16 = 60000;
    const int64_t i64 = -1234567890123LL;
    const uint64_t u64 = UINT64_MAX;
    const double f64 = 0.1;
    const float nan_f = NAN;
    const int64_t ne_embd[2] = {8, 4}, ne_q8[2] = {32, 2}, ne_norm[1] = {8};

    CHECK(pl_gguf_writer_new(&w, 3, &err));
    CHECK(pl_gguf_writer_set_string(w, "general.architecture", "llama", 5, &err));
    CHECK(pl_gguf_writer_set_string(w, "general.name", weird, sizeof weird - 1, &err));
    CHECK(pl_gguf_writer_set_u32(w, "tiny.context_length", 4096, &err));
    CHECK(pl_gguf_writer_set_f32(w, "tiny.rope.freq_base", 10000.0f, &err));
    CHECK(pl_gguf_writer_set_f32(w, "tiny.eps", 1e-5f, &err));
    CHECK(pl_gguf_writer_set(w, "tiny.flag", PL_GGUF_BOOL, &yes, &err));
    CHECK(pl_gguf_writer_set(w, "tiny.i8", PL_GGUF_INT8, &i8, &err));
    CHECK(pl_gguf_writer_set(w, "tiny.u8", PL_GGUF_UINT8, &u8, &err));
    CHECK(pl_gguf_writer_set(w, "tiny.i16", PL_GGUF_INT16, &i16, &err));
    CHECK(pl_gguf_writer_set(w, "tiny.u16", PL_GGUF_UINT16, &u16, &err));
    CHECK(pl_gguf_writer_set(w, "tiny.i64", PL_GGUF_INT64, &i64, &err));
    CHECK(pl_gguf_writer_set(w, "tiny.u64", PL_GGUF_UINT64, &u64, &err));
    CHECK(pl_gguf_writer_set(w, "tiny.f64", PL_GGUF_FLOAT64, &f64, &err));
    CHECK(pl_gguf_writer_set_f32(w, "tiny.nan", nan_f, &err));
    CHECK(pl_gguf_writer_set_array(w, "tiny.dims", PL_GGUF_INT32, dims, 3, &err));
    CHECK(pl_gguf_writer_set_array_str(w, "tokenizer.ggml.tokens", toks, NULL, N_VOCAB, &err));
    CHECK(pl_gguf_writer_set_array(w, "tokenizer.ggml.scores", PL_GGUF_FLOAT32, scores, N_VOCAB,
                                   &err));
    CHECK(pl_gguf_writer_set_string(w, "tokenizer.chat_template", tmpl, 500, &err));
    CHECK(pl_gguf_writer_add_tensor(w, "token_embd.weight", PL_TYPE_F32, 2, ne_embd, embd, &err));
    CHECK(pl_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", PL_TYPE_Q8_0, 2, ne_q8, q8, &err));
    CHECK(pl_gguf_writer_add_tensor(w, "output_norm.weight", PL_TYPE_F16, 1, ne_norm, norm, &err));
    CHECK(pl_gguf_writer_write_memory(w, out, out_size, &err));
done:
    pl_gguf_writer_free(w);
    return rc;
}

static int write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        fprintf(stderr, "gguf_fixture: cannot write '%s'\n", path);
        return 1;
    }
    return 0;
}

/* A valid file with no metadata and no tensors: the edge of every list. */
static int write_minimal(const char *path)
{
    pl_error err;
    memset(&err, 0, sizeof err);
    pl_gguf_writer *w = NULL;
    int rc = 0;
    CHECK(pl_gguf_writer_new(&w, 2, &err));
    CHECK(pl_gguf_writer_write_file(w, path, &err));
done:
    pl_gguf_writer_free(w);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fputs("usage: gguf_fixture good|minimal|truncated|bad-magic|empty OUT.gguf\n", stderr);
        return 2;
    }
    const char *kind = argv[1], *path = argv[2];
    if (strcmp(kind, "empty") == 0) return write_bytes(path, "", 0);
    if (strcmp(kind, "minimal") == 0) return write_minimal(path);
    void *buf = NULL;
    size_t n = 0;
    if (build(&buf, &n) != 0) return 1;
    int rc;
    if (strcmp(kind, "good") == 0) {
        rc = write_bytes(path, buf, n);
    } else if (strcmp(kind, "truncated") == 0) {
        rc = write_bytes(path, buf, n / 2); /* cuts the metadata: a length runs past EOF */
    } else if (strcmp(kind, "bad-magic") == 0) {
        memcpy(buf, "GGUX", 4);
        rc = write_bytes(path, buf, n);
    } else {
        fprintf(stderr, "gguf_fixture: unknown kind '%s'\n", kind);
        rc = 2;
    }
    pl_buffer_free(buf);
    return rc;
}
