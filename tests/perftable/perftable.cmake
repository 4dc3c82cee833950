# tessera perf-table (launcher/cmd_perftable.c, bench/perftable*.c): small
# sweeps in seconds (bench-smoke: never a timed assertion), the tables they
# write read back through the cost model's reader (pt_dump), protoc's decode
# of the binary form, leave-one-out scores by hand and on XLA's tables, and
# usage errors (exit 2, one clear line).
add_executable(pt_dump perftable/pt_dump.c)
target_link_libraries(pt_dump PRIVATE ts_costmodel ts_common)

set(pt_run sh ${CMAKE_CURRENT_SOURCE_DIR}/perftable/run.sh)
set(pt_args $<TARGET_FILE:tessera> $<TARGET_FILE:pt_dump> ${CMAKE_SOURCE_DIR})
foreach(s threads binary protoc merge gemm memcap bar rounds)
  add_test(NAME perftable.${s} COMMAND ${pt_run} ${s} ${pt_args})
  set_tests_properties(perftable.${s} PROPERTIES LABELS bench-smoke TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()
foreach(s loo_golden bad_merge)
  add_test(NAME perftable.${s} COMMAND ${pt_run} ${s} ${pt_args})
  set_tests_properties(perftable.${s} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
# XLA's tables next to the checkout (skipped when ../shared is absent).
add_test(NAME perftable.check.corpus COMMAND ${pt_run} corpus ${pt_args})
set_tests_properties(perftable.check.corpus PROPERTIES LABELS "corpus;bench-smoke" TIMEOUT 120 SKIP_RETURN_CODE 77)

find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  add_test(NAME perftable.mpi COMMAND ${pt_run} mpi ${pt_args} ${CMAKE_CURRENT_SOURCE_DIR}/coll/mpirun.sh)
  # Open MPI's own allocations outlive MPI_Finalize: sanitizer builds would
  # report them as leaks of this test (the threads scenarios check ours).
  set_tests_properties(perftable.mpi PROPERTIES LABELS "bench-smoke;mpi" TIMEOUT 120
                       ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# Bad input: exit 2 and one clear first line, before anything is measured.
set(pt_golden ${CMAKE_CURRENT_SOURCE_DIR}/perftable/loo_golden.txtpb)
ts_cli_test(perftable_no_subcommand 2 "tessera perf-table: error: no subcommand given (collectives, gemm, check)" perf-table)
ts_cli_test(perftable_unknown_subcommand 2 "tessera perf-table: error: unknown subcommand 'latency' (collectives, gemm, check)" perf-table latency)
ts_cli_test(perftable_unknown_collective 2 "tessera perf-table: error: unknown collective 'allreduce' (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute)" perf-table collectives --collectives=all-reduce,allreduce)
ts_cli_test(perftable_async_form_not_swept 2 "tessera perf-table: error: unknown collective 'all-reduce-start' (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute)" perf-table collectives --collectives=all-reduce-start)
ts_cli_test(perftable_min_above_max 2 "tessera perf-table: error: -b is larger than -e: no size to sweep" perf-table collectives -b 2M -e 1M)
ts_cli_test(perftable_bad_min 2 "tessera perf-table: error: -b wants a positive size such as 4K, got '0'" perf-table collectives -b 0)
ts_cli_test(perftable_max_too_large 2 "tessera perf-table: error: -e wants a positive size up to 8G, got '16G'" perf-table collectives -e 16G)
ts_cli_test(perftable_bad_scheme 2 "tessera perf-table: error: unknown scheme 'diagonal' (non-rail-aligned or contiguous, rail-aligned or strided, one-way, two-way-all-mutual, two-way-has-non-mutual)" perf-table collectives --schemes=rail-aligned,diagonal)
ts_cli_test(perftable_bad_group_size 2 "tessera perf-table: error: a group size must be from 2 to 1024, got 1" perf-table collectives --group-sizes=2,1)
ts_cli_test(perftable_group_not_dividing 2 "tessera perf-table: error: group size 4 does not divide --devices 6" perf-table collectives --devices 6 --group-sizes=2,4)
ts_cli_test(perftable_bad_type 2 "tessera perf-table: error: unknown or unsupported type 'f33' (f32, f64, bf16, f16, f8e4m3fn, f8e5m2, s8..s64, u8..u64)" perf-table collectives --types=f32,f33)
ts_cli_test(perftable_bad_output_name 2 "tessera perf-table: error: cannot tell the table format from '/tmp/t.csv' (use .txtpb or .pbtxt for text, .pb for binary)" perf-table collectives -o /tmp/t.csv)
ts_cli_test(perftable_gemm_bad_dtype 2 "tessera perf-table: error: unknown or unsupported dtype 'f32xq8->f32' (an element type such as f32, or LHSxRHS->OUT such as bf16xbf16->f32)" perf-table gemm --types=f32xq8->f32)
ts_cli_test(perftable_gemm_bad_range 2 "tessera perf-table: error: -b is larger than -e: no size to sweep" perf-table gemm -b 1024 -e 256)
ts_cli_test(perftable_check_no_table 2 "tessera perf-table: error: no table given" perf-table check)
ts_cli_test(perftable_check_missing 2 "error: cannot open '/nonexistent/t.txtpb': No such file or directory" perf-table check /nonexistent/t.txtpb)
ts_cli_test(perftable_check_bad_mode 2 "tessera perf-table: error: unknown mode 'linear' (weighted, nearest, both)" perf-table check --mode=linear ${pt_golden})
ts_cli_test(perftable_check_no_device 2 "tessera perf-table: error: ${pt_golden} has no device 'sm_90'" perf-table check --device=sm_90 ${pt_golden})
ts_cli_test(perftable_check_garbage 2 "${CMAKE_CURRENT_SOURCE_DIR}/perftable/garbage.txtpb:1:1: error: unknown field 'not_a_table' in xla.DeviceHloInstructionProfiles" perf-table check ${CMAKE_CURRENT_SOURCE_DIR}/perftable/garbage.txtpb)
