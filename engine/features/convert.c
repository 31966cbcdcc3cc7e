/* convert.c — a Hugging Face model directory (config.json, safetensors weights, tokenizer.json,
 * tokenizer_config.json, generation_config.json) -> GGUF in llama.cpp's key and tensor names.
 * Not a reader of weights (safetensors.c) nor a quantizer (quantize.c): it maps and permutes.
 *
 * Dimension legend: E n_embd, L layers, H query heads, Hkv KV heads, D head dim, F n_ff,
 * V embedding rows. HF matrices are [out, in] row-major, which is GGUF's ne = {in, out}. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"
#include "convert_spm.h"
#include "hf_util.h"
#include "pretok_id.h"
#include "types.h"
#include "runtime/arch.h"
#include "spm_model.h"

#define MAX_JSON_FILE (256u << 20) /* tokenizer.json of a 256k vocabulary is ~10 MB */

/* GGUF token types (tokenizer.ggml.token_type), llama.cpp's numbers. */
enum {
    TT_NORMAL = 1,
    TT_UNKNOWN = 2,
    TT_CONTROL = 3,
    TT_USER_DEFINED = 4,
    TT_UNUSED = 5,
    TT_BYTE = 6
};

typedef struct hf_config {
    const pl_arch *arch; /* the architecture table's row (runtime/arch.c) */
    int64_t E, F, L, H, Hkv, D, ctx, V;
    double rms_eps, rope_theta;
    int tied;
    int64_t bos_id, eos_id; /* from config.json, -1 when absent */
    /* RoPE scaling (rope_scaling, or transformers 5's rope_parameters) */
    enum { ROPE_NONE, ROPE_LINEAR, ROPE_YARN, ROPE_LLAMA3, ROPE_LONGROPE } rope;
    int64_t n_rot;                           /* rotated dims per head (partial_rotary_factor) */
    double rope_factor, rope_low, rope_high; /* llama3: low/high_freq_factor */
    double rope_attn;                        /* longrope: cos and sin times it */
    float *rope_long, *rope_short;           /* longrope: n_rot / 2 divisors each (owned) */
    double rope_beta_fast, rope_beta_slow;   /* yarn; 0: llama.cpp's defaults (32, 1) */
    int rope_no_truncate;  /* yarn with truncate = false: the correction range unrounded */
    int64_t rope_orig_ctx; /* original_max_position_embeddings */
    /* the recipe's own keys (Gemma): soft-caps (0: none) and the local layers' window */
    double attn_cap, final_cap;
    int64_t window;
    /* mixture of experts (X 0: dense): experts, used per token, their FFN width, the shared
     * expert's (qwen2moe) */
    int64_t X, U, FX, FS;
    int mxfp4; /* quantization_config.quant_method "mxfp4": experts as _blocks and _scales */
    /* the values written under "<arch>." (the table's rows: read or derived from config.json) */
    pl_arch_values v;
} hf_config;

/* One JSON file of the model directory. */
typedef struct jfile {
    const char *name; /* "config.json" */
    json_t *root;     /* NULL when the file is absent and optional */
} jfile;

typedef struct ctensor {
    char name[96];           /* GGUF name */
    const pl_st_tensor *src; /* HF tensor */
    const pl_st_tensor **xs; /* stacked experts: ne[2] HF tensors, one per expert (owned) */
    int64_t ne[3];           /* GGUF shape; ne[1] = 1 for vectors, ne[2] = 1 unless stacked */
    uint32_t n_dims;
    int64_t permute_heads; /* > 0: llama's q/k row permutation over this many heads */
    pl_type type;          /* output type */
    float *computed;       /* non-NULL: F32 values computed from config.json (src NULL) */
    int add_one;           /* a Gemma norm: GGUF stores the multiplier 1 + w */
    /* gpt-oss's fused experts (transformers 5): src [X, in, out * stride] (one matrix per expert,
     * transposed), or its MXFP4 pair src = _blocks [X, out * stride, in/32, 16], scales =
     * _scales [X, out * stride, in/32]; or a bias [X, out * stride] (ne[1] = X). Output o is
     * HF's o * stride + off (gate_up's interleaved gate: stride 2, off 0; up: off 1). */
    int fused;                  /* 0: none, else FUSED_* */
    const pl_st_tensor *scales; /* FUSED_MXFP4 */
    int64_t stride, off;
} ctensor;
enum { FUSED_DENSE = 1, FUSED_MXFP4, FUSED_BIAS };

typedef struct cjob {
    ctensor *t;
    uint64_t n;
    float *f32;   /* the largest tensor, as F32 */
    float *tmp;   /* the largest permuted tensor, before its permutation */
    void *staged; /* the largest tensor's source bytes, aligned */
    uint64_t done, total;
    const pl_convert_params *p;
} cjob;

/* ---- JSON ---------------------------------------------------------------------------------- */

/* Reads dir/name into f. Absent and optional: f->root NULL, PL_OK. flags: extra jansson
 * decoding flags. */
static pl_status read_json(jfile *f, const char *dir, const char *name, int required, size_t flags,
                           pl_error *err)
{
    f->name = name;
    f->root = NULL;
    char *path = pl_join_path(dir, name);
    if (!path) return pl_fail(err, PL_ERR_NOMEM, "no memory for a path");
    struct stat sb;
    if (stat(path, &sb) != 0) {
        pl_free(path);
        return required ? pl_fail(err, PL_ERR_NOT_FOUND, "%s: %s is missing", dir, name) : PL_OK;
    }
    pl_mapping m;
    pl_status s = pl_map_file(&m, path, err);
    pl_free(path);
    if (s) return s;
    if (m.size > MAX_JSON_FILE) {
        pl_unmap_file(&m);
        return pl_fail(err, PL_ERR_LIMIT, "%s: %zu bytes, over the limit %u", name, m.size,
                       MAX_JSON_FILE);
    }
    json_error_t je;
    f->root = json_loadb(m.data, m.size, JSON_REJECT_DUPLICATES | flags, &je);
    pl_unmap_file(&m);
    if (!f->root)
        return pl_fail(err, PL_ERR_FORMAT, "%s: not valid JSON: %s (line %d, column %d)", name,
                       je.text, je.line, je.column);
    if (!json_is_object(f->root)) {
        s = pl_fail(err, PL_ERR_FORMAT, "%s: %s, not a JSON object", name, pl_json_kind(f->root));
        json_decref(f->root);
        f->root = NULL;
    }
    return s;
}

/* An integer field in [lo, hi]; absent: def (or PL_ERR_NOT_FOUND when def < lo). */
static pl_status get_int(const jfile *f, const char *key, int64_t lo, int64_t hi, int64_t def,
                         int64_t *out, pl_error *err)
{
    const json_t *v = f->root ? json_object_get(f->root, key) : NULL;
    if (!v || json_is_null(v)) {
        if (def < lo) return pl_fail(err, PL_ERR_NOT_FOUND, "%s: '%s' is missing", f->name, key);
        *out = def;
        return PL_OK;
    }
    if (!json_is_integer(v))
        return pl_fail(err, PL_ERR_TYPE, "%s: '%s' is %s, not an integer", f->name, key,
                       pl_json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return pl_fail(err, PL_ERR_LIMIT, "%s: '%s' = %lld is not in %lld..%lld", f->name, key,
                       (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return PL_OK;
}

static pl_status get_num(const jfile *f, const char *key, double def, double *out, pl_error *err)
{
    const json_t *v = json_object_get(f->root, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return PL_OK;
    }
    if (!json_is_number(v))
        return pl_fail(err, PL_ERR_TYPE, "%s: '%s' is %s, not a number", f->name, key,
                       pl_json_kind(v));
    *out = json_number_value(v);
    if (!(*out > 0.0) || *out > 1e30)
        return pl_fail(err, PL_ERR_LIMIT, "%s: '%s' = %g must be positive and finite", f->name, key,
                       *out);
    return PL_OK;
}

static pl_status get_bool(const jfile *f, const char *key, int def, int *out, pl_error *err)
{
    const json_t *v = f->root ? json_object_get(f->root, key) : NULL;
    if (!v || json_is_null(v)) {
        *out = def;
        return PL_OK;
    }
    if (!json_is_boolean(v))
        return pl_fail(err, PL_ERR_TYPE, "%s: '%s' is %s, not a boolean", f->name, key,
                       pl_json_kind(v));
    *out = json_is_true(v);
    return PL_OK;
}

/* A token id, or the first of a list of them (generation_config's eos_token_id may be a
 * list); -1 when absent. */
static pl_status get_token_id(const jfile *f, const char *key, int64_t *out, pl_error *err)
{
    *out = -1;
    const json_t *v = f->root ? json_object_get(f->root, key) : NULL;
    if (v && json_is_array(v)) v = json_array_size(v) ? json_array_get(v, 0) : NULL;
    if (!v || json_is_null(v)) return PL_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return pl_fail(err, PL_ERR_TYPE, "%s: '%s' is %s, not a token id", f->name, key,
                       pl_json_kind(v));
    *out = json_integer_value(v);
    return PL_OK;
}

/* ---- config.json --------------------------------------------------------------------------- */

/* A number of the RoPE object o (config.json's `field`); def when absent (NAN: required). */
static pl_status rope_num(const jfile *f, const char *field, const json_t *o, const char *key,
                          double def, double *out, pl_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (isnan(def))
            return pl_fail(err, PL_ERR_NOT_FOUND, "%s: %s: '%s' is missing", f->name, field, key);
        *out = def;
        return PL_OK;
    }
    if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1e12)
        return pl_fail(err, PL_ERR_TYPE, "%s: %s: '%s' must be a positive number", f->name, field,
                       key);
    *out = json_number_value(v);
    return PL_OK;
}

static int has_global(const pl_arch *a, int role)
{
    for (size_t i = 0; i < a->n_globals; i++)
        if (a->globals[i].role == role) return 1;
    return 0;
}

/* One of longrope's factor lists: n positive finite numbers, into a new float array. */
static pl_status rope_list(const jfile *f, const char *field, const json_t *o, const char *key,
                           int64_t n, float **out, pl_error *err)
{
    const json_t *a = json_object_get(o, key);
    if (!json_is_array(a) || json_array_size(a) != (size_t)n)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: %s.%s must be a list of %lld numbers (one per rotated pair)", f->name,
                       field, key, (long long)n);
    float *v = pl_malloc((size_t)n * sizeof *v);
    if (!v) return pl_fail(err, PL_ERR_NOMEM, "no memory for %s", key);
    for (int64_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(a, (size_t)i);
        const double d = json_is_number(x) ? json_number_value(x) : -1;
        if (!(d > 0 && d < 1e12)) {
            pl_free(v);
            return pl_fail(err, PL_ERR_FORMAT, "%s: %s.%s[%lld] must be a positive number", f->name,
                           field, key, (long long)i);
        }
        v[i] = (float)d;
    }
    *out = v;
    return PL_OK;
}

/* Phi-3's longrope (also spelled "su"): the short and long divisors become
 * rope_factors_short/long.weight, and cos/sin are scaled by transformers' attention factor
 * (given, or sqrt(1 + ln(s) / ln(original)) for s = max_position_embeddings / original > 1). */
static pl_status read_longrope(hf_config *c, const jfile *f, const char *field, const json_t *o,
                               pl_error *err)
{
    double orig, af;
    pl_status s;
    const json_t *top = json_object_get(f->root, "original_max_position_embeddings");
    const double orig_def = json_is_number(top) ? json_number_value(top) : NAN;
    if ((s = rope_num(f, field, o, "original_max_position_embeddings", orig_def, &orig, err)))
        return s;
    const double scale = (double)c->ctx / orig;
    const double af_def = scale > 1 ? sqrt(1 + log(scale) / log(orig)) : 1.0;
    if ((s = rope_num(f, field, o, "attention_factor", af_def, &af, err))) return s;
    if ((s = rope_list(f, field, o, "long_factor", c->n_rot / 2, &c->rope_long, err)) ||
        (s = rope_list(f, field, o, "short_factor", c->n_rot / 2, &c->rope_short, err)))
        return s;
    c->rope = ROPE_LONGROPE;
    c->rope_orig_ctx = (int64_t)orig;
    c->rope_attn = af;
    return PL_OK;
}

/* The rotated dimensions: partial_rotary_factor of the head, an even count (transformers:
 * int(head_dim * factor)); the whole head where the recipe says so. */
static pl_status set_rotary(hf_config *c, const jfile *f, double partial, pl_error *err)
{
    const int64_t n = (int64_t)((double)c->D * partial);
    if (!(partial > 0 && partial <= 1) || n < 2 || n % 2 != 0)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: partial_rotary_factor %g of head_dim %lld is not an even number of "
                       "rotated dims",
                       f->name, partial, (long long)c->D);
    if (c->arch->recipe.full_rotary && n != c->D)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: partial_rotary_factor %g: %s rotates the whole head", f->name, partial,
                       c->arch->name);
    c->n_rot = n;
    return PL_OK;
}

/* rope_scaling (the Hub's spelling, rope_theta beside it) or rope_parameters (transformers 5,
 * rope_theta inside): none/default, linear, yarn and llama3 (llama only: its frequency
 * divisors become rope_freqs.weight, as llama.cpp's converter writes them). Anything else, or
 * a field that changes the math in a way llama.cpp's keys cannot say, is refused by name. */
static pl_status read_rope(hf_config *c, const jfile *f, pl_error *err)
{
    pl_status s;
    const json_t *o = json_object_get(f->root, "rope_scaling");
    const char *field = "rope_scaling";
    if (!o || json_is_null(o)) {
        o = json_object_get(f->root, "rope_parameters");
        field = "rope_parameters";
        /* Gemma 3 in transformers 5: one object per layer type; the global layers' here */
        const json_t *full = json_is_object(o) ? json_object_get(o, "full_attention") : NULL;
        if (full) {
            o = full;
            field = "rope_parameters.full_attention";
        }
    }
    c->rope = ROPE_NONE;
    /* partial rotary (Phi-4-mini's 0.75): top level, or inside rope_parameters */
    double partial;
    if ((s = get_num(f, "partial_rotary_factor", 1.0, &partial, err))) return s;
    if (json_is_object(o) && json_object_get(o, "partial_rotary_factor") &&
        (s = rope_num(f, field, o, "partial_rotary_factor", partial, &partial, err)))
        return s;
    if ((s = set_rotary(c, f, partial, err))) return s;
    if (!o || json_is_null(o)) return PL_OK;
    if (!json_is_object(o))
        return pl_fail(err, PL_ERR_TYPE, "%s: %s is %s, not an object", f->name, field,
                       pl_json_kind(o));
    if (json_object_get(o, "rope_theta") &&
        (s = rope_num(f, field, o, "rope_theta", c->rope_theta, &c->rope_theta, err)))
        return s;
    const json_t *t = json_object_get(o, "rope_type");
    if (!t || json_is_null(t)) t = json_object_get(o, "type");
    const char *type = json_is_string(t) ? json_string_value(t) : "default";
    if (t && !json_is_null(t) && !json_is_string(t))
        return pl_fail(err, PL_ERR_TYPE, "%s: %s.rope_type is %s, not a string", f->name, field,
                       pl_json_kind(t));
    if (strcmp(type, "default") == 0) return PL_OK;
    c->rope_orig_ctx = 0;
    if (strcmp(type, "linear") == 0) {
        c->rope = ROPE_LINEAR;
        return rope_num(f, field, o, "factor", NAN, &c->rope_factor, err);
    }
    double orig;
    /* llama3: where the architecture has rope_freqs.weight to carry its divisors */
    if (strcmp(type, "llama3") == 0 && has_global(c->arch, PL_G_ROPE_FREQS)) {
        c->rope = ROPE_LLAMA3;
        if ((s = rope_num(f, field, o, "factor", NAN, &c->rope_factor, err)) ||
            (s = rope_num(f, field, o, "low_freq_factor", NAN, &c->rope_low, err)) ||
            (s = rope_num(f, field, o, "high_freq_factor", NAN, &c->rope_high, err)) ||
            (s = rope_num(f, field, o, "original_max_position_embeddings", NAN, &orig, err)))
            return s;
        if (!(c->rope_high > c->rope_low))
            return pl_fail(err, PL_ERR_FORMAT,
                           "%s: %s: high_freq_factor %g must exceed low_freq_factor %g", f->name,
                           field, c->rope_high, c->rope_low);
        c->rope_orig_ctx = (int64_t)orig;
        return PL_OK;
    }
    if (strcmp(type, "yarn") == 0) {
        c->rope = ROPE_YARN;
        if ((s = rope_num(f, field, o, "factor", NAN, &c->rope_factor, err)) ||
            (s = rope_num(f, field, o, "original_max_position_embeddings", (double)c->ctx, &orig,
                          err)) ||
            (s = rope_num(f, field, o, "beta_fast", 32, &c->rope_beta_fast, err)) ||
            (s = rope_num(f, field, o, "beta_slow", 1, &c->rope_beta_slow, err)))
            return s;
        c->rope_orig_ctx = (int64_t)orig;
        /* what llama.cpp's rope computes: cos and sin times 0.1 ln(factor) + 1, the ramp
         * between floor/ceil of the correction dims */
        double af;
        if ((s = rope_num(f, field, o, "attention_factor", 0.1 * log(c->rope_factor) + 1, &af,
                          err)))
            return s;
        const json_t *tr = json_object_get(o, "truncate");
        if (fabs(af - (0.1 * log(c->rope_factor) + 1)) > 1e-6 || json_object_get(o, "mscale") ||
            json_object_get(o, "mscale_all_dim"))
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: %s: yarn with attention_factor or mscale is not what plumb's (and "
                           "llama.cpp's) yarn computes",
                           f->name, field);
        if (tr && !json_is_boolean(tr))
            return pl_fail(err, PL_ERR_TYPE, "%s: %s.truncate is %s, not a boolean", f->name, field,
                           pl_json_kind(tr));
        /* truncate = false (gpt-oss): the range unrounded, in plumb's own key */
        c->rope_no_truncate = tr && json_is_false(tr);
        return PL_OK;
    }
    if ((strcmp(type, "longrope") == 0 || strcmp(type, "su") == 0) && c->arch->n_globals &&
        has_global(c->arch, PL_G_ROPE_LONG))
        return read_longrope(c, f, field, o, err);
    return pl_fail(err, PL_ERR_UNSUPPORTED,
                   "%s: %s.rope_type '%.32s' is not one plumb converts for %s (default, linear, "
                   "yarn%s)",
                   f->name, field, type, c->arch->name,
                   has_global(c->arch, PL_G_ROPE_FREQS)  ? ", llama3"
                   : has_global(c->arch, PL_G_ROPE_LONG) ? ", longrope"
                                                         : "");
}

/* The settings of architectures with local layers: tied embeddings where the table has no
 * output.weight (Gemma), the soft-caps and the local window as keys (Phi-3: null is none), the
 * attention scale llama.cpp will apply (query_pre_attn_scalar must be it), the layer period,
 * and Gemma 3's per-layer-type RoPE (local layers: base 10000, unscaled). */
static pl_status read_local(hf_config *c, const jfile *f, pl_error *err)
{
    const pl_arch_recipe *rc = &c->arch->recipe;
    pl_status s;
    c->window = 0;
    c->attn_cap = c->final_cap = 0;
    if (!rc->swa_period) return PL_OK;
    if (!has_global(c->arch, PL_G_OUTPUT)) {
        int tied;
        if ((s = get_bool(f, "tie_word_embeddings", 1, &tied, err))) return s;
        if (!tied)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: tie_word_embeddings is false; %s has no output.weight", f->name,
                           c->arch->name);
        c->tied = 1;
    }
    const json_t *sw = json_object_get(f->root, "sliding_window");
    if (rc->window_optional && (!sw || json_is_null(sw)))
        c->window = 0; /* none: every layer global (EXAONE 4) */
    else if ((s = get_int(f, "sliding_window", rc->window_by_shape ? 0 : 1, INT32_MAX,
                          rc->window_by_shape ? 0 : -1, &c->window, err)))
        return s;
    double qpas;
    const pl_arch_quirk_model qm = {
        .n_layer = c->L, .n_ctx = c->ctx, .n_head = c->H, .n_head_kv = c->Hkv};
    const double scale_dim = pl_arch_quirk_of(c->arch, PL_QUIRK_ATTN_SCALE_EMBD, &qm)
                                 ? (double)(c->E / c->H)
                                 : (double)c->D;
    if ((s = get_num(f, "query_pre_attn_scalar", scale_dim, &qpas, err))) return s;
    if (qpas != scale_dim)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: query_pre_attn_scalar %g: llama.cpp's %s scales by 1/sqrt(%g) for %lld "
                       "layers, and GGUF has no key to say otherwise",
                       f->name, qpas, c->arch->name, scale_dim, (long long)c->L);
    int64_t period;
    const json_t *pat = json_object_get(f->root, "sliding_window_pattern");
    if (json_is_string(pat)) { /* EXAONE 4: "LLLG", repeated; the last layer global */
        const char *p = json_string_value(pat);
        const size_t n = strlen(p);
        for (int64_t l = 0; l < c->L && c->window > 0; l++) {
            const int local = n > 0 && p[l % (int64_t)n] == 'L' && l != c->L - 1;
            if (n == 0 || local != pl_arch_layer_is_local(c->arch, l))
                return pl_fail(err, PL_ERR_UNSUPPORTED,
                               "%s: sliding_window_pattern '%.32s' makes layer %lld %s; %s's is "
                               "%d layers, the last of them global",
                               f->name, p, (long long)l, local ? "local" : "global", c->arch->name,
                               rc->swa_period);
        }
        pat = NULL;
    }
    if (pat && (s = get_int(f, "sliding_window_pattern", 1, 4096, rc->swa_period, &period, err)))
        return s;
    if (!pat) period = rc->swa_period;
    if (period != rc->swa_period && rc->swa_period > 1)
        return pl_fail(err, PL_ERR_UNSUPPORTED, "%s: sliding_window_pattern %lld: %s's is %d",
                       f->name, (long long)period, c->arch->name, rc->swa_period);
    const int has_attn_cap = pl_arch_key_of_arch(c->arch, PL_HP_ATTN_SOFTCAP) != NULL;
    const json_t *ac = json_object_get(f->root, "attn_logit_softcapping");
    if (ac && !json_is_null(ac) && !has_attn_cap)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: attn_logit_softcapping is set; %s caps no "
                       "attention scores",
                       f->name, c->arch->name);
    if ((has_attn_cap && (s = get_num(f, "attn_logit_softcapping", 0, &c->attn_cap, err))) ||
        (s = get_num(f, "final_logit_softcapping", 0, &c->final_cap, err)))
        return s;
    /* transformers 5 keeps Gemma 3's RoPE per layer type: the local layers' must be the recipe's */
    const json_t *rp = json_object_get(f->root, "rope_parameters");
    const json_t *loc = json_is_object(rp) ? json_object_get(rp, "sliding_attention") : NULL;
    double lbase = rc->swa_rope_base;
    if (loc) {
        const json_t *t = json_object_get(loc, "rope_type");
        jfile sub = {"config.json: rope_parameters.sliding_attention", (json_t *)loc};
        if ((t && !(json_is_string(t) && strcmp(json_string_value(t), "default") == 0)) ||
            (s = get_num(&sub, "rope_theta", 10000.0, &lbase, err)))
            return s ? s
                     : pl_fail(err, PL_ERR_UNSUPPORTED,
                               "%s: the local layers' RoPE is scaled; "
                               "llama.cpp's %s scales only the global layers'",
                               f->name, c->arch->name);
    } else if ((s = get_num(f, "rope_local_base_freq", lbase ? lbase : c->rope_theta, &lbase,
                            err))) {
        return s;
    }
    if (lbase != (rc->swa_rope_base ? rc->swa_rope_base : c->rope_theta))
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: the local layers' RoPE base %g: llama.cpp's %s uses %g", f->name, lbase,
                       c->arch->name, rc->swa_rope_base ? rc->swa_rope_base : c->rope_theta);
    return PL_OK;
}

/* The layers without RoPE as config.json says them (SmolLM3's no_rope_layers: 1 rotates, 0 does
 * not; absent: every no_rope_layer_interval-th layer without) must be the recipe's
 * (pl_arch_layer_has_rope): GGUF has no key to say another pattern. */
static pl_status read_nope(hf_config *c, const jfile *f, pl_error *err)
{
    const pl_arch_recipe *rc = &c->arch->recipe;
    const json_t *nr = json_object_get(f->root, "no_rope_layers");
    if (nr && json_is_null(nr)) nr = NULL;
    if (!nr && !rc->nope_period) return PL_OK;
    if (nr && !json_is_array(nr))
        return pl_fail(err, PL_ERR_TYPE, "%s: 'no_rope_layers' is %s, not a list", f->name,
                       pl_json_kind(nr));
    if (nr && json_array_size(nr) != (size_t)c->L)
        return pl_fail(err, PL_ERR_FORMAT, "%s: no_rope_layers has %zu entries for %lld layers",
                       f->name, json_array_size(nr), (long long)c->L);
    int64_t every = 0;
    pl_status s;
    if (!nr && (s = get_int(f, "no_rope_layer_interval", 1, 4096, rc->nope_period, &every, err)))
        return s;
    for (int64_t l = 0; l < c->L; l++) {
        const json_t *e = nr ? json_array_get(nr, (size_t)l) : NULL;
        if (nr && !(json_is_integer(e) || json_is_boolean(e)))
            return pl_fail(err, PL_ERR_TYPE, "%s: no_rope_layers[%lld] is %s, not 0 or 1", f->name,
                           (long long)l, pl_json_kind(e));
        const int have = nr ? (json_is_boolean(e) ? json_is_true(e) : json_integer_value(e) != 0)
                            : (l + 1) % every != 0;
        if (have != pl_arch_layer_has_rope(c->arch, l, c->window > 0))
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: layer %lld %s RoPE (%s): llama.cpp's %s %s it, and GGUF has no key "
                           "to say otherwise",
                           f->name, (long long)l, have ? "has" : "has no",
                           nr ? "no_rope_layers" : "no_rope_layer_interval", c->arch->name,
                           have ? "does not rotate" : "rotates");
    }
    return PL_OK;
}

/* The rows of keys[0..n) whose value config.json gives as it is (PL_HF_READ), into c->v: the
 * field the row names, its default when absent (NAN: required), the key's range. A common row
 * the architecture redefines is read from the architecture's own. */
static pl_status read_hf_keys(hf_config *c, const jfile *f, const pl_arch_key *k, size_t n,
                              pl_error *err)
{
    pl_status s;
    for (size_t i = 0; i < n; i++) {
        if (k[i].hf_how != PL_HF_READ || pl_arch_key_of_arch(c->arch, k[i].hp) != &k[i]) continue;
        if (k[i].kind == PL_KEY_FLOAT) {
            double x;
            if ((s = get_num(f, k[i].hf, k[i].hf_def, &x, err))) return s;
            if (isnan(x))
                return pl_fail(err, PL_ERR_NOT_FOUND, "%s: '%s' is missing", f->name, k[i].hf);
            c->v.num[k[i].hp] = x;
        } else {
            int64_t x;
            const int64_t lo = (int64_t)k[i].lo;
            if ((s = get_int(f, k[i].hf, lo, (int64_t)k[i].hi,
                             isnan(k[i].hf_def) ? lo - 1 : (int64_t)k[i].hf_def, &x, err)))
                return s;
            c->v.num[k[i].hp] = (double)x;
        }
    }
    return PL_OK;
}

/* The experts of a mixture-of-experts class: Mixtral (num_local_experts, every layer, its
 * experts intermediate_size wide, top-k renormalised), Qwen2-MoE and Qwen3-MoE (num_experts of
 * moe_intermediate_size; Qwen2's shared expert). Only what llama.cpp's recipes compute:
 * every layer sparse, the renormalisation the recipe has. */
static pl_status read_moe(hf_config *c, const jfile *f, const char *an, pl_error *err)
{
    const int mixtral = c->arch->hf_moe_class && strcmp(an, c->arch->hf_moe_class) == 0;
    c->X = c->U = c->FX = c->FS = 0;
    if (!mixtral && c->arch->recipe.moe != PL_MOE_REQUIRED) return PL_OK;
    pl_status s;
    /* the hub's Qwen MoE configs say num_experts, Mixtral's and transformers 5's
     * num_local_experts: either, and both only when they agree; a count present is >= 1 (0
     * experts is a dense model, not this recipe) */
    int64_t nx = 0, nl = 0;
    const json_t *jx = json_object_get(f->root, "num_experts"),
                 *jl = json_object_get(f->root, "num_local_experts");
    if ((jx && !json_is_null(jx) && (s = get_int(f, "num_experts", 1, 4096, -1, &nx, err))) ||
        (jl && !json_is_null(jl) && (s = get_int(f, "num_local_experts", 1, 4096, -1, &nl, err))))
        return s;
    if (nx && nl && nx != nl)
        return pl_fail(err, PL_ERR_FORMAT, "%s: num_experts %lld and num_local_experts %lld differ",
                       f->name, (long long)nx, (long long)nl);
    c->X = nx ? nx : nl;
    if (!c->X)
        return pl_fail(err, PL_ERR_NOT_FOUND, "%s: '%s' is missing", f->name,
                       mixtral ? "num_local_experts" : "num_experts");
    if ((s = get_int(f, "num_experts_per_tok", 1, c->X < PL_MOE_MAX_USED ? c->X : PL_MOE_MAX_USED,
                     -1, &c->U, err)))
        return s;
    if (mixtral) {
        c->FX = c->F;
        return PL_OK;
    }
    int norm = 0;
    int64_t step = 1;
    /* the experts' widths: the architecture's own keys (moe_intermediate_size, and the shared
     * expert's where it has one), read with the others */
    c->FX = (int64_t)c->v.num[PL_HP_EXPERT_FF_LENGTH];
    if (!isnan(c->v.num[PL_HP_EXPERT_SHARED_FF_LENGTH]))
        c->FS = (int64_t)c->v.num[PL_HP_EXPERT_SHARED_FF_LENGTH];
    if ((s = get_int(f, "decoder_sparse_step", 1, 4096, 1, &step, err)) ||
        (s = get_bool(f, "norm_topk_prob", 0, &norm, err)))
        return s;
    if (step != 1)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: decoder_sparse_step %lld: plumb runs %s with experts in every layer",
                       f->name, (long long)step, an);
    const json_t *dense = json_object_get(f->root, "mlp_only_layers");
    if (dense && !json_is_null(dense) && !json_is_array(dense))
        return pl_fail(err, PL_ERR_TYPE, "%s: 'mlp_only_layers' is %s, not a list of layers",
                       f->name, pl_json_kind(dense));
    if (json_array_size(dense) != 0)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: mlp_only_layers is not empty: plumb runs %s with experts in every "
                       "layer",
                       f->name, an);
    if (c->arch->recipe.moe_topk_softmax) { /* gpt-oss: softmax over the chosen k, no flag */
        if (json_object_get(f->root, "norm_topk_prob"))
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: norm_topk_prob is set; %s's router softmaxes its top-k logits, "
                           "which no flag changes",
                           f->name, an);
    } else if (norm != c->arch->recipe.moe_norm)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: norm_topk_prob %s: llama.cpp's %s %s the chosen experts' weights",
                       f->name, norm ? "true" : "false", c->arch->name,
                       c->arch->recipe.moe_norm ? "renormalises" : "does not renormalise");
    return PL_OK;
}

static pl_status read_config(hf_config *c, const jfile *f, pl_error *err)
{
    const json_t *a = json_object_get(f->root, "architectures");
    if (!a) return pl_fail(err, PL_ERR_NOT_FOUND, "%s: 'architectures' is missing", f->name);
    if (!json_is_array(a) || json_array_size(a) != 1 || !json_is_string(json_array_get(a, 0)))
        return pl_fail(err, PL_ERR_TYPE, "%s: 'architectures' must be a list of one name", f->name);
    const char *an = json_string_value(json_array_get(a, 0));
    c->arch = pl_arch_find_hf(an);
    if (!c->arch)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: architecture '%.64s' is not one plumb converts (%s)", f->name, an,
                       pl_arch_hf_names());
    pl_status s;
    size_t n_keys;
    const pl_arch_key *keys = pl_arch_keys(&n_keys);
    pl_arch_values_init(&c->v);
    if ((s = read_hf_keys(c, f, keys, n_keys, err)) ||
        (s = read_hf_keys(c, f, c->arch->keys, c->arch->n_keys, err)))
        return s;
    const double *v = c->v.num;
    c->E = (int64_t)v[PL_HP_EMBEDDING_LENGTH];
    c->F = (int64_t)v[PL_HP_FEED_FORWARD_LENGTH];
    c->L = (int64_t)v[PL_HP_BLOCK_COUNT];
    c->H = (int64_t)v[PL_HP_HEAD_COUNT];
    c->ctx = (int64_t)v[PL_HP_CONTEXT_LENGTH];
    c->V = (int64_t)v[PL_HP_VOCAB_SIZE];
    c->rms_eps = v[PL_HP_RMS_EPS];
    c->rope_theta = v[PL_HP_ROPE_FREQ_BASE];
    if ((s = get_int(f, "num_key_value_heads", 1, c->H, c->H, &c->Hkv, err)) ||
        (s = get_bool(f, "tie_word_embeddings", 0, &c->tied, err)) ||
        (s = get_token_id(f, "bos_token_id", &c->bos_id, err)) ||
        (s = get_token_id(f, "eos_token_id", &c->eos_id, err)))
        return s;
    if (c->H % c->Hkv != 0)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld",
                       f->name, (long long)c->H, (long long)c->Hkv);
    int64_t def_d = c->E % c->H == 0 ? c->E / c->H : -1;
    if ((s = get_int(f, "head_dim", 2, 4096, def_d, &c->D, err))) {
        if (s == PL_ERR_NOT_FOUND)
            pl_fail(err, s,
                    "%s: hidden_size %lld is not a multiple of num_attention_heads %lld "
                    "and 'head_dim' is missing",
                    f->name, (long long)c->E, (long long)c->H);
        return s;
    }
    if (c->D % 2 != 0)
        return pl_fail(err, PL_ERR_FORMAT, "%s: head_dim %lld must be even (RoPE pairs)", f->name,
                       (long long)c->D);
    /* the gated unit's activation, under either name transformers uses */
    /* gpt-oss's config says silu; its experts compute the clamped SwiGLU whatever it says */
    const char *want_act = c->arch->recipe.act == PL_ACT_GELU_TANH ? "gelu_pytorch_tanh" : "silu";
    if (c->arch->recipe.act == PL_ACT_SWIGLU_OAI) {
        double lim;
        if ((s = get_num(f, "swiglu_limit", PL_OAI_LIMIT, &lim, err))) return s;
        if (lim != PL_OAI_LIMIT)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: swiglu_limit %g: llama.cpp's %s clamps at %g, and GGUF has no key "
                           "to say otherwise",
                           f->name, lim, c->arch->name, (double)PL_OAI_LIMIT);
    }
    /* quantized checkpoints: only gpt-oss's MXFP4 experts, which convert unpacks */
    c->mxfp4 = 0;
    const json_t *qc = json_object_get(f->root, "quantization_config");
    if (qc && !json_is_null(qc)) {
        const json_t *qm = json_is_object(qc) ? json_object_get(qc, "quant_method") : NULL;
        const char *qs = json_is_string(qm) ? json_string_value(qm) : "?";
        if (strcmp(qs, "mxfp4") != 0 || c->arch->recipe.act != PL_ACT_SWIGLU_OAI)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: quantization_config.quant_method '%.32s': plumb converts "
                           "unquantized checkpoints and gpt-oss's mxfp4 experts only",
                           f->name, qs);
        c->mxfp4 = 1;
    }
    static const char *const act_keys[] = {"hidden_act", "hidden_activation"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *act = json_object_get(f->root, act_keys[i]);
        if (act && !json_is_null(act) &&
            !(json_is_string(act) && strcmp(json_string_value(act), want_act) == 0))
            return pl_fail(err, PL_ERR_UNSUPPORTED, "%s: %s %s%.32s%s is not %s (as %s computes)",
                           f->name, act_keys[i], json_is_string(act) ? "'" : "",
                           json_is_string(act) ? json_string_value(act) : pl_json_kind(act),
                           json_is_string(act) ? "'" : "", want_act, c->arch->name);
    }
    if ((s = read_rope(c, f, err)) || (s = read_local(c, f, err)) || (s = read_nope(c, f, err)))
        return s;
    /* every layer's attention as the recipe places it: local layers only where it has them */
    const json_t *lt = json_object_get(f->root, "layer_types");
    for (size_t i = 0; json_is_array(lt) && i < json_array_size(lt); i++) {
        const json_t *e = json_array_get(lt, i);
        /* no window (EXAONE 4's null): every layer global */
        const int local = pl_arch_layer_is_local(c->arch, (int64_t)i) &&
                          !(c->arch->recipe.window_optional && c->window == 0);
        const char *want = local ? "sliding_attention" : "full_attention";
        if (!json_is_string(e) || strcmp(json_string_value(e), want) != 0)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: layer_types[%zu] is not \"%s\", the layer pattern %s has", f->name,
                           i, want, c->arch->name);
    }
    if (json_is_array(lt) && json_array_size(lt) != (size_t)c->L)
        return pl_fail(err, PL_ERR_FORMAT, "%s: layer_types has %zu entries for %lld layers",
                       f->name, json_array_size(lt), (long long)c->L);
    if ((s = read_moe(c, f, an, err))) return s;
    int flag;
    /* attention_bias: where the table requires the q/k/v biases (llama's optional ones are not
     * HF's attention_bias, which would bias o_proj too) */
    if (!pl_arch_has_layer_role(c->arch, PL_L_BQ, 1)) {
        if ((s = get_bool(f, "attention_bias", 0, &flag, err))) return s;
        if (flag)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: attention_bias is true; plumb runs %s without attention biases",
                           f->name, c->arch->name);
    }
    if ((s = get_bool(f, "mlp_bias", 0, &flag, err))) return s;
    if (flag) return pl_fail(err, PL_ERR_UNSUPPORTED, "%s: mlp_bias is true", f->name);
    if ((s = get_bool(f, "use_sliding_window", 0, &flag, err))) return s;
    if (flag && !c->arch->recipe.swa_period)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: use_sliding_window is true; plumb converts full-attention models only",
                       f->name);
    return PL_OK;
}

/* ---- tokenizer ------------------------------------------------------------------------------- */

typedef struct vocab {
    const char **tok; /* n; borrowed from the JSON, or pad[] */
    size_t *len;
    int32_t *type;
    char (*pad)[32]; /* "[PAD123]" names for ids nothing defines */
    uint64_t n;
    const char **merges;
    size_t *merge_len;
    char **merge_own; /* joined "a b" of the array form */
    uint64_t n_merges;
    char pre[32];
    const char *normalizer; /* "NFC", ..., or NULL */
    int add_bos;            /* -1 unknown */
    int spm;                /* SentencePiece style: model "llama", scores, no merges written */
    int add_space_prefix;   /* spm: the normalizer's Prepend('▁') */
    float *score;           /* spm: n merge priorities (convert_spm.c) */
    /* tokenizer.model (read_model_vocab): the token texts (NUL-terminated), and the special ids
     * its trainer_spec names (bos, eos, pad, unk; -1: none), used where no JSON file names one */
    char *arena;
    json_t *added_json; /* added_tokens.json beside tokenizer.model: its keys are token texts */
    int from_model;
    int64_t model_id[4];
} vocab;

static void vocab_free(vocab *v)
{
    pl_free(v->tok);
    pl_free(v->len);
    pl_free(v->type);
    pl_free(v->score);
    pl_free(v->pad);
    pl_free(v->arena);
    json_decref(v->added_json);
    for (uint64_t i = 0; v->merge_own && i < v->n_merges; i++) pl_free(v->merge_own[i]);
    pl_free(v->merge_own);
    pl_free(v->merges);
    pl_free(v->merge_len);
}

static int is_type(const json_t *o, const char *type)
{
    const json_t *t = json_is_object(o) ? json_object_get(o, "type") : NULL;
    return t && json_is_string(t) && strcmp(json_string_value(t), type) == 0;
}

static int bool_field(const json_t *o, const char *key, int def)
{
    const json_t *v = json_object_get(o, key);
    return v && json_is_boolean(v) ? json_is_true(v) : def;
}

/* Names the pre-tokenizer the way llama.cpp's tokenizer.ggml.pre does, by the content of its
 * pre_tokenizer (features/pretok_id.c). */
static pl_status identify_pre(vocab *v, const json_t *tok, const char *file, pl_error *err)
{
    const struct pl_pretok_def *def;
    pl_status s = pl_pretok_identify(tok, file, &def, err);
    if (s) return s;
    snprintf(v->pre, sizeof v->pre, "%s", def->name);
    static const char *const forms[] = {NULL, "NFC", "NFD", "NFKC", "NFKD"};
    int norm;
    if ((s = pl_tok_json_norm(tok, file, &norm, err))) return s;
    v->normalizer = forms[norm];
    return PL_OK;
}

/* A side or the result of merge i must be a key of model.vocab, as the tokenizers library
 * checks ("Token `x` out of vocabulary"). buf holds the result: a then b. */
static pl_status merge_known(const json_t *vmap, const char *a, size_t la, const char *b, size_t lb,
                             char **buf, size_t *cap, size_t i, const char *file, pl_error *err)
{
    const char *what = NULL, *p = NULL;
    size_t n = 0;
    if (!json_object_getn(vmap, a, la))
        what = "its left token", p = a, n = la;
    else if (!json_object_getn(vmap, b, lb))
        what = "its right token", p = b, n = lb;
    if (!what) {
        if (la + lb > *cap) {
            char *q = pl_realloc(*buf, la + lb);
            if (!q) return pl_fail(err, PL_ERR_NOMEM, "no memory for merges");
            *buf = q;
            *cap = la + lb;
        }
        memcpy(*buf, a, la);
        memcpy(*buf + la, b, lb);
        if (json_object_getn(vmap, *buf, la + lb)) return PL_OK;
        what = "the merged token", p = *buf, n = la + lb;
    }
    return pl_fail(err, PL_ERR_FORMAT, "%s: merge %zu: %s '%.*s' is not in model.vocab", file, i,
                   what, (int)(n < 64 ? n : 64), p);
}

/* model.merges as the tokenizers library reads it: required (null is not a list), each "a b"
 * with one space or ["a", "b"], every side and every result a key of model.vocab. */
static pl_status read_merges(vocab *v, const json_t *vmap, const json_t *merges, const char *file,
                             pl_error *err)
{
    if (!merges || json_is_null(merges))
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: model.merges is %s (a BPE model lists its merges, [] for none)", file,
                       merges ? "null" : "missing");
    if (!json_is_array(merges))
        return pl_fail(err, PL_ERR_TYPE, "%s: model.merges is %s, not an array", file,
                       pl_json_kind(merges));
    size_t n = json_array_size(merges);
    if (n > PL_GGUF_MAX_ARRAY)
        return pl_fail(err, PL_ERR_LIMIT, "%s: %zu merges, over the limit %u", file, n,
                       PL_GGUF_MAX_ARRAY);
    v->merges = pl_calloc(n ? n : 1, sizeof *v->merges);
    v->merge_len = pl_calloc(n ? n : 1, sizeof *v->merge_len);
    v->merge_own = pl_calloc(n ? n : 1, sizeof *v->merge_own);
    if (!v->merges || !v->merge_len || !v->merge_own)
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %zu merges", n);
    v->n_merges = n;
    char *buf = NULL;
    size_t cap = 0;
    pl_status s = PL_OK;
    for (size_t i = 0; i < n && !s; i++) {
        const json_t *m = json_array_get(merges, i);
        if (json_is_string(m)) {
            const char *str = json_string_value(m);
            size_t len = json_string_length(m);
            const char *sp = memchr(str, ' ', len);
            if (!sp || sp == str || sp + 1 == str + len ||
                memchr(sp + 1, ' ', len - (size_t)(sp + 1 - str))) {
                s = pl_fail(err, PL_ERR_FORMAT, "%s: merge %zu '%.64s' is not \"a b\"", file, i,
                            str);
                break;
            }
            v->merges[i] = str;
            v->merge_len[i] = len;
            s = merge_known(vmap, str, (size_t)(sp - str), sp + 1, len - (size_t)(sp - str) - 1,
                            &buf, &cap, i, file, err);
            continue;
        }
        const json_t *a = json_is_array(m) && json_array_size(m) == 2 ? json_array_get(m, 0) : NULL;
        const json_t *b = a ? json_array_get(m, 1) : NULL;
        if (!a || !json_is_string(a) || !json_is_string(b)) {
            s = pl_fail(err, PL_ERR_TYPE, "%s: merge %zu is %s, not \"a b\" or [\"a\", \"b\"]",
                        file, i, pl_json_kind(m));
            break;
        }
        size_t la = json_string_length(a), lb = json_string_length(b);
        if (!la || !lb || memchr(json_string_value(a), ' ', la) ||
            memchr(json_string_value(b), ' ', lb)) {
            s = pl_fail(err, PL_ERR_FORMAT,
                        "%s: merge %zu has an empty part or a space, which GGUF's \"a b\" "
                        "merges cannot hold",
                        file, i);
            break;
        }
        if ((s = merge_known(vmap, json_string_value(a), la, json_string_value(b), lb, &buf, &cap,
                             i, file, err)))
            break;
        char *j = pl_malloc(la + lb + 2);
        if (!j) {
            s = pl_fail(err, PL_ERR_NOMEM, "no memory for merges");
            break;
        }
        memcpy(j, json_string_value(a), la);
        j[la] = ' ';
        memcpy(j + la + 1, json_string_value(b), lb + 1);
        v->merge_own[i] = j;
        v->merges[i] = j;
        v->merge_len[i] = la + 1 + lb;
    }
    pl_free(buf);
    return s;
}

/* added_tokens[i] as the tokenizers library requires it: an object with an id, a content string
 * and the five flags, each true or false. */
static pl_status check_added(const json_t *a, size_t i, const char *file, pl_error *err)
{
    if (!json_is_object(a))
        return pl_fail(err, PL_ERR_TYPE, "%s: added_tokens[%zu] is %s, not an object", file, i,
                       pl_json_kind(a));
    const json_t *id = json_object_get(a, "id"), *content = json_object_get(a, "content");
    if (!json_is_integer(id) || json_integer_value(id) < 0 ||
        json_integer_value(id) >= PL_GGUF_MAX_ARRAY || !json_is_string(content))
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: added_tokens[%zu] needs an id in 0..%u and a content string", file, i,
                       PL_GGUF_MAX_ARRAY - 1);
    static const char *const flags[] = {"single_word", "lstrip", "rstrip", "normalized", "special"};
    for (int k = 0; k < 5; k++)
        if (!json_is_boolean(json_object_get(a, flags[k])))
            return pl_fail(err, PL_ERR_FORMAT,
                           "%s: added_tokens[%zu] ('%.40s'): '%s' is %s, not true or false", file,
                           i, json_string_value(content), flags[k],
                           json_object_get(a, flags[k]) ? pl_json_kind(json_object_get(a, flags[k]))
                                                        : "missing");
    return PL_OK;
}

/* Token i's text as llama.cpp keys it: an empty one is "[EMPTY_<id>]". */
static size_t key_of(const vocab *v, uint64_t i, char *buf, size_t cap, const char **p)
{
    if (v->len[i]) {
        *p = v->tok[i];
        return v->len[i];
    }
    *p = buf;
    return (size_t)snprintf(buf, cap, "[EMPTY_%llu]", (unsigned long long)i);
}

/* One text, one id: llama.cpp refuses a GGUF vocabulary that holds a text twice, so convert
 * refuses to write one, naming both ids. */
static pl_status check_unique(const vocab *v, const char *file, pl_error *err)
{
    uint64_t slots = 16;
    while (slots < 2 * v->n) slots <<= 1;
    uint64_t *seen = pl_calloc((size_t)slots, sizeof *seen);
    if (!seen)
        return pl_fail(err, PL_ERR_NOMEM, "no memory to check %llu tokens",
                       (unsigned long long)v->n);
    pl_status s = PL_OK;
    char bi[32], bd[32];
    for (uint64_t i = 0; i < v->n && !s; i++) {
        const char *p, *q;
        size_t n = key_of(v, i, bi, sizeof bi, &p);
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t k = 0; k < n; k++) h = (h ^ (unsigned char)p[k]) * 0x100000001b3ull;
        for (h &= slots - 1; seen[h]; h = (h + 1) & (slots - 1))
            if (key_of(v, seen[h] - 1, bd, sizeof bd, &q) == n && memcmp(q, p, n) == 0) break;
        if (seen[h])
            s = pl_fail(err, PL_ERR_FORMAT,
                        "%s: tokens %llu and %llu are both '%.*s' (a text may name one token "
                        "only)",
                        file, (unsigned long long)(seen[h] - 1), (unsigned long long)i,
                        (int)(n < 40 ? n : 40), p);
        else
            seen[h] = i + 1;
    }
    pl_free(seen);
    return s;
}

/* Places id -> (text, type); an id defined twice must be the same text. */
static pl_status put_token(vocab *v, int64_t id, const json_t *text, int32_t type, const char *file,
                           pl_error *err)
{
    const char *s = json_string_value(text);
    size_t n = json_string_length(text);
    if (v->tok[id] && (v->len[id] != n || memcmp(v->tok[id], s, n) != 0))
        return pl_fail(err, PL_ERR_FORMAT, "%s: token id %lld is both '%.40s' and '%.40s'", file,
                       (long long)id, v->tok[id], s);
    v->tok[id] = s; /* empty: llama.cpp loads it as "[EMPTY_<id>]" */
    v->len[id] = n;
    if (type != TT_NORMAL || !v->type[id]) v->type[id] = type;
    return PL_OK;
}

/* SentencePiece style: <0xXX> tokens are bytes, the model's unk_token is a control token (as
 * llama.cpp's converter types special tokens from tokenizer.json; typed unknown it would decode
 * to U+2585, while HF decodes it to its text), and each token gets its merge score. */
static pl_status spm_types_scores(vocab *v, const json_t *model, const char *file, pl_error *err)
{
    const json_t *vmap = json_object_get(model, "vocab"),
                 *unk = json_object_get(model, "unk_token");
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        const json_t *j = json_object_get(vmap, name);
        if (!j) continue; /* an ASCII character with a token of its own (checked) */
        const int64_t id = json_integer_value(j);
        if (v->type[id] != TT_NORMAL)
            return pl_fail(err, PL_ERR_FORMAT, "%s: byte token %s (id %lld) is also an added token",
                           file, name, (long long)id);
        v->type[id] = TT_BYTE;
    }
    if (unk && !json_is_null(unk)) {
        const json_t *id =
            json_is_string(unk) ? json_object_get(vmap, json_string_value(unk)) : NULL;
        if (!json_is_integer(id))
            return pl_fail(err, PL_ERR_FORMAT, "%s: model.unk_token is not a token of model.vocab",
                           file);
        v->type[json_integer_value(id)] = TT_CONTROL;
    }
    if (!(v->score = pl_malloc((size_t)v->n * sizeof *v->score)))
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %llu scores", (unsigned long long)v->n);
    pl_status s =
        pl_spm_scores(v->score, v->n, vmap, v->merges, v->merge_len, v->n_merges, file, err);
    if (s) return s;
    return pl_spm_check_merges(vmap, v->type, v->n, v->merges, v->merge_len, v->n_merges, file,
                               err);
}

/* Reads tokenizer.json: vocabulary, merges, added tokens, pre-tokenizer, normalizer. The
 * token table is padded to n_rows (the embedding's rows; 0: none) with [PADn] tokens. */
static pl_status read_vocab(vocab *v, const jfile *f, int64_t n_rows, pl_error *err)
{
    const json_t *model = json_object_get(f->root, "model");
    if (!json_is_object(model))
        return pl_fail(err, PL_ERR_NOT_FOUND, "%s: 'model' is missing or not an object", f->name);
    const json_t *mt = json_object_get(model, "type");
    if (mt && !is_type(model, "BPE"))
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: tokenizer model '%.32s' is not BPE (plumb converts byte-level BPE)",
                       f->name, json_is_string(mt) ? json_string_value(mt) : "?");
    v->spm = pl_spm_is_spm(f->root);
    pl_status s = v->spm ? pl_spm_check(f->root, f->name, &v->add_space_prefix, err)
                         : identify_pre(v, f->root, f->name, err);
    if (s) return s;
    if (v->spm) snprintf(v->pre, sizeof v->pre, "default"); /* llama.cpp writes it so */
    const json_t *vmap = json_object_get(model, "vocab"),
                 *added = json_object_get(f->root, "added_tokens");
    if (!json_is_object(vmap))
        return pl_fail(err, PL_ERR_TYPE, "%s: model.vocab is missing or not an object", f->name);
    if (added && !json_is_array(added))
        return pl_fail(err, PL_ERR_TYPE, "%s: added_tokens is %s, not an array", f->name,
                       pl_json_kind(added));
    int64_t max_id = -1;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)vmap, key, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 ||
            json_integer_value(val) >= PL_GGUF_MAX_ARRAY)
            return pl_fail(err, PL_ERR_FORMAT, "%s: model.vocab['%.40s'] is not an id in 0..%u",
                           f->name, key, PL_GGUF_MAX_ARRAY - 1);
        if (json_integer_value(val) > max_id) max_id = json_integer_value(val);
    }
    size_t i;
    for (i = 0; added && i < json_array_size(added); i++) {
        const json_t *a = json_array_get(added, i);
        if ((s = check_added(a, i, f->name, err))) return s;
        json_int_t id = json_integer_value(json_object_get(a, "id"));
        if (id > max_id) max_id = id;
    }
    if (max_id < 0) return pl_fail(err, PL_ERR_FORMAT, "%s: the vocabulary is empty", f->name);
    if (n_rows <= 0) n_rows = max_id + 1; /* vocabulary only, no config.json */
    if (max_id >= n_rows)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: token id %lld has no row in the embedding (%lld rows, config.json "
                       "vocab_size)",
                       f->name, (long long)max_id, (long long)n_rows);
    v->n = (uint64_t)n_rows;
    v->tok = pl_calloc((size_t)v->n, sizeof *v->tok);
    v->len = pl_calloc((size_t)v->n, sizeof *v->len);
    v->type = pl_calloc((size_t)v->n, sizeof *v->type);
    if (!v->tok || !v->len || !v->type)
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %llu tokens", (unsigned long long)v->n);
    json_object_foreach((json_t *)vmap, key, val)
    {
        int64_t id = json_integer_value(val);
        if (v->tok[id])
            return pl_fail(err, PL_ERR_FORMAT, "%s: tokens '%.40s' and '%.40s' share id %lld",
                           f->name, v->tok[id], key, (long long)id);
        v->tok[id] = key; /* keys live as long as the JSON */
        v->len[id] = strlen(key);
        v->type[id] = TT_NORMAL;
    }
    for (i = 0; added && i < json_array_size(added); i++) {
        const json_t *a = json_array_get(added, i);
        int special = bool_field(a, "special", 0);
        if ((s = put_token(v, json_integer_value(json_object_get(a, "id")),
                           json_object_get(a, "content"), special ? TT_CONTROL : TT_USER_DEFINED,
                           f->name, err)))
            return s;
    }
    uint64_t n_pad = 0;
    for (uint64_t t = 0; t < v->n; t++) n_pad += v->tok[t] == NULL;
    if (n_pad && !(v->pad = pl_calloc((size_t)n_pad, sizeof *v->pad)))
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %llu padding tokens",
                       (unsigned long long)n_pad);
    for (uint64_t t = 0, k = 0; t < v->n; t++)
        if (!v->tok[t]) {
            snprintf(v->pad[k], sizeof v->pad[k], "[PAD%llu]", (unsigned long long)t);
            v->tok[t] = v->pad[k];
            v->len[t] = strlen(v->pad[k++]);
            v->type[t] = TT_UNUSED;
        }
    if ((s = check_unique(v, f->name, err))) return s;
    if ((s = read_merges(v, vmap, json_object_get(model, "merges"), f->name, err)) || !v->spm)
        return s;
    return spm_types_scores(v, model, f->name, err);
}

/* tokenizer.model's pieces as the vocabulary (a checkpoint without tokenizer.json), as llama.cpp's
 * converter lays out a SentencePiece model: the pieces with their scores and sentencepiece's
 * types (unknown, control, user-defined, byte; normal otherwise), then added_tokens.json's
 * tokens past the pieces (user-defined, score -1000) and tokenizer_config.json's
 * added_tokens_decoder (special: control, else user-defined), then [PADn] (unused, score
 * -10000) up to n_rows. An added token at a piece's id must be that piece; the piece's type
 * stays (sentencepiece's, which the parity test follows). What plumb's encoder
 * would not compute as sentencepiece does is refused (spm_model.c). */
static pl_status read_model_vocab(vocab *v, const char *dir, const jfile *tc, int64_t n_rows,
                                  pl_error *err)
{
    const char *file = "tokenizer.model";
    jfile added = {0};
    pl_status s = read_json(&added, dir, "added_tokens.json", 0, 0, err);
    if (s) return s;
    v->added_json = added.root; /* freed with v */
    char *path;
    struct stat sb;
    if (!(path = pl_join_path(dir, file)))
        return pl_fail(err, PL_ERR_NOMEM, "no memory for a path");
    if (stat(path, &sb) != 0) {
        pl_free(path);
        return pl_fail(err, PL_ERR_NOT_FOUND, "%s: tokenizer.json is missing (and no %s)", dir,
                       file);
    }
    pl_mapping map;
    s = pl_map_file(&map, path, err);
    pl_free(path);
    if (s) return s;
    pl_spm_model m;
    if ((s = pl_spm_model_parse(&m, map.data, map.size, err))) {
        pl_unmap_file(&map);
        return s;
    }
    const json_t *dec = tc->root ? json_object_get(tc->root, "added_tokens_decoder") : NULL;
    int64_t max_id = (int64_t)m.n_pieces - 1;
    const char *max_src = file, *key;
    json_t *val;
    uint64_t text_bytes = 0;
    if ((s = pl_spm_model_check(&m, file, err))) goto done;
    if (dec && !json_is_object(dec)) {
        s = pl_fail(err, PL_ERR_TYPE, "%s: added_tokens_decoder is %s, not an object", tc->name,
                    pl_json_kind(dec));
        goto done;
    }
    json_object_foreach(added.root, key, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 ||
            json_integer_value(val) >= PL_GGUF_MAX_ARRAY) {
            s = pl_fail(err, PL_ERR_FORMAT, "%s: '%.40s' is not an id in 0..%u", added.name, key,
                        PL_GGUF_MAX_ARRAY - 1);
            goto done;
        }
        if (json_integer_value(val) > max_id) {
            max_id = json_integer_value(val);
            max_src = added.name;
        }
    }
    json_object_foreach((json_t *)dec, key, val)
    {
        char *end = NULL;
        const long long id = strtoll(key, &end, 10);
        const json_t *content = json_object_get(val, "content");
        if (!*key || *end || id < 0 || id >= PL_GGUF_MAX_ARRAY || !json_is_string(content)) {
            s = pl_fail(err, PL_ERR_FORMAT,
                        "%s: added_tokens_decoder['%.32s'] is not an id with a content string",
                        tc->name, key);
            goto done;
        }
        if (id > max_id) {
            max_id = id;
            max_src = tc->name;
        }
    }
    if (n_rows <= 0) n_rows = max_id + 1; /* vocabulary only, no config.json */
    if (max_id >= n_rows) {
        s = pl_fail(err, PL_ERR_FORMAT,
                    "%s: token id %lld has no row in the embedding (%lld rows, config.json "
                    "vocab_size)",
                    max_src, (long long)max_id, (long long)n_rows);
        goto done;
    }
    v->n = (uint64_t)n_rows;
    for (uint32_t i = 0; i < m.n_pieces; i++) text_bytes += m.pieces[i].len + 1;
    v->tok = pl_calloc((size_t)v->n, sizeof *v->tok);
    v->len = pl_calloc((size_t)v->n, sizeof *v->len);
    v->type = pl_calloc((size_t)v->n, sizeof *v->type);
    v->score = pl_malloc((size_t)v->n * sizeof *v->score);
    v->arena = pl_malloc((size_t)text_bytes);
    if (!v->tok || !v->len || !v->type || !v->score || !v->arena) {
        s = pl_fail(err, PL_ERR_NOMEM, "no memory for %llu tokens", (unsigned long long)v->n);
        goto done;
    }
    static const int32_t tt[7] = {0,         TT_NORMAL, TT_UNKNOWN, TT_CONTROL, TT_USER_DEFINED,
                                  TT_UNUSED, TT_BYTE};
    char *a = v->arena;
    v->model_id[3] = -1;
    for (uint32_t i = 0; i < m.n_pieces; i++) {
        const pl_spm_piece *p = &m.pieces[i];
        memcpy(a, p->text, p->len);
        a[p->len] = 0;
        v->tok[i] = a;
        v->len[i] = p->len;
        v->type[i] = tt[p->type];
        /* sentencepiece's normalizer escapes the spaces of a user-defined piece it matched
         * before the model looks for the piece, so a user-defined piece holding a space is never
         * produced (Gemma-style "    "): unused, so plumb's splitter never claims it either */
        if (p->type == PL_SPM_USER_DEFINED && memchr(p->text, ' ', p->len)) v->type[i] = TT_UNUSED;
        v->score[i] = p->score;
        if (p->type == PL_SPM_UNKNOWN) v->model_id[3] = i;
        a += p->len + 1;
    }
    /* added_tokens.json (as llama.cpp's converter reads it: user-defined, score -1000), then
     * added_tokens_decoder, which may make them control */
    json_object_foreach(added.root, key, val)
    {
        const int64_t id = json_integer_value(val);
        const size_t len = strlen(key);
        if (v->tok[id] && (v->len[id] != len || memcmp(v->tok[id], key, len) != 0)) {
            s = pl_fail(err, PL_ERR_FORMAT, "%s: '%.40s' is id %lld, which is already '%.40s'",
                        added.name, key, (long long)id, v->tok[id]);
            goto done;
        }
        if (id < (int64_t)m.n_pieces) continue; /* the piece itself: its type stays */
        v->tok[id] = key;
        v->len[id] = len;
        v->type[id] = TT_USER_DEFINED;
        v->score[id] = -1000.0f;
    }
    json_object_foreach((json_t *)dec, key, val)
    {
        const int64_t id = strtoll(key, NULL, 10);
        const json_t *content = json_object_get(val, "content");
        if (id < (int64_t)m.n_pieces) {
            if (v->len[id] != json_string_length(content) ||
                memcmp(v->tok[id], json_string_value(content), v->len[id]) != 0) {
                s = pl_fail(err, PL_ERR_FORMAT,
                            "%s: added_tokens_decoder names id %lld '%.40s', but piece %lld of "
                            "%s is '%.40s'",
                            tc->name, (long long)id, json_string_value(content), (long long)id,
                            file, v->tok[id]);
                goto done;
            }
            continue;
        }
        if ((s = put_token(v, id, content,
                           bool_field(val, "special", 0) ? TT_CONTROL : TT_USER_DEFINED, tc->name,
                           err)))
            goto done;
        v->score[id] = -1000.0f;
    }
    uint64_t n_pad = 0;
    for (uint64_t t = 0; t < v->n; t++) n_pad += v->tok[t] == NULL;
    if (n_pad && !(v->pad = pl_calloc((size_t)n_pad, sizeof *v->pad))) {
        s = pl_fail(err, PL_ERR_NOMEM, "no memory for %llu padding tokens",
                    (unsigned long long)n_pad);
        goto done;
    }
    for (uint64_t t = 0, k = 0; t < v->n; t++)
        if (!v->tok[t]) {
            snprintf(v->pad[k], sizeof v->pad[k], "[PAD%llu]", (unsigned long long)t);
            v->tok[t] = v->pad[k];
            v->len[t] = strlen(v->pad[k++]);
            v->type[t] = TT_UNUSED;
            v->score[t] = -10000.0f;
        }
    if ((s = check_unique(v, file, err))) goto done;
    v->spm = 1;
    v->from_model = 1;
    v->add_space_prefix = m.norm.add_dummy_prefix;
    snprintf(v->pre, sizeof v->pre, "default");
    v->model_id[0] = m.bos_id >= 0 ? m.bos_id : -1;
    v->model_id[1] = m.eos_id >= 0 ? m.eos_id : -1;
    v->model_id[2] = m.pad_id >= 0 ? m.pad_id : -1;
done:
    pl_spm_model_free(&m);
    pl_unmap_file(&map);
    return s;
}

/* tokenizer.json, else tokenizer.model. */
static pl_status read_tokenizer(vocab *v, jfile *tok, const jfile *tc, const char *dir,
                                int64_t n_rows, pl_error *err)
{
    pl_status s = read_json(tok, dir, "tokenizer.json", 0, 0, err);
    if (s) return s;
    return tok->root ? read_vocab(v, tok, n_rows, err) : read_model_vocab(v, dir, tc, n_rows, err);
}

/* The id of a special token named in tokenizer_config.json (a string or {"content": ...});
 * -1 when the field is absent or null. */
static pl_status special_id(const vocab *v, const jfile *tc, const char *key, int64_t *out,
                            pl_error *err)
{
    *out = -1;
    const json_t *t = tc->root ? json_object_get(tc->root, key) : NULL;
    if (t && json_is_object(t)) t = json_object_get(t, "content");
    if (!t || json_is_null(t)) return PL_OK;
    if (!json_is_string(t))
        return pl_fail(err, PL_ERR_TYPE, "%s: '%s' is %s, not a token", tc->name, key,
                       pl_json_kind(t));
    const char *s = json_string_value(t);
    size_t n = json_string_length(t);
    /* the last definition wins, as added tokens come after the vocabulary */
    for (uint64_t i = v->n; i-- > 0;)
        if (v->len[i] == n && memcmp(v->tok[i], s, n) == 0 && v->type[i] != TT_UNUSED) {
            *out = (int64_t)i;
            return PL_OK;
        }
    return pl_fail(err, PL_ERR_NOT_FOUND, "%s: %s '%.64s' is not in the vocabulary", tc->name, key,
                   s);
}

/* The post-processor's TemplateProcessing (alone or inside a Sequence), or NULL. */
static const json_t *post_template(const json_t *tok)
{
    const json_t *pp = json_object_get(tok, "post_processor");
    if (is_type(pp, "Sequence")) {
        const json_t *seq = json_object_get(pp, "processors");
        for (size_t i = 0; json_is_array(seq) && i < json_array_size(seq); i++)
            if (is_type(json_array_get(seq, i), "TemplateProcessing")) pp = json_array_get(seq, i);
    }
    return is_type(pp, "TemplateProcessing") ? pp : NULL;
}

/* The token the single-sequence template puts first (last: 1), when it is a special token that
 * is in the vocabulary; -1 otherwise. */
static int64_t post_special(const json_t *tok, const vocab *v, int last)
{
    const json_t *pp = post_template(tok);
    const json_t *single = pp ? json_object_get(pp, "single") : NULL;
    const size_t n = json_is_array(single) ? json_array_size(single) : 0;
    const json_t *e = n ? json_array_get(single, last ? n - 1 : 0) : NULL;
    const json_t *st = e ? json_object_get(e, "SpecialToken") : NULL;
    const json_t *id = st ? json_object_get(st, "id") : NULL;
    if (!id || !json_is_string(id)) return -1;
    const size_t len = json_string_length(id);
    for (uint64_t i = v->n; i-- > 0;) /* the last definition wins, as in special_id */
        if (v->len[i] == len && memcmp(v->tok[i], json_string_value(id), len) == 0 &&
            v->type[i] != TT_UNUSED)
            return (int64_t)i;
    return -1;
}

/* add_bos (add_eos) from the post-processor when tokenizer_config.json does not say: Llama 3's
 * TemplateProcessing starts every sequence with the BOS token. */
static int post_adds(const json_t *tok, const vocab *v, int64_t id, int last)
{
    return id >= 0 && post_special(tok, v, last) == id;
}

/* ---- writing ----------------------------------------------------------------------------------
 */

static pl_status set_bool(pl_gguf_writer *w, const char *key, int v, pl_error *err)
{
    uint8_t b = v ? 1 : 0;
    return pl_gguf_writer_set(w, key, PL_GGUF_BOOL, &b, err);
}

/* The derived rows' values (arch.c: PL_HF_DERIVED), beside those read as they are. */
static void derive_values(hf_config *c)
{
    double *v = c->v.num;
    v[PL_HP_HEAD_COUNT_KV] = (double)c->Hkv;
    v[PL_HP_KEY_LENGTH] = v[PL_HP_VALUE_LENGTH] = (double)c->D;
    v[PL_HP_ROPE_DIMS] = (double)c->n_rot;
    v[PL_HP_ROPE_FREQ_BASE] = c->rope_theta; /* rope_parameters' wins over the top level's */
    /* experts as llama.cpp's converters write them (Mixtral's width is feed_forward_length) */
    if (c->X) {
        v[PL_HP_EXPERT_COUNT] = (double)c->X;
        v[PL_HP_EXPERT_USED_COUNT] = (double)c->U;
    }
    /* the recipe's own keys (Gemma): caps and the local window (Phi-3: always, 0 for none) */
    if (c->arch->recipe.swa_period && !(c->arch->recipe.window_optional && c->window == 0))
        v[PL_HP_SLIDING_WINDOW] = (double)c->window;
    if (pl_arch_key_of_arch(c->arch, PL_HP_ATTN_SOFTCAP)) v[PL_HP_ATTN_SOFTCAP] = c->attn_cap;
    if (pl_arch_key_of_arch(c->arch, PL_HP_FINAL_SOFTCAP)) v[PL_HP_FINAL_SOFTCAP] = c->final_cap;
    /* RoPE scaling as llama.cpp's converter writes it (llama3: the rope_freqs.weight tensor) */
    if (c->rope == ROPE_LINEAR || c->rope == ROPE_YARN) {
        c->v.str[PL_HP_ROPE_SCALING_TYPE] = c->rope == ROPE_LINEAR ? "linear" : "yarn";
        v[PL_HP_ROPE_SCALING_FACTOR] = c->rope_factor;
    }
    if (c->rope == ROPE_LONGROPE) {
        v[PL_HP_ROPE_ORIG_CTX] = (double)c->rope_orig_ctx;
        v[PL_HP_ROPE_ATTN_FACTOR] = c->rope_attn;
    }
    if (c->rope == ROPE_YARN) {
        v[PL_HP_ROPE_ORIG_CTX] = (double)c->rope_orig_ctx;
        v[PL_HP_YARN_BETA_FAST] = c->rope_beta_fast;
        v[PL_HP_YARN_BETA_SLOW] = c->rope_beta_slow;
        if (c->rope_no_truncate) v[PL_HP_YARN_TRUNCATE] = 0;
    }
}

static pl_status write_metadata(pl_gguf_writer *w, hf_config *c, const char *name, pl_ftype ftype,
                                pl_error *err)
{
    derive_values(c);
    pl_status s;
    if ((s = pl_arch_values_write(w, c->arch, &c->v, err)) ||
        (s = pl_gguf_writer_set_string(w, "general.name", name, strlen(name), err)) ||
        (s = pl_gguf_writer_set_u32(w, "general.file_type", (uint32_t)ftype, err)))
        return s;
    return PL_OK;
}

/* Llama 3.1's frequency divisors (rope_type llama3), as llama.cpp's converter computes them:
 * 1 for wavelengths under orig/high_freq_factor, the factor above orig/low_freq_factor, and
 * between them 1 / ((1 - s) / factor + s), s = (orig / wavelength - low) / (high - low); the
 * frequencies in float32 as torch makes them. */
static void llama3_factors(float *out, const hf_config *c)
{
    const double orig = (double)c->rope_orig_ctx;
    const double lo_wave = orig / c->rope_low, hi_wave = orig / c->rope_high;
    for (int64_t i = 0; i < c->D / 2; i++) {
        const float freq = 1.0f / powf((float)c->rope_theta, (float)(2 * i) / (float)c->D);
        const double wave = 2 * M_PI / (double)freq;
        double f = 1;
        if (wave > lo_wave)
            f = c->rope_factor;
        else if (wave >= hi_wave) {
            const double smooth = (orig / wave - c->rope_low) / (c->rope_high - c->rope_low);
            f = 1 / ((1 - smooth) / c->rope_factor + smooth);
        }
        out[i] = (float)f;
    }
}

static pl_status write_tokenizer(pl_gguf_writer *w, const vocab *v, const jfile *tok,
                                 const jfile *tc, const jfile *gen, const hf_config *c,
                                 const char *template_text, pl_error *err)
{
    int64_t bos, eos, pad, unk;
    pl_status s;
    if ((s = special_id(v, tc, "bos_token", &bos, err)) ||
        (s = special_id(v, tc, "eos_token", &eos, err)) ||
        (s = special_id(v, tc, "pad_token", &pad, err)) ||
        (s = special_id(v, tc, "unk_token", &unk, err)))
        return s;
    int64_t g;
    if (bos < 0 && !(s = get_token_id(gen, "bos_token_id", &g, err))) bos = g >= 0 ? g : c->bos_id;
    if (!s && eos < 0 && !(s = get_token_id(gen, "eos_token_id", &g, err)))
        eos = g >= 0 ? g : c->eos_id;
    if (s) return s;
    /* no file names the BOS token (ChatGLM 3): the one the post-processor puts first */
    if (bos < 0) bos = post_special(tok->root, v, 0);
    /* tokenizer.model: its trainer_spec's ids where no JSON file names them */
    if (v->from_model) {
        if (bos < 0) bos = v->model_id[0];
        if (eos < 0) eos = v->model_id[1];
        if (pad < 0) pad = v->model_id[2];
        if (unk < 0) unk = v->model_id[3];
    }
    int64_t ids[4] = {bos, eos, pad, unk};
    for (int i = 0; i < 4; i++)
        if (ids[i] >= (int64_t)v->n)
            return pl_fail(err, PL_ERR_FORMAT,
                           "special token id %lld is past the vocabulary (%llu)", (long long)ids[i],
                           (unsigned long long)v->n);
    int add_bos = -1, add_eos = -1;
    if ((s = get_bool(tc, "add_bos_token", -1, &add_bos, err)) ||
        (s = get_bool(tc, "add_eos_token", -1, &add_eos, err)))
        return s;
    /* tokenizer.model: a BOS is added as transformers' LlamaTokenizer and GemmaTokenizer
     * default (add_bos_token=True) */
    if (add_bos < 0) add_bos = v->from_model ? bos >= 0 : post_adds(tok->root, v, bos, 0);
    if (add_eos < 0 && post_adds(tok->root, v, eos, 1)) add_eos = 1;
    const char *model = v->spm ? "llama" : "gpt2";
    if ((s = pl_gguf_writer_set_string(w, "tokenizer.ggml.model", model, strlen(model), err)) ||
        (s = pl_gguf_writer_set_string(w, "tokenizer.ggml.pre", v->pre, strlen(v->pre), err)) ||
        (s = pl_gguf_writer_set_array_str(w, "tokenizer.ggml.tokens", v->tok, v->len, v->n, err)) ||
        (s = pl_gguf_writer_set_array(w, "tokenizer.ggml.token_type", PL_GGUF_INT32, v->type, v->n,
                                      err)))
        return s;
    /* SentencePiece: the merges live on as scores (convert_spm.c), with the dummy prefix */
    if (v->spm && ((s = pl_gguf_writer_set_array(w, "tokenizer.ggml.scores", PL_GGUF_FLOAT32,
                                                 v->score, v->n, err)) ||
                   (s = set_bool(w, "tokenizer.ggml.add_space_prefix", v->add_space_prefix, err))))
        return s;
    if (!v->spm && (s = pl_gguf_writer_set_array_str(w, "tokenizer.ggml.merges", v->merges,
                                                     v->merge_len, v->n_merges, err)))
        return s;
    if (bos >= 0 &&
        (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos, err)))
        return s;
    if (eos >= 0 &&
        (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos, err)))
        return s;
    if (unk >= 0 &&
        (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)unk, err)))
        return s;
    if (pad >= 0 &&
        (s = pl_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)pad, err)))
        return s;
    if ((s = set_bool(w, "tokenizer.ggml.add_bos_token", add_bos, err))) return s;
    if (add_eos >= 0 && (s = set_bool(w, "tokenizer.ggml.add_eos_token", add_eos, err))) return s;
    if (v->normalizer && (s = pl_gguf_writer_set_string(w, "tokenizer.ggml.normalizer",
                                                        v->normalizer, strlen(v->normalizer), err)))
        return s;
    if (template_text && (s = pl_gguf_writer_set_string(w, "tokenizer.chat_template", template_text,
                                                        strlen(template_text), err)))
        return s;
    return PL_OK;
}

/* The chat template: chat_template.jinja (newer transformers), else tokenizer_config.json's
 * chat_template (a string, or a list of {name, template} whose "default" is taken). */
static pl_status chat_template(const jfile *tc, const jfile *jinja_file, const char **out,
                               pl_error *err)
{
    *out = NULL;
    if (jinja_file->root) {
        *out = json_string_value(json_object_get(jinja_file->root, "t"));
        return PL_OK;
    }
    const json_t *t = tc->root ? json_object_get(tc->root, "chat_template") : NULL;
    if (!t || json_is_null(t)) return PL_OK;
    if (json_is_string(t)) {
        *out = json_string_value(t);
        return PL_OK;
    }
    for (size_t i = 0; json_is_array(t) && i < json_array_size(t); i++) {
        const json_t *e = json_array_get(t, i), *n = json_object_get(e, "name");
        if (n && json_is_string(n) && strcmp(json_string_value(n), "default") == 0 &&
            json_is_string(json_object_get(e, "template"))) {
            *out = json_string_value(json_object_get(e, "template"));
            return PL_OK;
        }
    }
    return pl_fail(err, PL_ERR_TYPE, "%s: chat_template is %s, not a template string", tc->name,
                   pl_json_kind(t));
}

/* chat_template.jinja, read as text into {"t": text} so it lives like the JSON files. */
static pl_status read_jinja(jfile *f, const char *dir, pl_error *err)
{
    f->name = "chat_template.jinja";
    f->root = NULL;
    char *path = pl_join_path(dir, f->name);
    if (!path) return pl_fail(err, PL_ERR_NOMEM, "no memory for a path");
    struct stat sb;
    pl_status s = PL_OK;
    if (stat(path, &sb) == 0) {
        pl_mapping m;
        if (!(s = pl_map_file(&m, path, err))) {
            if (m.size > PL_GGUF_MAX_STRING || memchr(m.data, 0, m.size))
                s = pl_fail(err, PL_ERR_FORMAT, "%s: over %u bytes or holds a NUL byte", f->name,
                            PL_GGUF_MAX_STRING);
            else if (!(f->root = json_pack("{s:s%}", "t", (const char *)m.data, m.size)))
                s = pl_fail(err, PL_ERR_FORMAT, "%s: not UTF-8 text", f->name);
            pl_unmap_file(&m);
        }
    }
    pl_free(path);
    return s;
}

/* ---- tensors -----------------------------------------------------------------------------------
 */

/* Adds GGUF tensor gname from HF tensor hname of HF shape [rows, cols] (cols 0: a vector). */
static pl_status want(ctensor *t, uint64_t *n, const pl_safetensors *st, uint8_t *used,
                      const char *gname, const char *hname, int64_t rows, int64_t cols,
                      int64_t permute_heads, pl_error *err)
{
    const pl_st_tensor *src = pl_safetensors_find(st, hname);
    if (!src)
        return pl_fail(err, PL_ERR_NOT_FOUND, "tensor '%s' (for %s) is missing from the weights",
                       hname, gname);
    /* a vector may come as [1, n] (Qwen2-MoE's shared_expert_gate is a Linear to one output) */
    int ok = cols ? src->n_dims == 2 && src->shape[0] == rows && src->shape[1] == cols
                  : (src->n_dims == 1 && src->shape[0] == rows) ||
                        (src->n_dims == 2 && src->shape[0] == 1 && src->shape[1] == rows);
    if (!ok) {
        char got[96] = "[";
        for (uint32_t d = 0; d < src->n_dims && d < 4; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "",
                     (long long)src->shape[d]);
        strcat(got, "]");
        if (cols)
            return pl_fail(err, PL_ERR_TYPE, "tensor '%s': shape %s, config.json says [%lld, %lld]",
                           hname, got, (long long)rows, (long long)cols);
        return pl_fail(err, PL_ERR_TYPE, "tensor '%s': shape %s, config.json says [%lld]", hname,
                       got, (long long)rows);
    }
    if (src->type == PL_TYPE_COUNT)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "tensor '%s': dtype %s; plumb converts F32, F16 and BF16 weights", hname,
                       src->dtype);
    ctensor *c = &t[(*n)++];
    snprintf(c->name, sizeof c->name, "%s", gname);
    c->src = src;
    c->n_dims = cols ? 2 : 1;
    c->ne[0] = cols ? cols : rows;
    c->ne[1] = cols ? rows : 1;
    c->ne[2] = 1;
    c->permute_heads = permute_heads;
    used[src - pl_safetensors_tensor(st, 0)] = 1;
    return PL_OK;
}

/* Adds GGUF tensor gname stacking X HF tensors (hfmt's "%d" the expert) of [rows, cols]. */
static pl_status want_stack(ctensor *t, uint64_t *n, const pl_safetensors *st, uint8_t *used,
                            const char *gname, const char *hfmt, int64_t l, int64_t X, int64_t rows,
                            int64_t cols, pl_error *err)
{
    const pl_st_tensor **xs = pl_calloc((size_t)X, sizeof *xs);
    if (!xs) return pl_fail(err, PL_ERR_NOMEM, "no memory for %lld experts", (long long)X);
    pl_status s = PL_OK;
    for (int64_t e = 0; e < X && !s; e++) {
        char part[96], h[128];
        snprintf(part, sizeof part, hfmt, (int)e);
        snprintf(h, sizeof h, "model.layers.%lld.%s", (long long)l, part);
        /* each expert as a matrix of its own, then moved into the stack */
        uint64_t k = *n;
        if (!(s = want(t, n, st, used, gname, h, rows, cols, 0, err))) {
            xs[e] = t[k].src;
            *n = k;
        }
    }
    if (s) {
        pl_free(xs);
        return s;
    }
    ctensor *c = &t[(*n)++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", gname);
    c->xs = xs;
    c->n_dims = 3;
    c->ne[0] = cols;
    c->ne[1] = rows;
    c->ne[2] = X;
    return PL_OK;
}

/* "[a, b, ...]" of an HF tensor's shape, for messages. */
static void shape_str(char *got, size_t cap, const pl_st_tensor *src)
{
    snprintf(got, cap, "[");
    for (uint32_t d = 0; d < src->n_dims && d < 4; d++)
        snprintf(got + strlen(got), cap - strlen(got), "%s%lld", d ? ", " : "",
                 (long long)src->shape[d]);
    snprintf(got + strlen(got), cap - strlen(got), "]");
}

/* *out = HF tensor name of the expected shape (n dims) and dtype (NULL: F32, F16 or BF16),
 * marked used. */
static pl_status want_shape(const pl_st_tensor **out, const pl_safetensors *st, uint8_t *used,
                            const char *name, const char *gname, const char *dtype, uint32_t n,
                            const int64_t *shape, pl_error *err)
{
    const pl_st_tensor *src = pl_safetensors_find(st, name);
    if (!src)
        return pl_fail(err, PL_ERR_NOT_FOUND, "tensor '%s' (for %s) is missing from the weights",
                       name, gname);
    int ok = src->n_dims == n;
    for (uint32_t d = 0; ok && d < n; d++) ok = src->shape[d] == shape[d];
    if (!ok) {
        char got[96], want[96] = "[";
        shape_str(got, sizeof got, src);
        for (uint32_t d = 0; d < n; d++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? ", " : "",
                     (long long)shape[d]);
        return pl_fail(err, PL_ERR_TYPE, "tensor '%s': shape %s, config.json says %s]", name, got,
                       want);
    }
    if (dtype ? strcmp(src->dtype, dtype) != 0 : src->type == PL_TYPE_COUNT)
        return pl_fail(err, PL_ERR_UNSUPPORTED, "tensor '%s': dtype %s; plumb converts %s here",
                       name, src->dtype, dtype ? dtype : "F32, F16 and BF16 weights");
    used[src - pl_safetensors_tensor(st, 0)] = 1;
    *out = src;
    return PL_OK;
}

/* Adds GGUF tensor gname from gpt-oss's fused HF experts hname (see ctensor.fused): X matrices
 * (in) -> (out), or with in 0 the bias [X, out * stride] as a (out, X) matrix. */
static pl_status want_fused(ctensor *t, uint64_t *n, const pl_safetensors *st, uint8_t *used,
                            const hf_config *c, const char *gname, const char *hname, int64_t in,
                            int64_t out, int xform, pl_error *err)
{
    const int64_t X = c->X, stride = xform == PL_XF_NONE ? 1 : 2, off = xform == PL_XF_ODD ? 1 : 0;
    ctensor *ct = &t[*n];
    memset(ct, 0, sizeof *ct);
    snprintf(ct->name, sizeof ct->name, "%s", gname);
    ct->stride = stride;
    ct->off = off;
    if (!in) {
        const int64_t sh[2] = {X, out * stride};
        pl_status s = want_shape(&ct->src, st, used, hname, gname, NULL, 2, sh, err);
        if (s) return s;
        ct->fused = FUSED_BIAS;
        ct->n_dims = 2;
        ct->ne[0] = out;
        ct->ne[1] = X;
        ct->ne[2] = 1;
    } else if (c->mxfp4) {
        if (in % 32 != 0)
            return pl_fail(err, PL_ERR_FORMAT, "%s: MXFP4 rows of %lld, not whole blocks of 32",
                           hname, (long long)in);
        char nb[128], ns[128];
        snprintf(nb, sizeof nb, "%s_blocks", hname);
        snprintf(ns, sizeof ns, "%s_scales", hname);
        const int64_t shb[4] = {X, out * stride, in / 32, 16}, shs[3] = {X, out * stride, in / 32};
        pl_status s;
        if ((s = want_shape(&ct->src, st, used, nb, gname, "U8", 4, shb, err)) ||
            (s = want_shape(&ct->scales, st, used, ns, gname, "U8", 3, shs, err)))
            return s;
        for (uint64_t i = 0; i < ct->scales->n_bytes; i++)
            if (((const uint8_t *)ct->scales->data)[i] == 255) /* E8M0's NaN */
                return pl_fail(err, PL_ERR_FORMAT,
                               "tensor '%s': scale byte %llu is 255 (E8M0's NaN), which no "
                               "weight is",
                               ns, (unsigned long long)i);
        ct->fused = FUSED_MXFP4;
    } else {
        const int64_t sh[3] = {X, in, out * stride};
        pl_status s = want_shape(&ct->src, st, used, hname, gname, NULL, 3, sh, err);
        if (s) return s;
        ct->fused = FUSED_DENSE;
    }
    if (in) {
        ct->n_dims = 3;
        ct->ne[0] = in;
        ct->ne[1] = out;
        ct->ne[2] = X;
    }
    (*n)++;
    return PL_OK;
}

/* OCP MXFP4's E2M1 values (transformers' FP4_VALUES) */
static const float fp4_values[16] = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
                                     -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

/* An MXFP4 pair as GGUF's MXFP4 tensor, without a round trip through floats: transformers'
 * FP4[c] 2^(s - 127) is ggml's 2 FP4[c] 2^(e - 128) (kernels/types.h), so e = s byte for byte
 * and the codes are the same; only the nibbles move, from HF's (2j, 2j + 1) in byte j to
 * ggml's (j, j + 16). A scale of 255 (E8M0's NaN) was refused at planning. */
static void mxfp4_blocks(const ctensor *t, void *dst)
{
    const int64_t in = t->ne[0], out = t->ne[1], X = t->ne[2], W = out * t->stride, nb = in / 32;
    pl_block_mxfp4 *d = dst;
    for (int64_t e = 0; e < X; e++)
        for (int64_t o = 0; o < out; o++) {
            const int64_t r = e * W + o * t->stride + t->off;
            for (int64_t b = 0; b < nb; b++, d++) {
                const uint8_t *q = (const uint8_t *)t->src->data + (size_t)((r * nb + b) * 16);
                d->e = ((const uint8_t *)t->scales->data)[r * nb + b];
                for (int j = 0; j < 16; j++) {
                    const int lo = (q[j / 2] >> (4 * (j & 1))) & 15;
                    const int hi = (q[(j + 16) / 2] >> (4 * (j & 1))) & 15;
                    d->qs[j] = (uint8_t)(lo | hi << 4);
                }
            }
        }
}

/* One expert e of a fused tensor as F32 rows (out, in) into dst; tmp holds in * out * stride
 * floats (FUSED_DENSE). */
static pl_status fused_expert(const ctensor *t, int64_t e, float *dst, float *tmp, void *staged,
                              pl_error *err)
{
    const int64_t in = t->ne[0], out = t->ne[1], W = out * t->stride;
    if (t->fused == FUSED_MXFP4) {
        const int64_t nb = in / 32;
        const uint8_t *blk = (const uint8_t *)t->src->data + (size_t)(e * W * nb * 16);
        const uint8_t *sc = (const uint8_t *)t->scales->data + (size_t)(e * W * nb);
        for (int64_t o = 0; o < out; o++) {
            const int64_t r = o * t->stride + t->off;
            for (int64_t b = 0; b < nb; b++) {
                const float scale = ldexpf(1.0f, (int)sc[r * nb + b] - 127); /* not 255 */
                const uint8_t *q = blk + (r * nb + b) * 16;
                for (int64_t j = 0; j < 16; j++) { /* byte j: elements 2j (low), 2j + 1 (high) */
                    dst[o * in + b * 32 + 2 * j] = fp4_values[q[j] & 15] * scale;
                    dst[o * in + b * 32 + 2 * j + 1] = fp4_values[q[j] >> 4] * scale;
                }
            }
        }
        return PL_OK;
    }
    /* FUSED_DENSE: [in, W] of expert e, transposed with the chosen outputs */
    const size_t eb = t->src->n_bytes / (size_t)t->ne[2];
    memcpy(staged, (const uint8_t *)t->src->data + (size_t)e * eb, eb);
    pl_status s;
    if (t->src->type == PL_TYPE_F32)
        memcpy(tmp, staged, eb);
    else if ((s = pl_dequantize_rows((pl_type)t->src->type, tmp, staged, in, W, err)))
        return s;
    for (int64_t o = 0; o < out; o++)
        for (int64_t k = 0; k < in; k++) dst[o * in + k] = tmp[k * W + o * t->stride + t->off];
    return PL_OK;
}

typedef struct plan_walk {
    ctensor *t;
    uint64_t *n;
    const pl_safetensors *st;
    uint8_t *used;
    const hf_config *c;
    const pl_arch_dims *d;
    pl_error *err;
} plan_walk;

/* One row of the table: its GGUF tensor from its HF name (optional rows when the checkpoint
 * has them). */
static int plan_visit(void *user, const pl_arch_tensor *r, int64_t l)
{
    plan_walk *w = user;
    const hf_config *c = w->c;
    const int output = l < 0 && r->role == PL_G_OUTPUT;
    if (output && c->tied) return 0;
    if (!r->hf) { /* computed from config.json, not a checkpoint tensor */
        const int llama3 = r->role == PL_G_ROPE_FREQS && c->rope == ROPE_LLAMA3;
        const int longrope =
            (r->role == PL_G_ROPE_LONG || r->role == PL_G_ROPE_SHORT) && c->rope == ROPE_LONGROPE;
        if (!llama3 && !longrope) return 0;
        ctensor *t = &w->t[(*w->n)++];
        memset(t, 0, sizeof *t);
        snprintf(t->name, sizeof t->name, "%s", r->gguf);
        t->n_dims = 1;
        t->ne[0] = c->n_rot / 2;
        t->ne[1] = 1;
        if (!(t->computed = pl_malloc((size_t)t->ne[0] * sizeof(float))))
            return (int)pl_fail(w->err, PL_ERR_NOMEM, "no memory for %s", t->name);
        if (llama3)
            llama3_factors(t->computed, c);
        else
            memcpy(t->computed, r->role == PL_G_ROPE_LONG ? c->rope_long : c->rope_short,
                   (size_t)t->ne[0] * sizeof(float));
        return 0;
    }
    char g[96], h[96];
    if (l >= 0) {
        snprintf(g, sizeof g, "blk.%lld.%s", (long long)l, r->gguf);
        snprintf(h, sizeof h, "model.layers.%lld.%s", (long long)l, r->hf);
    } else {
        snprintf(g, sizeof g, "%s", r->gguf);
        snprintf(h, sizeof h, "%s", r->hf);
    }
    int required;
    if (!pl_arch_row_applies(r, c->X, &required)) return 0;
    if (r->ne2 != PL_DIM_1 && !strchr(r->hf, '%')) /* gpt-oss's fused experts */
        return (int)want_fused(w->t, w->n, w->st, w->used, c, g, h, pl_arch_dim(w->d, r->ne0),
                               pl_arch_dim(w->d, r->ne1), r->xform, w->err);
    if (r->ne1 == PL_DIM_X) /* ... and their biases, one row per expert */
        return (int)want_fused(w->t, w->n, w->st, w->used, c, g, h, 0, pl_arch_dim(w->d, r->ne0),
                               r->xform, w->err);
    if (r->ne2 != PL_DIM_1)
        return (int)want_stack(w->t, w->n, w->st, w->used, g, r->hf, l, c->X,
                               pl_arch_dim(w->d, r->ne1), pl_arch_dim(w->d, r->ne0), w->err);
    if (!required && !output && !pl_safetensors_find(w->st, h)) return 0;
    const int64_t heads = r->xform == PL_XF_PERMUTE_Q   ? c->H
                          : r->xform == PL_XF_PERMUTE_K ? c->Hkv
                                                        : 0;
    /* HF stores [out, in]: rows = ne1, cols = ne0 (0 for a vector) */
    const int vector = r->ne1 == PL_DIM_1;
    const int64_t rows = pl_arch_dim(w->d, vector ? r->ne0 : r->ne1);
    const int64_t cols = vector ? 0 : pl_arch_dim(w->d, r->ne0);
    pl_status s = want(w->t, w->n, w->st, w->used, g, h, rows, cols, heads, w->err);
    if (!s) w->t[*w->n - 1].add_one = r->xform == PL_XF_ADD_ONE;
    return (int)s;
}

/* The GGUF tensors of the architecture table, in its file order, from their HF names. */
static pl_status plan_tensors(ctensor *t, uint64_t *n, const pl_safetensors *st, uint8_t *used,
                              const hf_config *c, pl_error *err)
{
    const pl_arch_dims d = {.E = c->E,
                            .F = c->F,
                            .V = c->V,
                            .D = c->D,
                            .H = c->H,
                            .Hkv = c->Hkv,
                            .n_rot = c->n_rot,
                            .FX = c->FX,
                            .FS = c->FS,
                            .X = c->X};
    plan_walk w = {t, n, st, used, c, &d, err};
    pl_status s = (pl_status)pl_arch_walk(c->arch, c->L, plan_visit, &w);
    if (s) return s;
    const pl_st_tensor *head = pl_safetensors_find(st, "lm_head.weight");
    if (c->tied && head)
        used[head - pl_safetensors_tensor(st, 0)] = 1; /* a saved copy of the tie */
    /* anything left over means the checkpoint is not the model config.json describes; old
     * checkpoints carry RoPE's inverse frequencies, which are computed, not weights */
    static const char inv_freq[] = "rotary_emb.inv_freq";
    for (uint64_t i = 0; i < pl_safetensors_n_tensors(st); i++) {
        const char *name = pl_safetensors_tensor(st, i)->name;
        size_t len = strlen(name), k = sizeof inv_freq - 1;
        if (!used[i] && !(len >= k && strcmp(name + len - k, inv_freq) == 0))
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "tensor '%s' is not part of a %s model as config.json describes it",
                           name, c->arch->name);
    }
    return PL_OK;
}

/* HF keeps each head's rotary halves apart (x[i], x[i + D/2]); GGUF's normal RoPE rotates
 * adjacent pairs, so row h*D + 2i + j comes from HF row h*D + j*D/2 + i (llama.cpp's permute). */
static void permute_rows(float *dst, const float *src, int64_t rows, int64_t cols, int64_t heads)
{
    const int64_t D = rows / heads, half = D / 2;
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < half; i++)
            for (int64_t j = 0; j < 2; j++)
                memcpy(dst + (h * D + 2 * i + j) * cols, src + (h * D + j * half + i) * cols,
                       (size_t)cols * sizeof *dst);
}

static pl_status cfill(void *user, uint64_t i, void *dst, uint64_t n_bytes, pl_error *err);
static pl_status cfill(void *user, uint64_t i, void *dst, uint64_t n_bytes, pl_error *err)
{
    cjob *j = user;
    const ctensor *t = &j->t[i];
    const pl_st_tensor *src = t->src;
    const int64_t rows = t->ne[1], cols = t->ne[0];
    pl_status s;
    if (t->computed) { /* planned as F32: 1-D tensors are never quantized */
        memcpy(dst, t->computed, (size_t)n_bytes);
        j->done += (uint64_t)(rows * cols);
        return PL_OK;
    }
    if (t->fused == FUSED_BIAS) { /* F32 always (a .bias is never quantized) */
        const int64_t W = cols * t->stride;
        float *tmp = pl_malloc((size_t)(rows * W) * sizeof *tmp);
        if (!tmp) return pl_fail(err, PL_ERR_NOMEM, "no memory for %s", t->name);
        memcpy(j->staged, src->data, (size_t)src->n_bytes);
        if (src->type == PL_TYPE_F32)
            memcpy(tmp, j->staged, (size_t)src->n_bytes);
        else if ((s = pl_dequantize_rows((pl_type)src->type, tmp, j->staged, rows, W, err))) {
            pl_free(tmp);
            return s;
        }
        float *d = dst;
        for (int64_t e = 0; e < rows; e++)
            for (int64_t o = 0; o < cols; o++)
                d[e * cols + o] = tmp[e * W + o * t->stride + t->off];
        pl_free(tmp);
        j->done += (uint64_t)(rows * cols);
        return PL_OK;
    }
    if (t->fused == FUSED_MXFP4 && t->type == PL_TYPE_MXFP4) { /* kept as they are */
        mxfp4_blocks(t, dst);
        j->done += (uint64_t)(rows * cols * t->ne[2]);
        return PL_OK;
    }
    if (t->fused) { /* fused experts, one matrix at a time */
        const uint64_t per = n_bytes / (uint64_t)t->ne[2];
        float *tmp = NULL;
        if (t->fused == FUSED_DENSE &&
            !(tmp = pl_malloc((size_t)(rows * cols * t->stride) * sizeof *tmp)))
            return pl_fail(err, PL_ERR_NOMEM, "no memory for %s", t->name);
        for (int64_t e = 0; e < t->ne[2]; e++) {
            if ((s = fused_expert(t, e, j->f32, tmp, j->staged, err))) break;
            uint8_t *de = (uint8_t *)dst + (uint64_t)e * per;
            if (t->type == PL_TYPE_F32)
                memcpy(de, j->f32, (size_t)per);
            else if ((s = pl_quantize_rows(t->type, de, j->f32, rows, cols, err)))
                break;
            j->done += (uint64_t)(rows * cols);
        }
        pl_free(tmp);
        if (s) return s;
        if (j->p->progress && j->p->progress(j->p->progress_user, j->done, j->total) != 0)
            return pl_fail(err, PL_ERR_CANCELLED, "conversion cancelled by the progress callback");
        return PL_OK;
    }
    if (t->xs) { /* stacked experts, one matrix at a time */
        const uint64_t per = n_bytes / (uint64_t)t->ne[2];
        for (int64_t e = 0; e < t->ne[2]; e++) {
            ctensor one = *t;
            one.xs = NULL;
            one.src = t->xs[e];
            one.ne[2] = 1;
            cjob sub = *j;
            sub.t = &one;
            sub.done = j->done;
            if ((s = cfill(&sub, 0, (uint8_t *)dst + (uint64_t)e * per, per, err))) return s;
            j->done = sub.done;
        }
        return PL_OK;
    }
    memcpy(j->staged, src->data, (size_t)src->n_bytes); /* aligned for the element loads */
    float *x = t->permute_heads ? j->tmp : j->f32;
    if (src->type == PL_TYPE_F32)
        memcpy(x, j->staged, (size_t)src->n_bytes);
    else if ((s = pl_dequantize_rows((pl_type)src->type, x, j->staged, rows, cols, err)))
        return s;
    if (t->add_one) /* in float32, as transformers computes x * (1 + w) */
        for (int64_t k = 0; k < rows * cols; k++) x[k] += 1.0f;
    if (t->permute_heads) permute_rows(j->f32, x, rows, cols, t->permute_heads);
    if (t->type == PL_TYPE_F32)
        memcpy(dst, j->f32, (size_t)n_bytes);
    else if ((s = pl_quantize_rows(t->type, dst, j->f32, rows, cols, err)))
        return s;
    j->done += (uint64_t)(rows * cols);
    if (j->p->progress && j->p->progress(j->p->progress_user, j->done, j->total) != 0)
        return pl_fail(err, PL_ERR_CANCELLED, "conversion cancelled by the progress callback");
    return PL_OK;
}

/* The last path component, without trailing slashes, for general.name. */
static void base_name(char *out, size_t cap, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/') b--;
    snprintf(out, cap, "%.*s", (int)(n - b), dir + b);
}

static pl_status no_tensor(void *user, uint64_t i, void *dst, uint64_t n_bytes, pl_error *err)
{
    (void)user;
    (void)dst;
    (void)n_bytes;
    return pl_fail(err, PL_ERR_INVALID_ARG, "a vocabulary-only GGUF has no tensor %llu",
                   (unsigned long long)i);
}

/* The tokenizer alone: tokenizer.json (+ tokenizer_config.json, generation_config.json,
 * chat_template.jinja, and config.json's vocab_size and token ids where present) -> a GGUF
 * with tokenizer.* keys, general.name and no tensors, which PL_MODEL_VOCAB_ONLY loads. */
static pl_status convert_vocab(const char *hf_dir, const char *out_path,
                               const pl_convert_params *params, const char *name, pl_error *err)
{
    jfile cfg = {0}, tok = {0}, tc = {0}, gen = {0}, jinja = {0};
    hf_config c = {.bos_id = -1, .eos_id = -1};
    vocab v = {0};
    pl_gguf_writer *w = NULL;
    const char *tmpl = NULL;
    pl_status s;
    if ((s = read_json(&cfg, hf_dir, "config.json", 0, 0, err)) ||
        (s = get_int(&cfg, "vocab_size", 0, PL_GGUF_MAX_ARRAY, 0, &c.V, err)) ||
        (s = get_token_id(&cfg, "bos_token_id", &c.bos_id, err)) ||
        (s = get_token_id(&cfg, "eos_token_id", &c.eos_id, err)) ||
        (s = read_json(&tc, hf_dir, "tokenizer_config.json", 0, JSON_DECODE_INT_AS_REAL, err)) ||
        (s = read_tokenizer(&v, &tok, &tc, hf_dir, c.V, err)) ||
        (s = read_json(&gen, hf_dir, "generation_config.json", 0, 0, err)) ||
        (s = read_jinja(&jinja, hf_dir, err)) || (s = chat_template(&tc, &jinja, &tmpl, err)) ||
        (s = pl_gguf_writer_new(&w, 3, err)) ||
        (s = pl_gguf_writer_set_string(w, "general.name", name, strlen(name), err)) ||
        (s = write_tokenizer(w, &v, &tok, &tc, &gen, &c, tmpl, err)) ||
        (s = pl_gguf_write_streamed(w, out_path, NULL, 0, no_tensor, NULL, err)))
        goto done;
    if (params->stats) {
        pl_convert_stats *o = params->stats;
        struct stat sb;
        memset(o, 0, sizeof *o);
        o->n_vocab = v.n;
        o->out_bytes = stat(out_path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
        o->arch = "none (vocabulary only)";
        snprintf(o->pre, sizeof o->pre, "%s", v.pre);
    }
done:
    pl_gguf_writer_free(w);
    vocab_free(&v);
    json_decref(cfg.root);
    json_decref(tok.root);
    json_decref(tc.root);
    json_decref(gen.root);
    json_decref(jinja.root);
    return s ? s : pl_ok(err);
}

pl_status pl_convert_hf(const char *hf_dir, const char *out_path, const pl_convert_params *params,
                        pl_error *err)
{
    if (!hf_dir || !out_path || !params)
        return pl_fail(err, PL_ERR_INVALID_ARG, "hf_dir, out_path or params is NULL");
    if (!pl_ftype_name(params->ftype))
        return pl_fail(err, PL_ERR_UNSUPPORTED, "file type %u is not one plumb writes",
                       (unsigned)params->ftype);
    struct stat sb;
    if (stat(hf_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return pl_fail(err, PL_ERR_NOT_FOUND, "%s is not a directory", hf_dir);
    jfile cfg = {0}, tok = {0}, tc = {0}, gen = {0}, jinja = {0};
    hf_config c = {0};
    vocab v = {0};
    pl_safetensors *st = NULL;
    uint8_t *used = NULL;
    cjob job = {.p = params};
    pl_tensor_spec *specs = NULL;
    pl_gguf_writer *w = NULL;
    const char *tmpl = NULL;
    char name[256];
    base_name(name, sizeof name, hf_dir);
    if (params->vocab_only) return convert_vocab(hf_dir, out_path, params, name, err);
    pl_status s;
    /* tokenizer_config.json holds no integer convert reads, but transformers writes
     * model_max_length as 1e30 in full digits, past any JSON integer type: read numbers as reals */
    if ((s = read_json(&cfg, hf_dir, "config.json", 1, 0, err)) ||
        (s = read_config(&c, &cfg, err)) ||
        (s = read_json(&tc, hf_dir, "tokenizer_config.json", 0, JSON_DECODE_INT_AS_REAL, err)) ||
        (s = read_tokenizer(&v, &tok, &tc, hf_dir, c.V, err)) ||
        (s = read_json(&gen, hf_dir, "generation_config.json", 0, 0, err)) ||
        (s = read_jinja(&jinja, hf_dir, err)) || (s = chat_template(&tc, &jinja, &tmpl, err)))
        goto done;
    if ((s = pl_safetensors_open_dir(&st, hf_dir, err))) goto done;
    uint64_t n_max = c.arch->n_globals + (uint64_t)c.L * c.arch->n_layer;
    used = pl_calloc((size_t)pl_safetensors_n_tensors(st) + 1, 1);
    job.t = pl_calloc((size_t)n_max, sizeof *job.t);
    specs = pl_calloc((size_t)n_max, sizeof *specs);
    if (!used || !job.t || !specs) {
        s = pl_fail(err, PL_ERR_NOMEM, "no memory for %llu tensors", (unsigned long long)n_max);
        goto done;
    }
    if ((s = plan_tensors(job.t, &job.n, st, used, &c, err))) goto done;
    /* the file type's tensor types, exactly as pl_model_quantize plans an F32 file */
    uint64_t max_elems = 1, max_src = 1, max_perm = 1;
    for (uint64_t i = 0; i < job.n; i++) {
        ctensor *t = &job.t[i];
        specs[i] = (pl_tensor_spec){.name = t->name,
                                    .type = PL_TYPE_F32,
                                    .n_dims = t->n_dims,
                                    .ne = {t->ne[0], t->ne[1], t->ne[2], 1}};
    }
    {
        pl_tensor_plan *plans = pl_malloc((size_t)(job.n ? job.n : 1) * sizeof *plans);
        pl_plan_model pm = {.arch = c.arch->name,
                            .n_layer = c.L,
                            .n_head = c.H,
                            .n_head_kv = c.Hkv,
                            .n_expert = c.X};
        if (!plans) {
            s = pl_fail(err, PL_ERR_NOMEM, "no memory for %llu tensor plans",
                        (unsigned long long)job.n);
            goto done;
        }
        s = pl_ftype_plan_tensors(params->ftype, params->pure, &pm, specs, job.n, plans, err);
        for (uint64_t i = 0; i < job.n && !s; i++) {
            ctensor *t = &job.t[i];
            t->type = plans[i].quantize ? plans[i].type : PL_TYPE_F32;
            specs[i].type = t->type;
        }
        pl_free(plans);
        if (s) goto done;
    }
    for (uint64_t i = 0; i < job.n; i++) {
        ctensor *t = &job.t[i];
        uint64_t elems = (uint64_t)t->ne[0] * (uint64_t)t->ne[1]; /* one expert's */
        if (elems > max_elems) max_elems = elems;
        if (t->src && t->fused == FUSED_DENSE) { /* staged one expert at a time */
            if (t->src->n_bytes / (uint64_t)t->ne[2] > max_src)
                max_src = t->src->n_bytes / (uint64_t)t->ne[2];
        } else if (t->src && t->src->n_bytes > max_src) {
            max_src = t->src->n_bytes;
        }
        for (int64_t e = 0; t->xs && e < t->ne[2]; e++)
            if (t->xs[e]->n_bytes > max_src) max_src = t->xs[e]->n_bytes;
        if (t->permute_heads && elems > max_perm) max_perm = elems;
        job.total += elems * (uint64_t)t->ne[2];
    }
    if (max_elems > SIZE_MAX / sizeof(float) / 2 ||
        !(job.f32 = pl_malloc((size_t)max_elems * sizeof(float))) ||
        !(job.tmp = pl_malloc((size_t)max_perm * sizeof(float))) ||
        !(job.staged = pl_malloc((size_t)max_src))) {
        s = pl_fail(err, PL_ERR_NOMEM, "no memory for a tensor of %llu elements",
                    (unsigned long long)max_elems);
        goto done;
    }
    if ((s = pl_gguf_writer_new(&w, 3, err)) ||
        (s = write_metadata(w, &c, name, params->ftype, err)) ||
        (s = write_tokenizer(w, &v, &tok, &tc, &gen, &c, tmpl, err)) ||
        (s = pl_gguf_writer_set_u32(w, "general.quantization_version", 2, err)))
        goto done;
    if (params->progress && params->progress(params->progress_user, 0, job.total) != 0) {
        s = pl_fail(err, PL_ERR_CANCELLED, "conversion cancelled by the progress callback");
        goto done;
    }
    if ((s = pl_gguf_write_streamed(w, out_path, specs, job.n, cfill, &job, err))) goto done;
    if (params->stats) {
        pl_convert_stats *o = params->stats;
        memset(o, 0, sizeof *o);
        o->n_tensors = job.n;
        o->n_params = job.total;
        o->n_vocab = v.n;
        o->out_bytes = stat(out_path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
        o->arch = c.arch->name;
        snprintf(o->pre, sizeof o->pre, "%s", v.pre);
    }
done:
    pl_gguf_writer_free(w);
    pl_free(c.rope_long);
    pl_free(c.rope_short);
    pl_free(job.f32);
    pl_free(job.tmp);
    pl_free(job.staged);
    for (uint64_t i = 0; job.t && i < job.n; i++) {
        pl_free(job.t[i].computed);
        pl_free(job.t[i].xs);
    }
    pl_free(job.t);
    pl_free(specs);
    pl_free(used);
    pl_safetensors_free(st);
    vocab_free(&v);
    json_decref(cfg.root);
    json_decref(tok.root);
    json_decref(tc.root);
    json_decref(gen.root);
    json_decref(jinja.root);
    return s ? s : pl_ok(err);
}
