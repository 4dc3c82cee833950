/* Shardings through shape changes: transpose and reshape (the cases of
 * XLA's hlo_sharding_util::TransposeSharding / ReshapeSharding that keep
 * every device's data where it is). */
#include "sharding_internal.h"

ts_status_t ts_sharding_transpose(ts_arena_t *a, const ts_sharding_value_t *v, int rank, const int64_t *perm,
                                  ts_sharding_value_t **out) {
  if (!a || !v || !out || (rank && !perm) || v->kind == TS_SHARD_TUPLE) return TS_ERR_INVALID_ARGUMENT;
  if (v->kind != TS_SHARD_TILED) {
    *out = (ts_sharding_value_t *)v; /* values are immutable: sharing is fine */
    return TS_OK;
  }
  if (rank != v->data_rank) return TS_ERR_INVALID_ARGUMENT;
  int p[SH_MAX_RANK];
  int64_t dims[SH_MAX_RANK];
  uint64_t seen = 0;
  for (int k = 0; k < rank; k++) {
    if (perm[k] < 0 || perm[k] >= rank || (seen >> perm[k] & 1)) return TS_ERR_INVALID_ARGUMENT;
    seen |= UINT64_C(1) << perm[k];
    p[k] = (int)perm[k];
  }
  for (int k = rank; k < v->ndims; k++) p[k] = k; /* subgroup dims stay last */
  for (int k = 0; k < v->ndims; k++) dims[k] = v->dims[p[k]];
  if (sh_perm_moves_nothing(v->ndims, v->dims, p)) /* only untiled dims move: the devices stay in place */
    return sh_make_tiled(a, v->ndims, dims, v->devices, v->nsubgroups, v->subgroups, out);
  int64_t *devs = ts_malloc(sizeof(int64_t) * (size_t)v->ntiles);
  if (!devs) return TS_ERR_NOMEM;
  sh_transpose(v->ndims, v->dims, v->devices, p, devs);
  ts_status_t st = sh_make_tiled(a, v->ndims, dims, devs, v->nsubgroups, v->subgroups, out);
  ts_free(devs);
  return st;
}

/* Tile counts for one group of dims: source dims src[0..ns) with tiles t
 * become target dims dst[0..nt), tiles into u. False when the tiling does
 * not survive the reshape. */
static bool reshape_group(const int64_t *src, const int64_t *t, int ns, const int64_t *dst, int nt, int64_t *u) {
  if (ns == 1 && nt == 1) { /* the dim is unchanged: any tiling, even uneven, stays */
    u[0] = t[0];
    return true;
  }
  /* Merge: contiguous blocks of the flattened group only if every dim
   * before the last tiled one is split down to single elements. */
  int q = -1;
  for (int k = 0; k < ns; k++)
    if (t[k] > 1) q = k;
  int64_t total = 1;
  if (q >= 0) {
    for (int k = 0; k < q; k++)
      if (t[k] != src[k]) return false;
    if (src[q] % t[q] != 0) return false;
    for (int k = 0; k <= q; k++) total *= t[k];
  }
  /* Split: the tiles go to the major target dims. */
  for (int k = 0; k < nt; k++) {
    if (total == 1) {
      u[k] = 1;
    } else if (total >= dst[k]) {
      if (total % dst[k] != 0) return false;
      u[k] = dst[k];
      total /= dst[k];
    } else {
      if (dst[k] % total != 0) return false;
      u[k] = total;
      total = 1;
    }
  }
  return total == 1;
}

ts_status_t ts_sharding_reshape(ts_arena_t *a, const ts_sharding_value_t *v, const ts_shape_t *from,
                                const ts_shape_t *to, ts_sharding_value_t **out) {
  if (!a || !v || !out || !from || !to || !ts_shape_is_array(from) || !ts_shape_is_array(to) ||
      v->kind == TS_SHARD_TUPLE)
    return TS_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (v->kind != TS_SHARD_TILED) {
    *out = (ts_sharding_value_t *)v;
    return TS_OK;
  }
  if (from->rank != v->data_rank || ts_shape_elements(from) != ts_shape_elements(to) ||
      to->rank + v->nsubgroups > SH_MAX_RANK)
    return TS_ERR_INVALID_ARGUMENT;
  const int64_t *src = from->dims, *dst = to->dims, *t = v->dims;
  int ns = from->rank, nt = to->rank;
  int64_t u[SH_MAX_RANK];
  if (ts_shape_elements(from) == 0) return TS_OK; /* nothing to place: not expressible */
  int i = 0, j = 0;
  while (i < ns || j < nt) {
    if (i < ns && src[i] == 1) {
      if (t[i] != 1) return TS_OK;
      i++;
      continue;
    }
    if (j < nt && dst[j] == 1) {
      u[j++] = 1;
      continue;
    }
    if (i >= ns || j >= nt) return TS_ERR_INTERNAL; /* equal element counts */
    int i0 = i, j0 = j;
    int64_t ps = src[i++], pt = dst[j++];
    while (ps != pt) {
      if (ps < pt) {
        if (i >= ns) return TS_ERR_INTERNAL;
        ps *= src[i++];
      } else {
        if (j >= nt) return TS_ERR_INTERNAL;
        pt *= dst[j++];
      }
    }
    if (!reshape_group(src + i0, t + i0, i - i0, dst + j0, j - j0, u + j0)) return TS_OK;
  }
  for (int k = 0; k < v->nsubgroups; k++) u[nt + k] = v->dims[v->data_rank + k];
  return sh_make_tiled(a, nt + v->nsubgroups, u, v->devices, v->nsubgroups, v->subgroups, out);
}
