# `plumb serve` black-box tests (issue 16; conformance/serve/): real servers on loopback, each on
# --port 0 (so `ctest -j` may run them side by side), driven by curl, the OpenAI SDK for Node and
# Node scripts. Against /work/serve-contract.md only. A test whose tools are missing exits 77
# (skipped, with a SKIP line) unless PLUMB_NO_SKIP=1 is in the environment (CI sets it).
set(SERVE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/serve)
set(SERVE_MODEL ${PROJECT_SOURCE_DIR}/models/plumb-en-8m-Q8_0.gguf)
set(SERVE_NPM_DIR ${CMAKE_BINARY_DIR}/serve-npm)
set(SERVE_OPENAI_VERSION 5.23.2) # the official SDK, pinned
set(SERVE_ENV "PLUMB_CLI=$<TARGET_FILE:plumb_cli>" "PLUMB_SERVE_MODEL=${SERVE_MODEL}"
              "PLUMB_SERVE_NPM=${SERVE_NPM_DIR}")
if(PLUMB_SANITIZE)
  # Sanitizer runtimes keep freed memory in quarantine: RSS says nothing about leaks there (LSan
  # at the server's exit does), so serve_load reports RSS without bounding it.
  list(APPEND SERVE_ENV PLUMB_SERVE_SANITIZED=1)
endif()

# serve_add(NAME TIMEOUT COMMAND…)
function(serve_add name timeout)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "serve" TIMEOUT ${timeout} SKIP_RETURN_CODE 77
    ENVIRONMENT "${SERVE_ENV}")
endfunction()

# curl + jq: every endpoint, SSE framing, stop, seeds, each error status, /metrics, SIGTERM.
serve_add(serve_curl 180 bash ${SERVE_DIR}/serve_curl.sh $<TARGET_FILE:plumb_cli> ${SERVE_MODEL})
# The npm package `openai` into build/serve-npm, once (a fixture), then the SDK test.
serve_add(serve_npm_setup 300 bash ${SERVE_DIR}/npm_setup.sh ${SERVE_NPM_DIR} ${SERVE_OPENAI_VERSION})
set_tests_properties(serve_npm_setup PROPERTIES FIXTURES_SETUP serve_npm)
serve_add(serve_sdk 180 sh ${SERVE_DIR}/node_test.sh ${SERVE_DIR}/serve_sdk.mjs)
set_tests_properties(serve_sdk PROPERTIES FIXTURES_REQUIRED serve_npm)
# Streamed pieces valid UTF-8 on their own, on prompts that draw non-ASCII output.
serve_add(serve_utf8 120 sh ${SERVE_DIR}/node_test.sh ${SERVE_DIR}/serve_utf8.mjs)
# 4 conversations x 6 turns over 2 and 4 slots: fast paths, texts = fresh single-session runs.
serve_add(serve_multiconv 180 sh ${SERVE_DIR}/node_test.sh ${SERVE_DIR}/serve_multiconv.mjs)
# Several instances behind HAProxy with serve/deploy/haproxy.cfg (issue 51): 3 instances, 6
# conversations x 4 turns through the balancer with the SDK; affinity keeps each on its instance's
# fast path (per /metrics), answers = a lone instance's, SIGTERM mid-stream drains one instance and
# moves only its conversations. About 2-3 s.
serve_add(serve_balance 60 sh ${SERVE_DIR}/node_test.sh ${SERVE_DIR}/serve_balance.mjs)
set_tests_properties(serve_balance PROPERTIES FIXTURES_REQUIRED serve_npm
  ENVIRONMENT "${SERVE_ENV};PLUMB_HAPROXY_CFG=${PROJECT_SOURCE_DIR}/serve/deploy/haproxy.cfg")
# 64 concurrent clients, a few hundred requests: none lost or duplicated, RSS flat, p50/p99.
serve_add(serve_load 300 sh ${SERVE_DIR}/node_test.sh ${SERVE_DIR}/serve_load.mjs)
# Raw sockets: disconnects at random points, slow loris, cut bodies, huge headers, garbage, pipelining.
serve_add(serve_fault 300 sh ${SERVE_DIR}/node_test.sh ${SERVE_DIR}/serve_fault.mjs)
# The chat page as plumb serve answers it: headers, types, --web-dir, 404s, traversal, methods.
serve_add(serve_page 60 bash ${SERVE_DIR}/serve_page.sh $<TARGET_FILE:plumb_cli> ${SERVE_MODEL})
