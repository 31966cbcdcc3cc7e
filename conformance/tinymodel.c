/* tinymodel.c — writes small synthetic models with the library's GGUF writer.
 * Weights are Gaussian with 1/sqrt(fan_in) scales so logits stay O(1) and distinct. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "runtime/arch.h"
#include "testutil.h"
#include "tinymodel.h"

tiny_spec tiny_default(const char *arch, uint32_t wtype)
{
    tiny_spec s = {.arch = arch,
                   .E = 256,
                   .L = 2,
                   .H = 4,
                   .Hkv = 2,
                   .D = 64,
                   .F = 512,
                   .V = 320,
                   .ctx = 512,
                   .wtype = wtype,
                   .embd_type = wtype,
                   .seed = 1};
    /* from the architecture's table row, so that a new row gets a model that loads: a window
     * the 64-token tests cross where it has local layers, caps the tiny logits reach where it
     * has an attention soft-cap, one global layer past a period of local ones, experts where
     * every layer has them (and the widths it has keys for) */
    const pl_arch *a = pl_arch_find(arch, strlen(arch));
    if (!a) return s; /* for the refusal tests */
    const pl_arch_recipe *rc = &a->recipe;
    if (rc->swa_period) s.window = 8;
    if (pl_arch_key_of_arch(a, PL_HP_ATTN_SOFTCAP)) {
        s.attn_softcap = 5.0f;
        s.final_softcap = 20.0f; /* logits here reach ~16: bent, not saturated */
    }
    if (rc->swa_period > 2) s.L = rc->swa_period;
    if (rc->nope_period) s.L = rc->nope_period; /* the last layer without RoPE (SmolLM3) */
    /* Granite's multipliers, none of them 1: embeddings x4, branches x0.5, scores / 16 (not
     * 1/sqrt(64) = / 8), logits / 3 */
    if (pl_arch_key_of_arch(a, PL_HP_RESIDUAL_SCALE)) {
        s.mult[0] = 4.0f;
        s.mult[1] = 0.5f;
        s.mult[2] = 0.0625f;
        s.mult[3] = 3.0f;
    }
    /* issue 49: a logit scale that moves the logits (cohere2) */
    if (pl_arch_key_of_arch(a, PL_HP_LOGIT_SCALE)) s.logit_scale = 0.5f;
    /* Phi-4-mini's 3/4 rotary where the head is not rotated whole and every layer is local */
    if (!rc->full_rotary && rc->swa_period == 1) s.n_rot = 48;
    /* GLM-4's half rotary: normal RoPE over part of the head, its branches post-normed */
    if (!rc->full_rotary && rc->rope_style == PL_ROPE_NORMAL) s.n_rot = s.D / 2;
    if (rc->moe == PL_MOE_REQUIRED) {
        s.X = 8;
        s.U = 2;
        s.FX = 256; /* the super-block types' rows */
        s.FS = pl_arch_has_layer_role(a, PL_L_GATE_SHEXP, 0) ? 512 : 0;
    }
    return s;
}

/* Matrix types of the mix, chosen by tensor: mix 1 as Q4_K_M-like files do, mix 2 with the
 * low-bit types of Q3_K_M/Q2_K/IQ4_XS files, every one of them in one model; mix 3 a Q4_K_M
 * file without its fallback types (Q6_K attn_v and ffn_down, Q4_K the rest). */
static uint32_t mix_type(int mix, const char *name)
{
    if (mix == 3)
        return strstr(name, "attn_v") || strstr(name, "ffn_down") ? PL_TYPE_Q6_K : PL_TYPE_Q4_K;
    if (mix == 2) {
        if (strstr(name, "attn_v") || strstr(name, "ffn_down")) return PL_TYPE_Q3_K;
        if (strstr(name, "attn_output")) return PL_TYPE_IQ4_XS;
        if (strstr(name, "attn_k")) return PL_TYPE_IQ4_NL;
        return PL_TYPE_Q2_K;
    }
    if (strstr(name, "attn_v") || strstr(name, "ffn_down")) return PL_TYPE_Q6_K;
    if (strstr(name, "attn_output")) return PL_TYPE_Q5_0;
    if (strstr(name, "attn_k")) return PL_TYPE_Q8_0;
    return PL_TYPE_Q4_K;
}

typedef struct builder {
    pl_gguf_writer *w;
    tu_rng rng;
    const tiny_spec *s;
    void *bufs[256];
    int n_bufs;
    int failed;
} builder;

/* A tensor of `mats` matrices of rows x cols (mats > 1: stacked experts, 3 dims). */
static void add(builder *b, const char *name, int64_t cols, int64_t rows, int64_t mats,
                double scale, double mean, uint32_t type)
{
    if (b->failed) return;
    if (b->s->omit && strcmp(b->s->omit, name) == 0) return;
    if (b->s->misshape && strcmp(b->s->misshape, name) == 0) cols += 32;
    if (type == PL_TYPE_F32 && b->s->f16_norm && strcmp(b->s->f16_norm, name) == 0)
        type = PL_TYPE_F16;
    const int64_t n_rows = rows * mats;
    float *f = malloc((size_t)(cols * n_rows) * sizeof *f);
    for (int64_t i = 0; i < cols * n_rows; i++)
        f[i] = (float)(mean + scale * tu_rng_normal(&b->rng));
    size_t row_bytes;
    pl_type_row_bytes(type, cols, &row_bytes, NULL);
    uint8_t *q = malloc(row_bytes * (size_t)n_rows);
    /* the best set's quantizers: ref's bytes (test_quant proves every set's bit-exact), faster */
    pl_error qe;
    if (pl_quantize_rows(type, q, f, n_rows, cols, &qe) != PL_OK) {
        fprintf(stderr, "tiny_build: %s: %s\n", name, qe.msg);
        b->failed = 1;
    }
    free(f);
    b->bufs[b->n_bufs++] = q;
    int64_t ne[3] = {cols, rows, mats};
    pl_error e;
    if (pl_gguf_writer_add_tensor(b->w, name, type, mats > 1 ? 3 : rows == 1 ? 1 : 2, ne, q, &e)) {
        fprintf(stderr, "tiny_build: %s\n", e.msg);
        b->failed = 1;
    }
}

int tiny_build(const tiny_spec *s, void **out, size_t *size)
{
    builder b = {.s = s};
    tu_rng_init(&b.rng, s->seed);
    pl_error e;
    if (pl_gguf_writer_new(&b.w, 3, &e)) return -1;
    /* the tensors, their shapes and kinds from the architecture table (an architecture plumb
     * does not know gets llama's, for the refusal tests) */
    const pl_arch_shape shape = {.n_embd = s->E,
                                 .n_layer = s->L,
                                 .n_head = s->H,
                                 .n_head_kv = s->Hkv,
                                 .n_ff = s->F,
                                 .n_vocab = s->V,
                                 .head_dim = s->D,
                                 .n_rot = s->n_rot,
                                 .tied = s->tied,
                                 .n_expert = s->X,
                                 .n_expert_used = s->U,
                                 .n_ff_exp = s->FX,
                                 .n_ff_shexp = s->FS};
    /* the keys through the table's one writer: llama's rows for a name plumb does not know,
     * then its name as general.architecture */
    const pl_arch_hparams hp = {.n_ctx = s->ctx,
                                .rms_eps = 1e-6f,
                                .rope_base = strcmp(s->arch, "llama") == 0 ? 10000.0f : 1e6f,
                                .window = s->window,
                                .attn_softcap = s->attn_softcap,
                                .final_softcap = s->final_softcap,
                                .embedding_scale = s->mult[0],
                                .residual_scale = s->mult[1],
                                .attention_scale = s->mult[2],
                                .logit_divisor = s->mult[3],
                                .logit_scale = s->logit_scale};
    pl_arch_tensor_desc *ts = NULL;
    size_t n = 0;
    const char *arch = strstr(pl_arch_list(), s->arch) ? s->arch : "llama";
    if (pl_arch_write_keys(b.w, arch, &shape, &hp, &e) ||
        pl_gguf_writer_set_string(b.w, "general.architecture", s->arch, strlen(s->arch), &e) ||
        pl_arch_tensors(arch, &shape, NULL, 0, &n, &e) || !(ts = calloc(n, sizeof *ts)) ||
        pl_arch_tensors(arch, &shape, ts, n, &n, &e)) {
        fprintf(stderr, "tiny_build: %s\n", e.msg);
        b.failed = 1;
        n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        const pl_arch_tensor_desc *t = &ts[i];
        const int64_t cols = t->ne[0], rows = t->ne[1], mats = t->n_dims == 3 ? t->ne[2] : 1;
        switch (t->kind) {
        case PL_ARCH_T_EMBD: /* unit rows for the table, 1/sqrt(E) for a projection */
            add(&b, t->name, cols, rows, 1,
                t->layer < 0 && strcmp(t->name, "token_embd.weight") == 0
                    ? 1.0
                    : 1.0 / sqrt((double)cols),
                0.0, s->embd_type);
            break;
        case PL_ARCH_T_MATRIX_IN:
        case PL_ARCH_T_MATRIX_OUT:
            add(&b, t->name, cols, rows, mats, 1.0 / sqrt((double)cols), 0.0,
                s->mix ? mix_type(s->mix, t->name) : s->wtype);
            break;
        case PL_ARCH_T_ROUTER: /* logits spread over a few units: distinct choices */
            add(&b, t->name, cols, rows, 1, 3.0 / sqrt((double)cols), 0.0, PL_TYPE_F32);
            break;
        case PL_ARCH_T_NORM:
            add(&b, t->name, cols, 1, 1, 0.1, 1.0, PL_TYPE_F32);
            break;
        case PL_ARCH_T_BIAS: /* a vector, or one row per expert (gpt-oss) */
            add(&b, t->name, cols, rows, 1, 0.1, 0.0, PL_TYPE_F32);
            break;
        case PL_ARCH_T_FACTORS: /* divisors >= 1, as llama3's */
            add(&b, t->name, cols, 1, 1, 0.5, 2.0, PL_TYPE_F32);
            break;
        }
    }
    free(ts);
    if (s->edit) s->edit(b.w, s);
    int rc = b.failed ? -1 : (pl_gguf_writer_write_memory(b.w, out, size, &e) ? -1 : 0);
    for (int i = 0; i < b.n_bufs; i++) free(b.bufs[i]);
    pl_gguf_writer_free(b.w);
    return rc;
}

/* tiny_rope's tensors (static: the writer holds the pointers until tiny_build writes the file) */
static float rope_freqs_data[64], rope_long_data[64], rope_short_data[64];

void tiny_rope_edit(pl_gguf_writer *w, const tiny_spec *s)
{
    const tiny_rope *v = s->edit_user;
    char key[96];
    pl_error e;
#define KEY(suffix) (snprintf(key, sizeof key, "%s." suffix, s->arch), key)
    if (v->type)
        pl_gguf_writer_set_string(w, KEY("rope.scaling.type"), v->type, strlen(v->type), &e);
    if (v->factor) pl_gguf_writer_set_f32(w, KEY("rope.scaling.factor"), v->factor, &e);
    if (v->scale_linear) pl_gguf_writer_set_f32(w, KEY("rope.scale_linear"), v->scale_linear, &e);
    if (v->orig_ctx)
        pl_gguf_writer_set_u32(w, KEY("rope.scaling.original_context_length"), v->orig_ctx, &e);
    if (v->attn_factor)
        pl_gguf_writer_set_f32(w, KEY("rope.scaling.attn_factor"), v->attn_factor, &e);
    if (v->untruncated) {
        const uint8_t no = 0;
        pl_gguf_writer_set(w, KEY("rope.scaling.yarn_truncate"), PL_GGUF_BOOL, &no, &e);
    }
#undef KEY
    if (v->freqs == 1) {
        const int64_t half = s->D / 2;
        for (int64_t i = 0; i < half; i++) {
            const double freq = pow(10000.0, -2.0 * (double)i / (double)s->D);
            const double wavelen = 2 * M_PI / freq, lo = 16.0 / 1.0, hi = 16.0 / 4.0;
            double f = 1;
            if (wavelen > lo)
                f = 8;
            else if (wavelen >= hi) {
                const double smooth = (16.0 / wavelen - 1) / (4 - 1);
                f = 1 / ((1 - smooth) / 8 + smooth);
            }
            rope_freqs_data[i] = (float)f;
        }
        const int64_t ne[1] = {half};
        pl_gguf_writer_add_tensor(w, "rope_freqs.weight", PL_TYPE_F32, 1, ne, rope_freqs_data, &e);
    }
    if (v->freqs == 2) { /* Phi-3.5's shape: short divisors near 1, long ones growing to ~30 */
        const int64_t half = (s->n_rot ? s->n_rot : s->D) / 2;
        for (int64_t i = 0; i < half; i++) {
            const double x = (double)i / (double)(half - 1);
            rope_short_data[i] = (float)(1.0 + 0.5 * x * x);
            rope_long_data[i] = (float)(1.0 + 29.0 * pow(x, 1.5));
        }
        const int64_t ne[1] = {half};
        pl_gguf_writer_add_tensor(w, "rope_factors_long.weight", PL_TYPE_F32, 1, ne, rope_long_data,
                                  &e);
        pl_gguf_writer_add_tensor(w, "rope_factors_short.weight", PL_TYPE_F32, 1, ne,
                                  rope_short_data, &e);
    }
}
