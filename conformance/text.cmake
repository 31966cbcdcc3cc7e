# The helpers plumb.h shares with its clients (engine/core/text.c): clock, UTF-8, JSON strings.
plumb_test(test_text LABELS unit SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_text.c)
