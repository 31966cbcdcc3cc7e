# Tokenizer and chat-template tests (issue 5). The fixtures build real-format vocabularies
# with synth/demo_vocab.c (plumb_synth); the tests reach the tokenizer through
# engine/tokenizer/tokenizer.h.
foreach(t test_tokenizer test_tokenizer_hostile test_tokenizer_props test_tokenizer_pretok test_chat
    test_tokenizer_api)
  plumb_test(${t} LABELS unit conformance SOURCES ${t}.c tokfix.c)
  target_link_libraries(${t} PRIVATE plumb_synth)
endforeach()
target_compile_definitions(test_chat PRIVATE PLUMB_JINJA_CORPUS="${CMAKE_CURRENT_SOURCE_DIR}/jinja")
# plumb convert names a tokenizer.json's pre-tokenizer by content (features/pretok_id.c), on
# the pre_tokenizer sections of the HF oracle fixtures (data/tokparity/pretok; issue 31).
plumb_test(test_pretok_identify LABELS unit conformance SOURCES test_pretok_identify.c)
