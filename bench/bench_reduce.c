/* The runtime's reduce kernel (kernels/) over f32[rows, width], reduced
 * along the width (a row reduce: softmax's max and sum, layer norm's sums)
 * and along the rows (a column reduce: a bias gradient), with add, maximum
 * and minimum, each in GB/s of operand read beside a plain sum loop over the
 * same bytes in the same run (the read-bandwidth peer). Best and median of
 * R runs.
 *   bench_reduce [--rows N] [--width W] [--reps R] */
#include "bench_util.h"
#include "ts_hlo.h"
#include "ts_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char module_text[] =
    "HloModule reduces\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT r = f32[] add(a, b) }\n"
    "max { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT r = f32[] maximum(a, b) }\n"
    "min { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT r = f32[] minimum(a, b) }\n"
    "ENTRY e {\n"
    "  x = f32[%lld,%lld] parameter(0)\n"
    "  z = f32[] parameter(1)\n"
    "  row_add = f32[%lld] reduce(x, z), dimensions={1}, to_apply=add\n"
    "  row_max = f32[%lld] reduce(x, z), dimensions={1}, to_apply=max\n"
    "  row_min = f32[%lld] reduce(x, z), dimensions={1}, to_apply=min\n"
    "  col_add = f32[%lld] reduce(x, z), dimensions={0}, to_apply=add\n"
    "  ROOT col_max = f32[%lld] reduce(x, z), dimensions={0}, to_apply=max\n"
    "}\n";

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_reduce [--rows N] [--width W] [--reps R]\n"
          "Times the reduce kernel over f32[N, W] (default 65536 x 128) along each\n"
          "dimension with add, maximum and minimum, against a plain sum over the same\n"
          "bytes, and prints GB/s of operand read and the ratios.\n");
}

int main(int argc, char **argv) {
  long long rows = 65536, width = 128, r = 10;
  const ts_bench_opt_t opts[] = {TS_BENCH_INT("rows", &rows, 1, 1ll << 30), TS_BENCH_INT("width", &width, 1, 1ll << 30),
                                 TS_BENCH_INT("reps", &r, 1, TS_BENCH_MAX_REPS)};
  int early = ts_bench_opts(argc, argv, "bench_reduce", usage, opts, 3);
  if (early >= 0) return early;
  int reps = (int)r;
  char text[2048];
  snprintf(text, sizeof text, module_text, rows, width, rows, rows, rows, width, width);
  ts_source_t src = {"reduces", text, strlen(text)};
  ts_diag_t dg = {0};
  ts_hlo_module_t *m = NULL;
  if (ts_hlo_parse(&src, NULL, &m, &dg) != TS_OK) {
    fprintf(stderr, "%s", dg.text ? dg.text : "bench_reduce: the module did not parse\n");
    return 1;
  }
  size_t n = (size_t)(rows * width), bytes = n * sizeof(float);
  float *x = malloc(bytes), *out = malloc((size_t)(rows > width ? rows : width) * sizeof(float));
  if (!x || !out) return 1;
  for (size_t k = 0; k < n; k++) x[k] = (float)((k * 2654435761u) % 2001) / 64.0f - 15.6f;
  double t[TS_BENCH_MAX_REPS], best, med;
  /* the peer: one pass summing the bytes (eight partials, so it vectorizes) */
  volatile float sink = 0;
  for (int k = 0; k < reps; k++) {
    double s = ts_bench_now();
    float p[8] = {0};
    for (size_t j = 0; j + 8 <= n; j += 8)
      for (int q = 0; q < 8; q++) p[q] += x[j + q];
    sink = p[0] + p[1] + p[2] + p[3] + p[4] + p[5] + p[6] + p[7];
    t[k] = ts_bench_now() - s;
  }
  (void)sink;
  ts_bench_best_median(t, reps, &best, &med);
  double peer = (double)bytes / best / 1e9;
  printf("# bench_reduce: f32[%lld,%lld] (%.1f MiB), best and median of %d, GB/s of operand read\n", rows, width,
         (double)bytes / 1048576.0, reps);
  printf("%-10s %10s %10s %10s %8s\n", "what", "best_ms", "median_ms", "GB/s", "ratio");
  printf("%-10s %10.3f %10.3f %10.2f %8.2f\n", "sum loop", best * 1e3, med * 1e3, peer, 1.0);
  static const char *const names[] = {"row_add", "row_max", "row_min", "col_add", "col_max"};
  ts_kernel_ctx_t ctx = {.diag = &dg};
  int rc = 0;
  for (int q = 0; q < 5 && rc == 0; q++) {
    const ts_hlo_instr_t *i = ts_hlo_comp_find_instr(m->entry, names[q]);
    float init = q == 1 || q == 4 ? -INFINITY : q == 2 ? INFINITY : 0.0f;
    ts_array_t in[2] = {{TS_F32, 2, i->ops[0]->shape->dims, x}, {TS_F32, 0, NULL, &init}};
    ts_array_t o = {TS_F32, 1, i->shape->dims, out};
    for (int k = 0; k < reps && rc == 0; k++) {
      double s = ts_bench_now();
      if (ts_kernel_for(TS_OP_REDUCE)(&ctx, i, in, 2, &o, 1) != TS_OK) {
        fprintf(stderr, "%s", dg.text ? dg.text : "bench_reduce: the reduce kernel failed\n");
        rc = 1;
      }
      t[k] = ts_bench_now() - s;
    }
    if (rc) break;
    ts_bench_best_median(t, reps, &best, &med);
    double gbs = (double)bytes / best / 1e9;
    printf("%-10s %10.3f %10.3f %10.2f %8.2f\n", names[q], best * 1e3, med * 1e3, gbs, gbs / peer);
  }
  ts_kernel_ctx_free(&ctx);
  ts_diag_free(&dg);
  ts_hlo_module_destroy(m);
  free(x);
  free(out);
  return rc;
}
