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

bool ts_bench_int_opt(const char *arg, long long lo, long long hi, long long *v) {
  char *end = NULL;
  long long x = strtoll(arg, &end, 10);
  if (*end || x < lo || x > hi) return false;
  *v = x;
  return true;
}

int ts_bench_bad_option(const char *name, char **argv, void (*usage)(FILE *f)) {
  fprintf(stderr, "%s: bad option '%s'\n", name, argv[optind - 1]);
  usage(stderr);
  return 2;
}

int ts_bench_opts(int argc, char **argv, const char *name, void (*usage)(FILE *f), const ts_bench_opt_t *opts,
                  int n) {
  enum { FIRST = 256 }; /* getopt codes of opts[k]: FIRST + k, clear of 'h', '?' and ':' */
  struct option lo[TS_BENCH_MAX_OPTS + 2];
  TS_ASSERT(n <= TS_BENCH_MAX_OPTS);
  if (n > TS_BENCH_MAX_OPTS) n = TS_BENCH_MAX_OPTS; /* release: the rest read as unknown */
  for (int k = 0; k < n; k++)
    lo[k] = (struct option){opts[k].name, opts[k].flag ? no_argument : required_argument, NULL, FIRST + k};
  lo[n] = (struct option){"help", no_argument, NULL, 'h'};
  lo[n + 1] = (struct option){NULL, 0, NULL, 0};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c < FIRST) return ts_bench_bad_option(name, argv, usage); /* '?' unknown, ':' value missing */
    const ts_bench_opt_t *o = &opts[c - FIRST];
    if (o->text) {
      *o->text = optarg;
    } else if (o->real) {
      char *end = NULL;
      double v = strtod(optarg, &end);
      if (*end || !(v >= o->rlo && v < o->rhi)) {
        fprintf(stderr, "%s: --%s wants a number in [%g, %g), got '%s'\n", name, o->name, o->rlo, o->rhi, optarg);
        usage(stderr);
        return 2;
      }
      *o->real = v;
    } else if (o->flag) {
      *o->value = 1;
    } else if (!ts_bench_int_opt(optarg, o->lo, o->hi, o->value)) {
      fprintf(stderr, "%s: --%s wants %lld..%lld, got '%s'\n", name, o->name, o->lo, o->hi, optarg);
      usage(stderr);
      return 2;
    }
  }
  return -1;
}

int ts_bench_args(int argc, char **argv, const char *name, void (*usage)(FILE *f), int *reps, int *first,
                  int *name_width) {
  long long r = 5;
  const ts_bench_opt_t opts[] = {TS_BENCH_INT("reps", &r, 1, TS_BENCH_MAX_REPS)};
  int early = ts_bench_opts(argc, argv, name, usage, opts, 1);
  if (early >= 0) return early;
  if (optind == argc) {
    usage(stderr);
    return 2;
  }
  *reps = (int)r;
  *first = optind;
  *name_width = 4;
  for (int j = optind; j < argc; j++) {
    int n = (int)strlen(ts_bench_base_name(argv[j]));
    if (n > *name_width) *name_width = n;
  }
  return -1;
}
