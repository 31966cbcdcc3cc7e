# Perplexity (engine/features/perplexity.c): the window arithmetic, per-token NLLs against the
# session's logits with a GSL log-softmax, bit-identity across batch and threads, BOS, KLD
# through windowed .logits files (a model against itself, Q8_0 against F32), errors.
plumb_test(test_perplexity LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_perplexity.c ${CMAKE_CURRENT_SOURCE_DIR}/tinymodel.c)
target_link_libraries(test_perplexity PRIVATE plumb_synth)

# Issue 14's gate on a trained model: Q8_0 may move the perplexity of a short text by <= 0.5 %,
# Q4_K_M by <= 5 %, against F32. Always built (so it cannot rot); registered only when
#   -DPLUMB_PPL_GATE="F32.gguf;Q8_0.gguf;Q4_K_M.gguf;TEXT[;N_CTX[;MAX_WINDOWS]]"
# names the files (paths absolute, or relative to the build directory).
add_executable(ppl_gate ${CMAKE_CURRENT_SOURCE_DIR}/ppl_gate.c ${CMAKE_CURRENT_SOURCE_DIR}/testutil.c)
target_include_directories(ppl_gate PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/engine)
target_compile_options(ppl_gate PRIVATE ${PLUMB_WARNINGS})
target_link_libraries(ppl_gate PRIVATE plumb PkgConfig::CUNIT m)
set(PLUMB_PPL_GATE "" CACHE STRING
  "F32.gguf;Q8_0.gguf;Q4_K_M.gguf;TEXT[;N_CTX[;MAX_WINDOWS]]: register the ppl_gate test")
if(PLUMB_PPL_GATE)
  list(LENGTH PLUMB_PPL_GATE plumb_ppl_gate_n)
  if(plumb_ppl_gate_n LESS 4 OR plumb_ppl_gate_n GREATER 6)
    message(FATAL_ERROR "PLUMB_PPL_GATE needs F32;Q8_0;Q4_K_M;TEXT[;N_CTX[;MAX_WINDOWS]], got '${PLUMB_PPL_GATE}'")
  endif()
  add_test(NAME ppl_gate COMMAND ppl_gate ${PLUMB_PPL_GATE})
  set_tests_properties(ppl_gate PROPERTIES LABELS "conformance;model" TIMEOUT 900
    ENVIRONMENT_MODIFICATION "PLUMB_KERNELS=unset:")
endif()

# The same gate on the demo model (models/plumb-en-8m-hf, converted here) and the first 32 KiB
# of its held-out text (Brown corpus paragraphs, conformance/oracle/heldout-brown.txt).
set(plumb_demo_dir ${CMAKE_CURRENT_BINARY_DIR}/demo-ppl)
add_test(NAME ppl_gate_demo_convert
  COMMAND sh -c "mkdir -p '${plumb_demo_dir}' && for t in F32 Q8_0 Q4_K_M; do '$<TARGET_FILE:plumb_cli>' convert '${PROJECT_SOURCE_DIR}/models/plumb-en-8m-hf' '${plumb_demo_dir}/'$t.gguf --type $t >/dev/null || exit 1; done")
set_tests_properties(ppl_gate_demo_convert PROPERTIES FIXTURES_SETUP demo_ppl TIMEOUT 120
  LABELS "conformance;model")
add_test(NAME ppl_gate_demo COMMAND ppl_gate ${plumb_demo_dir}/F32.gguf ${plumb_demo_dir}/Q8_0.gguf
  ${plumb_demo_dir}/Q4_K_M.gguf ${CMAKE_CURRENT_SOURCE_DIR}/oracle/heldout-brown.txt 256)
set_tests_properties(ppl_gate_demo PROPERTIES FIXTURES_REQUIRED demo_ppl LABELS "conformance;model"
  TIMEOUT 300 ENVIRONMENT_MODIFICATION "PLUMB_KERNELS=unset:")
