/* The combined cost model: --cost-model / --cost-model-preset values, the
 * order sources answer in, the errors a user gets, and the host roofline
 * shared by the devices of one host. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ts_costmodel.h"
#include "../ts_test.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * fabs(b))

static char dir[] = "/tmp/ts_cmspec_XXXXXX";
static char coll_path[128], gemm_path[128], multi_path[128];

/* One collective table (all-gather, 2 devices: 1 KiB at 1 GB/s, 1 MiB at 100 GB/s)
 * and GEMM tables with one and with two devices. */
static void write_tables(void) {
  EXPECT(mkdtemp(dir) != NULL);
  snprintf(coll_path, sizeof coll_path, "%s/coll.txtpb", dir);
  snprintf(gemm_path, sizeof gemm_path, "%s/gemm.pb", dir);
  snprintf(multi_path, sizeof multi_path, "%s/multi.pbtxt", dir);
  ts_perf_table_t *c, *g;
  ts_perf_table_create(TS_PERF_TABLE_COLLECTIVES, &c);
  ts_coll_measurement_t m1 = {TS_COLL_ALL_GATHER, TS_SCHEME_CONTIGUOUS, 11, 1024, 2, 1, 1000000000, "a"};
  ts_coll_measurement_t m2 = {TS_COLL_ALL_GATHER, TS_SCHEME_CONTIGUOUS, 11, 1 << 20, 2, 1, 100000000000, "b"};
  EXPECT(ts_perf_table_add_collective(c, "sm_90", &m1, NULL) == TS_OK);
  EXPECT(ts_perf_table_add_collective(c, "sm_90", &m2, NULL) == TS_OK);
  EXPECT(ts_perf_table_write(c, coll_path, NULL) == TS_OK);
  ts_perf_table_create(TS_PERF_TABLE_GEMM, &g);
  ts_gemm_measurement_t gm = {1, 256, 256, 256, "bf16xbf16->bf16", 1000000000000};
  EXPECT(ts_perf_table_add_gemm(g, "sm_90", &gm, NULL) == TS_OK);
  EXPECT(ts_perf_table_write(g, gemm_path, NULL) == TS_OK);
  gm.flops = 2000000000000;
  EXPECT(ts_perf_table_add_gemm(g, "sm_100_B200", &gm, NULL) == TS_OK);
  EXPECT(ts_perf_table_write(g, multi_path, NULL) == TS_OK);
  ts_perf_table_destroy(c);
  ts_perf_table_destroy(g);
}

static void expect_error(const char *spec, const char *preset, const char *want) {
  ts_costmodel_t *m = NULL;
  ts_diag_t d = {0};
  EXPECT(ts_costmodel_parse_spec(spec, preset, &m, &d) < 0 && m == NULL);
  EXPECT(d.text && strcmp(d.text, want) == 0);
  if (d.text && strcmp(d.text, want) != 0) fprintf(stderr, "  got:  %s  want: %s", d.text, want);
  ts_diag_free(&d);
}

static void test_combined(void) {
  char spec[512];
  snprintf(spec, sizeof spec, "table:%s,%s;analytical:rtt_us=10", coll_path, gemm_path);
  ts_costmodel_t *m = NULL;
  ts_diag_t d = {0};
  EXPECT(ts_costmodel_parse_spec(spec, "h100", &m, &d) == TS_OK);
  if (d.text) fprintf(stderr, "%s", d.text);
  if (!m) return;
  EXPECT(ts_costmodel_num_sources(m) == 3); /* the explicit analytical replaced the preset's */
  double s;
  const char *src = NULL;
  /* within a slice: the table (exact hit 1024 B / 1e9 B/s) */
  ts_coll_query_t q = {TS_COLL_ALL_GATHER, 1024, 2, 1, TS_SCHEME_CONTIGUOUS, 1};
  EXPECT(ts_costmodel_collective_time(m, &q, &s, &src) == TS_OK && NEAR(s, 1024e-9) && strcmp(src, "table") == 0);
  /* across 2 slices: the S-curve with H100 defaults and rtt 10 us:
   * G = 16, per = 64 KiB; transfer = 65536/25.0020008e9*1e6*1.025 = 2.6867 us,
   * 1 chunk 6.0030, rtt 10 -> 18.6897 * 15/8 = 35.0432 + 45 = 80.0432 us */
  q = (ts_coll_query_t){TS_COLL_ALL_GATHER, 1 << 20, 16, 1, TS_SCHEME_CONTIGUOUS, 2};
  EXPECT(ts_costmodel_collective_time(m, &q, &s, &src) == TS_OK && strcmp(src, "analytical") == 0);
  double transfer = 65536 / ((double)(float)(55.56 * 0.45) * 1e9) * 1e6 * 1.025;
  double want = ((transfer + (double)(float)(13.34 * 0.45) + 10) * 15 / 8 + 45) * 1e-6;
  EXPECT(NEAR(s, want) && fabs(s - 80.0432e-6) < 1e-9);
  /* a collective the table lacks, within a slice: nobody covers it */
  q = (ts_coll_query_t){TS_COLL_ALL_TO_ALL, 1024, 2, 1, TS_SCHEME_CONTIGUOUS, 1};
  EXPECT(ts_costmodel_collective_time(m, &q, &s, &src) == TS_ERR_UNSUPPORTED);
  /* dots: the GEMM table */
  ts_dot_query_t dq = {1, 256, 256, 256, "bf16xbf16->bf16"};
  EXPECT(ts_costmodel_dot_time(m, &dq, &s, &src) == TS_OK && NEAR(s, 2.0 * 256 * 256 * 256 / 1e12));
  /* the nearest mode through the model: 1 MiB / 100 GB/s for 600 KiB snaps up */
  ts_costmodel_set_interp_mode(m, TS_INTERP_NEAREST);
  q = (ts_coll_query_t){TS_COLL_ALL_GATHER, 600 << 10, 2, 1, TS_SCHEME_CONTIGUOUS, 1};
  EXPECT(ts_costmodel_collective_time(m, &q, &s, &src) == TS_OK && NEAR(s, (600 << 10) / 1e11));
  ts_costmodel_destroy(m);

  /* a preset alone: the preset's analytical model */
  EXPECT(ts_costmodel_parse_spec(NULL, "b200", &m, NULL) == TS_OK && ts_costmodel_num_sources(m) == 1);
  q = (ts_coll_query_t){TS_COLL_COLLECTIVE_PERMUTE, 64 << 20, 8, 1, TS_SCHEME_TWO_WAY_HAS_NON_MUTUAL, 2};
  EXPECT(ts_costmodel_collective_time(m, &q, &s, NULL) == TS_OK && fabs(s * 1e6 - 1473.6631178626524) < 1e-6);
  ts_costmodel_destroy(m);
  /* the preset picks the device of a table with several */
  snprintf(spec, sizeof spec, "table:%s", multi_path);
  EXPECT(ts_costmodel_parse_spec(spec, "b200", &m, NULL) == TS_OK);
  EXPECT(m && ts_costmodel_dot_time(m, &dq, &s, NULL) == TS_OK && NEAR(s, 2.0 * 256 * 256 * 256 / 2e12));
  ts_costmodel_destroy(m);
  snprintf(spec, sizeof spec, "table:%s@sm_90", multi_path);
  EXPECT(ts_costmodel_parse_spec(spec, NULL, &m, NULL) == TS_OK);
  EXPECT(m && ts_costmodel_dot_time(m, &dq, &s, NULL) == TS_OK && NEAR(s, 2.0 * 256 * 256 * 256 / 1e12));
  ts_costmodel_destroy(m);
  /* the host preset names this machine's tables */
  char key[256];
  ts_costmodel_host_device_key(key, sizeof key);
  EXPECT(strncmp(key, "host:", 5) == 0 && strlen(key) > 5);
}

static void test_errors(void) {
  char spec[512], want[1024];
  expect_error("roofline", NULL,
               "error: cost model 'roofline': unknown kind (expected analytical[:OPTIONS] or table:PATH[,PATH...])\n");
  expect_error("table:", NULL, "error: cost model 'table:': no table path (expected table:PATH[,PATH...])\n");
  expect_error(NULL, "a100", "error: cost model preset 'a100' is not one of h100, b200, host\n");
  expect_error("analytical:rtt_us=x", "h100", "error: analytical option 'rtt_us=x': rtt_us takes a positive integer\n");
  snprintf(spec, sizeof spec, "table:%s", multi_path);
  snprintf(want, sizeof want,
           "%s: error: the table has 2 devices ('sm_90', 'sm_100_B200'): choose one with --cost-model-preset or "
           "table:PATH@DEVICE\n",
           multi_path);
  expect_error(spec, NULL, want);
  snprintf(spec, sizeof spec, "table:%s", coll_path);
  snprintf(want, sizeof want, "%s: error: the table has no device 'sm_100_B200' (it has 'sm_90')\n", coll_path);
  expect_error(spec, "b200", want);
  snprintf(spec, sizeof spec, "table:%s/missing.pb", dir);
  snprintf(want, sizeof want, "error: cannot open '%s/missing.pb': No such file or directory\n", dir);
  expect_error(spec, NULL, want);
}

/* The host preset is one core's compute and the host's bandwidth: 4
 * devices on 2 cores compute at half a core and get a quarter of the
 * bandwidth; 2 on 8 cores at 4 cores; GPU presets stay per device. */
static void test_share_host(void) {
  ts_roofline_t host, r;
  EXPECT(ts_roofline_preset("host", &host) == TS_OK);
  r = host;
  ts_roofline_share_host(&r, 2, 4);
  EXPECT(NEAR(r.matmul_f32_flops, 0.5 * host.matmul_f32_flops) && NEAR(r.vector_flops, 0.5 * host.vector_flops));
  EXPECT(NEAR(r.mem_bytes_per_sec, host.mem_bytes_per_sec / 4));
  EXPECT(NEAR(ts_roofline_time(&r, 1e9, r.matmul_f32_flops, 0), 2 * ts_roofline_time(&host, 1e9, host.matmul_f32_flops, 0)));
  r = host;
  ts_roofline_share_host(&r, 8, 2);
  EXPECT(NEAR(r.matmul_flops, 4 * host.matmul_flops) && NEAR(r.mem_bytes_per_sec, host.mem_bytes_per_sec / 2));
  r = host;
  ts_roofline_share_host(&r, 2, 0); /* no devices: unchanged */
  EXPECT(NEAR(r.matmul_flops, host.matmul_flops));
  ts_roofline_t h100, g;
  EXPECT(ts_roofline_preset("h100", &h100) == TS_OK);
  g = h100;
  ts_roofline_share_host(&g, 2, 8);
  EXPECT(NEAR(g.matmul_flops, h100.matmul_flops) && NEAR(g.mem_bytes_per_sec, h100.mem_bytes_per_sec));
  ts_costmodel_t *m = NULL;
  EXPECT(ts_costmodel_parse_spec(NULL, "host", &m, NULL) == TS_OK && m);
  if (m) {
    ts_costmodel_share_host(m, 2, 4);
    EXPECT(NEAR(ts_costmodel_roofline(m)->matmul_f32_flops, 0.5 * host.matmul_f32_flops));
    ts_costmodel_destroy(m);
  }
}

int main(void) {
  write_tables();
  test_share_host();
  test_combined();
  test_errors();
  unlink(coll_path);
  unlink(gemm_path);
  unlink(multi_path);
  rmdir(dir);
  return failures != 0;
}
