/* plumb.h — the one public header of plumb, a CPU LLM inference engine.
 * Opaque handles and status codes only; bodies live in engine/ internal headers. */
#ifndef PLUMB_H
#define PLUMB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PLUMB_VERSION_MAJOR  0
#define PLUMB_VERSION_MINOR  1
#define PLUMB_VERSION_PATCH  0
#define PLUMB_VERSION_STRING "0.1.0"
/* One integer that orders releases: major * 10000 + minor * 100 + patch. */
#define PLUMB_VERSION                                                                              \
    (PLUMB_VERSION_MAJOR * 10000 + PLUMB_VERSION_MINOR * 100 + PLUMB_VERSION_PATCH)

/* The library's version string, e.g. "0.1.0"; equals PLUMB_VERSION_STRING of the
 * header the library was built with. */
const char *pl_version(void);

/* Status codes. The values are stable: new codes get new numbers, old ones never move. */
typedef enum pl_status {
    PL_OK = 0,
    PL_ERR_INVALID_ARG = -1,       /* a NULL or out-of-range argument from the caller */
    PL_ERR_NOMEM = -2,             /* an allocation failed */
    PL_ERR_IO = -3,                /* open/stat/mmap/read/write failed */
    PL_ERR_FORMAT = -4,            /* the bytes are not a valid file of the expected format */
    PL_ERR_UNSUPPORTED = -5,       /* valid, but uses something plumb does not implement */
    PL_ERR_NOT_FOUND = -6,         /* a key or tensor looked up by name is absent */
    PL_ERR_TYPE = -7,              /* a key or tensor exists but has another type or shape */
    PL_ERR_LIMIT = -8,             /* a size or count exceeds one of plumb's documented limits */
    PL_ERR_CONFIG = -9,            /* inconsistent parameters (reserved for sessions) */
    PL_ERR_CONTEXT_FULL = -10,     /* reserved: the KV cache has no room */
    PL_ERR_CANCELLED = -11,        /* reserved: a callback asked to stop */
    PL_ERR_BUFFER_TOO_SMALL = -12, /* an output buffer is too small; the message says the size */
} pl_status;

/* "PL_ERR_FORMAT" etc.; "PL_ERR_UNKNOWN" for values that are not a pl_status. */
const char *pl_status_str(pl_status s);

/* Every fallible call takes an optional pl_error * (may be NULL). On failure it holds
 * the code and a message naming the field, offset or limit that failed. */
typedef struct pl_error {
    pl_status code;
    char msg[256];
} pl_error;

/* ---------------------------------------------------------------------------------
 * Tensor element types: the ggml/GGUF type ids, bit for bit. plumb implements the
 * ones with traits (pl_type_supported); other ids known to ggml are named in errors. */
typedef enum pl_type {
    PL_TYPE_F32 = 0,
    PL_TYPE_F16 = 1,
    PL_TYPE_Q4_0 = 2,
    PL_TYPE_Q4_1 = 3,
    PL_TYPE_Q5_0 = 6,
    PL_TYPE_Q5_1 = 7,
    PL_TYPE_Q8_0 = 8,
    PL_TYPE_Q4_K = 12,
    PL_TYPE_Q5_K = 13,
    PL_TYPE_Q6_K = 14,
    PL_TYPE_Q8_K = 15, /* activation dot type; valid in files, though rarely used there */
    PL_TYPE_BF16 = 30,
    PL_TYPE_COUNT = 40 /* one past the largest ggml id plumb knows a name for */
} pl_type;

/* "Q4_K", "F16", …; ggml names for ids plumb knows but does not implement ("Q2_K");
 * NULL for ids nobody knows. */
const char *pl_type_name(uint32_t type);
/* 1 if plumb has traits (block layout) for the type id, else 0. */
int pl_type_supported(uint32_t type);
/* Elements per block (1 for F32/F16/BF16) and bytes per block; 0 when unsupported. */
int64_t pl_type_block_size(uint32_t type);
size_t pl_type_block_bytes(uint32_t type);
/* Bytes of a row of n elements; PL_ERR_FORMAT if n is not a multiple of the block
 * size, PL_ERR_UNSUPPORTED for unknown types, PL_ERR_LIMIT on overflow. */
pl_status pl_type_row_bytes(uint32_t type, int64_t n, size_t *out, pl_error *err);

/* ---------------------------------------------------------------------------------
 * GGUF files (v2 and v3, little-endian): a read-only view and a writer.
 *
 * Limits the reader enforces (PL_ERR_LIMIT beyond them): */
#define PL_GGUF_MAX_STRING        (16u << 20) /* bytes in one string value (chat templates are KBs) */
#define PL_GGUF_MAX_KEY           65535u      /* bytes in one key */
#define PL_GGUF_MAX_NAME          256u        /* bytes in one tensor name (ggml uses 64) */
#define PL_GGUF_MAX_ARRAY         (16u << 20) /* elements in one array (vocabularies are ~256k) */
#define PL_GGUF_MAX_KV            65536u      /* metadata key/value pairs */
#define PL_GGUF_MAX_TENSORS       65536u      /* tensor infos */
#define PL_GGUF_MAX_DIMS          4u          /* dimensions of one tensor */
#define PL_GGUF_MAX_ALIGNMENT     65536u      /* general.alignment; must also be a power of two */
#define PL_GGUF_DEFAULT_ALIGNMENT 32u

/* Metadata value types, the GGUF ids. */
typedef enum pl_gguf_type {
    PL_GGUF_UINT8 = 0,
    PL_GGUF_INT8 = 1,
    PL_GGUF_UINT16 = 2,
    PL_GGUF_INT16 = 3,
    PL_GGUF_UINT32 = 4,
    PL_GGUF_INT32 = 5,
    PL_GGUF_FLOAT32 = 6,
    PL_GGUF_BOOL = 7,
    PL_GGUF_STRING = 8,
    PL_GGUF_ARRAY = 9,
    PL_GGUF_UINT64 = 10,
    PL_GGUF_INT64 = 11,
    PL_GGUF_FLOAT64 = 12,
    PL_GGUF_TYPE_COUNT = 13
} pl_gguf_type;

/* "uint32", "string", "array", …; NULL for unknown ids. */
const char *pl_gguf_type_name(uint32_t type);

/* A string inside the file: not NUL-terminated, points into the file's bytes. */
typedef struct pl_str {
    const char *ptr;
    uint64_t len;
} pl_str;

/* An array value. Nested arrays are rejected by the reader (PL_ERR_UNSUPPORTED). */
typedef struct pl_gguf_array {
    pl_gguf_type type; /* element type, never PL_GGUF_ARRAY */
    uint64_t count;
    const void *data; /* little-endian elements, possibly unaligned; NULL for strings */
    const struct pl_gguf *owner;
    uint32_t kv_index;
} pl_gguf_array;

typedef struct pl_tensor_info {
    pl_str name;
    uint32_t type;    /* pl_type */
    uint32_t n_dims;  /* 1..4 */
    int64_t ne[4];    /* elements per dimension, ne[0] innermost; unused dims are 1 */
    uint64_t offset;  /* relative to the data section */
    uint64_t n_bytes; /* bytes of data */
    const void *data; /* points into the file's bytes */
} pl_tensor_info;

typedef struct pl_gguf pl_gguf;

/* Parses a GGUF file held in memory. The bytes must outlive the view (no copy is
 * made). Every count, length and offset is checked before use. */
pl_status pl_gguf_parse(pl_gguf **out, const void *data, size_t size, pl_error *err);
/* Opens a file read-only with mmap and parses it. */
pl_status pl_gguf_open(pl_gguf **out, const char *path, pl_error *err);
void pl_gguf_free(pl_gguf *g);

uint32_t pl_gguf_version(const pl_gguf *g);
uint32_t pl_gguf_alignment(const pl_gguf *g);
uint64_t pl_gguf_data_offset(const pl_gguf *g); /* start of the tensor data section */
size_t pl_gguf_size(const pl_gguf *g);          /* bytes of the whole file */

/* Metadata, by index (in file order) and by key. */
uint64_t pl_gguf_n_kv(const pl_gguf *g);
pl_str pl_gguf_kv_key(const pl_gguf *g, uint64_t i);
pl_gguf_type pl_gguf_kv_type(const pl_gguf *g, uint64_t i);
/* Index of the key, or -1. */
int64_t pl_gguf_find_key(const pl_gguf *g, const char *key);

/* Typed lookups: PL_ERR_NOT_FOUND if the key is missing, PL_ERR_TYPE if it has another
 * type; the message names the key and both types. */
pl_status pl_gguf_get_u8(const pl_gguf *g, const char *key, uint8_t *out, pl_error *err);
pl_status pl_gguf_get_i8(const pl_gguf *g, const char *key, int8_t *out, pl_error *err);
pl_status pl_gguf_get_u16(const pl_gguf *g, const char *key, uint16_t *out, pl_error *err);
pl_status pl_gguf_get_i16(const pl_gguf *g, const char *key, int16_t *out, pl_error *err);
pl_status pl_gguf_get_u32(const pl_gguf *g, const char *key, uint32_t *out, pl_error *err);
pl_status pl_gguf_get_i32(const pl_gguf *g, const char *key, int32_t *out, pl_error *err);
pl_status pl_gguf_get_u64(const pl_gguf *g, const char *key, uint64_t *out, pl_error *err);
pl_status pl_gguf_get_i64(const pl_gguf *g, const char *key, int64_t *out, pl_error *err);
pl_status pl_gguf_get_f32(const pl_gguf *g, const char *key, float *out, pl_error *err);
pl_status pl_gguf_get_f64(const pl_gguf *g, const char *key, double *out, pl_error *err);
pl_status pl_gguf_get_bool(const pl_gguf *g, const char *key, int *out, pl_error *err);
pl_status pl_gguf_get_string(const pl_gguf *g, const char *key, pl_str *out, pl_error *err);
pl_status pl_gguf_get_array(const pl_gguf *g, const char *key, pl_gguf_array *out, pl_error *err);

/* The same, by index (no type conversion; PL_ERR_TYPE on mismatch). */
pl_status pl_gguf_kv_scalar(const pl_gguf *g, uint64_t i, pl_gguf_type type, void *out,
                            pl_error *err);
pl_status pl_gguf_kv_string(const pl_gguf *g, uint64_t i, pl_str *out, pl_error *err);
pl_status pl_gguf_kv_array(const pl_gguf *g, uint64_t i, pl_gguf_array *out, pl_error *err);

/* Array elements. Strings: element i of a string array. Numbers: element i copied
 * into *out (which must be the element type's size). Out of range: PL_ERR_INVALID_ARG. */
pl_status pl_gguf_array_string(const pl_gguf_array *a, uint64_t i, pl_str *out, pl_error *err);
pl_status pl_gguf_array_elem(const pl_gguf_array *a, uint64_t i, void *out, pl_error *err);

/* Tensors, by index (file order) and by name. */
uint64_t pl_gguf_n_tensors(const pl_gguf *g);
pl_status pl_gguf_tensor(const pl_gguf *g, uint64_t i, pl_tensor_info *out, pl_error *err);
/* Index of the tensor, or -1. */
int64_t pl_gguf_find_tensor(const pl_gguf *g, const char *name);

/* ---- writer -------------------------------------------------------------------- */
typedef struct pl_gguf_writer pl_gguf_writer;

/* version: 2 or 3. Metadata keys are written in the order they were first set; setting
 * a key again replaces its value. "general.alignment" (uint32) sets the alignment. */
pl_status pl_gguf_writer_new(pl_gguf_writer **out, uint32_t version, pl_error *err);
void pl_gguf_writer_free(pl_gguf_writer *w);

/* Scalar of any numeric/bool type; value points to one element of that type
 * (bool: one uint8_t holding 0 or 1). Key and values are copied. */
pl_status pl_gguf_writer_set(pl_gguf_writer *w, const char *key, pl_gguf_type type,
                             const void *value, pl_error *err);
pl_status pl_gguf_writer_set_u32(pl_gguf_writer *w, const char *key, uint32_t v, pl_error *err);
pl_status pl_gguf_writer_set_f32(pl_gguf_writer *w, const char *key, float v, pl_error *err);
pl_status pl_gguf_writer_set_string(pl_gguf_writer *w, const char *key, const char *s, size_t len,
                                    pl_error *err);
/* Array of numbers/bools: count elements of elem_type, packed. */
pl_status pl_gguf_writer_set_array(pl_gguf_writer *w, const char *key, pl_gguf_type elem_type,
                                   const void *data, uint64_t count, pl_error *err);
/* Array of strings: strs[i] with lens[i] bytes (lens NULL: NUL-terminated). */
pl_status pl_gguf_writer_set_array_str(pl_gguf_writer *w, const char *key, const char *const *strs,
                                       const size_t *lens, uint64_t count, pl_error *err);
/* Adds a tensor. ne[0] must be a multiple of the type's block size; data must hold
 * the tensor's bytes and is referenced, not copied: keep it alive until written. */
pl_status pl_gguf_writer_add_tensor(pl_gguf_writer *w, const char *name, uint32_t type,
                                    uint32_t n_dims, const int64_t *ne, const void *data,
                                    pl_error *err);
/* Writes the whole file. To a path (written to PATH.tmp, then renamed, so a failed
 * write never leaves a half file), or to a new buffer freed with pl_buffer_free. */
pl_status pl_gguf_writer_write_file(const pl_gguf_writer *w, const char *path, pl_error *err);
pl_status pl_gguf_writer_write_memory(const pl_gguf_writer *w, void **out, size_t *out_size,
                                      pl_error *err);
void pl_buffer_free(void *buf);

/* ---------------------------------------------------------------------------------
 * Models. A model is immutable after load and may be shared by many sessions. */
typedef struct pl_model pl_model;
typedef struct pl_session pl_session; /* KV cache, prefix-cache state, scratch (later) */
typedef struct pl_sampler pl_sampler; /* sampler chain (later) */

typedef struct pl_model_params {
    uint32_t flags; /* reserved, must be 0 */
} pl_model_params;

/* params may be NULL for defaults. The file is mapped read-only; weights are never copied. */
pl_status pl_model_load(pl_model **out, const char *path, const pl_model_params *params,
                        pl_error *err);
/* The bytes must outlive the model (used by fuzzers and tests). */
pl_status pl_model_load_memory(pl_model **out, const void *data, size_t size,
                               const pl_model_params *params, pl_error *err);
void pl_model_free(pl_model *m);
/* The GGUF view the model was loaded from; owned by the model. */
const pl_gguf *pl_model_gguf(const pl_model *m);

#ifdef __cplusplus
}
#endif
#endif
