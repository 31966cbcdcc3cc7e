/* matmul_q_relaxed.c — the wasm128r set's quantized matmuls: matmul_q.c with the relaxed
 * integer dot (simd.h). Under emscripten clang-19 compiles it (cmake/wasm.cmake). */
#define PL_W_RELAXED 1
#include "matmul_q.c"
