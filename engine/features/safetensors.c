/* safetensors.c — a hardened reader of Hugging Face .safetensors files and sharded checkpoints
 * (index JSON + shards): pure parsers over bytes, plus mmap wrappers. Not a converter (convert.c).
 *
 * JSON goes through jansson (strict RFC 8259, UTF-8 checked, duplicate keys rejected). Every
 * number taken from the JSON is range-checked and every size product overflow-checked before
 * it is used; the tensors must tile the data section exactly. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "hf_util.h"

#define DEFAULT_LABEL "safetensors"
#define INDEX_NAME    "model.safetensors.index.json"
#define SINGLE_NAME   "model.safetensors"

/* The dtypes of the format, with their element sizes; the float ones plumb converts carry
 * their pl_type. Sub-byte dtypes (F4, F6_*) are not listed: they are refused by name. */
static const struct dtype_desc {
    const char *name;
    uint32_t size;
    uint32_t type;
} dtypes[] = {
    {"F32", 4, PL_TYPE_F32},       {"F16", 2, PL_TYPE_F16},       {"BF16", 2, PL_TYPE_BF16},
    {"F64", 8, PL_TYPE_COUNT},     {"I64", 8, PL_TYPE_COUNT},     {"U64", 8, PL_TYPE_COUNT},
    {"I32", 4, PL_TYPE_COUNT},     {"U32", 4, PL_TYPE_COUNT},     {"I16", 2, PL_TYPE_COUNT},
    {"U16", 2, PL_TYPE_COUNT},     {"I8", 1, PL_TYPE_COUNT},      {"U8", 1, PL_TYPE_COUNT},
    {"BOOL", 1, PL_TYPE_COUNT},    {"F8_E4M3", 1, PL_TYPE_COUNT}, {"F8_E5M2", 1, PL_TYPE_COUNT},
    {"F8_E8M0", 1, PL_TYPE_COUNT},
};
enum { N_DTYPES = sizeof dtypes / sizeof dtypes[0] };

typedef struct st_file {
    char *name;     /* label in messages: the file name */
    pl_mapping map; /* when this view mapped the file */
    const uint8_t *data;
    size_t size;
} st_file;

typedef struct st_meta {
    char *key, *value;
    uint32_t file;
} st_meta;

struct pl_safetensors {
    st_file *files;
    uint32_t n_files;
    pl_st_tensor *tensors; /* sorted by name once complete */
    uint64_t n_tensors, cap_tensors;
    st_meta *meta;
    uint64_t n_meta, cap_meta;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static char *dup_cstr(const char *s, size_t n)
{
    char *p = pl_malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* Parses len bytes of JSON text that must be one object, duplicate keys rejected. */
static pl_status load_object(json_t **out, const void *text, size_t len, const char *label,
                             const char *what, pl_error *err)
{
    json_error_t je;
    *out = NULL;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return pl_fail(err, PL_ERR_FORMAT, "%s: %s is not valid JSON: %s (line %d, column %d)",
                       label, what, je.text, je.line, je.column);
    if (!json_is_object(root)) {
        pl_status s = pl_fail(err, PL_ERR_FORMAT, "%s: %s is %s, not a JSON object", label, what,
                              pl_json_kind(root));
        json_decref(root);
        return s;
    }
    *out = root;
    return PL_OK;
}

static void view_free(pl_safetensors *st)
{
    if (!st) return;
    for (uint64_t i = 0; i < st->n_tensors; i++) pl_free((char *)st->tensors[i].name);
    pl_free(st->tensors);
    for (uint64_t i = 0; i < st->n_meta; i++) {
        pl_free(st->meta[i].key);
        pl_free(st->meta[i].value);
    }
    pl_free(st->meta);
    for (uint32_t f = 0; f < st->n_files; f++) {
        pl_free(st->files[f].name);
        if (st->files[f].map.is_mmap) pl_unmap_file(&st->files[f].map);
    }
    pl_free(st->files);
    pl_free(st);
}

void pl_safetensors_free(pl_safetensors *st)
{
    view_free(st);
}

static pl_status view_new(pl_safetensors **out, uint32_t n_files, pl_error *err)
{
    pl_safetensors *st = pl_calloc(1, sizeof *st);
    if (st) st->files = pl_calloc(n_files, sizeof *st->files);
    if (!st || !st->files) {
        pl_free(st);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for a safetensors view of %u files",
                       (unsigned)n_files);
    }
    st->n_files = n_files;
    *out = st;
    return PL_OK;
}

/* ---- one file ----------------------------------------------------------------------------- */

/* A non-negative JSON integer (what shapes and offsets are). */
static int get_u64(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v)) return 0;
    json_int_t x = json_integer_value(v);
    if (x < 0) return 0;
    *out = (uint64_t)x;
    return 1;
}

static pl_status parse_tensor(pl_safetensors *st, uint32_t file, const char *label,
                              const char *name, const json_t *entry, uint64_t data_start,
                              uint64_t data_size, pl_error *err)
{
    size_t name_len = strlen(name);
    if (name_len == 0) return pl_fail(err, PL_ERR_FORMAT, "%s: a tensor has an empty name", label);
    if (name_len > PL_SAFETENSORS_MAX_NAME)
        return pl_fail(err, PL_ERR_LIMIT,
                       "%s: tensor '%.64s...': name of %zu bytes, over the limit %u", label, name,
                       name_len, PL_SAFETENSORS_MAX_NAME);
    if (!json_is_object(entry))
        return pl_fail(err, PL_ERR_FORMAT, "%s: tensor '%s' is %s, not an object", label, name,
                       pl_json_kind(entry));
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)entry, key, val)
    {
        if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
            return pl_fail(err, PL_ERR_FORMAT,
                           "%s: tensor '%s': unknown field '%.64s' (expected dtype, shape, "
                           "data_offsets)",
                           label, name, key);
    }
    const json_t *jd = json_object_get(entry, "dtype"), *js = json_object_get(entry, "shape"),
                 *jo = json_object_get(entry, "data_offsets");
    if (!jd || !js || !jo)
        return pl_fail(err, PL_ERR_FORMAT, "%s: tensor '%s': field '%s' is missing", label, name,
                       !jd   ? "dtype"
                       : !js ? "shape"
                             : "data_offsets");
    if (!json_is_string(jd))
        return pl_fail(err, PL_ERR_FORMAT, "%s: tensor '%s': dtype is %s, not a string", label,
                       name, pl_json_kind(jd));
    const char *dt = json_string_value(jd);
    const struct dtype_desc *d = NULL;
    for (int i = 0; i < N_DTYPES; i++)
        if (strcmp(dt, dtypes[i].name) == 0) d = &dtypes[i];
    if (!d)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: tensor '%s': dtype '%.32s' is not one plumb reads (F32, F16, BF16, "
                       "F64, I64, U64, I32, U32, I16, U16, I8, U8, BOOL, F8_E4M3, F8_E5M2, "
                       "F8_E8M0)",
                       label, name, dt);
    if (!json_is_array(js))
        return pl_fail(err, PL_ERR_FORMAT, "%s: tensor '%s': shape is %s, not an array", label,
                       name, pl_json_kind(js));
    size_t nd = json_array_size(js);
    if (nd > PL_SAFETENSORS_MAX_DIMS)
        return pl_fail(err, PL_ERR_LIMIT, "%s: tensor '%s': %zu dimensions, over the limit %u",
                       label, name, nd, PL_SAFETENSORS_MAX_DIMS);
    pl_st_tensor t = {.dtype = d->name, .type = d->type, .n_dims = (uint32_t)nd, .file = file};
    uint64_t n_elems = 1;
    for (size_t i = 0; i < nd; i++) {
        uint64_t dim;
        const json_t *jv = json_array_get(js, i);
        if (!get_u64(jv, &dim))
            return pl_fail(err, PL_ERR_FORMAT,
                           "%s: tensor '%s': shape[%zu] is %s, not a non-negative integer", label,
                           name, i, json_is_integer(jv) ? "negative" : pl_json_kind(jv));
        if (!pl_mul_u64(n_elems, dim, &n_elems) || n_elems > (uint64_t)INT64_MAX)
            return pl_fail(err, PL_ERR_LIMIT,
                           "%s: tensor '%s': the element count of its shape "
                           "overflows 64 bits",
                           label, name);
        t.shape[i] = (int64_t)dim;
    }
    uint64_t n_bytes;
    if (!pl_mul_u64(n_elems, d->size, &n_bytes))
        return pl_fail(err, PL_ERR_LIMIT,
                       "%s: tensor '%s': %llu %s elements overflow 64 bits of "
                       "bytes",
                       label, name, (unsigned long long)n_elems, d->name);
    if (!json_is_array(jo) || json_array_size(jo) != 2)
        return pl_fail(
            err, PL_ERR_FORMAT, "%s: tensor '%s': data_offsets is %s, not an array [begin, end]",
            label, name, json_is_array(jo) ? "an array of other than two items" : pl_json_kind(jo));
    uint64_t begin, end;
    if (!get_u64(json_array_get(jo, 0), &begin) || !get_u64(json_array_get(jo, 1), &end))
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets must be two non-negative integers", label,
                       name);
    if (begin > end)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets [%llu, %llu) end before "
                       "they begin",
                       label, name, (unsigned long long)begin, (unsigned long long)end);
    if (end > data_size)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: tensor '%s': data [%llu, %llu) past the end of the data section "
                       "(%llu bytes)",
                       label, name, (unsigned long long)begin, (unsigned long long)end,
                       (unsigned long long)data_size);
    if (end - begin != n_bytes)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: tensor '%s': data [%llu, %llu) holds %llu bytes, but %llu %s elements "
                       "need %llu",
                       label, name, (unsigned long long)begin, (unsigned long long)end,
                       (unsigned long long)(end - begin), (unsigned long long)n_elems, d->name,
                       (unsigned long long)n_bytes);
    t.n_elems = n_elems;
    t.n_bytes = n_bytes;
    t.offset = data_start + begin;
    if (st->n_tensors == st->cap_tensors) {
        uint64_t cap = st->cap_tensors ? st->cap_tensors * 2 : 64;
        pl_st_tensor *p = pl_realloc(st->tensors, (size_t)cap * sizeof *p);
        if (!p)
            return pl_fail(err, PL_ERR_NOMEM, "%s: no memory for %llu tensors", label,
                           (unsigned long long)cap);
        st->tensors = p;
        st->cap_tensors = cap;
    }
    if (!(t.name = dup_cstr(name, name_len)))
        return pl_fail(err, PL_ERR_NOMEM, "%s: no memory for a tensor name", label);
    st->tensors[st->n_tensors++] = t;
    return PL_OK;
}

static pl_status parse_metadata(pl_safetensors *st, uint32_t file, const char *label,
                                const json_t *m, pl_error *err)
{
    if (!json_is_object(m))
        return pl_fail(err, PL_ERR_FORMAT, "%s: __metadata__ is %s, not an object of strings",
                       label, pl_json_kind(m));
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)m, key, val)
    {
        if (!json_is_string(val))
            return pl_fail(err, PL_ERR_FORMAT, "%s: __metadata__ '%.64s' is %s, not a string",
                           label, key, pl_json_kind(val));
        if (st->n_meta == st->cap_meta) {
            uint64_t cap = st->cap_meta ? st->cap_meta * 2 : 8;
            st_meta *p = pl_realloc(st->meta, (size_t)cap * sizeof *p);
            if (!p) return pl_fail(err, PL_ERR_NOMEM, "%s: no memory for metadata", label);
            st->meta = p;
            st->cap_meta = cap;
        }
        st_meta *e = &st->meta[st->n_meta];
        e->file = file;
        e->key = dup_cstr(key, strlen(key));
        e->value = dup_cstr(json_string_value(val), json_string_length(val));
        if (!e->key || !e->value) {
            pl_free(e->key);
            pl_free(e->value);
            return pl_fail(err, PL_ERR_NOMEM, "%s: no memory for metadata", label);
        }
        st->n_meta++;
    }
    return PL_OK;
}

static int by_offset(const void *a, const void *b)
{
    const pl_st_tensor *x = *(const pl_st_tensor *const *)a, *y = *(const pl_st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->n_bytes != y->n_bytes) return x->n_bytes < y->n_bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The tensors of one file, first..n_tensors, must tile [data_start, size) exactly. */
static pl_status check_tiling(pl_safetensors *st, uint64_t first, const char *label,
                              uint64_t data_start, uint64_t size, pl_error *err)
{
    uint64_t n = st->n_tensors - first;
    const pl_st_tensor **order = pl_malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return pl_fail(err, PL_ERR_NOMEM, "%s: no memory to order %llu tensors", label,
                       (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) order[i] = &st->tensors[first + i];
    qsort(order, (size_t)n, sizeof *order, by_offset);
    uint64_t at = data_start;
    pl_status s = PL_OK;
    for (uint64_t i = 0; i < n && !s; i++) {
        const pl_st_tensor *t = order[i];
        if (t->offset < at)
            s = pl_fail(err, PL_ERR_FORMAT,
                        "%s: tensor '%s': data [%llu, %llu) overlaps tensor '%s' (ends at %llu)",
                        label, t->name, (unsigned long long)(t->offset - data_start),
                        (unsigned long long)(t->offset - data_start + t->n_bytes),
                        order[i - 1]->name, (unsigned long long)(at - data_start));
        else if (t->offset > at)
            s = pl_fail(err, PL_ERR_FORMAT,
                        "%s: data section bytes [%llu, %llu) before tensor '%s' belong to no "
                        "tensor",
                        label, (unsigned long long)(at - data_start),
                        (unsigned long long)(t->offset - data_start), t->name);
        else
            at = t->offset + t->n_bytes;
    }
    if (!s && at != size)
        s = pl_fail(err, PL_ERR_FORMAT,
                    "%s: the data section's last %llu bytes (from %llu) belong to no tensor", label,
                    (unsigned long long)(size - at), (unsigned long long)(at - data_start));
    pl_free(order);
    return s;
}

/* Parses file `file` of st (its bytes already set) and appends its tensors and metadata. */
static pl_status parse_file(pl_safetensors *st, uint32_t file, pl_error *err)
{
    const st_file *f = &st->files[file];
    const char *label = f->name;
    if (f->size < 8)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: truncated: %zu bytes, the header length alone "
                       "needs 8",
                       label, f->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->data[i];
    if (n > PL_SAFETENSORS_MAX_HEADER)
        return pl_fail(err, PL_ERR_LIMIT, "%s: header length %llu is over the limit %u", label,
                       (unsigned long long)n, PL_SAFETENSORS_MAX_HEADER);
    if (n > f->size - 8)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: truncated: header length %llu runs past the end of the file (%zu "
                       "bytes after the length)",
                       label, (unsigned long long)n, f->size - 8);
    if (n < 2 || f->data[8] != '{')
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: the header (%llu bytes at offset 8) does not start "
                       "with '{'",
                       label, (unsigned long long)n);
    json_t *root;
    pl_status s = load_object(&root, f->data + 8, (size_t)n, label, "the header", err);
    if (s) return s;
    uint64_t data_start = 8 + n, data_size = f->size - data_start, first = st->n_tensors;
    if (json_object_size(root) > PL_SAFETENSORS_MAX_TENSORS ||
        st->n_tensors + json_object_size(root) > (uint64_t)PL_SAFETENSORS_MAX_TENSORS + 1)
        s = pl_fail(err, PL_ERR_LIMIT, "%s: %zu tensors, over the limit %u", label,
                    json_object_size(root), PL_SAFETENSORS_MAX_TENSORS);
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (s) break;
        if (strcmp(key, "__metadata__") == 0)
            s = parse_metadata(st, file, label, val, err);
        else
            s = parse_tensor(st, file, label, key, val, data_start, data_size, err);
    }
    json_decref(root);
    if (!s && st->n_tensors > PL_SAFETENSORS_MAX_TENSORS)
        s = pl_fail(err, PL_ERR_LIMIT, "%s: more than %u tensors", label,
                    PL_SAFETENSORS_MAX_TENSORS);
    if (!s) s = check_tiling(st, first, label, data_start, f->size, err);
    for (uint64_t i = first; !s && i < st->n_tensors; i++)
        st->tensors[i].data = f->data + st->tensors[i].offset;
    return s;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const pl_st_tensor *)a)->name, ((const pl_st_tensor *)b)->name);
}

/* Sorts by name; a name seen twice (possible only across files) is an error. */
static pl_status finish(pl_safetensors *st, pl_error *err)
{
    /* A file may hold no tensors ("{}"): its array is then NULL, which qsort must not get. */
    if (st->n_tensors > 1) qsort(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, by_name);
    for (uint64_t i = 1; i < st->n_tensors; i++)
        if (strcmp(st->tensors[i - 1].name, st->tensors[i].name) == 0)
            return pl_fail(err, PL_ERR_FORMAT, "tensor '%s' is in both %s and %s",
                           st->tensors[i].name, st->files[st->tensors[i - 1].file].name,
                           st->files[st->tensors[i].file].name);
    return PL_OK;
}

pl_status pl_safetensors_parse(pl_safetensors **out, const void *data, size_t size,
                               const char *label, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!data && size) return pl_fail(err, PL_ERR_INVALID_ARG, "data is NULL");
    pl_safetensors *st = NULL;
    pl_status s = view_new(&st, 1, err);
    if (s) return s;
    const char *l = label ? label : DEFAULT_LABEL;
    st->files[0].data = data ? data : (const uint8_t *)"";
    st->files[0].size = size;
    if (!(st->files[0].name = dup_cstr(l, strlen(l))))
        s = pl_fail(err, PL_ERR_NOMEM, "no memory for a file name");
    if (!s) s = parse_file(st, 0, err);
    if (!s) s = finish(st, err);
    if (s) {
        view_free(st);
        return s;
    }
    *out = st;
    return pl_ok(err);
}

pl_status pl_safetensors_open(pl_safetensors **out, const char *path, pl_error *err)
{
    if (!out || !path) return pl_fail(err, PL_ERR_INVALID_ARG, "out or path is NULL");
    *out = NULL;
    pl_mapping map;
    pl_status s = pl_map_file(&map, path, err);
    if (s) return s;
    pl_safetensors *st = NULL;
    s = pl_safetensors_parse(&st, map.data, map.size, path, err);
    if (s) {
        pl_unmap_file(&map);
        return s;
    }
    st->files[0].map = map;
    *out = st;
    return PL_OK;
}

/* ---- sharded checkpoints ------------------------------------------------------------------ */

/* A shard's file name: plain, no directory part, nothing hidden or special. */
static int plain_file_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255 || s[0] == '.') return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '/' || s[i] == '\\' || (unsigned char)s[i] < 0x20) return 0;
    return 1;
}

typedef struct st_index {
    json_t *root;
    json_t *map;  /* weight_map */
    char **files; /* distinct file names, in order of first mention */
    uint32_t n_files;
} st_index;

static void index_free(st_index *ix)
{
    for (uint32_t i = 0; i < ix->n_files; i++) pl_free(ix->files[i]);
    pl_free(ix->files);
    json_decref(ix->root);
    memset(ix, 0, sizeof *ix);
}

static pl_status index_parse(st_index *ix, const void *text, size_t len, pl_error *err)
{
    memset(ix, 0, sizeof *ix);
    const char *label = INDEX_NAME;
    if (len > PL_SAFETENSORS_MAX_INDEX)
        return pl_fail(err, PL_ERR_LIMIT, "%s: %zu bytes, over the limit %u", label, len,
                       PL_SAFETENSORS_MAX_INDEX);
    pl_status s = load_object(&ix->root, text, len, label, "the index", err);
    if (s) return s;
    const char *key;
    json_t *val;
    json_object_foreach(ix->root, key, val)
    {
        if (strcmp(key, "weight_map") && strcmp(key, "metadata")) {
            s = pl_fail(err, PL_ERR_FORMAT,
                        "%s: unknown field '%.64s' (expected weight_map, "
                        "metadata)",
                        label, key);
            break;
        }
    }
    ix->map = s ? NULL : json_object_get(ix->root, "weight_map");
    if (!s && !ix->map) s = pl_fail(err, PL_ERR_FORMAT, "%s: field 'weight_map' is missing", label);
    const json_t *meta = s ? NULL : json_object_get(ix->root, "metadata");
    if (!s && meta && !json_is_object(meta) && !json_is_null(meta))
        s = pl_fail(err, PL_ERR_FORMAT, "%s: metadata is %s, not an object", label,
                    pl_json_kind(meta));
    if (!s && !json_is_object(ix->map))
        s = pl_fail(err, PL_ERR_FORMAT, "%s: weight_map is %s, not an object", label,
                    pl_json_kind(ix->map));
    if (!s && json_object_size(ix->map) == 0)
        s = pl_fail(err, PL_ERR_FORMAT, "%s: weight_map names no tensor", label);
    if (!s && json_object_size(ix->map) > PL_SAFETENSORS_MAX_TENSORS)
        s = pl_fail(err, PL_ERR_LIMIT, "%s: weight_map has %zu tensors, over the limit %u", label,
                    json_object_size(ix->map), PL_SAFETENSORS_MAX_TENSORS);
    uint32_t cap = 0;
    if (!s) json_object_foreach(ix->map, key, val)
        {
            if (!json_is_string(val)) {
                s = pl_fail(err, PL_ERR_FORMAT, "%s: weight_map['%.64s'] is %s, not a file name",
                            label, key, pl_json_kind(val));
                break;
            }
            const char *fn = json_string_value(val);
            if (!plain_file_name(fn) || strlen(fn) != json_string_length(val)) {
                s = pl_fail(err, PL_ERR_FORMAT,
                            "%s: weight_map['%.64s'] = '%.64s' is not a plain file name in the "
                            "model directory (no '/', no leading '.')",
                            label, key, fn);
                break;
            }
            uint32_t f = 0;
            while (f < ix->n_files && strcmp(ix->files[f], fn) != 0) f++;
            if (f < ix->n_files) continue;
            if (ix->n_files == PL_SAFETENSORS_MAX_SHARDS) {
                s = pl_fail(err, PL_ERR_LIMIT, "%s: more than %u shard files", label,
                            PL_SAFETENSORS_MAX_SHARDS);
                break;
            }
            if (ix->n_files == cap) {
                cap = cap ? cap * 2 : 8;
                char **p = pl_realloc(ix->files, cap * sizeof *p);
                if (!p) {
                    s = pl_fail(err, PL_ERR_NOMEM, "%s: no memory for file names", label);
                    break;
                }
                ix->files = p;
            }
            if (!(ix->files[ix->n_files] = dup_cstr(fn, strlen(fn)))) {
                s = pl_fail(err, PL_ERR_NOMEM, "%s: no memory for file names", label);
                break;
            }
            ix->n_files++;
        }
    if (s) index_free(ix);
    return s;
}

/* Every tensor of the shards is in the weight map under its own file, and the map names
 * no tensor the shards lack. Runs after finish() (sorted, no duplicates). */
static pl_status index_check(const pl_safetensors *st, const st_index *ix, pl_error *err)
{
    for (uint64_t i = 0; i < st->n_tensors; i++) {
        const pl_st_tensor *t = &st->tensors[i];
        const json_t *v = json_object_get(ix->map, t->name);
        if (!v)
            return pl_fail(err, PL_ERR_FORMAT, "%s: tensor '%s' of %s is not in the weight_map",
                           INDEX_NAME, t->name, st->files[t->file].name);
        if (strcmp(json_string_value(v), st->files[t->file].name) != 0)
            return pl_fail(err, PL_ERR_FORMAT,
                           "%s: weight_map puts tensor '%s' in %s, but it is in %s", INDEX_NAME,
                           t->name, json_string_value(v), st->files[t->file].name);
    }
    const char *key;
    json_t *val;
    json_object_foreach(ix->map, key, val)
    {
        if (!pl_safetensors_find(st, key))
            return pl_fail(err, PL_ERR_NOT_FOUND,
                           "%s: weight_map names tensor '%.128s' in %s, which does not hold it",
                           INDEX_NAME, key, json_string_value(val));
    }
    return PL_OK;
}

/* Parses the shards already attached to st's files (in index order). */
static pl_status parse_shards(pl_safetensors *st, const st_index *ix, pl_error *err)
{
    pl_status s = PL_OK;
    for (uint32_t f = 0; f < st->n_files && !s; f++) s = parse_file(st, f, err);
    if (!s) s = finish(st, err);
    if (!s) s = index_check(st, ix, err);
    return s;
}

pl_status pl_safetensors_parse_sharded(pl_safetensors **out, const void *index, size_t index_size,
                                       const pl_st_shard *shards, size_t n_shards, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if ((!index && index_size) || (!shards && n_shards))
        return pl_fail(err, PL_ERR_INVALID_ARG, "index or shards is NULL");
    st_index ix;
    pl_status s = index_parse(&ix, index ? index : "", index_size, err);
    if (s) return s;
    pl_safetensors *st = NULL;
    s = view_new(&st, ix.n_files, err);
    for (uint32_t f = 0; !s && f < ix.n_files; f++) {
        size_t k = 0;
        while (k < n_shards && !(shards[k].name && strcmp(shards[k].name, ix.files[f]) == 0)) k++;
        if (k == n_shards) {
            s = pl_fail(err, PL_ERR_NOT_FOUND, "%s: shard %s is missing", INDEX_NAME, ix.files[f]);
            break;
        }
        st->files[f].data = shards[k].data ? shards[k].data : (const uint8_t *)"";
        st->files[f].size = shards[k].data ? shards[k].size : 0;
        if (!(st->files[f].name = dup_cstr(ix.files[f], strlen(ix.files[f]))))
            s = pl_fail(err, PL_ERR_NOMEM, "no memory for a file name");
    }
    if (!s) s = parse_shards(st, &ix, err);
    index_free(&ix);
    if (s) {
        view_free(st);
        return s;
    }
    *out = st;
    return pl_ok(err);
}

/* hf_util.h */
char *pl_join_path(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = pl_malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

pl_status pl_safetensors_open_dir(pl_safetensors **out, const char *dir, pl_error *err)
{
    if (!out || !dir) return pl_fail(err, PL_ERR_INVALID_ARG, "out or dir is NULL");
    *out = NULL;
    char *path = pl_join_path(dir, INDEX_NAME);
    if (!path) return pl_fail(err, PL_ERR_NOMEM, "no memory for a path");
    pl_mapping imap;
    pl_error ierr = {0};
    pl_status s = pl_map_file(&imap, path, &ierr);
    pl_free(path);
    if (s) { /* no index: one file */
        if (!(path = pl_join_path(dir, SINGLE_NAME)))
            return pl_fail(err, PL_ERR_NOMEM, "no memory for a path");
        s = pl_safetensors_open(out, path, err);
        pl_free(path);
        if (s == PL_ERR_IO && err)
            pl_fail(err, PL_ERR_NOT_FOUND, "%s: neither %s nor %s can be read (%s)", dir,
                    INDEX_NAME, SINGLE_NAME, err->msg);
        return s == PL_ERR_IO ? PL_ERR_NOT_FOUND : s;
    }
    st_index ix;
    s = index_parse(&ix, imap.data, imap.size, err);
    pl_unmap_file(&imap);
    if (s) return s;
    pl_safetensors *st = NULL;
    s = view_new(&st, ix.n_files, err);
    for (uint32_t f = 0; !s && f < ix.n_files; f++) {
        if (!(st->files[f].name = dup_cstr(ix.files[f], strlen(ix.files[f]))) ||
            !(path = pl_join_path(dir, ix.files[f]))) {
            s = pl_fail(err, PL_ERR_NOMEM, "no memory for a path");
            break;
        }
        s = pl_map_file(&st->files[f].map, path, err);
        pl_free(path);
        if (s) {
            pl_error_prefix(err, INDEX_NAME);
            break;
        }
        st->files[f].data = st->files[f].map.data;
        st->files[f].size = st->files[f].map.size;
    }
    if (!s) s = parse_shards(st, &ix, err);
    index_free(&ix);
    if (s) {
        view_free(st);
        return s;
    }
    *out = st;
    return pl_ok(err);
}

/* ---- queries ------------------------------------------------------------------------------ */

uint64_t pl_safetensors_n_tensors(const pl_safetensors *st)
{
    return st ? st->n_tensors : 0;
}

const pl_st_tensor *pl_safetensors_tensor(const pl_safetensors *st, uint64_t i)
{
    return st && i < st->n_tensors ? &st->tensors[i] : NULL;
}

const pl_st_tensor *pl_safetensors_find(const pl_safetensors *st, const char *name)
{
    if (!st || !name || !st->n_tensors) return NULL; /* no tensors: no array to search */
    pl_st_tensor key = {.name = name};
    return bsearch(&key, st->tensors, (size_t)st->n_tensors, sizeof key, by_name);
}

uint32_t pl_safetensors_n_files(const pl_safetensors *st)
{
    return st ? st->n_files : 0;
}

const char *pl_safetensors_file_name(const pl_safetensors *st, uint32_t file)
{
    return st && file < st->n_files ? st->files[file].name : NULL;
}

const char *pl_safetensors_metadata(const pl_safetensors *st, const char *key)
{
    if (!st || !key) return NULL;
    for (uint64_t i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta[i].key, key) == 0) return st->meta[i].value;
    return NULL;
}
