/* Two-level collectives for a communicator with a slice layout
 * (ts_coll_comm_set_slices): slice q holds ranks [q*k, (q+1)*k); c->intra
 * is this rank's slice and c->inter the ranks at its position i in every
 * slice. The slow links are between slices, so each algorithm moves only
 * 1/k of the data across them (the two-level schemes of
 * shared/reference/collectives.md; NCCL's and XLA's multislice all-reduce):
 *   all-reduce:     reduce-scatter inside, all-reduce across, all-gather inside;
 *   all-gather:     all-gather across, all-gather inside, then reorder;
 *   reduce-scatter: reorder, reduce-scatter inside, reduce-scatter across.
 * The steps run the sub-communicators' own table choices inline, in this
 * executor (nobody else posts on the sub-communicators), under the parent
 * operation's deadline. Every member gets the same bits: each element of an
 * all-reduce is reduced on one path and then copied. */
#include "coll_internal.h"

#include <string.h>

/* One step on sub-communicator `sub`: kind over count elements (the
 * all-gather's send count, the reduce-scatter's receive count). */
static ts_status_t step(ts_coll_comm_t *c, ts_coll_comm_t *sub, const coll_op_t *parent, ts_coll_kind_t kind,
                        const void *send, void *recv, size_t count) {
  size_t bytes = count * parent->esize;
  if (sub->size == 1) {
    /* one rank: every kind is a copy (send may be recv: in place) */
    if (send != recv && bytes) memmove(recv, send, bytes);
    return TS_OK;
  }
  coll_op_t o = *parent;
  o.kind = kind;
  o.send = o.user_send = send;
  o.recv = o.user_recv = recv;
  o.count = count;
  o.user_type = o.type;
  o.pairs = NULL;
  o.npairs = 0;
  sub->direct_on = c->direct_on;
  coll_algo_t a = coll_choose(sub, &o);
  o.tune = a.tune;
  /* a wait inside the step shows up in the parent's record */
  sub->cur_rec = c->cur_rec;
  sub->last_waiting = -1;
  ts_status_t st = a.fn(sub, &o);
  sub->cur_rec = NULL;
  return st;
}

ts_status_t coll_hier_allreduce(ts_coll_comm_t *c, coll_op_t *op) {
  int k = c->intra->size;
  size_t es = op->esize, cnt = op->count, m = (cnt + (size_t)k - 1) / (size_t)k;
  if (cnt == 0) return TS_OK;
  bool even = cnt % (size_t)k == 0;
  const char *in = op->send;
  char *blk = coll_scratch(c, 0, m * es), *out = op->recv;
  if (!blk) return TS_ERR_NOMEM;
  if (!even) {
    /* pad to k equal blocks with zeros (any op takes them without
     * overflow); the padding's results are dropped */
    char *pad = coll_scratch(c, 1, (size_t)k * m * es);
    out = coll_scratch(c, 2, (size_t)k * m * es);
    if (!pad || !out) return TS_ERR_NOMEM;
    memcpy(pad, op->send, cnt * es);
    memset(pad + cnt * es, 0, ((size_t)k * m - cnt) * es);
    in = pad;
  }
  TS_CHECK(step(c, c->intra, op, TS_COLL_REDUCE_SCATTER, in, blk, m));
  TS_CHECK(step(c, c->inter, op, TS_COLL_ALL_REDUCE, blk, blk, m));
  TS_CHECK(step(c, c->intra, op, TS_COLL_ALL_GATHER, blk, out, m));
  if (!even) memcpy(op->recv, out, cnt * es);
  return TS_OK;
}

ts_status_t coll_hier_allgather(ts_coll_comm_t *c, coll_op_t *op) {
  int s = c->inter->size, k = c->intra->size;
  size_t es = op->esize, m = op->count, blk = m * es;
  if (m == 0) return TS_OK;
  char *across = coll_scratch(c, 0, (size_t)s * blk), *all = coll_scratch(c, 1, (size_t)s * (size_t)k * blk);
  if (!across || !all) return TS_ERR_NOMEM;
  /* across[q] = rank q*k+i's block; then all[i'][q] = rank q*k+i''s block */
  TS_CHECK(step(c, c->inter, op, TS_COLL_ALL_GATHER, op->send, across, m));
  TS_CHECK(step(c, c->intra, op, TS_COLL_ALL_GATHER, across, all, (size_t)s * m));
  char *out = op->recv;
  for (int i = 0; i < k; i++)
    for (int q = 0; q < s; q++)
      memcpy(out + (size_t)(q * k + i) * blk, all + ((size_t)i * (size_t)s + (size_t)q) * blk, blk);
  return TS_OK;
}

ts_status_t coll_hier_reduce_scatter(ts_coll_comm_t *c, coll_op_t *op) {
  int s = c->inter->size, k = c->intra->size;
  size_t es = op->esize, m = op->count, blk = m * es;
  if (m == 0) return TS_OK;
  char *packed = coll_scratch(c, 0, (size_t)s * (size_t)k * blk), *part = coll_scratch(c, 1, (size_t)s * blk);
  if (!packed || !part) return TS_ERR_NOMEM;
  /* packed[i][q] = block of rank q*k+i: position i's blocks of every slice together */
  const char *in = op->send;
  for (int i = 0; i < k; i++)
    for (int q = 0; q < s; q++)
      memcpy(packed + ((size_t)i * (size_t)s + (size_t)q) * blk, in + (size_t)(q * k + i) * blk, blk);
  /* part[q] = the slice's sum of rank q*k+i's block; then the sum over slices of ours */
  TS_CHECK(step(c, c->intra, op, TS_COLL_REDUCE_SCATTER, packed, part, (size_t)s * m));
  TS_CHECK(step(c, c->inter, op, TS_COLL_REDUCE_SCATTER, part, op->recv, m));
  return TS_OK;
}
