/* Tessera cost model: what a collective or a dot costs, for the latency-hiding
 * scheduler and the performance-table collector. Sources follow XLA's LHS cost
 * model (shared/reference/cost_models.md): performance tables in XLA's format
 * with their interpolators, and the S-curve analytical model for collectives
 * that cross slices (DCN). Times are in seconds, sizes in bytes. */
#ifndef TS_COSTMODEL_H
#define TS_COSTMODEL_H

#include "ts_collective.h"
#include "ts_common.h"

/* ---- vocabulary -------------------------------------------------------- */

/* Collective kinds: ts_coll_kind_t (ts_collective.h). The model prices the
 * first TS_COST_COLL_COUNT of them, all-reduce to collective-permute. */
#define TS_COST_COLL_COUNT (TS_COLL_COLLECTIVE_PERMUTE + 1)

/* A kind the model prices, by its name or its async -start form's. */
bool ts_cost_coll_from_name(const char *s, ts_coll_kind_t *out);

/* The transfer scheme, the second half of a table key. For grouped collectives
 * it is how groups are laid out: contiguous device ids ([G,D]<=[N], XLA's
 * non-rail-aligned) or strided ([G,D]<=[D,G]T(1,0), rail-aligned). For
 * collective-permute it is the pattern, as XLA's CollectivePermuteCostModelType. */
typedef enum {
  TS_SCHEME_CONTIGUOUS,
  TS_SCHEME_STRIDED,
  TS_SCHEME_ONE_WAY,               /* i -> i + n/2: a device only sends or only receives */
  TS_SCHEME_TWO_WAY_ALL_MUTUAL,    /* 2i <-> 2i+1 */
  TS_SCHEME_TWO_WAY_HAS_NON_MUTUAL, /* the ring i -> i+1 mod n */
  TS_SCHEME_COUNT
} ts_transfer_scheme_t;

/* "non-rail-aligned", "rail-aligned", "one-way", "two-way-all-mutual",
 * "two-way-has-non-mutual". */
const char *ts_transfer_scheme_name(ts_transfer_scheme_t s);
bool ts_transfer_scheme_from_name(const char *s, ts_transfer_scheme_t *out);

/* Interpolation between table points. WEIGHTED (the default) is an
 * inverse-distance weighted average: for GEMMs of FLOP/s, as XLA's
 * documentation describes; for collectives of time, see the collective
 * interpolator below. NEAREST is the per-dimension snap to a stored point
 * that XLA's code does (EuclideanComplementInterpolator, reference §2.1-2.2). */
typedef enum { TS_INTERP_WEIGHTED, TS_INTERP_NEAREST } ts_interp_mode_t;
const char *ts_interp_mode_name(ts_interp_mode_t m); /* "weighted", "nearest" */

/* ---- performance tables (perf_table.c, textformat.c) ------------------- */

/* A table file holds one of XLA's two messages: collectives
 * (xla.gpu.DeviceHloInstructionProfiles) or GEMMs (xla.GemmPerfTable), each
 * keyed by a device name ("sm_90", "sm_100_B200", "host:<cpu model>"). */
typedef enum { TS_PERF_TABLE_COLLECTIVES, TS_PERF_TABLE_GEMM } ts_perf_table_kind_t;
typedef struct ts_perf_table ts_perf_table_t;

ts_status_t ts_perf_table_create(ts_perf_table_kind_t kind, ts_perf_table_t **out);
void ts_perf_table_destroy(ts_perf_table_t *t); /* NULL is a no-op */
ts_perf_table_kind_t ts_perf_table_kind(const ts_perf_table_t *t);

/* Reads PATH: binary protobuf when its name ends in .pb or .binpb, XLA's text
 * format otherwise (.txtpb, .pbtxt, ...). The message is told by the
 * "# proto-message:" header when there is one, else by the content. Text
 * errors read "PATH:line:col: error: ..." with the source line and a caret. */
ts_status_t ts_perf_table_load(const char *path, ts_perf_table_t **out, ts_diag_t *diag);
ts_status_t ts_perf_table_parse_text(const ts_source_t *src, ts_perf_table_t **out, ts_diag_t *diag);
ts_status_t ts_perf_table_parse_binary(const char *name, const void *data, size_t len,
                                       ts_perf_table_t **out, ts_diag_t *diag);

/* Writes atomically, binary for .pb/.binpb, text for .txtpb/.pbtxt/.textproto;
 * any other name is an error. Text starts with XLA's proto-file/proto-message
 * header comments. */
ts_status_t ts_perf_table_write(const ts_perf_table_t *t, const char *path, ts_diag_t *diag);
/* Appends the text form to `out`. */
ts_status_t ts_perf_table_to_text(const ts_perf_table_t *t, ts_buf_t *out);
/* The binary form in a ts_malloc'd buffer the caller frees with ts_free. */
ts_status_t ts_perf_table_to_binary(const ts_perf_table_t *t, uint8_t **data, size_t *len);

/* Device keys in file order. The strings live as long as the table. */
size_t ts_perf_table_num_devices(const ts_perf_table_t *t);
const char *ts_perf_table_device(const ts_perf_table_t *t, size_t i);

/* Adds `src`'s entries to `dst` (same kind), per device key. Collective entries
 * are deduplicated by fingerprint (as XLA's collector merges; entries without
 * one are always kept); GEMM entries by (b, m, n, k) and dtype; either way the entry from `src` wins. */
ts_status_t ts_perf_table_merge(ts_perf_table_t *dst, const ts_perf_table_t *src, ts_diag_t *diag);

/* One collective measurement. `tensor_bytes` is the full buffer, as XLA's
 * collector sweeps it: the all-gather output, the reduce-scatter input, the
 * operand of the others. Throughput = tensor_bytes / time. */
typedef struct {
  ts_coll_kind_t kind;
  ts_transfer_scheme_t scheme;
  int element_type;          /* xla.PrimitiveType number (F32 = 11) */
  int64_t tensor_bytes;
  int64_t devices_per_group; /* collective-permute: devices taking part */
  int64_t num_groups;        /* 1 for collective-permute */
  int64_t throughput_bytes_per_sec;
  const char *fingerprint;   /* may be NULL or "" */
} ts_coll_measurement_t;

/* One GEMM measurement: FLOP/s of a [b] x (m x k) . (k x n) dot. */
typedef struct {
  int64_t b, m, n, k;
  const char *dtype; /* XLA's key, "bf16xbf16->bf16" */
  int64_t flops;     /* FLOP/s */
} ts_gemm_measurement_t;

/* Add one entry under `device_key`, building the instruction the way XLA's
 * collector does (f32[n] shape, iota device list, channel_id 1, ...). */
ts_status_t ts_perf_table_add_collective(ts_perf_table_t *t, const char *device_key,
                                         const ts_coll_measurement_t *m, ts_diag_t *diag);
ts_status_t ts_perf_table_add_gemm(ts_perf_table_t *t, const char *device_key,
                                   const ts_gemm_measurement_t *m, ts_diag_t *diag);

/* The entries of one device as measurements, in a ts_malloc'd array the caller
 * frees with ts_free (strings point into the table). An entry that does not
 * describe a collective we know (no device list, unknown opcode, no size) is
 * an error naming its index. */
ts_status_t ts_perf_table_collectives(const ts_perf_table_t *t, const char *device_key,
                                      ts_coll_measurement_t **out, size_t *n, ts_diag_t *diag);
ts_status_t ts_perf_table_gemms(const ts_perf_table_t *t, const char *device_key,
                                ts_gemm_measurement_t **out, size_t *n, ts_diag_t *diag);

/* xla.PrimitiveType helpers: "F32" <-> 11, and size in bits (0 when unknown). */
const char *ts_primitive_type_name(int type);
int ts_primitive_type_bits(int type);

/* ---- leave-one-out accuracy --------------------------------------------- */

/* Each stored point is predicted from the others (the interpolator with that
 * point removed), and the predicted time is compared with the measured one. */
typedef struct {
  size_t points;      /* points in the table */
  size_t predicted;   /* points that had another point to predict them from */
  double mape;        /* mean |pred - meas| / meas over predicted points, in % */
  double max_ape;     /* the largest of those, in % */
} ts_loo_result_t;

/* ---- collective interpolator (coll_interp.c) ---------------------------- */

/* Keyed by (collective, transfer scheme); each key holds throughput over the
 * plane (tensor bytes, devices per group), as XLA's tables do (reference §2.2).
 *
 * The weighted mode predicts TIME, not throughput (unlike XLA's documented
 * throughput average): among the sizes measured at the queried device count,
 * the inverse-distance weighted average of the bracketing sizes' times with
 * distance in bytes, i.e. time linear in size, exact for any latency +
 * bytes / bandwidth collective (averaging throughput is not: where latency
 * dominates, throughput doubles with each size step). Below the smallest
 * measured size the smallest size's time holds (a latency floor); beyond the
 * largest its throughput holds (saturation: time grows linearly, as in XLA).
 * A device count with no measurement (or, in leave-one-out, whose only point
 * is the one left out) takes the per-count times of the nearest measured
 * counts below and above, inverse-distance weighted in log2(devices); beyond
 * the measured counts, the nearest count's time.
 *
 * The nearest mode is XLA's code: snap to a stored point (size first, then
 * devices) and price any size with that point's throughput. */
typedef struct ts_coll_interp ts_coll_interp_t;

ts_status_t ts_coll_interp_create(const ts_perf_table_t *t, const char *device_key,
                                  ts_coll_interp_t **out, ts_diag_t *diag);
void ts_coll_interp_destroy(ts_coll_interp_t *ci);

/* TS_ERR_UNSUPPORTED (no diagnostic) when the table has no entry for `kind`.
 * A missing scheme falls back to another scheme of the same kind. */
ts_status_t ts_coll_interp_time(const ts_coll_interp_t *ci, ts_interp_mode_t mode,
                                ts_coll_kind_t kind, ts_transfer_scheme_t scheme,
                                int64_t tensor_bytes, int64_t devices, double *seconds);

/* Per-point report for ts_coll_interp_loo (may be NULL). */
typedef struct {
  ts_coll_kind_t kind;
  ts_transfer_scheme_t scheme;
  int64_t tensor_bytes, devices;
  double measured_s, predicted_s; /* predicted_s < 0: nothing to predict from */
} ts_coll_loo_point_t;

ts_status_t ts_coll_interp_loo(const ts_coll_interp_t *ci, ts_interp_mode_t mode,
                               void (*each)(void *ctx, const ts_coll_loo_point_t *p), void *ctx,
                               ts_loo_result_t *out);

/* ---- GEMM interpolator (gemm_interp.c) ---------------------------------- */

/* One 4-D (b, m, k, n) grid of FLOP/s per dtype key. Beyond the grid FLOP/s
 * saturate (coordinates clamp to the grid, as XLA's corners do). A dtype with
 * no table uses the bf16xbf16->bf16 table at the shape with the same bytes per
 * dimension (m * bytes(out) / 2, ...): XLA's "normalised to bytes" fallback. */
typedef struct ts_gemm_interp ts_gemm_interp_t;

ts_status_t ts_gemm_interp_create(const ts_perf_table_t *t, const char *device_key,
                                  ts_gemm_interp_t **out, ts_diag_t *diag);
void ts_gemm_interp_destroy(ts_gemm_interp_t *gi);

/* TS_ERR_UNSUPPORTED when neither `dtype` nor the bf16 fallback is in the table,
 * or the dtype key does not parse. */
ts_status_t ts_gemm_interp_time(const ts_gemm_interp_t *gi, ts_interp_mode_t mode, int64_t b,
                                int64_t m, int64_t n, int64_t k, const char *dtype,
                                double *seconds);

typedef struct {
  const char *dtype;
  int64_t b, m, n, k;
  double measured_s, predicted_s; /* predicted_s < 0: nothing to predict from */
} ts_gemm_loo_point_t;

ts_status_t ts_gemm_interp_loo(const ts_gemm_interp_t *gi, ts_interp_mode_t mode,
                               void (*each)(void *ctx, const ts_gemm_loo_point_t *p), void *ctx,
                               ts_loo_result_t *out);

/* ---- S-curve analytical model (scurve.c) -------------------------------- */

/* XLA's SolGPUCostModel::Config (reference §1.2); times in microseconds,
 * nic_speed_gbps in GBytes/s (1e9 bytes/s) per GPU. */
typedef struct {
  double nccl_op_launch_us;
  double nic_speed_gbps;
  double chunk_prep_us;
  double rtt_us;
  int64_t gpus_per_node;
  int64_t chunk_size_bytes;
  int64_t partition_size; /* devices per fast-interconnect domain; 0 = gpus_per_node */
} ts_scurve_config_t;

/* XLA's platform defaults (raw values x 0.45, float-rounded): "h100"
 * ("NVIDIA H100 80GB HBM3"), "b200" ("NVIDIA B200"), "unknown" (XLA's
 * fallback for other devices). TS_ERR_INVALID_ARGUMENT for other names. */
ts_status_t ts_scurve_preset(const char *name, ts_scurve_config_t *out);

/* Applies XLA's option string "key=value,key=value" on top of *cfg. Keys:
 * nccl_op_launch_us, chunk_prep_us, rtt_us, gpus_per_node, chunk_size_bytes,
 * partition_size (integers) and nic_speed_gbps (a number). Unlike XLA, which
 * ignores them silently, an unknown key, a malformed or non-positive value is
 * an error naming the key and value; *cfg is then unchanged. */
ts_status_t ts_scurve_parse_options(const char *options, ts_scurve_config_t *cfg, ts_diag_t *diag);

/* XLA's NumGpusPerComm: 2 for collective-permute (send/recv), else
 * nodes * gpus_per_node / comms, which must divide evenly. */
ts_status_t ts_scurve_gpus_per_comm(const ts_scurve_config_t *cfg, ts_coll_kind_t kind, int64_t nodes,
                                    int64_t comms, int64_t *gpus);

/* Time of a collective over `gpus` devices spread over `nodes` nodes
 * (reference §1.4: RingLatency for all-reduce, all-gather, reduce-scatter and
 * collective-permute as send/recv; AllToAllLatency for all-to-all), without
 * XLA's HBM and reduction-arithmetic terms. `bytes` is the full buffer. */
ts_status_t ts_scurve_time(const ts_scurve_config_t *cfg, ts_coll_kind_t kind, int64_t bytes,
                           int64_t gpus, int64_t nodes, double *seconds);

/* ---- the cost model: several sources behind one interface (costmodel.c) - */

typedef struct {
  ts_coll_kind_t kind;
  int64_t tensor_bytes;        /* the full buffer, as in ts_coll_measurement_t */
  int64_t devices;             /* devices per group (permute: devices taking part) */
  int64_t num_groups;          /* 0 is taken as 1 */
  ts_transfer_scheme_t scheme;
  int64_t slices;              /* slices (nodes) one group spans; <= 1: within a slice */
} ts_coll_query_t;

typedef struct {
  int64_t b, m, n, k;
  const char *dtype; /* "bf16xbf16->bf16" */
} ts_dot_query_t;

/* A source answers what it covers and returns TS_ERR_UNSUPPORTED (without a
 * diagnostic) for the rest; the model asks its sources in order. */
typedef struct {
  const char *name;
  ts_status_t (*collective_time)(void *self, ts_interp_mode_t mode, const ts_coll_query_t *q,
                                 double *seconds);
  ts_status_t (*dot_time)(void *self, ts_interp_mode_t mode, const ts_dot_query_t *q,
                          double *seconds);
  void (*destroy)(void *self);
} ts_cost_source_ops_t;

typedef struct ts_costmodel ts_costmodel_t;

ts_status_t ts_costmodel_create(ts_costmodel_t **out);
void ts_costmodel_destroy(ts_costmodel_t *m); /* NULL is a no-op */

/* Adds a source; the model owns `self` from then on (destroy is called even
 * when adding fails). Table sources are asked before analytical ones; among
 * each, sources keep the order they were added in. */
ts_status_t ts_costmodel_add_source(ts_costmodel_t *m, const ts_cost_source_ops_t *ops, void *self,
                                    bool analytical);

/* --cost-model-preset=h100|b200|host: the S-curve defaults of that platform
 * and the device key its tables are read under ("sm_90", "sm_100_B200",
 * "host:<cpu model>"). Set it before adding specs. */
ts_status_t ts_costmodel_set_preset(ts_costmodel_t *m, const char *preset, ts_diag_t *diag);

/* One --cost-model value, or several separated by ';':
 *   analytical[:OPTIONS]   the S-curve model for cross-slice collectives, with
 *                          the preset's (or XLA's unknown-device) defaults
 *                          overridden by OPTIONS (ts_scurve_parse_options);
 *   table:PATH[,PATH...]   performance tables (collectives and/or GEMMs) for
 *                          within-slice collectives and dots; a table with
 *                          several devices needs the preset to choose one. */
ts_status_t ts_costmodel_add_spec(ts_costmodel_t *m, const char *spec, ts_diag_t *diag);

/* The CLI's flags in one call: preset (may be NULL) first, then spec (may be
 * NULL). With neither, the model has no sources. With a preset and no
 * analytical spec, the preset's analytical model is added. */
ts_status_t ts_costmodel_parse_spec(const char *spec, const char *preset, ts_costmodel_t **out,
                                    ts_diag_t *diag);

/* The device key of tables measured on this CPU: "host:<model name>". */
void ts_costmodel_host_device_key(char *buf, size_t n);

void ts_costmodel_set_interp_mode(ts_costmodel_t *m, ts_interp_mode_t mode); /* default WEIGHTED */
size_t ts_costmodel_num_sources(const ts_costmodel_t *m);

/* The first source that covers the query answers; `source` (may be NULL)
 * gets its name. TS_ERR_UNSUPPORTED when none does (no diagnostic: the caller
 * decides whether that is an error). */
ts_status_t ts_costmodel_collective_time(const ts_costmodel_t *m, const ts_coll_query_t *q,
                                         double *seconds, const char **source);
ts_status_t ts_costmodel_dot_time(const ts_costmodel_t *m, const ts_dot_query_t *q, double *seconds,
                                  const char **source);

/* ---- roofline (roofline.c) ------------------------------------------------ */

/* A device's throughput, for the ops no table covers: an op costs
 * max(bytes / memory bandwidth, flops / peak), and a collective within a
 * slice costs a ring over the device's links. These are our defaults from
 * vendor data sheets (h100, b200) and one measurement of the development
 * machine (host), not XLA's: XLA prices such ops with its GPU performance
 * model, which is not public data. */
typedef struct {
  const char *name;             /* "h100", "b200", "host" */
  double matmul_flops;          /* FLOP/s of dots/convolutions in 16-bit and narrower types */
  double matmul_f32_flops;      /* FLOP/s of f32/f64 dots (TF32 tensor cores on GPUs) */
  double vector_flops;          /* FLOP/s of elementwise ops and reductions */
  double mem_bytes_per_sec;     /* memory bandwidth */
  double link_bytes_per_sec;    /* within a slice, per device and direction */
  double link_latency_us;       /* per ring step */
  double coll_launch_us;        /* fixed cost of one collective */
} ts_roofline_t;

/* "h100", "b200", "host"; TS_ERR_INVALID_ARGUMENT for other names. */
ts_status_t ts_roofline_preset(const char *name, ts_roofline_t *out);

/* The host preset describes one core's compute and the whole host's
 * memory bandwidth. When `devices` devices share a host of `cores` cores,
 * each computes on cores / devices of them (a fraction when they
 * outnumber the cores) and gets 1 / devices of the bandwidth. Other
 * presets describe one device each and are left as they are. */
void ts_roofline_share_host(ts_roofline_t *r, double cores, int devices);

/* max(bytes / mem_bytes_per_sec, flops / flops_per_sec), in seconds. */
double ts_roofline_time(const ts_roofline_t *r, double flops, double flops_per_sec, double bytes);

/* A ring over the links for a collective of `q->devices` devices (n), with
 * B = q->tensor_bytes and step = link_latency: all-reduce 2(n-1)/n B/bw +
 * 2(n-1) step; all-gather, reduce-scatter, all-to-all (n-1)/n B/bw + (n-1)
 * step; collective-permute B/bw + step; each plus coll_launch. n <= 1 costs
 * the launch alone. */
double ts_roofline_collective_time(const ts_roofline_t *r, const ts_coll_query_t *q);

/* The preset's roofline (set by ts_costmodel_set_preset), else the host's. */
const ts_roofline_t *ts_costmodel_roofline(const ts_costmodel_t *m);

/* ts_roofline_share_host on the model's roofline: `devices` devices run on
 * this host's `cores` cores. */
void ts_costmodel_share_host(ts_costmodel_t *m, double cores, int devices);

/* Devices per slice (fast-interconnect domain) as the first analytical
 * source sees it: its partition_size, else its gpus_per_node; 0 when the
 * model has no analytical source (every collective is within one slice). */
int64_t ts_costmodel_slice_size(const ts_costmodel_t *m);

/* ---- fitting the S-curve to a measured table (scurve_fit.c) -------------- */

typedef struct {
  ts_scurve_config_t cfg;  /* launch, prep and RTT rounded to whole microseconds (>= 1), as
                              XLA's option string takes them */
  size_t points;           /* measurements fitted */
  double rms_rel_error;    /* of the rounded cfg over the points, in % */
  double max_rel_error;    /* in % */
} ts_scurve_fit_t;

/* Least squares on the relative error: the S-curve time (ts_scurve_time) is
 * linear in (nccl_op_launch_us, 1/nic_speed_gbps, chunk_prep_us, rtt_us) for
 * a fixed chunk size, so each chunk size from 256 KiB to 64 MiB (powers of
 * two) is solved exactly (non-negative coefficients: a negative one is
 * fixed at its floor and the rest refitted) and the best kept. Each group of
 * `gpus_per_node` devices is one node (1: every device is its own node, the
 * usual reading of a table measured over a network). TS_ERR_INVALID_ARGUMENT
 * with a diagnostic when fewer than four points fit the model. */
ts_status_t ts_scurve_fit(const ts_coll_measurement_t *m, size_t n, int64_t gpus_per_node, ts_scurve_fit_t *out,
                          ts_diag_t *diag);

/* Appends cfg in XLA's option-string syntax (every key). */
void ts_scurve_print_options(const ts_scurve_config_t *cfg, ts_buf_t *out);

#endif
