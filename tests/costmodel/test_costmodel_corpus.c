/* A table from XLA (shared/corpus/xla_perf_tables): it loads, survives
 * text -> binary -> text unchanged, every device builds an interpolator, and
 * the leave-one-out accuracy of both interpolation modes is printed per device
 * (the MAPE figures of issue 8). Usage: test_costmodel_corpus TABLE */
#include <stdio.h>
#include <string.h>

#include "ts_costmodel.h"
#include "../ts_test.h"

static void print_loo(const char *device, const char *what, ts_interp_mode_t mode, const ts_loo_result_t *r) {
  printf("  %-14s %-28s %-8s points %4zu predicted %4zu  MAPE %7.2f%%  max %8.2f%%\n", device, what,
         ts_interp_mode_name(mode), r->points, r->predicted, r->mape, r->max_ape);
}

/* Per-key breakdown of the collective leave-one-out. */
typedef struct {
  double sum[TS_COST_COLL_COUNT][TS_SCHEME_COUNT];
  size_t n[TS_COST_COLL_COUNT][TS_SCHEME_COUNT];
} by_key_t;

static void each_coll(void *ctx, const ts_coll_loo_point_t *p) {
  by_key_t *k = ctx;
  if (p->predicted_s < 0) return;
  k->sum[p->kind][p->scheme] += 100 * (p->predicted_s > p->measured_s ? p->predicted_s - p->measured_s
                                                                         : p->measured_s - p->predicted_s) /
                                p->measured_s;
  k->n[p->kind][p->scheme]++;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s TABLE\n", argv[0]);
    return 2;
  }
  ts_diag_t d = {0};
  ts_perf_table_t *t = NULL;
  if (ts_perf_table_load(argv[1], &t, &d) != TS_OK) {
    fprintf(stderr, "%s", d.text ? d.text : "load failed\n");
    ts_diag_free(&d);
    return 1;
  }
  bool gemm = ts_perf_table_kind(t) == TS_PERF_TABLE_GEMM;
  printf("%s: %s table, %zu devices\n", argv[1], gemm ? "GEMM" : "collective", ts_perf_table_num_devices(t));

  /* round trip through both forms */
  ts_buf_t text = {0}, text2 = {0};
  uint8_t *bin = NULL, *bin2 = NULL;
  size_t nbin = 0, nbin2 = 0;
  ts_perf_table_t *tb = NULL, *tt = NULL;
  EXPECT(ts_perf_table_to_text(t, &text) == TS_OK);
  EXPECT(ts_perf_table_to_binary(t, &bin, &nbin) == TS_OK);
  EXPECT(ts_perf_table_parse_binary("bin", bin, nbin, &tb, NULL) == TS_OK);
  ts_source_t src = {"text", text.data, text.len};
  EXPECT(ts_perf_table_parse_text(&src, &tt, NULL) == TS_OK);
  EXPECT(tb && ts_perf_table_to_text(tb, &text2) == TS_OK && text2.data && strcmp(text.data, text2.data) == 0);
  EXPECT(tt && ts_perf_table_to_binary(tt, &bin2, &nbin2) == TS_OK && nbin == nbin2 && memcmp(bin, bin2, nbin) == 0);
  printf("  round trip: %zu bytes of text, %zu bytes binary\n", text.len, nbin);

  for (size_t i = 0; i < ts_perf_table_num_devices(t); i++) {
    const char *dev = ts_perf_table_device(t, i);
    if (gemm) {
      ts_gemm_interp_t *gi = NULL;
      EXPECT(ts_gemm_interp_create(t, dev, &gi, NULL) == TS_OK);
      if (!gi) continue;
      for (int m = 0; m < 2; m++) {
        ts_loo_result_t r;
        EXPECT(ts_gemm_interp_loo(gi, (ts_interp_mode_t)m, NULL, NULL, &r) == TS_OK);
        EXPECT(r.predicted == r.points && r.points > 0);
        print_loo(dev, "all dtypes", (ts_interp_mode_t)m, &r);
      }
      ts_gemm_interp_destroy(gi);
    } else {
      ts_coll_interp_t *ci = NULL;
      EXPECT(ts_coll_interp_create(t, dev, &ci, NULL) == TS_OK);
      if (!ci) continue;
      for (int m = 0; m < 2; m++) {
        ts_loo_result_t r;
        by_key_t k = {0};
        EXPECT(ts_coll_interp_loo(ci, (ts_interp_mode_t)m, each_coll, &k, &r) == TS_OK);
        EXPECT(r.points > 0);
        print_loo(dev, "all collectives", (ts_interp_mode_t)m, &r);
        for (int a = 0; a < TS_COST_COLL_COUNT; a++)
          for (int s = 0; s < TS_SCHEME_COUNT; s++) {
            if (!k.n[a][s]) continue;
            char what[64];
            snprintf(what, sizeof what, "%s/%s", ts_coll_kind_name((ts_coll_kind_t)a),
                     ts_transfer_scheme_name((ts_transfer_scheme_t)s));
            ts_loo_result_t kr = {k.n[a][s], k.n[a][s], k.sum[a][s] / (double)k.n[a][s], 0};
            printf("  %-14s %-28s %-8s predicted %4zu  MAPE %7.2f%%\n", dev, what, ts_interp_mode_name((ts_interp_mode_t)m),
                   kr.predicted, kr.mape);
          }
      }
      ts_coll_interp_destroy(ci);
    }
  }
  ts_buf_free(&text);
  ts_buf_free(&text2);
  ts_free(bin);
  ts_free(bin2);
  ts_perf_table_destroy(tb);
  ts_perf_table_destroy(tt);
  ts_perf_table_destroy(t);
  return failures != 0;
}
