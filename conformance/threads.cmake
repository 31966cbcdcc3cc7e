# Thread pool (engine/runtime/threads.c): split, reuse, thread-count rules, binding refusal, NOMEM.
plumb_test(test_threads LABELS unit SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_threads.c)
