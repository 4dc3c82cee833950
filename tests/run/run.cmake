# tessera run, the main job: the MLP training example in one process and
# under mpirun (loss falls, final parameters match the reference), multislice,
# --compile-only on MaxText, every sharded real_hlo module under mpirun with
# --check, and the usage errors.
set(job sh ${CMAKE_CURRENT_SOURCE_DIR}/run/check_job.sh)
set(mlp ${CMAKE_SOURCE_DIR}/examples/mlp_train.hlo)
function(ts_job_test name labels want np)
  add_test(NAME ${name} COMMAND ${job} ${want} ${np} $<TARGET_FILE:tessera> ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT 600)
  # Open MPI's own allocations outlive MPI_Finalize: LeakSanitizer would
  # blame every mpirun launch in a sanitizer build.
  if(TESSERA_SANITIZE AND NOT np EQUAL 0)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT ASAN_OPTIONS=detect_leaks=0)
  endif()
endfunction()

ts_job_test(run.mlp.devices4 unit ok,falls,match 0 --devices 4 --steps 20 --loop --check ${mlp})
ts_job_test(run.mlp.devices4.slices2 unit ok,match,trace=hierarchical 0 --devices 4 --slices 2 --steps 3 --loop
            --check --trace ${CMAKE_CURRENT_BINARY_DIR}/run_mlp_slices2.json ${mlp})
ts_job_test(run.mlp.devices4.no_loop unit ok,match 0 --devices 4 --steps 3 --check ${mlp})
ts_job_test(run.mlp.wrong_devices unit "rc=2:the module runs on 4 devices (num_partitions=4 x replica_count=1) but the job has 2" 0
            --devices 2 ${mlp})
ts_job_test(run.mlp.compile_only unit ok 0 --compile-only ${mlp})
# Manual-region boundaries: partitioned first, then run (the runtime's
# question "does every op have a meaning" must not stop them).
ts_job_test(run.manual_region.devices4 unit ok,match 0 --devices 4 --check
            ${CMAKE_CURRENT_SOURCE_DIR}/partition/manual_region_reduce_4.hlo)

find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  ts_job_test(run.mpi.mlp.np4 mpi ok,falls,match 4 --steps 20 --loop --check ${mlp})
  ts_job_test(run.mpi.mlp.np4.slices2 mpi ok,falls,match,trace=hierarchical 4 --slices 2 --steps 20 --loop --check
              --trace ${CMAKE_CURRENT_BINARY_DIR}/run_mpi_mlp_slices2.json ${mlp})
  ts_job_test(run.mpi.mlp.wrong_np mpi "rc=2:but the job has 2" 2 ${mlp})
endif()

set(real_hlo ${TESSERA_SHARED_DIR}/corpus/real_hlo)
set(maxtext ${TESSERA_SHARED_DIR}/corpus/real_hlo_large/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo)
if(EXISTS ${maxtext})
  ts_job_test(run.compile_only.maxtext corpus ok 0 --compile-only --num-partitions 8 ${maxtext})
endif()
if(EXISTS ${real_hlo} AND MPI_C_FOUND)
  # Every sharded module, at its partition count, checked against the reference.
  foreach(case
      "tensorflow__tensorflow__sharded_2_devices.hlo 2"
      "tensorflow__tensorflow__spmd.hlo 2"
      "tensorflow__tensorflow__spmd_8_devices.hlo 8"
      "tensorflow__tensorflow__sharded_16_devices.hlo 16"
      "tensorflow__tensorflow__sharded_computation.hlo 2"
      "tensorflow__tensorflow__must_alias_with_sharding.hlo 1"
      "tensorflow__tensorflow__dynamic_shaped_arguments.hlo 1")
    separate_arguments(case)
    list(GET case 0 file)
    list(GET case 1 np)
    # sharded_computation runs seconds in a release build, minutes under ASan.
    set(labels "corpus;mpi")
    if(file STREQUAL "tensorflow__tensorflow__sharded_computation.hlo")
      set(labels "corpus;mpi;heavy")
    endif()
    ts_job_test(run.mpi.${file} "${labels}" ok,match ${np} --check ${real_hlo}/${file})
  endforeach()
  # A custom-call with no defined meaning fails clearly on every rank.
  ts_job_test(run.mpi.unidentified__unidentified__jit__fun_sdy_shard_map.hlo "corpus;mpi"
              "rc=2:custom-call target \"ascend.matmul\" has no meaning" 8 --check
              ${real_hlo}/unidentified__unidentified__jit__fun_sdy_shard_map.hlo)
endif()

# XLA's multi-host runner flags: two processes, a TCP rendezvous on loopback.
add_test(NAME run.tcp.mlp2 COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/run/check_tcp.sh $<TARGET_FILE:tessera>
                                   ${CMAKE_SOURCE_DIR}/examples/mlp_train_2.hlo --steps 3 --loop)
set_tests_properties(run.tcp.mlp2 PROPERTIES LABELS unit TIMEOUT 300)
