/* select-and-scatter along a tiled dim by halo exchange (GSPMD section 4.3,
 * as for reduce-window): every device evaluates, whole, each window that
 * reaches into its output tile, and keeps what lands in the tile. Padding
 * is never a candidate, whatever the select computation, and no device
 * evaluates a window that does not exist, whatever the scatter: each
 * device runs the op on its real rows and existing windows only, with the
 * window's padding attribute standing for the rows it lacks (one variant
 * per distinct edge, picked by a conditional on the partition). */
#include "partitioner_internal.h"

#include <stdio.h>
#include <string.h>

/* The geometry of the one tiled windowed dim d: N operand (= result) rows
 * in tiles of ci, M windows (source rows) in tiles of cs, nq tile positions
 * that hold result rows; window w covers the operand rows
 * [w*st - pl, w*st - pl + E) (rows outside [0, N) are padding). */
typedef struct {
  int64_t t, N, M, ci, cs, nq, st, pl, E;
} sas_geom_t;

/* A covering halo window: device q gets rows [A*q + B, A*q + B + len);
 * `rows`: how many ts_part_halo_window moves to each device. */
typedef struct {
  int64_t A, B, len, rows;
} sas_cover_t;

/* How the windows are laid out per device: the device at tile position q
 * (q < nq) evaluates windows [w[q], w[q] + K) (those outside [0, M) are
 * left out later) on the operand rows [a_q, a_q + L), a_q = w[q]*st - pl.
 * Both come over in one covering halo window each and are cut to size at a
 * per-device offset. */
typedef struct {
  int64_t K, L, cost;
  int64_t *w;
  sas_cover_t x, src;
} sas_plan_t;

/* Layouts: RAW takes each tile's run of windows as the arithmetic gives it
 * (affine in q: small halos), CLAMP first drops the windows outside
 * [0, M) (a shorter run when the edge tiles set the length). */
enum { PLAN_RAW, PLAN_CLAMP };

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The rows ts_part_halo_window moves to each device for the windows
 * [A*q + B, + L) over t tiles of c (per shift, the part of the source
 * tiles some window reads); -1 when they span more shards than it allows. */
static int64_t halo_rows(int64_t t, int64_t c, int64_t A, int64_t B, int64_t L, int64_t nq) {
  int64_t smin, smax, plo[4], phi[4], rows = 0;
  if (!ts_part_halo_span(t, c, A, B, L, nq, &smin, &smax)) return -1;
  for (int64_t k = 0; k <= smax - smin; k++) plo[k] = c, phi[k] = 0;
  for (int64_t q = 0; q < nq; q++) {
    int64_t w0 = A * q + B, w1 = w0 + L, j0 = max64(floor_div(w0, c), 0), j1 = min64(floor_div(w1 - 1, c), t - 1);
    for (int64_t j = j0; j <= j1; j++) {
      int64_t k = j - q - smin;
      plo[k] = min64(plo[k], max64(w0 - j * c, 0));
      phi[k] = max64(phi[k], min64(w1 - j * c, c));
    }
  }
  for (int64_t k = 0; k <= smax - smin; k++)
    if (k + smin != 0 && phi[k] > plo[k]) rows += phi[k] - plo[k];
  return rows;
}

/* The covering window of the runs [start[q], start[q] + len) (q < nq) over
 * t tiles of c, for the slope among `cands` (plus the one through the end
 * points) that moves the fewest rows; false when none fits
 * ts_part_halo_span. */
static bool cover(const int64_t *start, int64_t nq, int64_t len, int64_t t, int64_t c, const int64_t *cands,
                  int ncands, sas_cover_t *out) {
  int64_t A[8];
  int n = 0;
  for (int k = 0; k < ncands && n < 6; k++) A[n++] = cands[k];
  if (nq > 1) {
    A[n] = floor_div(start[nq - 1] - start[0], nq - 1);
    A[n + 1] = A[n] + 1;
    n += 2;
  }
  bool have = false;
  for (int k = 0; k < n; k++) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    if (A[k] < 0) continue;
    for (int64_t q = 0; q < nq; q++) lo = min64(lo, start[q] - A[k] * q), hi = max64(hi, start[q] - A[k] * q);
    sas_cover_t cv = {A[k], lo, hi - lo + len, 0};
    cv.rows = halo_rows(t, c, cv.A, cv.B, cv.len, nq);
    if (cv.rows < 0) continue;
    if (!have || cv.rows < out->rows || (cv.rows == out->rows && cv.len < out->len)) *out = cv, have = true;
  }
  return have;
}

/* Fills *pl for layout `mode` (xrow, srow: bytes of one operand and one
 * source row on a device); false when no window reaches a real row or the
 * halos span more shards than ts_part_halo_span allows. */
static bool make_plan(part_t *p, const sas_geom_t *g, int mode, int64_t xrow, int64_t srow, sas_plan_t *pl) {
  memset(pl, 0, sizeof *pl);
  pl->w = ts_arena_alloc(p->a, sizeof *pl->w * (size_t)g->nq);
  int64_t *a = ts_arena_alloc(p->a, sizeof *a * (size_t)g->nq);
  if (!pl->w || !a) return false;
  for (int64_t q = 0; q < g->nq; q++) {
    /* The windows that reach into the tile's real rows [lo, hi). */
    int64_t lo = q * g->ci, hi = min64(lo + g->ci, g->N);
    int64_t wa = floor_div(lo + g->pl - g->E, g->st) + 1, wb = floor_div(hi - 1 + g->pl, g->st);
    if (mode == PLAN_CLAMP) wa = max64(wa, 0), wb = min64(wb, g->M - 1);
    pl->w[q] = wa;
    pl->K = max64(pl->K, wb - wa + 1);
  }
  if (pl->K <= 0) return false;
  pl->L = (pl->K - 1) * g->st + g->E;
  for (int64_t q = 0; q < g->nq; q++) a[q] = pl->w[q] * g->st - g->pl;
  /* Slopes: the tiles' own, and the windows' per tile (rounded both ways). */
  int64_t per = g->ci / g->st;
  int64_t xc[3] = {g->ci, per * g->st, (per + 1) * g->st}, sc[3] = {g->cs, per, per + 1};
  if (!cover(a, g->nq, pl->L, g->t, g->ci, xc, 3, &pl->x) || !cover(pl->w, g->nq, pl->K, g->t, g->cs, sc, 3, &pl->src))
    return false;
  pl->cost = pl->x.rows * xrow + pl->src.rows * srow;
  return true;
}

/* What a device runs: the buffer rows [r0, r1) (the real rows its windows
 * k0 <= k < k1, those that exist, read), with the window's padding
 * pad_lo / pad_hi standing for the rest of those windows. */
typedef struct {
  int64_t r0, r1, k0, k1;
} sas_variant_t;

/* x cut to [table[partition], + len) on dim d. */
static ts_hlo_instr_t *slice_at(part_t *p, ts_hlo_instr_t *x, int d, const int64_t *table, int64_t len) {
  if (!x) return NULL;
  int r = x->shape->rank;
  int64_t sizes[TS_PART_MAX_RANK], zero = 0;
  ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 1];
  ops[0] = x;
  for (int k = 0; k < r; k++) {
    sizes[k] = k == d ? len : x->shape->dims[k];
    ops[1 + k] = k == d ? ts_part_table_lookup(p, table) : ts_part_const_s32(p, -1, &zero);
  }
  ts_hlo_instr_t *y = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ts_part_shape(p, x->shape->elem, r, sizes), ops, r + 1,
                                  "dynamic-slice");
  ts_part_attr_ints(p, y, "dynamic_slice_sizes", r, sizes);
  return y;
}

/* x's rows [lo, hi) on dim d (x itself when that is all of them). */
static ts_hlo_instr_t *rows_d(part_t *p, ts_hlo_instr_t *x, int d, int64_t lo, int64_t hi) {
  if (!x || (lo == 0 && hi == x->shape->dims[d])) return x;
  int64_t st[TS_PART_MAX_RANK] = {0}, lim[TS_PART_MAX_RANK];
  for (int k = 0; k < x->shape->rank; k++) lim[k] = x->shape->dims[k];
  st[d] = lo;
  lim[d] = hi;
  return ts_part_slice(p, x, st, lim);
}

/* x padded with zeros by lo and hi rows on dim d. */
static ts_hlo_instr_t *pad_d(part_t *p, ts_hlo_instr_t *x, int d, int64_t lo, int64_t hi) {
  if (!x || (lo == 0 && hi == 0)) return x;
  int64_t amount[TS_PART_MAX_RANK] = {0};
  amount[d] = lo + hi;
  ts_hlo_instr_t *y = ts_part_pad(p, x, amount);
  ts_hlo_attr_t *a = y ? (ts_hlo_attr_t *)ts_hlo_instr_attr(y, "padding") : NULL;
  if (!a) return NULL;
  a->v.padding->lo[d] = lo;
  a->v.padding->hi[d] = hi;
  return y;
}

/* The select-and-scatter i on new operands, its window padded lo / hi on
 * dim d (d < 0: the window as it is). */
static ts_hlo_instr_t *local_sas(part_t *p, const ts_hlo_instr_t *i, ts_hlo_instr_t *x, ts_hlo_instr_t *src,
                                 ts_hlo_instr_t *init, int d, int64_t lo, int64_t hi) {
  if (!x) return NULL;
  ts_hlo_instr_t *ops[3] = {x, src, init};
  ts_hlo_instr_t *y = ts_part_emit_like(p, i, ops, x->shape);
  for (int k = 0; y && d >= 0 && k < y->nattrs; k++)
    if (y->attrs[k].kind == TS_ATTR_WINDOW) {
      y->attrs[k].v.window->dims[d].pad_lo = lo;
      y->attrs[k].v.window->dims[d].pad_hi = hi;
    }
  return y;
}

/* Tiled only on dims the window leaves alone: shard by shard. */
static bool sas_untouched(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  ts_hlo_instr_t *x = ts_part_operand(p, i, 0, s), *src = ts_part_operand(p, i, 1, s);
  ts_hlo_instr_t *init = ts_part_operand(p, i, 2, ts_part_replicated(p));
  if (x && src && init) ts_part_set(p, i, local_sas(p, i, x, src, init, -1, 0, 0), s);
  return true;
}

/* y where the s32 iota along d lies in [lo[partition], hi[partition]),
 * init elsewhere. */
static ts_hlo_instr_t *keep_rows(part_t *p, ts_hlo_instr_t *y, int d, const int64_t *lo, const int64_t *hi,
                                 ts_hlo_instr_t *init) {
  if (!y) return NULL;
  int r = y->shape->rank;
  const int64_t *dims = y->shape->dims;
  const ts_shape_t *is = ts_part_shape(p, TS_S32, r, dims), *ps = ts_part_shape(p, TS_PRED, r, dims);
  ts_hlo_instr_t *io = ts_part_add(p, TS_OP_IOTA, is, NULL, 0, "iota");
  ts_part_attr_int(p, io, "iota_dimension", d);
  ts_hlo_instr_t *ge = ts_part_add(p, TS_OP_COMPARE, ps,
                                   (ts_hlo_instr_t *[]){io, ts_part_broadcast_scalar(p, ts_part_table_lookup(p, lo), r, dims)},
                                   2, "compare");
  ts_part_attr_ident(p, ge, "direction", "GE");
  ts_hlo_instr_t *lt = ts_part_add(p, TS_OP_COMPARE, ps,
                                   (ts_hlo_instr_t *[]){io, ts_part_broadcast_scalar(p, ts_part_table_lookup(p, hi), r, dims)},
                                   2, "compare");
  ts_part_attr_ident(p, lt, "direction", "LT");
  ts_hlo_instr_t *in = ts_part_add(p, TS_OP_AND, ps, (ts_hlo_instr_t *[]){ge, lt}, 2, "and");
  return ts_part_add(p, TS_OP_SELECT, y->shape, (ts_hlo_instr_t *[]){in, y, ts_part_broadcast_scalar(p, init, r, dims)},
                     3, "select");
}

/* Variant v on the device's operand rows xw and windows' source rows sw:
 * the result over the buffer's L rows, padded by out_pad[0] / out_pad[1]
 * more (zeros outside the rows the variant computes). */
static ts_hlo_instr_t *run_variant(part_t *p, const ts_hlo_instr_t *i, const sas_variant_t *v, const sas_geom_t *g,
                                   int64_t L, const int64_t *out_pad, int d, ts_hlo_instr_t *xw, ts_hlo_instr_t *sw,
                                   ts_hlo_instr_t *init) {
  ts_hlo_instr_t *y = local_sas(p, i, rows_d(p, xw, d, v->r0, v->r1), rows_d(p, sw, d, v->k0, v->k1), init, d,
                                v->r0 - v->k0 * g->st, (v->k1 - 1) * g->st + g->E - v->r1);
  return pad_d(p, y, d, v->r0 + out_pad[0], L - v->r1 + out_pad[1]);
}

/* run_variant as a computation of one tuple (xw, sw, init) of shape ts, a
 * branch of the conditional that picks each device's variant. */
static ts_hlo_comp_t *variant_comp(part_t *p, const ts_hlo_instr_t *i, const sas_variant_t *v, const sas_geom_t *g,
                                   int64_t L, const int64_t *out_pad, int d, const ts_shape_t *ts) {
  char name[64];
  int n = 0;
  do snprintf(name, sizeof name, "select_and_scatter_variant.%d", n++);
  while (ts_hlo_module_find_comp(p->dst, name));
  part_where_t was;
  ts_hlo_comp_t *c = ts_part_enter_comp(p, name, &was);
  if (!c) return NULL;
  ts_hlo_instr_t *arg = ts_part_add(p, TS_OP_PARAMETER, ts, NULL, 0, "arg"), *el[3];
  if (arg) arg->param_number = 0;
  for (int k = 0; k < 3; k++) {
    el[k] = arg ? ts_part_add(p, TS_OP_GET_TUPLE_ELEMENT, ts->tuple[k], &arg, 1, "get-tuple-element") : NULL;
    ts_part_attr_int(p, el[k], "index", k);
  }
  ts_hlo_instr_t *y = run_variant(p, i, v, g, L, out_pad, d, el[0], el[1], el[2]);
  if (y) ts_hlo_comp_set_root(c, y);
  if (p->st == TS_OK && ts_hlo_comp_index_params(c) != TS_OK) ts_part_fail(p, i, TS_ERR_INTERNAL, "branch parameters");
  ts_part_leave_comp(p, &was);
  return p->st == TS_OK ? c : NULL;
}

bool ts_part_select_and_scatter(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *wa = ts_hlo_instr_attr(i, "window");
  if (s->kind != TS_SHARD_TILED || i->nops != 3 || !wa || wa->kind != TS_ATTR_WINDOW || i->shape->elem == TS_TUPLE)
    return false;
  const ts_window_t *w = wa->v.window;
  const ts_shape_t *in = i->ops[0]->shape, *src = i->ops[1]->shape;
  int r = i->shape->rank, d = -1;
  if (r > TS_PART_MAX_RANK || w->n != r || in->rank != r || src->rank != r || s->data_rank != r) return false;
  for (int k = 0; k < r; k++) {
    const ts_window_dim_t *wd = &w->dims[k];
    bool touched = wd->size != 1 || wd->stride != 1 || wd->pad_lo || wd->pad_hi || wd->lhs_dilate > 1 ||
                   wd->rhs_dilate > 1 || wd->reversal;
    if (!touched || s->dims[k] == 1) continue;
    if (d >= 0) return false; /* one tiled windowed dim */
    d = k;
  }
  if (d < 0) return sas_untouched(p, i, s);
  const ts_window_dim_t *wd = &w->dims[d];
  if (wd->lhs_dilate > 1 || wd->reversal || wd->stride < 1 || wd->size < 1 || wd->pad_lo < 0 || wd->pad_hi < 0)
    return false;
  sas_geom_t g = {.t = s->dims[d], .N = in->dims[d], .M = src->dims[d], .st = wd->stride, .pl = wd->pad_lo};
  g.E = (wd->size - 1) * (wd->rhs_dilate > 1 ? wd->rhs_dilate : 1) + 1;
  if (g.N == 0 || g.M == 0) return false;
  g.ci = (g.N + g.t - 1) / g.t;
  g.cs = (g.M + g.t - 1) / g.t;
  g.nq = (g.N + g.ci - 1) / g.ci;

  const ts_shape_t *lx = ts_part_local_shape(p, in, s), *lsrc = ts_part_local_shape(p, src, s);
  if (!lx || !lsrc) return false;
  int64_t xrow = (int64_t)ts_elem_storage_bytes(in->elem) * ts_shape_elements(lx) / g.ci;
  int64_t srow = (int64_t)ts_elem_storage_bytes(src->elem) * ts_shape_elements(lsrc) / g.cs;
  sas_plan_t best = {0}, cand;
  bool have = false;
  for (int mode = PLAN_RAW; mode <= PLAN_CLAMP; mode++)
    if (make_plan(p, &g, mode, xrow, srow, &cand) && (!have || cand.cost < best.cost)) best = cand, have = true;
  if (!have) return false;
  ts_sharding_value_t *rep = ts_part_replicated(p);
  if (best.cost > ts_part_reshard_bytes(p, in, s, rep) + ts_part_reshard_bytes(p, src, s, rep)) return false;

  /* Per device: its variant, and (relative to its tile) the rows
   * [mlo, mhi) the variant computes; the others read init (no window that
   * exists reaches them, or they are padding). The result is padded by
   * plo / phi rows so that every tile can be cut out of it. */
  enum { MAX_VARIANTS = 8 };
  sas_variant_t vs[MAX_VARIANTS];
  int64_t nv = 0, idx[TS_PART_MAX_RANK + 8], plo = 0, phi = 0;
  int64_t *var = ts_arena_alloc(p->a, sizeof *var * (size_t)p->n);
  int64_t *xoff = ts_arena_alloc(p->a, sizeof *xoff * (size_t)p->n);
  int64_t *soff = ts_arena_alloc(p->a, sizeof *soff * (size_t)p->n);
  int64_t *toff = ts_arena_alloc(p->a, sizeof *toff * (size_t)p->n);
  int64_t *mlo = ts_arena_alloc(p->a, sizeof *mlo * (size_t)p->n);
  int64_t *mhi = ts_arena_alloc(p->a, sizeof *mhi * (size_t)p->n);
  if (!var || !xoff || !soff || !toff || !mlo || !mhi) return false;
  bool mask = false;
  for (int64_t q = 0; q < g.nq; q++) {
    int64_t a = best.w[q] * g.st - g.pl;
    plo = max64(plo, a - q * g.ci);
    phi = max64(phi, q * g.ci + g.ci - (a + best.L));
  }
  for (int64_t dev = 0; dev < p->n; dev++) {
    if (ts_sharding_tile_index(s, dev, idx) != TS_OK) return false;
    int64_t q = idx[d];
    var[dev] = xoff[dev] = soff[dev] = toff[dev] = mlo[dev] = 0;
    mhi[dev] = g.ci;
    if (q >= g.nq) continue; /* a tile of padding only: anything will do */
    int64_t a = best.w[q] * g.st - g.pl;
    xoff[dev] = a - (best.x.A * q + best.x.B);
    soff[dev] = best.w[q] - (best.src.A * q + best.src.B);
    toff[dev] = q * g.ci - a + plo;
    /* Windows that exist, buffer rows that are real. */
    sas_variant_t v = {.k0 = clamp64(-best.w[q], 0, best.K), .k1 = clamp64(g.M - best.w[q], 0, best.K)};
    v.r0 = max64(clamp64(-a, 0, best.L), v.k0 * g.st);
    v.r1 = min64(best.L - clamp64(a + best.L - g.N, 0, best.L), (v.k1 - 1) * g.st + g.E);
    if (v.k1 <= v.k0 || v.r1 <= v.r0) { /* no window here reads a real row: init */
      mlo[dev] = mhi[dev] = 0;
      mask = true;
      continue;
    }
    mlo[dev] = a + v.r0 - q * g.ci;
    mhi[dev] = a + v.r1 - q * g.ci;
    mask |= mlo[dev] > 0 || mhi[dev] < g.ci;
    int64_t k = 0;
    while (k < nv && memcmp(&vs[k], &v, sizeof v) != 0) k++;
    if (k == nv) {
      if (nv == MAX_VARIANTS) return false;
      vs[nv++] = v;
    }
    var[dev] = k;
  }

  ts_hlo_instr_t *x = ts_part_operand(p, i, 0, s), *sx = ts_part_operand(p, i, 1, s);
  ts_hlo_instr_t *init = ts_part_operand(p, i, 2, rep), *xw = NULL, *sw = NULL, *y = NULL;
  if (!x || !sx || !init) return true;
  ts_part_halo_window(p, x, s, d, g.N, best.x.A, best.x.B, best.x.len, g.nq, NULL, &xw);
  ts_part_halo_window(p, sx, s, d, g.M, best.src.A, best.src.B, best.src.len, g.nq, NULL, &sw);
  if (best.x.len > best.L) xw = slice_at(p, xw, d, xoff, best.L);
  if (best.src.len > best.K) sw = slice_at(p, sw, d, soff, best.K);
  if (!xw || !sw) return true;

  /* Each device runs its variant only (a conditional on the variant when
   * there are several), the result back at its place in the buffer's
   * rows. */
  const int64_t out_pad[2] = {plo, phi};
  if (nv == 1) {
    y = run_variant(p, i, &vs[0], &g, best.L, out_pad, d, xw, sw, init);
  } else if (nv > 1) {
    ts_hlo_instr_t *args[3] = {xw, sw, init}, *ops[MAX_VARIANTS + 1];
    ts_shape_t *el[3] = {(ts_shape_t *)xw->shape, (ts_shape_t *)sw->shape, (ts_shape_t *)init->shape};
    const ts_shape_t *ts = ts_hlo_shape_tuple(p->dst, 3, el);
    ts_hlo_comp_t **br = ts_arena_alloc(p->dst->arena, sizeof *br * (size_t)nv);
    if (!ts || !br) {
      ts_part_fail(p, i, TS_ERR_NOMEM, "out of memory");
      return true;
    }
    ops[0] = ts_part_table_lookup(p, var);
    ops[1] = ts_part_add(p, TS_OP_TUPLE, ts, args, 3, "tuple");
    for (int64_t k = 0; k < nv; k++) {
      ops[1 + k] = ops[1];
      br[k] = variant_comp(p, i, &vs[k], &g, best.L, out_pad, d, ts);
    }
    y = ts_part_add(p, TS_OP_CONDITIONAL, br[nv - 1] ? br[nv - 1]->root->shape : NULL, ops, (int)nv + 1,
                    "conditional");
    ts_hlo_attr_t a = {.name = "branch_computations", .kind = TS_ATTR_COMP_LIST};
    a.v.comps.n = (int)nv;
    a.v.comps.comps = br;
    ts_status_t st = y ? ts_hlo_instr_add_attr(y, &a) : TS_OK;
    if (st != TS_OK) ts_part_fail(p, i, st, "out of memory");
  }
  if (nv == 0) { /* no device reads a real row: the result is init */
    int64_t dims[TS_PART_MAX_RANK];
    for (int k = 0; k < r; k++) dims[k] = k == d ? best.L + plo + phi : xw->shape->dims[k];
    y = ts_part_broadcast_scalar(p, init, r, dims);
    mask = false;
  }
  y = slice_at(p, y, d, toff, g.ci);
  if (mask) y = keep_rows(p, y, d, mlo, mhi, init);
  ts_part_set(p, i, y, s);
  return true;
}
