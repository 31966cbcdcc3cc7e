/* test_gguf_hostile.c — one test per hostile GGUF file: each must be rejected with the right
 * code and a message naming what failed, never crash or leak. Not round trips (test_gguf.c). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gguf_bytes.h"
#include "plumb.h"
#include "testutil.h"

#define NOT_NULL ((void *)(uintptr_t)0x1) /* *out starts non-NULL: the call must clear it */

#define TNAME "blk.0.attn_q.weight"

static pl_error last; /* the error of the last rejected parse, for extra checks */

/* Case-insensitive: does hay contain one of the '|'-separated needles? "" matches all. */
static int mentions(const char *hay, const char *needles)
{
    const char *n = needles;
    if (!*n) return 1;
    while (*n) {
        size_t len = strcspn(n, "|");
        for (const char *h = hay; *h; h++) {
            size_t k = 0;
            while (k < len && h[k] && tolower((unsigned char)h[k]) == tolower((unsigned char)n[k]))
                k++;
            if (k == len) return 1;
        }
        n += len;
        if (*n == '|') n++;
    }
    return 0;
}

static int code_in(pl_status st, const pl_status *allowed, int n)
{
    for (int i = 0; i < n; i++)
        if (st == allowed[i]) return 1;
    return 0;
}

static void codes_str(char *out, size_t cap, const pl_status *allowed, int n)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t l = strlen(out);
        snprintf(out + l, cap - l, "%s%s", i ? " or " : "", pl_status_str(allowed[i]));
    }
}

/* Parses exactly len bytes (copied into a buffer of exactly that size, so ASan sees any read
 * past the end) with pl_gguf_parse and pl_model_load_memory; both must fail with one of the
 * allowed codes, clear *out, and leave a non-empty message that mentions `needles`. */
static void reject_bytes(const uint8_t *bytes, size_t len, const char *needles,
                         const pl_status *allowed, int n_allowed, const char *what, int line)
{
    static const uint8_t empty[1];
    uint8_t *copy = NULL;
    const void *data = empty;
    if (len) {
        copy = malloc(len);
        if (!copy) abort();
        memcpy(copy, bytes, len);
        data = copy;
    }
    char want[128];
    codes_str(want, sizeof want, allowed, n_allowed);

    pl_gguf *g = NOT_NULL;
    pl_error err = {PL_OK, "untouched"};
    pl_status st = pl_gguf_parse(&g, data, len, &err);
    TU_CHECK(code_in(st, allowed, n_allowed),
             "line %d (%s, %zu bytes): pl_gguf_parse -> %s, want %s", line, what, len,
             pl_status_str(st), want);
    TU_CHECK(g == NULL, "line %d (%s): pl_gguf_parse failed but *out is %p, not NULL", line, what,
             (void *)g);
    TU_CHECK(err.code == st, "line %d (%s): err.code %s != returned %s", line, what,
             pl_status_str(err.code), pl_status_str(st));
    TU_CHECK(err.msg[0] != '\0' && strcmp(err.msg, "untouched") != 0,
             "line %d (%s): empty error message", line, what);
    TU_CHECK(mentions(err.msg, needles), "line %d (%s): message \"%s\" does not mention \"%s\"",
             line, what, err.msg, needles);
    if (st == PL_OK && g && g != NOT_NULL) pl_gguf_free(g);
    last = err;

    pl_model *m = NOT_NULL;
    pl_error merr = {PL_OK, "untouched"};
    pl_status mst = pl_model_load_memory(&m, data, len, NULL, &merr);
    TU_CHECK(mst == st, "line %d (%s): pl_model_load_memory -> %s, pl_gguf_parse -> %s", line, what,
             pl_status_str(mst), pl_status_str(st));
    TU_CHECK(m == NULL, "line %d (%s): pl_model_load_memory failed but *out is %p", line, what,
             (void *)m);
    TU_CHECK(merr.msg[0] != '\0' && strcmp(merr.msg, "untouched") != 0,
             "line %d (%s): pl_model_load_memory: empty error message", line, what);
    if (mst == PL_OK && m && m != NOT_NULL) pl_model_free(m);
    free(copy);
}

#define REJECT(b, needles, ...)                                                                    \
    reject_bytes((b)->data, (b)->len, (needles), (const pl_status[]){__VA_ARGS__},                 \
                 (int)(sizeof((pl_status[]){__VA_ARGS__}) / sizeof(pl_status)), __func__,          \
                 __LINE__)

/* The file must parse; returns nothing, frees the view. */
static void accept_bytes(const gb_buf *b, const char *what, int line)
{
    uint8_t *copy = malloc(b->len ? b->len : 1);
    if (!copy) abort();
    memcpy(copy, b->data, b->len);
    pl_gguf *g = NULL;
    pl_error err = {PL_OK, ""};
    pl_status st = pl_gguf_parse(&g, copy, b->len, &err);
    TU_CHECK(st == PL_OK && g != NULL, "line %d (%s): pl_gguf_parse -> %s: %s", line, what,
             pl_status_str(st), err.msg);
    pl_gguf_free(g);
    free(copy);
}
#define ACCEPT(b) accept_bytes((b), __func__, __LINE__)

/* A file of one tensor (v3, alignment 32, no metadata) followed by data_bytes bytes of data. */
static void one_tensor(gb_buf *b, const char *name, uint32_t n_dims, const int64_t *ne,
                       uint32_t type, uint64_t offset, size_t data_bytes)
{
    gb_init(b);
    gb_header(b, 3, 1, 0);
    gb_tensor_info(b, name, n_dims, ne, type, offset);
    gb_pad(b, 32);
    gb_fill(b, 0x5a, data_bytes);
}

/* A metadata-only file whose single kv the caller appends (v3, no tensors). */
static void one_kv_header(gb_buf *b)
{
    gb_init(b);
    gb_header(b, 3, 0, 1);
}

/* A file with alignment `align` (uint32 general.alignment) and one F32 [8] tensor. */
static void with_alignment(gb_buf *b, uint32_t align)
{
    const int64_t ne[] = {8};
    gb_init(b);
    gb_header(b, 3, 1, 1);
    gb_kv_u32(b, "general.alignment", align);
    gb_tensor_info(b, "blk.0.attn_q.weight", 1, ne, PL_TYPE_F32, 0);
    gb_pad(b, align && align <= PL_GGUF_MAX_ALIGNMENT ? align : 32);
    gb_fill(b, 1, 32);
}

/* ---- the sanity baseline ------------------------------------------------------------ */

static void gguf_accepts_small_valid_file(void)
{
    gb_buf b;
    gb_small_valid(&b);
    ACCEPT(&b);
    gb_free(&b);
}

/* ---- sizes and headers -------------------------------------------------------------- */

static void gguf_rejects_empty_file(void)
{
    gb_buf b;
    gb_init(&b);
    REJECT(&b, "", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_three_byte_file(void)
{
    gb_buf b;
    gb_init(&b);
    gb_bytes(&b, "GGU", 3);
    REJECT(&b, "", PL_ERR_FORMAT);
    gb_free(&b);
}

static void reject_every_prefix(const gb_buf *b, const char *what)
{
    for (size_t n = 0; n < b->len; n++) {
        uint64_t before = CU_get_number_of_failures();
        reject_bytes(b->data, n, "", (const pl_status[]){PL_ERR_FORMAT}, 1, what, __LINE__);
        if (CU_get_number_of_failures() != before) {
            fprintf(stderr, "  %s: prefix of %zu of %zu bytes was not rejected cleanly\n", what, n,
                    b->len);
            return;
        }
    }
}

static void gguf_rejects_truncation_at_every_offset(void)
{
    gb_buf b;
    gb_small_valid(&b);
    ACCEPT(&b);
    reject_every_prefix(&b, "small valid file");
    printf("(%zu prefixes) ", b.len);
    gb_free(&b);
}

/* Every metadata type, scalars and arrays, no tensors: the file ends at its last value. */
static void gguf_rejects_truncation_of_every_value_type(void)
{
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 2, 0, 22);
    gb_kv(&b, "u8", PL_GGUF_UINT8), gb_u8(&b, 200);
    gb_kv(&b, "i8", PL_GGUF_INT8), gb_u8(&b, 0x80);
    gb_kv(&b, "u16", PL_GGUF_UINT16), gb_u16(&b, 60000);
    gb_kv(&b, "i16", PL_GGUF_INT16), gb_u16(&b, 0x8001);
    gb_kv(&b, "u32", PL_GGUF_UINT32), gb_u32(&b, 4000000000u);
    gb_kv(&b, "i32", PL_GGUF_INT32), gb_u32(&b, 0x80000001u);
    gb_kv(&b, "f32", PL_GGUF_FLOAT32), gb_f32(&b, 1.5f);
    gb_kv(&b, "bool", PL_GGUF_BOOL), gb_u8(&b, 1);
    gb_kv_str(&b, "string", "hello");
    gb_kv(&b, "u64", PL_GGUF_UINT64), gb_u64(&b, UINT64_MAX);
    gb_kv(&b, "i64", PL_GGUF_INT64), gb_u64(&b, 1ull << 63);
    gb_kv(&b, "f64", PL_GGUF_FLOAT64), gb_f64(&b, -2.25);
    gb_kv_arr(&b, "a.u8", PL_GGUF_UINT8, 3), gb_bytes(&b, "\1\2\3", 3);
    gb_kv_arr(&b, "a.i16", PL_GGUF_INT16, 2), gb_u16(&b, 1), gb_u16(&b, 0xffff);
    gb_kv_arr(&b, "a.u32", PL_GGUF_UINT32, 1), gb_u32(&b, 7);
    gb_kv_arr(&b, "a.f32", PL_GGUF_FLOAT32, 2), gb_f32(&b, 0.5f), gb_f32(&b, -0.5f);
    gb_kv_arr(&b, "a.bool", PL_GGUF_BOOL, 2), gb_u8(&b, 0), gb_u8(&b, 1);
    gb_kv_arr(&b, "a.u64", PL_GGUF_UINT64, 1), gb_u64(&b, 9);
    gb_kv_arr(&b, "a.f64", PL_GGUF_FLOAT64, 1), gb_f64(&b, 3.0);
    gb_kv_arr(&b, "a.empty", PL_GGUF_INT32, 0);
    gb_kv_arr(&b, "a.str", PL_GGUF_STRING, 2), gb_str(&b, "x"), gb_str(&b, "");
    gb_kv_arr(&b, "a.i64", PL_GGUF_INT64, 1), gb_u64(&b, 5);
    ACCEPT(&b);
    reject_every_prefix(&b, "every value type");
    printf("(%zu prefixes) ", b.len);
    gb_free(&b);
}

static void gguf_rejects_bad_magic(void)
{
    gb_buf b;
    gb_small_valid(&b);
    memcpy(b.data, "GGML", 4);
    REJECT(&b, "magic", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_version_1(void)
{
    gb_buf b;
    gb_small_valid(&b);
    gb_patch_u32(&b, 4, 1);
    REJECT(&b, "version", PL_ERR_UNSUPPORTED);
    gb_free(&b);
}

static void gguf_rejects_version_0(void)
{
    gb_buf b;
    gb_small_valid(&b);
    gb_patch_u32(&b, 4, 0);
    REJECT(&b, "version", PL_ERR_FORMAT, PL_ERR_UNSUPPORTED);
    gb_free(&b);
}

static void gguf_rejects_version_99(void)
{
    gb_buf b;
    gb_small_valid(&b);
    gb_patch_u32(&b, 4, 99);
    REJECT(&b, "version", PL_ERR_FORMAT, PL_ERR_UNSUPPORTED);
    TU_CHECK(strstr(last.msg, "99") != NULL, "message \"%s\" does not say the version 99",
             last.msg);
    gb_free(&b);
}

/* A v3 big-endian file (as ggml writes one on a big-endian host): the magic bytes are the
 * same, every number is byte-swapped, so the version reads as 0x03000000. */
static void gguf_rejects_big_endian_file(void)
{
    gb_buf b;
    gb_init(&b);
    gb_bytes(&b, "GGUF", 4);
    gb_u32_be(&b, 3);
    gb_u64_be(&b, 0); /* n_tensors */
    gb_u64_be(&b, 1); /* n_kv */
    gb_u64_be(&b, 12);
    gb_bytes(&b, "general.name", 12);
    gb_u32_be(&b, PL_GGUF_STRING);
    gb_u64_be(&b, 4);
    gb_bytes(&b, "tiny", 4);
    REJECT(&b, "endian", PL_ERR_UNSUPPORTED);
    gb_free(&b);
}

/* ---- counts in the header ----------------------------------------------------------- */

static void gguf_rejects_n_kv_huge(void)
{
    gb_buf b;
    gb_small_valid(&b);
    gb_patch_u64(&b, 16, UINT64_MAX);
    REJECT(&b, "kv|key|metadata", PL_ERR_LIMIT, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_n_kv_past_eof(void)
{
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 0, 1000); /* within the limit, but only two kvs follow */
    gb_kv_u32(&b, "a", 1);
    gb_kv_u32(&b, "b", 2);
    REJECT(&b, "", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_n_kv_over_max_kv(void)
{
    gb_buf b;
    char key[32];
    gb_init(&b);
    gb_header(&b, 3, 0, PL_GGUF_MAX_KV + 1ull); /* every kv is present and valid */
    for (uint32_t i = 0; i <= PL_GGUF_MAX_KV; i++) {
        snprintf(key, sizeof key, "k%06" PRIu32, i);
        gb_kv(&b, key, PL_GGUF_UINT8);
        gb_u8(&b, (uint8_t)i);
    }
    REJECT(&b, "kv|key|metadata", PL_ERR_LIMIT);
    TU_CHECK(strstr(last.msg, "65536") != NULL, "message \"%s\" does not state the limit",
             last.msg);
    gb_free(&b);
}

static void gguf_accepts_n_kv_at_max_kv(void)
{
    gb_buf b;
    char key[32];
    gb_init(&b);
    gb_header(&b, 3, 0, PL_GGUF_MAX_KV);
    for (uint32_t i = 0; i < PL_GGUF_MAX_KV; i++) {
        snprintf(key, sizeof key, "k%06" PRIu32, i);
        gb_kv(&b, key, PL_GGUF_UINT8);
        gb_u8(&b, (uint8_t)i);
    }
    clock_t t0 = clock();
    ACCEPT(&b);
    printf("(%.2f s) ", (double)(clock() - t0) / CLOCKS_PER_SEC);
    gb_free(&b);
}

static void gguf_rejects_n_tensors_huge(void)
{
    gb_buf b;
    gb_small_valid(&b);
    gb_patch_u64(&b, 8, UINT64_MAX);
    REJECT(&b, "tensor", PL_ERR_LIMIT, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_n_tensors_past_eof(void)
{
    const int64_t ne[] = {8};
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 1000, 0); /* within the limit, but the file ends after one info */
    gb_tensor_info(&b, TNAME, 1, ne, PL_TYPE_F32, 0);
    REJECT(&b, "", PL_ERR_FORMAT);
    gb_free(&b);
}

/* n tensors named t<i>, F32 [1] each, 32 bytes apart: all valid apart from the count. */
static void many_tensors(gb_buf *b, uint64_t n_declared, uint32_t n)
{
    const int64_t ne[] = {1};
    char name[32];
    gb_init(b);
    gb_header(b, 3, n_declared, 0);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "t%06" PRIu32, i);
        gb_tensor_info(b, name, 1, ne, PL_TYPE_F32, 32ull * i);
    }
    gb_pad(b, 32);
    gb_fill(b, 0x11, 32ull * n);
}

static void gguf_rejects_n_tensors_over_max_tensors(void)
{
    gb_buf b;
    many_tensors(&b, PL_GGUF_MAX_TENSORS + 1ull, PL_GGUF_MAX_TENSORS + 1u);
    REJECT(&b, "tensor", PL_ERR_LIMIT);
    TU_CHECK(strstr(last.msg, "65536") != NULL, "message \"%s\" does not state the limit",
             last.msg);
    gb_free(&b);
}

static void gguf_accepts_n_tensors_at_max_tensors(void)
{
    gb_buf b;
    many_tensors(&b, PL_GGUF_MAX_TENSORS, PL_GGUF_MAX_TENSORS);
    clock_t t0 = clock();
    ACCEPT(&b);
    printf("(%.2f s) ", (double)(clock() - t0) / CLOCKS_PER_SEC);
    gb_free(&b);
}

/* ---- strings and keys --------------------------------------------------------------- */

static void gguf_rejects_string_len_max_u64(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv(&b, "general.name", PL_GGUF_STRING);
    gb_u64(&b, UINT64_MAX);
    gb_bytes(&b, "tiny", 4);
    REJECT(&b, "general.name", PL_ERR_LIMIT, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_string_len_past_eof(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv(&b, "general.name", PL_GGUF_STRING);
    gb_u64(&b, 100); /* within the limit; 10 bytes remain */
    gb_bytes(&b, "0123456789", 10);
    REJECT(&b, "general.name", PL_ERR_FORMAT);
    /* the length field is at 24 + 8 + 12 + 4 = 48, its bytes at 56 */
    TU_CHECK(strstr(last.msg, "48") || strstr(last.msg, "56"),
             "message \"%s\" does not state the offset", last.msg);
    gb_free(&b);
}

static void gguf_rejects_string_over_max_string(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv(&b, "tokenizer.chat_template", PL_GGUF_STRING);
    gb_u64(&b, PL_GGUF_MAX_STRING + 1ull); /* every byte is present */
    gb_fill(&b, 'x', PL_GGUF_MAX_STRING + 1ull);
    REJECT(&b, "tokenizer.chat_template", PL_ERR_LIMIT);
    TU_CHECK(strstr(last.msg, "16777216") != NULL, "message \"%s\" does not state the limit",
             last.msg);
    gb_free(&b);
}

static void gguf_accepts_string_at_max_string(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv(&b, "tokenizer.chat_template", PL_GGUF_STRING);
    gb_u64(&b, PL_GGUF_MAX_STRING);
    gb_fill(&b, 'x', PL_GGUF_MAX_STRING);
    ACCEPT(&b);
    gb_free(&b);
}

static void gguf_rejects_key_len_max_u64(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_u64(&b, UINT64_MAX);
    gb_bytes(&b, "general.name", 12);
    gb_u32(&b, PL_GGUF_UINT32);
    gb_u32(&b, 1);
    REJECT(&b, "key", PL_ERR_LIMIT, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_key_len_past_eof(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_u64(&b, 1000);
    gb_bytes(&b, "general.name", 12);
    REJECT(&b, "key", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_key_over_max_key(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_u64(&b, PL_GGUF_MAX_KEY + 1ull);
    gb_fill(&b, 'k', PL_GGUF_MAX_KEY + 1ull);
    gb_u32(&b, PL_GGUF_UINT8);
    gb_u8(&b, 1);
    REJECT(&b, "key", PL_ERR_LIMIT);
    TU_CHECK(strstr(last.msg, "65535") != NULL, "message \"%s\" does not state the limit",
             last.msg);
    gb_free(&b);
}

static void gguf_accepts_key_at_max_key(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_u64(&b, PL_GGUF_MAX_KEY);
    gb_fill(&b, 'k', PL_GGUF_MAX_KEY);
    gb_u32(&b, PL_GGUF_UINT8);
    gb_u8(&b, 1);
    ACCEPT(&b);
    gb_free(&b);
}

static void gguf_rejects_empty_key(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_u32(&b, "", 1);
    REJECT(&b, "key", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_duplicate_key(void)
{
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 0, 3);
    gb_kv_str(&b, "general.name", "a");
    gb_kv_u32(&b, "llama.block_count", 2);
    gb_kv_str(&b, "general.name", "b");
    REJECT(&b, "general.name", PL_ERR_FORMAT);
    gb_free(&b);
}

/* Same key with different value types is still a duplicate. */
static void gguf_rejects_duplicate_key_of_another_type(void)
{
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 0, 2);
    gb_kv_u32(&b, "llama.block_count", 2);
    gb_kv(&b, "llama.block_count", PL_GGUF_UINT64);
    gb_u64(&b, 2);
    REJECT(&b, "llama.block_count", PL_ERR_FORMAT);
    gb_free(&b);
}

/* ---- value types -------------------------------------------------------------------- */

static void gguf_rejects_unknown_value_type(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv(&b, "general.mystery", PL_GGUF_TYPE_COUNT);
    gb_u64(&b, 0);
    REJECT(&b, "general.mystery", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_value_type_max_u32(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv(&b, "general.mystery", UINT32_MAX);
    gb_u64(&b, 0);
    REJECT(&b, "general.mystery", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_nested_array(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "test.nested", PL_GGUF_ARRAY, 1);
    gb_u32(&b, PL_GGUF_UINT8); /* the inner array: u8 x 2 */
    gb_u64(&b, 2);
    gb_u8(&b, 1);
    gb_u8(&b, 2);
    REJECT(&b, "test.nested", PL_ERR_UNSUPPORTED);
    gb_free(&b);
}

static void gguf_rejects_empty_nested_array(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "test.nested", PL_GGUF_ARRAY, 0);
    REJECT(&b, "test.nested", PL_ERR_UNSUPPORTED);
    gb_free(&b);
}

static void gguf_rejects_array_of_unknown_type(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "test.arr", 13, 2);
    gb_u64(&b, 0);
    gb_u64(&b, 0);
    REJECT(&b, "test.arr", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_array_count_huge(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "test.arr", PL_GGUF_UINT8, UINT64_MAX);
    gb_bytes(&b, "\1\2\3\4", 4);
    REJECT(&b, "test.arr", PL_ERR_LIMIT, PL_ERR_FORMAT);
    gb_free(&b);
}

/* 2^61 elements of 8 bytes: the product wraps to exactly 0 in 64 bits. */
static void gguf_rejects_array_count_times_size_overflow(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "test.arr", PL_GGUF_UINT64, 1ull << 61);
    gb_u64(&b, 1);
    REJECT(&b, "test.arr", PL_ERR_LIMIT, PL_ERR_FORMAT);
    gb_free(&b);
    /* 2^62 + 1 elements of 4 bytes: wraps to 4, which would fit */
    one_kv_header(&b);
    gb_kv_arr(&b, "test.arr", PL_GGUF_FLOAT32, (1ull << 62) + 1);
    gb_f32(&b, 1.0f);
    REJECT(&b, "test.arr", PL_ERR_LIMIT, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_array_count_past_eof(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "test.arr", PL_GGUF_UINT32, 100); /* within the limit; 3 elements follow */
    gb_u32(&b, 1), gb_u32(&b, 2), gb_u32(&b, 3);
    REJECT(&b, "test.arr", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_array_over_max_array(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "test.arr", PL_GGUF_UINT8, PL_GGUF_MAX_ARRAY + 1ull); /* all present */
    gb_fill(&b, 7, PL_GGUF_MAX_ARRAY + 1ull);
    REJECT(&b, "test.arr", PL_ERR_LIMIT);
    TU_CHECK(strstr(last.msg, "16777216") != NULL, "message \"%s\" does not state the limit",
             last.msg);
    gb_free(&b);
}

static void gguf_rejects_string_array_count_huge(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "tokenizer.ggml.tokens", PL_GGUF_STRING, 1ull << 60);
    gb_str(&b, "a");
    gb_str(&b, "b");
    REJECT(&b, "tokenizer.ggml.tokens", PL_ERR_LIMIT, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_string_array_elem_len_past_eof(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "tokenizer.ggml.tokens", PL_GGUF_STRING, 3);
    gb_str(&b, "a");
    gb_u64(&b, 50); /* element 1: 50 bytes declared, 3 present */
    gb_bytes(&b, "bcd", 3);
    REJECT(&b, "tokenizer.ggml.tokens", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_string_array_elem_len_max_u64(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "tokenizer.ggml.tokens", PL_GGUF_STRING, 2);
    gb_str(&b, "a");
    gb_u64(&b, UINT64_MAX);
    gb_bytes(&b, "bcd", 3);
    REJECT(&b, "tokenizer.ggml.tokens", PL_ERR_LIMIT, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_bool_value_2(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv(&b, "test.flag", PL_GGUF_BOOL);
    gb_u8(&b, 2);
    REJECT(&b, "test.flag", PL_ERR_FORMAT);
    /* the value byte is at 24 + 8 + 9 + 4 = 45 */
    TU_CHECK(strstr(last.msg, "45") != NULL, "message \"%s\" does not state the offset", last.msg);
    gb_free(&b);
}

static void gguf_rejects_bool_array_elem_2(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_arr(&b, "test.flags", PL_GGUF_BOOL, 3);
    gb_u8(&b, 1), gb_u8(&b, 0), gb_u8(&b, 2);
    REJECT(&b, "test.flags", PL_ERR_FORMAT);
    gb_free(&b);
}

/* ---- general.alignment -------------------------------------------------------------- */

static void gguf_rejects_alignment_0(void)
{
    gb_buf b;
    with_alignment(&b, 0);
    REJECT(&b, "alignment", PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_alignment_3(void)
{
    gb_buf b;
    with_alignment(&b, 3);
    REJECT(&b, "alignment", PL_ERR_FORMAT);
    gb_free(&b);
}

/* A power of two beyond PL_GGUF_MAX_ALIGNMENT: a limit, not garbage. */
static void gguf_rejects_alignment_2_pow_31(void)
{
    gb_buf b;
    with_alignment(&b, 1u << 31);
    REJECT(&b, "alignment", PL_ERR_LIMIT);
    TU_CHECK(strstr(last.msg, "65536") != NULL, "message \"%s\" does not state the limit",
             last.msg);
    gb_free(&b);
}

static void gguf_rejects_alignment_over_max_alignment(void)
{
    gb_buf b;
    with_alignment(&b, PL_GGUF_MAX_ALIGNMENT * 2);
    REJECT(&b, "alignment", PL_ERR_LIMIT);
    gb_free(&b);
}

static void gguf_accepts_alignment_max_and_1(void)
{
    gb_buf b;
    with_alignment(&b, PL_GGUF_MAX_ALIGNMENT);
    ACCEPT(&b);
    gb_free(&b);
    with_alignment(&b, 1);
    ACCEPT(&b);
    gb_free(&b);
}

static void gguf_rejects_alignment_of_type_u64(void)
{
    const int64_t ne[] = {8};
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 1, 1);
    gb_kv(&b, "general.alignment", PL_GGUF_UINT64);
    gb_u64(&b, 32);
    gb_tensor_info(&b, "blk.0.attn_q.weight", 1, ne, PL_TYPE_F32, 0);
    gb_pad(&b, 32);
    gb_fill(&b, 1, 32);
    REJECT(&b, "alignment", PL_ERR_FORMAT, PL_ERR_TYPE);
    gb_free(&b);
}

static void gguf_rejects_alignment_of_type_string(void)
{
    gb_buf b;
    one_kv_header(&b);
    gb_kv_str(&b, "general.alignment", "32");
    REJECT(&b, "alignment", PL_ERR_FORMAT, PL_ERR_TYPE);
    gb_free(&b);
}

/* ---- tensor infos ------------------------------------------------------------------- */

static void gguf_rejects_n_dims_0(void)
{
    const int64_t ne[] = {8};
    gb_buf b;
    one_tensor(&b, TNAME, 0, ne, PL_TYPE_F32, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_n_dims_5(void)
{
    const int64_t ne[] = {8, 1, 1, 1, 1};
    gb_buf b;
    one_tensor(&b, TNAME, 5, ne, PL_TYPE_F32, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT, PL_ERR_LIMIT);
    gb_free(&b);
}

static void gguf_rejects_n_dims_huge(void)
{
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 1, 0);
    gb_str(&b, TNAME);
    gb_u32(&b, UINT32_MAX); /* then two dims, the type and offset, and data */
    gb_u64(&b, 8);
    gb_u64(&b, 1);
    gb_u32(&b, PL_TYPE_F32);
    gb_u64(&b, 0);
    gb_pad(&b, 32);
    gb_fill(&b, 0x5a, 64);
    REJECT(&b, TNAME, PL_ERR_FORMAT, PL_ERR_LIMIT);
    gb_free(&b);
}

static void gguf_rejects_ne_zero(void)
{
    const int64_t ne[] = {8, 0};
    gb_buf b;
    one_tensor(&b, TNAME, 2, ne, PL_TYPE_F32, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_ne_negative(void)
{
    const int64_t ne[] = {8, -5};
    gb_buf b;
    one_tensor(&b, TNAME, 2, ne, PL_TYPE_F32, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
    /* -2 * -4 would be a positive product */
    const int64_t ne2[] = {-2, -4};
    one_tensor(&b, TNAME, 2, ne2, PL_TYPE_F32, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_ne_product_overflow(void)
{
    const int64_t ne[] = {1ll << 31, 1ll << 31, 1ll << 31, 1ll << 31}; /* wraps to 0 */
    gb_buf b;
    one_tensor(&b, TNAME, 4, ne, PL_TYPE_F32, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT, PL_ERR_LIMIT);
    gb_free(&b);
    const int64_t ne2[] = {1ll << 32, (1ll << 31) + 1}; /* past INT64_MAX, not past UINT64 */
    one_tensor(&b, TNAME, 2, ne2, PL_TYPE_F32, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT, PL_ERR_LIMIT);
    gb_free(&b);
}

/* The element count fits, the byte count (x 4) wraps to exactly 0. */
static void gguf_rejects_tensor_bytes_overflow(void)
{
    const int64_t ne[] = {1ll << 62};
    gb_buf b;
    one_tensor(&b, TNAME, 1, ne, PL_TYPE_F32, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT, PL_ERR_LIMIT);
    gb_free(&b);
}

static void gguf_rejects_unknown_tensor_type(void)
{
    const int64_t ne[] = {8};
    gb_buf b;
    one_tensor(&b, TNAME, 1, ne, 77, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    TU_CHECK(strstr(last.msg, "77") != NULL, "message \"%s\" does not say the type id 77",
             last.msg);
    gb_free(&b);
}

static void gguf_rejects_tensor_type_max_u32(void)
{
    const int64_t ne[] = {8};
    gb_buf b;
    one_tensor(&b, TNAME, 1, ne, UINT32_MAX, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

/* Id 4 (ggml's removed Q4_2) lies inside plumb's table but has no name and no traits. */
static void gguf_rejects_tensor_type_removed_id_4(void)
{
    const int64_t ne[] = {32};
    gb_buf b;
    one_tensor(&b, TNAME, 1, ne, 4, 0, 32);
    REJECT(&b, TNAME, PL_ERR_FORMAT, PL_ERR_UNSUPPORTED);
    gb_free(&b);
}

static void gguf_rejects_unsupported_tensor_type_iq2_xxs(void)
{
    const int64_t ne[] = {256};
    gb_buf b;
    one_tensor(&b, TNAME, 1, ne, 16, 0, 66); /* one IQ2_XXS block is 66 bytes */
    REJECT(&b, TNAME, PL_ERR_UNSUPPORTED);
    TU_CHECK(strstr(last.msg, "IQ2_XXS") != NULL, "message \"%s\" does not name IQ2_XXS", last.msg);
    gb_free(&b);
}

static void gguf_rejects_row_not_multiple_of_block(void)
{
    const int64_t ne[] = {33, 2};
    gb_buf b;
    one_tensor(&b, TNAME, 2, ne, PL_TYPE_Q4_0, 0, 4 * 18);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
    const int64_t ne_k[] = {512 + 32};
    one_tensor(&b, TNAME, 1, ne_k, PL_TYPE_Q6_K, 0, 3 * 210);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_misaligned_tensor_offset(void)
{
    const int64_t ne[] = {8};
    gb_buf b;
    one_tensor(&b, TNAME, 1, ne, PL_TYPE_F32, 4, 64);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_offset_misaligned_for_custom_alignment(void)
{
    const int64_t ne[] = {8};
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 1, 1);
    gb_kv_u32(&b, "general.alignment", 64);
    gb_tensor_info(&b, TNAME, 1, ne, PL_TYPE_F32, 32); /* aligned to 32, not to 64 */
    gb_pad(&b, 64);
    gb_fill(&b, 1, 128);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

/* With alignment 64 the data section starts at align_up(end of infos, 64). Lay the data out
 * at align_up(end, 32) instead, where the two differ: the tensor then lies past EOF. */
static void gguf_rejects_data_section_not_at_custom_alignment(void)
{
    const int64_t ne[] = {8};
    char name[128];
    gb_buf b;
    for (int extra = 0; extra < 64; extra++) {
        snprintf(name, sizeof name, "%s%.*s", TNAME, extra,
                 "................................"
                 "................................");
        gb_init(&b);
        gb_header(&b, 3, 1, 1);
        gb_kv_u32(&b, "general.alignment", 64);
        gb_tensor_info(&b, name, 1, ne, PL_TYPE_F32, 0);
        if (gb_align_up(b.len, 32) != gb_align_up(b.len, 64)) break;
        gb_free(&b);
    }
    gb_pad(&b, 32);
    gb_fill(&b, 1, 32); /* ends exactly where the 64-aligned data section would begin */
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_tensor_past_eof(void)
{
    const int64_t ne[] = {1000};
    gb_buf b;
    one_tensor(&b, TNAME, 1, ne, PL_TYPE_F32, 0, 64);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
    /* ends one byte past EOF */
    const int64_t ne1[] = {16};
    one_tensor(&b, TNAME, 1, ne1, PL_TYPE_F32, 0, 63);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_tensor_offset_past_eof(void)
{
    const int64_t ne[] = {8};
    gb_buf b;
    one_tensor(&b, TNAME, 1, ne, PL_TYPE_F32, 1ull << 40, 64);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

/* offset + bytes wraps around 2^64 back into the file. */
static void gguf_rejects_tensor_offset_overflow(void)
{
    const int64_t ne[] = {16};
    gb_buf b;
    one_tensor(&b, TNAME, 1, ne, PL_TYPE_F32, UINT64_MAX - 31, 64);
    REJECT(&b, TNAME, PL_ERR_FORMAT);
    gb_free(&b);
}

/* One tensor, but the file ends right after the infos (no padding, no data). */
static void gguf_rejects_data_section_past_eof(void)
{
    const int64_t ne[] = {8};
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 1, 0);
    gb_tensor_info(&b, TNAME, 1, ne, PL_TYPE_F32, 0);
    REJECT(&b, "", PL_ERR_FORMAT);
    gb_free(&b);
}

#define UP   "blk.0.ffn_up.weight"
#define DOWN "blk.0.ffn_down.weight"

static void two_tensors(gb_buf *b, const char *n0, uint64_t off0, const char *n1, uint64_t off1,
                        size_t data_bytes)
{
    const int64_t ne[] = {32}; /* 128 bytes of F32 each */
    gb_init(b);
    gb_header(b, 3, 2, 0);
    gb_tensor_info(b, n0, 1, ne, PL_TYPE_F32, off0);
    gb_tensor_info(b, n1, 1, ne, PL_TYPE_F32, off1);
    gb_pad(b, 32);
    gb_fill(b, 3, data_bytes);
}

static void gguf_rejects_overlapping_tensors(void)
{
    gb_buf b;
    two_tensors(&b, UP, 0, DOWN, 64, 256); /* [0, 128) and [64, 192) */
    REJECT(&b, UP "|" DOWN, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_overlapping_tensors_out_of_order(void)
{
    gb_buf b;
    two_tensors(&b, UP, 96, DOWN, 0, 256); /* [96, 224) and [0, 128) */
    REJECT(&b, UP "|" DOWN, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_tensors_at_same_offset(void)
{
    gb_buf b;
    two_tensors(&b, UP, 128, DOWN, 128, 256);
    REJECT(&b, UP "|" DOWN, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_tensor_inside_another(void)
{
    const int64_t big[] = {64}, small[] = {8};
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 2, 0);
    gb_tensor_info(&b, UP, 1, big, PL_TYPE_F32, 0);      /* [0, 256) */
    gb_tensor_info(&b, DOWN, 1, small, PL_TYPE_F32, 96); /* [96, 128) */
    gb_pad(&b, 32);
    gb_fill(&b, 3, 256);
    REJECT(&b, UP "|" DOWN, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_accepts_tensors_out_of_offset_order(void)
{
    gb_buf b;
    two_tensors(&b, UP, 128, DOWN, 0, 256);
    ACCEPT(&b);
    gb_free(&b);
}

static void gguf_rejects_duplicate_tensor_name(void)
{
    gb_buf b;
    two_tensors(&b, UP, 0, UP, 128, 256);
    REJECT(&b, UP, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_rejects_tensor_name_over_max_name(void)
{
    char name[PL_GGUF_MAX_NAME + 2];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    const int64_t ne[] = {8};
    gb_buf b;
    one_tensor(&b, name, 1, ne, PL_TYPE_F32, 0, 32);
    REJECT(&b, "name|tensor", PL_ERR_LIMIT);
    TU_CHECK(strstr(last.msg, "256") != NULL, "message \"%s\" does not state the limit", last.msg);
    gb_free(&b);
}

static void gguf_accepts_tensor_name_at_max_name(void)
{
    char name[PL_GGUF_MAX_NAME + 1];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    const int64_t ne[] = {8};
    gb_buf b;
    one_tensor(&b, name, 1, ne, PL_TYPE_F32, 0, 32);
    ACCEPT(&b);
    gb_free(&b);
}

static void gguf_rejects_tensor_name_len_max_u64(void)
{
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 1, 0);
    gb_u64(&b, UINT64_MAX);
    gb_fill(&b, 'n', 64);
    REJECT(&b, "name|tensor", PL_ERR_LIMIT, PL_ERR_FORMAT);
    gb_free(&b);
}

static void gguf_accepts_zero_tensors_without_padding(void)
{
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 3, 0, 1);
    gb_kv_str(&b, "general.name", "abc"); /* 24 + 20 + 4 + 11 = 59 bytes: unaligned end */
    TU_CHECK(b.len % 32 != 0, "the file should end unaligned (%zu bytes)", b.len);
    ACCEPT(&b);
    gb_free(&b);
    gb_init(&b);
    gb_header(&b, 2, 0, 0); /* just the header */
    ACCEPT(&b);
    gb_free(&b);
}

/* ---- files ------------------------------------------------------------------------- */

static char tmpdir[64];

static void make_tmpdir(void)
{
    if (tmpdir[0]) return;
    strcpy(tmpdir, "/tmp/plumb-gguf-hostile-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        abort();
    }
}

static void gguf_open_rejects_empty_file(void)
{
    make_tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/empty.gguf", tmpdir);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    fclose(f);
    pl_gguf *g = NOT_NULL;
    pl_error err = {PL_OK, ""};
    pl_status st = pl_gguf_open(&g, path, &err);
    TU_CHECK(st == PL_ERR_FORMAT, "open empty file -> %s (%s)", pl_status_str(st), err.msg);
    TU_CHECK(g == NULL, "*out not cleared");
    TU_CHECK(err.msg[0] != '\0', "empty message");
    pl_model *m = NOT_NULL;
    st = pl_model_load(&m, path, NULL, &err);
    TU_CHECK(st == PL_ERR_FORMAT, "pl_model_load of empty file -> %s (%s)", pl_status_str(st),
             err.msg);
    TU_CHECK(m == NULL, "*out not cleared");
    remove(path);
}

static void gguf_open_rejects_directory(void)
{
    make_tmpdir();
    pl_gguf *g = NOT_NULL;
    pl_error err = {PL_OK, ""};
    pl_status st = pl_gguf_open(&g, tmpdir, &err);
    TU_CHECK(st == PL_ERR_IO, "open directory -> %s (%s)", pl_status_str(st), err.msg);
    TU_CHECK(g == NULL, "*out not cleared");
    TU_CHECK(strstr(err.msg, tmpdir) != NULL, "message \"%s\" does not name %s", err.msg, tmpdir);
}

static void gguf_open_rejects_truncated_file(void)
{
    make_tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/trunc.gguf", tmpdir);
    gb_buf b;
    gb_small_valid(&b);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    fwrite(b.data, 1, b.len - 1, f);
    fclose(f);
    pl_gguf *g = NOT_NULL;
    pl_error err = {PL_OK, ""};
    pl_status st = pl_gguf_open(&g, path, &err);
    TU_CHECK(st == PL_ERR_FORMAT, "open truncated file -> %s (%s)", pl_status_str(st), err.msg);
    TU_CHECK(g == NULL, "*out not cleared");
    pl_model *m = NOT_NULL;
    st = pl_model_load(&m, path, NULL, &err);
    TU_CHECK(st == PL_ERR_FORMAT, "pl_model_load of truncated file -> %s (%s)", pl_status_str(st),
             err.msg);
    TU_CHECK(m == NULL, "*out not cleared");
    remove(path);
    gb_free(&b);
}

int main(void)
{
    static const tu_test tests[] = {
        {"gguf_accepts_small_valid_file", gguf_accepts_small_valid_file},
        {"gguf_rejects_empty_file", gguf_rejects_empty_file},
        {"gguf_rejects_three_byte_file", gguf_rejects_three_byte_file},
        {"gguf_rejects_truncation_at_every_offset", gguf_rejects_truncation_at_every_offset},
        {"gguf_rejects_truncation_of_every_value_type",
         gguf_rejects_truncation_of_every_value_type},
        {"gguf_rejects_bad_magic", gguf_rejects_bad_magic},
        {"gguf_rejects_version_1", gguf_rejects_version_1},
        {"gguf_rejects_version_0", gguf_rejects_version_0},
        {"gguf_rejects_version_99", gguf_rejects_version_99},
        {"gguf_rejects_big_endian_file", gguf_rejects_big_endian_file},
        {"gguf_rejects_n_kv_huge", gguf_rejects_n_kv_huge},
        {"gguf_rejects_n_kv_past_eof", gguf_rejects_n_kv_past_eof},
        {"gguf_rejects_n_kv_over_max_kv", gguf_rejects_n_kv_over_max_kv},
        {"gguf_accepts_n_kv_at_max_kv", gguf_accepts_n_kv_at_max_kv},
        {"gguf_rejects_n_tensors_huge", gguf_rejects_n_tensors_huge},
        {"gguf_rejects_n_tensors_past_eof", gguf_rejects_n_tensors_past_eof},
        {"gguf_rejects_n_tensors_over_max_tensors", gguf_rejects_n_tensors_over_max_tensors},
        {"gguf_accepts_n_tensors_at_max_tensors", gguf_accepts_n_tensors_at_max_tensors},
        {"gguf_rejects_string_len_max_u64", gguf_rejects_string_len_max_u64},
        {"gguf_rejects_string_len_past_eof", gguf_rejects_string_len_past_eof},
        {"gguf_rejects_string_over_max_string", gguf_rejects_string_over_max_string},
        {"gguf_accepts_string_at_max_string", gguf_accepts_string_at_max_string},
        {"gguf_rejects_key_len_max_u64", gguf_rejects_key_len_max_u64},
        {"gguf_rejects_key_len_past_eof", gguf_rejects_key_len_past_eof},
        {"gguf_rejects_key_over_max_key", gguf_rejects_key_over_max_key},
        {"gguf_accepts_key_at_max_key", gguf_accepts_key_at_max_key},
        {"gguf_rejects_empty_key", gguf_rejects_empty_key},
        {"gguf_rejects_duplicate_key", gguf_rejects_duplicate_key},
        {"gguf_rejects_duplicate_key_of_another_type", gguf_rejects_duplicate_key_of_another_type},
        {"gguf_rejects_unknown_value_type", gguf_rejects_unknown_value_type},
        {"gguf_rejects_value_type_max_u32", gguf_rejects_value_type_max_u32},
        {"gguf_rejects_nested_array", gguf_rejects_nested_array},
        {"gguf_rejects_empty_nested_array", gguf_rejects_empty_nested_array},
        {"gguf_rejects_array_of_unknown_type", gguf_rejects_array_of_unknown_type},
        {"gguf_rejects_array_count_huge", gguf_rejects_array_count_huge},
        {"gguf_rejects_array_count_times_size_overflow",
         gguf_rejects_array_count_times_size_overflow},
        {"gguf_rejects_array_count_past_eof", gguf_rejects_array_count_past_eof},
        {"gguf_rejects_array_over_max_array", gguf_rejects_array_over_max_array},
        {"gguf_rejects_string_array_count_huge", gguf_rejects_string_array_count_huge},
        {"gguf_rejects_string_array_elem_len_past_eof",
         gguf_rejects_string_array_elem_len_past_eof},
        {"gguf_rejects_string_array_elem_len_max_u64", gguf_rejects_string_array_elem_len_max_u64},
        {"gguf_rejects_bool_value_2", gguf_rejects_bool_value_2},
        {"gguf_rejects_bool_array_elem_2", gguf_rejects_bool_array_elem_2},
        {"gguf_rejects_alignment_0", gguf_rejects_alignment_0},
        {"gguf_rejects_alignment_3", gguf_rejects_alignment_3},
        {"gguf_rejects_alignment_2_pow_31", gguf_rejects_alignment_2_pow_31},
        {"gguf_rejects_alignment_over_max_alignment", gguf_rejects_alignment_over_max_alignment},
        {"gguf_accepts_alignment_max_and_1", gguf_accepts_alignment_max_and_1},
        {"gguf_rejects_alignment_of_type_u64", gguf_rejects_alignment_of_type_u64},
        {"gguf_rejects_alignment_of_type_string", gguf_rejects_alignment_of_type_string},
        {"gguf_rejects_n_dims_0", gguf_rejects_n_dims_0},
        {"gguf_rejects_n_dims_5", gguf_rejects_n_dims_5},
        {"gguf_rejects_n_dims_huge", gguf_rejects_n_dims_huge},
        {"gguf_rejects_ne_zero", gguf_rejects_ne_zero},
        {"gguf_rejects_ne_negative", gguf_rejects_ne_negative},
        {"gguf_rejects_ne_product_overflow", gguf_rejects_ne_product_overflow},
        {"gguf_rejects_tensor_bytes_overflow", gguf_rejects_tensor_bytes_overflow},
        {"gguf_rejects_unknown_tensor_type", gguf_rejects_unknown_tensor_type},
        {"gguf_rejects_tensor_type_max_u32", gguf_rejects_tensor_type_max_u32},
        {"gguf_rejects_tensor_type_removed_id_4", gguf_rejects_tensor_type_removed_id_4},
        {"gguf_rejects_unsupported_tensor_type_iq2_xxs",
         gguf_rejects_unsupported_tensor_type_iq2_xxs},
        {"gguf_rejects_row_not_multiple_of_block", gguf_rejects_row_not_multiple_of_block},
        {"gguf_rejects_misaligned_tensor_offset", gguf_rejects_misaligned_tensor_offset},
        {"gguf_rejects_offset_misaligned_for_custom_alignment",
         gguf_rejects_offset_misaligned_for_custom_alignment},
        {"gguf_rejects_data_section_not_at_custom_alignment",
         gguf_rejects_data_section_not_at_custom_alignment},
        {"gguf_rejects_tensor_past_eof", gguf_rejects_tensor_past_eof},
        {"gguf_rejects_tensor_offset_past_eof", gguf_rejects_tensor_offset_past_eof},
        {"gguf_rejects_tensor_offset_overflow", gguf_rejects_tensor_offset_overflow},
        {"gguf_rejects_data_section_past_eof", gguf_rejects_data_section_past_eof},
        {"gguf_rejects_overlapping_tensors", gguf_rejects_overlapping_tensors},
        {"gguf_rejects_overlapping_tensors_out_of_order",
         gguf_rejects_overlapping_tensors_out_of_order},
        {"gguf_rejects_tensors_at_same_offset", gguf_rejects_tensors_at_same_offset},
        {"gguf_rejects_tensor_inside_another", gguf_rejects_tensor_inside_another},
        {"gguf_accepts_tensors_out_of_offset_order", gguf_accepts_tensors_out_of_offset_order},
        {"gguf_rejects_duplicate_tensor_name", gguf_rejects_duplicate_tensor_name},
        {"gguf_rejects_tensor_name_over_max_name", gguf_rejects_tensor_name_over_max_name},
        {"gguf_accepts_tensor_name_at_max_name", gguf_accepts_tensor_name_at_max_name},
        {"gguf_rejects_tensor_name_len_max_u64", gguf_rejects_tensor_name_len_max_u64},
        {"gguf_accepts_zero_tensors_without_padding", gguf_accepts_zero_tensors_without_padding},
        {"gguf_open_rejects_empty_file", gguf_open_rejects_empty_file},
        {"gguf_open_rejects_directory", gguf_open_rejects_directory},
        {"gguf_open_rejects_truncated_file", gguf_open_rejects_truncated_file},
        {NULL, NULL},
    };
    int rc = tu_run("gguf_hostile", tests);
    if (tmpdir[0]) rmdir(tmpdir);
    return rc;
}
