/* The collective and GEMM interpolators on small hand-made tables: exact
 * hits, points in between, beyond the largest size, weighted vs nearest, the
 * dtype fallback, and leave-one-out. Goldens: interp_goldens.py (an
 * independent implementation of the documented rules) and hand arithmetic. */
#include <math.h>
#include <string.h>

#include "ts_costmodel.h"
#include "../ts_test.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * fabs(b))

/* all-reduce, contiguous groups: (bytes, devices) -> bytes/s
 *   (1024,2) 1e9   (4096,2) 4e9   (1024,4) 0.5e9   (4096,4) 2e9 */
static ts_coll_interp_t *coll_table(void) {
  static const struct { int64_t bytes, dev, thr; } pts[] = {
      {1024, 2, 1000000000}, {4096, 2, 4000000000}, {1024, 4, 500000000}, {4096, 4, 2000000000}};
  ts_perf_table_t *t;
  EXPECT(ts_perf_table_create(TS_PERF_TABLE_COLLECTIVES, &t) == TS_OK);
  for (size_t i = 0; i < 4; i++) {
    ts_coll_measurement_t m = {TS_COST_ALL_REDUCE, TS_SCHEME_CONTIGUOUS, 11, pts[i].bytes, pts[i].dev, 1,
                               pts[i].thr, NULL};
    EXPECT(ts_perf_table_add_collective(t, "dev", &m, NULL) == TS_OK);
  }
  ts_coll_interp_t *ci = NULL;
  EXPECT(ts_coll_interp_create(t, "dev", &ci, NULL) == TS_OK);
  ts_perf_table_destroy(t);
  return ci;
}

static double ctime_(const ts_coll_interp_t *ci, ts_interp_mode_t mode, int64_t bytes, int64_t dev) {
  double s = -1;
  EXPECT(ts_coll_interp_time(ci, mode, TS_COST_ALL_REDUCE, TS_SCHEME_CONTIGUOUS, bytes, dev, &s) == TS_OK);
  return s;
}

static void test_collective(void) {
  ts_coll_interp_t *ci = coll_table();
  const ts_interp_mode_t W = TS_INTERP_WEIGHTED, N = TS_INTERP_NEAREST;
  /* exact hits: bytes / stored throughput, in both modes */
  EXPECT(NEAR(ctime_(ci, W, 1024, 2), 1024 / 1e9));
  EXPECT(NEAR(ctime_(ci, W, 4096, 4), 4096 / 2e9));
  EXPECT(NEAR(ctime_(ci, N, 4096, 4), 4096 / 2e9));
  /* between sizes, devices stored: equal weights at log2 distance 1 each:
   * T = (1e9 + 4e9) / 2, time = 2048 / 2.5e9 */
  EXPECT(NEAR(ctime_(ci, W, 2048, 2), 8.192e-07));
  EXPECT(NEAR(ctime_(ci, W, 1500, 2), 1.0880795398157054e-06));
  EXPECT(NEAR(ctime_(ci, W, 1024, 3), 1.5342619088638681e-06));
  EXPECT(NEAR(ctime_(ci, W, 1500, 3), 1.3192006745830828e-06));
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
  EXPECT(ts_coll_interp_time(ci, W, TS_COST_ALL_REDUCE, TS_SCHEME_STRIDED, 2048, 2, &s) == TS_OK &&
         NEAR(s, 8.192e-07));
  EXPECT(ts_coll_interp_time(ci, W, TS_COST_ALL_GATHER, TS_SCHEME_CONTIGUOUS, 2048, 2, &s) == TS_ERR_UNSUPPORTED);
  /* leave-one-out */
  ts_loo_result_t r;
  EXPECT(ts_coll_interp_loo(ci, W, NULL, NULL, &r) == TS_OK);
  EXPECT(r.points == 4 && r.predicted == 4);
  EXPECT(NEAR(r.mape, 67.97973972819788) && NEAR(r.max_ape, 146.80851063829783));
  EXPECT(ts_coll_interp_loo(ci, N, NULL, NULL, &r) == TS_OK);
  EXPECT(r.points == 4 && r.predicted == 4 && NEAR(r.mape, 75.0) && NEAR(r.max_ape, 100.0));
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
  test_gemm();
  return failures != 0;
}
