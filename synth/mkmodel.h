/* mkmodel.h — synthetic GGUF models in llama.cpp's conventions (llama, qwen2, qwen3): real
 * shapes, seeded random weights, a real tokenizer section. Usable by tests; not a converter. */
#ifndef PLUMB_SYNTH_MKMODEL_H
#define PLUMB_SYNTH_MKMODEL_H

#include <stdint.h>

#include "demo_vocab.h"
#include "plumb.h"

typedef struct mk_config {
    char name[64]; /* general.name */
    char arch[16]; /* general.architecture: one of pl_arch_list() */
    int64_t n_embd;
    int64_t n_layer;
    int64_t n_head;
    int64_t n_head_kv;
    int64_t head_dim; /* 0: n_embd / n_head */
    int64_t n_rot;    /* rope.dimension_count (GLM-4: half the head); 0: the whole head */
    int64_t n_ff;
    int64_t n_vocab;
    int64_t n_ctx;
    /* mixture of experts (0: dense): experts per layer, used per token, an expert's FFN width
     * (0: n_ff), the shared expert's (qwen2moe; 0: n_ff) */
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    float rope_base;
    float rms_eps;
    int tied;             /* no output.weight: token_embd doubles as the output projection */
    int64_t local_window; /* > 0: <arch>.attention.sliding_window (Gemma's local layers) */
    float attn_softcap, final_softcap; /* > 0: Gemma 2's soft-cap keys */
    /* > 0: Granite's embedding, residual, attention and logit multipliers (keys granite
     * requires: the granite-3-2b preset gives them); 0: left out */
    float mult[4];
    float logit_scale; /* > 0: the logits times it (cohere2's logit_scale) */
    /* > 1: YaRN by this factor over yarn_orig_ctx, unrounded with yarn_no_truncate (gpt-oss) */
    float yarn_factor;
    int64_t yarn_orig_ctx;
    int yarn_no_truncate;
    enum demo_vocab_kind vocab; /* the tokenizer section (demo_vocab.h) */
    pl_ftype ftype;
    int pure; /* every weight matrix in the ftype's base type (no llama.cpp mix) */
    uint64_t seed;
    int n_threads; /* generation and quantization threads; 0: every online CPU. Any count
                      writes the same bytes */
    /* tokenizer.chat_template: NULL keeps the vocabulary's; else this text replaces it ("" is
     * a model without a usable template). Not owned; read by mk_write only. */
    const char *chat_template;
} mk_config;

/* Fills *out with a preset (mk_preset_list()): F32 weights,
 * seed 1, all CPUs. Returns 0, or -1 for an unknown name. */
int mk_preset(const char *name, mk_config *out);
/* "tiny, qwen2-0.5b, llama-1b, qwen3-0.6b" */
const char *mk_preset_list(void);
/* Sets c->arch to name when plumb runs that architecture (pl_arch_list()): 0, else -1. */
int mk_arch_from_name(const char *name, mk_config *c);

/* "spm" | "bpe" (Qwen2-style byte-level BPE) | "llama3" (byte-level BPE with Llama 3's
 * special tokens) <-> enum demo_vocab_kind. from_name returns 0, or -1 when unknown. */
const char *mk_vocab_name(enum demo_vocab_kind k);
int mk_vocab_from_name(const char *name, enum demo_vocab_kind *out);

/* The effective head dimension (head_dim, or n_embd / n_head when 0). */
int64_t mk_head_dim(const mk_config *c);
/* PL_ERR_INVALID_ARG naming the field when the shape is inconsistent or out of range. */
pl_status mk_validate(const mk_config *c, pl_error *err);

typedef struct mk_stats {
    uint64_t n_tensors;
    uint64_t n_params;   /* elements of all tensors */
    uint64_t n_fallback; /* weight matrices that got a legacy type (row length) */
    uint64_t file_bytes;
} mk_stats;

/* Writes the model to path (through path.tmp; nothing is left on failure). progress (may be
 * NULL) gets elements done/total and may cancel (PL_ERR_CANCELLED). stats may be NULL.
 * Memory: one buffer of the largest tensor plus ~4 MB. Same config and seed, same bytes;
 * a model written at F32 and quantized with pl_model_quantize to an ftype equals the one
 * written directly at that ftype, byte for byte. */
pl_status mk_write(const mk_config *c, const char *path, pl_progress_fn progress, void *user,
                   mk_stats *stats, pl_error *err);

/* The model c describes, in memory: written to a temporary file, loaded with the default load
 * parameters, the file removed. For tests and fuzz harnesses. */
pl_status mk_load(const mk_config *c, pl_model **out, pl_error *err);

/* c shrunk to one layer of width 64 (2 heads, 1 KV head of 32, FF 64), its vocabulary kept: for
 * the state machines around the model (tokenizer, template, cache), not its arithmetic. */
void mk_shrink(mk_config *c);

/* The tests' model: the tiny preset with this vocabulary and type, seed 7, shrunk when small
 * is nonzero, loaded through mk_load. */
pl_status mk_load_tiny(enum demo_vocab_kind vocab, pl_ftype ftype, int small, pl_model **out,
                       pl_error *err);

#endif
