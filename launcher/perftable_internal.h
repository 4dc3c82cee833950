/* tessera perf-table: what its files share. cmd_perftable.c dispatches the
 * subcommands and owns the output (table + plot); perftable_coll.c and
 * perftable_gemm.c measure; perftable_check.c scores a table;
 * perftable_progress.c and perftable_svg.c display. */
#ifndef TS_PERFTABLE_INTERNAL_H
#define TS_PERFTABLE_INTERNAL_H

#include "ts_costmodel.h"
#include "ts_hlo.h"

#define PT_CMD "tessera perf-table"

int pt_cmd_collectives(int argc, char **argv); /* perftable_coll.c */
int pt_cmd_gemm(int argc, char **argv);        /* perftable_gemm.c */
int pt_cmd_check(int argc, char **argv);       /* perftable_check.c */

/* "tessera perf-table: error: <fmt>" on stderr in one write; returns 2
 * (bad input). */
int pt_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- small helpers (cmd_perftable.c) ----------------------------------- */

/* The xla.PrimitiveType number of an element type (F32 = 11); 0 when the
 * table format has none. */
int pt_xla_type(ts_elem_t e);
/* Sorts v and returns its median (the mean of the middle two for even n). */
double pt_median(double *v, int n);
/* A 32-hex-digit fingerprint of `desc` (two FNV-1a 64-bit hashes): the same
 * configuration measured again gets the same one, so merging replaces it. */
void pt_fingerprint(const char *desc, char out[33]);
/* 1024 -> "1K", 3 << 20 -> "3M", 1000 -> "1000". */
void pt_format_bytes(int64_t bytes, char *buf, size_t n);
/* Seconds as "850ms", "42s", "3m05s", "1h02m". */
void pt_format_duration(double s, char *buf, size_t n);
/* Seconds on a monotonic clock. */
double pt_now(void);
/* A comma-separated list of positive integers (sizes with K/M/G allowed when
 * `sizes`); false on a bad item, an empty list or more than `max` items. */
bool pt_parse_int_list(const char *s, bool sizes, int64_t *out, int max, int *n);

/* ---- output: the table file and the plot next to it -------------------- */

typedef struct {
  const char *path;      /* -o; NULL: text on stdout, no plot */
  bool merge;            /* merge into the table already at path (default) */
  ts_perf_table_t *base; /* that table, loaded by pt_output_open */
} pt_output_t;

/* Checks the output before anything is measured: a name the writer knows,
 * and, when merging, that an existing table there loads and is of `kind`.
 * Returns 0 or prints the error and returns 2. */
int pt_output_open(pt_output_t *o, ts_perf_table_kind_t kind);
/* Merges `fresh` into the existing table (when there is one), writes the
 * table atomically, then the SVG plot of `device_key` next to it (the table's
 * name with .svg for its extension). Returns an exit code. */
int pt_output_write(pt_output_t *o, const ts_perf_table_t *fresh, const char *device_key);
void pt_output_close(pt_output_t *o);
/* TABLE.txtpb -> TABLE.svg (the caller frees with ts_free); NULL on OOM. */
char *pt_svg_path(const char *table_path);

/* ---- progress (perftable_progress.c) ----------------------------------- */

typedef enum { PT_PROGRESS_AUTO, PT_PROGRESS_BAR, PT_PROGRESS_LINES, PT_PROGRESS_NONE } pt_progress_mode_t;
bool pt_progress_mode_from_name(const char *s, pt_progress_mode_t *out);

/* A sweep of `points` steps whose costs are roughly proportional to the
 * `work` each step is given: the ETA is elapsed * remaining work / work done.
 * AUTO is a bar on a terminal (stderr) and lines otherwise. */
typedef struct {
  pt_progress_mode_t mode;
  FILE *f;
  size_t points, done;
  double work, work_done;
  double t0, last_draw;
} pt_progress_t;

void pt_progress_start(pt_progress_t *p, pt_progress_mode_t mode, size_t points, double work);
/* One step done; `what` names it and its result ("all-reduce ... 8.5 GB/s"). */
void pt_progress_step(pt_progress_t *p, double work, const char *what);
/* The final line ("done: N points in 3m05s"). */
void pt_progress_finish(pt_progress_t *p);

/* ---- the flags both sweeps take (cmd_perftable.c) ----------------------- */

/* -n RUNS, -w WARMUP, --device-key, --progress, --no-merge, -o TABLE. */
typedef struct {
  int iters, warmup;
  pt_progress_mode_t progress;
  char device_key[256];
  pt_output_t out;
} pt_sweep_flags_t;

/* getopt codes of the long-only ones (the others are their letters). */
enum { PT_OPT_DEVICE_KEY = 0x100, PT_OPT_PROGRESS, PT_OPT_NO_MERGE };

/* Applies getopt's (c, arg) when it is one of these flags: 1 when applied,
 * 0 when c is not one of them, 2 after printing the error (bad value). */
int pt_sweep_flag(int c, const char *arg, pt_sweep_flags_t *f);

/* ---- plots (perftable_svg.c) ------------------------------------------- */

/* Throughput vs tensor size, one panel per collective, one line per device
 * count (and transfer scheme, dashed), from the table's entries for `device_key`. */
ts_status_t pt_svg_collectives(const ts_perf_table_t *t, const char *device_key, ts_buf_t *out, ts_diag_t *diag);
/* FLOP/s vs FLOPs per dot, one panel per dtype key, one colour per batch. */
ts_status_t pt_svg_gemm(const ts_perf_table_t *t, const char *device_key, ts_buf_t *out, ts_diag_t *diag);

#endif
