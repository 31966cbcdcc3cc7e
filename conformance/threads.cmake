# Thread pool (engine/runtime/threads.c): split, reuse, thread-count rules, binding refusal, NOMEM.
plumb_test(test_threads LABELS unit SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_threads.c)
# Its stall and back-off tests time the pool's workers against each other (4 threads on 2
# cores): beside three other tests they were descheduled often enough to fail one CI run in
# several (pool_benches_only_the_stalled_worker, 2026-11-28), so this test runs alone.
set_tests_properties(test_threads PROPERTIES RUN_SERIAL TRUE)
