/* Program compile: per computation an instruction order, value slots (one per
 * array leaf; tuples flattened), logical buffers with liveness, the steps the
 * executor runs, and an offline buffer assignment into one arena per
 * computation; then the entry's input/output aliasing (input_output_alias).
 *
 * Values never change once written and no kernel writes in place, so
 * instructions that only re-label bytes (tuple, get-tuple-element, reshape,
 * bitcast, copy, opt-barrier, add-dependency, sharding annotations,
 * parameters) share their operand's buffers instead of copying. */
#include "rt_internal.h"
#include "ts_hlo_buffers.h"

#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---------------------------------------------------------- */

ts_status_t rt_fail(const ts_hlo_module_t *m, const ts_hlo_instr_t *i, ts_diag_t *diag, ts_status_t st,
                    const char *fmt, ...) {
  ts_kernel_ctx_t ctx = {.diag = diag, .source = m->source.text ? &m->source : NULL};
  va_list ap;
  va_start(ap, fmt);
  st = ts_kernel_vfail(&ctx, i, st, fmt, ap);
  va_end(ap);
  return st;
}

int rt_comp_index(const ts_rt_program_t *p, const ts_hlo_comp_t *c) {
  intptr_t k;
  return c && ts_ptrmap_get(&p->comp_index, c, &k) ? (int)k : -1;
}

static void leaf_shapes(const ts_shape_t *s, const ts_shape_t **out, int *n) {
  if (s->elem != TS_TUPLE) {
    out[(*n)++] = s;
    return;
  }
  for (int k = 0; k < s->ntuple; k++) leaf_shapes(s->tuple[k], out, n);
}

/* The first leaf of tuple element k. */
static int elem_leaf_offset(const ts_shape_t *s, int k) {
  int off = 0;
  for (int j = 0; j < k && j < s->ntuple; j++) off += ts_shape_leaf_count(s->tuple[j]);
  return off;
}

static size_t leaf_bytes(const ts_shape_t *s) {
  return ts_shape_is_array(s) ? (size_t)ts_shape_storage_bytes(s) : 0;
}

static bool is_sync_collective(ts_opcode_t op) {
  return op == TS_OP_ALL_REDUCE || op == TS_OP_ALL_GATHER || op == TS_OP_REDUCE_SCATTER || op == TS_OP_ALL_TO_ALL ||
         op == TS_OP_COLLECTIVE_PERMUTE || op == TS_OP_COLLECTIVE_BROADCAST;
}

/* The start an async done/update belongs to. */
static const ts_hlo_instr_t *start_of(const ts_hlo_instr_t *i) {
  const ts_hlo_instr_t *s = i->nops ? i->ops[0] : NULL;
  while (s && s->op == TS_OP_ASYNC_UPDATE && s->nops) s = s->ops[0];
  return s;
}

/* ---- order ---------------------------------------------------------------------- */

/* Text order when the module is scheduled and the text order respects every
 * operand and control predecessor; otherwise a post-order over operands and
 * control predecessors from the instructions in text order (the reference
 * interpreter's order). */
static ts_status_t build_order(ts_rt_program_t *p, const ts_hlo_comp_t *c, bool scheduled, rt_comp_t *rc) {
  int n = c->ninstrs;
  rc->order = ts_calloc((size_t)n + 1, sizeof *rc->order);
  if (!rc->order) return TS_ERR_NOMEM;
  if (scheduled) {
    bool ok = true;
    for (int k = 0; k < n; k++) p->pos[c->instrs[k]->id] = -1;
    for (int k = 0; k < n && ok; k++) {
      const ts_hlo_instr_t *i = c->instrs[k];
      for (int o = 0; o < i->nops && ok; o++) ok = p->pos[i->ops[o]->id] >= 0;
      for (int o = 0; o < i->nctrl_preds && ok; o++) ok = p->pos[i->ctrl_preds[o]->id] >= 0;
      p->pos[i->id] = k;
      rc->order[k] = i;
    }
    if (ok) {
      rc->n = n;
      return TS_OK;
    }
  }
  TS_CHECK(ts_hlo_comp_post_order(c, rc->order));
  rc->n = n;
  for (int k = 0; k < n; k++) p->pos[rc->order[k]->id] = k;
  return TS_OK;
}

/* ---- buffers ------------------------------------------------------------------- */

static int new_buf(rt_comp_t *rc, rt_buf_kind_t kind, size_t bytes, int def) {
  if (rc->nbufs == rc->bufs_cap) {
    int cap = rc->bufs_cap ? rc->bufs_cap * 2 : 8;
    rt_buf_t *b = ts_realloc(rc->bufs, (size_t)cap * sizeof *b);
    if (!b) return -1;
    rc->bufs = b;
    rc->bufs_cap = cap;
  }
  rt_buf_t *b = &rc->bufs[rc->nbufs];
  memset(b, 0, sizeof *b);
  b->kind = kind;
  b->bytes = bytes;
  b->def = def;
  b->last = def;
  b->index = -1;
  b->offset = -1;
  return rc->nbufs++;
}

/* ---- lowering: slots and steps ----------------------------------------------------- */

typedef struct {
  ts_rt_program_t *p;
  int ci;
  rt_comp_t *rc;
  bool entry;
  int *step_of_pos;
  ts_diag_t *diag;
} lower_t;

static int op_slot(lower_t *L, const ts_hlo_instr_t *op) { return L->rc->slot_base[L->p->pos[op->id]]; }
static int op_nslots(const ts_hlo_instr_t *op) { return ts_shape_leaf_count(op->shape); }

/* Leaves [from, to) of instruction k are the operands' buffers that the one
 * buffer definition names (ts_hlo_leaf_source): the lowering takes which
 * operand leaf from there rather than working it out again. */
static ts_status_t shared_slots(lower_t *L, int k, int from, int to) {
  rt_comp_t *rc = L->rc;
  const ts_hlo_instr_t *i = rc->order[k];
  for (int j = from; j < to; j++) {
    ts_leaf_source_t src = ts_hlo_leaf_source(i, j);
    if (src.kind != TS_LEAF_ALIASED)
      return rt_fail(L->p->m, i, L->diag, TS_ERR_INVALID_ARGUMENT,
                     "leaf %d of the result is not a view of an operand's buffer (malformed %s)", j,
                     ts_opcode_name(i->op));
    rc->slot_buf[rc->slot_base[k] + j] = rc->slot_buf[op_slot(L, i->ops[src.op]) + src.op_leaf];
  }
  return TS_OK;
}

static ts_status_t fresh_slots(lower_t *L, int k, int from, int to) {
  rt_comp_t *rc = L->rc;
  for (int j = from; j < to; j++) {
    int s = rc->slot_base[k] + j;
    int b = new_buf(rc, BUF_ARENA, leaf_bytes(rc->slot_shape[s]), k);
    if (b < 0) return TS_ERR_NOMEM;
    rc->slot_buf[s] = b;
  }
  return TS_OK;
}

static rt_step_t *add_step(lower_t *L, int k, rt_step_kind_t kind) {
  rt_comp_t *rc = L->rc;
  rt_step_t *s = &rc->steps[rc->nsteps];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->instr = rc->order[k];
  s->gindex = L->p->gindex[s->instr->id];
  s->coll = -1;
  s->start = -1;
  L->step_of_pos[k] = rc->nsteps++;
  return s;
}

static int *arena_ints(ts_rt_program_t *p, int n) { return ts_arena_alloc(p->arena, (size_t)(n > 0 ? n : 1) * sizeof(int)); }

/* in = every slot of every operand, in order. */
static ts_status_t operand_slots(lower_t *L, const ts_hlo_instr_t *i, int first_op, rt_step_t *s) {
  int n = 0;
  for (int o = first_op; o < i->nops; o++) n += op_nslots(i->ops[o]);
  s->in = arena_ints(L->p, n);
  if (!s->in) return TS_ERR_NOMEM;
  s->nin = 0;
  for (int o = first_op; o < i->nops; o++)
    for (int j = 0; j < op_nslots(i->ops[o]); j++) s->in[s->nin++] = op_slot(L, i->ops[o]) + j;
  return TS_OK;
}

/* out = slots [from, to) of the instruction at k. */
static ts_status_t result_slots(lower_t *L, int k, int from, int to, rt_step_t *s) {
  s->out = arena_ints(L->p, to - from);
  if (!s->out) return TS_ERR_NOMEM;
  s->nout = to - from;
  for (int j = from; j < to; j++) s->out[j - from] = L->rc->slot_base[k] + j;
  return TS_OK;
}

/* Every operand must be one array (kernels and collectives take arrays). */
static ts_status_t array_operands(lower_t *L, const ts_hlo_instr_t *i) {
  for (int o = 0; o < i->nops; o++)
    if (op_nslots(i->ops[o]) != 1 || i->ops[o]->shape->elem == TS_TUPLE)
      return rt_fail(L->p->m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "operand %d is a tuple", o);
  return TS_OK;
}

/* One kernel step for instruction i at position k: fn over its array
 * operands into fresh result slots [0, nl). */
static ts_status_t kernel_step(lower_t *L, const ts_hlo_instr_t *i, int k, int nl, ts_kernel_fn fn) {
  TS_CHECK(array_operands(L, i));
  TS_CHECK(fresh_slots(L, k, 0, nl));
  rt_step_t *s = add_step(L, k, ST_KERNEL);
  s->fn = fn;
  TS_CHECK(operand_slots(L, i, 0, s));
  return result_slots(L, k, 0, nl, s);
}

static ts_status_t callee_index(lower_t *L, const ts_hlo_instr_t *i, const ts_hlo_comp_t *c, int *out) {
  *out = c ? rt_comp_index(L->p, c) : -1;
  if (*out < 0) return rt_fail(L->p->m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "no called computation");
  return TS_OK;
}

static const ts_hlo_comp_t *comp_attr(const ts_hlo_instr_t *i, const char *name) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, name);
  return a && (a->kind == TS_ATTR_COMP || a->kind == TS_ATTR_COMP_LIST) && a->v.comps.n > 0 ? a->v.comps.comps[0]
                                                                                          : NULL;
}

/* A collective start (sugar or calls= a computation whose root is one
 * collective of its parameters): results in tuple element 1 (all-reduce-start:
 * the whole shape), element 0 aliases the operands, the rest are contexts. */
static ts_status_t lower_coll_start(lower_t *L, int k, const ts_hlo_instr_t *attrs, ts_opcode_t kind) {
  const ts_hlo_instr_t *i = L->rc->order[k];
  const ts_shape_t *sh = i->shape;
  int nl = ts_shape_leaf_count(sh);
  TS_CHECK(array_operands(L, i));
  rt_step_t *s = add_step(L, k, ST_COLL_START);
  TS_CHECK(operand_slots(L, i, 0, s));
  if (i->op == TS_OP_ALL_REDUCE_START || sh->elem != TS_TUPLE || sh->ntuple < 2) {
    TS_CHECK(fresh_slots(L, k, 0, nl));
    TS_CHECK(result_slots(L, k, 0, nl, s));
    s->zero_from = nl;
  } else {
    int r0 = elem_leaf_offset(sh, 1), r1 = elem_leaf_offset(sh, 2);
    if (r0 == i->nops) {
      TS_CHECK(shared_slots(L, k, 0, i->nops));
    } else {
      TS_CHECK(fresh_slots(L, k, 0, r0));
    }
    TS_CHECK(fresh_slots(L, k, r0, nl));
    /* out: the results, then the contexts (and element 0 when not aliased) to zero */
    s->out = arena_ints(L->p, nl);
    if (!s->out) return TS_ERR_NOMEM;
    s->nout = 0;
    for (int j = r0; j < r1; j++) s->out[s->nout++] = L->rc->slot_base[k] + j;
    s->zero_from = s->nout;
    if (r0 != i->nops)
      for (int j = 0; j < r0; j++) s->out[s->nout++] = L->rc->slot_base[k] + j;
    for (int j = r1; j < nl; j++) s->out[s->nout++] = L->rc->slot_base[k] + j;
  }
  if (s->zero_from != i->nops)
    return rt_fail(L->p->m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "%d results for %d operands", s->zero_from, i->nops);
  return rt_coll_compile(L->p, attrs, i, kind, L->diag, &s->coll);
}

/* Whether an async computation is one collective of its parameters, in order. */
static const ts_hlo_instr_t *wrapped_collective(const ts_hlo_comp_t *c, int nops) {
  const ts_hlo_instr_t *r = c ? c->root : NULL;
  if (!r || !is_sync_collective(r->op) || r->nops != nops || c->nparams != nops) return NULL;
  for (int o = 0; o < nops; o++)
    if (r->ops[o] != c->params[o]) return NULL;
  return r;
}

static ts_status_t lower_instr(lower_t *L, int k) {
  ts_rt_program_t *p = L->p;
  rt_comp_t *rc = L->rc;
  const ts_hlo_instr_t *i = rc->order[k];
  const ts_hlo_module_t *m = p->m;
  int nl = ts_shape_leaf_count(i->shape);
  int base = rc->slot_base[k];
  ts_opcode_t op = i->op;
  switch (op) {
  case TS_OP_PARAMETER: {
    int first = 0;
    for (int q = 0; q < i->param_number && q < rc->comp->nparams; q++)
      first += ts_shape_leaf_count(rc->comp->params[q]->shape);
    for (int j = 0; j < nl; j++) rc->slot_buf[base + j] = rc->param_buf[first + j];
    break;
  }
  case TS_OP_CONSTANT: {
    const rt_const_t *cv = &p->consts[i->id];
    const ts_array_t *leaves = cv->leaves;
    int n = cv->n;
    if (n != nl || n > 256) return rt_fail(m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "constant with %d leaves", n);
    for (int j = 0; j < nl; j++) {
      int b = new_buf(rc, BUF_CONST, ts_array_bytes(&leaves[j]), k);
      if (b < 0) return TS_ERR_NOMEM;
      rc->bufs[b].cdata = leaves[j].data;
      rc->slot_buf[base + j] = b;
    }
    break;
  }
  case TS_OP_BITCAST: /* the same bytes where the buffer definition says so, else a kernel */
    if (ts_hlo_leaf_source(i, 0).kind != TS_LEAF_ALIASED) goto kernel;
    TS_CHECK(shared_slots(L, k, 0, nl));
    break;
  case TS_OP_TUPLE:
  case TS_OP_GET_TUPLE_ELEMENT:
  case TS_OP_RESHAPE:
  case TS_OP_COPY:
  case TS_OP_ADD_DEPENDENCY:
  case TS_OP_OPT_BARRIER:
  case TS_OP_DOMAIN:
  case TS_OP_ASYNC_UPDATE:
  case TS_OP_ALL_REDUCE_DONE:
  case TS_OP_ALL_GATHER_DONE:
  case TS_OP_COLLECTIVE_PERMUTE_DONE:
  case TS_OP_ASYNC_DONE:
  case TS_OP_COPY_DONE:
    /* views of an operand's buffers: which leaves, hlo/buffers.c says */
    TS_CHECK(shared_slots(L, k, 0, nl));
    break;
  case TS_OP_CUSTOM_CALL: {
    const char *t = ts_hlo_custom_call_target(i);
    ts_custom_call_kind_t kind = ts_hlo_custom_call_kind(i);
    if (kind == TS_CC_TOPK) goto kernel;
    if (kind == TS_CC_DEVICE_LIBRARY)
      return rt_fail(m, i, L->diag, TS_ERR_UNSUPPORTED,
                     "custom-call target \"%s\" calls a GPU/vendor library: it cannot run here", t);
    if (kind == TS_CC_SHARDING || kind == TS_CC_IDENTITY || kind == TS_CC_REGION_ENTER || kind == TS_CC_REGION_EXIT) {
      /* In a per-device module these only mark shardings: the local value
       * passes through when its bytes fit. */
      int have = 0;
      for (int o = 0; o < i->nops; o++) have += op_nslots(i->ops[o]);
      if (have != nl) return rt_fail(m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "%s: results do not match operands", t);
      int at = 0;
      for (int o = 0; o < i->nops; o++) {
        int c = op_nslots(i->ops[o]);
        for (int j = 0; j < c; j++)
          if (leaf_bytes(rc->slot_shape[op_slot(L, i->ops[o]) + j]) != leaf_bytes(rc->slot_shape[base + at + j]))
            /* not a per-device program (a verify error: `tessera run`
             * partitions such modules, and only asks first whether
             * every op has a meaning, TS_ERR_INVALID_ARGUMENT) */
            return rt_fail(m, i, L->diag, TS_ERR_VERIFY,
                           "custom-call target \"%s\" changes the shape; a per-device program has no manual region "
                           "boundaries (partition the module first)", t);
        at += c;
      }
      TS_CHECK(shared_slots(L, k, 0, nl));
      break;
    }
    return rt_fail(m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "custom-call target \"%s\" has no meaning in the runtime", t);
  }
  case TS_OP_AFTER_ALL:
    TS_CHECK(fresh_slots(L, k, 0, nl));
    break;
  case TS_OP_PARTITION_ID:
  case TS_OP_REPLICA_ID: {
    TS_CHECK(fresh_slots(L, k, 0, nl));
    rt_step_t *s = add_step(L, k, ST_ID);
    TS_CHECK(result_slots(L, k, 0, nl, s));
    break;
  }
  case TS_OP_COPY_START: {
    const ts_shape_t *sh = i->shape;
    TS_CHECK(array_operands(L, i));
    if (sh->elem != TS_TUPLE || sh->ntuple < 2 || ts_shape_leaf_count(sh->tuple[0]) != 1 ||
        ts_shape_leaf_count(sh->tuple[1]) != 1)
      return rt_fail(m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "copy-start shape is not (destination, source, context)");
    TS_CHECK(fresh_slots(L, k, 0, 1));
    TS_CHECK(shared_slots(L, k, 1, 2));
    TS_CHECK(fresh_slots(L, k, 2, nl));
    rt_step_t *s = add_step(L, k, ST_COPY_START);
    TS_CHECK(operand_slots(L, i, 0, s));
    s->out = arena_ints(p, nl);
    if (!s->out) return TS_ERR_NOMEM;
    s->out[s->nout++] = base;
    for (int j = 2; j < nl; j++) s->out[s->nout++] = base + j;
    s->zero_from = 1;
    break;
  }
  case TS_OP_FUSION:
    if (p->fusion_kernel && ts_shape_is_array(i->shape)) {
      ts_kernel_fn fn = p->fusion_kernel(p->fusion_state, i);
      if (fn) {
        TS_CHECK(kernel_step(L, i, k, nl, fn));
        break;
      }
    }
    __attribute__((fallthrough)); /* not compiled: the fused computation, step by step */
  case TS_OP_CALL: {
    TS_CHECK(fresh_slots(L, k, 0, nl));
    rt_step_t *s = add_step(L, k, ST_CALL);
    s->callee = arena_ints(p, 1);
    if (!s->callee) return TS_ERR_NOMEM;
    s->ncallee = 1;
    TS_CHECK(callee_index(L, i, i->ncalled ? i->called[0] : NULL, &s->callee[0]));
    TS_CHECK(operand_slots(L, i, 0, s));
    TS_CHECK(result_slots(L, k, 0, nl, s));
    s->zero_from = nl;
    break;
  }
  case TS_OP_WHILE: {
    TS_CHECK(fresh_slots(L, k, 0, nl));
    rt_step_t *s = add_step(L, k, ST_WHILE);
    s->callee = arena_ints(p, 2);
    if (!s->callee) return TS_ERR_NOMEM;
    s->ncallee = 2;
    TS_CHECK(callee_index(L, i, comp_attr(i, "condition"), &s->callee[0]));
    TS_CHECK(callee_index(L, i, comp_attr(i, "body"), &s->callee[1]));
    TS_CHECK(operand_slots(L, i, 0, s));
    TS_CHECK(result_slots(L, k, 0, nl, s));
    if (s->nin != nl) return rt_fail(m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "loop state does not match the operand");
    break;
  }
  case TS_OP_CONDITIONAL: {
    TS_CHECK(fresh_slots(L, k, 0, nl));
    rt_step_t *s = add_step(L, k, ST_COND);
    const ts_hlo_comp_t *br[1024];
    int nb = 0;
    const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "branch_computations");
    if (a) {
      for (int j = 0; j < a->v.comps.n && nb < 1024; j++) br[nb++] = a->v.comps.comps[j];
    } else {
      br[nb++] = comp_attr(i, "true_computation"); /* pred true -> branch 0 */
      br[nb++] = comp_attr(i, "false_computation");
    }
    if (nb == 0 || i->nops != nb + 1 || op_nslots(i->ops[0]) != 1)
      return rt_fail(m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "conditional with %d branches and %d operands", nb, i->nops);
    s->callee = arena_ints(p, nb);
    s->branch_arg = arena_ints(p, nb);
    s->branch_nargs = arena_ints(p, nb);
    if (!s->callee || !s->branch_arg || !s->branch_nargs) return TS_ERR_NOMEM;
    s->ncallee = nb;
    for (int b = 0; b < nb; b++) TS_CHECK(callee_index(L, i, br[b], &s->callee[b]));
    TS_CHECK(operand_slots(L, i, 0, s));
    int at = 1;
    for (int b = 0; b < nb; b++) {
      s->branch_arg[b] = at;
      s->branch_nargs[b] = op_nslots(i->ops[b + 1]);
      at += s->branch_nargs[b];
    }
    TS_CHECK(result_slots(L, k, 0, nl, s));
    break;
  }
  case TS_OP_ALL_REDUCE_START:
    return lower_coll_start(L, k, i, TS_OP_ALL_REDUCE);
  case TS_OP_ALL_GATHER_START:
    return lower_coll_start(L, k, i, TS_OP_ALL_GATHER);
  case TS_OP_COLLECTIVE_PERMUTE_START:
    return lower_coll_start(L, k, i, TS_OP_COLLECTIVE_PERMUTE);
  case TS_OP_ASYNC_START: {
    if (i->async_wrapped != TS_OP_COUNT) {
      if (is_sync_collective(i->async_wrapped)) return lower_coll_start(L, k, i, i->async_wrapped);
      return rt_fail(m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "async %s has no meaning in the runtime",
                  ts_opcode_name(i->async_wrapped));
    }
    const ts_hlo_comp_t *callee = i->ncalled ? i->called[0] : NULL;
    const ts_hlo_instr_t *w = wrapped_collective(callee, i->nops);
    if (w) return lower_coll_start(L, k, w, w->op);
    /* Anything else runs when it starts; the done only hands out the result. */
    const ts_shape_t *sh = i->shape;
    if (sh->elem != TS_TUPLE || sh->ntuple < 2)
      return rt_fail(m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "async-start shape is not ((operands), result, ...)");
    int r0 = elem_leaf_offset(sh, 1), r1 = elem_leaf_offset(sh, 2);
    TS_CHECK(fresh_slots(L, k, 0, nl));
    rt_step_t *s = add_step(L, k, ST_CALL);
    s->callee = arena_ints(p, 1);
    if (!s->callee) return TS_ERR_NOMEM;
    s->ncallee = 1;
    TS_CHECK(callee_index(L, i, callee, &s->callee[0]));
    TS_CHECK(operand_slots(L, i, 0, s));
    s->out = arena_ints(p, nl);
    if (!s->out) return TS_ERR_NOMEM;
    for (int j = r0; j < r1; j++) s->out[s->nout++] = base + j;
    s->zero_from = s->nout;
    for (int j = 0; j < r0; j++) s->out[s->nout++] = base + j;
    for (int j = r1; j < nl; j++) s->out[s->nout++] = base + j;
    break;
  }
  default:
    if (is_sync_collective(op)) {
      TS_CHECK(array_operands(L, i));
      TS_CHECK(fresh_slots(L, k, 0, nl));
      rt_step_t *s = add_step(L, k, ST_COLL);
      TS_CHECK(operand_slots(L, i, 0, s));
      TS_CHECK(result_slots(L, k, 0, nl, s));
      s->zero_from = nl;
      if (s->nout != s->nin)
        return rt_fail(m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "%d results for %d operands", s->nout, s->nin);
      return rt_coll_compile(p, i, i, op, L->diag, &s->coll);
    }
  kernel: {
    ts_kernel_fn fn = ts_kernel_for(ts_hlo_custom_call_kind(i) == TS_CC_TOPK ? TS_OP_TOPK : op);
    if (!fn) return rt_fail(m, i, L->diag, TS_ERR_INVALID_ARGUMENT, "opcode %s has no kernel in the runtime", ts_opcode_name(op));
    TS_CHECK(kernel_step(L, i, k, nl, fn));
    break;
  }
  }
  /* Dones wait on their start. */
  if (op == TS_OP_ALL_REDUCE_DONE || op == TS_OP_ALL_GATHER_DONE || op == TS_OP_COLLECTIVE_PERMUTE_DONE ||
      op == TS_OP_ASYNC_DONE) {
    const ts_hlo_instr_t *st = start_of(i);
    int sp = st && st->parent == rc->comp ? L->step_of_pos[p->pos[st->id]] : -1;
    if (sp >= 0 && rc->steps[sp].kind == ST_COLL_START) {
      rt_step_t *s = add_step(L, k, ST_COLL_DONE);
      s->start = sp;
    }
  }
  return TS_OK;
}

static size_t align_up(size_t n) { return (n + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN; }

/* ---- liveness and assignment --------------------------------------------------- */

/* Live ranges come from the one definition of liveness (ts_hlo_liveness,
 * which the scheduler's memory model uses too): the lowering's buffers must
 * be its buffers, leaf for leaf; a disagreement is our bug. */
static ts_status_t liveness(const ts_rt_program_t *p, rt_comp_t *rc, ts_diag_t *diag) {
  ts_hlo_liveness_t lv;
  TS_CHECK(ts_hlo_liveness(rc->comp, rc->order, &lv));
  int *shared = ts_malloc(((size_t)rc->nbufs + 1) * sizeof *shared); /* our buffer -> its buffer */
  int *ours = ts_malloc(((size_t)lv.nbufs + 1) * sizeof *ours);      /* and back */
  ts_status_t st = TS_OK;
  if (!shared || !ours) {
    st = TS_ERR_NOMEM;
    goto out;
  }
  for (int b = 0; b < rc->nbufs; b++) shared[b] = -1;
  for (int h = 0; h < lv.nbufs; h++) ours[h] = -1;
  for (int k = 0; k < rc->n && st == TS_OK; k++)
    for (int j = 0; j < lv.leaf_start[k + 1] - lv.leaf_start[k] && st == TS_OK; j++) {
      int ob = rc->slot_buf[rc->slot_base[k] + j], h = lv.leaf_buf[lv.leaf_start[k] + j];
      rt_buf_t *b = &rc->bufs[ob];
      bool same;
      if (h >= 0) {
        same = b->kind == BUF_ARENA && (shared[ob] < 0 || shared[ob] == h) && (ours[h] < 0 || ours[h] == ob) &&
               b->bytes == lv.bufs[h].bytes && b->def == lv.bufs[h].first;
        shared[ob] = h;
        ours[h] = ob;
        b->last = lv.bufs[h].last;
      } else if (h == TS_HLO_CONSTANT_LEAF) {
        same = b->kind == BUF_CONST;
      } else {
        int q = TS_HLO_PARAM_LEAF(0) - h;
        same = (b->kind == BUF_PARAM || b->kind == BUF_INPUT) && b->index == q;
        b->last = lv.param_last[q];
      }
      if (!same)
        st = rt_fail(p->m, rc->order[k], diag, TS_ERR_INTERNAL,
                     "leaf %d: the lowering's buffer is not the one liveness defines", j);
    }
out:
  ts_free(shared);
  ts_free(ours);
  ts_hlo_liveness_free(&lv);
  return st;
}

/* The arena: first fit over the live ranges (ts_hlo_first_fit, as the
 * scheduler's model packs them). */
static ts_status_t assign(rt_comp_t *rc) {
  int n = 0;
  ts_hlo_buffer_t *hb = ts_malloc(((size_t)rc->nbufs + 1) * sizeof *hb);
  int *id = ts_malloc(((size_t)rc->nbufs + 1) * sizeof *id);
  ts_status_t st = TS_OK;
  if (!hb || !id) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  for (int b = 0; b < rc->nbufs; b++)
    if (rc->bufs[b].kind == BUF_ARENA) {
      hb[n] = (ts_hlo_buffer_t){NULL, 0, rc->bufs[b].bytes, rc->bufs[b].def, rc->bufs[b].last, -1};
      id[n++] = b;
      rc->naive_bytes += align_up(rc->bufs[b].bytes);
    }
  uint64_t top;
  TS_CHECK_GOTO(ts_hlo_first_fit(hb, n, &top), st, done);
  for (int q = 0; q < n; q++) rc->bufs[id[q]].offset = hb[q].offset;
  rc->arena_bytes = (size_t)top;
done:
  ts_free(hb);
  ts_free(id);
  return st;
}

/* ---- computations -------------------------------------------------------------- */

static ts_status_t build_comp(ts_rt_program_t *p, int ci, bool scheduled, ts_diag_t *diag) {
  rt_comp_t *rc = &p->comps[ci];
  const ts_hlo_comp_t *c = p->m->comps[ci];
  rc->comp = c;
  TS_CHECK(build_order(p, c, scheduled, rc));
  int n = rc->n;
  rc->slot_base = ts_calloc((size_t)n + 1, sizeof *rc->slot_base);
  if (!rc->slot_base) return TS_ERR_NOMEM;
  int ns = 0;
  for (int k = 0; k < n; k++) {
    rc->slot_base[k] = ns;
    ns += ts_shape_leaf_count(rc->order[k]->shape);
  }
  rc->nslots = ns;
  rc->slot_buf = ts_calloc((size_t)ns + 1, sizeof *rc->slot_buf);
  rc->slot_shape = ts_calloc((size_t)ns + 1, sizeof *rc->slot_shape);
  rc->steps = ts_calloc((size_t)(2 * n) + 1, sizeof *rc->steps);
  int *step_of_pos = ts_calloc((size_t)n + 1, sizeof *step_of_pos);
  if (!rc->slot_buf || !rc->slot_shape || !rc->steps || !step_of_pos) {
    ts_free(step_of_pos);
    return TS_ERR_NOMEM;
  }
  for (int k = 0; k < n; k++) {
    int cnt = 0;
    leaf_shapes(rc->order[k]->shape, &rc->slot_shape[rc->slot_base[k]], &cnt);
    step_of_pos[k] = -1;
  }
  /* Parameter leaves: the caller's pointers (the entry: the device's inputs). */
  bool entry = c == p->m->entry;
  int np = 0;
  for (int q = 0; q < c->nparams; q++) np += ts_shape_leaf_count(c->params[q]->shape);
  rc->nparam_leaves = np;
  rc->param_buf = ts_calloc((size_t)np + 1, sizeof *rc->param_buf);
  if (!rc->param_buf) {
    ts_free(step_of_pos);
    return TS_ERR_NOMEM;
  }
  for (int q = 0, j = 0; q < c->nparams; q++) {
    const ts_shape_t *ls[4096];
    int cnt = 0;
    if (ts_shape_leaf_count(c->params[q]->shape) > 4096) {
      ts_free(step_of_pos);
      return rt_fail(p->m, c->params[q], diag, TS_ERR_INVALID_ARGUMENT, "more than 4096 leaves");
    }
    leaf_shapes(c->params[q]->shape, ls, &cnt);
    for (int e = 0; e < cnt; e++, j++) {
      int b = new_buf(rc, entry ? BUF_INPUT : BUF_PARAM, leaf_bytes(ls[e]), -1);
      if (b < 0) {
        ts_free(step_of_pos);
        return TS_ERR_NOMEM;
      }
      rc->bufs[b].index = j;
      rc->param_buf[j] = b;
    }
  }
  lower_t L = {.p = p, .ci = ci, .rc = rc, .entry = entry, .step_of_pos = step_of_pos, .diag = diag};
  ts_status_t st = TS_OK;
  for (int k = 0; k < n && st == TS_OK; k++) {
    st = lower_instr(&L, k);
    /* Aliases get a step in the entry only, so hooks and progress see every instruction. */
    if (st == TS_OK && entry && step_of_pos[k] < 0) add_step(&L, k, ST_NOP);
  }
  ts_free(step_of_pos);
  if (st != TS_OK) return st;
  rc->root_slot = rc->slot_base[p->pos[c->root->id]];
  rc->nroot = ts_shape_leaf_count(c->root->shape);
  rc->stage_buf = ts_calloc((size_t)rc->nroot + 1, sizeof *rc->stage_buf);
  if (!rc->stage_buf) return TS_ERR_NOMEM;
  for (int j = 0; j < rc->nroot; j++) rc->stage_buf[j] = -1;
  return p->check_only ? TS_OK : liveness(p, rc, diag);
}

/* The computations that can run: the entry, what its call, while and
 * conditional steps run and what its kernels apply (reducers, comparators),
 * transitively. A fusion with a compiled kernel runs none of its own, so the
 * fused computations of a compiled module cost nothing here, nor in every
 * device's memory. The rest stay empty (comp NULL). */
static ts_status_t build_reachable(ts_rt_program_t *p, bool scheduled, ts_diag_t *diag) {
  int *todo = ts_malloc(sizeof *todo * ((size_t)p->ncomps + 1));
  bool *seen = ts_calloc((size_t)p->ncomps + 1, sizeof *seen);
  ts_status_t st = todo && seen ? TS_OK : TS_ERR_NOMEM;
  int n = 0;
  if (st == TS_OK && p->entry >= 0) {
    todo[n++] = p->entry;
    seen[p->entry] = true;
  }
  while (n > 0) {
    const ts_hlo_comp_t *c = p->m->comps[todo[--n]];
    for (int k = 0; k < c->ninstrs; k++) {
      const ts_hlo_instr_t *i = c->instrs[k];
      if (i->op == TS_OP_FUSION && p->fusion_kernel && ts_shape_is_array(i->shape) &&
          p->fusion_kernel(p->fusion_state, i))
        continue;
      for (int q = 0; q < i->ncalled; q++) {
        int ci = rt_comp_index(p, i->called[q]);
        if (ci >= 0 && !seen[ci]) {
          seen[ci] = true;
          todo[n++] = ci;
        }
      }
    }
  }
  /* in text order, so that the first error is the first in the text */
  for (int ci = 0; st == TS_OK && ci < p->ncomps; ci++)
    if (seen[ci]) st = build_comp(p, ci, scheduled, diag);
  ts_free(todo);
  ts_free(seen);
  return st;
}

/* While bodies: a root leaf that is another parameter leaf is copied aside
 * before the loop state is overwritten (the state is the body's parameter). */
static ts_status_t stage_while_bodies(ts_rt_program_t *p) {
  for (int ci = 0; ci < p->ncomps; ci++) {
    rt_comp_t *rc = &p->comps[ci];
    for (int s = 0; s < rc->nsteps; s++) {
      if (rc->steps[s].kind != ST_WHILE) continue;
      rt_comp_t *body = &p->comps[rc->steps[s].callee[1]];
      for (int j = 0; j < body->nroot; j++) {
        const rt_buf_t *b = &body->bufs[body->slot_buf[body->root_slot + j]];
        if (b->kind != BUF_PARAM || b->index == j || body->stage_buf[j] >= 0) continue;
        int nb = new_buf(body, BUF_ARENA, b->bytes, body->n);
        if (nb < 0) return TS_ERR_NOMEM;
        body->bufs[nb].last = body->n + 1;
        body->stage_buf[j] = nb;
      }
    }
  }
  return TS_OK;
}

/* ---- entry inputs, outputs, aliasing ------------------------------------------- */

/* The leaf index of `path` inside `s` (a tuple index path), -1 if invalid. */
static int path_leaf(const ts_shape_t *s, const ts_i64_list_t *path) {
  int off = 0;
  for (int d = 0; d < path->n; d++) {
    if (s->elem != TS_TUPLE || path->v[d] < 0 || path->v[d] >= s->ntuple) return -1;
    off += elem_leaf_offset(s, (int)path->v[d]);
    s = s->tuple[path->v[d]];
  }
  return s->elem == TS_TUPLE ? -1 : off;
}

static ts_status_t build_io(ts_rt_program_t *p, ts_diag_t *diag) {
  const ts_hlo_comp_t *e = p->m->entry;
  rt_comp_t *rc = &p->comps[p->entry];
  p->ninputs = rc->nparam_leaves;
  p->noutputs = rc->nroot;
  int ni = p->ninputs, no = p->noutputs;
  p->in_shape = ts_calloc((size_t)ni + 1, sizeof *p->in_shape);
  p->in_param = ts_calloc((size_t)ni + 1, sizeof *p->in_param);
  p->out_shape = ts_calloc((size_t)no + 1, sizeof *p->out_shape);
  p->out_alias = ts_calloc((size_t)no + 1, sizeof *p->out_alias);
  p->out_mode = ts_calloc((size_t)no + 1, sizeof *p->out_mode);
  p->out_buf = ts_calloc((size_t)no + 1, sizeof *p->out_buf);
  p->out_src = ts_calloc((size_t)no + 1, sizeof *p->out_src);
  p->out_pre = ts_calloc((size_t)no + 1, sizeof *p->out_pre);
  p->out_stage = ts_calloc((size_t)no + 1, sizeof *p->out_stage);
  int *in_first = ts_calloc((size_t)e->nparams + 1, sizeof *in_first);
  bool *taken = ts_calloc((size_t)ni + 1, sizeof *taken);
  bool *written_at_end = ts_calloc((size_t)ni + 1, sizeof *written_at_end);
  bool *redirected = ts_calloc((size_t)rc->nbufs + 1, sizeof *redirected);
  ts_status_t st = TS_OK;
  if (!p->in_shape || !p->in_param || !p->out_shape || !p->out_alias || !p->out_mode || !p->out_buf || !p->out_src ||
      !p->out_pre || !p->out_stage ||
      !in_first || !taken || !written_at_end || !redirected) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  for (int q = 0, j = 0; q < e->nparams; q++) {
    in_first[q] = j;
    int cnt = 0;
    leaf_shapes(e->params[q]->shape, &p->in_shape[j], &cnt);
    for (int x = 0; x < cnt; x++) p->in_param[j + x] = q;
    j += cnt;
  }
  {
    int cnt = 0;
    leaf_shapes(e->root->shape, p->out_shape, &cnt);
  }
  for (int k = 0; k < no; k++) {
    p->out_alias[k] = -1;
    p->out_buf[k] = rc->slot_buf[rc->root_slot + k];
    p->out_src[k] = -1;
    p->out_pre[k] = -1;
    p->out_stage[k] = -1;
    p->out_mode[k] = OUT_VIEW;
  }
  const ts_hlo_attr_t *aa = ts_hlo_module_attr(p->m, "input_output_alias");
  if (aa && aa->kind == TS_ATTR_ALIASES) {
    for (int a = 0; a < aa->v.aliases.n; a++) {
      const ts_alias_t *al = &aa->v.aliases.v[a];
      int k = path_leaf(e->root->shape, &al->output_index);
      int i = -1;
      if (al->param_number >= 0 && al->param_number < e->nparams) {
        int off = path_leaf(e->params[al->param_number]->shape, &al->param_index);
        if (off >= 0) i = in_first[al->param_number] + off;
      }
      if (k < 0 || i < 0 || ts_shape_elements(p->out_shape[k]) != ts_shape_elements(p->in_shape[i]) ||
          p->out_shape[k]->elem != p->in_shape[i]->elem) {
        ts_diag_plain(diag, "input_output_alias entry %d does not name an output leaf and a parameter leaf of the "
                      "same shape", a);
        st = TS_ERR_INVALID_ARGUMENT;
        goto done;
      }
      p->out_alias[k] = i;
    }
  }
  /* In place when every read of the input happens before the output's
   * defining instruction (which then writes into it); else a copy at the end. */
  for (int k = 0; k < no; k++) {
    int i = p->out_alias[k];
    if (i < 0) continue;
    int b = p->out_buf[k];
    rt_buf_t *bb = &rc->bufs[b];
    const rt_buf_t *in = &rc->bufs[rc->param_buf[i]];
    if (bb->kind == BUF_INPUT && bb->index == i) {
      p->out_mode[k] = OUT_INPLACE;
    } else if (bb->kind == BUF_ARENA && !redirected[b] && !taken[i] && in->last < bb->def) {
      bb->kind = BUF_INPUT;
      bb->index = i;
      redirected[b] = true;
      taken[i] = true;
      p->out_mode[k] = OUT_INPLACE;
    } else {
      p->out_mode[k] = OUT_COPY;
      p->out_src[k] = b;
      written_at_end[i] = true;
    }
    if (p->out_mode[k] == OUT_INPLACE) taken[i] = true;
  }
  /* An output that reads an input the step's end overwrites is set aside
   * first (phase 1 of the step's end), then the copies run (phase 2). */
  for (int k = 0; k < no; k++) {
    if (p->out_mode[k] == OUT_INPLACE) continue;
    int b = p->out_mode[k] == OUT_COPY ? p->out_src[k] : p->out_buf[k];
    const rt_buf_t *bb = &rc->bufs[b];
    if (bb->kind != BUF_INPUT || !written_at_end[bb->index]) continue;
    int sb = new_buf(rc, BUF_ARENA, bb->bytes, rc->n);
    if (sb < 0) {
      st = TS_ERR_NOMEM;
      goto done;
    }
    rc->bufs[sb].last = rc->n + 1;
    p->out_pre[k] = b;
    p->out_stage[k] = sb;
    if (p->out_mode[k] == OUT_COPY) p->out_src[k] = sb;
    else p->out_buf[k] = sb;
  }
  for (int k = 0; k < no; k++)
    if (p->out_mode[k] == OUT_COPY) p->out_buf[k] = rc->param_buf[p->out_alias[k]];
done:
  ts_free(in_first);
  ts_free(taken);
  ts_free(written_at_end);
  ts_free(redirected);
  return st;
}

/* ---- the program ----------------------------------------------------------------- */

/* The array leaves of `shape`, in order. */
static int const_leaf_count(const ts_shape_t *shape) {
  if (shape->elem != TS_TUPLE) return 1;
  int n = 0;
  for (int k = 0; k < shape->ntuple; k++) n += const_leaf_count(shape->tuple[k]);
  return n;
}

/* Fills c->leaves[c->n...] from `lit`, walking `shape` alongside it: a
 * zero-filled buffer per array leaf (tokens and empty arrays get one too),
 * written by ts_kernel_literal. */
static ts_status_t const_fill(const ts_literal_t *lit, const ts_shape_t *shape, rt_const_t *c) {
  if (lit->ntuple || shape->elem == TS_TUPLE) {
    if (lit->ntuple != shape->ntuple) return TS_ERR_INVALID_ARGUMENT;
    for (int k = 0; k < lit->ntuple; k++) TS_CHECK(const_fill(lit->tuple[k], shape->tuple[k], c));
    return TS_OK;
  }
  ts_array_t *a = &c->leaves[c->n];
  *a = (ts_array_t){shape->elem, shape->rank, shape->dims, NULL};
  size_t bytes = ts_elem_is_array(shape->elem) ? ts_array_bytes(a) : 0;
  if (!(a->data = ts_calloc(bytes ? bytes : 1, 1))) return TS_ERR_NOMEM;
  c->n++;
  return ts_kernel_literal(lit, a);
}

static void const_free(rt_const_t *c) {
  for (int k = 0; k < c->n; k++) ts_free(c->leaves[k].data);
  ts_free(c->leaves);
  c->leaves = NULL;
  c->n = 0;
}

/* A constant's value, narrowed to its element types (ts_kernel_literal). */
static ts_status_t const_build(const ts_literal_t *lit, rt_const_t *c) {
  int n = const_leaf_count(lit->shape);
  c->n = 0;
  c->leaves = ts_calloc((size_t)(n ? n : 1), sizeof *c->leaves);
  if (!c->leaves) return TS_ERR_NOMEM;
  ts_status_t st = const_fill(lit, lit->shape, c);
  if (st != TS_OK) const_free(c);
  return st;
}

static ts_status_t build_constants(ts_rt_program_t *p, ts_diag_t *diag) {
  const ts_hlo_module_t *m = p->m;
  for (int c = 0; c < m->ncomps; c++)
    for (int j = 0; j < m->comps[c]->ninstrs; j++) {
      const ts_hlo_instr_t *i = m->comps[c]->instrs[j];
      if (i->op != TS_OP_CONSTANT) continue;
      if (!i->literal) return rt_fail(m, i, diag, TS_ERR_INVALID_ARGUMENT, "constant without a literal");
      ts_status_t st = const_build(i->literal, &p->consts[i->id]);
      if (st != TS_OK) return rt_fail(m, i, diag, st, "cannot build the constant's value");
      const rt_const_t *c = &p->consts[i->id];
      for (int k = 0; k < c->n && k < 256; k++) p->mem.constants += ts_array_bytes(&c->leaves[k]);
    }
  return TS_OK;
}

static ts_status_t create(const ts_hlo_module_t *m, const ts_rt_program_opts_t *opts, bool check_only,
                          ts_rt_program_t **out, ts_diag_t *diag) {
  *out = NULL;
  if (!m->entry) {
    ts_diag_plain(diag, "module %s has no entry computation", m->name);
    return TS_ERR_INVALID_ARGUMENT;
  }
  ts_rt_program_t *p = ts_calloc(1, sizeof *p);
  if (!p) return TS_ERR_NOMEM;
  p->m = m;
  p->check_only = check_only;
  p->replicas = opts && opts->replica_count > 0 ? opts->replica_count : m->replica_count > 0 ? m->replica_count : 1;
  if (opts) {
    p->fusion_kernel = opts->fusion_kernel;
    p->fusion_state = opts->fusion_state;
  }
  p->partitions = opts && opts->num_partitions > 0 ? opts->num_partitions
                  : m->num_partitions > 0         ? m->num_partitions
                                                  : 1;
  p->ncomps = m->ncomps;
  p->arena = ts_arena_create();
  p->comps = ts_calloc((size_t)m->ncomps + 1, sizeof *p->comps);
  p->pos = ts_calloc((size_t)m->next_id + 1, sizeof *p->pos);
  p->gindex = ts_calloc((size_t)m->next_id + 1, sizeof *p->gindex);
  p->consts = ts_calloc((size_t)m->next_id + 1, sizeof *p->consts);
  int total = 0;
  for (int c = 0; c < m->ncomps; c++) total += m->comps[c]->ninstrs;
  p->names = ts_calloc((size_t)total + 1, sizeof *p->names);
  ts_status_t st = TS_OK;
  if (!p->arena || !p->comps || !p->pos || !p->gindex || !p->consts || !p->names ||
      !ts_ptrmap_reserve(&p->comp_index, (size_t)m->ncomps)) {
    st = TS_ERR_NOMEM;
    goto fail;
  }
  for (int c = m->ncomps - 1; c >= 0; c--) /* the first index of a computation listed twice */
    if (!ts_ptrmap_put(&p->comp_index, m->comps[c], c)) {
      st = TS_ERR_NOMEM;
      goto fail;
    }
  for (int c = 0; c < m->ncomps; c++)
    for (int j = 0; j < m->comps[c]->ninstrs; j++) {
      const ts_hlo_instr_t *i = m->comps[c]->instrs[j];
      p->gindex[i->id] = p->ninstrs;
      p->names[p->ninstrs++] = i->name;
    }
  p->entry = rt_comp_index(p, m->entry);
  TS_CHECK_GOTO(build_constants(p, diag), st, fail);
  const ts_hlo_attr_t *sa = ts_hlo_module_attr(m, "is_scheduled");
  bool scheduled = sa && sa->kind == TS_ATTR_BOOL && sa->v.b;
  TS_CHECK_GOTO(build_reachable(p, scheduled, diag), st, fail);
  if (check_only) {
    *out = p;
    return TS_OK;
  }
  TS_CHECK_GOTO(stage_while_bodies(p), st, fail);
  TS_CHECK_GOTO(build_io(p, diag), st, fail);
  for (int c = 0; c < m->ncomps; c++)
    if (p->comps[c].comp) TS_CHECK_GOTO(assign(&p->comps[c]), st, fail);
  /* memory */
  rt_comp_t *ec = &p->comps[p->entry];
  for (int i = 0; i < p->ninputs; i++) p->mem.inputs += align_up(ec->bufs[ec->param_buf[i]].bytes);
  for (int k = 0; k < p->noutputs; k++)
    if (p->out_alias[k] < 0 && ec->bufs[p->out_buf[k]].kind == BUF_ARENA) p->mem.outputs += align_up(ec->bufs[p->out_buf[k]].bytes);
  uint64_t arenas = 0, naive = 0;
  for (int c = 0; c < m->ncomps; c++) {
    arenas += p->comps[c].arena_bytes;
    naive += p->comps[c].naive_bytes;
  }
  arenas += p->coll_scratch;
  p->mem.temps = arenas > p->mem.outputs ? arenas - p->mem.outputs : 0;
  p->mem.peak = p->mem.inputs + p->mem.outputs + p->mem.temps;
  p->mem.naive = p->mem.inputs + naive + p->coll_scratch;
  *out = p;
  return TS_OK;
fail:
  ts_rt_program_destroy(p);
  return st;
}

ts_status_t ts_rt_program_create(const ts_hlo_module_t *m, const ts_rt_program_opts_t *opts, ts_rt_program_t **out,
                                 ts_diag_t *diag) {
  return create(m, opts, false, out, diag);
}

ts_status_t ts_rt_program_check(const ts_hlo_module_t *m, const ts_rt_program_opts_t *opts, ts_diag_t *diag) {
  ts_rt_program_t *p = NULL;
  ts_status_t st = create(m, opts, true, &p, diag);
  ts_rt_program_destroy(p);
  return st;
}

void ts_rt_program_destroy(ts_rt_program_t *p) {
  if (!p) return;
  if (p->comps)
    for (int c = 0; c < p->ncomps; c++) {
      rt_comp_t *rc = &p->comps[c];
      ts_free(rc->order);
      ts_free(rc->slot_base);
      ts_free(rc->slot_buf);
      ts_free(rc->slot_shape);
      ts_free(rc->bufs);
      ts_free(rc->param_buf);
      ts_free(rc->stage_buf);
      ts_free(rc->steps);
    }
  if (p->consts)
    for (int k = 0; k < p->m->next_id; k++) const_free(&p->consts[k]);
  rt_coll_program_free(p);
  ts_free(p->comps);
  ts_free(p->pos);
  ts_free(p->gindex);
  ts_free(p->consts);
  ts_free(p->names);
  ts_free(p->in_shape);
  ts_free(p->in_param);
  ts_free(p->out_shape);
  ts_free(p->out_alias);
  ts_free(p->out_mode);
  ts_free(p->out_buf);
  ts_free(p->out_src);
  ts_free(p->out_pre);
  ts_free(p->out_stage);
  ts_ptrmap_free(&p->comp_index);
  ts_arena_destroy(p->arena);
  ts_free(p);
}

int ts_rt_program_ninputs(const ts_rt_program_t *p) { return p->ninputs; }
int ts_rt_program_noutputs(const ts_rt_program_t *p) { return p->noutputs; }
const ts_shape_t *ts_rt_program_input_shape(const ts_rt_program_t *p, int i) {
  return i >= 0 && i < p->ninputs ? p->in_shape[i] : NULL;
}
const ts_shape_t *ts_rt_program_output_shape(const ts_rt_program_t *p, int k) {
  return k >= 0 && k < p->noutputs ? p->out_shape[k] : NULL;
}
int ts_rt_program_input_param(const ts_rt_program_t *p, int i) { return i >= 0 && i < p->ninputs ? p->in_param[i] : -1; }
int ts_rt_program_output_alias(const ts_rt_program_t *p, int k) {
  return k >= 0 && k < p->noutputs ? p->out_alias[k] : -1;
}
void ts_rt_program_memory(const ts_rt_program_t *p, ts_rt_memory_t *out) { *out = p->mem; }
int ts_rt_program_ninstrs(const ts_rt_program_t *p) { return p->ninstrs; }
const char *const *ts_rt_program_instr_names(const ts_rt_program_t *p) { return p->names; }
