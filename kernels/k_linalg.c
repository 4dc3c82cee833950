/* Kernels: cholesky, triangular-solve, fft and the three batch-norm ops.
 *
 * All compute in double (complex double for fft) and round once to the
 * result type, so any real float type works; complex matrices for cholesky
 * and triangular-solve are not implemented. The fft is a radix-2 FFT for
 * power-of-two lengths and a plain DFT otherwise, one axis at a time. */
#include "kernels_internal.h"

#include <math.h>

#define PI 3.14159265358979323846

static bool bool_attr(const ts_hlo_instr_t *instr, const char *name, bool dflt) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, name);
  return a && a->kind == TS_ATTR_BOOL ? a->v.b : dflt;
}

static ts_status_t want_real(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, ts_elem_t e) {
  if (ts_elem_is_float(e)) return TS_OK;
  return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "%s is not supported (real float types only)",
                        ts_elem_name(e));
}

/* ---- cholesky ----------------------------------------------------------- */

/* a = l l^T (lower) or u^T u (upper), reading only that triangle of a; the
 * other triangle of the result is zero. A matrix that is not positive
 * definite gives NaN from the first failing pivot on. */
static ts_status_t k_cholesky(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                              ts_array_t *out, int nout) {
  const ts_array_t *a = &in[0];
  TS_CHECK(want_real(ctx, instr, a->elem));
  bool lower = bool_attr(instr, "lower", false);
  int64_t n = a->dims[a->rank - 1], nn = n * n, count = ts_array_count(a);
  if (count == 0) return TS_OK;
  double *L = ts_kernel_scratch(ctx, (size_t)nn * sizeof(double));
  if (!L) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory for a %lldx%lld matrix", (long long)n, (long long)n);
  for (int64_t base = 0; base < count; base += nn) {
    /* L's lower triangle is the lower triangle of a, or the transposed upper */
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j <= i; j++) L[i * n + j] = ts_load_f(a->elem, a->data, base + (lower ? i * n + j : j * n + i));
    for (int64_t j = 0; j < n; j++) {
      double d = L[j * n + j];
      for (int64_t k = 0; k < j; k++) d -= L[j * n + k] * L[j * n + k];
      d = sqrt(d); /* NaN when not positive definite */
      L[j * n + j] = d;
      for (int64_t i = j + 1; i < n; i++) {
        double s = L[i * n + j];
        for (int64_t k = 0; k < j; k++) s -= L[i * n + k] * L[j * n + k];
        L[i * n + j] = s / d;
      }
    }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        double v = lower ? (j <= i ? L[i * n + j] : 0) : (i <= j ? L[j * n + i] : 0);
        ts_store_f(out->elem, out->data, base + i * n + j, v);
      }
  }
  return TS_OK;
}

/* ---- triangular-solve --------------------------------------------------- */

/* op(a) x = b (left_side) or x op(a) = b, a triangular (only the `lower` or
 * upper triangle read; unit_diagonal: the diagonal taken as 1 and not read);
 * transpose_a is NO_TRANSPOSE, TRANSPOSE or ADJOINT (= TRANSPOSE for reals). */
static ts_status_t k_triangular_solve(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                                      int nin, ts_array_t *out, int nout) {
  const ts_array_t *a = &in[0], *b = &in[1];
  TS_CHECK(want_real(ctx, instr, a->elem));
  TS_CHECK(want_real(ctx, instr, b->elem));
  bool left = bool_attr(instr, "left_side", false), lower = bool_attr(instr, "lower", false);
  bool unit = bool_attr(instr, "unit_diagonal", false), trans = false;
  const ts_hlo_attr_t *ta = ts_hlo_instr_attr(instr, "transpose_a");
  if (ta && (ta->kind == TS_ATTR_IDENT || ta->kind == TS_ATTR_STRING)) {
    if (strcmp(ta->v.s, "TRANSPOSE") == 0 || strcmp(ta->v.s, "ADJOINT") == 0)
      trans = true;
    else if (strcmp(ta->v.s, "NO_TRANSPOSE") != 0)
      return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "transpose_a=%s is not supported", ta->v.s);
  }
  int64_t m = a->dims[a->rank - 1];
  int64_t r0 = b->dims[b->rank - 2], r1 = b->dims[b->rank - 1];
  if ((left ? r0 : r1) != m)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "b's %s dimension is not a's size %lld",
                          left ? "row" : "column", (long long)m);
  int64_t ncols = left ? r1 : r0; /* right-hand sides */
  int64_t bsize = r0 * r1, batches = m > 0 ? ts_array_count(a) / (m * m) : 0;
  if (bsize == 0 || batches == 0) return TS_OK;
  double *T = ts_kernel_scratch(ctx, (size_t)(m * m + bsize) * sizeof(double));
  if (!T) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory for triangular-solve scratch");
  double *X = T + m * m;
  /* x op(a) = b  <=>  op(a)^T x^T = b^T: solve with T = op(a)^T on the
   * columns of x^T. T is lower when `lower` is flipped an even number of times. */
  bool tt = trans != !left;
  bool tlower = lower != tt;
  int64_t rs = left ? r1 : 1, cs = left ? 1 : r1; /* rhs element (i, col) at i*rs + col*cs */
  for (int64_t bi = 0; bi < batches; bi++) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < m; j++) {
        int64_t si = tt ? j : i, sj = tt ? i : j; /* element of a */
        bool in_tri = lower ? si >= sj : si <= sj;
        double v = !in_tri ? 0 : si == sj && unit ? 1 : ts_load_f(a->elem, a->data, bi * m * m + si * m + sj);
        T[i * m + j] = v;
      }
    for (int64_t k = 0; k < bsize; k++) X[k] = ts_load_f(b->elem, b->data, bi * bsize + k);
    for (int64_t col = 0; col < ncols; col++) {
      for (int64_t s = 0; s < m; s++) {
        int64_t i = tlower ? s : m - 1 - s;
        double v = X[i * rs + col * cs];
        if (tlower)
          for (int64_t j = 0; j < i; j++) v -= T[i * m + j] * X[j * rs + col * cs];
        else
          for (int64_t j = i + 1; j < m; j++) v -= T[i * m + j] * X[j * rs + col * cs];
        X[i * rs + col * cs] = v / T[i * m + i];
      }
    }
    for (int64_t k = 0; k < bsize; k++) ts_store_f(out->elem, out->data, bi * bsize + k, X[k]);
  }
  return TS_OK;
}

/* ---- fft ---------------------------------------------------------------- */

/* In place over n complex values (re, im pairs); w[k] = exp(-2 pi i k / n),
 * conjugated when inverse; tmp holds n values (the DFT's output). */
static void dft(double *x, int64_t n, const double *w, bool inverse, double *tmp) {
  double sgn = inverse ? -1 : 1;
  if ((n & (n - 1)) == 0) {
    for (int64_t i = 1, j = 0; i < n; i++) { /* bit reversal */
      int64_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) {
        double t0 = x[2 * i], t1 = x[2 * i + 1];
        x[2 * i] = x[2 * j], x[2 * i + 1] = x[2 * j + 1];
        x[2 * j] = t0, x[2 * j + 1] = t1;
      }
    }
    for (int64_t len = 2; len <= n; len <<= 1) {
      int64_t step = n / len;
      for (int64_t s = 0; s < n; s += len)
        for (int64_t k = 0; k < len / 2; k++) {
          double wr = w[2 * k * step], wi = sgn * w[2 * k * step + 1];
          double *u = x + 2 * (s + k), *v = x + 2 * (s + k + len / 2);
          double vr = v[0] * wr - v[1] * wi, vi = v[0] * wi + v[1] * wr;
          v[0] = u[0] - vr, v[1] = u[1] - vi;
          u[0] += vr, u[1] += vi;
        }
    }
  } else {
    for (int64_t j = 0; j < n; j++) {
      double re = 0, im = 0;
      for (int64_t t = 0; t < n; t++) {
        int64_t k = (j * t) % n;
        double wr = w[2 * k], wi = sgn * w[2 * k + 1];
        re += x[2 * t] * wr - x[2 * t + 1] * wi;
        im += x[2 * t] * wi + x[2 * t + 1] * wr;
      }
      tmp[2 * j] = re, tmp[2 * j + 1] = im;
    }
    memcpy(x, tmp, (size_t)n * 2 * sizeof(double));
  }
  if (inverse)
    for (int64_t k = 0; k < 2 * n; k++) x[k] /= (double)n;
}

static void twiddles(double *w, int64_t n) {
  for (int64_t k = 0; k < n; k++) {
    double a = -2.0 * PI * (double)k / (double)n;
    w[2 * k] = cos(a), w[2 * k + 1] = sin(a);
  }
}

/* Transforms every line of data (complex, dims[0..rank)) along dimension d. */
static void fft_axis(double *data, int rank, const int64_t *dims, int d, bool inverse, double *line, double *w,
                     double *tmp) {
  int64_t n = dims[d], inner = 1, outer = 1;
  for (int k = d + 1; k < rank; k++) inner *= dims[k];
  for (int k = 0; k < d; k++) outer *= dims[k];
  if (n <= 1 && !inverse) return;
  twiddles(w, n);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double *p = data + 2 * (o * n * inner + i);
      for (int64_t k = 0; k < n; k++) line[2 * k] = p[2 * k * inner], line[2 * k + 1] = p[2 * k * inner + 1];
      dft(line, n, w, inverse, tmp);
      for (int64_t k = 0; k < n; k++) p[2 * k * inner] = line[2 * k], p[2 * k * inner + 1] = line[2 * k + 1];
    }
}

static ts_status_t k_fft(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                         ts_array_t *out, int nout) {
  const ts_array_t *x = &in[0];
  const ts_hlo_attr_t *ta = ts_hlo_instr_attr(instr, "fft_type");
  const ts_hlo_attr_t *la = ts_hlo_instr_attr(instr, "fft_length");
  if (!ta || ta->kind != TS_ATTR_IDENT || !la || la->kind != TS_ATTR_INT_LIST)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "needs fft_type= and fft_length=");
  bool irfft = strcmp(ta->v.s, "IRFFT") == 0;
  bool inverse = irfft || strcmp(ta->v.s, "IFFT") == 0;
  int nl = la->v.list.n, rank = x->rank, last = rank - 1;
  const int64_t *len = la->v.list.v;
  /* the full complex shape the transforms run over */
  int64_t dims[TS_MAX_RANK];
  for (int d = 0; d < rank; d++) dims[d] = x->dims[d];
  dims[last] = irfft ? out->dims[last] : x->dims[last];
  for (int k = 0; k < nl; k++)
    if (dims[rank - nl + k] != len[k])
      return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT,
                            "fft_length[%d] = %lld does not match dimension %d (%lld) of the %s", k,
                            (long long)len[k], rank - nl + k, (long long)dims[rank - nl + k],
                            irfft && k == nl - 1 ? "result" : "operand");
  int64_t total = 1, nmax = 1;
  for (int d = 0; d < rank; d++) total *= dims[d], nmax = dims[d] > nmax ? dims[d] : nmax;
  if (ts_array_count(out) == 0) return TS_OK;
  double *data = ts_kernel_scratch(ctx, (size_t)(2 * total + 6 * nmax) * sizeof(double));
  if (!data) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory for fft scratch");
  double *line = data + 2 * total, *w = line + 2 * nmax, *tmp = w + 2 * nmax;
  int64_t n = dims[last];
  if (!irfft) {
    for (int64_t k = 0; k < total; k++) ts_load_c(x->elem, x->data, k, &data[2 * k], &data[2 * k + 1]);
    for (int k = 0; k < nl; k++) fft_axis(data, rank, dims, rank - nl + k, inverse, line, w, tmp);
    /* RFFT keeps the first n/2 + 1 entries of the last axis */
    int64_t keep = out->dims[last], rows = n ? total / n : 0;
    for (int64_t r = 0; r < rows; r++)
      for (int64_t k = 0; k < keep; k++)
        ts_store_c(out->elem, out->data, r * keep + k, data[2 * (r * n + k)], data[2 * (r * n + k) + 1]);
    return TS_OK;
  }
  /* IRFFT: inverse transforms on the leading axes over the half spectrum,
   * then per line the Hermitian extension and an inverse DFT; the real part. */
  int64_t m = x->dims[last], half = ts_array_count(x);
  double *hd = data; /* [.., m] half spectrum, then lines of n */
  int64_t hdims[TS_MAX_RANK];
  for (int d = 0; d < rank; d++) hdims[d] = x->dims[d];
  if (half > total) { /* rare: more input than the result needs; keep room */
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "IRFFT input last dimension %lld exceeds %lld",
                          (long long)m, (long long)(n / 2 + 1));
  }
  for (int64_t k = 0; k < half; k++) ts_load_c(x->elem, x->data, k, &hd[2 * k], &hd[2 * k + 1]);
  for (int k = 0; k + 1 < nl; k++) fft_axis(hd, rank, hdims, rank - nl + k, true, line, w, tmp);
  twiddles(w, n);
  int64_t rows = m ? half / m : 0;
  for (int64_t r = 0; r < rows; r++) {
    const double *h = hd + 2 * r * m;
    for (int64_t k = 0; k < n; k++) {
      int64_t src = k <= n / 2 ? k : n - k;
      double re = src < m ? h[2 * src] : 0, im = src < m ? h[2 * src + 1] : 0;
      line[2 * k] = re, line[2 * k + 1] = k <= n / 2 ? im : -im;
    }
    dft(line, n, w, true, tmp);
    for (int64_t k = 0; k < n; k++) ts_store_f(out->elem, out->data, r * n + k, line[2 * k]);
  }
  return TS_OK;
}

/* ---- batch norm --------------------------------------------------------- */

/* x viewed as [outer, C, inner] around the feature dimension. */
typedef struct {
  int64_t outer, c, inner, count; /* count: elements per feature */
  double eps;
} bn_t;

static ts_status_t bn_setup(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                            bn_t *b, double **scratch) {
  for (int k = 0; k < nin; k++) TS_CHECK(want_real(ctx, instr, in[k].elem));
  const ts_hlo_attr_t *ea = ts_hlo_instr_attr(instr, "epsilon");
  const ts_hlo_attr_t *fa = ts_hlo_instr_attr(instr, "feature_index");
  if (!ea || !fa || fa->kind != TS_ATTR_INT || (ea->kind != TS_ATTR_FLOAT && ea->kind != TS_ATTR_INT))
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "needs epsilon= and feature_index=");
  /* XLA keeps epsilon as a float attribute */
  b->eps = (double)(float)(ea->kind == TS_ATTR_FLOAT ? ea->v.f : (double)ea->v.i);
  const ts_array_t *x = &in[0];
  int f = (int)fa->v.i;
  b->outer = b->inner = 1;
  for (int d = 0; d < f; d++) b->outer *= x->dims[d];
  for (int d = f + 1; d < x->rank; d++) b->inner *= x->dims[d];
  b->c = x->dims[f];
  b->count = b->outer * b->inner;
  *scratch = ts_kernel_scratch(ctx, (size_t)(4 * b->c + 1) * sizeof(double));
  if (!*scratch) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory for batch-norm scratch");
  return TS_OK;
}

#define BN_FOR(b, ch, i)                                  \
  for (int64_t o_ = 0; o_ < (b).outer; o_++)              \
    for (int64_t ch = 0; ch < (b).c; ch++)                \
      for (int64_t i = (o_ * (b).c + ch) * (b).inner, e_ = i + (b).inner; i < e_; i++)

static double ld(const ts_array_t *a, int64_t i) { return ts_load_f(a->elem, a->data, i); }

/* y = scale (x - mean) / sqrt(var + eps) + offset */
static void bn_normalize(const bn_t *b, const ts_array_t *x, const ts_array_t *scale, const ts_array_t *offset,
                         const double *mean, const double *var, ts_array_t *y) {
  BN_FOR(*b, ch, i) {
    double v = (ld(x, i) - mean[ch]) / sqrt(var[ch] + b->eps) * ld(scale, ch) + ld(offset, ch);
    ts_store_f(y->elem, y->data, i, v);
  }
}

static ts_status_t k_batch_norm_inference(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                                          int nin, ts_array_t *out, int nout) {
  bn_t b;
  double *s;
  TS_CHECK(bn_setup(ctx, instr, in, nin, &b, &s));
  double *mean = s, *var = s + b.c;
  for (int64_t ch = 0; ch < b.c; ch++) mean[ch] = ld(&in[3], ch), var[ch] = ld(&in[4], ch);
  bn_normalize(&b, &in[0], &in[1], &in[2], mean, var, &out[0]);
  return TS_OK;
}

/* (y, batch mean, batch variance (biased)) */
static ts_status_t k_batch_norm_training(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                                         int nin, ts_array_t *out, int nout) {
  bn_t b;
  double *s;
  TS_CHECK(bn_setup(ctx, instr, in, nin, &b, &s));
  double *mean = s, *var = s + b.c;
  for (int64_t ch = 0; ch < b.c; ch++) mean[ch] = var[ch] = 0;
  BN_FOR(b, ch, i) mean[ch] += ld(&in[0], i);
  for (int64_t ch = 0; ch < b.c; ch++) mean[ch] /= (double)b.count;
  BN_FOR(b, ch, i) {
    double d = ld(&in[0], i) - mean[ch];
    var[ch] += d * d;
  }
  for (int64_t ch = 0; ch < b.c; ch++) var[ch] /= (double)b.count;
  bn_normalize(&b, &in[0], &in[1], &in[2], mean, var, &out[0]);
  for (int64_t ch = 0; ch < b.c; ch++) {
    ts_store_f(out[1].elem, out[1].data, ch, mean[ch]);
    ts_store_f(out[2].elem, out[2].data, ch, var[ch]);
  }
  return TS_OK;
}

/* (grad x, grad scale, grad offset) from (x, scale, mean, var, grad y):
 *   grad_offset = sum dy, grad_scale = sum dy (x - mean) rstd,
 *   grad_x = scale rstd (dy - grad_offset / N - (x - mean) rstd^2 sum(dy (x - mean)) / N) */
static ts_status_t k_batch_norm_grad(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                                     int nin, ts_array_t *out, int nout) {
  bn_t b;
  double *s;
  TS_CHECK(bn_setup(ctx, instr, in, nin, &b, &s));
  const ts_array_t *x = &in[0], *scale = &in[1], *dy = &in[4];
  double *mean = s, *rstd = s + b.c, *sdy = s + 2 * b.c, *sdyx = s + 3 * b.c;
  for (int64_t ch = 0; ch < b.c; ch++) {
    mean[ch] = ld(&in[2], ch);
    rstd[ch] = 1.0 / sqrt(ld(&in[3], ch) + b.eps);
    sdy[ch] = sdyx[ch] = 0;
  }
  BN_FOR(b, ch, i) {
    double g = ld(dy, i);
    sdy[ch] += g;
    sdyx[ch] += g * (ld(x, i) - mean[ch]);
  }
  double N = (double)b.count;
  BN_FOR(b, ch, i) {
    double xc = ld(x, i) - mean[ch], r = rstd[ch];
    double v = ld(scale, ch) * r * (ld(dy, i) - sdy[ch] / N - xc * r * r * sdyx[ch] / N);
    ts_store_f(out[0].elem, out[0].data, i, v);
  }
  for (int64_t ch = 0; ch < b.c; ch++) {
    ts_store_f(out[1].elem, out[1].data, ch, sdyx[ch] * rstd[ch]);
    ts_store_f(out[2].elem, out[2].data, ch, sdy[ch]);
  }
  return TS_OK;
}

void ts_kernels_linalg(ts_kernel_fn *table) {
  table[TS_OP_CHOLESKY] = k_cholesky;
  table[TS_OP_TRIANGULAR_SOLVE] = k_triangular_solve;
  table[TS_OP_FFT] = k_fft;
  table[TS_OP_BATCH_NORM_INFERENCE] = k_batch_norm_inference;
  table[TS_OP_BATCH_NORM_TRAINING] = k_batch_norm_training;
  table[TS_OP_BATCH_NORM_GRAD] = k_batch_norm_grad;
}
