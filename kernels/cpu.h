/* cpu.h — what this x86-64 CPU and its OS can run: CPUID feature bits *and* XGETBV (the OS
 * saves YMM/ZMM state), so a set is never offered where its registers would be lost. */
#ifndef PLUMB_KERNELS_CPU_H
#define PLUMB_KERNELS_CPU_H

/* 1 if the avx2 set can run: AVX2, FMA, F16C, and the OS saves YMM state. */
int pl_cpu_avx2(void);
/* 1 if the avx512 set can run: the avx2 requirements plus AVX-512 F/BW/VL/DQ and VNNI, and
 * the OS saves opmask and ZMM state. */
int pl_cpu_avx512(void);

#endif
