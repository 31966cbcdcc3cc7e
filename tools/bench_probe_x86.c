/* bench_probe_x86.c — AVX-512 loops of `plumb bench`'s probes: the int8 dot rate (independent
 * vpdpbusd on zmm) and a 64-byte-load read loop. Compiled with -mavx512f -mavx512vl -mavx512vnni;
 * called only when CPUID (and the OS's saved state) says so. Not kernels: nothing useful. */
#include <immintrin.h>
#include <stdint.h>

#include "bench.h"

enum { ACC = 12 }; /* independent chains: more than latency x throughput (4-5 x 1-2 per cycle) */

uint64_t bench_int8_vnni512(int64_t iters, const uint8_t *src, double *macs)
{
    __m512i a = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)src));
    __m512i b = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(src + 16)));
    __m512i acc[ACC];
    for (int i = 0; i < ACC; i++) acc[i] = _mm512_set1_epi32(i);
    for (int64_t it = 0; it < iters; it++) {
        __asm__ volatile("" : "+v"(a)); /* opaque: the compiler may not hoist or fold the dots */
        for (int i = 0; i < ACC; i++) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
    }
    __m512i s = acc[0];
    for (int i = 1; i < ACC; i++) s = _mm512_add_epi32(s, acc[i]);
    *macs = (double)iters * ACC * 64; /* 16 lanes x 4 u8*s8 products each */
    return (uint64_t)(uint32_t)_mm512_reduce_add_epi32(s);
}

uint64_t bench_read_avx512(const uint64_t *p, size_t n)
{
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_add_epi64(s0, _mm512_loadu_si512(p + i));
        s1 = _mm512_add_epi64(s1, _mm512_loadu_si512(p + i + 8));
        s2 = _mm512_add_epi64(s2, _mm512_loadu_si512(p + i + 16));
        s3 = _mm512_add_epi64(s3, _mm512_loadu_si512(p + i + 24));
    }
    uint64_t t = (uint64_t)_mm512_reduce_add_epi64(
        _mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3)));
    for (; i < n; i++) t += p[i];
    return t;
}
