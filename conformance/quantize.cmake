# Quantization: row conversion, llama.cpp's per-tensor type rules, streamed GGUF writing and
# whole-model quantization (pl_model_quantize), including cancellation and allocation failure.
plumb_test(test_quantize_model LABELS unit
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_quantize_model.c)
