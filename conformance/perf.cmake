# The statistics of `make perf` (perf/perf_stats.c): bootstrap interval and verdict on fixed data.
plumb_test(test_perf_stats LABELS unit perf-stats
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_perf_stats.c)
target_include_directories(test_perf_stats PRIVATE ${PROJECT_SOURCE_DIR}/perf)
target_link_libraries(test_perf_stats PRIVATE plumb_perf_stats)
