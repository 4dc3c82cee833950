# kernels/: the runtime's kernels. One test per scenario of test_kernels.c
# (the interpreter's goldens in tests/interp/ exercise the oracle's copy; the
# runtime tests in tests/runtime/ compare these kernels with it).
add_executable(test_kernels kernels/test_kernels.c)
target_link_libraries(test_kernels PRIVATE ts_kernels ts_interp ts_hlo ts_common)
foreach(s table literal dot minmax_reduce)
  add_test(NAME kernels.${s} COMMAND test_kernels ${s})
  set_tests_properties(kernels.${s} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
# The dot on BLAS for every layout it folds into gemm's arguments or packs,
# against the dot's definition computed in the test (one test per shape).
add_executable(test_dot_blas kernels/test_dot_blas.c)
target_link_libraries(test_dot_blas PRIVATE ts_kernels ts_hlo ts_common)
foreach(s plain lhs_contracting_first rhs_transposed both_transposed batched batch_inside attention attention_context
        attention_wide attention_context_t f64_attention_wide
        two_contracting contracting_reversed interleaved unit_dims vector_matrix outer f32_long_k bf16 bf16_out
        bf16_long_k bf16_f32 f16 f64_transposed c64_batch_inside)
  add_test(NAME kernels.dot_blas.${s} COMMAND test_dot_blas ${s})
  set_tests_properties(kernels.dot_blas.${s} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
# kernels/blas.c: cpuid features -> OpenBLAS core type, the re-execution plan
# and its end, the start-up sgemm check against injected wrong gemms.
ts_unit_test(test_blas CASES mapping chain plan_start plan_fallback check check_openblas check_chosen)
target_link_libraries(test_blas PRIVATE ts_kernels)
# The core type check wants the one Tessera picks: a user's OPENBLAS_CORETYPE
# in the shell running ctest (honoured by design: cli.blas_user) is not it.
foreach(t test_blas test_blas.mapping test_blas.chain test_blas.plan_start test_blas.plan_fallback test_blas.check
        test_blas.check_openblas test_blas.check_chosen)
  set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT_MODIFICATION OPENBLAS_CORETYPE=unset:)
endforeach()
