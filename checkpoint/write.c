/* Writing checkpoints during a run: the shard plan (which device writes
 * which box), the snapshot at the step boundary, the writer thread, and
 * the commit protocol (an all-gather of every device's progress while a
 * checkpoint is pending; device 0 renames step-K.tmp/ to step-K/). */
#include "ckpt_internal.h"
#include "ts_env.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* snprintf that may truncate (paths in one-line messages). */
static void msgf(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void msgf(char *dst, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dst, n, fmt, ap);
  va_end(ap);
}

/* ---- the shard plan ------------------------------------------------------ */

/* Device d's box of array a. */
static ts_status_t device_box(const ts_ckpt_t *c, const ckpt_array_t *a, int64_t d, int64_t *start, int64_t *limit) {
  if (!a->sv) {
    for (int k = 0; k < a->shape->rank; k++) {
      start[k] = 0;
      limit[k] = a->shape->dims[k];
    }
    return TS_OK;
  }
  return ts_sharding_shard(a->sv, a->shape, d % c->o.partitions, start, limit);
}

static bool same_box(int rank, const int64_t *s1, const int64_t *l1, const int64_t *s2, const int64_t *l2) {
  for (int k = 0; k < rank; k++)
    if (s1[k] != s2[k] || l1[k] != l2[k]) return false;
  return true;
}

/* The distinct non-empty boxes of every array, each with the device that
 * writes it: of its holders, the one with the fewest bytes to write so far
 * (ties: from holder number array index mod holders on), so that replicated
 * arrays spread over the devices instead of all landing on device 0. Every
 * rank computes the same plan. */
static ts_status_t plan(ts_ckpt_t *c, ts_diag_t *diag) {
  int W = c->o.ndevices;
  int cap = 0;
  int *holders = ts_calloc((size_t)W + 1, sizeof *holders);
  int64_t *load = ts_calloc((size_t)W + 1, sizeof *load);
  if (!holders || !load) {
    ts_free(holders);
    ts_free(load);
    return TS_ERR_NOMEM;
  }
  ts_status_t st = TS_OK;
  for (int k = 0; k < c->narrays && st == TS_OK; k++) {
    ckpt_array_t *a = &c->arrays[k];
    a->first_file = c->nfiles;
    int rank = a->shape->rank;
    for (int d = 0; d < W && st == TS_OK; d++) {
      int64_t s[TS_CKPT_MAX_RANK], l[TS_CKPT_MAX_RANK];
      if ((st = device_box(c, a, d, s, l)) != TS_OK) {
        ts_diag_plain(diag, "checkpoint: cannot place %s on device %d: %s", a->name, d, ts_status_string(st));
        break;
      }
      bool empty = false;
      for (int r = 0; r < rank; r++) empty |= l[r] <= s[r];
      if (empty) continue;
      bool seen = false;
      for (int f = a->first_file; f < c->nfiles && !seen; f++) seen = same_box(rank, s, l, c->files[f].start, c->files[f].limit);
      if (seen) continue;
      if (c->nfiles == cap) {
        cap = cap ? 2 * cap : 64;
        ckpt_file_t *g = ts_realloc(c->files, (size_t)cap * sizeof *g);
        if (!g) {
          st = TS_ERR_NOMEM;
          break;
        }
        c->files = g;
      }
      ckpt_file_t *f = &c->files[c->nfiles];
      memset(f, 0, sizeof *f);
      f->array = k;
      memcpy(f->start, s, sizeof s);
      memcpy(f->limit, l, sizeof l);
      int64_t n = 1;
      for (int r = 0; r < rank; r++) n *= l[r] - s[r];
      f->bytes = n * ts_elem_storage_bytes(a->shape->elem);
      snprintf(f->name, sizeof f->name, "p%d.s%d.npy", a->param, c->nfiles - a->first_file);
      /* Its holders: the devices whose box is this one. */
      int nh = 0;
      for (int e = 0; e < W && st == TS_OK; e++) {
        int64_t s2[TS_CKPT_MAX_RANK], l2[TS_CKPT_MAX_RANK];
        if ((st = device_box(c, a, e, s2, l2)) == TS_OK && same_box(rank, s, l, s2, l2)) holders[nh++] = e;
      }
      int best = holders[k % nh];
      for (int h = 0; h < nh; h++) {
        int cand = holders[(k + h) % nh];
        if (load[cand] < load[best]) best = cand;
      }
      f->owner = best;
      load[best] += f->bytes;
      c->nfiles++;
    }
    a->nfiles = c->nfiles - a->first_file;
  }
  ts_free(holders);
  ts_free(load);
  if (st != TS_OK) return st;
  /* Each device's files, and the largest count (the all-gather's records). */
  int *count = ts_calloc((size_t)W + 1, sizeof *count);
  if (!count) return TS_ERR_NOMEM;
  for (int f = 0; f < c->nfiles; f++) c->files[f].pos = count[c->files[f].owner]++;
  for (int d = 0; d < W; d++)
    if (count[d] > c->maxown) c->maxown = count[d];
  ts_free(count);
  c->rec_bytes = (32 + sizeof(((ckpt_local_t *)0)->msg) + 4 * (size_t)c->maxown + 7) / 8 * 8;
  if (!(c->commit_all = ts_calloc((size_t)W, c->rec_bytes))) return TS_ERR_NOMEM;
  for (int l = 0; l < c->o.nlocal; l++) {
    ckpt_local_t *L = &c->local[l];
    int dev = c->o.first + l;
    size_t off = 0;
    for (int f = 0; f < c->nfiles; f++) L->nown += c->files[f].owner == dev;
    L->own = ts_calloc((size_t)L->nown + 1, sizeof *L->own);
    L->snap_off = ts_calloc((size_t)L->nown + 1, sizeof *L->snap_off);
    L->crc = ts_calloc((size_t)L->nown + 1, sizeof *L->crc);
    L->rec = ts_calloc(1, c->rec_bytes);
    L->all = ts_calloc((size_t)W, c->rec_bytes);
    if (!L->own || !L->snap_off || !L->crc || !L->rec || !L->all) return TS_ERR_NOMEM;
    int n = 0;
    for (int f = 0; f < c->nfiles; f++)
      if (c->files[f].owner == dev) {
        L->own[n] = f;
        L->snap_off[n++] = off;
        off += ((size_t)c->files[f].bytes + 63) / 64 * 64;
      }
    L->snap_bytes = off;
    if (!(L->snap = ts_malloc(off + 1))) return TS_ERR_NOMEM;
    /* First touch now, not in the step that takes the first snapshot. */
    memset(L->snap, 0, off);
  }
  return TS_OK;
}

/* ---- the writer thread ---------------------------------------------------- */

/* Writes the header and data of one file, crc over both; the caller
 * fsyncs and closes *fd (all files are written first, then synced: the
 * file system commits its journal once instead of once per file). */
static bool write_file(const char *path, const char *hdr, size_t hlen, const char *data, size_t n, uint32_t *crc,
                       int *fd_out, char *msg, size_t msgn) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    msgf(msg, msgn, "cannot create %s: %s", path, strerror(errno));
    return false;
  }
  uint32_t c = ckpt_crc32(0, NULL, 0);
  c = ckpt_crc32(c, hdr, hlen);
  c = ckpt_crc32(c, data, n);
  *crc = c;
  const char *parts[2] = {hdr, data};
  size_t lens[2] = {hlen, n};
  for (int p = 0; p < 2; p++) {
    const char *q = parts[p];
    size_t left = lens[p];
    while (left > 0) {
      size_t chunk = left > (8u << 20) ? (8u << 20) : left;
      ssize_t w = write(fd, q, chunk);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        msgf(msg, msgn, "cannot write %s: %s", path, strerror(w < 0 ? errno : ENOSPC));
        close(fd);
        return false;
      }
      q += w;
      left -= (size_t)w;
    }
  }
  *fd_out = fd;
  return true;
}

/* Rehearsals (tests): TESSERA_CHECKPOINT_WRITE_DELAY_MS sleeps before each file. */
static void test_delay(void) {
  const char *e = ts_env_get(TS_ENV_CHECKPOINT_WRITE_DELAY_MS);
  double ms = e ? atof(e) : 0;
  if (ms > 0) nanosleep(&(struct timespec){(time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6)}, NULL);
}

static bool write_local(ts_ckpt_t *c, ckpt_local_t *L, int64_t step) {
  char tmp[PATH_MAX], path[PATH_MAX];
  ckpt_step_path(tmp, sizeof tmp, c->dir, step, true);
  if (ckpt_mkdir(c->dir) != 0 || ckpt_mkdir(tmp) != 0) {
    msgf(L->msg, sizeof L->msg, "cannot create %s: %s", tmp, strerror(errno));
    return false;
  }
  int *fds = ts_calloc((size_t)L->nown + 1, sizeof *fds);
  if (!fds) {
    msgf(L->msg, sizeof L->msg, "out of memory");
    return false;
  }
  int nopen = 0;
  bool ok = true;
  for (int i = 0; i < L->nown && ok; i++) {
    const ckpt_file_t *f = &c->files[L->own[i]];
    const ckpt_array_t *a = &c->arrays[f->array];
    int64_t dims[TS_CKPT_MAX_RANK];
    for (int r = 0; r < a->shape->rank; r++) dims[r] = f->limit[r] - f->start[r];
    char hdr[2048];
    size_t hlen = ckpt_npy_header(a->shape->elem, a->shape->rank, dims, hdr, sizeof hdr);
    msgf(path, sizeof path, "%s/%s", tmp, f->name);
    if (hlen == 0) {
      msgf(L->msg, sizeof L->msg, "%s: no .npy header for %s", path, ts_elem_name(a->shape->elem));
      ok = false;
      break;
    }
    test_delay();
    ok = write_file(path, hdr, hlen, L->snap + L->snap_off[i], (size_t)f->bytes, &L->crc[i], &fds[nopen], L->msg,
                    sizeof L->msg);
    if (ok) nopen++;
  }
  for (int i = 0; i < nopen; i++) {
    if (ok && fsync(fds[i]) != 0) {
      msgf(L->msg, sizeof L->msg, "cannot write %s/%s: %s", tmp, c->files[L->own[i]].name, strerror(errno));
      ok = false;
    }
    if (close(fds[i]) != 0 && ok) {
      msgf(L->msg, sizeof L->msg, "cannot write %s/%s: %s", tmp, c->files[L->own[i]].name, strerror(errno));
      ok = false;
    }
  }
  ts_free(fds);
  if (ok && L->nown && ckpt_fsync_dir(tmp) != 0) {
    msgf(L->msg, sizeof L->msg, "cannot sync %s: %s", tmp, strerror(errno));
    ok = false;
  }
  return ok;
}

static void settle(ts_ckpt_t *c, int64_t step, int failed, const char *all);

static void *writer_main(void *arg) {
  ts_ckpt_t *c = arg;
  pthread_mutex_lock(&c->mu);
  /* A requested commit is finished even when stopping: its files are all
   * written, so it is a complete checkpoint. */
  while (!c->stop || c->commit_step) {
    if (c->commit_step) {
      int64_t step = c->commit_step;
      pthread_mutex_unlock(&c->mu);
      settle(c, step, c->commit_failed, c->commit_all);
      pthread_mutex_lock(&c->mu);
      c->commit_step = 0;
      pthread_cond_broadcast(&c->cv);
      continue;
    }
    ckpt_local_t *L = NULL;
    for (int l = 0; l < c->o.nlocal && !L; l++)
      if (c->local[l].state == CK_QUEUED) L = &c->local[l];
    if (!L) {
      pthread_cond_wait(&c->cv, &c->mu);
      continue;
    }
    int64_t step = L->job_step;
    pthread_mutex_unlock(&c->mu);
    double t0 = ts_now_ms();
    bool ok = write_local(c, L, step);
    double ms = ts_now_ms() - t0;
    pthread_mutex_lock(&c->mu);
    c->stats.write_ms += ms;
    if (ok)
      for (int i = 0; i < L->nown; i++) c->stats.written_bytes += c->files[L->own[i]].bytes;
    L->state = ok ? CK_DONE : CK_FAILED;
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* ---- create / destroy ------------------------------------------------------ */

/* Removes what killed or failed writes left behind (device 0's process, before
 * any device runs a step: no writer of this run is writing yet). */
static void remove_leftovers(const char *dir) {
  int64_t *steps;
  int n;
  ts_diag_t d = {0};
  if (ts_ckpt_list_partial(dir, &steps, &n, &d) == TS_OK) {
    char p[PATH_MAX];
    for (int i = 0; i < n; i++) {
      ckpt_step_path(p, sizeof p, dir, steps[i], true);
      ckpt_remove_dir(p);
    }
    ts_free(steps);
  }
  ts_diag_free(&d);
}

ts_status_t ts_ckpt_create(const ts_ckpt_opts_t *o, ts_ckpt_t **out, ts_diag_t *diag) {
  *out = NULL;
  ts_ckpt_flags_t fl = o->flags;
  if (!ts_ckpt_flags_any(&fl)) {
    if (fl.every) {
      ts_diag_plain(diag, "--checkpoint-every needs --checkpoint-dir DIR");
      return TS_ERR_INVALID_USAGE;
    }
    return TS_OK;
  }
  if (!o->loop) {
    ts_diag_plain(diag, "--checkpoint-dir and --resume need --loop (a training loop has state to save)");
    return TS_ERR_INVALID_USAGE;
  }
  /* --resume DIR --checkpoint-every K goes on writing into DIR. */
  if (!fl.dir && fl.every) fl.dir = fl.resume;
  ts_ckpt_t *c = ts_calloc(1, sizeof *c);
  if (!c) return TS_ERR_NOMEM;
  c->o = *o;
  c->o.flags = fl;
  c->dir = fl.dir;
  c->writing = fl.dir != NULL;
  c->first_step = 1;
  c->seed = o->seed;
  c->timeout_s = o->timeout_s > 0 ? o->timeout_s : 300;
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  ts_status_t st = TS_OK;
  const ts_hlo_comp_t *e = o->m->entry;
  c->arena = ts_arena_create();
  c->arrays = ts_calloc((size_t)e->nparams + 1, sizeof *c->arrays);
  c->local = ts_calloc((size_t)o->nlocal + 1, sizeof *c->local);
  if (!c->arena || !c->arrays || !c->local) {
    st = TS_ERR_NOMEM;
    goto fail;
  }
  for (int p = 0; p < e->nparams; p++) {
    if (!o->is_weight[p]) continue;
    const ts_hlo_instr_t *pi = e->params[p];
    if (!ts_shape_is_array(pi->shape) || pi->shape->rank > TS_CKPT_MAX_RANK) {
      ts_diag_plain(diag, "checkpoint: parameter %d (%s) is not an array of rank <= %d", p, pi->name, TS_CKPT_MAX_RANK);
      st = TS_ERR_UNSUPPORTED;
      goto fail;
    }
    ckpt_array_t *a = &c->arrays[c->narrays++];
    a->name = ckpt_param_name(c->arena, pi);
    a->param = p;
    a->shape = pi->shape;
    a->sv = o->param_sv ? o->param_sv[p] : NULL;
    ts_buf_t b = {0};
    if (a->sv) ts_sharding_value_print(&b, a->sv);
    a->sharding = ts_arena_strdup(c->arena, b.data ? b.data : "{replicated}");
    ts_buf_free(&b);
    if (!a->name || !a->sharding) {
      st = TS_ERR_NOMEM;
      goto fail;
    }
  }
  if (fl.resume) TS_CHECK_GOTO(ckpt_open_resume(c, diag), st, fail);
  TS_CHECK_GOTO(plan(c, diag), st, fail);
  if (c->writing) {
    if (o->first == 0) {
      if (ckpt_mkdir(c->dir) != 0) {
        st = ts_diag_path_error(diag, c->dir, TS_ERR_INVALID_ARGUMENT, "cannot create the checkpoint folder: %s",
                                strerror(errno));
        goto fail;
      }
      remove_leftovers(c->dir);
    }
    if (pthread_create(&c->thread, NULL, writer_main, c) != 0) {
      st = TS_ERR_SYSTEM;
      goto fail;
    }
    c->started = true;
  }
  *out = c;
  return TS_OK;
fail:
  ts_ckpt_destroy(c);
  return st;
}

void ts_ckpt_destroy(ts_ckpt_t *c) {
  if (!c) return;
  if (c->started) {
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
  }
  for (int l = 0; c->local && l < c->o.nlocal; l++) {
    ckpt_local_t *L = &c->local[l];
    ts_free(L->own);
    ts_free(L->snap_off);
    ts_free(L->snap);
    ts_free(L->crc);
    ts_free(L->rec);
    ts_free(L->all);
  }
  ts_free(c->local);
  ts_free(c->commit_all);
  ts_free(c->files);
  ts_free(c->arrays);
  ts_free(c->rmap);
  ts_ckpt_manifest_free(&c->rm);
  ts_arena_destroy(c->arena);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  ts_free(c);
}

int64_t ts_ckpt_first_step(const ts_ckpt_t *c) { return c ? c->first_step : 1; }
uint64_t ts_ckpt_seed(const ts_ckpt_t *c, uint64_t seed) { return c && c->resuming ? c->seed : seed; }
int ts_ckpt_narrays(const ts_ckpt_t *c) { return c ? c->narrays : 0; }
int ts_ckpt_array_param(const ts_ckpt_t *c, int k) { return c->arrays[k].param; }
const char *ts_ckpt_resumed_from(const ts_ckpt_t *c) { return c && c->resuming ? c->resume_dir : ""; }

void ts_ckpt_stats(const ts_ckpt_t *c, ts_ckpt_stats_t *out) {
  memset(out, 0, sizeof *out);
  if (!c) return;
  pthread_mutex_lock((pthread_mutex_t *)&c->mu);
  *out = c->stats;
  pthread_mutex_unlock((pthread_mutex_t *)&c->mu);
}

/* ---- snapshot and commit ------------------------------------------------ */

typedef struct {
  char *dst;
  const char *src;
  size_t es;
} copy_arg_t;

static ts_status_t copy_run(void *arg, int64_t dst_at, int64_t src_at, int64_t n) {
  copy_arg_t *a = arg;
  memcpy(a->dst + (size_t)dst_at * a->es, a->src + (size_t)src_at * a->es, (size_t)n * a->es);
  return TS_OK;
}

/* Copies this device's boxes out of its state buffers (a padded shard:
 * the box is its leading corner) and queues them for the writer. */
static ts_status_t snapshot(ts_ckpt_t *c, int local, int64_t step, ts_array_t *const *state, ts_diag_t *diag) {
  ckpt_local_t *L = &c->local[local];
  double t0 = ts_now_ms();
  for (int i = 0; i < L->nown; i++) {
    const ckpt_file_t *f = &c->files[L->own[i]];
    const ckpt_array_t *a = &c->arrays[f->array];
    const ts_array_t *s = state[f->array];
    int rank = a->shape->rank;
    if (!s || s->rank != rank || s->elem != a->shape->elem) {
      ts_diag_plain(diag, "checkpoint: the state buffer of %s does not match its parameter", a->name);
      return TS_ERR_INTERNAL;
    }
    int64_t ext[TS_CKPT_MAX_RANK], zero[TS_CKPT_MAX_RANK] = {0};
    for (int r = 0; r < rank; r++) ext[r] = f->limit[r] - f->start[r];
    copy_arg_t ca = {L->snap + L->snap_off[i], s->data, (size_t)ts_elem_storage_bytes(s->elem)};
    TS_CHECK(ckpt_box_runs(rank, ext, ext, zero, s->dims, zero, copy_run, &ca));
  }
  pthread_mutex_lock(&c->mu);
  L->job_step = step;
  L->msg[0] = 0;
  L->state = L->nown ? CK_QUEUED : CK_DONE;
  if (c->o.first + local == 0) c->stats.snapshot_ms += ts_now_ms() - t0;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  L->pending = true;
  L->pending_step = step;
  return TS_OK;
}

/* The record each device contributes to the all-gather. */
typedef struct {
  int32_t state;
  int32_t device;
  int64_t step;
  int64_t pad[2];
} rec_head_t;

static void prune(ts_ckpt_t *c) {
  int64_t *steps;
  int n;
  ts_diag_t d = {0};
  if (ts_ckpt_list_steps(c->dir, &steps, &n, &d) != TS_OK) {
    ts_diag_free(&d);
    return;
  }
  char p[PATH_MAX];
  for (int i = 0; i + c->o.flags.keep < n; i++) {
    ckpt_step_path(p, sizeof p, c->dir, steps[i], false);
    /* Not a checkpoint any more before it is half gone. */
    char m[PATH_MAX + 16];
    snprintf(m, sizeof m, "%s/manifest.json", p);
    unlink(m);
    ckpt_remove_dir(p);
  }
  ts_free(steps);
  ckpt_fsync_dir(c->dir);
}

/* Device 0, once every device wrote its files: the manifest, then the rename. */
static ts_status_t commit(ts_ckpt_t *c, int64_t step, const char *all, char *why, size_t whyn) {
  ckpt_local_t *L0 = &c->local[0];
  ts_ckpt_manifest_t m = {.step = step, .next_step = step + 1, .seed = c->o.seed, .ndevices = c->o.ndevices,
                          .narrays = c->narrays, .nfiles = c->nfiles};
  m.seed = c->seed;
  m.inputs_dir = (char *)c->o.inputs_dir;
  m.module = (char *)(c->o.m->name ? c->o.m->name : "");
  m.arrays = ts_calloc((size_t)c->narrays + 1, sizeof *m.arrays);
  m.files = ts_calloc((size_t)c->nfiles + 1, sizeof *m.files);
  ts_ckpt_shard_t *shards = ts_calloc((size_t)c->nfiles + 1, sizeof *shards);
  char *json = NULL;
  ts_status_t st = TS_OK;
  if (!m.arrays || !m.files || !shards) {
    st = TS_ERR_NOMEM;
    msgf(why, whyn, "out of memory");
    goto done;
  }
  int64_t total = 0;
  for (int f = 0; f < c->nfiles; f++) {
    const ckpt_file_t *cf = &c->files[f];
    const ckpt_array_t *a = &c->arrays[cf->array];
    int64_t dims[TS_CKPT_MAX_RANK];
    for (int r = 0; r < a->shape->rank; r++) dims[r] = cf->limit[r] - cf->start[r];
    char hdr[2048];
    const rec_head_t *h = (const rec_head_t *)(all + (size_t)cf->owner * c->rec_bytes);
    const uint32_t *crcs = (const uint32_t *)(all + (size_t)cf->owner * c->rec_bytes + sizeof *h + sizeof L0->msg);
    (void)h;
    m.files[f] = (ts_ckpt_file_t){.name = (char *)cf->name,
                                  .offset = (int64_t)ckpt_npy_header(a->shape->elem, a->shape->rank, dims, hdr, sizeof hdr),
                                  .bytes = cf->bytes, .crc32 = crcs[cf->pos], .device = cf->owner};
    shards[f].file = f;
    memcpy(shards[f].start, cf->start, sizeof cf->start);
    memcpy(shards[f].limit, cf->limit, sizeof cf->limit);
    total += cf->bytes;
  }
  for (int k = 0; k < c->narrays; k++) {
    const ckpt_array_t *a = &c->arrays[k];
    ts_ckpt_marray_t *ma = &m.arrays[k];
    ma->name = (char *)a->name;
    ma->param = a->param;
    ma->elem = a->shape->elem;
    ma->rank = a->shape->rank;
    memcpy(ma->dims, a->shape->dims, (size_t)a->shape->rank * sizeof *ma->dims);
    ma->sharding = (char *)a->sharding;
    ma->nshards = a->nfiles;
    ma->shards = shards + a->first_file;
  }
  if ((st = ts_ckpt_manifest_json(&m, &json)) != TS_OK) {
    msgf(why, whyn, "out of memory");
    goto done;
  }
  char tmp[PATH_MAX], fin[PATH_MAX], path[PATH_MAX + 64];
  ckpt_step_path(tmp, sizeof tmp, c->dir, step, true);
  ckpt_step_path(fin, sizeof fin, c->dir, step, false);
  /* Every device's files must be where this one commits them: a folder
   * local to each host is not one checkpoint (README: DIR is shared). */
  for (int f = 0; f < c->nfiles; f++) {
    struct stat fs;
    msgf(path, sizeof path, "%s/%s", tmp, c->files[f].name);
    if (stat(path, &fs) != 0 || fs.st_size != m.files[f].offset + m.files[f].bytes) {
      msgf(why, whyn, "%s (written by device %d) is not visible to device 0: --checkpoint-dir must be one folder "
           "shared by every host", path, c->files[f].owner);
      st = TS_ERR_SYSTEM;
      goto done;
    }
  }
  snprintf(path, sizeof path, "%s/manifest.json", tmp);
  ts_diag_t d = {0};
  if (ckpt_mkdir(tmp) != 0 || (st = ckpt_write_synced(path, json, strlen(json), &d)) != TS_OK ||
      ckpt_fsync_dir(tmp) != 0) {
    msgf(why, whyn, "%s", d.text ? d.text : strerror(errno));
    ts_diag_free(&d);
    st = TS_ERR_SYSTEM;
    goto done;
  }
  /* A step-K/ of an earlier run (resumed from before it) gives way. */
  struct stat sb;
  char old[PATH_MAX + 16];
  snprintf(old, sizeof old, "%s.old", fin);
  bool had = stat(fin, &sb) == 0;
  if (had) {
    ckpt_remove_dir(old);
    rename(fin, old);
  }
  if (rename(tmp, fin) != 0 || ckpt_fsync_dir(c->dir) != 0) {
    msgf(why, whyn, "cannot rename %s to %s: %s", tmp, fin, strerror(errno));
    st = TS_ERR_SYSTEM;
    goto done;
  }
  if (had) ckpt_remove_dir(old);
  pthread_mutex_lock(&c->mu);
  c->stats.committed++;
  c->stats.bytes = total;
  pthread_mutex_unlock(&c->mu);
  prune(c);
  if (!c->o.quiet) {
    printf("checkpoint: step %lld committed to %s (%d files, %.2f MB)\n", (long long)step, fin, c->nfiles,
           (double)total / 1e6);
    fflush(stdout);
  }
done:
  ts_free(json);
  ts_free(shards);
  ts_free(m.arrays);
  ts_free(m.files);
  return st;
}

/* Waits (c->mu held) while *what == busy, up to the deadline; false on timeout. */
static bool wait_until(ts_ckpt_t *c, const int *what, int busy) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)c->timeout_s;
  while (*what == busy)
    if (pthread_cond_timedwait(&c->cv, &c->mu, &until) == ETIMEDOUT && *what == busy) return false;
  return true;
}

/* Waits (c->mu held) until the writer settled the requested commit. */
static bool wait_commit(ts_ckpt_t *c) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)c->timeout_s;
  while (c->commit_step)
    if (pthread_cond_timedwait(&c->cv, &c->mu, &until) == ETIMEDOUT && c->commit_step) return false;
  return true;
}

/* One round of the protocol: every device's progress to every device. With
 * `wait`, this device's own writer is waited for first. */
static ts_status_t commit_round(ts_ckpt_t *c, int local, ts_coll_comm_t *world, bool wait, ts_diag_t *diag) {
  ckpt_local_t *L = &c->local[local];
  int W = c->o.ndevices, dev = c->o.first + local;
  pthread_mutex_lock(&c->mu);
  if (wait && !wait_until(c, &L->state, CK_QUEUED)) {
    pthread_mutex_unlock(&c->mu);
    ts_diag_plain(diag, "checkpoint step %lld: device %d's writer did not finish within %.0f s", (long long)L->pending_step,
                  dev, c->timeout_s);
    return TS_ERR_TIMEOUT;
  }
  rec_head_t h = {.state = L->state, .device = dev, .step = L->pending_step};
  memset(L->rec, 0, c->rec_bytes);
  memcpy(L->rec, &h, sizeof h);
  memcpy(L->rec + sizeof h, L->msg, sizeof L->msg);
  if (L->state == CK_DONE) memcpy(L->rec + sizeof h + sizeof L->msg, L->crc, (size_t)L->nown * sizeof *L->crc);
  pthread_mutex_unlock(&c->mu);
  ts_coll_req_t *req;
  TS_CHECK(ts_coll_allgather_post(world, L->rec, L->all, c->rec_bytes, TS_U8, &req));
  TS_CHECK(ts_coll_wait(req, -1));
  int done = 0, failed = -1;
  for (int d = 0; d < W; d++) {
    const rec_head_t *x = (const rec_head_t *)(L->all + (size_t)d * c->rec_bytes);
    if (x->state == CK_DONE) done++;
    if (x->state == CK_FAILED && failed < 0) failed = d;
  }
  if (failed < 0 && done < W) return TS_OK; /* still writing */
  int64_t step = L->pending_step;
  L->pending = false;
  pthread_mutex_lock(&c->mu);
  L->state = CK_IDLE;
  pthread_mutex_unlock(&c->mu);
  if (dev != 0) return TS_OK;
  /* Device 0 hands the commit (fsyncs, rename, pruning) to the writer
   * thread: training does not wait for the disk. */
  pthread_mutex_lock(&c->mu);
  if (!wait_commit(c)) {
    pthread_mutex_unlock(&c->mu);
    ts_diag_plain(diag, "checkpoint step %lld: the commit of the previous one did not finish within %.0f s",
                  (long long)step, c->timeout_s);
    return TS_ERR_TIMEOUT;
  }
  memcpy(c->commit_all, L->all, (size_t)W * c->rec_bytes);
  c->commit_failed = failed;
  c->commit_step = step;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  return TS_OK;
}

/* The writer thread, once every device reported: commit, or (a device
 * failed, or the commit did) remove what was written and warn. */
static void settle(ts_ckpt_t *c, int64_t step, int failed, const char *all) {
  char why[512] = "";
  if (failed >= 0) {
    msgf(why, sizeof why, "device %d: %s", failed, all + (size_t)failed * c->rec_bytes + sizeof(rec_head_t));
  } else if (commit(c, step, all, why, sizeof why) == TS_OK) {
    return;
  }
  /* Disk full, or the like: this checkpoint is lost, the older ones and
   * the job are not (README: the job goes on with a warning). */
  char tmp[PATH_MAX];
  ckpt_step_path(tmp, sizeof tmp, c->dir, step, true);
  ckpt_remove_dir(tmp);
  pthread_mutex_lock(&c->mu);
  c->stats.failed++;
  pthread_mutex_unlock(&c->mu);
  int64_t *steps = NULL;
  int n = 0;
  ts_diag_t d = {0};
  ts_ckpt_list_steps(c->dir, &steps, &n, &d);
  ts_diag_free(&d);
  fprintf(stderr, "tessera run: warning: checkpoint step %lld failed (%s); training goes on; ", (long long)step, why);
  if (n) fprintf(stderr, "the newest complete checkpoint is %s/step-%lld\n", c->dir, (long long)steps[n - 1]);
  else fprintf(stderr, "there is no complete checkpoint\n");
  fflush(stderr);
  ts_free(steps);
}

static ts_status_t step_end(ts_ckpt_t *c, int local, ts_coll_comm_t *world, int64_t step, ts_array_t *const *state,
                            ts_diag_t *diag);

/* Device 0's last line: what the run's checkpoints cost. */
static void print_summary(ts_ckpt_t *c) {
  ts_ckpt_stats_t t;
  ts_ckpt_stats(c, &t);
  int taken = t.committed + t.failed, before = taken > 1 ? taken - 1 : 0;
  printf("checkpoint: %d committed, %d failed, %.2f MB each; this process wrote %.2f MB in %.1f ms of its writer "
         "thread (%.0f MB/s with fsync); device 0 spent %.2f ms per checkpoint at step boundaries before the last "
         "step (snapshot %.2f ms, commit rounds the rest), %.1f ms at the last (its checkpoint written and committed "
         "before the run ends)\n",
         t.committed, t.failed, (double)t.bytes / 1e6, (double)t.written_bytes / 1e6, t.write_ms,
         t.write_ms > 0 ? (double)t.written_bytes / 1e3 / t.write_ms : 0.0, before ? t.hook_ms / before : 0.0,
         taken ? t.snapshot_ms / taken : 0.0, t.final_ms);
  fflush(stdout);
}

ts_status_t ts_ckpt_step_end(ts_ckpt_t *c, int local, ts_coll_comm_t *world, int64_t step, ts_array_t *const *state,
                             ts_diag_t *diag) {
  if (!c || !c->writing) return TS_OK;
  double t0 = ts_now_ms();
  ts_status_t st = step_end(c, local, world, step, state, diag);
  bool last = step == c->o.steps;
  if (c->o.first + local == 0) {
    pthread_mutex_lock(&c->mu);
    if (last) c->stats.final_ms += ts_now_ms() - t0;
    else c->stats.hook_ms += ts_now_ms() - t0;
    pthread_mutex_unlock(&c->mu);
  }
  if (st == TS_OK && last && c->o.first + local == 0) {
    /* The run's last checkpoint is committed before the run ends. */
    t0 = ts_now_ms();
    pthread_mutex_lock(&c->mu);
    bool settled = wait_commit(c);
    c->stats.final_ms += ts_now_ms() - t0;
    pthread_mutex_unlock(&c->mu);
    if (!settled) {
      ts_diag_plain(diag, "checkpoint step %lld: the commit did not finish within %.0f s", (long long)step, c->timeout_s);
      return TS_ERR_TIMEOUT;
    }
    if (!c->o.quiet) print_summary(c);
  }
  return st;
}

static ts_status_t step_end(ts_ckpt_t *c, int local, ts_coll_comm_t *world, int64_t step, ts_array_t *const *state,
                            ts_diag_t *diag) {
  ckpt_local_t *L = &c->local[local];
  bool last = step == c->o.steps;
  bool due = (c->o.flags.every > 0 && step % c->o.flags.every == 0) || last;
  if (L->pending) {
    TS_CHECK(commit_round(c, local, world, due, diag));
    /* A new snapshot waits for the previous commit (the writer has one
     * snapshot buffer per device); rounds continue until it is settled. */
    while (due && L->pending) TS_CHECK(commit_round(c, local, world, true, diag));
  }
  if (!due) return TS_OK;
  TS_CHECK(snapshot(c, local, step, state, diag));
  while (last && L->pending) TS_CHECK(commit_round(c, local, world, true, diag));
  return TS_OK;
}
