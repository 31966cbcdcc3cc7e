/* pretok_id.c — which pre-tokenizer a tokenizer.json declares, by content: its pre_tokenizer is
 * reduced to plumb's step list (Split regexes + the ByteLevel step) and matched against the
 * table. Not a regex engine: two spellings of one regex are two forms (only \r \n \t escapes
 * and the literal characters are taken as one). */
#include "pretok_id.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hf_util.h"

#define MAX_FOUND 16

struct form {
    const char *step[MAX_FOUND];
    unsigned char kept[MAX_FOUND]; /* a Split that keeps its matches and drops the gaps */
    int n;
    char what[160]; /* the steps in words, for the error */
};

static void note(struct form *f, const char *s)
{
    size_t k = strlen(f->what);
    snprintf(f->what + k, sizeof f->what - k, "%s%s", k ? ", " : "", s);
}

static int is_type(const json_t *o, const char *type)
{
    const json_t *t = json_is_object(o) ? json_object_get(o, "type") : NULL;
    return t && json_is_string(t) && strcmp(json_string_value(t), type) == 0;
}

static int bool_field(const json_t *o, const char *key, int def)
{
    const json_t *v = json_object_get(o, key);
    return v && json_is_boolean(v) ? json_is_true(v) : def;
}

static const char *str_field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return v && json_is_string(v) ? json_string_value(v) : NULL;
}

static pl_status push(struct form *f, const char *s, const char *file, pl_error *err)
{
    if (f->n == MAX_FOUND)
        return pl_fail(err, PL_ERR_UNSUPPORTED, "%s: pre_tokenizer has over %d steps", file,
                       MAX_FOUND);
    f->step[f->n++] = s;
    return PL_OK;
}

/* One step of tokenizer.json's pre_tokenizer, appended to f as the regexes it equals. */
static pl_status reduce(struct form *f, const json_t *p, const char *file, pl_error *err, int depth)
{
    pl_status s;
    const char *type = str_field(p, "type");
    if (!type)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: a pre_tokenizer step is %s, not an object "
                       "with a type",
                       file, pl_json_kind(p));
    if (strcmp(type, "Sequence") == 0 && depth < 4) {
        const json_t *seq = json_object_get(p, "pretokenizers");
        if (!json_is_array(seq))
            return pl_fail(err, PL_ERR_FORMAT, "%s: Sequence.pretokenizers is %s, not an array",
                           file, pl_json_kind(seq));
        for (size_t i = 0; i < json_array_size(seq); i++)
            if ((s = reduce(f, json_array_get(seq, i), file, err, depth + 1))) return s;
        return PL_OK;
    }
    if (strcmp(type, "Split") == 0) {
        const json_t *pat = json_object_get(p, "pattern");
        const char *re = json_is_object(pat) ? str_field(pat, "Regex") : NULL;
        const char *beh = str_field(p, "behavior");
        if (!re)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: a Split step without a Regex pattern (plumb's pre-tokenizers are "
                           "regexes)",
                           file);
        /* Removed + invert keeps the matches and drops the gaps: the Isolated split wherever
         * the regex leaves no gap, which identification checks (pl_pretok_step_gapless). */
        int inv = bool_field(p, "invert", 0);
        int iso = beh && strcmp(beh, "Isolated") == 0 && !inv;
        int kept = beh && strcmp(beh, "Removed") == 0 && inv;
        if (!iso && !kept)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: Split '%.48s' has behavior %s%s; plumb splits Isolated (or "
                           "Removed inverted, with a regex that leaves no gap)",
                           file, re, beh ? beh : "(none)", inv ? ", inverted" : "");
        note(f, kept ? "Split(Removed, inverted)" : "Split");
        f->kept[f->n] = (unsigned char)kept;
        return push(f, re, file, err);
    }
    if (strcmp(type, "Digits") == 0) {
        int one = bool_field(p, "individual_digits", 0);
        note(f, one ? "Digits(individual)" : "Digits");
        return push(f, one ? pl_pretok_digits1 : pl_pretok_digits, file, err);
    }
    if (strcmp(type, "Punctuation") == 0) {
        const char *beh = str_field(p, "behavior");
        if (!beh) beh = "Isolated"; /* HF's default */
        int iso = strcmp(beh, "Isolated") == 0, cont = strcmp(beh, "Contiguous") == 0;
        if (!iso && !cont)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: Punctuation with behavior %s; plumb knows Isolated and "
                           "Contiguous",
                           file, beh);
        note(f, iso ? "Punctuation" : "Punctuation(Contiguous)");
        return push(f, iso ? pl_pretok_punct1 : pl_pretok_punct, file, err);
    }
    if (strcmp(type, "ByteLevel") == 0) {
        if (bool_field(p, "add_prefix_space", 0))
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: ByteLevel with add_prefix_space (plumb adds no prefix space)",
                           file);
        int re = bool_field(p, "use_regex", 1);
        note(f, re ? "ByteLevel(use_regex)" : "ByteLevel");
        if (re && (s = push(f, pl_pretok_gpt2, file, err))) return s;
        return push(f, pl_pretok_bytelevel, file, err);
    }
    return pl_fail(err, PL_ERR_UNSUPPORTED,
                   "%s: pre_tokenizer step '%.32s' is not one plumb runs (Split, Digits, "
                   "Punctuation, ByteLevel, Sequence)",
                   file, type);
}

/* One unit of a regex at *p: an escape pair (\r \n \t become the characters) or a byte;
 * *p advances past it. A pair other than those three comes back as 256 + its second byte. */
static int unit(const char **p)
{
    const char *q = *p;
    if (q[0] == '\\' && q[1]) {
        *p = q + 2;
        return q[1] == 'r'   ? '\r'
               : q[1] == 'n' ? '\n'
               : q[1] == 't' ? '\t'
                             : 256 + (unsigned char)q[1];
    }
    if (q[0]) *p = q + 1;
    return (unsigned char)q[0];
}

/* Regexes equal up to \r \n \t written as escapes or as the characters. */
static int same_regex(const char *a, const char *b)
{
    for (;;) {
        int ua = unit(&a), ub = unit(&b);
        if (ua != ub) return 0;
        if (!ua) return 1;
    }
}

static int same_steps(const struct form *f, const struct pl_pretok_def *d)
{
    int k = 0;
    for (; k < f->n; k++) {
        const char *a = f->step[k], *b = d->step[k];
        if (!b) return 0;
        if ((a == pl_pretok_bytelevel) != (b == pl_pretok_bytelevel)) return 0;
        if (a != pl_pretok_bytelevel && !same_regex(a, b)) return 0;
    }
    return d->step[k] == NULL;
}

pl_status pl_tok_json_norm(const json_t *tok, const char *file, int *norm, pl_error *err)
{
    static const char *const forms[] = {"NFC", "NFD", "NFKC", "NFKD"};
    *norm = PL_TOK_NORM_NONE;
    const json_t *nj = json_object_get(tok, "normalizer");
    if (is_type(nj, "Sequence")) {
        const json_t *seq = json_object_get(nj, "normalizers");
        if (json_is_array(seq) && json_array_size(seq) == 0) return PL_OK;
        nj = json_is_array(seq) && json_array_size(seq) == 1 ? json_array_get(seq, 0) : NULL;
    } else if (!nj || json_is_null(nj)) {
        return PL_OK;
    }
    for (int i = 0; i < 4; i++)
        if (is_type(nj, forms[i])) {
            *norm = PL_TOK_NORM_NFC + i;
            return PL_OK;
        }
    return pl_fail(err, PL_ERR_UNSUPPORTED,
                   "%s: normalizer other than NFC, NFD, NFKC or NFKD (alone or the only entry of "
                   "a Sequence): plumb's byte-level tokenizer applies nothing else",
                   file);
}

/* Does BPE over model.merges (lowest rank first, the leftmost among equals, as the tokenizers
 * library merges) build every key of model.vocab whole from its characters? Then
 * model.ignore_merges changes no tokenization: a word that is a token comes out whole with merges
 * applied too (tiktoken-derived vocabularies: gpt-oss's o200k declares ignore_merges, llama.cpp's
 * gpt-4o applies merges, and both give the same ids). *all = 0 and *bad the first key it does not
 * build (NULL when vocab or merges are not there to check). */
static pl_status merges_build_every_token(const json_t *tok, int *all, const char **bad,
                                          size_t *bad_len, pl_error *err)
{
    *all = 0;
    *bad = NULL;
    *bad_len = 0;
    const json_t *model = json_object_get(tok, "model");
    const json_t *vocab = json_object_get(model, "vocab"),
                 *merges = json_object_get(model, "merges");
    if (!json_is_object(vocab) || !json_is_array(merges)) return PL_OK;
    json_t *rank = json_object();
    char *key = NULL;
    size_t *start = NULL, key_cap = 0, start_cap = 0;
    pl_status s = PL_OK;
    if (!rank) return pl_fail(err, PL_ERR_NOMEM, "no memory for the merge ranks");
    for (size_t i = 0; i < json_array_size(merges) && !s; i++) {
        const json_t *m = json_array_get(merges, i), *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        if (json_is_string(m)) {
            a = m, la = json_string_length(m);
        } else if (json_is_array(m) && json_array_size(m) == 2 &&
                   json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
            a = json_array_get(m, 0), b = json_array_get(m, 1);
            la = json_string_length(a), lb = json_string_length(b);
        } else {
            goto done; /* not merges plumb reads: nothing is proven (convert refuses them later) */
        }
        if (la > SIZE_MAX / 4 || lb > SIZE_MAX / 4) goto done; /* keeps the sums below exact */
        size_t len = b ? la + 1 + lb : la;
        if (len > key_cap) {
            char *q = pl_realloc(key, len);
            if (!q) {
                s = pl_fail(err, PL_ERR_NOMEM, "no memory for the merge ranks");
                break;
            }
            key = q, key_cap = len;
        }
        memcpy(key, json_string_value(a), la);
        if (b) key[la] = ' ', memcpy(key + la + 1, json_string_value(b), lb);
        if (!json_object_getn(rank, key, len) &&
            json_object_setn_new(rank, key, len, json_integer((json_int_t)i)))
            s = pl_fail(err, PL_ERR_NOMEM, "no memory for the merge ranks");
    }
    const char *k;
    size_t klen;
    json_t *val;
    json_object_keylen_foreach((json_t *)vocab, k, klen, val)
    {
        if (s) break;
        if (klen > SIZE_MAX / 16) goto done; /* keeps the sizes below exact */
        if (klen + 1 > start_cap || 2 * klen + 1 > key_cap) {
            size_t *q = pl_realloc(start, (klen + 1) * sizeof *start);
            if (q) start = q, start_cap = klen + 1;
            char *c = q ? pl_realloc(key, 2 * klen + 1) : NULL;
            if (c) key = c, key_cap = 2 * klen + 1;
            if (!q || !c) {
                s = pl_fail(err, PL_ERR_NOMEM, "no memory to check the merges");
                break;
            }
        }
        size_t n = 0; /* the parts: [start[i], start[i + 1]) */
        for (size_t i = 0; i < klen; n++) {
            start[n] = i;
            unsigned char c = (unsigned char)k[i];
            size_t step = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
            i += step < klen - i ? step : klen - i;
        }
        start[n] = klen;
        while (n > 1) {
            size_t best = n;
            json_int_t best_rank = 0;
            for (size_t i = 0; i + 1 < n; i++) {
                size_t la = start[i + 1] - start[i], lb = start[i + 2] - start[i + 1];
                memcpy(key, k + start[i], la);
                key[la] = ' ';
                memcpy(key + la + 1, k + start[i + 1], lb);
                const json_t *r = json_object_getn(rank, key, la + 1 + lb);
                if (r && (best == n || json_integer_value(r) < best_rank))
                    best = i, best_rank = json_integer_value(r);
            }
            if (best == n) break;
            memmove(start + best + 1, start + best + 2, (n - best - 1) * sizeof *start);
            n--;
        }
        if (n > 1) {
            *bad = k, *bad_len = klen;
            goto done;
        }
    }
    if (!s) *all = 1;
done:
    pl_free(start);
    pl_free(key);
    json_decref(rank);
    return s;
}

pl_status pl_pretok_identify(const json_t *tok, const char *file, const struct pl_pretok_def **out,
                             pl_error *err)
{
    *out = NULL;
    const json_t *p = json_object_get(tok, "pre_tokenizer");
    if (!p || json_is_null(p))
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: no pre_tokenizer (plumb converts byte-level BPE, which declares one)",
                       file);
    struct form f = {.n = 0};
    pl_status s = reduce(&f, p, file, err, 0);
    if (s) return s;
    int n_bl = 0;
    for (int k = 0; k < f.n; k++) n_bl += f.step[k] == pl_pretok_bytelevel;
    if (n_bl != 1)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: pre_tokenizer [%s] has %d ByteLevel steps; byte-level BPE has one",
                       file, f.what, n_bl);
    int ignore = bool_field(json_object_get(tok, "model"), "ignore_merges", 0);
    int norm;
    if ((s = pl_tok_json_norm(tok, file, &norm, err))) return s;
    size_t n;
    const struct pl_pretok_def *tab = pl_pretok_table(&n), *form_only = NULL, *form_norm = NULL;
    int gap_at = -1; /* a Removed-inverted step whose regex leaves gaps */
    for (size_t i = 0; i < n; i++) {
        if (!same_steps(&f, &tab[i])) continue;
        int gapless = 1;
        for (int k = 0; k < f.n && gapless; k++)
            if (f.kept[k]) {
                if ((s = pl_pretok_step_gapless(&tab[i], k, &gapless, err))) return s;
                if (!gapless) gap_at = k;
            }
        if (!gapless) continue;
        if (!form_only) form_only = &tab[i];
        if (!form_norm && tab[i].norm == norm) form_norm = &tab[i];
        if (tab[i].ignore_merges != ignore) continue;
        if (tab[i].norm == norm) {
            *out = &tab[i];
            return PL_OK;
        }
        if (!*out) *out = &tab[i];
    }
    if (*out) return PL_OK;
    if (gap_at >= 0 && !form_only)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: Split '%.48s' (Removed, inverted) drops the text its regex does not "
                       "match, and it does not match every character: plumb keeps every byte",
                       file, f.step[gap_at]);
    if (form_only) {
        /* ignore_merges is moot where the merges build every token: take the form's entry */
        int all;
        const char *bad;
        size_t bad_len;
        if ((s = merges_build_every_token(tok, &all, &bad, &bad_len, err))) return s;
        if (all) {
            *out = form_norm ? form_norm : form_only;
            return PL_OK;
        }
        return pl_fail(
            err, PL_ERR_UNSUPPORTED,
            "%s: model.ignore_merges is %s, but the '%s' pre-tokenizer implies %s, and "
            "it matters: %s%.*s%s",
            file, ignore ? "true" : "false", form_only->name, ignore ? "false" : "true",
            bad ? "the merges do not build the token '" : "no vocab and merges it can check",
            bad ? (int)(bad_len < 48 ? bad_len : 48) : 0, bad ? bad : "", bad ? "' whole" : "");
    }
    return pl_fail(err, PL_ERR_UNSUPPORTED,
                   "%s: pre_tokenizer [%s%s%.60s] is not one plumb knows (known: %s)", file, f.what,
                   f.n && f.step[0] != pl_pretok_bytelevel ? ": " : "",
                   f.n && f.step[0] != pl_pretok_bytelevel ? f.step[0] : "", pl_pretok_names());
}
