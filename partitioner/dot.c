/* Partitioning dot and convolution. A dot runs the cheapest of a few
 * shardings of its loop nest (operands following the result, or kept in
 * place with partial products summed across devices), costed in bytes
 * per device, or, with choose_faster_windowed_einsum_over_mem where a
 * windowed loop is possible, in estimated time; windowed.c may turn the
 * chosen one into a loop. */
#include "partitioner_internal.h"

#include <math.h>
#include <string.h>

/* ---- the dot's iteration space ----------------------------------------- */

static int attr_len(const ts_hlo_attr_t *a) { return a && a->kind == TS_ATTR_INT_LIST ? a->v.list.n : 0; }

static bool dot_space(const ts_hlo_instr_t *i, dot_space_t *sp) {
  const ts_hlo_attr_t *lb = ts_hlo_instr_attr(i, "lhs_batch_dims"), *rb = ts_hlo_instr_attr(i, "rhs_batch_dims");
  const ts_hlo_attr_t *lc = ts_hlo_instr_attr(i, "lhs_contracting_dims"),
                      *rc = ts_hlo_instr_attr(i, "rhs_contracting_dims");
  const ts_shape_t *ls = i->ops[0]->shape, *rs = i->ops[1]->shape;
  memset(sp, 0, sizeof *sp);
  sp->nb = attr_len(lb);
  sp->nc = attr_len(lc);
  sp->lr = ls->rank;
  sp->rr = rs->rank;
  sp->nlf = ls->rank - sp->nb - sp->nc;
  sp->nrf = rs->rank - sp->nb - sp->nc;
  sp->nout = sp->nb + sp->nlf + sp->nrf;
  sp->rank = sp->nout + sp->nc;
  if (attr_len(rb) != sp->nb || attr_len(rc) != sp->nc || sp->nlf < 0 || sp->nrf < 0 ||
      sp->nout != i->shape->rank || sp->rank > TS_PART_MAX_RANK)
    return false;
  for (int side = 0; side < 2; side++) {
    const ts_hlo_attr_t *b = side ? rb : lb, *c = side ? rc : lc;
    const ts_shape_t *os = side ? rs : ls;
    int64_t *map = side ? sp->rmap : sp->lmap;
    for (int d = 0; d < os->rank; d++) map[d] = -1;
    for (int k = 0; k < sp->nb; k++) map[b->v.list.v[k]] = k;
    for (int k = 0; k < sp->nc; k++) map[c->v.list.v[k]] = sp->nout + k;
    int next = side ? sp->nb + sp->nlf : sp->nb;
    for (int d = 0; d < os->rank; d++) {
      if (map[d] < 0) map[d] = next++;
      sp->size[map[d]] = os->dims[d];
    }
  }
  for (int d = 0; d < sp->nout; d++) sp->omap[d] = d;
  return true;
}

/* Where a space sharding comes from: the tiling of `v` (an operand's or
 * the result's) on the data dims whose space dim (map) is in `take`. */
typedef struct {
  const ts_sharding_value_t *v;
  const int64_t *map;
  bool take[2 * TS_PART_MAX_RANK];
} source_t;

static source_t source(const ts_sharding_value_t *v, const int64_t *map, const dot_space_t *sp, int from, int to) {
  source_t s = {.v = v, .map = map};
  for (int d = from; d < to; d++) s.take[d] = true;
  return s;
}

/* The space sharding whose tiles on each space dim are those of the one
 * source that takes it; NULL when the sources do not fit together (two
 * tile the same dim, or devices do not fall into equal groups per tile:
 * what is left over becomes a replicated subgroup). */
static ts_sharding_value_t *combine(part_t *p, const dot_space_t *sp, int nsrc, const source_t *src) {
  int64_t n = p->n, cdims[2 * TS_PART_MAX_RANK + 1], idx[TS_PART_MAX_RANK + 8];
  for (int d = 0; d < sp->rank; d++) cdims[d] = 1;
  for (int k = 0; k < nsrc; k++) {
    const ts_sharding_value_t *v = src[k].v;
    if (!v || v->kind != TS_SHARD_TILED) continue;
    for (int e = 0; e < v->data_rank; e++) {
      int64_t t = src[k].map[e];
      if (t < 0 || !src[k].take[t] || v->dims[e] == 1) continue;
      if (cdims[t] != 1) return NULL;
      cdims[t] = v->dims[e];
    }
  }
  int64_t tiles = 1;
  for (int d = 0; d < sp->rank; d++) tiles *= cdims[d];
  if (n % tiles != 0) return NULL;
  int64_t rep = n / tiles;
  int64_t *tile_of = ts_arena_alloc(p->a, sizeof *tile_of * (size_t)n * 3);
  if (!tile_of) {
    p->st = TS_ERR_NOMEM;
    return NULL;
  }
  int64_t *count = tile_of + n, *devs = tile_of + 2 * n;
  for (int64_t t = 0; t < tiles; t++) count[t] = 0;
  for (int64_t dev = 0; dev < n; dev++) {
    int64_t cidx[2 * TS_PART_MAX_RANK] = {0};
    for (int k = 0; k < nsrc; k++) {
      const ts_sharding_value_t *v = src[k].v;
      if (!v || v->kind != TS_SHARD_TILED) continue;
      if (ts_sharding_tile_index(v, dev, idx) != TS_OK) return NULL;
      for (int e = 0; e < v->data_rank; e++) {
        int64_t t = src[k].map[e];
        if (t >= 0 && src[k].take[t] && v->dims[e] > 1) cidx[t] = idx[e];
      }
    }
    int64_t l = 0;
    for (int d = 0; d < sp->rank; d++) l = l * cdims[d] + cidx[d];
    if (count[l] == rep) return NULL;
    devs[l * rep + count[l]++] = dev;
  }
  cdims[sp->rank] = rep;
  ts_subgroup_t sub = TS_SUBGROUP_REPLICATED;
  ts_sharding_value_t *out = NULL;
  if (ts_sharding_tiled(p->a, sp->rank + 1, cdims, devs, 1, &sub, &out) != TS_OK) return NULL;
  return out;
}

/* The sharding, under space sharding I, of an array whose dim k is space
 * dim map[k] (an operand, or the result with its partial sums). */
static ts_sharding_value_t *project(part_t *p, const dot_space_t *sp, const ts_sharding_value_t *I, int rank,
                                    const int64_t *map) {
  bool keep[2 * TS_PART_MAX_RANK] = {false};
  for (int k = 0; k < rank; k++) keep[map[k]] = true;
  ts_sharding_value_t *r = ts_part_replicate_dims(p, I, sp->rank, keep);
  return ts_part_select_dims(p, r, rank, map);
}

static int64_t bytes_of(const ts_shape_t *s) {
  int64_t n = ts_elem_storage_bytes(s->elem);
  for (int d = 0; d < s->rank; d++) n *= s->dims[d];
  return n;
}

static bool make_plan(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, ts_sharding_value_t *I,
                      const ts_sharding_value_t *S, dot_plan_t *pl) {
  if (!I || p->st != TS_OK) return false;
  memset(pl, 0, sizeof *pl);
  pl->I = I;
  for (int c = sp->nout; I->kind == TS_SHARD_TILED && c < sp->rank; c++)
    if (I->dims[c] > 1) {
      if (sp->size[c] % I->dims[c] != 0) return false; /* padding would join the sums */
      pl->partial = true;
    }
  if (pl->partial && i->shape->elem == TS_PRED) return false;
  pl->ls = project(p, sp, I, sp->lr, sp->lmap);
  pl->rs = project(p, sp, I, sp->rr, sp->rmap);
  pl->ps = project(p, sp, I, sp->nout, sp->omap);
  if (!pl->ls || !pl->rs || !pl->ps) return false;
  const ts_hlo_instr_t *l = i->ops[0], *r = i->ops[1];
  pl->cost = ts_part_reshard_cost(p, l->shape, p->sh[l->id], pl->ls) +
             ts_part_reshard_cost(p, r->shape, p->sh[r->id], pl->rs) +
             ts_part_reshard_cost(p, i->shape, pl->ps, S);
  if (pl->partial) {
    const ts_shape_t *local = ts_part_local_shape(p, i->shape, pl->ps);
    if (!local) return false;
    pl->cost += bytes_of(local);
  }
  return true;
}

/* The candidate space shardings, from the operands' and the result's own
 * tilings and their combinations, in order of preference at equal cost:
 * the result's (operands follow it, no sums), then those that keep an
 * operand in place. */
static int candidates(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const ts_sharding_value_t *S,
                      ts_sharding_value_t **out) {
  const ts_sharding_value_t *L = p->sh[i->ops[0]->id], *R = p->sh[i->ops[1]->id];
  int b = sp->nb, lf = b + sp->nlf, rf = lf + sp->nrf, all = sp->rank;
  source_t s_all = source(S, sp->omap, sp, 0, sp->nout), l_all = source(L, sp->lmap, sp, 0, all),
           r_all = source(R, sp->rmap, sp, 0, all);
  source_t s_rf = source(S, sp->omap, sp, lf, rf), s_lf = source(S, sp->omap, sp, b, lf);
  source_t s_blf = source(S, sp->omap, sp, 0, lf), s_brf = s_rf;
  for (int d = 0; d < b; d++) s_brf.take[d] = true;
  source_t l_c = source(L, sp->lmap, sp, sp->nout, all), r_c = source(R, sp->rmap, sp, sp->nout, all);
  source_t l_lf = source(L, sp->lmap, sp, b, lf), r_rf = source(R, sp->rmap, sp, lf, rf);
  source_t l_nb = source(L, sp->lmap, sp, b, all), r_nb = source(R, sp->rmap, sp, b, all); /* batch left out */
  source_t sets[][3] = {
      {s_all}, {l_all, s_rf}, {r_all, s_lf}, {s_all, l_c}, {s_all, r_c}, {s_blf, r_nb}, {s_brf, l_nb},
      {l_all}, {r_all}, {l_all, r_rf}, {r_all, l_lf}, {l_c}, {r_c},
  };
  int len[] = {1, 2, 2, 2, 2, 2, 2, 1, 1, 2, 2, 1, 1};
  int n = 0;
  for (size_t k = 0; k < sizeof len / sizeof *len; k++) {
    ts_sharding_value_t *I = combine(p, sp, len[k], sets[k]);
    bool seen = !I;
    for (int j = 0; j < n && !seen; j++) seen = ts_sharding_equal(out[j], I);
    if (!seen) out[n++] = I;
  }
  return n;
}

/* The fallback of old: operands follow the result, contracting dims
 * gathered. Maximal results and shapes the space cannot hold. */
static void dot_aligned(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *lb = ts_hlo_instr_attr(i, "lhs_batch_dims");
  const ts_hlo_attr_t *lc = ts_hlo_instr_attr(i, "lhs_contracting_dims"),
                      *rc = ts_hlo_instr_attr(i, "rhs_contracting_dims");
  int nb = attr_len(lb);
  ts_hlo_instr_t *ops[2];
  for (int side = 0; side < 2; side++) {
    const ts_hlo_attr_t *b = ts_hlo_instr_attr(i, side ? "rhs_batch_dims" : "lhs_batch_dims"), *c = side ? rc : lc;
    const ts_shape_t *os = i->ops[side]->shape;
    int next_out = side ? i->ops[0]->shape->rank - attr_len(lc) : nb;
    int64_t outdim[TS_PART_MAX_RANK], opdim[TS_PART_MAX_RANK];
    bool used[TS_PART_MAX_RANK] = {false};
    int n = 0;
    for (int k = 0; k < nb; k++) {
      outdim[n] = k;
      opdim[n++] = b->v.list.v[k];
      used[b->v.list.v[k]] = true;
    }
    for (int k = 0; k < attr_len(c); k++) used[c->v.list.v[k]] = true;
    for (int d = 0; d < os->rank; d++)
      if (!used[d]) {
        outdim[n] = next_out++;
        opdim[n++] = d;
      }
    ops[side] = ts_part_operand(p, i, side,
                                ts_part_operand_sharding(p, s, i->shape->rank, n, outdim, opdim, os->rank));
  }
  ts_part_set(p, i, ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, s)), s);
}

/* choose_faster_windowed_einsum_over_mem: where some candidate could run
 * as a windowed loop, the one estimated fastest (ts_part_dot_seconds; at
 * equal time the earlier, *best, if `have`, first), so that an all-gather
 * loop can beat a reduce-scatter loop that moves fewer bytes, and a plain
 * collective a loop. Where none could loop, the option is about nothing:
 * the fewest bytes, as without it. Returns whether *best is set. */
static bool choose_faster(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const ts_sharding_value_t *s,
                          int nc, ts_sharding_value_t **cand, bool have, dot_plan_t *best) {
  dot_plan_t fewest = *best, fastest = *best, pl;
  bool any_loop = false, can_loop, loop;
  double t_fastest = have ? ts_part_dot_seconds(p, i, sp, best, s, &any_loop, &loop) : 0;
  bool have_fastest = have;
  for (int k = 0; k < nc; k++) {
    if (!make_plan(p, i, sp, cand[k], s, &pl)) continue;
    if (!have || pl.cost < fewest.cost) fewest = pl;
    have = true;
    double t = ts_part_dot_seconds(p, i, sp, &pl, s, &can_loop, &loop);
    any_loop |= can_loop;
    if (!have_fastest || t < t_fastest) {
      fastest = pl;
      t_fastest = t;
      have_fastest = true;
    }
  }
  if (have) *best = any_loop ? fastest : fewest;
  return have;
}

/* The key of a dot's plan choice: everything make_plan and candidates
 * read (the operand and result shardings, by address; the space, from the
 * dimension numbers; the shapes and element types). n words, n returned. */
static int plan_key(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const ts_sharding_value_t *s,
                    int64_t *key) {
  int n = 0;
  key[n++] = TS_PART_MEMO_DOT_PLAN;
  key[n++] = ts_part_key_ptr(p->sh[i->ops[0]->id]);
  key[n++] = ts_part_key_ptr(p->sh[i->ops[1]->id]);
  key[n++] = ts_part_key_ptr(s);
  key[n++] = i->ops[0]->shape->elem;
  key[n++] = i->ops[1]->shape->elem;
  key[n++] = i->shape->elem;
  key[n++] = sp->nb;
  key[n++] = sp->nc;
  key[n++] = sp->lr;
  key[n++] = sp->rr;
  for (int d = 0; d < sp->lr; d++) key[n++] = sp->lmap[d];
  for (int d = 0; d < sp->rr; d++) key[n++] = sp->rmap[d];
  for (int d = 0; d < sp->rank; d++) key[n++] = sp->size[d];
  return n;
}

/* The plan of least cost (see ts_part_dot); false when none applies. */
static bool fewest_bytes(part_t *p, const ts_hlo_instr_t *i, const dot_space_t *sp, const ts_sharding_value_t *s,
                         dot_plan_t *best) {
  /* Most dots in a model already have operands that follow the result:
   * nothing to move, nothing to weigh. */
  dot_plan_t pl;
  source_t own = source(s, sp->omap, sp, 0, sp->nout);
  bool have = make_plan(p, i, sp, combine(p, sp, 1, &own), s, best);
  if (!have || best->cost > 0) {
    ts_sharding_value_t *cand[16];
    int nc = candidates(p, i, sp, s, cand);
    if (p->opts.choose_faster_windowed_einsum_over_mem) {
      have = choose_faster(p, i, sp, s, nc, cand, have, best);
    } else {
      for (int k = 0; k < nc; k++)
        if (make_plan(p, i, sp, cand[k], s, &pl) && (!have || pl.cost < best->cost)) {
          *best = pl;
          have = true;
        }
    }
  }
  return have;
}

/* dot: among the candidate space shardings, the one whose collectives move
 * the fewest bytes per device (resharding the operands, summing partial
 * results, resharding the result); with
 * choose_faster_windowed_einsum_over_mem, see choose_faster. The choice
 * (none included) is memoised: a model repeats a few dots many times, and
 * weighing the candidates walks every device. */
void ts_part_dot(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  dot_space_t sp;
  if (i->nops != 2 || s->kind == TS_SHARD_MAXIMAL || s->kind == TS_SHARD_TUPLE || !dot_space(i, &sp)) {
    if (i->nops == 2 && s->kind != TS_SHARD_TUPLE) dot_aligned(p, i, s);
    else ts_part_fallback(p, i, s);
    return;
  }
  dot_plan_t best = {0};
  bool have;
  /* choose_faster's time model reads more of i than the key holds. */
  bool memo = !p->opts.choose_faster_windowed_einsum_over_mem;
  int64_t key[12 + 4 * TS_PART_MAX_RANK];
  int nkey = memo ? plan_key(p, i, &sp, s, key) : 0;
  void *hit;
  if (memo && ts_part_memo_get(p, key, nkey, &hit)) {
    have = hit != NULL;
    if (have) best = *(const dot_plan_t *)hit;
  } else {
    have = fewest_bytes(p, i, &sp, s, &best);
    dot_plan_t *keep = memo && p->st == TS_OK && have ? ts_arena_alloc(p->a, sizeof *keep) : NULL;
    if (keep) *keep = best;
    if (memo && (keep || !have)) ts_part_memo_put(p, key, nkey, keep);
  }
  if (p->st != TS_OK) return;
  if (!have) {
    dot_aligned(p, i, s);
    return;
  }
  if (ts_part_windowed_dot(p, i, &sp, &best, s)) return;
  ts_hlo_instr_t *ops[2] = {ts_part_operand(p, i, 0, best.ls), ts_part_operand(p, i, 1, best.rs)};
  ts_hlo_instr_t *v = ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, best.ps));
  if (best.partial) {
    bool mask[2 * TS_PART_MAX_RANK] = {false};
    for (int c = sp.nout; c < sp.rank; c++) mask[c] = true;
    int64_t ng, gs, *groups;
    ts_part_groups_over_dims(p, best.I, mask, &ng, &gs, &groups);
    if (!groups) return;
    v = ts_part_sum_partials(p, v, i->shape, best.ps, ng, gs, groups, ts_part_sum_comp(p, i->shape->elem), s);
  } else {
    v = ts_part_reshard(p, v, i->shape, best.ps, s);
  }
  ts_part_set(p, i, v, s);
}

/* convolution sharded on its batch and output-feature dims (data and
 * model parallelism): like a dot, the lhs takes the batch tiles, the rhs
 * the output-feature tiles, and every device convolves its own. Spatial
 * tiles need halo exchange (not written yet): they fold into replication
 * and the result is sliced after. */
bool ts_part_convolution(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *dn = ts_hlo_instr_attr(i, "dim_labels");
  const ts_hlo_attr_t *fg = ts_hlo_instr_attr(i, "feature_group_count"), *bg = ts_hlo_instr_attr(i, "batch_group_count");
  if (s->kind != TS_SHARD_TILED || i->nops != 2 || !dn || dn->kind != TS_ATTR_CONV_DNUMS) return false;
  if ((fg && fg->v.i != 1) || (bg && bg->v.i != 1)) return false;
  const ts_conv_dnums_t *c = dn->v.conv;
  int r = i->shape->rank;
  bool keep[TS_PART_MAX_RANK] = {false};
  keep[c->out_batch] = keep[c->out_feature] = true;
  ts_sharding_value_t *sp = ts_part_replicate_dims(p, s, r, keep);
  int64_t ob = c->out_batch, of = c->out_feature, ib = c->in_batch, kf = c->k_out_feature;
  ts_sharding_value_t *ls = ts_part_operand_sharding(p, sp, r, 1, &ob, &ib, i->ops[0]->shape->rank);
  ts_sharding_value_t *rs = ts_part_operand_sharding(p, sp, r, 1, &of, &kf, i->ops[1]->shape->rank);
  ts_hlo_instr_t *ops[2] = {ts_part_operand(p, i, 0, ls), ts_part_operand(p, i, 1, rs)};
  ts_hlo_instr_t *x = ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, sp));
  ts_part_set(p, i, ts_part_reshard(p, x, i->shape, sp, s), s);
  return true;
}

