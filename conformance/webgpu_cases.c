/* webgpu_cases.c — the C side of the webgpu set's conformance (kernels/webgpu/): the suite stays
 * the judge while the kernels run in a browser.
 *
 *   webgpu_cases gen DIR [FILTER]    writes DIR/cases.json (what each case is) and each case's
 *                                     inputs as raw little-endian files DIR/c<i>_<name>.bin
 *   webgpu_cases check DIR [FILTER [OUTDIR]]
 *                                     rebuilds the same cases from the seed, checks that the
 *                                     input files are the bytes it would write (so the page saw
 *                                     exactly these inputs), reads each output OUTDIR/c<i>.out (raw
 *                                     f32) and holds it to the bound of the CPU sets' suites
 *                                     (test_matmul.c, test_ops.c, test_attention.c) against the
 *                                     GSL double references; the quantized matmuls also to ref's
 *                                     bits. Prints a line per case and a summary; exit 0 when all
 *                                     pass, 1 otherwise (a missing output fails).
 *
 * FILTER keeps the cases whose name holds it ("matmul_Q4_0", "attention"; "" all); OUTDIR (default
 * DIR) holds the outputs: conformance/web/webgpu.mjs checks its clean run and each planted-fault
 * run (one kernel's cases) from one generated folder. PLUMB_SEED replays another draw (testutil.h).
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "quant_inputs.h"
#include "refs/refs.h"
#include "refs/refs_ops.h"
#include "testutil.h"

#define U    REF_U
#define FMIN REF_FLT_MIN

enum kind {
    K_MATMUL,
    K_RMSNORM,
    K_ROPE,
    K_SOFTMAX,
    K_SWIGLU,
    K_ATTENTION,
    K_QUANTIZE,
    K_RMSNORM_Q,
    K_SWIGLU_Q,
    K_ROPE_KV
};
static const char *const kind_name[] = {"matmul",   "rmsnorm",   "rope",     "softmax",
                                        "swiglu",   "attention", "quantize", "rmsnorm_q",
                                        "swiglu_q", "rope_kv"};

#define MAX_IN 8
typedef struct wcase {
    enum kind kind;
    char name[96];
    /* matmul */
    pl_type wt;
    int64_t K, R, T, ldy;
    size_t wrb, xrb;
    size_t woff, xoff; /* bytes before W's and X's first row in the files the page reads */
    /* rows of n (rmsnorm, softmax, swiglu) */
    int64_t rows, n;
    float eps;
    /* rope: ntok tokens of H heads of D at positions pos[] */
    int64_t H, D;
    pl_rope_args ra;
    /* attention */
    pl_attn_args aa;
    /* inputs */
    int n_in;
    const char *in_name[MAX_IN];
    void *in[MAX_IN];
    size_t in_bytes[MAX_IN];
    int64_t out_floats;
    size_t out_bytes; /* quantize: the blocks' bytes (else 4 out_floats) */
    /* quantized rows (quantize, rmsnorm_q, swiglu_q): yrb bytes apart (a multiple of 4) */
    size_t yrb;
    int add;          /* rmsnorm_q: the residual add first */
    int64_t ldg, ldu; /* swiglu_q: gate and up rows this many floats apart */
    /* rope_kv: T tokens at p0.. of H q heads, Hkv k and v heads of D (rows ldg floats apart),
     * biases and head norms, the cache's n_cap slots (ring 0: slot = position) */
    int64_t Hkv, p0, sinks, ring, n_cap;
    int bias, norm;
} wcase;

static void add_in(wcase *c, const char *name, void *p, size_t bytes)
{
    c->in_name[c->n_in] = name;
    c->in[c->n_in] = p;
    c->in_bytes[c->n_in] = bytes;
    c->n_in++;
}

static void free_case(wcase *c)
{
    for (int i = 0; i < c->n_in; i++) free(c->in[i]);
    memset(c, 0, sizeof *c);
}

static void *xalloc(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    if (!p) {
        fprintf(stderr, "webgpu_cases: out of memory\n");
        exit(2);
    }
    return p;
}

static void normal_fill(float *x, int64_t n, double scale, tu_rng *r)
{
    for (int64_t i = 0; i < n; i++) x[i] = (float)(scale * tu_rng_normal(r));
}

/* ---- the case list: deterministic from the seed ---- */

static size_t row_bytes(pl_type t, int64_t n)
{
    const struct pl_type_traits *tr = pl_type_traits_of(t);
    return (size_t)(n / tr->block_size) * tr->block_bytes;
}

/* Weights and activations quantized by ref (the dot type's rows for X), rows padded by 0, 4 or
 * 68 bytes so a kernel that ignores a stride reads the wrong data; y prefilled with a NaN
 * sentinel on ldy = R + 3 so writes outside the R rows show. wpat/xpat < 0: cycle patterns. */
static void make_matmul(wcase *c, pl_type t, int64_t K, int64_t R, int64_t T, int wpat, int xpat,
                        const char *what, tu_rng *rng)
{
    static const size_t pads[3] = {0, 4, 68};
    const struct pl_type_traits *tr = pl_type_traits_of(t);
    const pl_type xt = tr->dot_type;
    c->kind = K_MATMUL;
    c->wt = t, c->K = K, c->R = R, c->T = T, c->ldy = R + 3;
    c->wrb = row_bytes(t, K) + pads[tu_rng_range(rng, 0, 2)];
    c->xrb = row_bytes(xt, K) + pads[tu_rng_range(rng, 0, 2)];
    snprintf(c->name, sizeof c->name, "matmul_%s_%s_K%" PRId64 "_R%" PRId64 "_T%" PRId64, tr->name,
             what, K, R, T);
    unsigned char *w = xalloc((size_t)R * c->wrb), *x = xalloc((size_t)T * c->xrb);
    float *row = xalloc(sizeof(float) * (size_t)K);
    const int64_t wblock = tr->block_size > 1 ? tr->block_size : 32;
    const int64_t xblock =
        pl_type_traits_of(xt)->block_size > 1 ? pl_type_traits_of(xt)->block_size : 32;
    for (int64_t r = 0; r < R; r++) {
        qi_fill(row, K, wpat >= 0 ? wpat : (int)(r % QI_COUNT), wblock, rng);
        pl_kernels_ref.quantize_row[t](w + (size_t)r * c->wrb, row, K);
    }
    for (int64_t i = 0; i < T; i++) {
        qi_fill(row, K, xpat >= 0 ? xpat : (int)(i % QI_COUNT), xblock, rng);
        pl_kernels_ref.quantize_row[xt](x + (size_t)i * c->xrb, row, K);
    }
    free(row);
    float *y0 = xalloc(sizeof(float) * (size_t)(T * c->ldy));
    const uint32_t sentinel = 0x7fa5a5a5u;
    for (int64_t i = 0; i < T * c->ldy; i++) memcpy(&y0[i], &sentinel, 4);
    add_in(c, "w", w, (size_t)R * c->wrb);
    add_in(c, "x", x, (size_t)T * c->xrb);
    add_in(c, "y0", y0, sizeof(float) * (size_t)(T * c->ldy));
    c->out_floats = T * c->ldy;
}

enum fill { F_NORMAL, F_EQUAL, F_ZERO, F_OUTLIER, F_DENORMAL, F_MIXED, F_COUNT };
static const char *const fill_name[F_COUNT] = {"normal",  "all-equal", "zeros",
                                               "outlier", "denormal",  "mixed"};

static void fill(float *x, int64_t n, enum fill f, double scale, tu_rng *r)
{
    const float same = (float)(scale * tu_rng_normal(r));
    for (int64_t i = 0; i < n; i++) {
        const double u = tu_rng_uniform(r);
        x[i] = f == F_EQUAL      ? same
               : f == F_ZERO     ? 0.0f
               : f == F_DENORMAL ? (float)((u < 0.5 ? -1.0 : 1.0) *
                                           (double)tu_rng_range(r, 1, (1 << 23) - 1) * 0x1p-149)
               : f == F_MIXED    ? (u < 0.1   ? -0.0f
                                    : u < 0.2 ? 0x1p-140f
                                    : u < 0.3 ? same
                                              : (float)(scale * tu_rng_normal(r)))
                                 : (float)(scale * tu_rng_normal(r));
    }
    if (f == F_OUTLIER) x[tu_rng_range(r, 0, n - 1)] = (float)(1e6 * scale);
}

static void make_rows(wcase *c, enum kind k, int64_t rows, int64_t n, enum fill f, double scale,
                      const char *what, tu_rng *r)
{
    c->kind = k, c->rows = rows, c->n = n;
    snprintf(c->name, sizeof c->name, "%s_%s_n%" PRId64 "_rows%" PRId64, kind_name[k], what, n,
             rows);
    float *x = xalloc(sizeof(float) * (size_t)(rows * n));
    fill(x, rows * n, f, scale, r);
    add_in(c, "x", x, sizeof(float) * (size_t)(rows * n));
    c->out_floats = rows * n;
    if (k == K_RMSNORM) {
        float *w = xalloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++) w[i] = (float)(1.0 + 0.5 * tu_rng_normal(r));
        add_in(c, "w", w, sizeof(float) * (size_t)n);
    } else if (k == K_SWIGLU) {
        float *up = xalloc(sizeof(float) * (size_t)(rows * n));
        normal_fill(up, rows * n, 1.0, r);
        add_in(c, "up", up, sizeof(float) * (size_t)(rows * n));
    }
}

/* ntok tokens at random positions (pos[] an input), H heads of D. */
static void make_rope(wcase *c, int64_t ntok, int64_t H, int64_t D, pl_rope_args ra, int32_t pos0,
                      const char *what, tu_rng *r)
{
    c->kind = K_ROPE, c->H = H, c->D = D, c->T = ntok, c->ra = ra;
    snprintf(c->name, sizeof c->name, "rope_%s_%s_H%" PRId64 "_D%" PRId64 "_nrot%" PRId64, what,
             ra.style == PL_ROPE_NEOX ? "neox" : "normal", H, D, ra.n_rot);
    float *x = xalloc(sizeof(float) * (size_t)(ntok * H * D));
    normal_fill(x, ntok * H * D, 1.0, r);
    int32_t *pos = xalloc(sizeof(int32_t) * (size_t)ntok);
    for (int64_t t = 0; t < ntok; t++)
        pos[t] = t == 0 ? pos0 : (int32_t)tu_rng_range(r, 0, pos0 > 4096 ? pos0 : 4096);
    float *ff = xalloc(sizeof(float) * (size_t)(ra.n_rot / 2 + 1));
    if (ra.freq_factors)
        for (int64_t i = 0; i < ra.n_rot / 2; i++) ff[i] = (float)(1.0 + 31.0 * tu_rng_uniform(r));
    c->ra.freq_factors = ra.freq_factors ? ff : NULL;
    add_in(c, "x", x, sizeof(float) * (size_t)(ntok * H * D));
    add_in(c, "pos", pos, sizeof(int32_t) * (size_t)ntok);
    add_in(c, "ff", ff, sizeof(float) * (size_t)(ra.n_rot / 2 + 1));
    c->out_floats = ntok * H * D;
}

typedef struct attn_shape {
    int64_t T, H, Hkv, D, N;
    int f16, layout; /* layout 0: a prefix (kv_pos 0..N-1, queries at its end); 1: random */
    int64_t window, n_sinks, layer_window;
} attn_shape;

static void make_attention(wcase *c, attn_shape s, tu_rng *r)
{
    c->kind = K_ATTENTION;
    pl_attn_args *a = &c->aa;
    *a = (pl_attn_args){.T = s.T,
                        .H = s.H,
                        .Hkv = s.Hkv,
                        .D = s.D,
                        .N = s.N,
                        .kv_type = s.f16 ? PL_TYPE_F16 : PL_TYPE_F32,
                        .window = s.window,
                        .n_sinks = s.n_sinks,
                        .scale = (float)(1.0 / sqrt((double)s.D)),
                        .layer_window = s.layer_window};
    snprintf(c->name, sizeof c->name,
             "attention_%s_%s_T%" PRId64 "_H%" PRId64 "_Hkv%" PRId64 "_D%" PRId64 "_N%" PRId64
             "_w%" PRId64 "_s%" PRId64 "_lw%" PRId64,
             s.f16 ? "f16" : "f32", s.layout ? "random" : "prefix", s.T, s.H, s.Hkv, s.D, s.N,
             s.window, s.n_sinks, s.layer_window);
    float *q = xalloc(sizeof(float) * (size_t)(s.T * s.H * s.D));
    normal_fill(q, s.T * s.H * s.D, 1.0, r);
    const int64_t nkv = s.N * s.Hkv * s.D;
    const size_t esz = s.f16 ? 2 : 4;
    void *k = xalloc(esz * (size_t)nkv), *v = xalloc(esz * (size_t)nkv);
    for (int64_t i = 0; i < nkv; i++) {
        const float kf = (float)(1.5 * tu_rng_normal(r)), vf = (float)tu_rng_normal(r);
        if (s.f16) {
            ((pl_f16 *)k)[i] = pl_f32_to_f16(kf);
            ((pl_f16 *)v)[i] = pl_f32_to_f16(vf);
        } else {
            ((float *)k)[i] = kf;
            ((float *)v)[i] = vf;
        }
    }
    int32_t *qp = xalloc(sizeof(int32_t) * (size_t)s.T),
            *kp = xalloc(sizeof(int32_t) * (size_t)s.N);
    for (int64_t j = 0; j < s.N; j++)
        kp[j] = s.layout ? (int32_t)tu_rng_range(r, 0, s.N + 8) : (int32_t)j;
    for (int64_t t = 0; t < s.T; t++)
        qp[t] = s.layout ? (int32_t)tu_rng_range(r, -2, s.N + 8) : (int32_t)(s.N - s.T + t);
    a->q = q, a->k = k, a->v = v, a->q_pos = qp, a->kv_pos = kp;
    add_in(c, "q", q, sizeof(float) * (size_t)(s.T * s.H * s.D));
    add_in(c, "k", k, esz * (size_t)nkv);
    add_in(c, "v", v, esz * (size_t)nkv);
    add_in(c, "qpos", qp, sizeof(int32_t) * (size_t)s.T);
    add_in(c, "kvpos", kp, sizeof(int32_t) * (size_t)s.N);
    c->out_floats = s.T * s.H * s.D;
}

/* The quantized rows of a case (quantize, rmsnorm_q, swiglu_q): the layout rule of
 * kernels/webgpu/quantize.wgsl (rows start on words: the blocks' bytes rounded up to 4), plus 0, 4
 * or 68 bytes of padding by variant, the output prefilled with 0xa5 (input q0) so that a kernel
 * writing outside a row's words, or leaving one of its words unwritten, shows. */
static void set_qrows(wcase *c, pl_type t, int64_t rows, int64_t n, int variant)
{
    static const size_t pads[3] = {0, 4, 68};
    c->wt = t;
    c->yrb = (row_bytes(t, n) + 3) / 4 * 4 + pads[variant % 3];
    unsigned char *q0 = xalloc((size_t)rows * c->yrb);
    memset(q0, 0xa5, (size_t)rows * c->yrb);
    add_in(c, "q0", q0, (size_t)rows * c->yrb);
    c->out_bytes += (size_t)rows * c->yrb;
}

/* Activation rows to Q8_0 or Q8_K (the set's quantize, ref's bytes): one row per qi pattern
 * (Gaussian, equal, a zero block, an outlier, denormals, -0, rounding ties), a row with a NaN
 * and an Inf in two blocks, a row of magnitudes near FLT_MIN and below (subnormal scales and
 * subnormal elements whose quants are not 0), a row whose every block holds its largest |x|
 * twice with opposite signs, the + first in even blocks and the - first in odd ones (Q8_K's
 * scale takes the sign of the first). */
static void make_quantize(wcase *c, pl_type t, int variant, tu_rng *r)
{
    const int64_t bs = pl_type_traits_of(t)->block_size;
    const int64_t n = variant == 0   ? bs
                      : variant == 1 ? 2 * bs
                                     : bs * tu_rng_range(r, 1, 4096 / bs);
    const int64_t rows = QI_COUNT + 3;
    c->kind = K_QUANTIZE, c->wt = t, c->n = n, c->rows = rows;
    snprintf(c->name, sizeof c->name, "quantize_%s_n%" PRId64 "_rows%" PRId64,
             pl_type_traits_of(t)->name, n, rows);
    float *x = xalloc(sizeof(float) * (size_t)(rows * n));
    for (int64_t row = 0; row < QI_COUNT; row++) qi_fill(x + row * n, n, (int)row, bs, r);
    float *nan_row = x + QI_COUNT * n, *tiny = x + (QI_COUNT + 1) * n;
    normal_fill(nan_row, n, 1.0, r);
    nan_row[tu_rng_range(r, 0, n - 1)] = NAN;
    nan_row[tu_rng_range(r, 0, n - 1)] = -INFINITY;
    /* odd blocks: amax ~1e-36 (a finite 1/d), every 4th element subnormal (x / d of order 1);
     * even blocks: all subnormal (1/d overflows) */
    for (int64_t i = 0; i < n; i++)
        tiny[i] = (float)(tu_rng_normal(r) * (i / bs % 2 ? (i % 4 ? 5e-37 : 5e-39) : 3e-39));
    float *tie = x + (QI_COUNT + 2) * n;
    normal_fill(tie, n, 1.0, r);
    for (int64_t b = 0; b < n / bs; b++) {
        const int64_t p = tu_rng_range(r, 0, bs - 2), p2 = tu_rng_range(r, p + 1, bs - 1);
        tie[b * bs + p] = b % 2 ? -16.0f : 16.0f;
        tie[b * bs + p2] = -tie[b * bs + p];
    }
    add_in(c, "x", x, sizeof(float) * (size_t)(rows * n));
    set_qrows(c, t, rows, n, variant);
}

/* The residual add, RMSNorm and quantize of rmsnorm_q.wgsl (t: the dot type, PL_TYPE_F32: no
 * quantize): x (a fill), the residual r (Gaussian) when add, w; the output is x after the add,
 * the normalized rows and the quantized rows, one after another. */
static void make_rmsnorm_q(wcase *c, pl_type t, int64_t rows, int64_t n, int add, enum fill f,
                           int variant, tu_rng *r)
{
    c->kind = K_RMSNORM_Q, c->rows = rows, c->n = n, c->add = add;
    c->eps = variant % 2 ? 1e-5f : 1e-6f;
    snprintf(c->name, sizeof c->name, "fused_norm_q_%s_%s%s_n%" PRId64 "_rows%" PRId64,
             t == PL_TYPE_F32 ? "none" : pl_type_traits_of(t)->name, add ? "add_" : "",
             fill_name[f], n, rows);
    float *x = xalloc(sizeof(float) * (size_t)(rows * n)),
          *res = xalloc(sizeof(float) * (size_t)(rows * n)), *w = xalloc(sizeof(float) * (size_t)n);
    fill(x, rows * n, f, 3.0, r);
    normal_fill(res, rows * n, 1.0, r);
    for (int64_t i = 0; i < n; i++) w[i] = (float)(1.0 + 0.5 * tu_rng_normal(r));
    add_in(c, "x", x, sizeof(float) * (size_t)(rows * n));
    add_in(c, "r", res, sizeof(float) * (size_t)(rows * n));
    add_in(c, "w", w, sizeof(float) * (size_t)n);
    c->out_bytes = 2 * sizeof(float) * (size_t)(rows * n);
    if (t != PL_TYPE_F32)
        set_qrows(c, t, rows, n, variant);
    else
        c->wt = PL_TYPE_F32;
}

/* SwiGLU and the quantize of swiglu_q.wgsl: gate (a fill) and up (Gaussian) rows ldg and ldu
 * floats apart; the output is the products' rows (n floats apart) and the quantized rows. */
static void make_swiglu_q(wcase *c, pl_type t, int64_t rows, int64_t n, int strided, enum fill f,
                          int variant, tu_rng *r)
{
    c->kind = K_SWIGLU_Q, c->rows = rows, c->n = n;
    c->ldg = strided ? n + 3 : n, c->ldu = strided ? n + 5 : n;
    snprintf(c->name, sizeof c->name, "fused_glu_q_%s_%s%s_n%" PRId64 "_rows%" PRId64,
             pl_type_traits_of(t)->name, strided ? "strided_" : "", fill_name[f], n, rows);
    float *g = xalloc(sizeof(float) * (size_t)(rows * c->ldg)),
          *up = xalloc(sizeof(float) * (size_t)(rows * c->ldu));
    fill(g, rows * c->ldg, f, 2.0, r);
    normal_fill(up, rows * c->ldu, 1.0, r);
    add_in(c, "gate", g, sizeof(float) * (size_t)(rows * c->ldg));
    add_in(c, "up", up, sizeof(float) * (size_t)(rows * c->ldu));
    c->out_bytes = sizeof(float) * (size_t)(rows * n);
    set_qrows(c, t, rows, n, variant);
}

/* A 0x7fa5a5a5 NaN in every float of a buffer: a slot no kernel wrote keeps it. */
static float *sentinel_floats(int64_t n)
{
    float *p = xalloc(sizeof(float) * (size_t)n);
    const uint32_t s = 0x7fa5a5a5u;
    for (int64_t i = 0; i < n; i++) memcpy(&p[i], &s, 4);
    return p;
}

/* The slot of position p (engine/runtime/kvcache.c's pl_kvcache_slot). */
static int64_t kv_slot(const wcase *c, int64_t p)
{
    return c->ring == 0 || p < c->sinks ? p : c->sinks + (p - c->sinks) % c->ring;
}

/* rope_kv.wgsl: rows [T][q | k | v] (ld = their floats + 2), the biases [bq | bk | bv], the head
 * norms' weights [q_norm | k_norm], positions p0.., the caches prefilled with the sentinel. */
static void make_rope_kv(wcase *c, int64_t T, int64_t H, int64_t Hkv, int64_t D, int64_t n_rot,
                         int neox, int bias, int norm, int64_t p0, int64_t sinks, int64_t ring,
                         tu_rng *r)
{
    c->kind = K_ROPE_KV, c->T = T, c->H = H, c->Hkv = Hkv, c->D = D, c->bias = bias;
    c->norm = norm, c->p0 = p0, c->sinks = sinks, c->ring = ring, c->eps = 1e-6f;
    c->n_cap = ring ? sinks + ring : p0 + T;
    c->ldg = (H + 2 * Hkv) * D + 2;
    c->ra = (pl_rope_args){.n_rot = n_rot,
                           .freq_base = neox ? 1000000.0f : 10000.0f,
                           .freq_scale = 1.0f,
                           .attn_factor = 1.0f,
                           .style = neox ? PL_ROPE_NEOX : PL_ROPE_NORMAL};
    snprintf(c->name, sizeof c->name,
             "fused_qkv_%s%s%s_T%" PRId64 "_H%" PRId64 "_Hkv%" PRId64 "_D%" PRId64 "_p%" PRId64
             "_s%" PRId64 "_ring%" PRId64,
             neox ? "neox" : "normal", bias ? "_bias" : "", norm ? "_norm" : "", T, H, Hkv, D, p0,
             sinks, ring);
    const int64_t nb = (H + 2 * Hkv) * D, nkv = c->n_cap * Hkv * D;
    float *x = xalloc(sizeof(float) * (size_t)(T * c->ldg)),
          *b = xalloc(sizeof(float) * (size_t)nb);
    float *w = xalloc(sizeof(float) * (size_t)(2 * D));
    normal_fill(x, T * c->ldg, 1.0, r);
    normal_fill(b, nb, 0.5, r);
    for (int64_t i = 0; i < 2 * D; i++) w[i] = (float)(1.0 + 0.5 * tu_rng_normal(r));
    int32_t *pos = xalloc(sizeof(int32_t) * (size_t)T);
    for (int64_t t = 0; t < T; t++) pos[t] = (int32_t)(p0 + t);
    add_in(c, "x", x, sizeof(float) * (size_t)(T * c->ldg));
    add_in(c, "b", b, sizeof(float) * (size_t)nb);
    add_in(c, "w", w, sizeof(float) * (size_t)(2 * D));
    add_in(c, "pos", pos, sizeof(int32_t) * (size_t)T);
    add_in(c, "kc0", sentinel_floats(nkv), sizeof(float) * (size_t)nkv);
    /* the fused kernel's q, k cache, v cache, then the unfused sequence's */
    c->out_floats = 2 * (T * H * D + 2 * nkv);
}

/* The matmul types: the first N_MM_TYPES lead the case list, the later ones (Q6_K) follow the
 * quantizers' cases at its end, so every earlier case keeps its draw. */
static const pl_type mm_types[] = {PL_TYPE_Q8_0, PL_TYPE_Q4_0, PL_TYPE_Q4_K, PL_TYPE_F16};
static const pl_type mm_types_late[] = {PL_TYPE_Q6_K};
#define N_MM_TYPES  4
#define N_MM_LATE   1
#define MM_PER_TYPE 14
#define N_RMS       11
#define N_ROPE      20
#define N_SOFTMAX   14
#define N_SWIGLU    8
#define N_ATTN      14
#define N_QUANT     8
#define N_RMS_Q     8
#define N_SWIGLU_Q  6
#define N_ROPE_KV   6
/* the decode driver's chunk edges (after everything, so every earlier case keeps its draw): one
 * case a quantized type, K past two of matmul_qv.wgsl's default chunks and a partial third */
static const pl_type mm_types_chunk[] = {PL_TYPE_Q8_0, PL_TYPE_Q4_0, PL_TYPE_Q4_K, PL_TYPE_Q6_K};
#define N_MM_CHUNK 4
/* attention over 258 chunks of 64 entries (after the chunk-edge cases: every earlier case keeps
 * its draw): attention.wgsl's one-dispatch way takes the chunks' maxes 64 chunks a round, so five
 * rounds run */
#define N_ATTN_LONG 1
#define N_CASES                                                                                    \
    ((N_MM_TYPES + N_MM_LATE) * MM_PER_TYPE + N_RMS + N_ROPE + N_SOFTMAX + N_SWIGLU + N_ATTN +     \
     N_QUANT + N_RMS_Q + N_SWIGLU_Q + N_ROPE_KV + N_MM_CHUNK + N_ATTN_LONG)

/* Matmul case j (0 <= j < MM_PER_TYPE) of type t. */
static void make_mm_case(wcase *c, pl_type t, int j, tu_rng *r)
{
    const int64_t bs = pl_type_traits_of(t)->block_size > 1 ? pl_type_traits_of(t)->block_size : 1;
    /* edge shapes: K in 1, 2, 3, 7 blocks and the largest real K; R = 1 and odd primes;
     * T = 1, a few, 17 */
    static const int64_t edge[][3] = {{1, 1, 1}, {1, 7, 3},  {2, 3, 17},
                                      {3, 5, 2}, {7, 11, 4}, {0, 3, 2}};
    if (j < 6) {
        const int64_t K = edge[j][0] ? edge[j][0] * (bs > 1 ? bs : 32) : 14336;
        make_matmul(c, t, K, edge[j][1], edge[j][2], QI_GAUSS, QI_GAUSS, "edge", r);
    } else if (j < 12) {
        /* j = 10: R past 56 (the matmuls' tiles of 8 rows on the conformance run's grids of
         * at most 7 workgroups a dimension use the split grid; past 64: the tiled drivers'
         * second row tile); j = 11: past 64 tokens (their second token tile), K at most
         * 512 (SwiftShader's time) */
        const int64_t kmax = j == 11 ? 512 : 2048;
        const int64_t K = bs > 1 ? bs * tu_rng_range(r, 1, kmax / bs) : tu_rng_range(r, 1, kmax);
        const int64_t R = j == 10 ? tu_rng_range(r, 57, 70) : tu_rng_range(r, 1, 13),
                      T = j == 11 ? tu_rng_range(r, 65, 80) : tu_rng_range(r, 1, 17);
        make_matmul(c, t, K, R, T, QI_GAUSS, QI_GAUSS, "random", r);
    } else {
        /* every (weight, activation) stress pattern pair meets in one output */
        make_matmul(c, t, j == 12 ? 512 : 768, QI_COUNT, QI_COUNT, -1, -1, "stress", r);
    }
}

/* Case i of the list (0 <= i < N_CASES). */
static void make_case(wcase *c, int i)
{
    memset(c, 0, sizeof *c);
    tu_rng r;
    tu_rng_init(&r, tu_seed() * 0x9e3779b97f4a7c15ull + 0x77677075ull + (uint64_t)i);
    int k = i;
    if (k < N_MM_TYPES * MM_PER_TYPE) {
        make_mm_case(c, mm_types[k / MM_PER_TYPE], k % MM_PER_TYPE, &r);
        return;
    }
    k -= N_MM_TYPES * MM_PER_TYPE;
    if (k < N_RMS) {
        static const int64_t ns[] = {1, 7, 127, 4096, 14336, 251};
        const double scale = pow(10.0, tu_rng_uniform(&r) * 6.0 - 3.0);
        if (k < 6)
            make_rows(c, K_RMSNORM, 1 + k % 3, ns[k], F_NORMAL, scale, "normal", &r);
        else
            make_rows(c, K_RMSNORM, 2, k % 2 ? 7 : 4096, (enum fill)(k - 5), 3.0, fill_name[k - 5],
                      &r);
        c->eps = k % 2 ? 1e-5f : 1e-6f;
        return;
    }
    k -= N_RMS;
    if (k < N_ROPE) {
        static const int64_t dims[][2] = {{64, 64}, {128, 128}, {128, 64}, {80, 32},
                                          {7, 4},   {3, 2},     {9, 0},    {256, 256}};
        static const int32_t poss[] = {0, 1, 17, 4095, 32767, 131071, 500000, 2};
        pl_rope_args ra = {.freq_base = 10000.0f, .freq_scale = 1.0f, .attn_factor = 1.0f};
        ra.style = (enum pl_rope_style)(k & 1);
        if (k < 8) {
            ra.n_rot = dims[k][1];
            ra.freq_base = k % 3 == 0 ? 500000.0f : 10000.0f;
            make_rope(c, 1 + k % 3, tu_rng_range(&r, 1, 8), dims[k][0], ra, poss[k], "plain", &r);
            return;
        }
        /* scaled: linear, factors (llama3 / longrope), YaRN (truncated or not), attn_factor */
        const int64_t D = k % 3 == 0 ? 128 : tu_rng_range(&r, 2, 256);
        ra.n_rot = k % 3 == 0 ? 128 : tu_rng_range(&r, 1, D) / 2 * 2;
        ra.freq_base = (float)pow(10.0, 3.0 + 3.5 * tu_rng_uniform(&r));
        ra.freq_scale =
            k % 4 == 0 ? 0.25f : (float)(1.0 / tu_rng_range(&r, 1, 64) * tu_rng_uniform(&r) + 0.01);
        static const float one = 1.0f;
        if (k % 2) ra.freq_factors = &one; /* make_rope draws the factors */
        if (k % 3 != 1) {
            ra.ext_factor = k % 5 ? 1.0f : (float)tu_rng_uniform(&r);
            ra.beta_fast = (float)(8.0 + 56.0 * tu_rng_uniform(&r));
            ra.beta_slow = (float)(0.5 + 1.5 * tu_rng_uniform(&r));
            ra.n_ctx_orig = tu_rng_range(&r, 256, 131072);
            ra.yarn_no_truncate = k % 4 == 1;
        }
        if (k % 4 == 2) ra.attn_factor = (float)(0.25 + 1.75 * tu_rng_uniform(&r));
        make_rope(c, 2, tu_rng_range(&r, 1, 8), D, ra, poss[k % 8], "scaled", &r);
        return;
    }
    k -= N_ROPE;
    if (k < N_SOFTMAX) {
        static const int64_t ns[] = {1, 2, 7, 61, 4096, 152064};
        if (k < 6) {
            const double scale = pow(10.0, tu_rng_uniform(&r) * 3.0 - 1.5);
            make_rows(c, K_SOFTMAX, k < 5 ? 2 : 1, ns[k], F_NORMAL, scale, "normal", &r);
        } else if (k < 11) {
            make_rows(c, K_SOFTMAX, 2, 4096, (enum fill)(k - 5), 5.0, fill_name[k - 5], &r);
        } else {
            static const char *const what[] = {"half-inf", "all-inf", "underflowing"};
            make_rows(c, K_SOFTMAX, 2, 257, F_NORMAL, 5.0, what[k - 11], &r);
            float *x = c->in[0];
            for (int64_t e = 0; e < 2 * 257; e++)
                x[e] = k == 11   ? (e % 2 ? x[e] : -INFINITY)
                       : k == 12 ? -INFINITY
                                 : (float)(-200.0 * tu_rng_uniform(&r));
        }
        return;
    }
    k -= N_SOFTMAX;
    if (k < N_SWIGLU) {
        if (k < 7) {
            const double scale = pow(10.0, tu_rng_uniform(&r) * 2.5 - 1.0);
            make_rows(c, K_SWIGLU, 1, k < 5 ? tu_rng_range(&r, 1, 20000) : 14336,
                      k == 5   ? F_DENORMAL
                      : k == 6 ? F_MIXED
                               : F_NORMAL,
                      scale,
                      k == 5   ? "denormal"
                      : k == 6 ? "mixed"
                               : "normal",
                      &r);
        } else {
            make_rows(c, K_SWIGLU, 1, 257, F_NORMAL, 1.0, "saturated", &r);
            float *g = c->in[0], *up = c->in[1];
            static const float sat[] = {1e30f, -1e30f, 88.0f, -80.0f, 20.0f, -20.0f, 3e38f, -3e38f};
            for (int64_t e = 0; e < 257; e++) g[e] = sat[e % 8], up[e] *= 1e-3f;
        }
        return;
    }
    k -= N_SWIGLU;
    if (k < N_ATTN) {
        static const attn_shape shapes[N_ATTN] = {
            /* T, H, Hkv, D, N, f16, layout, window, sinks, layer_window */
            {1, 1, 1, 1, 1, 0, 0, 0, 0, 0},      {1, 4, 2, 64, 37, 0, 0, 0, 0, 0},
            {5, 4, 1, 64, 40, 1, 0, 0, 0, 0},    {3, 8, 2, 128, 300, 1, 0, 0, 0, 0},
            {7, 2, 2, 16, 50, 0, 0, 8, 0, 0},    {7, 2, 1, 16, 50, 1, 0, 8, 3, 0},
            {4, 6, 3, 32, 64, 0, 0, 0, 0, 10},   {4, 6, 3, 32, 64, 1, 0, 16, 2, 6},
            {6, 2, 1, 24, 45, 0, 1, 0, 0, 0},    {6, 2, 1, 24, 45, 1, 1, 9, 4, 0},
            {2, 3, 1, 80, 129, 0, 1, 20, 0, 12}, {1, 2, 2, 256, 70, 1, 0, 0, 0, 0},
            {17, 4, 2, 8, 17, 0, 0, 5, 1, 0},    {2, 2, 1, 40, 1000, 1, 0, 100, 4, 0}};
        make_attention(c, shapes[k], &r);
        return;
    }
    k -= N_ATTN;
    if (k < N_QUANT) {
        make_quantize(c, k < 4 ? PL_TYPE_Q8_0 : PL_TYPE_Q8_K, k % 4, &r);
        return;
    }
    k -= N_QUANT;
    if (k < N_MM_LATE * MM_PER_TYPE) {
        make_mm_case(c, mm_types_late[k / MM_PER_TYPE], k % MM_PER_TYPE, &r);
        return;
    }
    k -= N_MM_LATE * MM_PER_TYPE;
    /* the fused kernels (after Q6_K: every earlier case keeps its draw); Q8_0 rows of an odd
     * number of blocks (a row's last group is one block) among them */
    if (k < N_RMS_Q) {
        static const struct {
            pl_type t;
            int64_t rows, n; /* n 0: a random number of blocks */
            int add;
            enum fill f;
        } rq[N_RMS_Q] = {{PL_TYPE_Q8_0, 3, 32, 1, F_NORMAL},   {PL_TYPE_Q8_0, 2, 224, 0, F_MIXED},
                         {PL_TYPE_Q8_0, 2, 0, 1, F_DENORMAL},  {PL_TYPE_Q8_K, 3, 256, 1, F_NORMAL},
                         {PL_TYPE_Q8_K, 2, 0, 1, F_OUTLIER},   {PL_TYPE_F32, 2, 4096, 1, F_NORMAL},
                         {PL_TYPE_Q8_0, 2, 4096, 1, F_NORMAL}, {PL_TYPE_Q8_K, 1, 14336, 0, F_ZERO}};
        const int64_t bs = rq[k].t == PL_TYPE_Q8_K ? 256 : 32;
        const int64_t n = rq[k].n ? rq[k].n : bs * tu_rng_range(&r, 1, 4096 / bs);
        make_rmsnorm_q(c, rq[k].t, rq[k].rows, n, rq[k].add, rq[k].f, k, &r);
        return;
    }
    k -= N_RMS_Q;
    if (k < N_SWIGLU_Q) {
        static const struct {
            pl_type t;
            int64_t rows, n;
            int strided;
            enum fill f;
        } sq[N_SWIGLU_Q] = {
            {PL_TYPE_Q8_0, 3, 32, 0, F_NORMAL},    {PL_TYPE_Q8_0, 2, 0, 1, F_MIXED},
            {PL_TYPE_Q8_0, 1, 14336, 0, F_NORMAL}, {PL_TYPE_Q8_K, 2, 256, 0, F_NORMAL},
            {PL_TYPE_Q8_K, 2, 0, 1, F_DENORMAL},   {PL_TYPE_Q8_K, 1, 512, 1, F_OUTLIER}};
        const int64_t bs = sq[k].t == PL_TYPE_Q8_K ? 256 : 32;
        const int64_t n = sq[k].n ? sq[k].n : bs * tu_rng_range(&r, 1, 4096 / bs);
        make_swiglu_q(c, sq[k].t, sq[k].rows, n, sq[k].strided, sq[k].f, k, &r);
        return;
    }
    k -= N_SWIGLU_Q;
    if (k < N_ROPE_KV) {
        /* T, H, Hkv, D, n_rot, neox, bias, norm, p0, sinks, ring: a context window; the
         * session's ring wrapping inside the step; a position past 2^16; partial rotation */
        static const int64_t rk[N_ROPE_KV][11] = {
            {1, 4, 2, 64, 64, 0, 0, 0, 5, 0, 0},  {3, 2, 1, 128, 128, 1, 1, 0, 0, 0, 0},
            {4, 4, 2, 64, 64, 1, 0, 1, 10, 2, 6}, {2, 8, 8, 256, 256, 0, 1, 0, 100000, 4, 16},
            {5, 6, 3, 32, 32, 1, 1, 1, 7, 0, 10}, {2, 2, 2, 6, 4, 0, 1, 0, 3, 0, 0}};
        const int64_t *a = rk[k];
        make_rope_kv(c, a[0], a[1], a[2], a[3], a[4], (int)a[5], (int)a[6], (int)a[7], a[8], a[9],
                     a[10], &r);
        return;
    }
    k -= N_ROPE_KV;
    if (k < N_MM_CHUNK) {
        /* Q8_0, Q4_0: 131 blocks (chunks of 64: two and 3 blocks); Q4_K, Q6_K: 37 blocks (chunks
         * of 16: two and 5); R = 9 and 6 (not a multiple of the 4 rows a workgroup), T = 3, 2;
         * W and X at odd byte offsets (every block's words at a 1- or 3-byte shift) */
        const pl_type t = mm_types_chunk[k];
        const int kq = t == PL_TYPE_Q4_K || t == PL_TYPE_Q6_K;
        make_matmul(c, t, kq ? 37 * 256 : 131 * 32, kq ? 6 : 9, kq ? 2 : 3, QI_GAUSS, QI_GAUSS,
                    "chunks", &r);
        c->woff = k % 2 ? 1 : 3, c->xoff = k % 2 ? 3 : 1;
        return;
    }
    k -= N_MM_CHUNK;
    if (k < N_ATTN_LONG) {
        /* 16500 entries, 258 chunks; two queries at the prefix's end see them all */
        const attn_shape s = {2, 2, 1, 8, 16500, 0, 0, 0, 0, 0};
        make_attention(c, s, &r);
    }
}

/* ---- gen ---- */

/* The bytes before input k's data in its file: a matmul's W and X offsets. */
static size_t in_pre(const wcase *c, int k)
{
    if (c->kind != K_MATMUL) return 0;
    return !strcmp(c->in_name[k], "w") ? c->woff : !strcmp(c->in_name[k], "x") ? c->xoff : 0;
}

/* n bytes of p after pre bytes of 0xa5 (a matmul's W or X at a byte offset) */
static int write_file(const char *path, size_t pre, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = 1;
    for (size_t i = 0; i < pre; i++) ok &= fputc(0xa5, f) != EOF;
    ok &= fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static void json_case(FILE *f, const wcase *c, int i)
{
    fprintf(f,
            "{\"id\":%d,\"name\":\"%s\",\"kind\":\"%s\",\"out\":\"c%d.out\",\"outFloats\":%" PRId64,
            i, c->name, kind_name[c->kind], i, c->out_floats);
    fprintf(f, ",\"inputs\":{");
    for (int k = 0; k < c->n_in; k++)
        fprintf(f, "%s\"%s\":\"c%d_%s.bin\"", k ? "," : "", c->in_name[k], i, c->in_name[k]);
    fprintf(f, "}");
    switch (c->kind) {
    case K_MATMUL:
        fprintf(f,
                ",\"type\":\"%s\",\"K\":%" PRId64 ",\"R\":%" PRId64 ",\"T\":%" PRId64
                ",\"wRow\":%zu,\"xRow\":%zu,\"ldy\":%" PRId64 ",\"wOff\":%zu,\"xOff\":%zu",
                pl_type_traits_of(c->wt)->name, c->K, c->R, c->T, c->wrb, c->xrb, c->ldy, c->woff,
                c->xoff);
        break;
    case K_RMSNORM:
    case K_SOFTMAX:
    case K_SWIGLU:
        fprintf(f, ",\"rows\":%" PRId64 ",\"n\":%" PRId64 ",\"eps\":%.9g", c->rows, c->n,
                (double)c->eps);
        break;
    case K_ROPE: {
        const pl_rope_args *a = &c->ra;
        fprintf(f,
                ",\"tokens\":%" PRId64 ",\"H\":%" PRId64 ",\"D\":%" PRId64
                ",\"rope\":{\"n_rot\":%" PRId64
                ",\"freq_base\":%.9g,\"freq_scale\":%.9g,\"factors\":%s,\"ext_factor\":%.9g,"
                "\"attn_factor\":%.9g,\"beta_fast\":%.9g,\"beta_slow\":%.9g,\"n_ctx_orig\":%" PRId64
                ",\"neox\":%s,\"yarn_no_truncate\":%s}",
                c->T, c->H, c->D, a->n_rot, (double)a->freq_base, (double)a->freq_scale,
                a->freq_factors ? "true" : "false", (double)a->ext_factor, (double)a->attn_factor,
                (double)a->beta_fast, (double)a->beta_slow, a->n_ctx_orig,
                a->style == PL_ROPE_NEOX ? "true" : "false",
                a->yarn_no_truncate ? "true" : "false");
        break;
    }
    case K_QUANTIZE:
    case K_RMSNORM_Q:
    case K_SWIGLU_Q:
        fprintf(f,
                ",\"type\":%s%s%s,\"rows\":%" PRId64 ",\"n\":%" PRId64
                ",\"outBytes\":%zu,\"yRow\":%zu,\"eps\":%.9g,\"add\":%s,\"ldg\":%" PRId64
                ",\"ldu\":%" PRId64,
                c->wt == PL_TYPE_F32 ? "" : "\"",
                c->wt == PL_TYPE_F32 ? "null" : pl_type_traits_of(c->wt)->name,
                c->wt == PL_TYPE_F32 ? "" : "\"", c->rows, c->n, c->out_bytes, c->yrb,
                (double)c->eps, c->add ? "true" : "false", c->ldg, c->ldu);
        break;
    case K_ROPE_KV:
        fprintf(f,
                ",\"T\":%" PRId64 ",\"H\":%" PRId64 ",\"Hkv\":%" PRId64 ",\"D\":%" PRId64
                ",\"ld\":%" PRId64 ",\"bias\":%s,\"norm\":%s,\"eps\":%.9g,\"p0\":%" PRId64
                ",\"sinks\":%" PRId64 ",\"ring\":%" PRId64 ",\"nCap\":%" PRId64
                ",\"rope\":{\"n_rot\":%" PRId64
                ",\"freq_base\":%.9g,\"freq_scale\":1,\"factors\":false,\"ext_factor\":0,"
                "\"attn_factor\":1,\"beta_fast\":0,\"beta_slow\":0,\"n_ctx_orig\":0,"
                "\"neox\":%s,\"yarn_no_truncate\":false}",
                c->T, c->H, c->Hkv, c->D, c->ldg, c->bias ? "true" : "false",
                c->norm ? "true" : "false", (double)c->eps, c->p0, c->sinks, c->ring, c->n_cap,
                c->ra.n_rot, (double)c->ra.freq_base,
                c->ra.style == PL_ROPE_NEOX ? "true" : "false");
        break;
    case K_ATTENTION: {
        const pl_attn_args *a = &c->aa;
        fprintf(f,
                ",\"T\":%" PRId64 ",\"H\":%" PRId64 ",\"Hkv\":%" PRId64 ",\"D\":%" PRId64
                ",\"N\":%" PRId64 ",\"kvF16\":%s,\"window\":%" PRId64 ",\"nSinks\":%" PRId64
                ",\"layerWindow\":%" PRId64 ",\"scale\":%.9g",
                a->T, a->H, a->Hkv, a->D, a->N, a->kv_type == PL_TYPE_F16 ? "true" : "false",
                a->window, a->n_sinks, a->layer_window, (double)a->scale);
        break;
    }
    }
    fprintf(f, "}");
}

static int gen(const char *dir, const char *filter)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/cases.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "webgpu_cases: cannot write %s\n", path);
        return 2;
    }
    fprintf(f, "{\"seed\":%" PRIu64 ",\"cases\":[", tu_seed());
    int first = 1, n = 0;
    for (int i = 0; i < N_CASES; i++) {
        wcase c;
        make_case(&c, i);
        if (!filter || strstr(c.name, filter)) {
            for (int k = 0; k < c.n_in; k++) {
                snprintf(path, sizeof path, "%s/c%d_%s.bin", dir, i, c.in_name[k]);
                if (write_file(path, in_pre(&c, k), c.in[k], c.in_bytes[k])) {
                    fprintf(stderr, "webgpu_cases: cannot write %s\n", path);
                    return 2;
                }
            }
            if (!first) fprintf(f, ",\n");
            json_case(f, &c, i);
            first = 0;
            n++;
        }
        free_case(&c);
    }
    fprintf(f, "]}\n");
    if (fclose(f)) return 2;
    printf("webgpu_cases: %d cases in %s\n", n, dir);
    return 0;
}

/* ---- check ---- */

static void *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = xalloc((size_t)(len > 0 ? len : 1));
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

/* The summary: worst error/bound per kernel, cases, outputs, and bit-identity to ref where the
 * set promises it. */
static struct {
    const char *kernel;
    int cases, failed, bits_same, bits_cases;
    int64_t outputs;
    double worst;
} sum[16];
static int n_sum;

static void note(const char *kernel, double worst, int64_t outputs, int ok, int bits_tested,
                 int bits_same)
{
    int s = 0;
    while (s < n_sum && strcmp(sum[s].kernel, kernel)) s++;
    if (s == n_sum) sum[n_sum++].kernel = kernel;
    sum[s].cases++;
    sum[s].failed += !ok;
    sum[s].outputs += outputs;
    if (worst > sum[s].worst || isnan(worst)) sum[s].worst = isnan(worst) ? INFINITY : worst;
    sum[s].bits_cases += bits_tested;
    sum[s].bits_same += bits_tested && bits_same;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static const char *mm_kernel(pl_type t)
{
    return t == PL_TYPE_Q8_0   ? "matmul Q8_0"
           : t == PL_TYPE_Q4_0 ? "matmul Q4_0"
           : t == PL_TYPE_Q4_K ? "matmul Q4_K"
           : t == PL_TYPE_Q6_K ? "matmul Q6_K"
                               : "matmul F16";
}

/* Quantized rows (yrb bytes apart) against ref's quantize of src's rows (rows of n floats): every
 * block byte ref's, the bytes up to the row's next word 0, the padding past it untouched (0xa5).
 * Returns the first bad byte's index (-1: none), with what it is in why. */
static int64_t check_qrows(pl_type t, const float *src, int64_t rows, int64_t n, size_t yrb,
                           const unsigned char *got, char *why, size_t nwhy)
{
    const size_t rb = row_bytes(t, n), rbw = (rb + 3) / 4 * 4;
    unsigned char *want = xalloc(rb);
    int64_t bad = -1;
    for (int64_t row = 0; row < rows && bad < 0; row++) {
        pl_kernels_ref.quantize_row[t](want, src + row * n, n);
        const unsigned char *g = got + (size_t)row * yrb;
        for (size_t i = 0; i < yrb && bad < 0; i++) {
            const unsigned w = i < rb ? want[i] : i < rbw ? 0x00 : 0xa5;
            if (g[i] != w) {
                bad = row * (int64_t)yrb + (int64_t)i;
                snprintf(why, nwhy,
                         " byte %" PRId64 " (row %" PRId64 ", %s %zu) is 0x%02x, want 0x%02x", bad,
                         row,
                         i < rb    ? "block"
                         : i < rbw ? "the last word's padding byte"
                                   : "padding byte",
                         i < rb ? i / pl_type_traits_of(t)->block_bytes : i, g[i], w);
            }
        }
    }
    free(want);
    return bad;
}

/* test_ops.c rope_case and rope_bound over one token's H heads (x in, yy out): the worst
 * error/bound; *at the worst output, or -2 where a dim past n_rot changed. */
static double rope_worst(const float *x, const float *yy, int64_t H, int64_t D, int32_t pos,
                         const pl_rope_args *ra, int64_t *at)
{
    const int64_t n_rot = ra->n_rot > D ? D : ra->n_rot;
    const int scaled = ra->freq_scale != 1.0f || ra->freq_factors || ra->ext_factor != 0.0f ||
                       ra->attn_factor != 1.0f;
    double *ref = xalloc(sizeof(double) * (size_t)(H * D)), worst = 0.0;
    ref_rope(ref, x, H, D, pos, ra);
    for (int64_t h = 0; h < H; h++) {
        for (int64_t i = 0; i < n_rot / 2; i++) {
            const int64_t ia = ra->style == PL_ROPE_NEOX ? i : 2 * i;
            const int64_t ib = ra->style == PL_ROPE_NEOX ? i + n_rot / 2 : 2 * i + 1;
            const ref_rope_angle th = ref_rope_theta(ra, n_rot, i, pos);
            const double k = scaled ? 4.0 : 0.0;
            const double c_theta = (double)(n_rot / 2) + fabs(log((double)ra->freq_base)) + 4.0 + k;
            const double ramp = 4.0 * fabs((double)ra->ext_factor) * fabs(th.extrap - th.interp);
            const double mag = fabs(x[h * D + ia]) + fabs(x[h * D + ib]);
            const double bound =
                U * (8.0 + k + c_theta * fabs(th.theta) + ramp) * fabs(th.mscale) * mag + FMIN;
            const int64_t idx[2] = {h * D + ia, h * D + ib};
            for (int e = 0; e < 2; e++) {
                const double q = ref_ratio(yy[idx[e]], ref[idx[e]], bound);
                if (!(q <= worst)) worst = q, *at = *at == -2 ? -2 : idx[e];
            }
        }
        const int64_t first = n_rot / 2 * 2;
        if (memcmp(yy + h * D + first, x + h * D + first, (size_t)(D - first) * 4)) *at = -2;
    }
    free(ref);
    return worst;
}

/* Returns 1 if the case passes. */
static int check_case(const wcase *c, const float *y)
{
    double worst = 0.0;
    int64_t wi = -1;
    int ok = 1, bits_tested = 0, bits_same = 1;
    char extra[160] = "";
    switch (c->kind) {
    case K_MATMUL: {
        const int64_t K = c->K, R = c->R, T = c->T, ldy = c->ldy;
        double *yref = xalloc(sizeof(double) * (size_t)(T * R)),
               *mag = xalloc(sizeof(double) * (size_t)(T * R));
        if (ref_matmul(c->wt, c->in[0], c->wrb, c->in[1], c->xrb, K, R, T, yref, mag)) {
            fprintf(stderr, "ref_matmul failed\n");
            ok = 0;
        }
        const double cc = qi_matmul_c(c->wt), eta = qi_matmul_eta(c->wt);
        float *yr = xalloc(sizeof(float) * (size_t)(T * ldy));
        pl_kernels_ref.matmul[c->wt](yr, ldy, c->in[0], c->wrb, c->in[1], c->xrb, K, 0, R, T);
        bits_tested = c->wt != PL_TYPE_F16; /* the integer paths: ref's bits */
        int64_t bad_pad = -1, first_diff = -1, exempt = 0;
        for (int64_t t = 0; t < T; t++) {
            /* a token with a subnormal Q8_K scale: the set scales it (GPUs flush subnormals),
             * ref rounds it to the subnormal grid: the bound only (kernels/webgpu/README.md) */
            int sub = 0;
            if (pl_type_traits_of(c->wt)->dot_type == PL_TYPE_Q8_K)
                for (int64_t b = 0; b < K / 256; b++) {
                    const pl_block_q8_k *xb =
                        (const pl_block_q8_k *)((const unsigned char *)c->in[1] + t * c->xrb) + b;
                    float d;
                    memcpy(&d, &xb->d, 4);
                    sub |= fpclassify(d) == FP_SUBNORMAL;
                }
            exempt += sub ? R : 0;
            for (int64_t r = 0; r < R; r++) {
                const double bound = cc * U * (double)K * mag[t * R + r] + (double)K * eta;
                double q = fabs((double)y[t * ldy + r] - yref[t * R + r]) / bound;
                if (isnan(q)) q = INFINITY;
                if (q > worst || wi < 0) /* the worst output, or the first */
                    worst = fmax(q, worst), wi = t * ldy + r;
                if (bits_tested && !sub && bits_of(y[t * ldy + r]) != bits_of(yr[t * ldy + r]) &&
                    first_diff < 0)
                    first_diff = t * ldy + r;
            }
            for (int64_t r = R; r < ldy; r++)
                if (bits_of(y[t * ldy + r]) != 0x7fa5a5a5u) bad_pad = t * ldy + r;
        }
        if (bad_pad >= 0) {
            ok = 0;
            snprintf(extra, sizeof extra, " wrote y[%" PRId64 "] outside the R rows", bad_pad);
        }
        if (first_diff >= 0) {
            bits_same = 0;
            ok = 0;
            snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
                     " y[%" PRId64 "] = %.9g is not ref's %.9g", first_diff, y[first_diff],
                     yr[first_diff]);
        }
        if (exempt)
            snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
                     " (%" PRId64 " outputs over subnormal Q8_K scales: bound only)", exempt);
        free(yref), free(mag), free(yr);
        note(mm_kernel(c->wt), worst, R * T, ok && worst <= 1.0, bits_tested, bits_same);
        break;
    }
    case K_RMSNORM:
    case K_SOFTMAX:
    case K_SWIGLU: {
        const int64_t n = c->n;
        double *ref = xalloc(sizeof(double) * (size_t)n);
        for (int64_t row = 0; row < c->rows; row++) {
            const float *x = (const float *)c->in[0] + row * n;
            const float *yy = y + row * n;
            float m = x[0];
            if (c->kind == K_RMSNORM)
                ref_rmsnorm(ref, x, c->in[1], n, c->eps);
            else if (c->kind == K_SOFTMAX) {
                ref_softmax(ref, x, n);
                for (int64_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
            } else
                ref_swiglu(ref, x, (const float *)c->in[1] + row * n, n);
            for (int64_t i = 0; i < n; i++) {
                double bound;
                if (c->kind == K_RMSNORM) /* test_ops.c rmsnorm_case */
                    bound = (double)(n + 8) * U * fabs(ref[i]) + FMIN;
                else if (c->kind == K_SOFTMAX) { /* test_ops.c softmax_case */
                    const double gap = x[i] == m ? 0.0 : fabs((double)x[i] - (double)m);
                    bound = isinf(gap) ? FMIN : ((double)n + 8.0 + gap) * U * fabs(ref[i]) + FMIN;
                } else /* test_ops.c swiglu_case */
                    bound = 16.0 * U * fabs(ref[i]) +
                            0x1p-120 * fabs(((const float *)c->in[1])[row * n + i]) + FMIN;
                const double q = ref_ratio(yy[i], ref[i], bound);
                if (!(q <= worst)) worst = q, wi = row * n + i;
            }
        }
        free(ref);
        note(kind_name[c->kind], worst, c->rows * n, worst <= 1.0, 0, 1);
        break;
    }
    case K_ROPE: { /* test_ops.c rope_case and rope_bound */
        const int64_t n = c->H * c->D;
        const pl_rope_args *ra = &c->ra;
        const int scaled = ra->freq_scale != 1.0f || ra->freq_factors || ra->ext_factor != 0.0f ||
                           ra->attn_factor != 1.0f;
        for (int64_t t = 0; t < c->T; t++) {
            int64_t at = -1;
            const double q = rope_worst((const float *)c->in[0] + t * n, y + t * n, c->H, c->D,
                                        ((const int32_t *)c->in[1])[t], ra, &at);
            if (at == -2) {
                ok = 0;
                snprintf(extra, sizeof extra, " dims past n_rot changed (token %" PRId64 ")", t);
            }
            if (!(q <= worst)) worst = q, wi = t * n + (at >= 0 ? at : 0);
        }
        note(scaled ? "rope (scaled)" : "rope", worst, c->T * n, ok && worst <= 1.0, 0, 1);
        break;
    }
    case K_ROPE_KV: {
        /* the fused kernel's outputs are the unfused sequence's bits (the page ran both: bias
         * adds, head rmsnorms, ropes, cache copies); each token's v row is at its slot with
         * its bias (C's float add), no other slot written; without the head norms the q and
         * k rows within rope's bound of the reference over x + b */
        const int64_t T = c->T, H = c->H, Hkv = c->Hkv, D = c->D, nkv = c->n_cap * Hkv * D;
        const int64_t nq = T * H * D, half = nq + 2 * nkv;
        const float *x = c->in[0], *b = c->in[1];
        int64_t first = -1;
        for (int64_t i = 0; i < half && first < 0; i++)
            if (bits_of(y[i]) != bits_of(y[half + i])) first = i;
        if (first >= 0) {
            ok = 0;
            snprintf(extra, sizeof extra,
                     " output %" PRId64 " (%s) is %.9g, the unfused sequence's %.9g", first,
                     first < nq         ? "q"
                     : first < nq + nkv ? "k cache"
                                        : "v cache",
                     y[first], y[half + first]);
        }
        const float *kc = y + nq, *vc = y + nq + nkv;
        char *written = xalloc((size_t)c->n_cap);
        float *in = xalloc(sizeof(float) * (size_t)(H * D));
        for (int64_t t = 0; t < T && ok; t++) {
            const int64_t sl = kv_slot(c, c->p0 + t);
            written[sl] = 1;
            const float *row = x + t * c->ldg;
            for (int64_t i = 0; i < Hkv * D && ok; i++) {
                const float v = row[(H + Hkv) * D + i] + (c->bias ? b[(H + Hkv) * D + i] : 0.0f);
                if (bits_of(vc[sl * Hkv * D + i]) != bits_of(v)) {
                    ok = 0;
                    snprintf(extra, sizeof extra,
                             " v cache slot %" PRId64 " [%" PRId64 "] is %.9g, not token %" PRId64
                             "'s %.9g",
                             sl, i, vc[sl * Hkv * D + i], t, v);
                }
            }
            if (c->norm) continue;
            for (int part = 0; part < 2; part++) { /* q, then k at its slot */
                const int64_t nh = part ? Hkv : H, o = part ? H * D : 0;
                for (int64_t i = 0; i < nh * D; i++)
                    in[i] = row[o + i] + (c->bias ? b[o + i] : 0.0f);
                int64_t at = -1;
                const double q = rope_worst(in, part ? kc + sl * Hkv * D : y + t * H * D, nh, D,
                                            (int32_t)(c->p0 + t), &c->ra, &at);
                if (at == -2) {
                    ok = 0;
                    snprintf(extra, sizeof extra, " dims past n_rot changed (token %" PRId64 ")",
                             t);
                }
                if (!(q <= worst)) worst = q, wi = part ? nq + sl * Hkv * D : t * H * D;
            }
        }
        for (int64_t sl = 0; sl < c->n_cap && ok; sl++)
            for (int64_t i = 0; i < Hkv * D && !written[sl]; i++)
                if (bits_of(kc[sl * Hkv * D + i]) != 0x7fa5a5a5u ||
                    bits_of(vc[sl * Hkv * D + i]) != 0x7fa5a5a5u) {
                    ok = 0;
                    snprintf(extra, sizeof extra, " slot %" PRId64 " written, no token's", sl);
                    break;
                }
        free(written), free(in);
        note("rope_kv", worst, nq + 2 * T * Hkv * D, ok && worst <= 1.0, 0, 1);
        break;
    }
    case K_QUANTIZE: { /* ref's bytes, every one */
        const int64_t bad = check_qrows(c->wt, c->in[0], c->rows, c->n, c->yrb,
                                        (const unsigned char *)y, extra, sizeof extra);
        bits_tested = 1;
        bits_same = bad < 0;
        ok = bits_same;
        note(c->wt == PL_TYPE_Q8_0 ? "quantize Q8_0" : "quantize Q8_K", 0.0, c->rows * c->n, ok, 1,
             bits_same);
        break;
    }
    case K_RMSNORM_Q:
    case K_SWIGLU_Q: {
        /* rmsnorm_q: x after the add is the float sum's bits (a GPU may flush a sum below
         * FLT_MIN), the normalized rows within rmsnorm's bound of the reference over that x;
         * swiglu_q: the products within swiglu's bound; both: the quantized rows are ref's
         * quantize of the kernel's own float rows, every byte */
        const int64_t n = c->n, rows = c->rows, nn = rows * n;
        const int rq = c->kind == K_RMSNORM_Q;
        const float *x = c->in[0], *res = c->in[1];
        const float *xo = rq ? y : NULL, *yn = rq ? y + nn : y;
        double *ref = xalloc(sizeof(double) * (size_t)n);
        float *xs = xalloc(sizeof(float) * (size_t)n);
        for (int64_t row = 0; row < rows && ok; row++) {
            if (rq) {
                for (int64_t i = 0; i < n && ok; i++) {
                    const float s = c->add ? x[row * n + i] + res[row * n + i] : x[row * n + i];
                    const float g = xo[row * n + i];
                    if (bits_of(g) != bits_of(s) && !(fabsf(s) < FLT_MIN && g == 0.0f)) {
                        ok = 0;
                        snprintf(extra, sizeof extra,
                                 " x[%" PRId64 "] after the add is %.9g, the sum %.9g", row * n + i,
                                 g, s);
                    }
                    xs[i] = g;
                }
                ref_rmsnorm(ref, xs, c->in[2], n, c->eps);
            } else {
                for (int64_t i = 0; i < n; i++) xs[i] = x[row * c->ldg + i];
                ref_swiglu(ref, xs, res + row * c->ldu, n);
            }
            for (int64_t i = 0; i < n; i++) {
                const double bound =
                    rq ? (double)(n + 8) * U * fabs(ref[i]) + FMIN
                       : 16.0 * U * fabs(ref[i]) + 0x1p-120 * fabs(res[row * c->ldu + i]) + FMIN;
                const double q = ref_ratio(yn[row * n + i], ref[i], bound);
                if (!(q <= worst)) worst = q, wi = (rq ? nn : 0) + row * n + i;
            }
        }
        free(ref), free(xs);
        if (c->wt != PL_TYPE_F32 && ok) {
            const unsigned char *q = (const unsigned char *)(yn + nn);
            bits_tested = 1;
            bits_same = check_qrows(c->wt, yn, rows, n, c->yrb, q, extra, sizeof extra) < 0;
            ok = bits_same;
        }
        note(kind_name[c->kind], worst, nn, ok && worst <= 1.0, bits_tested, bits_same);
        break;
    }
    case K_ATTENTION: { /* test_attention.c check_case */
        const pl_attn_args *a = &c->aa;
        const int64_t D = a->D;
        double *ref = xalloc(sizeof(double) * (size_t)D), *pv = xalloc(sizeof(double) * (size_t)D);
        double *pvs = xalloc(sizeof(double) * (size_t)D);
        for (int64_t t = 0; t < a->T; t++)
            for (int64_t h = 0; h < a->H; h++) {
                double A = 0.0;
                const int64_t M = ref_attention_row(ref, pv, pvs, &A, a, t, h);
                const float *o = y + (t * a->H + h) * D;
                for (int64_t k = 0; k < D; k++) {
                    const double bound =
                        U * (pv[k] * (4.0 * ((double)D + 2.0) * A + 2.0 * (double)M + 16.0) +
                             pvs[k]) +
                        FMIN;
                    const double q =
                        M == 0 ? (o[k] == 0.0f ? 0.0 : INFINITY) : ref_ratio(o[k], ref[k], bound);
                    if (!(q <= worst)) worst = q, wi = (t * a->H + h) * D + k;
                }
            }
        free(ref), free(pv), free(pvs);
        note(a->window || a->layer_window ? "attention (windows, sinks)" : "attention", worst,
             a->T * a->H * D, worst <= 1.0, 0, 1);
        break;
    }
    }
    ok = ok && worst <= 1.0;
    printf("%s %-64s error/bound %.3g%s%s\n", ok ? "ok  " : "FAIL", c->name, worst,
           bits_tested ? (bits_same ? " (ref's bits)" : " (NOT ref's bits)") : "", extra);
    if (!ok && wi >= 0) printf("     worst at output %" PRId64 ": %.9g\n", wi, y[wi]);
    return ok;
}

static int check(const char *dir, const char *filter, const char *outdir)
{
    ref_init();
    char path[4096];
    int failed = 0, n = 0;
    for (int i = 0; i < N_CASES; i++) {
        wcase c;
        make_case(&c, i);
        if (filter && !strstr(c.name, filter)) {
            free_case(&c);
            continue;
        }
        n++;
        int same = 1;
        for (int k = 0; k < c.n_in && same; k++) {
            size_t len = 0;
            snprintf(path, sizeof path, "%s/c%d_%s.bin", dir, i, c.in_name[k]);
            void *p = read_all(path, &len);
            const size_t pre = in_pre(&c, k);
            same = p && len == pre + c.in_bytes[k] &&
                   !memcmp((const unsigned char *)p + pre, c.in[k], c.in_bytes[k]);
            free(p);
        }
        size_t len = 0;
        snprintf(path, sizeof path, "%s/c%d.out", outdir, i);
        float *y = same ? read_all(path, &len) : NULL;
        if (!same) {
            printf("FAIL %s: input files of %s differ from this seed's (gen with another seed?)\n",
                   c.name, dir);
            failed++;
        } else if (!y ||
                   len != (c.out_bytes ? c.out_bytes : sizeof(float) * (size_t)c.out_floats)) {
            printf("FAIL %s: no output %s of %" PRId64 " floats (%zu bytes)\n", c.name, path,
                   c.out_floats, len);
            note(c.kind == K_MATMUL ? mm_kernel(c.wt) : kind_name[c.kind], INFINITY, 0, 0, 0, 1);
            failed++;
        } else {
            failed += !check_case(&c, y);
        }
        free(y);
        free_case(&c);
    }
    printf("\nwebgpu set against the GSL double references (seed %" PRIu64 "):\n", tu_seed());
    printf("%-28s %6s %9s %14s %s\n", "kernel", "cases", "outputs", "worst err/bound",
           "bits of ref");
    for (int s = 0; s < n_sum; s++) {
        char bits[32] = "-";
        if (sum[s].bits_cases)
            snprintf(bits, sizeof bits, "%d of %d cases", sum[s].bits_same, sum[s].bits_cases);
        printf("%-28s %6d %9" PRId64 " %14.3g %s%s\n", sum[s].kernel, sum[s].cases, sum[s].outputs,
               sum[s].worst, bits, sum[s].failed ? "  FAILED" : "");
    }
    printf("%d of %d cases failed\n", failed, n);
    return failed || n == 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5 || (strcmp(argv[1], "gen") && strcmp(argv[1], "check"))) {
        fprintf(stderr, "usage: webgpu_cases gen DIR [FILTER] | check DIR [FILTER [OUTDIR]]\n");
        return 2;
    }
    const char *filter = argc > 3 && argv[3][0] ? argv[3] : NULL;
    if (!strcmp(argv[1], "gen")) return gen(argv[2], filter);
    return check(argv[2], filter, argc > 4 ? argv[4] : argv[2]);
}
