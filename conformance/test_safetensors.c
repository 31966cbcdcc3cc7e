/* test_safetensors.c — the safetensors reader on valid and hostile files: one test per hostile
 * case (rejected with the right code and a message naming what failed, never a crash or a leak),
 * sharded checkpoints and their index, allocation failure. Not the converter (test_convert.c). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plumb.h"
#include "testutil.h"

#define NOT_NULL ((void *)(uintptr_t)0x1) /* *out starts non-NULL: the call must clear it */

/* ---- building files ------------------------------------------------------------------------ */

typedef struct buf {
    uint8_t *data;
    size_t len;
} buf;

/* 8-byte length (hlen, or strlen(json) when hlen is -1), the JSON, then data_len bytes of
 * data (byte i = i & 0xff). */
static buf st_file_len(const char *json, int64_t hlen, size_t data_len)
{
    size_t j = strlen(json);
    buf b = {malloc(8 + j + data_len + 1), 8 + j + data_len};
    if (!b.data) abort();
    uint64_t n = hlen == -1 ? (uint64_t)j : (uint64_t)hlen;
    for (int i = 0; i < 8; i++) b.data[i] = (uint8_t)(n >> (8 * i));
    memcpy(b.data + 8, json, j);
    for (size_t i = 0; i < data_len; i++) b.data[8 + j + i] = (uint8_t)i;
    return b;
}
static buf st_file(const char *json, size_t data_len)
{
    return st_file_len(json, -1, data_len);
}

static int mentions(const char *hay, const char *needles)
{
    const char *n = needles;
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
    return !*needles;
}

/* Does hay mention every ','-separated group of needles? */
static int mentions_all(const char *hay, const char *needles)
{
    char groups[256];
    snprintf(groups, sizeof groups, "%s", needles);
    for (char *save = NULL, *g = strtok_r(groups, ",", &save); g; g = strtok_r(NULL, ",", &save))
        if (!mentions(hay, g)) return 0;
    return 1;
}

/* Parses exactly len bytes (a copy of that size, so ASan sees a read past the end); must fail
 * with code, clear *out and say something that mentions every ','-separated needle group. */
static void reject_buf(buf b, pl_status code, const char *needles, const char *what, int line)
{
    uint8_t *copy = malloc(b.len ? b.len : 1);
    if (!copy) abort();
    memcpy(copy, b.data, b.len);
    pl_safetensors *st = NOT_NULL;
    pl_error err = {PL_OK, "untouched"};
    pl_status s = pl_safetensors_parse(&st, copy, b.len, "m.safetensors", &err);
    TU_CHECK(s == code, "line %d (%s): -> %s, want %s (%s)", line, what, pl_status_str(s),
             pl_status_str(code), err.msg);
    TU_CHECK(st == NULL, "line %d (%s): failed but *out is not NULL", line, what);
    TU_CHECK(err.code == s && err.msg[0] && strcmp(err.msg, "untouched") != 0,
             "line %d (%s): error not filled in", line, what);
    TU_CHECK(mentions(err.msg, "m.safetensors"), "line %d (%s): \"%s\" does not name the file",
             line, what, err.msg);
    TU_CHECK(mentions_all(err.msg, needles), "line %d (%s): \"%s\" does not mention \"%s\"", line,
             what, err.msg, needles);
    if (s == PL_OK && st != NOT_NULL) pl_safetensors_free(st);
    free(copy);
    free(b.data);
}
#define REJECT(b, code, needles)            reject_buf((b), (code), (needles), __func__, __LINE__)
#define REJECT_JSON(json, n, code, needles) REJECT(st_file((json), (n)), (code), (needles))

static pl_safetensors *accept_buf(buf b, const char *what, int line)
{
    pl_safetensors *st = NULL;
    pl_error err = {PL_OK, ""};
    pl_status s = pl_safetensors_parse(&st, b.data, b.len, "m.safetensors", &err);
    TU_CHECK(s == PL_OK && st, "line %d (%s): -> %s: %s", line, what, pl_status_str(s), err.msg);
    return st;
}

/* ---- valid files --------------------------------------------------------------------------- */

#define T(name, dtype, shape, b, e)                                                                \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static void safetensors_accepts_small_valid_file(void)
{
    const char *json = "{\"__metadata__\":{\"format\":\"pt\"}," T("w", "F32", "[2,3]", 0, 24) "," T(
        "b", "BF16", "[4]", 24, 32) "," T("s", "F16", "[]", 32,
                                          34) "," T("i", "I64", "[1,1]", 34,
                                                    42) "," T("z", "F32", "[0,5]", 42, 42) "}";
    buf b = st_file(json, 42);
    pl_safetensors *st = accept_buf(b, __func__, __LINE__);
    if (st) {
        CU_ASSERT_EQUAL(pl_safetensors_n_tensors(st), 5);
        /* name order */
        const char *order[] = {"b", "i", "s", "w", "z"};
        for (int i = 0; i < 5; i++)
            TU_CHECK(strcmp(pl_safetensors_tensor(st, (uint64_t)i)->name, order[i]) == 0,
                     "tensor %d is '%s', want '%s'", i,
                     pl_safetensors_tensor(st, (uint64_t)i)->name, order[i]);
        const pl_st_tensor *w = pl_safetensors_find(st, "w");
        const size_t hdr = 8 + strlen(json);
        TU_CHECK(w && w->type == PL_TYPE_F32 && w->n_dims == 2 && w->shape[0] == 2 &&
                     w->shape[1] == 3 && w->n_elems == 6 && w->n_bytes == 24 && w->offset == hdr &&
                     w->data == b.data + hdr,
                 "tensor w read wrong");
        const pl_st_tensor *s = pl_safetensors_find(st, "s");
        TU_CHECK(s && s->n_dims == 0 && s->n_elems == 1 && s->type == PL_TYPE_F16, "scalar s");
        const pl_st_tensor *i = pl_safetensors_find(st, "i");
        TU_CHECK(i && i->type == PL_TYPE_COUNT && strcmp(i->dtype, "I64") == 0, "I64 tensor i");
        const pl_st_tensor *z = pl_safetensors_find(st, "z");
        TU_CHECK(z && z->n_elems == 0 && z->n_bytes == 0, "empty tensor z");
        TU_CHECK(pl_safetensors_find(st, "nope") == NULL, "find of a missing name");
        const char *fmt = pl_safetensors_metadata(st, "format");
        TU_CHECK(fmt && strcmp(fmt, "pt") == 0, "metadata format");
        TU_CHECK(pl_safetensors_metadata(st, "other") == NULL, "missing metadata");
        pl_safetensors_free(st);
    }
    free(b.data);
}

static void safetensors_accepts_header_padded_with_spaces(void)
{
    buf b = st_file("{" T("w", "F32", "[1]", 0, 4) "}       ", 4);
    pl_safetensors *st = accept_buf(b, __func__, __LINE__);
    pl_safetensors_free(st);
    free(b.data);
}

static void safetensors_free_null_is_a_noop(void)
{
    pl_safetensors_free(NULL);
    CU_ASSERT_EQUAL(pl_safetensors_n_tensors(NULL), 0);
    CU_ASSERT_PTR_NULL(pl_safetensors_find(NULL, "x"));
}

/* An empty header ("{}", as safetensors' save_file({}) writes) is a file of no tensors: no array
 * to sort or search (qsort and bsearch must not get a NULL one; ASan/UBSan fuzzing found it). */
static void safetensors_accepts_file_with_no_tensors(void)
{
    static const char *const headers[] = {"{}", "{\"__metadata__\":{\"format\":\"pt\"}}"};
    for (size_t k = 0; k < sizeof headers / sizeof *headers; k++) {
        buf b = st_file(headers[k], 0);
        pl_safetensors *st = accept_buf(b, __func__, __LINE__);
        if (st) {
            CU_ASSERT_EQUAL(pl_safetensors_n_tensors(st), 0);
            TU_CHECK(pl_safetensors_find(st, "w") == NULL, "find in %s", headers[k]);
            TU_CHECK(pl_safetensors_find(st, "") == NULL, "find of '' in %s", headers[k]);
            TU_CHECK(pl_safetensors_tensor(st, 0) == NULL, "tensor 0 of %s", headers[k]);
            pl_safetensors_free(st);
        }
        free(b.data);
    }
}

/* ---- hostile files: the header length ------------------------------------------------------ */

static void safetensors_rejects_empty_file(void)
{
    REJECT(((buf){malloc(1), 0}), PL_ERR_FORMAT, "truncated");
}

static void safetensors_rejects_seven_byte_file(void)
{
    buf b = {malloc(7), 7};
    memset(b.data, 0, 7);
    REJECT(b, PL_ERR_FORMAT, "truncated");
}

static void safetensors_rejects_header_length_past_eof(void)
{
    REJECT(st_file_len("{}", 3, 0), PL_ERR_FORMAT, "truncated,header length 3");
}

static void safetensors_rejects_header_length_max_u64(void)
{
    REJECT(st_file_len("{}", -2 /* 2^64 - 2 */, 0), PL_ERR_LIMIT, "header length,limit");
}

static void safetensors_rejects_header_length_over_limit(void)
{
    REJECT(st_file_len("{}", (int64_t)PL_SAFETENSORS_MAX_HEADER + 1, 0), PL_ERR_LIMIT, "limit");
}

static void safetensors_rejects_truncation_at_every_offset(void)
{
    const char *json = "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F16", "[2,2]", 8, 16) "}";
    buf full = st_file(json, 16);
    for (size_t n = 0; n < full.len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, full.data, n);
        pl_safetensors *st = NOT_NULL;
        pl_error err = {PL_OK, ""};
        pl_status s = pl_safetensors_parse(&st, copy, n, "m.safetensors", &err);
        TU_CHECK(s == PL_ERR_FORMAT && st == NULL && err.msg[0], "%zu of %zu bytes -> %s (%s)", n,
                 full.len, pl_status_str(s), err.msg);
        free(copy);
    }
    free(full.data);
}

/* ---- hostile files: the JSON --------------------------------------------------------------- */

static void safetensors_rejects_header_not_starting_with_brace(void)
{
    REJECT_JSON(" {}", 0, PL_ERR_FORMAT, "'{'");
}

static void safetensors_rejects_header_that_is_an_array(void)
{
    REJECT_JSON("[]", 0, PL_ERR_FORMAT, "'{'");
}

static void safetensors_rejects_truncated_json(void)
{
    REJECT_JSON("{\"w\":{\"dtype\":\"F32\"", 0, PL_ERR_FORMAT, "not valid JSON");
}

static void safetensors_rejects_trailing_garbage_after_json(void)
{
    REJECT_JSON("{} x", 0, PL_ERR_FORMAT, "not valid JSON");
}

static void safetensors_rejects_nul_byte_in_header(void)
{
    buf b = st_file("{\"w\":1}", 0);
    b.data[8 + 3] = 0; /* inside the key */
    REJECT(b, PL_ERR_FORMAT, "JSON");
}

static void safetensors_rejects_invalid_utf8_in_name(void)
{
    REJECT_JSON("{\"\xff\xfe\":{}}", 0, PL_ERR_FORMAT, "JSON");
}

static void safetensors_rejects_duplicate_tensor_names(void)
{
    REJECT_JSON("{" T("w", "F32", "[1]", 0, 4) "," T("w", "F32", "[1]", 4, 8) "}", 8, PL_ERR_FORMAT,
                "duplicate");
}

static void safetensors_rejects_deeply_nested_json(void)
{
    char json[8192] = "{\"w\":";
    size_t n = strlen(json);
    for (int i = 0; i < 3000; i++) json[n++] = '[';
    json[n] = '\0';
    REJECT_JSON(json, 0, PL_ERR_FORMAT, "JSON");
}

/* ---- hostile files: tensor entries --------------------------------------------------------- */

static void safetensors_rejects_tensor_that_is_not_an_object(void)
{
    REJECT_JSON("{\"w\":[1,2]}", 0, PL_ERR_FORMAT, "'w',not an object");
}

static void safetensors_rejects_missing_dtype(void)
{
    REJECT_JSON("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, PL_ERR_FORMAT, "'w',dtype");
}

static void safetensors_rejects_missing_data_offsets(void)
{
    REJECT_JSON("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, PL_ERR_FORMAT, "data_offsets");
}

static void safetensors_rejects_unknown_field(void)
{
    REJECT_JSON("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4,
                PL_ERR_FORMAT, "unknown field 'x'");
}

static void safetensors_rejects_dtype_that_is_not_a_string(void)
{
    REJECT_JSON("{\"w\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, PL_ERR_FORMAT,
                "dtype,not a string");
}

static void safetensors_rejects_unknown_dtype(void)
{
    REJECT_JSON("{" T("w", "F33", "[1]", 0, 4) "}", 4, PL_ERR_UNSUPPORTED, "'w',F33");
}

static void safetensors_rejects_sub_byte_dtype_by_name(void)
{
    REJECT_JSON("{" T("w", "F4", "[2]", 0, 1) "}", 1, PL_ERR_UNSUPPORTED, "'F4'");
}

static void safetensors_rejects_lowercase_dtype(void)
{
    REJECT_JSON("{" T("w", "f32", "[1]", 0, 4) "}", 4, PL_ERR_UNSUPPORTED, "f32");
}

static void safetensors_rejects_shape_that_is_not_an_array(void)
{
    REJECT_JSON("{" T("w", "F32", "4", 0, 4) "}", 4, PL_ERR_FORMAT, "shape,not an array");
}

static void safetensors_rejects_negative_shape(void)
{
    REJECT_JSON("{" T("w", "F32", "[-1]", 0, 4) "}", 4, PL_ERR_FORMAT, "shape[0],negative");
}

static void safetensors_rejects_real_number_in_shape(void)
{
    REJECT_JSON("{" T("w", "F32", "[1.0]", 0, 4) "}", 4, PL_ERR_FORMAT, "shape[0],real");
}

static void safetensors_rejects_string_in_shape(void)
{
    REJECT_JSON("{" T("w", "F32", "[\"1\"]", 0, 4) "}", 4, PL_ERR_FORMAT, "shape[0],string");
}

static void safetensors_rejects_shape_over_int64_in_json(void)
{
    REJECT_JSON("{" T("w", "F32", "[18446744073709551616]", 0, 4) "}", 4, PL_ERR_FORMAT, "JSON");
}

static void safetensors_rejects_huge_shape_whose_count_overflows(void)
{
    REJECT_JSON("{" T("w", "F32", "[4294967296,4294967296]", 0, 4) "}", 4, PL_ERR_LIMIT,
                "'w',overflow");
}

static void safetensors_rejects_huge_shape_whose_bytes_overflow(void)
{
    REJECT_JSON("{" T("w", "F32", "[4611686018427387904]", 0, 4) "}", 4, PL_ERR_LIMIT,
                "'w',overflow");
}

static void safetensors_rejects_huge_shape_past_the_data(void)
{
    REJECT_JSON("{" T("w", "F32", "[1000000,1000000]", 0, 4) "}", 4, PL_ERR_FORMAT,
                "'w',need 4000000000000");
}

static void safetensors_rejects_too_many_dimensions(void)
{
    REJECT_JSON("{" T("w", "U8", "[1,1,1,1,1,1,1,1,1]", 0, 1) "}", 1, PL_ERR_LIMIT, "9 dimensions");
}

static void safetensors_rejects_empty_tensor_name(void)
{
    REJECT_JSON("{" T("", "F32", "[1]", 0, 4) "}", 4, PL_ERR_FORMAT, "empty name");
}

static void safetensors_rejects_name_over_the_limit(void)
{
    char json[4096], name[PL_SAFETENSORS_MAX_NAME + 2];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    snprintf(json, sizeof json, "{\"%s\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
             name);
    REJECT_JSON(json, 1, PL_ERR_LIMIT, "name of 1025 bytes");
}

/* ---- hostile files: offsets ---------------------------------------------------------------- */

static void safetensors_rejects_offsets_past_the_data(void)
{
    REJECT_JSON("{" T("w", "F32", "[2]", 0, 8) "}", 4, PL_ERR_FORMAT, "'w',[0, 8),past the end");
}

static void safetensors_rejects_offsets_end_before_begin(void)
{
    REJECT_JSON("{" T("w", "F32", "[1]", 8, 4) "}", 8, PL_ERR_FORMAT, "'w',end before");
}

static void safetensors_rejects_negative_offset(void)
{
    REJECT_JSON("{" T("w", "F32", "[1]", -4, 0) "}", 4, PL_ERR_FORMAT, "'w',data_offsets");
}

static void safetensors_rejects_three_offsets(void)
{
    REJECT_JSON("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8,
                PL_ERR_FORMAT, "data_offsets");
}

static void safetensors_rejects_offsets_that_are_not_an_array(void)
{
    REJECT_JSON("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{\"a\":0}}}", 4,
                PL_ERR_FORMAT, "data_offsets,an object");
}

static void safetensors_rejects_size_mismatch(void)
{
    REJECT_JSON("{" T("w", "F32", "[3]", 0, 8) "}", 8, PL_ERR_FORMAT, "'w',holds 8 bytes,need 12");
}

static void safetensors_rejects_dtype_size_mismatch(void)
{
    /* 4 elements of BF16 are 8 bytes, not 16 */
    REJECT_JSON("{" T("w", "BF16", "[4]", 0, 16) "}", 16, PL_ERR_FORMAT, "'w',need 8");
}

static void safetensors_rejects_overlapping_tensors(void)
{
    REJECT_JSON("{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 4, 12) "}", 12,
                PL_ERR_FORMAT, "overlaps");
}

static void safetensors_rejects_two_tensors_on_the_same_bytes(void)
{
    REJECT_JSON("{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 0, 8) "}", 8, PL_ERR_FORMAT,
                "overlaps");
}

static void safetensors_rejects_hole_between_tensors(void)
{
    REJECT_JSON("{" T("a", "F32", "[1]", 0, 4) "," T("b", "F32", "[1]", 8, 12) "}", 12,
                PL_ERR_FORMAT, "[4, 8),no tensor");
}

static void safetensors_rejects_bytes_after_the_last_tensor(void)
{
    REJECT_JSON("{" T("a", "F32", "[1]", 0, 4) "}", 5, PL_ERR_FORMAT, "last 1 bytes,no tensor");
}

/* ---- hostile files: metadata --------------------------------------------------------------- */

static void safetensors_rejects_metadata_that_is_not_an_object(void)
{
    REJECT_JSON("{\"__metadata__\":\"pt\"}", 0, PL_ERR_FORMAT, "__metadata__");
}

static void safetensors_rejects_metadata_value_that_is_not_a_string(void)
{
    REJECT_JSON("{\"__metadata__\":{\"n\":1}}", 0, PL_ERR_FORMAT, "__metadata__ 'n',not a string");
}

/* ---- sharded checkpoints --------------------------------------------------------------------- */

#define S1 "model-00001-of-00002.safetensors"
#define S2 "model-00002-of-00002.safetensors"

typedef struct two_shards {
    buf a, b;
    pl_st_shard shards[2];
} two_shards;

static two_shards make_shards(void)
{
    two_shards t;
    t.a = st_file("{" T("x", "F32", "[2]", 0, 8) "," T("y", "BF16", "[2]", 8, 12) "}", 12);
    t.b = st_file("{\"__metadata__\":{\"format\":\"pt\"}," T("z", "F16", "[3]", 0, 6) "}", 6);
    t.shards[0] = (pl_st_shard){S1, t.a.data, t.a.len};
    t.shards[1] = (pl_st_shard){S2, t.b.data, t.b.len};
    return t;
}

static void free_shards(two_shards *t)
{
    free(t->a.data);
    free(t->b.data);
}

static const char *good_index = "{\"metadata\":{\"total_size\":26},\"weight_map\":{\"x\":\"" S1
                                "\",\"y\":\"" S1 "\",\"z\":\"" S2 "\"}}";

static void reject_index(const char *index, pl_status code, const char *needles, int line)
{
    two_shards t = make_shards();
    pl_safetensors *st = NOT_NULL;
    pl_error err = {PL_OK, "untouched"};
    pl_status s = pl_safetensors_parse_sharded(&st, index, strlen(index), t.shards, 2, &err);
    TU_CHECK(s == code, "line %d: -> %s, want %s (%s)", line, pl_status_str(s), pl_status_str(code),
             err.msg);
    TU_CHECK(st == NULL, "line %d: *out not cleared", line);
    TU_CHECK(err.code == s && mentions_all(err.msg, needles),
             "line %d: \"%s\" does not mention \"%s\"", line, err.msg, needles);
    free_shards(&t);
}
#define REJECT_INDEX(index, code, needles) reject_index((index), (code), (needles), __LINE__)

static void sharded_accepts_index_and_two_shards(void)
{
    two_shards t = make_shards();
    pl_safetensors *st = NULL;
    pl_error err = {0};
    pl_status s =
        pl_safetensors_parse_sharded(&st, good_index, strlen(good_index), t.shards, 2, &err);
    TU_CHECK(s == PL_OK, "-> %s: %s", pl_status_str(s), err.msg);
    if (st) {
        CU_ASSERT_EQUAL(pl_safetensors_n_tensors(st), 3);
        CU_ASSERT_EQUAL(pl_safetensors_n_files(st), 2);
        const pl_st_tensor *z = pl_safetensors_find(st, "z");
        TU_CHECK(z && z->file == 1 && strcmp(pl_safetensors_file_name(st, 1), S2) == 0 &&
                     z->data == t.b.data + 8 + (t.b.len - 8 - 6),
                 "z is in the second shard");
        TU_CHECK(pl_safetensors_metadata(st, "format") != NULL, "shard metadata");
        pl_safetensors_free(st);
    }
    free_shards(&t);
}

static void sharded_rejects_path_escape(void)
{
    REJECT_INDEX("{\"weight_map\":{\"x\":\"../" S1 "\"}}", PL_ERR_FORMAT, "plain file name");
    REJECT_INDEX("{\"weight_map\":{\"x\":\"/etc/passwd\"}}", PL_ERR_FORMAT, "plain file name");
    REJECT_INDEX("{\"weight_map\":{\"x\":\"sub/" S1 "\"}}", PL_ERR_FORMAT, "plain file name");
    REJECT_INDEX("{\"weight_map\":{\"x\":\"..\"}}", PL_ERR_FORMAT, "plain file name");
    REJECT_INDEX("{\"weight_map\":{\"x\":\".hidden\"}}", PL_ERR_FORMAT, "plain file name");
    REJECT_INDEX("{\"weight_map\":{\"x\":\"\"}}", PL_ERR_FORMAT, "plain file name");
}

static void sharded_rejects_missing_shard(void)
{
    REJECT_INDEX("{\"weight_map\":{\"x\":\"" S1 "\",\"y\":\"" S1
                 "\",\"z\":\"model-3.safetensors\"}}",
                 PL_ERR_NOT_FOUND, "model-3.safetensors,missing");
}

static void sharded_rejects_tensor_in_the_wrong_shard(void)
{
    REJECT_INDEX("{\"weight_map\":{\"x\":\"" S1 "\",\"y\":\"" S2 "\",\"z\":\"" S2 "\"}}",
                 PL_ERR_FORMAT, "'y'");
}

static void sharded_rejects_tensor_missing_from_the_index(void)
{
    REJECT_INDEX("{\"weight_map\":{\"x\":\"" S1 "\",\"z\":\"" S2 "\"}}", PL_ERR_FORMAT,
                 "'y',not in the weight_map");
}

static void sharded_rejects_index_naming_an_absent_tensor(void)
{
    REJECT_INDEX("{\"weight_map\":{\"x\":\"" S1 "\",\"y\":\"" S1 "\",\"z\":\"" S2 "\",\"w\":\"" S2
                 "\"}}",
                 PL_ERR_NOT_FOUND, "'w'");
}

static void sharded_rejects_tensor_in_two_shards(void)
{
    buf a = st_file("{" T("x", "F32", "[1]", 0, 4) "}", 4);
    buf b = st_file("{" T("x", "F32", "[1]", 0, 4) "}", 4);
    pl_st_shard sh[2] = {{S1, a.data, a.len}, {S2, b.data, b.len}};
    const char *index = "{\"weight_map\":{\"x\":\"" S1 "\",\"y\":\"" S2 "\"}}";
    pl_safetensors *st = NOT_NULL;
    pl_error err = {0};
    pl_status s = pl_safetensors_parse_sharded(&st, index, strlen(index), sh, 2, &err);
    TU_CHECK(s == PL_ERR_FORMAT && st == NULL && mentions_all(err.msg, "'x',both"), "-> %s (%s)",
             pl_status_str(s), err.msg);
    free(a.data);
    free(b.data);
}

static void sharded_rejects_bad_index_json(void)
{
    REJECT_INDEX("{\"weight_map\":", PL_ERR_FORMAT, "index.json,not valid JSON");
    REJECT_INDEX("[1]", PL_ERR_FORMAT, "not a JSON object");
    REJECT_INDEX("{\"metadata\":{}}", PL_ERR_FORMAT, "weight_map,missing");
    REJECT_INDEX("{\"weight_map\":[]}", PL_ERR_FORMAT, "weight_map is an array");
    REJECT_INDEX("{\"weight_map\":{}}", PL_ERR_FORMAT, "no tensor");
    REJECT_INDEX("{\"weight_map\":{\"x\":3}}", PL_ERR_FORMAT, "'x',not a file name");
    REJECT_INDEX("{\"weight_map\":{\"x\":\"" S1 "\",\"x\":\"" S1 "\"}}", PL_ERR_FORMAT,
                 "duplicate");
    REJECT_INDEX("{\"weight_map\":{\"x\":\"" S1 "\"},\"extra\":1}", PL_ERR_FORMAT,
                 "unknown field 'extra'");
}

static void sharded_rejects_a_hostile_shard_naming_it(void)
{
    buf a = st_file("{" T("x", "F32", "[2]", 0, 8) "}", 4);
    pl_st_shard sh[1] = {{S1, a.data, a.len}};
    const char *index = "{\"weight_map\":{\"x\":\"" S1 "\"}}";
    pl_safetensors *st = NOT_NULL;
    pl_error err = {0};
    pl_status s = pl_safetensors_parse_sharded(&st, index, strlen(index), sh, 1, &err);
    TU_CHECK(s == PL_ERR_FORMAT && st == NULL && mentions(err.msg, S1) &&
                 mentions(err.msg, "past the end"),
             "-> %s (%s)", pl_status_str(s), err.msg);
    free(a.data);
}

/* ---- directories ----------------------------------------------------------------------------- */

static void write_file(const char *dir, const char *name, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) abort();
}

static void dir_opens_sharded_and_single_checkpoints(void)
{
    char dir[] = "/tmp/plumb-st-XXXXXX";
    if (!mkdtemp(dir)) abort();
    pl_safetensors *st = NOT_NULL;
    pl_error err = {0};
    pl_status s = pl_safetensors_open_dir(&st, dir, &err);
    TU_CHECK(s == PL_ERR_NOT_FOUND && st == NULL && mentions(err.msg, "model.safetensors"),
             "empty dir -> %s (%s)", pl_status_str(s), err.msg);

    two_shards t = make_shards();
    write_file(dir, S1, t.a.data, t.a.len);
    write_file(dir, S2, t.b.data, t.b.len);
    write_file(dir, "model.safetensors.index.json", good_index, strlen(good_index));
    s = pl_safetensors_open_dir(&st, dir, &err);
    TU_CHECK(s == PL_OK && pl_safetensors_n_tensors(st) == 3, "sharded dir -> %s (%s)",
             pl_status_str(s), err.msg);
    pl_safetensors_free(st);

    const char *escape = "{\"weight_map\":{\"x\":\"../x.safetensors\"}}";
    write_file(dir, "model.safetensors.index.json", escape, strlen(escape));
    s = pl_safetensors_open_dir(&st, dir, &err);
    TU_CHECK(s == PL_ERR_FORMAT && st == NULL && mentions(err.msg, "plain file name"),
             "escaping index -> %s (%s)", pl_status_str(s), err.msg);

    const char *missing = "{\"weight_map\":{\"x\":\"model-9.safetensors\"}}";
    write_file(dir, "model.safetensors.index.json", missing, strlen(missing));
    s = pl_safetensors_open_dir(&st, dir, &err);
    TU_CHECK(s == PL_ERR_IO && st == NULL && mentions(err.msg, "model-9.safetensors"),
             "index naming a missing file -> %s (%s)", pl_status_str(s), err.msg);

    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    remove(path);
    write_file(dir, "model.safetensors", t.a.data, t.a.len);
    s = pl_safetensors_open_dir(&st, dir, &err);
    TU_CHECK(s == PL_OK && pl_safetensors_n_tensors(st) == 2, "single file dir -> %s (%s)",
             pl_status_str(s), err.msg);
    pl_safetensors_free(st);

    const char *names[] = {S1, S2, "model.safetensors"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        remove(path);
    }
    rmdir(dir);
    free_shards(&t);
}

/* ---- allocation failure ---------------------------------------------------------------------- */

static void safetensors_parse_survives_allocation_failure(void)
{
    two_shards t = make_shards();
    pl_safetensors *st = NULL;
    tu_alloc_fail_at(0, 0);
    pl_status s =
        pl_safetensors_parse_sharded(&st, good_index, strlen(good_index), t.shards, 2, NULL);
    uint64_t n = tu_alloc_count();
    tu_alloc_reset();
    pl_safetensors_free(st);
    TU_CHECK(s == PL_OK && n > 0, "without failures -> %s, %llu allocations", pl_status_str(s),
             (unsigned long long)n);
    for (int persistent = 0; persistent <= 1; persistent++)
        for (uint64_t k = 1; k <= n; k++) {
            pl_error err = {0};
            st = NOT_NULL;
            tu_alloc_fail_at(k, persistent);
            s = pl_safetensors_parse_sharded(&st, good_index, strlen(good_index), t.shards, 2,
                                             &err);
            tu_alloc_reset();
            TU_CHECK(s == PL_ERR_NOMEM && st == NULL && err.msg[0],
                     "allocation %llu of %llu (%s) -> %s (%s)", (unsigned long long)k,
                     (unsigned long long)n, persistent ? "persistent" : "transient",
                     pl_status_str(s), err.msg);
            if (s == PL_OK) pl_safetensors_free(st);
        }
    free_shards(&t);
}

int main(void)
{
    static const tu_test tests[] = {
        {"safetensors_accepts_small_valid_file", safetensors_accepts_small_valid_file},
        {"safetensors_accepts_header_padded_with_spaces",
         safetensors_accepts_header_padded_with_spaces},
        {"safetensors_free_null_is_a_noop", safetensors_free_null_is_a_noop},
        {"safetensors_accepts_file_with_no_tensors", safetensors_accepts_file_with_no_tensors},
        {"safetensors_rejects_empty_file", safetensors_rejects_empty_file},
        {"safetensors_rejects_seven_byte_file", safetensors_rejects_seven_byte_file},
        {"safetensors_rejects_header_length_past_eof", safetensors_rejects_header_length_past_eof},
        {"safetensors_rejects_header_length_max_u64", safetensors_rejects_header_length_max_u64},
        {"safetensors_rejects_header_length_over_limit",
         safetensors_rejects_header_length_over_limit},
        {"safetensors_rejects_truncation_at_every_offset",
         safetensors_rejects_truncation_at_every_offset},
        {"safetensors_rejects_header_not_starting_with_brace",
         safetensors_rejects_header_not_starting_with_brace},
        {"safetensors_rejects_header_that_is_an_array",
         safetensors_rejects_header_that_is_an_array},
        {"safetensors_rejects_truncated_json", safetensors_rejects_truncated_json},
        {"safetensors_rejects_trailing_garbage_after_json",
         safetensors_rejects_trailing_garbage_after_json},
        {"safetensors_rejects_nul_byte_in_header", safetensors_rejects_nul_byte_in_header},
        {"safetensors_rejects_invalid_utf8_in_name", safetensors_rejects_invalid_utf8_in_name},
        {"safetensors_rejects_duplicate_tensor_names", safetensors_rejects_duplicate_tensor_names},
        {"safetensors_rejects_deeply_nested_json", safetensors_rejects_deeply_nested_json},
        {"safetensors_rejects_tensor_that_is_not_an_object",
         safetensors_rejects_tensor_that_is_not_an_object},
        {"safetensors_rejects_missing_dtype", safetensors_rejects_missing_dtype},
        {"safetensors_rejects_missing_data_offsets", safetensors_rejects_missing_data_offsets},
        {"safetensors_rejects_unknown_field", safetensors_rejects_unknown_field},
        {"safetensors_rejects_dtype_that_is_not_a_string",
         safetensors_rejects_dtype_that_is_not_a_string},
        {"safetensors_rejects_unknown_dtype", safetensors_rejects_unknown_dtype},
        {"safetensors_rejects_sub_byte_dtype_by_name", safetensors_rejects_sub_byte_dtype_by_name},
        {"safetensors_rejects_lowercase_dtype", safetensors_rejects_lowercase_dtype},
        {"safetensors_rejects_shape_that_is_not_an_array",
         safetensors_rejects_shape_that_is_not_an_array},
        {"safetensors_rejects_negative_shape", safetensors_rejects_negative_shape},
        {"safetensors_rejects_real_number_in_shape", safetensors_rejects_real_number_in_shape},
        {"safetensors_rejects_string_in_shape", safetensors_rejects_string_in_shape},
        {"safetensors_rejects_shape_over_int64_in_json",
         safetensors_rejects_shape_over_int64_in_json},
        {"safetensors_rejects_huge_shape_whose_count_overflows",
         safetensors_rejects_huge_shape_whose_count_overflows},
        {"safetensors_rejects_huge_shape_whose_bytes_overflow",
         safetensors_rejects_huge_shape_whose_bytes_overflow},
        {"safetensors_rejects_huge_shape_past_the_data",
         safetensors_rejects_huge_shape_past_the_data},
        {"safetensors_rejects_too_many_dimensions", safetensors_rejects_too_many_dimensions},
        {"safetensors_rejects_empty_tensor_name", safetensors_rejects_empty_tensor_name},
        {"safetensors_rejects_name_over_the_limit", safetensors_rejects_name_over_the_limit},
        {"safetensors_rejects_offsets_past_the_data", safetensors_rejects_offsets_past_the_data},
        {"safetensors_rejects_offsets_end_before_begin",
         safetensors_rejects_offsets_end_before_begin},
        {"safetensors_rejects_negative_offset", safetensors_rejects_negative_offset},
        {"safetensors_rejects_three_offsets", safetensors_rejects_three_offsets},
        {"safetensors_rejects_offsets_that_are_not_an_array",
         safetensors_rejects_offsets_that_are_not_an_array},
        {"safetensors_rejects_size_mismatch", safetensors_rejects_size_mismatch},
        {"safetensors_rejects_dtype_size_mismatch", safetensors_rejects_dtype_size_mismatch},
        {"safetensors_rejects_overlapping_tensors", safetensors_rejects_overlapping_tensors},
        {"safetensors_rejects_two_tensors_on_the_same_bytes",
         safetensors_rejects_two_tensors_on_the_same_bytes},
        {"safetensors_rejects_hole_between_tensors", safetensors_rejects_hole_between_tensors},
        {"safetensors_rejects_bytes_after_the_last_tensor",
         safetensors_rejects_bytes_after_the_last_tensor},
        {"safetensors_rejects_metadata_that_is_not_an_object",
         safetensors_rejects_metadata_that_is_not_an_object},
        {"safetensors_rejects_metadata_value_that_is_not_a_string",
         safetensors_rejects_metadata_value_that_is_not_a_string},
        {"sharded_accepts_index_and_two_shards", sharded_accepts_index_and_two_shards},
        {"sharded_rejects_path_escape", sharded_rejects_path_escape},
        {"sharded_rejects_missing_shard", sharded_rejects_missing_shard},
        {"sharded_rejects_tensor_in_the_wrong_shard", sharded_rejects_tensor_in_the_wrong_shard},
        {"sharded_rejects_tensor_missing_from_the_index",
         sharded_rejects_tensor_missing_from_the_index},
        {"sharded_rejects_index_naming_an_absent_tensor",
         sharded_rejects_index_naming_an_absent_tensor},
        {"sharded_rejects_tensor_in_two_shards", sharded_rejects_tensor_in_two_shards},
        {"sharded_rejects_bad_index_json", sharded_rejects_bad_index_json},
        {"sharded_rejects_a_hostile_shard_naming_it", sharded_rejects_a_hostile_shard_naming_it},
        {"dir_opens_sharded_and_single_checkpoints", dir_opens_sharded_and_single_checkpoints},
        {"safetensors_parse_survives_allocation_failure",
         safetensors_parse_survives_allocation_failure},
        {NULL, NULL},
    };
    return tu_run("safetensors", tests);
}
