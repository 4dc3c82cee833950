/* Kernels: data movement (broadcast, reshape, transpose, copy, slice,
 * dynamic-slice, dynamic-update-slice, concatenate, pad, reverse,
 * get-dimension-size). Every op is type-agnostic: elements move as
 * ts_elem_storage_bytes bytes, through one strided box copy. */
#include "interp_internal.h"

/* ---- the box copy --------------------------------------------------------- */

/* dst[i] = src[i] over a box of `n` elements per dimension, with byte strides
 * on both sides (source strides may be 0 (broadcast) or negative (reverse)).
 * box_init drops unit dimensions and merges dimensions that are contiguous on
 * both sides, so most copies end in one memcpy per minor run. */
typedef struct {
  int esz;
  bool empty;
  int rank; /* after merging; 0 copies one element */
  int64_t n[TS_MAX_RANK], ds[TS_MAX_RANK], ss[TS_MAX_RANK];
  /* A 2-D minor transpose: the destination's minor dimension reads with a
   * stride while dimension `tp` reads contiguously; copied in tiles. */
  int tp; /* -1 when not tiled */
} box_t;

enum { TILE = 64 }; /* elements per tile side: 64 x 64 x 8 bytes of buffer at most */

/* Strides in elements; `rank` <= TS_MAX_RANK. */
static void box_init(box_t *b, int esz, int rank, const int64_t *n, const int64_t *ds,
                     const int64_t *ss) {
  b->esz = esz;
  b->empty = false;
  b->rank = 0;
  b->tp = -1;
  for (int d = 0; d < rank; d++) {
    if (n[d] == 0) b->empty = true;
    if (n[d] == 1) continue;
    b->n[b->rank] = n[d];
    b->ds[b->rank] = ds[d] * esz;
    b->ss[b->rank] = ss[d] * esz;
    b->rank++;
  }
  if (b->empty) return;
  /* Merge dimension d + 1 into d when d steps over exactly one run of
   * d + 1 on both sides (row-major: outer first). */
  int r = b->rank;
  for (int d = r - 2; d >= 0; d--) {
    if (b->ds[d] != b->ds[d + 1] * b->n[d + 1] || b->ss[d] != b->ss[d + 1] * b->n[d + 1]) continue;
    b->n[d] *= b->n[d + 1];
    b->ds[d] = b->ds[d + 1];
    b->ss[d] = b->ss[d + 1];
    for (int k = d + 1; k < r - 1; k++) b->n[k] = b->n[k + 1], b->ds[k] = b->ds[k + 1], b->ss[k] = b->ss[k + 1];
    r--;
  }
  b->rank = r;
  if (r >= 2 && esz <= 8 && b->ds[r - 1] == esz && b->ss[r - 1] != esz && b->ss[r - 1] != 0) {
    for (int d = r - 2; d >= 0; d--)
      if (b->ss[d] == esz && b->n[d] >= 4 && b->n[r - 1] >= 4) {
        b->tp = d;
        break;
      }
  }
}

/* One minor run: n elements, destination contiguous or strided. */
#define RUN_LOOP(T)                                                                 \
  do {                                                                              \
    for (int64_t k = 0; k < n; k++)                                                 \
      *(T *)(dst + k * ds) = *(const T *)(src + k * ss);                            \
  } while (0)

static void copy_run(int esz, int64_t n, char *dst, int64_t ds, const char *src, int64_t ss) {
  if (ds == esz && ss == esz) {
    memcpy(dst, src, (size_t)(n * esz));
    return;
  }
  switch (esz) {
  case 1: RUN_LOOP(uint8_t); break;
  case 2: RUN_LOOP(uint16_t); break;
  case 4: RUN_LOOP(uint32_t); break;
  case 8: RUN_LOOP(uint64_t); break;
  default:
    for (int64_t k = 0; k < n; k++) memcpy(dst + k * ds, src + k * ss, (size_t)esz);
  }
}

/* dst[a][c] = src[a][c] where a steps `das` / `esz` bytes and c steps `esz` /
 * `scs`. A tile goes through a small buffer: rows read whole from the
 * source, rows written whole to the destination. Reading the strided side
 * directly would hit one cache set per tile column when the stride is a
 * power of two. */
#define TILE_OUT(T)                                                                 \
  do {                                                                              \
    const T *bt = (const T *)buf;                                                   \
    for (int64_t a = 0; a < na_t; a++) {                                            \
      T *o = (T *)(dst + (a0 + a) * das) + c0;                                      \
      for (int64_t c = 0; c < nc_t; c++) o[c] = bt[c * TILE + a];                   \
    }                                                                               \
  } while (0)

static void copy_tiled(int esz, int64_t na, int64_t nc, char *dst, int64_t das, const char *src,
                       int64_t scs) {
  _Alignas(64) char buf[TILE * TILE * 8]; /* buf[c][a]; box_init tiles elements of <= 8 bytes */
  for (int64_t a0 = 0; a0 < na; a0 += TILE) {
    int64_t na_t = a0 + TILE < na ? TILE : na - a0;
    for (int64_t c0 = 0; c0 < nc; c0 += TILE) {
      int64_t nc_t = c0 + TILE < nc ? TILE : nc - c0;
      for (int64_t c = 0; c < nc_t; c++)
        memcpy(buf + c * TILE * esz, src + a0 * esz + (c0 + c) * scs, (size_t)(na_t * esz));
      switch (esz) {
      case 1: TILE_OUT(uint8_t); break;
      case 2: TILE_OUT(uint16_t); break;
      case 4: TILE_OUT(uint32_t); break;
      default: TILE_OUT(uint64_t); break;
      }
    }
  }
}

static void box_level(const box_t *b, int d, char *dst, const char *src) {
  int last = b->rank - 1;
  if (d == b->tp) d++; /* the tiled dimension is the tile loop's */
  if (d == last) {
    if (b->tp >= 0)
      copy_tiled(b->esz, b->n[b->tp], b->n[last], dst, b->ds[b->tp], src, b->ss[last]);
    else
      copy_run(b->esz, b->n[last], dst, b->ds[last], src, b->ss[last]);
    return;
  }
  for (int64_t k = 0; k < b->n[d]; k++) box_level(b, d + 1, dst + k * b->ds[d], src + k * b->ss[d]);
}

static void box_run(const box_t *b, void *dst, const void *src) {
  if (b->empty) return;
  if (b->rank == 0) {
    memcpy(dst, src, (size_t)b->esz);
    return;
  }
  box_level(b, 0, dst, src);
}

/* Fills `count` elements of `esz` bytes with the element at `val`. */
static void fill(int esz, void *dst, int64_t count, const void *val) {
  if (count <= 0) return;
  switch (esz) {
  case 1: memset(dst, *(const uint8_t *)val, (size_t)count); return;
  case 2: {
    uint16_t v;
    memcpy(&v, val, 2);
    for (int64_t k = 0; k < count; k++) ((uint16_t *)dst)[k] = v;
    return;
  }
  case 4: {
    uint32_t v;
    memcpy(&v, val, 4);
    for (int64_t k = 0; k < count; k++) ((uint32_t *)dst)[k] = v;
    return;
  }
  case 8: {
    uint64_t v;
    memcpy(&v, val, 8);
    for (int64_t k = 0; k < count; k++) ((uint64_t *)dst)[k] = v;
    return;
  }
  default:
    for (int64_t k = 0; k < count; k++) memcpy((char *)dst + k * esz, val, (size_t)esz);
  }
}

/* ---- helpers --------------------------------------------------------------- */

static int esize(const ts_array_t *a) { return ts_elem_storage_bytes(a->elem); }

static ts_i64_list_t list_attr(const ts_hlo_instr_t *instr, const char *name) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, name);
  if (a && a->kind == TS_ATTR_INT_LIST) return a->v.list;
  return (ts_i64_list_t){0, NULL};
}

static ts_status_t too_deep(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, int rank) {
  return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "rank %d exceeds the interpreter's %d",
                        rank, TS_MAX_RANK);
}

/* Start index k of a dynamic-slice / dynamic-update-slice, clamped to
 * [0, dim - size] as XLA does. The indices are integer scalars from operand
 * `first` on, or (the old form) one index vector. Unsigned indices above
 * INT64_MAX clamp high, as their value says. */
static int64_t start_index(const ts_array_t *in, int nin, int first, int rank, int k, int64_t dim,
                           int64_t size) {
  const ts_array_t *ix = &in[first];
  int64_t pos = k;
  if (nin - first == rank && (ix + k)->rank == 0) ix += k, pos = 0;
  int64_t s = ts_load_i(ix->elem, ix->data, pos);
  int64_t hi = dim - size;
  if (s < 0 && ts_elem_is_unsigned_int(ix->elem)) return hi;
  return s < 0 ? 0 : s > hi ? hi : s;
}

/* ---- kernels --------------------------------------------------------------- */

static ts_status_t k_copy(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                          int nin, ts_array_t *out, int nout) {
  if (out->data != in->data) memcpy(out->data, in->data, ts_array_bytes(out));
  return TS_OK;
}

static ts_status_t k_broadcast(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                               int nin, ts_array_t *out, int nout) {
  if (out->rank > TS_MAX_RANK) return too_deep(ctx, instr, out->rank);
  ts_i64_list_t dims = list_attr(instr, "dimensions");
  int64_t is[TS_MAX_RANK], os[TS_MAX_RANK], ss[TS_MAX_RANK] = {0};
  ts_strides(in->rank, in->dims, is);
  ts_strides(out->rank, out->dims, os);
  for (int k = 0; k < dims.n && k < in->rank; k++) ss[dims.v[k]] = is[k];
  box_t b;
  box_init(&b, esize(out), out->rank, out->dims, os, ss);
  box_run(&b, out->data, in->data);
  return TS_OK;
}

static ts_status_t k_transpose(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                               int nin, ts_array_t *out, int nout) {
  if (out->rank > TS_MAX_RANK) return too_deep(ctx, instr, out->rank);
  ts_i64_list_t perm = list_attr(instr, "dimensions");
  int64_t is[TS_MAX_RANK], os[TS_MAX_RANK], ss[TS_MAX_RANK];
  ts_strides(in->rank, in->dims, is);
  ts_strides(out->rank, out->dims, os);
  for (int d = 0; d < out->rank; d++) ss[d] = is[perm.v[d]];
  box_t b;
  box_init(&b, esize(out), out->rank, out->dims, os, ss);
  box_run(&b, out->data, in->data);
  return TS_OK;
}

static ts_status_t k_reverse(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                             int nin, ts_array_t *out, int nout) {
  if (out->rank > TS_MAX_RANK) return too_deep(ctx, instr, out->rank);
  ts_i64_list_t dims = list_attr(instr, "dimensions");
  int64_t os[TS_MAX_RANK], ss[TS_MAX_RANK];
  ts_strides(out->rank, out->dims, os);
  memcpy(ss, os, sizeof(int64_t) * (size_t)out->rank);
  int esz = esize(out);
  const char *src = in->data;
  if (ts_array_count(out) == 0) return TS_OK;
  for (int k = 0; k < dims.n; k++) {
    int64_t d = dims.v[k];
    src += (out->dims[d] - 1) * os[d] * esz;
    ss[d] = -os[d];
  }
  box_t b;
  box_init(&b, esz, out->rank, out->dims, os, ss);
  box_run(&b, out->data, src);
  return TS_OK;
}

static ts_status_t k_slice(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                           int nin, ts_array_t *out, int nout) {
  if (out->rank > TS_MAX_RANK) return too_deep(ctx, instr, out->rank);
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, "slice");
  if (!a || a->kind != TS_ATTR_SLICE || a->v.slice->n != in->rank)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "slice needs a slice= range per dimension");
  const ts_slice_t *sl = a->v.slice;
  int64_t is[TS_MAX_RANK], os[TS_MAX_RANK], ss[TS_MAX_RANK];
  ts_strides(in->rank, in->dims, is);
  ts_strides(out->rank, out->dims, os);
  int esz = esize(out);
  int64_t base = 0;
  for (int d = 0; d < in->rank; d++) {
    base += sl->start[d] * is[d];
    ss[d] = sl->stride[d] * is[d];
  }
  if (ts_array_count(out) == 0) return TS_OK;
  box_t b;
  box_init(&b, esz, out->rank, out->dims, os, ss);
  box_run(&b, out->data, (const char *)in->data + base * esz);
  return TS_OK;
}

static ts_status_t k_dynamic_slice(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr,
                                   const ts_array_t *in, int nin, ts_array_t *out, int nout) {
  if (out->rank > TS_MAX_RANK) return too_deep(ctx, instr, out->rank);
  int64_t is[TS_MAX_RANK], os[TS_MAX_RANK];
  ts_strides(in->rank, in->dims, is);
  ts_strides(out->rank, out->dims, os);
  int esz = esize(out);
  int64_t base = 0;
  for (int d = 0; d < in->rank; d++)
    base += start_index(in, nin, 1, in->rank, d, in->dims[d], out->dims[d]) * is[d];
  box_t b;
  box_init(&b, esz, out->rank, out->dims, os, is);
  box_run(&b, out->data, (const char *)in->data + base * esz);
  return TS_OK;
}

static ts_status_t k_dynamic_update_slice(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr,
                                          const ts_array_t *in, int nin, ts_array_t *out, int nout) {
  if (out->rank > TS_MAX_RANK) return too_deep(ctx, instr, out->rank);
  const ts_array_t *u = &in[1];
  int esz = esize(out);
  if (out->data != in->data) memcpy(out->data, in->data, ts_array_bytes(out));
  int64_t os[TS_MAX_RANK], us[TS_MAX_RANK];
  ts_strides(out->rank, out->dims, os);
  ts_strides(u->rank, u->dims, us);
  int64_t base = 0;
  for (int d = 0; d < out->rank; d++)
    base += start_index(in, nin, 2, out->rank, d, out->dims[d], u->dims[d]) * os[d];
  box_t b;
  box_init(&b, esz, u->rank, u->dims, os, us);
  box_run(&b, (char *)out->data + base * esz, u->data);
  return TS_OK;
}

static ts_status_t k_concatenate(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr,
                                 const ts_array_t *in, int nin, ts_array_t *out, int nout) {
  if (out->rank > TS_MAX_RANK) return too_deep(ctx, instr, out->rank);
  ts_i64_list_t dims = list_attr(instr, "dimensions");
  if (dims.n != 1)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "concatenate needs dimensions={d}");
  int64_t cd = dims.v[0];
  int64_t os[TS_MAX_RANK], is[TS_MAX_RANK];
  ts_strides(out->rank, out->dims, os);
  int esz = esize(out);
  int64_t at = 0;
  for (int k = 0; k < nin; k++) {
    ts_strides(in[k].rank, in[k].dims, is);
    box_t b;
    box_init(&b, esz, in[k].rank, in[k].dims, os, is);
    box_run(&b, (char *)out->data + at * os[cd] * esz, in[k].data);
    at += in[k].dims[cd];
  }
  return TS_OK;
}

/* The operand element i of a padded dimension lands at lo + i * (interior + 1);
 * negative lo/hi cut elements off. */
static ts_status_t k_pad(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                         int nin, ts_array_t *out, int nout) {
  if (out->rank > TS_MAX_RANK) return too_deep(ctx, instr, out->rank);
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, "padding");
  if (!a || a->kind != TS_ATTR_PADDING || a->v.padding->n != in->rank)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "pad needs a padding= entry per dimension");
  const ts_padding_t *p = a->v.padding;
  int esz = esize(out);
  fill(esz, out->data, ts_array_count(out), in[1].data);
  int64_t is[TS_MAX_RANK], os[TS_MAX_RANK], n[TS_MAX_RANK], ds[TS_MAX_RANK];
  ts_strides(in->rank, in->dims, is);
  ts_strides(out->rank, out->dims, os);
  int64_t sbase = 0, dbase = 0;
  for (int d = 0; d < in->rank; d++) {
    int64_t step = p->interior[d] + 1, lo = p->lo[d];
    /* First and last operand index that lands inside [0, out dim). */
    int64_t i0 = lo >= 0 ? 0 : (-lo + step - 1) / step;
    int64_t room = out->dims[d] - 1 - lo;
    int64_t i1 = room < 0 ? -1 : room / step;
    if (i1 > in->dims[d] - 1) i1 = in->dims[d] - 1;
    if (i1 < i0) return TS_OK; /* nothing of the operand survives */
    n[d] = i1 - i0 + 1;
    sbase += i0 * is[d];
    dbase += (lo + i0 * step) * os[d];
    ds[d] = os[d] * step;
  }
  box_t b;
  box_init(&b, esz, in->rank, n, ds, is);
  box_run(&b, (char *)out->data + dbase * esz, (const char *)in->data + sbase * esz);
  return TS_OK;
}

static ts_status_t k_get_dimension_size(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr,
                                        const ts_array_t *in, int nin, ts_array_t *out, int nout) {
  ts_i64_list_t dims = list_attr(instr, "dimensions");
  if (dims.n != 1 || dims.v[0] < 0 || dims.v[0] >= in->rank)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "get-dimension-size needs dimensions={d}");
  int64_t size = in->dims[dims.v[0]];
  ts_store_i(out->elem, out->data, 0, size);
  return TS_OK;
}

void interp_kernels_movement(ts_kernel_fn *table) {
  table[TS_OP_BROADCAST] = k_broadcast;
  table[TS_OP_RESHAPE] = k_copy; /* row-major logical order: the bytes do not move */
  table[TS_OP_COPY] = k_copy;
  table[TS_OP_TRANSPOSE] = k_transpose;
  table[TS_OP_REVERSE] = k_reverse;
  table[TS_OP_SLICE] = k_slice;
  table[TS_OP_DYNAMIC_SLICE] = k_dynamic_slice;
  table[TS_OP_DYNAMIC_UPDATE_SLICE] = k_dynamic_update_slice;
  table[TS_OP_CONCATENATE] = k_concatenate;
  table[TS_OP_PAD] = k_pad;
  table[TS_OP_GET_DIMENSION_SIZE] = k_get_dimension_size;
}
