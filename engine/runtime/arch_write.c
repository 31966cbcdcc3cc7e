/* arch_write.c — the one writer of an architecture's metadata keys: every given value under
 * "<arch>." as the table's row says (kind, range, whether a default is written). Used by convert,
 * and through pl_arch_write_keys by mkmodel, the tests' tiny models and the fuzz seeds. Not the
 * tensors (pl_arch_tensors) and not the tokenizer. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "core/core.h"

void pl_arch_values_init(pl_arch_values *v)
{
    for (int i = 0; i < PL_HP_COUNT; i++) {
        v->num[i] = NAN;
        v->str[i] = NULL;
    }
}

static int given(const pl_arch_values *v, int hp)
{
    return v->str[hp] != NULL || !isnan(v->num[hp]);
}

static pl_status write_one(pl_gguf_writer *w, const pl_arch *a, const pl_arch_key *k,
                           const pl_arch_values *v, pl_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", a->name, k->suffix);
    const double x = v->num[k->hp];
    if (k->kind == PL_KEY_STRING) {
        if (!v->str[k->hp])
            return pl_fail(err, PL_ERR_INVALID_ARG, "'%s' is a string; no string given", key);
        return pl_gguf_writer_set_string(w, key, v->str[k->hp], strlen(v->str[k->hp]), err);
    }
    if (isnan(x)) return pl_fail(err, PL_ERR_INVALID_ARG, "'%s' is a number; none given", key);
    if (!(x >= k->lo && x <= k->hi))
        return pl_fail(err, PL_ERR_INVALID_ARG, "'%s' = %g is not in %g..%g", key, x, k->lo, k->hi);
    if (k->write == PL_W_UNLESS_DEFAULT && x == k->def) return PL_OK;
    switch (k->kind) {
    case PL_KEY_FLOAT:
        return pl_gguf_writer_set_f32(w, key, (float)x, err);
    case PL_KEY_BOOL: {
        uint8_t b = x != 0;
        return pl_gguf_writer_set(w, key, PL_GGUF_BOOL, &b, err);
    }
    default:
        if (x != floor(x))
            return pl_fail(err, PL_ERR_INVALID_ARG, "'%s' = %g is not an integer", key, x);
        return pl_gguf_writer_set_u32(w, key, (uint32_t)x, err);
    }
}

pl_status pl_arch_values_write(pl_gguf_writer *w, const pl_arch *a, const pl_arch_values *v,
                               pl_error *err)
{
    pl_status s =
        pl_gguf_writer_set_string(w, "general.architecture", a->name, strlen(a->name), err);
    if (s) return s;
    /* a value for a key the architecture does not have would be refused at load */
    for (int hp = 0; hp < PL_HP_COUNT; hp++)
        if (given(v, hp) && !pl_arch_key_of_arch(a, hp)) {
            const char *name = "?";
            for (size_t i = 0; pl_arch_at(i); i++) {
                const pl_arch *o = pl_arch_at(i);
                for (size_t j = 0; j < o->n_keys; j++)
                    if (o->keys[j].hp == hp) name = o->keys[j].suffix;
            }
            return pl_fail(err, PL_ERR_UNSUPPORTED, "architecture '%s' has no key '%s'", a->name,
                           name);
        }
    size_t n;
    const pl_arch_key *keys = pl_arch_keys(&n);
    for (size_t i = 0; i < n; i++) {
        /* a common key the architecture redefines is written from its own row */
        int own = 0;
        for (size_t j = 0; j < a->n_keys; j++) own |= a->keys[j].hp == keys[i].hp;
        if (!own && given(v, keys[i].hp) && (s = write_one(w, a, &keys[i], v, err))) return s;
    }
    for (size_t i = 0; i < a->n_keys; i++)
        if (given(v, a->keys[i].hp) && (s = write_one(w, a, &a->keys[i], v, err))) return s;
    return PL_OK;
}

/* ---- the public view (plumb.h) ---- */

pl_status pl_arch_write_keys(pl_gguf_writer *w, const char *arch, const pl_arch_shape *shape,
                             const pl_arch_hparams *hp, pl_error *err)
{
    if (!w || !arch || !shape || !hp)
        return pl_fail(err, PL_ERR_INVALID_ARG, "w, arch, shape or hp is NULL");
    const pl_arch *a = pl_arch_find(arch, strlen(arch));
    if (!a)
        return pl_fail(err, PL_ERR_UNSUPPORTED, "architecture '%.40s' is not one plumb runs (%s)",
                       arch, pl_arch_names());
    /* the same checks as pl_arch_tensors: a shape it would refuse is refused here too */
    size_t n_tensors;
    pl_status s = pl_arch_tensors(arch, shape, NULL, 0, &n_tensors, err);
    if (s) return s;
    if (!(hp->rms_eps > 0))
        return pl_fail(err, PL_ERR_INVALID_ARG, "hp: rms_eps %g must be > 0", hp->rms_eps);
    const int64_t D = shape->head_dim ? shape->head_dim : shape->n_embd / shape->n_head;
    pl_arch_values v;
    pl_arch_values_init(&v);
    if (hp->n_ctx > 0) v.num[PL_HP_CONTEXT_LENGTH] = (double)hp->n_ctx;
    v.num[PL_HP_EMBEDDING_LENGTH] = (double)shape->n_embd;
    v.num[PL_HP_BLOCK_COUNT] = (double)shape->n_layer;
    v.num[PL_HP_FEED_FORWARD_LENGTH] = (double)shape->n_ff;
    v.num[PL_HP_HEAD_COUNT] = (double)shape->n_head;
    v.num[PL_HP_HEAD_COUNT_KV] = (double)shape->n_head_kv;
    v.num[PL_HP_KEY_LENGTH] = (double)D;
    v.num[PL_HP_VALUE_LENGTH] = (double)D;
    v.num[PL_HP_ROPE_DIMS] = (double)(shape->n_rot ? shape->n_rot : D);
    v.num[PL_HP_RMS_EPS] = hp->rms_eps;
    if (hp->rope_base > 0) v.num[PL_HP_ROPE_FREQ_BASE] = hp->rope_base;
    v.num[PL_HP_VOCAB_SIZE] = (double)shape->n_vocab;
    if (shape->n_expert > 0) {
        /* llama.cpp's converters: the expert widths only where the architecture has keys for
         * them (Mixtral's experts are feed_forward_length wide) */
        v.num[PL_HP_EXPERT_COUNT] = (double)shape->n_expert;
        v.num[PL_HP_EXPERT_USED_COUNT] = (double)shape->n_expert_used;
        const int64_t fx = shape->n_ff_exp ? shape->n_ff_exp : shape->n_ff;
        const int64_t fs = shape->n_ff_shexp ? shape->n_ff_shexp : shape->n_ff;
        for (size_t i = 0; i < a->n_keys; i++) {
            if (a->keys[i].hp == PL_HP_EXPERT_FF_LENGTH) v.num[PL_HP_EXPERT_FF_LENGTH] = (double)fx;
            if (a->keys[i].hp == PL_HP_EXPERT_SHARED_FF_LENGTH)
                v.num[PL_HP_EXPERT_SHARED_FF_LENGTH] = (double)fs;
        }
    }
    if (hp->window > 0) v.num[PL_HP_SLIDING_WINDOW] = (double)hp->window;
    if (hp->attn_softcap > 0) v.num[PL_HP_ATTN_SOFTCAP] = hp->attn_softcap;
    if (hp->final_softcap > 0) v.num[PL_HP_FINAL_SOFTCAP] = hp->final_softcap;
    if (hp->embedding_scale > 0) v.num[PL_HP_EMBEDDING_SCALE] = hp->embedding_scale;
    if (hp->residual_scale > 0) v.num[PL_HP_RESIDUAL_SCALE] = hp->residual_scale;
    if (hp->attention_scale > 0) v.num[PL_HP_ATTENTION_SCALE] = hp->attention_scale;
    if (hp->logit_divisor > 0) v.num[PL_HP_LOGIT_DIVISOR] = hp->logit_divisor;
    if (hp->logit_scale > 0) v.num[PL_HP_LOGIT_SCALE] = hp->logit_scale;
    if (hp->yarn_factor > 1) {
        if (hp->yarn_orig_ctx < 1)
            return pl_fail(err, PL_ERR_INVALID_ARG, "hp: yarn_factor %g needs yarn_orig_ctx >= 1",
                           hp->yarn_factor);
        v.str[PL_HP_ROPE_SCALING_TYPE] = "yarn";
        v.num[PL_HP_ROPE_SCALING_FACTOR] = hp->yarn_factor;
        v.num[PL_HP_ROPE_ORIG_CTX] = (double)hp->yarn_orig_ctx;
        if (hp->yarn_no_truncate) v.num[PL_HP_YARN_TRUNCATE] = 0;
    }
    /* a key the architecture requires and nothing here defaults: the loader would refuse the
     * file, so it is refused here, by name (cohere2's logit_scale) */
    for (size_t i = 0; i < a->n_keys; i++)
        if (a->keys[i].hp == PL_HP_LOGIT_SCALE && a->keys[i].required &&
            !given(&v, PL_HP_LOGIT_SCALE))
            return pl_fail(err, PL_ERR_INVALID_ARG,
                           "architecture '%s' needs hp->logit_scale > 0 (%s.%s)", a->name, a->name,
                           a->keys[i].suffix);
    return pl_arch_values_write(w, a, &v, err);
}
