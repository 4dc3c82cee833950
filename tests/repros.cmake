# Defects found by running XLA's own tests (../shared/corpus/xla_tests/repros),
# each fixed with a module of its own that failed before the fix.
# reduce-window padding on a tiled dim contributes nothing, whatever the init:
ts_partition_strategy(rw_pad_init_add "collective-permute 2 8")
ts_partition_strategy(rw_pad_init_mul_s32 "collective-permute 2")
ts_check_test(partition.rw_pad_init_mul_s32.seed4 ${ts_partition_dir}/rw_pad_init_mul_s32.hlo ok unit --random-inputs 4)
ts_check_test(partition.rw_pad_init_custom ${ts_partition_dir}/rw_pad_init_custom.hlo ok unit)
# a scalar constant inside a manual region keeps its literal:
ts_check_test(partition.manual_scalar_const ${ts_partition_dir}/manual_scalar_const.hlo ok unit)
# a copy of a tuple runs in the reference interpreter (leaf by leaf):
ts_check_test(partition.tuple_copy ${ts_partition_dir}/tuple_copy.hlo ok unit --num-partitions 2)
ts_check_test(partition.tuple_copy.one_partition ${ts_partition_dir}/tuple_copy.hlo ok unit --num-partitions 1)
# check --num-partitions 1: every sharding means the whole value on one device
ts_check_test(partition.mlp_sharded.one_partition ${CMAKE_SOURCE_DIR}/examples/mlp_sharded.hlo ok unit --num-partitions 1)
# a cross-partition all-reduce on a tiled value outside a manual region is an
# error, as in XLA (it was partitioned and summed across partitions)
ts_cli_test(repro_cross_partition_all_reduce 2
            "${CMAKE_CURRENT_SOURCE_DIR}/run/modules/cross_partition_all_reduce.hlo:12:8: error: all-reduce %ar: a cross-partition all-reduce (channel_id) on a tiled value must be in a (partial) manual partitioning region (mark its operand manual with SPMDFullToShardShape, or drop channel_id)"
            check --num-partitions 2 ${CMAKE_CURRENT_SOURCE_DIR}/run/modules/cross_partition_all_reduce.hlo)
# per-device dumps (entry *_spmd) run as written, never partitioned again;
# --no-partition forces it; check says why it cannot check them (exit 3)
set(ts_run_modules ${CMAKE_CURRENT_SOURCE_DIR}/run/modules)
ts_job_test(run.per_device_dump.devices2 unit ok,match 0 --devices 2 --check ${ts_run_modules}/per_device_dump_spmd.hlo)
ts_job_test(run.no_partition.compile_only unit "ok,out=per-device program" 0 --compile-only
            --no-partition ${ts_run_modules}/per_device_dump_plain.hlo)
ts_job_test(run.no_partition.run unit ok,match 0 --devices 2 --check --no-partition
            ${ts_run_modules}/per_device_dump_plain.hlo)
ts_cli_test(check_per_device_dump 3
            "tessera check: error: ${ts_run_modules}/per_device_dump_spmd.hlo is already a per-device program (entry main.1_spmd, as XLA names it after SPMD partitioning): it has no one-device meaning to check against (run it with tessera run --check)"
            check ${ts_run_modules}/per_device_dump_spmd.hlo)
# custom-calls: XLA's TopK runs (values and indices worked out by hand in the
# module: it counts the wrong elements), placement annotations pass through,
# vendor-library targets are exit 3 naming the target
ts_job_test(run.topk_custom_call unit "ok,out=min 0 max 0" 0 --devices 1 ${ts_run_modules}/topk_custom_call.hlo)
ts_job_test(run.topk_custom_call.check unit ok,match 0 --devices 2 --check ${ts_run_modules}/topk_custom_call.hlo)
ts_job_test(run.annotate_device_placement unit "ok,out=min 7 max 7" 0 --devices 1 ${ts_run_modules}/annotate_device_placement.hlo)
ts_job_test(run.vendor_custom_call unit "rc=3:custom-call target \"__cublas$lt$matmul\" calls a GPU/vendor library: it cannot run here" 0
            --devices 1 ${ts_run_modules}/vendor_custom_call.hlo)
