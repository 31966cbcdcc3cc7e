# End-to-end: engine logits vs the double-precision reference transformer, and the
# bit-for-bit invariance of logits across chunking, threads and truncation.
plumb_test(test_e2e LABELS e2e conformance TIMEOUT 1200
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_e2e.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c
          ${CMAKE_CURRENT_SOURCE_DIR}/kernel_sets.c
          ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_transformer.c)
plumb_test(test_sampler_chain LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sampler_chain.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c)
# No file runs silently wrong: tensors without a role, keys plumb does not read, values it does not
# compute are refused by name; the keys listed as changing nothing change no logit.
plumb_test(test_arch LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_arch.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c)
# What every architecture of the table must have (test_arch_contract.c): a tiny model that loads
# and matches the reference on every kernel set, a checkpoint convert reads, a fuzz seed, an
# oracle case or a reasoned none.
plumb_test(test_arch_contract LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_arch_contract.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c
          ${CMAKE_CURRENT_SOURCE_DIR}/kernel_sets.c
          ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_transformer.c)
set_property(TEST test_arch_contract APPEND PROPERTY ENVIRONMENT
  "PLUMB_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
