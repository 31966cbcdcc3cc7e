# The webgpu kernel set (kernels/webgpu/, WGSL) against the conformance suite (issue 50).
# webgpu_cases (C) writes randomized cases to a folder and later judges the outputs against the
# GSL double references with the CPU sets' bounds; conformance/web/webgpu.mjs runs the kernels on
# them in headless chromium (software WebGPU: SwiftShader) through puppeteer-core (the web_npm
# fixture of web.cmake) and plants faults that must be caught; then kernels/webgpu/llama.mjs runs
# tiny llama/qwen2/qwen3 files (webgpu_models) judged against the double reference transformer.
# Skips (77) without node, chromium, puppeteer-core or a WebGPU adapter, unless PLUMB_NO_SKIP=1.
add_executable(webgpu_cases ${CMAKE_CURRENT_SOURCE_DIR}/webgpu_cases.c
  ${CMAKE_CURRENT_SOURCE_DIR}/testutil.c ${CMAKE_CURRENT_SOURCE_DIR}/quant_inputs.c
  ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_matmul.c ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_ops.c
  ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_attention.c)
target_include_directories(webgpu_cases PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
  ${CMAKE_CURRENT_SOURCE_DIR}/refs ${PROJECT_SOURCE_DIR}/engine ${PROJECT_SOURCE_DIR}/kernels)
target_compile_options(webgpu_cases PRIVATE ${PLUMB_WARNINGS})
target_link_libraries(webgpu_cases PRIVATE plumb PkgConfig::CUNIT ${PLUMB_GSL} m)

# webgpu_models (C) writes tiny llama/qwen2/qwen3 files and judges the forward pass's logits
# against the double-precision reference transformer (test_e2e.c's bound) and the ref set's
# greedy choices.
add_executable(webgpu_models ${CMAKE_CURRENT_SOURCE_DIR}/webgpu_models.c
  ${CMAKE_CURRENT_SOURCE_DIR}/testutil.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c
  ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_transformer.c)
target_include_directories(webgpu_models PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
  ${CMAKE_CURRENT_SOURCE_DIR}/refs ${PROJECT_SOURCE_DIR}/engine ${PROJECT_SOURCE_DIR}/kernels)
target_compile_options(webgpu_models PRIVATE ${PLUMB_WARNINGS})
target_link_libraries(webgpu_models PRIVATE plumb PkgConfig::CUNIT ${PLUMB_GSL} m)

add_test(NAME webgpu_conformance
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/serve/node_test.sh ${CMAKE_CURRENT_SOURCE_DIR}/web/webgpu.mjs)
set_tests_properties(webgpu_conformance PROPERTIES LABELS "webgpu;browser;conformance"
  TIMEOUT 1200 SKIP_RETURN_CODE 77 FIXTURES_REQUIRED web_npm
  ENVIRONMENT "PLUMB_WEBGPU_CASES=$<TARGET_FILE:webgpu_cases>;PLUMB_WEBGPU_MODELS=$<TARGET_FILE:webgpu_models>;PLUMB_WEB_NPM=${CMAKE_BINARY_DIR}/web-npm")

# The chat page's webgpu backend (issue 50): the page served by plumb serve (cross-origin
# isolated) with `make wasm`'s engine folder (the wasm fixture of web/tests.cmake), a tiny llama
# Q8_0 file on the GPU (SwiftShader) in two greedy turns equal to native ref's, turn 2 on the GPU
# cache's fast path, the wasm backend's replies the same; the fallbacks (a Q4_0 file, whose Q6_K
# head the set lacks; chromium without WebGPU) saying why; planted faults caught. Timeout 600 s:
# 344 s measured on this VM beside webgpu_conformance (ctest -j 4), and past 400 s on a slower
# host the same day (the CI's webgpu phase keeps its own 1000 s budget).
add_test(NAME webgpu_page
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/serve/node_test.sh ${CMAKE_CURRENT_SOURCE_DIR}/web/webgpu_page.mjs)
set_tests_properties(webgpu_page PROPERTIES LABELS "webgpu;browser" TIMEOUT 600
  SKIP_RETURN_CODE 77 FIXTURES_REQUIRED "web_npm;wasm"
  ENVIRONMENT "PLUMB_CLI=$<TARGET_FILE:plumb_cli>;PLUMB_SERVE_MODEL=${PROJECT_SOURCE_DIR}/models/plumb-en-8m-Q8_0.gguf;PLUMB_WEB_NPM=${CMAKE_BINARY_DIR}/web-npm;PLUMB_WEB_ENGINE=${PROJECT_SOURCE_DIR}/build-wasm/web")
