# CTestTestfile.cmake — lets `ctest` run from the repository root after `make`:
# it delegates to the build tree in build/ (override: PLUMB_BUILD_DIR=dir ctest).
if(DEFINED ENV{PLUMB_BUILD_DIR})
  set(plumb_build_dir "$ENV{PLUMB_BUILD_DIR}")
else()
  set(plumb_build_dir "${CMAKE_CURRENT_LIST_DIR}/build")
endif()
if(NOT EXISTS "${plumb_build_dir}/CTestTestfile.cmake")
  message(FATAL_ERROR "plumb: no build tree at ${plumb_build_dir}: run `make` first")
endif()
subdirs("${plumb_build_dir}")
