/* The one table that picks an algorithm for an operation: the first row
 * whose kind, path, size range and group shape match wins. Sizes are
 * nccl-tests' S (ts_coll.h records). Thresholds follow the α-β costs of
 * shared/reference/collectives.md §6a: log-depth algorithms while latency
 * dominates, ring/pairwise once bandwidth does; on one host the direct
 * single-copy path wins at every size (§6b), so it comes first. */
#include "coll_internal.h"

#include <string.h>

enum {
  NEED_DIRECT = 1, /* the communicator has a direct (same-host) path */
  NEED_POW2 = 2,   /* the group size is a power of two */
};

typedef struct {
  ts_coll_kind_t kind;
  unsigned needs;
  uint64_t max_bytes; /* inclusive upper bound of S; 0: no bound */
  coll_algo_t algo;
} row_t;

#define KIB 1024ull
#define ALGO(name, fn) {name, fn}

static const row_t table[] = {
    {TS_COLL_ALL_REDUCE, NEED_DIRECT, 0, ALGO("direct", coll_direct_run)},
    {TS_COLL_ALL_REDUCE, 0, 16 * KIB, ALGO("recursive-doubling", coll_rd_allreduce)},
    {TS_COLL_ALL_REDUCE, 0, 0, ALGO("ring", coll_ring_allreduce)},

    {TS_COLL_ALL_GATHER, NEED_DIRECT, 0, ALGO("direct", coll_direct_run)},
    {TS_COLL_ALL_GATHER, NEED_POW2, 64 * KIB, ALGO("recursive-doubling", coll_rd_allgather)},
    {TS_COLL_ALL_GATHER, 0, 0, ALGO("ring", coll_ring_allgather)},

    {TS_COLL_REDUCE_SCATTER, NEED_DIRECT, 0, ALGO("direct", coll_direct_run)},
    {TS_COLL_REDUCE_SCATTER, 0, 0, ALGO("ring", coll_ring_reduce_scatter)},

    {TS_COLL_ALL_TO_ALL, NEED_DIRECT, 0, ALGO("direct", coll_direct_run)},
    {TS_COLL_ALL_TO_ALL, 0, 0, ALGO("pairwise", coll_pairwise_alltoall)},

    {TS_COLL_COLLECTIVE_PERMUTE, NEED_DIRECT, 0, ALGO("direct", coll_direct_run)},
    {TS_COLL_COLLECTIVE_PERMUTE, 0, 0, ALGO("p2p", coll_p2p_permute)},

    {TS_COLL_BROADCAST, NEED_DIRECT, 0, ALGO("direct", coll_direct_run)},
    {TS_COLL_BROADCAST, 0, 0, ALGO("binomial", coll_binomial_broadcast)},

    {TS_COLL_SEND, 0, 0, ALGO("p2p", coll_p2p_send)},
    {TS_COLL_RECV, 0, 0, ALGO("p2p", coll_p2p_recv)},

    {TS_COLL_BARRIER, NEED_DIRECT, 0, ALGO("direct", coll_direct_run)},
    {TS_COLL_BARRIER, 0, 0, ALGO("dissemination", coll_dissemination_barrier)},
};

static bool row_fits(const row_t *row, const ts_coll_comm_t *c, const coll_op_t *op, bool check_size) {
  if (row->kind != op->kind) return false;
  if ((row->needs & NEED_DIRECT) && !(c->direct && c->direct_on)) return false;
  if ((row->needs & NEED_POW2) && (c->size & (c->size - 1))) return false;
  if (check_size && row->max_bytes && coll_op_bytes(c, op) > row->max_bytes) return false;
  return true;
}

coll_algo_t coll_choose(ts_coll_comm_t *c, const coll_op_t *op) {
  size_t nrows = sizeof table / sizeof table[0];
  if (c->forced)
    for (size_t i = 0; i < nrows; i++)
      if (strcmp(table[i].algo.name, c->forced) == 0 && row_fits(&table[i], c, op, false)) return table[i].algo;
  for (size_t i = 0; i < nrows; i++)
    if (row_fits(&table[i], c, op, true)) return table[i].algo;
  return (coll_algo_t){"none", NULL}; /* unreachable: every kind has an unbounded row */
}

bool coll_algo_known(const char *name) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].algo.name, name) == 0) return true;
  return false;
}
