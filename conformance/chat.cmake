# Generation and the chat prefix cache: behaviour tests and the seeded random-operation property
# (chat_ops.c, shared with fuzz/fuzz_chat.c). PLUMB_SEED replays a run.
plumb_test(test_chat_cache LABELS unit conformance TIMEOUT 900
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_chat_cache.c ${CMAKE_CURRENT_SOURCE_DIR}/chat_ops.c)
target_link_libraries(test_chat_cache PRIVATE plumb_synth Threads::Threads)
