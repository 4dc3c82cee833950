# codegen/: the compiled math functions against libm (ULP sweeps), every
# fusion kind's compiled kernel against the interpreter, tessera run
# --check catching a deliberately wrong kernel, and the kernel cache. No
# test uses the user's ~/.cache: the C programs that only compile run with
# TESSERA_CACHE_DIR=off (tests/CMakeLists.txt's default), the scripts make
# cache folders of their own.
set(cg_math_cases exp log tanh logistic sqrt rsqrt log1p expm1 erf sin cos pow)
ts_unit_test(test_codegen_math CASES ${cg_math_cases})
target_link_libraries(test_codegen_math PRIVATE ts_codegen m)
# all twelve sweeps: about 25 s of CPU, but minutes of wall time on a loaded host
set_tests_properties(test_codegen_math PROPERTIES TIMEOUT 600)
foreach(c ${cg_math_cases})
  set_tests_properties(test_codegen_math.${c} PROPERTIES TIMEOUT 300)
endforeach()
# Every sweep in one process: minutes at -O0 under ASan (the CI's sanitizer
# run skips heavy; each sweep still runs there as its own test).
set_tests_properties(test_codegen_math PROPERTIES LABELS "unit;heavy")
ts_unit_test(test_codegen_kernels CASES all distinct s32_ops s32_compare_convert s32_layout label
             reduce_row_exp reduce_column reduce_full reduce_rank3 reduce_max_nan reduce_s32 reduce_init_param
             reduce_keys reduce_rejects half_ops half_chain half_convert half_index half_mixed half_reduce half_math
             half_keys half_rejects)
target_link_libraries(test_codegen_kernels PRIVATE ts_codegen ts_fusion ts_interp m)
# codegen_internal.h (cg_fusion_compiles) and the LLVM headers it includes
target_include_directories(test_codegen_kernels SYSTEM PRIVATE $<TARGET_PROPERTY:ts_codegen,INCLUDE_DIRECTORIES>)
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
# erf, power, sine and cosine fused and compiled, against the interpreter; each
# made wrong on purpose must then fail --check (so each really ran compiled)
set(trans ${CMAKE_CURRENT_LIST_DIR}/transcendental.hlo)
add_test(NAME codegen.run.transcendental COMMAND ${cg_run} match ${trans})
set(cg_run_tests codegen.run.transcendental)
foreach(op erf power sine cosine)
  add_test(NAME codegen.run.transcendental.bad_${op} COMMAND ${cg_run} mismatch ${trans})
  set_tests_properties(codegen.run.transcendental.bad_${op} PROPERTIES ENVIRONMENT TESSERA_CODEGEN_PERTURB=${op})
  list(APPEND cg_run_tests codegen.run.transcendental.bad_${op})
endforeach()
# bf16 and f16 fusions (a loop fusion ending in f16, a bf16 row sum) compiled, against the
# interpreter; each op made wrong on purpose must then fail --check (so each ran compiled)
set(bf16 ${CMAKE_CURRENT_LIST_DIR}/bf16.hlo)
add_test(NAME codegen.run.bf16 COMMAND ${cg_run} match ${bf16})
list(APPEND cg_run_tests codegen.run.bf16)
foreach(op multiply exponential reduce)
  add_test(NAME codegen.run.bf16.bad_${op} COMMAND ${cg_run} mismatch ${bf16})
  set_tests_properties(codegen.run.bf16.bad_${op} PROPERTIES ENVIRONMENT TESSERA_CODEGEN_PERTURB=${op})
  list(APPEND cg_run_tests codegen.run.bf16.bad_${op})
endforeach()
# the examples, compiled, against the interpreter
foreach(ex mlp_sharded mlp_train transformer_train)
  add_test(NAME codegen.run.example.${ex} COMMAND ${cg_run} match ${CMAKE_SOURCE_DIR}/examples/${ex}.hlo --devices 4)
endforeach()
set_tests_properties(codegen.run.check codegen.run.bad_kernel codegen.run.interp codegen.run.no_jit
                     codegen.run.example.mlp_sharded codegen.run.example.mlp_train codegen.run.example.transformer_train
                     ${cg_run_tests} PROPERTIES LABELS unit TIMEOUT 300)

# PTX (codegen/nvptx.c), checked without a GPU: ptxas -arch=sm_90 assembles
# the kernels of every fusion kind and of the examples' fused per-device
# programs; skipped (77) where ptxas is not found.
find_program(TS_PTXAS ptxas HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
add_executable(test_codegen_ptx ${CMAKE_CURRENT_LIST_DIR}/test_codegen_ptx.c)
target_link_libraries(test_codegen_ptx PRIVATE ts_codegen ts_fusion ts_hlo ts_common)
target_include_directories(test_codegen_ptx PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_LIST_DIR}/../fusion)
add_test(NAME codegen.ptx.fusion_kinds COMMAND test_codegen_ptx ${TS_PTXAS})
foreach(ex mlp_sharded mlp_train transformer_train)
  add_test(NAME codegen.ptx.example.${ex}
           COMMAND sh -c "f=$(mktemp) && $<TARGET_FILE:tessera> opt --stage=fused -o $f ${CMAKE_SOURCE_DIR}/examples/${ex}.hlo && $<TARGET_FILE:test_codegen_ptx> ${TS_PTXAS} $f; rc=$?; rm -f $f; exit $rc")
endforeach()
set_tests_properties(codegen.ptx.fusion_kinds codegen.ptx.example.mlp_sharded codegen.ptx.example.mlp_train
                     codegen.ptx.example.transformer_train PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)

# The kernel cache (codegen/cache.c): through the API (in-process reuse,
# another process's entry, with fusion kernels or only the entry's loop, an
# entry whose object is not the module's, nothing to compile, no_cache, and
# eviction: least recently used first, a hit as a use, foreign files kept, a
# store over TESSERA_CACHE_MAX_MB, its parsing), then through tessera run
# (cold then warm, corrupt entries, a knob in the key, unwritable folders,
# --no-kernel-cache and the default folders, concurrent writers). Each makes
# its own cache folders under TMPDIR.
ts_unit_test(test_codegen_cache CASES reuse disk bad_object entry_only nothing no_cache evict_lru hit_refreshes
             foreign store_evicts bad_limit)
target_link_libraries(test_codegen_cache PRIVATE ts_codegen)
# codegen_internal.h (cg_cache_store makes a hand-made entry) and the LLVM headers it includes
target_include_directories(test_codegen_cache SYSTEM PRIVATE $<TARGET_PROPERTY:ts_codegen,INCLUDE_DIRECTORIES>)
set(cg_cache_run sh ${CMAKE_CURRENT_LIST_DIR}/check_codegen_cache.sh $<TARGET_FILE:tessera>)
set(cg_cache_tests)
foreach(c hit truncate flip knob unwritable off concurrent diskfull)
  add_test(NAME codegen.cache.${c} COMMAND ${cg_cache_run} ${c} ${chain})
  list(APPEND cg_cache_tests codegen.cache.${c})
endforeach()
set_tests_properties(${cg_cache_tests} PROPERTIES LABELS unit TIMEOUT 300)
set_tests_properties(codegen.cache.diskfull PROPERTIES SKIP_RETURN_CODE 77)
