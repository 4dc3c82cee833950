/* bench_dot_shapes: every distinct dot of a module's per-device program
 * (partitioned when the header asks for several partitions) through the
 * runtime's dot kernel, next to cblas_sgemm on contiguous row-major f32 data
 * of the same batch x M x N x K in the same run, the two timed in turn. A
 * benchmark: it asserts nothing about speed.
 *   bench_dot_shapes [--reps N] [--threads T] MODULE.hlo
 * Columns: the dot's operand shapes and dimension numbers, B (batch) M N K,
 * GFLOP/s of the kernel and of sgemm (best of N), and their ratio; the last
 * line weighs the ratio by each dot's FLOPs (one step's dot time). */
#include "bench_util.h"
#include "ts_kernels.h"
#include "ts_pipeline.h"

#include <cblas.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t shape_count(const ts_shape_t *s) {
  int64_t n = 1;
  for (int d = 0; d < s->rank; d++) n *= s->dims[d];
  return n;
}

static const ts_i64_list_t *dims_attr(const ts_hlo_instr_t *i, const char *name) {
  static const ts_i64_list_t none = {0, NULL};
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, name);
  return a && a->kind == TS_ATTR_INT_LIST ? &a->v.list : &none;
}

static bool listed(const ts_i64_list_t *l, int64_t d) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == d) return true;
  return false;
}

/* B, M, N, K of a dot. */
static void gemm_dims(const ts_hlo_instr_t *dot, int64_t *B, int64_t *M, int64_t *N, int64_t *K) {
  const ts_shape_t *l = dot->ops[0]->shape, *r = dot->ops[1]->shape;
  const ts_i64_list_t *lb = dims_attr(dot, "lhs_batch_dims"), *lc = dims_attr(dot, "lhs_contracting_dims");
  const ts_i64_list_t *rb = dims_attr(dot, "rhs_batch_dims"), *rc = dims_attr(dot, "rhs_contracting_dims");
  *B = *M = *N = *K = 1;
  for (int d = 0; d < l->rank; d++) {
    if (listed(lb, d)) *B *= l->dims[d];
    else if (listed(lc, d)) *K *= l->dims[d];
    else *M *= l->dims[d];
  }
  for (int d = 0; d < r->rank; d++)
    if (!listed(rb, d) && !listed(rc, d)) *N *= r->dims[d];
}

/* "f32[8,128,256] x f32[256,768] lc={2} rc={0}": the dot as its row's key. */
static void describe(const ts_hlo_instr_t *dot, char *buf, size_t cap) {
  ts_buf_t b = {0};
  for (int k = 0; k < 2; k++) {
    const ts_shape_t *s = dot->ops[k]->shape;
    ts_buf_printf(&b, "%s%s[", k ? " x " : "", ts_elem_name(s->elem));
    for (int d = 0; d < s->rank; d++) ts_buf_printf(&b, "%s%lld", d ? "," : "", (long long)s->dims[d]);
    ts_buf_printf(&b, "]");
  }
  static const char *const attrs[] = {"lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims",
                                      "rhs_contracting_dims"};
  static const char *const abbrev[] = {"lb", "lc", "rb", "rc"};
  for (int a = 0; a < 4; a++) {
    const ts_i64_list_t *l = dims_attr(dot, attrs[a]);
    if (!l->n) continue;
    ts_buf_printf(&b, " %s={", abbrev[a]);
    for (int k = 0; k < l->n; k++) ts_buf_printf(&b, "%s%lld", k ? "," : "", (long long)l->v[k]);
    ts_buf_printf(&b, "}");
  }
  snprintf(buf, cap, "%s", b.data ? b.data : "");
  ts_buf_free(&b);
}

static void fill(void *p, size_t bytes, uint64_t seed) {
  /* bf16/f16/f32 bit patterns of small normal numbers: every 16-bit half is
   * 0x3c00-0x3fff (f16 in [1, 2), bf16 in [0.5, 2)) */
  uint16_t *h = p;
  for (size_t i = 0; i < bytes / 2; i++) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    h[i] = (uint16_t)(0x3c00 | (seed & 0x3ff));
  }
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_dot_shapes [--reps N] [--threads T] MODULE.hlo\n"
          "Times every distinct dot of the module's per-device program through the\n"
          "runtime's dot kernel and cblas_sgemm on the same B x M x N x K (contiguous\n"
          "f32), alternately: one warm-up, then N repetitions each (default 5, at most\n"
          "%d); GFLOP/s of the best and the ratio. T: BLAS threads (default 1).\n",
          TS_BENCH_MAX_REPS);
}

int main(int argc, char **argv) {
  long long r = 5, t = 1;
  const ts_bench_opt_t opts[] = {TS_BENCH_INT("reps", &r, 1, TS_BENCH_MAX_REPS), TS_BENCH_INT("threads", &t, 1, 256)};
  int early = ts_bench_opts(argc, argv, "bench_dot_shapes", usage, opts, 2);
  if (early >= 0) return early;
  if (optind != argc - 1) {
    usage(stderr);
    return 2;
  }
  int reps = (int)r, threads = (int)t;
  ts_kernels_set_blas_threads(threads);

  ts_diag_t diag = {0};
  ts_pipeline_t p;
  ts_pipeline_opts_t po = {.purpose = TS_PIPELINE_RUN, .path = argv[optind]};
  ts_partition_opts_default(&po.partition);
  ts_pipeline_init(&p, &po);
  int rc = 1;
  ts_kernel_ctx_t ctx = {.diag = &diag};
  ts_status_t st = ts_pipeline_run_to(&p, TS_STAGE_VERIFIED, &diag);
  if (st == TS_OK) {
    if (p.m->num_partitions > 1) {
      p.o.partition.num_partitions = p.m->num_partitions;
      st = ts_pipeline_run_to(&p, TS_STAGE_PARTITIONED, &diag);
    } else {
      ts_pipeline_skip(&p, TS_STAGE_PARTITIONED);
    }
  }
  if (st != TS_OK) {
    fprintf(stderr, "%s", diag.text ? diag.text : ts_status_string(st));
    goto done;
  }
  printf("%-62s %5s %5s %5s %5s %9s %9s %6s\n", "dot (per device)", "B", "M", "N", "K", "kernel", "sgemm", "ratio");
  printf("%-62s %5s %5s %5s %5s %9s %9s %6s\n", "", "", "", "", "", "GFLOP/s", "GFLOP/s", "");
  char seen[64][160];
  int nseen = 0;
  double flops_total = 0, t_kernel = 0, t_sgemm = 0;
  const ts_hlo_module_t *pm = p.pm;
  for (int ci = 0; ci < pm->ncomps; ci++)
    for (int ii = 0; ii < pm->comps[ci]->ninstrs; ii++) {
      const ts_hlo_instr_t *dot = pm->comps[ci]->instrs[ii];
      if (dot->op != TS_OP_DOT || dot->nops != 2 || nseen == 64) continue;
      char key[160];
      describe(dot, key, sizeof key);
      bool dup = false;
      for (int s = 0; s < nseen && !dup; s++) dup = strcmp(seen[s], key) == 0;
      if (dup) continue;
      snprintf(seen[nseen++], sizeof seen[0], "%s", key);
      int64_t B, M, N, K;
      gemm_dims(dot, &B, &M, &N, &K);
      const ts_shape_t *ls = dot->ops[0]->shape, *rs = dot->ops[1]->shape, *os = dot->shape;
      size_t lb = (size_t)shape_count(ls) * (size_t)ts_elem_storage_bytes(ls->elem);
      size_t rb = (size_t)shape_count(rs) * (size_t)ts_elem_storage_bytes(rs->elem);
      size_t ob = (size_t)shape_count(os) * (size_t)ts_elem_storage_bytes(os->elem);
      size_t ga = (size_t)(B * M * K), gb = (size_t)(B * K * N), gc = (size_t)(B * M * N);
      char *l = ts_malloc(lb + 8), *r = ts_malloc(rb + 8), *o = ts_malloc(ob + 8);
      float *a = ts_malloc(ga * 4 + 8), *bm = ts_malloc(gb * 4 + 8), *cm = ts_malloc(gc * 4 + 8);
      if (!l || !r || !o || !a || !bm || !cm) {
        fprintf(stderr, "bench_dot_shapes: out of memory for %s\n", key);
        ts_free(l), ts_free(r), ts_free(o), ts_free(a), ts_free(bm), ts_free(cm);
        goto done;
      }
      fill(l, lb, 1), fill(r, rb, 2), fill(a, ga * 4, 3), fill(bm, gb * 4, 4);
      ts_array_t in[2] = {{ls->elem, ls->rank, ls->dims, l}, {rs->elem, rs->rank, rs->dims, r}};
      ts_array_t out = {os->elem, os->rank, os->dims, o};
      double tk[TS_BENCH_MAX_REPS + 1], ts[TS_BENCH_MAX_REPS + 1];
      bool failed = false;
      for (int k = 0; k <= reps && !failed; k++) { /* k = 0: warm-up */
        double t0 = ts_bench_now();
        failed = ts_kernel_for(TS_OP_DOT)(&ctx, dot, in, 2, &out, 1) != TS_OK;
        double t1 = ts_bench_now();
        for (int64_t b = 0; b < B; b++)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)M, (blasint)N, (blasint)K, 1.0f,
                      a + b * M * K, (blasint)K, bm + b * K * N, (blasint)N, 0.0f, cm + b * M * N, (blasint)N);
        double t2 = ts_bench_now();
        if (k) tk[k - 1] = t1 - t0, ts[k - 1] = t2 - t1;
      }
      ts_free(l), ts_free(r), ts_free(o), ts_free(a), ts_free(bm), ts_free(cm);
      if (failed) {
        fprintf(stderr, "%s: %s", key, diag.text ? diag.text : "the dot kernel failed\n");
        goto done;
      }
      double bk, mk, bs, ms;
      ts_bench_best_median(tk, reps, &bk, &mk);
      ts_bench_best_median(ts, reps, &bs, &ms);
      double fl = 2.0 * (double)B * (double)M * (double)N * (double)K;
      printf("%-62s %5lld %5lld %5lld %5lld %9.1f %9.1f %6.2f\n", key, (long long)B, (long long)M, (long long)N,
             (long long)K, fl / bk / 1e9, fl / bs / 1e9, bs / bk);
      flops_total += fl, t_kernel += bk, t_sgemm += bs;
    }
  if (nseen)
    printf("all %d dots, one each (FLOP-weighted): kernel %.1f GFLOP/s, sgemm %.1f GFLOP/s, ratio %.2f\n", nseen,
           flops_total / t_kernel / 1e9, flops_total / t_sgemm / 1e9, t_sgemm / t_kernel);
  rc = 0;
done:
  ts_kernel_ctx_free(&ctx);
  ts_diag_free(&diag);
  ts_pipeline_fini(&p);
  return rc;
}
