/* mkseeds.c — writes the seed corpora of the fuzz harnesses with the project's own generators
 * (synth/mkmodel.c models of every architecture, the same with one key or tensor changed,
 * synth/demo_vocab.c vocabularies, texts in many scripts, sampler cases in fuzz_sampler.c's
 * layout, safetensors files and a sharded checkpoint).
 * Not a fuzzer: run once (campaign.sh seeds), then afl-cmin the result. Usage: mkseeds DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../conformance/spm_pb.h"
#include "mkmodel.h"
#include "plumb.h"
#include "quirk_vocab.h"

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

/* ---- gguf: every architecture, RoPE scaling, per-layer arrays, one key or tensor changed in a
 * valid model (each check behind a successful parse), defects patched into the bytes ---- */

static void die(const char *what, const pl_error *err)
{
    fprintf(stderr, "mkseeds: %s: %s\n", what, err->msg);
    exit(1);
}

/* model()'s shape (one layer, 2 heads of 16, one KV head, seed 7); name becomes general.name */
static mk_config config(const char *name, const char *arch, enum demo_vocab_kind vocab,
                        pl_ftype ftype, int64_t n_embd, int64_t n_ff, int tied)
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
    return c;
}

/* The file mk_write makes of c, in memory (free()). */
static void *model_bytes(const mk_config *c, size_t *n)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s/.mkseeds-model.gguf", root);
    pl_error err = {0};
    if (mk_write(c, tmp, NULL, NULL, NULL, &err) != PL_OK) die(c->name, &err);
    void *buf = slurp(tmp, n);
    remove(tmp);
    if (!buf) exit(1);
    return buf;
}

static pl_gguf *parse_or_die(const void *buf, size_t n)
{
    pl_gguf *g = NULL;
    pl_error err = {0};
    if (pl_gguf_parse(&g, buf, n, &err) != PL_OK) die("reparse", &err);
    return g;
}

/* Key i of g into w, with its type and value. */
static void copy_kv(pl_gguf_writer *w, const pl_gguf *g, uint64_t i)
{
    pl_str k = pl_gguf_kv_key(g, i);
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
    const pl_gguf_type t = pl_gguf_kv_type(g, i);
    pl_error err = {0};
    pl_status s;
    pl_str v;
    if (t == PL_GGUF_STRING) {
        pl_gguf_kv_string(g, i, &v, NULL);
        s = pl_gguf_writer_set_string(w, key, v.ptr, (size_t)v.len, &err);
    } else if (t == PL_GGUF_ARRAY) {
        pl_gguf_array a;
        pl_gguf_kv_array(g, i, &a, NULL);
        if (a.type != PL_GGUF_STRING) {
            s = pl_gguf_writer_set_array(w, key, a.type, a.data, a.count, &err);
        } else {
            const char **p = malloc((a.count + 1) * sizeof *p);
            size_t *l = malloc((a.count + 1) * sizeof *l);
            if (!p || !l) exit(1);
            for (uint64_t j = 0; j < a.count; j++) {
                pl_gguf_array_string(&a, j, &v, NULL);
                p[j] = v.ptr;
                l[j] = (size_t)v.len;
            }
            s = pl_gguf_writer_set_array_str(w, key, p, l, a.count, &err);
            free(p);
            free(l);
        }
    } else {
        uint64_t x = 0;
        pl_gguf_kv_scalar(g, i, t, &x, NULL);
        s = pl_gguf_writer_set(w, key, t, &x, &err);
    }
    if (s) die(key, &err);
}

static void copy_tensor(pl_gguf_writer *w, const pl_gguf *g, uint64_t i)
{
    pl_tensor_info t;
    pl_error err = {0};
    pl_gguf_tensor(g, i, &t, NULL);
    char name[PL_GGUF_MAX_NAME + 1];
    snprintf(name, sizeof name, "%.*s", (int)t.name.len, t.name.ptr);
    if (pl_gguf_writer_add_tensor(w, name, t.type, t.n_dims, t.ne, t.data, &err)) die(name, &err);
}

/* A metadata change: a leading '.' in key stands for "<architecture>."; type
 * PL_GGUF_TYPE_COUNT leaves the key out; arrays hold n of arr as elem. */
typedef struct kv_edit {
    const char *key;
    pl_gguf_type type;
    double num;
    const char *str;
    pl_gguf_type elem;
    int n;
    int64_t arr[2];
} kv_edit;

/* A tensor added: every element value (F32 or F16), ne1 0 for a vector. */
typedef struct tensor_add {
    const char *name;
    uint32_t type;
    int64_t ne0, ne1;
    float value;
} tensor_add;

typedef struct edit_seed {
    const char *name;
    int base;
    kv_edit kv[8];
    const char *drop;  /* a tensor left out */
    tensor_add add[2]; /* tensors added (a name of NULL: none) */
    int base2;         /* with from2: the tensors named from2... come from this base */
    const char *from2;
} edit_seed;

static void set_value(pl_gguf_writer *w, const char *key, const kv_edit *e)
{
    pl_error err = {0};
    pl_status s;
    pl_gguf_scalar v;
    memset(&v, 0, sizeof v);
    switch (e->type) {
    case PL_GGUF_STRING:
        s = pl_gguf_writer_set_string(w, key, e->str, strlen(e->str), &err);
        break;
    case PL_GGUF_ARRAY: {
        const size_t es = pl_gguf_type_size(e->elem);
        unsigned char buf[16];
        for (int j = 0; j < e->n; j++) {
            if (e->elem == PL_GGUF_FLOAT32) {
                float f = (float)e->arr[j];
                memcpy(buf + j * es, &f, 4);
            } else {
                memcpy(buf + j * es, &e->arr[j], es); /* little-endian: the low bytes */
            }
        }
        s = pl_gguf_writer_set_array(w, key, e->elem, buf, (uint64_t)e->n, &err);
        break;
    }
    default:
        switch (e->type) {
        case PL_GGUF_UINT8:
        case PL_GGUF_BOOL:
            v.u8 = (uint8_t)e->num;
            break;
        case PL_GGUF_INT8:
            v.i8 = (int8_t)e->num;
            break;
        case PL_GGUF_UINT16:
            v.u16 = (uint16_t)e->num;
            break;
        case PL_GGUF_INT16:
            v.i16 = (int16_t)e->num;
            break;
        case PL_GGUF_UINT32:
            v.u32 = (uint32_t)e->num;
            break;
        case PL_GGUF_INT32:
            v.i32 = (int32_t)e->num;
            break;
        case PL_GGUF_UINT64:
            v.u64 = (uint64_t)e->num;
            break;
        case PL_GGUF_INT64:
            v.i64 = (int64_t)e->num;
            break;
        case PL_GGUF_FLOAT32:
            v.f32 = (float)e->num;
            break;
        default:
            v.f64 = e->num;
            break;
        }
        s = pl_gguf_writer_set(w, key, e->type, &v, &err);
    }
    if (s) die(key, &err);
}

enum {
    B_LLAMA,
    B_LLAMA_L2,
    B_LLAMA_L2_WIDE,
    B_MIXTRAL,
    B_QWEN2MOE,
    B_QWEN3MOE,
    B_GEMMA2,
    B_GEMMA3,
    B_PHI3,
    B_PHI3_32, /* the shapes whose window llama.cpp assumes when the key is absent */
    B_PHI3_40,
    B_PHI3_32_128K,
    /* issue 49 (archA) */
    B_GRANITE,
    B_SMOLLM3,
    B_OLMO2,
    B_EXAONE4,
    B_GLM4,
    /* issue 49 */
    B_COHERE2,
    B_GPT_OSS,
    N_BASES
};

static void edit_model(const edit_seed *e, void *const *bases, const size_t *sizes)
{
    pl_gguf *g = parse_or_die(bases[e->base], sizes[e->base]);
    pl_gguf *g2 = e->from2 ? parse_or_die(bases[e->base2], sizes[e->base2]) : NULL;
    pl_str an;
    pl_gguf_get_string(g, "general.architecture", &an, NULL);
    char keys[8][128];
    size_t n_edits = 0;
    for (; n_edits < 8 && e->kv[n_edits].key; n_edits++) {
        const char *k = e->kv[n_edits].key;
        if (k[0] == '.')
            snprintf(keys[n_edits], sizeof keys[0], "%.*s%s", (int)an.len, an.ptr, k);
        else
            snprintf(keys[n_edits], sizeof keys[0], "%s", k);
    }
    pl_gguf_writer *w = NULL;
    pl_error err = {0};
    if (pl_gguf_writer_new(&w, 3, &err)) die(e->name, &err);
    for (uint64_t i = 0; i < pl_gguf_n_kv(g); i++) {
        pl_str k = pl_gguf_kv_key(g, i);
        int out = 0;
        for (size_t j = 0; j < n_edits; j++)
            out |= e->kv[j].type == PL_GGUF_TYPE_COUNT && strlen(keys[j]) == k.len &&
                   memcmp(keys[j], k.ptr, k.len) == 0;
        if (!out) copy_kv(w, g, i);
    }
    for (size_t j = 0; j < n_edits; j++)
        if (e->kv[j].type != PL_GGUF_TYPE_COUNT) set_value(w, keys[j], &e->kv[j]);
    const size_t n2 = e->from2 ? strlen(e->from2) : 0;
    for (uint64_t i = 0; i < pl_gguf_n_tensors(g); i++) {
        pl_tensor_info t;
        pl_gguf_tensor(g, i, &t, NULL);
        const int mine = !(n2 && t.name.len >= n2 && memcmp(t.name.ptr, e->from2, n2) == 0);
        const int dropped = e->drop && t.name.len == strlen(e->drop) &&
                            memcmp(t.name.ptr, e->drop, t.name.len) == 0;
        if (mine && !dropped) copy_tensor(w, g, i);
    }
    for (uint64_t i = 0; g2 && i < pl_gguf_n_tensors(g2); i++) {
        pl_tensor_info t;
        pl_gguf_tensor(g2, i, &t, NULL);
        if (t.name.len >= n2 && memcmp(t.name.ptr, e->from2, n2) == 0) copy_tensor(w, g2, i);
    }
    void *data[2] = {NULL, NULL};
    for (int j = 0; j < 2 && e->add[j].name; j++) {
        const tensor_add *a = &e->add[j];
        const int64_t n = a->ne0 * (a->ne1 ? a->ne1 : 1), ne[2] = {a->ne0, a->ne1};
        if (a->type == PL_TYPE_F16) {
            uint16_t *h = malloc((size_t)n * sizeof *h);
            for (int64_t x = 0; h && x < n; x++) h[x] = a->value == 1.0f ? 0x3c00 : 0;
            data[j] = h;
        } else {
            float *f = malloc((size_t)n * sizeof *f);
            for (int64_t x = 0; f && x < n; x++) f[x] = a->value;
            data[j] = f;
        }
        if (!data[j]) exit(1);
        if (pl_gguf_writer_add_tensor(w, a->name, a->type, a->ne1 ? 2 : 1, ne, data[j], &err))
            die(a->name, &err);
    }
    void *out = NULL;
    size_t n = 0;
    if (pl_gguf_writer_write_memory(w, &out, &n, &err)) die(e->name, &err);
    put("gguf", e->name, out, n);
    pl_buffer_free(out);
    free(data[0]);
    free(data[1]);
    pl_gguf_writer_free(w);
    pl_gguf_free(g);
    pl_gguf_free(g2);
}

#define U32(k, x)                                                                                  \
    {                                                                                              \
        k, PL_GGUF_UINT32, x, NULL, 0, 0,                                                          \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }
#define F32(k, x)                                                                                  \
    {                                                                                              \
        k, PL_GGUF_FLOAT32, x, NULL, 0, 0,                                                         \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }
#define STR(k, s)                                                                                  \
    {                                                                                              \
        k, PL_GGUF_STRING, 0, s, 0, 0,                                                             \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }
#define GONE(k)                                                                                    \
    {                                                                                              \
        k, PL_GGUF_TYPE_COUNT, 0, NULL, 0, 0,                                                      \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }
#define AS(k, t, x)                                                                                \
    {                                                                                              \
        k, PL_GGUF_##t, x, NULL, 0, 0,                                                             \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }
#define KEYS(n, b, ...)                                                                            \
    {                                                                                              \
        .name = n, .base = b, .kv = { __VA_ARGS__ }                                                \
    }
#define ARR(k, t, ...)                                                                             \
    {                                                                                              \
        k, PL_GGUF_ARRAY, 0, NULL, PL_GGUF_##t, sizeof((int64_t[]){__VA_ARGS__}) / 8,              \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }

static void gguf_model_seeds(void)
{
    mk_config c[N_BASES];
    c[B_LLAMA] = config("edit-llama", "llama", DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 32, 32, 1);
    c[B_LLAMA_L2] = c[B_LLAMA];
    c[B_LLAMA_L2].n_layer = 2;
    c[B_LLAMA_L2_WIDE] = c[B_LLAMA_L2];
    c[B_LLAMA_L2_WIDE].n_head = 4;
    c[B_LLAMA_L2_WIDE].n_ff = 64;
    c[B_MIXTRAL] = config("s-llama-moe", "llama", DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 32, 32, 1);
    c[B_MIXTRAL].n_expert = 4;
    c[B_MIXTRAL].n_expert_used = 2;
    c[B_QWEN2MOE] = config("s-qwen2moe", "qwen2moe", DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 32, 32, 0);
    c[B_QWEN2MOE].n_expert = 4;
    c[B_QWEN2MOE].n_expert_used = 2;
    c[B_QWEN2MOE].n_ff_exp = 32;
    c[B_QWEN2MOE].n_ff_shexp = 64;
    c[B_QWEN3MOE] = config("s-qwen3moe", "qwen3moe", DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 32, 32, 1);
    c[B_QWEN3MOE].n_expert = 4;
    c[B_QWEN3MOE].n_expert_used = 4; /* every expert: used == count */
    c[B_QWEN3MOE].n_ff_exp = 48;
    c[B_GEMMA2] =
        config("s-gemma2-swa-softcap", "gemma2", DEMO_VOCAB_SPM, PL_FTYPE_Q8_0, 32, 32, 1);
    c[B_GEMMA2].local_window = 2;
    c[B_GEMMA2].attn_softcap = 50.0f;
    c[B_GEMMA2].final_softcap = 30.0f;
    c[B_GEMMA3] = config("s-gemma3-swa", "gemma3", DEMO_VOCAB_BPE_LLAMA3, PL_FTYPE_Q8_0, 32, 32, 1);
    c[B_GEMMA3].local_window = 3;
    c[B_PHI3] = config("edit-phi3", "phi3", DEMO_VOCAB_SPM, PL_FTYPE_Q8_0, 32, 32, 0);
    c[B_PHI3].local_window = 2047;
    /* Phi-3 mini (32 layers, 4k context), medium-128k (40 layers) and mini-128k (below) without
     * the window key; heads of 2 and an FFN of 1 keep 32 layers small */
    c[B_PHI3_32] =
        config("s-phi3-32-layers-4k-no-window", "phi3", DEMO_VOCAB_SPM, PL_FTYPE_Q8_0, 32, 1, 1);
    c[B_PHI3_32].n_layer = 32;
    c[B_PHI3_32].n_ctx = 4096;
    c[B_PHI3_32].n_head = 1;
    c[B_PHI3_32].head_dim = 2;
    c[B_PHI3_40] = c[B_PHI3_32];
    snprintf(c[B_PHI3_40].name, sizeof c[B_PHI3_40].name, "seed s-phi3-40-layers-128k-no-window");
    c[B_PHI3_40].n_layer = 40;
    c[B_PHI3_40].n_ctx = 131072;
    /* Phi-3 mini-128k: 32 layers of 32 KV heads (heads of 2 keep it near 200 KB) */
    c[B_PHI3_32_128K] = c[B_PHI3_32];
    snprintf(c[B_PHI3_32_128K].name, sizeof c[B_PHI3_32_128K].name,
             "seed s-phi3-32-layers-128k-no-window");
    c[B_PHI3_32_128K].n_ctx = 131072;
    c[B_PHI3_32_128K].n_head = 32;
    c[B_PHI3_32_128K].n_head_kv = 32;
    c[B_GRANITE] =
        config("s-granite-multipliers", "granite", DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 32, 32, 1);
    c[B_GRANITE].mult[0] = 12.0f;
    c[B_GRANITE].mult[1] = 0.22f;
    c[B_GRANITE].mult[2] = 0.015625f;
    c[B_GRANITE].mult[3] = 8.0f;
    /* four layers: the last without RoPE */
    c[B_SMOLLM3] =
        config("s-smollm3-nope", "smollm3", DEMO_VOCAB_BPE_LLAMA3, PL_FTYPE_Q8_0, 32, 32, 1);
    c[B_SMOLLM3].n_layer = 4;
    c[B_OLMO2] = config("s-olmo2-post-norms", "olmo2", DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 32, 32, 0);
    /* four layers: three local (window 2), the last global without RoPE */
    c[B_EXAONE4] =
        config("s-exaone4-swa-nope", "exaone4", DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 32, 32, 0);
    c[B_EXAONE4].n_layer = 4;
    c[B_EXAONE4].local_window = 2;
    /* RoPE over half the head */
    c[B_GLM4] = config("s-glm4-partial-rotary", "glm4", DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 32, 32, 0);
    c[B_GLM4].n_rot = 8;
    /* issue 49: cohere2 (LayerNorm, parallel block, RoPE on the 3 local layers of 4 only) */
    c[B_COHERE2] =
        config("s-cohere2-swa-logit-scale", "cohere2", DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 32, 32, 1);
    c[B_COHERE2].n_layer = 4;
    c[B_COHERE2].local_window = 3;
    c[B_COHERE2].logit_scale = 0.25f;
    /* gpt-oss (sinks, o/router/expert biases, clamped SwiGLU, even layers local) */
    c[B_GPT_OSS] = config("s-gpt-oss", "gpt-oss", DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 32, 32, 0);
    c[B_GPT_OSS].n_layer = 2;
    c[B_GPT_OSS].local_window = 4;
    c[B_GPT_OSS].n_expert = 4;
    c[B_GPT_OSS].n_expert_used = 2;
    c[B_GPT_OSS].n_ff_exp = 32;
    void *bases[N_BASES];
    size_t sizes[N_BASES];
    for (int b = 0; b < N_BASES; b++) {
        bases[b] = model_bytes(&c[b], &sizes[b]);
        /* saved under general.name less "seed "; the plain phi3 model reaches nothing its edits
         * and the 32/40-layer ones do not */
        if (b >= B_MIXTRAL && b != B_PHI3) put("gguf", c[b].name + 5, bases[b], sizes[b]);
    }
    static const edit_seed edits[] = {
        /* every integer type where an integer is read, float64 where a float is */
        KEYS("s-int-key-types", B_LLAMA, AS(".block_count", UINT8, 1),
             AS(".context_length", INT8, 64), AS(".embedding_length", UINT16, 32),
             AS(".feed_forward_length", INT16, 32), AS(".attention.head_count", INT32, 2),
             AS(".attention.head_count_kv", INT64, 1), AS(".attention.key_length", UINT64, 16)),
        KEYS("s-f64-keys-causal", B_LLAMA, AS(".attention.layer_norm_rms_epsilon", FLOAT64, 1e-5),
             AS(".rope.freq_base", FLOAT64, 5e5), AS(".attention.causal", BOOL, 1),
             AS(".rope.scaling.finetuned", BOOL, 0)),
        /* RoPE: YaRN with llama3's frequency divisors, linear, none below 1 */
        {.name = "s-rope-yarn-freqs",
         .base = B_LLAMA,
         .kv = {STR(".rope.scaling.type", "yarn"), F32(".rope.scaling.factor", 4),
                U32(".rope.scaling.original_context_length", 16),
                F32(".rope.scaling.yarn_ext_factor", 0.5), F32(".rope.scaling.yarn_beta_fast", 16),
                F32(".rope.scaling.yarn_beta_slow", 2), F32(".rope.scaling.attn_factor", 1.25)},
         .add = {{"rope_freqs.weight", PL_TYPE_F32, 8, 0, 1.5f}}},
        /* issue 49: YaRN's correction range unrounded (transformers' truncate = false) */
        KEYS("s-rope-yarn-untruncated", B_LLAMA, STR(".rope.scaling.type", "yarn"),
             F32(".rope.scaling.factor", 4), U32(".rope.scaling.original_context_length", 16),
             AS(".rope.scaling.yarn_truncate", BOOL, 0)),
        KEYS("s-rope-linear", B_LLAMA, STR(".rope.scaling.type", "linear"),
             F32(".rope.scale_linear", 2)),
        KEYS("s-rope-none", B_LLAMA, STR(".rope.scaling.type", "none"),
             F32(".rope.scaling.factor", 0.5)),
        /* Phi-3: longrope's two divisor sets over a partial rotation */
        {.name = "s-phi3-longrope-partial",
         .base = B_PHI3,
         .kv = {U32(".rope.dimension_count", 8)},
         .add = {{"rope_factors_long.weight", PL_TYPE_F32, 4, 0, 2.0f},
                 {"rope_factors_short.weight", PL_TYPE_F32, 4, 0, 1.0f}}},
        /* per-layer arrays: layer 1 twice as wide (its tensors from the wide model) */
        {.name = "s-per-layer-arrays",
         .base = B_LLAMA_L2,
         .kv = {ARR(".attention.head_count", INT32, 2, 4),
                ARR(".feed_forward_length", UINT64, 32, 64),
                ARR(".attention.head_count_kv", UINT32, 1, 1)},
         .base2 = B_LLAMA_L2_WIDE,
         .from2 = "blk.1."},
        KEYS("e-per-layer-count", B_LLAMA_L2, ARR(".attention.head_count", INT64, 2)),
        KEYS("e-per-layer-f32", B_LLAMA_L2, ARR(".attention.head_count", FLOAT32, 2, 2)),
        KEYS("e-per-layer-range", B_LLAMA_L2, ARR(".feed_forward_length", INT32, 32, 0)),
        KEYS("e-per-layer-scalar-range", B_LLAMA, U32(".attention.head_count_kv", 2000)),
        KEYS("e-per-layer-string", B_LLAMA, STR(".attention.head_count", "2")),
        KEYS("e-per-layer-float", B_LLAMA, F32(".feed_forward_length", 32)),
        /* one key's type or range */
        KEYS("e-u64-too-large", B_LLAMA, AS(".block_count", UINT64, 1.8e19)),
        KEYS("e-int-range", B_LLAMA, U32(".block_count", 2000)),
        KEYS("e-float-as-int", B_LLAMA, U32(".attention.layer_norm_rms_epsilon", 1)),
        KEYS("e-float-range", B_LLAMA, F32(".attention.layer_norm_rms_epsilon", 2)),
        KEYS("e-string-as-int", B_LLAMA, U32(".rope.scaling.type", 1)),
        KEYS("e-bool-as-u8", B_LLAMA, AS(".attention.causal", UINT8, 1)),
        KEYS("e-not-causal", B_LLAMA, AS(".attention.causal", BOOL, 0)),
        /* check_values */
        KEYS("e-rope-dynamic", B_LLAMA, STR(".rope.scaling.type", "dynamic")),
        KEYS("e-yarn-attn-factor", B_LLAMA, STR(".rope.scaling.type", "yarn"),
             F32(".rope.scaling.yarn_attn_factor", 2)),
        KEYS("e-ext-factor-not-yarn", B_LLAMA, F32(".rope.scaling.yarn_ext_factor", 0.5)),
        KEYS("e-experts-dense-arch", B_PHI3, U32(".expert_count", 4), U32(".expert_used_count", 2)),
        KEYS("e-moe-no-experts", B_QWEN3MOE, U32(".expert_count", 0)),
        KEYS("e-used-without-experts", B_LLAMA, U32(".expert_used_count", 2)),
        KEYS("e-used-over-count", B_MIXTRAL, U32(".expert_used_count", 6)),
        /* bind_arch */
        KEYS("e-heads-not-multiple", B_LLAMA, U32(".attention.head_count_kv", 3)),
        KEYS("e-no-key-length-odd-heads", B_LLAMA, GONE(".attention.key_length"),
             U32(".attention.head_count", 3)),
        KEYS("e-head-dim-1", B_LLAMA, GONE(".attention.key_length"),
             U32(".attention.head_count", 32)),
        KEYS("e-value-length", B_LLAMA, U32(".attention.value_length", 8)),
        KEYS("e-rope-dims-large", B_LLAMA, U32(".rope.dimension_count", 32)),
        KEYS("e-rope-dims-odd", B_LLAMA, U32(".rope.dimension_count", 15)),
        KEYS("e-rope-partial-llama", B_LLAMA, U32(".rope.dimension_count", 8)),
        KEYS("e-vocab-size", B_LLAMA, U32(".vocab_size", 1000)),
        KEYS("e-rope-factor-below-1", B_LLAMA, F32(".rope.scaling.factor", 0.5)),
        KEYS("e-phi3-no-window", B_PHI3, GONE(".attention.sliding_window")),
        KEYS("e-no-head-count-kv", B_LLAMA, GONE(".attention.head_count_kv")),
        KEYS("e-unknown-key-f32", B_LLAMA, F32(".logit_scale", 1.5)),
        KEYS("e-unknown-key-f64", B_LLAMA, AS(".residual_scale", FLOAT64, 2.5)),
        KEYS("e-split-count", B_LLAMA, U32("split.count", 2)),
        /* tensors: divisors, binding */
        {.name = "e-rope-freqs-zero",
         .base = B_LLAMA,
         .add = {{"rope_freqs.weight", PL_TYPE_F32, 8, 0, 0.0f}}},
        {.name = "e-longrope-one-set",
         .base = B_PHI3,
         .add = {{"rope_factors_long.weight", PL_TYPE_F32, 8, 0, 1.0f}}},
        {.name = "e-no-token-embd", .base = B_LLAMA, .drop = "token_embd.weight"},
        {.name = "e-missing-matrix", .base = B_LLAMA, .drop = "blk.0.attn_q.weight"},
        {.name = "e-missing-vector", .base = B_LLAMA, .drop = "output_norm.weight"},
        {.name = "e-vector-shape",
         .base = B_LLAMA,
         .drop = "blk.0.attn_norm.weight",
         .add = {{"blk.0.attn_norm.weight", PL_TYPE_F32, 16, 0, 1.0f}}},
        {.name = "e-vector-f16",
         .base = B_LLAMA,
         .drop = "blk.0.attn_norm.weight",
         .add = {{"blk.0.attn_norm.weight", PL_TYPE_F16, 32, 0, 1.0f}}},
        {.name = "e-unused-tensor",
         .base = B_LLAMA,
         .add = {{"blk.0.extra.weight", PL_TYPE_F32, 32, 0, 1.0f}}},
        {.name = "e-token-embd-1d",
         .base = B_LLAMA,
         .kv = {GONE(".vocab_size")},
         .drop = "token_embd.weight",
         .add = {{"token_embd.weight", PL_TYPE_F32, 32, 0, 0.5f}}},
        {.name = "e-embd-fewer-rows",
         .base = B_LLAMA,
         .kv = {GONE(".vocab_size")},
         .drop = "token_embd.weight",
         .add = {{"token_embd.weight", PL_TYPE_F32, 32, 16, 0.5f}}},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) edit_model(&edits[i], bases, sizes);
    for (int b = 0; b < N_BASES; b++) free(bases[b]);
}

/* ---- gguf: defects no writer makes, patched into a small valid file ---- */

static unsigned char *find_bytes(unsigned char *buf, size_t n, const char *s)
{
    const size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(buf + i, s, k) == 0) return buf + i;
    fprintf(stderr, "mkseeds: '%s' not in the file\n", s);
    exit(1);
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Two F32 tensors (tensor.a [16] at 0, tensor.b [8] at 64) and, for the alignment defects, a
 * placeholder key renamed to general.alignment after writing (the writer refuses bad values). */
static void defect_seeds(void)
{
    enum { ALIGN, DUP_NAME, OVERLAP, TYPE_IQ2, BYTES_OVERFLOW, CUT_IN_PADDING };
    static const struct {
        const char *name;
        int defect;
        pl_gguf_type align_type; /* ALIGN: the key's type and value */
        uint64_t align;
    } d[] = {
        {"g-align-uint64", ALIGN, PL_GGUF_UINT64, 64},
        {"g-align-too-large", ALIGN, PL_GGUF_UINT32, 1u << 17},
        {"g-duplicate-tensor-name", DUP_NAME, 0, 0},
        {"g-overlapping-tensors", OVERLAP, 0, 0},
        {"g-unimplemented-tensor-type", TYPE_IQ2, 0, 0},
        {"g-tensor-bytes-overflow", BYTES_OVERFLOW, 0, 0},
        {"g-data-section-past-end", CUT_IN_PADDING, 0, 0},
    };
    float data[24];
    for (int i = 0; i < 24; i++) data[i] = (float)i / 8.0f;
    for (size_t k = 0; k < sizeof d / sizeof d[0]; k++) {
        pl_gguf_writer *w = NULL;
        pl_error err = {0};
        const int64_t ne_a = 16, ne_b = 8;
        pl_status s = pl_gguf_writer_new(&w, 3, &err);
        if (!s) s = pl_gguf_writer_set_string(w, "general.architecture", "llama", 5, &err);
        if (!s && d[k].defect == ALIGN)
            s = pl_gguf_writer_set(w, "general.alignmenT", d[k].align_type, &d[k].align, &err);
        if (!s) s = pl_gguf_writer_add_tensor(w, "tensor.a", PL_TYPE_F32, 1, &ne_a, data, &err);
        if (!s)
            s = pl_gguf_writer_add_tensor(w, "tensor.b", PL_TYPE_F32, 1, &ne_b, data + 16, &err);
        void *out = NULL;
        size_t n = 0;
        if (!s) s = pl_gguf_writer_write_memory(w, &out, &n, &err);
        pl_gguf_writer_free(w);
        if (s) die(d[k].name, &err);
        unsigned char *buf = out;
        /* a tensor info after its name: n_dims (4 bytes), ne[0] (8), type (4), offset (8) */
        unsigned char *a = find_bytes(buf, n, "tensor.a") + 8, *b = find_bytes(buf, n, "tensor.b");
        switch (d[k].defect) {
        case ALIGN:
            find_bytes(buf, n, "general.alignmenT")[16] = 't';
            break;
        case DUP_NAME:
            b[7] = 'a';
            break;
        case OVERLAP:
            put_u32(b + 8 + 4 + 8 + 4, 32); /* tensor.b at 32: inside tensor.a's 64 bytes */
            break;
        case TYPE_IQ2:
            put_u32(a + 4 + 8, 16); /* IQ2_XXS: named by ggml, not implemented */
            break;
        case BYTES_OVERFLOW:
            put_u32(a + 4, 0);
            put_u32(a + 8, 1u << 30); /* ne[0] = 2^62 elements: 2^64 bytes of F32 */
            break;
        case CUT_IN_PADDING:
            /* the file ends one byte after the last tensor info, inside the padding before the
             * data section */
            n = (size_t)(b + 8 + 4 + 8 + 4 + 8 - buf) + 1;
            break;
        }
        put("gguf", d[k].name, buf, n);
        pl_buffer_free(out);
    }
}

/* ---- vocabularies: tokenizer-section checks of a full load, and Llama 3's reserved specials */

typedef struct vocab_edit {
    const char *name;
    int n_reserved;         /* "<|reserved_special_token_N|>" control tokens appended, N from 10 */
    int long_token;         /* the last token replaced by one of 5000 bytes */
    int long_merge;         /* the first merge's left side 5000 bytes */
    int short_types;        /* token_type cut to 10 entries */
    const char *byte_token; /* the last token this text, of type byte */
    int kind;               /* demo_vocab_kind + 1; 0: DEMO_VOCAB_BPE */
    kv_edit kv[2];
} vocab_edit;

static void *vocab_variant(enum demo_vocab_kind kind, const vocab_edit *e, size_t *out_n)
{
    size_t n = 0;
    void *base = vocab_file(kind, demo_vocab_min(kind) + 16, &n);
    pl_gguf *g = parse_or_die(base, n);
    pl_gguf_writer *w = NULL;
    pl_error err = {0};
    if (pl_gguf_writer_new(&w, 3, &err)) die(e->name, &err);
    static char big[5003];
    memset(big, 'a', 5000);
    memcpy(big + 5000, " b", 3);
    char reserved[16][40];
    const char *rp[16];
    for (int r = 0; r < e->n_reserved && r < 16; r++) {
        snprintf(reserved[r], sizeof reserved[r], "<|reserved_special_token_%d|>", 10 + r);
        rp[r] = reserved[r];
    }
    for (uint64_t i = 0; i < pl_gguf_n_kv(g); i++) {
        pl_str k = pl_gguf_kv_key(g, i);
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
        int gone = 0;
        for (int j = 0; j < 2 && e->kv[j].key; j++)
            gone |= e->kv[j].type == PL_GGUF_TYPE_COUNT && strcmp(e->kv[j].key, key) == 0;
        pl_gguf_array a = {.type = PL_GGUF_TYPE_COUNT};
        pl_gguf_kv_array(g, i, &a, NULL);
        pl_status s = PL_OK;
        if (gone) continue;
        if (a.type == PL_GGUF_STRING &&
            (!strcmp(key, "tokenizer.ggml.tokens") || !strcmp(key, "tokenizer.ggml.merges"))) {
            const int toks = key[15] == 't';
            const uint64_t cnt = a.count + (toks ? (uint64_t)e->n_reserved : 0);
            const char **p = malloc(cnt * sizeof *p);
            size_t *l = malloc(cnt * sizeof *l);
            if (!p || !l) exit(1);
            for (uint64_t j = 0; j < cnt; j++) {
                pl_str v = {NULL, 0};
                if (j < a.count) pl_gguf_array_string(&a, j, &v, NULL);
                p[j] = j < a.count ? v.ptr : rp[j - a.count];
                l[j] = j < a.count ? (size_t)v.len : strlen(p[j]);
            }
            if (toks && e->long_token) p[a.count - 1] = big, l[a.count - 1] = 5000;
            if (toks && e->byte_token)
                p[a.count - 1] = e->byte_token, l[a.count - 1] = strlen(e->byte_token);
            if (!toks && e->long_merge) p[0] = big, l[0] = 5002;
            s = pl_gguf_writer_set_array_str(w, key, p, l, cnt, &err);
            free(p);
            free(l);
        } else if ((a.type == PL_GGUF_INT32 || a.type == PL_GGUF_FLOAT32) &&
                   (!strcmp(key, "tokenizer.ggml.token_type") ||
                    !strcmp(key, "tokenizer.ggml.scores"))) {
            const uint64_t cnt = e->short_types && key[15] == 't' ? 10 : a.count + e->n_reserved;
            int32_t *v = calloc(cnt, 4);
            if (!v) exit(1);
            memcpy(v, a.data, (cnt < a.count ? cnt : a.count) * 4);
            for (uint64_t j = a.count; j < cnt; j++) v[j] = a.type == PL_GGUF_INT32 ? 3 : 0;
            if (e->byte_token && a.type == PL_GGUF_INT32) v[a.count - 1] = 6; /* byte */
            s = pl_gguf_writer_set_array(w, key, a.type, v, cnt, &err);
            free(v);
        } else {
            copy_kv(w, g, i);
        }
        if (s) die(key, &err);
    }
    for (int j = 0; j < 2 && e->kv[j].key; j++)
        if (e->kv[j].type != PL_GGUF_TYPE_COUNT) set_value(w, e->kv[j].key, &e->kv[j]);
    void *out = NULL;
    if (pl_gguf_writer_write_memory(w, &out, out_n, &err)) die(e->name, &err);
    pl_gguf_writer_free(w);
    pl_gguf_free(g);
    pl_buffer_free(base);
    return out;
}

static void vocab_seeds(void)
{
    static const vocab_edit v[] = {
        {.name = "v-pre-refused", .kv = {STR("tokenizer.ggml.pre", "whitespace")}},
        {.name = "v-normalizer-case", .kv = {STR("tokenizer.ggml.normalizer", "NFKC")}},
        {.name = "v-normalizer-unknown", .kv = {STR("tokenizer.ggml.normalizer", "lowercase")}},
        {.name = "v-token-5000-bytes", .long_token = 1},
        {.name = "v-merge-side-5000-bytes", .long_merge = 1},
        {.name = "v-token-types-short", .short_types = 1},
        {.name = "v-add-bos-without-bos",
         .kv = {AS("tokenizer.ggml.add_bos_token", BOOL, 1), GONE("tokenizer.ggml.bos_token_id")}},
        {.name = "v-add-eos-without-eos",
         .kv = {AS("tokenizer.ggml.add_eos_token", BOOL, 1), GONE("tokenizer.ggml.eos_token_id")}},
        {.name = "v-token-type-not-array", .kv = {U32("tokenizer.ggml.token_type", 1)}},
        {.name = "v-add-bos-as-u32", .kv = {U32("tokenizer.ggml.add_bos_token", 1)}},
        {.name = "v-bos-id-int32-none", .kv = {AS("tokenizer.ggml.bos_token_id", INT32, -1)}},
        {.name = "v-eos-id-float", .kv = {F32("tokenizer.ggml.eos_token_id", 2)}},
        {.name = "v-spm-duplicate-byte-token", .kind = 1 + DEMO_VOCAB_SPM, .byte_token = "<0x41>"},
        {.name = "v-spm-byte-token-not-hex", .kind = 1 + DEMO_VOCAB_SPM, .byte_token = "<0xG1>"},
        {.name = "v-pre-unknown-with-tab", .kv = {STR("tokenizer.ggml.pre", "qwen2\tx")}},
        /* llama-bpe adds a BOS by default: without an id or the key, none is added */
        {.name = "v-llama3-no-bos",
         .kind = 1 + DEMO_VOCAB_BPE_LLAMA3,
         .kv = {GONE("tokenizer.ggml.bos_token_id"), GONE("tokenizer.ggml.add_bos_token")}},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t n = 0;
        void *buf = vocab_variant(
            v[i].kind ? (enum demo_vocab_kind)(v[i].kind - 1) : DEMO_VOCAB_BPE, &v[i], &n);
        put("gguf", v[i].name, buf, n);
        pl_buffer_free(buf);
    }
    /* tokenizer mode 3: twelve specials of one byte length (more than find_specials scans one
     * by one), several in the text, parsed and printed as specials */
    const vocab_edit r = {.name = "file-reserved-specials", .n_reserved = 12};
    size_t n = 0;
    void *voc = vocab_variant(DEMO_VOCAB_BPE_LLAMA3, &r, &n);
    const char *t = "<|reserved_special_token_12|>hi <|reserved_special_token_20|>"
                    "<|reserved_special_token_12|><|reserved_special_token_1"
                    "<|begin_of_text|> x<|reserved_special_token_21|>";
    const size_t tl = strlen(t);
    unsigned char *buf = malloc(4 + tl + n);
    if (!buf) exit(1);
    buf[0] = 3;
    buf[1] = PL_TOKENIZE_PARSE_SPECIAL | PL_DETOK_SPECIAL << 2;
    buf[2] = (unsigned char)(tl & 0xff);
    buf[3] = (unsigned char)(tl >> 8);
    memcpy(buf + 4, t, tl);
    memcpy(buf + 4 + tl, voc, n);
    put("tokenizer", r.name, buf, 4 + tl + n);
    free(buf);
    pl_buffer_free(voc);
}

static void model(const char *name, const char *arch, enum demo_vocab_kind vocab, pl_ftype ftype,
                  int64_t n_embd, int64_t n_ff, int tied)
{
    mk_config c = config(name, arch, vocab, ftype, n_embd, n_ff, tied);
    size_t n = 0;
    void *buf = model_bytes(&c, &n);
    put("gguf", name, buf, n);
    free(buf);
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
    if (c->n_logits) memcpy(buf + n, c->logits, c->n_logits); /* logits NULL: the harness fills */
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

/* tokenizer.model seeds (fuzz_spm_model): spm_pb.h's small BPE model as the converter takes it,
 * with a trainer_spec as sentencepiece writes it (strings, floats, every id), and variants the
 * check refuses (unigram, nmt_nfkc charsmap, extra whitespace removed, a denormalizer, unused
 * and user-defined pieces, lower-case byte pieces), a Gemma-like model without the dummy prefix,
 * unknown fields of every wire type, and one cut short. */
static void spm_put(const char *name, pb_buf *b)
{
    put("spm_model", name, b->p, b->n);
    free(b->p);
    *b = (pb_buf){0};
}

static void spm_model_seeds(void)
{
    pb_buf b = {0}, t = {0}, n = {0};
    pb_small_model(&b);
    spm_put("small-bpe", &b);

    pb_small_model(&b);
    pb_str(&t, 1, "text.txt");
    pb_str(&t, 2, "/tmp/spm/m");
    pb_int(&t, 3, 2);
    pb_int(&t, 4, 265);
    pb_float(&t, 10, 0.98f);
    pb_int(&t, 16, 1);
    pb_int(&t, 25, 1);
    pb_int(&t, 26, 1);
    pb_str(&t, 30, "<ctrl>");
    pb_int(&t, 33, 0);
    pb_int(&t, 35, 1);
    pb_int(&t, 43, -1);
    pb_str(&t, 45, "<unk>");
    pb_msg(&b, 2, &t);
    pb_str(&n, 6, "rule\ttsv");
    pb_msg(&b, 3, &n);
    pb_str(&n, 1, "x");
    pb_str(&n, 2, "y");
    pb_msg(&t, 1, &n);
    pb_msg(&b, 4, &t);
    spm_put("trainer-as-written", &b);

    pb_small_model(&b);
    pb_int(&t, 3, 1);
    pb_msg(&b, 2, &t);
    spm_put("unigram", &b);

    pb_small_model(&b);
    pb_str(&n, 1, "nmt_nfkc");
    pb_bytes(&n, 2,
             "\x08\x00\x00\x00\x01\x02\x03\x04"
             "abcd",
             12);
    pb_int(&n, 4, 1);
    pb_msg(&b, 3, &n);
    spm_put("nfkc-charsmap", &b);

    pb_small_model(&b);
    pb_str(&n, 1, "identity");
    pb_int(&n, 3, 0);
    pb_msg(&b, 3, &n);
    pb_piece(&b, "<start_of_turn>", 0, 4);
    pb_piece(&b, "\n\n", 0, 4);
    pb_piece(&b, "    ", 0, 4);
    pb_piece(&b, "<pad>", 0, 3);
    spm_put("gemma-like", &b);

    pb_small_model(&b);
    pb_piece(&b, "<mask>", 0, 4);
    spm_put("user-defined-with-prefix", &b);

    pb_small_model(&b);
    pb_piece(&b, "zz", -9, 5);
    pb_piece(&b, "<0xab>", 0, 6);
    spm_put("unused-and-lower-byte", &b);

    pb_small_model(&b);
    pb_str(&n, 1, "nfkc_cf");
    pb_bytes(&n, 2,
             "\x04\x00\x00\x00"
             "abcd",
             8);
    pb_msg(&b, 5, &n);
    spm_put("denormalizer", &b);

    pb_small_model(&b);
    pb_int(&b, 99, 7);
    pb_tag(&b, 98, 1);
    pb_raw(&b, "12345678", 8);
    pb_str(&b, 97, "skipped");
    pb_float(&b, 96, 1.5f);
    spm_put("unknown-fields", &b);

    pb_small_model(&b);
    b.n -= 7;
    spm_put("cut-short", &b);

    /* user-defined pieces without the dummy prefix: runs of one character (taken), two that
     * overlap, one holding U+2581 (both refused); a BOS id past the pieces; a piece too long */
    pb_small_model(&b);
    pb_int(&n, 3, 0);
    pb_msg(&b, 3, &n);
    pb_piece(&b, "\n\n", 0, 4);
    pb_piece(&b, "\n\n\n", 0, 4);
    pb_piece(&b, "\xc2\xa0\xc2\xa0", 0, 4);
    spm_put("user-defined-runs", &b);

    pb_small_model(&b);
    pb_int(&n, 3, 0);
    pb_msg(&b, 3, &n);
    pb_piece(&b, "<ab", 0, 4);
    pb_piece(&b, "b>", 0, 4);
    spm_put("user-defined-overlap", &b);

    pb_small_model(&b);
    pb_int(&n, 3, 0);
    pb_msg(&b, 3, &n);
    pb_piece(&b, "\xe2\x96\x81\xe2\x96\x81", 0, 4);
    spm_put("user-defined-meta", &b);

    pb_small_model(&b);
    pb_int(&t, 41, 400);
    pb_msg(&b, 2, &t);
    spm_put("bos-past-pieces", &b);

    pb_small_model(&b);
    {
        char big[4098];
        memset(big, 'a', 4097);
        big[4097] = 0;
        pb_piece(&b, big, 0, 1);
    }
    spm_put("piece-too-long", &b);
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
        unsigned char buf[600] = {0}; /* bytes n-8, n-7 are no parameter: zero, not stack */
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
    gguf_model_seeds();
    defect_seeds();
    vocab_seeds();
    spm_model_seeds();
    return 0;
}
