# Partial replication to a moved tiling (partitioner/reshard.c,
# slice_then_all_to_all): a value tiled on one dim and replicated over the
# rest of the devices, wanted tiled on other dims, takes a local
# dynamic-slice and one all-to-all instead of an all-gather and a slice.
# Bytes by hand in each module's header. Included after partition.cmake:
# uses ts_partition_strategy, ts_check_test and ts_collectives_test.

ts_partition_strategy(reshard_after_reduce "all-reduce 1 192,all-to-all 1 96")
ts_check_test(partition.reshard_after_reduce.seed2 ${ts_partition_dir}/reshard_after_reduce.hlo ok unit
              --random-inputs 2)
ts_partition_strategy(reshard_after_dot "all-reduce 1 512,all-to-all 1 256")
ts_collectives_test(partition.reshard_after_dot.faster ${ts_partition_dir}/reshard_after_dot.hlo
                    "all-reduce 1 512,all-to-all 1 256" --choose-faster-windowed-einsum-over-mem)

# Corpus 134 (expectations.jsonl): XLA's all-reduce of the local dot
# f32[16,32,24,1024] (50331648 B) and one all-to-all of f32[32,16,24,512]
# (25165824 B), the root a reshape to f32[32,16,24,512].
set(case134 ${TESSERA_SHARED_DIR}/corpus/xla_spmd/134_partition_dot_group_on_batch_contracting_reshard.hlo)
set(flags134 --num-partitions 4 --choose-faster-windowed-einsum-over-mem)
if(EXISTS ${case134})
  ts_collectives_test(partition.xla_collectives.134 ${case134} "all-reduce 1 50331648,all-to-all 1 25165824"
                      ${flags134})
else()
  add_test(NAME partition.xla_collectives.134 COMMAND sh -c "echo 'skipped: ${case134} not found'; exit 77")
  set_tests_properties(partition.xla_collectives.134 PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
endif()
string(REPLACE ";" " " flags134_text "${flags134}")
add_test(NAME partition.xla_collectives.134.root
         COMMAND sh -c "[ -f \"$2\" ] || { echo \"skipped: $2 not found\"; exit 77; }; \
                        out=$(\"$1\" opt --stage=partitioned ${flags134_text} \"$2\") || exit 1; \
                        root=$(printf '%s\\n' \"$out\" | grep '^  ROOT ' | tail -1); \
                        case \"$root\" in *' = f32[32,16,24,512] reshape('*) ;; \
                        *) echo \"entry root: '$root', want a reshape to f32[32,16,24,512]\"; exit 1;; esac"
                 _ $<TARGET_FILE:tessera> ${case134})
set_tests_properties(partition.xla_collectives.134.root PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)
