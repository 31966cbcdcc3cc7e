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
    {PL_FTYPE_F32, "F32", PL_TYPE_F32},        {PL_FTYPE_F16, "F16", PL_TYPE_F16},
    {PL_FTYPE_BF16, "BF16", PL_TYPE_BF16},     {PL_FTYPE_Q8_0, "Q8_0", PL_TYPE_Q8_0},
    {PL_FTYPE_Q4_0, "Q4_0", PL_TYPE_Q4_0},     {PL_FTYPE_Q4_1, "Q4_1", PL_TYPE_Q4_1},
    {PL_FTYPE_Q5_0, "Q5_0", PL_TYPE_Q5_0},     {PL_FTYPE_Q5_1, "Q5_1", PL_TYPE_Q5_1},
    {PL_FTYPE_Q4_K_S, "Q4_K_S", PL_TYPE_Q4_K}, {PL_FTYPE_Q4_K_M, "Q4_K_M", PL_TYPE_Q4_K},
    {PL_FTYPE_Q5_K_S, "Q5_K_S", PL_TYPE_Q5_K}, {PL_FTYPE_Q5_K_M, "Q5_K_M", PL_TYPE_Q5_K},
    {PL_FTYPE_Q6_K, "Q6_K", PL_TYPE_Q6_K},
};
enum { N_FTYPES = sizeof ftypes / sizeof ftypes[0] };

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
    if (name_eq(name, "Q4_K")) {
        *out = PL_FTYPE_Q4_K_S;
        return pl_ok(err);
    }
    if (name_eq(name, "Q5_K")) {
        *out = PL_FTYPE_Q5_K_S;
        return pl_ok(err);
    }
    return pl_fail(err, PL_ERR_UNSUPPORTED,
                   "unknown file type '%.64s': expected one of F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
                   "Q5_0, Q5_1, Q4_K (= Q4_K_S), Q4_K_S, Q4_K_M, Q5_K (= Q5_K_S), Q5_K_S, Q5_K_M, "
                   "Q6_K",
                   name);
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

/* Layer index from a "blk.<i>." prefix; -1 when there is none. */
static int64_t layer_of(const char *name)
{
    if (strncmp(name, "blk.", 4) != 0) return -1;
    const char *p = name + 4;
    int64_t v = 0;
    if (!isdigit((unsigned char)*p)) return -1;
    for (; isdigit((unsigned char)*p); p++) {
        if (v > (INT64_MAX - 9) / 10) return -1;
        v = v * 10 + (*p - '0');
    }
    return *p == '.' ? v : -1;
}

/* The first and last eighth of the layers, and every third one between them. */
static int use_more_bits(int64_t i, int64_t n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static int is_quantized(pl_type t)
{
    return t != PL_TYPE_F32 && t != PL_TYPE_F16 && t != PL_TYPE_BF16;
}

static pl_type fallback_type(pl_type t)
{
    switch (t) {
    case PL_TYPE_Q4_K:
        return PL_TYPE_Q5_0;
    case PL_TYPE_Q5_K:
        return PL_TYPE_Q5_1;
    case PL_TYPE_Q6_K:
        return PL_TYPE_Q8_0;
    default:
        return PL_TYPE_F16;
    }
}

static pl_type mix_type(pl_ftype f, pl_type base, const char *name, const int64_t *ne,
                        int64_t n_layer, int tied)
{
    int64_t layer = layer_of(name);
    if (strcmp(name, "output.weight") == 0 || (tied && strcmp(name, "token_embd.weight") == 0)) {
        /* the output projection decides the logits: more bits unless it cannot fit */
        if (ne[0] % pl_type_block_size(base) != 0) return PL_TYPE_Q8_0;
        return base == PL_TYPE_Q8_0 ? PL_TYPE_Q8_0 : PL_TYPE_Q6_K;
    }
    if (strstr(name, "attn_v.weight")) {
        if ((f == PL_FTYPE_Q4_K_M || f == PL_FTYPE_Q5_K_M) && use_more_bits(layer, n_layer))
            return PL_TYPE_Q6_K;
        if (f == PL_FTYPE_Q4_K_S && layer < 4) return PL_TYPE_Q5_K;
        return base;
    }
    if (strstr(name, "ffn_down")) {
        if ((f == PL_FTYPE_Q4_K_M || f == PL_FTYPE_Q5_K_M) && use_more_bits(layer, n_layer))
            return PL_TYPE_Q6_K;
        if (f == PL_FTYPE_Q4_K_S && layer < n_layer / 8) return PL_TYPE_Q5_K;
        return base;
    }
    if (strstr(name, "attn_qkv.weight")) {
        if (f == PL_FTYPE_Q4_K_M) return PL_TYPE_Q5_K;
        if (f == PL_FTYPE_Q5_K_M) return PL_TYPE_Q6_K;
    }
    return base;
}

pl_status pl_ftype_tensor_plan(pl_ftype ftype, int pure, const char *name, uint32_t n_dims,
                               const int64_t *ne, int64_t n_layer, int tied, pl_tensor_plan *out,
                               pl_error *err)
{
    if (!out || !name || !ne) return pl_fail(err, PL_ERR_INVALID_ARG, "out, name or ne is NULL");
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
    out->quantize = ends_with(name, "weight") && effective_dims(n_dims, ne) >= 2 && !exempt(name);
    if (!out->quantize) return pl_ok(err);

    pl_type t = d->base;
    if (!pure && is_quantized(d->base)) t = mix_type(ftype, d->base, name, ne, n_layer, tied);
    out->wanted = t;
    while (ne[0] % pl_type_block_size(t) != 0) t = fallback_type(t);
    out->type = t;
    out->fallback = t != out->wanted;
    return pl_ok(err);
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

pl_status pl_model_quantize(const char *in_path, const char *out_path,
                            const pl_quantize_params *params, pl_error *err)
{
    if (!in_path || !out_path || !params)
        return pl_fail(err, PL_ERR_INVALID_ARG, "in_path, out_path or params is NULL");
    if (!ftype_desc(params->ftype)) {
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "file type %u is not one plumb writes (F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
                       "Q5_0, Q5_1, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K)",
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
    /* the model's shape as the rules need it: block count and whether output is tied */
    int64_t n_layer = 0;
    int tied = 1;
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
        int64_t l = layer_of(t->name);
        if (l >= n_layer) n_layer = l + 1;
        if (strcmp(t->name, "output.weight") == 0) tied = 0;
    }
    int64_t max_row = 1;
    uint64_t max_in_rb = 1;
    for (uint64_t i = 0; i < n && !s; i++) {
        qtensor *t = &job.t[i];
        pl_tensor_plan plan;
        if ((s = pl_ftype_tensor_plan(params->ftype, params->pure, t->name, t->in.n_dims, t->in.ne,
                                      n_layer, tied, &plan, err)))
            break;
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
        specs[i] = (pl_tensor_spec){.name = t->name, .type = t->out_type, .n_dims = t->in.n_dims};
        memcpy(specs[i].ne, t->in.ne, sizeof specs[i].ne);
    }
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
