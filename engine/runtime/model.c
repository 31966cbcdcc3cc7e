/* model.c — pl_model: a GGUF view plus the architecture's hyperparameters and weights,
 * bound by name with exact types and shapes. Not the forward pass (forward.c). */
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "tokenizer/tokenizer.h"

/* Hard ceilings that keep scratch sizing and int32 positions sane; real models are far below. */
#define MAX_EMBD   (1 << 16)
#define MAX_LAYERS 1024
#define MAX_HEADS  1024
#define MAX_FF     (1 << 18)
#define MAX_VOCAB  (1 << 22)

static const struct {
    const char *name;
    enum pl_arch arch;
    enum pl_rope_style rope;
} archs[] = {
    {"llama", PL_ARCH_LLAMA, PL_ROPE_NORMAL},
    {"qwen2", PL_ARCH_QWEN2, PL_ROPE_NEOX},
    {"qwen3", PL_ARCH_QWEN3, PL_ROPE_NEOX},
};

/* ---- metadata ---- */

/* Integer metadata of any integer type (writers differ: u32 is usual, some use i32/u64). */
static pl_status kv_int_at(const pl_gguf *g, int64_t i, const char *key, int64_t *out,
                           pl_error *err)
{
    pl_gguf_type t = pl_gguf_kv_type(g, (uint64_t)i);
    union {
        uint8_t u8;
        int8_t i8;
        uint16_t u16;
        int16_t i16;
        uint32_t u32;
        int32_t i32;
        uint64_t u64;
        int64_t i64;
    } v;
    pl_status s = pl_gguf_kv_scalar(g, (uint64_t)i, t, &v, NULL);
    if (s)
        return pl_fail(err, PL_ERR_TYPE, "%s has type %s, expected an integer", key,
                       pl_gguf_type_name(t) ? pl_gguf_type_name(t) : "?");
    switch (t) {
    case PL_GGUF_UINT8:
        *out = v.u8;
        break;
    case PL_GGUF_INT8:
        *out = v.i8;
        break;
    case PL_GGUF_UINT16:
        *out = v.u16;
        break;
    case PL_GGUF_INT16:
        *out = v.i16;
        break;
    case PL_GGUF_UINT32:
        *out = v.u32;
        break;
    case PL_GGUF_INT32:
        *out = v.i32;
        break;
    case PL_GGUF_INT64:
        *out = v.i64;
        break;
    case PL_GGUF_UINT64:
        if (v.u64 > INT64_MAX)
            return pl_fail(err, PL_ERR_FORMAT, "%s = %llu is too large", key,
                           (unsigned long long)v.u64);
        *out = (int64_t)v.u64;
        break;
    default:
        return pl_fail(err, PL_ERR_TYPE, "%s has type %s, expected an integer", key,
                       pl_gguf_type_name(t));
    }
    return PL_OK;
}

/* key: "<arch>.<suffix>"; missing -> def when def >= 0, else PL_ERR_NOT_FOUND. Checks [lo, hi]. */
static pl_status get_int(const pl_gguf *g, const char *arch, const char *suffix, int64_t def,
                         int64_t lo, int64_t hi, int64_t *out, pl_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int64_t i = pl_gguf_find_key(g, key);
    if (i < 0) {
        if (def >= 0) {
            *out = def;
            return PL_OK;
        }
        return pl_fail(err, PL_ERR_NOT_FOUND, "required metadata key '%s' is missing", key);
    }
    pl_status s = kv_int_at(g, i, key, out, err);
    if (s) return s;
    if (*out < lo || *out > hi)
        return pl_fail(err, PL_ERR_FORMAT, "%s = %lld is outside [%lld, %lld]", key,
                       (long long)*out, (long long)lo, (long long)hi);
    return PL_OK;
}

/* A per-layer count: a scalar for all layers, or an array of n_layer integers. */
static pl_status get_per_layer(const pl_gguf *g, const char *arch, const char *suffix, int64_t def,
                               int64_t lo, int64_t hi, int64_t n_layer, int64_t *out, pl_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int64_t i = pl_gguf_find_key(g, key);
    if (i < 0 || pl_gguf_kv_type(g, (uint64_t)i) != PL_GGUF_ARRAY) {
        int64_t v;
        pl_status s = get_int(g, arch, suffix, def, lo, hi, &v, err);
        if (s) return s;
        for (int64_t l = 0; l < n_layer; l++) out[l] = v;
        return PL_OK;
    }
    pl_gguf_array a;
    pl_status s = pl_gguf_kv_array(g, (uint64_t)i, &a, err);
    if (s) return s;
    if (a.count != (uint64_t)n_layer)
        return pl_fail(err, PL_ERR_FORMAT, "%s has %llu elements, expected one per layer (%lld)",
                       key, (unsigned long long)a.count, (long long)n_layer);
    for (int64_t l = 0; l < n_layer; l++) {
        int64_t v;
        if (a.type == PL_GGUF_UINT32 || a.type == PL_GGUF_INT32) {
            uint32_t u;
            pl_gguf_array_elem(&a, (uint64_t)l, &u, NULL);
            v = a.type == PL_GGUF_INT32 ? (int64_t)(int32_t)u : (int64_t)u;
        } else if (a.type == PL_GGUF_UINT64 || a.type == PL_GGUF_INT64) {
            int64_t x;
            pl_gguf_array_elem(&a, (uint64_t)l, &x, NULL);
            v = x;
        } else {
            return pl_fail(err, PL_ERR_TYPE, "%s is an array of %s, expected 32/64-bit integers",
                           key, pl_gguf_type_name(a.type));
        }
        if (v < lo || v > hi)
            return pl_fail(err, PL_ERR_FORMAT, "%s[%lld] = %lld is outside [%lld, %lld]", key,
                           (long long)l, (long long)v, (long long)lo, (long long)hi);
        out[l] = v;
    }
    return PL_OK;
}

static pl_status get_float(const pl_gguf *g, const char *arch, const char *suffix, float def,
                           float *out, pl_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int64_t i = pl_gguf_find_key(g, key);
    if (i < 0) {
        *out = def;
        return PL_OK;
    }
    pl_gguf_type t = pl_gguf_kv_type(g, (uint64_t)i);
    if (t == PL_GGUF_FLOAT32) return pl_gguf_kv_scalar(g, (uint64_t)i, t, out, err);
    if (t == PL_GGUF_FLOAT64) {
        double d;
        pl_gguf_kv_scalar(g, (uint64_t)i, t, &d, err);
        *out = (float)d;
        return PL_OK;
    }
    return pl_fail(err, PL_ERR_TYPE, "%s has type %s, expected float32", key, pl_gguf_type_name(t));
}

/* ---- tensors ---- */

enum tclass { T_VEC_F32, T_MATRIX };

/* Binds `name` with exactly the shape (ne0[, ne1]); a missing optional tensor leaves
 * t->data NULL. Matrices accept any implemented type; vectors must be F32. */
static pl_status bind(pl_model *m, pl_tensor *t, const char *name, enum tclass cls, int64_t ne0,
                      int64_t ne1, int required, pl_error *err)
{
    memset(t, 0, sizeof *t);
    int64_t i = pl_gguf_find_tensor(m->gguf, name);
    if (i < 0) {
        if (!required) return PL_OK;
        if (cls == T_MATRIX)
            return pl_fail(err, PL_ERR_NOT_FOUND, "tensor '%s' [%lld, %lld] is missing", name,
                           (long long)ne0, (long long)ne1);
        return pl_fail(err, PL_ERR_NOT_FOUND, "tensor '%s' [%lld] is missing", name,
                       (long long)ne0);
    }
    pl_tensor_info ti;
    pl_gguf_tensor(m->gguf, (uint64_t)i, &ti, NULL);
    uint32_t want_dims = cls == T_MATRIX ? 2 : 1;
    if (ti.n_dims != want_dims || ti.ne[0] != ne0 || (cls == T_MATRIX && ti.ne[1] != ne1))
        return pl_fail(err, PL_ERR_TYPE,
                       "tensor '%s' has shape [%lld, %lld, %lld, %lld] (%u dims), expected "
                       "[%lld%s%lld]",
                       name, (long long)ti.ne[0], (long long)ti.ne[1], (long long)ti.ne[2],
                       (long long)ti.ne[3], ti.n_dims, (long long)ne0, cls == T_MATRIX ? ", " : "",
                       cls == T_MATRIX ? (long long)ne1 : 0LL);
    if (cls == T_VEC_F32 && ti.type != PL_TYPE_F32)
        return pl_fail(err, PL_ERR_TYPE, "tensor '%s' has type %s, expected F32", name,
                       pl_type_name(ti.type));
    t->data = ti.data;
    t->type = ti.type;
    memcpy(t->ne, ti.ne, sizeof t->ne);
    pl_status s = pl_type_row_bytes(ti.type, ti.ne[0], &t->row_bytes, err);
    if (s) return s;
    m->weight_bytes += ti.n_bytes;
    m->n_params += (uint64_t)(ti.ne[0] * ti.ne[1] * ti.ne[2] * ti.ne[3]);
    return PL_OK;
}

static pl_status bind_layer(pl_model *m, int64_t l, pl_error *err)
{
    const pl_hparams *hp = &m->hp;
    pl_layer *L = &m->layers[l];
    int64_t E = hp->n_embd, D = hp->head_dim;
    int64_t q = L->n_head * D, kv = L->n_head_kv * D;
    int qwen2 = hp->arch == PL_ARCH_QWEN2, qwen3 = hp->arch == PL_ARCH_QWEN3;
    struct {
        pl_tensor *t;
        const char *suffix;
        enum tclass cls;
        int64_t ne0, ne1;
        int required;
    } spec[] = {
        {&L->attn_norm, "attn_norm.weight", T_VEC_F32, E, 1, 1},
        {&L->wq, "attn_q.weight", T_MATRIX, E, q, 1},
        {&L->wk, "attn_k.weight", T_MATRIX, E, kv, 1},
        {&L->wv, "attn_v.weight", T_MATRIX, E, kv, 1},
        {&L->bq, "attn_q.bias", T_VEC_F32, q, 1, qwen2},
        {&L->bk, "attn_k.bias", T_VEC_F32, kv, 1, qwen2},
        {&L->bv, "attn_v.bias", T_VEC_F32, kv, 1, qwen2},
        {&L->q_norm, "attn_q_norm.weight", T_VEC_F32, D, 1, qwen3},
        {&L->k_norm, "attn_k_norm.weight", T_VEC_F32, D, 1, qwen3},
        {&L->wo, "attn_output.weight", T_MATRIX, q, E, 1},
        {&L->ffn_norm, "ffn_norm.weight", T_VEC_F32, E, 1, 1},
        {&L->w_gate, "ffn_gate.weight", T_MATRIX, E, L->n_ff, 1},
        {&L->w_up, "ffn_up.weight", T_MATRIX, E, L->n_ff, 1},
        {&L->w_down, "ffn_down.weight", T_MATRIX, L->n_ff, E, 1},
    };
    for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "blk.%lld.%s", (long long)l, spec[i].suffix);
        pl_status s =
            bind(m, spec[i].t, name, spec[i].cls, spec[i].ne0, spec[i].ne1, spec[i].required, err);
        if (s) return s;
    }
    return PL_OK;
}

static pl_status bind_arch(pl_model *m, pl_error *err)
{
    const pl_gguf *g = m->gguf;
    pl_str a;
    pl_status s = pl_gguf_get_string(g, "general.architecture", &a, err);
    if (s) return s;
    pl_hparams *hp = &m->hp;
    const char *arch = NULL;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (a.len == strlen(archs[i].name) && memcmp(a.ptr, archs[i].name, a.len) == 0) {
            arch = archs[i].name;
            hp->arch = archs[i].arch;
            hp->rope_style = archs[i].rope;
        }
    if (!arch)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "general.architecture '%.*s' is not supported (plumb runs llama, qwen2, "
                       "qwen3)",
                       (int)(a.len > 40 ? 40 : a.len), a.ptr);

    if ((s = get_int(g, arch, "embedding_length", -1, 1, MAX_EMBD, &hp->n_embd, err)) ||
        (s = get_int(g, arch, "block_count", -1, 1, MAX_LAYERS, &hp->n_layer, err)) ||
        (s = get_int(g, arch, "context_length", 2048, 1, INT32_MAX, &hp->n_ctx_train, err)))
        return s;
    m->layers = pl_calloc((size_t)hp->n_layer, sizeof *m->layers);
    int64_t *tmp = pl_calloc((size_t)hp->n_layer * 3, sizeof *tmp);
    if (!m->layers || !tmp) {
        pl_free(tmp);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %lld layers", (long long)hp->n_layer);
    }
    int64_t *heads = tmp, *heads_kv = tmp + hp->n_layer, *ff = tmp + 2 * hp->n_layer;
    if ((s = get_per_layer(g, arch, "attention.head_count", -1, 1, MAX_HEADS, hp->n_layer, heads,
                           err)) ||
        (s = get_per_layer(g, arch, "feed_forward_length", -1, 1, MAX_FF, hp->n_layer, ff, err))) {
        pl_free(tmp);
        return s;
    }
    char kvkey[64];
    snprintf(kvkey, sizeof kvkey, "%s.attention.head_count_kv", arch);
    if (pl_gguf_find_key(g, kvkey) < 0)
        memcpy(heads_kv, heads, (size_t)hp->n_layer * sizeof *heads);
    else if ((s = get_per_layer(g, arch, "attention.head_count_kv", -1, 1, MAX_HEADS, hp->n_layer,
                                heads_kv, err))) {
        pl_free(tmp);
        return s;
    }
    hp->max_head = hp->max_head_kv = hp->max_ff = 0;
    for (int64_t l = 0; l < hp->n_layer; l++) {
        if (heads[l] % heads_kv[l] != 0) {
            s = pl_fail(err, PL_ERR_FORMAT,
                        "layer %lld: head_count %lld is not a multiple of head_count_kv %lld",
                        (long long)l, (long long)heads[l], (long long)heads_kv[l]);
            pl_free(tmp);
            return s;
        }
        m->layers[l].n_head = heads[l];
        m->layers[l].n_head_kv = heads_kv[l];
        m->layers[l].n_ff = ff[l];
        if (heads[l] > hp->max_head) hp->max_head = heads[l];
        if (heads_kv[l] > hp->max_head_kv) hp->max_head_kv = heads_kv[l];
        if (ff[l] > hp->max_ff) hp->max_ff = ff[l];
    }
    pl_free(tmp);

    int64_t def_hd = hp->n_embd % m->layers[0].n_head == 0 ? hp->n_embd / m->layers[0].n_head : -1;
    if ((s = get_int(g, arch, "attention.key_length", def_hd, 2, 4096, &hp->head_dim, err)))
        return s;
    int64_t vlen;
    if ((s = get_int(g, arch, "attention.value_length", hp->head_dim, 1, 4096, &vlen, err)))
        return s;
    if (vlen != hp->head_dim)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s.attention.value_length %lld differs from key_length %lld", arch,
                       (long long)vlen, (long long)hp->head_dim);
    if ((s = get_int(g, arch, "rope.dimension_count", hp->head_dim, 2, hp->head_dim, &hp->n_rot,
                     err)))
        return s;
    if (hp->n_rot % 2 != 0)
        return pl_fail(err, PL_ERR_FORMAT, "%s.rope.dimension_count = %lld must be even", arch,
                       (long long)hp->n_rot);
    float def_eps = hp->arch == PL_ARCH_LLAMA ? 1e-5f : 1e-6f;
    if ((s = get_float(g, arch, "attention.layer_norm_rms_epsilon", def_eps, &hp->rms_eps, err)) ||
        (s = get_float(g, arch, "rope.freq_base", 10000.0f, &hp->rope_base, err)))
        return s;
    if (!(hp->rms_eps > 0.0f) || !(hp->rope_base > 1.0f))
        return pl_fail(err, PL_ERR_FORMAT, "rms epsilon %g must be > 0 and rope freq_base %g > 1",
                       (double)hp->rms_eps, (double)hp->rope_base);

    /* The vocabulary size comes from the embedding table itself. */
    int64_t ti = pl_gguf_find_tensor(g, "token_embd.weight");
    if (ti < 0) return pl_fail(err, PL_ERR_NOT_FOUND, "tensor 'token_embd.weight' is missing");
    pl_tensor_info info;
    pl_gguf_tensor(g, (uint64_t)ti, &info, NULL);
    hp->n_vocab = info.n_dims == 2 ? info.ne[1] : 0;
    if (hp->n_vocab < 1 || hp->n_vocab > MAX_VOCAB)
        return pl_fail(err, PL_ERR_FORMAT, "token_embd.weight: vocab size %lld outside [1, %d]",
                       (long long)hp->n_vocab, MAX_VOCAB);
    int64_t vs;
    if ((s = get_int(g, arch, "vocab_size", hp->n_vocab, 1, MAX_VOCAB, &vs, err))) return s;
    if (vs != hp->n_vocab)
        return pl_fail(err, PL_ERR_FORMAT, "%s.vocab_size %lld != token_embd.weight rows %lld",
                       arch, (long long)vs, (long long)hp->n_vocab);

    int64_t E = hp->n_embd, V = hp->n_vocab;
    if ((s = bind(m, &m->tok_embd, "token_embd.weight", T_MATRIX, E, V, 1, err)) ||
        (s = bind(m, &m->out_norm, "output_norm.weight", T_VEC_F32, E, 1, 1, err)) ||
        (s = bind(m, &m->output, "output.weight", T_MATRIX, E, V, 0, err)))
        return s;
    if (!m->output.data) {
        m->output = m->tok_embd;
        m->tied = 1;
    }
    for (int64_t l = 0; l < hp->n_layer; l++)
        if ((s = bind_layer(m, l, err))) return s;
    return PL_OK;
}

/* ---- load ---- */

static pl_status check_params(const pl_model_params *params, pl_error *err)
{
    const uint32_t known = PL_MODEL_VOCAB_ONLY | PL_MODEL_NO_REPACK;
    if (params && (params->flags & ~known))
        return pl_fail(err, PL_ERR_INVALID_ARG, "pl_model_params.flags = 0x%x: unknown bits 0x%x",
                       params->flags, params->flags & ~known);
    return PL_OK;
}

/* Takes ownership of g. */
static pl_status finish_load(pl_model **out, pl_gguf *g, const pl_model_params *params,
                             pl_error *err)
{
    pl_model *m = pl_calloc(1, sizeof *m);
    if (!m) {
        pl_gguf_free(g);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for the model");
    }
    m->gguf = g;
    m->vocab_only = params && (params->flags & PL_MODEL_VOCAB_ONLY);
    pl_status s = PL_OK;
    if (pl_gguf_find_key(g, "tokenizer.ggml.model") >= 0)
        s = pl_tokenizer_load(&m->tok, g, err);
    else if (m->vocab_only)
        s = pl_fail(err, PL_ERR_NOT_FOUND,
                    "PL_MODEL_VOCAB_ONLY: the file has no tokenizer (metadata key "
                    "tokenizer.ggml.model not found)");
    if (!s && !m->vocab_only) s = bind_arch(m, err);
    /* llama.cpp allows padded embedding tables (rows >= tokens); fewer rows than tokens would
     * let a valid token id index past the table. */
    if (!s && !m->vocab_only && m->tok && (int64_t)m->tok->n_vocab > m->hp.n_vocab)
        s = pl_fail(err, PL_ERR_FORMAT,
                    "tokenizer has %lld tokens but token_embd.weight only %lld rows",
                    (long long)m->tok->n_vocab, (long long)m->hp.n_vocab);
    if (!s && !m->vocab_only && !(params && (params->flags & PL_MODEL_NO_REPACK)))
        s = pl_model_repack(m, params ? params->kernels : NULL, err);
    if (s) {
        pl_model_free(m);
        return s;
    }
    *out = m;
    return pl_ok(err);
}

pl_status pl_model_load(pl_model **out, const char *path, const pl_model_params *params,
                        pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    pl_status s = check_params(params, err);
    if (s) return s;
    pl_gguf *g;
    if ((s = pl_gguf_open(&g, path, err))) return s;
    if ((s = finish_load(out, g, params, err))) pl_error_prefix(err, path);
    return s;
}

pl_status pl_model_load_memory(pl_model **out, const void *data, size_t size,
                               const pl_model_params *params, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    pl_status s = check_params(params, err);
    if (s) return s;
    pl_gguf *g;
    if ((s = pl_gguf_parse(&g, data, size, err))) return s;
    return finish_load(out, g, params, err);
}

void pl_model_free(pl_model *m)
{
    if (!m) return;
    pl_free(m->layers);
    pl_free(m->packed);
    pl_tokenizer_free(m->tok);
    pl_gguf_free(m->gguf);
    pl_free(m);
}

const pl_gguf *pl_model_gguf(const pl_model *m)
{
    return m ? m->gguf : NULL;
}

const struct pl_tokenizer *pl_model_tokenizer(const pl_model *m)
{
    return m ? m->tok : NULL;
}

pl_status pl_model_get_info(const pl_model *m, pl_model_info *out, pl_error *err)
{
    if (!m || !out) return pl_fail(err, PL_ERR_INVALID_ARG, "model or out is NULL");
    memset(out, 0, sizeof *out);
    if (m->vocab_only) return pl_ok(err);
    const pl_hparams *hp = &m->hp;
    snprintf(out->arch, sizeof out->arch, "%s", archs[hp->arch].name);
    out->n_vocab = hp->n_vocab;
    out->n_ctx_train = hp->n_ctx_train;
    out->n_embd = hp->n_embd;
    out->n_layer = hp->n_layer;
    out->n_head = m->layers[0].n_head;
    out->n_head_kv = m->layers[0].n_head_kv;
    out->head_dim = hp->head_dim;
    out->n_ff = m->layers[0].n_ff;
    out->n_rot = hp->n_rot;
    out->rms_eps = hp->rms_eps;
    out->rope_base = hp->rope_base;
    out->tied_embeddings = m->tied;
    out->weight_bytes = m->weight_bytes;
    out->n_params = m->n_params;
    out->step_weight_bytes = m->tied ? m->weight_bytes
                                     : m->weight_bytes -
                                           m->tok_embd.row_bytes * (uint64_t)m->tok_embd.ne[1] +
                                           m->tok_embd.row_bytes;
    snprintf(out->repack_set, sizeof out->repack_set, "%s", m->repack_set);
    out->n_repacked = m->n_repacked;
    out->repack_bytes = m->packed_bytes;
    out->repack_ms = m->repack_ms;
    return pl_ok(err);
}
