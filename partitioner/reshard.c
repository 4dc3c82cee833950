/* Shardings as the partitioner needs them, and resharding: moving a value
 * from one sharding to another with collectives (GSPMD section 4.2). The
 * general path gathers the full value (all-gathers along each tiled
 * dimension, a masked all-reduce from a single device) and then takes the
 * target shard with a dynamic-slice at an offset looked up by
 * partition-id; one-collective cases go straight through. */
#include "partitioner_internal.h"

#include <string.h>

ts_sharding_value_t *ts_part_replicated(part_t *p) {
  ts_sharding_value_t *s = NULL;
  if (ts_sharding_simple(p->a, TS_SHARD_REPLICATED, &s) != TS_OK && p->st == TS_OK) p->st = TS_ERR_NOMEM;
  return s;
}

static bool tiled(const ts_sharding_value_t *s) { return s && s->kind == TS_SHARD_TILED; }

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
  if (tiled(s) && ts_sharding_shard_dims(s, shape, dims) != TS_OK) {
    ts_part_fail(p, NULL, TS_ERR_INTERNAL, "sharding does not fit its shape");
    return NULL;
  }
  return ts_part_shape(p, shape->elem, shape->rank, dims);
}

/* Row-major linear index of idx in dims. */
static int64_t linear(int n, const int64_t *dims, const int64_t *idx) {
  int64_t l = 0;
  for (int k = 0; k < n; k++) l = l * dims[k] + idx[k];
  return l;
}

static void unlinear(int n, const int64_t *dims, int64_t l, int64_t *idx) {
  for (int k = n - 1; k >= 0; k--) {
    idx[k] = l % dims[k];
    l /= dims[k];
  }
}

ts_sharding_value_t *ts_part_replicate_dims(part_t *p, const ts_sharding_value_t *s, int rank, const bool *keep) {
  if (!tiled(s) || p->st != TS_OK) return (ts_sharding_value_t *)s;
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
    dev[linear(nd, dims, nidx)] = s->devices[t];
  }
  ts_sharding_value_t *out = NULL;
  if (ts_sharding_tiled(p->a, nd, dims, dev, ns + 1, sub, &out) != TS_OK)
    ts_part_fail(p, NULL, TS_ERR_INTERNAL, "cannot fold tiles into replication");
  (void)rank;
  return out;
}

ts_sharding_value_t *ts_part_embed(part_t *p, const ts_sharding_value_t *s, int srank, int rank,
                                   const int64_t *map) {
  if (!tiled(s) || p->st != TS_OK) return (ts_sharding_value_t *)s;
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
    dev[linear(nd, dims, nidx)] = s->devices[t];
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

/* ---- resharding --------------------------------------------------------- */

static ts_hlo_instr_t *gte(part_t *p, ts_hlo_instr_t *t, int k) {
  ts_hlo_instr_t *g = ts_part_add(p, TS_OP_GET_TUPLE_ELEMENT, t->shape->tuple[k], &t, 1, "get-tuple-element");
  ts_part_attr_int(p, g, "index", k);
  return g;
}

/* The full value on every device from x sharded `from`. */
static ts_hlo_instr_t *to_full(part_t *p, ts_hlo_instr_t *x, const ts_shape_t *shape,
                               const ts_sharding_value_t *from) {
  if (!x) return NULL;
  switch (from->kind) {
  case TS_SHARD_REPLICATED: return x;
  case TS_SHARD_MAXIMAL: {
    /* Only from->device holds it: the others contribute zeros to a sum. */
    int64_t *all = ts_arena_alloc(p->a, sizeof *all * (size_t)p->n), k = from->device;
    if (!all) return NULL;
    for (int64_t d = 0; d < p->n; d++) all[d] = d;
    ts_hlo_instr_t *pid = ts_part_partition_id(p);
    ts_hlo_instr_t *kc = ts_part_add(p, TS_OP_CONSTANT, ts_part_shape(p, TS_U32, 0, NULL), NULL, 0, "constant");
    if (kc) {
      kc->literal = ts_arena_alloc(p->dst->arena, sizeof *kc->literal);
      int64_t *v = ts_arena_alloc(p->dst->arena, sizeof *v);
      if (!kc->literal || !v) return NULL;
      memset(kc->literal, 0, sizeof *kc->literal);
      *v = k;
      kc->literal->shape = kc->shape;
      kc->literal->count = 1;
      kc->literal->i = v;
    }
    ts_hlo_instr_t *eq = ts_part_add(p, TS_OP_COMPARE, ts_part_shape(p, TS_PRED, 0, NULL),
                                     (ts_hlo_instr_t *[]){pid, kc}, 2, "compare");
    ts_part_attr_ident(p, eq, "direction", "EQ");
    ts_hlo_instr_t *mask = ts_part_broadcast_scalar(p, eq, shape->rank, shape->dims);
    ts_hlo_instr_t *zero = ts_part_broadcast_scalar(p, ts_part_zero(p, shape->elem), shape->rank, shape->dims);
    ts_hlo_instr_t *sel = ts_part_add(p, TS_OP_SELECT, x ? x->shape : NULL, (ts_hlo_instr_t *[]){mask, x, zero}, 3, "select");
    ts_hlo_instr_t *ar = ts_part_collective(p, TS_OP_ALL_REDUCE, x->shape, sel, 1, p->n, all);
    ts_part_attr_comp(p, ar, "to_apply", ts_part_sum_comp(p, shape->elem));
    return ar;
  }
  case TS_SHARD_TILED: {
    if (from->ntiles != p->n) {
      ts_part_fail(p, NULL, TS_ERR_INVALID_ARGUMENT, "a sharding over %lld devices in a %lld-partition program",
                   (long long)from->ntiles, (long long)p->n);
      return NULL;
    }
    ts_hlo_instr_t *cur = x;
    int64_t dims[TS_PART_MAX_RANK];
    for (int d = 0; d < shape->rank; d++) dims[d] = x->shape->dims[d];
    for (int d = 0; d < from->data_rank && cur; d++) {
      int64_t t = from->dims[d];
      if (t == 1) continue;
      /* Groups: devices equal in every other tile index, in tile order. */
      bool mask[TS_PART_MAX_RANK] = {false};
      mask[d] = true;
      int64_t ng, gs, *groups;
      ts_part_groups_over_dims(p, from, mask, &ng, &gs, &groups);
      if (!groups) return NULL;
      dims[d] *= t;
      cur = ts_part_collective(p, TS_OP_ALL_GATHER, ts_part_shape(p, shape->elem, shape->rank, dims), cur, ng, gs,
                               groups);
      ts_part_attr_ints(p, cur, "dimensions", 1, (int64_t[]){d});
    }
    bool padded = false;
    int64_t start[TS_PART_MAX_RANK] = {0};
    for (int d = 0; d < shape->rank; d++) padded |= dims[d] != shape->dims[d];
    if (padded) cur = ts_part_slice(p, cur, start, shape->dims);
    return cur;
  }
  default:
    ts_part_fail(p, NULL, TS_ERR_UNSUPPORTED, "resharding from a %s sharding is not supported yet",
                 from->kind == TS_SHARD_MANUAL ? "manual" : "unknown or unreduced");
    return NULL;
  }
}

/* x full on every device -> its shard under `to`. */
static ts_hlo_instr_t *from_full(part_t *p, ts_hlo_instr_t *x, const ts_shape_t *shape,
                                 const ts_sharding_value_t *to) {
  if (!x || !tiled(to)) return x;
  if (to->ntiles != p->n) {
    ts_part_fail(p, NULL, TS_ERR_INVALID_ARGUMENT, "a sharding over %lld devices in a %lld-partition program",
                 (long long)to->ntiles, (long long)p->n);
    return NULL;
  }
  int r = shape->rank;
  int64_t chunk[TS_PART_MAX_RANK], hi[TS_PART_MAX_RANK], idx[TS_PART_MAX_RANK + 8];
  bool pad = false;
  for (int d = 0; d < r; d++) {
    int64_t t = to->dims[d];
    chunk[d] = (shape->dims[d] + t - 1) / t;
    hi[d] = chunk[d] * t - shape->dims[d];
    pad |= hi[d] != 0;
  }
  if (pad) x = ts_part_pad(p, x, hi);
  ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 1];
  ops[0] = x;
  int64_t *table = ts_arena_alloc(p->a, sizeof *table * (size_t)p->n);
  if (!table) return NULL;
  for (int d = 0; d < r; d++) {
    for (int64_t dev = 0; dev < p->n; dev++) {
      if (ts_sharding_tile_index(to, dev, idx) != TS_OK) {
        ts_part_fail(p, NULL, TS_ERR_INVALID_ARGUMENT, "device %lld is not in the sharding", (long long)dev);
        return NULL;
      }
      table[dev] = idx[d] * chunk[d];
    }
    ops[1 + d] = ts_part_table_lookup(p, table);
  }
  ts_hlo_instr_t *ds = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ts_part_shape(p, shape->elem, r, chunk), ops, r + 1,
                                   "dynamic-slice");
  ts_part_attr_ints(p, ds, "dynamic_slice_sizes", r, chunk);
  return ds;
}

static int64_t dims_bytes(ts_elem_t e, int rank, const int64_t *dims) {
  int64_t b = ts_elem_storage_bytes(e);
  for (int d = 0; d < rank; d++) b *= dims[d];
  return b;
}

/* Mirrors the choices ts_part_reshard makes below, without emitting: the
 * one-collective cases cost their local result, the general path an
 * all-gather per tiled dimension (each the size of what it has gathered so
 * far) and nothing for the final dynamic-slice. */
int64_t ts_part_reshard_bytes(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from,
                              const ts_sharding_value_t *to) {
  if (p->st != TS_OK || !from || !to) return INT64_MAX / 4;
  if (ts_sharding_equal(from, to) || !ts_shape_is_array(shape) || to->kind == TS_SHARD_UNKNOWN) return 0;
  if (to->kind == TS_SHARD_MANUAL || from->kind == TS_SHARD_MANUAL || from->kind == TS_SHARD_TUPLE ||
      to->kind == TS_SHARD_TUPLE)
    return INT64_MAX / 4;
  int64_t dims[TS_PART_MAX_RANK];
  bool even = tiled(from) || tiled(to);
  for (int d = 0; d < shape->rank && even; d++) {
    if (tiled(from) && shape->dims[d] % from->dims[d] != 0) even = false;
    if (tiled(to) && shape->dims[d] % to->dims[d] != 0) even = false;
  }
  if (even && tiled(to) && (tiled(from) || from->kind == TS_SHARD_REPLICATED) && from->ntiles == to->ntiles) {
    ts_reshard_t r;
    if (ts_sharding_reshard(p->a, from, to, shape, &r) == TS_OK) {
      if (ts_sharding_shard_dims(to, shape, dims) != TS_OK) return INT64_MAX / 4;
      switch (r.kind) {
      case TS_RESHARD_NONE: return 0;
      case TS_RESHARD_DYNAMIC_SLICE: if (tiled(from)) return 0; break;
      case TS_RESHARD_ALL_GATHER:
      case TS_RESHARD_COLLECTIVE_PERMUTE: return dims_bytes(shape->elem, shape->rank, dims);
      case TS_RESHARD_ALL_TO_ALL:
        if (tiled(from) && r.dim != r.split_dim &&
            shape->dims[r.split_dim] / from->dims[r.split_dim] % r.group_size == 0)
          return dims_bytes(shape->elem, shape->rank, dims);
        break;
      default: break;
      }
    }
  }
  switch (from->kind) {
  case TS_SHARD_REPLICATED: return 0;
  case TS_SHARD_MAXIMAL: return dims_bytes(shape->elem, shape->rank, shape->dims);
  case TS_SHARD_TILED: {
    if (ts_sharding_shard_dims(from, shape, dims) != TS_OK) return INT64_MAX / 4;
    int64_t b = 0;
    for (int d = 0; d < from->data_rank; d++)
      if (from->dims[d] > 1) {
        dims[d] *= from->dims[d];
        b += dims_bytes(shape->elem, shape->rank, dims);
      }
    return b;
  }
  default: return INT64_MAX / 4;
  }
}

ts_hlo_instr_t *ts_part_reshard(part_t *p, ts_hlo_instr_t *x, const ts_shape_t *shape,
                                const ts_sharding_value_t *from, const ts_sharding_value_t *to) {
  if (!x || p->st != TS_OK) return NULL;
  if (ts_sharding_equal(from, to)) return x;
  if (shape->elem == TS_TUPLE) {
    ts_hlo_instr_t *el[1024];
    if (shape->ntuple > 1024) {
      ts_part_fail(p, NULL, TS_ERR_UNSUPPORTED, "a tuple of more than 1024 elements");
      return NULL;
    }
    for (int k = 0; k < shape->ntuple; k++) {
      const ts_sharding_value_t *f = from->kind == TS_SHARD_TUPLE ? from->tuple[k] : from;
      const ts_sharding_value_t *t = to->kind == TS_SHARD_TUPLE ? to->tuple[k] : to;
      el[k] = ts_part_reshard(p, gte(p, x, k), shape->tuple[k], f, t);
    }
    const ts_shape_t *ls = ts_part_local_shape(p, shape, to);
    return ts_part_add(p, TS_OP_TUPLE, ls, el, shape->ntuple, "tuple");
  }
  if (!ts_shape_is_array(shape)) return x; /* tokens */
  if (to->kind == TS_SHARD_MANUAL || from->kind == TS_SHARD_MANUAL) {
    ts_part_fail(p, NULL, TS_ERR_UNSUPPORTED, "resharding into or out of a manual sharding");
    return NULL;
  }
  if (to->kind == TS_SHARD_UNKNOWN) return x;
  /* One collective (or a local slice) when the shapes divide evenly. */
  bool even = tiled(from) || tiled(to);
  for (int d = 0; d < shape->rank && even; d++) {
    if (tiled(from) && shape->dims[d] % from->dims[d] != 0) even = false;
    if (tiled(to) && shape->dims[d] % to->dims[d] != 0) even = false;
  }
  if (even && tiled(to) && (tiled(from) || from->kind == TS_SHARD_REPLICATED) && from->ntiles == to->ntiles) {
    ts_reshard_t r;
    if (ts_sharding_reshard(p->a, from, to, shape, &r) == TS_OK) {
      const ts_shape_t *ls = ts_part_local_shape(p, shape, to);
      switch (r.kind) {
      case TS_RESHARD_NONE: return x;
      case TS_RESHARD_DYNAMIC_SLICE: {
        /* Each device already holds its new shard: slice it out locally, at
         * (tile index in `to` x chunk) - (tile index in `from` x chunk). */
        if (!tiled(from)) break;
        int rk = shape->rank;
        int64_t fi[TS_PART_MAX_RANK + 8], ti[TS_PART_MAX_RANK + 8];
        int64_t *table = ts_arena_alloc(p->a, sizeof *table * (size_t)p->n);
        ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 1];
        if (!table) return NULL;
        ops[0] = x;
        for (int d = 0; d < rk; d++) {
          int64_t fc = shape->dims[d] / from->dims[d], tc = shape->dims[d] / to->dims[d];
          for (int64_t dev = 0; dev < p->n; dev++) {
            if (ts_sharding_tile_index(from, dev, fi) != TS_OK || ts_sharding_tile_index(to, dev, ti) != TS_OK) {
              ts_part_fail(p, NULL, TS_ERR_INVALID_ARGUMENT, "device %lld is not in the sharding", (long long)dev);
              return NULL;
            }
            table[dev] = ti[d] * tc - fi[d] * fc;
          }
          ops[1 + d] = ts_part_table_lookup(p, table);
        }
        ts_hlo_instr_t *ds = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ls, ops, rk + 1, "dynamic-slice");
        ts_part_attr_ints(p, ds, "dynamic_slice_sizes", rk, ls->dims);
        return ds;
      }
      case TS_RESHARD_ALL_GATHER: {
        ts_hlo_instr_t *g = ts_part_collective(p, TS_OP_ALL_GATHER, ls, x, r.ngroups, r.group_size, r.groups);
        ts_part_attr_ints(p, g, "dimensions", 1, (int64_t[]){r.dim});
        return g;
      }
      case TS_RESHARD_ALL_TO_ALL: {
        /* Tiles move from dim a to dim b. HLO's all-to-all splits and
         * concatenates the same dimension, so: split b into [G, b/G], swap
         * the G parts (part k to group member k), then move the G dim, now
         * indexed by the sender's tile along a, in front of a and merge. */
        int a = r.dim, b = r.split_dim, rk = shape->rank;
        int64_t G = r.group_size, d1[TS_PART_MAX_RANK + 1], perm[TS_PART_MAX_RANK + 1], d2[TS_PART_MAX_RANK + 1];
        const ts_shape_t *xs = x->shape;
        if (a == b || xs->dims[b] % G != 0) break;
        int n1 = 0;
        for (int d = 0; d < rk; d++) {
          if (d == b) {
            d1[n1++] = G;
            d1[n1++] = xs->dims[b] / G;
          } else {
            d1[n1++] = xs->dims[d];
          }
        }
        ts_hlo_instr_t *x1 = ts_part_reshape(p, x, n1, d1);
        ts_hlo_instr_t *aa = ts_part_add(p, TS_OP_ALL_TO_ALL, x1 ? x1->shape : NULL, &x1, 1, "all-to-all");
        ts_part_attr_int(p, aa, "channel_id", p->next_channel++);
        ts_part_attr_groups(p, aa, r.ngroups, r.group_size, r.groups);
        ts_part_attr_ints(p, aa, "dimensions", 1, (int64_t[]){b});
        /* Positions in x1: G at b, a at a' (shifted past the split). */
        int ap = a < b ? a : a + 1, np2 = 0;
        for (int d = 0; d < n1; d++) {
          if (d == b) continue;
          if (d == ap) perm[np2++] = b;
          perm[np2++] = d;
        }
        for (int d = 0; d < n1; d++) d2[d] = d1[perm[d]];
        ts_hlo_instr_t *t = aa ? ts_part_add(p, TS_OP_TRANSPOSE, ts_part_shape(p, shape->elem, n1, d2), &aa, 1,
                                             "transpose") : NULL;
        ts_part_attr_ints(p, t, "dimensions", n1, perm);
        return ts_part_reshape(p, t, rk, ls->dims);
      }
      case TS_RESHARD_COLLECTIVE_PERMUTE: {
        return ts_part_permute(p, x, r.npairs, r.pairs);
      }
      default: break;
      }
    }
  }
  if (from->kind == TS_SHARD_REPLICATED) return from_full(p, x, shape, to);
  return from_full(p, to_full(p, x, shape, from), shape, to);
}
