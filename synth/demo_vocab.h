/* demo_vocab.h — small real-format tokenizer vocabularies for synthetic models and tests:
 * trained deterministically by a tiny BPE trainer over a text embedded in demo_vocab.c.
 * Not a general trainer, and not a real model's vocabulary (ids differ from any release).
 */
#ifndef PLUMB_SYNTH_DEMO_VOCAB_H
#define PLUMB_SYNTH_DEMO_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "plumb.h"

enum demo_vocab_kind {
    /* tokenizer.ggml.model "llama": <unk> <s> </s>, 256 <0xXX> byte tokens, then pieces with
     * scores (merged pieces, then single characters); add_bos, add_space_prefix; the Llama 2
     * chat template. */
    DEMO_VOCAB_SPM = 0,
    /* tokenizer.ggml.model "gpt2", pre "qwen2": 256 byte tokens, merged tokens, ranked
     * merges, then <|endoftext|> <|im_start|> <|im_end|> (control); no BOS added; the Qwen2
     * chat template. */
    DEMO_VOCAB_BPE = 1,
    /* As DEMO_VOCAB_BPE but pre "llama-bpe" and Llama 3's special tokens
     * (<|begin_of_text|> <|end_of_text|> <|start_header_id|> <|end_header_id|> <|eot_id|>),
     * BOS added, the Llama 3 chat template. */
    DEMO_VOCAB_BPE_LLAMA3 = 2,
    /* As DEMO_VOCAB_SPM but Gemma's layout: <pad> <eos> <bos> <unk> first (ids 0-3 as in
     * Gemma), no space prefix, <start_of_turn> <end_of_turn> (control) as the last ids; the
     * Gemma 2 chat template. */
    DEMO_VOCAB_GEMMA = 3,
    /* As DEMO_VOCAB_SPM (<unk> <s> </s>, space prefix) with Phi-3's specials as the last ids:
     * <|endoftext|> (eos) <|assistant|> <|system|> <|end|> <|user|>; no BOS added; the Phi-3
     * chat template. */
    DEMO_VOCAB_PHI3 = 4,
};
#define DEMO_VOCAB_COUNT 5

/* Real chat templates (tokenizer_config.json) for presets whose family shares a vocabulary
 * layout with another: Gemma 3's (DEMO_VOCAB_GEMMA carries Gemma 2's) and Mistral Instruct's
 * (DEMO_VOCAB_SPM carries Llama 2's). Byte for byte the files of conformance/jinja/templates/
 * (test_chat_template checks it). */
extern const char demo_tmpl_gemma3[];
extern const char demo_tmpl_mistral[];

/* The smallest n_vocab demo_vocab_write accepts for the kind (no merges at all). */
uint32_t demo_vocab_min(enum demo_vocab_kind kind);

/* Writes the tokenizer.* keys of a vocabulary of exactly n_vocab tokens into w. The trainer
 * merges the most frequent pair first (ties: lowest ids); when the embedded text has no
 * pairs left it adds deterministic synthetic merges, so any size up to PL_GGUF_MAX_ARRAY
 * works, and a smaller vocabulary's merges are a prefix of a larger one's. Same kind and
 * size, same bytes. PL_ERR_INVALID_ARG below demo_vocab_min. */
pl_status demo_vocab_write(pl_gguf_writer *w, enum demo_vocab_kind kind, uint32_t n_vocab,
                           pl_error *err);

/* The embedded training text (UTF-8: English prose, C and Python, several languages). */
const char *demo_vocab_corpus(size_t *len);

#endif
