/* The collective benchmark (tessera bench collectives): nccl-tests style
 * tables for our collectives, in-process (threads backend) or across the
 * mpirun world, with Open MPI's own collectives timed on the same buffers
 * (--peer=mpi) and the memcpy bandwidth of every rank copying at once
 * (--memcpy). */
#include "ts_bench.h"
#include "ts_coll.h"

#include <stdlib.h>
#include <string.h>

#ifdef TS_COLL_HAVE_MPI
#include <mpi.h>
#endif

const ts_coll_kind_t ts_bench_coll_kinds[TS_BENCH_COLL_NKINDS] = {
    TS_COLL_ALL_REDUCE, TS_COLL_ALL_GATHER, TS_COLL_REDUCE_SCATTER, TS_COLL_ALL_TO_ALL, TS_COLL_COLLECTIVE_PERMUTE,
    TS_COLL_BROADCAST};

/* ---- per-element access for inputs and checks ---- */

static double load(ts_elem_t t, const void *p, size_t i) {
  switch (t) {
  case TS_F64: return ((const double *)p)[i];
  case TS_S8: return ((const int8_t *)p)[i];
  case TS_S16: return ((const int16_t *)p)[i];
  case TS_S32: return ((const int32_t *)p)[i];
  case TS_S64: return (double)((const int64_t *)p)[i];
  case TS_U8: return ((const uint8_t *)p)[i];
  case TS_U16: return ((const uint16_t *)p)[i];
  case TS_U32: return ((const uint32_t *)p)[i];
  case TS_U64: return (double)((const uint64_t *)p)[i];
  default: {
    int es = ts_elem_storage_bytes(t);
    uint32_t bits = es == 4 ? ((const uint32_t *)p)[i] : es == 2 ? ((const uint16_t *)p)[i] : ((const uint8_t *)p)[i];
    return ts_elem_to_double(t, bits);
  }
  }
}

static void store(ts_elem_t t, void *p, size_t i, double v) {
  switch (t) {
  case TS_F64: ((double *)p)[i] = v; return;
  case TS_S8: ((int8_t *)p)[i] = (int8_t)v; return;
  case TS_S16: ((int16_t *)p)[i] = (int16_t)v; return;
  case TS_S32: ((int32_t *)p)[i] = (int32_t)v; return;
  case TS_S64: ((int64_t *)p)[i] = (int64_t)v; return;
  case TS_U8: ((uint8_t *)p)[i] = (uint8_t)v; return;
  case TS_U16: ((uint16_t *)p)[i] = (uint16_t)v; return;
  case TS_U32: ((uint32_t *)p)[i] = (uint32_t)v; return;
  case TS_U64: ((uint64_t *)p)[i] = (uint64_t)v; return;
  default: {
    int es = ts_elem_storage_bytes(t);
    uint32_t bits = ts_elem_from_double(t, v);
    if (es == 4) ((uint32_t *)p)[i] = bits;
    else if (es == 2) ((uint16_t *)p)[i] = (uint16_t)bits;
    else ((uint8_t *)p)[i] = (uint8_t)bits;
  }
  }
}

bool ts_bench_coll_type_ok(ts_elem_t t) {
  switch (t) {
  case TS_F64: case TS_S8: case TS_S16: case TS_S32: case TS_S64:
  case TS_U8: case TS_U16: case TS_U32: case TS_U64: return true;
  default: return ts_elem_is_storage_float(t) && ts_elem_storage_bytes(t) >= 1;
  }
}

/* Element i of world rank r: small integers, exact under any order. */
static double input(const ts_bench_coll_opts_t *o, int r, size_t i) {
  if (o->op == TS_COLL_PROD) return ((size_t)r + i) % 2 ? -1 : 1;
  if (ts_elem_is_unsigned_int(o->type)) return (double)(((size_t)r + i) % 4);
  return (double)(((size_t)r * 3 + i) % 5) - 2;
}

static double reduced(const ts_bench_coll_opts_t *o, int n, size_t i) {
  double acc = input(o, 0, i);
  for (int r = 1; r < n; r++) {
    double v = input(o, r, i);
    switch (o->op) {
    case TS_COLL_SUM: acc += v; break;
    case TS_COLL_PROD: acc *= v; break;
    case TS_COLL_MIN: acc = v < acc ? v : acc; break;
    case TS_COLL_MAX: acc = v > acc ? v : acc; break;
    default: break;
    }
  }
  return acc;
}

/* ---- one rank's run ---- */

typedef struct {
  const ts_bench_coll_opts_t *o;
  ts_coll_comm_t *comm;
  bool mpi; /* the world is MPI_COMM_WORLD (peer and memcpy columns possible) */
} rank_ctx_t;

double ts_bench_busbw_factor(ts_coll_kind_t k, int n) {
  switch (k) {
  case TS_COLL_ALL_REDUCE: return 2.0 * (n - 1) / n;
  case TS_COLL_ALL_GATHER:
  case TS_COLL_REDUCE_SCATTER:
  case TS_COLL_ALL_TO_ALL: return (double)(n - 1) / n;
  default: return 1.0;
  }
}

/* Elements per rank for S bytes (the count nccl-tests prints). */
static size_t count_for(ts_coll_kind_t k, int64_t S, size_t es, int n) {
  size_t c = (size_t)S / es;
  if (k == TS_COLL_ALL_GATHER || k == TS_COLL_REDUCE_SCATTER || k == TS_COLL_ALL_TO_ALL) c /= (size_t)n;
  return c;
}

static ts_status_t post(rank_ctx_t *x, ts_coll_kind_t k, const void *s, void *d, size_t count,
                        const int64_t (*pairs)[2], ts_coll_req_t **req) {
  ts_coll_comm_t *c = x->comm;
  int n = ts_coll_comm_size(c);
  switch (k) {
  case TS_COLL_ALL_REDUCE: return ts_coll_allreduce_post(c, s, d, count, x->o->type, x->o->op, req);
  case TS_COLL_ALL_GATHER: return ts_coll_allgather_post(c, s, d, count, x->o->type, req);
  case TS_COLL_REDUCE_SCATTER: return ts_coll_reduce_scatter_post(c, s, d, count, x->o->type, x->o->op, req);
  case TS_COLL_ALL_TO_ALL: return ts_coll_alltoall_post(c, s, d, count, x->o->type, req);
  case TS_COLL_COLLECTIVE_PERMUTE: return ts_coll_permute_post(c, s, d, count, x->o->type, pairs, n, req);
  case TS_COLL_BROADCAST: return ts_coll_broadcast_post(c, s, d, count, x->o->type, 0, req);
  default: return TS_ERR_INTERNAL;
  }
}

static ts_status_t run_once(rank_ctx_t *x, ts_coll_kind_t k, const void *s, void *d, size_t count,
                            const int64_t (*pairs)[2]) {
  ts_coll_req_t *req;
  TS_CHECK(post(x, k, s, d, count, pairs, &req));
  return ts_coll_wait(req, -1);
}

static void fill_inputs(rank_ctx_t *x, ts_coll_kind_t k, char *s, size_t count) {
  int n = ts_coll_comm_size(x->comm), r = ts_coll_comm_rank(x->comm);
  size_t nin = k == TS_COLL_REDUCE_SCATTER || k == TS_COLL_ALL_TO_ALL ? count * (size_t)n : count;
  for (size_t i = 0; i < nin; i++) store(x->o->type, s, i, input(x->o, r, i));
}

/* Wrong elements of one checked run on this rank. */
static int64_t check_output(rank_ctx_t *x, ts_coll_kind_t k, const char *d, size_t count) {
  int n = ts_coll_comm_size(x->comm), r = ts_coll_comm_rank(x->comm);
  const ts_bench_coll_opts_t *o = x->o;
  int64_t wrong = 0;
  switch (k) {
  case TS_COLL_ALL_REDUCE:
    for (size_t i = 0; i < count; i++) wrong += load(o->type, d, i) != reduced(o, n, i);
    break;
  case TS_COLL_REDUCE_SCATTER:
    for (size_t i = 0; i < count; i++) wrong += load(o->type, d, i) != reduced(o, n, (size_t)r * count + i);
    break;
  case TS_COLL_ALL_GATHER:
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < count; i++) wrong += load(o->type, d, (size_t)p * count + i) != input(o, p, i);
    break;
  case TS_COLL_ALL_TO_ALL:
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < count; i++)
        wrong += load(o->type, d, (size_t)p * count + i) != input(o, p, (size_t)r * count + i);
    break;
  case TS_COLL_COLLECTIVE_PERMUTE: {
    int from = (r - 1 + n) % n;
    for (size_t i = 0; i < count; i++) wrong += load(o->type, d, i) != input(o, from, i);
    break;
  }
  case TS_COLL_BROADCAST:
    for (size_t i = 0; i < count; i++) wrong += load(o->type, d, i) != input(o, 0, i);
    break;
  default: break;
  }
  return wrong;
}

static double sum_over_ranks(rank_ctx_t *x, double v) {
  double out = v;
  if (ts_coll_allreduce(x->comm, &v, &out, 1, TS_F64, TS_COLL_SUM) != TS_OK) return -1;
  return out;
}

#ifdef TS_COLL_HAVE_MPI
static MPI_Datatype mpi_type(ts_elem_t t) {
  switch (t) {
  case TS_F32: return MPI_FLOAT;
  case TS_F64: return MPI_DOUBLE;
  case TS_S8: return MPI_INT8_T;
  case TS_S16: return MPI_INT16_T;
  case TS_S32: return MPI_INT32_T;
  case TS_S64: return MPI_INT64_T;
  case TS_U8: return MPI_UINT8_T;
  case TS_U16: return MPI_UINT16_T;
  case TS_U32: return MPI_UINT32_T;
  case TS_U64: return MPI_UINT64_T;
  default: return MPI_DATATYPE_NULL;
  }
}
static MPI_Op mpi_op(ts_coll_redop_t op) {
  return op == TS_COLL_SUM ? MPI_SUM : op == TS_COLL_PROD ? MPI_PROD : op == TS_COLL_MIN ? MPI_MIN : MPI_MAX;
}

/* Open MPI's own collective on the same buffers; false when it has none. */
static bool peer_once(const ts_bench_coll_opts_t *o, ts_coll_kind_t k, const void *s, void *d, size_t count) {
  MPI_Datatype t = mpi_type(o->type);
  if (t == MPI_DATATYPE_NULL) return false;
  int c = (int)count;
  switch (k) {
  case TS_COLL_ALL_REDUCE: MPI_Allreduce(s, d, c, t, mpi_op(o->op), MPI_COMM_WORLD); return true;
  case TS_COLL_ALL_GATHER: MPI_Allgather(s, c, t, d, c, t, MPI_COMM_WORLD); return true;
  case TS_COLL_REDUCE_SCATTER: MPI_Reduce_scatter_block(s, d, c, t, mpi_op(o->op), MPI_COMM_WORLD); return true;
  case TS_COLL_ALL_TO_ALL: MPI_Alltoall(s, c, t, d, c, t, MPI_COMM_WORLD); return true;
  case TS_COLL_BROADCAST: MPI_Bcast(d, c, t, 0, MPI_COMM_WORLD); return true;
  default: return false;
  }
}
#endif

static void world_barrier(rank_ctx_t *x) {
#ifdef TS_COLL_HAVE_MPI
  if (x->mpi) {
    MPI_Barrier(MPI_COMM_WORLD);
    return;
  }
#endif
  ts_coll_barrier(x->comm);
}

static void free_buf(const ts_bench_coll_opts_t *o, ts_coll_comm_t *c, void *p) {
  if (o->use_malloc) free(p);
  else ts_coll_free(c, p);
}

static int bench_rank(rank_ctx_t *x) {
  const ts_bench_coll_opts_t *o = x->o;
  ts_coll_comm_t *c = x->comm;
  int n = ts_coll_comm_size(c), r = ts_coll_comm_rank(c);
  size_t es = (size_t)ts_elem_storage_bytes(o->type);
  bool out = r == 0;
  if (o->algorithm) ts_coll_comm_force_algorithm(c, o->algorithm);
  if (o->slices > 1 && ts_coll_comm_set_slices(c, o->slices) != TS_OK) {
    if (out) fprintf(stderr, "tessera bench: error: --slices=%d does not divide the %d ranks\n", o->slices, n);
    return 2;
  }
  size_t maxb = (size_t)o->maxb + 64;
  char *sbuf = NULL, *dbuf = NULL;
  if (o->use_malloc) {
    sbuf = malloc(maxb);
    dbuf = malloc(maxb);
  } else {
    if (ts_coll_alloc(c, maxb, (void **)&sbuf) != TS_OK) sbuf = NULL;
    if (ts_coll_alloc(c, maxb, (void **)&dbuf) != TS_OK) dbuf = NULL;
  }
  int64_t (*pairs)[2] = malloc((size_t)n * sizeof *pairs);
  if (!sbuf || !dbuf || !pairs) {
    fprintf(stderr, "tessera bench: error: cannot allocate %zu bytes\n", 2 * maxb);
    free_buf(o, c, sbuf);
    free_buf(o, c, dbuf);
    free(pairs);
    return 4;
  }
  /* first touch outside every timing */
  memset(sbuf, 0, maxb);
  memset(dbuf, 0, maxb);
  for (int i = 0; i < n; i++) {
    pairs[i][0] = i;
    pairs[i][1] = (i + 1) % n;
  }
  if (out) {
    printf("# tessera bench collectives: backend %s, %d ranks, type %s, redop %s, iters %d, warmup %d, check %d, "
           "buffers %s%s%s, slices %d\n",
           ts_coll_backend_name(ts_coll_comm_backend(c)), n, ts_elem_name(o->type), ts_coll_redop_name(o->op),
           o->iters, o->warmup, o->check, o->use_malloc ? "malloc" : "ts_coll_alloc", o->algorithm ? ", algorithm " : "",
           o->algorithm ? o->algorithm : "", o->slices > 1 ? o->slices : 1);
    printf("# GB/s = 1e9 bytes/s; busbw = algbw x factor (all-reduce 2(n-1)/n; all-gather, reduce-scatter,\n"
           "# all-to-all (n-1)/n; others 1); time = mean over ranks of the mean of %d iterations\n", o->iters);
  }
  int64_t total_wrong = 0;
  int rc = 0;
  for (size_t ki = 0; ki < TS_BENCH_COLL_NKINDS && rc == 0; ki++) {
    ts_coll_kind_t k = ts_bench_coll_kinds[ki];
    if (!o->kinds[k]) continue;
    bool redop = k == TS_COLL_ALL_REDUCE || k == TS_COLL_REDUCE_SCATTER;
    if (out) {
      printf("# collective: %s\n", ts_coll_kind_name(k));
      printf("# %11s %11s %6s %6s %11s %8s %8s %7s", "size", "count", "type", "redop", "time_us", "algbw", "busbw",
             "#wrong");
      if (o->peer) printf(" %10s %6s", "peer_busbw", "ratio");
      if (o->memcpy_col) printf(" %8s %9s", "memcpy", "busbw/cpy");
      printf("\n");
    }
    for (int64_t S = o->minb; S <= o->maxb && rc == 0; S = S * o->factor) {
      size_t count = count_for(k, S, es, n);
      if (count == 0) continue;
      int64_t bytes = (int64_t)(count * es * (k == TS_COLL_ALL_GATHER || k == TS_COLL_REDUCE_SCATTER ||
                                                      k == TS_COLL_ALL_TO_ALL
                                                  ? (size_t)n
                                                  : 1));
      ts_status_t st = TS_OK;
      int64_t wrong = 0;
      for (int i = 0; i < o->check && st == TS_OK; i++) {
        fill_inputs(x, k, sbuf, count);
        memset(dbuf, 0, (size_t)bytes);
        st = run_once(x, k, sbuf, dbuf, count, (const int64_t(*)[2])pairs);
        if (st == TS_OK) wrong += check_output(x, k, dbuf, count);
      }
      for (int i = 0; i < o->warmup && st == TS_OK; i++)
        st = run_once(x, k, sbuf, dbuf, count, (const int64_t(*)[2])pairs);
      world_barrier(x);
      double t0 = ts_coll_now();
      for (int i = 0; i < o->iters && st == TS_OK; i++)
        st = run_once(x, k, sbuf, dbuf, count, (const int64_t(*)[2])pairs);
      double t = (ts_coll_now() - t0) / o->iters;
      if (st) {
        if (out) fprintf(stderr, "tessera bench: error: %s of %lld bytes failed: %s\n", ts_coll_kind_name(k),
                         (long long)bytes, ts_status_string(st));
        rc = ts_status_exit_code(st);
        break;
      }
      double tavg = sum_over_ranks(x, t) / n;
      int64_t w = (int64_t)sum_over_ranks(x, (double)wrong);
      total_wrong += w;
      double algbw = (double)bytes / tavg / 1e9, busbw = algbw * ts_bench_busbw_factor(k, n);
      double peer_bw = -1, cpy_bw = -1;
#ifdef TS_COLL_HAVE_MPI
      if (o->peer && x->mpi) {
        bool has = true;
        for (int i = 0; i < o->warmup && has; i++) has = peer_once(o, k, sbuf, dbuf, count);
        MPI_Barrier(MPI_COMM_WORLD);
        double p0 = MPI_Wtime();
        for (int i = 0; i < o->iters && has; i++) has = peer_once(o, k, sbuf, dbuf, count);
        double pt = (MPI_Wtime() - p0) / o->iters, psum = 0;
        MPI_Allreduce(&pt, &psum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (has) peer_bw = (double)bytes / (psum / n) / 1e9 * ts_bench_busbw_factor(k, n);
      }
#endif
      if (o->memcpy_col) {
        world_barrier(x);
        double m0 = ts_coll_now();
        for (int i = 0; i < o->iters; i++) memcpy(dbuf, sbuf, (size_t)bytes);
        double mt = (ts_coll_now() - m0) / o->iters;
        cpy_bw = (double)bytes / (sum_over_ranks(x, mt) / n) / 1e9;
      }
      if (out) {
        printf("  %11lld %11zu %6s %6s %11.2f %8.3f %8.3f %7lld", (long long)bytes, count, ts_elem_name(o->type),
               redop ? ts_coll_redop_name(o->op) : "none", tavg * 1e6, algbw, busbw, (long long)w);
        if (o->peer) {
          if (peer_bw > 0) printf(" %10.3f %6.2f", peer_bw, busbw / peer_bw);
          else printf(" %10s %6s", "-", "-");
        }
        if (o->memcpy_col) printf(" %8.3f %9.2f", cpy_bw, busbw / cpy_bw);
        printf("\n");
        fflush(stdout);
      }
    }
  }
  if (out && rc == 0) printf("# Out of bounds values : %lld %s\n", (long long)total_wrong, total_wrong ? "FAILED" : "OK");
  free_buf(o, c, sbuf);
  free_buf(o, c, dbuf);
  free(pairs);
  if (rc == 0 && total_wrong) rc = 1;
  return rc;
}

static int rank_main(void *arg, ts_coll_comm_t *comm, bool mpi) {
  rank_ctx_t x = {.o = arg, .comm = comm, .mpi = mpi};
  return bench_rank(&x);
}

int ts_bench_collectives(const ts_bench_coll_opts_t *o, int *argc, char ***argv) {
  if (o->backend == TS_COLL_BACKEND_THREADS) return ts_bench_world_threads("tessera bench", o->devices, rank_main, (void *)o);
  return ts_bench_world_mpi("tessera bench", o->backend, argc, argv, rank_main, (void *)o);
}

