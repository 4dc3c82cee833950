/* Point-to-point algorithms: pairwise and Bruck all-to-all, collective-permute,
 * binomial-tree broadcast, send/recv and the dissemination barrier. */
#include "coll_internal.h"

#include <string.h>

/* Pairwise exchange: round s sends block r+s to rank r+s and receives block
 * r-s from rank r-s; n-1 rounds, each link used once per round. */
ts_status_t coll_pairwise_alltoall(ts_coll_comm_t *c, coll_op_t *op) {
  size_t bytes = op->count * op->esize;
  int n = c->size, r = c->rank;
  const char *s = op->send;
  char *d = op->recv;
  memcpy(d + (size_t)r * bytes, s + (size_t)r * bytes, bytes);
  for (int k = 1; k < n; k++) {
    int to = (r + k) % n, from = (r - k + n) % n;
    TS_CHECK(coll_sendrecv(c, op, to, s + (size_t)to * bytes, bytes, from, d + (size_t)from * bytes, bytes,
                           (uint32_t)k));
  }
  return TS_OK;
}

/* Bruck's all-to-all (Bruck et al. 1997): ceil(log2 n) rounds instead of
 * n-1, each moving about n/2 blocks, for blocks small enough that rounds
 * cost more than bytes. work[i] starts as the block for rank r+i; round k
 * sends every block whose index has bit k set to rank r+k (which keeps it at
 * the same index). Afterwards work[i] came from rank r-i. */
ts_status_t coll_bruck_alltoall(ts_coll_comm_t *c, coll_op_t *op) {
  size_t bytes = op->count * op->esize;
  int n = c->size, r = c->rank;
  const char *s = op->send;
  char *d = op->recv;
  if (n == 1 || bytes == 0) {
    if (bytes) memcpy(d, s, bytes);
    return TS_OK;
  }
  size_t most = (size_t)(n + 1) / 2; /* blocks with a given bit set, at most */
  char *work = coll_scratch(c, 0, (size_t)n * bytes), *out = coll_scratch(c, 1, most * bytes),
       *in = coll_scratch(c, 2, most * bytes);
  if (!work || !out || !in) return TS_ERR_NOMEM;
  for (int i = 0; i < n; i++) memcpy(work + (size_t)i * bytes, s + (size_t)((r + i) % n) * bytes, bytes);
  uint32_t step = 0;
  for (int k = 1; k < n; k <<= 1, step++) {
    size_t nb = 0;
    for (int i = k; i < n; i++)
      if (i & k) memcpy(out + nb++ * bytes, work + (size_t)i * bytes, bytes);
    TS_CHECK(coll_sendrecv(c, op, (r + k) % n, out, nb * bytes, (r - k + n) % n, in, nb * bytes, step));
    nb = 0;
    for (int i = k; i < n; i++)
      if (i & k) memcpy(work + (size_t)i * bytes, in + nb++ * bytes, bytes);
  }
  for (int i = 0; i < n; i++) memcpy(d + (size_t)((r - i + n) % n) * bytes, work + (size_t)i * bytes, bytes);
  return TS_OK;
}

ts_status_t coll_p2p_permute(ts_coll_comm_t *c, coll_op_t *op) {
  size_t bytes = op->count * op->esize;
  int r = c->rank, to = -1, from = -1;
  for (int i = 0; i < op->npairs; i++) {
    if (op->pairs[i][0] == r) to = (int)op->pairs[i][1];
    if (op->pairs[i][1] == r) from = (int)op->pairs[i][0];
  }
  if (from < 0) memset(op->recv, 0, bytes);
  if (from == r) {
    memmove(op->recv, op->send, bytes);
    from = -1;
  }
  if (to == r) to = -1;
  tp_req_t q[2];
  int nq = 0;
  if (from >= 0) TS_CHECK(coll_irecv(c, op, from, op->recv, bytes, 0, &q[nq++]));
  if (to >= 0) {
    ts_status_t st = coll_isend(c, op, to, op->send, bytes, 0, &q[nq]);
    if (st) {
      if (nq) c->be->cancel(c, &q[0]);
      return st;
    }
    nq++;
  }
  return coll_waitall(c, op, q, nq);
}

/* Binomial tree rooted at `root`: ceil(log2 n) rounds. */
ts_status_t coll_binomial_broadcast(ts_coll_comm_t *c, coll_op_t *op) {
  size_t bytes = op->count * op->esize;
  int n = c->size, r = c->rank, vr = (r - op->root + n) % n;
  if (r == op->root && op->recv != op->send) memmove(op->recv, op->send, bytes);
  int mask = 1;
  while (mask < n) {
    if (vr & mask) {
      int src = (vr - mask + op->root) % n;
      tp_req_t q;
      TS_CHECK(coll_irecv(c, op, src, op->recv, bytes, 0, &q));
      TS_CHECK(coll_waitall(c, op, &q, 1));
      break;
    }
    mask <<= 1;
  }
  mask >>= 1;
  tp_req_t q[32];
  int nq = 0;
  for (; mask > 0; mask >>= 1) {
    if (vr + mask < n) {
      int dst = (vr + mask + op->root) % n;
      ts_status_t st = coll_isend(c, op, dst, op->recv, bytes, 0, &q[nq]);
      if (st) {
        for (int i = 0; i < nq; i++) c->be->cancel(c, &q[i]);
        return st;
      }
      nq++;
    }
  }
  return coll_waitall(c, op, q, nq);
}

ts_status_t coll_p2p_send(ts_coll_comm_t *c, coll_op_t *op) {
  tp_req_t q;
  TS_CHECK(coll_isend(c, op, op->root, op->send, op->count * op->esize, COLL_STEP_P2P, &q));
  return coll_waitall(c, op, &q, 1);
}

ts_status_t coll_p2p_recv(ts_coll_comm_t *c, coll_op_t *op) {
  tp_req_t q;
  TS_CHECK(coll_irecv(c, op, op->root, op->recv, op->count * op->esize, COLL_STEP_P2P, &q));
  return coll_waitall(c, op, &q, 1);
}

/* Dissemination barrier (Hensgen, Finkel & Manber 1988): ceil(log2 n) rounds
 * of empty messages to r+2^k. */
ts_status_t coll_dissemination_barrier(ts_coll_comm_t *c, coll_op_t *op) {
  int n = c->size, r = c->rank;
  uint32_t step = 0;
  char dummy = 0, sink = 0;
  for (int k = 1; k < n; k <<= 1, step++)
    TS_CHECK(coll_sendrecv(c, op, (r + k) % n, &dummy, 0, (r - k + n) % n, &sink, 0, step));
  return TS_OK;
}
