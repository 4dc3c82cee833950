/* What the benchmarks share: a monotonic clock, best/median of repeated
 * timings, and small helpers for their tables. */
#ifndef TS_BENCH_UTIL_H
#define TS_BENCH_UTIL_H

#include "ts_hlo.h"

#include <stdio.h>

/* Seconds on a monotonic clock. */
double ts_bench_now(void);
/* Sorts `t` in place; best is the minimum, median the middle (mean of the two
 * middle values for an even count). */
void ts_bench_best_median(double *t, int n, double *best, double *median);
int64_t ts_bench_count_instrs(const ts_hlo_module_t *m);
#define TS_BENCH_MAX_REPS 1000

/* The command line every benchmark takes: `[--reps N] [-h] FILE...`
 * (getopt_long). On success *reps and *first (index of the first FILE) are
 * set and it returns -1; otherwise the exit code to return (0 after --help,
 * 2 after a usage error, with `usage` printed). name_width gets the longest
 * file base name, for the table. */
int ts_bench_args(int argc, char **argv, const char *name, void (*usage)(FILE *f), int *reps, int *first,
                  int *name_width);

/* The part of a path after its last '/'. */
const char *ts_bench_base_name(const char *path);

#endif
