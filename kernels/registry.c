/* registry.c — the list of compiled kernel sets, choosing one, and resolving it against
 * ref with every fallback recorded. Not kernels, and no printing: errors go to pl_error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

/* Best first. SIMD sets are added here, above ref, as they are written. */
static const struct pl_kernels *const sets[] = {
#if PLUMB_X86_SETS
    &pl_kernels_avx512,
    &pl_kernels_avx2,
#endif
    &pl_kernels_ref,
};
#define N_SETS ((int)(sizeof sets / sizeof sets[0]))

static const char *const family_names[PL_KF_COUNT] = {
    [PL_KF_QUANTIZE_ROW] = "quantize_row",
    [PL_KF_DEQUANTIZE_ROW] = "dequantize_row",
    [PL_KF_MATMUL] = "matmul",
    [PL_KF_RMSNORM] = "rmsnorm",
    [PL_KF_ROPE] = "rope",
    [PL_KF_SOFTMAX] = "softmax",
    [PL_KF_SWIGLU] = "swiglu",
    [PL_KF_ATTENTION] = "attention",
    [PL_KF_TEMPERATURE] = "temperature",
    [PL_KF_PENALTIES] = "penalties",
    [PL_KF_CAND_SOFTMAX] = "cand_softmax",
    [PL_KF_TOP_K] = "top_k",
    [PL_KF_TOP_P] = "top_p",
    [PL_KF_MIN_P] = "min_p",
    [PL_KF_DRAW] = "draw",
};

const char *pl_kernel_family_name(int family)
{
    if (family < 0 || family >= PL_KF_COUNT) return NULL;
    return family_names[family];
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
            if (sets[i]->supported()) {
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
 * NULL, never called through (void (*)(void) is C's "any function" pointer type). */
typedef void (*any_fn)(void);

static any_fn get_slot(const struct pl_kernels *k, int family, int type)
{
    switch (family) {
    case PL_KF_QUANTIZE_ROW:
        return (any_fn)k->quantize_row[type];
    case PL_KF_DEQUANTIZE_ROW:
        return (any_fn)k->dequantize_row[type];
    case PL_KF_MATMUL:
        return (any_fn)k->matmul[type];
    case PL_KF_RMSNORM:
        return (any_fn)k->rmsnorm;
    case PL_KF_ROPE:
        return (any_fn)k->rope;
    case PL_KF_SOFTMAX:
        return (any_fn)k->softmax;
    case PL_KF_SWIGLU:
        return (any_fn)k->swiglu;
    case PL_KF_ATTENTION:
        return (any_fn)k->attention;
    case PL_KF_TEMPERATURE:
        return (any_fn)k->temperature;
    case PL_KF_PENALTIES:
        return (any_fn)k->penalties;
    case PL_KF_CAND_SOFTMAX:
        return (any_fn)k->cand_softmax;
    case PL_KF_TOP_K:
        return (any_fn)k->top_k;
    case PL_KF_TOP_P:
        return (any_fn)k->top_p;
    case PL_KF_MIN_P:
        return (any_fn)k->min_p;
    case PL_KF_DRAW:
        return (any_fn)k->draw;
    }
    return NULL;
}

/* Copies (family, type) from src into dst. */
static void copy_slot(struct pl_kernels *dst, const struct pl_kernels *src, int family, int type)
{
    switch (family) {
    case PL_KF_QUANTIZE_ROW:
        dst->quantize_row[type] = src->quantize_row[type];
        break;
    case PL_KF_DEQUANTIZE_ROW:
        dst->dequantize_row[type] = src->dequantize_row[type];
        break;
    case PL_KF_MATMUL:
        dst->matmul[type] = src->matmul[type];
        break;
    case PL_KF_RMSNORM:
        dst->rmsnorm = src->rmsnorm;
        break;
    case PL_KF_ROPE:
        dst->rope = src->rope;
        break;
    case PL_KF_SOFTMAX:
        dst->softmax = src->softmax;
        break;
    case PL_KF_SWIGLU:
        dst->swiglu = src->swiglu;
        break;
    case PL_KF_ATTENTION:
        dst->attention = src->attention;
        break;
    case PL_KF_TEMPERATURE:
        dst->temperature = src->temperature;
        break;
    case PL_KF_PENALTIES:
        dst->penalties = src->penalties;
        break;
    case PL_KF_CAND_SOFTMAX:
        dst->cand_softmax = src->cand_softmax;
        break;
    case PL_KF_TOP_K:
        dst->top_k = src->top_k;
        break;
    case PL_KF_TOP_P:
        dst->top_p = src->top_p;
        break;
    case PL_KF_MIN_P:
        dst->min_p = src->min_p;
        break;
    case PL_KF_DRAW:
        dst->draw = src->draw;
        break;
    }
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
    for (int f = 0; f < PL_KF_COUNT; f++) {
        const int per_type = f < PL_KF_PER_TYPE;
        for (int t = per_type ? 0 : -1; t < (per_type ? PL_TYPE_COUNT : 0); t++) {
            if (per_type && !type_implemented(t)) continue;
            const int ti = t < 0 ? 0 : t;
            if (get_slot(set, f, ti)) continue;
            if (!get_slot(&pl_kernels_ref, f, ti))
                return fail(err, PL_ERR_INVALID_ARG, "kernel set 'ref' lacks %s%s%s (build bug)",
                            family_names[f], per_type ? " for " : "",
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
        addf(&l, "  %-8s %-13s%s", sets[i]->name,
             sets[i]->supported() ? "supported" : "not supported",
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
        if (type_implemented(ty)) addf(&l, " %-5s", pl_type_traits_of((uint32_t)ty)->name);
    put_line(&l, write, user);
    for (int f = 0; f < PL_KF_PER_TYPE; f++) {
        addf(&l, "%-15s", family_names[f]);
        for (int ty = 0; ty < PL_TYPE_COUNT; ty++)
            if (type_implemented(ty)) addf(&l, " %-5s", is_fallback(t, f, ty) ? "ref" : "own");
        put_line(&l, write, user);
    }
    for (int f = PL_KF_PER_TYPE; f < PL_KF_COUNT; f++) {
        addf(&l, "%-15s %s", family_names[f], is_fallback(t, f, -1) ? "ref" : "own");
        put_line(&l, write, user);
    }

    addf(&l, "fallbacks to ref: %d", t->n_fallbacks);
    put_line(&l, write, user);
    for (int i = 0; i < t->n_fallbacks; i++) {
        const pl_kernel_fallback *fb = &t->fallbacks[i];
        addf(&l, "  %s%s%s -> ref", family_names[fb->family], fb->type >= 0 ? " " : "",
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
