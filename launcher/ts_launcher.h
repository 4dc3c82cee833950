/* The `tessera` command: subcommand entry points and the helpers they share. */
#ifndef TS_LAUNCHER_H
#define TS_LAUNCHER_H

#include "ts_common.h"
#include "ts_hlo.h"

/* A subcommand: parses its own flags from argv (argv[0] is its name) and
 * returns the process exit code (0 ok, 1 check failed, 2 bad input/usage,
 * 3 cannot run here). */
typedef int (*ts_cmd_fn)(int argc, char **argv);

int ts_cmd_opt(int argc, char **argv);
int ts_cmd_run(int argc, char **argv);
int ts_cmd_bench(int argc, char **argv);

/* Parses a positive integer flag value; prints a usage error and returns
 * false when `s` is not one. */
bool ts_cli_parse_count(const char *cmd, const char *flag, const char *s, int64_t *out);

/* Writes `data` to `path` atomically (a temporary file renamed into place),
 * or to stdout when path is NULL or "-": no half-written output on error. */
ts_status_t ts_cli_write_output(const char *path, const char *data, size_t len, ts_diag_t *diag);

/* Reads `path` ("-": stdin), parses it and, when vopts is not NULL,
 * verifies it. *text (free with ts_free) backs the module's diagnostics. */
ts_status_t ts_cli_read_module(const char *path, const ts_hlo_verify_opts_t *vopts, char **text,
                               ts_hlo_module_t **m, ts_diag_t *diag);

#endif
