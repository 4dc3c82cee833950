/* How well the cost model's interpolators predict
 * a table. Leave-one-out: each stored point is predicted from the others
 * and compared with what was measured; the mean absolute percentage error
 * (MAPE) and the worst one, per device, per key (collective and scheme, or
 * GEMM dtype) and overall, for the weighted and the nearest modes. */
#include "bench_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Errors of one key under one mode. */
typedef struct {
  char key[96];
  size_t points, predicted;
  double sum, max; /* of APE, in % */
} stat_t;

typedef struct {
  stat_t s[64];
  size_t n;
  stat_t all;
  bool verbose;
  const char *mode;
} stats_t;

static void add(stats_t *st, const char *key, double measured, double predicted, const char *point) {
  stat_t *s = NULL;
  for (size_t i = 0; i < st->n && !s; i++)
    if (strcmp(st->s[i].key, key) == 0) s = &st->s[i];
  if (!s && st->n < sizeof st->s / sizeof st->s[0]) {
    s = &st->s[st->n++];
    snprintf(s->key, sizeof s->key, "%s", key);
  }
  stat_t *targets[2] = {s, &st->all};
  double ape = predicted >= 0 ? 100 * fabs(predicted - measured) / measured : -1;
  for (int i = 0; i < 2; i++) {
    if (!targets[i]) continue;
    targets[i]->points++;
    if (ape < 0) continue;
    targets[i]->predicted++;
    targets[i]->sum += ape;
    if (ape > targets[i]->max) targets[i]->max = ape;
  }
  if (st->verbose) {
    if (ape < 0)
      printf("  %-8s %s: measured %.4g s, nothing to predict it from\n", st->mode, point, measured);
    else
      printf("  %-8s %s: measured %.4g s, predicted %.4g s (%+.1f%%)\n", st->mode, point, measured, predicted,
             100 * (predicted - measured) / measured);
  }
}

static void coll_point(void *ctx, const ts_coll_loo_point_t *p) {
  char key[96], point[200];
  snprintf(key, sizeof key, "%s %s", ts_coll_kind_name(p->kind), ts_transfer_scheme_name(p->scheme));
  snprintf(point, sizeof point, "%s, %lld devices, %lld bytes", key, (long long)p->devices, (long long)p->tensor_bytes);
  add(ctx, key, p->measured_s, p->predicted_s, point);
}

static void gemm_point(void *ctx, const ts_gemm_loo_point_t *p) {
  char point[200];
  snprintf(point, sizeof point, "%s b=%lld m=%lld n=%lld k=%lld", p->dtype, (long long)p->b, (long long)p->m,
           (long long)p->n, (long long)p->k);
  add(ctx, p->dtype, p->measured_s, p->predicted_s, point);
}

static double mape(const stat_t *s) { return s->predicted ? s->sum / (double)s->predicted : 0; }

static void print_row(const char *key, const stat_t *const by_mode[2], int nmodes) {
  printf("  %-42s %6zu", key, by_mode[0]->points);
  for (int m = 0; m < nmodes; m++) printf(" %14.2f %8.2f", mape(by_mode[m]), by_mode[m]->max);
  printf("\n");
}

/* Scores one device of a table; *worst gets the largest overall MAPE. */
static int check_device(const ts_perf_table_t *t, const char *path, const char *device, const ts_interp_mode_t *modes,
                        int nmodes, bool verbose, double *worst) {
  ts_diag_t diag = {0};
  stats_t *st = ts_calloc((size_t)nmodes, sizeof *st);
  if (!st) return 4;
  bool gemm = ts_perf_table_kind(t) == TS_PERF_TABLE_GEMM;
  ts_coll_interp_t *ci = NULL;
  ts_gemm_interp_t *gi = NULL;
  ts_status_t s = gemm ? ts_gemm_interp_create(t, device, &gi, &diag) : ts_coll_interp_create(t, device, &ci, &diag);
  for (int m = 0; m < nmodes && s >= 0; m++) {
    ts_loo_result_t r;
    st[m].verbose = verbose;
    st[m].mode = ts_interp_mode_name(modes[m]);
    s = gemm ? ts_gemm_interp_loo(gi, modes[m], gemm_point, &st[m], &r)
             : ts_coll_interp_loo(ci, modes[m], coll_point, &st[m], &r);
  }
  int rc = 0;
  if (s < 0) {
    fprintf(stderr, "%s: %s", path, diag.text ? diag.text : "error: cannot read the table\n");
    rc = 2;
  } else {
    printf("# device '%s': %zu points; APE = |predicted - measured| / measured of the time\n", device, st[0].all.points);
    printf("# %-42s %6s", "key", "points");
    for (int m = 0; m < nmodes; m++) {
      char col[32];
      snprintf(col, sizeof col, "%s_MAPE%%", ts_interp_mode_name(modes[m]));
      printf(" %14s %8s", col, "max%");
    }
    printf("\n");
    for (size_t k = 0; k < st[0].n; k++) {
      const stat_t *row[2] = {&st[0].s[k], nmodes > 1 ? &st[1].s[k] : NULL};
      print_row(st[0].s[k].key, row, nmodes);
    }
    const stat_t *row[2] = {&st[0].all, nmodes > 1 ? &st[1].all : NULL};
    print_row("all", row, nmodes);
    for (int m = 0; m < nmodes; m++) {
      if (st[m].all.predicted < st[m].all.points)
        printf("# %s: %zu points had no other point to be predicted from\n", st[m].mode,
               st[m].all.points - st[m].all.predicted);
      if (mape(&st[m].all) > *worst) *worst = mape(&st[m].all);
    }
  }
  ts_coll_interp_destroy(ci);
  ts_gemm_interp_destroy(gi);
  ts_diag_free(&diag);
  ts_free(st);
  return rc;
}

int ts_bench_pt_check(const char *const *paths, int npaths, const ts_bench_pt_check_opts_t *o) {
  int rc = 0;
  double worst = 0;
  for (int i = 0; i < npaths; i++) {
    const char *path = paths[i];
    ts_diag_t diag = {0};
    ts_perf_table_t *t = NULL;
    if (ts_perf_table_load(path, &t, &diag) < 0) {
      /* A table named on the command line that does not load is bad input. */
      fprintf(stderr, "%s", diag.text ? diag.text : "error: cannot read the table\n");
      ts_diag_free(&diag);
      rc = 2;
      continue;
    }
    ts_diag_free(&diag);
    size_t nd = ts_perf_table_num_devices(t);
    printf("# %s: %s table, %zu device%s; leave-one-out: each point predicted from the others\n", path,
           ts_perf_table_kind(t) == TS_PERF_TABLE_GEMM ? "GEMM" : "collective", nd, nd == 1 ? "" : "s");
    bool seen = false;
    for (size_t d = 0; d < nd; d++) {
      const char *key = ts_perf_table_device(t, d);
      bool later_twice = false; /* a key given twice: the later one counts, score it once */
      for (size_t e = d + 1; e < nd; e++) later_twice |= strcmp(ts_perf_table_device(t, e), key) == 0;
      if (later_twice || (o->device && strcmp(o->device, key) != 0)) continue;
      seen = true;
      int r = check_device(t, path, key, o->modes, o->nmodes, o->verbose, &worst);
      if (r > rc) rc = r;
    }
    if (o->device && !seen) {
      fprintf(stderr, PT_CMD ": error: %s has no device '%s'\n", path, o->device);
      rc = 2;
    }
    ts_perf_table_destroy(t);
  }
  if (rc == 0 && o->max_mape >= 0 && worst > o->max_mape) {
    fprintf(stderr, PT_CMD ": check failed: a MAPE of %.2f%% exceeds --max-mape %.2f%%\n", worst, o->max_mape);
    rc = 1;
  }
  return rc;
}
