/* What the benchmarks share: a monotonic clock, best/median of repeated
 * timings, and small helpers for their tables. */
#ifndef TS_BENCH_UTIL_H
#define TS_BENCH_UTIL_H

#include "ts_hlo.h"

#include <stdbool.h>
#include <stdio.h>

/* Seconds on a monotonic clock. */
double ts_bench_now(void);
/* Sorts `t` in place; best is the minimum, median the middle (mean of the two
 * middle values for an even count). */
void ts_bench_best_median(double *t, int n, double *best, double *median);
int64_t ts_bench_count_instrs(const ts_hlo_module_t *m);
#define TS_BENCH_MAX_REPS 1000

/* An integer option's value: `arg` as strtoll reads it in base 10, with
 * nothing after the digits, in [lo, hi]. True with *v set, else false and *v
 * untouched. */
bool ts_bench_int_opt(const char *arg, long long lo, long long hi, long long *v);

/* A usage error in option argv[optind - 1] (getopt's last): prints
 * "NAME: bad option 'OPT'" and `usage` to stderr; returns 2, the exit code. */
int ts_bench_bad_option(const char *name, char **argv, void (*usage)(FILE *f));

/* One option of a benchmark: `--NAME N` with N an integer in [lo, hi]
 * (TS_BENCH_INT("reps", &reps, 1, 1000)), `--NAME` alone, which sets 1
 * (TS_BENCH_FLAG("row", &row)), `--NAME X` with X a number in [rlo, rhi)
 * (TS_BENCH_REAL("lr", &lr, 0, 1e6)) or `--NAME TEXT`, kept as given
 * (TS_BENCH_TEXT("inputs", &dir)). The variable holds the default. */
typedef struct {
  const char *name;
  long long *value; /* INT, FLAG */
  long long lo, hi;
  bool flag;
  double *real; /* REAL */
  double rlo, rhi;
  const char **text; /* TEXT */
} ts_bench_opt_t;
#define TS_BENCH_INT(n, v, l, h) {.name = (n), .value = (v), .lo = (l), .hi = (h)}
#define TS_BENCH_FLAG(n, v) {.name = (n), .value = (v), .lo = 1, .hi = 1, .flag = true}
#define TS_BENCH_REAL(n, v, l, h) {.name = (n), .real = (v), .rlo = (l), .rhi = (h)}
#define TS_BENCH_TEXT(n, v) {.name = (n), .text = (v)}
#define TS_BENCH_MAX_OPTS 12

/* Parses the options `opts[0..n)` and -h/--help (getopt_long). Returns -1
 * with optind at the first operand, or the exit code to return: 0 after
 * --help, 2 after a usage error ("NAME: --OPT wants LO..HI, got 'V'" or
 * "NAME: bad option 'OPT'", then `usage`, on stderr). */
int ts_bench_opts(int argc, char **argv, const char *name, void (*usage)(FILE *f), const ts_bench_opt_t *opts,
                  int n);

/* The command line every benchmark of modules takes: `[--reps N] [-h]
 * FILE...`. On success *reps and *first (index of the first FILE) are set and
 * it returns -1; otherwise the exit code to return, as ts_bench_opts (2 too
 * without a FILE). name_width gets the longest file base name, for the
 * table. */
int ts_bench_args(int argc, char **argv, const char *name, void (*usage)(FILE *f), int *reps, int *first,
                  int *name_width);

/* The part of a path after its last '/'. */
const char *ts_bench_base_name(const char *path);

#endif
