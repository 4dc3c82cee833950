# The benchmarks as a library (bench/ts_bench.h): statistics, labels, sizes,
# bus bandwidth factors, and a small in-process collective benchmark.
add_executable(test_bench bench/test_bench.c)
target_include_directories(test_bench PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_bench PRIVATE ts_bench ts_common)
add_test(NAME bench.library COMMAND test_bench)
set_tests_properties(bench.library PROPERTIES LABELS unit TIMEOUT 60)
