# Hang detector (hang_detect/): unit tests of the pieces (classifier, wire
# decoder, fault grammar and hook, digests, stragglers), and end-to-end
# runs of a real coordinator process with forked fake workers that inject
# every TESSERA_FAULT (label hang). The mpirun runs of `tessera run` come
# with the launcher's integration.

# The program test_hang_NAME, from hang/test_hang_NAME.c.
function(hang_test_program t)
  add_executable(test_hang_${t} ${CMAKE_CURRENT_SOURCE_DIR}/hang/test_hang_${t}.c)
  target_include_directories(test_hang_${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(test_hang_${t} PRIVATE ts_hang ts_coll ts_common)
endfunction()

foreach(t classify wire fault digest)
  hang_test_program(${t})
  add_test(NAME hang.${t} COMMAND test_hang_${t})
  set_tests_properties(hang.${t} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

hang_test_program(coord)

# A fault case, "name|TESSERA_FAULT|expected cause|expected culprits|extra
# flags": sets name, fault, cause, culprits and extra (a list).
macro(hang_case_fields row)
  string(REPLACE "|" ";" f "${row}")
  list(GET f 0 name)
  list(GET f 1 fault)
  list(GET f 2 cause)
  list(GET f 3 culprits)
  list(GET f 4 extra)
  separate_arguments(extra UNIX_COMMAND "${extra}")
endmacro()

set(hang_cases
  "bad_device|stall:rank=1:step=3|bad_device|1|"
  "unknown_all_stall|stall:rank=all:step=3|unknown|-|"
  "crash_rank0|crash:rank=0:step=2|unrecoverable_error|0|"
  "crash_rank2|crash:rank=2:step=3|unrecoverable_error|2|"
  "netdrop|netdrop:ranks=1,2:step=3|networking|1,2|"
  "different_modules|module:rank=3|different_modules|3|"
  "fingerprint_mismatch|fingerprint:rank=1|fingerprint_mismatch|1|"
  "input_stall|input-stall:rank=2:step=3|data_input_stall|2|"
  "no_abort|stall:rank=2:step=2|bad_device|2|--no-abort"
  "finish|none|none|-|"
  "slow_step_no_false_positive|slow:rank=2:step=2:seconds=3|none|-|--steps 4"
  "straggler|slow:rank=1|none|-|--steps 16 --straggler 1"
  "cancel_race|none|cancelled|-|--steps 200 --cancel-race")
foreach(c ${hang_cases})
  hang_case_fields("${c}")
  add_test(NAME hang.coord.${name} COMMAND test_hang_coord ${fault} ${cause} ${culprits} ${extra})
  set_tests_properties(hang.coord.${name} PROPERTIES LABELS hang TIMEOUT 90)
endforeach()

# tessera hang-coordinator is registered by the launcher; its bad usage.
add_test(NAME hang.coordinator_usage COMMAND test_hang_coord hang-coordinator --world 0 --listen 127.0.0.1:0 --secret s)
set_tests_properties(hang.coordinator_usage PROPERTIES LABELS unit TIMEOUT 30 WILL_FAIL TRUE)

# tessera diagnose on hand-written digests (tests/hang/digests).
set(hang_digests ${CMAKE_CURRENT_SOURCE_DIR}/hang/digests)
add_test(NAME hang.diagnose.one COMMAND tessera diagnose ${hang_digests}/bad_device_h1.json)
set_tests_properties(hang.diagnose.one PROPERTIES LABELS unit TIMEOUT 30
  PASS_REGULAR_EXPRESSION "bad devices on the following hosts[^\n]*\n  The hosts that have bad devices are: h1\n  Full error digest:\n    Potential cause: Bad device\n    Potential culprit workers: rank 1:h1\n")
add_test(NAME hang.diagnose.recurring
         COMMAND tessera diagnose ${hang_digests}/bad_device_h1.json ${hang_digests}/bad_device_h1.json
                 ${hang_digests}/networking_h1_h2.json ${hang_digests}/bad_device_h1.json ${hang_digests}/networking_h1_h2.json)
set_tests_properties(hang.diagnose.recurring PROPERTIES LABELS unit TIMEOUT 30
  PASS_REGULAR_EXPRESSION "Culprit hosts across 5 hang events:\n  h1: 5 events \\(bad_device x3, networking x2\\): likely faulty[^\n]*\n  h2: 2 events \\(networking x2\\)\n")
add_test(NAME hang.diagnose.bad_json COMMAND tessera diagnose ${hang_digests}/not_a_digest.json)
set_tests_properties(hang.diagnose.bad_json PROPERTIES LABELS unit TIMEOUT 30 WILL_FAIL TRUE)
add_test(NAME hang.diagnose.bad_json_message COMMAND tessera diagnose ${hang_digests}/not_a_digest.json)
set_tests_properties(hang.diagnose.bad_json_message PROPERTIES LABELS unit TIMEOUT 30
  PASS_REGULAR_EXPRESSION "not_a_digest.json: error: digest: unknown cause 'hung'")

# The overhead micro-benchmark (bench/bench_hang.c): runs, never timed.
add_executable(bench_hang ${PROJECT_SOURCE_DIR}/bench/bench_hang.c)
target_link_libraries(bench_hang PRIVATE ts_hang ts_coll ts_common)
add_test(NAME bench-smoke.bench_hang COMMAND bench_hang --instrs 100000 --seconds 0.5)
set_tests_properties(bench-smoke.bench_hang PROPERTIES LABELS bench-smoke TIMEOUT 60)

# Under mpirun: 4 ranks of `tessera run` on the example training step with
# each fault (label hang). They skip (77) until tessera run has the hang
# detector's flags.
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  set(hang_mpirun_cases
    "bad_device|stall:rank=1:step=3|bad_device|1|"
    "unknown_all_stall|stall:rank=all:step=3|unknown|-|"
    "crash_rank0|crash:rank=0:step=3|unrecoverable_error|0|"
    "crash_rank3|crash:rank=3:step=3|unrecoverable_error|3|"
    "netdrop|netdrop:ranks=1,2:step=3|networking|1,2|"
    "different_modules|module:rank=2|different_modules|2|"
    "fingerprint_mismatch|fingerprint:rank=1|fingerprint_mismatch|1|"
    "input_stall|input-stall:rank=2:step=3|data_input_stall|2|"
    "slow_step_no_false_positive|slow:rank=2:step=3:seconds=4|none|-|"
    "straggler|slow:rank=1|none|-|--straggler 1")
  foreach(c ${hang_mpirun_cases})
    hang_case_fields("${c}")
    add_test(NAME hang.mpirun.${name}
             COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hang/mpirun_fault.sh $<TARGET_FILE:tessera>
                     ${PROJECT_SOURCE_DIR}/examples/mlp_train.hlo ${fault} ${cause} ${culprits} ${extra})
    set_tests_properties(hang.mpirun.${name} PROPERTIES LABELS "hang;mpi" TIMEOUT 180 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# The coordinator dies with a job killed before its workers connected, and
# is visible as tessera-hang-coordinator.
hang_test_program(lifetime)
add_test(NAME hang.lifetime.parent_gone COMMAND test_hang_lifetime)
set_tests_properties(hang.lifetime.parent_gone PROPERTIES LABELS hang TIMEOUT 60)

# An unreachable coordinator: the job warns once and runs to the end.
add_test(NAME hang.run.unreachable_coordinator
         COMMAND sh -c "out=$(TESSERA_HANG_SECRET=x \"$0\" run \"$1\" --devices 4 --steps 3 --hang-coordinator 127.0.0.1:1 2>&1) || { echo \"$out\"; echo 'the job failed'; exit 1; }; echo \"$out\"; [ $(echo \"$out\" | grep -c 'running without the hang detector') = 1 ]"
                 $<TARGET_FILE:tessera> ${PROJECT_SOURCE_DIR}/examples/mlp_train.hlo)
set_tests_properties(hang.run.unreachable_coordinator PROPERTIES LABELS hang TIMEOUT 120)
# A coordinator ended by a signal says so (SIGTERM from outside, a real PID).
add_test(NAME hang.coordinator_says_signal COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_coord_signal.sh $<TARGET_FILE:tessera>)
set_tests_properties(hang.coordinator_says_signal PROPERTIES LABELS "unit;hang" TIMEOUT 60)
