/* Sharding propagation: gives every instruction a sharding, starting from the
 * user's annotations (GSPMD §3.5; XLA's ShardingPropagation, first cut).
 *
 * Priority rules (the contract the tests pin down):
 *   1. A `sharding=` present before the pass is a user annotation (this
 *      includes `custom-call(...), custom_call_target="Sharding"`): it is
 *      never overwritten, only read. One the value library cannot read (the
 *      V3 named form) is kept and propagates nothing. The exception: with
 *      allow_spmd_sharding_propagation_to_output={true} in the header, the
 *      entry root's annotation is open to propagation (XLA's option).
 *   2. Every array leaf of every other instruction holds one candidate at a
 *      time. Rounds run until nothing changes (at most opts->max_rounds, 64
 *      by default): a forward pass (each instruction pulls from its
 *      operands, and a called computation's parameters from the caller's
 *      operands) over the computations in module order, instructions in
 *      topological order; then a backward pass (each instruction pulls from
 *      its users, and a callee's root from its caller) over the computations
 *      in reverse module order, instructions in reverse topological order.
 *   3. Among the candidates one visit sees, the more specific wins: score
 *      2 x (devices tiling data dims) + 1 for manual or maximal, so a 4-way
 *      tiling beats a 2-way one, manual/maximal beat replicated, and partial
 *      replication counts only its data tiles. Ties go to the first
 *      candidate: operands in operand order, the caller before the loop
 *      back edge. A dot's (and a dot-like convolution's) larger operand
 *      goes first and the other only merges into its tiling (XLA).
 *   4. Compatible tilings merge (XLA's MergeSharding, ts_sharding_merge:
 *      [1,2]+2 replicated and [2,1]+2 replicated give [2,2]), among one
 *      visit's candidates and with the leaf's value. A leaf once set is
 *      replaced only by a merge or a strictly more specific candidate;
 *      so a forward result wins over a backward one of the same score
 *      (forward passes run first), and every leaf's score only grows: the
 *      iteration terminates.
 *   5. Whatever still has no sharding at the end gets {replicated}, or
 *      {maximal device=D} when every user annotation is maximal on D.
 * Manual shardings flow like any other (a manual region stays manual);
 * shard_as/shard_like groups are not used yet.
 *
 * Op rules: elementwise ops (and convert, compare, select, clamp, map, the
 * Sharding custom-call) pass a sharding between operands and result of the
 * same dimensions; broadcast maps operand dims through `dimensions` (new
 * dims untiled; backward, the tiling of dims the operand lacks becomes a
 * replicated subgroup); transpose and reshape use ts_sharding_transpose /
 * ts_sharding_reshape (a reshape that cannot keep the tiling offers
 * {replicated} forward and nothing backward); reduce drops the reduced dims,
 * their tiling becoming a replicated subgroup (backward: reduced dims
 * untiled); dot keeps batch and non-contracting dims from each operand
 * (output dims: batch, lhs free, rhs free), contracting tiling becoming a
 * replicated subgroup, and backward offers an operand the output's view of
 * it and then the other operand's batch/contracting tiling; tuple,
 * get-tuple-element, opt-barrier move leaves; while ties operand, result,
 * body parameter and root, and condition parameter together leaf by leaf;
 * call and conditional link operands to the called parameters and the
 * result to the roots.
 * More families (GSPMD §3.5 conventions, simplified where said):
 *   - slice, pad, concatenate: same-rank maps; a dim keeps its tiling while
 *     the target dim has at least as many elements as tiles, else its
 *     tiling becomes a replicated subgroup (concatenate: every operand to
 *     the result, the result back to each operand).
 *   - dynamic-slice / dynamic-update-slice: dims sliced whole keep their
 *     tiling, sliced dims are untiled; the result of a dynamic-update-slice
 *     follows its operand, the update follows the result's whole dims.
 *   - scalar operands (start indices, padding value, reduce init values)
 *     take the scalar view of their user: maximal and manual carry over,
 *     a tiling becomes {replicated}.
 *   - computations applied per element (to_apply of reduce, scatter, sort,
 *     map, reduce-window, all-reduce; select/scatter of
 *     select-and-scatter): their parameters take the scalar view of the
 *     caller's (first) result, so their scalar code is placed where the
 *     caller runs; nothing flows back out of them.
 *   - iota: {replicated} forward; a tiled user wins backward.
 *   - sort: every operand and output one sharding (sort dim included).
 *   - reduce: variadic outputs share one sharding (each input offers to
 *     every output, each output back to every input).
 *   - gather: output batch dims follow the indices (index_vector_dim
 *     dropped), offset dims the operand's non-collapsed dims when sliced
 *     whole; collapsed (indexed) operand dims untiled. Scatter reads the
 *     same maps with updates as the gather output: the result follows the
 *     operand (and, weaker, the updates' window dims); updates follow the
 *     result and the indices; indices follow the updates. Indices are
 *     offered first, so at equal score a lookup stays batch-parallel.
 *     Parallel dims (explicit batching dims, and indexed dims whose index
 *     is an iota along an indices dim) tie operand, indices and window.
 *   - convolution: see conv_dims (XLA's dot-as-convolution reading; a real
 *     window with a small kernel keeps the lhs tiling, the partitioner
 *     adds the halo).
 *   - Shardy shard_map boundaries: xla.sdy.GlobalToLocalShape gives its
 *     operands the in_shardings and its results {manual}, so the body runs
 *     manual; xla.sdy.LocalToGlobalShape gives its results the
 *     out_shardings and its operands {manual}; xla.sdy.FuncResultSharding
 *     passes through like the Sharding custom-call.
 * Other ops propagate nothing (their leaves end up with the default). */
#include "sharding_internal.h"

#include <string.h>

#define DEFAULT_ROUNDS 64
#define MAX_TARGETS 64 /* called computations looked at per instruction */

typedef enum { LINK_WHILE_BODY, LINK_WHILE_COND, LINK_CALL, LINK_BRANCH, LINK_APPLY } link_role_t;

/* A called computation as seen from its caller: params take their values
 * from caller->ops[base + p] (base 0 for call/while, 1 + branch for
 * conditional, where only parameter 0 exists). */
typedef struct {
  ts_hlo_instr_t *caller;
  ts_hlo_comp_t *comp;
  link_role_t role;
  int base;
} link_t;

typedef struct {
  int n;
  link_t *v;
} links_t;

typedef struct {
  int n;                      /* leaves */
  const ts_shape_t **shape;   /* leaf shapes */
  ts_sharding_value_t **v;    /* current candidate per leaf; NULL: none */
  bool fixed;                 /* user annotation: never written */
  const links_t *links;       /* callers of the instruction's computation */
  const ts_sharding_value_t *sdy; /* shard_map boundary: in_/out_shardings (NULL: unread) */
  uint32_t stamp;             /* x->clock when a leaf last changed; 0: never */
  uint32_t seen[2];           /* x->clock at the last backward [0] / forward [1] visit */
} node_t;

typedef struct {
  ts_hlo_module_t *m;
  ts_arena_t *a;              /* values and scratch; syntax goes to m->arena */
  node_t *nodes;              /* by instr->id */
  links_t *comp_links;        /* by computation index */
  const ts_hlo_instr_t ***order; /* per computation: topological order, ties in text order */
  ts_sharding_value_t **cand; /* best candidate per leaf of the visited instruction */
  int64_t *cand_score;
  ts_sharding_value_t *replicated, *manual;
  /* Candidates interned (equal values are one pointer) and their
   * derivations memoised by input pointer, so a visit costs O(rank), not
   * O(devices): modules repeat a handful of shardings. */
  ts_sharding_cache_t *cache;
  ts_status_t err;            /* a failure inside offer() (out of memory) */
  bool first_wins;            /* offer(): a tiling is not replaced by an incompatible one */
  bool changed;
  uint32_t clock;             /* bumped on every change; orders stamps and visits */
} ctx_t;

/* ---- values ------------------------------------------------------------- */

static int64_t score(const ts_sharding_value_t *v) {
  if (!v) return -1;
  switch (v->kind) {
  case TS_SHARD_TILED: {
    bool manual = false;
    for (int k = 0; k < v->nsubgroups; k++) manual |= v->subgroups[k] == TS_SUBGROUP_MANUAL;
    return 2 * sh_product(v->data_rank, v->dims) + manual;
  }
  case TS_SHARD_MANUAL:
  case TS_SHARD_MAXIMAL: return 3;
  case TS_SHARD_REPLICATED:
  case TS_SHARD_UNREDUCED: return 2;
  default: return -1; /* UNKNOWN, TUPLE: no information */
  }
}

/* The sharding of an array of rank `to_rank` whose dim map[k] holds the
 * data of dim k of an array sharded `v` (map[k] < 0: the dim is gone and
 * its tiling becomes a replicated subgroup). Target dims that no source
 * maps to are untiled. Non-tiled values map to themselves; *out is NULL
 * when v does not fit (rank or map). */
static ts_status_t remap_build(ts_arena_t *a, const ts_sharding_value_t *v, int from_rank, int to_rank,
                               const int *map, ts_sharding_value_t **out) {
  *out = NULL;
  if (!v) return TS_OK;
  if (v->kind != TS_SHARD_TILED) {
    *out = (ts_sharding_value_t *)v;
    return TS_OK;
  }
  if (v->data_rank != from_rank || to_rank + v->nsubgroups + 1 > SH_MAX_RANK) return TS_OK;
  int src[SH_MAX_RANK], perm[SH_MAX_RANK], np = 0;
  for (int j = 0; j < to_rank; j++) src[j] = -1;
  for (int k = 0; k < from_rank; k++) {
    if (map[k] >= to_rank || (map[k] >= 0 && src[map[k]] >= 0)) return TS_OK;
    if (map[k] >= 0) src[map[k]] = k;
  }
  int64_t dims[SH_MAX_RANK], dropped = 1;
  ts_subgroup_t sub[SH_MAX_RANK];
  int nd = 0;
  for (int j = 0; j < to_rank; j++) {
    if (src[j] >= 0) perm[np++] = src[j];
    dims[nd++] = src[j] >= 0 ? v->dims[src[j]] : 1;
  }
  for (int k = 0; k < v->nsubgroups; k++) {
    perm[np++] = v->data_rank + k;
    dims[nd++] = v->dims[v->data_rank + k];
    sub[k] = v->subgroups[k];
  }
  int nsub = v->nsubgroups;
  for (int k = 0; k < from_rank; k++)
    if (map[k] < 0) {
      perm[np++] = k;
      dropped *= v->dims[k];
    }
  if (dropped > 1 || nd == 0) {
    dims[nd++] = dropped;
    sub[nsub++] = TS_SUBGROUP_REPLICATED;
  }
  if (sh_perm_moves_nothing(v->ndims, v->dims, perm)) return sh_make_tiled(a, nd, dims, v->devices, nsub, sub, out);
  int64_t *devs = ts_malloc(sizeof(int64_t) * (size_t)v->ntiles);
  if (!devs) return TS_ERR_NOMEM;
  sh_transpose(v->ndims, v->dims, v->devices, perm, devs);
  ts_status_t st = sh_make_tiled(a, nd, dims, devs, nsub, sub, out);
  ts_free(devs);
  return st;
}

/* Memo keys: a derivation tag, the input value's address, its arguments. */
enum { MEMO_REMAP = 1, MEMO_TRANSPOSE, MEMO_RESHAPE, MEMO_SYNTAX, MEMO_MERGE };
#define MEMO_MAX_KEY (2 * SH_MAX_RANK + 8)

static int64_t addr(const void *p) { return (int64_t)(intptr_t)p; }

/* Looks `key` up; on a miss, *out is what `st` (the derivation just run by
 * the caller) gave, interned and remembered. Failed derivations are not
 * remembered. */
static ts_status_t memo_store(ctx_t *x, const int64_t *key, int n, ts_status_t st, ts_sharding_value_t **out) {
  if (st != TS_OK) return st;
  TS_CHECK(ts_sharding_cache_intern(x->cache, out));
  return ts_sharding_cache_put(x->cache, key, n, *out);
}

/* remap_build, memoised for tiled values (others map to themselves). */
static ts_status_t remap(ctx_t *x, const ts_sharding_value_t *v, int from_rank, int to_rank, const int *map,
                         ts_sharding_value_t **out) {
  if (!v || v->kind != TS_SHARD_TILED || from_rank > SH_MAX_RANK || from_rank < 0)
    return remap_build(x->a, v, from_rank, to_rank, map, out);
  int64_t key[MEMO_MAX_KEY];
  int n = 0;
  key[n++] = MEMO_REMAP;
  key[n++] = addr(v);
  key[n++] = from_rank;
  key[n++] = to_rank;
  for (int k = 0; k < from_rank; k++) key[n++] = map[k];
  if (ts_sharding_cache_get(x->cache, key, n, (void **)out)) return TS_OK;
  return memo_store(x, key, n, remap_build(x->a, v, from_rank, to_rank, map, out), out);
}

/* ts_sharding_transpose, memoised for tiled values. */
static ts_status_t transpose_of(ctx_t *x, ts_sharding_value_t *v, int rank, const int64_t *perm,
                                ts_sharding_value_t **out) {
  if (v->kind != TS_SHARD_TILED || rank > SH_MAX_RANK || rank < 0)
    return ts_sharding_transpose(x->a, v, rank, perm, out);
  int64_t key[MEMO_MAX_KEY];
  int n = 0;
  key[n++] = MEMO_TRANSPOSE;
  key[n++] = addr(v);
  key[n++] = rank;
  for (int k = 0; k < rank; k++) key[n++] = perm[k];
  if (ts_sharding_cache_get(x->cache, key, n, (void **)out)) return TS_OK;
  return memo_store(x, key, n, ts_sharding_transpose(x->a, v, rank, perm, out), out);
}

/* ts_sharding_reshape, memoised for tiled values. */
static ts_status_t reshape_of(ctx_t *x, ts_sharding_value_t *v, const ts_shape_t *from, const ts_shape_t *to,
                              ts_sharding_value_t **out) {
  if (v->kind != TS_SHARD_TILED || !ts_shape_is_array(from) || !ts_shape_is_array(to) || from->rank > SH_MAX_RANK ||
      to->rank > SH_MAX_RANK)
    return ts_sharding_reshape(x->a, v, from, to, out);
  int64_t key[MEMO_MAX_KEY];
  int n = 0;
  key[n++] = MEMO_RESHAPE;
  key[n++] = addr(v);
  key[n++] = from->rank;
  for (int k = 0; k < from->rank; k++) key[n++] = from->dims[k];
  key[n++] = to->rank;
  for (int k = 0; k < to->rank; k++) key[n++] = to->dims[k];
  if (ts_sharding_cache_get(x->cache, key, n, (void **)out)) return TS_OK;
  return memo_store(x, key, n, ts_sharding_reshape(x->a, v, from, to, out), out);
}

/* ts_sharding_merge of two interned values, memoised. */
static ts_status_t merge_of(ctx_t *x, const ts_sharding_value_t *p, const ts_sharding_value_t *q,
                            ts_sharding_value_t **out) {
  int64_t key[3] = {MEMO_MERGE, addr(p), addr(q)};
  if (ts_sharding_cache_get(x->cache, key, 3, (void **)out)) return TS_OK;
  return memo_store(x, key, 3, ts_sharding_merge(x->a, p, q, out), out);
}

static bool partial_only(const ts_sharding_value_t *v) {
  if (v->kind != TS_SHARD_TILED) return false;
  for (int k = 0; k < v->nsubgroups; k++)
    if (v->subgroups[k] != TS_SUBGROUP_REPLICATED) return false;
  return true;
}

/* A reshape that cannot keep the whole tiling keeps the best part of it
 * (XLA's partial matches): the most specific result of untiling a subset
 * of the tiled dims (their tiling becomes a replicated subgroup), for up
 * to 8 tiled dims. *out NULL when nothing survives. */
static ts_status_t reshape_partial(ctx_t *x, ts_sharding_value_t *v, const ts_shape_t *from, const ts_shape_t *to,
                                   ts_sharding_value_t **out) {
  TS_CHECK(reshape_of(x, v, from, to, out));
  if (*out || v->kind != TS_SHARD_TILED || !ts_shape_is_array(from) || v->data_rank != from->rank) return TS_OK;
  int tiled[8], nt = 0, map[SH_MAX_RANK];
  for (int d = 0; d < v->data_rank; d++)
    if (v->dims[d] > 1) {
      if (nt == 8) return TS_OK;
      tiled[nt++] = d;
    }
  ts_sharding_value_t *best = NULL;
  for (int mask = 1; mask < (1 << nt) - 1; mask++) {
    for (int d = 0; d < v->data_rank; d++) map[d] = d;
    for (int t = 0; t < nt; t++)
      if (mask & (1 << t)) map[tiled[t]] = -1;
    ts_sharding_value_t *u = NULL, *r = NULL;
    TS_CHECK(remap(x, v, v->data_rank, v->data_rank, map, &u));
    if (!u) continue;
    ts_status_t st = u->kind == TS_SHARD_TILED ? reshape_of(x, u, from, to, &r) : TS_OK;
    if (st == TS_ERR_NOMEM) return st;
    if (st == TS_OK && r && score(r) > score(best)) best = r;
  }
  *out = best;
  return TS_OK;
}

/* ---- the graph ---------------------------------------------------------- */

static const ts_hlo_attr_t *list_attr(const ts_hlo_instr_t *i, const char *name) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, name);
  return a && a->kind == TS_ATTR_INT_LIST ? a : NULL;
}

static bool is_target(const ts_hlo_instr_t *i, const char *name) {
  const ts_hlo_attr_t *t = i->op == TS_OP_CUSTOM_CALL ? ts_hlo_instr_attr(i, "custom_call_target") : NULL;
  return t && t->kind == TS_ATTR_STRING && strcmp(t->v.s, name) == 0;
}

static bool is_sharding_call(const ts_hlo_instr_t *i) { return is_target(i, "Sharding"); }

static bool is_elementwise(const ts_hlo_instr_t *i) {
  switch (i->op) {
  case TS_OP_ABS: case TS_OP_ACOS: case TS_OP_ACOSH: case TS_OP_ADD: case TS_OP_AND: case TS_OP_ASIN:
  case TS_OP_ASINH: case TS_OP_ATAN: case TS_OP_ATAN2: case TS_OP_ATANH: case TS_OP_BITCAST_CONVERT:
  case TS_OP_CBRT: case TS_OP_CEIL: case TS_OP_CLAMP: case TS_OP_COUNT_LEADING_ZEROS: case TS_OP_COMPARE:
  case TS_OP_COMPLEX: case TS_OP_CONVERT: case TS_OP_COPY: case TS_OP_COSINE: case TS_OP_COSH:
  case TS_OP_DIVIDE: case TS_OP_ERF: case TS_OP_EXPONENTIAL: case TS_OP_EXPONENTIAL_MINUS_ONE:
  case TS_OP_FLOOR: case TS_OP_IMAG: case TS_OP_IS_FINITE: case TS_OP_LOG: case TS_OP_LOG_PLUS_ONE:
  case TS_OP_LOGISTIC: case TS_OP_MAP: case TS_OP_MAXIMUM: case TS_OP_MINIMUM: case TS_OP_MULHI:
  case TS_OP_MULTIPLY: case TS_OP_NEGATE: case TS_OP_NOT: case TS_OP_OR: case TS_OP_POPCNT: case TS_OP_POWER:
  case TS_OP_REAL: case TS_OP_REDUCE_PRECISION: case TS_OP_REMAINDER: case TS_OP_ROUND_NEAREST_AFZ:
  case TS_OP_ROUND_NEAREST_EVEN: case TS_OP_RSQRT: case TS_OP_SELECT: case TS_OP_SHIFT_LEFT:
  case TS_OP_SHIFT_RIGHT_ARITHMETIC: case TS_OP_SHIFT_RIGHT_LOGICAL: case TS_OP_SIGN: case TS_OP_SINE:
  case TS_OP_SINH: case TS_OP_SQRT: case TS_OP_STOCHASTIC_CONVERT: case TS_OP_SUBTRACT: case TS_OP_TAN:
  case TS_OP_TANH: case TS_OP_XOR:
    return true;
  default:
    /* Custom-calls XLA passes a sharding through (IsPassthroughCustomOps,
     * and the memory-space / layout annotations). */
    return is_sharding_call(i) || is_target(i, "xla.sdy.FuncResultSharding") || is_target(i, "X64Combine") ||
           is_target(i, "LayoutConstraint") || is_target(i, "MoveToHost") || is_target(i, "MoveToDevice") ||
           is_target(i, "PinToDevice");
  }
}

static bool same_dims(const ts_shape_t *x, const ts_shape_t *y) {
  return ts_shape_is_array(x) && ts_shape_is_array(y) && x->rank == y->rank &&
         (x->rank == 0 || !memcmp(x->dims, y->dims, sizeof *x->dims * (size_t)x->rank));
}

/* The computations a while/call/conditional runs, with their roles, and
 * the scalar computations other ops apply (reduce, scatter, sort, map,
 * reduce-window, select-and-scatter, all-reduce: LINK_APPLY). */
static int targets(const ts_hlo_instr_t *i, link_t *t) {
  int n = 0;
  for (int k = 0; k < i->nattrs && n < MAX_TARGETS; k++) {
    const ts_hlo_attr_t *a = &i->attrs[k];
    if (a->kind != TS_ATTR_COMP && a->kind != TS_ATTR_COMP_LIST) continue;
    for (int c = 0; c < a->v.comps.n && n < MAX_TARGETS; c++) {
      link_t l = {(ts_hlo_instr_t *)i, a->v.comps.comps[c], LINK_CALL, 0};
      if (i->op == TS_OP_WHILE && !strcmp(a->name, "body")) l.role = LINK_WHILE_BODY;
      else if (i->op == TS_OP_WHILE && !strcmp(a->name, "condition")) l.role = LINK_WHILE_COND;
      else if (i->op == TS_OP_CALL && (!strcmp(a->name, "to_apply") || !strcmp(a->name, "calls"))) l.role = LINK_CALL;
      else if (i->op == TS_OP_CONDITIONAL && !strcmp(a->name, "true_computation")) l = (link_t){l.caller, l.comp, LINK_BRANCH, 1};
      else if (i->op == TS_OP_CONDITIONAL && !strcmp(a->name, "false_computation")) l = (link_t){l.caller, l.comp, LINK_BRANCH, 2};
      else if (i->op == TS_OP_CONDITIONAL && !strcmp(a->name, "branch_computations")) l = (link_t){l.caller, l.comp, LINK_BRANCH, 1 + c};
      else if (i->op != TS_OP_CALL && i->op != TS_OP_WHILE && i->op != TS_OP_CONDITIONAL &&
               (!strcmp(a->name, "to_apply") || !strcmp(a->name, "select") || !strcmp(a->name, "scatter")))
        l.role = LINK_APPLY;
      else continue;
      if (l.comp) t[n++] = l;
    }
  }
  return n;
}

static node_t *node(ctx_t *x, const ts_hlo_instr_t *i) { return &x->nodes[i->id]; }

/* ---- candidates --------------------------------------------------------- */

static void offer(ctx_t *x, const node_t *n, int leaf, const ts_sharding_value_t *v) {
  if (!v || leaf < 0 || leaf >= n->n) return;
  if (v->kind == TS_SHARD_TILED && (n->shape[leaf]->elem == TS_TOKEN || v->data_rank != n->shape[leaf]->rank)) return;
  ts_sharding_value_t *c = x->cand[leaf];
  if (c && c != v && partial_only(c) && partial_only(v)) { /* compatible candidates combine */
    ts_sharding_value_t *m = NULL;
    ts_status_t st = merge_of(x, c, v, &m);
    if (st != TS_OK) x->err = st;
    if (m) {
      x->cand[leaf] = m;
      x->cand_score[leaf] = score(m);
      return;
    }
  }
  int64_t s = score(v);
  if (x->first_wins && c && c->kind == TS_SHARD_TILED && v->kind == TS_SHARD_TILED) return;
  if (s > x->cand_score[leaf]) {
    x->cand_score[leaf] = s;
    x->cand[leaf] = (ts_sharding_value_t *)v;
  }
}

/* Leaves [from, from + count) of y to leaves [to, ...) of the visited node. */
static void offer_leaves(ctx_t *x, const node_t *n, int to, const ts_hlo_instr_t *y, int from, int count) {
  const node_t *ny = node(x, y);
  for (int k = 0; k < count && from + k < ny->n; k++) offer(x, n, to + k, ny->v[from + k]);
}

static void offer_all(ctx_t *x, const node_t *n, const ts_hlo_instr_t *y) {
  if (node(x, y)->n == n->n) offer_leaves(x, n, 0, y, 0, n->n);
}

static ts_status_t offer_remap(ctx_t *x, const node_t *n, int leaf, const ts_sharding_value_t *v, int from_rank,
                               int to_rank, const int *map) {
  ts_sharding_value_t *r = NULL;
  TS_CHECK(remap(x, v, from_rank, to_rank, map, &r));
  offer(x, n, leaf, r);
  return TS_OK;
}

static int leaf_offset(const ts_shape_t *s, int64_t index) {
  int off = 0;
  for (int64_t k = 0; k < index && k < s->ntuple; k++) off += ts_shape_leaf_count(s->tuple[k]);
  return off;
}

/* Dot dimension numbers, checked against the operand ranks. */
typedef struct {
  int lr, rr, nb;             /* lhs rank, rhs rank, batch dims */
  int lmap[SH_MAX_RANK];      /* lhs dim -> output dim, -1 contracting */
  int rmap[SH_MAX_RANK];
  int l2r[SH_MAX_RANK];       /* lhs dim -> rhs dim (batch, contracting), else -1 */
  int r2l[SH_MAX_RANK];
} dot_dims_t;

static bool dot_dims(const ts_hlo_instr_t *i, dot_dims_t *d) {
  const ts_hlo_attr_t *lb = list_attr(i, "lhs_batch_dims"), *rb = list_attr(i, "rhs_batch_dims");
  const ts_hlo_attr_t *lc = list_attr(i, "lhs_contracting_dims"), *rc = list_attr(i, "rhs_contracting_dims");
  if (i->nops != 2 || !ts_shape_is_array(i->ops[0]->shape) || !ts_shape_is_array(i->ops[1]->shape)) return false;
  d->lr = i->ops[0]->shape->rank;
  d->rr = i->ops[1]->shape->rank;
  int nb = lb ? lb->v.list.n : 0, nc = lc ? lc->v.list.n : 0;
  if (d->lr > SH_MAX_RANK || d->rr > SH_MAX_RANK || nb != (rb ? rb->v.list.n : 0) || nc != (rc ? rc->v.list.n : 0))
    return false;
  for (int k = 0; k < d->lr; k++) d->lmap[k] = d->l2r[k] = -2;
  for (int k = 0; k < d->rr; k++) d->rmap[k] = d->r2l[k] = -2;
  for (int k = 0; k < nb + nc; k++) {
    int64_t l = k < nb ? lb->v.list.v[k] : lc->v.list.v[k - nb], r = k < nb ? rb->v.list.v[k] : rc->v.list.v[k - nb];
    if (l < 0 || l >= d->lr || r < 0 || r >= d->rr || d->lmap[l] != -2 || d->rmap[r] != -2) return false;
    d->lmap[l] = d->rmap[r] = k < nb ? k : -1;
    d->l2r[l] = (int)r;
    d->r2l[r] = (int)l;
  }
  int out = nb;
  for (int k = 0; k < d->lr; k++)
    if (d->lmap[k] == -2) d->lmap[k] = out++, d->l2r[k] = -1;
  for (int k = 0; k < d->rr; k++)
    if (d->rmap[k] == -2) d->rmap[k] = out++, d->r2l[k] = -1;
  d->nb = nb;
  return ts_shape_is_array(i->shape) && out == i->shape->rank;
}

static int64_t byte_size(const ts_shape_t *s) { return ts_shape_elements(s) * ts_elem_bits(s->elem); }

static const ts_conv_dnums_t *conv_dnums(const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *dl = ts_hlo_instr_attr(i, "dim_labels");
  return dl && dl->kind == TS_ATTR_CONV_DNUMS ? dl->v.conv : NULL;
}
static int conv_feature(const ts_hlo_instr_t *i) { return (int)conv_dnums(i)->in_feature; }
static int conv_batch(const ts_hlo_instr_t *i) { return (int)conv_dnums(i)->in_batch; }
static bool grouped(const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *fg = ts_hlo_instr_attr(i, "feature_group_count");
  return fg && fg->kind == TS_ATTR_INT && fg->v.i > 1;
}
/* Whether v (of the lhs, or the rhs) tiles a spatial dim of convolution i. */
static bool spatially_tiled(const ts_hlo_instr_t *i, const ts_sharding_value_t *v, bool lhs) {
  const ts_conv_dnums_t *c = conv_dnums(i);
  if (!v || v->kind != TS_SHARD_TILED || v->data_rank != c->rank) return false;
  for (int s = 0; s < c->nspatial; s++)
    if (v->dims[lhs ? c->in_spatial[s] : c->k_spatial[s]] > 1) return true;
  return false;
}

/* Convolution as a dot (XLA's dot_as_convolution_util): lhs batch ->
 * output batch, rhs output feature -> output feature, the input features
 * contract (with feature_group_count > 1 they are a batch dim: lhs input
 * feature, rhs output feature and output feature together). A spatial dim
 * is
 *   - lhs non-contracting when the window is 1 wide, stride 1, unpadded,
 *     undilated: lhs spatial -> output spatial;
 *   - contracting when the window covers the whole unpadded, undilated
 *     input and the output is 1 wide;
 *   - a batch dim of both when window, lhs dilation and output are the
 *     input's size and the stride one less (lhs, rhs, output spatial);
 *   - rhs non-contracting when the lhs is 1 wide and the reversed window,
 *     padded by its size - 1 on both sides, gives an output of the
 *     kernel's size (rhs spatial -> output spatial);
 *   - a real convolution dim otherwise (*conv set). Forward (`forward`),
 *     such a dim follows the lhs when the kernel is small (XLA's
 *     IsConvolutionKernelSmall: smaller than the output along every
 *     spatial dim), as XLA does (the partitioner adds the halo); else only
 *     the batch tiling carries over. Backward it propagates nothing.
 * batch_group_count > 1 is not handled. */
static bool conv_dims(const ts_hlo_instr_t *i, dot_dims_t *d, bool forward, bool *conv) {
  const ts_hlo_attr_t *dl = ts_hlo_instr_attr(i, "dim_labels"), *w = ts_hlo_instr_attr(i, "window");
  const ts_hlo_attr_t *fg = ts_hlo_instr_attr(i, "feature_group_count"), *bg = ts_hlo_instr_attr(i, "batch_group_count");
  *conv = false;
  if (!dl || dl->kind != TS_ATTR_CONV_DNUMS || i->nops != 2) return false;
  if ((fg && fg->kind != TS_ATTR_INT) || (bg && (bg->kind != TS_ATTR_INT || bg->v.i != 1))) return false;
  const ts_conv_dnums_t *c = dl->v.conv;
  const ts_shape_t *l = i->ops[0]->shape, *r = i->ops[1]->shape, *o = i->shape;
  if (!ts_shape_is_array(l) || !ts_shape_is_array(r) || !ts_shape_is_array(o)) return false;
  d->lr = l->rank;
  d->rr = r->rank;
  d->nb = 1;
  if (c->rank != d->lr || c->rank != d->rr || c->rank != o->rank || c->rank > SH_MAX_RANK) return false;
  if (w && (w->kind != TS_ATTR_WINDOW || w->v.window->n != c->nspatial)) return false;
  for (int k = 0; k < c->rank; k++) d->lmap[k] = d->rmap[k] = d->l2r[k] = d->r2l[k] = -1;
  d->lmap[c->in_batch] = (int)c->out_batch;
  d->rmap[c->k_out_feature] = (int)c->out_feature;
  if (fg && fg->v.i > 1) {
    d->lmap[c->in_feature] = (int)c->out_feature;
    d->l2r[c->in_feature] = (int)c->k_out_feature;
    d->r2l[c->k_out_feature] = (int)c->in_feature;
  } else {
    d->l2r[c->in_feature] = (int)c->k_in_feature;
    d->r2l[c->k_in_feature] = (int)c->in_feature;
  }
  bool small = true;
  int64_t kprod = 1, oprod = 1;
  for (int s = 0; s < c->nspatial; s++) {
    int64_t kd = r->dims[c->k_spatial[s]], od = o->dims[c->out_spatial[s]];
    kprod *= kd;
    oprod *= od;
    if (kd >= od && (s < 2 || kd > 3 || kprod >= oprod)) small = false;
  }
  for (int s = 0; s < c->nspatial; s++) {
    const ts_window_dim_t *wd = w ? &w->v.window->dims[s] : NULL;
    int64_t ls = l->dims[c->in_spatial[s]], ks = r->dims[c->k_spatial[s]], os = o->dims[c->out_spatial[s]];
    bool plain = !wd || (wd->stride == 1 && wd->pad_lo == 0 && wd->pad_hi == 0 && wd->lhs_dilate == 1 &&
                         wd->rhs_dilate == 1 && !wd->reversal);
    int64_t size = wd ? wd->size : 1;
    bool plain_window = wd && wd->pad_lo == 0 && wd->pad_hi == 0 && wd->rhs_dilate == 1 && !wd->reversal;
    if (plain && size == 1 && ks == 1 && ls == os) {
      d->lmap[c->in_spatial[s]] = (int)c->out_spatial[s];
    } else if (plain_window && size == ls && ks == ls && os == ls && wd->lhs_dilate == ls &&
               wd->stride == (ls > 1 ? ls - 1 : 1)) { /* a batch dim of both */
      d->lmap[c->in_spatial[s]] = d->rmap[c->k_spatial[s]] = (int)c->out_spatial[s];
      d->l2r[c->in_spatial[s]] = (int)c->k_spatial[s];
      d->r2l[c->k_spatial[s]] = (int)c->in_spatial[s];
    } else if (wd && ls == 1 && size == ks && os == ks && wd->pad_lo == ks - 1 && wd->pad_hi == ks - 1 &&
               wd->stride == 1 && wd->lhs_dilate == 1 && wd->rhs_dilate == 1 && wd->reversal) {
      d->rmap[c->k_spatial[s]] = (int)c->out_spatial[s]; /* the rhs's own dim */
    } else if (plain && size == ls && ks == ls && os == 1) {
      d->l2r[c->in_spatial[s]] = (int)c->k_spatial[s];
      d->r2l[c->k_spatial[s]] = (int)c->in_spatial[s];
    } else {
      *conv = true;
      if (forward && small) d->lmap[c->in_spatial[s]] = (int)c->out_spatial[s];
    }
  }
  return true;
}

/* Gather (and scatter read backwards) dimension maps. The "window" array
 * is the gather output / scatter updates: its window dims (offset_dims /
 * update_window_dims, ascending) hold the operand's non-collapsed dims in
 * order, its other dims the indices' dims except index_vector_dim, in
 * order. An operand dim keeps its tiling only when the window covers it
 * whole; collapsed (indexed) operand dims are untiled, except the
 * parallel ones: an explicit batching dim (operand_batching_dims /
 * input_batching_dims with its start_indices_batching_dims /
 * scatter_indices_batching_dims partner), or an indexed dim whose index is
 * an iota along an indices dim (XLA's GetGatherScatterBatchParallelDims:
 * device k then reads only its own rows), which maps to the window dim of
 * its indices dim. */
typedef struct {
  int orank, irank, wrank;
  int omap[SH_MAX_RANK]; /* operand dim -> window dim, or -1 */
  int imap[SH_MAX_RANK]; /* indices dim -> window dim, or -1 (index_vector_dim) */
  int wo[SH_MAX_RANK];   /* window dim -> operand dim, or -1 */
  int wi[SH_MAX_RANK];   /* window dim -> indices dim, or -1 */
} gather_dims_t;

/* The dim along which `i` counts 0, 1, 2, ... (iota, or a broadcast of
 * one), or -1. */
static int iota_dim(const ts_hlo_instr_t *i) {
  for (int depth = 0; depth < 8; depth++) {
    if (i->op == TS_OP_IOTA) {
      const ts_hlo_attr_t *d = ts_hlo_instr_attr(i, "iota_dimension");
      return d && d->kind == TS_ATTR_INT ? (int)d->v.i : -1;
    }
    if (i->op == TS_OP_BROADCAST && i->nops == 1) {
      const ts_hlo_attr_t *dims = list_attr(i, "dimensions");
      int d = iota_dim(i->ops[0]);
      return dims && d >= 0 && d < dims->v.list.n ? (int)dims->v.list.v[d] : -1;
    }
    if (i->op != TS_OP_COPY || i->nops != 1) return -1;
    i = i->ops[0];
  }
  return -1;
}

/* par[c] = the indices dim that index component c counts along (an iota
 * there), else -1; ncomp components. */
static void parallel_components(const ts_hlo_instr_t *ix, int64_t ivd, int ncomp, int *par) {
  for (int c = 0; c < ncomp; c++) par[c] = -1;
  while (ix->op == TS_OP_COPY && ix->nops == 1) ix = ix->ops[0];
  const ts_hlo_attr_t *cd = list_attr(ix, "dimensions");
  if (ix->op == TS_OP_CONCATENATE && cd && cd->v.list.n == 1 && cd->v.list.v[0] == ivd) {
    for (int k = 0, c = 0; k < ix->nops; k++) {
      const ts_shape_t *s = ix->ops[k]->shape;
      int64_t m = ts_shape_is_array(s) && ivd < s->rank ? s->dims[ivd] : 1;
      int d = iota_dim(ix->ops[k]);
      for (int64_t j = 0; j < m && c < ncomp; j++, c++) par[c] = d >= 0 && d != ivd ? d : -1;
    }
    return;
  }
  int d = iota_dim(ix);
  for (int c = 0; c < ncomp; c++) par[c] = d >= 0 && d != ivd ? d : -1;
}

static bool gather_dims(const ts_hlo_instr_t *i, const ts_shape_t *o, const ts_shape_t *ix, const ts_shape_t *w,
                        bool scatter, gather_dims_t *g) {
  const ts_hlo_attr_t *off = list_attr(i, scatter ? "update_window_dims" : "offset_dims");
  const ts_hlo_attr_t *col = list_attr(i, scatter ? "inserted_window_dims" : "collapsed_slice_dims");
  const ts_hlo_attr_t *ob = list_attr(i, scatter ? "input_batching_dims" : "operand_batching_dims");
  const ts_hlo_attr_t *ib = list_attr(i, scatter ? "scatter_indices_batching_dims" : "start_indices_batching_dims");
  const ts_hlo_attr_t *imap = list_attr(i, scatter ? "scatter_dims_to_operand_dims" : "start_index_map");
  const ts_hlo_attr_t *ss = scatter ? NULL : list_attr(i, "slice_sizes");
  const ts_hlo_attr_t *ivd = ts_hlo_instr_attr(i, "index_vector_dim");
  if (!off || !ivd || ivd->kind != TS_ATTR_INT) return false;
  if (!ts_shape_is_array(o) || !ts_shape_is_array(ix) || !ts_shape_is_array(w)) return false;
  if ((ob ? ob->v.list.n : 0) != (ib ? ib->v.list.n : 0)) return false;
  g->orank = o->rank;
  g->irank = ix->rank;
  g->wrank = w->rank;
  if (o->rank > SH_MAX_RANK || ix->rank > SH_MAX_RANK || w->rank > SH_MAX_RANK) return false;
  bool collapsed[SH_MAX_RANK] = {false}, window[SH_MAX_RANK] = {false};
  for (int k = 0; col && k < col->v.list.n; k++) {
    if (col->v.list.v[k] < 0 || col->v.list.v[k] >= o->rank) return false;
    collapsed[col->v.list.v[k]] = true;
  }
  for (int k = 0; ob && k < ob->v.list.n; k++) {
    if (ob->v.list.v[k] < 0 || ob->v.list.v[k] >= o->rank) return false;
    collapsed[ob->v.list.v[k]] = true;
  }
  for (int k = 0; k < off->v.list.n; k++) {
    if (off->v.list.v[k] < 0 || off->v.list.v[k] >= w->rank) return false;
    window[off->v.list.v[k]] = true;
  }
  for (int k = 0; k < w->rank; k++) g->wo[k] = g->wi[k] = -1;
  int wd = 0;
  int64_t slice[SH_MAX_RANK];
  for (int d = 0; d < o->rank; d++) {
    g->omap[d] = -1;
    slice[d] = 1;
    if (collapsed[d]) continue;
    while (wd < w->rank && !window[wd]) wd++;
    if (wd == w->rank) return false;
    slice[d] = w->dims[wd];
    if (w->dims[wd] == o->dims[d]) g->omap[d] = wd, g->wo[wd] = d;
    wd++;
  }
  if (ss && ss->v.list.n == o->rank)
    for (int d = 0; d < o->rank; d++) slice[d] = ss->v.list.v[d];
  wd = 0;
  for (int d = 0; d < ix->rank; d++) {
    g->imap[d] = -1;
    if (d == ivd->v.i) continue;
    while (wd < w->rank && window[wd]) wd++;
    if (wd == w->rank) return false;
    g->imap[d] = wd;
    g->wi[wd++] = d;
  }
  /* Parallel dims: operand dim od goes with indices dim id (its window dim). */
  int pairs[2 * SH_MAX_RANK], np = 0;
  for (int k = 0; ob && k < ob->v.list.n; k++) {
    int64_t od = ob->v.list.v[k], id = ib->v.list.v[k];
    if (id < 0 || id >= ix->rank || id == ivd->v.i) return false;
    pairs[np++] = (int)od;
    pairs[np++] = (int)id;
  }
  if (imap && imap->v.list.n <= SH_MAX_RANK) {
    int par[SH_MAX_RANK];
    const ts_hlo_instr_t *ixi = scatter ? i->ops[(i->nops - 1) / 2] : i->ops[1];
    parallel_components(ixi, ivd->v.i, imap->v.list.n, par);
    bool seen[SH_MAX_RANK] = {false};
    for (int c = 0; c < imap->v.list.n; c++) {
      int64_t od = imap->v.list.v[c];
      int id = par[c];
      if (id < 0 || id >= ix->rank || od < 0 || od >= o->rank) continue;
      if (seen[id]) { np = ob ? 2 * ob->v.list.n : 0; break; } /* one iota dim feeding two: not parallel */
      seen[id] = true;
      if (slice[od] != 1 || o->dims[od] != ix->dims[id]) continue;
      bool batching = false;
      for (int k = 0; ib && k < ib->v.list.n; k++) batching |= ib->v.list.v[k] == id;
      if (batching) continue;
      pairs[np++] = (int)od;
      pairs[np++] = id;
    }
  }
  for (int k = 0; k < np; k += 2) {
    int od = pairs[k], w2 = g->imap[pairs[k + 1]];
    if (w2 < 0 || g->omap[od] >= 0 || g->wo[w2] >= 0) continue;
    g->omap[od] = w2;
    g->wo[w2] = od;
  }
  return true;
}

/* A scalar operand (init value, padding value, start index) of a user
 * sharded `v`: the same devices with the data tiling replicated, so
 * maximal and manual carry over and a tiling gives {replicated}. */
static ts_status_t offer_scalar(ctx_t *x, const node_t *n, const ts_sharding_value_t *v) {
  int map[SH_MAX_RANK];
  if (!v || n->n != 1 || n->shape[0]->rank != 0) return TS_OK;
  if (v->kind != TS_SHARD_TILED) {
    offer(x, n, 0, v->kind == TS_SHARD_TUPLE || v->kind == TS_SHARD_UNREDUCED ? x->replicated : v);
    return TS_OK;
  }
  for (int d = 0; d < v->data_rank; d++) map[d] = -1;
  return offer_remap(x, n, 0, v, v->data_rank, 0, map);
}

/* Leaf l of a shard_map boundary's in_/out_shardings. */
static const ts_sharding_value_t *sdy_leaf(const ts_sharding_value_t *v, int l) {
  if (!v || v->kind != TS_SHARD_TUPLE) return v;
  return l < v->ntuple ? v->tuple[l] : NULL;
}

/* The dims of `v` (on a rank-`rank` array) that keep their tiling on an
 * array of shape `to`: those with at least as many elements as tiles;
 * with `equal` set, only those whose size is unchanged (`from` -> `to`).
 * The others are untiled, their tiling a replicated subgroup. */
static ts_status_t offer_kept(ctx_t *x, const node_t *n, int leaf, const ts_sharding_value_t *v,
                              const ts_shape_t *from, const ts_shape_t *to, bool equal) {
  int map[SH_MAX_RANK];
  if (!v || !ts_shape_is_array(from) || !ts_shape_is_array(to) || from->rank != to->rank || to->rank > SH_MAX_RANK)
    return TS_OK;
  if (v->kind == TS_SHARD_TILED && v->data_rank != to->rank) return TS_OK;
  for (int d = 0; d < to->rank; d++) {
    bool keep = equal ? from->dims[d] == to->dims[d] : v->kind != TS_SHARD_TILED || to->dims[d] >= v->dims[d];
    map[d] = keep ? d : -1;
  }
  return offer_remap(x, n, leaf, v, to->rank, to->rank, map);
}

/* Sort: every operand and output one sharding, the sort dim included
 * (XLA: the partitioner moves a sorted dim's tiling itself). */
static ts_status_t offer_sort(ctx_t *x, const node_t *n, int leaf, const ts_hlo_instr_t *sort,
                              const ts_sharding_value_t *v, const ts_shape_t *s) {
  const ts_hlo_attr_t *dims = list_attr(sort, "dimensions");
  int map[SH_MAX_RANK];
  if (!dims || dims->v.list.n != 1 || !ts_shape_is_array(s) || s->rank > SH_MAX_RANK) return TS_OK;
  for (int d = 0; d < s->rank; d++) map[d] = d;
  return offer_remap(x, n, leaf, v, s->rank, s->rank, map);
}

/* A called computation's parameter takes its caller's operand (and a
 * while body's, the loop back edge); an applied one the scalar view. */
static ts_status_t param_forward(ctx_t *x, const ts_hlo_instr_t *i, const node_t *n) {
  for (int k = 0; n->links && k < n->links->n; k++) {
    const link_t *l = &n->links->v[k];
    int64_t op = l->base + (l->role == LINK_CALL ? i->param_number : 0);
    if (l->role == LINK_APPLY) {
      TS_CHECK(offer_scalar(x, n, node(x, l->caller)->v[0]));
      continue;
    }
    if (l->role != LINK_CALL && i->param_number != 0) continue;
    if (op < l->caller->nops) offer_all(x, n, l->caller->ops[op]);
    if (l->role == LINK_WHILE_BODY && l->comp->root) offer_all(x, n, l->comp->root); /* back edge */
  }
  return TS_OK;
}

/* Reduce: each input's tiling without the reduced dims, to every output. */
static ts_status_t reduce_forward(ctx_t *x, const ts_hlo_instr_t *i, const node_t *n, const ts_hlo_attr_t *dims) {
  int map[SH_MAX_RANK];
  for (int k = 0; k < i->nops / 2 && dims; k++) {
    const ts_shape_t *s = i->ops[k]->shape;
    if (!ts_shape_is_array(s) || s->rank > SH_MAX_RANK) continue;
    int out = 0;
    for (int d = 0; d < s->rank; d++) map[d] = 0;
    for (int r = 0; r < dims->v.list.n; r++)
      if (dims->v.list.v[r] >= 0 && dims->v.list.v[r] < s->rank) map[dims->v.list.v[r]] = -1;
    for (int d = 0; d < s->rank; d++)
      if (map[d] == 0) map[d] = out++;
    for (int leaf = 0; leaf < n->n; leaf++) /* variadic: every output shares one sharding */
      TS_CHECK(offer_remap(x, n, leaf, node(x, i->ops[k])->v[0], s->rank, n->shape[leaf]->rank, map));
  }
  return TS_OK;
}

/* Scatter: result k follows operand k, then the window dims of updates k. */
static ts_status_t scatter_forward(ctx_t *x, const ts_hlo_instr_t *i, const node_t *n) {
  int ns = (i->nops - 1) / 2;
  if (ns < 1 || i->nops != 2 * ns + 1) return TS_OK;
  for (int k = 0; k < ns && k < n->n; k++) {
    gather_dims_t g;
    if (same_dims(i->ops[k]->shape, n->shape[k])) offer(x, n, k, node(x, i->ops[k])->v[0]);
    if (gather_dims(i, i->ops[k]->shape, i->ops[ns]->shape, i->ops[ns + 1 + k]->shape, true, &g))
      TS_CHECK(offer_remap(x, n, k, node(x, i->ops[ns + 1 + k])->v[0], g.wrank, g.orank, g.wo));
  }
  return TS_OK;
}

/* Forward: what the operands (or callees, or callers) say about x. */
static ts_status_t pull_forward(ctx_t *x, const ts_hlo_instr_t *i, const node_t *n) {
  if (i->op == TS_OP_PARAMETER) return param_forward(x, i, n);
  if (is_elementwise(i)) {
    for (int k = 0; k < i->nops; k++)
      if (same_dims(i->ops[k]->shape, i->shape)) offer(x, n, 0, node(x, i->ops[k])->v[0]);
    return TS_OK;
  }
  const ts_hlo_attr_t *dims = list_attr(i, "dimensions");
  int map[SH_MAX_RANK];
  switch (i->op) {
  case TS_OP_BROADCAST: {
    const ts_shape_t *s = i->ops[0]->shape;
    if (!dims || !ts_shape_is_array(s) || dims->v.list.n != s->rank || s->rank > SH_MAX_RANK) break;
    for (int k = 0; k < s->rank; k++) map[k] = (int)dims->v.list.v[k];
    return offer_remap(x, n, 0, node(x, i->ops[0])->v[0], s->rank, i->shape->rank, map);
  }
  case TS_OP_TRANSPOSE: {
    ts_sharding_value_t *v = node(x, i->ops[0])->v[0], *r = NULL;
    if (!dims || !v || dims->v.list.n != i->shape->rank) break;
    if (v->kind == TS_SHARD_TILED && v->data_rank != dims->v.list.n) break;
    TS_CHECK(transpose_of(x, v, dims->v.list.n, dims->v.list.v, &r));
    offer(x, n, 0, r);
    break;
  }
  case TS_OP_RESHAPE: {
    ts_sharding_value_t *v = node(x, i->ops[0])->v[0], *r = NULL;
    if (!v || v->kind == TS_SHARD_TUPLE) break;
    ts_status_t st = reshape_partial(x, v, i->ops[0]->shape, i->shape, &r);
    if (st == TS_ERR_NOMEM) return st;
    if (st != TS_OK || !r) r = x->replicated;
    offer(x, n, 0, r);
    break;
  }
  case TS_OP_REDUCE: return reduce_forward(x, i, n, dims);
  case TS_OP_DOT:
  case TS_OP_CONVOLUTION: {
    dot_dims_t d;
    bool conv = false;
    if (!(i->op == TS_OP_DOT ? dot_dims(i, &d) : conv_dims(i, &d, true, &conv))) break;
    ts_sharding_value_t *lv = node(x, i->ops[0])->v[0], *rv = node(x, i->ops[1])->v[0];
    if (conv && (spatially_tiled(i, lv, true) || spatially_tiled(i, rv, false) || grouped(i))) {
      /* A real convolution: the output follows the lhs alone (XLA). */
      bool small = false;
      for (int k = 0; k < d.lr; k++) small |= d.lmap[k] >= 0 && k != conv_batch(i) && k != conv_feature(i);
      if (small && lv && lv->kind == TS_SHARD_TILED && lv->dims[conv_feature(i)] > 1) break;
      if (!small) /* a large kernel: only the batch stays tiled (data parallelism) */
        for (int k = 0; k < d.lr; k++)
          if (k != conv_batch(i)) d.lmap[k] = -1;
      return offer_remap(x, n, 0, lv, d.lr, i->shape->rank, d.lmap);
    }
    /* XLA's InferDotShardingFromOperands: the larger operand (in bytes;
     * ties: the lhs) first; the other only merges into its tiling. */
    bool rhs_first = byte_size(i->ops[1]->shape) > byte_size(i->ops[0]->shape);
    x->first_wins = true;
    ts_status_t st = offer_remap(x, n, 0, rhs_first ? rv : lv, rhs_first ? d.rr : d.lr, i->shape->rank,
                                 rhs_first ? d.rmap : d.lmap);
    if (st == TS_OK)
      st = offer_remap(x, n, 0, rhs_first ? lv : rv, rhs_first ? d.lr : d.rr, i->shape->rank,
                       rhs_first ? d.lmap : d.rmap);
    x->first_wins = false;
    TS_CHECK(st);
    break;
  }
  case TS_OP_TUPLE:
    for (int k = 0, off = 0; k < i->nops; k++) {
      int c = node(x, i->ops[k])->n;
      offer_leaves(x, n, off, i->ops[k], 0, c);
      off += c;
    }
    break;
  case TS_OP_GET_TUPLE_ELEMENT: {
    const ts_hlo_attr_t *idx = ts_hlo_instr_attr(i, "index");
    if (!idx || idx->kind != TS_ATTR_INT || i->ops[0]->shape->elem != TS_TUPLE) break;
    offer_leaves(x, n, 0, i->ops[0], leaf_offset(i->ops[0]->shape, idx->v.i), n->n);
    break;
  }
  case TS_OP_OPT_BARRIER: offer_all(x, n, i->ops[0]); break;
  case TS_OP_SLICE:
  case TS_OP_PAD: return offer_kept(x, n, 0, node(x, i->ops[0])->v[0], i->ops[0]->shape, i->shape, false);
  case TS_OP_CONCATENATE:
    for (int k = 0; k < i->nops; k++)
      TS_CHECK(offer_kept(x, n, 0, node(x, i->ops[k])->v[0], i->ops[k]->shape, i->shape, false));
    break;
  case TS_OP_DYNAMIC_SLICE: return offer_kept(x, n, 0, node(x, i->ops[0])->v[0], i->ops[0]->shape, i->shape, true);
  case TS_OP_DYNAMIC_UPDATE_SLICE:
    if (i->nops < 2) break;
    if (same_dims(i->ops[0]->shape, i->shape)) offer(x, n, 0, node(x, i->ops[0])->v[0]);
    return offer_kept(x, n, 0, node(x, i->ops[1])->v[0], i->ops[1]->shape, i->shape, true);
  case TS_OP_IOTA: offer(x, n, 0, x->replicated); break;
  case TS_OP_ALL_REDUCE: /* the reduced value keeps its operand's layout (forward only) */
    if (i->nops == 1 && same_dims(i->ops[0]->shape, i->shape)) offer(x, n, 0, node(x, i->ops[0])->v[0]);
    break;
  case TS_OP_SORT:
    for (int k = 0; k < i->nops; k++)
      for (int l = 0; l < n->n; l++) TS_CHECK(offer_sort(x, n, l, i, node(x, i->ops[k])->v[0], i->ops[k]->shape));
    break;
  case TS_OP_GATHER: {
    gather_dims_t g;
    if (i->nops != 2 || !gather_dims(i, i->ops[0]->shape, i->ops[1]->shape, i->shape, false, &g)) break;
    TS_CHECK(offer_remap(x, n, 0, node(x, i->ops[1])->v[0], g.irank, g.wrank, g.imap));
    return offer_remap(x, n, 0, node(x, i->ops[0])->v[0], g.orank, g.wrank, g.omap);
  }
  case TS_OP_SCATTER: return scatter_forward(x, i, n);
  case TS_OP_CUSTOM_CALL:
    if (is_target(i, "xla.sdy.GlobalToLocalShape"))
      for (int l = 0; l < n->n; l++) offer(x, n, l, x->manual);
    else if (is_target(i, "xla.sdy.LocalToGlobalShape"))
      for (int l = 0; l < n->n; l++) offer(x, n, l, sdy_leaf(n->sdy, l));
    break;
  case TS_OP_WHILE:
  case TS_OP_CALL:
  case TS_OP_CONDITIONAL: {
    link_t t[MAX_TARGETS];
    if (i->op == TS_OP_WHILE && i->nops == 1) offer_all(x, n, i->ops[0]);
    for (int k = 0, nt = targets(i, t); k < nt; k++)
      if (t[k].role != LINK_WHILE_COND && t[k].comp->root) offer_all(x, n, t[k].comp->root);
    break;
  }
  default: break;
  }
  return TS_OK;
}

/* Dot / convolution operand k: the output's view of it, then the other
 * operand's batch and contracting tiling. */
static ts_status_t dot_backward(ctx_t *x, const node_t *n, const ts_hlo_instr_t *u, int k) {
  dot_dims_t d;
  int map[SH_MAX_RANK];
  bool conv = false;
  if (!(u->op == TS_OP_DOT ? dot_dims(u, &d) : conv_dims(u, &d, false, &conv))) return TS_OK;
  int self = k == 0 ? d.lr : d.rr, other = k == 0 ? d.rr : d.lr;
  const int *self_map = k == 0 ? d.lmap : d.rmap, *other_to_self = k == 0 ? d.r2l : d.l2r;
  for (int j = 0; j < u->shape->rank; j++) map[j] = -1;
  for (int dd = 0; dd < self; dd++)
    if (self_map[dd] >= 0) map[self_map[dd]] = dd;
  TS_CHECK(offer_remap(x, n, 0, node(x, u)->v[0], u->shape->rank, self, map));
  return offer_remap(x, n, 0, node(x, u->ops[1 - k])->v[0], other, self, other_to_self);
}

/* Scatter operand k: an operand follows its result; the indices follow the
 * updates' batch dims; updates follow the result's window dims, then the
 * indices. */
static ts_status_t scatter_backward(ctx_t *x, const node_t *n, const ts_hlo_instr_t *u, int k) {
  const node_t *nu = node(x, u);
  int ns = (u->nops - 1) / 2;
  if (ns < 1 || u->nops != 2 * ns + 1) return TS_OK;
  if (k < ns) {
    if (k < nu->n && same_dims(u->ops[k]->shape, nu->shape[k])) offer(x, n, 0, nu->v[k]);
    return TS_OK;
  }
  for (int j = 0; j < ns; j++) {
    gather_dims_t g;
    if (!gather_dims(u, u->ops[j]->shape, u->ops[ns]->shape, u->ops[ns + 1 + j]->shape, true, &g)) continue;
    if (k == ns) TS_CHECK(offer_remap(x, n, 0, node(x, u->ops[ns + 1 + j])->v[0], g.wrank, g.irank, g.wi));
    if (k != ns + 1 + j) continue;
    if (j < nu->n) TS_CHECK(offer_remap(x, n, 0, nu->v[j], g.orank, g.wrank, g.omap));
    TS_CHECK(offer_remap(x, n, 0, node(x, u->ops[ns])->v[0], g.irank, g.wrank, g.imap));
  }
  return TS_OK;
}

/* While / call / conditional operand k: the called parameters it feeds
 * (and a while's result, the same loop state). */
static void control_backward(ctx_t *x, const node_t *n, const ts_hlo_instr_t *u, int k) {
  link_t t[MAX_TARGETS];
  if (u->op == TS_OP_WHILE) offer_all(x, n, u);
  for (int j = 0, nt = targets(u, t); j < nt; j++) {
    int p = t[j].role == LINK_CALL ? k : 0;
    if (t[j].role == LINK_BRANCH && t[j].base != k) continue;
    if (p < t[j].comp->nparams && t[j].comp->params[p]) offer_all(x, n, t[j].comp->params[p]);
  }
}

/* Backward: what user u, through its operand k (== the visited node), says. */
static ts_status_t from_user(ctx_t *x, const node_t *n, const ts_hlo_instr_t *u, int k) {
  const node_t *nu = node(x, u);
  const ts_shape_t *s = u->ops[k]->shape;
  if (is_elementwise(u)) {
    if (same_dims(s, u->shape)) offer(x, n, 0, nu->v[0]);
    return TS_OK;
  }
  const ts_hlo_attr_t *dims = list_attr(u, "dimensions");
  int map[SH_MAX_RANK];
  switch (u->op) {
  case TS_OP_BROADCAST: {
    int r = u->shape->rank;
    if (!dims || !ts_shape_is_array(s) || dims->v.list.n != s->rank || r > SH_MAX_RANK) break;
    for (int j = 0; j < r; j++) map[j] = -1;
    for (int d = 0; d < s->rank; d++)
      if (dims->v.list.v[d] >= 0 && dims->v.list.v[d] < r) map[dims->v.list.v[d]] = d;
    return offer_remap(x, n, 0, nu->v[0], r, s->rank, map);
  }
  case TS_OP_TRANSPOSE: {
    int64_t inv[SH_MAX_RANK];
    ts_sharding_value_t *v = nu->v[0], *r = NULL;
    if (!dims || !v || dims->v.list.n != s->rank || s->rank > SH_MAX_RANK) break;
    if (v->kind == TS_SHARD_TILED && v->data_rank != s->rank) break;
    for (int d = 0; d < s->rank; d++) inv[d] = -1;
    for (int d = 0; d < s->rank; d++)
      if (dims->v.list.v[d] >= 0 && dims->v.list.v[d] < s->rank) inv[dims->v.list.v[d]] = d;
    ts_status_t st = transpose_of(x, v, s->rank, inv, &r);
    if (st == TS_ERR_NOMEM) return st;
    if (st == TS_OK) offer(x, n, 0, r);
    break;
  }
  case TS_OP_RESHAPE: {
    ts_sharding_value_t *v = nu->v[0], *r = NULL;
    if (!v) break;
    ts_status_t st = reshape_partial(x, v, u->shape, s, &r);
    if (st == TS_ERR_NOMEM) return st;
    if (st == TS_OK) offer(x, n, 0, r);
    break;
  }
  case TS_OP_REDUCE: {
    int nin = u->nops / 2;
    for (int leaf = 0; k >= nin && leaf < nu->n; leaf++) TS_CHECK(offer_scalar(x, n, nu->v[leaf])); /* init value */
    if (k >= nin || !dims || !ts_shape_is_array(s) || s->rank > SH_MAX_RANK) break;
    bool reduced[SH_MAX_RANK] = {false};
    for (int r = 0; r < dims->v.list.n; r++)
      if (dims->v.list.v[r] >= 0 && dims->v.list.v[r] < s->rank) reduced[dims->v.list.v[r]] = true;
    int out = 0;
    for (int d = 0; d < s->rank; d++)
      if (!reduced[d]) map[out++] = d;
    for (int leaf = 0; leaf < nu->n; leaf++) TS_CHECK(offer_remap(x, n, 0, nu->v[leaf], out, s->rank, map));
    for (int j = 0; j < nin; j++) /* variadic: the inputs reduce together, one sharding (XLA) */
      if (j != k && same_dims(u->ops[j]->shape, s)) offer(x, n, 0, node(x, u->ops[j])->v[0]);
    break;
  }
  case TS_OP_DOT:
  case TS_OP_CONVOLUTION: return dot_backward(x, n, u, k);
  case TS_OP_TUPLE: {
    int off = 0;
    for (int j = 0; j < k; j++) off += node(x, u->ops[j])->n;
    offer_leaves(x, n, 0, u, off, n->n);
    break;
  }
  case TS_OP_GET_TUPLE_ELEMENT: {
    const ts_hlo_attr_t *idx = ts_hlo_instr_attr(u, "index");
    if (!idx || idx->kind != TS_ATTR_INT || s->elem != TS_TUPLE) break;
    offer_leaves(x, n, leaf_offset(s, idx->v.i), u, 0, nu->n);
    break;
  }
  case TS_OP_OPT_BARRIER: offer_all(x, n, u); break;
  case TS_OP_SLICE:
  case TS_OP_PAD:
    if (k == 0) return offer_kept(x, n, 0, nu->v[0], u->shape, s, false);
    return offer_scalar(x, n, nu->v[0]); /* padding value */
  case TS_OP_CONCATENATE: return offer_kept(x, n, 0, nu->v[0], u->shape, s, false);
  case TS_OP_DYNAMIC_SLICE:
    if (k == 0) return offer_kept(x, n, 0, nu->v[0], u->shape, s, true);
    return offer_scalar(x, n, nu->v[0]); /* start index */
  case TS_OP_DYNAMIC_UPDATE_SLICE:
    if (k == 0 && same_dims(s, u->shape)) offer(x, n, 0, nu->v[0]);
    else if (k == 1) return offer_kept(x, n, 0, nu->v[0], u->shape, s, true);
    else if (k > 1) return offer_scalar(x, n, nu->v[0]);
    break;
  case TS_OP_SORT:
    for (int l = 0; l < nu->n; l++) TS_CHECK(offer_sort(x, n, 0, u, nu->v[l], s));
    for (int j = 0; j < u->nops; j++)
      if (j != k) TS_CHECK(offer_sort(x, n, 0, u, node(x, u->ops[j])->v[0], s));
    break;
  case TS_OP_GATHER: {
    gather_dims_t g;
    if (u->nops != 2 || !gather_dims(u, u->ops[0]->shape, u->ops[1]->shape, u->shape, false, &g)) break;
    if (k == 0) return offer_remap(x, n, 0, nu->v[0], g.wrank, g.orank, g.wo);
    return offer_remap(x, n, 0, nu->v[0], g.wrank, g.irank, g.wi);
  }
  case TS_OP_SCATTER: return scatter_backward(x, n, u, k);
  case TS_OP_CUSTOM_CALL:
    if (is_target(u, "xla.sdy.GlobalToLocalShape")) offer(x, n, 0, sdy_leaf(nu->sdy, k));
    else if (is_target(u, "xla.sdy.LocalToGlobalShape")) offer(x, n, 0, x->manual);
    break;
  case TS_OP_WHILE:
  case TS_OP_CALL:
  case TS_OP_CONDITIONAL: control_backward(x, n, u, k); break;
  default: break;
  }
  return TS_OK;
}

static ts_status_t pull_backward(ctx_t *x, const ts_hlo_instr_t *i, const node_t *n) {
  for (int j = 0; j < i->nusers; j++) {
    const ts_hlo_instr_t *u = i->users[j];
    for (int k = 0; k < u->nops; k++)
      if (u->ops[k] == i) TS_CHECK(from_user(x, n, u, k));
  }
  if (i->is_root)
    for (int k = 0; n->links && k < n->links->n; k++) {
      const link_t *l = &n->links->v[k];
      if (l->role == LINK_WHILE_COND || l->role == LINK_APPLY) continue;
      offer_all(x, n, l->caller);
      if (l->role == LINK_WHILE_BODY && l->comp->nparams > 0 && l->comp->params[0])
        offer_all(x, n, l->comp->params[0]); /* loop-carried: root == parameter */
    }
  return TS_OK;
}

static bool changed_since(ctx_t *x, const ts_hlo_instr_t *y, uint32_t seen) { return node(x, y)->stamp > seen; }

/* A visit reads only the instruction's operands (forward) or its users and
 * their operands (backward), unless computations are linked in (parameters,
 * the root of a called computation, callers): those are always visited.
 * If nothing it reads changed since its last visit in the same direction,
 * the visit would offer the same candidates again and change nothing, so it
 * is skipped: later rounds touch only where values moved. */
static bool needs_visit(ctx_t *x, const ts_hlo_instr_t *i, const node_t *n, bool forward) {
  uint32_t seen = n->seen[forward];
  if (seen == 0 || i->ncalled > 0 || i->op == TS_OP_PARAMETER || (i->is_root && n->links && n->links->n > 0))
    return true;
  if (forward) {
    for (int k = 0; k < i->nops; k++)
      if (changed_since(x, i->ops[k], seen)) return true;
    return false;
  }
  for (int j = 0; j < i->nusers; j++) {
    const ts_hlo_instr_t *u = i->users[j];
    if (u->ncalled > 0 || changed_since(x, u, seen)) return true;
    for (int k = 0; k < u->nops; k++)
      if (changed_since(x, u->ops[k], seen)) return true;
  }
  return false;
}

static ts_status_t visit(ctx_t *x, const ts_hlo_instr_t *i, bool forward) {
  node_t *n = node(x, i);
  if (n->fixed || n->n == 0 || !needs_visit(x, i, n, forward)) return TS_OK;
  n->seen[forward] = x->clock;
  for (int k = 0; k < n->n; k++) {
    x->cand[k] = NULL;
    x->cand_score[k] = -1;
  }
  TS_CHECK(forward ? pull_forward(x, i, n) : pull_backward(x, i, n));
  TS_CHECK(x->err);
  for (int k = 0; k < n->n; k++) {
    ts_sharding_value_t *c = x->cand[k], *old = n->v[k], *nv = NULL;
    if (!c) continue;
    if (old && partial_only(old) && partial_only(c)) {
      /* A tiling is only refined: merged with a compatible candidate, never
       * swapped for an incompatible one, however specific. */
      TS_CHECK(merge_of(x, old, c, &nv));
      if (!nv) nv = c;
      if (nv == old || score(nv) <= score(old)) nv = NULL;
    } else if (x->cand_score[k] > score(old)) {
      nv = c;
    }
    if (nv) {
      n->v[k] = nv;
      n->stamp = ++x->clock;
      x->changed = true;
    }
  }
  return TS_OK;
}

/* ---- setup and result --------------------------------------------------- */

/* The header's allow_spmd_sharding_propagation_to_output (XLA's module
 * config, as JAX writes it): true, or {true} for every output, lets
 * propagation replace the entry root's annotation. */
static bool output_open(const ts_hlo_module_t *m) {
  const ts_hlo_attr_t *a = ts_hlo_module_attr(m, "allow_spmd_sharding_propagation_to_output");
  if (!a) return false;
  if (a->kind == TS_ATTR_BOOL) return a->v.b;
  if (a->kind == TS_ATTR_BOOL_LIST) {
    for (int k = 0; k < a->v.list.n; k++)
      if (!a->v.list.v[k]) return false;
    return a->v.list.n > 0;
  }
  if (a->kind != TS_ATTR_RAW || !a->v.s) return false; /* the parser keeps it as text */
  return strstr(a->v.s, "true") && !strstr(a->v.s, "false");
}

static ts_status_t init_node(ctx_t *x, ts_hlo_instr_t *i, int *max_leaves) {
  node_t *n = node(x, i);
  n->n = ts_shape_leaf_count(i->shape);
  n->shape = ts_arena_alloc(x->a, sizeof *n->shape * (size_t)(n->n ? n->n : 1));
  n->v = ts_arena_alloc(x->a, sizeof *n->v * (size_t)(n->n ? n->n : 1));
  if (!n->shape || !n->v) return TS_ERR_NOMEM;
  memset(n->v, 0, sizeof *n->v * (size_t)(n->n ? n->n : 1));
  int got = 0;
  sh_collect_leaves(i->shape, n->shape, &got);
  if (n->n > *max_leaves) *max_leaves = n->n;
  if (!i->sharding) return TS_OK;
  if (x->m->entry && x->m->entry->root == i && output_open(x->m)) return TS_OK; /* a default, not a constraint */
  n->fixed = true;
  ts_sharding_value_t *v = NULL;
  ts_status_t st = ts_sharding_from_syntax(x->a, i->sharding, i->shape, &v);
  if (st == TS_ERR_NOMEM) return st;
  if (st != TS_OK) return TS_OK; /* kept as written; propagates nothing */
  if (v->kind == TS_SHARD_TUPLE) {
    if (v->ntuple == n->n)
      for (int k = 0; k < n->n; k++) {
        n->v[k] = v->tuple[k];
        TS_CHECK(ts_sharding_cache_intern(x->cache, &n->v[k]));
      }
  } else {
    TS_CHECK(ts_sharding_cache_intern(x->cache, &v));
    for (int k = 0; k < n->n; k++) n->v[k] = v;
  }
  return TS_OK;
}

/* The in_shardings of a GlobalToLocalShape (one per operand) or the
 * out_shardings of a LocalToGlobalShape (one per result leaf): Shardy's
 * shard_map boundaries. Unreadable ones are left NULL (the boundary then
 * only makes the inside manual). */
static ts_status_t read_sdy(ctx_t *x, const ts_hlo_instr_t *i, ts_sdy_meshes_t **meshes, bool *have) {
  bool in = is_target(i, "xla.sdy.GlobalToLocalShape");
  if (!in && !is_target(i, "xla.sdy.LocalToGlobalShape")) return TS_OK;
  const ts_hlo_attr_t *fa = ts_hlo_instr_attr(i, "frontend_attributes");
  const char *text = NULL;
  if (!fa || fa->kind != TS_ATTR_BLOB) return TS_OK;
  ts_status_t st = ts_sharding_frontend_attr(x->a, fa->v.s, in ? "xla.sdy.in_shardings" : "xla.sdy.out_shardings", &text);
  if (st == TS_ERR_NOMEM) return st;
  if (st != TS_OK || !text) return TS_OK;
  if (!*have) {
    st = ts_sharding_sdy_module_meshes(x->a, x->m, meshes);
    if (st == TS_ERR_NOMEM) return st;
    if (st != TS_OK) *meshes = NULL;
    *have = true;
  }
  node_t *n = node(x, i);
  const ts_shape_t *shapes[MAX_TARGETS];
  int ns = in ? i->nops : n->n;
  if (ns > MAX_TARGETS) return TS_OK;
  for (int k = 0; k < ns; k++) shapes[k] = in ? i->ops[k]->shape : n->shape[k];
  ts_sharding_value_t *v = NULL;
  st = ts_sharding_from_sdy(x->a, *meshes, text, ns, shapes, &v);
  if (st == TS_ERR_NOMEM) return st;
  if (st == TS_OK) n->sdy = v;
  return TS_OK;
}

static ts_status_t setup(ctx_t *x) {
  ts_hlo_module_t *m = x->m;
  int nid = m->next_id > 0 ? m->next_id : 1, max_leaves = 1;
  x->nodes = ts_arena_alloc(x->a, sizeof *x->nodes * (size_t)nid);
  x->comp_links = ts_arena_alloc(x->a, sizeof *x->comp_links * (size_t)(m->ncomps + 1));
  x->order = ts_arena_alloc(x->a, sizeof *x->order * (size_t)(m->ncomps + 1));
  ts_sdy_meshes_t *meshes = NULL;
  bool have_meshes = false;
  TS_CHECK(ts_sharding_simple(x->a, TS_SHARD_REPLICATED, &x->replicated));
  TS_CHECK(ts_sharding_simple(x->a, TS_SHARD_MANUAL, &x->manual));
  if (!x->nodes || !x->comp_links || !x->order) return TS_ERR_NOMEM;
  memset(x->nodes, 0, sizeof *x->nodes * (size_t)nid);
  memset(x->comp_links, 0, sizeof *x->comp_links * (size_t)(m->ncomps + 1));
  /* Links: count, then fill. */
  for (int pass = 0; pass < 2; pass++) {
    for (int c = 0; c < m->ncomps; c++)
      for (int k = 0; k < m->comps[c]->ninstrs; k++) {
        link_t t[MAX_TARGETS];
        for (int j = 0, nt = targets(m->comps[c]->instrs[k], t); j < nt; j++)
          for (int cc = 0; cc < m->ncomps; cc++)
            if (m->comps[cc] == t[j].comp) {
              links_t *l = &x->comp_links[cc];
              if (pass == 1) l->v[l->n] = t[j];
              l->n++;
            }
      }
    for (int cc = 0; pass == 0 && cc < m->ncomps; cc++) {
      links_t *l = &x->comp_links[cc];
      if (!(l->v = ts_arena_alloc(x->a, sizeof *l->v * (size_t)(l->n + 1)))) return TS_ERR_NOMEM;
      l->n = 0;
    }
  }
  for (int c = 0; c < m->ncomps; c++) {
    ts_hlo_comp_t *comp = m->comps[c];
    if (!(x->order[c] = ts_arena_alloc(x->a, sizeof *x->order[c] * (size_t)(comp->ninstrs + 1)))) return TS_ERR_NOMEM;
    for (int k = 0; k < comp->ninstrs; k++) {
      if (comp->instrs[k]->id < 0 || comp->instrs[k]->id >= nid) return TS_ERR_INTERNAL;
      TS_CHECK(init_node(x, comp->instrs[k], &max_leaves));
      node(x, comp->instrs[k])->links = &x->comp_links[c];
      TS_CHECK(read_sdy(x, comp->instrs[k], &meshes, &have_meshes));
    }
    TS_CHECK(ts_hlo_comp_operand_post_order(comp, x->order[c]));
  }
  x->cand = ts_arena_alloc(x->a, sizeof *x->cand * (size_t)max_leaves);
  x->cand_score = ts_arena_alloc(x->a, sizeof *x->cand_score * (size_t)max_leaves);
  return x->cand && x->cand_score ? TS_OK : TS_ERR_NOMEM;
}

/* The default for leaves nothing reached: maximal when every user
 * annotation is maximal on one device, else replicated. */
static ts_status_t default_value(ctx_t *x, ts_sharding_value_t **out) {
  int64_t device = -1;
  bool all_maximal = true;
  for (int c = 0; c < x->m->ncomps; c++)
    for (int k = 0; k < x->m->comps[c]->ninstrs; k++) {
      const node_t *n = node(x, x->m->comps[c]->instrs[k]);
      for (int l = 0; n->fixed && l < n->n; l++) {
        const ts_sharding_value_t *v = n->v[l];
        if (!v || v->kind != TS_SHARD_MAXIMAL || (device >= 0 && v->device != device)) all_maximal = false;
        else device = v->device;
      }
    }
  if (all_maximal && device >= 0) return ts_sharding_maximal(x->a, device, out);
  return ts_sharding_simple(x->a, TS_SHARD_REPLICATED, out);
}

/* The syntax of v in the module arena. Leaves are converted once per value
 * and the instructions with that value share the one (immutable) struct:
 * after interning, a module has a handful of distinct leaves, where a struct
 * each would be 170 MB at a million instructions. */
static ts_status_t syntax_of(ctx_t *x, const ts_sharding_value_t *v, ts_sharding_t **out) {
  ts_arena_t *a = x->m->arena;
  if (v->kind == TS_SHARD_TUPLE) return ts_sharding_to_syntax(a, v, out);
  int64_t key[2] = {MEMO_SYNTAX, addr(v)};
  ts_sharding_t *s = NULL;
  if (!ts_sharding_cache_get(x->cache, key, 2, (void **)&s)) {
    TS_CHECK(ts_sharding_to_syntax(a, v, &s));
    TS_CHECK(ts_sharding_cache_put(x->cache, key, 2, s));
  }
  *out = s;
  return TS_OK;
}

/* A tuple's syntax: its leaves through syntax_of (ts_sharding_to_syntax's
 * layout: kind, no device, no shard group, one element per leaf). */
static ts_status_t tuple_syntax(ctx_t *x, int n, ts_sharding_value_t *const *leaves, ts_sharding_t **out) {
  ts_arena_t *a = x->m->arena;
  ts_sharding_t *s = ts_arena_alloc(a, sizeof *s);
  if (!s || !(s->tuple = ts_arena_alloc(a, sizeof *s->tuple * (size_t)(n ? n : 1)))) return TS_ERR_NOMEM;
  s->kind = TS_SHARD_TUPLE;
  s->ntuple = n;
  for (int k = 0; k < n; k++) TS_CHECK(syntax_of(x, leaves[k], &s->tuple[k]));
  *out = s;
  return TS_OK;
}

static ts_status_t write_back(ctx_t *x, ts_sharding_propagate_stats_t *stats) {
  ts_sharding_value_t *def = NULL;
  TS_CHECK(default_value(x, &def));
  for (int c = 0; c < x->m->ncomps; c++)
    for (int k = 0; k < x->m->comps[c]->ninstrs; k++) {
      ts_hlo_instr_t *i = x->m->comps[c]->instrs[k];
      node_t *n = node(x, i);
      if (n->fixed) {
        stats->annotated++;
        continue;
      }
      bool any = false;
      for (int l = 0; l < n->n; l++) {
        any |= n->v[l] != NULL;
        if (!n->v[l]) n->v[l] = def;
      }
      if (any) stats->propagated++;
      else stats->defaulted++;
      if (i->shape->elem == TS_TUPLE) TS_CHECK(tuple_syntax(x, n->n, n->v, &i->sharding));
      else TS_CHECK(syntax_of(x, n->v[0], &i->sharding));
    }
  return TS_OK;
}

ts_status_t ts_sharding_propagate(ts_hlo_module_t *m, const ts_sharding_propagate_opts_t *opts, ts_diag_t *diag) {
  if (!m) return TS_ERR_INVALID_ARGUMENT;
  ts_sharding_propagate_stats_t local = {0}, *stats = opts && opts->stats ? opts->stats : &local;
  memset(stats, 0, sizeof *stats);
  int max_rounds = opts && opts->max_rounds > 0 ? opts->max_rounds : DEFAULT_ROUNDS;
  ctx_t x = {.m = m, .a = ts_arena_create(), .clock = 1};
  ts_status_t st = x.a ? ts_sharding_cache_create(&x.cache) : TS_ERR_NOMEM;
  if (st != TS_OK) {
    ts_arena_destroy(x.a);
    return st;
  }
  TS_CHECK_GOTO(setup(&x), st, done);
  stats->converged = false;
  for (int round = 0; round < max_rounds && !stats->converged; round++) {
    x.changed = false;
    for (int c = 0; c < m->ncomps; c++)
      for (int k = 0; k < m->comps[c]->ninstrs; k++) TS_CHECK_GOTO(visit(&x, x.order[c][k], true), st, done);
    for (int c = m->ncomps - 1; c >= 0; c--)
      for (int k = m->comps[c]->ninstrs - 1; k >= 0; k--) TS_CHECK_GOTO(visit(&x, x.order[c][k], false), st, done);
    stats->rounds = round + 1;
    stats->converged = !x.changed;
  }
  TS_CHECK_GOTO(write_back(&x, stats), st, done);
done:
  if (st != TS_OK && diag && !diag->text)
    ts_diag_plain(diag, "sharding propagation of module '%s' failed: %s", m->name ? m->name : "",
                  ts_status_string(st));
  ts_sharding_cache_destroy(x.cache);
  ts_arena_destroy(x.a);
  return st;
}
