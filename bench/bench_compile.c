/* bench_compile: wall time of each compile stage on the way `tessera run
 * --compile-only` goes (parse, verify, partition with the whole-module
 * program check first, schedule, assign buffers), from the pipeline's own
 * stage clocks, wall and CPU. A benchmark, not a test.
 *   bench_compile [--reps N] FILE...
 * Inputs: bench/gen_module.py -n N; bench/bench_compile.sh prints issue
 * 19's table (10k, 100k, 1M instructions). */
#include "bench_util.h"
#include "ts_costmodel.h"
#include "ts_pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { C_PARSE, C_VERIFY, C_PARTITION, C_PVERIFY, C_SCHEDULE, C_ASSIGN, C_FREE, C_TOTAL, NCOLS };
static const char *const col_name[NCOLS] = {"parse", "verify", "partition", "verify_pm", "schedule",
                                            "assign", "free", "total"};

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One compile of `path` as tessera run --compile-only does it; wall seconds
 * into t[], CPU seconds into c[]. */
static bool run_once(const char *path, double *t, double *c, int64_t *instrs) {
  ts_diag_t diag = {0};
  ts_pipeline_t p;
  ts_costmodel_t *cm = NULL;
  double c0 = cpu_now(), w0 = ts_bench_now();
  ts_pipeline_init(&p, &(ts_pipeline_opts_t){.purpose = TS_PIPELINE_RUN, .path = path});
  ts_status_t st = ts_pipeline_run_to(&p, TS_STAGE_VERIFIED, &diag);
  if (st == TS_OK) {
    *instrs = ts_bench_count_instrs(p.m);
    int64_t parts = p.m->num_partitions > 1 ? p.m->num_partitions : 1;
    int64_t reps = p.m->replica_count > 0 ? p.m->replica_count : 1;
    p.o.program = (ts_rt_program_opts_t){.replica_count = reps, .num_partitions = parts};
    if (parts > 1) {
      ts_partition_opts_default(&p.o.partition);
      p.o.partition.num_partitions = parts;
      p.o.runnable_first = true;
      st = ts_pipeline_run_to(&p, TS_STAGE_PARTITIONED, &diag);
    } else {
      ts_pipeline_skip(&p, TS_STAGE_PARTITIONED);
    }
  }
  if (st == TS_OK && (st = ts_costmodel_parse_spec(NULL, "host", &cm, &diag)) == TS_OK) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    ts_costmodel_share_host(cm, cores > 0 ? (double)cores : 1, 1);
    ts_sched_opts_default(&p.o.sched);
    p.o.sched.cost = cm;
    if (ts_pipeline_partitioned(&p)) st = ts_pipeline_run_to(&p, TS_STAGE_SCHEDULED, &diag);
    else ts_pipeline_skip(&p, TS_STAGE_SCHEDULED);
    p.o.sched.cost = NULL;
  }
  if (st == TS_OK) st = ts_pipeline_run_to(&p, TS_STAGE_ASSIGNED, &diag);
  if (st != TS_OK) {
    fprintf(stderr, "bench_compile: %s: %s\n", path, ts_status_string(st));
    if (diag.text) fputs(diag.text, stderr);
  }
  t[C_PARSE] = p.run_s[TS_STAGE_PARSED];
  t[C_VERIFY] = p.run_s[TS_STAGE_VERIFIED];
  t[C_PARTITION] = p.run_s[TS_STAGE_PARTITIONED];
  t[C_PVERIFY] = p.verify_s[TS_STAGE_PARTITIONED] + p.verify_s[TS_STAGE_SCHEDULED] + p.verify_s[TS_STAGE_ASSIGNED];
  t[C_SCHEDULE] = p.run_s[TS_STAGE_SCHEDULED];
  t[C_ASSIGN] = p.run_s[TS_STAGE_ASSIGNED];
  c[C_PARSE] = p.run_cpu_s[TS_STAGE_PARSED];
  c[C_VERIFY] = p.run_cpu_s[TS_STAGE_VERIFIED];
  c[C_PARTITION] = p.run_cpu_s[TS_STAGE_PARTITIONED];
  c[C_PVERIFY] = p.verify_cpu_s[TS_STAGE_PARTITIONED] + p.verify_cpu_s[TS_STAGE_SCHEDULED] +
                 p.verify_cpu_s[TS_STAGE_ASSIGNED];
  c[C_SCHEDULE] = p.run_cpu_s[TS_STAGE_SCHEDULED];
  c[C_ASSIGN] = p.run_cpu_s[TS_STAGE_ASSIGNED];
  double f0 = ts_bench_now(), fc0 = cpu_now();
  ts_pipeline_fini(&p);
  ts_costmodel_destroy(cm);
  ts_diag_free(&diag);
  double w1 = ts_bench_now(), c1 = cpu_now();
  t[C_FREE] = w1 - f0;
  c[C_FREE] = c1 - fc0;
  t[C_TOTAL] = w1 - w0;
  c[C_TOTAL] = c1 - c0;
  return st == TS_OK;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_compile [--reps N] FILE...\n"
          "Compiles each HLO file as tessera run --compile-only does, N times\n"
          "(default 5, at most %d; no warm-up), and prints the median wall\n"
          "and CPU seconds of each stage (verify_pm: the verifications of the\n"
          "partitioned, scheduled and assigned module), of freeing it all, and\n"
          "the total.\n",
          TS_BENCH_MAX_REPS);
}

int main(int argc, char **argv) {
  int reps, first, width;
  int early = ts_bench_args(argc, argv, "bench_compile", usage, &reps, &first, &width);
  if (early >= 0) return early;
  printf("# bench_compile: median of %d run%s, seconds (wall: CLOCK_MONOTONIC; cpu: the process's)\n", reps,
         reps == 1 ? "" : "s");
  printf("# %-*s %8s %5s", width, "file", "instrs", "clock");
  for (int c = 0; c < NCOLS; c++) printf(" %9s", col_name[c]);
  printf("\n");
  int rc = 0;
  static double t[2][NCOLS][TS_BENCH_MAX_REPS];
  for (int f = first; f < argc; f++) {
    int64_t instrs = 0;
    bool ok = true;
    for (int r = 0; ok && r < reps; r++) {
      double wall[NCOLS], cpu[NCOLS];
      ok = run_once(argv[f], wall, cpu, &instrs);
      for (int c = 0; c < NCOLS; c++) t[0][c][r] = wall[c], t[1][c][r] = cpu[c];
    }
    if (!ok) {
      rc = 1;
      continue;
    }
    for (int k = 0; k < 2; k++) {
      printf("  %-*s %8lld %5s", width, ts_bench_base_name(argv[f]), (long long)instrs, k ? "cpu" : "wall");
      for (int c = 0; c < NCOLS; c++) {
        double best, median;
        ts_bench_best_median(t[k][c], reps, &best, &median);
        printf(" %9.3f", median);
      }
      printf("\n");
    }
    fflush(stdout);
  }
  return rc;
}
