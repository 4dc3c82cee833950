/* tessera run: run a module. With --devices 1 the reference interpreter runs
 * its unpartitioned meaning on this CPU. */
#include "ts_hlo.h"
#include "ts_interp.h"
#include "ts_launcher.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera run --devices N [--inputs DIR | --random-inputs SEED]\n"
          "                   [--outputs DIR] [--num-partitions N] [--replica-count N] MODULE.hlo\n"
          "\n"
          "Runs an HLO module. --devices 1 runs its unpartitioned meaning with the\n"
          "reference interpreter. --devices N > 1 runs a module that is already the\n"
          "per-device program (collectives written out) on N simulated devices in\n"
          "this process and reports device 0's results.\n"
          "\n"
          "  --devices N           devices to run on (required)\n"
          "  --inputs DIR          entry parameter i from DIR/param<i>.npy\n"
          "  --random-inputs SEED  seeded random parameters (the default, seed 0):\n"
          "                        floats uniform in (0, 1], index parameters in\n"
          "                        range for their use\n"
          "  --outputs DIR         write leaf i of the flattened result as DIR/out<i>.npy\n"
          "  --num-partitions N    partitions for manual (shard_map) regions\n"
          "  --replica-count N     override the module's replica_count\n"
          "  --trap-nonfinite      stop at the first instruction that makes a NaN or\n"
          "                        infinity out of finite operands, naming it (exit 1)\n"
          "  -h, --help            this help\n"
          "\n"
          "Prints one line per result leaf (shape, finite count, min, max, mean) and\n"
          "'step 1 time_ms T' (with 'loss L': the first scalar floating-point output).\n");
}

static bool parse_seed(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-') {
    fprintf(stderr, "tessera run: error: --random-inputs wants a non-negative integer seed, got '%s'\n", s);
    return false;
  }
  *out = v;
  return true;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* One summary line per leaf; returns the first scalar float (the loss), NAN
 * when there is none. */
static double summarize(ts_value_t *result) {
  ts_array_t leaves[4096];
  int n = ts_value_leaves(result, leaves, 4096);
  double loss = NAN;
  for (int k = 0; k < n && k < 4096; k++) {
    const ts_array_t *a = &leaves[k];
    int64_t cnt = ts_array_count(a), finite = 0;
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    bool is_float = ts_elem_is_float(a->elem) || ts_elem_is_complex(a->elem);
    for (int64_t j = 0; j < cnt; j++) {
      double v;
      if (ts_elem_is_float(a->elem) || ts_elem_is_complex(a->elem)) {
        double re, im;
        ts_load_c(a->elem, a->data, j, &re, &im);
        v = re;
        if (!isfinite(re) || !isfinite(im)) continue;
      } else if (ts_elem_is_unsigned_int(a->elem)) {
        v = (double)(uint64_t)ts_load_i(a->elem, a->data, j);
      } else {
        v = (double)ts_load_i(a->elem, a->data, j);
      }
      finite++;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
      sum += v;
    }
    if (is_float && a->rank == 0 && isnan(loss) && ts_elem_is_float(a->elem)) loss = ts_load_f(a->elem, a->data, 0);
    printf("out%d %s[", k, ts_elem_name(a->elem));
    for (int d = 0; d < a->rank; d++) printf(d ? ",%lld" : "%lld", (long long)a->dims[d]);
    printf("] finite %lld/%lld", (long long)finite, (long long)cnt);
    if (finite) printf(" min %.6g max %.6g mean %.6g", lo, hi, sum / (double)finite);
    printf("\n");
  }
  return loss;
}

int ts_cmd_run(int argc, char **argv) {
  static const struct option opts[] = {
      {"devices", required_argument, NULL, 'd'},
      {"inputs", required_argument, NULL, 'i'},
      {"random-inputs", required_argument, NULL, 'r'},
      {"outputs", required_argument, NULL, 'o'},
      {"num-partitions", required_argument, NULL, 'p'},
      {"replica-count", required_argument, NULL, 'R'},
      {"trap-nonfinite", no_argument, NULL, 'T'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int64_t devices = 0, partitions = 0, replicas = 0;
  const char *inputs = NULL, *outputs = NULL;
  uint64_t seed = 0;
  bool seeded = false, trap = false;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 'd': if (!ts_cli_parse_count("run", "--devices", optarg, &devices)) return 2; break;
    case 'i': inputs = optarg; break;
    case 'r': if (!parse_seed(optarg, &seed)) return 2; seeded = true; break;
    case 'o': outputs = optarg; break;
    case 'p': if (!ts_cli_parse_count("run", "--num-partitions", optarg, &partitions)) return 2; break;
    case 'R': if (!ts_cli_parse_count("run", "--replica-count", optarg, &replicas)) return 2; break;
    case 'T': trap = true; break;
    case 'h': usage(stdout); return 0;
    case ':':
      fprintf(stderr, "tessera run: error: option '%s' needs a value\n", argv[optind - 1]);
      return 2;
    default:
      fprintf(stderr, "tessera run: error: unknown option '%s'\n", argv[optind - 1]);
      usage(stderr);
      return 2;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "tessera run: error: %s\n", optind >= argc ? "no module file given" : "more than one module file given");
    usage(stderr);
    return 2;
  }
  if (devices == 0) {
    fprintf(stderr, "tessera run: error: say how many devices with --devices N (N = 1 runs the reference interpreter)\n");
    return 2;
  }
  if (inputs && seeded) {
    fprintf(stderr, "tessera run: error: --inputs and --random-inputs exclude each other\n");
    return 2;
  }
  if (devices > 1024) {
    fprintf(stderr, "tessera run: error: --devices %lld: one process simulates at most 1024 devices\n", (long long)devices);
    return 2;
  }
  const char *path = argv[optind];
  ts_diag_t diag = {0};
  ts_hlo_module_t *m = NULL;
  ts_interp_t *it = NULL;
  char *text = NULL;
  ts_value_t **args = NULL, **outs = NULL;
  int np = 0, ndev = 0;
  ts_hlo_verify_opts_t vopts = {.replica_count = replicas, .num_partitions = partitions};
  if (devices > 1 && !partitions && !replicas) vopts.num_partitions = devices;
  ts_status_t st;
  TS_CHECK_GOTO(ts_cli_read_module(path, &vopts, &text, &m, &diag), st, done);
  ts_interp_opts_t io = {.ndevices = devices > 1 ? (int)devices : 0, .num_partitions = partitions,
                         .replica_count = replicas, .trap_nonfinite = trap};
  TS_CHECK_GOTO(ts_interp_create(m, &io, &it, &diag), st, done);
  np = m->entry->nparams;
  ndev = ts_interp_ndevices(it);
  args = ts_calloc((size_t)(np * ndev) + 1, sizeof *args);
  outs = ts_calloc((size_t)ndev + 1, sizeof *outs);
  if (!args || !outs) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  /* Every device gets the same arguments. */
  if (inputs) TS_CHECK_GOTO(ts_interp_load_args(m, inputs, args, &diag), st, done);
  else TS_CHECK_GOTO(ts_interp_random_args(m, seed, args), st, done);
  for (int d = 1; d < ndev; d++)
    for (int p = 0; p < np; p++) args[d * np + p] = ts_value_ref(args[p]);
  double t0 = now_ms();
  TS_CHECK_GOTO(ts_interp_run(it, args, outs, &diag), st, done);
  double t1 = now_ms();
  double loss = summarize(outs[0]);
  if (isnan(loss)) printf("step 1 time_ms %.3f\n", t1 - t0);
  else printf("step 1 time_ms %.3f loss %.9g\n", t1 - t0, loss);
  fflush(stdout);
  if (outputs) st = ts_interp_write_outputs(outputs, outs[0], &diag);
done:
  if (st < 0) {
    if (diag.text) {
      fputs(diag.text, stderr);
      if (diag.text[0] && diag.text[strlen(diag.text) - 1] != '\n') fputc('\n', stderr);
    } else {
      fprintf(stderr, "tessera run: error: %s\n", ts_status_string(st));
    }
  }
  if (args)
    for (int k = 0; k < np * ndev; k++) ts_value_unref(args[k]);
  if (outs)
    for (int d = 0; d < ndev; d++) ts_value_unref(outs[d]);
  ts_free(args);
  ts_free(outs);
  ts_interp_destroy(it);
  ts_interp_release_buffers();
  ts_hlo_module_destroy(m);
  ts_free(text);
  ts_diag_free(&diag);
  return ts_status_exit_code(st);
}
