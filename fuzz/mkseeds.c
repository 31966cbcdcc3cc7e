/* mkseeds.c — writes the seed corpora of the fuzz harnesses with the project's own generators
 * (synth/mkmodel.c models, synth/demo_vocab.c vocabularies, texts in many scripts, sampler
 * cases in fuzz_sampler.c's layout, safetensors files and a sharded checkpoint).
 * Not a fuzzer: run once (campaign.sh seeds), then afl-cmin the result. Usage: mkseeds DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mkmodel.h"
#include "quirk_vocab.h"
#include "plumb.h"

static const char *root;

static void put(const char *harness, const char *name, const void *data, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, harness);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", root, harness, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "mkseeds: cannot write %s\n", path);
        exit(1);
    }
}

static void *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc((size_t)len + 1);
    *n = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    return buf;
}

static void model(const char *name, const char *arch, enum demo_vocab_kind vocab, pl_ftype ftype,
                  int64_t n_embd, int64_t n_ff, int tied)
{
    mk_config c = {0};
    snprintf(c.name, sizeof c.name, "seed %.48s", name);
    snprintf(c.arch, sizeof c.arch, "%s", arch);
    c.n_embd = n_embd;
    c.n_layer = 1;
    c.n_head = 2;
    c.n_head_kv = 1;
    c.head_dim = 16;
    c.n_ff = n_ff;
    c.vocab = vocab;
    c.n_vocab = demo_vocab_min(vocab) + 8;
    c.n_ctx = 64;
    c.rope_base = 10000.0f;
    c.rms_eps = 1e-5f;
    c.tied = tied;
    c.ftype = ftype;
    c.pure = 1;
    c.seed = 7;
    c.n_threads = 1;
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s/.%s.gguf", root, name);
    pl_error err = {0};
    if (mk_write(&c, tmp, NULL, NULL, NULL, &err) != PL_OK) {
        fprintf(stderr, "mkseeds: %s: %s\n", name, err.msg);
        exit(1);
    }
    size_t n = 0;
    void *buf = slurp(tmp, &n);
    remove(tmp);
    if (!buf) exit(1);
    put("gguf", name, buf, n);
    free(buf);
}

static void *vocab_file(enum demo_vocab_kind kind, uint32_t n_vocab, size_t *n)
{
    pl_gguf_writer *w = NULL;
    pl_error err = {0};
    void *buf = NULL;
    pl_status st = pl_gguf_writer_new(&w, 3, &err);
    if (!st) st = pl_gguf_writer_set_string(w, "general.architecture", "llama", 5, &err);
    if (!st) st = demo_vocab_write(w, kind, n_vocab, &err);
    if (!st) st = pl_gguf_writer_write_memory(w, &buf, n, &err);
    pl_gguf_writer_free(w);
    if (st) {
        fprintf(stderr, "mkseeds: vocab: %s\n", err.msg);
        exit(1);
    }
    return buf;
}

static const char *const texts[] = {
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "  leading spaces\tand tabs\nand newlines\r\n\n",
    "int main(void) { return printf(\"%d\\n\", 42); }",
    "def f(x):\n    return [i ** 2 for i in range(x)]  # 1234567890",
    "Ünïcödé façade naïve — “quotes” … €100",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Γειά σου Κόσμε",
    "こんにちは世界。カタカナとひらがな、漢字。",
    "你好，世界！中文文本测试。",
    "안녕하세요 세계",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "emoji 👋🏽🌍 family 👨‍👩‍👧 flags 🇫🇷",
    "<s>[INST] hi [/INST] ok</s>",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
    "<|endoftext|><unk><0x41>\xe2\x96\x81piece",
    "invalid \xff\xfe utf8 \xc3 \xe2\x82 \xf0\x9f\x98 truncated",
    "'s 't 're 've 'm 'll 'd 123 4567 ...!!! ???",
};

/* A fuzz_sampler case (its layout: choices read off the end, in this order, as fuzz_data.h
 * reads them; history and logits from the front). Choices are table indices of the harness. */
typedef struct sampler_seed {
    const char *name;
    unsigned model, temp, top_k, top_p, min_p, repeat, freq, presence, last_n;
    unsigned n_hist, raw, fill, min_keep;
    const short *hist;
    const unsigned char *logits; /* one table code per logit (raw = 0) */
    size_t n_logits;
} sampler_seed;

static void sampler_case(const sampler_seed *c)
{
    unsigned char buf[1024];
    size_t n = 0;
    for (unsigned i = 0; i < c->n_hist; i++) {
        buf[n++] = (unsigned char)(c->hist[i] & 0xff);
        buf[n++] = (unsigned char)((unsigned short)c->hist[i] >> 8);
    }
    memcpy(buf + n, c->logits, c->n_logits);
    n += c->n_logits;
    const unsigned tail[] = {c->model,  c->temp, c->top_k,    c->top_p,    c->min_p,
                             c->repeat, c->freq, c->presence, c->last_n,   0 /* seed */,
                             c->n_hist, c->raw,  c->fill,     c->min_keep, 0x9e,
                             0x37,      0x79,    0xb9 /* u, most significant first */};
    for (size_t i = sizeof tail / sizeof tail[0]; i-- > 0;) buf[n++] = (unsigned char)tail[i];
    put("sampler", c->name, buf, n);
}

/* A safetensors seed: byte 0 the mode (0: one file), then the 8-byte header length, the
 * header and data_len bytes of data. */
static size_t st_bytes(unsigned char *out, const char *json, size_t data_len)
{
    size_t j = strlen(json);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)((uint64_t)j >> (8 * i));
    memcpy(out + 8, json, j);
    for (size_t i = 0; i < data_len; i++) out[8 + j + i] = (unsigned char)(i * 61 + 3);
    return 8 + j + data_len;
}

static void safetensors_seeds(void)
{
    static const struct {
        const char *name, *json;
        size_t data;
    } files[] = {
        {"one-f32", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 16},
        {"mixed-metadata",
         "{\"__metadata__\":{\"format\":\"pt\"},"
         "\"model.embed_tokens.weight\":{\"dtype\":\"BF16\",\"shape\":[4,2],\"data_offsets\":[0,16]"
         "},"
         "\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]},"
         "\"lm_head.weight\":{\"dtype\":\"F16\",\"shape\":[4,2],\"data_offsets\":[24,40]},"
         "\"ids\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[40,48]},"
         "\"empty\":{\"dtype\":\"U8\",\"shape\":[0,3],\"data_offsets\":[48,48]}}",
         48},
        {"padded", "{\"b\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}     ", 3},
    };
    unsigned char buf[2048];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        buf[0] = 0;
        size_t n = 1 + st_bytes(buf + 1, files[i].json, files[i].data);
        put("safetensors", files[i].name, buf, n);
    }
    /* a sharded checkpoint: mode 1, index #ST# shard 1 #ST# shard 2 */
    const char *index =
        "{\"metadata\":{\"total_size\":20},\"weight_map\":{"
        "\"a\":\"model-00001-of-00003.safetensors\",\"b\":\"model-00001-of-00003.safetensors\","
        "\"c\":\"model-00002-of-00003.safetensors\"}}";
    size_t n = 0;
    buf[n++] = 1;
    memcpy(buf + n, index, strlen(index));
    n += strlen(index);
    memcpy(buf + n, "#ST#", 4);
    n += 4;
    n += st_bytes(buf + n,
                  "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[8,12]}}",
                  12);
    memcpy(buf + n, "#ST#", 4);
    n += 4;
    n += st_bytes(buf + n, "{\"c\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 8);
    put("safetensors", "sharded", buf, n);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mkseeds DIR\n");
        return 2;
    }
    root = argv[1];
    mkdir(root, 0755);
    /* Models: every arch and vocabulary, every weight type, tiny shapes. */
    static const struct {
        const char *name;
        pl_ftype ftype;
    } fts[] = {{"f32", PL_FTYPE_F32},     {"f16", PL_FTYPE_F16},   {"bf16", PL_FTYPE_BF16},
               {"q8_0", PL_FTYPE_Q8_0},   {"q4_0", PL_FTYPE_Q4_0}, {"q4_1", PL_FTYPE_Q4_1},
               {"q5_0", PL_FTYPE_Q5_0},   {"q5_1", PL_FTYPE_Q5_1}, {"q4_k", PL_FTYPE_Q4_K_M},
               {"q5_k", PL_FTYPE_Q5_K_M}, {"q6_k", PL_FTYPE_Q6_K}};
    for (size_t i = 0; i < sizeof fts / sizeof fts[0]; i++) {
        char name[64];
        static const char *const archs[] = {"llama", "qwen2", "qwen3"};
        const char *arch = archs[i % 3];
        enum demo_vocab_kind vk = (enum demo_vocab_kind)((i / 3 + i) % 3);
        int is_k = fts[i].ftype >= PL_FTYPE_Q4_K_S && fts[i].ftype <= PL_FTYPE_Q6_K;
        snprintf(name, sizeof name, "%s-%s-%s", arch, mk_vocab_name(vk), fts[i].name);
        model(name, arch, vk, fts[i].ftype, is_k ? 256 : 32, 32, i != 1 && i != 3);
    }
    /* Vocab-only files (gguf corpus) and vocabulary-from-input cases (tokenizer mode 3). */
    for (int k = 0; k < 3; k++) {
        size_t n = 0;
        void *v =
            vocab_file((enum demo_vocab_kind)k, demo_vocab_min((enum demo_vocab_kind)k) + 16, &n);
        char name[64];
        snprintf(name, sizeof name, "vocab-%s", mk_vocab_name((enum demo_vocab_kind)k));
        put("gguf", name, v, n);
        const char *t = texts[(size_t)k * 5 % (sizeof texts / sizeof texts[0])];
        size_t tl = strlen(t);
        unsigned char *buf = malloc(4 + tl + n);
        buf[0] = 3;
        buf[1] = (unsigned char)(k * 5);
        buf[2] = (unsigned char)(tl & 0xff);
        buf[3] = (unsigned char)(tl >> 8);
        memcpy(buf + 4, t, tl);
        memcpy(buf + 4 + tl, v, n);
        snprintf(name, sizeof name, "file-%s", mk_vocab_name((enum demo_vocab_kind)k));
        put("tokenizer", name, buf, 4 + tl + n);
        free(buf);
        pl_buffer_free(v);
    }
    /* The quirk vocabulary (synth/quirk_vocab.h) from the input, with texts that reach each
     * quirk, with and without parse_special. */
    static const char *const quirk_texts[] = {
        "a  b a     b a   \xc3\xb5 x\xf5y",
        "<\xef\xbd\x9c"
        "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>abcd bab aba xyz "
        "[EMPTY_270] [EMPTY_271] [PAD300] ab<|endoftext|>",
    };
    static const char *const quirk_pres[] = {"gpt2", "llama-bpe"};
    /* tokenize flags in bits 0..1, detokenize flags in 2..3 (fuzz_tokenizer.c) */
    static const unsigned char flags[] = {0, PL_TOKENIZE_PARSE_SPECIAL | PL_DETOK_SPECIAL << 2,
                                          PL_TOKENIZE_PARSE_SPECIAL, 0};
    for (int k = 0; k < 4; k++) {
        pl_gguf_writer *w = NULL;
        pl_error err = {0};
        void *v = NULL;
        size_t n = 0;
        pl_status st = pl_gguf_writer_new(&w, 3, &err);
        if (!st) st = pl_gguf_writer_set_string(w, "general.architecture", "llama", 5, &err);
        if (!st) st = quirk_vocab_write(w, quirk_pres[k / 2], &err);
        if (!st) st = pl_gguf_writer_write_memory(w, &v, &n, &err);
        pl_gguf_writer_free(w);
        if (st) {
            fprintf(stderr, "mkseeds: quirk vocab: %s\n", err.msg);
            return 1;
        }
        char name[64];
        if (k == 0) put("gguf", "vocab-quirks", v, n);
        const char *t = quirk_texts[k % 2];
        size_t tl = strlen(t);
        unsigned char *buf = malloc(4 + tl + n);
        buf[0] = 3;
        buf[1] = flags[k];
        buf[2] = (unsigned char)(tl & 0xff);
        buf[3] = (unsigned char)(tl >> 8);
        memcpy(buf + 4, t, tl);
        memcpy(buf + 4 + tl, v, n);
        snprintf(name, sizeof name, "file-quirks-%s-%d", quirk_pres[k / 2], k % 2);
        put("tokenizer", name, buf, 4 + tl + n);
        free(buf);
        pl_buffer_free(v);
    }
    /* Texts with each fixed vocabulary and a spread of flags. */
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t tl = strlen(texts[i]);
        unsigned char *buf = malloc(2 + tl);
        buf[0] = (unsigned char)(i % 3);
        buf[1] = (unsigned char)((i * 37) & 0xff);
        memcpy(buf + 2, texts[i], tl);
        char name[64];
        snprintf(name, sizeof name, "text-%02zu", i);
        put("tokenizer", name, buf, 2 + tl);
        free(buf);
    }
    /* Byte-level BPE under each pre-tokenizer of the table (byte 0 = 1 + 4k, k = 1..32). */
    for (unsigned k = 1; k <= 32; k++) {
        const char *t = texts[k % (sizeof texts / sizeof texts[0])];
        size_t tl = strlen(t);
        unsigned char *buf = malloc(2 + tl);
        buf[0] = (unsigned char)(1 + 4 * k);
        buf[1] = (unsigned char)((k * 53) & 0xf0); /* no ADD_BOS / PARSE_SPECIAL: round trip */
        memcpy(buf + 2, t, tl);
        char name[64];
        snprintf(name, sizeof name, "pretok-%02u", k);
        put("tokenizer", name, buf, 2 + tl);
        free(buf);
    }
    /* Quant: one case per type index (fuzz_quant picks the index-th implemented type), both
     * modes (the tail holds the parameters). */
    unsigned n_quant_types = 0;
    for (uint32_t t = 0; t < PL_TYPE_COUNT; t++) n_quant_types += pl_type_supported(t) != 0;
    for (unsigned t = 0; t < n_quant_types; t++) {
        unsigned char buf[600];
        for (size_t j = 0; j < sizeof buf - 8; j++) buf[j] = (unsigned char)(j * 131 + t * 7);
        /* floats near 1: exponent bytes 0x3f in every fourth byte */
        for (size_t j = 3; j < sizeof buf - 8; j += 4) buf[j] = 0x3f;
        size_t n = sizeof buf;
        buf[n - 1] = (unsigned char)t; /* type index */
        buf[n - 2] = (unsigned char)(t % 3);
        buf[n - 3] = 1;
        buf[n - 4] = 1;
        buf[n - 5] = (unsigned char)(t & 1);
        buf[n - 6] = 0;
        char name[64];
        snprintf(name, sizeof name, "type-%02u", t);
        put("quant", name, buf, n);
    }
    /* Sampler: the default chain, greedy, edges of every kind (fuzz_sampler.c's tables). */
    {
        unsigned char ramp[300], ties[64], inf[7] = {96, 104, 193, 96, 193, 194, 112};
        for (size_t i = 0; i < sizeof ramp; i++) ramp[i] = (unsigned char)((i * 37) % 192);
        for (size_t i = 0; i < sizeof ties; i++) ties[i] = (unsigned char)(100 + i % 3);
        static const short hist[] = {5, 5, 9, -1, 300, 7, 5, 32767, 0, 2};
        const sampler_seed seeds[] = {
            /* name, model, temp, top_k, top_p, min_p, repeat, freq, presence, last_n, ... */
            {"default-v300", 4, 2, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 3, NULL, ramp, 300},
            {"greedy-v64-ties", 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, NULL, ties, 64},
            {"penalties-v64", 3, 3, 1, 2, 4, 2, 1, 2, 0, 10, 0, 0, 4, hist, ties, 64},
            {"all-neg-inf-v300", 4, 2, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 3, NULL, NULL, 0},
            {"all-equal-v7", 2, 3, 1, 3, 0, 0, 0, 0, 0, 0, 0, 3, 2, NULL, NULL, 0},
            {"plus-inf-v7", 2, 5, 2, 2, 3, 5, 4, 7, 0, 3, 0, 0, 8, hist, inf, 7},
            {"tiny-temp-v64", 3, 9, 4, 3, 5, 0, 0, 0, 0, 0, 0, 4, 0, NULL, ramp, 64},
            {"huge-temp-v300", 4, 11, 3, 0, 1, 0, 0, 0, 0, 0, 0, 5, 3, NULL, ramp, 300},
            {"top-k-1-v2", 1, 10, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, NULL, ramp, 2},
            {"v1", 0, 2, 0, 1, 1, 0, 0, 0, 0, 2, 0, 0, 3, hist, ramp, 1},
            {"bad-params-v7", 2, 13, 5, 10, 9, 6, 10, 11, 6, 0, 0, 0, 3, NULL, ramp, 7},
            {"nan-logit-v7", 2, 2, 0, 1, 1, 0, 0, 0, 0, 0, 0, 6, 3, NULL, NULL, 0},
            {"raw-logits-v64", 3, 3, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 3, NULL, ramp, 256},
        };
        for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) sampler_case(&seeds[i]);
    }
    safetensors_seeds();
    return 0;
}
