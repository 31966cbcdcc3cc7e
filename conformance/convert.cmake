# Hugging Face checkpoints: the safetensors reader on valid and hostile files (one test per
# case, sharded checkpoints, allocation failure).
plumb_test(test_safetensors LABELS unit
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_safetensors.c)
# plumb convert: synthetic models (synth/, plumb_synth) written out as Hugging Face directories
# and converted back bit for bit; quantized output against pl_model_quantize; bad directories.
plumb_test(test_convert LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_convert.c)
target_link_libraries(test_convert PRIVATE plumb_synth)
set_property(TEST test_convert APPEND PROPERTY ENVIRONMENT "PLUMB_CLI=$<TARGET_FILE:plumb_cli>")
# SentencePiece-style tokenizer.json and --vocab-only: keys, merge-rank scores, types, the ids,
# refusals, allocation failure, the CLI the parity harness (tokparity.cmake) drives;
# tokenizer.model alone: pieces, scores, types, ids, refusals, a whole checkpoint, the CLI.
plumb_test(test_convert_spm LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_convert_spm.c)
set_property(TEST test_convert_spm APPEND PROPERTY ENVIRONMENT "PLUMB_CLI=$<TARGET_FILE:plumb_cli>")
# The outside oracle: tiny random checkpoints saved by transformers (data/hf/make_tiny_models.py)
# with the logits PyTorch computed; plumb's logits on the conversion must match them.
foreach(m llama-bf16:1e-3 qwen3:1e-5)
  string(REPLACE ":" ";" mb ${m})
  list(GET mb 0 name)
  list(GET mb 1 bound)
  add_test(NAME convert_matches_transformers_${name}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/data/hf/check_oracle.sh ${name}
            $<TARGET_FILE:plumb_cli> $<TARGET_FILE:plumb_logits_convert>
            ${CMAKE_CURRENT_BINARY_DIR}/hf-oracle ${bound})
  set_tests_properties(convert_matches_transformers_${name} PROPERTIES LABELS "unit;conformance"
    TIMEOUT 120 ENVIRONMENT_MODIFICATION "PLUMB_KERNELS=unset:;PLUMB_THREADS=unset:")
endforeach()
# The demo model against PyTorch and the tokenizers library (test_oracle.c says the bounds):
# converted from models/plumb-en-8m-hf to F32, Q8_0 and Q4_K_M in the test itself.
plumb_test(test_oracle LABELS unit conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_oracle.c)
set_property(TEST test_oracle APPEND PROPERTY ENVIRONMENT
  "PLUMB_ORACLE_DIR=${CMAKE_CURRENT_SOURCE_DIR}/oracle"
  "PLUMB_ORACLE_HF=${PROJECT_SOURCE_DIR}/models/plumb-en-8m-hf"
  "PLUMB_TOK_HF=${CMAKE_CURRENT_SOURCE_DIR}/data/hf")
# tokenizer.model (SentencePiece's protobuf): the wire reader on hostile bytes, what is refused by
# name, and parity with sentencepiece 0.2.2's own ids on the fixtures of data/spm.
plumb_test(test_spm_model LABELS unit conformance quick
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_spm_model.c)
