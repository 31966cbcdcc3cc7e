# Hugging Face checkpoints: the safetensors reader on valid and hostile files (one test per
# case, sharded checkpoints, allocation failure).
plumb_test(test_safetensors LABELS unit
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_safetensors.c)
