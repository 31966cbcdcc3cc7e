/* testutil.h — what every CUnit test binary shares: the runner, seeded randomness,
 * allocation-failure injection. Not a test framework: CUnit is that. */
#ifndef PLUMB_TESTUTIL_H
#define PLUMB_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <CUnit/CUnit.h>

/* One test: a name that states the behaviour it pins, and the function. */
typedef struct tu_test {
    const char *name;
    void (*fn)(void);
} tu_test;

/* Runs the tests (NULL-terminated array) as one CUnit suite named `suite`, prints the
 * CUnit summary, and returns the process exit code (0 only if all passed).
 * PLUMB_TEST=<substring>[,<substring>...] runs only the tests whose name holds one (^<prefix>:
 * starts with it); PLUMB_TEST_LIST=1 prints the names and runs none. */
int tu_run(const char *suite, const tu_test *tests);

/* The base seed: PLUMB_SEED from the environment if set (to replay), else a fixed
 * default so runs are deterministic. Printed by tu_run. */
/* The whole file at path, NUL-terminated (malloc'd; *n its length), or NULL. */
char *tu_read_file(const char *path, size_t *n);
uint64_t tu_seed(void);

/* A small deterministic generator (splitmix64 seeded, xoshiro256**). */
typedef struct tu_rng {
    uint64_t s[4];
    double spare; /* tu_rng_normal's second value of its last pair, when has_spare */
    int has_spare;
} tu_rng;
void tu_rng_init(tu_rng *r, uint64_t seed);
uint64_t tu_rng_u64(tu_rng *r);
double tu_rng_uniform(tu_rng *r);                        /* [0, 1) */
int64_t tu_rng_range(tu_rng *r, int64_t lo, int64_t hi); /* [lo, hi] inclusive */
double tu_rng_normal(tu_rng *r);                         /* standard normal */
/* The same through void *, for helpers that take a generator they do not know (chat_ops_random). */
int64_t tu_rng_range_v(void *r, int64_t lo, int64_t hi);
uint64_t tu_rng_u64_v(void *r);

/* Allocation-failure injection (SQLite style) through pl_alloc_set_hook:
 * allocation number `n` (1-based, counted from tu_alloc_fail_at) fails; with
 * persistent != 0 every allocation after it fails too. n = 0 disables failing but
 * keeps counting. tu_alloc_count() says how many allocations were attempted. */
void tu_alloc_fail_at(uint64_t n, int persistent);
uint64_t tu_alloc_count(void);
uint64_t tu_alloc_failed(void); /* how many were made to fail */
void tu_alloc_reset(void);      /* removes the hook */

/* CU_ASSERT with a formatted message printed on failure (seed, shape, worst element). */
#define TU_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        int tu_ok_ = !!(cond);                                                                     \
        if (!tu_ok_) {                                                                             \
            fprintf(stderr, "  FAIL %s:%d: ", __FILE__, __LINE__);                                 \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
        CU_ASSERT(tu_ok_);                                                                         \
    } while (0)

#endif
