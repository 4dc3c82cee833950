/* The performance-table collector's output (the table, merged into an
 * existing one, and its SVG plot) and the small helpers its sweeps share;
 * the tables are XLA's format (reference/cost_models.md §3-4). */
#include "bench_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int ts_bench_pt_error(const char *fmt, ...) {
  /* One write, so that the lines of several mpirun ranks do not interleave. */
  char msg[1024];
  int n = snprintf(msg, sizeof msg, PT_CMD ": error: ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof msg - (size_t)n - 1, fmt, ap);
  va_end(ap);
  strcat(msg, "\n");
  fputs(msg, stderr);
  return 2;
}

/* ---- helpers ------------------------------------------------------------ */

int ts_bench_xla_type(ts_elem_t e) {
  char up[32];
  const char *name = ts_elem_name(e);
  size_t n = strlen(name);
  if (n >= sizeof up) return 0;
  for (size_t i = 0; i <= n; i++) up[i] = (char)toupper((unsigned char)name[i]);
  /* The enum is small and dense: look the name up by value. */
  for (int t = 1; t < 64; t++)
    if (strcmp(ts_primitive_type_name(t), up) == 0) return t;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double ts_bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t fnv1a(const char *s, uint64_t h) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

void ts_bench_fingerprint(const char *desc, char out[33]) {
  uint64_t a = fnv1a(desc, 0xcbf29ce484222325ull), b = fnv1a(desc, a ^ 0x9e3779b97f4a7c15ull);
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

void ts_bench_format_bytes(int64_t bytes, char *buf, size_t n) {
  static const char suffix[] = "KMG";
  int s = -1;
  int64_t v = bytes;
  while (s < 2 && v >= 1024 && v % 1024 == 0) v /= 1024, s++;
  if (s < 0) snprintf(buf, n, "%lld", (long long)bytes);
  else snprintf(buf, n, "%lld%c", (long long)v, suffix[s]);
}

void ts_bench_format_duration(double s, char *buf, size_t n) {
  if (s < 0) s = 0;
  if (s < 1) snprintf(buf, n, "%.0fms", s * 1e3);
  else if (s < 60) snprintf(buf, n, "%.0fs", s);
  else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
  else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

double pt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- output --------------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

static const char *const table_suffixes[] = {".txtpb", ".pbtxt", ".textproto", ".binpb", ".pb"};

char *pt_svg_path(const char *table_path) {
  size_t n = strlen(table_path);
  for (size_t i = 0; i < sizeof table_suffixes / sizeof table_suffixes[0]; i++)
    if (has_suffix(table_path, table_suffixes[i])) {
      n -= strlen(table_suffixes[i]);
      break;
    }
  char *p = ts_malloc(n + 5);
  if (!p) return NULL;
  memcpy(p, table_path, n);
  memcpy(p + n, ".svg", 5);
  return p;
}

static const char *kind_noun(ts_perf_table_kind_t k) { return k == TS_PERF_TABLE_GEMM ? "GEMM" : "collective"; }

int pt_output_open(ts_bench_pt_output_t *o, ts_perf_table_kind_t kind) {
  o->base = NULL;
  if (!o->path) return 0;
  bool known = false;
  for (size_t i = 0; i < sizeof table_suffixes / sizeof table_suffixes[0]; i++) known |= has_suffix(o->path, table_suffixes[i]);
  if (!known)
    return ts_bench_pt_error("cannot tell the table format from '%s' (use .txtpb or .pbtxt for text, .pb for binary)", o->path);
  struct stat st;
  if (!o->merge || stat(o->path, &st) != 0) return 0; /* nothing there yet: a new table */
  ts_diag_t diag = {0};
  ts_perf_table_t *t = NULL;
  if (ts_perf_table_load(o->path, &t, &diag) < 0) {
    fprintf(stderr, "%s", diag.text ? diag.text : "error: cannot read the table\n");
    fprintf(stderr, PT_CMD ": error: cannot merge into '%s' (use --no-merge to replace it)\n", o->path);
    ts_diag_free(&diag);
    return 2;
  }
  ts_diag_free(&diag);
  if (ts_perf_table_kind(t) != kind) {
    ts_perf_table_kind_t held = ts_perf_table_kind(t);
    ts_perf_table_destroy(t);
    return ts_bench_pt_error("'%s' holds a %s table: cannot merge %s measurements into it", o->path, kind_noun(held),
                  kind_noun(kind));
  }
  o->base = t;
  return 0;
}

int pt_output_write(ts_bench_pt_output_t *o, const ts_perf_table_t *fresh, const char *device_key) {
  ts_diag_t diag = {0};
  int rc = 0;
  const ts_perf_table_t *t = fresh;
  if (o->base) {
    if (ts_perf_table_merge(o->base, fresh, &diag) < 0) {
      fprintf(stderr, "%s", diag.text ? diag.text : "error: cannot merge the tables\n");
      ts_diag_free(&diag);
      return 4;
    }
    t = o->base;
  }
  if (!o->path) {
    ts_buf_t b = {0};
    ts_status_t st = ts_perf_table_to_text(t, &b);
    if (st >= 0 && (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout) != 0)) {
      ts_diag_plain(&diag, "cannot write to stdout: %s", strerror(errno));
      st = TS_ERR_SYSTEM;
    }
    ts_buf_free(&b);
    if (st < 0) rc = ts_status_exit_code(st);
  } else {
    ts_status_t st = ts_perf_table_write(t, o->path, &diag);
    if (st < 0) {
      rc = ts_status_exit_code(st);
    } else {
      char *svg = pt_svg_path(o->path);
      ts_buf_t b = {0};
      st = svg ? (ts_perf_table_kind(t) == TS_PERF_TABLE_GEMM ? pt_svg_gemm : pt_svg_collectives)(t, device_key, &b,
                                                                                                   &diag)
               : TS_ERR_NOMEM;
      if (st >= 0) st = b.oom ? TS_ERR_NOMEM : ts_write_file_atomic(svg, b.data, b.len, &diag);
      if (st < 0) rc = ts_status_exit_code(st);
      else printf("# wrote %s and its plot %s\n", o->path, svg);
      ts_buf_free(&b);
      ts_free(svg);
    }
  }
  if (rc) {
    fprintf(stderr, "%s", diag.text ? diag.text : "");
    if (!diag.text) fprintf(stderr, PT_CMD ": error: cannot write the table\n");
  }
  ts_diag_free(&diag);
  return rc;
}

void pt_output_close(ts_bench_pt_output_t *o) {
  ts_perf_table_destroy(o->base);
  o->base = NULL;
}
