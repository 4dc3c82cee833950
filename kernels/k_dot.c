/* Kernels: dot (general dimension numbers) and convolution.
 *
 * Both compute in the result type's class, as XLA's CPU backend does once its
 * float-normalization has run: operands are converted to f32 for results of
 * f32 or narrower float types (bf16/f16/f8 results accumulate in f32 and
 * round once), to f64, to complex, or to 64-bit integers that wrap to the
 * result's width (s8 x s8 -> s32 included). Every float and complex dot
 * goes through OpenBLAS gemm (layouts folded into its transpose and
 * leading-dimension arguments; the rest packed in blocks, below). f32/f64
 * convolutions run as gemm over im2col patches when most window taps land on
 * the operand; the rest (and integer and complex ones) as a direct loop over
 * the taps. Batch groups follow StableHLO's split/convolve/concatenate. */
#include "kernels_internal.h"

#include <cblas.h>
#include <limits.h>

/* ---- compute classes and operand conversion ----------------------------- */

typedef enum { CK_F32, CK_F64, CK_C64, CK_C128, CK_INT } cclass_t;

static cclass_t class_of(ts_elem_t out) {
  if (out == TS_F64) return CK_F64;
  if (out == TS_C64) return CK_C64;
  if (out == TS_C128) return CK_C128;
  if (ts_elem_is_float(out)) return CK_F32;
  return CK_INT;
}

static size_t class_bytes(cclass_t c) {
  static const size_t b[] = {4, 8, 8, 16, 8};
  return b[c];
}

/* The element type whose storage is the class's compute representation
 * (operands and results of that type need no conversion). */
static ts_elem_t class_native(cclass_t c) {
  static const ts_elem_t e[] = {TS_F32, TS_F64, TS_C64, TS_C128, TS_S64};
  return e[c];
}

/* Element i of x converted to class c into dst[j]; `out` is the result type
 * (integer results convert float operands with XLA's convert to it first). */
static inline void load_as(cclass_t c, ts_elem_t out, const ts_array_t *x, int64_t i, void *dst, int64_t j) {
  ts_elem_t e = x->elem;
  switch (c) {
  case CK_F32:
    if (e == TS_F32) ((float *)dst)[j] = ((const float *)x->data)[i];
    else if (e == TS_BF16) {
      uint32_t bits = (uint32_t)((const uint16_t *)x->data)[i] << 16;
      memcpy((float *)dst + j, &bits, 4);
    } else if (ts_elem_is_int(e)) ((float *)dst)[j] = (float)ts_load_i(e, x->data, i);
    else ((float *)dst)[j] = (float)ts_load_f(e, x->data, i);
    return;
  case CK_F64:
    ((double *)dst)[j] = ts_elem_is_int(e) ? (double)ts_load_i(e, x->data, i) : ts_load_f(e, x->data, i);
    return;
  case CK_C64:
  case CK_C128: {
    double re, im;
    if (ts_elem_is_int(e))
      re = (double)ts_load_i(e, x->data, i), im = 0;
    else
      ts_load_c(e, x->data, i, &re, &im);
    if (c == CK_C64)
      ((float *)dst)[2 * j] = (float)re, ((float *)dst)[2 * j + 1] = (float)im;
    else
      ((double *)dst)[2 * j] = re, ((double *)dst)[2 * j + 1] = im;
    return;
  }
  case CK_INT:
    if (ts_elem_is_int(e)) {
      ((int64_t *)dst)[j] = ts_load_i(e, x->data, i);
    } else {
      unsigned char tmp[16];
      size_t sz = (size_t)ts_elem_storage_bytes(e);
      ts_elem_convert(e, (const char *)x->data + (size_t)i * sz, out, tmp, 1);
      ((int64_t *)dst)[j] = ts_load_i(out, tmp, 0);
    }
    return;
  }
}

/* Stores n values of class c from src into `out` (rounding once). */
static void store_from(cclass_t c, const void *src, ts_array_t *out, int64_t n) {
  ts_elem_t e = out->elem;
  if (e == class_native(c)) {
    memcpy(out->data, src, (size_t)n * class_bytes(c));
    return;
  }
  switch (c) {
  case CK_F32: ts_elem_convert(TS_F32, src, e, out->data, n); return;
  case CK_F64: ts_elem_convert(TS_F64, src, e, out->data, n); return;
  case CK_C64: ts_elem_convert(TS_C64, src, e, out->data, n); return;
  case CK_C128: ts_elem_convert(TS_C128, src, e, out->data, n); return;
  case CK_INT:
    for (int64_t i = 0; i < n; i++) ts_store_i(e, out->data, i, ((const int64_t *)src)[i]);
    return;
  }
}

/* dst (class c, row-major over x's dims taken in the order perm[0..rank))
 * = x transposed and converted. */
static void pack(cclass_t c, ts_elem_t out, const ts_array_t *x, const int *perm, void *dst) {
  if (x->rank == 0) {
    load_as(c, out, x, 0, dst, 0);
    return;
  }
  int r = x->rank;
  int64_t stride[TS_MAX_RANK], pdim[TS_MAX_RANK], pstr[TS_MAX_RANK], idx[TS_MAX_RANK] = {0};
  ts_strides(r, x->dims, stride);
  for (int k = 0; k < r; k++) pdim[k] = x->dims[perm[k]], pstr[k] = stride[perm[k]];
  int64_t n = ts_array_count(x);
  if (n == 0) return;
  int64_t inner = pdim[r - 1], istr = pstr[r - 1], src = 0, j = 0;
  for (;;) {
    if (c == CK_F32 && x->elem == TS_F32) {
      const float *s = (const float *)x->data + src;
      float *d = (float *)dst + j;
      for (int64_t t = 0; t < inner; t++) d[t] = s[t * istr];
    } else if (c == CK_F32 && x->elem == TS_BF16) { /* bf16 is the top half of an f32 */
      const uint16_t *s = (const uint16_t *)x->data + src;
      uint32_t *d = (uint32_t *)dst + j;
      for (int64_t t = 0; t < inner; t++) d[t] = (uint32_t)s[t * istr] << 16;
    } else if (c == CK_F64 && x->elem == TS_F64) {
      const double *s = (const double *)x->data + src;
      double *d = (double *)dst + j;
      for (int64_t t = 0; t < inner; t++) d[t] = s[t * istr];
    } else {
      for (int64_t t = 0; t < inner; t++) load_as(c, out, x, src + t * istr, dst, j + t);
    }
    j += inner;
    int d = r - 2;
    for (; d >= 0; d--) {
      src += pstr[d];
      if (++idx[d] < pdim[d]) break;
      src -= pstr[d] * pdim[d];
      idx[d] = 0;
    }
    if (d < 0) break;
  }
}

/* Carves 64-byte aligned regions out of one scratch buffer. */
static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* ---- dot ---------------------------------------------------------------- */

static const ts_i64_list_t *list_attr(const ts_hlo_instr_t *instr, const char *name) {
  static const ts_i64_list_t empty = {0, NULL};
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, name);
  return a && a->kind == TS_ATTR_INT_LIST ? &a->v.list : &empty;
}

static bool in_list(const ts_i64_list_t *l, int64_t d) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == d) return true;
  return false;
}

/* An integer dot operand's dims in gemm order (batch, then free then
 * contracting for lhs, contracting then free for rhs), for pack(). */
typedef struct {
  int perm[TS_MAX_RANK];
  int64_t free_count;
} dot_side_t;

static void dot_side(const ts_array_t *x, const ts_i64_list_t *batch, const ts_i64_list_t *contract, bool lhs,
                     dot_side_t *s) {
  int free[TS_MAX_RANK], nfree = 0;
  s->free_count = 1;
  for (int d = 0; d < x->rank; d++)
    if (!in_list(batch, d) && !in_list(contract, d)) free[nfree++] = d, s->free_count *= x->dims[d];
  int p = 0;
  for (int k = 0; k < batch->n; k++) s->perm[p++] = (int)batch->v[k];
  if (lhs)
    for (int k = 0; k < nfree; k++) s->perm[p++] = free[k];
  for (int k = 0; k < contract->n; k++) s->perm[p++] = (int)contract->v[k];
  if (!lhs)
    for (int k = 0; k < nfree; k++) s->perm[p++] = free[k];
}

/* ---- dot on BLAS -------------------------------------------------------- */

/* Every float and complex dot is a loop of gemm calls, one per batch index
 * (OpenBLAS 0.3.21 has no cblas_?gemm_batch). An operand whose free dims and
 * whose contracting dims each merge into one strided axis, one of them of
 * stride 1, is handed to gemm where it lies: the other axis's stride is the
 * leading dimension and which of the two is contiguous is the transpose flag;
 * batch dims may sit anywhere, as an offset per batch index. Any other
 * operand (non-native element types such as bf16/f16, or free and contracting
 * dims interleaved) is gathered and converted into scratch, K_BLOCK
 * contracting indices at a time, and the products of the blocks are summed
 * by gemm itself (beta = 1) in the compute type: bf16 x bf16 accumulates in
 * f32 and rounds once, as XLA's CPU backend does after upcasting.
 *
 * Small gemms of a batched dot are the exception to gemm reading operands in
 * place: for them OpenBLAS's small-matrix kernels are fastest on contiguous
 * untransposed operands (64 cblas_sgemm calls of 128x128x32 timed in a
 * scratch loop on an AVX-512 host, stop 32: 255 GFLOP/s contiguous, B
 * transposed 185, A with a leading dimension of 4x its width 150; in the
 * project, bench_dot_shapes shows the same as the kernel against contiguous
 * sgemm for each dot's shape), and copying each
 * batch's f32/f64 operand into a contiguous row-major panel first (the
 * transposed ones by ?omatcopy) costs less than the difference: attention's
 * Q.K^T 0.66 -> 0.87 of contiguous sgemm's rate. */

enum { K_BLOCK = 512, SMALL_GEMM = 1 << 21 /* M*N*K, per batch */ };

/* A group of dims (in gemm order) as one axis: `ext` indices `stride`
 * elements apart; stride 0 when ext is 1 (any stride will do). merged:
 * whether the dims are one strided axis at all. */
typedef struct {
  int64_t ext, stride;
  bool merged;
} axis_t;

static axis_t merge_axis(const int64_t *dims, const int64_t *strides, const int *g, int n) {
  axis_t a = {1, 0, true};
  int64_t want = -1; /* the stride the next non-unit dim must have, from the right */
  for (int k = n - 1; k >= 0; k--) {
    int64_t e = dims[g[k]];
    if (e == 1) continue;
    if (want < 0) a.stride = strides[g[k]];
    else if (strides[g[k]] != want) a.merged = false;
    want = strides[g[k]] * e;
    a.ext *= e;
  }
  return a;
}

/* Offsets (elements) of every flattened index of a group of dims, row-major
 * over the group in gemm order. */
static void group_offsets(const int64_t *dims, const int64_t *strides, const int *g, int n, int64_t *off) {
  int64_t idx[TS_MAX_RANK] = {0}, cur = 0, i = 0;
  for (;;) {
    off[i++] = cur;
    int k = n - 1;
    for (; k >= 0; k--) {
      cur += strides[g[k]];
      if (++idx[k] < dims[g[k]]) break;
      cur -= strides[g[k]] * dims[g[k]];
      idx[k] = 0;
    }
    if (k < 0) break;
  }
}

/* One operand as gemm sees it: rows x cols (lhs: M x K, rhs: K x N). */
typedef struct {
  const ts_array_t *x;
  int nb, nrows, ncols;
  int b[TS_MAX_RANK], rows[TS_MAX_RANK], cols[TS_MAX_RANK];
  int64_t strides[TS_MAX_RANK];
  int64_t nr, nc;
  bool direct;            /* gemm reads it in place */
  bool trans;             /* direct: stored as cols x rows */
  blasint ld;             /* direct: the leading dimension */
  int64_t *roff, *coff;   /* packed: the offsets of every row and column index */
} gemm_side_t;

static void gemm_side(const ts_array_t *x, const ts_i64_list_t *batch, const ts_i64_list_t *contract, bool lhs,
                      ts_elem_t native, gemm_side_t *s) {
  s->x = x;
  ts_strides(x->rank, x->dims, s->strides);
  int fr[TS_MAX_RANK], nf = 0;
  for (int d = 0; d < x->rank; d++)
    if (!in_list(batch, d) && !in_list(contract, d)) fr[nf++] = d;
  s->nb = (int)batch->n;
  for (int k = 0; k < batch->n; k++) s->b[k] = (int)batch->v[k];
  int *rows = lhs ? fr : NULL, nrows = lhs ? nf : (int)contract->n;
  int *cols = lhs ? NULL : fr, ncols = lhs ? (int)contract->n : nf;
  int con[TS_MAX_RANK];
  for (int k = 0; k < contract->n; k++) con[k] = (int)contract->v[k];
  if (!rows) rows = con;
  if (!cols) cols = con;
  s->nrows = nrows;
  s->ncols = ncols;
  memcpy(s->rows, rows, (size_t)nrows * sizeof *rows);
  memcpy(s->cols, cols, (size_t)ncols * sizeof *cols);
  axis_t r = merge_axis(x->dims, s->strides, rows, nrows), c = merge_axis(x->dims, s->strides, cols, ncols);
  s->nr = r.ext;
  s->nc = c.ext;
  s->direct = false;
  s->roff = s->coff = NULL;
  if (x->elem != native || !r.merged || !c.merged) return;
  int64_t ld;
  if (c.ext == 1 || c.stride == 1) { /* rows apart by ld, columns contiguous */
    s->trans = false;
    ld = r.ext == 1 ? (c.ext > 1 ? c.ext : 1) : r.stride;
    if (ld < c.ext) return;
  } else if (r.ext == 1 || r.stride == 1) { /* stored transposed: columns apart by ld */
    s->trans = true;
    ld = c.stride;
    if (ld < r.ext) return;
  } else {
    return;
  }
  if (ld > INT_MAX) return;
  s->ld = (blasint)ld;
  s->direct = true;
}

/* Offset (elements) of a direct operand's element (row, col). */
static int64_t direct_at(const gemm_side_t *s, int64_t row, int64_t col) {
  return s->trans ? col * s->ld + row : row * s->ld + col;
}

/* Whether a direct operand is not already contiguous and untransposed. */
static bool direct_strided(const gemm_side_t *s) { return s->trans || s->ld != (s->nc > 1 ? s->nc : 1); }

/* Whether copying a direct operand of a small gemm of `mnk` multiply-adds
 * into a panel pays: rows copied with memcpy always do; a transpose
 * (?omatcopy, some ns an element) only when the other gemm dimension is
 * at least 64, i.e. the copy is at most 1/64 of the gemm's work (Q.K^T: rhs
 * 32x128 with M 128 gains 0.66 -> 0.87; a 128x128 lhs with N 32 loses
 * 0.86 -> 0.62). */
static bool repack_pays(const gemm_side_t *s, int64_t mnk) {
  if (!direct_strided(s)) return false;
  return !s->trans || s->nr * s->nc * 64 <= mnk;
}

/* A direct f32/f64 operand at `src` copied into dst as a contiguous
 * row-major nr x nc panel. */
static void repack_direct(cclass_t c, const gemm_side_t *s, const void *src, void *dst) {
  blasint nr = (blasint)s->nr, nc = (blasint)s->nc;
  if (s->trans) { /* stored as nc x nr, rows ld apart */
    if (c == CK_F32) cblas_somatcopy(CblasRowMajor, CblasTrans, nc, nr, 1.0f, src, s->ld, dst, nc);
    else cblas_domatcopy(CblasRowMajor, CblasTrans, nc, nr, 1.0, src, s->ld, dst, nc);
    return;
  }
  size_t eb = class_bytes(c), row = (size_t)nc * eb, ld = (size_t)s->ld * eb;
  for (blasint i = 0; i < nr; i++) memcpy((char *)dst + (size_t)i * row, (const char *)src + (size_t)i * ld, row);
}

/* dst[0..n) (class c) = elements base + off[0..n) of x, converted. */
static void gather(cclass_t c, ts_elem_t oe, const ts_array_t *x, int64_t base, const int64_t *off, int64_t n,
                   void *dst, void *tmp) {
  ts_elem_t e = x->elem;
  if (c == CK_F32 && e == TS_F32) {
    const float *s = (const float *)x->data + base;
    float *d = dst;
    for (int64_t t = 0; t < n; t++) d[t] = s[off[t]];
  } else if (c == CK_F32 && e == TS_BF16) { /* bf16 is the top half of an f32 */
    const uint16_t *s = (const uint16_t *)x->data + base;
    uint32_t *d = dst;
    for (int64_t t = 0; t < n; t++) d[t] = (uint32_t)s[off[t]] << 16;
  } else if (c == CK_F32 && e == TS_F16) {
    const uint16_t *s = (const uint16_t *)x->data + base;
    uint16_t *h = tmp;
    for (int64_t t = 0; t < n; t++) h[t] = s[off[t]];
    ts_elem_convert(TS_F16, h, TS_F32, dst, n);
  } else if (c == CK_F64 && e == TS_F64) {
    const double *s = (const double *)x->data + base;
    double *d = dst;
    for (int64_t t = 0; t < n; t++) d[t] = s[off[t]];
  } else {
    for (int64_t t = 0; t < n; t++) load_as(c, oe, x, base + off[t], dst, t);
  }
}

/* Packs rows x [k0, k0 + kb) of a lhs (into kb-wide rows) or [k0, k0 + kb) x
 * cols of a rhs (into cols-wide rows) at batch offset `base`. */
static void pack_block(cclass_t c, ts_elem_t oe, const gemm_side_t *s, bool lhs, int64_t base, int64_t k0, int64_t kb,
                       void *dst, void *tmp) {
  size_t eb = class_bytes(c);
  if (lhs)
    for (int64_t i = 0; i < s->nr; i++)
      gather(c, oe, s->x, base + s->roff[i], s->coff + k0, kb, (char *)dst + (size_t)(i * kb) * eb, tmp);
  else
    for (int64_t k = 0; k < kb; k++)
      gather(c, oe, s->x, base + s->roff[k0 + k], s->coff, s->nc, (char *)dst + (size_t)(k * s->nc) * eb, tmp);
}

static void gemm_call(cclass_t c, bool ta, bool tb, blasint m, blasint n, blasint k, const void *a, blasint lda,
                      const void *b, blasint ldb, bool accumulate, void *cp, blasint ldc) {
  enum CBLAS_TRANSPOSE cta = ta ? CblasTrans : CblasNoTrans, ctb = tb ? CblasTrans : CblasNoTrans;
  switch (c) {
  case CK_F32:
    cblas_sgemm(CblasRowMajor, cta, ctb, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, cp, ldc);
    return;
  case CK_F64:
    cblas_dgemm(CblasRowMajor, cta, ctb, m, n, k, 1.0, a, lda, b, ldb, accumulate ? 1.0 : 0.0, cp, ldc);
    return;
  case CK_C64: {
    static const float one[2] = {1, 0}, zero[2] = {0, 0};
    cblas_cgemm(CblasRowMajor, cta, ctb, m, n, k, one, a, lda, b, ldb, accumulate ? one : zero, cp, ldc);
    return;
  }
  default: {
    static const double one[2] = {1, 0}, zero[2] = {0, 0};
    cblas_zgemm(CblasRowMajor, cta, ctb, m, n, k, one, a, lda, b, ldb, accumulate ? one : zero, cp, ldc);
    return;
  }
  }
}

static ts_status_t dot_gemm(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, cclass_t c, const ts_array_t *l,
                            const ts_array_t *r, const ts_i64_list_t *lb, const ts_i64_list_t *rb,
                            const ts_i64_list_t *lc, const ts_i64_list_t *rc, ts_array_t *out) {
  ts_elem_t native = class_native(c), oe = out->elem;
  gemm_side_t ls, rs;
  gemm_side(l, lb, lc, true, native, &ls);
  gemm_side(r, rb, rc, false, native, &rs);
  int64_t M = ls.nr, K = ls.nc, N = rs.nc, B = 1;
  for (int k = 0; k < lb->n; k++) B *= l->dims[lb->v[k]];
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "dot dimensions exceed BLAS's int range");
  bool packs = !ls.direct || !rs.direct;
  int64_t kb = packs && K > K_BLOCK ? K_BLOCK : K;
  size_t eb = class_bytes(c), n = (size_t)(B * M * N);
  bool oa = oe == native;
  size_t cbytes = oa ? 0 : align64(n * eb);
  size_t abytes = ls.direct ? 0 : align64((size_t)(M * kb) * eb), bbytes = rs.direct ? 0 : align64((size_t)(kb * N) * eb);
  size_t obytes = (ls.direct ? 0 : align64((size_t)(M + K) * 8)) + (rs.direct ? 0 : align64((size_t)(K + N) * 8));
  size_t tbytes = packs ? align64((size_t)(M > N ? (M > kb ? M : kb) : (N > kb ? N : kb)) * 2) : 0;
  bool small = !packs && B > 1 && M * N * K <= SMALL_GEMM && (c == CK_F32 || c == CK_F64);
  bool lre = small && repack_pays(&ls, M * N * K), rre = small && repack_pays(&rs, M * N * K);
  if (lre) abytes = align64((size_t)(M * K) * eb);
  if (rre) bbytes = align64((size_t)(K * N) * eb);
  char *buf = ts_kernel_scratch(ctx, cbytes + abytes + bbytes + obytes + tbytes + 64);
  if (!buf) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory for dot scratch");
  char *C = oa ? out->data : buf, *Ap = buf + cbytes, *Bp = Ap + abytes, *offs = Bp + bbytes, *tmp = offs + obytes;
  if (!ls.direct) {
    ls.roff = (int64_t *)offs, ls.coff = ls.roff + M;
    group_offsets(l->dims, ls.strides, ls.rows, ls.nrows, ls.roff);
    group_offsets(l->dims, ls.strides, ls.cols, ls.ncols, ls.coff);
    offs += align64((size_t)(M + K) * 8);
  }
  if (!rs.direct) {
    rs.roff = (int64_t *)offs, rs.coff = rs.roff + K;
    group_offsets(r->dims, rs.strides, rs.rows, rs.nrows, rs.roff);
    group_offsets(r->dims, rs.strides, rs.cols, rs.ncols, rs.coff);
  }
  int64_t bidx[TS_MAX_RANK] = {0}, bdims[TS_MAX_RANK];
  for (int k = 0; k < lb->n; k++) bdims[k] = l->dims[lb->v[k]];
  for (int64_t bi = 0; bi < B; bi++) {
    int64_t lbase = 0, rbase = 0;
    for (int k = 0; k < lb->n; k++)
      lbase += bidx[k] * ls.strides[lb->v[k]], rbase += bidx[k] * rs.strides[rb->v[k]];
    char *cp = C + (size_t)(bi * M * N) * eb;
    for (int64_t k0 = 0; k0 < K; k0 += kb) {
      int64_t kn = K - k0 < kb ? K - k0 : kb;
      const char *ap, *bp;
      blasint lda, ldb;
      bool ta = false, tb = false;
      if (lre) {
        repack_direct(c, &ls, (const char *)l->data + (size_t)lbase * eb, Ap);
        ap = Ap, lda = (blasint)K;
      } else if (ls.direct) {
        ap = (const char *)l->data + (size_t)(lbase + direct_at(&ls, 0, k0)) * eb, lda = ls.ld, ta = ls.trans;
      } else {
        pack_block(c, oe, &ls, true, lbase, k0, kn, Ap, tmp);
        ap = Ap, lda = (blasint)kn;
      }
      if (rre) {
        repack_direct(c, &rs, (const char *)r->data + (size_t)rbase * eb, Bp);
        bp = Bp, ldb = (blasint)N;
      } else if (rs.direct) {
        bp = (const char *)r->data + (size_t)(rbase + direct_at(&rs, k0, 0)) * eb, ldb = rs.ld, tb = rs.trans;
      } else {
        pack_block(c, oe, &rs, false, rbase, k0, kn, Bp, tmp);
        bp = Bp, ldb = (blasint)N;
      }
      gemm_call(c, ta, tb, (blasint)M, (blasint)N, (blasint)kn, ap, lda, bp, ldb, k0 > 0, cp, (blasint)N);
    }
    for (int k = (int)lb->n - 1; k >= 0; k--) {
      if (++bidx[k] < bdims[k]) break;
      bidx[k] = 0;
    }
  }
  if (!oa) store_from(c, C, out, (int64_t)n);
  return TS_OK;
}

static ts_status_t k_dot(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                         ts_array_t *out, int nout) {
  if (nin != 2)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "dot with %d operands (sparse dot) is not supported",
                          nin);
  const ts_array_t *l = &in[0], *r = &in[1];
  const ts_i64_list_t *lb = list_attr(instr, "lhs_batch_dims"), *rb = list_attr(instr, "rhs_batch_dims");
  const ts_i64_list_t *lc = list_attr(instr, "lhs_contracting_dims"),
                      *rc = list_attr(instr, "rhs_contracting_dims");
  ts_elem_t oe = out->elem;
  int64_t n = ts_array_count(out), K = 1;
  for (int k = 0; k < lc->n; k++) K *= l->dims[lc->v[k]];
  if (n == 0) return TS_OK;
  if (K == 0) {
    for (int64_t i = 0; i < n; i++) ts_store_f(oe, out->data, i, 0.0);
    return TS_OK;
  }
  cclass_t c = class_of(oe);
  if (c != CK_INT) return dot_gemm(ctx, instr, c, l, r, lb, rb, lc, rc, out);

  /* Integers wrap at 64 bits: a plain loop over operands packed as
   * [batch, M, K] x [batch, K, N]. */
  dot_side_t ls, rs;
  dot_side(l, lb, lc, true, &ls);
  dot_side(r, rb, rc, false, &rs);
  int64_t B = 1, M = ls.free_count, N = rs.free_count;
  for (int k = 0; k < lb->n; k++) B *= l->dims[lb->v[k]];
  size_t abytes = align64((size_t)(B * M * K) * 8), bbytes = align64((size_t)(B * K * N) * 8);
  char *buf = ts_kernel_scratch(ctx, abytes + bbytes + align64((size_t)n * 8) + 64);
  if (!buf) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory for dot scratch");
  const int64_t *a = (const int64_t *)buf, *b = (const int64_t *)(buf + abytes);
  uint64_t *cc = (uint64_t *)(buf + abytes + bbytes);
  pack(c, oe, l, ls.perm, buf);
  pack(c, oe, r, rs.perm, buf + abytes);
  for (int64_t bi = 0; bi < B; bi++) {
    const int64_t *ab = a + bi * M * K, *bb = b + bi * K * N;
    uint64_t *cb = cc + bi * M * N;
    for (int64_t i = 0; i < M; i++) {
      uint64_t *row = cb + i * N;
      for (int64_t j = 0; j < N; j++) row[j] = 0;
      for (int64_t k = 0; k < K; k++) {
        uint64_t av = (uint64_t)ab[i * K + k];
        const int64_t *brow = bb + k * N;
        for (int64_t j = 0; j < N; j++) row[j] += av * (uint64_t)brow[j];
      }
    }
  }
  store_from(c, cc, out, n);
  return TS_OK;
}

/* ---- convolution -------------------------------------------------------- */

/* The geometry of one convolution: per spatial dim s and output position o,
 * the taps (lhs offset, rhs offset) that land on operand elements (padding
 * and lhs-dilation holes left out, kernel index reversed when the window
 * says so), and the strides of the batch and feature dims. */
typedef struct {
  int nsp;
  int64_t osize[TS_MAX_RANK], wsize[TS_MAX_RANK];
  int64_t *cnt[TS_MAX_RANK], *loff[TS_MAX_RANK], *roff[TS_MAX_RANK];
  int64_t l_batch, l_feat, r_in, r_out;
  int64_t k_in, out_per_fgroup, out_per_bgroup, batch_per_bgroup;
} conv_t;

static size_t conv_words(const ts_conv_dnums_t *dn, const ts_window_t *w, const ts_array_t *out) {
  size_t n = 1;
  for (int s = 0; s < dn->nspatial; s++)
    n += (size_t)out->dims[dn->out_spatial[s]] * (size_t)(2 * w->dims[s].size + 1);
  return n;
}

static void conv_build(conv_t *g, const ts_conv_dnums_t *dn, const ts_window_t *w, const ts_array_t *l,
                       const ts_array_t *r, const ts_array_t *out, int64_t fgc, int64_t bgc, int64_t *buf) {
  int64_t ls[TS_MAX_RANK], rs[TS_MAX_RANK];
  ts_strides(l->rank, l->dims, ls);
  ts_strides(r->rank, r->dims, rs);
  g->nsp = dn->nspatial;
  for (int s = 0; s < dn->nspatial; s++) {
    const ts_window_dim_t *wd = &w->dims[s];
    int64_t O = out->dims[dn->out_spatial[s]], W = wd->size, in = l->dims[dn->in_spatial[s]];
    g->osize[s] = O;
    g->wsize[s] = W;
    g->cnt[s] = buf;
    g->loff[s] = buf + O;
    g->roff[s] = buf + O + O * W;
    buf += O * (2 * W + 1);
    for (int64_t o = 0; o < O; o++) {
      int64_t c = 0;
      for (int64_t k = 0; k < W; k++) {
        int64_t p = o * wd->stride + k * wd->rhs_dilate - wd->pad_lo;
        if (p < 0 || p % wd->lhs_dilate) continue;
        p /= wd->lhs_dilate;
        if (p >= in) continue;
        g->loff[s][o * W + c] = p * ls[dn->in_spatial[s]];
        g->roff[s][o * W + c] = (wd->reversal ? W - 1 - k : k) * rs[dn->k_spatial[s]];
        c++;
      }
      g->cnt[s][o] = c;
    }
  }
  g->l_batch = ls[dn->in_batch];
  g->l_feat = ls[dn->in_feature];
  g->r_in = rs[dn->k_in_feature];
  g->r_out = rs[dn->k_out_feature];
  g->k_in = r->dims[dn->k_in_feature];
  int64_t kout = r->dims[dn->k_out_feature];
  g->out_per_fgroup = kout / fgc;
  g->out_per_bgroup = kout / bgc;
  g->batch_per_bgroup = l->dims[dn->in_batch] / bgc;
}

/* For output element (ob, of): the lhs and rhs base offsets. Feature groups
 * split the lhs features and the kernel's output features into fgc chunks;
 * batch groups split the lhs batch and the kernel's output features into bgc
 * chunks (StableHLO's split/convolve/concatenate definition). */
static void conv_bases(const conv_t *g, int64_t ob, int64_t of, int64_t *lbase, int64_t *rbase) {
  int64_t fgroup = of / g->out_per_fgroup, bgroup = of / g->out_per_bgroup;
  *lbase = (bgroup * g->batch_per_bgroup + ob) * g->l_batch + fgroup * g->k_in * g->l_feat;
  *rbase = of * g->r_out;
}

/* Walks the taps of one output position: on return true, *lo and *ro are the
 * next tap's spatial offsets. j[] holds the odometer (start with j[0] = -1). */
static bool conv_next_tap(const conv_t *g, const int64_t *os, int64_t *j, int64_t *lo, int64_t *ro) {
  if (g->nsp == 0) {
    if (j[0] >= 0) return false;
    j[0] = 0;
    *lo = *ro = 0;
    return true;
  }
  if (j[0] < 0) {
    for (int s = 0; s < g->nsp; s++) {
      if (g->cnt[s][os[s]] == 0) return false;
      j[s] = 0;
    }
  } else {
    int s = g->nsp - 1;
    for (; s >= 0; s--) {
      if (++j[s] < g->cnt[s][os[s]]) break;
      j[s] = 0;
    }
    if (s < 0) return false;
  }
  *lo = *ro = 0;
  for (int s = 0; s < g->nsp; s++) {
    *lo += g->loff[s][os[s] * g->wsize[s] + j[s]];
    *ro += g->roff[s][os[s] * g->wsize[s] + j[s]];
  }
  return true;
}

/* One output element of a real class: acc += sum over taps and input
 * features of lhs * rhs, in type T (unsigned for the integer class, so it
 * wraps). */
#define CONV_REAL(NAME, T, ACC)                                                                          \
  static ACC NAME(const conv_t *g, const T *L, const T *R, int64_t lbase, int64_t rbase, const int64_t *os) { \
    ACC acc = 0;                                                                                         \
    int64_t j[TS_MAX_RANK], lo, ro;                                                                      \
    j[0] = -1;                                                                                           \
    while (conv_next_tap(g, os, j, &lo, &ro)) {                                                          \
      const T *lp = L + lbase + lo, *rp = R + rbase + ro;                                                \
      for (int64_t i = 0; i < g->k_in; i++) acc += (ACC)lp[i * g->l_feat] * (ACC)rp[i * g->r_in];        \
    }                                                                                                    \
    return acc;                                                                                          \
  }
CONV_REAL(conv_f32, float, float)
CONV_REAL(conv_f64, double, double)
CONV_REAL(conv_int, int64_t, uint64_t)

#define CONV_COMPLEX(NAME, T)                                                                            \
  static void NAME(const conv_t *g, const T *L, const T *R, int64_t lbase, int64_t rbase, const int64_t *os, \
                   T *res) {                                                                             \
    T re = 0, im = 0;                                                                                    \
    int64_t j[TS_MAX_RANK], lo, ro;                                                                      \
    j[0] = -1;                                                                                           \
    while (conv_next_tap(g, os, j, &lo, &ro)) {                                                          \
      for (int64_t i = 0; i < g->k_in; i++) {                                                            \
        const T *a = L + 2 * (lbase + lo + i * g->l_feat), *b = R + 2 * (rbase + ro + i * g->r_in);      \
        re += a[0] * b[0] - a[1] * b[1];                                                                 \
        im += a[0] * b[1] + a[1] * b[0];                                                                 \
      }                                                                                                  \
    }                                                                                                    \
    res[0] = re;                                                                                         \
    res[1] = im;                                                                                         \
  }
CONV_COMPLEX(conv_c64, float)
CONV_COMPLEX(conv_c128, double)

/* f32 and f64 convolutions run as gemm over im2col patches: per group, the
 * patch matrix P [rows = (batch, output position), cols = (kernel position,
 * input feature)] times the kernel matrix W [cols, output features of the
 * group], a chunk of rows at a time so that P stays small. */
typedef struct {
  int nsp;
  int64_t osize[TS_MAX_RANK], wsize[TS_MAX_RANK], ostride[TS_MAX_RANK], kstride[TS_MAX_RANK];
  bool rev[TS_MAX_RANK];
  int64_t *tap[TS_MAX_RANK]; /* [o * W + k]: lhs offset, -1 for padding and holes */
  int64_t wprod, osprod, k_in, og, groups, obatch, cols, rows, chunk;
  int64_t l_batch, l_feat, r_in, r_out, o_batch, o_feat, lbatch_per_group;
  bool fgroups;
  double density; /* share of taps on lhs elements */
} im2col_t;

#define IM2COL_CHUNK_ELEMS (INT64_C(1) << 22)

/* Fills everything but the tap tables; returns the int64s they need. */
static size_t im2col_plan(im2col_t *m, const ts_conv_dnums_t *dn, const ts_window_t *w, const ts_array_t *l,
                          const ts_array_t *r, const ts_array_t *out, int64_t fgc, int64_t bgc) {
  int64_t ls[TS_MAX_RANK], rs[TS_MAX_RANK], os[TS_MAX_RANK];
  ts_strides(l->rank, l->dims, ls);
  ts_strides(r->rank, r->dims, rs);
  ts_strides(out->rank, out->dims, os);
  size_t words = 1;
  m->nsp = dn->nspatial;
  m->wprod = m->osprod = 1;
  m->density = 1.0;
  for (int s = 0; s < m->nsp; s++) {
    m->osize[s] = out->dims[dn->out_spatial[s]];
    m->wsize[s] = w->dims[s].size;
    m->ostride[s] = os[dn->out_spatial[s]];
    m->kstride[s] = rs[dn->k_spatial[s]];
    m->rev[s] = w->dims[s].reversal;
    m->wprod *= m->wsize[s];
    m->osprod *= m->osize[s];
    words += (size_t)(m->osize[s] * m->wsize[s]);
    /* the share of taps that land on lhs elements (the rest are padding or
     * lhs-dilation holes, which im2col multiplies as zeros) */
    const ts_window_dim_t *wd = &w->dims[s];
    int64_t valid = 0, in = l->dims[dn->in_spatial[s]];
    for (int64_t o = 0; o < m->osize[s]; o++)
      for (int64_t k = 0; k < wd->size; k++) {
        int64_t p = o * wd->stride + k * wd->rhs_dilate - wd->pad_lo;
        valid += p >= 0 && p % wd->lhs_dilate == 0 && p / wd->lhs_dilate < in;
      }
    if (m->osize[s] > 0) m->density *= (double)valid / (double)(m->osize[s] * m->wsize[s]);
  }
  m->k_in = r->dims[dn->k_in_feature];
  m->groups = fgc > 1 ? fgc : bgc;
  m->fgroups = fgc > 1;
  m->og = r->dims[dn->k_out_feature] / m->groups;
  m->obatch = out->dims[dn->out_batch];
  m->lbatch_per_group = l->dims[dn->in_batch] / bgc;
  m->cols = m->wprod * m->k_in;
  m->rows = m->obatch * m->osprod;
  m->chunk = m->cols ? IM2COL_CHUNK_ELEMS / m->cols : m->rows;
  if (m->chunk < 1) m->chunk = 1;
  if (m->chunk > m->rows) m->chunk = m->rows;
  m->l_batch = ls[dn->in_batch];
  m->l_feat = ls[dn->in_feature];
  m->r_in = rs[dn->k_in_feature];
  m->r_out = rs[dn->k_out_feature];
  m->o_batch = os[dn->out_batch];
  m->o_feat = os[dn->out_feature];
  return words;
}

static void im2col_taps(im2col_t *m, const ts_conv_dnums_t *dn, const ts_window_t *w, const ts_array_t *l,
                        int64_t *buf) {
  int64_t ls[TS_MAX_RANK];
  ts_strides(l->rank, l->dims, ls);
  for (int s = 0; s < m->nsp; s++) {
    const ts_window_dim_t *wd = &w->dims[s];
    int64_t in = l->dims[dn->in_spatial[s]];
    m->tap[s] = buf;
    buf += m->osize[s] * m->wsize[s];
    for (int64_t o = 0; o < m->osize[s]; o++)
      for (int64_t k = 0; k < wd->size; k++) {
        int64_t p = o * wd->stride + k * wd->rhs_dilate - wd->pad_lo;
        bool ok = p >= 0 && p % wd->lhs_dilate == 0 && p / wd->lhs_dilate < in;
        m->tap[s][o * wd->size + k] = ok ? p / wd->lhs_dilate * ls[dn->in_spatial[s]] : -1;
      }
  }
}

/* Output position `sp` (row-major over the output spatial dims) as indices. */
static void im2col_pos(const im2col_t *m, int64_t sp, int64_t *os) {
  for (int s = m->nsp - 1; s >= 0; s--) {
    os[s] = sp % m->osize[s];
    sp /= m->osize[s];
  }
}

#define CONV_GEMM(NAME, T, GEMM)                                                                             \
  static void NAME(const im2col_t *m, const T *L, const T *R, T *O, T *Wm, T *P, T *Y) {                     \
    int64_t C = m->cols, og = m->og, k_in = m->k_in;                                                         \
    for (int64_t g = 0; g < m->groups; g++) {                                                                \
      int64_t k[TS_MAX_RANK] = {0};                                                                          \
      for (int64_t kf = 0; kf < m->wprod; kf++, ts_index_next(m->nsp, m->wsize, k)) {                        \
        int64_t roff = g * og * m->r_out;                                                                    \
        for (int s = 0; s < m->nsp; s++) roff += (m->rev[s] ? m->wsize[s] - 1 - k[s] : k[s]) * m->kstride[s]; \
        for (int64_t i = 0; i < k_in; i++)                                                                   \
          for (int64_t j = 0; j < og; j++) Wm[(kf * k_in + i) * og + j] = R[roff + i * m->r_in + j * m->r_out]; \
      }                                                                                                      \
      for (int64_t r0 = 0; r0 < m->rows; r0 += m->chunk) {                                                   \
        int64_t nr = m->rows - r0 < m->chunk ? m->rows - r0 : m->chunk;                                      \
        for (int64_t q = 0; q < nr; q++) {                                                                   \
          int64_t ob = (r0 + q) / m->osprod, os[TS_MAX_RANK], kk[TS_MAX_RANK] = {0};                         \
          im2col_pos(m, (r0 + q) % m->osprod, os);                                                           \
          int64_t lb = m->fgroups ? ob : g * m->lbatch_per_group + ob;                                       \
          int64_t base = lb * m->l_batch + (m->fgroups ? g * k_in : 0) * m->l_feat;                          \
          for (int64_t kf = 0; kf < m->wprod; kf++, ts_index_next(m->nsp, m->wsize, kk)) {                   \
            T *dst = P + q * C + kf * k_in;                                                                  \
            int64_t off = base;                                                                              \
            for (int s = 0; s < m->nsp && off >= 0; s++) {                                                   \
              int64_t t = m->tap[s][os[s] * m->wsize[s] + kk[s]];                                            \
              off = t < 0 ? -1 : off + t;                                                                    \
            }                                                                                                \
            if (off < 0)                                                                                     \
              for (int64_t i = 0; i < k_in; i++) dst[i] = 0;                                                 \
            else                                                                                             \
              for (int64_t i = 0; i < k_in; i++) dst[i] = L[off + i * m->l_feat];                            \
          }                                                                                                  \
        }                                                                                                    \
        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)nr, (blasint)og, (blasint)C, 1, P,          \
             (blasint)C, Wm, (blasint)og, 0, Y, (blasint)og);                                                \
        for (int64_t q = 0; q < nr; q++) {                                                                   \
          int64_t ob = (r0 + q) / m->osprod, os[TS_MAX_RANK];                                                \
          im2col_pos(m, (r0 + q) % m->osprod, os);                                                           \
          int64_t obase = ob * m->o_batch + g * og * m->o_feat;                                              \
          for (int s = 0; s < m->nsp; s++) obase += os[s] * m->ostride[s];                                   \
          for (int64_t j = 0; j < og; j++) O[obase + j * m->o_feat] = Y[q * og + j];                         \
        }                                                                                                    \
      }                                                                                                      \
    }                                                                                                        \
  }
CONV_GEMM(conv_gemm_f32, float, cblas_sgemm)
CONV_GEMM(conv_gemm_f64, double, cblas_dgemm)

static int64_t int_attr(const ts_hlo_instr_t *instr, const char *name, int64_t dflt) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, name);
  return a && a->kind == TS_ATTR_INT ? a->v.i : dflt;
}

static ts_status_t k_convolution(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                                 ts_array_t *out, int nout) {
  const ts_hlo_attr_t *da = ts_hlo_instr_attr(instr, "dim_labels");
  const ts_hlo_attr_t *wa = ts_hlo_instr_attr(instr, "window");
  if (nin != 2 || !da || da->kind != TS_ATTR_CONV_DNUMS)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "needs two operands and dim_labels=");
  const ts_conv_dnums_t *dn = da->v.conv;
  static const ts_window_t no_window = {0, NULL};
  const ts_window_t *w = wa && wa->kind == TS_ATTR_WINDOW ? wa->v.window : &no_window;
  if (w->n != dn->nspatial)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "window= does not match dim_labels");
  const ts_array_t *l = &in[0], *r = &in[1];
  int64_t fgc = int_attr(instr, "feature_group_count", 1), bgc = int_attr(instr, "batch_group_count", 1);
  int64_t n = ts_array_count(out);
  if (n == 0) return TS_OK;
  cclass_t c = class_of(out->elem);
  ts_elem_t native = class_native(c);
  size_t eb = class_bytes(c);
  bool la = l->elem == native, ra = r->elem == native, oa = out->elem == native;
  im2col_t m;
  size_t mwords = im2col_plan(&m, dn, w, l, r, out, fgc, bgc);
  /* im2col pays ~2 units per patch element and gemm's multiply-adds ~30x
   * cheaper than the direct loop's, which skips padding and holes: */
  bool gemm = (c == CK_F32 || c == CK_F64) && m.cols > 0 && m.cols <= INT_MAX && m.og <= INT_MAX &&
              m.density * (double)m.og > (double)m.og / 30.0 + 2.0;
  /* scratch: tap tables, converted operands and result, then the gemm's
   * kernel matrix, patch chunk and result chunk */
  size_t gbytes = align64((gemm ? mwords : conv_words(dn, w, out)) * sizeof(int64_t));
  size_t lbytes = la ? 0 : align64((size_t)ts_array_count(l) * eb), rbytes = ra ? 0 : align64((size_t)ts_array_count(r) * eb);
  size_t obytes = oa ? 0 : align64((size_t)n * eb);
  size_t wbytes = gemm ? align64((size_t)(m.cols * m.og) * eb) : 0, pbytes = gemm ? align64((size_t)(m.chunk * m.cols) * eb) : 0;
  size_t ybytes = gemm ? align64((size_t)(m.chunk * m.og) * eb) : 0;
  char *buf = ts_kernel_scratch(ctx, gbytes + lbytes + rbytes + obytes + wbytes + pbytes + ybytes);
  if (!buf) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory for convolution scratch");
  int id[TS_MAX_RANK];
  for (int d = 0; d < TS_MAX_RANK; d++) id[d] = d;
  const void *L = l->data, *R = r->data;
  if (!la) pack(c, out->elem, l, id, buf + gbytes), L = buf + gbytes;
  if (!ra) pack(c, out->elem, r, id, buf + gbytes + lbytes), R = buf + gbytes + lbytes;
  void *O = oa ? out->data : buf + gbytes + lbytes + rbytes;
  if (gemm) {
    char *wm = buf + gbytes + lbytes + rbytes + obytes;
    im2col_taps(&m, dn, w, l, (int64_t *)buf);
    if (c == CK_F32)
      conv_gemm_f32(&m, L, R, O, (float *)wm, (float *)(wm + wbytes), (float *)(wm + wbytes + pbytes));
    else
      conv_gemm_f64(&m, L, R, O, (double *)wm, (double *)(wm + wbytes), (double *)(wm + wbytes + pbytes));
    if (!oa) store_from(c, O, out, n);
    return TS_OK;
  }
  conv_t g;
  conv_build(&g, dn, w, l, r, out, fgc, bgc, (int64_t *)buf);

  int64_t idx[TS_MAX_RANK] = {0}, os[TS_MAX_RANK];
  for (int64_t o = 0; o < n; o++) {
    for (int s = 0; s < dn->nspatial; s++) os[s] = idx[dn->out_spatial[s]];
    int64_t lbase, rbase;
    conv_bases(&g, idx[dn->out_batch], idx[dn->out_feature], &lbase, &rbase);
    switch (c) {
    case CK_F32: ((float *)O)[o] = conv_f32(&g, L, R, lbase, rbase, os); break;
    case CK_F64: ((double *)O)[o] = conv_f64(&g, L, R, lbase, rbase, os); break;
    case CK_INT: ((int64_t *)O)[o] = (int64_t)conv_int(&g, L, R, lbase, rbase, os); break;
    case CK_C64: conv_c64(&g, L, R, lbase, rbase, os, (float *)O + 2 * o); break;
    case CK_C128: conv_c128(&g, L, R, lbase, rbase, os, (double *)O + 2 * o); break;
    }
    ts_index_next(out->rank, out->dims, idx);
  }
  if (!oa) store_from(c, O, out, n);
  return TS_OK;
}

void ts_kernels_dot(ts_kernel_fn *table) {
  table[TS_OP_DOT] = k_dot;
  table[TS_OP_CONVOLUTION] = k_convolution;
}

void ts_kernels_set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }
