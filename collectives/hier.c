/* Two-level collectives for a communicator with a slice layout
 * (ts_coll_comm_set_slices): slice q holds ranks [q*k, (q+1)*k); c->intra
 * is this rank's slice and c->inter the ranks at its position i in every
 * slice. The slow links are between slices, so each algorithm moves only
 * 1/k of the data across them (the two-level schemes of
 * shared/reference/collectives.md; NCCL's and XLA's multislice all-reduce):
 *   all-reduce:     reduce-scatter inside, all-reduce across, all-gather inside;
 *   all-gather:     all-gather across, all-gather inside, then reorder;
 *   reduce-scatter: reorder, reduce-scatter inside, reduce-scatter across.
 *
 * Each runs as a software pipeline over chunks of the buffer: while one
 * chunk crosses the slow link, the steps inside the slice work on its
 * neighbours, so they hide behind the link instead of adding their time to
 * it. Across slices every member exchanges with every other slice directly,
 * posted in one stage and waited for in a later one; the steps inside run
 * the intra communicator's own table choice inline, in this executor (nobody
 * else posts on the sub-communicators). Every wait is under the parent
 * operation's deadline.
 *
 * Every member gets the same bits: each element is reduced in slice order,
 * either on one member and then copied, or (the all-reduce across two
 * slices) by both members of a pair from the same two operands. */
#include "coll_internal.h"

#include <string.h>

/* A chunk's share of S (TESSERA_COLL_HIER_CHUNK_KIB overrides), at most
 * MAX_CHUNKS chunks. Measured on 2 emulated hosts x 2 ranks (2 ms one way,
 * 1 Gbit/s, Open MPI over TCP), 16 MiB all-reduce: 4 MiB chunks 0.16 GB/s
 * busbw, 2 MiB 0.15, 1 MiB 0.12, a single chunk 0.13-0.14; below 2 MiB
 * every chunk's steps inside cost one more synchronisation of the slice,
 * whose ranks' transfers across progress unevenly. */
#define CHUNK_BYTES (4 * 1024 * 1024)
#define MAX_CHUNKS 64
/* Transfers across slices go as messages of at most this many bytes, as
 * the ring's segments do (128 KiB to 1 MiB measured the same). */
#define SEG_BYTES (256 * 1024)

static size_t chunk_bytes(void) {
  static _Atomic int64_t cached = INT64_MIN;
  int64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
  if (v == INT64_MIN) {
    int kib = ts_env_int(TS_ENV_COLL_HIER_CHUNK_KIB, -1);
    v = kib > 0 ? (int64_t)kib * 1024 : CHUNK_BYTES;
    atomic_store_explicit(&cached, v, memory_order_relaxed);
  }
  return (size_t)v;
}

/* Chunks of `count` elements that each stand for `ebytes` bytes of S: the
 * chunk length (a multiple of `unit`) and, in *nchunks, how many (the last
 * one may be shorter). Every member computes the same. */
static size_t chunking(size_t count, size_t ebytes, size_t unit, size_t *nchunks) {
  size_t want = count * ebytes / chunk_bytes();
  if (want < 1) want = 1;
  if (want > MAX_CHUNKS) want = MAX_CHUNKS;
  size_t len = (count + want - 1) / want;
  len = (len + unit - 1) / unit * unit;
  *nchunks = (count + len - 1) / len;
  return len;
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* Part p of n elements cut s ways. */
static size_t part_off(size_t n, int s, int p) { return n * (size_t)p / (size_t)s; }

/* dst = x[0] op x[1] op ... op x[s-1], left to right; dst is x[0] or
 * distinct from every x[p]. */
static void reduce_slices(const coll_op_t *op, char *dst, char *const *x, int s, size_t n) {
  int p = 1;
  if (dst != x[0]) {
    coll_reduce3(dst, x[0], x[1], n, op->type, op->redop);
    p = 2;
  }
  for (; p < s; p++) coll_reduce(dst, x[p], n, op->type, op->redop);
}

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

/* ---- exchanges across slices ------------------------------------------------ */

/* Exchanges with the other slices that can be in flight at once. */
#define NSLOTS 4

/* What an exchange sends to one slice and receives from it, in elements
 * (0: nothing; both sides know the lengths). */
typedef struct {
  char *sbuf, *rbuf;
  size_t slen, rlen;
} xpeer_t;

typedef struct {
  tp_req_t *rq;
  int n; /* posted */
} xchg_t;

typedef struct {
  ts_coll_comm_t *x; /* c->inter: member p is slice p */
  coll_op_t *op;
  int s, q;    /* slices, this rank's */
  xpeer_t *to; /* per slice: what the next pipe_post moves */
  char **opnd; /* per slice: an operand of reduce_slices */
  size_t seg;  /* elements per message */
  xchg_t slot[NSLOTS];
  tp_req_t *rq;
} pipe_t;

/* `most`: the most elements any exchange of this operation moves to or
 * from one slice. */
static ts_status_t pipe_open(pipe_t *p, ts_coll_comm_t *c, coll_op_t *op, size_t most) {
  ts_coll_comm_t *x = c->inter;
  *p = (pipe_t){.x = x, .op = op, .s = x->size, .q = x->rank};
  p->seg = SEG_BYTES / op->esize ? SEG_BYTES / op->esize : 1;
  size_t per = 2 * (size_t)(x->size - 1) * ((most + p->seg - 1) / p->seg);
  p->to = ts_calloc((size_t)x->size, sizeof *p->to);
  p->opnd = ts_calloc((size_t)x->size, sizeof *p->opnd);
  p->rq = ts_calloc(NSLOTS * (per ? per : 1), sizeof *p->rq);
  if (!p->to || !p->opnd || !p->rq) {
    ts_free(p->to);
    ts_free(p->opnd);
    ts_free(p->rq);
    return TS_ERR_NOMEM;
  }
  for (int i = 0; i < NSLOTS; i++) p->slot[i].rq = p->rq + (size_t)i * per;
  /* the waits across show up in the parent's record */
  x->cur_rec = c->cur_rec;
  x->last_waiting = -1;
  return TS_OK;
}

/* Posts p->to as the exchange of `slot`, nearest slices first, in
 * messages of p->seg elements matched in order under one tag. The sends go
 * before the receives: posted the other way round, Open MPI over TCP let
 * one direction of a pair's exchange crawl (200 ms against 70 the other
 * way) and a 16 MiB all-reduce on 2 x 2 ranks took 290 ms against 190. */
static ts_status_t pipe_post(pipe_t *p, int slot, uint32_t tag_step) {
  xchg_t *e = &p->slot[slot];
  size_t es = p->op->esize;
  e->n = 0;
  for (int d = 1; d < p->s; d++) {
    int wto = (p->q + d) % p->s, wfrom = (p->q - d + p->s) % p->s;
    const xpeer_t *to = &p->to[wto], *from = &p->to[wfrom];
    for (size_t o = 0; o < to->slen; o += p->seg, e->n++)
      TS_CHECK(coll_isend(p->x, p->op, wto, to->sbuf + o * es, min_sz(p->seg, to->slen - o) * es, tag_step,
                          &e->rq[e->n]));
    for (size_t o = 0; o < from->rlen; o += p->seg, e->n++)
      TS_CHECK(coll_irecv(p->x, p->op, wfrom, from->rbuf + o * es, min_sz(p->seg, from->rlen - o) * es, tag_step,
                          &e->rq[e->n]));
  }
  return TS_OK;
}

static ts_status_t pipe_wait(pipe_t *p, int slot) {
  xchg_t *e = &p->slot[slot];
  ts_status_t st = coll_waitall(p->x, p->op, e->rq, e->n);
  e->n = 0;
  return st;
}

/* Ends the pipeline with status st: after an error, withdraws whatever is
 * still in flight (a receive must not land in scratch later). */
static ts_status_t pipe_close(pipe_t *p, ts_status_t st) {
  for (int i = 0; i < NSLOTS && st; i++)
    for (int j = 0; j < p->slot[i].n; j++)
      if (!p->slot[i].rq[j].done) p->x->be->cancel(p->x, &p->slot[i].rq[j]);
  p->x->cur_rec = NULL;
  ts_free(p->to);
  ts_free(p->opnd);
  ts_free(p->rq);
  return st;
}

/* ---- all-reduce ------------------------------------------------------------ */

/* Chunk t covers [t*L, t*L + len) of the buffer; the last one, when len is
 * not a multiple of k, is padded with zeros (any op takes them without
 * overflow; their results are dropped). After the reduce-scatter inside,
 * this rank holds piece l = len/k of it, and the pieces at its position in
 * every slice are all-reduced across:
 *   two slices: the pair swaps whole pieces and both compute x0 op x1
 *     (one round; the same bytes per member as reduce-scatter + all-gather,
 *     and the same kernel on the same operands gives the same bits: 16 and
 *     64 MiB on 2 x 2 ranks, 0.16 against 0.155 GB/s busbw for two rounds);
 *   more: part p of the piece goes to slice p, which reduces it in slice
 *     order and sends it back to every slice (2(s-1)/s of a piece, as a
 *     ring moves).
 * Stages of chunk t: scatter (reduce-scatter inside into piece[t%3], post
 * the exchange), reduce (wait, reduce; with more slices post the parts
 * back), gather (with more slices wait; all-gather inside). Round t runs
 * scatter(t), reduce(t-1) and gather(t-1), or gather(t-2) with more slices:
 * the link always has the next exchange queued behind the one waited for. */
typedef struct {
  ts_coll_comm_t *c;
  coll_op_t *op;
  pipe_t pipe;
  int k;
  bool swap; /* two slices */
  size_t L, nchunks, lmax, most; /* elements: chunk, piece, most received from one slice */
  char *piece, *got, *pad;       /* 3 pieces; 2 x s received; padded input and output */
  char *result[3];               /* per piece: where its all-reduced values are */
} ar_t;

static size_t ar_len(const ar_t *a, size_t t) { return min_sz(a->L, a->op->count - t * a->L); }
static size_t ar_piece_len(const ar_t *a, size_t t) { return (ar_len(a, t) + (size_t)a->k - 1) / (size_t)a->k; }
static char *ar_piece(const ar_t *a, size_t t) { return a->piece + (t % 3) * a->lmax * a->op->esize; }
static char *ar_got(const ar_t *a, size_t t, int p) {
  return a->got + ((t % 2) * (size_t)a->pipe.s + (size_t)p) * a->most * a->op->esize;
}

static ts_status_t ar_scatter(ar_t *a, size_t t) {
  coll_op_t *op = a->op;
  pipe_t *p = &a->pipe;
  size_t es = op->esize, len = ar_len(a, t), l = ar_piece_len(a, t);
  const char *in = (const char *)op->send + t * a->L * es;
  if (l * (size_t)a->k != len) {
    memcpy(a->pad, in, len * es);
    memset(a->pad + len * es, 0, (l * (size_t)a->k - len) * es);
    in = a->pad;
  }
  char *piece = ar_piece(a, t);
  TS_CHECK(step(a->c, a->c->intra, op, TS_COLL_REDUCE_SCATTER, in, piece, l));
  size_t mine = part_off(l, p->s, p->q + 1) - part_off(l, p->s, p->q);
  for (int r = 0; r < p->s; r++) {
    size_t o = part_off(l, p->s, r);
    if (a->swap) p->to[r] = (xpeer_t){piece, ar_got(a, t, r), l, l};
    else p->to[r] = (xpeer_t){piece + o * es, ar_got(a, t, r), part_off(l, p->s, r + 1) - o, mine};
  }
  return pipe_post(p, (int)(t % 2), (uint32_t)(2 * t));
}

static ts_status_t ar_reduce(ar_t *a, size_t t) {
  pipe_t *p = &a->pipe;
  TS_CHECK(pipe_wait(p, (int)(t % 2)));
  size_t es = a->op->esize, l = ar_piece_len(a, t);
  char *piece = ar_piece(a, t), **x = p->opnd;
  if (a->swap) {
    /* x0 op x1 into x0, whichever of the two is ours */
    for (int r = 0; r < 2; r++) x[r] = r == p->q ? piece : ar_got(a, t, r);
    reduce_slices(a->op, x[0], x, 2, l);
    a->result[t % 3] = x[0];
    return TS_OK;
  }
  size_t o = part_off(l, p->s, p->q), n = part_off(l, p->s, p->q + 1) - o;
  char *mine = piece + o * es;
  if (n) {
    for (int r = 0; r < p->s; r++) x[r] = r == p->q ? mine : ar_got(a, t, r);
    reduce_slices(a->op, x[0], x, p->s, n);
    if (x[0] != mine) memcpy(mine, x[0], n * es);
  }
  for (int r = 0; r < p->s; r++) {
    size_t ro = part_off(l, p->s, r);
    p->to[r] = (xpeer_t){mine, piece + ro * es, n, part_off(l, p->s, r + 1) - ro};
  }
  a->result[t % 3] = piece;
  return pipe_post(p, 2 + (int)(t % 2), (uint32_t)(2 * t + 1));
}

static ts_status_t ar_gather(ar_t *a, size_t t) {
  coll_op_t *op = a->op;
  if (!a->swap) TS_CHECK(pipe_wait(&a->pipe, 2 + (int)(t % 2)));
  size_t es = op->esize, len = ar_len(a, t), l = ar_piece_len(a, t);
  char *out = (char *)op->recv + t * a->L * es;
  bool padded = l * (size_t)a->k != len;
  char *dst = padded ? a->pad + a->L * es : out;
  TS_CHECK(step(a->c, a->c->intra, op, TS_COLL_ALL_GATHER, a->result[t % 3], dst, l));
  if (padded) memcpy(out, dst, len * es);
  return TS_OK;
}

ts_status_t coll_hier_allreduce(ts_coll_comm_t *c, coll_op_t *op) {
  if (op->count == 0) return TS_OK;
  int s = c->inter->size;
  ar_t a = {.c = c, .op = op, .k = c->intra->size, .swap = s == 2};
  size_t es = op->esize;
  a.L = chunking(op->count, es, (size_t)a.k, &a.nchunks);
  a.lmax = a.L / (size_t)a.k;
  a.most = a.swap ? a.lmax : (a.lmax + (size_t)s - 1) / (size_t)s;
  a.piece = coll_scratch(c, 0, 3 * a.lmax * es);
  a.got = coll_scratch(c, 1, 2 * (size_t)s * a.most * es);
  a.pad = coll_scratch(c, 2, 2 * a.L * es);
  if (!a.piece || !a.got || !a.pad) return TS_ERR_NOMEM;
  TS_CHECK(pipe_open(&a.pipe, c, op, a.most));
  size_t lag = a.swap ? 1 : 2, n = a.nchunks;
  ts_status_t st = TS_OK;
  for (size_t t = 0; t < n + lag && st == TS_OK; t++) {
    if (t < n) st = ar_scatter(&a, t);
    if (st == TS_OK && t >= 1 && t <= n) st = ar_reduce(&a, t - 1);
    if (st == TS_OK && t >= lag) st = ar_gather(&a, t - lag);
  }
  return pipe_close(&a.pipe, st);
}

/* ---- all-gather ------------------------------------------------------------ */

/* Chunk t of every rank's block, [t*L, t*L + len): sent to every other
 * slice into across[t%2] (slot q' = slice q''s), then all-gathered inside
 * (all[i'][q'] = rank q'*k+i''s chunk) and put in place. The exchange of
 * chunk t+1 is in flight while chunk t is gathered inside. */
static ts_status_t ag_post(pipe_t *p, char *across, size_t L, size_t t) {
  const coll_op_t *op = p->op;
  size_t es = op->esize, off = t * L, len = min_sz(L, op->count - off);
  char *mine = (char *)op->send + off * es, *acr = across + (t % 2) * (size_t)p->s * L * es;
  for (int r = 0; r < p->s; r++) p->to[r] = (xpeer_t){mine, acr + (size_t)r * len * es, len, len};
  return pipe_post(p, (int)(t % 2), (uint32_t)t);
}

ts_status_t coll_hier_allgather(ts_coll_comm_t *c, coll_op_t *op) {
  int s = c->inter->size, k = c->intra->size, q = c->inter->rank;
  size_t es = op->esize, m = op->count, nch;
  if (m == 0) return TS_OK;
  size_t L = chunking(m, (size_t)c->size * es, 1, &nch);
  char *across = coll_scratch(c, 0, 2 * (size_t)s * L * es), *all = coll_scratch(c, 1, (size_t)s * (size_t)k * L * es);
  if (!across || !all) return TS_ERR_NOMEM;
  pipe_t p;
  TS_CHECK(pipe_open(&p, c, op, L));
  ts_status_t st = ag_post(&p, across, L, 0);
  char *out = op->recv;
  for (size_t t = 0; t < nch && st == TS_OK; t++) {
    size_t off = t * L, len = min_sz(L, m - off);
    char *acr = across + (t % 2) * (size_t)s * L * es;
    if (t + 1 < nch && (st = ag_post(&p, across, L, t + 1))) break;
    if ((st = pipe_wait(&p, (int)(t % 2)))) break;
    memcpy(acr + (size_t)q * len * es, (const char *)op->send + off * es, len * es);
    if ((st = step(c, c->intra, op, TS_COLL_ALL_GATHER, acr, all, (size_t)s * len))) break;
    for (int i = 0; i < k; i++)
      for (int r = 0; r < s; r++)
        memcpy(out + ((size_t)(r * k + i) * m + off) * es, all + ((size_t)i * (size_t)s + (size_t)r) * len * es,
               len * es);
  }
  return pipe_close(&p, st);
}

/* ---- reduce-scatter ----------------------------------------------------------- */

/* Chunk t of every output block, [t*L, t*L + len): packed (packed[i'][q'] =
 * the chunk of rank q'*k+i''s block), reduce-scattered inside into
 * part[t%2] (slot q' = this slice's sum for rank q'*k+i) and sent to the
 * slices that own them; one round later the s sums of this rank's chunk
 * are reduced in slice order. The exchange of chunk t is in flight while
 * chunk t+1 is reduce-scattered inside. */
ts_status_t coll_hier_reduce_scatter(ts_coll_comm_t *c, coll_op_t *op) {
  int s = c->inter->size, k = c->intra->size, q = c->inter->rank;
  size_t es = op->esize, m = op->count, nch;
  if (m == 0) return TS_OK;
  size_t L = chunking(m, (size_t)c->size * es, 1, &nch), sl = (size_t)s * L * es;
  char *packed = coll_scratch(c, 0, (size_t)k * sl), *part = coll_scratch(c, 1, 2 * sl),
       *got = coll_scratch(c, 2, 2 * sl);
  if (!packed || !part || !got) return TS_ERR_NOMEM;
  pipe_t p;
  TS_CHECK(pipe_open(&p, c, op, L));
  const char *in = op->send;
  ts_status_t st = TS_OK;
  for (size_t t = 0; t <= nch && st == TS_OK; t++) {
    if (t < nch) {
      size_t off = t * L, len = min_sz(L, m - off);
      char *pt = part + (t % 2) * sl, *gt = got + (t % 2) * sl;
      for (int i = 0; i < k; i++)
        for (int r = 0; r < s; r++)
          memcpy(packed + ((size_t)i * (size_t)s + (size_t)r) * len * es, in + ((size_t)(r * k + i) * m + off) * es,
                 len * es);
      if ((st = step(c, c->intra, op, TS_COLL_REDUCE_SCATTER, packed, pt, (size_t)s * len))) break;
      for (int r = 0; r < s; r++) p.to[r] = (xpeer_t){pt + (size_t)r * len * es, gt + (size_t)r * len * es, len, len};
      if ((st = pipe_post(&p, (int)(t % 2), (uint32_t)t))) break;
    }
    if (t >= 1) {
      size_t u = t - 1, off = u * L, len = min_sz(L, m - off);
      if ((st = pipe_wait(&p, (int)(u % 2)))) break;
      for (int r = 0; r < s; r++) p.opnd[r] = (r == q ? part : got) + (u % 2) * sl + (size_t)r * len * es;
      reduce_slices(op, (char *)op->recv + off * es, p.opnd, s, len);
    }
  }
  return pipe_close(&p, st);
}
