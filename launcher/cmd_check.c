/* tessera check: partition a module, run the per-device program on N
 * simulated devices and compare its outputs with the reference
 * interpreter's run of the unpartitioned module on the same inputs. */
#include "ts_hlo.h"
#include "ts_interp.h"
#include "ts_launcher.h"
#include "ts_partitioner.h"
#include "ts_pipeline.h"
#include "ts_sharding.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera check --num-partitions N [PARTITIONER FLAGS] [--random-inputs SEED]\n"
          "                     [--max-memory BYTES] [--platform=P] MODULE.hlo\n"
          "\n"
          "Partitions an HLO module for N devices, verifies the per-device program,\n"
          "runs it on N simulated devices in this process (real collective semantics)\n"
          "and compares every output with the reference interpreter's run of the\n"
          "unpartitioned module on the same seeded random inputs. Device d's\n"
          "parameters are its shards of the full inputs under the entry parameters'\n"
          "shardings (after propagation); outputs are assembled under the root's.\n"
          "\n"
          "  --num-partitions N    devices (required unless the module's header has\n"
          "                        num_partitions > 1)\n"
          "  --random-inputs SEED  seed of the random inputs (default 0)\n"
          "  --platform=P          cpu (the default) or gpu; gpu needs a CUDA build and a\n"
          "                        CUDA device\n"
          "  --max-memory BYTES    do not run when the estimated memory of a run exceeds\n"
          "                        BYTES (suffixes K, M, G, T: powers of 1024); the\n"
          "                        default is half of this machine's memory\n"
          "  --tolerance R         relative tolerance (rtol below) for every float output\n"
          "                        instead of the per-type default\n"
          "  -h, --help            this help\n"
          "partitioner flags (named after XLA's SpmdPartitionerOptions):\n"
          "%s"
          "\n"
          "Tolerances: floats match when |got - want| <= rtol * max(|want|, F) where\n"
          "F = max(S, 1) / 16 and S is the largest |want| of that output (an absolute\n"
          "floor for elements near zero, where reduction order dominates); rtol is\n"
          "1e-5 for f32, f64 and complex, 4 ulps of the type for narrower floats\n"
          "(bf16 2^-5, f16 2^-8, f8e4m3* 2^-1, f8e5m2*/f6/f4 1). Integers and pred\n"
          "match exactly. Copies of replicated data on every device are checked too.\n"
          "\n"
          "Collectives are counted statically over the partitioned module: every\n"
          "instruction once, those inside while bodies and called computations once\n"
          "(not per iteration). Bytes per device: for each collective the larger of\n"
          "its operands' and its result's bytes on one device.\n"
          "\n"
          "Memory estimate: for each run, its entry parameters' bytes plus the sum of\n"
          "every instruction's result bytes (every computation once; tuples and\n"
          "get-tuple-element are references) -- an upper bound, since the interpreter\n"
          "drops values at their last use; the partitioned run counts N devices.\n"
          "\n"
          "Exit codes: 0 outputs match, 1 mismatch (or the partitioned program fails\n"
          "to verify or run), 2 bad input or usage, 3 too large to run here (after\n"
          "partitioning and verifying) or not supported by the partitioner yet.\n",
          ts_partition_flags_help);
}

static uint64_t default_max_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return UINT64_C(8) << 30;
  return (uint64_t)pages * (uint64_t)page / 2;
}

/* ---- the command -------------------------------------------------------- */

/* The value of an instruction's sharding on its shape; replicated when it
 * has none. */
/* On one device every sharding means the whole value (as the partitioner
 * reads it there). */
static ts_status_t sharding_of(ts_hlo_module_t *m, const ts_hlo_instr_t *i, int ndev, ts_sharding_value_t **out) {
  if (!i->sharding || ndev == 1) return ts_sharding_simple(m->arena, TS_SHARD_REPLICATED, out);
  return ts_sharding_from_syntax(m->arena, i->sharding, i->shape, out);
}

typedef struct {
  const char *path;
  int64_t partitions;
  uint64_t seed, max_memory;
  double tolerance; /* 0: per element type */
  ts_partition_opts_t popts;
} check_args_t;

/* Partition, verify, estimate, run both and compare. Messages for the
 * user's input go to diag; the rest is printed here. */
static ts_status_t check(const check_args_t *a, ts_diag_t *diag) {
  ts_pipeline_t p;
  ts_pipeline_init(&p, &(ts_pipeline_opts_t){.purpose = TS_PIPELINE_CHECK, .path = a->path,
                                             .verify = {.num_partitions = a->partitions}, .partition = a->popts});
  ts_hlo_module_t *m = NULL, *pm = NULL;
  ts_interp_t *ref_it = NULL, *part_it = NULL;
  ts_value_t **args = NULL, **dargs = NULL, **douts = NULL, *want = NULL, *got = NULL;
  int np = 0, ndev = 0;
  ts_status_t st;

  TS_CHECK_GOTO(ts_pipeline_run_to(&p, TS_STAGE_VERIFIED, diag), st, done);
  m = p.m;
  if (ts_partition_is_per_device(m)) {
    ts_diag_plain(diag, "%s is already a per-device program (entry %s, as XLA names it after SPMD partitioning): "
                  "it has no one-device meaning to check against (run it with tessera run --check)",
                  a->path, m->entry->name);
    st = TS_ERR_UNSUPPORTED;
    goto done;
  }
  int64_t n = a->partitions ? a->partitions : m->num_partitions;
  if (n < 1 || (n == 1 && !a->partitions)) { /* an explicit --num-partitions 1 checks one device */
    ts_diag_plain(diag, "say how many devices with --num-partitions N (the module's header gives none)");
    st = TS_ERR_INVALID_USAGE;
    goto done;
  }
  if (n > 1024) {
    ts_diag_plain(diag, "--num-partitions %lld: one process simulates at most 1024 devices", (long long)n);
    st = TS_ERR_INVALID_USAGE;
    goto done;
  }
  ndev = (int)n;
  np = m->entry->nparams;
  args = ts_calloc((size_t)np + 1, sizeof *args);
  dargs = ts_calloc((size_t)np * (size_t)ndev + 1, sizeof *dargs);
  douts = ts_calloc((size_t)ndev + 1, sizeof *douts);
  if (!args || !dargs || !douts) {
    st = TS_ERR_NOMEM;
    goto done;
  }

  /* The reference first, on the module as written (the partitioner then
   * writes propagated shardings into it). */
  uint64_t ref_bytes = ts_interp_memory_bound(m);
  bool fits = ref_bytes <= a->max_memory;
  if (fits) {
    TS_CHECK_GOTO(ts_interp_random_args(m, a->seed, args), st, done);
    ts_interp_opts_t ro = {.ndevices = 0, .num_partitions = n};
    TS_CHECK_GOTO(ts_interp_create(m, &ro, &ref_it, diag), st, done);
    TS_CHECK_GOTO(ts_interp_run(ref_it, args, &want, diag), st, done);
    ts_interp_destroy(ref_it);
    ref_it = NULL;
  }

  p.o.partition.num_partitions = n;
  TS_CHECK_GOTO(ts_pipeline_run_to(&p, TS_STAGE_PARTITIONED, diag), st, done);
  pm = p.pm;
  int ninstr = 0;
  for (int c = 0; c < pm->ncomps; c++) ninstr += pm->comps[c]->ninstrs;
  printf("%s: partitioned for %d devices: %d instructions in %d computations, verified\n", a->path, ndev, ninstr,
         pm->ncomps);
  ts_interp_coll_stats_t cs;
  ts_interp_count_collectives(pm, &cs);
  ts_interp_print_collectives(&cs);

  uint64_t part_bytes = (uint64_t)ndev * ts_interp_memory_bound(pm);
  printf("memory estimate: reference run ");
  ts_interp_print_bytes(stdout, ref_bytes);
  printf(", partitioned run ");
  ts_interp_print_bytes(stdout, part_bytes);
  printf(" (limit ");
  ts_interp_print_bytes(stdout, a->max_memory);
  printf(")\n");
  fflush(stdout);
  if (!fits || part_bytes > a->max_memory) {
    printf("result: not run (the estimated memory exceeds the limit)\n");
    ts_diag_plain(diag, "too large to run here: the estimated memory exceeds --max-memory");
    st = TS_ERR_UNSUPPORTED;
    goto done;
  }
  if (pm->entry->nparams != np) {
    ts_diag_plain(diag, "the partitioned module has %d parameters, the module %d", pm->entry->nparams, np);
    st = TS_ERR_CHECK_FAILED;
    goto done;
  }

  /* Device d's arguments: its shards under the parameters' shardings. */
  for (int p = 0; p < np; p++) {
    ts_sharding_value_t *sv;
    if ((st = sharding_of(m, m->entry->params[p], ndev, &sv)) != TS_OK) {
      ts_diag_plain(diag, "the sharding of parameter %d does not fit its shape", p);
      goto done;
    }
    for (int d = 0; d < ndev; d++) {
      st = ts_interp_shard_value(args[p], sv, d, pm->entry->params[p]->shape, &dargs[(size_t)d * np + p]);
      if (st != TS_OK) {
        ts_diag_plain(diag, "cannot cut parameter %d for device %d: the partitioned parameter's shape does not "
                      "hold its shard (%s)", p, d, ts_status_string(st));
        st = TS_ERR_CHECK_FAILED;
        goto done;
      }
    }
    ts_value_unref(args[p]);
    args[p] = NULL;
  }
  ts_interp_opts_t po = {.ndevices = ndev};
  {
    ts_diag_t rd = {0};
    st = ts_interp_create(pm, &po, &part_it, &rd);
    if (st == TS_OK) st = ts_interp_run(part_it, dargs, douts, &rd);
    if (st != TS_OK) {
      ts_diag_plain(diag, "the partitioned module failed to run: %s", rd.text ? rd.text : ts_status_string(st));
      ts_diag_free(&rd);
      if (st != TS_ERR_NOMEM) st = TS_ERR_CHECK_FAILED;
      goto done;
    }
  }
  for (size_t k = 0; k < (size_t)np * (size_t)ndev; k++) {
    ts_value_unref(dargs[k]);
    dargs[k] = NULL;
  }

  ts_sharding_value_t *root_sv;
  if ((st = sharding_of(m, m->entry->root, ndev, &root_sv)) != TS_OK) {
    ts_diag_plain(diag, "the sharding of the root does not fit its shape");
    goto done;
  }
  st = ts_interp_unshard_values(douts, ndev, root_sv, m->entry->root->shape, &got);
  if (st != TS_OK) {
    ts_diag_plain(diag, "cannot assemble the result from the devices' shards (%s)", ts_status_string(st));
    if (st != TS_ERR_NOMEM && st != TS_ERR_UNSUPPORTED) st = TS_ERR_CHECK_FAILED;
    goto done;
  }
  int nleaves = ts_value_leaves(want, NULL, 0);
  int bad = ts_interp_compare_outputs(m, want, got, root_sv, douts, ndev, a->tolerance, &st);
  if (st != TS_OK) goto done;
  if (bad) {
    printf("result: MISMATCH in %d of %d outputs\n", bad, nleaves);
    st = TS_ERR_CHECK_FAILED;
  } else {
    printf("result: match (%d outputs, %d devices, seed %llu)\n", nleaves, ndev, (unsigned long long)a->seed);
  }

done:
  fflush(stdout);
  if (dargs)
    for (size_t k = 0; k < (size_t)np * (size_t)ndev; k++) ts_value_unref(dargs[k]);
  if (douts)
    for (int d = 0; d < ndev; d++) ts_value_unref(douts[d]);
  if (args)
    for (int p = 0; p < np; p++) ts_value_unref(args[p]);
  ts_free(args);
  ts_free(dargs);
  ts_free(douts);
  ts_value_unref(want);
  ts_value_unref(got);
  ts_interp_destroy(part_it);
  ts_interp_destroy(ref_it);
  ts_interp_release_buffers();
  ts_pipeline_fini(&p);
  return st;
}

int ts_cmd_check(int argc, char **argv) {
  static const struct option opts[] = {
      {"num-partitions", required_argument, NULL, 'p'},
      {"random-inputs", required_argument, NULL, 'r'},
      {"max-memory", required_argument, NULL, 'm'},
      {"platform", required_argument, NULL, 'P'},
      {"tolerance", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},
      TS_PARTITION_FLAG_OPTIONS,
      {NULL, 0, NULL, 0},
  };
  check_args_t a = {0};
  ts_platform_t platform = TS_PLATFORM_DEFAULT;
  ts_partition_opts_default(&a.popts);
  a.max_memory = default_max_memory();
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (c) {
    case 'p': if (!ts_cli_parse_count("check", "--num-partitions", optarg, &a.partitions)) return 2; break;
    case 'r': if (!ts_cli_parse_seed("check", optarg, &a.seed)) return 2; break;
    case 'm': if (!ts_cli_parse_bytes("check", "--max-memory", optarg, &a.max_memory)) return 2; break;
    case 'P': if (!ts_cli_parse_platform("check", optarg, &platform)) return 2; break;
    case 't': if (!ts_cli_parse_positive("check", "--tolerance", optarg, &a.tolerance)) return 2; break;
    case 'h': usage(stdout); return 0;
    case ':':
    case '?': return ts_cli_getopt_error("check", c, argv[optind - 1], usage);
    default:
      if (!ts_partition_flag_parse("check", c, optarg, &a.popts)) return 2;
      break;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "tessera check: error: %s\n",
            optind >= argc ? "no module file given" : "more than one module file given");
    usage(stderr);
    return 2;
  }
  a.path = argv[optind];
  int gpus, prc = ts_cli_platform("check", platform, &platform, &gpus);
  if (prc >= 0) return prc;
  if (platform == TS_PLATFORM_GPU) {
    fprintf(stderr, "tessera check: error: --platform=gpu: %d CUDA device(s) found, but check runs the simulated "
            "devices of the interpreter; `tessera run --platform=gpu --check` compares a GPU run\n", gpus);
    return 3;
  }
  ts_diag_t diag = {0};
  ts_status_t st = check(&a, &diag);
  if (st < 0 && !(st == TS_ERR_CHECK_FAILED && !diag.text)) { /* a mismatch is reported above */
    if (diag.text) {
      const char *t = diag.text;
      /* Plain diagnostics read "error: ..."; name the command on them. */
      if (strncmp(t, "error: ", 7) == 0) fprintf(stderr, "tessera check: %s", t);
      else fputs(t, stderr);
      if (t[0] && t[strlen(t) - 1] != '\n') fputc('\n', stderr);
    } else {
      fprintf(stderr, "tessera check: error: %s\n", ts_status_string(st));
    }
  }
  ts_diag_free(&diag);
  return ts_pipeline_exit_code(st);
}
