/* bench_partition: time of the SPMD partitioner (propagation included, as
 * ts_partition runs it) against module size and device count, one row per
 * input file, with the propagation alone beside it. A benchmark, not a
 * test: it asserts nothing about speed.
 *   bench_partition [--reps N] FILE...
 * The device count is each module's num_partitions, else the device count
 * its first tiled sharding names. Inputs: bench/gen_module.py --shard params
 * --partitions P; the device-count sweep is
 *   for p in 2 4 8 16 32 64; do
 *     bench/gen_module.py -n 10000 --shard params --partitions $p -o gen_$p.hlo; done
 *   bench_partition --reps 7 gen_{2,4,8,16,32,64}.hlo */
#include "bench_util.h"
#include "ts_partitioner.h"
#include "ts_sharding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The device count of a module: num_partitions, else its first sharding's. */
static int64_t devices_of(const ts_hlo_module_t *m) {
  if (m->num_partitions > 1) return m->num_partitions;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      const ts_sharding_t *s = m->comps[c]->instrs[k]->sharding;
      if (s && s->kind == TS_SHARD_TILED) return s->devices.n;
    }
  return 1;
}

/* One run on a freshly parsed module (parsing not timed): ts_partition
 * into *t, or with `prop_only` ts_sharding_propagate alone. */
static bool run_once(const ts_source_t *src, bool prop_only, double *t, int64_t *instrs, int64_t *devices,
                     int64_t *out_instrs) {
  ts_diag_t diag = {0};
  ts_hlo_module_t *m = NULL, *out = NULL;
  bool ok = false;
  ts_status_t st = ts_hlo_parse(src, NULL, &m, &diag);
  if (st == TS_OK) st = ts_hlo_verify(m, NULL, &diag);
  if (st == TS_OK && prop_only) {
    double t0 = ts_bench_now();
    st = ts_sharding_propagate(m, NULL, &diag);
    *t = ts_bench_now() - t0;
  } else if (st == TS_OK) {
    *instrs = ts_bench_count_instrs(m);
    *devices = devices_of(m);
    ts_partition_opts_t o;
    ts_partition_opts_default(&o);
    o.num_partitions = *devices;
    double t0 = ts_bench_now();
    st = ts_partition(m, &o, &out, &diag);
    *t = ts_bench_now() - t0;
    if (st == TS_OK) *out_instrs = ts_bench_count_instrs(out);
  }
  if (st != TS_OK) {
    fprintf(stderr, "bench_partition: %s: %s\n", src->name, ts_status_string(st));
    if (diag.text) fputs(diag.text, stderr);
  } else {
    ok = true;
  }
  ts_hlo_module_destroy(out);
  ts_hlo_module_destroy(m);
  ts_diag_free(&diag);
  return ok;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_partition [--reps N] FILE...\n"
          "Times ts_partition (sharding propagation included) on each HLO file:\n"
          "one warm-up, then N repetitions (default 5, at most %d) on freshly\n"
          "parsed modules; reports best and median, us per instruction, the\n"
          "median of the propagation alone (prop_ms), and the partitioned\n"
          "module's size.\n",
          TS_BENCH_MAX_REPS);
}

int main(int argc, char **argv) {
  int reps, first, width;
  int early = ts_bench_args(argc, argv, "bench_partition", usage, &reps, &first, &width);
  if (early >= 0) return early;
  printf("# bench_partition: %d repetition%s after 1 warm-up\n", reps, reps == 1 ? "" : "s");
  printf("# %-*s %8s %8s %10s %10s %9s %9s %10s\n", width, "file", "instrs", "devices", "best_ms", "median_ms",
         "med_us/i", "prop_ms", "out_instrs");
  int rc = 0;
  for (int f = first; f < argc; f++) {
    char *text = NULL;
    size_t len = 0;
    ts_diag_t diag = {0};
    if (ts_read_file(argv[f], &text, &len, &diag) != TS_OK) {
      fprintf(stderr, "bench_partition: %s", diag.text ? diag.text : "cannot read file\n");
      ts_diag_free(&diag);
      rc = 1;
      continue;
    }
    ts_source_t src = {argv[f], text, len};
    double t[TS_BENCH_MAX_REPS], tp[TS_BENCH_MAX_REPS];
    int64_t instrs = 0, devices = 0, out_instrs = 0;
    bool ok = run_once(&src, false, &t[0], &instrs, &devices, &out_instrs);
    for (int r = 0; ok && r < reps; r++) ok = run_once(&src, false, &t[r], &instrs, &devices, &out_instrs);
    for (int r = 0; ok && r < reps; r++) ok = run_once(&src, true, &tp[r], &instrs, &devices, &out_instrs);
    ts_free(text);
    if (!ok) {
      rc = 1;
      continue;
    }
    double best, median, pbest, pmedian;
    ts_bench_best_median(t, reps, &best, &median);
    ts_bench_best_median(tp, reps, &pbest, &pmedian);
    printf("  %-*s %8lld %8lld %10.2f %10.2f %9.2f %9.2f %10lld\n", width, ts_bench_base_name(argv[f]),
           (long long)instrs, (long long)devices, best * 1e3, median * 1e3, median * 1e6 / (double)instrs,
           pmedian * 1e3, (long long)out_instrs);
    fflush(stdout);
  }
  return rc;
}
