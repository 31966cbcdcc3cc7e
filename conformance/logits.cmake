# Logit files and model-vs-model comparison: the .logits format (round trip, hostile bytes,
# allocation failure), KLD / top-k statistics against GSL, F32 vs Q8_0 vs Q4_K_M on a tiny model.
# The standalone converter (tools/logits_convert.c) is built here so the test can run it.
add_executable(plumb_logits_convert ${PROJECT_SOURCE_DIR}/tools/logits_convert.c)
target_compile_options(plumb_logits_convert PRIVATE ${PLUMB_WARNINGS})
plumb_test(test_logits LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_logits.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c)
set_property(TEST test_logits APPEND PROPERTY ENVIRONMENT
  "PLUMB_LOGITS_CONVERT=$<TARGET_FILE:plumb_logits_convert>")
