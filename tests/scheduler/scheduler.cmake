# The latency-hiding scheduler (scheduler/): scenarios on hand-written
# modules, the S-curve fit, the CLI, scheduled partitioned modules run
# against their synchronous selves, and the MaxText training step.
add_executable(test_sched scheduler/test_sched.c)
target_link_libraries(test_sched PRIVATE ts_scheduler ts_interp ts_hlo ts_common m)
foreach(t overlap exposed overlap_limit memory_limit while deterministic forms)
  add_test(NAME sched.${t} COMMAND test_sched ${t})
  set_tests_properties(sched.${t} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

# Partitioned modules, scheduled: same outputs as unscheduled, bit for bit,
# on N simulated devices (test_sched_check.c). Hand-written partition tests
# (always present) and a few corpus modules (skipped without ../shared).
add_executable(test_sched_check scheduler/test_sched_check.c)
target_link_libraries(test_sched_check PRIVATE ts_scheduler ts_partitioner ts_interp ts_hlo ts_common)
foreach(sched_case all_to_all_reshard:4 dot_contracting:4 reduce_scatter:4 reduce_partial:4 slice_halo:4
          conv_halo_stride:4 gather_scatter:2)
  string(REPLACE ":" ";" sched_parts ${sched_case})
  list(GET sched_parts 0 sched_name)
  list(GET sched_parts 1 sched_n)
  add_test(NAME sched.check.${sched_name}
           COMMAND test_sched_check ${CMAKE_CURRENT_SOURCE_DIR}/partition/${sched_name}.hlo ${sched_n})
  set_tests_properties(sched.check.${sched_name} PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()
add_test(NAME sched.check.mlp_sharded COMMAND test_sched_check ${CMAKE_SOURCE_DIR}/examples/mlp_sharded.hlo 4)
set_tests_properties(sched.check.mlp_sharded PROPERTIES LABELS unit TIMEOUT 120)
foreach(sched_case real_hlo/tensorflow__tensorflow__spmd_8_devices.hlo:8
          real_hlo/tensorflow__tensorflow__gpu_hlo_collective_topology.hlo:8
          xla_spmd/037_merged_pad_then_slice_shift_right.hlo:4
          xla_spmd/028_concatenate_along_both_dimensions.hlo:4
          xla_spmd/098_einsum_non_contracting_dim_partition_on_two_dims.hlo:8
          xla_spmd/104_dot_2d_partitioned_batch_and_reshard.hlo:4 xla_spmd/139_uneven_pad_all_to_all_reshard.hlo:8
          xla_spmd/142_subgroup_manual_all_reduce.hlo:4)
  string(REPLACE ":" ";" sched_parts ${sched_case})
  list(GET sched_parts 0 sched_file)
  list(GET sched_parts 1 sched_n)
  get_filename_component(sched_name ${sched_file} NAME_WE)
  add_test(NAME sched.check.corpus.${sched_name}
           COMMAND test_sched_check ${TESSERA_SHARED_DIR}/corpus/${sched_file} ${sched_n})
  set_tests_properties(sched.check.corpus.${sched_name} PROPERTIES LABELS corpus TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()

# The S-curve fit (library), and the CLI.
add_executable(test_scurve_fit scheduler/test_scurve_fit.c)
target_link_libraries(test_scurve_fit PRIVATE ts_costmodel ts_common m)
add_test(NAME sched.scurve_fit COMMAND test_scurve_fit)
set_tests_properties(sched.scurve_fit PROPERTIES LABELS unit TIMEOUT 60)
set(sched_cli ${CMAKE_CURRENT_SOURCE_DIR}/scheduler/check_sched_cli.sh)
add_test(NAME sched.cli.stage COMMAND sh ${sched_cli} stage $<TARGET_FILE:tessera> ${CMAKE_SOURCE_DIR}/examples/mlp_sharded.hlo)
add_test(NAME sched.cli.errors COMMAND sh ${sched_cli} errors $<TARGET_FILE:tessera> ${CMAKE_SOURCE_DIR}/examples/mlp_sharded.hlo)
add_test(NAME sched.cli.fit COMMAND sh ${sched_cli} fit $<TARGET_FILE:tessera> $<TARGET_FILE:test_scurve_fit>)
set_tests_properties(sched.cli.stage sched.cli.errors sched.cli.fit PROPERTIES LABELS unit TIMEOUT 60)
# The MaxText training step for 8 devices under the H100 preset.
add_test(NAME sched.maxtext
         COMMAND sh ${sched_cli} maxtext $<TARGET_FILE:tessera>
                 ${TESSERA_SHARED_DIR}/corpus/real_hlo_large/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo)
set_tests_properties(sched.maxtext PROPERTIES LABELS corpus TIMEOUT 600 SKIP_RETURN_CODE 77)
# Under the default memory target the scheduled program's peak (buffer
# assignment) is not above program order's: MaxText (its tuple-valued calls
# in the layer loop made the scheduler's model and the runtime disagree,
# 27.57 vs 27.45 GiB) and the examples.
add_test(NAME sched.peak.maxtext
         COMMAND sh ${sched_cli} peak $<TARGET_FILE:tessera>
                 ${TESSERA_SHARED_DIR}/corpus/real_hlo_large/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo 8)
add_test(NAME sched.peak.maxtext_h100
         COMMAND sh ${sched_cli} peak $<TARGET_FILE:tessera>
                 ${TESSERA_SHARED_DIR}/corpus/real_hlo_large/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo 8 h100)
set_tests_properties(sched.peak.maxtext sched.peak.maxtext_h100 PROPERTIES LABELS corpus TIMEOUT 600 SKIP_RETURN_CODE 77)
foreach(sched_case mlp_sharded:4 mlp_train_2:2 mlp_train_8:8 transformer_train_8:8)
  string(REPLACE ":" ";" sched_parts ${sched_case})
  list(GET sched_parts 0 sched_name)
  list(GET sched_parts 1 sched_n)
  add_test(NAME sched.peak.${sched_name}
           COMMAND sh ${sched_cli} peak $<TARGET_FILE:tessera> ${CMAKE_SOURCE_DIR}/examples/${sched_name}.hlo ${sched_n})
  set_tests_properties(sched.peak.${sched_name} PROPERTIES LABELS unit TIMEOUT 120)
endforeach()

# LHS cases in the style of XLA's latency_hiding_scheduler_test.cc (modules
# in scheduler/lhs/): buffer hazards, async pairs, in-place permutes,
# balance, overlap limits across whiles, the default memory target, and
# random schedules against the schedule verifier.
add_executable(test_lhs scheduler/test_lhs.c)
target_link_libraries(test_lhs PRIVATE ts_scheduler ts_partitioner ts_hlo ts_common)
foreach(t hazard verify_hazard pairs_partitioned verify_pairs inplace metadata balance while_limit memory_default
          random_hazards)
  add_test(NAME sched.lhs.${t} COMMAND test_lhs ${t} ${CMAKE_CURRENT_SOURCE_DIR}/scheduler/lhs)
  set_tests_properties(sched.lhs.${t} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
# The verifier's error on a scheduled module that breaks a buffer order:
# located, exit 2.
add_test(NAME sched.lhs.cli_verify
         COMMAND sh -c "$0 opt --stage=verified $1; rc=$?; test $rc -eq 2"
                 $<TARGET_FILE:tessera> ${CMAKE_CURRENT_SOURCE_DIR}/scheduler/lhs/bad_schedule.hlo)
set_tests_properties(sched.lhs.cli_verify PROPERTIES LABELS unit TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "bad_schedule.hlo:[0-9]+:[0-9]+: error: 'cp2-start': scheduled before 'view'")
