# XLA conformance, propagation: tessera opt --stage=propagated on the modules
# of XLA's sharding_propagation_test.cc (shared/corpus/xla_tests/propagation),
# compared with XLA's expected shardings. The floors are the counts reached
# so far: a change that matches fewer modules or expectations fails; raise
# them when a change matches more (the summary line prints both counts).
# Skipped (77) when ../shared is absent.
find_package(Python3 COMPONENTS Interpreter)
set(TS_PROP_MIN_MODULES 131)
set(TS_PROP_MIN_EXPECT 186)
if(Python3_Interpreter_FOUND AND EXISTS ${TESSERA_SHARED_DIR}/corpus/xla_tests/propagation)
  add_test(NAME conformance.propagation
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/conformance/propagation/run_propagation.py
                   $<TARGET_FILE:tessera> ${TESSERA_SHARED_DIR}/corpus/xla_tests/propagation
                   --min-modules ${TS_PROP_MIN_MODULES} --min-expect ${TS_PROP_MIN_EXPECT})
else()
  add_test(NAME conformance.propagation
           COMMAND sh -c "echo 'skipped: ${TESSERA_SHARED_DIR}/corpus/xla_tests/propagation or python3 not found'; exit 77")
endif()
set_tests_properties(conformance.propagation PROPERTIES LABELS conformance TIMEOUT 300 SKIP_RETURN_CODE 77)

# Unit test of the merge rule propagation relies on (hand-computed goldens).
add_executable(test_propagate_xla ${CMAKE_CURRENT_SOURCE_DIR}/sharding/test_propagate_xla.c)
target_include_directories(test_propagate_xla PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_propagate_xla PRIVATE ts_sharding ts_hlo ts_common)
add_test(NAME test_propagate_xla COMMAND test_propagate_xla)
set_tests_properties(test_propagate_xla PROPERTIES LABELS unit TIMEOUT 60)
