/* The evaluator: runs computations over simulated devices in lockstep.
 *
 * Every computation runs for `ndev` devices at once; a frame holds one value
 * per (instruction, device). An instruction whose operands are the same value
 * on every device, and whose meaning does not depend on the device, runs once
 * and its value is shared, so the unpartitioned parts of a program cost one
 * device's work. Collectives see every device's operand, which gives them
 * their real multi-device meaning; manual regions (SPMDFullToShardShape ...
 * SPMDShardToFullShape) fan a value out to per-device shards and back. */
#include "interp_internal.h"
#include "ts_sharding.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 256 /* nested called computations (kernel -> apply -> ...) */

typedef struct {
  int n;
  const ts_hlo_instr_t **order; /* topological */
  int *nuses;                   /* per position: operand uses (+1 for the root) */
  int root;
  bool device_dependent;        /* reads partition/replica id or communicates */
} plan_t;

struct ts_interp {
  const ts_hlo_module_t *m;
  ts_arena_t *arena;
  int ndev;                     /* devices in lockstep */
  bool reference;               /* one argument set shared by all devices */
  bool trap_nonfinite;
  int64_t replicas, partitions; /* replicas * partitions == ndev */
  plan_t *plans;                /* per computation, by index in m->comps */
  int *local;                   /* per instruction id: position in its plan */
  ts_value_t **constants;       /* per instruction id */
  ts_kernel_ctx_t ctx[MAX_DEPTH];
  int depth;
  ts_diag_t *diag;
};

static ts_status_t fail(ts_interp_t *it, const ts_hlo_instr_t *i, ts_status_t st, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));

static ts_status_t fail(ts_interp_t *it, const ts_hlo_instr_t *i, ts_status_t st, const char *fmt,
                        ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ts_kernel_fail(&it->ctx[it->depth], i, st, "%s", msg);
}

static int comp_index(const ts_interp_t *it, const ts_hlo_comp_t *c) {
  for (int k = 0; k < it->m->ncomps; k++)
    if (it->m->comps[k] == c) return k;
  return -1;
}

static plan_t *plan_of(ts_interp_t *it, const ts_hlo_comp_t *c) {
  int k = comp_index(it, c);
  return k < 0 ? NULL : &it->plans[k];
}

/* ---- planning ----------------------------------------------------------- */

static bool is_custom_call(const ts_hlo_instr_t *i, const char *target) {
  return i->op == TS_OP_CUSTOM_CALL && strcmp(ts_hlo_custom_call_target(i), target) == 0;
}

static bool is_collective(ts_opcode_t op) {
  switch (op) {
  case TS_OP_ALL_REDUCE: case TS_OP_ALL_REDUCE_START: case TS_OP_ALL_GATHER:
  case TS_OP_ALL_GATHER_START: case TS_OP_REDUCE_SCATTER: case TS_OP_ALL_TO_ALL:
  case TS_OP_COLLECTIVE_PERMUTE: case TS_OP_COLLECTIVE_PERMUTE_START:
  case TS_OP_COLLECTIVE_BROADCAST: case TS_OP_RAGGED_ALL_TO_ALL: case TS_OP_COLLECTIVE_REDUCE:
    return true;
  default: return false;
  }
}

/* The opcode whose meaning an instruction has: async sugar
 * (`all-gather-start`, ...) means its wrapped op. */
static ts_opcode_t meaning(const ts_hlo_instr_t *i) {
  return i->op == TS_OP_ASYNC_START && i->async_wrapped != TS_OP_COUNT ? i->async_wrapped : i->op;
}

static bool instr_device_dependent(const ts_hlo_instr_t *i) {
  ts_opcode_t op = meaning(i);
  ts_custom_call_kind_t cc = ts_hlo_custom_call_kind(i);
  return op == TS_OP_PARTITION_ID || op == TS_OP_REPLICA_ID || is_collective(op) || cc == TS_CC_REGION_ENTER ||
         cc == TS_CC_REGION_EXIT;
}

/* The plan: post-order, local slots and use counts. */
static ts_status_t build_plan(ts_interp_t *it, const ts_hlo_comp_t *c, plan_t *p) {
  int n = c->ninstrs;
  p->order = ts_calloc((size_t)n + 1, sizeof *p->order);
  p->nuses = ts_calloc((size_t)n + 1, sizeof *p->nuses);
  if (!p->order || !p->nuses) return TS_ERR_NOMEM;
  TS_CHECK(ts_hlo_comp_post_order(c, p->order));
  p->n = n;
  for (int k = 0; k < n; k++) it->local[p->order[k]->id] = k;
  for (int k = 0; k < p->n; k++) {
    const ts_hlo_instr_t *i = p->order[k];
    for (int o = 0; o < i->nops; o++) p->nuses[it->local[i->ops[o]->id]]++;
    if (instr_device_dependent(i)) p->device_dependent = true;
  }
  p->root = it->local[c->root->id];
  p->nuses[p->root]++;
  return TS_OK;
}

/* A computation is device-dependent when it or anything it calls is.
 * Iterates to a fixed point (the call graph is acyclic and small). */
static void mark_dependent(ts_interp_t *it) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (int k = 0; k < it->m->ncomps; k++) {
      plan_t *p = &it->plans[k];
      if (p->device_dependent) continue;
      for (int j = 0; j < p->n && !p->device_dependent; j++)
        for (int c = 0; c < p->order[j]->ncalled; c++) {
          plan_t *q = plan_of(it, p->order[j]->called[c]);
          if (q && q->device_dependent) p->device_dependent = changed = true;
        }
    }
  }
}

/* ---- collectives over the simulated devices ----------------------------- */

/* The devices (global ids, in group order) of device d's group, and d's
 * position in it. */
static ts_status_t collective_group(ts_interp_t *it, const ts_hlo_instr_t *i, int d, int64_t *members,
                                    int *n, int *pos) {
  int64_t R = it->replicas, P = it->partitions;
  ts_coll_group_mode_t mode = ts_hlo_group_mode(i, meaning(i));
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "replica_groups");
  const ts_replica_groups_t *rg = a && a->kind == TS_ATTR_REPLICA_GROUPS ? a->v.rg : NULL;
  int64_t space = ts_coll_group_id_space(mode, R, P);
  int64_t self = ts_coll_group_id_of(mode, P, d);
  /* The ids of self's group in the mode's id space. */
  const int64_t *ids = NULL;
  int64_t nids = 0;
  int64_t all[1024];
  if (rg && rg->ngroups > 0) {
    for (int g = 0; g < rg->ngroups && !ids; g++)
      for (int k = 0; k < rg->groups[g].n; k++)
        if (rg->groups[g].v[k] == self) {
          ids = rg->groups[g].v;
          nids = rg->groups[g].n;
          break;
        }
    if (!ids)
      return fail(it, i, TS_ERR_INVALID_ARGUMENT,
                  "no replica group contains id %lld of device %d (%lld replicas x %lld partitions run)",
                  (long long)self, d, (long long)R, (long long)P);
  } else {
    if (space > 1024) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "more than 1024 devices");
    for (int64_t k = 0; k < space; k++) all[k] = k;
    ids = all;
    nids = space;
  }
  int cnt = 0;
  for (int64_t k = 0; k < nids; k++) {
    if (ids[k] < 0 || ids[k] >= space)
      return fail(it, i, TS_ERR_INVALID_ARGUMENT,
                  "replica group names id %lld, but only %lld %s run here (%lld device%s); run it on "
                  "more devices",
                  (long long)ids[k], (long long)space, ts_coll_group_id_noun(mode),
                  (long long)(R * P), R * P == 1 ? "" : "s");
    if (cnt + ts_coll_group_devices_per_id(mode, P) > 1024)
      return fail(it, i, TS_ERR_INVALID_ARGUMENT, "group larger than 1024 devices");
    cnt += (int)ts_coll_group_devices(mode, P, d, &ids[k], 1, members + cnt);
  }
  *n = cnt;
  *pos = -1;
  for (int k = 0; k < cnt; k++)
    if (members[k] == d) *pos = k;
  if (*pos < 0) return fail(it, i, TS_ERR_INTERNAL, "device %d is not in its own group", d);
  return TS_OK;
}

/* Elementwise combine of src into acc (n elements of type e) by `comp`. */
static ts_status_t combine(ts_interp_t *it, const ts_hlo_instr_t *i, const ts_hlo_comp_t *comp,
                           ts_array_t *acc, const ts_array_t *src) {
  int64_t n = ts_array_count(acc);
  ts_elem_t e = acc->elem;
  ts_opcode_t op = ts_reducer_op(comp);
  if (op != TS_OP_COUNT && e == TS_F32) {
    float *x = acc->data;
    const float *y = src->data;
    for (int64_t k = 0; k < n; k++) {
      switch (op) {
      case TS_OP_ADD: x[k] += y[k]; break;
      case TS_OP_MULTIPLY: x[k] *= y[k]; break;
      case TS_OP_MAXIMUM: x[k] = (x[k] != x[k] || y[k] != y[k]) ? x[k] + y[k] : (x[k] > y[k] ? x[k] : y[k]); break;
      case TS_OP_MINIMUM: x[k] = (x[k] != x[k] || y[k] != y[k]) ? x[k] + y[k] : (x[k] < y[k] ? x[k] : y[k]); break;
      default: return fail(it, i, TS_ERR_INVALID_ARGUMENT, "reducer %s on f32", ts_opcode_name(op));
      }
    }
    return TS_OK;
  }
  /* Generic: one scalar application per element through the reducer. */
  size_t sz = (size_t)ts_elem_storage_bytes(e);
  ts_array_t args[2] = {{e, 0, NULL, NULL}, {e, 0, NULL, NULL}};
  ts_array_t out = {e, 0, NULL, NULL};
  unsigned char tmp[16];
  ts_kernel_ctx_t *ctx = &it->ctx[it->depth];
  for (int64_t k = 0; k < n; k++) {
    args[0].data = (char *)acc->data + (size_t)k * sz;
    args[1].data = (char *)src->data + (size_t)k * sz;
    out.data = tmp;
    TS_CHECK(ctx->apply(ctx, comp, args, 2, &out, 1));
    memcpy((char *)acc->data + (size_t)k * sz, tmp, sz);
  }
  return TS_OK;
}

/* Copies a [outer, chunk*parts, inner] block: part `j` of src's `dim`
 * (size len, starting at off) into dst at part offset dst_off of dst's dim. */
static void copy_dim_range(const ts_array_t *src, int64_t src_off, ts_array_t *dst, int64_t dst_off,
                           int dim, int64_t len) {
  size_t sz = (size_t)ts_elem_storage_bytes(src->elem);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < dim; k++) outer *= src->dims[k];
  for (int k = dim + 1; k < src->rank; k++) inner *= src->dims[k];
  int64_t sd = src->dims[dim], dd = dst->dims[dim];
  for (int64_t o = 0; o < outer; o++)
    memcpy((char *)dst->data + ((size_t)(o * dd + dst_off) * inner) * sz,
           (const char *)src->data + ((size_t)(o * sd + src_off) * inner) * sz, (size_t)(len * inner) * sz);
}

static int64_t dim_attr(const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "dimensions");
  return a && a->kind == TS_ATTR_INT_LIST && a->v.list.n > 0 ? a->v.list.v[0] : -1;
}

/* A collective on device d. `in` holds every device's operand values
 * (in[dev * nops + o]). Writes a new value to *out. */
static ts_status_t run_collective(ts_interp_t *it, const ts_hlo_instr_t *i, ts_value_t **in, int d,
                                  ts_value_t **out) {
  int64_t members[1024];
  int g = 0, pos = 0;
  ts_opcode_t op = meaning(i);
  int nops = i->nops;
  TS_CHECK(collective_group(it, i, d, members, &g, &pos));
  /* The result: for async sugar the result is element 1 of the shape. */
  const ts_shape_t *rshape = i->shape;
  bool wrapped = i->op == TS_OP_ASYNC_START || op == TS_OP_ALL_GATHER_START ||
                 op == TS_OP_COLLECTIVE_PERMUTE_START;
  if (wrapped && rshape->elem == TS_TUPLE && rshape->ntuple >= 2) rshape = rshape->tuple[1];
  ts_value_t *res = ts_value_new(rshape);
  if (!res) return TS_ERR_NOMEM;
  ts_array_t outs[64];
  int nout = ts_value_leaves(res, outs, 64);
  ts_status_t st = TS_OK;
  if (nout > 64 || nout != nops) {
    st = fail(it, i, TS_ERR_INVALID_ARGUMENT, "%d results for %d operands", nout, nops);
    goto out;
  }
#define OPERAND(dev, o) (&in[(dev) * nops + (o)]->a)
  switch (op) {
  case TS_OP_ALL_REDUCE:
  case TS_OP_ALL_REDUCE_START:
  case TS_OP_REDUCE_SCATTER: {
    const ts_hlo_comp_t *comp = i->ncalled ? i->called[0] : NULL;
    for (int o = 0; o < nops && st == TS_OK; o++) {
      ts_value_t *acc = ts_value_new(i->ops[o]->shape);
      if (!acc) {
        st = TS_ERR_NOMEM;
        break;
      }
      memcpy(acc->a.data, OPERAND(members[0], o)->data, ts_array_bytes(&acc->a));
      for (int k = 1; k < g && st == TS_OK; k++) st = combine(it, i, comp, &acc->a, OPERAND(members[k], o));
      if (st == TS_OK) {
        if (op == TS_OP_REDUCE_SCATTER) {
          int dim = (int)dim_attr(i);
          int64_t len = outs[o].dims[dim];
          copy_dim_range(&acc->a, pos * len, &outs[o], 0, dim, len);
        } else {
          memcpy(outs[o].data, acc->a.data, ts_array_bytes(&outs[o]));
        }
      }
      ts_value_unref(acc);
    }
    break;
  }
  case TS_OP_ALL_GATHER:
  case TS_OP_ALL_GATHER_START: {
    int dim = (int)dim_attr(i);
    for (int o = 0; o < nops; o++)
      for (int k = 0; k < g; k++) {
        const ts_array_t *src = OPERAND(members[k], o);
        copy_dim_range(src, 0, &outs[o], k * src->dims[dim], dim, src->dims[dim]);
      }
    break;
  }
  case TS_OP_ALL_TO_ALL: {
    int64_t dim = dim_attr(i);
    if (dim >= 0) { /* array form: split `dim` into g parts, part j to member j */
      const ts_array_t *mine = OPERAND(d, 0);
      int64_t len = mine->dims[dim] / g;
      for (int k = 0; k < g; k++)
        copy_dim_range(OPERAND(members[k], 0), pos * len, &outs[0], k * len, (int)dim, len);
    } else { /* tuple form: operand j goes to member j */
      if (nout != g || nops != g) {
        st = fail(it, i, TS_ERR_INVALID_ARGUMENT, "tuple all-to-all with %d operands over %d devices", nops, g);
        break;
      }
      for (int k = 0; k < g; k++) memcpy(outs[k].data, OPERAND(members[k], pos)->data, ts_array_bytes(&outs[k]));
    }
    break;
  }
  case TS_OP_COLLECTIVE_PERMUTE:
  case TS_OP_COLLECTIVE_PERMUTE_START: {
    const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "source_target_pairs");
    ts_coll_group_mode_t mode = ts_hlo_group_mode(i, meaning(i));
    int64_t P = it->partitions, self = ts_coll_group_id_of(mode, P, d);
    for (int k = 0; a && a->kind == TS_ATTR_INT_LISTS && k < a->v.lists.n; k++) {
      const ts_i64_list_t *pr = &a->v.lists.lists[k];
      if (pr->n != 2 || pr->v[1] != self) continue;
      int64_t src = pr->v[0];
      int64_t sdev = ts_coll_group_device(mode, P, d, src);
      if (sdev < 0 || sdev >= it->ndev) {
        st = fail(it, i, TS_ERR_INVALID_ARGUMENT, "source %lld is not one of the %d devices that run",
                  (long long)src, it->ndev);
        break;
      }
      memcpy(outs[0].data, OPERAND(sdev, 0)->data, ts_array_bytes(&outs[0]));
    }
    break;
  }
  case TS_OP_COLLECTIVE_BROADCAST:
    for (int o = 0; o < nops; o++) memcpy(outs[o].data, OPERAND(members[0], o)->data, ts_array_bytes(&outs[o]));
    break;
  default:
    st = fail(it, i, TS_ERR_INVALID_ARGUMENT, "collective %s is not supported by the interpreter",
              ts_opcode_name(op));
  }
#undef OPERAND
out:
  if (st != TS_OK) {
    ts_value_unref(res);
    return st;
  }
  if (rshape != i->shape) { /* wrap as (operands, result, contexts...) */
    ts_value_t *w = ts_value_new(i->shape);
    if (!w) {
      ts_value_unref(res);
      return TS_ERR_NOMEM;
    }
    ts_value_unref(w->tuple[1]);
    w->tuple[1] = res;
    res = w;
  }
  *out = res;
  return TS_OK;
}

/* ---- manual regions ----------------------------------------------------- */

/* The value of a sharding annotation on `full` (the full-shape side). */
static ts_status_t region_sharding(ts_interp_t *it, const ts_hlo_instr_t *i, const ts_hlo_instr_t *annotated,
                                   const ts_shape_t *full, ts_sharding_value_t **sv) {
  if (!annotated->sharding)
    return fail(it, i, TS_ERR_INVALID_ARGUMENT, "the manual region's full-shape side (%%%s) has no sharding",
                annotated->name);
  ts_status_t st = ts_sharding_from_syntax(it->arena, annotated->sharding, full, sv);
  if (st != TS_OK) st = fail(it, i, st, "the sharding of %%%s does not fit its shape", annotated->name);
  return st;
}

/* Shardy's region boundary: `xla.sdy.in_shardings` / `out_shardings` in the
 * custom-call's frontend attributes, one sharding per full-shape value. */
static ts_status_t sdy_region_shardings(ts_interp_t *it, const ts_hlo_instr_t *i, const char *key, int n,
                                        const ts_shape_t *const *full, ts_sharding_value_t **sv) {
  const ts_hlo_attr_t *fa = ts_hlo_instr_attr(i, "frontend_attributes");
  const char *text = NULL;
  ts_sdy_meshes_t *meshes = NULL;
  if (!fa || ts_sharding_frontend_attr(it->arena, fa->v.s, key, &text) != TS_OK || !text)
    return fail(it, i, TS_ERR_INVALID_ARGUMENT, "no %s frontend attribute", key);
  if (ts_sharding_sdy_module_meshes(it->arena, it->m, &meshes) != TS_OK ||
      ts_sharding_from_sdy(it->arena, meshes, text, n, full, sv) != TS_OK)
    return fail(it, i, TS_ERR_INVALID_ARGUMENT, "cannot read %s=\"%s\"", key, text);
  return TS_OK;
}

static const ts_sharding_value_t *sharding_leaf(const ts_sharding_value_t *sv, int k) {
  return sv->kind == TS_SHARD_TUPLE ? sv->tuple[k] : sv;
}

/* ---- subgroup-manual regions ---------------------------------------------
 * A region whose sharding has a manual subgroup (`last_tile_dims={manual}`)
 * gives each manual group its own copy of the region's value, tiled over the
 * group's devices by the data dims of that sharding. XLA's partitioner
 * passes shards through the boundary unchanged (SPMDFullToShardShape's
 * result is its operand's shard), so the copy is defined by the shards: the
 * group's copy holds, at each member's tile of the region sharding, that
 * member's shard of the full value under the operand's sharding. Which part
 * of the full value a group sees therefore follows the tile assignments (it
 * need not be one contiguous block: a group may own interleaved tiles). */

static bool manual_subgroup_dim(const ts_sharding_value_t *s, int *dim) {
  if (!s || s->kind != TS_SHARD_TILED) return false;
  for (int k = 0; k < s->nsubgroups; k++)
    if (s->subgroups[k] == TS_SUBGROUP_MANUAL) {
      *dim = s->data_rank + k;
      return true;
    }
  return false;
}

/* The per-device (padded) shard shape of `full` under s, in the arena. */
static const ts_shape_t *shard_shape_of(ts_interp_t *it, const ts_sharding_value_t *s, const ts_shape_t *full) {
  ts_shape_t *sh = ts_arena_alloc(it->arena, sizeof *sh);
  int64_t *dims = ts_arena_alloc(it->arena, sizeof *dims * (size_t)(full->rank + 1));
  if (!sh || !dims) return NULL;
  *sh = (ts_shape_t){.elem = full->elem, .rank = full->rank, .dims = dims};
  if (s->kind != TS_SHARD_TILED) {
    memcpy(dims, full->dims, sizeof *dims * (size_t)full->rank);
    return sh;
  }
  return ts_sharding_shard_dims(s, full, dims) == TS_OK ? sh : NULL;
}

/* The device with q's data tile and p's manual group under s (manual
 * subgroup dim md); -1 when either is not in s. */
static int64_t group_partner(const ts_sharding_value_t *s, int md, int64_t q, int64_t p) {
  int64_t iq[TS_MAX_RANK + 8], ip[TS_MAX_RANK + 8], dev;
  if (s->ndims > TS_MAX_RANK + 8 || ts_sharding_tile_index(s, q, iq) != TS_OK ||
      ts_sharding_tile_index(s, p, ip) != TS_OK)
    return -1;
  iq[md] = ip[md];
  return ts_sharding_tile_device(s, iq, &dev) == TS_OK ? dev : -1;
}

/* Entering: device d's value is its manual group's copy of the region
 * (shape `region`, sharding rs), built from the members' shards of their
 * full values (sharding os). Devices of one group share one value. */
static ts_status_t enter_subgroup_manual(ts_interp_t *it, const ts_hlo_instr_t *i, const ts_sharding_value_t *os,
                                         const ts_sharding_value_t *rs, int md, int ndev, ts_value_t *const *full,
                                         ts_value_t **res) {
  int64_t P = it->partitions;
  const ts_shape_t *fs = i->ops[0]->shape, *ss = shard_shape_of(it, os, fs);
  if (!ss) return TS_ERR_NOMEM;
  if (os->kind != TS_SHARD_TILED || ts_sharding_num_devices(os) != P || ts_sharding_num_devices(rs) != P)
    return fail(it, i, TS_ERR_INVALID_ARGUMENT,
                "entering a subgroup-manual region needs the operand and the region tiled over the %lld partitions "
                "that run (they span %lld and %lld)",
                (long long)P, (long long)ts_sharding_num_devices(os), (long long)ts_sharding_num_devices(rs));
  ts_value_t **shards = ts_calloc((size_t)(2 * P), sizeof *shards), **view = shards + P;
  int64_t *first = ts_calloc((size_t)P, sizeof *first); /* per manual group index: its first device, +1 */
  ts_status_t st = TS_OK;
  if (!shards || !first) st = TS_ERR_NOMEM;
  for (int base = 0; st == TS_OK && base < ndev; base += (int)P) {
    for (int64_t p = 0; p < P; p++) first[p] = 0;
    for (int64_t p = 0; st == TS_OK && p < P; p++) {
      st = ts_interp_shard_value(full[base + p], os, p, ss, &shards[p]);
      if (st != TS_OK) st = fail(it, i, st, "cannot cut partition %lld's shard of the operand", (long long)p);
    }
    for (int64_t p = 0; st == TS_OK && p < P; p++) {
      int64_t ip[TS_MAX_RANK + 8];
      if (rs->ndims > TS_MAX_RANK + 8 || ts_sharding_tile_index(rs, p, ip) != TS_OK) {
        st = fail(it, i, TS_ERR_INVALID_ARGUMENT, "partition %lld is not in the region's sharding", (long long)p);
        break;
      }
      int64_t g = ip[md];
      if (first[g] > 0) {
        res[base + p] = ts_value_ref(res[base + first[g] - 1]);
        continue;
      }
      first[g] = p + 1;
      for (int64_t q = 0; q < P; q++) {
        int64_t e = group_partner(rs, md, q, p);
        view[q] = e >= 0 ? shards[e] : NULL;
        if (e < 0) st = TS_ERR_INVALID_ARGUMENT;
      }
      if (st == TS_OK) st = ts_interp_unshard_values(view, (int)P, rs, i->shape, &res[base + p]);
      if (st != TS_OK)
        st = fail(it, i, st, "the operand's shards do not fit manual group %lld's tiles of the region",
                  (long long)g);
    }
    for (int64_t p = 0; p < P; p++) {
      ts_value_unref(shards[p]);
      shards[p] = NULL;
    }
  }
  ts_free(shards);
  ts_free(first);
  return st;
}

/* Leaving: each device's shard of its group's copy (sharding rs) is its
 * shard of the full value (sharding fs_sv); the shards assemble it. */
static ts_status_t leave_subgroup_manual(ts_interp_t *it, const ts_hlo_instr_t *i, const ts_sharding_value_t *rs,
                                         const ts_sharding_value_t *fs_sv, int ndev, ts_value_t *const *local,
                                         ts_value_t **res) {
  int64_t P = it->partitions;
  const ts_shape_t *ss = shard_shape_of(it, rs, i->ops[0]->shape);
  if (!ss) return TS_ERR_NOMEM;
  if (ts_sharding_num_devices(rs) != P)
    return fail(it, i, TS_ERR_INVALID_ARGUMENT, "the region's sharding spans %lld devices, but %lld partitions run",
                (long long)ts_sharding_num_devices(rs), (long long)P);
  ts_value_t **shards = ts_calloc((size_t)P, sizeof *shards);
  if (!shards) return TS_ERR_NOMEM;
  ts_status_t st = TS_OK;
  for (int base = 0; st == TS_OK && base < ndev; base += (int)P) {
    for (int64_t p = 0; st == TS_OK && p < P; p++) {
      st = ts_interp_shard_value(local[base + p], rs, p, ss, &shards[p]);
      if (st != TS_OK) st = fail(it, i, st, "cannot cut partition %lld's shard of the region's value", (long long)p);
    }
    ts_value_t *v = NULL;
    if (st == TS_OK && (st = ts_interp_unshard_values(shards, (int)P, fs_sv, i->shape, &v)) != TS_OK)
      st = fail(it, i, st, "the region's shards do not assemble the full value");
    for (int64_t p = 0; p < P; p++) {
      ts_value_unref(shards[p]);
      shards[p] = NULL;
      if (v) res[base + p] = ts_value_ref(v);
    }
    ts_value_unref(v);
  }
  ts_free(shards);
  return st;
}

/* Enters a manual region: operand k's full value becomes every device's
 * shard (result leaf k). GSPMD's SPMDFullToShardShape takes the sharding
 * of its operand; Shardy's GlobalToLocalShape lists them. */
static ts_status_t enter_region(ts_interp_t *it, const ts_hlo_instr_t *i, bool sdy, int ndev, ts_value_t **vals,
                                const int *opos, ts_value_t **res) {
  int n = i->nops;
  const ts_shape_t *full[256];
  ts_sharding_value_t *sv;
  if (n > 256) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "more than 256 operands");
  for (int k = 0; k < n; k++) full[k] = i->ops[k]->shape;
  if (sdy) TS_CHECK(sdy_region_shardings(it, i, "xla.sdy.in_shardings", n, full, &sv));
  else if (n != 1) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "SPMDFullToShardShape takes one operand");
  else TS_CHECK(region_sharding(it, i, i->ops[0], full[0], &sv));
  if (!sdy && i->sharding && ts_shape_is_array(i->shape)) {
    ts_sharding_value_t *rs;
    int md;
    if (ts_sharding_from_syntax(it->arena, i->sharding, i->shape, &rs) == TS_OK && manual_subgroup_dim(rs, &md))
      return enter_subgroup_manual(it, i, sv, rs, md, ndev, &vals[opos[0] * ndev], res);
  }
  for (int d = 0; d < ndev; d++) {
    ts_value_t *el[256];
    for (int k = 0; k < n; k++) {
      const ts_shape_t *ls = i->shape->elem == TS_TUPLE ? i->shape->tuple[k] : i->shape;
      ts_status_t st = ts_interp_shard_value(vals[opos[k] * ndev + d], sharding_leaf(sv, k), d % it->partitions, ls,
                                             &el[k]);
      if (st != TS_OK) {
        for (int j = 0; j < k; j++) ts_value_unref(el[j]);
        return fail(it, i, st, "cannot cut operand %d into device %d's shard", k, d);
      }
    }
    res[d] = i->shape->elem == TS_TUPLE ? ts_value_new_tuple(i->shape, el) : el[0];
    if (!res[d]) return TS_ERR_NOMEM;
  }
  return TS_OK;
}

/* Leaves a manual region: the devices' shards assemble the full value. */
static ts_status_t leave_region(ts_interp_t *it, const ts_hlo_instr_t *i, bool sdy, int ndev, ts_value_t **vals,
                                const int *opos, ts_value_t **res) {
  int n = i->shape->elem == TS_TUPLE ? i->shape->ntuple : 1;
  const ts_shape_t *full[256];
  ts_sharding_value_t *sv;
  if (n > 256 || n != i->nops) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "one result per operand expected");
  for (int k = 0; k < n; k++) full[k] = i->shape->elem == TS_TUPLE ? i->shape->tuple[k] : i->shape;
  if (sdy) TS_CHECK(sdy_region_shardings(it, i, "xla.sdy.out_shardings", n, full, &sv));
  else TS_CHECK(region_sharding(it, i, i, i->shape, &sv));
  const ts_hlo_instr_t *o = i->ops[0];
  if (!sdy && o->sharding && ts_shape_is_array(o->shape) && ts_shape_is_array(i->shape)) {
    ts_sharding_value_t *rs;
    int md;
    if (ts_sharding_from_syntax(it->arena, o->sharding, o->shape, &rs) == TS_OK && manual_subgroup_dim(rs, &md))
      return leave_subgroup_manual(it, i, rs, sv, ndev, &vals[opos[0] * ndev], res);
  }
  /* One partition's shards per tile (replica 0 when there are several). */
  int np = (int)it->partitions;
  ts_value_t *el[256];
  for (int k = 0; k < n; k++) {
    ts_status_t st = ts_interp_unshard_values(&vals[opos[k] * ndev], np, sharding_leaf(sv, k), full[k], &el[k]);
    if (st != TS_OK) {
      for (int j = 0; j < k; j++) ts_value_unref(el[j]);
      return fail(it, i, st, "cannot assemble result %d from the devices' shards", k);
    }
  }
  ts_value_t *v = i->shape->elem == TS_TUPLE ? ts_value_new_tuple(i->shape, el) : el[0];
  if (!v) return TS_ERR_NOMEM;
  res[0] = v;
  for (int d = 1; d < ndev; d++) res[d] = ts_value_ref(v);
  return TS_OK;
}

/* ---- evaluation --------------------------------------------------------- */

static ts_status_t eval_comp(ts_interp_t *it, const ts_hlo_comp_t *c, int ndev, ts_value_t **args,
                             ts_value_t **outs);

static ts_status_t run_kernel(ts_interp_t *it, const ts_hlo_instr_t *i, ts_value_t **ops, int d,
                              ts_value_t **out) {
  ts_kernel_fn fn = ts_kernel_for(ts_hlo_custom_call_kind(i) == TS_CC_TOPK ? TS_OP_TOPK : i->op);
  if (!fn)
    return fail(it, i, TS_ERR_INVALID_ARGUMENT, "opcode %s is not supported by the reference interpreter",
                ts_opcode_name(i->op));
  ts_array_t in[64], res[64];
  if (i->nops > 64) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "more than 64 operands");
  for (int o = 0; o < i->nops; o++) {
    if (ops[o]->tuple) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "operand %d is a tuple", o);
    in[o] = ops[o]->a;
  }
  ts_value_t *v = ts_value_new_uninit(i->shape);
  if (!v) return TS_ERR_NOMEM;
  int nout = ts_value_leaves(v, res, 64);
  ts_kernel_ctx_t *ctx = &it->ctx[it->depth];
  ctx->partition_id = d % it->partitions;
  ctx->replica_id = d / it->partitions;
  ts_status_t st = nout > 64 ? fail(it, i, TS_ERR_INVALID_ARGUMENT, "more than 64 results")
                             : fn(ctx, i, in, i->nops, res, nout);
  if (st != TS_OK) {
    ts_value_unref(v);
    return st;
  }
  *out = v;
  return TS_OK;
}

static ts_status_t scalar_pred(ts_interp_t *it, const ts_hlo_instr_t *i, ts_value_t *v, int64_t *out) {
  if (v->tuple || v->a.rank != 0) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "expected a scalar");
  *out = ts_load_i(v->a.elem, v->a.data, 0);
  return TS_OK;
}

static ts_status_t eval_while(ts_interp_t *it, const ts_hlo_instr_t *i, int ndev, ts_value_t **state_in,
                              ts_value_t **outs) {
  const ts_hlo_attr_t *ca = ts_hlo_instr_attr(i, "condition"), *ba = ts_hlo_instr_attr(i, "body");
  if (!ca || !ba) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "while without condition or body");
  const ts_hlo_comp_t *cond = ca->v.comps.comps[0], *body = ba->v.comps.comps[0];
  ts_value_t *state[1024], *pred[1024];
  if (ndev > 1024) return TS_ERR_INVALID_ARGUMENT;
  for (int d = 0; d < ndev; d++) state[d] = ts_value_ref(state_in[d]);
  ts_status_t st = TS_OK;
  for (;;) {
    st = eval_comp(it, cond, ndev, state, pred);
    if (st != TS_OK) break;
    int64_t go0 = 0, go = 0;
    for (int d = 0; d < ndev && st == TS_OK; d++) {
      st = scalar_pred(it, i, pred[d], &go);
      if (d == 0) go0 = go;
      else if (st == TS_OK && (go != 0) != (go0 != 0))
        st = fail(it, i, TS_ERR_INVALID_ARGUMENT, "devices disagree on the loop condition (device 0: %s, device %d: %s)",
                  go0 ? "true" : "false", d, go ? "true" : "false");
    }
    for (int d = 0; d < ndev; d++) ts_value_unref(pred[d]);
    if (st != TS_OK || !go0) break;
    ts_value_t *next[1024];
    st = eval_comp(it, body, ndev, state, next);
    for (int d = 0; d < ndev; d++) ts_value_unref(state[d]);
    if (st != TS_OK) return st;
    for (int d = 0; d < ndev; d++) state[d] = next[d];
  }
  if (st != TS_OK) {
    for (int d = 0; d < ndev; d++) ts_value_unref(state[d]);
    return st;
  }
  for (int d = 0; d < ndev; d++) outs[d] = state[d];
  return TS_OK;
}

static ts_status_t eval_conditional(ts_interp_t *it, const ts_hlo_instr_t *i, int ndev, ts_value_t **vals,
                                    const int *opos, ts_value_t **outs) {
  /* branch_computations={...} with an s32 index, or true/false computations
   * with a pred; out-of-range indices take the last branch. */
  const ts_hlo_comp_t *branches[256];
  int nb = 0;
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "branch_computations");
  if (a) {
    for (int k = 0; k < a->v.comps.n && nb < 256; k++) branches[nb++] = a->v.comps.comps[k];
  } else {
    const ts_hlo_attr_t *t = ts_hlo_instr_attr(i, "true_computation"), *f = ts_hlo_instr_attr(i, "false_computation");
    if (!t || !f) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "conditional without branches");
    branches[nb++] = t->v.comps.comps[0]; /* pred true -> branch 0 */
    branches[nb++] = f->v.comps.comps[0];
  }
  bool is_pred = i->ops[0]->shape->elem == TS_PRED;
  int choice[1024] = {0};
  if (ndev > 1024) return TS_ERR_INVALID_ARGUMENT;
  bool same = true;
  for (int d = 0; d < ndev; d++) {
    int64_t x = 0;
    TS_CHECK(scalar_pred(it, i, vals[opos[0] * ndev + d], &x));
    if (is_pred) choice[d] = x ? 0 : 1;
    else choice[d] = x < 0 || x >= nb ? nb - 1 : (int)x;
    if (choice[d] != choice[0]) same = false;
  }
  /* Branch b takes operand b + 1. */
  if (same) {
    const ts_hlo_comp_t *br = branches[choice[0]];
    ts_value_t **args = &vals[opos[1 + choice[0]] * ndev];
    return eval_comp(it, br, ndev, args, outs);
  }
  for (int d = 0; d < ndev; d++) {
    ts_value_t *arg = vals[opos[1 + choice[d]] * ndev + d];
    ts_status_t st = eval_comp(it, branches[choice[d]], 1, &arg, &outs[d]);
    if (st != TS_OK) {
      for (int e = 0; e < d; e++) ts_value_unref(outs[e]);
      return st;
    }
  }
  return TS_OK;
}

/* Evaluates instruction i for every device; vals is the frame, opos the
 * frame positions of i's operands. */
static ts_status_t eval_instr(ts_interp_t *it, const ts_hlo_instr_t *i, int ndev, ts_value_t **vals,
                              const int *opos, ts_value_t **args, ts_value_t **res) {
  int nops = i->nops;
  ts_opcode_t op = meaning(i);
  /* Whether every operand is one shared value. */
  bool shared = true;
  for (int o = 0; o < nops && shared; o++)
    for (int d = 1; d < ndev; d++)
      if (vals[opos[o] * ndev + d] != vals[opos[o] * ndev]) {
        shared = false;
        break;
      }
  switch (i->op) {
  case TS_OP_PARAMETER:
    for (int d = 0; d < ndev; d++) res[d] = ts_value_ref(args[i->param_number * ndev + d]);
    return TS_OK;
  case TS_OP_CONSTANT:
    for (int d = 0; d < ndev; d++) res[d] = ts_value_ref(it->constants[i->id]);
    return TS_OK;
  case TS_OP_TUPLE:
    for (int d = 0; d < ndev; d++) {
      ts_value_t *el[1024];
      if (nops > 1024) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "tuple of more than 1024 elements");
      for (int o = 0; o < nops; o++) el[o] = ts_value_ref(vals[opos[o] * ndev + d]);
      if (shared && d > 0) {
        for (int o = 0; o < nops; o++) ts_value_unref(el[o]);
        res[d] = ts_value_ref(res[0]);
        continue;
      }
      if (!(res[d] = ts_value_new_tuple(i->shape, el))) return TS_ERR_NOMEM;
    }
    return TS_OK;
  case TS_OP_GET_TUPLE_ELEMENT: {
    const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "index");
    int64_t k = a ? a->v.i : 0;
    for (int d = 0; d < ndev; d++) {
      ts_value_t *t = vals[opos[0] * ndev + d];
      if (!t->tuple || k < 0 || k >= t->ntuple) return fail(it, i, TS_ERR_INTERNAL, "bad tuple index");
      res[d] = ts_value_ref(t->tuple[k]);
    }
    return TS_OK;
  }
  case TS_OP_PARTITION_ID:
  case TS_OP_REPLICA_ID:
    for (int d = 0; d < ndev; d++) {
      if (!(res[d] = ts_value_new(i->shape))) return TS_ERR_NOMEM;
      ts_store_i(res[d]->a.elem, res[d]->a.data, 0, i->op == TS_OP_PARTITION_ID ? d % it->partitions : d / it->partitions);
    }
    return TS_OK;
  case TS_OP_AFTER_ALL:
    for (int d = 0; d < ndev; d++)
      if (!(res[d] = ts_value_new(i->shape))) return TS_ERR_NOMEM;
    return TS_OK;
  case TS_OP_COPY:
    /* A tuple is copied leaf by leaf; values are never written in place,
     * so every leaf's copy is the leaf itself. Arrays take the kernel. */
    if (i->shape->elem != TS_TUPLE) break;
    /* fall through */
  case TS_OP_ADD_DEPENDENCY: case TS_OP_OPT_BARRIER: case TS_OP_DOMAIN:
  case TS_OP_ALL_REDUCE_DONE: case TS_OP_ASYNC_UPDATE:
    for (int d = 0; d < ndev; d++) res[d] = ts_value_ref(vals[opos[0] * ndev + d]);
    return TS_OK;
  case TS_OP_ALL_GATHER_DONE: case TS_OP_COLLECTIVE_PERMUTE_DONE: case TS_OP_ASYNC_DONE:
  case TS_OP_COPY_DONE:
    /* The result is element 1 of the start's tuple; copy-start's is
     * (destination, source, context). */
    for (int d = 0; d < ndev; d++) {
      ts_value_t *t = vals[opos[0] * ndev + d];
      if (!t->tuple || t->ntuple < 2) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "operand is not an async tuple");
      res[d] = ts_value_ref(t->tuple[i->op == TS_OP_COPY_DONE ? 0 : 1]);
    }
    return TS_OK;
  case TS_OP_COPY_START:
    for (int d = 0; d < ndev; d++) {
      ts_value_t *v = ts_value_new(i->shape), *src = vals[opos[0] * ndev + d];
      if (!v) return TS_ERR_NOMEM;
      if (v->tuple && v->ntuple >= 2 && !src->tuple) {
        memcpy(v->tuple[0]->a.data, src->a.data, ts_array_bytes(&src->a));
        memcpy(v->tuple[1]->a.data, src->a.data, ts_array_bytes(&src->a));
      }
      res[d] = v;
    }
    return TS_OK;
  case TS_OP_CALL:
  case TS_OP_FUSION:
  case TS_OP_ASYNC_START:
  case TS_OP_WHILE:
  case TS_OP_CONDITIONAL: {
    if (i->op == TS_OP_ASYNC_START && i->async_wrapped != TS_OP_COUNT) break; /* sugar: below */
    /* Callee args in [param * n + d] order; a callee that does not depend
     * on the device runs once when its operands are shared. */
    const ts_hlo_comp_t *callee = i->ncalled ? i->called[0] : NULL;
    plan_t *cp = callee ? plan_of(it, callee) : NULL;
    bool once = shared && ndev > 1 && cp && !cp->device_dependent;
    if (i->op == TS_OP_CONDITIONAL) {
      for (int k = 0; k < i->ncalled && once; k++) {
        plan_t *q = plan_of(it, i->called[k]);
        if (!q || q->device_dependent) once = false;
      }
    }
    int n = once ? 1 : ndev;
    ts_status_t st;
    if (i->op == TS_OP_WHILE) {
      ts_value_t *st_in[1024];
      if (n > 1024) return TS_ERR_INVALID_ARGUMENT;
      for (int d = 0; d < n; d++) st_in[d] = vals[opos[0] * ndev + d];
      st = eval_while(it, i, n, st_in, res);
    } else if (i->op == TS_OP_CONDITIONAL) {
      if (once) {
        /* Build a one-device view of the frame entries it reads. */
        ts_value_t *v1[256];
        int p1[256];
        if (nops > 256) return TS_ERR_INVALID_ARGUMENT;
        for (int o = 0; o < nops; o++) {
          v1[o] = vals[opos[o] * ndev];
          p1[o] = o;
        }
        st = eval_conditional(it, i, 1, v1, p1, res);
      } else {
        st = eval_conditional(it, i, ndev, vals, opos, res);
      }
    } else {
      if (!callee) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "no called computation");
      ts_value_t **cargs = ts_calloc((size_t)(nops * n) + 1, sizeof *cargs);
      if (!cargs) return TS_ERR_NOMEM;
      for (int o = 0; o < nops; o++)
        for (int d = 0; d < n; d++) cargs[o * n + d] = vals[opos[o] * ndev + d];
      if (i->op == TS_OP_ASYNC_START) {
        ts_value_t *r[1024];
        st = eval_comp(it, callee, n, cargs, r);
        for (int d = 0; d < n && st == TS_OK; d++) {
          ts_value_t *w = ts_value_new(i->shape);
          if (!w || !w->tuple || w->ntuple < 2) {
            ts_value_unref(w);
            st = w ? fail(it, i, TS_ERR_INVALID_ARGUMENT, "async-start shape is not ((operands), result, ...)")
                   : TS_ERR_NOMEM;
            for (int e = d; e < n; e++) ts_value_unref(r[e]);
            for (int e = 0; e < d; e++) ts_value_unref(res[e]);
            break;
          }
          ts_value_unref(w->tuple[1]);
          w->tuple[1] = r[d];
          res[d] = w;
        }
      } else {
        st = eval_comp(it, callee, n, cargs, res);
      }
      ts_free(cargs);
    }
    if (st != TS_OK) return st;
    for (int d = n; d < ndev; d++) res[d] = ts_value_ref(res[0]);
    return TS_OK;
  }
  case TS_OP_CUSTOM_CALL: {
    const char *target = ts_hlo_custom_call_target(i);
    ts_custom_call_kind_t kind = ts_hlo_custom_call_kind(i);
    switch (kind) {
    case TS_CC_SHARDING: case TS_CC_IDENTITY:
      if (nops != 1) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "%s takes one operand", target);
      for (int d = 0; d < ndev; d++) res[d] = ts_value_ref(vals[opos[0] * ndev + d]);
      return TS_OK;
    case TS_CC_REGION_ENTER: case TS_CC_REGION_EXIT: {
      bool sdy = strncmp(target, "xla.sdy.", 8) == 0;
      ts_status_t st = kind == TS_CC_REGION_ENTER ? enter_region(it, i, sdy, ndev, vals, opos, res)
                                                  : leave_region(it, i, sdy, ndev, vals, opos, res);
      if (st != TS_OK)
        for (int d = 0; d < ndev; d++) {
          ts_value_unref(res[d]);
          res[d] = NULL;
        }
      return st;
    }
    case TS_CC_TOPK: break; /* the topk kernel, below */
    case TS_CC_DEVICE_LIBRARY:
      return fail(it, i, TS_ERR_UNSUPPORTED, "custom-call target \"%s\" calls a GPU/vendor library: it cannot run here",
                  target);
    case TS_CC_UNKNOWN:
      return fail(it, i, TS_ERR_INVALID_ARGUMENT,
                  "custom-call target \"%s\" has no meaning in the reference interpreter", target);
    }
    break;
  }
  default: break;
  }
  if (is_collective(op)) {
    ts_value_t **in = ts_calloc((size_t)(ndev * nops) + 1, sizeof *in);
    if (!in) return TS_ERR_NOMEM;
    for (int d = 0; d < ndev; d++)
      for (int o = 0; o < nops; o++) in[d * nops + o] = vals[opos[o] * ndev + d];
    ts_status_t st = TS_OK;
    int d = 0;
    for (; d < ndev && st == TS_OK; d++) st = run_collective(it, i, in, d, &res[d]);
    ts_free(in);
    if (st != TS_OK) {
      for (int e = 0; e < d - 1; e++) ts_value_unref(res[e]);
      return st;
    }
    return TS_OK;
  }
  if (i->op == TS_OP_ASYNC_START)
    return fail(it, i, TS_ERR_INVALID_ARGUMENT, "async %s is not supported by the reference interpreter",
                ts_opcode_name(op));
  /* An array kernel, once when its inputs are shared. */
  int n = shared ? 1 : ndev;
  for (int d = 0; d < n; d++) {
    ts_value_t *ops[64];
    if (nops > 64) return fail(it, i, TS_ERR_INVALID_ARGUMENT, "more than 64 operands");
    for (int o = 0; o < nops; o++) ops[o] = vals[opos[o] * ndev + d];
    ts_status_t st = run_kernel(it, i, ops, d, &res[d]);
    if (st != TS_OK) {
      for (int e = 0; e < d; e++) ts_value_unref(res[e]);
      return st;
    }
  }
  for (int d = n; d < ndev; d++) res[d] = ts_value_ref(res[0]);
  return TS_OK;
}

/* The index of the first non-finite element of a floating-point value's
 * leaves, or -1. */
static int64_t first_nonfinite(ts_value_t *v) {
  ts_array_t leaves[64];
  int n = ts_value_leaves(v, leaves, 64);
  for (int k = 0; k < n && k < 64; k++) {
    if (!ts_elem_is_float(leaves[k].elem) && !ts_elem_is_complex(leaves[k].elem)) continue;
    int64_t cnt = ts_array_count(&leaves[k]);
    for (int64_t j = 0; j < cnt; j++) {
      double re, im;
      ts_load_c(leaves[k].elem, leaves[k].data, j, &re, &im);
      if (!isfinite(re) || !isfinite(im)) return j;
    }
  }
  return -1;
}

static ts_status_t check_finite(ts_interp_t *it, const ts_hlo_instr_t *i, ts_value_t **vals, const int *opos,
                                int ndev, ts_value_t **res) {
  for (int d = 0; d < ndev; d++) {
    int64_t bad = first_nonfinite(res[d]);
    if (bad < 0) continue;
    for (int o = 0; o < i->nops; o++)
      if (first_nonfinite(vals[opos[o] * ndev + d]) >= 0) return TS_OK; /* inherited */
    return fail(it, i, TS_ERR_CHECK_FAILED, "element %lld of the result is not finite on device %d, "
                "though every operand is (--trap-nonfinite)", (long long)bad, d);
  }
  return TS_OK;
}

static ts_status_t eval_comp(ts_interp_t *it, const ts_hlo_comp_t *c, int ndev, ts_value_t **args,
                             ts_value_t **outs) {
  plan_t *p = plan_of(it, c);
  if (!p) return TS_ERR_INTERNAL;
  size_t nv = (size_t)p->n * (size_t)ndev;
  ts_value_t **vals = ts_calloc(nv + 1, sizeof *vals);
  int *uses = ts_calloc((size_t)p->n + 1, sizeof *uses);
  ts_status_t st = TS_OK;
  if (!vals || !uses) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  memcpy(uses, p->nuses, (size_t)p->n * sizeof *uses);
  for (int k = 0; k < p->n && st == TS_OK; k++) {
    const ts_hlo_instr_t *i = p->order[k];
    int opos[1024];
    if (i->nops > 1024) {
      st = fail(it, i, TS_ERR_INVALID_ARGUMENT, "more than 1024 operands");
      break;
    }
    for (int o = 0; o < i->nops; o++) opos[o] = it->local[i->ops[o]->id];
    st = eval_instr(it, i, ndev, vals, opos, args, &vals[(size_t)k * ndev]);
    if (st == TS_OK && it->trap_nonfinite && i->op != TS_OP_PARAMETER && i->op != TS_OP_CONSTANT)
      st = check_finite(it, i, vals, opos, ndev, &vals[(size_t)k * ndev]);
    if (st != TS_OK) break;
    /* Drop operands at their last use. */
    for (int o = 0; o < i->nops; o++) {
      int q = opos[o];
      if (--uses[q] == 0)
        for (int d = 0; d < ndev; d++) {
          ts_value_unref(vals[(size_t)q * ndev + d]);
          vals[(size_t)q * ndev + d] = NULL;
        }
    }
    /* Values nobody uses die now (side-effect-free leftovers). */
    if (uses[k] == 0)
      for (int d = 0; d < ndev; d++) {
        ts_value_unref(vals[(size_t)k * ndev + d]);
        vals[(size_t)k * ndev + d] = NULL;
      }
  }
  if (st == TS_OK)
    for (int d = 0; d < ndev; d++) outs[d] = ts_value_ref(vals[(size_t)p->root * ndev + d]);
done:
  if (vals)
    for (size_t k = 0; k < nv; k++) ts_value_unref(vals[k]);
  ts_free(vals);
  ts_free(uses);
  return st;
}

/* ctx->apply: a called computation on arrays, for one device. */
static ts_status_t apply(ts_kernel_ctx_t *ctx, const ts_hlo_comp_t *comp, const ts_array_t *args, int nargs,
                         ts_array_t *outs, int nouts) {
  ts_interp_t *it = ctx->apply_state;
  if (it->depth + 1 >= MAX_DEPTH) return ts_kernel_fail(ctx, comp->root, TS_ERR_INVALID_ARGUMENT, "calls nested too deeply");
  if (nargs != comp->nparams)
    return ts_kernel_fail(ctx, comp->root, TS_ERR_INTERNAL, "%d arguments for %d parameters", nargs, comp->nparams);
  ts_value_t *av[64], *res = NULL;
  if (nargs > 64) return TS_ERR_INVALID_ARGUMENT;
  ts_status_t st = TS_OK;
  int made = 0;
  for (; made < nargs; made++) {
    const ts_shape_t *ps = comp->params[made]->shape;
    if (!(av[made] = ts_value_new(ps))) {
      st = TS_ERR_NOMEM;
      break;
    }
    if (av[made]->tuple) {
      made++;
      st = ts_kernel_fail(ctx, comp->root, TS_ERR_INVALID_ARGUMENT, "tuple parameter in an applied computation");
      break;
    }
    memcpy(av[made]->a.data, args[made].data, ts_array_bytes(&av[made]->a));
  }
  if (st == TS_OK) {
    it->depth++;
    it->ctx[it->depth].partition_id = ctx->partition_id;
    it->ctx[it->depth].replica_id = ctx->replica_id;
    /* A one-device frame: partition-id inside reads 0 (reducers and
     * comparators do not ask). */
    st = eval_comp(it, comp, 1, av, &res);
    it->depth--;
  }
  if (st == TS_OK) {
    ts_array_t leaves[64];
    int n = ts_value_leaves(res, leaves, 64);
    if (n != nouts) st = ts_kernel_fail(ctx, comp->root, TS_ERR_INTERNAL, "%d results, %d expected", n, nouts);
    for (int k = 0; k < n && st == TS_OK; k++) memcpy(outs[k].data, leaves[k].data, ts_array_bytes(&leaves[k]));
  }
  ts_value_unref(res);
  for (int k = 0; k < made; k++) ts_value_unref(av[k]);
  return st;
}

/* ---- setup -------------------------------------------------------------- */

/* The devices of an annotation that tiles with a manual subgroup
 * (`last_tile_dims={manual}`, in any tuple leaf); 0 when it has none. */
static int64_t manual_subgroup_devices(const ts_sharding_t *s) {
  if (!s) return 0;
  if (s->kind == TS_SHARD_TUPLE) {
    for (int k = 0; k < s->ntuple; k++) {
      int64_t n = manual_subgroup_devices(s->tuple[k]);
      if (n > 0) return n;
    }
    return 0;
  }
  if (s->kind != TS_SHARD_TILED) return 0;
  for (int k = 0; k < s->nsubgroups; k++)
    if (s->subgroups[k] == TS_SUBGROUP_MANUAL) return s->devices.n;
  return 0;
}

/* The partition count a manual region asks for, when the module has one.
 * A subgroup-manual value counts as a region: each manual group holds its
 * own copy of the value, so every device runs and holds its group's copy
 * (one argument set: the copies start equal), and a collective across
 * manual groups combines them as on the partitioned devices. */
static int64_t manual_partitions(const ts_hlo_module_t *m, ts_arena_t *a, bool *has_region) {
  *has_region = false;
  for (int k = 0; k < m->ncomps; k++)
    for (int j = 0; j < m->comps[k]->ninstrs; j++) {
      const ts_hlo_instr_t *i = m->comps[k]->instrs[j];
      ts_sharding_value_t *sv;
      int64_t sub = manual_subgroup_devices(i->sharding);
      if (sub > 0) {
        *has_region = true;
        return sub;
      }
      if (is_custom_call(i, "SPMDFullToShardShape")) {
        *has_region = true;
        if (i->ops[0]->sharding && ts_sharding_from_syntax(a, i->ops[0]->sharding, i->ops[0]->shape, &sv) == TS_OK)
          return ts_sharding_num_devices(sv);
      } else if (is_custom_call(i, "xla.sdy.GlobalToLocalShape")) {
        /* Every device of the module's (first) mesh. */
        ts_sdy_meshes_t *meshes = NULL;
        *has_region = true;
        if (ts_sharding_sdy_module_meshes(a, m, &meshes) == TS_OK && meshes && meshes->n > 0)
          return meshes->meshes[0].ndevices;
      }
    }
  return 0;
}

ts_status_t ts_interp_create(const ts_hlo_module_t *m, const ts_interp_opts_t *opts, ts_interp_t **out,
                             ts_diag_t *diag) {
  ts_interp_opts_t o = opts ? *opts : (ts_interp_opts_t){0};
  *out = NULL;
  if (!m->entry) {
    ts_diag_plain(diag, "module %s has no entry computation", m->name);
    return TS_ERR_INVALID_ARGUMENT;
  }
  ts_interp_t *it = ts_calloc(1, sizeof *it);
  if (!it) return TS_ERR_NOMEM;
  it->m = m;
  it->diag = diag;
  it->trap_nonfinite = o.trap_nonfinite;
  it->arena = ts_arena_create();
  it->plans = ts_calloc((size_t)m->ncomps + 1, sizeof *it->plans);
  it->local = ts_calloc((size_t)m->next_id + 1, sizeof *it->local);
  it->constants = ts_calloc((size_t)m->next_id + 1, sizeof *it->constants);
  ts_status_t st = TS_OK;
  if (!it->arena || !it->plans || !it->local || !it->constants) {
    st = TS_ERR_NOMEM;
    goto fail;
  }
  for (int k = 0; k < MAX_DEPTH; k++) {
    it->ctx[k].apply = apply;
    it->ctx[k].apply_state = it;
    it->ctx[k].diag = diag;
    it->ctx[k].source = m->source.text ? &m->source : NULL;
  }
  /* Devices: a partitioned run names them; the reference meaning is one
   * device, or one per partition when a manual region needs them. */
  if (o.ndevices > 0) {
    it->ndev = o.ndevices;
    it->replicas = o.replica_count > 0 ? o.replica_count : m->replica_count > 0 ? m->replica_count : 1;
    if (it->ndev % it->replicas != 0) {
      ts_diag_plain(diag, "%d devices cannot hold %lld replicas", it->ndev, (long long)it->replicas);
      st = TS_ERR_INVALID_ARGUMENT;
      goto fail;
    }
    it->partitions = it->ndev / it->replicas;
  } else {
    bool region;
    int64_t P = manual_partitions(m, it->arena, &region);
    if (region) {
      if (o.num_partitions > 0) P = o.num_partitions;
      else if (m->num_partitions > 1) P = m->num_partitions;
      if (P < 1) {
        ts_diag_plain(diag, "the module has a manual region but its partition count is unknown; pass --num-partitions N");
        st = TS_ERR_INVALID_ARGUMENT;
        goto fail;
      }
    } else {
      P = 1;
    }
    it->reference = true;
    it->replicas = 1;
    it->partitions = P;
    it->ndev = (int)P;
  }
  if (it->ndev > 1024) {
    ts_diag_plain(diag, "%d devices: the interpreter simulates at most 1024", it->ndev);
    st = TS_ERR_INVALID_ARGUMENT;
    goto fail;
  }
  for (int k = 0; k < m->ncomps && st == TS_OK; k++) st = build_plan(it, m->comps[k], &it->plans[k]);
  if (st != TS_OK) goto fail;
  mark_dependent(it);
  for (int k = 0; k < m->ncomps; k++)
    for (int j = 0; j < m->comps[k]->ninstrs; j++) {
      const ts_hlo_instr_t *i = m->comps[k]->instrs[j];
      if (i->op != TS_OP_CONSTANT) continue;
      if (!i->literal) {
        st = ts_kernel_fail(&it->ctx[0], i, TS_ERR_INVALID_ARGUMENT, "constant without a literal");
        goto fail;
      }
      if (i->literal->elided)
        TS_LOG_WARN("constant %%%s: the dump elided its data ({...}); it runs as zeros, so results "
                    "differ from the original program's", i->name);
      st = ts_value_from_literal(i->literal, &it->constants[i->id]);
      if (st != TS_OK) {
        st = ts_kernel_fail(&it->ctx[0], i, st, "cannot build the constant's value");
        goto fail;
      }
    }
  *out = it;
  return TS_OK;
fail:
  ts_interp_destroy(it);
  return st;
}

void ts_interp_destroy(ts_interp_t *it) {
  if (!it) return;
  if (it->plans)
    for (int k = 0; k < it->m->ncomps; k++) {
      ts_free(it->plans[k].order);
      ts_free(it->plans[k].nuses);
    }
  if (it->constants)
    for (int k = 0; k < it->m->next_id; k++) ts_value_unref(it->constants[k]);
  for (int k = 0; k < MAX_DEPTH; k++) ts_kernel_ctx_free(&it->ctx[k]);
  ts_free(it->plans);
  ts_free(it->local);
  ts_free(it->constants);
  ts_arena_destroy(it->arena);
  ts_free(it);
}

/* Same element type and dimensions, recursively; dynamic markers aside (a
 * bounded dynamic dimension runs at its bound). */
static bool same_shape(const ts_shape_t *a, const ts_shape_t *b) {
  if (a->elem != b->elem || a->rank != b->rank || a->ntuple != b->ntuple) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  for (int k = 0; k < a->ntuple; k++)
    if (!same_shape(a->tuple[k], b->tuple[k])) return false;
  return true;
}

int ts_interp_ndevices(const ts_interp_t *it) { return it->reference ? 1 : it->ndev; }

ts_status_t ts_interp_run(ts_interp_t *it, ts_value_t *const *args, ts_value_t **outs, ts_diag_t *diag) {
  const ts_hlo_comp_t *e = it->m->entry;
  int np = e->nparams, n = it->ndev;
  for (int k = 0; k < MAX_DEPTH; k++) it->ctx[k].diag = diag;
  it->diag = diag;
  it->depth = 0;
  ts_value_t **a = ts_calloc((size_t)(np * n) + 1, sizeof *a), **r = ts_calloc((size_t)n + 1, sizeof *r);
  if (!a || !r) {
    ts_free(a);
    ts_free(r);
    return TS_ERR_NOMEM;
  }
  ts_status_t st = TS_OK;
  for (int p = 0; p < np && st == TS_OK; p++)
    for (int d = 0; d < n; d++) {
      ts_value_t *v = args[(it->reference ? 0 : d) * np + p];
      if (!same_shape(v->shape, e->params[p]->shape)) {
        ts_buf_t want = {0}, got = {0};
        ts_shape_print(&want, e->params[p]->shape, false);
        ts_shape_print(&got, v->shape, false);
        ts_diag_plain(diag, "parameter %d (%%%s) is %s, but the argument is %s", p, e->params[p]->name,
                      want.data ? want.data : "?", got.data ? got.data : "?");
        ts_buf_free(&want);
        ts_buf_free(&got);
        st = TS_ERR_INVALID_ARGUMENT;
        break;
      }
      a[p * n + d] = v;
    }
  if (st == TS_OK) st = eval_comp(it, e, n, a, r);
  if (st == TS_OK) {
    if (it->reference) {
      outs[0] = r[0];
      for (int d = 1; d < n; d++) ts_value_unref(r[d]);
    } else {
      for (int d = 0; d < n; d++) outs[d] = r[d];
    }
  }
  ts_free(a);
  ts_free(r);
  return st;
}
