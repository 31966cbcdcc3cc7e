/* tinymodel.h — small synthetic GGUF images of the table's architectures for the end-to-end tests.
 * Test-only: deterministic from a seed; `plumb mkmodel` is the user-facing generator. */
#ifndef PLUMB_TINYMODEL_H
#define PLUMB_TINYMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "plumb.h"

typedef struct tiny_spec tiny_spec;
struct tiny_spec {
    const char *arch; /* one of pl_arch_list() */
    int64_t E, L, H, Hkv, D, F, V, ctx;
    uint32_t wtype;     /* type of the 2-D weight matrices */
    uint32_t embd_type; /* token_embd / output */
    int mix;            /* vary matrix types per tensor: 1 Q4_K, Q6_K, Q5_0, Q8_0;
                           2 Q2_K, Q3_K, IQ4_NL, IQ4_XS; 3 Q4_K, Q6_K */
    int tied;           /* 1: no output.weight */
    int64_t window;     /* > 0: <arch>.attention.sliding_window (the local layers') */
    int64_t n_rot;      /* rope.dimension_count; 0: D */
    float attn_softcap, final_softcap; /* > 0: Gemma 2's soft-cap keys */
    float mult[4];     /* > 0: Granite's embedding, residual, attention and logit multipliers */
    float logit_scale; /* > 0: the logit_scale key (cohere2, issue 49) */
    /* mixture of experts (0: dense): experts, used per token, their widths (qwen2moe's shared
     * expert FS); qwen2moe/qwen3moe get 8, 2, 256 (FS 512) by default, llama none */
    int64_t X, U, FX, FS;
    uint64_t seed;
    /* Hostile variants for binding tests: skip or reshape one tensor by name. */
    const char *omit;
    const char *misshape;
    const char *f16_norm; /* store this F32 tensor (a norm, a bias) as F16 (the engine wants
                             F32) */
    /* Called last, before the image is written: adds or replaces keys and tensors (data passed
     * to the writer must outlive tiny_build: static storage). */
    void (*edit)(pl_gguf_writer *w, const tiny_spec *s);
    const void *edit_user;
};

/* A spec with sensible small defaults for arch (E 256, 2 layers, 4 heads, 2 KV heads, D 64,
 * F 512, V 320). */
tiny_spec tiny_default(const char *arch, uint32_t wtype);

/* Builds the GGUF image in a new buffer (free with pl_buffer_free). 0 on success. */
int tiny_build(const tiny_spec *s, void **out, size_t *size);

/* A RoPE scaling as llama.cpp's keys and tensors carry it: tiny_rope_edit, as a spec's edit with
 * a tiny_rope as its edit_user, writes it into the file (test_e2e's and webgpu_models' files). */
typedef struct tiny_rope {
    const char *type;   /* rope.scaling.type, NULL: absent */
    float factor;       /* rope.scaling.factor, 0: absent */
    float scale_linear; /* rope.scale_linear, 0: absent */
    uint32_t orig_ctx;  /* rope.scaling.original_context_length, 0: absent */
    float attn_factor;  /* rope.scaling.attn_factor, 0: absent */
    /* 1: a rope_freqs.weight tensor: llama 3's divisors for factor 8, low 1, high 4, original
     * context 16 (as llama.cpp's converter computes them); 2: longrope's two sets in Phi-3.5's
     * shape (short divisors near 1, long ones growing to ~30) */
    int freqs;
    int untruncated; /* 1: rope.scaling.yarn_truncate = false (transformers' truncate) */
} tiny_rope;
void tiny_rope_edit(pl_gguf_writer *w, const tiny_spec *s);

#endif
