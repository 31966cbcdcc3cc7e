# web/tests.cmake — the browser build's tests, run from the native build tree (included by the
# top-level CMakeLists.txt). wasm_build (fixture) runs `make wasm`; the node tests then load
# build-wasm/web/plumb-engine.mjs. Without emscripten or node they skip (77) unless PLUMB_NO_SKIP=1.
set(WASM_TESTS ${PROJECT_SOURCE_DIR}/web/tests)
set(WASM_WEB ${PROJECT_SOURCE_DIR}/build-wasm/web)
set(WASM_MODEL ${PROJECT_SOURCE_DIR}/models/plumb-en-8m-Q8_0.gguf)
add_test(NAME wasm_build COMMAND sh ${WASM_TESTS}/wasm_build.sh ${PROJECT_SOURCE_DIR})
# A fresh clone compiles three variants (the libraries come from make deps' cache): 83 s on an
# idle 2-core VM. COST puts it first when ctest has no timings yet (a fresh clone): the wasm tests
# wait for it, and started last (as a 2-processor test behind the 1-processor ones) it and they
# were the suite's last 100 s.
set_tests_properties(wasm_build PROPERTIES FIXTURES_SETUP wasm LABELS "wasm" TIMEOUT 3600
                                           SKIP_RETURN_CODE 77 PROCESSORS 2 COST 1000)
function(wasm_add name timeout labels script)
  add_test(NAME ${name} COMMAND sh ${WASM_TESTS}/wasm_test.sh ${WASM_WEB} ${WASM_TESTS}/${script}
                                ${WASM_WEB} $<TARGET_FILE:plumb_cli> ${WASM_MODEL} ${ARGN})
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED wasm LABELS "${labels}"
                                          TIMEOUT ${timeout} SKIP_RETURN_CODE 77)
endfunction()
wasm_add(wasm_logits_ref 600 "wasm" logits.mjs)
wasm_add(wasm_chat 600 "wasm" chat.mjs simd)
wasm_add(wasm_chat_threads 600 "wasm" chat.mjs simd-threads)
# The relaxed-SIMD modules as built (their logits and chat: web_relaxed, in chromium).
wasm_add(wasm_relaxed 120 "wasm" relaxed.mjs)
wasm_add(wasm_memory 1200 "wasm;wasm-slow" memory.mjs simd)
