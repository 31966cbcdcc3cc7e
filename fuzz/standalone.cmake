# standalone.cmake — passed as -DCMAKE_PROJECT_INCLUDE=<repo>/fuzz/standalone.cmake by the
# Makefile and campaign.sh, so the fuzz targets exist even where the top-level CMakeLists.txt
# does not add_subdirectory(fuzz); a no-op when it does (fuzz.cmake has an include guard).
include_guard(GLOBAL)
set(PLUMB_FUZZ_CMAKE ${CMAKE_CURRENT_LIST_DIR}/fuzz.cmake)
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL include ${PLUMB_FUZZ_CMAKE})
