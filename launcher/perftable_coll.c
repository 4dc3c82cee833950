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
#include "coll_world.h"
#include "perftable_internal.h"
#include "ts_coll.h"
#include "ts_env.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_GROUP_SIZES 16
#define MAX_TYPES 16
#define MAX_RANKS 1024

typedef struct {
  int64_t minb, maxb, factor;
  int rounds;
  bool kinds[TS_COST_COLL_COUNT];
  int64_t group_sizes[MAX_GROUP_SIZES];
  int ngroup_sizes;
  bool group_sizes_given;
  bool schemes[TS_SCHEME_COUNT];
  ts_elem_t types[MAX_TYPES];
  int ntypes;
  ts_coll_backend_t backend;
  int devices; /* in-process world; 0: the least common multiple of the group sizes */
  pt_sweep_flags_t sw;
  /* filled by the run */
  ts_perf_table_t *table; /* world rank 0 adds to it */
  bool root;              /* this process held world rank 0 */
} opts_t;

/* One point of the sweep. Every rank builds the same list. */
typedef struct {
  ts_coll_kind_t kind;
  ts_transfer_scheme_t scheme;
  int64_t devices, groups;
  ts_elem_t type;
  size_t count; /* elements per rank, as the post takes them */
  int64_t tensor_bytes;
} point_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera perf-table collectives [-b MIN] [-e MAX] [-f FACTOR] [-n RUNS] [-w WARMUP] [--rounds N]\n"
          "                                      [--collectives=LIST] [--group-sizes=LIST] [--schemes=LIST]\n"
          "                                      [--types=LIST] [--backend=threads|mpi|ucx] [--devices N]\n"
          "                                      [--device-key=KEY] [--progress=MODE] [--no-merge] [-o TABLE]\n"
          "\n"
          "Times each collective at each tensor size (the full buffer: the all-gather\n"
          "output, the reduce-scatter input, the operand of the others), devices per\n"
          "group and transfer scheme, and writes the throughput (bytes / median time)\n"
          "as XLA's collective performance table (xla.gpu.DeviceHloInstructionProfiles).\n"
          "Under mpirun the groups are subsets of the world; otherwise the ranks are\n"
          "threads of this process.\n"
          "\n"
          "  -b, --minbytes SIZE      smallest tensor size (K/M/G suffixes; default 1K)\n"
          "  -e, --maxbytes SIZE      largest (default 2G), capped so that two buffers per\n"
          "                           rank fit in 80%% of free memory (a note says so)\n"
          "  -f, --stepfactor F       multiply the size by F each step (default 2)\n"
          "  -n, --runs N             timed runs per point; the median counts (default 20);\n"
          "                           a run repeats a short collective back to back until it\n"
          "                           lasts about 1 ms, and counts the time per operation\n"
          "  -w, --warmup N           untimed runs first (default 5; the last one sizes the\n"
          "                           repetitions)\n"
          "  --rounds N               sweep everything N times and keep each point's median\n"
          "                           over the rounds (default 1): steadier on a shared host\n"
          "  --collectives=LIST       all-reduce, all-gather, reduce-scatter, all-to-all,\n"
          "                           collective-permute (default: all)\n"
          "  --group-sizes=LIST       devices per group (default 2,4,8; under mpirun those\n"
          "                           that divide the world)\n"
          "  --schemes=LIST           non-rail-aligned (contiguous groups), rail-aligned\n"
          "                           (strided groups), and the permute patterns one-way,\n"
          "                           two-way-all-mutual, two-way-has-non-mutual (default:\n"
          "                           all; a list without groups' or without permute's\n"
          "                           schemes keeps all of those)\n"
          "  --types=LIST             element types, HLO spelling (default f32)\n"
          "  --backend=NAME           threads, or mpi / ucx under mpirun (default: mpi under\n"
          "                           mpirun, else threads)\n"
          "  --devices N              ranks of an in-process run (default: the least common\n"
          "                           multiple of the group sizes)\n"
          "  --device-key=KEY         the table's device key (default host:<cpu model>)\n"
          "  --progress=MODE          auto (a bar on a terminal, else lines), bar, lines, none\n"
          "  --no-merge               replace TABLE instead of merging into it\n"
          "  -o, --output TABLE       .txtpb/.pbtxt (text) or .pb (binary); the plot goes to\n"
          "                           TABLE's name with .svg (default: text on stdout)\n"
          "  -h, --help               this help\n"
          "\n"
          "TESSERA_PERF_TABLE_FREE_BYTES overrides the free memory the cap assumes.\n");
}

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
static void add_points(const opts_t *o, int64_t maxb, ts_coll_kind_t k, ts_transfer_scheme_t s, int64_t D, int64_t G,
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
static size_t plan(const opts_t *o, int W, int64_t maxb, point_t *pts) {
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
static double point_work(const opts_t *o, const point_t *p) {
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
static int64_t fitting_max(const opts_t *o, int local, double *free_out) {
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
  opts_t *o;
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
  const opts_t *o = x->o;
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
  *median = pt_median(x->times, o->sw.iters);
  return TS_OK;
}

/* "all-reduce rail-aligned 4x2 f32 1M: 123.4 us, 8.500 GB/s" */
static void describe(const point_t *p, double seconds, char *buf, size_t n) {
  char sz[32];
  pt_format_bytes(p->tensor_bytes, sz, sizeof sz);
  snprintf(buf, n, "%s %s %lldx%lld %s %s: %.1f us, %.3f GB/s", ts_coll_kind_name(p->kind),
           ts_transfer_scheme_name(p->scheme), (long long)p->groups, (long long)p->devices, ts_elem_name(p->type), sz,
           seconds * 1e6, seconds > 0 ? (double)p->tensor_bytes / seconds / 1e9 : 0);
}

/* The table entry of a point measured at `seconds` per operation. */
static void record(opts_t *o, const point_t *p, double seconds) {
  int xt = pt_xla_type(p->type);
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
  pt_fingerprint(desc, fp);
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
  opts_t *o = x->o;
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
  pt_format_bytes(o->minb, want, sizeof want);
  pt_format_bytes((int64_t)(free_b / 1048576) * 1048576, fb, sizeof fb);
  if (maxb == 0) {
    if (root)
      fprintf(stderr, PT_CMD ": error: not even -b %s fits in free memory (two buffers per rank, %d ranks here, %s free)\n",
              want, local_ranks(x->W, mpi), fb);
    return 3;
  }
  int64_t last = o->minb;
  for (int64_t S = o->minb; S <= o->maxb; S *= o->factor) last = S;
  if (maxb < last && root) {
    pt_format_bytes(last, want, sizeof want);
    pt_format_bytes(maxb, got, sizeof got);
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
    for (size_t i = 0; i < npts; i++) record(o, &pts[i], pt_median(rounds + i * (size_t)o->rounds, o->rounds));
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
  opts_t *o = arg;
  rank_t x = {.o = o, .world = comm, .W = ts_coll_comm_size(comm), .rank = ts_coll_comm_rank(comm)};
  if (x.rank == 0) o->root = true;
  /* Under mpirun the group sizes are checked here, where the world's size is
   * first known: every rank finds the same and exits alike. */
  for (int i = 0; mpi && i < o->ngroup_sizes; i++)
    if (x.W % o->group_sizes[i]) {
      if (x.rank == 0)
        pt_bad("group size %lld does not divide the world of %d ranks", (long long)o->group_sizes[i], x.W);
      return 2;
    }
  return sweep(&x, mpi);
}

/* ---- flags ---------------------------------------------------------------- */

static int parse_kinds(opts_t *o, const char *list) {
  char *copy = ts_strdup(list), *save = NULL;
  if (!copy) return 4;
  int rc = 0, n = 0;
  for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save), n++) {
    ts_coll_kind_t k;
    /* exact names only (the cost model also takes the "-start" forms) */
    if (!ts_cost_coll_from_name(t, &k) || strcmp(t, ts_coll_kind_name(k)) != 0)
      rc = pt_bad("unknown collective '%s' (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute)",
                  t);
    else
      o->kinds[k] = true;
  }
  ts_free(copy);
  if (rc == 0 && n == 0) rc = pt_bad("--collectives wants a list of collectives");
  return rc;
}

static int parse_schemes(opts_t *o, const char *list) {
  char *copy = ts_strdup(list), *save = NULL;
  if (!copy) return 4;
  int rc = 0;
  bool any_grouped = false, any_pattern = false;
  for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
    ts_transfer_scheme_t s;
    if (strcmp(t, "contiguous") == 0) s = TS_SCHEME_CONTIGUOUS;
    else if (strcmp(t, "strided") == 0) s = TS_SCHEME_STRIDED;
    else if (!ts_transfer_scheme_from_name(t, &s)) {
      rc = pt_bad("unknown scheme '%s' (non-rail-aligned or contiguous, rail-aligned or strided, one-way, "
                  "two-way-all-mutual, two-way-has-non-mutual)",
                  t);
      break;
    }
    o->schemes[s] = true;
    if (is_grouped_scheme(s)) any_grouped = true;
    else any_pattern = true;
  }
  ts_free(copy);
  if (rc) return rc;
  if (!any_grouped && !any_pattern) return pt_bad("--schemes wants a list of schemes");
  for (int s = 0; s < TS_SCHEME_COUNT; s++)
    if (is_grouped_scheme((ts_transfer_scheme_t)s) ? !any_grouped : !any_pattern) o->schemes[s] = true;
  return 0;
}

static bool type_ok(ts_elem_t t) {
  switch (t) {
  case TS_F64: case TS_S8: case TS_S16: case TS_S32: case TS_S64:
  case TS_U8: case TS_U16: case TS_U32: case TS_U64: return true;
  default: return ts_elem_is_storage_float(t) && ts_elem_storage_bytes(t) >= 1;
  }
}

static int parse_types(opts_t *o, const char *list) {
  char *copy = ts_strdup(list), *save = NULL;
  if (!copy) return 4;
  int rc = 0;
  o->ntypes = 0;
  for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
    ts_elem_t e;
    if (!ts_elem_from_name(t, strlen(t), &e) || !type_ok(e) || pt_xla_type(e) == 0)
      rc = pt_bad("unknown or unsupported type '%s' (f32, f64, bf16, f16, f8e4m3fn, f8e5m2, s8..s64, u8..u64)", t);
    else if (o->ntypes == MAX_TYPES) rc = pt_bad("--types lists more than %d types", MAX_TYPES);
    else o->types[o->ntypes++] = e;
  }
  if (rc == 0 && o->ntypes == 0) rc = pt_bad("--types wants a list of element types");
  ts_free(copy);
  return rc;
}

static int64_t gcd(int64_t a, int64_t b) { return b ? gcd(b, a % b) : a; }

int pt_cmd_collectives(int argc, char **argv) {
  static const struct option opts[] = {
      {"minbytes", required_argument, NULL, 'b'},   {"maxbytes", required_argument, NULL, 'e'},
      {"stepfactor", required_argument, NULL, 'f'}, {"runs", required_argument, NULL, 'n'},
      {"warmup", required_argument, NULL, 'w'},     {"collectives", required_argument, NULL, 'C'},
      {"group-sizes", required_argument, NULL, 'G'}, {"schemes", required_argument, NULL, 'S'},
      {"types", required_argument, NULL, 'T'},      {"backend", required_argument, NULL, 'B'},
      {"devices", required_argument, NULL, 'D'},    {"device-key", required_argument, NULL, PT_OPT_DEVICE_KEY},
      {"progress", required_argument, NULL, PT_OPT_PROGRESS},   {"no-merge", no_argument, NULL, PT_OPT_NO_MERGE},
      {"output", required_argument, NULL, 'o'},     {"rounds", required_argument, NULL, 'R'},
      {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0},
  };
  opts_t o = {.minb = 1024, .maxb = (int64_t)2 << 30, .factor = 2, .rounds = 1, .types = {TS_F32}, .ntypes = 1,
              .sw = {.iters = 20, .warmup = 5, .out = {.merge = true}}};
  bool kinds_given = false, schemes_given = false, backend_given = false, devices_given = false;
  ts_costmodel_host_device_key(o.sw.device_key, sizeof o.sw.device_key);
  int c, rc;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":b:e:f:n:w:o:h", opts, NULL)) != -1) {
    int64_t v;
    int n;
    int shared = pt_sweep_flag(c, optarg, &o.sw);
    if (shared == 1) continue;
    if (shared) return shared;
    switch (c) {
    case 'b':
      if (!ts_cli_parse_size(optarg, &o.minb)) return pt_bad("-b wants a positive size such as 4K, got '%s'", optarg);
      break;
    case 'e':
      if (!ts_cli_parse_size(optarg, &o.maxb)) return pt_bad("-e wants a positive size up to 8G, got '%s'", optarg);
      break;
    case 'f':
      if (!pt_parse_int_list(optarg, false, &v, 1, &n) || v < 2 || v > 1024)
        return pt_bad("-f wants an integer factor from 2 to 1024, got '%s'", optarg);
      o.factor = v;
      break;
    case 'R':
      if (!pt_parse_int_list(optarg, false, &v, 1, &n) || v > 100)
        return pt_bad("--rounds wants an integer from 1 to 100, got '%s'", optarg);
      o.rounds = (int)v;
      break;
    case 'C':
      if ((rc = parse_kinds(&o, optarg))) return rc;
      kinds_given = true;
      break;
    case 'G':
      if (!pt_parse_int_list(optarg, false, o.group_sizes, MAX_GROUP_SIZES, &o.ngroup_sizes))
        return pt_bad("--group-sizes wants a list of positive integers such as 2,4,8, got '%s'", optarg);
      for (int i = 0; i < o.ngroup_sizes; i++)
        if (o.group_sizes[i] < 2 || o.group_sizes[i] > MAX_RANKS)
          return pt_bad("a group size must be from 2 to %d, got %lld", MAX_RANKS, (long long)o.group_sizes[i]);
      o.group_sizes_given = true;
      break;
    case 'S':
      if ((rc = parse_schemes(&o, optarg))) return rc;
      schemes_given = true;
      break;
    case 'T':
      if ((rc = parse_types(&o, optarg))) return rc;
      break;
    case 'B':
      if (!ts_coll_backend_from_name(optarg, &o.backend) || o.backend == TS_COLL_BACKEND_NCCL)
        return pt_bad("unknown backend '%s' (backends: threads, mpi, ucx)", optarg);
      backend_given = true;
      break;
    case 'D':
      if (!pt_parse_int_list(optarg, false, &v, 1, &n) || v < 2 || v > MAX_RANKS)
        return pt_bad("--devices wants an integer from 2 to %d, got '%s'", MAX_RANKS, optarg);
      o.devices = (int)v;
      devices_given = true;
      break;
    case 'h': usage(stdout); return 0;
    case ':': return pt_bad("option '%s' needs a value", argv[optind - 1]);
    default: return pt_bad("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) return pt_bad("unexpected argument '%s'", argv[optind]);
  if (o.minb > o.maxb) return pt_bad("-b is larger than -e: no size to sweep");
  if (!kinds_given)
    for (int k = 0; k < TS_COST_COLL_COUNT; k++) o.kinds[k] = true;
  if (!schemes_given)
    for (int s = 0; s < TS_SCHEME_COUNT; s++) o.schemes[s] = true;

  bool under_mpirun = ts_coll_world_under_mpirun();
  if (!backend_given) o.backend = under_mpirun && !devices_given ? TS_COLL_BACKEND_MPI : TS_COLL_BACKEND_THREADS;
  bool threads = o.backend == TS_COLL_BACKEND_THREADS;
  if (!threads && devices_given) return pt_bad("--devices is for in-process runs (--backend=threads)");
  const char *mpi_size = getenv("OMPI_COMM_WORLD_SIZE");
  if (threads && mpi_size && atoi(mpi_size) > 1)
    return pt_bad("in-process ranks under mpirun: every process would sweep and write the table (drop "
                  "--backend=threads/--devices, or run without mpirun)");
  if (!o.group_sizes_given) {
    static const int64_t def[] = {2, 4, 8};
    int world = 0;
    if (!threads) {
      const char *s = getenv("OMPI_COMM_WORLD_SIZE");
      if (!s) s = getenv("PMI_SIZE");
      world = s ? atoi(s) : 0;
    } else if (devices_given) {
      world = o.devices;
    }
    /* Default sizes that do not fit the world are left out, with a note. */
    for (int i = 0; i < 3; i++)
      if (world <= 0 || world % def[i] == 0) o.group_sizes[o.ngroup_sizes++] = def[i];
    if (o.ngroup_sizes < 3 && world > 0) {
      if (o.ngroup_sizes == 0) return pt_bad("none of the default group sizes 2,4,8 divides the world of %d ranks: "
                                             "give --group-sizes", world);
      bool first = !under_mpirun || getenv("OMPI_COMM_WORLD_RANK") == NULL || atoi(getenv("OMPI_COMM_WORLD_RANK")) == 0;
      if (first) {
        fprintf(stderr, PT_CMD ": note: group sizes");
        for (int i = 0; i < o.ngroup_sizes; i++) fprintf(stderr, "%s%lld", i ? "," : " ", (long long)o.group_sizes[i]);
        fprintf(stderr, " (of the default 2,4,8: those that divide the world of %d ranks)\n", world);
      }
    }
  }
  if (threads) {
    int64_t lcm = 1;
    for (int i = 0; i < o.ngroup_sizes; i++) {
      lcm = lcm / gcd(lcm, o.group_sizes[i]) * o.group_sizes[i];
      if (lcm > MAX_RANKS) return pt_bad("the group sizes need more than %d in-process ranks", MAX_RANKS);
    }
    if (!devices_given) o.devices = (int)lcm;
    for (int i = 0; i < o.ngroup_sizes; i++)
      if (o.devices % o.group_sizes[i])
        return pt_bad("group size %lld does not divide --devices %d", (long long)o.group_sizes[i], o.devices);
  }
  if ((rc = pt_output_open(&o.sw.out, TS_PERF_TABLE_COLLECTIVES))) return rc;
  ts_status_t st = ts_perf_table_create(TS_PERF_TABLE_COLLECTIVES, &o.table);
  if (st) {
    pt_output_close(&o.sw.out);
    return pt_bad("out of memory");
  }
  if (threads) {
    rc = ts_coll_world_threads(PT_CMD, o.devices, rank_main, &o);
  } else {
    int sub_argc = argc;
    rc = ts_coll_world_mpi(PT_CMD, o.backend, &sub_argc, &argv, rank_main, &o);
  }
  if (rc == 0 && o.root) rc = pt_output_write(&o.sw.out, o.table, o.sw.device_key);
  ts_perf_table_destroy(o.table);
  pt_output_close(&o.sw.out);
  return rc;
}
