/* Partitioning dot and convolution: operands aligned with the result, or
 * local products of sharded contracting dims summed across devices. */
#include "partitioner_internal.h"

#include <math.h>
#include <string.h>

/* dot: batch and free dims of each operand carry the result's tiles (the
 * other operand's free dims replicated), contracting dims gathered. */
static ts_sharding_value_t *dot_operand_sharding(part_t *p, const ts_hlo_instr_t *i, int side,
                                                 const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *lb = ts_hlo_instr_attr(i, "lhs_batch_dims"), *rb = ts_hlo_instr_attr(i, "rhs_batch_dims");
  const ts_hlo_attr_t *lc = ts_hlo_instr_attr(i, "lhs_contracting_dims"),
                      *rc = ts_hlo_instr_attr(i, "rhs_contracting_dims");
  const ts_hlo_attr_t *b = side ? rb : lb, *c = side ? rc : lc;
  const ts_shape_t *os = i->ops[side]->shape;
  int nb = lb ? lb->v.list.n : 0;
  /* Result dims: batch, then lhs free dims, then rhs free dims. */
  int next_out = nb;
  if (side == 1) {
    const ts_shape_t *ls = i->ops[0]->shape;
    next_out = ls->rank - (lc ? lc->v.list.n : 0);
  }
  int64_t outdim[TS_PART_MAX_RANK], opdim[TS_PART_MAX_RANK];
  bool used[TS_PART_MAX_RANK] = {false};
  int n = 0;
  for (int k = 0; k < nb; k++) {
    outdim[n] = k;
    opdim[n++] = b->v.list.v[k];
    used[b->v.list.v[k]] = true;
  }
  for (int k = 0; c && k < c->v.list.n; k++) used[c->v.list.v[k]] = true;
  for (int d = 0; d < os->rank; d++)
    if (!used[d]) {
      outdim[n] = next_out++;
      opdim[n++] = d;
    }
  return ts_part_operand_sharding(p, s, i->shape->rank, n, outdim, opdim, os->rank);
}

static int64_t bytes_of(const ts_shape_t *s) {
  int64_t n = ts_elem_storage_bytes(s->elem);
  for (int d = 0; d < s->rank; d++) n *= s->dims[d];
  return n;
}

/* The contracting dims are tiled where the lhs already is: each device
 * multiplies its slices of the contracting dims and an all-reduce sums
 * the partial results (GSPMD's "contracting dims partitioned" case). Taken
 * when the result is smaller than the operands a gather would move. */
static bool dot_contracting(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *lc = ts_hlo_instr_attr(i, "lhs_contracting_dims"),
                      *rc = ts_hlo_instr_attr(i, "rhs_contracting_dims");
  const ts_hlo_instr_t *lhs = i->ops[0], *rhs = i->ops[1];
  const ts_sharding_value_t *L = p->sh[lhs->id];
  if (!lc || !rc || !L || L->kind != TS_SHARD_TILED || i->shape->elem == TS_PRED)
    return false;
  bool keep[TS_PART_MAX_RANK] = {false}, any = false;
  for (int k = 0; k < lc->v.list.n; k++) {
    int64_t d = lc->v.list.v[k];
    if (L->dims[d] > 1) {
      if (lhs->shape->dims[d] % L->dims[d] != 0) return false; /* padding would join the sums */
      keep[d] = any = true;
    }
  }
  if (!any || bytes_of(i->shape) >= bytes_of(lhs->shape) + bytes_of(rhs->shape)) return false;
  ts_sharding_value_t *lp = ts_part_replicate_dims(p, L, lhs->shape->rank, keep);
  ts_sharding_value_t *sc = ts_part_select_dims(p, lp, lc->v.list.n, lc->v.list.v);
  ts_sharding_value_t *rp = ts_part_embed(p, sc, rc->v.list.n, rhs->shape->rank, rc->v.list.v);
  if (!lp || !rp) return false;
  ts_hlo_instr_t *ops[2] = {ts_part_operand(p, i, 0, lp), ts_part_operand(p, i, 1, rp)};
  ts_hlo_instr_t *partial = ts_part_emit_like(p, i, ops, ts_part_full_shape(p, i->shape));
  int64_t ng, gs, *groups;
  ts_part_groups_over_dims(p, lp, keep, &ng, &gs, &groups);
  if (!groups || !partial) return p->st != TS_OK;
  ts_part_set(p, i, ts_part_sum_partials(p, partial, i->shape, ng, gs, groups, ts_part_sum_comp(p, i->shape->elem), s), s);
  return true;
}

void ts_part_dot(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (i->nops != 2) {
    ts_part_fallback(p, i, s);
    return;
  }
  if (dot_contracting(p, i, s)) return;
  ts_hlo_instr_t *ops[2];
  for (int side = 0; side < 2; side++) ops[side] = ts_part_operand(p, i, side, dot_operand_sharding(p, i, side, s));
  ts_part_set(p, i, ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, s)), s);
}

/* convolution sharded on its batch and output-feature dims (data and
 * model parallelism): like a dot, the lhs takes the batch tiles, the rhs
 * the output-feature tiles, and every device convolves its own. Spatial
 * tiles need halo exchange (not written yet): they fold into replication
 * and the result is sliced after. */
bool ts_part_convolution(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *dn = ts_hlo_instr_attr(i, "dim_labels");
  const ts_hlo_attr_t *fg = ts_hlo_instr_attr(i, "feature_group_count"), *bg = ts_hlo_instr_attr(i, "batch_group_count");
  if (s->kind != TS_SHARD_TILED || i->nops != 2 || !dn || dn->kind != TS_ATTR_CONV_DNUMS) return false;
  if ((fg && fg->v.i != 1) || (bg && bg->v.i != 1)) return false;
  const ts_conv_dnums_t *c = dn->v.conv;
  int r = i->shape->rank;
  bool keep[TS_PART_MAX_RANK] = {false};
  keep[c->out_batch] = keep[c->out_feature] = true;
  ts_sharding_value_t *sp = ts_part_replicate_dims(p, s, r, keep);
  int64_t ob = c->out_batch, of = c->out_feature, ib = c->in_batch, kf = c->k_out_feature;
  ts_sharding_value_t *ls = ts_part_operand_sharding(p, sp, r, 1, &ob, &ib, i->ops[0]->shape->rank);
  ts_sharding_value_t *rs = ts_part_operand_sharding(p, sp, r, 1, &of, &kf, i->ops[1]->shape->rank);
  ts_hlo_instr_t *ops[2] = {ts_part_operand(p, i, 0, ls), ts_part_operand(p, i, 1, rs)};
  ts_hlo_instr_t *x = ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, sp));
  ts_part_set(p, i, ts_part_reshard(p, x, i->shape, sp, s), s);
  return true;
}

