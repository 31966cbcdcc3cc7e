/* registry.c — the list of compiled kernel sets, choosing one, and resolving it against
 * ref with every fallback recorded. Not kernels, and no printing: errors go to pl_error. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

/* Best first. SIMD sets are added here, above ref, as they are written. wasm128r, then
 * wasm128, are the browser's best; natively (through SIMDe) they come after the x86 sets,
 * chosen only by name. */
static const struct pl_kernels *const sets[] = {
#if PLUMB_WASM128 && defined(__EMSCRIPTEN__)
    &pl_kernels_wasm128r, &pl_kernels_wasm128,
#endif
#if PLUMB_X86_SETS
    &pl_kernels_avx512, /* AVX-512 BW/VL/DQ + VNNI */
    &pl_kernels_avx2,   /* AVX2 + FMA + F16C */
#endif
#if PLUMB_WASM128 && !defined(__EMSCRIPTEN__)
    &pl_kernels_wasm128,  &pl_kernels_wasm128r,
#endif
    &pl_kernels_ref,
};
#define N_SETS ((int)(sizeof sets / sizeof sets[0]))

#define FAMILY(field, fn_type, slots)                                                              \
    {#field, offsetof(struct pl_kernels, field), PL_KERNEL_PER_TYPE_##slots},
/* Table order is report order: the per-type families first (kernels.h's list). */
static const pl_kernel_family families[] = {PL_KERNEL_FAMILIES(FAMILY)};
#undef FAMILY
#define N_FAMILIES ((int)(sizeof families / sizeof families[0]))

int pl_kernel_family_count(void)
{
    return N_FAMILIES;
}

const pl_kernel_family *pl_kernel_family_at(int i)
{
    return i >= 0 && i < N_FAMILIES ? &families[i] : NULL;
}

int pl_kernel_family_find(const char *name)
{
    for (int i = 0; name && i < N_FAMILIES; i++)
        if (strcmp(families[i].name, name) == 0) return i;
    return -1;
}

const char *pl_kernel_family_name(int family)
{
    return family >= 0 && family < N_FAMILIES ? families[family].name : NULL;
}

#if defined(__GNUC__)
#define PRINTF_LIKE(a, b) __attribute__((format(printf, a, b)))
#else
#define PRINTF_LIKE(a, b)
#endif

static pl_status fail(pl_error *err, pl_status code, const char *fmt, ...) PRINTF_LIKE(3, 4);
static pl_status fail(pl_error *err, pl_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

static pl_status ok(pl_error *err)
{
    if (err) {
        err->code = PL_OK;
        err->msg[0] = '\0';
    }
    return PL_OK;
}

int pl_kernel_set_count(void)
{
    return N_SETS;
}

const struct pl_kernels *pl_kernel_set(int i)
{
    return i >= 0 && i < N_SETS ? sets[i] : NULL;
}

const struct pl_kernels *pl_kernel_set_find(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < N_SETS; i++)
        if (strcmp(sets[i]->name, name) == 0) return sets[i];
    return NULL;
}

int pl_kernel_set_by_name_only(const struct pl_kernels *s)
{
#if PLUMB_WASM128 && !defined(__EMSCRIPTEN__)
    return s == &pl_kernels_wasm128 || s == &pl_kernels_wasm128r;
#else
    (void)s;
    return 0;
#endif
}

/* "avx2, ref" — the names of the compiled sets (only the supported ones if asked). */
static void list_sets(char *buf, size_t cap, int supported_only)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_SETS; i++) {
        if (supported_only && !sets[i]->supported()) continue;
        int w = snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", sets[i]->name);
        if (w < 0 || (size_t)w >= cap - len) return;
        len += (size_t)w;
    }
}

static pl_status select_set(const struct pl_kernels **out, const char *name, const char *origin,
                            pl_error *err)
{
    char known[128];
    *out = NULL;
    if (!name || !*name) {
        for (int i = 0; i < N_SETS; i++) {
            if (sets[i]->supported() && !pl_kernel_set_by_name_only(sets[i])) {
                *out = sets[i];
                return ok(err);
            }
        }
        /* Unreachable while ref is compiled in: ref runs everywhere. */
        return fail(err, PL_ERR_UNSUPPORTED, "no compiled kernel set runs on this CPU");
    }
    const struct pl_kernels *s = pl_kernel_set_find(name);
    if (!s) {
        list_sets(known, sizeof known, 0);
        return fail(err, PL_ERR_NOT_FOUND, "%s'%.64s': no kernel set has that name (compiled: %s)",
                    origin, name, known);
    }
    if (!s->supported()) {
        list_sets(known, sizeof known, 1);
        return fail(err, PL_ERR_UNSUPPORTED,
                    "%s'%.64s': this CPU does not support that kernel set (supported: %s)", origin,
                    name, known);
    }
    *out = s;
    return ok(err);
}

pl_status pl_kernels_select(const struct pl_kernels **out, const char *name, pl_error *err)
{
    if (!out) return fail(err, PL_ERR_INVALID_ARG, "pl_kernels_select: out is NULL");
    return select_set(out, name, "kernel set ", err);
}

static int type_implemented(int type)
{
    const struct pl_type_traits *tr = pl_type_traits_of((uint32_t)type);
    return tr && tr->block_size > 0;
}

/* The entry (family, type) of a table, as a generic function pointer: only compared with
 * NULL or copied, never called through (void (*)(void) is C's "any function" pointer type).
 * Slots are read and written with memcpy: a pl_matmul_fn is not an any_fn to the aliasing
 * rules, but every function pointer has the same size and representation here. */
typedef void (*any_fn)(void);
static_assert(sizeof(pl_matmul_fn) == sizeof(any_fn) && sizeof(pl_rope_fn) == sizeof(any_fn),
              "function pointers of one size");

static size_t slot_offset(int family, int type)
{
    const pl_kernel_family *f = &families[family];
    return f->offset + (f->per_type ? (size_t)type * sizeof(any_fn) : 0);
}

static any_fn get_slot(const struct pl_kernels *k, int family, int type)
{
    any_fn fn;
    memcpy(&fn, (const char *)k + slot_offset(family, type), sizeof fn);
    return fn;
}

/* Copies (family, type) from src into dst. */
static void copy_slot(struct pl_kernels *dst, const struct pl_kernels *src, int family, int type)
{
    const size_t off = slot_offset(family, type);
    memcpy((char *)dst + off, (const char *)src + off, sizeof(any_fn));
}

pl_status pl_kernels_resolve(pl_kernel_table *out, const struct pl_kernels *set, pl_error *err)
{
    if (!out || !set) return fail(err, PL_ERR_INVALID_ARG, "pl_kernels_resolve: NULL argument");
    if (!set->name || !set->supported)
        return fail(err, PL_ERR_INVALID_ARG, "kernel set '%s' has no %s",
                    set->name ? set->name : "(unnamed)", set->name ? "supported()" : "name");
    memset(out, 0, sizeof *out);
    out->k = *set;
    out->set = set;
    for (int f = 0; f < N_FAMILIES; f++) {
        const int per_type = families[f].per_type;
        for (int t = per_type ? 0 : -1; t < (per_type ? PL_TYPE_COUNT : 0); t++) {
            if (per_type && !type_implemented(t)) continue;
            const int ti = t < 0 ? 0 : t;
            if (get_slot(set, f, ti)) continue;
            if (!get_slot(&pl_kernels_ref, f, ti))
                return fail(err, PL_ERR_INVALID_ARG, "kernel set 'ref' lacks %s%s%s (build bug)",
                            families[f].name, per_type ? " for " : "",
                            per_type ? pl_type_traits_of((uint32_t)t)->name : "");
            copy_slot(&out->k, &pl_kernels_ref, f, ti);
            out->fallbacks[out->n_fallbacks++] = (pl_kernel_fallback){.family = f, .type = t};
        }
    }
    return ok(err);
}

static pl_status init_from(pl_kernel_table *out, const char *name, const char *origin,
                           pl_error *err)
{
    if (!out) return fail(err, PL_ERR_INVALID_ARG, "pl_kernels_init: out is NULL");
    const struct pl_kernels *s;
    pl_status st = select_set(&s, name, origin, err);
    if (st != PL_OK) return st;
    st = pl_kernels_resolve(out, s, err);
    if (st == PL_OK) out->by_name = name && *name;
    return st;
}

pl_status pl_kernels_init(pl_kernel_table *out, const char *name, pl_error *err)
{
    return init_from(out, name, "kernel set ", err);
}

pl_status pl_kernels_init_env(pl_kernel_table *out, pl_error *err)
{
    return init_from(out, getenv("PLUMB_KERNELS"), "PLUMB_KERNELS=", err);
}

/* ---- report ---------------------------------------------------------------------------- */

/* Report lines are assembled in a buffer and written without trailing blanks. */
struct line {
    char text[256];
    size_t len;
};

static void addf(struct line *l, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void addf(struct line *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(l->text + l->len, sizeof l->text - l->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        l->len = l->len + (size_t)n < sizeof l->text ? l->len + (size_t)n : sizeof l->text - 1;
}

static void put_line(struct line *l, pl_kernels_write_fn write, void *user)
{
    while (l->len > 0 && l->text[l->len - 1] == ' ') l->len--;
    l->text[l->len++] = '\n';
    write(user, l->text, l->len);
    l->len = 0;
}

static int is_fallback(const pl_kernel_table *t, int family, int type)
{
    for (int i = 0; i < t->n_fallbacks; i++)
        if (t->fallbacks[i].family == family && t->fallbacks[i].type == type) return 1;
    return 0;
}

void pl_kernels_report(const pl_kernel_table *t, pl_kernels_write_fn write, void *user)
{
    struct line l = {.len = 0};
    addf(&l, "kernel sets (best first):");
    put_line(&l, write, user);
    for (int i = 0; i < N_SETS; i++) {
        addf(&l, "  %-8s %-13s%s%s", sets[i]->name,
             sets[i]->supported() ? "supported" : "not supported",
             pl_kernel_set_by_name_only(sets[i]) ? "  (by name only)" : "",
             t && t->set == sets[i] ? "  <- chosen" : "");
        put_line(&l, write, user);
    }
    if (!t) return;
    addf(&l, "chosen: %s (%s)", t->k.name,
         t->by_name ? "by name, PLUMB_KERNELS" : "best set this CPU supports");
    put_line(&l, write, user);
    addf(&l, "providers (own: %s itself; ref: fallback to the reference set):", t->k.name);
    put_line(&l, write, user);

    addf(&l, "%-15s", "family");
    for (int ty = 0; ty < PL_TYPE_COUNT; ty++)
        if (type_implemented(ty)) addf(&l, " %-6s", pl_type_traits_of((uint32_t)ty)->name);
    put_line(&l, write, user);
    for (int f = 0; f < N_FAMILIES; f++) {
        if (!families[f].per_type) continue;
        addf(&l, "%-15s", families[f].name);
        for (int ty = 0; ty < PL_TYPE_COUNT; ty++)
            if (type_implemented(ty)) addf(&l, " %-6s", is_fallback(t, f, ty) ? "ref" : "own");
        put_line(&l, write, user);
    }
    for (int f = 0; f < N_FAMILIES; f++) {
        if (families[f].per_type) continue;
        addf(&l, "%-15s %s", families[f].name, is_fallback(t, f, -1) ? "ref" : "own");
        put_line(&l, write, user);
    }

    addf(&l, "fallbacks to ref: %d", t->n_fallbacks);
    put_line(&l, write, user);
    for (int i = 0; i < t->n_fallbacks; i++) {
        const pl_kernel_fallback *fb = &t->fallbacks[i];
        addf(&l, "  %s%s%s -> ref", families[fb->family].name, fb->type >= 0 ? " " : "",
             fb->type >= 0 ? pl_type_traits_of((uint32_t)fb->type)->name : "");
        put_line(&l, write, user);
    }
}

struct buf_sink {
    char *buf;
    size_t cap, len;
};

static void buf_write(void *user, const char *text, size_t len)
{
    struct buf_sink *s = user;
    if (s->cap > 0 && s->len < s->cap - 1) {
        size_t room = s->cap - 1 - s->len;
        memcpy(s->buf + s->len, text, len < room ? len : room);
    }
    s->len += len;
}

size_t pl_kernels_report_buf(char *buf, size_t cap, const pl_kernel_table *t)
{
    struct buf_sink s = {buf, cap, 0};
    pl_kernels_report(t, buf_write, &s);
    if (cap > 0) buf[s.len < cap ? s.len : cap - 1] = '\0';
    return s.len;
}
