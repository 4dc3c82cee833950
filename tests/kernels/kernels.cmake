# kernels/: the runtime's kernels. One test per scenario of test_kernels.c
# (the interpreter's goldens in tests/interp/ exercise the oracle's copy; the
# runtime tests in tests/runtime/ compare these kernels with it).
add_executable(test_kernels kernels/test_kernels.c)
target_link_libraries(test_kernels PRIVATE ts_kernels ts_interp ts_hlo ts_common)
foreach(s table literal dot)
  add_test(NAME kernels.${s} COMMAND test_kernels ${s})
  set_tests_properties(kernels.${s} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
