/* set_relaxed.c — the wasm128r kernel table: set.c with the relaxed quantized matmuls.
 * Under emscripten clang-19 compiles it (cmake/wasm.cmake). */
#define PL_W_RELAXED 1
#include "set.c"
