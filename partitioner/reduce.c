/* Partitioning reductions: local partial results combined by one
 * all-reduce or reduce-scatter (GSPMD section 4.5), or, for reducers that
 * pick one of their operands (argmax / argmin), gathered and reduced again. */
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
bool ts_part_init_is_identity(const ts_hlo_instr_t *init, const ts_hlo_comp_t *comp) {
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

/* The identity of a two-parameter reducer that combines its parameters
 * with one commutative monoid op (add, multiply, and, or, xor, maximum,
 * minimum), as a scalar constant of element type e; NULL for any other
 * reducer (or an identity the literal cannot hold, u64's maximum). */
ts_hlo_instr_t *ts_part_reducer_identity(part_t *p, const ts_hlo_comp_t *comp, ts_elem_t e) {
  if (!comp || comp->nparams != 2) return NULL;
  const ts_hlo_instr_t *r = comp->root;
  if (r->nops != 2 || !((r->ops[0] == comp->params[0] && r->ops[1] == comp->params[1]) ||
                        (r->ops[0] == comp->params[1] && r->ops[1] == comp->params[0])))
    return NULL;
  bool is_float = ts_elem_is_float(e), is_signed = ts_elem_is_signed_int(e), is_pred = e == TS_PRED;
  if (!is_float && !is_signed && !is_pred && !ts_elem_is_unsigned_int(e)) return NULL;
  int bits = 8 * (int)ts_elem_storage_bytes(e);
  int64_t smax = bits >= 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
  double f;
  int64_t v;
  switch (r->op) {
  case TS_OP_ADD: case TS_OP_OR: case TS_OP_XOR: f = 0, v = 0; break;
  case TS_OP_MULTIPLY: f = 1, v = 1; break;
  case TS_OP_AND: /* all ones: true, -1, or the unsigned maximum */
    if (is_float || (!is_pred && !is_signed && bits >= 64)) return NULL;
    f = 0, v = is_pred ? 1 : is_signed ? -1 : ((int64_t)1 << bits) - 1;
    break;
  case TS_OP_MAXIMUM: f = -INFINITY, v = is_signed ? -smax - 1 : 0; break;
  case TS_OP_MINIMUM:
    if (!is_float && !is_signed && bits >= 64) return NULL;
    f = INFINITY, v = is_signed ? smax : is_pred ? 1 : ((int64_t)1 << bits) - 1;
    break;
  default: return NULL;
  }
  ts_hlo_instr_t *c = ts_part_zero(p, e);
  if (!c || !c->literal) return NULL;
  if (c->literal->f) c->literal->f[0] = f;
  else c->literal->i[0] = v;
  return c;
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
  if (!O || O->kind != TS_SHARD_TILED || !a || !ts_part_init_is_identity(i->ops[1], i->called[0])) return false;
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
    cost[w] = ts_part_reshard_cost(p, in->shape, O, os[w]) + ts_part_reshard_cost(p, i->shape, ps[w], s) +
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

/* ---- reducers that pick one of their operands ------------------------- */

/* Whether output k of the n-output reducer c is one of its two candidates
 * lhs = parameter k, rhs = parameter n + k, or a choice between them
 * (select, maximum, minimum, and, or): then c(x, x) = x, so a partial
 * result that already holds the init value may be reduced again with it,
 * and padding that reads as the init value changes nothing. */
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

/* pred[dims]: true where the element is real along every dim d with
 * valid[d] (per partition: how many of the shard's leading elements along
 * d lie inside the array), false in the padding of uneven tiles. */
static ts_hlo_instr_t *in_bounds(part_t *p, int r, const int64_t *dims, int64_t *const *valid) {
  const ts_shape_t *is = ts_part_shape(p, TS_S32, r, dims), *ps = ts_part_shape(p, TS_PRED, r, dims);
  ts_hlo_instr_t *all = NULL;
  for (int d = 0; d < r; d++) {
    if (!valid[d]) continue;
    ts_hlo_instr_t *io = ts_part_add(p, TS_OP_IOTA, is, NULL, 0, "iota");
    ts_part_attr_int(p, io, "iota_dimension", d);
    ts_hlo_instr_t *lim = ts_part_broadcast_scalar(p, ts_part_table_lookup(p, valid[d]), r, dims);
    ts_hlo_instr_t *lt = ts_part_add(p, TS_OP_COMPARE, ps, (ts_hlo_instr_t *[]){io, lim}, 2, "compare");
    ts_part_attr_ident(p, lt, "direction", "LT");
    all = all ? ts_part_add(p, TS_OP_AND, ps, (ts_hlo_instr_t *[]){all, lt}, 2, "and") : lt;
  }
  return all;
}

/* A reduce over tiled dims whose init need not be the reducer's identity
 * (a parameter, as in variadic argmax), with a reducer that tolerates
 * reducing it in twice (idempotent_reducer): each device reduces its shard
 * (padding of uneven tiles read as the init value), the partial results
 * (one per device of a group over the reduced tiled dims) are gathered
 * along a new minor dim and reduced again; a single-operand reduce combines
 * them with an all-reduce of the reducer instead. Moves the result's size
 * times the group size rather than the operands: used when that is fewer
 * bytes than gathering the operands (ts_part_reduce's way). */
static bool reduce_gathered_partials(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  int n = i->nops / 2;
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  if (n < 1 || n > 64 || i->nops != 2 * n || i->ncalled != 1 || !a || !idempotent_reducer(i->called[0], n))
    return false;
  const ts_hlo_instr_t *in = i->ops[0];
  const ts_sharding_value_t *O = p->sh[in->id];
  int r = in->shape->rank, m = 0;
  if (!O || O->kind != TS_SHARD_TILED || r > TS_PART_MAX_RANK) return false;
  for (int k = 0; k < n; k++)
    if (!p->sh[i->ops[k]->id] || !ts_sharding_equal(ts_part_leaf(s, k), ts_part_leaf(s, 0))) return false;
  bool tiled_reduced[TS_PART_MAX_RANK] = {false}, kept_dims[TS_PART_MAX_RANK], any = false;
  int64_t kept[TS_PART_MAX_RANK], *valid[TS_PART_MAX_RANK] = {NULL};
  for (int d = 0; d < r; d++) kept_dims[d] = true;
  for (int k = 0; k < a->v.list.n; k++) {
    int64_t d = a->v.list.v[k];
    kept_dims[d] = false;
    if (O->dims[d] > 1) tiled_reduced[d] = any = true;
  }
  if (!any) return false;
  for (int d = 0; d < r; d++)
    if (kept_dims[d]) kept[m++] = d;
  /* Uneven reduced dims: each partition's count of real elements. */
  for (int d = 0; d < r; d++) {
    if (!tiled_reduced[d] || in->shape->dims[d] % O->dims[d] == 0) continue;
    valid[d] = ts_arena_alloc(p->a, sizeof *valid[d] * (size_t)p->n);
    if (!valid[d]) {
      ts_part_fail(p, i, TS_ERR_NOMEM, "out of memory");
      return true;
    }
    for (int64_t dev = 0; dev < p->n; dev++) {
      int64_t off[TS_PART_MAX_RANK], lim[TS_PART_MAX_RANK];
      if (ts_sharding_shard(O, in->shape, dev, off, lim) != TS_OK) return false;
      valid[d][dev] = lim[d] - off[d];
    }
  }
  /* ps: the partial results' sharding (O's kept tiles; the reduced dims'
   * tiles become a subgroup whose members hold partials to combine). */
  ts_sharding_value_t *ps = ts_part_select_dims(p, ts_part_replicate_dims(p, O, r, kept_dims), m, kept);
  int64_t ng, gs, *groups;
  ts_part_groups_over_dims(p, O, tiled_reduced, &ng, &gs, &groups);
  if (!ps || !groups) return p->st != TS_OK;
  const ts_shape_t *leaf0 = i->shape->elem == TS_TUPLE ? i->shape->tuple[0] : i->shape;
  const ts_shape_t *local = ts_part_local_shape(p, leaf0, ps);
  if (!local) return true;

  /* Bytes per device, against gathering the operands to the result's tiles. */
  int64_t outdim[TS_PART_MAX_RANK], opdim[TS_PART_MAX_RANK], mine = 0, gather = 0;
  for (int k = 0; k < m; k++) {
    outdim[k] = k;
    opdim[k] = kept[k];
  }
  ts_sharding_value_t *os = ts_part_operand_sharding(p, ts_part_leaf(s, 0), m, m, outdim, opdim, r);
  if (!os) return p->st != TS_OK;
  for (int k = 0; k < n; k++) {
    const ts_shape_t *rs = i->shape->elem == TS_TUPLE ? i->shape->tuple[k] : i->shape;
    const ts_sharding_value_t *ok = p->sh[i->ops[k]->id];
    int64_t leaf = (int64_t)ts_elem_storage_bytes(rs->elem) * ts_shape_elements(local);
    mine += (n == 1 ? leaf : leaf * gs) + ts_part_reshard_cost(p, rs, ps, ts_part_leaf(s, k)) +
            ts_part_reshard_cost(p, i->ops[k]->shape, ok, O);
    gather += ts_part_reshard_cost(p, i->ops[k]->shape, ok, os);
  }
  if (mine >= gather) return false;

  ts_hlo_instr_t *ops[128], *inits[64];
  for (int k = 0; k < n; k++) ops[k] = ts_part_operand(p, i, k, O);
  for (int k = n; k < 2 * n; k++) ops[k] = inits[k - n] = ts_part_operand(p, i, k, ts_part_replicated(p));
  if (!ops[0]) return true;
  ts_hlo_instr_t *mask = in_bounds(p, r, ops[0]->shape->dims, valid);
  for (int k = 0; mask && k < n; k++) {
    ts_hlo_instr_t *fill = ts_part_broadcast_scalar(p, inits[k], r, ops[k] ? ops[k]->shape->dims : NULL);
    ops[k] = ts_part_add(p, TS_OP_SELECT, ops[k] ? ops[k]->shape : NULL, (ts_hlo_instr_t *[]){mask, ops[k], fill},
                         3, "select");
  }
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
  for (int k = 0; k < n; k++) {
    ts_hlo_instr_t *leaf = ts_part_add(p, TS_OP_GET_TUPLE_ELEMENT, partial->shape->tuple[k], &partial, 1,
                                       "get-tuple-element");
    ts_part_attr_int(p, leaf, "index", k);
    dims[m] = 1;
    ts_hlo_instr_t *col = ts_part_reshape(p, leaf, m + 1, dims);
    dims[m] = gs;
    const ts_shape_t *gshape = ts_part_shape(p, partial->shape->tuple[k]->elem, m + 1, dims);
    gathered[k] = ts_part_collective(p, TS_OP_ALL_GATHER, gshape, col, ng, gs, groups);
    ts_part_attr_ints(p, gathered[k], "dimensions", 1, (int64_t[]){m});
    gathered[n + k] = inits[k];
  }
  ts_hlo_instr_t *red = ts_part_add(p, TS_OP_REDUCE, partial->shape, gathered, 2 * n, i->name);
  ts_part_attr_ints(p, red, "dimensions", 1, (int64_t[]){m});
  ts_part_attr_comp(p, red, "to_apply", reducer);
  ts_part_set(p, i, ts_part_reshard(p, red, i->shape, ps, s), s);
  return true;
}

/* reduce: the kept operand dims carry the result's tiles; reduced dims are
 * gathered unless reduce_partial or reduce_gathered_partials applies. */
void ts_part_reduce(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  int n = i->nops / 2;
  if (reduce_partial(p, i, s) || reduce_gathered_partials(p, i, s)) return;
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

