/* Direct single-copy collectives for ranks that share one host. Every rank
 * publishes its buffer addresses in its slot, all meet at a flag barrier,
 * each rank moves its share straight between the ranks' buffers, and a
 * second flag barrier ends the operation (nobody reuses a buffer a peer may
 * still touch). A rank that leaves early (the world was aborted) first waits
 * until no peer is still touching its buffers (body_enter, dleave).
 * How a peer's memory is reached:
 *   same space (threads): plain loads and stores;
 *   eager (processes, small): the sender stages its input in one of its two
 *     eager areas of the node segment, which every process maps; peers read
 *     it there. Nobody touches a peer's own buffers, so one barrier does: the
 *     next eager operation stages into the other area, and the one after
 *     that only after every peer passed the barrier of the one in between;
 *   mapped (processes, buffers from ts_coll_alloc): peers' regions are mapped
 *     here, plain loads and stores;
 *   CMA (processes, other buffers): process_vm_readv/writev, one kernel copy.
 * Which of these runs, and the sizes they switch at (streaming stores,
 * staging), come from the table (table.c, op->tune).
 * All-reduce: rank r reduces slice r of every input (chunks that stay in
 * cache) and pushes the result into every rank's output: each byte is read
 * once and written once per rank, the memory-traffic floor of
 * shared/reference/collectives.md §6b. */
#include "coll_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (64 * 1024)
#define GEN_SHIFT 40
#define PHASE_MASK ((1ull << GEN_SHIFT) - 1)

/* ---- threads: shared slot arrays, one per (context, first member) ---- */

typedef struct dreg {
  struct dreg *next;
  uint32_t ctx;
  int leader, refs;
  dslot_t *slots;
} dreg_t;

static void direct_free(direct_t *d) {
  ts_free(d->mkey);
  ts_free(d->mbase);
  ts_free(d->mbytes);
  ts_free(d->slot);
  ts_free(d->eager);
  ts_free(d->pid);
  ts_free(d->src);
  ts_free(d->dst);
  ts_free(d->pin);
  ts_free(d);
}

ts_status_t coll_direct_init(ts_coll_comm_t *c) {
  coll_world_t *w = c->world;
  if (!w->same_space && !(w->node && c->dslot >= 0)) return TS_OK;
  int n = c->size;
  direct_t *d = ts_calloc(1, sizeof *d);
  if (!d) return TS_ERR_NOMEM;
  d->n = n;
  d->slot = ts_calloc((size_t)n, sizeof *d->slot);
  d->eager = ts_calloc((size_t)n, sizeof *d->eager);
  d->pid = ts_calloc((size_t)n, sizeof *d->pid);
  d->src = ts_calloc((size_t)n, sizeof *d->src);
  d->dst = ts_calloc((size_t)n, sizeof *d->dst);
  d->pin = ts_calloc(2 * (size_t)n, sizeof *d->pin);
  d->mkey = ts_calloc(2 * (size_t)n, sizeof *d->mkey);
  d->mbase = ts_calloc(2 * (size_t)n, sizeof *d->mbase);
  d->mbytes = ts_calloc(2 * (size_t)n, sizeof *d->mbytes);
  if (!d->slot || !d->eager || !d->pid || !d->src || !d->dst || !d->pin || !d->mkey || !d->mbase || !d->mbytes)
    goto nomem;
  for (int i = 0; i < 2 * n; i++) d->pin[i] = -1;
  d->same_space = w->same_space;
  d->gen = (uint64_t)c->ctx + 1;
  if (w->same_space) {
    pthread_mutex_lock(&w->lock);
    dreg_t *e = w->dreg;
    while (e && !(e->ctx == c->ctx && e->leader == c->wranks[0])) e = e->next;
    if (!e) {
      e = ts_calloc(1, sizeof *e);
      void *mem = NULL;
      if (!e || posix_memalign(&mem, 64, (size_t)n * sizeof(dslot_t)) != 0) {
        pthread_mutex_unlock(&w->lock);
        ts_free(e);
        goto nomem;
      }
      memset(mem, 0, (size_t)n * sizeof(dslot_t));
      e->slots = mem;
      e->ctx = c->ctx;
      e->leader = c->wranks[0];
      e->next = w->dreg;
      w->dreg = e;
    }
    e->refs++;
    pthread_mutex_unlock(&w->lock);
    d->shared = e;
    for (int i = 0; i < n; i++) d->slot[i] = &e->slots[i];
  } else {
    coll_node_t *nd = w->node;
    size_t row = sizeof(dslot_t) + 2 * (size_t)COLL_EAGER_BYTES;
    char *base = (char *)nd->base + 64;
    for (int i = 0; i < n; i++) {
      char *p = base + ((size_t)c->dslot * (size_t)nd->nranks + (size_t)c->wranks[i]) * row;
      d->slot[i] = (dslot_t *)p;
      d->eager[i] = p + sizeof(dslot_t);
      d->pid[i] = nd->pids[c->wranks[i]];
    }
  }
  atomic_store_explicit(&d->slot[c->rank]->flag, d->gen << GEN_SHIFT, memory_order_release);
  c->direct = d;
  return TS_OK;
nomem:
  direct_free(d);
  return TS_ERR_NOMEM;
}

void coll_direct_fini(ts_coll_comm_t *c) {
  direct_t *d = c->direct;
  if (!d) return;
  if (d->shared) {
    coll_world_t *w = c->world;
    pthread_mutex_lock(&w->lock);
    dreg_t *e = d->shared, **pp = (dreg_t **)&w->dreg;
    if (--e->refs == 0) {
      while (*pp != e) pp = &(*pp)->next;
      *pp = e->next;
      free(e->slots);
      ts_free(e);
    }
    pthread_mutex_unlock(&w->lock);
  }
  if (c->world->node)
    for (int i = 0; i < 2 * d->n; i++) coll_region_unpin(c->world->node, d->pin[i]);
  direct_free(d);
  c->direct = NULL;
}

/* Bytes each rank stages for an eager operation (its whole input). */
static size_t in_bytes(const ts_coll_comm_t *c, const coll_op_t *op) {
  size_t b = op->count * op->esize;
  switch (op->kind) {
  case TS_COLL_REDUCE_SCATTER:
  case TS_COLL_ALL_TO_ALL: return b * (size_t)c->size;
  default: return b;
  }
}

static size_t out_bytes(const ts_coll_comm_t *c, const coll_op_t *op) {
  size_t b = op->count * op->esize;
  switch (op->kind) {
  case TS_COLL_ALL_GATHER:
  case TS_COLL_ALL_TO_ALL: return b * (size_t)c->size;
  default: return b;
  }
}

bool coll_direct_eager_fits(const ts_coll_comm_t *c, const coll_op_t *op) {
  return in_bytes(c, op) <= COLL_EAGER_BYTES;
}

/* Flag barrier: publish phase+1, wait until every member reached it. */
static ts_status_t dsync(ts_coll_comm_t *c, coll_op_t *op) {
  direct_t *d = c->direct;
  uint64_t phase = ++d->phase, want = (d->gen << GEN_SHIFT) | phase;
  atomic_store_explicit(&d->slot[c->rank]->flag, want, memory_order_release);
  for (int k = 1; k < d->n; k++) {
    int p = (c->rank + k) % d->n;
    for (unsigned spins = 0;; spins++) {
      uint64_t f = atomic_load_explicit(&d->slot[p]->flag, memory_order_acquire);
      if ((f >> GEN_SHIFT) == d->gen && (f & PHASE_MASK) >= phase) break;
      if (spins > 256) coll_note_waiting(c, c->wranks[p]);
      if (spins > 64 && (spins & 15) == 0) TS_CHECK(coll_check(c, op));
      else if ((spins & 7) == 0 || spins > 64) TS_CHECK(coll_check_abort(c));
      coll_backoff(spins);
    }
  }
  return TS_OK;
}

/* A rank marks itself busy while it loads and stores its peers' buffers,
 * and only starts when the world is not aborted. The fence pairs with the one
 * in dleave (store busy, then load aborted; against: aborted, then load
 * busy): either the rank sees the abort and touches nothing, or the rank
 * leaving sees it busy and waits. */
static ts_status_t body_enter(ts_coll_comm_t *c) {
  dslot_t *me = c->direct->slot[c->rank];
  atomic_store_explicit(&me->busy, 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_seq_cst);
  ts_status_t st = coll_check_abort(c);
  if (st) atomic_store_explicit(&me->busy, 0, memory_order_release);
  return st;
}

static void body_exit(ts_coll_comm_t *c) {
  atomic_store_explicit(&c->direct->slot[c->rank]->busy, 0, memory_order_release);
}

/* Seconds a rank leaving an aborted operation waits for busy peers: they
 * only copy and reduce memory, never wait on anyone, so they finish. */
#define LEAVE_WAIT_S 10.0

/* Leaves an operation with error st (the world is aborted by then: every
 * error path aborts it) after our buffers were published: peers that
 * started moving data may still load and store them, and our caller may
 * free them once we return. Waits until no peer is busy; a peer process
 * that died is not waited for. */
static ts_status_t dleave(ts_coll_comm_t *c, ts_status_t st) {
  direct_t *d = c->direct;
  atomic_thread_fence(memory_order_seq_cst);
  double until = ts_coll_now() + LEAVE_WAIT_S;
  for (int p = 0; p < d->n; p++) {
    if (p == c->rank) continue;
    for (unsigned spins = 0; atomic_load_explicit(&d->slot[p]->busy, memory_order_acquire); spins++) {
      if (!d->same_space && kill(d->pid[p], 0) != 0 && errno == ESRCH) break;
      if (ts_coll_now() > until) {
        ts_log(TS_LOG_WARN, "collectives: rank %d still moves data of an aborted collective after %.0f s; leaving",
               c->wranks[p], LEAVE_WAIT_S);
        break;
      }
      coll_backoff(spins);
    }
  }
  return st;
}

static int permute_source(const coll_op_t *op, int r) {
  for (int i = 0; i < op->npairs; i++)
    if (op->pairs[i][1] == r) return (int)op->pairs[i][0];
  return -1;
}

static bool permute_is_source(const coll_op_t *op, int r) {
  for (int i = 0; i < op->npairs; i++)
    if (op->pairs[i][0] == r) return true;
  return false;
}

/* ---- direct: members' own buffers, mapped or through CMA ---- */

/* Publishes the regions our buffers lie in (process worlds). */
static void publish(ts_coll_comm_t *c, coll_op_t *op, bool regions) {
  direct_t *d = c->direct;
  dslot_t *me = d->slot[c->rank];
  me->send = (uint64_t)(uintptr_t)op->send;
  me->recv = (uint64_t)(uintptr_t)op->recv;
  me->sreg = me->rreg = 0;
  coll_node_t *nd = c->world->node;
  if (d->same_space || !nd || !regions) return;
  size_t ib = in_bytes(c, op), ob = out_bytes(c, op);
  if (op->send && ib && !coll_region_find(nd, op->send, ib, &me->sreg, &me->soff)) me->sreg = 0;
  if (op->recv && ob && !coll_region_find(nd, op->recv, ob, &me->rreg, &me->roff)) me->rreg = 0;
}

/* Member p's region `key` (+off, need bytes) mapped here, or NULL. */
static char *map_peer(ts_coll_comm_t *c, int p, int which, uint64_t key, uint64_t off, size_t need) {
  direct_t *d = c->direct;
  int i = 2 * p + which;
  if (!key) return NULL;
  if (d->mkey[i] != key) {
    coll_node_t *nd = c->world->node;
    coll_region_unpin(nd, d->pin[i]);
    d->mkey[i] = 0;
    d->pin[i] = coll_region_map(nd, c->wranks[p], key, &d->mbase[i], &d->mbytes[i]);
    if (d->pin[i] < 0) return NULL;
    d->mkey[i] = key;
  }
  if (off > d->mbytes[i] || need > d->mbytes[i] - off) return NULL; /* cannot happen: the owner checked */
  return d->mbase[i] + off;
}

/* Fills d->src/d->dst with what this rank can load and store directly. */
static void resolve(ts_coll_comm_t *c, coll_op_t *op) {
  direct_t *d = c->direct;
  size_t ib = in_bytes(c, op), ob = out_bytes(c, op);
  for (int p = 0; p < d->n; p++) {
    dslot_t *s = d->slot[p];
    if (p == c->rank) {
      d->src[p] = op->send;
      d->dst[p] = op->recv;
    } else if (d->same_space) {
      d->src[p] = (const char *)(uintptr_t)s->send;
      d->dst[p] = (char *)(uintptr_t)s->recv;
    } else {
      d->src[p] = map_peer(c, p, 0, s->sreg, s->soff, ib);
      d->dst[p] = map_peer(c, p, 1, s->rreg, s->roff, ob);
    }
  }
}

/* p's send + off, to read n bytes: in place, or a CMA copy in tmp. */
static ts_status_t src_at(ts_coll_comm_t *c, int p, size_t off, size_t n, void *tmp, const void **out) {
  direct_t *d = c->direct;
  if (d->src[p]) {
    *out = d->src[p] + off;
    return TS_OK;
  }
  TS_CHECK(coll_cma_read(d->pid[p], (const char *)(uintptr_t)d->slot[p]->send + off, tmp, n));
  *out = tmp;
  return TS_OK;
}

/* Copies n bytes of p's send (+off) to dst. */
static ts_status_t copy_in(ts_coll_comm_t *c, int p, size_t off, void *dst, size_t n, bool nt) {
  direct_t *d = c->direct;
  if (n == 0) return TS_OK;
  if (!d->src[p]) return coll_cma_read(d->pid[p], (const char *)(uintptr_t)d->slot[p]->send + off, dst, n);
  if (d->src[p] + off != dst) coll_copy(dst, d->src[p] + off, n, nt);
  return TS_OK;
}

/* Writes n bytes into p's recv (+off). */
static ts_status_t copy_out(ts_coll_comm_t *c, int p, size_t off, const void *src, size_t n, bool nt) {
  direct_t *d = c->direct;
  if (!d->dst[p]) return coll_cma_write(d->pid[p], (char *)(uintptr_t)d->slot[p]->recv + off, src, n);
  if (d->dst[p] + off != src) coll_copy(d->dst[p] + off, src, n, nt);
  return TS_OK;
}

/* Reduces [off, off+len) bytes of every member's send into acc, in rank
 * order (every slice is computed the same way on every rank). */
static ts_status_t reduce_slice(ts_coll_comm_t *c, coll_op_t *op, size_t off, size_t len, char *acc, char *tmp) {
  direct_t *d = c->direct;
  size_t es = op->esize, cnt = len / es;
  const void *a, *b;
  int p = 1;
  TS_CHECK(src_at(c, 0, off, len, tmp, &a));
  if (c->size >= 2 && (d->src[0] || d->src[1])) {
    TS_CHECK(src_at(c, 1, off, len, tmp, &b));
    coll_reduce3(acc, a, b, cnt, op->type, op->redop);
    p = 2;
  } else if (a != acc) {
    memcpy(acc, a, len);
  }
  for (; p < c->size; p++) {
    TS_CHECK(src_at(c, p, off, len, tmp, &b));
    coll_reduce(acc, b, cnt, op->type, op->redop);
  }
  return TS_OK;
}

/* Rank r reduces slice r of every input, chunk by chunk (in cache), and
 * pushes each chunk into every rank's output. With streaming stores the
 * chunk is reduced in scratch and streamed to all outputs, ours included. */
static ts_status_t direct_allreduce(ts_coll_comm_t *c, coll_op_t *op, bool nt) {
  size_t es = op->esize;
  int n = c->size, r = c->rank;
  size_t lo = (size_t)((unsigned __int128)op->count * (unsigned)r / (unsigned)n) * es;
  size_t hi = (size_t)((unsigned __int128)op->count * (unsigned)(r + 1) / (unsigned)n) * es;
  size_t chunk = CHUNK_BYTES - CHUNK_BYTES % es;
  char *tmp = coll_scratch(c, 1, chunk), *acc = NULL;
  /* in place, our input is read by the reduction of the same chunk */
  bool via = op->send == op->recv || nt;
  if (via) acc = coll_scratch(c, 0, chunk);
  if (!tmp || (via && !acc)) return TS_ERR_NOMEM;
  /* two f32 inputs summed straight into every (mapped) output: one pass */
  direct_t *d = c->direct;
  bool fused = nt && n == 2 && op->type == TS_F32 && op->redop == TS_COLL_SUM && d->src[0] && d->src[1] &&
               d->dst[0] && d->dst[1];
  for (size_t off = lo; off < hi; off += chunk) {
    size_t len = hi - off < chunk ? hi - off : chunk;
    if (fused) {
      char *outs[2] = {d->dst[0] + off, d->dst[1] + off};
      if (coll_sum_f32_stream(outs, 2, (const float *)(const void *)(d->src[0] + off),
                              (const float *)(const void *)(d->src[1] + off), len / es))
        continue;
      fused = false;
    }
    char *a = via ? acc : (char *)op->recv + off;
    TS_CHECK(reduce_slice(c, op, off, len, a, tmp));
    for (int k = via ? 0 : 1; k < n; k++) TS_CHECK(copy_out(c, (r + k) % n, off, a, len, nt));
  }
  return TS_OK;
}

static ts_status_t direct_reduce_scatter(ts_coll_comm_t *c, coll_op_t *op, bool nt) {
  size_t es = op->esize, blk = op->count * es, base = (size_t)c->rank * blk;
  size_t chunk = CHUNK_BYTES - CHUNK_BYTES % es;
  char *tmp = coll_scratch(c, 1, chunk), *acc = nt ? coll_scratch(c, 0, chunk) : NULL;
  if (!tmp || (nt && !acc)) return TS_ERR_NOMEM;
  for (size_t off = 0; off < blk; off += chunk) {
    size_t len = blk - off < chunk ? blk - off : chunk;
    char *out = (char *)op->recv + off;
    TS_CHECK(reduce_slice(c, op, base + off, len, nt ? acc : out, tmp));
    if (nt) coll_copy(out, acc, len, true);
  }
  return TS_OK;
}

/* ---- eager-sized operations of process worlds ---- */

/* How an eager rank left its input (dslot_t.how). */
#define HOW_REG 1
#define HOW_STAGED 2

/* Input of member p for an eager-style run: its staged copy, its mapped
 * buffer, or a CMA copy in tmp. */
static ts_status_t eager_src(ts_coll_comm_t *c, int p, const uint8_t *how, size_t half, size_t n, void *tmp,
                             const char **out) {
  direct_t *d = c->direct;
  if (how[p] & HOW_STAGED) *out = d->eager[p] + half;
  else if (d->src[p]) *out = d->src[p];
  else {
    TS_CHECK(coll_cma_read(d->pid[p], (const char *)(uintptr_t)d->slot[p]->send, tmp, n));
    *out = tmp;
  }
  return TS_OK;
}

/* Every rank builds its own output from every input (in rank order for
 * reductions: the same bits everywhere); nobody writes a peer's memory. */
static ts_status_t eager_run(ts_coll_comm_t *c, coll_op_t *op, const uint8_t *how, size_t half) {
  int n = c->size, r = c->rank;
  size_t es = op->esize, bytes = op->count * es, ib = in_bytes(c, op);
  char *out = op->recv, *tmp = NULL;
  for (int p = 0; p < n && !tmp; p++)
    if (!(how[p] & HOW_STAGED) && p != r && !c->direct->src[p]) tmp = coll_scratch(c, 1, ib);
  const char *a, *b;
  switch (op->kind) {
  case TS_COLL_ALL_REDUCE:
  case TS_COLL_REDUCE_SCATTER: {
    size_t at = op->kind == TS_COLL_REDUCE_SCATTER ? (size_t)r * bytes : 0;
    TS_CHECK(eager_src(c, 0, how, half, ib, tmp, &a));
    if (n == 1 || a == tmp) {
      memcpy(out, a + at, bytes);
    } else {
      TS_CHECK(eager_src(c, 1, how, half, ib, tmp, &b));
      coll_reduce3(out, a + at, b + at, op->count, op->type, op->redop);
    }
    for (int p = n == 1 || a == tmp ? 1 : 2; p < n; p++) {
      TS_CHECK(eager_src(c, p, how, half, ib, tmp, &b));
      coll_reduce(out, b + at, op->count, op->type, op->redop);
    }
    return TS_OK;
  }
  case TS_COLL_ALL_GATHER:
    for (int p = 0; p < n; p++) {
      TS_CHECK(eager_src(c, p, how, half, ib, tmp, &a));
      if (out + (size_t)p * bytes != a) memcpy(out + (size_t)p * bytes, a, bytes); /* send may be our block */
    }
    return TS_OK;
  case TS_COLL_ALL_TO_ALL:
    for (int p = 0; p < n; p++) {
      TS_CHECK(eager_src(c, p, how, half, ib, tmp, &a));
      memcpy(out + (size_t)p * bytes, a + (size_t)r * bytes, bytes);
    }
    return TS_OK;
  case TS_COLL_COLLECTIVE_PERMUTE: {
    int src = permute_source(op, r);
    if (src < 0) {
      memset(out, 0, bytes);
      return TS_OK;
    }
    TS_CHECK(eager_src(c, src, how, half, ib, tmp, &a));
    memcpy(out, a, bytes);
    return TS_OK;
  }
  case TS_COLL_BROADCAST:
    TS_CHECK(eager_src(c, op->root, how, half, ib, tmp, &a));
    memcpy(out, a, bytes);
    return TS_OK;
  default: return TS_ERR_INTERNAL;
  }
}

/* Whether some rank whose input others read left it in its own buffer
 * (then nobody may leave before everyone has read: a second barrier). */
static bool eager_reads_buffers(const ts_coll_comm_t *c, const coll_op_t *op, const uint8_t *how) {
  for (int p = 0; p < c->size; p++) {
    bool read = true;
    if (op->kind == TS_COLL_BROADCAST) read = p == op->root;
    if (op->kind == TS_COLL_COLLECTIVE_PERMUTE) read = permute_is_source(op, p);
    if (read && !(how[p] & HOW_STAGED)) return true;
  }
  return false;
}

/* The single-copy algorithms proper, once every member has published its
 * buffers and passed the barrier, and body_enter let us start. */
static ts_status_t direct_body(ts_coll_comm_t *c, coll_op_t *op) {
  int n = c->size, r = c->rank;
  size_t bytes = op->count * op->esize;
  resolve(c, op);
  bool nt = coll_op_bytes(c, op) >= op->tune.nt_from;
  char *out = op->recv;
  ts_status_t st = TS_OK;
  switch (op->kind) {
  case TS_COLL_ALL_REDUCE: st = direct_allreduce(c, op, nt); break;
  case TS_COLL_REDUCE_SCATTER: st = direct_reduce_scatter(c, op, nt); break;
  case TS_COLL_ALL_GATHER:
    for (int k = 0; k < n && st == TS_OK; k++) {
      int p = (r + k) % n;
      st = copy_in(c, p, 0, out + (size_t)p * bytes, bytes, nt);
    }
    break;
  case TS_COLL_ALL_TO_ALL:
    for (int k = 0; k < n && st == TS_OK; k++) {
      int p = (r + k) % n;
      st = copy_in(c, p, (size_t)r * bytes, out + (size_t)p * bytes, bytes, nt);
    }
    break;
  case TS_COLL_COLLECTIVE_PERMUTE: {
    int src = permute_source(op, r);
    if (src < 0) memset(out, 0, bytes);
    else st = copy_in(c, src, 0, out, bytes, nt);
    break;
  }
  case TS_COLL_BROADCAST: st = copy_in(c, op->root, 0, out, bytes, nt); break;
  default: st = TS_ERR_INTERNAL; break;
  }
  if (nt) coll_store_fence(); /* streamed stores reach memory before peers hear we are done */
  body_exit(c);
  if (st) coll_world_abort(c->world, st, true);
  else st = dsync(c, op);
  return st ? dleave(c, st) : TS_OK;
}

ts_status_t coll_direct_barrier(ts_coll_comm_t *c, coll_op_t *op) { return dsync(c, op); }

/* Single copy between the members' own buffers (mapped, same space or CMA). */
ts_status_t coll_direct_run(ts_coll_comm_t *c, coll_op_t *op) {
  publish(c, op, true);
  ts_status_t st = dsync(c, op);
  if (!st) st = body_enter(c);
  return st ? dleave(c, st) : direct_body(c, op);
}

/* Inputs that fit the eager areas (process worlds; the table checks). */
ts_status_t coll_direct_eager(ts_coll_comm_t *c, coll_op_t *op) {
  direct_t *d = c->direct;
  int n = c->size, r = c->rank;
  size_t ib = in_bytes(c, op);
  bool may_read_in_place = ib > op->tune.stage_upto;
  publish(c, op, may_read_in_place);
  /* Stage unless our buffers are in regions; the barrier tells everyone
   * how everyone did it (by phase parity: a rank may be one barrier ahead). */
  dslot_t *me = d->slot[r];
  size_t half = (size_t)(d->eager_ops++ & 1) * COLL_EAGER_BYTES;
  bool mine_reg = may_read_in_place && op->send != op->recv && (!op->send || me->sreg) && (!op->recv || me->rreg);
  bool stage = !mine_reg;
  if (op->kind == TS_COLL_BROADCAST) stage = stage && r == op->root;
  if (op->kind == TS_COLL_COLLECTIVE_PERMUTE) stage = stage && permute_is_source(op, r);
  if (stage && ib) memcpy(d->eager[r] + half, op->send, ib);
  int par = (int)((d->phase + 1) & 1);
  atomic_store_explicit(&me->how[par], (uint8_t)((mine_reg ? HOW_REG : 0) | (stage ? HOW_STAGED : 0)),
                        memory_order_relaxed);
  ts_status_t st = dsync(c, op);
  if (!st) st = body_enter(c);
  if (st) return dleave(c, st);
  uint8_t how[64], *hp = n <= 64 ? how : ts_malloc((size_t)n);
  if (!hp) {
    body_exit(c);
    coll_world_abort(c->world, TS_ERR_NOMEM, true);
    return dleave(c, TS_ERR_NOMEM);
  }
  bool all_reg = true, all_staged = true;
  for (int p = 0; p < n; p++) {
    hp[p] = atomic_load_explicit(&d->slot[p]->how[par], memory_order_relaxed);
    all_reg &= (hp[p] & HOW_REG) != 0;
    all_staged &= (hp[p] & HOW_STAGED) != 0;
  }
  if (all_reg) {
    /* every rank's buffers are mapped: the single-copy algorithms */
    if (hp != how) ts_free(hp);
    return direct_body(c, op);
  }
  if (!all_staged) resolve(c, op);
  st = eager_run(c, op, hp, half);
  body_exit(c);
  bool second = eager_reads_buffers(c, op, hp);
  if (hp != how) ts_free(hp);
  if (st) coll_world_abort(c->world, st, true);
  else if (second) st = dsync(c, op);
  return st ? dleave(c, st) : TS_OK;
}
