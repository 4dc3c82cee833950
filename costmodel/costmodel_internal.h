/* Shared inside costmodel/: the generated protobuf-c messages, the protobuf-c
 * allocator over ts_malloc, the text format, and the N-d point set that both
 * interpolators are built on. */
#ifndef TS_COSTMODEL_INTERNAL_H
#define TS_COSTMODEL_INTERNAL_H

#include "perf_tables.pb-c.h"
#include "ts_costmodel.h"

/* Every message we build or unpack lives in this allocator, so
 * protobuf_c_message_free_unpacked(msg, &ts_pb_allocator) frees either kind. */
extern ProtobufCAllocator ts_pb_allocator;

struct ts_perf_table {
  ts_perf_table_kind_t kind;
  ProtobufCMessage *msg; /* Xla__DeviceHloInstructionProfiles or Xla__GemmPerfTable */
};

/* ---- textformat.c: protobuf text format for any message, by descriptor ---- */

/* Parses the whole source into a new message of type `desc`. On error returns
 * TS_ERR_PARSE, reports "file:line:col: error: ..." and sets *err_offset to the
 * byte offset of the error (when err_offset is not NULL). */
ts_status_t ts_textpb_parse(const ts_source_t *src, const ProtobufCMessageDescriptor *desc,
                            ProtobufCMessage **out, size_t *err_offset, ts_diag_t *diag);
/* Appends `msg` in text format (two-space indents, fields in declaration order,
 * proto3 defaults omitted). */
void ts_textpb_print(const ProtobufCMessage *msg, ts_buf_t *out);

/* ---- points.c: an N-d set of (point, value), N <= 4 ------------------------ */

#define TS_POINTS_MAX_DIMS 4

typedef struct {
  int dims;
  size_t n, cap;
  int64_t *coords; /* n x dims, sorted lexicographically, unique after finish */
  double *values;
  int64_t *axis[TS_POINTS_MAX_DIMS]; /* sorted unique coordinates per dim */
  size_t axis_n[TS_POINTS_MAX_DIMS];
} ts_points_t;

void ts_points_init(ts_points_t *p, int dims);
void ts_points_free(ts_points_t *p);
/* Coordinates must be > 0. A point added twice keeps the later value. */
ts_status_t ts_points_add(ts_points_t *p, const int64_t *x, double value);
/* Sorts, drops duplicates, builds the axes. Call once, after the last add. */
ts_status_t ts_points_finish(ts_points_t *p);

/* Inverse-distance weighted average at x, coordinates clamped into the axes'
 * range. Distances are Euclidean in log2 of each coordinate (every axis is a
 * doubling grid), weights 1/d^2. The points weighed are those of the cell
 * around x: per dim, x itself where it is a stored coordinate, else the
 * nearest stored coordinates below and above (XLA's corners); a stored x is
 * returned exactly. If the cell holds no point (a hole, or the point `skip`
 * left out), the box one stored step away in every dim weighs in; if that is
 * empty too, every point does. `skip` (or SIZE_MAX) is a point index to leave
 * out. False when no point is left. */
bool ts_points_weighted(const ts_points_t *p, const int64_t *x, size_t skip, double *value);
/* XLA's EuclideanComplementInterpolator: dim by dim, among the points that
 * match the prefix snapped so far, take the nearer stored coordinate (raw
 * units, ties go up). */
bool ts_points_nearest(const ts_points_t *p, const int64_t *x, size_t skip, double *value);

/* Leave-one-out scoring (ts_coll_interp_loo, ts_gemm_interp_loo): counts
 * one point into r and, when it was predicted, its absolute percentage
 * error into *ape_sum (from 0) and r->max_ape; otherwise *predicted_s
 * becomes -1. The mean is *ape_sum / r->predicted. */
void ts_loo_add(ts_loo_result_t *r, double *ape_sum, bool predicted, double *predicted_s, double measured_s);

#endif
