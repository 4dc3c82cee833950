/* Tessera checkpoint: sharded checkpoints of a training loop's state (the
 * parameters its outputs alias), written in the background while training
 * goes on, committed atomically, resumed exactly, and resharded onto another
 * mesh on the way in.
 *
 * On disk, DIR/step-K/ holds one .npy file per distinct shard (numpy opens
 * each one) and manifest.json: every array's name, global shape, dtype and
 * sharding, the box [start, limit) of the global array each shard file
 * holds with the file's data offset, a crc32 (zlib) per file, the step, and
 * where the input pipeline stands (the next step; the random-input seed,
 * whose counter is the step). A checkpoint is written under step-K.tmp/,
 * fsynced (files, then the directory), and renamed to step-K/ by device 0
 * once every device reported its files written: a step-K/ directory is
 * complete by construction, and nothing else is ever read.
 *
 * Replicas are written once: of the devices holding the same box, one
 * (chosen round-robin by array, to spread the bytes) writes it. A reader
 * resharding onto another mesh computes each of its tiles' overlap with the
 * manifest's boxes and reads just those ranges (pread) from the files.
 *
 * Threads: one writer thread per process. ts_ckpt_restore and
 * ts_ckpt_step_end are called from each local device's own thread and are
 * collective over the world (every device calls them at the same steps). */
#ifndef TS_CHECKPOINT_H
#define TS_CHECKPOINT_H

#include "ts_coll.h"
#include "ts_common.h"
#include "ts_hlo.h"
#include "ts_interp.h"
#include "ts_sharding.h"

#define TS_CKPT_MAX_RANK 16
#define TS_CKPT_FORMAT "tessera-checkpoint"
#define TS_CKPT_VERSION 1

/* ---- flags (tessera run) ------------------------------------------------- */

typedef struct {
  const char *dir;    /* --checkpoint-dir DIR */
  int64_t every;      /* --checkpoint-every K; 0: at the last step only */
  int64_t keep;       /* --keep N (default 3) */
  const char *resume; /* --resume DIR */
} ts_ckpt_flags_t;

enum { TS_CKPT_OPT_DIR = 0x300, TS_CKPT_OPT_EVERY, TS_CKPT_OPT_KEEP, TS_CKPT_OPT_RESUME };
/* getopt_long entries (the includer includes <getopt.h>). */
#define TS_CKPT_FLAG_OPTIONS                                            \
  {"checkpoint-dir", required_argument, NULL, TS_CKPT_OPT_DIR},         \
      {"checkpoint-every", required_argument, NULL, TS_CKPT_OPT_EVERY}, \
      {"keep", required_argument, NULL, TS_CKPT_OPT_KEEP},              \
      {"resume", required_argument, NULL, TS_CKPT_OPT_RESUME}
extern const char ts_ckpt_flags_help[];
void ts_ckpt_flags_default(ts_ckpt_flags_t *f);
/* Whether getopt code `code` is one of the flags above. */
bool ts_ckpt_flag_is(int code);
/* Applies one; prints "tessera CMD: error: ..." and returns false on a bad value. */
bool ts_ckpt_flag_parse(const char *cmd, int code, const char *arg, ts_ckpt_flags_t *f);
bool ts_ckpt_flags_any(const ts_ckpt_flags_t *f);

/* ---- manifests ------------------------------------------------------------- */

typedef struct {
  int file;                                /* index into files */
  int64_t start[TS_CKPT_MAX_RANK], limit[TS_CKPT_MAX_RANK]; /* the box of the global array */
} ts_ckpt_shard_t;

typedef struct {
  char *name;  /* JAX's op_name of the parameter ("params['w1']"), else its instruction name */
  int param;   /* entry parameter number in the module that wrote it */
  ts_elem_t elem;
  int rank;
  int64_t dims[TS_CKPT_MAX_RANK];
  char *sharding; /* XLA's text of the sharding it was written under */
  int nshards;
  ts_ckpt_shard_t *shards;
} ts_ckpt_marray_t;

typedef struct {
  char *name;       /* relative to the step directory */
  int64_t offset;   /* where the row-major data starts (after the .npy header) */
  int64_t bytes;    /* the data's bytes (the file is offset + bytes long) */
  uint32_t crc32;   /* of the whole file */
  int device;       /* the device that wrote it */
} ts_ckpt_file_t;

typedef struct {
  int64_t step;       /* the state after this many steps */
  int64_t next_step;  /* the input feeder's position: the first step to run on resume */
  uint64_t seed;      /* the random-input seed (its counter is the step) */
  char *inputs_dir;   /* --inputs DIR of the run, NULL when random */
  char *module;       /* the module's name */
  int ndevices;
  int narrays;
  ts_ckpt_marray_t *arrays;
  int nfiles;
  ts_ckpt_file_t *files;
} ts_ckpt_manifest_t;

/* Reads STEPDIR/manifest.json. Errors ("PATH: error: ...") are TS_ERR_PARSE
 * for bad content, TS_ERR_INVALID_ARGUMENT when it cannot be read. */
ts_status_t ts_ckpt_manifest_read(const char *stepdir, ts_ckpt_manifest_t *out, ts_diag_t *diag);
/* The JSON text (the caller ts_free's it). */
ts_status_t ts_ckpt_manifest_json(const ts_ckpt_manifest_t *m, char **out);
void ts_ckpt_manifest_free(ts_ckpt_manifest_t *m); /* NULL or empty: no-op */

/* The complete checkpoints in DIR (step-K/ directories), steps ascending
 * in *steps (ts_free'd by the caller); *n 0 when none or DIR is absent. */
ts_status_t ts_ckpt_list_steps(const char *dir, int64_t **steps, int *n, ts_diag_t *diag);
/* Incomplete ones (step-K.tmp/ left by a killed or failed write), likewise. */
ts_status_t ts_ckpt_list_partial(const char *dir, int64_t **steps, int *n, ts_diag_t *diag);

/* Checks file f of the manifest in STEPDIR: its size and crc32. A mismatch
 * is TS_ERR_VERIFY naming the file ("PATH: error: checksum ..."). */
ts_status_t ts_ckpt_verify_file(const char *stepdir, const ts_ckpt_manifest_t *m, int f, ts_diag_t *diag);

/* Array k as a whole, row-major, into `out` (count * storage bytes), read
 * from its shard files in STEPDIR (reading each file's box once). */
ts_status_t ts_ckpt_assemble(const char *stepdir, const ts_ckpt_manifest_t *m, int k, void *out, ts_diag_t *diag);

/* The box [start, limit) of array k's global index space into `dst`, a
 * row-major buffer of dims dst_dims whose index 0 is global index start
 * (so dst may be a padded shard: the box is its leading corner). Each
 * overlapping shard file is read for the overlap only. Fails unless the
 * shards cover the box. */
ts_status_t ts_ckpt_read_box(const char *stepdir, const ts_ckpt_manifest_t *m, int k, const int64_t *start,
                             const int64_t *limit, void *dst, const int64_t *dst_dims, ts_diag_t *diag);

/* ---- a training run ---------------------------------------------------- */

typedef struct {
  const ts_hlo_module_t *m;             /* as written: full shapes, names */
  const bool *is_weight;                /* per entry parameter: the training state */
  ts_sharding_value_t *const *param_sv; /* per parameter, NULL when not partitioned */
  int64_t partitions;                   /* device d holds partition d % partitions */
  int ndevices;                         /* in the job */
  int first, nlocal;                    /* this process's devices */
  bool loop;                            /* --loop: anything else has no state to save */
  int64_t steps;                        /* --steps */
  ts_ckpt_flags_t flags;
  uint64_t seed;                        /* --random-inputs (or 0) */
  bool seeded;                          /* the seed was given */
  const char *inputs_dir;               /* --inputs, NULL */
  bool quiet;                           /* no lines on stdout (tests) */
  double timeout_s;                     /* deadline of each wait for the writer (0: 300 s); a miss fails the run */
} ts_ckpt_opts_t;

typedef struct ts_ckpt ts_ckpt_t;

/* Prepares checkpointing and resuming for a run. With flags.resume: picks
 * the newest complete checkpoint before --steps (none at all: a warning,
 * and the run starts from step 1, so one command line serves the first
 * launch and every relaunch), reads its manifest and
 * refuses (TS_ERR_VERIFY, "--resume DIR/step-K: error: ...") a module whose
 * state differs from it in names, global shapes or dtypes, naming the first
 * difference, or a --random-inputs seed that is not the checkpoint's. With
 * flags.dir: on device 0's process, removes leftover step-*.tmp/ and starts
 * the writer thread. *out NULL when no flag asks for anything. */
ts_status_t ts_ckpt_create(const ts_ckpt_opts_t *o, ts_ckpt_t **out, ts_diag_t *diag);
/* Stops the writer (an unfinished write is abandoned, never committed). NULL: no-op. */
void ts_ckpt_destroy(ts_ckpt_t *c);

/* The first step the run executes (1, or the resumed step + 1) and the
 * random-input seed to draw with (the checkpoint's when resuming). */
int64_t ts_ckpt_first_step(const ts_ckpt_t *c);
uint64_t ts_ckpt_seed(const ts_ckpt_t *c, uint64_t seed);
/* The state arrays: how many, and the entry parameter of each. The
 * launcher passes state[k] = the device's input buffer of that parameter. */
int ts_ckpt_narrays(const ts_ckpt_t *c);
int ts_ckpt_array_param(const ts_ckpt_t *c, int k);
/* The step directory resumed from ("" when not resuming). */
const char *ts_ckpt_resumed_from(const ts_ckpt_t *c);

/* Device `local`: fills its state buffers from the resumed checkpoint (its
 * tiles only, resharding as needed) and verifies the files assigned to it
 * (file index % world size). Collective: every device learns every other's
 * verdict, so all fail together with the first failure named (a checksum
 * mismatch or truncated shard: TS_ERR_VERIFY). No-op when not resuming. */
ts_status_t ts_ckpt_restore(ts_ckpt_t *c, int local, ts_coll_comm_t *world, ts_array_t *const *state,
                            ts_diag_t *diag);

/* Device `local` at the end of step `step` (state: its buffers after it):
 * snapshots the state when a checkpoint is due (step % every == 0, or the
 * last step), hands it to the writer thread, and advances the commit of the
 * pending one: while one is pending every device exchanges its writer's
 * progress each step (a small all-gather); when all wrote theirs device 0
 * commits, when one failed (disk full, ...) device 0 removes it and warns,
 * and training goes on. Before a new snapshot and at the last step the
 * pending one is waited for. */
ts_status_t ts_ckpt_step_end(ts_ckpt_t *c, int local, ts_coll_comm_t *world, int64_t step, ts_array_t *const *state,
                             ts_diag_t *diag);

/* What the run wrote (device 0's process), for the summary line. */
typedef struct {
  int committed, failed;
  int64_t bytes;          /* per committed checkpoint, summed over devices */
  double snapshot_ms;     /* device 0's snapshot copies, summed */
  double hook_ms;         /* device 0's time in ts_ckpt_step_end before the last step (snapshots, commit rounds, waits) */
  double final_ms;        /* ... at the last step: its snapshot, write and commit waited for */
  double write_ms;        /* device 0's process: files written + fsynced, summed */
  int64_t written_bytes;  /* by this process */
  double restore_ms;      /* device 0's restore: verify + read its tiles (not the verdict exchange) */
  int64_t restored_bytes; /* by device 0 */
} ts_ckpt_stats_t;
void ts_ckpt_stats(const ts_ckpt_t *c, ts_ckpt_stats_t *out);

#endif
