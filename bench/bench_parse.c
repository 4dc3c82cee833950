/* bench_parse: throughput of the HLO text front end (parse, verify, print),
 * one table row pair (best, median) per input file. A benchmark, not a test:
 * it asserts nothing about speed.
 *   bench_parse [--reps N] FILE...
 * Each phase runs once to warm up, then N times (default 5). */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* One timed run of each phase. Returns false (after printing why) when the
 * file does not parse; *verified says whether it verified. */
static bool run_once(const ts_source_t *src, double *t_parse, double *t_verify, double *t_print,
                     size_t *printed_bytes, int64_t *instrs, size_t *arena_bytes, bool *verified,
                     bool report) {
  ts_diag_t diag = {0};
  ts_hlo_module_t *m = NULL;
  ts_buf_t out = {0};
  bool ok = false;

  double t0 = ts_bench_now();
  ts_status_t st = ts_hlo_parse(src, NULL, &m, &diag);
  *t_parse = ts_bench_now() - t0;
  if (st != TS_OK) {
    if (report) {
      if (diag.text)
        fputs(diag.text, stderr);
      else
        fprintf(stderr, "bench_parse: %s: %s\n", src->name, ts_status_string(st));
    }
    goto done;
  }
  *instrs = ts_bench_count_instrs(m);
  *arena_bytes = ts_arena_bytes(m->arena);

  ts_diag_free(&diag);
  t0 = ts_bench_now();
  st = ts_hlo_verify(m, NULL, &diag);
  *t_verify = ts_bench_now() - t0;
  *verified = st == TS_OK;
  if (!*verified && report) {
    fprintf(stderr, "bench_parse: %s does not verify (verify columns left out):\n", src->name);
    fputs(diag.text ? diag.text : ts_status_string(st), stderr);
  }

  t0 = ts_bench_now();
  st = ts_hlo_print(m, &out);
  *t_print = ts_bench_now() - t0;
  if (st != TS_OK || out.oom) {
    if (report) fprintf(stderr, "bench_parse: %s: print failed: %s\n", src->name, ts_status_string(st));
    goto done;
  }
  *printed_bytes = out.len;
  ok = true;

done:
  ts_buf_free(&out);
  ts_hlo_module_destroy(m);
  ts_diag_free(&diag);
  return ok;
}

/* Width of the file-name column: the longest base name given. */
static int name_width; /* longest file base name */

static void print_header(void) {
  printf("# %-*s %10s %8s %6s  %9s %10s %14s  %9s %15s  %9s %10s %9s\n", name_width, "file", "bytes",
         "instrs", "stat", "parse_ms", "parse_MB/s", "parse_instr/s", "verify_ms", "verify_instr/s",
         "print_ms", "print_MB/s", "arena_MB");
}

static void print_row(const char *name, size_t bytes, int64_t instrs, const char *stat, double tp,
                      double tv, bool verified, double tw, size_t printed, size_t arena, bool first) {
  char vms[32], vrate[32];
  if (verified) {
    snprintf(vms, sizeof vms, "%.2f", tv * 1e3);
    snprintf(vrate, sizeof vrate, "%.0f", (double)instrs / tv);
  } else {
    snprintf(vms, sizeof vms, "-");
    snprintf(vrate, sizeof vrate, "-");
  }
  char bytes_s[24] = "", instrs_s[24] = "", arena_s[24] = "";
  if (first) {
    snprintf(bytes_s, sizeof bytes_s, "%zu", bytes);
    snprintf(instrs_s, sizeof instrs_s, "%lld", (long long)instrs);
    snprintf(arena_s, sizeof arena_s, "%.1f", (double)arena / 1e6);
  }
  printf("  %-*s %10s %8s %6s  %9.2f %10.1f %14.0f  %9s %15s  %9.2f %10.1f %9s\n", name_width,
         first ? name : "", bytes_s, instrs_s, stat, tp * 1e3, (double)bytes / tp / 1e6, (double)instrs / tp, vms,
         vrate, tw * 1e3, (double)printed / tw / 1e6, arena_s);
}

/* Benchmarks one file; returns 0, or 1 when it could not be parsed, verified
 * or printed. */
static int bench_file(const char *path, int reps) {
  char *text = NULL;
  size_t len = 0;
  ts_diag_t diag = {0};
  if (ts_read_file(path, &text, &len, &diag) != TS_OK) {
    fprintf(stderr, "bench_parse: %s", diag.text ? diag.text : "cannot read file\n");
    ts_diag_free(&diag);
    return 1;
  }
  const char *base = ts_bench_base_name(path);
  ts_source_t src = {path, text, len};

  double tp[TS_BENCH_MAX_REPS], tv[TS_BENCH_MAX_REPS], tw[TS_BENCH_MAX_REPS];
  size_t printed = 0, arena = 0;
  int64_t instrs = 0;
  bool verified = false;
  int rc = 0;
  /* Warm-up run: page faults, caches, lazily built tables. */
  if (!run_once(&src, &tp[0], &tv[0], &tw[0], &printed, &instrs, &arena, &verified, true)) {
    rc = 1;
    goto done;
  }
  for (int r = 0; r < reps; r++) {
    if (!run_once(&src, &tp[r], &tv[r], &tw[r], &printed, &instrs, &arena, &verified, false)) {
      rc = 1;
      goto done;
    }
  }
  double bp, mp, bv, mv, bw, mw;
  ts_bench_best_median(tp, reps, &bp, &mp);
  ts_bench_best_median(tv, reps, &bv, &mv);
  ts_bench_best_median(tw, reps, &bw, &mw);
  print_row(base, len, instrs, "best", bp, bv, verified, bw, printed, arena, true);
  print_row(base, len, instrs, "median", mp, mv, verified, mw, printed, arena, false);
  fflush(stdout);
  if (!verified) rc = 1;

done:
  ts_free(text);
  return rc;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_parse [--reps N] FILE...\n"
          "Times parse, verify and print of each HLO file: one warm-up, then N\n"
          "repetitions (default 5, at most %d); reports the best and the median.\n"
          "MB/s counts the input text for parse and the printed text for print.\n",
          TS_BENCH_MAX_REPS);
}

int main(int argc, char **argv) {
  int reps, i;
  int early = ts_bench_args(argc, argv, "bench_parse", usage, &reps, &i, &name_width);
  if (early >= 0) return early;
  printf("# bench_parse: %d repetition%s after 1 warm-up\n", reps, reps == 1 ? "" : "s");
  print_header();
  int rc = 0;
  for (; i < argc; i++) rc |= bench_file(argv[i], reps);
  return rc;
}
