/* test_gguf.c — the behaviour of the GGUF API: hand-made files read exactly, the writer's
 * layout and checks, lookups, NULLs, names. Round trips: test_gguf_roundtrip.c; hostile
 * files: test_gguf_hostile.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gguf_bytes.h"
#include "plumb.h"
#include "testutil.h"

#define NOT_NULL ((void *)(uintptr_t)0x1) /* *out starts non-NULL: a failing call must clear it */

static void gguf_reads_handcrafted_file_exactly(void)
{
    gb_buf b;
    gb_small_valid(&b);
    pl_gguf *g = NULL;
    pl_error err = {PL_OK, ""};
    pl_status st = pl_gguf_parse(&g, b.data, b.len, &err);
    TU_CHECK(st == PL_OK, "parse -> %s: %s", pl_status_str(st), err.msg);
    if (st != PL_OK) {
        gb_free(&b);
        return;
    }
    TU_CHECK(pl_gguf_version(g) == 3, "version %u", pl_gguf_version(g));
    TU_CHECK(pl_gguf_alignment(g) == 32, "alignment %u", pl_gguf_alignment(g));
    TU_CHECK(pl_gguf_n_kv(g) == GB_SMALL_N_KV, "n_kv %" PRIu64, pl_gguf_n_kv(g));
    TU_CHECK(pl_gguf_n_tensors(g) == GB_SMALL_N_TENSORS, "n_tensors %" PRIu64,
             pl_gguf_n_tensors(g));
    pl_str s;
    TU_CHECK(pl_gguf_get_string(g, "general.name", &s, &err) == PL_OK && gb_str_eq(s, "tiny", 4),
             "general.name");
    uint64_t u64 = 0;
    TU_CHECK(pl_gguf_get_u64(g, "test.count", &u64, &err) == PL_OK && u64 == 7, "test.count");
    int flag = -1;
    TU_CHECK(pl_gguf_get_bool(g, "test.flag", &flag, &err) == PL_OK && flag == 1, "test.flag");
    uint32_t al = 0;
    TU_CHECK(pl_gguf_get_u32(g, "general.alignment", &al, &err) == PL_OK && al == 32,
             "general.alignment");
    pl_gguf_array a;
    TU_CHECK(pl_gguf_get_array(g, "test.words", &a, &err) == PL_OK && a.type == PL_GGUF_STRING &&
                 a.count == 3,
             "test.words");
    static const char *const words[] = {"a", "bc", "def"};
    for (uint64_t i = 0; i < 3 && a.count == 3; i++)
        TU_CHECK(pl_gguf_array_string(&a, i, &s, &err) == PL_OK &&
                     gb_str_eq(s, words[i], strlen(words[i])),
                 "test.words[%" PRIu64 "]", i);
    TU_CHECK(a.owner == g, "array owner is not the view");
    /* keys in file order */
    static const char *const keys[] = {"general.name", "general.alignment", "test.count",
                                       "test.flag", "test.words"};
    for (uint64_t i = 0; i < GB_SMALL_N_KV; i++)
        TU_CHECK(gb_str_eq(pl_gguf_kv_key(g, i), keys[i], strlen(keys[i])), "key %" PRIu64, i);

    uint64_t doff = pl_gguf_data_offset(g);
    TU_CHECK(doff == b.len - 166, "data offset %" PRIu64 ", want %zu", doff, b.len - 166);
    static const struct {
        const char *name;
        uint32_t type, n_dims;
        int64_t ne[4];
        uint64_t offset, n_bytes;
    } want[] = {{"t.f32", PL_TYPE_F32, 2, {8, 2, 1, 1}, 0, 64},
                {"t.q8", PL_TYPE_Q8_0, 1, {64, 1, 1, 1}, 64, 68},
                {"t.f16", PL_TYPE_F16, 1, {3, 1, 1, 1}, 160, 6}};
    for (int i = 0; i < 3; i++) {
        pl_tensor_info t;
        st = pl_gguf_tensor(g, (uint64_t)i, &t, &err);
        TU_CHECK(st == PL_OK, "tensor %d -> %s", i, pl_status_str(st));
        if (st != PL_OK) continue;
        TU_CHECK(gb_str_eq(t.name, want[i].name, strlen(want[i].name)) && t.type == want[i].type &&
                     t.n_dims == want[i].n_dims && t.offset == want[i].offset &&
                     t.n_bytes == want[i].n_bytes && memcmp(t.ne, want[i].ne, sizeof t.ne) == 0,
                 "tensor %d ('%s') info differs", i, want[i].name);
        TU_CHECK((const uint8_t *)t.data == b.data + doff + want[i].offset,
                 "tensor '%s' data pointer", want[i].name);
    }
    TU_CHECK(pl_gguf_find_tensor(g, "t.q8") == 1, "find_tensor t.q8");
    TU_CHECK(pl_gguf_find_tensor(g, "t.q") == -1, "find_tensor of a prefix must miss");
    TU_CHECK(pl_gguf_find_key(g, "general") == -1, "find_key of a prefix must miss");
    pl_gguf_free(g);
    gb_free(&b);
}

/* A v2 file with a default alignment (no key) and a 1-byte-aligned custom one. */
static void gguf_reads_v2_and_default_alignment(void)
{
    const int64_t ne[] = {4};
    gb_buf b;
    gb_init(&b);
    gb_header(&b, 2, 1, 1);
    gb_kv_str(&b, "general.name", "v2");
    gb_tensor_info(&b, "w", 1, ne, PL_TYPE_F32, 0);
    gb_pad(&b, 32);
    gb_fill(&b, 9, 16);
    pl_gguf *g = NULL;
    pl_error err = {PL_OK, ""};
    pl_status st = pl_gguf_parse(&g, b.data, b.len, &err);
    TU_CHECK(st == PL_OK, "v2 parse -> %s: %s", pl_status_str(st), err.msg);
    if (g) {
        TU_CHECK(pl_gguf_version(g) == 2, "version");
        TU_CHECK(pl_gguf_alignment(g) == PL_GGUF_DEFAULT_ALIGNMENT, "default alignment %u",
                 pl_gguf_alignment(g));
        TU_CHECK(pl_gguf_data_offset(g) == b.len - 16, "data offset");
    }
    pl_gguf_free(g);
    gb_free(&b);

    gb_init(&b);
    gb_header(&b, 3, 2, 1);
    gb_kv_u32(&b, "general.alignment", 1);
    const int64_t ne3[] = {3};
    gb_tensor_info(&b, "a", 1, ne3, PL_TYPE_F16, 0); /* [0, 6) */
    gb_tensor_info(&b, "b", 1, ne3, PL_TYPE_F16, 7); /* [7, 13): any offset is aligned to 1 */
    size_t doff = b.len;
    gb_fill(&b, 9, 13);
    g = NULL;
    st = pl_gguf_parse(&g, b.data, b.len, &err);
    TU_CHECK(st == PL_OK, "alignment-1 parse -> %s: %s", pl_status_str(st), err.msg);
    if (g) {
        TU_CHECK(pl_gguf_alignment(g) == 1, "alignment");
        TU_CHECK(pl_gguf_data_offset(g) == doff, "data offset %" PRIu64 " want %zu",
                 pl_gguf_data_offset(g), doff);
    }
    pl_gguf_free(g);
    gb_free(&b);
}

/* ---- the writer's bytes against the spec layout ------------------------------------- */

static void gguf_writer_output_matches_spec_layout(void)
{
    static const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const int64_t ne[] = {4, 2};
    for (uint32_t version = 2; version <= 3; version++) {
        pl_gguf_writer *w = NULL;
        pl_error err = {PL_OK, ""};
        CU_ASSERT_FATAL(pl_gguf_writer_new(&w, version, &err) == PL_OK);
        uint16_t u16 = 0xbeef;
        uint8_t yes = 1;
        const char *strs[] = {"x", "yz"};
        const int32_t ints[] = {-1, 2};
        CU_ASSERT(pl_gguf_writer_set_string(w, "general.name", "m", 1, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_set_u32(w, "general.alignment", 64, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_set(w, "a.u16", PL_GGUF_UINT16, &u16, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_set(w, "a.bool", PL_GGUF_BOOL, &yes, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_set_array_str(w, "a.strs", strs, NULL, 2, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_set_array(w, "a.ints", PL_GGUF_INT32, ints, 2, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_set_f32(w, "a.f32", 0.5f, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_add_tensor(w, "output.weight", PL_TYPE_F32, 2, ne, data, &err) ==
                  PL_OK);
        void *buf = NULL;
        size_t size = 0;
        pl_status st = pl_gguf_writer_write_memory(w, &buf, &size, &err);
        TU_CHECK(st == PL_OK, "write_memory -> %s: %s", pl_status_str(st), err.msg);
        pl_gguf_writer_free(w);
        if (st != PL_OK) continue;

        gb_buf b;
        gb_init(&b);
        gb_header(&b, version, 1, 7);
        gb_kv_str(&b, "general.name", "m");
        gb_kv_u32(&b, "general.alignment", 64);
        gb_kv(&b, "a.u16", PL_GGUF_UINT16), gb_u16(&b, 0xbeef);
        gb_kv(&b, "a.bool", PL_GGUF_BOOL), gb_u8(&b, 1);
        gb_kv_arr(&b, "a.strs", PL_GGUF_STRING, 2), gb_str(&b, "x"), gb_str(&b, "yz");
        gb_kv_arr(&b, "a.ints", PL_GGUF_INT32, 2), gb_u32(&b, 0xffffffffu), gb_u32(&b, 2);
        gb_kv(&b, "a.f32", PL_GGUF_FLOAT32), gb_f32(&b, 0.5f);
        gb_tensor_info(&b, "output.weight", 2, ne, PL_TYPE_F32, 0);
        gb_pad(&b, 64);
        gb_bytes(&b, data, sizeof data);
        TU_CHECK(size >= b.len, "v%u: writer output is %zu bytes, spec layout needs %zu", version,
                 size, b.len);
        size_t first_diff = 0;
        while (first_diff < b.len && first_diff < size &&
               ((uint8_t *)buf)[first_diff] == b.data[first_diff])
            first_diff++;
        TU_CHECK(first_diff >= b.len, "v%u: writer output differs from the spec layout at byte %zu",
                 version, first_diff);
        /* whatever follows the last tensor is padding (zeros), at most to the alignment */
        for (size_t i = b.len; i < size; i++)
            TU_CHECK(((uint8_t *)buf)[i] == 0, "v%u: trailing byte %zu is not zero", version, i);
        TU_CHECK(size <= gb_align_up(b.len, 64), "v%u: %zu trailing bytes", version, size - b.len);
        pl_buffer_free(buf);
        gb_free(&b);
    }
}

/* Tensors are placed in order, each at the next aligned offset, whatever their sizes. */
static void gguf_writer_aligns_every_tensor(void)
{
    static uint8_t data[4096];
    const int64_t ne_a[] = {3}, ne_b[] = {32}, ne_c[] = {5, 3};
    for (uint32_t align = 1; align <= 4096; align *= 4) {
        pl_gguf_writer *w = NULL;
        pl_error err = {PL_OK, ""};
        CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_set_u32(w, "general.alignment", align, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_add_tensor(w, "a", PL_TYPE_F16, 1, ne_a, data, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_add_tensor(w, "b", PL_TYPE_Q8_0, 1, ne_b, data, &err) == PL_OK);
        CU_ASSERT(pl_gguf_writer_add_tensor(w, "c", PL_TYPE_BF16, 2, ne_c, data, &err) == PL_OK);
        void *buf = NULL;
        size_t size = 0;
        pl_status st = pl_gguf_writer_write_memory(w, &buf, &size, &err);
        pl_gguf_writer_free(w);
        TU_CHECK(st == PL_OK, "alignment %u: write -> %s: %s", align, pl_status_str(st), err.msg);
        if (st != PL_OK) continue;
        pl_gguf *g = NULL;
        st = pl_gguf_parse(&g, buf, size, &err);
        TU_CHECK(st == PL_OK, "alignment %u: parse -> %s: %s", align, pl_status_str(st), err.msg);
        if (g) {
            uint64_t expect = 0;
            const uint64_t bytes[] = {6, 34, 30};
            for (uint64_t i = 0; i < 3; i++) {
                pl_tensor_info t;
                CU_ASSERT(pl_gguf_tensor(g, i, &t, &err) == PL_OK);
                TU_CHECK(t.offset == expect && t.n_bytes == bytes[i],
                         "alignment %u: tensor %" PRIu64 " at %" PRIu64 " (+%" PRIu64
                         "), want %" PRIu64,
                         align, i, t.offset, t.n_bytes, expect);
                expect = gb_align_up(expect + bytes[i], align);
            }
        }
        pl_gguf_free(g);
        pl_buffer_free(buf);
    }
}

static void gguf_writer_default_alignment_is_32(void)
{
    static const float data[3] = {1, 2, 3};
    const int64_t ne[] = {3};
    pl_gguf_writer *w = NULL;
    pl_error err = {PL_OK, ""};
    CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
    CU_ASSERT(pl_gguf_writer_add_tensor(w, "a", PL_TYPE_F32, 1, ne, data, &err) == PL_OK);
    CU_ASSERT(pl_gguf_writer_add_tensor(w, "b", PL_TYPE_F32, 1, ne, data, &err) == PL_OK);
    void *buf = NULL;
    size_t size = 0;
    CU_ASSERT(pl_gguf_writer_write_memory(w, &buf, &size, &err) == PL_OK);
    pl_gguf_writer_free(w);
    pl_gguf *g = NULL;
    if (buf && pl_gguf_parse(&g, buf, size, &err) == PL_OK) {
        pl_tensor_info t;
        CU_ASSERT(pl_gguf_n_kv(g) == 0);
        CU_ASSERT(pl_gguf_find_key(g, "general.alignment") == -1);
        CU_ASSERT(pl_gguf_alignment(g) == 32);
        CU_ASSERT(pl_gguf_data_offset(g) % 32 == 0);
        CU_ASSERT(pl_gguf_tensor(g, 1, &t, &err) == PL_OK && t.offset == 32);
    } else {
        TU_CHECK(0, "default-alignment file did not parse: %s", err.msg);
    }
    pl_gguf_free(g);
    pl_buffer_free(buf);
}

static void gguf_writer_replaces_key_and_keeps_first_position(void)
{
    pl_gguf_writer *w = NULL;
    pl_error err = {PL_OK, ""};
    CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
    CU_ASSERT(pl_gguf_writer_set_u32(w, "first", 1, &err) == PL_OK);
    CU_ASSERT(pl_gguf_writer_set_u32(w, "second", 2, &err) == PL_OK);
    CU_ASSERT(pl_gguf_writer_set_string(w, "first", "now a string", 12, &err) == PL_OK);
    CU_ASSERT(pl_gguf_writer_set_u32(w, "second", 22, &err) == PL_OK);
    void *buf = NULL;
    size_t size = 0;
    CU_ASSERT(pl_gguf_writer_write_memory(w, &buf, &size, &err) == PL_OK);
    pl_gguf_writer_free(w);
    pl_gguf *g = NULL;
    if (buf && pl_gguf_parse(&g, buf, size, &err) == PL_OK) {
        pl_str s;
        uint32_t v = 0;
        TU_CHECK(pl_gguf_n_kv(g) == 2, "n_kv %" PRIu64 ", want 2", pl_gguf_n_kv(g));
        TU_CHECK(gb_str_eq(pl_gguf_kv_key(g, 0), "first", 5), "kv 0 is not 'first'");
        TU_CHECK(pl_gguf_get_string(g, "first", &s, &err) == PL_OK &&
                     gb_str_eq(s, "now a string", 12),
                 "'first' was not replaced");
        TU_CHECK(pl_gguf_get_u32(g, "second", &v, &err) == PL_OK && v == 22,
                 "'second' was not replaced");
    } else {
        TU_CHECK(0, "file did not parse: %s", err.msg);
    }
    pl_gguf_free(g);
    pl_buffer_free(buf);
}

/* write_file goes through PATH.tmp and a rename: an old file is replaced whole, nothing is
 * left behind, and a path in a missing directory is PL_ERR_IO naming the path. */
static void gguf_writer_write_file_replaces_whole_and_reports_io(void)
{
    const char *p = gb_tmp_path("replace.gguf");
    char path[160], tmp[170];
    snprintf(path, sizeof path, "%s", p);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    for (int i = 0; i < 10000; i++) fputc('x', f); /* an old, longer file */
    fclose(f);
    pl_gguf_writer *w = NULL;
    pl_error err = {PL_OK, ""};
    CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
    CU_ASSERT(pl_gguf_writer_set_u32(w, "k", 5, &err) == PL_OK);
    pl_status st = pl_gguf_writer_write_file(w, path, &err);
    TU_CHECK(st == PL_OK, "write_file -> %s: %s", pl_status_str(st), err.msg);
    TU_CHECK(!gb_file_exists(tmp), "%s left behind", tmp);
    pl_gguf *g = NULL;
    st = pl_gguf_open(&g, path, &err);
    TU_CHECK(st == PL_OK, "reopen -> %s: %s (old bytes left?)", pl_status_str(st), err.msg);
    if (g) TU_CHECK(pl_gguf_size(g) < 10000, "old file not replaced whole");
    pl_gguf_free(g);
    remove(path);

    char bad[200];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.gguf", gb_tmp_dir());
    st = pl_gguf_writer_write_file(w, bad, &err);
    TU_CHECK(st == PL_ERR_IO, "write into a missing directory -> %s, want PL_ERR_IO",
             pl_status_str(st));
    TU_CHECK(strstr(err.msg, bad) != NULL, "message \"%s\" does not name the path", err.msg);
    pl_gguf_writer_free(w);
}

/* ---- writer rejections -------------------------------------------------------------- */

static int is_rejection(pl_status st)
{
    return st == PL_ERR_INVALID_ARG || st == PL_ERR_FORMAT || st == PL_ERR_UNSUPPORTED ||
           st == PL_ERR_LIMIT || st == PL_ERR_TYPE;
}

/* add_tensor must refuse; the message names the tensor; the writer stays usable. */
static void expect_add_tensor_rejected(const char *name, uint32_t type, uint32_t n_dims,
                                       const int64_t *ne, const char *what, int line)
{
    static uint8_t data[1 << 16];
    pl_gguf_writer *w = NULL;
    pl_error err = {PL_OK, ""};
    CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
    pl_status st = pl_gguf_writer_add_tensor(w, name, type, n_dims, ne, data, &err);
    TU_CHECK(is_rejection(st), "line %d (%s): add_tensor -> %s", line, what, pl_status_str(st));
    TU_CHECK(err.code == st && err.msg[0], "line %d (%s): no error message", line, what);
    TU_CHECK(strstr(err.msg, name) != NULL, "line %d (%s): message \"%s\" does not name '%s'", line,
             what, err.msg, name);
    /* nothing half-added: the file written now has no tensor */
    void *buf = NULL;
    size_t size = 0;
    st = pl_gguf_writer_write_memory(w, &buf, &size, &err);
    TU_CHECK(st == PL_OK, "line %d (%s): writer unusable after a rejection: %s", line, what,
             err.msg);
    pl_gguf *g = NULL;
    if (buf && pl_gguf_parse(&g, buf, size, &err) == PL_OK)
        TU_CHECK(pl_gguf_n_tensors(g) == 0, "line %d (%s): rejected tensor was written", line,
                 what);
    pl_gguf_free(g);
    pl_buffer_free(buf);
    pl_gguf_writer_free(w);
}

static void gguf_writer_rejects_unknown_tensor_type(void)
{
    const int64_t ne[] = {32};
    expect_add_tensor_rejected("blk.0.attn_k.weight", 77, 1, ne, "type 77", __LINE__);
    expect_add_tensor_rejected("blk.0.attn_k.weight", 4, 1, ne, "type 4", __LINE__);
    expect_add_tensor_rejected("blk.0.attn_k.weight", UINT32_MAX, 1, ne, "type max", __LINE__);
}

static void gguf_writer_rejects_unsupported_tensor_type(void)
{
    const int64_t ne[] = {256};
    expect_add_tensor_rejected("blk.0.attn_k.weight", 16, 1, ne, "IQ2_XXS", __LINE__);
}

static void gguf_writer_rejects_row_not_multiple_of_block(void)
{
    const int64_t ne[] = {33, 2}, ne_k[] = {128};
    expect_add_tensor_rejected("blk.0.attn_v.weight", PL_TYPE_Q4_0, 2, ne, "Q4_0 33", __LINE__);
    expect_add_tensor_rejected("blk.0.attn_v.weight", PL_TYPE_Q4_K, 1, ne_k, "Q4_K 128", __LINE__);
}

static void gguf_writer_rejects_bad_dims(void)
{
    const int64_t ne[] = {4, 1, 1, 1, 1}, zero[] = {4, 0}, neg[] = {4, -2};
    expect_add_tensor_rejected("blk.1.ffn_gate.weight", PL_TYPE_F32, 0, ne, "n_dims 0", __LINE__);
    expect_add_tensor_rejected("blk.1.ffn_gate.weight", PL_TYPE_F32, 5, ne, "n_dims 5", __LINE__);
    expect_add_tensor_rejected("blk.1.ffn_gate.weight", PL_TYPE_F32, 2, zero, "ne 0", __LINE__);
    expect_add_tensor_rejected("blk.1.ffn_gate.weight", PL_TYPE_F32, 2, neg, "ne -2", __LINE__);
}

static void gguf_writer_rejects_duplicate_tensor_name(void)
{
    static const float data[4] = {0};
    const int64_t ne[] = {4};
    pl_gguf_writer *w = NULL;
    pl_error err = {PL_OK, ""};
    CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
    CU_ASSERT(pl_gguf_writer_add_tensor(w, "token_embd.weight", PL_TYPE_F32, 1, ne, data, &err) ==
              PL_OK);
    pl_status st =
        pl_gguf_writer_add_tensor(w, "token_embd.weight", PL_TYPE_F32, 1, ne, data, &err);
    TU_CHECK(is_rejection(st), "duplicate tensor -> %s", pl_status_str(st));
    TU_CHECK(strstr(err.msg, "token_embd.weight") != NULL, "message \"%s\" does not name it",
             err.msg);
    void *buf = NULL;
    size_t size = 0;
    CU_ASSERT(pl_gguf_writer_write_memory(w, &buf, &size, &err) == PL_OK);
    pl_gguf *g = NULL;
    if (buf && pl_gguf_parse(&g, buf, size, &err) == PL_OK)
        TU_CHECK(pl_gguf_n_tensors(g) == 1, "%" PRIu64 " tensors written", pl_gguf_n_tensors(g));
    pl_gguf_free(g);
    pl_buffer_free(buf);
    pl_gguf_writer_free(w);
}

static void gguf_writer_rejects_bad_version(void)
{
    const uint32_t bad[] = {0, 1, 4, 99};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pl_gguf_writer *w = NOT_NULL;
        pl_error err = {PL_OK, ""};
        pl_status st = pl_gguf_writer_new(&w, bad[i], &err);
        TU_CHECK(st == PL_ERR_INVALID_ARG || st == PL_ERR_UNSUPPORTED,
                 "writer_new(version %u) -> %s", bad[i], pl_status_str(st));
        TU_CHECK(w == NULL, "writer_new(version %u) failed but *out is not NULL", bad[i]);
        TU_CHECK(strstr(err.msg, "version") != NULL, "message \"%s\" does not say version",
                 err.msg);
        if (st == PL_OK && w != NOT_NULL) pl_gguf_writer_free(w);
    }
}

/* set must refuse; the message names the key. */
static void expect_set_rejected(pl_status st, const pl_error *err, const char *key,
                                const char *what, int line)
{
    TU_CHECK(is_rejection(st), "line %d (%s): set -> %s", line, what, pl_status_str(st));
    TU_CHECK(err->code == st && err->msg[0], "line %d (%s): no message", line, what);
    if (key[0])
        TU_CHECK(strstr(err->msg, key) != NULL, "line %d (%s): message \"%s\" does not name '%s'",
                 line, what, err->msg, key);
}

static void gguf_writer_rejects_bad_metadata(void)
{
    pl_gguf_writer *w = NULL;
    pl_error err = {PL_OK, ""};
    CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
    uint8_t two = 2, bools[3] = {0, 1, 2};
    uint64_t zero = 0;
    pl_status st = pl_gguf_writer_set(w, "x.flag", PL_GGUF_BOOL, &two, &err);
    expect_set_rejected(st, &err, "x.flag", "bool 2", __LINE__);
    st = pl_gguf_writer_set_array(w, "x.flags", PL_GGUF_BOOL, bools, 3, &err);
    expect_set_rejected(st, &err, "x.flags", "bool array with 2", __LINE__);
    st = pl_gguf_writer_set_array(w, "x.nested", PL_GGUF_ARRAY, &zero, 0, &err);
    expect_set_rejected(st, &err, "x.nested", "nested array", __LINE__);
    st = pl_gguf_writer_set(w, "x.unknown", (pl_gguf_type)13, &zero, &err);
    expect_set_rejected(st, &err, "x.unknown", "value type 13", __LINE__);
    st = pl_gguf_writer_set(w, "x.str", PL_GGUF_STRING, &zero, &err);
    expect_set_rejected(st, &err, "x.str", "string through the scalar setter", __LINE__);
    st = pl_gguf_writer_set_array(w, "x.strs", PL_GGUF_STRING, &zero, 0, &err);
    expect_set_rejected(st, &err, "x.strs", "strings through the numeric array setter", __LINE__);
    st = pl_gguf_writer_set_u32(w, "", 1, &err);
    expect_set_rejected(st, &err, "", "empty key", __LINE__);
    /* nothing of that was written */
    void *buf = NULL;
    size_t size = 0;
    CU_ASSERT(pl_gguf_writer_write_memory(w, &buf, &size, &err) == PL_OK);
    pl_gguf *g = NULL;
    if (buf && pl_gguf_parse(&g, buf, size, &err) == PL_OK)
        TU_CHECK(pl_gguf_n_kv(g) == 0, "%" PRIu64 " rejected keys were written", pl_gguf_n_kv(g));
    pl_gguf_free(g);
    pl_buffer_free(buf);
    pl_gguf_writer_free(w);
}

/* general.alignment must be a uint32 power of two <= PL_GGUF_MAX_ALIGNMENT: refused when set
 * or, at the latest, when written (a file the reader rejects is never produced). */
static void gguf_writer_rejects_bad_alignment(void)
{
    const uint32_t bad[] = {0, 3, 48, 1u << 31};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0] + 1; i++) {
        pl_gguf_writer *w = NULL;
        pl_error err = {PL_OK, ""};
        CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
        pl_status st;
        if (i < sizeof bad / sizeof bad[0])
            st = pl_gguf_writer_set_u32(w, "general.alignment", bad[i], &err);
        else
            st = pl_gguf_writer_set_string(w, "general.alignment", "32", 2, &err);
        if (st == PL_OK) {
            void *buf = NOT_NULL;
            size_t size = 0;
            st = pl_gguf_writer_write_memory(w, &buf, &size, &err);
            TU_CHECK(buf == NULL || st == PL_OK, "failed write left *out set");
            if (st == PL_OK) pl_buffer_free(buf);
        }
        TU_CHECK(is_rejection(st), "alignment case %zu (%u) was accepted: -> %s", i,
                 i < sizeof bad / sizeof bad[0] ? bad[i] : 0, pl_status_str(st));
        TU_CHECK(strstr(err.msg, "alignment") != NULL, "message \"%s\" does not say alignment",
                 err.msg);
        pl_gguf_writer_free(w);
    }
}

/* ---- lookups ------------------------------------------------------------------------ */

static pl_gguf *parse_small(gb_buf *b)
{
    gb_small_valid(b);
    pl_gguf *g = NULL;
    pl_error err = {PL_OK, ""};
    if (pl_gguf_parse(&g, b->data, b->len, &err) != PL_OK) {
        TU_CHECK(0, "small valid file did not parse: %s", err.msg);
        return NULL;
    }
    return g;
}

static void gguf_get_u32_on_string_is_type_error(void)
{
    gb_buf b;
    pl_gguf *g = parse_small(&b);
    if (g) {
        uint32_t v = 12345;
        pl_error err = {PL_OK, ""};
        pl_status st = pl_gguf_get_u32(g, "general.name", &v, &err);
        TU_CHECK(st == PL_ERR_TYPE && err.code == PL_ERR_TYPE, "-> %s", pl_status_str(st));
        TU_CHECK(strstr(err.msg, "general.name") != NULL, "message \"%s\" lacks the key", err.msg);
        TU_CHECK(strstr(err.msg, pl_gguf_type_name(PL_GGUF_UINT32)) &&
                     strstr(err.msg, pl_gguf_type_name(PL_GGUF_STRING)),
                 "message \"%s\" does not name both types", err.msg);
        pl_gguf_array a;
        st = pl_gguf_get_array(g, "test.count", &a, &err);
        TU_CHECK(st == PL_ERR_TYPE, "get_array on a uint64 -> %s", pl_status_str(st));
        pl_str s;
        st = pl_gguf_get_string(g, "test.words", &s, &err);
        TU_CHECK(st == PL_ERR_TYPE, "get_string on an array -> %s", pl_status_str(st));
        uint8_t out[8];
        st = pl_gguf_kv_scalar(g, 0, PL_GGUF_UINT32, out, &err);
        TU_CHECK(st == PL_ERR_TYPE, "kv_scalar(uint32) on a string -> %s", pl_status_str(st));
        st = pl_gguf_kv_string(g, 1, &s, &err);
        TU_CHECK(st == PL_ERR_TYPE, "kv_string on a uint32 -> %s", pl_status_str(st));
        st = pl_gguf_kv_array(g, 0, &a, &err);
        TU_CHECK(st == PL_ERR_TYPE, "kv_array on a string -> %s", pl_status_str(st));
        int flag;
        st = pl_gguf_get_bool(g, "test.count", &flag, &err);
        TU_CHECK(st == PL_ERR_TYPE, "get_bool on a uint64 -> %s", pl_status_str(st));
    }
    pl_gguf_free(g);
    gb_free(&b);
}

static void gguf_get_missing_key_is_not_found(void)
{
    gb_buf b;
    pl_gguf *g = parse_small(&b);
    if (g) {
        uint32_t v = 0;
        pl_error err = {PL_OK, ""};
        pl_status st = pl_gguf_get_u32(g, "llama.context_length", &v, &err);
        TU_CHECK(st == PL_ERR_NOT_FOUND && err.code == PL_ERR_NOT_FOUND, "-> %s",
                 pl_status_str(st));
        TU_CHECK(strstr(err.msg, "llama.context_length") != NULL, "message \"%s\" lacks the key",
                 err.msg);
        pl_str s;
        st = pl_gguf_get_string(g, "general.nam", &s, &err);
        TU_CHECK(st == PL_ERR_NOT_FOUND, "prefix of a key -> %s", pl_status_str(st));
        st = pl_gguf_get_string(g, "general.name.x", &s, &err);
        TU_CHECK(st == PL_ERR_NOT_FOUND, "extension of a key -> %s", pl_status_str(st));
        TU_CHECK(pl_gguf_find_key(g, "nope") == -1, "find_key of a missing key");
        TU_CHECK(pl_gguf_find_tensor(g, "nope") == -1, "find_tensor of a missing tensor");
    }
    pl_gguf_free(g);
    gb_free(&b);
}

static void gguf_array_index_out_of_range_is_invalid_arg(void)
{
    gb_buf b;
    pl_gguf *g = parse_small(&b);
    if (g) {
        pl_gguf_array a;
        pl_error err = {PL_OK, ""};
        CU_ASSERT_FATAL(pl_gguf_get_array(g, "test.words", &a, &err) == PL_OK);
        pl_str s;
        pl_status st = pl_gguf_array_string(&a, 3, &s, &err);
        TU_CHECK(st == PL_ERR_INVALID_ARG && err.msg[0], "[3] of 3 -> %s", pl_status_str(st));
        st = pl_gguf_array_string(&a, UINT64_MAX, &s, &err);
        TU_CHECK(st == PL_ERR_INVALID_ARG, "[2^64-1] -> %s", pl_status_str(st));
        uint8_t e[8];
        st = pl_gguf_array_elem(&a, 0, e, &err);
        TU_CHECK(st != PL_OK, "array_elem on a string array -> %s", pl_status_str(st));
        /* kv and tensor indices past the end */
        uint8_t out[8];
        st = pl_gguf_kv_scalar(g, GB_SMALL_N_KV, PL_GGUF_UINT8, out, &err);
        TU_CHECK(st == PL_ERR_INVALID_ARG, "kv index n_kv -> %s", pl_status_str(st));
        st = pl_gguf_kv_string(g, UINT64_MAX, &s, &err);
        TU_CHECK(st == PL_ERR_INVALID_ARG, "kv index 2^64-1 -> %s", pl_status_str(st));
        pl_tensor_info t;
        st = pl_gguf_tensor(g, GB_SMALL_N_TENSORS, &t, &err);
        TU_CHECK(st == PL_ERR_INVALID_ARG, "tensor index n_tensors -> %s", pl_status_str(st));
    }
    pl_gguf_free(g);
    gb_free(&b);
}

/* ---- the small things --------------------------------------------------------------- */

static void gguf_free_null_is_noop(void)
{
    pl_gguf_free(NULL);
    pl_model_free(NULL);
    pl_gguf_writer_free(NULL);
    pl_buffer_free(NULL);
    CU_PASS("no crash");
}

static void gguf_status_str_names_every_code(void)
{
    static const struct {
        pl_status s;
        const char *name;
    } codes[] = {
        {PL_OK, "PL_OK"},
        {PL_ERR_INVALID_ARG, "PL_ERR_INVALID_ARG"},
        {PL_ERR_NOMEM, "PL_ERR_NOMEM"},
        {PL_ERR_IO, "PL_ERR_IO"},
        {PL_ERR_FORMAT, "PL_ERR_FORMAT"},
        {PL_ERR_UNSUPPORTED, "PL_ERR_UNSUPPORTED"},
        {PL_ERR_NOT_FOUND, "PL_ERR_NOT_FOUND"},
        {PL_ERR_TYPE, "PL_ERR_TYPE"},
        {PL_ERR_LIMIT, "PL_ERR_LIMIT"},
        {PL_ERR_CONFIG, "PL_ERR_CONFIG"},
        {PL_ERR_CONTEXT_FULL, "PL_ERR_CONTEXT_FULL"},
        {PL_ERR_CANCELLED, "PL_ERR_CANCELLED"},
        {PL_ERR_BUFFER_TOO_SMALL, "PL_ERR_BUFFER_TOO_SMALL"},
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *got = pl_status_str(codes[i].s);
        TU_CHECK(got && strcmp(got, codes[i].name) == 0, "pl_status_str(%d) = %s, want %s",
                 (int)codes[i].s, got ? got : "NULL", codes[i].name);
    }
    /* the values are stable */
    CU_ASSERT(PL_ERR_FORMAT == -4 && PL_ERR_LIMIT == -8 && PL_ERR_BUFFER_TOO_SMALL == -12);
    const char *unk = pl_status_str((pl_status)-999);
    TU_CHECK(unk && strcmp(unk, "PL_ERR_UNKNOWN") == 0, "pl_status_str(-999) = %s",
             unk ? unk : "NULL");
    unk = pl_status_str((pl_status)1);
    TU_CHECK(unk && strcmp(unk, "PL_ERR_UNKNOWN") == 0, "pl_status_str(1) = %s",
             unk ? unk : "NULL");
}

static void gguf_null_args_are_invalid_arg(void)
{
    gb_buf b;
    gb_small_valid(&b);
    pl_error err = {PL_OK, ""};
    pl_gguf *g = NOT_NULL;
#define NULLARG(call)                                                                              \
    do {                                                                                           \
        pl_status st_ = (call);                                                                    \
        TU_CHECK(st_ == PL_ERR_INVALID_ARG, "%s -> %s, want PL_ERR_INVALID_ARG", #call,            \
                 pl_status_str(st_));                                                              \
    } while (0)
    NULLARG(pl_gguf_parse(NULL, b.data, b.len, &err));
    NULLARG(pl_gguf_parse(&g, NULL, 16, &err));
    TU_CHECK(g == NULL, "pl_gguf_parse(data NULL) left *out set");
    NULLARG(pl_gguf_open(NULL, "/x", &err));
    NULLARG(pl_gguf_open(&g, NULL, &err));
    NULLARG(pl_model_load(NULL, "/x", NULL, &err));
    pl_model *m = NULL;
    NULLARG(pl_model_load(&m, NULL, NULL, &err));
    NULLARG(pl_model_load_memory(NULL, b.data, b.len, NULL, &err));
    NULLARG(pl_model_load_memory(&m, NULL, 16, NULL, &err));
    pl_model_params bad = {.flags = 0x80000000u};
    m = NOT_NULL;
    NULLARG(pl_model_load_memory(&m, b.data, b.len, &bad, &err)); /* an undefined flag bit */
    TU_CHECK(m == NULL, "model load with bad params left *out set");
    if (m && m != NOT_NULL) pl_model_free(m);
    /* without a pl_error too */
    NULLARG(pl_gguf_parse(NULL, b.data, b.len, NULL));

    g = NULL;
    CU_ASSERT_FATAL(pl_gguf_parse(&g, b.data, b.len, &err) == PL_OK);
    uint32_t v;
    pl_str s;
    pl_gguf_array a;
    pl_tensor_info t;
    NULLARG(pl_gguf_get_u32(NULL, "general.alignment", &v, &err));
    NULLARG(pl_gguf_get_u32(g, NULL, &v, &err));
    NULLARG(pl_gguf_get_u32(g, "general.alignment", NULL, &err));
    NULLARG(pl_gguf_get_string(g, "general.name", NULL, &err));
    NULLARG(pl_gguf_get_array(g, NULL, &a, &err));
    NULLARG(pl_gguf_kv_scalar(NULL, 0, PL_GGUF_UINT32, &v, &err));
    NULLARG(pl_gguf_kv_string(g, 0, NULL, &err));
    NULLARG(pl_gguf_tensor(NULL, 0, &t, &err));
    NULLARG(pl_gguf_tensor(g, 0, NULL, &err));
    NULLARG(pl_gguf_array_string(NULL, 0, &s, &err));
    NULLARG(pl_gguf_array_elem(NULL, 0, &v, &err));
    TU_CHECK(pl_gguf_find_key(g, NULL) == -1, "find_key(NULL)");
    TU_CHECK(pl_gguf_find_key(NULL, "x") == -1, "find_key on NULL view");
    TU_CHECK(pl_gguf_find_tensor(g, NULL) == -1, "find_tensor(NULL)");
    pl_gguf_free(g);

    pl_gguf_writer *w = NULL;
    NULLARG(pl_gguf_writer_new(NULL, 3, &err));
    CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, &err) == PL_OK);
    const int64_t ne[] = {4};
    static const float data[4];
    void *buf = NULL;
    size_t size = 0;
    NULLARG(pl_gguf_writer_set_u32(NULL, "k", 1, &err));
    NULLARG(pl_gguf_writer_set_u32(w, NULL, 1, &err));
    NULLARG(pl_gguf_writer_set(w, "k", PL_GGUF_UINT32, NULL, &err));
    NULLARG(pl_gguf_writer_set_string(w, "k", NULL, 3, &err));
    NULLARG(pl_gguf_writer_set_array(w, "k", PL_GGUF_UINT32, NULL, 3, &err));
    NULLARG(pl_gguf_writer_set_array_str(w, "k", NULL, NULL, 3, &err));
    NULLARG(pl_gguf_writer_add_tensor(w, NULL, PL_TYPE_F32, 1, ne, data, &err));
    NULLARG(pl_gguf_writer_add_tensor(w, "t", PL_TYPE_F32, 1, NULL, data, &err));
    NULLARG(pl_gguf_writer_add_tensor(w, "t", PL_TYPE_F32, 1, ne, NULL, &err));
    NULLARG(pl_gguf_writer_write_memory(NULL, &buf, &size, &err));
    NULLARG(pl_gguf_writer_write_memory(w, NULL, &size, &err));
    NULLARG(pl_gguf_writer_write_memory(w, &buf, NULL, &err));
    NULLARG(pl_gguf_writer_write_file(w, NULL, &err));
    NULLARG(pl_gguf_writer_write_file(NULL, "/tmp/x", &err));
    /* empty arrays may come with NULL data */
    pl_status st = pl_gguf_writer_set_array(w, "empty", PL_GGUF_UINT32, NULL, 0, &err);
    TU_CHECK(st == PL_OK, "empty array with NULL data -> %s: %s", pl_status_str(st), err.msg);
    st = pl_gguf_writer_set_array_str(w, "empty.s", NULL, NULL, 0, &err);
    TU_CHECK(st == PL_OK, "empty string array with NULL strs -> %s: %s", pl_status_str(st),
             err.msg);
    st = pl_gguf_writer_set_string(w, "empty.str", NULL, 0, &err);
    TU_CHECK(st == PL_OK, "empty string with NULL -> %s: %s", pl_status_str(st), err.msg);
    pl_gguf_writer_free(w);
#undef NULLARG
    gb_free(&b);
}

static void gguf_open_missing_path_is_io_error_naming_path(void)
{
    const char *path = "/nonexistent/plumb/model-that-is-not-there.gguf";
    pl_error err = {PL_OK, ""};
    pl_gguf *g = NOT_NULL;
    pl_status st = pl_gguf_open(&g, path, &err);
    TU_CHECK(st == PL_ERR_IO && err.code == PL_ERR_IO, "pl_gguf_open -> %s", pl_status_str(st));
    TU_CHECK(g == NULL, "*out not cleared");
    TU_CHECK(strstr(err.msg, path) != NULL, "message \"%s\" does not name the path", err.msg);
}

static void model_load_missing_path_is_io_error_naming_path(void)
{
    const char *path = "/nonexistent/plumb/model-that-is-not-there.gguf";
    pl_error err = {PL_OK, ""};
    pl_model *m = NOT_NULL;
    pl_status st = pl_model_load(&m, path, NULL, &err);
    TU_CHECK(st == PL_ERR_IO && err.code == PL_ERR_IO, "pl_model_load -> %s", pl_status_str(st));
    TU_CHECK(m == NULL, "*out not cleared");
    TU_CHECK(strstr(err.msg, path) != NULL, "message \"%s\" does not name the path", err.msg);
}

static void model_load_exposes_the_gguf_view(void)
{
    gb_buf b;
    gb_tiny_llama(&b);
    pl_model *m = NULL;
    pl_error err = {PL_OK, ""};
    pl_status st = pl_model_load_memory(&m, b.data, b.len, NULL, &err);
    TU_CHECK(st == PL_OK && m, "pl_model_load_memory -> %s: %s", pl_status_str(st), err.msg);
    if (m) {
        const pl_gguf *g = pl_model_gguf(m);
        TU_CHECK(g && pl_gguf_n_tensors(g) == GB_LLAMA_N_TENSORS &&
                     pl_gguf_n_kv(g) == GB_LLAMA_N_KV,
                 "pl_model_gguf does not describe the file");
        pl_tensor_info t;
        if (g && pl_gguf_tensor(g, 0, &t, &err) == PL_OK)
            TU_CHECK((const uint8_t *)t.data == b.data + pl_gguf_data_offset(g),
                     "weights were copied: tensor data does not point into the caller's bytes");
    }
    pl_model_free(m);
    gb_free(&b);
}

static void gguf_type_traits_match_ggml(void)
{
    for (size_t i = 0; i < GB_N_TTYPES; i++) {
        uint32_t t = gb_ttypes[i].type;
        const char *name = pl_type_name(t);
        TU_CHECK(name && strcmp(name, gb_ttypes[i].name) == 0, "pl_type_name(%u) = %s, want %s", t,
                 name ? name : "NULL", gb_ttypes[i].name);
        TU_CHECK(pl_type_supported(t) == 1, "%s not supported", gb_ttypes[i].name);
        TU_CHECK(pl_type_block_size(t) == gb_ttypes[i].block, "%s block size %" PRId64,
                 gb_ttypes[i].name, pl_type_block_size(t));
        TU_CHECK(pl_type_block_bytes(t) == gb_ttypes[i].bytes, "%s block bytes %zu",
                 gb_ttypes[i].name, pl_type_block_bytes(t));
        size_t rb = 0;
        pl_error err = {PL_OK, ""};
        pl_status st = pl_type_row_bytes(t, gb_ttypes[i].block * 3, &rb, &err);
        TU_CHECK(st == PL_OK && rb == 3 * gb_ttypes[i].bytes, "%s row of 3 blocks: %s, %zu bytes",
                 gb_ttypes[i].name, pl_status_str(st), rb);
        if (gb_ttypes[i].block > 1) {
            st = pl_type_row_bytes(t, gb_ttypes[i].block + 1, &rb, &err);
            TU_CHECK(st == PL_ERR_FORMAT, "%s row of block+1 -> %s", gb_ttypes[i].name,
                     pl_status_str(st));
        }
        int64_t nblocks = INT64_MAX / gb_ttypes[i].block;
        size_t huge;
        int fits = !__builtin_mul_overflow((uint64_t)nblocks, gb_ttypes[i].bytes, &huge);
        st = pl_type_row_bytes(t, nblocks * gb_ttypes[i].block, &rb, &err);
        TU_CHECK(fits ? (st == PL_OK && rb == huge) : st == PL_ERR_LIMIT,
                 "%s row of %" PRId64 " blocks -> %s", gb_ttypes[i].name, nblocks,
                 pl_status_str(st));
    }
    const char *iq2 = pl_type_name(16);
    TU_CHECK(iq2 && strcmp(iq2, "IQ2_XXS") == 0, "pl_type_name(16) = %s", iq2 ? iq2 : "NULL");
    CU_ASSERT(pl_type_supported(16) == 0);
    CU_ASSERT(pl_type_block_size(16) == 0 && pl_type_block_bytes(16) == 0);
    CU_ASSERT(pl_type_name(77) == NULL && pl_type_supported(77) == 0);
    CU_ASSERT(pl_type_name(4) == NULL && pl_type_supported(4) == 0);
    CU_ASSERT(pl_type_name(UINT32_MAX) == NULL);
    size_t rb;
    CU_ASSERT(pl_type_row_bytes(16, 256, &rb, NULL) == PL_ERR_UNSUPPORTED);
    /* as in files: an id nobody knows is garbage, a known one without traits unsupported */
    pl_status st77 = pl_type_row_bytes(77, 256, &rb, NULL);
    TU_CHECK(st77 == PL_ERR_FORMAT, "pl_type_row_bytes(77) -> %s", pl_status_str(st77));

    static const char *const vnames[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                         "int32",  "float32", "bool",   "string", "array",
                                         "uint64", "int64",   "float64"};
    for (uint32_t i = 0; i < PL_GGUF_TYPE_COUNT; i++) {
        const char *n = pl_gguf_type_name(i);
        TU_CHECK(n && strcmp(n, vnames[i]) == 0, "pl_gguf_type_name(%u) = %s, want %s", i,
                 n ? n : "NULL", vnames[i]);
    }
    CU_ASSERT(pl_gguf_type_name(PL_GGUF_TYPE_COUNT) == NULL);
    CU_ASSERT(pl_gguf_type_name(UINT32_MAX) == NULL);
}

/* pl_gguf_array is a plain struct the caller holds: indices are checked against the array
 * in the file, not against a count the caller may have changed. Run in a child process, so
 * an out-of-bounds read (a crash, or an ASan abort) is reported as a failure. Exit code: 0
 * when both calls refuse, 10 and 11 when one returns another status. */
static int tampered_array_child(void)
{
    gb_buf b;
    pl_error err = {PL_OK, ""};
    pl_gguf *g = parse_small(&b);
    pl_gguf_array a;
    if (!g || pl_gguf_get_array(g, "test.words", &a, &err) != PL_OK) return 12;
    a.count = 1000;
    pl_str s;
    if (pl_gguf_array_string(&a, 500, &s, &err) != PL_ERR_INVALID_ARG) return 10;
    pl_gguf_free(g);
    gb_free(&b);

    gb_init(&b);
    gb_header(&b, 3, 0, 1);
    gb_kv_arr(&b, "k", PL_GGUF_UINT32, 2);
    gb_u32(&b, 1), gb_u32(&b, 2);
    if (pl_gguf_parse(&g, b.data, b.len, &err) != PL_OK ||
        pl_gguf_get_array(g, "k", &a, &err) != PL_OK)
        return 12;
    a.count = 1u << 20;
    uint32_t v;
    if (pl_gguf_array_elem(&a, 1000, &v, &err) != PL_ERR_INVALID_ARG) return 11;
    pl_gguf_free(g);
    gb_free(&b);
    return 0;
}

static void gguf_array_index_checked_against_the_file(void)
{
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) _exit(tampered_array_child());
    int status = 0;
    waitpid(pid, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (WIFSIGNALED(status))
        TU_CHECK(0,
                 "a handle whose count was raised made the library read out of bounds "
                 "(signal %d)",
                 WTERMSIG(status));
    else if (code == 10 || code == 11)
        TU_CHECK(0, "%s past the file's array (handle count raised) was not PL_ERR_INVALID_ARG",
                 code == 10 ? "pl_gguf_array_string" : "pl_gguf_array_elem");
    else
        TU_CHECK(code == 0,
                 "the tampered-handle child failed with exit %d (a sanitizer report "
                 "above, or setup)",
                 code);
}

static void plumb_version_matches_header(void)
{
    CU_ASSERT(strcmp(pl_version(), PLUMB_VERSION_STRING) == 0);
    CU_ASSERT(PLUMB_VERSION ==
              PLUMB_VERSION_MAJOR * 10000 + PLUMB_VERSION_MINOR * 100 + PLUMB_VERSION_PATCH);
}

int main(void)
{
    static const tu_test tests[] = {
        {"gguf_reads_handcrafted_file_exactly", gguf_reads_handcrafted_file_exactly},
        {"gguf_reads_v2_and_default_alignment", gguf_reads_v2_and_default_alignment},
        {"gguf_writer_output_matches_spec_layout", gguf_writer_output_matches_spec_layout},
        {"gguf_writer_aligns_every_tensor", gguf_writer_aligns_every_tensor},
        {"gguf_writer_default_alignment_is_32", gguf_writer_default_alignment_is_32},
        {"gguf_writer_replaces_key_and_keeps_first_position",
         gguf_writer_replaces_key_and_keeps_first_position},
        {"gguf_writer_write_file_replaces_whole_and_reports_io",
         gguf_writer_write_file_replaces_whole_and_reports_io},
        {"gguf_writer_rejects_unknown_tensor_type", gguf_writer_rejects_unknown_tensor_type},
        {"gguf_writer_rejects_unsupported_tensor_type",
         gguf_writer_rejects_unsupported_tensor_type},
        {"gguf_writer_rejects_row_not_multiple_of_block",
         gguf_writer_rejects_row_not_multiple_of_block},
        {"gguf_writer_rejects_bad_dims", gguf_writer_rejects_bad_dims},
        {"gguf_writer_rejects_duplicate_tensor_name", gguf_writer_rejects_duplicate_tensor_name},
        {"gguf_writer_rejects_bad_version", gguf_writer_rejects_bad_version},
        {"gguf_writer_rejects_bad_metadata", gguf_writer_rejects_bad_metadata},
        {"gguf_writer_rejects_bad_alignment", gguf_writer_rejects_bad_alignment},
        {"gguf_get_u32_on_string_is_type_error", gguf_get_u32_on_string_is_type_error},
        {"gguf_get_missing_key_is_not_found", gguf_get_missing_key_is_not_found},
        {"gguf_array_index_out_of_range_is_invalid_arg",
         gguf_array_index_out_of_range_is_invalid_arg},
        {"gguf_free_null_is_noop", gguf_free_null_is_noop},
        {"gguf_status_str_names_every_code", gguf_status_str_names_every_code},
        {"gguf_null_args_are_invalid_arg", gguf_null_args_are_invalid_arg},
        {"gguf_open_missing_path_is_io_error_naming_path",
         gguf_open_missing_path_is_io_error_naming_path},
        {"model_load_missing_path_is_io_error_naming_path",
         model_load_missing_path_is_io_error_naming_path},
        {"model_load_exposes_the_gguf_view", model_load_exposes_the_gguf_view},
        {"gguf_type_traits_match_ggml", gguf_type_traits_match_ggml},
        {"plumb_version_matches_header", plumb_version_matches_header},
        {"gguf_array_index_checked_against_the_file", gguf_array_index_checked_against_the_file},
        {NULL, NULL},
    };
    int rc = tu_run("gguf", tests);
    gb_tmp_cleanup();
    return rc;
}
