/* pretok.h — byte-level BPE pre-tokenizers (pretok.c): the regex sequences named by
 * tokenizer.ggml.pre, compiled with PCRE2. Internal. Not the merges (tokenizer_encode.c). */
#ifndef PLUMB_PRETOK_H
#define PLUMB_PRETOK_H

#include <stddef.h>

#include "core/core.h"

/* Regexes in one pre-tokenizer sequence (Chameleon and DeepSeek LLM use six). */
#define PL_TOK_MAX_PRE_REGEX 6
/* Steps of a tokenizer.json form: the regexes plus the ByteLevel step, NULL-terminated. */
#define PL_TOK_MAX_PRE_STEPS (PL_TOK_MAX_PRE_REGEX + 2)

struct pcre2_real_code_8;
struct pcre2_real_general_context_8;

/* Unicode normal forms applied before pre-tokenization (tokenizer.ggml.normalizer). */
enum pl_tok_norm {
    PL_TOK_NORM_NONE = 0,
    PL_TOK_NORM_NFC,
    PL_TOK_NORM_NFD,
    PL_TOK_NORM_NFKC,
    PL_TOK_NORM_NFKD
};

/* The step that stands for tokenizer.json's ByteLevel (use_regex false): bytes become the
 * GPT-2 alphabet there; it splits nothing. */
extern const char pl_pretok_bytelevel[];

/* A pre-tokenizer: the Split regexes of its tokenizer.json, in order, exactly as Hugging Face
 * writes them (Oniguruma syntax); each splits every piece the previous one made into its
 * matches and the gaps between them (HF "Isolated" behaviour, as llama.cpp does). Digits,
 * Punctuation and ByteLevel(use_regex) are written as the regexes they equal
 * (pl_pretok_digits..., see pretok.c); pl_pretok_compile turns each into PCRE2 syntax. */
struct pl_pretok_def {
    const char *name;    /* canonical tokenizer.ggml.pre value */
    const char *aliases; /* other accepted values, '|'-separated, or "" */
    const char *step[PL_TOK_MAX_PRE_STEPS];
    /* Where set, what PCRE2 runs instead of step[k]: the same matches, written so that PCRE2
     * keeps no backtracking state per character (its JIT stack is bounded). */
    const char *pcre2[PL_TOK_MAX_PRE_STEPS];
    int ignore_merges; /* a word that is itself a token is emitted whole (Llama 3) */
    int add_bos;       /* default for tokenizer.ggml.add_bos_token */
    int norm;          /* default normalizer (pl_tok_norm): what the tokenizer.json declares */
};

/* pcre2[k] = pl_pretok_digit_groups: step k is \d{1,3}(?=(?:\d{3})*\b) (digits grouped in
 * threes from the right of a run that ends at a word boundary), run in linear time by
 * pretok.c instead of the regex, whose lookahead rereads the rest of the run at every match. */
extern const char pl_pretok_digit_groups[];

struct pl_pretok {
    const struct pl_pretok_def *def;
    int n_re;
    struct pcre2_real_code_8 *re[PL_TOK_MAX_PRE_REGEX];
    unsigned char groups[PL_TOK_MAX_PRE_REGEX]; /* re[i] is \p{Nd}+ of a digit_groups step */
    struct pcre2_real_code_8 *word;             /* [\p{L}\p{M}\p{Pc}], for digit_groups */
    struct pcre2_real_general_context_8 *gctx;  /* routes PCRE2's allocations to pl_malloc */
};

/* The regexes tokenizer.json's other pre-tokenizer steps equal (HF tokenizers 0.23): Digits
 * (individual_digits true / false), Punctuation (Isolated / Contiguous: ASCII punctuation or
 * Unicode P*), ByteLevel's own regex (use_regex true). */
extern const char pl_pretok_digits1[], pl_pretok_digits[], pl_pretok_punct1[], pl_pretok_punct[],
    pl_pretok_gpt2[];

const struct pl_pretok_def *pl_pretok_find(const char *name, size_t len);
/* The canonical names, space-separated — for error messages. */
const char *pl_pretok_names(void);
/* Why plumb refuses a name llama.cpp knows (not a byte-level regex sequence), or NULL. */
const char *pl_pretok_refusal(const char *name, size_t len);
/* The table, for identification (features/convert) and tests: n entries. */
const struct pl_pretok_def *pl_pretok_table(size_t *n);
pl_status pl_pretok_compile(struct pl_pretok *p, const struct pl_pretok_def *def, pl_error *err);
void pl_pretok_release(struct pl_pretok *p);
/* Splits text[0..len) (valid UTF-8) with the sequence and calls emit for each piece in order.
 * Scratch match data comes from pl_pretok_scratch_new (one per call, never shared). */
/* *gapless = 1 when regex step k of def (an index into def->step) matches every character,
 * so that splitting with it leaves no gap: checked on every Unicode scalar value, alone and
 * each followed by a space. tokenizer.json's Split with behavior Removed and invert (keep the
 * matches, drop the gaps) equals the Isolated split of such a step. */
pl_status pl_pretok_step_gapless(const struct pl_pretok_def *def, int k, int *gapless,
                                 pl_error *err);
typedef pl_status (*pl_pretok_emit_fn)(void *user, const char *p, size_t n);
struct pl_pretok_scratch;
pl_status pl_pretok_scratch_new(struct pl_pretok_scratch **out, const struct pl_pretok *p,
                                pl_error *err);
void pl_pretok_scratch_free(struct pl_pretok_scratch *s);
pl_status pl_pretok_split(const struct pl_pretok *p, struct pl_pretok_scratch *s, const char *text,
                          size_t len, pl_pretok_emit_fn emit, void *user, pl_error *err);

#endif
