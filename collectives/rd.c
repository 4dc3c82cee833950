/* Recursive doubling (Thakur, Rabenseifner & Gropp 2005): log2(n) exchange
 * rounds, for small messages where latency dominates. Non-powers of two fold
 * the first 2*(n - 2^k) ranks in pairs first and unfold at the end. Partners
 * combine as (lower rank's value) op (higher rank's value), so every rank
 * computes bit-identical results. */
#include "coll_internal.h"

#include <string.h>

static int pow2_floor(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

ts_status_t coll_rd_allreduce(ts_coll_comm_t *c, coll_op_t *op) {
  size_t bytes = op->count * op->esize;
  if (op->recv != op->send) memmove(op->recv, op->send, bytes);
  int n = c->size, r = c->rank;
  if (n == 1) return TS_OK;
  char *buf = op->recv, *tmp = coll_scratch(c, 0, bytes);
  if (!tmp) return TS_ERR_NOMEM;
  int p = pow2_floor(n), rem = n - p, newrank;
  ts_status_t st = TS_OK;
  uint32_t step = 0;
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      tp_req_t q;
      TS_CHECK(coll_isend(c, op, r + 1, buf, bytes, step, &q));
      TS_CHECK(coll_waitall(c, op, &q, 1));
      newrank = -1;
    } else {
      tp_req_t q;
      TS_CHECK(coll_irecv(c, op, r - 1, tmp, bytes, step, &q));
      TS_CHECK(coll_waitall(c, op, &q, 1));
      coll_reduce3(buf, tmp, buf, op->count, op->type, op->redop);
      newrank = r / 2;
    }
  } else {
    newrank = r - rem;
  }
  step++;
  if (newrank >= 0) {
    for (int mask = 1; mask < p; mask <<= 1, step++) {
      int pn = newrank ^ mask;
      int partner = pn < rem ? pn * 2 + 1 : pn + rem;
      TS_CHECK(coll_sendrecv(c, op, partner, buf, bytes, partner, tmp, bytes, step));
      if (partner < r) coll_reduce3(buf, tmp, buf, op->count, op->type, op->redop);
      else coll_reduce(buf, tmp, op->count, op->type, op->redop);
    }
  }
  step = 64;
  if (r < 2 * rem) {
    tp_req_t q;
    if (r % 2) TS_CHECK(coll_isend(c, op, r - 1, buf, bytes, step, &q));
    else TS_CHECK(coll_irecv(c, op, r + 1, buf, bytes, step, &q));
    st = coll_waitall(c, op, &q, 1);
  }
  return st;
}

/* All-gather by recursive doubling, powers of two only (the table checks):
 * at round k each rank swaps the 2^k blocks it holds with its partner's. */
ts_status_t coll_rd_allgather(ts_coll_comm_t *c, coll_op_t *op) {
  size_t bytes = op->count * op->esize;
  char *buf = op->recv;
  int n = c->size, r = c->rank;
  if (buf + (size_t)r * bytes != op->send) memmove(buf + (size_t)r * bytes, op->send, bytes);
  uint32_t step = 0;
  for (int mask = 1; mask < n; mask <<= 1, step++) {
    int partner = r ^ mask;
    size_t mine = (size_t)(r & ~(mask - 1)) * bytes, theirs = (size_t)(partner & ~(mask - 1)) * bytes;
    TS_CHECK(coll_sendrecv(c, op, partner, buf + mine, (size_t)mask * bytes, partner, buf + theirs,
                           (size_t)mask * bytes, step));
  }
  return TS_OK;
}
