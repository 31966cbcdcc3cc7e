# Non-matmul kernels and sampling primitives of every supported kernel set against GSL
# double references (conformance/refs/ref_*.c). Each binary prints its worst error ratios.
plumb_test(test_ops LABELS conformance quick
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_ops.c ${CMAKE_CURRENT_SOURCE_DIR}/kernel_sets.c
          ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_ops.c)
plumb_test(test_attention LABELS conformance quick
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_attention.c ${CMAKE_CURRENT_SOURCE_DIR}/kernel_sets.c
          ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_ops.c ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_attention.c)
plumb_test(test_sample LABELS conformance quick
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_sample.c ${CMAKE_CURRENT_SOURCE_DIR}/kernel_sets.c
          ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_ops.c ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_sample.c)
