/* The vocabulary of collectives that the IR passes, the cost model, the
 * scheduler, the collectives library and the hang detector share: one enum
 * of collective kinds with one name table, and XLA's replica-group modes
 * with the one implementation of how a mode reads the ids of replica_groups
 * (XLA's CollectiveOpGroupMode, shared/reference/hlo_text_format.md §7). */
#ifndef TS_COLLECTIVE_H
#define TS_COLLECTIVE_H

#include <stdbool.h>
#include <stdint.h>

/* The kinds, named as XLA's opcodes. The order is part of the contract:
 * every prefix below is one module's range (arrays are indexed by kind). */
typedef enum {
  TS_COLL_ALL_REDUCE,
  TS_COLL_ALL_GATHER,
  TS_COLL_REDUCE_SCATTER,
  TS_COLL_ALL_TO_ALL,
  TS_COLL_COLLECTIVE_PERMUTE,   /* the cost model's kinds end here */
  TS_COLL_COLLECTIVE_BROADCAST, /* the scheduler's resources end here */
  TS_COLL_RAGGED_ALL_TO_ALL,
  TS_COLL_COLLECTIVE_REDUCE,    /* the HLO collectives end here */
  /* The collectives library's point-to-point and rooted operations. */
  TS_COLL_BROADCAST,            /* from an explicit root (ncclBroadcast, MPI_Bcast) */
  TS_COLL_SEND,
  TS_COLL_RECV,
  TS_COLL_BARRIER,
  TS_COLL_KIND_COUNT
} ts_coll_kind_t;

/* "all-reduce", "collective-permute", "broadcast", ...; "?" out of range. */
const char *ts_coll_kind_name(ts_coll_kind_t k);
/* Exact spelling -> kind; false when `s` names none. */
bool ts_coll_kind_from_name(const char *s, ts_coll_kind_t *out);

/* How the ids in replica groups are read. Devices are numbered
 * d = replica * num_partitions + partition. */
typedef enum {
  TS_COLL_CROSS_REPLICA,               /* ids are replicas; one group per partition */
  TS_COLL_CROSS_PARTITION,             /* ids are partitions; within each replica */
  TS_COLL_CROSS_REPLICA_AND_PARTITION, /* ids are replicas; each group spans all partitions */
  TS_COLL_FLATTENED_ID,                /* ids are global device ids */
} ts_coll_group_mode_t;

/* XLA's GetCollectiveOpGroupMode: no channel_id is cross-replica; with one,
 * use_global_device_ids=true is flattened ids; otherwise the kinds that take
 * no use_global_device_ids (all-to-all, ragged-all-to-all,
 * collective-permute, collective-broadcast) are cross-partition and the
 * others cross-replica-and-partition. */
ts_coll_group_mode_t ts_coll_group_mode(ts_coll_kind_t kind, bool has_channel_id, bool use_global_device_ids);

/* How many ids the mode's space holds: replicas, partitions or devices. */
int64_t ts_coll_group_id_space(ts_coll_group_mode_t mode, int64_t replicas, int64_t partitions);
/* What those ids are, plural, for messages: "replicas", "partitions", "devices". */
const char *ts_coll_group_id_noun(ts_coll_group_mode_t mode);
/* Device d's own id in the mode's space. */
int64_t ts_coll_group_id_of(ts_coll_group_mode_t mode, int64_t partitions, int64_t d);
/* Devices of d's group per id: 1, or every partition (cross-replica-and-partition). */
int64_t ts_coll_group_devices_per_id(ts_coll_group_mode_t mode, int64_t partitions);
/* The device that id `id` names in device d's group (the coordinate the
 * mode does not name is d's; cross-replica-and-partition: d's partition). */
int64_t ts_coll_group_device(ts_coll_group_mode_t mode, int64_t partitions, int64_t d, int64_t id);
/* Device d's group as devices, in XLA's order, from the n ids of the id
 * group that holds d's id (ids NULL: the ids 0..n-1), writes
 * n * ts_coll_group_devices_per_id devices to out and returns that count.
 * Ids are not range-checked. */
int64_t ts_coll_group_devices(ts_coll_group_mode_t mode, int64_t partitions, int64_t d, const int64_t *ids,
                              int64_t n, int64_t *out);

#endif
