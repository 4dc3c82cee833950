/* Helpers shared by the benchmarks. */
#include "bench_util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double ts_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void ts_bench_best_median(double *t, int n, double *best, double *median) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  *best = t[0];
  *median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

int64_t ts_bench_count_instrs(const ts_hlo_module_t *m) {
  int64_t n = 0;
  for (int c = 0; c < m->ncomps; c++) n += m->comps[c]->ninstrs;
  return n;
}

const char *ts_bench_base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}
