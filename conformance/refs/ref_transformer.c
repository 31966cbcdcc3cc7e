/* ref_transformer.c — the end-to-end oracle: the table's architectures in double with GSL BLAS.
 * Not fast and not shared with the engine: it reads the architecture table (names, shapes, keys)
 * but binds and computes on its own, so a binding bug in engine/runtime/model.c shows up as a
 * mismatch instead of hiding twice. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>

#include "kernels.h"
#include "runtime/arch.h"
#include "ref_transformer.h"

typedef struct ref_layer {
    int64_t H, Hkv, F;
    gsl_matrix *m[PL_L_COUNT];   /* (out, in) matrices by enum pl_layer_role, NULL when absent */
    gsl_vector *v[PL_L_COUNT];   /* vectors (norms, biases) by role */
    gsl_matrix **x[PL_L_COUNT];  /* stacked experts by role: X matrices (out, in), or NULL */
    pl_step steps[PL_MAX_STEPS]; /* the engine's step list of the layer (arch.h), run here in
                                    double precision */
    size_t n_steps;
} ref_layer;

struct ref_model {
    int neox;
    int64_t E, L, D, n_rot, V;
    double eps, base;
    double *inv_freq; /* (n_rot/2) each pair's frequency, every scaling applied */
    double mscale;    /* cos and sin are multiplied by it (YaRN's attention factor) */
    double *inv_freq_local, mscale_local; /* the local layers' (Gemma 3: their own base) */
    double *inv_freq_long; /* longrope (Phi-3): inv_freq with the long factors, or NULL */
    int64_t orig_ctx;      /* beyond this context window, inv_freq_long replaces inv_freq */
    const pl_arch *arch;
    double scale, attn_cap, final_cap; /* attention scale; soft-caps (0: none) */
    double emb_scale;                  /* 0, or the embedding rows times it */
    double res_scale, logit_div; /* Granite: each branch times res_scale; logits / logit_div */
    double logit_scale;          /* 0, or the logits times it (cohere2) */
    int64_t X, U, FX, FS;        /* experts, used per token, their widths (0: dense) */
    int64_t window;              /* the local layers' window */
    gsl_matrix *embd, *output;   /* (V, E) */
    gsl_vector *out_norm;
    ref_layer *layers;
};

static int fail(char *msg, size_t len, const char *what, const char *name)
{
    snprintf(msg, len, "%s '%s'", what, name);
    return -1;
}

/* Tensor `name` as a double matrix (rows = ne[1], cols = ne[0]); NULL if absent. */
static gsl_matrix *load_matrix(const pl_gguf *g, const char *name, int64_t cols, int64_t rows)
{
    int64_t i = pl_gguf_find_tensor(g, name);
    if (i < 0) return NULL;
    pl_tensor_info t;
    if (pl_gguf_tensor(g, (uint64_t)i, &t, NULL)) return NULL;
    if (t.ne[0] != cols || t.ne[1] != rows || t.ne[2] != 1 || t.ne[3] != 1) return NULL;
    size_t row_bytes;
    if (pl_type_row_bytes(t.type, cols, &row_bytes, NULL)) return NULL;
    gsl_matrix *m = gsl_matrix_alloc((size_t)rows, (size_t)cols);
    float *tmp = malloc((size_t)cols * sizeof *tmp);
    for (int64_t r = 0; r < rows; r++) {
        pl_kernels_ref.dequantize_row[t.type](tmp, (const uint8_t *)t.data + r * row_bytes, cols);
        for (int64_t c = 0; c < cols; c++) gsl_matrix_set(m, (size_t)r, (size_t)c, tmp[c]);
    }
    free(tmp);
    return m;
}

/* Stacked experts: X matrices of (rows, cols), as load_matrix reads one; NULL if absent. */
static gsl_matrix **load_experts(const pl_gguf *g, const char *name, int64_t cols, int64_t rows,
                                 int64_t X)
{
    int64_t i = pl_gguf_find_tensor(g, name);
    if (i < 0) return NULL;
    pl_tensor_info t;
    if (pl_gguf_tensor(g, (uint64_t)i, &t, NULL)) return NULL;
    if (t.ne[0] != cols || t.ne[1] != rows || t.ne[2] != X || t.ne[3] != 1) return NULL;
    size_t row_bytes;
    if (pl_type_row_bytes(t.type, cols, &row_bytes, NULL)) return NULL;
    gsl_matrix **e = calloc((size_t)X, sizeof *e);
    float *tmp = malloc((size_t)cols * sizeof *tmp);
    for (int64_t x = 0; x < X; x++) {
        e[x] = gsl_matrix_alloc((size_t)rows, (size_t)cols);
        for (int64_t r = 0; r < rows; r++) {
            pl_kernels_ref.dequantize_row[t.type](
                tmp, (const uint8_t *)t.data + (x * rows + r) * (int64_t)row_bytes, cols);
            for (int64_t c = 0; c < cols; c++) gsl_matrix_set(e[x], (size_t)r, (size_t)c, tmp[c]);
        }
    }
    free(tmp);
    return e;
}

static gsl_vector *load_vector(const pl_gguf *g, const char *name, int64_t n)
{
    gsl_matrix *m = load_matrix(g, name, n, 1);
    if (!m) return NULL;
    gsl_vector *v = gsl_vector_alloc((size_t)n);
    gsl_matrix_get_row(v, m, 0);
    gsl_matrix_free(m);
    return v;
}

/* "<arch>.<the table's key for hp>", or the table's default (NAN: def). */
static double meta(const pl_gguf *g, const char *arch, int hp, double def)
{
    const pl_arch_key *k = pl_arch_key_of_arch(pl_arch_find(arch, strlen(arch)), hp);
    if (!k) return def; /* a key this architecture does not have */
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, k->suffix);
    uint32_t u;
    float f;
    if (pl_gguf_get_u32(g, key, &u, NULL) == PL_OK) return u;
    if (pl_gguf_get_f32(g, key, &f, NULL) == PL_OK) return f;
    return isnan(k->def) ? def : k->def;
}

static int rope_freqs(ref_model *m, const pl_gguf *g, const char *an);

/* A fused matrix's row blocks as the roles they are (q | k | v, or gate | up), copied. */
static void split(ref_layer *R, int how, int64_t D)
{
    gsl_matrix *f = R->m[how == PL_SPLIT_QKV ? PL_L_WQ : PL_L_GATE];
    const int roles_qkv[3] = {PL_L_WQ, PL_L_WK, PL_L_WV}, roles_ffn[2] = {PL_L_GATE, PL_L_UP};
    const int64_t rows_qkv[3] = {R->H * D, R->Hkv * D, R->Hkv * D}, rows_ffn[2] = {R->F, R->F};
    const int n = how == PL_SPLIT_QKV ? 3 : 2;
    size_t r0 = 0;
    for (int i = 0; i < n; i++) {
        const size_t rows = (size_t)(how == PL_SPLIT_QKV ? rows_qkv[i] : rows_ffn[i]);
        gsl_matrix_const_view v = gsl_matrix_const_submatrix(f, r0, 0, rows, f->size2);
        gsl_matrix *part = gsl_matrix_alloc(rows, f->size2);
        gsl_matrix_memcpy(part, &v.matrix);
        R->m[how == PL_SPLIT_QKV ? roles_qkv[i] : roles_ffn[i]] = part;
        r0 += rows;
    }
    gsl_matrix_free(f);
}

int ref_model_load(ref_model **out, const pl_gguf *g, char *msg, size_t len)
{
    *out = NULL;
    pl_str a;
    if (pl_gguf_get_string(g, "general.architecture", &a, NULL))
        return fail(msg, len, "missing", "general.architecture");
    const pl_arch *arch = pl_arch_find(a.ptr, a.len);
    if (!arch) return fail(msg, len, "no such architecture in the table", "general.architecture");
    const char *an = arch->name;
    ref_model *m = calloc(1, sizeof *m);
    m->arch = arch;
    m->neox = arch->recipe.rope_style == PL_ROPE_NEOX;
    m->E = (int64_t)meta(g, an, PL_HP_EMBEDDING_LENGTH, 0);
    m->L = (int64_t)meta(g, an, PL_HP_BLOCK_COUNT, 0);
    int64_t H = (int64_t)meta(g, an, PL_HP_HEAD_COUNT, 0);
    int64_t Hkv = (int64_t)meta(g, an, PL_HP_HEAD_COUNT_KV, (double)H);
    int64_t F = (int64_t)meta(g, an, PL_HP_FEED_FORWARD_LENGTH, 0);
    m->D = (int64_t)meta(g, an, PL_HP_KEY_LENGTH, H ? (double)(m->E / H) : 0);
    m->n_rot = (int64_t)meta(g, an, PL_HP_ROPE_DIMS, (double)m->D);
    m->eps = meta(g, an, PL_HP_RMS_EPS, NAN);
    m->base = meta(g, an, PL_HP_ROPE_FREQ_BASE, NAN);
    if (!(m->eps > 0)) {
        ref_model_free(m);
        return fail(msg, len, "missing key", "attention.layer_norm_rms_epsilon");
    }
    /* the recipe's numbers, from their definitions (Gemma: the 27B's 1/sqrt(n_embd/n_head)) */
    const pl_arch_quirk_model qm = {.n_layer = m->L, .n_head = H, .n_head_kv = Hkv};
    const int big = pl_arch_quirk_of(arch, PL_QUIRK_ATTN_SCALE_EMBD, &qm) != NULL;
    m->scale = 1.0 / sqrt(big ? (double)(m->E / H) : (double)m->D);
    m->attn_cap = meta(g, an, PL_HP_ATTN_SOFTCAP, 0);
    m->final_cap = meta(g, an, PL_HP_FINAL_SOFTCAP, 0);
    m->emb_scale = arch->recipe.emb_sqrt ? sqrt((double)m->E) : 0;
    /* Granite's multipliers (transformers' GraniteModel): keys of the architecture, where it has
     * them */
    m->emb_scale = meta(g, an, PL_HP_EMBEDDING_SCALE, m->emb_scale);
    m->scale = meta(g, an, PL_HP_ATTENTION_SCALE, m->scale);
    m->res_scale = meta(g, an, PL_HP_RESIDUAL_SCALE, 1.0);
    m->logit_div = meta(g, an, PL_HP_LOGIT_DIVISOR, 1.0);
    m->logit_scale = meta(g, an, PL_HP_LOGIT_SCALE, 0);
    m->window = arch->recipe.swa_period ? (int64_t)meta(g, an, PL_HP_SLIDING_WINDOW, 0) : 0;
    if (rope_freqs(m, g, an)) {
        ref_model_free(m);
        return fail(msg, len, "bad RoPE scaling", "rope_freqs.weight");
    }
    int64_t ti = pl_gguf_find_tensor(g, "token_embd.weight");
    pl_tensor_info t;
    if (ti < 0 || pl_gguf_tensor(g, (uint64_t)ti, &t, NULL)) {
        ref_model_free(m);
        return fail(msg, len, "missing tensor", "token_embd.weight");
    }
    m->V = t.ne[1];
    m->embd = load_matrix(g, "token_embd.weight", m->E, m->V);
    m->output = load_matrix(g, "output.weight", m->E, m->V);
    if (!m->output) { /* tied embeddings */
        m->output = gsl_matrix_alloc((size_t)m->V, (size_t)m->E);
        gsl_matrix_memcpy(m->output, m->embd);
    }
    m->out_norm = load_vector(g, "output_norm.weight", m->E);
    if (!m->embd || !m->out_norm) {
        ref_model_free(m);
        return fail(msg, len, "bad tensor", "token_embd/output_norm");
    }
    m->X = (int64_t)meta(g, an, PL_HP_EXPERT_COUNT, 0);
    m->U = (int64_t)meta(g, an, PL_HP_EXPERT_USED_COUNT, 0);
    m->FX = (int64_t)meta(g, an, PL_HP_EXPERT_FF_LENGTH, (double)F);
    m->FS = (int64_t)meta(g, an, PL_HP_EXPERT_SHARED_FF_LENGTH, (double)F);
    m->layers = calloc((size_t)m->L, sizeof *m->layers);
    const pl_arch_dims d = {.E = m->E,
                            .F = F,
                            .D = m->D,
                            .H = H,
                            .Hkv = Hkv,
                            .n_rot = m->n_rot,
                            .FX = m->FX,
                            .FS = m->FS,
                            .X = m->X};
    for (int64_t l = 0; l < m->L; l++) {
        ref_layer *R = &m->layers[l];
        R->H = H;
        R->Hkv = Hkv;
        R->F = F;
        for (size_t i = 0; i < arch->n_layer; i++) {
            const pl_arch_tensor *row = &arch->layer[i];
            char n[96];
            snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, row->gguf);
            const int64_t ne0 = pl_arch_dim(&d, row->ne0), ne1 = pl_arch_dim(&d, row->ne1);
            int required;
            if (!pl_arch_row_applies(row, m->X, &required)) continue;
            if (row->ne2 != PL_DIM_1)
                R->x[row->role] = load_experts(g, n, ne0, ne1, m->X);
            else if (row->ne1 == PL_DIM_1)
                R->v[row->role] = load_vector(g, n, ne0);
            else
                R->m[row->role] = load_matrix(g, n, ne0, ne1);
            if (required && !R->v[row->role] && !R->m[row->role] && !R->x[row->role]) {
                ref_model_free(m);
                return fail(msg, len, "missing or misshapen tensor", n);
            }
            if (row->split != PL_SPLIT_NONE && R->m[row->role]) split(R, row->split, m->D);
        }
        uint8_t has[PL_L_COUNT];
        for (int r = 0; r < PL_L_COUNT; r++) has[r] = R->m[r] || R->v[r] || R->x[r];
        R->n_steps = pl_arch_compile_layer(
            arch, has, pl_arch_layer_has_rope(arch, l, m->window > 0), R->steps);
    }
    *out = m;
    return 0;
}

void ref_model_free(ref_model *m)
{
    if (!m) return;
    for (int64_t l = 0; m->layers && l < m->L; l++)
        for (int r = 0; r < PL_L_COUNT; r++) {
            if (m->layers[l].m[r]) gsl_matrix_free(m->layers[l].m[r]);
            if (m->layers[l].v[r]) gsl_vector_free(m->layers[l].v[r]);
            for (int64_t e = 0; m->layers[l].x[r] && e < m->X; e++)
                gsl_matrix_free(m->layers[l].x[r][e]);
            free(m->layers[l].x[r]);
        }
    free(m->layers);
    free(m->inv_freq);
    free(m->inv_freq_local);
    free(m->inv_freq_long);
    if (m->embd) gsl_matrix_free(m->embd);
    if (m->output) gsl_matrix_free(m->output);
    if (m->out_norm) gsl_vector_free(m->out_norm);
    free(m);
}

int64_t ref_model_n_vocab(const ref_model *m)
{
    return m->V;
}

/* y = x / sqrt(mean(x^2) + eps) * w over n doubles. */
static void rmsnorm(double *y, const double *x, const gsl_vector *w, int64_t n, double eps)
{
    gsl_vector_const_view xv = gsl_vector_const_view_array(x, (size_t)n);
    double ss = gsl_blas_dnrm2(&xv.vector);
    double scale = 1.0 / sqrt(ss * ss / (double)n + eps);
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale * gsl_vector_get(w, (size_t)i);
}

/* y = (x - mean) / sqrt(mean((x - mean)^2) + eps) * w over n doubles (LayerNorm, weight only:
 * transformers' Cohere2LayerNorm). */
static void layernorm(double *y, const double *x, const gsl_vector *w, int64_t n, double eps)
{
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; i++) mean += x[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    const double scale = 1.0 / sqrt(var / (double)n + eps);
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - mean) * scale * gsl_vector_get(w, (size_t)i);
}

/* The model's norm (enum pl_norm_kind). */
static void norm(double *y, const double *x, const gsl_vector *w, int64_t n, double eps, int kind)
{
    if (kind == PL_NORM_LAYER)
        layernorm(y, x, w, n, eps);
    else
        rmsnorm(y, x, w, n, eps);
}

/* y (rows of W) = W x (+ b). */
static void gemv(double *y, const gsl_matrix *W, const double *x, const gsl_vector *b)
{
    gsl_vector_const_view xv = gsl_vector_const_view_array(x, W->size2);
    gsl_vector_view yv = gsl_vector_view_array(y, W->size1);
    gsl_blas_dgemv(CblasNoTrans, 1.0, W, &xv.vector, 0.0, &yv.vector);
    if (b) gsl_vector_add(&yv.vector, b);
}

static void rope(double *x, int64_t heads, const ref_model *m, int64_t pos, const double *inv_freq,
                 double mscale)
{
    int64_t half = m->n_rot / 2;
    for (int64_t h = 0; h < heads; h++) {
        double *xh = x + h * m->D;
        for (int64_t i = 0; i < half; i++) {
            double theta = (double)pos * inv_freq[i];
            double c = cos(theta) * mscale, s = sin(theta) * mscale;
            int64_t a = m->neox ? i : 2 * i, b = m->neox ? i + half : 2 * i + 1;
            double xa = xh[a], xb = xh[b];
            xh[a] = xa * c - xb * s;
            xh[b] = xa * s + xb * c;
        }
    }
}

/* The frequencies as transformers defines each rope_scaling (modeling_rope_utils), from the
 * file's keys: default theta_i = base^(-2i/d); llama3: divided by rope_freqs.weight[i];
 * linear: times 1/factor; yarn: between the interpolated (1/factor) and the original frequency
 * by a linear ramp over the correction range [floor(d ln(L/(2 pi b_fast)) / (2 ln base)),
 * ceil(same with b_slow)], and cos/sin times 0.1 ln(factor) + 1. Returns 0 or -1. */
static int rope_freqs(ref_model *m, const pl_gguf *g, const char *an)
{
    const int64_t half = m->n_rot / 2, d = m->n_rot;
    m->inv_freq = calloc((size_t)half, sizeof *m->inv_freq);
    if (!m->inv_freq) return -1;
    gsl_vector *ff = NULL, *fl = NULL;
    if (pl_gguf_find_tensor(g, "rope_freqs.weight") >= 0 &&
        !(ff = load_vector(g, "rope_freqs.weight", half)))
        return -1;
    /* longrope: the short factors divide as rope_freqs does; the long ones in their own table */
    if (pl_gguf_find_tensor(g, "rope_factors_short.weight") >= 0 &&
        (ff || !(ff = load_vector(g, "rope_factors_short.weight", half)) ||
         !(fl = load_vector(g, "rope_factors_long.weight", half)) ||
         !(m->inv_freq_long = calloc((size_t)half, sizeof *m->inv_freq_long))))
        return -1;
    char key[128];
    pl_str type = {"linear", 6}; /* llama.cpp's reading of an absent type */
    snprintf(key, sizeof key, "%s.rope.scaling.type", an);
    pl_gguf_get_string(g, key, &type, NULL);
    const int yarn = type.len == 4 && memcmp(type.ptr, "yarn", 4) == 0;
    const int none = type.len == 4 && memcmp(type.ptr, "none", 4) == 0;
    double factor = meta(g, an, PL_HP_ROPE_SCALING_FACTOR, 0);
    if (factor == 0) factor = meta(g, an, PL_HP_ROPE_SCALE_LINEAR, 1);
    if (none || factor == 0) factor = 1;
    const double orig = meta(g, an, PL_HP_ROPE_ORIG_CTX, meta(g, an, PL_HP_CONTEXT_LENGTH, 0));
    m->orig_ctx = (int64_t)orig;
    const double b_fast = meta(g, an, PL_HP_YARN_BETA_FAST, NAN);
    const double b_slow = meta(g, an, PL_HP_YARN_BETA_SLOW, NAN);
    double lo = 0, hi = 0;
    /* transformers' truncate (plumb's rope.scaling.yarn_truncate, a bool; absent: true) */
    int truncate = 1;
    snprintf(key, sizeof key, "%s.rope.scaling.yarn_truncate", an);
    const int64_t ki = pl_gguf_find_key(g, key);
    uint8_t tb = 1;
    if (ki >= 0 && pl_gguf_kv_type(g, (uint64_t)ki) == PL_GGUF_BOOL &&
        pl_gguf_kv_scalar(g, (uint64_t)ki, PL_GGUF_BOOL, &tb, NULL) == PL_OK)
        truncate = tb != 0;
    if (yarn) {
        lo = d * log(orig / (b_fast * 2 * M_PI)) / (2 * log(m->base));
        hi = d * log(orig / (b_slow * 2 * M_PI)) / (2 * log(m->base));
        if (truncate) lo = floor(lo), hi = ceil(hi);
        if (lo < 0) lo = 0;
        if (hi > d - 1) hi = (double)(d - 1);
        if (hi == lo) hi += 0.001;
    }
    for (int64_t i = 0; i < half; i++) {
        double f = pow(m->base, -2.0 * (double)i / (double)d);
        if (fl) m->inv_freq_long[i] = f / gsl_vector_get(fl, (size_t)i) / factor;
        if (ff) f /= gsl_vector_get(ff, (size_t)i);
        const double interp = f / factor;
        if (yarn) {
            double ramp = ((double)i - lo) / (hi - lo);
            ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
            const double extrap = 1 - ramp; /* weight of the original frequency */
            m->inv_freq[i] = interp * (1 - extrap) + f * extrap;
        } else {
            m->inv_freq[i] = interp;
        }
    }
    m->mscale = meta(g, an, PL_HP_ROPE_ATTN_FACTOR, NAN) * (yarn ? 0.1 * log(factor) + 1 : 1);
    /* local layers: the recipe's own base, unscaled (Gemma 3), else the same RoPE */
    m->inv_freq_local = calloc((size_t)half, sizeof *m->inv_freq_local);
    if (!m->inv_freq_local) return -1;
    const double lb = m->arch->recipe.swa_rope_base;
    for (int64_t i = 0; i < half; i++)
        m->inv_freq_local[i] = lb > 0 ? pow(lb, -2.0 * (double)i / (double)d) : m->inv_freq[i];
    m->mscale_local = lb > 0 ? 1.0 : m->mscale;
    if (ff) gsl_vector_free(ff);
    if (fl) gsl_vector_free(fl);
    return 0;
}

/* x += branch, the branch normalised by its post norm first when the layer has one (Gemma);
 * scratch: E doubles. */
static void post_add(double *x, const double *branch, double *scratch, const gsl_vector *post,
                     int64_t E, double eps, int kind, double scale)
{
    if (post) norm(scratch, branch, post, E, eps, kind);
    for (int64_t i = 0; i < E; i++) x[i] += (post ? scratch[i] : branch[i]) * scale;
}

/* silu(g) * u into g, n elements. */
static void silu_mul(double *g, const double *u, int64_t n)
{
    for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
}

static void add_bias(double *y, const gsl_vector *b, int64_t n);

/* One token's mixture-of-experts FFN of xn into out (E), from the definitions (transformers'
 * MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock, Qwen3MoeSparseMoeBlock): p = softmax of the
 * router logits, the U largest p (ties: the lower expert), renormalised where the recipe says;
 * out = sum of p_e down_e(silu(gate_e xn) up_e xn), plus the shared expert times sigmoid(its
 * gate . xn). g and u hold max(FX, FS) each. Lowers *margin to this routing's margin. */
static void moe_ffn(const ref_model *m, const ref_layer *R, const double *xn, double *out,
                    double *g, double *u, double *margin)
{
    const int64_t X = m->X, U = m->U, E = m->E;
    double *p = calloc((size_t)X, sizeof *p), *y = calloc((size_t)E, sizeof *y);
    int *taken = calloc((size_t)X, sizeof *taken);
    gemv(p, R->m[PL_L_GATE_INP], xn, NULL);
    add_bias(p, R->v[PL_L_GATE_INP_B], X); /* gpt-oss's router bias */
    double *logit = calloc((size_t)X, sizeof *logit);
    memcpy(logit, p, (size_t)X * sizeof *p);
    double mx = -INFINITY, sum = 0;
    for (int64_t e = 0; e < X; e++) mx = p[e] > mx ? p[e] : mx;
    for (int64_t e = 0; e < X; e++) sum += p[e] = exp(p[e] - mx);
    for (int64_t e = 0; e < X; e++) p[e] /= sum;
    int64_t ids[PL_MOE_MAX_USED];
    double w[PL_MOE_MAX_USED], wsum = 0;
    for (int64_t k = 0; k < U; k++) {
        int64_t best = -1;
        for (int64_t e = 0; e < X; e++)
            if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
        taken[best] = 1;
        ids[k] = best;
        wsum += w[k] = p[best];
    }
    double next = 0; /* the best unchosen p */
    for (int64_t e = 0; e < X; e++)
        if (!taken[e] && p[e] > next) next = p[e];
    if (U < X && w[U - 1] - next < *margin) *margin = w[U - 1] - next;
    for (int64_t i = 0; i < E; i++) out[i] = 0;
    /* renormalised top-k: Mixtral always, Qwen3-MoE with its released configs'
     * norm_topk_prob = true, Qwen2-MoE's false (its modeling code's default), written here from
     * the definitions, not read from plumb's recipe */
    const int norm = strcmp(m->arch->name, "qwen2moe") != 0;
    /* gpt-oss (transformers' GptOssTopKRouter): softmax over the chosen k logits only */
    const int oss = strcmp(m->arch->name, "gpt-oss") == 0;
    double lmax = -INFINITY, lsum = 0;
    for (int64_t k = 0; oss && k < U; k++) lmax = logit[ids[k]] > lmax ? logit[ids[k]] : lmax;
    for (int64_t k = 0; oss && k < U; k++) lsum += exp(logit[ids[k]] - lmax);
    for (int64_t k = 0; k < U; k++) {
        const double wk = oss ? exp(logit[ids[k]] - lmax) / lsum : norm ? w[k] / wsum : w[k];
        gemv(g, R->x[PL_L_GATE_EXPS][ids[k]], xn, NULL);
        gemv(u, R->x[PL_L_UP_EXPS][ids[k]], xn, NULL);
        if (oss) { /* the experts' biases, then the clamped SwiGLU (GptOssExperts) */
            for (int64_t i = 0; i < m->FX; i++) {
                g[i] += gsl_matrix_get(R->m[PL_L_GATE_EXPS_B], (size_t)ids[k], (size_t)i);
                u[i] += gsl_matrix_get(R->m[PL_L_UP_EXPS_B], (size_t)ids[k], (size_t)i);
                const double lim = 7.0, gi = g[i] < lim ? g[i] : lim;
                const double ui = u[i] < -lim ? -lim : u[i] > lim ? lim : u[i];
                g[i] = gi / (1.0 + exp(-1.702 * gi)) * (ui + 1.0);
            }
        } else {
            silu_mul(g, u, m->FX);
        }
        gemv(y, R->x[PL_L_DOWN_EXPS][ids[k]], g, NULL);
        for (int64_t i = 0; oss && i < E; i++)
            y[i] += gsl_matrix_get(R->m[PL_L_DOWN_EXPS_B], (size_t)ids[k], (size_t)i);
        for (int64_t i = 0; i < E; i++) out[i] += wk * y[i];
    }
    if (R->m[PL_L_GATE_SHEXP]) {
        double z = 0;
        for (int64_t i = 0; i < E; i++)
            z += gsl_vector_get(R->v[PL_L_GATE_INP_SHEXP], (size_t)i) * xn[i];
        const double sg = 1.0 / (1.0 + exp(-z));
        gemv(g, R->m[PL_L_GATE_SHEXP], xn, NULL);
        gemv(u, R->m[PL_L_UP_SHEXP], xn, NULL);
        silu_mul(g, u, m->FS);
        gemv(y, R->m[PL_L_DOWN_SHEXP], g, NULL);
        for (int64_t i = 0; i < E; i++) out[i] += sg * y[i];
    }
    free(p);
    free(logit);
    free(y);
    free(taken);
}

static void add_bias(double *y, const gsl_vector *b, int64_t n)
{
    for (int64_t i = 0; b && i < n; i++) y[i] += gsl_vector_get(b, (size_t)i);
}

/* Per-head RMSNorm of heads rows of D in place (w NULL: none); tmp holds D. */
static void head_norm(double *x, const gsl_vector *w, int64_t heads, int64_t D, double *tmp,
                      double eps)
{
    for (int64_t h = 0; w && h < heads; h++) {
        rmsnorm(tmp, x + h * D, w, D, eps);
        memcpy(x + h * D, tmp, (size_t)D * sizeof *tmp);
    }
}

int ref_model_forward(const ref_model *m, const int32_t *tokens, int64_t n, const ref_window *w,
                      double *logits, double *margin)
{
    double least = INFINITY;
    int64_t E = m->E, D = m->D, L = m->L, V = m->V;
    int64_t Hmax = m->layers[0].H, Hkvmax = m->layers[0].Hkv, F = m->layers[0].F;
    double *x = calloc((size_t)E, sizeof *x), *xn = calloc((size_t)E, sizeof *xn);
    double *q = calloc((size_t)(Hmax * D), sizeof *q),
           *att = calloc((size_t)(Hmax * D), sizeof *att);
    double *tmp = calloc((size_t)(E > D ? E : D), sizeof *tmp);
    const int64_t FG = F > m->FX ? (F > m->FS ? F : m->FS) : (m->FX > m->FS ? m->FX : m->FS);
    double *g = calloc((size_t)FG, sizeof *g), *u = calloc((size_t)FG, sizeof *u);
    double *scores = calloc((size_t)n, sizeof *scores);
    /* K and V of every position, layer-major: (L, n, Hkv, D). */
    double *K = calloc((size_t)(L * n * Hkvmax * D), sizeof *K);
    double *Vc = calloc((size_t)(L * n * Hkvmax * D), sizeof *Vc);
    int64_t recent = w && w->window > 0 ? w->window - w->sinks : 0;
    for (int64_t p = 0; p < n; p++) {
        for (int64_t i = 0; i < E; i++)
            x[i] = gsl_matrix_get(m->embd, (size_t)tokens[p], (size_t)i) *
                   (m->emb_scale ? m->emb_scale : 1.0);
        for (int64_t l = 0; l < L; l++) {
            const ref_layer *R = &m->layers[l];
            int64_t H = R->H, Hkv = R->Hkv, group = H / Hkv;
            const int local = pl_arch_layer_is_local(m->arch, l);
            double *kp = K + ((l * n + p) * Hkvmax) * D, *vp = Vc + ((l * n + p) * Hkvmax) * D;
            for (size_t i = 0; i < R->n_steps; i++) {
                const pl_step *st = &R->steps[i];
                switch ((enum pl_step_kind)st->kind) {
                case PL_STEP_NORM:
                    if (st->role == PL_STEP_NO_ROLE) /* no pre-norm (OLMo 2) */
                        memcpy(xn, x, (size_t)E * sizeof *xn);
                    else
                        norm(xn, x, R->v[st->role], E, m->eps, st->arg);
                    break;
                case PL_STEP_QKV:
                    gemv(q, R->m[PL_L_WQ], xn, NULL);
                    gemv(kp, R->m[PL_L_WK], xn, NULL);
                    gemv(vp, R->m[PL_L_WV], xn, NULL);
                    break;
                case PL_STEP_QKV_BIAS:
                    add_bias(q, R->v[PL_L_BQ], H * D);
                    add_bias(kp, R->v[PL_L_BK], Hkv * D);
                    add_bias(vp, R->v[PL_L_BV], Hkv * D);
                    break;
                case PL_STEP_HEAD_NORM:
                    head_norm(q, R->v[PL_L_Q_NORM], H, D, tmp, m->eps);
                    head_norm(kp, R->v[PL_L_K_NORM], Hkv, D, tmp, m->eps);
                    break;
                case PL_STEP_QK_NORM: /* the whole projections, one row each (att: free) */
                    head_norm(q, R->v[PL_L_Q_NORM], 1, H * D, att, m->eps);
                    head_norm(kp, R->v[PL_L_K_NORM], 1, Hkv * D, att, m->eps);
                    break;
                case PL_STEP_ROPE: {
                    /* local layers with their own base (Gemma 3), else the global table:
                     * longrope's long factors where the session's context exceeds the
                     * original */
                    const int own = local && m->arch->recipe.swa_rope_base > 0;
                    const int lng = m->inv_freq_long && w && w->n_ctx > m->orig_ctx;
                    const double *inv = own   ? m->inv_freq_local
                                        : lng ? m->inv_freq_long
                                              : m->inv_freq;
                    rope(q, H, m, p, inv, own ? m->mscale_local : m->mscale);
                    rope(kp, Hkv, m, p, inv, own ? m->mscale_local : m->mscale);
                    break;
                }
                case PL_STEP_KV_STORE:
                    break; /* kp and vp are this position's cache rows already */
                case PL_STEP_ATTENTION:
                    for (int64_t h = 0; h < H; h++) {
                        int64_t hk = h / group;
                        double mx = -INFINITY;
                        for (int64_t j = 0; j <= p; j++) {
                            int visible = (recent == 0 || j < w->sinks || p - j < recent) &&
                                          (!local || !m->window || p - j < m->window);
                            scores[j] = -INFINITY;
                            if (!visible) continue;
                            const double *kj = K + ((l * n + j) * Hkvmax + hk) * D;
                            gsl_vector_const_view a =
                                gsl_vector_const_view_array(q + h * D, (size_t)D);
                            gsl_vector_const_view b = gsl_vector_const_view_array(kj, (size_t)D);
                            double sc;
                            gsl_blas_ddot(&a.vector, &b.vector, &sc);
                            scores[j] = sc * m->scale;
                            if (m->attn_cap)
                                scores[j] = m->attn_cap * tanh(scores[j] / m->attn_cap);
                            if (scores[j] > mx) mx = scores[j];
                        }
                        /* gpt-oss: the head's sink logit joins the max and the denominator
                         * (transformers' eager_attention_forward), with no value row */
                        const gsl_vector *sk = R->v[PL_L_SINKS];
                        const double sink = sk ? gsl_vector_get(sk, (size_t)h) : -INFINITY;
                        if (sk && mx > -INFINITY && sink > mx) mx = sink;
                        double sum = sk && mx > -INFINITY ? exp(sink - mx) : 0.0;
                        for (int64_t j = 0; j <= p; j++) {
                            scores[j] = scores[j] == -INFINITY ? 0.0 : exp(scores[j] - mx);
                            sum += scores[j];
                        }
                        for (int64_t d = 0; d < D; d++) {
                            double acc = 0.0;
                            for (int64_t j = 0; j <= p; j++)
                                acc += scores[j] * Vc[((l * n + j) * Hkvmax + hk) * D + d];
                            att[h * D + d] = acc / sum;
                        }
                    }
                    break;
                case PL_STEP_ATTN_OUT:
                    gemv(tmp, R->m[st->role], att, NULL);
                    add_bias(tmp, R->v[PL_L_BO], E); /* gpt-oss's output bias */
                    break;
                case PL_STEP_RESIDUAL:
                    post_add(x, tmp, xn, st->role < PL_L_COUNT ? R->v[st->role] : NULL, E, m->eps,
                             m->arch->recipe.norm, m->res_scale);
                    break;
                case PL_STEP_FFN_GATED:
                    gemv(g, R->m[PL_L_GATE], xn, NULL);
                    gemv(u, R->m[PL_L_UP], xn, NULL);
                    for (int64_t i2 = 0; i2 < R->F; i2++)
                        g[i2] = (st->arg == PL_ACT_GELU_TANH
                                     ? 0.5 * g[i2] *
                                           (1 + tanh(sqrt(2 / M_PI) *
                                                     (g[i2] + 0.044715 * g[i2] * g[i2] * g[i2])))
                                     : g[i2] / (1.0 + exp(-g[i2]))) *
                                u[i2];
                    gemv(tmp, R->m[PL_L_DOWN], g, NULL);
                    break;
                case PL_STEP_FFN_MOE:
                    moe_ffn(m, R, xn, tmp, g, u, &least);
                    break;
                case PL_STEP_COUNT:
                    break;
                }
            }
        }
        norm(xn, x, m->out_norm, E, m->eps, m->arch->recipe.norm);
        gemv(logits + p * V, m->output, xn, NULL);
        for (int64_t i = 0; m->final_cap && i < V; i++)
            logits[p * V + i] = m->final_cap * tanh(logits[p * V + i] / m->final_cap);
        for (int64_t i = 0; i < V; i++) logits[p * V + i] /= m->logit_div;
        for (int64_t i = 0; m->logit_scale && i < V; i++) logits[p * V + i] *= m->logit_scale;
    }
    free(x);
    free(xn);
    free(q);
    free(att);
    free(tmp);
    free(g);
    free(u);
    free(scores);
    free(K);
    free(Vc);
    if (margin) *margin = least;
    return 0;
}
