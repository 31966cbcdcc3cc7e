# cmake/wasm.cmake — options and flags of the emscripten build (make wasm configures one build
# tree per variant with emcmake). Not used natively. web/README.md describes the variants.
option(PLUMB_WASM_THREADS "pthreads on Web Workers (needs cross-origin isolation)" ON)
option(PLUMB_WASM_SIMD "compile with -msimd128 (the wasm128 kernel set needs it)" ON)
set(PLUMB_WASM_DEPS "" CACHE PATH
    "prefix of PCRE2, utf8proc, jansson built for wasm (tools/wasm/deps.sh)")

# No -march-style assumption beyond the variant's own: a SIMD module does not validate on an
# engine without SIMD128, so the JS side picks the variant (plumb-engine.mjs, detectVariant).
if(PLUMB_WASM_SIMD)
  add_compile_options(-msimd128)
endif()
if(PLUMB_WASM_THREADS)
  add_compile_options(-pthread)
  add_link_options(-pthread)
endif()
if(PLUMB_WASM_SIMD AND PLUMB_WASM_THREADS)
  set(PLUMB_WASM_VARIANT simd-threads)
elseif(PLUMB_WASM_SIMD)
  set(PLUMB_WASM_VARIANT simd)
elseif(PLUMB_WASM_THREADS)
  set(PLUMB_WASM_VARIANT scalar-threads)
else()
  set(PLUMB_WASM_VARIANT scalar)
endif()
# The wasm128 kernel set (kernels/wasm128, option PLUMB_WASM128) is SIMD128 code: it needs the
# -msimd128 above. The scalar variants configure with -DPLUMB_WASM128=OFF.
if(DEFINED PLUMB_WASM128 AND PLUMB_WASM128 AND NOT PLUMB_WASM_SIMD)
  message(FATAL_ERROR "PLUMB_WASM128=ON needs PLUMB_WASM_SIMD=ON (-msimd128)")
endif()

# The relaxed modules (web/CMakeLists.txt): a SIMD tree also links plumb-simd-relaxed[-threads],
# whose wasm128r files clang-19 compiles (emcc's clang-14 encodes relaxed SIMD with prototype
# opcodes no engine accepts).
option(PLUMB_WASM_RELAXED "also link the relaxed-SIMD module (wasm128r, clang-19)" ON)
if(PLUMB_WASM_RELAXED AND NOT (PLUMB_WASM_SIMD AND (NOT DEFINED PLUMB_WASM128 OR PLUMB_WASM128)))
  set(PLUMB_WASM_RELAXED OFF)
endif()
if(PLUMB_WASM_RELAXED)
  find_program(PLUMB_WASM_RELAXED_CC NAMES clang-19)
  if(NOT PLUMB_WASM_RELAXED_CC)
    message(FATAL_ERROR "clang-19 not found (Debian: clang-19, make deps): the relaxed module "
                        "needs it; -DPLUMB_WASM_RELAXED=OFF builds without")
  endif()
endif()

# The dependencies' pkg-config files; the emscripten toolchain confines find_* to its sysroot,
# so their prefix joins the root path.
if(PLUMB_WASM_DEPS)
  set(ENV{PKG_CONFIG_LIBDIR} "${PLUMB_WASM_DEPS}/lib/pkgconfig")
  set(ENV{PKG_CONFIG_PATH} "")
  list(APPEND CMAKE_FIND_ROOT_PATH "${PLUMB_WASM_DEPS}")
endif()
set(PLUMB_BUILD_TESTS OFF CACHE BOOL "Build the CUnit tests" FORCE)
