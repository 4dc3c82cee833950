/* tessera perf-table gemm: times the runtime's dot kernel (the interpreter's
 * ts_kernel_for(TS_OP_DOT), what the CPU runtime runs) on [b,m,k] x [b,k,n]
 * over XLA's GEMM grid (b in {1,2,4}, m/n/k from 256 to 4096 doubling, b
 * outermost then m, k, n, as XLA's table is ordered) and writes FLOP/s =
 * 2bmnk / median time as an xla.GemmPerfTable. */
#include "perftable_internal.h"
#include "ts_kernels.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIMS 32
#define MAX_TYPES 16

typedef struct {
  ts_elem_t lhs, rhs, out;
  char key[64]; /* "bf16xbf16->bf16" */
} dtype_t;

typedef struct {
  int64_t batch[MAX_DIMS], dims[3][MAX_DIMS]; /* m, n, k */
  int nbatch, ndims[3];
  dtype_t types[MAX_TYPES];
  int ntypes;
  pt_sweep_flags_t sw;
} opts_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera perf-table gemm [--batch=LIST] [-b MIN] [-e MAX] [--m=LIST] [--n=LIST] [--k=LIST]\n"
          "                               [--types=LIST] [-n RUNS] [-w WARMUP] [--device-key=KEY]\n"
          "                               [--progress=MODE] [--no-merge] [-o TABLE]\n"
          "\n"
          "Times the runtime's dot kernel on [b,m,k] x [b,k,n] for every b, m, n, k and\n"
          "dtype, and writes FLOP/s (2bmnk / median time) as XLA's GEMM table\n"
          "(xla.GemmPerfTable).\n"
          "\n"
          "  --batch=LIST          batch sizes b (default 1,2,4)\n"
          "  -b, --min SIZE        smallest m, n, k (default 256; K suffix allowed)\n"
          "  -e, --max SIZE        largest m, n, k, doubling from -b (default 4096)\n"
          "  --m=LIST, --n=LIST, --k=LIST   one dimension's values, instead of -b..-e\n"
          "  --types=LIST          dtype keys as XLA writes them (bf16xbf16->bf16), or one\n"
          "                        element type for all three (f32) (default\n"
          "                        f32xf32->f32,bf16xbf16->bf16)\n"
          "  -n, --runs N          timed runs per point; the median counts (default 5)\n"
          "  -w, --warmup N        untimed runs first (default 1)\n"
          "  --device-key=KEY      the table's device key (default host:<cpu model>)\n"
          "  --progress=MODE       auto (a bar on a terminal, else lines), bar, lines, none\n"
          "  --no-merge            replace TABLE instead of merging into it\n"
          "  -o, --output TABLE    .txtpb/.pbtxt (text) or .pb (binary); the plot goes to\n"
          "                        TABLE's name with .svg (default: text on stdout)\n"
          "  -h, --help            this help\n");
}

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

static ts_status_t dot_build(const dtype_t *t, int64_t b, int64_t m, int64_t n, int64_t k, dot_module_t *d,
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

static ts_status_t run_dot(ts_kernel_ctx_t *ctx, const dot_module_t *d, const dtype_t *t, const buffers_t *buf,
                           int64_t b, int64_t m, int64_t n, int64_t k) {
  int64_t ld[3] = {b, m, k}, rd[3] = {b, k, n}, od[3] = {b, m, n};
  ts_array_t in[2] = {{t->lhs, 3, ld, buf->lhs}, {t->rhs, 3, rd, buf->rhs}};
  ts_array_t out = {t->out, 3, od, buf->out};
  return ts_kernel_for(TS_OP_DOT)(ctx, d->dot, in, 2, &out, 1);
}

/* ---- flags ---------------------------------------------------------------- */

/* "f32", or "LHSxRHS->OUT" with HLO element names (XLA's key). */
static bool parse_dtype(const char *s, dtype_t *t) {
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
static bool dtype_runs(const dtype_t *t) {
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

static int parse_types(opts_t *o, const char *list) {
  char *copy = ts_strdup(list), *save = NULL;
  if (!copy) return 4;
  int rc = 0;
  o->ntypes = 0;
  for (char *s = strtok_r(copy, ",", &save); s && rc == 0; s = strtok_r(NULL, ",", &save)) {
    dtype_t t;
    if (o->ntypes == MAX_TYPES) rc = pt_bad("--types lists more than %d dtypes", MAX_TYPES);
    else if (!parse_dtype(s, &t) || !dtype_runs(&t))
      rc = pt_bad("unknown or unsupported dtype '%s' (an element type such as f32, or LHSxRHS->OUT such as "
                  "bf16xbf16->f32)",
                  s);
    else o->types[o->ntypes++] = t;
  }
  ts_free(copy);
  if (rc == 0 && o->ntypes == 0) rc = pt_bad("--types wants a list of dtypes");
  return rc;
}

static bool in_range(const int64_t *v, int n, int64_t max) {
  for (int i = 0; i < n; i++)
    if (v[i] > max) return false;
  return true;
}

int pt_cmd_gemm(int argc, char **argv) {
  static const struct option opts[] = {
      {"batch", required_argument, NULL, 'B'},  {"min", required_argument, NULL, 'b'},
      {"max", required_argument, NULL, 'e'},    {"m", required_argument, NULL, 'M'},
      {"n", required_argument, NULL, 'N'},      {"k", required_argument, NULL, 'K'},
      {"types", required_argument, NULL, 'T'},  {"runs", required_argument, NULL, 'n'},
      {"warmup", required_argument, NULL, 'w'}, {"device-key", required_argument, NULL, PT_OPT_DEVICE_KEY},
      {"progress", required_argument, NULL, PT_OPT_PROGRESS}, {"no-merge", no_argument, NULL, PT_OPT_NO_MERGE},
      {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  opts_t o = {.batch = {1, 2, 4}, .nbatch = 3, .sw = {.iters = 5, .warmup = 1, .out = {.merge = true}}};
  int64_t lo = 256, hi = 4096;
  bool dim_given[3] = {false, false, false};
  bool types_given = false;
  ts_costmodel_host_device_key(o.sw.device_key, sizeof o.sw.device_key);
  int c, rc, nv;
  int64_t v;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":b:e:n:w:o:h", opts, NULL)) != -1) {
    int shared = pt_sweep_flag(c, optarg, &o.sw);
    if (shared == 1) continue;
    if (shared) return shared;
    switch (c) {
    case 'B':
      if (!pt_parse_int_list(optarg, false, o.batch, MAX_DIMS, &o.nbatch) || !in_range(o.batch, o.nbatch, 1024))
        return pt_bad("--batch wants a list of integers from 1 to 1024, got '%s'", optarg);
      break;
    case 'b':
    case 'e':
      if (!pt_parse_int_list(optarg, true, &v, 1, &nv) || v > 65536)
        return pt_bad("%s wants a dimension from 1 to 64K, got '%s'", c == 'b' ? "-b" : "-e", optarg);
      *(c == 'b' ? &lo : &hi) = v;
      break;
    case 'M':
    case 'N':
    case 'K': {
      int d = c == 'M' ? 0 : c == 'N' ? 1 : 2;
      if (!pt_parse_int_list(optarg, true, o.dims[d], MAX_DIMS, &o.ndims[d]) || !in_range(o.dims[d], o.ndims[d], 65536))
        return pt_bad("--%c wants a list of dimensions from 1 to 64K, got '%s'", "mnk"[d], optarg);
      dim_given[d] = true;
      break;
    }
    case 'T':
      if ((rc = parse_types(&o, optarg))) return rc;
      types_given = true;
      break;
    case 'h': usage(stdout); return 0;
    case ':': return pt_bad("option '%s' needs a value", argv[optind - 1]);
    default: return pt_bad("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) return pt_bad("unexpected argument '%s'", argv[optind]);
  if (lo > hi) return pt_bad("-b is larger than -e: no size to sweep");
  for (int d = 0; d < 3; d++) {
    if (dim_given[d]) continue;
    o.ndims[d] = 0;
    for (int64_t s = lo; s <= hi && o.ndims[d] < MAX_DIMS; s *= 2) o.dims[d][o.ndims[d]++] = s;
  }
  if (!types_given) {
    parse_dtype("f32", &o.types[0]);
    parse_dtype("bf16", &o.types[1]);
    o.ntypes = 2;
  }
  if ((rc = pt_output_open(&o.sw.out, TS_PERF_TABLE_GEMM))) return rc;

  /* The largest operands any point needs. */
  int64_t bmax = 0, dmax[3] = {0, 0, 0};
  for (int i = 0; i < o.nbatch; i++) bmax = o.batch[i] > bmax ? o.batch[i] : bmax;
  for (int d = 0; d < 3; d++)
    for (int i = 0; i < o.ndims[d]; i++) dmax[d] = o.dims[d][i] > dmax[d] ? o.dims[d][i] : dmax[d];
  buffers_t buf = {.lhs_n = (size_t)(bmax * dmax[0] * dmax[2]), .rhs_n = (size_t)(bmax * dmax[2] * dmax[1]),
                   .out_n = (size_t)(bmax * dmax[0] * dmax[1])};
  size_t points = (size_t)o.ntypes * (size_t)o.nbatch * (size_t)o.ndims[0] * (size_t)o.ndims[1] * (size_t)o.ndims[2];
  double work = 0;
  for (int bi = 0; bi < o.nbatch; bi++)
    for (int mi = 0; mi < o.ndims[0]; mi++)
      for (int ni = 0; ni < o.ndims[1]; ni++)
        for (int ki = 0; ki < o.ndims[2]; ki++)
          work += (double)o.ntypes * (o.sw.iters + o.sw.warmup) *
                  (2.0 * (double)o.batch[bi] * (double)o.dims[0][mi] * (double)o.dims[1][ni] * (double)o.dims[2][ki] + 1e6);

  ts_perf_table_t *table = NULL;
  ts_diag_t diag = {0};
  ts_kernel_ctx_t ctx = {.diag = &diag};
  size_t es = 1; /* the widest element of any dtype */
  for (int i = 0; i < o.ntypes; i++) {
    const ts_elem_t e[3] = {o.types[i].lhs, o.types[i].rhs, o.types[i].out};
    for (int j = 0; j < 3; j++)
      if ((size_t)ts_elem_storage_bytes(e[j]) > es) es = (size_t)ts_elem_storage_bytes(e[j]);
  }
  double *times = ts_calloc((size_t)o.sw.iters, sizeof *times);
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
  printf("# tessera perf-table gemm: device '%s', %zu points, %d runs after %d warm-up\n", o.sw.device_key, points, o.sw.iters,
         o.sw.warmup);
  fflush(stdout);
  pt_progress_t progress;
  pt_progress_start(&progress, o.sw.progress, points, work);
  for (int ti = 0; ti < o.ntypes && rc == 0; ti++) {
    const dtype_t *t = &o.types[ti];
    fill(t->lhs, buf.lhs, buf.lhs_n);
    fill(t->rhs, buf.rhs, buf.rhs_n);
    memset(buf.out, 0, buf.out_n * (size_t)ts_elem_storage_bytes(t->out));
    for (int bi = 0; bi < o.nbatch && rc == 0; bi++)
      for (int mi = 0; mi < o.ndims[0] && rc == 0; mi++)
        for (int ki = 0; ki < o.ndims[2] && rc == 0; ki++)
          for (int ni = 0; ni < o.ndims[1] && rc == 0; ni++) {
            int64_t b = o.batch[bi], m = o.dims[0][mi], n = o.dims[1][ni], k = o.dims[2][ki];
            dot_module_t d;
            ts_status_t st = dot_build(t, b, m, n, k, &d, &diag);
            for (int i = -o.sw.warmup; i < o.sw.iters && st >= 0; i++) {
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
            double med = pt_median(times, o.sw.iters), flops = 2.0 * (double)b * (double)m * (double)n * (double)k;
            char what[160];
            snprintf(what, sizeof what, "%s b=%lld m=%lld n=%lld k=%lld: %.3f ms, %.2f GFLOP/s", t->key, (long long)b,
                     (long long)m, (long long)n, (long long)k, med * 1e3, med > 0 ? flops / med / 1e9 : 0);
            if (med > 0 && flops / med >= 1) {
              ts_gemm_measurement_t gm = {b, m, n, k, t->key, (int64_t)(flops / med)};
              if (ts_perf_table_add_gemm(table, o.sw.device_key, &gm, &diag) < 0) {
                fprintf(stderr, "%s", diag.text ? diag.text : "");
                rc = 4;
              }
            } else {
              strncat(what, " (too fast to time: not recorded)", sizeof what - strlen(what) - 1);
            }
            double w = (double)(o.sw.iters + o.sw.warmup) * (flops + 1e6);
            pt_progress_step(&progress, w, what);
          }
  }
  if (rc == 0) {
    pt_progress_finish(&progress);
    rc = pt_output_write(&o.sw.out, table, o.sw.device_key);
  }
done:
  ts_kernel_ctx_free(&ctx);
  ts_diag_free(&diag);
  ts_free(times);
  ts_free(buf.lhs);
  ts_free(buf.rhs);
  ts_free(buf.out);
  ts_perf_table_destroy(table);
  pt_output_close(&o.sw.out);
  return rc;
}
