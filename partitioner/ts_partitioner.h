/* Tessera partitioner: turns a module written for one big logical device,
 * with sharding annotations, into the one program every device runs (GSPMD,
 * arXiv 2105.04663): each value becomes its per-device shard, and
 * collectives move data where an operation needs it. */
#ifndef TS_PARTITIONER_H
#define TS_PARTITIONER_H

#include "ts_common.h"
#include "ts_hlo.h"

typedef struct {
  int64_t num_partitions; /* devices; 0: the module's num_partitions */
  /* XLA's SpmdPartitionerOptions, named alike. Accepted for every flag;
   * what each changes is said where it is used. */
  int64_t threshold_for_windowed_einsum_mib; /* -1: XLA's default */
  bool unroll_windowed_einsum;
  bool bidirectional_windowed_einsum;
  bool conv_halo_exchange_always_on_lhs;   /* XLA's default: true */
  bool choose_faster_windowed_einsum_over_mem;
} ts_partition_opts_t;

/* XLA's defaults for the options above. */
void ts_partition_opts_default(ts_partition_opts_t *o);

/* Partitions a verified module. Instructions without a sharding get one
 * from ts_sharding_propagate first (which writes them into `m`). *out is a
 * new module (num_partitions = N, replica_count 1) whose entry parameters
 * and result are per-device shards of the original ones under the
 * original parameter and root shardings; it verifies (the compile driver,
 * pipeline/, checks that once per compile: not here too). Errors name the
 * instruction: TS_ERR_INVALID_ARGUMENT for shardings that do not fit the
 * device count, TS_ERR_UNSUPPORTED for what the partitioner cannot do yet. */
ts_status_t ts_partition(ts_hlo_module_t *m, const ts_partition_opts_t *opts, ts_hlo_module_t **out,
                         ts_diag_t *diag);

/* Whether m is already a per-device program, as XLA dumps one after its
 * SPMD partitioner (which names the entry "<name>_spmd"): such a module
 * runs as written on every device and is never partitioned again. */
bool ts_partition_is_per_device(const ts_hlo_module_t *m);

#endif
