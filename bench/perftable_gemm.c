/* tessera perf-table gemm: times the runtime's dot kernel (the interpreter's
 * ts_kernel_for(TS_OP_DOT), what the CPU runtime runs) on [b,m,k] x [b,k,n]
 * over XLA's GEMM grid (b in {1,2,4}, m/n/k from 256 to 4096 doubling, b
 * outermost then m, k, n, as XLA's table is ordered) and writes FLOP/s =
 * 2bmnk / median time as an xla.GemmPerfTable. */
#include "bench_internal.h"
#include "ts_kernels.h"

#include <stdlib.h>
#include <string.h>

/* ---- the dot ------------------------------------------------------------- */

/* One dot instruction of the shape, parsed and verified. */
typedef struct {
  char *text;
  ts_hlo_module_t *m;
  const ts_hlo_instr_t *dot;
} dot_module_t;

static void dot_free(dot_module_t *d) {
  ts_hlo_module_destroy(d->m);
  ts_free(d->text);
  memset(d, 0, sizeof *d);
}

static ts_status_t dot_build(const ts_bench_pt_dtype_t *t, int64_t b, int64_t m, int64_t n, int64_t k, dot_module_t *d,
                             ts_diag_t *diag) {
  memset(d, 0, sizeof *d);
  ts_buf_t s = {0};
  ts_buf_printf(&s,
                "HloModule perf_table_gemm\n"
                "ENTRY main {\n"
                "  lhs = %s[%lld,%lld,%lld] parameter(0)\n"
                "  rhs = %s[%lld,%lld,%lld] parameter(1)\n"
                "  ROOT dot = %s[%lld,%lld,%lld] dot(lhs, rhs), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                "rhs_batch_dims={0}, rhs_contracting_dims={1}\n"
                "}\n",
                ts_elem_name(t->lhs), (long long)b, (long long)m, (long long)k, ts_elem_name(t->rhs), (long long)b,
                (long long)k, (long long)n, ts_elem_name(t->out), (long long)b, (long long)m, (long long)n);
  if (s.oom) {
    ts_buf_free(&s);
    return TS_ERR_NOMEM;
  }
  d->text = s.data;
  ts_source_t src = {t->key, s.data, s.len};
  ts_status_t st = ts_hlo_parse(&src, NULL, &d->m, diag);
  if (st >= 0) st = ts_hlo_verify(d->m, NULL, diag);
  if (st >= 0) d->dot = d->m->entry->root;
  if (st < 0) dot_free(d);
  return st;
}

/* Operand and result storage for the largest shape, filled once per type
 * with small values every type holds exactly (values do not change timing). */
typedef struct {
  void *lhs, *rhs, *out;
  size_t lhs_n, rhs_n, out_n; /* elements */
} buffers_t;

static void fill(ts_elem_t e, void *p, size_t n) {
  for (size_t i = 0; i < n; i++) ts_store_f(e, p, (int64_t)i, (double)((int)(i * 7 % 11) - 5) / 8);
}

static ts_status_t run_dot(ts_kernel_ctx_t *ctx, const dot_module_t *d, const ts_bench_pt_dtype_t *t, const buffers_t *buf,
                           int64_t b, int64_t m, int64_t n, int64_t k) {
  int64_t ld[3] = {b, m, k}, rd[3] = {b, k, n}, od[3] = {b, m, n};
  ts_array_t in[2] = {{t->lhs, 3, ld, buf->lhs}, {t->rhs, 3, rd, buf->rhs}};
  ts_array_t out = {t->out, 3, od, buf->out};
  return ts_kernel_for(TS_OP_DOT)(ctx, d->dot, in, 2, &out, 1);
}

/* ---- dtypes --------------------------------------------------------------- */

/* "f32", or "LHSxRHS->OUT" with HLO element names (XLA's key). */
bool ts_bench_pt_dtype_parse(const char *s, ts_bench_pt_dtype_t *t) {
  const char *arrow = strstr(s, "->");
  if (!arrow) {
    if (!ts_elem_from_name(s, strlen(s), &t->lhs)) return false;
    t->rhs = t->out = t->lhs;
  } else {
    if (!ts_elem_from_name(arrow + 2, strlen(arrow + 2), &t->out)) return false;
    /* The 'x' between the operands: element names contain x too (f8e4m3fn
     * has none, but be general): the split where both halves are names. */
    bool found = false;
    for (const char *x = s; x < arrow && !found; x++)
      if (*x == 'x' && ts_elem_from_name(s, (size_t)(x - s), &t->lhs) &&
          ts_elem_from_name(x + 1, (size_t)(arrow - x - 1), &t->rhs))
        found = true;
    if (!found) return false;
  }
  snprintf(t->key, sizeof t->key, "%sx%s->%s", ts_elem_name(t->lhs), ts_elem_name(t->rhs), ts_elem_name(t->out));
  return true;
}

/* A dtype the dot kernel runs: a 1x1x1 dot of it verifies and runs. */
bool ts_bench_pt_dtype_runs(const ts_bench_pt_dtype_t *t) {
  ts_diag_t diag = {0};
  dot_module_t d;
  bool ok = false;
  if (dot_build(t, 1, 1, 1, 1, &d, &diag) >= 0) {
    uint64_t a[2] = {0}, b[2] = {0}, c[2] = {0}; /* one element of any type */
    buffers_t buf = {a, b, c, 1, 1, 1};
    ts_kernel_ctx_t ctx = {.diag = &diag};
    ok = run_dot(&ctx, &d, t, &buf, 1, 1, 1, 1) >= 0;
    ts_kernel_ctx_free(&ctx);
    dot_free(&d);
  }
  ts_diag_free(&diag);
  return ok;
}

int ts_bench_pt_gemm(ts_bench_pt_gemm_opts_t *o) {
  int rc;
  if ((rc = pt_output_open(&o->sw.out, TS_PERF_TABLE_GEMM))) return rc;

  /* The largest operands any point needs. */
  int64_t bmax = 0, dmax[3] = {0, 0, 0};
  for (int i = 0; i < o->nbatch; i++) bmax = o->batch[i] > bmax ? o->batch[i] : bmax;
  for (int d = 0; d < 3; d++)
    for (int i = 0; i < o->ndims[d]; i++) dmax[d] = o->dims[d][i] > dmax[d] ? o->dims[d][i] : dmax[d];
  buffers_t buf = {.lhs_n = (size_t)(bmax * dmax[0] * dmax[2]), .rhs_n = (size_t)(bmax * dmax[2] * dmax[1]),
                   .out_n = (size_t)(bmax * dmax[0] * dmax[1])};
  size_t points = (size_t)o->ntypes * (size_t)o->nbatch * (size_t)o->ndims[0] * (size_t)o->ndims[1] * (size_t)o->ndims[2];
  double work = 0;
  for (int bi = 0; bi < o->nbatch; bi++)
    for (int mi = 0; mi < o->ndims[0]; mi++)
      for (int ni = 0; ni < o->ndims[1]; ni++)
        for (int ki = 0; ki < o->ndims[2]; ki++)
          work += (double)o->ntypes * (o->sw.iters + o->sw.warmup) *
                  (2.0 * (double)o->batch[bi] * (double)o->dims[0][mi] * (double)o->dims[1][ni] * (double)o->dims[2][ki] + 1e6);

  ts_perf_table_t *table = NULL;
  ts_diag_t diag = {0};
  ts_kernel_ctx_t ctx = {.diag = &diag};
  size_t es = 1; /* the widest element of any dtype */
  for (int i = 0; i < o->ntypes; i++) {
    const ts_elem_t e[3] = {o->types[i].lhs, o->types[i].rhs, o->types[i].out};
    for (int j = 0; j < 3; j++)
      if ((size_t)ts_elem_storage_bytes(e[j]) > es) es = (size_t)ts_elem_storage_bytes(e[j]);
  }
  double *times = ts_calloc((size_t)o->sw.iters, sizeof *times);
  buf.lhs = ts_malloc(buf.lhs_n * es);
  buf.rhs = ts_malloc(buf.rhs_n * es);
  buf.out = ts_malloc(buf.out_n * es);
  rc = 0;
  if (!times || !buf.lhs || !buf.rhs || !buf.out || ts_perf_table_create(TS_PERF_TABLE_GEMM, &table) < 0) {
    fprintf(stderr, PT_CMD ": error: cannot allocate the operands of a [%lld,%lld,%lld] x [%lld,%lld,%lld] dot\n",
            (long long)bmax, (long long)dmax[0], (long long)dmax[2], (long long)bmax, (long long)dmax[2],
            (long long)dmax[1]);
    rc = 3;
    goto done;
  }
  printf("# tessera perf-table gemm: device '%s', %zu points, %d runs after %d warm-up\n", o->sw.device_key, points, o->sw.iters,
         o->sw.warmup);
  fflush(stdout);
  pt_progress_t progress;
  pt_progress_start(&progress, o->sw.progress, points, work);
  for (int ti = 0; ti < o->ntypes && rc == 0; ti++) {
    const ts_bench_pt_dtype_t *t = &o->types[ti];
    fill(t->lhs, buf.lhs, buf.lhs_n);
    fill(t->rhs, buf.rhs, buf.rhs_n);
    memset(buf.out, 0, buf.out_n * (size_t)ts_elem_storage_bytes(t->out));
    for (int bi = 0; bi < o->nbatch && rc == 0; bi++)
      for (int mi = 0; mi < o->ndims[0] && rc == 0; mi++)
        for (int ki = 0; ki < o->ndims[2] && rc == 0; ki++)
          for (int ni = 0; ni < o->ndims[1] && rc == 0; ni++) {
            int64_t b = o->batch[bi], m = o->dims[0][mi], n = o->dims[1][ni], k = o->dims[2][ki];
            dot_module_t d;
            ts_status_t st = dot_build(t, b, m, n, k, &d, &diag);
            for (int i = -o->sw.warmup; i < o->sw.iters && st >= 0; i++) {
              double t0 = pt_now();
              st = run_dot(&ctx, &d, t, &buf, b, m, n, k);
              if (i >= 0) times[i] = pt_now() - t0;
            }
            dot_free(&d);
            if (st < 0) {
              fprintf(stderr, "%s", diag.text ? diag.text : "");
              fprintf(stderr, PT_CMD ": error: the %s dot [%lld,%lld,%lld] x [%lld,%lld,%lld] failed\n", t->key,
                      (long long)b, (long long)m, (long long)k, (long long)b, (long long)k, (long long)n);
              rc = ts_status_exit_code(st);
              break;
            }
            double med = ts_bench_median(times, o->sw.iters), flops = 2.0 * (double)b * (double)m * (double)n * (double)k;
            char what[160];
            snprintf(what, sizeof what, "%s b=%lld m=%lld n=%lld k=%lld: %.3f ms, %.2f GFLOP/s", t->key, (long long)b,
                     (long long)m, (long long)n, (long long)k, med * 1e3, med > 0 ? flops / med / 1e9 : 0);
            if (med > 0 && flops / med >= 1) {
              ts_gemm_measurement_t gm = {b, m, n, k, t->key, (int64_t)(flops / med)};
              if (ts_perf_table_add_gemm(table, o->sw.device_key, &gm, &diag) < 0) {
                fprintf(stderr, "%s", diag.text ? diag.text : "");
                rc = 4;
              }
            } else {
              strncat(what, " (too fast to time: not recorded)", sizeof what - strlen(what) - 1);
            }
            double w = (double)(o->sw.iters + o->sw.warmup) * (flops + 1e6);
            pt_progress_step(&progress, w, what);
          }
  }
  if (rc == 0) {
    pt_progress_finish(&progress);
    rc = pt_output_write(&o->sw.out, table, o->sw.device_key);
  }
done:
  ts_kernel_ctx_free(&ctx);
  ts_diag_free(&diag);
  ts_free(times);
  ts_free(buf.lhs);
  ts_free(buf.rhs);
  ts_free(buf.out);
  ts_perf_table_destroy(table);
  pt_output_close(&o->sw.out);
  return rc;
}
