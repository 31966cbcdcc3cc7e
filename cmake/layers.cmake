# layers.cmake — the layer check (cmake/check_layers.sh) in ctest: the tree's includes, the
# library's calls (its objects), and fixtures with a planted wrong-way dependency or circle,
# so the check is seen to fail. Included by the top-level CMakeLists.txt when tests are built.
add_test(NAME layers_includes_point_down_without_circles
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh includes ${PROJECT_SOURCE_DIR})
add_test(NAME layers_library_calls_point_down_without_circles
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh symbols ${PROJECT_SOURCE_DIR}
          "$<TARGET_OBJECTS:plumb>" "$<TARGET_OBJECTS:plumb_kernels>"
  COMMAND_EXPAND_LISTS)
set(PLUMB_LAYER_FIXTURE_TESTS
  layers_check_accepts_a_layered_tree
  layers_check_rejects_a_wrong_way_include
  layers_check_rejects_kernels_including_the_engine
  layers_check_rejects_kernels_including_plumb_h
  layers_check_rejects_tests_that_use_tools
  layers_check_rejects_an_include_circle
  layers_check_rejects_a_wrong_way_call
  layers_check_rejects_a_call_circle
  layers_check_rejects_calling_a_kernel_by_name)
foreach(t ${PLUMB_LAYER_FIXTURE_TESTS})
  add_test(NAME ${t} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_layers_test.sh ${t}
                             ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh ${CMAKE_C_COMPILER})
endforeach()
# plumb.h (installed alone) and kernels/pl_base.h hold the same guarded block of shared types.
add_test(NAME layers_public_header_mirrors_kernel_base_types
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_base_types.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(layers_public_header_mirrors_kernel_base_types
  PROPERTIES LABELS unit TIMEOUT 60)
set_tests_properties(layers_includes_point_down_without_circles
  layers_library_calls_point_down_without_circles ${PLUMB_LAYER_FIXTURE_TESTS}
  PROPERTIES LABELS unit TIMEOUT 60)
