/* gguf_bytes.c — the hand-crafted GGUF byte builder the GGUF tests share.
 * Test-only and independent of engine/gguf/gguf_writer.c, so it can build exactly the bad bytes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_bytes.h"
#include "plumb.h"

void gb_init(gb_buf *b)
{
    memset(b, 0, sizeof *b);
}

void gb_free(gb_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

static uint8_t *gb_grow(gb_buf *b, size_t n)
{
    if (n > SIZE_MAX - b->len) abort();
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        uint8_t *p = realloc(b->data, cap);
        if (!p) {
            fprintf(stderr, "gguf_bytes: out of memory (%zu bytes)\n", cap);
            abort();
        }
        b->data = p;
        b->cap = cap;
    }
    uint8_t *at = b->data + b->len;
    b->len += n;
    return at;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

void gb_u8(gb_buf *b, uint8_t v)
{
    *gb_grow(b, 1) = v;
}

void gb_u16(gb_buf *b, uint16_t v)
{
    put_le(gb_grow(b, 2), v, 2);
}

void gb_u32(gb_buf *b, uint32_t v)
{
    put_le(gb_grow(b, 4), v, 4);
}

void gb_u64(gb_buf *b, uint64_t v)
{
    put_le(gb_grow(b, 8), v, 8);
}

void gb_f32(gb_buf *b, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    gb_u32(b, u);
}

void gb_f64(gb_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    gb_u64(b, u);
}

void gb_u32_be(gb_buf *b, uint32_t v)
{
    put_be(gb_grow(b, 4), v, 4);
}

void gb_u64_be(gb_buf *b, uint64_t v)
{
    put_be(gb_grow(b, 8), v, 8);
}

void gb_bytes(gb_buf *b, const void *p, size_t n)
{
    if (n) memcpy(gb_grow(b, n), p, n);
}

void gb_fill(gb_buf *b, uint8_t v, size_t n)
{
    if (n) memset(gb_grow(b, n), v, n);
}

void gb_strn(gb_buf *b, const char *s, size_t n)
{
    gb_u64(b, n);
    gb_bytes(b, s, n);
}

void gb_str(gb_buf *b, const char *s)
{
    gb_strn(b, s, strlen(s));
}

void gb_header(gb_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}

void gb_kv(gb_buf *b, const char *key, uint32_t type)
{
    gb_str(b, key);
    gb_u32(b, type);
}

void gb_kv_u32(gb_buf *b, const char *key, uint32_t v)
{
    gb_kv(b, key, PL_GGUF_UINT32);
    gb_u32(b, v);
}

void gb_kv_f32(gb_buf *b, const char *key, float v)
{
    gb_kv(b, key, PL_GGUF_FLOAT32);
    gb_f32(b, v);
}

void gb_kv_str(gb_buf *b, const char *key, const char *s)
{
    gb_kv(b, key, PL_GGUF_STRING);
    gb_str(b, s);
}

void gb_kv_arr(gb_buf *b, const char *key, uint32_t elem_type, uint64_t count)
{
    gb_kv(b, key, PL_GGUF_ARRAY);
    gb_u32(b, elem_type);
    gb_u64(b, count);
}

void gb_tensor_info(gb_buf *b, const char *name, uint32_t n_dims, const int64_t *ne, uint32_t type,
                    uint64_t offset)
{
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) gb_u64(b, (uint64_t)ne[i]);
    gb_u32(b, type);
    gb_u64(b, offset);
}

uint64_t gb_align_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

void gb_pad(gb_buf *b, size_t align)
{
    gb_fill(b, 0, (size_t)gb_align_up(b->len, align) - b->len);
}

void gb_patch_u32(gb_buf *b, size_t off, uint32_t v)
{
    if (off > b->len || b->len - off < 4) abort();
    put_le(b->data + off, v, 4);
}

void gb_patch_u64(gb_buf *b, size_t off, uint64_t v)
{
    if (off > b->len || b->len - off < 8) abort();
    put_le(b->data + off, v, 8);
}

void gb_small_valid(gb_buf *b)
{
    static const char *const words[] = {"a", "bc", "def"};
    gb_init(b);
    gb_header(b, 3, GB_SMALL_N_TENSORS, GB_SMALL_N_KV);
    gb_kv_str(b, "general.name", "tiny");
    gb_kv_u32(b, "general.alignment", 32);
    gb_kv(b, "test.count", PL_GGUF_UINT64);
    gb_u64(b, 7);
    gb_kv(b, "test.flag", PL_GGUF_BOOL);
    gb_u8(b, 1);
    gb_kv_arr(b, "test.words", PL_GGUF_STRING, 3);
    for (int i = 0; i < 3; i++) gb_str(b, words[i]);

    const int64_t ne_f32[] = {8, 2}, ne_q8[] = {64}, ne_f16[] = {3};
    gb_tensor_info(b, "t.f32", 2, ne_f32, PL_TYPE_F32, 0);   /* 64 bytes: [0, 64) */
    gb_tensor_info(b, "t.q8", 1, ne_q8, PL_TYPE_Q8_0, 64);   /* 2 x 34 bytes: [64, 132) */
    gb_tensor_info(b, "t.f16", 1, ne_f16, PL_TYPE_F16, 160); /* 6 bytes: [160, 166) */
    gb_pad(b, 32);
    for (size_t i = 0; i < 166; i++) gb_u8(b, (uint8_t)(i * 7 + 3));
}

void gb_tiny_llama(gb_buf *b)
{
    enum { E = 32, V = 8, FF = 64 };
    static const struct {
        const char *name;
        uint32_t n_dims;
        int64_t ne0, ne1;
    } t[GB_LLAMA_N_TENSORS] = {
        {"token_embd.weight", 2, E, V},        {"output_norm.weight", 1, E, 1},
        {"blk.0.attn_norm.weight", 1, E, 1},   {"blk.0.attn_q.weight", 2, E, E},
        {"blk.0.attn_k.weight", 2, E, E},      {"blk.0.attn_v.weight", 2, E, E},
        {"blk.0.attn_output.weight", 2, E, E}, {"blk.0.ffn_norm.weight", 1, E, 1},
        {"blk.0.ffn_gate.weight", 2, E, FF},   {"blk.0.ffn_up.weight", 2, E, FF},
        {"blk.0.ffn_down.weight", 2, FF, E},
    };
    gb_init(b);
    gb_header(b, 3, GB_LLAMA_N_TENSORS, GB_LLAMA_N_KV);
    gb_kv_str(b, "general.architecture", "llama");
    gb_kv_u32(b, "llama.embedding_length", E);
    gb_kv_u32(b, "llama.block_count", 1);
    gb_kv_u32(b, "llama.attention.head_count", 2);
    gb_kv_u32(b, "llama.feed_forward_length", FF);
    gb_kv_f32(b, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    uint64_t off = 0;
    for (int i = 0; i < GB_LLAMA_N_TENSORS; i++) {
        const int64_t ne[] = {t[i].ne0, t[i].ne1};
        gb_tensor_info(b, t[i].name, t[i].n_dims, ne, PL_TYPE_F32, off);
        off = gb_align_up(off + 4 * (uint64_t)(t[i].ne0 * t[i].ne1), 32);
    }
    gb_pad(b, 32);
    size_t base = b->len;
    off = 0;
    for (int i = 0; i < GB_LLAMA_N_TENSORS; i++) {
        gb_fill(b, 0, (size_t)(base + off - b->len));
        int64_t n = t[i].ne0 * t[i].ne1;
        for (int64_t k = 0; k < n; k++) gb_f32(b, (float)((k + i) % 17 - 8) * 0.01f);
        off = gb_align_up(off + 4 * (uint64_t)n, 32);
    }
}

const gb_ttype gb_ttypes[GB_N_TTYPES] = {
    {PL_TYPE_F32, "F32", 1, 4},         {PL_TYPE_F16, "F16", 1, 2},
    {PL_TYPE_BF16, "BF16", 1, 2},       {PL_TYPE_Q4_0, "Q4_0", 32, 18},
    {PL_TYPE_Q4_1, "Q4_1", 32, 20},     {PL_TYPE_Q5_0, "Q5_0", 32, 22},
    {PL_TYPE_Q5_1, "Q5_1", 32, 24},     {PL_TYPE_Q8_0, "Q8_0", 32, 34},
    {PL_TYPE_Q4_K, "Q4_K", 256, 144},   {PL_TYPE_Q5_K, "Q5_K", 256, 176},
    {PL_TYPE_Q6_K, "Q6_K", 256, 210},   {PL_TYPE_Q8_K, "Q8_K", 256, 292},
    {PL_TYPE_Q2_K, "Q2_K", 256, 84},    {PL_TYPE_Q3_K, "Q3_K", 256, 110},
    {PL_TYPE_IQ4_NL, "IQ4_NL", 32, 18}, {PL_TYPE_IQ4_XS, "IQ4_XS", 256, 136},
    {PL_TYPE_MXFP4, "MXFP4", 32, 17},
};

static char tmpdir[64];

const char *gb_tmp_dir(void)
{
    if (!tmpdir[0]) {
        strcpy(tmpdir, "/tmp/plumb-gguf-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
            abort();
        }
    }
    return tmpdir;
}

const char *gb_tmp_path(const char *name)
{
    static char path[160];
    snprintf(path, sizeof path, "%s/%s", gb_tmp_dir(), name);
    return path;
}

int gb_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

void gb_tmp_cleanup(void)
{
    if (tmpdir[0]) rmdir(tmpdir);
}

int gb_str_eq(pl_str s, const void *p, size_t n)
{
    return s.len == n && (n == 0 || (s.ptr && memcmp(s.ptr, p, n) == 0));
}
