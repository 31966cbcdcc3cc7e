/* gguf_stream.c — writes a GGUF whose tensors are produced one at a time by a callback, so a
 * multi-GB model never sits in memory. Not the writer: metadata bytes come from gguf_writer.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"

/* Bytes of metadata pair i as GGUF stores it: key, type, value. */
static pl_status kv_size(const pl_gguf *g, uint64_t i, uint64_t *out, pl_error *err)
{
    pl_gguf_type type = pl_gguf_kv_type(g, i);
    uint64_t n = 8 + pl_gguf_kv_key(g, i).len + 4;
    pl_status s = PL_OK;
    if (type == PL_GGUF_STRING) {
        pl_str v;
        if (!(s = pl_gguf_kv_string(g, i, &v, err))) n += 8 + v.len;
    } else if (type == PL_GGUF_ARRAY) {
        pl_gguf_array a;
        if (!(s = pl_gguf_kv_array(g, i, &a, err))) {
            n += 12;
            if (a.type != PL_GGUF_STRING) n += a.count * pl_gguf_type_size(a.type);
            for (uint64_t k = 0; a.type == PL_GGUF_STRING && k < a.count && !s; k++) {
                pl_str e;
                if (!(s = pl_gguf_array_string(&a, k, &e, err))) n += 8 + e.len;
            }
        }
    } else {
        n += pl_gguf_type_size(type);
    }
    *out = n;
    return s;
}

static void put_u32(FILE *f, uint32_t v)
{
    fwrite(&v, 4, 1, f);
}

static void put_u64(FILE *f, uint64_t v)
{
    fwrite(&v, 8, 1, f);
}

static void put_pad(FILE *f, uint64_t at, uint32_t align)
{
    static const uint8_t zeros[256];
    for (uint64_t pad = (align - at % align) % align; pad > 0;) {
        uint64_t k = pad < sizeof zeros ? pad : sizeof zeros;
        fwrite(zeros, 1, (size_t)k, f);
        pad -= k;
    }
}

/* The writer serialises the metadata (it holds no tensors, so its image is the GGUF header,
 * the pairs and padding); the tensor infos follow the GGUF spec, and each tensor's bytes are
 * produced and written in turn, so only one is ever in memory. Reading the finished file
 * back with the parser proves the layout before it is renamed into place. */
pl_status pl_gguf_write_streamed(const pl_gguf_writer *w, const char *path,
                                 const pl_tensor_spec *specs, uint64_t n, pl_tensor_fill_fn fill,
                                 void *user, pl_error *err)
{
    if (!w || !path || (!specs && n) || !fill)
        return pl_fail(err, PL_ERR_INVALID_ARG, "writer, path, specs or fill is NULL");
    uint64_t *sizes = pl_calloc(n ? (size_t)n : 1, sizeof *sizes);
    if (!sizes)
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %llu tensor sizes", (unsigned long long)n);
    uint64_t max_bytes = 1;
    pl_status s = PL_OK;
    for (uint64_t i = 0; i < n && !s; i++) {
        const pl_tensor_spec *t = &specs[i];
        size_t row;
        uint64_t rows = 1;
        if (!t->name || !*t->name || strlen(t->name) > PL_GGUF_MAX_NAME || t->n_dims == 0 ||
            t->n_dims > PL_GGUF_MAX_DIMS) {
            s = pl_fail(err, PL_ERR_INVALID_ARG, "tensor spec %llu: bad name or n_dims",
                        (unsigned long long)i);
            break;
        }
        for (uint64_t k = 0; k < i && !s; k++)
            if (strcmp(specs[k].name, t->name) == 0)
                s = pl_fail(err, PL_ERR_INVALID_ARG, "duplicate tensor name '%.200s'", t->name);
        for (uint32_t d = 0; d < t->n_dims && !s; d++)
            if (t->ne[d] <= 0 || (d > 0 && !pl_mul_u64(rows, (uint64_t)t->ne[d], &rows)))
                s = pl_fail(err, PL_ERR_INVALID_ARG, "tensor '%.200s': bad shape", t->name);
        if (!s && (s = pl_type_row_bytes(t->type, t->ne[0], &row, err)) != PL_OK) {
            char what[PL_GGUF_MAX_NAME + 16];
            snprintf(what, sizeof what, "tensor '%s'", t->name);
            pl_error_prefix(err, what);
        }
        if (!s && !pl_mul_u64(row, rows, &sizes[i]))
            s = pl_fail(err, PL_ERR_LIMIT, "tensor '%.200s': byte size overflows", t->name);
        if (sizes[i] > max_bytes) max_bytes = sizes[i];
    }
    if (!s && max_bytes > SIZE_MAX)
        s = pl_fail(err, PL_ERR_LIMIT, "a tensor of %llu bytes does not fit in memory",
                    (unsigned long long)max_bytes);

    /* the metadata image, and where its pairs end */
    void *meta = NULL;
    size_t meta_size = 0;
    uint64_t meta_end = 24;
    uint32_t align = PL_GGUF_DEFAULT_ALIGNMENT;
    pl_gguf *mg = NULL;
    if (!s) s = pl_gguf_writer_write_memory(w, &meta, &meta_size, err);
    if (!s) s = pl_gguf_parse(&mg, meta, meta_size, err);
    if (!s && pl_gguf_n_tensors(mg) != 0)
        s = pl_fail(err, PL_ERR_INVALID_ARG, "the writer already holds tensors");
    for (uint64_t i = 0; !s && i < pl_gguf_n_kv(mg); i++) {
        uint64_t k;
        if (!(s = kv_size(mg, i, &k, err))) meta_end += k;
    }
    if (!s) align = pl_gguf_alignment(mg);
    pl_gguf_free(mg);

    uint8_t *buf = NULL;
    if (!s && !(buf = pl_malloc((size_t)max_bytes)))
        s = pl_fail(err, PL_ERR_NOMEM, "no memory for a %llu-byte tensor buffer",
                    (unsigned long long)max_bytes);
    size_t plen = strlen(path);
    char *tmp = s ? NULL : pl_malloc(plen + 5);
    if (!s && !tmp) s = pl_fail(err, PL_ERR_NOMEM, "no memory for the temporary path");
    FILE *f = NULL;
    if (!s) {
        memcpy(tmp, path, plen);
        memcpy(tmp + plen, ".tmp", 5);
        if (!(f = fopen(tmp, "wb")))
            s = pl_fail(err, PL_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
    }
    if (!s) {
        uint64_t n_tensors = n, at = meta_end, off = 0;
        fwrite(meta, 1, 8, f); /* magic and version */
        put_u64(f, n_tensors);
        fwrite((const uint8_t *)meta + 16, 1, (size_t)meta_end - 16, f);
        for (uint64_t i = 0; i < n; i++) {
            const pl_tensor_spec *t = &specs[i];
            uint64_t len = strlen(t->name);
            put_u64(f, len);
            fwrite(t->name, 1, (size_t)len, f);
            put_u32(f, t->n_dims);
            for (uint32_t d = 0; d < t->n_dims; d++) put_u64(f, (uint64_t)t->ne[d]);
            put_u32(f, t->type);
            put_u64(f, off);
            at += 8 + len + 4 + 8ull * t->n_dims + 4 + 8;
            off += sizes[i] + (align - sizes[i] % align) % align;
        }
        put_pad(f, at, align);
        for (uint64_t i = 0; i < n && !s && !ferror(f); i++) {
            if ((s = fill(user, i, buf, sizes[i], err))) break;
            fwrite(buf, 1, (size_t)sizes[i], f);
            put_pad(f, sizes[i], align);
        }
        if (!s && ferror(f))
            s = pl_fail(err, PL_ERR_IO, "writing '%s' failed: %s", tmp, strerror(errno));
    }
    if (f && fclose(f) != 0 && !s)
        s = pl_fail(err, PL_ERR_IO, "writing '%s' failed: %s", tmp, strerror(errno));
    if (!s) { /* the file must read back as exactly what was asked for */
        pl_gguf *g = NULL;
        s = pl_gguf_open(&g, tmp, err);
        if (!s && pl_gguf_n_tensors(g) != n)
            s = pl_fail(err, PL_ERR_FORMAT, "'%s': wrote %llu tensors, read back %llu", tmp,
                        (unsigned long long)n, (unsigned long long)pl_gguf_n_tensors(g));
        for (uint64_t i = 0; i < n && !s; i++) {
            pl_tensor_info ti;
            if ((s = pl_gguf_tensor(g, i, &ti, err))) break;
            if (ti.type != specs[i].type || ti.n_bytes != sizes[i] ||
                ti.name.len != strlen(specs[i].name) ||
                memcmp(ti.name.ptr, specs[i].name, (size_t)ti.name.len) != 0)
                s = pl_fail(err, PL_ERR_FORMAT, "'%s': tensor %llu reads back differently", tmp,
                            (unsigned long long)i);
        }
        pl_gguf_free(g);
    }
    if (!s && rename(tmp, path) != 0)
        s = pl_fail(err, PL_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
    if (s && f) remove(tmp);
    pl_free(tmp);
    pl_free(buf);
    pl_free(sizes);
    pl_buffer_free(meta);
    return s ? s : pl_ok(err);
}
