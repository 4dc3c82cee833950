/* tessera perf-table: the flags of its subcommands (collectives, gemm,
 * check); the collector that measures, writes and scores the tables is
 * bench/ (ts_bench.h). */
#include "ts_bench.h"
#include "ts_launcher.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define PT_CMD "tessera perf-table"

/* getopt codes of the long-only flags both sweeps take (the others are
 * their letters). */
enum { PT_OPT_DEVICE_KEY = 0x100, PT_OPT_PROGRESS, PT_OPT_NO_MERGE };

static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera perf-table collectives [FLAGS] [-o TABLE]\n"
          "       tessera perf-table gemm [FLAGS] [-o TABLE]\n"
          "       tessera perf-table check [FLAGS] TABLE...\n"
          "\n"
          "Measures collectives or GEMMs on this machine and writes a performance\n"
          "table in XLA's format (text .txtpb/.pbtxt, binary .pb), merged into the\n"
          "table already there, with an SVG plot next to it; `check` prints the\n"
          "interpolator's leave-one-out accuracy on a table. Run\n"
          "'tessera perf-table SUBCOMMAND --help' for its flags.\n");
}

static bool parse_size_item(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || v <= 0) return false;
  int64_t m = 1;
  if (*end == 'K' || *end == 'k') m = 1024, end++;
  else if (*end == 'M' || *end == 'm') m = 1024 * 1024, end++;
  else if (*end == 'G' || *end == 'g') m = 1024 * 1024 * 1024, end++;
  if (*end || v > INT64_MAX / m / 16) return false;
  *out = v * m;
  return true;
}

static bool pt_parse_int_list(const char *s, bool sizes, int64_t *out, int max, int *n) {
  *n = 0;
  const char *p = s;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char item[32];
    if (len == 0 || len >= sizeof item || *n == max) return false;
    memcpy(item, p, len);
    item[len] = 0;
    int64_t v;
    if (sizes) {
      if (!parse_size_item(item, &v)) return false;
    } else {
      char *end;
      errno = 0;
      long long x = strtoll(item, &end, 10);
      if (errno || *end || x <= 0) return false;
      v = x;
    }
    out[(*n)++] = v;
    if (!comma) return true;
    p = comma + 1;
  }
}

static int pt_sweep_flag(int c, const char *arg, ts_bench_pt_sweep_t *f) {
  int64_t v;
  int n;
  switch (c) {
  case 'n':
    if (!pt_parse_int_list(arg, false, &v, 1, &n) || v > 100000)
      return ts_bench_pt_error("-n wants a positive integer, got '%s'", arg);
    f->iters = (int)v;
    return 1;
  case 'w':
    if (strcmp(arg, "0") == 0) f->warmup = 0;
    else if (!pt_parse_int_list(arg, false, &v, 1, &n) || v > 100000)
      return ts_bench_pt_error("-w wants an integer >= 0, got '%s'", arg);
    else f->warmup = (int)v;
    return 1;
  case PT_OPT_DEVICE_KEY:
    if (!*arg || strlen(arg) >= sizeof f->device_key) return ts_bench_pt_error("--device-key wants a non-empty key");
    snprintf(f->device_key, sizeof f->device_key, "%s", arg);
    return 1;
  case PT_OPT_PROGRESS:
    if (!ts_bench_progress_mode_from_name(arg, &f->progress))
      return ts_bench_pt_error("unknown progress mode '%s' (auto, bar, lines, none)", arg);
    return 1;
  case PT_OPT_NO_MERGE: f->out.merge = false; return 1;
  case 'o': f->out.path = arg; return 1;
  default: return 0;
  }
}

/* ---- collectives ------------------------------------------------------------ */

static bool is_grouped_scheme(ts_transfer_scheme_t s) { return s == TS_SCHEME_CONTIGUOUS || s == TS_SCHEME_STRIDED; }

static void coll_usage(FILE *f) {
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


static int parse_kinds(ts_bench_pt_coll_opts_t *o, const char *list) {
  char *copy = ts_strdup(list), *save = NULL;
  if (!copy) return 4;
  int rc = 0, n = 0;
  for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save), n++) {
    ts_coll_kind_t k;
    /* exact names only (the cost model also takes the "-start" forms) */
    if (!ts_cost_coll_from_name(t, &k) || strcmp(t, ts_coll_kind_name(k)) != 0)
      rc = ts_bench_pt_error("unknown collective '%s' (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute)",
                  t);
    else
      o->kinds[k] = true;
  }
  ts_free(copy);
  if (rc == 0 && n == 0) rc = ts_bench_pt_error("--collectives wants a list of collectives");
  return rc;
}

static int parse_schemes(ts_bench_pt_coll_opts_t *o, const char *list) {
  char *copy = ts_strdup(list), *save = NULL;
  if (!copy) return 4;
  int rc = 0;
  bool any_grouped = false, any_pattern = false;
  for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
    ts_transfer_scheme_t s;
    if (strcmp(t, "contiguous") == 0) s = TS_SCHEME_CONTIGUOUS;
    else if (strcmp(t, "strided") == 0) s = TS_SCHEME_STRIDED;
    else if (!ts_transfer_scheme_from_name(t, &s)) {
      rc = ts_bench_pt_error("unknown scheme '%s' (non-rail-aligned or contiguous, rail-aligned or strided, one-way, "
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
  if (!any_grouped && !any_pattern) return ts_bench_pt_error("--schemes wants a list of schemes");
  for (int s = 0; s < TS_SCHEME_COUNT; s++)
    if (is_grouped_scheme((ts_transfer_scheme_t)s) ? !any_grouped : !any_pattern) o->schemes[s] = true;
  return 0;
}

static int coll_parse_types(ts_bench_pt_coll_opts_t *o, const char *list) {
  char *copy = ts_strdup(list), *save = NULL;
  if (!copy) return 4;
  int rc = 0;
  o->ntypes = 0;
  for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
    ts_elem_t e;
    if (!ts_elem_from_name(t, strlen(t), &e) || !ts_bench_coll_type_ok(e) || ts_bench_xla_type(e) == 0)
      rc = ts_bench_pt_error("unknown or unsupported type '%s' (f32, f64, bf16, f16, f8e4m3fn, f8e5m2, s8..s64, u8..u64)", t);
    else if (o->ntypes == TS_BENCH_PT_MAX_TYPES) rc = ts_bench_pt_error("--types lists more than %d types", TS_BENCH_PT_MAX_TYPES);
    else o->types[o->ntypes++] = e;
  }
  if (rc == 0 && o->ntypes == 0) rc = ts_bench_pt_error("--types wants a list of element types");
  ts_free(copy);
  return rc;
}

static int64_t gcd(int64_t a, int64_t b) { return b ? gcd(b, a % b) : a; }

static int cmd_collectives(int argc, char **argv) {
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
  ts_bench_pt_coll_opts_t o = {.minb = 1024, .maxb = (int64_t)2 << 30, .factor = 2, .rounds = 1, .types = {TS_F32}, .ntypes = 1,
              .sw = {.iters = 20, .warmup = 5, .out = {.merge = true}}};
  bool kinds_given = false, schemes_given = false, backend_given = false, devices_given = false;
  bool group_sizes_given = false;
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
      if (!ts_bench_parse_size(optarg, &o.minb)) return ts_bench_pt_error("-b wants a positive size such as 4K, got '%s'", optarg);
      break;
    case 'e':
      if (!ts_bench_parse_size(optarg, &o.maxb)) return ts_bench_pt_error("-e wants a positive size up to 8G, got '%s'", optarg);
      break;
    case 'f':
      if (!pt_parse_int_list(optarg, false, &v, 1, &n) || v < 2 || v > 1024)
        return ts_bench_pt_error("-f wants an integer factor from 2 to 1024, got '%s'", optarg);
      o.factor = v;
      break;
    case 'R':
      if (!pt_parse_int_list(optarg, false, &v, 1, &n) || v > 100)
        return ts_bench_pt_error("--rounds wants an integer from 1 to 100, got '%s'", optarg);
      o.rounds = (int)v;
      break;
    case 'C':
      if ((rc = parse_kinds(&o, optarg))) return rc;
      kinds_given = true;
      break;
    case 'G':
      if (!pt_parse_int_list(optarg, false, o.group_sizes, TS_BENCH_PT_MAX_GROUP_SIZES, &o.ngroup_sizes))
        return ts_bench_pt_error("--group-sizes wants a list of positive integers such as 2,4,8, got '%s'", optarg);
      for (int i = 0; i < o.ngroup_sizes; i++)
        if (o.group_sizes[i] < 2 || o.group_sizes[i] > TS_BENCH_PT_MAX_RANKS)
          return ts_bench_pt_error("a group size must be from 2 to %d, got %lld", TS_BENCH_PT_MAX_RANKS, (long long)o.group_sizes[i]);
      group_sizes_given = true;
      break;
    case 'S':
      if ((rc = parse_schemes(&o, optarg))) return rc;
      schemes_given = true;
      break;
    case 'T':
      if ((rc = coll_parse_types(&o, optarg))) return rc;
      break;
    case 'B':
      if (!ts_coll_backend_from_name(optarg, &o.backend) || o.backend == TS_COLL_BACKEND_NCCL)
        return ts_bench_pt_error("unknown backend '%s' (backends: threads, mpi, ucx)", optarg);
      backend_given = true;
      break;
    case 'D':
      if (!pt_parse_int_list(optarg, false, &v, 1, &n) || v < 2 || v > TS_BENCH_PT_MAX_RANKS)
        return ts_bench_pt_error("--devices wants an integer from 2 to %d, got '%s'", TS_BENCH_PT_MAX_RANKS, optarg);
      o.devices = (int)v;
      devices_given = true;
      break;
    case 'h': coll_usage(stdout); return 0;
    case ':': return ts_bench_pt_error("option '%s' needs a value", argv[optind - 1]);
    default: return ts_bench_pt_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) return ts_bench_pt_error("unexpected argument '%s'", argv[optind]);
  if (o.minb > o.maxb) return ts_bench_pt_error("-b is larger than -e: no size to sweep");
  if (!kinds_given)
    for (int k = 0; k < TS_COST_COLL_COUNT; k++) o.kinds[k] = true;
  if (!schemes_given)
    for (int s = 0; s < TS_SCHEME_COUNT; s++) o.schemes[s] = true;

  bool under_mpirun = ts_bench_under_mpirun();
  if (!backend_given) o.backend = under_mpirun && !devices_given ? TS_COLL_BACKEND_MPI : TS_COLL_BACKEND_THREADS;
  bool threads = o.backend == TS_COLL_BACKEND_THREADS;
  if (!threads && devices_given) return ts_bench_pt_error("--devices is for in-process runs (--backend=threads)");
  const char *mpi_size = getenv("OMPI_COMM_WORLD_SIZE");
  if (threads && mpi_size && atoi(mpi_size) > 1)
    return ts_bench_pt_error("in-process ranks under mpirun: every process would sweep and write the table (drop "
                  "--backend=threads/--devices, or run without mpirun)");
  if (!group_sizes_given) {
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
      if (o.ngroup_sizes == 0) return ts_bench_pt_error("none of the default group sizes 2,4,8 divides the world of %d ranks: "
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
      if (lcm > TS_BENCH_PT_MAX_RANKS) return ts_bench_pt_error("the group sizes need more than %d in-process ranks", TS_BENCH_PT_MAX_RANKS);
    }
    if (!devices_given) o.devices = (int)lcm;
    for (int i = 0; i < o.ngroup_sizes; i++)
      if (o.devices % o.group_sizes[i])
        return ts_bench_pt_error("group size %lld does not divide --devices %d", (long long)o.group_sizes[i], o.devices);
  }
  int sub_argc = argc;
  return ts_bench_pt_collectives(&o, &sub_argc, &argv);
}

/* ---- gemm --------------------------------------------------------------------- */

static void gemm_usage(FILE *f) {
  fprintf(f,
          "usage: tessera perf-table gemm [--batch=LIST] [-b MIN] [-e MAX] [--m=LIST] [--n=LIST] [--k=LIST]\n"
          "                               [--types=LIST] [-n RUNS] [-w WARMUP] [--device-key=KEY]\n"
          "                               [--progress=MODE] [--no-merge] [-o TABLE]\n"
          "\n"
          "Times the runtime's dot kernel on [b,m,k] x [b,k,n] for every b, m, n, k and\n"
          "dtype, and writes FLOP/s (2bmnk / median time) as XLA's GEMM table\n"
          "(xla.GemmPerfTable).\n"
          "\n"
          "  --batch=LIST          batch sizes b (default 1,2,4)\n"
          "  -b, --min SIZE        smallest m, n, k (default 256; K suffix allowed)\n"
          "  -e, --max SIZE        largest m, n, k, doubling from -b (default 4096)\n"
          "  --m=LIST, --n=LIST, --k=LIST   one dimension's values, instead of -b..-e\n"
          "  --types=LIST          dtype keys as XLA writes them (bf16xbf16->bf16), or one\n"
          "                        element type for all three (f32) (default\n"
          "                        f32xf32->f32,bf16xbf16->bf16)\n"
          "  -n, --runs N          timed runs per point; the median counts (default 5)\n"
          "  -w, --warmup N        untimed runs first (default 1)\n"
          "  --device-key=KEY      the table's device key (default host:<cpu model>)\n"
          "  --progress=MODE       auto (a bar on a terminal, else lines), bar, lines, none\n"
          "  --no-merge            replace TABLE instead of merging into it\n"
          "  -o, --output TABLE    .txtpb/.pbtxt (text) or .pb (binary); the plot goes to\n"
          "                        TABLE's name with .svg (default: text on stdout)\n"
          "  -h, --help            this help\n");
}

static int gemm_parse_types(ts_bench_pt_gemm_opts_t *o, const char *list) {
  char *copy = ts_strdup(list), *save = NULL;
  if (!copy) return 4;
  int rc = 0;
  o->ntypes = 0;
  for (char *s = strtok_r(copy, ",", &save); s && rc == 0; s = strtok_r(NULL, ",", &save)) {
    ts_bench_pt_dtype_t t;
    if (o->ntypes == TS_BENCH_PT_MAX_TYPES) rc = ts_bench_pt_error("--types lists more than %d dtypes", TS_BENCH_PT_MAX_TYPES);
    else if (!ts_bench_pt_dtype_parse(s, &t) || !ts_bench_pt_dtype_runs(&t))
      rc = ts_bench_pt_error("unknown or unsupported dtype '%s' (an element type such as f32, or LHSxRHS->OUT such as "
                  "bf16xbf16->f32)",
                  s);
    else o->types[o->ntypes++] = t;
  }
  ts_free(copy);
  if (rc == 0 && o->ntypes == 0) rc = ts_bench_pt_error("--types wants a list of dtypes");
  return rc;
}

static bool in_range(const int64_t *v, int n, int64_t max) {
  for (int i = 0; i < n; i++)
    if (v[i] > max) return false;
  return true;
}

static int cmd_gemm(int argc, char **argv) {
  static const struct option opts[] = {
      {"batch", required_argument, NULL, 'B'},  {"min", required_argument, NULL, 'b'},
      {"max", required_argument, NULL, 'e'},    {"m", required_argument, NULL, 'M'},
      {"n", required_argument, NULL, 'N'},      {"k", required_argument, NULL, 'K'},
      {"types", required_argument, NULL, 'T'},  {"runs", required_argument, NULL, 'n'},
      {"warmup", required_argument, NULL, 'w'}, {"device-key", required_argument, NULL, PT_OPT_DEVICE_KEY},
      {"progress", required_argument, NULL, PT_OPT_PROGRESS}, {"no-merge", no_argument, NULL, PT_OPT_NO_MERGE},
      {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  ts_bench_pt_gemm_opts_t o = {.batch = {1, 2, 4}, .nbatch = 3, .sw = {.iters = 5, .warmup = 1, .out = {.merge = true}}};
  int64_t lo = 256, hi = 4096;
  bool dim_given[3] = {false, false, false};
  bool types_given = false;
  ts_costmodel_host_device_key(o.sw.device_key, sizeof o.sw.device_key);
  int c, rc, nv;
  int64_t v;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":b:e:n:w:o:h", opts, NULL)) != -1) {
    int shared = pt_sweep_flag(c, optarg, &o.sw);
    if (shared == 1) continue;
    if (shared) return shared;
    switch (c) {
    case 'B':
      if (!pt_parse_int_list(optarg, false, o.batch, TS_BENCH_PT_MAX_DIMS, &o.nbatch) || !in_range(o.batch, o.nbatch, 1024))
        return ts_bench_pt_error("--batch wants a list of integers from 1 to 1024, got '%s'", optarg);
      break;
    case 'b':
    case 'e':
      if (!pt_parse_int_list(optarg, true, &v, 1, &nv) || v > 65536)
        return ts_bench_pt_error("%s wants a dimension from 1 to 64K, got '%s'", c == 'b' ? "-b" : "-e", optarg);
      *(c == 'b' ? &lo : &hi) = v;
      break;
    case 'M':
    case 'N':
    case 'K': {
      int d = c == 'M' ? 0 : c == 'N' ? 1 : 2;
      if (!pt_parse_int_list(optarg, true, o.dims[d], TS_BENCH_PT_MAX_DIMS, &o.ndims[d]) || !in_range(o.dims[d], o.ndims[d], 65536))
        return ts_bench_pt_error("--%c wants a list of dimensions from 1 to 64K, got '%s'", "mnk"[d], optarg);
      dim_given[d] = true;
      break;
    }
    case 'T':
      if ((rc = gemm_parse_types(&o, optarg))) return rc;
      types_given = true;
      break;
    case 'h': gemm_usage(stdout); return 0;
    case ':': return ts_bench_pt_error("option '%s' needs a value", argv[optind - 1]);
    default: return ts_bench_pt_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) return ts_bench_pt_error("unexpected argument '%s'", argv[optind]);
  if (lo > hi) return ts_bench_pt_error("-b is larger than -e: no size to sweep");
  for (int d = 0; d < 3; d++) {
    if (dim_given[d]) continue;
    o.ndims[d] = 0;
    for (int64_t s = lo; s <= hi && o.ndims[d] < TS_BENCH_PT_MAX_DIMS; s *= 2) o.dims[d][o.ndims[d]++] = s;
  }
  if (!types_given) {
    ts_bench_pt_dtype_parse("f32", &o.types[0]);
    ts_bench_pt_dtype_parse("bf16", &o.types[1]);
    o.ntypes = 2;
  }
  return ts_bench_pt_gemm(&o);
}

/* ---- check -------------------------------------------------------------------- */

static void check_usage(FILE *f) {
  fprintf(f,
          "usage: tessera perf-table check [--mode=weighted|nearest|both] [--device=KEY] [--max-mape=P] [-v]\n"
          "                                TABLE...\n"
          "\n"
          "For each table (collectives or GEMMs, text or binary) and device in it, predicts\n"
          "every point from the others with the cost model's interpolator and prints the\n"
          "mean and largest absolute percentage error of the predicted time, per key and\n"
          "overall.\n"
          "\n"
          "  --mode=MODE     weighted (collectives: time interpolated in size, then in\n"
          "                  log2 devices; GEMMs: inverse-distance average of FLOP/s),\n"
          "                  nearest (XLA's code's per-dimension snap), both (default)\n"
          "  --device=KEY    only this device key\n"
          "  --max-mape=P    exit 1 when a device's overall MAPE exceeds P percent\n"
          "  -v, --verbose   every point: measured and predicted time\n"
          "  -h, --help      this help\n");
}

static int cmd_check(int argc, char **argv) {
  static const struct option opts[] = {
      {"mode", required_argument, NULL, 'm'},     {"device", required_argument, NULL, 'd'},
      {"max-mape", required_argument, NULL, 'x'}, {"verbose", no_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
  };
  ts_bench_pt_check_opts_t o = {.modes = {TS_INTERP_WEIGHTED, TS_INTERP_NEAREST}, .nmodes = 2, .max_mape = -1};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
    switch (c) {
    case 'm':
      if (strcmp(optarg, "weighted") == 0) o.nmodes = 1;
      else if (strcmp(optarg, "nearest") == 0) o.modes[0] = TS_INTERP_NEAREST, o.nmodes = 1;
      else if (strcmp(optarg, "both") != 0) return ts_bench_pt_error("unknown mode '%s' (weighted, nearest, both)", optarg);
      break;
    case 'd': o.device = optarg; break;
    case 'x': {
      char *end;
      o.max_mape = strtod(optarg, &end);
      if (end == optarg || *end || !(o.max_mape >= 0)) return ts_bench_pt_error("--max-mape wants a percentage >= 0, got '%s'", optarg);
      break;
    }
    case 'v': o.verbose = true; break;
    case 'h': check_usage(stdout); return 0;
    case ':': return ts_bench_pt_error("option '%s' needs a value", argv[optind - 1]);
    default: return ts_bench_pt_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind >= argc) return ts_bench_pt_error("no table given");
  return ts_bench_pt_check((const char *const *)argv + optind, argc - optind, &o);
}

/* ---- the command -------------------------------------------------------------- */

int ts_cmd_perf_table(int argc, char **argv) {
  if (argc < 2) {
    ts_bench_pt_error("no subcommand given (collectives, gemm, check)");
    usage(stderr);
    return 2;
  }
  const char *sub = argv[1];
  if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(sub, "collectives") == 0) return cmd_collectives(argc - 1, argv + 1);
  if (strcmp(sub, "gemm") == 0) return cmd_gemm(argc - 1, argv + 1);
  if (strcmp(sub, "check") == 0) return cmd_check(argc - 1, argv + 1);
  return ts_bench_pt_error("unknown subcommand '%s' (collectives, gemm, check)", sub);
}

