/* bench_dot: the interpreter's dot kernel against cblas_sgemm called
 * directly on the same sizes, in the same run. A benchmark, not a test: it
 * asserts nothing about speed.
 *   bench_dot [--reps N] [--size N]
 * Rows: an [N,N] x [N,N] f32 dot (gemm as is), the same with lhs contracting
 * dimension 0 (gemm's transposed A), and bf16 x bf16 -> f32 (operands
 * converted to f32 in scratch first), each against sgemm on f32 data. */
#include "bench_util.h"
#include "ts_interp.h"

#include <cblas.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name;   /* table row */
  const char *instr;  /* instruction in the module */
  bool trans_a;       /* what the matching sgemm call does */
} variant_t;

static const variant_t variants[] = {
    {"f32 [M,K]x[K,N]", "r0", false},
    {"f32 lhs contracting 0", "r1", true},
    {"bf16 x bf16 -> f32", "r2", false},
};

static ts_status_t build_module(int64_t n, ts_hlo_module_t **m, char **text, ts_diag_t *diag) {
  const char *fmt =
      "HloModule bench_dot\n"
      "ENTRY main {\n"
      "  a = f32[%1$lld,%1$lld] parameter(0)\n"
      "  b = f32[%1$lld,%1$lld] parameter(1)\n"
      "  c = bf16[%1$lld,%1$lld] parameter(2)\n"
      "  d = bf16[%1$lld,%1$lld] parameter(3)\n"
      "  r0 = f32[%1$lld,%1$lld] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  r1 = f32[%1$lld,%1$lld] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
      "  r2 = f32[%1$lld,%1$lld] dot(c, d), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  ROOT t = (f32[%1$lld,%1$lld], f32[%1$lld,%1$lld], f32[%1$lld,%1$lld]) tuple(r0, r1, r2)\n"
      "}\n";
  size_t cap = 2048;
  *text = ts_malloc(cap);
  if (!*text) return TS_ERR_NOMEM;
  snprintf(*text, cap, fmt, (long long)n);
  ts_source_t src = {"bench_dot", *text, strlen(*text)};
  TS_CHECK(ts_hlo_parse(&src, NULL, m, diag));
  return ts_hlo_verify(*m, NULL, diag);
}

static double gflops(int64_t n, double t) { return 2.0 * (double)n * (double)n * (double)n / t / 1e9; }

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_dot [--reps N] [--size N]\n"
          "Times the interpreter's dot kernel on [N,N] x [N,N] (default 1024) against\n"
          "cblas_sgemm on the same sizes: one warm-up, then N repetitions (default 5,\n"
          "at most %d); reports best and median, GFLOP/s of the best, and the ratio.\n",
          TS_BENCH_MAX_REPS);
}

static int parse_args(int argc, char **argv, int *reps, int64_t *n) {
  long long r = 5, size = 1024;
  const ts_bench_opt_t opts[] = {TS_BENCH_INT("reps", &r, 1, TS_BENCH_MAX_REPS), TS_BENCH_INT("size", &size, 1, 16384)};
  int early = ts_bench_opts(argc, argv, "bench_dot", usage, opts, 2);
  if (early >= 0) return early;
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  *reps = (int)r;
  *n = size;
  return -1;
}

int main(int argc, char **argv) {
  int reps;
  int64_t n;
  int early = parse_args(argc, argv, &reps, &n);
  if (early >= 0) return early;

  ts_diag_t diag = {0};
  ts_hlo_module_t *m = NULL;
  char *text = NULL;
  int rc = 1;
  float *a = NULL, *b = NULL, *c = NULL;
  uint16_t *ah = NULL, *bh = NULL;
  ts_kernel_ctx_t ctx = {0};
  if (build_module(n, &m, &text, &diag) != TS_OK) {
    fputs(diag.text ? diag.text : "bench_dot: cannot build the module\n", stderr);
    goto done;
  }
  size_t count = (size_t)(n * n);
  a = ts_malloc(count * sizeof *a);
  b = ts_malloc(count * sizeof *b);
  c = ts_malloc(count * sizeof *c);
  ah = ts_malloc(count * sizeof *ah);
  bh = ts_malloc(count * sizeof *bh);
  if (!a || !b || !c || !ah || !bh) {
    fprintf(stderr, "bench_dot: out of memory for %lld x %lld\n", (long long)n, (long long)n);
    goto done;
  }
  /* values in [-1, 1) that bf16 holds exactly, so all rows multiply the same data */
  uint64_t s = 88172645463325252ull;
  for (size_t i = 0; i < count; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    ah[i] = (uint16_t)(0x3f80 | (s & 0x7f)) ^ (uint16_t)((s >> 8) & 0x8000); /* +-[1, 2) */
    bh[i] = (uint16_t)(0x3f80 | ((s >> 20) & 0x7f)) ^ (uint16_t)((s >> 30) & 0x8000);
    uint32_t ab = (uint32_t)ah[i] << 16, bb = (uint32_t)bh[i] << 16;
    memcpy(&a[i], &ab, 4);
    memcpy(&b[i], &bb, 4);
  }
  ctx.diag = &diag;
  ts_kernel_fn dot = ts_kernel_for(TS_OP_DOT);
  if (!dot) {
    fprintf(stderr, "bench_dot: no dot kernel\n");
    goto done;
  }
  int64_t dims[2] = {n, n};
  blasint bn = (blasint)n;

  printf("# bench_dot: [%lld,%lld] x [%lld,%lld], %d repetition%s after 1 warm-up\n", (long long)n,
         (long long)n, (long long)n, (long long)n, reps, reps == 1 ? "" : "s");
  printf("# %-22s %10s %10s %9s  %10s %10s %9s  %7s\n", "variant", "kern_ms", "kern_med", "kern_GF/s", "sgemm_ms",
         "sgemm_med", "sgemm_GF/s", "ratio");
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
    const ts_hlo_instr_t *instr = ts_hlo_comp_find_instr(m->entry, variants[v].instr);
    bool half = instr->ops[0]->shape->elem == TS_BF16;
    ts_array_t in[2] = {{half ? TS_BF16 : TS_F32, 2, dims, half ? (void *)ah : a},
                        {half ? TS_BF16 : TS_F32, 2, dims, half ? (void *)bh : b}};
    ts_array_t out = {TS_F32, 2, dims, c};
    double tk[TS_BENCH_MAX_REPS], tb[TS_BENCH_MAX_REPS];
    for (int r = -1; r < reps; r++) {
      double t0 = ts_bench_now();
      if (dot(&ctx, instr, in, 2, &out, 1) != TS_OK) {
        fputs(diag.text ? diag.text : "bench_dot: the kernel failed\n", stderr);
        goto done;
      }
      double t1 = ts_bench_now();
      cblas_sgemm(CblasRowMajor, variants[v].trans_a ? CblasTrans : CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0f, a,
                  bn, b, bn, 0.0f, c, bn);
      double t2 = ts_bench_now();
      if (r >= 0) tk[r] = t1 - t0, tb[r] = t2 - t1;
    }
    double kb, km, bb, bm;
    ts_bench_best_median(tk, reps, &kb, &km);
    ts_bench_best_median(tb, reps, &bb, &bm);
    printf("  %-22s %10.3f %10.3f %9.1f  %10.3f %10.3f %9.1f  %7.2f\n", variants[v].name, kb * 1e3, km * 1e3,
           gflops(n, kb), bb * 1e3, bm * 1e3, gflops(n, bb), kb / bb);
    fflush(stdout);
  }
  rc = 0;

done:
  ts_kernel_ctx_free(&ctx);
  ts_free(a);
  ts_free(b);
  ts_free(c);
  ts_free(ah);
  ts_free(bh);
  ts_hlo_module_destroy(m);
  ts_free(text);
  ts_diag_free(&diag);
  return rc;
}
