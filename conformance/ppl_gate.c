/* ppl_gate.c — issue 14's quantization gate on a real model: Q8_0 may move the perplexity of a
 * short text by at most 0.5 %, Q4_K_M by at most 5 %, against F32. Not a unit test: it needs
 * the model files, so CMake registers it only when PLUMB_PPL_GATE names them.
 *
 * usage: ppl_gate F32.gguf Q8_0.gguf Q4_K_M.gguf TEXT [N_CTX [MAX_WINDOWS]]
 * TEXT is tokenized with the model's tokenizer (BOS added when it asks); N_CTX 0 or absent:
 * min(the model's context, 512); MAX_WINDOWS 0 or absent: every whole window. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plumb.h"
#include "testutil.h"

static const char *paths[3], *text_path;
static int64_t n_ctx, max_windows;
static double ppl[3], ppl_se[3];
static int done[3];

static const char *const names[3] = {"F32", "Q8_0", "Q4_K_M"};

static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Perplexity of model i on the text (once; the tests share the F32 result). */
static int measure(int i)
{
    if (done[i]) return done[i] > 0;
    done[i] = -1;
    pl_error err;
    pl_model *m = NULL;
    int32_t *tok = NULL;
    size_t len = 0, n = 0;
    char *text = read_text(text_path, &len);
    if (!text) {
        fprintf(stderr, "  %s: cannot read: %s\n", text_path, strerror(errno));
        return 0;
    }
    pl_status st = pl_model_load(&m, paths[i], NULL, &err);
    if (!st) {
        pl_tokenize(m, text, len, PL_TOKENIZE_ADD_BOS, NULL, 0, &n, NULL);
        tok = malloc((n ? n : 1) * sizeof *tok);
        st = pl_tokenize(m, text, len, PL_TOKENIZE_ADD_BOS, tok, n, &n, &err);
    }
    pl_ppl_result r;
    if (!st) {
        pl_ppl_params p = pl_ppl_default_params(m);
        p.n_ctx = n_ctx;
        p.max_windows = max_windows;
        st = pl_perplexity(m, tok, (int64_t)n, &p, NULL, NULL, &r, NULL, 0, &err);
    }
    if (st) {
        fprintf(stderr, "  %s (%s): %s: %s\n", names[i], paths[i], pl_status_str(st), err.msg);
    } else {
        ppl[i] = r.ppl;
        ppl_se[i] = r.ppl_se;
        done[i] = 1;
        printf("\n  %-7s PPL %.4f ± %.4f (%lld windows of %lld, %lld tokens scored)", names[i],
               r.ppl, r.ppl_se, (long long)r.plan.n_windows, (long long)r.plan.n_ctx,
               (long long)r.plan.n_scored);
        if (i) printf(", %+.3f %% vs F32", 100 * (r.ppl / ppl[0] - 1));
        printf("\n");
    }
    free(tok);
    free(text);
    pl_model_free(m);
    return done[i] > 0;
}

static void gate(int i, double max_percent)
{
    if (!measure(0) || !measure(i)) {
        CU_FAIL("a perplexity could not be measured (see above)");
        return;
    }
    double moved = 100 * fabs(ppl[i] / ppl[0] - 1);
    TU_CHECK(moved <= max_percent, "%s moves PPL by %.3f %% (%.4f -> %.4f), over %.1f %%", names[i],
             moved, ppl[0], ppl[i], max_percent);
}

static void ppl_gate_q8_0_moves_ppl_at_most_half_a_percent(void)
{
    gate(1, 0.5);
}

static void ppl_gate_q4_k_m_moves_ppl_at_most_5_percent(void)
{
    gate(2, 5.0);
}

static int64_t arg_i64(const char *s, const char *what)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0) {
        fprintf(stderr, "ppl_gate: %s: '%s' is not a count\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: %s F32.gguf Q8_0.gguf Q4_K_M.gguf TEXT [N_CTX [MAX_WINDOWS]]\n",
                argv[0]);
        return 2;
    }
    for (int i = 0; i < 3; i++) paths[i] = argv[1 + i];
    text_path = argv[4];
    if (argc > 5) n_ctx = arg_i64(argv[5], "N_CTX");
    if (argc > 6) max_windows = arg_i64(argv[6], "MAX_WINDOWS");
    static const tu_test tests[] = {
        {"ppl_gate_q8_0_moves_ppl_at_most_half_a_percent",
         ppl_gate_q8_0_moves_ppl_at_most_half_a_percent},
        {"ppl_gate_q4_k_m_moves_ppl_at_most_5_percent",
         ppl_gate_q4_k_m_moves_ppl_at_most_5_percent},
        {NULL, NULL},
    };
    return tu_run("ppl_gate", tests);
}
