/* Elementwise kernels vs memcpy: a chain of f32 elementwise ops run through
 * the interpreter's kernels on preallocated buffers (as the runtime runs
 * them), as one fusion compiled by codegen/ (one pass: read x and y, write
 * the result), and through the whole interpreter, against memcpy of the same
 * arrays in the same run. Bandwidth counts bytes read plus bytes written. */
#include "bench_util.h"
#include "ts_codegen.h"
#include "ts_fusion.h"
#include "ts_interp.h"

#include <stdlib.h>
#include <string.h>

/* x, y -> a = x + y; b = a * x; c = b - y; d = max(c, x); e = d / y;
 * f = exp(e)... kept to ops that read two arrays or one. */
static const char *chain_text =
    "HloModule chain\n"
    "ENTRY main {\n"
    "  x = f32[%lld] parameter(0)\n"
    "  y = f32[%lld] parameter(1)\n"
    "  a = f32[%lld] add(x, y)\n"
    "  b = f32[%lld] multiply(a, x)\n"
    "  c = f32[%lld] subtract(b, y)\n"
    "  d = f32[%lld] maximum(c, x)\n"
    "  e = f32[%lld] negate(d)\n"
    "  ROOT f = f32[%lld] add(e, y)\n"
    "}\n";

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_elementwise [--elements N] [--reps R]\n"
          "Times a chain of 6 f32 elementwise ops over N elements (default 16M)\n"
          "against memcpy of N floats, and prints GB/s (read + written) and ratios.\n");
}

int main(int argc, char **argv) {
  long long n = 16ll << 20, r = 10;
  const ts_bench_opt_t opts[] = {TS_BENCH_INT("elements", &n, 1, 1ll << 40),
                                 TS_BENCH_INT("reps", &r, 1, TS_BENCH_MAX_REPS)};
  int early = ts_bench_opts(argc, argv, "bench_elementwise", usage, opts, 2);
  if (early >= 0) return early;
  int reps = (int)r;
  char text[2048];
  snprintf(text, sizeof text, chain_text, n, n, n, n, n, n, n, n);
  ts_source_t src = {"chain", text, strlen(text)};
  ts_diag_t dg = {0};
  ts_hlo_module_t *m = NULL;
  if (ts_hlo_parse(&src, NULL, &m, &dg) != TS_OK || ts_hlo_verify(m, NULL, &dg) != TS_OK) {
    fprintf(stderr, "%s", dg.text);
    return 1;
  }
  size_t bytes = (size_t)n * sizeof(float);
  float *x = malloc(bytes), *y = malloc(bytes), *t0 = malloc(bytes), *t1 = malloc(bytes);
  if (!x || !y || !t0 || !t1) return 1;
  for (long long k = 0; k < n; k++) {
    x[k] = (float)(k % 1000) * 0.001f;
    y[k] = 1.0f + (float)(k % 7);
  }
  memset(t0, 0, bytes);
  memset(t1, 0, bytes);
  double t[TS_BENCH_MAX_REPS], best, med;

  /* memcpy: reads and writes `bytes`. */
  for (int r = 0; r < reps; r++) {
    double s = ts_bench_now();
    memcpy(t0, x, bytes);
    t[r] = ts_bench_now() - s;
  }
  ts_bench_best_median(t, reps, &best, &med);
  double memcpy_gbs = 2.0 * (double)bytes / med / 1e9, memcpy_best = 2.0 * (double)bytes / best / 1e9;

  /* The kernels alone, ping-ponging between two preallocated buffers. */
  const ts_hlo_comp_t *e = m->entry;
  int64_t dims[1] = {n};
  ts_array_t ax = {TS_F32, 1, dims, x}, ay = {TS_F32, 1, dims, y};
  ts_array_t b0 = {TS_F32, 1, dims, t0}, b1 = {TS_F32, 1, dims, t1};
  ts_kernel_ctx_t ctx = {0};
  ctx.diag = &dg;
  double moved = 0;
  for (int r = 0; r < reps; r++) {
    double s = ts_bench_now();
    ts_array_t *cur = NULL;
    moved = 0;
    for (int k = 2; k < e->ninstrs; k++) {
      const ts_hlo_instr_t *i = e->instrs[k];
      ts_array_t in[2];
      for (int o = 0; o < i->nops; o++) {
        const ts_hlo_instr_t *op = i->ops[o];
        in[o] = op->op == TS_OP_PARAMETER ? (op->param_number == 0 ? ax : ay) : *cur;
      }
      ts_array_t *out = cur == &b0 ? &b1 : &b0;
      if (ts_kernel_for(i->op)(&ctx, i, in, i->nops, out, 1) != TS_OK) {
        fprintf(stderr, "%s", dg.text ? dg.text : "kernel failed\n");
        return 1;
      }
      moved += (double)(i->nops + 1) * (double)bytes;
      cur = out;
    }
    t[r] = ts_bench_now() - s;
  }
  ts_bench_best_median(t, reps, &best, &med);
  double kernel_gbs = moved / med / 1e9, kernel_best_ms = best * 1e3;
  double kernel_ms = med * 1e3;

  /* The chain as one fusion, compiled: one pass over memory. */
  double fused_gbs = 0, fused_ms = 0, compile_ms = 0, fused_best = 0, fused_best_ms = 0;
  ts_hlo_module_t *fm = NULL;
  ts_codegen_t *cg = NULL;
  if (ts_hlo_parse(&src, NULL, &fm, &dg) != TS_OK) return 1;
  double cs = ts_bench_now();
  ts_status_t fst = ts_fusion_run(fm, NULL, NULL, &dg);
  if (fst == TS_OK) fst = ts_codegen_compile(fm, NULL, &cg, NULL, &dg);
  compile_ms = (ts_bench_now() - cs) * 1e3;
  const ts_hlo_instr_t *fu = fm->entry->root;
  ts_kernel_fn kfn = fst == TS_OK && fu->op == TS_OP_FUSION ? ts_codegen_kernel(cg, fu) : NULL;
  if (kfn) {
    ts_array_t fin[2] = {ax, ay};
    for (int r = 0; r < reps; r++) {
      double s = ts_bench_now();
      kfn(&ctx, fu, fin, 2, &b1, 1);
      t[r] = ts_bench_now() - s;
    }
    ts_bench_best_median(t, reps, &best, &med);
    fused_gbs = 3.0 * (double)bytes / med / 1e9;
    fused_ms = med * 1e3;
    fused_best = 3.0 * (double)bytes / best / 1e9;
    fused_best_ms = best * 1e3;
  } else {
    fprintf(stderr, "no compiled kernel: %s\n", dg.text ? dg.text : "the chain did not fuse");
  }

  /* The whole interpreter (values, liveness, recycled buffers). */
  ts_interp_t *it = NULL;
  if (ts_interp_create(m, NULL, &it, &dg) != TS_OK) {
    fprintf(stderr, "%s", dg.text);
    return 1;
  }
  ts_value_t *args[2] = {ts_value_new_uninit(e->params[0]->shape), ts_value_new_uninit(e->params[1]->shape)};
  memcpy(args[0]->a.data, x, bytes);
  memcpy(args[1]->a.data, y, bytes);
  for (int r = 0; r < reps; r++) {
    ts_value_t *out = NULL;
    double s = ts_bench_now();
    if (ts_interp_run(it, args, &out, &dg) != TS_OK) {
      fprintf(stderr, "%s", dg.text);
      return 1;
    }
    t[r] = ts_bench_now() - s;
    ts_value_unref(out);
  }
  ts_bench_best_median(t, reps, &best, &med);
  double interp_gbs = moved / med / 1e9;

  printf("# elementwise chain: 6 f32 ops over %lld elements (%.0f MiB per array), median of %d\n", n,
         (double)bytes / (1 << 20), reps);
  printf("%-28s %10s %10s %8s\n", "what", "time_ms", "GB/s", "ratio");
  printf("%-28s %10.3f %10.2f %8.2f\n", "memcpy", 2.0 * (double)bytes / memcpy_gbs / 1e6, memcpy_gbs, 1.0);
  printf("%-28s %10.3f %10.2f %8.2f\n", "kernels (preallocated)", kernel_ms, kernel_gbs, kernel_gbs / memcpy_gbs);
  printf("%-28s %10.3f %10.2f %8.2f\n", "fused, compiled (one pass)", fused_ms, fused_gbs, fused_gbs / memcpy_gbs);
  printf("%-28s %10.3f %10.2f %8.2f\n", "interpreter (ts_interp_run)", moved / interp_gbs / 1e6, interp_gbs,
         interp_gbs / memcpy_gbs);
  printf("# fused vs kernels: %.2fx faster; fusion + codegen of the chain: %.1f ms\n",
         fused_ms > 0 ? kernel_ms / fused_ms : 0.0, compile_ms);
  printf("# best of %d (less noise on a shared host): fused %.2f GB/s vs memcpy %.2f GB/s = %.2f; "
         "fused vs kernels %.2fx faster\n",
         reps, fused_best, memcpy_best, memcpy_best > 0 ? fused_best / memcpy_best : 0.0,
         fused_best_ms > 0 ? kernel_best_ms / fused_best_ms : 0.0);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(fm);
  ts_value_unref(args[0]);
  ts_value_unref(args[1]);
  ts_interp_destroy(it);
  ts_interp_release_buffers();
  ts_hlo_module_destroy(m);
  ts_diag_free(&dg);
  free(x);
  free(y);
  free(t0);
  free(t1);
  return 0;
}
