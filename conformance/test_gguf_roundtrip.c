/* test_gguf_roundtrip.c — GGUF round trips: random metadata of every type and random tensors of
 * every type written by the writer and read back identically, in memory, through files and
 * through pl_model_load. The API behaviour tests are in test_gguf.c. */
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

/* ---- an independent model of the format ------------------------------------------- */

/* Bytes of one element of a metadata type; 0 for string/array/unknown. */
static size_t elem_size(uint32_t t)
{
    switch (t) {
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
    }
    return 0;
}

typedef struct rt_kv {
    char key[96];
    pl_gguf_type type;
    pl_gguf_type elem; /* arrays */
    uint64_t count;    /* arrays */
    uint8_t scalar[8];
    uint8_t *bytes; /* string bytes, or packed little-endian array elements */
    size_t n_bytes;
    char **strs; /* string arrays */
    size_t *lens;
    int no_lens; /* string array written with lens == NULL (NUL-terminated strings) */
} rt_kv;

typedef struct rt_tensor {
    char name[64];
    uint32_t type, n_dims;
    int64_t ne[4];
    uint8_t *data;
    size_t n_bytes;
} rt_tensor;

#define RT_MAX_KV 56
#define RT_MAX_T  20

typedef struct rt_file {
    uint32_t version, alignment;
    int n_kv, n_t;
    rt_kv kv[RT_MAX_KV];
    rt_tensor t[RT_MAX_T];
} rt_file;

static void rt_kv_clear(rt_kv *kv)
{
    free(kv->bytes);
    if (kv->strs)
        for (uint64_t i = 0; i < kv->count; i++) free(kv->strs[i]);
    free(kv->strs);
    free(kv->lens);
    memset(kv, 0, sizeof *kv);
}

static void rt_free(rt_file *f)
{
    for (int i = 0; i < f->n_kv; i++) rt_kv_clear(&f->kv[i]);
    for (int i = 0; i < f->n_t; i++) free(f->t[i].data);
    memset(f, 0, sizeof *f);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

static void rand_bytes(tu_rng *r, uint8_t *p, size_t n, int no_nul)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (uint8_t)tu_rng_u64(r);
        if (no_nul && p[i] == 0) p[i] = 'z';
    }
}

static size_t rand_len(tu_rng *r)
{
    return tu_rng_range(r, 0, 9) == 0 ? (size_t)tu_rng_range(r, 100, 400)
                                      : (size_t)tu_rng_range(r, 0, 24);
}

/* Fills kv's value with a random value of `type` (elem for arrays). */
static void rt_rand_value(tu_rng *r, rt_kv *kv, pl_gguf_type type, pl_gguf_type elem)
{
    kv->type = type;
    if (type == PL_GGUF_STRING) {
        kv->n_bytes = rand_len(r);
        kv->bytes = xmalloc(kv->n_bytes);
        rand_bytes(r, kv->bytes, kv->n_bytes, 0);
    } else if (type == PL_GGUF_ARRAY) {
        kv->elem = elem;
        kv->count = tu_rng_range(r, 0, 4) == 0 ? 0 : (uint64_t)tu_rng_range(r, 1, 40);
        if (elem == PL_GGUF_STRING) {
            kv->no_lens = (int)tu_rng_range(r, 0, 2) == 0;
            kv->strs = xmalloc(sizeof(char *) * kv->count);
            kv->lens = xmalloc(sizeof(size_t) * kv->count);
            for (uint64_t i = 0; i < kv->count; i++) {
                kv->lens[i] = rand_len(r);
                kv->strs[i] = xmalloc(kv->lens[i] + 1);
                rand_bytes(r, (uint8_t *)kv->strs[i], kv->lens[i], kv->no_lens);
                kv->strs[i][kv->lens[i]] = '\0';
            }
        } else {
            kv->n_bytes = elem_size(elem) * kv->count;
            kv->bytes = xmalloc(kv->n_bytes);
            rand_bytes(r, kv->bytes, kv->n_bytes, 0);
            if (elem == PL_GGUF_BOOL)
                for (size_t i = 0; i < kv->n_bytes; i++) kv->bytes[i] &= 1;
        }
    } else {
        rand_bytes(r, kv->scalar, sizeof kv->scalar, 0);
        if (type == PL_GGUF_BOOL) kv->scalar[0] &= 1;
        memset(kv->scalar + elem_size(type), 0, sizeof kv->scalar - elem_size(type));
    }
}

static const pl_gguf_type scalar_types[] = {
    PL_GGUF_UINT8,   PL_GGUF_INT8, PL_GGUF_UINT16, PL_GGUF_INT16, PL_GGUF_UINT32, PL_GGUF_INT32,
    PL_GGUF_FLOAT32, PL_GGUF_BOOL, PL_GGUF_UINT64, PL_GGUF_INT64, PL_GGUF_FLOAT64};
#define N_SCALAR (sizeof scalar_types / sizeof scalar_types[0])

static void rt_rand_key(tu_rng *r, char *key, size_t cap, int i)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789._-ABC";
    int n = snprintf(key, cap, "general.rt.%d.", i); /* general.*: keys that change nothing */
    int extra = (int)tu_rng_range(r, 0, 30);
    for (int k = 0; k < extra && (size_t)n + 3 < cap; k++) {
        if (tu_rng_range(r, 0, 15) == 0) { /* a two-byte UTF-8 character */
            key[n++] = (char)0xc3;
            key[n++] = (char)0xa9;
        } else {
            key[n++] = chars[tu_rng_u64(r) % (sizeof chars - 1)];
        }
    }
    key[n] = '\0';
}

/* A random value of a random type (every scalar, string, arrays of every element type). */
static void rt_rand_any(tu_rng *r, rt_kv *kv)
{
    int pick = (int)tu_rng_range(r, 0, (int64_t)N_SCALAR + 1 + (int64_t)N_SCALAR);
    if (pick < (int)N_SCALAR)
        rt_rand_value(r, kv, scalar_types[pick], 0);
    else if (pick == (int)N_SCALAR)
        rt_rand_value(r, kv, PL_GGUF_STRING, 0);
    else if (pick == 2 * (int)N_SCALAR + 1)
        rt_rand_value(r, kv, PL_GGUF_ARRAY, PL_GGUF_STRING);
    else
        rt_rand_value(r, kv, PL_GGUF_ARRAY, scalar_types[pick - (int)N_SCALAR - 1]);
}

static const uint32_t alignments[] = {0 /* unset: default 32 */, 32, 64, 1, 8, 256, 16, 4096};

/* Seed s: every scalar type, a string, arrays of every element type (incl. strings), a few
 * random extras, general.alignment maybe; tensors cycling through every supported type. */
static void rt_generate(rt_file *f, uint64_t seed, int s)
{
    tu_rng r;
    tu_rng_init(&r, seed);
    memset(f, 0, sizeof *f);
    f->version = 2 + (uint32_t)(s & 1);
    uint32_t align_pick = alignments[(size_t)s % (sizeof alignments / sizeof alignments[0])];
    f->alignment = align_pick ? align_pick : PL_GGUF_DEFAULT_ALIGNMENT;

    for (size_t i = 0; i < N_SCALAR; i++) rt_rand_value(&r, &f->kv[f->n_kv++], scalar_types[i], 0);
    rt_rand_value(&r, &f->kv[f->n_kv++], PL_GGUF_STRING, 0);
    for (size_t i = 0; i < N_SCALAR; i++)
        rt_rand_value(&r, &f->kv[f->n_kv++], PL_GGUF_ARRAY, scalar_types[i]);
    rt_rand_value(&r, &f->kv[f->n_kv++], PL_GGUF_ARRAY, PL_GGUF_STRING);
    int extra = (int)tu_rng_range(&r, 0, 8);
    for (int i = 0; i < extra; i++) rt_rand_any(&r, &f->kv[f->n_kv++]);
    /* shuffle, then name */
    for (int i = f->n_kv - 1; i > 0; i--) {
        int j = (int)tu_rng_range(&r, 0, i);
        rt_kv tmp = f->kv[i];
        f->kv[i] = f->kv[j];
        f->kv[j] = tmp;
    }
    for (int i = 0; i < f->n_kv; i++) rt_rand_key(&r, f->kv[i].key, sizeof f->kv[i].key, i);
    if (align_pick) { /* general.alignment at a random position */
        int at = (int)tu_rng_range(&r, 0, f->n_kv);
        memmove(&f->kv[at + 1], &f->kv[at], sizeof(rt_kv) * (size_t)(f->n_kv - at));
        memset(&f->kv[at], 0, sizeof(rt_kv));
        f->n_kv++;
        strcpy(f->kv[at].key, "general.alignment");
        f->kv[at].type = PL_GGUF_UINT32;
        memcpy(f->kv[at].scalar, &align_pick, 4);
    }

    f->n_t = (int)tu_rng_range(&r, 0, 5);
    if (s % 5 != 4 && f->n_t == 0) f->n_t = 1;
    for (int i = 0; i < f->n_t; i++) {
        rt_tensor *t = &f->t[i];
        int ti = (s + i * 5) % (int)GB_N_TTYPES;
        t->type = gb_ttypes[ti].type;
        t->n_dims = (uint32_t)tu_rng_range(&r, 1, 4);
        int64_t nblocks_row = tu_rng_range(&r, 1, gb_ttypes[ti].block == 1 ? 17 : 3);
        t->ne[0] = nblocks_row * gb_ttypes[ti].block;
        for (int d = 1; d < 4; d++) t->ne[d] = d < (int)t->n_dims ? tu_rng_range(&r, 1, 3) : 1;
        int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
        t->n_bytes = (size_t)(nblocks_row * rows) * gb_ttypes[ti].bytes;
        t->data = xmalloc(t->n_bytes);
        rand_bytes(&r, t->data, t->n_bytes, 0);
        snprintf(t->name, sizeof t->name, "blk.%d.%s_%" PRIx64 ".weight", i, gb_ttypes[ti].name,
                 tu_rng_u64(&r) & 0xffff);
    }
}

/* Writes kv with the writer call that fits its type; u32/f32 sometimes via the shortcuts. */
static pl_status rt_set(pl_gguf_writer *w, const rt_kv *kv, int variant, pl_error *err)
{
    if (kv->type == PL_GGUF_STRING)
        return pl_gguf_writer_set_string(w, kv->key, (const char *)kv->bytes, kv->n_bytes, err);
    if (kv->type == PL_GGUF_ARRAY) {
        if (kv->elem == PL_GGUF_STRING)
            return pl_gguf_writer_set_array_str(w, kv->key, (const char *const *)kv->strs,
                                                kv->no_lens ? NULL : kv->lens, kv->count, err);
        return pl_gguf_writer_set_array(w, kv->key, kv->elem, kv->bytes, kv->count, err);
    }
    if (variant && kv->type == PL_GGUF_UINT32) {
        uint32_t v;
        memcpy(&v, kv->scalar, 4);
        return pl_gguf_writer_set_u32(w, kv->key, v, err);
    }
    if (variant && kv->type == PL_GGUF_FLOAT32) {
        float v;
        memcpy(&v, kv->scalar, 4);
        return pl_gguf_writer_set_f32(w, kv->key, v, err);
    }
    return pl_gguf_writer_set(w, kv->key, kv->type, kv->scalar, err);
}

/* Builds the writer for f; some keys are first set to a decoy value of another type and then
 * set again, which must replace the value and keep the first position. NULL on failure. */
static pl_gguf_writer *rt_build(const rt_file *f, uint64_t seed, const char *ctx)
{
    pl_gguf_writer *w = NULL;
    pl_error err = {PL_OK, ""};
    pl_status st = pl_gguf_writer_new(&w, f->version, &err);
    TU_CHECK(st == PL_OK && w, "%s: writer_new(v%u) -> %s: %s", ctx, f->version, pl_status_str(st),
             err.msg);
    if (st != PL_OK) return NULL;
    tu_rng r;
    tu_rng_init(&r, seed ^ 0xdec0deull);
    for (int i = 0; i < f->n_kv; i++) {
        const rt_kv *kv = &f->kv[i];
        int decoy = strcmp(kv->key, "general.alignment") != 0 && tu_rng_range(&r, 0, 3) == 0;
        if (decoy) {
            rt_kv d;
            memset(&d, 0, sizeof d);
            strcpy(d.key, kv->key);
            rt_rand_any(&r, &d);
            st = rt_set(w, &d, 0, &err);
            rt_kv_clear(&d);
            TU_CHECK(st == PL_OK, "%s: setting decoy '%s' -> %s: %s", ctx, kv->key,
                     pl_status_str(st), err.msg);
        }
        st = rt_set(w, kv, (int)tu_rng_range(&r, 0, 1), &err);
        TU_CHECK(st == PL_OK, "%s: setting '%s' (%s) -> %s: %s", ctx, kv->key,
                 pl_gguf_type_name(kv->type), pl_status_str(st), err.msg);
    }
    for (int i = 0; i < f->n_t; i++) {
        const rt_tensor *t = &f->t[i];
        st = pl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err);
        TU_CHECK(st == PL_OK, "%s: add_tensor '%s' -> %s: %s", ctx, t->name, pl_status_str(st),
                 err.msg);
    }
    return w;
}

static uint64_t rt_kv_bytes(const rt_kv *kv)
{
    uint64_t n = 8 + strlen(kv->key) + 4;
    if (kv->type == PL_GGUF_STRING) return n + 8 + kv->n_bytes;
    if (kv->type != PL_GGUF_ARRAY) return n + elem_size(kv->type);
    n += 4 + 8;
    if (kv->elem != PL_GGUF_STRING) return n + kv->n_bytes;
    for (uint64_t i = 0; i < kv->count; i++) n += 8 + kv->lens[i];
    return n;
}

/* End of the tensor infos per the format: where the data section starts, before alignment. */
static uint64_t rt_infos_end(const rt_file *f)
{
    uint64_t n = 4 + 4 + 8 + 8;
    for (int i = 0; i < f->n_kv; i++) n += rt_kv_bytes(&f->kv[i]);
    for (int i = 0; i < f->n_t; i++) n += 8 + strlen(f->t[i].name) + 4 + 8 * f->t[i].n_dims + 4 + 8;
    return n;
}

/* Checks a typed getter by key against kv's scalar. */
static void rt_check_getter(const pl_gguf *g, const rt_kv *kv, const char *ctx)
{
    pl_error err = {PL_OK, ""};
    pl_gguf_scalar v;
    memset(&v, 0, sizeof v);
    pl_status st = PL_ERR_UNSUPPORTED;
    int b = 0;
    switch (kv->type) {
    case PL_GGUF_UINT8:
        st = pl_gguf_get_u8(g, kv->key, &v.u8, &err);
        break;
    case PL_GGUF_INT8:
        st = pl_gguf_get_i8(g, kv->key, &v.i8, &err);
        break;
    case PL_GGUF_UINT16:
        st = pl_gguf_get_u16(g, kv->key, &v.u16, &err);
        break;
    case PL_GGUF_INT16:
        st = pl_gguf_get_i16(g, kv->key, &v.i16, &err);
        break;
    case PL_GGUF_UINT32:
        st = pl_gguf_get_u32(g, kv->key, &v.u32, &err);
        break;
    case PL_GGUF_INT32:
        st = pl_gguf_get_i32(g, kv->key, &v.i32, &err);
        break;
    case PL_GGUF_UINT64:
        st = pl_gguf_get_u64(g, kv->key, &v.u64, &err);
        break;
    case PL_GGUF_INT64:
        st = pl_gguf_get_i64(g, kv->key, &v.i64, &err);
        break;
    case PL_GGUF_FLOAT32:
        st = pl_gguf_get_f32(g, kv->key, &v.f32, &err);
        break;
    case PL_GGUF_FLOAT64:
        st = pl_gguf_get_f64(g, kv->key, &v.f64, &err);
        break;
    case PL_GGUF_BOOL:
        st = pl_gguf_get_bool(g, kv->key, &b, &err);
        v.u8 = (uint8_t)b;
        TU_CHECK(b == 0 || b == 1, "%s: get_bool('%s') gave %d", ctx, kv->key, b);
        break;
    default:
        return;
    }
    TU_CHECK(st == PL_OK, "%s: getter for '%s' (%s) -> %s: %s", ctx, kv->key,
             pl_gguf_type_name(kv->type), pl_status_str(st), err.msg);
    TU_CHECK(memcmp(v.bytes, kv->scalar, elem_size(kv->type)) == 0,
             "%s: getter for '%s' (%s) returned another value", ctx, kv->key,
             pl_gguf_type_name(kv->type));
    /* no conversions: a getter of another type is PL_ERR_TYPE */
    uint32_t o32;
    uint64_t o64;
    if (kv->type == PL_GGUF_UINT32)
        st = pl_gguf_get_u64(g, kv->key, &o64, &err);
    else
        st = pl_gguf_get_u32(g, kv->key, &o32, &err);
    TU_CHECK(st == PL_ERR_TYPE, "%s: wrong-type getter on '%s' (%s) -> %s, want PL_ERR_TYPE", ctx,
             kv->key, pl_gguf_type_name(kv->type), pl_status_str(st));
}

static void rt_check_kv(const pl_gguf *g, uint64_t i, const rt_kv *kv, const char *ctx)
{
    pl_error err = {PL_OK, ""};
    pl_str key = pl_gguf_kv_key(g, i);
    TU_CHECK(gb_str_eq(key, kv->key, strlen(kv->key)),
             "%s: kv %" PRIu64 " key is '%.*s', want '%s'", ctx, i,
             (int)(key.len < 200 ? key.len : 200), key.ptr ? key.ptr : "", kv->key);
    TU_CHECK(pl_gguf_kv_type(g, i) == kv->type, "%s: kv '%s' type %d, want %d", ctx, kv->key,
             (int)pl_gguf_kv_type(g, i), (int)kv->type);
    TU_CHECK(pl_gguf_find_key(g, kv->key) == (int64_t)i,
             "%s: find_key('%s') = %" PRId64 ", want %" PRIu64, ctx, kv->key,
             pl_gguf_find_key(g, kv->key), i);
    if (pl_gguf_kv_type(g, i) != kv->type) return;

    if (kv->type == PL_GGUF_STRING) {
        pl_str s = {0}, s2 = {0};
        pl_status st = pl_gguf_kv_string(g, i, &s, &err);
        TU_CHECK(st == PL_OK && gb_str_eq(s, kv->bytes, kv->n_bytes),
                 "%s: kv_string '%s' -> %s, len %" PRIu64 " want %zu", ctx, kv->key,
                 pl_status_str(st), s.len, kv->n_bytes);
        st = pl_gguf_get_string(g, kv->key, &s2, &err);
        TU_CHECK(st == PL_OK && gb_str_eq(s2, kv->bytes, kv->n_bytes), "%s: get_string '%s' -> %s",
                 ctx, kv->key, pl_status_str(st));
        return;
    }
    if (kv->type == PL_GGUF_ARRAY) {
        pl_gguf_array a, a2;
        memset(&a, 0, sizeof a);
        memset(&a2, 0, sizeof a2);
        pl_status st = pl_gguf_kv_array(g, i, &a, &err);
        TU_CHECK(st == PL_OK, "%s: kv_array '%s' -> %s: %s", ctx, kv->key, pl_status_str(st),
                 err.msg);
        st = pl_gguf_get_array(g, kv->key, &a2, &err);
        TU_CHECK(st == PL_OK && a2.count == a.count && a2.type == a.type,
                 "%s: get_array '%s' -> %s", ctx, kv->key, pl_status_str(st));
        TU_CHECK(a.type == kv->elem && a.count == kv->count,
                 "%s: array '%s' is %s x %" PRIu64 ", want %s x %" PRIu64, ctx, kv->key,
                 pl_gguf_type_name(a.type), a.count, pl_gguf_type_name(kv->elem), kv->count);
        if (a.type != kv->elem || a.count != kv->count) return;
        for (uint64_t k = 0; k < a.count; k++) {
            if (kv->elem == PL_GGUF_STRING) {
                pl_str s = {0};
                st = pl_gguf_array_string(&a, k, &s, &err);
                TU_CHECK(st == PL_OK && gb_str_eq(s, kv->strs[k], kv->lens[k]),
                         "%s: '%s'[%" PRIu64 "] -> %s, len %" PRIu64 " want %zu", ctx, kv->key, k,
                         pl_status_str(st), s.len, kv->lens[k]);
            } else {
                uint8_t e[8] = {0};
                size_t es = elem_size(kv->elem);
                st = pl_gguf_array_elem(&a, k, e, &err);
                TU_CHECK(st == PL_OK && memcmp(e, kv->bytes + k * es, es) == 0,
                         "%s: '%s'[%" PRIu64 "] (%s) -> %s or wrong value", ctx, kv->key, k,
                         pl_gguf_type_name(kv->elem), pl_status_str(st));
            }
        }
        if (kv->elem != PL_GGUF_STRING && kv->count > 0)
            TU_CHECK(a.data && memcmp(a.data, kv->bytes, kv->n_bytes) == 0,
                     "%s: '%s' packed data differs", ctx, kv->key);
        /* one past the end */
        uint8_t e[8];
        pl_str s;
        st = kv->elem == PL_GGUF_STRING ? pl_gguf_array_string(&a, a.count, &s, &err)
                                        : pl_gguf_array_elem(&a, a.count, e, &err);
        TU_CHECK(st == PL_ERR_INVALID_ARG, "%s: '%s'[count] -> %s, want PL_ERR_INVALID_ARG", ctx,
                 kv->key, pl_status_str(st));
        return;
    }
    uint8_t got[8] = {0};
    pl_status st = pl_gguf_kv_scalar(g, i, kv->type, got, &err);
    TU_CHECK(st == PL_OK && memcmp(got, kv->scalar, elem_size(kv->type)) == 0,
             "%s: kv_scalar '%s' (%s) -> %s or wrong value", ctx, kv->key,
             pl_gguf_type_name(kv->type), pl_status_str(st));
    rt_check_getter(g, kv, ctx);
}

/* Checks the view against the model. base: the bytes parsed (NULL when mmapped). */
static void rt_check(const pl_gguf *g, const uint8_t *base, size_t size, const rt_file *f,
                     const char *ctx)
{
    pl_error err = {PL_OK, ""};
    TU_CHECK(pl_gguf_version(g) == f->version, "%s: version %u, want %u", ctx, pl_gguf_version(g),
             f->version);
    TU_CHECK(pl_gguf_alignment(g) == f->alignment, "%s: alignment %u, want %u", ctx,
             pl_gguf_alignment(g), f->alignment);
    TU_CHECK(pl_gguf_size(g) == size, "%s: size %zu, want %zu", ctx, pl_gguf_size(g), size);
    TU_CHECK(pl_gguf_n_kv(g) == (uint64_t)f->n_kv, "%s: n_kv %" PRIu64 ", want %d", ctx,
             pl_gguf_n_kv(g), f->n_kv);
    if (pl_gguf_n_kv(g) == (uint64_t)f->n_kv)
        for (int i = 0; i < f->n_kv; i++) rt_check_kv(g, (uint64_t)i, &f->kv[i], ctx);

    uint64_t doff = pl_gguf_data_offset(g);
    TU_CHECK(doff % f->alignment == 0, "%s: data offset %" PRIu64 " not aligned to %u", ctx, doff,
             f->alignment);
    if (f->n_t > 0)
        TU_CHECK(doff == gb_align_up(rt_infos_end(f), f->alignment),
                 "%s: data offset %" PRIu64 ", want align_up(%" PRIu64 ", %u)", ctx, doff,
                 rt_infos_end(f), f->alignment);
    TU_CHECK(pl_gguf_n_tensors(g) == (uint64_t)f->n_t, "%s: n_tensors %" PRIu64 ", want %d", ctx,
             pl_gguf_n_tensors(g), f->n_t);
    if (pl_gguf_n_tensors(g) != (uint64_t)f->n_t) return;
    pl_tensor_info info[RT_MAX_T];
    for (int i = 0; i < f->n_t; i++) {
        const rt_tensor *t = &f->t[i];
        pl_tensor_info *ti = &info[i];
        memset(ti, 0, sizeof *ti);
        pl_status st = pl_gguf_tensor(g, (uint64_t)i, ti, &err);
        TU_CHECK(st == PL_OK, "%s: tensor %d -> %s: %s", ctx, i, pl_status_str(st), err.msg);
        if (st != PL_OK) continue;
        TU_CHECK(gb_str_eq(ti->name, t->name, strlen(t->name)), "%s: tensor %d name differs (%s)",
                 ctx, i, t->name);
        TU_CHECK(ti->type == t->type && ti->n_dims == t->n_dims,
                 "%s: '%s' type %u dims %u, want %u, %u", ctx, t->name, ti->type, ti->n_dims,
                 t->type, t->n_dims);
        for (int d = 0; d < 4; d++)
            TU_CHECK(ti->ne[d] == t->ne[d], "%s: '%s' ne[%d] = %" PRId64 ", want %" PRId64, ctx,
                     t->name, d, ti->ne[d], t->ne[d]);
        TU_CHECK(ti->n_bytes == t->n_bytes, "%s: '%s' %" PRIu64 " bytes, want %zu", ctx, t->name,
                 ti->n_bytes, t->n_bytes);
        TU_CHECK(ti->offset % f->alignment == 0, "%s: '%s' offset %" PRIu64 " not aligned to %u",
                 ctx, t->name, ti->offset, f->alignment);
        TU_CHECK(doff + ti->offset + ti->n_bytes <= size,
                 "%s: '%s' [%" PRIu64 ", +%" PRIu64 ") past the file (%zu)", ctx, t->name,
                 doff + ti->offset, ti->n_bytes, size);
        if (base)
            TU_CHECK((const uint8_t *)ti->data == base + doff + ti->offset,
                     "%s: '%s' data pointer is not file + data offset + offset", ctx, t->name);
        if (ti->n_bytes == t->n_bytes && ti->data)
            TU_CHECK(memcmp(ti->data, t->data, t->n_bytes) == 0, "%s: '%s' data bytes differ", ctx,
                     t->name);
        TU_CHECK(pl_gguf_find_tensor(g, t->name) == i, "%s: find_tensor('%s') = %" PRId64, ctx,
                 t->name, pl_gguf_find_tensor(g, t->name));
        for (int j = 0; j < i; j++)
            TU_CHECK(info[i].offset + info[i].n_bytes <= info[j].offset ||
                         info[j].offset + info[j].n_bytes <= info[i].offset,
                     "%s: tensors %d and %d overlap", ctx, j, i);
    }
    pl_tensor_info past;
    TU_CHECK(pl_gguf_tensor(g, (uint64_t)f->n_t, &past, &err) == PL_ERR_INVALID_ARG,
             "%s: tensor index n_tensors is not PL_ERR_INVALID_ARG", ctx);
}

#define N_SEEDS 96

static void gguf_round_trip_random_memory(void)
{
    uint64_t base = tu_seed();
    for (int s = 0; s < N_SEEDS; s++) {
        uint64_t seed = base + (uint64_t)s;
        char ctx[96];
        rt_file f;
        rt_generate(&f, seed, s);
        snprintf(ctx, sizeof ctx, "seed %" PRIu64 " (v%u, alignment %u, %d kv, %d tensors)", seed,
                 f.version, f.alignment, f.n_kv, f.n_t);
        unsigned before = CU_get_number_of_failures();
        pl_gguf_writer *w = rt_build(&f, seed, ctx);
        void *buf = NOT_NULL;
        size_t size = 0;
        pl_error err = {PL_OK, ""};
        pl_status st = w ? pl_gguf_writer_write_memory(w, &buf, &size, &err) : PL_ERR_INVALID_ARG;
        TU_CHECK(st == PL_OK && buf && buf != NOT_NULL, "%s: write_memory -> %s: %s", ctx,
                 pl_status_str(st), err.msg);
        pl_gguf_writer_free(w);
        if (st == PL_OK) {
            /* parse from an exact-size copy, so ASan sees any read past the end */
            uint8_t *copy = xmalloc(size);
            memcpy(copy, buf, size);
            pl_gguf *g = NULL;
            st = pl_gguf_parse(&g, copy, size, &err);
            TU_CHECK(st == PL_OK, "%s: parse -> %s: %s", ctx, pl_status_str(st), err.msg);
            if (st == PL_OK) rt_check(g, copy, size, &f, ctx);
            pl_gguf_free(g);
            free(copy);
            pl_buffer_free(buf);
        }
        rt_free(&f);
        if (CU_get_number_of_failures() != before) {
            fprintf(stderr, "  round trip failed: %s (replay: PLUMB_SEED=%" PRIu64 ")\n", ctx,
                    base);
            return;
        }
    }
    printf("(%d seeds) ", N_SEEDS);
}

#define N_TINY_TENSORS 11

/* Appends what pl_model_load needs to bind (the gb_tiny_llama skeleton: llama metadata and
 * eleven F32 tensors) to a random file, so the same file also loads as a model. */
static void rt_add_tiny_llama(rt_file *f)
{
    static const struct {
        const char *key;
        uint32_t v;
    } u32s[] = {{"llama.embedding_length", 32},
                {"llama.block_count", 1},
                {"llama.attention.head_count", 2},
                {"llama.feed_forward_length", 64}};
    static const float eps = 1e-5f;
    static const struct {
        const char *name;
        uint32_t n_dims;
        int64_t ne0, ne1;
    } ts[] = {
        {"token_embd.weight", 2, 32, 8},         {"output_norm.weight", 1, 32, 1},
        {"blk.0.attn_norm.weight", 1, 32, 1},    {"blk.0.attn_q.weight", 2, 32, 32},
        {"blk.0.attn_k.weight", 2, 32, 32},      {"blk.0.attn_v.weight", 2, 32, 32},
        {"blk.0.attn_output.weight", 2, 32, 32}, {"blk.0.ffn_norm.weight", 1, 32, 1},
        {"blk.0.ffn_gate.weight", 2, 32, 64},    {"blk.0.ffn_up.weight", 2, 32, 64},
        {"blk.0.ffn_down.weight", 2, 64, 32},
    };
    rt_kv *kv = &f->kv[f->n_kv++];
    memset(kv, 0, sizeof *kv);
    strcpy(kv->key, "general.architecture");
    kv->type = PL_GGUF_STRING;
    kv->n_bytes = 5;
    kv->bytes = xmalloc(5);
    memcpy(kv->bytes, "llama", 5);
    for (size_t i = 0; i < sizeof u32s / sizeof u32s[0]; i++) {
        kv = &f->kv[f->n_kv++];
        memset(kv, 0, sizeof *kv);
        strcpy(kv->key, u32s[i].key);
        kv->type = PL_GGUF_UINT32;
        memcpy(kv->scalar, &u32s[i].v, 4);
    }
    kv = &f->kv[f->n_kv++];
    memset(kv, 0, sizeof *kv);
    strcpy(kv->key, "llama.attention.layer_norm_rms_epsilon");
    kv->type = PL_GGUF_FLOAT32;
    memcpy(kv->scalar, &eps, 4);
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        rt_tensor *t = &f->t[f->n_t++];
        memset(t, 0, sizeof *t);
        strcpy(t->name, ts[i].name);
        t->type = PL_TYPE_F32;
        t->n_dims = ts[i].n_dims;
        t->ne[0] = ts[i].ne0;
        t->ne[1] = ts[i].ne1;
        t->ne[2] = t->ne[3] = 1;
        t->n_bytes = (size_t)(4 * ts[i].ne0 * ts[i].ne1);
        t->data = xmalloc(t->n_bytes);
        for (size_t k = 0; k < t->n_bytes / 4; k++) {
            float v = (float)((int)(k % 13) - 6) * 0.02f;
            memcpy(t->data + 4 * k, &v, 4);
        }
    }
}

static void gguf_round_trip_random_file(void)
{
    uint64_t base = tu_seed() ^ 0xf11eull;
    for (int s = 0; s < N_SEEDS / 4; s++) {
        uint64_t seed = base + (uint64_t)s;
        char ctx[112];
        rt_file f;
        rt_generate(&f, seed, s);
        rt_add_tiny_llama(&f);
        snprintf(ctx, sizeof ctx, "file seed %" PRIu64 " (v%u, alignment %u, %d kv, %d tensors)",
                 seed, f.version, f.alignment, f.n_kv, f.n_t);
        unsigned before = CU_get_number_of_failures();
        char path[160], tmp[170];
        snprintf(path, sizeof path, "%s", gb_tmp_path("rt.gguf"));
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        pl_gguf_writer *w = rt_build(&f, seed, ctx);
        pl_error err = {PL_OK, ""};
        pl_status st = w ? pl_gguf_writer_write_file(w, path, &err) : PL_ERR_INVALID_ARG;
        TU_CHECK(st == PL_OK, "%s: write_file -> %s: %s", ctx, pl_status_str(st), err.msg);
        TU_CHECK(!gb_file_exists(tmp), "%s: %s left behind", ctx, tmp);
        /* the file holds the same bytes as write_memory */
        void *buf = NULL;
        size_t size = 0;
        if (w && pl_gguf_writer_write_memory(w, &buf, &size, &err) == PL_OK) {
            struct stat sb;
            TU_CHECK(stat(path, &sb) == 0 && (size_t)sb.st_size == size,
                     "%s: file size differs from write_memory (%zu)", ctx, size);
            FILE *fp = fopen(path, "rb");
            if (fp) {
                uint8_t *fb = xmalloc(size);
                size_t got = fread(fb, 1, size, fp);
                fclose(fp);
                TU_CHECK(got == size && memcmp(fb, buf, size) == 0,
                         "%s: file bytes differ from write_memory", ctx);
                free(fb);
            }
        }
        pl_gguf_writer_free(w);
        if (st == PL_OK) {
            pl_gguf *g = NULL;
            st = pl_gguf_open(&g, path, &err);
            TU_CHECK(st == PL_OK, "%s: open -> %s: %s", ctx, pl_status_str(st), err.msg);
            if (st == PL_OK) rt_check(g, NULL, size, &f, ctx);
            pl_gguf_free(g);

            /* the random tensors have no role in llama: such a file is refused by name */
            const int extra = f.n_t > N_TINY_TENSORS;
            pl_model *m = NULL;
            st = pl_model_load(&m, path, NULL, &err);
            if (extra)
                TU_CHECK(st == PL_ERR_UNSUPPORTED && strstr(err.msg, "has no role in "
                                                                     "architecture 'llama'"),
                         "%s: pl_model_load of a file with extra tensors -> %s: %s", ctx,
                         pl_status_str(st), err.msg);
            else
                TU_CHECK(st == PL_OK && m, "%s: pl_model_load -> %s: %s", ctx, pl_status_str(st),
                         err.msg);
            if (st == PL_OK) {
                const pl_gguf *mg = pl_model_gguf(m);
                TU_CHECK(mg != NULL, "%s: pl_model_gguf is NULL", ctx);
                if (mg) rt_check(mg, NULL, size, &f, ctx);
            }
            pl_model_free(m);

            if (buf) { /* and the same bytes through pl_model_load_memory */
                m = NULL;
                st = pl_model_load_memory(&m, buf, size, NULL, &err);
                TU_CHECK(extra ? st == PL_ERR_UNSUPPORTED : st == PL_OK && m,
                         "%s: pl_model_load_memory -> %s: %s", ctx, pl_status_str(st), err.msg);
                if (st == PL_OK && pl_model_gguf(m)) rt_check(pl_model_gguf(m), buf, size, &f, ctx);
                pl_model_free(m);
            }
        }
        pl_buffer_free(buf);
        remove(path);
        rt_free(&f);
        if (CU_get_number_of_failures() != before) {
            fprintf(stderr, "  round trip failed: %s\n", ctx);
            return;
        }
    }
    printf("(%d seeds) ", N_SEEDS / 4);
}

/* ---- the reader against hand-built bytes (independent of the writer) --------------- */

int main(void)
{
    static const tu_test tests[] = {
        {"gguf_round_trip_random_memory", gguf_round_trip_random_memory},
        {"gguf_round_trip_random_file", gguf_round_trip_random_file},
        {NULL, NULL},
    };
    int rc = tu_run("gguf_roundtrip", tests);
    gb_tmp_cleanup();
    return rc;
}
