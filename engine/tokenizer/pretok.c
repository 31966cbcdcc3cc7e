/* pretok.c — byte-level BPE pre-tokenizers: the regex sequences named by tokenizer.ggml.pre,
 * compiled once with PCRE2 (UTF + UCP, JIT when available). Not the BPE merges
 * (tokenizer_encode.c).
 *
 * Why PCRE2: the models' regexes use Unicode classes (\p{L}, \p{N}, \p{P}) that must be right
 * for every code point; PCRE2 carries the Unicode database and a JIT, so plumb needs no
 * hand-made tables. PCRE2's allocations go through pl_malloc (a general context), and each
 * call matches with its own match data, so a compiled pre-tokenizer is shared read-only.
 *
 * \s is spelled out as the 25 Unicode White_Space code points (WS below): PCRE2 10.42's \s also
 * matches U+180E, which the models' regex engines (Rust regex, Oniguruma) do not.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <utf8proc.h>

#include "pretok.h"
#include "utf8.h"

/* Unicode White_Space, as a character-class body: what \s means to Oniguruma (the regex engine
 * of HF tokenizers' Split) and to Rust regex. */
#define WS                                                                                         \
    "\\t-\\r "                                                                                     \
    "\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
/* Oniguruma's Unicode \w (Letter, Mark, Decimal_Number, Connector_Punctuation), for \b. */
#define WORD "\\p{L}\\p{M}\\p{Nd}\\p{Pc}"

const char pl_pretok_bytelevel[] = "ByteLevel";
const char pl_pretok_digit_groups[] = "\\p{Nd}+";
/* Digits: char::is_numeric (Nd, Nl, No); Punctuation: ASCII punctuation or Unicode P*. */
const char pl_pretok_digits1[] = "\\p{N}", pl_pretok_digits[] = "\\p{N}+",
           pl_pretok_punct1[] = "[\\p{P}!-/:-@\\[-`{-~]",
           pl_pretok_punct[] = "[\\p{P}!-/:-@\\[-`{-~]+";
#define BL     pl_pretok_bytelevel
#define DIGIT1 pl_pretok_digits1
#define PUNCT1 pl_pretok_punct1
#define PUNCT  pl_pretok_punct

/* ---- the regexes, as the models' tokenizer.json files write them (Oniguruma syntax) ---- */

/* GPT-2 (openai/gpt-2 encoder.py; HF ByteLevel's own regex when use_regex is true). */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
const char pl_pretok_gpt2[] = RE_GPT2;
#define CONTRACT "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
#define RE_TAIL  " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* Llama 3 (tiktoken cl100k): digits in runs of at most three. */
#define RE_LLAMA3 CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|" RE_TAIL
/* Qwen2: as Llama 3 but one digit per piece. */
#define RE_QWEN2 CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|" RE_TAIL
/* Qwen3.5: marks join letters. */
#define RE_QWEN35                                                                                  \
    CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|" \
             "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* Jais 2: Llama 3 with whitespace runs cut in powers of two. */
#define RE_JAIS2                                                                                   \
    CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"          \
             "\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|"       \
             "\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"
/* tiktoken o200k (GPT-4o): case runs, optional contraction, digits in threes. */
#define UPPER "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define LOWER "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
#define CASED(c)                                                                                   \
    "[^\\r\\n\\p{L}\\p{N}]?" UPPER "*" LOWER "+" c "|[^\\r\\n\\p{L}\\p{N}]?" UPPER "+" LOWER "*" c
#define O200K_TAIL " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_O200K   CASED(CONTRACT "?") "|\\p{N}{1,3}|" O200K_TAIL
#define RE_YOUTU   CASED(CONTRACT "?") "|\\p{N}|" O200K_TAIL
#define RE_TEKKEN  CASED("") "|\\p{N}|" O200K_TAIL
/* DeepSeek V3: ASCII punctuation + ASCII word, letters with marks, punctuation/symbol runs. */
#define DS3_HEAD                                                                                   \
    "[!\"#$%&'()*+,\\-./"                                                                          \
    ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"               \
    "| ?[\\p{P}\\p{S}]+"
#define RE_DS3     DS3_HEAD "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_SPARK   DS3_HEAD "|[\\r\\n]|\\s+(?!\\S)|\\s+"
#define CJK_KANA   "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+"
#define CJK_HANGUL "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+"
/* DeepSeek LLM: letters of cased scripts (a Unicode cased-letter list), then ASCII and CJK
 * punctuation. */
#define DS_LETTERS                                                                                 \
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-"    \
    "\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-"           \
    "\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-"  \
    "\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-"  \
    "\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-"          \
    "\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-"         \
    "\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-"                       \
    "\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-"                 \
    "\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-"           \
    "\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-"  \
    "\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-"        \
    "\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-"         \
    "\U0001E943]+"
#define DS_PUNCT "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+"
/* BLOOM: everything but whitespace and sentence punctuation (a nested class: a union). */
#define RE_BLOOM  " ?[^(\\s|[.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C])]+"
#define RE_VIKING " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+"
#define RE_BAILING                                                                                 \
    "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|" \
    "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"
#define RE_SEED                                                                                    \
    CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|" \
             "\\s+(?!\\S)|\\s+"
#define RE_UFAK "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|" RE_TAIL
#define RE_EXAONE_MOE                                                                              \
    CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| "               \
             "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"
/* Nothing follows the letter group in its alternative, so greedy equals possessive. */
#define RE_EXAONE_MOE_PCRE2                                                                        \
    CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*+(?: \\p{L}\\p{M}*+)*+)++|\\p{N}| "           \
             "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"
#define RE_MINICPM5 CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+|" RE_TAIL
#define RE_YOUTU_CJK                                                                               \
    "[\uAC00-\uD7A3\u3131-\u318E]+|[\uFF01\u2026\u201C\u201D\u2018\u2019\u2014\uFF1A\uFF1B\uFF0C"  \
    "\u3001-\u303F\uFE30-\uFE4F]+|[\u3105-\u312F]+|" CJK_KANA

static const struct pl_pretok_def pretoks[] = {
    /* llama.cpp's fallback for files without tokenizer.ggml.pre (its LLAMA_VOCAB_PRE_TYPE_DEFAULT):
     * punctuation runs, GPT-2, digit runs, then digits in threes. */
    {.name = "default",
     .aliases = "",
     .step = {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]", BL}},
    {.name = "gpt-2",
     .aliases = "gpt2|phi-2|mpt|olmo|jais|trillion|granite-docling|exaone4|jina-es|jina-de|"
                "jina-v2-es|jina-v2-de|gigachat|a.x-4.0|mellum|modern-bert",
     .step = {RE_GPT2, BL}},
    {.name = "llama-bpe",
     .aliases = "llama3|llama-v3|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano",
     .step = {RE_LLAMA3, BL},
     .ignore_merges = 1,
     .add_bos = 1},
    /* The Llama 3 regex with merges always applied. */
    {.name = "dbrx", .aliases = "smaug-bpe|chatglm-bpe|glm4", .step = {RE_LLAMA3, BL}},
    {.name = "jais-2", .aliases = "", .step = {RE_JAIS2, BL}},
    /* Qwen2's tokenizer.json also declares normalizer NFC (applied before the regex). */
    {.name = "qwen2",
     .aliases = "deepseek-r1-qwen|kormo|f2llmv2|megrez",
     .step = {RE_QWEN2, BL},
     .norm = PL_TOK_NORM_NFC},
    /* The Qwen2 regex without a normalizer. */
    {.name = "stablelm2", .aliases = "hunyuan|solar-open|grok-2", .step = {RE_QWEN2, BL}},
    {.name = "qwen35", .aliases = "", .step = {RE_QWEN35, BL}, .norm = PL_TOK_NORM_NFC},
    {.name = "minicpm5",
     .aliases = "",
     .step = {"\\p{N}{1,3}", RE_MINICPM5, BL},
     .ignore_merges = 1},
    {.name = "seed-coder", .aliases = "", .step = {RE_SEED, BL}},
    {.name = "ufakzeka", .aliases = "", .step = {RE_UFAK, BL}},
    {.name = "laguna", .aliases = "", .step = {"[^\\n]+|[\\n]+", RE_QWEN2, BL}},
    {.name = "exaone-moe",
     .aliases = "",
     .step = {RE_EXAONE_MOE, BL},
     .pcre2 = {RE_EXAONE_MOE_PCRE2}},
    {.name = "bailingmoe", .aliases = "bailingmoe2|llada-moe", .step = {RE_BAILING, BL}},
    /* HuggingFaceTB/SmolLM, StarCoder, Command R, EXAONE: Digits(individual) then ByteLevel's
     * GPT-2 regex. */
    {.name = "smollm",
     .aliases = "starcoder|refact|codeshell|command-r|exaone|minerva-7b|mellum2",
     .step = {DIGIT1, RE_GPT2, BL}},
    /* Falcon: Punctuation(Contiguous), ByteLevel(use_regex), then ASCII digits in threes (on
     * the byte-level text: ASCII digits are themselves there). */
    {.name = "falcon", .aliases = "", .step = {PUNCT, RE_GPT2, BL, "[0-9][0-9][0-9]"}},
    {.name = "deepseek-llm",
     .aliases = "",
     .step = {"[\\r\\n]", DS_LETTERS, DS_PUNCT, "\\s+$", CJK_HANGUL, DIGIT1, BL}},
    {.name = "deepseek-coder",
     .aliases = "",
     .step = {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", CJK_HANGUL, DIGIT1, BL}},
    {.name = "deepseek-v3",
     .aliases = "hunyuan-dense|joyai-llm|hy_v4",
     .step = {"\\p{N}{1,3}", CJK_KANA, RE_DS3, BL}},
    {.name = "spark2_5", .aliases = "", .step = {"\\p{N}{1,3}", CJK_KANA, RE_SPARK, DIGIT1, BL}},
    {.name = "gpt-4o", .aliases = "llama4|kanana2|talkie|minimax-m2", .step = {RE_O200K, BL}},
    {.name = "tekken", .aliases = "", .step = {RE_TEKKEN, BL}, .ignore_merges = 1, .add_bos = 1},
    {.name = "youtu", .aliases = "", .step = {RE_YOUTU_CJK, RE_YOUTU, BL}, .ignore_merges = 1},
    {.name = "tiny_aya",
     .aliases = "cohere2moe",
     .step = {"\\d{1,3}(?=(?:\\d{3})*\\b)", RE_O200K, BL},
     .pcre2 = {pl_pretok_digit_groups}},
    {.name = "bloom", .aliases = "poro-chat|gpt3-finnish", .step = {RE_BLOOM, BL}},
    {.name = "viking", .aliases = "", .step = {RE_VIKING, DIGIT1, BL}},
    /* Chameleon: sentinel and image tokens, tabs/newlines/indents, digits, punctuation, then
     * ByteLevel's GPT-2 regex. */
    {.name = "chameleon",
     .aliases = "",
     .step = {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )",
              DIGIT1, PUNCT1, RE_GPT2, BL},
     .add_bos = 1},
};

#define N_PRETOKS (sizeof pretoks / sizeof pretoks[0])

/* Names llama.cpp knows that are not a byte-level regex sequence plumb can run. */
static const struct {
    const char *names, *why;
} refused[] = {
    {"gemma4|granite-embed-multi-311m|sarvam-moe",
     "SentencePiece-style BPE over raw UTF-8 (no byte-level alphabet)"},
    {"whitespace", "a whitespace word-level tokenizer, not byte-level BPE"},
    {"kimi-k2|afmoe", "split by custom code in llama.cpp, not by a regex sequence"},
    {"superbpe", "splits at zero-width matches (a lookahead), which Isolated splits do not make"},
    {"jina-v1-en|jina-v2-code|roberta-bpe", "an encoder vocabulary that appends a SEP token"},
    {"granite-embed-multi-97m", "its tokenizer.json regex is not one plumb has checked"},
};

static int name_in(const char *list, const char *name, size_t len)
{
    while (*list) {
        size_t n = strcspn(list, "|");
        if (n == len && memcmp(list, name, len) == 0) return 1;
        list += n;
        if (*list == '|') list++;
    }
    return 0;
}

const struct pl_pretok_def *pl_pretok_find(const char *name, size_t len)
{
    for (size_t i = 0; i < N_PRETOKS; i++)
        if ((strlen(pretoks[i].name) == len && memcmp(pretoks[i].name, name, len) == 0) ||
            name_in(pretoks[i].aliases, name, len))
            return &pretoks[i];
    return NULL;
}

const char *pl_pretok_refusal(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (name_in(refused[i].names, name, len)) return refused[i].why;
    return NULL;
}

const struct pl_pretok_def *pl_pretok_table(size_t *n)
{
    *n = N_PRETOKS;
    return pretoks;
}

const char *pl_pretok_names(void)
{
    /* The most used first: an error message of 256 bytes may cut the tail. */
    return "default gpt-2 llama-bpe qwen2 smollm deepseek-v3 gpt-4o tekken dbrx stablelm2 qwen35 "
           "deepseek-llm deepseek-coder falcon bloom viking chameleon jais-2 minicpm5 seed-coder "
           "ufakzeka laguna exaone-moe bailingmoe spark2_5 youtu tiny_aya";
}

/* ---- Oniguruma syntax -> PCRE2 syntax ---- */

/* Rewrites the constructs whose meaning differs: \s / \S (PCRE2 10.42's \s also matches
 * U+180E), \d (Oniguruma: Nd), \b (Oniguruma's \w has marks, PCRE2's has all N), and a class
 * nested in a class (Oniguruma: a union; PCRE2: a literal '['). Everything else is the same
 * in both. Returns the length written, or 0 when out is too small. */
static size_t to_pcre2(char *out, size_t cap, const char *re)
{
    size_t o = 0;
    int in_class = 0, nested = 0;
#define PUT(str)                                                                                   \
    do {                                                                                           \
        size_t k_ = strlen(str);                                                                   \
        if (o + k_ >= cap) return 0;                                                               \
        memcpy(out + o, str, k_);                                                                  \
        o += k_;                                                                                   \
    } while (0)
    for (const char *p = re; *p; p++) {
        char one[3] = {p[0], 0, 0};
        if (*p == '\\' && p[1]) {
            char e = p[1];
            if (e == 's')
                PUT(in_class ? WS : "[" WS "]");
            else if (e == 'S' && !in_class)
                PUT("[^" WS "]");
            else if (e == 'd')
                PUT("\\p{Nd}");
            else if (e == 'b' && !in_class)
                PUT("(?:(?<=[" WORD "])(?![" WORD "])|(?<![" WORD "])(?=[" WORD "]))");
            else {
                one[1] = e;
                PUT(one);
            }
            p++;
            continue;
        }
        if (!in_class && *p == '[') {
            in_class = 1;
            PUT(one);
            if (p[1] == '^') {
                PUT("^");
                p++;
            }
            if (p[1] == ']') { /* a leading ']' is literal in both */
                PUT("]");
                p++;
            }
            continue;
        }
        if (in_class && *p == '[' && p[1] != ':' && p[1] != '^') {
            nested++; /* a union: its members join the outer class */
            continue;
        }
        if (in_class && *p == ']') {
            if (nested) {
                nested--;
                continue;
            }
            in_class = 0;
        }
        PUT(one);
    }
#undef PUT
    if (o >= cap) return 0;
    out[o] = 0;
    return o;
}

/* ---- compile ---- */

static void *pc_malloc(PCRE2_SIZE n, void *user)
{
    (void)user;
    return pl_malloc(n);
}

static void pc_free(void *p, void *user)
{
    (void)user;
    pl_free(p);
}

pl_status pl_pretok_compile(struct pl_pretok *p, const struct pl_pretok_def *def, pl_error *err)
{
    memset(p, 0, sizeof *p);
    p->def = def;
    p->gctx = pcre2_general_context_create(pc_malloc, pc_free, NULL);
    if (!p->gctx) return pl_fail(err, PL_ERR_NOMEM, "no memory for the PCRE2 context");
    pcre2_compile_context *cctx = pcre2_compile_context_create(p->gctx);
    if (!cctx) {
        pl_pretok_release(p);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for the PCRE2 compile context");
    }
    pl_status s = PL_OK;
    char *buf = NULL;
    for (int k = 0; def->step[k] && s == PL_OK; k++) {
        if (def->step[k] == pl_pretok_bytelevel) continue;
        int i = p->n_re;
        if (i == PL_TOK_MAX_PRE_REGEX) {
            s = pl_fail(err, PL_ERR_LIMIT, "pre-tokenizer '%s' has over %d regexes", def->name,
                        PL_TOK_MAX_PRE_REGEX);
            break;
        }
        size_t cap = strlen(def->pcre2[k] ? def->pcre2[k] : def->step[k]) * 120 +
                     64; /* \s, the longest rewrite, is ~90 bytes */
        pl_free(buf);
        if (!(buf = pl_malloc(cap))) {
            s = pl_fail(err, PL_ERR_NOMEM, "no memory to rewrite pre-tokenizer '%s' regex %d",
                        def->name, i);
            break;
        }
        if (!to_pcre2(buf, cap, def->pcre2[k] ? def->pcre2[k] : def->step[k])) {
            s = pl_fail(err, PL_ERR_LIMIT, "pre-tokenizer '%s' regex %d: rewrite overflow",
                        def->name, i);
            break;
        }
        int code;
        PCRE2_SIZE at;
        p->re[i] = pcre2_compile((PCRE2_SPTR)buf, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                 &code, &at, cctx);
        if (!p->re[i]) {
            if (code == PCRE2_ERROR_HEAP_FAILED) {
                s = pl_fail(err, PL_ERR_NOMEM, "no memory to compile pre-tokenizer '%s' regex %d",
                            def->name, i);
            } else {
                PCRE2_UCHAR msg[120];
                pcre2_get_error_message(code, msg, sizeof msg);
                s = pl_fail(err, PL_ERR_UNSUPPORTED,
                            "pre-tokenizer '%s' regex %d does not compile at offset %zu: %s",
                            def->name, i, (size_t)at, (const char *)msg);
            }
            break;
        }
        p->n_re++;
        if (def->pcre2[k] == pl_pretok_digit_groups) {
            p->groups[i] = 1;
            if (!p->word && !(p->word = pcre2_compile((PCRE2_SPTR) "[\\p{L}\\p{M}\\p{Pc}]",
                                                      PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                                      &code, &at, cctx))) {
                s = pl_fail(err,
                            code == PCRE2_ERROR_HEAP_FAILED ? PL_ERR_NOMEM : PL_ERR_UNSUPPORTED,
                            "pre-tokenizer '%s': the word class does not compile", def->name);
                break;
            }
        }
        int rc = pcre2_jit_compile(p->re[i], PCRE2_JIT_COMPLETE);
        /* No JIT in this PCRE2 build: the interpreter gives the same matches, only slower. */
        if (rc == PCRE2_ERROR_NOMEMORY)
            s = pl_fail(err, PL_ERR_NOMEM, "no memory to JIT-compile pre-tokenizer '%s' regex %d",
                        def->name, i);
        else if (rc != 0 && rc != PCRE2_ERROR_JIT_BADOPTION)
            s = pl_fail(err, PL_ERR_UNSUPPORTED,
                        "pre-tokenizer '%s' regex %d: PCRE2 JIT compile failed (%d)", def->name, i,
                        rc);
    }
    pl_free(buf);
    pcre2_compile_context_free(cctx);
    if (s) pl_pretok_release(p);
    return s;
}

void pl_pretok_release(struct pl_pretok *p)
{
    if (!p) return;
    for (int i = 0; i < PL_TOK_MAX_PRE_REGEX; i++) pcre2_code_free(p->re[i]);
    pcre2_code_free(p->word);
    pcre2_general_context_free(p->gctx);
    memset(p, 0, sizeof *p);
}

/* ---- split ---- */

struct pl_pretok_scratch {
    pcre2_match_data *md[PL_TOK_MAX_PRE_REGEX]; /* one per level: levels nest */
    pcre2_match_data *md_word;                  /* the digit_groups boundary test */
};

pl_status pl_pretok_scratch_new(struct pl_pretok_scratch **out, const struct pl_pretok *p,
                                pl_error *err)
{
    *out = NULL;
    struct pl_pretok_scratch *s = pl_calloc(1, sizeof *s);
    if (!s) return pl_fail(err, PL_ERR_NOMEM, "no memory for pre-tokenizer scratch");
    for (int i = 0; i < p->n_re; i++) {
        s->md[i] = pcre2_match_data_create(1, p->gctx);
        if (!s->md[i]) {
            pl_pretok_scratch_free(s);
            return pl_fail(err, PL_ERR_NOMEM, "no memory for PCRE2 match data");
        }
    }
    if (p->word && !(s->md_word = pcre2_match_data_create(1, p->gctx))) {
        pl_pretok_scratch_free(s);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for PCRE2 match data");
    }
    *out = s;
    return PL_OK;
}

void pl_pretok_scratch_free(struct pl_pretok_scratch *s)
{
    if (!s) return;
    for (int i = 0; i < PL_TOK_MAX_PRE_REGEX; i++) pcre2_match_data_free(s->md[i]);
    pcre2_match_data_free(s->md_word);
    pl_free(s);
}

struct split_ctx {
    const struct pl_pretok *p;
    struct pl_pretok_scratch *s;
    const char *base; /* start of the whole text, for offsets in messages */
    pl_pretok_emit_fn emit;
    void *user;
    pl_error *err;
};

static pl_status match_error(struct split_ctx *c, int level, int rc, size_t at)
{
    PCRE2_UCHAR msg[120];
    pcre2_get_error_message(rc, msg, sizeof msg);
    pl_status code =
        rc == PCRE2_ERROR_NOMEMORY || rc == PCRE2_ERROR_HEAP_FAILED ? PL_ERR_NOMEM : PL_ERR_LIMIT;
    return pl_fail(c->err, code, "pre-tokenizer '%s' regex %d failed at byte %zu: %s",
                   c->p->def->name, level, at, (const char *)msg);
}

static pl_status split_level(struct split_ctx *c, int level, const char *p, size_t n);

/* \d{1,3}(?=(?:\d{3})*\b) as an Isolated split, in one pass. A match needs a run of Nd
 * digits that ends at a word boundary (the next character is not L, M, Nd or Pc: Oniguruma's
 * \w); inside a digit run there is no boundary, so a run followed by a word character has no
 * match at all. In a run that does end at one, each match takes 1-3 digits so that a multiple
 * of three remains: the first piece is ((m - 1) mod 3) + 1 digits long, the rest threes. */
static pl_status split_groups(struct split_ctx *c, int level, const char *p, size_t n)
{
    pcre2_code *re = c->p->re[level];
    pcre2_match_data *md = c->s->md[level];
    size_t off = 0, gap = 0;
    pl_status s;
    while (off < n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)p, n, off, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) return match_error(c, level, rc, (size_t)(p - c->base) + off);
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t a = ov[0], e = ov[1];
        off = e;
        if (e < n) {
            rc = pcre2_match(c->p->word, (PCRE2_SPTR)p, n, e, PCRE2_NO_UTF_CHECK | PCRE2_ANCHORED,
                             c->s->md_word, NULL);
            if (rc >= 0) continue; /* a word character follows: no boundary, no match */
            if (rc != PCRE2_ERROR_NOMATCH)
                return match_error(c, level, rc, (size_t)(p - c->base) + e);
        }
        size_t m = 0;
        for (size_t i = a; i < e; i += pl_utf8_char((const unsigned char *)p + i, e - i)) m++;
        if (a > gap && (s = split_level(c, level + 1, p + gap, a - gap))) return s;
        size_t take = (m - 1) % 3 + 1, at = a;
        while (at < e) {
            size_t b = at;
            for (size_t k = 0; k < take; k++)
                b += pl_utf8_char((const unsigned char *)p + b, e - b);
            if ((s = split_level(c, level + 1, p + at, b - at))) return s;
            at = b;
            take = 3;
        }
        gap = e;
    }
    return split_level(c, level + 1, p + gap, n - gap);
}

static pl_status split_level(struct split_ctx *c, int level, const char *p, size_t n)
{
    if (n == 0) return PL_OK;
    if (level == c->p->n_re) return c->emit(c->user, p, n);
    if (c->p->groups[level]) return split_groups(c, level, p, n);
    pcre2_code *re = c->p->re[level];
    pcre2_match_data *md = c->s->md[level];
    size_t off = 0, gap = 0;
    pl_status s;
    while (off < n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)p, n, off, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) return match_error(c, level, rc, (size_t)(p - c->base) + off);
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t a = ov[0], b = ov[1];
        if (b == a) {
            /* An empty match (none of the built-in regexes has one): the character joins the
             * gap, as in HF's Isolated split. */
            size_t k = pl_utf8_char((const unsigned char *)p + a, n - a);
            off = a + (k ? k : 1);
            continue;
        }
        if (a > gap && (s = split_level(c, level + 1, p + gap, a - gap))) return s;
        if ((s = split_level(c, level + 1, p + a, b - a))) return s;
        off = gap = b;
    }
    return split_level(c, level + 1, p + gap, n - gap);
}

pl_status pl_pretok_split(const struct pl_pretok *p, struct pl_pretok_scratch *s, const char *text,
                          size_t len, pl_pretok_emit_fn emit, void *user, pl_error *err)
{
    struct split_ctx c = {p, s, text, emit, user, err};
    return split_level(&c, 0, text, len);
}

/* ---- gapless steps ---- */

/* Every Unicode scalar value in order; with sep, each followed by sep (a second context for
 * the alternatives that look at a neighbour). Returns the length written. */
static size_t every_char(char *out, int sep)
{
    size_t n = 0;
    for (uint32_t c = 0; c <= 0x10FFFF; c++) {
        if (c >= 0xD800 && c <= 0xDFFF) continue;
        n += (size_t)utf8proc_encode_char((utf8proc_int32_t)c, (utf8proc_uint8_t *)out + n);
        if (sep) out[n++] = (char)sep;
    }
    return n;
}

/* 1 when re leaves no byte of text[0..n) outside a non-empty match. */
static int covers(pcre2_code *re, pcre2_match_data *md, const char *text, size_t n, int *rc_out)
{
    size_t off = 0;
    while (off < n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)text, n, off, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc < 0) {
            *rc_out = rc;
            return 0;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[0] != off || ov[1] == ov[0]) return 0;
        off = ov[1];
    }
    return 1;
}

pl_status pl_pretok_step_gapless(const struct pl_pretok_def *def, int k, int *gapless,
                                 pl_error *err)
{
    *gapless = 0;
    int i = 0;
    for (int j = 0; j < k; j++)
        if (!def->step[j])
            return PL_OK;
        else if (def->step[j] != pl_pretok_bytelevel)
            i++;
    if (!def->step[k] || def->step[k] == pl_pretok_bytelevel) return PL_OK;
    struct pl_pretok p;
    pl_status s = pl_pretok_compile(&p, def, err);
    if (s) return s;
    if (p.groups[i]) {
        pl_pretok_release(&p);
        return PL_OK; /* digit groups leave every non-digit out */
    }
    size_t cap = (size_t)0x110000 * 5;
    char *text = pl_malloc(cap);
    pcre2_match_data *md = pcre2_match_data_create(1, p.gctx);
    if (!text || !md) {
        pl_free(text);
        pcre2_match_data_free(md);
        pl_pretok_release(&p);
        return pl_fail(err, PL_ERR_NOMEM, "no memory to probe pre-tokenizer '%s'", def->name);
    }
    int rc = 0;
    *gapless = covers(p.re[i], md, text, every_char(text, 0), &rc) &&
               covers(p.re[i], md, text, every_char(text, ' '), &rc);
    if (rc < 0)
        s = pl_fail(err, rc == PCRE2_ERROR_NOMEMORY ? PL_ERR_NOMEM : PL_ERR_LIMIT,
                    "pre-tokenizer '%s' regex %d failed on the probe text (%d)", def->name, i, rc);
    pl_free(text);
    pcre2_match_data_free(md);
    pl_pretok_release(&p);
    return s;
}
