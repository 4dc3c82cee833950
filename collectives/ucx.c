/* UCX backend: ucp tagged messages under our algorithms. Tags carry the
 * context, the sender's world rank and the step (coll_tag), and receives
 * match the full 64 bits, since ucp receives have no source argument
 * (shared/reference/collectives.md §4). Worker addresses are exchanged
 * through the bootstrap (MPI or the TCP rendezvous). On one host UCX picks
 * shared memory and CMA itself; across hosts TCP or verbs. One mutex
 * serialises this process's calls into the worker (single-thread mode). */
#include "coll_internal.h"

#ifdef TS_COLL_HAVE_UCX
#include <string.h>
#include <ucp/api/ucp.h>

#define ABORT_TAG (0x7fffull << 48 | 0xfffe)

typedef struct {
  ucp_context_h ctx;
  ucp_worker_h worker;
  ucp_ep_h *eps;
  pthread_mutex_t lock;
  void *abort_req;
  int abort_buf;
  int rank;
} uworld_t;

static uworld_t *uw_of(ts_coll_comm_t *c) { return c->world->priv; }

static ts_status_t u_post(uworld_t *uw, ucs_status_ptr_t p, tp_req_t *r) {
  if (p == NULL) {
    r->done = 1;
    r->h.p = NULL;
    return TS_OK;
  }
  if (UCS_PTR_IS_ERR(p)) {
    ts_log(TS_LOG_ERROR, "collectives: ucx: %s", ucs_status_string(UCS_PTR_STATUS(p)));
    return TS_ERR_REMOTE;
  }
  r->h.p = p;
  return TS_OK;
}

static ts_status_t u_isend(ts_coll_comm_t *c, int wpeer, const void *buf, size_t n, uint64_t tag, tp_req_t *r) {
  uworld_t *uw = uw_of(c);
  ucp_request_param_t prm = {0};
  pthread_mutex_lock(&uw->lock);
  ucs_status_ptr_t p = ucp_tag_send_nbx(uw->eps[wpeer], buf, n, tag, &prm);
  ts_status_t st = u_post(uw, p, r);
  pthread_mutex_unlock(&uw->lock);
  return st;
}

static ts_status_t u_irecv(ts_coll_comm_t *c, int wpeer, void *buf, size_t n, uint64_t tag, tp_req_t *r) {
  uworld_t *uw = uw_of(c);
  ucp_request_param_t prm = {0};
  pthread_mutex_lock(&uw->lock);
  ucs_status_ptr_t p = ucp_tag_recv_nbx(uw->worker, buf, n, tag, ~0ull, &prm);
  ts_status_t st = u_post(uw, p, r);
  pthread_mutex_unlock(&uw->lock);
  return st;
}

static void u_test(ts_coll_comm_t *c, tp_req_t *r) {
  if (r->done) return;
  uworld_t *uw = uw_of(c);
  pthread_mutex_lock(&uw->lock);
  ucp_worker_progress(uw->worker);
  ucs_status_t s = ucp_request_check_status(r->h.p);
  if (s != UCS_INPROGRESS) {
    ucp_request_free(r->h.p);
    r->h.p = NULL;
    r->done = 1;
    if (s != UCS_OK) {
      ts_log(TS_LOG_ERROR, "collectives: ucx transfer with rank %d: %s", r->peer, ucs_status_string(s));
      r->st = TS_ERR_REMOTE;
    }
  }
  pthread_mutex_unlock(&uw->lock);
}

static void u_cancel(ts_coll_comm_t *c, tp_req_t *r) {
  uworld_t *uw = uw_of(c);
  if (r->h.p) {
    pthread_mutex_lock(&uw->lock);
    ucp_request_cancel(uw->worker, r->h.p);
    ucp_request_free(r->h.p);
    pthread_mutex_unlock(&uw->lock);
  }
  r->h.p = NULL;
  r->done = 1;
  r->st = TS_ERR_REMOTE;
}

static void u_send_abort(coll_world_t *w) {
  uworld_t *uw = w->priv;
  static int one = 1;
  ucp_request_param_t prm = {0};
  pthread_mutex_lock(&uw->lock);
  for (int i = 0; i < w->size; i++) {
    if (i == uw->rank) continue;
    ucs_status_ptr_t p = ucp_tag_send_nbx(uw->eps[i], &one, sizeof one, ABORT_TAG, &prm);
    if (p && !UCS_PTR_IS_ERR(p)) ucp_request_free(p);
  }
  for (int k = 0; k < 100; k++) ucp_worker_progress(uw->worker);
  pthread_mutex_unlock(&uw->lock);
}

static void u_poll_abort(coll_world_t *w) {
  uworld_t *uw = w->priv;
  if (!uw->abort_req) return;
  pthread_mutex_lock(&uw->lock);
  ucp_worker_progress(uw->worker);
  bool got = ucp_request_check_status(uw->abort_req) != UCS_INPROGRESS;
  if (got) {
    ucp_request_free(uw->abort_req);
    uw->abort_req = NULL;
  }
  pthread_mutex_unlock(&uw->lock);
  if (got) coll_world_abort(w, TS_ERR_REMOTE, false);
}

static void u_world_destroy(coll_world_t *w) {
  uworld_t *uw = w->priv;
  if (!uw) return;
  if (uw->abort_req) {
    ucp_request_cancel(uw->worker, uw->abort_req);
    ucp_request_free(uw->abort_req);
  }
  ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
  for (int i = 0; i < w->size; i++) {
    if (!uw->eps || !uw->eps[i]) continue;
    ucs_status_ptr_t p = ucp_ep_close_nbx(uw->eps[i], &prm);
    double deadline = ts_coll_now() + 2;
    if (p && !UCS_PTR_IS_ERR(p)) {
      while (ucp_request_check_status(p) == UCS_INPROGRESS && ts_coll_now() < deadline) ucp_worker_progress(uw->worker);
      ucp_request_free(p);
    }
  }
  ts_free(uw->eps);
  if (uw->worker) ucp_worker_destroy(uw->worker);
  if (uw->ctx) ucp_cleanup(uw->ctx);
  pthread_mutex_destroy(&uw->lock);
  ts_free(uw);
}

const coll_backend_t coll_ucx_backend = {
    .name = "ucx",
    .id = TS_COLL_BACKEND_UCX,
    .isend = u_isend,
    .irecv = u_irecv,
    .test = u_test,
    .cancel = u_cancel,
    .send_abort = u_send_abort,
    .poll_abort = u_poll_abort,
    .world_destroy = u_world_destroy,
};

ts_status_t coll_ucx_world(coll_boot_t *b, coll_world_t **out) {
  coll_world_t *w = coll_world_new(&coll_ucx_backend, b->size, 1);
  uworld_t *uw = ts_calloc(1, sizeof *uw);
  if (!w || !uw) {
    coll_world_release(w);
    ts_free(uw);
    return TS_ERR_NOMEM;
  }
  pthread_mutex_init(&uw->lock, NULL);
  uw->rank = b->rank;
  w->priv = uw;
  ts_status_t st = TS_ERR_SYSTEM;
  ucp_config_t *cfg = NULL;
  ucp_address_t *addr = NULL;
  size_t alen = 0;
  char *all = NULL;
  if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK) goto fail;
  ucp_params_t p = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS,
                    .features = UCP_FEATURE_TAG,
                    .estimated_num_eps = (size_t)b->size};
  ucs_status_t us = ucp_init(&p, cfg, &uw->ctx);
  ucp_config_release(cfg);
  if (us != UCS_OK) goto fail;
  ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
  if (ucp_worker_create(uw->ctx, &wp, &uw->worker) != UCS_OK) goto fail;
  if (ucp_worker_get_address(uw->worker, &addr, &alen) != UCS_OK) goto fail;
  /* lengths first, then fixed-size slots of the longest */
  uint64_t mine = alen, *lens = ts_calloc((size_t)b->size, sizeof *lens);
  if (!lens) goto fail;
  st = b->allgather(b, &mine, lens, sizeof mine);
  uint64_t maxl = 0;
  for (int i = 0; i < b->size; i++) maxl = lens[i] > maxl ? lens[i] : maxl;
  char *slot = ts_calloc(1, maxl);
  all = ts_calloc((size_t)b->size, maxl);
  if (st == TS_OK && (!slot || !all)) st = TS_ERR_NOMEM;
  if (st == TS_OK) {
    memcpy(slot, addr, alen);
    st = b->allgather(b, slot, all, maxl);
  }
  ts_free(slot);
  ts_free(lens);
  if (st) goto fail;
  uw->eps = ts_calloc((size_t)b->size, sizeof *uw->eps);
  if (!uw->eps) {
    st = TS_ERR_NOMEM;
    goto fail;
  }
  for (int i = 0; i < b->size; i++) {
    ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                          .address = (const ucp_address_t *)(all + (size_t)i * maxl)};
    if (ucp_ep_create(uw->worker, &ep, &uw->eps[i]) != UCS_OK) {
      st = TS_ERR_REMOTE;
      goto fail;
    }
  }
  ucp_request_param_t prm = {0};
  ucs_status_ptr_t ar = ucp_tag_recv_nbx(uw->worker, &uw->abort_buf, sizeof uw->abort_buf, ABORT_TAG,
                                         ~0ull & ~(0xffffull << 32), &prm);
  uw->abort_req = UCS_PTR_IS_ERR(ar) ? NULL : ar;
  ucp_worker_release_address(uw->worker, addr);
  ts_free(all);
  *out = w;
  return TS_OK;
fail:
  if (addr) ucp_worker_release_address(uw->worker, addr);
  ts_free(all);
  ts_log(TS_LOG_ERROR, "collectives: cannot set up UCX: %s", ts_status_string(st ? st : TS_ERR_SYSTEM));
  coll_world_release(w);
  return st ? st : TS_ERR_SYSTEM;
}

#else

ts_status_t coll_ucx_world(coll_boot_t *b, coll_world_t **out) { return TS_ERR_UNSUPPORTED; }

#endif
