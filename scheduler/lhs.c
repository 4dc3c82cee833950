/* The list scheduler of one computation, in the style of XLA's
 * latency-hiding scheduler (reference/cost_models.md section 5): bottom-up
 * over the dependency graph with a simulated clock and a ready set. An async
 * done occupies its kind's resource until its start is scheduled; the
 * start->done edge carries the collective's time, so the start only comes
 * off the ready set without a stall once enough compute has been scheduled
 * below it to cover the transfer. */
#include "scheduler_internal.h"
#include "ts_hlo_buffers.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  sched_ctx_t *x;
  ts_hlo_comp_t *c;
  int n;
  int *lidx;               /* instruction id -> local index (module-wide array) */
  ts_hlo_instr_t **ins;    /* local index -> instruction (text order) */
  int *pred_start, *preds; /* CSR: operands (with repeats) and control predecessors */
  int *src_start, *srcs;   /* CSR: buffers each node refers to (every leaf of its value) */
  int *def_start, *defs;   /* CSR: buffers each node defines */
  int nbufs;               /* buffers: the defined array leaves (ts_hlo_leaf_source) */
  uint64_t *buf_bytes;     /* [nbufs] */
  bool has_ctrl;           /* some node has control predecessors */
} graph_t;

typedef struct {
  int *remaining;     /* successors not yet scheduled */
  double *ready_time; /* earliest reversed time at which it may be scheduled */
  double *t;          /* reversed schedule time */
  bool *live;         /* buffers live below the current point */
  int *stamp;
  int stamp_now;
  int *ready;
  int nready;
  int *order;         /* bottom-up */
  int norder;
  int inflight[TS_SCHED_KIND_COUNT];
  uint64_t live_bytes, peak;
  double now;
  double cost_left;                  /* compute not yet scheduled */
  int dones_left[TS_SCHED_KIND_COUNT]; /* async dones not yet scheduled */
} state_t;

static sched_node_t *N(const graph_t *g, int k) { return &g->x->node[g->ins[k]->id]; }

/* ---- the graph ------------------------------------------------------------- */

static void graph_free(graph_t *g) {
  ts_free(g->ins);
  ts_free(g->pred_start);
  ts_free(g->preds);
  ts_free(g->src_start);
  ts_free(g->srcs);
  ts_free(g->def_start);
  ts_free(g->defs);
  ts_free(g->buf_bytes);
}

/* The buffers each node refers to, as ts_hlo_leaf_source defines them (the
 * runtime's buffers): a leaf it defines is a buffer of its own, an aliased
 * leaf is its operand's leaf's buffer, parameter and constant leaves are
 * none. A node refers to the buffers of all its leaves (a read of a tuple
 * reads them all). Nodes are visited operands first. */
static ts_status_t build_sources(graph_t *g) {
  int n = g->n;
  int *topo = ts_malloc(sizeof *topo * (size_t)(n + 1)), *indeg = ts_calloc((size_t)n + 1, sizeof *indeg);
  int *stamp = NULL;
  int *leaf_first = ts_malloc(sizeof *leaf_first * (size_t)(n + 1));
  int *leaf_buf = NULL;
  ts_status_t st = TS_OK;
  g->src_start = ts_malloc(sizeof *g->src_start * (size_t)(n + 1));
  g->def_start = ts_malloc(sizeof *g->def_start * (size_t)(n + 1));
  if (!topo || !indeg || !leaf_first || !g->src_start || !g->def_start) {
    st = TS_ERR_NOMEM;
    goto out;
  }
  int nleaves = 0;
  for (int k = 0; k < n; k++) {
    leaf_first[k] = nleaves;
    nleaves += ts_shape_leaf_count(g->ins[k]->shape);
  }
  leaf_first[n] = nleaves;
  leaf_buf = ts_malloc(sizeof *leaf_buf * (size_t)(nleaves + 1));
  g->srcs = ts_malloc(sizeof *g->srcs * (size_t)(nleaves + 1));
  g->defs = ts_malloc(sizeof *g->defs * (size_t)(nleaves + 1));
  g->buf_bytes = ts_malloc(sizeof *g->buf_bytes * (size_t)(nleaves + 1));
  stamp = ts_malloc(sizeof *stamp * (size_t)(nleaves + 1));
  if (!leaf_buf || !g->srcs || !g->defs || !g->buf_bytes || !stamp) {
    st = TS_ERR_NOMEM;
    goto out;
  }
  /* Kahn over operand edges: users after operands. */
  for (int k = 0; k < n; k++)
    for (int e = g->pred_start[k]; e < g->pred_start[k + 1]; e++) indeg[k]++;
  int head = 0, tail = 0;
  for (int k = 0; k < n; k++)
    if (!indeg[k]) topo[tail++] = k;
  while (head < tail) {
    int k = topo[head++];
    const ts_hlo_instr_t *i = g->ins[k];
    for (int u = 0; u < i->nusers; u++) {
      int j = g->lidx[i->users[u]->id];
      for (int o = 0; o < i->users[u]->nops; o++)
        if (i->users[u]->ops[o] == i && --indeg[j] == 0) topo[tail++] = j;
    }
    for (int j = 0; j < n && g->has_ctrl; j++) { /* control successors (rare) */
      const ts_hlo_instr_t *s = g->ins[j];
      for (int p = 0; p < s->nctrl_preds; p++)
        if (s->ctrl_preds[p] == i && --indeg[j] == 0) topo[tail++] = j;
    }
  }
  if (tail != n) {
    st = TS_ERR_INTERNAL; /* a cycle: the verifier rules it out */
    goto out;
  }
  /* Defined leaves are buffers, numbered by local index and leaf (as
   * ts_hlo_liveness numbers them for the text order); aliased leaves take
   * their operand's leaf's, operands first. */
  int nb = 0;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < leaf_first[k + 1] - leaf_first[k]; j++) {
      int *lb = &leaf_buf[leaf_first[k] + j];
      *lb = -1;
      if (ts_hlo_leaf_source(g->ins[k], j).kind != TS_LEAF_DEFINED) continue;
      g->buf_bytes[nb] = ts_hlo_leaf_bytes(g->ins[k], j);
      *lb = nb++;
    }
  g->nbufs = nb;
  for (int q = 0; q < n; q++) {
    int k = topo[q];
    const ts_hlo_instr_t *i = g->ins[k];
    for (int j = 0; j < leaf_first[k + 1] - leaf_first[k]; j++) {
      ts_leaf_source_t src = ts_hlo_leaf_source(i, j);
      if (src.kind != TS_LEAF_ALIASED) continue;
      int f = g->lidx[i->ops[src.op]->id];
      leaf_buf[leaf_first[k] + j] =
          src.op_leaf < leaf_first[f + 1] - leaf_first[f] ? leaf_buf[leaf_first[f] + src.op_leaf] : -1;
    }
  }
  int w = 0, d = 0;
  for (int b = 0; b < nb; b++) stamp[b] = -1;
  for (int k = 0; k < n; k++) {
    g->src_start[k] = w;
    g->def_start[k] = d;
    for (int e = leaf_first[k]; e < leaf_first[k + 1]; e++) {
      int b = leaf_buf[e];
      if (b < 0 || stamp[b] == k) continue;
      stamp[b] = k;
      g->srcs[w++] = b;
      if (ts_hlo_leaf_source(g->ins[k], e - leaf_first[k]).kind == TS_LEAF_DEFINED) g->defs[d++] = b;
    }
  }
  g->src_start[n] = w;
  g->def_start[n] = d;
out:
  ts_free(topo);
  ts_free(indeg);
  ts_free(stamp);
  ts_free(leaf_first);
  ts_free(leaf_buf);
  return st;
}

/* ---- buffer hazards ------------------------------------------------------ */

/* A buffer: the instruction that defines it, or (parameter, element). */
typedef struct {
  const ts_hlo_instr_t *def;
  int64_t index; /* -1: def's whole value */
} buf_t;

static buf_t buffer_of(const ts_hlo_instr_t *i) {
  for (int hops = 0; hops < 1 << 16; hops++) {
    if (i->op == TS_OP_BITCAST && i->nops == 1) {
      i = i->ops[0];
      continue;
    }
    if (i->op != TS_OP_GET_TUPLE_ELEMENT || i->nops != 1) break;
    const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "index");
    int64_t k = a && a->kind == TS_ATTR_INT ? a->v.i : -1;
    const ts_hlo_instr_t *t = i->ops[0];
    if (t->op == TS_OP_TUPLE && k >= 0 && k < t->nops) i = t->ops[k];
    else if (t->op == TS_OP_PARAMETER) return (buf_t){t, k};
    else break;
  }
  return (buf_t){i, -1};
}

/* An async start that writes into a buffer that exists before it (an
 * in-place collective-permute's operand 1; in a while body, the loop buffer
 * that its done becomes) must come after every reader of that buffer that
 * does not depend on it: XLA's LHS adds the same edges, and the verifier
 * of scheduled modules checks them. They join the start's predecessors,
 * after its operands and control predecessors (they carry no data). */
static ts_status_t add_hazards(graph_t *g, bool body) {
  int n = g->n, nextra = 0, cap = 0;
  int *extra = NULL; /* pairs (start, reader) */
  uint8_t *dep = ts_calloc((size_t)n + 1, 1);
  int *stack = ts_malloc(sizeof *stack * (size_t)(n + 1));
  ts_status_t st = TS_OK;
  if (!dep || !stack) {
    st = TS_ERR_NOMEM;
    goto out;
  }
  for (int pass = 0; pass < 2; pass++) { /* 0: in-place permutes, 1: while-body root elements */
    const ts_hlo_instr_t *root = g->c->root;
    int count = pass == 0 ? n : body && root && root->op == TS_OP_TUPLE && g->c->nparams == 1 ? root->nops : 0;
    for (int e = 0; e < count; e++) {
      const ts_hlo_instr_t *start;
      buf_t b;
      if (pass == 0) {
        start = g->ins[e];
        if (start->op != TS_OP_COLLECTIVE_PERMUTE_START || start->nops != 4) continue;
        b = buffer_of(start->ops[1]);
      } else {
        buf_t d = buffer_of(root->ops[e]);
        if (d.index != -1 || !ts_sched_is_async_done(d.def)) continue;
        start = d.def->ops[0];
        b = (buf_t){g->c->params[0], e};
      }
      int s = g->lidx[start->id], sp = 0;
      memset(dep, 0, (size_t)n);
      dep[s] = 1;
      stack[sp++] = s;
      while (sp > 0) {
        const ts_hlo_instr_t *i = g->ins[stack[--sp]];
        for (int u = 0; u < i->nusers; u++) {
          int j = g->lidx[i->users[u]->id];
          if (!dep[j]) dep[j] = 1, stack[sp++] = j;
        }
        for (int j = 0; j < n && g->has_ctrl; j++)
          for (int p = 0; p < g->ins[j]->nctrl_preds; p++)
            if (g->ins[j]->ctrl_preds[p] == i && !dep[j]) dep[j] = 1, stack[sp++] = j;
      }
      for (int r = 0; r < n; r++) {
        if (dep[r]) continue;
        const ts_hlo_instr_t *ri = g->ins[r];
        bool reads = false;
        for (int o = 0; o < ri->nops && !reads; o++) {
          buf_t ob = buffer_of(ri->ops[o]);
          reads = ob.def == b.def && ob.index == b.index;
        }
        if (!reads) continue;
        if (nextra == cap) {
          int *ne = ts_realloc(extra, sizeof *extra * 2 * (size_t)(cap = cap ? cap * 2 : 16));
          if (!ne) {
            st = TS_ERR_NOMEM;
            goto out;
          }
          extra = ne;
        }
        extra[2 * nextra] = s;
        extra[2 * nextra + 1] = r;
        nextra++;
      }
    }
  }
  if (nextra) { /* re-pack the predecessors with the extra edges last */
    int *start = ts_malloc(sizeof *start * (size_t)(n + 1));
    int *preds = ts_malloc(sizeof *preds * (size_t)(g->pred_start[n] + nextra + 1));
    if (!start || !preds) {
      ts_free(start);
      ts_free(preds);
      st = TS_ERR_NOMEM;
      goto out;
    }
    int w = 0;
    for (int k = 0; k < n; k++) {
      start[k] = w;
      for (int e = g->pred_start[k]; e < g->pred_start[k + 1]; e++) preds[w++] = g->preds[e];
      for (int q = 0; q < nextra; q++)
        if (extra[2 * q] == k) preds[w++] = extra[2 * q + 1];
    }
    start[n] = w;
    ts_free(g->pred_start);
    ts_free(g->preds);
    g->pred_start = start;
    g->preds = preds;
  }
out:
  ts_free(extra);
  ts_free(dep);
  ts_free(stack);
  return st;
}

static ts_status_t graph_build(sched_ctx_t *x, ts_hlo_comp_t *c, int *lidx, graph_t *g) {
  memset(g, 0, sizeof *g);
  g->x = x;
  g->c = c;
  g->n = c->ninstrs;
  g->lidx = lidx;
  int n = g->n, edges = 0;
  g->ins = ts_malloc(sizeof *g->ins * (size_t)(n + 1));
  g->pred_start = ts_malloc(sizeof *g->pred_start * (size_t)(n + 1));
  if (!g->ins || !g->pred_start) return TS_ERR_NOMEM;
  for (int k = 0; k < n; k++) {
    g->ins[k] = c->instrs[k];
    lidx[c->instrs[k]->id] = k;
    edges += c->instrs[k]->nops + c->instrs[k]->nctrl_preds;
    g->has_ctrl |= c->instrs[k]->nctrl_preds > 0;
  }
  g->preds = ts_malloc(sizeof *g->preds * (size_t)(edges + 1));
  if (!g->preds) return TS_ERR_NOMEM;
  int e = 0;
  for (int k = 0; k < n; k++) {
    const ts_hlo_instr_t *i = g->ins[k];
    g->pred_start[k] = e;
    for (int o = 0; o < i->nops; o++) g->preds[e++] = lidx[i->ops[o]->id];
    for (int p = 0; p < i->nctrl_preds; p++) g->preds[e++] = lidx[i->ctrl_preds[p]->id];
  }
  g->pred_start[n] = e;
  TS_CHECK(build_sources(g));
  int ci = -1;
  for (int k = 0; k < x->m->ncomps && ci < 0; k++)
    if (x->m->comps[k] == c) ci = k;
  return add_hazards(g, ci >= 0 && x->is_body[ci]);
}

/* ---- selection --------------------------------------------------------------- */

typedef struct {
  int k;
  bool eligible;    /* within the overlap limits */
  bool param;
  bool nop;
  bool done;        /* an async done */
  bool start;       /* an async start */
  int kind;         /* its kind (start or done), else NO_KIND */
  unsigned blocked; /* kinds whose overlap limit keeps it from being scheduled */
  double stall;     /* max(ready_time - now, 0) */
  bool unlock_done; /* has an async done among its operands */
  bool fair;        /* an async start covered by its share of the compute left */
  int64_t delta;    /* bytes live above it minus below it */
  uint64_t at;      /* bytes live while it runs */
  int pos;          /* text position before scheduling */
} cand_t;

/* The nodes whose operands k keeps live: k, and for an async done its start
 * too (the transfer reads the start's operands until the done). */
static int data_readers(const graph_t *g, int k, int out[2]) {
  const sched_node_t *n = N(g, k);
  out[0] = k;
  if (n->kind == NO_KIND || !n->partner || !ts_sched_is_async_done(g->ins[k])) return 1;
  out[1] = g->lidx[n->partner->id];
  return 2;
}

static void new_bytes(const graph_t *g, state_t *s, int k, uint64_t *newly) {
  s->stamp_now++;
  uint64_t b = 0;
  int rd[2], nr = data_readers(g, k, rd);
  for (int r = 0; r < nr; r++)
    for (int e = g->pred_start[rd[r]]; e < g->pred_start[rd[r]] + g->ins[rd[r]]->nops; e++) {
      int p = g->preds[e]; /* operands only: control and hazard edges carry no data */
      for (int q = g->src_start[p]; q < g->src_start[p + 1]; q++) {
        int bf = g->srcs[q];
        if (s->live[bf] || s->stamp[bf] == s->stamp_now) continue;
        s->stamp[bf] = s->stamp_now;
        b += g->buf_bytes[bf];
      }
    }
  *newly = b;
}

/* Bytes of the buffers k defines: those live below it, and the rest. */
static void own_bytes(const graph_t *g, const state_t *s, int k, uint64_t *live, uint64_t *dead) {
  *live = *dead = 0;
  for (int e = g->def_start[k]; e < g->def_start[k + 1]; e++)
    *(s->live[g->defs[e]] ? live : dead) += g->buf_bytes[g->defs[e]];
}

static void describe(const graph_t *g, state_t *s, int k, const int limit[], cand_t *c) {
  const sched_node_t *n = N(g, k);
  const ts_hlo_instr_t *i = g->ins[k];
  memset(c, 0, sizeof *c);
  c->k = k;
  c->pos = k;
  c->param = i->op == TS_OP_PARAMETER;
  c->nop = n->nop && !c->param;
  c->start = n->kind != NO_KIND && n->partner && ts_sched_is_async_start(i);
  c->done = n->kind != NO_KIND && !c->start;
  c->kind = n->kind;
  if (c->done && s->inflight[n->kind] >= limit[n->kind]) c->blocked |= 1u << n->kind;
  /* A while or call runs the async pairs inside it: those in flight around
   * it and the most it opens at once share the kind's limit (XLA counts a
   * node's nested resources). None open around it: always allowed. */
  for (int kind = 0; kind < TS_SCHED_KIND_COUNT; kind++)
    if (n->uses_count[kind] > 0 && s->inflight[kind] > 0 && s->inflight[kind] + n->uses_count[kind] > limit[kind])
      c->blocked |= 1u << kind;
  c->eligible = !c->blocked;
  double st = s->ready_time[k] - s->now;
  c->stall = st > 0 ? st : 0;
  if (c->start) {
    /* Its share: the compute under it so far and the compute left, split
     * evenly between it and the dones of its kind still to come. */
    double covered = n->latency - c->stall;
    double share = (covered + s->cost_left) / (1 + s->dones_left[n->kind]);
    c->fair = c->stall == 0 || covered >= share * (1 - 1e-9);
  }
  for (int o = 0; o < i->nops; o++) c->unlock_done |= ts_sched_is_async_done(i->ops[o]);
  uint64_t newly, own, unused;
  own_bytes(g, s, k, &own, &unused);
  new_bytes(g, s, k, &newly);
  c->delta = (int64_t)newly - (int64_t)own;
  c->at = s->live_bytes + unused + newly + n->callee_peak;
}

/* Whether candidate a should be scheduled (bottom-up: placed later in the
 * program) before b. The first rule that tells them apart decides:
 *   1. parameters last (bottom-up), so that they head the computation;
 *   2. nop-like ops (get-tuple-element, tuple, bitcast, constant, ...) first:
 *      free, and they unlock their operands;
 *   3. memory over the limit (at it is not over): the smaller increase of
 *      live bytes wins;
 *   4. memory limit: a node that keeps the live bytes within it wins;
 *   5. ScheduleDone: an async done wins, so that top-down it sits just before
 *      its first use and its window opens as wide as the compute allows;
 *   6. FreeBackedUpResource: an async start whose transfer is already
 *      covered (no stall), or covered by its share of the compute left
 *      (split evenly with the dones of its kind to come), wins when a done of
 *      its kind waits, blocked by the overlap limit: closing this window
 *      lets the next one open, so that when there is not enough compute to
 *      hide every transfer each gets its part rather than one all of it;
 *   7. LessStall: the smaller stall wins (a start whose transfer is not yet
 *      covered waits while other work remains);
 *   8. DelayStart: anything else before an async start, so that top-down a
 *      start comes as early as its operands allow (the widest window, which
 *      hides the transfer even when the model underestimates it);
 *   9. UnlockDone: a node with an async done operand wins, so that the done
 *      becomes ready;
 *  10. DecreaseMemory (with a memory limit, more than half of it live, as
 *      XLA checks pressure; always under program order's peak, which is
 *      tight): the smaller increase wins;
 *  11. OriginalOrder: the later text position wins (bottom-up keeps the
 *      input order), which also makes ties deterministic: positions are
 *      unique, as instruction ids are. */
static bool better(const cand_t *a, const cand_t *b, uint64_t limit, bool tight, uint64_t live, unsigned backed_up) {
#define RULE(ca, cb) \
  if ((ca) != (cb)) return (ca)
  RULE(!a->param, !b->param);
  RULE(a->nop, b->nop);
  if (limit) {
    if (live > limit && a->delta != b->delta) return a->delta < b->delta;
    RULE(a->at <= limit, b->at <= limit);
  }
  RULE(a->done, b->done);
  RULE(a->start && a->fair && (backed_up >> a->kind & 1u), b->start && b->fair && (backed_up >> b->kind & 1u));
  if (a->stall != b->stall) return a->stall < b->stall;
  RULE(!a->start, !b->start);
  RULE(a->unlock_done, b->unlock_done);
  if (limit && (tight || live > limit / 2) && a->delta != b->delta) return a->delta < b->delta;
  return a->pos > b->pos;
#undef RULE
}

/* ---- the schedule ------------------------------------------------------------ */

static void state_free(state_t *s) {
  ts_free(s->remaining);
  ts_free(s->ready_time);
  ts_free(s->t);
  ts_free(s->live);
  ts_free(s->stamp);
  ts_free(s->ready);
  ts_free(s->order);
}

static void make_ready(state_t *s, int k) { s->ready[s->nready++] = k; }

static void schedule_node(const graph_t *g, state_t *s, int k) {
  const sched_node_t *n = N(g, k);
  const ts_hlo_instr_t *i = g->ins[k];
  uint64_t newly, own, unused;
  own_bytes(g, s, k, &own, &unused);
  new_bytes(g, s, k, &newly);
  uint64_t at = s->live_bytes + unused + newly + n->callee_peak;
  if (at > s->peak) s->peak = at;
  for (int e = g->def_start[k]; e < g->def_start[k + 1]; e++)
    if (s->live[g->defs[e]]) {
      s->live_bytes -= g->buf_bytes[g->defs[e]];
      s->live[g->defs[e]] = false;
    }
  int rd[2], nr = data_readers(g, k, rd);
  for (int r = 0; r < nr; r++)
    for (int e = g->pred_start[rd[r]]; e < g->pred_start[rd[r]] + g->ins[rd[r]]->nops; e++) {
      int p = g->preds[e];
      for (int q = g->src_start[p]; q < g->src_start[p + 1]; q++) {
        int bf = g->srcs[q];
        if (!s->live[bf]) {
          s->live[bf] = true;
          s->live_bytes += g->buf_bytes[bf];
        }
      }
    }
  double t = s->now > s->ready_time[k] ? s->now : s->ready_time[k];
  s->t[k] = t;
  s->now = t + n->cost;
  s->cost_left -= n->cost;
  if (n->kind != NO_KIND && !ts_sched_is_async_start(i)) s->dones_left[n->kind]--;
  if (n->kind != NO_KIND) {
    if (ts_sched_is_async_start(i)) s->inflight[n->kind]--;
    else s->inflight[n->kind]++;
  }
  s->order[s->norder++] = k;
  for (int e = g->pred_start[k]; e < g->pred_start[k + 1]; e++) {
    int p = g->preds[e];
    const sched_node_t *pn = N(g, p);
    double lat = pn->partner == i && ts_sched_is_async_start(g->ins[p]) ? pn->latency : 0;
    double r = t + n->cost + lat;
    if (r > s->ready_time[p]) s->ready_time[p] = r;
    if (--s->remaining[p] == 0) make_ready(s, p);
  }
}

/* One bottom-up pass with memory target `limit` (0: none; `tight`: the
 * target is program order's own peak, so DecreaseMemory always applies), or
 * with `program_order` the input order (the latest ready text position
 * first). order[] gets the top-down order; *peak the largest live set. */
static ts_status_t run(const graph_t *g, uint64_t limit, bool tight, bool program_order, int *order, uint64_t *peak) {
  int n = g->n;
  state_t s = {0};
  int limits[TS_SCHED_KIND_COUNT];
  for (int k = 0; k < TS_SCHED_KIND_COUNT; k++) {
    int l = g->x->o->overlap_limit[k];
    limits[k] = l < 1 ? 1 : l;
  }
  s.remaining = ts_calloc((size_t)n + 1, sizeof *s.remaining);
  s.ready_time = ts_calloc((size_t)n + 1, sizeof *s.ready_time);
  s.t = ts_calloc((size_t)n + 1, sizeof *s.t);
  s.live = ts_calloc((size_t)g->nbufs + 1, sizeof *s.live);
  s.stamp = ts_calloc((size_t)g->nbufs + 1, sizeof *s.stamp);
  s.ready = ts_malloc(sizeof *s.ready * (size_t)(n + 1));
  s.order = ts_malloc(sizeof *s.order * (size_t)(n + 1));
  cand_t *cands = ts_malloc(sizeof *cands * (size_t)(n + 1));
  ts_status_t st = TS_OK;
  if (!s.remaining || !s.ready_time || !s.t || !s.live || !s.stamp || !s.ready || !s.order || !cands) {
    st = TS_ERR_NOMEM;
    goto out;
  }
  for (int e = 0; e < g->pred_start[n]; e++) s.remaining[g->preds[e]]++;
  for (int k = 0; k < n; k++) {
    const sched_node_t *nk = N(g, k);
    s.cost_left += nk->cost;
    if (nk->kind != NO_KIND && !ts_sched_is_async_start(g->ins[k])) s.dones_left[nk->kind]++;
  }
  if (g->c->root) { /* the outputs are live at the end */
    int r = g->lidx[g->c->root->id];
    for (int q = g->src_start[r]; q < g->src_start[r + 1]; q++) {
      int bf = g->srcs[q];
      if (!s.live[bf]) {
        s.live[bf] = true;
        s.live_bytes += g->buf_bytes[bf];
      }
    }
  }
  for (int k = n - 1; k >= 0; k--)
    if (!s.remaining[k]) make_ready(&s, k);
  while (s.norder < n) {
    if (s.nready == 0) {
      st = TS_ERR_INTERNAL; /* nothing ready but nodes left: a cycle */
      goto out;
    }
    if (program_order) { /* the input order (the latest ready text position, bottom-up) */
      int best = 0;
      for (int r = 1; r < s.nready; r++)
        if (s.ready[r] > s.ready[best]) best = r;
      int k = s.ready[best];
      s.ready[best] = s.ready[--s.nready];
      schedule_node(g, &s, k);
      continue;
    }
    unsigned backed_up = 0;
    for (int r = 0; r < s.nready; r++) {
      describe(g, &s, s.ready[r], limits, &cands[r]);
      backed_up |= cands[r].blocked;
    }
    int best = -1;
    for (int r = 0; r < s.nready; r++) {
      if (!cands[r].eligible) continue;
      if (best < 0 || better(&cands[r], &cands[best], limit, tight, s.live_bytes, backed_up)) best = r;
    }
    if (best < 0) best = 0; /* cannot happen: a pending start is always eligible */
    int k = s.ready[best];
    s.ready[best] = s.ready[--s.nready];
    schedule_node(g, &s, k);
  }
  for (int q = 0; q < n; q++) order[q] = s.order[n - 1 - q];
  *peak = s.peak;
out:
  ts_free(cands);
  state_free(&s);
  return st;
}

/* ---- callees ---------------------------------------------------------------- */

static int comp_index(const ts_hlo_module_t *m, const ts_hlo_comp_t *c) {
  for (int k = 0; k < m->ncomps; k++)
    if (m->comps[k] == c) return k;
  return -1;
}

static const sched_comp_t *callee(const sched_ctx_t *x, const ts_hlo_comp_t *c) {
  int k = comp_index(x->m, c);
  return k >= 0 && x->comp[k].done ? &x->comp[k] : NULL;
}

/* while / call / conditional cost what their callees cost; the kinds their
 * callees use count against the overlap limits while they run. */
static void callee_costs(sched_ctx_t *x, ts_hlo_comp_t *c) {
  for (int k = 0; k < c->ninstrs; k++) {
    ts_hlo_instr_t *i = c->instrs[k];
    sched_node_t *n = &x->node[i->id];
    if (i->op == TS_OP_WHILE) {
      const ts_hlo_attr_t *ca = ts_hlo_instr_attr(i, "condition"), *ba = ts_hlo_instr_attr(i, "body");
      const sched_comp_t *cc = ca && ca->kind == TS_ATTR_COMP ? callee(x, ca->v.comps.comps[0]) : NULL;
      const sched_comp_t *bc = ba && ba->kind == TS_ATTR_COMP ? callee(x, ba->v.comps.comps[0]) : NULL;
      bool known;
      n->trips = ts_sched_while_trips(i, &known);
      double ct = cc ? cc->time : 0, bt = bc ? bc->time : 0;
      n->cost = n->trips * (bt + ct) + ct;
      n->serial = n->trips * ((bc ? bc->serial : 0) + (cc ? cc->serial : 0)) + (cc ? cc->serial : 0);
      n->uses_kinds = (cc ? cc->kinds : 0) | (bc ? bc->kinds : 0);
      for (int kind = 0; kind < TS_SCHED_KIND_COUNT; kind++) {
        int a = cc ? cc->inflight[kind] : 0, b = bc ? bc->inflight[kind] : 0;
        n->uses_count[kind] = a > b ? a : b;
      }
      n->callee_peak = cc && bc ? (cc->peak > bc->peak ? cc->peak : bc->peak) : bc ? bc->peak : 0;
    } else if (i->op == TS_OP_CALL || i->op == TS_OP_CONDITIONAL) {
      double worst = 0;
      for (int q = 0; q < i->ncalled; q++) {
        const sched_comp_t *cc = callee(x, i->called[q]);
        if (!cc) continue;
        if (cc->time > worst) worst = cc->time;
        if (cc->serial > n->serial) n->serial = cc->serial;
        n->uses_kinds |= cc->kinds;
        for (int kind = 0; kind < TS_SCHED_KIND_COUNT; kind++)
          if (cc->inflight[kind] > n->uses_count[kind]) n->uses_count[kind] = cc->inflight[kind];
        if (cc->peak > n->callee_peak) n->callee_peak = cc->peak;
      }
      n->cost = worst;
    }
  }
}

/* The buffers of `order` (top-down local indices) by the one definition of
 * liveness (ts_hlo_liveness, what runtime/program.c assigns), with a while
 * body's staging buffers: a root leaf that is another parameter leaf is
 * copied aside after the body runs (runtime/program.c's
 * stage_while_bodies), live past the end. */
static ts_status_t order_liveness(const graph_t *g, const int *order, ts_hlo_liveness_t *lv) {
  int n = g->n;
  const ts_hlo_instr_t **ins = ts_malloc(sizeof *ins * (size_t)(n + 1));
  if (!ins) return TS_ERR_NOMEM;
  for (int q = 0; q < n; q++) ins[q] = g->ins[order[q]];
  ts_status_t st = ts_hlo_liveness(g->c, ins, lv);
  ts_free(ins);
  TS_CHECK(st);
  int ci = -1;
  for (int k = 0; k < g->x->m->ncomps && ci < 0; k++)
    if (g->x->m->comps[k] == g->c) ci = k;
  const ts_hlo_instr_t *root = g->c->root;
  if (ci < 0 || !g->x->is_body[ci] || !root || g->c->nparams != 1) return TS_OK;
  int rq = g->lidx[root->id], nroot = 0;
  for (int q = 0; q < n; q++)
    if (order[q] == rq) rq = q, q = n;
  nroot = lv->leaf_start[rq + 1] - lv->leaf_start[rq];
  ts_hlo_buffer_t *nb = ts_realloc(lv->bufs, sizeof *nb * (size_t)(lv->nbufs + nroot + 1));
  if (!nb) {
    ts_hlo_liveness_free(lv);
    return TS_ERR_NOMEM;
  }
  lv->bufs = nb;
  for (int j = 0; j < nroot; j++) {
    int b = lv->leaf_buf[lv->leaf_start[rq] + j];
    if (b > TS_HLO_PARAM_LEAF(0) || TS_HLO_PARAM_LEAF(0) - b == j) continue;
    uint64_t bytes = ts_hlo_leaf_bytes(g->c->params[0], TS_HLO_PARAM_LEAF(0) - b);
    lv->bufs[lv->nbufs++] = (ts_hlo_buffer_t){root, j, bytes, n, n + 1, -1};
  }
  return TS_OK;
}

/* The arena the runtime's buffer assignment gives `order` (top-down local
 * indices): the same buffers, the same first fit. Live peaks alone miss
 * the fragmentation this adds. */
static ts_status_t arena_bytes(const graph_t *g, const int *order, uint64_t *out) {
  ts_hlo_liveness_t lv;
  TS_CHECK(order_liveness(g, order, &lv));
  ts_status_t st = ts_hlo_first_fit(lv.bufs, lv.nbufs, out);
  ts_hlo_liveness_free(&lv);
  return st;
}

/* The largest live set of `order` (top-down local indices): the buffers of
 * order_liveness over their live ranges, and what a call holds inside while
 * it runs. `delta` [n + 2] is scratch. */
static ts_status_t live_peak(const graph_t *g, const int *order, int64_t *delta, uint64_t *out) {
  int n = g->n;
  ts_hlo_liveness_t lv;
  TS_CHECK(order_liveness(g, order, &lv));
  for (int q = 0; q <= n + 1; q++) delta[q] = 0;
  for (int b = 0; b < lv.nbufs; b++) {
    if (lv.bufs[b].first >= n) continue; /* staging after the end */
    int last = lv.bufs[b].last < n ? lv.bufs[b].last : n - 1;
    delta[lv.bufs[b].first] += (int64_t)lv.bufs[b].bytes;
    delta[last + 1] -= (int64_t)lv.bufs[b].bytes;
  }
  ts_hlo_liveness_free(&lv);
  int64_t live = 0;
  uint64_t peak = 0;
  for (int q = 0; q < n; q++) {
    live += delta[q];
    uint64_t at = (uint64_t)live + N(g, order[q])->callee_peak;
    if (at > peak) peak = at;
  }
  *out = peak;
  return TS_OK;
}

static bool is_pred(const graph_t *g, int of, int k) {
  for (int e = g->pred_start[of]; e < g->pred_start[of + 1]; e++)
    if (g->preds[e] == k) return true;
  return false;
}

/* Whether a start or done may move past k: not past another async op, nor
 * past a while or call that runs some (the overlap limits stay as they
 * were). */
static bool plain(const graph_t *g, int k) {
  const sched_node_t *nk = N(g, k);
  if (nk->kind != NO_KIND) return false;
  for (int kind = 0; kind < TS_SCHED_KIND_COUNT; kind++)
    if (nk->uses_count[kind]) return false;
  return true;
}

/* When no schedule stays within program order's peak: program order with
 * each async window widened one instruction at a time (its start up, its
 * done down) while the live set stays within `limit` and the arena within
 * `arena_limit`, until the transfer is covered. `order` is top-down and is changed in place. */
static ts_status_t widen(const graph_t *g, int *order, uint64_t limit, uint64_t arena_limit) {
  int n = g->n;
  int *pos = ts_malloc(sizeof *pos * 2 * (size_t)(n + 1)); /* and `saved`, the order before a move */
  int *saved = pos ? pos + n + 1 : NULL;
  int64_t *delta = ts_malloc(sizeof *delta * (size_t)(n + 2));
  ts_status_t st = TS_OK;
  if (!pos || !delta) {
    st = TS_ERR_NOMEM;
    goto out;
  }
  for (int q = 0; q < n; q++) {
    int sk = order[q];
    const sched_node_t *sn = N(g, sk);
    if (sn->kind == NO_KIND || !sn->partner || !ts_sched_is_async_start(g->ins[sk])) continue;
    int dk = g->lidx[sn->partner->id];
    double covered = 0;
    memcpy(saved, order, sizeof *order * (size_t)n);
    for (int side = 0; side < 2; side++)
      for (;;) {
        for (int r = 0; r < n; r++) pos[order[r]] = r;
        int at = side == 0 ? pos[sk] : pos[dk];
        int nb = side == 0 ? at - 1 : at + 1;
        if (covered >= sn->latency || nb < 0 || nb >= n) break;
        int u = order[nb];
        if (!plain(g, u) || (side == 0 ? is_pred(g, sk, u) : is_pred(g, u, dk))) break;
        order[nb] = order[at], order[at] = u;
        uint64_t arena = 0, live = 0;
        TS_CHECK_GOTO(live_peak(g, order, delta, &live), st, out);
        bool over = live > limit;
        if (!over) {
          TS_CHECK_GOTO(arena_bytes(g, order, &arena), st, out);
          over = arena > arena_limit;
        }
        if (over) {
          order[at] = order[nb], order[nb] = u;
          break;
        }
        covered += N(g, u)->cost;
      }
    if (covered == 0) memcpy(order, saved, sizeof *order * (size_t)n); /* moved past free ops only */
  }
out:
  ts_free(pos);
  ts_free(delta);
  return st;
}

/* Program order's time: every op's cost and every collective's whole
 * latency, one after another (the order does not matter). */
static double serial_time(const sched_ctx_t *x, const ts_hlo_comp_t *c) {
  double t = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    const ts_hlo_instr_t *i = c->instrs[k];
    const sched_node_t *n = &x->node[i->id];
    if (i->op == TS_OP_WHILE || i->op == TS_OP_CALL || i->op == TS_OP_CONDITIONAL) t += n->serial;
    else if (n->kind != NO_KIND && ts_sched_is_async_start(i)) t += n->latency;
    else t += n->cost;
  }
  return t;
}

ts_status_t ts_sched_comp(sched_ctx_t *x, ts_hlo_comp_t *c, int index) {
  TS_CHECK(ts_sched_cost_comp(x, c));
  callee_costs(x, c);
  int n = c->ninstrs;
  int *lidx = ts_malloc(sizeof *lidx * (size_t)(x->m->next_id + 1));
  int *order = ts_malloc(sizeof *order * (size_t)(n + 1)), *best = ts_malloc(sizeof *best * (size_t)(n + 1));
  int *base = ts_malloc(sizeof *base * (size_t)(n + 1));
  graph_t g;
  memset(&g, 0, sizeof g);
  ts_status_t st = TS_OK;
  sched_comp_t *sc = &x->comp[index];
  if (!lidx || !order || !best || !base) {
    st = TS_ERR_NOMEM;
    goto out;
  }
  TS_CHECK_GOTO(graph_build(x, c, lidx, &g), st, out);
  /* Program order, for its peak: the default memory target. */
  uint64_t base_peak;
  TS_CHECK_GOTO(run(&g, 0, false, true, base, &base_peak), st, out);
  sc->base_peak = base_peak;
  sc->serial = serial_time(x, c);
  /* The limit covers the entry's parameters too: they are live throughout. */
  uint64_t limit = x->o->memory_limit, params = 0;
  if (c->is_entry)
    for (int k = 0; k < c->nparams; k++) params += ts_shape_bytes(c->params[k]->shape);
  if (limit) limit = limit > params ? limit - params : 1;
  bool keep = !limit && x->o->keep_program_peak;
  if (keep) limit = base_peak ? base_peak : 1;
  /* Nothing asynchronous here or below and program order within the
   * target: no latency to hide and no memory to save, so program order is
   * the schedule (a big compute-only body costs one pass, not four). */
  bool any_async = false;
  for (int q = 0; q < n && !any_async; q++) {
    const sched_node_t *nn = &x->node[c->instrs[q]->id];
    any_async = nn->kind != NO_KIND || nn->uses_kinds;
  }
  bool search = any_async || (limit && base_peak > limit);
  /* Under the default target the arena counts too: not above program
   * order's, fragmentation included. */
  uint64_t base_arena = 0;
  if (keep && search) TS_CHECK_GOTO(arena_bytes(&g, base, &base_arena), st, out);
  uint64_t target = limit, best_peak = 0;
  int attempt = 0;
  bool fits = !search;
  if (!search) {
    memcpy(best, base, sizeof *base * (size_t)n);
    best_peak = base_peak;
  }
  for (; search; attempt++) {
    uint64_t peak, arena = 0;
    TS_CHECK_GOTO(run(&g, target, keep, false, order, &peak), st, out);
    /* program order again (nothing to overlap): its arena is known */
    if (keep && memcmp(order, base, sizeof *order * (size_t)n) == 0) arena = base_arena;
    else if (keep) TS_CHECK_GOTO(arena_bytes(&g, order, &arena), st, out);
    bool ok = !limit || (peak <= limit && arena <= base_arena);
    if (attempt == 0 || (ok && !fits) || (ok == fits && peak < best_peak)) {
      best_peak = peak;
      memcpy(best, order, sizeof *order * (size_t)n);
    }
    fits |= ok;
    /* XLA's rerun: under pressure, aim 10% lower and schedule again. */
    if (fits || attempt >= x->o->reruns) break;
    target = target / 10 * 9;
  }
  if (keep && !fits) { /* no schedule within program order's memory: widen its windows within it */
    memcpy(best, base, sizeof *base * (size_t)n);
    int64_t *delta = ts_malloc(sizeof *delta * (size_t)(n + 2));
    uint64_t base_live = 0;
    st = delta ? live_peak(&g, base, delta, &base_live) : TS_ERR_NOMEM;
    ts_free(delta);
    if (st != TS_OK) goto out;
    TS_CHECK_GOTO(widen(&g, best, base_live, base_arena), st, out);
    best_peak = base_peak;
    sc->fell_back = true;
  }
  ts_hlo_instr_t **ins = g.ins;
  for (int q = 0; q < n; q++) c->instrs[q] = ins[best[q]];
  sc->peak = best_peak;
  sc->reruns = attempt;
  unsigned kinds = 0;
  int open[TS_SCHED_KIND_COUNT] = {0};
  for (int q = 0; q < n; q++) {
    const ts_hlo_instr_t *i = c->instrs[q];
    const sched_node_t *nn = &x->node[i->id];
    if (nn->kind != NO_KIND) kinds |= 1u << nn->kind;
    kinds |= nn->uses_kinds;
    if (nn->kind != NO_KIND) open[nn->kind] += ts_sched_is_async_start(i) ? 1 : -1;
    for (int kind = 0; kind < TS_SCHED_KIND_COUNT; kind++) {
      int now = open[kind] + nn->uses_count[kind];
      if (now > sc->inflight[kind]) sc->inflight[kind] = now;
    }
  }
  sc->kinds = kinds;
  TS_CHECK_GOTO(ts_sched_replay(x, c, &sc->time, NULL, 1, false, 0, 0), st, out);
  sc->done = true;
out:
  graph_free(&g);
  ts_free(lidx);
  ts_free(order);
  ts_free(best);
  ts_free(base);
  return st;
}
