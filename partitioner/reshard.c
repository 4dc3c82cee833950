/* Resharding: moving a value from one sharding to another with
 * collectives (GSPMD section 4.2). The general path gathers the full value
 * (all-gathers along each tiled dimension, a masked all-reduce from a
 * single device) and then takes the target shard with a dynamic-slice at an
 * offset looked up by partition-id; one-collective cases go straight
 * through, and two tilings of one dim (partial replication to tiling,
 * uneven splits) trade rows with their neighbours by collective-permute
 * where that moves less. */
#include "partitioner_internal.h"

#include <stdlib.h>
#include <string.h>

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
  if (!x || !ts_part_tiled(to)) return x;
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

/* The one data dim whose tiling differs between `from` and `to` (both
 * tiled over every device, with replicated subgroups only), every other
 * dim tiled alike device by device; -1 when there is none or more than
 * one. */
static int changed_dim(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from,
                       const ts_sharding_value_t *to) {
  int r = shape->rank, d = -1;
  int64_t fi[TS_PART_MAX_RANK + 8], ti[TS_PART_MAX_RANK + 8];
  if (!ts_part_tiled(from) || !ts_part_tiled(to) || from->ntiles != p->n || to->ntiles != p->n || r == 0 ||
      from->data_rank != r || to->data_rank != r)
    return -1;
  for (int k = 0; k < from->nsubgroups; k++)
    if (from->subgroups[k] != TS_SUBGROUP_REPLICATED) return -1;
  for (int k = 0; k < to->nsubgroups; k++)
    if (to->subgroups[k] != TS_SUBGROUP_REPLICATED) return -1;
  for (int e = 0; e < r; e++)
    if (from->dims[e] != to->dims[e]) {
      if (d >= 0) return -1;
      d = e;
    }
  for (int64_t dev = 0; dev < p->n; dev++) {
    if (ts_sharding_tile_index(from, dev, fi) != TS_OK || ts_sharding_tile_index(to, dev, ti) != TS_OK) return -1;
    for (int e = 0; e < r; e++)
      if (fi[e] != ti[e] && e != d) {
        if (d >= 0) return -1;
        d = e;
      }
  }
  return d;
}

/* A reshard that only gathers dim d (changed_dim, untiled in `to`): one
 * all-gather over the devices that differ only in their tile along d,
 * the padding of an uneven split sliced off, instead of the general
 * path's gather of every tiled dim. */
static int64_t gather_dim_bytes(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from, int d) {
  int64_t dims[TS_PART_MAX_RANK];
  if (ts_sharding_shard_dims(from, shape, dims) != TS_OK) return INT64_MAX / 4;
  (void)p;
  dims[d] *= from->dims[d];
  return dims_bytes(shape->elem, shape->rank, dims);
}

static ts_hlo_instr_t *gather_dim(part_t *p, ts_hlo_instr_t *x, const ts_shape_t *shape,
                                  const ts_sharding_value_t *from, int d) {
  bool mask[TS_PART_MAX_RANK] = {false};
  int64_t ng, gs, *groups, dims[TS_PART_MAX_RANK], start[TS_PART_MAX_RANK] = {0};
  mask[d] = true;
  ts_part_groups_over_dims(p, from, mask, &ng, &gs, &groups);
  if (!groups) return NULL;
  for (int e = 0; e < shape->rank; e++) dims[e] = x->shape->dims[e];
  dims[d] *= from->dims[d];
  ts_hlo_instr_t *g = ts_part_collective(p, TS_OP_ALL_GATHER, ts_part_shape(p, shape->elem, shape->rank, dims), x,
                                         ng, gs, groups);
  ts_part_attr_ints(p, g, "dimensions", 1, (int64_t[]){d});
  if (dims[d] == shape->dims[d]) return g;
  dims[d] = shape->dims[d];
  return ts_part_slice(p, g, start, dims);
}

/* ---- halo exchange between two tilings of one dim ----------------------- */

/* A reshard where `from` and `to` tile every dim but one, d, alike device by
 * device (either may be partially replicated): each device needs the window
 * [jT*cT, jT*cT + cT) of d (its tile under `to`) and holds
 * [jF*cF, jF*cF + cF) (its tile under `from`); what it lacks comes from the
 * source tiles the window overlaps, by collective-permute from a device that
 * holds them (any replica), instead of gathering the whole dim. XLA does
 * this for partial replication to tiling (GSPMD section 4.3's halo
 * exchange applied to resharding). Slot k of a device's window is source
 * tile j0 + k (j0: the tile its window starts in); a slot moves one part
 * [plo, phi) of the source shards for every device (the union of what is
 * read there), so each window lies contiguously in the concatenated slots,
 * as in ts_part_halo_window. One source feeding several devices in a slot
 * needs one permute per device it feeds (a permute sends once). */
#define HALO_MAX_SLOTS 4
#define HALO_MAX_ROUNDS 8

typedef struct {
  int slot;
  int64_t npairs, *pairs; /* (source, target) devices */
} halo_round_t;

typedef struct {
  int d, nslots, nrounds;
  int64_t plo[HALO_MAX_SLOTS], phi[HALO_MAX_SLOTS];
  bool local_reader[HALO_MAX_SLOTS]; /* some device reads the slot from its own shard */
  halo_round_t round[HALO_MAX_ROUNDS];
  int8_t *round_of; /* [slot * n + device]: the round bringing it the slot; -1: none */
  int64_t *start;   /* per device: where its window starts in the slots */
  int64_t len, padhi, window;
  int64_t bytes;    /* per device, each permute at its piece */
} halo_plan_t;

static void halo_plan_free(halo_plan_t *h) {
  for (int k = 0; k < h->nrounds; k++) free(h->round[k].pairs);
  free(h->round_of);
  free(h->start);
  memset(h, 0, sizeof *h);
}

/* Fills *h (free with halo_plan_free) when `from` -> `to` is such a
 * reshard; false (nothing to free) otherwise. Emits nothing: the byte
 * estimate and the reshard share it. */
static bool halo_plan(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from,
                      const ts_sharding_value_t *to, halo_plan_t *h) {
  memset(h, 0, sizeof *h);
  int r = shape->rank, d = changed_dim(p, shape, from, to);
  int64_t n = p->n;
  if (d < 0 || to->dims[d] == 1) return false; /* the whole dim on every device: gather_dim's job */
  int64_t *fi = malloc(sizeof *fi * (size_t)(n * r)), *ti = malloc(sizeof *ti * (size_t)(n * r));
  int64_t nkeys = 1, *head = NULL, *next = malloc(sizeof *next * (size_t)n), idx[TS_PART_MAX_RANK + 8];
  for (int e = 0; e < r; e++) nkeys *= from->dims[e];
  head = malloc(sizeof *head * (size_t)nkeys);
  bool *used = calloc((size_t)(n * HALO_MAX_ROUNDS), sizeof *used), ok = false;
  h->round_of = malloc((size_t)(n * HALO_MAX_SLOTS));
  h->start = calloc((size_t)n, sizeof *h->start);
  if (!fi || !ti || !next || !head || !used || !h->round_of || !h->start) goto out;
  for (int64_t dev = 0; dev < n; dev++) {
    if (ts_sharding_tile_index(from, dev, idx) != TS_OK) goto out;
    memcpy(fi + dev * r, idx, sizeof *idx * (size_t)r);
    if (ts_sharding_tile_index(to, dev, idx) != TS_OK) goto out;
    memcpy(ti + dev * r, idx, sizeof *idx * (size_t)r);
  }
  /* Holders of each source tile (by its row-major data-tile index), in
   * ascending device order. */
  for (int64_t k = 0; k < nkeys; k++) head[k] = -1;
  for (int64_t dev = n - 1; dev >= 0; dev--) {
    int64_t key = ts_part_linear(r, from->dims, fi + dev * r);
    next[dev] = head[key];
    head[key] = dev;
  }
  int64_t N = shape->dims[d], tF = from->dims[d], tT = to->dims[d];
  int64_t cF = (N + tF - 1) / tF, cT = (N + tT - 1) / tT;
  if (N == 0) goto out;
  h->d = d;
  h->window = cT;
  memset(h->round_of, -1, (size_t)(n * HALO_MAX_SLOTS));
  for (int k = 0; k < HALO_MAX_SLOTS; k++) h->plo[k] = cF, h->phi[k] = 0;
  for (int64_t dev = 0; dev < n; dev++) {
    int64_t w0 = ti[dev * r + d] * cT, w1 = w0 + cT < N ? w0 + cT : N, jF = fi[dev * r + d];
    if (w0 >= w1) continue; /* a padding-only tile: reads nothing */
    int64_t j0 = w0 / cF, j1 = (w1 - 1) / cF;
    if (j1 - j0 + 1 > HALO_MAX_SLOTS) goto out;
    if (j1 - j0 + 1 > h->nslots) h->nslots = (int)(j1 - j0 + 1);
    for (int64_t j = j0; j <= j1; j++) {
      int k = (int)(j - j0);
      int64_t a0 = w0 - j * cF > 0 ? w0 - j * cF : 0, b0 = w1 - j * cF < cF ? w1 - j * cF : cF;
      if (a0 < h->plo[k]) h->plo[k] = a0;
      if (b0 > h->phi[k]) h->phi[k] = b0;
      if (j == jF) {
        h->local_reader[k] = true;
        continue;
      }
      for (int e = 0; e < r; e++) idx[e] = e == d ? j : fi[dev * r + e];
      int64_t key = ts_part_linear(r, from->dims, idx), src = -1;
      int rd = 0;
      for (; rd < h->nrounds && src < 0; rd++) { /* a round of this slot with a free holder */
        if (h->round[rd].slot != k) continue;
        for (int64_t s = head[key]; s >= 0 && src < 0; s = next[s])
          if (!used[rd * n + s]) src = s;
        if (src >= 0) break;
      }
      if (src < 0) { /* a new round */
        if (h->nrounds == HALO_MAX_ROUNDS || head[key] < 0) goto out;
        rd = h->nrounds++;
        h->round[rd].slot = k;
        h->round[rd].pairs = malloc(sizeof(int64_t) * 2 * (size_t)n);
        if (!h->round[rd].pairs) goto out;
        src = head[key];
      }
      halo_round_t *hr = &h->round[rd];
      used[rd * n + src] = true;
      hr->pairs[2 * hr->npairs] = src;
      hr->pairs[2 * hr->npairs + 1] = dev;
      hr->npairs++;
      h->round_of[k * n + dev] = (int8_t)rd;
    }
  }
  if (h->nslots == 0) goto out;
  for (int k = 0; k < h->nslots; k++) h->len += h->phi[k] - h->plo[k];
  for (int64_t dev = 0; dev < n; dev++) {
    int64_t w0 = ti[dev * r + d] * cT;
    if (w0 >= N) continue;
    h->start[dev] = w0 - w0 / cF * cF - h->plo[0];
    if (h->start[dev] + cT - h->len > h->padhi) h->padhi = h->start[dev] + cT - h->len;
  }
  int64_t row = ts_elem_storage_bytes(shape->elem);
  for (int e = 0; e < r; e++)
    if (e != d) row *= (shape->dims[e] + from->dims[e] - 1) / from->dims[e];
  for (int k = 0; k < h->nrounds; k++) h->bytes += (h->phi[h->round[k].slot] - h->plo[h->round[k].slot]) * row;
  ok = true;
out:
  free(fi);
  free(ti);
  free(next);
  free(head);
  free(used);
  if (!ok) halo_plan_free(h);
  return ok;
}

/* Emits plan h on x (sharded `from`): the result sharded `to`. */
static ts_hlo_instr_t *halo_reshard(part_t *p, ts_hlo_instr_t *x, const ts_shape_t *shape,
                                    const ts_sharding_value_t *to, const halo_plan_t *h) {
  int r = shape->rank, d = h->d, np = 0;
  int64_t *table = ts_arena_alloc(p->a, sizeof *table * (size_t)p->n), zero = 0;
  ts_hlo_instr_t *slots[HALO_MAX_SLOTS];
  if (!table) {
    p->st = TS_ERR_NOMEM;
    return NULL;
  }
  for (int k = 0; k < h->nslots && x; k++) {
    int64_t st[TS_PART_MAX_RANK] = {0}, lim[TS_PART_MAX_RANK];
    for (int e = 0; e < r; e++) lim[e] = x->shape->dims[e];
    st[d] = h->plo[k];
    lim[d] = h->phi[k];
    ts_hlo_instr_t *piece = h->plo[k] == 0 && h->phi[k] == x->shape->dims[d] ? x : ts_part_slice(p, x, st, lim);
    ts_hlo_instr_t *v = h->local_reader[k] ? piece : NULL;
    for (int rd = 0; rd < h->nrounds && piece; rd++) {
      if (h->round[rd].slot != k) continue;
      ts_hlo_instr_t *recv = ts_part_permute(p, piece, h->round[rd].npairs, h->round[rd].pairs);
      if (!v) {
        v = recv;
        continue;
      }
      /* The devices this round feeds take it; the others keep v. */
      for (int64_t dev = 0; dev < p->n; dev++) table[dev] = h->round_of[k * p->n + dev] == rd;
      ts_hlo_instr_t *ne = ts_part_add(p, TS_OP_COMPARE, ts_part_shape(p, TS_PRED, 0, NULL),
                                       (ts_hlo_instr_t *[]){ts_part_table_lookup(p, table),
                                                            ts_part_const_s32(p, -1, &zero)}, 2, "compare");
      ts_part_attr_ident(p, ne, "direction", "NE");
      ts_hlo_instr_t *m = ts_part_broadcast_scalar(p, ne, r, piece->shape->dims);
      m = m ? ts_part_add(p, TS_OP_SELECT, piece->shape, (ts_hlo_instr_t *[]){m, recv, v}, 3, "select") : NULL;
      v = m;
    }
    if (!v) return NULL;
    slots[np++] = v;
  }
  if (!x) return NULL;
  ts_hlo_instr_t *buf = slots[0];
  if (np > 1) {
    int64_t dims[TS_PART_MAX_RANK];
    for (int e = 0; e < r; e++) dims[e] = x->shape->dims[e];
    dims[d] = h->len;
    buf = ts_part_add(p, TS_OP_CONCATENATE, ts_part_shape(p, shape->elem, r, dims), slots, np, "concatenate");
    ts_part_attr_ints(p, buf, "dimensions", 1, (int64_t[]){d});
  }
  if (h->padhi > 0) {
    int64_t hi[TS_PART_MAX_RANK] = {0};
    hi[d] = h->padhi;
    buf = ts_part_pad(p, buf, hi);
  }
  const ts_shape_t *ls = ts_part_local_shape(p, shape, to);
  if (!buf || !ls) return NULL;
  ts_hlo_instr_t *ops[TS_PART_MAX_RANK + 1];
  ops[0] = buf;
  for (int e = 0; e < r; e++) ops[1 + e] = e == d ? ts_part_table_lookup(p, h->start) : ts_part_const_s32(p, -1, &zero);
  ts_hlo_instr_t *ds = ts_part_add(p, TS_OP_DYNAMIC_SLICE, ls, ops, r + 1, "dynamic-slice");
  ts_part_attr_ints(p, ds, "dynamic_slice_sizes", r, ls->dims);
  return ds;
}

/* The general path's bytes: an all-gather per tiled dim of `from` (each
 * the size of what it has gathered so far), nothing for the final
 * dynamic-slice. */
static int64_t general_bytes(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from) {
  int64_t dims[TS_PART_MAX_RANK];
  (void)p;
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

/* ---- partial replication to a moved tiling ----------------------------- */

/* A reshard from a partially replicated `from` to a `to` whose tiling of
 * some dim i has moved to another dim j (GSPMD section 4.2: a local
 * dynamic-slice takes partial replication to tiling, then one all-to-all
 * moves the tiles). The all-reduced partial sum of a dot whose batch dim
 * stays tiled while the output wants it on a non-contracting dim is the
 * usual source (corpus case 134). Returns the sharding in between, `mid`:
 * `to` with the tiles of j put on i (each device keeping its tile index),
 * such that from -> mid is a local slice and mid -> to one all-to-all; NULL
 * when there is none. Every such mid costs the same one all-to-all of the
 * target shard, so the first found is taken. */
static ts_sharding_value_t *slice_then_all_to_all(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from,
                                                  const ts_sharding_value_t *to) {
  int r = shape->rank;
  int64_t reps = 1;
  if (!ts_part_tiled(from) || !ts_part_tiled(to) || from->ntiles != p->n || to->ntiles != p->n ||
      from->data_rank != r || to->data_rank != r || r < 2)
    return NULL;
  for (int k = 0; k < from->nsubgroups; k++) {
    if (from->subgroups[k] != TS_SUBGROUP_REPLICATED) return NULL;
    reps *= from->dims[from->data_rank + k];
  }
  for (int k = 0; k < to->nsubgroups; k++)
    if (to->subgroups[k] != TS_SUBGROUP_REPLICATED) return NULL;
  /* A fully tiled `from` is refined only by itself: the one-collective
   * classification has already seen that case. */
  if (reps == 1) return NULL;
  for (int e = 0; e < r; e++)
    if (shape->dims[e] % from->dims[e] != 0 || shape->dims[e] % to->dims[e] != 0) return NULL;
  int64_t *idx = NULL, *devices = NULL, dims[TS_PART_MAX_RANK + 8];
  for (int i = 0; i < r; i++) {
    if (to->dims[i] != 1) continue;
    for (int j = 0; j < r; j++) {
      if (j == i || to->dims[j] == 1) continue;
      for (int e = 0; e < to->ndims; e++) dims[e] = to->dims[e];
      dims[i] = to->dims[j];
      dims[j] = 1;
      if (shape->dims[i] % dims[i] != 0) continue;
      bool refines = true; /* a local slice needs mid's tiles inside from's */
      for (int e = 0; e < r && refines; e++) refines = dims[e] % from->dims[e] == 0;
      if (!refines) continue;
      if (!idx) {
        idx = ts_arena_alloc(p->a, sizeof *idx * (size_t)(TS_PART_MAX_RANK + 8));
        devices = ts_arena_alloc(p->a, sizeof *devices * (size_t)p->n);
        if (!idx || !devices) return NULL;
      }
      bool ok = true;
      for (int64_t dev = 0; dev < p->n && ok; dev++) {
        ok = ts_sharding_tile_index(to, dev, idx) == TS_OK;
        int64_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        if (ok) devices[ts_part_linear(to->ndims, dims, idx)] = dev;
      }
      ts_sharding_value_t *mid;
      ts_reshard_t a, b;
      if (!ok || ts_sharding_tiled(p->a, to->ndims, dims, devices, to->nsubgroups, to->subgroups, &mid) != TS_OK ||
          ts_sharding_reshard(p->a, from, mid, shape, &a) != TS_OK || a.kind != TS_RESHARD_DYNAMIC_SLICE ||
          ts_sharding_reshard(p->a, mid, to, shape, &b) != TS_OK || b.kind != TS_RESHARD_ALL_TO_ALL ||
          b.dim != i || b.split_dim != j)
        continue;
      return mid;
    }
  }
  return NULL;
}

/* After the one-collective cases: a gather of the one changed dim, or a
 * halo exchange where it moves fewer bytes than the general path
 * (ts_part_reshard decides the same way). */
static int64_t halo_or_general_bytes(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from,
                                     const ts_sharding_value_t *to) {
  int64_t g = general_bytes(p, shape, from);
  int d = changed_dim(p, shape, from, to);
  if (d >= 0 && to->dims[d] == 1) return gather_dim_bytes(p, shape, from, d);
  halo_plan_t h;
  if (!halo_plan(p, shape, from, to, &h)) return g;
  int64_t b = h.bytes;
  halo_plan_free(&h);
  return b < g ? b : g;
}

/* One collective (or a local slice) may do, when the shapes divide evenly
 * into both tilings of the same tile count: *r says which (the sharding
 * module's classification). */
static bool one_collective(part_t *p, const ts_shape_t *shape, const ts_sharding_value_t *from,
                           const ts_sharding_value_t *to, ts_reshard_t *r) {
  if (!ts_part_tiled(to) || !(ts_part_tiled(from) || from->kind == TS_SHARD_REPLICATED) ||
      from->ntiles != to->ntiles)
    return false;
  for (int d = 0; d < shape->rank; d++) {
    if (ts_part_tiled(from) && shape->dims[d] % from->dims[d] != 0) return false;
    if (shape->dims[d] % to->dims[d] != 0) return false;
  }
  return ts_sharding_reshard(p->a, from, to, shape, r) == TS_OK;
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
  ts_reshard_t r;
  if (one_collective(p, shape, from, to, &r)) {
    if (ts_sharding_shard_dims(to, shape, dims) != TS_OK) return INT64_MAX / 4;
    switch (r.kind) {
    case TS_RESHARD_NONE: return 0;
    case TS_RESHARD_DYNAMIC_SLICE: if (ts_part_tiled(from)) return 0; break;
    case TS_RESHARD_ALL_GATHER:
    case TS_RESHARD_COLLECTIVE_PERMUTE: return dims_bytes(shape->elem, shape->rank, dims);
    case TS_RESHARD_ALL_TO_ALL:
      if (ts_part_tiled(from) && r.dim != r.split_dim &&
          shape->dims[r.split_dim] / from->dims[r.split_dim] % r.group_size == 0)
        return dims_bytes(shape->elem, shape->rank, dims);
      break;
    default: break;
    }
  }
  int64_t b = halo_or_general_bytes(p, shape, from, to);
  if (b > 0 && slice_then_all_to_all(p, shape, from, to)) {
    if (ts_sharding_shard_dims(to, shape, dims) != TS_OK) return INT64_MAX / 4;
    int64_t a2a = dims_bytes(shape->elem, shape->rank, dims);
    if (a2a < b) return a2a;
  }
  return b;
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
    /* Leaves already in place: the value itself, not a rebuilt tuple (an
     * async start must reach its done directly). */
    bool same = true;
    for (int k = 0; k < shape->ntuple && same; k++)
      same = ts_sharding_equal(from->kind == TS_SHARD_TUPLE ? from->tuple[k] : from,
                               to->kind == TS_SHARD_TUPLE ? to->tuple[k] : to);
    if (same) return x;
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
  ts_reshard_t r;
  if (one_collective(p, shape, from, to, &r)) {
    const ts_shape_t *ls = ts_part_local_shape(p, shape, to);
    switch (r.kind) {
    case TS_RESHARD_NONE: return x;
    case TS_RESHARD_DYNAMIC_SLICE: {
      /* Each device already holds its new shard: slice it out locally, at
       * (tile index in `to` x chunk) - (tile index in `from` x chunk). */
      if (!ts_part_tiled(from)) break;
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
  if (from->kind == TS_SHARD_REPLICATED) return from_full(p, x, shape, to);
  ts_sharding_value_t *mid = slice_then_all_to_all(p, shape, from, to);
  if (mid) { /* taken where ts_part_reshard_bytes takes it */
    int64_t dims[TS_PART_MAX_RANK];
    if (ts_sharding_shard_dims(to, shape, dims) == TS_OK &&
        dims_bytes(shape->elem, shape->rank, dims) < halo_or_general_bytes(p, shape, from, to))
      return ts_part_reshard(p, ts_part_reshard(p, x, shape, from, mid), shape, mid, to);
  }
  int d = changed_dim(p, shape, from, to);
  if (d >= 0 && to->dims[d] == 1) return gather_dim(p, x, shape, from, d);
  halo_plan_t h;
  if (halo_plan(p, shape, from, to, &h)) {
    ts_hlo_instr_t *y = h.bytes < general_bytes(p, shape, from) ? halo_reshard(p, x, shape, to, &h) : NULL;
    halo_plan_free(&h);
    if (y || p->st != TS_OK) return y;
  }
  return from_full(p, to_full(p, x, shape, from), shape, to);
}
