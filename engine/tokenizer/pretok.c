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
#include <stdio.h>
#include <string.h>

#include "pretok.h"
#include "utf8.h"

/* Unicode White_Space, as a character-class body. */
#define WS                                                                                         \
    "\\t-\\r "                                                                                     \
    "\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define S  "[" WS "]"
#define NS "[^" WS "]"

/* GPT-2 (openai/gpt-2 encoder.py, also HF ByteLevel's default). */
#define RE_GPT2                                                                                    \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|" S "+(?!" NS ")|" S "+"
/* Llama 3 (tiktoken cl100k-style, meta-llama/Meta-Llama-3-8B tokenizer.json): digits in runs of
 * at most three. */
#define RE_LLAMA3                                                                                  \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^" WS               \
    "\\p{L}\\p{N}]+[\\r\\n]*|" S "*[\\r\\n]+|" S "+(?!" NS ")|" S "+"
/* Qwen2 (Qwen/Qwen2-7B tokenizer.json): as Llama 3 but one digit per piece. */
#define RE_QWEN2                                                                                   \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^" WS                    \
    "\\p{L}\\p{N}]+[\\r\\n]*|" S "*[\\r\\n]+|" S "+(?!" NS ")|" S "+"

static const struct pl_pretok_def pretoks[] = {
    /* llama.cpp's fallback for files without tokenizer.ggml.pre (its LLAMA_VOCAB_PRE_TYPE_DEFAULT):
     * punctuation runs, GPT-2, digit runs, then digits in threes. */
    {.name = "default",
     .aliases = "",
     .n_re = 4,
     .re = {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}},
    {.name = "gpt2", .aliases = "gpt-2|phi-2|mpt|olmo", .n_re = 1, .re = {RE_GPT2}},
    {.name = "llama-bpe",
     .aliases = "llama3|llama-v3",
     .n_re = 1,
     .re = {RE_LLAMA3},
     .ignore_merges = 1,
     .add_bos = 1},
    /* Qwen2's tokenizer.json also declares normalizer NFC (applied before the regex). */
    {.name = "qwen2",
     .aliases = "deepseek-r1-qwen",
     .n_re = 1,
     .re = {RE_QWEN2},
     .norm = PL_TOK_NORM_NFC},
    /* HuggingFaceTB/SmolLM: Digits(individual) then ByteLevel's GPT-2 regex. */
    {.name = "smollm",
     .aliases = "starcoder|refact|codeshell",
     .n_re = 2,
     .re = {"\\p{N}", RE_GPT2}},
};

#define N_PRETOKS (sizeof pretoks / sizeof pretoks[0])

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

const char *pl_pretok_names(void)
{
    return "default, gpt2 (gpt-2, phi-2, mpt, olmo), llama-bpe (llama3, llama-v3), qwen2 "
           "(deepseek-r1-qwen), smollm (starcoder, refact, codeshell)";
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
    for (int i = 0; i < def->n_re && s == PL_OK; i++) {
        int code;
        PCRE2_SIZE at;
        p->re[i] = pcre2_compile((PCRE2_SPTR)def->re[i], PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP, &code, &at, cctx);
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
    pcre2_compile_context_free(cctx);
    if (s) pl_pretok_release(p);
    return s;
}

void pl_pretok_release(struct pl_pretok *p)
{
    if (!p) return;
    for (int i = 0; i < PL_TOK_MAX_PRE_REGEX; i++) pcre2_code_free(p->re[i]);
    pcre2_general_context_free(p->gctx);
    memset(p, 0, sizeof *p);
}

/* ---- split ---- */

struct pl_pretok_scratch {
    pcre2_match_data *md[PL_TOK_MAX_PRE_REGEX]; /* one per level: levels nest */
};

pl_status pl_pretok_scratch_new(struct pl_pretok_scratch **out, const struct pl_pretok *p,
                                pl_error *err)
{
    *out = NULL;
    struct pl_pretok_scratch *s = pl_calloc(1, sizeof *s);
    if (!s) return pl_fail(err, PL_ERR_NOMEM, "no memory for pre-tokenizer scratch");
    for (int i = 0; i < p->def->n_re; i++) {
        s->md[i] = pcre2_match_data_create(1, p->gctx);
        if (!s->md[i]) {
            pl_pretok_scratch_free(s);
            return pl_fail(err, PL_ERR_NOMEM, "no memory for PCRE2 match data");
        }
    }
    *out = s;
    return PL_OK;
}

void pl_pretok_scratch_free(struct pl_pretok_scratch *s)
{
    if (!s) return;
    for (int i = 0; i < PL_TOK_MAX_PRE_REGEX; i++) pcre2_match_data_free(s->md[i]);
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

static pl_status split_level(struct split_ctx *c, int level, const char *p, size_t n)
{
    if (n == 0) return PL_OK;
    if (level == c->p->def->n_re) return c->emit(c->user, p, n);
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
