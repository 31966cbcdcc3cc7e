/* testutil.c — CUnit runner, seeds, RNG and allocation-failure injection for tests.
 * Test-only code: never linked into libplumb. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "core/core.h"
#include "testutil.h"

char *tu_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap);
            if (!nb) break;
            buf = nb;
        }
        size_t r = fread(buf + len, 1, cap - len - 1, f);
        len += r;
        if (r == 0) break;
    }
    fclose(f);
    if (buf) buf[len] = 0;
    *n = len;
    return buf;
}

uint64_t tu_seed(void)
{
    const char *s = getenv("PLUMB_SEED");
    if (s && *s) return strtoull(s, NULL, 0);
    return 0x706c756d62ull; /* "plumb" */
}

/* Whether name contains one of the comma-separated substrings of filters ('^' first: starts
 * with it). */
static int name_matches(const char *name, const char *filters)
{
    for (const char *f = filters;;) {
        const char *end = strchr(f, ',');
        size_t n = end ? (size_t)(end - f) : strlen(f);
        if (n == 0) return 1; /* an empty filter, as strstr's "", matches every name */
        if (f[0] == '^') {
            if (strncmp(name, f + 1, n - 1) == 0) return 1;
        } else {
            for (const char *p = name; *p; p++)
                if (strncmp(p, f, n) == 0) return 1;
        }
        if (!end) return 0;
        f = end + 1;
    }
}

int tu_run(const char *suite, const tu_test *tests)
{
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite(suite, NULL, NULL);
    if (!s) return 2;
    /* PLUMB_TEST_LIST=1 prints the test names, one a line, and runs nothing (the ctest cases
     * that split a binary check with it that they run every test: split_cases.sh). */
    const char *list = getenv("PLUMB_TEST_LIST");
    if (list && strcmp(list, "1") == 0) {
        for (const tu_test *t = tests; t->name; t++) printf("%s\n", t->name);
        CU_cleanup_registry();
        return 0;
    }
    /* PLUMB_TEST=<substring>[,<substring>...] runs only the tests whose name contains one
     * (^<prefix>: whose name starts with it). */
    const char *only = getenv("PLUMB_TEST");
    for (const tu_test *t = tests; t->name; t++)
        if ((!only || name_matches(t->name, only)) && !CU_add_test(s, t->name, t->fn)) return 2;
    printf("%s: seed %" PRIu64 " (replay with PLUMB_SEED=%" PRIu64 ")\n", suite, tu_seed(),
           tu_seed());
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned run = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    return (failed == 0 && run > 0) ? 0 : 1;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void tu_rng_init(tu_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix(&seed);
    r->spare = 0.0;
    r->has_spare = 0;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t tu_rng_u64(tu_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double tu_rng_uniform(tu_rng *r)
{
    return (double)(tu_rng_u64(r) >> 11) * 0x1p-53;
}

int64_t tu_rng_range(tu_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1u;
    if (span == 0) return (int64_t)tu_rng_u64(r);
    return lo + (int64_t)(tu_rng_u64(r) % span);
}

int64_t tu_rng_range_v(void *r, int64_t lo, int64_t hi)
{
    return tu_rng_range(r, lo, hi);
}

uint64_t tu_rng_u64_v(void *r)
{
    return tu_rng_u64(r);
}

/* Marsaglia's polar method: a point (u, v) uniform in the unit disc (the square's corners
 * rejected), s = u^2 + v^2, gives two independent normals u m and v m, m = sqrt(-2 ln s / s);
 * the second is kept for the next call. No sin or cos: the Box-Muller form it replaced spent
 * half of test_matmul's CPU in glibc's cos and log. */
double tu_rng_normal(tu_rng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u, v, s;
    do {
        u = 2.0 * tu_rng_uniform(r) - 1.0;
        v = 2.0 * tu_rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double m = sqrt(-2.0 * log(s) / s);
    r->spare = v * m;
    r->has_spare = 1;
    return u * m;
}

static struct {
    uint64_t count, fail_at, failed;
    int persistent;
} alloc_state;

static int alloc_hook(void *user)
{
    (void)user;
    alloc_state.count++;
    if (alloc_state.fail_at == 0) return 0;
    if (alloc_state.count == alloc_state.fail_at ||
        (alloc_state.persistent && alloc_state.count > alloc_state.fail_at)) {
        alloc_state.failed++;
        return 1;
    }
    return 0;
}

void tu_alloc_fail_at(uint64_t n, int persistent)
{
    memset(&alloc_state, 0, sizeof alloc_state);
    alloc_state.fail_at = n;
    alloc_state.persistent = persistent;
    pl_alloc_set_hook(alloc_hook, NULL);
}

uint64_t tu_alloc_count(void)
{
    return alloc_state.count;
}

uint64_t tu_alloc_failed(void)
{
    return alloc_state.failed;
}

void tu_alloc_reset(void)
{
    pl_alloc_set_hook(NULL, NULL);
    memset(&alloc_state, 0, sizeof alloc_state);
}
