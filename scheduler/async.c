/* Async conversion: every synchronous collective becomes a start/done pair
 * in the forms XLA prints, so that the scheduler can put compute between
 * them:
 *   all-reduce          -> all-reduce-start / all-reduce-done (same shape)
 *   all-gather          -> all-gather-start (operand, result) / all-gather-done
 *   collective-permute  -> collective-permute-start (operand, result, u32[], u32[])
 *                          / collective-permute-done (the in-place form too)
 *   reduce-scatter, all-to-all, collective-broadcast
 *                       -> async-start ((operands...), result), calls=%wrapped
 *                          / async-done, the collective moved into %wrapped
 * Uses of the collective (operands, control predecessors, the root) move to
 * the done. */
#include "scheduler_internal.h"

#include <string.h>

/* The new instruction's name: the collective's with its opcode stem
 * replaced ("all-reduce.5" -> "all-reduce-start.5"), else with a suffix. */
static const char *pair_name(ts_hlo_module_t *m, const ts_hlo_instr_t *i, const char *suffix) {
  const char *stem = ts_opcode_name(i->op);
  size_t n = strlen(stem);
  if (strncmp(i->name, stem, n) == 0 && (i->name[n] == '.' || i->name[n] == 0))
    return ts_arena_printf(m->arena, "%s%s%s", stem, suffix, i->name + n);
  return ts_arena_printf(m->arena, "%s%s", i->name, suffix);
}

static void remove_user(ts_hlo_instr_t *def, const ts_hlo_instr_t *user) {
  int k = 0;
  for (int u = 0; u < def->nusers; u++)
    if (def->users[u] != user) def->users[k++] = def->users[u];
  def->nusers = k;
}

/* Every use of `old` in c (operands, control predecessors, root) becomes a
 * use of `rep`; `old` leaves c->instrs and its operands' user lists. */
static ts_status_t replace_and_drop(ts_hlo_comp_t *c, ts_hlo_instr_t *old, ts_hlo_instr_t *rep) {
  for (int u = 0; u < old->nusers; u++) {
    ts_hlo_instr_t *user = old->users[u];
    for (int k = 0; k < user->nops; k++)
      if (user->ops[k] == old) user->ops[k] = rep;
    bool have = false;
    for (int k = 0; k < rep->nusers; k++) have |= rep->users[k] == user;
    if (!have) {
      /* ts_hlo_instr_add_operand would append an operand; grow users by hand
       * through a throwaway operand list instead: add then drop it. */
      int keep = user->nops;
      TS_CHECK(ts_hlo_instr_add_operand(user, rep));
      user->nops = keep;
    }
  }
  old->nusers = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    ts_hlo_instr_t *i = c->instrs[k];
    for (int p = 0; p < i->nctrl_preds; p++)
      if (i->ctrl_preds[p] == old) i->ctrl_preds[p] = rep;
  }
  for (int k = 0; k < old->nops; k++) remove_user(old->ops[k], old);
  if (c->root == old) ts_hlo_comp_set_root(c, rep);
  return TS_OK;
}

/* The pair was appended last (start, then done): it takes `old`'s place in
 * the text order, which the scheduler's last tie-break keeps. */
static void take_place(ts_hlo_comp_t *c, ts_hlo_instr_t *old, ts_hlo_instr_t *start, ts_hlo_instr_t *done) {
  int n = c->ninstrs - 2, at = 0; /* without the pair */
  while (at < n && c->instrs[at] != old) at++;
  if (at == n) return; /* not found: leave the pair last */
  memmove(&c->instrs[at + 2], &c->instrs[at + 1], sizeof c->instrs[0] * (size_t)(n - at - 1));
  c->instrs[at] = start;
  c->instrs[at + 1] = done;
  c->ninstrs = n + 1;
}

static ts_status_t copy_attrs(ts_hlo_instr_t *to, const ts_hlo_instr_t *from) {
  for (int k = 0; k < from->nattrs; k++) TS_CHECK(ts_hlo_instr_add_attr(to, &from->attrs[k]));
  to->sharding = from->sharding;
  to->loc = from->loc;
  return TS_OK;
}

/* The shape of a collective's operands: the operand's, or a tuple of them. */
static const ts_shape_t *operands_shape(ts_hlo_module_t *m, const ts_hlo_instr_t *i) {
  if (i->nops == 1) return i->ops[0]->shape;
  ts_shape_t **e = ts_arena_alloc(m->arena, sizeof *e * (size_t)(i->nops ? i->nops : 1));
  if (!e) return NULL;
  for (int k = 0; k < i->nops; k++) e[k] = (ts_shape_t *)i->ops[k]->shape;
  return ts_hlo_shape_tuple(m, i->nops, e);
}

static ts_shape_t *pair_shape(ts_hlo_module_t *m, const ts_shape_t *a, const ts_shape_t *b, int extra_u32) {
  ts_shape_t *e[4] = {(ts_shape_t *)a, (ts_shape_t *)b, NULL, NULL};
  for (int k = 0; k < extra_u32; k++)
    if (!(e[2 + k] = ts_hlo_shape_array(m, TS_U32, 0, NULL))) return NULL;
  return ts_hlo_shape_tuple(m, 2 + extra_u32, e);
}

/* Puts computation `w` (just added, last) right before `before` in the
 * module's order, so that callees print first. */
static void move_before(ts_hlo_module_t *m, ts_hlo_comp_t *w, const ts_hlo_comp_t *before) {
  int at = 0;
  while (at < m->ncomps && m->comps[at] != before) at++;
  if (at >= m->ncomps - 1) return;
  memmove(&m->comps[at + 1], &m->comps[at], sizeof m->comps[0] * (size_t)(m->ncomps - 1 - at));
  m->comps[at] = w;
}

/* reduce-scatter, all-to-all, collective-broadcast: the collective moves into
 * a new computation called by async-start. */
static ts_status_t wrap(ts_hlo_module_t *m, ts_hlo_comp_t *c, ts_hlo_instr_t *i, ts_hlo_instr_t **start) {
  const char *cname = ts_arena_printf(m->arena, "wrapped_%s", i->name);
  if (!cname) return TS_ERR_NOMEM;
  for (int n = 1; ts_hlo_module_find_comp(m, cname); n++) {
    cname = ts_arena_printf(m->arena, "wrapped_%s.%d", i->name, n);
    if (!cname) return TS_ERR_NOMEM;
  }
  ts_hlo_comp_t *w;
  TS_CHECK(ts_hlo_comp_add(m, cname, &w));
  move_before(m, w, c);
  ts_hlo_instr_t **params = ts_arena_alloc(m->arena, sizeof *params * (size_t)(i->nops ? i->nops : 1));
  if (!params) return TS_ERR_NOMEM;
  for (int k = 0; k < i->nops; k++) {
    const char *pn = ts_arena_printf(m->arena, "param_%d", k);
    if (!pn) return TS_ERR_NOMEM;
    TS_CHECK(ts_hlo_instr_add(w, TS_OP_PARAMETER, i->ops[k]->shape, NULL, 0, pn, &params[k]));
    params[k]->param_number = k;
  }
  TS_CHECK(ts_hlo_comp_index_params(w));
  ts_hlo_instr_t *inner;
  TS_CHECK(ts_hlo_instr_add(w, i->op, i->shape, params, i->nops, i->name, &inner));
  TS_CHECK(copy_attrs(inner, i));
  ts_hlo_comp_set_root(w, inner);

  const ts_shape_t *ops = operands_shape(m, i);
  ts_shape_t *ops_tuple = ops && i->nops == 1 ? ts_hlo_shape_tuple(m, 1, (ts_shape_t *const *)&ops) : (ts_shape_t *)ops;
  ts_shape_t *shape = ops_tuple ? pair_shape(m, ops_tuple, i->shape, 0) : NULL;
  if (!shape) return TS_ERR_NOMEM;
  const char *sn = pair_name(m, i, "-start");
  if (!sn) return TS_ERR_NOMEM;
  TS_CHECK(ts_hlo_instr_add(c, TS_OP_ASYNC_START, shape, i->ops, i->nops, sn, start));
  ts_hlo_comp_t **callee = ts_arena_alloc(m->arena, sizeof *callee);
  if (!callee) return TS_ERR_NOMEM;
  callee[0] = w;
  ts_hlo_attr_t calls = {.name = "calls", .kind = TS_ATTR_COMP};
  calls.v.comps.n = 1;
  calls.v.comps.comps = callee;
  TS_CHECK(ts_hlo_instr_add_attr(*start, &calls));
  (*start)->loc = i->loc;
  (*start)->sharding = i->sharding;
  return TS_OK;
}

static ts_status_t convert_one(ts_hlo_module_t *m, ts_hlo_comp_t *c, ts_hlo_instr_t *i, bool *did) {
  ts_opcode_t start_op, done_op;
  const ts_shape_t *start_shape = NULL;
  *did = false;
  switch (i->op) {
  case TS_OP_ALL_REDUCE:
    start_op = TS_OP_ALL_REDUCE_START, done_op = TS_OP_ALL_REDUCE_DONE;
    start_shape = i->shape;
    break;
  case TS_OP_ALL_GATHER: {
    start_op = TS_OP_ALL_GATHER_START, done_op = TS_OP_ALL_GATHER_DONE;
    const ts_shape_t *ops = operands_shape(m, i);
    if (!ops || !(start_shape = pair_shape(m, ops, i->shape, 0))) return TS_ERR_NOMEM;
    break;
  }
  case TS_OP_COLLECTIVE_PERMUTE:
    /* One operand, or the in-place form (input, output, input and output
     * start indices): (input, result, u32[], u32[]) either way. The
     * combined form (a tuple of inputs) stays synchronous. */
    if (i->nops != 1 && i->nops != 4) return TS_OK;
    start_op = TS_OP_COLLECTIVE_PERMUTE_START, done_op = TS_OP_COLLECTIVE_PERMUTE_DONE;
    if (!(start_shape = pair_shape(m, i->ops[0]->shape, i->shape, 2))) return TS_ERR_NOMEM;
    break;
  case TS_OP_REDUCE_SCATTER:
  case TS_OP_ALL_TO_ALL:
  case TS_OP_COLLECTIVE_BROADCAST:
    start_op = TS_OP_ASYNC_START, done_op = TS_OP_ASYNC_DONE;
    break;
  default: return TS_OK;
  }
  ts_hlo_instr_t *start, *done;
  if (start_op == TS_OP_ASYNC_START) {
    TS_CHECK(wrap(m, c, i, &start));
  } else {
    const char *sn = pair_name(m, i, "-start");
    if (!sn) return TS_ERR_NOMEM;
    TS_CHECK(ts_hlo_instr_add(c, start_op, start_shape, i->ops, i->nops, sn, &start));
    TS_CHECK(copy_attrs(start, i));
  }
  const char *dn = pair_name(m, i, "-done");
  if (!dn) return TS_ERR_NOMEM;
  TS_CHECK(ts_hlo_instr_add(c, done_op, i->shape, &start, 1, dn, &done));
  done->loc = i->loc;
  done->sharding = i->sharding;
  /* Both halves carry the collective's metadata (op_name, source line), as
   * XLA's async conversion keeps it, so profiles and tests find either. */
  const ts_hlo_attr_t *md = ts_hlo_instr_attr(i, "metadata");
  if (md) {
    TS_CHECK(ts_hlo_instr_add_attr(done, md));
    if (start_op == TS_OP_ASYNC_START) TS_CHECK(ts_hlo_instr_add_attr(start, md));
  }
  TS_CHECK(replace_and_drop(c, i, done));
  take_place(c, i, start, done);
  *did = true;
  return TS_OK;
}

ts_status_t ts_sched_convert_async(ts_hlo_module_t *m, int *converted, ts_diag_t *diag) {
  (void)diag;
  int n = 0, ncomps = m->ncomps;
  ts_hlo_comp_t **comps = ts_malloc(sizeof *comps * (size_t)(ncomps ? ncomps : 1));
  if (!comps) return TS_ERR_NOMEM;
  memcpy(comps, m->comps, sizeof *comps * (size_t)ncomps); /* wrapping adds computations */
  ts_status_t st = TS_OK;
  for (int k = 0; k < ncomps && st == TS_OK; k++) {
    ts_hlo_comp_t *c = comps[k];
    int ninstrs = c->ninstrs;
    ts_hlo_instr_t **snap = ts_malloc(sizeof *snap * (size_t)(ninstrs ? ninstrs : 1));
    if (!snap) {
      st = TS_ERR_NOMEM;
      break;
    }
    memcpy(snap, c->instrs, sizeof *snap * (size_t)ninstrs);
    for (int j = 0; j < ninstrs && st == TS_OK; j++) {
      bool did;
      st = convert_one(m, c, snap[j], &did);
      n += did;
    }
    ts_free(snap);
  }
  ts_free(comps);
  if (converted) *converted = n;
  return st;
}
