# select-and-scatter along a tiled dim by halo exchange
# (partitioner/select_scatter.c): each module must match the reference
# interpreter AND move exactly the collective-permutes its header works out
# by hand (count and bytes per device), so a fall-back to gathering fails.
ts_partition_strategy(sas_pool2 "")
ts_partition_strategy(sas_window3_stride2 "collective-permute 3 32")
ts_partition_strategy(sas_stride1 "collective-permute 4 24")
ts_partition_strategy(sas_uneven "collective-permute 3 36")
ts_partition_strategy(sas_uneven_stride2 "collective-permute 3 16")
ts_partition_strategy(sas_gaps "collective-permute 1 16")
ts_partition_strategy(sas_maxpool_nhwc "collective-permute 3 1792")
# Padding never selected: a select with no safe padding value and a
# scatter that is not add; real -inf and NaN at the edges; s32 with a
# dilated window.
ts_partition_strategy(sas_custom_select "collective-permute 4 32")
ts_partition_strategy(sas_inf_nan "collective-permute 3 16")
ts_partition_strategy(sas_s32_window_dilated "collective-permute 4 48")
ts_check_test(partition.sas_uneven.seed3 ${ts_partition_dir}/sas_uneven.hlo ok unit --random-inputs 3)
ts_check_test(partition.sas_custom_select.seed5 ${ts_partition_dir}/sas_custom_select.hlo ok unit --random-inputs 5)
ts_check_test(partition.sas_s32_window_dilated.seed2 ${ts_partition_dir}/sas_s32_window_dilated.hlo ok unit
              --random-inputs 2)
# Two tiled windowed dims: the fall-back (gather) must still match.
ts_check_test(partition.sas_two_dims ${ts_partition_dir}/sas_two_dims.hlo ok unit)
