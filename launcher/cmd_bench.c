/* tessera bench collectives: nccl-tests style tables for our collectives,
 * in-process (--devices N, threads backend) or across the mpirun world, with
 * Open MPI's own collectives timed on the same buffers (--peer=mpi) and the
 * memcpy bandwidth of every rank copying at once (--memcpy). */
#include "coll_world.h"
#include "ts_coll.h"
#include "ts_launcher.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#ifdef TS_COLL_HAVE_MPI
#include <mpi.h>
#endif

static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera bench collectives [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]\n"
          "                                 [-c CHECK] [-d TYPE] [-o OP] [--collectives=LIST]\n"
          "                                 [--backend=threads|mpi|ucx|nccl] [--devices N]\n"
          "                                 [--peer=mpi] [--memcpy] [--algorithm=NAME] [--malloc]\n"
          "                                 [--slices=S]\n"
          "\n"
          "Times each collective over a range of sizes and prints one nccl-tests style\n"
          "table per collective: size (bytes, nccl-tests' S), count, type, redop,\n"
          "time_us (mean of the ranks' mean time), algbw = S/time and busbw = algbw x\n"
          "the collective's factor (GB/s, 1e9 bytes), and #wrong (elements that\n"
          "differed in the checked iterations, summed over ranks).\n"
          "\n"
          "  -b, --minbytes SIZE     smallest size (K/M/G suffixes, binary; default 4K)\n"
          "  -e, --maxbytes SIZE     largest size (default 32M)\n"
          "  -f, --stepfactor F      multiply the size by F each step (default 2)\n"
          "  -n, --iters N           timed iterations per size (default 20)\n"
          "  -w, --warmup_iters N    untimed iterations first (default 5)\n"
          "  -c, --check N           iterations checked against exact results (default 1, 0: off)\n"
          "  -d, --datatype TYPE     element type, HLO spelling (default f32)\n"
          "  -o, --op OP             sum, prod, min or max (default sum)\n"
          "  --collectives=LIST      comma-separated: all-reduce, all-gather, reduce-scatter,\n"
          "                          all-to-all, collective-permute, broadcast (default all)\n"
          "  --backend=NAME          threads (in-process), mpi or ucx (the mpirun world), nccl\n"
          "                          (default: mpi under mpirun, else threads)\n"
          "  --devices N             ranks of an in-process run (threads; default 2)\n"
          "  --peer=mpi              also time Open MPI's MPI_Allreduce, MPI_Allgather,\n"
          "                          MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Bcast on the\n"
          "                          same buffers: columns peer_busbw and ratio (ours / peer)\n"
          "  --memcpy                column memcpy: GB/s of one rank's memcpy of S bytes while\n"
          "                          every rank copies at once\n"
          "  --algorithm=NAME        force one algorithm (ring, recursive-doubling, direct,\n"
          "                          direct-eager, pairwise, bruck, hierarchical, binomial, p2p)\n"
          "  --slices=S              the ranks form S equal slices (multislice): all-reduce,\n"
          "                          all-gather and reduce-scatter run two-level\n"
          "  --malloc                buffers from malloc, not ts_coll_alloc (which places them\n"
          "                          where the ranks of one host load and store each other's)\n"
          "  -h, --help              this help\n");
}

typedef struct {
  int64_t minb, maxb, factor;
  int iters, warmup, check;
  ts_elem_t type;
  ts_coll_redop_t op;
  bool kinds[TS_COLL_KIND_COUNT];
  ts_coll_backend_t backend;
  int devices;
  bool peer, memcpy_col, use_malloc;
  const char *algorithm;
  int slices;
} opts_t;

static const ts_coll_kind_t bench_kinds[] = {TS_COLL_ALL_REDUCE, TS_COLL_ALL_GATHER,       TS_COLL_REDUCE_SCATTER,
                                             TS_COLL_ALL_TO_ALL, TS_COLL_COLLECTIVE_PERMUTE, TS_COLL_BROADCAST};

static bool parse_int(const char *s, int lo, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < lo || v > 1000000) return false;
  *out = (int)v;
  return true;
}

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

static bool bench_type_ok(ts_elem_t t) {
  switch (t) {
  case TS_F64: case TS_S8: case TS_S16: case TS_S32: case TS_S64:
  case TS_U8: case TS_U16: case TS_U32: case TS_U64: return true;
  default: return ts_elem_is_storage_float(t) && ts_elem_storage_bytes(t) >= 1;
  }
}

/* Element i of world rank r: small integers, exact under any order. */
static double input(const opts_t *o, int r, size_t i) {
  if (o->op == TS_COLL_PROD) return ((size_t)r + i) % 2 ? -1 : 1;
  if (ts_elem_is_unsigned_int(o->type)) return (double)(((size_t)r + i) % 4);
  return (double)(((size_t)r * 3 + i) % 5) - 2;
}

static double reduced(const opts_t *o, int n, size_t i) {
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
  const opts_t *o;
  ts_coll_comm_t *comm;
  bool mpi; /* the world is MPI_COMM_WORLD (peer and memcpy columns possible) */
} rank_ctx_t;

static double busbw_factor(ts_coll_kind_t k, int n) {
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
  const opts_t *o = x->o;
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
static bool peer_once(const opts_t *o, ts_coll_kind_t k, const void *s, void *d, size_t count) {
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

static void free_buf(const opts_t *o, ts_coll_comm_t *c, void *p) {
  if (o->use_malloc) free(p);
  else ts_coll_free(c, p);
}

static int bench_rank(rank_ctx_t *x) {
  const opts_t *o = x->o;
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
  for (size_t ki = 0; ki < sizeof bench_kinds / sizeof bench_kinds[0] && rc == 0; ki++) {
    ts_coll_kind_t k = bench_kinds[ki];
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
      double algbw = (double)bytes / tavg / 1e9, busbw = algbw * busbw_factor(k, n);
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
        if (has) peer_bw = (double)bytes / (psum / n) / 1e9 * busbw_factor(k, n);
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

static int bad(const char *fmt, const char *arg) {
  fprintf(stderr, "tessera bench: error: ");
  fprintf(stderr, fmt, arg);
  fputc('\n', stderr);
  return 2;
}

int ts_cmd_bench(int argc, char **argv) {
  if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    usage(stdout);
    return 0;
  }
  if (argc < 2) {
    fprintf(stderr, "tessera bench: error: no benchmark given (benchmarks: collectives)\n");
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "collectives") != 0) return bad("unknown benchmark '%s' (benchmarks: collectives)", argv[1]);
  static const struct option opts[] = {
      {"minbytes", required_argument, NULL, 'b'},  {"maxbytes", required_argument, NULL, 'e'},
      {"stepfactor", required_argument, NULL, 'f'}, {"iters", required_argument, NULL, 'n'},
      {"warmup_iters", required_argument, NULL, 'w'}, {"check", required_argument, NULL, 'c'},
      {"datatype", required_argument, NULL, 'd'},  {"op", required_argument, NULL, 'o'},
      {"collectives", required_argument, NULL, 'C'}, {"backend", required_argument, NULL, 'B'},
      {"devices", required_argument, NULL, 'D'},   {"peer", required_argument, NULL, 'P'},
      {"memcpy", no_argument, NULL, 'M'},          {"algorithm", required_argument, NULL, 'A'},
      {"malloc", no_argument, NULL, 'm'},          {"slices", required_argument, NULL, 'S'},
      {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0},
  };
  opts_t o = {.minb = 4096, .maxb = 32 << 20, .factor = 2, .iters = 20, .warmup = 5, .check = 1,
              .type = TS_F32, .op = TS_COLL_SUM, .devices = 2};
  bool backend_given = false, devices_given = false, kinds_given = false;
  int c;
  opterr = 0;
  int sub_argc = argc - 1;
  char **sub_argv = argv + 1;
  while ((c = getopt_long(sub_argc, sub_argv, ":b:e:f:n:w:c:d:o:h", opts, NULL)) != -1) {
    int v;
    switch (c) {
    case 'b':
      if (!ts_cli_parse_size(optarg, &o.minb)) return bad("-b wants a positive size such as 4K, got '%s'", optarg);
      break;
    case 'e':
      if (!ts_cli_parse_size(optarg, &o.maxb)) return bad("-e wants a positive size up to 8G, got '%s'", optarg);
      break;
    case 'f':
      if (!parse_int(optarg, 2, &v)) return bad("-f wants an integer factor >= 2, got '%s'", optarg);
      o.factor = v;
      break;
    case 'n':
      if (!parse_int(optarg, 1, &o.iters)) return bad("-n wants a positive integer, got '%s'", optarg);
      break;
    case 'w':
      if (!parse_int(optarg, 0, &o.warmup)) return bad("-w wants an integer >= 0, got '%s'", optarg);
      break;
    case 'c':
      if (!parse_int(optarg, 0, &o.check)) return bad("-c wants an integer >= 0, got '%s'", optarg);
      break;
    case 'd':
      if (!ts_elem_from_name(optarg, strlen(optarg), &o.type) || !bench_type_ok(o.type))
        return bad("unknown or unsupported type '%s' (f32, f64, bf16, f16, f8e4m3fn, s8..s64, u8..u64)", optarg);
      break;
    case 'o': {
      int k = 0;
      while (k < TS_COLL_REDOP_COUNT && strcmp(ts_coll_redop_name((ts_coll_redop_t)k), optarg) != 0) k++;
      if (k == TS_COLL_REDOP_COUNT) return bad("unknown op '%s' (sum, prod, min, max)", optarg);
      o.op = (ts_coll_redop_t)k;
      break;
    }
    case 'C': {
      kinds_given = true;
      char *list = ts_strdup(optarg), *save = NULL;
      for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        ts_coll_kind_t k;
        bool ok = ts_coll_kind_from_name(t, &k);
        bool benchable = false;
        for (size_t i = 0; ok && i < sizeof bench_kinds / sizeof bench_kinds[0]; i++) benchable |= bench_kinds[i] == k;
        if (!benchable) {
          int rc = bad("unknown collective '%s' (all-reduce, all-gather, reduce-scatter, all-to-all, "
                       "collective-permute, broadcast)", t);
          ts_free(list);
          return rc;
        }
        o.kinds[k] = true;
      }
      ts_free(list);
      break;
    }
    case 'B':
      if (!ts_coll_backend_from_name(optarg, &o.backend))
        return bad("unknown backend '%s' (backends: threads, mpi, ucx, nccl)", optarg);
      backend_given = true;
      break;
    case 'D':
      if (!parse_int(optarg, 1, &o.devices) || o.devices > 1024)
        return bad("--devices wants an integer from 1 to 1024, got '%s'", optarg);
      devices_given = true;
      break;
    case 'P':
      if (strcmp(optarg, "mpi") != 0) return bad("unknown peer '%s' (peers: mpi)", optarg);
      o.peer = true;
      break;
    case 'M': o.memcpy_col = true; break;
    case 'm': o.use_malloc = true; break;
    case 'A': {
      static const char *const algos[] = {"ring",     "recursive-doubling", "direct",       "direct-eager",
                                          "pairwise", "bruck",              "hierarchical", "binomial", "p2p"};
      bool known = false;
      for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) known |= strcmp(optarg, algos[i]) == 0;
      if (!known)
        return bad("unknown algorithm '%s' (ring, recursive-doubling, direct, direct-eager, pairwise, bruck, "
                   "hierarchical, binomial, p2p)", optarg);
      o.algorithm = optarg;
      break;
    }
    case 'S':
      if (!parse_int(optarg, 1, &o.slices)) return bad("--slices wants a positive integer, got '%s'", optarg);
      break;
    case 'h': usage(stdout); return 0;
    case ':': return bad("option '%s' needs a value", sub_argv[optind - 1]);
    default: return bad("unknown option '%s'", sub_argv[optind - 1]);
    }
  }
  if (optind < sub_argc) return bad("unexpected argument '%s'", sub_argv[optind]);
  if (o.minb > o.maxb) return bad("-b is larger than -e%s", "");
  if (!kinds_given)
    for (size_t i = 0; i < sizeof bench_kinds / sizeof bench_kinds[0]; i++) o.kinds[bench_kinds[i]] = true;
  bool under_mpirun = ts_coll_world_under_mpirun();
  if (!backend_given) o.backend = under_mpirun && !devices_given ? TS_COLL_BACKEND_MPI : TS_COLL_BACKEND_THREADS;
  if (o.backend == TS_COLL_BACKEND_THREADS) {
    if (o.peer) return bad("--peer=mpi needs the mpirun world (--backend=mpi or ucx), not in-process ranks%s", "");
    if (o.memcpy_col && o.devices > 1) {
      /* fine: threads copy at once too */
    }
    return ts_coll_world_threads("tessera bench", o.devices, rank_main, &o);
  }
  if (devices_given) return bad("--devices is for in-process runs (--backend=threads)%s", "");
  if (o.backend == TS_COLL_BACKEND_NCCL) {
    fprintf(stderr, "tessera bench: error: --backend=nccl needs device buffers, which this benchmark does not "
                    "allocate yet\n");
    return 3;
  }
  if (o.peer && o.type != TS_F32 && o.type != TS_F64 && !ts_elem_is_signed_int(o.type) &&
      !ts_elem_is_unsigned_int(o.type))
    return bad("--peer=mpi needs a type MPI has (f32, f64, integers), not '%s'", ts_elem_name(o.type));
  return ts_coll_world_mpi("tessera bench", o.backend, &sub_argc, &sub_argv, rank_main, &o);
}
