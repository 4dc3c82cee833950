/* Building the partitioned module: instructions, attributes, clones of
 * scalar computations, and the small index arithmetic SPMD code needs. */
#include "partitioner_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

ts_status_t ts_part_fail(part_t *p, const ts_hlo_instr_t *i, ts_status_t st, const char *fmt, ...) {
  if (p->st != TS_OK) return p->st;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  p->st = st;
  if (i && p->src->source.text && i->loc.line > 0)
    ts_diag_error(p->diag, &p->src->source, i->loc, "%s %%%s: %s", ts_opcode_name(i->op), i->name, msg);
  else if (i)
    ts_diag_plain(p->diag, "%s %%%s: %s", ts_opcode_name(i->op), i->name, msg);
  else
    ts_diag_plain(p->diag, "%s", msg);
  return st;
}

static void *alloc(part_t *p, size_t n) {
  void *r = ts_arena_alloc(p->dst->arena, n ? n : 1);
  if (!r && p->st == TS_OK) p->st = TS_ERR_NOMEM;
  if (r) memset(r, 0, n ? n : 1);
  return r;
}

static int64_t *dup_ints(part_t *p, int n, const int64_t *v) {
  int64_t *r = alloc(p, (size_t)n * sizeof *r);
  if (r && n) memcpy(r, v, (size_t)n * sizeof *r);
  return r;
}

ts_shape_t *ts_part_shape(part_t *p, ts_elem_t e, int rank, const int64_t *dims) {
  ts_shape_t *s = ts_hlo_shape_array(p->dst, e, rank, dims);
  if (!s && p->st == TS_OK) p->st = TS_ERR_NOMEM;
  return s;
}

ts_hlo_instr_t *ts_part_add(part_t *p, ts_opcode_t op, const ts_shape_t *shape, ts_hlo_instr_t *const *ops,
                            int nops, const char *name) {
  if (p->st != TS_OK || !shape) return NULL;
  for (int k = 0; k < nops; k++)
    if (!ops[k]) return NULL;
  ts_hlo_instr_t *i = NULL;
  ts_status_t st = ts_hlo_instr_add(p->cur, op, shape, ops, nops, name, &i);
  if (st != TS_OK) {
    p->st = st;
    return NULL;
  }
  return i;
}

static void add_attr(part_t *p, ts_hlo_instr_t *i, ts_hlo_attr_t *a) {
  if (p->st != TS_OK || !i) return;
  ts_status_t st = ts_hlo_instr_add_attr(i, a);
  if (st != TS_OK) p->st = st;
}

void ts_part_attr_int(part_t *p, ts_hlo_instr_t *i, const char *name, int64_t v) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_INT};
  a.v.i = v;
  add_attr(p, i, &a);
}

void ts_part_attr_bool(part_t *p, ts_hlo_instr_t *i, const char *name, bool v) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_BOOL};
  a.v.b = v;
  add_attr(p, i, &a);
}

void ts_part_attr_ints(part_t *p, ts_hlo_instr_t *i, const char *name, int n, const int64_t *v) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_INT_LIST};
  a.v.list.n = n;
  a.v.list.v = dup_ints(p, n, v);
  add_attr(p, i, &a);
}

void ts_part_attr_ident(part_t *p, ts_hlo_instr_t *i, const char *name, const char *v) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_IDENT};
  a.v.s = ts_arena_strdup(p->dst->arena, v);
  add_attr(p, i, &a);
}

void ts_part_attr_comp(part_t *p, ts_hlo_instr_t *i, const char *name, ts_hlo_comp_t *c) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_COMP};
  ts_hlo_comp_t **cs = alloc(p, sizeof *cs);
  if (!cs || !c) return;
  cs[0] = c;
  a.v.comps.n = 1;
  a.v.comps.comps = cs;
  add_attr(p, i, &a);
}

void ts_part_attr_groups(part_t *p, ts_hlo_instr_t *i, int64_t ngroups, int64_t group_size, const int64_t *groups) {
  ts_replica_groups_t *rg = alloc(p, sizeof *rg);
  ts_i64_list_t *gs = alloc(p, (size_t)ngroups * sizeof *gs);
  if (!rg || !gs) return;
  rg->ngroups = (int)ngroups;
  rg->groups = gs;
  for (int64_t g = 0; g < ngroups; g++) {
    gs[g].n = (int)group_size;
    gs[g].v = dup_ints(p, (int)group_size, groups + g * group_size);
  }
  /* XLA's compact iota form `[G,S]<=[dims]T(perm)` when the groups are one. */
  int rank;
  int64_t reshape[64], perm[64];
  if (ts_sharding_iota_form(groups, ngroups * group_size, &rank, reshape, perm)) {
    bool identity = true;
    for (int k = 0; k < rank; k++) identity &= perm[k] == k;
    rg->iota = true;
    rg->iota_groups = ngroups;
    rg->iota_group_size = group_size;
    rg->iota_reshape.n = rank;
    rg->iota_reshape.v = dup_ints(p, rank, reshape);
    rg->iota_perm.n = identity ? 0 : rank;
    rg->iota_perm.v = identity ? NULL : dup_ints(p, rank, perm);
  }
  ts_hlo_attr_t a = {.name = "replica_groups", .kind = TS_ATTR_REPLICA_GROUPS};
  a.v.rg = rg;
  add_attr(p, i, &a);
}

/* ---- deep copies from the source module --------------------------------- */

static const ts_shape_t *copy_shape(part_t *p, const ts_shape_t *s) {
  if (s->elem == TS_TUPLE) {
    ts_shape_t **el = alloc(p, (size_t)s->ntuple * sizeof *el);
    if (!el) return NULL;
    for (int k = 0; k < s->ntuple; k++) el[k] = (ts_shape_t *)copy_shape(p, s->tuple[k]);
    ts_shape_t *t = ts_hlo_shape_tuple(p->dst, s->ntuple, el);
    if (!t && p->st == TS_OK) p->st = TS_ERR_NOMEM;
    return t;
  }
  ts_shape_t *r = ts_part_shape(p, s->elem, s->rank, s->dims);
  if (r && s->dynamic) {
    r->dynamic = alloc(p, (size_t)s->rank);
    if (r->dynamic) memcpy(r->dynamic, s->dynamic, (size_t)s->rank);
  }
  return r;
}

ts_literal_t *ts_part_copy_literal(part_t *p, const ts_literal_t *l) {
  ts_literal_t *r = alloc(p, sizeof *r);
  if (!r) return NULL;
  *r = *l;
  r->shape = copy_shape(p, l->shape);
  if (l->f) {
    int64_t n = l->count * (ts_elem_is_complex(l->shape->elem) ? 2 : 1);
    r->f = alloc(p, (size_t)n * sizeof(double));
    if (r->f) memcpy(r->f, l->f, (size_t)n * sizeof(double));
  }
  if (l->i) r->i = dup_ints(p, (int)l->count, l->i);
  if (l->ntuple) {
    r->tuple = alloc(p, (size_t)l->ntuple * sizeof *r->tuple);
    for (int k = 0; r->tuple && k < l->ntuple; k++) r->tuple[k] = ts_part_copy_literal(p, l->tuple[k]);
  }
  return r;
}

void ts_part_copy_attr(part_t *p, ts_hlo_instr_t *i, const ts_hlo_attr_t *src) {
  if (p->st != TS_OK || !i) return;
  ts_hlo_attr_t a = *src;
  ts_arena_t *ar = p->dst->arena;
  /* a million instructions share a handful of attribute names */
  a.name = ts_hlo_intern(p->dst, src->name, strlen(src->name));
  if (!a.name) {
    p->st = TS_ERR_NOMEM;
    return;
  }
  a.loc = (ts_loc_t){0, 0};
  switch (src->kind) {
  case TS_ATTR_INT: case TS_ATTR_BOOL: case TS_ATTR_FLOAT: break;
  case TS_ATTR_STRING: case TS_ATTR_IDENT: case TS_ATTR_BLOB: case TS_ATTR_RAW:
    a.v.s = ts_arena_strdup(ar, src->v.s);
    break;
  case TS_ATTR_INT_LIST: case TS_ATTR_BOOL_LIST:
    a.v.list.v = dup_ints(p, src->v.list.n, src->v.list.v);
    break;
  case TS_ATTR_INT_LISTS:
    a.v.lists.lists = alloc(p, (size_t)src->v.lists.n * sizeof *a.v.lists.lists);
    for (int k = 0; a.v.lists.lists && k < src->v.lists.n; k++) {
      a.v.lists.lists[k].n = src->v.lists.lists[k].n;
      a.v.lists.lists[k].v = dup_ints(p, src->v.lists.lists[k].n, src->v.lists.lists[k].v);
    }
    break;
  case TS_ATTR_SLICE: {
    ts_slice_t *s = alloc(p, sizeof *s);
    if (!s) return;
    s->n = src->v.slice->n;
    s->start = dup_ints(p, s->n, src->v.slice->start);
    s->limit = dup_ints(p, s->n, src->v.slice->limit);
    s->stride = dup_ints(p, s->n, src->v.slice->stride);
    a.v.slice = s;
    break;
  }
  case TS_ATTR_PADDING: {
    ts_padding_t *s = alloc(p, sizeof *s);
    if (!s) return;
    s->n = src->v.padding->n;
    s->lo = dup_ints(p, s->n, src->v.padding->lo);
    s->hi = dup_ints(p, s->n, src->v.padding->hi);
    s->interior = dup_ints(p, s->n, src->v.padding->interior);
    a.v.padding = s;
    break;
  }
  case TS_ATTR_WINDOW: {
    ts_window_t *w = alloc(p, sizeof *w);
    if (!w) return;
    w->n = src->v.window->n;
    w->dims = alloc(p, (size_t)w->n * sizeof *w->dims);
    if (w->dims && w->n) memcpy(w->dims, src->v.window->dims, (size_t)w->n * sizeof *w->dims);
    a.v.window = w;
    break;
  }
  case TS_ATTR_CONV_DNUMS: {
    ts_conv_dnums_t *c = alloc(p, sizeof *c);
    if (!c) return;
    *c = *src->v.conv;
    c->text = ts_arena_strdup(ar, src->v.conv->text);
    c->in_spatial = dup_ints(p, c->nspatial, src->v.conv->in_spatial);
    c->k_spatial = dup_ints(p, c->nspatial, src->v.conv->k_spatial);
    c->out_spatial = dup_ints(p, c->nspatial, src->v.conv->out_spatial);
    a.v.conv = c;
    break;
  }
  case TS_ATTR_REPLICA_GROUPS: {
    const ts_replica_groups_t *s = src->v.rg;
    ts_replica_groups_t *rg = alloc(p, sizeof *rg);
    if (!rg) return;
    *rg = *s;
    rg->iota_reshape.v = dup_ints(p, s->iota_reshape.n, s->iota_reshape.v);
    rg->iota_perm.v = dup_ints(p, s->iota_perm.n, s->iota_perm.v);
    rg->groups = alloc(p, (size_t)s->ngroups * sizeof *rg->groups);
    for (int g = 0; rg->groups && g < s->ngroups; g++) {
      rg->groups[g].n = s->groups[g].n;
      rg->groups[g].v = dup_ints(p, s->groups[g].n, s->groups[g].v);
    }
    a.v.rg = rg;
    break;
  }
  case TS_ATTR_COMP: case TS_ATTR_COMP_LIST: {
    ts_hlo_comp_t **cs = alloc(p, (size_t)src->v.comps.n * sizeof *cs);
    if (!cs) return;
    for (int k = 0; k < src->v.comps.n; k++) cs[k] = ts_part_clone_comp(p, src->v.comps.comps[k]);
    a.v.comps.comps = cs;
    break;
  }
  case TS_ATTR_SHAPE: a.v.shape = copy_shape(p, src->v.shape); break;
  case TS_ATTR_SHAPE_LIST: {
    const ts_shape_t **ss = alloc(p, (size_t)src->v.shapes.n * sizeof *ss);
    if (!ss) return;
    for (int k = 0; k < src->v.shapes.n; k++) ss[k] = copy_shape(p, src->v.shapes.shapes[k]);
    a.v.shapes.shapes = ss;
    break;
  }
  case TS_ATTR_LITERAL: a.v.literal = ts_part_copy_literal(p, src->v.literal); break;
  case TS_ATTR_LAYOUT_SIG: case TS_ATTR_ALIASES: case TS_ATTR_DONORS:
    return; /* signatures change with partitioning */
  }
  if (p->st == TS_OK) add_attr(p, i, &a);
}

void ts_part_copy_attrs(part_t *p, ts_hlo_instr_t *r, const ts_hlo_instr_t *i) {
  if (p->st != TS_OK || !r || i->nattrs == 0) return;
  ts_status_t st = ts_hlo_instr_reserve_attrs(r, i->nattrs);
  if (st != TS_OK) {
    p->st = st;
    return;
  }
  for (int k = 0; k < i->nattrs; k++) ts_part_copy_attr(p, r, &i->attrs[k]);
}

/* Instruction k of a clone: same op, shape and attributes. */
static ts_hlo_instr_t *clone_instr(part_t *p, const ts_hlo_instr_t *i, ts_hlo_instr_t *const *ops) {
  ts_hlo_instr_t *r = ts_part_add(p, i->op, copy_shape(p, i->shape), ops, i->nops, i->name);
  if (!r) return NULL;
  r->async_wrapped = i->async_wrapped;
  r->param_number = i->param_number;
  if (i->literal) r->literal = ts_part_copy_literal(p, i->literal);
  ts_part_copy_attrs(p, r, i);
  return r;
}

ts_hlo_comp_t *ts_part_enter_comp(part_t *p, const char *name, part_where_t *was) {
  *was = (part_where_t){p->cur, p->pid};
  ts_hlo_comp_t *c = NULL;
  if (p->st != TS_OK) return NULL;
  ts_status_t st = ts_hlo_comp_add(p->dst, name, &c);
  if (st != TS_OK) {
    p->st = st;
    return NULL;
  }
  p->cur = c;
  p->pid = NULL;
  return c;
}

void ts_part_leave_comp(part_t *p, const part_where_t *was) {
  p->cur = was->cur;
  p->pid = was->pid;
}

ts_hlo_comp_t *ts_part_clone_comp(part_t *p, const ts_hlo_comp_t *c) {
  int idx = -1;
  for (int k = 0; k < p->src->ncomps; k++)
    if (p->src->comps[k] == c) idx = k;
  if (idx < 0 || p->st != TS_OK) return NULL;
  if (p->clone[idx]) return p->clone[idx];
  part_where_t was;
  ts_hlo_comp_t *out = ts_part_enter_comp(p, c->name, &was);
  if (!out) return NULL;
  p->clone[idx] = out;
  /* Instructions in operand order; the source's may not be topological. */
  ts_hlo_instr_t **map = ts_calloc((size_t)p->src->next_id + 1, sizeof *map);
  if (!map) {
    p->st = TS_ERR_NOMEM;
    ts_part_leave_comp(p, &was);
    return NULL;
  }
  bool progress = true;
  int done = 0;
  while (done < c->ninstrs && progress && p->st == TS_OK) {
    progress = false;
    for (int k = 0; k < c->ninstrs; k++) {
      const ts_hlo_instr_t *i = c->instrs[k];
      if (map[i->id]) continue;
      ts_hlo_instr_t *ops[256];
      bool ready = i->nops <= 256;
      for (int o = 0; o < i->nops && ready; o++) ready = (ops[o] = map[i->ops[o]->id]) != NULL;
      if (!ready) continue;
      map[i->id] = clone_instr(p, i, ops);
      if (!map[i->id]) break;
      done++;
      progress = true;
    }
  }
  if (p->st == TS_OK) {
    ts_hlo_comp_set_root(out, map[c->root->id]);
    if (ts_hlo_comp_index_params(out) != TS_OK) p->st = TS_ERR_INTERNAL;
  }
  ts_free(map);
  ts_part_leave_comp(p, &was);
  return out;
}

/* ---- SPMD index arithmetic ---------------------------------------------- */

ts_hlo_instr_t *ts_part_const_s32(part_t *p, int n, const int64_t *v) {
  int64_t dims[1] = {n};
  const ts_shape_t *s = ts_part_shape(p, TS_S32, n < 0 ? 0 : 1, dims);
  ts_literal_t *l = alloc(p, sizeof *l);
  if (!s || !l) return NULL;
  l->shape = s;
  l->count = n < 0 ? 1 : n;
  l->i = dup_ints(p, (int)l->count, v);
  ts_hlo_instr_t *c = ts_part_add(p, TS_OP_CONSTANT, s, NULL, 0, "constant");
  if (c) c->literal = l;
  return c;
}

ts_hlo_instr_t *ts_part_zero(part_t *p, ts_elem_t e) {
  const ts_shape_t *s = ts_part_shape(p, e, 0, NULL);
  ts_literal_t *l = alloc(p, sizeof *l);
  if (!s || !l) return NULL;
  l->shape = s;
  l->count = 1;
  if (ts_elem_is_float(e) || ts_elem_is_complex(e)) l->f = alloc(p, 2 * sizeof(double));
  else l->i = alloc(p, sizeof(int64_t));
  ts_hlo_instr_t *c = ts_part_add(p, TS_OP_CONSTANT, s, NULL, 0, "constant");
  if (c) c->literal = l;
  return c;
}

ts_hlo_instr_t *ts_part_partition_id(part_t *p) {
  if (!p->pid) p->pid = ts_part_add(p, TS_OP_PARTITION_ID, ts_part_shape(p, TS_U32, 0, NULL), NULL, 0, "partition-id");
  return p->pid;
}

ts_hlo_instr_t *ts_part_table_lookup(part_t *p, const int64_t *table) {
  bool same = true;
  for (int64_t d = 1; d < p->n; d++) same &= table[d] == table[0];
  if (same) return ts_part_const_s32(p, -1, table);
  ts_hlo_instr_t *t = ts_part_const_s32(p, (int)p->n, table);
  ts_hlo_instr_t *pid = ts_part_partition_id(p);
  int64_t one = 1;
  ts_hlo_instr_t *sl = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ts_part_shape(p, TS_S32, 1, &one),
                                   (ts_hlo_instr_t *[]){t, pid}, 2, "dynamic-slice");
  ts_part_attr_ints(p, sl, "dynamic_slice_sizes", 1, &one);
  return ts_part_reshape(p, sl, 0, NULL);
}

ts_hlo_instr_t *ts_part_reshape(part_t *p, ts_hlo_instr_t *x, int rank, const int64_t *dims) {
  if (!x) return NULL;
  return ts_part_add(p, TS_OP_RESHAPE, ts_part_shape(p, x->shape->elem, rank, dims), &x, 1, "reshape");
}

ts_hlo_instr_t *ts_part_broadcast_scalar(part_t *p, ts_hlo_instr_t *x, int rank, const int64_t *dims) {
  if (!x) return NULL;
  ts_hlo_instr_t *b = ts_part_add(p, TS_OP_BROADCAST, ts_part_shape(p, x->shape->elem, rank, dims), &x, 1, "broadcast");
  ts_part_attr_ints(p, b, "dimensions", 0, NULL);
  return b;
}

ts_hlo_instr_t *ts_part_slice(part_t *p, ts_hlo_instr_t *x, const int64_t *start, const int64_t *limit) {
  if (!x) return NULL;
  int r = x->shape->rank;
  int64_t dims[TS_PART_MAX_RANK], ones[TS_PART_MAX_RANK];
  for (int d = 0; d < r; d++) {
    dims[d] = limit[d] - start[d];
    ones[d] = 1;
  }
  ts_hlo_instr_t *s = ts_part_add(p, TS_OP_SLICE, ts_part_shape(p, x->shape->elem, r, dims), &x, 1, "slice");
  ts_slice_t *sl = alloc(p, sizeof *sl);
  if (!s || !sl) return NULL;
  sl->n = r;
  sl->start = dup_ints(p, r, start);
  sl->limit = dup_ints(p, r, limit);
  sl->stride = dup_ints(p, r, ones);
  ts_hlo_attr_t a = {.name = "slice", .kind = TS_ATTR_SLICE};
  a.v.slice = sl;
  add_attr(p, s, &a);
  return s;
}

ts_hlo_instr_t *ts_part_pad(part_t *p, ts_hlo_instr_t *x, const int64_t *hi) {
  if (!x) return NULL;
  int r = x->shape->rank;
  int64_t dims[TS_PART_MAX_RANK], zeros[TS_PART_MAX_RANK] = {0};
  for (int d = 0; d < r; d++) dims[d] = x->shape->dims[d] + hi[d];
  ts_hlo_instr_t *z = ts_part_zero(p, x->shape->elem);
  ts_hlo_instr_t *s = ts_part_add(p, TS_OP_PAD, ts_part_shape(p, x->shape->elem, r, dims),
                                  (ts_hlo_instr_t *[]){x, z}, 2, "pad");
  ts_padding_t *pd = alloc(p, sizeof *pd);
  if (!s || !pd) return NULL;
  pd->n = r;
  pd->lo = dup_ints(p, r, zeros);
  pd->hi = dup_ints(p, r, hi);
  pd->interior = dup_ints(p, r, zeros);
  ts_hlo_attr_t a = {.name = "padding", .kind = TS_ATTR_PADDING};
  a.v.padding = pd;
  add_attr(p, s, &a);
  return s;
}

ts_hlo_comp_t *ts_part_sum_comp(part_t *p, ts_elem_t e) {
  int k = e == TS_PRED ? 1 : 0;
  if (p->reducers[e][k]) return p->reducers[e][k];
  char name[64];
  snprintf(name, sizeof name, "%s.%s", k ? "or" : "sum", ts_elem_name(e));
  part_where_t was;
  ts_hlo_comp_t *c = ts_part_enter_comp(p, name, &was);
  if (!c) return NULL;
  const ts_shape_t *s = ts_part_shape(p, e, 0, NULL);
  ts_hlo_instr_t *x = ts_part_add(p, TS_OP_PARAMETER, s, NULL, 0, "x");
  if (x) x->param_number = 0;
  ts_hlo_instr_t *y = ts_part_add(p, TS_OP_PARAMETER, s, NULL, 0, "y");
  if (y) y->param_number = 1;
  ts_hlo_instr_t *r = ts_part_add(p, k ? TS_OP_OR : TS_OP_ADD, s, (ts_hlo_instr_t *[]){x, y}, 2, k ? "or" : "add");
  if (r) ts_hlo_comp_set_root(c, r);
  if (p->st == TS_OK && ts_hlo_comp_index_params(c) != TS_OK) p->st = TS_ERR_INTERNAL;
  ts_part_leave_comp(p, &was);
  p->reducers[e][k] = c;
  return c;
}

ts_hlo_instr_t *ts_part_collective(part_t *p, ts_opcode_t op, const ts_shape_t *shape, ts_hlo_instr_t *x,
                                   int64_t ngroups, int64_t group_size, const int64_t *groups) {
  ts_hlo_instr_t *c = ts_part_add(p, op, shape, &x, 1, ts_opcode_name(op));
  ts_part_attr_int(p, c, "channel_id", p->next_channel++);
  ts_part_attr_groups(p, c, ngroups, group_size, groups);
  if (op != TS_OP_ALL_TO_ALL && op != TS_OP_COLLECTIVE_PERMUTE) ts_part_attr_bool(p, c, "use_global_device_ids", true);
  return c;
}

ts_hlo_instr_t *ts_part_permute(part_t *p, ts_hlo_instr_t *x, int64_t npairs, const int64_t *pairs) {
  ts_hlo_instr_t *cp = x ? ts_part_add(p, TS_OP_COLLECTIVE_PERMUTE, x->shape, &x, 1, "collective-permute") : NULL;
  ts_part_attr_int(p, cp, "channel_id", p->next_channel++);
  ts_hlo_attr_t a = {.name = "source_target_pairs", .kind = TS_ATTR_INT_LISTS};
  a.v.lists.n = (int)npairs;
  a.v.lists.lists = alloc(p, sizeof *a.v.lists.lists * (size_t)(npairs + 1));
  for (int64_t k = 0; a.v.lists.lists && k < npairs; k++) {
    a.v.lists.lists[k].n = 2;
    a.v.lists.lists[k].v = dup_ints(p, 2, pairs + 2 * k);
  }
  if (a.v.lists.lists) add_attr(p, cp, &a);
  return cp;
}
