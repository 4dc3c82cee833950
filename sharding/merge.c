/* Merging two compatible shardings of one array into the finer one (XLA's
 * hlo_sharding_util::MergeSharding, as used by sharding propagation): each
 * device keeps the intersection of the blocks the two give it. */
#include "sharding_internal.h"

#include <string.h>

/* The kinds a merge reads: TILED with no subgroup but a trailing
 * replicated one (manual and unreduced subgroups are left alone). */
static bool mergeable(const ts_sharding_value_t *v) {
  if (v->kind != TS_SHARD_TILED) return false;
  for (int k = 0; k < v->nsubgroups; k++)
    if (v->subgroups[k] != TS_SUBGROUP_REPLICATED) return false;
  return true;
}

ts_status_t ts_sharding_merge(ts_arena_t *a, const ts_sharding_value_t *x, const ts_sharding_value_t *y,
                              ts_sharding_value_t **out) {
  *out = NULL;
  if (!x || !y || !mergeable(x) || !mergeable(y) || x->data_rank != y->data_rank || x->ntiles != y->ntiles ||
      x->data_rank + 1 > SH_MAX_RANK)
    return TS_OK;
  int r = x->data_rank;
  int64_t dims[SH_MAX_RANK + 1];
  for (int d = 0; d < r; d++) {
    int64_t tx = x->dims[d], ty = y->dims[d];
    if (tx != ty && tx != 1 && ty != 1) return TS_OK;
    dims[d] = tx > ty ? tx : ty;
  }
  int64_t tiles = sh_product(r, dims), n = x->ntiles;
  if (tiles == 0 || n % tiles != 0) return TS_OK;
  int64_t group = n / tiles;
  /* Bucket every device by its merged tile: slot[t * group + filled[t]]. */
  int64_t *slot = ts_malloc(sizeof(int64_t) * (size_t)(n + tiles));
  if (!slot) return TS_ERR_NOMEM;
  int64_t *filled = slot + n;
  memset(filled, 0, sizeof(int64_t) * (size_t)tiles);
  ts_status_t st = TS_OK;
  bool ok = true;
  int64_t ix[SH_MAX_RANK], iy[SH_MAX_RANK], im[SH_MAX_RANK];
  for (int64_t k = 0; k < n && ok; k++) {
    int64_t dev = x->devices[k];
    sh_unflat(x->ndims, x->dims, k, ix);
    if (ts_sharding_tile_index(y, dev, iy) != TS_OK) {
      ok = false; /* not the same devices */
      break;
    }
    for (int d = 0; d < r; d++) {
      if (x->dims[d] == dims[d] && y->dims[d] == dims[d] && ix[d] != iy[d]) ok = false;
      im[d] = x->dims[d] == dims[d] ? ix[d] : iy[d];
    }
    int64_t t = sh_flat(r, dims, im);
    if (!ok || filled[t] == group) ok = false;
    else slot[t * group + filled[t]++] = dev;
  }
  if (ok) {
    ts_subgroup_t rep = TS_SUBGROUP_REPLICATED;
    dims[r] = group;
    st = sh_make_tiled(a, r + 1, dims, slot, 1, &rep, out);
  }
  ts_free(slot);
  return st;
}

bool ts_sharding_refines(const ts_sharding_value_t *fine, const ts_sharding_value_t *coarse) {
  if (!mergeable(fine) || !mergeable(coarse) || fine->data_rank != coarse->data_rank || fine->ntiles != coarse->ntiles)
    return false;
  int64_t jf[SH_MAX_RANK], jc[SH_MAX_RANK];
  for (int d = 0; d < fine->data_rank; d++)
    if (coarse->dims[d] != 1 && coarse->dims[d] != fine->dims[d]) return false;
  for (int64_t k = 0; k < fine->ntiles; k++) {
    int64_t dev = fine->devices[k];
    sh_unflat(fine->ndims, fine->dims, k, jf);
    if (ts_sharding_tile_index(coarse, dev, jc) != TS_OK) return false;
    for (int d = 0; d < fine->data_rank; d++)
      if (coarse->dims[d] != 1 && jc[d] != jf[d]) return false;
  }
  return true;
}
