/* The SPMD partitioner's driver and its per-op handlers (GSPMD section 4).
 *
 * Every source instruction becomes a value of the output module together
 * with the sharding that value has; an operation asks for its operands in
 * the shardings it needs (ts_part_reshard moves them) and then runs on the
 * per-device shards. An operation without a handler of its own runs on the
 * full value (operands gathered, result sliced): correct for every op, at
 * the cost of the collectives, so the handlers below exist for speed. */
#include "partitioner_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void ts_partition_opts_default(ts_partition_opts_t *o) {
  *o = (ts_partition_opts_t){0};
  o->threshold_for_windowed_einsum_mib = -1;
  o->conv_halo_exchange_always_on_lhs = true;
}

/* ---- shardings of source instructions ----------------------------------- */

/* Values are cached by sharding text and shape rank: building one costs
 * O(devices log devices), and a module repeats a handful of shardings. */
static ts_sharding_value_t *sharding_of(part_t *p, const ts_hlo_instr_t *i) {
  if (!i->sharding) return ts_part_replicated(p);
  ts_buf_t key = {0};
  ts_buf_printf(&key, "%d:", i->shape->elem == TS_TUPLE ? -1 - i->shape->ntuple : i->shape->rank);
  ts_sharding_print(&key, i->sharding);
  ts_sharding_value_t *s = key.oom ? NULL : ts_strmap_get(&p->cache, key.data, key.len);
  if (!s || i->shape->elem == TS_TUPLE) {
    ts_status_t st = ts_sharding_from_syntax(p->a, i->sharding, i->shape, &s);
    if (st != TS_OK) {
      ts_buf_free(&key);
      ts_part_fail(p, i, st == TS_ERR_NOMEM ? st : TS_ERR_INVALID_ARGUMENT, "its sharding does not fit its shape");
      return NULL;
    }
    const char *k = key.oom ? NULL : ts_arena_strndup(p->a, key.data, key.len);
    if (k && i->shape->elem != TS_TUPLE) ts_strmap_put(&p->cache, k, key.len, s);
  }
  ts_buf_free(&key);
  if (s->kind == TS_SHARD_UNKNOWN) return ts_part_replicated(p);
  return s;
}

static const ts_sharding_value_t *leaf(const ts_sharding_value_t *s, int k) {
  return s && s->kind == TS_SHARD_TUPLE ? s->tuple[k] : s;
}

/* Manual: the value is already per-device (every leaf of a tuple). */
static bool is_manual(const ts_sharding_value_t *s) {
  if (!s) return false;
  if (s->kind == TS_SHARD_MANUAL) return true;
  if (s->kind != TS_SHARD_TUPLE || s->ntuple == 0) return false;
  for (int k = 0; k < s->ntuple; k++)
    if (!is_manual(s->tuple[k])) return false;
  return true;
}

/* A sharding of an n-dim array whose dim k is dim sel[k] of `s`; dims of s
 * not selected must be untiled. */
static ts_sharding_value_t *select_dims(part_t *p, const ts_sharding_value_t *s, int n, const int64_t *sel) {
  if (!s || s->kind != TS_SHARD_TILED || p->st != TS_OK) return (ts_sharding_value_t *)s;
  int ns = s->nsubgroups;
  int64_t dims[TS_PART_MAX_RANK + 8], idx[TS_PART_MAX_RANK + 8], nidx[TS_PART_MAX_RANK + 8];
  for (int k = 0; k < n; k++) dims[k] = s->dims[sel[k]];
  for (int k = 0; k < ns; k++) dims[n + k] = s->dims[s->data_rank + k];
  int64_t *dev = ts_arena_alloc(p->a, sizeof *dev * (size_t)s->ntiles);
  if (!dev) {
    p->st = TS_ERR_NOMEM;
    return NULL;
  }
  for (int64_t t = 0; t < s->ntiles; t++) {
    int64_t l = t;
    for (int k = s->ndims - 1; k >= 0; k--) {
      idx[k] = l % s->dims[k];
      l /= s->dims[k];
    }
    for (int k = 0; k < n; k++) nidx[k] = idx[sel[k]];
    for (int k = 0; k < ns; k++) nidx[n + k] = idx[s->data_rank + k];
    int64_t lin = 0;
    for (int k = 0; k < n + ns; k++) lin = lin * dims[k] + nidx[k];
    dev[lin] = s->devices[t];
  }
  ts_sharding_value_t *out = NULL;
  if (ts_sharding_tiled(p->a, n + ns, dims, dev, ns, s->subgroups, &out) != TS_OK)
    ts_part_fail(p, NULL, TS_ERR_INTERNAL, "cannot select sharding dimensions");
  return out;
}

/* The sharding of an operand of rank `rank` whose dim opdim[k] corresponds
 * to result dim outdim[k] (k < n), under result sharding s (rank out_rank):
 * result dims not listed are replicated, operand dims not listed untiled. */
static ts_sharding_value_t *operand_sharding(part_t *p, const ts_sharding_value_t *s, int out_rank, int n,
                                             const int64_t *outdim, const int64_t *opdim, int rank) {
  if (!s || s->kind != TS_SHARD_TILED) return (ts_sharding_value_t *)s;
  bool keep[TS_PART_MAX_RANK] = {false};
  for (int k = 0; k < n; k++) keep[outdim[k]] = true;
  ts_sharding_value_t *r = ts_part_replicate_dims(p, s, out_rank, keep);
  ts_sharding_value_t *sel = select_dims(p, r, n, outdim);
  return ts_part_embed(p, sel, n, rank, opdim);
}

/* ---- emitting ------------------------------------------------------------ */

/* Operand k of i, resharded to `want`. */
static ts_hlo_instr_t *operand(part_t *p, const ts_hlo_instr_t *i, int k, const ts_sharding_value_t *want) {
  const ts_hlo_instr_t *o = i->ops[k];
  return ts_part_reshard(p, p->val[o->id], o->shape, p->sh[o->id], want);
}

/* i's op on new operands with a new shape, its attributes copied. */
static ts_hlo_instr_t *emit_like(part_t *p, const ts_hlo_instr_t *i, ts_hlo_instr_t *const *ops,
                                 const ts_shape_t *shape) {
  ts_hlo_instr_t *r = ts_part_add(p, i->op, shape, ops, i->nops, i->name);
  if (!r) return NULL;
  r->async_wrapped = i->async_wrapped;
  for (int k = 0; k < i->nattrs; k++) ts_part_copy_attr(p, r, &i->attrs[k]);
  return r;
}

static void set(part_t *p, const ts_hlo_instr_t *i, ts_hlo_instr_t *v, const ts_sharding_value_t *s) {
  p->val[i->id] = v;
  p->sh[i->id] = (ts_sharding_value_t *)s;
}

static const ts_shape_t *full_shape(part_t *p, const ts_shape_t *s) {
  return ts_part_local_shape(p, s, ts_part_replicated(p));
}

/* Any op on full values: operands gathered, the result sliced to `s`. */
static void fallback(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  ts_hlo_instr_t *ops[1024];
  if (i->nops > 1024) {
    ts_part_fail(p, i, TS_ERR_UNSUPPORTED, "more than 1024 operands");
    return;
  }
  ts_sharding_value_t *rep = ts_part_replicated(p);
  for (int k = 0; k < i->nops; k++) ops[k] = operand(p, i, k, rep);
  ts_hlo_instr_t *r = emit_like(p, i, ops, full_shape(p, i->shape));
  if (r && i->literal) r->literal = ts_part_copy_literal(p, i->literal);
  set(p, i, ts_part_reshard(p, r, i->shape, rep, s), s);
}

static bool is_elementwise(ts_opcode_t op) {
  switch (op) {
  case TS_OP_ABS: case TS_OP_ACOS: case TS_OP_ACOSH: case TS_OP_ADD: case TS_OP_AND: case TS_OP_ASIN:
  case TS_OP_ASINH: case TS_OP_ATAN: case TS_OP_ATAN2: case TS_OP_ATANH: case TS_OP_CBRT: case TS_OP_CEIL:
  case TS_OP_CLAMP: case TS_OP_COUNT_LEADING_ZEROS: case TS_OP_COMPARE: case TS_OP_COMPLEX: case TS_OP_CONVERT:
  case TS_OP_COPY: case TS_OP_COSINE: case TS_OP_COSH: case TS_OP_DIVIDE: case TS_OP_ERF: case TS_OP_EXPONENTIAL:
  case TS_OP_EXPONENTIAL_MINUS_ONE: case TS_OP_FLOOR: case TS_OP_IMAG: case TS_OP_IS_FINITE: case TS_OP_LOG:
  case TS_OP_LOG_PLUS_ONE: case TS_OP_LOGISTIC: case TS_OP_MAP: case TS_OP_MAXIMUM: case TS_OP_MINIMUM:
  case TS_OP_MULTIPLY: case TS_OP_NEGATE: case TS_OP_NOT: case TS_OP_OR: case TS_OP_POPCNT: case TS_OP_POWER:
  case TS_OP_REAL: case TS_OP_REDUCE_PRECISION: case TS_OP_REMAINDER: case TS_OP_ROUND_NEAREST_AFZ:
  case TS_OP_ROUND_NEAREST_EVEN: case TS_OP_RSQRT: case TS_OP_SELECT: case TS_OP_SHIFT_LEFT:
  case TS_OP_SHIFT_RIGHT_ARITHMETIC: case TS_OP_SHIFT_RIGHT_LOGICAL: case TS_OP_SIGN: case TS_OP_SINE:
  case TS_OP_SINH: case TS_OP_SQRT: case TS_OP_SUBTRACT: case TS_OP_TAN: case TS_OP_TANH: case TS_OP_XOR:
    return true;
  default: return false;
  }
}

static void elementwise(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  ts_hlo_instr_t *ops[8];
  if (i->nops > 8) {
    fallback(p, i, s);
    return;
  }
  for (int k = 0; k < i->nops; k++) {
    const ts_shape_t *os = i->ops[k]->shape;
    bool scalar = os->rank == 0 && i->shape->rank > 0; /* select's pred, clamp's bounds */
    ops[k] = operand(p, i, k, scalar ? ts_part_replicated(p) : s);
  }
  set(p, i, emit_like(p, i, ops, ts_part_local_shape(p, i->shape, s)), s);
}

static void transpose(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  int r = i->shape->rank;
  int64_t inv[TS_PART_MAX_RANK];
  for (int k = 0; k < r; k++) inv[a->v.list.v[k]] = k;
  ts_sharding_value_t *os = (ts_sharding_value_t *)s;
  if (s->kind == TS_SHARD_TILED && ts_sharding_transpose(p->a, s, r, inv, &os) != TS_OK) {
    fallback(p, i, s);
    return;
  }
  ts_hlo_instr_t *x = operand(p, i, 0, os);
  set(p, i, emit_like(p, i, &x, ts_part_local_shape(p, i->shape, s)), s);
}

static void broadcast(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  int n = a ? a->v.list.n : 0;
  int64_t opdim[TS_PART_MAX_RANK];
  for (int k = 0; k < n; k++) opdim[k] = k;
  ts_sharding_value_t *os = operand_sharding(p, s, i->shape->rank, n, a ? a->v.list.v : NULL, opdim, n);
  ts_hlo_instr_t *x = operand(p, i, 0, os);
  set(p, i, emit_like(p, i, &x, ts_part_local_shape(p, i->shape, s)), s);
}

/* Whether a scatter's update computation adds the update to the operand. */
static bool reducer_is_add(const ts_hlo_comp_t *c) {
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

/* Sums `partial` (full shape, one partial value per device) over `groups`
 * and leaves the result sharded `s`: a reduce-scatter when s tiles one
 * dimension evenly into as many parts as a group has members (each group
 * then holds every tile once: its members are put in tile order), else an
 * all-reduce and a local slice. */
static ts_hlo_instr_t *sum_partials(part_t *p, ts_hlo_instr_t *partial, const ts_shape_t *shape, int64_t ng,
                                    int64_t gs, int64_t *groups, ts_hlo_comp_t *to_apply,
                                    const ts_sharding_value_t *s) {
  int d = -1;
  bool ok = s->kind == TS_SHARD_TILED;
  for (int k = 0; ok && k < s->data_rank; k++)
    if (s->dims[k] > 1) {
      if (d >= 0) ok = false;
      d = k;
    }
  ok = ok && d >= 0 && s->dims[d] == gs && shape->dims[d] % gs == 0;
  int64_t idx[TS_PART_MAX_RANK + 8];
  int64_t *ordered = ok ? ts_arena_alloc(p->a, sizeof *ordered * (size_t)(ng * gs)) : NULL;
  for (int64_t g = 0; ok && ordered && g < ng; g++) {
    for (int64_t k = 0; k < gs; k++) ordered[g * gs + k] = -1;
    for (int64_t k = 0; ok && k < gs; k++) {
      int64_t dev = groups[g * gs + k];
      if (ts_sharding_tile_index(s, dev, idx) != TS_OK || ordered[g * gs + idx[d]] != -1) ok = false;
      else ordered[g * gs + idx[d]] = dev;
    }
  }
  if (!ok || !ordered) {
    ts_hlo_instr_t *sum = ts_part_collective(p, TS_OP_ALL_REDUCE, partial->shape, partial, ng, gs, groups);
    ts_part_attr_comp(p, sum, "to_apply", to_apply);
    return ts_part_reshard(p, sum, shape, ts_part_replicated(p), s);
  }
  int64_t dims[TS_PART_MAX_RANK];
  for (int k = 0; k < shape->rank; k++) dims[k] = shape->dims[k];
  dims[d] /= gs;
  ts_hlo_instr_t *rs = ts_part_collective(p, TS_OP_REDUCE_SCATTER, ts_part_shape(p, shape->elem, shape->rank, dims),
                                          partial, ng, gs, ordered);
  ts_part_attr_ints(p, rs, "dimensions", 1, (int64_t[]){d});
  ts_part_attr_comp(p, rs, "to_apply", to_apply);
  return rs;
}

/* The reduced dims are tiled where the operand already is: each device
 * reduces its slice and an all-reduce combines them. */
static bool reduce_partial(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (i->nops != 2 || i->ncalled != 1) return false;
  const ts_hlo_instr_t *in = i->ops[0];
  const ts_sharding_value_t *O = p->sh[in->id];
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  if (!O || O->kind != TS_SHARD_TILED || !a || !identity_init(i->ops[1], i->called[0])) return false;
  bool keep[TS_PART_MAX_RANK] = {false}, any = false;
  for (int k = 0; k < a->v.list.n; k++) {
    int64_t d = a->v.list.v[k];
    if (O->dims[d] > 1) {
      if (in->shape->dims[d] % O->dims[d] != 0) return false; /* padding would join the reduction */
      keep[d] = any = true;
    }
  }
  if (!any) return false;
  ts_sharding_value_t *op = ts_part_replicate_dims(p, O, in->shape->rank, keep);
  ts_hlo_instr_t *ops[2] = {operand(p, i, 0, op), operand(p, i, 1, ts_part_replicated(p))};
  ts_hlo_instr_t *partial = emit_like(p, i, ops, full_shape(p, i->shape));
  int64_t ng, gs, *groups;
  ts_part_groups_over_dims(p, op, keep, &ng, &gs, &groups);
  if (!groups || !partial) return p->st != TS_OK;
  set(p, i, sum_partials(p, partial, i->shape, ng, gs, groups, ts_part_clone_comp(p, i->called[0]), s), s);
  return true;
}

/* reduce: the kept operand dims carry the result's tiles; reduced dims are
 * gathered unless reduce_partial applies. */
static void reduce(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  int n = i->nops / 2;
  if (reduce_partial(p, i, s)) return;
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  const ts_shape_t *in = i->ops[0]->shape;
  const ts_sharding_value_t *s0 = leaf(s, 0);
  for (int k = 1; k < n; k++)
    if (!ts_sharding_equal(leaf(s, k), s0)) {
      fallback(p, i, s);
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
  ts_sharding_value_t *os = operand_sharding(p, s0, m, m, outdim, opdim, in->rank);
  ts_hlo_instr_t *ops[256];
  if (i->nops > 256) {
    fallback(p, i, s);
    return;
  }
  for (int k = 0; k < n; k++) ops[k] = operand(p, i, k, os);
  for (int k = n; k < i->nops; k++) ops[k] = operand(p, i, k, ts_part_replicated(p));
  set(p, i, emit_like(p, i, ops, ts_part_local_shape(p, i->shape, s)), s);
}

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
  return operand_sharding(p, s, i->shape->rank, n, outdim, opdim, os->rank);
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
  ts_sharding_value_t *sc = select_dims(p, lp, lc->v.list.n, lc->v.list.v);
  ts_sharding_value_t *rp = ts_part_embed(p, sc, rc->v.list.n, rhs->shape->rank, rc->v.list.v);
  if (!lp || !rp) return false;
  ts_hlo_instr_t *ops[2] = {operand(p, i, 0, lp), operand(p, i, 1, rp)};
  ts_hlo_instr_t *partial = emit_like(p, i, ops, full_shape(p, i->shape));
  int64_t ng, gs, *groups;
  ts_part_groups_over_dims(p, lp, keep, &ng, &gs, &groups);
  if (!groups || !partial) return p->st != TS_OK;
  set(p, i, sum_partials(p, partial, i->shape, ng, gs, groups, ts_part_sum_comp(p, i->shape->elem), s), s);
  return true;
}

static void dot(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (i->nops != 2) {
    fallback(p, i, s);
    return;
  }
  if (dot_contracting(p, i, s)) return;
  ts_hlo_instr_t *ops[2];
  for (int side = 0; side < 2; side++) ops[side] = operand(p, i, side, dot_operand_sharding(p, i, side, s));
  set(p, i, emit_like(p, i, ops, ts_part_local_shape(p, i->shape, s)), s);
}

/* convolution sharded on its batch and output-feature dims (data and
 * model parallelism): like a dot, the lhs takes the batch tiles, the rhs
 * the output-feature tiles, and every device convolves its own. Spatial
 * tiles need halo exchange (not written yet): they fold into replication
 * and the result is sliced after. */
static bool convolution(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
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
  ts_sharding_value_t *ls = operand_sharding(p, sp, r, 1, &ob, &ib, i->ops[0]->shape->rank);
  ts_sharding_value_t *rs = operand_sharding(p, sp, r, 1, &of, &kf, i->ops[1]->shape->rank);
  ts_hlo_instr_t *ops[2] = {operand(p, i, 0, ls), operand(p, i, 1, rs)};
  ts_hlo_instr_t *x = emit_like(p, i, ops, ts_part_local_shape(p, i->shape, sp));
  set(p, i, ts_part_reshard(p, x, i->shape, sp, s), s);
  return true;
}

static void reshape(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_shape_t *from = i->ops[0]->shape, *to = i->shape;
  if (s->kind != TS_SHARD_TILED) {
    ts_hlo_instr_t *x = operand(p, i, 0, s);
    set(p, i, emit_like(p, i, &x, ts_part_local_shape(p, to, s)), s);
    return;
  }
  ts_sharding_value_t *os = NULL;
  if (ts_sharding_reshape(p->a, s, to, from, &os) != TS_OK || !os) {
    fallback(p, i, s);
    return;
  }
  /* Local reshape only when every tiled dim divides evenly on both sides. */
  for (int d = 0; d < to->rank; d++)
    if (to->dims[d] % s->dims[d] != 0) {
      fallback(p, i, s);
      return;
    }
  if (os->kind == TS_SHARD_TILED)
    for (int d = 0; d < from->rank; d++)
      if (from->dims[d] % os->dims[d] != 0) {
        fallback(p, i, s);
        return;
      }
  ts_hlo_instr_t *x = operand(p, i, 0, os);
  set(p, i, emit_like(p, i, &x, ts_part_local_shape(p, to, s)), s);
}

/* ---- ops that move data along some dims only ----------------------------- */

/* The dims an op changes (slices, pads, concatenates, reverses, sorts,
 * windows): on every other dim it works shard by shard. false when the op
 * is not one of these. */
static bool touched_dims(const ts_hlo_instr_t *i, bool *touched) {
  int r = i->shape->rank;
  const ts_shape_t *in = i->nops ? i->ops[0]->shape : i->shape;
  if (i->shape->elem == TS_TUPLE) {
    if (i->op != TS_OP_SORT) return false;
    r = in->rank;
  } else if (i->op != TS_OP_IOTA && in->rank != r) {
    return false;
  }
  for (int d = 0; d < r; d++) touched[d] = false;
  const ts_hlo_attr_t *a;
  switch (i->op) {
  case TS_OP_SLICE:
    a = ts_hlo_instr_attr(i, "slice");
    for (int d = 0; d < r; d++)
      touched[d] = a->v.slice->start[d] != 0 || a->v.slice->limit[d] != in->dims[d] || a->v.slice->stride[d] != 1;
    return true;
  case TS_OP_PAD:
    a = ts_hlo_instr_attr(i, "padding");
    for (int d = 0; d < r; d++)
      touched[d] = a->v.padding->lo[d] != 0 || a->v.padding->hi[d] != 0 || a->v.padding->interior[d] != 0;
    return true;
  case TS_OP_CONCATENATE: case TS_OP_REVERSE: case TS_OP_SORT:
    a = ts_hlo_instr_attr(i, "dimensions");
    for (int k = 0; a && k < a->v.list.n; k++) touched[a->v.list.v[k]] = true;
    return a != NULL;
  case TS_OP_IOTA:
    a = ts_hlo_instr_attr(i, "iota_dimension");
    if (a) touched[a->v.i] = true;
    return a != NULL;
  case TS_OP_DYNAMIC_SLICE:
    for (int d = 0; d < r; d++) touched[d] = i->shape->dims[d] != in->dims[d];
    return true;
  case TS_OP_DYNAMIC_UPDATE_SLICE:
    for (int d = 0; d < r; d++) touched[d] = i->ops[1]->shape->dims[d] != in->dims[d];
    return true;
  case TS_OP_REDUCE_WINDOW: {
    a = ts_hlo_instr_attr(i, "window");
    if (!a || a->v.window->n != r || i->nops != 2) return false;
    for (int d = 0; d < r; d++) {
      const ts_window_dim_t *w = &a->v.window->dims[d];
      touched[d] = w->size != 1 || w->stride != 1 || w->pad_lo || w->pad_hi || w->lhs_dilate > 1 ||
                   w->rhs_dilate > 1 || w->reversal;
    }
    return true;
  }
  default: return false;
  }
}

/* An op that only changes `touched` dims runs on shards of the others: the
 * result's tiles on touched dims fold into replication, same-rank operands
 * take that sharding, scalars (pad values, start indices) are replicated,
 * and the result is sliced to `s` after. Attributes that name sizes on the
 * untouched dims (slice limits, dynamic_slice_sizes) get the local sizes. */
static bool passthrough(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  bool touched[TS_PART_MAX_RANK], keep[TS_PART_MAX_RANK];
  if (s->kind != TS_SHARD_TILED && !(s->kind == TS_SHARD_TUPLE && i->op == TS_OP_SORT)) return false;
  if (!touched_dims(i, touched)) return false;
  const ts_sharding_value_t *s0 = leaf(s, 0);
  if (s0->kind != TS_SHARD_TILED) return false;
  for (int k = 1; s->kind == TS_SHARD_TUPLE && k < s->ntuple; k++)
    if (!ts_sharding_equal(s->tuple[k], s0)) return false;
  int r = s0->data_rank;
  for (int d = 0; d < r; d++) keep[d] = !touched[d];
  ts_sharding_value_t *sp = ts_part_replicate_dims(p, s0, r, keep);
  ts_sharding_value_t *full = (ts_sharding_value_t *)sp;
  if (s->kind == TS_SHARD_TUPLE) {
    ts_sharding_value_t *el[64];
    if (s->ntuple > 64) return false;
    for (int k = 0; k < s->ntuple; k++) el[k] = sp;
    if (ts_sharding_tuple(p->a, s->ntuple, el, &full) != TS_OK) return false;
  }
  ts_hlo_instr_t *ops[256];
  if (i->nops > 256) return false;
  for (int k = 0; k < i->nops; k++) {
    const ts_shape_t *os = i->ops[k]->shape;
    ops[k] = operand(p, i, k, os->rank == r && os->rank > 0 ? sp : ts_part_replicated(p));
  }
  const ts_shape_t *ls = ts_part_local_shape(p, i->shape, full);
  ts_hlo_instr_t *x = emit_like(p, i, ops, ls);
  if (!x) return true;
  /* Local sizes on the untouched dims. */
  const ts_shape_t *lin = i->nops > 0 && ops[0] ? ops[0]->shape : ls;
  for (int k = 0; k < x->nattrs; k++) {
    ts_hlo_attr_t *a = &x->attrs[k];
    if (a->kind == TS_ATTR_SLICE)
      for (int d = 0; d < r; d++)
        if (!touched[d]) a->v.slice->limit[d] = lin->dims[d];
    if (a->kind == TS_ATTR_INT_LIST && !strcmp(a->name, "dynamic_slice_sizes"))
      for (int d = 0; d < r && d < a->v.list.n; d++)
        if (!touched[d]) a->v.list.v[d] = ls->dims[d];
  }
  set(p, i, ts_part_reshard(p, x, i->shape, full, s), s);
  return true;
}

/* A slice along one tiled dim d (stride 1) where operand and result share
 * the sharding: every result shard reads a window of the operand that
 * spans at most a few neighbouring shards, so those shards come over by
 * collective-permute (halo exchange, GSPMD section 4.3) instead of a
 * gather of the whole dim. */
static bool slice_halo(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "slice");
  if (s->kind != TS_SHARD_TILED || !a) return false;
  const ts_shape_t *in = i->ops[0]->shape, *out = i->shape;
  int r = out->rank, d = -1;
  for (int k = 0; k < r; k++) {
    bool touched = a->v.slice->start[k] != 0 || a->v.slice->limit[k] != in->dims[k] || a->v.slice->stride[k] != 1;
    if (!touched || s->dims[k] == 1) continue;
    if (d >= 0 || a->v.slice->stride[k] != 1) return false; /* one tiled touched dim, stride 1 */
    d = k;
  }
  if (d < 0) return false;
  int64_t t = s->dims[d], ci = (in->dims[d] + t - 1) / t, co = (out->dims[d] + t - 1) / t;
  int64_t start = a->v.slice->start[d], smin = INT64_MAX, smax = INT64_MIN;
  for (int64_t q = 0; q < t && q * co < out->dims[d]; q++) {
    int64_t lo = (start + q * co) / ci, hi = (start + q * co + co - 1) / ci;
    if (hi > t - 1) hi = t - 1;
    if (lo - q < smin) smin = lo - q;
    if (hi - q > smax) smax = hi - q;
  }
  if (smax < smin || smax - smin + 1 > 4) return false;
  /* Only the part of the first and last source shards a window reads moves:
   * [lo, ci) of the first, [0, hi) of the last. */
  int64_t lo = ci, hi = 0;
  for (int64_t q = 0; q < t && q * co < out->dims[d]; q++) {
    int64_t a0 = start + q * co - (q + smin) * ci, b0 = start + q * co + co - (q + smax) * ci;
    if (a0 < lo) lo = a0;
    if (b0 > hi) hi = b0;
  }
  if (lo < 0) lo = 0;
  if (hi > ci) hi = ci;
  ts_hlo_instr_t *x = operand(p, i, 0, s);
  if (!x) return true;
  ts_hlo_instr_t *pieces[8];
  int64_t idx[TS_PART_MAX_RANK + 8], src;
  for (int64_t sh = smin; sh <= smax; sh++) {
    ts_hlo_instr_t *part = x;
    int64_t from = sh == smin ? lo : 0, to = sh == smax ? hi : ci;
    if (from != 0 || to != ci) {
      int64_t st[TS_PART_MAX_RANK] = {0}, lim[TS_PART_MAX_RANK];
      for (int k = 0; k < r; k++) lim[k] = x->shape->dims[k];
      st[d] = from;
      lim[d] = to;
      part = ts_part_slice(p, x, st, lim);
    }
    if (sh == 0) {
      pieces[sh - smin] = part;
      continue;
    }
    /* Device at tile position q receives from the one at q + sh. */
    int64_t *pairs = ts_arena_alloc(p->a, sizeof *pairs * 2 * (size_t)p->n), np = 0;
    if (!pairs) return true;
    for (int64_t dev = 0; dev < p->n; dev++) {
      if (ts_sharding_tile_index(s, dev, idx) != TS_OK) return false;
      idx[d] += sh;
      if (idx[d] < 0 || idx[d] >= t || ts_sharding_tile_device(s, idx, &src) != TS_OK) continue;
      pairs[2 * np] = src;
      pairs[2 * np + 1] = dev;
      np++;
    }
    ts_hlo_instr_t *cp = part ? ts_part_add(p, TS_OP_COLLECTIVE_PERMUTE, part->shape, &part, 1, "collective-permute") : NULL;
    ts_part_attr_int(p, cp, "channel_id", p->next_channel++);
    ts_hlo_attr_t pa = {.name = "source_target_pairs", .kind = TS_ATTR_INT_LISTS};
    pa.v.lists.n = (int)np;
    pa.v.lists.lists = ts_arena_alloc(p->dst->arena, sizeof *pa.v.lists.lists * (size_t)(np + 1));
    for (int64_t k = 0; pa.v.lists.lists && k < np; k++) {
      pa.v.lists.lists[k].n = 2;
      pa.v.lists.lists[k].v = ts_arena_alloc(p->dst->arena, 2 * sizeof(int64_t));
      if (!pa.v.lists.lists[k].v) return true;
      pa.v.lists.lists[k].v[0] = pairs[2 * k];
      pa.v.lists.lists[k].v[1] = pairs[2 * k + 1];
    }
    if (cp && pa.v.lists.lists && ts_hlo_instr_add_attr(cp, &pa) != TS_OK) p->st = TS_ERR_NOMEM;
    pieces[sh - smin] = cp;
  }
  int np = (int)(smax - smin + 1);
  ts_hlo_instr_t *buf = pieces[0];
  if (np > 1) {
    int64_t dims[TS_PART_MAX_RANK];
    for (int k = 0; k < r; k++) dims[k] = x->shape->dims[k];
    dims[d] = 0;
    for (int k = 0; k < np; k++) dims[d] += pieces[k] ? pieces[k]->shape->dims[d] : 0;
    buf = ts_part_add(p, TS_OP_CONCATENATE, ts_part_shape(p, out->elem, r, dims), pieces, np, "concatenate");
    ts_part_attr_ints(p, buf, "dimensions", 1, (int64_t[]){d});
  }
  /* The window along d: at start + q*co - (q+smin)*ci. */
  const ts_shape_t *ls = ts_part_local_shape(p, out, s);
  ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 1];
  int64_t *table = ts_arena_alloc(p->a, sizeof *table * (size_t)p->n), sizes[TS_PART_MAX_RANK], zero = 0;
  if (!table || !ls || !buf) return true;
  ops[0] = buf;
  for (int k = 0; k < r; k++) {
    sizes[k] = k == d ? co : buf->shape->dims[k];
    if (k != d) {
      ops[1 + k] = ts_part_const_s32(p, -1, &zero);
      continue;
    }
    for (int64_t dev = 0; dev < p->n; dev++) {
      if (ts_sharding_tile_index(s, dev, idx) != TS_OK) return false;
      table[dev] = start + idx[d] * co - (idx[d] + smin) * ci - lo;
    }
    ops[1 + k] = ts_part_table_lookup(p, table);
  }
  ts_hlo_instr_t *win = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ts_part_shape(p, out->elem, r, sizes), ops, r + 1,
                                    "dynamic-slice");
  ts_part_attr_ints(p, win, "dynamic_slice_sizes", r, sizes);
  /* The other (untiled) dims as the slice says; d is already done. */
  bool more = false;
  for (int k = 0; k < r; k++) more |= k != d && sizes[k] != ls->dims[k];
  if (more && win) {
    ts_hlo_instr_t *sl = emit_like(p, i, &win, ls);
    for (int k = 0; sl && k < sl->nattrs; k++)
      if (sl->attrs[k].kind == TS_ATTR_SLICE) {
        sl->attrs[k].v.slice->start[d] = 0;
        sl->attrs[k].v.slice->limit[d] = co;
      }
    win = sl;
  }
  set(p, i, win, s);
  return true;
}

/* dynamic-update-slice whose updated dims are tiled: the update is
 * gathered on those dims only (it is small), and every device writes the
 * part that falls in its shard: the update padded by a shard length on
 * both sides, a window of it at the device's offset, and a select under an
 * iota mask of the positions the update covers. */
static bool dus_tiled(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (s->kind != TS_SHARD_TILED || i->nops < 3) return false;
  const ts_shape_t *in = i->shape, *us = i->ops[1]->shape;
  int r = in->rank;
  bool touched[TS_PART_MAX_RANK], keep[TS_PART_MAX_RANK], any = false;
  for (int d = 0; d < r; d++) {
    touched[d] = us->dims[d] != in->dims[d];
    keep[d] = !touched[d];
    any |= touched[d] && s->dims[d] > 1;
    if (touched[d] && s->dims[d] > 1 && in->dims[d] % s->dims[d] != 0) return false;
  }
  if (!any) return false;
  ts_sharding_value_t *usp = ts_part_replicate_dims(p, s, r, keep);
  ts_hlo_instr_t *x = operand(p, i, 0, s), *u = operand(p, i, 1, usp);
  if (!x || !u) return true;
  const ts_shape_t *ls = x->shape;
  int64_t hi[TS_PART_MAX_RANK], idx[TS_PART_MAX_RANK + 8];
  for (int d = 0; d < r; d++) hi[d] = touched[d] ? ls->dims[d] : 0;
  /* The update padded by a shard length on both sides of touched dims
   * (ts_part_pad pads high; the low side is set on its padding). */
  ts_hlo_instr_t *padded = ts_part_pad(p, u, hi);
  ts_hlo_attr_t *pa = padded ? (ts_hlo_attr_t *)ts_hlo_instr_attr(padded, "padding") : NULL;
  if (!pa) return true;
  int64_t dims[TS_PART_MAX_RANK];
  for (int d = 0; d < r; d++) {
    pa->v.padding->lo[d] = hi[d];
    dims[d] = u->shape->dims[d] + 2 * hi[d];
  }
  padded->shape = ts_part_shape(p, in->elem, r, dims);
  ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 1], *mask = NULL;
  ops[0] = padded;
  int64_t *table = ts_arena_alloc(p->a, sizeof *table * (size_t)p->n);
  if (!table) return true;
  const ts_shape_t *ps = ts_part_shape(p, TS_PRED, r, ls->dims), *is = ts_part_shape(p, TS_S32, r, ls->dims);
  for (int d = 0; d < r; d++) {
    int64_t zero = 0;
    if (!touched[d]) {
      ops[1 + d] = ts_part_const_s32(p, -1, &zero);
      continue;
    }
    /* o = clamp(start, 0, N - u) - (shard offset); window start c - o. */
    int64_t lim = in->dims[d] - us->dims[d], c = ls->dims[d];
    ts_hlo_instr_t *st = operand(p, i, 2 + d, ts_part_replicated(p));
    if (st && st->shape->elem != TS_S32)
      st = ts_part_add(p, TS_OP_CONVERT, ts_part_shape(p, TS_S32, 0, NULL), &st, 1, "convert");
    ts_hlo_instr_t *lo = ts_part_const_s32(p, -1, &zero), *hc = ts_part_const_s32(p, -1, &lim);
    ts_hlo_instr_t *g = ts_part_add(p, TS_OP_CLAMP, ts_part_shape(p, TS_S32, 0, NULL), (ts_hlo_instr_t *[]){lo, st, hc}, 3, "clamp");
    for (int64_t dev = 0; dev < p->n; dev++) {
      if (ts_sharding_tile_index(s, dev, idx) != TS_OK) return false;
      table[dev] = idx[d] * c;
    }
    ts_hlo_instr_t *off = ts_part_table_lookup(p, table);
    ts_hlo_instr_t *o = ts_part_add(p, TS_OP_SUBTRACT, g ? g->shape : NULL, (ts_hlo_instr_t *[]){g, off}, 2, "subtract");
    ts_hlo_instr_t *cc = ts_part_const_s32(p, -1, &c);
    ops[1 + d] = ts_part_add(p, TS_OP_SUBTRACT, o ? o->shape : NULL, (ts_hlo_instr_t *[]){cc, o}, 2, "subtract");
    /* mask_d: o <= iota < o + u */
    ts_hlo_instr_t *io = ts_part_add(p, TS_OP_IOTA, is, NULL, 0, "iota");
    ts_part_attr_int(p, io, "iota_dimension", d);
    int64_t ud = us->dims[d];
    ts_hlo_instr_t *ucon = ts_part_const_s32(p, -1, &ud);
    ts_hlo_instr_t *oe = ts_part_add(p, TS_OP_ADD, o ? o->shape : NULL, (ts_hlo_instr_t *[]){o, ucon}, 2, "add");
    ts_hlo_instr_t *ob = ts_part_broadcast_scalar(p, o, r, ls->dims), *eb = ts_part_broadcast_scalar(p, oe, r, ls->dims);
    ts_hlo_instr_t *ge = ts_part_add(p, TS_OP_COMPARE, ps, (ts_hlo_instr_t *[]){io, ob}, 2, "compare");
    ts_part_attr_ident(p, ge, "direction", "GE");
    ts_hlo_instr_t *lt = ts_part_add(p, TS_OP_COMPARE, ps, (ts_hlo_instr_t *[]){io, eb}, 2, "compare");
    ts_part_attr_ident(p, lt, "direction", "LT");
    ts_hlo_instr_t *m = ts_part_add(p, TS_OP_AND, ps, (ts_hlo_instr_t *[]){ge, lt}, 2, "and");
    mask = mask ? ts_part_add(p, TS_OP_AND, ps, (ts_hlo_instr_t *[]){mask, m}, 2, "and") : m;
  }
  ts_hlo_instr_t *w = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ls, ops, r + 1, "dynamic-slice");
  ts_part_attr_ints(p, w, "dynamic_slice_sizes", r, ls->dims);
  ts_hlo_instr_t *sel = ts_part_add(p, TS_OP_SELECT, ls, (ts_hlo_instr_t *[]){mask, w, x}, 3, "select");
  set(p, i, sel, s);
  return true;
}

/* gather whose result is sharded on its batch dims only: the indices take
 * those tiles, the operand is replicated, and every device gathers its own
 * rows (GSPMD's index passthrough). */
static bool gather(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
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
  ts_sharding_value_t *is = operand_sharding(p, sb, r, n, outdim, opdim, idx->rank);
  ts_hlo_instr_t *ops[2] = {operand(p, i, 0, ts_part_replicated(p)), operand(p, i, 1, is)};
  ts_hlo_instr_t *x = emit_like(p, i, ops, ts_part_local_shape(p, i->shape, sb));
  set(p, i, ts_part_reshard(p, x, i->shape, sb, s), s);
  return true;
}

/* scatter-add of updates sharded on their scatter dims: every device adds
 * its updates into zeros, an all-reduce sums them, and the operand is added
 * once (embedding gradients). */
static bool scatter_add(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (i->nops != 3 || i->ncalled != 1 || !reducer_is_add(i->called[0])) return false;
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
  ts_sharding_value_t *is = operand_sharding(p, up, us->rank, n, outdim, opdim, idx->rank);
  ts_hlo_instr_t *base = operand(p, i, 0, ts_part_replicated(p));
  ts_hlo_instr_t *zeros = base ? ts_part_broadcast_scalar(p, ts_part_zero(p, i->shape->elem), i->shape->rank,
                                                          i->shape->dims) : NULL;
  ts_hlo_instr_t *ops[3] = {zeros, operand(p, i, 1, is), operand(p, i, 2, up)};
  ts_hlo_instr_t *local = emit_like(p, i, ops, full_shape(p, i->shape));
  int64_t ng, gs, *groups;
  ts_part_groups_over_dims(p, up, keep, &ng, &gs, &groups);
  if (!groups || !local) return p->st != TS_OK;
  ts_hlo_instr_t *sum = ts_part_collective(p, TS_OP_ALL_REDUCE, local->shape, local, ng, gs, groups);
  ts_part_attr_comp(p, sum, "to_apply", ts_part_sum_comp(p, i->shape->elem));
  ts_hlo_instr_t *r = ts_part_add(p, TS_OP_ADD, local->shape, (ts_hlo_instr_t *[]){base, sum}, 2, "add");
  set(p, i, ts_part_reshard(p, r, i->shape, ts_part_replicated(p), s), s);
  return true;
}

static const char *target_of(const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "custom_call_target");
  return a && a->kind == TS_ATTR_STRING ? a->v.s : "";
}

static ts_hlo_comp_t *partition_comp(part_t *p, const ts_hlo_comp_t *c, ts_sharding_value_t *const *params,
                                     const ts_sharding_value_t *root);

static void control_flow(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  ts_hlo_instr_t *ops[256];
  if (i->nops > 256) {
    fallback(p, i, s);
    return;
  }
  if (i->op == TS_OP_WHILE) {
    const ts_hlo_comp_t *cond = ts_hlo_instr_attr(i, "condition")->v.comps.comps[0];
    const ts_hlo_comp_t *body = ts_hlo_instr_attr(i, "body")->v.comps.comps[0];
    ts_sharding_value_t *ps[1] = {(ts_sharding_value_t *)s};
    ts_hlo_comp_t *nc = partition_comp(p, cond, ps, ts_part_replicated(p));
    ts_hlo_comp_t *nb = partition_comp(p, body, ps, s);
    ops[0] = operand(p, i, 0, s);
    ts_hlo_instr_t *w = ts_part_add(p, TS_OP_WHILE, ts_part_local_shape(p, i->shape, s), ops, 1, i->name);
    ts_part_attr_comp(p, w, "condition", nc);
    ts_part_attr_comp(p, w, "body", nb);
    set(p, i, w, s);
    return;
  }
  if (i->op == TS_OP_CALL || i->op == TS_OP_FUSION) {
    const ts_hlo_comp_t *callee = i->called[0];
    ts_sharding_value_t *ps[256];
    for (int k = 0; k < callee->nparams; k++) ps[k] = sharding_of(p, callee->params[k]);
    ts_hlo_comp_t *nc = partition_comp(p, callee, ps, s);
    for (int k = 0; k < i->nops; k++) ops[k] = operand(p, i, k, ps[k]);
    ts_hlo_instr_t *c = ts_part_add(p, i->op, ts_part_local_shape(p, i->shape, s), ops, i->nops, i->name);
    for (int k = 0; k < i->nattrs; k++) {
      const ts_hlo_attr_t *a = &i->attrs[k];
      if (a->kind == TS_ATTR_COMP) ts_part_attr_comp(p, c, a->name, nc);
      else ts_part_copy_attr(p, c, a);
    }
    set(p, i, c, s);
    return;
  }
  /* conditional: each branch takes its operand in its parameter's sharding
   * and gives its result in the conditional's. */
  ops[0] = operand(p, i, 0, ts_part_replicated(p));
  ts_hlo_comp_t *br[256];
  for (int k = 0; k < i->ncalled && k + 1 < i->nops; k++) {
    const ts_hlo_comp_t *b = i->called[k];
    ts_sharding_value_t *ps[1] = {sharding_of(p, b->params[0])};
    br[k] = partition_comp(p, b, ps, s);
    ops[k + 1] = operand(p, i, k + 1, ps[0]);
  }
  ts_hlo_instr_t *c = ts_part_add(p, i->op, ts_part_local_shape(p, i->shape, s), ops, i->nops, i->name);
  int next = 0;
  for (int k = 0; k < i->nattrs && c; k++) {
    const ts_hlo_attr_t *a = &i->attrs[k];
    if (a->kind == TS_ATTR_COMP) {
      ts_part_attr_comp(p, c, a->name, br[next++]);
    } else if (a->kind == TS_ATTR_COMP_LIST) {
      ts_hlo_attr_t na = *a;
      na.name = ts_arena_strdup(p->dst->arena, a->name);
      na.v.comps.comps = ts_arena_alloc(p->dst->arena, sizeof(ts_hlo_comp_t *) * (size_t)a->v.comps.n);
      if (!na.v.comps.comps) return;
      for (int b = 0; b < a->v.comps.n; b++) na.v.comps.comps[b] = br[next++];
      if (ts_hlo_instr_add_attr(c, &na) != TS_OK) p->st = TS_ERR_NOMEM;
    } else {
      ts_part_copy_attr(p, c, a);
    }
  }
  set(p, i, c, s);
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
    ops[k] = is_manual(p->sh[o->id]) ? p->val[o->id] : operand(p, i, k, ts_part_replicated(p));
  }
  ts_hlo_instr_t *r = emit_like(p, i, ops, full_shape(p, i->shape));
  set(p, i, r, s);
}

static void partition_instr(part_t *p, const ts_hlo_instr_t *i, ts_sharding_value_t *param_sharding) {
  ts_sharding_value_t *s = param_sharding ? param_sharding : sharding_of(p, i);
  if (!s) return;
  if (i->op == TS_OP_PARAMETER) {
    ts_hlo_instr_t *v = ts_part_add(p, TS_OP_PARAMETER, ts_part_local_shape(p, i->shape, s), NULL, 0, i->name);
    if (v) v->param_number = i->param_number;
    set(p, i, v, s);
    return;
  }
  if (i->op == TS_OP_CUSTOM_CALL) {
    const char *t = target_of(i);
    if (!strcmp(t, "Sharding")) {
      /* A sharding constraint: the value, resharded. A manual one keeps the
       * local value. */
      if (is_manual(s)) set(p, i, p->val[i->ops[0]->id], s);
      else set(p, i, operand(p, i, 0, s), s);
      return;
    }
    if (!strcmp(t, "SPMDFullToShardShape")) {
      const ts_hlo_instr_t *o = i->ops[0];
      ts_sharding_value_t *os = sharding_of(p, o);
      ts_hlo_instr_t *x = operand(p, i, 0, os);
      if (x && !ts_shape_equal(x->shape, i->shape, false))
        x = ts_part_reshape(p, x, i->shape->rank, i->shape->dims); /* same elements: shard shape == region shape */
      set(p, i, x, s);
      return;
    }
    if (!strcmp(t, "SPMDShardToFullShape")) {
      set(p, i, p->val[i->ops[0]->id], s);
      return;
    }
  }
  if (is_manual(s) && i->op != TS_OP_GET_TUPLE_ELEMENT && i->op != TS_OP_TUPLE) {
    manual(p, i, s);
    return;
  }
  if (s->kind == TS_SHARD_TUPLE && i->op != TS_OP_TUPLE && i->op != TS_OP_GET_TUPLE_ELEMENT &&
      i->op != TS_OP_WHILE && i->op != TS_OP_CALL && i->op != TS_OP_CONDITIONAL && i->op != TS_OP_REDUCE) {
    fallback(p, i, s);
    return;
  }
  switch (i->op) {
  case TS_OP_TUPLE: {
    ts_hlo_instr_t *ops[1024];
    if (i->nops > 1024) {
      fallback(p, i, s);
      return;
    }
    for (int k = 0; k < i->nops; k++) ops[k] = operand(p, i, k, leaf(s, k));
    set(p, i, emit_like(p, i, ops, ts_part_local_shape(p, i->shape, s)), s);
    return;
  }
  case TS_OP_GET_TUPLE_ELEMENT: {
    const ts_hlo_instr_t *o = i->ops[0];
    int64_t k = ts_hlo_instr_attr(i, "index")->v.i;
    const ts_sharding_value_t *es = leaf(p->sh[o->id], (int)k);
    ts_hlo_instr_t *x = p->val[o->id];
    ts_hlo_instr_t *g = x ? ts_part_add(p, TS_OP_GET_TUPLE_ELEMENT, x->shape->tuple[k], &x, 1, i->name) : NULL;
    ts_part_attr_int(p, g, "index", k);
    set(p, i, ts_part_reshard(p, g, i->shape, es, s), s);
    return;
  }
  case TS_OP_TRANSPOSE: transpose(p, i, s); return;
  case TS_OP_BROADCAST: broadcast(p, i, s); return;
  case TS_OP_REDUCE: reduce(p, i, s); return;
  case TS_OP_DOT: dot(p, i, s); return;
  case TS_OP_RESHAPE: reshape(p, i, s); return;
  case TS_OP_WHILE: case TS_OP_CALL: case TS_OP_CONDITIONAL: control_flow(p, i, s); return;
  case TS_OP_GATHER: if (gather(p, i, s)) return; break;
  case TS_OP_SCATTER: if (scatter_add(p, i, s)) return; break;
  case TS_OP_SLICE: if (slice_halo(p, i, s)) return; break;
  case TS_OP_CONVOLUTION: if (convolution(p, i, s)) return; break;
  case TS_OP_DYNAMIC_UPDATE_SLICE: if (dus_tiled(p, i, s)) return; break;
  default: break;
  }
  if (passthrough(p, i, s)) return;
  if (is_elementwise(i->op) && i->shape->elem != TS_TUPLE) {
    elementwise(p, i, s);
    return;
  }
  fallback(p, i, s);
}

/* Topological order over operands (source text order need not be). */
static ts_status_t order(part_t *p, const ts_hlo_comp_t *c, const ts_hlo_instr_t ***out) {
  const ts_hlo_instr_t **ord = ts_calloc((size_t)c->ninstrs + 1, sizeof *ord);
  uint8_t *state = ts_calloc((size_t)p->src->next_id + 1, 1);
  const ts_hlo_instr_t **stack = ts_calloc((size_t)c->ninstrs + 1, sizeof *stack);
  int *next = ts_calloc((size_t)c->ninstrs + 1, sizeof *next);
  if (!ord || !state || !stack || !next) {
    ts_free(ord);
    ts_free(state);
    ts_free(stack);
    ts_free(next);
    return TS_ERR_NOMEM;
  }
  int n = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    if (state[c->instrs[k]->id]) continue;
    int sp = 0;
    stack[sp] = c->instrs[k];
    next[sp++] = 0;
    state[c->instrs[k]->id] = 1;
    while (sp) {
      const ts_hlo_instr_t *t = stack[sp - 1];
      int e = next[sp - 1]++;
      if (e < t->nops) {
        const ts_hlo_instr_t *d = t->ops[e];
        if (!state[d->id]) {
          state[d->id] = 1;
          stack[sp] = d;
          next[sp++] = 0;
        }
      } else {
        ord[n++] = t;
        sp--;
      }
    }
  }
  ts_free(state);
  ts_free(stack);
  ts_free(next);
  *out = ord;
  return TS_OK;
}

static ts_hlo_comp_t *partition_comp(part_t *p, const ts_hlo_comp_t *c, ts_sharding_value_t *const *params,
                                     const ts_sharding_value_t *root) {
  if (p->st != TS_OK) return NULL;
  char name[512];
  snprintf(name, sizeof name, "%s", c->name);
  for (int k = 1; ts_hlo_module_find_comp(p->dst, name); k++) snprintf(name, sizeof name, "%s.spmd%d", c->name, k);
  ts_hlo_comp_t *out = NULL;
  ts_status_t st = ts_hlo_comp_add(p->dst, name, &out);
  if (st != TS_OK) {
    p->st = st;
    return NULL;
  }
  ts_hlo_comp_t *saved = p->cur;
  ts_hlo_instr_t *saved_pid = p->pid;
  p->cur = out;
  p->pid = NULL;
  const ts_hlo_instr_t **ord = NULL;
  if ((st = order(p, c, &ord)) != TS_OK) {
    p->st = st;
    return NULL;
  }
  for (int k = 0; k < c->ninstrs && p->st == TS_OK; k++) {
    const ts_hlo_instr_t *i = ord[k];
    partition_instr(p, i, i->op == TS_OP_PARAMETER && params ? params[i->param_number] : NULL);
  }
  ts_free(ord);
  if (p->st == TS_OK) {
    const ts_hlo_instr_t *r = c->root;
    ts_hlo_instr_t *v = root ? ts_part_reshard(p, p->val[r->id], r->shape, p->sh[r->id], root) : p->val[r->id];
    if (v) ts_hlo_comp_set_root(out, v);
    if (p->st == TS_OK && ts_hlo_comp_index_params(out) != TS_OK)
      ts_part_fail(p, NULL, TS_ERR_INTERNAL, "computation %s: parameters are not dense", c->name);
  }
  p->cur = saved;
  p->pid = saved_pid;
  return out;
}

ts_status_t ts_partition(ts_hlo_module_t *m, const ts_partition_opts_t *opts, ts_hlo_module_t **out,
                         ts_diag_t *diag) {
  *out = NULL;
  part_t p = {0};
  if (opts) p.opts = *opts;
  else ts_partition_opts_default(&p.opts);
  p.src = m;
  p.diag = diag;
  p.n = p.opts.num_partitions > 0 ? p.opts.num_partitions : m->num_partitions;
  if (p.n < 1) {
    ts_diag_plain(diag, "the partition count is unknown: give num_partitions");
    return TS_ERR_INVALID_ARGUMENT;
  }
  if (!m->entry) {
    ts_diag_plain(diag, "module %s has no entry computation", m->name);
    return TS_ERR_INVALID_ARGUMENT;
  }
  ts_status_t st = ts_sharding_propagate(m, NULL, diag);
  if (st != TS_OK) return st;
  p.dst = ts_hlo_module_create(m->name);
  p.a = ts_arena_create();
  p.val = ts_calloc((size_t)m->next_id + 1, sizeof *p.val);
  p.sh = ts_calloc((size_t)m->next_id + 1, sizeof *p.sh);
  p.clone = ts_calloc((size_t)m->ncomps + 1, sizeof *p.clone);
  p.next_channel = 1;
  if (!p.dst || !p.a || !p.val || !p.sh || !p.clone) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  p.dst->num_partitions = p.n;
  p.dst->replica_count = 1;
  ts_hlo_attr_t np = {.name = "num_partitions", .kind = TS_ATTR_INT};
  np.v.i = p.n;
  if ((st = ts_hlo_module_add_attr(p.dst, &np)) != TS_OK) goto done;
  ts_hlo_comp_t *entry = partition_comp(&p, m->entry, NULL, NULL);
  st = p.st;
  if (st == TS_OK) {
    entry->is_entry = true;
    p.dst->entry = entry;
    /* The entry goes last, as dumps have it. */
    for (int k = 0; k < p.dst->ncomps - 1; k++)
      if (p.dst->comps[k] == entry) {
        memmove(&p.dst->comps[k], &p.dst->comps[k + 1], sizeof entry * (size_t)(p.dst->ncomps - 1 - k));
        p.dst->comps[p.dst->ncomps - 1] = entry;
        break;
      }
    ts_hlo_verify_opts_t vo = {.num_partitions = p.n};
    ts_diag_t vd = {0};
    if (ts_hlo_verify(p.dst, &vo, &vd) != TS_OK) {
      ts_diag_plain(diag, "internal error: the partitioned module does not verify: %s", vd.text ? vd.text : "");
      st = TS_ERR_INTERNAL;
    }
    ts_diag_free(&vd);
  }
done:
  ts_free(p.val);
  ts_free(p.sh);
  ts_free(p.clone);
  ts_strmap_free(&p.cache);
  ts_arena_destroy(p.a);
  if (st != TS_OK) {
    ts_hlo_module_destroy(p.dst);
    return st;
  }
  *out = p.dst;
  return TS_OK;
}
