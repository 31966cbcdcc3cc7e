/* test_e2e.c — the engine against the double-precision reference transformer, plus the
 * determinism guarantees: chunking, threads and truncation never change a bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_sets.h"
#include "ref_transformer.h"
#include "runtime/arch.h"
#include "testutil.h"
#include "tinymodel.h"

#define N_TOK 64

/* The kernel set the models and sessions below use (NULL: the default choice); the suites that
 * run on every set the CPU supports build each file once and set it per set. */
static const char *g_set;
/* A variant of the tiny files (RoPE scaling keys and tensors): applied by e2e_case. */
static void (*g_edit)(pl_gguf_writer *w, const tiny_spec *s);
static const void *g_edit_user;

/* The e2e bound, relative to the RMS of the reference logits at that position:
 *   |engine - ref| <= tol * rms(ref).
 * The engine rounds weights nowhere (the reference dequantizes the same blocks) but it
 * does round activations: to float everywhere (F32/F16 weights: observed <= 2e-5 of the
 * RMS), and to Q8_0/Q8_K before each of the 7 matmuls per layer and the output head:
 * 8-bit activations with one scale per 32 or 256 values err by up to max|x|/254 per
 * element, about 1% of a dot product's RMS, compounding through 2 layers and attention
 * (observed <= 7.3% of the RMS over 3 archs x 7 types x 5 seeds). A binding or kernel bug
 * moves logits by O(100%). F16 KV adds 2^-11 relative per cached element. */
static double type_tol(uint32_t wtype, int mix, pl_type kv)
{
    /* quantized: 0.125 of the logit RMS. The tiny models of issue 49's families (post-norms,
     * no pre-norms, a NoPE layer) reached 1.02-1.07 of 0.1 at one logit of 64 positions at
     * Q4_K or Q2_K, every kernel set alike within 0.005 (F32 within 1e-4 of the reference);
     * the families before them stayed within 0.93 of it. A step computed wrong is O(100%). */
    double t = wtype == PL_TYPE_F32 || wtype == PL_TYPE_F16 ? 1e-4 : 0.125;
    if (mix) t = 0.125;
    if (kv == PL_TYPE_F16) t += 2e-3;
    return t;
}

typedef struct worst {
    double ratio; /* max observed |err| / bound */
    double abs;   /* max |err| */
} worst;

static pl_model *load(const tiny_spec *spec, void **buf)
{
    size_t size;
    if (tiny_build(spec, buf, &size)) return NULL;
    pl_model *m = NULL;
    pl_error e;
    const pl_model_params mp = {.kernels = g_set};
    if (pl_model_load_memory(&m, *buf, size, &mp, &e)) {
        fprintf(stderr, "load: %s\n", e.msg);
        return NULL;
    }
    return m;
}

static void random_tokens(int32_t *t, int64_t n, int64_t V, uint64_t seed)
{
    tu_rng r;
    tu_rng_init(&r, seed);
    for (int64_t i = 0; i < n; i++) t[i] = (int32_t)tu_rng_range(&r, 0, V - 1);
}

/* The thread counts the invariance checks compare: 1 and 2, and PLUMB_TEST_THREADS (a count
 * above 2, e.g. 16 on a many-core host) when set; a value that is not one is a failed test. */
static int thread_counts(int out[3])
{
    out[0] = 1;
    out[1] = 2;
    const char *v = getenv("PLUMB_TEST_THREADS");
    if (!v || !v[0]) return 2;
    char *end = NULL;
    long n = strtol(v, &end, 10);
    TU_CHECK(*end == 0 && n > 2 && n <= 1024, "PLUMB_TEST_THREADS='%s' is not a count in 3..1024",
             v);
    if (*end || n <= 2 || n > 1024) return 2;
    out[2] = (int)n;
    return 3;
}

static pl_session *session(const pl_model *m, int threads, int64_t chunk, pl_type kv, int64_t ctx,
                           int64_t window, int64_t sinks)
{
    pl_session_params p = pl_session_default_params(m);
    p.n_threads = threads;
    p.prefill_chunk = chunk;
    p.kv_type = kv;
    p.context_window = window ? 0 : ctx;
    p.sliding_window = window;
    p.attention_sinks = sinks;
    p.kernels = g_set;
    pl_session *s = NULL;
    pl_error e;
    if (pl_session_new(&s, m, &p, &e)) fprintf(stderr, "session: %s\n", e.msg);
    return s;
}

/* Compares engine logits (n x V floats) with the reference (n x V doubles). */
static worst compare(const float *y, const double *ref, int64_t n, int64_t V, double tol,
                     const char *what, int *argmax_bad)
{
    worst w = {0, 0};
    *argmax_bad = 0;
    for (int64_t p = 0; p < n; p++) {
        const double *r = ref + p * V;
        const float *e = y + p * V;
        double ss = 0;
        int64_t a1 = 0, a2 = -1, ae = 0;
        for (int64_t i = 0; i < V; i++) {
            ss += r[i] * r[i];
            if (r[i] > r[a1]) {
                a2 = a1;
                a1 = i;
            } else if (i != a1 && (a2 < 0 || r[i] > r[a2])) {
                a2 = i;
            }
            if (e[i] > e[ae]) ae = i;
        }
        double bound = tol * sqrt(ss / (double)V);
        for (int64_t i = 0; i < V; i++) {
            double d = fabs((double)e[i] - r[i]);
            if (d > w.abs) w.abs = d;
            if (d / bound > w.ratio) w.ratio = d / bound;
            TU_CHECK(d <= bound,
                     "%s: position %lld logit %lld: engine %.9g ref %.9g |err| %.3g > "
                     "bound %.3g (seed %llu)",
                     what, (long long)p, (long long)i, (double)e[i], r[i], d, bound,
                     (unsigned long long)tu_seed());
            if (d > bound) return w;
        }
        /* Where the reference's top two differ by more than twice the bound, argmax must agree. */
        if (a2 >= 0 && r[a1] - r[a2] > 2 * bound && ae != a1) (*argmax_bad)++;
    }
    return w;
}

static const struct {
    uint32_t t;
    int mix;
    const char *name;
} types[] = {
    {PL_TYPE_F32, 0, "F32"},       {PL_TYPE_F16, 0, "F16"},       {PL_TYPE_Q8_0, 0, "Q8_0"},
    {PL_TYPE_Q4_0, 0, "Q4_0"},     {PL_TYPE_Q4_K, 0, "Q4_K"},     {PL_TYPE_Q6_K, 0, "Q6_K"},
    {PL_TYPE_Q4_K, 1, "mix"},      {PL_TYPE_Q2_K, 0, "Q2_K"},     {PL_TYPE_Q3_K, 0, "Q3_K"},
    {PL_TYPE_IQ4_NL, 0, "IQ4_NL"}, {PL_TYPE_IQ4_XS, 0, "IQ4_XS"}, {PL_TYPE_Q2_K, 2, "mix2"},
    {PL_TYPE_MXFP4, 0, "MXFP4"},
};
/* The dense architectures, in the table's order (those with experts in every layer run in
 * e2e_moe_matches_reference) */
static const char *archs[32];
static size_t dense_archs(void)
{
    static size_t n, done;
    for (size_t i = 0; !done && pl_arch_at(i) && n < sizeof archs / sizeof archs[0]; i++)
        if (pl_arch_at(i)->recipe.moe != PL_MOE_REQUIRED) archs[n++] = pl_arch_at(i)->name;
    done = 1;
    return n;
}
#define N_ARCHS dense_archs()

/* The supported kernel sets, best first, ref last (kernel_sets.h), collected once. */
static const char *sets[16];
static int n_sets;

static void collect_set(const struct pl_kernels *ks, void *ctx)
{
    (void)ctx;
    if (n_sets < (int)(sizeof sets / sizeof sets[0])) sets[n_sets++] = ks->name;
}

static void collect_sets(void)
{
    if (!n_sets) for_each_supported_set(collect_set, NULL);
}

/* 0: e2e_spec evaluates every supported set; else only the sets whose bit is set (1u << index
 * in sets[]: the covering arrays below) */
static unsigned g_set_mask;

/* One file on every supported set: it is built, and the reference evaluated, once (they are
 * most of a case's cost and do not depend on the set); each set then loads the same bytes,
 * evaluates the same tokens in chunks of `chunk` and is compared with the same reference
 * logits. A reference whose routing margin is under min_margin (MoE: see moe_reference) is not
 * compared: returns 1. 0: compared. */
static int e2e_spec(const tiny_spec *spec, const char *label, double tol, pl_type kv,
                    int64_t window, int64_t sinks, int64_t chunk, double min_margin, worst *out)
{
    size_t size;
    void *buf = NULL;
    TU_CHECK(tiny_build(spec, &buf, &size) == 0, "%s: tiny model did not build", label);
    if (!buf) return 0;
    const int64_t V = spec->V;
    int32_t tok[N_TOK];
    random_tokens(tok, N_TOK, V, spec->seed);
    float *y = malloc((size_t)(N_TOK * V) * sizeof *y);
    double *r = malloc((size_t)(N_TOK * V) * sizeof *r);
    const ref_window w = {window, sinks, window ? window : 128};
    int have_ref = 0, ambiguous = 0;
    collect_sets();
    for (int si = 0; si < n_sets && !ambiguous; si++) {
        if (g_set_mask && !(g_set_mask >> si & 1)) continue;
        pl_model *m = NULL;
        pl_error e;
        const pl_model_params mp = {.kernels = sets[si]};
        TU_CHECK(pl_model_load_memory(&m, buf, size, &mp, &e) == PL_OK, "set %s %s: load: %s",
                 sets[si], label, e.msg);
        if (!m) continue;
        if (!have_ref) {
            ref_model *rm = NULL;
            char msg[256];
            TU_CHECK(ref_model_load(&rm, pl_model_gguf(m), msg, sizeof msg) == 0, "ref load: %s",
                     msg);
            double margin = INFINITY;
            if (rm) ref_model_forward(rm, tok, N_TOK, &w, r, min_margin > 0 ? &margin : NULL);
            have_ref = rm != NULL;
            ambiguous = margin < min_margin;
            ref_model_free(rm);
            if (ambiguous) {
                pl_model_free(m);
                break;
            }
        }
        g_set = sets[si];
        pl_session *s = session(m, 2, chunk, kv, 128, window, sinks);
        g_set = NULL;
        TU_CHECK(s && pl_session_eval(s, tok, N_TOK, y, PL_EVAL_ALL_LOGITS, &e) == PL_OK,
                 "set %s %s: eval failed", sets[si], label);
        if (have_ref && s) {
            char what[160];
            snprintf(what, sizeof what, "set %s %s kv=%s window=%lld sinks=%lld", sets[si], label,
                     kv == PL_TYPE_F16 ? "F16" : "F32", (long long)window, (long long)sinks);
            int bad;
            worst wr = compare(y, r, N_TOK, V, tol, what, &bad);
            TU_CHECK(bad == 0, "%s: argmax differs at %d positions with a clear top-2 gap", what,
                     bad);
            if (wr.ratio > out->ratio) out->ratio = wr.ratio;
            if (wr.abs > out->abs) out->abs = wr.abs;
        }
        pl_session_free(s);
        pl_model_free(m);
    }
    pl_buffer_free(buf);
    free(y);
    free(r);
    return ambiguous;
}

static void e2e_case(const char *arch, int ti, pl_type kv, int64_t window, int64_t sinks,
                     worst *out)
{
    tiny_spec spec = tiny_default(arch, types[ti].t);
    spec.mix = types[ti].mix;
    spec.seed = tu_seed() + (uint64_t)ti;
    spec.tied = ti % 2;
    spec.edit = g_edit;
    spec.edit_user = g_edit_user;
    char label[64];
    snprintf(label, sizeof label, "%s %s", arch, types[ti].name);
    /* quantized weights: each layer's activations are quantized on their own, so the error
     * grows as the square root of the depth past the default 2 layers (the 4-layer tiny models
     * of SmolLM3 and EXAONE 4, for their layers without RoPE) */
    double tol = type_tol(types[ti].t, types[ti].mix, kv);
    if (tol >= 0.1 && spec.L > 2) tol *= sqrt((double)spec.L / 2.0);
    e2e_spec(&spec, label, tol, kv, window, sinks, 64, 0, out);
}

/* ---- RoPE scaling: each as llama.cpp's keys and tensors carry it, against the reference's
 * transformers definitions (refs/ref_transformer.c) ---- */

typedef struct rope_variant {
    const char *name, *arch;
    tiny_rope rope;
} rope_variant;

static const rope_variant rope_variants[] = {
    {"llama3 factors", "llama", {NULL, 0, 0, 0, 0, 1, 0}},
    {"linear 4", "llama", {"linear", 4, 0, 0, 0, 0, 0}},
    {"absent type, scale_linear 2", "llama", {NULL, 0, 2, 0, 0, 0, 0}},
    {"yarn 8 over 32", "llama", {"yarn", 8, 0, 32, 0, 0, 0}},
    /* issue 49: gpt-oss's truncate = false, the correction range unrounded (5.65, not 6) */
    {"yarn 8 over 32, untruncated", "llama", {"yarn", 8, 0, 32, 0, 0, 1}},
    {"yarn 4 over 16, attn_factor 0.9", "qwen2", {"yarn", 4, 0, 16, 0.9f, 0, 0}},
    {"linear 2", "qwen3", {"linear", 2, 0, 0, 0, 0, 0}},
    /* the session's context (128) beyond the original: the long factors; within: the short */
    {"longrope, 128 over original 64", "phi3", {NULL, 0, 0, 64, 1.19f, 2, 0}},
    {"longrope, 128 within original 4096", "phi3", {NULL, 0, 0, 4096, 1.19f, 2, 0}},
};

static void e2e_rope_scaling_matches_reference(void)
{
    static const int type_idx[] = {0, 2}; /* F32, Q8_0 */
    for (size_t v = 0; v < sizeof rope_variants / sizeof rope_variants[0]; v++) {
        worst w = {0, 0};
        g_edit = tiny_rope_edit;
        g_edit_user = &rope_variants[v].rope;
        for (size_t t = 0; t < sizeof type_idx / sizeof type_idx[0]; t++)
            e2e_case(rope_variants[v].arch, type_idx[t], PL_TYPE_F32, 0, 0, &w);
        g_edit = NULL;
        g_edit_user = NULL;
        printf("\n  rope %s (%s), every set: max|err| %.3g, worst ratio to bound %.3f",
               rope_variants[v].name, rope_variants[v].arch, w.abs, w.ratio);
    }
}

/* Every architecture with every weight type (the file and the double-precision reference: a
 * binding is an (architecture, type) pair), each on one kernel set, rotating, so that the three
 * dimensions form a covering array of strength 2 (conformance/README.md): every architecture
 * meets every set and every type meets every set at least once; checked here, so that a table
 * too short for the sets fails rather than leaving a pair out. */
static void e2e_logits_match_reference_for_every_arch_and_type(void)
{
    enum { N_TYPES = sizeof types / sizeof types[0] };
    worst per_type[N_TYPES] = {{0, 0}};
    collect_sets();
    unsigned char arch_set[32][16] = {{0}}, type_set[N_TYPES][16] = {{0}};
    for (size_t a = 0; a < N_ARCHS; a++)
        for (size_t t = 0; t < N_TYPES; t++) {
            const size_t si = (a + t) % (size_t)n_sets;
            arch_set[a][si] = type_set[t][si] = 1;
            g_set_mask = 1u << si;
            e2e_case(archs[a], (int)t, PL_TYPE_F32, 0, 0, &per_type[t]);
            g_set_mask = 0;
        }
    for (int si = 0; si < n_sets; si++) {
        for (size_t a = 0; a < N_ARCHS; a++)
            TU_CHECK(arch_set[a][si], "the covering left out %s on set %s", archs[a], sets[si]);
        for (size_t t = 0; t < N_TYPES; t++)
            TU_CHECK(type_set[t][si], "the covering left out %s on set %s", types[t].name,
                     sets[si]);
    }
    printf("\n  e2e max error per weight type (F32 KV, %zu archs x %d types, each on one of %d "
           "sets, every arch and every type on every set; %d positions):\n",
           N_ARCHS, (int)N_TYPES, n_sets, N_TOK);
    for (size_t t = 0; t < N_TYPES; t++)
        printf("    %-5s max|err| %.3g  worst ratio to bound %.3f\n", types[t].name,
               per_type[t].abs, per_type[t].ratio);
}

static void e2e_f16_kv_matches_reference(void)
{
    worst w = {0, 0}, wq = {0, 0};
    for (size_t a = 0; a < N_ARCHS; a++) {
        e2e_case(archs[a], 0, PL_TYPE_F16, 0, 0, &w);
        e2e_case(archs[a], 4, PL_TYPE_F16, 0, 0, &wq);
    }
    printf("\n  F16 KV: F32 weights max|err| %.3g (ratio %.3f), Q4_K max|err| %.3g (ratio %.3f)\n",
           w.abs, w.ratio, wq.abs, wq.ratio);
}

/* Every architecture with every window (the engine's masks meet the architecture's own local
 * layers), each on two sets, a + c and a + c + 2: every architecture meets every set (the four
 * windows reach five consecutive sets) and every window every set (the attention kernel is the
 * set's); checked, as in e2e_logits_match_reference_for_every_arch_and_type. */
static void e2e_sliding_window_with_sinks_matches_reference(void)
{
    worst w = {0, 0};
    enum { N_CFG = 4 };
    static const int64_t cfg[N_CFG][2] = {{16, 4}, {16, 0}, {9, 1}, {100, 3}};
    collect_sets();
    unsigned arch_sets[32] = {0}, cfg_sets[N_CFG] = {0};
    for (size_t a = 0; a < N_ARCHS; a++)
        for (size_t c = 0; c < N_CFG; c++) {
            g_set_mask = 1u << (a + c) % (size_t)n_sets | 1u << (a + c + 2) % (size_t)n_sets;
            arch_sets[a] |= g_set_mask;
            cfg_sets[c] |= g_set_mask;
            e2e_case(archs[a], (int)(c % 2 ? 0 : 2), PL_TYPE_F32, cfg[c][0], cfg[c][1], &w);
            g_set_mask = 0;
        }
    const unsigned all = (1u << n_sets) - 1;
    for (size_t a = 0; a < N_ARCHS; a++)
        TU_CHECK(arch_sets[a] == all, "the covering left %s off a set (sets %#x)", archs[a],
                 arch_sets[a]);
    for (size_t c = 0; c < N_CFG; c++)
        TU_CHECK(cfg_sets[c] == all,
                 "the covering left window %lld sinks %lld off a set (sets %#x)",
                 (long long)cfg[c][0], (long long)cfg[c][1], cfg_sets[c]);
    printf("\n  sliding window: %zu architectures x %d windows, each on 2 of %d sets: max|err| "
           "%.3g, worst ratio %.3f\n",
           N_ARCHS, (int)N_CFG, n_sets, w.abs, w.ratio);
}

/* ---- determinism ---- */

/* All-position logits of tok[0..n) evaluated in pieces of `piece` tokens per call. */
static void eval_pieces(pl_session *s, const int32_t *tok, int64_t n, int64_t piece, float *y,
                        int64_t V)
{
    pl_error e;
    for (int64_t i = 0; i < n; i += piece) {
        int64_t k = n - i < piece ? n - i : piece;
        pl_status st = pl_session_eval(s, tok + i, k, y + i * V, PL_EVAL_ALL_LOGITS, &e);
        TU_CHECK(st == PL_OK, "eval piece at %lld: %s", (long long)i, e.msg);
        if (st) return;
    }
}

/* Evaluates tok[0..n) in pieces with only each piece's last logits asked for (the engine
 * prunes the last layer to that row, and skips it past the cache in earlier chunks) and
 * returns how many differ from that row of the all-position logits base. */
static int last_logits_differ(pl_session *s, const int32_t *tok, int64_t n, int64_t piece,
                              const float *base, int64_t V)
{
    float *y = malloc((size_t)V * sizeof *y);
    int bad = 0;
    pl_error e;
    for (int64_t i = 0; i < n && y; i += piece) {
        int64_t k = n - i < piece ? n - i : piece;
        memset(y, 0, (size_t)V * sizeof *y);
        pl_status st = pl_session_eval(s, tok + i, k, y, 0, &e);
        TU_CHECK(st == PL_OK, "eval piece at %lld: %s", (long long)i, e.msg);
        bad += st != PL_OK || memcmp(y, base + (i + k - 1) * V, (size_t)V * sizeof *y) != 0;
    }
    free(y);
    return bad;
}

/* The invariance checks on one model, loaded for the set g_set names. */
static void check_invariance_model(const pl_model *m, const tiny_spec spec, int64_t window,
                                   int64_t sinks)
{
    const char *arch = spec.arch;
    const uint32_t type = spec.wtype;
    int64_t V = spec.V;
    int32_t tok[N_TOK];
    random_tokens(tok, N_TOK, V, spec.seed);
    size_t bytes = (size_t)(N_TOK * V) * sizeof(float);
    float *base = malloc(bytes), *y = malloc(bytes);
    pl_session *s = session(m, 1, 64, PL_TYPE_F16, 128, window, sinks);
    eval_pieces(s, tok, N_TOK, N_TOK, base, V);
    pl_session_free(s);
    /* Threads x chunk x piece as a covering array of strength 2 (conformance/README.md): every
     * chunk with every piece, and the thread count cycling so that every count meets every chunk
     * and every piece (each count splits a matmul's rows the same way whatever the chunking, so
     * the triples add nothing the pairs miss); each against the 1-thread, one-call base. */
    static const int64_t chunks[] = {1, 3, 7, 16, 64};
    static const int64_t pieces[] = {1, 5, 13, 64};
    int counts[3], n_counts = thread_counts(counts);
    for (size_t c = 0; c < 5; c++)
        for (size_t p = 0; p < 4; p++) {
            const int threads = counts[(c + p) % (size_t)n_counts];
            s = session(m, threads, chunks[c], PL_TYPE_F16, 128, window, sinks);
            memset(y, 0, bytes);
            eval_pieces(s, tok, N_TOK, pieces[p], y, V);
            TU_CHECK(memcmp(y, base, bytes) == 0,
                     "set %s %s %s window=%lld: logits differ with threads=%d chunk=%lld "
                     "piece=%lld",
                     g_set, arch, pl_type_name(type), (long long)window, threads,
                     (long long)chunks[c], (long long)pieces[p]);
            pl_session_free(s);
            if (c % 2 || p % 2 == 0) continue; /* last logits only: chunks 1, 7, 64, pieces 5, 64 */
            /* every count meets every chunk and every piece of these six too */
            const int last_threads = counts[(c / 2 + p / 2) % (size_t)n_counts];
            s = session(m, last_threads, chunks[c], PL_TYPE_F16, 128, window, sinks);
            const int bad = last_logits_differ(s, tok, N_TOK, pieces[p], base, V);
            TU_CHECK(bad == 0,
                     "set %s %s %s window=%lld: %d last-token logits differ from the "
                     "all-position ones with threads=%d chunk=%lld piece=%lld",
                     g_set, arch, pl_type_name(type), (long long)window, bad, last_threads,
                     (long long)chunks[c], (long long)pieces[p]);
            pl_session_free(s);
        }
    /* Truncate to every k and re-evaluate the suffix: the same bits. */
    s = session(m, 2, 7, PL_TYPE_F16, 128, window, sinks);
    eval_pieces(s, tok, N_TOK, N_TOK, y, V);
    for (int64_t k = N_TOK - 1; k >= 0; k -= 9) {
        pl_error e;
        pl_status st = pl_session_truncate(s, k, &e);
        if (window && st == PL_ERR_INVALID_ARG) continue; /* evicted: documented refusal */
        TU_CHECK(st == PL_OK, "truncate to %lld: %s", (long long)k, e.msg);
        memset(y, 0, bytes);
        eval_pieces(s, tok + k, N_TOK - k, N_TOK - k, y + k * V, V);
        TU_CHECK(memcmp(y + k * V, base + k * V, (size_t)(N_TOK - k) * (size_t)V * sizeof(float)) ==
                     0,
                 "set %s %s window=%lld: truncate to %lld and re-evaluate changed logits", g_set,
                 arch, (long long)window, (long long)k);
    }
    pl_session_free(s);
    free(base);
    free(y);
}

/* The file is built once and loaded for every supported set. */
static void check_invariance_spec(tiny_spec spec, int64_t window, int64_t sinks)
{
    size_t size;
    void *buf = NULL;
    TU_CHECK(tiny_build(&spec, &buf, &size) == 0, "%s %s: tiny model did not build", spec.arch,
             pl_type_name(spec.wtype));
    if (!buf) return;
    collect_sets();
    for (int si = 0; si < n_sets; si++) {
        pl_model *m = NULL;
        pl_error e;
        const pl_model_params mp = {.kernels = sets[si]};
        TU_CHECK(pl_model_load_memory(&m, buf, size, &mp, &e) == PL_OK, "set %s %s: load: %s",
                 sets[si], spec.arch, e.msg);
        if (!m) continue;
        g_set = sets[si];
        check_invariance_model(m, spec, window, sinks);
        g_set = NULL;
        pl_model_free(m);
    }
    pl_buffer_free(buf);
}

static void check_invariance(const char *arch, uint32_t type, int64_t window, int64_t sinks)
{
    tiny_spec spec = tiny_default(arch, type);
    spec.seed = tu_seed() ^ 0x77;
    check_invariance_spec(spec, window, sinks);
}

static void logits_identical_across_chunks_threads_and_truncation(void)
{
    check_invariance("qwen2", PL_TYPE_Q4_K, 0, 0);
    check_invariance("llama", PL_TYPE_Q8_0, 0, 0);
    check_invariance("qwen3", PL_TYPE_F16, 0, 0);
    check_invariance("gemma2", PL_TYPE_Q8_0, 0, 0); /* local layers, soft-caps */
    check_invariance("gemma3", PL_TYPE_Q4_K, 0, 0);
    check_invariance("phi3", PL_TYPE_Q6_K, 0, 0); /* fused tensors, every layer local */
    check_invariance("llama", PL_TYPE_Q2_K, 0, 0);
    check_invariance("qwen3", PL_TYPE_IQ4_XS, 0, 0);
    /* issue 49: cohere2's parallel block (the FFN reads the pruned rows' norm), LayerNorm, RoPE
     * on the local layers only */
    check_invariance("cohere2", PL_TYPE_Q4_K, 0, 0);
}

static void sliding_window_logits_identical_across_chunks_and_threads(void)
{
    check_invariance("llama", PL_TYPE_Q4_0, 16, 4);
    check_invariance("qwen3", PL_TYPE_F32, 10, 0);
    check_invariance("gemma2", PL_TYPE_F32, 12, 2);   /* a layer window inside a session window */
    check_invariance("phi3", PL_TYPE_Q8_0, 6, 1);     /* a session window inside the layers' */
    check_invariance("cohere2", PL_TYPE_Q8_0, 12, 2); /* issue 49 */
}

/* All-position logits of N_TOK random tokens, the file in buf loaded for set under flags. */
static float *logits_with_flags(const tiny_spec *spec, const void *buf, size_t size,
                                const char *set, uint32_t flags, int *n_repacked)
{
    pl_model *m = NULL;
    pl_error e;
    const pl_model_params mp = {.flags = flags, .kernels = set};
    TU_CHECK(pl_model_load_memory(&m, buf, size, &mp, &e) == PL_OK, "set %s: load: %s", set, e.msg);
    if (!m) return NULL;
    pl_model_info info;
    pl_model_get_info(m, &info, NULL);
    *n_repacked = info.n_repacked;
    int32_t tok[N_TOK];
    random_tokens(tok, N_TOK, spec->V, spec->seed);
    float *y = calloc((size_t)(N_TOK * spec->V), sizeof *y);
    g_set = set;
    pl_session *s = session(m, 2, 5, PL_TYPE_F16, 128, 0, 0);
    g_set = NULL;
    eval_pieces(s, tok, N_TOK, 13, y, spec->V);
    pl_session_free(s);
    pl_model_free(m);
    return y;
}

/* DESIGN.md: repacking changes where the weights sit, never a bit of the logits. One file, built
 * once, loaded with repacking on and off on every set. */
static void check_repack(const tiny_spec *spec, const char *what)
{
    size_t size;
    void *buf = NULL;
    TU_CHECK(tiny_build(spec, &buf, &size) == 0, "%s: tiny model did not build", what);
    if (!buf) return;
    collect_sets();
    for (int si = 0; si < n_sets; si++) {
        int n_on = 0, n_off = 0;
        float *on = logits_with_flags(spec, buf, size, sets[si], 0, &n_on);
        float *off = logits_with_flags(spec, buf, size, sets[si], PL_MODEL_NO_REPACK, &n_off);
        TU_CHECK(n_off == 0, "set %s %s: PL_MODEL_NO_REPACK still repacked %d tensors", sets[si],
                 what, n_off);
        TU_CHECK(on && off && memcmp(on, off, (size_t)(N_TOK * spec->V) * sizeof(float)) == 0,
                 "set %s %s (%d tensors repacked): logits differ with repacking on and off",
                 sets[si], what, n_on);
        free(on);
        free(off);
    }
    pl_buffer_free(buf);
}

static void repacked_weights_give_identical_logits(void)
{
    static const struct {
        uint32_t type;
        int mix;
    } wtypes[] = {{PL_TYPE_Q4_0, 0}, {PL_TYPE_Q8_0, 0},   {PL_TYPE_Q4_K, 1},
                  {PL_TYPE_Q6_K, 0}, {PL_TYPE_Q5_K, 0},   {PL_TYPE_Q3_K, 0},
                  {PL_TYPE_Q2_K, 2}, {PL_TYPE_IQ4_XS, 0}, {PL_TYPE_IQ4_NL, 0}};
    for (size_t i = 0; i < sizeof wtypes / sizeof wtypes[0]; i++) {
        tiny_spec spec = tiny_default(i % 2 ? "llama" : "qwen2", wtypes[i].type);
        spec.seed = tu_seed() ^ (0x5e7 + i);
        spec.mix = wtypes[i].mix;
        check_repack(&spec, pl_type_name(wtypes[i].type));
    }
}

/* ---- mixture of experts ---- */

/* The MoE shapes: qwen3moe and qwen2moe (shared expert) as tiny_default makes them, Mixtral
 * (llama with 8 experts of F, 2 used), and gpt-oss (sinks, router and expert biases, the
 * clamped SwiGLU, even layers local; issue 49). */
static const char *moe_names[] = {"qwen3moe", "qwen2moe", "mixtral", "gpt-oss"};

static tiny_spec moe_spec(const char *name, uint32_t type)
{
    if (strcmp(name, "mixtral") != 0) return tiny_default(name, type);
    tiny_spec s = tiny_default("llama", type);
    s.X = 8;
    s.U = 2;
    s.F = s.FX = 256;
    return s;
}

/* Routing is a choice: where the reference's last chosen expert leads the best unchosen one by
 * less than the engine's error in p can be, the two may choose differently and the logits
 * differ by O(1) for a reason that is no bug. Float weights keep that error near 1e-6 of p;
 * cases whose reference margin is under 2e-5 are counted and skipped (not silently: the
 * test reports how many, and fails if most are). Quantized experts are proven by the kernels'
 * suites and, below, by bit identity across threads, chunks and layouts. */
static void e2e_moe_matches_reference(void)
{
    static const uint32_t wt[] = {PL_TYPE_F32, PL_TYPE_F16};
    int run = 0, ambiguous = 0;
    worst wr = {0, 0};
    for (size_t a = 0; a < sizeof moe_names / sizeof moe_names[0]; a++)
        for (size_t t = 0; t < sizeof wt / sizeof wt[0]; t++)
            for (uint64_t seed = 0; seed < 2; seed++) {
                tiny_spec spec = moe_spec(moe_names[a], wt[t]);
                spec.seed = tu_seed() + 0x3e0 + 7 * a + 3 * t + seed;
                spec.tied = (int)seed;
                char label[64];
                snprintf(label, sizeof label, "%s %s", moe_names[a], pl_type_name(wt[t]));
                if (e2e_spec(&spec, label, type_tol(wt[t], 0, PL_TYPE_F32), PL_TYPE_F32, 0, 0, 16,
                             2e-5, &wr))
                    ambiguous++;
                else
                    run++;
            }
    printf("    %d MoE models against the reference on %d sets (worst |err|/bound %.3f), %d with "
           "an ambiguous route skipped\n",
           run, n_sets, wr.ratio, ambiguous);
    TU_CHECK(run >= 3 * ambiguous && run > 0, "%d of %d MoE cases were ambiguous", ambiguous,
             run + ambiguous);
}

/* DESIGN.md: grouping a prefill's tokens by expert never changes a token's row. */
static void moe_logits_identical_across_chunks_threads_and_truncation(void)
{
    /* gpt-oss's experts MXFP4, as it ships them */
    static const uint32_t wt[] = {PL_TYPE_Q4_K, PL_TYPE_Q8_0, PL_TYPE_IQ4_XS, PL_TYPE_MXFP4};
    static_assert(sizeof wt / sizeof wt[0] == sizeof moe_names / sizeof moe_names[0],
                  "a weight type per MoE shape");
    for (size_t a = 0; a < sizeof moe_names / sizeof moe_names[0]; a++) {
        tiny_spec spec = moe_spec(moe_names[a], wt[a]);
        spec.seed = tu_seed() ^ (0x77e + a);
        check_invariance_spec(spec, 0, 0);
    }
    /* MXFP4 experts, as gpt-oss ships them (every matrix MXFP4 here) */
    tiny_spec mx = moe_spec("qwen3moe", PL_TYPE_MXFP4);
    mx.seed = tu_seed() ^ 0x77d;
    check_invariance_spec(mx, 0, 0);
}

static void moe_repacked_experts_give_identical_logits(void)
{
    static const uint32_t wt[] = {PL_TYPE_Q4_0, PL_TYPE_Q4_K, PL_TYPE_IQ4_NL, PL_TYPE_MXFP4};
    for (size_t a = 0; a < sizeof wt / sizeof wt[0]; a++) {
        const char *arch = moe_names[a % (sizeof moe_names / sizeof moe_names[0])];
        tiny_spec spec = moe_spec(arch, wt[a]);
        spec.seed = tu_seed() ^ (0x5e8 + a);
        char what[64];
        snprintf(what, sizeof what, "%s %s", arch, pl_type_name(wt[a]));
        check_repack(&spec, what);
    }
}

/* ---- session edges ---- */

static void context_full_leaves_session_unchanged(void)
{
    tiny_spec spec = tiny_default("llama", PL_TYPE_Q8_0);
    void *buf = NULL;
    pl_model *m = load(&spec, &buf);
    if (!m) return;
    int64_t V = spec.V;
    int32_t tok[40];
    random_tokens(tok, 40, V, 5);
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    pl_session *s = session(m, 2, 8, PL_TYPE_F16, 32, 0, 0);
    pl_error e;
    CU_ASSERT_EQUAL(pl_session_eval(s, tok, 30, NULL, 0, &e), PL_OK);
    CU_ASSERT_EQUAL(pl_session_eval(s, tok + 30, 3, a, 0, &e), PL_ERR_CONTEXT_FULL);
    TU_CHECK(strstr(e.msg, "context") != NULL, "message: %s", e.msg);
    CU_ASSERT_EQUAL(pl_session_n_past(s), 30);
    CU_ASSERT_EQUAL(pl_session_eval(s, tok + 30, 2, a, 0, &e), PL_OK);
    CU_ASSERT_EQUAL(pl_session_n_past(s), 32);
    CU_ASSERT_EQUAL(pl_session_eval(s, tok, 1, a, 0, &e), PL_ERR_CONTEXT_FULL);
    /* A fresh session over the same 32 tokens agrees bit for bit. */
    pl_session *f = session(m, 1, 64, PL_TYPE_F16, 32, 0, 0);
    CU_ASSERT_EQUAL(pl_session_eval(f, tok, 32, b, 0, &e), PL_OK);
    CU_ASSERT(memcmp(a, b, (size_t)V * sizeof *a) == 0);
    pl_session_free(f);
    pl_session_free(s);
    free(a);
    free(b);
    pl_model_free(m);
    pl_buffer_free(buf);
}

static void bad_kv_configs_are_rejected_with_config_error(void)
{
    tiny_spec spec = tiny_default("qwen2", PL_TYPE_F32);
    void *buf = NULL;
    pl_model *m = load(&spec, &buf);
    if (!m) return;
    static const struct {
        int64_t ctx, win, sinks, chunk;
        pl_type kv;
        const char *needle;
    } bad[] = {
        {0, 0, 0, 8, PL_TYPE_F16, "exactly one"},
        {64, 64, 0, 8, PL_TYPE_F16, "exactly one"},
        {-1, 0, 0, 8, PL_TYPE_F16, "exactly one"},
        {0, 16, 16, 8, PL_TYPE_F16, "attention_sinks"},
        {0, 16, -1, 8, PL_TYPE_F16, "attention_sinks"},
        {64, 0, 2, 8, PL_TYPE_F16, "attention_sinks"},
        {64, 0, 0, 0, PL_TYPE_F16, "prefill_chunk"},
        {64, 0, 0, 8, PL_TYPE_Q8_0, "kv_type"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pl_session_params p = pl_session_default_params(m);
        p.context_window = bad[i].ctx;
        p.sliding_window = bad[i].win;
        p.attention_sinks = bad[i].sinks;
        p.prefill_chunk = bad[i].chunk;
        p.kv_type = bad[i].kv;
        pl_session *s = (pl_session *)1;
        pl_error e = {0};
        pl_status st = pl_session_new(&s, m, &p, &e);
        TU_CHECK(st == PL_ERR_CONFIG && s == NULL, "case %zu: status %s", i, pl_status_str(st));
        TU_CHECK(strstr(e.msg, bad[i].needle) != NULL, "case %zu: message '%s' lacks '%s'", i,
                 e.msg, bad[i].needle);
    }
    pl_model_free(m);
    pl_buffer_free(buf);
}

static void eval_rejects_tokens_outside_vocab_without_change(void)
{
    tiny_spec spec = tiny_default("llama", PL_TYPE_F32);
    void *buf = NULL;
    pl_model *m = load(&spec, &buf);
    if (!m) return;
    pl_session *s = session(m, 1, 8, PL_TYPE_F32, 64, 0, 0);
    int32_t tok[3] = {1, (int32_t)spec.V, 2}, neg[1] = {-1};
    pl_error e;
    CU_ASSERT_EQUAL(pl_session_eval(s, tok, 3, NULL, 0, &e), PL_ERR_INVALID_ARG);
    TU_CHECK(strstr(e.msg, "token 1") != NULL, "message: %s", e.msg);
    CU_ASSERT_EQUAL(pl_session_eval(s, neg, 1, NULL, 0, &e), PL_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(pl_session_n_past(s), 0);
    pl_session_free(s);
    pl_model_free(m);
    pl_buffer_free(buf);
}

/* ---- binding ---- */

static void expect_load_error(tiny_spec spec, pl_status code, const char *needle)
{
    void *buf = NULL;
    size_t size;
    TU_CHECK(tiny_build(&spec, &buf, &size) == 0, "build failed");
    pl_model *m = (pl_model *)1;
    pl_error e = {0};
    pl_status st = pl_model_load_memory(&m, buf, size, NULL, &e);
    TU_CHECK(st == code && m == NULL, "expected %s, got %s (%s)", pl_status_str(code),
             pl_status_str(st), e.msg);
    TU_CHECK(strstr(e.msg, needle) != NULL, "message '%s' lacks '%s'", e.msg, needle);
    pl_buffer_free(buf);
}

/* How a case spoils its file: a tensor left out, shaped as another, or a norm stored as F16. */
enum spoil { OMIT, MISSHAPE, F16_NORM, NOTHING };

static void model_rejects_missing_misshapen_and_mistyped_tensors(void)
{
    static const struct {
        const char *arch;
        uint32_t type;
        enum spoil how;
        const char *tensor; /* also what the message must name (the architecture for NOTHING) */
        pl_status code;
    } cases[] = {
        {"qwen2", PL_TYPE_Q8_0, OMIT, "blk.1.attn_k.bias", PL_ERR_NOT_FOUND},
        {"qwen3", PL_TYPE_Q8_0, OMIT, "blk.0.attn_q_norm.weight", PL_ERR_NOT_FOUND},
        {"llama", PL_TYPE_Q8_0, MISSHAPE, "blk.1.ffn_down.weight", PL_ERR_TYPE},
        {"llama", PL_TYPE_F32, F16_NORM, "blk.0.ffn_norm.weight", PL_ERR_TYPE},
        {"llama", PL_TYPE_F32, OMIT, "output_norm.weight", PL_ERR_NOT_FOUND},
        {"gpt-j", PL_TYPE_F32, NOTHING, "gpt-j", PL_ERR_UNSUPPORTED},
        /* gpt-oss (issue 49): its sinks required, an expert bias shaped and typed as a matrix of
         * one F32 row per expert */
        {"gpt-oss", PL_TYPE_Q8_0, OMIT, "blk.1.attn_sinks.weight", PL_ERR_NOT_FOUND},
        {"gpt-oss", PL_TYPE_Q8_0, MISSHAPE, "blk.0.ffn_up_exps.bias", PL_ERR_TYPE},
        {"gpt-oss", PL_TYPE_Q8_0, F16_NORM, "blk.1.ffn_down_exps.bias", PL_ERR_TYPE},
        {"gpt-oss", PL_TYPE_Q8_0, OMIT, "blk.0.ffn_gate_inp.bias", PL_ERR_NOT_FOUND},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tiny_spec s = tiny_default(cases[i].arch, cases[i].type);
        if (cases[i].how == OMIT) s.omit = cases[i].tensor;
        if (cases[i].how == MISSHAPE) s.misshape = cases[i].tensor;
        if (cases[i].how == F16_NORM) s.f16_norm = cases[i].tensor;
        expect_load_error(s, cases[i].code, cases[i].tensor);
    }
}

/* The kernel set is chosen once, when the model loads: PLUMB_KERNELS read then, or the model's
 * params; sessions and samplers follow it unless their own params name a set. */
static void first_supported(const struct pl_kernels *ks, void *ctx)
{
    const char **name = ctx;
    if (!*name && strcmp(ks->name, "ref") != 0) *name = ks->name;
}

static void kernel_set_is_chosen_once_at_load(void)
{
    const char *other = NULL; /* a supported set that is not ref, when the CPU has one */
    for_each_supported_set(first_supported, &other);
    tiny_spec spec = tiny_default("llama", PL_TYPE_Q8_0);
    void *buf = NULL;
    size_t size = 0;
    CU_ASSERT_EQUAL_FATAL(tiny_build(&spec, &buf, &size), 0);
    const char *saved = getenv("PLUMB_KERNELS");
    char *keep = saved ? strdup(saved) : NULL;
    setenv("PLUMB_KERNELS", "ref", 1);
    pl_model *m = NULL;
    pl_error e;
    CU_ASSERT_EQUAL(pl_model_load_memory(&m, buf, size, NULL, &e), PL_OK);
    if (other) setenv("PLUMB_KERNELS", other, 1); /* after load: changes nothing */
    pl_model_info info;
    pl_session *s = NULL, *s2 = NULL;
    pl_sampler *smp = NULL, *smp2 = NULL;
    pl_session_info si;
    if (m && pl_model_get_info(m, &info, NULL) == PL_OK) {
        CU_ASSERT_STRING_EQUAL(info.kernels, "ref");
        CU_ASSERT_EQUAL(pl_session_new(&s, m, NULL, &e), PL_OK);
        CU_ASSERT_EQUAL(pl_sampler_new(&smp, m, NULL, &e), PL_OK);
        if (s && pl_session_get_info(s, &si, NULL) == PL_OK)
            CU_ASSERT_STRING_EQUAL(si.kernels, "ref");
        CU_ASSERT_STRING_EQUAL(pl_sampler_kernels(smp), "ref");
        if (other) { /* told otherwise: their own set */
            pl_session_params sp = pl_session_default_params(m);
            pl_sampler_params pp = pl_sampler_default_params();
            sp.kernels = pp.kernels = other;
            CU_ASSERT_EQUAL(pl_session_new(&s2, m, &sp, &e), PL_OK);
            CU_ASSERT_EQUAL(pl_sampler_new(&smp2, m, &pp, &e), PL_OK);
            if (s2 && pl_session_get_info(s2, &si, NULL) == PL_OK)
                CU_ASSERT_STRING_EQUAL(si.kernels, other);
            CU_ASSERT_STRING_EQUAL(pl_sampler_kernels(smp2), other);
        }
        pl_sampler_params bad = pl_sampler_default_params();
        bad.kernels = "no-such-set";
        pl_sampler *none = NULL;
        CU_ASSERT_NOT_EQUAL(pl_sampler_new(&none, m, &bad, &e), PL_OK);
        CU_ASSERT_PTR_NULL(none);
    }
    pl_session_free(s);
    pl_session_free(s2);
    pl_sampler_free(smp);
    pl_sampler_free(smp2);
    pl_model_free(m);
    /* the model's params name the set: PLUMB_KERNELS is not read */
    setenv("PLUMB_KERNELS", "no-such-set", 1);
    const pl_model_params mp = {.kernels = "ref"};
    m = NULL;
    CU_ASSERT_EQUAL(pl_model_load_memory(&m, buf, size, &mp, &e), PL_OK);
    if (m && pl_model_get_info(m, &info, NULL) == PL_OK)
        CU_ASSERT_STRING_EQUAL(info.kernels, "ref");
    pl_model_free(m);
    if (keep)
        setenv("PLUMB_KERNELS", keep, 1);
    else
        unsetenv("PLUMB_KERNELS");
    free(keep);
    pl_buffer_free(buf);
}

static void model_info_and_session_estimate_report_what_is_used(void)
{
    tiny_spec spec = tiny_default("qwen3", PL_TYPE_Q4_K);
    spec.tied = 1;
    void *buf = NULL;
    pl_model *m = load(&spec, &buf);
    if (!m) return;
    pl_model_info info;
    CU_ASSERT_EQUAL(pl_model_get_info(m, &info, NULL), PL_OK);
    CU_ASSERT_STRING_EQUAL(info.arch, "qwen3");
    CU_ASSERT_EQUAL(info.n_vocab, spec.V);
    CU_ASSERT_EQUAL(info.n_layer, spec.L);
    CU_ASSERT_EQUAL(info.n_head_kv, spec.Hkv);
    CU_ASSERT_EQUAL(info.head_dim, spec.D);
    CU_ASSERT_EQUAL(info.tied_embeddings, 1);
    /* The estimate is what a session allocates, for context and sliding windows. */
    for (int w = 0; w < 2; w++) {
        pl_session_params p = pl_session_default_params(m);
        p.n_threads = 2;
        if (w) {
            p.context_window = 0;
            p.sliding_window = 24;
            p.attention_sinks = 4;
        }
        pl_session_info est, got;
        pl_session *s = NULL;
        CU_ASSERT_EQUAL(pl_session_estimate(m, &p, &est, NULL), PL_OK);
        CU_ASSERT_EQUAL_FATAL(pl_session_new(&s, m, &p, NULL), PL_OK);
        CU_ASSERT_EQUAL(pl_session_get_info(s, &got, NULL), PL_OK);
        TU_CHECK(est.kv_bytes == got.kv_bytes && est.scratch_bytes == got.scratch_bytes &&
                     est.kv_capacity == got.kv_capacity,
                 "estimate kv %llu scratch %llu cap %lld, session kv %llu scratch %llu cap %lld",
                 (unsigned long long)est.kv_bytes, (unsigned long long)est.scratch_bytes,
                 (long long)est.kv_capacity, (unsigned long long)got.kv_bytes,
                 (unsigned long long)got.scratch_bytes, (long long)got.kv_capacity);
        pl_session_free(s);
    }
    pl_session_params bad = pl_session_default_params(m);
    bad.sliding_window = 8;
    pl_session_info est;
    CU_ASSERT_EQUAL(pl_session_estimate(m, &bad, &est, NULL), PL_ERR_CONFIG);
    pl_model_free(m);
    pl_buffer_free(buf);
    /* A mixture of experts: a decode step reads U of each stacked tensor's X experts, and
     * one row of the untied embedding; counted here from the file's own tensor table. */
    for (size_t a = 0; a < sizeof moe_names / sizeof moe_names[0]; a++) {
        tiny_spec ms = moe_spec(moe_names[a], PL_TYPE_Q8_0);
        pl_model *mm = load(&ms, &buf);
        if (!mm) continue;
        CU_ASSERT_EQUAL(pl_model_get_info(mm, &info, NULL), PL_OK);
        const pl_gguf *g = pl_model_gguf(mm);
        uint64_t step = 0, active = 0;
        for (uint64_t i = 0; i < pl_gguf_n_tensors(g); i++) {
            pl_tensor_info ti;
            pl_gguf_tensor(g, i, &ti, NULL);
            uint64_t bytes = ti.n_bytes, n = (uint64_t)(ti.ne[0] * ti.ne[1] * ti.ne[2] * ti.ne[3]);
            if (ti.name.len > 12 &&
                memcmp(ti.name.ptr + ti.name.len - 12, "_exps.weight", 12) == 0) {
                bytes = bytes / (uint64_t)ms.X * (uint64_t)ms.U;
                n = n / (uint64_t)ms.X * (uint64_t)ms.U;
            }
            if (ti.name.len == 17 && memcmp(ti.name.ptr, "token_embd.weight", 17) == 0 && !ms.tied)
                bytes = bytes / (uint64_t)ti.ne[1];
            step += bytes;
            active += n;
        }
        TU_CHECK(info.n_expert == ms.X && info.n_expert_used == ms.U, "%s: %lld of %lld experts",
                 moe_names[a], (long long)info.n_expert_used, (long long)info.n_expert);
        TU_CHECK(info.step_weight_bytes == step && info.n_active_params == active,
                 "%s: step bytes %llu (file: %llu), active params %llu (file: %llu)", moe_names[a],
                 (unsigned long long)info.step_weight_bytes, (unsigned long long)step,
                 (unsigned long long)info.n_active_params, (unsigned long long)active);
        TU_CHECK(info.step_weight_bytes < info.weight_bytes, "%s: step reads every expert",
                 moe_names[a]);
        pl_model_free(mm);
        pl_buffer_free(buf);
    }
}

/* SQLite style: fail allocation N of model load + session creation + sampler creation +
 * one eval, for every N, transient and persistent: a clean PL_ERR_NOMEM, no leak (LSan). */
static void session_survives_allocation_failure_at_every_n(void)
{
    tiny_spec spec = tiny_default("qwen2", PL_TYPE_Q4_K);
    spec.L = 1;
    void *buf = NULL;
    size_t size;
    CU_ASSERT_EQUAL_FATAL(tiny_build(&spec, &buf, &size), 0);
    int32_t tok[3] = {1, 2, 3};
    float *y = malloc((size_t)spec.V * sizeof *y);
    uint64_t total = 0;
    for (int pass = 0; pass < 3; pass++) {
        /* pass 0 counts; passes 1 and 2 fail each allocation transiently, then persistently */
        uint64_t n_max = pass == 0 ? 1 : total;
        for (uint64_t n = 1; n <= n_max; n++) {
            tu_alloc_fail_at(pass == 0 ? 0 : n, pass == 2);
            pl_model *m = NULL;
            pl_session *s = NULL;
            pl_sampler *smp = NULL;
            pl_error e = {0};
            pl_session_params p = {
                .context_window = 16, .prefill_chunk = 2, .kv_type = PL_TYPE_F16, .n_threads = 2};
            pl_status st = pl_model_load_memory(&m, buf, size, NULL, &e);
            if (!st) st = pl_session_new(&s, m, &p, &e);
            if (!st) st = pl_sampler_new(&smp, m, NULL, &e);
            if (!st) st = pl_session_eval(s, tok, 3, y, 0, &e);
            uint64_t count = tu_alloc_count();
            tu_alloc_reset();
            if (pass == 0) {
                CU_ASSERT_EQUAL(st, PL_OK);
                total = count;
            } else {
                TU_CHECK(st == PL_ERR_NOMEM, "allocation %llu of %llu (%s): status %s (%s)",
                         (unsigned long long)n, (unsigned long long)total,
                         pass == 2 ? "persistent" : "transient", pl_status_str(st), e.msg);
            }
            pl_sampler_free(smp);
            pl_session_free(s);
            pl_model_free(m);
        }
    }
    printf("\n  model load + session + sampler + eval: %llu allocations, each failed "
           "transiently and persistently\n",
           (unsigned long long)total);
    free(y);
    pl_buffer_free(buf);
}

int main(void)
{
    static const tu_test tests[] = {
        {"e2e_logits_match_reference_for_every_arch_and_type",
         e2e_logits_match_reference_for_every_arch_and_type},
        {"e2e_f16_kv_matches_reference", e2e_f16_kv_matches_reference},
        {"e2e_rope_scaling_matches_reference", e2e_rope_scaling_matches_reference},
        {"e2e_sliding_window_with_sinks_matches_reference",
         e2e_sliding_window_with_sinks_matches_reference},
        {"logits_identical_across_chunks_threads_and_truncation",
         logits_identical_across_chunks_threads_and_truncation},
        {"sliding_window_logits_identical_across_chunks_and_threads",
         sliding_window_logits_identical_across_chunks_and_threads},
        {"repacked_weights_give_identical_logits", repacked_weights_give_identical_logits},
        {"e2e_moe_matches_reference", e2e_moe_matches_reference},
        {"moe_logits_identical_across_chunks_threads_and_truncation",
         moe_logits_identical_across_chunks_threads_and_truncation},
        {"moe_repacked_experts_give_identical_logits", moe_repacked_experts_give_identical_logits},
        {"context_full_leaves_session_unchanged", context_full_leaves_session_unchanged},
        {"bad_kv_configs_are_rejected_with_config_error",
         bad_kv_configs_are_rejected_with_config_error},
        {"eval_rejects_tokens_outside_vocab_without_change",
         eval_rejects_tokens_outside_vocab_without_change},
        {"model_rejects_missing_misshapen_and_mistyped_tensors",
         model_rejects_missing_misshapen_and_mistyped_tensors},
        {"model_info_and_session_estimate_report_what_is_used",
         model_info_and_session_estimate_report_what_is_used},
        {"kernel_set_is_chosen_once_at_load", kernel_set_is_chosen_once_at_load},
        {"session_survives_allocation_failure_at_every_n",
         session_survives_allocation_failure_at_every_n},
        {NULL, NULL},
    };
    return tu_run("e2e", tests);
}
