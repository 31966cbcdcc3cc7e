# The wasm128 kernel set built for wasm (emcc -msimd128, run in node) computes the same bits as
# its native SIMDe build, which the conformance suite proves: registered where both tools exist.
if(PLUMB_WASM128 AND NOT CMAKE_SYSTEM_NAME STREQUAL "Emscripten")
  find_program(PLUMB_EMCC emcc)
  find_program(PLUMB_NODE node)
  add_executable(wasm128_hash ${CMAKE_CURRENT_SOURCE_DIR}/wasm128_hash.c)
  target_include_directories(wasm128_hash PRIVATE ${PROJECT_SOURCE_DIR}/kernels)
  target_compile_options(wasm128_hash PRIVATE ${PLUMB_WARNINGS})
  target_link_libraries(wasm128_hash PRIVATE plumb m)
  if(PLUMB_EMCC AND PLUMB_NODE)
    add_test(NAME wasm128_native_matches_wasm
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/wasm128_native_vs_wasm.sh
                     $<TARGET_FILE:wasm128_hash> ${PROJECT_SOURCE_DIR}
                     ${CMAKE_CURRENT_BINARY_DIR}/wasm128_hash.out)
    set_tests_properties(wasm128_native_matches_wasm PROPERTIES LABELS "conformance" TIMEOUT 300)
  else()
    message(STATUS "plumb: emcc or node not found: wasm128_native_matches_wasm not registered")
  endif()
endif()
