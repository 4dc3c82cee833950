/* tessera perf-table collectives: sweeps collectives over tensor sizes,
 * devices per group, transfer schemes and element types, as XLA's
 * collective_perf_table_gen does (reference/cost_models.md §4): for each
 * point, warm-up runs, then timed runs whose median gives the throughput
 * (tensor bytes / time), one entry per point in XLA's table format.
 *
 * With W ranks (in-process threads, or the mpirun world) and D devices per
 * group, the W/D groups run at once, laid out contiguously ([G,D]<=[W], XLA's
 * non-rail-aligned) or strided ([G,D]<=[D,G]T(1,0), rail-aligned); a run's
 * time is the slowest rank's. collective-permute runs on the first D ranks
 * only, in XLA's three patterns, since its entry describes one set of pairs. */
#include "ts_bench.h"
#include "bench_internal.h"
#include "ts_coll.h"
#include "ts_env.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One point of the sweep. Every rank builds the same list. */
typedef struct {
  ts_coll_kind_t kind;
  ts_transfer_scheme_t scheme;
  int64_t devices, groups;
  ts_elem_t type;
  size_t count; /* elements per rank, as the post takes them */
  int64_t tensor_bytes;
} point_t;

/* ---- the sweep, identical on every rank ----------------------------------- */

static bool is_grouped_scheme(ts_transfer_scheme_t s) { return s == TS_SCHEME_CONTIGUOUS || s == TS_SCHEME_STRIDED; }

/* Elements per rank for a tensor of S bytes, and the tensor bytes they make. */
static size_t count_for(ts_coll_kind_t k, int64_t S, size_t es, int64_t D, int64_t *bytes) {
  size_t c = (size_t)S / es;
  bool split = k == TS_COLL_ALL_GATHER || k == TS_COLL_REDUCE_SCATTER || k == TS_COLL_ALL_TO_ALL;
  if (split) c /= (size_t)D;
  *bytes = (int64_t)(c * es * (split ? (size_t)D : 1));
  return c;
}

static bool pattern_fits(ts_transfer_scheme_t s, int64_t D) {
  if (D < 2) return false;
  /* a ring of two is two mutual pairs: the table could not tell it apart */
  return s == TS_SCHEME_TWO_WAY_HAS_NON_MUTUAL ? D >= 3 : D % 2 == 0;
}

static const ts_coll_kind_t grouped_kinds[] = {TS_COLL_ALL_REDUCE, TS_COLL_ALL_GATHER, TS_COLL_REDUCE_SCATTER,
                                               TS_COLL_ALL_TO_ALL};

/* Appends the points of one (kind, scheme, D) over every type and size. */
static void add_points(const ts_bench_pt_coll_opts_t *o, int64_t maxb, ts_coll_kind_t k, ts_transfer_scheme_t s, int64_t D, int64_t G,
                       point_t *pts, size_t *n) {
  for (int t = 0; t < o->ntypes; t++) {
    size_t es = (size_t)ts_elem_storage_bytes(o->types[t]);
    for (int64_t S = o->minb; S <= maxb; S *= o->factor) {
      int64_t bytes;
      size_t c = count_for(k, S, es, D, &bytes);
      if (c == 0) continue;
      if (pts) pts[*n] = (point_t){k, s, D, G, o->types[t], c, bytes};
      (*n)++;
    }
  }
}

/* The points in sweep order: per group size, the contiguous layout's
 * collectives, then the permutes (on the contiguous layout too), then the
 * strided layout's, so that each layout is split off once. pts NULL: count. */
static size_t plan(const ts_bench_pt_coll_opts_t *o, int W, int64_t maxb, point_t *pts) {
  size_t n = 0;
  for (int gi = 0; gi < o->ngroup_sizes; gi++) {
    int64_t D = o->group_sizes[gi], G = W / D;
    /* With one group both layouts are the same devices: measured once, as
     * XLA writes it ([1,D]<=[D], non-rail-aligned). */
    bool contiguous = o->schemes[TS_SCHEME_CONTIGUOUS] || G == 1;
    bool strided = o->schemes[TS_SCHEME_STRIDED] && G > 1;
    for (size_t i = 0; contiguous && i < sizeof grouped_kinds / sizeof grouped_kinds[0]; i++)
      if (o->kinds[grouped_kinds[i]]) add_points(o, maxb, grouped_kinds[i], TS_SCHEME_CONTIGUOUS, D, G, pts, &n);
    if (o->kinds[TS_COLL_COLLECTIVE_PERMUTE])
      for (int s = TS_SCHEME_ONE_WAY; s < TS_SCHEME_COUNT; s++)
        if (o->schemes[s] && pattern_fits((ts_transfer_scheme_t)s, D))
          add_points(o, maxb, TS_COLL_COLLECTIVE_PERMUTE, (ts_transfer_scheme_t)s, D, 1, pts, &n);
    for (size_t i = 0; strided && i < sizeof grouped_kinds / sizeof grouped_kinds[0]; i++)
      if (o->kinds[grouped_kinds[i]]) add_points(o, maxb, grouped_kinds[i], TS_SCHEME_STRIDED, D, G, pts, &n);
  }
  return n;
}

/* Cost of a point for the ETA, in bytes moved at about 1 GB/s: timed runs
 * last at least MIN_RUN_S (1 ms, a megabyte's worth), warm-up runs one
 * operation each (a latency is worth some 64K). */
static double point_work(const ts_bench_pt_coll_opts_t *o, const point_t *p) {
  double bytes = (double)p->tensor_bytes;
  return o->sw.iters * (bytes > 1048576 ? bytes : 1048576) + o->sw.warmup * (bytes + 65536);
}

/* ---- free memory ---------------------------------------------------------- */

static double free_bytes(void) {
  const char *env = ts_env_get(TS_ENV_PERF_TABLE_FREE_BYTES);
  if (env && *env) {
    char *end;
    double v = strtod(env, &end);
    double m = *end == 'K' ? 1024.0 : *end == 'M' ? 1048576.0 : *end == 'G' ? 1073741824.0 : 1;
    if (v > 0) return v * m;
  }
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
    fclose(f);
    if (kb > 0) return (double)kb * 1024;
  }
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (double)pages * (double)page : 1e18;
}

/* Ranks sharing this host's memory. */
static int local_ranks(int W, bool mpi) {
  const char *s = mpi ? getenv("OMPI_COMM_WORLD_LOCAL_SIZE") : NULL;
  if (!s && mpi) s = getenv("MPI_LOCALNRANKS");
  int n = s ? atoi(s) : 0;
  return n > 0 ? n : W;
}

/* The largest size of the sweep whose two buffers per rank fit in 80% of
 * free memory (XLA's collector takes the same fraction of the GPU's), or 0. */
static int64_t fitting_max(const ts_bench_pt_coll_opts_t *o, int local, double *free_out) {
  double budget = free_bytes();
  *free_out = budget;
  budget = budget * 0.8 / local;
  int64_t best = 0;
  for (int64_t S = o->minb; S <= o->maxb; S *= o->factor)
    if (2.0 * ((double)S + 4096) <= budget) best = S;
  return best;
}

/* ---- one rank's run ---------------------------------------------------------- */

typedef struct {
  ts_bench_pt_coll_opts_t *o;
  ts_coll_comm_t *world;
  int W, rank;
  char *sbuf, *dbuf;
  double *times;
  int64_t (*pairs)[2];
  pt_progress_t progress;
} rank_t;

/* The ranks of group g of D in layout `s`: contiguous [G,D]<=[W] or strided
 * [G,D]<=[D,G]T(1,0) (group g holds g, g+G, g+2G, ...). */
static ts_status_t split(rank_t *x, int64_t D, ts_transfer_scheme_t s, ts_coll_comm_t **out) {
  int64_t G = x->W / D;
  ts_i64_list_t *groups = ts_calloc((size_t)G, sizeof *groups);
  int64_t *ids = ts_malloc((size_t)x->W * sizeof *ids);
  ts_status_t st = TS_ERR_NOMEM;
  if (groups && ids) {
    for (int64_t g = 0; g < G; g++) {
      for (int64_t i = 0; i < D; i++) ids[g * D + i] = s == TS_SCHEME_STRIDED ? i * G + g : g * D + i;
      groups[g] = (ts_i64_list_t){(int)D, ids + g * D};
    }
    st = ts_coll_comm_split(x->world, groups, (int)G, TS_COLL_FLATTENED_ID, 1, x->W, out);
  }
  ts_free(groups);
  ts_free(ids);
  return st;
}

/* The pairs of a permute pattern over D ranks, as XLA's BuildSourceTargetPairs. */
static int permute_pairs(ts_transfer_scheme_t s, int64_t D, int64_t (*pairs)[2]) {
  int n = 0;
  for (int64_t i = 0; i < D; i++) {
    if (s == TS_SCHEME_ONE_WAY) {
      if (i >= D / 2) break;
      pairs[n][0] = i, pairs[n][1] = i + D / 2;
    } else if (s == TS_SCHEME_TWO_WAY_ALL_MUTUAL) {
      pairs[n][0] = i, pairs[n][1] = i ^ 1;
    } else {
      pairs[n][0] = i, pairs[n][1] = (i + 1) % D;
    }
    n++;
  }
  return n;
}

static ts_status_t run_once(rank_t *x, ts_coll_comm_t *c, const point_t *p, int npairs) {
  ts_coll_req_t *req = NULL;
  ts_elem_t t = p->type;
  ts_status_t st;
  switch (p->kind) {
  case TS_COLL_ALL_REDUCE: st = ts_coll_allreduce_post(c, x->sbuf, x->dbuf, p->count, t, TS_COLL_SUM, &req); break;
  case TS_COLL_ALL_GATHER: st = ts_coll_allgather_post(c, x->sbuf, x->dbuf, p->count, t, &req); break;
  case TS_COLL_REDUCE_SCATTER:
    st = ts_coll_reduce_scatter_post(c, x->sbuf, x->dbuf, p->count, t, TS_COLL_SUM, &req);
    break;
  case TS_COLL_ALL_TO_ALL: st = ts_coll_alltoall_post(c, x->sbuf, x->dbuf, p->count, t, &req); break;
  case TS_COLL_COLLECTIVE_PERMUTE:
    st = ts_coll_permute_post(c, x->sbuf, x->dbuf, p->count, t, (const int64_t(*)[2])x->pairs, npairs, &req);
    break;
  default: return TS_ERR_INTERNAL;
  }
  if (st) return st;
  return ts_coll_wait(req, -1);
}

/* Times one point. Warm-up runs first; the last one's time (the slowest
 * rank's) sets how many operations a timed run repeats back to back, so that
 * a run lasts about MIN_RUN_S and the barrier's skew does not swamp a short
 * collective (XLA times permutes 100 to a loop for the same reason). Each run
 * starts after a world barrier and takes as long as its slowest rank; the
 * time per operation is the run's over the repetitions. *median on every rank. */
#define MIN_RUN_S 1e-3
#define MAX_REPS 1000

static ts_status_t measure(rank_t *x, ts_coll_comm_t *sub, const point_t *p, double *median) {
  const ts_bench_pt_coll_opts_t *o = x->o;
  bool permute = p->kind == TS_COLL_COLLECTIVE_PERMUTE;
  bool active = !permute || x->rank < p->devices; /* permutes: the first group only */
  int npairs = permute ? permute_pairs(p->scheme, p->devices, x->pairs) : 0;
  ts_status_t st = TS_OK;
  double once = 0, agreed = 0;
  for (int i = 0; i < o->sw.warmup && st == TS_OK; i++) {
    double t0 = ts_coll_now();
    if (active) st = run_once(x, sub, p, npairs);
    once = ts_coll_now() - t0;
  }
  if (st == TS_OK && o->sw.warmup > 0) st = ts_coll_allreduce(x->world, &once, &agreed, 1, TS_F64, TS_COLL_MAX);
  int reps = agreed > 0 && agreed < MIN_RUN_S ? (int)(MIN_RUN_S / agreed) + 1 : 1;
  if (reps > MAX_REPS) reps = MAX_REPS;
  for (int i = 0; i < o->sw.iters && st == TS_OK; i++) {
    st = ts_coll_barrier(x->world);
    double t0 = ts_coll_now();
    for (int r = 0; r < reps && st == TS_OK && active; r++) st = run_once(x, sub, p, npairs);
    x->times[i] = active ? (ts_coll_now() - t0) / reps : 0;
  }
  if (st == TS_OK) st = ts_coll_allreduce(x->world, x->times, x->times, (size_t)o->sw.iters, TS_F64, TS_COLL_MAX);
  if (st) return st;
  *median = ts_bench_median(x->times, o->sw.iters);
  return TS_OK;
}

/* "all-reduce rail-aligned 4x2 f32 1M: 123.4 us, 8.500 GB/s" */
static void describe(const point_t *p, double seconds, char *buf, size_t n) {
  char sz[32];
  ts_bench_format_bytes(p->tensor_bytes, sz, sizeof sz);
  snprintf(buf, n, "%s %s %lldx%lld %s %s: %.1f us, %.3f GB/s", ts_coll_kind_name(p->kind),
           ts_transfer_scheme_name(p->scheme), (long long)p->groups, (long long)p->devices, ts_elem_name(p->type), sz,
           seconds * 1e6, seconds > 0 ? (double)p->tensor_bytes / seconds / 1e9 : 0);
}

/* The table entry of a point measured at `seconds` per operation. */
static void record(ts_bench_pt_coll_opts_t *o, const point_t *p, double seconds) {
  int xt = ts_bench_xla_type(p->type);
  double thr = seconds > 0 ? (double)p->tensor_bytes / seconds : 0;
  char what[200];
  describe(p, seconds, what, sizeof what);
  if (thr < 1) {
    /* XLA skips a point that timed at 0 ("too small"); so do we. */
    fprintf(stderr, PT_CMD ": note: %s: too fast to time, not recorded\n", what);
    return;
  }
  /* What identifies the configuration: re-measuring it replaces the entry. */
  char desc[160], fp[33];
  snprintf(desc, sizeof desc, "tessera collective %s %s %lld %lld %d %lld", ts_coll_kind_name(p->kind),
           ts_transfer_scheme_name(p->scheme), (long long)p->groups, (long long)p->devices, xt,
           (long long)p->tensor_bytes);
  ts_bench_fingerprint(desc, fp);
  ts_coll_measurement_t m = {
      .kind = p->kind,
      .scheme = p->scheme,
      .element_type = xt,
      .tensor_bytes = p->tensor_bytes,
      .devices_per_group = p->devices,
      .num_groups = p->groups,
      .throughput_bytes_per_sec = (int64_t)thr,
      .fingerprint = fp,
  };
  ts_diag_t diag = {0};
  if (ts_perf_table_add_collective(o->table, o->sw.device_key, &m, &diag) < 0)
    fprintf(stderr, PT_CMD ": warning: %s: not recorded: %s", what, diag.text ? diag.text : "\n");
  ts_diag_free(&diag);
}

static int sweep(rank_t *x, bool mpi) {
  ts_bench_pt_coll_opts_t *o = x->o;
  bool root = x->rank == 0;
  /* Every rank must sweep the same sizes: agree on the smallest cap. */
  double free_b;
  int64_t maxb = fitting_max(o, local_ranks(x->W, mpi), &free_b), agreed = maxb;
  ts_status_t st = ts_coll_allreduce(x->world, &maxb, &agreed, 1, TS_S64, TS_COLL_MIN);
  if (st) {
    if (root) fprintf(stderr, PT_CMD ": error: cannot agree on the sizes: %s\n", ts_status_string(st));
    return ts_status_exit_code(st);
  }
  maxb = agreed;
  char want[32], got[32], fb[32];
  ts_bench_format_bytes(o->minb, want, sizeof want);
  ts_bench_format_bytes((int64_t)(free_b / 1048576) * 1048576, fb, sizeof fb);
  if (maxb == 0) {
    if (root)
      fprintf(stderr, PT_CMD ": error: not even -b %s fits in free memory (two buffers per rank, %d ranks here, %s free)\n",
              want, local_ranks(x->W, mpi), fb);
    return 3;
  }
  int64_t last = o->minb;
  for (int64_t S = o->minb; S <= o->maxb; S *= o->factor) last = S;
  if (maxb < last && root) {
    ts_bench_format_bytes(last, want, sizeof want);
    ts_bench_format_bytes(maxb, got, sizeof got);
    fprintf(stderr,
            PT_CMD ": note: the largest size is capped at %s (instead of %s) by free memory: two %s buffers for each "
                   "of %d ranks here must fit in 80%% of %s\n",
            got, want, want, local_ranks(x->W, mpi), fb);
  }

  size_t npts = plan(o, x->W, maxb, NULL);
  point_t *pts = ts_calloc(npts ? npts : 1, sizeof *pts);
  x->times = ts_calloc((size_t)o->sw.iters, sizeof *x->times);
  x->pairs = ts_calloc((size_t)x->W, sizeof *x->pairs);
  double *rounds = ts_calloc((npts ? npts : 1) * (size_t)o->rounds, sizeof *rounds);
  int ok = pts && x->times && x->pairs && rounds;
  if (ok && ts_coll_alloc(x->world, (size_t)maxb + 4096, (void **)&x->sbuf) != TS_OK) ok = 0;
  if (ok && ts_coll_alloc(x->world, (size_t)maxb + 4096, (void **)&x->dbuf) != TS_OK) ok = 0;
  int all_ok = ok;
  st = ts_coll_allreduce(x->world, &ok, &all_ok, 1, TS_S32, TS_COLL_MIN);
  int rc = 0;
  if (st || !all_ok) {
    if (root) fprintf(stderr, PT_CMD ": error: cannot allocate two buffers of %lld bytes per rank\n", (long long)maxb);
    rc = st ? ts_status_exit_code(st) : 4;
    goto done;
  }
  plan(o, x->W, maxb, pts);
  /* First touch outside every timing; zeros are a valid value of every type. */
  memset(x->sbuf, 0, (size_t)maxb + 4096);
  memset(x->dbuf, 0, (size_t)maxb + 4096);

  if (root) {
    double work = 0;
    for (size_t i = 0; i < npts; i++) work += point_work(o, &pts[i]);
    printf("# tessera perf-table collectives: %d ranks (%s), device '%s', %zu points, %d runs after %d warm-up, "
           "%d round%s\n",
           x->W, ts_coll_backend_name(ts_coll_comm_backend(x->world)), o->sw.device_key, npts, o->sw.iters, o->sw.warmup,
           o->rounds, o->rounds == 1 ? "" : "s");
    fflush(stdout);
    pt_progress_start(&x->progress, o->sw.progress, npts * (size_t)o->rounds, work * o->rounds);
  }
  /* Rounds sweep every point again, so that a burst of load from elsewhere
   * (which spoils all the runs of the points it overlaps) is voted out by
   * the point's median over rounds. */
  for (int round = 0; round < o->rounds && rc == 0; round++) {
    ts_coll_comm_t *sub = NULL;
    int64_t sub_d = 0;
    ts_transfer_scheme_t sub_layout = TS_SCHEME_CONTIGUOUS;
    for (size_t i = 0; i < npts && rc == 0; i++) {
      const point_t *p = &pts[i];
      ts_transfer_scheme_t layout = is_grouped_scheme(p->scheme) ? p->scheme : TS_SCHEME_CONTIGUOUS;
      if (!sub || sub_d != p->devices || sub_layout != layout) {
        ts_coll_comm_destroy(sub);
        sub = NULL;
        st = split(x, p->devices, layout, &sub);
        if (st) {
          if (root) fprintf(stderr, PT_CMD ": error: cannot form groups of %lld ranks: %s\n", (long long)p->devices,
                            ts_status_string(st));
          rc = ts_status_exit_code(st);
          break;
        }
        sub_d = p->devices, sub_layout = layout;
      }
      double median = 0;
      st = measure(x, sub, p, &median);
      if (st) {
        /* Abort the world so that no rank waits for this one until its deadline. */
        ts_coll_comm_abort(x->world, st);
        if (root) fprintf(stderr, PT_CMD ": error: %s over %lld devices failed: %s\n", ts_coll_kind_name(p->kind),
                          (long long)p->devices, ts_status_string(st));
        rc = ts_status_exit_code(st);
        break;
      }
      if (root) {
        char what[240];
        describe(p, median, what, sizeof what);
        if (o->rounds > 1) {
          size_t l = strlen(what);
          snprintf(what + l, sizeof what - l, " (round %d/%d)", round + 1, o->rounds);
        }
        rounds[i * (size_t)o->rounds + (size_t)round] = median;
        pt_progress_step(&x->progress, point_work(o, p), what);
      }
    }
    ts_coll_comm_destroy(sub);
  }
  if (root && rc == 0) {
    pt_progress_finish(&x->progress);
    for (size_t i = 0; i < npts; i++) record(o, &pts[i], ts_bench_median(rounds + i * (size_t)o->rounds, o->rounds));
  }
done:
  ts_coll_free(x->world, x->sbuf);
  ts_coll_free(x->world, x->dbuf);
  ts_free(pts);
  ts_free(rounds);
  ts_free(x->times);
  ts_free(x->pairs);
  return rc;
}

static int rank_main(void *arg, ts_coll_comm_t *comm, bool mpi) {
  ts_bench_pt_coll_opts_t *o = arg;
  rank_t x = {.o = o, .world = comm, .W = ts_coll_comm_size(comm), .rank = ts_coll_comm_rank(comm)};
  if (x.rank == 0) o->root = true;
  /* Under mpirun the group sizes are checked here, where the world's size is
   * first known: every rank finds the same and exits alike. */
  for (int i = 0; mpi && i < o->ngroup_sizes; i++)
    if (x.W % o->group_sizes[i]) {
      if (x.rank == 0)
        ts_bench_pt_error("group size %lld does not divide the world of %d ranks", (long long)o->group_sizes[i], x.W);
      return 2;
    }
  return sweep(&x, mpi);
}

int ts_bench_pt_collectives(ts_bench_pt_coll_opts_t *o, int *argc, char ***argv) {
  int rc;
  if ((rc = pt_output_open(&o->sw.out, TS_PERF_TABLE_COLLECTIVES))) return rc;
  ts_status_t st = ts_perf_table_create(TS_PERF_TABLE_COLLECTIVES, &o->table);
  if (st) {
    pt_output_close(&o->sw.out);
    return ts_bench_pt_error("out of memory");
  }
  if (o->backend == TS_COLL_BACKEND_THREADS) rc = ts_bench_world_threads(PT_CMD, o->devices, rank_main, o);
  else rc = ts_bench_world_mpi(PT_CMD, o->backend, argc, argv, rank_main, o);
  if (rc == 0 && o->root) rc = pt_output_write(&o->sw.out, o->table, o->sw.device_key);
  ts_perf_table_destroy(o->table);
  o->table = NULL;
  pt_output_close(&o->sw.out);
  return rc;
}
