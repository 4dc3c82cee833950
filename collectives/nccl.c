/* NCCL backend: one GPU per rank, NCCL runs whole collectives (buffers are
 * device pointers). Bootstrap: rank 0's ncclUniqueId goes through the MPI
 * or TCP bootstrap; init is non-blocking and polled, so it has a deadline.
 * Completion is polled (cudaStreamQuery + ncclCommGetAsyncError) against the
 * operation's deadline and the abort flag; on either, ncclCommAbort, which
 * is the only call that unblocks kernels waiting on a dead peer
 * (shared/reference/collectives.md §7). All-to-all and collective-permute
 * are grouped ncclSend/ncclRecv. Built only with CUDA + NCCL; not run on the
 * CPU-only machines (compiled there). */
#include "coll_internal.h"

#ifdef TS_COLL_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#include <string.h>

typedef struct {
  ncclComm_t comm; /* the world's */
  cudaStream_t stream;
  int *dscratch;   /* 1 int on the device, for the barrier */
  bool aborted;
} nworld_t;

typedef struct {
  ncclComm_t comm;
  bool owned; /* sub-communicators own theirs; the world's belongs to nworld_t */
} ncomm_t;

static bool nccl_type(ts_elem_t t, ncclDataType_t *out) {
  switch (t) {
  case TS_F32: *out = ncclFloat32; return true;
  case TS_F64: *out = ncclFloat64; return true;
  case TS_F16: *out = ncclFloat16; return true;
  case TS_BF16: *out = ncclBfloat16; return true;
  case TS_S8: *out = ncclInt8; return true;
  case TS_U8:
  case TS_PRED: *out = ncclUint8; return true;
  case TS_S32: *out = ncclInt32; return true;
  case TS_U32: *out = ncclUint32; return true;
  case TS_S64: *out = ncclInt64; return true;
  case TS_U64: *out = ncclUint64; return true;
#if NCCL_VERSION_CODE >= 22400
  case TS_F8E4M3FN: *out = ncclFloat8e4m3; return true;
  case TS_F8E5M2: *out = ncclFloat8e5m2; return true;
#endif
  default: return false;
  }
}

static ncclRedOp_t nccl_op(ts_coll_redop_t op) {
  return op == TS_COLL_SUM ? ncclSum : op == TS_COLL_PROD ? ncclProd : op == TS_COLL_MIN ? ncclMin : ncclMax;
}

/* Polls until the communicator's pending init/split is done, or deadline. */
static ts_status_t wait_ready(ncclComm_t comm, double deadline) {
  for (unsigned spins = 0;; spins++) {
    ncclResult_t st;
    if (ncclCommGetAsyncError(comm, &st) != ncclSuccess) return TS_ERR_REMOTE;
    if (st == ncclSuccess) return TS_OK;
    if (st != ncclInProgress) {
      ts_log(TS_LOG_ERROR, "collectives: nccl: %s", ncclGetErrorString(st));
      return TS_ERR_REMOTE;
    }
    if (ts_coll_now() > deadline) return TS_ERR_TIMEOUT;
    coll_backoff(spins);
  }
}

/* Waits for the stream, watching NCCL's async errors, the abort flag and the deadline. */
static ts_status_t n_wait(ts_coll_comm_t *c, coll_op_t *op, ncclComm_t comm) {
  nworld_t *nw = c->world->priv;
  for (unsigned spins = 0;; spins++) {
    cudaError_t ce = cudaStreamQuery(nw->stream);
    if (ce == cudaSuccess) return TS_OK;
    if (ce != cudaErrorNotReady) {
      ts_log(TS_LOG_ERROR, "collectives: cuda: %s", cudaGetErrorString(ce));
      coll_world_abort(c->world, TS_ERR_SYSTEM, true);
    }
    ncclResult_t as = ncclSuccess;
    ncclCommGetAsyncError(comm, &as);
    if (as != ncclSuccess && as != ncclInProgress) {
      ts_log(TS_LOG_ERROR, "collectives: nccl: %s", ncclGetErrorString(as));
      coll_world_abort(c->world, TS_ERR_REMOTE, true);
    }
    ts_status_t st = coll_check(c, op);
    if (st) {
      /* the only way to unblock kernels waiting on a dead peer */
      ncclCommAbort(comm);
      nw->aborted = true;
      return st;
    }
    coll_backoff(spins);
  }
}

static ts_status_t n_run(ts_coll_comm_t *c, coll_op_t *op) {
  nworld_t *nw = c->world->priv;
  ncomm_t *nc = c->bpriv;
  if (nw->aborted) return TS_ERR_REMOTE;
  ncclComm_t comm = nc->comm;
  ncclDataType_t t;
  if (op->kind != TS_COLL_BARRIER && !nccl_type(op->type, &t)) return TS_ERR_UNSUPPORTED;
  size_t cnt = op->count, bytes = cnt * op->esize;
  ncclResult_t r = ncclSuccess;
  cudaStream_t s = nw->stream;
  switch (op->kind) {
  case TS_COLL_ALL_REDUCE: r = ncclAllReduce(op->send, op->recv, cnt, t, nccl_op(op->redop), comm, s); break;
  case TS_COLL_ALL_GATHER: r = ncclAllGather(op->send, op->recv, cnt, t, comm, s); break;
  case TS_COLL_REDUCE_SCATTER: r = ncclReduceScatter(op->send, op->recv, cnt, t, nccl_op(op->redop), comm, s); break;
  case TS_COLL_BROADCAST: r = ncclBroadcast(op->send, op->recv, cnt, t, op->root, comm, s); break;
  case TS_COLL_SEND: r = ncclSend(op->send, cnt, t, op->root, comm, s); break;
  case TS_COLL_RECV: r = ncclRecv(op->recv, cnt, t, op->root, comm, s); break;
  case TS_COLL_BARRIER: r = ncclAllReduce(nw->dscratch, nw->dscratch, 1, ncclInt32, ncclSum, comm, s); break;
  case TS_COLL_ALL_TO_ALL:
    /* sends and receives that depend on each other must share one group */
    ncclGroupStart();
    for (int p = 0; p < c->size && r == ncclSuccess; p++) {
      r = ncclSend((const char *)op->send + (size_t)p * bytes, cnt, t, p, comm, s);
      if (r == ncclSuccess) r = ncclRecv((char *)op->recv + (size_t)p * bytes, cnt, t, p, comm, s);
    }
    if (ncclGroupEnd() != ncclSuccess && r == ncclSuccess) r = ncclInternalError;
    break;
  case TS_COLL_COLLECTIVE_PERMUTE: {
    int to = -1, from = -1;
    for (int i = 0; i < op->npairs; i++) {
      if (op->pairs[i][0] == c->rank) to = (int)op->pairs[i][1];
      if (op->pairs[i][1] == c->rank) from = (int)op->pairs[i][0];
    }
    if (from < 0 && cudaMemsetAsync(op->recv, 0, bytes, s) != cudaSuccess) return TS_ERR_SYSTEM;
    ncclGroupStart();
    if (to >= 0) r = ncclSend(op->send, cnt, t, to, comm, s);
    if (from >= 0 && r == ncclSuccess) r = ncclRecv(op->recv, cnt, t, from, comm, s);
    if (ncclGroupEnd() != ncclSuccess && r == ncclSuccess) r = ncclInternalError;
    break;
  }
  default: return TS_ERR_INTERNAL;
  }
  if (r != ncclSuccess && r != ncclInProgress) {
    ts_log(TS_LOG_ERROR, "collectives: nccl %s: %s", ts_coll_kind_name(op->kind), ncclGetErrorString(r));
    return TS_ERR_REMOTE;
  }
  return n_wait(c, op, comm);
}

static ts_status_t n_comm_init(ts_coll_comm_t *c) {
  nworld_t *nw = c->world->priv;
  ncomm_t *nc = ts_calloc(1, sizeof *nc);
  if (!nc) return TS_ERR_NOMEM;
  c->bpriv = nc;
  if (c->size == c->world->size && c->ctx == 0) {
    nc->comm = nw->comm;
    return TS_OK;
  }
  /* A split of the world: color = the group's first world rank. Splits of
   * splits would need the parent's NCCL communicator. */
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclResult_t r = ncclCommSplit(nw->comm, c->wranks[0], c->rank, &nc->comm, &cfg);
  if (r != ncclSuccess && r != ncclInProgress) return TS_ERR_UNSUPPORTED;
  nc->owned = true;
  return wait_ready(nc->comm, ts_coll_now() + c->timeout_s);
}

static void n_comm_fini(ts_coll_comm_t *c) {
  nworld_t *nw = c->world->priv;
  ncomm_t *nc = c->bpriv;
  if (!nc) return;
  if (nc->owned && nc->comm) {
    if (nw->aborted || atomic_load(&c->world->aborted)) ncclCommAbort(nc->comm);
    else ncclCommDestroy(nc->comm);
  }
  ts_free(nc);
  c->bpriv = NULL;
}

static void n_world_destroy(coll_world_t *w) {
  nworld_t *nw = w->priv;
  if (!nw) return;
  if (nw->comm) {
    if (nw->aborted || atomic_load(&w->aborted)) ncclCommAbort(nw->comm);
    else ncclCommDestroy(nw->comm);
  }
  if (nw->dscratch) cudaFree(nw->dscratch);
  if (nw->stream) cudaStreamDestroy(nw->stream);
  ts_free(nw);
}

static ts_status_t n_unused_p2p(ts_coll_comm_t *c, int wpeer, const void *buf, size_t n, uint64_t tag, tp_req_t *r) {
  return TS_ERR_INTERNAL;
}
static ts_status_t n_unused_recv(ts_coll_comm_t *c, int wpeer, void *buf, size_t n, uint64_t tag, tp_req_t *r) {
  return TS_ERR_INTERNAL;
}
static void n_unused_test(ts_coll_comm_t *c, tp_req_t *r) { r->done = 1; }

const coll_backend_t coll_nccl_backend = {
    .name = "nccl",
    .id = TS_COLL_BACKEND_NCCL,
    .isend = n_unused_p2p,
    .irecv = n_unused_recv,
    .test = n_unused_test,
    .cancel = n_unused_test,
    .run = n_run,
    .comm_init = n_comm_init,
    .comm_fini = n_comm_fini,
    .world_destroy = n_world_destroy,
};

ts_status_t coll_nccl_world(coll_boot_t *b, coll_world_t **out) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    ts_log(TS_LOG_ERROR, "collectives: nccl: no CUDA device on this machine");
    return TS_ERR_UNSUPPORTED;
  }
  /* ranks of one host take consecutive devices */
  if (cudaSetDevice(b->rank % ndev) != cudaSuccess) return TS_ERR_SYSTEM;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (b->rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) return TS_ERR_SYSTEM;
  ncclUniqueId *all = ts_calloc((size_t)b->size, sizeof *all);
  if (!all) return TS_ERR_NOMEM;
  ts_status_t st = b->allgather(b, &id, all, sizeof id);
  id = all[0];
  ts_free(all);
  if (st) return st;
  coll_world_t *w = coll_world_new(&coll_nccl_backend, b->size, 1);
  nworld_t *nw = ts_calloc(1, sizeof *nw);
  if (!w || !nw) {
    coll_world_release(w);
    ts_free(nw);
    return TS_ERR_NOMEM;
  }
  w->priv = nw;
  if (cudaStreamCreateWithFlags(&nw->stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc((void **)&nw->dscratch, sizeof(int)) != cudaSuccess) {
    coll_world_release(w);
    return TS_ERR_SYSTEM;
  }
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&nw->comm, b->size, id, b->rank, &cfg);
  if (r != ncclSuccess && r != ncclInProgress) {
    ts_log(TS_LOG_ERROR, "collectives: ncclCommInitRank: %s", ncclGetErrorString(r));
    coll_world_release(w);
    return TS_ERR_REMOTE;
  }
  st = wait_ready(nw->comm, ts_coll_now() + 120);
  if (st) {
    nw->aborted = true;
    coll_world_release(w);
    return st;
  }
  *out = w;
  return TS_OK;
}

#else

ts_status_t coll_nccl_world(coll_boot_t *b, coll_world_t **out) { return TS_ERR_UNSUPPORTED; }

#endif
