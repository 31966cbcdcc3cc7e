/* fuzz_gguf.c — harness: the input bytes are a GGUF file for pl_model_load_memory (header,
 * metadata, tensor infos, architecture binding, tokenizer). Not a tokenizer fuzzer. Oracles:
 * OK, or an error with a code and a non-empty message; on OK every tensor lies inside the
 * input and a one-token forward pass (small models only) runs. ASan/UBSan catch the rest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "plumb.h"

/* Caps that keep one case fast: the forward pass runs only on models this small. */
#define CAP_WEIGHT_BYTES (4u << 20)
#define CAP_EMBD_VOCAB   (1u << 20) /* n_embd * n_vocab */
#define CAP_LAYERS       8
#define CAP_DIM          4096

/* Every session loads the hwloc topology; with hwloc's plugins (dlopen per load) and the real
 * /sys walk that costs ~35 ms, ~100x the rest of a case. A synthetic topology without plugins
 * keeps the forward pass in every valid case (binding is then refused, a documented path). */
void fuzz_init(void)
{
    setenv("HWLOC_PLUGINS_PATH", "/nonexistent", 0);
    setenv("HWLOC_SYNTHETIC", "core:1 pu:1", 0);
}

static void check_error(pl_status st, const pl_error *err, const char *what)
{
    FUZZ_CHECK(st < 0, "%s returned %d", what, (int)st);
    FUZZ_CHECK(err->code == st, "%s: err.code %d != status %d", what, (int)err->code, (int)st);
    FUZZ_CHECK(err->msg[0] != '\0', "%s failed (%s) with an empty message", what,
               pl_status_str(st));
    FUZZ_CHECK(memchr(err->msg, '\0', sizeof err->msg) != NULL, "%s: message not terminated", what);
}

static void check_tensors(const pl_gguf *g, const uint8_t *data, size_t size)
{
    FUZZ_CHECK(pl_gguf_size(g) == size, "gguf size %zu != input %zu", pl_gguf_size(g), size);
    uint64_t base = pl_gguf_data_offset(g);
    FUZZ_CHECK(base <= size, "data section at %llu past the input (%zu)", (unsigned long long)base,
               size);
    uint64_t n = pl_gguf_n_tensors(g);
    for (uint64_t i = 0; i < n; i++) {
        pl_tensor_info t;
        pl_error err = {0};
        pl_status st = pl_gguf_tensor(g, i, &t, &err);
        FUZZ_CHECK(st == PL_OK, "tensor %llu of %llu: %s", (unsigned long long)i,
                   (unsigned long long)n, err.msg);
        const uint8_t *p = t.data;
        FUZZ_CHECK(p >= data && p <= data + size, "tensor %llu data outside the input",
                   (unsigned long long)i);
        FUZZ_CHECK(t.n_bytes <= (uint64_t)(data + size - p),
                   "tensor %llu: %llu bytes at %td run past the input (%zu)", (unsigned long long)i,
                   (unsigned long long)t.n_bytes, p - data, size);
        FUZZ_CHECK((uint64_t)(p - data) == base + t.offset, "tensor %llu: offset mismatch",
                   (unsigned long long)i);
        FUZZ_CHECK(t.n_dims >= 1 && t.n_dims <= PL_GGUF_MAX_DIMS, "tensor %llu: n_dims %u",
                   (unsigned long long)i, t.n_dims);
        FUZZ_CHECK(t.name.len <= PL_GGUF_MAX_NAME, "tensor %llu: name of %llu bytes",
                   (unsigned long long)i, (unsigned long long)t.name.len);
        FUZZ_CHECK(pl_gguf_find_tensor(g, "") < (int64_t)n, "find_tensor out of range");
    }
    /* Every metadata key is readable through the typed API. */
    uint64_t n_kv = pl_gguf_n_kv(g);
    for (uint64_t i = 0; i < n_kv; i++) {
        pl_str k = pl_gguf_kv_key(g, i);
        FUZZ_CHECK(k.len == 0 || (const uint8_t *)k.ptr >= data, "key %llu outside the input",
                   (unsigned long long)i);
        if (pl_gguf_kv_type(g, i) == PL_GGUF_ARRAY) {
            pl_gguf_array a;
            pl_error err = {0};
            FUZZ_CHECK(pl_gguf_kv_array(g, i, &a, &err) == PL_OK, "kv %llu array: %s",
                       (unsigned long long)i, err.msg);
            if (a.count > 0) {
                if (a.type == PL_GGUF_STRING) {
                    pl_str s;
                    FUZZ_CHECK(pl_gguf_array_string(&a, a.count - 1, &s, &err) == PL_OK,
                               "kv %llu last string: %s", (unsigned long long)i, err.msg);
                } else {
                    uint64_t v;
                    FUZZ_CHECK(pl_gguf_array_elem(&a, a.count - 1, &v, &err) == PL_OK,
                               "kv %llu last element: %s", (unsigned long long)i, err.msg);
                }
            }
        }
    }
}

static void run_one_token(const pl_model *m, const uint8_t *data, size_t size)
{
    pl_model_info info;
    pl_error err = {0};
    pl_status st = pl_model_get_info(m, &info, &err);
    FUZZ_CHECK(st == PL_OK, "get_info on a loaded model: %s", err.msg);
    if (info.weight_bytes > CAP_WEIGHT_BYTES || info.n_layer > CAP_LAYERS ||
        info.n_embd > CAP_DIM || info.n_ff > 4 * CAP_DIM || info.n_vocab < 1 ||
        (uint64_t)info.n_embd * (uint64_t)info.n_vocab > CAP_EMBD_VOCAB)
        return;
    pl_session_params p = pl_session_default_params(m);
    p.n_threads = 1;
    p.context_window = 4;
    p.sliding_window = 0;
    p.prefill_chunk = 2;
    p.kernels = "ref";
    p.kv_type = size && (data[size - 1] & 1) ? PL_TYPE_F16 : PL_TYPE_F32;
    pl_session *s = NULL;
    st = pl_session_new(&s, m, &p, &err);
    if (st != PL_OK) {
        check_error(st, &err, "pl_session_new");
        return;
    }
    float *logits = malloc((size_t)info.n_vocab * sizeof *logits);
    FUZZ_CHECK(logits != NULL, "logits of %lld", (long long)info.n_vocab);
    int32_t tok[2] = {0, (int32_t)(info.n_vocab - 1)};
    st = pl_session_eval(s, tok, 2, logits, 0, &err);
    if (st != PL_OK)
        check_error(st, &err, "pl_session_eval");
    else
        FUZZ_CHECK(pl_session_n_past(s) == 2, "n_past %lld after 2 tokens",
                   (long long)pl_session_n_past(s));
    /* An id out of range is refused, never read. */
    int32_t bad = (int32_t)info.n_vocab;
    st = pl_session_eval(s, &bad, 1, logits, 0, &err);
    FUZZ_CHECK(st != PL_OK, "token id n_vocab accepted");
    free(logits);
    pl_session_free(s);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    for (uint32_t flags = 0; flags <= PL_MODEL_VOCAB_ONLY; flags++) {
        pl_model_params params = {.flags = flags};
        pl_model *m = NULL;
        pl_error err = {0};
        pl_status st = pl_model_load_memory(&m, data, size, &params, &err);
        if (st != PL_OK) {
            check_error(st, &err, "pl_model_load_memory");
            FUZZ_CHECK(m == NULL, "model set on failure");
            continue;
        }
        FUZZ_CHECK(m != NULL, "OK without a model");
        check_tensors(pl_model_gguf(m), data, size);
        if (flags == 0) run_one_token(m, data, size);
        pl_model_free(m);
        if (flags == 0) break; /* a full load includes the tokenizer a vocab-only load reads */
    }
}
