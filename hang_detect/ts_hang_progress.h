/* Tessera hang detection: the per-worker progress record. The runtime writes
 * it on the hot path with relaxed atomic stores (no locks); the heartbeat
 * thread of hang_detect/ reads it at any time. Only this record is shared
 * between the runtime and the hang detector; the rest of hang_detect/ is in
 * ts_hang.h. */
#ifndef TS_HANG_PROGRESS_H
#define TS_HANG_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>

struct ts_coll_comm;

/* What the worker is doing now. */
typedef enum {
  TS_HANG_IDLE,        /* between steps, or not started */
  TS_HANG_COMPUTE,     /* running a kernel (instr says which) */
  TS_HANG_COLLECTIVE,  /* waiting for a collective (instr: the sync op or the -done) */
  TS_HANG_INPUT_WAIT,  /* waiting for the input feeder's next batch */
  TS_HANG_FINISHED,    /* every step ran */
  TS_HANG_FAILED,      /* stopped with an error (error says which) */
} ts_hang_activity_t;

typedef struct ts_hang_progress {
  /* Identity, written once before the first step. */
  char module_name[128];
  uint64_t fingerprint;         /* of the per-device program (ts_hlo fingerprint of its text) */
  uint64_t launch_id;           /* equal on every worker of one launch */
  int32_t rank, size;           /* world rank and size */
  char host[64];
  /* Names of the program's instructions, indexed by `instr` (owned by the
   * runtime program, valid while it lives); ninstrs entries. */
  const char *const *instr_names;
  int32_t ninstrs;
  /* Communicators whose ts_coll_records describe this worker's collectives
   * (the world first, then sub-communicators); owned by the runtime. */
  struct ts_coll_comm *const *comms;
  int32_t ncomms;

  /* Hot fields. */
  _Atomic uint64_t progress;    /* bumped after every instruction (any change means progress) */
  _Atomic int64_t step;         /* the step in flight or last run, from 1; 0 before the first */
  _Atomic int32_t activity;     /* ts_hang_activity_t */
  _Atomic int32_t instr;        /* index into instr_names, -1 when none */
  _Atomic uint64_t t_progress_ns; /* CLOCK_MONOTONIC ns of the last bump */
  _Atomic int32_t error;        /* ts_status_t the worker failed with (TS_HANG_FAILED) */
  /* Per-step time split, for straggler detection (ns, of the last finished step). */
  _Atomic uint64_t last_step_ns, last_compute_ns, last_collective_ns;
  /* 1 + the world rank this worker waits for when its collective records
   * cannot say it (fault injection's netdrop; a transport error naming the
   * peer); 0: none. Offset by one so that a zeroed record means none. */
  _Atomic int32_t waiting_on1;
} ts_hang_progress_t;

#endif
