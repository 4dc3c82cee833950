/* The verifier's rules for async pairs and schedules. An async pair is one
 * value: a `*-start` is used only by its `*-done` (async-start also by
 * async-update), and a done's operand is the start itself, never a
 * get-tuple-element or tuple rebuilt from it. In a module with
 * is_scheduled=true the text order is the schedule: every operand and
 * control predecessor comes first, and no async start is placed before a
 * reader of the buffer it writes into (XLA's LHS adds the same edges, from
 * the users of a buffer aliased with a done's output to its start):
 *   - an in-place collective-permute (4 operands) writes operand 1's buffer;
 *   - in a while body, a done that becomes root tuple element i writes the
 *     loop's buffer i, which the body's parameter element i also names.
 * Readers that depend on the start itself cannot move above it (that
 * would need a copy, not an order) and are not reported. */
#include "verifier_internal.h"

#include <string.h>

static bool is_start(ts_opcode_t op) {
  return op == TS_OP_ALL_GATHER_START || op == TS_OP_ALL_REDUCE_START || op == TS_OP_COLLECTIVE_PERMUTE_START ||
         op == TS_OP_ASYNC_START || op == TS_OP_COPY_START;
}

/* The start a done must take as its operand. */
static bool done_matches(ts_opcode_t done, ts_opcode_t start) {
  switch (done) {
  case TS_OP_ALL_GATHER_DONE: return start == TS_OP_ALL_GATHER_START;
  case TS_OP_ALL_REDUCE_DONE: return start == TS_OP_ALL_REDUCE_START;
  case TS_OP_COLLECTIVE_PERMUTE_DONE: return start == TS_OP_COLLECTIVE_PERMUTE_START;
  case TS_OP_ASYNC_DONE: return start == TS_OP_ASYNC_START || start == TS_OP_ASYNC_UPDATE;
  case TS_OP_COPY_DONE: return start == TS_OP_COPY_START;
  default: return true;
  }
}

static bool is_done(ts_opcode_t op) { return !done_matches(op, TS_OP_COUNT); }

static ts_status_t check_pair(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  if (is_done(i->op) && i->nops == 1 && !done_matches(i->op, i->ops[0]->op))
    return ts_vfy_error(v, i, (ts_loc_t){0, 0},
                        "the operand of %s must be its %s itself, not '%s' (%s): an async pair is one value",
                        ts_opcode_name(i->op), i->op == TS_OP_ASYNC_DONE ? "async-start" : "start", i->ops[0]->name,
                        ts_opcode_name(i->ops[0]->op));
  if (is_start(i->op) || i->op == TS_OP_ASYNC_UPDATE)
    for (int u = 0; u < i->nusers; u++) {
      const ts_hlo_instr_t *w = i->users[u];
      bool ok = is_done(w->op) ? done_matches(w->op, i->op)
                               : (i->op == TS_OP_ASYNC_START || i->op == TS_OP_ASYNC_UPDATE) && w->op == TS_OP_ASYNC_UPDATE;
      if (!ok)
        return ts_vfy_error(v, w, (ts_loc_t){0, 0},
                            "uses %s '%s': only its done may use an async start (an async pair is one value)",
                            ts_opcode_name(i->op), i->name);
    }
  return TS_OK;
}

/* ---- buffers ------------------------------------------------------------- */

/* A buffer: the instruction that defines it, or (parameter, element). */
typedef struct {
  const ts_hlo_instr_t *def;
  int64_t index; /* -1: def's whole value */
} buffer_t;

static int64_t gte_index(const ts_hlo_instr_t *g) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(g, "index");
  return a && a->kind == TS_ATTR_INT ? a->v.i : -1;
}

/* The buffer a value names, through bitcasts and tuple plumbing. */
static buffer_t buffer_of(const ts_hlo_instr_t *i) {
  for (int hops = 0; hops < 1 << 16; hops++) {
    if (i->op == TS_OP_BITCAST && i->nops == 1) {
      i = i->ops[0];
    } else if (i->op == TS_OP_GET_TUPLE_ELEMENT && i->nops == 1) {
      const ts_hlo_instr_t *t = i->ops[0];
      int64_t k = gte_index(i);
      if (t->op == TS_OP_TUPLE && k >= 0 && k < t->nops) i = t->ops[k];
      else if (t->op == TS_OP_PARAMETER) return (buffer_t){t, k};
      else return (buffer_t){i, -1};
    } else {
      break;
    }
  }
  return (buffer_t){i, -1};
}

static bool same_buffer(buffer_t a, buffer_t b) { return a.def == b.def && a.index == b.index; }

/* The while bodies of m, into `bodies` (arena); their count. */
static int while_bodies(ts_vctx_t *v, const ts_hlo_comp_t ***bodies) {
  const ts_hlo_module_t *m = v->m;
  int n = 0, cap = 0;
  for (int pass = 0; pass < 2; pass++) {
    n = 0;
    for (int k = 0; k < m->ncomps; k++)
      for (int q = 0; q < m->comps[k]->ninstrs; q++) {
        const ts_hlo_instr_t *w = m->comps[k]->instrs[q];
        const ts_hlo_attr_t *b = w->op == TS_OP_WHILE ? ts_hlo_instr_attr(w, "body") : NULL;
        if (!b || b->kind != TS_ATTR_COMP || b->v.comps.n != 1) continue;
        if (pass == 1) (*bodies)[n] = b->v.comps.comps[0];
        n++;
      }
    if (pass == 0) {
      cap = n;
      *bodies = ts_arena_alloc(v->scratch, sizeof **bodies * (size_t)(cap + 1));
      if (!*bodies) return -1;
    }
  }
  return n;
}

typedef struct {
  ts_vctx_t *v;
  const ts_hlo_comp_t *c;
  int *pos;       /* [m->next_id]: position in c's order */
  uint8_t *after; /* [m->next_id]: depends on the start being checked */
  const ts_hlo_instr_t **stack;
} sctx_t;

/* Every reader of `b` placed after `start` that does not depend on it. */
static ts_status_t check_writer(sctx_t *s, const ts_hlo_instr_t *start, buffer_t b, const char *why) {
  const ts_hlo_comp_t *c = s->c;
  memset(s->after, 0, (size_t)c->module->next_id);
  int sp = 0;
  s->stack[sp++] = start;
  s->after[start->id] = 1;
  while (sp > 0) {
    const ts_hlo_instr_t *i = s->stack[--sp];
    for (int u = 0; u < i->nusers; u++)
      if (!s->after[i->users[u]->id]) {
        s->after[i->users[u]->id] = 1;
        s->stack[sp++] = i->users[u];
      }
  }
  for (int k = 0; k < c->ninstrs; k++) /* control successors count as dependent */
    for (int p = 0; p < c->instrs[k]->nctrl_preds; p++)
      if (c->instrs[k]->ctrl_preds[p] == start) s->after[c->instrs[k]->id] = 1;
  for (int k = s->pos[start->id] + 1; k < c->ninstrs; k++) {
    const ts_hlo_instr_t *r = c->instrs[k];
    if (s->after[r->id]) continue;
    for (int o = 0; o < r->nops; o++)
      if (same_buffer(buffer_of(r->ops[o]), b))
        return ts_vfy_error(s->v, start, (ts_loc_t){0, 0},
                            "scheduled before '%s', which reads the buffer this %s writes (%s): a start must "
                            "follow the last reader of its destination",
                            r->name, ts_opcode_name(start->op), why);
  }
  return TS_OK;
}

static ts_status_t check_comp(sctx_t *s, bool body) {
  ts_vctx_t *v = s->v;
  const ts_hlo_comp_t *c = s->c;
  for (int k = 0; k < c->ninstrs; k++) s->pos[c->instrs[k]->id] = k;
  for (int k = 0; k < c->ninstrs; k++) {
    const ts_hlo_instr_t *i = c->instrs[k];
    for (int o = 0; o < i->nops; o++)
      if (i->ops[o]->parent == c && s->pos[i->ops[o]->id] > k)
        return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "scheduled before its operand '%s' (is_scheduled=true)",
                            i->ops[o]->name);
    for (int p = 0; p < i->nctrl_preds; p++)
      if (i->ctrl_preds[p]->parent == c && s->pos[i->ctrl_preds[p]->id] > k)
        return ts_vfy_error(v, i, (ts_loc_t){0, 0},
                            "scheduled before its control predecessor '%s' (is_scheduled=true)",
                            i->ctrl_preds[p]->name);
  }
  for (int k = 0; k < c->ninstrs; k++) {
    const ts_hlo_instr_t *i = c->instrs[k];
    if (i->op == TS_OP_COLLECTIVE_PERMUTE_START && i->nops == 4) {
      const char *why = ts_arena_printf(v->scratch, "in place, into operand 1 '%s'", i->ops[1]->name);
      if (!why) return TS_ERR_NOMEM;
      TS_CHECK(check_writer(s, i, buffer_of(i->ops[1]), why));
    }
  }
  const ts_hlo_instr_t *root = c->root;
  if (!body || !root || root->op != TS_OP_TUPLE || c->nparams != 1) return TS_OK;
  for (int e = 0; e < root->nops; e++) {
    buffer_t b = buffer_of(root->ops[e]);
    const ts_hlo_instr_t *d = b.def;
    if (b.index != -1 || !is_done(d->op) || d->nops != 1 || !is_start(d->ops[0]->op)) continue;
    const char *why = ts_arena_printf(v->scratch, "its done is element %d of the while body's result, the loop "
                                      "buffer of parameter element %d", e, e);
    if (!why) return TS_ERR_NOMEM;
    TS_CHECK(check_writer(s, d->ops[0], (buffer_t){c->params[0], e}, why));
  }
  return TS_OK;
}

ts_status_t ts_vfy_schedule(ts_vctx_t *v) {
  const ts_hlo_module_t *m = v->m;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) TS_CHECK(check_pair(v, m->comps[c]->instrs[k]));
  const ts_hlo_attr_t *a = ts_hlo_module_attr(m, "is_scheduled");
  if (!a || a->kind != TS_ATTR_BOOL || !a->v.b) return TS_OK;
  size_t n = (size_t)m->next_id + 1;
  sctx_t s = {.v = v};
  s.pos = ts_arena_alloc(v->scratch, sizeof *s.pos * n);
  s.after = ts_arena_alloc(v->scratch, n);
  s.stack = ts_arena_alloc(v->scratch, sizeof *s.stack * n);
  if (!s.pos || !s.after || !s.stack) return TS_ERR_NOMEM;
  const ts_hlo_comp_t **bodies = NULL;
  int nbodies = while_bodies(v, &bodies);
  if (nbodies < 0) return TS_ERR_NOMEM;
  for (int c = 0; c < m->ncomps; c++) {
    s.c = m->comps[c];
    bool body = false;
    for (int b = 0; b < nbodies && !body; b++) body = bodies[b] == s.c;
    TS_CHECK(check_comp(&s, body));
  }
  return TS_OK;
}
