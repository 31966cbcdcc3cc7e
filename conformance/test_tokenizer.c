/* test_tokenizer.c — encode/decode on two hand-built vocabularies (SentencePiece and byte-level
 * BPE) whose expected ids were worked out by hand from the merge rules and the pre-tokenizer
 * regexes. Not validation (test_tokenizer_hostile.c) nor properties (test_tokenizer_props.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tokfix.h"

#define N(a) ((long)(sizeof(a) / sizeof((a)[0])))

/* ---- the byte-level BPE vocabulary ----
 * ids 0..255: the bytes (id = byte value), then merged tokens in rank order:
 *   256 th  257 the  258 " c"  259 " ca"  260 " cat"  261 "  "  262 12  263 123  264 's
 *   265 "\n\n"  266 " the"  267 E4 BD  268 E4 BD A0 (你)  269 F0 9F  270 'S
 * then 271 <|endoftext|> 272 <|im_start|> 273 <|im_end|> (control), 274 <tool> (user-defined). */
static const char *const bpe_merges[][2] = {
    {"t", "h"},   {"th", "e"},      {" ", "c"},           {" c", "a"},      {" ca", "t"},
    {" ", " "},   {"1", "2"},       {"12", "3"},          {"'", "s"},       {"\n", "\n"},
    {" ", "the"}, {"\xe4", "\xbd"}, {"\xe4\xbd", "\xa0"}, {"\xf0", "\x9f"}, {"'", "S"},
};
#define BPE_N_MERGES 15
#define BPE_N        (256 + BPE_N_MERGES + 4)

/* pre: tokenizer.ggml.pre; bos >= 0 adds bos_token_id and add_bos_token = true; norm, if not
 * NULL, is written as the normalizer key. Returns the load's status (message in err). */
static pl_status bpe_load(tf_file *f, const char *pre, int bos, const char *norm, pl_error *err)
{
    static char text[BPE_N][32];
    const char *toks[BPE_N];
    int32_t types[BPE_N];
    char merge_text[BPE_N_MERGES][40];
    const char *merges[BPE_N_MERGES];
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        tf_gpt2(&c, 1, text[b]);
        toks[b] = text[b];
        types[b] = PL_TOKEN_NORMAL;
    }
    for (int m = 0; m < BPE_N_MERGES; m++) {
        char joined[16], l[16], r[16];
        size_t nl = strlen(bpe_merges[m][0]), nr = strlen(bpe_merges[m][1]);
        memcpy(joined, bpe_merges[m][0], nl);
        memcpy(joined + nl, bpe_merges[m][1], nr);
        tf_gpt2(joined, nl + nr, text[256 + m]);
        toks[256 + m] = text[256 + m];
        types[256 + m] = PL_TOKEN_NORMAL;
        snprintf(merge_text[m], sizeof merge_text[m], "%s %s", tf_gpt2(bpe_merges[m][0], nl, l),
                 tf_gpt2(bpe_merges[m][1], nr, r));
        merges[m] = merge_text[m];
    }
    static const char *const specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool>"};
    for (int k = 0; k < 4; k++) {
        toks[256 + BPE_N_MERGES + k] = specials[k];
        types[256 + BPE_N_MERGES + k] = k < 3 ? PL_TOKEN_CONTROL : PL_TOKEN_USER_DEFINED;
    }
    pl_gguf_writer *w = tf_writer();
    tf_str(w, "tokenizer.ggml.model", "gpt2");
    tf_str(w, "tokenizer.ggml.pre", pre);
    tf_strs(w, "tokenizer.ggml.tokens", toks, BPE_N);
    tf_i32s(w, "tokenizer.ggml.token_type", types, BPE_N);
    tf_strs(w, "tokenizer.ggml.merges", merges, BPE_N_MERGES);
    tf_u32(w, "tokenizer.ggml.eos_token_id", 273);
    if (bos >= 0) {
        tf_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
        tf_bool(w, "tokenizer.ggml.add_bos_token", 1);
    }
    if (norm) tf_str(w, PL_TOK_KEY_NORMALIZER, norm);
    return tf_open(f, w, err);
}

static void bpe_open_norm(tf_file *f, const char *pre, int bos, const char *norm)
{
    pl_error err;
    pl_status s = bpe_load(f, pre, bos, norm, &err);
    if (s) {
        fprintf(stderr, "bpe vocabulary (%s) did not load: %s\n", pre, err.msg);
        abort();
    }
}

/* Encodes text (len bytes) with the flags and compares with want. */
static void expect(const struct pl_tokenizer *t, const char *text, size_t len, uint32_t flags,
                   const int32_t *want, long wn, const char *what)
{
    int32_t ids[256];
    long n = tf_encode(t, text, len, flags, ids, 256, what);
    TU_CHECK(n >= 0 && tf_same_ids(ids, n, want, wn, what), "%s", what);
}

#define EXPECT(t, text, flags, ...)                                                                \
    do {                                                                                           \
        static const int32_t want_[] = {__VA_ARGS__};                                              \
        expect(t, text, sizeof(text) - 1, flags, want_, N(want_), #text " " #flags);               \
    } while (0)
#define EXPECT_NONE(t, text, flags) expect(t, text, sizeof(text) - 1, flags, NULL, 0, #text)

static void bpe_open(tf_file *f, const char *pre, int bos)
{
    bpe_open_norm(f, pre, bos, NULL);
}

/* NFC (utf8proc) before the pre-tokenizer: qwen2 implies it, the normalizer key decides. The
 * byte tokens make the ids the bytes of the normalized text. */
static void bpe_nfc_normalizes_before_pretokenizing(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);                                    /* implied */
    EXPECT(f.t, "e\xcc\x81", 0, 0xc3, 0xa9);                      /* e + U+0301 -> U+00E9 */
    EXPECT(f.t, "\xe2\x84\xab", 0, 0xc3, 0x85);                   /* U+212B -> U+00C5 */
    EXPECT(f.t, "\xe1\x84\x80\xe1\x85\xa1", 0, 0xea, 0xb0, 0x80); /* jamo -> U+AC00 */
    EXPECT(f.t, "the e\xcc\x81", 0, 257, 32, 0xc3, 0xa9);         /* "the" merges as before */
    /* an invalid byte ends the run: the lone U+0301 after it stays as it is */
    EXPECT(f.t, "e\xff\xcc\x81", 0, 101, 0xff, 0xcc, 0x81);
    EXPECT(f.t, "\xc3\xa9", 0, 0xc3, 0xa9); /* already NFC */
    tf_close(&f);
    bpe_open_norm(&f, "qwen2", -1, "none"); /* the key overrides */
    EXPECT(f.t, "e\xcc\x81", 0, 101, 0xcc, 0x81);
    tf_close(&f);
    bpe_open(&f, "gpt2", -1); /* no normalizer */
    EXPECT(f.t, "e\xcc\x81", 0, 101, 0xcc, 0x81);
    tf_close(&f);
    bpe_open_norm(&f, "gpt2", -1, "NFC");
    EXPECT(f.t, "e\xcc\x81", 0, 0xc3, 0xa9);
    tf_close(&f);
    bpe_open_norm(&f, "gpt2", -1, "nfd");
    EXPECT(f.t, "\xc3\xa9", 0, 101, 0xcc, 0x81); /* U+00E9 -> e + U+0301 */
    EXPECT(f.t, "e\xcc\x81", 0, 101, 0xcc, 0x81);
    tf_close(&f);
    bpe_open_norm(&f, "gpt2", -1, "NFKC");
    EXPECT(f.t, "\xef\xac\x81", 0, 102, 105); /* U+FB01 (fi ligature) -> "fi" */
    EXPECT(f.t, "e\xcc\x81", 0, 0xc3, 0xa9);
    tf_close(&f);
    bpe_open_norm(&f, "gpt2", -1, "NFKD");
    EXPECT(f.t, "\xc2\xb2", 0, 50); /* U+00B2 -> "2" */
    EXPECT(f.t, "\xc3\xa9", 0, 101, 0xcc, 0x81);
    tf_close(&f);
    pl_error err;
    pl_status s = bpe_load(&f, "gpt2", -1, "Lowercase", &err);
    TU_CHECK(s == PL_ERR_UNSUPPORTED && tf_mentions(err.msg, PL_TOK_KEY_NORMALIZER) &&
                 tf_mentions(err.msg, "Lowercase"),
             "an unknown normalizer is refused naming the key and value: %s", err.msg);
    tf_close(&f);
}

static void bpe_merges_in_rank_order(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    EXPECT(f.t, "the cat", 0, 257, 260);
    EXPECT(f.t, "the", 0, 257);
    tf_close(&f);
}

static void bpe_spaces_leading_trailing_multiple(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    /* "  the": \s+(?!\S) takes one space, " the" is a word: " " + (" ", the) */
    EXPECT(f.t, "  the", 0, 32, 266);
    EXPECT(f.t, "the  ", 0, 257, 261);
    EXPECT(f.t, "a   b", 0, 97, 261, 32, 98);
    EXPECT(f.t, " ", 0, 32);
    tf_close(&f);
}

static void bpe_newlines_and_tabs(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    EXPECT(f.t, "a\tb", 0, 97, 9, 98);       /* "\tb" is one word: [^\r\n L N]?L+ */
    EXPECT(f.t, "x\n\ny", 0, 120, 265, 121); /* \s*[\r\n]+ takes both newlines */
    EXPECT(f.t, "\n", 0, 10);
    tf_close(&f);
}

static void bpe_digits_single_for_qwen2_three_for_llama3_runs_for_gpt2(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    EXPECT(f.t, "12345", 0, 49, 50, 51, 52, 53);
    EXPECT(f.t, "4123", 0, 52, 49, 50, 51);
    tf_close(&f);
    bpe_open(&f, "llama-bpe", -1);
    EXPECT(f.t, "12345", 0, 263, 52, 53); /* "123" "45" */
    EXPECT(f.t, "4123", 0, 52, 262, 51);  /* "412" "3" */
    tf_close(&f);
    bpe_open(&f, "gpt2", -1);
    EXPECT(f.t, "4123", 0, 52, 263); /* one word: 4 (1 2) 3 -> 4 (12 3) */
    tf_close(&f);
}

static void bpe_contractions_case_insensitive_except_gpt2(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    EXPECT(f.t, "it's IT'S", 0, 105, 116, 264, 32, 73, 84, 270);
    tf_close(&f);
    bpe_open(&f, "llama-bpe", -1);
    EXPECT(f.t, "it's IT'S", 0, 105, 116, 264, 32, 73, 84, 270);
    tf_close(&f);
    bpe_open(&f, "gpt2", -1); /* 's is a contraction, 'S is punctuation then a word */
    EXPECT(f.t, "it's IT'S", 0, 105, 116, 264, 32, 73, 84, 39, 83);
    tf_close(&f);
}

static void bpe_emoji_and_cjk_merge_bytes(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    EXPECT(f.t, "\xf0\x9f\x99\x82", 0, 269, 0x99, 0x82);               /* 🙂 */
    EXPECT(f.t, "\xe4\xbd\xa0\xe5\xa5\xbd", 0, 268, 0xE5, 0xA5, 0xBD); /* 你好 */
    tf_close(&f);
}

/* Documented: a run of bytes that are not part of a valid character is one pre-token. */
static void bpe_invalid_utf8_is_its_own_word(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    EXPECT(f.t,
           "a\xff"
           "b",
           0, 97, 255, 98);
    EXPECT(f.t, "\xe4\xbd", 0, 267); /* a truncated 你 still merges its bytes */
    EXPECT(f.t, "x\xe4\xbd", 0, 120, 267);
    tf_close(&f);
}

static void bpe_control_tokens_only_with_parse_special(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    EXPECT(f.t, "<|im_start|>user\nhi<|im_end|>", PL_TOKENIZE_PARSE_SPECIAL, 272, 117, 115, 101,
           114, 10, 104, 105, 273);
    EXPECT(f.t, "<|im_start|>user\nhi<|im_end|>", 0, 60, 124, 105, 109, 95, 115, 116, 97, 114, 116,
           124, 62, 117, 115, 101, 114, 10, 104, 105, 60, 124, 105, 109, 95, 101, 110, 100, 124,
           62);
    tf_close(&f);
}

static void bpe_user_defined_tokens_always_match(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    EXPECT(f.t, "a<tool>b", 0, 97, 274, 98);
    EXPECT(f.t, "a<tool>b", PL_TOKENIZE_PARSE_SPECIAL, 97, 274, 98);
    tf_close(&f);
}

static void bpe_empty_input_and_bos(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    EXPECT_NONE(f.t, "", 0);
    EXPECT_NONE(f.t, "", PL_TOKENIZE_ADD_BOS); /* qwen2 does not add BOS */
    tf_close(&f);
    bpe_open(&f, "llama-bpe", 271);
    EXPECT(f.t, "", PL_TOKENIZE_ADD_BOS, 271);
    EXPECT(f.t, "the", PL_TOKENIZE_ADD_BOS, 271, 257);
    EXPECT(f.t, "the", 0, 257);
    tf_close(&f);
}

static void bpe_decode_pieces_and_specials(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    static const char text[] = "<|im_start|>user\n the cat 🙂 你好 \xff<|im_end|>";
    int32_t ids[128];
    long n = tf_encode(f.t, text, sizeof text - 1, PL_TOKENIZE_PARSE_SPECIAL, ids, 128, "encode");
    size_t len;
    char *s = tf_decode(f.t, ids, (size_t)n, PL_DETOK_SPECIAL, &len);
    TU_CHECK(s && len == sizeof text - 1 && memcmp(s, text, len) == 0, "decode with specials");
    free(s);
    s = tf_decode(f.t, ids, (size_t)n, 0, &len);
    static const char plain[] = "user\n the cat 🙂 你好 \xff";
    TU_CHECK(s && len == sizeof plain - 1 && memcmp(s, plain, len) == 0,
             "control tokens render empty without PL_DETOK_SPECIAL");
    free(s);
    const char *p;
    size_t k;
    pl_error err;
    TU_CHECK(pl_tok_piece(f.t, 266, 0, &p, &k, &err) == PL_OK && k == 4 &&
                 memcmp(p, " the", 4) == 0,
             "piece of ' the'");
    TU_CHECK(pl_tok_piece(f.t, 267, 0, &p, &k, &err) == PL_OK && k == 2 &&
                 memcmp(p, "\xe4\xbd", 2) == 0,
             "piece of a partial character is its raw bytes");
    TU_CHECK(pl_tok_piece(f.t, BPE_N, 0, &p, &k, &err) == PL_ERR_INVALID_ARG &&
                 tf_mentions(err.msg, "out of range"),
             "piece of an id past the vocabulary: %s", err.msg);
    TU_CHECK(pl_tok_piece(f.t, -1, 0, &p, &k, &err) == PL_ERR_INVALID_ARG, "piece of -1");
    tf_close(&f);
}

/* ---- the SentencePiece vocabulary ----
 * 0 <unk>  1 <s>  2 </s>  3..258 <0x00>..<0xFF>, then pieces (score):
 *   259 ▁t (-1)  260 he (-2)  261 ▁the (-3)  262 ▁▁ (-4)  263 ll (-5)  264 ▁he (-6)
 *   265 llo (-7)  266 ▁hello (-8)
 * characters: 267 ▁  268 t  269 h  270 e  271 l  272 o  273 a  274 你  275 1 (-100 ...), and
 * 276 <tool> (user-defined). */
#define SPM_N 277

static void spm_open(tf_file *f)
{
    static const char *const pieces[] = {"\xe2\x96\x81t",
                                         "he",
                                         "\xe2\x96\x81the",
                                         "\xe2\x96\x81\xe2\x96\x81",
                                         "ll",
                                         "\xe2\x96\x81he",
                                         "llo",
                                         "\xe2\x96\x81hello",
                                         "\xe2\x96\x81",
                                         "t",
                                         "h",
                                         "e",
                                         "l",
                                         "o",
                                         "a",
                                         "\xe4\xbd\xa0",
                                         "1",
                                         "<tool>"};
    static char bytes[256][8];
    const char *toks[SPM_N];
    float scores[SPM_N];
    int32_t types[SPM_N];
    toks[0] = "<unk>";
    toks[1] = "<s>";
    toks[2] = "</s>";
    types[0] = PL_TOKEN_UNKNOWN;
    types[1] = types[2] = PL_TOKEN_CONTROL;
    scores[0] = scores[1] = scores[2] = 0;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        toks[3 + b] = bytes[b];
        types[3 + b] = PL_TOKEN_BYTE;
        scores[3 + b] = 0;
    }
    for (int i = 0; i < 18; i++) {
        toks[259 + i] = pieces[i];
        types[259 + i] = i == 17 ? PL_TOKEN_USER_DEFINED : PL_TOKEN_NORMAL;
        scores[259 + i] = i < 8 ? -(float)(i + 1) : i < 17 ? -100.0f - (float)(i - 8) : 0.0f;
    }
    pl_gguf_writer *w = tf_writer();
    tf_str(w, "tokenizer.ggml.model", "llama");
    tf_strs(w, "tokenizer.ggml.tokens", toks, SPM_N);
    tf_f32s(w, "tokenizer.ggml.scores", scores, SPM_N);
    tf_i32s(w, "tokenizer.ggml.token_type", types, SPM_N);
    tf_u32(w, "tokenizer.ggml.bos_token_id", 1);
    tf_u32(w, "tokenizer.ggml.eos_token_id", 2);
    tf_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    pl_error err;
    if (tf_open(f, w, &err)) {
        fprintf(stderr, "spm vocabulary did not load: %s\n", err.msg);
        abort();
    }
}

static void spm_merges_by_highest_score(void)
{
    tf_file f;
    spm_open(&f);
    /* ▁ t h e: ▁t (-1), he (-2), then ▁t+he = ▁the (-3) */
    EXPECT(f.t, "the", 0, 261);
    /* he, ll, ▁he, llo, ▁he+llo = ▁hello */
    EXPECT(f.t, "hello", 0, 266);
    EXPECT(f.t, "the", PL_TOKENIZE_ADD_BOS, 1, 261);
    tf_close(&f);
}

static void spm_ties_merge_leftmost(void)
{
    tf_file f;
    spm_open(&f);
    EXPECT(f.t, " ", 0, 262);       /* ▁▁ */
    EXPECT(f.t, "  ", 0, 262, 267); /* ▁▁▁: (0,1) and (1,2) tie; the left pair wins */
    tf_close(&f);
}

static void spm_spaces_leading_trailing(void)
{
    tf_file f;
    spm_open(&f);
    EXPECT(f.t, "  the", 0, 262, 261); /* ▁▁▁the -> ▁▁ ▁the */
    EXPECT(f.t, "the  ", 0, 261, 262);
    tf_close(&f);
}

static void spm_byte_fallback_for_newline_tab_digits_cjk_emoji(void)
{
    tf_file f;
    spm_open(&f);
    EXPECT(f.t, "a\nb", 0, 267, 273, 3 + '\n', 3 + 'b');
    EXPECT(f.t, "\t", 0, 267, 3 + '\t');
    EXPECT(f.t, "123", 0, 267, 275, 3 + '2', 3 + '3');
    EXPECT(f.t, "\xe4\xbd\xa0\xe5\xa5\xbd", 0, 267, 274, 3 + 0xE5, 3 + 0xA5, 3 + 0xBD);
    EXPECT(f.t, "\xf0\x9f\x99\x82", 0, 267, 3 + 0xF0, 3 + 0x9F, 3 + 0x99, 3 + 0x82);
    tf_close(&f);
}

/* Documented: a byte that is not part of a valid character falls back to its byte token. */
static void spm_invalid_utf8_falls_back_to_bytes(void)
{
    tf_file f;
    spm_open(&f);
    EXPECT(f.t, "a\xff", 0, 267, 273, 3 + 0xFF);
    EXPECT(f.t, "\xe4\xbd", 0, 267, 3 + 0xE4, 3 + 0xBD);
    int32_t ids[16];
    long n = tf_encode(f.t, "a\xff", 2, 0, ids, 16, "a\\xff");
    size_t len;
    char *s = tf_decode(f.t, ids, (size_t)n, PL_DETOK_STRIP_PREFIX, &len);
    TU_CHECK(s && len == 2 && memcmp(s, "a\xff", 2) == 0, "invalid bytes round-trip");
    free(s);
    tf_close(&f);
}

static void spm_control_tokens_only_with_parse_special(void)
{
    tf_file f;
    spm_open(&f);
    /* After a special token the text gets the dummy prefix again. */
    EXPECT(f.t, "<s>the", PL_TOKENIZE_PARSE_SPECIAL, 1, 261);
    EXPECT(f.t, "<s>the", 0, 267, 3 + '<', 3 + 's', 3 + '>', 268, 260);
    EXPECT(f.t, "a<tool>b", 0, 267, 273, 276, 267, 3 + 'b');
    tf_close(&f);
}

static void spm_empty_input(void)
{
    tf_file f;
    spm_open(&f);
    EXPECT_NONE(f.t, "", 0);
    EXPECT(f.t, "", PL_TOKENIZE_ADD_BOS, 1);
    tf_close(&f);
}

static void spm_decode_strips_the_dummy_prefix_on_request(void)
{
    tf_file f;
    spm_open(&f);
    static const int32_t ids[] = {1, 261, 262, 266};
    size_t len;
    char *s = tf_decode(f.t, ids, 4, 0, &len);
    TU_CHECK(s && strcmp(s, " the   hello") == 0, "plain decode: '%s'", s ? s : "(null)");
    free(s);
    s = tf_decode(f.t, ids, 4, PL_DETOK_STRIP_PREFIX, &len);
    TU_CHECK(s && strcmp(s, "the   hello") == 0, "strip: '%s'", s ? s : "(null)");
    free(s);
    s = tf_decode(f.t, ids, 4, PL_DETOK_STRIP_PREFIX | PL_DETOK_SPECIAL, &len);
    TU_CHECK(s && strcmp(s, "<s>the   hello") == 0, "strip + special: '%s'", s ? s : "(null)");
    free(s);
    /* the prefix after a special token is stripped too, so special text round-trips */
    static const char text[] = "hi<s> there<tool>x";
    int32_t got[64];
    long n = tf_encode(f.t, text, sizeof text - 1, PL_TOKENIZE_PARSE_SPECIAL, got, 64, "encode");
    s = tf_decode(f.t, got, (size_t)n, PL_DETOK_STRIP_PREFIX | PL_DETOK_SPECIAL, &len);
    TU_CHECK(s && strcmp(s, text) == 0, "special round trip: '%s'", s ? s : "(null)");
    free(s);
    const char *p;
    size_t k;
    pl_error err;
    TU_CHECK(pl_tok_piece(f.t, 0, 0, &p, &k, &err) == PL_OK && k == 3 &&
                 memcmp(p, "\xe2\x96\x85", 3) == 0,
             "unknown renders as U+2585");
    TU_CHECK(pl_tok_piece(f.t, 3 + '\n', 0, &p, &k, &err) == PL_OK && k == 1 && p[0] == '\n',
             "byte token renders as its byte");
    tf_close(&f);
}

/* Without <0xXX> tokens a character with no piece becomes the unknown token; with no unknown
 * token either, encoding fails and says which byte. */
static void spm_unknown_without_byte_tokens_else_error(void)
{
    const char *toks[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81", "a"};
    float scores[] = {0, 0, 0, -1, -2};
    int32_t types[] = {PL_TOKEN_UNKNOWN, PL_TOKEN_CONTROL, PL_TOKEN_CONTROL, PL_TOKEN_NORMAL,
                       PL_TOKEN_NORMAL};
    for (int with_unk = 1; with_unk >= 0; with_unk--) {
        pl_gguf_writer *w = tf_writer();
        tf_str(w, "tokenizer.ggml.model", "llama");
        tf_strs(w, "tokenizer.ggml.tokens", toks, 5);
        tf_f32s(w, "tokenizer.ggml.scores", scores, 5);
        tf_i32s(w, "tokenizer.ggml.token_type", types, 5);
        if (!with_unk) {
            int32_t none = -1;
            pl_error e;
            pl_gguf_writer_set(w, "tokenizer.ggml.unknown_token_id", PL_GGUF_INT32, &none, &e);
        }
        tf_file f;
        pl_error err;
        TU_CHECK(tf_open(&f, w, &err) == PL_OK, "load: %s", err.msg);
        if (with_unk) {
            EXPECT(f.t, "ab", 0, 3, 4, 0);
        } else {
            int32_t ids[8];
            size_t n;
            pl_status s = pl_tok_encode(f.t, "ab", 2, 0, ids, 8, &n, &err);
            TU_CHECK(s == PL_ERR_UNSUPPORTED && tf_mentions(err.msg, "0x62"),
                     "no unknown token: %s: %s", pl_status_str(s), err.msg);
        }
        tf_close(&f);
    }
}

/* A piece with ▁ after another character ("a▁b") lets merges cross word starts: the encoder
 * then merges whole fragments (and splits at word starts only when no piece does this). */
static void spm_pieces_spanning_words_merge_across_them(void)
{
    const char *toks[] = {"<unk>",
                          "<s>",
                          "</s>",
                          "\xe2\x96\x81",
                          "a",
                          "b",
                          "\xe2\x96\x81"
                          "a",
                          "\xe2\x96\x81"
                          "b",
                          "a\xe2\x96\x81",
                          "a\xe2\x96\x81"
                          "b"};
    float scores[] = {0, 0, 0, -10, -11, -12, -1, -2, -3, -4};
    int32_t types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    pl_gguf_writer *w = tf_writer();
    tf_str(w, "tokenizer.ggml.model", "llama");
    tf_strs(w, "tokenizer.ggml.tokens", toks, 10);
    tf_f32s(w, "tokenizer.ggml.scores", scores, 10);
    tf_i32s(w, "tokenizer.ggml.token_type", types, 10);
    tf_file f;
    pl_error err;
    TU_CHECK(tf_open(&f, w, &err) == PL_OK, "load: %s", err.msg);
    TU_CHECK(f.t->spm_words == 0, "a piece spans a word start");
    /* ▁ a ▁ b: ▁a (-1) and ▁b (-2) win before a▁ (-3) can form, so no a▁b */
    EXPECT(f.t, "a b", 0, 6, 7);
    /* "xa b": x has no piece and there are no byte tokens: <unk>; then ▁b (-2), and a + ▁b
     * = a▁b (-4) merges across the word start */
    EXPECT(f.t, "xa b", 0, 3, 0, 9);
    tf_close(&f);
    spm_open(&f);
    TU_CHECK(f.t->spm_words == 1, "the test vocabulary merges word by word");
    tf_close(&f);
}

static void encode_too_small_buffer_says_size_and_never_overflows(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    int32_t ids[4] = {-7, -7, -7, -7};
    size_t n = 0;
    pl_error err;
    pl_status s = pl_tok_encode(f.t, "a b c", 5, 0, ids, 1, &n, &err);
    /* "a" " b" " c": 97 | 32 98 | (" " c) = 258 */
    TU_CHECK(s == PL_ERR_BUFFER_TOO_SMALL && n == 4, "status %s, n %zu", pl_status_str(s), n);
    TU_CHECK(tf_mentions(err.msg, "4 tokens") && tf_mentions(err.msg, "holds 1"), "msg: %s",
             err.msg);
    TU_CHECK(ids[1] == -7 && ids[2] == -7 && ids[3] == -7, "wrote past cap");
    s = pl_tok_encode(f.t, "a b c", 5, 0, NULL, 0, &n, &err);
    TU_CHECK(s == PL_ERR_BUFFER_TOO_SMALL && n == 4, "size query with cap 0");
    char buf[4] = {'x', 'x', 'x', 'x'};
    static const int32_t three[] = {97, 32, 98};
    s = pl_tok_decode(f.t, three, 3, 0, buf, 2, &n, &err);
    TU_CHECK(s == PL_ERR_BUFFER_TOO_SMALL && n == 3 && buf[2] == 'x' &&
                 tf_mentions(err.msg, "3 bytes"),
             "decode: %s n %zu msg %s", pl_status_str(s), n, err.msg);
    tf_close(&f);
}

static void encode_rejects_bad_arguments(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    int32_t ids[4];
    size_t n;
    pl_error err;
    TU_CHECK(pl_tok_encode(f.t, "a", 1, 0x80, ids, 4, &n, &err) == PL_ERR_INVALID_ARG &&
                 tf_mentions(err.msg, "flags"),
             "unknown flag: %s", err.msg);
    TU_CHECK(pl_tok_encode(f.t, NULL, 3, 0, ids, 4, &n, &err) == PL_ERR_INVALID_ARG, "NULL text");
    TU_CHECK(pl_tok_encode(f.t, NULL, 0, 0, ids, 4, &n, &err) == PL_OK && n == 0,
             "NULL empty text");
    TU_CHECK(pl_tok_encode(f.t, "a", 1, 0, NULL, 4, &n, &err) == PL_ERR_INVALID_ARG, "NULL out");
    TU_CHECK(pl_tok_encode(f.t, "a", 1, 0, ids, 4, NULL, &err) == PL_ERR_INVALID_ARG, "NULL n_out");
    tf_close(&f);
}

/* NUL is an ordinary byte: it is encoded, not a terminator. */
static void encode_nul_byte_is_text(void)
{
    tf_file f;
    bpe_open(&f, "qwen2", -1);
    EXPECT(f.t, "a\0b", 0, 97, 0, 98);
    tf_close(&f);
}

int main(void)
{
    static const tu_test tests[] = {
        {"bpe_merges_in_rank_order", bpe_merges_in_rank_order},
        {"bpe_nfc_normalizes_before_pretokenizing", bpe_nfc_normalizes_before_pretokenizing},
        {"bpe_spaces_leading_trailing_multiple", bpe_spaces_leading_trailing_multiple},
        {"bpe_newlines_and_tabs", bpe_newlines_and_tabs},
        {"bpe_digits_single_for_qwen2_three_for_llama3_runs_for_gpt2",
         bpe_digits_single_for_qwen2_three_for_llama3_runs_for_gpt2},
        {"bpe_contractions_case_insensitive_except_gpt2",
         bpe_contractions_case_insensitive_except_gpt2},
        {"bpe_emoji_and_cjk_merge_bytes", bpe_emoji_and_cjk_merge_bytes},
        {"bpe_invalid_utf8_is_its_own_word", bpe_invalid_utf8_is_its_own_word},
        {"bpe_control_tokens_only_with_parse_special", bpe_control_tokens_only_with_parse_special},
        {"bpe_user_defined_tokens_always_match", bpe_user_defined_tokens_always_match},
        {"bpe_empty_input_and_bos", bpe_empty_input_and_bos},
        {"bpe_decode_pieces_and_specials", bpe_decode_pieces_and_specials},
        {"spm_merges_by_highest_score", spm_merges_by_highest_score},
        {"spm_ties_merge_leftmost", spm_ties_merge_leftmost},
        {"spm_spaces_leading_trailing", spm_spaces_leading_trailing},
        {"spm_byte_fallback_for_newline_tab_digits_cjk_emoji",
         spm_byte_fallback_for_newline_tab_digits_cjk_emoji},
        {"spm_invalid_utf8_falls_back_to_bytes", spm_invalid_utf8_falls_back_to_bytes},
        {"spm_control_tokens_only_with_parse_special", spm_control_tokens_only_with_parse_special},
        {"spm_empty_input", spm_empty_input},
        {"spm_decode_strips_the_dummy_prefix_on_request",
         spm_decode_strips_the_dummy_prefix_on_request},
        {"spm_unknown_without_byte_tokens_else_error", spm_unknown_without_byte_tokens_else_error},
        {"spm_pieces_spanning_words_merge_across_them",
         spm_pieces_spanning_words_merge_across_them},
        {"encode_too_small_buffer_says_size_and_never_overflows",
         encode_too_small_buffer_says_size_and_never_overflows},
        {"encode_rejects_bad_arguments", encode_rejects_bad_arguments},
        {"encode_nul_byte_is_text", encode_nul_byte_is_text},
        {NULL, NULL},
    };
    return tu_run("tokenizer", tests);
}
