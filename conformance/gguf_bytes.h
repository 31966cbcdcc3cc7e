/* gguf_bytes.h — a byte builder for crafting GGUF files by hand in tests, plus the small
 * valid file the GGUF suites share. Not a writer: it emits exactly what it is told, valid or not.
 */
#ifndef PLUMB_GGUF_BYTES_H
#define PLUMB_GGUF_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "plumb.h"

/* A growable little-endian byte buffer. Uses plain malloc (never the library's allocation
 * hook) and aborts the test binary if the machine is out of memory. */
typedef struct gb_buf {
    uint8_t *data;
    size_t len, cap;
} gb_buf;

void gb_init(gb_buf *b);
void gb_free(gb_buf *b);

void gb_u8(gb_buf *b, uint8_t v);
void gb_u16(gb_buf *b, uint16_t v);
void gb_u32(gb_buf *b, uint32_t v);
void gb_u64(gb_buf *b, uint64_t v);
void gb_f32(gb_buf *b, float v);
void gb_f64(gb_buf *b, double v);
void gb_u32_be(gb_buf *b, uint32_t v); /* for the big-endian file */
void gb_u64_be(gb_buf *b, uint64_t v);
void gb_bytes(gb_buf *b, const void *p, size_t n);
void gb_fill(gb_buf *b, uint8_t v, size_t n); /* n copies of v */

/* A GGUF string: u64 length, then the bytes (gb_str: strlen(s) bytes). */
void gb_strn(gb_buf *b, const char *s, size_t n);
void gb_str(gb_buf *b, const char *s);

/* "GGUF", version, n_tensors, n_kv (the v2/v3 layout). */
void gb_header(gb_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv);
/* Key and value type; the caller appends the value. */
void gb_kv(gb_buf *b, const char *key, uint32_t type);
void gb_kv_u32(gb_buf *b, const char *key, uint32_t v);
void gb_kv_f32(gb_buf *b, const char *key, float v);
void gb_kv_str(gb_buf *b, const char *key, const char *s);
/* Key, PL_GGUF_ARRAY, element type and count; the caller appends the elements. */
void gb_kv_arr(gb_buf *b, const char *key, uint32_t elem_type, uint64_t count);
/* Name, n_dims, ne[0..n_dims-1] (as u64), type, offset. */
void gb_tensor_info(gb_buf *b, const char *name, uint32_t n_dims, const int64_t *ne, uint32_t type,
                    uint64_t offset);
/* Zeros up to the next multiple of align (align > 0). */
void gb_pad(gb_buf *b, size_t align);

void gb_patch_u32(gb_buf *b, size_t off, uint32_t v);
void gb_patch_u64(gb_buf *b, size_t off, uint64_t v);

/* The shared small valid file: GGUF v3, a few kvs of several types (including a string
 * array and general.alignment = 32) and three tensors (F32 [8, 2], Q8_0 [64], F16 [3])
 * whose data is a known byte pattern; the last tensor's data ends exactly at EOF, so
 * every strict prefix of the file is invalid. */
void gb_small_valid(gb_buf *b);
#define GB_SMALL_N_KV      5
#define GB_SMALL_N_TENSORS 3

/* The smallest model pl_model_load binds: llama, n_embd 32, 1 layer, 2 heads (head_dim 16),
 * n_ff 64, n_vocab 8, every tensor F32 (small finite values), default alignment. */
void gb_tiny_llama(gb_buf *b);
#define GB_LLAMA_N_KV      6
#define GB_LLAMA_N_TENSORS 11

/* x rounded up to a multiple of a (a > 0). */
uint64_t gb_align_up(uint64_t x, uint64_t a);

/* ggml's block layouts, restated so the tests do not trust the library's table. */
typedef struct gb_ttype {
    uint32_t type;
    const char *name;
    int64_t block;
    size_t bytes;
} gb_ttype;
extern const gb_ttype gb_ttypes[];
#define GB_N_TTYPES 17

/* A path inside a per-process temporary directory (created on first use), the directory,
 * whether a path exists, and removal of the (emptied) directory at exit. */
const char *gb_tmp_path(const char *name);
const char *gb_tmp_dir(void);
int gb_file_exists(const char *path);
void gb_tmp_cleanup(void);
/* s holds exactly the n bytes at p. */
int gb_str_eq(pl_str s, const void *p, size_t n);

#endif
