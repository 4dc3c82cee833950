# The compile driver (pipeline/): its stage table, a walk to the program, bad input.
add_executable(test_pipeline pipeline/test_pipeline.c)
target_include_directories(test_pipeline PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_pipeline PRIVATE ts_pipeline ts_common)
add_test(NAME pipeline.stages COMMAND test_pipeline ${CMAKE_SOURCE_DIR}/examples/mlp_sharded.hlo)
set_tests_properties(pipeline.stages PROPERTIES LABELS unit TIMEOUT 60)
