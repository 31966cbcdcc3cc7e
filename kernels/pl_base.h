/* pl_base.h — the vocabulary the kernels share with the public API: status codes, the error
 * record and the tensor element types. Not plumb.h: kernels include nothing of the engine. */
#ifndef PLUMB_KERNELS_PL_BASE_H
#define PLUMB_KERNELS_PL_BASE_H

#include <stddef.h>
#include <stdint.h>

/* plumb.h (installed alone, so it includes nothing of the tree) holds the same block; the
 * shared guard makes whichever comes first define the names, and a ctest keeps the two
 * blocks identical, so the names and values are the same whichever that is. */
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

#endif
