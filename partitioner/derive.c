/* Shardings as the partitioner needs them: the replicated one, local
 * shapes, and shardings derived from others (dims replicated, selected or
 * embedded in another rank; an operand's sharding from its result's), and
 * the device groups over some tiled dims; and the run's memo, which keeps
 * each of these (and reshard costs, dot plans) O(rank) once its inputs have
 * been seen, so that partition time does not grow with the device count. */
#include "partitioner_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- the run's memo ---------------------------------------------------- */

bool ts_part_memo_get(part_t *p, const int64_t *key, int n, void **out) {
  return p->memo && p->st == TS_OK && ts_sharding_cache_get(p->memo, key, n, out);
}

void ts_part_memo_put(part_t *p, const int64_t *key, int n, void *v) {
  if (p->memo && p->st == TS_OK && ts_sharding_cache_put(p->memo, key, n, v) != TS_OK) p->st = TS_ERR_NOMEM;
}

ts_sharding_value_t *ts_part_intern(part_t *p, ts_sharding_value_t *v) {
  if (v && p->memo && p->st == TS_OK && ts_sharding_cache_intern(p->memo, &v) != TS_OK) p->st = TS_ERR_NOMEM;
  return v;
}

int64_t ts_part_reshard_cost(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from,
                             const ts_sharding_value_t *to) {
  if (shape->elem == TS_TUPLE || shape->rank > TS_PART_MAX_RANK) return ts_part_reshard_bytes(p, shape, from, to);
  int64_t key[5 + TS_PART_MAX_RANK];
  int n = 0;
  key[n++] = TS_PART_MEMO_RESHARD_BYTES;
  key[n++] = ts_part_key_ptr(from);
  key[n++] = ts_part_key_ptr(to);
  key[n++] = shape->elem;
  key[n++] = shape->rank;
  for (int d = 0; d < shape->rank; d++) key[n++] = shape->dims[d];
  void *hit;
  if (ts_part_memo_get(p, key, n, &hit)) return *(const int64_t *)hit;
  int64_t b = ts_part_reshard_bytes(p, shape, from, to);
  int64_t *keep = p->st == TS_OK ? ts_arena_alloc(p->a, sizeof *keep) : NULL;
  if (keep) {
    *keep = b;
    ts_part_memo_put(p, key, n, keep);
  }
  return b;
}

ts_sharding_value_t *ts_part_replicated(part_t *p) {
  if (p->replicated) return p->replicated;
  ts_sharding_value_t *s = NULL;
  if (ts_sharding_simple(p->a, TS_SHARD_REPLICATED, &s) != TS_OK && p->st == TS_OK) p->st = TS_ERR_NOMEM;
  p->replicated = s;
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

/* ---- shardings derived from others ------------------------------------ */

/* Each derivation below moves s's devices to a new row-major array in
 * which a device's position is linear in its tile index: sum over the
 * dims e of s of idx[e] * coef[e]. The walk keeps that sum as it steps
 * through s's tiles in order (an odometer: amortised O(1) per tile, no
 * division), and lets a later tile overwrite an earlier one where two land
 * on one position (coef 0 on a dim of size > 1), as a caller that breaks a
 * contract would have it. */
static void move_tiles(const ts_sharding_value_t *s, const int64_t *coef, int64_t *dst) {
  int64_t idx[TS_PART_MAX_RANK + 8] = {0}, off = 0;
  for (int64_t t = 0; t < s->ntiles; t++) {
    dst[off] = s->devices[t];
    for (int k = s->ndims - 1; k >= 0; k--) {
      off += coef[k];
      if (++idx[k] < s->dims[k]) break;
      off -= coef[k] * s->dims[k];
      idx[k] = 0;
    }
  }
}

/* Row-major strides of dims[0..n). */
static void strides(int n, const int64_t *dims, int64_t *str) {
  int64_t m = 1;
  for (int k = n - 1; k >= 0; k--) {
    str[k] = m;
    m *= dims[k];
  }
}

/* The canonical value of the tile assignment that move_tiles(s, coef)
 * lays out over dims[0..nd), interned and recorded under key; NULL (p->st
 * set) on failure. The device array is scratch: values copy it. */
static ts_sharding_value_t *derive(part_t *p, const ts_sharding_value_t *s, const int64_t *coef, int nd,
                                   const int64_t *dims, int nsub, const ts_subgroup_t *sub, const int64_t *key,
                                   int nkey, const char *what) {
  int64_t stack[1024], *dev = s->ntiles <= 1024 ? stack : ts_malloc(sizeof *dev * (size_t)s->ntiles);
  if (!dev) {
    p->st = TS_ERR_NOMEM;
    return NULL;
  }
  move_tiles(s, coef, dev);
  ts_sharding_value_t *out = NULL;
  if (ts_sharding_tiled(p->a, nd, dims, dev, nsub, sub, &out) != TS_OK)
    ts_part_fail(p, NULL, TS_ERR_INTERNAL, "cannot %s", what);
  if (dev != stack) ts_free(dev);
  out = ts_part_intern(p, out);
  if (out) ts_part_memo_put(p, key, nkey, out);
  return out;
}

ts_sharding_value_t *ts_part_replicate_dims(part_t *p, const ts_sharding_value_t *s, int rank, const bool *keep) {
  if (!ts_part_tiled(s) || p->st != TS_OK) return (ts_sharding_value_t *)s;
  int r = s->data_rank, ns = s->nsubgroups;
  int64_t fold = 1;
  for (int d = 0; d < r; d++)
    if (!keep[d]) fold *= s->dims[d];
  if (fold == 1) return (ts_sharding_value_t *)s;
  int64_t key[3 + TS_PART_MAX_RANK + 8];
  int nkey = 0;
  key[nkey++] = TS_PART_MEMO_REPLICATE;
  key[nkey++] = ts_part_key_ptr(s);
  for (int d = 0; d < r; d++) key[nkey++] = keep[d];
  void *hit;
  if (ts_part_memo_get(p, key, nkey, &hit)) return hit;
  /* Data dims not kept become size 1 and together one trailing replicated
   * subgroup, indexed row-major over them. */
  int nd = r + ns + 1;
  int64_t dims[TS_PART_MAX_RANK + 8], str[TS_PART_MAX_RANK + 8], coef[TS_PART_MAX_RANK + 8];
  ts_subgroup_t sub[TS_PART_MAX_RANK];
  for (int d = 0; d < r; d++) dims[d] = keep[d] ? s->dims[d] : 1;
  for (int k = 0; k < ns; k++) {
    dims[r + k] = s->dims[r + k];
    sub[k] = s->subgroups[k];
  }
  dims[r + ns] = fold;
  sub[ns] = TS_SUBGROUP_REPLICATED;
  strides(nd, dims, str);
  int64_t f = 1; /* stride of dim d inside the folded index */
  for (int d = r - 1; d >= 0; d--) {
    if (keep[d]) {
      coef[d] = str[d];
    } else {
      coef[d] = f * str[r + ns];
      f *= s->dims[d];
    }
  }
  for (int k = 0; k < ns; k++) coef[r + k] = str[r + k];
  (void)rank;
  return derive(p, s, coef, nd, dims, ns + 1, sub, key, nkey, "fold tiles into replication");
}

ts_sharding_value_t *ts_part_embed(part_t *p, const ts_sharding_value_t *s, int srank, int rank,
                                   const int64_t *map) {
  if (!ts_part_tiled(s) || p->st != TS_OK) return (ts_sharding_value_t *)s;
  int64_t key[4 + TS_PART_MAX_RANK];
  int nkey = 0;
  key[nkey++] = TS_PART_MEMO_EMBED;
  key[nkey++] = ts_part_key_ptr(s);
  key[nkey++] = rank;
  key[nkey++] = srank;
  for (int k = 0; k < srank; k++) key[nkey++] = map[k];
  void *hit;
  if (ts_part_memo_get(p, key, nkey, &hit)) return hit;
  int ns = s->nsubgroups, nd = rank + ns;
  int64_t dims[TS_PART_MAX_RANK + 8], str[TS_PART_MAX_RANK + 8], coef[TS_PART_MAX_RANK + 8] = {0};
  int owner[TS_PART_MAX_RANK + 8]; /* the last dim of s mapped to each new dim */
  for (int d = 0; d < rank; d++) dims[d] = 1;
  for (int k = 0; k < srank; k++) {
    dims[map[k]] = s->dims[k];
    owner[map[k]] = k;
  }
  for (int k = 0; k < ns; k++) dims[rank + k] = s->dims[srank + k];
  strides(nd, dims, str);
  for (int k = 0; k < srank; k++)
    if (owner[map[k]] == k) coef[k] = str[map[k]];
  for (int k = 0; k < ns; k++) coef[srank + k] += str[rank + k];
  return derive(p, s, coef, nd, dims, ns, s->subgroups, key, nkey, "embed a sharding");
}

void ts_part_groups_over_dims(part_t *p, const ts_sharding_value_t *s, const bool *mask, int64_t *ngroups,
                              int64_t *group_size, int64_t **groups) {
  typedef struct {
    int64_t ng, gs, *g;
  } groups_t;
  int64_t key[2 + TS_PART_MAX_RANK + 8];
  int nkey = 0;
  key[nkey++] = TS_PART_MEMO_GROUPS;
  key[nkey++] = ts_part_key_ptr(s);
  for (int d = 0; d < s->data_rank; d++) key[nkey++] = mask[d];
  void *hit;
  if (ts_part_memo_get(p, key, nkey, &hit)) {
    const groups_t *m = hit;
    *ngroups = m->ng;
    *group_size = m->gs;
    *groups = m->g;
    return;
  }
  /* A device goes to key * gs + pos: pos row-major over the masked dims,
   * key over the others. */
  int64_t gs = 1, coef[TS_PART_MAX_RANK + 8], kstr = 1;
  for (int e = s->ndims - 1; e >= 0; e--) {
    if (e < s->data_rank && mask[e]) {
      coef[e] = gs;
      gs *= s->dims[e];
    }
  }
  for (int e = s->ndims - 1; e >= 0; e--)
    if (!(e < s->data_rank && mask[e])) {
      coef[e] = kstr * gs;
      kstr *= s->dims[e];
    }
  int64_t ng = s->ntiles / gs;
  int64_t *g = ts_arena_alloc(p->a, sizeof *g * (size_t)s->ntiles);
  groups_t *m = ts_arena_alloc(p->a, sizeof *m);
  if (!g || !m) {
    p->st = TS_ERR_NOMEM;
    *groups = NULL;
    return;
  }
  move_tiles(s, coef, g);
  *m = (groups_t){ng, gs, g};
  ts_part_memo_put(p, key, nkey, m);
  *ngroups = ng;
  *group_size = gs;
  *groups = g;
}

/* ---- sharding arithmetic for handlers ---------------------------------- */

/* A sharding of an n-dim array whose dim k is dim sel[k] of `s`; dims of s
 * not selected must be untiled. */
ts_sharding_value_t *ts_part_select_dims(part_t *p, const ts_sharding_value_t *s, int n, const int64_t *sel) {
  if (!s || s->kind != TS_SHARD_TILED || p->st != TS_OK) return (ts_sharding_value_t *)s;
  int64_t key[3 + 2 * TS_PART_MAX_RANK];
  int nkey = 0;
  key[nkey++] = TS_PART_MEMO_SELECT;
  key[nkey++] = ts_part_key_ptr(s);
  for (int k = 0; k < n; k++) key[nkey++] = sel[k];
  void *hit;
  if (ts_part_memo_get(p, key, nkey, &hit)) return hit;
  int ns = s->nsubgroups;
  int64_t dims[TS_PART_MAX_RANK + 8], str[TS_PART_MAX_RANK + 8], coef[TS_PART_MAX_RANK + 8] = {0};
  for (int k = 0; k < n; k++) dims[k] = s->dims[sel[k]];
  for (int k = 0; k < ns; k++) dims[n + k] = s->dims[s->data_rank + k];
  strides(n + ns, dims, str);
  for (int k = 0; k < n; k++) coef[sel[k]] += str[k];
  for (int k = 0; k < ns; k++) coef[s->data_rank + k] += str[n + k];
  return derive(p, s, coef, n + ns, dims, ns, s->subgroups, key, nkey, "select sharding dimensions");
}

/* The sharding of an operand of rank `rank` whose dim opdim[k] corresponds
 * to result dim outdim[k] (k < n), under result sharding s (rank out_rank):
 * result dims not listed are replicated, operand dims not listed untiled. */
ts_sharding_value_t *ts_part_operand_sharding(part_t *p, const ts_sharding_value_t *s, int out_rank, int n,
                                             const int64_t *outdim, const int64_t *opdim, int rank) {
  if (!s || s->kind != TS_SHARD_TILED) return (ts_sharding_value_t *)s;
  int64_t key[4 + 2 * TS_PART_MAX_RANK];
  int nkey = 0;
  key[nkey++] = TS_PART_MEMO_OPERAND;
  key[nkey++] = ts_part_key_ptr(s);
  key[nkey++] = out_rank;
  key[nkey++] = rank;
  for (int k = 0; k < n; k++) {
    key[nkey++] = outdim[k];
    key[nkey++] = opdim[k];
  }
  void *hit;
  if (ts_part_memo_get(p, key, nkey, &hit)) return hit;
  bool keep[TS_PART_MAX_RANK] = {false};
  for (int k = 0; k < n; k++) keep[outdim[k]] = true;
  ts_sharding_value_t *r = ts_part_replicate_dims(p, s, out_rank, keep);
  ts_sharding_value_t *sel = ts_part_select_dims(p, r, n, outdim);
  ts_sharding_value_t *out = ts_part_embed(p, sel, n, rank, opdim);
  if (out) ts_part_memo_put(p, key, nkey, out);
  return out;
}
