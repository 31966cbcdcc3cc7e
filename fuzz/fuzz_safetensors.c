/* fuzz_safetensors.c — harness: the input is one .safetensors file (byte 0 even) for
 * pl_safetensors_parse, or (byte 0 odd) an index JSON and up to three shards, separated by
 * "#ST#", for pl_safetensors_parse_sharded. Not the converter. Oracles: OK, or an error with a
 * code and a non-empty message and *out NULL; on OK every tensor lies inside its file, its size
 * is its element count times its dtype's, the tensors of a file tile its data section, names
 * are unique and sorted and each is found by name. ASan/UBSan catch the rest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "plumb.h"

#define SEP     "#ST#"
#define SEP_LEN 4

static const char *const shard_names[3] = {
    "model-00001-of-00003.safetensors",
    "model-00002-of-00003.safetensors",
    "model-00003-of-00003.safetensors",
};

/* The first SEP in [p, end), or NULL (memmem is a GNU extension). */
static const uint8_t *find_sep(const uint8_t *p, const uint8_t *end)
{
    for (; end - p >= SEP_LEN; p++)
        if (memcmp(p, SEP, SEP_LEN) == 0) return p;
    return NULL;
}

void fuzz_init(void) {}

static uint32_t dtype_size(const char *d)
{
    static const struct {
        const char *name;
        uint32_t size;
    } t[] = {{"F64", 8},  {"I64", 8},     {"U64", 8},     {"F32", 4},    {"I32", 4}, {"U32", 4},
             {"F16", 2},  {"BF16", 2},    {"I16", 2},     {"U16", 2},    {"I8", 1},  {"U8", 1},
             {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(d, t[i].name) == 0) return t[i].size;
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    const pl_st_tensor *x = *(const pl_st_tensor *const *)a, *y = *(const pl_st_tensor *const *)b;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    /* a zero-size tensor at the offset of another comes first: it ends where that one starts */
    return x->n_bytes < y->n_bytes ? -1 : x->n_bytes > y->n_bytes;
}

static void check_view(const pl_safetensors *st, const pl_st_shard *files, uint32_t n_files)
{
    uint64_t n = pl_safetensors_n_tensors(st);
    FUZZ_CHECK(pl_safetensors_n_files(st) == n_files, "%u files, want %u",
               pl_safetensors_n_files(st), n_files);
    const pl_st_tensor **order = malloc((n ? n : 1) * sizeof *order);
    FUZZ_CHECK(order != NULL, "no memory");
    for (uint64_t i = 0; i < n; i++) {
        const pl_st_tensor *t = pl_safetensors_tensor(st, i);
        FUZZ_CHECK(t && t->name && t->name[0], "tensor %llu has no name", (unsigned long long)i);
        FUZZ_CHECK(t->file < n_files, "tensor '%s' in file %u of %u", t->name, t->file, n_files);
        const pl_st_shard *f = &files[t->file];
        const uint8_t *base = f->data, *p = t->data;
        FUZZ_CHECK(p >= base && t->offset <= f->size && t->n_bytes <= f->size - t->offset &&
                       p == base + t->offset,
                   "tensor '%s': [%llu, +%llu) outside its file (%zu bytes)", t->name,
                   (unsigned long long)t->offset, (unsigned long long)t->n_bytes, f->size);
        uint64_t elems = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            FUZZ_CHECK(t->shape[d] >= 0, "tensor '%s': negative dim", t->name);
            FUZZ_CHECK(!__builtin_mul_overflow(elems, (uint64_t)t->shape[d], &elems),
                       "tensor '%s': count overflow accepted", t->name);
        }
        FUZZ_CHECK(t->n_dims <= PL_SAFETENSORS_MAX_DIMS && elems == t->n_elems &&
                       t->n_bytes == elems * dtype_size(t->dtype) && dtype_size(t->dtype),
                   "tensor '%s': %llu elements of %s in %llu bytes", t->name,
                   (unsigned long long)t->n_elems, t->dtype, (unsigned long long)t->n_bytes);
        FUZZ_CHECK((t->type == PL_TYPE_COUNT) ==
                       !(strcmp(t->dtype, "F32") == 0 || strcmp(t->dtype, "F16") == 0 ||
                         strcmp(t->dtype, "BF16") == 0),
                   "tensor '%s': type %u for dtype %s", t->name, t->type, t->dtype);
        if (i) {
            const pl_st_tensor *prev = pl_safetensors_tensor(st, i - 1);
            FUZZ_CHECK(strcmp(prev->name, t->name) < 0, "names not sorted and unique at '%s'",
                       t->name);
        }
        FUZZ_CHECK(pl_safetensors_find(st, t->name) == t, "find('%s') is another tensor", t->name);
        order[i] = t;
    }
    /* per file, sorted by offset: each tensor starts where the previous ended */
    qsort(order, (size_t)n, sizeof *order, by_offset);
    for (uint64_t i = 0; i < n; i++) {
        const pl_st_tensor *t = order[i];
        if (i && order[i - 1]->file == t->file)
            FUZZ_CHECK(order[i - 1]->offset + order[i - 1]->n_bytes == t->offset,
                       "tensors '%s' and '%s' do not tile", order[i - 1]->name, t->name);
        if (i + 1 == n || order[i + 1]->file != t->file)
            FUZZ_CHECK(t->offset + t->n_bytes == files[t->file].size,
                       "bytes after the last tensor '%s' accepted", t->name);
    }
    free(order);
}

static void check_error(pl_status s, const pl_error *err, const pl_safetensors *st)
{
    FUZZ_CHECK(s < 0, "status %d", (int)s);
    FUZZ_CHECK(err->code == s, "err.code %d != status %d", (int)err->code, (int)s);
    FUZZ_CHECK(err->msg[0] != '\0', "failed (%s) with an empty message", pl_status_str(s));
    FUZZ_CHECK(memchr(err->msg, '\0', sizeof err->msg) != NULL, "message not terminated");
    FUZZ_CHECK(st == NULL, "failed but *out is not NULL");
}

void fuzz_one(const uint8_t *data, size_t size)
{
    if (size < 1) return;
    pl_error err = {0};
    pl_safetensors *st = (pl_safetensors *)(uintptr_t)1;
    if (data[0] % 2 == 0) {
        pl_status s = pl_safetensors_parse(&st, data + 1, size - 1, "fuzz.safetensors", &err);
        if (s == PL_OK) {
            pl_st_shard one = {"fuzz.safetensors", data + 1, size - 1};
            check_view(st, &one, 1);
            pl_safetensors_free(st);
        } else
            check_error(s, &err, st);
        return;
    }
    /* index SEP shard SEP shard SEP shard */
    const uint8_t *parts[4];
    size_t lens[4], n_parts = 0;
    const uint8_t *p = data + 1, *end = data + size;
    while (n_parts < 4) {
        const uint8_t *q = n_parts < 3 ? find_sep(p, end) : NULL;
        parts[n_parts] = p;
        lens[n_parts++] = (size_t)((q ? q : end) - p);
        if (!q) break;
        p = q + SEP_LEN;
    }
    pl_st_shard shards[3];
    /* each shard in its own exact-size buffer, so ASan sees a read past its end */
    uint8_t *copies[3] = {NULL, NULL, NULL};
    for (size_t i = 1; i < n_parts; i++) {
        copies[i - 1] = malloc(lens[i] ? lens[i] : 1);
        FUZZ_CHECK(copies[i - 1] != NULL, "no memory");
        memcpy(copies[i - 1], parts[i], lens[i]);
        shards[i - 1] = (pl_st_shard){shard_names[i - 1], copies[i - 1], lens[i]};
    }
    pl_status s = pl_safetensors_parse_sharded(&st, parts[0], lens[0], shards, n_parts - 1, &err);
    if (s == PL_OK) {
        /* the view's files are the shards the index names, in its order */
        pl_st_shard files[3];
        uint32_t nf = pl_safetensors_n_files(st);
        FUZZ_CHECK(nf >= 1 && nf <= n_parts - 1, "%u files from %zu shards", nf, n_parts - 1);
        for (uint32_t f = 0; f < nf; f++) {
            const char *name = pl_safetensors_file_name(st, f);
            size_t k = 0;
            while (k < n_parts - 1 && strcmp(shards[k].name, name) != 0) k++;
            FUZZ_CHECK(k < n_parts - 1, "file '%s' is not a shard", name);
            files[f] = shards[k];
        }
        check_view(st, files, nf);
        pl_safetensors_free(st);
    } else
        check_error(s, &err, st);
    for (int i = 0; i < 3; i++) free(copies[i]);
}
