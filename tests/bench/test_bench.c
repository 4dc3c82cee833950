/* bench/ (ts_bench.h): the collector's statistics and labels on
 * hand-computed values, the size syntax, nccl-tests' bus bandwidth factors,
 * and one small collective benchmark on two in-process ranks whose checked
 * iterations must find no wrong element. */
#include "ts_bench.h"
#include "ts_test.h"

#include <string.h>

static bool label(void (*fmt)(int64_t, char *, size_t), int64_t v, const char *want) {
  char buf[32];
  fmt(v, buf, sizeof buf);
  if (strcmp(buf, want) != 0) fprintf(stderr, "%lld: got '%s', want '%s'\n", (long long)v, buf, want);
  return strcmp(buf, want) == 0;
}

static bool duration(double s, const char *want) {
  char buf[32];
  ts_bench_format_duration(s, buf, sizeof buf);
  if (strcmp(buf, want) != 0) fprintf(stderr, "%g s: got '%s', want '%s'\n", s, buf, want);
  return strcmp(buf, want) == 0;
}

int main(int argc, char **argv) {
  double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2}, one[] = {5}, spread[] = {9, 1e6, 8, 7, 10};
  EXPECT(ts_bench_median(odd, 3) == 2);
  EXPECT(ts_bench_median(even, 4) == 2.5);
  EXPECT(ts_bench_median(one, 1) == 5);
  EXPECT(ts_bench_median(spread, 5) == 9); /* an outlier does not move it */

  EXPECT(label(ts_bench_format_bytes, 1024, "1K"));
  EXPECT(label(ts_bench_format_bytes, 3 << 20, "3M"));
  EXPECT(label(ts_bench_format_bytes, 1000, "1000"));
  EXPECT(label(ts_bench_format_bytes, 1536, "1536"));
  EXPECT(label(ts_bench_format_bytes, (int64_t)2 << 30, "2G"));
  EXPECT(label(ts_bench_format_bytes, (int64_t)1 << 40, "1024G"));
  EXPECT(duration(0.85, "850ms"));
  EXPECT(duration(42, "42s"));
  EXPECT(duration(185, "3m05s"));
  EXPECT(duration(3720, "1h02m"));

  int64_t v = 0;
  EXPECT(ts_bench_parse_size("4K", &v) && v == 4096);
  EXPECT(ts_bench_parse_size("1.5M", &v) && v == 1572864);
  EXPECT(ts_bench_parse_size("2GB", &v) && v == (int64_t)2 << 30);
  EXPECT(ts_bench_parse_size("8G", &v) && v == (int64_t)8 << 30);
  EXPECT(!ts_bench_parse_size("16G", &v));
  EXPECT(!ts_bench_parse_size("0", &v));
  EXPECT(!ts_bench_parse_size("4X", &v));

  EXPECT(ts_bench_busbw_factor(TS_COLL_ALL_REDUCE, 4) == 1.5);
  EXPECT(ts_bench_busbw_factor(TS_COLL_ALL_GATHER, 4) == 0.75);
  EXPECT(ts_bench_busbw_factor(TS_COLL_REDUCE_SCATTER, 8) == 0.875);
  EXPECT(ts_bench_busbw_factor(TS_COLL_BROADCAST, 8) == 1);

  char a[33], b[33], c[33];
  ts_bench_fingerprint("tessera collective all-reduce 1", a);
  ts_bench_fingerprint("tessera collective all-reduce 1", b);
  ts_bench_fingerprint("tessera collective all-reduce 2", c);
  EXPECT(strlen(a) == 32 && strspn(a, "0123456789abcdef") == 32);
  EXPECT(strcmp(a, b) == 0 && strcmp(a, c) != 0);
  EXPECT(ts_bench_xla_type(TS_F32) == 11 && ts_bench_xla_type(TS_BF16) == 16 && ts_bench_xla_type(TS_S32) == 4);

  ts_bench_coll_opts_t o = {.minb = 4096, .maxb = 16384, .factor = 2, .iters = 2, .warmup = 1, .check = 1,
                            .type = TS_F32, .op = TS_COLL_SUM, .backend = TS_COLL_BACKEND_THREADS, .devices = 2};
  for (int k = 0; k < TS_BENCH_COLL_NKINDS; k++) o.kinds[ts_bench_coll_kinds[k]] = true;
  EXPECT(ts_bench_collectives(&o, &argc, &argv) == 0);
  return failures != 0;
}
