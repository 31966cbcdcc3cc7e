/* quantize.c — row conversion through the kernel table, llama.cpp's per-tensor type rules,
 * and whole-model quantization. Not a kernel: the math is the table's. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"
#include "kernels.h"
#include "registry.h"
#include "runtime/arch.h"
#include "runtime/threads.h"

/* The best set this CPU runs, with ref for the entries it leaves out. Quantizers of every
 * set are bit-exact with ref (the conformance suites prove it), so the choice changes speed,
 * never bytes; that is why a missing entry may quietly come from ref here. */
static pl_quantize_row_fn quantizer(pl_type t)
{
    const struct pl_kernels *set = NULL;
    if (pl_kernels_select(&set, NULL, NULL) == PL_OK && set->quantize_row[t])
        return set->quantize_row[t];
    return pl_kernels_ref.quantize_row[t];
}

static pl_dequantize_row_fn dequantizer(pl_type t)
{
    const struct pl_kernels *set = NULL;
    if (pl_kernels_select(&set, NULL, NULL) == PL_OK && set->dequantize_row[t])
        return set->dequantize_row[t];
    return pl_kernels_ref.dequantize_row[t];
}

/* ---- rows ---------------------------------------------------------------------------- */

static pl_status check_rows(pl_type type, const void *dst, const void *src, int64_t n_rows,
                            int64_t row_len, int quantizing, size_t *row_bytes, pl_error *err)
{
    const char *what = quantizing ? "pl_quantize_rows" : "pl_dequantize_rows";
    if (!dst || !src) return pl_fail(err, PL_ERR_INVALID_ARG, "%s: dst or src is NULL", what);
    if (n_rows < 0 || row_len <= 0)
        return pl_fail(err, PL_ERR_INVALID_ARG, "%s: n_rows = %lld, row_len = %lld: need >= 0, > 0",
                       what, (long long)n_rows, (long long)row_len);
    if ((uint32_t)type >= PL_TYPE_COUNT || !pl_type_supported(type) ||
        !(quantizing ? pl_kernels_ref.quantize_row[type] != NULL
                     : pl_kernels_ref.dequantize_row[type] != NULL)) {
        const char *name = pl_type_name(type);
        return pl_fail(err, PL_ERR_UNSUPPORTED, "%s: type %u (%s) is not implemented", what,
                       (unsigned)type, name ? name : "unknown");
    }
    int64_t bs = pl_type_block_size(type);
    if (row_len % bs != 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "%s: row_len %lld is not a multiple of %s's block size %lld", what,
                       (long long)row_len, pl_type_name(type), (long long)bs);
    pl_status s = pl_type_row_bytes(type, row_len, row_bytes, err);
    if (s) return s;
    uint64_t total;
    int64_t elems;
    if (!pl_mul_u64(*row_bytes, (uint64_t)n_rows, &total) || total > SIZE_MAX ||
        !pl_mul_i64(n_rows, row_len, &elems) || (uint64_t)elems > SIZE_MAX / sizeof(float))
        return pl_fail(err, PL_ERR_LIMIT, "%s: %lld rows of %lld elements overflow", what,
                       (long long)n_rows, (long long)row_len);
    return PL_OK;
}

pl_status pl_quantize_rows(pl_type type, void *dst, const float *src, int64_t n_rows,
                           int64_t row_len, pl_error *err)
{
    size_t rb;
    pl_status s = check_rows(type, dst, src, n_rows, row_len, 1, &rb, err);
    if (s) return s;
    pl_quantize_row_fn q = quantizer(type);
    for (int64_t r = 0; r < n_rows; r++)
        q((char *)dst + (size_t)r * rb, src + (size_t)r * (size_t)row_len, row_len);
    return pl_ok(err);
}

pl_status pl_dequantize_rows(pl_type type, float *dst, const void *src, int64_t n_rows,
                             int64_t row_len, pl_error *err)
{
    size_t rb;
    pl_status s = check_rows(type, dst, src, n_rows, row_len, 0, &rb, err);
    if (s) return s;
    pl_dequantize_row_fn dq = dequantizer(type);
    for (int64_t r = 0; r < n_rows; r++)
        dq(dst + (size_t)r * (size_t)row_len, (const char *)src + (size_t)r * rb, row_len);
    return pl_ok(err);
}

/* ---- file types -------------------------------------------------------------------------- */

static const struct ftype_desc {
    pl_ftype ftype;
    const char *name;
    pl_type base;
} ftypes[] = {
    {PL_FTYPE_F32, "F32", PL_TYPE_F32},
    {PL_FTYPE_F16, "F16", PL_TYPE_F16},
    {PL_FTYPE_BF16, "BF16", PL_TYPE_BF16},
    {PL_FTYPE_Q8_0, "Q8_0", PL_TYPE_Q8_0},
    {PL_FTYPE_Q4_0, "Q4_0", PL_TYPE_Q4_0},
    {PL_FTYPE_Q4_1, "Q4_1", PL_TYPE_Q4_1},
    {PL_FTYPE_Q5_0, "Q5_0", PL_TYPE_Q5_0},
    {PL_FTYPE_Q5_1, "Q5_1", PL_TYPE_Q5_1},
    {PL_FTYPE_Q2_K, "Q2_K", PL_TYPE_Q2_K},
    {PL_FTYPE_Q2_K_S, "Q2_K_S", PL_TYPE_Q2_K},
    {PL_FTYPE_Q3_K_S, "Q3_K_S", PL_TYPE_Q3_K},
    {PL_FTYPE_Q3_K_M, "Q3_K_M", PL_TYPE_Q3_K},
    {PL_FTYPE_Q3_K_L, "Q3_K_L", PL_TYPE_Q3_K},
    {PL_FTYPE_Q4_K_S, "Q4_K_S", PL_TYPE_Q4_K},
    {PL_FTYPE_Q4_K_M, "Q4_K_M", PL_TYPE_Q4_K},
    {PL_FTYPE_Q5_K_S, "Q5_K_S", PL_TYPE_Q5_K},
    {PL_FTYPE_Q5_K_M, "Q5_K_M", PL_TYPE_Q5_K},
    {PL_FTYPE_Q6_K, "Q6_K", PL_TYPE_Q6_K},
    {PL_FTYPE_IQ4_NL, "IQ4_NL", PL_TYPE_IQ4_NL},
    {PL_FTYPE_IQ4_XS, "IQ4_XS", PL_TYPE_IQ4_XS},
    {PL_FTYPE_MXFP4_MOE, "MXFP4_MOE", PL_TYPE_MXFP4},
};
enum { N_FTYPES = sizeof ftypes / sizeof ftypes[0] };

/* Names llama-quantize also accepts for a mix, meaning what they mean there. */
static const struct {
    const char *name;
    pl_ftype ftype;
} ftype_aliases[] = {
    {"Q3_K", PL_FTYPE_Q3_K_M},
    {"Q4_K", PL_FTYPE_Q4_K_M},
    {"Q5_K", PL_FTYPE_Q5_K_M},
    {"MXFP4", PL_FTYPE_MXFP4_MOE},
};

#define FTYPE_CHOICES                                                                              \
    "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q2_K_S, Q3_K (= Q3_K_M), Q3_K_S, "        \
    "Q3_K_M, Q3_K_L, Q4_K (= Q4_K_M), Q4_K_S, Q4_K_M, Q5_K (= Q5_K_M), Q5_K_S, Q5_K_M, Q6_K, "     \
    "IQ4_NL, IQ4_XS, MXFP4_MOE (= MXFP4)"

static const struct ftype_desc *ftype_desc(uint32_t f)
{
    for (int i = 0; i < N_FTYPES; i++)
        if ((uint32_t)ftypes[i].ftype == f) return &ftypes[i];
    return NULL;
}

const char *pl_ftype_name(uint32_t ftype)
{
    const struct ftype_desc *d = ftype_desc(ftype);
    return d ? d->name : NULL;
}

pl_type pl_ftype_base_type(uint32_t ftype)
{
    const struct ftype_desc *d = ftype_desc(ftype);
    return d ? d->base : PL_TYPE_COUNT;
}

static int name_eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (toupper((unsigned char)*a) != toupper((unsigned char)*b)) return 0;
    return *a == *b;
}

pl_status pl_ftype_from_name(const char *name, pl_ftype *out, pl_error *err)
{
    if (!name || !out) return pl_fail(err, PL_ERR_INVALID_ARG, "name or out is NULL");
    for (int i = 0; i < N_FTYPES; i++)
        if (name_eq(name, ftypes[i].name)) {
            *out = ftypes[i].ftype;
            return pl_ok(err);
        }
    for (size_t i = 0; i < sizeof ftype_aliases / sizeof ftype_aliases[0]; i++)
        if (name_eq(name, ftype_aliases[i].name)) {
            *out = ftype_aliases[i].ftype;
            return pl_ok(err);
        }
    return pl_fail(err, PL_ERR_UNSUPPORTED, "unknown file type '%.64s': expected one of %s", name,
                   FTYPE_CHOICES);
}

/* ---- per-tensor rules (llama.cpp src/llama-quant.cpp, llama_tensor_get_type) ------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* llama.cpp's ggml_n_dims: trailing dimensions of length 1 do not count. */
static uint32_t effective_dims(uint32_t n_dims, const int64_t *ne)
{
    uint32_t d = n_dims;
    while (d > 1 && ne[d - 1] == 1) d--;
    return d;
}

/* Small or special 2-D tensors llama.cpp never quantizes (the ones our architectures or
 * common files can hold; the list follows llama_model_quantize_impl). */
static int exempt(const char *name)
{
    static const char *const parts[] = {
        "_norm.weight",
        "ffn_gate_inp.weight",
        "altup",
        "laurel",
        "per_layer_model_proj",
        "ssm_conv1d.weight",
        "shortconv.conv.weight",
        "time_mix_",
        "attn_rel_b.weight",
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(name, parts[i])) return 1;
    return strcmp(name, "position_embd.weight") == 0 || strcmp(name, "token_types.weight") == 0;
}

/* The layer of a "blk.<i>" prefix, as sscanf(name, "blk.%d.") reads it; -1 when there is
 * none (llama-quantize's order puts those tensors first). */
static int64_t layer_of(const char *name)
{
    if (strncmp(name, "blk.", 4) != 0) return -1;
    const char *p = name + 4;
    int neg = *p == '-';
    if (*p == '-' || *p == '+') p++;
    if (!isdigit((unsigned char)*p)) return -1;
    int64_t v = 0;
    for (; isdigit((unsigned char)*p); p++)
        if (v <= INT32_MAX) v = v * 10 + (*p - '0');
    return neg ? -v : v;
}

/* The first and last eighth of the layers, and every third one between them. */
static int use_more_bits(int64_t i, int64_t n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* Per type, from kernels/types.h's list: block size, and llama.cpp's fallback for a tensor whose
 * rows are no multiple of the block (the plan is pure arithmetic on names and shapes). */
#define TYPE_BLOCK(T, t, block, ...) [PL_TYPE_##T] = block,
static const int64_t type_block[PL_TYPE_COUNT] = {PL_TYPES(TYPE_BLOCK)};
#undef TYPE_BLOCK
#define TYPE_FALLBACK(T, t, block, bytes, dot, mm, weight, fallback, ...)                          \
    [PL_TYPE_##T] = PL_TYPE_##fallback + 1,
/* + 1: 0 marks a type the list does not have */
static const int type_fallback[PL_TYPE_COUNT] = {PL_TYPES(TYPE_FALLBACK)};
#undef TYPE_FALLBACK

static int is_quantized(pl_type t)
{
    return (unsigned)t < PL_TYPE_COUNT && type_block[t] > 1;
}

static int64_t block_of(pl_type t)
{
    return (unsigned)t < PL_TYPE_COUNT && type_block[t] > 0 ? type_block[t] : 1;
}

static pl_type fallback_type(pl_type t)
{
    return (unsigned)t < PL_TYPE_COUNT && type_fallback[t] ? (pl_type)(type_fallback[t] - 1)
                                                           : PL_TYPE_F16;
}

/* llama.cpp's model.type == LLM_TYPE_70B: the architecture table's size rule (arch.c). */
static int is_70b(const pl_plan_model *m)
{
    const pl_arch *a = m->arch ? pl_arch_find(m->arch, strlen(m->arch)) : NULL;
    const pl_arch_quirk_model qm = {.n_layer = m->n_layer,
                                    .n_head = m->n_head,
                                    .n_head_kv = m->n_head_kv,
                                    .n_expert = m->n_expert};
    return a && pl_arch_quirk_of(a, PL_QUIRK_QUANT_70B, &qm) != NULL;
}

static int64_t n_gqa(const pl_plan_model *m)
{
    return m->n_head_kv > 0 ? m->n_head / m->n_head_kv : 0;
}

static pl_type rule_attn_v(pl_ftype f, pl_type t, const pl_plan_model *m, int64_t i_wv)
{
    int gqa4 = n_gqa(m) >= 4;
    if (f == PL_FTYPE_Q2_K)
        t = gqa4 ? PL_TYPE_Q4_K : PL_TYPE_Q3_K;
    else if (f == PL_FTYPE_Q2_K_S && gqa4)
        t = PL_TYPE_Q4_K;
    else if (f == PL_FTYPE_Q3_K_M)
        t = i_wv < 2 ? PL_TYPE_Q5_K : PL_TYPE_Q4_K;
    else if (f == PL_FTYPE_Q3_K_L)
        t = PL_TYPE_Q5_K;
    else if ((f == PL_FTYPE_IQ4_NL || f == PL_FTYPE_IQ4_XS) && gqa4)
        t = PL_TYPE_Q5_K;
    else if ((f == PL_FTYPE_Q4_K_M || f == PL_FTYPE_Q5_K_M) &&
             use_more_bits(i_wv, m->n_attention_wv))
        t = PL_TYPE_Q6_K;
    else if (f == PL_FTYPE_Q4_K_S && i_wv < 4)
        t = PL_TYPE_Q5_K;
    /* 70B shares each V head among 8 query heads: a small tensor worth more bits */
    if (is_70b(m) && (t == PL_TYPE_Q3_K || t == PL_TYPE_Q4_K)) t = PL_TYPE_Q5_K;
    if (m->n_expert == 8) t = PL_TYPE_Q8_0;
    return t;
}

static pl_type rule_ffn_down(pl_ftype f, pl_type t, int64_t i, int64_t n)
{
    if (f == PL_FTYPE_Q2_K)
        t = PL_TYPE_Q3_K;
    else if (f == PL_FTYPE_Q2_K_S) {
        if (i < n / 8) t = PL_TYPE_Q4_K;
    } else if (f == PL_FTYPE_Q3_K_M)
        t = i < n / 16 ? PL_TYPE_Q5_K : PL_TYPE_Q4_K;
    else if (f == PL_FTYPE_Q3_K_L)
        t = PL_TYPE_Q5_K;
    else if (f == PL_FTYPE_Q4_K_M) {
        if (use_more_bits(i, n)) t = PL_TYPE_Q6_K;
    } else if (i < n / 8 && (f == PL_FTYPE_IQ4_NL || f == PL_FTYPE_IQ4_XS))
        t = PL_TYPE_Q5_K;
    else if (f == PL_FTYPE_Q5_K_M && use_more_bits(i, n))
        t = PL_TYPE_Q6_K;
    else if (f == PL_FTYPE_Q4_K_S && i < n / 8)
        t = PL_TYPE_Q5_K;
    return t;
}

static pl_type rule_attn_output(pl_ftype f, pl_type t, const pl_plan_model *m)
{
    if (m->n_expert == 8) {
        if (f == PL_FTYPE_Q2_K || f == PL_FTYPE_Q3_K_S || f == PL_FTYPE_Q3_K_M ||
            f == PL_FTYPE_IQ4_NL || f == PL_FTYPE_Q4_K_S || f == PL_FTYPE_Q4_K_M ||
            f == PL_FTYPE_IQ4_XS)
            t = PL_TYPE_Q5_K;
        return t;
    }
    if (f == PL_FTYPE_Q2_K) return PL_TYPE_Q3_K;
    if (f == PL_FTYPE_Q3_K_M) return PL_TYPE_Q4_K;
    if (f == PL_FTYPE_Q3_K_L) return PL_TYPE_Q5_K;
    return t;
}

enum { RULE_OTHER, RULE_ATTN_V, RULE_FFN_DOWN };

/* The rules in llama.cpp's order of tests: the first name that matches decides. *rule says
 * which counter llama.cpp advances for this tensor. */
static pl_status mix_type(pl_ftype f, pl_type base, const char *name, const int64_t *ne,
                          const pl_plan_model *m, int64_t i_wv, int64_t i_down, pl_type *out,
                          int *rule, pl_error *err)
{
    pl_type t = base;
    *rule = RULE_OTHER;
    if (strcmp(name, "output.weight") == 0 || (m->tied && strcmp(name, "token_embd.weight") == 0)) {
        /* the output projection decides the logits: more bits unless it cannot fit */
        if (ne[0] % block_of(base) != 0)
            t = PL_TYPE_Q8_0;
        else if (base != PL_TYPE_Q8_0)
            t = PL_TYPE_Q6_K;
    } else if (strcmp(name, "token_embd.weight") == 0) {
        /* no rule for plumb's file types */
    } else if (strstr(name, "attn_v.weight")) {
        t = rule_attn_v(f, base, m, i_wv);
        *rule = RULE_ATTN_V;
    } else if (strstr(name, "attn_k.weight")) {
        if (m->n_expert == 8) t = PL_TYPE_Q8_0;
    } else if (strstr(name, "attn_q.weight")) {
        /* rules only for the IQ3 mixes */
    } else if (strstr(name, "ffn_down")) {
        int64_t i = i_down;
        if (m->n_expert > 1) {
            /* experts are not stored layer by layer: the name says which layer */
            i = layer_of(name);
            if (i < 0 || i >= m->n_layer)
                return pl_fail(err, PL_ERR_UNSUPPORTED,
                               "tensor '%.200s': no layer in 0..%lld in the name of an expert "
                               "model's ffn_down",
                               name, (long long)m->n_layer - 1);
        }
        t = rule_ffn_down(f, base, i, m->n_layer);
        *rule = RULE_FFN_DOWN;
    } else if (strstr(name, "attn_output.weight")) {
        t = rule_attn_output(f, base, m);
    } else if (strstr(name, "attn_qkv.weight")) {
        if (f == PL_FTYPE_Q3_K_M || f == PL_FTYPE_Q3_K_L)
            t = PL_TYPE_Q4_K;
        else if (f == PL_FTYPE_Q4_K_M)
            t = PL_TYPE_Q5_K;
        else if (f == PL_FTYPE_Q5_K_M)
            t = PL_TYPE_Q6_K;
    }
    *out = t;
    return PL_OK;
}

static pl_status plan_one(pl_ftype ftype, int pure, const char *name, uint32_t n_dims,
                          const int64_t *ne, const pl_plan_model *m, int64_t i_attention_wv,
                          int64_t i_ffn_down, pl_tensor_plan *out, int *rule, pl_error *err)
{
    *rule = RULE_OTHER;
    if (!out || !name || !ne || !m)
        return pl_fail(err, PL_ERR_INVALID_ARG, "out, name, ne or m is NULL");
    memset(out, 0, sizeof *out);
    const struct ftype_desc *d = ftype_desc(ftype);
    if (!d)
        return pl_fail(err, PL_ERR_INVALID_ARG, "file type %u is not one plumb writes",
                       (unsigned)ftype);
    if (n_dims == 0 || n_dims > PL_GGUF_MAX_DIMS)
        return pl_fail(err, PL_ERR_INVALID_ARG, "tensor '%.200s': n_dims %u is not in 1..%u", name,
                       n_dims, PL_GGUF_MAX_DIMS);
    for (uint32_t i = 0; i < n_dims; i++)
        if (ne[i] <= 0)
            return pl_fail(err, PL_ERR_INVALID_ARG, "tensor '%.200s': ne[%u] = %lld", name, i,
                           (long long)ne[i]);
    if (m->n_layer < 0 || m->n_head < 0 || m->n_head_kv < 0 || m->n_expert < 0 ||
        m->n_attention_wv < 0 || i_attention_wv < 0 || i_ffn_down < 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "tensor '%.200s': negative count (n_layer %lld, n_head %lld, n_head_kv "
                       "%lld, n_expert %lld, n_attention_wv %lld, i_attention_wv %lld, i_ffn_down "
                       "%lld)",
                       name, (long long)m->n_layer, (long long)m->n_head, (long long)m->n_head_kv,
                       (long long)m->n_expert, (long long)m->n_attention_wv,
                       (long long)i_attention_wv, (long long)i_ffn_down);
    out->quantize = ends_with(name, "weight") && effective_dims(n_dims, ne) >= 2 && !exempt(name);
    if (!out->quantize) return pl_ok(err);

    pl_type t = d->base;
    if (!pure && ftype == PL_FTYPE_MXFP4_MOE) {
        /* llama.cpp's first rule for it: the experts (a third dimension) MXFP4, the rest Q8_0 */
        t = n_dims >= 3 && ne[2] > 1 ? PL_TYPE_MXFP4 : PL_TYPE_Q8_0;
    } else if (!pure && is_quantized(d->base)) {
        pl_status s =
            mix_type(ftype, d->base, name, ne, m, i_attention_wv, i_ffn_down, &t, rule, err);
        if (s) return s;
    }
    out->wanted = t;
    while (ne[0] % block_of(t) != 0) t = fallback_type(t);
    out->type = t;
    out->fallback = t != out->wanted;
    return pl_ok(err);
}

pl_status pl_ftype_tensor_plan(pl_ftype ftype, int pure, const char *name, uint32_t n_dims,
                               const int64_t *ne, const pl_plan_model *m, int64_t i_attention_wv,
                               int64_t i_ffn_down, pl_tensor_plan *out, pl_error *err)
{
    int rule;
    return plan_one(ftype, pure, name, n_dims, ne, m, i_attention_wv, i_ffn_down, out, &rule, err);
}

/* llama-quantize's tensor order (llama_model_loader's weight_name_comparer): by layer, the
 * tensors without one first, then by name, byte-wise. */
static int llama_order(const char *a, const char *b)
{
    int64_t la = layer_of(a), lb = layer_of(b);
    if (la != lb) return la < lb ? -1 : 1;
    return strcmp(a, b);
}

pl_status pl_ftype_plan_tensors(pl_ftype ftype, int pure, const pl_plan_model *m,
                                const pl_tensor_spec *specs, uint64_t n, pl_tensor_plan *out,
                                pl_error *err)
{
    if (!m || (n && (!specs || !out)))
        return pl_fail(err, PL_ERR_INVALID_ARG, "m, specs or out is NULL");
    if (n > SIZE_MAX / sizeof(uint64_t))
        return pl_fail(err, PL_ERR_LIMIT, "%llu tensors", (unsigned long long)n);
    pl_plan_model mm = *m;
    mm.tied = 1;
    mm.n_attention_wv = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *nm = specs[i].name;
        if (!nm)
            return pl_fail(err, PL_ERR_INVALID_ARG, "tensor %llu has no name",
                           (unsigned long long)i);
        if (strstr(nm, "attn_v.weight") || strstr(nm, "attn_qkv.weight") ||
            strstr(nm, "attn_kv_b.weight"))
            mm.n_attention_wv++;
        else if (strcmp(nm, "output.weight") == 0)
            mm.tied = 0;
    }
    /* the counters advance in llama-quantize's order: an insertion sort of indices is enough
     * for the few hundred tensors of a model, and allocation-free paths are not needed here */
    uint64_t *ord = pl_malloc(n ? (size_t)n * sizeof *ord : 1);
    if (!ord)
        return pl_fail(err, PL_ERR_NOMEM, "no memory to order %llu tensors", (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t j = i;
        while (j > 0 && llama_order(specs[ord[j - 1]].name, specs[i].name) > 0) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = i;
    }
    int64_t i_wv = 0, i_down = 0;
    pl_status s = PL_OK;
    for (uint64_t k = 0; k < n && !s; k++) {
        const pl_tensor_spec *t = &specs[ord[k]];
        int rule;
        s = plan_one(ftype, pure, t->name, t->n_dims, t->ne, &mm, i_wv, i_down, &out[ord[k]], &rule,
                     err);
        /* llama.cpp counts only where its rules run: quantized tensors, mixes not pure */
        i_wv += rule == RULE_ATTN_V;
        i_down += rule == RULE_FFN_DOWN;
    }
    pl_free(ord);
    return s ? s : pl_ok(err);
}

/* ---- model quantization ------------------------------------------------------------------ */

/* Elements per conversion step: bounds the scratch, sets the progress granularity and is
 * what the thread pool splits (by rows). */
#define CHUNK_ELEMS ((int64_t)1 << 22)

typedef struct qtensor {
    pl_tensor_info in;
    char *name;       /* NUL-terminated copy */
    pl_type out_type; /* == in.type: copied */
    uint64_t n_elems;
} qtensor;

typedef struct qjob {
    const pl_gguf *g;
    qtensor *t;
    uint64_t n;
    float *scratch;  /* CHUNK_ELEMS floats, at least one row */
    uint8_t *staged; /* aligned copy of a chunk's source when the mapping is misaligned */
    pl_pool *pool;   /* NULL: the calling thread does everything */
    uint64_t done, total;
    const pl_quantize_params *p;
} qjob;

/* One step: rows [i0, i1) of a chunk, dequantized into scratch and requantized into dst.
 * Rows are independent, so any split among threads gives the same bytes. */
typedef struct qchunk {
    pl_dequantize_row_fn dq;
    pl_quantize_row_fn q;
    const uint8_t *src;
    size_t in_rb;
    uint8_t *dst;
    size_t out_rb;
    float *scratch;
    int64_t K;
} qchunk;

static void qchunk_rows(void *ctx, int64_t i0, int64_t i1, int thread)
{
    const qchunk *c = ctx;
    (void)thread;
    for (int64_t r = i0; r < i1; r++) {
        float *x = c->scratch + r * c->K;
        c->dq(x, c->src + (size_t)r * c->in_rb, c->K);
        c->q(c->dst + (size_t)r * c->out_rb, x, c->K);
    }
}

static pl_status report(qjob *j, pl_error *err)
{
    if (j->p->progress && j->p->progress(j->p->progress_user, j->done, j->total) != 0)
        return pl_fail(err, PL_ERR_CANCELLED, "quantization cancelled by the progress callback");
    return PL_OK;
}

static pl_status qfill(void *user, uint64_t i, void *dst, uint64_t n_bytes, pl_error *err)
{
    qjob *j = user;
    qtensor *t = &j->t[i];
    pl_status s;
    if (t->out_type == t->in.type) {
        memcpy(dst, t->in.data, (size_t)n_bytes);
        j->done += t->n_elems;
        return report(j, err);
    }
    int64_t K = t->in.ne[0];
    int64_t rows = (int64_t)(t->n_elems / (uint64_t)K);
    int64_t step = CHUNK_ELEMS / K > 0 ? CHUNK_ELEMS / K : 1;
    qchunk c = {
        .dq = dequantizer(t->in.type), .q = quantizer(t->out_type), .scratch = j->scratch, .K = K};
    /* the plan fits the output type's block to K; the reader checked the input's */
    if ((s = pl_type_row_bytes(t->in.type, K, &c.in_rb, err)) ||
        (s = pl_type_row_bytes(t->out_type, K, &c.out_rb, err)))
        return s;
    for (int64_t r = 0; r < rows; r += step) {
        int64_t nr = rows - r < step ? rows - r : step;
        c.src = (const uint8_t *)t->in.data + (size_t)r * c.in_rb;
        c.dst = (uint8_t *)dst + (size_t)r * c.out_rb;
        if ((uintptr_t)c.src % 4 != 0) { /* blocks hold f16/f32 fields: keep loads aligned */
            memcpy(j->staged, c.src, (size_t)nr * c.in_rb);
            c.src = j->staged;
        }
        if (j->pool)
            pl_pool_run(j->pool, qchunk_rows, &c, nr, 1);
        else
            qchunk_rows(&c, 0, nr, 0);
        j->done += (uint64_t)nr * (uint64_t)K;
        if ((s = report(j, err))) return s;
    }
    return PL_OK;
}

static char *dup_str(pl_str s)
{
    if (memchr(s.ptr, 0, (size_t)s.len)) return NULL;
    char *p = pl_malloc((size_t)s.len + 1);
    if (!p) return NULL;
    memcpy(p, s.ptr, (size_t)s.len);
    p[s.len] = 0;
    return p;
}

/* Copies metadata key i of g into w (same key, type and value). */
static pl_status copy_kv(pl_gguf_writer *w, const pl_gguf *g, uint64_t i, const char *key,
                         pl_error *err)
{
    pl_gguf_type type = pl_gguf_kv_type(g, i);
    pl_status s;
    if (type == PL_GGUF_STRING) {
        pl_str v;
        if ((s = pl_gguf_kv_string(g, i, &v, err))) return s;
        return pl_gguf_writer_set_string(w, key, v.ptr, (size_t)v.len, err);
    }
    if (type != PL_GGUF_ARRAY) {
        uint64_t v = 0;
        if ((s = pl_gguf_kv_scalar(g, i, type, &v, err))) return s;
        return pl_gguf_writer_set(w, key, type, &v, err);
    }
    pl_gguf_array a;
    if ((s = pl_gguf_kv_array(g, i, &a, err))) return s;
    if (a.type != PL_GGUF_STRING) {
        if (pl_gguf_type_size(a.type) == 0)
            return pl_fail(err, PL_ERR_UNSUPPORTED, "key '%s': array of type %u", key,
                           (unsigned)a.type);
        return pl_gguf_writer_set_array(w, key, a.type, a.data, a.count, err);
    }
    const char **strs = pl_malloc(a.count ? (size_t)a.count * sizeof *strs : 1);
    size_t *lens = pl_malloc(a.count ? (size_t)a.count * sizeof *lens : 1);
    if (!strs || !lens) {
        pl_free(strs);
        pl_free(lens);
        return pl_fail(err, PL_ERR_NOMEM, "no memory to copy the %llu strings of '%s'",
                       (unsigned long long)a.count, key);
    }
    s = PL_OK;
    for (uint64_t k = 0; k < a.count && !s; k++) {
        pl_str e;
        if (!(s = pl_gguf_array_string(&a, k, &e, err))) {
            strs[k] = e.len ? e.ptr : "";
            lens[k] = (size_t)e.len;
        }
    }
    if (!s) s = pl_gguf_writer_set_array_str(w, key, strs, lens, a.count, err);
    pl_free(strs);
    pl_free(lens);
    return s;
}

static pl_status copy_metadata(pl_gguf_writer *w, const pl_gguf *g, pl_ftype ftype, pl_error *err)
{
    pl_status s = PL_OK;
    for (uint64_t i = 0; i < pl_gguf_n_kv(g) && !s; i++) {
        char *key = dup_str(pl_gguf_kv_key(g, i));
        if (!key) {
            pl_str k = pl_gguf_kv_key(g, i);
            if (memchr(k.ptr, 0, (size_t)k.len))
                return pl_fail(err, PL_ERR_UNSUPPORTED, "metadata key %llu holds a NUL byte",
                               (unsigned long long)i);
            return pl_fail(err, PL_ERR_NOMEM, "no memory for metadata key %llu",
                           (unsigned long long)i);
        }
        /* a single output file: split bookkeeping would be wrong (llama.cpp drops it too) */
        if (strncmp(key, "split.", 6) != 0) s = copy_kv(w, g, i, key, err);
        pl_free(key);
    }
    if (!s) s = pl_gguf_writer_set_u32(w, "general.file_type", (uint32_t)ftype, err);
    if (!s) s = pl_gguf_writer_set_u32(w, "general.quantization_version", 2, err);
    return s;
}

/* An integer hyperparameter "<arch>.<key>": a scalar, or the first of a per-layer array (as
 * llama.cpp reads layer 0); *out is left alone when the key is absent. */
static pl_status hparam(const pl_gguf *g, const char *arch, const char *key, int64_t *out,
                        pl_error *err)
{
    char full[160];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    int64_t i = pl_gguf_find_key(g, full);
    if (i < 0) return PL_OK;
    pl_gguf_type type = pl_gguf_kv_type(g, (uint64_t)i);
    const void *p = NULL;
    uint64_t raw = 0;
    pl_gguf_array a;
    pl_status s;
    if (type == PL_GGUF_ARRAY) {
        if ((s = pl_gguf_kv_array(g, (uint64_t)i, &a, err))) return s;
        if (a.count == 0) return pl_fail(err, PL_ERR_FORMAT, "key '%s': an empty array", full);
        type = a.type;
        p = a.data;
    } else if (pl_gguf_type_size(type) != 0 && type != PL_GGUF_FLOAT32 && type != PL_GGUF_FLOAT64 &&
               type != PL_GGUF_BOOL) {
        if ((s = pl_gguf_kv_scalar(g, (uint64_t)i, type, &raw, err))) return s;
        p = &raw;
    }
    uint8_t b[8] = {0};
    switch (type) {
    case PL_GGUF_UINT8:
    case PL_GGUF_UINT16:
    case PL_GGUF_UINT32:
    case PL_GGUF_UINT64:
    case PL_GGUF_INT8:
    case PL_GGUF_INT16:
    case PL_GGUF_INT32:
    case PL_GGUF_INT64:
        break;
    default:
        return pl_fail(err, PL_ERR_TYPE, "key '%s': type %u is not an integer", full,
                       (unsigned)type);
    }
    size_t size = pl_gguf_type_size(type);
    memcpy(b, p, size);
    uint64_t u = 0;
    for (size_t k = 0; k < size; k++) u |= (uint64_t)b[k] << (8 * k);
    int64_t v;
    if (type == PL_GGUF_INT8 || type == PL_GGUF_INT16 || type == PL_GGUF_INT32 ||
        type == PL_GGUF_INT64) {
        int sh = (int)(64 - 8 * size);
        v = (int64_t)(u << sh) >> sh;
    } else {
        v = u > INT64_MAX ? -1 : (int64_t)u;
    }
    if (v < 0 || v > INT32_MAX)
        return pl_fail(err, PL_ERR_FORMAT, "key '%s': %lld is not in 0..%d", full, (long long)v,
                       INT32_MAX);
    *out = v;
    return PL_OK;
}

/* What llama_tensor_get_type reads of the model: the architecture, the block count (from the
 * tensor names when the key is missing), the head and expert counts. */
static pl_status plan_model_of(const pl_gguf *g, const pl_tensor_spec *specs, uint64_t n,
                               pl_plan_model *m, char arch[64], pl_error *err)
{
    memset(m, 0, sizeof *m);
    pl_str a;
    if (pl_gguf_get_string(g, "general.architecture", &a, NULL) == PL_OK && a.len > 0 &&
        a.len < 64 && !memchr(a.ptr, 0, (size_t)a.len)) {
        memcpy(arch, a.ptr, (size_t)a.len);
        arch[a.len] = 0;
        m->arch = arch;
    }
    for (uint64_t i = 0; i < n; i++) {
        int64_t l = layer_of(specs[i].name);
        if (l >= m->n_layer) m->n_layer = l + 1;
    }
    if (!m->arch) return PL_OK;
    pl_status s;
    if ((s = hparam(g, arch, "block_count", &m->n_layer, err)) ||
        (s = hparam(g, arch, "attention.head_count", &m->n_head, err)))
        return s;
    m->n_head_kv = m->n_head; /* llama.cpp's default when the key is absent */
    if ((s = hparam(g, arch, "attention.head_count_kv", &m->n_head_kv, err)) ||
        (s = hparam(g, arch, "expert_count", &m->n_expert, err)))
        return s;
    return PL_OK;
}

pl_status pl_model_quantize(const char *in_path, const char *out_path,
                            const pl_quantize_params *params, pl_error *err)
{
    if (!in_path || !out_path || !params)
        return pl_fail(err, PL_ERR_INVALID_ARG, "in_path, out_path or params is NULL");
    if (!ftype_desc(params->ftype)) {
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "file type %u is not one plumb writes (" FTYPE_CHOICES ")",
                       (unsigned)params->ftype);
    }
    pl_gguf *g = NULL;
    pl_gguf_writer *w = NULL;
    qjob job = {.p = params};
    pl_tensor_spec *specs = NULL;
    pl_quantize_stats st = {0};
    pl_status s = pl_gguf_open(&g, in_path, err);
    if (s) {
        if (err && !strstr(err->msg, in_path)) pl_error_prefix(err, in_path);
        return s;
    }
    uint64_t n = pl_gguf_n_tensors(g);
    job.g = g;
    job.n = n;
    st.n_tensors = n;
    st.in_bytes = pl_gguf_size(g);
    if (n) {
        job.t = pl_calloc((size_t)n, sizeof *job.t);
        specs = pl_calloc((size_t)n, sizeof *specs);
        if (!job.t || !specs)
            s = pl_fail(err, PL_ERR_NOMEM, "no memory for %llu tensors", (unsigned long long)n);
    }
    for (uint64_t i = 0; i < n && !s; i++) {
        qtensor *t = &job.t[i];
        if ((s = pl_gguf_tensor(g, i, &t->in, err))) break;
        if (!(t->name = dup_str(t->in.name))) {
            s = memchr(t->in.name.ptr, 0, (size_t)t->in.name.len)
                    ? pl_fail(err, PL_ERR_UNSUPPORTED, "tensor %llu: name holds a NUL byte",
                              (unsigned long long)i)
                    : pl_fail(err, PL_ERR_NOMEM, "no memory for tensor names");
            break;
        }
        specs[i] = (pl_tensor_spec){.name = t->name, .type = t->in.type, .n_dims = t->in.n_dims};
        memcpy(specs[i].ne, t->in.ne, sizeof specs[i].ne);
    }
    /* the model as the rules read it: its hyperparameters, then every tensor's plan */
    pl_tensor_plan *plans = NULL;
    char arch[64];
    pl_plan_model pm;
    if (!s) s = plan_model_of(g, specs, n, &pm, arch, err);
    if (!s && !(plans = pl_malloc(n ? (size_t)n * sizeof *plans : 1)))
        s = pl_fail(err, PL_ERR_NOMEM, "no memory for %llu tensor plans", (unsigned long long)n);
    if (!s) s = pl_ftype_plan_tensors(params->ftype, params->pure, &pm, specs, n, plans, err);
    int64_t max_row = 1;
    uint64_t max_in_rb = 1;
    for (uint64_t i = 0; i < n && !s; i++) {
        qtensor *t = &job.t[i];
        const pl_tensor_plan plan = plans[i];
        t->out_type = plan.quantize ? plan.type : (pl_type)t->in.type;
        t->n_elems = 1;
        for (uint32_t d = 0; d < 4; d++) t->n_elems *= (uint64_t)t->in.ne[d];
        if (t->out_type != t->in.type) {
            if (!pl_type_supported(t->in.type)) {
                const char *tn = pl_type_name(t->in.type);
                s = pl_fail(err, PL_ERR_UNSUPPORTED,
                            "tensor '%s': cannot convert from type %u (%s), plumb does not "
                            "implement it",
                            t->name, (unsigned)t->in.type, tn ? tn : "unknown");
                break;
            }
            if (!pl_type_supported(t->out_type) || !pl_kernels_ref.quantize_row[t->out_type]) {
                const char *tn = pl_type_name(t->out_type);
                s = pl_fail(err, PL_ERR_UNSUPPORTED,
                            "tensor '%s': %s wants type %s, which plumb cannot write yet", t->name,
                            pl_ftype_name(params->ftype), tn ? tn : "unknown");
                break;
            }
            st.n_converted++;
            if (plan.fallback) st.n_fallback++;
            int64_t step = CHUNK_ELEMS / t->in.ne[0] > 0 ? CHUNK_ELEMS / t->in.ne[0] : 1;
            int64_t rows = (int64_t)(t->n_elems / (uint64_t)t->in.ne[0]);
            if (step > rows) step = rows;
            if (step * t->in.ne[0] > max_row) max_row = step * t->in.ne[0];
            uint64_t rb = (uint64_t)step * (t->in.n_bytes / (uint64_t)rows);
            /* a chunk can start misaligned only if the data or the chunk stride is */
            if (((uintptr_t)t->in.data % 4 != 0 || rb % 4 != 0) && rb > max_in_rb) max_in_rb = rb;
        }
        if (t->out_type < PL_TYPE_COUNT) st.n_by_type[t->out_type]++;
        job.total += t->n_elems;
        specs[i].type = t->out_type;
    }
    pl_free(plans);
    if (!s && !(job.scratch = pl_malloc((size_t)max_row * sizeof(float))))
        s = pl_fail(err, PL_ERR_NOMEM, "no memory for %lld floats of scratch", (long long)max_row);
    if (!s && !(job.staged = pl_malloc((size_t)max_in_rb)))
        s = pl_fail(err, PL_ERR_NOMEM, "no memory for %llu bytes of staging",
                    (unsigned long long)max_in_rb);
    /* threads pay off from the second chunk of work on; an explicit count is always obeyed */
    if (!s && (params->n_threads > 1 || params->n_threads < 0 ||
               (params->n_threads == 0 && job.total > (uint64_t)CHUNK_ELEMS))) {
        s = pl_pool_new(&job.pool, params->n_threads, err);
        if (s) pl_error_prefix(err, "quantization threads");
    }
    if (!s) s = pl_gguf_writer_new(&w, 3, err);
    if (!s) s = copy_metadata(w, g, params->ftype, err);
    if (!s) s = report(&job, err);
    if (!s) s = pl_gguf_write_streamed(w, out_path, specs, n, qfill, &job, err);
    if (!s && params->stats) {
        struct stat sb;
        st.out_bytes = stat(out_path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
        *params->stats = st;
    }
    pl_gguf_writer_free(w);
    pl_pool_free(job.pool);
    for (uint64_t i = 0; job.t && i < n; i++) pl_free(job.t[i].name);
    pl_free(job.t);
    pl_free(specs);
    pl_free(job.scratch);
    pl_free(job.staged);
    pl_gguf_free(g);
    return s ? s : pl_ok(err);
}
