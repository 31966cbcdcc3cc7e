/* convert_spm.h — SentencePiece-style tokenizer.json (BPE over U+2581 pieces with byte fallback)
 * for plumb convert: what settings it must have, and the scores of its GGUF. Internal to features/.
 */
#ifndef PLUMB_FEATURES_CONVERT_SPM_H
#define PLUMB_FEATURES_CONVERT_SPM_H

#include <jansson.h>
#include <stdint.h>

#include "core/core.h"

/* 1 if tokenizer.json's model is BPE with byte_fallback (the SentencePiece style). */
int pl_spm_is_spm(const json_t *tok);

/* Checks that tokenizer.json's normalizer, pre-tokenizer, decoder and model settings are ones
 * llama.cpp's SentencePiece tokenizer computes; *add_space_prefix: the dummy prefix (Prepend). */
pl_status pl_spm_check(const json_t *tok, const char *file, int *add_space_prefix, pl_error *err);

/* score[id] for ids 0..n-1: -(rank of the first merge whose concatenation is the token), and
 * -(n_merges + 1) for a token no merge makes. merges[i] are "left right" (len merge_len[i]);
 * vocab maps a token's text to its id (model.vocab). */
pl_status pl_spm_scores(float *score, uint64_t n, const json_t *vocab, const char *const *merges,
                        const size_t *merge_len, uint64_t n_merges, const char *file,
                        pl_error *err);

/* Every way a matchable token (type normal or user-defined) splits into two matchable tokens
 * must be a merge: the score-driven encoder joins any such pair, HF's BPE only its merges.
 * PL_ERR_UNSUPPORTED naming the first token and pair that is not. type: GGUF token types. */
pl_status pl_spm_check_merges(const json_t *vocab, const int32_t *type, uint64_t n,
                              const char *const *merges, const size_t *merge_len, uint64_t n_merges,
                              const char *file, pl_error *err);

#endif
