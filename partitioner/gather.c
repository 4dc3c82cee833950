/* Partitioning gather and scatter: index passthrough and sharded
 * scatter-add. */
#include "partitioner_internal.h"

#include <math.h>
#include <string.h>

/* gather whose result is sharded on its batch dims only: the indices take
 * those tiles, the operand is replicated, and every device gathers its own
 * rows (GSPMD's index passthrough). */
bool ts_part_gather(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (s->kind != TS_SHARD_TILED || i->nops != 2 || ts_hlo_instr_attr(i, "operand_batching_dims")) return false;
  const ts_hlo_attr_t *off = ts_hlo_instr_attr(i, "offset_dims"), *ivd = ts_hlo_instr_attr(i, "index_vector_dim");
  const ts_shape_t *idx = i->ops[1]->shape;
  int r = i->shape->rank;
  bool is_offset[TS_PART_MAX_RANK] = {false}, keep[TS_PART_MAX_RANK];
  for (int k = 0; off && k < off->v.list.n; k++) is_offset[off->v.list.v[k]] = true;
  for (int d = 0; d < r; d++) keep[d] = !is_offset[d];
  ts_sharding_value_t *sb = ts_part_replicate_dims(p, s, r, keep);
  /* Batch dims of the result are the indices' dims other than the index
   * vector dim, in order. */
  int64_t outdim[TS_PART_MAX_RANK], opdim[TS_PART_MAX_RANK];
  int n = 0, next = 0;
  int64_t v = ivd ? ivd->v.i : idx->rank;
  for (int d = 0; d < r; d++) {
    if (is_offset[d]) continue;
    if (next == v) next++;
    outdim[n] = d;
    opdim[n++] = next++;
  }
  ts_sharding_value_t *is = ts_part_operand_sharding(p, sb, r, n, outdim, opdim, idx->rank);
  ts_hlo_instr_t *ops[2] = {ts_part_operand(p, i, 0, ts_part_replicated(p)), ts_part_operand(p, i, 1, is)};
  ts_hlo_instr_t *x = ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, sb));
  ts_part_set(p, i, ts_part_reshard(p, x, i->shape, sb, s), s);
  return true;
}

/* scatter-add of updates sharded on their scatter dims: every device adds
 * its updates into zeros, an all-reduce sums them, and the operand is added
 * once (embedding gradients). */
bool ts_part_scatter_add(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (i->nops != 3 || i->ncalled != 1 || !ts_part_reducer_is_add(i->called[0])) return false;
  if (ts_hlo_instr_attr(i, "input_batching_dims")) return false;
  const ts_hlo_instr_t *upd = i->ops[2];
  const ts_sharding_value_t *U = p->sh[upd->id];
  if (!U || U->kind != TS_SHARD_TILED || i->shape->elem == TS_PRED) return false;
  const ts_hlo_attr_t *uwd = ts_hlo_instr_attr(i, "update_window_dims"), *ivd = ts_hlo_instr_attr(i, "index_vector_dim");
  const ts_shape_t *us = upd->shape, *idx = i->ops[1]->shape;
  bool is_window[TS_PART_MAX_RANK] = {false}, keep[TS_PART_MAX_RANK], any = false;
  for (int k = 0; uwd && k < uwd->v.list.n; k++) is_window[uwd->v.list.v[k]] = true;
  for (int d = 0; d < us->rank; d++) {
    keep[d] = !is_window[d] && U->dims[d] > 1;
    if (keep[d] && us->dims[d] % U->dims[d] != 0) return false; /* padded updates would be added */
    any |= keep[d];
  }
  if (!any) return false;
  ts_sharding_value_t *up = ts_part_replicate_dims(p, U, us->rank, keep);
  int64_t outdim[TS_PART_MAX_RANK], opdim[TS_PART_MAX_RANK];
  int n = 0, next = 0;
  int64_t v = ivd ? ivd->v.i : idx->rank;
  for (int d = 0; d < us->rank; d++) {
    if (is_window[d]) continue;
    if (next == v) next++;
    outdim[n] = d;
    opdim[n++] = next++;
  }
  ts_sharding_value_t *is = ts_part_operand_sharding(p, up, us->rank, n, outdim, opdim, idx->rank);
  ts_hlo_instr_t *base = ts_part_operand(p, i, 0, ts_part_replicated(p));
  ts_hlo_instr_t *zeros = base ? ts_part_broadcast_scalar(p, ts_part_zero(p, i->shape->elem), i->shape->rank,
                                                          i->shape->dims) : NULL;
  ts_hlo_instr_t *ops[3] = {zeros, ts_part_operand(p, i, 1, is), ts_part_operand(p, i, 2, up)};
  ts_hlo_instr_t *local = ts_part_emit_like(p, i, ops, ts_part_full_shape(p, i->shape));
  int64_t ng, gs, *groups;
  ts_part_groups_over_dims(p, up, keep, &ng, &gs, &groups);
  if (!groups || !local) return p->st != TS_OK;
  ts_hlo_instr_t *sum = ts_part_collective(p, TS_OP_ALL_REDUCE, local->shape, local, ng, gs, groups);
  ts_part_attr_comp(p, sum, "to_apply", ts_part_sum_comp(p, i->shape->elem));
  ts_hlo_instr_t *r = ts_part_add(p, TS_OP_ADD, local->shape, (ts_hlo_instr_t *[]){base, sum}, 2, "add");
  ts_part_set(p, i, ts_part_reshard(p, r, i->shape, ts_part_replicated(p), s), s);
  return true;
}

