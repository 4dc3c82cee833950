/* Loop and input fusion (XLA's InstructionFusion, greedy from the consumers
 * up): groups are grown from a root over operands, then each group is
 * outlined into a `%fused_computation` and replaced by one fusion. */
#include "ts_fusion.h"

#include <string.h>

#define MAX_OPS 256 /* operands of one fused instruction (a concatenate) */

bool ts_fusion_is_elementwise(ts_opcode_t op) {
  switch (op) {
  case TS_OP_ABS: case TS_OP_ADD: case TS_OP_AND: case TS_OP_ATAN2: case TS_OP_CBRT: case TS_OP_CEIL:
  case TS_OP_CLAMP: case TS_OP_COMPARE: case TS_OP_CONVERT: case TS_OP_COSINE: case TS_OP_DIVIDE:
  case TS_OP_ERF: case TS_OP_EXPONENTIAL: case TS_OP_EXPONENTIAL_MINUS_ONE: case TS_OP_FLOOR:
  case TS_OP_IS_FINITE: case TS_OP_LOG: case TS_OP_LOG_PLUS_ONE: case TS_OP_LOGISTIC: case TS_OP_MAXIMUM:
  case TS_OP_MINIMUM: case TS_OP_MULTIPLY: case TS_OP_NEGATE: case TS_OP_NOT: case TS_OP_OR: case TS_OP_POWER:
  case TS_OP_REMAINDER: case TS_OP_ROUND_NEAREST_AFZ: case TS_OP_ROUND_NEAREST_EVEN: case TS_OP_RSQRT:
  case TS_OP_SELECT: case TS_OP_SHIFT_LEFT: case TS_OP_SHIFT_RIGHT_ARITHMETIC: case TS_OP_SHIFT_RIGHT_LOGICAL:
  case TS_OP_SIGN: case TS_OP_SINE: case TS_OP_SQRT: case TS_OP_SUBTRACT: case TS_OP_TAN: case TS_OP_TANH:
  case TS_OP_XOR:
    return true;
  default:
    return false;
  }
}

/* Ops a loop fusion may hold: elementwise ones and pure index maps. */
static bool loop_fusible(const ts_hlo_instr_t *i) {
  if (!ts_shape_is_array(i->shape) || i->shape->dynamic || ts_elem_is_complex(i->shape->elem)) return false;
  if (i->nctrl_preds) return false;
  if (ts_fusion_is_elementwise(i->op)) return true;
  switch (i->op) {
  case TS_OP_BROADCAST: case TS_OP_RESHAPE: case TS_OP_TRANSPOSE: case TS_OP_SLICE: case TS_OP_IOTA:
    return true;
  case TS_OP_CONCATENATE:
    return i->nops <= MAX_OPS;
  case TS_OP_CONSTANT:
    return ts_shape_elements(i->shape) == 1 && i->literal && !i->literal->elided;
  default:
    return false;
  }
}

/* Cheap enough to copy into every fusion that reads it. */
static bool cheap(const ts_hlo_instr_t *i) {
  return i->op == TS_OP_CONSTANT || i->op == TS_OP_IOTA ||
         (i->op == TS_OP_BROADCAST && ts_shape_elements(i->ops[0]->shape) == 1);
}

/* A reduce that can root an input fusion: one array result, one reducer. */
static bool input_root(const ts_hlo_instr_t *i) {
  return i->op == TS_OP_REDUCE && i->nops == 2 && ts_shape_is_array(i->shape) && !i->nctrl_preds &&
         !ts_elem_is_complex(i->shape->elem);
}

typedef struct {
  ts_hlo_module_t *m;
  ts_hlo_comp_t *c;
  int n;
  const ts_hlo_instr_t **order;
  int *group;        /* per instruction id: the group it was moved into, -1 */
  bool *pinned;      /* per instruction id: a control predecessor of something */
  int *mark;         /* per instruction id: == cur when in the group being grown */
  bool *dup;         /* per instruction id: a member some outside user also reads (copied, not moved) */
  int ids;           /* the arrays' size: instructions made later (fusions) are in none */
  int cur;
  ts_hlo_instr_t **members; /* the group being grown, root first */
  int nmembers;
  ts_fusion_stats_t *stats;
  int min_size;
} fctx_t;

static int mark_of(const fctx_t *f, const ts_hlo_instr_t *i) { return i->id < f->ids ? f->mark[i->id] : -1; }

/* Whether moving p into the group leaves no reader outside: every user is a
 * member that is itself moved, not copied. */
static bool users_in_group(fctx_t *f, const ts_hlo_instr_t *p) {
  for (int u = 0; u < p->nusers; u++)
    if (mark_of(f, p->users[u]) != f->cur || f->dup[p->users[u]->id]) return false;
  return !p->is_root;
}

/* Grows the group from members[0] over operands until nothing more fits. */
static void grow(fctx_t *f) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (int k = 0; k < f->nmembers; k++) {
      ts_hlo_instr_t *i = f->members[k];
      for (int o = 0; o < i->nops; o++) {
        ts_hlo_instr_t *p = i->ops[o];
        if (mark_of(f, p) == f->cur || p->id >= f->ids || f->group[p->id] >= 0 || f->pinned[p->id] ||
            !loop_fusible(p))
          continue;
        bool moved = users_in_group(f, p);
        if (!moved && !cheap(p)) continue; /* never compute an expensive producer twice */
        f->dup[p->id] = !moved;
        f->mark[p->id] = f->cur;
        f->members[f->nmembers++] = p;
        changed = true;
      }
    }
  }
}

static int counted(fctx_t *f) {
  int n = 0;
  for (int k = 0; k < f->nmembers; k++) n += f->members[k]->op != TS_OP_CONSTANT;
  return n;
}

static ts_status_t add_user(ts_hlo_module_t *m, ts_hlo_instr_t *def, ts_hlo_instr_t *user) {
  for (int u = 0; u < def->nusers; u++)
    if (def->users[u] == user) return TS_OK;
  if (def->nusers == def->users_cap) {
    int cap = def->users_cap ? def->users_cap * 2 : 4;
    ts_hlo_instr_t **v = ts_arena_alloc(m->arena, sizeof *v * (size_t)cap);
    if (!v) return TS_ERR_NOMEM;
    if (def->nusers) memcpy(v, def->users, sizeof *v * (size_t)def->nusers);
    def->users = v;
    def->users_cap = cap;
  }
  def->users[def->nusers++] = user;
  return TS_OK;
}

static void drop_user(ts_hlo_instr_t *def, const ts_hlo_instr_t *user) {
  for (int u = 0; u < def->nusers; u++)
    if (def->users[u] == user) {
      memmove(&def->users[u], &def->users[u + 1], sizeof *def->users * (size_t)(def->nusers - u - 1));
      def->nusers--;
      return;
    }
}

static const char *fresh_comp_name(ts_hlo_module_t *m) {
  if (!ts_hlo_module_find_comp(m, "fused_computation")) return "fused_computation";
  for (int k = 1;; k++) {
    char *s = ts_arena_printf(m->arena, "fused_computation.%d", k);
    if (!s || !ts_hlo_module_find_comp(m, s)) return s;
  }
}

/* Copies attributes (called computations included) and payload. */
static ts_status_t copy_payload(ts_hlo_instr_t *dst, const ts_hlo_instr_t *src) {
  dst->async_wrapped = src->async_wrapped;
  dst->literal = src->literal;
  for (int a = 0; a < src->nattrs; a++) TS_CHECK(ts_hlo_instr_add_attr(dst, &src->attrs[a]));
  return TS_OK;
}

/* Outlines the group into a new computation and puts one fusion in the
 * root's place. */
static ts_status_t outline(fctx_t *f, bool input) {
  ts_hlo_module_t *m = f->m;
  ts_hlo_comp_t *c = f->c, *fc;
  ts_hlo_instr_t *root = f->members[0];
  const char *cname = fresh_comp_name(m);
  if (!cname) return TS_ERR_NOMEM;
  TS_CHECK(ts_hlo_comp_add(m, cname, &fc));
  /* Members in dependency order: the order of c's post-order. */
  int nm = f->nmembers;
  ts_hlo_instr_t **sorted = ts_arena_alloc(m->arena, sizeof *sorted * (size_t)nm);
  ts_hlo_instr_t **clone = ts_calloc((size_t)m->next_id + 1, sizeof *clone);
  ts_hlo_instr_t **outside = ts_calloc((size_t)nm * 4 + 8, sizeof *outside);
  ts_hlo_instr_t **params = ts_calloc((size_t)nm * 4 + 8, sizeof *params);
  ts_hlo_instr_t *ops[MAX_OPS];
  ts_status_t st = TS_OK;
  int ns = 0, nout = 0;
  if (!sorted || !clone || !outside || !params) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  for (int k = 0; k < f->n; k++)
    if (mark_of(f, f->order[k]) == f->cur) sorted[ns++] = (ts_hlo_instr_t *)f->order[k];
  for (int k = 0; k < ns; k++) {
    ts_hlo_instr_t *i = sorted[k];
    if (i->nops > MAX_OPS) {
      st = TS_ERR_INTERNAL;
      goto done;
    }
    for (int o = 0; o < i->nops; o++) {
      ts_hlo_instr_t *p = i->ops[o];
      if (mark_of(f, p) == f->cur) {
        ops[o] = clone[p->id];
        continue;
      }
      int q = 0;
      while (q < nout && outside[q] != p) q++;
      if (q == nout) {
        outside[nout] = p;
        char pname[32];
        snprintf(pname, sizeof pname, "param_%d", nout);
        TS_CHECK_GOTO(ts_hlo_instr_add(fc, TS_OP_PARAMETER, p->shape, NULL, 0, pname, &params[nout]), st, done);
        params[nout]->param_number = nout;
        nout++;
      }
      ops[o] = params[q];
    }
    TS_CHECK_GOTO(ts_hlo_instr_add(fc, i->op, i->shape, ops, i->nops, i->name, &clone[i->id]), st, done);
    TS_CHECK_GOTO(copy_payload(clone[i->id], i), st, done);
  }
  TS_CHECK_GOTO(ts_hlo_comp_index_params(fc), st, done);
  ts_hlo_comp_set_root(fc, clone[root->id]);

  /* The fusion, appended to c, then moved into the root's place. */
  ts_hlo_instr_t *fu;
  const char *fname = ts_arena_printf(m->arena, "%s_fusion", ts_opcode_name(root->op));
  if (!fname) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  TS_CHECK_GOTO(ts_hlo_instr_add(c, TS_OP_FUSION, root->shape, outside, nout, fname, &fu), st, done);
  fu->sharding = root->sharding;
  ts_hlo_attr_t kind = {.name = "kind", .kind = TS_ATTR_IDENT, .v.s = input ? "kInput" : "kLoop"};
  TS_CHECK_GOTO(ts_hlo_instr_add_attr(fu, &kind), st, done);
  ts_hlo_comp_t **cv = ts_arena_alloc(m->arena, sizeof *cv);
  if (!cv) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  cv[0] = fc;
  ts_hlo_attr_t calls = {.name = "calls", .kind = TS_ATTR_COMP, .v.comps = {1, cv}};
  TS_CHECK_GOTO(ts_hlo_instr_add_attr(fu, &calls), st, done);

  /* Users of the root read the fusion. */
  for (int u = 0; u < root->nusers; u++) {
    ts_hlo_instr_t *user = root->users[u];
    for (int o = 0; o < user->nops; o++)
      if (user->ops[o] == root) user->ops[o] = fu;
    TS_CHECK_GOTO(add_user(m, fu, user), st, done);
  }
  root->nusers = 0;
  if (c->root == root) ts_hlo_comp_set_root(c, fu);
  root->is_root = false;

  /* Drop the members nothing reads any more (copied cheap ones may stay),
   * consumers first; the fusion takes the root's position. */
  int w = 0, rpos = -1;
  bool *dead = ts_calloc((size_t)m->next_id + 1, sizeof *dead);
  if (!dead) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  for (int k = ns - 1; k >= 0; k--) {
    ts_hlo_instr_t *i = sorted[k];
    if (i->nusers) {
      f->mark[i->id] = -1; /* kept: not part of this group any more */
      continue;
    }
    dead[i->id] = true;
    f->group[i->id] = f->cur;
    for (int o = 0; o < i->nops; o++) drop_user(i->ops[o], i);
  }
  for (int k = 0; k < c->ninstrs; k++) {
    ts_hlo_instr_t *i = c->instrs[k];
    if (i == fu) continue;
    if (i == root) rpos = w;
    if (!dead[i->id]) c->instrs[w++] = i;
  }
  if (rpos < 0) rpos = w;
  memmove(&c->instrs[rpos + 1], &c->instrs[rpos], sizeof *c->instrs * (size_t)(w - rpos));
  c->instrs[rpos] = fu;
  c->ninstrs = w + 1;
  ts_free(dead);

  /* The fused computation goes right before its caller, so callees come
   * first in the printed module. */
  int ci = 0, fi = m->ncomps - 1;
  while (ci < m->ncomps && m->comps[ci] != c) ci++;
  if (ci < fi) {
    memmove(&m->comps[ci + 1], &m->comps[ci], sizeof *m->comps * (size_t)(fi - ci));
    m->comps[ci] = fc;
  }
  if (f->stats) {
    if (input) f->stats->input_fusions++;
    else f->stats->loop_fusions++;
    f->stats->fused_instrs += ns;
  }
done:
  ts_free(clone);
  ts_free(outside);
  ts_free(params);
  return st;
}

static ts_status_t fuse_comp(ts_hlo_module_t *m, ts_hlo_comp_t *c, ts_fusion_stats_t *stats, int min_size) {
  fctx_t f = {.m = m, .c = c, .stats = stats, .min_size = min_size};
  int ids = m->next_id + 1;
  ts_status_t st = TS_OK;
  f.order = ts_calloc((size_t)c->ninstrs + 1, sizeof *f.order);
  f.group = ts_calloc((size_t)ids, sizeof *f.group);
  f.pinned = ts_calloc((size_t)ids, sizeof *f.pinned);
  f.mark = ts_calloc((size_t)ids, sizeof *f.mark);
  f.dup = ts_calloc((size_t)ids, sizeof *f.dup);
  f.ids = ids;
  f.members = ts_calloc((size_t)c->ninstrs + 1, sizeof *f.members);
  if (!f.order || !f.group || !f.pinned || !f.mark || !f.dup || !f.members) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  TS_CHECK_GOTO(ts_hlo_comp_post_order(c, f.order), st, done);
  f.n = c->ninstrs;
  for (int k = 0; k < ids; k++) {
    f.group[k] = -1;
    f.mark[k] = -1;
  }
  for (int k = 0; k < f.n; k++) {
    const ts_hlo_instr_t *i = f.order[k];
    for (int q = 0; q < i->nctrl_preds; q++) f.pinned[i->ctrl_preds[q]->id] = true;
    if (i->nctrl_preds) f.pinned[i->id] = true;
  }
  /* Consumers first: a root takes in what only it reads. */
  int nfused = 0;
  for (int k = f.n - 1; k >= 0; k--) {
    ts_hlo_instr_t *r = (ts_hlo_instr_t *)f.order[k];
    if (r->id >= ids || f.group[r->id] >= 0 || f.pinned[r->id] || r->op == TS_OP_FUSION) continue;
    bool input = input_root(r);
    if (!input && (!loop_fusible(r) || r->op == TS_OP_CONSTANT || cheap(r))) continue;
    f.cur = ++nfused;
    f.members[0] = r;
    f.nmembers = 1;
    f.mark[r->id] = f.cur;
    f.dup[r->id] = false;
    grow(&f);
    if (counted(&f) < f.min_size) {
      for (int q = 0; q < f.nmembers; q++) f.mark[f.members[q]->id] = -1;
      continue;
    }
    TS_CHECK_GOTO(outline(&f, input), st, done);
  }
done:
  ts_free(f.order);
  ts_free(f.group);
  ts_free(f.pinned);
  ts_free(f.mark);
  ts_free(f.dup);
  ts_free(f.members);
  return st;
}

/* The computations that run as programs (not applied per element). */
static ts_status_t collect(ts_hlo_comp_t *c, ts_hlo_comp_t **list, int *n, int cap) {
  for (int k = 0; k < *n; k++)
    if (list[k] == c) return TS_OK;
  if (*n == cap) return TS_ERR_INTERNAL;
  list[(*n)++] = c;
  for (int k = 0; k < c->ninstrs; k++) {
    ts_hlo_instr_t *i = c->instrs[k];
    if (i->op != TS_OP_WHILE && i->op != TS_OP_CONDITIONAL && i->op != TS_OP_CALL) continue;
    for (int q = 0; q < i->ncalled; q++) TS_CHECK(collect(i->called[q], list, n, cap));
  }
  return TS_OK;
}

ts_status_t ts_fusion_run(ts_hlo_module_t *m, const ts_fusion_opts_t *opts, ts_fusion_stats_t *stats,
                          ts_diag_t *diag) {
  (void)diag;
  if (!m || !m->entry) return TS_ERR_INVALID_ARGUMENT;
  int min_size = opts && opts->min_size > 0 ? opts->min_size : 2;
  if (stats) memset(stats, 0, sizeof *stats);
  int cap = m->ncomps, n = 0;
  ts_hlo_comp_t **list = ts_calloc((size_t)cap + 1, sizeof *list);
  if (!list) return TS_ERR_NOMEM;
  ts_status_t st = collect(m->entry, list, &n, cap);
  for (int k = 0; k < n && st == TS_OK; k++) st = fuse_comp(m, list[k], stats, min_size);
  ts_free(list);
  return st;
}
