/* The `tessera` command: subcommand entry points and the helpers they share. */
#ifndef TS_LAUNCHER_H
#define TS_LAUNCHER_H

#include "ts_common.h"
#include "ts_gpu.h"
#include "ts_hlo.h"
#include "ts_partitioner.h"
#include "ts_scheduler.h"

/* A subcommand: parses its own flags from argv (argv[0] is its name) and
 * returns the process exit code (0 ok, 1 check failed, 2 bad input/usage,
 * 3 cannot run here). */
typedef int (*ts_cmd_fn)(int argc, char **argv);

int ts_cmd_opt(int argc, char **argv);
int ts_cmd_run(int argc, char **argv);
int ts_cmd_bench(int argc, char **argv);
int ts_cmd_check(int argc, char **argv);
int ts_cmd_perf_table(int argc, char **argv); /* cmd_perftable.c */
int ts_cmd_diagnose(int argc, char **argv);   /* cmd_diagnose.c */
int ts_cmd_checkpoint(int argc, char **argv); /* cmd_checkpoint.c */

/* Makes OpenBLAS run the kernels this CPU calls for, checks sgemm and logs
 * (info) which kernels run (blas_setup.c). Call first in main, before any
 * thread exists: it may replace the process image with argv, up to five
 * times along the fallback chain. Never fails; a core type it cannot set
 * leaves OpenBLAS's own. */
void ts_cli_blas_setup(char **argv);

/* Parses --random-inputs' seed (a non-negative integer); prints a usage
 * error naming `cmd` and returns false when `s` is not one. */
bool ts_cli_parse_seed(const char *cmd, const char *s, uint64_t *out);

/* An integer flag value of at least `lo`; otherwise prints "tessera CMD:
 * error: FLAG wants WHAT, got 'S'" and returns false. */
bool ts_cli_parse_int(const char *cmd, const char *flag, const char *what, int64_t lo, const char *s, int64_t *out);
/* Parses a positive integer flag value; prints a usage error and returns
 * false when `s` is not one. */
bool ts_cli_parse_count(const char *cmd, const char *flag, const char *s, int64_t *out);
/* A positive finite number (e.g. a tolerance); one error line naming the flag otherwise. */
bool ts_cli_parse_positive(const char *cmd, const char *flag, const char *s, double *out);
/* A positive byte count with an optional K, M, G or T suffix (powers of 1024). */
bool ts_cli_parse_bytes(const char *cmd, const char *flag, const char *s, uint64_t *out);

/* --platform's value (cpu or gpu); prints a usage error naming `cmd` and
 * returns false otherwise. */
bool ts_cli_parse_platform(const char *cmd, const char *s, ts_platform_t *out);
/* The platform this process runs on: `asked`, or the default (cpu unless
 * ts_gpu_default()). gpu without a CUDA build, without the driver or with
 * no device prints one usage error naming what is missing and returns 2;
 * otherwise -1 (go on), with *ndev the devices seen (0 on cpu). */
int ts_cli_platform(const char *cmd, ts_platform_t asked, ts_platform_t *out, int *ndev);

/* getopt_long's ':' (a flag without its value) or any other code it
 * returns for a flag not in the table, as "tessera CMD: error: ..."; after
 * an unknown flag, usage(stderr) too. Returns 2, the usage exit code. */
int ts_cli_getopt_error(const char *cmd, int c, const char *flag, void (*usage)(FILE *f));

/* Writes `data` to `path` atomically (a temporary file renamed into place),
 * or to stdout when path is NULL or "-": no half-written output on error. */
ts_status_t ts_cli_write_output(const char *path, const char *data, size_t len, ts_diag_t *diag);

/* The partitioner's options as flags (partition_flags.c), for a command's
 * getopt_long table: put TS_PARTITION_FLAG_OPTIONS among its entries (the
 * file includes <getopt.h>), pass the codes it returns to
 * ts_partition_flag_parse, and print ts_partition_flags_help in --help.
 * Booleans take an optional `=true` / `=false` (alone: true). */
enum {
  TS_PFLAG_THRESHOLD = 0x100,
  TS_PFLAG_UNROLL,
  TS_PFLAG_BIDIRECTIONAL,
  TS_PFLAG_CONV_LHS,
  TS_PFLAG_FASTER,
};
#define TS_PARTITION_FLAG_OPTIONS                                                      \
  {"threshold-for-windowed-einsum-mib", required_argument, NULL, TS_PFLAG_THRESHOLD},   \
      {"unroll-windowed-einsum", optional_argument, NULL, TS_PFLAG_UNROLL},             \
      {"bidirectional-windowed-einsum", optional_argument, NULL, TS_PFLAG_BIDIRECTIONAL}, \
      {"conv-halo-exchange-always-on-lhs", optional_argument, NULL, TS_PFLAG_CONV_LHS}, \
      {"choose-faster-windowed-einsum-over-mem", optional_argument, NULL, TS_PFLAG_FASTER}
extern const char ts_partition_flags_help[];
/* Applies flag `code` with value `arg` (NULL when none) to `o`; prints a
 * usage error naming `cmd` and returns false on a bad value. */
bool ts_partition_flag_parse(const char *cmd, int code, const char *arg, ts_partition_opts_t *o);

/* The scheduler's flags that opt and run both take: put
 * TS_SCHED_FLAG_OPTIONS among a getopt_long table's entries, as
 * TS_PARTITION_FLAG_OPTIONS. Each command keeps --cost-model and
 * --cost-model-preset its own way (opt joins repeated specs);
 * --overlap-limit and --memory-limit go to ts_sched_flag_parse. */
#define TS_SCHED_FLAG_OPTIONS                                            \
  {"cost-model", required_argument, NULL, TS_SFLAG_COST_MODEL},          \
      {"cost-model-preset", required_argument, NULL, TS_SFLAG_PRESET},   \
      {"overlap-limit", required_argument, NULL, TS_SFLAG_OVERLAP},      \
      {"memory-limit", required_argument, NULL, TS_SFLAG_MEMORY}
enum { TS_SFLAG_COST_MODEL = 0x180, TS_SFLAG_PRESET, TS_SFLAG_OVERLAP, TS_SFLAG_MEMORY };
/* Applies --overlap-limit or --memory-limit (`code`) with value `arg` to
 * `o`; prints a usage error naming `cmd` and returns false on a bad value. */
bool ts_sched_flag_parse(const char *cmd, int code, const char *arg, ts_sched_opts_t *o);

#endif
