/* webgpu_models.c — the end-to-end side of the webgpu conformance run (issue 50): tiny models
 * of llama, qwen2 and qwen3 (conformance/tinymodel.c) for the WGSL forward pass
 * (kernels/webgpu/llama.mjs) to run in the page, then its logits judged against the
 * double-precision reference transformer (conformance/refs/ref_transformer.c) with test_e2e.c's
 * bound, and its greedy choices against the engine's `ref` kernel set on the same tokens.
 *
 *   webgpu_models gen DIR            writes DIR/models.json (each model: its name, the tokens,
 *                                    how many are one prefill, or the name the GPU path must
 *                                    refuse it by) and DIR/<name>.gguf
 *   webgpu_models check DIR OUT [F]  rebuilds each model (whose name holds F; =NAME: that one)
 *                                    from its spec and
 *                                    judges OUT/<name>.logits (positions x V floats) or, for a
 *                                    file the GPU path must refuse, OUT/<name>.refused (the
 *                                    error text: it must name what); exit 0 only if all pass
 *
 * The bound is test_e2e.c's type_tol with an F32 KV cache: |gpu - ref| <= tol * rms(ref) per
 * position (tol 0.125 for the quantized types, 1e-4 for F16), the argmax equal to the
 * reference's where its top two are more than twice the bound apart, and equal to the `ref`
 * kernel set's where the ref set's top two are that far apart (greedy text the same where no
 * near-tie). The tokens are evaluated one at a time at positions 0.. by the reference; the
 * page evaluates the first `split` as one prefill and the rest one at a time over its KV cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_transformer.h"
#include "testutil.h"
#include "tinymodel.h"

#define N_TOK   6  /* tokens of a model without a window */
#define SPLIT   4  /* of which one prefill, the rest decoded one at a time */
#define MAX_TOK 12 /* a windowed model's: past its window, its ring wrapped */

typedef struct wmodel {
    const char *arch;
    uint32_t type;
    int tied;
    int mix;            /* tiny_spec.mix: 1 puts Q6_K and Q5_0 matrices in the file, 3 Q6_K */
    const char *refuse; /* the GPU path must refuse the file, naming this */
    /* hostile variants (tiny_spec's): a tensor left out, a norm stored as F16, partial RoPE */
    const char *omit, *f16_norm;
    int64_t n_rot;
    const char *tag; /* the name's suffix for a variant */
    uint32_t embd;   /* nonzero: the type of token_embd and output (tiny_spec.embd_type) */
    /* > 0: the session's sliding window and sinks (pl_session_params), the page's steps (each
     * at most window - sinks tokens: the session's) over MAX_TOK tokens */
    int64_t window, sinks;
    int rope; /* > 0: a RoPE scaling of the file (ROPES[rope - 1]) */
} wmodel;

/* RoPE scalings as llama.cpp's keys and tensors carry them (test_e2e.c's variants). */
static const tiny_rope ROPES[] = {
    {NULL, 0, 0, 0, 0, 1, 0},       /* llama 3's divisors, no scaling keys (Llama 3.x files) */
    {"yarn", 4, 0, 16, 0.9f, 0, 1}, /* YaRN 4 over 16, untruncated, attn_factor 0.9 */
    {"linear", 4, 0, 0, 0, 0, 0},   /* linear 4 */
};

/* A windowed model's steps: prefill, a decode, a prefill, one that wraps the ring, decodes. */
static const int WSTEPS[] = {3, 1, 3, 2, 1, 2};
#define N_WSTEPS (int)(sizeof WSTEPS / sizeof WSTEPS[0])

static int n_tok(const wmodel *w)
{
    return w->window ? MAX_TOK : N_TOK;
}

/* Every architecture in F16 (the cheap type in SwiftShader, and the tight bound: the
 * architecture's own steps are seen at 1e-4 of the RMS), each quantized type once on a
 * different architecture (the quantized matmul of the set is the slow kernel there: about 10 s a
 * file on a loaded 2-core machine), tied embeddings on a quantized and an F16 file; a Q4_K_M
 * file (Q6_K attn_v, ffn_down, output and token_embd, Q4_K the rest); a session's sliding window
 * with sinks; RoPE scalings from the file; and a Q4_K_M-like mix with Q5_0 matrices, which the
 * set has no matmul for. */
static const wmodel MODELS[] = {
    {"llama", PL_TYPE_F16, 0, 0, NULL, NULL, NULL, 0, NULL, 0, 0, 0, 0},
    {"qwen2", PL_TYPE_F16, 0, 0, NULL, NULL, NULL, 0, NULL, 0, 0, 0, 0},
    {"qwen3", PL_TYPE_F16, 1, 0, NULL, NULL, NULL, 0, NULL, 0, 0, 0, 0},
    {"llama", PL_TYPE_Q8_0, 0, 0, NULL, NULL, NULL, 0, NULL, 0, 0, 0, 0},
    {"qwen2", PL_TYPE_Q4_K, 1, 0, NULL, NULL, NULL, 0, NULL, 0, 0, 0, 0},
    {"qwen3", PL_TYPE_Q4_0, 0, 0, NULL, NULL, NULL, 0, NULL, 0, 0, 0, 0},
    {"qwen2", PL_TYPE_Q4_K, 0, 1, "Q5_0", NULL, NULL, 0, NULL, 0, 0, 0, 0},
    /* what else the GPU path must refuse by name, before uploading anything (each refusal is
     * one readGGUF in the page: no GPU work) */
    {"gemma2", PL_TYPE_F16, 0, 0, "architecture gemma2", NULL, NULL, 0, NULL, 0, 0, 0, 0},
    {"llama", PL_TYPE_F16, 0, 0, "blk.1.ffn_up.weight: missing", "blk.1.ffn_up.weight", NULL, 0,
     "omit", 0, 0, 0, 0},
    {"qwen3", PL_TYPE_F16, 0, 0, "blk.0.attn_k_norm.weight is F16", NULL,
     "blk.0.attn_k_norm.weight", 0, "f16norm", 0, 0, 0, 0},
    {"llama", PL_TYPE_Q8_0, 0, 0, "rope.dimension_count", NULL, NULL, 32, "rot32", 0, 0, 0, 0},
    /* later additions (after the others: each model's draw is seeded by its index) */
    {"llama", PL_TYPE_Q4_K, 0, 3, NULL, NULL, NULL, 0, "q4km", PL_TYPE_Q6_K, 0, 0, 0},
    /* a sliding window of 5 with 2 sinks over 12 tokens: positions 2.. in a ring of 6 slots */
    {"llama", PL_TYPE_F16, 0, 0, NULL, NULL, NULL, 0, "w5s2", 0, 5, 2, 0},
    /* RoPE scalings from the file: llama 3's rope_freqs.weight, YaRN (neox), linear */
    {"llama", PL_TYPE_F16, 0, 0, NULL, NULL, NULL, 0, "llama3rope", 0, 0, 0, 1},
    {"qwen2", PL_TYPE_F16, 0, 0, NULL, NULL, NULL, 0, "yarn", 0, 0, 0, 2},
    {"qwen3", PL_TYPE_F16, 0, 0, NULL, NULL, NULL, 0, "linear", 0, 0, 0, 3},
};
#define N_MODELS (sizeof MODELS / sizeof MODELS[0])

static const char *type_name(uint32_t t)
{
    switch (t) {
    case PL_TYPE_Q8_0:
        return "Q8_0";
    case PL_TYPE_Q4_0:
        return "Q4_0";
    case PL_TYPE_Q4_K:
        return "Q4_K";
    case PL_TYPE_Q6_K:
        return "Q6_K";
    case PL_TYPE_F16:
        return "F16";
    default:
        return "?";
    }
}

static void model_name(const wmodel *w, char *out, size_t n)
{
    snprintf(out, n, "%s-%s%s%s%s%s", w->arch, type_name(w->type), w->tied ? "-tied" : "",
             w->mix && !w->tag ? "-mix" : "", w->tag ? "-" : "", w->tag ? w->tag : "");
}

static tiny_spec spec_of(const wmodel *w, int i)
{
    tiny_spec s = tiny_default(w->arch, w->type);
    s.F = 256; /* not 512: the FFN is most of the quantized matmuls' rows, SwiftShader's cost */
    s.tied = w->tied;
    s.mix = w->mix;
    if (w->embd) s.embd_type = w->embd;
    s.omit = w->omit;
    s.f16_norm = w->f16_norm;
    if (w->n_rot) s.n_rot = w->n_rot;
    if (w->rope) {
        s.edit = tiny_rope_edit;
        s.edit_user = &ROPES[w->rope - 1];
    }
    s.seed = 5000 + (uint64_t)i;
    return s;
}

static void tokens_of(int i, int64_t V, int32_t *t, int n)
{
    tu_rng r;
    tu_rng_init(&r, 9000 + (uint64_t)i);
    for (int k = 0; k < n; k++) t[k] = (int32_t)tu_rng_range(&r, 0, V - 1);
}

/* test_e2e.c's type_tol for an F32 KV cache (the page's cache is f32). */
static double type_tol(uint32_t wtype, int mix)
{
    if (mix) return 0.125;
    return wtype == PL_TYPE_F32 || wtype == PL_TYPE_F16 ? 1e-4 : 0.125;
}

static int gen(const char *dir)
{
    char path[4096], name[64];
    snprintf(path, sizeof path, "%s/models.json", dir);
    FILE *j = fopen(path, "w");
    if (!j) return fprintf(stderr, "cannot write %s\n", path), 1;
    fprintf(j, "{\"models\": [\n");
    for (size_t i = 0; i < N_MODELS; i++) {
        const wmodel *w = &MODELS[i];
        tiny_spec s = spec_of(w, (int)i);
        void *buf = NULL;
        size_t size = 0;
        if (tiny_build(&s, &buf, &size)) return fprintf(stderr, "tiny_build failed\n"), 1;
        model_name(w, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s.gguf", dir, name);
        FILE *f = fopen(path, "wb");
        int ok = f && fwrite(buf, 1, size, f) == size;
        if (f) ok &= fclose(f) == 0;
        pl_buffer_free(buf);
        if (!ok) return fprintf(stderr, "cannot write %s\n", path), 1;
        int32_t t[MAX_TOK];
        const int nt = n_tok(w);
        tokens_of((int)i, s.V, t, nt);
        fprintf(j,
                "  {\"name\": \"%s\", \"file\": \"%s.gguf\", \"refuse\": \"%s\", "
                "\"window\": %lld, \"sinks\": %lld, \"steps\": [",
                name, name, w->refuse ? w->refuse : "", (long long)w->window, (long long)w->sinks);
        if (w->window)
            for (int k = 0; k < N_WSTEPS; k++) fprintf(j, "%s%d", k ? ", " : "", WSTEPS[k]);
        else
            for (int k = 0; k <= N_TOK - SPLIT; k++)
                fprintf(j, "%s%d", k ? ", " : "", k ? 1 : SPLIT);
        fprintf(j, "], \"tokens\": [");
        for (int k = 0; k < nt; k++) fprintf(j, "%s%d", k ? ", " : "", t[k]);
        fprintf(j, "]}%s\n", i + 1 < N_MODELS ? "," : "");
    }
    fprintf(j, "]}\n");
    return fclose(j) != 0;
}

/* The `ref` kernel set's logits of every position (F32 KV cache), and the model's gguf for the
 * reference: 0 or -1. */
static int ref_set_logits(const wmodel *w, const void *buf, size_t size, const int32_t *t, int nt,
                          float *y, double *r)
{
    pl_model *m = NULL;
    pl_error e;
    const pl_model_params mp = {.kernels = "ref"};
    if (pl_model_load_memory(&m, buf, size, &mp, &e)) {
        fprintf(stderr, "load: %s\n", e.msg);
        return -1;
    }
    pl_session_params p = pl_session_default_params(m);
    p.n_threads = 1;
    p.kv_type = PL_TYPE_F32;
    p.kernels = "ref";
    if (w->window) {
        p.context_window = 0;
        p.sliding_window = w->window;
        p.attention_sinks = w->sinks;
    }
    pl_session *s = NULL;
    int rc = pl_session_new(&s, m, &p, &e) || pl_session_eval(s, t, nt, y, PL_EVAL_ALL_LOGITS, &e);
    if (rc) fprintf(stderr, "ref set: %s\n", e.msg);
    ref_model *rm = NULL;
    char msg[256];
    if (!rc && ref_model_load(&rm, pl_model_gguf(m), msg, sizeof msg)) {
        fprintf(stderr, "reference: %s\n", msg);
        rc = 1;
    }
    const ref_window rw = {w->window, w->sinks, w->window ? w->window : 128};
    if (!rc && ref_model_forward(rm, t, nt, &rw, r, NULL)) rc = 1;
    ref_model_free(rm);
    pl_session_free(s);
    pl_model_free(m);
    return rc ? -1 : 0;
}

/* The top two of n values: a1 the argmax, a2 the runner-up. */
static void top2d(const double *x, int64_t n, int64_t *a1, int64_t *a2)
{
    *a1 = 0;
    *a2 = -1;
    for (int64_t i = 1; i < n; i++) {
        if (x[i] > x[*a1]) {
            *a2 = *a1;
            *a1 = i;
        } else if (*a2 < 0 || x[i] > x[*a2]) {
            *a2 = i;
        }
    }
}

static int64_t argmaxf(const float *x, int64_t n)
{
    int64_t a = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[a]) a = i;
    return a;
}

static int check_one(const char *dir, const char *out, size_t i)
{
    const wmodel *w = &MODELS[i];
    char name[64], path[4096];
    model_name(w, name, sizeof name);
    if (w->refuse) {
        snprintf(path, sizeof path, "%s/%s.refused", out, name);
        size_t n = 0;
        char *msg = tu_read_file(path, &n);
        int ok = msg && strstr(msg, w->refuse) != NULL;
        printf("%s %s: refused by the GPU path naming %s: %s\n", ok ? "ok  " : "FAIL", name,
               w->refuse, msg ? msg : "(not refused: no .refused file)");
        free(msg);
        return !ok;
    }
    (void)dir;
    tiny_spec s = spec_of(w, (int)i);
    void *buf = NULL;
    size_t size = 0;
    if (tiny_build(&s, &buf, &size)) return printf("FAIL %s: tiny_build\n", name), 1;
    const int64_t V = s.V;
    const int nt = n_tok(w);
    int32_t t[MAX_TOK];
    tokens_of((int)i, V, t, nt);
    float *y = malloc(sizeof *y * (size_t)(nt * V));
    double *r = malloc(sizeof *r * (size_t)(nt * V));
    int rc = y && r ? ref_set_logits(w, buf, size, t, nt, y, r) : -1;
    pl_buffer_free(buf);
    snprintf(path, sizeof path, "%s/%s.logits", out, name);
    size_t n = 0;
    char *g = rc ? NULL : tu_read_file(path, &n);
    int fail = 0;
    if (rc) {
        printf("FAIL %s: the reference or the ref set did not run\n", name);
        fail = 1;
    } else if (!g || n != sizeof(float) * (size_t)(nt * V)) {
        printf("FAIL %s: %s: %zu bytes, want %lld\n", name, path, g ? n : 0,
               (long long)(sizeof(float) * (size_t)(nt * V)));
        fail = 1;
    } else {
        const float *gpu = (const float *)g;
        const double tol = type_tol(w->type, w->mix);
        double worst = 0, maxabs = 0;
        int arg_tested = 0, arg_bad = 0, greedy_tested = 0, greedy_bad = 0, bits = 0;
        for (int p = 0; p < nt; p++) {
            const double *rr = r + p * V;
            const float *gg = gpu + p * V, *yy = y + p * V;
            double ss = 0;
            for (int64_t k = 0; k < V; k++) ss += rr[k] * rr[k];
            const double bound = tol * sqrt(ss / (double)V);
            for (int64_t k = 0; k < V; k++) {
                const double d = fabs((double)gg[k] - rr[k]);
                if (!(d <= bound)) {
                    if (!fail)
                        printf("     %s position %d logit %lld: gpu %.9g reference %.9g |err| "
                               "%.3g > bound %.3g\n",
                               name, p, (long long)k, (double)gg[k], rr[k], d, bound);
                    fail = 1;
                }
                if (d > maxabs || d != d) maxabs = d;
                if (d / bound > worst || d != d) worst = d / bound;
                bits += memcmp(&gg[k], &yy[k], sizeof(float)) == 0;
            }
            int64_t a1, a2;
            top2d(rr, V, &a1, &a2);
            const int64_t ag = argmaxf(gg, V);
            if (a2 >= 0 && rr[a1] - rr[a2] > 2 * bound) {
                arg_tested++;
                arg_bad += ag != a1;
            }
            /* greedy against the ref set: where its top two are clear */
            double yd[1];
            int64_t b1 = argmaxf(yy, V), b2 = -1;
            for (int64_t k = 0; k < V; k++)
                if (k != b1 && (b2 < 0 || yy[k] > yy[b2])) b2 = k;
            yd[0] = (double)yy[b1] - (double)yy[b2];
            if (b2 >= 0 && yd[0] > 2 * bound) {
                greedy_tested++;
                greedy_bad += ag != b1;
            }
        }
        fail |= arg_bad || greedy_bad;
        char steps[64];
        if (w->window)
            snprintf(steps, sizeof steps, "steps 3 1 3 2 1 2, window %lld, %lld sinks",
                     (long long)w->window, (long long)w->sinks);
        else
            snprintf(steps, sizeof steps, "%d prefill + %d decode", SPLIT, N_TOK - SPLIT);
        printf("%s %s: %d positions (%s), worst |err| / (%g rms) = %.3g (max "
               "|err| %.3g), argmax = reference's at %d of %d clear positions, = ref set's at %d "
               "of %d, %d of %lld logits the ref set's bits\n",
               fail ? "FAIL" : "ok  ", name, nt, steps, tol, worst, maxabs, arg_tested - arg_bad,
               arg_tested, greedy_tested - greedy_bad, greedy_tested, bits, (long long)(nt * V));
    }
    free(g);
    free(y);
    free(r);
    return fail;
}

static int check(const char *dir, const char *out, const char *filter)
{
    int failed = 0, ran = 0;
    char name[64];
    for (size_t i = 0; i < N_MODELS; i++) {
        model_name(&MODELS[i], name, sizeof name);
        if (filter && (filter[0] == '=' ? strcmp(name, filter + 1) : !strstr(name, filter)))
            continue;
        ran++;
        failed += check_one(dir, out, i);
    }
    printf("%d of %d models failed\n", failed, ran);
    return failed || !ran;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "gen")) return gen(argv[2]);
    if (argc >= 4 && argc <= 5 && !strcmp(argv[1], "check"))
        return check(argv[2], argv[3], argc > 4 && argv[4][0] ? argv[4] : NULL);
    fprintf(stderr, "usage: webgpu_models gen DIR | check DIR OUT [FILTER]\n");
    return 2;
}
