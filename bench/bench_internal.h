/* What the files of the performance-table collector share. perftable.c owns
 * the output (table + plot) and small helpers; perftable_coll.c and
 * perftable_gemm.c measure; perftable_check.c scores a table;
 * perftable_progress.c and perftable_svg.c display. */
#ifndef TS_BENCH_INTERNAL_H
#define TS_BENCH_INTERNAL_H

#include "ts_bench.h"
#include "ts_costmodel.h"
#include "ts_hlo.h"

#include <stdio.h>

#define PT_CMD "tessera perf-table"

/* Seconds on a monotonic clock. */
double pt_now(void);

/* ---- output: the table file and the plot next to it -------------------- */

/* Checks the output before anything is measured: a name the writer knows,
 * and, when merging, that an existing table there loads and is of `kind`.
 * Returns 0 or prints the error and returns 2. */
int pt_output_open(ts_bench_pt_output_t *o, ts_perf_table_kind_t kind);
/* Merges `fresh` into the existing table (when there is one), writes the
 * table atomically, then the SVG plot of `device_key` next to it (the table's
 * name with .svg for its extension). Returns an exit code. */
int pt_output_write(ts_bench_pt_output_t *o, const ts_perf_table_t *fresh, const char *device_key);
void pt_output_close(ts_bench_pt_output_t *o);
/* TABLE.txtpb -> TABLE.svg (the caller frees with ts_free); NULL on OOM. */
char *pt_svg_path(const char *table_path);

/* ---- progress (perftable_progress.c) ----------------------------------- */

/* A sweep of `points` steps whose costs are roughly proportional to the
 * `work` each step is given: the ETA is elapsed * remaining work / work done.
 * AUTO is a bar on a terminal (stderr) and lines otherwise. */
typedef struct {
  ts_bench_progress_mode_t mode;
  FILE *f;
  size_t points, done;
  double work, work_done;
  double t0, last_draw;
} pt_progress_t;

void pt_progress_start(pt_progress_t *p, ts_bench_progress_mode_t mode, size_t points, double work);
/* One step done; `what` names it and its result ("all-reduce ... 8.5 GB/s"). */
void pt_progress_step(pt_progress_t *p, double work, const char *what);
/* The final line ("done: N points in 3m05s"). */
void pt_progress_finish(pt_progress_t *p);

/* ---- plots (perftable_svg.c) ------------------------------------------- */

/* Throughput vs tensor size, one panel per collective, one line per device
 * count (and transfer scheme, dashed), from the table's entries for `device_key`. */
ts_status_t pt_svg_collectives(const ts_perf_table_t *t, const char *device_key, ts_buf_t *out, ts_diag_t *diag);
/* FLOP/s vs FLOPs per dot, one panel per dtype key, one colour per batch. */
ts_status_t pt_svg_gemm(const ts_perf_table_t *t, const char *device_key, ts_buf_t *out, ts_diag_t *diag);

#endif
