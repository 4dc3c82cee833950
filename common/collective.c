/* Collective kinds and XLA's replica-group modes (ts_collective.h). */
#include "ts_collective.h"

#include <string.h>

static const char *const kind_names[TS_COLL_KIND_COUNT] = {
    "all-reduce",         "all-gather",        "reduce-scatter",    "all-to-all",
    "collective-permute", "collective-broadcast", "ragged-all-to-all", "collective-reduce",
    "broadcast",          "send",              "recv",              "barrier"};

const char *ts_coll_kind_name(ts_coll_kind_t k) { return (unsigned)k < TS_COLL_KIND_COUNT ? kind_names[k] : "?"; }

bool ts_coll_kind_from_name(const char *s, ts_coll_kind_t *out) {
  for (int i = 0; i < TS_COLL_KIND_COUNT; i++)
    if (strcmp(s, kind_names[i]) == 0) {
      *out = (ts_coll_kind_t)i;
      return true;
    }
  return false;
}

ts_coll_group_mode_t ts_coll_group_mode(ts_coll_kind_t kind, bool has_channel_id, bool use_global_device_ids) {
  if (!has_channel_id) return TS_COLL_CROSS_REPLICA;
  if (use_global_device_ids) return TS_COLL_FLATTENED_ID;
  switch (kind) {
  case TS_COLL_ALL_TO_ALL:
  case TS_COLL_RAGGED_ALL_TO_ALL:
  case TS_COLL_COLLECTIVE_PERMUTE:
  case TS_COLL_COLLECTIVE_BROADCAST: return TS_COLL_CROSS_PARTITION;
  default: return TS_COLL_CROSS_REPLICA_AND_PARTITION;
  }
}

int64_t ts_coll_group_id_space(ts_coll_group_mode_t mode, int64_t replicas, int64_t partitions) {
  return mode == TS_COLL_CROSS_PARTITION ? partitions : mode == TS_COLL_FLATTENED_ID ? replicas * partitions : replicas;
}

const char *ts_coll_group_id_noun(ts_coll_group_mode_t mode) {
  return mode == TS_COLL_CROSS_PARTITION ? "partitions" : mode == TS_COLL_FLATTENED_ID ? "devices" : "replicas";
}

int64_t ts_coll_group_id_of(ts_coll_group_mode_t mode, int64_t partitions, int64_t d) {
  return mode == TS_COLL_CROSS_PARTITION ? d % partitions : mode == TS_COLL_FLATTENED_ID ? d : d / partitions;
}

int64_t ts_coll_group_devices_per_id(ts_coll_group_mode_t mode, int64_t partitions) {
  return mode == TS_COLL_CROSS_REPLICA_AND_PARTITION ? partitions : 1;
}

int64_t ts_coll_group_device(ts_coll_group_mode_t mode, int64_t partitions, int64_t d, int64_t id) {
  switch (mode) {
  case TS_COLL_CROSS_PARTITION: return d / partitions * partitions + id;
  case TS_COLL_FLATTENED_ID: return id;
  default: return id * partitions + d % partitions;
  }
}

int64_t ts_coll_group_devices(ts_coll_group_mode_t mode, int64_t partitions, int64_t d, const int64_t *ids,
                              int64_t n, int64_t *out) {
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t id = ids ? ids[i] : i;
    if (mode == TS_COLL_CROSS_REPLICA_AND_PARTITION)
      for (int64_t q = 0; q < partitions; q++) out[k++] = id * partitions + q;
    else
      out[k++] = ts_coll_group_device(mode, partitions, d, id);
  }
  return k;
}
