/* The HLO verifier: structure (ownership, operand/user links, roots,
 * parameters, called computations, cycles), collective group sizes and
 * sharding ranks here; per-opcode shape rules in shape_inference.c. The first
 * violation is reported and ends the walk. Every walk is iterative: modules
 * have 100k instructions and chains as long. */
#include "verifier_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- diagnostics -------------------------------------------------------- */

/* One located error: `<prefix>'<who>': <message>`. */
static ts_status_t verror(ts_vctx_t *v, ts_loc_t loc, const char *prefix, const char *who,
                          const char *fmt, va_list ap) {
  ts_buf_t b = {0};
  ts_buf_printf(&b, "%s'%s': ", prefix, who ? who : "?");
  ts_buf_vprintf(&b, fmt, ap);
  if (b.oom || !b.data) {
    ts_buf_free(&b);
    return TS_ERR_NOMEM;
  }
  ts_diag_error(v->diag, &v->src, loc, "%s", b.data);
  ts_buf_free(&b);
  return TS_ERR_VERIFY;
}

ts_status_t ts_vfy_error(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_loc_t loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ts_status_t st = verror(v, loc.line > 0 ? loc : i->loc, "", i->name, fmt, ap);
  va_end(ap);
  return st;
}

static ts_status_t comp_error(ts_vctx_t *v, const ts_hlo_comp_t *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ts_status_t comp_error(ts_vctx_t *v, const ts_hlo_comp_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ts_status_t st = verror(v, c->loc, "computation ", c->name, fmt, ap);
  va_end(ap);
  return st;
}

static ts_status_t module_error(ts_vctx_t *v, ts_loc_t loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ts_status_t module_error(ts_vctx_t *v, ts_loc_t loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ts_status_t st = verror(v, loc, "module ", v->m->name, fmt, ap);
  va_end(ap);
  return st;
}

const char *ts_vfy_shape_str(ts_vctx_t *v, const ts_shape_t *s) {
  if (!s) return "<no shape>";
  ts_buf_t b = {0};
  ts_shape_print(&b, s, false);
  const char *r = b.data && !b.oom ? ts_arena_strdup(v->scratch, b.data) : NULL;
  ts_buf_free(&b);
  return r ? r : "<shape>";
}

static const char *sharding_str(ts_vctx_t *v, const ts_sharding_t *s) {
  ts_buf_t b = {0};
  ts_sharding_print(&b, s);
  const char *r = b.data && !b.oom ? ts_arena_strdup(v->scratch, b.data) : NULL;
  ts_buf_free(&b);
  return r ? r : "<sharding>";
}

/* ---- pointer map ------------------------------------------------------- */

/* Open addressing from pointers to dense indices. */
typedef struct {
  const void **keys;
  int *vals;
  size_t mask;
} ptrmap_t;

static size_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x;
}

static bool ptrmap_init(ptrmap_t *m, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n + 16) cap *= 2;
  m->keys = ts_calloc(cap, sizeof *m->keys);
  m->vals = ts_calloc(cap, sizeof *m->vals);
  m->mask = cap - 1;
  return m->keys && m->vals;
}

static void ptrmap_free(ptrmap_t *m) {
  ts_free(m->keys);
  ts_free(m->vals);
}

/* Inserts key -> val; returns the existing value instead when present. */
static int ptrmap_put(ptrmap_t *m, const void *key, int val) {
  for (size_t h = mix((uintptr_t)key) & m->mask;; h = (h + 1) & m->mask) {
    if (!m->keys[h]) {
      m->keys[h] = key;
      m->vals[h] = val;
      return -1;
    }
    if (m->keys[h] == key) return m->vals[h];
  }
}

static int ptrmap_get(const ptrmap_t *m, const void *key) {
  for (size_t h = mix((uintptr_t)key) & m->mask; m->keys[h]; h = (h + 1) & m->mask)
    if (m->keys[h] == key) return m->vals[h];
  return -1;
}

/* ---- structure ---------------------------------------------------------- */

/* Instruction -> position in instrs: by id (ids are unique and below
 * next_id in any module built through ts_hlo_instr_add; an entry counts only
 * when instrs[pos] is that very instruction), or, for a module whose ids are
 * not, through a pointer map. */
typedef struct {
  ts_vctx_t *v;
  int n; /* instructions in the module */
  const ts_hlo_instr_t **instrs;
  size_t total;   /* instructions listed in the module's computations */
  bool dense;     /* byid holds the index (else the map) */
  int *byid;      /* per id: position in instrs, -1 */
  int nid;        /* byid's size */
  ptrmap_t index; /* instruction -> position in instrs, when not dense */
  ptrmap_t comps; /* computation -> position in m->comps */
} walk_t;

static int index_of(const walk_t *w, const ts_hlo_instr_t *i) {
  if (!w->dense) return ptrmap_get(&w->index, i);
  if (i->id < 0 || i->id >= w->nid) return -1;
  int k = w->byid[i->id];
  return k >= 0 && w->instrs[k] == i ? k : -1;
}

/* From byid to the pointer map: instructions whose ids clash or are out of
 * range. */
static bool leave_dense(walk_t *w, size_t n) {
  if (!ptrmap_init(&w->index, n)) return false;
  for (int k = 0; k < w->n; k++) ptrmap_put(&w->index, w->instrs[k], k);
  w->dense = false;
  return true;
}

/* Adds i at position w->n; returns the earlier position of i when it is
 * already there, -1 when added, -2 when out of memory. */
static int index_add(walk_t *w, const ts_hlo_instr_t *i, size_t n) {
  if (w->dense) {
    bool fits = i->id >= 0 && i->id < w->nid;
    int k = fits ? w->byid[i->id] : -1;
    if (k >= 0 && w->instrs[k] == i) return k;
    if (fits && k < 0) {
      w->byid[i->id] = w->n;
      return -1;
    }
    if (!leave_dense(w, n)) return -2;
  }
  return ptrmap_put(&w->index, i, w->n);
}

/* Well-formed shape: known type, non-negative dims (or `?` marked dynamic),
 * tuples with elements. */
static const char *shape_problem(const ts_shape_t *s, int depth) {
  if (!s) return "no shape";
  if (depth > 1000) return "tuple nesting deeper than 1000";
  if ((unsigned)s->elem >= TS_ELEM_COUNT) return "unknown element type";
  if (s->elem == TS_TUPLE) {
    if (s->ntuple < 0 || (s->ntuple > 0 && !s->tuple)) return "malformed tuple";
    for (int k = 0; k < s->ntuple; k++) {
      const char *p = shape_problem(s->tuple[k], depth + 1);
      if (p) return p;
    }
    return NULL;
  }
  if (s->rank < 0 || (s->rank > 0 && !s->dims)) return "malformed dimensions";
  for (int d = 0; d < s->rank; d++) {
    bool dyn = s->dynamic && s->dynamic[d];
    if (s->dims[d] < 0 && !(dyn && s->dims[d] == TS_DIM_UNBOUNDED)) return "negative dimension";
  }
  return NULL;
}

static ts_status_t check_instrs(walk_t *w) {
  ts_vctx_t *v = w->v;
  const ts_hlo_module_t *m = v->m;
  ts_status_t st = TS_OK;
  for (int ci = 0; ci < m->ncomps && st == TS_OK; ci++) {
    const ts_hlo_comp_t *c = m->comps[ci];
    if (c->ninstrs < 0 || (c->ninstrs > 0 && !c->instrs)) {
      st = comp_error(v, c, "malformed instruction list");
      break;
    }
    if (c->ninstrs == 0) {
      st = comp_error(v, c, "has no instructions");
      break;
    }
    for (int k = 0; k < c->ninstrs; k++) {
      const ts_hlo_instr_t *i = c->instrs[k];
      if (!i || !i->name) {
        st = comp_error(v, c, "instruction %d is %s", k, i ? "unnamed" : "NULL");
        break;
      }
      if (i->parent != c) {
        st = ts_vfy_error(v, i, (ts_loc_t){0, 0}, "listed in computation '%s' but its parent is %s%s%s",
                          c->name, i->parent ? "'" : "", i->parent ? i->parent->name : "NULL",
                          i->parent ? "'" : "");
        break;
      }
      int prev = index_add(w, i, w->total);
      if (prev == -2) {
        st = TS_ERR_NOMEM;
        break;
      }
      if (prev >= 0) {
        st = ts_vfy_error(v, i, (ts_loc_t){0, 0}, "listed twice in computation '%s'", c->name);
        break;
      }
      w->instrs[w->n++] = i;
      if (i->nops < 0 || (i->nops > 0 && !i->ops) || i->nusers < 0 || (i->nusers > 0 && !i->users) ||
          i->nctrl_preds < 0 || (i->nctrl_preds > 0 && !i->ctrl_preds) || i->nattrs < 0 ||
          (i->nattrs > 0 && !i->attrs) || i->ncalled < 0 || (i->ncalled > 0 && !i->called)) {
        st = ts_vfy_error(v, i, (ts_loc_t){0, 0}, "malformed operand, user, attribute or callee list");
        break;
      }
      const char *why = shape_problem(i->shape, 0);
      if (why) {
        st = ts_vfy_error(v, i, (ts_loc_t){0, 0}, "malformed result shape: %s", why);
        break;
      }
      for (int a = 0; a < i->nattrs && !why; a++)
        if (!i->attrs[a].name) why = "an attribute without a name";
      if (!why && i->literal && i->literal->shape) why = shape_problem(i->literal->shape, 0);
      if (why) {
        st = ts_vfy_error(v, i, (ts_loc_t){0, 0}, "malformed attributes or literal: %s", why);
        break;
      }
      if ((unsigned)i->op >= TS_OP_COUNT) {
        st = ts_vfy_error(v, i, (ts_loc_t){0, 0}, "unknown opcode %d", (int)i->op);
        break;
      }
    }
  }
  return st;
}

/* Instruction names are unique in the module. The module's own name map
 * answers this when every instruction maps to itself there (a key has one
 * value); otherwise (a duplicate, or a name changed after creation) a map
 * built here finds the first clash in text order. */
static ts_status_t check_names(walk_t *w) {
  const ts_hlo_module_t *m = w->v->m;
  bool fast = true;
  for (int k = 0; k < w->n && fast; k++) {
    const ts_hlo_instr_t *i = w->instrs[k];
    fast = ts_strmap_get(&m->names, i->name, strlen(i->name)) == i;
  }
  if (fast) return TS_OK;
  ts_strmap_t names = {0};
  ts_status_t st = TS_OK;
  for (int k = 0; k < w->n && st == TS_OK; k++) {
    const ts_hlo_instr_t *i = w->instrs[k], *other = ts_strmap_get(&names, i->name, strlen(i->name));
    if (other)
      st = ts_vfy_error(w->v, i, (ts_loc_t){0, 0},
                        "name is already used by an instruction in computation '%s'", other->parent->name);
    else if (!ts_strmap_put(&names, i->name, strlen(i->name), (void *)i))
      st = TS_ERR_NOMEM;
  }
  ts_strmap_free(&names);
  return st;
}

/* Operands and control predecessors: present, in the module, same computation. */
static ts_status_t check_edges(walk_t *w) {
  ts_vctx_t *v = w->v;
  for (int k = 0; k < w->n; k++) {
    const ts_hlo_instr_t *i = w->instrs[k];
    for (int e = 0; e < i->nops + i->nctrl_preds; e++) {
      bool ctrl = e >= i->nops;
      const ts_hlo_instr_t *o = ctrl ? i->ctrl_preds[e - i->nops] : i->ops[e];
      int n = ctrl ? e - i->nops : e;
      const char *what = ctrl ? "control predecessor" : "operand";
      if (!o) return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "%s %d is NULL", what, n);
      if (index_of(w, o) < 0)
        return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "%s %d '%s' is not an instruction of the module", what, n,
                            o->name ? o->name : "?");
      if (o->parent != i->parent)
        return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "%s %d '%s' is in computation '%s', not '%s'", what, n,
                            o->name, o->parent->name, i->parent->name);
    }
  }
  return TS_OK;
}

/* users lists are exactly the set of instructions using each one, no repeats.
 * The distinct users of each def, in text order, from the operands (CSR);
 * then per def a stamp on its real users and one on those listed: linear,
 * where sets of (def, user) pairs cost a hash probe per edge. */
static ts_status_t check_users(walk_t *w) {
  ts_vctx_t *v = w->v;
  int n = w->n;
  size_t nedges = 0;
  for (int k = 0; k < n; k++) nedges += (size_t)w->instrs[k]->nops;
  size_t *first = ts_calloc((size_t)n + 2, sizeof *first); /* def d's users: use[first[d] .. first[d + 1]) */
  int *use = ts_calloc(nedges + 1, sizeof *use);
  int *seen = ts_malloc(sizeof *seen * ((size_t)n + 1)); /* per def: the last user counted */
  int *uses = ts_malloc(sizeof *uses * ((size_t)n + 1)); /* per user: the def it was last found using */
  int *listed = ts_malloc(sizeof *listed * ((size_t)n + 1)); /* per user: the def that last listed it */
  ts_status_t st = TS_OK;
  if (!first || !use || !seen || !uses || !listed) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  for (int d = 0; d < n; d++) seen[d] = uses[d] = listed[d] = -1;
  for (int k = 0; k < n; k++) {
    const ts_hlo_instr_t *i = w->instrs[k];
    for (int e = 0; e < i->nops; e++) {
      int d = index_of(w, i->ops[e]);
      if (seen[d] != k) seen[d] = k, first[d + 2]++;
    }
  }
  for (int d = 0; d < n; d++) first[d + 2] += first[d + 1];
  for (int d = 0; d < n; d++) seen[d] = -1;
  for (int k = 0; k < n; k++) { /* first[d + 1] is where def d's next user goes */
    const ts_hlo_instr_t *i = w->instrs[k];
    for (int e = 0; e < i->nops; e++) {
      int d = index_of(w, i->ops[e]);
      if (seen[d] != k) seen[d] = k, use[first[d + 1]++] = k;
    }
  }
  for (int d = 0; d < n && st == TS_OK; d++) {
    const ts_hlo_instr_t *def = w->instrs[d];
    for (size_t q = first[d]; q < first[d + 1]; q++) uses[use[q]] = d;
    for (int u = 0; u < def->nusers; u++) {
      const ts_hlo_instr_t *user = def->users[u];
      int ui = user ? index_of(w, user) : -1;
      if (ui < 0) {
        st = ts_vfy_error(v, def, (ts_loc_t){0, 0}, "user %d is %s", u,
                          user ? "not an instruction of the module" : "NULL");
        break;
      }
      if (uses[ui] != d) {
        st = ts_vfy_error(v, def, (ts_loc_t){0, 0}, "users list names '%s', which does not use it",
                          user->name);
        break;
      }
      if (listed[ui] == d) {
        st = ts_vfy_error(v, def, (ts_loc_t){0, 0}, "users list names '%s' twice", user->name);
        break;
      }
      listed[ui] = d;
    }
    if (st == TS_OK && (size_t)def->nusers != first[d + 1] - first[d]) {
      /* fewer listed than use it: name the first that is missing */
      for (size_t q = first[d]; q < first[d + 1]; q++)
        if (listed[use[q]] != d) {
          st = ts_vfy_error(v, def, (ts_loc_t){0, 0}, "used by '%s' but missing from its users list",
                            w->instrs[use[q]]->name);
          break;
        }
    }
  }
done:
  ts_free(first);
  ts_free(use);
  ts_free(seen);
  ts_free(uses);
  ts_free(listed);
  return st;
}

static ts_status_t check_root(walk_t *w, const ts_hlo_comp_t *c) {
  ts_vctx_t *v = w->v;
  if (!c->root) return comp_error(v, c, "has no root instruction");
  if (c->root->parent != c || index_of(w, c->root) < 0)
    return comp_error(v, c, "root '%s' is not one of its instructions", c->root->name ? c->root->name : "?");
  if (!c->root->is_root)
    return ts_vfy_error(v, c->root, (ts_loc_t){0, 0},
                        "is the root of computation '%s' but not marked as root", c->name);
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->is_root && c->instrs[k] != c->root)
      return ts_vfy_error(v, c->instrs[k], (ts_loc_t){0, 0},
                          "marked as root, but the root of computation '%s' is '%s'", c->name, c->root->name);
  return TS_OK;
}

/* parameter(0..n-1), each once, and the params table in step. */
static ts_status_t check_params(walk_t *w, const ts_hlo_comp_t *c) {
  ts_vctx_t *v = w->v;
  int n = 0;
  for (int k = 0; k < c->ninstrs; k++) n += c->instrs[k]->op == TS_OP_PARAMETER;
  const ts_hlo_instr_t **by = ts_calloc((size_t)n + 1, sizeof *by);
  if (!by) return TS_ERR_NOMEM;
  ts_status_t st = TS_OK;
  for (int k = 0; k < c->ninstrs && st == TS_OK; k++) {
    const ts_hlo_instr_t *i = c->instrs[k];
    if (i->op != TS_OP_PARAMETER) continue;
    int64_t p = i->param_number;
    if (p < 0 || p >= n)
      st = ts_vfy_error(
          v, i, (ts_loc_t){0, 0},
          "parameter number %lld leaves a gap: computation '%s' has %d parameter%s, numbered 0..%d",
          (long long)p, c->name, n, n == 1 ? "" : "s", n - 1);
    else if (by[p])
      st = ts_vfy_error(v, i, (ts_loc_t){0, 0}, "parameter number %lld is also used by '%s'", (long long)p,
                        by[p]->name);
    else
      by[p] = i;
  }
  if (st == TS_OK) {
    if (c->nparams != n || (n > 0 && !c->params))
      st = comp_error(v, c, "parameter table lists %d parameters but it has %d parameter instructions",
                      c->nparams, n);
    for (int p = 0; st == TS_OK && p < n; p++)
      if (c->params[p] != by[p])
        st = comp_error(v, c, "parameter table entry %d is not parameter(%d) '%s'", p, p, by[p]->name);
  }
  ts_free(by);
  return st;
}

/* Every callee non-NULL, in the module, and not the entry. */
static ts_status_t check_callees(walk_t *w) {
  ts_vctx_t *v = w->v;
  for (int k = 0; k < w->n; k++) {
    const ts_hlo_instr_t *i = w->instrs[k];
    for (int a = 0; a < i->nattrs; a++) {
      const ts_hlo_attr_t *at = &i->attrs[a];
      if (at->kind != TS_ATTR_COMP && at->kind != TS_ATTR_COMP_LIST) continue;
      if (at->v.comps.n < 0 || (at->v.comps.n > 0 && !at->v.comps.comps))
        return ts_vfy_error(v, i, at->loc, "attribute %s has a malformed computation list", at->name);
      for (int j = 0; j < at->v.comps.n; j++) {
        const ts_hlo_comp_t *c = at->v.comps.comps[j];
        if (!c || ptrmap_get(&w->comps, c) < 0)
          return ts_vfy_error(v, i, at->loc, "attribute %s names %s", at->name,
                              c ? "a computation that is not in the module" : "no computation (NULL)");
      }
    }
    for (int j = 0; j < i->ncalled; j++) {
      const ts_hlo_comp_t *c = i->called[j];
      if (!c || ptrmap_get(&w->comps, c) < 0)
        return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "called computation %d is %s", j,
                            c ? "not in the module" : "NULL");
      if (c == v->m->entry)
        return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "calls the entry computation '%s'", c->name);
    }
  }
  return TS_OK;
}

/* Prints a cycle `a -> b -> ... -> a` from names[0..n). */
static void put_cycle(ts_buf_t *b, const char *const *names, int n) {
  for (int k = 0; k < n; k++) {
    if (n > 24 && k == 12) {
      ts_buf_printf(b, "... (%d more) -> ", n - 22);
      k = n - 10;
    }
    ts_buf_printf(b, "%s -> ", names[k]);
  }
  ts_buf_puts(b, names[0]);
}

/* Finds a cycle in a graph with n nodes whose edges from node a are
 * adj[first[a] .. first[a + 1]) (iterative DFS: graphs have 100k nodes and
 * chains as long). On a cycle, cycle[0..*len) holds its nodes in edge order
 * (cycle[k] -> cycle[k + 1], the last back to cycle[0]); else *len is 0.
 * `cycle` has room for n nodes. */
static ts_status_t find_cycle(int n, const size_t *first, const int *adj, int *cycle, int *len) {
  uint8_t *color = ts_calloc((size_t)n + 1, 1);
  int *stack = ts_calloc((size_t)n + 1, sizeof *stack);
  size_t *next = ts_calloc((size_t)n + 1, sizeof *next);
  *len = 0;
  if (!color || !stack || !next) {
    ts_free(color);
    ts_free(stack);
    ts_free(next);
    return TS_ERR_NOMEM;
  }
  for (int s = 0; s < n && *len == 0; s++) {
    if (color[s]) continue;
    int sp = 0;
    stack[sp] = s, next[sp] = first[s], color[s] = 1;
    sp++;
    while (sp > 0 && *len == 0) {
      int a = stack[sp - 1];
      if (next[sp - 1] >= first[a + 1]) {
        color[a] = 2;
        sp--;
        continue;
      }
      int t = adj[next[sp - 1]++];
      if (color[t] == 1) {
        int from = sp - 1;
        while (stack[from] != t) from--;
        for (int k = from; k < sp; k++) cycle[k - from] = stack[k];
        *len = sp - from;
      } else if (color[t] == 0) {
        color[t] = 1;
        stack[sp] = t, next[sp] = first[t];
        sp++;
      }
    }
  }
  ts_free(color);
  ts_free(stack);
  ts_free(next);
  return TS_OK;
}

/* A graph for find_cycle (edges from node a: adj[first[a] .. first[a + 1])),
 * with room for the cycle it finds and the names of its nodes. */
typedef struct {
  size_t *first;
  int *adj, *cycle, len;
  const char **names;
} graph_t;

static bool graph_alloc(graph_t *g, int n, size_t nedges) {
  g->first = ts_calloc((size_t)n + 2, sizeof *g->first);
  g->adj = ts_calloc(nedges + 1, sizeof *g->adj);
  g->cycle = ts_calloc((size_t)n + 1, sizeof *g->cycle);
  g->names = ts_calloc((size_t)n + 1, sizeof *g->names);
  g->len = 0;
  return g->first && g->adj && g->cycle && g->names;
}

static void graph_free(graph_t *g) {
  ts_free(g->first);
  ts_free(g->adj);
  ts_free(g->cycle);
  ts_free(g->names);
}

/* Computations must not call themselves, directly or not. */
static ts_status_t check_call_graph(walk_t *w) {
  ts_vctx_t *v = w->v;
  const ts_hlo_module_t *m = v->m;
  int nc = m->ncomps;
  /* an edge from each computation to each computation it calls */
  size_t ncalls = 0;
  for (int k = 0; k < w->n; k++) ncalls += (size_t)w->instrs[k]->ncalled;
  graph_t g;
  ts_status_t st = TS_ERR_NOMEM;
  if (!graph_alloc(&g, nc, ncalls)) goto done;
  size_t e = 0;
  for (int c = 0; c < nc; c++) {
    g.first[c] = e;
    const ts_hlo_comp_t *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++)
      for (int j = 0; j < comp->instrs[k]->ncalled; j++)
        g.adj[e++] = ptrmap_get(&w->comps, comp->instrs[k]->called[j]);
  }
  g.first[nc] = e;
  TS_CHECK_GOTO(find_cycle(nc, g.first, g.adj, g.cycle, &g.len), st, done);
  if (g.len > 0) {
    for (int k = 0; k < g.len; k++) g.names[k] = m->comps[g.cycle[k]]->name;
    ts_buf_t b = {0};
    put_cycle(&b, g.names, g.len);
    st = b.oom || !b.data ? TS_ERR_NOMEM : comp_error(v, m->comps[g.cycle[0]], "calls itself: %s", b.data);
    ts_buf_free(&b);
  }
done:
  graph_free(&g);
  return st;
}

static bool is_operand(const ts_hlo_instr_t *i, const ts_hlo_instr_t *o) {
  for (int k = 0; k < i->nops; k++)
    if (i->ops[k] == o) return true;
  return false;
}

/* No cycle through operands and control predecessors. */
static ts_status_t check_cycles(walk_t *w) {
  size_t nedges = 0;
  for (int k = 0; k < w->n; k++) nedges += (size_t)(w->instrs[k]->nops + w->instrs[k]->nctrl_preds);
  graph_t g;
  ts_status_t st = TS_ERR_NOMEM;
  if (!graph_alloc(&g, w->n, nedges)) goto done;
  size_t e = 0;
  for (int k = 0; k < w->n; k++) {
    const ts_hlo_instr_t *i = w->instrs[k];
    g.first[k] = e;
    for (int j = 0; j < i->nops; j++) g.adj[e++] = index_of(w, i->ops[j]);
    for (int j = 0; j < i->nctrl_preds; j++) g.adj[e++] = index_of(w, i->ctrl_preds[j]);
  }
  g.first[w->n] = e;
  TS_CHECK_GOTO(find_cycle(w->n, g.first, g.adj, g.cycle, &g.len), st, done);
  if (g.len > 0) {
    bool ctrl = false; /* some edge of the cycle is only a control dependency */
    for (int k = 0; k < g.len; k++) {
      const ts_hlo_instr_t *a = w->instrs[g.cycle[k]], *b = w->instrs[g.cycle[(k + 1) % g.len]];
      g.names[k] = a->name;
      ctrl |= !is_operand(a, b);
    }
    ts_buf_t b = {0};
    put_cycle(&b, g.names, g.len);
    st = b.oom || !b.data ? TS_ERR_NOMEM
                          : ts_vfy_error(w->v, w->instrs[g.cycle[0]], (ts_loc_t){0, 0}, "cycle through %s: %s",
                                         ctrl ? "operands and control-predecessors" : "operands", b.data);
    ts_buf_free(&b);
  }
done:
  graph_free(&g);
  return st;
}

static ts_status_t check_structure(walk_t *w) {
  ts_vctx_t *v = w->v;
  const ts_hlo_module_t *m = v->m;
  if (m->ncomps < 0 || (m->ncomps > 0 && !m->comps))
    return module_error(v, (ts_loc_t){0, 0}, "malformed computation list");
  if (m->nattrs < 0 || (m->nattrs > 0 && !m->attrs))
    return module_error(v, (ts_loc_t){0, 0}, "malformed header attributes");
  for (int a = 0; a < m->nattrs; a++)
    if (!m->attrs[a].name) return module_error(v, (ts_loc_t){0, 0}, "header attribute %d has no name", a);
  ts_strmap_t names = {0};
  for (int c = 0; c < m->ncomps; c++) {
    const ts_hlo_comp_t *comp = m->comps[c];
    if (!comp || !comp->name) {
      ts_strmap_free(&names);
      return module_error(v, (ts_loc_t){0, 0}, "computation %d is %s", c, comp ? "unnamed" : "NULL");
    }
    bool dup = ptrmap_put(&w->comps, comp, c) >= 0 || ts_strmap_get(&names, comp->name, strlen(comp->name));
    if (dup) {
      ts_strmap_free(&names);
      return comp_error(v, comp, "is listed twice or its name is used twice");
    }
    if (!ts_strmap_put(&names, comp->name, strlen(comp->name), (void *)comp)) {
      ts_strmap_free(&names);
      return TS_ERR_NOMEM;
    }
    if (comp->module != m) {
      ts_strmap_free(&names);
      return comp_error(v, comp, "belongs to another module");
    }
  }
  ts_strmap_free(&names);
  if (!m->entry) return module_error(v, (ts_loc_t){0, 0}, "has no entry computation");
  if (ptrmap_get(&w->comps, m->entry) < 0)
    return module_error(v, (ts_loc_t){0, 0}, "entry computation '%s' is not in the module",
                        m->entry->name ? m->entry->name : "?");
  for (int c = 0; c < m->ncomps; c++)
    if (m->comps[c]->is_entry && m->comps[c] != m->entry)
      return comp_error(v, m->comps[c], "is marked ENTRY but the module's entry is '%s'", m->entry->name);

  TS_CHECK(check_instrs(w));
  TS_CHECK(check_names(w));
  TS_CHECK(check_edges(w));
  TS_CHECK(check_users(w));
  for (int c = 0; c < m->ncomps; c++) {
    TS_CHECK(check_root(w, m->comps[c]));
    TS_CHECK(check_params(w, m->comps[c]));
  }
  TS_CHECK(check_callees(w));
  TS_CHECK(check_call_graph(w));
  return check_cycles(w);
}

/* ---- entry signature ---------------------------------------------------- */

static bool same_ignoring_layout(const ts_shape_t *a, const ts_shape_t *b) {
  return ts_shape_equal(a, b, false);
}

static ts_status_t check_entry_layout(ts_vctx_t *v) {
  const ts_hlo_module_t *m = v->m;
  const ts_hlo_attr_t *a = ts_hlo_module_attr(m, "entry_computation_layout");
  if (!a) return TS_OK;
  const ts_hlo_comp_t *e = m->entry;
  if (a->kind != TS_ATTR_LAYOUT_SIG)
    return module_error(v, a->loc, "entry_computation_layout must be a computation layout");
  if (a->v.sig.nparams < 0 || (a->v.sig.nparams > 0 && !a->v.sig.params) || !a->v.sig.result)
    return module_error(v, a->loc, "entry_computation_layout is malformed");
  if (a->v.sig.nparams != e->nparams)
    return module_error(v, a->loc,
                        "entry_computation_layout has %d parameter%s but the entry computation '%s' has %d",
                        a->v.sig.nparams, a->v.sig.nparams == 1 ? "" : "s", e->name, e->nparams);
  for (int k = 0; k < e->nparams; k++) {
    const ts_shape_t *want = a->v.sig.params[k], *got = e->params[k]->shape;
    if (!want || !same_ignoring_layout(want, got))
      return ts_vfy_error(v, e->params[k], (ts_loc_t){0, 0},
                          "shape %s does not match entry_computation_layout parameter %d %s",
                          ts_vfy_shape_str(v, got), k, ts_vfy_shape_str(v, want));
  }
  if (!same_ignoring_layout(a->v.sig.result, e->root->shape))
    return ts_vfy_error(v, e->root, (ts_loc_t){0, 0},
                        "entry root shape %s does not match entry_computation_layout result %s",
                        ts_vfy_shape_str(v, e->root->shape), ts_vfy_shape_str(v, a->v.sig.result));
  return TS_OK;
}

/* ---- collective groups -------------------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* How a collective's replica_groups are read (XLA's CollectiveOpGroupMode,
 * hlo_text_format.md section 7). */

/* XLA's CheckReplicaGroups: no group empty, no id twice, the ids are exactly
 * 0..n-1, n is the count the mode names (unless that count is 1: unset), and
 * every group has one size except for all-reduce. All-reduce groups of
 * different sizes that fail another rule are reported by their sizes. */
static ts_status_t check_groups(ts_vctx_t *v, const ts_hlo_instr_t *i, const ts_hlo_attr_t *a, ts_coll_group_mode_t mode,
                                bool uniform) {
  const ts_replica_groups_t *rg = a->v.rg;
  size_t total = 0;
  int odd = -1; /* a group whose size differs from group 0's */
  for (int g = 0; g < rg->ngroups; g++) {
    const ts_i64_list_t *l = &rg->groups[g];
    if (l->n <= 0 || !l->v) return ts_vfy_error(v, i, a->loc, "replica group %d is empty", g);
    if (l->n != rg->groups[0].n && odd < 0) odd = g;
    total += (size_t)l->n;
  }
  if (odd >= 0 && uniform)
    return ts_vfy_error(v, i, a->loc, "replica groups differ in size: group 0 has %d ids, group %d has %d",
                        rg->groups[0].n, odd, rg->groups[odd].n);
  int64_t *ids = ts_malloc(sizeof *ids * (total + 1));
  if (!ids) return TS_ERR_NOMEM;
  size_t n = 0;
  for (int g = 0; g < rg->ngroups; g++)
    for (int k = 0; k < rg->groups[g].n; k++) ids[n++] = rg->groups[g].v[k];
  qsort(ids, n, sizeof *ids, cmp_i64);
  ts_status_t st = TS_OK;
  if (n && ids[0] < 0)
    st = ts_vfy_error(v, i, a->loc, "replica_groups contain a negative id %lld", (long long)ids[0]);
  for (size_t k = 1; st == TS_OK && k < n; k++)
    if (ids[k] == ids[k - 1])
      st = ts_vfy_error(v, i, a->loc, "replica_groups name id %lld more than once", (long long)ids[k]);
  int64_t missing = -1;
  for (size_t k = 0; st == TS_OK && k < n && missing < 0; k++)
    if (ids[k] != (int64_t)k) missing = (int64_t)k;
  ts_free(ids);
  TS_CHECK(st);
  int64_t rc = v->replica_count, np = v->num_partitions;
  int64_t want = mode == TS_COLL_CROSS_PARTITION ? np : mode == TS_COLL_FLATTENED_ID ? rc * np : rc;
  bool count_ok = want == 1 || (int64_t)n == want;
  if (odd >= 0 && (missing >= 0 || !count_ok))
    return ts_vfy_error(v, i, a->loc, "replica groups differ in size: group 0 has %d ids, group %d has %d",
                        rg->groups[0].n, odd, rg->groups[odd].n);
  if (missing >= 0)
    return ts_vfy_error(v, i, a->loc, "replica_groups do not name id %lld: they must name 0..%zu once each",
                        (long long)missing, n - 1);
  if (!count_ok) {
    static const char *const what[] = {"replicas (replica_count=", "partitions (num_partitions=",
                                       "replicas (replica_count=",
                                       "flattened ids (replica_count*num_partitions="};
    static const char *const name[] = {"cross-replica", "cross-partition", "cross-replica-and-partition",
                                       "flattened-id"};
    return ts_vfy_error(v, i, a->loc, "in %s mode replica_groups must name %lld %s%lld), but they name %zu",
                        name[mode], (long long)want, what[mode], (long long)want, n);
  }
  return TS_OK;
}

ts_status_t ts_vfy_group_size(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_vgroup_t *g) {
  ts_opcode_t op = i->op;
  if ((op == TS_OP_ASYNC_START || op == TS_OP_ASYNC_UPDATE || op == TS_OP_ASYNC_DONE) &&
      i->async_wrapped < TS_OP_COUNT)
    op = i->async_wrapped;
  const ts_hlo_attr_t *rg = ts_hlo_instr_attr(i, "replica_groups");
  const ts_hlo_attr_t *ch = ts_hlo_instr_attr(i, "channel_id");
  const ts_hlo_attr_t *ug = ts_hlo_instr_attr(i, "use_global_device_ids");
  if (rg && (rg->kind != TS_ATTR_REPLICA_GROUPS || !rg->v.rg || rg->v.rg->ngroups < 0 ||
             (rg->v.rg->ngroups > 0 && !rg->v.rg->groups)))
    return ts_vfy_error(v, i, rg->loc, "attribute replica_groups must be replica groups");
  if (ch && ch->kind != TS_ATTR_INT)
    return ts_vfy_error(v, i, ch->loc, "attribute channel_id must be an integer");
  if (ug && ug->kind != TS_ATTR_BOOL)
    return ts_vfy_error(v, i, ug->loc, "attribute use_global_device_ids must be a bool");
  bool global = ug && ug->v.b;
  if (global && !ch) return ts_vfy_error(v, i, ug->loc, "use_global_device_ids=true needs a channel_id");
  ts_coll_group_mode_t mode = ts_hlo_group_mode(i, op);
  bool by_partition = mode == TS_COLL_CROSS_PARTITION, both = mode == TS_COLL_CROSS_REPLICA_AND_PARTITION;
  bool uniform = op != TS_OP_ALL_REDUCE && op != TS_OP_ALL_REDUCE_START;
  int64_t rc = v->replica_count, np = v->num_partitions, all = rc * np;
  *g = (ts_vgroup_t){0};
  if (global && (!rg || rg->v.rg->ngroups == 0))
    return ts_vfy_error(v, i, ug->loc, "use_global_device_ids=true needs replica_groups (flattened-id mode)");
  if (rg && rg->v.rg->ngroups > 0) {
    TS_CHECK(check_groups(v, i, rg, mode, uniform));
    int64_t s = rg->v.rg->groups[0].n;
    g->size = g->alt = s;
    g->why = "from replica_groups";
    /* each group spans every partition of its replicas */
    if (both && __builtin_mul_overflow(s, np, &g->size))
      return ts_vfy_error(v, i, rg->loc, "group size %lld times num_partitions=%lld overflows", (long long)s,
                          (long long)np);
    return TS_OK;
  }
  g->from_header = true;
  if (!ch) {
    g->size = g->alt = rc;
    g->why = ts_arena_printf(v->scratch, "no replica_groups and replica_count=%lld", (long long)rc);
    g->hint = "pass --replica-count N or set replica_count";
  } else if (by_partition) {
    g->size = g->alt = np;
    g->why =
        ts_arena_printf(v->scratch, "no replica_groups, a channel_id and num_partitions=%lld", (long long)np);
    g->hint = "pass --num-partitions N or set num_partitions";
  } else {
    g->size = all;
    g->alt = global ? all : rc;
    g->why = ts_arena_printf(
        v->scratch, "no replica_groups, a channel_id and replica_count*num_partitions=%lld", (long long)all);
    g->hint = "pass --replica-count N / --num-partitions N or set replica_count / num_partitions";
  }
  if (!g->why) return TS_ERR_NOMEM;
  return TS_OK;
}

/* ---- shardings ---------------------------------------------------------- */

static ts_status_t check_devices(ts_vctx_t *v, const ts_hlo_instr_t *i, const ts_sharding_t *s) {
  int64_t total = v->replica_count * v->num_partitions;
  if (total <= 1) return TS_OK;
  const int64_t *ids = s->kind == TS_SHARD_MAXIMAL ? &s->device : s->devices.v;
  int n = s->kind == TS_SHARD_MAXIMAL ? 1 : s->devices.n;
  if (n > 0 && !ids) return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "sharding has a malformed device list");
  for (int k = 0; k < n; k++)
    if (ids[k] < 0 || ids[k] >= total)
      return ts_vfy_error(
          v, i, (ts_loc_t){0, 0},
          "sharding device %lld is out of range: the module has %lld devices (replica_count=%lld, "
          "num_partitions=%lld): %s",
          (long long)ids[k], (long long)total, (long long)v->replica_count, (long long)v->num_partitions,
          sharding_str(v, s));
  return TS_OK;
}

/* One non-tuple sharding on one leaf (array) shape. */
static ts_status_t check_leaf_sharding(ts_vctx_t *v, const ts_hlo_instr_t *i, const ts_sharding_t *s,
                                       const ts_shape_t *shape) {
  if (shape->elem == TS_TOKEN) return TS_OK;
  if (s->kind == TS_SHARD_TUPLE)
    return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "nested tuple sharding %s for the array %s",
                        sharding_str(v, s), ts_vfy_shape_str(v, shape));
  if (s->kind == TS_SHARD_TILED) {
    int sub = s->last_tile_dim_replicate ? 1 : s->nsubgroups;
    int data = s->tile_dims.n - sub;
    if (data != shape->rank)
      return ts_vfy_error(
          v, i, (ts_loc_t){0, 0}, "sharding %s tiles %d data dimension%s but the shape %s has rank %d",
          sharding_str(v, s), data, data == 1 ? "" : "s", ts_vfy_shape_str(v, shape), shape->rank);
  }
  if (s->kind == TS_SHARD_TILED || s->kind == TS_SHARD_MAXIMAL) TS_CHECK(check_devices(v, i, s));
  return TS_OK;
}

/* Visits the leaves of `shape` in order, pairing them with tuple elements. */
static ts_status_t check_tuple_leaves(ts_vctx_t *v, const ts_hlo_instr_t *i, const ts_sharding_t *s,
                                      const ts_shape_t *shape, int *next, int depth) {
  if (depth > 1000) return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "shape nests too deeply");
  if (shape->elem != TS_TUPLE) {
    const ts_sharding_t *e = s->tuple[(*next)++];
    if (!e) return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "tuple sharding element %d is NULL", *next - 1);
    return check_leaf_sharding(v, i, e, shape);
  }
  for (int k = 0; k < shape->ntuple; k++)
    TS_CHECK(check_tuple_leaves(v, i, s, shape->tuple[k], next, depth + 1));
  return TS_OK;
}

static ts_status_t check_all_leaves(ts_vctx_t *v, const ts_hlo_instr_t *i, const ts_sharding_t *s,
                                    const ts_shape_t *shape, int depth) {
  if (depth > 1000) return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "shape nests too deeply");
  if (shape->elem != TS_TUPLE) return check_leaf_sharding(v, i, s, shape);
  for (int k = 0; k < shape->ntuple; k++) TS_CHECK(check_all_leaves(v, i, s, shape->tuple[k], depth + 1));
  return TS_OK;
}

static ts_status_t check_sharding(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  const ts_sharding_t *s = i->sharding;
  const ts_shape_t *shape = i->shape;
  if (!s || shape->elem == TS_TOKEN || s->kind == TS_SHARD_NAMED) return TS_OK;
  if (s->kind != TS_SHARD_TUPLE) return check_all_leaves(v, i, s, shape, 0); /* copied to every leaf */
  if (s->ntuple < 0 || (s->ntuple > 0 && !s->tuple))
    return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "tuple sharding is malformed");
  int leaves = ts_shape_leaf_count(shape);
  if (shape->elem != TS_TUPLE || leaves == 0) {
    /* an array or an empty tuple takes a one-element tuple sharding */
    bool ok = s->ntuple == 1 || (leaves == 0 && shape->elem == TS_TUPLE && s->ntuple == 0);
    if (!ok)
      return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "tuple sharding has %d elements but %s takes 1", s->ntuple,
                          ts_vfy_shape_str(v, shape));
    if (s->ntuple == 1 && shape->elem != TS_TUPLE) {
      if (!s->tuple[0]) return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "tuple sharding element 0 is NULL");
      return check_leaf_sharding(v, i, s->tuple[0], shape);
    }
    return TS_OK;
  }
  if (s->ntuple != leaves)
    return ts_vfy_error(v, i, (ts_loc_t){0, 0},
                        "tuple sharding has %d element%s but the shape %s has %d leaves", s->ntuple,
                        s->ntuple == 1 ? "" : "s", ts_vfy_shape_str(v, shape), leaves);
  int next = 0;
  return check_tuple_leaves(v, i, s, shape, &next, 0);
}

/* ---- async chains, threads, channels ------------------------------------ */

static bool is_send_recv(ts_opcode_t op) {
  return op == TS_OP_SEND || op == TS_OP_RECV || op == TS_OP_SEND_DONE || op == TS_OP_RECV_DONE;
}

static const char *thread_of(const ts_hlo_comp_t *c) {
  return c && c->execution_thread ? c->execution_thread : "main";
}

/* The printed opcode: `custom-call-start` for async sugar. */
static const char *op_str(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  if (i->async_wrapped >= TS_OP_COUNT) return ts_opcode_name(i->op);
  const char *suffix = i->op == TS_OP_ASYNC_START ? "start" : i->op == TS_OP_ASYNC_UPDATE ? "update" : "done";
  const char *r = ts_arena_printf(v->scratch, "%s-%s", ts_opcode_name(i->async_wrapped), suffix);
  return r ? r : ts_opcode_name(i->op);
}

static const ts_hlo_comp_t *calls_of(const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "calls");
  return a && a->kind == TS_ATTR_COMP && a->v.comps.n == 1 ? a->v.comps.comps[0] : NULL;
}

static const char *async_thread(const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "async_execution_thread");
  return a && (a->kind == TS_ATTR_STRING || a->kind == TS_ATTR_IDENT) && a->v.s ? a->v.s : NULL;
}

/* XLA's VerifyAsynchronousInstructionPairs: a start has one user, its update
 * or done; an update or done has a start (or update) for operand. */
static ts_status_t check_pair(ts_vctx_t *v, const ts_hlo_instr_t *i, bool users_half) {
  ts_opcode_t users[2] = {TS_OP_COUNT, TS_OP_COUNT}, operand[2] = {TS_OP_COUNT, TS_OP_COUNT};
  switch (i->op) {
  case TS_OP_ASYNC_START: users[0] = TS_OP_ASYNC_UPDATE, users[1] = TS_OP_ASYNC_DONE; break;
  case TS_OP_ASYNC_UPDATE:
    users[0] = TS_OP_ASYNC_UPDATE, users[1] = TS_OP_ASYNC_DONE;
    operand[0] = TS_OP_ASYNC_START, operand[1] = TS_OP_ASYNC_UPDATE;
    break;
  case TS_OP_ASYNC_DONE: operand[0] = TS_OP_ASYNC_START, operand[1] = TS_OP_ASYNC_UPDATE; break;
  case TS_OP_ALL_REDUCE_START: users[0] = TS_OP_ALL_REDUCE_DONE; break;
  case TS_OP_ALL_REDUCE_DONE: operand[0] = TS_OP_ALL_REDUCE_START; break;
  case TS_OP_COPY_START: users[0] = TS_OP_COPY_DONE; break;
  case TS_OP_COPY_DONE: operand[0] = TS_OP_COPY_START; break;
  case TS_OP_COLLECTIVE_PERMUTE_START: users[0] = TS_OP_COLLECTIVE_PERMUTE_DONE; break;
  case TS_OP_COLLECTIVE_PERMUTE_DONE: operand[0] = TS_OP_COLLECTIVE_PERMUTE_START; break;
  case TS_OP_SEND:
  case TS_OP_RECV:
    /* a send or recv may end an async computation; else its done or a tuple
     * (a pipelined loop) takes it */
    if (i->is_root && i->parent != v->m->entry) return TS_OK;
    users[0] = i->op == TS_OP_SEND ? TS_OP_SEND_DONE : TS_OP_RECV_DONE, users[1] = TS_OP_TUPLE;
    break;
  case TS_OP_SEND_DONE:
  case TS_OP_RECV_DONE:
    operand[0] = i->op == TS_OP_SEND_DONE ? TS_OP_SEND : TS_OP_RECV, operand[1] = TS_OP_GET_TUPLE_ELEMENT;
    break;
  default: return TS_OK;
  }
  if (operand[0] != TS_OP_COUNT && !users_half) {
    if (i->nops != 1) return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "%s takes 1 operand, got %d", op_str(v, i), i->nops);
    const ts_hlo_instr_t *o = i->ops[0];
    if (o->op != operand[0] && o->op != operand[1])
      return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "the operand of %s must be %s%s%s, found %s '%s'", op_str(v, i),
                          ts_opcode_name(operand[0]), operand[1] != TS_OP_COUNT ? " or " : "",
                          operand[1] != TS_OP_COUNT ? ts_opcode_name(operand[1]) : "", op_str(v, o), o->name);
  }
  if (users[0] != TS_OP_COUNT && users_half) {
    if (i->nusers != 1)
      return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "%s needs exactly one user (its %s%s%s), found %d", op_str(v, i),
                          ts_opcode_name(users[0]), users[1] != TS_OP_COUNT ? " or " : "",
                          users[1] != TS_OP_COUNT ? ts_opcode_name(users[1]) : "", i->nusers);
    const ts_hlo_instr_t *u = i->users[0];
    if (u->op != users[0] && u->op != users[1])
      return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "the user of %s must be %s%s%s, found %s '%s'", op_str(v, i),
                          ts_opcode_name(users[0]), users[1] != TS_OP_COUNT ? " or " : "",
                          users[1] != TS_OP_COUNT ? ts_opcode_name(users[1]) : "", op_str(v, u), u->name);
  }
  return TS_OK;
}

/* An async-update or -done continues its operand's chain: the same wrapped
 * opcode (sugar), the same wrapped computation, the same thread. */
static ts_status_t check_async_chain(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  if (i->op != TS_OP_ASYNC_UPDATE && i->op != TS_OP_ASYNC_DONE) return TS_OK;
  const ts_hlo_instr_t *start = i->ops[0];
  while (start->op == TS_OP_ASYNC_UPDATE && start->nops == 1) start = start->ops[0];
  const ts_hlo_instr_t *o = i->ops[0];
  bool real_i = i->async_wrapped < TS_OP_COUNT, real_o = o->async_wrapped < TS_OP_COUNT;
  if (real_i && real_o && i->async_wrapped != o->async_wrapped)
    return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "%s continues %s '%s': the wrapped opcodes differ", op_str(v, i),
                        op_str(v, o), o->name);
  const ts_hlo_comp_t *mine = calls_of(i), *theirs = calls_of(start);
  if (mine && theirs && mine != theirs)
    return ts_vfy_error(v, i, (ts_loc_t){0, 0},
                        "%s calls '%s' but its async-start '%s' calls '%s': one computation per async chain",
                        op_str(v, i), mine->name, start->name, theirs->name);
  const char *t = async_thread(i), *want = async_thread(start);
  if (!want) want = theirs ? thread_of(theirs) : "main";
  if (t && strcmp(t, want) != 0)
    return ts_vfy_error(v, i, (ts_loc_t){0, 0},
                        "async_execution_thread=\"%s\" but its async-start '%s' runs on thread \"%s\"", t,
                        start->name, want);
  return TS_OK;
}

/* The computation an async-start wraps: on its thread, called by no other
 * async-start, and (XLA's VerifyAsyncComputation) only parameters and the
 * root, unless it is a collectives group or only sends and receives. Tuple
 * plumbing (get-tuple-element, tuple) is allowed too: XLA's own parser tests
 * verify such a module (AsyncStartWithAliasing). */
static ts_status_t check_async_start(ts_vctx_t *v, const ts_hlo_instr_t *i, ptrmap_t *callers) {
  if (i->op != TS_OP_ASYNC_START) return TS_OK;
  const ts_hlo_comp_t *c = calls_of(i);
  if (!c) return TS_OK;
  const char *t = async_thread(i);
  if (!t) t = "main";
  if (strcmp(t, thread_of(c)) != 0)
    return ts_vfy_error(v, i, (ts_loc_t){0, 0},
                        "async_execution_thread is \"%s\" but the wrapped computation '%s' runs on \"%s\"", t,
                        c->name, thread_of(c));
  int prev = ptrmap_put(callers, c, i->id);
  if (prev >= 0 && prev != i->id)
    return ts_vfy_error(v, i, (ts_loc_t){0, 0}, "computation '%s' is called by more than one async op", c->name);
  const ts_hlo_attr_t *fa = ts_hlo_instr_attr(i, "frontend_attributes");
  if (fa && fa->kind == TS_ATTR_BLOB && fa->v.s && strstr(fa->v.s, "_collectives_group")) return TS_OK;
  bool send_recv = true;
  for (int k = 0; k < c->ninstrs; k++) {
    ts_opcode_t o = c->instrs[k]->op;
    send_recv &= o == TS_OP_PARAMETER || o == TS_OP_TUPLE || o == TS_OP_GET_TUPLE_ELEMENT || is_send_recv(o);
  }
  if (send_recv) return TS_OK;
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k] != c->root && c->instrs[k]->op != TS_OP_PARAMETER &&
        c->instrs[k]->op != TS_OP_GET_TUPLE_ELEMENT && c->instrs[k]->op != TS_OP_TUPLE)
      return ts_vfy_error(v, i, (ts_loc_t){0, 0},
                          "the async computation '%s' must hold only parameters and its root, but holds '%s'",
                          c->name, c->instrs[k]->name);
  return TS_OK;
}

/* XLA's CheckCallableInstructionThreadName: call, fusion, while and
 * conditional run their computations on their own thread; so does every
 * to_apply. async-* may move work to another thread. */
static ts_status_t check_threads(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  if (i->op == TS_OP_ASYNC_START || i->op == TS_OP_ASYNC_UPDATE || i->op == TS_OP_ASYNC_DONE) return TS_OK;
  const char *mine = thread_of(i->parent);
  bool all = i->op == TS_OP_CALL || i->op == TS_OP_FUSION || i->op == TS_OP_WHILE || i->op == TS_OP_CONDITIONAL;
  for (int a = 0; a < i->nattrs; a++) {
    const ts_hlo_attr_t *at = &i->attrs[a];
    if (at->kind != TS_ATTR_COMP && at->kind != TS_ATTR_COMP_LIST) continue;
    if (!all && strcmp(at->name, "to_apply") != 0) continue;
    for (int j = 0; j < at->v.comps.n; j++) {
      const ts_hlo_comp_t *c = at->v.comps.comps[j];
      if (strcmp(thread_of(c), mine) != 0)
        return ts_vfy_error(v, i, at->loc,
                            "%s '%s' runs on thread \"%s\" but %s '%s' is on \"%s\"", at->name, c->name,
                            thread_of(c), ts_opcode_name(i->op), i->name, mine);
    }
  }
  return TS_OK;
}

/* The sharding as text, "" when unannotated: XLA compares shardings whole. */
static const char *sharding_or_empty(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  return i && i->sharding ? sharding_str(v, i->sharding) : "";
}

/* The sharding's text without its metadata={...} parts: XLA's sharding
 * equality ignores metadata (op names differ between a while and its body). */
static const char *sharding_key(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  const char *s = sharding_or_empty(v, i);
  char *r = ts_arena_strdup(v->scratch, s), *w = r;
  if (!r) return s;
  for (const char *p = s; *p;) {
    if (strncmp(p, " metadata={", 11) == 0) {
      int depth = 0;
      p += 10;
      do {
        depth += *p == '{' ? 1 : *p == '}' ? -1 : 0;
        p++;
      } while (*p && depth > 0);
      continue;
    }
    *w++ = *p++;
  }
  *w = 0;
  return r;
}

/* XLA's VerifyConsistentSharding: a while, its body's root and parameter and
 * its condition's parameter; a conditional and its branches' roots: all of
 * them that have a sharding have the same one. */
static ts_status_t check_loop_sharding(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  const ts_hlo_instr_t *set[64];
  int n = 0;
  set[n++] = i;
  if (i->op == TS_OP_WHILE) {
    for (int a = 0; a < i->nattrs; a++) {
      const ts_hlo_attr_t *at = &i->attrs[a];
      if (at->kind != TS_ATTR_COMP || at->v.comps.n != 1) continue;
      const ts_hlo_comp_t *c = at->v.comps.comps[0];
      if (strcmp(at->name, "body") == 0) set[n++] = c->root;
      if ((strcmp(at->name, "body") == 0 || strcmp(at->name, "condition") == 0) && c->nparams == 1)
        set[n++] = c->params[0];
    }
  } else if (i->op == TS_OP_CONDITIONAL) {
    for (int j = 0; j < i->ncalled && n < 64; j++) set[n++] = i->called[j]->root;
  } else {
    return TS_OK;
  }
  const ts_hlo_instr_t *first = NULL;
  const char *want = NULL;
  for (int k = 0; k < n; k++) {
    if (!set[k] || !set[k]->sharding) continue;
    const char *s = sharding_key(v, set[k]);
    if (!first) {
      first = set[k], want = s;
    } else if (strcmp(s, want) != 0) {
      return ts_vfy_error(v, i, (ts_loc_t){0, 0},
                          "inconsistent %s sharding: '%s' has %s but '%s' (computation '%s') has %s",
                          ts_opcode_name(i->op), first->name, want, set[k]->name, set[k]->parent->name, s);
    }
  }
  return TS_OK;
}

/* XLA's VerifyChannels (the ChannelVerifier test): a channel_id of a send or
 * recv (or their dones) names no collective. Collectives of different opcodes
 * may share one: XLA accepts real dumps that do (the llama modules in
 * shared/corpus/xla_tests/real). Also XLA's VerifyLayoutConstrainedAllReduce:
 * all-reduces are all layout-constrained or none is. */
static ts_status_t check_channels(walk_t *w) {
  ts_vctx_t *v = w->v;
  ts_strmap_t first = {0};
  ts_status_t st = TS_OK;
  const ts_hlo_instr_t *ar = NULL;
  for (int k = 0; k < w->n && st == TS_OK; k++) {
    const ts_hlo_instr_t *i = w->instrs[k];
    if (i->op == TS_OP_ALL_REDUCE || i->op == TS_OP_ALL_REDUCE_START) {
      const ts_hlo_attr_t *cl = ts_hlo_instr_attr(i, "constrain_layout");
      bool c = cl && cl->kind == TS_ATTR_BOOL && cl->v.b;
      const ts_hlo_attr_t *rcl = ar ? ts_hlo_instr_attr(ar, "constrain_layout") : NULL;
      bool rc = rcl && rcl->kind == TS_ATTR_BOOL && rcl->v.b;
      if (!ar)
        ar = i;
      else if (c != rc)
        st = ts_vfy_error(v, i, (ts_loc_t){0, 0},
                          "the module mixes layout-constrained and unconstrained all-reduces ('%s' is %s)",
                          ar->name, rc ? "constrained" : "unconstrained");
    }
    const ts_hlo_attr_t *ch = ts_hlo_instr_attr(i, "channel_id");
    if (st != TS_OK || !ch || ch->kind != TS_ATTR_INT) continue;
    /* the done of an async collective carries no channel of its own */
    if (i->op == TS_OP_ALL_REDUCE_DONE || i->op == TS_OP_ALL_GATHER_DONE || i->op == TS_OP_COLLECTIVE_PERMUTE_DONE ||
        i->op == TS_OP_ASYNC_UPDATE || i->op == TS_OP_ASYNC_DONE)
      continue;
    char key[32];
    int kn = snprintf(key, sizeof key, "%lld", (long long)ch->v.i);
    const ts_hlo_instr_t *f = ts_strmap_get(&first, key, (size_t)kn);
    if (!f) {
      const char *k = ts_arena_strdup(v->scratch, key); /* the map keeps the key */
      if (!k || !ts_strmap_put(&first, k, (size_t)kn, (void *)i)) st = TS_ERR_NOMEM;
      continue;
    }
    if (is_send_recv(f->op) != is_send_recv(i->op))
      st = ts_vfy_error(v, i, ch->loc, "channel_id=%lld is used for different kinds of channel instructions: %s '%s' and %s",
                        (long long)ch->v.i, op_str(v, f), f->name, op_str(v, i));
  }
  ts_strmap_free(&first);
  return st;
}

static ts_status_t check_module_rules(walk_t *w) {
  ts_vctx_t *v = w->v;
  ptrmap_t callers = {0};
  if (!ptrmap_init(&callers, (size_t)v->m->ncomps)) {
    ptrmap_free(&callers);
    return TS_ERR_NOMEM;
  }
  ts_status_t st = TS_OK;
  /* every done's operand before any start's users: a done without its
   * start is named as such, not as a start without its done */
  for (int k = 0; k < w->n && st == TS_OK; k++) st = check_pair(v, w->instrs[k], false);
  for (int k = 0; k < w->n && st == TS_OK; k++) {
    const ts_hlo_instr_t *i = w->instrs[k];
    st = check_pair(v, i, true);
    if (st == TS_OK) st = check_async_chain(v, i);
    if (st == TS_OK) st = check_async_start(v, i, &callers);
    if (st == TS_OK) st = check_threads(v, i);
    if (st == TS_OK) st = check_loop_sharding(v, i);
  }
  ptrmap_free(&callers);
  TS_CHECK(st);
  return check_channels(w);
}

/* ---- driver ------------------------------------------------------------- */

static ts_status_t verify(ts_vctx_t *v) {
  const ts_hlo_module_t *m = v->m;
  if (v->replica_count < 1 || v->num_partitions < 1 || v->replica_count > INT64_MAX / v->num_partitions)
    return module_error(v, (ts_loc_t){0, 0}, "replica_count=%lld and num_partitions=%lld must be positive",
                        (long long)v->replica_count, (long long)v->num_partitions);
  walk_t w = {.v = v};
  size_t n = 0;
  for (int c = 0; c < m->ncomps; c++)
    if (m->comps && m->comps[c] && m->comps[c]->ninstrs > 0) n += (size_t)m->comps[c]->ninstrs;
  if (n > INT32_MAX - 1) return module_error(v, (ts_loc_t){0, 0}, "too many instructions (%zu)", n);
  ts_status_t st = TS_ERR_NOMEM;
  w.instrs = ts_calloc(n + 1, sizeof *w.instrs);
  w.total = n;
  w.dense = true;
  w.nid = m->next_id > 0 ? m->next_id : 0;
  w.byid = ts_malloc(sizeof *w.byid * ((size_t)w.nid + 1));
  if (!w.instrs || !w.byid || !ptrmap_init(&w.comps, m->ncomps > 0 ? (size_t)m->ncomps : 0)) goto done;
  for (int k = 0; k < w.nid; k++) w.byid[k] = -1;
  TS_CHECK_GOTO(check_structure(&w), st, done);
  TS_CHECK_GOTO(check_entry_layout(v), st, done);
  /* as XLA: async pairs and channels before shapes */
  TS_CHECK_GOTO(check_module_rules(&w), st, done);
  for (int k = 0; k < w.n; k++) {
    TS_CHECK_GOTO(ts_vfy_instr_shape(v, w.instrs[k]), st, done);
    TS_CHECK_GOTO(check_sharding(v, w.instrs[k]), st, done);
  }
  TS_CHECK_GOTO(ts_vfy_schedule(v), st, done);
  st = TS_OK;
done:
  ts_free(w.instrs);
  ts_free(w.byid);
  ptrmap_free(&w.index);
  ptrmap_free(&w.comps);
  return st;
}

ts_status_t ts_hlo_verify(const ts_hlo_module_t *m, const ts_hlo_verify_opts_t *opts, ts_diag_t *diag) {
  if (!m) {
    ts_diag_plain(diag, "ts_hlo_verify: no module");
    return TS_ERR_INVALID_ARGUMENT;
  }
  ts_vctx_t v = {.m = m, .diag = diag, .src = m->source};
  /* A module built by a pass has no text: name the module in messages. */
  if (!v.src.text || !v.src.name) v.src = (ts_source_t){m->name ? m->name : "<module>", NULL, 0};
  v.replica_count = opts && opts->replica_count ? opts->replica_count : m->replica_count;
  v.num_partitions = opts && opts->num_partitions ? opts->num_partitions : m->num_partitions;
  v.scratch = ts_arena_create();
  if (!v.scratch) return TS_ERR_NOMEM;
  ts_status_t st = verify(&v);
  if (st == TS_ERR_NOMEM && diag && !diag->text)
    ts_diag_plain(diag, "out of memory verifying module '%s'", m->name);
  ts_arena_destroy(v.scratch);
  return st;
}
