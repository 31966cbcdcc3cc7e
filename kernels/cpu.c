/* cpu.c — x86-64 feature detection for the registry: CPUID leaves 1 and 7 plus XGETBV.
 * Not a dispatcher: the registry asks, the sets' supported() functions answer. */
#include <stdint.h>

#include "cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

#define BIT(v, n) (((v) >> (n)) & 1u)

/* XCR0 bits: 1 SSE, 2 AVX (YMM upper), 5 opmask, 6 ZMM0-15 upper, 7 ZMM16-31. */
static int os_saves(uint64_t mask)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !BIT(c, 27)) return 0; /* OSXSAVE */
    return (xgetbv0() & mask) == mask;
}

int pl_cpu_avx2(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!BIT(c, 28) || !BIT(c, 12) || !BIT(c, 29)) return 0; /* AVX, FMA, F16C */
    if (!os_saves(0x6)) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return BIT(b, 5); /* AVX2 */
}

int pl_cpu_avx512(void)
{
    unsigned a, b, c, d;
    if (!pl_cpu_avx2() || !os_saves(0xe6)) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    /* F 16, DQ 17, BW 30, VL 31 (EBX); VNNI 11 (ECX) */
    return BIT(b, 16) && BIT(b, 17) && BIT(b, 30) && BIT(b, 31) && BIT(c, 11);
}

#else

int pl_cpu_avx2(void)
{
    return 0;
}

int pl_cpu_avx512(void)
{
    return 0;
}

#endif
