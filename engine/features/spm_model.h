/* spm_model.h — SentencePiece's model file (tokenizer.model: a ModelProto in protobuf wire
 * format, sentencepiece_model.proto) read in C for plumb convert, and the check that plumb's
 * SentencePiece encoder computes what sentencepiece computes with it. Internal to features/.
 *
 * Read: ModelProto.pieces (1: piece 1, score 2, type 3), trainer_spec (2: model_type 3,
 * treat_whitespace_as_suffix 24, byte_fallback 35, unk_id 40, bos_id 41, eos_id 42, pad_id 43),
 * normalizer_spec (3: name 1, precompiled_charsmap 2, add_dummy_prefix 3,
 * remove_extra_whitespaces 4, escape_whitespaces 5) and denormalizer_spec (5, the same message);
 * every other field of those messages and of ModelProto is skipped by its wire type. Absent
 * fields take the .proto's defaults (proto2): model_type UNIGRAM, byte_fallback false, unk 0,
 * bos 1, eos 2, pad -1, add_dummy_prefix, remove_extra_whitespaces and escape_whitespaces true,
 * a piece's type NORMAL, score 0. A field given twice: the last value (a message: merged), as
 * protobuf parses it. */
#ifndef PLUMB_FEATURES_SPM_MODEL_H
#define PLUMB_FEATURES_SPM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* Largest tokenizer.model read (real ones are under 5 MB). */
#define PL_SPM_MAX_FILE (256u << 20)

/* ModelProto.SentencePiece.Type and TrainerSpec.ModelType, the .proto's numbers. */
enum {
    PL_SPM_NORMAL = 1,
    PL_SPM_UNKNOWN = 2,
    PL_SPM_CONTROL = 3,
    PL_SPM_USER_DEFINED = 4,
    PL_SPM_UNUSED = 5,
    PL_SPM_BYTE = 6
};
enum { PL_SPM_UNIGRAM = 1, PL_SPM_BPE = 2, PL_SPM_WORD = 3, PL_SPM_CHAR = 4 };

typedef struct pl_spm_piece {
    const char *text; /* into the parsed bytes, len bytes, not NUL-terminated */
    uint32_t len;
    float score;
    int32_t type; /* PL_SPM_NORMAL .. PL_SPM_BYTE */
} pl_spm_piece;

typedef struct pl_spm_norm {
    const char *name; /* into the parsed bytes; NULL when absent */
    uint32_t name_len;
    uint32_t charsmap_len; /* bytes of precompiled_charsmap (0: none: no normalization) */
    int add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces;
    int present; /* the message was in the file */
} pl_spm_norm;

typedef struct pl_spm_model {
    pl_spm_piece *pieces; /* [n_pieces], owned */
    uint32_t n_pieces;
    int32_t model_type; /* PL_SPM_UNIGRAM .. PL_SPM_CHAR, or what the file says */
    int byte_fallback, treat_whitespace_as_suffix;
    int32_t unk_id, bos_id, eos_id, pad_id; /* trainer_spec's; -1: none */
    pl_spm_norm norm, denorm;
} pl_spm_model;

/* Parses size bytes of tokenizer.model into *m (pieces point into data, which must outlive m).
 * PL_ERR_FORMAT naming the field and offset for bytes that are not a ModelProto: a truncated or
 * overlong varint, a length past its message, field number 0, wire types 3/4 (groups) or 6/7,
 * a known field with another wire type, a piece type outside 1..6, a non-finite score, a
 * piece without text or empty or not UTF-8; PL_ERR_LIMIT for more pieces than a GGUF
 * vocabulary holds (PL_TOK_MAX_VOCAB), a piece longer than PL_TOK_MAX_TOKEN_BYTES or a file over
 * PL_SPM_MAX_FILE; PL_ERR_NOMEM. On error *m holds nothing to free. */
pl_status pl_spm_model_parse(pl_spm_model *m, const void *data, size_t size, pl_error *err);
void pl_spm_model_free(pl_spm_model *m);

/* What plumb's "llama" encoder (tokenizer/tokenizer_encode.c) computes exactly as
 * sentencepiece's BPE model does; PL_ERR_UNSUPPORTED naming what it does not (a unigram, word or
 * char model; a normalizer with a precompiled_charsmap, named; remove_extra_whitespaces;
 * escape_whitespaces off; treat_whitespace_as_suffix; a denormalizer; unused pieces;
 * user-defined pieces with add_dummy_prefix, or holding U+2581, or overlapping another);
 * PL_ERR_FORMAT for what sentencepiece refuses too (no unknown piece or two, a piece text twice,
 * byte pieces that are not <0xXX> or byte_fallback without all 256 of them or byte pieces without
 * byte_fallback, special ids past the pieces). file names the file in messages. */
pl_status pl_spm_model_check(const pl_spm_model *m, const char *file, pl_error *err);

#endif
