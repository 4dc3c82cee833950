/* The SPMD partitioner's driver and its per-op handlers (GSPMD section 4).
 *
 * Every source instruction becomes a value of the output module together
 * with the sharding that value has; an operation asks for its operands in
 * the shardings it needs (ts_part_reshard moves them) and then runs on the
 * per-device shards. An operation without a handler of its own runs on the
 * full value (operands gathered, result sliced): correct for every op, at
 * the cost of the collectives, so the handlers (here and in reduce.c, dot.c,
 * slicing.c, gather.c, manual.c) exist for speed. Manual regions and user
 * collectives go to manual.c first. */
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
    /* One pointer per value (two spellings of one sharding alike): the
     * run's memo (derive.c) is keyed by address. */
    if (i->shape->elem != TS_TUPLE) s = ts_part_intern(p, s);
    const char *k = key.oom ? NULL : ts_arena_strndup(p->a, key.data, key.len);
    if (k && i->shape->elem != TS_TUPLE) ts_strmap_put(&p->cache, k, key.len, s);
  }
  ts_buf_free(&key);
  if (s->kind == TS_SHARD_UNKNOWN) return ts_part_replicated(p);
  /* On one partition every tiling and placement means the whole value on
   * that device (XLA runs no SPMD pass there); manual regions stay. */
  if (p->n == 1 && !ts_part_any_manual(s)) return ts_part_replicated(p);
  /* GSPMD tiles over every partition. */
  const ts_sharding_value_t *l = s;
  for (int k = 0; l; k++) {
    if (l->kind == TS_SHARD_TILED && l->ntiles != p->n) {
      ts_part_fail(p, i, TS_ERR_INVALID_ARGUMENT, "its sharding spans %lld devices, but the program is partitioned for %lld",
                   (long long)l->ntiles, (long long)p->n);
      return NULL;
    }
    if (l->kind == TS_SHARD_MAXIMAL && (l->device < 0 || l->device >= p->n)) {
      ts_part_fail(p, i, TS_ERR_INVALID_ARGUMENT, "its sharding names device %lld, but the program is partitioned for %lld",
                   (long long)l->device, (long long)p->n);
      return NULL;
    }
    l = s->kind == TS_SHARD_TUPLE && k < s->ntuple ? s->tuple[k] : NULL;
  }
  return s;
}

const ts_sharding_value_t *ts_part_leaf(const ts_sharding_value_t *s, int k) {
  return s && s->kind == TS_SHARD_TUPLE ? s->tuple[k] : s;
}

/* Operand k of i, resharded to `want`. */
ts_hlo_instr_t *ts_part_operand(part_t *p, const ts_hlo_instr_t *i, int k, const ts_sharding_value_t *want) {
  const ts_hlo_instr_t *o = i->ops[k];
  return ts_part_reshard(p, p->val[o->id], o->shape, p->sh[o->id], want);
}

/* i's op on new operands with a new shape, its attributes copied, and a
 * constant's literal where the shape keeps its elements (a constant in a
 * manual region, or one emitted whole before a reshard). */
ts_hlo_instr_t *ts_part_emit_like(part_t *p, const ts_hlo_instr_t *i, ts_hlo_instr_t *const *ops,
                                 const ts_shape_t *shape) {
  ts_hlo_instr_t *r = ts_part_add(p, i->op, shape, ops, i->nops, i->name);
  if (!r) return NULL;
  r->async_wrapped = i->async_wrapped;
  ts_part_copy_attrs(p, r, i);
  if (i->literal && shape && ts_shape_elements(shape) == ts_shape_elements(i->shape))
    r->literal = ts_part_copy_literal(p, i->literal);
  return r;
}

void ts_part_set(part_t *p, const ts_hlo_instr_t *i, ts_hlo_instr_t *v, const ts_sharding_value_t *s) {
  p->val[i->id] = v;
  p->sh[i->id] = (ts_sharding_value_t *)s;
}

const ts_shape_t *ts_part_full_shape(part_t *p, const ts_shape_t *s) {
  return ts_part_local_shape(p, s, ts_part_replicated(p));
}

/* Any op on full values: operands gathered, the result sliced to `s`. */
void ts_part_fallback(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  ts_hlo_instr_t *ops[1024];
  if (i->nops > 1024) {
    ts_part_fail(p, i, TS_ERR_UNSUPPORTED, "more than 1024 operands");
    return;
  }
  ts_sharding_value_t *rep = ts_part_replicated(p);
  for (int k = 0; k < i->nops; k++) ops[k] = ts_part_operand(p, i, k, rep);
  ts_hlo_instr_t *r = ts_part_emit_like(p, i, ops, ts_part_full_shape(p, i->shape));
  ts_part_set(p, i, ts_part_reshard(p, r, i->shape, rep, s), s);
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
    ts_part_fallback(p, i, s);
    return;
  }
  for (int k = 0; k < i->nops; k++) {
    const ts_shape_t *os = i->ops[k]->shape;
    bool scalar = os->rank == 0 && i->shape->rank > 0; /* select's pred, clamp's bounds */
    ops[k] = ts_part_operand(p, i, k, scalar ? ts_part_replicated(p) : s);
  }
  ts_part_set(p, i, ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, s)), s);
}

static void transpose(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  int r = i->shape->rank;
  int64_t inv[TS_PART_MAX_RANK];
  for (int k = 0; k < r; k++) inv[a->v.list.v[k]] = k;
  ts_sharding_value_t *os = (ts_sharding_value_t *)s;
  if (s->kind == TS_SHARD_TILED && ts_sharding_transpose(p->a, s, r, inv, &os) != TS_OK) {
    ts_part_fallback(p, i, s);
    return;
  }
  ts_hlo_instr_t *x = ts_part_operand(p, i, 0, os);
  ts_part_set(p, i, ts_part_emit_like(p, i, &x, ts_part_local_shape(p, i->shape, s)), s);
}

static void broadcast(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  int n = a ? a->v.list.n : 0;
  int64_t opdim[TS_PART_MAX_RANK];
  for (int k = 0; k < n; k++) opdim[k] = k;
  ts_sharding_value_t *os = ts_part_operand_sharding(p, s, i->shape->rank, n, a ? a->v.list.v : NULL, opdim, n);
  ts_hlo_instr_t *x = ts_part_operand(p, i, 0, os);
  ts_part_set(p, i, ts_part_emit_like(p, i, &x, ts_part_local_shape(p, i->shape, s)), s);
}

static void reshape(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_shape_t *from = i->ops[0]->shape, *to = i->shape;
  if (s->kind != TS_SHARD_TILED) {
    ts_hlo_instr_t *x = ts_part_operand(p, i, 0, s);
    ts_part_set(p, i, ts_part_emit_like(p, i, &x, ts_part_local_shape(p, to, s)), s);
    return;
  }
  ts_sharding_value_t *os = NULL;
  if (ts_sharding_reshape(p->a, s, to, from, &os) != TS_OK || !os) {
    ts_part_fallback(p, i, s);
    return;
  }
  /* Local reshape only when every tiled dim divides evenly on both sides. */
  for (int d = 0; d < to->rank; d++)
    if (to->dims[d] % s->dims[d] != 0) {
      ts_part_fallback(p, i, s);
      return;
    }
  if (os->kind == TS_SHARD_TILED)
    for (int d = 0; d < from->rank; d++)
      if (from->dims[d] % os->dims[d] != 0) {
        ts_part_fallback(p, i, s);
        return;
      }
  ts_hlo_instr_t *x = ts_part_operand(p, i, 0, os);
  ts_part_set(p, i, ts_part_emit_like(p, i, &x, ts_part_local_shape(p, to, s)), s);
}

static ts_hlo_comp_t *partition_comp(part_t *p, const ts_hlo_comp_t *c, ts_sharding_value_t *const *params,
                                     const ts_sharding_value_t *root);

static void control_flow(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  ts_hlo_instr_t *ops[256];
  if (i->nops > 256) {
    ts_part_fallback(p, i, s);
    return;
  }
  if (i->op == TS_OP_WHILE) {
    const ts_hlo_comp_t *cond = ts_hlo_instr_attr(i, "condition")->v.comps.comps[0];
    const ts_hlo_comp_t *body = ts_hlo_instr_attr(i, "body")->v.comps.comps[0];
    ts_sharding_value_t *ps[1] = {(ts_sharding_value_t *)s};
    ts_hlo_comp_t *nc = partition_comp(p, cond, ps, ts_part_replicated(p));
    ts_hlo_comp_t *nb = partition_comp(p, body, ps, s);
    ops[0] = ts_part_operand(p, i, 0, s);
    ts_hlo_instr_t *w = ts_part_add(p, TS_OP_WHILE, ts_part_local_shape(p, i->shape, s), ops, 1, i->name);
    ts_part_attr_comp(p, w, "condition", nc);
    ts_part_attr_comp(p, w, "body", nb);
    ts_part_set(p, i, w, s);
    return;
  }
  if (i->op == TS_OP_CALL || i->op == TS_OP_FUSION) {
    const ts_hlo_comp_t *callee = i->called[0];
    ts_sharding_value_t *ps[256];
    for (int k = 0; k < callee->nparams; k++) ps[k] = sharding_of(p, callee->params[k]);
    ts_hlo_comp_t *nc = partition_comp(p, callee, ps, s);
    for (int k = 0; k < i->nops; k++) ops[k] = ts_part_operand(p, i, k, ps[k]);
    ts_hlo_instr_t *c = ts_part_add(p, i->op, ts_part_local_shape(p, i->shape, s), ops, i->nops, i->name);
    for (int k = 0; k < i->nattrs; k++) {
      const ts_hlo_attr_t *a = &i->attrs[k];
      if (a->kind == TS_ATTR_COMP) ts_part_attr_comp(p, c, a->name, nc);
      else ts_part_copy_attr(p, c, a);
    }
    ts_part_set(p, i, c, s);
    return;
  }
  /* conditional: each branch takes its operand in its parameter's sharding
   * and gives its result in the conditional's. */
  ops[0] = ts_part_operand(p, i, 0, ts_part_replicated(p));
  ts_hlo_comp_t *br[256];
  for (int k = 0; k < i->ncalled && k + 1 < i->nops; k++) {
    const ts_hlo_comp_t *b = i->called[k];
    ts_sharding_value_t *ps[1] = {sharding_of(p, b->params[0])};
    br[k] = partition_comp(p, b, ps, s);
    ops[k + 1] = ts_part_operand(p, i, k + 1, ps[0]);
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
  ts_part_set(p, i, c, s);
}

static void partition_instr(part_t *p, const ts_hlo_instr_t *i, ts_sharding_value_t *param_sharding) {
  ts_sharding_value_t *s = param_sharding ? param_sharding : sharding_of(p, i);
  if (!s) return;
  if (i->op == TS_OP_PARAMETER) {
    ts_hlo_instr_t *v = ts_part_add(p, TS_OP_PARAMETER, ts_part_local_shape(p, i->shape, s), NULL, 0, i->name);
    if (v) v->param_number = i->param_number;
    ts_part_set(p, i, v, s);
    return;
  }
  if (ts_part_manual(p, i, s)) return;
  if (s->kind == TS_SHARD_TUPLE && i->op != TS_OP_TUPLE && i->op != TS_OP_GET_TUPLE_ELEMENT &&
      i->op != TS_OP_WHILE && i->op != TS_OP_CALL && i->op != TS_OP_CONDITIONAL && i->op != TS_OP_REDUCE) {
    ts_part_fallback(p, i, s);
    return;
  }
  switch (i->op) {
  case TS_OP_TUPLE: {
    ts_hlo_instr_t *ops[1024];
    if (i->nops > 1024) {
      ts_part_fallback(p, i, s);
      return;
    }
    for (int k = 0; k < i->nops; k++) ops[k] = ts_part_operand(p, i, k, ts_part_leaf(s, k));
    ts_part_set(p, i, ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, s)), s);
    return;
  }
  case TS_OP_GET_TUPLE_ELEMENT: {
    const ts_hlo_instr_t *o = i->ops[0];
    int64_t k = ts_hlo_instr_attr(i, "index")->v.i;
    const ts_sharding_value_t *es = ts_part_leaf(p->sh[o->id], (int)k);
    ts_hlo_instr_t *x = p->val[o->id];
    ts_hlo_instr_t *g = x ? ts_part_add(p, TS_OP_GET_TUPLE_ELEMENT, x->shape->tuple[k], &x, 1, i->name) : NULL;
    ts_part_attr_int(p, g, "index", k);
    ts_part_set(p, i, ts_part_reshard(p, g, i->shape, es, s), s);
    return;
  }
  case TS_OP_TRANSPOSE: transpose(p, i, s); return;
  case TS_OP_BROADCAST: broadcast(p, i, s); return;
  case TS_OP_REDUCE: ts_part_reduce(p, i, s); return;
  case TS_OP_DOT: ts_part_dot(p, i, s); return;
  case TS_OP_RESHAPE: reshape(p, i, s); return;
  case TS_OP_WHILE: case TS_OP_CALL: case TS_OP_CONDITIONAL: control_flow(p, i, s); return;
  case TS_OP_GATHER: if (ts_part_gather(p, i, s)) return; break;
  case TS_OP_SCATTER: if (ts_part_scatter_add(p, i, s)) return; break;
  case TS_OP_SLICE: if (ts_part_slice_halo(p, i, s)) return; break;
  case TS_OP_CONVOLUTION:
    if (ts_part_conv_halo(p, i, s) || ts_part_conv_contract(p, i, s) || ts_part_convolution(p, i, s)) return;
    break;
  case TS_OP_DYNAMIC_UPDATE_SLICE: if (ts_part_dus(p, i, s)) return; break;
  case TS_OP_REDUCE_WINDOW: if (ts_part_reduce_window_halo(p, i, s)) return; break;
  case TS_OP_SELECT_AND_SCATTER: if (ts_part_select_and_scatter(p, i, s)) return; break;
  case TS_OP_CONCATENATE: if (ts_part_concat_sum(p, i, s)) return; break;
  case TS_OP_PAD: if (ts_part_pad_halo(p, i, s)) return; break;
  default: break;
  }
  if (ts_part_passthrough(p, i, s)) return;
  if (is_elementwise(i->op) && i->shape->elem != TS_TUPLE) {
    elementwise(p, i, s);
    return;
  }
  ts_part_fallback(p, i, s);
}

/* Topological order over operands (source text order need not be). */
static ts_status_t order(const ts_hlo_comp_t *c, const ts_hlo_instr_t ***out) {
  const ts_hlo_instr_t **ord = ts_calloc((size_t)c->ninstrs + 1, sizeof *ord);
  if (!ord) return TS_ERR_NOMEM;
  ts_status_t st = ts_hlo_comp_operand_post_order(c, ord);
  if (st != TS_OK) {
    ts_free(ord);
    return st;
  }
  *out = ord;
  return TS_OK;
}

static ts_hlo_comp_t *partition_comp(part_t *p, const ts_hlo_comp_t *c, ts_sharding_value_t *const *params,
                                     const ts_sharding_value_t *root) {
  if (p->st != TS_OK) return NULL;
  char name[512];
  snprintf(name, sizeof name, "%s", c->name);
  for (int k = 1; ts_hlo_module_find_comp(p->dst, name); k++) snprintf(name, sizeof name, "%s.spmd%d", c->name, k);
  part_where_t was;
  ts_hlo_comp_t *out = ts_part_enter_comp(p, name, &was);
  if (!out) return NULL;
  const ts_hlo_instr_t **ord = NULL;
  ts_status_t st = order(c, &ord);
  if (st != TS_OK) {
    p->st = st;
    ts_part_leave_comp(p, &was);
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
  ts_part_leave_comp(p, &was);
  return out;
}

/* The header's input_output_alias and buffer_donor carry over unchanged:
 * parameters and root keep their numbering and tuple structure (only the
 * array shapes shrink), so a training loop still updates its weights in
 * place on every device. */
static ts_i64_list_t copy_list(ts_arena_t *a, const ts_i64_list_t *src) {
  ts_i64_list_t r = {.n = src->n, .v = NULL};
  if (src->n > 0 && (r.v = ts_arena_alloc(a, (size_t)src->n * sizeof *r.v)))
    memcpy(r.v, src->v, (size_t)src->n * sizeof *r.v);
  return r;
}

static ts_status_t copy_aliasing(part_t *p, const ts_hlo_module_t *m) {
  ts_arena_t *a = p->dst->arena;
  for (int k = 0; k < m->nattrs; k++) {
    const ts_hlo_attr_t *src = &m->attrs[k];
    if (src->kind != TS_ATTR_ALIASES && src->kind != TS_ATTR_DONORS) continue;
    ts_hlo_attr_t c = *src;
    c.name = ts_arena_strdup(a, src->name);
    c.loc = (ts_loc_t){0, 0};
    if (src->kind == TS_ATTR_ALIASES) {
      int n = src->v.aliases.n;
      ts_alias_t *v = ts_arena_alloc(a, (size_t)(n ? n : 1) * sizeof *v);
      if (!v || !c.name) return TS_ERR_NOMEM;
      for (int i = 0; i < n; i++) {
        v[i] = src->v.aliases.v[i];
        v[i].output_index = copy_list(a, &src->v.aliases.v[i].output_index);
        v[i].param_index = copy_list(a, &src->v.aliases.v[i].param_index);
      }
      c.v.aliases.v = v;
    } else {
      int n = src->v.donors.n;
      ts_donor_t *v = ts_arena_alloc(a, (size_t)(n ? n : 1) * sizeof *v);
      if (!v || !c.name) return TS_ERR_NOMEM;
      for (int i = 0; i < n; i++) {
        v[i] = src->v.donors.v[i];
        v[i].param_index = copy_list(a, &src->v.donors.v[i].param_index);
      }
      c.v.donors.v = v;
    }
    TS_CHECK(ts_hlo_module_add_attr(p->dst, &c));
  }
  return TS_OK;
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
  if (ts_sharding_cache_create(&p.memo) != TS_OK) p.memo = NULL;
  if (!p.dst || !p.a || !p.val || !p.sh || !p.clone || !p.memo ||
      ts_hlo_module_reserve(p.dst, m->names.count) != TS_OK) { /* about one output per input */
    st = TS_ERR_NOMEM;
    goto done;
  }
  p.dst->num_partitions = p.n;
  p.dst->replica_count = 1;
  ts_hlo_attr_t np = {.name = "num_partitions", .kind = TS_ATTR_INT};
  np.v.i = p.n;
  if ((st = ts_hlo_module_add_attr(p.dst, &np)) != TS_OK) goto done;
  if ((st = copy_aliasing(&p, m)) != TS_OK) goto done;
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
  }
done:
  ts_free(p.val);
  ts_free(p.sh);
  ts_free(p.clone);
  ts_strmap_free(&p.cache);
  ts_sharding_cache_destroy(p.memo); /* before p.a: its values live there */
  ts_arena_destroy(p.a);
  if (st != TS_OK) {
    ts_hlo_module_destroy(p.dst);
    return st;
  }
  *out = p.dst;
  return TS_OK;
}

bool ts_partition_is_per_device(const ts_hlo_module_t *m) {
  const char *n = m && m->entry ? m->entry->name : NULL;
  size_t len = n ? strlen(n) : 0;
  return len > 5 && strcmp(n + len - 5, "_spmd") == 0;
}
