/* tessera run's pieces: where the ranks come from (run_env.c) and the
 * compiled kernels (run_compiled.c). The command itself is cmd_run.c; what
 * the devices are fed, the comparison of their outputs and the trace are the
 * runtime's (ts_runtime.h). */
#ifndef TS_RUN_INTERNAL_H
#define TS_RUN_INTERNAL_H

#include "ts_coll.h"
#include "ts_hlo.h"
#include "ts_interp.h"
#include "ts_runtime.h"
#include "ts_sharding.h"

#include <stdio.h>

/* ---- run_env.c: the world -------------------------------------------------- */

typedef enum {
  RUN_THREADS, /* --devices N: N devices as N threads of this process */
  RUN_MPI,     /* launched by mpirun / srun: one device per process, MPI bootstrap */
  RUN_TCP,     /* --task_id --num_nodes --address: one device per process, TCP rendezvous */
} run_mode_t;

typedef struct {
  run_mode_t mode;
  int rank, size;             /* this process in the job (threads: 0 of 1) */
  int local_rank, local_size; /* this process on its host */
  int ndevices;               /* devices in the job */
  const char *launcher;       /* "mpirun", "srun", "flags", "--devices" */
  char host[64];
} run_env_t;

/* Reads the rank, size and local rank from Open MPI's environment
 * (OMPI_COMM_WORLD_*), SLURM's (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID),
 * PMIx's, or the flags (task_id >= 0). devices > 0 asks for the in-process
 * mode; compile_only with none of these is one process that runs nothing.
 * Usage errors go to diag. */
ts_status_t run_env_detect(int64_t devices, int64_t task_id, int64_t num_nodes, const char *address,
                           bool compile_only, run_env_t *env, ts_diag_t *diag);

/* Binds the calling thread (threads mode) or process to its share of the
 * cores this process may use (hwloc; run_host_cores): `slot` of `nslots`
 * on this host. Returns run_core_share(nslots); binds nothing when the
 * slots outnumber the cores (oversubscribed: the kernel spreads them better
 * than a fixed pinning would). */
int run_bind(int slot, int nslots, bool whole_process);
/* The cores this process may use: those its binding at the first call
 * touches (hwloc; 1 when it cannot tell). */
int run_host_cores(void);
/* One of `nslots` sharers' part of run_host_cores(), at least 1: what a
 * rank (nslots = its host's ranks) or a device thread gives OpenBLAS, so
 * that the slots' threads together never outnumber the cores. */
int run_core_share(int nslots);

/* The number of distinct hosts in the world (hostnames gathered over
 * `world`), when the ranks of each host are contiguous and equally many;
 * otherwise 1. */
ts_status_t run_count_hosts(ts_coll_comm_t *world, const char *host, int *nhosts);

/* ---- compiled kernels (run_compiled.c) -------------------------------------------- */

typedef struct ts_codegen ts_codegen_t;
/* Fuses the per-device program pm in place (verified after), compiles the
 * fusions it can and points po at their kernels (*cg owns them; destroy
 * after the program). A JIT that cannot start warns once and leaves po
 * alone. report: print the counts and times. kernel_cache: use the on-disk
 * kernel cache (--no-kernel-cache turns it off). */
ts_status_t run_compiled_kernels(ts_hlo_module_t *pm, int64_t R, int64_t P, bool report, bool kernel_cache,
                                 ts_rt_program_opts_t *po, ts_codegen_t **cg, ts_diag_t *diag);

#endif
