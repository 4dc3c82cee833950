/* Threads backend: N ranks as N threads of one process. Point-to-point goes
 * through one mailbox per rank; whichever side arrives second copies straight
 * from the sender's buffer into the receiver's (single copy). Matching is
 * FIFO per (source, tag), as in MPI. Abort is the shared world flag. */
#include "coll_internal.h"

#include <string.h>

typedef struct tnode {
  struct tnode *next;
  _Atomic int done;
  ts_status_t st;
  int src;         /* sender's world rank */
  int box;         /* mailbox it is queued in */
  bool queued;
  uint64_t tag;
  const void *sbuf; /* a queued send */
  void *rbuf;       /* a queued receive */
  size_t n;
} tnode_t;

typedef struct {
  pthread_mutex_t lock;
  tnode_t *sends, *sends_tail; /* unexpected sends to this rank */
  tnode_t *recvs, *recvs_tail; /* posted receives of this rank */
} mailbox_t;

typedef struct {
  mailbox_t *box;
} tworld_t;

static void q_push(tnode_t **head, tnode_t **tail, tnode_t *n) {
  n->next = NULL;
  if (*tail) (*tail)->next = n;
  else *head = n;
  *tail = n;
  n->queued = true;
}

static tnode_t *q_take(tnode_t **head, tnode_t **tail, int src, uint64_t tag) {
  tnode_t *prev = NULL;
  for (tnode_t *n = *head; n; prev = n, n = n->next) {
    if (n->src != src || n->tag != tag) continue;
    if (prev) prev->next = n->next;
    else *head = n->next;
    if (*tail == n) *tail = prev;
    n->queued = false;
    return n;
  }
  return NULL;
}

static bool q_remove(tnode_t **head, tnode_t **tail, tnode_t *x) {
  tnode_t *prev = NULL;
  for (tnode_t *n = *head; n; prev = n, n = n->next) {
    if (n != x) continue;
    if (prev) prev->next = n->next;
    else *head = n->next;
    if (*tail == n) *tail = prev;
    n->queued = false;
    return true;
  }
  return false;
}

static ts_status_t deliver(void *rbuf, size_t rn, const void *sbuf, size_t sn) {
  if (sn > rn) return TS_ERR_INTERNAL; /* a message longer than its receive: our bug */
  if (sn) memcpy(rbuf, sbuf, sn);
  return TS_OK;
}

static ts_status_t t_isend(ts_coll_comm_t *c, int wpeer, const void *buf, size_t n, uint64_t tag, tp_req_t *r) {
  tworld_t *tw = c->world->priv;
  mailbox_t *mb = &tw->box[wpeer];
  pthread_mutex_lock(&mb->lock);
  tnode_t *rv = q_take(&mb->recvs, &mb->recvs_tail, c->wrank, tag);
  if (rv) {
    rv->st = deliver(rv->rbuf, rv->n, buf, n);
    r->st = rv->st;
    atomic_store_explicit(&rv->done, 1, memory_order_release);
    pthread_mutex_unlock(&mb->lock);
    r->done = 1;
    r->h.p = NULL;
    return TS_OK;
  }
  tnode_t *s = ts_calloc(1, sizeof *s);
  if (!s) {
    pthread_mutex_unlock(&mb->lock);
    return TS_ERR_NOMEM;
  }
  s->src = c->wrank;
  s->box = wpeer;
  s->tag = tag;
  s->sbuf = buf;
  s->n = n;
  q_push(&mb->sends, &mb->sends_tail, s);
  pthread_mutex_unlock(&mb->lock);
  r->h.p = s;
  return TS_OK;
}

static ts_status_t t_irecv(ts_coll_comm_t *c, int wpeer, void *buf, size_t n, uint64_t tag, tp_req_t *r) {
  tworld_t *tw = c->world->priv;
  mailbox_t *mb = &tw->box[c->wrank];
  pthread_mutex_lock(&mb->lock);
  tnode_t *sn = q_take(&mb->sends, &mb->sends_tail, wpeer, tag);
  if (sn) {
    sn->st = deliver(buf, n, sn->sbuf, sn->n);
    r->st = sn->st;
    atomic_store_explicit(&sn->done, 1, memory_order_release);
    pthread_mutex_unlock(&mb->lock);
    r->done = 1;
    r->h.p = NULL;
    return TS_OK;
  }
  tnode_t *rv = ts_calloc(1, sizeof *rv);
  if (!rv) {
    pthread_mutex_unlock(&mb->lock);
    return TS_ERR_NOMEM;
  }
  rv->src = wpeer;
  rv->box = c->wrank;
  rv->tag = tag;
  rv->rbuf = buf;
  rv->n = n;
  q_push(&mb->recvs, &mb->recvs_tail, rv);
  pthread_mutex_unlock(&mb->lock);
  r->h.p = rv;
  return TS_OK;
}

static void t_test(ts_coll_comm_t *c, tp_req_t *r) {
  tnode_t *n = r->h.p;
  if (r->done || !n) return;
  if (!atomic_load_explicit(&n->done, memory_order_acquire)) return;
  r->st = n->st;
  r->done = 1;
  r->h.p = NULL;
  ts_free(n);
}

static void t_cancel(ts_coll_comm_t *c, tp_req_t *r) {
  tnode_t *n = r->h.p;
  if (!n) return;
  tworld_t *tw = c->world->priv;
  mailbox_t *mb = &tw->box[n->box];
  pthread_mutex_lock(&mb->lock);
  if (n->queued) {
    if (!q_remove(&mb->sends, &mb->sends_tail, n)) q_remove(&mb->recvs, &mb->recvs_tail, n);
  }
  pthread_mutex_unlock(&mb->lock);
  ts_free(n);
  r->h.p = NULL;
  r->done = 1;
  r->st = TS_ERR_REMOTE;
}

static void t_world_destroy(coll_world_t *w) {
  tworld_t *tw = w->priv;
  if (!tw) return;
  for (int i = 0; i < w->size; i++) {
    mailbox_t *mb = &tw->box[i];
    for (tnode_t *n = mb->sends, *next; n; n = next) {
      next = n->next;
      ts_free(n);
    }
    for (tnode_t *n = mb->recvs, *next; n; n = next) {
      next = n->next;
      ts_free(n);
    }
    pthread_mutex_destroy(&mb->lock);
  }
  ts_free(tw->box);
  ts_free(tw);
}

const coll_backend_t coll_threads_backend = {
    .name = "threads",
    .id = TS_COLL_BACKEND_THREADS,
    .isend = t_isend,
    .irecv = t_irecv,
    .test = t_test,
    .cancel = t_cancel,
    .world_destroy = t_world_destroy,
};

ts_status_t ts_coll_comm_create_threads(int n, ts_coll_comm_t **comms) {
  if (n <= 0 || n > 0xffff || !comms) return TS_ERR_INVALID_ARGUMENT;
  coll_world_t *w = coll_world_new(&coll_threads_backend, n, n);
  if (!w) return TS_ERR_NOMEM;
  w->same_space = true;
  tworld_t *tw = ts_calloc(1, sizeof *tw);
  if (tw) tw->box = ts_calloc((size_t)n, sizeof *tw->box);
  if (!tw || !tw->box) {
    ts_free(tw);
    coll_world_release(w);
    return TS_ERR_NOMEM;
  }
  for (int i = 0; i < n; i++) pthread_mutex_init(&tw->box[i].lock, NULL);
  w->priv = tw;
  coll_note_ranks_here(w, n);
  ts_status_t st = TS_OK;
  int made = 0;
  for (; made < n && st == TS_OK; made++) st = coll_comm_new_world(w, made, &comms[made]);
  if (st) {
    for (int i = 0; i < made - 1; i++) ts_coll_comm_destroy(comms[i]);
  }
  coll_world_release(w); /* the communicators hold it */
  return st;
}
