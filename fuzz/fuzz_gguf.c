/* fuzz_gguf.c — harness: the input bytes are a GGUF file for pl_model_load_memory (header,
 * metadata, tensor infos, architecture binding, tokenizer). Not a tokenizer fuzzer. Oracles:
 * OK, or an error with a code and a non-empty message; on OK every tensor lies inside the
 * input and a one-token forward pass (small models only) runs. ASan/UBSan catch the rest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "plumb.h"

/* Caps that keep one case fast: the forward pass runs only on models this small. */
#define CAP_WEIGHT_BYTES (4u << 20)
#define CAP_EMBD_VOCAB   (1u << 20) /* n_embd * n_vocab */
#define CAP_LAYERS       8
#define CAP_DIM          4096

static void check_error(pl_status st, const pl_error *err, const char *what)
{
    FUZZ_CHECK(st < 0, "%s returned %d", what, (int)st);
    FUZZ_CHECK(err->code == st, "%s: err.code %d != status %d", what, (int)err->code, (int)st);
    FUZZ_CHECK(err->msg[0] != '\0', "%s failed (%s) with an empty message", what,
               pl_status_str(st));
    FUZZ_CHECK(memchr(err->msg, '\0', sizeof err->msg) != NULL, "%s: message not terminated", what);
}

/* Every session loads the hwloc topology; with hwloc's plugins (dlopen per load) and the real
 * /sys walk that costs ~35 ms, ~100x the rest of a case. A synthetic topology without plugins
 * keeps the forward pass in every valid case (binding is then refused, a documented path). */
void fuzz_init(void)
{
    setenv("HWLOC_PLUGINS_PATH", "/nonexistent", 0);
    setenv("HWLOC_SYNTHETIC", "core:1 pu:1", 0);
    /* The type traits agree with pl_type_row_bytes for every id, known or not: a parsed tensor
     * only ever has a supported type, so the other ids are checked here once. */
    for (uint32_t id = 0; id < PL_TYPE_COUNT + 8; id++) {
        const char *name = pl_type_name(id);
        const int sup = pl_type_supported(id);
        const int64_t bs = pl_type_block_size(id);
        const size_t bb = pl_type_block_bytes(id);
        size_t row = 1;
        pl_error err = {0};
        pl_status st = pl_type_row_bytes(id, bs > 0 ? 2 * bs : 32, &row, &err);
        FUZZ_CHECK(!sup || name, "type %u supported without a name", id);
        FUZZ_CHECK(sup ? bs >= 1 && bb >= 1 : bs == 0 && bb == 0,
                   "type %u: supported %d, block of %lld elements in %zu bytes", id, sup,
                   (long long)bs, bb);
        FUZZ_CHECK(st == (sup    ? PL_OK
                          : name ? PL_ERR_UNSUPPORTED
                                 : PL_ERR_FORMAT),
                   "type %u (%s): row_bytes returned %s", id, name ? name : "unnamed",
                   pl_status_str(st));
        FUZZ_CHECK(sup ? row == 2 * bb : row == 0, "type %u: a row of two blocks is %zu bytes", id,
                   row);
        if (st != PL_OK) check_error(st, &err, "pl_type_row_bytes");
        if (bs > 1)
            FUZZ_CHECK(pl_type_row_bytes(id, bs + 1, &row, NULL) == PL_ERR_FORMAT,
                       "type %s: a row of %lld elements accepted", name, (long long)bs + 1);
        if (sup)
            FUZZ_CHECK(pl_type_row_bytes(id, 0, &row, NULL) == PL_ERR_FORMAT &&
                           pl_type_row_bytes(id, bs, NULL, NULL) == PL_ERR_INVALID_ARG,
                       "type %s: an empty row or a NULL output accepted", name);
    }
}

/* A C copy of a key or tensor name for the by-name lookups; NULL when the name holds a NUL byte
 * (a C string cannot name it). Freed by the caller. */
static char *c_name(pl_str s)
{
    if (s.len > 0 && memchr(s.ptr, '\0', (size_t)s.len)) return NULL;
    char *z = malloc((size_t)s.len + 1);
    FUZZ_CHECK(z != NULL, "no memory for a name of %llu bytes", (unsigned long long)s.len);
    if (s.len) memcpy(z, s.ptr, (size_t)s.len);
    z[s.len] = '\0';
    return z;
}

static int inside(const void *p, uint64_t n, const uint8_t *data, size_t size)
{
    const uint8_t *q = p;
    return q >= data && q <= data + size && n <= (uint64_t)(data + size - q);
}

/* Any value a typed getter writes. */
typedef union value {
    pl_gguf_scalar x;
    int b;
    pl_str s;
    pl_gguf_array a;
} value;

/* The typed getter of type t (pl_gguf_get_u8 ... pl_gguf_get_array). */
static pl_status get_typed(const pl_gguf *g, const char *key, pl_gguf_type t, value *v,
                           pl_error *err)
{
    switch (t) {
    case PL_GGUF_UINT8:
        return pl_gguf_get_u8(g, key, &v->x.u8, err);
    case PL_GGUF_INT8:
        return pl_gguf_get_i8(g, key, &v->x.i8, err);
    case PL_GGUF_UINT16:
        return pl_gguf_get_u16(g, key, &v->x.u16, err);
    case PL_GGUF_INT16:
        return pl_gguf_get_i16(g, key, &v->x.i16, err);
    case PL_GGUF_UINT32:
        return pl_gguf_get_u32(g, key, &v->x.u32, err);
    case PL_GGUF_INT32:
        return pl_gguf_get_i32(g, key, &v->x.i32, err);
    case PL_GGUF_FLOAT32:
        return pl_gguf_get_f32(g, key, &v->x.f32, err);
    case PL_GGUF_BOOL:
        return pl_gguf_get_bool(g, key, &v->b, err);
    case PL_GGUF_STRING:
        return pl_gguf_get_string(g, key, &v->s, err);
    case PL_GGUF_ARRAY:
        return pl_gguf_get_array(g, key, &v->a, err);
    case PL_GGUF_UINT64:
        return pl_gguf_get_u64(g, key, &v->x.u64, err);
    case PL_GGUF_INT64:
        return pl_gguf_get_i64(g, key, &v->x.i64, err);
    case PL_GGUF_FLOAT64:
        return pl_gguf_get_f64(g, key, &v->x.f64, err);
    case PL_GGUF_TYPE_COUNT:
        break;
    }
    return PL_ERR_INVALID_ARG;
}

/* Key i by name through every typed getter: the one of its type returns what the by-index
 * accessors return, each other one fails with PL_ERR_TYPE. */
static void check_getters(const pl_gguf *g, uint64_t i, const char *key, const uint8_t *data,
                          size_t size)
{
    const pl_gguf_type t = pl_gguf_kv_type(g, i);
    FUZZ_CHECK(pl_gguf_find_key(g, key) == (int64_t)i, "key %llu '%.64s' found at %lld",
               (unsigned long long)i, key, (long long)pl_gguf_find_key(g, key));
    FUZZ_CHECK(pl_gguf_type_name(t) != NULL, "key '%.64s': type %u has no name", key, t);
    for (int u = 0; u < PL_GGUF_TYPE_COUNT; u++) {
        value v, w;
        memset(&v, 0, sizeof v);
        memset(&w, 0, sizeof w);
        pl_error err = {0};
        pl_status st = get_typed(g, key, (pl_gguf_type)u, &v, &err);
        const size_t scalar = pl_gguf_type_size((uint32_t)u);
        if ((pl_gguf_type)u != t) {
            FUZZ_CHECK(st == PL_ERR_TYPE, "key '%.64s' (%s) read as %s: %s", key,
                       pl_gguf_type_name(t), pl_gguf_type_name((uint32_t)u), pl_status_str(st));
            check_error(st, &err, "typed getter of another type");
            if (scalar)
                FUZZ_CHECK(pl_gguf_kv_scalar(g, i, (pl_gguf_type)u, &w, NULL) == PL_ERR_TYPE,
                           "key %llu (%s) read by index as %s", (unsigned long long)i,
                           pl_gguf_type_name(t), pl_gguf_type_name((uint32_t)u));
            continue;
        }
        FUZZ_CHECK(st == PL_OK, "key '%.64s' (%s) by its own type: %s", key, pl_gguf_type_name(t),
                   err.msg);
        if (t == PL_GGUF_STRING) {
            FUZZ_CHECK(pl_gguf_kv_string(g, i, &w.s, NULL) == PL_OK, "kv_string %llu",
                       (unsigned long long)i);
            FUZZ_CHECK(v.s.ptr == w.s.ptr && v.s.len == w.s.len, "key '%.64s': two strings", key);
            FUZZ_CHECK(inside(v.s.ptr, v.s.len, data, size),
                       "key '%.64s': string outside the input", key);
        } else if (t == PL_GGUF_ARRAY) {
            FUZZ_CHECK(pl_gguf_kv_array(g, i, &w.a, NULL) == PL_OK, "kv_array %llu",
                       (unsigned long long)i);
            FUZZ_CHECK(v.a.type == w.a.type && v.a.count == w.a.count && v.a.data == w.a.data &&
                           v.a.owner == g && v.a.kv_index == i,
                       "key '%.64s': two arrays", key);
        } else if (t == PL_GGUF_BOOL) {
            FUZZ_CHECK(pl_gguf_kv_scalar(g, i, t, &w.x.u8, NULL) == PL_OK, "kv_scalar %llu",
                       (unsigned long long)i);
            FUZZ_CHECK(w.x.u8 <= 1 && v.b == w.x.u8, "key '%.64s': bool %d, byte %u", key, v.b,
                       w.x.u8);
        } else {
            FUZZ_CHECK(pl_gguf_kv_scalar(g, i, t, &w, NULL) == PL_OK, "kv_scalar %llu",
                       (unsigned long long)i);
            FUZZ_CHECK(memcmp(&v, &w, scalar) == 0, "key '%.64s': getter and index differ", key);
        }
        if (scalar == 0)
            FUZZ_CHECK(pl_gguf_kv_scalar(g, i, t, &w, NULL) == PL_ERR_INVALID_ARG,
                       "key '%.64s': %s read as a scalar", key, pl_gguf_type_name(t));
    }
}

/* Array elements: the last one is the bytes the handle points at (numbers) or a string inside
 * the input; one past the end, the other element kind, and stale or forged handles fail
 * (not_array: a key that is no array, or n_kv). */
static void check_array(const pl_gguf *g, uint64_t i, uint64_t not_array, const uint8_t *data,
                        size_t size)
{
    pl_gguf_array a;
    pl_error err = {0};
    FUZZ_CHECK(pl_gguf_kv_array(g, i, &a, &err) == PL_OK, "kv %llu array: %s",
               (unsigned long long)i, err.msg);
    FUZZ_CHECK(a.type != PL_GGUF_ARRAY && a.type < PL_GGUF_TYPE_COUNT, "kv %llu: element type %u",
               (unsigned long long)i, a.type);
    const int strings = a.type == PL_GGUF_STRING;
    const size_t es = pl_gguf_type_size(a.type);
    FUZZ_CHECK(strings ? a.data == NULL && es == 0
                       : es > 0 && inside(a.data, a.count * (uint64_t)es, data, size),
               "kv %llu: array of %llu %s at %p", (unsigned long long)i,
               (unsigned long long)a.count, pl_gguf_type_name(a.type), a.data);
    pl_str s;
    value v;
    if (a.count > 0) {
        const uint64_t last = a.count - 1;
        if (strings) {
            FUZZ_CHECK(pl_gguf_array_string(&a, last, &s, &err) == PL_OK, "kv %llu last string: %s",
                       (unsigned long long)i, err.msg);
            FUZZ_CHECK(inside(s.ptr, s.len, data, size), "kv %llu: last string outside the input",
                       (unsigned long long)i);
            FUZZ_CHECK(pl_gguf_array_elem(&a, 0, &v, &err) == PL_ERR_TYPE,
                       "kv %llu: a string read as a number", (unsigned long long)i);
        } else {
            FUZZ_CHECK(pl_gguf_array_elem(&a, last, &v, &err) == PL_OK, "kv %llu last element: %s",
                       (unsigned long long)i, err.msg);
            FUZZ_CHECK(memcmp(&v, (const uint8_t *)a.data + last * es, es) == 0,
                       "kv %llu: last element is not the array's bytes", (unsigned long long)i);
            FUZZ_CHECK(pl_gguf_array_string(&a, 0, &s, &err) == PL_ERR_TYPE,
                       "kv %llu: a number read as a string", (unsigned long long)i);
        }
        check_error(PL_ERR_TYPE, &err, "array element of the other kind");
    }
    FUZZ_CHECK((strings ? pl_gguf_array_string(&a, a.count, &s, &err)
                        : pl_gguf_array_elem(&a, a.count, &v, &err)) == PL_ERR_INVALID_ARG,
               "kv %llu: element %llu of %llu read", (unsigned long long)i,
               (unsigned long long)a.count, (unsigned long long)a.count);
    check_error(PL_ERR_INVALID_ARG, &err, "array index past the end");
    /* a handle is the caller's copy: a larger count or another index must not widen it */
    pl_gguf_array forged = a;
    forged.count = a.count + 1;
    FUZZ_CHECK(pl_gguf_array_elem(&forged, a.count, &v, NULL) == PL_ERR_INVALID_ARG &&
                   pl_gguf_array_string(&forged, a.count, &s, NULL) == PL_ERR_INVALID_ARG,
               "kv %llu: a forged count reads past the array", (unsigned long long)i);
    forged = a;
    forged.kv_index = (uint32_t)pl_gguf_n_kv(g);
    FUZZ_CHECK(pl_gguf_array_elem(&forged, 0, &v, NULL) == PL_ERR_INVALID_ARG,
               "kv %llu: a stale handle read", (unsigned long long)i);
    forged.owner = NULL;
    FUZZ_CHECK(pl_gguf_array_string(&forged, 0, &s, NULL) == PL_ERR_INVALID_ARG,
               "kv %llu: an ownerless handle read", (unsigned long long)i);
    if (not_array < pl_gguf_n_kv(g)) {
        forged = a;
        forged.kv_index = (uint32_t)not_array;
        FUZZ_CHECK(pl_gguf_array_elem(&forged, 0, &v, NULL) == PL_ERR_INVALID_ARG,
                   "kv %llu: a handle naming a %s read", (unsigned long long)i,
                   pl_gguf_type_name(pl_gguf_kv_type(g, not_array)));
    }
}

/* A tensor's type traits agree with its byte count, and its name finds it. */
static void check_tensor_type(const pl_gguf *g, uint64_t i, const pl_tensor_info *t)
{
    const char *tn = pl_type_name(t->type);
    const int64_t bs = pl_type_block_size(t->type);
    const size_t bb = pl_type_block_bytes(t->type);
    FUZZ_CHECK(tn && pl_type_supported(t->type) && bs >= 1 && bb >= 1,
               "tensor %llu: type %u (%s) parsed", (unsigned long long)i, t->type,
               tn ? tn : "unnamed");
    FUZZ_CHECK(t->ne[0] % bs == 0, "tensor %llu: row of %lld %s elements", (unsigned long long)i,
               (long long)t->ne[0], tn);
    size_t row = 0;
    pl_error err = {0};
    FUZZ_CHECK(pl_type_row_bytes(t->type, t->ne[0], &row, &err) == PL_OK, "tensor %llu: %s",
               (unsigned long long)i, err.msg);
    /* the parser checked that the element count fits int64 */
    const uint64_t rows = (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]);
    FUZZ_CHECK(row == (uint64_t)(t->ne[0] / bs) * bb && row * rows == t->n_bytes,
               "tensor %llu: %llu bytes, rows of %zu bytes x %llu", (unsigned long long)i,
               (unsigned long long)t->n_bytes, row, (unsigned long long)rows);
    char *name = c_name(t->name);
    if (name)
        FUZZ_CHECK(pl_gguf_find_tensor(g, name) == (int64_t)i, "tensor %llu '%.64s' found at %lld",
                   (unsigned long long)i, name, (long long)pl_gguf_find_tensor(g, name));
    free(name);
}

static void check_tensors(const pl_gguf *g, const uint8_t *data, size_t size)
{
    FUZZ_CHECK(pl_gguf_size(g) == size, "gguf size %zu != input %zu", pl_gguf_size(g), size);
    const uint32_t version = pl_gguf_version(g), align = pl_gguf_alignment(g);
    FUZZ_CHECK(version == 2 || version == 3, "version %u parsed", version);
    FUZZ_CHECK(align >= 1 && align <= PL_GGUF_MAX_ALIGNMENT && (align & (align - 1)) == 0,
               "alignment %u", align);
    if (pl_gguf_find_key(g, "general.alignment") < 0)
        FUZZ_CHECK(align == PL_GGUF_DEFAULT_ALIGNMENT, "alignment %u without the key", align);
    uint64_t base = pl_gguf_data_offset(g);
    FUZZ_CHECK(base <= size, "data section at %llu past the input (%zu)", (unsigned long long)base,
               size);
    uint64_t n = pl_gguf_n_tensors(g);
    FUZZ_CHECK(n == 0 || base % align == 0, "data section at %llu, alignment %u",
               (unsigned long long)base, align);
    for (uint64_t i = 0; i < n; i++) {
        pl_tensor_info t;
        pl_error err = {0};
        pl_status st = pl_gguf_tensor(g, i, &t, &err);
        FUZZ_CHECK(st == PL_OK, "tensor %llu of %llu: %s", (unsigned long long)i,
                   (unsigned long long)n, err.msg);
        const uint8_t *p = t.data;
        FUZZ_CHECK(p >= data && p <= data + size, "tensor %llu data outside the input",
                   (unsigned long long)i);
        FUZZ_CHECK(t.n_bytes <= (uint64_t)(data + size - p),
                   "tensor %llu: %llu bytes at %td run past the input (%zu)", (unsigned long long)i,
                   (unsigned long long)t.n_bytes, p - data, size);
        FUZZ_CHECK((uint64_t)(p - data) == base + t.offset, "tensor %llu: offset mismatch",
                   (unsigned long long)i);
        FUZZ_CHECK(t.offset % align == 0, "tensor %llu: offset %llu, alignment %u",
                   (unsigned long long)i, (unsigned long long)t.offset, align);
        FUZZ_CHECK(t.n_dims >= 1 && t.n_dims <= PL_GGUF_MAX_DIMS, "tensor %llu: n_dims %u",
                   (unsigned long long)i, t.n_dims);
        FUZZ_CHECK(t.name.len <= PL_GGUF_MAX_NAME, "tensor %llu: name of %llu bytes",
                   (unsigned long long)i, (unsigned long long)t.name.len);
        FUZZ_CHECK(pl_gguf_find_tensor(g, "") < (int64_t)n, "find_tensor out of range");
        check_tensor_type(g, i, &t);
    }
    pl_tensor_info t;
    pl_error err = {0};
    FUZZ_CHECK(pl_gguf_tensor(g, n, &t, &err) == PL_ERR_INVALID_ARG, "tensor %llu of %llu read",
               (unsigned long long)n, (unsigned long long)n);
    check_error(PL_ERR_INVALID_ARG, &err, "tensor index past the end");
    /* Every metadata key is readable through the typed API, by index and by name. */
    uint64_t n_kv = pl_gguf_n_kv(g), not_array = 0;
    while (not_array < n_kv && pl_gguf_kv_type(g, not_array) == PL_GGUF_ARRAY) not_array++;
    for (uint64_t i = 0; i < n_kv; i++) {
        pl_str k = pl_gguf_kv_key(g, i);
        FUZZ_CHECK(k.len == 0 || inside(k.ptr, k.len, data, size), "key %llu outside the input",
                   (unsigned long long)i);
        char *key = c_name(k);
        if (key) check_getters(g, i, key, data, size);
        free(key);
        if (pl_gguf_kv_type(g, i) == PL_GGUF_ARRAY) check_array(g, i, not_array, data, size);
    }
    /* One past the last key, and a key the file does not hold. */
    value v;
    FUZZ_CHECK(pl_gguf_kv_key(g, n_kv).len == 0 && pl_gguf_kv_type(g, n_kv) == PL_GGUF_TYPE_COUNT,
               "key %llu of %llu has a name or a type", (unsigned long long)n_kv,
               (unsigned long long)n_kv);
    FUZZ_CHECK(pl_gguf_kv_scalar(g, n_kv, PL_GGUF_UINT32, &v, &err) == PL_ERR_INVALID_ARG &&
                   pl_gguf_kv_string(g, n_kv, &v.s, NULL) == PL_ERR_INVALID_ARG &&
                   pl_gguf_kv_array(g, n_kv, &v.a, NULL) == PL_ERR_INVALID_ARG,
               "key %llu of %llu read", (unsigned long long)n_kv, (unsigned long long)n_kv);
    check_error(PL_ERR_INVALID_ARG, &err, "key index past the end");
    static const char absent[] = "fuzz_gguf.absent key";
    if (pl_gguf_find_key(g, absent) < 0)
        for (int u = 0; u < PL_GGUF_TYPE_COUNT; u++)
            FUZZ_CHECK(get_typed(g, absent, (pl_gguf_type)u, &v, &err) == PL_ERR_NOT_FOUND,
                       "absent key read as %s", pl_gguf_type_name((uint32_t)u));
}

static void run_one_token(const pl_model *m, const uint8_t *data, size_t size)
{
    pl_model_info info;
    pl_error err = {0};
    pl_status st = pl_model_get_info(m, &info, &err);
    FUZZ_CHECK(st == PL_OK, "get_info on a loaded model: %s", err.msg);
    if (info.weight_bytes > CAP_WEIGHT_BYTES || info.n_layer > CAP_LAYERS ||
        info.n_embd > CAP_DIM || info.n_ff > 4 * CAP_DIM || info.n_vocab < 1 ||
        (uint64_t)info.n_embd * (uint64_t)info.n_vocab > CAP_EMBD_VOCAB)
        return;
    pl_session_params p = pl_session_default_params(m);
    p.n_threads = 1;
    p.context_window = 4;
    p.sliding_window = 0;
    p.prefill_chunk = 2;
    p.kernels = "ref";
    p.kv_type = size && (data[size - 1] & 1) ? PL_TYPE_F16 : PL_TYPE_F32;
    pl_session *s = NULL;
    st = pl_session_new(&s, m, &p, &err);
    if (st != PL_OK) {
        check_error(st, &err, "pl_session_new");
        return;
    }
    float *logits = malloc((size_t)info.n_vocab * sizeof *logits);
    FUZZ_CHECK(logits != NULL, "logits of %lld", (long long)info.n_vocab);
    int32_t tok[2] = {0, (int32_t)(info.n_vocab - 1)};
    st = pl_session_eval(s, tok, 2, logits, 0, &err);
    if (st != PL_OK)
        check_error(st, &err, "pl_session_eval");
    else
        FUZZ_CHECK(pl_session_n_past(s) == 2, "n_past %lld after 2 tokens",
                   (long long)pl_session_n_past(s));
    /* An id out of range is refused, never read. */
    int32_t bad = (int32_t)info.n_vocab;
    st = pl_session_eval(s, &bad, 1, logits, 0, &err);
    FUZZ_CHECK(st != PL_OK, "token id n_vocab accepted");
    free(logits);
    pl_session_free(s);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    for (uint32_t flags = 0; flags <= PL_MODEL_VOCAB_ONLY; flags++) {
        pl_model_params params = {.flags = flags};
        pl_model *m = NULL;
        pl_error err = {0};
        pl_status st = pl_model_load_memory(&m, data, size, &params, &err);
        if (st != PL_OK) {
            check_error(st, &err, "pl_model_load_memory");
            FUZZ_CHECK(m == NULL, "model set on failure");
            continue;
        }
        FUZZ_CHECK(m != NULL, "OK without a model");
        check_tensors(pl_model_gguf(m), data, size);
        if (flags == 0) run_one_token(m, data, size);
        pl_model_free(m);
        if (flags == 0) break; /* a full load includes the tokenizer a vocab-only load reads */
    }
}
