/* Kernels: gather and scatter, XLA's general forms (batching dimensions
 * included). Both walk the batch positions of the indices and move one
 * window per position: gather copies it, scatter combines it into the
 * result through the update computation (add & co. inline, the rest through
 * ctx->apply). */
#include "interp_internal.h"

#include <math.h>

/* ---- windows ---------------------------------------------------------------- */

/* A box of n[d] elements walked on two arrays at once, with element strides
 * `as` (the operand / result side) and `bs` (the gathered / update side).
 * Unit dimensions are dropped and contiguous ones merged, so the minor run
 * is as long as it can be. */
typedef struct {
  int rank;
  bool empty;
  int64_t n[TS_MAX_RANK], as[TS_MAX_RANK], bs[TS_MAX_RANK];
} win_t;

static void win_add(win_t *w, int64_t n, int64_t as, int64_t bs) {
  if (n == 0) w->empty = true;
  if (n <= 1) return;
  int r = w->rank;
  /* Dimensions arrive outer first: merge into the previous one when it
   * steps over exactly this one's run on both sides. */
  if (r > 0 && w->as[r - 1] == as * n && w->bs[r - 1] == bs * n) {
    w->n[r - 1] *= n;
    w->as[r - 1] = as;
    w->bs[r - 1] = bs;
    return;
  }
  w->n[r] = n, w->as[r] = as, w->bs[r] = bs;
  w->rank++;
}

/* Calls fn for each minor run: n elements from a-offset ao and b-offset bo
 * (in elements) with strides as, bs. */
typedef void (*run_fn)(void *st, int64_t ao, int64_t bo, int64_t n, int64_t as, int64_t bs);

static void win_level(const win_t *w, int d, int64_t ao, int64_t bo, run_fn fn, void *st) {
  if (d == w->rank - 1) {
    fn(st, ao, bo, w->n[d], w->as[d], w->bs[d]);
    return;
  }
  for (int64_t k = 0; k < w->n[d]; k++) win_level(w, d + 1, ao + k * w->as[d], bo + k * w->bs[d], fn, st);
}

static void win_walk(const win_t *w, int64_t ao, int64_t bo, run_fn fn, void *st) {
  if (w->empty) return;
  if (w->rank == 0) {
    fn(st, ao, bo, 1, 1, 1);
    return;
  }
  win_level(w, 0, ao, bo, fn, st);
}

/* ---- shared by gather and scatter ------------------------------------------ */

static ts_i64_list_t list_attr(const ts_hlo_instr_t *instr, const char *name) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, name);
  if (a && a->kind == TS_ATTR_INT_LIST) return a->v.list;
  return (ts_i64_list_t){0, NULL};
}

static bool has(const ts_i64_list_t *l, int64_t x) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == x) return true;
  return false;
}

/* The batch positions of the indices: every index of the indices array
 * without its index-vector dimension, walked in row-major order. */
typedef struct {
  const ts_array_t *idx;
  int64_t ivd_stride; /* between index-vector elements; 0 when implicit */
  int nb;
  int64_t dims[TS_MAX_RANK], stride[TS_MAX_RANK]; /* of the batch dimensions */
  int64_t pos[TS_MAX_RANK];                      /* the current position */
  int which[TS_MAX_RANK];                        /* indices dim -> batch dim, -1 for ivd */
} batch_t;

static void batch_init(batch_t *b, const ts_array_t *idx, int64_t ivd) {
  int64_t st[TS_MAX_RANK] = {0};
  ts_strides(idx->rank, idx->dims, st);
  b->idx = idx;
  b->ivd_stride = ivd < idx->rank ? st[ivd] : 0;
  b->nb = 0;
  for (int d = 0; d < idx->rank; d++) {
    if (d == ivd) {
      b->which[d] = -1;
      continue;
    }
    b->which[d] = b->nb;
    b->dims[b->nb] = idx->dims[d];
    b->stride[b->nb] = st[d];
    b->pos[b->nb] = 0;
    b->nb++;
  }
}

static int64_t batch_count(const batch_t *b) {
  int64_t n = 1;
  for (int j = 0; j < b->nb; j++) n *= b->dims[j];
  return n;
}

/* Element k of the index vector at the current position. */
static int64_t batch_index(const batch_t *b, int64_t off, int k) {
  return ts_load_i(b->idx->elem, b->idx->data, off + k * b->ivd_stride);
}

/* A loaded start index as a value: u64 indices above INT64_MAX load as
 * negative bit patterns but stand for huge values (clamped high by gather,
 * out of bounds for scatter). */
static int64_t start_value(const batch_t *b, int64_t s) {
  if (s < 0 && ts_elem_is_unsigned_int(b->idx->elem)) return INT64_MAX;
  return s;
}

static ts_status_t too_deep(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr) {
  return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "rank exceeds the interpreter's %d",
                        TS_MAX_RANK);
}

/* ---- gather ------------------------------------------------------------------ */

typedef struct {
  int esz;
  char *out;
  const char *x;
} gather_st;

static void gather_run(void *p, int64_t ao, int64_t bo, int64_t n, int64_t as, int64_t bs) {
  gather_st *g = p;
  int esz = g->esz;
  const char *src = g->x + ao * esz;
  char *dst = g->out + bo * esz;
  if (as == 1 && bs == 1) {
    memcpy(dst, src, (size_t)(n * esz));
    return;
  }
  for (int64_t k = 0; k < n; k++) memcpy(dst + k * bs * esz, src + k * as * esz, (size_t)esz);
}

static ts_status_t k_gather(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                            int nin, ts_array_t *out, int nout) {
  const ts_array_t *x = &in[0], *idx = &in[1];
  if (x->rank > TS_MAX_RANK || idx->rank > TS_MAX_RANK || out->rank > TS_MAX_RANK)
    return too_deep(ctx, instr);
  ts_i64_list_t offset = list_attr(instr, "offset_dims"), collapsed = list_attr(instr, "collapsed_slice_dims"),
                sim = list_attr(instr, "start_index_map"), sizes = list_attr(instr, "slice_sizes"),
                obd = list_attr(instr, "operand_batching_dims"),
                sibd = list_attr(instr, "start_indices_batching_dims");
  const ts_hlo_attr_t *ivda = ts_hlo_instr_attr(instr, "index_vector_dim");
  if (!ivda || ivda->kind != TS_ATTR_INT || sizes.n != x->rank || obd.n != sibd.n)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "gather dimension numbers are incomplete");
  int esz = ts_elem_storage_bytes(out->elem);
  size_t bytes = ts_array_bytes(out);
  for (int d = 0; d < x->rank; d++)
    if (sizes.v[d] == 0 && (has(&collapsed, d) || has(&obd, d))) {
      memset(out->data, 0, bytes); /* an empty slice: nothing to read */
      return TS_OK;
    }
  if (bytes == 0) return TS_OK;

  int64_t xs[TS_MAX_RANK], os[TS_MAX_RANK];
  ts_strides(x->rank, x->dims, xs);
  ts_strides(out->rank, out->dims, os);
  /* The window: the k-th operand dimension that is neither collapsed nor a
   * batching dimension goes to result dimension offset_dims[k]. */
  win_t w = {0};
  for (int d = 0, k = 0; d < x->rank; d++) {
    if (has(&collapsed, d) || has(&obd, d)) continue;
    win_add(&w, sizes.v[d], xs[d], os[offset.v[k++]]);
  }
  batch_t b;
  batch_init(&b, idx, ivda->v.i);
  /* Result dimensions outside offset_dims are the batch dimensions, in order. */
  int64_t bos[TS_MAX_RANK];
  for (int d = 0, j = 0; d < out->rank; d++)
    if (!has(&offset, d)) bos[j++] = os[d];
  int64_t hi[TS_MAX_RANK];
  for (int k = 0; k < sim.n; k++) hi[k] = x->dims[sim.v[k]] - sizes.v[sim.v[k]];

  gather_st g = {esz, out->data, x->data};
  int64_t n = batch_count(&b), ioff = 0, ooff = 0;
  for (int64_t it = 0; it < n; it++) {
    int64_t src = 0;
    for (int k = 0; k < sim.n; k++) {
      int64_t s = start_value(&b, batch_index(&b, ioff, k));
      s = s < 0 ? 0 : s > hi[k] ? hi[k] : s; /* XLA clamps the whole slice in bounds */
      src += s * xs[sim.v[k]];
    }
    for (int k = 0; k < obd.n; k++) src += b.pos[b.which[sibd.v[k]]] * xs[obd.v[k]];
    win_walk(&w, src, ooff, gather_run, &g);
    for (int j = b.nb - 1; j >= 0; j--) {
      ioff += b.stride[j];
      ooff += bos[j];
      if (++b.pos[j] < b.dims[j]) break;
      ioff -= b.stride[j] * b.dims[j];
      ooff -= bos[j] * b.dims[j];
      b.pos[j] = 0;
    }
  }
  return TS_OK;
}

/* ---- scatter ----------------------------------------------------------------- */

typedef struct {
  ts_kernel_ctx_t *ctx;
  const ts_hlo_comp_t *comp;
  ts_opcode_t op;  /* the reducer, or TS_OP_COUNT for ctx->apply */
  bool assign;     /* the computation returns its update parameter */
  int n;           /* operands */
  ts_array_t *out; /* n results */
  const ts_array_t *upd;
  ts_array_t *args, *res; /* 2n scalar arguments, n scalar results (apply) */
  char *resbuf;
  ts_status_t st;
} scatter_st;

#define ADD_LOOP(T)                                                                \
  do {                                                                             \
    T *o = (T *)s->out->data + ao;                                                 \
    const T *u = (const T *)s->upd->data + bo;                                     \
    if (as == 1 && bs == 1)                                                        \
      for (int64_t k = 0; k < n; k++) o[k] += u[k];                                \
    else                                                                           \
      for (int64_t k = 0; k < n; k++) o[k * as] += u[k * bs];                      \
  } while (0)

/* f32/f64/s32 add: the embedding-gradient path. */
static void scatter_add_run(void *p, int64_t ao, int64_t bo, int64_t n, int64_t as, int64_t bs) {
  scatter_st *s = p;
  switch (s->out->elem) {
  case TS_F32: ADD_LOOP(float); break;
  case TS_F64: ADD_LOOP(double); break;
  default: { /* s32: wraps, as XLA's integer add does */
    uint32_t *o = (uint32_t *)s->out->data + ao;
    const uint32_t *u = (const uint32_t *)s->upd->data + bo;
    for (int64_t k = 0; k < n; k++) o[k * as] += u[k * bs];
  }
  }
}

static double fcombine(ts_opcode_t op, double a, double b) {
  switch (op) {
  case TS_OP_ADD: return a + b;
  case TS_OP_MULTIPLY: return a * b;
  case TS_OP_MAXIMUM: return isnan(a) ? a : isnan(b) ? b : a > b ? a : b;
  default: return isnan(a) ? a : isnan(b) ? b : a < b ? a : b; /* minimum */
  }
}

static int64_t icombine(ts_opcode_t op, bool is_unsigned, int64_t a, int64_t b) {
  switch (op) {
  case TS_OP_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
  case TS_OP_MULTIPLY: return (int64_t)((uint64_t)a * (uint64_t)b);
  case TS_OP_MAXIMUM: return (is_unsigned ? (uint64_t)a > (uint64_t)b : a > b) ? a : b;
  case TS_OP_MINIMUM: return (is_unsigned ? (uint64_t)a < (uint64_t)b : a < b) ? a : b;
  case TS_OP_AND: return a & b;
  case TS_OP_OR: return a | b;
  default: return a ^ b;
  }
}

/* A reducer on any element type, one element at a time. */
static void scatter_op_run(void *p, int64_t ao, int64_t bo, int64_t n, int64_t as, int64_t bs) {
  scatter_st *s = p;
  ts_elem_t e = s->out->elem;
  void *o = s->out->data;
  const void *u = s->upd->data;
  for (int64_t k = 0; k < n; k++) {
    int64_t oi = ao + k * as, ui = bo + k * bs;
    if (ts_elem_is_complex(e)) {
      double ar, ai, br, bi;
      ts_load_c(e, o, oi, &ar, &ai);
      ts_load_c(e, u, ui, &br, &bi);
      if (s->op == TS_OP_ADD)
        ts_store_c(e, o, oi, ar + br, ai + bi);
      else
        ts_store_c(e, o, oi, ar * br - ai * bi, ar * bi + ai * br);
    } else if (ts_elem_is_int(e)) {
      if (e == TS_PRED && (s->op == TS_OP_ADD || s->op == TS_OP_MAXIMUM)) {
        ts_store_i(e, o, oi, ts_load_i(e, o, oi) | ts_load_i(e, u, ui));
      } else if (e == TS_PRED && (s->op == TS_OP_MULTIPLY || s->op == TS_OP_MINIMUM)) {
        ts_store_i(e, o, oi, ts_load_i(e, o, oi) & ts_load_i(e, u, ui));
      } else {
        ts_store_i(e, o, oi, icombine(s->op, ts_elem_is_unsigned_int(e), ts_load_i(e, o, oi), ts_load_i(e, u, ui)));
      }
    } else {
      ts_store_f(e, o, oi, fcombine(s->op, ts_load_f(e, o, oi), ts_load_f(e, u, ui)));
    }
  }
}

/* The update computation returns its update parameter: a plain overwrite. */
static void scatter_assign_run(void *p, int64_t ao, int64_t bo, int64_t n, int64_t as, int64_t bs) {
  scatter_st *s = p;
  int esz = ts_elem_storage_bytes(s->out->elem);
  char *o = s->out->data;
  const char *u = s->upd->data;
  for (int64_t k = 0; k < n; k++) memcpy(o + (ao + k * as) * esz, u + (bo + k * bs) * esz, (size_t)esz);
}

/* Any update computation: (results..., updates...) -> results. */
static void scatter_apply_run(void *p, int64_t ao, int64_t bo, int64_t n, int64_t as, int64_t bs) {
  scatter_st *s = p;
  for (int64_t k = 0; k < n && s->st == TS_OK; k++) {
    int64_t oi = ao + k * as, ui = bo + k * bs;
    for (int j = 0; j < s->n; j++) {
      int esz = ts_elem_storage_bytes(s->out[j].elem);
      s->args[j].data = (char *)s->out[j].data + oi * esz;
      s->args[s->n + j].data = (char *)s->upd[j].data + ui * esz;
    }
    s->st = s->ctx->apply(s->ctx, s->comp, s->args, 2 * s->n, s->res, s->n);
    for (int j = 0; j < s->n && s->st == TS_OK; j++)
      memcpy(s->args[j].data, s->res[j].data, (size_t)ts_elem_storage_bytes(s->out[j].elem));
  }
}

static ts_status_t k_scatter(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                             int nin, ts_array_t *out, int nout) {
  int n = (nin - 1) / 2;
  const ts_array_t *x = &in[0], *idx = &in[n], *upd = &in[n + 1];
  if (nout != n || nin != 2 * n + 1)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "scatter takes N operands, indices, N updates");
  if (x->rank > TS_MAX_RANK || idx->rank > TS_MAX_RANK || upd->rank > TS_MAX_RANK)
    return too_deep(ctx, instr);
  ts_i64_list_t uwd = list_attr(instr, "update_window_dims"), iwd = list_attr(instr, "inserted_window_dims"),
                sdod = list_attr(instr, "scatter_dims_to_operand_dims"),
                ibd = list_attr(instr, "input_batching_dims"),
                sibd = list_attr(instr, "scatter_indices_batching_dims");
  const ts_hlo_attr_t *ivda = ts_hlo_instr_attr(instr, "index_vector_dim");
  const ts_hlo_attr_t *ta = ts_hlo_instr_attr(instr, "to_apply");
  if (!ivda || ivda->kind != TS_ATTR_INT || ibd.n != sibd.n || !ta || ta->kind != TS_ATTR_COMP ||
      ta->v.comps.n != 1)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "scatter dimension numbers are incomplete");
  for (int k = 0; k < n; k++)
    if (out[k].data != in[k].data) memcpy(out[k].data, in[k].data, ts_array_bytes(&out[k]));

  int64_t xs[TS_MAX_RANK], us[TS_MAX_RANK], wsize[TS_MAX_RANK];
  ts_strides(x->rank, x->dims, xs);
  ts_strides(upd->rank, upd->dims, us);
  /* Update window dimension k lands on the k-th operand dimension that is
   * neither inserted nor a batching dimension. */
  win_t w = {0};
  for (int d = 0; d < x->rank; d++) wsize[d] = 1;
  for (int d = 0, k = 0; d < x->rank; d++) {
    if (has(&iwd, d) || has(&ibd, d)) continue;
    int64_t ud = uwd.v[k++];
    wsize[d] = upd->dims[ud];
    win_add(&w, upd->dims[ud], xs[d], us[ud]);
  }
  batch_t b;
  batch_init(&b, idx, ivda->v.i);
  int64_t bus[TS_MAX_RANK]; /* update strides of the scatter (batch) dimensions */
  for (int d = 0, j = 0; d < upd->rank; d++)
    if (!has(&uwd, d)) bus[j++] = us[d];

  const ts_hlo_comp_t *c = ta->v.comps.comps[0];
  scatter_st s = {.ctx = ctx, .comp = c, .op = interp_reducer_op(c), .n = n, .out = out, .upd = upd, .st = TS_OK};
  s.assign = n == 1 && c->nparams == 2 && c->root == c->params[1];
  run_fn fn = scatter_apply_run;
  ts_elem_t e = x->elem;
  if (n == 1 && s.assign) {
    fn = scatter_assign_run;
  } else if (n == 1 && s.op == TS_OP_ADD && (e == TS_F32 || e == TS_F64 || e == TS_S32 || e == TS_U32)) {
    fn = scatter_add_run;
  } else if (n == 1 && s.op != TS_OP_COUNT) {
    bool ok = ts_elem_is_int(e) || ((ts_elem_is_float(e) || ts_elem_is_complex(e)) &&
                                    (s.op == TS_OP_ADD || s.op == TS_OP_MULTIPLY ||
                                     (!ts_elem_is_complex(e) && (s.op == TS_OP_MAXIMUM || s.op == TS_OP_MINIMUM))));
    if (ok) fn = scatter_op_run;
  }
  if (fn == scatter_apply_run) {
    /* Held across ctx->apply, which may use the context's scratch itself. */
    s.args = ts_calloc((size_t)(3 * n), sizeof *s.args);
    s.resbuf = ts_calloc((size_t)n, 16);
    if (!s.args || !s.resbuf) {
      ts_free(s.args);
      ts_free(s.resbuf);
      return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory");
    }
    s.res = s.args + 2 * n;
    for (int j = 0; j < n; j++) {
      s.args[j] = (ts_array_t){out[j].elem, 0, NULL, NULL};
      s.args[n + j] = (ts_array_t){upd[j].elem, 0, NULL, NULL};
      s.res[j] = (ts_array_t){out[j].elem, 0, NULL, s.resbuf + 16 * j};
    }
  }

  int64_t count = batch_count(&b), ioff = 0, uoff = 0;
  for (int64_t it = 0; it < count && s.st == TS_OK; it++) {
    int64_t dst = 0;
    bool inside = true;
    for (int k = 0; k < sdod.n && inside; k++) {
      int64_t d = sdod.v[k];
      int64_t v = start_value(&b, batch_index(&b, ioff, k));
      /* XLA skips a window that does not fit whole. */
      inside = v >= 0 && v <= x->dims[d] - wsize[d];
      if (inside) dst += v * xs[d];
    }
    for (int k = 0; k < ibd.n && inside; k++) {
      int64_t v = b.pos[b.which[sibd.v[k]]];
      inside = v < x->dims[ibd.v[k]];
      if (inside) dst += v * xs[ibd.v[k]];
    }
    if (inside) win_walk(&w, dst, uoff, fn, &s);
    for (int j = b.nb - 1; j >= 0; j--) {
      ioff += b.stride[j];
      uoff += bus[j];
      if (++b.pos[j] < b.dims[j]) break;
      ioff -= b.stride[j] * b.dims[j];
      uoff -= bus[j] * b.dims[j];
      b.pos[j] = 0;
    }
  }
  ts_free(s.args);
  ts_free(s.resbuf);
  return s.st;
}

void interp_kernels_gather(ts_kernel_fn *table) {
  table[TS_OP_GATHER] = k_gather;
  table[TS_OP_SCATTER] = k_scatter;
}
