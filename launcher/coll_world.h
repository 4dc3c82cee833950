/* The worlds the collective benchmarks run in (tessera bench collectives and
 * tessera perf-table collectives): N in-process ranks on threads, or the
 * mpirun world; and the byte-size flag syntax they share. */
#ifndef TS_COLL_WORLD_H
#define TS_COLL_WORLD_H

#include "ts_coll.h"

/* A size such as 4096, 4K, 1.5M or 2GB: K/M/G are binary (1024-based), the
 * trailing B optional. False unless it is positive and at most 8 GiB. */
bool ts_cli_parse_size(const char *s, int64_t *out);

/* Whether this process was started by mpirun (Open MPI, or a PMI launcher). */
bool ts_coll_world_under_mpirun(void);

/* One rank's work: `comm` is its handle on the world, `mpi` true when the
 * world is MPI_COMM_WORLD. Returns the rank's exit code (0 ok). */
typedef int (*ts_coll_rank_fn)(void *arg, ts_coll_comm_t *comm, bool mpi);

/* Runs fn on n in-process ranks (threads backend), one thread each, and
 * returns the largest exit code. `cmd` ("tessera bench") prefixes errors. */
int ts_coll_world_threads(const char *cmd, int n, ts_coll_rank_fn fn, void *arg);

/* Initialises MPI, runs fn on this process's rank of the mpirun world with
 * `backend` (mpi or ucx) as the data path, finalises, returns fn's code.
 * Builds without MPI or the backend: a message and 3 (cannot run here). */
int ts_coll_world_mpi(const char *cmd, ts_coll_backend_t backend, int *argc, char ***argv, ts_coll_rank_fn fn,
                      void *arg);

#endif
