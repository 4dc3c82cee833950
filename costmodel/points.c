/* An N-d set of (point, value) with the two lookups the interpolators offer:
 * an inverse-distance weighted average (XLA's documented "weighted average
 * retrieval", EuclideanWeightedAverageInterpolator) and XLA's code's
 * per-dimension nearest snap (EuclideanComplementInterpolator), reference §2.1. */
#include "costmodel_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ts_points_init(ts_points_t *p, int dims) {
  memset(p, 0, sizeof *p);
  p->dims = dims;
}

void ts_points_free(ts_points_t *p) {
  ts_free(p->coords);
  ts_free(p->values);
  for (int d = 0; d < TS_POINTS_MAX_DIMS; d++) ts_free(p->axis[d]);
  ts_points_init(p, p->dims);
}

ts_status_t ts_points_add(ts_points_t *p, const int64_t *x, double value) {
  for (int d = 0; d < p->dims; d++)
    if (x[d] <= 0) return TS_ERR_INVALID_ARGUMENT;
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 16;
    int64_t *c = ts_realloc(p->coords, cap * (size_t)p->dims * sizeof *c);
    if (!c) return TS_ERR_NOMEM;
    p->coords = c;
    double *v = ts_realloc(p->values, cap * sizeof *v);
    if (!v) return TS_ERR_NOMEM;
    p->values = v;
    p->cap = cap;
  }
  memcpy(p->coords + p->n * (size_t)p->dims, x, (size_t)p->dims * sizeof *x);
  p->values[p->n] = value;
  p->n++;
  return TS_OK;
}

static int cmp_coords(const int64_t *a, const int64_t *b, int dims) {
  for (int d = 0; d < dims; d++)
    if (a[d] != b[d]) return a[d] < b[d] ? -1 : 1;
  return 0;
}

typedef struct {
  int64_t c[TS_POINTS_MAX_DIMS]; /* unused dims are 0 */
  size_t i;
} rec_t;

static int cmp_rec(const void *a, const void *b) {
  const rec_t *x = a, *y = b;
  int c = cmp_coords(x->c, y->c, TS_POINTS_MAX_DIMS);
  if (c) return c;
  return x->i < y->i ? -1 : x->i > y->i;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

ts_status_t ts_points_finish(ts_points_t *p) {
  size_t n = p->n, dims = (size_t)p->dims;
  if (n == 0) return TS_OK;
  rec_t *idx = ts_calloc(n, sizeof *idx);
  int64_t *c = ts_malloc(n * dims * sizeof *c);
  double *v = ts_malloc(n * sizeof *v);
  if (!idx || !c || !v) goto nomem;
  for (size_t i = 0; i < n; i++) {
    memcpy(idx[i].c, p->coords + i * dims, dims * sizeof(int64_t));
    idx[i].i = i;
  }
  qsort(idx, n, sizeof *idx, cmp_rec);
  /* Duplicates sit together in insertion order: the last one's value wins,
   * as when XLA adds a point twice. */
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const int64_t *x = p->coords + idx[i].i * dims;
    if (m > 0 && cmp_coords(c + (m - 1) * dims, x, p->dims) == 0) {
      v[m - 1] = p->values[idx[i].i];
      continue;
    }
    memcpy(c + m * dims, x, dims * sizeof *x);
    v[m] = p->values[idx[i].i];
    m++;
  }
  ts_free(idx);
  ts_free(p->coords);
  ts_free(p->values);
  p->coords = c, p->values = v, p->n = m, p->cap = m;
  for (size_t d = 0; d < dims; d++) {
    int64_t *a = ts_malloc(m * sizeof *a);
    if (!a) return TS_ERR_NOMEM;
    for (size_t i = 0; i < m; i++) a[i] = c[i * dims + d];
    qsort(a, m, sizeof *a, cmp_i64);
    size_t k = 0;
    for (size_t i = 0; i < m; i++)
      if (k == 0 || a[k - 1] != a[i]) a[k++] = a[i];
    ts_free(p->axis[d]);
    p->axis[d] = a;
    p->axis_n[d] = k;
  }
  return TS_OK;
nomem:
  ts_free(idx);
  ts_free(c);
  ts_free(v);
  return TS_ERR_NOMEM;
}

static size_t find(const ts_points_t *p, const int64_t *x) {
  size_t lo = 0, hi = p->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = cmp_coords(p->coords + mid * (size_t)p->dims, x, p->dims);
    if (c == 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return SIZE_MAX;
}

/* Squared distance in log2 units. */
static double log_dist2(const int64_t *a, const double *lx, int dims) {
  double s = 0;
  for (int d = 0; d < dims; d++) {
    double t = log2((double)a[d]) - lx[d];
    s += t * t;
  }
  return s;
}

/* Inverse-distance weights over the points of a box; true with *value set on
 * an exact hit. */
static bool box_sum(const ts_points_t *p, int64_t cand[][3], const int *ncand, const double *lx, size_t skip,
                    double *wsum, double *vsum, double *value) {
  int dims = p->dims;
  int combo[TS_POINTS_MAX_DIMS] = {0};
  for (;;) {
    int64_t c[TS_POINTS_MAX_DIMS];
    for (int d = 0; d < dims; d++) c[d] = cand[d][combo[d]];
    size_t i = find(p, c);
    if (i != SIZE_MAX && i != skip) {
      double d2 = log_dist2(c, lx, dims);
      if (d2 == 0) {
        *value = p->values[i];
        return true;
      }
      *wsum += 1 / d2;
      *vsum += p->values[i] / d2;
    }
    int d = 0;
    while (d < dims && ++combo[d] == ncand[d]) combo[d++] = 0;
    if (d == dims) return false;
  }
}

bool ts_points_weighted(const ts_points_t *p, const int64_t *x, size_t skip, double *value) {
  if (p->n == 0 || (p->n == 1 && skip == 0)) return false;
  int dims = p->dims;
  double lx[TS_POINTS_MAX_DIMS];
  int64_t tight[TS_POINTS_MAX_DIMS][3], wide[TS_POINTS_MAX_DIMS][3];
  int ntight[TS_POINTS_MAX_DIMS], nwide[TS_POINTS_MAX_DIMS];
  for (int d = 0; d < dims; d++) {
    const int64_t *a = p->axis[d];
    size_t n = p->axis_n[d];
    int64_t xc = x[d] < a[0] ? a[0] : x[d] > a[n - 1] ? a[n - 1] : x[d];
    lx[d] = log2((double)xc);
    size_t lo = 0, hi = n; /* first index with a[i] >= xc */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (a[mid] < xc) lo = mid + 1;
      else hi = mid;
    }
    bool stored = lo < n && a[lo] == xc;
    int k = 0;
    if (lo > 0) wide[d][k++] = a[lo - 1];
    if (stored) wide[d][k++] = a[lo];
    if (lo + stored < n) wide[d][k++] = a[lo + stored];
    nwide[d] = k;
    /* The cell around x as XLA's corners: x itself where it is stored. */
    if (stored) {
      tight[d][0] = xc;
      ntight[d] = 1;
    } else {
      memcpy(tight[d], wide[d], sizeof tight[d]);
      ntight[d] = nwide[d];
    }
  }
  double wsum = 0, vsum = 0;
  /* The cell first; then, when it holds no point (a hole, or the point left
   * out), the neighbours one step away in every dim; then every point. */
  if (box_sum(p, tight, ntight, lx, skip, &wsum, &vsum, value)) return true;
  if (wsum == 0 && box_sum(p, wide, nwide, lx, skip, &wsum, &vsum, value)) return true;
  if (wsum == 0) {
    for (size_t i = 0; i < p->n; i++) {
      if (i == skip) continue;
      double d2 = log_dist2(p->coords + i * (size_t)dims, lx, dims);
      if (d2 == 0) {
        *value = p->values[i];
        return true;
      }
      wsum += 1 / d2;
      vsum += p->values[i] / d2;
    }
  }
  if (wsum == 0) return false;
  *value = vsum / wsum;
  return true;
}

bool ts_points_nearest(const ts_points_t *p, const int64_t *x, size_t skip, double *value) {
  int dims = p->dims;
  int64_t snap[TS_POINTS_MAX_DIMS];
  for (int d = 0; d < dims; d++) {
    bool have_prev = false, have_next = false;
    int64_t prev = 0, next = 0;
    for (size_t i = 0; i < p->n; i++) {
      if (i == skip) continue;
      const int64_t *c = p->coords + i * (size_t)dims;
      if (cmp_coords(c, snap, d) != 0) continue;
      if (c[d] < x[d]) {
        if (!have_prev || c[d] > prev) prev = c[d], have_prev = true;
      } else {
        if (!have_next || c[d] < next) next = c[d], have_next = true;
      }
    }
    if (!have_prev && !have_next) return false;
    /* Ties go up, as in XLA. Differences of positive int64 do not overflow. */
    if (have_prev && (!have_next || x[d] - prev < next - x[d])) snap[d] = prev;
    else snap[d] = next;
  }
  size_t i = find(p, snap);
  if (i == SIZE_MAX || i == skip) return false; /* cannot happen: the snap followed stored points */
  *value = p->values[i];
  return true;
}

void ts_loo_add(ts_loo_result_t *r, double *ape_sum, bool predicted, double *predicted_s, double measured_s) {
  r->points++;
  if (!predicted) {
    *predicted_s = -1;
    return;
  }
  double ape = 100 * fabs(*predicted_s - measured_s) / measured_s;
  *ape_sum += ape;
  if (ape > r->max_ape) r->max_ape = ape;
  r->predicted++;
}
