/* Tile queries the partitioner asks: which tile a device holds, which
 * device holds a tile, shard extents (hlo_text_format.md 8.3), and the
 * groups of devices that hold the same data or run one manual program. */
#include "sharding_internal.h"

#include <stdlib.h>

int64_t ts_sharding_num_devices(const ts_sharding_value_t *v) {
  if (!v) return 0;
  if (v->kind == TS_SHARD_TILED) return v->ntiles;
  return v->kind == TS_SHARD_MAXIMAL ? 1 : 0;
}

/* Flat tile index of a device, or -1. */
static int64_t flat_of(const ts_sharding_value_t *v, int64_t device) {
  if (v->tile_of_) return device >= 0 && device < v->ntiles ? v->tile_of_[device] : -1;
  if (!v->by_device_) return -1;
  const int64_t *p = bsearch(&device, v->by_device_, (size_t)v->ntiles, 2 * sizeof(int64_t), sh_cmp_i64);
  return p ? p[1] : -1;
}

ts_status_t ts_sharding_tile_index(const ts_sharding_value_t *v, int64_t device, int64_t *index) {
  if (!v || !index || v->kind != TS_SHARD_TILED) return TS_ERR_INVALID_ARGUMENT;
  int64_t f = flat_of(v, device);
  if (f < 0) return TS_ERR_INVALID_ARGUMENT;
  sh_unflat(v->ndims, v->dims, f, index);
  return TS_OK;
}

ts_status_t ts_sharding_tile_device(const ts_sharding_value_t *v, const int64_t *index, int64_t *device) {
  if (!v || !index || !device || v->kind != TS_SHARD_TILED) return TS_ERR_INVALID_ARGUMENT;
  for (int k = 0; k < v->ndims; k++)
    if (index[k] < 0 || index[k] >= v->dims[k]) return TS_ERR_INVALID_ARGUMENT;
  *device = v->devices[sh_flat(v->ndims, v->dims, index)];
  return TS_OK;
}

static bool tiles_shape(const ts_sharding_value_t *v, const ts_shape_t *shape) {
  return shape && ts_shape_is_array(shape) && (v->kind != TS_SHARD_TILED || shape->rank == v->data_rank);
}

ts_status_t ts_sharding_shard(const ts_sharding_value_t *v, const ts_shape_t *shape, int64_t device, int64_t *offset,
                              int64_t *limit) {
  if (!v || !offset || !limit || v->kind == TS_SHARD_TUPLE || !tiles_shape(v, shape))
    return TS_ERR_INVALID_ARGUMENT;
  int64_t index[SH_MAX_RANK];
  if (v->kind == TS_SHARD_TILED) TS_CHECK(ts_sharding_tile_index(v, device, index));
  for (int d = 0; d < shape->rank; d++) {
    int64_t n = shape->dims[d];
    if (v->kind != TS_SHARD_TILED) {
      offset[d] = 0;
      limit[d] = n;
      continue;
    }
    int64_t t = v->dims[d], c = (n + t - 1) / t, k = index[d];
    offset[d] = k * c < n ? k * c : n;
    limit[d] = (k + 1) * c < n ? (k + 1) * c : n;
  }
  return TS_OK;
}

ts_status_t ts_sharding_shard_dims(const ts_sharding_value_t *v, const ts_shape_t *shape, int64_t *dims) {
  if (!v || !dims || v->kind == TS_SHARD_TUPLE || !tiles_shape(v, shape)) return TS_ERR_INVALID_ARGUMENT;
  for (int d = 0; d < shape->rank; d++) {
    int64_t n = shape->dims[d], t = v->kind == TS_SHARD_TILED ? v->dims[d] : 1;
    dims[d] = (n + t - 1) / t;
  }
  return TS_OK;
}

/* Groups of devices that differ only in the tile-assignment dims marked in
 * `vary` (a bitmask over dims). */
static ts_status_t groups_varying(ts_arena_t *a, const ts_sharding_value_t *v, uint64_t vary, int64_t *ngroups,
                                  int64_t *group_size, int64_t **groups) {
  int perm[SH_MAX_RANK], np = 0;
  int64_t size = 1;
  for (int k = 0; k < v->ndims; k++)
    if (!(vary >> k & 1)) perm[np++] = k;
  for (int k = 0; k < v->ndims; k++)
    if (vary >> k & 1) {
      perm[np++] = k;
      size *= v->dims[k];
    }
  int64_t *g = sh_alloc(a, v->ntiles);
  if (!g) return TS_ERR_NOMEM;
  /* Moving the varying dims last makes each group a contiguous run. */
  sh_transpose(v->ndims, v->dims, v->devices, perm, g);
  for (int64_t k = 0; k < v->ntiles; k += size) qsort(g + k, (size_t)size, sizeof *g, sh_cmp_i64);
  /* Order the groups by their first (smallest) member. */
  int64_t n = v->ntiles / size;
  int64_t *firsts = ts_malloc(sizeof(int64_t) * 2 * (size_t)n);
  int64_t *sorted = sh_alloc(a, v->ntiles);
  if (!firsts || !sorted) {
    ts_free(firsts);
    return TS_ERR_NOMEM;
  }
  for (int64_t k = 0; k < n; k++) {
    firsts[2 * k] = g[k * size];
    firsts[2 * k + 1] = k;
  }
  qsort(firsts, (size_t)n, 2 * sizeof(int64_t), sh_cmp_i64);
  for (int64_t k = 0; k < n; k++)
    for (int64_t j = 0; j < size; j++) sorted[k * size + j] = g[firsts[2 * k + 1] * size + j];
  ts_free(firsts);
  *ngroups = n;
  *group_size = size;
  *groups = sorted;
  return TS_OK;
}

static uint64_t subgroup_mask(const ts_sharding_value_t *v, ts_subgroup_t kind) {
  uint64_t m = 0;
  for (int k = 0; k < v->nsubgroups; k++)
    if (v->subgroups[k] == kind) m |= UINT64_C(1) << (v->data_rank + k);
  return m;
}

ts_status_t ts_sharding_replication_groups(ts_arena_t *a, const ts_sharding_value_t *v, int64_t num_devices,
                                           int64_t *ngroups, int64_t *group_size, int64_t **groups) {
  if (!a || !v || !ngroups || !group_size || !groups) return TS_ERR_INVALID_ARGUMENT;
  if (v->kind == TS_SHARD_REPLICATED) {
    if (num_devices <= 0) return TS_ERR_INVALID_ARGUMENT;
    int64_t *g = sh_alloc(a, num_devices);
    if (!g) return TS_ERR_NOMEM;
    for (int64_t k = 0; k < num_devices; k++) g[k] = k;
    *ngroups = 1;
    *group_size = num_devices;
    *groups = g;
    return TS_OK;
  }
  if (v->kind != TS_SHARD_TILED) return TS_ERR_INVALID_ARGUMENT;
  return groups_varying(a, v, subgroup_mask(v, TS_SUBGROUP_REPLICATED), ngroups, group_size, groups);
}

ts_status_t ts_sharding_manual_groups(ts_arena_t *a, const ts_sharding_value_t *v, int64_t *ngroups,
                                      int64_t *group_size, int64_t **groups) {
  if (!a || !v || !ngroups || !group_size || !groups || v->kind != TS_SHARD_TILED) return TS_ERR_INVALID_ARGUMENT;
  uint64_t all = v->ndims == 64 ? ~UINT64_C(0) : (UINT64_C(1) << v->ndims) - 1;
  return groups_varying(a, v, all & ~subgroup_mask(v, TS_SUBGROUP_MANUAL), ngroups, group_size, groups);
}
