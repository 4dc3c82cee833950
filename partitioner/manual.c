/* Manual and subgroup-manual regions, and the collectives a user wrote.
 *
 * A manual value is already per-device: its instructions run as written.
 * A subgroup-manual sharding (`last_tile_dims={manual}`) splits the devices
 * into manual groups (same manual-subgroup index); each group holds its own
 * copy of the region's logical arrays and runs the region as an SPMD
 * program over the remaining tile dims. The general handlers stay correct
 * there because the groups they build (ts_part_groups_over_dims) keep the
 * subgroup indices fixed (argmax-style reduces, for one, gather partial
 * results inside each group: reduce.c); the handlers here cover what they
 * would gather.
 *
 * A user's collective names devices, so it means the same on shards as on
 * full values wherever each of its groups combines devices holding the same
 * part of the array: there it runs on the local shard, as XLA's
 * SpmdPartitioningVisitor::HandleAllReduce does. */
#include "partitioner_internal.h"

#include <string.h>

/* Manual: the value is already per-device (every leaf of a tuple). */
static bool is_manual(const ts_sharding_value_t *s) {
  if (!s) return false;
  if (s->kind == TS_SHARD_MANUAL) return true;
  if (s->kind != TS_SHARD_TUPLE || s->ntuple == 0) return false;
  for (int k = 0; k < s->ntuple; k++)
    if (!is_manual(s->tuple[k])) return false;
  return true;
}

/* Whether s (or a leaf of it) tiles with a manual subgroup. */
static bool has_manual_subgroup(const ts_sharding_value_t *s) {
  if (!s) return false;
  if (s->kind == TS_SHARD_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      if (has_manual_subgroup(s->tuple[k])) return true;
    return false;
  }
  if (s->kind != TS_SHARD_TILED) return false;
  for (int k = 0; k < s->nsubgroups; k++)
    if (s->subgroups[k] == TS_SUBGROUP_MANUAL) return true;
  return false;
}

static const char *target_of(const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "custom_call_target");
  return a && a->kind == TS_ATTR_STRING ? a->v.s : "";
}

/* Instructions in manual regions run as written on their local shapes. */
static void manual(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  ts_hlo_instr_t *ops[1024];
  if (i->nops > 1024) {
    ts_part_fail(p, i, TS_ERR_UNSUPPORTED, "more than 1024 operands");
    return;
  }
  for (int k = 0; k < i->nops; k++) {
    const ts_hlo_instr_t *o = i->ops[k];
    ops[k] = is_manual(p->sh[o->id]) ? p->val[o->id] : ts_part_operand(p, i, k, ts_part_replicated(p));
  }
  ts_hlo_instr_t *r = ts_part_emit_like(p, i, ops, ts_part_full_shape(p, i->shape));
  ts_part_set(p, i, r, s);
}

/* The region boundaries and sharding constraints. SPMDFullToShardShape's
 * result is its operand's shard, reshaped when a fully manual region's
 * shape spells it differently (same elements); under a subgroup-manual
 * sharding the shard already has the region's local shape (the manual
 * dims' tiles are what the region's shape left out). */
static bool custom_call(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const char *t = target_of(i);
  if (!strcmp(t, "Sharding")) {
    /* A sharding constraint: the value, resharded. A manual one keeps the
     * local value. */
    if (is_manual(s)) ts_part_set(p, i, p->val[i->ops[0]->id], s);
    else ts_part_set(p, i, ts_part_operand(p, i, 0, s), s);
    return true;
  }
  if (!strcmp(t, "SPMDFullToShardShape")) {
    /* The operand as its own annotation shards it: the region's contract
     * (a while body's parameter may hold it otherwise). */
    const ts_hlo_instr_t *o = i->ops[0];
    ts_hlo_instr_t *x = p->val[o->id];
    ts_sharding_value_t *os = NULL;
    if (o->sharding) {
      if (ts_sharding_from_syntax(p->a, o->sharding, o->shape, &os) != TS_OK) {
        ts_part_fail(p, i, TS_ERR_INVALID_ARGUMENT, "its operand's sharding does not fit the operand's shape");
        return true;
      }
      x = ts_part_operand(p, i, 0, os);
    }
    const ts_shape_t *ls = ts_part_local_shape(p, i->shape, s);
    if (x && ls && !ts_shape_equal(x->shape, ls, false)) {
      if (ts_shape_elements(x->shape) != ts_shape_elements(ls)) {
        ts_part_fail(p, i, TS_ERR_INVALID_ARGUMENT, "the operand's shard does not have the region's local shape");
        return true;
      }
      x = ts_part_reshape(p, x, ls->rank, ls->dims);
    }
    ts_part_set(p, i, x, s);
    return true;
  }
  if (!strcmp(t, "SPMDShardToFullShape")) {
    ts_part_set(p, i, p->val[i->ops[0]->id], s);
    return true;
  }
  return false;
}

/* ---- user all-reduce ---------------------------------------------------- */

/* Whether the all-reduce combines partitions (it has a channel_id; XLA's
 * GetCollectiveOpGroupMode), and then its groups of partition ids (one
 * replica here): the user's groups with use_global_device_ids, else one
 * group of every device (*all). Without a channel_id it is cross-replica:
 * with one replica each device is its own group. */
static bool partition_groups(const ts_hlo_instr_t *i, int64_t *ng, const ts_i64_list_t **groups, bool *all) {
  ts_coll_group_mode_t mode = ts_hlo_group_mode(i, TS_OP_COUNT);
  const ts_hlo_attr_t *rg = ts_hlo_instr_attr(i, "replica_groups");
  *ng = 0;
  *groups = NULL;
  *all = false;
  if (mode == TS_COLL_CROSS_REPLICA) return false;
  if (mode == TS_COLL_FLATTENED_ID && rg && rg->kind == TS_ATTR_REPLICA_GROUPS && rg->v.rg->ngroups > 0) {
    *ng = rg->v.rg->ngroups;
    *groups = rg->v.rg->groups;
  } else {
    *all = true;
  }
  return true;
}

/* The partition group of `dev` under s: its tile index over every dim but
 * the manual subgroups (XLA's partition_to_group_id), row-major. -1 when
 * the device is not in s. */
static int64_t partition_group(const ts_sharding_value_t *s, int64_t dev) {
  int64_t idx[TS_PART_MAX_RANK + 8], key = 0;
  if (dev < 0 || ts_sharding_tile_index(s, dev, idx) != TS_OK) return -1;
  for (int d = 0; d < s->ndims; d++) {
    if (d >= s->data_rank && s->subgroups[d - s->data_rank] == TS_SUBGROUP_MANUAL) continue;
    key = key * s->dims[d] + idx[d];
  }
  return key;
}

/* A single-operand all-reduce whose groups each combine devices holding
 * the same part of the array runs on the local shard, keeping the user's
 * replica groups: a cross-replica one always (one replica: each device is
 * its own group), a cross-partition one inside a subgroup-manual region
 * when every group stays within one partition group (it then combines the
 * manual groups' copies of one tile). Anything else gathers (fallback). */
static bool user_all_reduce(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (i->nops != 1 || !ts_shape_is_array(i->shape) || !ts_shape_is_array(i->ops[0]->shape)) return false;
  if (s->kind != TS_SHARD_TILED && s->kind != TS_SHARD_REPLICATED) return false;
  int64_t ng;
  const ts_i64_list_t *groups;
  bool all;
  if (partition_groups(i, &ng, &groups, &all)) {
    const ts_sharding_value_t *os = p->sh[i->ops[0]->id];
    bool tiled_in = os && os->kind == TS_SHARD_TILED && !has_manual_subgroup(os);
    if (s->kind == TS_SHARD_REPLICATED && !tiled_in) return false; /* runs as written on the whole value */
    if (!has_manual_subgroup(s)) {
      /* Summing tiles of one array across partitions has no meaning in
       * the program written for one device (XLA rejects it alike). */
      ts_part_fail(p, i, TS_ERR_VERIFY,
                   "a cross-partition all-reduce (channel_id) on a tiled value must be in a (partial) manual "
                   "partitioning region (mark its operand manual with SPMDFullToShardShape, or drop channel_id)");
      return true;
    }
    for (int64_t g = 0; g < (all ? 1 : ng); g++) {
      int64_t n = all ? p->n : groups[g].n, first = -1;
      for (int64_t k = 0; k < n; k++) {
        int64_t key = partition_group(s, all ? k : groups[g].v[k]);
        if (key < 0 || (k > 0 && key != first)) return false;
        first = key;
      }
    }
  }
  ts_hlo_instr_t *x = ts_part_operand(p, i, 0, s);
  ts_part_set(p, i, ts_part_emit_like(p, i, &x, ts_part_local_shape(p, i->shape, s)), s);
  return true;
}

/* Whether s or any leaf of it is manual or tiles with a manual subgroup. */
bool ts_part_any_manual(const ts_sharding_value_t *s) {
  if (!s) return false;
  if (s->kind == TS_SHARD_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      if (ts_part_any_manual(s->tuple[k])) return true;
    return false;
  }
  return s->kind == TS_SHARD_MANUAL || has_manual_subgroup(s);
}

/* ---- dispatch ----------------------------------------------------------- */

bool ts_part_manual(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (i->op == TS_OP_CUSTOM_CALL && custom_call(p, i, s)) return true;
  if (is_manual(s) && i->op != TS_OP_GET_TUPLE_ELEMENT && i->op != TS_OP_TUPLE) {
    manual(p, i, s);
    return true;
  }
  return i->op == TS_OP_ALL_REDUCE && user_all_reduce(p, i, s);
}
