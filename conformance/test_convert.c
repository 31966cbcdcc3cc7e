/* test_convert.c — pl_convert_hf against models plumb already makes: a synthetic GGUF
 * (synth/mkmodel.c) is written out as a Hugging Face directory (config.json, safetensors with
 * llama's inverse q/k permutation, tokenizer.json, tokenizer_config.json), converted back, and
 * must return every tensor and metadata key bit for bit, and the same logits. Plus sharded and
 * BF16 input, quantized output equal to pl_model_quantize, bad directories, and the MoE classes'
 * per-expert tensors stacked, with their hostile configs and tensors refused by name. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mkmodel.h"
#include "plumb.h"
#include "testutil.h"

static char root[64];

/* ---- a synthetic model -------------------------------------------------------------------- */

static void make_model(const char *path, const char *arch, enum demo_vocab_kind vk, pl_ftype ftype,
                       int tied)
{
    mk_config c = {0};
    snprintf(c.name, sizeof c.name, "convert test");
    snprintf(c.arch, sizeof c.arch, "%s", arch);
    c.n_embd = 64;
    c.n_layer = 2;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.head_dim = 16;
    c.n_ff = 96;
    c.vocab = vk;
    c.n_vocab = demo_vocab_min(vk) + 64;
    c.n_ctx = 128;
    c.rope_base = 10000.0f;
    c.rms_eps = 1e-5f;
    c.tied = tied;
    c.ftype = ftype;
    c.pure = 0;
    c.seed = 11;
    c.n_threads = 1;
    pl_error err = {0};
    pl_status s = mk_write(&c, path, NULL, NULL, NULL, &err);
    TU_CHECK(s == PL_OK, "mk_write %s: %s", path, err.msg);
}

/* ---- GGUF -> Hugging Face directory --------------------------------------------------------- */

typedef struct export_opts {
    int shards;       /* 0: model.safetensors; 2: two shards and an index */
    int merge_arrays; /* merges as ["a", "b"] instead of "a b" */
    int no_permute;   /* write llama's q/k as GGUF holds them (a wrong checkpoint) */
    int tied;
} export_opts;

static uint32_t get_u32(const pl_gguf *g, const char *key)
{
    uint32_t v = 0;
    pl_gguf_get_u32(g, key, &v, NULL);
    return v;
}

static char *str_dup(pl_str s)
{
    char *p = malloc(s.len + 1);
    memcpy(p, s.ptr, s.len);
    p[s.len] = 0;
    return p;
}

static void write_json(const char *dir, const char *name, json_t *j)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    TU_CHECK(json_dump_file(j, path, JSON_INDENT(1) | JSON_REAL_PRECISION(9)) == 0, "write %s",
             path);
    json_decref(j);
}

/* The HF name of a GGUF tensor. */
static void hf_name(char *out, size_t cap, const char *g)
{
    static const char *const map[][2] = {
        {"attn_norm.weight", "input_layernorm.weight"},
        {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_q.bias", "self_attn.q_proj.bias"},
        {"attn_k.weight", "self_attn.k_proj.weight"},
        {"attn_k.bias", "self_attn.k_proj.bias"},
        {"attn_v.weight", "self_attn.v_proj.weight"},
        {"attn_v.bias", "self_attn.v_proj.bias"},
        {"attn_q_norm.weight", "self_attn.q_norm.weight"},
        {"attn_k_norm.weight", "self_attn.k_norm.weight"},
        {"attn_output.weight", "self_attn.o_proj.weight"},
        {"ffn_norm.weight", "post_attention_layernorm.weight"},
        {"ffn_gate.weight", "mlp.gate_proj.weight"},
        {"ffn_up.weight", "mlp.up_proj.weight"},
        {"ffn_down.weight", "mlp.down_proj.weight"},
    };
    if (strcmp(g, "token_embd.weight") == 0)
        snprintf(out, cap, "model.embed_tokens.weight");
    else if (strcmp(g, "output_norm.weight") == 0)
        snprintf(out, cap, "model.norm.weight");
    else if (strcmp(g, "output.weight") == 0)
        snprintf(out, cap, "lm_head.weight");
    else {
        int l = -1, n = 0;
        sscanf(g, "blk.%d.%n", &l, &n);
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
            if (n && strcmp(g + n, map[i][0]) == 0) {
                snprintf(out, cap, "model.layers.%d.%s", l, map[i][1]);
                return;
            }
        snprintf(out, cap, "unknown.%s", g);
    }
}

/* The inverse of convert's permutation: HF row h*D + j*D/2 + i <- GGUF row h*D + 2i + j. */
static void unpermute(uint8_t *dst, const uint8_t *src, int64_t rows, size_t row_bytes,
                      int64_t heads)
{
    int64_t D = rows / heads, half = D / 2;
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < half; i++)
            for (int64_t j = 0; j < 2; j++)
                memcpy(dst + (size_t)(h * D + j * half + i) * row_bytes,
                       src + (size_t)(h * D + 2 * i + j) * row_bytes, row_bytes);
}

typedef struct st_out {
    json_t *header;
    uint8_t *data;
    size_t len, cap;
} st_out;

static void st_add(st_out *o, const char *name, const char *dtype, int64_t rows, int64_t cols,
                   const void *bytes, size_t n)
{
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2;
        o->data = realloc(o->data, o->cap);
    }
    memcpy(o->data + o->len, bytes, n);
    json_t *shape = cols ? json_pack("[I,I]", (json_int_t)rows, (json_int_t)cols)
                         : json_pack("[I]", (json_int_t)rows);
    json_object_set_new(o->header, name,
                        json_pack("{s:s,s:o,s:[I,I]}", "dtype", dtype, "shape", shape,
                                  "data_offsets", (json_int_t)o->len, (json_int_t)(o->len + n)));
    o->len += n;
}

static void st_write(st_out *o, const char *dir, const char *name)
{
    char *h = json_dumps(o->header, JSON_COMPACT);
    size_t hl = strlen(h), padded = (hl + 7) / 8 * 8;
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(h, 1, hl, f);
    for (size_t i = hl; i < padded; i++) fputc(' ', f);
    if (o->len) fwrite(o->data, 1, o->len, f);
    fclose(f);
    free(h);
    json_decref(o->header);
    free(o->data);
    memset(o, 0, sizeof *o);
}

static const char *RE_QWEN2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                              "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *RE_LLAMA3 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static void export_tokenizer(const pl_gguf *g, const char *dir, const export_opts *o)
{
    pl_gguf_array toks, types, merges;
    pl_gguf_get_array(g, "tokenizer.ggml.tokens", &toks, NULL);
    pl_gguf_get_array(g, "tokenizer.ggml.token_type", &types, NULL);
    pl_gguf_get_array(g, "tokenizer.ggml.merges", &merges, NULL);
    pl_str pre;
    pl_gguf_get_string(g, "tokenizer.ggml.pre", &pre, NULL);
    int llama3 = pre.len == 9 && memcmp(pre.ptr, "llama-bpe", 9) == 0;
    json_t *vocab = json_object(), *added = json_array(), *mj = json_array();
    for (uint64_t i = 0; i < toks.count; i++) {
        pl_str t;
        int32_t type = 0;
        pl_gguf_array_string(&toks, i, &t, NULL);
        pl_gguf_array_elem(&types, i, &type, NULL);
        if (type == 3 || type == 4)
            json_array_append_new(added, json_pack("{s:I,s:s%,s:b,s:b,s:b,s:b,s:b}", "id",
                                                   (json_int_t)i, "content", t.ptr, (size_t)t.len,
                                                   "single_word", 0, "lstrip", 0, "rstrip", 0,
                                                   "normalized", 0, "special", type == 3));
        else
            json_object_setn_new(vocab, t.ptr, (size_t)t.len, json_integer((json_int_t)i));
    }
    for (uint64_t i = 0; i < merges.count; i++) {
        pl_str m;
        pl_gguf_array_string(&merges, i, &m, NULL);
        char *s = str_dup(m);
        if (o->merge_arrays) {
            char *sp = strchr(s, ' ');
            *sp = 0;
            json_array_append_new(mj, json_pack("[s,s]", s, sp + 1));
        } else
            json_array_append_new(mj, json_string(s));
        free(s);
    }
    json_t *pretok = json_pack(
        "{s:s,s:[{s:s,s:{s:s},s:s,s:b},{s:s,s:b,s:b,s:b}]}", "type", "Sequence", "pretokenizers",
        "type", "Split", "pattern", "Regex", llama3 ? RE_LLAMA3 : RE_QWEN2, "behavior", "Isolated",
        "invert", 0, "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 0, "use_regex", 0);
    json_t *tok = json_pack(
        "{s:s,s:n,s:o,s:o,s:o,s:{s:s,s:b,s:b},s:{s:s,s:n,s:n,s:n,s:b,s:b,s:b,s:o,s:o}}", "version",
        "1.0", "truncation", "added_tokens", added, "normalizer", json_pack("{s:s}", "type", "NFC"),
        "pre_tokenizer", pretok, "decoder", "type", "ByteLevel", "add_prefix_space", 0, "use_regex",
        0, "model", "type", "BPE", "dropout", "unk_token", "continuing_subword_prefix", "fuse_unk",
        0, "byte_fallback", 0, "ignore_merges", llama3, "vocab", vocab, "merges", mj);
    write_json(dir, "tokenizer.json", tok);

    json_t *tc = json_object();
    static const char *const specials[][2] = {{"tokenizer.ggml.bos_token_id", "bos_token"},
                                              {"tokenizer.ggml.eos_token_id", "eos_token"},
                                              {"tokenizer.ggml.padding_token_id", "pad_token"}};
    for (int i = 0; i < 3; i++) {
        uint32_t id;
        if (pl_gguf_get_u32(g, specials[i][0], &id, NULL) != PL_OK) continue;
        pl_str t;
        pl_gguf_array_string(&toks, id, &t, NULL);
        json_object_set_new(tc, specials[i][1], json_stringn(t.ptr, t.len));
    }
    int add_bos = 0;
    pl_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos, NULL);
    json_object_set_new(tc, "add_bos_token", json_boolean(add_bos));
    pl_str tmpl;
    if (pl_gguf_get_string(g, "tokenizer.chat_template", &tmpl, NULL) == PL_OK)
        json_object_set_new(tc, "chat_template", json_stringn(tmpl.ptr, tmpl.len));
    json_object_set_new(tc, "tokenizer_class", json_string("PreTrainedTokenizerFast"));
    write_json(dir, "tokenizer_config.json", tc);
}

static void export_hf(const char *gguf_path, const char *dir, const export_opts *o)
{
    mkdir(dir, 0755);
    pl_gguf *g = NULL;
    pl_error err = {0};
    TU_CHECK(pl_gguf_open(&g, gguf_path, &err) == PL_OK, "open %s: %s", gguf_path, err.msg);
    if (!g) return;
    pl_str as;
    pl_gguf_get_string(g, "general.architecture", &as, NULL);
    char *arch = str_dup(as), key[96];
#define K(s) (snprintf(key, sizeof key, "%s." s, arch), key)
    static const char *const hf_arch[][2] = {{"llama", "LlamaForCausalLM"},
                                             {"qwen2", "Qwen2ForCausalLM"},
                                             {"qwen3", "Qwen3ForCausalLM"}};
    const char *hfa = "?";
    for (int i = 0; i < 3; i++)
        if (strcmp(arch, hf_arch[i][0]) == 0) hfa = hf_arch[i][1];
    float eps = 0, theta = 0;
    pl_gguf_get_f32(g, K("attention.layer_norm_rms_epsilon"), &eps, NULL);
    pl_gguf_get_f32(g, K("rope.freq_base"), &theta, NULL);
    int64_t H = get_u32(g, K("attention.head_count")),
            Hkv = get_u32(g, K("attention.head_count_kv"));
    json_t *cfg = json_pack(
        "{s:[s],s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:b,s:s,s:s,s:n}", "architectures", hfa,
        "model_type", arch, "hidden_size", (json_int_t)get_u32(g, K("embedding_length")),
        "intermediate_size", (json_int_t)get_u32(g, K("feed_forward_length")), "num_hidden_layers",
        (json_int_t)get_u32(g, K("block_count")), "num_attention_heads", (json_int_t)H,
        "num_key_value_heads", (json_int_t)Hkv, "head_dim",
        (json_int_t)get_u32(g, K("attention.key_length")), "max_position_embeddings",
        (json_int_t)get_u32(g, K("context_length")), "vocab_size",
        (json_int_t)get_u32(g, K("vocab_size")), "rms_norm_eps", (double)eps, "rope_theta",
        (double)theta, "tie_word_embeddings", o->tied, "hidden_act", "silu", "torch_dtype",
        "float32", "rope_scaling");
    write_json(dir, "config.json", cfg);
    export_tokenizer(g, dir, o);

    st_out parts[2] = {{json_object(), NULL, 0, 0}, {json_object(), NULL, 0, 0}};
    json_t *wmap = json_object();
    int llama = strcmp(arch, "llama") == 0;
    for (uint64_t i = 0; i < pl_gguf_n_tensors(g); i++) {
        pl_tensor_info t;
        pl_gguf_tensor(g, i, &t, NULL);
        char *gname = str_dup(t.name), name[128];
        hf_name(name, sizeof name, gname);
        const char *dtype = t.type == PL_TYPE_F32 ? "F32" : t.type == PL_TYPE_BF16 ? "BF16" : "F16";
        int64_t rows = t.n_dims == 2 ? t.ne[1] : t.ne[0], cols = t.n_dims == 2 ? t.ne[0] : 0;
        uint8_t *bytes = malloc(t.n_bytes);
        memcpy(bytes, t.data, t.n_bytes);
        int64_t heads = strstr(gname, "attn_q.") ? H : strstr(gname, "attn_k.") ? Hkv : 0;
        if (llama && heads && !o->no_permute)
            unpermute(bytes, t.data, rows, (size_t)t.n_bytes / (size_t)rows, heads);
        int part = o->shards && strncmp(gname, "blk.1.", 6) == 0;
        st_add(&parts[part], name, dtype, rows, cols, bytes, (size_t)t.n_bytes);
        json_object_set_new(wmap, name,
                            json_string(part ? "model-00002-of-00002.safetensors"
                                             : "model-00001-of-00002.safetensors"));
        free(bytes);
        free(gname);
    }
    if (o->shards) {
        st_write(&parts[0], dir, "model-00001-of-00002.safetensors");
        st_write(&parts[1], dir, "model-00002-of-00002.safetensors");
        write_json(dir, "model.safetensors.index.json",
                   json_pack("{s:{s:I},s:o}", "metadata", "total_size", (json_int_t)0, "weight_map",
                             wmap));
    } else {
        st_write(&parts[0], dir, "model.safetensors");
        json_decref(parts[1].header);
        json_decref(wmap);
    }
#undef K
    free(arch);
    pl_gguf_free(g);
}

/* ---- comparisons ---------------------------------------------------------------------------- */

static int same_value(const pl_gguf *a, uint64_t i, const pl_gguf *b, uint64_t j)
{
    pl_gguf_type t = pl_gguf_kv_type(a, i);
    if (t != pl_gguf_kv_type(b, j)) return 0;
    if (t == PL_GGUF_STRING) {
        pl_str x, y;
        pl_gguf_kv_string(a, i, &x, NULL);
        pl_gguf_kv_string(b, j, &y, NULL);
        return x.len == y.len && memcmp(x.ptr, y.ptr, x.len) == 0;
    }
    if (t != PL_GGUF_ARRAY) {
        uint64_t x = 0, y = 0;
        pl_gguf_kv_scalar(a, i, t, &x, NULL);
        pl_gguf_kv_scalar(b, j, t, &y, NULL);
        return x == y;
    }
    pl_gguf_array x, y;
    pl_gguf_kv_array(a, i, &x, NULL);
    pl_gguf_kv_array(b, j, &y, NULL);
    if (x.type != y.type || x.count != y.count) return 0;
    for (uint64_t k = 0; k < x.count; k++) {
        if (x.type == PL_GGUF_STRING) {
            pl_str p, q;
            pl_gguf_array_string(&x, k, &p, NULL);
            pl_gguf_array_string(&y, k, &q, NULL);
            if (p.len != q.len || memcmp(p.ptr, q.ptr, p.len) != 0) return 0;
        } else {
            uint64_t p = 0, q = 0;
            pl_gguf_array_elem(&x, k, &p, NULL);
            pl_gguf_array_elem(&y, k, &q, NULL);
            if (p != q) return 0;
        }
    }
    return 1;
}

/* Every key of a (but skip) is in b with the same type and value, and b has no other key
 * but those in extra ('|'-separated). */
static void same_metadata(const char *pa, const char *pb, const char *skip, const char *extra)
{
    pl_gguf *a = NULL, *b = NULL;
    pl_gguf_open(&a, pa, NULL);
    pl_gguf_open(&b, pb, NULL);
    TU_CHECK(a && b, "open %s / %s", pa, pb);
    if (!a || !b) goto out;
    for (uint64_t i = 0; i < pl_gguf_n_kv(a); i++) {
        char *k = str_dup(pl_gguf_kv_key(a, i));
        int64_t j = pl_gguf_find_key(b, k);
        if (!strstr(skip, k)) {
            TU_CHECK(j >= 0, "%s: key %s is missing", pb, k);
            if (j >= 0) TU_CHECK(same_value(a, i, b, (uint64_t)j), "%s: key %s differs", pb, k);
        }
        free(k);
    }
    for (uint64_t j = 0; j < pl_gguf_n_kv(b); j++) {
        char *k = str_dup(pl_gguf_kv_key(b, j));
        TU_CHECK(pl_gguf_find_key(a, k) >= 0 || strstr(extra, k), "%s: unexpected key %s", pb, k);
        free(k);
    }
out:
    pl_gguf_free(a);
    pl_gguf_free(b);
}

/* Returns the number of tensors that differ (type, shape or bytes); every one must exist. */
static int differing_tensors(const char *pa, const char *pb, int report)
{
    pl_gguf *a = NULL, *b = NULL;
    pl_gguf_open(&a, pa, NULL);
    pl_gguf_open(&b, pb, NULL);
    TU_CHECK(a && b, "open %s / %s", pa, pb);
    int bad = 0;
    if (!a || !b) goto out;
    TU_CHECK(pl_gguf_n_tensors(a) == pl_gguf_n_tensors(b), "%s: %llu tensors, %s: %llu", pa,
             (unsigned long long)pl_gguf_n_tensors(a), pb,
             (unsigned long long)pl_gguf_n_tensors(b));
    for (uint64_t i = 0; i < pl_gguf_n_tensors(a); i++) {
        pl_tensor_info x, y;
        pl_gguf_tensor(a, i, &x, NULL);
        char *name = str_dup(x.name);
        int64_t j = pl_gguf_find_tensor(b, name);
        TU_CHECK(j >= 0, "%s: tensor %s is missing", pb, name);
        if (j >= 0) {
            pl_gguf_tensor(b, (uint64_t)j, &y, NULL);
            int same = x.type == y.type && x.n_dims == y.n_dims &&
                       memcmp(x.ne, y.ne, sizeof x.ne) == 0 && x.n_bytes == y.n_bytes &&
                       memcmp(x.data, y.data, x.n_bytes) == 0;
            if (!same && report)
                TU_CHECK(same, "%s: tensor %s differs (type %u/%u, ne0 %lld/%lld)", pb, name,
                         x.type, y.type, (long long)x.ne[0], (long long)y.ne[0]);
            bad += !same;
        }
        free(name);
    }
out:
    pl_gguf_free(a);
    pl_gguf_free(b);
    return bad;
}

static float *eval_logits(const char *path, const int32_t *tok, int n, int64_t *n_vocab)
{
    pl_model *m = NULL;
    pl_session *s = NULL;
    pl_error err = {0};
    float *out = NULL;
    if (pl_model_load(&m, path, NULL, &err) != PL_OK) {
        TU_CHECK(0, "load %s: %s", path, err.msg);
        return NULL;
    }
    pl_model_info info;
    pl_model_get_info(m, &info, NULL);
    *n_vocab = info.n_vocab;
    pl_session_params p = pl_session_default_params(m);
    p.n_threads = 1;
    if (pl_session_new(&s, m, &p, &err) == PL_OK) {
        out = malloc((size_t)n * (size_t)info.n_vocab * sizeof *out);
        pl_status st = pl_session_eval(s, tok, n, out, PL_EVAL_ALL_LOGITS, &err);
        TU_CHECK(st == PL_OK, "eval %s: %s", path, err.msg);
    }
    pl_session_free(s);
    pl_model_free(m);
    return out;
}

static void same_logits(const char *pa, const char *pb)
{
    const int32_t tok[] = {1, 5, 9, 40, 77, 3, 100, 2, 8, 13};
    int64_t va = 0, vb = 0;
    float *a = eval_logits(pa, tok, 10, &va), *b = eval_logits(pb, tok, 10, &vb);
    TU_CHECK(a && b && va == vb && memcmp(a, b, (size_t)va * 10 * sizeof *a) == 0,
             "%s and %s give different logits", pa, pb);
    free(a);
    free(b);
}

static pl_status convert(const char *dir, const char *out, pl_ftype ftype, pl_error *err)
{
    pl_convert_stats st;
    pl_convert_params p = {.ftype = ftype, .stats = &st};
    return pl_convert_hf(dir, out, &p, err);
}

static int files_equal(const char *pa, const char *pb)
{
    size_t n[2] = {0, 0};
    char *d[2] = {NULL, NULL};
    const char *paths[2] = {pa, pb};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(paths[i], "rb");
        if (!f) return 0;
        fseek(f, 0, SEEK_END);
        n[i] = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        d[i] = malloc(n[i] + 1);
        if (fread(d[i], 1, n[i], f) != n[i]) n[i] = (size_t)-1;
        fclose(f);
    }
    int eq = n[0] == n[1] && memcmp(d[0], d[1], n[0]) == 0;
    free(d[0]);
    free(d[1]);
    return eq;
}

/* ---- round trips ---------------------------------------------------------------------------- */

static void round_trip(const char *arch, enum demo_vocab_kind vk, pl_ftype src, pl_ftype dst,
                       export_opts o, const char *tag)
{
    char orig[256], dir[256], out[256];
    snprintf(orig, sizeof orig, "%s/%s.gguf", root, tag);
    snprintf(dir, sizeof dir, "%s/%s-hf", root, tag);
    snprintf(out, sizeof out, "%s/%s-converted.gguf", root, tag);
    make_model(orig, arch, vk, src, o.tied);
    export_hf(orig, dir, &o);
    pl_error err = {0};
    pl_status s = convert(dir, out, dst, &err);
    TU_CHECK(s == PL_OK, "%s: convert -> %s: %s", tag, pl_status_str(s), err.msg);
    if (s) return;
    TU_CHECK(differing_tensors(orig, out, 1) == 0, "%s: tensors differ", tag);
    same_metadata(orig, out, "general.name", "tokenizer.ggml.normalizer");
    same_logits(orig, out);
    pl_gguf *g = NULL;
    pl_gguf_open(&g, out, NULL);
    pl_str norm = {0};
    TU_CHECK(g && pl_gguf_get_string(g, "tokenizer.ggml.normalizer", &norm, NULL) == PL_OK &&
                 norm.len == 3 && memcmp(norm.ptr, "NFC", 3) == 0,
             "%s: the NFC normalizer is not carried", tag);
    pl_gguf_free(g);
}

static void convert_llama_round_trip_is_bit_identical(void)
{
    round_trip("llama", DEMO_VOCAB_BPE_LLAMA3, PL_FTYPE_F32, PL_FTYPE_F32, (export_opts){0},
               "llama");
}

static void convert_llama_tied_round_trip_is_bit_identical(void)
{
    round_trip("llama", DEMO_VOCAB_BPE, PL_FTYPE_F32, PL_FTYPE_F32,
               (export_opts){.tied = 1, .merge_arrays = 1}, "llama-tied");
}

static void convert_qwen2_round_trip_keeps_biases_unpermuted(void)
{
    round_trip("qwen2", DEMO_VOCAB_BPE, PL_FTYPE_F32, PL_FTYPE_F32, (export_opts){0}, "qwen2");
}

static void convert_qwen3_round_trip_keeps_qk_norms(void)
{
    round_trip("qwen3", DEMO_VOCAB_BPE, PL_FTYPE_F32, PL_FTYPE_F32,
               (export_opts){.merge_arrays = 1}, "qwen3");
}

static void convert_sharded_checkpoint_round_trip(void)
{
    round_trip("llama", DEMO_VOCAB_BPE, PL_FTYPE_F32, PL_FTYPE_F32, (export_opts){.shards = 2},
               "sharded");
}

static void convert_bf16_source_to_bf16_is_exact(void)
{
    /* BF16 matrices and F32 norms in, --type BF16 out: the file mkmodel writes at BF16 */
    round_trip("qwen2", DEMO_VOCAB_BPE, PL_FTYPE_BF16, PL_FTYPE_BF16, (export_opts){0}, "bf16");
}

static void convert_f16_source_to_f16_is_exact(void)
{
    round_trip("llama", DEMO_VOCAB_BPE, PL_FTYPE_F16, PL_FTYPE_F16, (export_opts){.shards = 2},
               "f16");
}

/* Without convert's permutation a llama checkpoint would come back scrambled: the test above
 * cannot pass with both permutations the identity. */
static void convert_llama_permutes_q_and_k_rows(void)
{
    char orig[256], dir[256], out[256];
    snprintf(orig, sizeof orig, "%s/llama.gguf", root);
    snprintf(dir, sizeof dir, "%s/noperm-hf", root);
    snprintf(out, sizeof out, "%s/noperm.gguf", root);
    export_hf(orig, dir, &(export_opts){.no_permute = 1});
    pl_error err = {0};
    TU_CHECK(convert(dir, out, PL_FTYPE_F32, &err) == PL_OK, "convert: %s", err.msg);
    /* q and k of both layers differ, nothing else */
    TU_CHECK(differing_tensors(orig, out, 0) == 4, "want exactly attn_q and attn_k of 2 layers "
                                                   "permuted");
}

static void convert_quantized_equals_quantize_of_f32(void)
{
    static const pl_ftype types[] = {PL_FTYPE_Q8_0, PL_FTYPE_Q4_K_M, PL_FTYPE_Q5_0, PL_FTYPE_F16};
    char dir[256], f32[256], direct[256], requant[256];
    snprintf(dir, sizeof dir, "%s/llama-hf", root);
    snprintf(f32, sizeof f32, "%s/llama-converted.gguf", root);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        snprintf(direct, sizeof direct, "%s/direct-%s.gguf", root, pl_ftype_name(types[i]));
        snprintf(requant, sizeof requant, "%s/requant-%s.gguf", root, pl_ftype_name(types[i]));
        pl_error err = {0};
        TU_CHECK(convert(dir, direct, types[i], &err) == PL_OK, "convert %s: %s",
                 pl_ftype_name(types[i]), err.msg);
        pl_quantize_params qp = {.ftype = types[i], .n_threads = 1};
        TU_CHECK(pl_model_quantize(f32, requant, &qp, &err) == PL_OK, "quantize: %s", err.msg);
        TU_CHECK(files_equal(direct, requant),
                 "convert --type %s differs from quantize of the F32 conversion",
                 pl_ftype_name(types[i]));
    }
}

/* ---- the tokenizer files' other forms ---- */

static void edit_json(const char *dir, const char *name, const char *key, json_t *value);

static void put_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

/* A one-layer llama with random F32 weights and vocab_size rows. */
static void write_tiny_llama(const char *dir, int64_t V)
{
    mkdir(dir, 0755);
    const int64_t E = 32, F = 48, D = 16, H = 2, Hkv = 1;
    write_json(dir, "config.json",
               json_pack("{s:[s],s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "architectures",
                         "LlamaForCausalLM", "hidden_size", (json_int_t)E, "intermediate_size",
                         (json_int_t)F, "num_hidden_layers", (json_int_t)1, "num_attention_heads",
                         (json_int_t)H, "num_key_value_heads", (json_int_t)Hkv,
                         "max_position_embeddings", (json_int_t)64, "vocab_size", (json_int_t)V,
                         "tie_word_embeddings", 1));
    const struct {
        const char *name;
        int64_t rows, cols;
    } t[] = {
        {"model.embed_tokens.weight", V, E},
        {"model.layers.0.input_layernorm.weight", E, 0},
        {"model.layers.0.self_attn.q_proj.weight", H * D, E},
        {"model.layers.0.self_attn.k_proj.weight", Hkv * D, E},
        {"model.layers.0.self_attn.v_proj.weight", Hkv * D, E},
        {"model.layers.0.self_attn.o_proj.weight", E, H * D},
        {"model.layers.0.self_attn.rotary_emb.inv_freq", D / 2, 0},
        {"model.layers.0.post_attention_layernorm.weight", E, 0},
        {"model.layers.0.mlp.gate_proj.weight", F, E},
        {"model.layers.0.mlp.up_proj.weight", F, E},
        {"model.layers.0.mlp.down_proj.weight", E, F},
        {"model.norm.weight", E, 0},
    };
    st_out o = {json_object(), NULL, 0, 0};
    json_object_set_new(o.header, "__metadata__", json_pack("{s:s}", "format", "pt"));
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        size_t n = (size_t)(t[i].rows * (t[i].cols ? t[i].cols : 1));
        float *x = malloc(n * sizeof *x);
        for (size_t k = 0; k < n; k++) x[k] = (float)(tu_rng_normal(&r) * 0.1);
        st_add(&o, t[i].name, "F32", t[i].rows, t[i].cols, x, n * sizeof *x);
        free(x);
    }
    st_write(&o, dir, "model.safetensors");
}

static void convert_reads_gpt2_pre_added_tokens_and_generation_config(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/forms-hf", root);
    snprintf(out, sizeof out, "%s/forms.gguf", root);
    write_tiny_llama(dir, 300);
    /* ids 3 and 4 are defined by nothing: [PAD3], [PAD4]; rows 7..299 too */
    put_text(dir, "tokenizer.json",
             "{\"version\":\"1.0\",\"added_tokens\":["
             "{\"id\":5,\"content\":\"<s>\",\"special\":true,\"single_word\":false,\"lstrip\":"
             "false,\"rstrip\":false,\"normalized\":false},"
             "{\"id\":6,\"content\":\"<x>\",\"special\":false,\"single_word\":false,\"lstrip\":"
             "false,\"rstrip\":false,\"normalized\":false}],"
             "\"normalizer\":null,"
             "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
             "\"trim_offsets\":true,\"use_regex\":true},"
             "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":["
             "{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},"
             "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}]},"
             "\"model\":{\"type\":\"BPE\",\"byte_fallback\":false,"
             "\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]}}");
    put_text(dir, "tokenizer_config.json", "{\"bos_token\":{\"content\":\"<s>\"}}");
    put_text(dir, "generation_config.json", "{\"eos_token_id\":[6,5]}");
    put_text(dir, "chat_template.jinja", "{{ messages }}");
    pl_error err = {0};
    pl_status s = convert(dir, out, PL_FTYPE_Q8_0, &err);
    TU_CHECK(s == PL_OK, "convert -> %s: %s", pl_status_str(s), err.msg);
    pl_gguf *g = NULL;
    if (s || pl_gguf_open(&g, out, &err) != PL_OK) return;
    pl_str pre = {0}, tmpl = {0}, t3 = {0}, t5 = {0};
    pl_gguf_array toks = {0}, types = {0}, merges = {0};
    uint32_t bos = 0, eos = 0;
    int add_bos = 0;
    int32_t ty[7] = {0};
    pl_gguf_get_string(g, "tokenizer.ggml.pre", &pre, NULL);
    pl_gguf_get_string(g, "tokenizer.chat_template", &tmpl, NULL);
    pl_gguf_get_array(g, "tokenizer.ggml.tokens", &toks, NULL);
    pl_gguf_get_array(g, "tokenizer.ggml.token_type", &types, NULL);
    pl_gguf_get_array(g, "tokenizer.ggml.merges", &merges, NULL);
    pl_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos, NULL);
    pl_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos, NULL);
    pl_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos, NULL);
    for (int i = 0; i < 7 && types.count == 300; i++)
        pl_gguf_array_elem(&types, (uint64_t)i, &ty[i], NULL);
    if (toks.count == 300) {
        pl_gguf_array_string(&toks, 3, &t3, NULL);
        pl_gguf_array_string(&toks, 5, &t5, NULL);
    }
    TU_CHECK(pre.len == 5 && memcmp(pre.ptr, "gpt-2", 5) == 0, "pre '%.*s', want gpt-2",
             (int)pre.len, pre.ptr);
    TU_CHECK(toks.count == 300 && t3.len == 6 && memcmp(t3.ptr, "[PAD3]", 6) == 0 && t5.len == 3 &&
                 memcmp(t5.ptr, "<s>", 3) == 0,
             "tokens: %llu, [3] '%.*s'", (unsigned long long)toks.count, (int)t3.len, t3.ptr);
    TU_CHECK(ty[0] == 1 && ty[2] == 1 && ty[3] == 5 && ty[5] == 3 && ty[6] == 4,
             "token types %d %d %d %d %d", ty[0], ty[2], ty[3], ty[5], ty[6]);
    TU_CHECK(merges.count == 1, "merges %llu", (unsigned long long)merges.count);
    TU_CHECK(bos == 5 && eos == 6 && add_bos == 1, "bos %u eos %u add_bos %d", bos, eos, add_bos);
    TU_CHECK(tmpl.len == 14 && memcmp(tmpl.ptr, "{{ messages }}", 14) == 0, "chat template");
    TU_CHECK(pl_gguf_find_key(g, "tokenizer.ggml.normalizer") < 0, "no normalizer declared");
    TU_CHECK(pl_gguf_find_tensor(g, "output.weight") < 0 && pl_gguf_n_tensors(g) == 11,
             "tied: no output.weight, %llu tensors", (unsigned long long)pl_gguf_n_tensors(g));
    pl_gguf_free(g);

    /* transformers 5 writes rope_theta inside rope_parameters */
    edit_json(dir, "config.json", "rope_parameters",
              json_pack("{s:s,s:f}", "rope_type", "default", "rope_theta", 500000.0));
    s = convert(dir, out, PL_FTYPE_F32, &err);
    float theta = 0;
    g = NULL;
    TU_CHECK(s == PL_OK && pl_gguf_open(&g, out, &err) == PL_OK &&
                 pl_gguf_get_f32(g, "llama.rope.freq_base", &theta, NULL) == PL_OK &&
                 theta == 500000.0f,
             "rope_parameters.rope_theta -> %s, freq_base %g (%s)", pl_status_str(s), (double)theta,
             err.msg);
    pl_gguf_free(g);

    /* issue 49: yarn with truncate = false (gpt-oss) is plumb's rope.scaling.yarn_truncate =
     * false; true (or absent) writes no key, as llama.cpp's files have none */
    for (int tr = 0; tr < 2; tr++) {
        edit_json(dir, "config.json", "rope_parameters",
                  json_pack("{s:s,s:f,s:f,s:i,s:b}", "rope_type", "yarn", "rope_theta", 150000.0,
                            "factor", 32.0, "original_max_position_embeddings", 4096, "truncate",
                            tr));
        s = convert(dir, out, PL_FTYPE_F32, &err);
        g = NULL;
        TU_CHECK(s == PL_OK && pl_gguf_open(&g, out, &err) == PL_OK, "yarn truncate %d -> %s (%s)",
                 tr, pl_status_str(s), err.msg);
        const int64_t ki = g ? pl_gguf_find_key(g, "llama.rope.scaling.yarn_truncate") : -1;
        uint8_t b = 1;
        if (ki >= 0) pl_gguf_kv_scalar(g, (uint64_t)ki, PL_GGUF_BOOL, &b, NULL);
        TU_CHECK(tr ? ki < 0 : ki >= 0 && b == 0, "yarn truncate %d: key at %lld = %d", tr,
                 (long long)ki, b);
        pl_model *m = NULL;
        TU_CHECK(s == PL_OK && pl_model_load(&m, out, NULL, &err) == PL_OK,
                 "yarn truncate %d: the file does not load (%s)", tr, err.msg);
        pl_model_free(m);
        pl_gguf_free(g);
    }
    edit_json(dir, "config.json", "rope_parameters",
              json_pack("{s:s,s:f,s:f,s:s}", "rope_type", "yarn", "rope_theta", 1e4, "factor", 4.0,
                        "truncate", "no"));
    s = convert(dir, out, PL_FTYPE_F32, &err);
    TU_CHECK(s == PL_ERR_TYPE && strstr(err.msg, "truncate"), "truncate \"no\" -> %s %s",
             pl_status_str(s), err.msg);
    edit_json(dir, "config.json", "rope_parameters",
              json_pack("{s:s,s:f}", "rope_type", "default", "rope_theta", 500000.0));

    /* other pre-tokenizers, SentencePiece-style BPE and shared ids are refused by name */
    put_text(dir, "tokenizer.json",
             "{\"pre_tokenizer\":{\"type\":\"Metaspace\"},\"model\":{\"type\":\"BPE\","
             "\"vocab\":{\"a\":0},\"merges\":[]}}");
    s = convert(dir, out, PL_FTYPE_F32, &err);
    TU_CHECK(s == PL_ERR_UNSUPPORTED && strstr(err.msg, "pre_tokenizer"), "-> %s %s",
             pl_status_str(s), err.msg);
    put_text(dir, "tokenizer.json",
             "{\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,"
             "\"vocab\":{\"a\":0},\"merges\":[]}}");
    s = convert(dir, out, PL_FTYPE_F32, &err);
    TU_CHECK(s == PL_ERR_UNSUPPORTED && strstr(err.msg, "byte_fallback"), "-> %s %s",
             pl_status_str(s), err.msg);
    put_text(dir, "tokenizer.json",
             "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\","
             "\"vocab\":{\"a\":0,\"b\":0},\"merges\":[]}}");
    s = convert(dir, out, PL_FTYPE_F32, &err);
    TU_CHECK(s == PL_ERR_FORMAT && strstr(err.msg, "share id 0"), "-> %s %s", pl_status_str(s),
             err.msg);
}

/* tokenizer.json as strictly as the tokenizers library (0.23.2) reads it: each case below is
 * one it refuses, and convert refuses it too, naming the entry; empty tokens, which it and
 * llama.cpp load, convert. */
static void convert_checks_tokenizer_json_as_tokenizers_does(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/tokjson-hf", root);
    snprintf(out, sizeof out, "%s/tokjson.gguf", root);
    write_tiny_llama(dir, 300);
#define ADDED(id, text, special)                                                                   \
    "{\"id\":" #id ",\"content\":\"" text "\",\"single_word\":false,\"lstrip\":false,"             \
    "\"rstrip\":false,\"normalized\":false,\"special\":" #special "}"
#define TOKJSON(added, vocab, merges)                                                              \
    "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"added_tokens\":" added                          \
    ",\"model\":{\"type\":\"BPE\",\"vocab\":" vocab merges "}}"
#define VOCAB    "{\"a\":0,\"b\":1,\"ab\":2}"
#define OK_ADDED "[" ADDED(4, "<s>", true) "]"
    static const struct {
        const char *json;
        pl_status code;
        const char *needles; /* '|'-separated */
    } bad[] = {
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":[\"x b\"]"), PL_ERR_FORMAT,
         "merge 0|left token|'x'|model.vocab"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":[\"a b\",\"a x\"]"), PL_ERR_FORMAT,
         "merge 1|right token|'x'"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":[\"b a\"]"), PL_ERR_FORMAT,
         "merge 0|merged token|'ba'"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":[[\"a\",\"x\"]]"), PL_ERR_FORMAT,
         "merge 0|right token|'x'"},
        {TOKJSON("[" ADDED(4, "c", false) "]", "{\"a\":0,\"b\":1,\"ab\":2,\"bc\":3}",
                 ",\"merges\":[\"b c\"]"),
         PL_ERR_FORMAT, "merge 0|right token|'c'"}, /* an added token is not a merge's side */
        {TOKJSON(OK_ADDED, VOCAB, ""), PL_ERR_FORMAT, "model.merges|missing"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":null"), PL_ERR_FORMAT, "model.merges|null"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":\"a b\""), PL_ERR_TYPE, "model.merges|string"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":[\"a b c\"]"), PL_ERR_FORMAT, "merge 0|a b c"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":[\" a b\"]"), PL_ERR_FORMAT, "merge 0"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":[\"ab\"]"), PL_ERR_FORMAT, "merge 0|'ab'"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":[[\"a\"]]"), PL_ERR_TYPE, "merge 0|array"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":[[\"a\",1]]"), PL_ERR_TYPE, "merge 0"},
        {TOKJSON(OK_ADDED, VOCAB, ",\"merges\":[5]"), PL_ERR_TYPE, "merge 0|integer"},
        {TOKJSON(OK_ADDED, "{\"a\":0,\"b\":-1}", ",\"merges\":[]"), PL_ERR_FORMAT,
         "model.vocab['b']"},
        {TOKJSON(OK_ADDED, "{\"a\":0,\"b\":1.5}", ",\"merges\":[]"), PL_ERR_FORMAT,
         "model.vocab['b']"},
        {TOKJSON(OK_ADDED, "{\"a\":0,\"b\":\"1\"}", ",\"merges\":[]"), PL_ERR_FORMAT,
         "model.vocab['b']"},
        {TOKJSON(OK_ADDED, "[1]", ",\"merges\":[]"), PL_ERR_TYPE, "model.vocab"},
        {TOKJSON("null", VOCAB, ",\"merges\":[]"), PL_ERR_TYPE, "added_tokens|null"},
        {TOKJSON("[5]", VOCAB, ",\"merges\":[]"), PL_ERR_TYPE, "added_tokens[0]|integer"},
        {TOKJSON("[{\"id\":4,\"content\":\"<s>\",\"special\":true}]", VOCAB, ",\"merges\":[]"),
         PL_ERR_FORMAT, "added_tokens[0]|single_word|missing"},
        {TOKJSON("[{\"id\":4,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":1,"
                 "\"rstrip\":false,\"normalized\":false,\"special\":true}]",
                 VOCAB, ",\"merges\":[]"),
         PL_ERR_FORMAT, "added_tokens[0]|lstrip|integer"},
        {TOKJSON("[{\"id\":4,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":false,"
                 "\"rstrip\":false,\"normalized\":false,\"special\":\"yes\"}]",
                 VOCAB, ",\"merges\":[]"),
         PL_ERR_FORMAT, "added_tokens[0]|special|string"},
        {TOKJSON("[{\"content\":\"<s>\",\"single_word\":false,\"lstrip\":false,"
                 "\"rstrip\":false,\"normalized\":false,\"special\":true}]",
                 VOCAB, ",\"merges\":[]"),
         PL_ERR_FORMAT, "added_tokens[0]|id"},
        {TOKJSON("[" ADDED(-1, "<s>", true) "]", VOCAB, ",\"merges\":[]"), PL_ERR_FORMAT,
         "added_tokens[0]|id"},
        {TOKJSON("[" ADDED(4, "a", false) "]", VOCAB, ",\"merges\":[]"), PL_ERR_FORMAT,
         "tokens 0 and 4|'a'"},
        {TOKJSON("[" ADDED(4, "<s>", true) "," ADDED(5, "<s>", true) "]", VOCAB, ",\"merges\":[]"),
         PL_ERR_FORMAT, "tokens 4 and 5|'<s>'"},
    };
    pl_error err = {0};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        put_text(dir, "tokenizer.json", bad[k].json);
        pl_status s = convert(dir, out, PL_FTYPE_F32, &err);
        TU_CHECK(s == bad[k].code, "case %zu: -> %s, want %s (%s)", k, pl_status_str(s),
                 pl_status_str(bad[k].code), err.msg);
        char buf[128];
        snprintf(buf, sizeof buf, "%s", bad[k].needles);
        for (char *n = strtok(buf, "|"); n; n = strtok(NULL, "|"))
            TU_CHECK(strstr(err.msg, n) != NULL, "case %zu: '%s' does not name '%s'", k, err.msg,
                     n);
    }
    /* an empty vocabulary key and an empty added token convert (llama.cpp: "[EMPTY_<id>]") */
    put_text(dir, "tokenizer.json",
             TOKJSON("[" ADDED(4, "", false) "]", "{\"a\":0,\"b\":1,\"ab\":2,\"\":3}",
                     ",\"merges\":[\"a b\"]"));
    pl_status s = convert(dir, out, PL_FTYPE_F32, &err);
    TU_CHECK(s == PL_OK, "empty tokens -> %s (%s)", pl_status_str(s), err.msg);
    pl_gguf *g = NULL;
    if (s || pl_gguf_open(&g, out, &err) != PL_OK) return;
    pl_gguf_array toks = {0};
    pl_str t3 = {0}, t4 = {0};
    pl_gguf_get_array(g, "tokenizer.ggml.tokens", &toks, NULL);
    pl_gguf_array_string(&toks, 3, &t3, NULL);
    pl_gguf_array_string(&toks, 4, &t4, NULL);
    TU_CHECK(toks.count == 300 && t3.len == 0 && t4.len == 0, "tokens %llu, [3] %llu bytes",
             (unsigned long long)toks.count, (unsigned long long)t3.len);
    pl_gguf_free(g);
#undef ADDED
#undef TOKJSON
#undef VOCAB
#undef OK_ADDED
}

/* The quirk shapes llama.cpp loads and plumb used to refuse, converted and tokenized: GPT-NeoX's
 * added space runs beside byte-level ones, DeepSeek's added "õ" beside the merge "Ã µ" and a
 * "<｜…｜>" control token. The ids are what the tokenizers library (0.23.2) gives for the same
 * tokenizer.json (encode without special tokens; parse_special for the control token). */
static void convert_quirk_vocabularies_tokenize_as_tokenizers_does(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/quirks-hf", root);
    snprintf(out, sizeof out, "%s/quirks.gguf", root);
    write_tiny_llama(dir, 300);
#define FLAGS "\"single_word\":false,\"lstrip\":false,\"rstrip\":false"
    static const struct {
        const char *json;
        const char *text;
        uint32_t flags;
        int32_t ids[4];
        int n;
    } cases[] = {
        {"{\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}"
         ","
         "\"added_tokens\":[{\"id\":6,\"content\":\"  \"," FLAGS ",\"normalized\":true,"
         "\"special\":false},{\"id\":7,\"content\":\"   \"," FLAGS ",\"normalized\":true,"
         "\"special\":false}],\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,"
         "\"\xc4\xa0\":2,\"\xc4\xa0\xc4\xa0\":3,\"\xc4\xa0\xc4\xa0\xc4\xa0\":4,\"\xc4\xa0"
         "b\":5},\"merges\":[\"\xc4\xa0 \xc4\xa0\",\"\xc4\xa0\xc4\xa0 \xc4\xa0\",\"\xc4\xa0 b\"]}}",
         "a     b",
         0,
         {0, 7, 6, 1},
         4},
        {NULL, "a  b", 0, {0, 6, 1}, 3},
        {NULL, "a b", 0, {0, 5}, 2},
        {"{\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}"
         ","
         "\"added_tokens\":[{\"id\":5,\"content\":\"\xc3\xb5\"," FLAGS ",\"normalized\":true,"
         "\"special\":false},{\"id\":6,\"content\":\"<\xef\xbd\x9c"
         "end\xe2\x96\x81of\xe2\x96\x81"
         "sentence\xef\xbd\x9c>\"," FLAGS ",\"normalized\":false,\"special\":true}],"
         "\"model\":{\"type\":\"BPE\",\"vocab\":{\"x\":0,\"y\":1,\"\xc3\x83\":2,\"\xc2\xb5\":3,"
         "\"\xc3\x83\xc2\xb5\":4},\"merges\":[\"\xc3\x83 \xc2\xb5\"]}}",
         "x\xc3\xb5y",
         0,
         {0, 5, 1},
         3},
        {NULL,
         "x<\xef\xbd\x9c"
         "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>y",
         PL_TOKENIZE_PARSE_SPECIAL,
         {0, 6, 1},
         3},
    };
#undef FLAGS
    pl_model *m = NULL;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        pl_error err = {0};
        if (cases[k].json) {
            pl_model_free(m);
            m = NULL;
            put_text(dir, "tokenizer.json", cases[k].json);
            pl_status s = convert(dir, out, PL_FTYPE_F32, &err);
            TU_CHECK(s == PL_OK, "case %zu: convert -> %s (%s)", k, pl_status_str(s), err.msg);
            pl_model_params p = {.flags = PL_MODEL_VOCAB_ONLY};
            if (s || (s = pl_model_load(&m, out, &p, &err)) != PL_OK) {
                TU_CHECK(s == PL_OK, "case %zu: load -> %s (%s)", k, pl_status_str(s), err.msg);
                return;
            }
        }
        int32_t ids[16];
        size_t n = 0;
        pl_status s =
            pl_tokenize(m, cases[k].text, strlen(cases[k].text), cases[k].flags, ids, 16, &n, &err);
        int same = s == PL_OK && n == (size_t)cases[k].n;
        for (size_t i = 0; same && i < n; i++) same = ids[i] == cases[k].ids[i];
        TU_CHECK(same, "case %zu '%s': %s, %zu ids (%d %d %d ...)", k, cases[k].text,
                 pl_status_str(s), n, n > 0 ? ids[0] : -1, n > 1 ? ids[1] : -1,
                 n > 2 ? ids[2] : -1);
    }
    pl_model_free(m);
}

/* Allocation N fails (transient, then persistent): PL_ERR_NOMEM and nothing written (leaks:
 * ASan's check in CI). */
static void convert_survives_allocation_failure(void)
{
    char dir[256], out[300];
    snprintf(dir, sizeof dir, "%s/forms-hf", root);
    snprintf(out, sizeof out, "%s/alloc.gguf", root);
    put_text(dir, "tokenizer.json",
             "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"added_tokens\":[{\"id\":4,"
             "\"content\":\"<s>\",\"special\":true,\"single_word\":false,\"lstrip\":false,"
             "\"rstrip\":false,\"normalized\":false}],\"model\":{\"type\":\"BPE\","
             "\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[[\"a\",\"b\"]]}}");
    pl_error err = {0};
    tu_alloc_fail_at(0, 0);
    pl_status s = convert(dir, out, PL_FTYPE_Q4_0, &err);
    uint64_t n = tu_alloc_count();
    tu_alloc_reset();
    TU_CHECK(s == PL_OK && n > 0, "without failures -> %s (%s), %llu allocations", pl_status_str(s),
             err.msg, (unsigned long long)n);
    remove(out);
    for (int persistent = 0; persistent <= 1; persistent++)
        for (uint64_t k = 1; k <= n; k++) {
            tu_alloc_fail_at(k, persistent);
            s = convert(dir, out, PL_FTYPE_Q4_0, &err);
            tu_alloc_reset();
            TU_CHECK(s == PL_ERR_NOMEM && access(out, F_OK) != 0,
                     "allocation %llu of %llu (%s) -> %s (%s)", (unsigned long long)k,
                     (unsigned long long)n, persistent ? "persistent" : "transient",
                     pl_status_str(s), err.msg);
            if (s != PL_ERR_NOMEM) return;
        }
}

/* ---- bad directories --------------------------------------------------------------------------
 */

static void copy_dir(const char *from, const char *to)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", to, from, to);
    TU_CHECK(system(cmd) == 0, "%s", cmd);
}

static void edit_json(const char *dir, const char *name, const char *key, json_t *value)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    json_t *j = json_load_file(path, 0, NULL);
    if (value)
        json_object_set_new(j, key, value);
    else
        json_object_del(j, key);
    write_json(dir, name, j);
}

static void expect_failure(const char *dir, pl_status code, const char *n1, const char *n2,
                           int line)
{
    char out[256];
    snprintf(out, sizeof out, "%s/bad.gguf", root);
    pl_error err = {0};
    pl_status s = convert(dir, out, PL_FTYPE_F32, &err);
    TU_CHECK(s == code && strstr(err.msg, n1) && (!n2 || strstr(err.msg, n2)),
             "line %d: %s -> %s \"%s\", want %s naming '%s' and '%s'", line, dir, pl_status_str(s),
             err.msg, pl_status_str(code), n1, n2 ? n2 : "");
    TU_CHECK(access(out, F_OK) != 0, "line %d: a failed conversion left %s", line, out);
    remove(out); /* a wrong success fails its own line only */
}
#define EXPECT_FAILURE(dir, code, n1, n2) expect_failure((dir), (code), (n1), (n2), __LINE__)

static void convert_rejects_bad_directories(void)
{
    char good[128], bad[128], path[300];
    snprintf(good, sizeof good, "%s/qwen2-hf", root);
    snprintf(bad, sizeof bad, "%s/bad-hf", root);

    EXPECT_FAILURE("/nonexistent/dir", PL_ERR_NOT_FOUND, "not a directory", NULL);

    copy_dir(good, bad);
    snprintf(path, sizeof path, "%s/config.json", bad);
    remove(path);
    EXPECT_FAILURE(bad, PL_ERR_NOT_FOUND, "config.json", "missing");

    copy_dir(good, bad);
    edit_json(bad, "config.json", "architectures", json_pack("[s]", "MistralForCausalLM"));
    EXPECT_FAILURE(bad, PL_ERR_UNSUPPORTED, "MistralForCausalLM", "not one plumb converts");

    copy_dir(good, bad);
    edit_json(bad, "config.json", "hidden_size", json_string("64"));
    EXPECT_FAILURE(bad, PL_ERR_TYPE, "config.json", "hidden_size");

    copy_dir(good, bad); /* NTK "dynamic" scaling: no llama.cpp key says it */
    edit_json(bad, "config.json", "rope_scaling",
              json_pack("{s:s,s:f}", "type", "dynamic", "factor", 4.0));
    EXPECT_FAILURE(bad, PL_ERR_UNSUPPORTED, "rope_scaling", "'dynamic'");
    edit_json(bad, "config.json", "rope_scaling", /* llama3 divisors exist for llama only */
              json_pack("{s:s,s:f,s:f,s:f,s:i}", "rope_type", "llama3", "factor", 8.0,
                        "low_freq_factor", 1.0, "high_freq_factor", 4.0,
                        "original_max_position_embeddings", 8192));
    EXPECT_FAILURE(bad, PL_ERR_UNSUPPORTED, "'llama3'", "qwen2");
    edit_json(bad, "config.json", "rope_scaling", /* DeepSeek's yarn multipliers */
              json_pack("{s:s,s:f,s:f}", "type", "yarn", "factor", 4.0, "mscale", 0.707));
    EXPECT_FAILURE(bad, PL_ERR_UNSUPPORTED, "rope_scaling", "mscale");
    edit_json(bad, "config.json", "rope_scaling", NULL);

    copy_dir(good, bad); /* transformers 5: rope_theta inside rope_parameters */
    edit_json(bad, "config.json", "rope_parameters",
              json_pack("{s:s,s:f}", "rope_type", "yarn", "rope_theta", 5e5));
    EXPECT_FAILURE(bad, PL_ERR_NOT_FOUND, "rope_parameters", "'factor' is missing");
    edit_json(bad, "config.json", "layer_types",
              json_pack("[s,s]", "full_attention", "sliding_attention"));
    edit_json(bad, "config.json", "rope_parameters", NULL);
    EXPECT_FAILURE(bad, PL_ERR_UNSUPPORTED, "layer_types[1]", NULL);

    copy_dir(good, bad); /* shape mismatch: config says a wider FFN than the weights hold */
    edit_json(bad, "config.json", "intermediate_size", json_integer(128));
    EXPECT_FAILURE(bad, PL_ERR_TYPE, "model.layers.0.mlp.gate_proj.weight", "[128, 64]");

    copy_dir(good, bad); /* a missing tensor: one layer more than the weights hold */
    edit_json(bad, "config.json", "num_hidden_layers", json_integer(3));
    EXPECT_FAILURE(bad, PL_ERR_NOT_FOUND, "model.layers.2.input_layernorm.weight", "missing");

    copy_dir(good, bad); /* a tensor left over: one layer fewer */
    edit_json(bad, "config.json", "num_hidden_layers", json_integer(1));
    EXPECT_FAILURE(bad, PL_ERR_UNSUPPORTED, "model.layers.1.", "not part of");

    /* past the loader's own bounds (arch.c's keys): refused here, not written for load to refuse */
    copy_dir(good, bad);
    edit_json(bad, "config.json", "num_hidden_layers", json_integer(1025));
    EXPECT_FAILURE(bad, PL_ERR_LIMIT, "num_hidden_layers", "1025");
    copy_dir(good, bad);
    edit_json(bad, "config.json", "num_attention_heads", json_integer(1025));
    EXPECT_FAILURE(bad, PL_ERR_LIMIT, "num_attention_heads", "1025");
    copy_dir(good, bad);
    edit_json(bad, "config.json", "intermediate_size", json_integer((1 << 18) + 1));
    EXPECT_FAILURE(bad, PL_ERR_LIMIT, "intermediate_size", "262145");

    copy_dir(good, bad);
    snprintf(path, sizeof path, "%s/tokenizer.json", bad);
    remove(path);
    EXPECT_FAILURE(bad, PL_ERR_NOT_FOUND, "tokenizer.json", "missing");

    copy_dir(good, bad);
    edit_json(bad, "tokenizer.json", "pre_tokenizer",
              json_pack("{s:s,s:b}", "type", "Whitespace", "x", 0));
    EXPECT_FAILURE(bad, PL_ERR_UNSUPPORTED, "pre_tokenizer", NULL);

    copy_dir(good, bad);
    edit_json(bad, "tokenizer_config.json", "eos_token", json_string("<|nope|>"));
    EXPECT_FAILURE(bad, PL_ERR_NOT_FOUND, "eos_token", "<|nope|>");

    copy_dir(good, bad);
    snprintf(path, sizeof path, "%s/model.safetensors", bad);
    FILE *f = fopen(path, "r+b");
    fputc(0xff, f); /* the header length now points past the end */
    fputc(0xff, f);
    fputc(0xff, f);
    fclose(f);
    EXPECT_FAILURE(bad, PL_ERR_FORMAT, "model.safetensors", "header length");

    copy_dir(good, bad);
    snprintf(path, sizeof path, "%s/model.safetensors", bad);
    remove(path);
    EXPECT_FAILURE(bad, PL_ERR_NOT_FOUND, "model.safetensors", NULL);
}

/* ---- mixtures of experts ---------------------------------------------------------------------
 */

/* The three MoE classes convert reads, as the hub's checkpoints hold them: one 2-D tensor per
 * expert, stacked by convert. */
typedef enum moe_class { MOE_MIXTRAL, MOE_QWEN2, MOE_QWEN3, N_MOE } moe_class;
static const struct moe_desc {
    const char *hf, *arch, *tag; /* the class, its GGUF architecture, a directory tag */
    const char *block;           /* the FFN's module: "block_sparse_moe" or "mlp" */
    const char *w[3];            /* an expert's gate, up and down projections */
    const char *count_key;       /* the expert count the hub's configs say */
} moe_desc[N_MOE] = {
    [MOE_MIXTRAL] = {"MixtralForCausalLM",
                     "llama",
                     "mixtral",
                     "block_sparse_moe",
                     {"w1", "w3", "w2"},
                     "num_local_experts"},
    [MOE_QWEN2] = {"Qwen2MoeForCausalLM",
                   "qwen2moe",
                   "qwen2moe",
                   "mlp",
                   {"gate_proj", "up_proj", "down_proj"},
                   "num_experts"},
    [MOE_QWEN3] = {"Qwen3MoeForCausalLM",
                   "qwen3moe",
                   "qwen3moe",
                   "mlp",
                   {"gate_proj", "up_proj", "down_proj"},
                   "num_experts"},
};
/* E embd, H/Hkv heads of D, L layers, V vocab, F dense FFN (Mixtral's experts' width), FX the
 * Qwen experts' width, FS the Qwen2 shared expert's, U experts per token, X experts. */
enum { MOE_E = 32, MOE_H = 2, MOE_HKV = 1, MOE_D = 16, MOE_L = 2, MOE_V = 8 };
enum { MOE_F = 48, MOE_FX = 24, MOE_FS = 40, MOE_U = 2, MOE_X = 4 };

static int64_t moe_width(moe_class k)
{
    return k == MOE_MIXTRAL ? MOE_F : MOE_FX;
}

/* One thing changed in a written checkpoint (NULL: nothing). */
typedef struct moe_edit {
    const char *drop;   /* this tensor left out */
    const char *longer; /* this tensor one row longer */
    const char *f64;    /* this tensor stored as F64 */
    const char *extra;  /* a tensor more, shaped as an expert's gate projection */
} moe_edit;

static int same_name(const char *a, const char *b)
{
    return a && strcmp(a, b) == 0;
}

/* Adds the tensor fmt names, of random values, unless ed drops it, lengthens it or makes it F64. */
static void moe_add(st_out *o, tu_rng *r, const moe_edit *ed, int64_t rows, int64_t cols,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void moe_add(st_out *o, tu_rng *r, const moe_edit *ed, int64_t rows, int64_t cols,
                    const char *fmt, ...)
{
    char name[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    if (same_name(ed->drop, name)) return;
    if (same_name(ed->longer, name)) rows++;
    const int f64 = same_name(ed->f64, name);
    const size_t n = (size_t)(rows * (cols ? cols : 1)), size = f64 ? 8 : 4;
    uint8_t *x = malloc(n * size);
    for (size_t i = 0; i < n; i++) {
        const double v = tu_rng_normal(r) * 0.1;
        const float f = (float)v;
        memcpy(x + i * size, f64 ? (const void *)&v : (const void *)&f, size);
    }
    st_add(o, name, f64 ? "F64" : "F32", rows, cols, x, n * size);
    free(x);
}

/* A two-layer checkpoint of class k with X experts of random F32 weights, tied embeddings and a
 * byte-level BPE tokenizer, with ed's one change. */
static void write_tiny_moe(const char *dir, moe_class k, int64_t X, const moe_edit *ed)
{
    const struct moe_desc *m = &moe_desc[k];
    const int64_t E = MOE_E, QD = MOE_H * MOE_D, KVD = MOE_HKV * MOE_D, FX = moe_width(k);
    mkdir(dir, 0755);
    json_t *cfg = json_pack(
        "{s:[s],s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:s,s:I,s:I}", "architectures", m->hf,
        "hidden_size", (json_int_t)E, "intermediate_size", (json_int_t)MOE_F, "num_hidden_layers",
        (json_int_t)MOE_L, "num_attention_heads", (json_int_t)MOE_H, "num_key_value_heads",
        (json_int_t)MOE_HKV, "max_position_embeddings", (json_int_t)64, "vocab_size",
        (json_int_t)MOE_V, "tie_word_embeddings", 1, "hidden_act", "silu", m->count_key,
        (json_int_t)X, "num_experts_per_tok", (json_int_t)MOE_U);
    if (k != MOE_MIXTRAL) {
        json_object_set_new(cfg, "moe_intermediate_size", json_integer(MOE_FX));
        json_object_set_new(cfg, "decoder_sparse_step", json_integer(1));
        json_object_set_new(cfg, "mlp_only_layers", json_array());
        json_object_set_new(cfg, "norm_topk_prob", json_boolean(k == MOE_QWEN3));
    }
    if (k == MOE_QWEN2)
        json_object_set_new(cfg, "shared_expert_intermediate_size", json_integer(MOE_FS));
    write_json(dir, "config.json", cfg);
    put_text(dir, "tokenizer.json",
             "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"added_tokens\":[{\"id\":4,"
             "\"content\":\"<s>\",\"special\":true,\"single_word\":false,\"lstrip\":false,"
             "\"rstrip\":false,\"normalized\":false}],\"model\":{\"type\":\"BPE\","
             "\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[[\"a\",\"b\"]]}}");

    st_out o = {json_object(), NULL, 0, 0};
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    moe_add(&o, &r, ed, MOE_V, E, "model.embed_tokens.weight");
    moe_add(&o, &r, ed, E, 0, "model.norm.weight");
    for (int l = 0; l < MOE_L; l++) {
#define LAYER_T(rows, cols, part) moe_add(&o, &r, ed, rows, cols, "model.layers.%d." part, l)
        LAYER_T(E, 0, "input_layernorm.weight");
        LAYER_T(QD, E, "self_attn.q_proj.weight");
        LAYER_T(KVD, E, "self_attn.k_proj.weight");
        LAYER_T(KVD, E, "self_attn.v_proj.weight");
        if (k == MOE_QWEN2) {
            LAYER_T(QD, 0, "self_attn.q_proj.bias");
            LAYER_T(KVD, 0, "self_attn.k_proj.bias");
            LAYER_T(KVD, 0, "self_attn.v_proj.bias");
        }
        if (k == MOE_QWEN3) {
            LAYER_T(MOE_D, 0, "self_attn.q_norm.weight");
            LAYER_T(MOE_D, 0, "self_attn.k_norm.weight");
        }
        LAYER_T(E, QD, "self_attn.o_proj.weight");
        LAYER_T(E, 0, "post_attention_layernorm.weight");
        moe_add(&o, &r, ed, X, E, "model.layers.%d.%s.gate.weight", l, m->block);
        for (int e = 0; e < X; e++)
            for (int p = 0; p < 3; p++)
                moe_add(&o, &r, ed, p < 2 ? FX : E, p < 2 ? E : FX,
                        "model.layers.%d.%s.experts.%d.%s.weight", l, m->block, e, m->w[p]);
        if (k == MOE_QWEN2) {
            LAYER_T(MOE_FS, E, "mlp.shared_expert.gate_proj.weight");
            LAYER_T(MOE_FS, E, "mlp.shared_expert.up_proj.weight");
            LAYER_T(E, MOE_FS, "mlp.shared_expert.down_proj.weight");
            LAYER_T(1, E, "mlp.shared_expert_gate.weight");
        }
#undef LAYER_T
    }
    if (ed->extra) moe_add(&o, &r, &(moe_edit){0}, FX, E, "%s", ed->extra);
    st_write(&o, dir, "model.safetensors");
}

/* Writes class k's valid checkpoint with X experts to root/moe-<tag>-<X>-hf and converts it to
 * out: each refusal below starts from a checkpoint that converts. 0 when it does not. */
static int moe_good(char *dir, size_t cap, const char *out, moe_class k, int64_t X)
{
    snprintf(dir, cap, "%s/moe-%s-%lld-hf", root, moe_desc[k].tag, (long long)X);
    write_tiny_moe(dir, k, X, &(moe_edit){0});
    pl_error err = {0};
    pl_status s = convert(dir, out, PL_FTYPE_F32, &err);
    TU_CHECK(s == PL_OK, "%s, %lld experts (seed %llu): the valid checkpoint -> %s: %s",
             moe_desc[k].hf, (long long)X, (unsigned long long)tu_seed(), pl_status_str(s),
             err.msg);
    return s == PL_OK;
}

/* root/moe-bad-<tag>-hf: good with config.json's key set to value (NULL: deleted). */
static const char *moe_bad_config(const char *good, moe_class k, const char *key, json_t *value)
{
    static char bad[160];
    snprintf(bad, sizeof bad, "%s/moe-bad-%s-hf", root, moe_desc[k].tag);
    copy_dir(good, bad);
    edit_json(bad, "config.json", key, value);
    return bad;
}

/* The hub's per-expert tensors become one [in, out, X] tensor per projection, expert e's
 * bytes at slice e, with the expert counts and widths as llama.cpp's converters write them. */
static void convert_moe_stacks_the_hubs_experts(void)
{
    for (int k = 0; k < N_MOE; k++) {
        const struct moe_desc *m = &moe_desc[k];
        char dir[160], out[160], key[96], hname[128];
        snprintf(out, sizeof out, "%s/moe-%s.gguf", root, m->tag);
        if (!moe_good(dir, sizeof dir, out, (moe_class)k, MOE_X)) continue;
        pl_gguf *g = NULL;
        pl_safetensors *st = NULL;
        pl_error err = {0};
        TU_CHECK(pl_gguf_open(&g, out, &err) == PL_OK &&
                     pl_safetensors_open_dir(&st, dir, &err) == PL_OK,
                 "%s: %s", m->hf, err.msg);
        if (!g || !st) {
            pl_gguf_free(g);
            pl_safetensors_free(st);
            continue;
        }
#define ARCH_KEY(s) (snprintf(key, sizeof key, "%s." s, m->arch), key)
        TU_CHECK(get_u32(g, ARCH_KEY("expert_count")) == MOE_X &&
                     get_u32(g, ARCH_KEY("expert_used_count")) == MOE_U,
                 "%s: expert_count %u, expert_used_count %u, want %d and %d", m->hf,
                 get_u32(g, ARCH_KEY("expert_count")), get_u32(g, ARCH_KEY("expert_used_count")),
                 MOE_X, MOE_U);
        if (k != MOE_MIXTRAL)
            TU_CHECK(get_u32(g, ARCH_KEY("expert_feed_forward_length")) == MOE_FX,
                     "%s: expert_feed_forward_length %u, want %d", m->hf,
                     get_u32(g, ARCH_KEY("expert_feed_forward_length")), MOE_FX);
        if (k == MOE_QWEN2)
            TU_CHECK(get_u32(g, ARCH_KEY("expert_shared_feed_forward_length")) == MOE_FS,
                     "%s: expert_shared_feed_forward_length %u, want %d", m->hf,
                     get_u32(g, ARCH_KEY("expert_shared_feed_forward_length")), MOE_FS);
#undef ARCH_KEY
        static const char *const gguf[3] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
        for (int p = 0; p < 3; p++) {
            snprintf(key, sizeof key, "blk.1.%s.weight", gguf[p]);
            pl_tensor_info t = {0};
            int64_t i = pl_gguf_find_tensor(g, key);
            const int64_t in = p < 2 ? MOE_E : moe_width((moe_class)k),
                          outd = p < 2 ? moe_width((moe_class)k) : MOE_E;
            TU_CHECK(i >= 0 && pl_gguf_tensor(g, (uint64_t)i, &t, NULL) == PL_OK && t.n_dims == 3 &&
                         t.ne[0] == in && t.ne[1] == outd && t.ne[2] == MOE_X &&
                         t.type == PL_TYPE_F32,
                     "%s: %s is [%lld, %lld, %lld] of type %u, want [%lld, %lld, %d] F32", m->hf,
                     key, (long long)t.ne[0], (long long)t.ne[1], (long long)t.ne[2], t.type,
                     (long long)in, (long long)outd, MOE_X);
            if (i < 0 || t.n_dims != 3) continue;
            const size_t per = (size_t)(in * outd) * sizeof(float);
            for (int e = 0; e < MOE_X; e++) {
                snprintf(hname, sizeof hname, "model.layers.1.%s.experts.%d.%s.weight", m->block, e,
                         m->w[p]);
                const pl_st_tensor *src = pl_safetensors_find(st, hname);
                TU_CHECK(src && src->n_bytes == per &&
                             memcmp((const uint8_t *)t.data + (size_t)e * per, src->data, per) == 0,
                         "%s: %s slice %d is not %s (seed %llu)", m->hf, key, e, hname,
                         (unsigned long long)tu_seed());
            }
        }
        pl_safetensors_free(st);
        pl_gguf_free(g);
    }
}

/* num_experts / num_local_experts: one of them, 1..4096, both only when they agree. */
static void convert_moe_rejects_bad_expert_counts(void)
{
    for (int k = 0; k < N_MOE; k++) {
        const moe_class c = (moe_class)k;
        const char *key = moe_desc[k].count_key;
        const char *other = k == MOE_MIXTRAL ? "num_experts" : "num_local_experts";
        char good[160], out[160];
        snprintf(out, sizeof out, "%s/moe-counts.gguf", root);
        if (!moe_good(good, sizeof good, out, c, MOE_X)) continue;

        const char *bad = moe_bad_config(good, c, other, json_integer(MOE_X));
        pl_error err = {0};
        pl_status s = convert(bad, out, PL_FTYPE_F32, &err); /* both, agreeing */
        TU_CHECK(s == PL_OK, "%s: %s and %s both %d -> %s: %s", moe_desc[k].hf, key, other, MOE_X,
                 pl_status_str(s), err.msg);
        bad = moe_bad_config(good, c, other, json_integer(2 * MOE_X));
        EXPECT_FAILURE(bad, PL_ERR_FORMAT, "num_experts", "num_local_experts");
        bad =
            moe_bad_config(good, c, other, json_integer(0)); /* 0 beside a count is no agreement */
        EXPECT_FAILURE(bad, PL_ERR_LIMIT, other, "= 0");
        EXPECT_FAILURE(moe_bad_config(good, c, key, NULL), PL_ERR_NOT_FOUND, key, "missing");
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(0)), PL_ERR_LIMIT, key, "= 0");
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(4097)), PL_ERR_LIMIT, key, "4097");
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(-4)), PL_ERR_LIMIT, key, "-4");
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_string("4")), PL_ERR_TYPE, key,
                       "not an integer");
        /* more experts than the weights hold: the router, the first tensor sized by them */
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(4096)), PL_ERR_TYPE,
                       ".gate.weight", "[4096, 32]");
    }
}

/* num_experts_per_tok: 1..min(experts, PL_MOE_MAX_USED), and present. */
static void convert_moe_rejects_bad_experts_per_token(void)
{
    for (int k = 0; k < N_MOE; k++) {
        const moe_class c = (moe_class)k;
        char good[160], out[160];
        snprintf(out, sizeof out, "%s/moe-used.gguf", root);
        if (!moe_good(good, sizeof good, out, c, MOE_X)) continue;
        const char *key = "num_experts_per_tok";
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(0)), PL_ERR_LIMIT, key, "= 0");
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(MOE_X + 1)), PL_ERR_LIMIT, key,
                       "1..4");
        EXPECT_FAILURE(moe_bad_config(good, c, key, NULL), PL_ERR_NOT_FOUND, key, "missing");
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_real(2.0)), PL_ERR_TYPE, key,
                       "not an integer");
        /* 72 experts: the limit is PL_MOE_MAX_USED (64), not the expert count */
        if (!moe_good(good, sizeof good, out, c, 72)) continue;
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(65)), PL_ERR_LIMIT, key, "1..64");
    }
}

/* What llama.cpp's qwen2moe and qwen3moe compute: every layer sparse, the top-k weights
 * renormalised (qwen3moe) or not (qwen2moe); any other routing is refused by its key. */
static void convert_moe_rejects_routing_llama_cpp_does_not_compute(void)
{
    for (int k = MOE_QWEN2; k <= MOE_QWEN3; k++) {
        const moe_class c = (moe_class)k;
        char good[160], out[160];
        snprintf(out, sizeof out, "%s/moe-routing.gguf", root);
        if (!moe_good(good, sizeof good, out, c, MOE_X)) continue;
        EXPECT_FAILURE(moe_bad_config(good, c, "norm_topk_prob", json_boolean(k == MOE_QWEN2)),
                       PL_ERR_UNSUPPORTED, "norm_topk_prob", moe_desc[k].arch);
        EXPECT_FAILURE(moe_bad_config(good, c, "norm_topk_prob", json_string("true")), PL_ERR_TYPE,
                       "norm_topk_prob", "not a boolean");
        if (k == MOE_QWEN3) /* transformers' default is false */
            EXPECT_FAILURE(moe_bad_config(good, c, "norm_topk_prob", NULL), PL_ERR_UNSUPPORTED,
                           "norm_topk_prob false", NULL);
        EXPECT_FAILURE(moe_bad_config(good, c, "decoder_sparse_step", json_integer(2)),
                       PL_ERR_UNSUPPORTED, "decoder_sparse_step 2", NULL);
        EXPECT_FAILURE(moe_bad_config(good, c, "mlp_only_layers", json_pack("[i]", 0)),
                       PL_ERR_UNSUPPORTED, "mlp_only_layers", "not empty");
        EXPECT_FAILURE(moe_bad_config(good, c, "mlp_only_layers", json_string("0")), PL_ERR_TYPE,
                       "mlp_only_layers", "not a list");
    }
}

/* The experts' widths: present, >= 1, and the tensors' shapes. */
static void convert_moe_rejects_bad_expert_widths(void)
{
    char good[160], out[160];
    snprintf(out, sizeof out, "%s/moe-widths.gguf", root);
    for (int k = 0; k < N_MOE; k++) {
        const moe_class c = (moe_class)k;
        const struct moe_desc *m = &moe_desc[k];
        if (!moe_good(good, sizeof good, out, c, MOE_X)) continue;
        char expert0[128];
        snprintf(expert0, sizeof expert0, "model.layers.0.%s.experts.0.%s.weight", m->block,
                 m->w[0]);
        /* Mixtral's experts are intermediate_size wide */
        const char *key = k == MOE_MIXTRAL ? "intermediate_size" : "moe_intermediate_size";
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(moe_width(c) + 8)), PL_ERR_TYPE,
                       expert0, "shape");
        if (k == MOE_MIXTRAL) continue;
        EXPECT_FAILURE(moe_bad_config(good, c, key, NULL), PL_ERR_NOT_FOUND, key, "missing");
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(0)), PL_ERR_LIMIT, key, "= 0");
        if (k != MOE_QWEN2) continue;
        key = "shared_expert_intermediate_size";
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(MOE_FS + 8)), PL_ERR_TYPE,
                       "model.layers.0.mlp.shared_expert.gate_proj.weight", "shape");
        EXPECT_FAILURE(moe_bad_config(good, c, key, NULL), PL_ERR_NOT_FOUND, key, "missing");
        EXPECT_FAILURE(moe_bad_config(good, c, key, json_integer(0)), PL_ERR_LIMIT, key, "= 0");
    }
}

/* Each expert tensor, the router and the shared expert's gate: present, of the shape and a
 * dtype convert reads; an expert past the count, or a dense FFN, is refused by name. */
static void convert_moe_rejects_bad_expert_tensors(void)
{
    char good[160], bad[160], out[160];
    snprintf(out, sizeof out, "%s/moe-tensors.gguf", root);
    for (int k = 0; k < N_MOE; k++) {
        const moe_class c = (moe_class)k;
        const struct moe_desc *m = &moe_desc[k];
        if (!moe_good(good, sizeof good, out, c, MOE_X)) continue;
        snprintf(bad, sizeof bad, "%s/moe-bad-%s-hf", root, m->tag);
        char t[3][128], router[128], past[128], dense[128];
        for (int p = 0; p < 3; p++) /* expert 3 of layer 1 */
            snprintf(t[p], sizeof t[p], "model.layers.1.%s.experts.3.%s.weight", m->block, m->w[p]);
        snprintf(router, sizeof router, "model.layers.1.%s.gate.weight", m->block);
        snprintf(past, sizeof past, "model.layers.0.%s.experts.%d.%s.weight", m->block, MOE_X,
                 m->w[0]);
        snprintf(dense, sizeof dense, "model.layers.0.mlp.gate_proj.weight");
        for (int p = 0; p < 3; p++) {
            write_tiny_moe(bad, c, MOE_X, &(moe_edit){.drop = t[p]});
            EXPECT_FAILURE(bad, PL_ERR_NOT_FOUND, t[p], "missing");
        }
        write_tiny_moe(bad, c, MOE_X, &(moe_edit){.longer = t[2]});
        EXPECT_FAILURE(bad, PL_ERR_TYPE, t[2], "shape [33, ");
        write_tiny_moe(bad, c, MOE_X, &(moe_edit){.f64 = t[1]});
        EXPECT_FAILURE(bad, PL_ERR_UNSUPPORTED, t[1], "F64");
        write_tiny_moe(bad, c, MOE_X, &(moe_edit){.extra = past});
        EXPECT_FAILURE(bad, PL_ERR_UNSUPPORTED, past, "not part of");
        write_tiny_moe(bad, c, MOE_X, &(moe_edit){.extra = dense});
        EXPECT_FAILURE(bad, PL_ERR_UNSUPPORTED, dense, "not part of");
        write_tiny_moe(bad, c, MOE_X, &(moe_edit){.drop = router});
        EXPECT_FAILURE(bad, PL_ERR_NOT_FOUND, router, "missing");
        write_tiny_moe(bad, c, MOE_X, &(moe_edit){.longer = router});
        EXPECT_FAILURE(bad, PL_ERR_TYPE, router, "shape [5, ");
        if (k != MOE_QWEN2) continue;
        static const char *const shexp[] = {"model.layers.1.mlp.shared_expert_gate.weight",
                                            "model.layers.1.mlp.shared_expert.down_proj.weight"};
        for (int i = 0; i < 2; i++) {
            write_tiny_moe(bad, c, MOE_X, &(moe_edit){.drop = shexp[i]});
            EXPECT_FAILURE(bad, PL_ERR_NOT_FOUND, shexp[i], "missing");
        }
        write_tiny_moe(bad, c, MOE_X, &(moe_edit){.longer = shexp[0]});
        EXPECT_FAILURE(bad, PL_ERR_TYPE, shexp[0], "shape [2, ");
    }
}

/* The command: exit 0 and a summary on a good directory; 1 with the library's message on a bad
 * one; 2 on a bad command line. PLUMB_CLI is the plumb binary (set by ctest). */
static int run_cli(const char *args, const char *want, int line)
{
    const char *cli = getenv("PLUMB_CLI");
    if (!cli) return -1;
    char cmd[1024], log[256];
    snprintf(log, sizeof log, "%s/cli.log", root);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>&1", cli, args, log);
    int rc = system(cmd);
    rc = rc >= 0 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    FILE *f = fopen(log, "rb");
    char text[4096] = "";
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    TU_CHECK(strstr(text, want) != NULL, "line %d: plumb %s: output \"%s\" lacks \"%s\"", line,
             args, text, want);
    return rc;
}

static void convert_cli_exit_codes_and_messages(void)
{
    if (!getenv("PLUMB_CLI")) {
        fprintf(stderr, "PLUMB_CLI not set: skipped\n");
        return;
    }
    char args[600], bad[256], path[300];
    snprintf(bad, sizeof bad, "%s/cli-bad-hf", root);
    snprintf(args, sizeof args, "convert --type Q8_0 %s/qwen2-hf %s/cli.gguf", root, root);
    TU_CHECK(run_cli(args, "converted", __LINE__) == 0, "good directory: exit 0");
    snprintf(args, sizeof args, "convert --type Q9_9 %s/qwen2-hf %s/cli.gguf", root, root);
    TU_CHECK(run_cli(args, "Q9_9", __LINE__) == 2, "bad --type: exit 2");
    snprintf(args, sizeof args, "convert %s/qwen2-hf", root);
    TU_CHECK(run_cli(args, "expected HF_DIR OUT.gguf", __LINE__) == 2, "one argument: exit 2");
    copy_dir(strcat(strcpy(path, root), "/qwen2-hf"), bad);
    snprintf(path, sizeof path, "%s/config.json", bad);
    remove(path);
    snprintf(args, sizeof args, "convert %s %s/cli2.gguf", bad, root);
    TU_CHECK(run_cli(args, "config.json is missing", __LINE__) == 1, "missing config: exit 1");
    copy_dir(strcat(strcpy(path, root), "/qwen2-hf"), bad);
    edit_json(bad, "config.json", "architectures", json_pack("[s]", "GPT2LMHeadModel"));
    TU_CHECK(run_cli(args, "GPT2LMHeadModel", __LINE__) == 1, "unsupported architecture: exit 1");
    snprintf(path, sizeof path, "%s/cli2.gguf", root);
    TU_CHECK(access(path, F_OK) != 0, "a failed conversion left %s", path);
}

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/plumb-convert-XXXXXX");
    if (!mkdtemp(root)) return 1;
    static const tu_test tests[] = {
        {"convert_llama_round_trip_is_bit_identical", convert_llama_round_trip_is_bit_identical},
        {"convert_llama_tied_round_trip_is_bit_identical",
         convert_llama_tied_round_trip_is_bit_identical},
        {"convert_qwen2_round_trip_keeps_biases_unpermuted",
         convert_qwen2_round_trip_keeps_biases_unpermuted},
        {"convert_qwen3_round_trip_keeps_qk_norms", convert_qwen3_round_trip_keeps_qk_norms},
        {"convert_sharded_checkpoint_round_trip", convert_sharded_checkpoint_round_trip},
        {"convert_bf16_source_to_bf16_is_exact", convert_bf16_source_to_bf16_is_exact},
        {"convert_f16_source_to_f16_is_exact", convert_f16_source_to_f16_is_exact},
        {"convert_llama_permutes_q_and_k_rows", convert_llama_permutes_q_and_k_rows},
        {"convert_quantized_equals_quantize_of_f32", convert_quantized_equals_quantize_of_f32},
        {"convert_rejects_bad_directories", convert_rejects_bad_directories},
        {"convert_moe_stacks_the_hubs_experts", convert_moe_stacks_the_hubs_experts},
        {"convert_moe_rejects_bad_expert_counts", convert_moe_rejects_bad_expert_counts},
        {"convert_moe_rejects_bad_experts_per_token", convert_moe_rejects_bad_experts_per_token},
        {"convert_moe_rejects_routing_llama_cpp_does_not_compute",
         convert_moe_rejects_routing_llama_cpp_does_not_compute},
        {"convert_moe_rejects_bad_expert_widths", convert_moe_rejects_bad_expert_widths},
        {"convert_moe_rejects_bad_expert_tensors", convert_moe_rejects_bad_expert_tensors},
        {"convert_cli_exit_codes_and_messages", convert_cli_exit_codes_and_messages},
        {"convert_reads_gpt2_pre_added_tokens_and_generation_config",
         convert_reads_gpt2_pre_added_tokens_and_generation_config},
        {"convert_checks_tokenizer_json_as_tokenizers_does",
         convert_checks_tokenizer_json_as_tokenizers_does},
        {"convert_quirk_vocabularies_tokenize_as_tokenizers_does",
         convert_quirk_vocabularies_tokenize_as_tokenizers_does},
        {"convert_survives_allocation_failure", convert_survives_allocation_failure},

        {NULL, NULL},
    };
    int rc = tu_run("convert", tests);
    cleanup();
    return rc;
}
