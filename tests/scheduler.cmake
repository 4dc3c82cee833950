# The latency-hiding scheduler (scheduler/): scenarios on hand-written
# modules, the S-curve fit, the CLI, scheduled partitioned modules run
# against their synchronous selves, and the MaxText training step.
add_executable(test_sched scheduler/test_sched.c)
target_link_libraries(test_sched PRIVATE ts_scheduler ts_interp ts_hlo ts_common m)
foreach(t overlap exposed overlap_limit memory_limit while deterministic forms)
  add_test(NAME sched.${t} COMMAND test_sched ${t})
  set_tests_properties(sched.${t} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
