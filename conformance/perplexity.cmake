# Perplexity (engine/features/perplexity.c): the window arithmetic, per-token NLLs against the
# session's logits with a GSL log-softmax, bit-identity across batch and threads, BOS, KLD
# through windowed .logits files (a model against itself, Q8_0 against F32), errors.
plumb_test(test_perplexity LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_perplexity.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c)
target_link_libraries(test_perplexity PRIVATE plumb_synth)
