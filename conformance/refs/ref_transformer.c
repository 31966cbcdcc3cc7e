/* ref_transformer.c — the end-to-end oracle: llama/qwen2/qwen3 in double with GSL BLAS.
 * Not fast and not shared with the engine: it binds tensors by name on its own, so a
 * binding bug in engine/runtime/model.c shows up as a mismatch instead of hiding twice. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>

#include "kernels.h"
#include "ref_transformer.h"

typedef struct ref_layer {
    int64_t H, Hkv, F;
    gsl_vector *attn_norm, *ffn_norm, *bq, *bk, *bv, *q_norm, *k_norm;
    gsl_matrix *wq, *wk, *wv, *wo, *w_gate, *w_up, *w_down; /* (out, in) */
} ref_layer;

struct ref_model {
    int neox, qk_norm;
    int64_t E, L, D, n_rot, V;
    double eps, base;
    gsl_matrix *embd, *output; /* (V, E) */
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

static gsl_vector *load_vector(const pl_gguf *g, const char *name, int64_t n)
{
    gsl_matrix *m = load_matrix(g, name, n, 1);
    if (!m) return NULL;
    gsl_vector *v = gsl_vector_alloc((size_t)n);
    gsl_matrix_get_row(v, m, 0);
    gsl_matrix_free(m);
    return v;
}

static int64_t meta_int(const pl_gguf *g, const char *arch, const char *suffix, int64_t def)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v;
    if (pl_gguf_get_u32(g, key, &v, NULL) == PL_OK) return v;
    return def;
}

static double meta_float(const pl_gguf *g, const char *arch, const char *suffix, double def)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    float v;
    if (pl_gguf_get_f32(g, key, &v, NULL) == PL_OK) return v;
    return def;
}

int ref_model_load(ref_model **out, const pl_gguf *g, char *msg, size_t len)
{
    *out = NULL;
    pl_str a;
    if (pl_gguf_get_string(g, "general.architecture", &a, NULL))
        return fail(msg, len, "missing", "general.architecture");
    char arch[16] = {0};
    memcpy(arch, a.ptr, a.len < 15 ? a.len : 15);
    ref_model *m = calloc(1, sizeof *m);
    m->neox = strcmp(arch, "llama") != 0;
    m->qk_norm = strcmp(arch, "qwen3") == 0;
    m->E = meta_int(g, arch, "embedding_length", 0);
    m->L = meta_int(g, arch, "block_count", 0);
    int64_t H = meta_int(g, arch, "attention.head_count", 0);
    int64_t Hkv = meta_int(g, arch, "attention.head_count_kv", H);
    int64_t F = meta_int(g, arch, "feed_forward_length", 0);
    m->D = meta_int(g, arch, "attention.key_length", H ? m->E / H : 0);
    m->n_rot = meta_int(g, arch, "rope.dimension_count", m->D);
    m->eps = meta_float(g, arch, "attention.layer_norm_rms_epsilon", 1e-5);
    m->base = meta_float(g, arch, "rope.freq_base", 10000.0);
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
    m->layers = calloc((size_t)m->L, sizeof *m->layers);
    for (int64_t l = 0; l < m->L; l++) {
        ref_layer *R = &m->layers[l];
        R->H = H;
        R->Hkv = Hkv;
        R->F = F;
        char n[96];
#define MAT(field, suffix, cols, rows)                                                             \
    snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix);                                    \
    if (!(R->field = load_matrix(g, n, cols, rows))) {                                             \
        ref_model_free(m);                                                                         \
        return fail(msg, len, "missing or misshapen tensor", n);                                   \
    }
#define VEC(field, suffix, size, required)                                                         \
    snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix);                                    \
    if (!(R->field = load_vector(g, n, size)) && (required)) {                                     \
        ref_model_free(m);                                                                         \
        return fail(msg, len, "missing or misshapen tensor", n);                                   \
    }
        MAT(wq, "attn_q.weight", m->E, H * m->D)
        MAT(wk, "attn_k.weight", m->E, Hkv * m->D)
        MAT(wv, "attn_v.weight", m->E, Hkv * m->D)
        MAT(wo, "attn_output.weight", H * m->D, m->E)
        MAT(w_gate, "ffn_gate.weight", m->E, F)
        MAT(w_up, "ffn_up.weight", m->E, F)
        MAT(w_down, "ffn_down.weight", F, m->E)
        VEC(attn_norm, "attn_norm.weight", m->E, 1)
        VEC(ffn_norm, "ffn_norm.weight", m->E, 1)
        VEC(bq, "attn_q.bias", H * m->D, 0)
        VEC(bk, "attn_k.bias", Hkv * m->D, 0)
        VEC(bv, "attn_v.bias", Hkv * m->D, 0)
        VEC(q_norm, "attn_q_norm.weight", m->D, m->qk_norm)
        VEC(k_norm, "attn_k_norm.weight", m->D, m->qk_norm)
#undef MAT
#undef VEC
    }
    *out = m;
    return 0;
}

void ref_model_free(ref_model *m)
{
    if (!m) return;
    for (int64_t l = 0; m->layers && l < m->L; l++) {
        ref_layer *R = &m->layers[l];
        gsl_matrix *ms[] = {R->wq, R->wk, R->wv, R->wo, R->w_gate, R->w_up, R->w_down};
        gsl_vector *vs[] = {R->attn_norm, R->ffn_norm, R->bq, R->bk, R->bv, R->q_norm, R->k_norm};
        for (size_t i = 0; i < 7; i++) {
            if (ms[i]) gsl_matrix_free(ms[i]);
            if (vs[i]) gsl_vector_free(vs[i]);
        }
    }
    free(m->layers);
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

/* y (rows of W) = W x (+ b). */
static void gemv(double *y, const gsl_matrix *W, const double *x, const gsl_vector *b)
{
    gsl_vector_const_view xv = gsl_vector_const_view_array(x, W->size2);
    gsl_vector_view yv = gsl_vector_view_array(y, W->size1);
    gsl_blas_dgemv(CblasNoTrans, 1.0, W, &xv.vector, 0.0, &yv.vector);
    if (b) gsl_vector_add(&yv.vector, b);
}

static void rope(double *x, int64_t heads, const ref_model *m, int64_t pos)
{
    int64_t half = m->n_rot / 2;
    for (int64_t h = 0; h < heads; h++) {
        double *xh = x + h * m->D;
        for (int64_t i = 0; i < half; i++) {
            double theta = (double)pos * pow(m->base, -2.0 * (double)i / (double)m->n_rot);
            int64_t a = m->neox ? i : 2 * i, b = m->neox ? i + half : 2 * i + 1;
            double xa = xh[a], xb = xh[b];
            xh[a] = xa * cos(theta) - xb * sin(theta);
            xh[b] = xa * sin(theta) + xb * cos(theta);
        }
    }
}

int ref_model_forward(const ref_model *m, const int32_t *tokens, int64_t n, const ref_window *w,
                      double *logits)
{
    int64_t E = m->E, D = m->D, L = m->L, V = m->V;
    int64_t Hmax = m->layers[0].H, Hkvmax = m->layers[0].Hkv, F = m->layers[0].F;
    double *x = calloc((size_t)E, sizeof *x), *xn = calloc((size_t)E, sizeof *xn);
    double *q = calloc((size_t)(Hmax * D), sizeof *q),
           *att = calloc((size_t)(Hmax * D), sizeof *att);
    double *tmp = calloc((size_t)(E > D ? E : D), sizeof *tmp);
    double *g = calloc((size_t)F, sizeof *g), *u = calloc((size_t)F, sizeof *u);
    double *scores = calloc((size_t)n, sizeof *scores);
    /* K and V of every position, layer-major: (L, n, Hkv, D). */
    double *K = calloc((size_t)(L * n * Hkvmax * D), sizeof *K);
    double *Vc = calloc((size_t)(L * n * Hkvmax * D), sizeof *Vc);
    int64_t recent = w && w->window > 0 ? w->window - w->sinks : 0;
    for (int64_t p = 0; p < n; p++) {
        for (int64_t i = 0; i < E; i++)
            x[i] = gsl_matrix_get(m->embd, (size_t)tokens[p], (size_t)i);
        for (int64_t l = 0; l < L; l++) {
            const ref_layer *R = &m->layers[l];
            int64_t H = R->H, Hkv = R->Hkv, group = H / Hkv;
            double *kp = K + ((l * n + p) * Hkvmax) * D, *vp = Vc + ((l * n + p) * Hkvmax) * D;
            rmsnorm(xn, x, R->attn_norm, E, m->eps);
            gemv(q, R->wq, xn, R->bq);
            gemv(kp, R->wk, xn, R->bk);
            gemv(vp, R->wv, xn, R->bv);
            if (m->qk_norm) {
                for (int64_t h = 0; h < H; h++) {
                    rmsnorm(tmp, q + h * D, R->q_norm, D, m->eps);
                    memcpy(q + h * D, tmp, (size_t)D * sizeof *tmp);
                }
                for (int64_t h = 0; h < Hkv; h++) {
                    rmsnorm(tmp, kp + h * D, R->k_norm, D, m->eps);
                    memcpy(kp + h * D, tmp, (size_t)D * sizeof *tmp);
                }
            }
            rope(q, H, m, p);
            rope(kp, Hkv, m, p);
            for (int64_t h = 0; h < H; h++) {
                int64_t hk = h / group;
                double mx = -INFINITY;
                for (int64_t j = 0; j <= p; j++) {
                    int visible = recent == 0 || j < w->sinks || p - j < recent;
                    scores[j] = -INFINITY;
                    if (!visible) continue;
                    const double *kj = K + ((l * n + j) * Hkvmax + hk) * D;
                    gsl_vector_const_view a = gsl_vector_const_view_array(q + h * D, (size_t)D);
                    gsl_vector_const_view b = gsl_vector_const_view_array(kj, (size_t)D);
                    double s;
                    gsl_blas_ddot(&a.vector, &b.vector, &s);
                    scores[j] = s / sqrt((double)D);
                    if (scores[j] > mx) mx = scores[j];
                }
                double sum = 0.0;
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
            gemv(tmp, R->wo, att, NULL);
            for (int64_t i = 0; i < E; i++) x[i] += tmp[i];
            rmsnorm(xn, x, R->ffn_norm, E, m->eps);
            gemv(g, R->w_gate, xn, NULL);
            gemv(u, R->w_up, xn, NULL);
            for (int64_t i = 0; i < R->F; i++) g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
            gemv(tmp, R->w_down, g, NULL);
            for (int64_t i = 0; i < E; i++) x[i] += tmp[i];
        }
        rmsnorm(xn, x, m->out_norm, E, m->eps);
        gemv(logits + p * V, m->output, xn, NULL);
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
    return 0;
}
