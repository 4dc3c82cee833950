# Manual and subgroup-manual regions, and collectives the user wrote
# (partitioner/manual.c; the reference's region boundaries in
# interp/eval.c), and argmax-style reduces (partitioner/reduce.c). Included after partition.cmake: uses its
# ts_partition_strategy / ts_collectives_test / ts_xla_bytes_test. Each
# module is checked numerically by `tessera check` and must show the
# collectives its header works out by hand.

# Variadic argmax reduce inside a subgroup-manual region: partial results
# gathered inside each manual group (2 and 4 devices per group), never the
# operands.
ts_partition_strategy(manual_tuple_reduce_2 "all-gather 2 96")
ts_partition_strategy(manual_tuple_reduce_4 "all-gather 2 64")
ts_check_test(partition.manual_tuple_reduce_2.seed3 ${ts_partition_dir}/manual_tuple_reduce_2.hlo ok unit
              --random-inputs 3)
# A user all-reduce across manual groups stays on the shard (iota and
# explicit groups); one whose groups join different tiles gathers first.
ts_partition_strategy(manual_all_reduce_iota "all-reduce 1 48")
ts_partition_strategy(manual_all_reduce_explicit "all-reduce 1 48")
ts_partition_strategy(manual_all_reduce_cross_tiles "all-reduce 1 48,all-gather 1 48")
# A cross-replica all-reduce on a tiled operand stays on the shard.
ts_partition_strategy(manual_tiled_all_reduce "all-reduce 1 48")
ts_partition_strategy(manual_tiled_all_reduce_iota "all-reduce 1 40")

# Corpus cases at XLA's bytes (expectations.jsonl). 058: XLA all-reduces a
# dynamic-update-slice of the partials into f32[28,2] and s32[28,2] (448 B);
# ours all-gathers the same [28,2] buffers. 142: the f32[1,2] shard
# all-reduced with the user's two groups. 011: the f32[2,3] shard.
ts_xla_bytes_test(058 058_tuple_reduce_subgroup_manual.hlo "all-gather 2 448" --num-partitions 4)
ts_xla_bytes_test(142 142_subgroup_manual_all_reduce.hlo "all-reduce 1 8" --num-partitions 4)
ts_xla_bytes_test(011 011_tiled_all_reduce.hlo "all-reduce 1 24" --num-partitions 2)

# Subgroup-manual regions entered with SPMDFullToShardShape from a value
# tiled on the dim the region then reduces (2 and 4 devices per manual
# group; interleaved and contiguous group tiles): the reference cuts each
# group's copy from its members' shards. Each device sums its shard; one
# all-reduce inside each group.
ts_partition_strategy(manual_region_reduce_4 "all-reduce 1 16" --num-partitions 4)
ts_partition_strategy(manual_region_reduce_8 "all-reduce 1 8" --num-partitions 8)
ts_check_test(partition.manual_region_reduce_4.seed7 ${ts_partition_dir}/manual_region_reduce_4.hlo ok unit
              --num-partitions 4 --random-inputs 7)
ts_check_test(partition.manual_region_reduce_8.seed7 ${ts_partition_dir}/manual_region_reduce_8.hlo ok unit
              --num-partitions 8 --random-inputs 7)
# The reference's answer itself, against goldens summed by hand
# (tests/partition/manual_golden.py).
foreach(case manual_region_reduce_4 manual_region_reduce_8)
  add_test(NAME partition.${case}.golden
           COMMAND sh ${ts_partition_dir}/manual_golden.sh $<TARGET_FILE:tessera> $<TARGET_FILE:npy_allclose>
                   ${ts_partition_dir}/manual_golden/${case} ${ts_partition_dir}/${case}.hlo)
  set_tests_properties(partition.${case}.golden PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

# Argmax-style reduces over a tiled dim outside manual regions
# (partitioner/reduce.c): each device reduces its shard, the partial
# results (not the operands) are gathered along a new minor dim and reduced
# again, where that moves fewer bytes; bytes by hand in each header. Uneven
# tiles read their padding as the init value: the inputs are chosen so that
# a zero there would win every row.
ts_partition_strategy(argmax_tiled_2 "all-gather 2 128" --num-partitions 2)
ts_partition_strategy(argmax_tiled_4 "all-gather 2 64" --num-partitions 4)
ts_partition_strategy(argmax_argmin_uneven_2 "all-gather 2 96" --num-partitions 2)
ts_partition_strategy(argmax_uneven_4 "all-gather 2 128" --num-partitions 4)
foreach(case argmax_tiled_4 argmax_argmin_uneven_2 argmax_uneven_4)
  ts_check_test(partition.${case}.seed3 ${ts_partition_dir}/${case}.hlo ok unit --random-inputs 3)
endforeach()
