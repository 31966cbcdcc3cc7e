/* registry.h — the compiled kernel sets, the choice of one for this CPU (or by name), and
 * its resolution into a complete table whose fallbacks to ref are recorded and reportable.
 * Not a dispatcher: callers keep the resolved table and call through it. */
#ifndef PLUMB_KERNELS_REGISTRY_H
#define PLUMB_KERNELS_REGISTRY_H

#include <stddef.h>

#include "kernels.h"

/* The kernel families: one row each, naming a field of struct pl_kernels, made from kernels.h's
 * PL_KERNEL_FAMILIES. A new family is a typedef and a row of that list (and its ref kernel);
 * resolving, fallbacks and the report go through the rows (offsetof), never a switch per family. */
typedef struct pl_kernel_family {
    const char *name; /* "quantize_row", "matmul", "rmsnorm", … */
    size_t offset;    /* offsetof(struct pl_kernels, <field>) */
    int per_type;     /* 1: the field is an array of PL_TYPE_COUNT entries indexed by pl_type */
} pl_kernel_family;

/* The families in table order (the per-type ones first); NULL when i is out of range. */
int pl_kernel_family_count(void);
const pl_kernel_family *pl_kernel_family_at(int i);
/* The index of the family with this name, or -1. */
int pl_kernel_family_find(const char *name);
/* The family's name; NULL out of range. */
const char *pl_kernel_family_name(int family);

/* One entry the chosen set left NULL and the resolved table took from ref. */
typedef struct pl_kernel_fallback {
    int family; /* index of pl_kernel_family_at() */
    int type;   /* pl_type for per-type families, -1 for the others */
} pl_kernel_fallback;

/* Every slot of the table is one pointer, so there are no more entries than pointers. */
#define PL_KERNEL_MAX_FALLBACKS (sizeof(struct pl_kernels) / sizeof(void (*)(void)))

/* A set resolved for use: every entry of every implemented type is non-NULL. */
typedef struct pl_kernel_table {
    struct pl_kernels k;          /* the table to call through; k.name is the chosen set's */
    const struct pl_kernels *set; /* the chosen set as compiled (may have NULL entries) */
    int by_name;                  /* 1: chosen by name (PLUMB_KERNELS); 0: best supported */
    int n_fallbacks;
    pl_kernel_fallback fallbacks[PL_KERNEL_MAX_FALLBACKS]; /* in family, then type order */
} pl_kernel_table;

/* The compiled sets, best first (ref is always last). NULL when i is out of range. */
int pl_kernel_set_count(void);
const struct pl_kernels *pl_kernel_set(int i);
/* The compiled set with this name, or NULL. */
const struct pl_kernels *pl_kernel_set_find(const char *name);
/* 1 if the set is chosen only by name, never by default: wasm128 built natively (through SIMDe,
 * a correctness vehicle for the browser's kernels, not a fast set on any CPU). */
int pl_kernel_set_by_name_only(const struct pl_kernels *s);

/* Picks a set. name NULL or "": the first compiled set whose supported() says yes and that is
 * not by name only.
 * Otherwise that set: PL_ERR_NOT_FOUND (message lists the compiled sets) if no set has the
 * name, PL_ERR_UNSUPPORTED (message lists the supported ones) if this CPU cannot run it. */
pl_status pl_kernels_select(const struct pl_kernels **out, const char *name, pl_error *err);

/* Fills *out from set: entries the set leaves NULL are taken from ref and recorded in
 * out->fallbacks. PL_ERR_INVALID_ARG for a set without name or supported(), or when even
 * ref lacks an entry for an implemented type (a build bug). Writes only *out. */
pl_status pl_kernels_resolve(pl_kernel_table *out, const struct pl_kernels *set, pl_error *err);

/* select + resolve. pl_kernels_init_env takes the name from the PLUMB_KERNELS environment
 * variable (unset or empty: best supported), and its errors say so. */
pl_status pl_kernels_init(pl_kernel_table *out, const char *name, pl_error *err);
pl_status pl_kernels_init_env(pl_kernel_table *out, pl_error *err);

/* The `plumb kernels` report: every compiled set and whether this CPU supports it, the
 * chosen one and why, a provider matrix (family x type: the set's own kernel or "ref"),
 * and the list of fallbacks. Text, '\n'-terminated lines, emitted through write() in
 * pieces (each piece is not NUL-terminated; len bytes). t may be NULL: sets only. */
typedef void (*pl_kernels_write_fn)(void *user, const char *text, size_t len);
void pl_kernels_report(const pl_kernel_table *t, pl_kernels_write_fn write, void *user);
/* The same into buf (always NUL-terminated when cap > 0, truncated if short). Returns the
 * length of the full report, so a return >= cap means it was truncated (snprintf style). */
size_t pl_kernels_report_buf(char *buf, size_t cap, const pl_kernel_table *t);

#endif
