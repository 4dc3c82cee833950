# Halo exchange where XLA uses one instead of gathering: convolutions with
# parallel (batch-like) spatial dims next to a windowed one, and reshards
# between two tilings of one dim (partial replication to tiling). Uses
# partition.cmake's functions; bytes by hand in each module's header.

# Parallel spatial dims: split like batch dims, no halo on them.
ts_partition_strategy(halo_conv_parallel_2 "" --random-inputs 1)
ts_partition_strategy(halo_conv_parallel_4 "collective-permute 2 144")
ts_partition_strategy(halo_conv_parallel_kernel_tiled "all-gather 1 576,collective-permute 2 144")
ts_partition_strategy(halo_conv_parallel_rhs_dilate "")
ts_partition_strategy(halo_conv_window1 "collective-permute 2 144")
ts_check_test(partition.halo_conv_parallel_4.seed7 ${ts_partition_dir}/halo_conv_parallel_4.hlo ok unit
              --random-inputs 7)
# 016: lhs halos f32[16,2,12,24,32] and f32[16,3,12,24,32], the kernel
# gathered on its windowed dim to f32[16,6,6,16,32] (XLA: an all-reduce of
# that shape; here an all-gather counted at its result).
ts_xla_bytes_test(016 016_conv_with_parallel_dim_and_non_parallel_spatial_dim_partitioned.hlo
                  "all-gather 1 1179648,collective-permute 2 2949120" --num-partitions 4)
# 3 s here, past the 60 s timeout at -O0 under ASan: heavy, as its runtime test.
if(TEST partition.xla_bytes.016)
  set_tests_properties(partition.xla_bytes.016 PROPERTIES LABELS "unit;heavy")
endif()

# Reshards between two tilings of one dim: the rows a device lacks come by
# collective-permute from a holder of their source tile.
ts_partition_strategy(halo_reshard_partial "collective-permute 1 16")
ts_partition_strategy(halo_reshard_rounds "collective-permute 3 72")
ts_partition_strategy(halo_reshard_permuted "collective-permute 1 36")
ts_partition_strategy(halo_reshard_two_dims "collective-permute 1 8")
ts_check_test(partition.halo_reshard_rounds.seed3 ${ts_partition_dir}/halo_reshard_rounds.hlo ok unit
              --random-inputs 3)
# 121: f32[1,3] from the right neighbour's source tile, as XLA.
ts_xla_bytes_test(121 121_elementwise_test_partial_replicate_to_tiled_halo_exchange.hlo "collective-permute 1 12"
                  --num-partitions 4)
