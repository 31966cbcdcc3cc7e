/* gguf.c — GGUF v2/v3 reader: a pure parser over a byte range, plus an mmap wrapper.
 * Not a model loader: it knows nothing of architectures; model.c binds tensors by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "gguf.h"
#include "types.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "plumb reads GGUF values in place and needs a little-endian host"
#endif

#define GGUF_MAGIC "GGUF"

/* Smallest possible encodings, used to reject counts before any allocation:
 * a kv is key length (8) + one key byte + value type (4) + one value byte;
 * a tensor info is name length (8) + one name byte + n_dims (4) + one ne (8) + type (4)
 * + offset (8). */
#define MIN_KV_BYTES     14u
#define MIN_TENSOR_BYTES 33u

struct gguf_kv {
    pl_str key;
    pl_gguf_type type;
    const uint8_t *value; /* scalar bytes, string bytes, or first array element */
    pl_str str;           /* PL_GGUF_STRING */
    pl_gguf_type elem_type;
    uint64_t count;     /* array elements */
    uint64_t *str_offs; /* string arrays: offset of each element's length field */
};

struct pl_gguf {
    const uint8_t *data;
    size_t size;
    pl_mapping map; /* set when pl_gguf_open mapped the file */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    uint64_t n_kv;
    struct gguf_kv *kv;
    uint64_t n_tensors;
    pl_tensor_info *tensors;
    uint32_t *kv_hash; /* open addressing: index + 1, 0 = empty; kv_hash_mask + 1 slots */
    uint64_t kv_hash_mask;
    uint32_t *tensor_hash;
    uint64_t tensor_hash_mask;
};

static const char *const gguf_type_names[PL_GGUF_TYPE_COUNT] = {
    [PL_GGUF_UINT8] = "uint8",     [PL_GGUF_INT8] = "int8",     [PL_GGUF_UINT16] = "uint16",
    [PL_GGUF_INT16] = "int16",     [PL_GGUF_UINT32] = "uint32", [PL_GGUF_INT32] = "int32",
    [PL_GGUF_FLOAT32] = "float32", [PL_GGUF_BOOL] = "bool",     [PL_GGUF_STRING] = "string",
    [PL_GGUF_ARRAY] = "array",     [PL_GGUF_UINT64] = "uint64", [PL_GGUF_INT64] = "int64",
    [PL_GGUF_FLOAT64] = "float64",
};

const char *pl_gguf_type_name(uint32_t type)
{
    return type < PL_GGUF_TYPE_COUNT ? gguf_type_names[type] : NULL;
}

size_t pl_gguf_type_size(uint32_t type)
{
    switch (type) {
    case PL_GGUF_UINT8:
    case PL_GGUF_INT8:
    case PL_GGUF_BOOL:
        return 1;
    case PL_GGUF_UINT16:
    case PL_GGUF_INT16:
        return 2;
    case PL_GGUF_UINT32:
    case PL_GGUF_INT32:
    case PL_GGUF_FLOAT32:
        return 4;
    case PL_GGUF_UINT64:
    case PL_GGUF_INT64:
    case PL_GGUF_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

/* ---- type traits, public face ---- */

const char *pl_type_name(uint32_t type)
{
    const struct pl_type_traits *t = pl_type_traits_of(type);
    return t ? t->name : NULL;
}

int pl_type_supported(uint32_t type)
{
    const struct pl_type_traits *t = pl_type_traits_of(type);
    return t && t->block_size > 0;
}

int64_t pl_type_block_size(uint32_t type)
{
    return pl_type_supported(type) ? pl_type_traits_of(type)->block_size : 0;
}

size_t pl_type_block_bytes(uint32_t type)
{
    return pl_type_supported(type) ? pl_type_traits_of(type)->block_bytes : 0;
}

pl_status pl_type_row_bytes(uint32_t type, int64_t n, size_t *out, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = 0;
    const struct pl_type_traits *t = pl_type_traits_of(type);
    if (!t || !t->name) return pl_fail(err, PL_ERR_FORMAT, "unknown tensor type id %u", type);
    if (t->block_size == 0)
        return pl_fail(err, PL_ERR_UNSUPPORTED, "tensor type %s (%u) is not implemented", t->name,
                       type);
    if (n <= 0 || n % t->block_size != 0)
        return pl_fail(err, PL_ERR_FORMAT,
                       "row of %lld elements is not a positive multiple of %s's block size %lld",
                       (long long)n, t->name, (long long)t->block_size);
    uint64_t bytes;
    if (!pl_mul_u64((uint64_t)(n / t->block_size), t->block_bytes, &bytes) || bytes > SIZE_MAX)
        return pl_fail(err, PL_ERR_LIMIT, "row of %lld %s elements overflows size_t", (long long)n,
                       t->name);
    *out = (size_t)bytes;
    return PL_OK;
}

/* ---- hashing (FNV-1a) for key and tensor-name lookups ---- */

static uint64_t hash_bytes(const char *p, uint64_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
    return h;
}

static int str_eq(pl_str a, const char *b, uint64_t blen)
{
    return a.len == blen && memcmp(a.ptr, b, blen) == 0;
}

/* Slot count: a power of two at least twice n, so probes stay short. */
static uint64_t hash_slots(uint64_t n)
{
    uint64_t s = 16;
    while (s < 2 * n) s <<= 1;
    return s;
}

/* Inserts index i under name; returns the index + 1 of an existing equal name, or 0. */
static uint32_t hash_insert(uint32_t *table, uint64_t mask,
                            pl_str (*name_of)(const pl_gguf *, uint32_t), const pl_gguf *g,
                            uint32_t i)
{
    pl_str s = name_of(g, i);
    for (uint64_t h = hash_bytes(s.ptr, s.len) & mask;; h = (h + 1) & mask) {
        if (table[h] == 0) {
            table[h] = i + 1;
            return 0;
        }
        if (str_eq(name_of(g, table[h] - 1), s.ptr, s.len)) return table[h];
    }
}

static int64_t hash_find(const uint32_t *table, uint64_t mask,
                         pl_str (*name_of)(const pl_gguf *, uint32_t), const pl_gguf *g,
                         const char *name)
{
    if (!table || !name) return -1;
    uint64_t len = strlen(name);
    for (uint64_t h = hash_bytes(name, len) & mask; table[h] != 0; h = (h + 1) & mask)
        if (str_eq(name_of(g, table[h] - 1), name, len)) return (int64_t)table[h] - 1;
    return -1;
}

static pl_str kv_name(const pl_gguf *g, uint32_t i)
{
    return g->kv[i].key;
}

static pl_str tensor_name(const pl_gguf *g, uint32_t i)
{
    return g->tensors[i].name;
}

/* ---- the byte cursor ---- */

typedef struct reader {
    const uint8_t *base;
    size_t size;
    size_t off;
    pl_error *err;
} reader;

static uint64_t remaining(const reader *r)
{
    return (uint64_t)(r->size - r->off);
}

/* Fails unless n more bytes exist; `what` names the field for the message. */
static pl_status need(reader *r, uint64_t n, const char *what)
{
    if (n > remaining(r))
        return pl_fail(r->err, PL_ERR_FORMAT,
                       "%s: needs %llu bytes at offset %zu, but only %llu remain (file is %zu "
                       "bytes)",
                       what, (unsigned long long)n, r->off, (unsigned long long)remaining(r),
                       r->size);
    return PL_OK;
}

static pl_status read_u32(reader *r, uint32_t *v, const char *what)
{
    pl_status s = need(r, 4, what);
    if (s) return s;
    memcpy(v, r->base + r->off, 4);
    r->off += 4;
    return PL_OK;
}

static pl_status read_u64(reader *r, uint64_t *v, const char *what)
{
    pl_status s = need(r, 8, what);
    if (s) return s;
    memcpy(v, r->base + r->off, 8);
    r->off += 8;
    return PL_OK;
}

/* A GGUF string: u64 length then bytes. `limit` is the named constant that bounds it. */
static pl_status read_str(reader *r, pl_str *out, uint64_t limit, const char *limit_name,
                          const char *what)
{
    size_t at = r->off;
    uint64_t len;
    pl_status s = read_u64(r, &len, what);
    if (s) return s;
    if (len > limit)
        return pl_fail(r->err, PL_ERR_LIMIT,
                       "%s: string length %llu at offset %zu exceeds %s (%llu)", what,
                       (unsigned long long)len, at, limit_name, (unsigned long long)limit);
    if (len > remaining(r))
        return pl_fail(r->err, PL_ERR_FORMAT,
                       "%s: string length %llu at offset %zu runs past end of file (%llu bytes "
                       "remain)",
                       what, (unsigned long long)len, at, (unsigned long long)remaining(r));
    out->ptr = (const char *)r->base + r->off;
    out->len = len;
    r->off += (size_t)len;
    return PL_OK;
}

/* Keys and tensor names are looked up as C strings: no empty ones, no NUL inside. */
static pl_status check_name(reader *r, pl_str s, size_t at, const char *what)
{
    if (s.len == 0) return pl_fail(r->err, PL_ERR_FORMAT, "%s at offset %zu is empty", what, at);
    if (memchr(s.ptr, '\0', s.len))
        return pl_fail(r->err, PL_ERR_FORMAT, "%s at offset %zu contains a NUL byte", what, at);
    return PL_OK;
}

static pl_status check_bools(reader *r, const uint8_t *p, uint64_t n, const char *what)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i] > 1)
            return pl_fail(r->err, PL_ERR_FORMAT, "%s: bool value %u at offset %zu is not 0 or 1",
                           what, p[i], (size_t)(p + i - r->base));
    return PL_OK;
}

/* ---- metadata ---- */

static pl_status read_array(reader *r, struct gguf_kv *kv, const char *what)
{
    size_t at = r->off;
    uint32_t et;
    uint64_t count;
    pl_status s = read_u32(r, &et, what);
    if (s) return s;
    if (et == PL_GGUF_ARRAY)
        return pl_fail(r->err, PL_ERR_UNSUPPORTED,
                       "%s: nested arrays (array of array at offset %zu) are not supported", what,
                       at);
    if (et >= PL_GGUF_TYPE_COUNT)
        return pl_fail(r->err, PL_ERR_FORMAT,
                       "%s: unknown array element type %u at offset %zu (known: 0..%d)", what, et,
                       at, PL_GGUF_TYPE_COUNT - 1);
    if ((s = read_u64(r, &count, what))) return s;
    if (count > PL_GGUF_MAX_ARRAY)
        return pl_fail(r->err, PL_ERR_LIMIT,
                       "%s: array count %llu at offset %zu exceeds PL_GGUF_MAX_ARRAY (%u)", what,
                       (unsigned long long)count, at + 4, PL_GGUF_MAX_ARRAY);
    kv->elem_type = (pl_gguf_type)et;
    kv->count = count;
    kv->value = r->base + r->off;
    if (et != PL_GGUF_STRING) {
        uint64_t bytes;
        if (!pl_mul_u64(count, pl_gguf_type_size(et), &bytes) || bytes > remaining(r))
            return pl_fail(r->err, PL_ERR_FORMAT,
                           "%s: array of %llu %s at offset %zu runs past end of file (%llu bytes "
                           "remain)",
                           what, (unsigned long long)count, gguf_type_names[et], at,
                           (unsigned long long)remaining(r));
        if (et == PL_GGUF_BOOL && (s = check_bools(r, kv->value, count, what))) return s;
        r->off += (size_t)bytes;
        return PL_OK;
    }
    /* Each string needs at least its 8-byte length: reject absurd counts before allocating. */
    if (count > remaining(r) / 8)
        return pl_fail(r->err, PL_ERR_FORMAT,
                       "%s: array of %llu strings at offset %zu cannot fit in the %llu bytes that "
                       "remain",
                       what, (unsigned long long)count, at, (unsigned long long)remaining(r));
    if (count > 0) {
        kv->str_offs = pl_malloc((size_t)count * sizeof *kv->str_offs);
        if (!kv->str_offs)
            return pl_fail(r->err, PL_ERR_NOMEM, "%s: no memory for %llu string offsets", what,
                           (unsigned long long)count);
    }
    for (uint64_t i = 0; i < count; i++) {
        pl_str tmp;
        kv->str_offs[i] = r->off;
        if ((s = read_str(r, &tmp, PL_GGUF_MAX_STRING, "PL_GGUF_MAX_STRING", what))) {
            size_t n = strlen(r->err ? r->err->msg : "");
            if (r->err && n < sizeof r->err->msg - 32)
                snprintf(r->err->msg + n, sizeof r->err->msg - n, " (element %llu)",
                         (unsigned long long)i);
            return s;
        }
    }
    return PL_OK;
}

static pl_status read_kv(reader *r, struct gguf_kv *kv, uint64_t i)
{
    char what[96];
    size_t at = r->off;
    snprintf(what, sizeof what, "metadata key %llu", (unsigned long long)i);
    pl_status s = read_str(r, &kv->key, PL_GGUF_MAX_KEY, "PL_GGUF_MAX_KEY", what);
    if (s) return s;
    if ((s = check_name(r, kv->key, at, what))) return s;
    /* From here on, name the key itself (truncated to keep the message readable). */
    snprintf(what, sizeof what, "metadata key %llu '%.*s'", (unsigned long long)i,
             (int)(kv->key.len > 60 ? 60 : kv->key.len), kv->key.ptr);
    uint32_t type;
    size_t type_at = r->off;
    if ((s = read_u32(r, &type, what))) return s;
    if (type >= PL_GGUF_TYPE_COUNT)
        return pl_fail(r->err, PL_ERR_FORMAT,
                       "%s: unknown value type %u at offset %zu (known: 0..%d)", what, type,
                       type_at, PL_GGUF_TYPE_COUNT - 1);
    kv->type = (pl_gguf_type)type;
    if (type == PL_GGUF_STRING) {
        if ((s = read_str(r, &kv->str, PL_GGUF_MAX_STRING, "PL_GGUF_MAX_STRING", what))) return s;
        kv->value = (const uint8_t *)kv->str.ptr;
        return PL_OK;
    }
    if (type == PL_GGUF_ARRAY) return read_array(r, kv, what);
    size_t n = pl_gguf_type_size(type);
    if ((s = need(r, n, what))) return s;
    kv->value = r->base + r->off;
    if (type == PL_GGUF_BOOL && (s = check_bools(r, kv->value, 1, what))) return s;
    r->off += n;
    return PL_OK;
}

/* ---- tensor infos ---- */

static pl_status read_tensor_info(reader *r, pl_gguf *g, uint64_t i)
{
    pl_tensor_info *t = &g->tensors[i];
    char what[128];
    size_t at = r->off;
    snprintf(what, sizeof what, "tensor %llu", (unsigned long long)i);
    pl_status s = read_str(r, &t->name, PL_GGUF_MAX_NAME, "PL_GGUF_MAX_NAME", what);
    if (s) return s;
    if ((s = check_name(r, t->name, at, "tensor name"))) return s;
    snprintf(what, sizeof what, "tensor %llu '%.*s'", (unsigned long long)i, (int)t->name.len,
             t->name.ptr);
    size_t dims_at = r->off;
    if ((s = read_u32(r, &t->n_dims, what))) return s;
    if (t->n_dims == 0 || t->n_dims > PL_GGUF_MAX_DIMS)
        return pl_fail(r->err, PL_ERR_FORMAT, "%s: n_dims %u at offset %zu is not in 1..%u", what,
                       t->n_dims, dims_at, PL_GGUF_MAX_DIMS);
    int64_t n_elems = 1;
    for (uint32_t d = 0; d < 4; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        uint64_t v;
        size_t ne_at = r->off;
        if ((s = read_u64(r, &v, what))) return s;
        if (v == 0 || v > (uint64_t)INT64_MAX)
            return pl_fail(r->err, PL_ERR_FORMAT, "%s: ne[%u] = %lld at offset %zu must be > 0",
                           what, d, (long long)v, ne_at);
        t->ne[d] = (int64_t)v;
        if (!pl_mul_i64(n_elems, t->ne[d], &n_elems))
            return pl_fail(r->err, PL_ERR_FORMAT,
                           "%s: element count overflows int64 at ne[%u] (offset %zu)", what, d,
                           ne_at);
    }
    size_t type_at = r->off;
    if ((s = read_u32(r, &t->type, what))) return s;
    const struct pl_type_traits *tr = pl_type_traits_of(t->type);
    if (!tr || !tr->name)
        return pl_fail(r->err, PL_ERR_FORMAT, "%s: unknown tensor type id %u at offset %zu", what,
                       t->type, type_at);
    if (tr->block_size == 0)
        return pl_fail(r->err, PL_ERR_UNSUPPORTED,
                       "%s: tensor type %s (%u) is not implemented by plumb", what, tr->name,
                       t->type);
    if (t->ne[0] % tr->block_size != 0)
        return pl_fail(r->err, PL_ERR_FORMAT,
                       "%s: row length ne[0] = %lld is not a multiple of %s's block size %lld",
                       what, (long long)t->ne[0], tr->name, (long long)tr->block_size);
    uint64_t bytes;
    if (!pl_mul_u64((uint64_t)(n_elems / tr->block_size), tr->block_bytes, &bytes))
        return pl_fail(r->err, PL_ERR_FORMAT, "%s: byte size overflows uint64", what);
    t->n_bytes = bytes;
    size_t off_at = r->off;
    if ((s = read_u64(r, &t->offset, what))) return s;
    if (t->offset % g->alignment != 0)
        return pl_fail(r->err, PL_ERR_FORMAT,
                       "%s: data offset %llu (field at offset %zu) is not a multiple of the "
                       "alignment %u",
                       what, (unsigned long long)t->offset, off_at, g->alignment);
    return PL_OK;
}

static pl_status read_alignment(pl_gguf *g, pl_error *err)
{
    g->alignment = PL_GGUF_DEFAULT_ALIGNMENT;
    int64_t i = pl_gguf_find_key(g, "general.alignment");
    if (i < 0) return PL_OK;
    const struct gguf_kv *kv = &g->kv[i];
    if (kv->type != PL_GGUF_UINT32)
        return pl_fail(err, PL_ERR_FORMAT, "general.alignment has type %s, expected uint32",
                       gguf_type_names[kv->type]);
    uint32_t a;
    memcpy(&a, kv->value, 4);
    if (a == 0 || (a & (a - 1)) != 0)
        return pl_fail(err, PL_ERR_FORMAT, "general.alignment = %u is not a power of two", a);
    if (a > PL_GGUF_MAX_ALIGNMENT)
        return pl_fail(err, PL_ERR_LIMIT,
                       "general.alignment = %u exceeds PL_GGUF_MAX_ALIGNMENT (%u)", a,
                       PL_GGUF_MAX_ALIGNMENT);
    g->alignment = a;
    return PL_OK;
}

/* In-place heapsort of tensor indices by data offset: no allocation, O(n log n). */
static void sift_down(uint32_t *v, const pl_tensor_info *t, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n) return;
        if (child + 1 < n && t[v[child + 1]].offset > t[v[child]].offset) child++;
        if (t[v[root]].offset >= t[v[child]].offset) return;
        uint32_t tmp = v[root];
        v[root] = v[child];
        v[child] = tmp;
        root = child;
    }
}

static void sort_by_offset(uint32_t *v, const pl_tensor_info *t, size_t n)
{
    for (size_t i = n / 2; i-- > 0;) sift_down(v, t, i, n);
    for (size_t end = n; end-- > 1;) {
        uint32_t tmp = v[0];
        v[0] = v[end];
        v[end] = tmp;
        sift_down(v, t, 0, end);
    }
}

/* Tensor ranges: inside the data section, and no two overlapping. */
static pl_status check_ranges(pl_gguf *g, pl_error *err)
{
    uint64_t data_bytes = g->size - g->data_offset;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        pl_tensor_info *t = &g->tensors[i];
        uint64_t end;
        if (!pl_add_u64(t->offset, t->n_bytes, &end) || end > data_bytes)
            return pl_fail(err, PL_ERR_FORMAT,
                           "tensor '%.*s': data [%llu, %llu + %llu) past end of file (data "
                           "section holds %llu bytes from offset %llu)",
                           (int)t->name.len, t->name.ptr, (unsigned long long)t->offset,
                           (unsigned long long)t->offset, (unsigned long long)t->n_bytes,
                           (unsigned long long)data_bytes, (unsigned long long)g->data_offset);
        t->data = g->data + g->data_offset + t->offset;
    }
    if (g->n_tensors < 2) return PL_OK;
    uint32_t *order = pl_malloc((size_t)g->n_tensors * sizeof *order);
    if (!order)
        return pl_fail(err, PL_ERR_NOMEM, "no memory to sort %llu tensor ranges",
                       (unsigned long long)g->n_tensors);
    for (uint64_t i = 0; i < g->n_tensors; i++) order[i] = (uint32_t)i;
    sort_by_offset(order, g->tensors, (size_t)g->n_tensors);
    pl_status s = PL_OK;
    for (uint64_t i = 1; i < g->n_tensors && s == PL_OK; i++) {
        const pl_tensor_info *a = &g->tensors[order[i - 1]], *b = &g->tensors[order[i]];
        if (a->offset + a->n_bytes > b->offset)
            s = pl_fail(
                err, PL_ERR_FORMAT, "tensors '%.*s' [%llu, %llu) and '%.*s' [%llu, %llu) overlap",
                (int)a->name.len, a->name.ptr, (unsigned long long)a->offset,
                (unsigned long long)(a->offset + a->n_bytes), (int)b->name.len, b->name.ptr,
                (unsigned long long)b->offset, (unsigned long long)(b->offset + b->n_bytes));
    }
    pl_free(order);
    return s;
}

static pl_status build_hashes(pl_gguf *g, pl_error *err)
{
    uint64_t slots = hash_slots(g->n_kv);
    g->kv_hash = pl_calloc((size_t)slots, sizeof *g->kv_hash);
    if (!g->kv_hash) return pl_fail(err, PL_ERR_NOMEM, "no memory for the metadata index");
    g->kv_hash_mask = slots - 1;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        uint32_t dup = hash_insert(g->kv_hash, g->kv_hash_mask, kv_name, g, (uint32_t)i);
        if (dup)
            return pl_fail(err, PL_ERR_FORMAT, "duplicate metadata key '%.*s' (keys %u and %llu)",
                           (int)g->kv[i].key.len, g->kv[i].key.ptr, dup - 1, (unsigned long long)i);
    }
    return PL_OK;
}

static pl_status build_tensor_hash(pl_gguf *g, pl_error *err)
{
    uint64_t slots = hash_slots(g->n_tensors);
    g->tensor_hash = pl_calloc((size_t)slots, sizeof *g->tensor_hash);
    if (!g->tensor_hash) return pl_fail(err, PL_ERR_NOMEM, "no memory for the tensor index");
    g->tensor_hash_mask = slots - 1;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        uint32_t dup =
            hash_insert(g->tensor_hash, g->tensor_hash_mask, tensor_name, g, (uint32_t)i);
        if (dup)
            return pl_fail(err, PL_ERR_FORMAT, "duplicate tensor name '%.*s' (tensors %u and %llu)",
                           (int)g->tensors[i].name.len, g->tensors[i].name.ptr, dup - 1,
                           (unsigned long long)i);
    }
    return PL_OK;
}

static pl_status read_header(reader *r, pl_gguf *g, uint64_t *n_tensors, uint64_t *n_kv)
{
    if (r->size < 4)
        return pl_fail(r->err, PL_ERR_FORMAT,
                       "file is %zu bytes, too small for the GGUF magic (4 bytes)", r->size);
    if (memcmp(r->base, GGUF_MAGIC, 4) != 0)
        return pl_fail(r->err, PL_ERR_FORMAT,
                       "bad magic at offset 0: %02x %02x %02x %02x, expected 'GGUF' (47 47 55 46)",
                       r->base[0], r->base[1], r->base[2], r->base[3]);
    r->off = 4;
    pl_status s = read_u32(r, &g->version, "version");
    if (s) return s;
    uint32_t v = g->version;
    uint32_t swapped = __builtin_bswap32(v);
    if (v == 1)
        return pl_fail(r->err, PL_ERR_UNSUPPORTED,
                       "GGUF version 1 (offset 4) is not supported: re-convert the model to v3");
    if (v != 2 && v != 3) {
        if (swapped >= 1 && swapped <= 3)
            return pl_fail(r->err, PL_ERR_UNSUPPORTED,
                           "big-endian GGUF (version %u stored big-endian at offset 4) is not "
                           "supported",
                           swapped);
        return pl_fail(r->err, PL_ERR_UNSUPPORTED,
                       "GGUF version %u at offset 4 is not supported (plumb reads 2 and 3)", v);
    }
    if ((s = read_u64(r, n_tensors, "tensor count"))) return s;
    if ((s = read_u64(r, n_kv, "metadata count"))) return s;
    if (*n_tensors > PL_GGUF_MAX_TENSORS)
        return pl_fail(r->err, PL_ERR_LIMIT,
                       "tensor count %llu at offset 8 exceeds PL_GGUF_MAX_TENSORS (%u)",
                       (unsigned long long)*n_tensors, PL_GGUF_MAX_TENSORS);
    if (*n_kv > PL_GGUF_MAX_KV)
        return pl_fail(r->err, PL_ERR_LIMIT,
                       "metadata count %llu at offset 16 exceeds PL_GGUF_MAX_KV (%u)",
                       (unsigned long long)*n_kv, PL_GGUF_MAX_KV);
    uint64_t min_bytes = *n_kv * MIN_KV_BYTES + *n_tensors * MIN_TENSOR_BYTES;
    if (min_bytes > remaining(r))
        return pl_fail(r->err, PL_ERR_FORMAT,
                       "%llu metadata pairs and %llu tensor infos need at least %llu bytes, but "
                       "only %llu remain after the header",
                       (unsigned long long)*n_kv, (unsigned long long)*n_tensors,
                       (unsigned long long)min_bytes, (unsigned long long)remaining(r));
    return PL_OK;
}

static pl_status parse(pl_gguf *g, pl_error *err)
{
    reader r = {.base = g->data, .size = g->size, .off = 0, .err = err};
    uint64_t n_tensors = 0, n_kv = 0;
    pl_status s = read_header(&r, g, &n_tensors, &n_kv);
    if (s) return s;

    g->kv = pl_calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv);
    if (!g->kv)
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %llu metadata pairs",
                       (unsigned long long)n_kv);
    for (uint64_t i = 0; i < n_kv; i++) {
        g->n_kv = i + 1; /* so a failure frees what this kv allocated */
        if ((s = read_kv(&r, &g->kv[i], i))) return s;
    }
    g->n_kv = n_kv;
    if ((s = build_hashes(g, err))) return s;
    if ((s = read_alignment(g, err))) return s;

    g->tensors = pl_calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *g->tensors);
    if (!g->tensors)
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %llu tensor infos",
                       (unsigned long long)n_tensors);
    g->n_tensors = n_tensors;
    for (uint64_t i = 0; i < n_tensors; i++)
        if ((s = read_tensor_info(&r, g, i))) return s;
    if ((s = build_tensor_hash(g, err))) return s;

    uint64_t pad = (g->alignment - r.off % g->alignment) % g->alignment;
    g->data_offset = r.off + pad;
    if (g->data_offset > g->size) {
        /* Only a file with tensors needs its data section; tokenizer-only files may stop. */
        if (n_tensors > 0)
            return pl_fail(err, PL_ERR_FORMAT,
                           "data section starts at offset %llu (aligned to %u), past end of "
                           "file (%zu bytes)",
                           (unsigned long long)g->data_offset, g->alignment, g->size);
        g->data_offset = g->size;
    }
    return check_ranges(g, err);
}

pl_status pl_gguf_parse(pl_gguf **out, const void *data, size_t size, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!data && size > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "data is NULL");
    pl_gguf *g = pl_calloc(1, sizeof *g);
    if (!g) return pl_fail(err, PL_ERR_NOMEM, "no memory for the GGUF view");
    g->data = data ? data : (const uint8_t *)"";
    g->size = size;
    pl_status s = parse(g, err);
    if (s) {
        pl_gguf_free(g);
        return s;
    }
    *out = g;
    return pl_ok(err);
}

pl_status pl_gguf_open(pl_gguf **out, const char *path, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    pl_mapping m;
    pl_status s = pl_map_file(&m, path, err);
    if (s) return s;
    s = pl_gguf_parse(out, m.data, m.size, err);
    if (s) {
        /* Prefix the path so the user knows which file was bad. */
        pl_error_prefix(err, path);
        pl_unmap_file(&m);
        return s;
    }
    (*out)->map = m;
    return PL_OK;
}

void pl_gguf_release(const pl_gguf *g, const void *p, size_t n)
{
    if (g) pl_mapping_release(&g->map, p, n);
}

void pl_gguf_free(pl_gguf *g)
{
    if (!g) return;
    if (g->kv)
        for (uint64_t i = 0; i < g->n_kv; i++) pl_free(g->kv[i].str_offs);
    pl_free(g->kv);
    pl_free(g->tensors);
    pl_free(g->kv_hash);
    pl_free(g->tensor_hash);
    pl_unmap_file(&g->map);
    pl_free(g);
}

/* ---- accessors ---- */

uint32_t pl_gguf_version(const pl_gguf *g)
{
    return g ? g->version : 0;
}

uint32_t pl_gguf_alignment(const pl_gguf *g)
{
    return g ? g->alignment : 0;
}

uint64_t pl_gguf_data_offset(const pl_gguf *g)
{
    return g ? g->data_offset : 0;
}

size_t pl_gguf_size(const pl_gguf *g)
{
    return g ? g->size : 0;
}

uint64_t pl_gguf_n_kv(const pl_gguf *g)
{
    return g ? g->n_kv : 0;
}

pl_str pl_gguf_kv_key(const pl_gguf *g, uint64_t i)
{
    pl_str none = {"", 0};
    return g && i < g->n_kv ? g->kv[i].key : none;
}

pl_gguf_type pl_gguf_kv_type(const pl_gguf *g, uint64_t i)
{
    return g && i < g->n_kv ? g->kv[i].type : PL_GGUF_TYPE_COUNT;
}

int64_t pl_gguf_find_key(const pl_gguf *g, const char *key)
{
    return g ? hash_find(g->kv_hash, g->kv_hash_mask, kv_name, g, key) : -1;
}

static pl_status kv_at(const pl_gguf *g, uint64_t i, pl_gguf_type type, const struct gguf_kv **out,
                       pl_error *err)
{
    if (!g) return pl_fail(err, PL_ERR_INVALID_ARG, "gguf is NULL");
    if (i >= g->n_kv)
        return pl_fail(err, PL_ERR_INVALID_ARG, "metadata index %llu out of range (%llu keys)",
                       (unsigned long long)i, (unsigned long long)g->n_kv);
    const struct gguf_kv *kv = &g->kv[i];
    if (kv->type != type)
        return pl_fail(err, PL_ERR_TYPE, "key '%.*s' has type %s, expected %s", (int)kv->key.len,
                       kv->key.ptr, gguf_type_names[kv->type], gguf_type_names[type]);
    *out = kv;
    return PL_OK;
}

static pl_status lookup(const pl_gguf *g, const char *key, pl_gguf_type type,
                        const struct gguf_kv **out, pl_error *err)
{
    if (!g || !key) return pl_fail(err, PL_ERR_INVALID_ARG, "gguf or key is NULL");
    int64_t i = pl_gguf_find_key(g, key);
    if (i < 0)
        return pl_fail(err, PL_ERR_NOT_FOUND, "metadata key '%s' (%s) not found", key,
                       gguf_type_names[type]);
    return kv_at(g, (uint64_t)i, type, out, err);
}

pl_status pl_gguf_kv_scalar(const pl_gguf *g, uint64_t i, pl_gguf_type type, void *out,
                            pl_error *err)
{
    const struct gguf_kv *kv = NULL;
    if (!out || pl_gguf_type_size(type) == 0)
        return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL or type %u is not a scalar", type);
    pl_status s = kv_at(g, i, type, &kv, err);
    if (s) return s;
    memcpy(out, kv->value, pl_gguf_type_size(type));
    return PL_OK;
}

pl_status pl_gguf_kv_string(const pl_gguf *g, uint64_t i, pl_str *out, pl_error *err)
{
    const struct gguf_kv *kv = NULL;
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    pl_status s = kv_at(g, i, PL_GGUF_STRING, &kv, err);
    if (s) return s;
    *out = kv->str;
    return PL_OK;
}

static void fill_array(const pl_gguf *g, uint64_t i, pl_gguf_array *out)
{
    const struct gguf_kv *kv = &g->kv[i];
    out->type = kv->elem_type;
    out->count = kv->count;
    out->data = kv->elem_type == PL_GGUF_STRING ? NULL : kv->value;
    out->owner = g;
    out->kv_index = (uint32_t)i;
}

pl_status pl_gguf_kv_array(const pl_gguf *g, uint64_t i, pl_gguf_array *out, pl_error *err)
{
    const struct gguf_kv *kv = NULL;
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    pl_status s = kv_at(g, i, PL_GGUF_ARRAY, &kv, err);
    if (s) return s;
    fill_array(g, i, out);
    return PL_OK;
}

#define DEFINE_GET(fn, ctype, gtype)                                                               \
    pl_status fn(const pl_gguf *g, const char *key, ctype *out, pl_error *err)                     \
    {                                                                                              \
        const struct gguf_kv *kv = NULL;                                                           \
        if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");                          \
        pl_status s = lookup(g, key, gtype, &kv, err);                                             \
        if (s) return s;                                                                           \
        memcpy(out, kv->value, sizeof(ctype));                                                     \
        return PL_OK;                                                                              \
    }

DEFINE_GET(pl_gguf_get_u8, uint8_t, PL_GGUF_UINT8)
DEFINE_GET(pl_gguf_get_i8, int8_t, PL_GGUF_INT8)
DEFINE_GET(pl_gguf_get_u16, uint16_t, PL_GGUF_UINT16)
DEFINE_GET(pl_gguf_get_i16, int16_t, PL_GGUF_INT16)
DEFINE_GET(pl_gguf_get_u32, uint32_t, PL_GGUF_UINT32)
DEFINE_GET(pl_gguf_get_i32, int32_t, PL_GGUF_INT32)
DEFINE_GET(pl_gguf_get_u64, uint64_t, PL_GGUF_UINT64)
DEFINE_GET(pl_gguf_get_i64, int64_t, PL_GGUF_INT64)
DEFINE_GET(pl_gguf_get_f32, float, PL_GGUF_FLOAT32)
DEFINE_GET(pl_gguf_get_f64, double, PL_GGUF_FLOAT64)

pl_status pl_gguf_get_bool(const pl_gguf *g, const char *key, int *out, pl_error *err)
{
    const struct gguf_kv *kv = NULL;
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    pl_status s = lookup(g, key, PL_GGUF_BOOL, &kv, err);
    if (s) return s;
    *out = kv->value[0] != 0;
    return PL_OK;
}

pl_status pl_gguf_get_string(const pl_gguf *g, const char *key, pl_str *out, pl_error *err)
{
    const struct gguf_kv *kv = NULL;
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    pl_status s = lookup(g, key, PL_GGUF_STRING, &kv, err);
    if (s) return s;
    *out = kv->str;
    return PL_OK;
}

pl_status pl_gguf_get_array(const pl_gguf *g, const char *key, pl_gguf_array *out, pl_error *err)
{
    const struct gguf_kv *kv = NULL;
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    pl_status s = lookup(g, key, PL_GGUF_ARRAY, &kv, err);
    if (s) return s;
    fill_array(g, (uint64_t)(kv - g->kv), out);
    return PL_OK;
}

static pl_status array_check(const pl_gguf_array *a, uint64_t i, pl_error *err)
{
    if (!a || !a->owner || a->kv_index >= a->owner->n_kv)
        return pl_fail(err, PL_ERR_INVALID_ARG, "array handle is NULL or stale");
    /* The handle is the caller's copy: bound the index by the file, not by a->count. */
    const struct gguf_kv *kv = &a->owner->kv[a->kv_index];
    if (kv->type != PL_GGUF_ARRAY)
        return pl_fail(err, PL_ERR_INVALID_ARG, "array handle does not name an array");
    if (i >= a->count || i >= kv->count) {
        pl_str k = kv->key;
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "index %llu out of range for array '%.*s' (%llu "
                       "elements)",
                       (unsigned long long)i, (int)k.len, k.ptr, (unsigned long long)kv->count);
    }
    return PL_OK;
}

pl_status pl_gguf_array_string(const pl_gguf_array *a, uint64_t i, pl_str *out, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    pl_status s = array_check(a, i, err);
    if (s) return s;
    const struct gguf_kv *kv = &a->owner->kv[a->kv_index];
    if (kv->elem_type != PL_GGUF_STRING)
        return pl_fail(err, PL_ERR_TYPE, "array '%.*s' holds %s, not string", (int)kv->key.len,
                       kv->key.ptr, gguf_type_names[kv->elem_type]);
    const uint8_t *p = a->owner->data + kv->str_offs[i];
    memcpy(&out->len, p, 8);
    out->ptr = (const char *)p + 8;
    return PL_OK;
}

pl_status pl_gguf_array_elem(const pl_gguf_array *a, uint64_t i, void *out, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    pl_status s = array_check(a, i, err);
    if (s) return s;
    const struct gguf_kv *kv = &a->owner->kv[a->kv_index];
    size_t n = pl_gguf_type_size(kv->elem_type);
    if (n == 0)
        return pl_fail(err, PL_ERR_TYPE, "array '%.*s' holds strings: use pl_gguf_array_string",
                       (int)kv->key.len, kv->key.ptr);
    memcpy(out, kv->value + i * n, n);
    return PL_OK;
}

uint64_t pl_gguf_n_tensors(const pl_gguf *g)
{
    return g ? g->n_tensors : 0;
}

pl_status pl_gguf_tensor(const pl_gguf *g, uint64_t i, pl_tensor_info *out, pl_error *err)
{
    if (!g || !out) return pl_fail(err, PL_ERR_INVALID_ARG, "gguf or out is NULL");
    if (i >= g->n_tensors)
        return pl_fail(err, PL_ERR_INVALID_ARG, "tensor index %llu out of range (%llu tensors)",
                       (unsigned long long)i, (unsigned long long)g->n_tensors);
    *out = g->tensors[i];
    return PL_OK;
}

int64_t pl_gguf_find_tensor(const pl_gguf *g, const char *name)
{
    return g ? hash_find(g->tensor_hash, g->tensor_hash_mask, tensor_name, g, name) : -1;
}
