/* The collective and GEMM interpolators on small hand-made tables: exact
 * hits, points in between, beyond the largest size, weighted vs nearest, the
 * dtype fallback, and leave-one-out; a noise-free latency + bytes/bandwidth
 * table that the collective weighted mode must reproduce. Goldens:
 * interp_goldens.py (an independent implementation of the documented rules)
 * and hand arithmetic. */
#include <math.h>
#include <string.h>

#include "ts_costmodel.h"
#include "../ts_test.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * fabs(b))

typedef struct {
  int64_t bytes, dev, thr;
} coll_pt_t;

/* An all-reduce table over contiguous groups from (bytes, devices, bytes/s). */
static ts_coll_interp_t *coll_table_of(const coll_pt_t *pts, size_t n) {
  ts_perf_table_t *t;
  EXPECT(ts_perf_table_create(TS_PERF_TABLE_COLLECTIVES, &t) == TS_OK);
  for (size_t i = 0; i < n; i++) {
    ts_coll_measurement_t m = {TS_COLL_ALL_REDUCE, TS_SCHEME_CONTIGUOUS, 11, pts[i].bytes, pts[i].dev, 1,
                               pts[i].thr, NULL};
    EXPECT(ts_perf_table_add_collective(t, "dev", &m, NULL) == TS_OK);
  }
  ts_coll_interp_t *ci = NULL;
  EXPECT(ts_coll_interp_create(t, "dev", &ci, NULL) == TS_OK);
  ts_perf_table_destroy(t);
  return ci;
}

/* (bytes, devices) -> bytes/s: (1024,2) 1e9  (4096,2) 4e9  (1024,4) 0.5e9
 * (4096,4) 2e9, i.e. a constant 1.024 us at 2 devices and 2.048 us at 4. */
static ts_coll_interp_t *coll_table(void) {
  static const coll_pt_t pts[] = {
      {1024, 2, 1000000000}, {4096, 2, 4000000000}, {1024, 4, 500000000}, {4096, 4, 2000000000}};
  return coll_table_of(pts, 4);
}

static double ctime_(const ts_coll_interp_t *ci, ts_interp_mode_t mode, int64_t bytes, int64_t dev) {
  double s = -1;
  EXPECT(ts_coll_interp_time(ci, mode, TS_COLL_ALL_REDUCE, TS_SCHEME_CONTIGUOUS, bytes, dev, &s) == TS_OK);
  return s;
}

static void test_collective(void) {
  ts_coll_interp_t *ci = coll_table();
  const ts_interp_mode_t W = TS_INTERP_WEIGHTED, N = TS_INTERP_NEAREST;
  /* exact hits: bytes / stored throughput, in both modes */
  EXPECT(NEAR(ctime_(ci, W, 1024, 2), 1024 / 1e9));
  EXPECT(NEAR(ctime_(ci, W, 4096, 4), 4096 / 2e9));
  EXPECT(NEAR(ctime_(ci, N, 4096, 4), 4096 / 2e9));
  /* weighted, between sizes at a stored count: time is linear in size, here
   * 1.024 us at both ends (averaging throughput would give 0.8192 us) */
  EXPECT(NEAR(ctime_(ci, W, 2048, 2), 1.024e-06));
  EXPECT(NEAR(ctime_(ci, W, 1500, 2), 1.024e-06));
  /* between counts: linear in log2(devices), 1.024 + (log2 3 - 1) * 1.024 us */
  EXPECT(NEAR(ctime_(ci, W, 1024, 3), 1.623001600738464e-06));
  EXPECT(NEAR(ctime_(ci, W, 1500, 3), 1.623001600738464e-06));
  /* beyond the largest size: saturated throughput 4e9, time linear */
  EXPECT(NEAR(ctime_(ci, W, 32768, 2), 32768 / 4e9));
  /* below the smallest: the weighted mode keeps the smallest size's time,
   * the nearest mode (XLA) its throughput */
  EXPECT(NEAR(ctime_(ci, W, 256, 2), 1024 / 1e9));
  EXPECT(NEAR(ctime_(ci, N, 256, 2), 256 / 1e9));
  /* more devices than measured: the largest device count */
  EXPECT(NEAR(ctime_(ci, W, 1024, 8), 1024 / 0.5e9));
  /* nearest: snap bytes first (2048 is nearer 1024), then devices */
  EXPECT(NEAR(ctime_(ci, N, 2048, 2), 2048 / 1e9));
  EXPECT(NEAR(ctime_(ci, N, 3072, 2), 3072 / 4e9));
  EXPECT(NEAR(ctime_(ci, N, 2560, 2), 2560 / 4e9)); /* a tie goes up */
  EXPECT(NEAR(ctime_(ci, N, 1024, 3), 1024 / 0.5e9)); /* 3 is as near 2 as 4: up */
  EXPECT(NEAR(ctime_(ci, N, 32768, 4), 32768 / 2e9));
  /* a scheme the table lacks falls back to one it has; a kind it lacks is unsupported */
  double s;
  EXPECT(ts_coll_interp_time(ci, W, TS_COLL_ALL_REDUCE, TS_SCHEME_STRIDED, 2048, 2, &s) == TS_OK &&
         NEAR(s, 1.024e-06));
  EXPECT(ts_coll_interp_time(ci, W, TS_COLL_ALL_GATHER, TS_SCHEME_CONTIGUOUS, 2048, 2, &s) == TS_ERR_UNSUPPORTED);
  /* leave-one-out, weighted: each count keeps one size; a left-out 1024 takes
   * the 4096's time (0%), a left-out 4096 the 1024's throughput (4x: 300%) */
  ts_loo_result_t r;
  EXPECT(ts_coll_interp_loo(ci, W, NULL, NULL, &r) == TS_OK);
  EXPECT(r.points == 4 && r.predicted == 4);
  EXPECT(NEAR(r.mape, 150.0) && NEAR(r.max_ape, 300.0));
  EXPECT(ts_coll_interp_loo(ci, N, NULL, NULL, &r) == TS_OK);
  EXPECT(r.points == 4 && r.predicted == 4 && NEAR(r.mape, 75.0) && NEAR(r.max_ape, 100.0));
  ts_coll_interp_destroy(ci);
}

/* The weighted rule on a table with three sizes at 2 devices (2, 4, 8 us),
 * one at 4 (4.096 us) and two at 8 (4, 16 us). */
static void test_collective_time(void) {
  static const coll_pt_t pts[] = {{1024, 2, 512000000}, {4096, 2, 1024000000}, {16384, 2, 2048000000},
                                  {4096, 4, 1000000000}, {1024, 8, 256000000},  {16384, 8, 1024000000}};
  ts_coll_interp_t *ci = coll_table_of(pts, 6);
  const ts_interp_mode_t W = TS_INTERP_WEIGHTED;
  /* linear in size: 2 + (4 - 2) * 1024/3072 us, 4 + (8 - 4) * 4096/12288 us */
  EXPECT(NEAR(ctime_(ci, W, 2048, 2), 2.6666666666666664e-06));
  EXPECT(NEAR(ctime_(ci, W, 8192, 2), 5.333333333333333e-06));
  /* 3 devices: 2.667 us at 2 and the 4.096 us floor at 4, linear in log2 */
  EXPECT(NEAR(ctime_(ci, W, 2048, 3), 3.502773067697439e-06));
  /* 6 devices: 4.096 us at 4, 4 + 12 * 1024/15360 = 4.8 us at 8 */
  EXPECT(NEAR(ctime_(ci, W, 2048, 6), 4.507813600507694e-06));
  EXPECT(NEAR(ctime_(ci, W, 65536, 2), 3.2e-05)); /* saturated at 2.048 GB/s */
  EXPECT(NEAR(ctime_(ci, W, 512, 8), 4e-06));     /* latency floor */
  EXPECT(NEAR(ctime_(ci, W, 16384, 16), 1.6e-05)); /* the largest count */
  EXPECT(NEAR(ctime_(ci, W, 3000, 4), 4.096e-06)); /* a measured count's own floor */
  /* leave-one-out: 100, 20, 100 at 2 devices; the lone 4-device point from
   * counts 2 and 8 (4 and 6.4 us: 5.2 us, +26.95%); 300, 300 at 8 */
  ts_loo_result_t r;
  EXPECT(ts_coll_interp_loo(ci, W, NULL, NULL, &r) == TS_OK);
  EXPECT(r.points == 6 && r.predicted == 6);
  EXPECT(NEAR(r.mape, 141.15885416666666) && NEAR(r.max_ape, 300.0));
  ts_coll_interp_destroy(ci);
}

/* A noise-free alpha-beta table, time = 20 us * log2(D) + S / 3 GB/s on sizes
 * 1K..64M doubling and D = 2, 4, 8: the weighted mode predicts every inner
 * point exactly (time is linear in size) and misses the ends by the latency
 * floor and the saturation alone: at the smallest size S/beta / t(S), at the
 * largest alpha / t(S). Averaging throughput over the cell (the former
 * rule) scored 10.93% here (interp_goldens.py). */
#define AB_ALPHA 20e-6
#define AB_BETA 3e9
typedef struct {
  size_t n, inner_bad, end_bad;
} ab_check_t;

static double ab_time(int64_t bytes, int64_t dev) { return AB_ALPHA * log2((double)dev) + (double)bytes / AB_BETA; }

static void ab_point(void *ctx, const ts_coll_loo_point_t *p) {
  ab_check_t *c = ctx;
  c->n++;
  double ape = fabs(p->predicted_s - p->measured_s) / p->measured_s;
  double alpha = AB_ALPHA * log2((double)p->devices);
  double want = 0;
  if (p->tensor_bytes == 1024) want = (1024 / AB_BETA) / ab_time(1024, p->devices);
  else if (p->tensor_bytes == 64 << 20) want = alpha / ab_time(64 << 20, p->devices);
  bool inner = want == 0; /* stored throughputs are whole bytes/s: ~1e-8 off at 1K */
  if (fabs(ape - want) > 1e-7) *(inner ? &c->inner_bad : &c->end_bad) += 1;
}

static void test_collective_alpha_beta(void) {
  coll_pt_t pts[3 * 17];
  size_t n = 0;
  for (int64_t dev = 2; dev <= 8; dev *= 2)
    for (int64_t b = 1024; b <= 64 << 20; b *= 2)
      pts[n++] = (coll_pt_t){b, dev, llround((double)b / ab_time(b, dev))};
  ts_coll_interp_t *ci = coll_table_of(pts, n);
  ts_loo_result_t r;
  ab_check_t c = {0};
  EXPECT(ts_coll_interp_loo(ci, TS_INTERP_WEIGHTED, ab_point, &c, &r) == TS_OK);
  EXPECT(r.points == 51 && r.predicted == 51 && c.n == 51);
  EXPECT(c.inner_bad == 0 && c.end_bad == 0);
  /* MAPE from interp_goldens.py; the worst is the 1K point at 2 devices:
   * 0.3413 / 20.3413 us = 1.678% */
  EXPECT(fabs(r.mape - 0.07108130485545439) < 1e-6 && fabs(r.max_ape - 1.6780297958254076) < 1e-5);
  /* between measured points, off the grid: exact too */
  EXPECT(fabs(ctime_(ci, TS_INTERP_WEIGHTED, 3 << 20, 4) / ab_time(3 << 20, 4) - 1) < 1e-7);
  EXPECT(fabs(ctime_(ci, TS_INTERP_WEIGHTED, 3 << 20, 3) / ab_time(3 << 20, 3) - 1) < 1e-7);
  ts_coll_interp_destroy(ci);
}

/* bf16xbf16->bf16 at b=1, k=256: (m, n) -> FLOP/s
 *   (256,256) 1e12  (256,512) 2e12  (512,256) 3e12  (512,512) 6e12 */
static void test_gemm(void) {
  static const struct { int64_t m, n, f; } pts[] = {
      {256, 256, 1000000000000}, {256, 512, 2000000000000}, {512, 256, 3000000000000}, {512, 512, 6000000000000}};
  ts_perf_table_t *t;
  EXPECT(ts_perf_table_create(TS_PERF_TABLE_GEMM, &t) == TS_OK);
  for (size_t i = 0; i < 4; i++) {
    ts_gemm_measurement_t m = {1, pts[i].m, pts[i].n, 256, "bf16xbf16->bf16", pts[i].f};
    EXPECT(ts_perf_table_add_gemm(t, "dev", &m, NULL) == TS_OK);
  }
  ts_gemm_interp_t *gi = NULL;
  EXPECT(ts_gemm_interp_create(t, "dev", &gi, NULL) == TS_OK);
  ts_perf_table_destroy(t);
  const char *bf16 = "bf16xbf16->bf16";
  double s = -1;
  /* exact: 2*256^3 / 1e12 */
  EXPECT(ts_gemm_interp_time(gi, TS_INTERP_WEIGHTED, 1, 256, 256, 256, bf16, &s) == TS_OK && NEAR(s, 3.3554432e-05));
  EXPECT(ts_gemm_interp_time(gi, TS_INTERP_WEIGHTED, 1, 362, 256, 256, bf16, &s) == TS_OK &&
         NEAR(s, 2.3731346613397184e-05));
  EXPECT(ts_gemm_interp_time(gi, TS_INTERP_WEIGHTED, 1, 362, 400, 256, bf16, &s) == TS_OK &&
         NEAR(s, 2.2632793517413144e-05));
  EXPECT(ts_gemm_interp_time(gi, TS_INTERP_NEAREST, 1, 362, 400, 256, bf16, &s) == TS_OK && NEAR(s, 3.70688e-05));
  /* beyond the grid: FLOP/s saturate at the boundary (m 1024 -> 512: 6e12) */
  EXPECT(ts_gemm_interp_time(gi, TS_INTERP_WEIGHTED, 1, 1024, 512, 256, bf16, &s) == TS_OK &&
         NEAR(s, 2.0 * 1024 * 512 * 256 / 6e12));
  EXPECT(ts_gemm_interp_time(gi, TS_INTERP_WEIGHTED, 4, 512, 512, 1024, bf16, &s) == TS_OK &&
         NEAR(s, 2.0 * 4 * 512 * 512 * 1024 / 6e12));
  /* f32 has no table: bf16 at the same bytes per dim (x2), the real FLOP count */
  EXPECT(ts_gemm_interp_time(gi, TS_INTERP_WEIGHTED, 1, 128, 128, 128, "f32xf32->f32", &s) == TS_OK &&
         NEAR(s, 2.0 * 128 * 128 * 128 / 1e12));
  EXPECT(ts_gemm_interp_time(gi, TS_INTERP_WEIGHTED, 1, 200, 128, 128, "f32xf32->f32", &s) == TS_OK &&
         NEAR(s, 2.588888829640496e-06));
  EXPECT(ts_gemm_interp_time(gi, TS_INTERP_WEIGHTED, 1, 200, 128, 128, "no-arrow", &s) == TS_ERR_UNSUPPORTED);
  ts_loo_result_t r;
  EXPECT(ts_gemm_interp_loo(gi, TS_INTERP_WEIGHTED, NULL, NULL, &r) == TS_OK);
  EXPECT(r.points == 4 && r.predicted == 4 && r.mape > 0);
  ts_gemm_interp_destroy(gi);
}

int main(void) {
  test_collective();
  test_collective_time();
  test_collective_alpha_beta();
  test_gemm();
  return failures != 0;
}
