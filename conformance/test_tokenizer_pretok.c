/* test_tokenizer_pretok.c — the pre-tokenizers (tokenizer.ggml.pre) split text exactly as their
 * models' regexes define: a table of inputs and expected pieces per pre-tokenizer. Not BPE.
 *
 * The expected pieces were worked out from each regex by hand (alternatives tried in order at
 * the leftmost position, greedy with backtracking; a later regex of a sequence splits the pieces
 * of the earlier one; text between matches is a piece of its own) and confirmed with Python's
 * `regex` module running the models' original patterns (\s = Unicode White_Space).
 * Non-ASCII inputs: 你好世界 🙂!; U+00A0 nbsp, U+3000 ideographic space, U+180E (not
 * White_Space since Unicode 6.3); Ⅻ² ٣ (\p{N}: Nl, No, Nd); ſ'ſ (U+017F long s case-folds to 's',
 * so the case-insensitive contraction "'s" matches "'ſ", as in the models' Rust/Oniguruma engines).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo_vocab.h"
#include "testutil.h"
#include "tokfix.h"

struct split_case {
    const char *text;
    const char *pieces[24];
};

static const struct split_case gpt2_cases[] = {
    {"Hello world", {"Hello", " world", NULL}},
    {"  leading and trailing  ", {" ", " leading", " and", " trailing", "  ", NULL}},
    {"it's IT'S we'll", {"it", "'s", " IT", "'", "S", " we", "'ll", NULL}},
    {"12345 and 1,000,000", {"12345", " and", " 1", ",", "000", ",", "000", NULL}},
    {"a\n\n\tb", {"a", "\n\n", "\t", "b", NULL}},
    {"x  \n y", {"x", "  \n", " y", NULL}},
    {"$100+200=<300>^~|", {"$", "100", "+", "200", "=<", "300", ">^~|", NULL}},
    {"\xe4\xbd\xa0"
     "\xe5\xa5\xbd"
     "\xe4\xb8\x96"
     "\xe7\x95\x8c"
     " \xf0\x9f\x99\x82"
     "!",
     {"\xe4\xbd\xa0"
      "\xe5\xa5\xbd"
      "\xe4\xb8\x96"
      "\xe7\x95\x8c",
      " \xf0\x9f\x99\x82"
      "!",
      NULL}},
    {"don't\r\nstop", {"don", "'t", "\r", "\n", "stop", NULL}},
    {"\xc2\xa0"
     "nbsp\xe3\x80\x80"
     "ideographic\xe1\xa0\x8e"
     "mvs",
     {"\xc2\xa0", "nbsp", "\xe3\x80\x80", "ideographic", "\xe1\xa0\x8e", "mvs", NULL}},
    {"\xe2\x85\xab"
     "\xc2\xb2"
     " \xd9\xa3",
     {"\xe2\x85\xab"
      "\xc2\xb2",
      " \xd9\xa3", NULL}},
    {"\xc5\xbf"
     "'\xc5\xbf",
     {"\xc5\xbf", "'", "\xc5\xbf", NULL}},
    {NULL, {NULL}},
};

static const struct split_case llama_bpe_cases[] = {
    {"Hello world", {"Hello", " world", NULL}},
    {"  leading and trailing  ", {" ", " leading", " and", " trailing", "  ", NULL}},
    {"it's IT'S we'll", {"it", "'s", " IT", "'S", " we", "'ll", NULL}},
    {"12345 and 1,000,000", {"123", "45", " and", " ", "1", ",", "000", ",", "000", NULL}},
    {"a\n\n\tb", {"a", "\n\n", "\tb", NULL}},
    {"x  \n y", {"x", "  \n", " y", NULL}},
    {"$100+200=<300>^~|", {"$", "100", "+", "200", "=<", "300", ">^~|", NULL}},
    {"\xe4\xbd\xa0"
     "\xe5\xa5\xbd"
     "\xe4\xb8\x96"
     "\xe7\x95\x8c"
     " \xf0\x9f\x99\x82"
     "!",
     {"\xe4\xbd\xa0"
      "\xe5\xa5\xbd"
      "\xe4\xb8\x96"
      "\xe7\x95\x8c",
      " \xf0\x9f\x99\x82"
      "!",
      NULL}},
    {"don't\r\nstop", {"don", "'t", "\r\n", "stop", NULL}},
    {"\xc2\xa0"
     "nbsp\xe3\x80\x80"
     "ideographic\xe1\xa0\x8e"
     "mvs",
     {"\xc2\xa0"
      "nbsp",
      "\xe3\x80\x80"
      "ideographic",
      "\xe1\xa0\x8e"
      "mvs",
      NULL}},
    {"\xe2\x85\xab"
     "\xc2\xb2"
     " \xd9\xa3",
     {"\xe2\x85\xab"
      "\xc2\xb2",
      " ", "\xd9\xa3", NULL}},
    {"\xc5\xbf"
     "'\xc5\xbf",
     {"\xc5\xbf", "'\xc5\xbf", NULL}},
    {NULL, {NULL}},
};

static const struct split_case qwen2_cases[] = {
    {"Hello world", {"Hello", " world", NULL}},
    {"  leading and trailing  ", {" ", " leading", " and", " trailing", "  ", NULL}},
    {"it's IT'S we'll", {"it", "'s", " IT", "'S", " we", "'ll", NULL}},
    {"12345 and 1,000,000",
     {"1", "2", "3", "4", "5", " and", " ", "1", ",", "0", "0", "0", ",", "0", "0", "0", NULL}},
    {"a\n\n\tb", {"a", "\n\n", "\tb", NULL}},
    {"x  \n y", {"x", "  \n", " y", NULL}},
    {"$100+200=<300>^~|",
     {"$", "1", "0", "0", "+", "2", "0", "0", "=<", "3", "0", "0", ">^~|", NULL}},
    {"\xe4\xbd\xa0"
     "\xe5\xa5\xbd"
     "\xe4\xb8\x96"
     "\xe7\x95\x8c"
     " \xf0\x9f\x99\x82"
     "!",
     {"\xe4\xbd\xa0"
      "\xe5\xa5\xbd"
      "\xe4\xb8\x96"
      "\xe7\x95\x8c",
      " \xf0\x9f\x99\x82"
      "!",
      NULL}},
    {"don't\r\nstop", {"don", "'t", "\r\n", "stop", NULL}},
    {"\xc2\xa0"
     "nbsp\xe3\x80\x80"
     "ideographic\xe1\xa0\x8e"
     "mvs",
     {"\xc2\xa0"
      "nbsp",
      "\xe3\x80\x80"
      "ideographic",
      "\xe1\xa0\x8e"
      "mvs",
      NULL}},
    {"\xe2\x85\xab"
     "\xc2\xb2"
     " \xd9\xa3",
     {"\xe2\x85\xab", "\xc2\xb2", " ", "\xd9\xa3", NULL}},
    {"\xc5\xbf"
     "'\xc5\xbf",
     {"\xc5\xbf", "'\xc5\xbf", NULL}},
    {NULL, {NULL}},
};

static const struct split_case smollm_cases[] = {
    {"Hello world", {"Hello", " world", NULL}},
    {"  leading and trailing  ", {" ", " leading", " and", " trailing", "  ", NULL}},
    {"it's IT'S we'll", {"it", "'s", " IT", "'", "S", " we", "'ll", NULL}},
    {"12345 and 1,000,000",
     {"1", "2", "3", "4", "5", " and", " ", "1", ",", "0", "0", "0", ",", "0", "0", "0", NULL}},
    {"a\n\n\tb", {"a", "\n\n", "\t", "b", NULL}},
    {"x  \n y", {"x", "  \n", " y", NULL}},
    {"$100+200=<300>^~|",
     {"$", "1", "0", "0", "+", "2", "0", "0", "=<", "3", "0", "0", ">^~|", NULL}},
    {"\xe4\xbd\xa0"
     "\xe5\xa5\xbd"
     "\xe4\xb8\x96"
     "\xe7\x95\x8c"
     " \xf0\x9f\x99\x82"
     "!",
     {"\xe4\xbd\xa0"
      "\xe5\xa5\xbd"
      "\xe4\xb8\x96"
      "\xe7\x95\x8c",
      " \xf0\x9f\x99\x82"
      "!",
      NULL}},
    {"don't\r\nstop", {"don", "'t", "\r", "\n", "stop", NULL}},
    {"\xc2\xa0"
     "nbsp\xe3\x80\x80"
     "ideographic\xe1\xa0\x8e"
     "mvs",
     {"\xc2\xa0", "nbsp", "\xe3\x80\x80", "ideographic", "\xe1\xa0\x8e", "mvs", NULL}},
    {"\xe2\x85\xab"
     "\xc2\xb2"
     " \xd9\xa3",
     {"\xe2\x85\xab", "\xc2\xb2", " ", "\xd9\xa3", NULL}},
    {"\xc5\xbf"
     "'\xc5\xbf",
     {"\xc5\xbf", "'", "\xc5\xbf", NULL}},
    {NULL, {NULL}},
};

static const struct split_case default_cases[] = {
    {"Hello world", {"Hello", " world", NULL}},
    {"  leading and trailing  ", {" ", " leading", " and", " trailing", "  ", NULL}},
    {"it's IT'S we'll", {"it", "'", "s", " IT", "'", "S", " we", "'", "ll", NULL}},
    {"12345 and 1,000,000", {"123", "45", " and", " ", "1", ",", "000", ",", "000", NULL}},
    {"a\n\n\tb", {"a", "\n\n", "\t", "b", NULL}},
    {"x  \n y", {"x", "  \n", " y", NULL}},
    {"$100+200=<300>^~|", {"$", "100", "+", "200", "=<", "300", ">^~|", NULL}},
    {"\xe4\xbd\xa0"
     "\xe5\xa5\xbd"
     "\xe4\xb8\x96"
     "\xe7\x95\x8c"
     " \xf0\x9f\x99\x82"
     "!",
     {"\xe4\xbd\xa0"
      "\xe5\xa5\xbd"
      "\xe4\xb8\x96"
      "\xe7\x95\x8c",
      " \xf0\x9f\x99\x82", "!", NULL}},
    {"don't\r\nstop", {"don", "'", "t", "\r", "\n", "stop", NULL}},
    {"\xc2\xa0"
     "nbsp\xe3\x80\x80"
     "ideographic\xe1\xa0\x8e"
     "mvs",
     {"\xc2\xa0", "nbsp", "\xe3\x80\x80", "ideographic", "\xe1\xa0\x8e", "mvs", NULL}},
    {"\xe2\x85\xab"
     "\xc2\xb2"
     " \xd9\xa3",
     {"\xe2\x85\xab"
      "\xc2\xb2",
      " ", "\xd9\xa3", NULL}},
    {"\xc5\xbf"
     "'\xc5\xbf",
     {"\xc5\xbf", "'", "\xc5\xbf", NULL}},
    {NULL, {NULL}},
};

struct collect {
    const char *p[64];
    size_t n[64];
    int count;
};

static pl_status collect_piece(void *user, const char *p, size_t n)
{
    struct collect *c = user;
    if (c->count < 64) {
        c->p[c->count] = p;
        c->n[c->count] = n;
    }
    c->count++;
    return PL_OK;
}

static int split(const char *name, const char *text, size_t len, struct collect *c)
{
    const struct pl_pretok_def *d = pl_pretok_find(name, strlen(name));
    struct pl_pretok p;
    struct pl_pretok_scratch *s;
    pl_error err;
    memset(c, 0, sizeof *c);
    if (!d || pl_pretok_compile(&p, d, &err)) return -1;
    int rc = -1;
    if (!pl_pretok_scratch_new(&s, &p, &err)) {
        rc = pl_pretok_split(&p, s, text, len, collect_piece, c, &err) == PL_OK ? 0 : -1;
        pl_pretok_scratch_free(s);
    }
    pl_pretok_release(&p);
    return rc;
}

static void check_table(const char *name, const struct split_case *cases)
{
    for (const struct split_case *k = cases; k->text; k++) {
        struct collect c;
        TU_CHECK(split(name, k->text, strlen(k->text), &c) == 0, "%s: split failed", name);
        int want = 0;
        while (k->pieces[want]) want++;
        int same = c.count == want;
        for (int i = 0; same && i < want; i++)
            same = strlen(k->pieces[i]) == c.n[i] && memcmp(k->pieces[i], c.p[i], c.n[i]) == 0;
        if (!same) {
            fprintf(stderr, "  %s: \"%s\" split into %d pieces:", name, k->text, c.count);
            for (int i = 0; i < c.count && i < 64; i++)
                fprintf(stderr, " [%.*s]", (int)c.n[i], c.p[i]);
            fprintf(stderr, "\n    want %d:", want);
            for (int i = 0; i < want; i++) fprintf(stderr, " [%s]", k->pieces[i]);
            fprintf(stderr, "\n");
        }
        TU_CHECK(same, "%s: \"%s\"", name, k->text);
    }
}

static void pretok_gpt2_splits_as_its_regex(void)
{
    check_table("gpt2", gpt2_cases);
}

static void pretok_llama3_splits_as_its_regex(void)
{
    check_table("llama-bpe", llama_bpe_cases);
}

static void pretok_qwen2_splits_as_its_regex(void)
{
    check_table("qwen2", qwen2_cases);
}

static void pretok_smollm_splits_as_its_regex(void)
{
    check_table("smollm", smollm_cases);
}

static void pretok_default_splits_as_llama_cpp_default(void)
{
    check_table("default", default_cases);
}

static void pretok_names_and_aliases_resolve(void)
{
    static const char *const pairs[][2] = {
        {"gpt2", "gpt-2"},         {"gpt-2", "gpt-2"},
        {"falcon", "falcon"},      {"deepseek-v3", "deepseek-v3"},
        {"hy_v4", "deepseek-v3"},  {"poro-chat", "bloom"},
        {"llama4", "gpt-4o"},      {"command-r", "smollm"},
        {"smaug-bpe", "dbrx"},     {"llama3", "llama-bpe"},
        {"llama-v3", "llama-bpe"}, {"llama-bpe", "llama-bpe"},
        {"qwen2", "qwen2"},        {"deepseek-r1-qwen", "qwen2"},
        {"smollm", "smollm"},      {"starcoder", "smollm"},
        {"default", "default"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const struct pl_pretok_def *d = pl_pretok_find(pairs[i][0], strlen(pairs[i][0]));
        TU_CHECK(d && strcmp(d->name, pairs[i][1]) == 0, "'%s' -> %s, want %s", pairs[i][0],
                 d ? d->name : "(none)", pairs[i][1]);
    }
    TU_CHECK(pl_pretok_find("qwen", 4) == NULL, "prefix of a name is not a name");
    TU_CHECK(pl_pretok_find("", 0) == NULL, "empty name");
    TU_CHECK(pl_pretok_find("llama-bpe", 9)->ignore_merges == 1, "Llama 3 ignores merges");
}

/* Empty text gives no piece; invalid UTF-8 never reaches the regexes (the encoder splits it off),
 * but one character of each class gives exactly one piece. */
static void pretok_empty_and_single_characters(void)
{
    static const char *const names[] = {"default", "gpt2", "llama-bpe", "qwen2", "smollm"};
    static const char *const singles[] = {
        "a", "7", " ", "\n", "!", "\xe4\xbd\xa0", "\xf0\x9f\x99\x82"};
    for (int i = 0; i < 5; i++) {
        struct collect c;
        TU_CHECK(split(names[i], "", 0, &c) == 0 && c.count == 0, "%s: empty -> %d pieces",
                 names[i], c.count);
        for (int k = 0; k < 7; k++)
            TU_CHECK(split(names[i], singles[k], strlen(singles[k]), &c) == 0 && c.count == 1,
                     "%s: '%s' -> %d pieces", names[i], singles[k], c.count);
    }
}

/* \s is exactly Unicode White_Space over every code point: "a" cp cp "b" splits as a
 * whitespace run ("a", cp, cp, "b") only for the 25 White_Space code points. */
static int is_white_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

static size_t put_cp(char *o, uint32_t cp)
{
    if (cp < 0x80) return (size_t)(o[0] = (char)cp, 1);
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static void pretok_whitespace_is_unicode_white_space_for_every_code_point(void)
{
    const struct pl_pretok_def *d = pl_pretok_find("gpt2", 4);
    struct pl_pretok p;
    struct pl_pretok_scratch *s;
    pl_error err;
    TU_CHECK(pl_pretok_compile(&p, d, &err) == PL_OK, "compile: %s", err.msg);
    TU_CHECK(pl_pretok_scratch_new(&s, &p, &err) == PL_OK, "scratch");
    int bad = 0;
    for (uint32_t cp = 1; cp <= 0x10FFFF && bad < 5; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        if (cp == ' ') continue; /* ' ' joins the next word in GPT-2's regex */
        char text[16];
        size_t n = 0;
        text[n++] = 'a';
        n += put_cp(text + n, cp);
        n += put_cp(text + n, cp);
        text[n++] = 'b';
        struct collect c = {0};
        pl_pretok_split(&p, s, text, n, collect_piece, &c, &err);
        size_t k = put_cp(text, cp);
        int as_space = c.count == 4 && c.n[1] == k && c.n[2] == k;
        if (as_space != is_white_space(cp)) bad++;
        TU_CHECK(as_space == is_white_space(cp), "U+%04X: split as whitespace %d, White_Space %d",
                 cp, as_space, is_white_space(cp));
    }
    pl_pretok_scratch_free(s);
    pl_pretok_release(&p);
}

/* ---- the Hugging Face oracle: data/tokparity/pretok (conformance/tokparity/pretok_fixtures.js)
 * holds, per pre-tokenizer, the byte lengths of the pieces HF tokenizers 0.23.2 splits each
 * input into (text.txt's lines, then hard.txt's NUL-separated cases). */

static char *slurp(const char *dir, const char *name, const char *ext, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tokparity/%s%s", dir, name, ext);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    if (b) b[n] = 0;
    *len = (size_t)n;
    return b;
}

struct lens {
    size_t *n;
    size_t count, cap;
};

static pl_status collect_len(void *user, const char *p, size_t n)
{
    (void)p;
    struct lens *l = user;
    if (l->count == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->n = realloc(l->n, l->cap * sizeof *l->n);
        if (!l->n) return PL_ERR_NOMEM;
    }
    l->n[l->count++] = n;
    return PL_OK;
}

/* Decodes one fixture line (0-9a-z = 0..35, ~N. = N) into want; returns the count. */
static size_t decode_line(const char **q, size_t *want, size_t cap)
{
    size_t k = 0;
    const char *p = *q;
    while (*p && *p != '\n') {
        size_t v;
        if (*p == '~') {
            v = strtoul(p + 1, (char **)&p, 10);
            p++; /* '.' */
        } else {
            v = (size_t)(*p >= 'a' ? *p - 'a' + 10 : *p - '0');
            p++;
        }
        if (k < cap) want[k] = v;
        k++;
    }
    if (*p == '\n') p++;
    *q = p;
    return k;
}

static void pretok_splits_as_hf_tokenizers_on_held_out_text(void)
{
    const char *dir = getenv("PLUMB_TEST_DATA");
    TU_CHECK(dir != NULL, "PLUMB_TEST_DATA is not set");
    if (!dir) return;
    size_t text_len, hard_len;
    char *text = slurp(dir, "text", ".txt", &text_len);
    char *hard = slurp(dir, "pretok/hard", ".txt", &hard_len);
    TU_CHECK(text && hard, "held-out text or hard cases missing under %s/tokparity", dir);
    if (!text || !hard) return;
    /* The inputs: text.txt split at '\n', then hard.txt split at NUL. */
    size_t n_in = 0, cap_in = 1024;
    const char **in = malloc(cap_in * sizeof *in);
    size_t *in_len = malloc(cap_in * sizeof *in_len);
    for (size_t a = 0, i = 0; i <= text_len; i++)
        if (i == text_len || text[i] == '\n') {
            in[n_in] = text + a, in_len[n_in++] = i - a, a = i + 1;
        }
    for (size_t a = 0, i = 0; i <= hard_len; i++)
        if (i == hard_len || hard[i] == 0) {
            in[n_in] = hard + a, in_len[n_in++] = i - a, a = i + 1;
        }
    size_t n_tab;
    const struct pl_pretok_def *tab = pl_pretok_table(&n_tab);
    size_t want[4096];
    for (size_t t = 0; t < n_tab; t++) {
        const char *name = tab[t].name;
        if (strcmp(name, "default") == 0) continue; /* llama.cpp's own: no tokenizer.json */
        char fx[128];
        snprintf(fx, sizeof fx, "pretok/%s", name);
        size_t fx_len;
        char *pieces = slurp(dir, fx, ".pieces", &fx_len);
        TU_CHECK(pieces != NULL, "%s: no HF fixture %s.pieces", name, fx);
        if (!pieces) continue;
        struct pl_pretok p;
        struct pl_pretok_scratch *s;
        pl_error err;
        TU_CHECK(pl_pretok_compile(&p, &tab[t], &err) == PL_OK, "%s: %s", name, err.msg);
        TU_CHECK(pl_pretok_scratch_new(&s, &p, &err) == PL_OK, "%s: scratch", name);
        const char *q = pieces;
        size_t bad = 0, total = 0;
        for (size_t i = 0; i < n_in; i++) {
            size_t nw = decode_line(&q, want, 4096);
            struct lens got = {0};
            pl_status st = pl_pretok_split(&p, s, in[i], in_len[i], collect_len, &got, &err);
            int same = st == PL_OK && got.count == nw && nw <= 4096;
            for (size_t k = 0; same && k < nw; k++) same = got.n[k] == want[k];
            total += nw;
            if (!same && bad++ < 3) {
                fprintf(stderr,
                        "  %s input %zu \"%.*s\": plumb %zu pieces, HF %zu\n    plumb:", name, i,
                        (int)(in_len[i] < 80 ? in_len[i] : 80), in[i], got.count, nw);
                size_t off = 0;
                for (size_t k = 0; k < got.count && k < 40; off += got.n[k++])
                    fprintf(stderr, " [%.*s]", (int)got.n[k], in[i] + off);
                fprintf(stderr, "\n    HF:   ");
                off = 0;
                for (size_t k = 0; k < nw && k < 40; off += want[k++])
                    fprintf(stderr, " [%.*s]", (int)want[k], in[i] + off);
                fprintf(stderr, "\n");
            }
            free(got.n);
        }
        TU_CHECK(bad == 0, "%s: %zu of %zu inputs split unlike HF tokenizers", name, bad, n_in);
        printf("  %-16s %zu inputs, %zu pieces, %zu differ\n", name, n_in, total, bad);
        pl_pretok_scratch_free(s);
        pl_pretok_release(&p);
        free(pieces);
    }
    free(in);
    free(in_len);
    free(text);
    free(hard);
}

/* ---- pathological inputs: 200 kB of one character class (or a short period of two) through
 * every pre-tokenizer in at most 0.4 s each, so no regex backtracks catastrophically. */

static pl_status count_piece(void *user, const char *p, size_t n)
{
    (void)p;
    (void)n;
    (*(size_t *)user)++;
    return PL_OK;
}

/* tiny_aya's first regex, \d{1,3}(?=(?:\d{3})*\b), rereads the rest of a digit run at every
 * match (quadratic in the run, in Oniguruma too); plumb runs it as a one-pass split
 * (pl_pretok_digit_groups), which this bound covers with the rest. */
static void pretok_pathological_inputs_split_within_bound(void)
{
    static const char *const units[] = {
        " ",
        "\n",
        "\r\n",
        "a",
        "A",
        "Aa",
        "1",
        "!",
        "'",
        "'s",
        " a",
        "a ",
        " \n",
        "\t ",
        "\xc2\xa0",
        "\xe1\xa0\x8e",
        "\xe4\xb8\xad",
        "\xcc\x81",
        "a\xcc\x81",
        "a\xcc\x81 ",
        "1,",
        ". ",
        "<",
        "IMGIMGA",
        "\xf0\x9f\x99\x82",
        "\xd9\xa3",
        " 1",
        "'S",
        "/\n",
    };
    const size_t total = 200 * 1000;
    char *buf = malloc(total + 16);
    TU_CHECK(buf != NULL, "no memory");
    if (!buf) return;
    size_t n_tab;
    const struct pl_pretok_def *tab = pl_pretok_table(&n_tab);
    double worst = 0;
    const char *worst_at = "";
    for (size_t t = 0; t < n_tab; t++) {
        struct pl_pretok p;
        struct pl_pretok_scratch *s;
        pl_error err;
        TU_CHECK(pl_pretok_compile(&p, &tab[t], &err) == PL_OK, "%s: %s", tab[t].name, err.msg);
        TU_CHECK(pl_pretok_scratch_new(&s, &p, &err) == PL_OK, "%s: scratch", tab[t].name);
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
            size_t k = strlen(units[u]), n = 0;
            size_t want = total;
            while (n + k <= want) memcpy(buf + n, units[u], k), n += k;
            size_t pieces = 0;
            /* The best of up to 5 runs, in this process's CPU time (not wall time, which a busy
             * VM stretches): the bound is about the algorithm. A catastrophic backtrack costs
             * seconds to hours of CPU here; the slowest linear split (jais-2) about 0.16 s. */
            double dt = 1e9;
            pl_status st = PL_OK;
            for (int rep = 0; rep < 5 && dt > 0.4 && st == PL_OK; rep++) {
                const clock_t a = clock();
                st = pl_pretok_split(&p, s, buf, n, count_piece, &pieces, &err);
                const double d = (double)(clock() - a) / CLOCKS_PER_SEC;
                if (d < dt) dt = d;
            }
            TU_CHECK(st == PL_OK, "%s on '%s' x %zu: %s", tab[t].name, units[u], n / k, err.msg);
            TU_CHECK(dt <= 0.4, "%s on %zu bytes of '%s': %.3f s (bound 0.4 s)", tab[t].name, n,
                     units[u], dt);
            if (dt > worst) worst = dt, worst_at = tab[t].name;
        }
        pl_pretok_scratch_free(s);
        pl_pretok_release(&p);
    }
    printf("  slowest: %s, %.3f s\n", worst_at, worst);
    free(buf);
}

/* A vocabulary naming a pre-tokenizer llama.cpp knows but plumb refuses fails to load with the
 * reason; every name of the table (and alias) loads on the same vocabulary. */
static void pretok_names_load_or_are_refused_with_reason(void)
{
    static const char *const refused[][2] = {
        {"gemma4", "raw UTF-8"}, {"kimi-k2", "custom code"}, {"superbpe", "zero-width"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        pl_gguf_writer *w = tf_writer();
        pl_error e;
        TU_CHECK(demo_vocab_write(w, DEMO_VOCAB_BPE, demo_vocab_min(DEMO_VOCAB_BPE), &e) == PL_OK,
                 "demo vocab");
        tf_str(w, "tokenizer.ggml.pre", refused[i][0]);
        tf_file f;
        pl_error err = {0};
        pl_status st = tf_open(&f, w, &err);
        TU_CHECK(st == PL_ERR_UNSUPPORTED && tf_mentions(err.msg, refused[i][0]) &&
                     tf_mentions(err.msg, refused[i][1]),
                 "%s: status %d '%s'", refused[i][0], st, err.msg);
        tf_close(&f);
    }
    size_t n;
    const struct pl_pretok_def *tab = pl_pretok_table(&n);
    for (size_t i = 0; i < n; i++) {
        char names[512];
        snprintf(names, sizeof names, "%s%s%s", tab[i].name, tab[i].aliases[0] ? "|" : "",
                 tab[i].aliases);
        for (char *name = strtok(names, "|"); name; name = strtok(NULL, "|")) {
            pl_gguf_writer *w = tf_writer();
            pl_error e;
            TU_CHECK(demo_vocab_write(w, DEMO_VOCAB_BPE, demo_vocab_min(DEMO_VOCAB_BPE), &e) ==
                         PL_OK,
                     "demo vocab");
            tf_str(w, "tokenizer.ggml.pre", name);
            tf_file f;
            pl_error err = {0};
            TU_CHECK(tf_open(&f, w, &err) == PL_OK, "%s: %s", name, err.msg);
            tf_close(&f);
        }
    }
}

int main(void)
{
    static const tu_test tests[] = {
        {"pretok_gpt2_splits_as_its_regex", pretok_gpt2_splits_as_its_regex},
        {"pretok_llama3_splits_as_its_regex", pretok_llama3_splits_as_its_regex},
        {"pretok_qwen2_splits_as_its_regex", pretok_qwen2_splits_as_its_regex},
        {"pretok_smollm_splits_as_its_regex", pretok_smollm_splits_as_its_regex},
        {"pretok_default_splits_as_llama_cpp_default", pretok_default_splits_as_llama_cpp_default},
        {"pretok_names_and_aliases_resolve", pretok_names_and_aliases_resolve},
        {"pretok_empty_and_single_characters", pretok_empty_and_single_characters},
        {"pretok_whitespace_is_unicode_white_space_for_every_code_point",
         pretok_whitespace_is_unicode_white_space_for_every_code_point},
        {"pretok_splits_as_hf_tokenizers_on_held_out_text",
         pretok_splits_as_hf_tokenizers_on_held_out_text},
        {"pretok_names_load_or_are_refused_with_reason",
         pretok_names_load_or_are_refused_with_reason},
        {"pretok_pathological_inputs_split_within_bound",
         pretok_pathological_inputs_split_within_bound},
        {NULL, NULL},
    };
    return tu_run("tokenizer_pretok", tests);
}
