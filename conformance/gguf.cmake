# GGUF reader/writer and model loading: round trips and API behaviour, hostile files (one
# test per case), allocation failure at every N. gguf_bytes.c crafts files byte by byte.
plumb_test(test_gguf LABELS unit quick
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gguf.c ${CMAKE_CURRENT_SOURCE_DIR}/gguf_bytes.c)
plumb_test(test_gguf_roundtrip LABELS unit
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gguf_roundtrip.c ${CMAKE_CURRENT_SOURCE_DIR}/gguf_bytes.c)
plumb_test(test_gguf_hostile LABELS unit quick
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gguf_hostile.c ${CMAKE_CURRENT_SOURCE_DIR}/gguf_bytes.c)
plumb_test(test_gguf_alloc LABELS unit
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gguf_alloc.c ${CMAKE_CURRENT_SOURCE_DIR}/gguf_bytes.c)
