/* core.h — the engine's lowest layer, used by every engine source: errors, the allocation hook,
 * checked sizes, file mapping. Not public: tests may include it for white-box checks. */
#ifndef PLUMB_CORE_H
#define PLUMB_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "plumb.h"

#if defined(__GNUC__)
#define PL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PL_PRINTF(a, b)
#endif

/* Fills *err (when non-NULL) with code and a formatted message; returns code. */
pl_status pl_fail(pl_error *err, pl_status code, const char *fmt, ...) PL_PRINTF(3, 4);
/* Prepends "<prefix>: " to err->msg (truncating at the end), keeping the code. */
void pl_error_prefix(pl_error *err, const char *prefix);
/* Resets *err to PL_OK with an empty message; returns PL_OK. */
pl_status pl_ok(pl_error *err);

/* All library allocations go through these, so tests can make allocation N fail.
 * The hook is the one piece of global state, and only tests set it. */
void *pl_malloc(size_t n);
void *pl_calloc(size_t count, size_t size);
void *pl_realloc(void *p, size_t n);
void pl_free(void *p);

/* Returns nonzero to make this allocation fail. Called once per pl_malloc/calloc/realloc. */
typedef int (*pl_alloc_fail_fn)(void *user);
void pl_alloc_set_hook(pl_alloc_fail_fn fn, void *user);

/* Overflow-checked size arithmetic: return 1 and store the result, or 0 on overflow. */
static inline int pl_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}
static inline int pl_add_size(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}
static inline int pl_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline int pl_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

/* pl_clock_ns in milliseconds, for the engine's timings (pl_gen_stats, load times). */
static inline double pl_clock_ms(void)
{
    return 1e-6 * (double)pl_clock_ns();
}

/* UTF-8 lead byte c: the length of the character it starts (1 to 4; 0: none) and the range
 * [*lo, *hi] its second byte must fall in (text.c; pl_utf8_char in plumb.h checks the rest). */
size_t pl_utf8_lead(unsigned c, unsigned *lo, unsigned *hi);

/* Whole-file mapping (read-only mmap). */
typedef struct pl_mapping {
    const void *data;
    size_t size;
    int is_mmap; /* 0 for an empty file (nothing mapped) */
} pl_mapping;
pl_status pl_map_file(pl_mapping *m, const char *path, pl_error *err);
void pl_unmap_file(pl_mapping *m);
/* Drops the whole pages of [p, p + n) from this process's memory when they lie in the mapping
 * (a later read faults them back in from the file). A no-op for anything else: memory buffers
 * are never touched. For weights that were copied elsewhere (repacked). */
void pl_mapping_release(const pl_mapping *m, const void *p, size_t n);

#endif
