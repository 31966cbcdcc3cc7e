# Logit files and model-vs-model comparison: the .logits format (round trip, hostile bytes,
# allocation failure), KLD / top-k statistics against GSL, F32 vs Q8_0 vs Q4_K_M on a tiny model.
# The test runs the standalone converter, target plumb_logits_convert (built by tools/).
plumb_test(test_logits LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_logits.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c)
set_property(TEST test_logits APPEND PROPERTY ENVIRONMENT
  "PLUMB_LOGITS_CONVERT=$<TARGET_FILE:plumb_logits_convert>")
