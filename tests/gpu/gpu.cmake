# gpu/: the device layer on a real GPU (label gpu; scripts/gpu-check.sh runs
# it). Without a device, or in a build without CUDA, it skips (77) naming
# why: on the machines without a GPU that is every run.
ts_unit_test(test_gpu_device)
target_link_libraries(test_gpu_device PRIVATE ts_gpu ts_codegen ts_fusion m)
target_include_directories(test_gpu_device PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../fusion)
set_tests_properties(test_gpu_device PROPERTIES LABELS "unit;gpu" TIMEOUT 120 SKIP_RETURN_CODE 77)
