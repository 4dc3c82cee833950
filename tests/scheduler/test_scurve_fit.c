/* The S-curve fit recovers the knobs a table was made with: a table of
 * every collective kind over 2, 4 and 8 devices from 1 KiB to 1 GiB, timed
 * by the S-curve model itself (launch 45 us, 25 GB/s, prep 6 us per 4 MiB
 * chunk, RTT 31 us: XLA's H100 values, rounded), goes through the table
 * format and back, and the fit must return those values.
 *   test_scurve_fit [OUT.pbtxt]   also writes the table (for the CLI test) */
#include "../ts_test.h"
#include "ts_costmodel.h"

#include <math.h>
#include <string.h>

int main(int argc, char **argv) {
  ts_scurve_config_t truth = {.nccl_op_launch_us = 45, .nic_speed_gbps = 25, .chunk_prep_us = 6, .rtt_us = 31,
                              .gpus_per_node = 1, .chunk_size_bytes = 4194304};
  ts_perf_table_t *t = NULL;
  ts_diag_t d = {0};
  EXPECT(ts_perf_table_create(TS_PERF_TABLE_COLLECTIVES, &t) == TS_OK);
  int added = 0;
  for (int kind = 0; kind < TS_COST_COLL_COUNT && t; kind++)
    for (int64_t dev = 2; dev <= 8; dev *= 2)
      for (int64_t bytes = 1024; bytes <= (INT64_C(1) << 30); bytes *= 4) {
        if (kind == TS_COLL_COLLECTIVE_PERMUTE && dev != 2) continue;
        double s;
        int64_t gpus = kind == TS_COLL_COLLECTIVE_PERMUTE ? 2 : dev;
        if (ts_scurve_time(&truth, (ts_coll_kind_t)kind, bytes, gpus, gpus, &s) != TS_OK) continue;
        char fp[32];
        snprintf(fp, sizeof fp, "fit-%d-%lld-%lld", kind, (long long)dev, (long long)bytes);
        ts_coll_measurement_t m = {
            .kind = (ts_coll_kind_t)kind,
            .scheme = kind == TS_COLL_COLLECTIVE_PERMUTE ? TS_SCHEME_TWO_WAY_HAS_NON_MUTUAL : TS_SCHEME_CONTIGUOUS,
            .element_type = 11,
            .tensor_bytes = bytes,
            .devices_per_group = dev,
            .num_groups = 1,
            .throughput_bytes_per_sec = (int64_t)llround((double)bytes / s),
            .fingerprint = fp,
        };
        EXPECT(ts_perf_table_add_collective(t, "host:test", &m, &d) == TS_OK);
        added++;
      }
  ts_coll_measurement_t *ms = NULL;
  size_t n = 0;
  EXPECT(t && ts_perf_table_collectives(t, "host:test", &ms, &n, &d) == TS_OK);
  EXPECT((int)n == added && n > 50);
  ts_scurve_fit_t fit;
  EXPECT(ts_scurve_fit(ms, n, 1, &fit, &d) == TS_OK);
  ts_buf_t b = {0};
  ts_scurve_print_options(&fit.cfg, &b);
  printf("%s\nrms %.4f%% max %.4f%% over %zu points\n", b.data, fit.rms_rel_error, fit.max_rel_error, fit.points);
  EXPECT(fit.cfg.nccl_op_launch_us == 45 && fit.cfg.chunk_prep_us == 6 && fit.cfg.rtt_us == 31);
  EXPECT(fabs(fit.cfg.nic_speed_gbps - 25) < 25e-4);
  EXPECT(fit.cfg.chunk_size_bytes == 4194304);
  EXPECT(fit.points == n && fit.rms_rel_error < 0.01);
  EXPECT(strstr(b.data, "nic_speed_gbps=25,") && strstr(b.data, "rtt_us=31"));
  /* the printed options parse back into the same model */
  ts_scurve_config_t back;
  EXPECT(ts_scurve_preset("h100", &back) == TS_OK && ts_scurve_parse_options(b.data, &back, &d) == TS_OK);
  EXPECT(back.rtt_us == 31 && back.gpus_per_node == 1 && fabs(back.nic_speed_gbps - 25) < 25e-4);
  /* too few points is an error, not a guess */
  EXPECT(ts_scurve_fit(ms, 3, 1, &fit, &d) == TS_ERR_INVALID_ARGUMENT && d.text && strstr(d.text, "at least 4"));
  if (argc > 1) EXPECT(ts_perf_table_write(t, argv[1], &d) == TS_OK);
  ts_buf_free(&b);
  ts_free(ms);
  ts_perf_table_destroy(t);
  ts_diag_free(&d);
  return failures ? 1 : 0;
}
