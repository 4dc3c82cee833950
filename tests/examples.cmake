# The examples (examples/): generated files are up to date, one MLP training
# step equals a numpy golden, and the partitioned step equals the reference.

set(ex_dir ${PROJECT_SOURCE_DIR}/examples)
set(ex_tests ${CMAKE_CURRENT_SOURCE_DIR}/examples)

add_executable(npy_allclose examples/npy_allclose.c)
target_link_libraries(npy_allclose PRIVATE ts_npy)

# (a) Each committed module is what its generator writes today. The
# generators need only Python's standard library.
find_program(TS_EXAMPLES_PYTHON3 NAMES python3)
function(ts_example_generated name file)
  if(TS_EXAMPLES_PYTHON3)
    add_test(NAME examples.generated.${name}
             COMMAND sh ${ex_tests}/check_generated.sh ${TS_EXAMPLES_PYTHON3} ${ex_dir}/gen_mlp_train.py
                     ${file} ${ARGN})
  else()
    add_test(NAME examples.generated.${name} COMMAND sh -c "echo 'skipped: python3 not found'; exit 77")
  endif()
  set_tests_properties(examples.generated.${name} PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)
endfunction()
ts_example_generated(mlp_train ${ex_dir}/mlp_train.hlo)
ts_example_generated(mlp_train_8 ${ex_dir}/mlp_train_8.hlo --model 4)
file(READ ${ex_tests}/mlp_step/gen_args mlp_step_args)
separate_arguments(mlp_step_args UNIX_COMMAND "${mlp_step_args}")
ts_example_generated(mlp_step ${ex_tests}/mlp_step/mlp_train_small.hlo ${mlp_step_args})

# (b) One training step on the reference interpreter equals the numpy golden
# (tests/examples/make_goldens.py; no numpy needed here).
add_test(NAME examples.mlp_step_golden
         COMMAND sh ${ex_tests}/check_mlp_step.sh $<TARGET_FILE:tessera> $<TARGET_FILE:npy_allclose>
                 ${ex_tests}/mlp_step)
set_tests_properties(examples.mlp_step_golden PROPERTIES LABELS unit TIMEOUT 60)
# The comparison can fail: updated weights are not the weights they started from.
add_test(NAME examples.allclose_detects_change
         COMMAND sh -c "$<TARGET_FILE:npy_allclose> ${ex_tests}/mlp_step/out1.npy ${ex_tests}/mlp_step/param0.npy; test $? = 1")
set_tests_properties(examples.allclose_detects_change PROPERTIES LABELS unit TIMEOUT 30)

# (c) The partitioned step on simulated devices equals the reference run.
add_test(NAME examples.check.mlp_train
         COMMAND tessera check --num-partitions 4 ${ex_dir}/mlp_train.hlo)
add_test(NAME examples.check.mlp_train_8 COMMAND tessera check ${ex_dir}/mlp_train_8.hlo)
add_test(NAME examples.check.mlp_step COMMAND tessera check ${ex_tests}/mlp_step/mlp_train_small.hlo)
set_tests_properties(examples.check.mlp_train examples.check.mlp_train_8 examples.check.mlp_step
                     PROPERTIES LABELS unit TIMEOUT 120)

# The benchmark's hand-written step (bench/bench_mlp_ref.c) computes the same
# thing, so that its step time is a fair peer for `tessera run`'s.
add_test(NAME examples.bench_mlp_ref_golden
         COMMAND sh ${ex_tests}/check_bench_ref.sh $<TARGET_FILE:bench_mlp_ref> $<TARGET_FILE:npy_allclose>
                 ${ex_tests}/mlp_step 1.5)
set_tests_properties(examples.bench_mlp_ref_golden PROPERTIES LABELS unit TIMEOUT 60)
