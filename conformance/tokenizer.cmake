# Tokenizer and chat-template tests (issue 5). The fixtures build real-format vocabularies
# with tools/demo_vocab.c; the tests reach the tokenizer through engine/tokenizer/tokenizer.h.
set(PLUMB_TOK_FIXTURES ${CMAKE_CURRENT_SOURCE_DIR}/tokfix.c ${PROJECT_SOURCE_DIR}/tools/demo_vocab.c)
foreach(t test_tokenizer test_tokenizer_hostile test_tokenizer_props test_tokenizer_pretok)
  plumb_test(${t} LABELS unit conformance SOURCES ${t}.c ${PLUMB_TOK_FIXTURES})
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/tools)
endforeach()
plumb_test(test_chat LABELS unit conformance SOURCES test_chat.c ${PLUMB_TOK_FIXTURES})
target_include_directories(test_chat PRIVATE ${PROJECT_SOURCE_DIR}/tools)
plumb_test(test_tokenizer_api LABELS unit conformance SOURCES test_tokenizer_api.c
  ${PLUMB_TOK_FIXTURES})
target_include_directories(test_tokenizer_api PRIVATE ${PROJECT_SOURCE_DIR}/tools)
