/* pretok_id.h — names a tokenizer.json's pre-tokenizer by its content (pretok_id.c): the steps
 * it declares against the table of engine/tokenizer/pretok.c. Internal to features/. */
#ifndef PLUMB_FEATURES_PRETOK_ID_H
#define PLUMB_FEATURES_PRETOK_ID_H

#include <jansson.h>

#include "core/core.h"
#include "tokenizer/pretok.h"

/* tok: the whole tokenizer.json; file: its name for messages. On success *out is the entry whose
 * steps equal the pre_tokenizer's, whose ignore_merges equals model.ignore_merges, and (among
 * equals) whose default normalizer is the one declared. Where only ignore_merges differs, the
 * flag is moot if BPE over model.merges builds every key of model.vocab whole (gpt-oss's o200k:
 * ignore_merges true, llama.cpp's gpt-4o applies merges, the same ids): then the entry of those
 * steps (and that normalizer, if one has it). Anything else is PL_ERR_UNSUPPORTED naming what
 * was found (for the flag, the first token the merges do not build). */
pl_status pl_pretok_identify(const json_t *tok, const char *file, const struct pl_pretok_def **out,
                             pl_error *err);

/* The Unicode normal form tokenizer.json's normalizer declares (pl_tok_norm): absent, null or an
 * empty Sequence is none; NFC/NFD/NFKC/NFKD, alone or as a Sequence's only entry, that form.
 * Anything else is PL_ERR_UNSUPPORTED (a byte-level tokenizer in plumb applies nothing else). */
pl_status pl_tok_json_norm(const json_t *tok, const char *file, int *norm, pl_error *err);

#endif
