/* Parameter values per step, and the input feeder thread that prepares the
 * data batches ahead of the devices (tessera run). */
#include "ts_interp.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static bool file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Step k's seed: step 1 keeps the user's seed (a one-step run draws what
 * ts_interp_random_args does); later steps move by a large odd constant. */
static uint64_t step_seed(uint64_t seed, int64_t step) {
  return seed + (uint64_t)(step - 1) * UINT64_C(0x9e3779b97f4a7c15);
}

ts_status_t ts_interp_param_value(const ts_interp_inputs_t *in, int p, int64_t step, ts_value_t **out, ts_diag_t *diag) {
  char path[PATH_MAX];
  bool weight = in->is_weight && in->is_weight[p];
  if (in->dir) {
    if (!weight) {
      snprintf(path, sizeof path, "%s/step%lld/param%d.npy", in->dir, (long long)step, p);
      if (file_exists(path)) return ts_interp_load_param(in->m, path, p, out, diag);
    }
    snprintf(path, sizeof path, "%s/param%d.npy", in->dir, p);
    return ts_interp_load_param(in->m, path, p, out, diag);
  }
  if (weight && in->init_weights) return ts_interp_init_weight(in->m, in->seed, p, out);
  return ts_interp_random_param(in->m, step_seed(in->seed, weight ? 1 : step), p, out);
}

/* ---- the feeder ------------------------------------------------------------ */

typedef struct {
  int64_t step;      /* 0: free */
  int pending;       /* consumers that have not released it */
  ts_value_t **vals; /* np entries */
} slot_t;

struct ts_interp_feeder {
  ts_interp_inputs_t in;
  int np, depth, consumers;
  int64_t next, last;
  slot_t *slots;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop, paused;
  ts_status_t error;
  ts_diag_t diag;
};

static void slot_clear(ts_interp_feeder_t *f, slot_t *s) {
  for (int p = 0; p < f->np; p++) {
    ts_value_unref(s->vals[p]);
    s->vals[p] = NULL;
  }
  s->step = 0;
  s->pending = 0;
}

static struct timespec deadline_after(double seconds) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  double whole = (double)(int64_t)seconds;
  t.tv_sec += (time_t)whole;
  t.tv_nsec += (long)((seconds - whole) * 1e9);
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

static void *feeder_main(void *arg) {
  ts_interp_feeder_t *f = arg;
  ts_value_t **vals = ts_calloc((size_t)f->np + 1, sizeof *vals);
  pthread_mutex_lock(&f->mu);
  if (!vals) {
    f->error = TS_ERR_NOMEM;
    pthread_cond_broadcast(&f->cv);
  }
  while (vals && !f->stop && f->next <= f->last) {
    int64_t step = f->next;
    pthread_mutex_unlock(&f->mu);
    /* Prepare outside the lock: this is the work that overlaps compute. */
    ts_status_t st = TS_OK;
    ts_diag_t d = {0};
    for (int p = 0; p < f->np && st == TS_OK; p++)
      if (!f->in.is_weight[p]) st = ts_interp_param_value(&f->in, p, step, &vals[p], &d);
    pthread_mutex_lock(&f->mu);
    if (st != TS_OK) {
      f->error = st;
      f->diag = d;
      pthread_cond_broadcast(&f->cv);
      break;
    }
    ts_diag_free(&d);
    /* Wait for a free slot (or for being stopped); the wait is bounded
     * only by stop, which the command always sends. */
    slot_t *free_slot = NULL;
    while (!f->stop) {
      if (!f->paused)
        for (int k = 0; k < f->depth && !free_slot; k++)
          if (f->slots[k].step == 0) free_slot = &f->slots[k];
      if (free_slot) break;
      struct timespec t = deadline_after(0.1);
      pthread_cond_timedwait(&f->cv, &f->mu, &t);
    }
    if (!free_slot) break;
    free_slot->step = step;
    free_slot->pending = f->consumers;
    for (int p = 0; p < f->np; p++) {
      free_slot->vals[p] = vals[p];
      vals[p] = NULL;
    }
    f->next++;
    pthread_cond_broadcast(&f->cv);
  }
  pthread_mutex_unlock(&f->mu);
  if (vals)
    for (int p = 0; p < f->np; p++) ts_value_unref(vals[p]);
  ts_free(vals);
  ts_interp_release_buffers();
  return NULL;
}

ts_status_t ts_interp_feeder_start(const ts_interp_inputs_t *in, int64_t first, int64_t last, int depth, int consumers,
                             ts_interp_feeder_t **out) {
  ts_interp_feeder_t *f = ts_calloc(1, sizeof *f);
  if (!f) return TS_ERR_NOMEM;
  f->in = *in;
  f->np = in->m->entry->nparams;
  f->depth = depth > 0 ? depth : 1;
  f->consumers = consumers;
  f->next = first;
  f->last = last;
  f->slots = ts_calloc((size_t)f->depth, sizeof *f->slots);
  bool ok = f->slots != NULL;
  for (int k = 0; ok && k < f->depth; k++) ok = (f->slots[k].vals = ts_calloc((size_t)f->np + 1, sizeof(ts_value_t *))) != NULL;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (!ok || pthread_create(&f->thread, NULL, feeder_main, f) != 0) {
    for (int k = 0; f->slots && k < f->depth; k++) ts_free(f->slots[k].vals);
    ts_free(f->slots);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    ts_free(f);
    return TS_ERR_NOMEM;
  }
  *out = f;
  return TS_OK;
}

ts_status_t ts_interp_feeder_acquire(ts_interp_feeder_t *f, int64_t step, double timeout_s, ts_value_t *const **vals,
                               ts_diag_t *diag) {
  struct timespec until = deadline_after(timeout_s);
  pthread_mutex_lock(&f->mu);
  ts_status_t st = TS_ERR_TIMEOUT;
  for (;;) {
    slot_t *s = NULL;
    for (int k = 0; k < f->depth && !s; k++)
      if (f->slots[k].step == step) s = &f->slots[k];
    if (s) {
      *vals = s->vals;
      st = TS_OK;
      break;
    }
    if (f->error != TS_OK) {
      st = f->error;
      if (f->diag.text) ts_diag_plain(diag, "%s", f->diag.text);
      break;
    }
    if (f->stop || pthread_cond_timedwait(&f->cv, &f->mu, &until) == ETIMEDOUT) {
      ts_diag_plain(diag, "step %lld: no input batch from the input feeder within %.0f s", (long long)step,
                    timeout_s);
      break;
    }
  }
  pthread_mutex_unlock(&f->mu);
  return st;
}

void ts_interp_feeder_release(ts_interp_feeder_t *f, int64_t step) {
  pthread_mutex_lock(&f->mu);
  for (int k = 0; k < f->depth; k++) {
    slot_t *s = &f->slots[k];
    if (s->step == step && --s->pending == 0) {
      slot_clear(f, s);
      pthread_cond_broadcast(&f->cv);
    }
  }
  pthread_mutex_unlock(&f->mu);
}

void ts_interp_feeder_pause(ts_interp_feeder_t *f) {
  pthread_mutex_lock(&f->mu);
  f->paused = true;
  pthread_mutex_unlock(&f->mu);
}

void ts_interp_feeder_stop(ts_interp_feeder_t *f) {
  if (!f) return;
  pthread_mutex_lock(&f->mu);
  f->stop = true;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  pthread_join(f->thread, NULL);
  for (int k = 0; k < f->depth; k++) {
    slot_clear(f, &f->slots[k]);
    ts_free(f->slots[k].vals);
  }
  ts_free(f->slots);
  ts_diag_free(&f->diag);
  pthread_mutex_destroy(&f->mu);
  pthread_cond_destroy(&f->cv);
  ts_free(f);
}
