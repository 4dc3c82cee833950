/* bench_blas_core: cblas_sgemm [N,N] x [N,N] under OpenBLAS's own core
 * type detection next to the core types cpuid allows (the one tessera run
 * forces first, then the safer ones of its fallback chain), in one run. A
 * benchmark, not a test: it asserts nothing about speed.
 *   bench_blas_core [--size N] [--reps N] [--threads N]
 * OpenBLAS fixes its core type when it loads, so each row is this program
 * re-executed (/proc/self/exe --row) with OPENBLAS_CORETYPE set or unset;
 * the row prints the core that ran, the start-up check's verdict
 * (ts_kernels_blas_check) and its times. */
#include "bench_util.h"
#include "ts_kernels_blas.h"

#include <cblas.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_blas_core [--size N] [--reps N] [--threads N]\n"
          "Times cblas_sgemm on [N,N] x [N,N] (default 1024) with OpenBLAS's own core type\n"
          "and with each core type this CPU can run (SkylakeX, Haswell, Sandybridge),\n"
          "one warm-up then N repetitions (default 5, at most %d), on --threads OpenBLAS\n"
          "threads (default 1); GFLOP/s of the best, and the ratio to OpenBLAS's own.\n",
          TS_BENCH_MAX_REPS);
}

/* One row, in this process: what OpenBLAS loaded with. Prints
 * "CORE CHECK BEST_S MEDIAN_S" on stdout. */
static int row(int64_t n, int reps, int threads) {
  openblas_set_num_threads(threads);
  bool ok = false;
  if (ts_kernels_blas_check(ts_kernels_blas_sgemm, &ok, NULL) != TS_OK) return 1;
  size_t count = (size_t)(n * n);
  float *a = ts_malloc(count * sizeof *a), *b = ts_malloc(count * sizeof *b), *c = ts_malloc(count * sizeof *c);
  if (!a || !b || !c) {
    fprintf(stderr, "bench_blas_core: out of memory for %lld x %lld\n", (long long)n, (long long)n);
    ts_free(a), ts_free(b), ts_free(c);
    return 1;
  }
  uint64_t s = 88172645463325252ull;
  for (size_t i = 0; i < count; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    a[i] = (float)(s & 0xffff) / 32768.0f - 1.0f;
    b[i] = (float)((s >> 16) & 0xffff) / 32768.0f - 1.0f;
  }
  double t[TS_BENCH_MAX_REPS];
  blasint bn = (blasint)n;
  for (int r = -1; r < reps; r++) {
    double t0 = ts_bench_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0f, a, bn, b, bn, 0.0f, c, bn);
    if (r >= 0) t[r] = ts_bench_now() - t0;
  }
  double best, median;
  ts_bench_best_median(t, reps, &best, &median);
  printf("%s %s %.9f %.9f\n", ts_kernels_blas_corename(), ok ? "ok" : "WRONG", best, median);
  ts_free(a), ts_free(b), ts_free(c);
  return 0;
}

/* Runs this program's --row with OPENBLAS_CORETYPE = coretype (NULL:
 * unset) and reads its line. False when it did not give one. */
static bool spawn_row(char **row_argv, const char *coretype, char *line, size_t cap) {
  /* Our own environment is the row's: OpenBLAS read it when this process
   * loaded, and the parent runs no BLAS after that. */
  if (coretype ? setenv("OPENBLAS_CORETYPE", coretype, 1) != 0 : unsetenv("OPENBLAS_CORETYPE") != 0) return false;
  int fd[2];
  if (pipe(fd) != 0) return false;
  bool got = false;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], STDOUT_FILENO);
    close(fd[0]);
    close(fd[1]);
    execv("/proc/self/exe", row_argv);
    _exit(127);
  }
  close(fd[1]);
  if (pid > 0) {
    FILE *f = fdopen(fd[0], "r");
    if (f) {
      got = fgets(line, (int)cap, f) != NULL;
      fclose(f);
    } else {
      close(fd[0]);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    got = got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  } else {
    close(fd[0]);
  }
  return got;
}

static double gflops(int64_t n, double t) { return 2.0 * (double)n * (double)n * (double)n / t / 1e9; }

int main(int argc, char **argv) {
  long long size = 1024, r = 5, t = 1, row_flag = 0;
  const ts_bench_opt_t opts[] = {
      TS_BENCH_INT("size", &size, 1, 16384),
      TS_BENCH_INT("reps", &r, 1, TS_BENCH_MAX_REPS),
      TS_BENCH_INT("threads", &t, 1, 1024),
      TS_BENCH_FLAG("row", &row_flag),
  };
  int early = ts_bench_opts(argc, argv, "bench_blas_core", usage, opts, 4);
  if (early >= 0) return early;
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  int64_t n = size;
  int reps = (int)r, threads = (int)t;
  bool is_row = row_flag;
  if (is_row) return row(n, reps, threads);

  char sz[24], rp[24], th[24];
  snprintf(sz, sizeof sz, "%lld", (long long)n);
  snprintf(rp, sizeof rp, "%d", reps);
  snprintf(th, sizeof th, "%d", threads);
  char *row_argv[] = {argv[0], "--row", "--size", sz, "--reps", rp, "--threads", th, NULL};

  ts_kernels_cpu_t cpu;
  ts_kernels_cpu_detect(&cpu);
  const char *chosen = ts_kernels_blas_coretype_for(&cpu);
  printf("# bench_blas_core: sgemm [%lld,%lld] x [%lld,%lld], %d thread%s, %d repetition%s after 1 warm-up; "
         "cpuid calls for %s\n",
         (long long)n, (long long)n, (long long)n, (long long)n, threads, threads == 1 ? "" : "s", reps,
         reps == 1 ? "" : "s", chosen ? chosen : "none");
  printf("# %-28s %-12s %-6s %10s %10s %9s %7s\n", "OPENBLAS_CORETYPE", "runs", "check", "best_ms", "median_ms",
         "GFLOP/s", "ratio");
  /* OpenBLAS's own first (the ratios' base), then the chain from cpuid's choice down. */
  const char *rows[4] = {NULL};
  int nrows = 1;
  for (const char *core = chosen; core && nrows < 4; core = ts_kernels_blas_coretype_safer(core)) rows[nrows++] = core;
  double base = 0;
  int rc = 0;
  for (int r = 0; r < nrows; r++) {
    char line[256], name[64], check[16];
    double best, median;
    if (!spawn_row(row_argv, rows[r], line, sizeof line) ||
        sscanf(line, "%63s %15s %lf %lf", name, check, &best, &median) != 4) {
      fprintf(stderr, "bench_blas_core: the row for %s gave no result\n", rows[r] ? rows[r] : "(unset)");
      rc = 1;
      continue;
    }
    if (r == 0) base = gflops(n, best);
    char label[64];
    snprintf(label, sizeof label, "%s%s", rows[r] ? rows[r] : "(unset: OpenBLAS's own)",
             r == 1 ? " (tessera's)" : "");
    printf("  %-28s %-12s %-6s %10.3f %10.3f %9.1f %7.2f\n", label, name, check, best * 1e3, median * 1e3,
           gflops(n, best), base > 0 ? gflops(n, best) / base : 0.0);
    fflush(stdout);
  }
  return rc;
}
