# Runtime (runtime/): every module runs on the runtime, N devices as N
# threads (or under mpirun), compared with the reference interpreter's
# lockstep run of the same per-device module on the same inputs
# (tests/runtime/test_runtime.c). Hand-written per-device modules in
# tests/runtime/*.hlo (unit), partitioned corpus modules (corpus).
add_executable(test_runtime runtime/test_runtime.c)
target_include_directories(test_runtime PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_runtime PRIVATE ts_runtime ts_partitioner ts_interp ts_coll ts_hlo ts_common Threads::Threads)

set(rt_dir ${CMAKE_CURRENT_SOURCE_DIR}/runtime)
# ts_runtime_test(NAME LABELS TIMEOUT ARGS...)
function(ts_runtime_test name labels timeout)
  add_test(NAME runtime.${name} COMMAND test_runtime ${ARGN})
  set_tests_properties(runtime.${name} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout} SKIP_RETURN_CODE 77)
endfunction()

# --- unit: one device ---
ts_runtime_test(chain_reuse unit 30 --expect-reuse ${rt_dir}/chain_reuse.hlo)
ts_runtime_test(reduce_sort unit 30 ${rt_dir}/reduce_sort.hlo)
ts_runtime_test(control_flow unit 30 ${rt_dir}/control_flow.hlo)
ts_runtime_test(control_flow.seed7 unit 30 --seed 7 ${rt_dir}/control_flow.hlo)
ts_runtime_test(alias_inplace unit 30 --steps 3 --expect-inplace 0 --expect-copy 1 ${rt_dir}/alias_inplace.hlo)
ts_runtime_test(alias_swap unit 30 --steps 3 ${rt_dir}/alias_swap.hlo)
ts_runtime_test(bad_custom_call unit 30 --expect-error "custom-call target \"foo.bar\" has no meaning in the runtime"
                ${rt_dir}/bad_custom_call.hlo)
ts_runtime_test(bad_opcode unit 30 --expect-error "opcode infeed has no kernel in the runtime" ${rt_dir}/bad_opcode.hlo)

# --- unit: collectives on 4 threads ---
foreach(m coll_all_reduce coll_gather_scatter coll_all_to_all coll_permute_bcast coll_async coll_replicas)
  ts_runtime_test(${m} unit 60 ${rt_dir}/${m}.hlo)
endforeach()
ts_runtime_test(coll_in_loop unit 60 --steps 3 ${rt_dir}/coll_in_loop.hlo)
# Multislice: 2 slices of 2 devices; all-reduce runs in three phases.
ts_runtime_test(multislice unit 60 --slices 2 --expect-hier ${rt_dir}/coll_all_reduce.hlo)
ts_runtime_test(multislice_loop unit 60 --slices 2 --steps 2 --expect-hier ${rt_dir}/coll_in_loop.hlo)
# A device's hook fails before an instruction: every device returns an
# error within seconds (the world is aborted), none hangs.
ts_runtime_test(peer_failure unit 60 --fail-hook 2:pairs ${rt_dir}/coll_all_reduce.hlo)
ts_runtime_test(peer_failure_async unit 60 --fail-hook 1:e ${rt_dir}/coll_async.hlo)
