# The chat page (web/) in headless chromium, driven by puppeteer-core (conformance/web/). Like the
# SDK test, a fixture installs the npm package into the build tree, once. A test whose tools are
# missing (node, chromium, the package) exits 77 (skipped) unless PLUMB_NO_SKIP=1 (CI sets it).
# The wasm-mode test needs `make wasm`'s build-wasm/web (the wasm fixture of web/tests.cmake).
set(WEB_DIR ${CMAKE_CURRENT_SOURCE_DIR}/web)
set(WEB_NPM_DIR ${CMAKE_BINARY_DIR}/web-npm)
set(WEB_PUPPETEER_VERSION 25.16.0) # pinned
set(WEB_ENV "PLUMB_CLI=$<TARGET_FILE:plumb_cli>"
            "PLUMB_SERVE_MODEL=${PROJECT_SOURCE_DIR}/models/plumb-en-8m-Q8_0.gguf"
            "PLUMB_WEB_NPM=${WEB_NPM_DIR}" "PLUMB_WASM_WEB=${PROJECT_SOURCE_DIR}/build-wasm/web"
            "PLUMB_WEB_SRC=${PROJECT_SOURCE_DIR}/web")

function(web_add name timeout)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "browser" TIMEOUT ${timeout} SKIP_RETURN_CODE 77
    ENVIRONMENT "${WEB_ENV}" WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endfunction()

web_add(web_npm_setup 300 bash ${CMAKE_CURRENT_SOURCE_DIR}/serve/npm_setup.sh ${WEB_NPM_DIR}
  ${WEB_PUPPETEER_VERSION} puppeteer-core)
set_tests_properties(web_npm_setup PROPERTIES FIXTURES_SETUP web_npm)
# The page with plumb serve as its backend: three turns, fast paths, errors, overflow, stop.
web_add(web_server 240 sh ${CMAKE_CURRENT_SOURCE_DIR}/serve/node_test.sh ${WEB_DIR}/web_server.mjs)
set_tests_properties(web_server PROPERTIES FIXTURES_REQUIRED web_npm)
# The page as `plumb serve -m FILE` serves it: starts on the server's model, names it, and a
# message gets the server's reply; a refused message (no model in the browser, the page still
# starting, the server's 400) stays in the input with the refusal beside it; the server's file
# in the browser.
web_add(web_served 240 sh ${CMAKE_CURRENT_SOURCE_DIR}/serve/node_test.sh ${WEB_DIR}/web_served.mjs)
set_tests_properties(web_served PROPERTIES FIXTURES_REQUIRED web_npm)
# The page with its engine in a Worker: the module's test double (always), then the real wasm
# build (`make wasm`'s build-wasm/web, which the wasm_build fixture of web/tests.cmake makes;
# skipped while it is absent, a failure under PLUMB_NO_SKIP=1).
web_add(web_fake_engine 240 sh ${CMAKE_CURRENT_SOURCE_DIR}/serve/node_test.sh ${WEB_DIR}/web_engine.mjs)
set_tests_properties(web_fake_engine PROPERTIES FIXTURES_REQUIRED web_npm)
set_property(TEST web_fake_engine APPEND PROPERTY ENVIRONMENT
  "PLUMB_WEB_ENGINE=${WEB_DIR}/fake-engine" PLUMB_WEB_FAKE=1)
web_add(web_wasm 600 sh ${CMAKE_CURRENT_SOURCE_DIR}/serve/node_test.sh ${WEB_DIR}/web_engine.mjs)
set_tests_properties(web_wasm PROPERTIES FIXTURES_REQUIRED "web_npm;wasm")
set_property(TEST web_wasm APPEND PROPERTY ENVIRONMENT
  "PLUMB_WEB_ENGINE=${PROJECT_SOURCE_DIR}/build-wasm/web")
# The relaxed-SIMD module in chromium (node 20 cannot run it): detection, wasm128r's logits
# bit-identical to wasm128's and native wasm128r's, greedy chat equal to native.
web_add(web_relaxed 600 sh ${CMAKE_CURRENT_SOURCE_DIR}/serve/node_test.sh ${WEB_DIR}/web_relaxed.mjs)
set_tests_properties(web_relaxed PROPERTIES FIXTURES_REQUIRED "web_npm;wasm")
set_property(TEST web_relaxed APPEND PROPERTY ENVIRONMENT
  "PLUMB_WEB_ENGINE=${PROJECT_SOURCE_DIR}/build-wasm/web")
# web/ring.js under Node alone: order, bytes, wrap-around, parts, STOP to a busy producer.
web_add(web_ring 60 sh ${CMAKE_CURRENT_SOURCE_DIR}/serve/node_test.sh ${WEB_DIR}/ring_test.mjs)
# web/gpu-channel.mjs under Node alone (the webgpu backend's engine-to-GPU-Worker channel): requests
# and answers intact, long errors cut, a silent GPU side timed out and the channel broken.
web_add(web_gpu_channel 60 sh ${CMAKE_CURRENT_SOURCE_DIR}/serve/node_test.sh ${WEB_DIR}/gpu_channel_test.mjs)
