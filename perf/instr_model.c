/* instr_model.c — the phases of a model run, each between callgrind client requests, so that
 * `valgrind --tool=callgrind --collect-atstart=no` dumps the instructions of each phase under
 * its name: setup (load + session), a prefill of P1 tokens, a prefill of P2 tokens (fresh
 * session state), then D decode steps after it. perf/perf_instr.sh turns them into instructions
 * per prefilled token ((P2 - P1) tokens' difference, so the per-call cost cancels) and per
 * decoded token. One thread: a pool's spin-waits would make the counts depend on scheduling.
 * Natively the requests are no-ops. Public API only. Not a timing benchmark.
 *
 * Run: ./instr_model MODEL.gguf SET P1 P2 D   (prints one line per phase: name tokens) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <valgrind/callgrind.h>

#include "plumb.h"

static void measure_begin(void)
{
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
}

static void measure_end(const char *name, long tokens)
{
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT(name);
    printf("%s %ld\n", name, tokens);
}

static int fail(const char *what, const pl_error *err)
{
    fprintf(stderr, "instr_model: %s: %s\n", what, err->msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: instr_model MODEL.gguf SET P1 P2 D\n");
        return 2;
    }
    const char *set = argv[2];
    long p1 = atol(argv[3]), p2 = atol(argv[4]), d = atol(argv[5]);
    if (p1 < 1 || p2 <= p1 || d < 1 || p2 + d > 4096) {
        fprintf(stderr, "instr_model: need 1 <= P1 < P2, D >= 1, P2 + D <= 4096\n");
        return 2;
    }
    pl_error err = {0};
    pl_model *m = NULL;
    pl_session *s = NULL;
    pl_model_params mp = {.flags = 0, .kernels = set};

    measure_begin();
    if (pl_model_load(&m, argv[1], &mp, &err) != PL_OK) return fail("load", &err);
    pl_session_params sp = pl_session_default_params(m);
    sp.n_threads = 1;
    sp.kernels = set;
    sp.context_window = p2 + d;
    if (pl_session_new(&s, m, &sp, &err) != PL_OK) return fail("session", &err);
    measure_end("setup", 0);

    pl_model_info info;
    if (pl_model_get_info(m, &info, &err) != PL_OK) return fail("info", &err);
    int32_t *ids = malloc((size_t)(p2 + d) * sizeof(int32_t));
    /* Each eval computes the last token's logits, as a generation would. */
    float *logits = malloc((size_t)info.n_vocab * sizeof(float));
    if (!ids || !logits) return 1;
    /* Token ids 1, 2, …: valid in every vocabulary of the presets. */
    for (long i = 0; i < p2 + d; i++) ids[i] = (int32_t)(1 + i);

    char name[64];
    long ps[2] = {p1, p2};
    for (int i = 0; i < 2; i++) {
        pl_session_reset(s);
        snprintf(name, sizeof name, "prefill_%ld", ps[i]);
        measure_begin();
        if (pl_session_eval(s, ids, ps[i], logits, 0, &err) != PL_OK) return fail("prefill", &err);
        measure_end(name, ps[i]);
    }
    snprintf(name, sizeof name, "decode_%ld", d);
    measure_begin();
    for (long i = 0; i < d; i++)
        if (pl_session_eval(s, ids + p2 + i, 1, logits, 0, &err) != PL_OK)
            return fail("decode", &err);
    measure_end(name, d);

    free(logits);
    free(ids);
    pl_session_free(s);
    pl_model_free(m);
    return 0;
}
