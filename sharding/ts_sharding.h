/* Tessera sharding: the semantic sharding value (tile assignment, subgroups,
 * canonical form, equality), the queries the SPMD partitioner asks of it,
 * shape transforms, reshard classification, device meshes of slices, and
 * Shardy (`xla.sdy.*`) input. Propagation builds on this header.
 *
 * Meaning of a sharding: hlo_text_format.md sections 8.3 and 9 (XLA's
 * HloSharding and TileAssignment). The parsed syntax (ts_sharding_t) stays
 * in hlo/ and prints back as it was read; a ts_sharding_value_t is what it
 * means, always in canonical form, so two values are equal exactly when they
 * place the same data on the same devices.
 *
 * Memory: every value, and every array a function hands out, lives in the
 * ts_arena_t the caller passes (a module's arena, or one of its own) and
 * dies with it. Values are immutable once built; they may be shared. */
#ifndef TS_SHARDING_H
#define TS_SHARDING_H

#include "ts_hlo.h"

/* ---- the value ---------------------------------------------------------- */

/* A sharding as a value. Read the fields; build only through the functions
 * below, which canonicalise (section 8.3):
 *   - subgroup dims of size 1 are dropped, subgroup dims of the same kind are
 *     merged, kinds ordered maximal, manual, unreduced, replicated (last);
 *   - a single subgroup kind with no data tiling collapses to REPLICATED or
 *     MANUAL; a tile assignment of one device with no subgroup is REPLICATED;
 *   - with a trailing replicated subgroup, the devices of each replication
 *     group are sorted ascending.
 * Explicit and iota spellings of one assignment give the same value. */
typedef struct ts_sharding_value {
  /* REPLICATED, MANUAL, MAXIMAL, TILED, UNKNOWN, UNREDUCED or TUPLE (never
   * NAMED: the V3 form is reported TS_ERR_UNSUPPORTED). */
  ts_shard_kind_t kind;
  int64_t device;            /* MAXIMAL: the one device */
  /* TILED: the tile-assignment array A of shape dims[0..ndims). The first
   * data_rank dims tile the array's dimensions; the last nsubgroups dims are
   * subgroups of kind subgroups[k]. devices[] is A row-major: the device
   * holding tile index (i0,...,i_{ndims-1}). ntiles = product of dims =
   * number of devices. Read-only: devices may point at an array shared
   * between values. */
  int ndims, data_rank, nsubgroups;
  const int64_t *dims;
  const ts_subgroup_t *subgroups;
  int64_t ntiles;
  const int64_t *devices;
  /* TUPLE: one value per leaf of the tuple shape, in leaf order. */
  int ntuple;
  struct ts_sharding_value *const *tuple;
  /* shard_as (1) / shard_like (2) group and its id; 0 when none. A hint for
   * propagation: not part of equality. */
  int shard_group;
  int64_t shard_group_id;
  /* private: the device -> flat tile index lookup. With dense ids
   * (devices are 0..ntiles-1, the usual case) tile_of_[device]; else
   * by_device_, (device, flat tile index) pairs sorted by device. */
  const int64_t *tile_of_;
  const int64_t *by_device_;
} ts_sharding_value_t;

/* Builds the value of a parsed sharding on the shape it annotates.
 * `shape` may be NULL (no rank check; tuples kept as written). A non-tuple
 * sharding on a tuple shape is copied to every leaf (XLA's rule), giving a
 * TUPLE value; a token accepts any sharding; an empty tuple takes `{}` or
 * one element. Errors: TS_ERR_VERIFY when the
 * sharding does not fit the shape (data rank, tuple leaf count) or tiles a
 * single device; TS_ERR_UNSUPPORTED for the V3 named form; TS_ERR_NOMEM. */
ts_status_t ts_sharding_from_syntax(ts_arena_t *a, const ts_sharding_t *syn, const ts_shape_t *shape,
                                    ts_sharding_value_t **out);

/* Parses sharding text (`{devices=[2,2]<=[4]}`, a tuple, ...) with the HLO
 * parser and builds its value on `shape` (may be NULL). A syntax error is
 * TS_ERR_PARSE, reported in diag (may be NULL) against a source named
 * "<sharding>" whose line 4 is the text. */
ts_status_t ts_sharding_parse(ts_arena_t *a, const char *text, const ts_shape_t *shape,
                              ts_sharding_value_t **out, ts_diag_t *diag);

/* Constructors. ts_sharding_tiled takes the tile-assignment array as above
 * (devices row-major, ids >= 0 and unique; else TS_ERR_INVALID_ARGUMENT)
 * and canonicalises it. */
ts_status_t ts_sharding_simple(ts_arena_t *a, ts_shard_kind_t kind, ts_sharding_value_t **out); /* REPLICATED, MANUAL, UNKNOWN, UNREDUCED */
ts_status_t ts_sharding_maximal(ts_arena_t *a, int64_t device, ts_sharding_value_t **out);
ts_status_t ts_sharding_tiled(ts_arena_t *a, int ndims, const int64_t *dims, const int64_t *devices,
                              int nsubgroups, const ts_subgroup_t *subgroups, ts_sharding_value_t **out);
ts_status_t ts_sharding_tuple(ts_arena_t *a, int n, ts_sharding_value_t *const *elems, ts_sharding_value_t **out);

/* Same placement of data on devices (shard groups ignored). NULL equals
 * only NULL. */
bool ts_sharding_equal(const ts_sharding_value_t *x, const ts_sharding_value_t *y);

/* ---- text and syntax ---------------------------------------------------- */

/* XLA's canonical text of the value: `{replicated}`, `{maximal device=3}`,
 * `{devices=[2,4]<=[4,2]T(1,0)}` when the assignment is an iota with a
 * transpose (reshape dims merged, XLA's IotaTileAssignment form), the
 * explicit list otherwise; `last_tile_dim_replicate` for a lone replicated
 * subgroup, `last_tile_dims={...}` otherwise; shard groups after. */
void ts_sharding_value_print(ts_buf_t *b, const ts_sharding_value_t *v);

/* The syntax struct for the value (the same form the printer writes), in
 * arena `a` (pass the module's arena before setting instr->sharding). */
ts_status_t ts_sharding_to_syntax(ts_arena_t *a, const ts_sharding_value_t *v, ts_sharding_t **out);

/* The iota form of a row-major device array of `n` devices, if it is one:
 * devices == iota(n).reshape(reshape).transpose(perm), flattened. On true,
 * reshape/perm get *rank entries (rank <= 64; perm is the identity when
 * *rank == 1). Arrays are caller-provided with 64 entries. */
bool ts_sharding_iota_form(const int64_t *devices, int64_t n, int *rank, int64_t *reshape, int64_t *perm);

/* ---- queries (TILED unless said otherwise) ------------------------------ */

/* Devices the sharding spans: ntiles for TILED, 1 for MAXIMAL, 0 for kinds
 * that apply to every device (REPLICATED, MANUAL, UNKNOWN, UNREDUCED) and
 * for TUPLE. */
int64_t ts_sharding_num_devices(const ts_sharding_value_t *v);

/* The tile index (ndims entries, subgroup dims included) of `device`.
 * TS_ERR_INVALID_ARGUMENT when the device is not in the assignment. */
ts_status_t ts_sharding_tile_index(const ts_sharding_value_t *v, int64_t device, int64_t *index);
/* The device holding tile `index` (ndims entries). */
ts_status_t ts_sharding_tile_device(const ts_sharding_value_t *v, const int64_t *index, int64_t *device);

/* The part of an array of `shape` that `device` holds: per dimension
 * [offset[d], limit[d]). With t tiles on a dimension of size N the chunk is
 * c = ceil(N/t) and tile k covers [min(k*c, N), min((k+1)*c, N)): uneven
 * splits leave the last shards short or empty. REPLICATED, MANUAL,
 * UNKNOWN, UNREDUCED and MAXIMAL (any device) give the whole array.
 * shape must be an array of rank data_rank. */
ts_status_t ts_sharding_shard(const ts_sharding_value_t *v, const ts_shape_t *shape, int64_t device,
                              int64_t *offset, int64_t *limit);
/* The per-device (padded) shard shape: ceil(N/t) per dimension. */
ts_status_t ts_sharding_shard_dims(const ts_sharding_value_t *v, const ts_shape_t *shape, int64_t *dims);

/* Groups of devices, row-major (*ngroups x *group_size) in arena `a`, each
 * group ascending and groups ordered by their first device.
 * Replication groups: devices holding identical data (they differ only in
 * replicated-subgroup indices). A TILED value without a replicated subgroup
 * gives groups of 1; REPLICATED gives one group 0..num_devices-1.
 * Manual groups: devices with the same manual-subgroup index, i.e. one SPMD
 * program over the non-manual dims; TILED without a manual subgroup gives
 * one group of every device. */
ts_status_t ts_sharding_replication_groups(ts_arena_t *a, const ts_sharding_value_t *v, int64_t num_devices,
                                           int64_t *ngroups, int64_t *group_size, int64_t **groups);
ts_status_t ts_sharding_manual_groups(ts_arena_t *a, const ts_sharding_value_t *v, int64_t *ngroups,
                                      int64_t *group_size, int64_t **groups);

/* ---- transforms --------------------------------------------------------- */

/* The sharding of transpose(x, dimensions=perm) when x has sharding v:
 * result dim i is operand dim perm[i]. Non-tiled values are returned as is. */
ts_status_t ts_sharding_transpose(ts_arena_t *a, const ts_sharding_value_t *v, int rank, const int64_t *perm,
                                  ts_sharding_value_t **out);

/* The sharding of reshape(x) from shape `from` to `to` when x has sharding
 * v, if one exists that keeps every device's data in place: dims are
 * grouped where their products match; a dim left unchanged keeps its
 * tiling, even an uneven one; inside a larger group the tiling must be
 * on whole elements of the major dims (a merge keeps it when the dims before
 * the last tiled one are split into single elements and the tiled dims
 * divide evenly; a split puts the tiles on the major target dims, which
 * must divide). *out is NULL (status TS_OK) when it is not expressible.
 * Non-tiled values are returned as is. */
ts_status_t ts_sharding_reshape(ts_arena_t *a, const ts_sharding_value_t *v, const ts_shape_t *from,
                                const ts_shape_t *to, ts_sharding_value_t **out);

/* ---- merging (XLA's hlo_sharding_util::MergeSharding) ------------------- */

/* The sharding that gives each device the intersection of the blocks x and
 * y give it, when that is a sharding: x and y tile the same array over the
 * same devices, every dim is tiled alike or untiled in one of them, devices
 * tiled alike on a dim agree on their tile there, and every merged tile is
 * held by equally many devices (e.g. [1,2,2] and [2,1,2], both
 * last_tile_dim_replicate, give [2,2]). Only TILED values without manual or
 * unreduced subgroups merge. *out is NULL (TS_OK) when they do not. */
ts_status_t ts_sharding_merge(ts_arena_t *a, const ts_sharding_value_t *x, const ts_sharding_value_t *y,
                              ts_sharding_value_t **out);
/* Whether `fine` keeps every device inside the block `coarse` gives it
 * (merging them gives `fine`); both TILED as for ts_sharding_merge. */
bool ts_sharding_refines(const ts_sharding_value_t *fine, const ts_sharding_value_t *coarse);

/* ---- resharding --------------------------------------------------------- */

typedef enum {
  TS_RESHARD_NONE,               /* identical: nothing to do */
  TS_RESHARD_DYNAMIC_SLICE,      /* every device already holds its new shard: a local slice */
  TS_RESHARD_ALL_GATHER,         /* gather `dim` inside each group */
  TS_RESHARD_ALL_TO_ALL,         /* split `split_dim`, concatenate `dim`, inside each group */
  TS_RESHARD_COLLECTIVE_PERMUTE, /* same tiles, other devices: `pairs` */
  TS_RESHARD_OTHER,              /* needs more than one step (or is not tiled) */
} ts_reshard_kind_t;

typedef struct {
  ts_reshard_kind_t kind;
  int dim;       /* ALL_GATHER: all_gather_dimension; ALL_TO_ALL: concat_dimension (tiled in `from`) */
  int split_dim; /* ALL_TO_ALL: split_dimension (tiled in `to`) */
  /* ALL_GATHER / ALL_TO_ALL: replica groups, row-major ngroups x group_size,
   * members in tile order along `dim` of `from`. */
  int64_t ngroups, group_size;
  int64_t *groups;
  /* COLLECTIVE_PERMUTE: source_target_pairs (pairs[2k] -> pairs[2k+1]), one
   * per device of `to`, identity pairs included. */
  int64_t npairs;
  int64_t *pairs;
} ts_reshard_t;

/* How to go from sharding `from` to `to` of an array of `shape` with one
 * collective (or none). Arrays in *out live in arena `a`. */
ts_status_t ts_sharding_reshard(ts_arena_t *a, const ts_sharding_value_t *from, const ts_sharding_value_t *to,
                                const ts_shape_t *shape, ts_reshard_t *out);
const char *ts_reshard_kind_name(ts_reshard_kind_t k);

/* ---- device meshes ------------------------------------------------------ */

/* `slices x devices_per_slice` devices. Logical device d (the id in tile
 * assignments and replica groups) sits in slice d / devices_per_slice at
 * position d % devices_per_slice, and runs as rank d: ranks are numbered
 * slice-major, so the devices of a slice are consecutive ranks. Inside a
 * slice the interconnect is fast; between slices it is the network. */
typedef struct {
  int64_t slices, devices_per_slice;
} ts_mesh_t;

ts_status_t ts_mesh_init(ts_mesh_t *m, int64_t slices, int64_t devices_per_slice);
int64_t ts_mesh_num_devices(const ts_mesh_t *m);
ts_status_t ts_mesh_locate(const ts_mesh_t *m, int64_t device, int64_t *slice, int64_t *index_in_slice);
ts_status_t ts_mesh_device(const ts_mesh_t *m, int64_t slice, int64_t index_in_slice, int64_t *device);
ts_status_t ts_mesh_rank(const ts_mesh_t *m, int64_t device, int64_t *rank);
/* Whether the n devices of a group live in more than one slice. */
ts_status_t ts_mesh_crosses_slices(const ts_mesh_t *m, const int64_t *devices, int64_t n, bool *crosses);
/* Splits a group for a hierarchical collective. Every slice the group
 * touches must hold the same number k of its members (else
 * TS_ERR_UNSUPPORTED). intra[] gets s groups of k (the members in each
 * slice, in group order; slices in order of first appearance), cross[] gets
 * k groups of s (the j-th member of every slice). Both are n entries,
 * caller-provided; *nslices = s, *per_slice = k. */
ts_status_t ts_mesh_split_group(const ts_mesh_t *m, const int64_t *devices, int64_t n, int64_t *intra,
                                int64_t *cross, int64_t *nslices, int64_t *per_slice);

/* ---- Shardy (xla.sdy.*) ------------------------------------------------- */

/* Looks `key` up in a frontend_attributes blob `{k="v", k2={...}}` as the
 * parser keeps it. *value is the string unescaped, or a brace value
 * verbatim, in arena `a`; NULL when the key is absent. TS_ERR_PARSE on a
 * malformed blob. */
ts_status_t ts_sharding_frontend_attr(ts_arena_t *a, const char *blob, const char *key, const char **value);

/* A Shardy mesh: named axes, major first, over device_ids (iota when NULL). */
typedef struct {
  const char *name;
  int naxes;
  const char **axis_names;
  const int64_t *axis_sizes;
  int64_t ndevices;            /* product of the sizes (1 for no axes) */
  const int64_t *device_ids;   /* ndevices entries, or NULL for iota */
} ts_sdy_mesh_t;

typedef struct {
  int n;
  const ts_sdy_mesh_t *meshes;
} ts_sdy_meshes_t;

/* Parses the `xla.sdy.meshes` value `{mesh = #sdy.mesh<["x"=2, "y"=4]>,
 * other = #sdy.mesh<[], device_ids=[3]>}` (empty `{}` allowed). */
ts_status_t ts_sharding_sdy_meshes_parse(ts_arena_t *a, const char *text, ts_sdy_meshes_t **out);
/* The meshes of a module's frontend_attributes (none when absent). */
ts_status_t ts_sharding_sdy_module_meshes(ts_arena_t *a, const ts_hlo_module_t *m, ts_sdy_meshes_t **out);

/* Converts `#sdy.sharding<MESH, [dims...]>` (one value; nshapes 1) or
 * `#sdy.sharding_per_value<[<MESH, [...]>, ...]>` (a TUPLE of nshapes) to
 * the value (section 9): each dimension is tiled by the product of its
 * axes, major first; unused axes (and `replicated={...}`) become a trailing
 * replicated subgroup. MESH is `@name` (looked up in `meshes`, may be NULL
 * if unused) or an inline `mesh<[...]>`. Sub-axes `"y":(2)2` split the axis;
 * open dims `?` and priorities `p1` are accepted and ignored. A mesh with
 * no axes gives `{maximal device=id}` with one device_id, else REPLICATED.
 * shapes (nshapes entries, NULL entries allowed) check the ranks.
 * TS_ERR_PARSE on malformed text, TS_ERR_VERIFY on unknown meshes/axes. */
ts_status_t ts_sharding_from_sdy(ts_arena_t *a, const ts_sdy_meshes_t *meshes, const char *text, int nshapes,
                                 const ts_shape_t *const *shapes, ts_sharding_value_t **out);

/* ---- a cache for passes that derive many shardings ---------------------- */

/* For one pass (propagation, a partitioner run): values interned so that
 * equal values are one pointer, and derivations memoised by a key of words
 * (a pass's own tag, input values' addresses, arguments). Keyed by
 * address, a memo is only as good as the values' lifetime: they must live
 * in an arena that outlives the cache, and never change. Values are not
 * owned; keys are copied. Not thread-safe. */
typedef struct sh_cache ts_sharding_cache_t;
ts_status_t ts_sharding_cache_create(ts_sharding_cache_t **out);
void ts_sharding_cache_destroy(ts_sharding_cache_t *c); /* NULL is a no-op */
/* Replaces *v by the interned value equal to it (same placement and shard
 * group), interning *v when it is the first; O(devices) to hash. NULL and
 * tuples are left as they are. */
ts_status_t ts_sharding_cache_intern(ts_sharding_cache_t *c, ts_sharding_value_t **v);
/* The memoised result of `key` (n words): true and *out (possibly NULL)
 * when present. */
bool ts_sharding_cache_get(ts_sharding_cache_t *c, const int64_t *key, int n, void **out);
/* Records (or replaces) the result of `key`. */
ts_status_t ts_sharding_cache_put(ts_sharding_cache_t *c, const int64_t *key, int n, void *v);

/* ---- propagation -------------------------------------------------------- */

/* What a propagation run did, counted over instructions. */
typedef struct {
  int annotated;   /* had a sharding before the pass (kept as written) */
  int propagated;  /* got a sharding from a neighbour (at least one leaf) */
  int defaulted;   /* reached by nothing: the default sharding */
  int rounds;      /* forward + backward rounds run */
  bool converged;  /* the last round changed nothing */
} ts_sharding_propagate_stats_t;

typedef struct {
  int max_rounds;                        /* 0: 64 */
  ts_sharding_propagate_stats_t *stats;  /* filled when non-NULL */
} ts_sharding_propagate_opts_t;

/* Gives every instruction of `m` a sharding (instr->sharding, in the
 * module arena), starting from the existing annotations, which are never
 * changed. Priority rules and the ops covered: sharding/propagate.c. A run
 * that reaches max_rounds without converging still assigns every
 * instruction (stats->converged says so). opts and diag may be NULL; the
 * errors are TS_ERR_NOMEM and TS_ERR_INTERNAL (a module that does not
 * verify). */
ts_status_t ts_sharding_propagate(ts_hlo_module_t *m, const ts_sharding_propagate_opts_t *opts, ts_diag_t *diag);

#endif
