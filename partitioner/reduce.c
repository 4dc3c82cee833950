/* Partitioning reductions: local partial results combined by one
 * all-reduce or reduce-scatter (GSPMD section 4.5). */
#include "partitioner_internal.h"

#include <math.h>
#include <string.h>

/* Whether a scatter's update computation adds the update to the operand. */
bool ts_part_reducer_is_add(const ts_hlo_comp_t *c) {
  if (!c || c->nparams != 2) return false;
  const ts_hlo_instr_t *r = c->root;
  return r->op == TS_OP_ADD && r->nops == 2 &&
         ((r->ops[0] == c->params[0] && r->ops[1] == c->params[1]) ||
          (r->ops[0] == c->params[1] && r->ops[1] == c->params[0]));
}

/* Whether `init` is the identity of the reducer `comp` (so that every
 * device may start its partial reduction from it). */
static bool identity_init(const ts_hlo_instr_t *init, const ts_hlo_comp_t *comp) {
  if (init->op != TS_OP_CONSTANT || !init->literal || init->literal->elided || !comp || comp->nparams != 2)
    return false;
  const ts_hlo_instr_t *r = comp->root;
  if (r->nops != 2 || !((r->ops[0] == comp->params[0] && r->ops[1] == comp->params[1]) ||
                        (r->ops[0] == comp->params[1] && r->ops[1] == comp->params[0])))
    return false;
  const ts_literal_t *l = init->literal;
  double v = l->f ? l->f[0] : (double)(l->i ? l->i[0] : 0);
  bool is_float = l->f != NULL;
  switch (r->op) {
  case TS_OP_ADD: case TS_OP_OR: case TS_OP_XOR: return v == 0;
  case TS_OP_MULTIPLY: return v == 1;
  case TS_OP_AND: return v != 0 && !is_float;
  case TS_OP_MAXIMUM: return is_float && v == -INFINITY;
  case TS_OP_MINIMUM: return is_float && v == INFINITY;
  default: return false;
  }
}

bool ts_part_scatter_order(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *ps, int64_t ng, int64_t gs,
                           const int64_t *groups, const ts_sharding_value_t *s, bool uneven, int *dim,
                           int64_t **ordered) {
  int d = -1, r = shape->rank;
  bool ok = s->kind == TS_SHARD_TILED && (ps->kind == TS_SHARD_TILED || ps->kind == TS_SHARD_REPLICATED);
  for (int k = 0; ok && k < r; k++) {
    int64_t pt = ps->kind == TS_SHARD_TILED ? ps->dims[k] : 1;
    if (s->dims[k] == pt) continue;
    if (d >= 0 || s->dims[k] != pt * gs) ok = false;
    d = k;
  }
  ok = ok && d >= 0;
  if (ok && shape->dims[d] % s->dims[d] != 0)
    ok = uneven && (ps->kind != TS_SHARD_TILED || ps->dims[d] == 1);
  int64_t si[TS_PART_MAX_RANK + 8], pi[TS_PART_MAX_RANK + 8] = {0};
  int64_t *o = ok ? ts_arena_alloc(p->a, sizeof *o * (size_t)(ng * gs)) : NULL;
  for (int64_t g = 0; ok && o && g < ng; g++) {
    for (int64_t k = 0; k < gs; k++) o[g * gs + k] = -1;
    for (int64_t k = 0; ok && k < gs; k++) {
      int64_t dev = groups[g * gs + k];
      if (ts_sharding_tile_index(s, dev, si) != TS_OK ||
          (ps->kind == TS_SHARD_TILED && ts_sharding_tile_index(ps, dev, pi) != TS_OK)) {
        ok = false;
        break;
      }
      for (int e = 0; e < r; e++)
        if (e != d && si[e] != pi[e]) ok = false;
      if (!ok || si[d] / gs != pi[d] || o[g * gs + si[d] % gs] != -1) ok = false;
      else o[g * gs + si[d] % gs] = dev;
    }
  }
  if (!ok || !o) return false;
  *dim = d;
  *ordered = o;
  return true;
}

/* Sums `partial` (one partial value per device, its local shape under
 * `ps`) over `groups` and leaves the result sharded `s`: a reduce-scatter
 * when s refines ps on one dimension into as many parts as a group has
 * members, each member taking the part s gives it (members are put in that
 * order), else an all-reduce (leaving ps) and a reshard to s. */
ts_hlo_instr_t *ts_part_sum_partials(part_t *p, ts_hlo_instr_t *partial, const ts_shape_t *shape,
                                     const ts_sharding_value_t *ps, int64_t ng, int64_t gs, int64_t *groups,
                                     ts_hlo_comp_t *to_apply, const ts_sharding_value_t *s) {
  if (!partial || p->st != TS_OK) return NULL;
  int d;
  int64_t *ordered;
  if (!ts_part_scatter_order(p, shape, ps, ng, gs, groups, s, false, &d, &ordered)) {
    ts_hlo_instr_t *sum = ts_part_collective(p, TS_OP_ALL_REDUCE, partial->shape, partial, ng, gs, groups);
    ts_part_attr_comp(p, sum, "to_apply", to_apply);
    return ts_part_reshard(p, sum, shape, ps, s);
  }
  ts_hlo_instr_t *rs = ts_part_collective(p, TS_OP_REDUCE_SCATTER, ts_part_local_shape(p, shape, s), partial, ng, gs,
                                          ordered);
  ts_part_attr_ints(p, rs, "dimensions", 1, (int64_t[]){d});
  ts_part_attr_comp(p, rs, "to_apply", to_apply);
  return rs;
}

/* The reduced dims are tiled where the operand already is: each device
 * reduces its slice and an all-reduce (or reduce-scatter) combines them.
 * The kept dims either keep their tiles (the partial results are then
 * sharded like them) or are gathered first, whichever moves fewer bytes. */
static bool reduce_partial(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (i->nops != 2 || i->ncalled != 1) return false;
  const ts_hlo_instr_t *in = i->ops[0];
  const ts_sharding_value_t *O = p->sh[in->id];
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  if (!O || O->kind != TS_SHARD_TILED || !a || !identity_init(i->ops[1], i->called[0])) return false;
  int r = in->shape->rank;
  bool keep[TS_PART_MAX_RANK] = {false}, kept_dims[TS_PART_MAX_RANK] = {false}, any = false;
  for (int d = 0; d < r; d++) kept_dims[d] = true;
  for (int k = 0; k < a->v.list.n; k++) {
    int64_t d = a->v.list.v[k];
    kept_dims[d] = false;
    if (O->dims[d] > 1) {
      if (in->shape->dims[d] % O->dims[d] != 0) return false; /* padding would join the reduction */
      keep[d] = any = true;
    }
  }
  if (!any) return false;
  int64_t kept[TS_PART_MAX_RANK];
  int m = 0;
  for (int d = 0; d < r; d++)
    if (kept_dims[d]) kept[m++] = d;
  /* w = 0: the operand as it is; w = 1: its kept dims gathered. */
  ts_sharding_value_t *os[2] = {(ts_sharding_value_t *)O, ts_part_replicate_dims(p, O, r, keep)}, *ps[2];
  int64_t cost[2];
  for (int w = 0; w < 2; w++) {
    ps[w] = ts_part_select_dims(p, ts_part_replicate_dims(p, os[w], r, kept_dims), m, kept);
    const ts_shape_t *local = ps[w] ? ts_part_local_shape(p, i->shape, ps[w]) : NULL;
    if (!local) return p->st != TS_OK;
    cost[w] = ts_part_reshard_bytes(p, in->shape, O, os[w]) + ts_part_reshard_bytes(p, i->shape, ps[w], s) +
              (int64_t)ts_elem_storage_bytes(local->elem) * ts_shape_elements(local);
  }
  int w = cost[0] <= cost[1] ? 0 : 1;
  ts_hlo_instr_t *ops[2] = {ts_part_operand(p, i, 0, os[w]), ts_part_operand(p, i, 1, ts_part_replicated(p))};
  ts_hlo_instr_t *partial = ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, ps[w]));
  int64_t ng, gs, *groups;
  ts_part_groups_over_dims(p, os[w], keep, &ng, &gs, &groups);
  if (!groups || !partial) return p->st != TS_OK;
  ts_part_set(p, i,
              ts_part_sum_partials(p, partial, i->shape, ps[w], ng, gs, groups, ts_part_clone_comp(p, i->called[0]), s),
              s);
  return true;
}

/* reduce: the kept operand dims carry the result's tiles; reduced dims are
 * gathered unless reduce_partial applies. */
void ts_part_reduce(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  int n = i->nops / 2;
  if (reduce_partial(p, i, s)) return;
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  const ts_shape_t *in = i->ops[0]->shape;
  const ts_sharding_value_t *s0 = ts_part_leaf(s, 0);
  for (int k = 1; k < n; k++)
    if (!ts_sharding_equal(ts_part_leaf(s, k), s0)) {
      ts_part_fallback(p, i, s);
      return;
    }
  bool reduced[TS_PART_MAX_RANK] = {false};
  for (int k = 0; a && k < a->v.list.n; k++) reduced[a->v.list.v[k]] = true;
  int64_t outdim[TS_PART_MAX_RANK], opdim[TS_PART_MAX_RANK];
  int m = 0;
  for (int d = 0; d < in->rank; d++)
    if (!reduced[d]) {
      outdim[m] = m;
      opdim[m] = d;
      m++;
    }
  ts_sharding_value_t *os = ts_part_operand_sharding(p, s0, m, m, outdim, opdim, in->rank);
  ts_hlo_instr_t *ops[256];
  if (i->nops > 256) {
    ts_part_fallback(p, i, s);
    return;
  }
  for (int k = 0; k < n; k++) ops[k] = ts_part_operand(p, i, k, os);
  for (int k = n; k < i->nops; k++) ops[k] = ts_part_operand(p, i, k, ts_part_replicated(p));
  ts_part_set(p, i, ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, s)), s);
}

