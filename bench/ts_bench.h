/* Tessera benchmarks as a library: the collective benchmark (nccl-tests
 * style tables) and the performance-table collector (XLA's formats), with
 * the worlds they run in. `tessera bench` and `tessera perf-table` parse the
 * flags into these options; the functions here measure and print. They
 * return process exit codes (0 ok, 1 wrong results or a failed check,
 * 2 bad input, 3 cannot run here, 4 a runtime failure), as the ranks of one
 * world must agree on one. */
#ifndef TS_BENCH_H
#define TS_BENCH_H

#include "ts_coll.h"
#include "ts_common.h"
#include "ts_costmodel.h"

/* ---- worlds (world.c) ------------------------------------------------------ */

/* A size such as 4096, 4K, 1.5M or 2GB: K/M/G are binary (1024-based), the
 * trailing B optional. False unless it is positive and at most 8 GiB. */
bool ts_bench_parse_size(const char *s, int64_t *out);

/* Whether this process was started by mpirun (Open MPI, or a PMI launcher). */
bool ts_bench_under_mpirun(void);

/* One rank's work: `comm` is its handle on the world, `mpi` true when the
 * world is MPI_COMM_WORLD. Returns the rank's exit code (0 ok). */
typedef int (*ts_bench_rank_fn)(void *arg, ts_coll_comm_t *comm, bool mpi);

/* Runs fn on n in-process ranks (threads backend), one thread each, and
 * returns the largest exit code. `cmd` ("tessera bench") prefixes errors. */
int ts_bench_world_threads(const char *cmd, int n, ts_bench_rank_fn fn, void *arg);

/* Initialises MPI, runs fn on this process's rank of the mpirun world with
 * `backend` (mpi or ucx) as the data path, finalises, returns fn's code.
 * Builds without MPI or the backend: a message and 3 (cannot run here). */
int ts_bench_world_mpi(const char *cmd, ts_coll_backend_t backend, int *argc, char ***argv, ts_bench_rank_fn fn,
                       void *arg);

/* ---- the collective benchmark (coll_bench.c) -------------------------------- */

/* The collectives it times, in table order. */
enum { TS_BENCH_COLL_NKINDS = 6 };
extern const ts_coll_kind_t ts_bench_coll_kinds[TS_BENCH_COLL_NKINDS];

/* Element types it can fill and check exactly. */
bool ts_bench_coll_type_ok(ts_elem_t t);

/* nccl-tests' bus bandwidth factor of a collective over n ranks:
 * all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n;
 * the others 1. */
double ts_bench_busbw_factor(ts_coll_kind_t k, int n);

typedef struct {
  int64_t minb, maxb, factor; /* sizes S = minb, minb*factor, ... <= maxb (bytes) */
  int iters, warmup, check;   /* timed, untimed, and checked iterations per size */
  ts_elem_t type;
  ts_coll_redop_t op;
  bool kinds[TS_COLL_KIND_COUNT]; /* which of ts_bench_coll_kinds */
  ts_coll_backend_t backend;      /* threads: in-process ranks; mpi, ucx: the mpirun world */
  int devices;                    /* in-process ranks */
  bool peer;                      /* also time Open MPI's collectives (mpirun world) */
  bool memcpy_col;                /* the memcpy column */
  bool use_malloc;                /* buffers from malloc, not ts_coll_alloc */
  const char *algorithm;          /* forced algorithm, or NULL */
  int slices;                     /* > 1: the ranks form that many slices */
} ts_bench_coll_opts_t;

/* Runs the benchmark in the world o->backend names and prints one table per
 * collective on stdout (world rank 0). argc/argv go to MPI_Init. Returns 1
 * when a checked iteration found a wrong element. */
int ts_bench_collectives(const ts_bench_coll_opts_t *o, int *argc, char ***argv);

/* ---- the performance-table collector (perftable*.c) ------------------------- */

/* "tessera perf-table: error: <fmt>" on stderr in one write (the lines of
 * several mpirun ranks do not interleave); returns 2 (bad input). */
int ts_bench_pt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Small helpers the collector's statistics and labels use. */
double ts_bench_median(double *v, int n);               /* sorts v; the mean of the middle two for even n */
void ts_bench_format_bytes(int64_t bytes, char *buf, size_t n);  /* 1024 -> "1K", 3 << 20 -> "3M", 1000 -> "1000" */
void ts_bench_format_duration(double s, char *buf, size_t n);    /* "850ms", "42s", "3m05s", "1h02m" */
/* A 32-hex-digit fingerprint of `desc` (two FNV-1a 64-bit hashes): the same
 * configuration measured again gets the same one, so merging replaces it. */
void ts_bench_fingerprint(const char *desc, char out[33]);
/* The xla.PrimitiveType number of an element type (F32 = 11); 0 when the
 * table format has none. */
int ts_bench_xla_type(ts_elem_t e);

typedef enum {
  TS_BENCH_PROGRESS_AUTO, /* a bar on a terminal (stderr), lines otherwise */
  TS_BENCH_PROGRESS_BAR,
  TS_BENCH_PROGRESS_LINES,
  TS_BENCH_PROGRESS_NONE,
} ts_bench_progress_mode_t;
bool ts_bench_progress_mode_from_name(const char *s, ts_bench_progress_mode_t *out);

/* Where a sweep's table goes. */
typedef struct {
  const char *path;      /* -o; NULL: text on stdout, no plot */
  bool merge;            /* merge into the table already at path (default) */
  ts_perf_table_t *base; /* that table, loaded before measuring */
} ts_bench_pt_output_t;

/* What both sweeps take: -n RUNS, -w WARMUP, --device-key, --progress,
 * --no-merge, -o TABLE. */
typedef struct {
  int iters, warmup;
  ts_bench_progress_mode_t progress;
  char device_key[256];
  ts_bench_pt_output_t out;
} ts_bench_pt_sweep_t;

enum { TS_BENCH_PT_MAX_GROUP_SIZES = 16, TS_BENCH_PT_MAX_TYPES = 16, TS_BENCH_PT_MAX_RANKS = 1024 };

/* perf-table collectives (perftable_coll.c). */
typedef struct {
  int64_t minb, maxb, factor;
  int rounds; /* sweeps; each point's median over them counts */
  bool kinds[TS_COST_COLL_COUNT];
  int64_t group_sizes[TS_BENCH_PT_MAX_GROUP_SIZES];
  int ngroup_sizes;
  bool schemes[TS_SCHEME_COUNT];
  ts_elem_t types[TS_BENCH_PT_MAX_TYPES];
  int ntypes;
  ts_coll_backend_t backend; /* threads, or mpi / ucx under mpirun */
  int devices;               /* in-process ranks (a multiple of every group size) */
  ts_bench_pt_sweep_t sw;
  /* filled by the run */
  ts_perf_table_t *table; /* world rank 0 adds to it */
  bool root;              /* this process held world rank 0 */
} ts_bench_pt_coll_opts_t;

/* Checks the output, sweeps in the world o->backend names, and writes the
 * table (merged) and its plot. argc/argv go to MPI_Init. */
int ts_bench_pt_collectives(ts_bench_pt_coll_opts_t *o, int *argc, char ***argv);

/* perf-table gemm (perftable_gemm.c). */
typedef struct {
  ts_elem_t lhs, rhs, out;
  char key[64]; /* "bf16xbf16->bf16" */
} ts_bench_pt_dtype_t;

/* "f32", or "LHSxRHS->OUT" with HLO element names (XLA's key). */
bool ts_bench_pt_dtype_parse(const char *s, ts_bench_pt_dtype_t *t);
/* Whether the dot kernel runs it: a 1x1x1 dot of it verifies and runs. */
bool ts_bench_pt_dtype_runs(const ts_bench_pt_dtype_t *t);

enum { TS_BENCH_PT_MAX_DIMS = 32 };
typedef struct {
  int64_t batch[TS_BENCH_PT_MAX_DIMS], dims[3][TS_BENCH_PT_MAX_DIMS]; /* m, n, k */
  int nbatch, ndims[3];
  ts_bench_pt_dtype_t types[TS_BENCH_PT_MAX_TYPES];
  int ntypes;
  ts_bench_pt_sweep_t sw;
} ts_bench_pt_gemm_opts_t;

/* Times the runtime's dot kernel over the grid and writes the table. */
int ts_bench_pt_gemm(ts_bench_pt_gemm_opts_t *o);

/* perf-table check (perftable_check.c). */
typedef struct {
  ts_interp_mode_t modes[2];
  int nmodes;
  const char *device; /* only this device key, or NULL */
  double max_mape;    /* >= 0: exit 1 when a device's overall MAPE exceeds it */
  bool verbose;       /* every point */
} ts_bench_pt_check_opts_t;

/* Scores the leave-one-out predictions of every table (and device) named. */
int ts_bench_pt_check(const char *const *paths, int npaths, const ts_bench_pt_check_opts_t *o);

#endif
