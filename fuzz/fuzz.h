/* fuzz.h — the contract between a harness (fuzz_<name>.c) and the shared driver (driver.c):
 * a harness defines fuzz_init and fuzz_one; the driver feeds it AFL++ test cases or files. */
#ifndef PLUMB_FUZZ_H
#define PLUMB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Called once before any input (build fixed vocabularies, pick kernel sets...). */
void fuzz_init(void);
/* One input. Returns normally when every oracle holds; FUZZ_CHECK aborts otherwise, so
 * AFL++ records a crash and the replay driver fails. */
void fuzz_one(const uint8_t *data, size_t size);
/* Optional: after a replay that passed, with PLUMB_FUZZ_REPLAY_CHECK=1 (as the fuzz_replay_*
 * tests run), says whether the inputs covered what the harness must cover (every listed quant
 * type, say): 0 yes, else 1 after naming what is missing on stderr. */
#if defined(__GNUC__)
__attribute__((weak))
#endif
int fuzz_replay_done(void);

/* An oracle: when it fails, says which and where, then aborts. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: oracle failed: %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
