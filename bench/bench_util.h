/* What the benchmarks share: a monotonic clock, best/median of repeated
 * timings, and small helpers for their tables. */
#ifndef TS_BENCH_UTIL_H
#define TS_BENCH_UTIL_H

#include "ts_hlo.h"

/* Seconds on a monotonic clock. */
double ts_bench_now(void);
/* Sorts `t` in place; best is the minimum, median the middle (mean of the two
 * middle values for an even count). */
void ts_bench_best_median(double *t, int n, double *best, double *median);
int64_t ts_bench_count_instrs(const ts_hlo_module_t *m);
/* The part of a path after its last '/'. */
const char *ts_bench_base_name(const char *path);

#endif
