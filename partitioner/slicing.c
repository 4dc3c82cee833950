/* Partitioning ops that move data along some dims only: shard-wise on the
 * others, halo exchange for slices, masked in-place updates. */
#include "partitioner_internal.h"

#include <math.h>
#include <string.h>

/* The dims an op changes (slices, pads, concatenates, reverses, sorts,
 * windows): on every other dim it works shard by shard. false when the op
 * is not one of these. */
static bool touched_dims(const ts_hlo_instr_t *i, bool *touched) {
  int r = i->shape->rank;
  const ts_shape_t *in = i->nops ? i->ops[0]->shape : i->shape;
  if (i->shape->elem == TS_TUPLE) {
    if (i->op != TS_OP_SORT) return false;
    r = in->rank;
  } else if (i->op != TS_OP_IOTA && in->rank != r) {
    return false;
  }
  for (int d = 0; d < r; d++) touched[d] = false;
  const ts_hlo_attr_t *a;
  switch (i->op) {
  case TS_OP_SLICE:
    a = ts_hlo_instr_attr(i, "slice");
    for (int d = 0; d < r; d++)
      touched[d] = a->v.slice->start[d] != 0 || a->v.slice->limit[d] != in->dims[d] || a->v.slice->stride[d] != 1;
    return true;
  case TS_OP_PAD:
    a = ts_hlo_instr_attr(i, "padding");
    for (int d = 0; d < r; d++)
      touched[d] = a->v.padding->lo[d] != 0 || a->v.padding->hi[d] != 0 || a->v.padding->interior[d] != 0;
    return true;
  case TS_OP_CONCATENATE: case TS_OP_REVERSE: case TS_OP_SORT:
    a = ts_hlo_instr_attr(i, "dimensions");
    for (int k = 0; a && k < a->v.list.n; k++) touched[a->v.list.v[k]] = true;
    return a != NULL;
  case TS_OP_IOTA:
    a = ts_hlo_instr_attr(i, "iota_dimension");
    if (a) touched[a->v.i] = true;
    return a != NULL;
  case TS_OP_DYNAMIC_SLICE:
    for (int d = 0; d < r; d++) touched[d] = i->shape->dims[d] != in->dims[d];
    return true;
  case TS_OP_DYNAMIC_UPDATE_SLICE:
    for (int d = 0; d < r; d++) touched[d] = i->ops[1]->shape->dims[d] != in->dims[d];
    return true;
  case TS_OP_REDUCE_WINDOW: {
    a = ts_hlo_instr_attr(i, "window");
    if (!a || a->v.window->n != r || i->nops != 2) return false;
    for (int d = 0; d < r; d++) {
      const ts_window_dim_t *w = &a->v.window->dims[d];
      touched[d] = w->size != 1 || w->stride != 1 || w->pad_lo || w->pad_hi || w->lhs_dilate > 1 ||
                   w->rhs_dilate > 1 || w->reversal;
    }
    return true;
  }
  default: return false;
  }
}

/* An op that only changes `touched` dims runs on shards of the others: the
 * result's tiles on touched dims fold into replication, same-rank operands
 * take that sharding, scalars (pad values, start indices) are replicated,
 * and the result is sliced to `s` after. Attributes that name sizes on the
 * untouched dims (slice limits, dynamic_slice_sizes) get the local sizes. */
bool ts_part_passthrough(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  bool touched[TS_PART_MAX_RANK], keep[TS_PART_MAX_RANK];
  if (s->kind != TS_SHARD_TILED && !(s->kind == TS_SHARD_TUPLE && i->op == TS_OP_SORT)) return false;
  if (!touched_dims(i, touched)) return false;
  const ts_sharding_value_t *s0 = ts_part_leaf(s, 0);
  if (s0->kind != TS_SHARD_TILED) return false;
  for (int k = 1; s->kind == TS_SHARD_TUPLE && k < s->ntuple; k++)
    if (!ts_sharding_equal(s->tuple[k], s0)) return false;
  int r = s0->data_rank;
  for (int d = 0; d < r; d++) keep[d] = !touched[d];
  ts_sharding_value_t *sp = ts_part_replicate_dims(p, s0, r, keep);
  ts_sharding_value_t *full = (ts_sharding_value_t *)sp;
  if (s->kind == TS_SHARD_TUPLE) {
    ts_sharding_value_t *el[64];
    if (s->ntuple > 64) return false;
    for (int k = 0; k < s->ntuple; k++) el[k] = sp;
    if (ts_sharding_tuple(p->a, s->ntuple, el, &full) != TS_OK) return false;
  }
  ts_hlo_instr_t *ops[256];
  if (i->nops > 256) return false;
  for (int k = 0; k < i->nops; k++) {
    const ts_shape_t *os = i->ops[k]->shape;
    ops[k] = ts_part_operand(p, i, k, os->rank == r && os->rank > 0 ? sp : ts_part_replicated(p));
  }
  const ts_shape_t *ls = ts_part_local_shape(p, i->shape, full);
  ts_hlo_instr_t *x = ts_part_emit_like(p, i, ops, ls);
  if (!x) return true;
  /* Local sizes on the untouched dims. */
  const ts_shape_t *lin = i->nops > 0 && ops[0] ? ops[0]->shape : ls;
  for (int k = 0; k < x->nattrs; k++) {
    ts_hlo_attr_t *a = &x->attrs[k];
    if (a->kind == TS_ATTR_SLICE)
      for (int d = 0; d < r; d++)
        if (!touched[d]) a->v.slice->limit[d] = lin->dims[d];
    if (a->kind == TS_ATTR_INT_LIST && !strcmp(a->name, "dynamic_slice_sizes"))
      for (int d = 0; d < r && d < a->v.list.n; d++)
        if (!touched[d]) a->v.list.v[d] = ls->dims[d];
  }
  ts_part_set(p, i, ts_part_reshard(p, x, i->shape, full, s), s);
  return true;
}

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* The shifts a halo window reads (contract: partitioner_internal.h). */
bool ts_part_halo_span(int64_t t, int64_t ci, int64_t A, int64_t B, int64_t L, int64_t nq, int64_t *smin,
                       int64_t *smax) {
  *smin = INT64_MAX;
  *smax = INT64_MIN;
  for (int64_t q = 0; q < nq; q++) {
    int64_t lo = floor_div(A * q + B, ci), hi = floor_div(A * q + B + L - 1, ci);
    if (lo < 0) lo = 0;
    if (hi > t - 1) hi = t - 1;
    if (hi < lo) continue; /* reads nothing real */
    if (lo - q < *smin) *smin = lo - q;
    if (hi - q > *smax) *smax = hi - q;
  }
  return *smax >= *smin && *smax - *smin + 1 <= 4;
}

/* Halo exchange (GSPMD section 4.3): see partitioner_internal.h. Per
 * shift only the part of the source shard that some window reads moves;
 * the pieces are concatenated and the window cut out at a per-device
 * offset. */
void ts_part_halo_window(part_t *p, ts_hlo_instr_t *x, const ts_sharding_value_t *s, int d, int64_t n_in,
                          int64_t A, int64_t B, int64_t L, int64_t nq, ts_hlo_instr_t *fill, ts_hlo_instr_t **out) {
  *out = NULL;
  int r = x->shape->rank;
  int64_t t = s->dims[d], ci = x->shape->dims[d], smin, smax;
  if (!ts_part_halo_span(t, ci, A, B, L, nq, &smin, &smax)) {
    ts_part_fail(p, NULL, TS_ERR_INTERNAL, "halo window spans more shards than its caller checked");
    return;
  }
  /* Per shift k = sh - smin: the part [plo, phi) of the source shards that
   * some window reads; only that moves. A device's window reads a run of
   * consecutive shifts, all of the shards inside it and the end (start) of
   * the first (last): the pieces, concatenated in shift order, hold each
   * window contiguously. bq[q]: where the window's start lands in them. */
  int64_t ns = smax - smin + 1, plo[4], phi[4], pos[5];
  int64_t *bq = ts_arena_alloc(p->a, sizeof *bq * (size_t)(nq + 1));
  bool *real = ts_arena_alloc(p->a, sizeof *real * (size_t)(nq + 1));
  if (!bq || !real) return;
  for (int64_t k = 0; k < ns; k++) plo[k] = ci, phi[k] = 0;
  for (int64_t q = 0; q < nq; q++) {
    int64_t w0 = A * q + B, w1 = w0 + L, j0 = floor_div(w0, ci), j1 = floor_div(w1 - 1, ci);
    if (j0 < 0) j0 = 0;
    if (j1 > t - 1) j1 = t - 1;
    real[q] = j0 <= j1;
    for (int64_t j = j0; j <= j1; j++) {
      int64_t k = j - q - smin, a0 = w0 - j * ci > 0 ? w0 - j * ci : 0, b0 = w1 - j * ci < ci ? w1 - j * ci : ci;
      if (a0 < plo[k]) plo[k] = a0;
      if (b0 > phi[k]) phi[k] = b0;
    }
  }
  pos[0] = 0;
  for (int64_t k = 0; k < ns; k++) pos[k + 1] = pos[k] + (phi[k] > plo[k] ? phi[k] - plo[k] : 0);
  for (int64_t q = 0; q < nq; q++) {
    int64_t j0 = floor_div(A * q + B, ci);
    if (j0 < 0) j0 = 0;
    bq[q] = real[q] ? pos[j0 - q - smin] - plo[j0 - q - smin] + A * q + B - j0 * ci : 0;
  }
  ts_hlo_instr_t *pieces[4];
  int np = 0;
  int64_t idx[TS_PART_MAX_RANK + 8], src;
  for (int64_t k = 0; k < ns; k++) {
    if (phi[k] <= plo[k]) continue; /* a shift no window reads */
    int64_t sh = smin + k;
    ts_hlo_instr_t *part = x;
    if (plo[k] != 0 || phi[k] != ci) {
      int64_t st[TS_PART_MAX_RANK] = {0}, lim[TS_PART_MAX_RANK];
      for (int m = 0; m < r; m++) lim[m] = x->shape->dims[m];
      st[d] = plo[k];
      lim[d] = phi[k];
      part = ts_part_slice(p, x, st, lim);
    }
    if (sh != 0) { /* the device at tile position q receives from q + sh */
      int64_t *pairs = ts_arena_alloc(p->a, sizeof *pairs * 2 * (size_t)p->n), npairs = 0;
      if (!pairs) return;
      for (int64_t dev = 0; dev < p->n; dev++) {
        if (ts_sharding_tile_index(s, dev, idx) != TS_OK) return;
        idx[d] += sh;
        if (idx[d] < 0 || idx[d] >= t || ts_sharding_tile_device(s, idx, &src) != TS_OK) continue;
        pairs[2 * npairs] = src;
        pairs[2 * npairs + 1] = dev;
        npairs++;
      }
      part = ts_part_permute(p, part, npairs, pairs);
    }
    if (!part) return;
    pieces[np++] = part;
  }
  if (np == 0) {
    ts_part_fail(p, NULL, TS_ERR_INTERNAL, "halo window reads no shard");
    return;
  }
  ts_hlo_instr_t *buf = pieces[0];
  if (np > 1) {
    int64_t dims[TS_PART_MAX_RANK];
    for (int k = 0; k < r; k++) dims[k] = x->shape->dims[k];
    dims[d] = pos[ns];
    buf = ts_part_add(p, TS_OP_CONCATENATE, ts_part_shape(p, x->shape->elem, r, dims), pieces, np, "concatenate");
    ts_part_attr_ints(p, buf, "dimensions", 1, (int64_t[]){d});
  }
  if (!buf) return;
  /* Padding where a window runs past the pieces (before tile 0, after the
   * last tile): the mask or the caller's window never reads it. */
  int64_t len = buf->shape->dims[d], padlo = 0, padhi = 0;
  for (int64_t q = 0; q < nq; q++) {
    if (!real[q]) continue;
    if (-bq[q] > padlo) padlo = -bq[q];
    if (bq[q] + L - len > padhi) padhi = bq[q] + L - len;
  }
  if (padlo || padhi) {
    int64_t hi_pad[TS_PART_MAX_RANK] = {0};
    hi_pad[d] = padlo + padhi;
    buf = ts_part_pad(p, buf, hi_pad);
    ts_hlo_attr_t *pa = buf ? (ts_hlo_attr_t *)ts_hlo_instr_attr(buf, "padding") : NULL;
    if (!pa) return;
    pa->v.padding->lo[d] = padlo;
    pa->v.padding->hi[d] = padhi;
  }
  ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 1];
  int64_t *table = ts_arena_alloc(p->a, sizeof *table * (size_t)p->n), sizes[TS_PART_MAX_RANK], zero = 0;
  int64_t *starts = ts_arena_alloc(p->a, sizeof *starts * (size_t)p->n);
  if (!table || !starts) return;
  ops[0] = buf;
  for (int k = 0; k < r; k++) {
    sizes[k] = k == d ? L : buf->shape->dims[k];
    if (k != d) {
      ops[1 + k] = ts_part_const_s32(p, -1, &zero);
      continue;
    }
    for (int64_t dev = 0; dev < p->n; dev++) {
      if (ts_sharding_tile_index(s, dev, idx) != TS_OK) return;
      starts[dev] = A * idx[d] + B;
      table[dev] = (idx[d] < nq ? bq[idx[d]] : 0) + padlo;
    }
    ops[1 + k] = ts_part_table_lookup(p, table);
  }
  ts_hlo_instr_t *win = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ts_part_shape(p, x->shape->elem, r, sizes), ops, r + 1,
                                    "dynamic-slice");
  ts_part_attr_ints(p, win, "dynamic_slice_sizes", r, sizes);
  if (fill && win) { /* fill where start + iota is outside [0, n_in) */
    const ts_shape_t *is = ts_part_shape(p, TS_S32, r, sizes), *ps = ts_part_shape(p, TS_PRED, r, sizes);
    ts_hlo_instr_t *io = ts_part_add(p, TS_OP_IOTA, is, NULL, 0, "iota");
    ts_part_attr_int(p, io, "iota_dimension", d);
    ts_hlo_instr_t *g = ts_part_add(p, TS_OP_ADD, is, (ts_hlo_instr_t *[]){io, ts_part_broadcast_scalar(p,
                                    ts_part_table_lookup(p, starts), r, sizes)}, 2, "add");
    ts_hlo_instr_t *ge = ts_part_add(p, TS_OP_COMPARE, ps, (ts_hlo_instr_t *[]){g, ts_part_broadcast_scalar(p,
                                     ts_part_const_s32(p, -1, &zero), r, sizes)}, 2, "compare");
    ts_part_attr_ident(p, ge, "direction", "GE");
    ts_hlo_instr_t *lt = ts_part_add(p, TS_OP_COMPARE, ps, (ts_hlo_instr_t *[]){g, ts_part_broadcast_scalar(p,
                                     ts_part_const_s32(p, -1, &n_in), r, sizes)}, 2, "compare");
    ts_part_attr_ident(p, lt, "direction", "LT");
    ts_hlo_instr_t *in = ts_part_add(p, TS_OP_AND, ps, (ts_hlo_instr_t *[]){ge, lt}, 2, "and");
    ts_hlo_instr_t *z = ts_part_broadcast_scalar(p, fill, r, sizes);
    win = ts_part_add(p, TS_OP_SELECT, win->shape, (ts_hlo_instr_t *[]){in, win, z}, 3, "select");
  }
  *out = win;
  return;
}

/* A slice along one tiled dim d (stride 1) where operand and result share
 * the sharding: every result shard reads a window of the operand that
 * spans at most a few neighbouring shards: a halo exchange instead of a
 * gather of the whole dim. */
bool ts_part_slice_halo(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "slice");
  if (s->kind != TS_SHARD_TILED || !a) return false;
  const ts_shape_t *in = i->ops[0]->shape, *out = i->shape;
  int r = out->rank, d = -1;
  for (int k = 0; k < r; k++) {
    bool touched = a->v.slice->start[k] != 0 || a->v.slice->limit[k] != in->dims[k] || a->v.slice->stride[k] != 1;
    if (!touched || s->dims[k] == 1) continue;
    if (d >= 0 || a->v.slice->stride[k] != 1) return false; /* one tiled touched dim, stride 1 */
    d = k;
  }
  if (d < 0) return false;
  int64_t t = s->dims[d], co = (out->dims[d] + t - 1) / t, nq = (out->dims[d] + co - 1) / co;
  int64_t ci = (in->dims[d] + t - 1) / t, smin, smax;
  if (!ts_part_halo_span(t, ci, co, a->v.slice->start[d], co, nq, &smin, &smax)) return false;
  ts_hlo_instr_t *x = ts_part_operand(p, i, 0, s), *win = NULL;
  if (x) ts_part_halo_window(p, x, s, d, in->dims[d], co, a->v.slice->start[d], co, nq, NULL, &win);
  if (!win) return true;
  /* The other (untiled) dims as the slice says; d is already done. */
  const ts_shape_t *ls = ts_part_local_shape(p, out, s);
  bool more = false;
  for (int k = 0; ls && k < r; k++) more |= k != d && win->shape->dims[k] != ls->dims[k];
  if (more) {
    ts_hlo_instr_t *sl = ts_part_emit_like(p, i, &win, ls);
    for (int k = 0; sl && k < sl->nattrs; k++)
      if (sl->attrs[k].kind == TS_ATTR_SLICE) {
        sl->attrs[k].v.slice->start[d] = 0;
        sl->attrs[k].v.slice->limit[d] = co;
      }
    win = sl;
  }
  ts_part_set(p, i, win, s);
  return true;
}

/* How the output positions of a convolution along spatial dim k read the
 * input. CONV_WINDOW: through a window (halo exchange when tiled).
 * CONV_PAR_LHS: window size 1, stride 1, no padding or dilation: output o
 * reads input o (and the kernel's one position). CONV_PAR_BOTH: XLA's
 * batch dim written as a spatial dim (dot_as_convolution_util): n input
 * positions, a window of n over an lhs dilated by n with stride n-1 (or
 * stride 1 and rhs_dilate n-1), no padding: output o reads input o and
 * kernel position o alone. Parallel dims split like batch dims: no halo. */
enum { CONV_WINDOW, CONV_PAR_LHS, CONV_PAR_BOTH };

static int conv_dim_kind(const ts_hlo_instr_t *i, const ts_conv_dnums_t *c, const ts_window_dim_t *wd, int k) {
  int64_t n = i->ops[0]->shape->dims[c->in_spatial[k]], K = i->ops[1]->shape->dims[c->k_spatial[k]];
  int64_t m = n - 1 > 1 ? n - 1 : 1;
  if (wd->pad_lo || wd->pad_hi || (wd->reversal && wd->size > 1)) return CONV_WINDOW;
  if (wd->size == 1 && wd->stride == 1 && wd->lhs_dilate == 1) return CONV_PAR_LHS;
  if (wd->size == n && K == n && wd->lhs_dilate == n &&
      ((wd->stride == m && wd->rhs_dilate == 1) || (wd->rhs_dilate == m && wd->stride == 1)))
    return CONV_PAR_BOTH;
  return CONV_WINDOW;
}

/* A convolution whose result is tiled on spatial dims: parallel ones
 * (conv_dim_kind) split like batch dims (for CONV_PAR_BOTH the kernel
 * takes the same tiles on its matching dim, and each device's window is
 * rewritten for its shard length), and at most one other, for which the
 * lhs takes the same tiling, every device reads the input window its
 * output tile needs (halo exchange, zeros outside the input: the
 * convolution's padding), and convolves without padding on that dim.
 * Batch and output-feature tiles pass through as in ts_part_convolution. */
bool ts_part_conv_halo(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *dn = ts_hlo_instr_attr(i, "dim_labels"), *wa = ts_hlo_instr_attr(i, "window");
  const ts_hlo_attr_t *fg = ts_hlo_instr_attr(i, "feature_group_count"), *bg = ts_hlo_instr_attr(i, "batch_group_count");
  if (s->kind != TS_SHARD_TILED || i->nops != 2 || !dn || dn->kind != TS_ATTR_CONV_DNUMS || !wa) return false;
  if ((fg && fg->v.i != 1) || (bg && bg->v.i != 1)) return false;
  const ts_conv_dnums_t *c = dn->v.conv;
  const ts_window_t *w = wa->v.window;
  int r = i->shape->rank, ks = -1, kind[TS_PART_MAX_RANK], nl = 0, nr = 0;
  bool keep[TS_PART_MAX_RANK] = {false};
  int64_t od[TS_PART_MAX_RANK], id[TS_PART_MAX_RANK], rod[TS_PART_MAX_RANK], rid[TS_PART_MAX_RANK];
  if (c->nspatial > w->n || c->nspatial > TS_PART_MAX_RANK - 2) return false;
  for (int k = 0; k < c->nspatial; k++) {
    kind[k] = conv_dim_kind(i, c, &w->dims[k], k);
    if (s->dims[c->out_spatial[k]] == 1) continue;
    keep[c->out_spatial[k]] = true;
    od[nl] = c->out_spatial[k], id[nl++] = c->in_spatial[k];
    if (kind[k] == CONV_PAR_BOTH) rod[nr] = c->out_spatial[k], rid[nr++] = c->k_spatial[k];
    if (kind[k] != CONV_WINDOW) continue;
    if (ks >= 0) return false; /* one tiled windowed dim */
    ks = k;
  }
  if (nl == 0) return false;
  if (ks >= 0 && (w->dims[ks].lhs_dilate > 1 || w->dims[ks].reversal)) return false;
  keep[c->out_batch] = keep[c->out_feature] = true;
  od[nl] = c->out_batch, id[nl++] = c->in_batch;
  rod[nr] = c->out_feature, rid[nr++] = c->k_out_feature;
  ts_sharding_value_t *sp = ts_part_replicate_dims(p, s, r, keep);
  const ts_shape_t *lhs = i->ops[0]->shape;
  ts_sharding_value_t *ls = ts_part_operand_sharding(p, sp, r, nl, od, id, lhs->rank);
  ts_sharding_value_t *rs = ts_part_operand_sharding(p, sp, r, nr, rod, rid, i->ops[1]->shape->rank);
  if (!sp || !ls || !rs) return false;
  ts_hlo_instr_t *x = NULL, *win = NULL;
  if (ks >= 0) {
    const ts_window_dim_t *wd = &w->dims[ks];
    int d = (int)c->in_spatial[ks];
    int64_t t = sp->dims[c->out_spatial[ks]], nout = i->shape->dims[c->out_spatial[ks]];
    int64_t co = (nout + t - 1) / t, nq = (nout + co - 1) / co;
    int64_t L = (co - 1) * wd->stride + (wd->size - 1) * wd->rhs_dilate + 1;
    int64_t ci = (lhs->dims[d] + t - 1) / t, smin, smax;
    if (!ts_part_halo_span(t, ci, co * wd->stride, -wd->pad_lo, L, nq, &smin, &smax)) return false;
    x = ts_part_operand(p, i, 0, ls);
    if (x) ts_part_halo_window(p, x, ls, d, lhs->dims[d], co * wd->stride, -wd->pad_lo, L, nq, ts_part_zero(p, lhs->elem), &win);
  } else {
    win = ts_part_operand(p, i, 0, ls);
  }
  if (!win) return true;
  ts_hlo_instr_t *ops[2] = {win, ts_part_operand(p, i, 1, rs)};
  const ts_shape_t *ys = ts_part_local_shape(p, i->shape, sp);
  ts_hlo_instr_t *y = ys ? ts_part_emit_like(p, i, ops, ys) : NULL;
  for (int a = 0; y && a < y->nattrs; a++) {
    if (y->attrs[a].kind != TS_ATTR_WINDOW) continue;
    ts_window_dim_t *wk = y->attrs[a].v.window->dims;
    if (ks >= 0) wk[ks].pad_lo = wk[ks].pad_hi = 0;
    for (int k = 0; k < c->nspatial; k++) {
      if (kind[k] != CONV_PAR_BOTH || s->dims[c->out_spatial[k]] == 1) continue;
      /* The shard's own length n: window n, lhs_dilate n, and the
       * source's choice of stride or rhs_dilate n - 1. */
      int64_t n = ys->dims[c->out_spatial[k]], m = n - 1 > 1 ? n - 1 : 1;
      bool by_stride = wk[k].rhs_dilate == 1;
      wk[k].size = wk[k].lhs_dilate = n;
      wk[k].stride = by_stride ? m : 1;
      wk[k].rhs_dilate = by_stride ? 1 : m;
    }
  }
  ts_part_set(p, i, ts_part_reshard(p, y, i->shape, sp, s), s);
  return true;
}

/* dynamic-update-slice whose updated dims are tiled: the update is
 * gathered on those dims only (it is small), and every device writes the
 * part that falls in its shard: the update padded by a shard length on
 * both sides, a window of it at the device's offset, and a select under an
 * iota mask of the positions the update covers. */
bool ts_part_dus(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  if (s->kind != TS_SHARD_TILED || i->nops < 3) return false;
  const ts_shape_t *in = i->shape, *us = i->ops[1]->shape;
  int r = in->rank;
  bool touched[TS_PART_MAX_RANK], keep[TS_PART_MAX_RANK], any = false;
  for (int d = 0; d < r; d++) {
    touched[d] = us->dims[d] != in->dims[d];
    keep[d] = !touched[d];
    any |= touched[d] && s->dims[d] > 1;
    if (touched[d] && s->dims[d] > 1 && in->dims[d] % s->dims[d] != 0) return false;
  }
  if (!any) return false;
  ts_sharding_value_t *usp = ts_part_replicate_dims(p, s, r, keep);
  ts_hlo_instr_t *x = ts_part_operand(p, i, 0, s), *u = ts_part_operand(p, i, 1, usp);
  if (!x || !u) return true;
  const ts_shape_t *ls = x->shape;
  int64_t hi[TS_PART_MAX_RANK], idx[TS_PART_MAX_RANK + 8];
  for (int d = 0; d < r; d++) hi[d] = touched[d] ? ls->dims[d] : 0;
  /* The update padded by a shard length on both sides of touched dims
   * (ts_part_pad pads high; the low side is set on its padding). */
  ts_hlo_instr_t *padded = ts_part_pad(p, u, hi);
  ts_hlo_attr_t *pa = padded ? (ts_hlo_attr_t *)ts_hlo_instr_attr(padded, "padding") : NULL;
  if (!pa) return true;
  int64_t dims[TS_PART_MAX_RANK];
  for (int d = 0; d < r; d++) {
    pa->v.padding->lo[d] = hi[d];
    dims[d] = u->shape->dims[d] + 2 * hi[d];
  }
  padded->shape = ts_part_shape(p, in->elem, r, dims);
  ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 1], *mask = NULL;
  ops[0] = padded;
  int64_t *table = ts_arena_alloc(p->a, sizeof *table * (size_t)p->n);
  if (!table) return true;
  const ts_shape_t *ps = ts_part_shape(p, TS_PRED, r, ls->dims), *is = ts_part_shape(p, TS_S32, r, ls->dims);
  for (int d = 0; d < r; d++) {
    int64_t zero = 0;
    if (!touched[d]) {
      ops[1 + d] = ts_part_const_s32(p, -1, &zero);
      continue;
    }
    /* o = clamp(start, 0, N - u) - (shard offset); window start c - o. */
    int64_t lim = in->dims[d] - us->dims[d], c = ls->dims[d];
    ts_hlo_instr_t *st = ts_part_operand(p, i, 2 + d, ts_part_replicated(p));
    if (st && st->shape->elem != TS_S32)
      st = ts_part_add(p, TS_OP_CONVERT, ts_part_shape(p, TS_S32, 0, NULL), &st, 1, "convert");
    ts_hlo_instr_t *lo = ts_part_const_s32(p, -1, &zero), *hc = ts_part_const_s32(p, -1, &lim);
    ts_hlo_instr_t *g = ts_part_add(p, TS_OP_CLAMP, ts_part_shape(p, TS_S32, 0, NULL), (ts_hlo_instr_t *[]){lo, st, hc}, 3, "clamp");
    for (int64_t dev = 0; dev < p->n; dev++) {
      if (ts_sharding_tile_index(s, dev, idx) != TS_OK) return false;
      table[dev] = idx[d] * c;
    }
    ts_hlo_instr_t *off = ts_part_table_lookup(p, table);
    ts_hlo_instr_t *o = ts_part_add(p, TS_OP_SUBTRACT, g ? g->shape : NULL, (ts_hlo_instr_t *[]){g, off}, 2, "subtract");
    ts_hlo_instr_t *cc = ts_part_const_s32(p, -1, &c);
    ops[1 + d] = ts_part_add(p, TS_OP_SUBTRACT, o ? o->shape : NULL, (ts_hlo_instr_t *[]){cc, o}, 2, "subtract");
    /* mask_d: o <= iota < o + u */
    ts_hlo_instr_t *io = ts_part_add(p, TS_OP_IOTA, is, NULL, 0, "iota");
    ts_part_attr_int(p, io, "iota_dimension", d);
    int64_t ud = us->dims[d];
    ts_hlo_instr_t *ucon = ts_part_const_s32(p, -1, &ud);
    ts_hlo_instr_t *oe = ts_part_add(p, TS_OP_ADD, o ? o->shape : NULL, (ts_hlo_instr_t *[]){o, ucon}, 2, "add");
    ts_hlo_instr_t *ob = ts_part_broadcast_scalar(p, o, r, ls->dims), *eb = ts_part_broadcast_scalar(p, oe, r, ls->dims);
    ts_hlo_instr_t *ge = ts_part_add(p, TS_OP_COMPARE, ps, (ts_hlo_instr_t *[]){io, ob}, 2, "compare");
    ts_part_attr_ident(p, ge, "direction", "GE");
    ts_hlo_instr_t *lt = ts_part_add(p, TS_OP_COMPARE, ps, (ts_hlo_instr_t *[]){io, eb}, 2, "compare");
    ts_part_attr_ident(p, lt, "direction", "LT");
    ts_hlo_instr_t *m = ts_part_add(p, TS_OP_AND, ps, (ts_hlo_instr_t *[]){ge, lt}, 2, "and");
    mask = mask ? ts_part_add(p, TS_OP_AND, ps, (ts_hlo_instr_t *[]){mask, m}, 2, "and") : m;
  }
  ts_hlo_instr_t *w = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ls, ops, r + 1, "dynamic-slice");
  ts_part_attr_ints(p, w, "dynamic_slice_sizes", r, ls->dims);
  ts_hlo_instr_t *sel = ts_part_add(p, TS_OP_SELECT, ls, (ts_hlo_instr_t *[]){mask, w, x}, 3, "select");
  ts_part_set(p, i, sel, s);
  return true;
}


/* A reduce-window whose result is tiled on one dim d that its window
 * touches (other tiled dims untouched): the operand takes the result's
 * sharding, every device reads the input window its output tile needs
 * (halo exchange; positions outside the input read the init value, which
 * is what the window's padding means) and reduces it without padding on
 * d. Base dilation is left to the fallback. */
bool ts_part_reduce_window_halo(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *wa = ts_hlo_instr_attr(i, "window");
  if (s->kind != TS_SHARD_TILED || i->nops != 2 || i->ncalled != 1 || !wa || i->shape->elem == TS_TUPLE) return false;
  const ts_window_t *w = wa->v.window;
  const ts_shape_t *in = i->ops[0]->shape;
  int r = i->shape->rank, d = -1;
  if (w->n != r || in->rank != r) return false;
  for (int k = 0; k < r; k++) {
    const ts_window_dim_t *wd = &w->dims[k];
    bool touched = wd->size != 1 || wd->stride != 1 || wd->pad_lo || wd->pad_hi || wd->lhs_dilate > 1 ||
                   wd->rhs_dilate > 1 || wd->reversal;
    if (!touched || s->dims[k] == 1) continue;
    if (d >= 0) return false; /* one tiled touched dim */
    d = k;
  }
  if (d < 0) return false;
  const ts_window_dim_t *wd = &w->dims[d];
  if (wd->lhs_dilate > 1 || wd->reversal || wd->stride < 1) return false;
  int64_t t = s->dims[d], nout = i->shape->dims[d], co = (nout + t - 1) / t, nq = (nout + co - 1) / co;
  int64_t rd = wd->rhs_dilate > 1 ? wd->rhs_dilate : 1;
  int64_t L = (co - 1) * wd->stride + (wd->size - 1) * rd + 1;
  int64_t ci = (in->dims[d] + t - 1) / t, smin, smax;
  if (!ts_part_halo_span(t, ci, co * wd->stride, -wd->pad_lo, L, nq, &smin, &smax)) return false;
  /* Positions outside the input are the window's padding, which must not
   * contribute: they read the reducer's identity, which is the init value
   * only when the init is that identity (an init of 1 under add is added
   * once per window, not once per padded position). */
  ts_hlo_instr_t *fill = NULL, *win = NULL;
  bool init_fills = ts_part_init_is_identity(i->ops[1], i->called[0]);
  if (!init_fills && !(fill = ts_part_reducer_identity(p, i->called[0], i->shape->elem))) return false;
  ts_hlo_instr_t *x = ts_part_operand(p, i, 0, s), *init = ts_part_operand(p, i, 1, ts_part_replicated(p));
  if (init_fills) fill = init;
  if (x && init && fill) ts_part_halo_window(p, x, s, d, in->dims[d], co * wd->stride, -wd->pad_lo, L, nq, fill, &win);
  if (!win) return true;
  ts_hlo_instr_t *ops[2] = {win, init};
  ts_hlo_instr_t *y = ts_part_emit_like(p, i, ops, ts_part_local_shape(p, i->shape, s));
  for (int k = 0; y && k < y->nattrs; k++)
    if (y->attrs[k].kind == TS_ATTR_WINDOW) {
      y->attrs[k].v.window->dims[d].pad_lo = 0;
      y->attrs[k].v.window->dims[d].pad_hi = 0;
    }
  ts_part_set(p, i, y, s);
  return true;
}

/* A concatenate along a dim d tiled in t: every device writes its operand
 * shards into a zero buffer of the whole dim at their global offsets
 * (dynamic-update-slice; the padding rows of uneven shards are zeroed
 * first), the buffers are summed over the devices that differ only in
 * their tile along d (one all-reduce), and each device cuts out its tile
 * (XLA's way; it moves the result once instead of gathering every
 * operand). Used when that all-reduce moves no more bytes than gathering
 * the operands on d would. */
bool ts_part_concat_sum(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  if (s->kind != TS_SHARD_TILED || !a || a->v.list.n != 1 || i->shape->elem == TS_TUPLE || i->nops < 1) return false;
  int d = (int)a->v.list.v[0], r = i->shape->rank;
  if (d < 0 || d >= r || s->dims[d] == 1 || i->nops > 256) return false;
  int64_t t = s->dims[d], n = i->shape->dims[d], co = (n + t - 1) / t, buflen = t * co, off = 0;
  bool keep[TS_PART_MAX_RANK];
  for (int k = 0; k < r; k++) keep[k] = k != d;
  ts_sharding_value_t *sd = ts_part_replicate_dims(p, s, r, keep); /* s with d gathered */
  int64_t gather_cost = 0;
  for (int k = 0; k < i->nops; k++) {
    int64_t nk = i->ops[k]->shape->dims[d], ck = (nk + t - 1) / t;
    if (off + t * ck > buflen) buflen = off + t * ck; /* the last shards' DUS must not clamp */
    off += nk;
    gather_cost += ts_part_reshard_bytes(p, i->ops[k]->shape, s, sd);
  }
  const ts_shape_t *ls = ts_part_local_shape(p, i->shape, s);
  if (!ls) return false;
  int64_t bdims[TS_PART_MAX_RANK];
  for (int k = 0; k < r; k++) bdims[k] = k == d ? buflen : ls->dims[k];
  const ts_shape_t *bs = ts_part_shape(p, i->shape->elem, r, bdims);
  if (!bs || (int64_t)ts_elem_storage_bytes(bs->elem) * ts_shape_elements(bs) > gather_cost) return false;
  int64_t *table = ts_arena_alloc(p->a, sizeof *table * (size_t)p->n), idx[TS_PART_MAX_RANK + 8], zero = 0;
  if (!table) return true;
  ts_hlo_instr_t *buf = ts_part_broadcast_scalar(p, ts_part_zero(p, i->shape->elem), r, bdims);
  off = 0;
  for (int k = 0; k < i->nops; k++) {
    int64_t nk = i->ops[k]->shape->dims[d];
    ts_hlo_instr_t *x = ts_part_operand(p, i, k, s);
    if (!x) return true;
    int64_t ck = x->shape->dims[d];
    if (nk % t != 0) { /* zero the rows past nk: idx*ck + iota < nk */
      const ts_shape_t *is = ts_part_shape(p, TS_S32, r, x->shape->dims);
      const ts_shape_t *ps = ts_part_shape(p, TS_PRED, r, x->shape->dims);
      for (int64_t dev = 0; dev < p->n; dev++) {
        if (ts_sharding_tile_index(s, dev, idx) != TS_OK) return true;
        table[dev] = nk - idx[d] * ck;
      }
      ts_hlo_instr_t *io = ts_part_add(p, TS_OP_IOTA, is, NULL, 0, "iota");
      ts_part_attr_int(p, io, "iota_dimension", d);
      ts_hlo_instr_t *lim = ts_part_broadcast_scalar(p, ts_part_table_lookup(p, table), r, x->shape->dims);
      ts_hlo_instr_t *lt = ts_part_add(p, TS_OP_COMPARE, ps, (ts_hlo_instr_t *[]){io, lim}, 2, "compare");
      ts_part_attr_ident(p, lt, "direction", "LT");
      ts_hlo_instr_t *z = ts_part_broadcast_scalar(p, ts_part_zero(p, i->shape->elem), r, x->shape->dims);
      x = ts_part_add(p, TS_OP_SELECT, x->shape, (ts_hlo_instr_t *[]){lt, x, z}, 3, "select");
    }
    ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 2];
    ops[0] = buf;
    ops[1] = x;
    for (int64_t dev = 0; dev < p->n; dev++) {
      if (ts_sharding_tile_index(s, dev, idx) != TS_OK) return true;
      table[dev] = off + idx[d] * ck;
    }
    for (int q = 0; q < r; q++) ops[2 + q] = q == d ? ts_part_table_lookup(p, table) : ts_part_const_s32(p, -1, &zero);
    buf = ts_part_add(p, TS_OP_DYNAMIC_UPDATE_SLICE, bs, ops, r + 2, "dynamic-update-slice");
    off += nk;
  }
  bool mask[TS_PART_MAX_RANK] = {false};
  mask[d] = true;
  int64_t ng, gs, *groups;
  ts_part_groups_over_dims(p, s, mask, &ng, &gs, &groups);
  ts_hlo_instr_t *sum = ts_part_collective(p, TS_OP_ALL_REDUCE, bs, buf, ng, gs, groups);
  ts_part_attr_comp(p, sum, "to_apply", ts_part_sum_comp(p, i->shape->elem));
  ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 1];
  ops[0] = sum;
  for (int64_t dev = 0; dev < p->n; dev++) {
    if (ts_sharding_tile_index(s, dev, idx) != TS_OK) return true;
    table[dev] = idx[d] * co;
  }
  for (int q = 0; q < r; q++) ops[1 + q] = q == d ? ts_part_table_lookup(p, table) : ts_part_const_s32(p, -1, &zero);
  ts_hlo_instr_t *y = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ls, ops, r + 1, "dynamic-slice");
  ts_part_attr_ints(p, y, "dynamic_slice_sizes", r, ls->dims);
  ts_part_set(p, i, y, s);
  return true;
}

/* A pad (no interior padding) whose result is tiled on one padded dim d:
 * output tile q is the input window [q*co - lo, q*co - lo + co), read by
 * halo exchange with the padding value outside the input (negative
 * padding is a window that starts or ends inside it). Other tiled dims
 * must be unpadded. */
bool ts_part_pad_halo(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "padding");
  if (s->kind != TS_SHARD_TILED || i->nops != 2 || !a || i->shape->elem == TS_TUPLE) return false;
  const ts_padding_t *pd = a->v.padding;
  const ts_shape_t *in = i->ops[0]->shape;
  int r = i->shape->rank, d = -1;
  if (in->rank != r) return false;
  for (int k = 0; k < r; k++) {
    if (pd->interior[k] != 0) return false;
    if ((pd->lo[k] == 0 && pd->hi[k] == 0) || s->dims[k] == 1) continue;
    if (d >= 0) return false; /* one tiled padded dim */
    d = k;
  }
  if (d < 0) return false;
  int64_t t = s->dims[d], nout = i->shape->dims[d], co = (nout + t - 1) / t, nq = (nout + co - 1) / co;
  int64_t ci = (in->dims[d] + t - 1) / t, smin, smax;
  if (in->dims[d] == 0 || !ts_part_halo_span(t, ci, co, -pd->lo[d], co, nq, &smin, &smax)) return false;
  ts_hlo_instr_t *x = ts_part_operand(p, i, 0, s), *v = ts_part_operand(p, i, 1, ts_part_replicated(p));
  ts_hlo_instr_t *win = NULL;
  if (x && v) ts_part_halo_window(p, x, s, d, in->dims[d], co, -pd->lo[d], co, nq, v, &win);
  if (!win) return true;
  /* The other dims' padding as the pad says (they are untiled); d is done. */
  const ts_shape_t *ls = ts_part_local_shape(p, i->shape, s);
  bool more = false;
  for (int k = 0; ls && k < r; k++) more |= k != d && win->shape->dims[k] != ls->dims[k];
  if (more) {
    ts_hlo_instr_t *ops[2] = {win, v};
    ts_hlo_instr_t *y = ts_part_emit_like(p, i, ops, ls);
    for (int k = 0; y && k < y->nattrs; k++)
      if (y->attrs[k].kind == TS_ATTR_PADDING) {
        y->attrs[k].v.padding->lo[d] = 0;
        y->attrs[k].v.padding->hi[d] = 0;
      }
    win = y;
  }
  ts_part_set(p, i, win, s);
  return true;
}

/* A convolution whose lhs is tiled on one input spatial dim and whose
 * result is not tiled on the matching output dim (a weight gradient: the
 * spatial dim is summed over): the kernel takes the same tiles on its
 * spatial dim, every device reads the lhs window its kernel tile meets
 * (halo exchange; zeros outside the input: the padding), convolves its
 * part without padding on that dim, and the partial results are summed
 * over the tiles (XLA's halo exchange on the lhs; on the kernel when
 * allowed and smaller). Used when that moves no more bytes than gathering
 * both operands. */
bool ts_part_conv_contract(part_t *p, const ts_hlo_instr_t *i, const ts_sharding_value_t *s) {
  const ts_hlo_attr_t *dn = ts_hlo_instr_attr(i, "dim_labels"), *wa = ts_hlo_instr_attr(i, "window");
  const ts_hlo_attr_t *fg = ts_hlo_instr_attr(i, "feature_group_count"), *bg = ts_hlo_instr_attr(i, "batch_group_count");
  if (s->kind != TS_SHARD_TILED && s->kind != TS_SHARD_REPLICATED) return false;
  if (i->nops != 2 || !dn || dn->kind != TS_ATTR_CONV_DNUMS || !wa || i->shape->elem == TS_TUPLE) return false;
  if ((fg && fg->v.i != 1) || (bg && bg->v.i != 1)) return false;
  const ts_conv_dnums_t *c = dn->v.conv;
  const ts_window_t *w = wa->v.window;
  const ts_shape_t *lhs = i->ops[0]->shape, *rhs = i->ops[1]->shape;
  const ts_sharding_value_t *l0 = p->sh[i->ops[0]->id], *r0 = p->sh[i->ops[1]->id];
  if (!l0 || l0->kind != TS_SHARD_TILED || !r0) return false;
  int ks = -1, lr = lhs->rank;
  for (int k = 0; k < lr; k++) {
    if (l0->dims[k] == 1) continue;
    int sp = -1;
    for (int m = 0; m < c->nspatial; m++)
      if (c->in_spatial[m] == k) sp = m;
    if (sp < 0 || ks >= 0) return false; /* only one spatial dim tiled */
    ks = sp;
  }
  if (ks < 0 || ks >= w->n) return false;
  if (s->kind == TS_SHARD_TILED && s->dims[c->out_spatial[ks]] != 1) return false;
  const ts_window_dim_t *wd = &w->dims[ks];
  int d = (int)c->in_spatial[ks], kd = (int)c->k_spatial[ks];
  int64_t t = l0->dims[d], K = rhs->dims[kd], nout = i->shape->dims[c->out_spatial[ks]];
  if (wd->lhs_dilate > 1 || wd->reversal || wd->stride < 1 || K % t != 0 || K != wd->size) return false;
  int64_t rd = wd->rhs_dilate > 1 ? wd->rhs_dilate : 1, ck = K / t;
  int64_t L = (nout - 1) * wd->stride + (ck - 1) * rd + 1, ci = (lhs->dims[d] + t - 1) / t, smin, smax;
  if (!ts_part_halo_span(t, ci, ck * rd, -wd->pad_lo, L, t, &smin, &smax)) return false;
  /* The kernel tiled like the lhs on its spatial dim; the result partial,
   * summed over the devices that differ only in that tile. */
  int64_t dd = d, kk = kd;
  ts_sharding_value_t *rs = ts_part_operand_sharding(p, l0, lr, 1, &dd, &kk, rhs->rank);
  ts_sharding_value_t *rep = ts_part_replicated(p);
  if (!rs) return false;
  int64_t eb = ts_elem_storage_bytes(i->shape->elem);
  const ts_shape_t *lls = ts_part_local_shape(p, lhs, l0);
  if (!lls || ci == 0) return false;
  int64_t row = (int64_t)ts_elem_storage_bytes(lhs->elem) * ts_shape_elements(lls) / ci;
  int64_t halo = (L > ci ? L - ci : 0) * row + ts_part_reshard_bytes(p, rhs, r0, rs) +
                 eb * ts_shape_elements(i->shape) + ts_part_reshard_bytes(p, i->shape, rep, s);
  int64_t gather = ts_part_reshard_bytes(p, lhs, l0, rep) + ts_part_reshard_bytes(p, rhs, r0, rep) +
                   ts_part_reshard_bytes(p, i->shape, rep, s);
  /* Halo on the kernel instead (--conv-halo-exchange-always-on-lhs=false,
   * stride 1, no dilation, even lhs tiles): with the lhs tile's rows m,
   * out[o] = sum_m lhs[m] rhs[m - o + pad_lo]; device j reads the kernel
   * window W = rhs[j*ci + pad_lo - (nout-1), + ci + nout - 1) (zeros
   * outside the kernel), and out is its lhs tile convolved with W, padded
   * nout - 1 on both sides. */
  bool on_rhs = false;
  int64_t Lr = ci + nout - 1, Br = wd->pad_lo - (nout - 1), smin_r, smax_r;
  if (!p->opts.conv_halo_exchange_always_on_lhs && wd->stride == 1 && rd == 1 && lhs->dims[d] % t == 0 &&
      ts_part_halo_span(t, ck, ci, Br, Lr, t, &smin_r, &smax_r)) {
    const ts_shape_t *rls = ts_part_local_shape(p, rhs, rs);
    int64_t rrow = rls ? (int64_t)ts_elem_storage_bytes(rhs->elem) * ts_shape_elements(rls) / ck : INT64_MAX / 4;
    int64_t alt = halo - (L > ci ? L - ci : 0) * row + (Lr > ck ? Lr - ck : 0) * rrow;
    if (alt < halo) on_rhs = true, halo = alt;
  }
  if (halo > gather) return false;
  ts_hlo_instr_t *ops[2] = {NULL, NULL}, *win = NULL;
  if (on_rhs) {
    ts_hlo_instr_t *kx = ts_part_operand(p, i, 1, rs);
    if (kx) ts_part_halo_window(p, kx, rs, kd, K, ci, Br, Lr, t, ts_part_zero(p, rhs->elem), &win);
    ops[0] = ts_part_operand(p, i, 0, l0);
    ops[1] = win;
  } else {
    ts_hlo_instr_t *x = ts_part_operand(p, i, 0, l0);
    if (x) ts_part_halo_window(p, x, l0, d, lhs->dims[d], ck * rd, -wd->pad_lo, L, t, ts_part_zero(p, lhs->elem), &win);
    ops[0] = win;
    ops[1] = ts_part_operand(p, i, 1, rs);
  }
  if (!win) return true;
  ts_hlo_instr_t *y = ts_part_emit_like(p, i, ops, ts_part_full_shape(p, i->shape));
  for (int k = 0; y && k < y->nattrs; k++)
    if (y->attrs[k].kind == TS_ATTR_WINDOW) {
      y->attrs[k].v.window->dims[ks].pad_lo = on_rhs ? nout - 1 : 0;
      y->attrs[k].v.window->dims[ks].pad_hi = on_rhs ? nout - 1 : 0;
      y->attrs[k].v.window->dims[ks].size = on_rhs ? Lr : ck;
    }
  bool mask[TS_PART_MAX_RANK] = {false};
  mask[d] = true;
  int64_t ng, gs, *groups;
  ts_part_groups_over_dims(p, l0, mask, &ng, &gs, &groups);
  ts_part_set(p, i, ts_part_sum_partials(p, y, i->shape, rep, ng, gs, groups, ts_part_sum_comp(p, i->shape->elem), s),
              s);
  return true;
}
