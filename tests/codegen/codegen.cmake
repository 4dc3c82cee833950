# codegen/: the compiled math functions against libm (ULP sweeps), every
# fusion kind's compiled kernel against the interpreter, and tessera run
# --check catching a deliberately wrong kernel.
ts_unit_test(test_codegen_math CASES exp log tanh logistic sqrt rsqrt log1p expm1)
target_link_libraries(test_codegen_math PRIVATE ts_codegen m)
foreach(c test_codegen_math test_codegen_math.exp test_codegen_math.log test_codegen_math.tanh
    test_codegen_math.logistic test_codegen_math.sqrt test_codegen_math.rsqrt test_codegen_math.log1p
    test_codegen_math.expm1)
  set_tests_properties(${c} PROPERTIES TIMEOUT 300)
endforeach()
# Every sweep in one process: minutes at -O0 under ASan (the CI's sanitizer
# run skips heavy; each sweep still runs there as its own test).
set_tests_properties(test_codegen_math PROPERTIES LABELS "unit;heavy")
ts_unit_test(test_codegen_kernels CASES all distinct)
target_link_libraries(test_codegen_kernels PRIVATE ts_codegen ts_fusion ts_interp m)
target_include_directories(test_codegen_kernels PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_LIST_DIR}/../fusion)

set(cg_run sh ${CMAKE_CURRENT_LIST_DIR}/check_codegen_run.sh $<TARGET_FILE:tessera>)
set(chain ${CMAKE_CURRENT_LIST_DIR}/../fusion/chain.hlo)
# compiled kernels (the default) match the interpreter
add_test(NAME codegen.run.check COMMAND ${cg_run} match ${chain})
# a kernel made wrong on purpose (every emitted add scaled by 1.01): --check must fail
add_test(NAME codegen.run.bad_kernel COMMAND ${cg_run} mismatch ${chain})
set_tests_properties(codegen.run.bad_kernel PROPERTIES ENVIRONMENT TESSERA_CODEGEN_PERTURB=add)
# the same knob with --kernels=interp changes nothing: the path is really switched off
add_test(NAME codegen.run.interp COMMAND ${cg_run} match ${chain} --kernels=interp)
set_tests_properties(codegen.run.interp PROPERTIES ENVIRONMENT TESSERA_CODEGEN_PERTURB=add)
# a JIT that cannot start: one warning, the plain kernels, still a match
add_test(NAME codegen.run.no_jit COMMAND ${cg_run} nojit ${chain})
set_tests_properties(codegen.run.no_jit PROPERTIES ENVIRONMENT TESSERA_CODEGEN_NO_JIT=1)
# the examples, compiled, against the interpreter
foreach(ex mlp_sharded mlp_train transformer_train)
  add_test(NAME codegen.run.example.${ex} COMMAND ${cg_run} match ${CMAKE_SOURCE_DIR}/examples/${ex}.hlo --devices 4)
endforeach()
set_tests_properties(codegen.run.check codegen.run.bad_kernel codegen.run.interp codegen.run.no_jit
                     codegen.run.example.mlp_sharded codegen.run.example.mlp_train codegen.run.example.transformer_train
                     PROPERTIES LABELS unit TIMEOUT 300)
