/* bench_probe_avx2.c — AVX2 loops of `plumb bench`'s probes: the int8 dot rate (the sequence an
 * AVX2 int8 dot runs: vpmaddubsw, vpmaddwd by ones, vpaddd, on independent ymm chains) and a
 * 32-byte-load read loop. Compiled with -mavx2; called only when CPUID says so. Not kernels. */
#include <immintrin.h>
#include <stdint.h>

#include "bench.h"

enum { ACC = 8 }; /* independent chains; with a, b and ones they fit the 16 ymm registers */

uint64_t bench_int8_avx2(int64_t iters, const uint8_t *src, double *macs)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)src);
    __m256i b = _mm256_loadu_si256((const __m256i *)(src + 32));
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[ACC];
    for (int i = 0; i < ACC; i++) acc[i] = _mm256_set1_epi32(i);
    for (int64_t it = 0; it < iters; it++) {
        for (int i = 0; i < ACC; i++) {
            /* a made opaque before each use: the eight products may not be shared or hoisted */
            __asm__ volatile("" : "+x"(a));
            __m256i p = _mm256_maddubs_epi16(a, b); /* 32 u8*s8 products, summed in pairs */
            acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(p, ones));
        }
    }
    __m256i s = acc[0];
    for (int i = 1; i < ACC; i++) s = _mm256_add_epi32(s, acc[i]);
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
    *macs = (double)iters * ACC * 32;
    return (uint64_t)(uint32_t)_mm_cvtsi128_si32(h);
}

uint64_t bench_read_avx2(const uint64_t *p, size_t n)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_add_epi64(s0, _mm256_loadu_si256((const __m256i *)(p + i)));
        s1 = _mm256_add_epi64(s1, _mm256_loadu_si256((const __m256i *)(p + i + 4)));
        s2 = _mm256_add_epi64(s2, _mm256_loadu_si256((const __m256i *)(p + i + 8)));
        s3 = _mm256_add_epi64(s3, _mm256_loadu_si256((const __m256i *)(p + i + 12)));
    }
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, s);
    uint64_t t = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; i < n; i++) t += p[i];
    return t;
}
