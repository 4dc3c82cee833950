/* checkpoint/: what manifest.c, write.c and read.c share (boxes, paths,
 * the .npy header of a shard file, file helpers). */
#ifndef TS_CKPT_INTERNAL_H
#define TS_CKPT_INTERNAL_H

#include "ts_checkpoint.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

/* ---- the run object (write.c creates it, read.c resumes into it) ---------- */

/* One distinct box of an array, the file that holds it, the device writing it. */
typedef struct {
  int array;
  int64_t start[TS_CKPT_MAX_RANK], limit[TS_CKPT_MAX_RANK];
  int owner;  /* device */
  int pos;    /* its index among the owner's files */
  char name[48];
  int64_t bytes;
} ckpt_file_t;

typedef struct {
  const char *name;     /* arena */
  int param;
  const ts_shape_t *shape; /* global */
  const ts_sharding_value_t *sv; /* NULL: whole on every device */
  const char *sharding; /* XLA text; arena */
  int first_file, nfiles; /* its shards: files[first_file ..] */
} ckpt_array_t;

enum { CK_IDLE, CK_QUEUED, CK_DONE, CK_FAILED };

/* One local device's side of the protocol. */
typedef struct {
  int nown;
  int *own;          /* file indices it writes, ascending */
  size_t *snap_off;  /* per own file: where in snap */
  char *snap;        /* the snapshot, reused */
  size_t snap_bytes;
  uint32_t *crc;     /* per own file, by the writer */
  int state;         /* CK_*, under the mutex */
  int64_t job_step;
  char msg[400];
  bool pending;      /* the device thread's view: a checkpoint awaits its commit */
  int64_t pending_step;
  char *rec, *all;   /* the all-gather's records (mine, everyone's) */
} ckpt_local_t;

struct ts_ckpt {
  ts_ckpt_opts_t o;
  ts_arena_t *arena;
  int narrays;
  ckpt_array_t *arrays;
  int nfiles;
  ckpt_file_t *files;
  int maxown;
  size_t rec_bytes;
  ckpt_local_t *local;
  bool writing;           /* flags.dir */
  const char *dir;
  double timeout_s;       /* deadline of every wait for the writer */
  /* the writer thread */
  pthread_t thread;
  bool started, stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t commit_step;    /* device 0 asked the writer to settle this step (0: none) */
  int commit_failed;      /* the first device whose write failed, -1 none */
  char *commit_all;       /* the all-gather's records it decides on */
  /* resuming */
  bool resuming;
  char resume_dir[PATH_MAX]; /* DIR/step-K */
  ts_ckpt_manifest_t rm;
  int *rmap;              /* per array: its index in rm */
  int64_t first_step;
  uint64_t seed;
  ts_ckpt_stats_t stats;
};

/* read.c: picks and validates the checkpoint to resume from (create's part). */
ts_status_t ckpt_open_resume(ts_ckpt_t *c, ts_diag_t *diag);

/* Copies the box of `extent` elements per dimension from src (a row-major
 * array of src_dims, box corner src_off) to dst (dst_dims, corner dst_off),
 * as runs of contiguous elements: run(arg, dst element index, src element
 * index, elements). Trailing dimensions that both sides hold whole merge
 * into one run. Returns the first non-OK status run returned. */
typedef ts_status_t (*ckpt_run_fn)(void *arg, int64_t dst_at, int64_t src_at, int64_t n);
ts_status_t ckpt_box_runs(int rank, const int64_t *extent, const int64_t *dst_dims, const int64_t *dst_off,
                          const int64_t *src_dims, const int64_t *src_off, ckpt_run_fn run, void *arg);

/* The .npy header (format 1.0, padded to a multiple of 64 bytes) of a shard
 * of `elem` with `rank` dims: raw storage bits under a dtype of the same
 * size (bf16 as <u2, f8 as |u1: numpy has no such types) so the data is the
 * runtime's bytes verbatim. Returns the header's length (0: too long). */
size_t ckpt_npy_header(ts_elem_t elem, int rank, const int64_t *dims, char *buf, size_t cap);

/* "DIR/step-K" or "DIR/step-K.tmp". */
void ckpt_step_path(char *buf, size_t n, const char *dir, int64_t step, bool tmp);
/* mkdir that accepts an existing directory. */
int ckpt_mkdir(const char *path);
/* fsync of a directory (its entries). 0 or -1 with errno. */
int ckpt_fsync_dir(const char *path);
/* Removes a flat directory: its files, then itself. */
int ckpt_remove_dir(const char *path);

uint32_t ckpt_crc32(uint32_t crc, const void *p, size_t n);
/* Parameter p's checkpoint name: its metadata op_name, else its name. Arena string. */
const char *ckpt_param_name(ts_arena_t *a, const ts_hlo_instr_t *param);

/* Writes text to PATH, then fsyncs it (not atomic: PATH lies in a .tmp directory). */
ts_status_t ckpt_write_synced(const char *path, const void *data, size_t len, ts_diag_t *diag);

#endif
