/* The SPMD partitioner (placeholder while the core is written). */
#include "ts_partitioner.h"

void ts_partition_opts_default(ts_partition_opts_t *o) {
  *o = (ts_partition_opts_t){0};
  o->threshold_for_windowed_einsum_mib = -1;
  o->conv_halo_exchange_always_on_lhs = true;
}

ts_status_t ts_partition(ts_hlo_module_t *m, const ts_partition_opts_t *opts, ts_hlo_module_t **out,
                         ts_diag_t *diag) {
  (void)m;
  (void)opts;
  *out = NULL;
  ts_diag_plain(diag, "the partitioner is not written yet");
  return TS_ERR_UNSUPPORTED;
}
