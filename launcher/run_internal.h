/* tessera run's pieces: where the ranks come from (run_env.c), what the
 * devices are fed (run_inputs.c), the timeline it writes (run_trace.c). The
 * command itself is cmd_run.c. */
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
 * host's cores through hwloc: `slot` of `nslots` on this host. Returns the
 * cores each slot gets (at least 1); binds nothing when the slots outnumber
 * the cores (oversubscribed: the kernel spreads them better than a fixed
 * pinning would). */
int run_bind(int slot, int nslots, bool whole_process);
/* This host's cores (hwloc; 1 when it cannot tell). */
int run_host_cores(void);

/* The number of distinct hosts in the world (hostnames gathered over
 * `world`), when the ranks of each host are contiguous and equally many;
 * otherwise 1. */
ts_status_t run_count_hosts(ts_coll_comm_t *world, const char *host, int *nhosts);

/* ---- run_inputs.c: parameters and the input feeder ------------------------ */

typedef struct {
  const ts_hlo_module_t *m; /* the module as written (full shapes) */
  const char *dir;          /* --inputs DIR, or NULL: seeded random */
  uint64_t seed;
  const bool *is_weight;    /* per entry parameter: an output updates it (training state) */
  /* Draw weights as a model initialiser would (--loop: a training loop);
   * otherwise they are drawn like any other input, in (0, 1]: positive, so
   * that optimizer state (Adam's second moments) stays valid under sqrt. */
  bool init_weights;
} run_inputs_t;

/* Parameter p's full value at step `step` (from 1): weights from
 * DIR/param<p>.npy or initialised (ts_interp_init_weight); data from
 * DIR/step<K>/param<p>.npy when present, else DIR/param<p>.npy, else drawn
 * (step 1 draws exactly what ts_interp_random_args(seed) does, so a one-step
 * run matches `tessera check`). A new reference. */
ts_status_t run_param_value(const run_inputs_t *in, int p, int64_t step, ts_value_t **out, ts_diag_t *diag);

/* The input feeder: a thread that prepares the data parameters (those not
 * is_weight) of steps 2..last ahead of the devices, in a queue of `depth`
 * steps, so input preparation overlaps compute and a stalled input pipeline
 * shows up as devices waiting for input. Every one of `consumers` devices
 * takes each step once. */
typedef struct run_feeder run_feeder_t;
ts_status_t run_feeder_start(const run_inputs_t *in, int64_t first, int64_t last, int depth, int consumers,
                             run_feeder_t **out);
/* Step `step`'s values (vals[p] for data parameters, NULL for weights):
 * waits up to timeout_s; TS_ERR_TIMEOUT after that, or the feeder's error
 * (then diag says why). Pair with run_feeder_release. */
ts_status_t run_feeder_acquire(run_feeder_t *f, int64_t step, double timeout_s, ts_value_t *const **vals,
                               ts_diag_t *diag);
void run_feeder_release(run_feeder_t *f, int64_t step);
/* Stops producing (the input-stall fault: devices then wait for input). */
void run_feeder_pause(run_feeder_t *f);
void run_feeder_stop(run_feeder_t *f); /* joins and frees; NULL is a no-op */

/* ---- run_trace.c: the Chrome trace --------------------------------------- */

/* Writes a Chrome/Perfetto trace: one process track per rank with a
 * compute and a collective thread; events[r][0..n[r]) are rank r's with
 * times relative to its start. Atomically. */
ts_status_t run_trace_write(const char *path, const char *const *instr_names, int nranks,
                            const ts_rt_event_t *const *events, const size_t *n, const char *const *hosts,
                            ts_diag_t *diag);

/* ---- compiled kernels (run_compiled.c) -------------------------------------------- */

typedef struct ts_codegen ts_codegen_t;
/* Fuses the per-device program pm in place (verified after), compiles the
 * fusions it can and points po at their kernels (*cg owns them; destroy
 * after the program). A JIT that cannot start warns once and leaves po
 * alone. report: print the counts and times. */
ts_status_t run_compiled_kernels(ts_hlo_module_t *pm, int64_t R, int64_t P, bool report, ts_rt_program_opts_t *po,
                                 ts_codegen_t **cg, ts_diag_t *diag);

#endif
