/* convert_spm.c — the SentencePiece style of tokenizer.json (Llama 2, Mistral, Gemma, Yi, ...):
 * which settings plumb's (llama.cpp's) SentencePiece encoder reproduces, and the merge scores.
 * Not the vocabulary reader nor the GGUF writer (convert.c).
 *
 * The encoder merges the adjacent pair whose concatenation is the token of highest score; HF's
 * BPE merges the pair of lowest merge rank. A token's score is minus the rank of the first merge
 * that makes it, so both take the same merge wherever each token is made by one merge (or its
 * merges are consecutive in rank, as in every file converted from a SentencePiece model). */
#include <stdio.h>
#include <string.h>

#include "convert_spm.h"
#include "hf_util.h"
#include "tokenizer/tokenizer.h"

#define SPACE_MARK "\xe2\x96\x81" /* U+2581, SentencePiece's space */

static int is_type(const json_t *o, const char *type)
{
    const json_t *t = json_is_object(o) ? json_object_get(o, "type") : NULL;
    return t && json_is_string(t) && strcmp(json_string_value(t), type) == 0;
}

static int str_is(const json_t *o, const char *key, const char *want)
{
    const json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return v && json_is_string(v) && strcmp(json_string_value(v), want) == 0;
}

static int absent_or(const json_t *o, const char *key, const char *want)
{
    const json_t *v = json_object_get(o, key);
    return !v || json_is_null(v) || (want && str_is(o, key, want));
}

/* {"type": T, "pattern": {"String": from}, "content": to} */
static int is_replace(const json_t *o, const char *from, const char *to)
{
    const json_t *p = is_type(o, "Replace") ? json_object_get(o, "pattern") : NULL;
    return p && str_is(p, "String", from) && json_object_size(p) == 1 && str_is(o, "content", to);
}

int pl_spm_is_spm(const json_t *tok)
{
    const json_t *model = json_object_get(tok, "model"),
                 *bf = json_object_get(model, "byte_fallback");
    return is_type(model, "BPE") && json_is_true(bf);
}

/* The normalizer: Prepend("▁") then Replace(" " -> "▁") (dummy prefix), or Replace alone. */
static pl_status check_normalizer(const json_t *tok, const char *file, int *prefix, pl_error *err)
{
    const json_t *n = json_object_get(tok, "normalizer");
    const json_t *seq = is_type(n, "Sequence") ? json_object_get(n, "normalizers") : NULL;
    const size_t k = json_is_array(seq) ? json_array_size(seq) : 0;
    if (is_replace(n, " ", SPACE_MARK) ||
        (k == 1 && is_replace(json_array_get(seq, 0), " ", SPACE_MARK))) {
        *prefix = 0;
        return PL_OK;
    }
    const json_t *a = k == 2 ? json_array_get(seq, 0) : NULL;
    if (a && is_type(a, "Prepend") && str_is(a, "prepend", SPACE_MARK) &&
        is_replace(json_array_get(seq, 1), " ", SPACE_MARK)) {
        *prefix = 1;
        return PL_OK;
    }
    if (is_type(json_object_get(tok, "pre_tokenizer"), "Metaspace"))
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: a Metaspace pre-tokenizer: its prepend_scheme adds the dummy prefix "
                       "only where no ▁ is (or only to the first piece), unlike llama.cpp's "
                       "SentencePiece encoder, which plumb's GGUF would run",
                       file);
    return pl_fail(err, PL_ERR_UNSUPPORTED,
                   "%s: byte_fallback BPE whose normalizer is not SentencePiece's (Replace ' ' -> "
                   "'▁', optionally after Prepend '▁'); plumb converts nothing else of this style",
                   file);
}

/* The decoder must make the text plumb's detokenizer makes: ▁ -> ' ', <0xXX> -> the byte, the
 * pieces joined, and at most the first leading space stripped (Strip start 1, stop 0). */
static pl_status check_decoder(const json_t *tok, const char *file, pl_error *err)
{
    const json_t *d = json_object_get(tok, "decoder");
    const json_t *seq = is_type(d, "Sequence") ? json_object_get(d, "decoders") : NULL;
    const size_t k = json_is_array(seq) ? json_array_size(seq) : 0;
    int ok = (k == 3 || k == 4) && is_replace(json_array_get(seq, 0), SPACE_MARK, " ") &&
             is_type(json_array_get(seq, 1), "ByteFallback") &&
             is_type(json_array_get(seq, 2), "Fuse");
    if (ok && k == 4) {
        const json_t *s = json_array_get(seq, 3), *start = json_object_get(s, "start"),
                     *stop = json_object_get(s, "stop");
        ok = is_type(s, "Strip") && str_is(s, "content", " ") && json_is_integer(start) &&
             json_integer_value(start) >= 0 && json_integer_value(start) <= 1 &&
             json_is_integer(stop) && json_integer_value(stop) == 0;
    }
    if (!ok)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: the decoder is not SentencePiece's (Sequence of Replace '▁' -> ' ', "
                       "ByteFallback, Fuse and an optional Strip of one leading space)",
                       file);
    return PL_OK;
}

pl_status pl_spm_check(const json_t *tok, const char *file, int *add_space_prefix, pl_error *err)
{
    pl_status s;
    if ((s = check_normalizer(tok, file, add_space_prefix, err))) return s;
    /* after the normalizer no space is left, so a split at ' ' changes nothing */
    const json_t *p = json_object_get(tok, "pre_tokenizer");
    const json_t *pat = is_type(p, "Split") ? json_object_get(p, "pattern") : NULL;
    const json_t *inv = json_object_get(p, "invert");
    if (p && !json_is_null(p) &&
        !(pat && str_is(pat, "String", " ") && json_object_size(pat) == 1 &&
          str_is(p, "behavior", "MergedWithPrevious") && (!inv || json_is_false(inv))))
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: a SentencePiece-style vocabulary with a pre_tokenizer (%s) other than "
                       "none or a Split at ' ' (which the normalizer leaves nothing to split)",
                       file, is_type(p, "Metaspace") ? "Metaspace" : "this one");
    if ((s = check_decoder(tok, file, err))) return s;
    const json_t *m = json_object_get(tok, "model");
    const json_t *drop = json_object_get(m, "dropout"), *ign = json_object_get(m, "ignore_merges");
    if ((drop && !json_is_null(drop)) || (ign && !json_is_false(ign)) ||
        !absent_or(m, "continuing_subword_prefix", "") || !absent_or(m, "end_of_word_suffix", ""))
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: model has dropout, ignore_merges, a continuing_subword_prefix or an "
                       "end_of_word_suffix, which SentencePiece's merging does not know",
                       file);
    /* every byte has its <0xXX> token (or, for ASCII, a token of its own, as Gemma's tab), so
     * no character ever becomes the unknown token and fuse_unk, which plumb's encoder does not
     * do, never matters */
    const json_t *vocab = json_object_get(m, "vocab");
    for (int b = 0; json_is_object(vocab) && b < 256; b++) { /* else read_vocab says what */
        char name[8], one[2] = {(char)b, 0};
        snprintf(name, sizeof name, "<0x%02X>", b);
        if (!json_is_integer(json_object_get(vocab, name)) &&
            !(b > 0 && b < 0x80 && json_is_integer(json_object_get(vocab, one))))
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: byte_fallback vocabulary without the byte token %s: characters "
                           "would fall back to the unknown token, which plumb does not fuse as "
                           "fuse_unk does",
                           file, name);
    }
    return PL_OK;
}

pl_status pl_spm_scores(float *score, uint64_t n, const json_t *vocab, const char *const *merges,
                        const size_t *merge_len, uint64_t n_merges, const char *file, pl_error *err)
{
    if (n_merges >= (1u << 24))
        return pl_fail(err, PL_ERR_LIMIT,
                       "%s: %llu merges: ranks past 2^24 are not exact as float32 scores", file,
                       (unsigned long long)n_merges);
    const float none = -(float)n_merges - 1.0f;
    for (uint64_t i = 0; i < n; i++) score[i] = none;
    size_t cap = 0;
    char *buf = NULL;
    pl_status s = PL_OK;
    for (uint64_t r = 0; r < n_merges && !s; r++) {
        const char *m = merges[r];
        const size_t len = merge_len[r];
        if (len > cap) {
            pl_free(buf);
            cap = 2 * len;
            if (!(buf = pl_malloc(cap))) return pl_fail(err, PL_ERR_NOMEM, "no memory for a merge");
        }
        const char *sp = memchr(m, ' ', len);
        const size_t a = sp ? (size_t)(sp - m) : 0;
        memcpy(buf, m, a);
        memcpy(buf + a, m + a + 1, len - a - 1);
        const json_t *id = sp ? json_object_getn(vocab, buf, len - 1) : NULL;
        if (!json_is_integer(id) || json_integer_value(id) < 0 ||
            (uint64_t)json_integer_value(id) >= n)
            s = pl_fail(err, PL_ERR_FORMAT,
                        "%s: merge %llu '%.64s' makes a token that is not in model.vocab", file,
                        (unsigned long long)r, m);
        else if (score[json_integer_value(id)] == none)
            score[json_integer_value(id)] = -(float)r;
    }
    pl_free(buf);
    return s;
}

/* FNV-1a over a, then ' ', then b. */
static uint32_t pair_hash(const char *a, size_t la, const char *b, size_t lb)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < la; i++) h = (h ^ (unsigned char)a[i]) * 16777619u;
    h = (h ^ (unsigned char)' ') * 16777619u;
    for (size_t i = 0; i < lb; i++) h = (h ^ (unsigned char)b[i]) * 16777619u;
    return h;
}

static int matchable(const int32_t *type, const json_t *id, uint64_t n)
{
    const json_int_t i = json_is_integer(id) ? json_integer_value(id) : -1;
    return i >= 0 && (uint64_t)i < n && (type[i] == 1 || type[i] == 4); /* normal, user-defined */
}

pl_status pl_spm_check_merges(const json_t *vocab, const int32_t *type, uint64_t n,
                              const char *const *merges, const size_t *merge_len, uint64_t n_merges,
                              const char *file, pl_error *err)
{
    uint64_t slots = 1024;
    while (slots < 2 * n_merges) slots *= 2;
    uint32_t *table = pl_calloc((size_t)slots, sizeof *table);
    if (!table)
        return pl_fail(err, PL_ERR_NOMEM, "no memory for a table of %llu merges",
                       (unsigned long long)n_merges);
    const uint64_t mask = slots - 1;
    for (uint64_t r = 0; r < n_merges; r++) {
        const char *sp = memchr(merges[r], ' ', merge_len[r]); /* checked by pl_spm_scores */
        const size_t la = (size_t)(sp - merges[r]);
        uint64_t h = pair_hash(merges[r], la, sp + 1, merge_len[r] - la - 1) & mask;
        while (table[h]) h = (h + 1) & mask;
        table[h] = (uint32_t)r + 1;
    }
    pl_status s = PL_OK;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)vocab, key, val)
    {
        if (!matchable(type, val, n)) continue;
        const size_t len = strlen(key);
        if (len > PL_TOK_MAX_TOKEN_BYTES) { /* the tokenizer would not load it either */
            s = pl_fail(err, PL_ERR_LIMIT, "%s: token '%.40s...' is %zu bytes, over the limit %u",
                        file, key, len, PL_TOK_MAX_TOKEN_BYTES);
            break;
        }
        for (size_t i = 1; i < len && !s; i++) {
            if (((unsigned char)key[i] & 0xC0) == 0x80) continue; /* inside a character */
            const json_t *a = json_object_getn(vocab, key, i), *b = json_object_get(vocab, key + i);
            if (!matchable(type, a, n) || !matchable(type, b, n)) continue;
            uint64_t h = pair_hash(key, i, key + i, len - i) & mask;
            int found = 0;
            for (; table[h] && !found; h = (h + 1) & mask) {
                const uint32_t r = table[h] - 1;
                found = merge_len[r] == len + 1 && memcmp(merges[r], key, i) == 0 &&
                        merges[r][i] == ' ' && memcmp(merges[r] + i + 1, key + i, len - i) == 0;
            }
            if (!found)
                s = pl_fail(err, PL_ERR_UNSUPPORTED,
                            "%s: token '%.40s' splits into the tokens '%.*s' and '%.40s' with no "
                            "merge \"%.*s %.40s\": SentencePiece's merging (plumb's, llama.cpp's) "
                            "would join them where this BPE does not",
                            file, key, (int)(i < 40 ? i : 40), key, key + i, (int)(i < 40 ? i : 40),
                            key, key + i);
        }
        if (s) break;
    }
    pl_free(table);
    return s;
}
