# --choose-faster-windowed-einsum-over-mem (XLA's
# choose_faster_windowed_einsum_over_mem): where a dot could run as a
# windowed loop (above --threshold-for-windowed-einsum-mib), the partitioner
# takes the way estimated fastest by a nominal time model (partitioner/
# windowed.c) instead of the one moving the fewest bytes. Each module's
# header works the bytes and times out by hand. Included after
# partition.cmake: uses ts_check_test and ts_collectives_test.

set(ts_faster --choose-faster-windowed-einsum-over-mem)
set(ts_w0 --threshold-for-windowed-einsum-mib=0)

# A small dot: the memory-saving all-to-all + reduce-scatter (a loop at
# threshold 0) gives way to one plain all-gather under the option.
set(file ${ts_partition_dir}/faster_gather_over_scatter.hlo)
ts_collectives_test(partition.faster.gather_over_scatter.default ${file} "reduce-scatter 1 2048,all-to-all 1 512")
ts_collectives_test(partition.faster.gather_over_scatter.w0 ${file} "all-to-all 1 512,collective-permute 1 512"
                    ${ts_w0})
ts_collectives_test(partition.faster.gather_over_scatter.faster ${file} "all-gather 1 16384" ${ts_w0} ${ts_faster})
ts_check_test(partition.faster.gather_over_scatter.faster.seed3 ${file} ok unit ${ts_w0} ${ts_faster}
              --random-inputs 3)
# Below the threshold no loop is possible: the option changes nothing.
ts_collectives_test(partition.faster.gather_over_scatter.below_threshold ${file}
                    "reduce-scatter 1 2048,all-to-all 1 512" ${ts_faster})

# The windowed modules of partition.cmake at threshold 0: their loops cost
# a step's latency each for nothing to hide behind; under the option the
# plain all-gather / reduce-scatter (their bytes as in their headers) runs.
ts_collectives_test(partition.faster.windowed_gather_contracting
                    ${ts_partition_dir}/windowed_gather_contracting.hlo "all-gather 1 128" ${ts_w0} ${ts_faster})
ts_collectives_test(partition.faster.windowed_scatter ${ts_partition_dir}/windowed_scatter.hlo
                    "reduce-scatter 1 384" ${ts_w0} ${ts_faster})
ts_collectives_test(partition.faster.windowed_scatter.bidirectional ${ts_partition_dir}/windowed_scatter.hlo
                    "reduce-scatter 1 384" ${ts_w0} ${ts_faster} --bidirectional-windowed-einsum)

# A large dot, partitioned and verified only (20 GiB of parameters: `check`
# exits 3 under --max-memory 1G): compute hides the transfers, and the
# all-gather loop beats the reduce-scatter loop that moves fewer bytes.
# ts_faster_large_test(NAME WANT [CHECK FLAGS...]): exit 3, collectives WANT.
function(ts_faster_large_test name want)
  string(REPLACE ";" " " flags "${ARGN}")
  add_test(NAME partition.faster.large_gather_loop.${name}
           COMMAND sh -c "out=$($<TARGET_FILE:tessera> check --max-memory 1G ${flags} \
                            ${ts_partition_dir}/faster_large_gather_loop.hlo); rc=$?; \
                          [ $rc = 3 ] || { echo \"exit $rc, want 3\"; exit 1; }; \
                          got=$(printf '%s\\n' \"$out\" | awk '/^  (all|collective|reduce)/ {print $1, $2, $3}' | \
                                paste -sd, -); \
                          [ \"$got\" = \"$1\" ] || { echo \"collectives: '$got', want '$1'\"; exit 1; }" _ "${want}")
  set_tests_properties(partition.faster.large_gather_loop.${name} PROPERTIES LABELS unit TIMEOUT 60)
endfunction()
ts_faster_large_test(default "all-to-all 1 1073741824,collective-permute 1 1073741824")
ts_faster_large_test(faster "collective-permute 1 4294967296" ${ts_faster})

# Corpus 134 (XLA's test runs it with the option): below the threshold the
# option must leave its partitioned module exactly as without it.
set(case134 ${TESSERA_SHARED_DIR}/corpus/xla_spmd/134_partition_dot_group_on_batch_contracting_reshard.hlo)
add_test(NAME partition.faster.corpus134_unchanged
         COMMAND sh -c "[ -f \"$2\" ] || { echo \"skipped: $2 not found\"; exit 77; }; \
                        a=$(\"$1\" opt --stage=partitioned --num-partitions 4 \"$2\") || exit 1; \
                        b=$(\"$1\" opt --stage=partitioned --num-partitions 4 ${ts_faster} \"$2\") || exit 1; \
                        [ -n \"$a\" ] && [ \"$a\" = \"$b\" ] || { echo 'the option changed the module'; exit 1; }"
                 _ $<TARGET_FILE:tessera> ${case134})
set_tests_properties(partition.faster.corpus134_unchanged PROPERTIES LABELS corpus TIMEOUT 60 SKIP_RETURN_CODE 77)
