/* Fitting the S-curve's knobs to a measured collective table (issue 8:
 * `tessera opt --fit-scurve TABLE`), so that nobody has to guess NIC speed
 * or RTT. The model of scurve.c is linear in its four time knobs once the
 * chunk size is fixed; see ts_scurve_fit in ts_costmodel.h. */
#include "costmodel_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { K_LAUNCH, K_INV_NIC, K_PREP, K_RTT, NK };

/* The features of one measurement: t_us = sum f[k] * x[k] with x = (launch,
 * 1/nic_gbps, prep, rtt), the same arithmetic as ts_scurve_time. False when
 * the point does not fit the model (too few devices, uneven nodes). */
static bool features(const ts_coll_measurement_t *m, int64_t gpn, int64_t chunk, double f[NK]) {
  int64_t gpus = m->devices_per_group, bytes = m->tensor_bytes;
  int64_t nodes = gpus / gpn;
  if (m->kind == TS_COLL_COLLECTIVE_PERMUTE) gpus = 2, nodes = 2;
  if (gpus < 2 || nodes < 1 || gpus % nodes != 0 || bytes <= 0 || m->throughput_bytes_per_sec <= 0) return false;
  int64_t g = gpus / nodes;
  double steps;
  int64_t per;
  if (m->kind == TS_COLL_ALL_TO_ALL) {
    steps = (double)(g * (nodes - 1));
    per = bytes / (gpus - 1);
  } else {
    per = m->kind == TS_COLL_COLLECTIVE_PERMUTE ? bytes : bytes / gpus;
    steps = (double)(gpus - 1) / (double)g * (m->kind == TS_COLL_ALL_REDUCE ? 2 : 1);
  }
  double chunks = (double)(per / chunk + (per % chunk != 0));
  f[K_LAUNCH] = 1;
  f[K_INV_NIC] = steps * (double)per * 1.025e-3; /* us per (GB/s)^-1, with XLA's header overhead */
  f[K_PREP] = steps * chunks;
  f[K_RTT] = steps;
  return true;
}

static double measured_us(const ts_coll_measurement_t *m) {
  return (double)m->tensor_bytes / (double)m->throughput_bytes_per_sec * 1e6;
}

/* Weighted least squares over the active columns by the normal equations
 * (columns scaled to unit max first); inactive or singular columns get 0. */
static void solve(const ts_coll_measurement_t *m, size_t n, int64_t gpn, int64_t chunk, const bool active[NK],
                  double x[NK]) {
  double scale[NK] = {0}, a[NK][NK + 1];
  memset(a, 0, sizeof a);
  for (size_t i = 0; i < n; i++) {
    double f[NK];
    if (!features(&m[i], gpn, chunk, f)) continue;
    double w = 1 / measured_us(&m[i]);
    for (int k = 0; k < NK; k++) scale[k] = fmax(scale[k], fabs(f[k] * w));
  }
  for (size_t i = 0; i < n; i++) {
    double f[NK];
    if (!features(&m[i], gpn, chunk, f)) continue;
    double w = 1 / measured_us(&m[i]);
    for (int r = 0; r < NK; r++) {
      if (!active[r] || scale[r] == 0) continue;
      double fr = f[r] * w / scale[r];
      for (int c = 0; c < NK; c++)
        if (active[c] && scale[c] != 0) a[r][c] += fr * f[c] * w / scale[c];
      a[r][NK] += fr * 1.0; /* the target, t * w, is 1 */
    }
  }
  int idx[NK], nn = 0;
  for (int k = 0; k < NK; k++)
    if (active[k] && scale[k] != 0) idx[nn++] = k;
  double s[NK][NK + 1];
  for (int r = 0; r < nn; r++) {
    for (int c = 0; c < nn; c++) s[r][c] = a[idx[r]][idx[c]];
    s[r][nn] = a[idx[r]][NK];
  }
  bool ok[NK];
  for (int c = 0; c < nn; c++) { /* Gauss-Jordan with partial pivoting */
    int p = c;
    for (int r = c + 1; r < nn; r++)
      if (fabs(s[r][c]) > fabs(s[p][c])) p = r;
    ok[c] = fabs(s[p][c]) > 1e-12;
    if (!ok[c]) continue;
    for (int k = 0; k <= nn; k++) {
      double t = s[c][k];
      s[c][k] = s[p][k];
      s[p][k] = t;
    }
    for (int r = 0; r < nn; r++) {
      if (r == c || s[r][c] == 0) continue;
      double q = s[r][c] / s[c][c];
      for (int k = c; k <= nn; k++) s[r][k] -= q * s[c][k];
    }
  }
  for (int k = 0; k < NK; k++) x[k] = 0;
  for (int r = 0; r < nn; r++) x[idx[r]] = ok[r] ? s[r][nn] / s[r][r] / scale[idx[r]] : 0;
}

static void errors(const ts_coll_measurement_t *m, size_t n, const ts_scurve_config_t *cfg, double *rms,
                   double *max, size_t *points) {
  double sum = 0, mx = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    double f[NK], t;
    if (!features(&m[i], cfg->gpus_per_node, cfg->chunk_size_bytes, f)) continue;
    int64_t gpus = m[i].devices_per_group, nodes = gpus / cfg->gpus_per_node;
    if (m[i].kind == TS_COLL_COLLECTIVE_PERMUTE) gpus = 2, nodes = 2;
    if (ts_scurve_time(cfg, m[i].kind, m[i].tensor_bytes, gpus, nodes, &t) != TS_OK) continue;
    double e = fabs(t * 1e6 - measured_us(&m[i])) / measured_us(&m[i]);
    sum += e * e;
    mx = fmax(mx, e);
    k++;
  }
  *rms = k ? sqrt(sum / (double)k) * 100 : 0;
  *max = mx * 100;
  *points = k;
}

static double whole_us(double v) { return fmax(1, round(v)); }

ts_status_t ts_scurve_fit(const ts_coll_measurement_t *m, size_t n, int64_t gpus_per_node, ts_scurve_fit_t *out,
                          ts_diag_t *diag) {
  if (gpus_per_node < 1) gpus_per_node = 1;
  size_t usable = 0;
  for (size_t i = 0; i < n; i++) {
    double f[NK];
    if (features(&m[i], gpus_per_node, INT64_C(4194304), f)) usable++;
  }
  if (usable < NK) {
    ts_diag_plain(diag, "the table has %zu measurements the S-curve model can fit (at least %d needed: collectives "
                  "over 2 or more devices with a size and a throughput)", usable, NK);
    return TS_ERR_INVALID_ARGUMENT;
  }
  bool have = false;
  ts_scurve_fit_t best = {0};
  for (int64_t chunk = INT64_C(1) << 18; chunk <= INT64_C(1) << 26; chunk <<= 1) {
    bool active[NK] = {true, true, true, true};
    double x[NK];
    for (int round_ = 0; round_ < NK; round_++) { /* drop the most negative coefficient until none is */
      solve(m, n, gpus_per_node, chunk, active, x);
      int worst = -1;
      for (int k = 0; k < NK; k++)
        if (active[k] && x[k] < 0 && (worst < 0 || x[k] < x[worst])) worst = k;
      if (worst < 0) break;
      active[worst] = false;
    }
    for (int k = 0; k < NK; k++) x[k] = fmax(x[k], 0);
    ts_scurve_fit_t f = {.cfg = {
                             .nccl_op_launch_us = whole_us(x[K_LAUNCH]),
                             .nic_speed_gbps = x[K_INV_NIC] > 1e-12 ? 1 / x[K_INV_NIC] : 1e6,
                             .chunk_prep_us = whole_us(x[K_PREP]),
                             .rtt_us = whole_us(x[K_RTT]),
                             .gpus_per_node = gpus_per_node,
                             .chunk_size_bytes = chunk,
                         }};
    errors(m, n, &f.cfg, &f.rms_rel_error, &f.max_rel_error, &f.points);
    if (!have || f.rms_rel_error < best.rms_rel_error) best = f, have = true;
  }
  *out = best;
  return TS_OK;
}

void ts_scurve_print_options(const ts_scurve_config_t *c, ts_buf_t *out) {
  ts_buf_printf(out,
                "nic_speed_gbps=%.6g,gpus_per_node=%lld,nccl_op_launch_us=%.0f,chunk_prep_us=%.0f,rtt_us=%.0f,"
                "chunk_size_bytes=%lld",
                c->nic_speed_gbps, (long long)c->gpus_per_node, c->nccl_op_launch_us, c->chunk_prep_us, c->rtt_us,
                (long long)c->chunk_size_bytes);
  if (c->partition_size > 0) ts_buf_printf(out, ",partition_size=%lld", (long long)c->partition_size);
}
