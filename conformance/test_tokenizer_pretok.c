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
        {"gpt2", "gpt2"},
        {"gpt-2", "gpt2"},
        {"llama3", "llama-bpe"},
        {"llama-v3", "llama-bpe"},
        {"llama-bpe", "llama-bpe"},
        {"qwen2", "qwen2"},
        {"deepseek-r1-qwen", "qwen2"},
        {"smollm", "smollm"},
        {"starcoder", "smollm"},
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
        {NULL, NULL},
    };
    return tu_run("tokenizer_pretok", tests);
}
