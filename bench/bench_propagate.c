/* bench_propagate: time of sharding propagation against module size, one
 * table row per input file, and how far ns/instruction drifts from the
 * smallest module to the largest (propagation should be linear: ~1).
 * A benchmark, not a test: it asserts nothing about speed.
 *   bench_propagate [--reps N] FILE...
 * Inputs come from bench/gen_module.py --shard params (scripts/bench.sh). */
#include "bench_util.h"
#include "ts_sharding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 64

/* One run: parse (untimed; propagation mutates the module, so every run
 * needs a fresh one), then propagate, timed. With `check` the module is
 * also verified first, so a bad input reads as such rather than as
 * TS_ERR_INTERNAL from the pass. Returns false after printing why. */
static bool run_once(const ts_source_t *src, bool check, double *t, int64_t *instrs,
                     ts_sharding_propagate_stats_t *stats) {
  ts_diag_t diag = {0};
  ts_hlo_module_t *m = NULL;
  bool ok = false;
  ts_status_t st = ts_hlo_parse(src, NULL, &m, &diag);
  if (st == TS_OK && check) st = ts_hlo_verify(m, NULL, &diag);
  if (st != TS_OK) {
    fprintf(stderr, "bench_propagate: %s: %s\n", src->name, ts_status_string(st));
    if (diag.text) fputs(diag.text, stderr);
    goto done;
  }
  *instrs = ts_bench_count_instrs(m);
  ts_sharding_propagate_opts_t opts = {.stats = stats};
  double t0 = ts_bench_now();
  st = ts_sharding_propagate(m, &opts, &diag);
  *t = ts_bench_now() - t0;
  if (st != TS_OK) {
    fprintf(stderr, "bench_propagate: %s: propagation failed: %s\n", src->name, ts_status_string(st));
    if (diag.text) fputs(diag.text, stderr);
    goto done;
  }
  ok = true;

done:
  ts_hlo_module_destroy(m);
  ts_diag_free(&diag);
  return ok;
}

static int name_width; /* longest file base name */

static void print_header(void) {
  printf("# %-*s %8s  %9s %9s  %9s %9s  %6s %9s %10s %9s %4s\n", name_width, "file", "instrs", "best_ms",
         "median_ms", "best_ns/i", "med_ns/i", "rounds", "annotated", "propagated", "defaulted", "conv");
}

typedef struct {
  int64_t instrs;
  double best_ns, median_ns; /* per instruction */
} row_t;

/* Benchmarks one file; returns 0, or 1 when it could not be read, parsed or
 * propagated. */
static int bench_file(const char *path, int reps, row_t *row) {
  char *text = NULL;
  size_t len = 0;
  ts_diag_t diag = {0};
  if (ts_read_file(path, &text, &len, &diag) != TS_OK) {
    fprintf(stderr, "bench_propagate: %s", diag.text ? diag.text : "cannot read file\n");
    ts_diag_free(&diag);
    return 1;
  }
  ts_source_t src = {path, text, len};
  double t[TS_BENCH_MAX_REPS];
  int64_t instrs = 0;
  ts_sharding_propagate_stats_t stats = {0};
  int rc = 1;
  /* Warm-up run, which also checks the input. */
  if (!run_once(&src, true, &t[0], &instrs, &stats)) goto done;
  for (int r = 0; r < reps; r++)
    if (!run_once(&src, false, &t[r], &instrs, &stats)) goto done;
  double best, median;
  ts_bench_best_median(t, reps, &best, &median);
  row->instrs = instrs;
  row->best_ns = best * 1e9 / (double)instrs;
  row->median_ns = median * 1e9 / (double)instrs;
  printf("  %-*s %8lld  %9.2f %9.2f  %9.1f %9.1f  %6d %9d %10d %9d %4s\n", name_width, ts_bench_base_name(path),
         (long long)instrs, best * 1e3, median * 1e3, row->best_ns, row->median_ns, stats.rounds, stats.annotated,
         stats.propagated, stats.defaulted, stats.converged ? "yes" : "NO");
  fflush(stdout);
  rc = 0;

done:
  ts_free(text);
  return rc;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_propagate [--reps N] FILE...\n"
          "Times ts_sharding_propagate on each HLO file: one warm-up, then N\n"
          "repetitions (default 5, at most %d), each on a freshly parsed module\n"
          "(parsing is not timed); reports the best and the median, ns per\n"
          "instruction, and the propagation stats. With two or more files it\n"
          "ends with ns/instruction of the largest module over the smallest's.\n"
          "Inputs: bench/gen_module.py -n N --shard params -o FILE.\n",
          TS_BENCH_MAX_REPS);
}

int main(int argc, char **argv) {
  int reps, i;
  int early = ts_bench_args(argc, argv, "bench_propagate", usage, &reps, &i, &name_width);
  if (early >= 0) return early;
  if (argc - i > MAX_FILES) {
    fprintf(stderr, "bench_propagate: at most %d files\n", MAX_FILES);
    return 2;
  }
  printf("# bench_propagate: %d repetition%s after 1 warm-up; ns/i = ns per instruction\n", reps,
         reps == 1 ? "" : "s");
  print_header();
  row_t rows[MAX_FILES];
  int nrows = 0, rc = 0;
  for (; i < argc; i++) {
    if (bench_file(argv[i], reps, &rows[nrows]) == 0)
      nrows++;
    else
      rc = 1;
  }
  if (nrows >= 2) {
    const row_t *lo = &rows[0], *hi = &rows[0];
    for (int r = 1; r < nrows; r++) {
      if (rows[r].instrs < lo->instrs) lo = &rows[r];
      if (rows[r].instrs > hi->instrs) hi = &rows[r];
    }
    printf("# linearity: ns/instruction at %lld instrs over %lld instrs = %.2f (best), %.2f (median); "
           "linear ~ 1\n",
           (long long)hi->instrs, (long long)lo->instrs, hi->best_ns / lo->best_ns, hi->median_ns / lo->median_ns);
  }
  return rc;
}
