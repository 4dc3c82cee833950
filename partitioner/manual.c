/* Manual and subgroup-manual regions, and the collectives a user wrote.
 *
 * A manual value is already per-device: its instructions run as written.
 * A subgroup-manual sharding (`last_tile_dims={manual}`) splits the devices
 * into manual groups (same manual-subgroup index); each group holds its own
 * copy of the region's logical arrays and runs the region as an SPMD
 * program over the remaining tile dims. The general handlers stay correct
 * there because the groups they build (ts_part_groups_over_dims) keep the
 * subgroup indices fixed; the handlers here cover what they would gather.
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
  const ts_hlo_attr_t *ch = ts_hlo_instr_attr(i, "channel_id");
  const ts_hlo_attr_t *g = ts_hlo_instr_attr(i, "use_global_device_ids");
  const ts_hlo_attr_t *rg = ts_hlo_instr_attr(i, "replica_groups");
  bool global = g && g->kind == TS_ATTR_BOOL && g->v.b;
  *ng = 0;
  *groups = NULL;
  *all = false;
  if (!ch) return false;
  if (global && rg && rg->kind == TS_ATTR_REPLICA_GROUPS && rg->v.rg->ngroups > 0) {
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
    if (!has_manual_subgroup(s)) return false;
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

/* ---- reductions in subgroup-manual regions ------------------------------ */

/* Whether output k of the n-output reducer c is one of its two candidates
 * lhs = parameter k, rhs = parameter n + k, or a choice between them
 * (select, maximum, minimum, and, or): then c(x, x) = x, so a partial
 * result that already holds the init value may be reduced again with it. */
static bool picks(const ts_hlo_comp_t *c, int n, int k, const ts_hlo_instr_t *e) {
  const ts_hlo_instr_t *l = c->params[k], *r = c->params[n + k];
  if (e == l || e == r) return true;
  const ts_hlo_instr_t *const *o = (const ts_hlo_instr_t *const *)e->ops;
  switch (e->op) {
  case TS_OP_SELECT: return e->nops == 3 && ((o[1] == l && o[2] == r) || (o[1] == r && o[2] == l));
  case TS_OP_MAXIMUM: case TS_OP_MINIMUM: case TS_OP_AND: case TS_OP_OR:
    return e->nops == 2 && ((o[0] == l && o[1] == r) || (o[0] == r && o[1] == l));
  default: return false;
  }
}

static bool idempotent_reducer(const ts_hlo_comp_t *c, int n) {
  if (!c || c->nparams != 2 * n) return false;
  const ts_hlo_instr_t *root = c->root;
  if (n == 1) return picks(c, 1, 0, root);
  if (root->op != TS_OP_TUPLE || root->nops != n) return false;
  for (int k = 0; k < n; k++)
    if (!picks(c, n, k, root->ops[k])) return false;
  return true;
}

/* A reduce over tiled dims whose init need not be the reducer's identity
 * (a parameter, as in variadic argmax), with a reducer that tolerates
 * reducing it in twice: each device reduces its shard, the partial results
 * (one per device of a group over the reduced tiled dims) are gathered
 * along a new minor dim and reduced again; a single-operand reduce combines
 * them with an all-reduce of the reducer instead. Moves the result's size
 * times the group size, not the operand. Used where s has a manual
 * subgroup; the reduced dims must divide evenly (padding would join the
 * reduction). */
static bool reduce_partials(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  int n = i->nops / 2;
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  if (n < 1 || n > 64 || i->ncalled != 1 || !a || !idempotent_reducer(i->called[0], n)) return false;
  const ts_hlo_instr_t *in = i->ops[0];
  const ts_sharding_value_t *O = p->sh[in->id];
  if (!O || O->kind != TS_SHARD_TILED || !has_manual_subgroup(O)) return false;
  for (int k = 1; k < n; k++)
    if (!ts_sharding_equal(p->sh[i->ops[k]->id], O)) return false;
  for (int k = 0; k < n; k++)
    if (!ts_sharding_equal(ts_part_leaf(s, k), ts_part_leaf(s, 0))) return false;
  int r = in->shape->rank, m = 0;
  bool tiled_reduced[TS_PART_MAX_RANK] = {false}, kept_dims[TS_PART_MAX_RANK], any = false;
  int64_t kept[TS_PART_MAX_RANK];
  for (int d = 0; d < r; d++) kept_dims[d] = true;
  for (int k = 0; k < a->v.list.n; k++) {
    int64_t d = a->v.list.v[k];
    kept_dims[d] = false;
    if (O->dims[d] > 1) {
      if (in->shape->dims[d] % O->dims[d] != 0) return false;
      tiled_reduced[d] = any = true;
    }
  }
  if (!any) return false;
  for (int d = 0; d < r; d++)
    if (kept_dims[d]) kept[m++] = d;
  /* ps: the partial results' sharding (O's kept tiles; the reduced dims'
   * tiles become a subgroup whose members hold partials to combine). */
  ts_sharding_value_t *ps = ts_part_select_dims(p, ts_part_replicate_dims(p, O, r, kept_dims), m, kept);
  int64_t ng, gs, *groups;
  ts_part_groups_over_dims(p, O, tiled_reduced, &ng, &gs, &groups);
  if (!ps || !groups) return p->st != TS_OK;
  const ts_shape_t *leaf0 = i->shape->elem == TS_TUPLE ? i->shape->tuple[0] : i->shape;
  const ts_shape_t *local = ts_part_local_shape(p, leaf0, ps);
  if (!local) return true;

  /* Bytes per device, against gathering the operands to the result's tiles
   * (ts_part_reduce's way). */
  int64_t outdim[TS_PART_MAX_RANK], opdim[TS_PART_MAX_RANK], mine = 0, gather = 0;
  for (int k = 0; k < m; k++) {
    outdim[k] = k;
    opdim[k] = kept[k];
  }
  ts_sharding_value_t *os = ts_part_operand_sharding(p, ts_part_leaf(s, 0), m, m, outdim, opdim, r);
  for (int k = 0; k < n; k++) {
    const ts_shape_t *rs = i->shape->elem == TS_TUPLE ? i->shape->tuple[k] : i->shape;
    int64_t leaf = (int64_t)ts_elem_storage_bytes(rs->elem) * ts_shape_elements(local);
    mine += (n == 1 ? leaf : leaf * gs) + ts_part_reshard_bytes(p, rs, ps, ts_part_leaf(s, k));
    gather += ts_part_reshard_bytes(p, i->ops[k]->shape, O, os);
  }
  if (mine >= gather) return false;

  ts_hlo_instr_t *ops[128], *inits[64];
  for (int k = 0; k < n; k++) ops[k] = ts_part_operand(p, i, k, O);
  for (int k = n; k < 2 * n; k++) ops[k] = inits[k - n] = ts_part_operand(p, i, k, ts_part_replicated(p));
  ts_hlo_instr_t *partial = ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, ps));
  ts_hlo_comp_t *reducer = ts_part_clone_comp(p, i->called[0]);
  if (!partial || !reducer) return true;
  if (n == 1) {
    ts_part_set(p, i, ts_part_sum_partials(p, partial, i->shape, ps, ng, gs, groups, reducer, s), s);
    return true;
  }
  /* The partials side by side along a new minor dim m, then reduced. */
  int64_t dims[TS_PART_MAX_RANK + 1];
  for (int d = 0; d < m; d++) dims[d] = local->dims[d];
  ts_hlo_instr_t *gathered[128];
  const ts_shape_t *gshape[64];
  for (int k = 0; k < n; k++) {
    ts_hlo_instr_t *leaf = ts_part_add(p, TS_OP_GET_TUPLE_ELEMENT, partial->shape->tuple[k], &partial, 1,
                                       "get-tuple-element");
    ts_part_attr_int(p, leaf, "index", k);
    dims[m] = 1;
    ts_hlo_instr_t *col = ts_part_reshape(p, leaf, m + 1, dims);
    dims[m] = gs;
    gshape[k] = ts_part_shape(p, partial->shape->tuple[k]->elem, m + 1, dims);
    gathered[k] = ts_part_collective(p, TS_OP_ALL_GATHER, gshape[k], col, ng, gs, groups);
    ts_part_attr_ints(p, gathered[k], "dimensions", 1, (int64_t[]){m});
    gathered[n + k] = inits[k];
  }
  ts_hlo_instr_t *red = ts_part_add(p, TS_OP_REDUCE, partial->shape, gathered, 2 * n, i->name);
  ts_part_attr_ints(p, red, "dimensions", 1, (int64_t[]){m});
  ts_part_attr_comp(p, red, "to_apply", reducer);
  bool same = true;
  for (int k = 0; k < n; k++) same &= ts_sharding_equal(ts_part_leaf(s, k), ps);
  ts_part_set(p, i, same ? red : ts_part_reshard(p, red, i->shape, ps, s), s);
  return true;
}

/* ---- dispatch ----------------------------------------------------------- */

bool ts_part_manual(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (i->op == TS_OP_CUSTOM_CALL && custom_call(p, i, s)) return true;
  if (is_manual(s) && i->op != TS_OP_GET_TUPLE_ELEMENT && i->op != TS_OP_TUPLE) {
    manual(p, i, s);
    return true;
  }
  switch (i->op) {
  case TS_OP_ALL_REDUCE: return user_all_reduce(p, i, s);
  case TS_OP_REDUCE: return reduce_partials(p, i, s);
  default: return false;
  }
}
