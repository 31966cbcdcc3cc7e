/* test_tokenizer_props.c — properties over random inputs (seeded; PLUMB_SEED replays): round
 * trips, agreement with naive reference merges, streaming == one-shot decode without split
 * characters, determinism across threads and runs. Not hand-worked ids (test_tokenizer.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "demo_vocab.h"
#include "testutil.h"
#include "tokenizer/utf8.h"
#include "tokfix.h"

enum { SPM = 0, BPE = 1, LLAMA3 = 2 };

/* ---- random text ---- */

static size_t put_cp(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Valid UTF-8 of up to max_chars characters drawn from text-like ranges (never U+2581, which
 * SentencePiece cannot tell from a space). Returns the byte length; out holds 4 * max_chars. */
static size_t random_utf8(tu_rng *r, char *out, size_t max_chars)
{
    static const char *const words[] = {"the",    " river", "'s",   "'LL",       " 1743",
                                        "  ",     "\n\n",   "\t",   " 你好",     "🙂",
                                        " don't", "Ω",      "\r\n", "<|im_end|>"};
    size_t n = (size_t)tu_rng_range(r, 0, (int64_t)max_chars), o = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t k = tu_rng_range(r, 0, 99);
        uint32_t cp;
        if (k < 30) {
            const char *w = words[tu_rng_range(r, 0, 13)];
            size_t l = strlen(w);
            if (o + l > 4 * max_chars) break;
            memcpy(out + o, w, l);
            o += l;
            continue;
        }
        if (k < 70)
            cp = (uint32_t)tu_rng_range(r, 0x20, 0x7E);
        else if (k < 75)
            cp = (uint32_t)tu_rng_range(r, 0, 0x1F);
        else if (k < 82)
            cp = (uint32_t)tu_rng_range(r, 0xA0, 0x24F);
        else if (k < 86)
            cp = (uint32_t)tu_rng_range(r, 0x400, 0x4FF);
        else if (k < 92)
            cp = (uint32_t)tu_rng_range(r, 0x4E00, 0x9FFF);
        else if (k < 96)
            cp = (uint32_t)tu_rng_range(r, 0x1F300, 0x1FAFF);
        else
            cp = (uint32_t)tu_rng_range(r, 0x80, 0x10FFFF);
        if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0x2581) cp = 'x';
        if (o + 4 > 4 * max_chars) break;
        o += put_cp(out + o, cp);
    }
    return o;
}

/* Any bytes, biased so that valid multi-byte characters and broken ones both occur. */
static size_t random_bytes(tu_rng *r, char *out, size_t max)
{
    size_t n = (size_t)tu_rng_range(r, 0, (int64_t)max), o = 0;
    while (o < n) {
        int64_t k = tu_rng_range(r, 0, 9);
        if (k < 3) {
            out[o++] = (char)tu_rng_range(r, 0, 255);
        } else if (k < 6) {
            out[o++] = (char)tu_rng_range(r, 0x20, 0x7E);
        } else if (o + 4 <= n) {
            char c[4];
            size_t l = put_cp(c, (uint32_t)tu_rng_range(r, 0x80, 0x1FFFF));
            size_t keep = k == 9 ? (size_t)tu_rng_range(r, 1, (int64_t)l) : l; /* maybe cut */
            memcpy(out + o, c, keep);
            o += keep;
        } else {
            out[o++] = ' ';
        }
    }
    return o;
}

static int has_spm_space(const char *p, size_t n)
{
    for (size_t i = 0; i + 3 <= n; i++)
        if (memcmp(p + i, "\xe2\x96\x81", 3) == 0) return 1;
    return 0;
}

/* ---- round trips ---- */

static void roundtrip(int kind, int bytes, uint32_t flags, int iters)
{
    tf_file f;
    pl_error err;
    TU_CHECK(tf_demo(&f, kind, 1500, &err) == PL_OK, "demo: %s", err.msg);
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ (uint64_t)(kind * 131 + bytes));
    static char text[4096];
    static int32_t ids[4096];
    int bad = 0;
    for (int it = 0; it < iters && bad < 3; it++) {
        size_t n = bytes ? random_bytes(&r, text, 300) : random_utf8(&r, text, 200);
        if (kind == SPM && has_spm_space(text, n)) continue;
        long k = tf_encode(f.t, text, n, flags, ids, 4096, "roundtrip");
        size_t len = 0;
        uint32_t dflags =
            PL_DETOK_STRIP_PREFIX | (flags & PL_TOKENIZE_PARSE_SPECIAL ? PL_DETOK_SPECIAL : 0);
        char *back = k >= 0 ? tf_decode(f.t, ids, (size_t)k, dflags, &len) : NULL;
        /* the text the ids spell: NFC where the vocabulary normalizes */
        static char norm[4 * 4096];
        size_t nn = 0;
        TU_CHECK(pl_tok_normalize(f.t, text, n, flags & PL_TOKENIZE_PARSE_SPECIAL, norm,
                                  sizeof norm, &nn, &err) == PL_OK,
                 "normalize: %s", err.msg);
        int ok = back && len == nn && memcmp(back, norm, nn) == 0;
        if (!ok) bad++;
        TU_CHECK(ok, "kind %d iteration %d (seed %llu): %zu bytes -> %ld tokens -> %zu bytes", kind,
                 it, (unsigned long long)tu_seed(), n, k, len);
        free(back);
    }
    tf_close(&f);
}

static void bpe_decode_encode_is_identity_on_random_bytes(void)
{
    roundtrip(BPE, 1, 0, 1500);
    roundtrip(LLAMA3, 1, 0, 1500);
    roundtrip(BPE, 1, PL_TOKENIZE_PARSE_SPECIAL, 500);
}

static void spm_decode_encode_is_identity_on_random_utf8(void)
{
    roundtrip(SPM, 0, 0, 1500);
    roundtrip(SPM, 0, PL_TOKENIZE_ADD_BOS, 300);
    roundtrip(SPM, 0, PL_TOKENIZE_PARSE_SPECIAL, 300);
}

/* Documented: with byte fallback even invalid UTF-8 round-trips through SentencePiece. */
static void spm_decode_encode_is_identity_on_random_bytes(void)
{
    roundtrip(SPM, 1, 0, 1000);
}

/* ---- naive references: the same rules, quadratic, no heap ---- */

struct ref_ctx {
    const struct pl_tokenizer *t;
    int32_t *out;
    size_t n;
};

static pl_status ref_bpe_word(void *user, const char *w, size_t n)
{
    struct ref_ctx *c = user;
    const struct pl_tokenizer *t = c->t;
    if (t->pre.def->ignore_merges) {
        int32_t id = pl_tok_find(t, w, n);
        if (id >= 0) {
            c->out[c->n++] = id;
            return PL_OK;
        }
    }
    int32_t sym[512];
    size_t k = n;
    for (size_t i = 0; i < n; i++) sym[i] = t->byte_token[(unsigned char)w[i]];
    for (;;) {
        size_t best = SIZE_MAX;
        uint32_t best_rank = UINT32_MAX, result = 0;
        for (size_t i = 0; i + 1 < k; i++) {
            if (sym[i] < 0 || sym[i + 1] < 0) continue;
            const struct pl_tok_merge *m =
                pl_tok_find_merge(t, (uint32_t)sym[i], (uint32_t)sym[i + 1]);
            if (m && m->rank < best_rank) {
                best_rank = m->rank;
                best = i;
                result = m->result;
            }
        }
        if (best == SIZE_MAX) break;
        sym[best] = (int32_t)result;
        memmove(sym + best + 1, sym + best + 2, (k - best - 2) * sizeof *sym);
        k--;
    }
    for (size_t i = 0; i < k; i++) c->out[c->n++] = sym[i];
    return PL_OK;
}

static size_t ref_bpe(const struct pl_tokenizer *t, const char *text, size_t n, int32_t *out)
{
    struct ref_ctx c = {t, out, 0};
    struct pl_pretok_scratch *s;
    pl_error err;
    if (pl_pretok_scratch_new(&s, &t->pre, &err)) abort();
    const unsigned char *u = (const unsigned char *)text;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n) {
            size_t k = pl_utf8_char(u + j, n - j);
            if (!k) break;
            j += k;
        }
        if (j > i && t->norm) { /* utf8proc_map: not the encoder's path, and no shortcut */
            static const utf8proc_option_t opt[] = {0, UTF8PROC_COMPOSE, UTF8PROC_DECOMPOSE,
                                                    UTF8PROC_COMPOSE | UTF8PROC_COMPAT,
                                                    UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT};
            utf8proc_uint8_t *nf = NULL;
            utf8proc_ssize_t m =
                utf8proc_map((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(j - i), &nf,
                             UTF8PROC_STABLE | opt[t->norm]);
            if (m < 0) abort();
            pl_pretok_split(&t->pre, s, (const char *)nf, (size_t)m, ref_bpe_word, &c, &err);
            free(nf);
        } else if (j > i) {
            pl_pretok_split(&t->pre, s, text + i, j - i, ref_bpe_word, &c, &err);
        }
        size_t k = j;
        while (k < n && pl_utf8_char(u + k, n - k) == 0) k++;
        if (k > j) ref_bpe_word(&c, text + j, k - j);
        i = k;
    }
    pl_pretok_scratch_free(s);
    return c.n;
}

/* SentencePiece: the adjacent pair whose concatenation is the best-scored token merges first. */
static size_t ref_spm(const struct pl_tokenizer *t, const char *text, size_t n, int32_t *out)
{
    static char buf[4096];
    size_t o = 0, k = 0, m = 0;
    if (n == 0) return 0; /* no text, no dummy prefix */
    memcpy(buf, "\xe2\x96\x81", 3);
    o = 3;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == ' ') {
            memcpy(buf + o, "\xe2\x96\x81", 3);
            o += 3;
        } else {
            buf[o++] = text[i];
        }
    }
    size_t start[2048], len[2048];
    for (size_t i = 0; i < o;) {
        size_t c = pl_utf8_char((const unsigned char *)buf + i, o - i);
        if (!c) c = 1;
        start[k] = i;
        len[k++] = c;
        i += c;
    }
    for (;;) {
        size_t best = SIZE_MAX;
        float best_score = 0;
        for (size_t i = 0; i + 1 < k; i++) {
            int32_t id = pl_tok_find(t, buf + start[i], len[i] + len[i + 1]);
            if (id >= 0 && (best == SIZE_MAX || t->tok[id].score > best_score)) {
                best = i;
                best_score = t->tok[id].score;
            }
        }
        if (best == SIZE_MAX) break;
        len[best] += len[best + 1];
        memmove(start + best + 1, start + best + 2, (k - best - 2) * sizeof *start);
        memmove(len + best + 1, len + best + 2, (k - best - 2) * sizeof *len);
        k--;
    }
    for (size_t i = 0; i < k; i++) {
        int32_t id = pl_tok_find(t, buf + start[i], len[i]);
        if (id >= 0)
            out[m++] = id;
        else
            for (size_t b = 0; b < len[i]; b++)
                out[m++] = t->byte_token[(unsigned char)buf[start[i] + b]];
    }
    return m;
}

static void encode_agrees_with_naive_reference(int kind, uint32_t n_vocab, int iters)
{
    tf_file f;
    pl_error err;
    TU_CHECK(tf_demo(&f, kind, n_vocab, &err) == PL_OK, "demo: %s", err.msg);
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 7u * (uint64_t)kind + n_vocab);
    static char text[1024];
    static int32_t got[2048], want[2048];
    int bad = 0;
    for (int it = 0; it < iters && bad < 3; it++) {
        size_t n = it % 2 ? random_bytes(&r, text, 200) : random_utf8(&r, text, 120);
        if (kind == SPM && has_spm_space(text, n)) continue;
        long k = tf_encode(f.t, text, n, 0, got, 2048, "encode");
        size_t w = kind == SPM ? ref_spm(f.t, text, n, want) : ref_bpe(f.t, text, n, want);
        char what[96];
        snprintf(what, sizeof what, "kind %d vocab %u iteration %d seed %llu", kind, n_vocab, it,
                 (unsigned long long)tu_seed());
        int ok = tf_same_ids(got, k, want, (long)w, what);
        if (!ok) bad++;
        TU_CHECK(ok, "%s", what);
    }
    tf_close(&f);
}

/* Normalizing twice changes nothing more, and the normal form is what encoding sees: the ids
 * of x and of its normal form are the same. */
static void normalize_is_idempotent_and_what_encode_sees(void)
{
    tf_file f;
    pl_error err;
    TU_CHECK(tf_demo(&f, BPE, 1500, &err) == PL_OK, "demo: %s", err.msg);
    TU_CHECK(f.t->norm == PL_TOK_NORM_NFC,
             "the demo vocabulary (qwen2 pre-tokenizer) normalizes to NFC");
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x6e6663u);
    static char text[4096], once[16384], twice[16384];
    static int32_t a[4096], b[4096];
    int bad = 0;
    for (int it = 0; it < 400 && bad < 3; it++) {
        size_t n = it % 2 ? random_bytes(&r, text, 300) : random_utf8(&r, text, 200);
        if (it % 3 == 0 && n + 3 <= sizeof text) { /* a combining acute after a letter */
            memmove(text + 3, text, n);
            memcpy(text, "e\xcc\x81", 3);
            n += 3;
        }
        size_t n1 = 0, n2 = 0;
        int ok = pl_tok_normalize(f.t, text, n, 0, once, sizeof once, &n1, &err) == PL_OK &&
                 pl_tok_normalize(f.t, once, n1, 0, twice, sizeof twice, &n2, &err) == PL_OK &&
                 n1 == n2 && memcmp(once, twice, n1) == 0;
        long ka = ok ? tf_encode(f.t, text, n, 0, a, 4096, "text") : -1;
        long kb = ok ? tf_encode(f.t, once, n1, 0, b, 4096, "normal form") : -1;
        ok = ok && ka >= 0 && tf_same_ids(a, ka, b, kb, "ids of x vs of its normal form");
        if (!ok) bad++;
        TU_CHECK(ok, "iteration %d (seed %llu): %zu bytes, normalized %zu then %zu", it,
                 (unsigned long long)tu_seed(), n, n1, n2);
    }
    size_t need = 0; /* too small a buffer: the size needed, nothing written past it */
    char small[2] = {'#', '#'};
    TU_CHECK(pl_tok_normalize(f.t, "e\xcc\x81x", 4, 0, small, 1, &need, &err) ==
                     PL_ERR_BUFFER_TOO_SMALL &&
                 need == 3 && small[1] == '#',
             "too small: need %zu", need);
    tf_close(&f);
}

static void bpe_heap_merges_agree_with_quadratic_reference(void)
{
    encode_agrees_with_naive_reference(BPE, 600, 800);
    encode_agrees_with_naive_reference(BPE, 40000, 800);
    encode_agrees_with_naive_reference(LLAMA3, 3000, 800);
}

static void spm_heap_merges_agree_with_quadratic_reference(void)
{
    encode_agrees_with_naive_reference(SPM, 600, 800);
    encode_agrees_with_naive_reference(SPM, 40000, 800);
}

/* ---- streaming ---- */

/* Pushes ids one by one; checks the concatenation equals the one-shot decode and that no valid
 * multi-byte character of it straddles two pushes. */
static void stream_check(const struct pl_tokenizer *t, const int32_t *ids, size_t n, uint32_t flags,
                         const char *what)
{
    size_t one_len;
    char *one = tf_decode(t, ids, n, flags, &one_len);
    TU_CHECK(one != NULL, "%s: one-shot decode failed", what);
    if (!one) return;
    pl_detok *d;
    pl_error err;
    TU_CHECK(pl_detok_create(&d, t, flags, &err) == PL_OK, "%s: %s", what, err.msg);
    char *cat = malloc(one_len + 8);
    unsigned char *cut = calloc(one_len + 8, 1); /* cut[i]: a push ended just before byte i */
    if (!cat || !cut) abort();
    size_t o = 0;
    char buf[PL_TOK_MAX_TOKEN_BYTES + 8];
    for (size_t i = 0; i <= n; i++) {
        size_t k;
        pl_status s = i < n ? pl_detok_push(d, ids[i], buf, sizeof buf, &k, &err)
                            : pl_detok_flush(d, buf, sizeof buf, &k, &err);
        TU_CHECK(s == PL_OK, "%s: push %zu: %s", what, i, err.msg);
        if (s || o + k > one_len) break;
        memcpy(cat + o, buf, k);
        o += k;
        cut[o] = 1;
    }
    TU_CHECK(o == one_len && memcmp(cat, one, o) == 0, "%s: stream (%zu bytes) != one-shot (%zu)",
             what, o, one_len);
    for (size_t i = 0; i < one_len;) {
        size_t c = pl_utf8_char((const unsigned char *)one + i, one_len - i);
        if (c == 0) {
            i++;
            continue;
        }
        for (size_t j = i + 1; j < i + c; j++)
            TU_CHECK(!cut[j], "%s: character at byte %zu split by a push", what, i);
        i += c;
    }
    pl_detok_free(d);
    free(one);
    free(cat);
    free(cut);
}

static void streaming_equals_one_shot_and_never_splits_a_character(void)
{
    for (int kind = 0; kind < DEMO_VOCAB_COUNT; kind++) {
        tf_file f;
        pl_error err;
        TU_CHECK(tf_demo(&f, kind, 900, &err) == PL_OK, "demo: %s", err.msg);
        tu_rng r;
        tu_rng_init(&r, tu_seed() + 99u + (uint64_t)kind);
        static char text[2048];
        static int32_t ids[4096];
        for (int it = 0; it < 400; it++) {
            size_t n;
            long k;
            if (it % 3 == 2) { /* arbitrary ids, specials and byte tokens included */
                k = (long)tu_rng_range(&r, 0, 60);
                for (long i = 0; i < k; i++)
                    ids[i] = (int32_t)tu_rng_range(&r, 0, (int64_t)f.t->n_vocab - 1);
            } else {
                n = it % 3 ? random_bytes(&r, text, 300) : random_utf8(&r, text, 150);
                k = tf_encode(f.t, text, n, PL_TOKENIZE_PARSE_SPECIAL | PL_TOKENIZE_ADD_BOS, ids,
                              4096, "encode");
            }
            char what[64];
            snprintf(what, sizeof what, "kind %d iteration %d", kind, it);
            for (uint32_t fl = 0; fl < 4; fl++) stream_check(f.t, ids, (size_t)k, fl, what);
        }
        tf_close(&f);
    }
}

static void streaming_holds_back_a_split_character_until_complete(void)
{
    tf_file f;
    pl_error err;
    TU_CHECK(tf_demo(&f, BPE, 300, &err) == PL_OK, "demo: %s", err.msg);
    /* 🙂 = F0 9F 99 82, pushed as four byte tokens */
    static const unsigned char smile[] = {0xF0, 0x9F, 0x99, 0x82};
    pl_detok *d;
    TU_CHECK(pl_detok_create(&d, f.t, 0, &err) == PL_OK, "create");
    char buf[16];
    size_t k;
    for (int i = 0; i < 3; i++) {
        TU_CHECK(pl_detok_push(d, f.t->byte_token[smile[i]], buf, sizeof buf, &k, &err) == PL_OK &&
                     k == 0,
                 "byte %d of 4 emitted %zu bytes", i, k);
    }
    TU_CHECK(pl_detok_push(d, f.t->byte_token[smile[3]], buf, sizeof buf, &k, &err) == PL_OK &&
                 k == 4 && memcmp(buf, smile, 4) == 0,
             "the completed character comes out whole");
    /* a lead byte followed by ASCII can never complete: both come out as they are */
    pl_detok_push(d, f.t->byte_token[0xE4], buf, sizeof buf, &k, &err);
    TU_CHECK(k == 0, "lone lead byte held");
    TU_CHECK(pl_detok_push(d, f.t->byte_token['a'], buf, sizeof buf, &k, &err) == PL_OK && k == 2 &&
                 (unsigned char)buf[0] == 0xE4 && buf[1] == 'a',
             "broken sequence passed through");
    pl_detok_push(d, f.t->byte_token[0xE4], buf, sizeof buf, &k, &err);
    TU_CHECK(pl_detok_flush(d, buf, sizeof buf, &k, &err) == PL_OK && k == 1 &&
                 (unsigned char)buf[0] == 0xE4,
             "flush emits what is held");
    pl_detok_free(d);
    tf_close(&f);
}

static void streaming_too_small_buffer_changes_nothing(void)
{
    tf_file f;
    pl_error err;
    TU_CHECK(tf_demo(&f, BPE, 300, &err) == PL_OK, "demo: %s", err.msg);
    pl_detok *d;
    TU_CHECK(pl_detok_create(&d, f.t, 0, &err) == PL_OK, "create");
    char buf[16];
    size_t k;
    pl_detok_push(d, f.t->byte_token[0xE4], buf, sizeof buf, &k, &err); /* held */
    int32_t x = f.t->byte_token['x'];
    pl_status s = pl_detok_push(d, x, buf, 1, &k, &err);
    TU_CHECK(s == PL_ERR_BUFFER_TOO_SMALL && k == 2 && tf_mentions(err.msg, "2 bytes"),
             "too small: %s k %zu (%s)", pl_status_str(s), k, err.msg);
    s = pl_detok_push(d, x, buf, 2, &k, &err);
    TU_CHECK(s == PL_OK && k == 2 && (unsigned char)buf[0] == 0xE4 && buf[1] == 'x',
             "retry gives the same bytes");
    TU_CHECK(pl_detok_push(d, (int32_t)f.t->n_vocab, buf, sizeof buf, &k, &err) ==
                 PL_ERR_INVALID_ARG,
             "invalid id");
    pl_detok_free(d);
    pl_detok_free(NULL);
    tf_close(&f);
}

/* ---- determinism ---- */

struct job {
    const struct pl_tokenizer *t;
    const char *text;
    size_t len;
    int32_t *ids;
    long n;
};

static void *encode_job(void *p)
{
    struct job *j = p;
    for (int rep = 0; rep < 5; rep++) {
        size_t n;
        pl_error err;
        if (pl_tok_encode(j->t, j->text, j->len, PL_TOKENIZE_PARSE_SPECIAL, j->ids, j->len + 8, &n,
                          &err))
            j->n = -1;
        else
            j->n = (long)n;
    }
    return NULL;
}

static void encode_is_thread_safe_on_a_shared_tokenizer(void)
{
    for (int kind = 0; kind < DEMO_VOCAB_COUNT; kind++) {
        tf_file f;
        pl_error err;
        TU_CHECK(tf_demo(&f, kind, 2000, &err) == PL_OK, "demo: %s", err.msg);
        size_t len;
        const char *text = demo_vocab_corpus(&len);
        struct job jobs[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            jobs[i] = (struct job){f.t, text, len, malloc((len + 8) * sizeof(int32_t)), 0};
            if (!jobs[i].ids) abort();
            pthread_create(&th[i], NULL, encode_job, &jobs[i]);
        }
        for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
        for (int i = 1; i < 4; i++)
            TU_CHECK(jobs[i].n == jobs[0].n && jobs[0].n > 0 &&
                         memcmp(jobs[i].ids, jobs[0].ids, (size_t)jobs[0].n * sizeof(int32_t)) == 0,
                     "kind %d: thread %d disagrees", kind, i);
        for (int i = 0; i < 4; i++) free(jobs[i].ids);
        tf_close(&f);
    }
}

static void demo_vocab_is_deterministic_and_exactly_sized(void)
{
    static const uint32_t sizes[] = {0, 320, 1000, 5000, 32000};
    for (int kind = 0; kind < DEMO_VOCAB_COUNT; kind++)
        for (int i = 0; i < 5; i++) {
            uint32_t n = sizes[i] ? sizes[i] : demo_vocab_min((enum demo_vocab_kind)kind);
            void *a = NULL, *b = NULL;
            size_t na = 0, nb = 0;
            for (int rep = 0; rep < 2; rep++) {
                pl_gguf_writer *w = tf_writer();
                pl_error err;
                TU_CHECK(demo_vocab_write(w, (enum demo_vocab_kind)kind, n, &err) == PL_OK,
                         "kind %d n %u: %s", kind, n, err.msg);
                pl_gguf_writer_write_memory(w, rep ? &b : &a, rep ? &nb : &na, &err);
                pl_gguf_writer_free(w);
            }
            TU_CHECK(na == nb && na > 0 && memcmp(a, b, na) == 0, "kind %d n %u differs", kind, n);
            pl_buffer_free(a);
            pl_buffer_free(b);
            tf_file f;
            pl_error err;
            TU_CHECK(tf_demo(&f, kind, n, &err) == PL_OK, "kind %d n %u: %s", kind, n, err.msg);
            TU_CHECK(f.t && f.t->n_vocab == n, "kind %d: %u tokens, want %u", kind,
                     f.t ? f.t->n_vocab : 0, n);
            tf_close(&f);
        }
    pl_gguf_writer *w = tf_writer();
    pl_error err;
    TU_CHECK(demo_vocab_write(w, DEMO_VOCAB_BPE, 100, &err) == PL_ERR_INVALID_ARG &&
                 tf_mentions(err.msg, "n_vocab 100"),
             "too small: %s", err.msg);
    pl_gguf_writer_free(w);
}

/* The demo text itself round-trips and compresses (the merges are real). */
static void demo_vocab_tokenizes_its_corpus_compactly(void)
{
    size_t len;
    const char *text = demo_vocab_corpus(&len);
    int32_t *ids = malloc((len + 8) * sizeof *ids);
    if (!ids) abort();
    for (int kind = 0; kind < DEMO_VOCAB_COUNT; kind++) {
        tf_file f;
        pl_error err;
        TU_CHECK(tf_demo(&f, kind, 4096, &err) == PL_OK, "demo: %s", err.msg);
        long n = tf_encode(f.t, text, len, 0, ids, len + 8, "corpus");
        TU_CHECK(n > 0 && (double)len / (double)n > 2.5, "kind %d: %zu bytes -> %ld tokens", kind,
                 len, n);
        size_t back_len;
        char *back = tf_decode(f.t, ids, (size_t)n, PL_DETOK_STRIP_PREFIX, &back_len);
        TU_CHECK(back && back_len == len && memcmp(back, text, len) == 0, "kind %d round trip",
                 kind);
        free(back);
        tf_close(&f);
    }
    free(ids);
}

int main(void)
{
    static const tu_test tests[] = {
        {"bpe_decode_encode_is_identity_on_random_bytes",
         bpe_decode_encode_is_identity_on_random_bytes},
        {"spm_decode_encode_is_identity_on_random_utf8",
         spm_decode_encode_is_identity_on_random_utf8},
        {"spm_decode_encode_is_identity_on_random_bytes",
         spm_decode_encode_is_identity_on_random_bytes},
        {"normalize_is_idempotent_and_what_encode_sees",
         normalize_is_idempotent_and_what_encode_sees},
        {"bpe_heap_merges_agree_with_quadratic_reference",
         bpe_heap_merges_agree_with_quadratic_reference},
        {"spm_heap_merges_agree_with_quadratic_reference",
         spm_heap_merges_agree_with_quadratic_reference},
        {"streaming_equals_one_shot_and_never_splits_a_character",
         streaming_equals_one_shot_and_never_splits_a_character},
        {"streaming_holds_back_a_split_character_until_complete",
         streaming_holds_back_a_split_character_until_complete},
        {"streaming_too_small_buffer_changes_nothing", streaming_too_small_buffer_changes_nothing},
        {"encode_is_thread_safe_on_a_shared_tokenizer",
         encode_is_thread_safe_on_a_shared_tokenizer},
        {"demo_vocab_is_deterministic_and_exactly_sized",
         demo_vocab_is_deterministic_and_exactly_sized},
        {"demo_vocab_tokenizes_its_corpus_compactly", demo_vocab_tokenizes_its_corpus_compactly},
        {NULL, NULL},
    };
    return tu_run("tokenizer_props", tests);
}
