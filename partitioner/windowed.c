/* Windowed einsum (XLA's collective matmul): a dot whose operand would be
 * all-gathered, or whose partial results would be reduce-scattered, runs
 * instead as a while loop of partial dots over blocks, the blocks (or the
 * partial sums) moving one device round a ring by collective-permute each
 * step. A step's transfer can overlap the next step's dot, and no device
 * ever holds the gathered operand or the whole partial result.
 *
 * Ring: the g devices of a group, at positions q = 0..g-1. Gathering
 * operand blocks, at step k device q holds block (q + k) mod g and passes
 * it to q - 1. Scattering partial sums, at step k device q adds its
 * product for output block (q + k) mod g to the sum it received and passes
 * it to q - 1; after g steps the sum of block q has visited every device
 * and arrives at q.
 * Variants, after XLA's options: two steps per loop iteration
 * (unroll_windowed_einsum), and two rings running opposite ways for half
 * the steps each (bidirectional_windowed_einsum); both need an even g. */
#include "partitioner_internal.h"

#include <stdio.h>
#include <string.h>

#define MAX_STATE 6

/* XLA's SpmdPartitionerOptions default, in MiB. */
#define DEFAULT_THRESHOLD_MIB 256

/* ---- a while loop under construction ------------------------------------ */

/* State elements are set outside (init) before loop_begin; inside the body
 * cur[] are their current values, replaced as the body computes new ones;
 * after loop_end, loop_result(k) is element k of the loop's result. The
 * step counter k (s32) is an extra last element. */
typedef struct {
  part_t *p;
  const char *name;
  int n;
  ts_hlo_instr_t *init[MAX_STATE + 2], *cur[MAX_STATE + 1];
  ts_hlo_instr_t *k, *w;
  ts_hlo_comp_t *outer, *body;
  ts_hlo_instr_t *outer_pid;
} loop_t;

static ts_hlo_instr_t *s32(part_t *p, int64_t v) { return ts_part_const_s32(p, -1, &v); }

static ts_hlo_instr_t *binop(part_t *p, ts_opcode_t op, ts_hlo_instr_t *a, ts_hlo_instr_t *b) {
  return a && b ? ts_part_add(p, op, a->shape, (ts_hlo_instr_t *[]){a, b}, 2, ts_opcode_name(op)) : NULL;
}

static ts_hlo_instr_t *gte(part_t *p, ts_hlo_instr_t *t, int k) {
  ts_hlo_instr_t *g = t ? ts_part_add(p, TS_OP_GET_TUPLE_ELEMENT, t->shape->tuple[k], &t, 1, "get-tuple-element")
                        : NULL;
  ts_part_attr_int(p, g, "index", k);
  return g;
}

static ts_hlo_instr_t *tuple(part_t *p, int n, ts_hlo_instr_t **el) {
  ts_shape_t *sh[MAX_STATE + 1];
  for (int k = 0; k < n; k++) {
    if (!el[k]) return NULL;
    sh[k] = (ts_shape_t *)el[k]->shape;
  }
  ts_shape_t *t = ts_hlo_shape_tuple(p->dst, n, sh);
  if (!t && p->st == TS_OK) p->st = TS_ERR_NOMEM;
  return ts_part_add(p, TS_OP_TUPLE, t, el, n, "tuple");
}

static ts_hlo_comp_t *new_comp(part_t *p, const char *base) {
  char name[512];
  snprintf(name, sizeof name, "%s", base);
  for (int k = 1; ts_hlo_module_find_comp(p->dst, name); k++) snprintf(name, sizeof name, "%s.%d", base, k);
  ts_hlo_comp_t *c = NULL;
  if (p->st == TS_OK && (p->st = ts_hlo_comp_add(p->dst, name, &c)) != TS_OK) return NULL;
  return c;
}

/* Enters the body: a parameter holding init[0..n) and the counter. */
static bool loop_begin(loop_t *L) {
  part_t *p = L->p;
  L->init[L->n] = s32(p, 0);
  ts_hlo_instr_t *t0 = tuple(p, L->n + 1, L->init);
  char base[512];
  snprintf(base, sizeof base, "%s.windowed_body", L->name);
  L->body = t0 ? new_comp(p, base) : NULL;
  if (!L->body) return false;
  L->outer = p->cur;
  L->outer_pid = p->pid;
  L->init[L->n + 1] = t0; /* kept for loop_end */
  p->cur = L->body;
  p->pid = NULL;
  ts_hlo_instr_t *param = ts_part_add(p, TS_OP_PARAMETER, t0->shape, NULL, 0, "state");
  if (param) param->param_number = 0;
  for (int k = 0; k <= L->n; k++) L->cur[k] = gte(p, param, k);
  L->k = L->cur[L->n];
  return p->st == TS_OK;
}

/* Leaves the body (counter advanced by `stride`), builds the condition
 * k < steps and the while, and takes its results apart. */
static bool loop_end(loop_t *L, int64_t steps, int64_t stride) {
  part_t *p = L->p;
  L->cur[L->n] = binop(p, TS_OP_ADD, L->k, s32(p, stride));
  ts_hlo_instr_t *root = tuple(p, L->n + 1, L->cur);
  if (root) ts_hlo_comp_set_root(L->body, root);
  if (p->st == TS_OK && ts_hlo_comp_index_params(L->body) != TS_OK) p->st = TS_ERR_INTERNAL;
  ts_hlo_instr_t *t0 = L->init[L->n + 1];
  char base[512];
  snprintf(base, sizeof base, "%s.windowed_cond", L->name);
  ts_hlo_comp_t *cond = new_comp(p, base);
  if (cond) {
    p->cur = cond;
    p->pid = NULL;
    ts_hlo_instr_t *param = ts_part_add(p, TS_OP_PARAMETER, t0->shape, NULL, 0, "state");
    if (param) param->param_number = 0;
    ts_hlo_instr_t *k = gte(p, param, L->n);
    ts_hlo_instr_t *lt = k ? ts_part_add(p, TS_OP_COMPARE, ts_part_shape(p, TS_PRED, 0, NULL),
                                         (ts_hlo_instr_t *[]){k, s32(p, steps)}, 2, "compare")
                           : NULL;
    ts_part_attr_ident(p, lt, "direction", "LT");
    if (lt) ts_hlo_comp_set_root(cond, lt);
    if (p->st == TS_OK && ts_hlo_comp_index_params(cond) != TS_OK) p->st = TS_ERR_INTERNAL;
  }
  p->cur = L->outer;
  p->pid = L->outer_pid;
  ts_hlo_instr_t *w = cond ? ts_part_add(p, TS_OP_WHILE, t0->shape, &t0, 1, "while") : NULL;
  ts_part_attr_comp(p, w, "condition", cond);
  ts_part_attr_comp(p, w, "body", L->body);
  L->w = w;
  return p->st == TS_OK && w;
}

static ts_hlo_instr_t *loop_result(loop_t *L, int k) { return gte(L->p, L->w, k); }

/* ---- index arithmetic and block moves ----------------------------------- */

/* (q + sign * (k + dk) + off) mod g, non-negative for k + dk < g. */
static ts_hlo_instr_t *ring_index(part_t *p, ts_hlo_instr_t *q, ts_hlo_instr_t *k, int sign, int64_t dk,
                                  int64_t off, int64_t g) {
  off = ((off % g) + g) % g;
  ts_hlo_instr_t *x;
  if (sign > 0) x = binop(p, TS_OP_ADD, binop(p, TS_OP_ADD, q, k), s32(p, off + dk));
  else x = binop(p, TS_OP_SUBTRACT, binop(p, TS_OP_ADD, q, s32(p, off + g - dk)), k);
  return binop(p, TS_OP_REMAINDER, x, s32(p, g));
}

/* Source/target pairs sending member m of each group to member m + delta. */
static int64_t *ring_pairs(part_t *p, int64_t ng, int64_t g, const int64_t *groups, int64_t delta) {
  int64_t *pairs = ts_arena_alloc(p->a, sizeof *pairs * (size_t)(2 * ng * g));
  if (!pairs) {
    p->st = TS_ERR_NOMEM;
    return NULL;
  }
  for (int64_t gi = 0; gi < ng; gi++)
    for (int64_t m = 0; m < g; m++) {
      pairs[2 * (gi * g + m)] = groups[gi * g + m];
      pairs[2 * (gi * g + m) + 1] = groups[gi * g + ((m + delta) % g + g) % g];
    }
  return pairs;
}

/* x's block of `size` elements at `start` (a scalar) along dim d. */
static ts_hlo_instr_t *slice_dim(part_t *p, ts_hlo_instr_t *x, int d, ts_hlo_instr_t *start, int64_t size) {
  if (!x || !start) return NULL;
  int r = x->shape->rank;
  ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 1];
  int64_t dims[TS_PART_MAX_RANK];
  ops[0] = x;
  ts_hlo_instr_t *zero = s32(p, 0);
  for (int e = 0; e < r; e++) {
    ops[1 + e] = e == d ? start : zero;
    dims[e] = e == d ? size : x->shape->dims[e];
  }
  ts_hlo_instr_t *ds = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ts_part_shape(p, x->shape->elem, r, dims), ops, r + 1,
                                   "dynamic-slice");
  ts_part_attr_ints(p, ds, "dynamic_slice_sizes", r, dims);
  return ds;
}

/* acc with upd written at `start` along dim d. */
static ts_hlo_instr_t *update_dim(part_t *p, ts_hlo_instr_t *acc, ts_hlo_instr_t *upd, int d, ts_hlo_instr_t *start) {
  if (!acc || !upd || !start) return NULL;
  int r = acc->shape->rank;
  ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 2];
  ops[0] = acc;
  ops[1] = upd;
  ts_hlo_instr_t *zero = s32(p, 0);
  for (int e = 0; e < r; e++) ops[2 + e] = e == d ? start : zero;
  return ts_part_add(p, TS_OP_DYNAMIC_UPDATE_SLICE, acc->shape, ops, r + 2, "dynamic-update-slice");
}

static ts_hlo_instr_t *zeros(part_t *p, const ts_shape_t *s) {
  return ts_part_broadcast_scalar(p, ts_part_zero(p, s->elem), s->rank, s->dims);
}

static const ts_shape_t *with_dim(part_t *p, const ts_shape_t *s, int d, int64_t size) {
  int64_t dims[TS_PART_MAX_RANK];
  for (int e = 0; e < s->rank; e++) dims[e] = e == d ? size : s->dims[e];
  return ts_part_shape(p, s->elem, s->rank, dims);
}

/* The operand dim of `side` that is space dim t, or -1. */
static int operand_dim(const dot_space_t *sp, int side, int t) {
  const int64_t *map = side ? sp->rmap : sp->lmap;
  for (int d = 0; d < (side ? sp->rr : sp->lr); d++)
    if (map[d] == t) return d;
  return -1;
}

/* The table of each device's position in its group (groups: ng x g). */
static int64_t *positions(part_t *p, int64_t ng, int64_t g, const int64_t *groups) {
  int64_t *q = ts_arena_alloc(p->a, sizeof *q * (size_t)p->n);
  if (!q) {
    p->st = TS_ERR_NOMEM;
    return NULL;
  }
  for (int64_t k = 0; k < ng * g; k++) q[groups[k]] = k % g;
  return q;
}

static int64_t threshold_bytes(const part_t *p) {
  int64_t mib = p->opts.threshold_for_windowed_einsum_mib;
  return (mib < 0 ? DEFAULT_THRESHOLD_MIB : mib) * 1024 * 1024;
}

/* ---- gathering an operand block by block -------------------------------- */

typedef struct {
  part_t *p;
  const ts_hlo_instr_t *i;
  const dot_space_t *sp;
  int side;                     /* the windowed operand */
  int t;                        /* space dim of its blocks */
  int64_t c;                    /* block size along t */
  const ts_shape_t *acc_shape;  /* the (partial) result, local */
} gather_t;

/* acc plus block j's part of the dot: the other operand's matching slice
 * (contracting or batch dim) times the block, summed in (contracting) or
 * written at block j's place (batch or free dim). */
static ts_hlo_instr_t *gather_step(gather_t *G, ts_hlo_instr_t *acc, ts_hlo_instr_t *other, ts_hlo_instr_t *blk,
                                   ts_hlo_instr_t *j) {
  part_t *p = G->p;
  const dot_space_t *sp = G->sp;
  ts_hlo_instr_t *start = binop(p, TS_OP_MULTIPLY, j, s32(p, G->c));
  int od = operand_dim(sp, 1 - G->side, G->t);
  if (od >= 0) other = slice_dim(p, other, od, start, G->c);
  ts_hlo_instr_t *ops[2];
  ops[G->side] = blk;
  ops[1 - G->side] = other;
  bool contracting = G->t >= sp->nout;
  const ts_shape_t *shape = contracting ? G->acc_shape : with_dim(p, G->acc_shape, G->t, G->c);
  ts_hlo_instr_t *d = ts_part_emit_like(p, G->i, ops, shape);
  return contracting ? binop(p, TS_OP_ADD, acc, d) : update_dim(p, acc, d, G->t, start);
}

/* How a plan would run as a loop (probe_* fill it in, emitting nothing;
 * emit_* build the loop from it). */
typedef struct {
  bool gather;         /* gather loop (else scatter loop) */
  int side;            /* gather: the windowed operand */
  ts_reshard_t r;      /* gather: its all-gather */
  int64_t g, ng;       /* ring size, number of rings */
  int t;               /* scatter: the output dim the sums are split on */
  int64_t *ordered;    /* scatter: ring members in block order */
  bool bidir, unroll;  /* the variant the options ask for */
} window_t;

static void variant(const part_t *p, window_t *w) {
  w->bidir = p->opts.bidirectional_windowed_einsum && w->g % 2 == 0;
  w->unroll = !w->bidir && p->opts.unroll_windowed_einsum && w->g % 2 == 0;
}

/* Whether the plan all-gathers one operand along one dim over whole groups
 * while the other stays where it is: it can loop over its blocks instead. */
static bool probe_gather(part_t *p, const ts_hlo_instr_t *i, const dot_plan_t *pl, window_t *win) {
  for (int side = 0; side < 2; side++) {
    const ts_hlo_instr_t *w = i->ops[side], *o = i->ops[1 - side];
    const ts_sharding_value_t *F = p->sh[w->id], *T = side ? pl->rs : pl->ls, *OT = side ? pl->ls : pl->rs;
    if (!F || F->kind != TS_SHARD_TILED || !T || (int64_t)ts_shape_storage_bytes(w->shape) < threshold_bytes(p)) continue;
    if (ts_part_reshard_bytes(p, o->shape, p->sh[o->id], OT) != 0) continue;
    bool even = true;
    for (int d = 0; d < w->shape->rank; d++) even &= w->shape->dims[d] % F->dims[d] == 0;
    ts_reshard_t r;
    if (!even || ts_sharding_reshard(p->a, F, T, w->shape, &r) != TS_OK || r.kind != TS_RESHARD_ALL_GATHER)
      continue;
    int64_t g = r.group_size;
    if (g < 2 || F->dims[r.dim] != g || (T->kind == TS_SHARD_TILED && T->dims[r.dim] != 1)) continue;
    /* Another dot of the same operand would gather it again (XLA's "no
     * double all-gather"): gather once for both instead. */
    bool shared = false;
    for (int u = 0; u < w->nusers; u++) shared |= w->users[u] != i && w->users[u]->op == TS_OP_DOT;
    if (shared) continue;
    *win = (window_t){.gather = true, .side = side, .r = r, .g = g, .ng = r.ngroups};
    variant(p, win);
    return true;
  }
  return false;
}

static bool emit_gather(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const dot_plan_t *pl,
                        const ts_sharding_value_t *s, const window_t *win) {
  int side = win->side;
  const ts_hlo_instr_t *w = i->ops[side];
  const ts_sharding_value_t *OT = side ? pl->ls : pl->rs;
  const ts_reshard_t r = win->r;
  int64_t g = win->g;
  bool bidir = win->bidir, unroll = win->unroll;
  gather_t G = {p, i, sp, side, (int)(side ? sp->rmap : sp->lmap)[r.dim], w->shape->dims[r.dim] / g,
                ts_part_local_shape(p, i->shape, pl->ps)};
  int64_t *q = positions(p, r.ngroups, g, r.groups);
  int64_t *down = ring_pairs(p, r.ngroups, g, r.groups, -1), *up = ring_pairs(p, r.ngroups, g, r.groups, 1);
  if (!q || !down || !up || !G.acc_shape) return p->st != TS_OK;
  loop_t L = {.p = p, .name = i->name, .n = bidir ? 4 : 3};
  L.init[0] = ts_part_operand(p, i, 1 - side, OT);
  L.init[1] = p->val[w->id];
  L.init[2] = zeros(p, G.acc_shape);
  if (bidir) L.init[3] = ts_part_permute(p, L.init[1], g * r.ngroups, up); /* block q - 1 */
  if (!loop_begin(&L)) return p->st != TS_OK;
  ts_hlo_instr_t *pos = ts_part_table_lookup(p, q), *other = L.cur[0], *acc = L.cur[2];
  ts_hlo_instr_t *blk = L.cur[1], *blk2 = bidir ? L.cur[3] : NULL;
  for (int step = 0; step < (unroll ? 2 : 1); step++) {
    acc = gather_step(&G, acc, other, blk, ring_index(p, pos, L.k, 1, step, 0, g));
    blk = ts_part_permute(p, blk, g * r.ngroups, down);
  }
  if (bidir) {
    acc = gather_step(&G, acc, other, blk2, ring_index(p, pos, L.k, -1, 0, -1, g));
    L.cur[3] = ts_part_permute(p, blk2, g * r.ngroups, up);
  }
  L.cur[1] = blk;
  L.cur[2] = acc;
  if (!loop_end(&L, bidir ? g / 2 : g, unroll ? 2 : 1)) return p->st != TS_OK;
  ts_hlo_instr_t *v = loop_result(&L, 2);
  if (pl->partial) {
    bool mask[2 * TS_PART_MAX_RANK] = {false};
    for (int c = sp->nout; c < sp->rank; c++) mask[c] = true;
    int64_t ng, gs, *groups;
    ts_part_groups_over_dims(p, pl->I, mask, &ng, &gs, &groups);
    if (!groups) return p->st != TS_OK;
    v = ts_part_sum_partials(p, v, i->shape, pl->ps, ng, gs, groups, ts_part_sum_comp(p, i->shape->elem), s);
  } else {
    v = ts_part_reshard(p, v, i->shape, pl->ps, s);
  }
  ts_part_set(p, i, v, s);
  return true;
}

/* ---- scattering partial sums block by block ----------------------------- */

typedef struct {
  part_t *p;
  const ts_hlo_instr_t *i;
  const dot_space_t *sp;
  int t;                        /* the output dim s splits */
  int64_t c;                    /* block size along t */
  const ts_shape_t *blk_shape;  /* one block of the result, local */
} scatter_t;

/* This device's product for output block j: the operands sliced to it. */
static ts_hlo_instr_t *scatter_dot(scatter_t *S, ts_hlo_instr_t *const *ops, ts_hlo_instr_t *j) {
  part_t *p = S->p;
  ts_hlo_instr_t *start = binop(p, TS_OP_MULTIPLY, j, s32(p, S->c)), *sl[2];
  for (int side = 0; side < 2; side++) {
    int od = operand_dim(S->sp, side, S->t);
    sl[side] = od >= 0 ? slice_dim(p, ops[side], od, start, S->c) : ops[side];
  }
  return ts_part_emit_like(p, S->i, sl, S->blk_shape);
}

/* Whether the plan sums partial results over groups that split the
 * result's tiles further on one dim (a reduce-scatter): it can pass
 * partial sums round instead. */
static bool probe_scatter(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const dot_plan_t *pl,
                          const ts_sharding_value_t *s, window_t *win) {
  if (!pl->partial || (int64_t)ts_shape_storage_bytes(i->shape) < threshold_bytes(p)) return false;
  bool mask[2 * TS_PART_MAX_RANK] = {false};
  for (int c = sp->nout; c < sp->rank; c++) mask[c] = true;
  int64_t ng, g, *groups, *ordered;
  int t;
  ts_part_groups_over_dims(p, pl->I, mask, &ng, &g, &groups);
  if (!groups || g < 2 || !ts_part_scatter_order(p, i->shape, pl->ps, ng, g, groups, s, true, &t, &ordered))
    return false;
  *win = (window_t){.gather = false, .g = g, .ng = ng, .t = t, .ordered = ordered};
  variant(p, win);
  return true;
}

static bool emit_scatter(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const dot_plan_t *pl,
                         const ts_sharding_value_t *s, const window_t *win) {
  int64_t ng = win->ng, g = win->g, *ordered = win->ordered;
  int t = win->t;
  const ts_shape_t *ps_local = ts_part_local_shape(p, i->shape, pl->ps);
  if (!ps_local) return p->st != TS_OK;
  int64_t c = (ps_local->dims[t] + g - 1) / g;
  bool bidir = win->bidir, unroll = win->unroll;
  scatter_t S = {p, i, sp, t, c, with_dim(p, ps_local, t, c)};
  int64_t *q = positions(p, ng, g, ordered);
  int64_t *down = ring_pairs(p, ng, g, ordered, -1), *up = ring_pairs(p, ng, g, ordered, 1);
  if (!q || !down || !up || !S.blk_shape) return p->st != TS_OK;
  loop_t L = {.p = p, .name = i->name, .n = bidir || unroll ? 4 : 3};
  for (int side = 0; side < 2; side++) {
    ts_hlo_instr_t *x = ts_part_operand(p, i, side, side ? pl->rs : pl->ls);
    int od = operand_dim(sp, side, t);
    if (x && od >= 0 && x->shape->dims[od] < g * c) { /* uneven: the last blocks run past the end */
      int64_t hi[TS_PART_MAX_RANK] = {0};
      hi[od] = g * c - x->shape->dims[od];
      x = ts_part_pad(p, x, hi);
    }
    L.init[side] = x;
  }
  L.init[2] = zeros(p, S.blk_shape);
  if (bidir || unroll) L.init[3] = zeros(p, S.blk_shape);
  if (!loop_begin(&L)) return p->st != TS_OK;
  ts_hlo_instr_t *pos = ts_part_table_lookup(p, q), *acc = L.cur[2];
  if (bidir || unroll) {
    /* Two sums per block, each over half the ring, g/2 steps. Ring a (to
     * q - 1) adds the products of devices q + 1 .. q + g/2 for the final
     * owner q and ends there. Bidirectional: ring b (to q + 1) adds those
     * of q - g/2 + 1 .. q and ends one device past the owner; unrolled:
     * ring b (to q - 1) adds those of q + g/2 + 1 .. q and ends g/2 + 1
     * devices before it. A last collective-permute brings b home. */
    int64_t h = g / 2;
    acc = binop(p, TS_OP_ADD, acc, scatter_dot(&S, L.cur, ring_index(p, pos, L.k, 1, 0, h, g)));
    L.cur[2] = ts_part_permute(p, acc, g * ng, down);
    ts_hlo_instr_t *jb = bidir ? ring_index(p, pos, L.k, -1, 0, h - 1, g) : ring_index(p, pos, L.k, 1, 0, 0, g);
    ts_hlo_instr_t *acc2 = binop(p, TS_OP_ADD, L.cur[3], scatter_dot(&S, L.cur, jb));
    L.cur[3] = ts_part_permute(p, acc2, g * ng, bidir ? up : down);
  } else {
    acc = binop(p, TS_OP_ADD, acc, scatter_dot(&S, L.cur, ring_index(p, pos, L.k, 1, 0, 0, g)));
    L.cur[2] = ts_part_permute(p, acc, g * ng, down);
  }
  if (!loop_end(&L, bidir || unroll ? g / 2 : g, 1)) return p->st != TS_OK;
  ts_hlo_instr_t *v = loop_result(&L, 2);
  if (bidir || unroll) {
    int64_t *home = bidir ? down : ring_pairs(p, ng, g, ordered, g / 2);
    v = binop(p, TS_OP_ADD, v, ts_part_permute(p, loop_result(&L, 3), g * ng, home));
  }
  ts_part_set(p, i, v, s);
  return true;
}

/* ---- the time model (choose_faster_windowed_einsum_over_mem) ----------- */

/* With choose_faster_windowed_einsum_over_mem XLA weighs each way to run a
 * dot by its estimated time (compute plus communication) rather than by
 * the memory it needs. Here, a nominal device: dots at NOMINAL_FLOP_RATE,
 * collectives at NOMINAL_LINK_RATE per direction plus NOMINAL_LATENCY each.
 * Outside a loop nothing overlaps: a plan costs its dot plus each of its
 * collectives (the byte counts of ts_part_reshard_bytes, one collective
 * per resharded value or sum). A windowed loop of n steps costs
 * n x max(dot / n, one step's collective-permutes): each step's transfer
 * overlaps a partial dot. The figures rank plans; they predict no machine
 * (costmodel/ does that, for the runtime). */
#define NOMINAL_FLOP_RATE 1e14 /* FLOP/s per device */
#define NOMINAL_LINK_RATE 1e11 /* B/s per device, each direction */
#define NOMINAL_LATENCY 1e-5   /* s per collective, and per loop step */

static double transfer_seconds(int64_t bytes) { return bytes > 0 ? bytes / NOMINAL_LINK_RATE + NOMINAL_LATENCY : 0; }

static int64_t local_bytes(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *s) {
  const ts_shape_t *l = ts_part_local_shape(p, shape, s);
  return l ? (int64_t)ts_shape_storage_bytes(l) : 0;
}

/* One device's share of the plan's multiply-adds, in seconds. */
static double dot_seconds(const dot_space_t *sp, const dot_plan_t *pl) {
  double flops = 2;
  for (int d = 0; d < sp->rank; d++) {
    int64_t t = pl->I->kind == TS_SHARD_TILED && d < pl->I->data_rank ? pl->I->dims[d] : 1;
    flops *= (double)((sp->size[d] + t - 1) / t);
  }
  return flops / NOMINAL_FLOP_RATE;
}

/* The collectives of the plan run plainly, in seconds, per term of
 * make_plan's byte count: [0] lhs and [1] rhs resharded, [2] the result
 * resharded, [3] the partial sums. */
static void plain_terms(part_t *p, const ts_hlo_instr_t *i, const dot_plan_t *pl, const ts_sharding_value_t *s,
                        double term[4]) {
  const ts_hlo_instr_t *l = i->ops[0], *r = i->ops[1];
  term[0] = transfer_seconds(ts_part_reshard_bytes(p, l->shape, p->sh[l->id], pl->ls));
  term[1] = transfer_seconds(ts_part_reshard_bytes(p, r->shape, p->sh[r->id], pl->rs));
  term[2] = transfer_seconds(ts_part_reshard_bytes(p, i->shape, pl->ps, s));
  term[3] = pl->partial ? transfer_seconds(local_bytes(p, i->shape, pl->ps)) : 0;
}

/* n steps each computing dot/n while `per_step` bytes move on a link. */
static double loop_seconds(double dot, int64_t n, int64_t per_step) {
  double step = dot / (double)n, move = transfer_seconds(per_step);
  return (double)n * (step > move ? step : move);
}

static double window_seconds(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const dot_plan_t *pl,
                             const double term[4], const window_t *w) {
  double dot = dot_seconds(sp, pl);
  int64_t g = w->g;
  if (w->gather) {
    /* Blocks of the windowed operand as it is sharded now; bidirectional:
     * two per step, one each way, and one moved before the loop. */
    const ts_hlo_instr_t *x = i->ops[w->side];
    int64_t blk = local_bytes(p, x->shape, p->sh[x->id]), n = w->bidir ? g / 2 : g;
    return term[2] + term[3] + loop_seconds(dot, n, blk) + (w->bidir ? transfer_seconds(blk) : 0);
  }
  /* Partial-sum blocks of the result; unrolled: two per step the same way,
   * bidirectional: one each way; both then bring the second sums home. */
  const ts_shape_t *ps = ts_part_local_shape(p, i->shape, pl->ps);
  int64_t blk = ps ? (int64_t)ts_shape_storage_bytes(ps) / ps->dims[w->t] * ((ps->dims[w->t] + g - 1) / g) : 0;
  int64_t n = w->bidir || w->unroll ? g / 2 : g;
  double last = w->bidir || w->unroll ? transfer_seconds(blk) : 0;
  return term[0] + term[1] + loop_seconds(dot, n, w->unroll ? 2 * blk : blk) + last;
}

/* The loop plan pl can run as, if any (*w); false when none. */
static bool probe(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const dot_plan_t *pl,
                  const ts_sharding_value_t *s, window_t *w) {
  if (i->shape->elem == TS_PRED || p->st != TS_OK) return false;
  return probe_gather(p, i, pl, w) || probe_scatter(p, i, sp, pl, s, w);
}

double ts_part_dot_seconds(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const dot_plan_t *pl,
                           const ts_sharding_value_t *s, bool *can_loop, bool *loop) {
  double term[4];
  plain_terms(p, i, pl, s, term);
  double plain = dot_seconds(sp, pl) + term[0] + term[1] + term[2] + term[3];
  window_t w;
  *can_loop = probe(p, i, sp, pl, s, &w);
  double windowed = *can_loop ? window_seconds(p, i, sp, pl, term, &w) : plain;
  *loop = windowed < plain;
  return *loop ? windowed : plain;
}

/* Default (XLA's): above the threshold, the loop, which never holds the
 * gathered operand or the whole partial result. With
 * choose_faster_windowed_einsum_over_mem: the loop only where the time
 * model says it is faster than the plain collectives. */
bool ts_part_windowed_dot(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const dot_plan_t *pl,
                          const ts_sharding_value_t *s) {
  if (i->shape->elem == TS_PRED || p->st != TS_OK) return false;
  if (p->opts.choose_faster_windowed_einsum_over_mem) {
    bool can_loop, loop;
    ts_part_dot_seconds(p, i, sp, pl, s, &can_loop, &loop);
    if (!loop) return false;
  }
  window_t w;
  if (probe_gather(p, i, pl, &w) && emit_gather(p, i, sp, pl, s, &w)) return true;
  return probe_scatter(p, i, sp, pl, s, &w) && emit_scatter(p, i, sp, pl, s, &w);
}
