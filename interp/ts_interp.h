/* Tessera interp: the reference interpreter, the project's correctness
 * oracle. A plain evaluator over reference-counted values, simulated devices
 * and collectives; each opcode's arithmetic comes from kernels/
 * (ts_kernel_for), which the runtime dispatches to as well until compiled
 * kernels replace its entries. */
#ifndef TS_INTERP_H
#define TS_INTERP_H

#include "ts_common.h"
#include "ts_hlo.h"
#include "ts_kernels.h"

#include <stdatomic.h>

/* ---- values ------------------------------------------------------------ */

/* A reference-counted array or tuple, as the interpreter passes them around.
 * `shape` points into the module arena (or is owned by whoever made the
 * value and outlives it); arrays own `a.data` (a.dims is shape->dims).
 * The count is atomic: device threads share a job's input values. */
typedef struct ts_value {
  atomic_int refs;
  const ts_shape_t *shape;
  ts_array_t a;               /* arrays only */
  int ntuple;                 /* tuples only */
  struct ts_value **tuple;
} ts_value_t;

/* A zero-filled array (or a tuple of zero-filled arrays, recursively) of an
 * array, tuple or token shape. NULL on out-of-memory. refs == 1. */
ts_value_t *ts_value_new(const ts_shape_t *shape);
/* The same with array contents left undefined, for kernel outputs (kernels
 * write every element). */
ts_value_t *ts_value_new_uninit(const ts_shape_t *shape);
/* Frees the calling thread's cache of recycled array buffers. */
void ts_interp_release_buffers(void);
/* A tuple taking over one reference of each element. NULL on OOM (the
 * references are then dropped). */
ts_value_t *ts_value_new_tuple(const ts_shape_t *shape, ts_value_t **elems);
ts_value_t *ts_value_ref(ts_value_t *v);
void ts_value_unref(ts_value_t *v); /* NULL is a no-op */
/* The array leaves of a value in order (nested tuples flattened); returns
 * how many there are; fills at most `max` views. */
int ts_value_leaves(ts_value_t *v, ts_array_t *out, int max);
/* A constant's value, narrowed to its element type (round to nearest even).
 * An elided literal (`{...}`: the dumper left the data out) is zero-filled
 * as XLA's parser does; ts_interp_create warns about each one. */
ts_status_t ts_value_from_literal(const ts_literal_t *lit, ts_value_t **out);

/* ---- BLAS --------------------------------------------------------------- */

/* ---- the interpreter ---------------------------------------------------- */

typedef struct ts_interp ts_interp_t;

typedef struct {
  /* Devices run in lockstep at the entry computation. 0: the reference
   * meaning of an unpartitioned module (one device; one per partition inside
   * manual regions, sharing one set of arguments). N: a partitioned
   * (per-device) module on N simulated devices, collectives included. */
  int ndevices;
  /* Partition count for manual regions (SPMDFullToShardShape ...
   * SPMDShardToFullShape) in an unpartitioned module: 0 takes the module's
   * num_partitions when > 1, else the device count the region's sharding
   * names. */
  int64_t num_partitions;
  int64_t replica_count; /* 0: the module's */
  /* Stop with an error at the first instruction whose floating-point result
   * is NaN or infinite while its operands were all finite (debugging). */
  bool trap_nonfinite;
} ts_interp_opts_t;

/* Prepares a verified module for running. opts may be NULL (one device). */
ts_status_t ts_interp_create(const ts_hlo_module_t *m, const ts_interp_opts_t *opts,
                             ts_interp_t **out, ts_diag_t *diag);
void ts_interp_destroy(ts_interp_t *it); /* NULL is a no-op */

/* How many argument sets ts_interp_run takes and results it gives: 1 for
 * the reference meaning (opts->ndevices == 0), else opts->ndevices. */
int ts_interp_ndevices(const ts_interp_t *it);

/* Runs the entry computation. args[d * nparams + p] is parameter p of
 * device d (the callee does not take the references); outs[d] receives a new
 * reference to device d's result. Errors name the instruction. */
ts_status_t ts_interp_run(ts_interp_t *it, ts_value_t *const *args, ts_value_t **outs,
                          ts_diag_t *diag);

/* ---- arguments and results -------------------------------------------- */

/* One value per entry parameter (args[p], new references), seeded and
 * counter-based so that every machine draws the same: floats uniform in
 * (0, 1] (positive: sqrt/log/power of random optimizer state stay finite),
 * pred 0/1, integers that flow into gather/scatter/dynamic-slice
 * indices (through converts, reshapes, calls, ...) in range for that use,
 * other integers small ([-8, 8) signed, [0, 16) unsigned). */
ts_status_t ts_interp_random_args(const ts_hlo_module_t *m, uint64_t seed, ts_value_t **args);

/* Parameter p alone, as ts_interp_random_args draws it (a new reference). */
ts_status_t ts_interp_random_param(const ts_hlo_module_t *m, uint64_t seed, int p, ts_value_t **out);

/* Parameter p initialised as a model weight (a new reference): float leaves
 * of rank >= 2 uniform in [-1/sqrt(d0), 1/sqrt(d0)] (d0 the leading
 * dimension, the fan-in of a [in, out] kernel), everything else zero
 * (biases). Seeded and counter-based like ts_interp_random_args. */
ts_status_t ts_interp_init_weight(const ts_hlo_module_t *m, uint64_t seed, int p, ts_value_t **out);

/* Loads args[p] from DIR/param<p>.npy (ts_npy_read_as: bf16/f8 from f32 or
 * raw bits, s4/u4 from s8/u8). Errors name the file and parameter. */
ts_status_t ts_interp_load_args(const ts_hlo_module_t *m, const char *dir, ts_value_t **args,
                                ts_diag_t *diag);

/* Loads parameter p from the .npy file `path` (as ts_interp_load_args does
 * for one file; a new reference in *out). */
ts_status_t ts_interp_load_param(const ts_hlo_module_t *m, const char *path, int p, ts_value_t **out,
                                 ts_diag_t *diag);

/* Whether --outputs DIR can receive the outputs, asked before the run
 * (TS_ERR_INVALID_ARGUMENT, "DIR: error: ..."). NULL passes. */
ts_status_t ts_interp_check_outputs(const char *dir, ts_diag_t *diag);
/* Writes leaf k of the flattened result as DIR/out<k>.npy (creating DIR),
 * the files as one set (ts_file_set_t): the out<k>.npy files DIR held
 * before are replaced whole, or, on an error, left as they were. */
ts_status_t ts_interp_write_outputs(const char *dir, ts_value_t *result, ts_diag_t *diag);

/* ---- shards ------------------------------------------------------------- */

struct ts_sharding_value;

/* Device `device`'s shard of `full` under `sharding` (a TUPLE value with one
 * entry per leaf for tuples; ts_sharding.h), as a new value of
 * `shard_shape` (refs == 1, the caller unrefs): the part
 * ts_sharding_shard names, zero-padded where the shard shape is larger
 * (uneven tiles). REPLICATED, MANUAL, UNKNOWN and MAXIMAL give the whole
 * array. TS_ERR_INVALID_ARGUMENT when the shapes or the sharding do not fit
 * or the device is not in it; TS_ERR_UNSUPPORTED for UNREDUCED. */
ts_status_t ts_interp_shard_value(const ts_value_t *full, const struct ts_sharding_value *sharding,
                                  int64_t device, const ts_shape_t *shard_shape, ts_value_t **out);

/* The full value of `full_shape` assembled from the devices' shards
 * (per_device[d] is device d's value, ndev devices), a new value the caller
 * unrefs. Each tile is read from one device: the one with every subgroup
 * index 0 (replicas are not compared); REPLICATED, MANUAL and UNKNOWN read
 * device 0, MAXIMAL its device; shard padding is ignored. Errors as above. */
ts_status_t ts_interp_unshard_values(ts_value_t *const *per_device, int ndev,
                                     const struct ts_sharding_value *sharding, const ts_shape_t *full_shape,
                                     ts_value_t **out);

/* ---- feeder.c: parameter values per step and the input feeder ------------- */

typedef struct {
  const ts_hlo_module_t *m; /* the module as written (full shapes) */
  const char *dir;          /* --inputs DIR, or NULL: seeded random */
  uint64_t seed;
  const bool *is_weight;    /* per entry parameter: an output updates it (training state) */
  /* Draw weights as a model initialiser would (a training loop); otherwise
   * they are drawn like any other input, in (0, 1]: positive, so that
   * optimizer state (Adam's second moments) stays valid under sqrt. */
  bool init_weights;
} ts_interp_inputs_t;

/* Parameter p's full value at step `step` (from 1): weights from
 * DIR/param<p>.npy or initialised (ts_interp_init_weight); data from
 * DIR/step<K>/param<p>.npy when present, else DIR/param<p>.npy, else drawn
 * (step 1 draws exactly what ts_interp_random_args(seed) does, so a one-step
 * run matches `tessera check`). A new reference. */
ts_status_t ts_interp_param_value(const ts_interp_inputs_t *in, int p, int64_t step, ts_value_t **out, ts_diag_t *diag);

/* The input feeder: a thread that prepares the data parameters (those not
 * is_weight) of steps first..last ahead of the devices, in a queue of
 * `depth` steps, so input preparation overlaps compute and a stalled input
 * pipeline shows up as devices waiting for input. Every one of `consumers`
 * devices takes each step once. */
typedef struct ts_interp_feeder ts_interp_feeder_t;
ts_status_t ts_interp_feeder_start(const ts_interp_inputs_t *in, int64_t first, int64_t last, int depth, int consumers,
                               ts_interp_feeder_t **out);
/* Step `step`'s values (vals[p] for data parameters, NULL for weights):
 * waits up to timeout_s; TS_ERR_TIMEOUT after that, or the feeder's error
 * (then diag says why). Pair with ts_interp_feeder_release. */
ts_status_t ts_interp_feeder_acquire(ts_interp_feeder_t *f, int64_t step, double timeout_s, ts_value_t *const **vals,
                                 ts_diag_t *diag);
void ts_interp_feeder_release(ts_interp_feeder_t *f, int64_t step);
/* Stops producing (the input-stall fault: devices then wait for input). */
void ts_interp_feeder_pause(ts_interp_feeder_t *f);
void ts_interp_feeder_stop(ts_interp_feeder_t *f); /* joins and frees; NULL is a no-op */

/* ---- compare.c: output comparison and static statistics ------------------- */

/* "12.00 MiB" style. */
void ts_interp_print_bytes(FILE *f, uint64_t b);
/* Entry parameters plus every instruction's result, as the interpreter
 * would hold them (one storage unit per element): a memory upper bound. */
uint64_t ts_interp_memory_bound(const ts_hlo_module_t *m);

/* Collectives of a module, counted statically (each instruction once, at its
 * synchronous form or its -done). */
/* per kind: the HLO collectives of ts_coll_kind_t, all-reduce to collective-reduce */
enum { TS_INTERP_COLL_KINDS = TS_COLL_COLLECTIVE_REDUCE + 1 };
typedef struct {
  int64_t count[TS_INTERP_COLL_KINDS];
  uint64_t bytes[TS_INTERP_COLL_KINDS]; /* per device: the larger of operands and result */
} ts_interp_coll_stats_t;
void ts_interp_count_collectives(const ts_hlo_module_t *m, ts_interp_coll_stats_t *cs);
void ts_interp_print_collectives(const ts_interp_coll_stats_t *cs); /* a table on stdout */

struct ts_sharding_value;
/* Compares every leaf of `got` (assembled from the devices' outputs
 * dev_outs[0..ndev) under root_sv) with `want`, and each device's copy of
 * the parts it must hold; one line per leaf on stdout. tolerance > 0: the
 * relative tolerance for every float leaf, else per type (f32 1e-5, bf16
 * 1/32, ...); floats match when |got - want| <= rtol * max(|want|, F), F =
 * max(S, 1) / 16 with S the leaf's largest |want|. Returns the number of
 * mismatching leaves; *st is set on an internal failure. */
int ts_interp_compare_outputs(const ts_hlo_module_t *m, ts_value_t *want, ts_value_t *got,
                          const struct ts_sharding_value *root_sv, ts_value_t *const *dev_outs, int ndev,
                          double tolerance, ts_status_t *st);

#endif
