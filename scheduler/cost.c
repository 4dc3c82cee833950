/* What each instruction costs the scheduler, behind the cost model's one
 * interface: collectives by the cost model's sources (tables first, then
 * the S-curve model across slices) and else the roofline's ring; dots and
 * convolutions by a GEMM table when one covers them, else the roofline; every
 * other op by the roofline, max(bytes / memory bandwidth, flops / peak). */
#include "scheduler_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t operand_bytes(const ts_hlo_instr_t *i) {
  uint64_t b = 0;
  for (int k = 0; k < i->nops; k++) b += ts_shape_bytes(i->ops[k]->shape);
  return b;
}

/* The collective an instruction performs: its opcode, the wrapped one for
 * async-start (sugar or calls=), TS_OP_COUNT for anything else. */
static ts_opcode_t collective_op(const ts_hlo_instr_t *i) {
  ts_opcode_t op = i->op;
  if (op == TS_OP_ASYNC_START) {
    if (i->async_wrapped != TS_OP_COUNT) op = i->async_wrapped;
    else if (i->ncalled == 1 && i->called[0]->root) op = i->called[0]->root->op;
  }
  switch (op) {
  case TS_OP_ALL_REDUCE: case TS_OP_ALL_REDUCE_START: return TS_OP_ALL_REDUCE;
  case TS_OP_ALL_GATHER: case TS_OP_ALL_GATHER_START: return TS_OP_ALL_GATHER;
  case TS_OP_COLLECTIVE_PERMUTE: case TS_OP_COLLECTIVE_PERMUTE_START: return TS_OP_COLLECTIVE_PERMUTE;
  case TS_OP_REDUCE_SCATTER: case TS_OP_ALL_TO_ALL: case TS_OP_COLLECTIVE_BROADCAST: return op;
  default: return TS_OP_COUNT;
  }
}

int ts_sched_kind_of(const ts_hlo_instr_t *i) {
  switch (collective_op(i)) {
  case TS_OP_ALL_REDUCE: return TS_COLL_ALL_REDUCE;
  case TS_OP_ALL_GATHER: return TS_COLL_ALL_GATHER;
  case TS_OP_REDUCE_SCATTER: return TS_COLL_REDUCE_SCATTER;
  case TS_OP_ALL_TO_ALL: return TS_COLL_ALL_TO_ALL;
  case TS_OP_COLLECTIVE_PERMUTE: return TS_COLL_COLLECTIVE_PERMUTE;
  case TS_OP_COLLECTIVE_BROADCAST: return TS_COLL_COLLECTIVE_BROADCAST;
  default: return NO_KIND;
  }
}

bool ts_sched_is_async_start(const ts_hlo_instr_t *i) {
  return (i->op == TS_OP_ALL_REDUCE_START || i->op == TS_OP_ALL_GATHER_START ||
          i->op == TS_OP_COLLECTIVE_PERMUTE_START || i->op == TS_OP_ASYNC_START) &&
         ts_sched_kind_of(i) != NO_KIND;
}

bool ts_sched_is_async_done(const ts_hlo_instr_t *i) {
  return (i->op == TS_OP_ALL_REDUCE_DONE || i->op == TS_OP_ALL_GATHER_DONE ||
          i->op == TS_OP_COLLECTIVE_PERMUTE_DONE || i->op == TS_OP_ASYNC_DONE) &&
         i->nops == 1 && ts_sched_is_async_start(i->ops[0]);
}

/* ---- collectives ---------------------------------------------------------- */

/* The instruction that carries the collective's attributes. */
static const ts_hlo_instr_t *collective_body(const ts_hlo_instr_t *i) {
  if (i->op == TS_OP_ASYNC_START && i->async_wrapped == TS_OP_COUNT && i->ncalled == 1) return i->called[0]->root;
  return i;
}

/* The result shape of a collective (the start's tuple element 1). */
static const ts_shape_t *collective_result(const ts_hlo_instr_t *i) {
  if (i->op == TS_OP_ALL_REDUCE_START) return i->shape;
  if ((i->op == TS_OP_ALL_GATHER_START || i->op == TS_OP_COLLECTIVE_PERMUTE_START || i->op == TS_OP_ASYNC_START) &&
      i->shape->elem == TS_TUPLE && i->shape->ntuple >= 2)
    return i->shape->tuple[1];
  return i->shape;
}

static int64_t slice_of(const sched_ctx_t *x, int64_t device) { return x->slice > 0 ? device / x->slice : 0; }

/* The cost model's question for a collective: kind, bytes (the full buffer:
 * the all-gather result, the reduce-scatter operand, the operand of the
 * others), group size and count, transfer scheme, slices spanned. */
static void collective_query(const sched_ctx_t *x, const ts_hlo_instr_t *i, ts_coll_query_t *q) {
  const ts_hlo_instr_t *b = collective_body(i);
  ts_opcode_t op = collective_op(i);
  memset(q, 0, sizeof *q);
  q->num_groups = 1;
  q->slices = 1;
  q->scheme = TS_SCHEME_CONTIGUOUS;
  switch (op) {
  case TS_OP_ALL_REDUCE: q->kind = TS_COLL_ALL_REDUCE; break;
  case TS_OP_ALL_GATHER: q->kind = TS_COLL_ALL_GATHER; break;
  case TS_OP_REDUCE_SCATTER: q->kind = TS_COLL_REDUCE_SCATTER; break;
  case TS_OP_ALL_TO_ALL: q->kind = TS_COLL_ALL_TO_ALL; break;
  default: q->kind = TS_COLL_COLLECTIVE_PERMUTE; break; /* permute; broadcast is priced as a pipelined send */
  }
  q->tensor_bytes = (int64_t)(op == TS_OP_ALL_GATHER ? ts_shape_bytes(collective_result(i)) : operand_bytes(b));
  if (op == TS_OP_COLLECTIVE_PERMUTE) {
    const ts_hlo_attr_t *a = ts_hlo_instr_attr(b, "source_target_pairs");
    int n = a && a->kind == TS_ATTR_INT_LISTS ? a->v.lists.n : 0;
    bool sends_and_receives = false, all_mutual = n > 0, cross = false;
    int64_t ids[2048];
    int nids = 0;
    for (int k = 0; k < n; k++) {
      const ts_i64_list_t *p = &a->v.lists.lists[k];
      if (p->n != 2) continue;
      for (int e = 0; e < 2; e++) {
        bool seen = false;
        for (int j = 0; j < nids && !seen; j++) seen = ids[j] == p->v[e];
        if (!seen && nids < 2048) ids[nids++] = p->v[e];
      }
      bool mutual = false;
      for (int j = 0; j < n; j++) {
        const ts_i64_list_t *r = &a->v.lists.lists[j];
        if (r->n != 2) continue;
        if (r->v[0] == p->v[1] && r->v[1] == p->v[0]) mutual = true;
        if (r->v[0] == p->v[1]) sends_and_receives = true;
      }
      all_mutual &= mutual;
      cross |= slice_of(x, p->v[0]) != slice_of(x, p->v[1]);
    }
    q->devices = nids;
    q->scheme = all_mutual ? TS_SCHEME_TWO_WAY_ALL_MUTUAL
                : sends_and_receives ? TS_SCHEME_TWO_WAY_HAS_NON_MUTUAL
                                     : TS_SCHEME_ONE_WAY;
    q->slices = cross ? 2 : 1;
    return;
  }
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(b, "replica_groups");
  const ts_replica_groups_t *rg = a && a->kind == TS_ATTR_REPLICA_GROUPS ? a->v.rg : NULL;
  if (rg && rg->ngroups > 0 && rg->groups[0].n > 0) {
    const ts_i64_list_t *g = &rg->groups[0];
    q->devices = g->n;
    q->num_groups = rg->ngroups;
    bool contiguous = true;
    for (int k = 1; k < g->n; k++) contiguous &= g->v[k] == g->v[k - 1] + 1;
    q->scheme = contiguous ? TS_SCHEME_CONTIGUOUS : TS_SCHEME_STRIDED;
    int64_t seen[64];
    int ns = 0;
    for (int k = 0; k < g->n; k++) {
      int64_t s = slice_of(x, g->v[k]);
      bool have = false;
      for (int j = 0; j < ns && !have; j++) have = seen[j] == s;
      if (!have && ns < 64) seen[ns++] = s;
    }
    q->slices = ns;
  } else {
    /* No groups: every device of the mode's id space. */
    const ts_hlo_module_t *m = b->parent->module;
    q->devices = ts_hlo_instr_attr(b, "channel_id") ? x->ndevices : m->replica_count;
    q->slices = x->slice > 0 ? (q->devices + x->slice - 1) / x->slice : 1;
  }
}

static double collective_time(const sched_ctx_t *x, const ts_hlo_instr_t *i, const char **source) {
  ts_coll_query_t q;
  collective_query(x, i, &q);
  double s;
  if (x->cm && ts_costmodel_collective_time(x->cm, &q, &s, source) == TS_OK) return s;
  *source = "roofline";
  return ts_roofline_collective_time(&x->roof, &q);
}

/* ---- dots and convolutions ------------------------------------------------ */

static int64_t dims_product(const ts_shape_t *s, const ts_hlo_attr_t *a, bool complement, const ts_hlo_attr_t *also) {
  int64_t p = 1;
  for (int d = 0; d < s->rank; d++) {
    bool in = false;
    if (a && a->kind == TS_ATTR_INT_LIST)
      for (int k = 0; k < a->v.list.n; k++) in |= a->v.list.v[k] == d;
    if (also && also->kind == TS_ATTR_INT_LIST)
      for (int k = 0; k < also->v.list.n && complement; k++) in |= also->v.list.v[k] == d;
    if (in != complement) p *= s->dims[d];
  }
  return p;
}

static bool is_narrow(ts_elem_t e) { return ts_elem_is_float(e) && ts_elem_bits(e) <= 16; }

/* A GEMM as (b, m, n, k) with XLA's dtype key, by a table if one covers it,
 * else the roofline at the matmul peak of its type. */
static double gemm_time(const sched_ctx_t *x, const ts_hlo_instr_t *i, int64_t b, int64_t m, int64_t n, int64_t k,
                        uint64_t bytes) {
  ts_elem_t lt = i->ops[0]->shape->elem, rt = i->ops[1]->shape->elem, ot = i->shape->elem;
  char dtype[64];
  snprintf(dtype, sizeof dtype, "%sx%s->%s", ts_elem_name(lt), ts_elem_name(rt), ts_elem_name(ot));
  ts_dot_query_t q = {b, m, n, k, dtype};
  double s;
  if (x->cm && b > 0 && m > 0 && n > 0 && k > 0 && ts_costmodel_dot_time(x->cm, &q, &s, NULL) == TS_OK) return s;
  double flops = 2.0 * (double)b * (double)m * (double)n * (double)k;
  double peak = is_narrow(lt) && is_narrow(rt) ? x->roof.matmul_flops
                : ts_elem_is_float(lt) && ts_elem_bits(lt) <= 32 ? x->roof.matmul_f32_flops
                                                                : x->roof.vector_flops;
  return ts_roofline_time(&x->roof, flops, peak, (double)bytes);
}

static double dot_time(const sched_ctx_t *x, const ts_hlo_instr_t *i) {
  const ts_shape_t *l = i->ops[0]->shape, *r = i->ops[1]->shape;
  const ts_hlo_attr_t *lb = ts_hlo_instr_attr(i, "lhs_batch_dims"), *lc = ts_hlo_instr_attr(i, "lhs_contracting_dims");
  const ts_hlo_attr_t *rb = ts_hlo_instr_attr(i, "rhs_batch_dims"), *rc = ts_hlo_instr_attr(i, "rhs_contracting_dims");
  int64_t b = dims_product(l, lb, false, NULL), k = dims_product(l, lc, false, NULL);
  int64_t m = dims_product(l, lb, true, lc), n = dims_product(r, rb, true, rc);
  return gemm_time(x, i, b, m, n, k, operand_bytes(i) + ts_shape_bytes(i->shape));
}

static double conv_time(const sched_ctx_t *x, const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dim_labels");
  int64_t out = ts_shape_elements(i->shape), kernel = ts_shape_elements(i->ops[1]->shape);
  int64_t of = 1;
  if (a && a->kind == TS_ATTR_CONV_DNUMS && a->v.conv->out_feature < i->shape->rank)
    of = i->shape->dims[a->v.conv->out_feature];
  if (of < 1) of = 1;
  /* As a GEMM: rows = output positions, columns = output features, the
   * contraction = one output's kernel window. */
  return gemm_time(x, i, 1, out / of, of, kernel / of, operand_bytes(i) + ts_shape_bytes(i->shape));
}

/* ---- everything else: the roofline ---------------------------------------- */

static double window_size(const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "window");
  double w = 1;
  if (a && a->kind == TS_ATTR_WINDOW)
    for (int d = 0; d < a->v.window->n; d++) w *= (double)a->v.window->dims[d].size;
  return w;
}

static double roofline_op(const sched_ctx_t *x, const ts_hlo_instr_t *i) {
  double out = (double)ts_shape_bytes(i->shape), in = (double)operand_bytes(i);
  double elems = i->shape->elem == TS_TUPLE ? 0 : (double)ts_shape_elements(i->shape);
  double flops = elems, bytes = in + out;
  switch (i->op) {
  case TS_OP_DYNAMIC_UPDATE_SLICE: /* in place: read and write the update */
    bytes = i->nops > 1 ? 2.0 * (double)ts_shape_bytes(i->ops[1]->shape) : out;
    flops = 0;
    break;
  case TS_OP_BROADCAST: bytes = out + in; flops = 0; break; /* reads the (small) operand, writes the result */
  case TS_OP_IOTA: bytes = out; flops = 0; break;
  case TS_OP_SLICE: case TS_OP_DYNAMIC_SLICE: case TS_OP_GATHER:
  case TS_OP_COPY: case TS_OP_TRANSPOSE: case TS_OP_RESHAPE: case TS_OP_PAD: case TS_OP_CONCATENATE:
  case TS_OP_REVERSE:
    bytes = 2.0 * out; /* reads what it writes */
    flops = 0;
    break;
  case TS_OP_REDUCE: flops = in; break;
  case TS_OP_REDUCE_WINDOW: flops = elems * window_size(i); break;
  case TS_OP_SORT: flops = elems * 10; break; /* ~log2 of a typical length per element */
  default: break;
  }
  return ts_roofline_time(&x->roof, flops, x->roof.vector_flops, bytes);
}

static bool is_custom_call_to(const ts_hlo_instr_t *i, const char *target) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "custom_call_target");
  return a && a->kind == TS_ATTR_STRING && strcmp(a->v.s, target) == 0;
}

/* Ops that define no buffer of their own: they refer to their operands'
 * (as the runtime's buffer assignment has them: a reshape or copy shares
 * its operand's bytes, values never being written in place). */
static bool is_alias(const ts_hlo_instr_t *i) {
  switch (i->op) {
  case TS_OP_RESHAPE: case TS_OP_COPY: return i->nops == 1 && ts_elem_is_array(i->shape->elem);
  case TS_OP_GET_TUPLE_ELEMENT: case TS_OP_TUPLE: case TS_OP_BITCAST: case TS_OP_ADD_DEPENDENCY:
  case TS_OP_OPT_BARRIER: case TS_OP_DOMAIN: return true;
  case TS_OP_CUSTOM_CALL:
    return is_custom_call_to(i, "Sharding") || is_custom_call_to(i, "xla.sdy.ShardingConstraint") ||
           is_custom_call_to(i, "xla.sdy.FuncResultSharding");
  default: return ts_sched_is_async_done(i);
  }
}

/* ---- while trip counts ----------------------------------------------------- */

static bool int_constant(const ts_hlo_instr_t *i, int64_t *v) {
  if (i->op != TS_OP_CONSTANT || !i->literal || !i->literal->i || i->literal->count != 1) return false;
  *v = i->literal->i[0];
  return true;
}

static bool is_counter(const ts_hlo_instr_t *g, const ts_hlo_comp_t *c, int64_t *index) {
  if (g->op != TS_OP_GET_TUPLE_ELEMENT || g->nops != 1 || g->ops[0]->op != TS_OP_PARAMETER || g->ops[0]->parent != c)
    return false;
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(g, "index");
  if (!a || a->kind != TS_ATTR_INT) return false;
  *index = a->v.i;
  return true;
}

double ts_sched_while_trips(const ts_hlo_instr_t *w, bool *known) {
  *known = false;
  const ts_hlo_attr_t *bc = ts_hlo_instr_attr(w, "backend_config");
  if (bc && (bc->kind == TS_ATTR_BLOB || bc->kind == TS_ATTR_STRING || bc->kind == TS_ATTR_RAW) && bc->v.s) {
    const char *p = strstr(bc->v.s, "known_trip_count");
    if (p && (p = strstr(p, "\"n\""))) {
      p += 3;
      while (*p == ':' || *p == ' ' || *p == '"') p++;
      char *end;
      long long n = strtoll(p, &end, 10);
      if (end != p && n >= 0) {
        *known = true;
        return (double)n;
      }
    }
  }
  const ts_hlo_attr_t *ca = ts_hlo_instr_attr(w, "condition"), *ba = ts_hlo_instr_attr(w, "body");
  if (!ca || !ba || ca->kind != TS_ATTR_COMP || ba->kind != TS_ATTR_COMP || w->nops != 1) return 1;
  const ts_hlo_comp_t *cond = ca->v.comps.comps[0], *body = ba->v.comps.comps[0];
  const ts_hlo_instr_t *r = cond->root;
  if (!r || r->op != TS_OP_COMPARE || r->nops != 2) return 1;
  const ts_hlo_attr_t *dir = ts_hlo_instr_attr(r, "direction");
  if (!dir || dir->kind != TS_ATTR_IDENT) return 1;
  int64_t index, limit, init, step;
  bool lt = strcmp(dir->v.s, "LT") == 0, le = strcmp(dir->v.s, "LE") == 0;
  if (!(lt || le) || !is_counter(r->ops[0], cond, &index) || !int_constant(r->ops[1], &limit)) return 1;
  const ts_hlo_instr_t *t = w->ops[0];
  if (t->op != TS_OP_TUPLE || index < 0 || index >= t->nops || !int_constant(t->ops[index], &init)) return 1;
  const ts_hlo_instr_t *br = body->root;
  if (!br || br->op != TS_OP_TUPLE || index >= br->nops) return 1;
  const ts_hlo_instr_t *inc = br->ops[index];
  int64_t bi;
  if (inc->op != TS_OP_ADD || inc->nops != 2) return 1;
  if (!((is_counter(inc->ops[0], body, &bi) && bi == index && int_constant(inc->ops[1], &step)) ||
        (is_counter(inc->ops[1], body, &bi) && bi == index && int_constant(inc->ops[0], &step))) ||
      step <= 0)
    return 1;
  int64_t span = limit - init + (le ? 1 : 0);
  *known = true;
  return span > 0 ? (double)((span + step - 1) / step) : 0;
}

/* ---- per computation -------------------------------------------------------- */

ts_status_t ts_sched_cost_comp(sched_ctx_t *x, ts_hlo_comp_t *c) {
  for (int k = 0; k < c->ninstrs; k++) {
    ts_hlo_instr_t *i = c->instrs[k];
    sched_node_t *n = &x->node[i->id];
    memset(n, 0, sizeof *n);
    n->kind = NO_KIND;
    n->trips = 1;
    n->alias = is_alias(i);
    n->bytes = n->alias ? 0 : ts_shape_bytes(i->shape);
    if (ts_sched_is_async_start(i)) {
      n->kind = ts_sched_kind_of(i);
      n->latency = collective_time(x, i, &n->source);
      n->bytes = ts_shape_bytes(collective_result(i)); /* the result is allocated at the start */
      for (int u = 0; u < i->nusers; u++)
        if (ts_sched_is_async_done(i->users[u])) n->partner = i->users[u];
      continue;
    }
    if (ts_sched_is_async_done(i)) {
      n->kind = ts_sched_kind_of(i->ops[0]);
      n->partner = i->ops[0];
      continue;
    }
    switch (i->op) {
    case TS_OP_PARAMETER: case TS_OP_CONSTANT:
      n->bytes = 0; /* the caller's buffers, or read-only data */
      n->nop = true;
      break;
    case TS_OP_GET_TUPLE_ELEMENT: case TS_OP_TUPLE: case TS_OP_BITCAST: case TS_OP_AFTER_ALL:
    case TS_OP_PARTITION_ID: case TS_OP_REPLICA_ID:
      n->nop = true;
      break;
    case TS_OP_ADD_DEPENDENCY: case TS_OP_OPT_BARRIER: case TS_OP_DOMAIN: break;
    case TS_OP_WHILE: case TS_OP_CALL: case TS_OP_CONDITIONAL: break; /* lhs.c: from the callees */
    case TS_OP_DOT: n->cost = i->nops == 2 ? dot_time(x, i) : roofline_op(x, i); break;
    case TS_OP_CONVOLUTION: n->cost = i->nops == 2 ? conv_time(x, i) : roofline_op(x, i); break;
    case TS_OP_ALL_REDUCE: case TS_OP_ALL_GATHER: case TS_OP_REDUCE_SCATTER: case TS_OP_ALL_TO_ALL:
    case TS_OP_COLLECTIVE_PERMUTE: case TS_OP_COLLECTIVE_BROADCAST:
      n->cost = collective_time(x, i, &n->source); /* left synchronous: fully exposed */
      break;
    case TS_OP_CUSTOM_CALL:
      if (!n->alias) n->cost = roofline_op(x, i);
      break;
    default: n->cost = roofline_op(x, i); break;
    }
  }
  return TS_OK;
}
