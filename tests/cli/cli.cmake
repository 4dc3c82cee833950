# The tessera command line: usage errors exit 2 with one clear message.
function(ts_cli_test name rc line)
  add_test(NAME cli.${name}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_cli.sh ${rc} ${line} $<TARGET_FILE:tessera> ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES LABELS unit TIMEOUT 30)
endfunction()

set(example ${CMAKE_SOURCE_DIR}/examples/mlp_sharded.hlo)
ts_cli_test(no_command 2 "tessera: error: no command given")
ts_cli_test(unknown_command 2 "tessera: error: unknown command 'frobnicate' (see 'tessera --help')" frobnicate)
ts_cli_test(unknown_global_option 2 "tessera: error: unknown option '--frob'" --frob)
ts_cli_test(opt_unknown_option 2 "tessera opt: error: unknown option '--frob'" opt --frob ${example})
ts_cli_test(opt_unknown_stage 2 "tessera opt: error: unknown stage 'lowered' (stages: parsed, verified, propagated, partitioned, scheduled, fused)" opt --stage=lowered ${example})
ts_cli_test(opt_bad_count 2 "tessera opt: error: --num-partitions wants a positive integer, got '0'" opt --num-partitions 0 ${example})
ts_cli_test(opt_missing_value 2 "tessera opt: error: option '--replica-count' needs a value" opt ${example} --replica-count)
ts_cli_test(opt_no_file 2 "tessera opt: error: no module file given" opt)
ts_cli_test(opt_two_files 2 "tessera opt: error: more than one module file given" opt ${example} ${example})
ts_cli_test(opt_missing_file 2 "error: cannot open '/nonexistent/m.hlo': No such file or directory" opt /nonexistent/m.hlo)
ts_cli_test(opt_directory 2 "error: cannot read '/': Is a directory" opt /)
add_test(NAME cli.version COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_cli.sh 0 "tessera ${PROJECT_VERSION}" $<TARGET_FILE:tessera> --version)
set_tests_properties(cli.version PROPERTIES LABELS unit TIMEOUT 30 ENVIRONMENT WANT_STREAM=stdout)

# -o writes atomically: a failing run leaves an existing output file as it was.
add_test(NAME cli.output_untouched_on_error
         COMMAND sh -c "f=$(mktemp) && echo keep >$f && ! $<TARGET_FILE:tessera> opt -o $f ${CMAKE_CURRENT_SOURCE_DIR}/bad_input/unknown_opcode.hlo 2>/dev/null && test \"$(cat $f)\" = keep && rm -f $f")
set_tests_properties(cli.output_untouched_on_error PROPERTIES LABELS unit TIMEOUT 30)
# -o and stdin: the module read from '-' and written to a file equals stdout's.
add_test(NAME cli.stdin_to_output
         COMMAND sh -c "f=$(mktemp) && $<TARGET_FILE:tessera> opt -o $f - <${example} && $<TARGET_FILE:tessera> opt ${example} | cmp - $f && rm -f $f")
set_tests_properties(cli.stdin_to_output PROPERTIES LABELS unit TIMEOUT 30)
# --stage=propagated: every instruction line carries a sharding, and the
# first dot takes the 4-way batch tiling of its lhs parameter.
add_test(NAME cli.stage_propagated
         COMMAND sh -c "out=$($<TARGET_FILE:tessera> opt --stage=propagated ${example}) && echo \"$out\" | grep -q '%dot.6 = .*sharding={devices=\\[4,1\\]<=\\[4\\]}' && ! echo \"$out\" | grep ' = ' | grep -v -e 'sharding=' -e '^HloModule'")
set_tests_properties(cli.stage_propagated PROPERTIES LABELS unit TIMEOUT 30)

# tessera --help-env: every TESSERA_* knob the sources name is in the table.
add_test(NAME cli.help_env COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_help_env.sh $<TARGET_FILE:tessera> ${CMAKE_SOURCE_DIR})
set_tests_properties(cli.help_env PROPERTIES LABELS unit TIMEOUT 30)
# TESSERA_COLL_TIMEOUT sets tessera run's collective deadline unless --timeout is given.
add_test(NAME cli.run_coll_timeout_env
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_coll_timeout.sh $<TARGET_FILE:tessera> ${CMAKE_SOURCE_DIR}/examples/mlp_train_2.hlo)
set_tests_properties(cli.run_coll_timeout_env PROPERTIES LABELS unit TIMEOUT 150)
# OpenBLAS's core type end to end (launcher/blas_setup.c): the kernels cpuid
# calls for run and are logged, a failed start-up check falls back and the
# chain ends, the user's OPENBLAS_CORETYPE wins; --check matches in each.
foreach(s chosen fallback all_wrong user)
  add_test(NAME cli.blas_${s}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_blas.sh $<TARGET_FILE:tessera> ${example} ${s})
  set_tests_properties(cli.blas_${s} PROPERTIES LABELS unit TIMEOUT 120)
endforeach()

# --platform (launcher/cli.c, gpu/device.c): a bad value; gpu where it cannot
# run (no CUDA build, no driver, or no device: CUDA_VISIBLE_DEVICES="" hides
# them all) is one error naming what is missing, exit 2, for run and check;
# --platform=cpu runs and matches the interpreter.
ts_cli_test(run_platform_bad 2 "tessera run: error: --platform wants cpu or gpu, got 'tpu'" run --platform=tpu ${example})
ts_cli_test(check_platform_bad 2 "tessera check: error: --platform wants cpu or gpu, got 'TPU'" check --platform TPU ${example})
ts_cli_test(check_tolerance_bad 2 "tessera check: error: --tolerance wants a positive number, got '0'" check --tolerance 0 ${example})
ts_cli_test(run_platform_missing_value 2 "tessera run: error: option '--platform' needs a value" run ${example} --platform)
ts_cli_test(run_platform_reference 2 "tessera run: error: --reference runs the interpreter on the CPU, not with --platform=gpu"
            run --reference --platform=gpu ${example})
foreach(cmd run check)
  add_test(NAME cli.${cmd}_platform_gpu_unavailable
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_platform.sh $<TARGET_FILE:tessera> ${TESSERA_HAVE_CUDA} ${cmd} ${example})
  set_tests_properties(cli.${cmd}_platform_gpu_unavailable PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
add_test(NAME cli.run_platform_cpu
         COMMAND sh -c "$<TARGET_FILE:tessera> run --platform=cpu --devices 4 --check ${example} | grep -q '^check: match'")
set_tests_properties(cli.run_platform_cpu PROPERTIES LABELS unit TIMEOUT 120)
