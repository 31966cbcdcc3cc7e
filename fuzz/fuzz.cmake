# fuzz.cmake — the fuzz targets; included by fuzz/CMakeLists.txt (add_subdirectory(fuzz)) or,
# in builds whose top level does not add fuzz/, late through fuzz/standalone.cmake.
include_guard(GLOBAL)
set(PLUMB_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
# Adding a harness: write fuzz_<name>.c and add <name> to this list (the Makefile and
# campaign.sh find fuzz/fuzz_*.c themselves).
set(PLUMB_FUZZ_HARNESSES gguf tokenizer quant sampler chat safetensors http jinja spm_model)
# Extra sources per harness: fuzz_chat shares its operation decoder and oracle with the
# property test in conformance/.
set(PLUMB_FUZZ_EXTRA_chat ${PROJECT_SOURCE_DIR}/conformance/chat_ops.c)
# Extra libraries per harness: fuzz_http drives the server's request path (serve/, with
# jansson and libmicrohttpd).
set(PLUMB_FUZZ_LIBS_http plumb_serve)

# The vocabularies the tokenizer harness builds (and the seed generator's models) come from
# synth/ (plumb_synth); a top level that does not add synth/ gets it here.
if(NOT TARGET plumb_synth)
  add_subdirectory(${PROJECT_SOURCE_DIR}/synth ${CMAKE_BINARY_DIR}/synth)
endif()
if(NOT TARGET plumb_serve)
  add_subdirectory(${PROJECT_SOURCE_DIR}/serve ${CMAKE_BINARY_DIR}/serve)
endif()

# A fuzzing engine that brings its own main (libFuzzer: -fsanitize=fuzzer; OSS-Fuzz and
# ClusterFuzzLite pass $LIB_FUZZING_ENGINE, flags or a library): each harness is then built around
# LLVMFuzzerTestOneInput (driver.c) and linked with it. Empty: AFL++'s loop or the replay driver.
set(PLUMB_FUZZ_ENGINE "" CACHE STRING
    "link the harnesses with this fuzzing engine (e.g. -fsanitize=fuzzer) instead of their own main")
separate_arguments(PLUMB_FUZZ_ENGINE_ARGS UNIX_COMMAND "${PLUMB_FUZZ_ENGINE}")

foreach(h ${PLUMB_FUZZ_HARNESSES})
  add_executable(fuzz_${h} ${PLUMB_FUZZ_DIR}/fuzz_${h}.c ${PLUMB_FUZZ_DIR}/driver.c
    ${PLUMB_FUZZ_EXTRA_${h}})
  target_include_directories(fuzz_${h} PRIVATE ${PLUMB_FUZZ_DIR} ${PROJECT_SOURCE_DIR}/conformance
    ${PROJECT_SOURCE_DIR}/engine ${PROJECT_SOURCE_DIR}/kernels)
  target_compile_options(fuzz_${h} PRIVATE ${PLUMB_WARNINGS})
  target_link_libraries(fuzz_${h} PRIVATE ${PLUMB_FUZZ_LIBS_${h}} plumb_synth plumb m)
  if(PLUMB_FUZZ_ENGINE_ARGS)
    target_compile_definitions(fuzz_${h} PRIVATE PLUMB_FUZZ_LIBFUZZER=1)
    target_link_libraries(fuzz_${h} PRIVATE ${PLUMB_FUZZ_ENGINE_ARGS})
  endif()
  # One place for the binaries however fuzz/ was added: <build>/fuzz/fuzz_<name>.
  set_target_properties(fuzz_${h} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
endforeach()

# Seed corpora come from the project's own generators (make fuzz-seeds / campaign.sh seeds).
add_executable(fuzz_mkseeds ${PLUMB_FUZZ_DIR}/mkseeds.c)
target_compile_options(fuzz_mkseeds PRIVATE ${PLUMB_WARNINGS})
target_link_libraries(fuzz_mkseeds PRIVATE plumb_synth plumb m)
set_target_properties(fuzz_mkseeds PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)

# The replay tests need the replay driver: an engine's main would start fuzzing instead.
if(PLUMB_BUILD_TESTS AND NOT PLUMB_FUZZ_ENGINE_ARGS)
  enable_testing()
  foreach(h ${PLUMB_FUZZ_HARNESSES})
    add_test(NAME fuzz_replay_${h}
      COMMAND fuzz_${h} ${PLUMB_FUZZ_DIR}/corpus/${h}
              ${PLUMB_FUZZ_DIR}/regressions/${h})
    # The harness picks its kernel sets itself; the caller's PLUMB_* must not change it.
    set_tests_properties(fuzz_replay_${h} PROPERTIES LABELS fuzz-replay TIMEOUT 120
      ENVIRONMENT_MODIFICATION "PLUMB_KERNELS=unset:;PLUMB_THREADS=unset:;PLUMB_FUZZ_REPLAY_CHECK=set:1")
  endforeach()
  # The parsers' corpora replay in a second or two: part of the edit loop (ctest -L quick).
  foreach(h gguf tokenizer jinja http safetensors quant spm_model)
    if(TARGET fuzz_${h})
      set_property(TEST fuzz_replay_${h} APPEND PROPERTY LABELS quick)
    endif()
  endforeach()
endif()
