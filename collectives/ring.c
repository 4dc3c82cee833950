/* Segmented, pipelined ring: reduce-scatter then all-gather around the ring
 * (Patarasuk & Yuan 2009; nccl-tests' busbw assumes it). Each block moves
 * in segments, and a segment is forwarded as soon as it has been reduced, so
 * the steps overlap. Bytes sent per rank: 2(n-1)/n * S for all-reduce. */
#include "coll_internal.h"

#include <string.h>

#define SEG_BYTES (256 * 1024)

/* Block b of `total` elements cut n ways (all-reduce), in elements. */
static size_t blk_off(size_t total, int n, int b) { return (size_t)((unsigned __int128)total * (unsigned)b / (unsigned)n); }

typedef struct {
  size_t off, len; /* elements */
} span_t;

/* One pass around the ring. At step s (0..n-2) rank r sends block
 * send_block(s) to r+1 and receives recv_block(s) from r-1, where
 * send_block(s+1) == recv_block(s). With `reduce` the received segment is
 * combined into buf (via tmp); otherwise it lands in buf directly. */
static ts_status_t ring_pass(ts_coll_comm_t *c, coll_op_t *op, char *buf, const span_t *blocks, int first_send,
                             bool reduce, uint32_t step_base) {
  int n = c->size, r = c->rank, next = (r + 1) % n, prev = (r - 1 + n) % n;
  size_t es = op->esize;
  size_t seg = SEG_BYTES / es ? SEG_BYTES / es : 1;
  size_t maxlen = 0;
  for (int b = 0; b < n; b++)
    if (blocks[b].len > maxlen) maxlen = blocks[b].len;
  size_t maxseg = (maxlen + seg - 1) / seg;
  if (maxseg == 0) maxseg = 1;
  char *tmp[2] = {NULL, NULL};
  if (reduce) {
    tmp[0] = coll_scratch(c, 0, maxlen * es);
    tmp[1] = coll_scratch(c, 1, maxlen * es);
    if (!tmp[0] || !tmp[1]) return TS_ERR_NOMEM;
  }
  /* requests: sends of two steps in flight, receives of two steps */
  tp_req_t *rq = ts_calloc(4 * maxseg, sizeof *rq);
  if (!rq) return TS_ERR_NOMEM;
  tp_req_t *sreq[2] = {rq, rq + maxseg}, *rreq[2] = {rq + 2 * maxseg, rq + 3 * maxseg};
  int nsend[2] = {0, 0}, nrecv[2] = {0, 0};
  ts_status_t st = TS_OK;
#define SB(s) ((first_send - (s) + 2 * n) % n)
#define RB(s) ((first_send - (s) - 1 + 2 * n) % n)
#define TAG(s, j) (step_base + (uint32_t)((size_t)(s) * maxseg + (j)))
  /* post the receives of step s */
#define POST_RECVS(s)                                                                                \
  do {                                                                                               \
    const span_t *bk = &blocks[RB(s)];                                                               \
    size_t nseg = (bk->len + seg - 1) / seg;                                                         \
    int k = (s) & 1;                                                                                 \
    nrecv[k] = (int)nseg;                                                                            \
    for (size_t j = 0; j < nseg && st == TS_OK; j++) {                                               \
      size_t o = j * seg, l = bk->len - o < seg ? bk->len - o : seg;                                 \
      char *dst = reduce ? tmp[k] + o * es : buf + (bk->off + o) * es;                               \
      st = coll_irecv(c, op, prev, dst, l * es, TAG(s, j), &rreq[k][j]);                            \
    }                                                                                                \
  } while (0)

  /* step 0 sends the whole first block */
  {
    const span_t *bk = &blocks[SB(0)];
    size_t nseg = (bk->len + seg - 1) / seg;
    nsend[0] = (int)nseg;
    for (size_t j = 0; j < nseg && st == TS_OK; j++) {
      size_t o = j * seg, l = bk->len - o < seg ? bk->len - o : seg;
      st = coll_isend(c, op, next, buf + (bk->off + o) * es, l * es, TAG(0, j), &sreq[0][j]);
    }
  }
  if (st == TS_OK) POST_RECVS(0);
  for (int s = 0; s < n - 1 && st == TS_OK; s++) {
    int k = s & 1;
    /* the sends of step s-1 used slot k^1... sends of step s+1 go to slot (s+1)&1,
     * whose previous occupant (step s-1) must be finished first. */
    if (s + 1 < n - 1) {
      st = coll_waitall(c, op, sreq[(s + 1) & 1], nsend[(s + 1) & 1]);
      nsend[(s + 1) & 1] = 0;
      if (st) break;
      POST_RECVS(s + 1);
      if (st) break;
    }
    const span_t *bk = &blocks[RB(s)];
    for (int j = 0; j < nrecv[k] && st == TS_OK; j++) {
      st = coll_waitall(c, op, &rreq[k][j], 1);
      if (st) break;
      size_t o = (size_t)j * seg, l = bk->len - o < seg ? bk->len - o : seg;
      char *dst = buf + (bk->off + o) * es;
      if (reduce) coll_reduce(dst, tmp[k] + o * es, l, op->type, op->redop);
      if (s + 1 < n - 1) {
        st = coll_isend(c, op, next, dst, l * es, TAG(s + 1, (size_t)j), &sreq[(s + 1) & 1][j]);
        nsend[(s + 1) & 1] = j + 1;
      }
    }
  }
  if (st == TS_OK) st = coll_waitall(c, op, sreq[0], nsend[0]);
  if (st == TS_OK) st = coll_waitall(c, op, sreq[1], nsend[1]);
  if (st) {
    /* cancel whatever is still posted */
    for (size_t i = 0; i < 4 * maxseg; i++)
      if (!rq[i].done && rq[i].h.p) c->be->cancel(c, &rq[i]);
  }
#undef SB
#undef RB
#undef TAG
#undef POST_RECVS
  ts_free(rq);
  return st;
}

static span_t *ar_blocks(ts_coll_comm_t *c, size_t count) {
  span_t *b = ts_malloc((size_t)c->size * sizeof *b);
  if (!b) return NULL;
  for (int i = 0; i < c->size; i++) {
    b[i].off = blk_off(count, c->size, i);
    b[i].len = blk_off(count, c->size, i + 1) - b[i].off;
  }
  return b;
}

static span_t *even_blocks(ts_coll_comm_t *c, size_t count) {
  span_t *b = ts_malloc((size_t)c->size * sizeof *b);
  if (!b) return NULL;
  for (int i = 0; i < c->size; i++) b[i] = (span_t){(size_t)i * count, count};
  return b;
}

ts_status_t coll_ring_allreduce(ts_coll_comm_t *c, coll_op_t *op) {
  if (op->recv != op->send) memmove(op->recv, op->send, op->count * op->esize);
  if (c->size == 1) return TS_OK;
  span_t *b = ar_blocks(c, op->count);
  if (!b) return TS_ERR_NOMEM;
  /* reduce-scatter: rank r ends with block r; then all-gather from block r */
  ts_status_t st = ring_pass(c, op, op->recv, b, (c->rank - 1 + c->size) % c->size, true, 0);
  if (st == TS_OK) st = ring_pass(c, op, op->recv, b, c->rank, false, 0x8000);
  ts_free(b);
  return st;
}

ts_status_t coll_ring_reduce_scatter(ts_coll_comm_t *c, coll_op_t *op) {
  size_t n = (size_t)c->size, bytes = op->count * op->esize;
  char *work = coll_scratch(c, 2, n * bytes);
  if (!work) return TS_ERR_NOMEM;
  memcpy(work, op->send, n * bytes);
  ts_status_t st = TS_OK;
  if (c->size > 1) {
    span_t *b = even_blocks(c, op->count);
    if (!b) return TS_ERR_NOMEM;
    st = ring_pass(c, op, work, b, (c->rank - 1 + c->size) % c->size, true, 0);
    ts_free(b);
  }
  if (st == TS_OK) memcpy(op->recv, work + (size_t)c->rank * bytes, bytes);
  return st;
}

ts_status_t coll_ring_allgather(ts_coll_comm_t *c, coll_op_t *op) {
  size_t bytes = op->count * op->esize;
  char *own = (char *)op->recv + (size_t)c->rank * bytes;
  if (own != op->send) memmove(own, op->send, bytes);
  if (c->size == 1) return TS_OK;
  span_t *b = even_blocks(c, op->count);
  if (!b) return TS_ERR_NOMEM;
  ts_status_t st = ring_pass(c, op, op->recv, b, c->rank, false, 0);
  ts_free(b);
  return st;
}
