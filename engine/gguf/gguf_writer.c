/* gguf_writer.c — writes GGUF v2/v3 files: metadata in insertion order, tensor infos,
 * aligned tensor data. Not a converter: callers supply tensors already in their type. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "types.h"

struct wkv {
    char *key;
    size_t key_len;
    pl_gguf_type type;
    uint8_t *payload; /* the value exactly as it follows the type field in the file */
    size_t payload_len;
};

struct wtensor {
    char *name;
    size_t name_len;
    uint32_t type;
    uint32_t n_dims;
    int64_t ne[4];
    uint64_t n_bytes;
    uint64_t offset; /* relative to the data section, aligned */
    const void *data;
};

struct pl_gguf_writer {
    uint32_t version;
    struct wkv *kv;
    size_t n_kv, cap_kv;
    struct wtensor *t;
    size_t n_t, cap_t;
};

pl_status pl_gguf_writer_new(pl_gguf_writer **out, uint32_t version, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (version != 2 && version != 3)
        return pl_fail(err, PL_ERR_UNSUPPORTED, "GGUF writer version %u: only 2 and 3 exist",
                       version);
    pl_gguf_writer *w = pl_calloc(1, sizeof *w);
    if (!w) return pl_fail(err, PL_ERR_NOMEM, "no memory for the GGUF writer");
    w->version = version;
    *out = w;
    return pl_ok(err);
}

void pl_gguf_writer_free(pl_gguf_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        pl_free(w->kv[i].key);
        pl_free(w->kv[i].payload);
    }
    for (size_t i = 0; i < w->n_t; i++) pl_free(w->t[i].name);
    pl_free(w->kv);
    pl_free(w->t);
    pl_free(w);
}

static pl_status check_key(const char *key, pl_error *err)
{
    if (!key || !*key) return pl_fail(err, PL_ERR_INVALID_ARG, "metadata key is NULL or empty");
    if (strlen(key) > PL_GGUF_MAX_KEY)
        return pl_fail(err, PL_ERR_LIMIT, "metadata key of %zu bytes exceeds PL_GGUF_MAX_KEY (%u)",
                       strlen(key), PL_GGUF_MAX_KEY);
    return PL_OK;
}

/* Stores (key, type, payload), taking ownership of payload on success and on failure. */
static pl_status put(pl_gguf_writer *w, const char *key, pl_gguf_type type, uint8_t *payload,
                     size_t len, pl_error *err)
{
    size_t key_len = strlen(key);
    for (size_t i = 0; i < w->n_kv; i++) {
        if (w->kv[i].key_len == key_len && memcmp(w->kv[i].key, key, key_len) == 0) {
            pl_free(w->kv[i].payload);
            w->kv[i].type = type;
            w->kv[i].payload = payload;
            w->kv[i].payload_len = len;
            return pl_ok(err);
        }
    }
    if (w->n_kv >= PL_GGUF_MAX_KV) {
        pl_free(payload);
        return pl_fail(err, PL_ERR_LIMIT, "more than PL_GGUF_MAX_KV (%u) metadata keys",
                       PL_GGUF_MAX_KV);
    }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
        struct wkv *kv = pl_realloc(w->kv, cap * sizeof *kv);
        if (!kv) {
            pl_free(payload);
            return pl_fail(err, PL_ERR_NOMEM, "no memory for metadata key '%s'", key);
        }
        w->kv = kv;
        w->cap_kv = cap;
    }
    char *k = pl_malloc(key_len + 1);
    if (!k) {
        pl_free(payload);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for metadata key '%s'", key);
    }
    memcpy(k, key, key_len + 1);
    w->kv[w->n_kv++] = (struct wkv){k, key_len, type, payload, len};
    return pl_ok(err);
}

static pl_status check_bool_values(const char *key, const uint8_t *v, uint64_t n, pl_error *err)
{
    for (uint64_t i = 0; i < n; i++)
        if (v[i] > 1)
            return pl_fail(err, PL_ERR_INVALID_ARG, "key '%s': bool value %u is not 0 or 1", key,
                           v[i]);
    return PL_OK;
}

static pl_status check_alignment_value(const char *key, pl_gguf_type type, const void *value,
                                       pl_error *err)
{
    if (strcmp(key, "general.alignment") != 0) return PL_OK;
    if (type != PL_GGUF_UINT32)
        return pl_fail(err, PL_ERR_TYPE, "general.alignment must be uint32, not %s",
                       pl_gguf_type_name(type));
    uint32_t a;
    memcpy(&a, value, 4);
    if (a == 0 || (a & (a - 1)) != 0 || a > PL_GGUF_MAX_ALIGNMENT)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "general.alignment = %u must be a power of two <= %u", a,
                       PL_GGUF_MAX_ALIGNMENT);
    return PL_OK;
}

pl_status pl_gguf_writer_set(pl_gguf_writer *w, const char *key, pl_gguf_type type,
                             const void *value, pl_error *err)
{
    if (!w || !value) return pl_fail(err, PL_ERR_INVALID_ARG, "writer or value is NULL");
    pl_status s = check_key(key, err);
    if (s) return s;
    size_t n = pl_gguf_type_size(type);
    if (n == 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "key '%s': type %u is not a scalar (use set_string/set_array)", key, type);
    if (type == PL_GGUF_BOOL && (s = check_bool_values(key, value, 1, err))) return s;
    if ((s = check_alignment_value(key, type, value, err))) return s;
    uint8_t *p = pl_malloc(n);
    if (!p) return pl_fail(err, PL_ERR_NOMEM, "no memory for key '%s'", key);
    memcpy(p, value, n);
    return put(w, key, type, p, n, err);
}

pl_status pl_gguf_writer_set_u32(pl_gguf_writer *w, const char *key, uint32_t v, pl_error *err)
{
    return pl_gguf_writer_set(w, key, PL_GGUF_UINT32, &v, err);
}

pl_status pl_gguf_writer_set_f32(pl_gguf_writer *w, const char *key, float v, pl_error *err)
{
    return pl_gguf_writer_set(w, key, PL_GGUF_FLOAT32, &v, err);
}

pl_status pl_gguf_writer_set_string(pl_gguf_writer *w, const char *key, const char *str, size_t len,
                                    pl_error *err)
{
    if (!w || (!str && len)) return pl_fail(err, PL_ERR_INVALID_ARG, "writer or string is NULL");
    pl_status s = check_key(key, err);
    if (s) return s;
    if ((s = check_alignment_value(key, PL_GGUF_STRING, NULL, err))) return s;
    if (len > PL_GGUF_MAX_STRING)
        return pl_fail(err, PL_ERR_LIMIT, "key '%s': string of %zu bytes exceeds %u", key, len,
                       PL_GGUF_MAX_STRING);
    uint8_t *p = pl_malloc(8 + len);
    if (!p) return pl_fail(err, PL_ERR_NOMEM, "no memory for key '%s'", key);
    uint64_t l = len;
    memcpy(p, &l, 8);
    if (len) memcpy(p + 8, str, len);
    return put(w, key, PL_GGUF_STRING, p, 8 + len, err);
}

pl_status pl_gguf_writer_set_array(pl_gguf_writer *w, const char *key, pl_gguf_type elem_type,
                                   const void *data, uint64_t count, pl_error *err)
{
    if (!w || (!data && count)) return pl_fail(err, PL_ERR_INVALID_ARG, "writer or data is NULL");
    pl_status s = check_key(key, err);
    if (s) return s;
    if ((s = check_alignment_value(key, PL_GGUF_ARRAY, NULL, err))) return s;
    size_t n = pl_gguf_type_size(elem_type);
    if (n == 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "key '%s': element type %u is not a scalar (strings: set_array_str; "
                       "nested arrays are not supported)",
                       key, elem_type);
    if (count > PL_GGUF_MAX_ARRAY)
        return pl_fail(err, PL_ERR_LIMIT, "key '%s': %llu elements exceed PL_GGUF_MAX_ARRAY (%u)",
                       key, (unsigned long long)count, PL_GGUF_MAX_ARRAY);
    if (elem_type == PL_GGUF_BOOL && (s = check_bool_values(key, data, count, err))) return s;
    size_t bytes = (size_t)count * n;
    uint8_t *p = pl_malloc(12 + bytes);
    if (!p) return pl_fail(err, PL_ERR_NOMEM, "no memory for array '%s'", key);
    uint32_t et = elem_type;
    memcpy(p, &et, 4);
    memcpy(p + 4, &count, 8);
    if (bytes) memcpy(p + 12, data, bytes);
    return put(w, key, PL_GGUF_ARRAY, p, 12 + bytes, err);
}

pl_status pl_gguf_writer_set_array_str(pl_gguf_writer *w, const char *key, const char *const *strs,
                                       const size_t *lens, uint64_t count, pl_error *err)
{
    if (!w || (!strs && count)) return pl_fail(err, PL_ERR_INVALID_ARG, "writer or strs is NULL");
    pl_status s = check_key(key, err);
    if (s) return s;
    if ((s = check_alignment_value(key, PL_GGUF_ARRAY, NULL, err))) return s;
    if (count > PL_GGUF_MAX_ARRAY)
        return pl_fail(err, PL_ERR_LIMIT, "key '%s': %llu strings exceed PL_GGUF_MAX_ARRAY (%u)",
                       key, (unsigned long long)count, PL_GGUF_MAX_ARRAY);
    uint64_t total = 12;
    for (uint64_t i = 0; i < count; i++) {
        if (!strs[i])
            return pl_fail(err, PL_ERR_INVALID_ARG, "key '%s': string %llu is NULL", key,
                           (unsigned long long)i);
        size_t len = lens ? lens[i] : strlen(strs[i]);
        if (len > PL_GGUF_MAX_STRING)
            return pl_fail(err, PL_ERR_LIMIT, "key '%s': string %llu of %zu bytes exceeds %u", key,
                           (unsigned long long)i, len, PL_GGUF_MAX_STRING);
        total += 8 + len;
    }
    uint8_t *p = pl_malloc((size_t)total);
    if (!p) return pl_fail(err, PL_ERR_NOMEM, "no memory for array '%s'", key);
    uint32_t et = PL_GGUF_STRING;
    memcpy(p, &et, 4);
    memcpy(p + 4, &count, 8);
    size_t off = 12;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t len = lens ? lens[i] : strlen(strs[i]);
        memcpy(p + off, &len, 8);
        if (len) memcpy(p + off + 8, strs[i], (size_t)len);
        off += 8 + (size_t)len;
    }
    return put(w, key, PL_GGUF_ARRAY, p, (size_t)total, err);
}

pl_status pl_gguf_writer_add_tensor(pl_gguf_writer *w, const char *name, uint32_t type,
                                    uint32_t n_dims, const int64_t *ne, const void *data,
                                    pl_error *err)
{
    if (!w || !name || !ne || !data)
        return pl_fail(err, PL_ERR_INVALID_ARG, "writer, name, ne or data is NULL");
    size_t name_len = strlen(name);
    if (name_len == 0 || name_len > PL_GGUF_MAX_NAME)
        return pl_fail(err, PL_ERR_INVALID_ARG, "tensor name of %zu bytes: must be 1..%u", name_len,
                       PL_GGUF_MAX_NAME);
    if (!pl_type_supported(type))
        return pl_fail(err, PL_ERR_UNSUPPORTED, "tensor '%s': type %u (%s) is not implemented",
                       name, type, pl_type_name(type) ? pl_type_name(type) : "unknown");
    if (n_dims == 0 || n_dims > PL_GGUF_MAX_DIMS)
        return pl_fail(err, PL_ERR_INVALID_ARG, "tensor '%s': n_dims %u is not in 1..%u", name,
                       n_dims, PL_GGUF_MAX_DIMS);
    int64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] <= 0)
            return pl_fail(err, PL_ERR_INVALID_ARG, "tensor '%s': ne[%u] = %lld must be > 0", name,
                           d, (long long)ne[d]);
        if (!pl_mul_i64(n, ne[d], &n))
            return pl_fail(err, PL_ERR_LIMIT, "tensor '%s': element count overflows", name);
    }
    size_t row;
    pl_status s = pl_type_row_bytes(type, ne[0], &row, err);
    if (s) {
        char what[PL_GGUF_MAX_NAME + 16];
        snprintf(what, sizeof what, "tensor '%s'", name);
        pl_error_prefix(err, what);
        return s;
    }
    uint64_t bytes;
    if (!pl_mul_u64(row, (uint64_t)(n / ne[0]), &bytes))
        return pl_fail(err, PL_ERR_LIMIT, "tensor '%s': byte size overflows", name);
    for (size_t i = 0; i < w->n_t; i++)
        if (w->t[i].name_len == name_len && memcmp(w->t[i].name, name, name_len) == 0)
            return pl_fail(err, PL_ERR_INVALID_ARG, "duplicate tensor name '%s'", name);
    if (w->n_t >= PL_GGUF_MAX_TENSORS)
        return pl_fail(err, PL_ERR_LIMIT, "more than PL_GGUF_MAX_TENSORS (%u) tensors",
                       PL_GGUF_MAX_TENSORS);
    if (w->n_t == w->cap_t) {
        size_t cap = w->cap_t ? 2 * w->cap_t : 16;
        struct wtensor *t = pl_realloc(w->t, cap * sizeof *t);
        if (!t) return pl_fail(err, PL_ERR_NOMEM, "no memory for tensor '%s'", name);
        w->t = t;
        w->cap_t = cap;
    }
    char *nm = pl_malloc(name_len + 1);
    if (!nm) return pl_fail(err, PL_ERR_NOMEM, "no memory for tensor '%s'", name);
    memcpy(nm, name, name_len + 1);
    struct wtensor *t = &w->t[w->n_t++];
    memset(t, 0, sizeof *t);
    t->name = nm;
    t->name_len = name_len;
    t->type = type;
    t->n_dims = n_dims;
    for (uint32_t d = 0; d < 4; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    t->n_bytes = bytes;
    t->data = data;
    return pl_ok(err);
}

/* ---- emitting: one pass over a sink that either counts, copies or writes ---- */

typedef struct sink {
    uint8_t *buf; /* memory target, or NULL */
    FILE *f;      /* file target, or NULL */
    uint64_t off; /* bytes emitted so far */
    int failed;
} sink;

static void emit(sink *s, const void *p, uint64_t n)
{
    if (s->failed || n == 0) return;
    if (s->buf) memcpy(s->buf + s->off, p, (size_t)n);
    if (s->f && fwrite(p, 1, (size_t)n, s->f) != n) s->failed = 1;
    s->off += n;
}

static void emit_u32(sink *s, uint32_t v)
{
    emit(s, &v, 4);
}

static void emit_u64(sink *s, uint64_t v)
{
    emit(s, &v, 8);
}

static void emit_pad(sink *s, uint32_t align)
{
    static const uint8_t zeros[256];
    uint64_t pad = (align - s->off % align) % align;
    while (pad > 0) {
        uint64_t n = pad < sizeof zeros ? pad : sizeof zeros;
        emit(s, zeros, n);
        pad -= n;
    }
}

static uint32_t writer_alignment(const pl_gguf_writer *w)
{
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, "general.alignment") == 0 && w->kv[i].type == PL_GGUF_UINT32) {
            uint32_t a;
            memcpy(&a, w->kv[i].payload, 4);
            return a;
        }
    return PL_GGUF_DEFAULT_ALIGNMENT;
}

static void emit_all(const pl_gguf_writer *w, sink *s)
{
    uint32_t align = writer_alignment(w);
    emit(s, "GGUF", 4);
    emit_u32(s, w->version);
    emit_u64(s, w->n_t);
    emit_u64(s, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        emit_u64(s, w->kv[i].key_len);
        emit(s, w->kv[i].key, w->kv[i].key_len);
        emit_u32(s, w->kv[i].type);
        emit(s, w->kv[i].payload, w->kv[i].payload_len);
    }
    uint64_t data_off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const struct wtensor *t = &w->t[i];
        emit_u64(s, t->name_len);
        emit(s, t->name, t->name_len);
        emit_u32(s, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) emit_u64(s, (uint64_t)t->ne[d]);
        emit_u32(s, t->type);
        emit_u64(s, data_off);
        data_off += t->n_bytes;
        data_off += (align - data_off % align) % align;
    }
    emit_pad(s, align);
    for (size_t i = 0; i < w->n_t; i++) {
        emit(s, w->t[i].data, w->t[i].n_bytes);
        emit_pad(s, align);
    }
}

pl_status pl_gguf_writer_write_memory(const pl_gguf_writer *w, void **out, size_t *out_size,
                                      pl_error *err)
{
    if (!w || !out || !out_size)
        return pl_fail(err, PL_ERR_INVALID_ARG, "writer, out or out_size is NULL");
    *out = NULL;
    *out_size = 0;
    sink count = {0};
    emit_all(w, &count);
    if (count.off > SIZE_MAX)
        return pl_fail(err, PL_ERR_LIMIT, "file of %llu bytes does not fit in memory",
                       (unsigned long long)count.off);
    uint8_t *buf = pl_malloc((size_t)count.off);
    if (!buf)
        return pl_fail(err, PL_ERR_NOMEM, "no memory for a %llu-byte GGUF image",
                       (unsigned long long)count.off);
    sink mem = {.buf = buf};
    emit_all(w, &mem);
    *out = buf;
    *out_size = (size_t)count.off;
    return pl_ok(err);
}

pl_status pl_gguf_writer_write_file(const pl_gguf_writer *w, const char *path, pl_error *err)
{
    if (!w || !path) return pl_fail(err, PL_ERR_INVALID_ARG, "writer or path is NULL");
    size_t n = strlen(path);
    char *tmp = pl_malloc(n + 5);
    if (!tmp) return pl_fail(err, PL_ERR_NOMEM, "no memory for the temporary path");
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        pl_status s = pl_fail(err, PL_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
        pl_free(tmp);
        return s;
    }
    sink out = {.f = f};
    emit_all(w, &out);
    int e = out.failed ? errno : 0;
    if (fclose(f) != 0 && !out.failed) {
        out.failed = 1;
        e = errno;
    }
    if (out.failed) {
        remove(tmp);
        pl_status s = pl_fail(err, PL_ERR_IO, "writing '%s' failed: %s", tmp, strerror(e));
        pl_free(tmp);
        return s;
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        remove(tmp);
        pl_status s =
            pl_fail(err, PL_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(e));
        pl_free(tmp);
        return s;
    }
    pl_free(tmp);
    return pl_ok(err);
}
