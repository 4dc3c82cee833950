/* tessera opt: print a module after a pipeline stage. */
#include "ts_hlo.h"
#include "ts_sharding.h"
#include "ts_launcher.h"
#include "ts_partitioner.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char *stages[] = {"parsed", "verified", "propagated", "partitioned"};

static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera opt [--stage=STAGE] [--replica-count N] [--num-partitions N]\n"
          "                   [PARTITIONER FLAGS] [-o FILE] MODULE.hlo\n"
          "\n"
          "Parses an HLO text module (FILE may be '-' for stdin) and prints it, in\n"
          "canonical HLO text, after a pipeline stage.\n"
          "\n"
          "  --stage=STAGE         parsed: parse only; verified (default): parse and\n"
          "                        verify structure and shapes; propagated: verify,\n"
          "                        give every instruction a sharding, verify again;\n"
          "                        partitioned: the per-device program for\n"
          "                        --num-partitions N devices (required unless the\n"
          "                        header has num_partitions > 1), verified\n"
          "  --replica-count N     override the module's replica_count\n"
          "  --num-partitions N    override the module's num_partitions\n"
          "  -o, --output FILE     write the module to FILE instead of stdout\n"
          "  -h, --help            this help\n"
          "partitioner flags (--stage=partitioned; named after XLA's SpmdPartitionerOptions):\n"
          "%s",
          ts_partition_flags_help);
}

int ts_cmd_opt(int argc, char **argv) {
  static const struct option opts[] = {
      {"stage", required_argument, NULL, 's'},
      {"replica-count", required_argument, NULL, 'r'},
      {"num-partitions", required_argument, NULL, 'p'},
      {"output", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      TS_PARTITION_FLAG_OPTIONS,
      {NULL, 0, NULL, 0},
  };
  const char *stage = "verified", *output = NULL;
  ts_hlo_verify_opts_t vopts = {0};
  ts_partition_opts_t popts;
  ts_partition_opts_default(&popts);
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (c) {
    case 's': stage = optarg; break;
    case 'r':
      if (!ts_cli_parse_count("opt", "--replica-count", optarg, &vopts.replica_count)) return 2;
      break;
    case 'p':
      if (!ts_cli_parse_count("opt", "--num-partitions", optarg, &vopts.num_partitions)) return 2;
      break;
    case 'o': output = optarg; break;
    case 'h': usage(stdout); return 0;
    case ':':
      fprintf(stderr, "tessera opt: error: option '%s' needs a value\n", argv[optind - 1]);
      return 2;
    case '?':
      fprintf(stderr, "tessera opt: error: unknown option '%s'\n", argv[optind - 1]);
      usage(stderr);
      return 2;
    default:
      if (!ts_partition_flag_parse("opt", c, optarg, &popts)) return 2;
      break;
    }
  }
  size_t nstage = 0;
  while (nstage < sizeof stages / sizeof stages[0] && strcmp(stages[nstage], stage) != 0) nstage++;
  if (nstage == sizeof stages / sizeof stages[0]) {
    fprintf(stderr, "tessera opt: error: unknown stage '%s' (stages: parsed, verified, propagated, partitioned)\n",
            stage);
    return 2;
  }
  if (optind != argc - 1) {
    fprintf(stderr, "tessera opt: error: %s\n",
            optind >= argc ? "no module file given" : "more than one module file given");
    usage(stderr);
    return 2;
  }
  const char *path = argv[optind];

  ts_diag_t diag = {0};
  ts_hlo_module_t *m = NULL, *pm = NULL;
  ts_buf_t out = {0};
  char *text = NULL;
  bool reported = false;
  ts_status_t st;
  TS_CHECK_GOTO(ts_cli_read_module(path, strcmp(stage, "parsed") != 0 ? &vopts : NULL, &text, &m, &diag),
                st, done);
  if (strcmp(stage, "propagated") == 0) {
    TS_CHECK_GOTO(ts_sharding_propagate(m, NULL, &diag), st, done);
    TS_CHECK_GOTO(ts_hlo_verify(m, &vopts, &diag), st, done);
  }
  if (strcmp(stage, "partitioned") == 0) {
    popts.num_partitions = vopts.num_partitions ? vopts.num_partitions : m->num_partitions;
    if (popts.num_partitions <= 1) {
      fprintf(stderr, "tessera opt: error: --stage=partitioned: say how many devices with --num-partitions N "
                      "(the module's header gives none)\n");
      st = TS_ERR_INVALID_USAGE;
      reported = true;
      goto done;
    }
    TS_CHECK_GOTO(ts_partition(m, &popts, &pm, &diag), st, done);
    ts_hlo_verify_opts_t pv = {.num_partitions = popts.num_partitions};
    TS_CHECK_GOTO(ts_hlo_verify(pm, &pv, &diag), st, done);
  }
  TS_CHECK_GOTO(ts_hlo_print(pm ? pm : m, &out), st, done);
  st = ts_cli_write_output(output, out.data, out.len, &diag);

done:
  if (st < 0 && !reported) {
    if (diag.text)
      fputs(diag.text, stderr);
    else
      fprintf(stderr, "tessera opt: error: %s\n", ts_status_string(st));
  }
  ts_buf_free(&out);
  ts_hlo_module_destroy(pm);
  ts_hlo_module_destroy(m);
  ts_free(text);
  ts_diag_free(&diag);
  return ts_status_exit_code(st);
}
