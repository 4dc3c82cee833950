/* Direct single-copy collectives for ranks that share one host. Every rank
 * publishes its buffer addresses in its slot, all meet at a flag barrier,
 * each rank moves its share straight between the ranks' buffers, and a
 * second flag barrier ends the operation (nobody reuses a buffer a peer may
 * still touch). How a peer's memory is reached:
 *   same space (threads): plain loads and stores;
 *   eager (processes, small): the sender stages its input in its eager area of
 *     the node segment, which every process maps; peers read it directly;
 *   CMA (processes, large): process_vm_readv/writev, one kernel copy.
 * All-reduce: rank r reduces slice r of every input (chunks that stay in
 * cache) and pushes the result into every rank's output: each byte is read
 * once and written once per rank, the memory-traffic floor of
 * shared/reference/collectives.md §6b. */
#include "coll_internal.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (128 * 1024)
#define GEN_SHIFT 40
#define PHASE_MASK ((1ull << GEN_SHIFT) - 1)

/* ---- threads: shared slot arrays, one per (context, first member) ---- */

typedef struct dreg {
  struct dreg *next;
  uint32_t ctx;
  int leader, refs;
  dslot_t *slots;
} dreg_t;

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
  if (!d->slot || !d->eager || !d->pid) goto nomem;
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
    size_t row = sizeof(dslot_t) + COLL_EAGER_BYTES;
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
  ts_free(d->slot);
  ts_free(d->eager);
  ts_free(d->pid);
  ts_free(d);
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
  ts_free(d->slot);
  ts_free(d->eager);
  ts_free(d->pid);
  ts_free(d);
  c->direct = NULL;
}

/* Bytes each rank stages for an eager operation. */
static size_t staged_bytes(const ts_coll_comm_t *c, const coll_op_t *op) {
  size_t b = op->count * op->esize;
  switch (op->kind) {
  case TS_COLL_REDUCE_SCATTER:
  case TS_COLL_ALL_TO_ALL: return b * (size_t)c->size;
  default: return b;
  }
}

bool coll_direct_eager_fits(const ts_coll_comm_t *c, const coll_op_t *op) {
  return staged_bytes(c, op) <= COLL_EAGER_BYTES;
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
      if ((spins & 7) == 0 || spins > 64) TS_CHECK(coll_check(c, op));
      coll_backoff(spins);
    }
  }
  return TS_OK;
}

typedef enum { M_SAME, M_EAGER, M_CMA } dmode_t;

/* Reads n bytes at offset `off` of peer p's published send buffer (or eager
 * copy) into dst, or returns a pointer to read in place (same space/eager). */
static ts_status_t peer_src(ts_coll_comm_t *c, dmode_t m, int p, size_t off, size_t n, void *tmp,
                            const void **out) {
  direct_t *d = c->direct;
  if (p == c->rank && m != M_EAGER) {
    *out = (const char *)(uintptr_t)d->slot[p]->send + off;
    return TS_OK;
  }
  switch (m) {
  case M_SAME: *out = (const char *)(uintptr_t)d->slot[p]->send + off; return TS_OK;
  case M_EAGER: *out = d->eager[p] + off; return TS_OK;
  case M_CMA:
    TS_CHECK(coll_cma_read(d->pid[p], (const char *)(uintptr_t)d->slot[p]->send + off, tmp, n));
    *out = tmp;
    return TS_OK;
  }
  return TS_ERR_INTERNAL;
}

/* Copies n bytes of peer p's send (+off) to dst. */
static ts_status_t peer_copy(ts_coll_comm_t *c, dmode_t m, int p, size_t off, void *dst, size_t n) {
  direct_t *d = c->direct;
  if (n == 0) return TS_OK;
  if (m == M_CMA && p != c->rank)
    return coll_cma_read(d->pid[p], (const char *)(uintptr_t)d->slot[p]->send + off, dst, n);
  const void *src;
  TS_CHECK(peer_src(c, m, p, off, n, NULL, &src));
  if (src != dst) memmove(dst, src, n);
  return TS_OK;
}

/* Writes n bytes into peer p's published receive buffer (+off). */
static ts_status_t peer_write(ts_coll_comm_t *c, dmode_t m, int p, size_t off, const void *src, size_t n) {
  direct_t *d = c->direct;
  char *dst = (char *)(uintptr_t)d->slot[p]->recv + off;
  if (m == M_CMA && p != c->rank) return coll_cma_write(d->pid[p], dst, src, n);
  if (dst != src) memcpy(dst, src, n);
  return TS_OK;
}

/* Reduces [off, off+len) bytes of every member's send into acc (rank order,
 * so every slice is computed the same way on every rank). */
static ts_status_t reduce_slice(ts_coll_comm_t *c, coll_op_t *op, dmode_t m, size_t off, size_t len, char *acc,
                                char *tmp) {
  size_t es = op->esize;
  for (int p = 0; p < c->size; p++) {
    const void *src;
    TS_CHECK(peer_src(c, m, p, off, len, tmp, &src));
    if (p == 0) {
      if (src != acc) memcpy(acc, src, len);
    } else {
      coll_reduce(acc, src, len / es, op->type, op->redop);
    }
  }
  return TS_OK;
}

static ts_status_t direct_allreduce(ts_coll_comm_t *c, coll_op_t *op, dmode_t m) {
  size_t es = op->esize, bytes = op->count * es;
  int n = c->size, r = c->rank;
  if (m == M_EAGER) {
    /* small: every rank reduces the whole vector from the staged copies */
    for (int p = 0; p < n; p++) {
      const char *src = c->direct->eager[p];
      if (p == 0) memcpy(op->recv, src, bytes);
      else coll_reduce(op->recv, src, op->count, op->type, op->redop);
    }
    return TS_OK;
  }
  size_t lo = (size_t)((unsigned __int128)op->count * (unsigned)r / (unsigned)n) * es;
  size_t hi = (size_t)((unsigned __int128)op->count * (unsigned)(r + 1) / (unsigned)n) * es;
  size_t chunk = CHUNK_BYTES - CHUNK_BYTES % es;
  char *tmp = coll_scratch(c, 1, chunk), *acc = NULL;
  /* out of place: reduce straight into our own output and push from there
   * (still in cache); in place, through scratch (our input is read by the
   * reduction of the same chunk) */
  bool inplace = op->send == op->recv;
  if (inplace) acc = coll_scratch(c, 0, chunk);
  if (!tmp || (inplace && !acc)) return TS_ERR_NOMEM;
  for (size_t off = lo; off < hi; off += chunk) {
    size_t len = hi - off < chunk ? hi - off : chunk;
    char *a = inplace ? acc : (char *)op->recv + off;
    TS_CHECK(reduce_slice(c, op, m, off, len, a, tmp));
    for (int k = inplace ? 0 : 1; k < n; k++) TS_CHECK(peer_write(c, m, (r + k) % n, off, a, len));
  }
  (void)bytes;
  return TS_OK;
}

static ts_status_t direct_reduce_scatter(ts_coll_comm_t *c, coll_op_t *op, dmode_t m) {
  size_t es = op->esize, blk = op->count * es, base = (size_t)c->rank * blk;
  size_t chunk = m == M_EAGER ? blk : CHUNK_BYTES - CHUNK_BYTES % es;
  char *tmp = coll_scratch(c, 1, chunk ? chunk : 1);
  if (!tmp) return TS_ERR_NOMEM;
  for (size_t off = 0; off < blk; off += chunk) {
    size_t len = blk - off < chunk ? blk - off : chunk;
    TS_CHECK(reduce_slice(c, op, m, base + off, len, (char *)op->recv + off, tmp));
  }
  return TS_OK;
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

ts_status_t coll_direct_run(ts_coll_comm_t *c, coll_op_t *op) {
  direct_t *d = c->direct;
  int n = c->size, r = c->rank;
  size_t es = op->esize, bytes = op->count * es;
  dmode_t m = d->same_space ? M_SAME : coll_direct_eager_fits(c, op) ? M_EAGER : M_CMA;
  if (op->kind == TS_COLL_BARRIER) return dsync(c, op);
  /* publish (and stage) */
  d->slot[r]->send = (uint64_t)(uintptr_t)op->send;
  d->slot[r]->recv = (uint64_t)(uintptr_t)op->recv;
  if (m == M_EAGER) {
    size_t staged = staged_bytes(c, op);
    bool stage = op->kind != TS_COLL_BROADCAST || r == op->root;
    if (op->kind == TS_COLL_COLLECTIVE_PERMUTE) stage = permute_is_source(op, r);
    if (stage && staged) memcpy(d->eager[r], op->send, staged);
  }
  TS_CHECK(dsync(c, op));
  ts_status_t st = TS_OK;
  switch (op->kind) {
  case TS_COLL_ALL_REDUCE: st = direct_allreduce(c, op, m); break;
  case TS_COLL_REDUCE_SCATTER: st = direct_reduce_scatter(c, op, m); break;
  case TS_COLL_ALL_GATHER:
    for (int k = 0; k < n && st == TS_OK; k++) {
      int p = (r + k) % n;
      st = peer_copy(c, m, p, 0, (char *)op->recv + (size_t)p * bytes, bytes);
    }
    break;
  case TS_COLL_ALL_TO_ALL:
    for (int k = 0; k < n && st == TS_OK; k++) {
      int p = (r + k) % n;
      st = peer_copy(c, m, p, (size_t)r * bytes, (char *)op->recv + (size_t)p * bytes, bytes);
    }
    break;
  case TS_COLL_COLLECTIVE_PERMUTE: {
    int src = permute_source(op, r);
    if (src < 0) memset(op->recv, 0, bytes);
    else st = peer_copy(c, m, src, 0, op->recv, bytes);
    break;
  }
  case TS_COLL_BROADCAST: st = peer_copy(c, m, op->root, 0, op->recv, bytes); break;
  default: st = TS_ERR_INTERNAL; break;
  }
  if (st) {
    coll_world_abort(c->world, st, true);
    return st;
  }
  return dsync(c, op);
}
