/* The collective interpolator over a table's points (tensor bytes, devices
 * per group) -> throughput, per (collective, transfer scheme): reference §2.2
 * and the XLA doc's "Performance tables - ICI collectives". The nearest mode
 * is XLA's code's snap; the weighted mode interpolates time (see count_time). */
#include "costmodel_internal.h"

#include <math.h>

#define NKEYS (TS_COST_COLL_COUNT * TS_SCHEME_COUNT)

struct ts_coll_interp {
  bool present[NKEYS];
  ts_points_t pts[NKEYS]; /* (tensor bytes, devices) -> bytes/s */
};

static int key_of(ts_coll_kind_t k, ts_transfer_scheme_t s) { return (int)k * TS_SCHEME_COUNT + (int)s; }

void ts_coll_interp_destroy(ts_coll_interp_t *ci) {
  if (!ci) return;
  for (int i = 0; i < NKEYS; i++) ts_points_free(&ci->pts[i]);
  ts_free(ci);
}

ts_status_t ts_coll_interp_create(const ts_perf_table_t *t, const char *device_key, ts_coll_interp_t **out,
                                  ts_diag_t *diag) {
  ts_coll_interp_t *ci = ts_calloc(1, sizeof *ci);
  if (!ci) return TS_ERR_NOMEM;
  for (int i = 0; i < NKEYS; i++) ts_points_init(&ci->pts[i], 2);
  ts_coll_measurement_t *ms = NULL;
  size_t n = 0;
  ts_status_t st = ts_perf_table_collectives(t, device_key, &ms, &n, diag);
  for (size_t i = 0; i < n && st >= 0; i++) {
    int key = key_of(ms[i].kind, ms[i].scheme);
    int64_t x[2] = {ms[i].tensor_bytes, ms[i].devices_per_group};
    st = ts_points_add(&ci->pts[key], x, (double)ms[i].throughput_bytes_per_sec);
    ci->present[key] = true;
  }
  for (int i = 0; i < NKEYS && st >= 0; i++) st = ts_points_finish(&ci->pts[i]);
  ts_free(ms);
  if (st < 0) {
    ts_coll_interp_destroy(ci);
    return st;
  }
  *out = ci;
  return TS_OK;
}

/* Time of `bytes` from the sizes measured at one device count, leaving out
 * point `skip`; false when that count has no other point.
 *
 * This interpolates TIME, not throughput. XLA's documented retrieval
 * averages throughput over the cell's corners (reference §2.1,
 * EuclideanWeightedAverageInterpolator), but a collective's time is close to
 * latency + bytes / bandwidth: where latency dominates, throughput doubles
 * with each doubling of size, so an average of the neighbours' throughputs
 * misprices the point between them (leave-one-out on a noise-free table of
 * 20 us * log2(D) + bytes / 3 GB/s, 1K..64M: 10.9% that way, 0.07% this
 * way; tests/costmodel/interp_goldens.py). Between the bracketing measured
 * sizes the time is their inverse-distance weighted average with distance in
 * bytes (weights 1/d), which is linear interpolation in size and exact for
 * any latency + bytes / bandwidth model. Below the smallest size the
 * smallest size's time holds (the latency floor); beyond the largest its
 * throughput holds (saturation, time linear in size: the doc's extrapolation
 * rule, reference §2.1, as XLA extrapolates). */
static bool count_time(const ts_points_t *p, int64_t devices, int64_t bytes, size_t skip, double *seconds) {
  size_t lo = SIZE_MAX, hi = SIZE_MAX;
  /* Points are sorted by (bytes, devices): one count's sizes come in order.
   * A point with no throughput gives no time and is passed over. */
  for (size_t i = 0; i < p->n; i++) {
    const int64_t *c = p->coords + 2 * i;
    if (i == skip || c[1] != devices || !(p->values[i] > 0)) continue;
    if (c[0] <= bytes) lo = i;
    if (c[0] >= bytes) {
      hi = i;
      break;
    }
  }
  if (lo == SIZE_MAX && hi == SIZE_MAX) return false;
  if (hi == SIZE_MAX) { /* beyond the largest: saturated throughput */
    *seconds = (double)bytes / p->values[lo];
    return true;
  }
  double t_hi = (double)p->coords[2 * hi] / p->values[hi];
  if (lo == SIZE_MAX || lo == hi) { /* the latency floor, or an exact hit */
    *seconds = t_hi;
    return true;
  }
  double b_lo = (double)p->coords[2 * lo], b_hi = (double)p->coords[2 * hi];
  double t_lo = b_lo / p->values[lo];
  double w_lo = 1 / ((double)bytes - b_lo), w_hi = 1 / (b_hi - (double)bytes);
  *seconds = (w_lo * t_lo + w_hi * t_hi) / (w_lo + w_hi);
  return true;
}

/* The weighted mode: the queried device count's own sizes when it has any
 * (in leave-one-out, other counts weigh in only when the point was the only
 * one at its count); else the per-count times of the nearest measured counts
 * below and above, inverse-distance weighted in log2(devices) (linear in
 * log2 devices between them); beyond the measured counts, the nearest one. */
static bool weighted_time(const ts_points_t *p, int64_t bytes, int64_t devices, size_t skip, double *seconds) {
  if (count_time(p, devices, bytes, skip, seconds)) return true;
  const int64_t *a = p->axis[1];
  size_t n = p->axis_n[1], at = 0; /* the first count >= `devices` */
  while (at < n && a[at] < devices) at++;
  double t_lo = 0, t_hi = 0;
  int64_t d_lo = 0, d_hi = 0;
  for (size_t i = at; i-- > 0 && !d_lo;)
    if (count_time(p, a[i], bytes, skip, &t_lo)) d_lo = a[i];
  for (size_t i = at; i < n && !d_hi; i++)
    if (a[i] != devices && count_time(p, a[i], bytes, skip, &t_hi)) d_hi = a[i];
  if (!d_lo && !d_hi) return false;
  if (!d_hi) *seconds = t_lo;
  else if (!d_lo) *seconds = t_hi;
  else {
    double l = log2((double)devices);
    double w_lo = 1 / (l - log2((double)d_lo)), w_hi = 1 / (log2((double)d_hi) - l);
    *seconds = (w_lo * t_lo + w_hi * t_hi) / (w_lo + w_hi);
  }
  return true;
}

/* Time of `bytes` over `devices` from one key's points, leaving out `skip`. */
static bool key_time(const ts_points_t *p, ts_interp_mode_t mode, int64_t bytes, int64_t devices, size_t skip,
                     double *seconds) {
  if (p->n == 0) return false;
  if (bytes < 1) bytes = 1;
  if (devices < 1) devices = 1;
  if (mode == TS_INTERP_NEAREST) {
    /* XLA: snap, and the snapped throughput prices any size. */
    int64_t x[2] = {bytes, devices};
    double thr;
    if (!ts_points_nearest(p, x, skip, &thr) || !(thr > 0)) return false;
    *seconds = (double)bytes / thr;
    return true;
  }
  return weighted_time(p, bytes, devices, skip, seconds) && *seconds > 0;
}

ts_status_t ts_coll_interp_time(const ts_coll_interp_t *ci, ts_interp_mode_t mode, ts_coll_kind_t kind,
                                ts_transfer_scheme_t scheme, int64_t tensor_bytes, int64_t devices,
                                double *seconds) {
  if ((unsigned)kind >= TS_COST_COLL_COUNT) return TS_ERR_INVALID_ARGUMENT;
  int key = (unsigned)scheme < TS_SCHEME_COUNT ? key_of(kind, scheme) : -1;
  if (key < 0 || !ci->present[key]) {
    /* Another scheme of the same kind beats no estimate (XLA's fallback map
     * is keyed by opcode and communication type only). */
    key = -1;
    for (int s = 0; s < TS_SCHEME_COUNT && key < 0; s++)
      if (ci->present[key_of(kind, (ts_transfer_scheme_t)s)]) key = key_of(kind, (ts_transfer_scheme_t)s);
    if (key < 0) return TS_ERR_UNSUPPORTED;
  }
  return key_time(&ci->pts[key], mode, tensor_bytes, devices, SIZE_MAX, seconds) ? TS_OK : TS_ERR_UNSUPPORTED;
}

ts_status_t ts_coll_interp_loo(const ts_coll_interp_t *ci, ts_interp_mode_t mode,
                               void (*each)(void *ctx, const ts_coll_loo_point_t *p), void *ctx,
                               ts_loo_result_t *out) {
  ts_loo_result_t r = {0};
  double sum = 0;
  for (int key = 0; key < NKEYS; key++) {
    const ts_points_t *p = &ci->pts[key];
    for (size_t i = 0; i < p->n; i++) {
      ts_coll_loo_point_t pt = {
          .kind = (ts_coll_kind_t)(key / TS_SCHEME_COUNT),
          .scheme = (ts_transfer_scheme_t)(key % TS_SCHEME_COUNT),
          .tensor_bytes = p->coords[2 * i],
          .devices = p->coords[2 * i + 1],
          .measured_s = (double)p->coords[2 * i] / p->values[i],
          .predicted_s = -1,
      };
      bool ok = key_time(p, mode, pt.tensor_bytes, pt.devices, i, &pt.predicted_s);
      ts_loo_add(&r, &sum, ok, &pt.predicted_s, pt.measured_s);
      if (each) each(ctx, &pt);
    }
  }
  r.mape = r.predicted ? sum / (double)r.predicted : 0;
  *out = r;
  return TS_OK;
}
