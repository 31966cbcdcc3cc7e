# Hugging Face checkpoints: the safetensors reader on valid and hostile files (one test per
# case, sharded checkpoints, allocation failure).
plumb_test(test_safetensors LABELS unit
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_safetensors.c)
# plumb convert: synthetic models (synth/, plumb_synth) written out as Hugging Face directories
# and converted back bit for bit; quantized output against pl_model_quantize; bad directories.
plumb_test(test_convert LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_convert.c)
target_link_libraries(test_convert PRIVATE plumb_synth)
set_property(TEST test_convert APPEND PROPERTY ENVIRONMENT "PLUMB_CLI=$<TARGET_FILE:plumb_cli>")
