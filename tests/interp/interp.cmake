# Reference interpreter: every tests/interp/GROUP/NAME.hlo golden file is one
# test (values in its EXPECT comments, computed by hand or by the numpy
# script next to it; the tests themselves need no numpy).
add_executable(test_interp_golden interp/test_interp_golden.c)
target_link_libraries(test_interp_golden PRIVATE ts_interp ts_hlo ts_common)
file(GLOB interp_goldens CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/interp/*/*.hlo)
foreach(f ${interp_goldens})
  get_filename_component(name ${f} NAME_WE)
  get_filename_component(dir ${f} DIRECTORY)
  get_filename_component(group ${dir} NAME)
  add_test(NAME interp.${group}.${name} COMMAND test_interp_golden ${f})
  set_tests_properties(interp.${group}.${name} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

# Shard / unshard (ts_interp_shard_value, ts_interp_unshard_values).
add_executable(test_interp_shard interp/test_interp_shard.c)
target_link_libraries(test_interp_shard PRIVATE ts_interp ts_sharding ts_hlo ts_common)
add_test(NAME interp.shard COMMAND test_interp_shard)
set_tests_properties(interp.shard PROPERTIES LABELS unit TIMEOUT 60)

# Every module of ../shared/corpus/real_hlo runs on seeded random inputs.
# Modules whose collectives span devices run on that many simulated devices;
# custom-calls with no defined meaning must fail clearly.
set(real_hlo ${TESSERA_SHARED_DIR}/corpus/real_hlo)
# Runs of seconds in a release build take minutes under ASan at -O0: those
# are also labelled `heavy`, which the sanitizer pass of .ci/run skips.
set(heavy_runs openxla__xla__test_hlo.txt tensorflow__tensorflow__sharded_computation.hlo)
function(ts_corpus_run file want)
  if(EXISTS ${real_hlo}/${file})
    add_test(NAME corpus.run.${file}
             COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_run.sh $<TARGET_FILE:tessera> ${real_hlo}/${file} ${want}
                     --random-inputs 1 --reference ${ARGN})
    set(labels corpus)
    if(file IN_LIST heavy_runs)
      set(labels corpus heavy)
    endif()
    set_tests_properties(corpus.run.${file} PROPERTIES LABELS "${labels}" TIMEOUT 600)
  endif()
endfunction()
if(EXISTS ${real_hlo})
  file(GLOB run_files RELATIVE ${real_hlo} ${real_hlo}/*.hlo ${real_hlo}/*.txt)
  set(special
      tensorflow__tensorflow__gpu_hlo_collective_cse.hlo
      tensorflow__tensorflow__gpu_hlo_collective_topology.hlo
      tensorflow__tensorflow__u4_all_gather_1x8.hlo
      tensorflow__tensorflow__transformer_engine_softmax.hlo
      unidentified__unidentified__jit__fun_sdy_shard_map.hlo)
  foreach(f ${run_files})
    if(NOT f IN_LIST special)
      ts_corpus_run(${f} finite --devices 1)
    endif()
  endforeach()
  ts_corpus_run(tensorflow__tensorflow__gpu_hlo_collective_cse.hlo finite --devices 8 --replica-count 8)
  ts_corpus_run(tensorflow__tensorflow__gpu_hlo_collective_topology.hlo finite --devices 8)
  ts_corpus_run(tensorflow__tensorflow__u4_all_gather_1x8.hlo finite --devices 8 --replica-count 8)
  ts_corpus_run(tensorflow__tensorflow__transformer_engine_softmax.hlo
                "cannot:custom-call target \"te_scaled_softmax_forward_ffi\" calls a GPU/vendor library" --devices 1)
  ts_corpus_run(unidentified__unidentified__jit__fun_sdy_shard_map.hlo
                "error:custom-call target \"ascend.matmul\" has no meaning" --devices 1)
endif()

# tessera run: .npy inputs/outputs round trip, and its usage errors.
add_test(NAME run.npy_io COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_run_io.sh $<TARGET_FILE:tessera>
                                 ${CMAKE_CURRENT_SOURCE_DIR}/run)
set_tests_properties(run.npy_io PROPERTIES LABELS unit TIMEOUT 60)
set(ident ${CMAKE_CURRENT_SOURCE_DIR}/run/ident.hlo)
ts_cli_test(run_no_devices 2 "tessera run: error: say how many devices with --devices N (N = 1 runs the reference interpreter), or launch under mpirun/srun, or give --task_id, --num_nodes and --address" run ${ident})
ts_cli_test(run_bad_seed 2 "tessera run: error: --random-inputs wants a non-negative integer seed, got '-3'" run --devices 1 --random-inputs -3 ${ident})
ts_cli_test(run_inputs_and_seed 2 "tessera run: error: --inputs and --random-inputs exclude each other" run --devices 1 --inputs /tmp --random-inputs 1 ${ident})
ts_cli_test(run_no_file 2 "tessera run: error: no module file given" run --devices 1)
ts_cli_test(run_zero_devices 2 "tessera run: error: --devices wants a positive integer, got '0'" run --devices 0 ${ident})
ts_cli_test(run_missing_inputs 2 "tessera run: error: cannot open '/nonexistent/param0.npy': No such file or directory" run --devices 1 --inputs /nonexistent ${ident})

# --- unit: the job's inputs and output comparison (interp/feeder.c, compare.c) ---
foreach(t test_compare test_feeder test_value_refs)
  add_executable(${t} interp/${t}.c)
  target_include_directories(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${t} PRIVATE ts_interp ts_npy ts_sharding ts_hlo ts_common Threads::Threads)
  add_test(NAME interp.${t} COMMAND ${t})
  set_tests_properties(interp.${t} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
