/* Loop and input fusion (XLA's InstructionFusion, greedy from the consumers
 * up): groups are grown from a root over operands, then each group is
 * outlined into a `%fused_computation` and replaced by one fusion. */
#include "ts_fusion.h"

#include <stdlib.h>
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

/* The whole pass: fused computations are numbered across it, and put
 * before their callers once at the end (moving each into place as it was
 * made was quadratic in the number of fusions). */
typedef struct {
  ts_hlo_module_t *m;
  int name_k;              /* the next fused_computation.N to try; 0: the bare name */
  int ncomps0;             /* m->comps before the pass */
  ts_hlo_comp_t **made;    /* fused computations in the order made */
  int *caller;             /* per made: the index in m->comps of the computation fused */
  int nmade, made_cap;
} frun_t;

/* One computation. The per-instruction arrays are indexed by id - lo over
 * the computation's ids [lo, hi) as they were before the pass: instructions
 * made later (fusions, parameters, clones) are in none. */
typedef struct {
  frun_t *run;
  ts_hlo_module_t *m;
  ts_hlo_comp_t *c;
  int ci; /* c's index in m->comps */
  int n;
  const ts_hlo_instr_t **order;
  int *pos;          /* per instruction: its index in order */
  int *group;        /* per instruction: the group it was moved into (and removed), -1 */
  bool *pinned;      /* per instruction: a control predecessor of something */
  int *mark;         /* per instruction: == cur when in the group being grown */
  bool *dup;         /* per instruction: a member some outside user also reads (copied, not moved) */
  ts_hlo_instr_t **clone;  /* per instruction: its copy in the group being outlined */
  ts_hlo_instr_t **fusion; /* per instruction: the fusion that takes its place in c (a group's root) */
  int *nlive;              /* per instruction: its users not moved into a fusion */
  int lo, hi;
  int cur;
  ts_hlo_instr_t **members; /* the group being grown, root first */
  int nmembers;
  int *sorted;              /* scratch: the members' positions in order */
  ts_fusion_stats_t *stats;
  int min_size;
} fctx_t;

static bool in_comp(const fctx_t *f, const ts_hlo_instr_t *i) { return i->id >= f->lo && i->id < f->hi; }
static int mark_of(const fctx_t *f, const ts_hlo_instr_t *i) { return in_comp(f, i) ? f->mark[i->id - f->lo] : -1; }

/* Moved into a fusion: gone from c. Users lists keep such users until the
 * computation is done (dropping each from its operands' lists as it went
 * was quadratic in a value many fusions read); nlive counts the rest. */
static bool moved_out(const fctx_t *f, const ts_hlo_instr_t *i) {
  return in_comp(f, i) && f->group[i->id - f->lo] >= 0;
}

/* Whether moving p into the group leaves no reader outside: every user is a
 * member that is itself moved, not copied. */
static bool users_in_group(fctx_t *f, const ts_hlo_instr_t *p) {
  for (int u = 0; u < p->nusers; u++) {
    const ts_hlo_instr_t *user = p->users[u];
    if (moved_out(f, user)) continue;
    if (mark_of(f, user) != f->cur || f->dup[user->id - f->lo]) return false;
  }
  return !p->is_root;
}

/* Drops the users moved out of c from x's users, in order. */
static void drop_moved_users(const fctx_t *f, ts_hlo_instr_t *x) {
  int w = 0;
  for (int u = 0; u < x->nusers; u++)
    if (!moved_out(f, x->users[u])) x->users[w++] = x->users[u];
  x->nusers = w;
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
        if (mark_of(f, p) == f->cur || !in_comp(f, p) || f->group[p->id - f->lo] >= 0 ||
            f->pinned[p->id - f->lo] || !loop_fusible(p))
          continue;
        bool moved = users_in_group(f, p);
        if (!moved && !cheap(p)) continue; /* never compute an expensive producer twice */
        f->dup[p->id - f->lo] = !moved;
        f->mark[p->id - f->lo] = f->cur;
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

/* Appends user to def's users; the caller knows it is not there yet. */
static ts_status_t add_user(ts_hlo_module_t *m, ts_hlo_instr_t *def, ts_hlo_instr_t *user) {
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


/* The first free of fused_computation, fused_computation.1, .2, ...: no
 * computation goes away during the pass, so the search goes on from where
 * the last one ended. */
static const char *fresh_comp_name(frun_t *r) {
  ts_hlo_module_t *m = r->m;
  if (r->name_k == 0) {
    r->name_k = 1;
    if (!ts_hlo_module_find_comp(m, "fused_computation")) return "fused_computation";
  }
  for (;; r->name_k++) {
    char *s = ts_arena_printf(m->arena, "fused_computation.%d", r->name_k);
    if (!s || !ts_hlo_module_find_comp(m, s)) {
      r->name_k++;
      return s;
    }
  }
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Copies attributes (called computations included) and payload. */
static ts_status_t copy_payload(ts_hlo_instr_t *dst, const ts_hlo_instr_t *src) {
  dst->async_wrapped = src->async_wrapped;
  dst->literal = src->literal;
  for (int a = 0; a < src->nattrs; a++) TS_CHECK(ts_hlo_instr_add_attr(dst, &src->attrs[a]));
  return TS_OK;
}

/* Records fc, made from caller f->c, for the final order of m->comps. */
static ts_status_t note_made(fctx_t *f, ts_hlo_comp_t *fc) {
  frun_t *r = f->run;
  if (r->nmade == r->made_cap) {
    int cap = r->made_cap ? r->made_cap * 2 : 64;
    ts_hlo_comp_t **made = ts_realloc(r->made, sizeof *made * (size_t)cap);
    if (!made) return TS_ERR_NOMEM;
    r->made = made;
    int *caller = ts_realloc(r->caller, sizeof *caller * (size_t)cap);
    if (!caller) return TS_ERR_NOMEM;
    r->caller = caller;
    r->made_cap = cap;
  }
  r->made[r->nmade] = fc;
  r->caller[r->nmade++] = f->ci;
  return TS_OK;
}

/* Outlines the group into a new computation and puts one fusion in the
 * root's place (c->instrs itself is rewritten once, after the last group). */
static ts_status_t outline(fctx_t *f, bool input) {
  ts_hlo_module_t *m = f->m;
  ts_hlo_comp_t *c = f->c, *fc;
  ts_hlo_instr_t *root = f->members[0];
  const char *cname = fresh_comp_name(f->run);
  if (!cname) return TS_ERR_NOMEM;
  TS_CHECK(ts_hlo_comp_add(m, cname, &fc));
  TS_CHECK(note_made(f, fc));
  /* Members in dependency order: the order of c's post-order. */
  int nm = f->nmembers;
  ts_hlo_instr_t **sorted = ts_arena_alloc(m->arena, sizeof *sorted * (size_t)nm);
  ts_hlo_instr_t **clone = f->clone;
  ts_hlo_instr_t **outside = ts_calloc((size_t)nm * 4 + 8, sizeof *outside);
  ts_hlo_instr_t **params = ts_calloc((size_t)nm * 4 + 8, sizeof *params);
  int nops = 0, nremap = 0;
  for (int k = 0; k < nm; k++) nops += f->members[k]->nops;
  ts_hlo_instr_t **remap = ts_calloc((size_t)nops + 1, sizeof *remap); /* moved members' new operands, in order */
  ts_hlo_instr_t *ops[MAX_OPS];
  ts_sharding_t *fu_sharding = NULL;
  ts_status_t st = TS_OK;
  int ns = nm, nout = 0;
  if (!sorted || !outside || !params || !remap) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  for (int k = 0; k < nm; k++) f->sorted[k] = f->pos[f->members[k]->id - f->lo];
  qsort(f->sorted, (size_t)nm, sizeof *f->sorted, cmp_int);
  for (int k = 0; k < nm; k++) sorted[k] = (ts_hlo_instr_t *)f->order[f->sorted[k]];
  for (int k = 0; k < ns; k++) {
    ts_hlo_instr_t *i = sorted[k];
    if (i->nops > MAX_OPS) {
      st = TS_ERR_INTERNAL;
      goto done;
    }
    for (int o = 0; o < i->nops; o++) {
      ts_hlo_instr_t *p = i->ops[o];
      if (mark_of(f, p) == f->cur) {
        ops[o] = clone[p->id - f->lo]; /* p itself when moved */
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
    ts_hlo_instr_t **cl = &clone[i->id - f->lo];
    if (f->dup[i->id - f->lo]) { /* an outside user reads it too: a copy */
      TS_CHECK_GOTO(ts_hlo_instr_add(fc, i->op, i->shape, ops, i->nops, i->name, cl), st, done);
      TS_CHECK_GOTO(copy_payload(*cl, i), st, done);
      continue;
    }
    /* Moved, not copied: a clone cost a name, attributes and memory per
     * fused instruction, most of the pass's time on big modules. Members
     * moved before it already list i as a user; parameters and copies are
     * new to it (an operand read twice lists it once). */
    for (int o = 0; o < i->nops; o++) {
      ts_hlo_instr_t *d = ops[o];
      if (d != i->ops[o] && !(d->nusers > 0 && d->users[d->nusers - 1] == i)) TS_CHECK_GOTO(add_user(m, d, i), st, done);
    }
    memcpy(&remap[nremap], ops, sizeof *ops * (size_t)i->nops); /* i->ops changes after the drop below */
    nremap += i->nops;
    drop_moved_users(f, i); /* readers outlined by an earlier group */
    if (i == root) fu_sharding = i->sharding;
    i->sharding = NULL;
    TS_CHECK_GOTO(ts_hlo_instr_move(i, fc), st, done);
    *cl = i;
  }
  TS_CHECK_GOTO(ts_hlo_comp_index_params(fc), st, done);

  /* The fusion, appended to c, then moved into the root's place. */
  ts_hlo_instr_t *fu;
  const char *fname = ts_arena_printf(m->arena, "%s_fusion", ts_opcode_name(root->op));
  if (!fname) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  TS_CHECK_GOTO(ts_hlo_instr_add(c, TS_OP_FUSION, root->shape, outside, nout, fname, &fu), st, done);
  for (int q = 0; q < nout; q++)
    if (in_comp(f, outside[q])) f->nlive[outside[q]->id - f->lo]++;
  fu->sharding = fu_sharding;
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

  /* Users of the root read the fusion (root's users are unique, fu is new). */
  for (int u = 0; u < root->nusers; u++) {
    ts_hlo_instr_t *user = root->users[u];
    if (moved_out(f, user)) continue;
    for (int o = 0; o < user->nops; o++)
      if (user->ops[o] == root) user->ops[o] = fu;
    TS_CHECK_GOTO(add_user(m, fu, user), st, done);
  }
  root->nusers = 0;
  f->nlive[root->id - f->lo] = 0;
  if (c->root == root) ts_hlo_comp_set_root(c, fu);
  ts_hlo_comp_set_root(fc, root);

  /* Drop the members nothing reads any more (copied cheap ones may stay),
   * consumers first; the fusion takes the root's position. */
  for (int k = ns - 1; k >= 0; k--) {
    ts_hlo_instr_t *i = sorted[k];
    if (f->nlive[i->id - f->lo]) {
      f->mark[i->id - f->lo] = -1; /* kept: not part of this group any more */
      continue;
    }
    f->group[i->id - f->lo] = f->cur;
    for (int o = 0; o < i->nops; o++) {
      const ts_hlo_instr_t *p = i->ops[o];
      bool again = false; /* an operand read twice has i among its users once */
      for (int q = 0; q < o && !again; q++) again = i->ops[q] == p;
      if (!again && in_comp(f, p)) f->nlive[p->id - f->lo]--;
    }
  }
  for (int k = 0, at = 0; k < ns; k++) {
    ts_hlo_instr_t *i = sorted[k];
    if (i->parent != fc || i->nops == 0) continue; /* (ops is NULL then) */
    memcpy(i->ops, &remap[at], sizeof *i->ops * (size_t)i->nops);
    at += i->nops;
  }
  f->fusion[root->id - f->lo] = fu;
  if (f->stats) {
    if (input) f->stats->input_fusions++;
    else f->stats->loop_fusions++;
    f->stats->fused_instrs += ns;
  }
done:
  ts_free(outside);
  ts_free(params);
  ts_free(remap);
  return st;
}

/* c->instrs after the last group: each group's root replaced by its fusion,
 * the members moved into fusions gone, the fusions appended by outline
 * dropped from the end. */
static void rewrite_instrs(fctx_t *f) {
  ts_hlo_comp_t *c = f->c;
  int w = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    ts_hlo_instr_t *i = c->instrs[k];
    if (!in_comp(f, i)) continue; /* a fusion: placed at its root */
    if (f->fusion[i->id - f->lo]) c->instrs[w++] = f->fusion[i->id - f->lo];
    else if (f->group[i->id - f->lo] < 0) c->instrs[w++] = i;
  }
  c->ninstrs = w;
  for (int k = 0; k < w; k++) drop_moved_users(f, c->instrs[k]);
}

static ts_status_t fuse_comp(frun_t *run, ts_hlo_comp_t *c, ts_fusion_stats_t *stats, int min_size) {
  ts_hlo_module_t *m = run->m;
  fctx_t f = {.run = run, .m = m, .c = c, .stats = stats, .min_size = min_size};
  int made0 = run->nmade;
  while (f.ci < run->ncomps0 && m->comps[f.ci] != c) f.ci++;
  ts_hlo_comp_id_range(c, &f.lo, &f.hi);
  size_t ids = (size_t)(f.hi - f.lo) + 1;
  ts_status_t st = TS_OK;
  f.order = ts_calloc((size_t)c->ninstrs + 1, sizeof *f.order);
  f.pos = ts_calloc(ids, sizeof *f.pos);
  f.group = ts_calloc(ids, sizeof *f.group);
  f.pinned = ts_calloc(ids, sizeof *f.pinned);
  f.mark = ts_calloc(ids, sizeof *f.mark);
  f.dup = ts_calloc(ids, sizeof *f.dup);
  f.clone = ts_calloc(ids, sizeof *f.clone);
  f.fusion = ts_calloc(ids, sizeof *f.fusion);
  f.nlive = ts_calloc(ids, sizeof *f.nlive);
  f.members = ts_calloc((size_t)c->ninstrs + 1, sizeof *f.members);
  f.sorted = ts_calloc((size_t)c->ninstrs + 1, sizeof *f.sorted);
  if (!f.order || !f.pos || !f.group || !f.pinned || !f.mark || !f.dup || !f.clone || !f.fusion || !f.nlive || !f.members ||
      !f.sorted) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  TS_CHECK_GOTO(ts_hlo_comp_post_order(c, f.order), st, done);
  f.n = c->ninstrs;
  for (size_t k = 0; k < ids; k++) {
    f.group[k] = -1;
    f.mark[k] = -1;
  }
  for (int k = 0; k < f.n; k++) {
    const ts_hlo_instr_t *i = f.order[k];
    f.pos[i->id - f.lo] = k;
    f.nlive[i->id - f.lo] = i->nusers;
    for (int q = 0; q < i->nctrl_preds; q++)
      if (in_comp(&f, i->ctrl_preds[q])) f.pinned[i->ctrl_preds[q]->id - f.lo] = true;
    if (i->nctrl_preds) f.pinned[i->id - f.lo] = true;
  }
  /* Consumers first: a root takes in what only it reads. */
  int nfused = 0;
  for (int k = f.n - 1; k >= 0; k--) {
    ts_hlo_instr_t *r = (ts_hlo_instr_t *)f.order[k];
    if (!in_comp(&f, r) || f.group[r->id - f.lo] >= 0 || f.pinned[r->id - f.lo] || r->op == TS_OP_FUSION) continue;
    bool input = input_root(r);
    if (!input && (!loop_fusible(r) || r->op == TS_OP_CONSTANT || cheap(r))) continue;
    f.cur = ++nfused;
    f.members[0] = r;
    f.nmembers = 1;
    f.mark[r->id - f.lo] = f.cur;
    f.dup[r->id - f.lo] = false;
    grow(&f);
    if (counted(&f) < f.min_size) {
      for (int q = 0; q < f.nmembers; q++) f.mark[f.members[q]->id - f.lo] = -1;
      continue;
    }
    TS_CHECK_GOTO(outline(&f, input), st, done);
  }
done:
  if (f.group && f.fusion) rewrite_instrs(&f);
  /* Moved members keep c's ids until here: compact ids per fused computation. */
  for (int k = made0; k < run->nmade; k++) ts_hlo_comp_renumber(run->made[k]);
  ts_free(f.order);
  ts_free(f.pos);
  ts_free(f.group);
  ts_free(f.pinned);
  ts_free(f.mark);
  ts_free(f.dup);
  ts_free(f.clone);
  ts_free(f.fusion);
  ts_free(f.nlive);
  ts_free(f.members);
  ts_free(f.sorted);
  return st;
}

/* Each fused computation right before the computation it was made from, in
 * the order made, so that callees come first in the printed module. */
static ts_status_t place_made(frun_t *r) {
  ts_hlo_module_t *m = r->m;
  if (!r->nmade) return TS_OK;
  int n0 = r->ncomps0;
  int *start = ts_calloc((size_t)n0 + 2, sizeof *start);
  ts_hlo_comp_t **made = ts_calloc((size_t)r->nmade + 1, sizeof *made);
  ts_hlo_comp_t **all = ts_calloc((size_t)m->ncomps + 1, sizeof *all);
  ts_status_t st = TS_OK;
  if (!start || !made || !all) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  /* A stable counting sort by caller; a caller not found (index n0) keeps
   * its fusions at the end. */
  for (int k = 0; k < r->nmade; k++) start[r->caller[k] + 1]++;
  for (int c = 0; c < n0 + 1; c++) start[c + 1] += start[c];
  for (int k = 0; k < r->nmade; k++) made[start[r->caller[k]]++] = r->made[k];
  /* start[c] is now the end of c's run, which begins where c - 1's ends */
  int w = 0;
  for (int c = 0, from = 0; c <= n0; c++) {
    for (int k = from; k < start[c]; k++) all[w++] = made[k];
    from = start[c];
    if (c < n0) all[w++] = m->comps[c];
  }
  for (int c = n0 + r->nmade; c < m->ncomps; c++) all[w++] = m->comps[c]; /* none: the pass makes no others */
  memcpy(m->comps, all, sizeof *all * (size_t)w);
done:
  ts_free(start);
  ts_free(made);
  ts_free(all);
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
  frun_t run = {.m = m, .ncomps0 = m->ncomps};
  ts_status_t st = collect(m->entry, list, &n, cap);
  for (int k = 0; k < n && st == TS_OK; k++) st = fuse_comp(&run, list[k], stats, min_size);
  ts_status_t pst = place_made(&run);
  if (st == TS_OK) st = pst;
  ts_free(list);
  ts_free(run.made);
  ts_free(run.caller);
  return st;
}
