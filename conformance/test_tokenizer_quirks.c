/* test_tokenizer_quirks.c — vocabularies llama.cpp loads although they look odd: added tokens
 * whose text spells a byte-level token's bytes (GPT-NeoX/MPT space runs, DeepSeek's added byte
 * characters), control tokens in the "<｜…｜>" style, empty and unused tokens, tokens no merge
 * reaches, and the splitter's order. Each test asserts the ids llama.cpp produces (the rule in
 * engine/tokenizer/README.md, "Vocabulary quirks") and the decode. Not the refusals
 * (test_tokenizer_hostile.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quirk_vocab.h"
#include "testutil.h"
#include "tokfix.h"

#define NX(a) ((long)(sizeof(a) / sizeof((a)[0])))

/* ---- a vocabulary builder: tokens by their stored text, merges by their raw bytes ---- */

#define VB_MAX 320
typedef struct vb {
    char text[VB_MAX][48];
    const char *toks[VB_MAX];
    int32_t types[VB_MAX];
    uint32_t n;
    char mtext[16][64];
    const char *merges[16];
    uint32_t nm;
} vb;

static int32_t vb_add(vb *v, const char *stored, int32_t type)
{
    snprintf(v->text[v->n], sizeof v->text[v->n], "%s", stored);
    v->toks[v->n] = v->text[v->n];
    v->types[v->n] = type;
    return (int32_t)v->n++;
}

/* The 256 one-byte tokens in GPT-2's mapping, in byte order, except the bytes in skip. */
static void vb_bytes(vb *v, const char *skip)
{
    for (int b = 0; b < 256; b++) {
        if (b && strchr(skip, b)) continue;
        char c = (char)b, t[8];
        vb_add(v, tf_gpt2(&c, 1, t), PL_TOKEN_NORMAL);
    }
}

/* The id of the token stored as `stored`, or -1. */
static int32_t vb_id(const vb *v, const char *stored)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (strcmp(v->text[i], stored) == 0) return (int32_t)i;
    return -1;
}

/* The id of the byte-level token of raw bytes p. */
static int32_t vb_raw(const vb *v, const char *p)
{
    char t[48];
    return vb_id(v, tf_gpt2(p, strlen(p), t));
}

/* Merge of raw l and r (GPT-2-mapped in the file) and its result, a token of type `type`. */
static int32_t vb_merge(vb *v, const char *l, const char *r, int32_t type)
{
    char a[24], b[24], j[48];
    snprintf(v->mtext[v->nm], sizeof v->mtext[v->nm], "%s %s", tf_gpt2(l, strlen(l), a),
             tf_gpt2(r, strlen(r), b));
    v->merges[v->nm] = v->mtext[v->nm];
    v->nm++;
    snprintf(j, sizeof j, "%s%s", l, r);
    char t[48];
    return vb_add(v, tf_gpt2(j, strlen(j), t), type);
}

static pl_status vb_load(const vb *v, const char *pre, tf_file *f, pl_error *err)
{
    pl_gguf_writer *w = tf_writer();
    tf_str(w, "tokenizer.ggml.model", "gpt2");
    tf_str(w, "tokenizer.ggml.pre", pre);
    tf_strs(w, "tokenizer.ggml.tokens", v->toks, v->n);
    tf_i32s(w, "tokenizer.ggml.token_type", v->types, v->n);
    tf_strs(w, "tokenizer.ggml.merges", v->merges, v->nm);
    return tf_open(f, w, err);
}

/* Encodes text with flags and checks the ids; then that they decode to `back` (NULL: text).
 * Decoding renders control tokens (PL_DETOK_SPECIAL) when parse_special matched them. */
static void expect(const struct pl_tokenizer *t, const char *text, uint32_t flags,
                   const int32_t *want, long n_want, const char *back, int line)
{
    int32_t ids[64];
    char what[96];
    snprintf(what, sizeof what, "line %d: '%s' flags %u", line, text, flags);
    long n = tf_encode(t, text, strlen(text), flags, ids, 64, what);
    TU_CHECK(n >= 0 && tf_same_ids(ids, n, want, n_want, what), "%s: ids differ", what);
    if (n < 0) return;
    size_t len;
    uint32_t dflags = flags & PL_TOKENIZE_PARSE_SPECIAL ? PL_DETOK_SPECIAL : 0;
    char *d = tf_decode(t, ids, (size_t)n, dflags, &len);
    const char *b = back ? back : text;
    TU_CHECK(d && len == strlen(b) && memcmp(d, b, len) == 0, "%s: decodes to '%.*s', want '%s'",
             what, d ? (int)len : 0, d ? d : "", b);
    free(d);
}
#define EXPECT(t, text, flags, ...)                                                                \
    do {                                                                                           \
        const int32_t want_[] = {__VA_ARGS__};                                                     \
        expect(t, text, flags, want_, NX(want_), NULL, __LINE__);                                  \
    } while (0)
#define BOTH(t, text, ...)                                                                         \
    do {                                                                                           \
        EXPECT(t, text, 0, __VA_ARGS__);                                                           \
        EXPECT(t, text, PL_TOKENIZE_PARSE_SPECIAL, __VA_ARGS__);                                   \
    } while (0)

static const uint32_t PS = PL_TOKENIZE_PARSE_SPECIAL;

/* ---- GPT-NeoX / MPT: added tokens for runs of spaces beside byte-level "ĠĠ", "ĠĠĠ" ---- */

static void build_neox(vb *v, int32_t space_type)
{
    vb_bytes(v, "");
    vb_merge(v, " ", " ", PL_TOKEN_NORMAL);  /* ĠĠ */
    vb_merge(v, "  ", " ", PL_TOKEN_NORMAL); /* ĠĠĠ */
    vb_merge(v, " ", "b", PL_TOKEN_NORMAL);  /* Ġb */
    vb_add(v, "  ", space_type);
    vb_add(v, "   ", space_type);
    vb_add(v, "<|endoftext|>", PL_TOKEN_CONTROL);
}

/* The splitter finds the added "  " and "   " by their own text, before any pre-tokenizer, with
 * or without parse_special; byte-level "ĠĠ" is what BPE would have made of the same bytes. */
static void quirk_user_defined_space_runs_beside_byte_level_runs(void)
{
    static vb v;
    memset(&v, 0, sizeof v);
    build_neox(&v, PL_TOKEN_USER_DEFINED);
    tf_file f;
    pl_error err;
    TU_CHECK(vb_load(&v, "gpt2", &f, &err) == PL_OK, "load: %s", err.msg);
    if (!f.t) return;
    const int32_t a = vb_raw(&v, "a"), b = vb_raw(&v, "b"), sb = vb_raw(&v, " b");
    const int32_t ud2 = vb_id(&v, "  "), ud3 = vb_id(&v, "   ");
    BOTH(f.t, "a  b", a, ud2, b);
    BOTH(f.t, "a     b", a, ud3, ud2, b); /* the longer text claims first */
    BOTH(f.t, "a  ", a, ud2);
    BOTH(f.t, "a b", a, sb);
    /* the byte-level side knows "  " as the normal token */
    TU_CHECK(pl_tok_find(f.t, "  ", 2) == vb_raw(&v, "  "), "pl_tok_find('  ') = %d, want %d",
             pl_tok_find(f.t, "  ", 2), vb_raw(&v, "  "));
    tf_close(&f);
}

/* The same texts as control tokens (HF "special": true): only parse_special finds them; without
 * it the bytes go through BPE and come out as the byte-level tokens. */
static void quirk_control_space_runs_only_with_parse_special(void)
{
    static vb v;
    memset(&v, 0, sizeof v);
    build_neox(&v, PL_TOKEN_CONTROL);
    tf_file f;
    pl_error err;
    TU_CHECK(vb_load(&v, "gpt2", &f, &err) == PL_OK, "load: %s", err.msg);
    if (!f.t) return;
    const int32_t a = vb_raw(&v, "a"), c2 = vb_id(&v, "  "), c3 = vb_id(&v, "   ");
    EXPECT(f.t, "a  ", 0, a, vb_raw(&v, "  "));
    EXPECT(f.t, "a   ", 0, a, vb_raw(&v, "   "));
    EXPECT(f.t, "a  ", PS, a, c2);
    EXPECT(f.t, "a     ", PS, a, c3, c2);
    tf_close(&f);
}

/* ---- DeepSeek-LLM / Coder: added one-character tokens for the bytes valid UTF-8 never holds
 * (stored "õ", which is also the byte-level spelling of byte 0xF5 and the text of byte-level
 * "Ãµ"), and "<｜…｜>" control tokens ---- */

#define DS_BOS                                                                                     \
    "<\xef\xbd\x9c"                                                                                \
    "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
#define DS_EOS                                                                                     \
    "<\xef\xbd\x9c"                                                                                \
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
#define DS_FIM                                                                                     \
    "<\xef\xbd\x9c"                                                                                \
    "fim\xe2\x96\x81hole\xef\xbd\x9c>"

static void quirk_added_byte_characters_beside_merged_pieces(void)
{
    static vb v;
    memset(&v, 0, sizeof v);
    vb_bytes(&v, "\xf5");
    const int32_t merged = vb_merge(&v, "\xc3", "\xb5", PL_TOKEN_NORMAL); /* "Ãµ" = bytes of õ */
    const int32_t ud = vb_add(&v, "\xc3\xb5", PL_TOKEN_USER_DEFINED);     /* added "õ" */
    const int32_t bos = vb_add(&v, DS_BOS, PL_TOKEN_CONTROL);
    const int32_t eos = vb_add(&v, DS_EOS, PL_TOKEN_CONTROL);
    const int32_t fim = vb_add(&v, DS_FIM, PL_TOKEN_CONTROL);
    tf_file f;
    pl_error err;
    TU_CHECK(vb_load(&v, "gpt2", &f, &err) == PL_OK, "load: %s", err.msg);
    if (!f.t) return;
    const int32_t x = vb_raw(&v, "x"), y = vb_raw(&v, "y");
    BOTH(f.t, "x\xc3\xb5y", x, ud, y); /* the added token, never the merge */
    EXPECT(f.t, DS_BOS "x" DS_EOS, PS, bos, x, eos);
    EXPECT(f.t, DS_FIM "\xc3\xb5", PS, fim, ud);
    /* without parse_special the control text is bytes: one token each, no merge applies */
    {
        const char *s = DS_EOS;
        int32_t want[64];
        long n = 0;
        for (const char *p = s; *p; p++) {
            char one[2] = {*p, 0};
            want[n++] = vb_raw(&v, one);
        }
        expect(f.t, s, 0, want, n, NULL, __LINE__);
    }
    /* Byte 0xF5 (no valid UTF-8 holds it) is found by its byte-level spelling "õ": the added
     * token, as llama.cpp's text_to_token finds it; that token decodes to its own text. */
    {
        const int32_t want[] = {x, ud};
        expect(f.t, "x\xf5", 0, want, 2, "x\xc3\xb5", __LINE__);
    }
    TU_CHECK(pl_tok_find(f.t, "\xc3\xb5", 2) == merged, "the byte-level side finds %d, want %d",
             pl_tok_find(f.t, "\xc3\xb5", 2), merged);
    tf_close(&f);
}

/* ---- empty tokens: loaded as "[EMPTY_<id>]", the text llama.cpp gives them ---- */

static void quirk_empty_tokens_take_llama_cpp_names(void)
{
    static vb v;
    memset(&v, 0, sizeof v);
    vb_bytes(&v, "");
    const int32_t en = vb_add(&v, "", PL_TOKEN_NORMAL);
    const int32_t ec = vb_add(&v, "", PL_TOKEN_CONTROL);
    const int32_t eu = vb_add(&v, "", PL_TOKEN_USER_DEFINED);
    const int32_t ex = vb_add(&v, "", PL_TOKEN_UNUSED);
    tf_file f;
    pl_error err;
    TU_CHECK(vb_load(&v, "gpt2", &f, &err) == PL_OK, "load: %s", err.msg);
    if (!f.t) return;
    char nc[32], nu[32], nn[32];
    snprintf(nn, sizeof nn, "[EMPTY_%d]", en);
    snprintf(nc, sizeof nc, "[EMPTY_%d]", ec);
    snprintf(nu, sizeof nu, "[EMPTY_%d]", eu);
    /* the user-defined one is matched by its name; the control one only with parse_special */
    BOTH(f.t, nu, eu);
    EXPECT(f.t, nc, PS, ec);
    /* the normal one is never produced (no merge makes its name) and decodes to its name */
    {
        size_t len;
        char *d = tf_decode(f.t, &en, 1, 0, &len);
        TU_CHECK(d && len == strlen(nn) && memcmp(d, nn, len) == 0,
                 "empty normal token decodes "
                 "to '%.*s', want '%s'",
                 d ? (int)len : 0, d ? d : "", nn);
        free(d);
        d = tf_decode(f.t, &ex, 1, PL_DETOK_SPECIAL, &len);
        TU_CHECK(d && len == 0, "empty unused token decodes to %zu bytes, want none", len);
        free(d);
    }
    tf_close(&f);
}

/* ---- unused tokens (type 5): never matched by the splitter, decode to nothing; the byte-level
 * side finds them by their text like any token ---- */

static void quirk_unused_tokens_found_only_by_their_text(void)
{
    static vb v;
    memset(&v, 0, sizeof v);
    vb_bytes(&v, "");
    const int32_t ab = vb_merge(&v, "a", "b", PL_TOKEN_UNUSED);
    const int32_t pad = vb_add(&v, "[PAD300]", PL_TOKEN_UNUSED);
    tf_file f;
    pl_error err;
    TU_CHECK(vb_load(&v, "gpt2", &f, &err) == PL_OK, "load: %s", err.msg);
    if (!f.t) return;
    /* "[PAD300]" in text is bytes and words, never the unused token */
    BOTH(f.t, "[PAD300]", vb_raw(&v, "["), vb_raw(&v, "P"), vb_raw(&v, "A"), vb_raw(&v, "D"),
         vb_raw(&v, "3"), vb_raw(&v, "0"), vb_raw(&v, "0"), vb_raw(&v, "]"));
    /* the merge of a and b names the unused token: llama.cpp emits it, and it decodes to "" */
    {
        const int32_t want[] = {ab};
        expect(f.t, "ab", 0, want, 1, "", __LINE__);
    }
    size_t len;
    char *d = tf_decode(f.t, &pad, 1, PL_DETOK_SPECIAL, &len);
    TU_CHECK(d && len == 0, "unused token decodes to %zu bytes, want none", len);
    free(d);
    tf_close(&f);
}

/* ---- tokens past the merges' reach: loaded, decoded, never produced by merging; only a
 * pre-tokenizer that looks words up whole (ignore_merges, Llama 3's) finds them ---- */

static void quirk_tokens_no_merge_reaches(void)
{
    static vb v;
    memset(&v, 0, sizeof v);
    vb_bytes(&v, "");
    const int32_t xyz = vb_add(&v, "xyz", PL_TOKEN_NORMAL);
    const int32_t sp = vb_add(&v, "\xc4\xa0qq", PL_TOKEN_NORMAL); /* "Ġqq" */
    tf_file f;
    pl_error err;
    TU_CHECK(vb_load(&v, "gpt2", &f, &err) == PL_OK, "load: %s", err.msg);
    if (!f.t) return;
    BOTH(f.t, "xyz", vb_raw(&v, "x"), vb_raw(&v, "y"), vb_raw(&v, "z"));
    BOTH(f.t, " qq", vb_raw(&v, " "), vb_raw(&v, "q"), vb_raw(&v, "q"));
    size_t len;
    char *d = tf_decode(f.t, &sp, 1, 0, &len);
    TU_CHECK(d && len == 3 && memcmp(d, " qq", 3) == 0, "'Ġqq' decodes to '%.*s'", d ? (int)len : 0,
             d ? d : "");
    free(d);
    tf_close(&f);
    TU_CHECK(vb_load(&v, "llama-bpe", &f, &err) == PL_OK, "load llama-bpe: %s", err.msg);
    if (!f.t) return;
    BOTH(f.t, "xyz", xyz);
    BOTH(f.t, " qq", sp);
    tf_close(&f);
}

/* ---- the splitter's order: longest text first over the whole text, then the lower id ---- */

static void quirk_splitter_longest_text_first_then_lower_id(void)
{
    static vb v;
    memset(&v, 0, sizeof v);
    vb_bytes(&v, "");
    const int32_t ab = vb_add(&v, "ab", PL_TOKEN_USER_DEFINED);
    const int32_t bcd = vb_add(&v, "bcd", PL_TOKEN_USER_DEFINED);
    const int32_t ba = vb_add(&v, "ba", PL_TOKEN_USER_DEFINED);
    const int32_t ctl = vb_add(&v, "<c>abcd", PL_TOKEN_CONTROL);
    tf_file f;
    pl_error err;
    TU_CHECK(vb_load(&v, "gpt2", &f, &err) == PL_OK, "load: %s", err.msg);
    if (!f.t) return;
    const int32_t a = vb_raw(&v, "a"), b = vb_raw(&v, "b");
    BOTH(f.t, "abcd", a, bcd); /* HF tokenizers: ab c d (leftmost-longest) */
    BOTH(f.t, "aba", ab, a);
    BOTH(f.t, "bab", b, ab); /* equal lengths: ab (lower id) first; HF: ba b */
    (void)ba;
    /* the control token outranks them only when parse_special lets it match */
    EXPECT(f.t, "<c>abcd", PS, ctl);
    EXPECT(f.t, "<c>abcd", 0, vb_raw(&v, "<"), vb_raw(&v, "c"), vb_raw(&v, ">"), a, bcd);
    tf_close(&f);
}

/* ---- the splitter against llama.cpp's partition written out literally: a list of fragments,
 * each special in order (longest text first, then lower id) splitting every raw fragment at
 * each occurrence found left to right ---- */

struct frag {
    int start, len, id; /* id -1: raw text */
};

static int ref_partition(const char *text, int len, const vb *v, const int32_t *order, int n_ord,
                         int parse, struct frag *out)
{
    int n = 0;
    if (len > 0) out[n++] = (struct frag){0, len, -1};
    for (int k = 0; k < n_ord; k++) {
        const int32_t id = order[k];
        if (v->types[id] == PL_TOKEN_CONTROL && !parse) continue;
        const char *x = v->text[id];
        const int xl = (int)strlen(x);
        struct frag next[256];
        int m = 0;
        for (int f = 0; f < n; f++) {
            if (out[f].id >= 0) {
                next[m++] = out[f];
                continue;
            }
            int at = out[f].start, end = out[f].start + out[f].len;
            for (int i = at; i + xl <= end; i++)
                if (memcmp(text + i, x, (size_t)xl) == 0) {
                    if (i > at) next[m++] = (struct frag){at, i - at, -1};
                    next[m++] = (struct frag){i, xl, id};
                    at = i + xl;
                    i = at - 1;
                }
            if (at < end) next[m++] = (struct frag){at, end - at, -1};
        }
        memcpy(out, next, (size_t)m * sizeof *out);
        n = m;
    }
    return n;
}

/* Random overlapping user-defined and control texts over "abc", random texts: the ids are the
 * reference partition's, raw fragments one byte token per byte (no merges). */
static void quirk_splitter_matches_llama_cpp_partition_on_random_texts(void)
{
    tu_rng r;
    const uint64_t seed = tu_seed() ^ 0x51u;
    tu_rng_init(&r, seed);
    for (int round = 0; round < 200; round++) {
        static vb v;
        memset(&v, 0, sizeof v);
        vb_bytes(&v, "");
        int32_t order[48];
        int n_ord = 0;
        const int n_sp = (int)tu_rng_range(&r, 1, round % 2 ? 10 : 40);
        for (int k = 0; k < n_sp; k++) {
            char t[8];
            int l = (int)tu_rng_range(&r, 1, 4);
            for (int j = 0; j < l; j++) t[j] = (char)('a' + tu_rng_range(&r, 0, 2));
            t[l] = 0;
            if (l == 1 || vb_id(&v, t) >= 0) continue; /* one-byte texts are byte tokens */
            int32_t type = tu_rng_range(&r, 0, 2) ? PL_TOKEN_USER_DEFINED : PL_TOKEN_CONTROL;
            order[n_ord++] = vb_add(&v, t, type);
        }
        for (int a = 1; a < n_ord; a++) /* insertion sort: longer first, then lower id */
            for (int b = a; b > 0 && strlen(v.text[order[b]]) > strlen(v.text[order[b - 1]]); b--) {
                int32_t tmp = order[b];
                order[b] = order[b - 1];
                order[b - 1] = tmp;
            }
        tf_file f;
        pl_error err;
        TU_CHECK(vb_load(&v, "gpt2", &f, &err) == PL_OK, "seed %llu round %d: load: %s",
                 (unsigned long long)seed, round, err.msg);
        if (!f.t) return;
        for (int q = 0; q < 10; q++) {
            char text[48];
            int len = (int)tu_rng_range(&r, 0, 40);
            for (int j = 0; j < len; j++) text[j] = (char)('a' + tu_rng_range(&r, 0, 2));
            text[len] = 0;
            for (int parse = 0; parse < 2; parse++) {
                struct frag fr[256];
                int nf = ref_partition(text, len, &v, order, n_ord, parse, fr);
                int32_t want[64];
                long nw = 0;
                for (int k = 0; k < nf; k++)
                    if (fr[k].id >= 0)
                        want[nw++] = fr[k].id;
                    else
                        for (int j = 0; j < fr[k].len; j++)
                            want[nw++] = (int32_t)text[fr[k].start + j];
                int32_t got[64];
                char what[96];
                snprintf(what, sizeof what, "seed %llu round %d '%s' parse %d",
                         (unsigned long long)seed, round, text, parse);
                long n = tf_encode(f.t, text, (size_t)len, parse ? PS : 0, got, 64, what);
                TU_CHECK(n >= 0 && tf_same_ids(got, n, want, nw, what), "%s: ids differ", what);
            }
        }
        tf_close(&f);
    }
}

/* The fuzz seeds' vocabulary (synth/quirk_vocab.c) loads with both pre-tokenizers, and valid
 * UTF-8 text that hits its quirks round-trips. */
static void quirk_synth_vocabulary_loads_and_round_trips(void)
{
    static const char *const pres[] = {"gpt2", "llama-bpe"};
    static const char text[] = "a  b a     b \xc3\xb5 abcd bab xyz [PAD300] <|endoftext|>";
    for (int k = 0; k < 2; k++) {
        pl_gguf_writer *w = tf_writer();
        pl_error err;
        TU_CHECK(quirk_vocab_write(w, pres[k], &err) == PL_OK, "write: %s", err.msg);
        tf_file f;
        TU_CHECK(tf_open(&f, w, &err) == PL_OK, "%s: load: %s", pres[k], err.msg);
        if (!f.t) continue;
        for (int parse = 0; parse < 2; parse++) {
            int32_t ids[128];
            long n = tf_encode(f.t, text, sizeof text - 1, parse ? PS : 0, ids, 128, pres[k]);
            size_t len = 0;
            char *d =
                n >= 0 ? tf_decode(f.t, ids, (size_t)n, parse ? PL_DETOK_SPECIAL : 0, &len) : NULL;
            TU_CHECK(d && len == sizeof text - 1 && memcmp(d, text, len) == 0,
                     "%s parse %d: decodes to '%.*s'", pres[k], parse, d ? (int)len : 0,
                     d ? d : "");
            free(d);
        }
        tf_close(&f);
    }
}

int main(void)
{
    static const tu_test tests[] = {
        {"quirk_user_defined_space_runs_beside_byte_level_runs",
         quirk_user_defined_space_runs_beside_byte_level_runs},
        {"quirk_control_space_runs_only_with_parse_special",
         quirk_control_space_runs_only_with_parse_special},
        {"quirk_added_byte_characters_beside_merged_pieces",
         quirk_added_byte_characters_beside_merged_pieces},
        {"quirk_empty_tokens_take_llama_cpp_names", quirk_empty_tokens_take_llama_cpp_names},
        {"quirk_unused_tokens_found_only_by_their_text",
         quirk_unused_tokens_found_only_by_their_text},
        {"quirk_tokens_no_merge_reaches", quirk_tokens_no_merge_reaches},
        {"quirk_splitter_longest_text_first_then_lower_id",
         quirk_splitter_longest_text_first_then_lower_id},
        {"quirk_splitter_matches_llama_cpp_partition_on_random_texts",
         quirk_splitter_matches_llama_cpp_partition_on_random_texts},
        {"quirk_synth_vocabulary_loads_and_round_trips",
         quirk_synth_vocabulary_loads_and_round_trips},
        {NULL, NULL},
    };
    return tu_run("tokenizer_quirks", tests);
}
