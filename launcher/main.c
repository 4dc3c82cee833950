/* tessera: one binary, subcommands. */
#include "ts_env.h"
#include "ts_hang.h"
#include "ts_launcher.h"

#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  ts_cmd_fn fn;
  bool blas; /* runs kernels: set OpenBLAS's core type up first */
  const char *summary;
} commands[] = {
    {"opt", ts_cmd_opt, false, "parse, verify and print an HLO module after a pipeline stage"},
    {"run", ts_cmd_run, true, "run a module (--devices 1: the reference interpreter)"},
    {"bench", ts_cmd_bench, false, "benchmark collectives (nccl-tests style tables)"},
    {"check", ts_cmd_check, true, "partition a module, run it on N simulated devices, compare with the reference"},
    {"perf-table", ts_cmd_perf_table, true, "measure collectives or GEMMs and write an XLA performance table"},
    {"diagnose", ts_cmd_diagnose, false, "print hang digests and the hosts that recur in them"},
    {"checkpoint", ts_cmd_checkpoint, false, "inspect a checkpoint folder, assemble a step's full arrays"},
};

/* TESSERA_LOG: a level name; anything else keeps the default (warnings). */
static void set_log_level(void) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  const char *s = ts_env_get(TS_ENV_LOG);
  for (int l = 0; s && l < 4; l++)
    if (strcmp(s, names[l]) == 0) ts_log_set_level((ts_log_level_t)l);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: tessera [--help] [--help-env] [--version] <command> [<args>]\n"
          "\n"
          "Tessera runs one XLA HLO program, written for one big logical device with\n"
          "sharding annotations, across many devices and hosts.\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f,
          "\n"
          "Run 'tessera <command> --help' for a command's flags, 'tessera --help-env'\n"
          "for the TESSERA_* environment variables.\n"
          "Exit codes: 0 success, 1 a check ran and failed, 2 bad input or usage,\n"
          "3 a check that cannot run here.\n");
}

/* A compile allocates and frees in phases (the input module, then the
 * partitioned one, then the program): memory one phase frees should serve
 * the next, because on these VMs a fresh page costs more than the work done
 * in it (clearing pages was a third of a million-instruction compile). glibc
 * would mmap each large block and trim the heap's top, handing the pages back
 * only to fault them in again. */
static void keep_freed_memory(void) {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

int main(int argc, char **argv) {
  keep_freed_memory();
  set_log_level();
  static const struct option opts[] = {
      {"help", no_argument, NULL, 'h'},
      {"help-env", no_argument, NULL, 'E'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  /* '+' stops at the first non-option: the rest belongs to the subcommand. */
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
    switch (c) {
    case 'h': usage(stdout); return 0;
    case 'E': ts_env_print_help(stdout); return 0;
    case 'V': printf("tessera %s\n", TS_VERSION); return 0;
    default:
      fprintf(stderr, "tessera: error: unknown option '%s'\n", argv[optind - 1]);
      usage(stderr);
      return 2;
    }
  }
  if (optind >= argc) {
    fprintf(stderr, "tessera: error: no command given\n");
    usage(stderr);
    return 2;
  }
  int first = optind;
  const char *name = argv[first];
  /* The hang coordinator's process (started by tessera run); not in --help. */
  if (strcmp(name, "hang-coordinator") == 0) {
    optind = 0;
    return ts_hang_coordinator_main(argc - first, argv + first);
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(commands[i].name, name) == 0) {
      if (commands[i].blas) ts_cli_blas_setup(argv);
      optind = 0; /* glibc: a full reset for the subcommand's getopt_long */
      return commands[i].fn(argc - first, argv + first);
    }
  }
  fprintf(stderr, "tessera: error: unknown command '%s' (see 'tessera --help')\n", name);
  return 2;
}
