/* tokenizer.h — the tokenizer inside a model: vocabulary from GGUF tokenizer.ggml.* metadata,
 * encode (SentencePiece BPE, byte-level BPE), decode, streaming decode. Internal, not public:
 * plumb.h's pl_tokenize family wraps these for a pl_model (engine/runtime/tokenizer_api.c).
 *
 * Two vocabulary kinds, chosen by tokenizer.ggml.model:
 *   "llama"  SentencePiece BPE: merge the adjacent pair whose concatenation is the token with
 *            the highest score (leftmost on ties); spaces are U+2581 '▁'; a dummy space prefix
 *            (tokenizer.ggml.add_space_prefix); characters with no token fall back to
 *            <0xXX> byte tokens, else to the unknown token.
 *   "gpt2"   byte-level BPE: pre-tokenizer regexes (tokenizer.ggml.pre, PCRE2), then ranked
 *            merges (tokenizer.ggml.merges, "left right") over the word's bytes; token texts use
 *            GPT-2's byte<->unicode mapping, which the loader undoes so encode/decode work on
 *            raw bytes.
 * Control and unknown tokens are matched in the text only with PL_TOKENIZE_PARSE_SPECIAL;
 * user-defined tokens always (as SentencePiece, HF tokenizers and llama.cpp do), by their text as
 * stored. The splitter is llama.cpp's: the longest text first claims every occurrence left to
 * right that no longer one claimed, then the next (equal lengths: lower id first). Byte-level
 * BPE finds every other token by the bytes its text spells in GPT-2's mapping; a text names one
 * token only (README: "Vocabulary quirks"). Invalid UTF-8 input is tokenized, never rejected: a
 * maximal run of bytes that are not part of a valid character is one pre-token (byte-level BPE) or
 * falls back to byte tokens (SentencePiece), so byte-level BPE round-trips any bytes exactly.
 */
#ifndef PLUMB_TOKENIZER_H
#define PLUMB_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "pretok.h"

/* Limits enforced at load (PL_ERR_LIMIT beyond them). The largest real vocabularies hold about
 * 256k tokens; the longest real tokens are a few hundred bytes (runs of spaces or dashes). */
#define PL_TOK_MAX_VOCAB       (1u << 22) /* tokens in tokenizer.ggml.tokens (4,194,304) */
#define PL_TOK_MAX_TOKEN_BYTES 4096u      /* bytes in one token's text */
#define PL_TOK_MAX_MERGES      (1u << 22) /* entries in tokenizer.ggml.merges */
/* Bytes of text in one encode call: symbol indices are 32-bit. */
#define PL_TOK_MAX_TEXT ((size_t)1 << 31)
/* Optional string key: the Unicode normalizer applied to text before pre-tokenization, "none",
 * "nfc", "nfd", "nfkc" or "nfkd" (ASCII case ignored); absent, the pre-tokenizer's own default
 * (qwen2: nfc). plumb convert writes it from tokenizer.json's "normalizer". */
#define PL_TOK_KEY_NORMALIZER "tokenizer.ggml.normalizer"

enum pl_tok_kind { PL_TOK_SPM = 1, PL_TOK_BPE = 2 };

/* One vocabulary entry. All byte ranges index pl_tokenizer.arena. */
struct pl_tok_entry {
    uint32_t text_off, text_len;   /* the token's text as stored in the file */
    uint32_t match_off, match_len; /* bytes pl_tok_find knows it by (when keyed): SPM = text;
                                      BPE = text decoded from GPT-2's byte<->unicode mapping */
    uint32_t piece_off, piece_len; /* bytes the decoder emits (▁ -> ' ', <0xXX> -> the byte) */
    float score;                   /* SPM merge priority; 0 when the file has no scores */
    uint8_t type;                  /* pl_token_type */
    uint8_t special;               /* 1: control/unknown, 2: user-defined (the splitter's) */
    uint8_t keyed;                 /* in the index pl_tok_find searches, by match bytes */
};

/* (left, right) -> merged token, for byte-level BPE. rank = position in the merges array. */
struct pl_tok_merge {
    uint32_t left, right; /* token ids; left = UINT32_MAX marks an empty slot */
    uint32_t result;
    uint32_t rank;
};

enum { PL_TOK_MAX_EOG = 16 };

struct pl_tokenizer {
    enum pl_tok_kind kind;
    uint32_t n_vocab;
    struct pl_tok_entry *tok; /* [n_vocab] */
    char *arena;              /* texts, decoded matches and pieces */
    size_t arena_len;

    uint32_t *match_hash; /* open addressing over match bytes of matchable tokens: id + 1 */
    uint32_t match_mask;

    struct pl_tok_merge *merges; /* BPE: open addressing by (left, right) */
    uint32_t merge_mask;
    uint32_t n_merges;

    int32_t byte_token[256]; /* token for one raw byte (byte fallback / initial BPE symbol) */

    /* Special-token splitter: candidate ids in llama.cpp's order (longest text first, then id). */
    uint32_t *special; /* [n_special] */
    uint32_t n_special;
    uint32_t *special_hash; /* open addressing by text: index into special + 1 */
    uint32_t special_mask;
    uint32_t n_user_defined;   /* candidates matched even without PL_TOKENIZE_PARSE_SPECIAL */
    uint8_t special_first[32]; /* bitset of first bytes with candidates */
    uint32_t max_match_len;    /* longest match bytes of a matchable token */

    int32_t bos, eos, eot, eom, pad, unk, sep; /* -1 when absent */
    /* End of generation, as llama.cpp's set: eos, eot, eom and the control tokens named like an
     * end (<|endoftext|>, <|im_end|>, ...), each once. */
    int32_t eog[PL_TOK_MAX_EOG];
    int n_eog;
    int add_bos, add_eos, add_space_prefix;
    int spm_words; /* SPM: no token has a ▁ right after another character (see spm_encode) */

    struct pl_pretok pre; /* BPE only */
    char pre_name[64];    /* tokenizer.ggml.pre as given ("default" when absent) */
    int norm; /* enum pl_tok_norm. BPE: each valid UTF-8 run is normalized before pre-tokenization
               */
};

/* Loads and validates the tokenizer described by g's tokenizer.ggml.* keys. Every error names
 * the key (and the index inside an array) that failed. The tokenizer copies what it needs:
 * g may be freed afterwards. */
pl_status pl_tokenizer_load(struct pl_tokenizer **out, const pl_gguf *g, pl_error *err);
void pl_tokenizer_free(struct pl_tokenizer *t);

/* Encode: flags are PL_TOKENIZE_*. Writes at most cap ids; *n_out is always the count the text
 * needs (PL_ERR_BUFFER_TOO_SMALL when it exceeds cap). */
pl_status pl_tok_encode(const struct pl_tokenizer *t, const char *text, size_t len, uint32_t flags,
                        int32_t *out, size_t cap, size_t *n_out, pl_error *err);

/* The same for text that continues a token stream: prefix = 0 puts no SentencePiece dummy space
 * at its start (pass pl_tok_strip_next's state of the tokens before it). */
/* The text the encoder tokenizes: text with each valid UTF-8 run outside the matched special
 * tokens (flags: PL_TOKENIZE_PARSE_SPECIAL as for encoding) in the vocabulary's normal form
 * (t->norm), everything else as it is. Byte-level BPE decodes its ids to exactly this text.
 * Writes at most cap bytes; *n_out is always the length (PL_ERR_BUFFER_TOO_SMALL beyond cap). */
pl_status pl_tok_normalize(const struct pl_tokenizer *t, const char *text, size_t len,
                           uint32_t flags, char *out, size_t cap, size_t *n_out, pl_error *err);
pl_status pl_tok_encode_cont(const struct pl_tokenizer *t, const char *text, size_t len,
                             uint32_t flags, int prefix, int32_t *out, size_t cap, size_t *n_out,
                             pl_error *err);

/* The bytes a token decodes to (flags: PL_DETOK_SPECIAL), pointing into the tokenizer. */
pl_status pl_tok_piece(const struct pl_tokenizer *t, int32_t id, uint32_t flags, const char **p,
                       size_t *n, pl_error *err);
/* Concatenated pieces; flags are PL_DETOK_*. Same buffer contract as pl_tok_encode. */
pl_status pl_tok_decode(const struct pl_tokenizer *t, const int32_t *ids, size_t n, uint32_t flags,
                        char *buf, size_t cap, size_t *n_out, pl_error *err);
/* Token by token, the text pl_tok_decode makes of a sequence: *strip is the state between
 * tokens (start with pl_tok_strip_start) and is updated; *p, *n get this token's bytes. */
int pl_tok_strip_start(const struct pl_tokenizer *t, uint32_t flags);
pl_status pl_tok_piece_next(const struct pl_tokenizer *t, int32_t id, uint32_t flags, int *strip,
                            const char **p, size_t *n, pl_error *err);
/* The streaming decoder over a tokenizer (pl_detok_new wraps it for a model). */
pl_status pl_detok_create(pl_detok **out, const struct pl_tokenizer *t, uint32_t flags,
                          pl_error *err);

/* Used by the loader and encoder (tokenizer.c, tokenizer_encode.c). */
uint32_t pl_tok_hash(const char *p, size_t n);
/* Id of the keyed token whose match bytes are exactly p[0..n), or -1. SentencePiece keys the
 * normal, user-defined and undefined tokens by their text; byte-level BPE every token whose text
 * is in GPT-2's mapping, by the bytes it spells (llama.cpp's text_to_token on byte-level text). */
int32_t pl_tok_find(const struct pl_tokenizer *t, const char *p, size_t n);
/* BPE: the merge of (left, right), or NULL. */
const struct pl_tok_merge *pl_tok_find_merge(const struct pl_tokenizer *t, uint32_t left,
                                             uint32_t right);

#endif
