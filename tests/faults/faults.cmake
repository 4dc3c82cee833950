# Faults from outside (issue 19): real signals to the real PIDs of a 4-rank
# mpirun job, on both examples (tests/faults/signal_fault.sh). Label faults;
# the default runs TESSERA_FAULT_REPEATS (2) times per case at different
# moments; the full matrix (`-L slow`) repeats TESSERA_FAULT_SLOW_REPEATS (5).
find_package(MPI COMPONENTS C QUIET)
find_program(TESSERA_JQ jq)
if(MPI_C_FOUND AND TESSERA_JQ)
  set(TESSERA_FAULT_REPEATS 2 CACHE STRING "repeats per fault case (label faults)")
  set(TESSERA_FAULT_SLOW_REPEATS 5 CACHE STRING "repeats per fault case of the full matrix (label slow)")
  set(fault_script ${CMAKE_CURRENT_SOURCE_DIR}/faults/signal_fault.sh)
  foreach(ex mlp_train transformer_train)
    foreach(sc kill term stop)
      foreach(who first middle last)
        add_test(NAME faults.${ex}.${sc}.${who}
                 COMMAND sh ${fault_script} $<TARGET_FILE:tessera> ${PROJECT_SOURCE_DIR}/scripts/mpirun.sh
                         ${PROJECT_SOURCE_DIR}/examples/${ex}.hlo ${sc} ${who} ${TESSERA_FAULT_REPEATS})
        set_tests_properties(faults.${ex}.${sc}.${who} PROPERTIES LABELS "faults;mpi" TIMEOUT 600 RUN_SERIAL TRUE)
        add_test(NAME faults.full.${ex}.${sc}.${who}
                 COMMAND sh ${fault_script} $<TARGET_FILE:tessera> ${PROJECT_SOURCE_DIR}/scripts/mpirun.sh
                         ${PROJECT_SOURCE_DIR}/examples/${ex}.hlo ${sc} ${who} ${TESSERA_FAULT_SLOW_REPEATS})
        set_tests_properties(faults.full.${ex}.${sc}.${who} PROPERTIES LABELS "slow" TIMEOUT 1500 RUN_SERIAL TRUE)
      endforeach()
    endforeach()
    # A slow-but-progressing rank (STOP/CONT every second) never gives a
    # digest; SIGTERM to mpirun (a cancel) gives none and names nobody.
    # (The slow case's failures of stop 25 were the end-of-run cancel
    # racing a rank's death, hang.coord.cancel_race, and runs at load
    # 20-30 where no rank progressed for the hang timeout of 3 s.)
    foreach(sc slow cancel)
      add_test(NAME faults.${ex}.${sc}
               COMMAND sh ${fault_script} $<TARGET_FILE:tessera> ${PROJECT_SOURCE_DIR}/scripts/mpirun.sh
                       ${PROJECT_SOURCE_DIR}/examples/${ex}.hlo ${sc} middle 1)
      set_tests_properties(faults.${ex}.${sc} PROPERTIES LABELS "faults;mpi" TIMEOUT 600 RUN_SERIAL TRUE)
    endforeach()
  endforeach()
endif()
