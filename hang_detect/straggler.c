/* Straggler detection from heartbeat samples: a worker whose busy time per
 * step (step minus collective wait) stays well above its peers' is slow;
 * its peers show the same time as collective wait instead. Relative
 * scoring, as NVRx's straggler detector does (reference/hang_detection.md
 * §4c), confirmed over several samples so that one slow step is no
 * straggler. */
#include <stdlib.h>
#include <string.h>

#include "hang_internal.h"

#define WINDOW 8  /* samples kept per worker */
#define CONFIRM 3 /* consecutive slow samples that make a straggler */

typedef struct {
  char host[TS_HANG_HOST_MAX];
  int64_t last_step;
  int nsamples; /* total added; the newest is at (nsamples - 1) % WINDOW */
  double busy[WINDOW], coll[WINDOW];
} track_t;

struct ts_hang_stragglers {
  int n;
  double ratio, min_extra;
  track_t *w;
};

ts_status_t ts_hang_stragglers_create(int n, double ratio, double min_extra_s, ts_hang_stragglers_t **out) {
  *out = NULL;
  if (n <= 0) return TS_ERR_INVALID_ARGUMENT;
  ts_hang_stragglers_t *s = ts_calloc(1, sizeof *s);
  if (!s || !(s->w = ts_calloc((size_t)n, sizeof *s->w))) {
    ts_free(s);
    return TS_ERR_NOMEM;
  }
  s->n = n;
  s->ratio = ratio > 1 ? ratio : 1.5;
  s->min_extra = min_extra_s >= 0 ? min_extra_s : 0.002;
  *out = s;
  return TS_OK;
}

void ts_hang_stragglers_destroy(ts_hang_stragglers_t *s) {
  if (!s) return;
  ts_free(s->w);
  ts_free(s);
}

void ts_hang_stragglers_add(ts_hang_stragglers_t *s, int rank, const char *host, int64_t step, uint64_t step_ns,
                            uint64_t compute_ns, uint64_t collective_ns) {
  (void)compute_ns; /* busy time includes the runtime's own work and injected delays; kernels alone miss them */
  if (!s || rank < 0 || rank >= s->n || step_ns == 0) return;
  track_t *t = &s->w[rank];
  if (step <= t->last_step) return;
  t->last_step = step;
  ts_hang_strlcpy(t->host, host ? host : "", sizeof t->host);
  int k = t->nsamples++ % WINDOW;
  uint64_t busy = step_ns > collective_ns ? step_ns - collective_ns : 0;
  t->busy[k] = (double)busy * 1e-9;
  t->coll[k] = (double)collective_ns * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Median of a worker's recent samples of `which` (busy or coll). */
static double recent_median(const track_t *t, const double *which) {
  int have = t->nsamples < WINDOW ? t->nsamples : WINDOW;
  double v[WINDOW];
  for (int i = 0; i < have; i++) v[i] = which[i];
  return median(v, have);
}

int ts_hang_stragglers_report(const ts_hang_stragglers_t *s, ts_buf_t *out) {
  if (!s) return 0;
  double *others = ts_malloc(sizeof(double) * (size_t)s->n);
  bool *slow = ts_calloc((size_t)s->n, sizeof(bool));
  int count = 0;
  if (!others || !slow) goto done;
  for (int r = 0; r < s->n; r++) {
    const track_t *t = &s->w[r];
    if (t->nsamples < CONFIRM) continue;
    int m = 0;
    for (int j = 0; j < s->n; j++)
      if (j != r && s->w[j].nsamples > 0) others[m++] = recent_median(&s->w[j], s->w[j].busy);
    if (m == 0) continue;
    double ref = median(others, m);
    bool all = true;
    for (int i = 0; i < CONFIRM && all; i++) {
      double b = t->busy[(t->nsamples - 1 - i) % WINDOW];
      all = b > s->ratio * ref && b - ref > s->min_extra;
    }
    if (!all) continue;
    slow[r] = true;
    count++;
    m = 0;
    for (int j = 0; j < s->n; j++)
      if (j != r && s->w[j].nsamples > 0) others[m++] = recent_median(&s->w[j], s->w[j].coll);
    double ref_coll = median(others, m), mine = recent_median(t, t->busy);
    ts_buf_printf(out,
                  "Tessera detects a straggler: rank %d on host %s is consistently slower than its peers: busy "
                  "%.1f ms per step vs %.1f ms (median of the others, %.1fx); waits in collectives %.1f ms vs "
                  "%.1f ms\n",
                  r, t->host, mine * 1e3, ref * 1e3, ref > 0 ? mine / ref : 0.0,
                  recent_median(t, t->coll) * 1e3, ref_coll * 1e3);
  }
  /* A whole host slow (several hosts, every worker of this one slow). */
  for (int r = 0; r < s->n; r++) {
    if (!slow[r]) continue;
    bool first = true, whole = true, other_host = false;
    for (int j = 0; j < s->n; j++) {
      bool same = !strcmp(s->w[j].host, s->w[r].host);
      if (same && j < r && slow[j]) first = false;
      if (same && !slow[j]) whole = false;
      if (!same && s->w[j].nsamples > 0) other_host = true;
    }
    if (first && whole && other_host)
      ts_buf_printf(out, "Tessera detects a straggler host: %s (every worker on it is slow)\n", s->w[r].host);
  }
done:
  ts_free(others);
  ts_free(slow);
  return count;
}
