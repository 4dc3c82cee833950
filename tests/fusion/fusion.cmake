# The fusion pass (fusion/): every fusion kind, verified, printed back, and
# computed by the interpreter identically to the unfused module.
ts_unit_test(test_fusion CASES elementwise math transcendental select_compare_convert index_maps slice_concat_iota
             reduce_input no_duplicate_expensive pred_output bf16_mixed bf16_reduce)
target_link_libraries(test_fusion PRIVATE ts_fusion ts_interp)
target_include_directories(test_fusion PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_LIST_DIR})
# tessera opt --stage=fused prints XLA's form.
add_test(NAME fusion.opt_stage COMMAND sh -c "$<TARGET_FILE:tessera> opt --stage=fused ${CMAKE_CURRENT_LIST_DIR}/chain.hlo | grep -q 'fusion(%a, %b), kind=kLoop, calls=%fused_computation'")
set_tests_properties(fusion.opt_stage PROPERTIES LABELS unit TIMEOUT 60)
