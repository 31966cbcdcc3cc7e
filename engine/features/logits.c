/* logits.c — the .logits file format (parser of untrusted bytes, writer) and the comparison of
 * two runs (KL divergence, top-1/top-5 agreement, logit differences). Not an evaluator: the
 * logits come from pl_session_eval (plumb logits) or from another engine (a converter). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

/* ---- little-endian access -------------------------------------------------------- */

static uint32_t rd_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd_u64(const unsigned char *p)
{
    return (uint64_t)rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32;
}

static void wr_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void wr_u64(unsigned char *p, uint64_t v)
{
    wr_u32(p, (uint32_t)v);
    wr_u32(p + 4, (uint32_t)(v >> 32));
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ---- tokenizer hash (FNV-1a 64) ----------------------------------------------------- */

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME  0x100000001b3ull

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    wr_u64(b, v);
    return fnv(h, b, 8);
}

static pl_status hash_key(const pl_gguf *g, const char *key, pl_gguf_type want, uint64_t *h,
                          pl_error *err)
{
    *h = fnv(*h, key, strlen(key));
    pl_gguf_array a;
    pl_status s = pl_gguf_get_array(g, key, &a, err);
    if (s == PL_ERR_NOT_FOUND) {
        *h = fnv_u64(*h, 0);
        return PL_OK;
    }
    if (s) return s;
    if (a.type != want)
        return pl_fail(err, PL_ERR_TYPE, "%s: array of %s, expected an array of %s", key,
                       pl_gguf_type_name(a.type), pl_gguf_type_name(want));
    *h = fnv_u64(*h, a.count);
    if (want == PL_GGUF_FLOAT32) {
        *h = fnv(*h, a.data, (size_t)a.count * 4); /* the reader checked count * 4 fits */
        return PL_OK;
    }
    for (uint64_t i = 0; i < a.count; i++) {
        pl_str str;
        if ((s = pl_gguf_array_string(&a, i, &str, err))) return s;
        *h = fnv_u64(*h, str.len);
        *h = fnv(*h, str.ptr, (size_t)str.len);
    }
    return PL_OK;
}

pl_status pl_logits_tokenizer_hash(const pl_gguf *g, uint64_t *out, pl_error *err)
{
    if (!g || !out)
        return pl_fail(err, PL_ERR_INVALID_ARG, "pl_logits_tokenizer_hash: NULL argument");
    uint64_t h = FNV_OFFSET;
    pl_status s;
    if ((s = hash_key(g, "tokenizer.ggml.tokens", PL_GGUF_STRING, &h, err)) ||
        (s = hash_key(g, "tokenizer.ggml.merges", PL_GGUF_STRING, &h, err)) ||
        (s = hash_key(g, "tokenizer.ggml.scores", PL_GGUF_FLOAT32, &h, err)))
        return s;
    *out = h ? h : 1;
    return pl_ok(err);
}

/* ---- shared checks ------------------------------------------------------------------ */

/* The header's counts against the limits; names the field and its offset. */
static pl_status check_counts(uint64_t n_vocab, uint64_t n_tokens, uint64_t first_row,
                              uint64_t n_rows, uint64_t name_len, pl_error *err)
{
    if (n_vocab == 0) return pl_fail(err, PL_ERR_FORMAT, "n_vocab (offset 16) is 0");
    if (n_vocab > PL_LOGITS_MAX_VOCAB)
        return pl_fail(err, PL_ERR_LIMIT, "n_vocab (offset 16) is %llu, over the limit %u",
                       (unsigned long long)n_vocab, PL_LOGITS_MAX_VOCAB);
    if (n_tokens == 0) return pl_fail(err, PL_ERR_FORMAT, "n_tokens (offset 24) is 0");
    if (n_tokens > PL_LOGITS_MAX_TOKENS)
        return pl_fail(err, PL_ERR_LIMIT, "n_tokens (offset 24) is %llu, over the limit %u",
                       (unsigned long long)n_tokens, PL_LOGITS_MAX_TOKENS);
    if (n_rows == 0) return pl_fail(err, PL_ERR_FORMAT, "n_rows (offset 40) is 0");
    uint64_t end;
    if (!pl_add_u64(first_row, n_rows, &end) || end > n_tokens)
        return pl_fail(err, PL_ERR_FORMAT,
                       "rows [first_row (offset 32) = %llu, + n_rows (offset 40) = %llu) "
                       "go past n_tokens (offset 24) = %llu",
                       (unsigned long long)first_row, (unsigned long long)n_rows,
                       (unsigned long long)n_tokens);
    if (name_len > PL_LOGITS_MAX_NAME)
        return pl_fail(err, PL_ERR_LIMIT, "name_len (offset 56) is %llu, over the limit %u",
                       (unsigned long long)name_len, PL_LOGITS_MAX_NAME);
    return PL_OK;
}

/* A windowed file's shape (plumb.h): window >= 3 divides n_tokens, first_row <= window - 2,
 * and the rows are window - 1 - first_row per window. Counts were checked by check_counts. */
static pl_status check_window(uint64_t window, uint64_t n_tokens, uint64_t first_row,
                              uint64_t n_rows, pl_error *err)
{
    if (window < 3 || window > PL_LOGITS_MAX_TOKENS)
        return pl_fail(err, PL_ERR_FORMAT,
                       "window (offset 60) is %llu; a windowed file needs 3 .. %u",
                       (unsigned long long)window, PL_LOGITS_MAX_TOKENS);
    if (n_tokens % window)
        return pl_fail(err, PL_ERR_FORMAT,
                       "n_tokens (offset 24) = %llu is not a multiple of the window (offset 60) "
                       "= %llu",
                       (unsigned long long)n_tokens, (unsigned long long)window);
    if (first_row > window - 2)
        return pl_fail(err, PL_ERR_FORMAT,
                       "first_row (offset 32) = %llu leaves no row in a window (offset 60) of "
                       "%llu",
                       (unsigned long long)first_row, (unsigned long long)window);
    uint64_t want = (window - 1 - first_row) * (n_tokens / window);
    if (n_rows != want)
        return pl_fail(err, PL_ERR_FORMAT,
                       "n_rows (offset 40) is %llu; %llu windows of %llu rows (window %llu, "
                       "first_row %llu) make %llu",
                       (unsigned long long)n_rows, (unsigned long long)(n_tokens / window),
                       (unsigned long long)(window - 1 - first_row), (unsigned long long)window,
                       (unsigned long long)first_row, (unsigned long long)want);
    return PL_OK;
}

/* Bytes of the whole file, or 0 on overflow. */
static uint64_t file_bytes(uint64_t n_vocab, uint64_t n_tokens, uint64_t n_rows, uint64_t name_len)
{
    uint64_t cells, lbytes, tbytes, total;
    if (!pl_mul_u64(n_rows, n_vocab, &cells) || !pl_mul_u64(cells, 4, &lbytes) ||
        !pl_mul_u64(n_tokens, 4, &tbytes) || !pl_add_u64(PL_LOGITS_HEADER, name_len, &total) ||
        !pl_add_u64(total, tbytes, &total) || !pl_add_u64(total, lbytes, &total))
        return 0;
    return total;
}

/* A row may hold -inf (probability 0) but not NaN or +inf, and needs one finite value so
 * its softmax exists. what: "logits", "A", "B"; base: the file offset of the row, or -1. */
static pl_status check_row(const float *row, int64_t n_vocab, int64_t r, int64_t base,
                           const char *what, pl_error *err)
{
    int finite = 0;
    for (int64_t j = 0; j < n_vocab; j++) {
        float v = row[j];
        if (isnan(v) || (isinf(v) && v > 0)) {
            if (base >= 0)
                return pl_fail(err, PL_ERR_FORMAT, "%s row %lld, token %lld (offset %lld) is %s",
                               what, (long long)r, (long long)j, (long long)(base + 4 * j),
                               isnan(v) ? "NaN" : "+inf");
            return pl_fail(err, PL_ERR_INVALID_ARG, "%s row %lld, token %lld is %s", what,
                           (long long)r, (long long)j, isnan(v) ? "NaN" : "+inf");
        }
        finite |= isfinite(v);
    }
    if (!finite)
        return pl_fail(err, base >= 0 ? PL_ERR_FORMAT : PL_ERR_INVALID_ARG,
                       "%s row %lld has no finite logit (all -inf)", what, (long long)r);
    return PL_OK;
}

/* ---- parser ------------------------------------------------------------------------- */

pl_status pl_logits_parse(pl_logits **out, const void *data, size_t size, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "pl_logits_parse: out is NULL");
    *out = NULL;
    if (!data && size) return pl_fail(err, PL_ERR_INVALID_ARG, "pl_logits_parse: data is NULL");
    const unsigned char *p = data;
    if (size < PL_LOGITS_HEADER)
        return pl_fail(err, PL_ERR_FORMAT, "truncated header: %zu bytes, the header needs %u", size,
                       PL_LOGITS_HEADER);
    if (memcmp(p, PL_LOGITS_MAGIC, 8) != 0)
        return pl_fail(err, PL_ERR_FORMAT,
                       "magic (offset 0) is %02x %02x %02x %02x %02x %02x %02x %02x, "
                       "not \"" PL_LOGITS_MAGIC "\": not a plumb logits file",
                       p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
    uint32_t version = rd_u32(p + 8), flags = rd_u32(p + 12), window = rd_u32(p + 60);
    if (version != PL_LOGITS_VERSION)
        return pl_fail(err, PL_ERR_UNSUPPORTED, "version (offset 8) is %u; plumb reads version %u",
                       version, PL_LOGITS_VERSION);
    if (flags & ~PL_LOGITS_WINDOWS)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "flags (offset 12) is 0x%x; version 1 defines only 0x1 (windows)", flags);
    uint64_t n_vocab = rd_u64(p + 16), n_tokens = rd_u64(p + 24), first_row = rd_u64(p + 32);
    uint64_t n_rows = rd_u64(p + 40), hash = rd_u64(p + 48), name_len = rd_u32(p + 56);
    if (!flags && window != 0)
        return pl_fail(err, PL_ERR_FORMAT,
                       "reserved (offset 60) is 0x%x, must be 0 when flags (offset 12) is 0",
                       window);
    pl_status s = check_counts(n_vocab, n_tokens, first_row, n_rows, name_len, err);
    if (s) return s;
    if (flags && (s = check_window(window, n_tokens, first_row, n_rows, err))) return s;
    uint64_t need = file_bytes(n_vocab, n_tokens, n_rows, name_len);
    uint64_t tok_off = PL_LOGITS_HEADER + name_len, log_off = tok_off + 4 * n_tokens;
    if (need == 0)
        return pl_fail(err, PL_ERR_FORMAT, "n_rows (%llu) x n_vocab (%llu) x 4 bytes overflows",
                       (unsigned long long)n_rows, (unsigned long long)n_vocab);
    if ((uint64_t)size < need) {
        const char *sec = size < tok_off ? "name" : size < log_off ? "token ids" : "logits";
        uint64_t lo = size < tok_off ? PL_LOGITS_HEADER : size < log_off ? tok_off : log_off;
        uint64_t hi = size < tok_off ? tok_off : size < log_off ? log_off : need;
        return pl_fail(err, PL_ERR_FORMAT,
                       "truncated: the %s [%llu, %llu) end past the end of the data (%zu bytes; "
                       "n_vocab %llu, n_tokens %llu, n_rows %llu)",
                       sec, (unsigned long long)lo, (unsigned long long)hi, size,
                       (unsigned long long)n_vocab, (unsigned long long)n_tokens,
                       (unsigned long long)n_rows);
    }
    if ((uint64_t)size > need)
        return pl_fail(err, PL_ERR_FORMAT,
                       "size mismatch: %llu trailing bytes after the logits, which end at offset "
                       "%llu",
                       (unsigned long long)((uint64_t)size - need), (unsigned long long)need);
    const unsigned char *name = p + PL_LOGITS_HEADER;
    const void *nul = memchr(name, 0, (size_t)name_len);
    if (nul)
        return pl_fail(err, PL_ERR_FORMAT, "model name holds a NUL byte at offset %lld",
                       (long long)((const unsigned char *)nul - p));
    for (uint64_t i = 0; i < n_tokens; i++) {
        uint32_t id = rd_u32(p + tok_off + 4 * i);
        if (id >= n_vocab)
            return pl_fail(err, PL_ERR_FORMAT,
                           "token %llu (offset %llu) is %lld, outside [0, n_vocab = %llu)",
                           (unsigned long long)i, (unsigned long long)(tok_off + 4 * i),
                           (long long)(int32_t)id, (unsigned long long)n_vocab);
    }

    /* One block: the struct, the logits (float-aligned), the ids, the name. need bounds the
     * data bytes, so the block is at most the input plus the struct and a NUL. */
    uint64_t cells = n_rows * n_vocab;
    size_t head = (sizeof(pl_logits) + 15) & ~(size_t)15;
    size_t total = head + (size_t)(need - PL_LOGITS_HEADER) + 1;
    unsigned char *blk = pl_malloc(total);
    if (!blk) return pl_fail(err, PL_ERR_NOMEM, "no memory for the logits (%zu bytes)", total);
    pl_logits *l = (pl_logits *)(void *)blk;
    float *lg = (float *)(void *)(blk + head);
    int32_t *tok = (int32_t *)(void *)(blk + head + 4 * cells);
    char *nm = (char *)(blk + head + 4 * cells + 4 * n_tokens);
    for (uint64_t i = 0; i < n_tokens; i++) tok[i] = (int32_t)rd_u32(p + tok_off + 4 * i);
    for (uint64_t i = 0; i < cells; i++) lg[i] = bits_f32(rd_u32(p + log_off + 4 * i));
    memcpy(nm, name, (size_t)name_len);
    nm[name_len] = 0;
    for (uint64_t r = 0; r < n_rows; r++) {
        s = check_row(lg + r * n_vocab, (int64_t)n_vocab, (int64_t)r,
                      (int64_t)(log_off + 4 * r * n_vocab), "logits", err);
        if (s) {
            pl_free(blk);
            return s;
        }
    }
    *l = (pl_logits){.n_vocab = (int64_t)n_vocab,
                     .n_tokens = (int64_t)n_tokens,
                     .first_row = (int64_t)first_row,
                     .n_rows = (int64_t)n_rows,
                     .window = (int64_t)window,
                     .tokenizer_hash = hash,
                     .model_name = nm,
                     .tokens = tok,
                     .logits = lg};
    *out = l;
    return pl_ok(err);
}

pl_status pl_logits_read(pl_logits **out, const char *path, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "pl_logits_read: out is NULL");
    *out = NULL;
    pl_mapping m;
    pl_status s = pl_map_file(&m, path, err);
    if (s) return s;
    s = pl_logits_parse(out, m.data, m.size, err);
    pl_unmap_file(&m);
    if (s) pl_error_prefix(err, path);
    return s;
}

void pl_logits_free(pl_logits *l)
{
    pl_free(l);
}

/* ---- writer ------------------------------------------------------------------------- */

/* Output goes to memory (mem != NULL) or to a FILE. */
typedef struct sink {
    unsigned char *mem;
    size_t pos;
    FILE *f;
    int failed;
} sink;

static void put(sink *k, const void *p, size_t n)
{
    if (k->mem) {
        memcpy(k->mem + k->pos, p, n);
        k->pos += n;
    } else if (!k->failed && n && fwrite(p, 1, n, k->f) != n) {
        k->failed = 1;
    }
}

/* n 32-bit words as little-endian bytes, through a small buffer. */
static void put_words(sink *k, const uint32_t *w, uint64_t n)
{
    unsigned char buf[4096];
    while (n) {
        size_t c = n < sizeof buf / 4 ? (size_t)n : sizeof buf / 4;
        for (size_t i = 0; i < c; i++) wr_u32(buf + 4 * i, w[i]);
        put(k, buf, 4 * c);
        w += c;
        n -= c;
    }
}

static pl_status check_logits(const pl_logits *l, uint64_t *size, pl_error *err)
{
    if (!l) return pl_fail(err, PL_ERR_INVALID_ARG, "logits is NULL");
    if (l->n_vocab < 0 || l->n_tokens < 0 || l->first_row < 0 || l->n_rows < 0 || l->window < 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "negative count: n_vocab %lld, n_tokens %lld, first_row %lld, n_rows %lld, "
                       "window %lld",
                       (long long)l->n_vocab, (long long)l->n_tokens, (long long)l->first_row,
                       (long long)l->n_rows, (long long)l->window);
    size_t name_len = l->model_name ? strlen(l->model_name) : 0;
    pl_status s = check_counts((uint64_t)l->n_vocab, (uint64_t)l->n_tokens, (uint64_t)l->first_row,
                               (uint64_t)l->n_rows, name_len, err);
    if (s) return s;
    if (l->window && (s = check_window((uint64_t)l->window, (uint64_t)l->n_tokens,
                                       (uint64_t)l->first_row, (uint64_t)l->n_rows, err)))
        return s;
    if (!l->tokens || !l->logits)
        return pl_fail(err, PL_ERR_INVALID_ARG, "tokens or logits is NULL");
    for (int64_t i = 0; i < l->n_tokens; i++)
        if (l->tokens[i] < 0 || l->tokens[i] >= l->n_vocab)
            return pl_fail(err, PL_ERR_INVALID_ARG, "token %lld is %d, outside [0, %lld)",
                           (long long)i, l->tokens[i], (long long)l->n_vocab);
    for (int64_t r = 0; r < l->n_rows; r++)
        if ((s = check_row(l->logits + r * l->n_vocab, l->n_vocab, r, -1, "logits", err))) return s;
    *size = file_bytes((uint64_t)l->n_vocab, (uint64_t)l->n_tokens, (uint64_t)l->n_rows, name_len);
    if (*size == 0 || *size > SIZE_MAX)
        return pl_fail(err, PL_ERR_LIMIT, "the file would not fit in memory");
    return PL_OK;
}

static void emit(sink *k, const pl_logits *l)
{
    size_t name_len = l->model_name ? strlen(l->model_name) : 0;
    unsigned char h[PL_LOGITS_HEADER] = {0};
    memcpy(h, PL_LOGITS_MAGIC, 8);
    wr_u32(h + 8, PL_LOGITS_VERSION);
    wr_u32(h + 12, l->window ? PL_LOGITS_WINDOWS : 0);
    wr_u64(h + 16, (uint64_t)l->n_vocab);
    wr_u64(h + 24, (uint64_t)l->n_tokens);
    wr_u64(h + 32, (uint64_t)l->first_row);
    wr_u64(h + 40, (uint64_t)l->n_rows);
    wr_u64(h + 48, l->tokenizer_hash);
    wr_u32(h + 56, (uint32_t)name_len);
    wr_u32(h + 60, (uint32_t)l->window);
    put(k, h, sizeof h);
    put(k, l->model_name, name_len);
    uint32_t w[1024];
    for (int64_t i = 0; i < l->n_tokens;) {
        size_t c = 0;
        for (; c < 1024 && i < l->n_tokens; c++, i++) w[c] = (uint32_t)l->tokens[i];
        put_words(k, w, c);
    }
    uint64_t cells = (uint64_t)l->n_rows * (uint64_t)l->n_vocab;
    for (uint64_t i = 0; i < cells;) {
        size_t c = 0;
        for (; c < 1024 && i < cells; c++, i++) w[c] = f32_bits(l->logits[i]);
        put_words(k, w, c);
    }
}

pl_status pl_logits_write_memory(const pl_logits *l, void **out, size_t *size, pl_error *err)
{
    if (!out || !size) return pl_fail(err, PL_ERR_INVALID_ARG, "out or size is NULL");
    *out = NULL;
    *size = 0;
    uint64_t n;
    pl_status s = check_logits(l, &n, err);
    if (s) return s;
    sink k = {.mem = pl_malloc((size_t)n)};
    if (!k.mem)
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %llu bytes", (unsigned long long)n);
    emit(&k, l);
    *out = k.mem;
    *size = (size_t)n;
    return pl_ok(err);
}

pl_status pl_logits_write(const pl_logits *l, const char *path, pl_error *err)
{
    if (!path) return pl_fail(err, PL_ERR_INVALID_ARG, "path is NULL");
    uint64_t n;
    pl_status s = check_logits(l, &n, err);
    if (s) return s;
    size_t len = strlen(path);
    char *tmp = pl_malloc(len + 5);
    if (!tmp) return pl_fail(err, PL_ERR_NOMEM, "no memory for the temporary path");
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".tmp", 5);
    sink k = {.f = fopen(tmp, "wb")};
    if (!k.f) {
        s = pl_fail(err, PL_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
        pl_free(tmp);
        return s;
    }
    emit(&k, l);
    int bad = k.failed;
    if (fclose(k.f) != 0) bad = 1;
    if (bad || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        s = pl_fail(err, PL_ERR_IO, "writing '%s' failed: %s", path, strerror(e));
        pl_free(tmp);
        return s;
    }
    pl_free(tmp);
    return pl_ok(err);
}

/* ---- comparison --------------------------------------------------------------------- */

/* log sum_j exp(x_j) in double; x has a finite value and no NaN/+inf (checked). */
static double log_sum_exp(const float *x, int64_t n)
{
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        if ((double)x[j] > m) m = x[j];
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += exp((double)x[j] - m);
    return m + log(s);
}

double pl_logits_nll(const float *row, int64_t n_vocab, int32_t target)
{
    return log_sum_exp(row, n_vocab) - (double)row[target];
}

int64_t pl_logits_row_position(const pl_logits *l, int64_t r)
{
    if (!l->window) return l->first_row + r;
    int64_t per = l->window - 1 - l->first_row;
    return r / per * l->window + l->first_row + r % per;
}

/* The k largest (k <= 5), highest first; ties: the lowest id first. */
static int top_k(const float *x, int64_t n, int k, int64_t *idx)
{
    int c = 0;
    for (int64_t j = 0; j < n; j++) {
        if (c == k && !(x[j] > x[idx[c - 1]])) continue;
        int p = c < k ? c++ : k - 1;
        while (p > 0 && x[j] > x[idx[p - 1]]) {
            idx[p] = idx[p - 1];
            p--;
        }
        idx[p] = j;
    }
    return c;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between order statistics (GSL's quantile_from_sorted_data). */
static double quantile(const double *x, int64_t n, double f)
{
    double h = (double)(n - 1) * f;
    int64_t k = (int64_t)floor(h);
    if (k >= n - 1) return x[n - 1];
    double d = h - (double)k;
    return d == 0 ? x[k] : x[k] + d * (x[k + 1] - x[k]);
}

/* Mean and its standard error sqrt(sum (x - mean)^2 / (N (N - 1))). */
static void mean_se(const double *x, int64_t n, double *mean, double *se)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    double m = s / (double)n, v = 0;
    for (int64_t i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    *mean = m;
    *se = n > 1 ? sqrt(v / ((double)n * (double)(n - 1))) : NAN;
}

/* The perplexity fields of st from the per-row NLLs xa, xb (n of them; xd is scratch). */
static void ppl_stats(const double *xa, const double *xb, double *xd, int64_t n,
                      pl_logits_stats *st)
{
    st->n_ppl = n;
    st->ppl_a = st->ppl_a_se = st->ppl_b = st->ppl_b_se = NAN;
    st->ln_ratio = st->ln_ratio_se = st->ppl_diff = st->ppl_diff_se = st->ppl_corr = NAN;
    if (n == 0) return;
    double ma, sa, mb, sb;
    mean_se(xa, n, &ma, &sa);
    mean_se(xb, n, &mb, &sb);
    for (int64_t i = 0; i < n; i++) xd[i] = xb[i] - xa[i];
    mean_se(xd, n, &st->ln_ratio, &st->ln_ratio_se);
    st->ppl_a = exp(ma);
    st->ppl_b = exp(mb);
    st->ppl_a_se = st->ppl_a * sa;
    st->ppl_b_se = st->ppl_b * sb;
    st->ppl_diff = st->ppl_b - st->ppl_a;
    if (n < 2) return;
    /* se_A^2 + se_B^2 - 2 PPL(A) PPL(B) cov is the variance of the mean of
     * PPL(B) (xB_i - mean B) - PPL(A) (xA_i - mean A): summed that way it cannot cancel to a
     * negative, and a file against itself gives exactly 0. */
    double c = 0, v = 0;
    for (int64_t i = 0; i < n; i++) {
        double da = xa[i] - ma, db = xb[i] - mb, e = st->ppl_b * db - st->ppl_a * da;
        c += da * db;
        v += e * e;
    }
    double nn = (double)n * (double)(n - 1);
    st->ppl_diff_se = sqrt(v / nn);
    st->ppl_corr = c / nn / (sa * sb); /* covariance of the two means over their SEs */
}

static pl_status compare_check(const pl_logits *a, const pl_logits *b, int64_t *lo, int64_t *hi,
                               pl_error *err)
{
    uint64_t na, nb;
    pl_status s;
    if ((s = check_logits(a, &na, err))) {
        pl_error_prefix(err, "A");
        return s;
    }
    if ((s = check_logits(b, &nb, err))) {
        pl_error_prefix(err, "B");
        return s;
    }
    if (a->n_vocab != b->n_vocab)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "vocab sizes differ: A has %lld logits per row, B has %lld",
                       (long long)a->n_vocab, (long long)b->n_vocab);
    if (a->n_tokens != b->n_tokens)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "token counts differ: A holds %lld token ids, B holds %lld: not the same "
                       "text",
                       (long long)a->n_tokens, (long long)b->n_tokens);
    for (int64_t i = 0; i < a->n_tokens; i++)
        if (a->tokens[i] != b->tokens[i])
            return pl_fail(err, PL_ERR_INVALID_ARG,
                           "token ids differ at index %lld: A has %d, B has %d: not the same "
                           "text (or not the same tokenizer)",
                           (long long)i, a->tokens[i], b->tokens[i]);
    if (a->window != b->window)
        return pl_fail(
            err, PL_ERR_INVALID_ARG,
            "windows differ: A %s %lld, B %s %lld (perplexity windows vs one "
            "evaluation, or another -c)",
            a->window ? "has windows of" : "is one evaluation, window", (long long)a->window,
            b->window ? "has windows of" : "is one evaluation, window", (long long)b->window);
    if (a->window && a->first_row != b->first_row)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "windowed files score different positions: A from %lld, B from %lld",
                       (long long)a->first_row, (long long)b->first_row);
    *lo = a->first_row > b->first_row ? a->first_row : b->first_row;
    int64_t ea = a->first_row + a->n_rows, eb = b->first_row + b->n_rows;
    *hi = ea < eb ? ea : eb;
    if (*lo >= *hi)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "no common rows: A holds rows [%lld, %lld), B holds [%lld, %lld)",
                       (long long)a->first_row, (long long)ea, (long long)b->first_row,
                       (long long)eb);
    return PL_OK;
}

pl_status pl_logits_compare(const pl_logits *a, const pl_logits *b, pl_logits_stats *out,
                            double *kld, size_t kld_cap, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "pl_logits_compare: out is NULL");
    int64_t lo = 0, hi = 0;
    pl_status s = compare_check(a, b, &lo, &hi, err);
    if (s) return s;
    int64_t n = hi - lo, V = a->n_vocab;
    if (kld && kld_cap < (size_t)n)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL, "kld holds %zu values, %lld rows are compared",
                       kld_cap, (long long)n);
    double *buf = pl_malloc(6 * (size_t)n * sizeof *buf);
    if (!buf)
        return pl_fail(err, PL_ERR_NOMEM, "no memory for the per-row statistics of %lld rows",
                       (long long)n);
    double *kl = buf, *top1 = buf + n, *top5 = buf + 2 * n;
    double *xa = buf + 3 * n, *xb = buf + 4 * n, *xd = buf + 5 * n;
    int64_t n_ppl = 0;
    int k = V < 5 ? (int)V : 5;
    double max_diff = 0, sum_sq = 0;
    int64_t max_row = 0;
    for (int64_t r = 0; r < n; r++) {
        const float *x = a->logits + (lo + r - a->first_row) * V;
        const float *y = b->logits + (lo + r - b->first_row) * V;
        double la = log_sum_exp(x, V), lb = log_sum_exp(y, V), d = 0;
        for (int64_t j = 0; j < V; j++) {
            double lp = (double)x[j] - la; /* log p_j */
            if (isinf(lp)) continue;       /* p_j = 0 */
            double p = exp(lp);
            if (p > 0) d += p * (lp - ((double)y[j] - lb));
        }
        kl[r] = d;
        for (int64_t j = 0; j < V; j++) {
            double e = isinf(x[j]) && isinf(y[j]) ? 0 : fabs((double)x[j] - (double)y[j]);
            if (e > max_diff) max_diff = e;
            sum_sq += e * e;
        }
        int64_t ia[5], ib[5];
        top_k(x, V, k, ia);
        top_k(y, V, k, ib);
        top1[r] = ia[0] == ib[0];
        int common = 0;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) common += ia[i] == ib[j];
        top5[r] = (double)common / k;
        int64_t next = pl_logits_row_position(a, lo + r - a->first_row) + 1;
        if (next < a->n_tokens) {
            xa[n_ppl] = la - (double)x[a->tokens[next]]; /* = pl_logits_nll, bit for bit */
            xb[n_ppl++] = lb - (double)y[b->tokens[next]];
        }
    }
    pl_logits_stats st = {.n_rows = n, .first_row = lo};
    if (kld) memcpy(kld, kl, (size_t)n * sizeof *kld);
    for (int64_t r = 0; r < n; r++)
        if (kl[r] > kl[max_row]) max_row = r;
    mean_se(kl, n, &st.kld_mean, &st.kld_mean_se);
    mean_se(top1, n, &st.top1_agree, &st.top1_agree_se);
    mean_se(top5, n, &st.top5_overlap, &st.top5_overlap_se);
    qsort(kl, (size_t)n, sizeof *kl, cmp_double);
    st.kld_min = kl[0];
    st.kld_max = kl[n - 1];
    st.kld_max_row = pl_logits_row_position(a, lo + max_row - a->first_row);
    st.kld_median = quantile(kl, n, 0.5);
    st.kld_p90 = quantile(kl, n, 0.90);
    st.kld_p95 = quantile(kl, n, 0.95);
    st.kld_p99 = quantile(kl, n, 0.99);
    st.kld_p999 = quantile(kl, n, 0.999);
    st.max_abs_diff = max_diff;
    st.rms_abs_diff = sqrt(sum_sq / ((double)n * (double)V));
    st.tokenizer_match = a->tokenizer_hash == 0 || b->tokenizer_hash == 0
                             ? -1
                             : a->tokenizer_hash == b->tokenizer_hash;
    ppl_stats(xa, xb, xd, n_ppl, &st);
    pl_free(buf);
    *out = st;
    return pl_ok(err);
}
