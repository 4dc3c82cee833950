/* The communicator: posting, the in-order executor (inline in wait, or the
 * progress thread), deadlines and abort, records for the hang detector,
 * sub-communicators from replica groups, and the helpers algorithms share. */
#define _GNU_SOURCE
#include "coll_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- names ----------------------------------------------------------------- */

static const char *backend_names[] = {"threads", "mpi", "ucx", "nccl"};
static const char *redop_names[] = {"sum", "prod", "min", "max"};

const char *ts_coll_backend_name(ts_coll_backend_t b) {
  return (unsigned)b < TS_COLL_BACKEND_COUNT ? backend_names[b] : "?";
}

bool ts_coll_backend_from_name(const char *s, ts_coll_backend_t *out) {
  for (int i = 0; i < TS_COLL_BACKEND_COUNT; i++)
    if (strcmp(s, backend_names[i]) == 0) {
      *out = (ts_coll_backend_t)i;
      return true;
    }
  return false;
}

bool ts_coll_backend_built(ts_coll_backend_t b) {
  switch (b) {
  case TS_COLL_BACKEND_THREADS: return true;
#ifdef TS_COLL_HAVE_MPI
  case TS_COLL_BACKEND_MPI: return true;
#endif
#ifdef TS_COLL_HAVE_UCX
  case TS_COLL_BACKEND_UCX: return true;
#endif
#ifdef TS_COLL_HAVE_NCCL
  case TS_COLL_BACKEND_NCCL: return true;
#endif
  default: return false;
  }
}

const char *ts_coll_redop_name(ts_coll_redop_t op) {
  return (unsigned)op < TS_COLL_REDOP_COUNT ? redop_names[op] : "?";
}

double ts_coll_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- world ------------------------------------------------------------------- */

coll_world_t *coll_world_new(const coll_backend_t *be, int size, int nctx_rows) {
  coll_world_t *w = ts_calloc(1, sizeof *w);
  if (!w) return NULL;
  w->be = be;
  w->size = size;
  atomic_init(&w->refs, 1);
  atomic_init(&w->aborted, 0);
  w->next_ctx = ts_calloc((size_t)nctx_rows, sizeof *w->next_ctx);
  w->slots_used = ts_calloc((size_t)nctx_rows, sizeof *w->slots_used);
  if (!w->next_ctx || !w->slots_used) {
    ts_free(w->next_ctx);
    ts_free(w->slots_used);
    ts_free(w);
    return NULL;
  }
  pthread_mutex_init(&w->lock, NULL);
  return w;
}

void coll_world_release(coll_world_t *w) {
  if (!w || atomic_fetch_sub(&w->refs, 1) != 1) return;
  if (w->be->world_destroy) w->be->world_destroy(w);
  coll_node_destroy(w, false);
  pthread_mutex_destroy(&w->lock);
  ts_free(w->next_ctx);
  ts_free(w->slots_used);
  ts_free(w);
}

void coll_world_abort(coll_world_t *w, ts_status_t why, bool tell_peers) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&w->aborted, &expected, (int)why)) return;
  if (w->node) {
    int z = 0;
    atomic_compare_exchange_strong(w->node->abort, &z, (int)TS_ERR_REMOTE);
  }
  if (tell_peers && w->be->send_abort) w->be->send_abort(w);
}

static ts_status_t world_status(coll_world_t *w) {
  int a = atomic_load_explicit(&w->aborted, memory_order_acquire);
  if (a) return (ts_status_t)a;
  if (w->node && atomic_load_explicit(w->node->abort, memory_order_relaxed)) {
    coll_world_abort(w, TS_ERR_REMOTE, false);
    return (ts_status_t)atomic_load(&w->aborted);
  }
  return TS_OK;
}

/* ---- helpers for algorithms ---------------------------------------------------- */

/* Pauses before the first yield: long while every rank of this host has a
 * core of its own (yielding hands the core to unrelated work, and getting it
 * back takes a scheduler tick), short once ranks outnumber cores (the rank
 * we wait for needs ours): 8 (TESSERA_COLL_SPINS overrides). At np=4 on 2
 * cores, 8 against 64 took 4 KiB all-to-all from 1.0-1.4x to 1.6-3x Open
 * MPI's busbw and all-reduce from 2.5-3x to 3.5x (three alternating runs
 * each, loaded machine). */
static _Atomic unsigned pause_spins = 64;

void coll_note_ranks_here(coll_world_t *w, int nranks) {
  cpu_set_t set;
  int ncpu = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  w->oversub = nranks > ncpu;
  if (nranks <= ncpu) {
    unsigned want = 4096, cur = 64;
    /* only raise from the default: one oversubscribed world keeps it short */
    atomic_compare_exchange_strong(&pause_spins, &cur, want);
  } else {
    atomic_store(&pause_spins, (unsigned)ts_env_int(TS_ENV_COLL_SPINS, 8));
  }
}

/* Spin (a peer on another core answers within microseconds), then yield,
 * then nap. */
void coll_backoff(unsigned spins) {
  unsigned p = atomic_load_explicit(&pause_spins, memory_order_relaxed);
  if (spins < p) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else if (spins < p + 4096) {
    sched_yield();
  } else {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
}

ts_status_t coll_check_abort(ts_coll_comm_t *c) { return world_status(c->world); }

ts_status_t coll_check(ts_coll_comm_t *c, const coll_op_t *op) {
  coll_world_t *w = c->world;
  if (w->be->poll_abort) w->be->poll_abort(w);
  ts_status_t st = world_status(w);
  if (st) return st;
  if (op && ts_coll_now() > op->deadline) {
    ts_log(TS_LOG_WARN, "collectives: %s #%llu on context %u passed its deadline; aborting",
           ts_coll_kind_name(op->kind), (unsigned long long)op->seq, c->ctx);
    coll_world_abort(w, TS_ERR_TIMEOUT, true);
    return (ts_status_t)atomic_load(&w->aborted);
  }
  return TS_OK;
}

ts_status_t coll_isend(ts_coll_comm_t *c, coll_op_t *op, int peer, const void *buf, size_t n, uint32_t step,
                       tp_req_t *r) {
  memset(r, 0, sizeof *r);
  r->peer = c->wranks[peer];
  r->bytes = n;
  return c->be->isend(c, r->peer, buf, n, coll_tag(c, c->wrank, step), r);
}

ts_status_t coll_irecv(ts_coll_comm_t *c, coll_op_t *op, int peer, void *buf, size_t n, uint32_t step,
                       tp_req_t *r) {
  memset(r, 0, sizeof *r);
  r->peer = c->wranks[peer];
  r->bytes = n;
  return c->be->irecv(c, r->peer, buf, n, coll_tag(c, r->peer, step), r);
}

void coll_note_waiting(ts_coll_comm_t *c, int wrank) {
  if (c->last_waiting == wrank || !c->cur_rec) return;
  c->last_waiting = wrank;
  rec_slot_t *s = c->cur_rec;
  pthread_mutex_lock(&c->rec_lock);
  atomic_fetch_add_explicit(&s->version, 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  s->r.waiting_on = wrank;
  atomic_fetch_add_explicit(&s->version, 1, memory_order_release);
  pthread_mutex_unlock(&c->rec_lock);
}

ts_status_t coll_waitall(ts_coll_comm_t *c, coll_op_t *op, tp_req_t *r, int n) {
  for (unsigned spins = 0;; spins++) {
    int pending = -1;
    for (int i = 0; i < n; i++) {
      if (r[i].done) continue;
      c->be->test(c, &r[i]);
      if (r[i].done && r[i].st < 0) {
        coll_world_abort(c->world, r[i].st, true);
        break;
      }
      if (!r[i].done && pending < 0) pending = i;
    }
    if (pending < 0) {
      bool bad = false;
      for (int i = 0; i < n; i++) bad |= r[i].st < 0;
      if (!bad) return TS_OK;
    }
    if (spins > 256 && pending >= 0) coll_note_waiting(c, r[pending].peer);
    ts_status_t st = (spins & 15) == 0 || spins > 64 ? coll_check(c, op) : TS_OK;
    if (st) {
      for (int i = 0; i < n; i++)
        if (!r[i].done) c->be->cancel(c, &r[i]);
      return st;
    }
    coll_backoff(spins);
  }
}

ts_status_t coll_sendrecv(ts_coll_comm_t *c, coll_op_t *op, int to, const void *sbuf, size_t sn, int from,
                          void *rbuf, size_t rn, uint32_t step) {
  tp_req_t r[2];
  ts_status_t st = coll_irecv(c, op, from, rbuf, rn, step, &r[0]);
  if (st) return st;
  st = coll_isend(c, op, to, sbuf, sn, step, &r[1]);
  if (st) {
    c->be->cancel(c, &r[0]);
    return st;
  }
  return coll_waitall(c, op, r, 2);
}

void *coll_scratch(ts_coll_comm_t *c, int idx, size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (c->scratch_bytes[idx] >= bytes) return c->scratch[idx];
  size_t want = bytes + bytes / 4;
  void *p = NULL;
  if (posix_memalign(&p, 64, want) != 0) return NULL;
  free(c->scratch[idx]);
  c->scratch[idx] = p;
  c->scratch_bytes[idx] = want;
  return p;
}

/* ---- records ------------------------------------------------------------------- */

static void rec_write(ts_coll_comm_t *c, rec_slot_t *s, const ts_coll_record_t *r) {
  pthread_mutex_lock(&c->rec_lock);
  atomic_fetch_add_explicit(&s->version, 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  s->r = *r;
  atomic_fetch_add_explicit(&s->version, 1, memory_order_release);
  pthread_mutex_unlock(&c->rec_lock);
}

static rec_slot_t *rec_slot(ts_coll_comm_t *c, uint64_t seq) { return &c->rec[(seq - 1) % TS_COLL_RECORDS]; }

/* Updates the record of `seq` in place (the seqlock keeps readers consistent). */
static void rec_update(ts_coll_comm_t *c, uint64_t seq, ts_coll_state_t state, ts_status_t st, const char *algo) {
  rec_slot_t *s = rec_slot(c, seq);
  double now = ts_coll_now();
  pthread_mutex_lock(&c->rec_lock);
  if (s->r.seq == seq) {
    atomic_fetch_add_explicit(&s->version, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    s->r.state = state;
    s->r.status = st;
    if (algo) s->r.algorithm = algo;
    if (state == TS_COLL_STARTED) s->r.t_started = now;
    if (state >= TS_COLL_COMPLETED) {
      s->r.t_completed = now;
      s->r.waiting_on = -1;
    }
    atomic_fetch_add_explicit(&s->version, 1, memory_order_release);
  }
  pthread_mutex_unlock(&c->rec_lock);
}

size_t ts_coll_records(const ts_coll_comm_t *c, ts_coll_record_t *out, size_t max) {
  ts_coll_record_t tmp[TS_COLL_RECORDS];
  size_t n = 0;
  for (int i = 0; i < TS_COLL_RECORDS; i++) {
    const rec_slot_t *s = &c->rec[i];
    for (int tries = 0; tries < 1000; tries++) {
      uint32_t v1 = atomic_load_explicit(&s->version, memory_order_acquire);
      if (v1 & 1) continue;
      ts_coll_record_t r;
      memcpy(&r, (const void *)&s->r, sizeof r);
      atomic_thread_fence(memory_order_acquire);
      if (atomic_load_explicit(&s->version, memory_order_relaxed) != v1) continue;
      if (r.seq) tmp[n++] = r;
      break;
    }
  }
  /* oldest first */
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && tmp[j - 1].seq > tmp[j].seq; j--) {
      ts_coll_record_t t = tmp[j];
      tmp[j] = tmp[j - 1];
      tmp[j - 1] = t;
    }
  size_t first = n > max ? n - max : 0;
  for (size_t i = first; i < n; i++) out[i - first] = tmp[i];
  return n - first;
}

uint32_t ts_coll_comm_context(const ts_coll_comm_t *c) { return c->ctx; }

/* ---- communicators ----------------------------------------------------------- */

static ts_coll_comm_t *comm_alloc(coll_world_t *w, int size) {
  ts_coll_comm_t *c = ts_calloc(1, sizeof *c);
  if (!c) return NULL;
  c->wranks = ts_calloc((size_t)size, sizeof *c->wranks);
  if (!c->wranks) {
    ts_free(c);
    return NULL;
  }
  c->world = w;
  c->be = w->be;
  c->size = size;
  c->dslot = -1;
  c->last_waiting = -1;
  c->timeout_s = ts_env_positive(TS_ENV_COLL_TIMEOUT, 300);
  c->direct_on = ts_env_int(TS_ENV_COLL_DIRECT, 1) != 0;
  pthread_mutex_init(&c->qlock, NULL);
  pthread_cond_init(&c->qcond, NULL);
  pthread_cond_init(&c->done_cond, NULL);
  pthread_mutex_init(&c->rec_lock, NULL);
  atomic_fetch_add(&w->refs, 1);
  return c;
}

static ts_status_t comm_finish(ts_coll_comm_t *c) {
  ts_status_t st = coll_direct_init(c);
  if (st == TS_OK && c->be->comm_init) st = c->be->comm_init(c);
  return st;
}

ts_status_t coll_comm_new_world(coll_world_t *w, int wrank, ts_coll_comm_t **out) {
  ts_coll_comm_t *c = comm_alloc(w, w->size);
  if (!c) return TS_ERR_NOMEM;
  for (int i = 0; i < w->size; i++) c->wranks[i] = i;
  c->rank = c->wrank = wrank;
  c->ctx = 0;
  c->dslot = w->node ? 0 : -1;
  if (w->node) w->slots_used[0] |= 1;
  ts_status_t st = comm_finish(c);
  if (st) {
    ts_coll_comm_destroy(c);
    return st;
  }
  *out = c;
  return TS_OK;
}

static void *progress_main(void *arg);
static bool run_next(ts_coll_comm_t *c);

void ts_coll_comm_destroy(ts_coll_comm_t *c) {
  if (!c) return;
  /* Drain what was posted, up to the timeout. */
  double deadline = ts_coll_now() + c->timeout_s;
  for (unsigned spins = 0;; spins++) {
    pthread_mutex_lock(&c->qlock);
    bool idle = !c->qhead && !c->running;
    pthread_mutex_unlock(&c->qlock);
    if (idle) break;
    if (!run_next(c)) coll_backoff(spins);
    if (ts_coll_now() > deadline) coll_world_abort(c->world, TS_ERR_TIMEOUT, true);
  }
  pthread_mutex_lock(&c->qlock);
  c->stop = true;
  pthread_cond_broadcast(&c->qcond);
  pthread_mutex_unlock(&c->qlock);
  if (c->progress_started) pthread_join(c->progress, NULL);
  ts_coll_comm_destroy(c->intra);
  ts_coll_comm_destroy(c->inter);
  if (c->be->comm_fini) c->be->comm_fini(c);
  coll_direct_fini(c);
  if (c->dslot >= 0) {
    pthread_mutex_lock(&c->world->lock);
    c->world->slots_used[c->world->same_space ? c->wrank : 0] &= ~(1u << c->dslot);
    pthread_mutex_unlock(&c->world->lock);
  }
  for (int i = 0; i < 5; i++) free(c->scratch[i]);
  pthread_mutex_destroy(&c->qlock);
  pthread_cond_destroy(&c->qcond);
  pthread_cond_destroy(&c->done_cond);
  pthread_mutex_destroy(&c->rec_lock);
  coll_world_t *w = c->world;
  ts_free(c->wranks);
  ts_free(c);
  coll_world_release(w);
}

int ts_coll_comm_rank(const ts_coll_comm_t *c) { return c->rank; }
int ts_coll_comm_size(const ts_coll_comm_t *c) { return c->size; }
int ts_coll_comm_world_rank(const ts_coll_comm_t *c, int i) { return i >= 0 && i < c->size ? c->wranks[i] : -1; }
ts_coll_backend_t ts_coll_comm_backend(const ts_coll_comm_t *c) { return c->be->id; }
void ts_coll_comm_set_timeout(ts_coll_comm_t *c, double seconds) {
  if (seconds > 0) c->timeout_s = seconds;
}
void ts_coll_comm_set_direct(ts_coll_comm_t *c, bool on) { c->direct_on = on; }

ts_status_t ts_coll_comm_force_algorithm(ts_coll_comm_t *c, const char *name) {
  if (name && !coll_algo_known(name)) return TS_ERR_INVALID_ARGUMENT;
  c->forced = name;
  return TS_OK;
}

ts_status_t ts_coll_comm_set_slices(ts_coll_comm_t *c, int slices) {
  if (!c || slices < 1 || slices > c->size || c->size % slices != 0) return TS_ERR_INVALID_ARGUMENT;
  if (slices == c->slices || (slices == 1 && c->slices <= 1)) return TS_OK;
  ts_coll_comm_destroy(c->intra);
  ts_coll_comm_destroy(c->inter);
  c->intra = c->inter = NULL;
  c->slices = 0;
  if (slices == 1) return TS_OK;
  /* Slice q holds ranks [q*k, (q+1)*k); the position-i group holds i, k+i, ... */
  int n = c->size, k = n / slices;
  int64_t *ids = ts_malloc((size_t)n * 2 * sizeof *ids);
  ts_i64_list_t *l = ts_malloc((size_t)(slices + k) * sizeof *l);
  if (!ids || !l) {
    ts_free(ids);
    ts_free(l);
    return TS_ERR_NOMEM;
  }
  for (int q = 0; q < slices; q++) {
    l[q].v = ids + (size_t)q * (size_t)k;
    l[q].n = k;
    for (int i = 0; i < k; i++) l[q].v[i] = q * k + i;
  }
  for (int i = 0; i < k; i++) {
    l[slices + i].v = ids + (size_t)n + (size_t)i * (size_t)slices;
    l[slices + i].n = slices;
    for (int q = 0; q < slices; q++) l[slices + i].v[q] = q * k + i;
  }
  ts_status_t st = ts_coll_comm_split(c, l, slices, TS_COLL_FLATTENED_ID, 1, n, &c->intra);
  ts_status_t st2 = ts_coll_comm_split(c, l + slices, k, TS_COLL_FLATTENED_ID, 1, n, &c->inter);
  ts_free(ids);
  ts_free(l);
  if (st == TS_OK) st = st2;
  if (st) {
    ts_coll_comm_destroy(c->intra);
    ts_coll_comm_destroy(c->inter);
    c->intra = c->inter = NULL;
    return st;
  }
  /* the sub-communicators serve the hierarchical algorithms: the table picks theirs */
  c->intra->forced = c->inter->forced = NULL;
  c->slices = slices;
  return TS_OK;
}

int ts_coll_comm_slices(const ts_coll_comm_t *c) { return c->slices > 1 ? c->slices : 1; }

void ts_coll_comm_abort(ts_coll_comm_t *c, ts_status_t why) { coll_world_abort(c->world, why, true); }
ts_status_t ts_coll_comm_status(const ts_coll_comm_t *c) {
  if (c->world->be->poll_abort) c->world->be->poll_abort(c->world);
  return world_status(c->world);
}

/* ---- sub-communicators ---------------------------------------------------------- */

ts_status_t ts_coll_iota_groups(int64_t G, int64_t S, const int64_t *reshape, int nreshape, const int64_t *perm,
                                int nperm, int64_t *out) {
  if (G <= 0 || S <= 0 || nreshape <= 0 || nreshape > 16 || (nperm && nperm != nreshape))
    return TS_ERR_INVALID_ARGUMENT;
  int64_t total = 1;
  for (int i = 0; i < nreshape; i++) {
    if (reshape[i] <= 0) return TS_ERR_INVALID_ARGUMENT;
    total *= reshape[i];
  }
  if (total != G * S) return TS_ERR_INVALID_ARGUMENT;
  int64_t p[16], tdims[16], strides[16], idx[16] = {0};
  bool seen[16] = {false};
  for (int i = 0; i < nreshape; i++) {
    p[i] = nperm ? perm[i] : i;
    if (p[i] < 0 || p[i] >= nreshape || seen[p[i]]) return TS_ERR_INVALID_ARGUMENT;
    seen[p[i]] = true;
  }
  /* Row-major strides of the reshaped iota; the transposed array's dim i is
   * the reshape's dim p[i]. */
  int64_t s = 1;
  for (int i = nreshape - 1; i >= 0; i--) {
    strides[i] = s;
    s *= reshape[i];
  }
  for (int i = 0; i < nreshape; i++) tdims[i] = reshape[p[i]];
  for (int64_t k = 0; k < total; k++) {
    int64_t v = 0;
    for (int i = 0; i < nreshape; i++) v += idx[i] * strides[p[i]];
    out[k] = v;
    for (int i = nreshape - 1; i >= 0; i--) {
      if (++idx[i] < tdims[i]) break;
      idx[i] = 0;
    }
  }
  return TS_OK;
}

/* The members (parent ranks) of this rank's group, in XLA's order. */
static ts_status_t group_members(const ts_coll_comm_t *parent, const ts_i64_list_t *groups, int ngroups,
                                 ts_coll_group_mode_t mode, int64_t R, int64_t P, int **out, int *nout) {
  int64_t d = parent->rank;
  int64_t space = ts_coll_group_id_space(mode, R, P);
  int64_t me = ts_coll_group_id_of(mode, P, d);
  if (!groups) ngroups = 0;
  const int64_t *ids = NULL;
  int64_t nids = 0;
  int64_t *all = NULL;
  if (ngroups == 0) {
    all = ts_malloc((size_t)space * sizeof *all);
    if (!all) return TS_ERR_NOMEM;
    for (int64_t i = 0; i < space; i++) all[i] = i;
    ids = all;
    nids = space;
  } else {
    char *seen = ts_calloc((size_t)space, 1);
    if (!seen) return TS_ERR_NOMEM;
    bool bad = false;
    for (int g = 0; g < ngroups && !bad; g++) {
      const ts_i64_list_t *l = &groups[g];
      for (int i = 0; i < l->n; i++) {
        int64_t v = l->v[i];
        if (v < 0 || v >= space || seen[v]) {
          bad = true;
          break;
        }
        seen[v] = 1;
        if (v == me) {
          ids = l->v;
          nids = l->n;
        }
      }
    }
    ts_free(seen);
    if (bad || !ids) return TS_ERR_INVALID_ARGUMENT;
  }
  int64_t n = nids * ts_coll_group_devices_per_id(mode, P);
  int *m = ts_malloc((size_t)n * sizeof *m);
  int64_t *dev = ts_malloc((size_t)n * sizeof *dev);
  if (!m || !dev) {
    ts_free(m);
    ts_free(dev);
    ts_free(all);
    return TS_ERR_NOMEM;
  }
  int k = (int)ts_coll_group_devices(mode, P, d, ids, nids, dev);
  for (int i = 0; i < k; i++) m[i] = (int)dev[i];
  ts_free(dev);
  ts_free(all);
  *out = m;
  *nout = k;
  return TS_OK;
}

ts_status_t ts_coll_comm_split(ts_coll_comm_t *parent, const ts_i64_list_t *groups, int ngroups,
                               ts_coll_group_mode_t mode, int64_t replica_count, int64_t num_partitions,
                               ts_coll_comm_t **out) {
  *out = NULL;
  if (replica_count <= 0 || num_partitions <= 0 || replica_count * num_partitions != parent->size ||
      (unsigned)mode > TS_COLL_FLATTENED_ID)
    return TS_ERR_INVALID_ARGUMENT;
  int *members = NULL, n = 0;
  ts_status_t lst = group_members(parent, groups, ngroups, mode, replica_count, num_partitions, &members, &n);
  /* Agree on the context id and a free direct slot, even when this rank's
   * groups are bad (the others must not hang waiting for it). */
  coll_world_t *w = parent->world;
  int row = w->same_space ? parent->wrank : 0;
  uint32_t v[1 + COLL_DIRECT_SLOTS];
  pthread_mutex_lock(&w->lock);
  v[0] = w->next_ctx[row] + 1;
  for (int i = 0; i < COLL_DIRECT_SLOTS; i++) v[1 + i] = (w->slots_used[row] >> i) & 1;
  pthread_mutex_unlock(&w->lock);
  v[0] = lst ? 0xffffffffu : v[0];
  uint32_t agreed[1 + COLL_DIRECT_SLOTS];
  ts_status_t st = ts_coll_allreduce(parent, v, agreed, 1 + COLL_DIRECT_SLOTS, TS_U32, TS_COLL_MAX);
  if (st || lst || agreed[0] == 0xffffffffu) {
    ts_free(members);
    return st ? st : lst ? lst : TS_ERR_INVALID_ARGUMENT;
  }
  ts_coll_comm_t *c = comm_alloc(w, n);
  if (!c) {
    ts_free(members);
    return TS_ERR_NOMEM;
  }
  c->ctx = agreed[0];
  c->wrank = parent->wrank;
  c->timeout_s = parent->timeout_s;
  c->direct_on = parent->direct_on;
  c->forced = parent->forced;
  for (int i = 0; i < n; i++) {
    c->wranks[i] = parent->wranks[members[i]];
    if (members[i] == parent->rank) c->rank = i;
  }
  ts_free(members);
  pthread_mutex_lock(&w->lock);
  w->next_ctx[row] = c->ctx;
  if (w->node && c->ctx < 0x7fff) {
    for (int i = 0; i < COLL_DIRECT_SLOTS; i++)
      if (!agreed[1 + i]) {
        c->dslot = i;
        w->slots_used[row] |= 1u << i;
        break;
      }
  }
  pthread_mutex_unlock(&w->lock);
  st = comm_finish(c);
  if (st) {
    ts_coll_comm_destroy(c);
    return st;
  }
  *out = c;
  return TS_OK;
}

/* ---- posting and executing ----------------------------------------------------------- */

uint64_t coll_op_bytes(const ts_coll_comm_t *c, const coll_op_t *op) {
  uint64_t b = (uint64_t)op->count * (uint64_t)ts_elem_storage_bytes(op->user_type);
  switch (op->kind) {
  case TS_COLL_ALL_GATHER:
  case TS_COLL_REDUCE_SCATTER:
  case TS_COLL_ALL_TO_ALL: return b * (uint64_t)c->size;
  case TS_COLL_BARRIER: return 0;
  default: return b;
  }
}

static ts_status_t execute(ts_coll_comm_t *c, ts_coll_req_t *req) {
  coll_op_t *op = &req->op;
  ts_status_t st = world_status(c->world);
  coll_algo_t algo = {"", NULL, {0, 0}};
  if (st == TS_OK) {
    algo = coll_choose(c, op);
    c->cur_rec = rec_slot(c, op->seq);
    c->last_waiting = -1;
    rec_update(c, op->seq, TS_COLL_STARTED, TS_OK, algo.name);
    op->tune = algo.tune;
    if (op->type != op->user_type) {
      /* Narrow types reduce in a wider one and round once at the end. */
      size_t nin = op->count * (op->kind == TS_COLL_REDUCE_SCATTER ? (size_t)c->size : 1);
      void *up = coll_scratch(c, 3, nin * op->esize);
      void *upr = op->kind == TS_COLL_REDUCE_SCATTER ? coll_scratch(c, 4, op->count * op->esize) : up;
      if (!up || !upr) st = TS_ERR_NOMEM;
      else st = ts_elem_convert(op->user_type, op->user_send, op->type, up, (int64_t)nin);
      op->send = up;
      op->recv = upr;
    }
    if (st == TS_OK) st = c->be->run ? c->be->run(c, op) : algo.fn(c, op);
    if (st == TS_OK && op->type != op->user_type)
      st = ts_elem_convert(op->type, op->recv, op->user_type, op->user_recv, (int64_t)op->count);
  }
  rec_update(c, op->seq, st ? TS_COLL_FAILED : TS_COLL_COMPLETED, st, NULL);
  c->cur_rec = NULL;
  return st;
}

static void req_release(ts_coll_req_t *req) {
  if (atomic_fetch_sub(&req->refs, 1) != 1) return;
  ts_free(req->op.pairs);
  ts_free(req);
}

/* Runs the oldest posted operation if nobody else is running one. */
static bool run_next(ts_coll_comm_t *c) {
  pthread_mutex_lock(&c->qlock);
  ts_coll_req_t *req = c->running ? NULL : c->qhead;
  if (req) {
    c->qhead = req->next;
    if (!c->qhead) c->qtail = NULL;
    c->running = true;
  }
  pthread_mutex_unlock(&c->qlock);
  if (!req) return false;
  ts_status_t st = execute(c, req);
  atomic_store(&req->status, (int)st);
  atomic_store_explicit(&req->state, st ? TS_COLL_FAILED : TS_COLL_COMPLETED, memory_order_release);
  pthread_mutex_lock(&c->qlock);
  c->running = false;
  pthread_cond_broadcast(&c->done_cond);
  pthread_mutex_unlock(&c->qlock);
  req_release(req);
  return true;
}

/* The progress thread runs operations nobody waits on, so that test() alone
 * completes them. It naps between looks: a caller in wait() runs its
 * operation inline first, without a thread hand-off. */
static void *progress_main(void *arg) {
  ts_coll_comm_t *c = arg;
  for (;;) {
    pthread_mutex_lock(&c->qlock);
    while (!c->stop && (!c->qhead || c->running)) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 2000000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&c->qcond, &c->qlock, &ts);
      if (c->qhead && !c->running) break;
    }
    bool stop = c->stop;
    pthread_mutex_unlock(&c->qlock);
    if (stop) return NULL;
    run_next(c);
  }
}

static ts_status_t post(ts_coll_comm_t *c, const coll_op_t *op, ts_coll_req_t **out) {
  *out = NULL;
  ts_status_t st = world_status(c->world);
  if (st) return st;
  ts_coll_req_t *req = ts_calloc(1, sizeof *req);
  if (!req) return TS_ERR_NOMEM;
  atomic_init(&req->refs, 2);
  atomic_init(&req->state, TS_COLL_POSTED);
  atomic_init(&req->status, 0);
  req->comm = c;
  req->op = *op;
  coll_op_t *o = &req->op;
  o->user_type = op->type;
  o->user_send = op->send;
  o->user_recv = op->recv;
  bool reduces = o->kind == TS_COLL_ALL_REDUCE || o->kind == TS_COLL_REDUCE_SCATTER;
  /* backends that run whole collectives (NCCL, device buffers) reduce in the type itself */
  o->type = reduces && !c->be->run ? coll_reduce_type(op->type) : op->type;
  o->esize = (size_t)ts_elem_storage_bytes(o->type);
  double now = ts_coll_now();
  o->deadline = now + c->timeout_s;
  if (!c->progress_started) {
    if (pthread_create(&c->progress, NULL, progress_main, c) != 0) {
      ts_free(req);
      return TS_ERR_SYSTEM;
    }
    c->progress_started = true;
  }
  pthread_mutex_lock(&c->qlock);
  o->seq = ++c->next_seq;
  ts_coll_record_t r = {
      .seq = o->seq,
      .kind = o->kind,
      .state = TS_COLL_POSTED,
      .type = o->user_type,
      .redop = o->redop,
      .peer = (o->kind == TS_COLL_BROADCAST || o->kind == TS_COLL_SEND || o->kind == TS_COLL_RECV) ? o->root : -1,
      .waiting_on = -1,
      .algorithm = "",
      .t_posted = now,
  };
  r.bytes = coll_op_bytes(c, o);
  rec_write(c, rec_slot(c, o->seq), &r);
  if (c->qtail) c->qtail->next = req;
  else c->qhead = req;
  c->qtail = req;
  pthread_mutex_unlock(&c->qlock);
  *out = req;
  return TS_OK;
}

ts_status_t ts_coll_test(ts_coll_req_t *req) {
  int s = atomic_load_explicit(&req->state, memory_order_acquire);
  if (s == TS_COLL_COMPLETED) return TS_OK;
  if (s == TS_COLL_FAILED) return (ts_status_t)atomic_load(&req->status);
  return TS_INPROGRESS;
}

ts_status_t ts_coll_wait(ts_coll_req_t *req, double timeout_s) {
  if (!req) return TS_ERR_INVALID_ARGUMENT;
  ts_coll_comm_t *c = req->comm;
  double deadline = req->op.deadline;
  if (timeout_s >= 0 && ts_coll_now() + timeout_s < deadline) deadline = ts_coll_now() + timeout_s;
  ts_status_t st;
  bool timed_out = false;
  for (unsigned spins = 0;; spins++) {
    st = ts_coll_test(req);
    if (st != TS_INPROGRESS) break;
    if (run_next(c)) {
      spins = 0;
      continue;
    }
    if (!timed_out && ts_coll_now() > deadline) {
      /* Abort unblocks the executor; give it a moment to notice, then
       * leave the request to it. */
      ts_log(TS_LOG_WARN, "collectives: wait on %s #%llu timed out; aborting",
             ts_coll_kind_name(req->op.kind), (unsigned long long)req->op.seq);
      coll_world_abort(c->world, TS_ERR_TIMEOUT, true);
      timed_out = true;
      deadline = ts_coll_now() + 5;
      continue;
    }
    if (timed_out && ts_coll_now() > deadline) {
      st = TS_ERR_TIMEOUT;
      break;
    }
    if (spins < 4096) {
      coll_backoff(spins);
    } else {
      pthread_mutex_lock(&c->qlock);
      if (ts_coll_test(req) == TS_INPROGRESS && c->running) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 1000000;
        if (ts.tv_nsec >= 1000000000) {
          ts.tv_sec++;
          ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&c->done_cond, &c->qlock, &ts);
      }
      pthread_mutex_unlock(&c->qlock);
    }
  }
  if (timed_out && st != TS_OK) st = TS_ERR_TIMEOUT;
  req_release(req);
  return st;
}

void ts_coll_req_free(ts_coll_req_t *req) {
  if (req) req_release(req);
}

/* ---- the operations --------------------------------------------------------------- */

static bool type_ok(ts_elem_t t) { return ts_elem_is_array(t) && ts_elem_storage_bytes(t) > 0; }

#define BAD_IF(cond)                                        \
  do {                                                      \
    if (cond) return TS_ERR_INVALID_ARGUMENT;               \
  } while (0)

ts_status_t ts_coll_allreduce_post(ts_coll_comm_t *c, const void *send, void *recv, size_t count, ts_elem_t type,
                                   ts_coll_redop_t op, ts_coll_req_t **req) {
  BAD_IF(!type_ok(type) || !coll_redop_ok(type, op) || (count && (!send || !recv)));
  coll_op_t o = {.kind = TS_COLL_ALL_REDUCE, .send = send, .recv = recv, .count = count, .type = type, .redop = op, .root = -1};
  return post(c, &o, req);
}

ts_status_t ts_coll_allgather_post(ts_coll_comm_t *c, const void *send, void *recv, size_t sendcount,
                                   ts_elem_t type, ts_coll_req_t **req) {
  BAD_IF(!type_ok(type) || (sendcount && (!send || !recv)));
  coll_op_t o = {.kind = TS_COLL_ALL_GATHER, .send = send, .recv = recv, .count = sendcount, .type = type, .root = -1};
  return post(c, &o, req);
}

ts_status_t ts_coll_reduce_scatter_post(ts_coll_comm_t *c, const void *send, void *recv, size_t recvcount,
                                        ts_elem_t type, ts_coll_redop_t op, ts_coll_req_t **req) {
  BAD_IF(!type_ok(type) || !coll_redop_ok(type, op) || (recvcount && (!send || !recv)));
  coll_op_t o = {.kind = TS_COLL_REDUCE_SCATTER, .send = send, .recv = recv, .count = recvcount, .type = type, .redop = op, .root = -1};
  return post(c, &o, req);
}

ts_status_t ts_coll_alltoall_post(ts_coll_comm_t *c, const void *send, void *recv, size_t count, ts_elem_t type,
                                  ts_coll_req_t **req) {
  BAD_IF(!type_ok(type) || (count && (!send || !recv)));
  coll_op_t o = {.kind = TS_COLL_ALL_TO_ALL, .send = send, .recv = recv, .count = count, .type = type, .root = -1};
  return post(c, &o, req);
}

ts_status_t ts_coll_permute_post(ts_coll_comm_t *c, const void *send, void *recv, size_t count, ts_elem_t type,
                                 const int64_t (*pairs)[2], int npairs, ts_coll_req_t **req) {
  BAD_IF(!type_ok(type) || npairs < 0 || (npairs && !pairs) || (count && (!send || !recv)));
  char *src = ts_calloc((size_t)c->size * 2, 1);
  if (!src) return TS_ERR_NOMEM;
  bool bad = false;
  for (int i = 0; i < npairs && !bad; i++) {
    int64_t s = pairs[i][0], t = pairs[i][1];
    if (s < 0 || s >= c->size || t < 0 || t >= c->size || src[s] || src[c->size + t]) bad = true;
    else src[s] = src[c->size + t] = 1;
  }
  ts_free(src);
  BAD_IF(bad);
  coll_op_t o = {.kind = TS_COLL_COLLECTIVE_PERMUTE, .send = send, .recv = recv, .count = count, .type = type, .root = -1, .npairs = npairs};
  if (npairs) {
    o.pairs = ts_malloc((size_t)npairs * sizeof *o.pairs);
    if (!o.pairs) return TS_ERR_NOMEM;
    memcpy(o.pairs, pairs, (size_t)npairs * sizeof *o.pairs);
  }
  ts_status_t st = post(c, &o, req);
  if (st) ts_free(o.pairs);
  return st;
}

ts_status_t ts_coll_broadcast_post(ts_coll_comm_t *c, const void *send, void *recv, size_t count, ts_elem_t type,
                                   int root, ts_coll_req_t **req) {
  BAD_IF(!type_ok(type) || root < 0 || root >= c->size || (count && !recv) || (count && c->rank == root && !send));
  coll_op_t o = {.kind = TS_COLL_BROADCAST, .send = send, .recv = recv, .count = count, .type = type, .root = root};
  return post(c, &o, req);
}

ts_status_t ts_coll_send_post(ts_coll_comm_t *c, const void *buf, size_t count, ts_elem_t type, int peer,
                              ts_coll_req_t **req) {
  BAD_IF(!type_ok(type) || peer < 0 || peer >= c->size || peer == c->rank || (count && !buf));
  coll_op_t o = {.kind = TS_COLL_SEND, .send = buf, .count = count, .type = type, .root = peer};
  return post(c, &o, req);
}

ts_status_t ts_coll_recv_post(ts_coll_comm_t *c, void *buf, size_t count, ts_elem_t type, int peer,
                              ts_coll_req_t **req) {
  BAD_IF(!type_ok(type) || peer < 0 || peer >= c->size || peer == c->rank || (count && !buf));
  coll_op_t o = {.kind = TS_COLL_RECV, .recv = buf, .count = count, .type = type, .root = peer};
  return post(c, &o, req);
}

ts_status_t ts_coll_barrier_post(ts_coll_comm_t *c, ts_coll_req_t **req) {
  coll_op_t o = {.kind = TS_COLL_BARRIER, .type = TS_U8, .root = -1};
  return post(c, &o, req);
}

ts_status_t ts_coll_allreduce(ts_coll_comm_t *c, const void *send, void *recv, size_t count, ts_elem_t type,
                              ts_coll_redop_t op) {
  ts_coll_req_t *r;
  TS_CHECK(ts_coll_allreduce_post(c, send, recv, count, type, op, &r));
  return ts_coll_wait(r, -1);
}

ts_status_t ts_coll_barrier(ts_coll_comm_t *c) {
  ts_coll_req_t *r;
  TS_CHECK(ts_coll_barrier_post(c, &r));
  return ts_coll_wait(r, -1);
}
