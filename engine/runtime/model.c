/* model.c — pl_model: a GGUF view plus the architecture's hyperparameters and weights,
 * bound by name with exact types and shapes. Not the forward pass (forward.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "tokenizer/tokenizer.h"

/* Hard ceilings that keep scratch sizing and int32 positions sane are the key ranges of the
 * architecture table (arch.c); the vocabulary's is the embedding table's: */
#define MAX_VOCAB (1 << 22)

/* ---- metadata ---- */

/* Integer metadata of any integer type (writers differ: u32 is usual, some use i32/u64). */
static pl_status kv_int_at(const pl_gguf *g, int64_t i, const char *key, int64_t *out,
                           pl_error *err)
{
    pl_gguf_type t = pl_gguf_kv_type(g, (uint64_t)i);
    pl_gguf_scalar v;
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

/* The keys of the architecture table as read from one file. */
typedef struct hp_read {
    char arch[32]; /* the key prefix */
    double v[PL_HP_COUNT];
    uint8_t present[PL_HP_COUNT];
    pl_str str[PL_HP_COUNT]; /* PL_KEY_STRING values */
} hp_read;

static void key_name(char *buf, size_t cap, const char *arch, const pl_arch_key *k)
{
    snprintf(buf, cap, "%s.%s", arch, k->suffix);
}

/* Reads one key of the table (not a per-layer one) into r, checking its type and range. */
static pl_status read_key(const pl_gguf *g, const pl_arch_key *k, hp_read *r, pl_error *err)
{
    char key[128];
    key_name(key, sizeof key, r->arch, k);
    int64_t i = pl_gguf_find_key(g, key);
    r->v[k->hp] = k->def;
    if (i < 0) {
        if (k->required)
            return pl_fail(err, PL_ERR_NOT_FOUND, "required metadata key '%s' is missing", key);
        return PL_OK;
    }
    r->present[k->hp] = 1;
    pl_gguf_type t = pl_gguf_kv_type(g, (uint64_t)i);
    pl_status s;
    switch (k->kind) {
    case PL_KEY_PER_LAYER:
        return PL_OK; /* read with the layer count known (read_per_layer) */
    case PL_KEY_PATTERN:
        return PL_OK; /* checked against the recipe with the window known (read_block) */
    case PL_KEY_INT: {
        int64_t x;
        if ((s = kv_int_at(g, i, key, &x, err))) return s;
        if (x < k->lo || x > k->hi)
            return pl_fail(err, PL_ERR_FORMAT, "%s = %lld is outside [%.0f, %.0f]", key,
                           (long long)x, k->lo, k->hi);
        r->v[k->hp] = (double)x;
        return PL_OK;
    }
    case PL_KEY_FLOAT: {
        double x;
        if (t == PL_GGUF_FLOAT32) {
            float f;
            pl_gguf_kv_scalar(g, (uint64_t)i, t, &f, NULL);
            x = f;
        } else if (t == PL_GGUF_FLOAT64) {
            pl_gguf_kv_scalar(g, (uint64_t)i, t, &x, NULL);
        } else {
            return pl_fail(err, PL_ERR_TYPE, "%s has type %s, expected float32", key,
                           pl_gguf_type_name(t));
        }
        if (!(x >= k->lo && x <= k->hi))
            return pl_fail(err, PL_ERR_FORMAT, "%s = %g is outside [%g, %g]", key, x, k->lo, k->hi);
        r->v[k->hp] = x;
        return PL_OK;
    }
    case PL_KEY_STRING:
        if (t != PL_GGUF_STRING)
            return pl_fail(err, PL_ERR_TYPE, "%s has type %s, expected a string", key,
                           pl_gguf_type_name(t));
        return pl_gguf_get_string(g, key, &r->str[k->hp], err);
    case PL_KEY_BOOL: {
        uint8_t b;
        if (t != PL_GGUF_BOOL)
            return pl_fail(err, PL_ERR_TYPE, "%s has type %s, expected a bool", key,
                           pl_gguf_type_name(t));
        pl_gguf_kv_scalar(g, (uint64_t)i, t, &b, NULL);
        r->v[k->hp] = b ? 1.0 : 0.0;
        return PL_OK;
    }
    }
    return PL_OK;
}

/* A per-layer count: a scalar for all layers, or an array of n_layer integers; when absent,
 * from (a copy of def, when non-NULL) or else a missing-key error. */
static pl_status read_per_layer(const pl_gguf *g, const hp_read *r, int hp, int64_t n_layer,
                                const int64_t *def, int64_t *out, pl_error *err)
{
    const pl_arch_key *k = pl_arch_key_of(hp);
    char key[128];
    key_name(key, sizeof key, r->arch, k);
    int64_t i = pl_gguf_find_key(g, key);
    if (i < 0) {
        if (!def)
            return pl_fail(err, PL_ERR_NOT_FOUND, "required metadata key '%s' is missing", key);
        memcpy(out, def, (size_t)n_layer * sizeof *out);
        return PL_OK;
    }
    if (pl_gguf_kv_type(g, (uint64_t)i) != PL_GGUF_ARRAY) {
        int64_t v;
        pl_status s = kv_int_at(g, i, key, &v, err);
        if (s) return s;
        if (v < k->lo || v > k->hi)
            return pl_fail(err, PL_ERR_FORMAT, "%s = %lld is outside [%.0f, %.0f]", key,
                           (long long)v, k->lo, k->hi);
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
        if (v < k->lo || v > k->hi)
            return pl_fail(err, PL_ERR_FORMAT, "%s[%lld] = %lld is outside [%.0f, %.0f]", key,
                           (long long)l, (long long)v, k->lo, k->hi);
        out[l] = v;
    }
    return PL_OK;
}

/* ---- every key accounted for ---- */

/* "= 'linear'", "= 8", "= [24 items]": a value for an error message. */
static void kv_value(const pl_gguf *g, uint64_t i, char *buf, size_t cap)
{
    pl_gguf_type t = pl_gguf_kv_type(g, i);
    int64_t n;
    pl_str str;
    pl_gguf_array a;
    buf[0] = '\0';
    if (t == PL_GGUF_STRING && pl_gguf_kv_string(g, i, &str, NULL) == PL_OK)
        snprintf(buf, cap, " = '%.*s%s'", (int)(str.len > 40 ? 40 : str.len), str.ptr,
                 str.len > 40 ? "..." : "");
    else if (t == PL_GGUF_ARRAY && pl_gguf_kv_array(g, i, &a, NULL) == PL_OK)
        snprintf(buf, cap, " = [%llu items]", (unsigned long long)a.count);
    else if (t == PL_GGUF_BOOL) {
        uint8_t b = 0;
        pl_gguf_kv_scalar(g, i, t, &b, NULL);
        snprintf(buf, cap, " = %s", b ? "true" : "false");
    } else if (t == PL_GGUF_FLOAT32) {
        float f = 0;
        pl_gguf_kv_scalar(g, i, t, &f, NULL);
        snprintf(buf, cap, " = %g", (double)f);
    } else if (t == PL_GGUF_FLOAT64) {
        double d = 0;
        pl_gguf_kv_scalar(g, i, t, &d, NULL);
        snprintf(buf, cap, " = %g", d);
    } else if (kv_int_at(g, (int64_t)i, "", &n, NULL) == PL_OK)
        snprintf(buf, cap, " = %lld", (long long)n);
}

/* Every key of the file is one the architecture table reads, one read elsewhere, or one listed
 * as changing nothing (arch.c); anything else might change what is computed: refused by name. */
static pl_status check_keys(const pl_gguf *g, const char *arch, int vocab_only, pl_error *err)
{
    const pl_arch *own = vocab_only ? NULL : pl_arch_find(arch, strlen(arch));
    size_t n_keys, alen = strlen(arch);
    const pl_arch_key *keys = pl_arch_keys(&n_keys);
    for (uint64_t i = 0; i < pl_gguf_n_kv(g); i++) {
        pl_str k = pl_gguf_kv_key(g, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(k.len < 255 ? k.len : 255), k.ptr);
        if (pl_key_known(key, NULL)) continue;
        if (vocab_only && strncmp(key, "tokenizer.", 10) != 0) continue;
        if (!vocab_only && strncmp(key, arch, alen) == 0 && key[alen] == '.') {
            const char *suffix = key + alen + 1;
            int found = pl_arch_key_inert(suffix, NULL);
            for (size_t j = 0; !found && j < n_keys; j++) /* not one the arch redefines */
                found = strcmp(keys[j].suffix, suffix) == 0 &&
                        (!own || pl_arch_key_of_arch(own, keys[j].hp) == &keys[j]);
            for (size_t j = 0; !found && own && j < own->n_keys; j++)
                found = strcmp(own->keys[j].suffix, suffix) == 0;
            if (found) continue;
        }
        char val[64];
        kv_value(g, i, val, sizeof val);
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "metadata key '%s'%s is not one plumb reads for architecture '%s': it may "
                       "change what is computed, so the file is refused",
                       key, val, vocab_only ? "(vocabulary only)" : arch);
    }
    int64_t si = pl_gguf_find_key(g, "split.count");
    int64_t parts = 1;
    if (si >= 0 && (kv_int_at(g, si, "split.count", &parts, err) || parts != 1))
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "split.count = %lld: this is one part of a split GGUF; merge the parts "
                       "(llama-gguf-split --merge) and load the whole file",
                       (long long)parts);
    return PL_OK;
}

static int str_is(const pl_str *s, const char *z)
{
    return s->len == strlen(z) && memcmp(s->ptr, z, s->len) == 0;
}

/* The values of the table's keys that plumb does not compute, refused by name; a key at its
 * neutral value (expert_count = 0, attention.causal = true, ...) changes nothing. */
static pl_status check_values(const hp_read *r, pl_error *err)
{
    const char *a = r->arch;
    const pl_str *type = &r->str[PL_HP_ROPE_SCALING_TYPE];
    if (r->present[PL_HP_ROPE_SCALING_TYPE] && !str_is(type, "none") && !str_is(type, "linear") &&
        !str_is(type, "yarn"))
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s.rope.scaling.type = '%.*s': plumb implements none, linear and yarn", a,
                       (int)(type->len > 32 ? 32 : type->len), type->ptr);
    const int yarn = r->present[PL_HP_ROPE_SCALING_TYPE] && str_is(type, "yarn");
    /* llama.cpp's YaRN multiplier keys (DeepSeek's log multiplier, its ext/attn overrides) */
    static const int yarn_only[] = {PL_HP_YARN_EXT_FACTOR, PL_HP_YARN_ATTN_FACTOR};
    for (size_t i = 0; i < sizeof yarn_only / sizeof yarn_only[0]; i++) {
        const pl_arch_key *k = pl_arch_key_of(yarn_only[i]);
        if (r->present[k->hp] && r->v[k->hp] != k->def && !(yarn && k->hp == PL_HP_YARN_EXT_FACTOR))
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s.%s = %g: plumb does not implement this RoPE scaling override", a,
                           k->suffix, r->v[k->hp]);
    }
    const double nx = r->v[PL_HP_EXPERT_COUNT], nu = r->v[PL_HP_EXPERT_USED_COUNT];
    const int moe = pl_arch_find(a, strlen(a))->recipe.moe;
    if (moe == PL_MOE_NONE && (nx != 0 || nu != 0))
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s.expert_count = %.0f, expert_used_count = %.0f: architecture '%s' has "
                       "no mixture-of-experts layers in plumb",
                       a, nx, nu, a);
    if (moe == PL_MOE_REQUIRED && nx == 0)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s.expert_count is missing or 0: %s layers are "
                       "mixtures of experts",
                       a, a);
    if (nx == 0 && nu != 0)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s.expert_used_count = %.0f in a model without experts (expert_count 0)", a,
                       nu);
    if (nx != 0 && (nu < 1 || nu > nx))
        return pl_fail(err, PL_ERR_FORMAT, "%s.expert_used_count = %.0f is outside [1, %.0f]", a,
                       nu, nx);
    if (r->present[PL_HP_YARN_TRUNCATE] && r->v[PL_HP_YARN_TRUNCATE] != 1.0 && !yarn)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s.rope.scaling.yarn_truncate = false without yarn scaling: it says how "
                       "YaRN rounds its correction range, and nothing here is YaRN",
                       a);
    if (r->v[PL_HP_CAUSAL] != 1.0)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s.attention.causal = false: plumb runs causal decoders only", a);
    return PL_OK;
}

/* RoPE as llama.cpp derives it from the keys: a factor (rope.scaling.factor, else the older
 * rope.scale_linear) scales positions linearly whatever the type (an absent type is linear);
 * YaRN adds its ramp (ext_factor 1 unless the file says otherwise) between the correction
 * dims of beta_fast/beta_slow over the original context; rope_freqs.weight divides each
 * pair's frequency (llama3). */
static pl_status read_rope(pl_model *m, const hp_read *r, pl_error *err)
{
    pl_hparams *hp = &m->hp;
    const double factor = r->present[PL_HP_ROPE_SCALING_FACTOR] ? r->v[PL_HP_ROPE_SCALING_FACTOR]
                                                                : r->v[PL_HP_ROPE_SCALE_LINEAR];
    const int yarn = str_is(&r->str[PL_HP_ROPE_SCALING_TYPE], "yarn");
    const int none = str_is(&r->str[PL_HP_ROPE_SCALING_TYPE], "none");
    if (factor != 0.0 && factor < 1.0 && !none)
        return pl_fail(err, PL_ERR_FORMAT, "%s.rope.scaling.factor = %g must be >= 1",
                       hp->arch->name, factor);
    pl_rope_args *a = &hp->rope;
    memset(a, 0, sizeof *a);
    a->n_rot = hp->n_rot;
    a->freq_base = hp->rope_base;
    a->freq_scale = none || factor == 0.0 ? 1.0f : (float)(1.0 / factor);
    a->ext_factor = !yarn ? 0.0f
                    : r->present[PL_HP_YARN_EXT_FACTOR] && r->v[PL_HP_YARN_EXT_FACTOR] >= 0
                        ? (float)r->v[PL_HP_YARN_EXT_FACTOR]
                        : 1.0f;
    a->attn_factor = (float)r->v[PL_HP_ROPE_ATTN_FACTOR];
    a->beta_fast = (float)r->v[PL_HP_YARN_BETA_FAST];
    a->beta_slow = (float)r->v[PL_HP_YARN_BETA_SLOW];
    a->n_ctx_orig =
        r->present[PL_HP_ROPE_ORIG_CTX] ? (int64_t)r->v[PL_HP_ROPE_ORIG_CTX] : hp->n_ctx_train;
    a->style = hp->arch->recipe.rope_style;
    a->yarn_no_truncate = yarn && r->v[PL_HP_YARN_TRUNCATE] == 0.0;
    if (!m->rope_long.data != !m->rope_short.data)
        return pl_fail(
            err, PL_ERR_FORMAT, "tensor '%s' is missing: longrope needs both factor sets",
            m->rope_long.data ? "rope_factors_short.weight" : "rope_factors_long.weight");
    a->freq_factors = m->rope_freqs.data ? m->rope_freqs.data : m->rope_short.data;
    hp->rope_long = m->rope_long.data;
    /* local layers: their own base and no scaling where the recipe says so (Gemma 3) */
    hp->rope_local = *a;
    const float local_base = hp->arch->recipe.swa_rope_base;
    if (local_base > 0) {
        hp->rope_local.freq_base = local_base;
        hp->rope_local.freq_scale = 1.0f;
        hp->rope_local.freq_factors = NULL;
        hp->rope_local.ext_factor = 0.0f;
        hp->rope_local.attn_factor = 1.0f;
    }
    const pl_tensor *divisors[] = {&m->rope_freqs, &m->rope_long, &m->rope_short};
    static const char *const names[] = {"rope_freqs", "rope_factors_long", "rope_factors_short"};
    for (size_t t = 0; t < 3; t++)
        for (int64_t i = 0; divisors[t]->data && i < hp->n_rot / 2; i++) {
            const float f = ((const float *)divisors[t]->data)[i];
            if (!(f > 0.0f) || isinf(f))
                return pl_fail(err, PL_ERR_FORMAT,
                               "%s.weight[%lld] = %g is not a positive finite divisor", names[t],
                               (long long)i, (double)f);
        }
    return PL_OK;
}

/* The local layers' window: the key; for Phi-3 (window_by_shape) 0 is none, and an absent key
 * is what llama.cpp assumes for the releases converted before it existed: 2047 for the 4k-context
 * mini and medium (32 or 40 layers), 262144 for mini-128k, 131072 for medium-128k. */
static pl_status read_window(const pl_model *m, const hp_read *r, int64_t *out, pl_error *err)
{
    const pl_hparams *hp = &m->hp;
    const double w = r->v[PL_HP_SLIDING_WINDOW];
    const int64_t L = hp->n_layer, ctx = hp->n_ctx_train;
    const pl_arch_quirk_model qm = {
        .n_layer = L, .n_ctx = ctx, .n_head_kv = m->layers[0].n_head_kv};
    const pl_arch_quirk *q;
    if (!r->present[PL_HP_SLIDING_WINDOW] && hp->arch->recipe.window_optional) {
        *out = 0; /* none: every layer attends to the whole cache (EXAONE 4) */
        return PL_OK;
    }
    if (!isnan(w))
        *out = (int64_t)w;
    else if (!hp->arch->recipe.window_by_shape)
        *out = -1;
    else if ((q = pl_arch_quirk_of(hp->arch, PL_QUIRK_DEFAULT_WINDOW, &qm)))
        *out = q->value;
    else
        return pl_fail(err, PL_ERR_NOT_FOUND,
                       "required metadata key '%s.attention.sliding_window' is missing (%lld "
                       "layers, context %lld: no %s release whose window llama.cpp assumes)",
                       hp->arch->name, (long long)L, (long long)ctx, hp->arch->name);
    if (*out < (hp->arch->recipe.window_by_shape ? 0 : 1))
        return pl_fail(err, PL_ERR_FORMAT, "%s.attention.sliding_window = %lld must be >= 1",
                       hp->arch->name, (long long)*out);
    return PL_OK;
}

/* EXAONE 4's sliding_window_pattern, where the file has it: a period (llama.cpp's loader) or
 * one bool per layer (llama.cpp's converter), either the recipe's layers exactly; with no
 * window every layer is global. */
static pl_status check_pattern(const pl_model *m, int64_t window, pl_error *err)
{
    const pl_hparams *hp = &m->hp;
    const pl_arch_key *k = pl_arch_key_of_arch(hp->arch, PL_HP_SWA_PATTERN);
    if (!k || k == pl_arch_key_of(PL_HP_SWA_PATTERN)) return PL_OK;
    char key[128];
    key_name(key, sizeof key, hp->arch->name, k);
    const int64_t i = pl_gguf_find_key(m->gguf, key);
    if (i < 0) return PL_OK;
    const int64_t period = hp->arch->recipe.swa_period;
    if (pl_gguf_kv_type(m->gguf, (uint64_t)i) != PL_GGUF_ARRAY) {
        int64_t v;
        pl_status s = kv_int_at(m->gguf, i, key, &v, err);
        if (s) return s;
        if (v != period)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s = %lld: plumb runs %s with a period of %lld", key, (long long)v,
                           hp->arch->name, (long long)period);
        return PL_OK;
    }
    pl_gguf_array a;
    pl_status s = pl_gguf_kv_array(m->gguf, (uint64_t)i, &a, err);
    if (s) return s;
    if (a.type != PL_GGUF_BOOL || a.count != (uint64_t)hp->n_layer)
        return pl_fail(err, PL_ERR_FORMAT, "%s is an array of %llu %s, expected %lld bools", key,
                       (unsigned long long)a.count, pl_gguf_type_name(a.type),
                       (long long)hp->n_layer);
    for (int64_t l = 0; l < hp->n_layer; l++) {
        uint8_t b = 0;
        pl_gguf_array_elem(&a, (uint64_t)l, &b, NULL);
        const int want = window > 0 && pl_arch_layer_is_local(hp->arch, l);
        if ((b != 0) != want)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s[%lld] = %s: plumb runs layer %lld of %s as a %s layer", key,
                           (long long)l, b ? "true" : "false", (long long)l, hp->arch->name,
                           want ? "local" : "global");
    }
    return PL_OK;
}

/* The recipe's numbers: the attention scale (Gemma's 27B rule), the soft-caps, the embedding
 * scale, and which layers are local with which window and RoPE. */
static pl_status read_block(pl_model *m, const hp_read *r, pl_error *err)
{
    pl_hparams *hp = &m->hp;
    const pl_arch_recipe *rc = &hp->arch->recipe;
    const pl_arch_quirk_model qm = {.n_layer = hp->n_layer,
                                    .n_ctx = hp->n_ctx_train,
                                    .n_head = m->layers[0].n_head,
                                    .n_head_kv = m->layers[0].n_head_kv};
    const double d = pl_arch_quirk_of(hp->arch, PL_QUIRK_ATTN_SCALE_EMBD, &qm)
                         ? (double)(hp->n_embd / m->layers[0].n_head)
                         : (double)hp->head_dim;
    hp->attn_scale = (float)(1.0 / sqrt(d));
    hp->attn_softcap = (float)r->v[PL_HP_ATTN_SOFTCAP];
    hp->final_softcap = (float)r->v[PL_HP_FINAL_SOFTCAP];
    hp->logit_scale =
        pl_arch_key_of_arch(hp->arch, PL_HP_LOGIT_SCALE) ? (float)r->v[PL_HP_LOGIT_SCALE] : 0.0f;
    hp->emb_scale = rc->emb_sqrt ? sqrtf((float)hp->n_embd) : 0.0f;
    /* Granite's multipliers (0 where the architecture has no such key: none) */
    if (r->v[PL_HP_EMBEDDING_SCALE] > 0) hp->emb_scale = (float)r->v[PL_HP_EMBEDDING_SCALE];
    if (r->v[PL_HP_ATTENTION_SCALE] > 0) hp->attn_scale = (float)r->v[PL_HP_ATTENTION_SCALE];
    hp->residual_scale = r->v[PL_HP_RESIDUAL_SCALE] > 0 ? (float)r->v[PL_HP_RESIDUAL_SCALE] : 1.0f;
    hp->logit_div = (float)r->v[PL_HP_LOGIT_DIVISOR];
    int64_t window = 0;
    pl_status s;
    if (rc->swa_period && (s = read_window(m, r, &window, err))) return s;
    if ((s = check_pattern(m, window, err))) return s;
    for (int64_t l = 0; l < hp->n_layer; l++) {
        pl_layer *L = &m->layers[l];
        const int local = pl_arch_layer_is_local(hp->arch, l);
        L->window = local ? window : 0;
        L->rope_local = local;
        /* what the layer computes follows from what it binds (and whether it rotates) */
        uint8_t has[PL_L_COUNT];
        for (int t = 0; t < PL_L_COUNT; t++) has[t] = L->t[t].data != NULL;
        L->n_steps = pl_arch_compile_layer(
            hp->arch, has, pl_arch_layer_has_rope(hp->arch, l, window > 0), L->steps);
    }
    return PL_OK;
}

/* ---- tensors ---- */

/* Binds `name` with exactly the shape (ne0[, ne1]); a missing optional tensor leaves
 * t->data NULL. Matrices accept any implemented type; vectors must be F32. Marks the tensor
 * in bound[] (one flag per tensor of the file). */
static pl_status bind(pl_model *m, uint8_t *bound, pl_tensor *t, const char *name, int vector,
                      int64_t ne0, int64_t ne1, int64_t ne2, int required, pl_error *err)
{
    memset(t, 0, sizeof *t);
    int64_t i = pl_gguf_find_tensor(m->gguf, name);
    if (i < 0) {
        if (!required) return PL_OK;
        if (!vector)
            return pl_fail(err, PL_ERR_NOT_FOUND, "tensor '%s' [%lld, %lld] is missing", name,
                           (long long)ne0, (long long)ne1);
        return pl_fail(err, PL_ERR_NOT_FOUND, "tensor '%s' [%lld] is missing", name,
                       (long long)ne0);
    }
    pl_tensor_info ti;
    pl_gguf_tensor(m->gguf, (uint64_t)i, &ti, NULL);
    /* as llama.cpp checks shapes, trailing dims of 1 may be written or not: a vector [n] may
     * come as [n, 1] (qwen2moe's ffn_gate_inp_shexp) */
    const uint32_t want_dims = ne2 > 1 ? 3 : vector ? 1 : 2;
    const int64_t want1 = vector ? 1 : ne1, want2 = ne2 > 1 ? ne2 : 1;
    if (ti.n_dims < want_dims || ti.n_dims > (vector ? 2u : want_dims) || ti.ne[0] != ne0 ||
        ti.ne[1] != want1 || ti.ne[2] != want2 || ti.ne[3] != 1)
        return pl_fail(err, PL_ERR_TYPE,
                       "tensor '%s' has shape [%lld, %lld, %lld, %lld] (%u dims), expected "
                       "[%lld, %lld, %lld] (%u dims)",
                       name, (long long)ti.ne[0], (long long)ti.ne[1], (long long)ti.ne[2],
                       (long long)ti.ne[3], ti.n_dims, (long long)ne0, (long long)want1,
                       (long long)want2, want_dims);
    if (vector && ti.type != PL_TYPE_F32)
        return pl_fail(err, PL_ERR_TYPE, "tensor '%s' has type %s, expected F32", name,
                       pl_type_name(ti.type));
    t->data = ti.data;
    t->type = ti.type;
    memcpy(t->ne, ti.ne, sizeof t->ne);
    pl_status s = pl_type_row_bytes(ti.type, ti.ne[0], &t->row_bytes, err);
    if (s) return s;
    t->expert_bytes = t->row_bytes * (size_t)ti.ne[1];
    bound[i] = 1;
    m->weight_bytes += ti.n_bytes;
    m->n_params += (uint64_t)(ti.ne[0] * ti.ne[1] * ti.ne[2] * ti.ne[3]);
    if (ne2 > 1) {
        m->expert_bytes += ti.n_bytes;
        m->expert_params += (uint64_t)(ti.ne[0] * ti.ne[1] * ti.ne[2]);
    }
    return PL_OK;
}

/* A fused tensor's row ranges as tensors of their own: a gets rows [0, na), b the next nb, c
 * (when non-NULL) the rest. Views into the one mapping: counted once, bound once. */
static void split_rows(const pl_tensor *fused, pl_tensor *a, pl_tensor *b, pl_tensor *c, int64_t na,
                       int64_t nb)
{
    const pl_tensor f = *fused;
    pl_tensor *part[3] = {a, b, c};
    int64_t r0 = 0;
    for (int i = 0; i < 3 && part[i]; i++) {
        const int64_t n = i == 0 ? na : i == 1 && c ? nb : f.ne[1] - r0;
        *part[i] = f;
        part[i]->data = (const uint8_t *)f.data + (size_t)r0 * f.row_bytes;
        part[i]->ne[1] = n;
        r0 += n;
    }
}

/* One row of the architecture table: per layer (l >= 0, "blk.l." + suffix) or global. */
static pl_status bind_row(pl_model *m, uint8_t *bound, const pl_arch_tensor *row, int64_t l,
                          pl_tensor *t, const pl_arch_dims *d, pl_error *err)
{
    char name[96];
    if (l >= 0)
        snprintf(name, sizeof name, "blk.%lld.%s", (long long)l, row->gguf);
    else
        snprintf(name, sizeof name, "%s", row->gguf);
    int required;
    if (!pl_arch_row_applies(row, d->X, &required)) return PL_OK; /* left unbound: refused */
    const int64_t ne2 = row->ne2 == PL_DIM_1 ? 1 : pl_arch_dim(d, row->ne2);
    pl_status s = bind(m, bound, t, name, row->ne1 == PL_DIM_1, pl_arch_dim(d, row->ne0),
                       pl_arch_dim(d, row->ne1), ne2, required, err);
    /* a bias is F32 also as a matrix (gpt-oss's per-expert biases, one row per expert) */
    if (!s && t->data && row->kind == PL_TK_BIAS && t->type != PL_TYPE_F32)
        return pl_fail(err, PL_ERR_TYPE, "tensor '%s' has type %s, expected F32", name,
                       pl_type_name(t->type));
    return s;
}

static pl_status bind_tensors(pl_model *m, uint8_t *bound, pl_error *err)
{
    const pl_hparams *hp = &m->hp;
    const pl_arch *a = hp->arch;
    pl_arch_dims d = {.E = hp->n_embd,
                      .V = hp->n_vocab,
                      .D = hp->head_dim,
                      .n_rot = hp->n_rot,
                      .FX = hp->n_ff_exp,
                      .FS = hp->n_ff_shexp,
                      .X = hp->n_expert};
    pl_status s;
    for (size_t i = 0; i < a->n_globals; i++)
        if ((s = bind_row(m, bound, &a->globals[i], -1, &m->g[a->globals[i].role], &d, err)))
            return s;
    for (int64_t l = 0; l < hp->n_layer; l++) {
        pl_layer *L = &m->layers[l];
        d.F = L->n_ff;
        d.H = L->n_head;
        d.Hkv = L->n_head_kv;
        for (size_t i = 0; i < a->n_layer; i++) {
            const pl_arch_tensor *row = &a->layer[i];
            if ((s = bind_row(m, bound, row, l, &L->t[row->role], &d, err))) return s;
            if (row->split == PL_SPLIT_QKV)
                split_rows(&L->t[row->role], L->t + PL_L_WQ, L->t + PL_L_WK, L->t + PL_L_WV,
                           L->n_head * d.D, L->n_head_kv * d.D);
            else if (row->split == PL_SPLIT_GATE_UP)
                split_rows(&L->t[row->role], L->t + PL_L_GATE, L->t + PL_L_UP, NULL, L->n_ff, 0);
        }
    }
    if (!m->output.data) {
        m->output = m->tok_embd;
        m->tied = 1;
    }
    /* every tensor of the file has a role: an unused one means the file computes something
     * plumb would leave out */
    for (uint64_t i = 0; i < pl_gguf_n_tensors(m->gguf); i++) {
        if (bound[i]) continue;
        pl_tensor_info ti;
        pl_gguf_tensor(m->gguf, i, &ti, NULL);
        return pl_fail(err, PL_ERR_UNSUPPORTED, "tensor '%.*s' has no role in architecture '%s'",
                       (int)(ti.name.len > 96 ? 96 : ti.name.len), ti.name.ptr, a->name);
    }
    return PL_OK;
}

static pl_status bind_arch(pl_model *m, pl_error *err)
{
    const pl_gguf *g = m->gguf;
    pl_str an;
    if (pl_gguf_find_key(g, "general.architecture") < 0 && pl_gguf_n_tensors(g) == 0 &&
        pl_gguf_find_key(g, "tokenizer.ggml.model") >= 0)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "the file holds only a tokenizer (a vocabulary-only GGUF: no "
                       "general.architecture, no tensors): `plumb tokenize -m` reads it, but "
                       "there is no model to run");
    pl_status s = pl_gguf_get_string(g, "general.architecture", &an, err);
    if (s) return s;
    pl_hparams *hp = &m->hp;
    hp->arch = pl_arch_find(an.ptr, an.len);
    if (!hp->arch)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "general.architecture '%.*s' is not supported (plumb runs %s)",
                       (int)(an.len > 40 ? 40 : an.len), an.ptr, pl_arch_names());
    const char *arch = hp->arch->name;
    if ((s = check_keys(g, arch, 0, err))) return s;

    hp_read r;
    memset(&r, 0, sizeof r);
    snprintf(r.arch, sizeof r.arch, "%s", arch);
    size_t n_keys;
    const pl_arch_key *keys = pl_arch_keys(&n_keys);
    for (size_t i = 0; i < n_keys; i++) /* a common key the architecture redefines: its own */
        if (pl_arch_key_of_arch(hp->arch, keys[i].hp) == &keys[i] &&
            (s = read_key(g, &keys[i], &r, err)))
            return s;
    for (size_t i = 0; i < hp->arch->n_keys; i++)
        if ((s = read_key(g, &hp->arch->keys[i], &r, err))) return s;
    if ((s = check_values(&r, err))) return s;
    hp->n_embd = (int64_t)r.v[PL_HP_EMBEDDING_LENGTH];
    hp->n_expert = (int64_t)r.v[PL_HP_EXPERT_COUNT];
    hp->n_expert_used = (int64_t)r.v[PL_HP_EXPERT_USED_COUNT];
    hp->n_layer = (int64_t)r.v[PL_HP_BLOCK_COUNT];
    hp->n_ctx_train = (int64_t)r.v[PL_HP_CONTEXT_LENGTH];
    hp->rms_eps = (float)r.v[PL_HP_RMS_EPS];
    hp->rope_base = (float)r.v[PL_HP_ROPE_FREQ_BASE];

    m->layers = pl_calloc((size_t)hp->n_layer, sizeof *m->layers);
    int64_t *tmp = pl_calloc((size_t)hp->n_layer * 3, sizeof *tmp);
    if (!m->layers || !tmp) {
        pl_free(tmp);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %lld layers", (long long)hp->n_layer);
    }
    int64_t *heads = tmp, *heads_kv = tmp + hp->n_layer, *ff = tmp + 2 * hp->n_layer;
    if ((s = read_per_layer(g, &r, PL_HP_HEAD_COUNT, hp->n_layer, NULL, heads, err)) ||
        (s = read_per_layer(g, &r, PL_HP_FEED_FORWARD_LENGTH, hp->n_layer, NULL, ff, err)) ||
        (s = read_per_layer(g, &r, PL_HP_HEAD_COUNT_KV, hp->n_layer, heads, heads_kv, err))) {
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
    if (hp->n_expert) { /* Mixtral's experts are feed_forward_length wide */
        hp->n_ff_exp =
            r.present[PL_HP_EXPERT_FF_LENGTH] ? (int64_t)r.v[PL_HP_EXPERT_FF_LENGTH] : ff[0];
        hp->n_ff_shexp = r.present[PL_HP_EXPERT_SHARED_FF_LENGTH]
                             ? (int64_t)r.v[PL_HP_EXPERT_SHARED_FF_LENGTH]
                             : ff[0];
        if (hp->n_ff_exp > hp->max_ff) hp->max_ff = hp->n_ff_exp;
        if (hp->n_ff_shexp > hp->max_ff) hp->max_ff = hp->n_ff_shexp;
    }
    pl_free(tmp);

    if (r.present[PL_HP_KEY_LENGTH])
        hp->head_dim = (int64_t)r.v[PL_HP_KEY_LENGTH];
    else if (hp->n_embd % m->layers[0].n_head == 0)
        hp->head_dim = hp->n_embd / m->layers[0].n_head;
    else
        return pl_fail(err, PL_ERR_NOT_FOUND,
                       "required metadata key '%s.attention.key_length' is missing (n_embd %lld "
                       "is not a multiple of head_count %lld)",
                       arch, (long long)hp->n_embd, (long long)m->layers[0].n_head);
    if (hp->head_dim < 2)
        return pl_fail(err, PL_ERR_FORMAT, "%s: head dimension %lld must be >= 2", arch,
                       (long long)hp->head_dim);
    int64_t vlen = r.present[PL_HP_VALUE_LENGTH] ? (int64_t)r.v[PL_HP_VALUE_LENGTH] : hp->head_dim;
    if (vlen != hp->head_dim)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s.attention.value_length %lld differs from key_length %lld", arch,
                       (long long)vlen, (long long)hp->head_dim);
    hp->n_rot = r.present[PL_HP_ROPE_DIMS] ? (int64_t)r.v[PL_HP_ROPE_DIMS] : hp->head_dim;
    if (hp->n_rot > hp->head_dim)
        return pl_fail(err, PL_ERR_FORMAT, "%s.rope.dimension_count = %lld is outside [2, %lld]",
                       arch, (long long)hp->n_rot, (long long)hp->head_dim);
    if (hp->n_rot % 2 != 0)
        return pl_fail(err, PL_ERR_FORMAT, "%s.rope.dimension_count = %lld must be even", arch,
                       (long long)hp->n_rot);
    if (hp->arch->recipe.full_rotary && hp->n_rot != hp->head_dim)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s.rope.dimension_count = %lld: %s rotates the whole head (%lld)", arch,
                       (long long)hp->n_rot, arch, (long long)hp->head_dim);

    /* The vocabulary size comes from the embedding table itself. */
    int64_t ti = pl_gguf_find_tensor(g, "token_embd.weight");
    if (ti < 0) return pl_fail(err, PL_ERR_NOT_FOUND, "tensor 'token_embd.weight' is missing");
    pl_tensor_info info;
    pl_gguf_tensor(g, (uint64_t)ti, &info, NULL);
    hp->n_vocab = info.n_dims == 2 ? info.ne[1] : 0;
    if (hp->n_vocab < 1 || hp->n_vocab > MAX_VOCAB)
        return pl_fail(err, PL_ERR_FORMAT, "token_embd.weight: vocab size %lld outside [1, %d]",
                       (long long)hp->n_vocab, MAX_VOCAB);
    if (r.present[PL_HP_VOCAB_SIZE] && (int64_t)r.v[PL_HP_VOCAB_SIZE] != hp->n_vocab)
        return pl_fail(err, PL_ERR_FORMAT, "%s.vocab_size %lld != token_embd.weight rows %lld",
                       arch, (long long)r.v[PL_HP_VOCAB_SIZE], (long long)hp->n_vocab);

    uint8_t *bound = pl_calloc((size_t)pl_gguf_n_tensors(g) + 1, 1);
    if (!bound) return pl_fail(err, PL_ERR_NOMEM, "no memory for the tensor list");
    s = bind_tensors(m, bound, err);
    pl_free(bound);
    if (s || (s = read_rope(m, &r, err))) return s;
    return read_block(m, &r, err);
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
    if (!s) s = pl_model_compile_chat_template(m, err);
    if (!s && m->vocab_only) s = check_keys(g, "", 1, err);
    if (!s && !m->vocab_only) s = bind_arch(m, err);
    /* llama.cpp allows padded embedding tables (rows >= tokens); fewer rows than tokens would
     * let a valid token id index past the table. */
    if (!s && !m->vocab_only && m->tok && (int64_t)m->tok->n_vocab > m->hp.n_vocab)
        s = pl_fail(err, PL_ERR_FORMAT,
                    "tokenizer has %lld tokens but token_embd.weight only %lld rows",
                    (long long)m->tok->n_vocab, (long long)m->hp.n_vocab);
    if (!s && !m->vocab_only)
        s = params && params->kernels ? pl_kernels_init(&m->kt, params->kernels, err)
                                      : pl_kernels_init_env(&m->kt, err);
    if (!s && !m->vocab_only && !(params && (params->flags & PL_MODEL_NO_REPACK)))
        s = pl_model_repack(m, err);
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
    pl_model_free_chat_template(m);
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
    snprintf(out->arch, sizeof out->arch, "%s", hp->arch->name);
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
    out->n_expert = hp->n_expert;
    out->n_expert_used = hp->n_expert_used;
    /* a token reads U of the X experts of each stacked tensor (equal sizes), one embedding row */
    const uint64_t X = hp->n_expert ? (uint64_t)hp->n_expert : 1,
                   U = hp->n_expert ? (uint64_t)hp->n_expert_used : 1;
    out->n_active_params = m->n_params - m->expert_params + m->expert_params / X * U;
    out->step_weight_bytes = m->weight_bytes - m->expert_bytes + m->expert_bytes / X * U;
    if (!m->tied)
        out->step_weight_bytes -= m->tok_embd.row_bytes * ((uint64_t)m->tok_embd.ne[1] - 1);
    snprintf(out->kernels, sizeof out->kernels, "%s", m->kt.k.name);
    snprintf(out->repack_set, sizeof out->repack_set, "%s", m->repack_set);
    out->n_repacked = m->n_repacked;
    out->repack_bytes = m->packed_bytes;
    out->repack_ms = m->repack_ms;
    return pl_ok(err);
}

pl_status pl_kernel_set_check(const char *name, pl_error *err)
{
    if (!name || !*name)
        return pl_fail(err, PL_ERR_INVALID_ARG, "kernel set name is NULL or empty");
    const struct pl_kernels *set;
    return pl_kernels_select(&set, name, err);
}
