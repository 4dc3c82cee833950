# The examples (examples/): generated files are up to date, one training step
# of the MLP and of the transformer block equals a numpy golden, the
# partitioned step equals the reference, and the transformer trains.

set(ex_dir ${PROJECT_SOURCE_DIR}/examples)
set(ex_tests ${CMAKE_CURRENT_SOURCE_DIR}/examples)

add_executable(npy_allclose examples/npy_allclose.c)
target_link_libraries(npy_allclose PRIVATE ts_npy)

# (a) Each committed module is what its generator writes today. The
# generators need only Python's standard library.
find_program(TS_EXAMPLES_PYTHON3 NAMES python3)
function(ts_example_generated name gen file)
  if(TS_EXAMPLES_PYTHON3)
    add_test(NAME examples.generated.${name}
             COMMAND sh ${ex_tests}/check_generated.sh ${TS_EXAMPLES_PYTHON3} ${ex_dir}/${gen}
                     ${file} ${ARGN})
  else()
    add_test(NAME examples.generated.${name} COMMAND sh -c "echo 'skipped: python3 not found'; exit 77")
  endif()
  set_tests_properties(examples.generated.${name} PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)
endfunction()
ts_example_generated(mlp_train gen_mlp_train.py ${ex_dir}/mlp_train.hlo)
ts_example_generated(mlp_train_8 gen_mlp_train.py ${ex_dir}/mlp_train_8.hlo --model 4)
file(READ ${ex_tests}/mlp_step/gen_args mlp_step_args)
separate_arguments(mlp_step_args UNIX_COMMAND "${mlp_step_args}")
ts_example_generated(mlp_step gen_mlp_train.py ${ex_tests}/mlp_step/mlp_train_small.hlo ${mlp_step_args})
ts_example_generated(transformer_train gen_transformer_train.py ${ex_dir}/transformer_train.hlo)
ts_example_generated(transformer_train_8 gen_transformer_train.py ${ex_dir}/transformer_train_8.hlo --model 4)
file(READ ${ex_tests}/transformer_step/gen_args tf_step_args)
separate_arguments(tf_step_args UNIX_COMMAND "${tf_step_args}")
ts_example_generated(transformer_step gen_transformer_train.py
                     ${ex_tests}/transformer_step/transformer_train_small.hlo ${tf_step_args})

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

# The transformer block's step (tests/examples/make_transformer_golden.py,
# whose backward is checked against finite differences) on the reference
# interpreter, and partitioned for 2 x 2 devices on the runtime.
set(tf_step ${ex_tests}/transformer_step)
add_test(NAME examples.transformer_step_golden
         COMMAND sh ${ex_tests}/check_step_golden.sh $<TARGET_FILE:tessera> $<TARGET_FILE:npy_allclose>
                 ${tf_step} ${tf_step}/transformer_train_small.hlo 16 --devices 1 --reference)
add_test(NAME examples.transformer_step_golden.devices4
         COMMAND sh ${ex_tests}/check_step_golden.sh $<TARGET_FILE:tessera> $<TARGET_FILE:npy_allclose>
                 ${tf_step} ${tf_step}/transformer_train_small.hlo 16 --devices 4)
set_tests_properties(examples.transformer_step_golden examples.transformer_step_golden.devices4
                     PROPERTIES LABELS unit TIMEOUT 60)

# (c) The partitioned step on simulated devices equals the reference run.
add_test(NAME examples.check.mlp_train
         COMMAND tessera check --num-partitions 4 ${ex_dir}/mlp_train.hlo)
add_test(NAME examples.check.mlp_train_8 COMMAND tessera check ${ex_dir}/mlp_train_8.hlo)
add_test(NAME examples.check.mlp_step COMMAND tessera check ${ex_tests}/mlp_step/mlp_train_small.hlo)
# The transformer's step at run --check's 1e-4: on OpenBLAS's Zen kernels
# the per-device dots sum in another order than the whole ones, and three
# gradients differ by up to 5.2e-5 relative (1e-5 holds on SkylakeX).
add_test(NAME examples.check.transformer_train
         COMMAND tessera check --tolerance 1e-4 --num-partitions 4 ${ex_dir}/transformer_train.hlo)
add_test(NAME examples.check.transformer_train_8 COMMAND tessera check --tolerance 1e-4 ${ex_dir}/transformer_train_8.hlo)
add_test(NAME examples.check.transformer_step COMMAND tessera check ${tf_step}/transformer_train_small.hlo)
set_tests_properties(examples.check.mlp_train examples.check.mlp_train_8 examples.check.mlp_step
                     examples.check.transformer_train examples.check.transformer_train_8
                     examples.check.transformer_step
                     PROPERTIES LABELS unit TIMEOUT 120)

# The committed transformer modules parse and verify (structure, shapes).
foreach(tf transformer_train transformer_train_8)
  add_test(NAME examples.verified.${tf} COMMAND tessera opt --stage=verified -o /dev/null ${ex_dir}/${tf}.hlo)
  set_tests_properties(examples.verified.${tf} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

# (d) The transformer trains: 30 steps of the training loop on 4 devices
# (threads, and ranks under mpirun), the loss falls, and the final
# parameters equal the reference interpreter's 30 steps.
set(tf_job sh ${CMAKE_CURRENT_SOURCE_DIR}/run/check_job.sh)
add_test(NAME examples.run.transformer_train.devices4
         COMMAND ${tf_job} ok,falls,match 0 $<TARGET_FILE:tessera>
                 --devices 4 --steps 30 --loop --check ${ex_dir}/transformer_train.hlo)
set_tests_properties(examples.run.transformer_train.devices4 PROPERTIES LABELS unit TIMEOUT 300)
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  add_test(NAME examples.run.mpi.transformer_train.np4
           COMMAND ${tf_job} ok,falls,match 4 $<TARGET_FILE:tessera>
                   --steps 30 --loop --check ${ex_dir}/transformer_train.hlo)
  set_tests_properties(examples.run.mpi.transformer_train.np4 PROPERTIES LABELS mpi TIMEOUT 300)
  if(TESSERA_SANITIZE)
    # Open MPI's own allocations outlive MPI_Finalize: not ours to report
    set_tests_properties(examples.run.mpi.transformer_train.np4 PROPERTIES ENVIRONMENT ASAN_OPTIONS=detect_leaks=0)
  endif()
endif()

# The benchmark's hand-written step (bench/bench_mlp_ref.c) computes the same
# thing, so that its step time is a fair peer for `tessera run`'s.
add_test(NAME examples.bench_mlp_ref_golden
         COMMAND sh ${ex_tests}/check_bench_ref.sh $<TARGET_FILE:bench_mlp_ref> $<TARGET_FILE:npy_allclose>
                 ${ex_tests}/mlp_step 1.5)
set_tests_properties(examples.bench_mlp_ref_golden PROPERTIES LABELS unit TIMEOUT 60)
