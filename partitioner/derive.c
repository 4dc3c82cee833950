/* Shardings as the partitioner needs them: the replicated one, local
 * shapes, and shardings derived from others (dims replicated, selected or
 * embedded in another rank; an operand's sharding from its result's), and
 * the device groups over some tiled dims. */
#include "partitioner_internal.h"

#include <stdlib.h>
#include <string.h>

ts_sharding_value_t *ts_part_replicated(part_t *p) {
  ts_sharding_value_t *s = NULL;
  if (ts_sharding_simple(p->a, TS_SHARD_REPLICATED, &s) != TS_OK && p->st == TS_OK) p->st = TS_ERR_NOMEM;
  return s;
}

const ts_shape_t *ts_part_local_shape(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *s) {
  if (p->st != TS_OK) return NULL;
  if (shape->elem == TS_TUPLE) {
    ts_shape_t **el = ts_arena_alloc(p->dst->arena, sizeof *el * (size_t)(shape->ntuple + 1));
    if (!el) {
      p->st = TS_ERR_NOMEM;
      return NULL;
    }
    for (int k = 0; k < shape->ntuple; k++) {
      const ts_sharding_value_t *e = s && s->kind == TS_SHARD_TUPLE ? s->tuple[k] : s;
      el[k] = (ts_shape_t *)ts_part_local_shape(p, shape->tuple[k], e);
    }
    return ts_hlo_shape_tuple(p->dst, shape->ntuple, el);
  }
  int64_t dims[TS_PART_MAX_RANK];
  for (int d = 0; d < shape->rank; d++) dims[d] = shape->dims[d];
  if (ts_part_tiled(s) && ts_sharding_shard_dims(s, shape, dims) != TS_OK) {
    ts_part_fail(p, NULL, TS_ERR_INTERNAL, "sharding does not fit its shape");
    return NULL;
  }
  return ts_part_shape(p, shape->elem, shape->rank, dims);
}

/* Row-major linear index of idx in dims. */
static void unlinear(int n, const int64_t *dims, int64_t l, int64_t *idx) {
  for (int k = n - 1; k >= 0; k--) {
    idx[k] = l % dims[k];
    l /= dims[k];
  }
}

ts_sharding_value_t *ts_part_replicate_dims(part_t *p, const ts_sharding_value_t *s, int rank, const bool *keep) {
  if (!ts_part_tiled(s) || p->st != TS_OK) return (ts_sharding_value_t *)s;
  int r = s->data_rank, ns = s->nsubgroups;
  int64_t fold = 1;
  for (int d = 0; d < r; d++)
    if (!keep[d]) fold *= s->dims[d];
  if (fold == 1) return (ts_sharding_value_t *)s;
  int nd = r + ns + 1;
  int64_t dims[TS_PART_MAX_RANK + 8], idx[TS_PART_MAX_RANK + 8], nidx[TS_PART_MAX_RANK + 8];
  ts_subgroup_t sub[TS_PART_MAX_RANK];
  for (int d = 0; d < r; d++) dims[d] = keep[d] ? s->dims[d] : 1;
  for (int k = 0; k < ns; k++) {
    dims[r + k] = s->dims[r + k];
    sub[k] = s->subgroups[k];
  }
  dims[r + ns] = fold;
  sub[ns] = TS_SUBGROUP_REPLICATED;
  int64_t *dev = ts_arena_alloc(p->a, sizeof *dev * (size_t)s->ntiles);
  if (!dev) {
    p->st = TS_ERR_NOMEM;
    return NULL;
  }
  for (int64_t t = 0; t < s->ntiles; t++) {
    unlinear(s->ndims, s->dims, t, idx);
    int64_t f = 0;
    for (int d = 0; d < r; d++) {
      nidx[d] = keep[d] ? idx[d] : 0;
      if (!keep[d]) f = f * s->dims[d] + idx[d];
    }
    for (int k = 0; k < ns; k++) nidx[r + k] = idx[r + k];
    nidx[r + ns] = f;
    dev[ts_part_linear(nd, dims, nidx)] = s->devices[t];
  }
  ts_sharding_value_t *out = NULL;
  if (ts_sharding_tiled(p->a, nd, dims, dev, ns + 1, sub, &out) != TS_OK)
    ts_part_fail(p, NULL, TS_ERR_INTERNAL, "cannot fold tiles into replication");
  (void)rank;
  return out;
}

ts_sharding_value_t *ts_part_embed(part_t *p, const ts_sharding_value_t *s, int srank, int rank,
                                   const int64_t *map) {
  if (!ts_part_tiled(s) || p->st != TS_OK) return (ts_sharding_value_t *)s;
  int ns = s->nsubgroups, nd = rank + ns;
  int64_t dims[TS_PART_MAX_RANK + 8], idx[TS_PART_MAX_RANK + 8], nidx[TS_PART_MAX_RANK + 8];
  for (int d = 0; d < rank; d++) dims[d] = 1;
  for (int k = 0; k < srank; k++) dims[map[k]] = s->dims[k];
  for (int k = 0; k < ns; k++) dims[rank + k] = s->dims[srank + k];
  int64_t *dev = ts_arena_alloc(p->a, sizeof *dev * (size_t)s->ntiles);
  if (!dev) {
    p->st = TS_ERR_NOMEM;
    return NULL;
  }
  for (int64_t t = 0; t < s->ntiles; t++) {
    unlinear(s->ndims, s->dims, t, idx);
    for (int d = 0; d < rank; d++) nidx[d] = 0;
    for (int k = 0; k < srank; k++) nidx[map[k]] = idx[k];
    for (int k = 0; k < ns; k++) nidx[rank + k] = idx[srank + k];
    dev[ts_part_linear(nd, dims, nidx)] = s->devices[t];
  }
  ts_sharding_value_t *out = NULL;
  if (ts_sharding_tiled(p->a, nd, dims, dev, ns, s->subgroups, &out) != TS_OK)
    ts_part_fail(p, NULL, TS_ERR_INTERNAL, "cannot embed a sharding");
  return out;
}

void ts_part_groups_over_dims(part_t *p, const ts_sharding_value_t *s, const bool *mask, int64_t *ngroups,
                              int64_t *group_size, int64_t **groups) {
  int64_t gs = 1, idx[TS_PART_MAX_RANK + 8];
  for (int d = 0; d < s->data_rank; d++)
    if (mask[d]) gs *= s->dims[d];
  int64_t ng = s->ntiles / gs;
  int64_t *g = ts_arena_alloc(p->a, sizeof *g * (size_t)s->ntiles);
  if (!g) {
    p->st = TS_ERR_NOMEM;
    *groups = NULL;
    return;
  }
  for (int64_t t = 0; t < s->ntiles; t++) {
    unlinear(s->ndims, s->dims, t, idx);
    int64_t key = 0, pos = 0;
    for (int e = 0; e < s->ndims; e++) {
      if (e < s->data_rank && mask[e]) pos = pos * s->dims[e] + idx[e];
      else key = key * s->dims[e] + idx[e];
    }
    g[key * gs + pos] = s->devices[t];
  }
  *ngroups = ng;
  *group_size = gs;
  *groups = g;
}

/* ---- sharding arithmetic for handlers ---------------------------------- */

/* A sharding of an n-dim array whose dim k is dim sel[k] of `s`; dims of s
 * not selected must be untiled. */
ts_sharding_value_t *ts_part_select_dims(part_t *p, const ts_sharding_value_t *s, int n, const int64_t *sel) {
  if (!s || s->kind != TS_SHARD_TILED || p->st != TS_OK) return (ts_sharding_value_t *)s;
  int ns = s->nsubgroups;
  int64_t dims[TS_PART_MAX_RANK + 8], idx[TS_PART_MAX_RANK + 8], nidx[TS_PART_MAX_RANK + 8];
  for (int k = 0; k < n; k++) dims[k] = s->dims[sel[k]];
  for (int k = 0; k < ns; k++) dims[n + k] = s->dims[s->data_rank + k];
  int64_t *dev = ts_arena_alloc(p->a, sizeof *dev * (size_t)s->ntiles);
  if (!dev) {
    p->st = TS_ERR_NOMEM;
    return NULL;
  }
  for (int64_t t = 0; t < s->ntiles; t++) {
    int64_t l = t;
    for (int k = s->ndims - 1; k >= 0; k--) {
      idx[k] = l % s->dims[k];
      l /= s->dims[k];
    }
    for (int k = 0; k < n; k++) nidx[k] = idx[sel[k]];
    for (int k = 0; k < ns; k++) nidx[n + k] = idx[s->data_rank + k];
    int64_t lin = 0;
    for (int k = 0; k < n + ns; k++) lin = lin * dims[k] + nidx[k];
    dev[lin] = s->devices[t];
  }
  ts_sharding_value_t *out = NULL;
  if (ts_sharding_tiled(p->a, n + ns, dims, dev, ns, s->subgroups, &out) != TS_OK)
    ts_part_fail(p, NULL, TS_ERR_INTERNAL, "cannot select sharding dimensions");
  return out;
}

/* The sharding of an operand of rank `rank` whose dim opdim[k] corresponds
 * to result dim outdim[k] (k < n), under result sharding s (rank out_rank):
 * result dims not listed are replicated, operand dims not listed untiled. */
ts_sharding_value_t *ts_part_operand_sharding(part_t *p, const ts_sharding_value_t *s, int out_rank, int n,
                                             const int64_t *outdim, const int64_t *opdim, int rank) {
  if (!s || s->kind != TS_SHARD_TILED) return (ts_sharding_value_t *)s;
  bool keep[TS_PART_MAX_RANK] = {false};
  for (int k = 0; k < n; k++) keep[outdim[k]] = true;
  ts_sharding_value_t *r = ts_part_replicate_dims(p, s, out_rank, keep);
  ts_sharding_value_t *sel = ts_part_select_dims(p, r, n, outdim);
  return ts_part_embed(p, sel, n, rank, opdim);
}
