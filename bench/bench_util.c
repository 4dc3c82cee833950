/* Helpers shared by the benchmarks. */
#include "bench_util.h"

#include <getopt.h>
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

int ts_bench_args(int argc, char **argv, const char *name, void (*usage)(FILE *f), int *reps, int *first,
                  int *name_width) {
  static const struct option opts[] = {
      {"reps", required_argument, NULL, 'r'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  *reps = 5;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    char *end = NULL;
    long v = c == 'r' ? strtol(optarg, &end, 10) : 0;
    if (c != 'r' || *end || v < 1 || v > TS_BENCH_MAX_REPS) {
      if (c == 'r')
        fprintf(stderr, "%s: --reps wants 1..%d, got '%s'\n", name, TS_BENCH_MAX_REPS, optarg);
      else
        fprintf(stderr, "%s: bad option '%s'\n", name, argv[optind - 1]);
      usage(stderr);
      return 2;
    }
    *reps = (int)v;
  }
  if (optind == argc) {
    usage(stderr);
    return 2;
  }
  *first = optind;
  *name_width = 4;
  for (int j = optind; j < argc; j++) {
    int n = (int)strlen(ts_bench_base_name(argv[j]));
    if (n > *name_width) *name_width = n;
  }
  return -1;
}
