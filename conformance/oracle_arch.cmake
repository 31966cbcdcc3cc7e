# Outside oracles for the architectures and RoPE scalings of issue 27: tiny random checkpoints of
# real configs saved by transformers, with its logits (conformance/oracle_arch/README.md). Each row
# of oracle_arch/cases.txt either matches transformers or is refused as unsupported.
plumb_test(test_oracle_arch LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/oracle_arch/test_oracle_arch.c)
set_property(TEST test_oracle_arch APPEND PROPERTY ENVIRONMENT
  "PLUMB_ORACLE_ARCH_DIR=${CMAKE_CURRENT_SOURCE_DIR}/oracle_arch")
# a new row or a flipped one is data, not code: the test reads cases.txt when it runs
