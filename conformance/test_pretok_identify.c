/* test_pretok_identify.c — plumb convert names a tokenizer.json's pre-tokenizer by its content
 * (features/pretok_id.c): each pre_tokenizer section of the HF oracle fixtures
 * (data/tokparity/pretok/NAME.json) is identified as NAME; forms plumb does not run are refused
 * by name. Not the splitting itself (test_tokenizer_pretok). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "features/pretok_id.h"
#include "testutil.h"
#include "tokenizer/pretok.h"

static const char *identify(const char *json, pl_error *err, pl_status *st)
{
    json_error_t je;
    json_t *t = json_loads(json, 0, &je);
    TU_CHECK(t != NULL, "bad test JSON: %s", je.text);
    const struct pl_pretok_def *d = NULL;
    *st = t ? pl_pretok_identify(t, "tokenizer.json", &d, err) : PL_ERR_FORMAT;
    json_decref(t);
    return d ? d->name : NULL;
}

static void identify_names_every_fixture_form(void)
{
    const char *dir = getenv("PLUMB_TEST_DATA");
    TU_CHECK(dir != NULL, "PLUMB_TEST_DATA is not set");
    if (!dir) return;
    size_t n;
    const struct pl_pretok_def *tab = pl_pretok_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(tab[i].name, "default") == 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/tokparity/pretok/%s.json", dir, tab[i].name);
        json_error_t je;
        json_t *t = json_load_file(path, 0, &je);
        TU_CHECK(t != NULL, "%s: %s", path, je.text);
        if (!t) continue;
        const struct pl_pretok_def *d = NULL;
        pl_error err = {0};
        pl_status st = pl_pretok_identify(t, path, &d, &err);
        TU_CHECK(st == PL_OK && d == &tab[i], "%s identified as %s (%s)", tab[i].name,
                 d ? d->name : "nothing", err.msg);
        json_decref(t);
    }
}

#define LLAMA3_SPLIT                                                                               \
    "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{" \
    "L}"                                                                                           \
    "\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| "                                                          \
    "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|"                                 \
    "\\\\s+(?!\\\\S)|\\\\s+\"},\"behavior\":\"Isolated\",\"invert\":false}"
#define BL "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}"

/* ignore_merges and the normalizer pick among entries of one form. */
static void identify_uses_ignore_merges_and_normalizer(void)
{
    pl_error err = {0};
    pl_status st;
    const char *n =
        identify("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[" LLAMA3_SPLIT "," BL
                 "]},\"model\":{\"ignore_merges\":true}}",
                 &err, &st);
    TU_CHECK(n && strcmp(n, "llama-bpe") == 0, "Llama 3 form + ignore_merges -> %s", n);
    n = identify("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[" LLAMA3_SPLIT "," BL
                 "]},\"model\":{\"ignore_merges\":false}}",
                 &err, &st);
    TU_CHECK(n && strcmp(n, "dbrx") == 0, "Llama 3 form, merges applied -> %s", n);
    n = identify("{\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
                 "\"model\":{}}",
                 &err, &st);
    TU_CHECK(n && strcmp(n, "gpt-2") == 0, "ByteLevel(use_regex) -> %s", n);
    n = identify(
        "{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\","
        "\"individual_digits\":true},{\"type\":\"ByteLevel\"}]},\"model\":{}}",
        &err, &st);
    TU_CHECK(n && strcmp(n, "smollm") == 0, "Digits + ByteLevel -> %s", n);
    /* Literal CR LF or their escapes: one regex. */
    n = identify("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
                 "\"pattern\":{\"Regex\":\"[\\r\\n]\"},\"behavior\":\"Isolated\"},{\"type\":"
                 "\"Split\",\"pattern\":{\"Regex\":\"\\\\s?\\\\p{L}+\"},\"behavior\":\"Isolated\"},"
                 "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\s?\\\\p{P}+\"},\"behavior\":"
                 "\"Isolated\"},{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[\xe4\xb8\x80-"
                 "\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+\"},\"behavior\":"
                 "\"Isolated\"},{\"type\":\"Digits\",\"individual_digits\":true}," BL "]},"
                 "\"model\":{}}",
                 &err, &st);
    TU_CHECK(n && strcmp(n, "deepseek-coder") == 0, "DeepSeek Coder with literal CR LF -> %s (%s)",
             n, err.msg);
}

static void expect_refused(const char *json, const char *needle)
{
    pl_error err = {0};
    pl_status st;
    const char *n = identify(json, &err, &st);
    TU_CHECK(n == NULL && st == PL_ERR_UNSUPPORTED && strstr(err.msg, needle),
             "%s: got %s, status %d, '%s' (want '%s')", json, n ? n : "nothing", st, err.msg,
             needle);
}

static void identify_refuses_forms_it_does_not_run(void)
{
    expect_refused("{\"pre_tokenizer\":{\"type\":\"Metaspace\"},\"model\":{}}", "Metaspace");
    expect_refused("{\"pre_tokenizer\":null,\"model\":{}}", "no pre_tokenizer");
    expect_refused("{\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true}}",
                   "add_prefix_space");
    expect_refused("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":"
                   "\"Split\",\"pattern\":{\"Regex\":\"x\"},\"behavior\":\"Removed\"}," BL "]}}",
                   "behavior Removed");
    expect_refused("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":"
                   "\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Isolated\"}," BL "]}}",
                   "without a Regex");
    expect_refused(
        "{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":"
        "\"Split\",\"pattern\":{\"Regex\":\"[a-z]+|\\\\d\"},\"behavior\":\"Isolated\"}," BL "]}}",
        "[Split, ByteLevel: [a-z]+|\\d] is not one plumb knows (known: default gpt-2");
    expect_refused("{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"x\"},"
                   "\"behavior\":\"Isolated\"}}",
                   "0 ByteLevel steps");
}

/* tiktoken-derived files (Xenova's cl100k / o200k) write their Split as Removed + invert: the
 * matches kept, the gaps dropped. That is the Isolated split only where the regex matches every
 * character, which identification checks; a step that leaves gaps is refused. */
static void identify_accepts_removed_inverted_only_without_gaps(void)
{
    pl_error err = {0};
    pl_status st;
    char json[2048];
    snprintf(json, sizeof json, "%s",
             "{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[" LLAMA3_SPLIT "," BL
             "]},\"model\":{\"ignore_merges\":true}}");
    char *iso = strstr(json, "\"behavior\":\"Isolated\",\"invert\":false");
    TU_CHECK(iso != NULL, "the test's JSON has the Isolated split");
    if (!iso) return;
    static const char kept[] = "\"behavior\":\"Removed\", \"invert\":true ";
    memcpy(iso, kept, sizeof kept - 1); /* same length: the rest of the JSON stays */
    const char *n = identify(json, &err, &st);
    TU_CHECK(n && strcmp(n, "llama-bpe") == 0, "cl100k's Removed+invert form -> %s (%s)", n,
             err.msg);

    /* DeepSeek V3's first step (\p{N}{1,3}) leaves everything but digits out. */
    const char *dir = getenv("PLUMB_TEST_DATA");
    TU_CHECK(dir != NULL, "PLUMB_TEST_DATA is not set");
    if (!dir) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/tokparity/pretok/deepseek-v3.json", dir);
    json_error_t je;
    json_t *t = json_load_file(path, 0, &je);
    TU_CHECK(t != NULL, "%s: %s", path, je.text);
    if (!t) return;
    json_t *steps = json_object_get(json_object_get(t, "pre_tokenizer"), "pretokenizers");
    json_t *first = json_array_get(steps, 0);
    TU_CHECK(first != NULL, "%s has steps", path);
    if (first) {
        json_object_set_new(first, "behavior", json_string("Removed"));
        json_object_set_new(first, "invert", json_true());
        const struct pl_pretok_def *d = NULL;
        memset(&err, 0, sizeof err);
        st = pl_pretok_identify(t, path, &d, &err);
        TU_CHECK(st == PL_ERR_UNSUPPORTED && d == NULL &&
                     strstr(err.msg, "does not match every character"),
                 "Removed+invert with gaps: %d, %s, '%s'", st, d ? d->name : "nothing", err.msg);
    }
    json_decref(t);
}

/* gpt-oss's tokenizer.json is the o200k form with ignore_merges true; the 'gpt-4o' entry (as
 * llama.cpp's) applies merges. The flag is moot where the merges build every token whole (then a
 * word that is a token comes out whole either way), which identification checks; where one token
 * is not built, the flag changes ids and the file is refused naming it. */
static void identify_ignore_merges_moot_where_merges_build_every_token(void)
{
    const char *dir = getenv("PLUMB_TEST_DATA");
    TU_CHECK(dir != NULL, "PLUMB_TEST_DATA is not set");
    if (!dir) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/tokparity/pretok/gpt-4o.json", dir);
    static const struct {
        const char *model, *want; /* want: the name, or a phrase of the refusal */
    } cases[] = {
        {"{\"ignore_merges\":true,\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"ab\":3,\"abc\":4,"
         "\"\u0120\":5,\"\u0120a\":6},\"merges\":[\"a b\",\"ab c\",[\"\u0120\",\"a\"]]}",
         "gpt-4o"},
        /* b c (rank 0) first: [a, bc], and no merge joins those: 'abc' is not built */
        {"{\"ignore_merges\":true,\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"ab\":3,\"abc\":4,"
         "\"bc\":5},\"merges\":[\"b c\",\"a b\",\"ab c\"]}",
         "do not build the token 'abc' whole"},
        /* equal pairs: the leftmost first, a a | a -> [aa, a]; 'aaa' needs aa a */
        {"{\"ignore_merges\":true,\"vocab\":{\"a\":0,\"aa\":1,\"aaa\":2},"
         "\"merges\":[\"a a\",\"a aa\"]}",
         "do not build the token 'aaa' whole"},
        {"{\"ignore_merges\":true,\"vocab\":{\"a\":0,\"aa\":1,\"aaa\":2},"
         "\"merges\":[\"a a\",\"aa a\"]}",
         "gpt-4o"},
        {"{\"ignore_merges\":true}", "no vocab and merges it can check"},
        /* hostile: an empty key, a merge that is a number, one of three parts, vocab a list */
        {"{\"ignore_merges\":true,\"vocab\":{\"\":0,\"a\":1},\"merges\":[]}", "gpt-4o"},
        {"{\"ignore_merges\":true,\"vocab\":{\"ab\":0},\"merges\":[1]}",
         "no vocab and merges it can check"},
        {"{\"ignore_merges\":true,\"vocab\":{\"ab\":0},\"merges\":[[\"a\",\"b\",\"c\"]]}",
         "no vocab and merges it can check"},
        {"{\"ignore_merges\":true,\"vocab\":[\"a\"],\"merges\":[]}",
         "no vocab and merges it can check"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_error_t je;
        json_t *t = json_load_file(path, 0, &je), *m = json_loads(cases[i].model, 0, &je);
        TU_CHECK(t != NULL && m != NULL, "%s / case %zu: %s", path, i, je.text);
        if (!t || !m) {
            json_decref(t);
            json_decref(m);
            continue;
        }
        json_object_set_new(t, "model", m);
        const struct pl_pretok_def *d = NULL;
        pl_error err = {0};
        pl_status st = pl_pretok_identify(t, path, &d, &err);
        if (strcmp(cases[i].want, "gpt-4o") == 0)
            TU_CHECK(st == PL_OK && d && strcmp(d->name, "gpt-4o") == 0, "case %zu: %s (%s)", i,
                     d ? d->name : "nothing", err.msg);
        else
            TU_CHECK(st == PL_ERR_UNSUPPORTED && d == NULL && strstr(err.msg, cases[i].want) &&
                         strstr(err.msg, "ignore_merges is true"),
                     "case %zu: %d '%s' (want '%s')", i, st, err.msg, cases[i].want);
        json_decref(t);
    }
}

/* normalizer: absent, null or an empty Sequence is none; one form alone or as a Sequence's
 * only entry is that form; anything else is refused. */
static void normalizer_forms(void)
{
    static const struct {
        const char *json;
        int norm; /* -1: refused */
    } cases[] = {
        {"{}", PL_TOK_NORM_NONE},
        {"{\"normalizer\":null}", PL_TOK_NORM_NONE},
        {"{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[]}}", PL_TOK_NORM_NONE},
        {"{\"normalizer\":{\"type\":\"NFC\"}}", PL_TOK_NORM_NFC},
        {"{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKC\"}]}}",
         PL_TOK_NORM_NFKC},
        {"{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},{"
         "\"type\":\"NFD\"}]}}",
         -1},
        {"{\"normalizer\":{\"type\":\"Lowercase\"}}", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *t = json_loads(cases[i].json, 0, NULL);
        TU_CHECK(t != NULL, "bad test JSON %s", cases[i].json);
        if (!t) continue;
        pl_error err = {0};
        int norm = -2;
        pl_status st = pl_tok_json_norm(t, "tokenizer.json", &norm, &err);
        if (cases[i].norm < 0)
            TU_CHECK(st == PL_ERR_UNSUPPORTED && strstr(err.msg, "normalizer"),
                     "%s: want refused, got %d '%s'", cases[i].json, st, err.msg);
        else
            TU_CHECK(st == PL_OK && norm == cases[i].norm, "%s: got %d (%s), want %d",
                     cases[i].json, norm, err.msg, cases[i].norm);
        json_decref(t);
    }
}

/* The names in error messages are exactly the table's; refused names say why. */
static void names_list_every_entry_and_refusals_say_why(void)
{
    size_t n;
    const struct pl_pretok_def *tab = pl_pretok_table(&n);
    const char *names = pl_pretok_names();
    size_t words = 0;
    for (const char *p = names; *p; p++) words += (p == names || p[-1] == ' ') && *p != ' ';
    TU_CHECK(words == n, "pl_pretok_names() has %zu names, the table %zu", words, n);
    for (size_t i = 0; i < n; i++) {
        const char *hit = strstr(names, tab[i].name);
        size_t k = strlen(tab[i].name);
        TU_CHECK(hit && (hit == names || hit[-1] == ' ') && (hit[k] == ' ' || hit[k] == 0),
                 "'%s' missing from pl_pretok_names()", tab[i].name);
        TU_CHECK(pl_pretok_refusal(tab[i].name, k) == NULL, "'%s' is both known and refused",
                 tab[i].name);
    }
    static const char *const refused[] = {"gemma4",     "kimi-k2",     "superbpe",
                                          "whitespace", "roberta-bpe", "afmoe"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        TU_CHECK(pl_pretok_find(refused[i], strlen(refused[i])) == NULL, "%s is refused",
                 refused[i]);
        TU_CHECK(pl_pretok_refusal(refused[i], strlen(refused[i])) != NULL, "%s says why",
                 refused[i]);
    }
    TU_CHECK(pl_pretok_refusal("gpt-2", 5) == NULL, "gpt-2 is not refused");
}

int main(void)
{
    static const tu_test tests[] = {
        {"identify_names_every_fixture_form", identify_names_every_fixture_form},
        {"identify_uses_ignore_merges_and_normalizer", identify_uses_ignore_merges_and_normalizer},
        {"identify_refuses_forms_it_does_not_run", identify_refuses_forms_it_does_not_run},
        {"identify_accepts_removed_inverted_only_without_gaps",
         identify_accepts_removed_inverted_only_without_gaps},
        {"identify_ignore_merges_moot_where_merges_build_every_token",
         identify_ignore_merges_moot_where_merges_build_every_token},
        {"normalizer_forms", normalizer_forms},
        {"names_list_every_entry_and_refusals_say_why",
         names_list_every_entry_and_refusals_say_why},
        {NULL, NULL},
    };
    return tu_run("pretok_identify", tests);
}
