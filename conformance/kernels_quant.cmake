# Quantization, matmul and kernel-registry conformance (issue 3): every supported kernel set
# against ref and against GSL double references in refs/ref_matmul.c; the expert matmul
# (kernels/matmul_id.c) over every set's dense matmul (issue 33). The types are kernels/types.h's
# PL_TYPES (quant_inputs.c); test_quant's every_listed_type_is_in_every_quant_table fails while a
# per-type table here (bounds, NaN blocks) or the quantizer's file types lack a listed type.
set(PLUMB_QUANT_COMMON ${CMAKE_CURRENT_SOURCE_DIR}/quant_inputs.c
                       ${CMAKE_CURRENT_SOURCE_DIR}/refs/ref_matmul.c)
plumb_test(test_quant LABELS conformance quick
           SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_quant.c ${PLUMB_QUANT_COMMON})
plumb_test(test_matmul LABELS conformance quick
           SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_matmul.c ${PLUMB_QUANT_COMMON})
plumb_test(test_matmul_id LABELS conformance
           SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_matmul_id.c ${PLUMB_QUANT_COMMON})
plumb_test(test_registry LABELS conformance SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_registry.c)
