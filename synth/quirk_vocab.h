/* quirk_vocab.h — a byte-level BPE vocabulary holding every quirk llama.cpp loads (added tokens
 * that spell byte-level tokens' bytes, "<｜…｜>" control tokens, empty and unused tokens, tokens
 * no merge reaches, overlapping added tokens), for the fuzz seeds. Not a trained vocabulary
 * (demo_vocab.h is); conformance/test_tokenizer_quirks.c pins the ids such vocabularies give.
 */
#ifndef PLUMB_SYNTH_QUIRK_VOCAB_H
#define PLUMB_SYNTH_QUIRK_VOCAB_H

#include "plumb.h"

/* Writes the tokenizer.* keys into w: tokenizer.ggml.model "gpt2", tokenizer.ggml.pre = pre
 * (a name plumb knows, e.g. "gpt2" or "llama-bpe"). Same pre, same bytes. */
pl_status quirk_vocab_write(pl_gguf_writer *w, const char *pre, pl_error *err);

#endif
