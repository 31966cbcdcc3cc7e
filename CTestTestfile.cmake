# CTestTestfile.cmake — lets `ctest` run from the repository root after `make`:
# it delegates to the build tree in build/ (override: PLUMB_BUILD_DIR=dir ctest; a relative
# dir is taken from the repository root). tools/tests/ctest_root_test.sh pins this.
# ctest reads this file with the root as its working directory but with
# CMAKE_CURRENT_LIST_DIR and CMAKE_CURRENT_SOURCE_DIR empty (3.25): a relative glob resolves
# against the working directory and yields this file's full path, hence the root.
set(plumb_root "${CMAKE_CURRENT_LIST_DIR}")
if(plumb_root STREQUAL "")
  file(GLOB plumb_self "CTestTestfile.cmake")
  get_filename_component(plumb_root "${plumb_self}" DIRECTORY)
endif()
if(NOT "$ENV{PLUMB_BUILD_DIR}" STREQUAL "")
  set(plumb_build_dir "$ENV{PLUMB_BUILD_DIR}")
  if(NOT IS_ABSOLUTE "${plumb_build_dir}")
    set(plumb_build_dir "${plumb_root}/${plumb_build_dir}")
  endif()
else()
  set(plumb_build_dir "${plumb_root}/build")
endif()
if(plumb_root STREQUAL "" OR NOT EXISTS "${plumb_build_dir}/CTestTestfile.cmake")
  message(FATAL_ERROR "plumb: no build tree at ${plumb_build_dir}: run `make` first")
endif()
subdirs("${plumb_build_dir}")
