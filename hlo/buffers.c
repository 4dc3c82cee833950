/* Buffers, liveness and first-fit packing of one computation in one order
 * (ts_hlo_buffers.h): shared by the runtime's buffer assignment and the
 * scheduler's memory model. */
#include "ts_hlo_buffers.h"

#include <stdlib.h>
#include <string.h>

/* ---- which leaves define buffers ------------------------------------------- */

static uint64_t align_up(uint64_t n) { return (n + TS_HLO_BUFFER_ALIGN - 1) / TS_HLO_BUFFER_ALIGN * TS_HLO_BUFFER_ALIGN; }

/* The first leaf of tuple element k. */
static int elem_leaf_offset(const ts_shape_t *s, int k) {
  int off = 0;
  for (int j = 0; j < k && j < s->ntuple; j++) off += ts_shape_leaf_count(s->tuple[j]);
  return off;
}

static const ts_shape_t *leaf_shape(const ts_shape_t *s, int leaf) {
  while (s->elem == TS_TUPLE) {
    int k = 0;
    for (; k < s->ntuple; k++) {
      int c = ts_shape_leaf_count(s->tuple[k]);
      if (leaf < c) break;
      leaf -= c;
    }
    if (k == s->ntuple) return s;
    s = s->tuple[k];
  }
  return s;
}

static uint64_t leaf_bytes(const ts_shape_t *s) { return ts_shape_is_array(s) ? ts_shape_storage_bytes(s) : 0; }

static bool is_sync_collective(ts_opcode_t op) {
  return op == TS_OP_ALL_REDUCE || op == TS_OP_ALL_GATHER || op == TS_OP_REDUCE_SCATTER || op == TS_OP_ALL_TO_ALL ||
         op == TS_OP_COLLECTIVE_PERMUTE || op == TS_OP_COLLECTIVE_BROADCAST;
}

/* An async-start that runs one collective: wrapped (async_wrapped), or
 * calling a computation whose root is that collective of its parameters. */
static bool async_collective(const ts_hlo_instr_t *i) {
  if (i->async_wrapped != TS_OP_COUNT) return is_sync_collective(i->async_wrapped);
  const ts_hlo_comp_t *c = i->ncalled ? i->called[0] : NULL;
  const ts_hlo_instr_t *r = c ? c->root : NULL;
  if (!r || !is_sync_collective(r->op) || r->nops != i->nops || c->nparams != i->nops) return false;
  for (int o = 0; o < i->nops; o++)
    if (r->ops[o] != c->params[o]) return false;
  return true;
}

static ts_leaf_source_t defined(void) { return (ts_leaf_source_t){TS_LEAF_DEFINED, -1, -1}; }
static ts_leaf_source_t aliased(int op, int leaf) { return (ts_leaf_source_t){TS_LEAF_ALIASED, op, leaf}; }

/* Leaf `leaf` of the operands laid end to end (a tuple, a sharding custom-call). */
static ts_leaf_source_t concatenated(const ts_hlo_instr_t *i, int leaf) {
  for (int o = 0; o < i->nops; o++) {
    int c = ts_shape_leaf_count(i->ops[o]->shape);
    if (leaf < c) return aliased(o, leaf);
    leaf -= c;
  }
  return defined();
}

static int operand_leaves(const ts_hlo_instr_t *i) {
  int n = 0;
  for (int o = 0; o < i->nops; o++) n += ts_shape_leaf_count(i->ops[o]->shape);
  return n;
}

ts_leaf_source_t ts_hlo_leaf_source(const ts_hlo_instr_t *i, int leaf) {
  const ts_shape_t *sh = i->shape;
  int nl = ts_shape_leaf_count(sh);
  int op0 = i->nops ? ts_shape_leaf_count(i->ops[0]->shape) : -1;
  switch (i->op) {
  case TS_OP_PARAMETER: return (ts_leaf_source_t){TS_LEAF_PARAMETER, -1, -1};
  case TS_OP_CONSTANT: return (ts_leaf_source_t){TS_LEAF_CONSTANT, -1, -1};
  case TS_OP_TUPLE: return concatenated(i, leaf);
  case TS_OP_GET_TUPLE_ELEMENT: {
    const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "index");
    const ts_shape_t *ts = i->nops == 1 ? i->ops[0]->shape : NULL;
    if (!a || a->kind != TS_ATTR_INT || !ts || ts->elem != TS_TUPLE || a->v.i < 0 || a->v.i >= ts->ntuple) break;
    return aliased(0, elem_leaf_offset(ts, (int)a->v.i) + leaf);
  }
  case TS_OP_BITCAST: /* a reinterpretation of the same bytes */
    if (op0 == 1 && nl == 1 && leaf_bytes(i->ops[0]->shape) == leaf_bytes(sh) && ts_elem_is_array(sh->elem))
      return aliased(0, 0);
    break;
  case TS_OP_RESHAPE: /* row-major logical order: the same bytes */
  case TS_OP_COPY:    /* values are never written in place: a copy can share */
  case TS_OP_ADD_DEPENDENCY:
  case TS_OP_OPT_BARRIER:
  case TS_OP_DOMAIN:
  case TS_OP_ASYNC_UPDATE:
  case TS_OP_ALL_REDUCE_DONE:
    if (op0 == nl) return aliased(0, leaf);
    break;
  case TS_OP_ALL_GATHER_DONE:
  case TS_OP_COLLECTIVE_PERMUTE_DONE:
  case TS_OP_ASYNC_DONE:
  case TS_OP_COPY_DONE: { /* the start's result element (copy-done: its destination) */
    const ts_shape_t *ts = i->nops ? i->ops[0]->shape : NULL;
    int e = i->op == TS_OP_COPY_DONE ? 0 : 1;
    if (ts && ts->elem == TS_TUPLE && ts->ntuple >= 2 && ts_shape_leaf_count(ts->tuple[e]) == nl)
      return aliased(0, elem_leaf_offset(ts, e) + leaf);
    break;
  }
  case TS_OP_CUSTOM_CALL: {
    ts_custom_call_kind_t kind = ts_hlo_custom_call_kind(i);
    if ((kind == TS_CC_SHARDING || kind == TS_CC_IDENTITY || kind == TS_CC_REGION_ENTER || kind == TS_CC_REGION_EXIT) &&
        operand_leaves(i) == nl)
      return concatenated(i, leaf);
    break;
  }
  case TS_OP_COPY_START: /* (destination, source, context): the source is the operand */
    if (leaf == 1 && i->nops == 1) return aliased(0, 0);
    break;
  case TS_OP_ALL_GATHER_START:
  case TS_OP_COLLECTIVE_PERMUTE_START:
  case TS_OP_ASYNC_START:
    /* ((operands), results, contexts): element 0 is the operands themselves
     * when it holds one leaf per operand (all-reduce-start's shape is its
     * result alone). */
    if (i->op == TS_OP_ASYNC_START && !async_collective(i)) break;
    if (sh->elem == TS_TUPLE && sh->ntuple >= 2 && elem_leaf_offset(sh, 1) == i->nops && leaf < i->nops)
      return aliased(leaf, 0);
    break;
  default: break;
  }
  return defined();
}

uint64_t ts_hlo_leaf_bytes(const ts_hlo_instr_t *i, int leaf) { return leaf_bytes(leaf_shape(i->shape, leaf)); }

const ts_hlo_instr_t *ts_hlo_async_start_of(const ts_hlo_instr_t *i) {
  if (i->op != TS_OP_ALL_REDUCE_DONE && i->op != TS_OP_ALL_GATHER_DONE && i->op != TS_OP_COLLECTIVE_PERMUTE_DONE &&
      i->op != TS_OP_ASYNC_DONE && i->op != TS_OP_COPY_DONE && i->op != TS_OP_ASYNC_UPDATE)
    return NULL;
  const ts_hlo_instr_t *s = i->nops ? i->ops[0] : NULL;
  while (s && s->op == TS_OP_ASYNC_UPDATE && s->nops) s = s->ops[0];
  return s && s->parent == i->parent ? s : NULL;
}

/* ---- liveness ----------------------------------------------------------------- */

void ts_hlo_liveness_free(ts_hlo_liveness_t *l) {
  if (!l) return;
  ts_free(l->bufs);
  ts_free(l->leaf_start);
  ts_free(l->leaf_buf);
  ts_free(l->param_last);
  memset(l, 0, sizeof *l);
}

ts_status_t ts_hlo_liveness(const ts_hlo_comp_t *c, const ts_hlo_instr_t *const *order, ts_hlo_liveness_t *out) {
  memset(out, 0, sizeof *out);
  int n = c->ninstrs, nleaves = 0, nbufs = 0, lo, hi;
  ts_hlo_comp_id_range(c, &lo, &hi);
  int *pos = ts_malloc(sizeof *pos * ((size_t)(hi - lo) + 1)); /* per id - lo */
  out->n = n;
  out->leaf_start = ts_malloc(sizeof *out->leaf_start * ((size_t)n + 1));
  int *param_first = ts_malloc(sizeof *param_first * ((size_t)c->nparams + 1));
  ts_status_t st = TS_OK;
  if (!pos || !out->leaf_start || !param_first) {
    st = TS_ERR_NOMEM;
    goto fail;
  }
  for (int q = 0; q < n; q++) {
    if (order[q]->id < lo || order[q]->id >= hi) {
      st = TS_ERR_INVALID_ARGUMENT; /* not an order of c */
      goto fail;
    }
    pos[order[q]->id - lo] = q;
    out->leaf_start[q] = nleaves;
    nleaves += ts_shape_leaf_count(order[q]->shape);
  }
  out->leaf_start[n] = nleaves;
  for (int p = 0; p < c->nparams; p++) {
    param_first[p] = out->nparam_leaves;
    out->nparam_leaves += ts_shape_leaf_count(c->params[p]->shape);
  }
  out->param_last = ts_malloc(sizeof *out->param_last * ((size_t)out->nparam_leaves + 1));
  if (!out->param_last) {
    st = TS_ERR_NOMEM;
    goto fail;
  }
  for (int p = 0; p < out->nparam_leaves; p++) out->param_last[p] = -1;
  out->leaf_buf = ts_malloc(sizeof *out->leaf_buf * ((size_t)nleaves + 1));
  out->bufs = ts_malloc(sizeof *out->bufs * ((size_t)nleaves + 1));
  if (!out->leaf_buf || !out->bufs) {
    st = TS_ERR_NOMEM;
    goto fail;
  }
  for (int q = 0; q < n; q++) {
    const ts_hlo_instr_t *i = order[q];
    int nl = out->leaf_start[q + 1] - out->leaf_start[q];
    for (int j = 0; j < nl; j++) {
      ts_leaf_source_t s = ts_hlo_leaf_source(i, j);
      int *slot = &out->leaf_buf[out->leaf_start[q] + j];
      if (s.kind == TS_LEAF_ALIASED) {
        const ts_hlo_instr_t *o = i->ops[s.op];
        int oq = o->parent == c && o->id >= lo && o->id < hi ? pos[o->id - lo] : q;
        if (oq >= q || s.op_leaf >= out->leaf_start[oq + 1] - out->leaf_start[oq]) {
          st = TS_ERR_INVALID_ARGUMENT; /* not an order of c, or a malformed alias */
          goto fail;
        }
        *slot = out->leaf_buf[out->leaf_start[oq] + s.op_leaf];
      } else if (s.kind == TS_LEAF_DEFINED) {
        out->bufs[nbufs] = (ts_hlo_buffer_t){i, j, ts_hlo_leaf_bytes(i, j), q, q, -1};
        *slot = nbufs++;
      } else if (s.kind == TS_LEAF_PARAMETER && i->param_number >= 0 && i->param_number < c->nparams) {
        *slot = TS_HLO_PARAM_LEAF(param_first[i->param_number] + j);
      } else {
        *slot = TS_HLO_CONSTANT_LEAF;
      }
    }
  }
  out->nbufs = nbufs;
  /* Each read extends every leaf of the value read. */
  for (int q = 0; q < n; q++) {
    const ts_hlo_instr_t *i = order[q];
    const ts_hlo_instr_t *start = ts_hlo_async_start_of(i);
    for (int pass = 0; pass < 2; pass++) {
      const ts_hlo_instr_t *reader = pass == 0 ? i : start;
      for (int o = 0; reader && o < reader->nops; o++) {
        if (reader->ops[o]->id < lo || reader->ops[o]->id >= hi) {
          st = TS_ERR_INVALID_ARGUMENT;
          goto fail;
        }
        int oq = pos[reader->ops[o]->id - lo];
        for (int e = out->leaf_start[oq]; e < out->leaf_start[oq + 1]; e++) {
          int b = out->leaf_buf[e];
          if (b >= 0 && out->bufs[b].last < q) out->bufs[b].last = q;
          if (b <= TS_HLO_PARAM_LEAF(0) && out->param_last[TS_HLO_PARAM_LEAF(0) - b] < q)
            out->param_last[TS_HLO_PARAM_LEAF(0) - b] = q;
        }
      }
    }
  }
  if (c->root) {
    int rq = pos[c->root->id - lo];
    for (int e = out->leaf_start[rq]; e < out->leaf_start[rq + 1]; e++) {
      int b = out->leaf_buf[e];
      if (b >= 0) out->bufs[b].last = n;
      if (b <= TS_HLO_PARAM_LEAF(0)) out->param_last[TS_HLO_PARAM_LEAF(0) - b] = n;
    }
  }
  ts_free(pos);
  ts_free(param_first);
  return TS_OK;
fail:
  ts_free(pos);
  ts_free(param_first);
  ts_hlo_liveness_free(out);
  return st;
}

/* ---- first fit ---------------------------------------------------------------- */

typedef struct {
  int64_t lo, hi;
} range_t;

static int cmp_range(const void *a, const void *b) {
  const range_t *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

typedef struct {
  uint64_t bytes;
  int first, id;
} size_key_t;

static int cmp_by_size(const void *a, const void *b) {
  const size_key_t *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->id - y->id;
}

/* Buffers by decreasing size, each at the lowest offset free for its whole
 * live range (the greedy-by-size order of XLA's heap simulator). The placed
 * ones live in an interval tree over positions, so a buffer meets only those
 * whose range overlaps its own: O((n + k) log n) for k overlapping pairs. */
ts_status_t ts_hlo_first_fit(ts_hlo_buffer_t *bufs, int n, uint64_t *arena_bytes) {
  *arena_bytes = 0;
  int t0 = 0, t1 = 0;
  for (int b = 0; b < n; b++) {
    if (b == 0 || bufs[b].first < t0) t0 = bufs[b].first;
    if (b == 0 || bufs[b].last > t1) t1 = bufs[b].last;
  }
  ts_interval_tree_t *t = NULL;
  size_key_t *ids = ts_malloc(sizeof *ids * ((size_t)n + 1));
  range_t *busy = ts_malloc(sizeof *busy * ((size_t)n + 1));
  int *met = ts_malloc(sizeof *met * ((size_t)n + 1));
  ts_status_t st = ts_interval_tree_create(t1 - t0 + 1, n + 1, &t);
  if (st == TS_OK && (!ids || !busy || !met)) st = TS_ERR_NOMEM;
  if (st != TS_OK) goto done;
  for (int b = 0; b < n; b++) ids[b] = (size_key_t){bufs[b].bytes, bufs[b].first, b};
  qsort(ids, (size_t)n, sizeof *ids, cmp_by_size);
  uint64_t top = 0;
  for (int q = 0; q < n; q++) {
    ts_hlo_buffer_t *b = &bufs[ids[q].id];
    uint64_t sz = align_up(b->bytes);
    if (sz == 0) {
      b->offset = 0;
      continue;
    }
    int a = b->first - t0, z = b->last - t0;
    int nb = ts_interval_tree_query(t, a, z, met);
    for (int r = 0; r < nb; r++)
      busy[r] = (range_t){bufs[met[r]].offset, bufs[met[r]].offset + (int64_t)align_up(bufs[met[r]].bytes)};
    qsort(busy, (size_t)nb, sizeof *busy, cmp_range);
    int64_t at = 0;
    for (int r = 0; r < nb; r++) {
      if (busy[r].lo >= at + (int64_t)sz) break;
      if (busy[r].hi > at) at = busy[r].hi;
    }
    b->offset = at;
    if ((uint64_t)at + sz > top) top = (uint64_t)at + sz;
    if ((st = ts_interval_tree_insert(t, a, z, ids[q].id)) != TS_OK) goto done;
  }
  *arena_bytes = top;
done:
  ts_free(ids);
  ts_free(busy);
  ts_free(met);
  ts_interval_tree_destroy(t);
  return st;
}
