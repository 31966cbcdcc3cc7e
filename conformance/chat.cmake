# Generation and the chat prefix cache: behaviour tests and the seeded random-operation property
# (chat_ops.c, shared with fuzz/fuzz_chat.c). PLUMB_SEED replays a run.
plumb_test(test_chat_cache LABELS unit conformance quick TIMEOUT 900
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_chat_cache.c ${CMAKE_CURRENT_SOURCE_DIR}/chat_ops.c)
target_link_libraries(test_chat_cache PRIVATE plumb_synth Threads::Threads)
# The chat paths on the model's own Jinja template (issue 29): load-time compile errors, JSON
# conversations, hostile templates, and the prefix cache under templates that re-render.
plumb_test(test_chat_template LABELS unit conformance SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_chat_template.c)
target_link_libraries(test_chat_template PRIVATE plumb_synth Threads::Threads)
target_compile_definitions(test_chat_template PRIVATE
  PLUMB_JINJA_CORPUS="${CMAKE_CURRENT_SOURCE_DIR}/jinja")
# Sessions whose forward is a pl_forward_hook (issue 50's page seam): a hook relaying to a second
# CPU session gives the plain session's bits on every chat path and under the property above;
# failing hooks and a planted hook that ignores truncate are caught.
plumb_test(test_forward_hook LABELS unit conformance quick TIMEOUT 600
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_forward_hook.c ${CMAKE_CURRENT_SOURCE_DIR}/chat_ops.c)
target_link_libraries(test_forward_hook PRIVATE plumb_synth Threads::Threads)
