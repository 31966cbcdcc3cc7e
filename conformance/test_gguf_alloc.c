/* test_gguf_alloc.c — allocation N fails, for every N of parsing, loading and writing a valid
 * GGUF file (transient and persistent): PL_ERR_NOMEM, *out NULL, nothing leaked. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "gguf_bytes.h"
#include "plumb.h"
#include "testutil.h"

#define NOT_NULL ((void *)(uintptr_t)0x1) /* *out starts non-NULL: a failing call must clear it */

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#if !defined(SANITIZED) && defined(__GLIBC__) &&                                                   \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#define HEAP_CHECK 1
#endif

#define NO_TCACHE "glibc.malloc.tcache_count=0"
static int heap_check; /* 1 once glibc's heap counters are exact (tcache off) */

/* glibc counts chunks parked in the per-thread cache as in use, which would make the heap
 * counters drift without a leak; so the binary re-executes itself once with the cache off.
 * Under ASan, LeakSanitizer does this job at exit instead. */
static void reexec_without_tcache(char **argv)
{
#ifdef HEAP_CHECK
    const char *t = getenv("GLIBC_TUNABLES");
    if (t && strstr(t, NO_TCACHE)) {
        heap_check = 1;
        return;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%s" NO_TCACHE, t ? t : "", t && *t ? ":" : "");
    setenv("GLIBC_TUNABLES", buf, 1);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "re-exec without tcache failed (%s): heap accounting off\n", strerror(errno));
#else
    (void)argv;
#endif
}

/* Bytes the C heap has handed out and not taken back; 0 when not measurable. */
static uint64_t heap_in_use(void)
{
#ifdef HEAP_CHECK
    if (heap_check) {
        struct mallinfo2 mi = mallinfo2();
        return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
    }
#endif
    return 0;
}

/* Mappings of `path` in this process, and open file descriptors: neither may grow. */
static int count_maps(const char *path)
{
    if (!path) return 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, path)) n++;
    fclose(f);
    return n;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return 0;
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* The files the operations work on. */
static gb_buf small, medium, llama;
static char tmpdir[64], path_small[128], path_medium[128], path_llama[128];

/* A larger file: many kvs of every kind and a dozen tensors, so that every growth path of
 * the parser's tables is taken. */
static void build_medium(gb_buf *b)
{
    enum { N_T = 12 };
    char key[64];
    gb_init(b);
    gb_header(b, 3, N_T, 41);
    gb_kv_u32(b, "general.alignment", 64);
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "m.str.%d", i);
        gb_kv_str(b, key, "some text of a string value");
        snprintf(key, sizeof key, "m.u32.%d", i);
        gb_kv_u32(b, key, (uint32_t)i);
        snprintf(key, sizeof key, "m.arr.%d", i);
        gb_kv_arr(b, key, PL_GGUF_FLOAT32, 5);
        for (int k = 0; k < 5; k++) gb_f32(b, (float)k);
        snprintf(key, sizeof key, "m.sarr.%d", i);
        gb_kv_arr(b, key, PL_GGUF_STRING, 4);
        for (int k = 0; k < 4; k++) gb_str(b, "tok");
    }
    uint64_t off = 0, end = 0;
    for (int i = 0; i < N_T; i++) {
        const int64_t ne[] = {32, 2};
        char name[64];
        snprintf(name, sizeof name, "blk.%d.attn_output.weight", i);
        gb_tensor_info(b, name, 2, ne, PL_TYPE_Q8_0, off); /* 2 x 34 = 68 bytes */
        end = off + 68;
        off = gb_align_up(end, 64);
    }
    gb_pad(b, 64);
    gb_fill(b, 0x42, (size_t)end);
}

static void write_file(const char *path, const gb_buf *b)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        abort();
    }
}

static int setup(void)
{
    gb_small_valid(&small);
    build_medium(&medium);
    gb_tiny_llama(&llama);
    strcpy(tmpdir, "/tmp/plumb-gguf-alloc-XXXXXX");
    if (!mkdtemp(tmpdir)) return -1;
    snprintf(path_small, sizeof path_small, "%s/small.gguf", tmpdir);
    snprintf(path_medium, sizeof path_medium, "%s/medium.gguf", tmpdir);
    write_file(path_small, &small);
    snprintf(path_llama, sizeof path_llama, "%s/llama.gguf", tmpdir);
    write_file(path_medium, &medium);
    write_file(path_llama, &llama);
    return 0;
}

static void teardown(void)
{
    remove(path_small);
    remove(path_medium);
    remove(path_llama);
    rmdir(tmpdir);
    gb_free(&small);
    gb_free(&medium);
    gb_free(&llama);
}

/* One operation under test. Returns its status; sets *cleared to 0 if it failed but left an
 * output pointer non-NULL. Frees whatever it made on success. */
typedef pl_status (*alloc_op)(const void *arg, pl_error *err, int *cleared);

static pl_status op_parse(const void *arg, pl_error *err, int *cleared)
{
    const gb_buf *b = arg;
    pl_gguf *g = NOT_NULL;
    pl_status st = pl_gguf_parse(&g, b->data, b->len, err);
    if (st == PL_OK)
        pl_gguf_free(g);
    else
        *cleared = g == NULL;
    return st;
}

static pl_status op_model_load_memory(const void *arg, pl_error *err, int *cleared)
{
    const gb_buf *b = arg;
    pl_model *m = NOT_NULL;
    pl_status st = pl_model_load_memory(&m, b->data, b->len, NULL, err);
    if (st == PL_OK)
        pl_model_free(m);
    else
        *cleared = m == NULL;
    return st;
}

static pl_status op_open(const void *arg, pl_error *err, int *cleared)
{
    pl_gguf *g = NOT_NULL;
    pl_status st = pl_gguf_open(&g, arg, err);
    if (st == PL_OK)
        pl_gguf_free(g);
    else
        *cleared = g == NULL;
    return st;
}

static pl_status op_model_load(const void *arg, pl_error *err, int *cleared)
{
    pl_model *m = NOT_NULL;
    pl_status st = pl_model_load(&m, arg, NULL, err);
    if (st == PL_OK)
        pl_model_free(m);
    else
        *cleared = m == NULL;
    return st;
}

/* Builds a writer with metadata of several kinds (one key set twice) and three tensors, and
 * writes it to memory (arg == NULL) or to the path in arg. */
static pl_status op_writer(const void *arg, pl_error *err, int *cleared)
{
    static const float f32[64];
    static const uint8_t q8[2 * 34];
    static const uint16_t f16[6];
    static const int32_t ints[7] = {1, 2, 3, 4, 5, 6, 7};
    static const char *const toks[] = {"<s>", "</s>", "hello", "world", ""};
    const int64_t ne_f32[] = {8, 8}, ne_q8[] = {64}, ne_f16[] = {3, 2};
    double pi = 3.14159;
    pl_gguf_writer *w = NOT_NULL;
    pl_status st = pl_gguf_writer_new(&w, 3, err);
    if (st != PL_OK) {
        *cleared = w == NULL;
        return st;
    }
#define TRY(call)                                                                                  \
    do {                                                                                           \
        st = (call);                                                                               \
        if (st != PL_OK) goto done;                                                                \
    } while (0)
    TRY(pl_gguf_writer_set_string(w, "general.name", "alloc test", 10, err));
    TRY(pl_gguf_writer_set_u32(w, "general.alignment", 64, err));
    TRY(pl_gguf_writer_set_array(w, "test.ints", PL_GGUF_INT32, ints, 7, err));
    TRY(pl_gguf_writer_set_array_str(w, "tokenizer.ggml.tokens", toks, NULL, 5, err));
    TRY(pl_gguf_writer_set(w, "test.pi", PL_GGUF_FLOAT64, &pi, err));
    TRY(pl_gguf_writer_set_f32(w, "test.f", 0.5f, err));
    TRY(pl_gguf_writer_set_string(w, "general.name", "alloc test, renamed", 19, err));
    TRY(pl_gguf_writer_add_tensor(w, "a.weight", PL_TYPE_F32, 2, ne_f32, f32, err));
    TRY(pl_gguf_writer_add_tensor(w, "b.weight", PL_TYPE_Q8_0, 1, ne_q8, q8, err));
    TRY(pl_gguf_writer_add_tensor(w, "c.weight", PL_TYPE_F16, 2, ne_f16, f16, err));
    if (arg) {
        st = pl_gguf_writer_write_file(w, arg, err);
    } else {
        void *buf = NOT_NULL;
        size_t size = 0;
        st = pl_gguf_writer_write_memory(w, &buf, &size, err);
        if (st == PL_OK)
            pl_buffer_free(buf);
        else
            *cleared = buf == NULL;
    }
#undef TRY
done:
    pl_gguf_writer_free(w);
    return st;
}

/* Counts the allocations of a successful op, then fails each of them in turn, transient and
 * persistent. Returns the count (0 when the op did not even succeed). */
static uint64_t fail_every_allocation(const char *name, alloc_op op, const void *arg,
                                      const char *mapped_path)
{
    pl_error err = {PL_OK, ""};
    int cleared = 1;
    tu_alloc_fail_at(0, 0);
    pl_status st = op(arg, &err, &cleared);
    uint64_t n = tu_alloc_count();
    tu_alloc_reset();
    TU_CHECK(st == PL_OK, "%s: without failures -> %s: %s", name, pl_status_str(st), err.msg);
    if (st != PL_OK) return 0;
    TU_CHECK(n > 0, "%s: made no allocation through the hook", name);

    for (int persistent = 0; persistent <= 1; persistent++) {
        for (uint64_t k = 1; k <= n; k++) {
            int maps0 = count_maps(mapped_path), fds0 = count_fds();
            uint64_t heap0 = heap_in_use();
            pl_error e = {PL_OK, "untouched"};
            cleared = 1;
            tu_alloc_fail_at(k, persistent);
            st = op(arg, &e, &cleared);
            uint64_t failed = tu_alloc_failed();
            tu_alloc_reset();
            uint64_t heap1 = heap_in_use();
            int maps1 = count_maps(mapped_path), fds1 = count_fds();
            const char *mode = persistent ? "persistent" : "transient";
            unsigned before = CU_get_number_of_failures();
            TU_CHECK(failed >= 1, "%s: allocation %" PRIu64 "/%" PRIu64 " (%s) was never reached",
                     name, k, n, mode);
            TU_CHECK(st == PL_ERR_NOMEM,
                     "%s: allocation %" PRIu64 "/%" PRIu64 " failed (%s) -> %s: %s", name, k, n,
                     mode, pl_status_str(st), e.msg);
            TU_CHECK(e.code == st && e.msg[0] && strcmp(e.msg, "untouched") != 0,
                     "%s: allocation %" PRIu64 " (%s): error not filled in", name, k, mode);
            TU_CHECK(cleared, "%s: allocation %" PRIu64 " (%s): failed but *out is not NULL", name,
                     k, mode);
            TU_CHECK(heap1 == heap0, "%s: allocation %" PRIu64 " (%s): %" PRId64 " bytes leaked",
                     name, k, mode, (int64_t)(heap1 - heap0));
            TU_CHECK(maps1 == maps0 && fds1 == fds0,
                     "%s: allocation %" PRIu64 " (%s): %d mappings, %d fds leaked", name, k, mode,
                     maps1 - maps0, fds1 - fds0);
            if (CU_get_number_of_failures() != before) return n; /* one report is enough */
        }
    }
    /* the same with no pl_error to fill */
    for (uint64_t k = 1; k <= n; k++) {
        cleared = 1;
        tu_alloc_fail_at(k, 1);
        st = op(arg, NULL, &cleared);
        tu_alloc_reset();
        TU_CHECK(st == PL_ERR_NOMEM, "%s: allocation %" PRIu64 " with err NULL -> %s", name, k,
                 pl_status_str(st));
    }
    /* failing the allocation after the last one changes nothing */
    tu_alloc_fail_at(n + 1, 1);
    st = op(arg, &err, &cleared);
    tu_alloc_reset();
    TU_CHECK(st == PL_OK, "%s: failing allocation %" PRIu64 " of %" PRIu64 " -> %s", name, n + 1, n,
             pl_status_str(st));
    printf("[%s: %" PRIu64 " allocations, each failed transient and persistent] ", name, n);
    return n;
}

static void gguf_parse_survives_every_allocation_failure(void)
{
    fail_every_allocation("pl_gguf_parse(small)", op_parse, &small, NULL);
    fail_every_allocation("pl_gguf_parse(medium)", op_parse, &medium, NULL);
}

static void gguf_open_survives_every_allocation_failure(void)
{
    fail_every_allocation("pl_gguf_open(small)", op_open, path_small, path_small);
    fail_every_allocation("pl_gguf_open(medium)", op_open, path_medium, path_medium);
}

static void model_load_memory_survives_every_allocation_failure(void)
{
    fail_every_allocation("pl_model_load_memory(tiny llama)", op_model_load_memory, &llama, NULL);
}

static void model_load_survives_every_allocation_failure(void)
{
    fail_every_allocation("pl_model_load(tiny llama)", op_model_load, path_llama, path_llama);
}

static void gguf_writer_survives_every_allocation_failure(void)
{
    fail_every_allocation("writer build + write_memory", op_writer, NULL, NULL);
}

/* write_file: also no PATH.tmp and no half file left behind. */
static void gguf_writer_file_survives_every_allocation_failure(void)
{
    char path[160], tmp[170];
    snprintf(path, sizeof path, "%s/written.gguf", tmpdir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    uint64_t n = fail_every_allocation("writer build + write_file", op_writer, path, NULL);
    remove(path);
    for (uint64_t k = 1; k <= n; k++) {
        int cleared = 1;
        tu_alloc_fail_at(k, 1);
        pl_status st = op_writer(path, NULL, &cleared);
        tu_alloc_reset();
        TU_CHECK(st != PL_OK, "write_file with allocation %" PRIu64 " failing succeeded", k);
        TU_CHECK(access(path, F_OK) != 0 && access(tmp, F_OK) != 0,
                 "write_file with allocation %" PRIu64 " failing left a file behind", k);
        remove(path);
        remove(tmp);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    reexec_without_tcache(argv);
    static const tu_test tests[] = {
        {"gguf_parse_survives_every_allocation_failure",
         gguf_parse_survives_every_allocation_failure},
        {"gguf_open_survives_every_allocation_failure",
         gguf_open_survives_every_allocation_failure},
        {"model_load_memory_survives_every_allocation_failure",
         model_load_memory_survives_every_allocation_failure},
        {"model_load_survives_every_allocation_failure",
         model_load_survives_every_allocation_failure},
        {"gguf_writer_survives_every_allocation_failure",
         gguf_writer_survives_every_allocation_failure},
        {"gguf_writer_file_survives_every_allocation_failure",
         gguf_writer_file_survives_every_allocation_failure},
        {NULL, NULL},
    };
    if (setup() != 0) {
        fprintf(stderr, "setup failed: %s\n", strerror(errno));
        return 2;
    }
    printf("gguf_alloc: files of %zu, %zu and %zu bytes; heap accounting %s\n", small.len,
           medium.len, llama.len,
           heap_check ? "on (glibc, tcache off)" : "off (LeakSanitizer checks at exit)");
    int rc = tu_run("gguf_alloc", tests);
    teardown();
    return rc;
}
