/* driver.c — runs one harness: under afl-clang-fast an AFL++ persistent-mode loop over
 * shared-memory test cases; with file or directory arguments (any build) a replay driver; built
 * with PLUMB_FUZZ_ENGINE (fuzz.cmake: -fsanitize=fuzzer, or a fuzzing service's
 * $LIB_FUZZING_ENGINE) the libFuzzer entry points instead, and the engine brings main.
 * Not a harness: the oracles live in fuzz_<name>.c. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "plumb.h"

#ifdef PLUMB_FUZZ_LIBFUZZER

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

/* libFuzzer already hands over an exact-size heap copy, so ASan sees a read one past the end. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_one(data, size);
    return 0;
}

#else

#ifdef __AFL_FUZZ_TESTCASE_LEN
__AFL_FUZZ_INIT();
#endif

#define FUZZ_MAX_INPUT                                                                             \
    (8u << 20) /* larger replay files are refused, as AFL++ would never make them */

static int replay_file(const char *path, int *n_files)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    uint8_t *buf = malloc(FUZZ_MAX_INPUT);
    size_t n = buf ? fread(buf, 1, FUZZ_MAX_INPUT, f) : 0;
    int bad = !buf || ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: read failed\n", path);
        free(buf);
        return 1;
    }
    /* An exact-size copy, so ASan sees a read one past the end of the input. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return 1;
    }
    memcpy(exact, buf, n);
    free(buf);
    fuzz_one(exact, n);
    free(exact);
    (*n_files)++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of a directory, in name order, recursively; dot files are skipped (READMEs stay
 * possible as *.md, but any regular file is an input). */
static int replay_path(const char *path, int *n_files)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) return replay_file(path, n_files);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn) {
                rc = 1;
                break;
            }
            names = nn;
        }
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) {
            rc = 1;
            break;
        }
        snprintf(names[n], len, "%s/%s", path, e->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (!rc) rc = replay_path(names[i], n_files);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    fuzz_init();
#ifdef __AFL_FUZZ_TESTCASE_LEN
    if (argc < 2) {
        __AFL_INIT();
        const unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;
        while (__AFL_LOOP(10000)) {
            /* An exact-size heap copy: ASan then sees a read one past the end. */
            size_t len = (size_t)__AFL_FUZZ_TESTCASE_LEN;
            uint8_t *copy = malloc(len ? len : 1);
            if (!copy) abort();
            memcpy(copy, buf, len);
            fuzz_one(copy, len);
            free(copy);
        }
        return 0;
    }
#endif
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...  (replays every input; exit 0 when all pass)\n",
                argv[0]);
        return 2;
    }
    const uint64_t t0 = pl_clock_ns();
    int n_files = 0, rc = 0;
    for (int i = 1; i < argc && !rc; i++) rc = replay_path(argv[i], &n_files);
    /* The replay tests (fuzz.cmake) also ask the harness whether the inputs covered it. */
    const char *check = getenv("PLUMB_FUZZ_REPLAY_CHECK");
    if (!rc && fuzz_replay_done && check && strcmp(check, "1") == 0) rc = fuzz_replay_done();
    const double s = 1e-9 * (double)(pl_clock_ns() - t0);
    printf("%s: replayed %d inputs in %.2f s%s\n", argv[0], n_files, s, rc ? " (FAILED)" : "");
    return rc;
}

#endif /* PLUMB_FUZZ_LIBFUZZER */
