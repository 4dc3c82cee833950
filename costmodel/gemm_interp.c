/* The GEMM interpolator: FLOP/s over the 4-D (b, m, k, n) grid per dtype key
 * (reference §2.3, the XLA doc's "Performance tables - GEMMs").
 * Time = 2 b m n k / FLOP/s. */
#include "costmodel_internal.h"

#include <math.h>
#include <string.h>

typedef struct {
  char *dtype;
  ts_points_t pts; /* (b, m, k, n), XLA's order -> FLOP/s */
} gemm_key_t;

struct ts_gemm_interp {
  gemm_key_t *keys;
  size_t n;
};

static const char FALLBACK_DTYPE[] = "bf16xbf16->bf16";

void ts_gemm_interp_destroy(ts_gemm_interp_t *gi) {
  if (!gi) return;
  for (size_t i = 0; i < gi->n; i++) {
    ts_free(gi->keys[i].dtype);
    ts_points_free(&gi->keys[i].pts);
  }
  ts_free(gi->keys);
  ts_free(gi);
}

static gemm_key_t *find_key(const ts_gemm_interp_t *gi, const char *dtype) {
  for (size_t i = 0; i < gi->n; i++)
    if (strcmp(gi->keys[i].dtype, dtype) == 0) return &gi->keys[i];
  return NULL;
}

ts_status_t ts_gemm_interp_create(const ts_perf_table_t *t, const char *device_key, ts_gemm_interp_t **out,
                                  ts_diag_t *diag) {
  ts_gemm_measurement_t *ms;
  size_t n;
  TS_CHECK(ts_perf_table_gemms(t, device_key, &ms, &n, diag));
  ts_gemm_interp_t *gi = ts_calloc(1, sizeof *gi);
  ts_status_t st = gi ? TS_OK : TS_ERR_NOMEM;
  for (size_t i = 0; i < n && st >= 0; i++) {
    const ts_gemm_measurement_t *m = &ms[i];
    gemm_key_t *k = find_key(gi, m->dtype);
    if (!k) {
      gemm_key_t *grown = ts_realloc(gi->keys, (gi->n + 1) * sizeof *grown);
      if (!grown) {
        st = TS_ERR_NOMEM;
        break;
      }
      gi->keys = grown;
      k = &gi->keys[gi->n];
      k->dtype = ts_strdup(m->dtype);
      ts_points_init(&k->pts, 4);
      gi->n++;
      if (!k->dtype) {
        st = TS_ERR_NOMEM;
        break;
      }
    }
    int64_t x[4] = {m->b, m->m, m->k, m->n};
    if (m->flops <= 0 || ts_points_add(&k->pts, x, (double)m->flops) == TS_ERR_INVALID_ARGUMENT) {
      ts_diag_plain(diag, "device '%s': GEMM entry b=%lld m=%lld n=%lld k=%lld %s has a non-positive dimension or rate",
                    device_key, (long long)m->b, (long long)m->m, (long long)m->n, (long long)m->k, m->dtype);
      st = TS_ERR_PARSE;
    }
  }
  for (size_t i = 0; gi && i < gi->n && st >= 0; i++) st = ts_points_finish(&gi->keys[i].pts);
  ts_free(ms);
  if (st < 0) {
    ts_gemm_interp_destroy(gi);
    return st;
  }
  *out = gi;
  return TS_OK;
}

/* Bytes of the output type of an XLA dtype key "lhsxrhs->out"; 0 if unknown. */
static int out_bytes(const char *dtype) {
  const char *arrow = strstr(dtype, "->");
  if (!arrow) return 0;
  const char *o = arrow + 2;
  if (strncmp(o, "f8", 2) == 0 || strcmp(o, "s8") == 0 || strcmp(o, "u8") == 0) return 1;
  if (strcmp(o, "bf16") == 0 || strcmp(o, "f16") == 0 || strcmp(o, "s16") == 0) return 2;
  if (strcmp(o, "f32") == 0 || strcmp(o, "s32") == 0) return 4;
  if (strcmp(o, "f64") == 0 || strcmp(o, "s64") == 0) return 8;
  return 0;
}

static double flop_count(int64_t b, int64_t m, int64_t n, int64_t k) {
  return 2.0 * (double)b * (double)m * (double)n * (double)k;
}

static bool key_time(const gemm_key_t *key, ts_interp_mode_t mode, const int64_t x[4], double flop, size_t skip,
                     double *seconds) {
  double f;
  bool ok = mode == TS_INTERP_NEAREST ? ts_points_nearest(&key->pts, x, skip, &f)
                                      : ts_points_weighted(&key->pts, x, skip, &f);
  if (!ok || !(f > 0)) return false;
  *seconds = flop / f;
  return true;
}

ts_status_t ts_gemm_interp_time(const ts_gemm_interp_t *gi, ts_interp_mode_t mode, int64_t b, int64_t m, int64_t n,
                                int64_t k, const char *dtype, double *seconds) {
  if (b < 1 || m < 1 || n < 1 || k < 1 || !dtype) return TS_ERR_INVALID_ARGUMENT;
  double flop = flop_count(b, m, n, k);
  const gemm_key_t *key = find_key(gi, dtype);
  if (key) {
    int64_t x[4] = {b, m, k, n};
    return key_time(key, mode, x, flop, SIZE_MAX, seconds) ? TS_OK : TS_ERR_UNSUPPORTED;
  }
  /* No table for this dtype: the bf16 table at the shape with the same bytes
   * per dimension. Unlike XLA's code, the FLOP count stays the real one. */
  key = find_key(gi, FALLBACK_DTYPE);
  int bytes = out_bytes(dtype);
  if (!key || !bytes) return TS_ERR_UNSUPPORTED;
  int64_t x[4] = {b, m * bytes / 2, k * bytes / 2, n * bytes / 2};
  for (int d = 1; d < 4; d++)
    if (x[d] < 1) x[d] = 1;
  return key_time(key, mode, x, flop, SIZE_MAX, seconds) ? TS_OK : TS_ERR_UNSUPPORTED;
}

ts_status_t ts_gemm_interp_loo(const ts_gemm_interp_t *gi, ts_interp_mode_t mode,
                               void (*each)(void *ctx, const ts_gemm_loo_point_t *p), void *ctx,
                               ts_loo_result_t *out) {
  ts_loo_result_t r = {0};
  double sum = 0;
  for (size_t kk = 0; kk < gi->n; kk++) {
    const gemm_key_t *key = &gi->keys[kk];
    for (size_t i = 0; i < key->pts.n; i++) {
      const int64_t *x = key->pts.coords + 4 * i;
      ts_gemm_loo_point_t pt = {key->dtype, x[0], x[1], x[3], x[2], 0, -1};
      double flop = flop_count(pt.b, pt.m, pt.n, pt.k);
      pt.measured_s = flop / key->pts.values[i];
      bool ok = key_time(key, mode, x, flop, i, &pt.predicted_s);
      ts_loo_add(&r, &sum, ok, &pt.predicted_s, pt.measured_s);
      if (each) each(ctx, &pt);
    }
  }
  r.mape = r.predicted ? sum / (double)r.predicted : 0;
  *out = r;
  return TS_OK;
}
