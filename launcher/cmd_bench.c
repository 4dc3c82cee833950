/* tessera bench collectives: the flags; the benchmark itself (nccl-tests
 * style tables, in-process or across the mpirun world) is bench/
 * (ts_bench.h). */
#include "ts_bench.h"
#include "ts_launcher.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

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

static bool parse_int(const char *s, int lo, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < lo || v > 1000000) return false;
  *out = (int)v;
  return true;
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
  ts_bench_coll_opts_t o = {.minb = 4096, .maxb = 32 << 20, .factor = 2, .iters = 20, .warmup = 5, .check = 1,
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
      if (!ts_bench_parse_size(optarg, &o.minb)) return bad("-b wants a positive size such as 4K, got '%s'", optarg);
      break;
    case 'e':
      if (!ts_bench_parse_size(optarg, &o.maxb)) return bad("-e wants a positive size up to 8G, got '%s'", optarg);
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
      if (!ts_elem_from_name(optarg, strlen(optarg), &o.type) || !ts_bench_coll_type_ok(o.type))
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
        for (size_t i = 0; ok && i < TS_BENCH_COLL_NKINDS; i++) benchable |= ts_bench_coll_kinds[i] == k;
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
    for (size_t i = 0; i < TS_BENCH_COLL_NKINDS; i++) o.kinds[ts_bench_coll_kinds[i]] = true;
  bool under_mpirun = ts_bench_under_mpirun();
  if (!backend_given) o.backend = under_mpirun && !devices_given ? TS_COLL_BACKEND_MPI : TS_COLL_BACKEND_THREADS;
  if (o.backend == TS_COLL_BACKEND_THREADS) {
    if (o.peer) return bad("--peer=mpi needs the mpirun world (--backend=mpi or ucx), not in-process ranks%s", "");
    if (o.memcpy_col && o.devices > 1) {
      /* fine: threads copy at once too */
    }
    return ts_bench_collectives(&o, &sub_argc, &sub_argv);
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
  return ts_bench_collectives(&o, &sub_argc, &sub_argv);
}
