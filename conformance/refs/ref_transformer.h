/* ref_transformer.h — a double-precision reference transformer (GSL) for llama, qwen2 and
 * qwen3 GGUF files. Test-only: it reads tensors by name itself, shares no code with engine/. */
#ifndef PLUMB_REF_TRANSFORMER_H
#define PLUMB_REF_TRANSFORMER_H

#include <stdint.h>

#include "plumb.h"

typedef struct ref_model ref_model;

/* Reads hyperparameters and dequantizes every weight (exactly, via the reference
 * kernels' dequantize_row) into double matrices. Returns 0, or -1 with msg filled. */
int ref_model_load(ref_model **out, const pl_gguf *g, char *msg, size_t msg_len);
void ref_model_free(ref_model *m);
int64_t ref_model_n_vocab(const ref_model *m);

/* Attention window semantics, as in pl_session_params: context window (window = 0) or a
 * sliding window of `window` tokens of which the first `sinks` positions stay visible. */
typedef struct ref_window {
    int64_t window;
    int64_t sinks;
    int64_t n_ctx; /* the session's context window: longrope's long factors beyond the original */
} ref_window;

/* Evaluates tokens one at a time at positions 0..n-1 and writes every position's logits
 * (n x V) in double. Unquantized activations and a double KV cache: the engine's
 * differences from this are its own rounding, bounded by the e2e tests. margin (may be NULL)
 * gets, for a mixture of experts, the smallest gap over every token and layer between the p
 * of the last expert chosen and the best unchosen one (INFINITY: no routing): an engine whose
 * router probabilities are off by less than this chooses the same experts. Returns 0 or -1. */
int ref_model_forward(const ref_model *m, const int32_t *tokens, int64_t n, const ref_window *w,
                      double *logits, double *margin);

#endif
