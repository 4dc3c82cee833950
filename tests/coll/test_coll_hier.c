/* The pipelined hierarchical all-reduce, all-gather and reduce-scatter on
 * the threads backend, for slice layouts s x k of 2x2, 2x3, 3x2, 2x4, 4x2,
 * 3x1 and 8x1, with the steps inside on the direct path and on
 * point-to-point. Counts cover one element, fewer elements than ranks in a
 * slice or slices, counts that are no multiple of the ranks, of a chunk or
 * of a part, and many chunks (CTest runs it once more with 1 KiB chunks,
 * TESSERA_COLL_HIER_CHUNK_KIB=1). Checks, on every member:
 *   - integer-valued inputs (sums, products and maxima exact in any order)
 *     against the closed-form result, computed here in double;
 *   - all-reduce and all-gather of inputs whose sums round (random floats,
 *     and min/max over +0/-0, whose result depends on the operand order):
 *     the same bits on every member;
 *   - the bytes past the output untouched, the record says "hierarchical". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ts_coll.h"
#include "ts_test.h"

#define CANARY 64

typedef enum { V_INT, V_PROD, V_ROUND, V_ZEROS } values_t;

typedef struct {
  ts_coll_kind_t kind;
  ts_elem_t type;
  ts_coll_redop_t op;
  values_t values;
  bool in_place;
} variant_t;

static const variant_t variants[] = {
    {TS_COLL_ALL_REDUCE, TS_F32, TS_COLL_SUM, V_INT, false},
    {TS_COLL_ALL_REDUCE, TS_F32, TS_COLL_SUM, V_INT, true},
    {TS_COLL_ALL_REDUCE, TS_S32, TS_COLL_MAX, V_INT, false},
    {TS_COLL_ALL_REDUCE, TS_F64, TS_COLL_PROD, V_PROD, false},
    {TS_COLL_ALL_REDUCE, TS_F32, TS_COLL_SUM, V_ROUND, false},
    {TS_COLL_ALL_REDUCE, TS_F32, TS_COLL_MIN, V_ZEROS, false},
    {TS_COLL_ALL_REDUCE, TS_F64, TS_COLL_MAX, V_ZEROS, true},
    {TS_COLL_ALL_GATHER, TS_F32, TS_COLL_SUM, V_ROUND, false},
    {TS_COLL_ALL_GATHER, TS_S32, TS_COLL_SUM, V_INT, false},
    {TS_COLL_REDUCE_SCATTER, TS_F32, TS_COLL_SUM, V_INT, false},
    {TS_COLL_REDUCE_SCATTER, TS_S32, TS_COLL_MIN, V_INT, false},
    {TS_COLL_REDUCE_SCATTER, TS_F64, TS_COLL_PROD, V_PROD, false},
};
#define NVARIANTS (sizeof variants / sizeof variants[0])

/* Per-rank counts: the all-reduce's element count, the all-gather's send
 * count, the reduce-scatter's receive count. */
static const size_t counts[] = {1, 2, 3, 5, 7, 37, 255, 257, 513, 1021, 1031, 4099, 65537, 300001};
#define NCOUNTS (sizeof counts / sizeof counts[0])

/* Element i of world rank w's input. */
static double value(values_t v, int w, size_t i) {
  uint64_t h = (uint64_t)w * 0x9E3779B97F4A7C15ull + i * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  switch (v) {
  case V_INT: return (double)(int)(h % 9) - 4;
  case V_PROD: {
    static const double f[3] = {1, 2, -1};
    return f[h % 3];
  }
  case V_ROUND: /* 24 random bits times a power of two: sums round */
    return ((double)(h >> 40) - 8388608.0) * (1.0 / (double)(1u << (h % 20)));
  case V_ZEROS: {
    static const double z[4] = {0.0, -0.0, 0.0, -0.0};
    return (h >> 7) % 5 == 0 ? ((h >> 9) % 2 ? 1.0 : -1.0) : z[h % 4];
  }
  }
  return 0;
}

static void store(ts_elem_t t, double x, void *p) {
  switch (t) {
  case TS_F32: *(float *)p = (float)x; break;
  case TS_F64: *(double *)p = x; break;
  case TS_S32: *(int32_t *)p = (int32_t)x; break;
  default: abort();
  }
}

static double combine(ts_coll_redop_t op, double a, double b) {
  switch (op) {
  case TS_COLL_SUM: return a + b;
  case TS_COLL_PROD: return a * b;
  case TS_COLL_MIN: return b < a ? b : a;
  case TS_COLL_MAX: return b > a ? b : a;
  default: abort();
  }
}

/* ---- harness: n threads, one communicator each --------------------------- */

typedef struct {
  int n, slices;
  bool direct;
  ts_coll_comm_t **comms;
  pthread_barrier_t bar;
  const char **outs; /* per rank: its output of the current case */
  _Atomic int fails;
} world_t;

typedef struct {
  world_t *w;
  int rank;
} targ_t;

static void fail(world_t *w, int rank, const variant_t *v, size_t count, const char *what, size_t at) {
  if (atomic_fetch_add(&w->fails, 1) < 20)
    fprintf(stderr, "FAIL %dx%d%s rank %d: %s %s %s count %zu%s: %s at %zu\n", w->slices, w->n / w->slices,
            w->direct ? "" : " p2p", rank, ts_coll_kind_name(v->kind), ts_elem_name(v->type),
            ts_coll_redop_name(v->op), count, v->in_place ? " in place" : "", what, at);
}

/* Runs one case on this rank: returns after every member has checked. */
static void run_case(world_t *w, int rank, const variant_t *v, size_t count) {
  ts_coll_comm_t *c = w->comms[rank];
  int n = w->n;
  size_t es = (size_t)ts_elem_storage_bytes(v->type);
  size_t nin = v->kind == TS_COLL_REDUCE_SCATTER ? count * (size_t)n : count;
  size_t nout = v->kind == TS_COLL_ALL_GATHER ? count * (size_t)n : count;
  size_t rbytes = (nin > nout ? nin : nout) * es;
  char *send = malloc(nin * es), *recv = malloc(rbytes + CANARY), *want = malloc(nout * es);
  if (!send || !recv || !want) abort();
  memset(recv, 0xA5, rbytes + CANARY);
  for (size_t i = 0; i < nin; i++) store(v->type, value(v->values, rank, i), send + i * es);
  /* the expected result, where it is exact */
  bool exact = v->values == V_INT || v->values == V_PROD || v->kind == TS_COLL_ALL_GATHER;
  for (size_t i = 0; i < nout && exact; i++) {
    double x;
    if (v->kind == TS_COLL_ALL_GATHER) {
      x = value(v->values, (int)(i / count), i % count);
    } else {
      size_t k = v->kind == TS_COLL_REDUCE_SCATTER ? (size_t)rank * count + i : i;
      x = value(v->values, 0, k);
      for (int p = 1; p < n; p++) x = combine(v->op, x, value(v->values, p, k));
    }
    store(v->type, x, want + i * es);
  }
  const void *in = send;
  if (v->in_place) {
    memcpy(recv, send, nin * es);
    in = recv;
  }
  ts_coll_req_t *req = NULL;
  ts_status_t st;
  switch (v->kind) {
  case TS_COLL_ALL_REDUCE: st = ts_coll_allreduce_post(c, in, recv, count, v->type, v->op, &req); break;
  case TS_COLL_ALL_GATHER: st = ts_coll_allgather_post(c, in, recv, count, v->type, &req); break;
  default: st = ts_coll_reduce_scatter_post(c, in, recv, count, v->type, v->op, &req); break;
  }
  if (st == TS_OK) st = ts_coll_wait(req, 60);
  if (st != TS_OK) fail(w, rank, v, count, ts_status_string(st), 0);
  ts_coll_record_t rec;
  if (ts_coll_records(c, &rec, 1) != 1 || strcmp(rec.algorithm, "hierarchical") != 0)
    fail(w, rank, v, count, "not run hierarchical", 0);
  for (size_t i = 0; i < nout && exact && st == TS_OK; i++)
    if (memcmp(recv + i * es, want + i * es, es) != 0) {
      fail(w, rank, v, count, "wrong element", i);
      break;
    }
  for (size_t i = 0; i < CANARY; i++)
    if ((unsigned char)recv[nout * es + i] != 0xA5) {
      fail(w, rank, v, count, "wrote past the output", nout + i);
      break;
    }
  /* the same bits on every member */
  w->outs[rank] = recv;
  pthread_barrier_wait(&w->bar);
  if (v->kind != TS_COLL_REDUCE_SCATTER && st == TS_OK && memcmp(recv, w->outs[0], nout * es) != 0) {
    size_t i = 0;
    while (memcmp(recv + i * es, w->outs[0] + i * es, es) == 0) i++;
    fail(w, rank, v, count, "bits differ from rank 0's", i);
  }
  pthread_barrier_wait(&w->bar);
  free(send);
  free(recv);
  free(want);
}

static void *rank_main(void *p) {
  targ_t *a = p;
  world_t *w = a->w;
  ts_coll_comm_t *c = w->comms[a->rank];
  ts_coll_comm_set_direct(c, w->direct);
  if (ts_coll_comm_set_slices(c, w->slices) != TS_OK) {
    fprintf(stderr, "set_slices(%d) failed\n", w->slices);
    atomic_fetch_add(&w->fails, 1);
    return NULL;
  }
  for (size_t ci = 0; ci < NCOUNTS; ci++)
    for (size_t vi = 0; vi < NVARIANTS; vi++) {
      /* the largest count for the all-reduce only: the others move n times more */
      if (counts[ci] > 100000 && variants[vi].kind != TS_COLL_ALL_REDUCE) continue;
      run_case(w, a->rank, &variants[vi], counts[ci]);
    }
  return NULL;
}

static void run_world(int slices, int k, bool direct) {
  world_t w = {.n = slices * k, .slices = slices, .direct = direct};
  w.comms = calloc((size_t)w.n, sizeof *w.comms);
  w.outs = calloc((size_t)w.n, sizeof *w.outs);
  EXPECT_EQ(ts_coll_comm_create_threads(w.n, w.comms), TS_OK);
  pthread_barrier_init(&w.bar, NULL, (unsigned)w.n);
  atomic_init(&w.fails, 0);
  pthread_t *th = calloc((size_t)w.n, sizeof *th);
  targ_t *args = calloc((size_t)w.n, sizeof *args);
  for (int i = 0; i < w.n; i++) {
    args[i] = (targ_t){&w, i};
    pthread_create(&th[i], NULL, rank_main, &args[i]);
  }
  for (int i = 0; i < w.n; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < w.n; i++) ts_coll_comm_destroy(w.comms[i]);
  pthread_barrier_destroy(&w.bar);
  int f = atomic_load(&w.fails);
  printf("# %d slices x %d ranks%s: %s\n", slices, k, direct ? "" : " (point-to-point inside)",
         f ? "FAILED" : "ok");
  failures += f;
  free(th);
  free(args);
  free(w.comms);
  free(w.outs);
}

int main(void) {
  static const int layouts[][2] = {{2, 2}, {2, 3}, {3, 2}, {2, 4}, {4, 2}, {3, 1}, {8, 1}};
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
    run_world(layouts[i][0], layouts[i][1], true);
    run_world(layouts[i][0], layouts[i][1], false);
  }
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures != 0;
}
