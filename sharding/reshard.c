/* Which single collective turns one sharding into another (the cases of
 * GSPMD's resharding, partitioner/reshard.c emits them): none, a local
 * dynamic-slice, an all-gather along one dim, an all-to-all moving a tiling
 * between two dims, or a collective-permute of whole tiles. */
#include "sharding_internal.h"

#include <string.h>

const char *ts_reshard_kind_name(ts_reshard_kind_t k) {
  switch (k) {
  case TS_RESHARD_NONE: return "none";
  case TS_RESHARD_DYNAMIC_SLICE: return "dynamic-slice";
  case TS_RESHARD_ALL_GATHER: return "all-gather";
  case TS_RESHARD_ALL_TO_ALL: return "all-to-all";
  case TS_RESHARD_COLLECTIVE_PERMUTE: return "collective-permute";
  case TS_RESHARD_OTHER: return "other";
  }
  return "?";
}

/* Data tile count of dim k (1 for a replicated value). */
static int64_t tiles_on(const ts_sharding_value_t *v, int k) { return v->kind == TS_SHARD_TILED ? v->dims[k] : 1; }

/* Manual (or maximal, unreduced) subgroups: a reshard stays inside each
 * manual program, which this classification does not model. */
static bool has_other_subgroups(const ts_sharding_value_t *v) {
  for (int k = 0; v->kind == TS_SHARD_TILED && k < v->nsubgroups; k++)
    if (v->subgroups[k] != TS_SUBGROUP_REPLICATED) return true;
  return false;
}

static bool is_empty(int rank, const int64_t *offset, const int64_t *limit) {
  for (int k = 0; k < rank; k++)
    if (offset[k] == limit[k]) return true;
  return false;
}

/* Every device of `to` already holds its new shard. An empty shard (an
 * uneven split's padding) needs no data, whoever held that tile before. */
static bool is_local_slice(const ts_sharding_value_t *from, const ts_sharding_value_t *to, const ts_shape_t *shape) {
  int64_t fo[SH_MAX_RANK], fl[SH_MAX_RANK], to_o[SH_MAX_RANK], to_l[SH_MAX_RANK];
  for (int64_t f = 0; f < to->ntiles; f++) {
    int64_t d = to->devices[f];
    if (ts_sharding_shard(to, shape, d, to_o, to_l) != TS_OK) return false;
    if (is_empty(shape->rank, to_o, to_l)) continue;
    if (ts_sharding_shard(from, shape, d, fo, fl) != TS_OK) return false; /* not a device of `from` */
    for (int k = 0; k < shape->rank; k++)
      if (to_o[k] < fo[k] || to_l[k] > fl[k]) return false;
  }
  return true;
}

/* Groups along dim g of from's tile array, in tile order. */
static ts_status_t groups_along(ts_arena_t *a, const ts_sharding_value_t *from, int g, ts_reshard_t *out) {
  int perm[SH_MAX_RANK], np = 0;
  for (int k = 0; k < from->ndims; k++)
    if (k != g) perm[np++] = k;
  perm[np] = g;
  if (!(out->groups = sh_alloc(a, from->ntiles))) return TS_ERR_NOMEM;
  sh_transpose(from->ndims, from->dims, from->devices, perm, out->groups);
  out->group_size = from->dims[g];
  out->ngroups = from->ntiles / out->group_size;
  return TS_OK;
}

/* `to` is `from` with the tiles of dim g gathered: every device keeps its
 * tile index on the other data dims. */
static bool is_all_gather(const ts_sharding_value_t *from, const ts_sharding_value_t *to, int g) {
  if (to->kind == TS_SHARD_REPLICATED) return true; /* g is the only tiled dim */
  if (to->ntiles != from->ntiles) return false;
  int64_t fi[SH_MAX_RANK], ti[SH_MAX_RANK];
  for (int64_t f = 0; f < from->ntiles; f++) {
    sh_unflat(from->ndims, from->dims, f, fi);
    if (ts_sharding_tile_index(to, from->devices[f], ti) != TS_OK) return false;
    for (int k = 0; k < from->data_rank; k++)
      if (k != g && ti[k] != fi[k]) return false;
  }
  return true;
}

/* to's tile array is from's with axes i and j swapped. */
static bool is_swapped(const ts_sharding_value_t *from, const ts_sharding_value_t *to, int i, int j) {
  int64_t idx[SH_MAX_RANK];
  for (int64_t f = 0; f < from->ntiles; f++) {
    sh_unflat(from->ndims, from->dims, f, idx);
    int64_t t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
    if (to->devices[sh_flat(to->ndims, to->dims, idx)] != from->devices[f]) return false;
  }
  return true;
}

ts_status_t ts_sharding_reshard(ts_arena_t *a, const ts_sharding_value_t *from, const ts_sharding_value_t *to,
                                const ts_shape_t *shape, ts_reshard_t *out) {
  if (!a || !from || !to || !shape || !out || !ts_shape_is_array(shape)) return TS_ERR_INVALID_ARGUMENT;
  memset(out, 0, sizeof *out);
  out->dim = out->split_dim = -1;
  if (ts_sharding_equal(from, to)) {
    out->kind = TS_RESHARD_NONE;
    return TS_OK;
  }
  out->kind = TS_RESHARD_OTHER;
  bool f_ok = from->kind == TS_SHARD_TILED || from->kind == TS_SHARD_REPLICATED;
  bool t_ok = to->kind == TS_SHARD_TILED || to->kind == TS_SHARD_REPLICATED;
  if (!f_ok || !t_ok || has_other_subgroups(from) != has_other_subgroups(to)) return TS_OK;
  if ((from->kind == TS_SHARD_TILED && from->data_rank != shape->rank) ||
      (to->kind == TS_SHARD_TILED && to->data_rank != shape->rank))
    return TS_ERR_INVALID_ARGUMENT;

  if (to->kind == TS_SHARD_TILED && is_local_slice(from, to, shape)) {
    out->kind = TS_RESHARD_DYNAMIC_SLICE;
    return TS_OK;
  }
  if (from->kind != TS_SHARD_TILED) return TS_OK;

  /* Data dims whose tile counts differ. */
  int diff[SH_MAX_RANK], nd = 0;
  for (int k = 0; k < shape->rank; k++)
    if (tiles_on(from, k) != tiles_on(to, k)) diff[nd++] = k;

  if (nd == 1 && tiles_on(to, diff[0]) == 1 && is_all_gather(from, to, diff[0])) {
    out->kind = TS_RESHARD_ALL_GATHER;
    out->dim = diff[0];
    return groups_along(a, from, diff[0], out);
  }
  if (to->kind != TS_SHARD_TILED || to->nsubgroups != from->nsubgroups ||
      memcmp(to->subgroups, from->subgroups, sizeof *to->subgroups * (size_t)to->nsubgroups) ||
      memcmp(to->dims + to->data_rank, from->dims + from->data_rank, sizeof *to->dims * (size_t)to->nsubgroups))
    return TS_OK;
  if (nd == 2) {
    int i = diff[0], j = diff[1];
    if (from->dims[i] == 1) {
      i = diff[1];
      j = diff[0];
    }
    if (from->dims[j] == 1 && to->dims[i] == 1 && to->dims[j] == from->dims[i] && is_swapped(from, to, i, j)) {
      out->kind = TS_RESHARD_ALL_TO_ALL;
      out->dim = i;
      out->split_dim = j;
      return groups_along(a, from, i, out);
    }
    return TS_OK;
  }
  if (nd == 0) { /* same tiles, different devices */
    if (!(out->pairs = sh_alloc(a, 2 * from->ntiles))) return TS_ERR_NOMEM;
    for (int64_t f = 0; f < from->ntiles; f++) {
      out->pairs[2 * f] = from->devices[f];
      out->pairs[2 * f + 1] = to->devices[f];
    }
    out->npairs = from->ntiles;
    out->kind = TS_RESHARD_COLLECTIVE_PERMUTE;
  }
  return TS_OK;
}
