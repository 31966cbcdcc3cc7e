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

/* ---- the vocabulary shared with the kernels: kept byte for byte equal to the block of
 * kernels/pl_base.h (layers_public_header_mirrors_kernel_base_types checks it) ---- */
#ifndef PL_BASE_TYPES_DEFINED
#define PL_BASE_TYPES_DEFINED
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
    PL_ERR_CONTEXT_FULL = -10,     /* the KV cache has no room */
    PL_ERR_CANCELLED = -11,        /* reserved: a callback asked to stop */
    PL_ERR_BUFFER_TOO_SMALL = -12, /* an output buffer is too small; the message says the size */
} pl_status;

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
    PL_TYPE_Q2_K = 10,
    PL_TYPE_Q3_K = 11,
    PL_TYPE_Q4_K = 12,
    PL_TYPE_Q5_K = 13,
    PL_TYPE_Q6_K = 14,
    PL_TYPE_Q8_K = 15, /* activation dot type; valid in files, though rarely used there */
    PL_TYPE_IQ4_NL = 20,
    PL_TYPE_IQ4_XS = 23,
    PL_TYPE_BF16 = 30,
    PL_TYPE_MXFP4 = 39, /* OCP microscaling FP4: E2M1 codes, one E8M0 scale per 32 */
    PL_TYPE_COUNT = 40  /* one past the largest ggml id plumb knows a name for */
} pl_type;
#endif /* PL_BASE_TYPES_DEFINED */
/* ---- end of the shared vocabulary ---- */

/* "PL_ERR_FORMAT" etc.; "PL_ERR_UNKNOWN" for values that are not a pl_status. */
const char *pl_status_str(pl_status s);

/* ---- small helpers the library uses and shares with its clients (the CLI, the server,
 * benchmarks), so that each exists once ---- */

/* Nanoseconds of the monotonic clock (CLOCK_MONOTONIC) from an unspecified start: the one clock
 * plumb times anything with (timings, deadlines). Never goes back with the wall clock. */
uint64_t pl_clock_ns(void);
/* The same clock in seconds. */
double pl_clock_s(void);
/* The length of the valid UTF-8 character at s (n bytes available): 1 to 4, or 0 when s[0..n)
 * does not start with one. Strict: no overlong forms, no surrogates, nothing above U+10FFFF. */
size_t pl_utf8_char(const unsigned char *s, size_t n);
/* s[0..n) as the inside of a JSON string literal (no quotes): '"' and '\\' escaped, \b \f \n
 * \r \t, other control bytes and DEL as \u00XX, valid UTF-8 as it is, each byte that starts no
 * valid character (pl_utf8_char) as \ufffd. Writes at most cap bytes into buf, NUL-terminated
 * when cap > 0 (buf may be NULL when cap is 0); returns the length of the whole escape, so a
 * return >= cap means it was cut (snprintf style). */
size_t pl_json_escape(char *buf, size_t cap, const char *s, size_t n);
/* The kind of a jansson value in words, for messages ("must be a string, not an array"): "an
 * object", "an array", "a string", "an integer", "a real number", "a boolean", "null"; "a JSON
 * value" for NULL. (plumb links jansson; this header does not include it.) */
struct json_t;
const char *pl_json_kind(const struct json_t *v);

/* ---------------------------------------------------------------------------------
 * Tensor element types (pl_type above): names, traits and row sizes. */
/* "Q4_K", "F16", …; ggml names for ids plumb knows but does not implement ("IQ2_XXS");
 * NULL for ids nobody knows. */
const char *pl_type_name(uint32_t type);
/* 1 if plumb has traits (block layout) for the type id, else 0. */
int pl_type_supported(uint32_t type);
/* Elements per block (1 for F32/F16/BF16) and bytes per block; 0 when unsupported. */
int64_t pl_type_block_size(uint32_t type);
size_t pl_type_block_bytes(uint32_t type);
/* Bytes of a row of n elements; PL_ERR_FORMAT if n is not a positive multiple of the
 * block size or the id is unknown to ggml too, PL_ERR_UNSUPPORTED for a ggml type plumb
 * does not implement (IQ2_XXS, IQ3_S, …), PL_ERR_LIMIT on overflow. */
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
/* Bytes of one scalar of the type (bool: 1); 0 for string, array and unknown ids. */
size_t pl_gguf_type_size(uint32_t type);

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

/* One value of any GGUF number or bool type as pl_gguf_kv_scalar and pl_gguf_array_elem copy it
 * out (a bool is one byte, 0 or 1): somewhere to read a value into before its type is known. */
typedef union pl_gguf_scalar {
    uint8_t u8;
    int8_t i8;
    uint16_t u16;
    int16_t i16;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f32;
    double f64;
    unsigned char bytes[8];
} pl_gguf_scalar;

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
typedef struct pl_session pl_session; /* KV cache, its history (ids and text), scratch */
typedef struct pl_sampler pl_sampler; /* sampler chain and its random stream */

/* pl_model_params.flags */
#define PL_MODEL_VOCAB_ONLY 1u /* load only the tokenizer; the file may hold no tensors */
#define PL_MODEL_NO_REPACK  2u /* run every weight straight from the mapping */

typedef struct pl_model_params {
    uint32_t flags;      /* PL_MODEL_* bits; others must be 0 */
    const char *kernels; /* the model's kernel set, chosen once: the layouts repacked for it,
                          * and the set its sessions and samplers run unless their params name
                          * another; NULL: PLUMB_KERNELS, else the best this CPU runs */
} pl_model_params;

/* Whether name is a kernel set for pl_model_params.kernels and the sessions' and samplers':
 * PL_OK if this CPU runs it; PL_ERR_NOT_FOUND (the message lists the compiled sets) if no set
 * has the name; PL_ERR_UNSUPPORTED (it lists those this CPU runs) if this CPU cannot run it. */
pl_status pl_kernel_set_check(const char *name, pl_error *err);

/* params may be NULL for defaults. The file is mapped read-only. Weights run from the mapping,
 * except that the matmul weights of the types the kernel set repacks (rows interleaved so one
 * activation load feeds several rows) are copied once into that layout, at load: it costs load
 * time and memory (pl_model_info says how much) and changes no result, bit for bit. Sessions
 * of another kernel set run from the mapping. PL_MODEL_NO_REPACK turns it off. */
pl_status pl_model_load(pl_model **out, const char *path, const pl_model_params *params,
                        pl_error *err);
/* The bytes must outlive the model (used by fuzzers and tests). */
pl_status pl_model_load_memory(pl_model **out, const void *data, size_t size,
                               const pl_model_params *params, pl_error *err);
void pl_model_free(pl_model *m);
/* The GGUF view the model was loaded from; owned by the model. */
const pl_gguf *pl_model_gguf(const pl_model *m);

/* ---- tokenizer -------------------------------------------------------------------
 * Text <-> token ids with the vocabulary in the model's tokenizer.ggml.* metadata:
 * SentencePiece BPE ("llama") and byte-level BPE ("gpt2", with every byte-level pre-tokenizer
 * llama.cpp names in tokenizer.ggml.pre; engine/tokenizer/README.md lists them). Token ids are
 * int32_t, 0 <= id < pl_vocab_n_tokens(m). Every call is thread-safe on a shared model. Functions
 * that fill a caller buffer write at most cap elements and always set *n_out to the count needed; a
 * too-small buffer is PL_ERR_BUFFER_TOO_SMALL with the size in the message, never an overflow. */

/* Token types: the GGUF tokenizer.ggml.token_type values. */
typedef enum pl_token_type {
    PL_TOKEN_UNDEFINED = 0, /* treated as normal */
    PL_TOKEN_NORMAL = 1,
    PL_TOKEN_UNKNOWN = 2,
    PL_TOKEN_CONTROL = 3,      /* BOS, EOS, <|im_start|>…: matched in text only on request */
    PL_TOKEN_USER_DEFINED = 4, /* always matched in text as a whole */
    PL_TOKEN_UNUSED = 5,
    PL_TOKEN_BYTE = 6,    /* <0xXX>: SentencePiece byte fallback */
    PL_TOKEN_INVALID = -1 /* returned for ids out of range */
} pl_token_type;

/* pl_tokenize flags */
/* Add the special tokens the model was trained with: BOS first when the vocabulary says so
 * (tokenizer.ggml.add_bos_token; default yes for "llama" and "llama-bpe", no otherwise), and
 * EOS last when tokenizer.ggml.add_eos_token is true (default no). */
#define PL_TOKENIZE_ADD_BOS 1u
/* Match control tokens (and the unknown token) written in the text, e.g. "<|im_start|>".
 * Without it they are tokenized as plain text, so user input cannot forge them. */
#define PL_TOKENIZE_PARSE_SPECIAL 2u

/* Text (len bytes, any bytes; NUL is ordinary) -> ids in out[0..cap). Empty text gives only
 * what ADD_BOS adds. SentencePiece vocabularies with add_space_prefix put one space before the
 * text and after each special token matched in it (as llama.cpp does). */
pl_status pl_tokenize(const pl_model *m, const char *text, size_t len, uint32_t flags, int32_t *out,
                      size_t cap, size_t *n_out, pl_error *err);

/* The text pl_tokenize tokenizes (flags: PL_TOKENIZE_PARSE_SPECIAL as there): each run of valid
 * UTF-8 outside the matched control tokens in the Unicode normal form the vocabulary declares
 * (tokenizer.ggml.normalizer; "qwen2" pre-tokenizers imply NFC, as their tokenizer.json does),
 * everything else byte for byte. For byte-level BPE, pl_detokenize(pl_tokenize(x)) ==
 * pl_normalize(x). Not NUL-terminated; *n_out is always the length it needs. */
pl_status pl_normalize(const pl_model *m, const char *text, size_t len, uint32_t flags, char *out,
                       size_t cap, size_t *n_out, pl_error *err);

/* pl_token_to_piece / pl_detokenize / pl_detok flags */
#define PL_DETOK_SPECIAL 1u /* render control tokens as their text (otherwise they are empty) */
/* Undo the SentencePiece dummy prefix: drop one leading space of the first piece and of the
 * piece after each control or user-defined token, so that for those vocabularies
 * pl_detokenize(pl_tokenize(x)) == x (x without U+2581, which SentencePiece reads as a
 * space). Byte-level BPE round-trips any bytes exactly, with or without this flag. */
#define PL_DETOK_STRIP_PREFIX 2u

/* The bytes one token decodes to (only PL_DETOK_SPECIAL applies). A piece may be part of a
 * UTF-8 character (byte tokens, byte-level BPE); use pl_detok to print a stream. */
pl_status pl_token_to_piece(const pl_model *m, int32_t token, uint32_t flags, char *buf, size_t cap,
                            size_t *n_out, pl_error *err);
/* The concatenated pieces of n tokens; not NUL-terminated. */
pl_status pl_detokenize(const pl_model *m, const int32_t *tokens, size_t n, uint32_t flags,
                        char *buf, size_t cap, size_t *n_out, pl_error *err);

/* Streaming decoder: push tokens one at a time and get the bytes that now form whole UTF-8
 * characters; an incomplete character is held back (at most 3 bytes) until it completes or
 * can no longer complete (invalid bytes are passed through as they are). The concatenation of
 * every push and the final flush equals pl_detokenize of the same tokens with the same flags.
 * A push or flush into a too-small buffer changes nothing (retry with *n_out bytes). The model
 * must outlive the decoder; one decoder per stream (not thread-safe itself). */
typedef struct pl_detok pl_detok;
pl_status pl_detok_new(pl_detok **out, const pl_model *m, uint32_t flags, pl_error *err);
void pl_detok_free(pl_detok *d);
pl_status pl_detok_push(pl_detok *d, int32_t token, char *buf, size_t cap, size_t *n_out,
                        pl_error *err);
/* Emits what is held back and resets the decoder for a new stream. */
pl_status pl_detok_flush(pl_detok *d, char *buf, size_t cap, size_t *n_out, pl_error *err);

/* Vocabulary. Ids are -1 where the model has none (or no tokenizer). */
int32_t pl_vocab_n_tokens(const pl_model *m);
int32_t pl_vocab_bos(const pl_model *m);
int32_t pl_vocab_eos(const pl_model *m);
/* End of turn: tokenizer.ggml.eot_token_id, else a token named <|eot_id|>, <|im_end|>,
 * <|end|> or <end_of_turn>. */
int32_t pl_vocab_eot(const pl_model *m);
int32_t pl_vocab_pad(const pl_model *m);
int32_t pl_vocab_unk(const pl_model *m);
/* 1 if generation should stop at the token, else 0: llama.cpp's end-of-generation set, EOS, EOT,
 * end of message and the control tokens named like an end (<|endoftext|>, <|im_end|>,
 * <|eot_id|>, <|end|>, <end_of_turn>, <|eom_id|>, <|end_of_text|>, <EOT>, ...). */
int pl_vocab_is_eog(const pl_model *m, int32_t token);
pl_token_type pl_vocab_token_type(const pl_model *m, int32_t token);
/* The token's text as stored in the file (e.g. "Ġthe", "▁the", "<0x0A>"); {"", 0} out of range. */
pl_str pl_vocab_token_text(const pl_model *m, int32_t token);

/* Chat templates: a conversation -> the prompt text the model's own chat template renders.
 * The model's tokenizer.chat_template (Jinja source) is compiled once at load (immutable, shared
 * by every session and thread) and run by plumb's sandboxed Jinja engine, which renders byte for
 * byte what transformers' apply_chat_template renders (jinja2 with trim_blocks, lstrip_blocks,
 * its tojson, raise_exception, strftime_now in UTC), with transformers' variables: messages,
 * add_generation_prompt, tools and documents (null unless given), bos_token and eos_token (the
 * texts of the model's BOS and EOS tokens; "" where it has none), and every other key the caller
 * passes (enable_thinking, date_string, ...). A render is bounded (steps, depth, loop iterations,
 * output, memory: PL_ERR_LIMIT) and does no I/O. A template that does not compile does not fail
 * the load: completions work, pl_model_chat_template says why, and every chat path returns that
 * error. The text includes the BOS text where the template writes it ("<|begin_of_text|>",
 * "<s>"): tokenize it with PL_TOKENIZE_PARSE_SPECIAL and without PL_TOKENIZE_ADD_BOS.
 *
 * Built-in renderers, chosen only by name, each proven byte-identical to the real templates it
 * is named after (conformance/test_chat.c) for conversations of role and content:
 *   "chatml"   <|im_start|>role\ncontent<|im_end|>\n … (any role)
 *   "qwen2"    ChatML with Qwen2's default system message when none is given
 *   "qwen2.5"  Qwen2.5 Instruct without tools (its default system message)
 *   "llama3"   Llama 3 Instruct (<|start_header_id|>…, content trimmed)
 *   "llama2"   Llama 2 chat ([INST] <<SYS>> … [/INST], roles must alternate)
 *   "mistral"  Mistral Instruct v0.1/v0.2 (" [INST] … [/INST]", system merged into the
 *              first user message, roles must alternate)
 * A built-in renders role and string content only: tools, tool_calls, content parts and other
 * message keys are PL_ERR_UNSUPPORTED there (the model's template takes them). */
typedef struct pl_chat_message {
    const char *role; /* "system", "user", "assistant", "tool", … (the template decides) */
    const char *content;
} pl_chat_message;

/* The built-in template names, NULL-terminated. */
const char *const *pl_chat_template_names(void);
/* Names the built-in that renders exactly this template source (len bytes): the sources each
 * built-in is proven against, matched whole, byte for byte (template.c lists them). Anything else,
 * a near variant included, is PL_ERR_NOT_FOUND: such a template is run by the Jinja engine, never
 * by a look-alike built-in. */
pl_status pl_chat_template_detect(const char *tmpl, size_t len, const char **name, pl_error *err);
/* The model's template as compiled at load. PL_OK: it compiled; *src / *len (either may be NULL)
 * give its source. PL_ERR_NOT_FOUND: the model has none (no tokenizer.chat_template, or empty).
 * Otherwise the compile error (PL_ERR_FORMAT, PL_ERR_UNSUPPORTED, PL_ERR_LIMIT, PL_ERR_TYPE for
 * a key that is not a string) with "the model's chat template does not compile: template line
 * 3, column 14: …"; every chat path that uses the model's template returns this error. */
pl_status pl_model_chat_template(const pl_model *m, const char **src, size_t *len, pl_error *err);

/* A template chosen by the caller instead of the model's: Jinja source compiled as the model's
 * is (llama-server's --chat-template-file), or a built-in by name. Immutable; may be shared by
 * threads; free with pl_chat_template_free. NULL wherever one is taken: the model's own. */
typedef struct pl_chat_template pl_chat_template;
/* Errors as pl_model_chat_template's, naming line and column. */
pl_status pl_chat_template_compile(pl_chat_template **out, const char *src, size_t len,
                                   pl_error *err);
/* PL_ERR_NOT_FOUND listing the known names for another name. */
pl_status pl_chat_template_builtin(pl_chat_template **out, const char *name, pl_error *err);
void pl_chat_template_free(pl_chat_template *t);
/* 1 when the template's source names role as a quoted string literal ('developer' or
 * "developer"): the template has a branch of its own for that role. 0 otherwise, for a
 * built-in, and for a model whose template is missing or does not compile. t NULL: the model's.
 * The server maps OpenAI's "developer" to "system" where the template does not know it. */
int pl_chat_template_knows_role(const pl_model *m, const pl_chat_template *t, const char *role);

/* Renders a conversation given as one JSON object (len bytes, UTF-8): the variables the
 * template sees, as transformers passes them:
 *   {"messages": [{"role": "user", "content": "Hi"},
 *                 {"role": "assistant", "content": null, "reasoning_content": "…",
 *                  "tool_calls": [{"id": "…", "type": "function",
 *                                  "function": {"name": "f", "arguments": {"x": 1}}}]},
 *                 {"role": "tool", "tool_call_id": "…", "name": "f", "content": "…"}],
 *    "tools": [{"type": "function", "function": {"name": "f", "parameters": {…}}}],
 *    "enable_thinking": false, …}
 * Content is a string or a list of parts ({"type": "text", "text": …}), as the template expects
 * it. add_generation_prompt sets that variable (replacing a key of the same name); bos_token and
 * eos_token are the model's unless the object gives them; tools and documents are null unless
 * given. t NULL: the model's template (m required). Buffer contract as pl_chat_render. Errors:
 * PL_ERR_INVALID_ARG for JSON that is not an object with a "messages" array (the message names
 * the line and column) and for what the template raises (raise_exception: "raised: <its
 * message>", a type error), with the template's line and column; PL_ERR_LIMIT past a render
 * bound; the model template's compile error (above). */
pl_status pl_chat_render_json(const pl_model *m, const pl_chat_template *t, const char *json,
                              size_t len, int add_generation_prompt, char *buf, size_t cap,
                              size_t *n_out, pl_error *err);
/* pl_chat_render_json of a conversation its caller already holds as a jansson value (a json_t
 * object with a "messages" array, as `plumb serve` holds a request), without printing it to JSON
 * text and parsing it again: the same prompt, the same errors but for the parse's. conversation
 * is not changed. */
pl_status pl_chat_render_jansson(const pl_model *m, const pl_chat_template *t,
                                 const struct json_t *conversation, int add_generation_prompt,
                                 char *buf, size_t cap, size_t *n_out, pl_error *err);
/* Renders n messages of role and content: pl_chat_render_json of {"messages": [...]}, with t
 * (NULL: the model's template). Bytes of a role or content that are not UTF-8 (a model's raw
 * reply cut inside a character) reach the prompt unchanged, as surrogateescape would carry them
 * in Python (such a conversation must not also hold U+F0080..U+F00FF, which carry them here).
 * m supplies the BOS/EOS texts and may be NULL when t is a built-in (the family's usual "<s>",
 * … are used). add_generation_prompt appends the assistant's opening where the template has
 * one. Not NUL-terminated. A conversation the template itself rejects (roles that do not
 * alternate for llama2/mistral, raise_exception) is PL_ERR_INVALID_ARG with the template's
 * reason. */
pl_status pl_chat_render_with(const pl_model *m, const pl_chat_template *t,
                              const pl_chat_message *msgs, size_t n, int add_generation_prompt,
                              char *buf, size_t cap, size_t *n_out, pl_error *err);
/* pl_chat_render_with the built-in called name (PL_ERR_NOT_FOUND for another name), or with the
 * model's template when name is NULL. */
pl_status pl_chat_render(const pl_model *m, const char *name, const pl_chat_message *msgs, size_t n,
                         int add_generation_prompt, char *buf, size_t cap, size_t *n_out,
                         pl_error *err);
/* ---- end of tokenizer ------------------------------------------------------------ */

/* ---- architectures: what a model file of each consists of ------------------------------------
 * The loader binds every tensor of a file to a role of its architecture and refuses the rest; these
 * calls tell a writer (`plumb mkmodel`, a converter of one's own) what that set is. */

/* The values of general.architecture plumb runs, from its architecture table, joined by ", "
 * ("llama, qwen2, qwen3, ..."). */
const char *pl_arch_list(void);
/* The Hugging Face classes (config.json "architectures") pl_convert_hf reads, joined by ", "
 * ("LlamaForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, ..."). */
const char *pl_arch_hf_list(void);

/* Experts a token may use at most (<arch>.expert_used_count). */
#define PL_ARCH_MAX_EXPERT_USED 64

typedef struct pl_arch_shape {
    int64_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab;
    int64_t head_dim; /* 0: n_embd / n_head */
    int64_t n_rot;    /* 0: head_dim */
    int tied;         /* 1: no output.weight (token_embd.weight is the output projection) */
    /* mixture of experts (0: dense): experts per layer, used per token, an expert's FFN width
     * (0: n_ff), the shared expert's (qwen2moe; 0: n_ff) */
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
} pl_arch_shape;

/* What a tensor is, for a writer choosing its values. */
typedef enum pl_arch_tensor_kind {
    PL_ARCH_T_EMBD = 0,       /* token embedding, or an untied output projection */
    PL_ARCH_T_MATRIX_IN = 1,  /* reads the normalised residual stream (q, k, v, gate, up) */
    PL_ARCH_T_MATRIX_OUT = 2, /* writes into the residual stream (attn_output, ffn_down) */
    PL_ARCH_T_NORM = 3,       /* a norm's weight (the multiplier itself) */
    PL_ARCH_T_BIAS = 4,
    PL_ARCH_T_FACTORS = 5, /* RoPE frequency divisors */
    PL_ARCH_T_ROUTER = 6   /* a mixture-of-experts router or shared-expert gate (F32) */
} pl_arch_tensor_kind;

typedef struct pl_arch_tensor_desc {
    char name[96];   /* "blk.3.attn_q.weight" */
    uint32_t n_dims; /* 1 (F32 vectors), 2, or 3 (stacked experts: ne[2] of them) */
    int64_t ne[3];   /* ne[0]: the row length; ne[1] = 1 for vectors; ne[2] = 1 unless 3 dims */
    int64_t layer;   /* -1: a whole-model tensor */
    pl_arch_tensor_kind kind;
} pl_arch_tensor_desc;

/* The tensors a file of architecture `arch` with this shape holds (the required ones, and
 * output.weight unless tied), in llama.cpp's file order: the embedding, the layers, the rest.
 * *n gets the count; out may be NULL to count (else cap entries; PL_ERR_BUFFER_TOO_SMALL).
 * PL_ERR_UNSUPPORTED naming the known ones for an unknown arch, PL_ERR_INVALID_ARG for a bad
 * shape. */
pl_status pl_arch_tensors(const char *arch, const pl_arch_shape *shape, pl_arch_tensor_desc *out,
                          size_t cap, size_t *n, pl_error *err);

/* The values under "<arch>." a writer gives beside the shape. */
typedef struct pl_arch_hparams {
    int64_t n_ctx;   /* context_length; 0: left out (read as 2048) */
    float rms_eps;   /* attention.layer_norm_rms_epsilon: > 0 */
    float rope_base; /* rope.freq_base; 0: left out (read as 10000) */
    int64_t window;  /* > 0: attention.sliding_window (the local layers'); 0: left out */
    float attn_softcap, final_softcap; /* > 0: the soft-caps; 0: left out (the architecture's
                                          default); a cap equal to that default is left out */
    /* > 0: Granite's multipliers (embedding_scale, residual_scale, attention.scale, and
     * logit_scale: the logits are divided by it); 0: left out */
    float embedding_scale, residual_scale, attention_scale, logit_divisor;
    float logit_scale; /* > 0: logit_scale (cohere2: the logits times it); 0: left out */
    /* > 1: YaRN by this factor over yarn_orig_ctx positions (rope.scaling.type "yarn", factor,
     * original_context_length), with yarn_no_truncate its correction range unrounded
     * (rope.scaling.yarn_truncate = false: gpt-oss); 0: no scaling keys */
    float yarn_factor;
    int64_t yarn_orig_ctx;
    int yarn_no_truncate;
} pl_arch_hparams;

/* Writes general.architecture and the keys under "<arch>." a file of this shape needs, from the
 * architecture table (the one writer `convert`, `plumb mkmodel` and the tests go through):
 * sizes, head and RoPE dims, vocab_size, the expert counts and the widths the architecture has
 * keys for, and hp. PL_ERR_UNSUPPORTED for an unknown arch or a value whose key it lacks (a
 * window or a soft-cap), PL_ERR_INVALID_ARG for a shape pl_arch_tensors refuses or a value
 * outside the key's range, naming it. */
pl_status pl_arch_write_keys(pl_gguf_writer *w, const char *arch, const pl_arch_shape *shape,
                             const pl_arch_hparams *hp, pl_error *err);

/* What the model binds from its file (zeros for a PL_MODEL_VOCAB_ONLY model). */
typedef struct pl_model_info {
    char arch[16]; /* general.architecture: one of pl_arch_list() */
    int64_t n_vocab;
    int64_t n_ctx_train; /* <arch>.context_length */
    int64_t n_embd;
    int64_t n_layer;
    int64_t n_head;    /* of layer 0; per-layer arrays are supported */
    int64_t n_head_kv; /* of layer 0 */
    int64_t head_dim;
    int64_t n_ff; /* of layer 0 */
    int64_t n_rot;
    float rms_eps;
    float rope_base;
    int tied_embeddings;   /* 1 when output.weight is absent and token_embd is reused */
    uint64_t weight_bytes; /* bytes of all bound tensors (they stay in the mapping) */
    uint64_t n_params;
    uint64_t step_weight_bytes; /* weight bytes one decode step reads: every matmul weight
                                 * and vector, but one row of an untied embedding table and,
                                 * of stacked experts, the n_expert_used a token is routed to */
    char kernels[32];           /* the model's kernel set: its sessions' and samplers' default */
    char repack_set[16];        /* the kernel set whose layouts were built; "" when none */
    int n_repacked;             /* weight tensors copied into it */
    uint64_t repack_bytes;      /* the copies' memory */
    double repack_ms;           /* the time it took at load */
    int64_t n_expert;           /* experts per MoE layer (0: dense) */
    int64_t n_expert_used;      /* of them, per token */
    uint64_t n_active_params;   /* the parameters a token multiplies through: n_params less the
                                 * experts it is not routed to */
} pl_model_info;
pl_status pl_model_get_info(const pl_model *m, pl_model_info *out, pl_error *err);

/* ---- sessions: KV cache + scratch over a shared model ---- */

/* An external forward pass: a session whose forward runs elsewhere (a GPU in another thread,
 * another process) while the session keeps everything else: the history, pl_chat's prefix
 * cache plan and its truncation on divergence, the sampler, the detokenizer, the stop rules.
 * The session calls eval for every forward step (prefill in chunks of prefill_chunk, as its own
 * forward) and truncate wherever it drops cached positions (pl_session_truncate,
 * pl_session_reset, pl_chat's divergence paths, a failed eval's rollback), so the external
 * cache always holds exactly the session's history. The external forward computes what the
 * session's params say (the context window, or the sliding window and sinks: its attention
 * sees what the session's would) for the model the session was made with. */
typedef struct pl_forward_hook {
    /* Evaluates ids[0..n) at positions [pos0, pos0 + n), after the pos0 positions it holds
     * (pos0 is always what it holds: the session truncates it first); when logits is
     * non-NULL, writes the logits of tokens [out0, n) there (n - out0 rows of n_vocab). Returns
     * PL_OK, or an error status with its reason in err (err is never NULL): the session
     * returns that status and message, rolls the hook back to pos0 and is as before. */
    pl_status (*eval)(void *user, const int32_t *ids, int64_t n, int64_t pos0, float *logits,
                      int64_t out0, pl_error *err);
    /* Keeps the first n held positions (n <= what it holds; after a failed eval, pos0 of that
     * eval). An error must leave it holding what it held: the session is then as before the
     * call that asked (pl_session_reset cannot fail: there the truncation is asked again
     * before the next eval, which fails with the hook's error while it does). */
    pl_status (*truncate)(void *user, int64_t n, pl_error *err);
    void *user;
    const char *name; /* what pl_session_info.kernels says (at most 31 bytes); NULL: "external" */
} pl_forward_hook;

/* Exactly one of context_window and sliding_window is positive (else PL_ERR_CONFIG).
 * Sliding window (StreamingLLM): the first attention_sinks tokens stay visible forever,
 * plus the most recent (sliding_window - attention_sinks) tokens including the current
 * one; 0 <= attention_sinks < sliding_window. Positions: every token keeps its absolute
 * position in the text for RoPE (nothing is re-rotated when older tokens are evicted). */
typedef struct pl_session_params {
    int n_threads;          /* 0: PLUMB_THREADS, else one per physical core */
    int64_t context_window; /* tokens the session can hold; full -> PL_ERR_CONTEXT_FULL */
    int64_t sliding_window;
    int64_t attention_sinks;
    int64_t prefill_chunk; /* tokens per forward step when prefilling (>= 1) */
    pl_type kv_type;       /* PL_TYPE_F32 or PL_TYPE_F16 */
    const char *kernels;   /* kernel set name; NULL: the model's (pl_model_params.kernels) */
    /* Non-NULL: the session's forward is this hook (copied at pl_session_new; eval and
     * truncate both required, else PL_ERR_CONFIG). The session then allocates no KV cache
     * and no scratch and runs no threads of its own (kv_bytes and scratch_bytes are 0, kv_type
     * and n_threads are not used), and reads no weights: the model (loaded whole all the same)
     * supplies the vocabulary, the chat template and the shapes. */
    const pl_forward_hook *forward;
} pl_session_params;

/* Defaults: context_window = min(n_ctx_train, 4096), prefill_chunk 64, F16 KV, no hook. */
pl_session_params pl_session_default_params(const pl_model *m);
pl_status pl_session_new(pl_session **out, const pl_model *m, const pl_session_params *params,
                         pl_error *err);
void pl_session_free(pl_session *s);

#define PL_EVAL_ALL_LOGITS 1u /* logits of every token (n * n_vocab), else of the last */

/* Evaluates n tokens at the next positions (prefill in chunks of prefill_chunk).
 * logits may be NULL. On any error the session is exactly as before the call
 * (PL_ERR_CONTEXT_FULL when a context window would overflow). */
pl_status pl_session_eval(pl_session *s, const int32_t *tokens, int64_t n, float *logits,
                          uint32_t flags, pl_error *err);
int64_t pl_session_n_past(const pl_session *s);
/* Keeps the first n tokens. With a sliding window, fails (PL_ERR_INVALID_ARG, session
 * unchanged) when tokens the next query would need were already evicted. */
pl_status pl_session_truncate(pl_session *s, int64_t n, pl_error *err);
void pl_session_reset(pl_session *s);

typedef struct pl_session_info {
    uint64_t kv_bytes;      /* the KV cache */
    uint64_t scratch_bytes; /* the scratch arena */
    int n_threads;
    char kernels[32];    /* the kernel set in use */
    int64_t kv_capacity; /* slots in the cache */
    int repacked;        /* 1: this session runs the model's repacked weights */
    /* Since the session was created: time inside forward steps (pl_session_eval and what
     * calls it), and the part of it in attention (a profile: their ratio is attention's
     * share). 0 from pl_session_estimate. */
    uint64_t eval_ns, attention_ns;
    /* The thread pool's profile over the same time: the calling thread's time running its
     * share of parallel regions (pool_work_ns) and waiting at their ends for the other threads
     * (pool_wait_ns); eval_ns minus both is the time no other thread could help (one-thread
     * regions and the serial code between regions). pool_runs: parallel regions;
     * pool_benched_runs: regions that left out a thread which had stalled one before. */
    uint64_t pool_work_ns, pool_wait_ns, pool_runs, pool_benched_runs;
} pl_session_info;
pl_status pl_session_get_info(const pl_session *s, pl_session_info *out, pl_error *err);
/* What pl_session_new with these params (NULL: defaults) would allocate, without allocating:
 * kv_bytes, scratch_bytes (counted for max(n_threads, 1) threads), kv_capacity. Same
 * validation and errors as pl_session_new. */
pl_status pl_session_estimate(const pl_model *m, const pl_session_params *params,
                              pl_session_info *out, pl_error *err);
/* The machine's topology (hwloc) and where each of the session's threads runs: bound to
 * which core, or why binding was refused. Text (json = 0) or one JSON object (json = 1)
 * into buf; *len (optional) gets the full length. Too small a buffer:
 * PL_ERR_BUFFER_TOO_SMALL, a truncated NUL-terminated prefix, and the size in the message. */
pl_status pl_session_threads_report(const pl_session *s, int json, char *buf, size_t size,
                                    size_t *len, pl_error *err);

/* ---- sampler chain: penalties -> top-k -> temperature -> softmax -> top-p -> min-p -> draw.
 * llama.cpp's semantics and defaults; temperature 0 is greedy (argmax of the penalised
 * logits, ties: lowest id). The random stream is a seeded xoshiro256**: the same seed, logits
 * and history give the same tokens on every machine. */
typedef struct pl_sampler_params {
    float temperature;      /* 0.8; finite, >= 0; 0: greedy */
    int32_t top_k;          /* 40; <= 0 or >= n_vocab: all */
    float top_p;            /* 0.95; in [0, 1]; 1: off, 0: the most likely token only */
    float min_p;            /* 0.05; in [0, 1]; 0: off */
    float repeat_penalty;   /* 1.0: off; finite, > 0 */
    float freq_penalty;     /* 0.0; finite (negative rewards repeats) */
    float presence_penalty; /* 0.0; finite */
    int32_t penalty_last_n; /* 64: how much history the penalties see; >= 0 */
    uint64_t seed;          /* 0xdecafbad */
    const char *kernels;    /* kernel set name; NULL: the model's (pl_model_params.kernels) */
} pl_sampler_params;

pl_sampler_params pl_sampler_default_params(void);
/* params NULL: the defaults. PL_ERR_CONFIG, naming the field, for a parameter outside the
 * range above (NaN is outside every range); PL_ERR_INVALID_ARG for a NULL or vocab-only model. */
pl_status pl_sampler_new(pl_sampler **out, const pl_model *m, const pl_sampler_params *params,
                         pl_error *err);
void pl_sampler_free(pl_sampler *s);
/* The kernel set the sampler runs ("" for NULL). */
const char *pl_sampler_kernels(const pl_sampler *s);
/* Picks the next token from logits (n_vocab floats); history holds the tokens so far (the
 * last penalty_last_n are penalised; ids outside [0, n_vocab) penalise nothing). Does not
 * modify logits or history. PL_ERR_INVALID_ARG for a NaN logit, NULL logits or token, NULL
 * history with n_history > 0, or n_history < 0; a failed call leaves the random stream as it
 * was. Infinite logits are allowed and no penalty changes them: the +Inf tokens share all the
 * probability (greedy: the lowest such id); a -Inf token is never picked while any logit is
 * larger; when all are -Inf they tie: equally likely among those top-k and top-p keep (greedy:
 * id 0). top-k keeps the k largest penalised logits (ties: lower ids), so top_k = 1 is greedy
 * whatever the temperature. */
pl_status pl_sampler_sample(pl_sampler *s, const float *logits, const int32_t *history,
                            int64_t n_history, int32_t *token, pl_error *err);

/* ---- session history: the ids the KV cache holds and their text ----
 * A session records every token it evaluates (pl_session_eval, pl_generate, pl_chat) and the
 * text of those ids: their pieces with control tokens rendered (PL_DETOK_SPECIAL) and, for
 * SentencePiece vocabularies with a dummy prefix, one leading space dropped from the first
 * piece and from the piece after a control or user-defined token (PL_DETOK_STRIP_PREFIX):
 * text == pl_detokenize(ids, PL_DETOK_SPECIAL | PL_DETOK_STRIP_PREFIX) at all times. Token i
 * sits at position i. With a sliding window the history keeps every position evaluated: the
 * KV cache holds the sinks and the recent window of it, and the next logits are those of a
 * fresh session with the same window that evaluates the whole history. The pointers are
 * valid until the session is next changed; text is not NUL-terminated. */
pl_status pl_session_history(const pl_session *s, const int32_t **ids, int64_t *n,
                             const char **text, size_t *len, pl_error *err);
/* The byte offset in the history text where token i's text ends (0 <= i < n). */
size_t pl_session_text_end(const pl_session *s, int64_t i);

/* ---- generation ---------------------------------------------------------------- */

typedef enum pl_stop_reason {
    PL_STOP_NONE = 0,         /* nothing generated yet (max_tokens = 0: prefill only) */
    PL_STOP_EOG = 1,          /* the model sampled an end-of-generation token */
    PL_STOP_MAX_TOKENS = 2,   /* max_tokens were generated */
    PL_STOP_STRING = 3,       /* a stop string appeared (it is not delivered) */
    PL_STOP_CANCELLED = 4,    /* the callback returned nonzero */
    PL_STOP_CONTEXT_FULL = 5, /* the context window has no room for the next token */
} pl_stop_reason;
/* "eog", "max_tokens", "stop_string", "cancelled", "context_full", "none". */
const char *pl_stop_reason_str(pl_stop_reason r);

#define PL_GEN_MAX_STOP     16  /* stop strings per call */
#define PL_GEN_MAX_STOP_LEN 256 /* bytes in one stop string */

typedef struct pl_gen_params {
    int64_t max_tokens;       /* 256; 0: prefill only; 1 <= ... <= INT32_MAX */
    int ignore_eog;           /* 1: no end-of-generation token can be drawn (their logits are
                                 -inf before sampling, as llama.cpp's ignore_eos) */
    const char *const *stops; /* n_stops NUL-terminated strings, 1..PL_GEN_MAX_STOP_LEN bytes */
    size_t n_stops;
} pl_gen_params;
pl_gen_params pl_gen_default_params(void);

/* Receives the generated text in order: len >= 1 bytes ending at a character boundary (an
 * incomplete UTF-8 character is held until it completes or cannot; invalid bytes pass as they
 * are), never a byte of a stop string. Return 0 to go on, nonzero to cancel. */
typedef int (*pl_text_fn)(void *user, const char *text, size_t len);

typedef struct pl_gen_stats {
    pl_stop_reason stop;
    int64_t n_prompt;    /* tokens evaluated before the first draw */
    int64_t n_generated; /* tokens drawn and kept (an end-of-generation stop is not counted) */
    size_t n_text;       /* bytes delivered to the callback */
    double prefill_ms;   /* evaluating the prompt */
    double ttft_ms;      /* from the call to the first token drawn */
    double decode_ms;    /* from the first token drawn to the end */
    double decode_tps;   /* tokens per second after the first (0 when fewer than 2) */
} pl_gen_stats;

/* Evaluates n_prompt tokens after what the session holds (n_prompt = 0 re-evaluates its last
 * token), then draws tokens with sampler (NULL: greedy; its penalties see the session's
 * history) and streams their text to on_text (may be NULL), until a stop (stats->stop). Every
 * token whose text was delivered is evaluated: afterwards the session's history text is its
 * text before the call + the prompt's text + exactly the delivered text. An end-of-generation
 * token that stops generation is neither delivered nor evaluated. Where a stop string or a
 * cancellation cuts inside a token, the session is truncated to the last whole token before
 * the cut and the rest of the delivered text is tokenized and evaluated (when a full context
 * window has no room for those tokens, the history ends at that last whole token). Errors: bad
 * parameters PL_ERR_INVALID_ARG/PL_ERR_CONFIG, a prompt that does not fit the context window
 * PL_ERR_CONTEXT_FULL — both with the session unchanged; a failure later (PL_ERR_NOMEM) leaves
 * the session consistent: its history is what its KV cache holds. stats may be NULL. */
pl_status pl_generate(pl_session *s, const int32_t *prompt, int64_t n_prompt, pl_sampler *sampler,
                      const pl_gen_params *params, pl_text_fn on_text, void *user,
                      pl_gen_stats *stats, pl_error *err);

/* ---- chat: the prefix cache ----------------------------------------------------------
 * pl_chat takes the whole conversation rendered by the chat template (including the opening
 * of the assistant turn) and reuses what the session already holds:
 *   fast     the history text is a byte prefix of text: the new bytes are tokenized on their
 *            own (control tokens parsed) after the history. The last held token is tokenized
 *            again together with them: if the two would have merged (a cut word, a trailing
 *            space), that token is dropped from the cache and the merged tokens are
 *            evaluated; otherwise it is kept. Nothing else held is touched.
 *   partial  else the text is tokenized whole (control tokens parsed, no BOS added: the
 *            template writes it) and the longest common prefix of ids with the history is
 *            kept; the cache is truncated there.
 *   slow     nothing in common (or a sliding window already evicted what truncation needs):
 *            start over.
 * At least one token is evaluated (the last held one again when the text adds nothing), then
 * pl_generate runs. So after a turn the history text is the conversation + the reply exactly
 * as delivered, and the next turn, which appends to it, takes the fast path. (Where the
 * vocabulary normalizes, the conversation is first put in that normal form, pl_normalize with
 * PL_TOKENIZE_PARSE_SPECIAL: the history holds the normal form, and the next turn's text,
 * normalized too, extends it.) The end-of-turn
 * marker: a generated end-of-generation token (e.g. <|im_end|>) stops the turn and is not
 * kept; the template writes it into the next turn's text, where the fast path evaluates it.
 * Overflow: when a context window cannot hold the turn's prompt, PL_ERR_CONTEXT_FULL with
 * the session exactly as before (nothing truncated, nothing evaluated). A session is not
 * thread-safe: one thread at a time per session; the model may be shared by many. */
typedef enum pl_chat_path { PL_CHAT_FAST = 1, PL_CHAT_PARTIAL = 2, PL_CHAT_SLOW = 3 } pl_chat_path;
/* "fast", "partial", "slow" ("none" otherwise). */
const char *pl_chat_path_str(pl_chat_path p);

typedef struct pl_chat_stats {
    pl_chat_path path;
    int64_t n_reused;    /* history tokens kept */
    int64_t n_prefilled; /* prompt tokens evaluated */
    int64_t n_generated;
    double tokenize_ms; /* matching the history and tokenizing */
    pl_gen_stats gen;   /* prefill, time to first token, decode */
    double total_ms;
} pl_chat_stats;

pl_status pl_chat(pl_session *s, const char *text, size_t len, pl_sampler *sampler,
                  const pl_gen_params *params, pl_text_fn on_text, void *user, pl_chat_stats *stats,
                  pl_error *err);
/* Renders msgs with t (NULL: the model's template) and the assistant's opening
 * (pl_chat_render_with), then pl_chat. A render that fails (the template raises, a bound is
 * passed, the model's template does not compile) returns its error with the session unchanged. */
pl_status pl_chat_messages_with(pl_session *s, const pl_chat_template *t,
                                const pl_chat_message *msgs, size_t n, pl_sampler *sampler,
                                const pl_gen_params *params, pl_text_fn on_text, void *user,
                                pl_chat_stats *stats, pl_error *err);
/* pl_chat_messages_with the built-in called tmpl, or the model's template when tmpl is NULL. */
pl_status pl_chat_messages(pl_session *s, const char *tmpl, const pl_chat_message *msgs, size_t n,
                           pl_sampler *sampler, const pl_gen_params *params, pl_text_fn on_text,
                           void *user, pl_chat_stats *stats, pl_error *err);
/* The same for a conversation as JSON (pl_chat_render_json, add_generation_prompt true); t NULL:
 * the model's template. */
pl_status pl_chat_messages_json(pl_session *s, const pl_chat_template *t, const char *json,
                                size_t len, pl_sampler *sampler, const pl_gen_params *params,
                                pl_text_fn on_text, void *user, pl_chat_stats *stats,
                                pl_error *err);
/* Forgets everything the session holds (= pl_session_reset). */
void pl_chat_reset(pl_session *s);

/* ---- quantization ---------------------------------------------------------------
 * Row conversion between F32 and any implemented type, the per-tensor type rules of
 * llama.cpp's quantizer, and whole-model quantization GGUF -> GGUF. */

/* dst = quantize(src): n_rows rows of row_len floats -> n_rows packed rows of
 * pl_type_row_bytes(type, row_len) bytes. Bit-exact with the reference kernel set (every
 * set's quantizers are). row_len must be a positive multiple of the type's block size
 * (PL_ERR_INVALID_ARG names both); unimplemented types are PL_ERR_UNSUPPORTED. Never
 * allocates. */
pl_status pl_quantize_rows(pl_type type, void *dst, const float *src, int64_t n_rows,
                           int64_t row_len, pl_error *err);
/* The inverse: dst = dequantize(src), same rules. */
pl_status pl_dequantize_rows(pl_type type, float *dst, const void *src, int64_t n_rows,
                             int64_t row_len, pl_error *err);

/* File types: llama.cpp's LLAMA_FTYPE_* numbers, written to general.file_type. */
typedef enum pl_ftype {
    PL_FTYPE_F32 = 0,
    PL_FTYPE_F16 = 1,
    PL_FTYPE_Q4_0 = 2,
    PL_FTYPE_Q4_1 = 3,
    PL_FTYPE_Q8_0 = 7,
    PL_FTYPE_Q5_0 = 8,
    PL_FTYPE_Q5_1 = 9,
    PL_FTYPE_Q2_K = 10,
    PL_FTYPE_Q3_K_S = 11,
    PL_FTYPE_Q3_K_M = 12, /* also the name "Q3_K", as llama-quantize takes it */
    PL_FTYPE_Q3_K_L = 13,
    PL_FTYPE_Q4_K_S = 14, /* also the name "Q4_K" (llama-quantize takes "Q4_K" as Q4_K_M) */
    PL_FTYPE_Q4_K_M = 15,
    PL_FTYPE_Q5_K_S = 16, /* also "Q5_K" */
    PL_FTYPE_Q5_K_M = 17,
    PL_FTYPE_Q6_K = 18,
    PL_FTYPE_Q2_K_S = 21,
    PL_FTYPE_IQ4_NL = 25,
    PL_FTYPE_IQ4_XS = 30,
    PL_FTYPE_BF16 = 32,
    PL_FTYPE_MXFP4_MOE = 38, /* also "MXFP4": expert tensors MXFP4, the rest Q8_0 (--pure: all) */
} pl_ftype;

/* "Q4_K_M", "F16", …; NULL for values plumb does not write. */
const char *pl_ftype_name(uint32_t ftype);
/* Parses a name, case-insensitively: the names above, "Q3_K" (= Q3_K_M), "Q4_K" (= Q4_K_M),
 * "Q5_K" (= Q5_K_M), as llama-quantize reads them, and "MXFP4" (= MXFP4_MOE). PL_ERR_UNSUPPORTED
 * with a message listing the valid names. */
pl_status pl_ftype_from_name(const char *name, pl_ftype *out, pl_error *err);
/* The ftype's main tensor type (PL_TYPE_Q4_K for Q4_K_M, PL_TYPE_Q2_K for Q2_K_S, PL_TYPE_Q3_K
 * for the Q3_K mixes); PL_TYPE_COUNT if unknown. */
pl_type pl_ftype_base_type(uint32_t ftype);

/* What a file type does with one tensor: llama.cpp's llama_tensor_get_type (src/llama-quant.cpp
 * at c392e509, without an importance matrix). Quantized: tensors whose name ends in "weight"
 * with two or more dimensions longer than 1, except norms (and the other small tensors
 * llama.cpp exempts). Mixes (unless pure), with n_gqa = n_head / n_head_kv, "more" =
 * use_more_bits(i, n): the first and last eighth of n and every third one between, and
 * i_wv / i_down llama-quantize's counters of attn_v / ffn_down tensors (= the layer index in
 * a dense model; ffn_down reads the layer from the name when n_expert > 1):
 * - output.weight (token_embd.weight when tied) -> Q6_K (Q8_0 for Q8_0, or when ne[0] does not
 *   fit the base type's block).
 * - attn_v: Q2_K -> Q4_K if n_gqa >= 4 else Q3_K; Q2_K_S -> Q4_K if n_gqa >= 4; Q3_K_M -> Q5_K
 *   if i_wv < 2 else Q4_K; Q3_K_L -> Q5_K; IQ4_NL/IQ4_XS -> Q5_K if n_gqa >= 4; Q4_K_M/Q5_K_M
 *   -> Q6_K if more(i_wv, n_wv); Q4_K_S -> Q5_K if i_wv < 4. Then a 70B model (llama or qwen2
 *   with 80 layers, llama with GQA) lifts Q3_K/Q4_K to Q5_K, and n_expert == 8 takes Q8_0.
 * - attn_k: Q8_0 when n_expert == 8. attn_q, ffn_gate, ffn_up: the base type.
 * - ffn_down: Q2_K -> Q3_K; Q2_K_S -> Q4_K if i < n/8; Q3_K_M -> Q5_K if i < n/16 else Q4_K;
 *   Q3_K_L -> Q5_K; Q4_K_M/Q5_K_M -> Q6_K if more(i, n); IQ4_NL/IQ4_XS -> Q5_K if i < n/8;
 *   Q4_K_S -> Q5_K if i < n/8 (i = i_down, n = n_layer).
 * - attn_output: n_expert == 8: Q5_K for Q2_K, Q3_K_S, Q3_K_M, Q4_K_S, Q4_K_M, IQ4_NL, IQ4_XS;
 *   otherwise Q2_K -> Q3_K, Q3_K_M -> Q4_K, Q3_K_L -> Q5_K.
 * - attn_qkv: Q3_K_M/Q3_K_L -> Q4_K, Q4_K_M -> Q5_K, Q5_K_M -> Q6_K.
 * - MXFP4_MOE: before any rule above, a tensor with ne[2] > 1 (the experts of an MoE layer) ->
 *   MXFP4, every other one (output.weight included) -> Q8_0.
 * A type whose block does not divide ne[0] falls back as in llama.cpp: Q2_K, Q3_K, IQ4_XS ->
 * IQ4_NL; Q4_K -> Q5_0; Q5_K -> Q5_1; Q6_K -> Q8_0; then F16 (legacy types, IQ4_NL and MXFP4
 * fall back to F16). Falcon's rules are left out: plumb has no falcon architecture. */
typedef struct pl_tensor_plan {
    int quantize;   /* 0: not a weight matrix; the tensor keeps its type and bytes */
    pl_type type;   /* the type to write (when quantize) */
    pl_type wanted; /* what the rules chose before the row-length fallback */
    int fallback;   /* 1 when type != wanted because ne[0] is not a multiple of its block */
} pl_tensor_plan;

/* The model as the rules read it (llama.cpp's hparams and quantize state). */
typedef struct pl_plan_model {
    const char *arch;       /* general.architecture ("llama", ...); NULL: none known */
    int64_t n_layer;        /* block_count (llama.cpp's n_ffn_down) */
    int64_t n_head;         /* attention.head_count (of layer 0); 0: unknown */
    int64_t n_head_kv;      /* attention.head_count_kv; n_gqa = n_head / n_head_kv, 0 when 0 */
    int64_t n_expert;       /* expert_count; 0 for a dense model */
    int tied;               /* the model has no output.weight */
    int64_t n_attention_wv; /* tensors whose name holds attn_v.weight, attn_qkv.weight or
                               attn_kv_b.weight (pl_ftype_plan_tensors counts them) */
} pl_plan_model;

/* One tensor. name: the tensor's name; ne[0..n_dims) its shape (ne[0] innermost); m: the
 * model; i_attention_wv / i_ffn_down: how many weight matrices whose name holds
 * "attn_v.weight" / "ffn_down" the mix rules met before this one in llama-quantize's order (by the
 * layer of a "blk.<i>." prefix, no prefix first, then by name); pure: no mixing, every weight
 * matrix gets the base type (the row-length fallback still applies). PL_ERR_INVALID_ARG for a bad
 * ftype, NULL name, model or shape; PL_ERR_UNSUPPORTED for an ffn_down of a mixture-of-experts
 * model whose name holds no layer in 0..n_layer-1 (llama-quantize refuses it too). */
pl_status pl_ftype_tensor_plan(pl_ftype ftype, int pure, const char *name, uint32_t n_dims,
                               const int64_t *ne, const pl_plan_model *m, int64_t i_attention_wv,
                               int64_t i_ffn_down, pl_tensor_plan *out, pl_error *err);
/* A tensor's name, type and shape (also what pl_gguf_write_streamed writes). */
typedef struct pl_tensor_spec {
    const char *name;
    uint32_t type; /* pl_type */
    uint32_t n_dims;
    int64_t ne[4];
} pl_tensor_spec;
/* Every tensor of a model: out[i] for specs[i] (any order). m gives arch, n_layer, the head and
 * expert counts; tied and n_attention_wv are taken from the names and the counters kept as
 * llama-quantize keeps them. */
pl_status pl_ftype_plan_tensors(pl_ftype ftype, int pure, const pl_plan_model *m,
                                const pl_tensor_spec *specs, uint64_t n, pl_tensor_plan *out,
                                pl_error *err);

/* Progress of a long operation: done of total units (elements); returning non-zero cancels
 * it (PL_ERR_CANCELLED). Called from the calling thread. */
typedef int (*pl_progress_fn)(void *user, uint64_t done, uint64_t total);

/* Filled by pl_model_quantize on success. */
typedef struct pl_quantize_stats {
    uint64_t n_tensors;   /* in the file */
    uint64_t n_converted; /* tensors whose type changed */
    uint64_t n_fallback;  /* tensors that got a legacy type instead of a K-quant (or F16) */
    uint64_t in_bytes;    /* the input file */
    uint64_t out_bytes;   /* the output file */
    uint64_t n_by_type[PL_TYPE_COUNT]; /* output tensors per type */
} pl_quantize_stats;

typedef struct pl_quantize_params {
    pl_ftype ftype;
    int n_threads;           /* 1: the calling thread only; 0: PLUMB_THREADS, else one per
                                physical core (for models of more than ~4M weights); any
                                count gives the same bytes */
    int pure;                /* see pl_ftype_tensor_plan */
    pl_progress_fn progress; /* may be NULL */
    void *progress_user;
    pl_quantize_stats *stats; /* may be NULL; filled on success */
} pl_quantize_params;

/* Reads in_path (any implemented tensor types), copies every metadata key (general.file_type
 * set to the ftype, general.quantization_version to 2, split.* keys dropped) and converts
 * each tensor as pl_ftype_tensor_plan says (tensors already in their planned type are
 * copied byte for byte). The output is written to out_path.tmp and renamed: on any error
 * or cancellation nothing is left at out_path (an existing file there is untouched) nor at
 * out_path.tmp. Memory: the input is mapped; beyond it, one buffer the size of the largest
 * output tensor and a few MB of scratch. */
pl_status pl_model_quantize(const char *in_path, const char *out_path,
                            const pl_quantize_params *params, pl_error *err);

/* ---- streamed GGUF writing (used by pl_model_quantize and `plumb mkmodel`) ----
 * The writer references tensor data until it writes; for files larger than memory the
 * tensors are instead produced one at a time by a callback. */
/* pl_tensor_spec (a tensor's name, type and shape) is declared with the file types. */
/* Writes tensor i's bytes (exactly n_bytes) into dst. A non-PL_OK return aborts the write
 * (return PL_ERR_CANCELLED to cancel) and is passed on. */
typedef pl_status (*pl_tensor_fill_fn)(void *user, uint64_t i, void *dst, uint64_t n_bytes,
                                       pl_error *err);
/* Writes a GGUF file with w's metadata (w must hold no tensors; it is not changed) and the
 * tensors specs[0..n), whose bytes fill produces in order. Goes through path.tmp and a
 * rename, after reading the file back: on failure nothing is left at path or path.tmp.
 * Memory: one buffer the size of the largest tensor. */
pl_status pl_gguf_write_streamed(const pl_gguf_writer *w, const char *path,
                                 const pl_tensor_spec *specs, uint64_t n, pl_tensor_fill_fn fill,
                                 void *user, pl_error *err);

/* ---- safetensors (Hugging Face weights) ---------------------------------------------
 * A read-only view of one .safetensors file, or of a sharded checkpoint
 * (model.safetensors.index.json + model-0000N-of-0000M.safetensors). The format: 8 bytes of
 * little-endian u64 header length N, N bytes of a JSON object, then the data section. Each
 * entry of the object is a tensor {"dtype": "F32", "shape": [rows, cols], "data_offsets":
 * [begin, end]} with offsets relative to the data section, or "__metadata__" (string ->
 * string). The reader treats the bytes as hostile, like the GGUF reader: the header length
 * is checked against the file and PL_SAFETENSORS_MAX_HEADER, the JSON must be one object
 * with no duplicate keys, every shape and element count is overflow-checked, end - begin
 * must equal elements x dtype size, and the tensors must tile the data section exactly (no
 * overlap, no hole, nothing after the last, as the reference implementation requires). Each
 * rejection names the file, the tensor and what is wrong. */
#define PL_SAFETENSORS_MAX_HEADER  (100u << 20) /* bytes of the JSON header */
#define PL_SAFETENSORS_MAX_DIMS    8u           /* dimensions of one tensor */
#define PL_SAFETENSORS_MAX_TENSORS (1u << 20)   /* tensors in a file or a checkpoint */
#define PL_SAFETENSORS_MAX_NAME    1024u        /* bytes of one tensor name */
#define PL_SAFETENSORS_MAX_SHARDS  4096u        /* files of a sharded checkpoint */
#define PL_SAFETENSORS_MAX_INDEX   (64u << 20)  /* bytes of model.safetensors.index.json */

typedef struct pl_st_tensor {
    const char *name;  /* NUL-terminated UTF-8 */
    const char *dtype; /* the file's dtype: "F32", "F16", "BF16", "I64", "F8_E4M3", … */
    uint32_t type;     /* PL_TYPE_F32 / F16 / BF16; PL_TYPE_COUNT for the other dtypes, which
                          the reader checks but plumb does not convert */
    uint32_t n_dims;   /* 0 (a scalar) .. PL_SAFETENSORS_MAX_DIMS */
    int64_t shape[PL_SAFETENSORS_MAX_DIMS]; /* outermost first (row-major, as PyTorch) */
    uint64_t n_elems;
    uint64_t n_bytes;
    uint64_t offset;  /* from the start of its file */
    const void *data; /* in its file's bytes; not aligned in general */
    uint32_t file;    /* index of its file (pl_safetensors_file_name); 0 for one file */
} pl_st_tensor;

typedef struct pl_safetensors pl_safetensors;

/* One file held in memory; label names it in errors (NULL: "safetensors"). The bytes must
 * outlive the view. *out is NULL on failure. */
pl_status pl_safetensors_parse(pl_safetensors **out, const void *data, size_t size,
                               const char *label, pl_error *err);
/* One file, mapped read-only. */
pl_status pl_safetensors_open(pl_safetensors **out, const char *path, pl_error *err);

/* A sharded checkpoint held in memory: the index JSON ({"weight_map": {tensor: file}},
 * "metadata" optional) and the files it names, by name. Every file named must be among
 * shards, every file name is a plain name (no '/', no "..", not hidden), every tensor of the
 * weight map must be in the file it names and every tensor of those files in the weight map,
 * each exactly once. */
typedef struct pl_st_shard {
    const char *name; /* "model-00001-of-00002.safetensors" */
    const void *data;
    size_t size;
} pl_st_shard;
pl_status pl_safetensors_parse_sharded(pl_safetensors **out, const void *index, size_t index_size,
                                       const pl_st_shard *shards, size_t n_shards, pl_error *err);
/* A Hugging Face model directory: model.safetensors.index.json and its shards when the index
 * exists, else model.safetensors. Files are mapped read-only. */
pl_status pl_safetensors_open_dir(pl_safetensors **out, const char *dir, pl_error *err);
void pl_safetensors_free(pl_safetensors *st);

/* Tensors in name order (byte-wise), and by name (NULL when absent). */
uint64_t pl_safetensors_n_tensors(const pl_safetensors *st);
const pl_st_tensor *pl_safetensors_tensor(const pl_safetensors *st, uint64_t i);
const pl_st_tensor *pl_safetensors_find(const pl_safetensors *st, const char *name);
/* Files of the view ("model.safetensors" or the shard names); NULL past the end. */
uint32_t pl_safetensors_n_files(const pl_safetensors *st);
const char *pl_safetensors_file_name(const pl_safetensors *st, uint32_t file);
/* A "__metadata__" value (the first file that has the key), or NULL. */
const char *pl_safetensors_metadata(const pl_safetensors *st, const char *key);

/* ---- convert: a Hugging Face model directory -> GGUF ---------------------------------
 * Reads config.json (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM), the safetensors
 * weights, tokenizer.json (byte-level BPE, or SentencePiece-style BPE with byte fallback:
 * written as a "llama" vocabulary with scores), tokenizer_config.json and, when present,
 * generation_config.json and chat_template.jinja, and writes a GGUF in llama.cpp's key and
 * tensor names. Llama checkpoints get llama.cpp's q/k row permutation (HF keeps each head's
 * rotary halves apart; GGUF's normal RoPE wants the pairs interleaved); qwen2/qwen3 use NeoX
 * RoPE and are copied as they are. Weights are converted to F32 (exactly, from F16 and BF16),
 * then to the file type's tensor types with pl_ftype_tensor_plan and pl_quantize_rows: the
 * output equals pl_model_quantize of the F32 conversion, byte for byte. */
typedef struct pl_convert_stats {
    uint64_t n_tensors; /* written */
    uint64_t n_params;  /* elements written */
    uint64_t n_vocab;   /* tokens written (padded to the embedding's rows) */
    uint64_t out_bytes;
    const char *arch; /* "llama", "qwen2", "qwen3", ... (static); vocab_only: a phrase */
    char pre[32];     /* the pre-tokenizer written to tokenizer.ggml.pre */
} pl_convert_stats;

typedef struct pl_convert_params {
    pl_ftype ftype;          /* F32, F16, BF16 or any pl_ftype_name type */
    int pure;                /* see pl_ftype_tensor_plan */
    pl_progress_fn progress; /* may be NULL; elements done / total; may cancel */
    void *progress_user;
    pl_convert_stats *stats; /* may be NULL; filled on success */
    int vocab_only; /* 1: the tokenizer alone (tokenizer.json; config.json optional, no weights
                       read): tokenizer.* keys, general.name, no tensors (PL_MODEL_VOCAB_ONLY) */
} pl_convert_params;

/* Writes out_path through out_path.tmp and a rename: on failure nothing is left there. Errors
 * name the file and the key or tensor: PL_ERR_NOT_FOUND (a file, key or tensor missing),
 * PL_ERR_TYPE (a value of the wrong JSON type, a tensor of the wrong shape),
 * PL_ERR_UNSUPPORTED (an architecture, dtype, tokenizer or option plumb does not convert),
 * PL_ERR_FORMAT (bytes that are not what their format says). */
pl_status pl_convert_hf(const char *hf_dir, const char *out_path, const pl_convert_params *params,
                        pl_error *err);

/* ---- logit files and comparison ----------------------------------------------------
 * A .logits file holds the logits a model produced for a text, so two runs (two weight
 * types, two engines) can be compared. Little-endian, no padding:
 *   0  char[8]  magic "PLLOGITS"
 *   8  u32      version (PL_LOGITS_VERSION)
 *  12  u32      flags (0; other values are rejected)
 *  16  u64      n_vocab      logits per row, 1 .. PL_LOGITS_MAX_VOCAB
 *  24  u64      n_tokens     token ids of the text, 1 .. PL_LOGITS_MAX_TOKENS
 *  32  u64      first_row    row r holds the logits after tokens[0 .. first_row + r]
 *  40  u64      n_rows       rows, >= 1, first_row + n_rows <= n_tokens
 *  48  u64      tokenizer_hash  pl_logits_tokenizer_hash of the model; 0: unknown
 *  56  u32      name_len     bytes of the model's file name, <= PL_LOGITS_MAX_NAME
 *  60  u32      window       0; with PL_LOGITS_WINDOWS, the window length (below)
 *  64  name_len bytes (not NUL-terminated), then n_tokens int32 ids (0 <= id < n_vocab),
 *      then n_rows * n_vocab float32 logits, row by row; the file ends there.
 * Logits may be -inf (a masked token) but not NaN or +inf, and each row needs one finite
 * value.
 * Windowed files (flags PL_LOGITS_WINDOWS, written by `plumb perplexity --save-logits`): the
 * text was evaluated as separate windows of `window` tokens, each from an empty cache, and
 * only positions first_row .. window - 2 of each window kept. window >= 3, n_tokens is a
 * multiple of it (the ids each window evaluated, a BOS that replaced its first token
 * included), first_row <= window - 2, and with S = window - 1 - first_row rows per window,
 * n_rows = S * n_tokens / window: row r holds the logits after tokens[w * window .. p] with
 * w = r / S, p = w * window + first_row + r % S (that window's tokens only). */
#define PL_LOGITS_MAGIC      "PLLOGITS"
#define PL_LOGITS_VERSION    1u
#define PL_LOGITS_WINDOWS    1u /* flags: rows of separately evaluated windows */
#define PL_LOGITS_HEADER     64u
#define PL_LOGITS_MAX_NAME   4096u
#define PL_LOGITS_MAX_VOCAB  (1u << 24) /* vocabularies are ~256k */
#define PL_LOGITS_MAX_TOKENS (1u << 24)

typedef struct pl_logits {
    int64_t n_vocab;
    int64_t n_tokens;
    int64_t first_row; /* 0 for every position, n_tokens - 1 for the last only */
    int64_t n_rows;
    int64_t window; /* 0: rows are consecutive positions of one evaluation; > 0: windowed */
    uint64_t tokenizer_hash;
    const char *model_name; /* NUL-terminated (the file holds no NUL) */
    const int32_t *tokens;  /* n_tokens */
    const float *logits;    /* n_rows * n_vocab */
} pl_logits;

/* FNV-1a 64 over the tokenizer arrays of a GGUF: for each of the keys
 * tokenizer.ggml.tokens, tokenizer.ggml.merges, tokenizer.ggml.scores in that order, the
 * key's bytes, the element count as u64 LE (0 when absent), then each element as GGUF
 * stores it (strings: u64 LE length, then the bytes; numbers: their LE bytes). A hash of
 * 0 is replaced by 1 (0 means unknown). PL_ERR_TYPE when a key holds another type. */
pl_status pl_logits_tokenizer_hash(const pl_gguf *g, uint64_t *out, pl_error *err);

/* Checks l (counts, limits, ids, values as the format says) and writes it to path (through
 * path.tmp and a rename: on failure nothing is left), or to a new buffer (pl_buffer_free). */
pl_status pl_logits_write(const pl_logits *l, const char *path, pl_error *err);
pl_status pl_logits_write_memory(const pl_logits *l, void **out, size_t *size, pl_error *err);
/* Parses untrusted bytes into a new pl_logits (one allocation, a copy; free with
 * pl_logits_free, which takes only what these two return). Every rejection names the
 * field and its offset; *out is NULL on failure. */
pl_status pl_logits_parse(pl_logits **out, const void *data, size_t size, pl_error *err);
pl_status pl_logits_read(pl_logits **out, const char *path, pl_error *err);
void pl_logits_free(pl_logits *l);

/* The text position of row r: first_row + r, or for a windowed file the position in the text
 * of that window's row (see above). The row predicts the token after that position. */
int64_t pl_logits_row_position(const pl_logits *l, int64_t r);
/* -log softmax(row)[target] in double: the log-sum-exp of the n_vocab logits minus
 * row[target] (+inf when that is -inf). row needs a finite value and no NaN or +inf;
 * 0 <= target < n_vocab. Perplexity and the comparison both score tokens with it. */
double pl_logits_nll(const float *row, int64_t n_vocab, int32_t target);

/* B compared with A over the rows both hold. Per row i: p = softmax(A_i), q = softmax(B_i)
 * in double; KLD_i = sum_j p_j (log p_j - log q_j) (terms with p_j = 0 are 0). Percentiles
 * interpolate linearly between order statistics: q(f) = x[k] + (h - k)(x[k+1] - x[k]), with
 * x sorted, h = (N - 1) f, k = floor(h) (GSL's gsl_stats_quantile_from_sorted_data;
 * median = q(0.5)). Standard error of a mean of per-row values x_i:
 * sqrt(sum_i (x_i - mean)^2 / (N (N - 1))) (NaN when N = 1); for top-1 agreement
 * (x_i in {0, 1}) that is sqrt(p (1 - p) / (N - 1)), as llama.cpp reports it. */
typedef struct pl_logits_stats {
    int64_t n_rows;    /* rows compared */
    int64_t first_row; /* the first of them, as a row index of the text */
    double kld_mean, kld_mean_se;
    double kld_min, kld_median, kld_p90, kld_p95, kld_p99, kld_p999, kld_max;
    int64_t kld_max_row; /* the row of kld_max */
    double max_abs_diff; /* max_ij |A_ij - B_ij| (both -inf: 0) */
    double rms_abs_diff; /* sqrt(mean_ij (A_ij - B_ij)^2) */
    /* Fraction of rows with the same argmax (lowest id on ties). */
    double top1_agree, top1_agree_se;
    /* Mean |top5(A_i) ∩ top5(B_i)| / 5 (k = n_vocab when smaller). */
    double top5_overlap, top5_overlap_se;
    int tokenizer_match; /* 1 same hash, 0 different, -1 unknown (a hash is 0) */
    /* Perplexity over the n_ppl compared rows whose next token the files hold (every row of
     * a windowed file; all but the text's last position otherwise): per row the NLL
     * x_i = pl_logits_nll(row, next token), PPL = exp(mean x), its SE PPL * SE(mean x).
     * ln_ratio: mean of xB_i - xA_i = ln(PPL(B) / PPL(A)), with its SE; ppl_diff: PPL(B) -
     * PPL(A) with the delta method's SE, sqrt(se_A^2 + se_B^2 - 2 PPL(A) PPL(B) cov), cov
     * the covariance of the two mean NLLs (llama.cpp's KL-divergence report); ppl_corr:
     * Pearson's correlation of xA and xB. NaN where undefined (n_ppl < 2, or 0 rows). */
    int64_t n_ppl;
    double ppl_a, ppl_a_se, ppl_b, ppl_b_se;
    double ln_ratio, ln_ratio_se, ppl_diff, ppl_diff_se, ppl_corr;
} pl_logits_stats;

/* PL_ERR_INVALID_ARG naming the difference when the vocab sizes, token counts or token ids
 * differ, one file is windowed and the other not (or their windows or first rows differ),
 * or the files share no row, or a row is invalid (NaN, +inf, all -inf). kld_max_row is a
 * text position (pl_logits_row_position). kld
 * (optional) receives the per-row KLDs of the rows compared (PL_ERR_BUFFER_TOO_SMALL when
 * kld_cap is fewer). One allocation (6 doubles per row); never prints. */
pl_status pl_logits_compare(const pl_logits *a, const pl_logits *b, pl_logits_stats *out,
                            double *kld, size_t kld_cap, pl_error *err);
/* ---- end of logit files and comparison ------------------------------------------- */

/* ---- perplexity --------------------------------------------------------------------
 * llama.cpp's llama-perplexity method. The text's tokens are cut into windows of n_ctx tokens
 * (a partial last window is dropped); each is evaluated from an empty cache, its first token
 * replaced by BOS when bos says so (as llama.cpp does; the text's own first token is BOS when
 * it was tokenized with PL_TOKENIZE_ADD_BOS). Only the second half of a window is scored, so
 * every scored token sees at least n_ctx / 2 tokens of context: positions
 * first = n_ctx / 2 .. n_ctx - 2, each position's logits scoring the next token with
 * x = pl_logits_nll(logits, next) (double, log-sum-exp): S = n_ctx - 1 - first tokens per
 * window. PPL = exp(mean x); its standard error by the delta method, PPL * SE(mean x), with
 * SE = sqrt(sum (x_i - mean)^2 / (N (N - 1))) (llama.cpp's formula). The result depends only
 * on the model, the kernel set, the tokens, n_ctx and bos: bit for bit the same for any thread
 * count and prefill chunk (the logits are, and the NLLs are summed in one fixed order). */

/* Where the windows fall. */
typedef struct pl_ppl_plan {
    int64_t n_ctx;      /* window length */
    int64_t n_windows;  /* windows evaluated */
    int64_t first;      /* first scored position of a window: n_ctx / 2 */
    int64_t per_window; /* tokens scored per window: n_ctx - 1 - first */
    int64_t n_scored;   /* n_windows * per_window */
    int64_t n_used;     /* tokens the windows cover: n_windows * n_ctx */
} pl_ppl_plan;

/* The plan for n_tokens tokens: min(n_tokens / n_ctx, max_windows) windows (max_windows 0:
 * no cap). PL_ERR_INVALID_ARG when n_ctx < 3 (nothing would be scored) or the text is shorter
 * than one window (the message says how many tokens it has and needs). */
pl_status pl_ppl_plan_windows(int64_t n_tokens, int64_t n_ctx, int64_t max_windows,
                              pl_ppl_plan *out, pl_error *err);

typedef struct pl_ppl_params {
    int64_t n_ctx;       /* window length, >= 3; 0: min(the model's n_ctx_train, 512) */
    int64_t max_windows; /* 0: every whole window */
    int bos;             /* 1: each window starts with BOS; 0: the tokens as given; -1: 1 when the
                            model's tokenizer adds BOS (PL_TOKENIZE_ADD_BOS would) */
    /* Threads, prefill chunk (tokens per forward step), KV type, kernel set. Its
     * context_window is set to n_ctx (sliding_window and attention_sinks to 0). */
    pl_session_params session;
} pl_ppl_params;
/* n_ctx 0, max_windows 0, bos -1, session = pl_session_default_params(m). */
pl_ppl_params pl_ppl_default_params(const pl_model *m);

/* One window, as pl_perplexity finishes it. The pointers are valid during the call only. */
typedef struct pl_ppl_window {
    const pl_ppl_plan *plan;
    int64_t index;         /* 0 .. plan->n_windows - 1; tokens [index * n_ctx, + n_ctx) */
    const int32_t *tokens; /* the n_ctx ids evaluated (BOS first when replaced) */
    const float *logits;   /* per_window rows of n_vocab: positions first .. n_ctx - 2 */
    const double *nll;     /* per_window NLLs: nll[k] scores tokens[first + k + 1] */
    int64_t n_vocab;
    int64_t n_scored;   /* tokens scored so far, this window's included */
    double ppl, ppl_se; /* the running estimate over them (SE NaN while n_scored < 2) */
} pl_ppl_window;
/* Return nonzero to stop: pl_perplexity then returns PL_ERR_CANCELLED. */
typedef int (*pl_ppl_fn)(void *user, const pl_ppl_window *w);

typedef struct pl_ppl_result {
    pl_ppl_plan plan;
    int bos;                      /* 1 when the windows began with BOS */
    double nll_mean, nll_mean_se; /* over plan.n_scored tokens */
    double ppl, ppl_se;
    double eval_ms; /* time in pl_session_eval */
} pl_ppl_result;

/* Perplexity of the model on tokens[0 .. n_tokens) (see above). params NULL: defaults.
 * on_window (may be NULL) is called after each window, from the calling thread. nll
 * (optional) receives the plan.n_scored per-token NLLs in window order
 * (PL_ERR_BUFFER_TOO_SMALL, naming the count, when nll_cap is fewer). Errors: the plan's,
 * PL_ERR_INVALID_ARG for a token outside the vocabulary or a vocab-only model, bos = 1 for a
 * model without a BOS token, the session's (PL_ERR_CONFIG), PL_ERR_NOMEM, PL_ERR_CANCELLED.
 * Memory: a session of n_ctx tokens and S x n_vocab floats of logits. */
pl_status pl_perplexity(const pl_model *m, const int32_t *tokens, int64_t n_tokens,
                        const pl_ppl_params *params, pl_ppl_fn on_window, void *user,
                        pl_ppl_result *out, double *nll, size_t nll_cap, pl_error *err);
/* ---- end of perplexity --------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif
#endif
