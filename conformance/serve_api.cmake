# The server's library (serve/, plumb_serve) without and with the network: the pure request path
# under hostile input, slot choice, metrics and replies (test_serve_api); the real server in a
# thread on loopback with a socket client (test_serve_http, also run under TSan by `make tsan`).
pkg_check_modules(TEST_SERVE_JANSSON REQUIRED IMPORTED_TARGET jansson)
plumb_test(test_serve_api LABELS unit TIMEOUT 120
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_serve_api.c)
target_link_libraries(test_serve_api PRIVATE plumb_serve plumb_synth PkgConfig::TEST_SERVE_JANSSON)
plumb_test(test_serve_http LABELS unit TIMEOUT 300
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_serve_http.c)
target_link_libraries(test_serve_http PRIVATE plumb_serve PkgConfig::TEST_SERVE_JANSSON
  Threads::Threads)
set_property(TEST test_serve_http APPEND PROPERTY ENVIRONMENT
  "PLUMB_SERVE_TEST_MODEL=${PROJECT_SOURCE_DIR}/models/plumb-en-8m-Q8_0.gguf")
