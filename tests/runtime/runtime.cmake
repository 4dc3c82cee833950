# Runtime (runtime/): every module runs on the runtime, N devices as N
# threads (or under mpirun), compared with the reference interpreter's
# lockstep run of the same per-device module on the same inputs
# (tests/runtime/test_runtime.c). Hand-written per-device modules in
# tests/runtime/*.hlo (unit), partitioned corpus modules (corpus).
add_executable(test_runtime runtime/test_runtime.c)
target_include_directories(test_runtime PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_runtime PRIVATE ts_codegen ts_fusion ts_runtime ts_partitioner ts_interp ts_coll ts_hlo ts_common Threads::Threads)

set(rt_dir ${CMAKE_CURRENT_SOURCE_DIR}/runtime)
# ts_runtime_test(NAME LABELS TIMEOUT ARGS...)
function(ts_runtime_test name labels timeout)
  add_test(NAME runtime.${name} COMMAND test_runtime ${ARGN})
  set_tests_properties(runtime.${name} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout} SKIP_RETURN_CODE 77)
endfunction()

# --- unit: one device ---
# op by op (--kernels interp): compiled, the chain is one kernel with nothing to reuse
ts_runtime_test(chain_reuse unit 30 --kernels interp --expect-reuse ${rt_dir}/chain_reuse.hlo)
# Compiled, the fused computation never runs: no device memory for its buffers
# (it had 48 KiB of temporaries when every computation was built).
add_test(NAME runtime.compiled_fusion_memory
         COMMAND sh -c "$<TARGET_FILE:tessera> run --compile-only ${rt_dir}/chain_reuse.hlo | grep -q 'temporaries 0 B;'")
set_tests_properties(runtime.compiled_fusion_memory PROPERTIES LABELS unit TIMEOUT 60)
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
# Multislice: 2 slices of 2 devices; an all-reduce over all four runs the
# library's hierarchical algorithm (the trace says so), one within a slice
# stays flat, and the values still match the interpreter.
ts_runtime_test(multislice unit 60 --slices 2 --expect-hier all --expect-flat v ${rt_dir}/coll_all_reduce.hlo)
ts_runtime_test(multislice_loop unit 60 --slices 2 --steps 2 --expect-hier gs ${rt_dir}/coll_in_loop.hlo)
# A device's hook fails before an instruction: every device returns an
# error within seconds (the world is aborted), none hangs.
ts_runtime_test(peer_failure unit 60 --fail-hook 2:pairs ${rt_dir}/coll_all_reduce.hlo)
# --kernels interp: the hook names instruction e, which fusion folds away
ts_runtime_test(peer_failure_async unit 60 --kernels interp --fail-hook 1:e ${rt_dir}/coll_async.hlo)

# --- unit: the emulated cross-slice link (TESSERA_CROSS_SLICE_DELAY_US) ---
# 4 threads as 2 slices, a 200 ms delay, 3 steps; a hook sleeps before `c` to
# stand in for compute. Lower bounds are the knob's guarantees (completion >=
# post + delay, every step); upper bounds, where a loaded machine adds noise,
# have wide margins (100 ms) and apply to the median step.
add_executable(test_xs_delay runtime/test_xs_delay.c)
target_link_libraries(test_xs_delay PRIVATE ts_runtime ts_coll ts_hlo ts_common Threads::Threads)
function(ts_xs_test name)
  add_test(NAME runtime.xs_delay.${name} COMMAND test_xs_delay ${ARGN})
  set_tests_properties(runtime.xs_delay.${name} PROPERTIES LABELS unit TIMEOUT 60)
endfunction()
# program order pays the delay in full
ts_xs_test(sync --delay 200000 --min-wait 190 --min-complete 200 --expect-out 3 ${rt_dir}/xs_sync.hlo)
# started before 300 ms of compute: completes >= 200 ms after its post, but
# the done hardly waits and the post did not block
ts_xs_test(async_hidden --delay 200000 --sleep-before c:300 --min-complete 200 --max-wait 100 --max-post 100
           --expect-out 3 ${rt_dir}/xs_async.hlo)
# the same module with no delay: the wait is not the runtime's own
ts_xs_test(none --max-wait 100 --expect-out 3 ${rt_dir}/xs_sync.hlo)
# inside a slice, or with one slice, nothing is delayed
ts_xs_test(intra_slice --delay 200000 --max-wait 100 --expect-out 1 ${rt_dir}/xs_intra.hlo)
ts_xs_test(one_slice --slices 1 --delay 200000 --max-wait 100 --expect-out 3 ${rt_dir}/xs_sync.hlo)
# an all-gather across slices (hierarchical in the library) is delayed too
ts_xs_test(gather --delay 200000 --min-wait 190 --min-complete 200 --expect-out 2 ${rt_dir}/xs_gather.hlo)
# a permute delays the devices whose pairs cross: 1 -> 2 (one step: in the
# next, 0 and 3 wait for 1 and 2 to post the same permute)
ts_xs_test(permute --steps 1 --delay 200000 --delayed 1,2 --min-wait 190 --min-complete 200 --max-wait 100
           --expect-out 1,1,2,1 ${rt_dir}/xs_permute.hlo)
# two in flight: latencies overlap (both done in well under 2 x 200 ms) ...
ts_xs_test(two_latency --delay 200000 --min-complete 200 --max-wait 300 --expect-out 7 ${rt_dir}/xs_two.hlo)
# ... while bytes share the link: 2 x 2048 B (each slice's half of f32[1024])
# at 1e4 B/s = 2 x 204.8 ms one after the other
ts_xs_test(two_bandwidth --delay 0,0.00001 --min-complete 409.6 --expect-out 7 ${rt_dir}/xs_two.hlo)
ts_xs_test(bad_value --delay abc --expect-error "TESSERA_CROSS_SLICE_DELAY_US='abc': expected L[,BW_GBPS]"
           ${rt_dir}/xs_sync.hlo)
ts_xs_test(bad_bandwidth --delay 5,0 --expect-error "TESSERA_CROSS_SLICE_DELAY_US='5,0'" ${rt_dir}/xs_sync.hlo)
ts_xs_test(negative --delay -1 --expect-error "TESSERA_CROSS_SLICE_DELAY_US='-1'" ${rt_dir}/xs_sync.hlo)

# --- corpus: xla_spmd modules partitioned here, then run on the runtime ---
# One test per case (num_partitions and options from expectations.jsonl).
# Cases tessera check cannot pass (tests/partition/spmd_expected_failures.txt)
# and those needing more than 1 GB here are reported skipped.
set(rt_spmd_dir ${TESSERA_SHARED_DIR}/corpus/xla_spmd)
set(rt_xfail ${CMAKE_CURRENT_SOURCE_DIR}/partition/spmd_expected_failures.txt)
# Seconds in a release build, minutes at -O0 under ASan (skipped there).
set(rt_spmd_heavy 016_conv_with_parallel_dim_and_non_parallel_spatial_dim_partitioned.hlo)
if(EXISTS ${rt_spmd_dir}/expectations.jsonl)
  ts_spmd_expectations(${rt_spmd_dir}/expectations.jsonl) # tests/partition/partition.cmake
  foreach(file ${ts_spmd_files})
    set(flags --partition ${ts_spmd_nparts_${file}} --xfail ${rt_xfail} --max-bytes 1000000000)
    foreach(opt ${ts_spmd_options_${file}})
      list(APPEND flags --popt ${opt})
    endforeach()
    set(labels corpus)
    if(file IN_LIST rt_spmd_heavy)
      set(labels corpus heavy)
    endif()
    ts_runtime_test(spmd.${file} "${labels}" 120 ${flags} ${rt_spmd_dir}/${file})
  endforeach()
else()
  ts_corpus_absent_test(runtime.spmd ${rt_spmd_dir}) # tests/partition/partition.cmake
endif()

# --- corpus: real_hlo: sharded modules partitioned, per-device ones at their
# device count, the rest on one device; unknown custom-calls fail clearly ---
set(rt_real ${TESSERA_SHARED_DIR}/corpus/real_hlo)
if(EXISTS ${rt_real})
  set(rt_real_special
      tensorflow__tensorflow__gpu_hlo_collective_cse.hlo tensorflow__tensorflow__u4_all_gather_1x8.hlo
      tensorflow__tensorflow__transformer_engine_softmax.hlo unidentified__unidentified__jit__fun_sdy_shard_map.hlo
      tensorflow__tensorflow__spmd_8_devices.hlo tensorflow__tensorflow__sharded_2_devices.hlo
      tensorflow__tensorflow__must_alias_with_sharding.hlo tensorflow__tensorflow__sharded_computation.hlo)
  file(GLOB rt_real_files RELATIVE ${rt_real} ${rt_real}/*.hlo ${rt_real}/*.txt)
  foreach(f ${rt_real_files})
    if(NOT f IN_LIST rt_real_special)
      ts_runtime_test(real.${f} corpus 120 --max-bytes 1000000000 ${rt_real}/${f})
    endif()
  endforeach()
  ts_runtime_test(real.tensorflow__tensorflow__gpu_hlo_collective_cse.hlo corpus 120 --replica-count 8
                  ${rt_real}/tensorflow__tensorflow__gpu_hlo_collective_cse.hlo)
  ts_runtime_test(real.tensorflow__tensorflow__u4_all_gather_1x8.hlo corpus 120 --replica-count 8
                  ${rt_real}/tensorflow__tensorflow__u4_all_gather_1x8.hlo)
  foreach(pair tensorflow__tensorflow__spmd_8_devices.hlo:8 tensorflow__tensorflow__sharded_2_devices.hlo:2
          tensorflow__tensorflow__must_alias_with_sharding.hlo:2 tensorflow__tensorflow__spmd.hlo:2
          tensorflow__tensorflow__sharded_16_devices.hlo:16)
    string(REPLACE ":" ";" pair ${pair})
    list(GET pair 0 f)
    list(GET pair 1 n)
    ts_runtime_test(real.partitioned.${f} corpus 120 --partition ${n} --steps 2 ${rt_real}/${f})
  endforeach()
  ts_runtime_test(real.partitioned.tensorflow__tensorflow__sharded_computation.hlo "corpus;heavy" 300 --partition 2
                  --max-bytes 1000000000 ${rt_real}/tensorflow__tensorflow__sharded_computation.hlo)
  ts_runtime_test(real.tensorflow__tensorflow__transformer_engine_softmax.hlo corpus 60
                  --expect-error "custom-call target \"te_scaled_softmax_forward_ffi\" calls a GPU/vendor library"
                  ${rt_real}/tensorflow__tensorflow__transformer_engine_softmax.hlo)
  ts_runtime_test(real.unidentified__unidentified__jit__fun_sdy_shard_map.hlo corpus 60
                  --expect-error "custom-call target \"ascend.matmul\" has no meaning"
                  ${rt_real}/unidentified__unidentified__jit__fun_sdy_shard_map.hlo)
endif()

# --- mpi: the same comparison with one device per rank under mpirun ---
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  add_test(NAME runtime.mpi.np4 COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/coll/mpirun.sh 4 $<TARGET_FILE:test_runtime>
                                        --mpi --steps 2 ${rt_dir}/coll_in_loop.hlo)
  set_tests_properties(runtime.mpi.np4 PROPERTIES LABELS mpi TIMEOUT 120 SKIP_RETURN_CODE 77)
  add_test(NAME runtime.mpi.np4.collectives
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/coll/mpirun.sh 4 $<TARGET_FILE:test_runtime> --mpi
                   ${rt_dir}/coll_async.hlo)
  set_tests_properties(runtime.mpi.np4.collectives PROPERTIES LABELS mpi TIMEOUT 120 SKIP_RETURN_CODE 77)
  if(TESSERA_SANITIZE)
    # Open MPI's own allocations outlive MPI_Finalize: not ours to report
    set_tests_properties(runtime.mpi.np4 runtime.mpi.np4.collectives PROPERTIES ENVIRONMENT ASAN_OPTIONS=detect_leaks=0)
  endif()
endif()
