# SPMD partitioner, checked numerically with `tessera check`: every case of
# ../shared/corpus/xla_spmd with its num_partitions and options, the sharded
# modules of ../shared/corpus/real_hlo, hand-written modules in
# tests/partition/, the CLI's errors, and the shard/unshard helpers.
#
# Cases the partitioner cannot pass yet are named, with the reason, in
# tests/partition/spmd_expected_failures.txt: check_spmd.sh then expects them
# to fail and fails when one passes (remove it from the list then). The list
# is read when the test runs: editing it needs no reconfigure.

set(ts_spmd_xfail ${CMAKE_CURRENT_SOURCE_DIR}/partition/spmd_expected_failures.txt)
set(ts_partition_dir ${CMAKE_CURRENT_SOURCE_DIR}/partition)

# ts_check_test(NAME FILE WANT LABELS [CHECK FLAGS...]); WANT as check_spmd.sh.
function(ts_check_test name file want labels)
  add_test(NAME ${name}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_spmd.sh $<TARGET_FILE:tessera> ${ts_spmd_xfail}
                   ${file} ${want} ${ARGN})
  set(timeout 60)
  if("corpus" IN_LIST labels)
    set(timeout 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout} SKIP_RETURN_CODE 77)
endfunction()

# ts_spmd_expectations(PATH): reads xla_spmd's expectations.jsonl into
# ts_spmd_files (the cases' files, in order) and, per FILE,
# ts_spmd_nparts_FILE (num_partitions) and ts_spmd_options_FILE (its options
# as KEY=VALUE, booleans true or false). Here and for runtime.cmake.
function(ts_spmd_expectations path)
  file(READ ${path} rest)
  set(files "")
  # One JSON object per line; split by hand (no CMake lists: the lines hold
  # ';' and unbalanced '[').
  while(NOT rest STREQUAL "")
    string(FIND "${rest}" "\n" nl)
    if(nl EQUAL -1)
      set(line "${rest}")
      set(rest "")
    else()
      string(SUBSTRING "${rest}" 0 ${nl} line)
      math(EXPR nl "${nl} + 1")
      string(SUBSTRING "${rest}" ${nl} -1 rest)
    endif()
    string(STRIP "${line}" line)
    if(line STREQUAL "")
      continue()
    endif()
    string(JSON file GET "${line}" file)
    string(JSON nparts GET "${line}" num_partitions)
    string(JSON nopts LENGTH "${line}" options)
    set(options "")
    if(nopts GREATER 0)
      math(EXPR last "${nopts} - 1")
      foreach(k RANGE ${last})
        string(JSON key MEMBER "${line}" options ${k})
        string(JSON type TYPE "${line}" options ${key})
        string(JSON value GET "${line}" options ${key})
        if(type STREQUAL "BOOLEAN")
          if(value)
            set(value true)
          else()
            set(value false)
          endif()
        endif()
        list(APPEND options ${key}=${value})
      endforeach()
    endif()
    list(APPEND files ${file})
    set(ts_spmd_nparts_${file} ${nparts} PARENT_SCOPE)
    set(ts_spmd_options_${file} "${options}" PARENT_SCOPE)
  endwhile()
  set(ts_spmd_files "${files}" PARENT_SCOPE)
endfunction()

# ts_corpus_absent_test(NAME DIR): when corpus folder DIR is missing (a bare
# clone), the one test NAME.absent that reports NAME's tests skipped.
# Here and for runtime.cmake.
function(ts_corpus_absent_test name dir)
  add_test(NAME ${name}.absent COMMAND sh -c "echo 'skipped: ${dir} not found'; exit 77")
  set_tests_properties(${name}.absent PROPERTIES LABELS corpus SKIP_RETURN_CODE 77)
endfunction()

# --- corpus: xla_spmd, num_partitions and options from expectations.jsonl ---
# A fixed --max-memory keeps "too large to run here" (exit 3) the same on
# every machine: the six einsum cases of 38 to 384 GiB.
set(spmd_dir ${TESSERA_SHARED_DIR}/corpus/xla_spmd)
# The README's six einsum cases hold 38 to 384 GiB arrays: partitioned and
# verified, then exit 3 without running.
set(spmd_too_large
    076_einsum_contracting_dims_partitioned.hlo
    079_einsum_rhs_non_contracting_dims_partitioned.hlo
    080_einsum_output_lhs_non_contracting_dim_partitioned.hlo
    082_unrolled_einsum_rhs_windowed_in_contracting_out_non_contracting_partitioned.hlo
    083_bidirectional_einsum_rhs_windowed_in_contracting_out_non_contracting_partitioned.hlo
    085_einsum_rhs_windowed_non_contracting_no_double_ag.hlo)
if(EXISTS ${spmd_dir}/expectations.jsonl)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${spmd_dir}/expectations.jsonl)
  ts_spmd_expectations(${spmd_dir}/expectations.jsonl)
  foreach(file ${ts_spmd_files})
    # tessera check's flags: --KEY-NAME, --KEY-NAME=false, --KEY-NAME=VALUE
    set(flags --num-partitions ${ts_spmd_nparts_${file}} --max-memory 8G)
    foreach(opt ${ts_spmd_options_${file}})
      string(REGEX MATCH "^([^=]*)=(.*)$" kv "${opt}")
      string(REPLACE "_" "-" flag "${CMAKE_MATCH_1}")
      if(CMAKE_MATCH_2 STREQUAL "true")
        list(APPEND flags --${flag})
      else()
        list(APPEND flags --${flag}=${CMAKE_MATCH_2})
      endif()
    endforeach()
    set(want ok)
    if(file IN_LIST spmd_too_large)
      set(want "not-run:memory estimate:")
    endif()
    ts_check_test(corpus.spmd.${file} ${spmd_dir}/${file} ${want} corpus ${flags})
  endforeach()
else()
  ts_corpus_absent_test(corpus.spmd ${spmd_dir})
endif()

# --- corpus: the sharded real_hlo modules (skipped when absent) ---
set(real_hlo ${TESSERA_SHARED_DIR}/corpus/real_hlo)
ts_check_test(corpus.check.tensorflow__tensorflow__sharded_computation.hlo
              ${real_hlo}/tensorflow__tensorflow__sharded_computation.hlo ok "corpus;heavy" --num-partitions 2)
ts_check_test(corpus.check.tensorflow__tensorflow__spmd.hlo ${real_hlo}/tensorflow__tensorflow__spmd.hlo ok corpus)
ts_check_test(corpus.check.tensorflow__tensorflow__spmd_8_devices.hlo
              ${real_hlo}/tensorflow__tensorflow__spmd_8_devices.hlo ok corpus --num-partitions 8)
ts_check_test(corpus.check.tensorflow__tensorflow__sharded_16_devices.hlo
              ${real_hlo}/tensorflow__tensorflow__sharded_16_devices.hlo ok corpus)
ts_check_test(corpus.check.tensorflow__tensorflow__sharded_2_devices.hlo
              ${real_hlo}/tensorflow__tensorflow__sharded_2_devices.hlo ok corpus --num-partitions 2)
ts_check_test(corpus.check.tensorflow__tensorflow__must_alias_with_sharding.hlo
              ${real_hlo}/tensorflow__tensorflow__must_alias_with_sharding.hlo ok corpus --num-partitions 2)
ts_check_test(corpus.check.unidentified__unidentified__jit__fun_sdy_shard_map.hlo
              ${real_hlo}/unidentified__unidentified__jit__fun_sdy_shard_map.hlo
              "error:custom-call target \"ascend.matmul\" has no meaning" corpus --num-partitions 8)

# --- unit: hand-written sharded modules ---
ts_check_test(partition.elementwise_tiled ${ts_partition_dir}/elementwise_tiled.hlo ok unit)
ts_check_test(partition.dot_batch ${ts_partition_dir}/dot_batch.hlo ok unit)
ts_check_test(partition.reshard_replicated_to_tiled ${ts_partition_dir}/reshard_replicated_to_tiled.hlo ok unit)
ts_check_test(partition.uneven_5_over_2 ${ts_partition_dir}/uneven_5_over_2.hlo ok unit)
ts_check_test(partition.tuple_root ${ts_partition_dir}/tuple_root.hlo ok unit --random-inputs 7)
ts_check_test(partition.options ${ts_partition_dir}/dot_batch.hlo ok unit --threshold-for-windowed-einsum-mib=0
              --unroll-windowed-einsum --bidirectional-windowed-einsum=true
              --conv-halo-exchange-always-on-lhs=false --choose-faster-windowed-einsum-over-mem=false)
# The check itself must catch a wrong result: in the assembled output, and
# in a replica the assembly does not read.
ts_check_test(partition.mismatch_detected ${ts_partition_dir}/mismatch_partition_id.hlo
              "mismatch:out0 u32[2]: MISMATCH: 1 of 2 elements differ" unit)
ts_check_test(partition.mismatch_detected_worst ${ts_partition_dir}/mismatch_partition_id.hlo
              "mismatch:worst at [1]: got 1, want 0" unit)
ts_check_test(partition.mismatch_replica_detected ${ts_partition_dir}/mismatch_replica.hlo
              "mismatch:but MISMATCH on device 1's copy: 3 elements differ" unit)
# Memory estimate, by hand: f32[4,8] parameter 128 B + the add's 128 B =
# 256 B for the reference run; 2 devices x (64 + 64) B partitioned.
ts_check_test(partition.too_large ${ts_partition_dir}/small_no_header.hlo
              "not-run:memory estimate: reference run 256 B, partitioned run 256 B (limit 255 B)" unit
              --num-partitions 2 --max-memory 255)

# --- unit: the command line ---
set(small ${ts_partition_dir}/small_no_header.hlo)
ts_cli_test(check_no_partitions 2
            "tessera check: error: say how many devices with --num-partitions N (the module's header gives none)"
            check ${small})
ts_cli_test(check_bad_partitions 2 "tessera check: error: --num-partitions wants a positive integer, got 'two'"
            check --num-partitions two ${small})
ts_cli_test(check_bad_bool 2 "tessera check: error: --unroll-windowed-einsum wants true or false, got 'maybe'"
            check --num-partitions 2 --unroll-windowed-einsum=maybe ${small})
ts_cli_test(check_bad_threshold 2
            "tessera check: error: --threshold-for-windowed-einsum-mib wants a non-negative integer (MiB), got '1.5'"
            check --num-partitions 2 --threshold-for-windowed-einsum-mib=1.5 ${small})
ts_cli_test(check_threshold_no_value 2
            "tessera check: error: option '--threshold-for-windowed-einsum-mib' needs a value"
            check --num-partitions 2 ${small} --threshold-for-windowed-einsum-mib)
ts_cli_test(check_bad_memory 2
            "tessera check: error: --max-memory wants a positive byte count (suffixes K, M, G, T), got '12Q'"
            check --num-partitions 2 --max-memory 12Q ${small})
ts_cli_test(check_bad_seed 2 "tessera check: error: --random-inputs wants a non-negative integer seed, got '-1'"
            check --num-partitions 2 --random-inputs -1 ${small})
ts_cli_test(check_unknown_option 2 "tessera check: error: unknown option '--frob'" check --frob ${small})
ts_cli_test(check_no_file 2 "tessera check: error: no module file given" check --num-partitions 2)
ts_cli_test(check_too_many_devices 2
            "tessera check: error: --num-partitions 2048: one process simulates at most 1024 devices"
            check --num-partitions 2048 ${small})
ts_cli_test(opt_partitioned_no_partitions 2
            "tessera opt: error: --stage=partitioned: say how many devices with --num-partitions N (the module's header gives none)"
            opt --stage=partitioned ${small})
ts_cli_test(opt_bad_bool 2 "tessera opt: error: --bidirectional-windowed-einsum wants true or false, got 'yes'"
            opt --stage=partitioned --bidirectional-windowed-einsum=yes ${small})
# opt --stage=partitioned prints the per-device program (f32[4,8] in 2 row
# tiles: f32[2,8]), which parses and verifies again.
add_test(NAME cli.opt_stage_partitioned
         COMMAND sh -c "out=$($<TARGET_FILE:tessera> opt --stage=partitioned --num-partitions 2 ${small}) && echo \"$out\" | grep -q '^HloModule small_no_header, num_partitions=2' && echo \"$out\" | grep -q '= f32\\[2,8\\] parameter(0)' && echo \"$out\" | $<TARGET_FILE:tessera> opt - >/dev/null")
set_tests_properties(cli.opt_stage_partitioned PROPERTIES LABELS unit TIMEOUT 30)

# The partitioner's own strategies: each module must match the reference
# AND use the collectives its handler is meant to emit (a line of
# `tessera check`'s collective table, e.g. "all-reduce 1", or with the bytes
# per device, "all-reduce 1 96"; "": no collective at all), so a silent
# fall-back to gathering is caught.
# ts_collectives_test(NAME FILE WANT [CHECK FLAGS...])
function(ts_collectives_test name file want_collectives)
  string(REPLACE ";" " " flags "${ARGN}")
  add_test(NAME ${name}
           COMMAND sh -c "out=$($<TARGET_FILE:tessera> check ${flags} ${file}) || exit 1; \
                          rows=$(printf '%s\\n' \"$out\" | awk '/^  (all|collective|reduce)/'); \
                          got=$(printf '%s\\n' \"$rows\" | awk 'NF {print $1, $2}' | paste -sd, -); \
                          bytes=$(printf '%s\\n' \"$rows\" | awk 'NF {print $1, $2, $3}' | paste -sd, -); \
                          [ \"$got\" = \"$1\" ] || [ \"$bytes\" = \"$1\" ] || \
                          { echo \"collectives: '$bytes', want '$1'\"; exit 1; }" _ "${want_collectives}")
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 60)
endfunction()
function(ts_partition_strategy name want_collectives)
  set(file ${ts_partition_dir}/${name}.hlo)
  ts_check_test(partition.${name} ${file} ok unit ${ARGN})
  ts_collectives_test(partition.${name}.collectives ${file} "${want_collectives}" ${ARGN})
endfunction()
ts_partition_strategy(dus_dynamic "")
ts_partition_strategy(slice_halo "collective-permute 2")
ts_partition_strategy(conv_batch "")
ts_partition_strategy(dot_contracting "all-reduce 1")
ts_partition_strategy(reduce_partial "all-reduce 1")
ts_partition_strategy(gather_scatter "all-reduce 1")
ts_partition_strategy(all_to_all_reshard "all-to-all 1")
ts_check_test(partition.dus_dynamic.seed3 ${ts_partition_dir}/dus_dynamic.hlo ok unit --random-inputs 3)
ts_partition_strategy(reduce_scatter "reduce-scatter 1")
ts_partition_strategy(conv_halo "collective-permute 2")
ts_partition_strategy(conv_halo_stride "collective-permute 2")
# A sharding over fewer devices than the program is partitioned for.
ts_cli_test(check_sharding_device_count 2
            "${CMAKE_SOURCE_DIR}/examples/mlp_sharded.hlo:10:3: error: parameter %Arg_0.1: its sharding spans 4 devices, but the program is partitioned for 8"
            check --num-partitions 8 ${CMAKE_SOURCE_DIR}/examples/mlp_sharded.hlo)
# Dot strategies that keep operands in place (partial sums) where that moves
# fewer bytes than gathering them, and reductions that keep their kept dims'
# tiles. Bytes by hand in each module's header comment.
ts_partition_strategy(dot_row_parallel "all-reduce 1 96")
ts_partition_strategy(dot_weight_grad "all-reduce 1 192")
ts_partition_strategy(dot_weight_grad_scatter "reduce-scatter 1 192")
ts_partition_strategy(reduce_keep_tiles "all-reduce 1 32")
# The MLP training step (examples/, data 2 x model 2; 8 devices: 2 x 4).
# By hand, 4 devices: all-reduces of the row-parallel output f32[32,16]
# (2048 B), the loss f32[] (4), dW2 f32[256,16] (16384), db2 f32[16] (64),
# db1 f32[256] (1024); the dW1 dot gathers x and its hidden-layer gradient
# on the batch, f32[64,256] each (131072 B), instead of all-reducing
# f32[256,256] (262144 B). tests/examples/examples.cmake checks the numbers.
ts_collectives_test(partition.mlp_train.collectives ${CMAKE_SOURCE_DIR}/examples/mlp_train.hlo
                    "all-reduce 5 19524,all-gather 2 131072" --num-partitions 4)
# 8 devices: f32[32,16] 2048, f32[] 4, f32[128,16] 8192, f32[16] 64,
# f32[128] 512; gathers f32[64,256] 65536 and f32[64,128] 32768.
ts_collectives_test(partition.mlp_train_8.collectives ${CMAKE_SOURCE_DIR}/examples/mlp_train_8.hlo
                    "all-reduce 5 10820,all-gather 2 98304")
# Windowed einsum (tests/partition/windowed_*.hlo, bytes by hand in each
# header): at XLA's default threshold (256 MiB) these small dots gather or
# reduce-scatter; at 0 MiB they loop (one collective-permute per step, the
# table counting a loop body once), unrolled, or bidirectional. Each test
# also requires `tessera check` to match.
# ts_windowed_test(CASE DEFAULT PLAIN UNROLLED BIDIRECTIONAL)
function(ts_windowed_test case want_default want_plain want_unroll want_bidir)
  set(file ${ts_partition_dir}/windowed_${case}.hlo)
  set(w0 --threshold-for-windowed-einsum-mib=0)
  ts_collectives_test(partition.windowed.${case}.default ${file} "${want_default}")
  ts_collectives_test(partition.windowed.${case}.plain ${file} "${want_plain}" ${w0})
  ts_collectives_test(partition.windowed.${case}.unrolled ${file} "${want_unroll}" ${w0} --unroll-windowed-einsum)
  ts_collectives_test(partition.windowed.${case}.bidirectional ${file} "${want_bidir}" ${w0}
                      --bidirectional-windowed-einsum --random-inputs 3)
endfunction()
ts_windowed_test(gather_contracting "all-gather 1 128" "collective-permute 1 32" "collective-permute 2 64"
                 "collective-permute 3 96")
ts_windowed_test(gather_free "all-gather 1 512" "collective-permute 1 128" "collective-permute 2 256"
                 "collective-permute 3 384")
ts_windowed_test(gather_batch "all-gather 1 192" "collective-permute 1 48" "collective-permute 2 96"
                 "collective-permute 3 144")
ts_windowed_test(gather_groups "all-gather 1 128" "collective-permute 1 64" "collective-permute 2 128"
                 "collective-permute 3 192")
ts_windowed_test(gather_partial "all-reduce 1 512,all-gather 1 256" "all-reduce 1 512,collective-permute 1 128"
                 "all-reduce 1 512,collective-permute 2 256" "all-reduce 1 512,collective-permute 3 384")
ts_windowed_test(scatter "reduce-scatter 1 384" "collective-permute 1 96" "collective-permute 3 288"
                 "collective-permute 3 288")
ts_windowed_test(scatter_uneven "all-reduce 1 480" "collective-permute 1 144" "collective-permute 3 432"
                 "collective-permute 3 432")
ts_windowed_test(scatter_groups "reduce-scatter 1 96" "collective-permute 1 48" "collective-permute 3 144"
                 "collective-permute 3 144")
ts_windowed_test(scatter_permuted "all-reduce 1 384" "collective-permute 1 96" "collective-permute 3 288"
                 "collective-permute 3 288")
ts_windowed_test(ring_odd "all-gather 1 72" "collective-permute 1 24" "collective-permute 1 24"
                 "collective-permute 1 24")
# The corpus cases XLA runs as windowed einsum, against its expectations
# (expectations.jsonl): 070 an all-to-all then a loop whose result is the
# root, f32[4096,1088]; 082 (unrolled) and 083 (bidirectional) a root add
# of f32[320,7,39296] with three collective-permutes (two in the loop body,
# one at the root).
function(ts_windowed_corpus_test name file root count)
  add_test(NAME partition.windowed.corpus.${name}
           COMMAND sh ${ts_partition_dir}/windowed_structure.sh $<TARGET_FILE:tessera> ${spmd_dir}/${file} "${root}"
                   ${count} ${ARGN})
  set_tests_properties(partition.windowed.corpus.${name} PROPERTIES LABELS corpus TIMEOUT 60 SKIP_RETURN_CODE 77)
endfunction()
ts_windowed_corpus_test(070 070_windowed_einsum_two_contracting_dims_rhs_reshard.hlo
                        "^= f32\\[4096,1088\\] get-tuple-element\\(" 1 --num-partitions 2
                        --threshold-for-windowed-einsum-mib=0)
ts_windowed_corpus_test(082 082_unrolled_einsum_rhs_windowed_in_contracting_out_non_contracting_partitioned.hlo
                        "^= f32\\[320,7,39296\\] add\\(" 3 --num-partitions 4 --unroll-windowed-einsum)
ts_windowed_corpus_test(083 083_bidirectional_einsum_rhs_windowed_in_contracting_out_non_contracting_partitioned.hlo
                        "^= f32\\[320,7,39296\\] add\\(" 3 --num-partitions 4 --bidirectional-windowed-einsum)
# Reduce-window along a tiled dim: halo exchange (collective-permutes of the
# rows the windows reach into), border padding read as the init value.
ts_partition_strategy(reduce_window_halo "collective-permute 2 64")
ts_partition_strategy(reduce_window_halo_uneven "collective-permute 1 36")
ts_check_test(partition.reduce_window_halo_uneven.seed5 ${ts_partition_dir}/reduce_window_halo_uneven.hlo ok unit
              --random-inputs 5)
# Corpus cases whose bytes per device now equal XLA's (expectations.jsonl):
# the collectives table must show XLA's count and bytes.
# ts_xla_bytes_test(CASE FILE WANT [CHECK FLAGS...])
function(ts_xla_bytes_test case file want)
  if(EXISTS ${spmd_dir}/${file})
    ts_collectives_test(partition.xla_bytes.${case} ${spmd_dir}/${file} "${want}" ${ARGN})
  endif()
endfunction()
# 019: two collective-permutes of f32[1,2]; 020: f32[1,2] from two away and
# f32[2,2] from the neighbour.
ts_xla_bytes_test(019 019_reduce_window_tiled_two_side_halo.hlo "collective-permute 2 16" --num-partitions 2)
ts_xla_bytes_test(020 020_reduce_window_tiled_one_side_halo_beyond_neighbor.hlo "collective-permute 2 24"
                  --num-partitions 5)
# Concatenate along a tiled dim: operand shards written into a zero buffer
# of the whole dim, one all-reduce over the dim's devices, a dynamic-slice.
ts_partition_strategy(concat_sum "all-reduce 1 168")
ts_partition_strategy(concat_sum_s32 "all-reduce 1 384,collective-permute 3 96")
ts_check_test(partition.concat_sum.seed4 ${ts_partition_dir}/concat_sum.hlo ok unit --random-inputs 4)
# 028: one all-reduce of f32[7,374].
ts_xla_bytes_test(028 028_concatenate_along_both_dimensions.hlo "all-reduce 1 10472" --num-partitions 4)
# Halo exchange moves, per shift, only the rows some device reads.
ts_partition_strategy(slice_halo_middle "collective-permute 2 108")
# 136: the two source elements by two collective-permutes of f32[1] (8 B;
# XLA moves f32[2] and f32[1], 12 B).
ts_xla_bytes_test(136 136_slice_to_middle2.hlo "collective-permute 2 8" --num-partitions 8)
# Pad along a tiled dim: halo exchange, the padding value outside the input.
ts_partition_strategy(pad_halo "collective-permute 2 32")
ts_partition_strategy(pad_halo_negative "collective-permute 1 36")
ts_check_test(partition.pad_halo.seed6 ${ts_partition_dir}/pad_halo.hlo ok unit --random-inputs 6)
# Weight-gradient convolutions with the summed spatial dim tiled: halo on
# the lhs (XLA's default) or, allowed by the flag, on the smaller kernel;
# partial results all-reduced.
ts_partition_strategy(conv_contract "all-reduce 1 120,collective-permute 2 160")
ts_collectives_test(partition.conv_contract.rhs_halo ${ts_partition_dir}/conv_contract.hlo
                    "all-reduce 1 120,collective-permute 2 64" --conv-halo-exchange-always-on-lhs=false)
ts_check_test(partition.conv_contract.rhs_halo_check ${ts_partition_dir}/conv_contract.hlo ok unit
              --conv-halo-exchange-always-on-lhs=false --random-inputs 2)
# 025: kernel halos f32[32,1,28,64] both sides and an all-reduce of
# f32[3,3,128,64].
ts_xla_bytes_test(025 025_convolution_lhs_tiled_rhs_tiled_with_padding.hlo "all-reduce 1 294912,collective-permute 2 458752"
                  --num-partitions 2 --conv-halo-exchange-always-on-lhs=false)
ts_partition_strategy(conv_contract_scatter "reduce-scatter 1 144,collective-permute 2 192")
