/* The S-curve model against hand-computed cases (reference §1.4 formulas, XLA's
 * H100 and B200 defaults), and its option string. Worked example, H100,
 * all-reduce of 256 MiB over 2 nodes, 1 communicator:
 *   G = 2*8/1 = 16 GPUs, per = 268435456/16 = 16777216 B, g = 16/2 = 8
 *   Transfer = 16777216 / 25.0020008e9 * 1e6 * 1.025 = 687.8108 us
 *   ChunkPrep = ceil(16777216/4194304) = 4 chunks * 6.0029998 = 24.0120 us
 *   step = 687.8108 + 24.0120 + 31.0005 = 742.8233 us
 *   t = 742.8233 * 15/8 * 2 rounds + 45 launch = 2830.587 us
 * (the reference's own worked numbers: 2830.6, 1437.8, 183.8, 2923.3, 6402.4). */
#include <math.h>
#include <string.h>

#include "ts_costmodel.h"
#include "../ts_test.h"

static double us(const ts_scurve_config_t *c, ts_coll_kind_t k, int64_t bytes, int64_t nodes, int64_t comms) {
  int64_t gpus = 0;
  double s = -1;
  EXPECT(ts_scurve_gpus_per_comm(c, k, nodes, comms, &gpus) == TS_OK);
  EXPECT(ts_scurve_time(c, k, bytes, gpus, nodes, &s) == TS_OK);
  return s * 1e6;
}

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * (b))
#define MiB ((int64_t)1 << 20)

static void test_presets(void) {
  ts_scurve_config_t h, b, u;
  EXPECT(ts_scurve_preset("h100", &h) == TS_OK);
  EXPECT(ts_scurve_preset("b200", &b) == TS_OK);
  EXPECT(ts_scurve_preset("unknown", &u) == TS_OK);
  EXPECT(ts_scurve_preset("a100", &u) == TS_ERR_INVALID_ARGUMENT);
  /* raw x 0.45, rounded to float (reference §1.2) */
  EXPECT(fabs(h.nic_speed_gbps - 25.0020008) < 1e-7 && fabs(h.chunk_prep_us - 6.0029998) < 1e-7 &&
         fabs(h.rtt_us - 31.0004997) < 1e-7 && h.nccl_op_launch_us == 45);
  EXPECT(fabs(b.nic_speed_gbps - 50.0040016) < 1e-7 && fabs(b.chunk_prep_us - 2.0025) < 1e-6 &&
         fabs(b.rtt_us - 21.0014992) < 1e-7 && b.nccl_op_launch_us == 45);
  EXPECT(u.nic_speed_gbps == b.nic_speed_gbps && u.chunk_prep_us == h.chunk_prep_us && u.rtt_us == h.rtt_us);
  EXPECT(h.gpus_per_node == 8 && h.chunk_size_bytes == 4194304 && h.partition_size == 0);
}

static void test_times(void) {
  ts_scurve_config_t h, b;
  ts_scurve_preset("h100", &h);
  ts_scurve_preset("b200", &b);
  /* each case on H100 (the worked example above) and on B200 */
  static const struct {
    ts_coll_kind_t kind;
    int64_t bytes, nodes, comms;
    double h100_us, b200_us;
  } cases[] = {
      {TS_COLL_ALL_REDUCE, 256 * MiB, 2, 1, 2830.5874040292774, 1443.438389428808},
      {TS_COLL_ALL_GATHER, 256 * MiB, 2, 1, 1437.7937020146387, 744.219194714404},
      {TS_COLL_REDUCE_SCATTER, 256 * MiB, 2, 1, 1437.7937020146387, 744.219194714404},
      /* latency floor: per = 64 B, 1 chunk: (0.0026 + 6.003 + 31.0005) * 15/8 * 2 + 45 */
      {TS_COLL_ALL_REDUCE, 1024, 2, 1, 183.7729623671849, 131.2699167309443},
      /* send/recv: G = 2, per = the whole buffer, one step */
      {TS_COLL_COLLECTIVE_PERMUTE, 64 * MiB, 2, 1, 2923.291731788537, 1473.6631178626524},
      /* all-to-all: 8 off-node peers, 268435456/15 = 17895697 B each, 5 chunks */
      {TS_COLL_ALL_TO_ALL, 256 * MiB, 2, 1, 6402.442869730333, 3227.7714360095756},
      /* 4 nodes, 2 communicators: G = 16, g = 4 */
      {TS_COLL_ALL_GATHER, 1024 * MiB, 4, 2, 10838.593994207014, 5402.486691984946},
      /* 8 communicators over 4 nodes: G = 4, one GPU per node, 3 peers */
      {TS_COLL_ALL_TO_ALL, MiB, 4, 8, 198.9986330823401, 135.50606497905153},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double th = us(&h, cases[i].kind, cases[i].bytes, cases[i].nodes, cases[i].comms);
    double tb = us(&b, cases[i].kind, cases[i].bytes, cases[i].nodes, cases[i].comms);
    if (!NEAR(th, cases[i].h100_us) || !NEAR(tb, cases[i].b200_us)) {
      fprintf(stderr, "FAIL case %zu: got %.13g (h100), %.13g (b200) us, want %.13g, %.13g\n", i, th, tb,
              cases[i].h100_us, cases[i].b200_us);
      failures++;
    }
  }

  /* NumGpusPerComm: gpus_per_node must divide by the communicator count */
  int64_t g;
  EXPECT(ts_scurve_gpus_per_comm(&h, TS_COLL_ALL_REDUCE, 2, 3, &g) == TS_ERR_INVALID_ARGUMENT);
  double s;
  EXPECT(ts_scurve_time(&h, TS_COLL_ALL_REDUCE, 1024, 1, 1, &s) == TS_ERR_INVALID_ARGUMENT);
  EXPECT(ts_scurve_time(&h, TS_COLL_ALL_REDUCE, 1024, 4, 8, &s) == TS_ERR_INVALID_ARGUMENT);
}

static void expect_error(const char *opts, const char *want) {
  ts_scurve_config_t c, before;
  ts_scurve_preset("h100", &c);
  before = c;
  ts_diag_t d = {0};
  EXPECT(ts_scurve_parse_options(opts, &c, &d) == TS_ERR_INVALID_ARGUMENT);
  EXPECT(d.text && strcmp(d.text, want) == 0);
  if (d.text && strcmp(d.text, want) != 0) fprintf(stderr, "  got:  %s  want: %s", d.text, want);
  EXPECT(memcmp(&c, &before, sizeof c) == 0); /* unchanged on error */
  ts_diag_free(&d);
}

static void test_options(void) {
  ts_scurve_config_t c;
  ts_scurve_preset("h100", &c);
  EXPECT(ts_scurve_parse_options("nic_speed_gbps=12.5,gpus_per_node=4,nccl_op_launch_us=10,chunk_prep_us=2,"
                                 "rtt_us=7,chunk_size_bytes=1048576,partition_size=16",
                                 &c, NULL) == TS_OK);
  EXPECT(c.nic_speed_gbps == 12.5 && c.gpus_per_node == 4 && c.nccl_op_launch_us == 10 && c.chunk_prep_us == 2 &&
         c.rtt_us == 7 && c.chunk_size_bytes == 1048576 && c.partition_size == 16);
  EXPECT(ts_scurve_parse_options("", &c, NULL) == TS_OK && c.rtt_us == 7);
  /* hand check with the new knobs: all-gather 4 MiB over 2 nodes x 4 GPUs:
   * G = 8, per = 524288 B, g = 4; transfer = 524288/12.5e9*1e6*1.025 = 42.991616 us,
   * 1 chunk = 2 us, rtt 7 -> step 51.991616; * 7/4 = 90.985328; + 10 = 100.985328 */
  double s;
  EXPECT(ts_scurve_time(&c, TS_COLL_ALL_GATHER, 4 * MiB, 8, 2, &s) == TS_OK && NEAR(s * 1e6, 100.985328));

  expect_error("rtt_us=31.5", "error: analytical option 'rtt_us=31.5': rtt_us takes a positive integer\n");
  expect_error("gpus_per_node=0", "error: analytical option 'gpus_per_node=0': gpus_per_node takes a positive integer\n");
  expect_error("nic_speed_gbps=fast",
               "error: analytical option 'nic_speed_gbps=fast': nic_speed_gbps takes a positive number\n");
  expect_error("nic_speed_gbps=-3",
               "error: analytical option 'nic_speed_gbps=-3': nic_speed_gbps takes a positive number\n");
  expect_error("rtt_us=5,nic_speed=3",
               "error: analytical option 'nic_speed=3': unknown key 'nic_speed' (known: nccl_op_launch_us, "
               "nic_speed_gbps, chunk_prep_us, rtt_us, gpus_per_node, chunk_size_bytes, partition_size)\n");
  expect_error("rtt_us", "error: analytical option 'rtt_us': expected key=value\n");
  expect_error("rtt_us=5,,gpus_per_node=2",
               "error: analytical options 'rtt_us=5,,gpus_per_node=2': empty item (expected key=value,key=value)\n");
  expect_error("chunk_size_bytes=", "error: analytical option 'chunk_size_bytes=': chunk_size_bytes takes a positive integer\n");
}

int main(void) {
  test_presets();
  test_times();
  test_options();
  return failures != 0;
}
