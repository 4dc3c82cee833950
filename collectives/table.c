/* The one table that picks an algorithm for an operation, and the size
 * thresholds the algorithms run with. The first row whose kind, needs
 * (path, group shape, slices), backends and size range match wins. Sizes
 * are nccl-tests' S (ts_coll.h records), except where a row's needs say
 * otherwise. Thresholds follow the α-β costs of
 * shared/reference/collectives.md §6a: log-depth algorithms while latency
 * dominates, ring/pairwise once bandwidth does; on one host the direct
 * single-copy path wins at every size (§6b), so it comes first, and a
 * communicator with a slice layout goes hierarchical before anything else
 * (the links between slices are the slow ones).
 *
 * Rows may only differ by facts every member agrees on (kind, S, the group,
 * the direct path, slices, backend) when they pick different algorithms:
 * members must run the same protocol. Facts of one rank alone (how many
 * ranks share its cores) only pick tuning for the same algorithm. */
#include "coll_internal.h"

#include <string.h>

enum {
  NEED_DIRECT = 1,  /* the communicator has a direct (same-host) path */
  NEED_PROCS = 2,   /* ... joining processes (not one address space) */
  NEED_EAGER = 4,   /* ... and each rank's input fits its eager area */
  NEED_POW2 = 8,    /* the group size is a power of two */
  NEED_SLICES = 16, /* the communicator has a layout of more than one slice */
  NEED_OVERSUB = 32 /* more ranks on this host than cores (tuning rows only) */
};

#define BE(b) (1u << (b))
#define ANY_BE 0u
#define KIB 1024ull
#define MIB (1024ull * 1024ull)

typedef struct {
  ts_coll_kind_t kind;
  unsigned needs;
  unsigned backends;  /* BE(...) mask; ANY_BE: every backend */
  uint64_t max_bytes; /* inclusive upper bound of S; 0: no bound */
  coll_algo_t algo;
} row_t;

/* Tuning of the direct paths.
 *   nt_from: outputs from this S on are written with streaming stores
 *     (larger than the caches: they would only evict the inputs).
 *   stage_upto: a rank whose buffers peers could read in place still stages
 *     its input in its eager area up to this many input bytes. Staging costs
 *     a copy; reading in place costs a second barrier (nobody may leave
 *     before every peer has read). Measured at np=2 on a 2-core EPYC VM, the
 *     copy is cheaper only below 512 bytes (4 KiB all-reduce 0.55 us against
 *     1.4 us); with more ranks than cores a barrier costs context switches,
 *     and staging pays up to 4 KiB of input (np=4 on 2 cores: 4 KiB
 *     all-gather 6.4 us staged against 10.6 us, all-to-all 7.4 against 9.1;
 *     at 64 KiB of input staging costs 2-5x). */
#define DIRECT_TUNE {.nt_from = 8 * MIB, .stage_upto = 512}
#define DIRECT_TUNE_OVERSUB {.nt_from = 8 * MIB, .stage_upto = 4 * KIB}
#define NO_TUNE {0, 0}
#define ALGO(name, fn, tune) {name, fn, tune}
/* Every kind's single-copy rows on one host: eager-sized with more ranks
 * than cores, eager-sized, then any size. */
#define DIRECT_ROWS(kind)                                                                              \
  {kind, NEED_DIRECT | NEED_EAGER | NEED_OVERSUB, ANY_BE, 0,                                          \
   ALGO("direct-eager", coll_direct_eager, DIRECT_TUNE_OVERSUB)},                                     \
  {kind, NEED_DIRECT | NEED_EAGER, ANY_BE, 0, ALGO("direct-eager", coll_direct_eager, DIRECT_TUNE)},   \
  {kind, NEED_DIRECT, ANY_BE, 0, ALGO("direct", coll_direct_run, DIRECT_TUNE)}

static const row_t table[] = {
    {TS_COLL_ALL_REDUCE, NEED_SLICES, ANY_BE, 0, ALGO("hierarchical", coll_hier_allreduce, NO_TUNE)},
    DIRECT_ROWS(TS_COLL_ALL_REDUCE),
    {TS_COLL_ALL_REDUCE, 0, ANY_BE, 16 * KIB, ALGO("recursive-doubling", coll_rd_allreduce, NO_TUNE)},
    {TS_COLL_ALL_REDUCE, 0, ANY_BE, 0, ALGO("ring", coll_ring_allreduce, NO_TUNE)},

    {TS_COLL_ALL_GATHER, NEED_SLICES, ANY_BE, 0, ALGO("hierarchical", coll_hier_allgather, NO_TUNE)},
    DIRECT_ROWS(TS_COLL_ALL_GATHER),
    {TS_COLL_ALL_GATHER, NEED_POW2, ANY_BE, 64 * KIB, ALGO("recursive-doubling", coll_rd_allgather, NO_TUNE)},
    {TS_COLL_ALL_GATHER, 0, ANY_BE, 0, ALGO("ring", coll_ring_allgather, NO_TUNE)},

    {TS_COLL_REDUCE_SCATTER, NEED_SLICES, ANY_BE, 0, ALGO("hierarchical", coll_hier_reduce_scatter, NO_TUNE)},
    DIRECT_ROWS(TS_COLL_REDUCE_SCATTER),
    {TS_COLL_REDUCE_SCATTER, 0, ANY_BE, 0, ALGO("ring", coll_ring_reduce_scatter, NO_TUNE)},

    DIRECT_ROWS(TS_COLL_ALL_TO_ALL),
    /* log2(n) rounds of n/2 blocks against n-1 rounds of one: small blocks */
    {TS_COLL_ALL_TO_ALL, 0, ANY_BE, 16 * KIB, ALGO("bruck", coll_bruck_alltoall, NO_TUNE)},
    {TS_COLL_ALL_TO_ALL, 0, ANY_BE, 0, ALGO("pairwise", coll_pairwise_alltoall, NO_TUNE)},

    DIRECT_ROWS(TS_COLL_COLLECTIVE_PERMUTE),
    {TS_COLL_COLLECTIVE_PERMUTE, 0, ANY_BE, 0, ALGO("p2p", coll_p2p_permute, NO_TUNE)},

    DIRECT_ROWS(TS_COLL_BROADCAST),
    {TS_COLL_BROADCAST, 0, ANY_BE, 0, ALGO("binomial", coll_binomial_broadcast, NO_TUNE)},

    {TS_COLL_SEND, 0, ANY_BE, 0, ALGO("p2p", coll_p2p_send, NO_TUNE)},
    {TS_COLL_RECV, 0, ANY_BE, 0, ALGO("p2p", coll_p2p_recv, NO_TUNE)},

    {TS_COLL_BARRIER, NEED_DIRECT, ANY_BE, 0, ALGO("direct", coll_direct_barrier, NO_TUNE)},
    {TS_COLL_BARRIER, 0, ANY_BE, 0, ALGO("dissemination", coll_dissemination_barrier, NO_TUNE)},
};

#define NROWS (sizeof table / sizeof table[0])

static bool row_fits(const row_t *row, const ts_coll_comm_t *c, const coll_op_t *op, bool check_size) {
  if (row->kind != op->kind) return false;
  bool direct = c->direct && c->direct_on;
  if ((row->needs & NEED_DIRECT) && !direct) return false;
  if ((row->needs & (NEED_PROCS | NEED_EAGER)) && (!c->direct || c->direct->same_space)) return false;
  if ((row->needs & NEED_EAGER) && !coll_direct_eager_fits(c, op)) return false;
  if ((row->needs & NEED_POW2) && (c->size & (c->size - 1))) return false;
  if ((row->needs & NEED_SLICES) && c->slices < 2) return false;
  if ((row->needs & NEED_OVERSUB) && !c->world->oversub) return false;
  if (row->backends && !(row->backends & BE(c->be->id))) return false;
  if (check_size && row->max_bytes && coll_op_bytes(c, op) > row->max_bytes) return false;
  return true;
}

/* Test and tuning overrides of the thresholds: TESSERA_COLL_NT_KIB (streaming
 * stores from this S on) and TESSERA_COLL_STAGE_BYTES (staging up to this
 * input size); negative or unset: the table's. Read once. */
static int64_t env_once(_Atomic int64_t *cache, ts_env_t knob, int64_t scale) {
  int64_t x = atomic_load_explicit(cache, memory_order_relaxed);
  if (x == INT64_MIN) {
    int v = ts_env_int(knob, -1);
    x = v < 0 ? -1 : (int64_t)v * scale;
    atomic_store_explicit(cache, x, memory_order_relaxed);
  }
  return x;
}

static coll_algo_t tuned(coll_algo_t a) {
  static _Atomic int64_t nt = INT64_MIN, stage = INT64_MIN;
  int64_t v = env_once(&nt, TS_ENV_COLL_NT_KIB, 1024);
  if (v >= 0) a.tune.nt_from = (uint64_t)v;
  v = env_once(&stage, TS_ENV_COLL_STAGE_BYTES, 1);
  if (v >= 0) a.tune.stage_upto = (uint64_t)v;
  return a;
}

coll_algo_t coll_choose(ts_coll_comm_t *c, const coll_op_t *op) {
  if (c->forced) {
    /* the forced name's best row for this size, else any row of it that
     * the communicator can run */
    for (int pass = 0; pass < 2; pass++)
      for (size_t i = 0; i < NROWS; i++)
        if (strcmp(table[i].algo.name, c->forced) == 0 && row_fits(&table[i], c, op, pass == 0))
          return tuned(table[i].algo);
  }
  for (size_t i = 0; i < NROWS; i++)
    if (row_fits(&table[i], c, op, true)) return tuned(table[i].algo);
  return (coll_algo_t){"none", NULL, NO_TUNE}; /* unreachable: every kind has an unbounded row */
}

bool coll_algo_known(const char *name) {
  for (size_t i = 0; i < NROWS; i++)
    if (strcmp(table[i].algo.name, name) == 0) return true;
  return false;
}
