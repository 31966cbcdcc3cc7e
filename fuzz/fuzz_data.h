/* fuzz_data.h — turns a fuzzer's input bytes into parameters (zstd's data producer): small
 * choices are taken from the END of the input, so the front stays free for bulk payloads.
 * Not a parser: every getter is total (an exhausted producer returns the low bound). */
#ifndef PLUMB_FUZZ_DATA_H
#define PLUMB_FUZZ_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct fuzz_data {
    const uint8_t *data;
    size_t size; /* bytes not yet consumed: [data, data + size) */
} fuzz_data;

static inline fuzz_data fuzz_data_init(const uint8_t *data, size_t size)
{
    fuzz_data d = {data, size};
    return d;
}

static inline size_t fuzz_data_remaining(const fuzz_data *d)
{
    return d->size;
}

/* A value in [lo, hi] built from up to four bytes taken off the end. */
static inline uint32_t fuzz_data_u32_range(fuzz_data *d, uint32_t lo, uint32_t hi)
{
    uint64_t range = (uint64_t)hi - lo;
    uint32_t v = 0;
    for (uint64_t r = range; r != 0 && d->size != 0; r >>= 8) {
        v = (v << 8) | d->data[d->size - 1];
        d->size--;
    }
    return range == UINT32_MAX ? v : lo + (uint32_t)(v % (range + 1));
}

static inline int fuzz_data_bool(fuzz_data *d)
{
    return (int)fuzz_data_u32_range(d, 0, 1);
}

/* A float from four bytes off the end: any bit pattern, so NaN, Inf, denormals too. */
static inline float fuzz_data_f32_bits(fuzz_data *d)
{
    uint32_t u = fuzz_data_u32_range(d, 0, UINT32_MAX);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Up to n bytes off the FRONT (the payload); returns how many were given (<= n). */
static inline size_t fuzz_data_take(fuzz_data *d, const uint8_t **out, size_t n)
{
    if (n > d->size) n = d->size;
    *out = d->data;
    d->data += n;
    d->size -= n;
    return n;
}

/* Copies exactly n bytes into dst, zero-filling what the input no longer has. */
static inline void fuzz_data_fill(fuzz_data *d, void *dst, size_t n)
{
    const uint8_t *p;
    size_t got = fuzz_data_take(d, &p, n);
    if (got) memcpy(dst, p, got);
    if (got < n) memset((uint8_t *)dst + got, 0, n - got);
}

#endif
