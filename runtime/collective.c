/* HLO collectives over ts_coll: group sets from replica_groups and XLA's
 * group modes (compile time), one sub-communicator per distinct set (device
 * create), and each collective posted and finished over it: blocks gathered
 * or scattered along any dimension (packed through scratch when the
 * dimension is not the outermost). Across slices, a sub-communicator whose
 * group splits into equal contiguous slice parts gets the library's slice
 * layout (ts_coll_comm_set_slices), so its all-reduce, all-gather and
 * reduce-scatter run two-level inside the library, one operation each: the
 * whole of it progresses between the -start and the -done.
 * TESSERA_CROSS_SLICE_DELAY_US emulates a slow link between slices (DCN):
 * a collective that crosses slices completes no earlier than its post time
 * plus the link's latency and transfer time (ts_runtime.h). */
#include "rt_internal.h"
#include "ts_env.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t rt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- group sets (compile time) ---------------------------------------------- */

static void groupset_free(rt_groupset_t *g) {
  if (g->members)
    for (int k = 0; k < g->ngroups; k++) ts_free(g->members[k]);
  ts_free(g->members);
  ts_free(g->group_of);
  ts_free(g->group_size);
}

/* Expands (mode, groups) into every device's group in global ids (the
 * reference interpreter's collective_group, for all devices at once). */
static ts_status_t groupset_build(const ts_rt_program_t *p, const ts_hlo_instr_t *i, ts_coll_group_mode_t mode,
                                  const ts_replica_groups_t *rg, ts_diag_t *diag, rt_groupset_t *out) {
  int64_t R = p->replicas, P = p->partitions, D = R * P;
  int64_t space = ts_coll_group_id_space(mode, R, P);
  memset(out, 0, sizeof *out);
  out->mode = mode;
  out->rg = rg && rg->ngroups > 0 ? rg : NULL;
  out->group_of = ts_calloc((size_t)D + 1, sizeof *out->group_of);
  int maxg = (int)(D + 1);
  out->group_size = ts_calloc((size_t)maxg, sizeof *out->group_size);
  out->members = ts_calloc((size_t)maxg, sizeof *out->members);
  if (!out->group_of || !out->group_size || !out->members) return TS_ERR_NOMEM;
  for (int64_t d = 0; d < D; d++) out->group_of[d] = -1;
  /* id groups in the mode's space */
  int nidg = out->rg ? out->rg->ngroups : 1;
  for (int gi = 0; gi < nidg; gi++) {
    const int64_t *ids = out->rg ? out->rg->groups[gi].v : NULL;
    int64_t nids = out->rg ? out->rg->groups[gi].n : space;
    for (int64_t k = 0; k < nids; k++) {
      int64_t id = ids ? ids[k] : k;
      if (id < 0 || id >= space)
        return rt_fail(p->m, i, diag, TS_ERR_INVALID_ARGUMENT,
                    "replica group names id %lld, but only %lld %s run (%lld replicas x %lld partitions)",
                    (long long)id, (long long)space, ts_coll_group_id_noun(mode), (long long)R, (long long)P);
    }
    /* One device group per (id group, the coordinate the mode keeps). */
    int64_t outer = mode == TS_COLL_CROSS_REPLICA ? P : mode == TS_COLL_CROSS_PARTITION ? R : 1;
    for (int64_t c = 0; c < outer; c++) {
      int64_t cnt = nids * ts_coll_group_devices_per_id(mode, P);
      int64_t *mem = ts_calloc((size_t)cnt + 1, sizeof *mem);
      if (!mem) return TS_ERR_NOMEM;
      /* a device with coordinate c: partition c (cross-replica), replica c (cross-partition) */
      int64_t dev = mode == TS_COLL_CROSS_REPLICA ? c : c * P;
      int n = (int)ts_coll_group_devices(mode, P, dev, ids, nids, mem);
      if (out->ngroups >= maxg) {
        ts_free(mem);
        return rt_fail(p->m, i, diag, TS_ERR_INVALID_ARGUMENT, "replica groups name a device twice");
      }
      int g = out->ngroups++;
      out->members[g] = mem;
      out->group_size[g] = n;
      for (int k = 0; k < n; k++) {
        if (out->group_of[mem[k]] >= 0)
          return rt_fail(p->m, i, diag, TS_ERR_INVALID_ARGUMENT, "replica groups name device %lld twice",
                      (long long)mem[k]);
        out->group_of[mem[k]] = g;
      }
    }
  }
  for (int64_t d = 0; d < D; d++)
    if (out->group_of[d] < 0)
      return rt_fail(p->m, i, diag, TS_ERR_INVALID_ARGUMENT, "no replica group contains device %lld (%lld replicas x %lld "
                  "partitions run)", (long long)d, (long long)R, (long long)P);
  return TS_OK;
}

static bool groupset_equal(const rt_groupset_t *a, const rt_groupset_t *b, int64_t D) {
  if (a->ngroups != b->ngroups) return false;
  for (int g = 0; g < a->ngroups; g++) {
    if (a->group_size[g] != b->group_size[g]) return false;
    if (memcmp(a->members[g], b->members[g], (size_t)a->group_size[g] * sizeof(int64_t)) != 0) return false;
  }
  (void)D;
  return true;
}

/* The reduction a to_apply computes: one binary op of its two parameters. */
static bool reducer_redop(const ts_hlo_comp_t *c, ts_elem_t t, ts_coll_redop_t *out) {
  const ts_hlo_instr_t *r = c ? c->root : NULL;
  if (!r || c->nparams != 2 || r->nops != 2) return false;
  bool direct = r->ops[0] == c->params[0] && r->ops[1] == c->params[1];
  bool swapped = r->ops[0] == c->params[1] && r->ops[1] == c->params[0];
  if (!direct && !swapped) return false;
  switch (r->op) {
  case TS_OP_ADD: *out = TS_COLL_SUM; return t != TS_PRED;
  case TS_OP_MULTIPLY: *out = TS_COLL_PROD; return t != TS_PRED;
  case TS_OP_MINIMUM: *out = TS_COLL_MIN; return true;
  case TS_OP_MAXIMUM: *out = TS_COLL_MAX; return true;
  case TS_OP_AND: *out = TS_COLL_MIN; return t == TS_PRED; /* 0/1 bytes */
  case TS_OP_OR: *out = TS_COLL_MAX; return t == TS_PRED;
  default: return false;
  }
}

static int64_t outer_of(const ts_shape_t *s, int dim) {
  int64_t o = 1;
  for (int d = 0; d < dim; d++) o *= s->dims[d];
  return o;
}

ts_status_t rt_coll_compile(ts_rt_program_t *p, const ts_hlo_instr_t *attrs, const ts_hlo_instr_t *located,
                            ts_opcode_t kind, ts_diag_t *diag, int *out) {
  rt_coll_t c = {.instr = attrs, .kind = kind, .dim = -1, .groupset = -1};
  ts_coll_group_mode_t mode = ts_hlo_group_mode(attrs, kind);
  const ts_hlo_attr_t *ra = ts_hlo_instr_attr(attrs, "replica_groups");
  const ts_replica_groups_t *rg = ra && ra->kind == TS_ATTR_REPLICA_GROUPS ? ra->v.rg : NULL;
  if (kind == TS_OP_COLLECTIVE_PERMUTE) rg = NULL; /* pairs name ids of the whole space */
  const ts_hlo_attr_t *da = ts_hlo_instr_attr(attrs, "dimensions");
  if (da && da->kind == TS_ATTR_INT_LIST && da->v.list.n > 0) c.dim = (int)da->v.list.v[0];
  int nops = attrs->nops;
  for (int o = 0; o < nops; o++)
    if (!ts_shape_is_array(attrs->ops[o]->shape))
      return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT, "operand %d is not an array", o);
  switch (kind) {
  case TS_OP_ALL_REDUCE:
  case TS_OP_REDUCE_SCATTER: {
    const ts_hlo_comp_t *to_apply = attrs->ncalled ? attrs->called[0] : NULL;
    ts_elem_t t = nops ? attrs->ops[0]->shape->elem : TS_F32;
    if (!reducer_redop(to_apply, t, &c.redop))
      return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT,
                  "the reduction %s is not one add, multiply, minimum or maximum (and/or on pred) of its parameters",
                  to_apply ? to_apply->name : "(none)");
    if (ts_elem_is_complex(t) && c.redop != TS_COLL_SUM && c.redop != TS_COLL_PROD)
      return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT, "complex min/max reduction");
    if (kind == TS_OP_REDUCE_SCATTER) {
      if (c.dim < 0 || c.dim >= attrs->ops[0]->shape->rank)
        return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT, "reduce-scatter without a valid dimension");
      for (int o = 0; o < nops; o++)
        if (outer_of(attrs->ops[o]->shape, c.dim) > 1) c.scratch += (size_t)ts_shape_storage_bytes(attrs->ops[o]->shape);
    }
    break;
  }
  case TS_OP_ALL_GATHER:
    if (c.dim < 0 || c.dim >= (nops ? attrs->ops[0]->shape->rank : 0))
      return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT, "all-gather without a valid dimension");
    break; /* scratch: below, once the group size is known */
  case TS_OP_ALL_TO_ALL:
    if (c.dim >= 0) {
      if (nops != 1) return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT, "array all-to-all with %d operands", nops);
      if (c.dim >= attrs->ops[0]->shape->rank)
        return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT, "all-to-all dimension %d out of range", c.dim);
      if (outer_of(attrs->ops[0]->shape, c.dim) > 1) c.scratch = 2 * (size_t)ts_shape_storage_bytes(attrs->ops[0]->shape);
    } else {
      size_t b0 = nops ? (size_t)ts_shape_storage_bytes(attrs->ops[0]->shape) : 0;
      for (int o = 0; o < nops; o++)
        if ((size_t)ts_shape_storage_bytes(attrs->ops[o]->shape) != b0 || attrs->ops[o]->shape->elem != attrs->ops[0]->shape->elem)
          return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT, "tuple all-to-all with operands of different shapes");
      c.scratch = 2 * b0 * (size_t)nops;
    }
    break;
  case TS_OP_COLLECTIVE_PERMUTE: {
    const ts_hlo_attr_t *a = ts_hlo_instr_attr(attrs, "source_target_pairs");
    int n = a && a->kind == TS_ATTR_INT_LISTS ? a->v.lists.n : 0;
    c.pairs = ts_arena_alloc(p->arena, sizeof *c.pairs * (size_t)(n + 1));
    if (!c.pairs) return TS_ERR_NOMEM;
    int64_t space = ts_coll_group_id_space(mode, p->replicas, p->partitions);
    for (int k = 0; k < n; k++) {
      const ts_i64_list_t *pr = &a->v.lists.lists[k];
      if (pr->n != 2 || pr->v[0] < 0 || pr->v[0] >= space || pr->v[1] < 0 || pr->v[1] >= space)
        return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT, "source_target_pairs entry %d is not a pair of ids below %lld",
                    k, (long long)space);
      c.pairs[k][0] = pr->v[0];
      c.pairs[k][1] = pr->v[1];
    }
    c.npairs = n;
    break;
  }
  case TS_OP_COLLECTIVE_BROADCAST:
    break;
  default:
    return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT, "collective %s has no meaning in the runtime",
                ts_opcode_name(kind));
  }
  rt_groupset_t gs;
  ts_status_t st = groupset_build(p, located, mode, rg, diag, &gs);
  if (st != TS_OK) {
    groupset_free(&gs);
    return st;
  }
  int64_t D = p->replicas * p->partitions;
  for (int k = 0; k < p->ngroupsets && c.groupset < 0; k++)
    if (p->groupsets[k].mode == gs.mode && groupset_equal(&p->groupsets[k], &gs, D)) c.groupset = k;
  if (c.groupset >= 0) {
    groupset_free(&gs);
  } else {
    rt_groupset_t *ng = ts_realloc(p->groupsets, (size_t)(p->ngroupsets + 1) * sizeof *ng);
    if (!ng) {
      groupset_free(&gs);
      return TS_ERR_NOMEM;
    }
    p->groupsets = ng;
    c.groupset = p->ngroupsets;
    p->groupsets[p->ngroupsets++] = gs;
  }
  if (kind == TS_OP_ALL_GATHER) {
    const rt_groupset_t *g = &p->groupsets[c.groupset];
    int maxg = 1;
    for (int k = 0; k < g->ngroups; k++)
      if (g->group_size[k] > maxg) maxg = g->group_size[k];
    for (int o = 0; o < nops; o++)
      if (outer_of(attrs->ops[o]->shape, c.dim) > 1) c.scratch += (size_t)ts_shape_storage_bytes(attrs->ops[o]->shape) * (size_t)maxg;
  }
  /* tuple all-to-all: one operand per member */
  if (kind == TS_OP_ALL_TO_ALL && c.dim < 0) {
    const rt_groupset_t *g = &p->groupsets[c.groupset];
    for (int k = 0; k < g->ngroups; k++)
      if (g->group_size[k] != nops)
        return rt_fail(p->m, located, diag, TS_ERR_INVALID_ARGUMENT, "tuple all-to-all with %d operands over %d devices",
                    nops, g->group_size[k]);
  }
  rt_coll_t *nc = ts_realloc(p->colls, (size_t)(p->ncolls + 1) * sizeof *nc);
  if (!nc) return TS_ERR_NOMEM;
  p->colls = nc;
  p->coll_scratch += c.scratch;
  *out = p->ncolls;
  p->colls[p->ncolls++] = c;
  return TS_OK;
}

void rt_coll_program_free(ts_rt_program_t *p) {
  for (int k = 0; k < p->ngroupsets; k++) groupset_free(&p->groupsets[k]);
  ts_free(p->groupsets);
  ts_free(p->colls);
  p->groupsets = NULL;
  p->colls = NULL;
}

/* ---- communicators (device create) ------------------------------------------- */

typedef struct {
  ts_coll_comm_t *flat;        /* NULL: every group has one device (local copies) */
} dev_groupset_t;

/* The emulated link between slices, as TESSERA_CROSS_SLICE_DELAY_US sets it. */
typedef struct {
  uint64_t latency_ns;
  double gbps;                 /* GB/s (1e9 bytes/s); 0: no transfer-time term */
} xs_link_t;

struct rt_device_colls {
  const ts_rt_program_t *p;
  int64_t dev;
  ts_coll_comm_t *world;
  dev_groupset_t *gs;
  int ncomms;
  ts_coll_comm_t **comms;      /* the world first, then every sub-communicator */
  size_t *scratch_off;         /* per collective */
  size_t scratch_bytes;
  void *scratch;
  /* The emulated cross-slice link: NULL xs_bytes when off. */
  xs_link_t xs;
  int64_t *xs_bytes;           /* per collective: bytes this device sends across slices, -1: within a slice */
  uint64_t *xs_due;            /* per collective in flight: completes no earlier than this (ns) */
  uint64_t xs_free_ns;         /* the link sends this device's earlier bytes until then */
};

static ts_status_t push_comm(rt_device_colls_t *dc, ts_coll_comm_t *c) {
  ts_coll_comm_t **n = ts_realloc(dc->comms, (size_t)(dc->ncomms + 1) * sizeof *n);
  if (!n) return TS_ERR_NOMEM;
  dc->comms = n;
  dc->comms[dc->ncomms++] = c;
  return TS_OK;
}

/* How many slices this device's group of `g` spans, when it splits into
 * equal parts that are contiguous in the group's order (the communicator's
 * rank r is member r, and the library's layout puts rank r in slice
 * r / (n / slices)); 1 otherwise (flat). Every member of the group computes
 * the same answer from the same group. */
static int group_slices(const rt_groupset_t *g, int64_t dev, int64_t per_slice) {
  const int64_t *mem = g->members[g->group_of[dev]];
  int n = g->group_size[g->group_of[dev]], parts = 1;
  for (int q = 1; q < n; q++) parts += mem[q] / per_slice != mem[q - 1] / per_slice;
  if (parts < 2 || n % parts != 0) return 1;
  int k = n / parts;
  for (int q = 0; q < n; q++)
    if (mem[q] / per_slice != mem[q / k * k] / per_slice) return 1; /* a part of k mixes slices */
  for (int x = 0; x < parts; x++)
    for (int y = 0; y < x; y++)
      if (mem[x * k] / per_slice == mem[y * k] / per_slice) return 1; /* a slice comes back */
  return parts;
}

/* ---- the emulated cross-slice link (TESSERA_CROSS_SLICE_DELAY_US) ------------- */

#define XS_MAX_LATENCY_US 60e6 /* a minute: longer would read as a hang */

/* "L[,BW_GBPS]": latency in microseconds (>= 0), bandwidth in GB/s (> 0). */
static ts_status_t xs_parse(const char *text, xs_link_t *out, ts_diag_t *diag) {
  char *end;
  errno = 0;
  double us = strtod(text, &end), gbps = 0;
  bool ok = end != text && errno == 0 && us >= 0 && us <= XS_MAX_LATENCY_US;
  if (ok && *end == ',') {
    const char *b = end + 1;
    gbps = strtod(b, &end);
    ok = end != b && errno == 0 && gbps > 0 && isfinite(gbps);
  }
  if (!ok || *end) {
    ts_diag_plain(diag,
                  "TESSERA_CROSS_SLICE_DELAY_US='%s': expected L[,BW_GBPS], a latency in microseconds (0 to %.0f) "
                  "and optionally a bandwidth in GB/s (> 0)",
                  text, XS_MAX_LATENCY_US);
    return TS_ERR_INVALID_ARGUMENT;
  }
  out->latency_ns = (uint64_t)llround(us * 1e3);
  out->gbps = gbps;
  return TS_OK;
}

/* Whether device `dev`'s part of collective `c` talks to another slice of
 * `per_slice` devices: a member of its group is elsewhere, or (permute) one
 * of the pairs it sends or receives in has its other end elsewhere. */
static bool xs_crosses(const ts_rt_program_t *p, const rt_coll_t *c, int64_t dev, int64_t per_slice) {
  const rt_groupset_t *g = &p->groupsets[c->groupset];
  int64_t mine = dev / per_slice, P = p->partitions;
  if (c->kind == TS_OP_COLLECTIVE_PERMUTE) {
    for (int k = 0; k < c->npairs; k++) {
      int64_t ends[2];
      for (int e = 0; e < 2; e++) {
        int64_t id = c->pairs[k][e];
        ends[e] = ts_coll_group_device(g->mode, P, dev, id);
      }
      if ((ends[0] == dev || ends[1] == dev) && ends[0] / per_slice != ends[1] / per_slice) return true;
    }
    return false;
  }
  int gi = g->group_of[dev];
  for (int k = 0; k < g->group_size[gi]; k++)
    if (g->members[gi][k] / per_slice != mine) return true;
  return false;
}

/* The bytes a crossing collective puts on the link from this device: its
 * operands, or, when the library runs it two-level (k devices per slice
 * part), what its cross-slice step moves: an all-reduce's and a
 * reduce-scatter's 1/k share (the all-reduce rounds up: the library pads to k
 * blocks), an all-gather's operand. */
static int64_t xs_payload(const rt_coll_t *c, const dev_groupset_t *dg) {
  int slices = ts_coll_comm_slices(dg->flat);
  bool share = slices > 1 && (c->kind == TS_OP_ALL_REDUCE || c->kind == TS_OP_REDUCE_SCATTER);
  int k = share ? ts_coll_comm_size(dg->flat) / slices : 1;
  int64_t b = 0;
  for (int o = 0; o < c->instr->nops; o++) {
    const ts_shape_t *s = c->instr->ops[o]->shape;
    int64_t n = ts_shape_elements(s);
    b += (n + k - 1) / k * ts_elem_storage_bytes(s->elem);
  }
  return b;
}

static ts_status_t xs_setup(rt_device_colls_t *dc, const char *env, int slices, ts_diag_t *diag) {
  const ts_rt_program_t *p = dc->p;
  TS_CHECK(xs_parse(env, &dc->xs, diag));
  if (slices <= 1) return TS_OK; /* one slice: nothing crosses */
  int64_t per_slice = p->replicas * p->partitions / slices;
  dc->xs_bytes = ts_calloc((size_t)p->ncolls + 1, sizeof *dc->xs_bytes);
  dc->xs_due = ts_calloc((size_t)p->ncolls + 1, sizeof *dc->xs_due);
  if (!dc->xs_bytes || !dc->xs_due) return TS_ERR_NOMEM;
  for (int c = 0; c < p->ncolls; c++) {
    const rt_coll_t *cc = &p->colls[c];
    const dev_groupset_t *dg = &dc->gs[cc->groupset];
    bool local = !dg->flat || ts_coll_comm_size(dg->flat) == 1;
    dc->xs_bytes[c] = !local && xs_crosses(p, cc, dc->dev, per_slice) ? xs_payload(cc, dg) : -1;
  }
  return TS_OK;
}

/* At post: when the collective's bytes arrive. The link sends this device's
 * crossing collectives one after another at the bandwidth; the latency of
 * one overlaps the next's (a pipelined network). */
static void xs_post(rt_device_colls_t *dc, int coll, uint64_t t_post) {
  if (!dc->xs_bytes || dc->xs_bytes[coll] < 0) return;
  uint64_t begin = t_post, send = 0;
  if (dc->xs.gbps > 0) {
    send = (uint64_t)llround((double)dc->xs_bytes[coll] / dc->xs.gbps); /* bytes / (GB/s) = ns */
    if (dc->xs_free_ns > begin) begin = dc->xs_free_ns;
    dc->xs_free_ns = begin + send;
  }
  dc->xs_due[coll] = begin + send + dc->xs.latency_ns;
}

/* Before the collective counts as complete: sleeps until its bytes have
 * arrived (not at post: the compute thread runs on meanwhile, as it would
 * beside a slow link). Wakes every 10 ms to notice an aborted world. */
static ts_status_t xs_wait(rt_device_colls_t *dc, int coll) {
  if (!dc->xs_bytes || dc->xs_bytes[coll] < 0) return TS_OK;
  for (;;) {
    uint64_t now = rt_now_ns(), due = dc->xs_due[coll];
    if (now >= due) return TS_OK;
    if (dc->world && ts_coll_comm_status(dc->world) != TS_OK) return TS_ERR_REMOTE;
    uint64_t nap = due - now < 10000000u ? due - now : 10000000u;
    struct timespec ts = {(time_t)(nap / 1000000000u), (long)(nap % 1000000000u)};
    nanosleep(&ts, NULL);
  }
}

/* ---- device create ------------------------------------------------------------- */

ts_status_t rt_coll_device_create(const ts_rt_program_t *p, const ts_rt_device_opts_t *opts,
                                  rt_device_colls_t **out, ts_diag_t *diag) {
  *out = NULL;
  int64_t D = p->replicas * p->partitions;
  rt_device_colls_t *dc = ts_calloc(1, sizeof *dc);
  if (!dc) return TS_ERR_NOMEM;
  dc->p = p;
  dc->dev = opts->device_id;
  dc->world = opts->world;
  ts_status_t st = TS_OK;
  dc->gs = ts_calloc((size_t)p->ngroupsets + 1, sizeof *dc->gs);
  dc->scratch_off = ts_calloc((size_t)p->ncolls + 1, sizeof *dc->scratch_off);
  if (!dc->gs || !dc->scratch_off) {
    st = TS_ERR_NOMEM;
    goto fail;
  }
  if (opts->device_id < 0 || opts->device_id >= D) {
    ts_diag_plain(diag, "device id %lld is not one of the program's %lld devices (%lld replicas x %lld partitions)",
                  (long long)opts->device_id, (long long)D, (long long)p->replicas, (long long)p->partitions);
    st = TS_ERR_INVALID_ARGUMENT;
    goto fail;
  }
  if (dc->world) {
    if (ts_coll_comm_size(dc->world) != D || ts_coll_comm_rank(dc->world) != opts->device_id) {
      ts_diag_plain(diag, "the world has %d ranks (this one %d), but the program runs on %lld devices (this one %lld)",
                    ts_coll_comm_size(dc->world), ts_coll_comm_rank(dc->world), (long long)D,
                    (long long)opts->device_id);
      st = TS_ERR_INVALID_ARGUMENT;
      goto fail;
    }
    TS_CHECK_GOTO(push_comm(dc, dc->world), st, fail);
  }
  int slices = opts->slices > 1 ? opts->slices : 1;
  if (slices > 1 && D % slices != 0) {
    ts_diag_plain(diag, "%lld devices do not split into %d equal slices", (long long)D, slices);
    st = TS_ERR_INVALID_ARGUMENT;
    goto fail;
  }
  /* One split per group set, in the program's order: the same sequence on
   * every device. */
  for (int k = 0; k < p->ngroupsets; k++) {
    const rt_groupset_t *g = &p->groupsets[k];
    int maxn = 1;
    for (int q = 0; q < g->ngroups; q++)
      if (g->group_size[q] > maxn) maxn = g->group_size[q];
    if (maxn == 1) continue;
    if (!dc->world) {
      ts_diag_plain(diag, "the program's collectives span %d devices, but no world communicator was given", maxn);
      st = TS_ERR_INVALID_ARGUMENT;
      goto fail;
    }
    st = ts_coll_comm_split(dc->world, g->rg ? g->rg->groups : NULL, g->rg ? g->rg->ngroups : 0, g->mode, p->replicas,
                           p->partitions, &dc->gs[k].flat);
    if (st != TS_OK) {
      ts_diag_plain(diag, "cannot create the sub-communicator of group set %d: %s", k, ts_status_string(st));
      goto fail;
    }
    TS_CHECK_GOTO(push_comm(dc, dc->gs[k].flat), st, fail);
    /* The slice layout, right after the split (the same point of every
     * member's sequence), where a two-level kind runs over the set. */
    bool two_level = false;
    for (int c = 0; c < p->ncolls; c++) {
      ts_opcode_t kind = p->colls[c].kind;
      two_level |= p->colls[c].groupset == k && (kind == TS_OP_ALL_REDUCE || kind == TS_OP_ALL_GATHER ||
                                                 kind == TS_OP_REDUCE_SCATTER);
    }
    int parts = slices > 1 && two_level ? group_slices(g, dc->dev, D / slices) : 1;
    if (parts > 1 && (st = ts_coll_comm_set_slices(dc->gs[k].flat, parts)) != TS_OK) {
      ts_diag_plain(diag, "cannot lay out group set %d over %d slices: %s", k, parts, ts_status_string(st));
      goto fail;
    }
  }
  const char *xs_env = ts_env_get(TS_ENV_CROSS_SLICE_DELAY_US);
  if (xs_env && *xs_env) TS_CHECK_GOTO(xs_setup(dc, xs_env, slices, diag), st, fail);
  size_t at = 0;
  for (int c = 0; c < p->ncolls; c++) {
    const rt_coll_t *cc = &p->colls[c];
    dc->scratch_off[c] = at;
    at += (cc->scratch + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
  }
  dc->scratch_bytes = at;
  if (at > 0) {
    if (dc->world) st = ts_coll_alloc(dc->world, at, &dc->scratch);
    else dc->scratch = ts_malloc(at), st = dc->scratch ? TS_OK : TS_ERR_NOMEM;
    if (st != TS_OK) goto fail;
  }
  *out = dc;
  return TS_OK;
fail:
  rt_coll_device_destroy(dc);
  return st;
}

void rt_coll_device_destroy(rt_device_colls_t *dc) {
  if (!dc) return;
  if (dc->scratch) {
    if (dc->world) ts_coll_free(dc->world, dc->scratch);
    else ts_free(dc->scratch);
  }
  /* comms[0] is the world (not ours) when there is one */
  for (int k = dc->world ? 1 : 0; k < dc->ncomms; k++) ts_coll_comm_destroy(dc->comms[k]);
  ts_free(dc->comms);
  ts_free(dc->gs);
  ts_free(dc->scratch_off);
  ts_free(dc->xs_bytes);
  ts_free(dc->xs_due);
  ts_free(dc);
}

ts_coll_comm_t *const *rt_coll_device_comms(const rt_device_colls_t *dc, int *n) {
  *n = dc->ncomms;
  return dc->comms;
}

/* ---- running ---------------------------------------------------------------------- */

static size_t esz(ts_elem_t t) { return (size_t)ts_elem_storage_bytes(t); }

/* Copies block `part` of `parts` along `dim` of a (shape of src) to/from a
 * contiguous block: pack reads src's part into dst; unpack writes src into
 * dst's part. */
static void dim_block(const ts_array_t *full, int dim, int parts, int part, void *contig, bool pack) {
  size_t sz = esz(full->elem);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < dim; k++) outer *= full->dims[k];
  for (int k = dim + 1; k < full->rank; k++) inner *= full->dims[k];
  int64_t len = full->dims[dim] / parts;
  size_t row = (size_t)(len * inner) * sz;
  for (int64_t o = 0; o < outer; o++) {
    char *f = (char *)full->data + ((size_t)(o * full->dims[dim] + part * len) * inner) * sz;
    char *c = (char *)contig + (size_t)o * row;
    if (pack) memcpy(c, f, row);
    else memcpy(f, c, row);
  }
}

static char *scratch_of(rt_device_colls_t *dc, int coll) {
  return dc->scratch ? (char *)dc->scratch + dc->scratch_off[coll] : NULL;
}

/* A collective over a group of one device. */
static void run_local(const ts_rt_program_t *p, const rt_coll_t *c, int64_t dev, rt_inflight_t *f) {
  if (c->kind == TS_OP_COLLECTIVE_PERMUTE) {
    int64_t P = p->partitions;
    int64_t self = ts_coll_group_id_of(p->groupsets[c->groupset].mode, P, dev);
    bool got = false;
    for (int k = 0; k < c->npairs; k++) got |= c->pairs[k][0] == self && c->pairs[k][1] == self;
    for (int o = 0; o < f->nops; o++) {
      if (got) memcpy(f->out[o].data, f->in[o].data, ts_array_bytes(&f->out[o]));
      else memset(f->out[o].data, 0, ts_array_bytes(&f->out[o]));
    }
    return;
  }
  for (int o = 0; o < f->nops; o++) memcpy(f->out[o].data, f->in[o].data, ts_array_bytes(&f->out[o]));
}

ts_status_t rt_coll_post(rt_device_colls_t *dc, const ts_rt_program_t *p, int coll, const ts_array_t *in,
                         const ts_array_t *out, int nops, rt_inflight_t *f) {
  const rt_coll_t *c = &p->colls[coll];
  dev_groupset_t *dg = &dc->gs[c->groupset];
  ts_coll_comm_t *comm = dg->flat;
  if (nops > RT_MAX_REQS) return TS_ERR_INVALID_ARGUMENT;
  f->coll = coll;
  f->nops = nops;
  f->nreq = 0;
  f->seq = 0;
  f->active = true;
  f->t_post = rt_now_ns();
  for (int o = 0; o < nops; o++) {
    f->in[o] = in[o];
    f->out[o] = out[o];
  }
  if (!comm || ts_coll_comm_size(comm) == 1) {
    run_local(p, c, dc->dev, f);
    return TS_OK;
  }
  xs_post(dc, coll, f->t_post);
  int g = ts_coll_comm_size(comm);
  char *scr = scratch_of(dc, coll);
  ts_status_t st = TS_OK;
  for (int o = 0; o < nops && st == TS_OK; o++) {
    const ts_array_t *x = &f->in[o];
    ts_array_t *y = &f->out[o];
    size_t n = (size_t)ts_array_count(x);
    ts_coll_req_t **rq = &f->req[f->nreq];
    switch (c->kind) {
    case TS_OP_ALL_REDUCE:
      st = ts_coll_allreduce_post(comm, x->data, y->data, n, x->elem, c->redop, rq);
      break;
    case TS_OP_ALL_GATHER:
      if (outer_of(c->instr->ops[o]->shape, c->dim) == 1) {
        st = ts_coll_allgather_post(comm, x->data, y->data, n, x->elem, rq);
      } else {
        st = ts_coll_allgather_post(comm, x->data, scr, n, x->elem, rq);
        scr += (ts_array_bytes(y) + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
      }
      break;
    case TS_OP_REDUCE_SCATTER: {
      size_t rn = (size_t)ts_array_count(y);
      if (outer_of(c->instr->ops[o]->shape, c->dim) == 1) {
        st = ts_coll_reduce_scatter_post(comm, x->data, y->data, rn, x->elem, c->redop, rq);
      } else {
        for (int j = 0; j < g; j++) dim_block(x, c->dim, g, j, scr + (size_t)j * ts_array_bytes(y), true);
        st = ts_coll_reduce_scatter_post(comm, scr, y->data, rn, x->elem, c->redop, rq);
        scr += (ts_array_bytes(x) + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
      }
      break;
    }
    case TS_OP_ALL_TO_ALL:
      if (c->dim >= 0) {
        if (x->dims[c->dim] % g != 0) return TS_ERR_INVALID_ARGUMENT;
        if (outer_of(c->instr->ops[0]->shape, c->dim) == 1) {
          st = ts_coll_alltoall_post(comm, x->data, y->data, n / (size_t)g, x->elem, rq);
        } else {
          size_t blk = ts_array_bytes(x) / (size_t)g;
          for (int j = 0; j < g; j++) dim_block(x, c->dim, g, j, scr + (size_t)j * blk, true);
          st = ts_coll_alltoall_post(comm, scr, scr + ts_array_bytes(x), n / (size_t)g, x->elem, rq);
        }
      } else if (o == 0) { /* tuple form: operand j to member j, one exchange for all */
        size_t blk = ts_array_bytes(x);
        for (int j = 0; j < nops; j++) memcpy(scr + (size_t)j * blk, f->in[j].data, blk);
        st = ts_coll_alltoall_post(comm, scr, scr + blk * (size_t)nops, n, x->elem, rq);
      } else {
        continue;
      }
      break;
    case TS_OP_COLLECTIVE_PERMUTE:
      st = ts_coll_permute_post(comm, x->data, y->data, n, x->elem, (const int64_t(*)[2])c->pairs, c->npairs, rq);
      break;
    case TS_OP_COLLECTIVE_BROADCAST:
      st = ts_coll_broadcast_post(comm, x->data, y->data, n, x->elem, 0, rq);
      break;
    default:
      st = TS_ERR_INTERNAL;
    }
    if (st == TS_OK) f->nreq++;
  }
  /* the newest record is the last post's: only this device posts here */
  ts_coll_record_t r;
  if (st == TS_OK && f->nreq > 0 && ts_coll_records(comm, &r, 1) == 1) f->seq = r.seq;
  return st;
}

static ts_status_t wait_all(rt_inflight_t *f) {
  ts_status_t st = TS_OK;
  for (int r = 0; r < f->nreq; r++) {
    ts_status_t s = ts_coll_wait(f->req[r], -1);
    if (s != TS_OK && st == TS_OK) st = s;
    f->req[r] = NULL;
  }
  f->nreq = 0;
  return st;
}

/* The algorithm of the record numbered `seq` on `comm` ("" once overwritten). */
static const char *record_algorithm(const ts_coll_comm_t *comm, uint64_t seq) {
  ts_coll_record_t r[TS_COLL_RECORDS];
  size_t n = ts_coll_records(comm, r, TS_COLL_RECORDS);
  for (size_t k = 0; k < n; k++)
    if (r[k].seq == seq && r[k].algorithm) return r[k].algorithm;
  return "";
}

ts_status_t rt_coll_finish(rt_device_colls_t *dc, const ts_rt_program_t *p, rt_inflight_t *f,
                           const char **algorithm) {
  if (algorithm) *algorithm = "";
  if (!f->active) return TS_OK;
  f->active = false;
  const rt_coll_t *c = &p->colls[f->coll];
  dev_groupset_t *dg = &dc->gs[c->groupset];
  ts_status_t st = wait_all(f);
  if (st != TS_OK) return st;
  if (!dg->flat || ts_coll_comm_size(dg->flat) == 1) return TS_OK;
  TS_CHECK(xs_wait(dc, f->coll));
  if (algorithm && f->seq) *algorithm = record_algorithm(dg->flat, f->seq);
  int g = ts_coll_comm_size(dg->flat);
  char *scr = scratch_of(dc, f->coll);
  switch (c->kind) {
  case TS_OP_ALL_GATHER:
    for (int o = 0; o < f->nops; o++) {
      ts_array_t *y = &f->out[o];
      if (outer_of(c->instr->ops[o]->shape, c->dim) == 1) continue;
      size_t blk = ts_array_bytes(&f->in[o]);
      for (int j = 0; j < g; j++) dim_block(y, c->dim, g, j, scr + (size_t)j * blk, false);
      scr += (ts_array_bytes(y) + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
    }
    break;
  case TS_OP_ALL_TO_ALL:
    if (c->dim >= 0) {
      if (outer_of(c->instr->ops[0]->shape, c->dim) == 1) break;
      const ts_array_t *x = &f->in[0];
      size_t blk = ts_array_bytes(x) / (size_t)g;
      for (int j = 0; j < g; j++) dim_block(&f->out[0], c->dim, g, j, scr + ts_array_bytes(x) + (size_t)j * blk, false);
    } else {
      size_t blk = ts_array_bytes(&f->in[0]);
      for (int j = 0; j < f->nops; j++) memcpy(f->out[j].data, scr + blk * (size_t)(f->nops + j), blk);
    }
    break;
  default: break;
  }
  return st;
}

void rt_coll_cancel(rt_inflight_t *f) {
  for (int r = 0; r < f->nreq; r++) (void)ts_coll_wait(f->req[r], 1.0);
  f->nreq = 0;
  f->active = false;
}
