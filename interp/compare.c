/* Output comparison against the reference and static statistics: tessera
 * check and tessera run --check / --compile-only print the same tables. */
#include "ts_interp.h"
#include "ts_sharding.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_RANK 64

void ts_interp_print_bytes(FILE *f, uint64_t b) {
  if (b >= (UINT64_C(1) << 30)) fprintf(f, "%.2f GiB", (double)b / (double)(UINT64_C(1) << 30));
  else if (b >= (UINT64_C(1) << 20)) fprintf(f, "%.2f MiB", (double)b / (double)(UINT64_C(1) << 20));
  else if (b >= 1024) fprintf(f, "%.2f KiB", (double)b / 1024.0);
  else fprintf(f, "%llu B", (unsigned long long)b);
}

/* ---- static counts ------------------------------------------------------ */

/* The run's memory bound (tessera check's usage): entry parameters plus every result. */
uint64_t ts_interp_memory_bound(const ts_hlo_module_t *m) {
  uint64_t b = 0;
  for (int p = 0; p < m->entry->nparams; p++) b += ts_shape_storage_bytes(m->entry->params[p]->shape);
  for (int c = 0; c < m->ncomps; c++) {
    const ts_hlo_comp_t *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      const ts_hlo_instr_t *i = comp->instrs[k];
      if (i->op == TS_OP_PARAMETER || i->op == TS_OP_TUPLE || i->op == TS_OP_GET_TUPLE_ELEMENT) continue;
      b += ts_shape_storage_bytes(i->shape);
    }
  }
  return b;
}

enum { NKINDS = TS_INTERP_COLL_KINDS };

static int coll_kind_of(ts_opcode_t op) {
  switch (op) {
  case TS_OP_ALL_REDUCE: case TS_OP_ALL_REDUCE_DONE: return TS_COLL_ALL_REDUCE;
  case TS_OP_ALL_GATHER: case TS_OP_ALL_GATHER_DONE: return TS_COLL_ALL_GATHER;
  case TS_OP_REDUCE_SCATTER: return TS_COLL_REDUCE_SCATTER;
  case TS_OP_ALL_TO_ALL: return TS_COLL_ALL_TO_ALL;
  case TS_OP_COLLECTIVE_PERMUTE: case TS_OP_COLLECTIVE_PERMUTE_DONE: return TS_COLL_COLLECTIVE_PERMUTE;
  case TS_OP_COLLECTIVE_BROADCAST: return TS_COLL_COLLECTIVE_BROADCAST;
  case TS_OP_RAGGED_ALL_TO_ALL: return TS_COLL_RAGGED_ALL_TO_ALL;
  case TS_OP_COLLECTIVE_REDUCE: return TS_COLL_COLLECTIVE_REDUCE;
  default: return -1;
  }
}

/* Counts each collective once, at its synchronous form or at its -done
 * (whose operands are the -start's). */
void ts_interp_count_collectives(const ts_hlo_module_t *m, ts_interp_coll_stats_t *cs) {
  memset(cs, 0, sizeof *cs);
  for (int c = 0; c < m->ncomps; c++) {
    const ts_hlo_comp_t *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      const ts_hlo_instr_t *i = comp->instrs[k], *start = i;
      int kind;
      if (i->op == TS_OP_ASYNC_DONE) {
        kind = coll_kind_of(i->async_wrapped);
        while (start->nops > 0 && (start->op == TS_OP_ASYNC_DONE || start->op == TS_OP_ASYNC_UPDATE))
          start = start->ops[0];
      } else {
        kind = coll_kind_of(i->op);
        if (kind >= 0 && (i->op == TS_OP_ALL_REDUCE_DONE || i->op == TS_OP_ALL_GATHER_DONE ||
                          i->op == TS_OP_COLLECTIVE_PERMUTE_DONE) && i->nops > 0)
          start = i->ops[0];
      }
      if (kind < 0) continue;
      uint64_t in = 0, out = ts_shape_bytes(i->shape);
      for (int o = 0; o < start->nops; o++) in += ts_shape_bytes(start->ops[o]->shape);
      cs->count[kind]++;
      cs->bytes[kind] += in > out ? in : out;
    }
  }
}

void ts_interp_print_collectives(const ts_interp_coll_stats_t *cs) {
  int64_t n = 0;
  uint64_t b = 0;
  printf("collectives (static: each instruction once, while bodies once):\n");
  printf("  %-22s %8s %16s\n", "kind", "count", "bytes/device");
  for (int k = 0; k < NKINDS; k++) {
    if (!cs->count[k]) continue;
    printf("  %-22s %8lld %16llu\n", ts_coll_kind_name((ts_coll_kind_t)k), (long long)cs->count[k], (unsigned long long)cs->bytes[k]);
    n += cs->count[k];
    b += cs->bytes[k];
  }
  printf("  %-22s %8lld %16llu\n", "total", (long long)n, (unsigned long long)b);
}

/* ---- comparison --------------------------------------------------------- */

/* Relative tolerance per element type (tessera check's usage lists them). */
static double rtol_of(ts_elem_t e) {
  switch (e) {
  case TS_F16: return 1.0 / 256;
  case TS_BF16: return 1.0 / 32;
  case TS_F8E4M3: case TS_F8E4M3FN: case TS_F8E4M3B11FNUZ: case TS_F8E4M3FNUZ: case TS_F8E3M4: return 0.5;
  case TS_F8E5M2: case TS_F8E5M2FNUZ: case TS_F8E8M0FNU: case TS_F4E2M1FN: case TS_F6E2M3FN: case TS_F6E3M2FN:
    return 1.0;
  default: return 1e-5;
  }
}

typedef struct {
  double worst;      /* the largest error measure (|g-w| / max(|w|, F); ints: 0 or inf) */
  int64_t nbad;      /* elements over the tolerance */
  int64_t at[MAX_RANK]; /* full index of the worst element */
  int64_t got_flat, want_flat;
  bool any;
} cmp_t;

static bool is_exact(ts_elem_t e) { return !ts_elem_is_float(e) && !ts_elem_is_complex(e); }

/* The largest finite magnitude of an array. */
static double max_abs(const ts_array_t *a) {
  double s = 0;
  int64_t n = ts_array_count(a);
  for (int64_t k = 0; k < n; k++) {
    double re, im;
    ts_load_c(a->elem, a->data, k, &re, &im);
    double v = hypot(re, im);
    if (isfinite(v) && v > s) s = v;
  }
  return s;
}

static double elem_error(ts_elem_t e, const void *g, int64_t gi, const void *w, int64_t wi, double floor_) {
  if (is_exact(e)) return ts_load_i(e, g, gi) == ts_load_i(e, w, wi) ? 0 : INFINITY;
  double gr, gim, wr, wim;
  ts_load_c(e, g, gi, &gr, &gim);
  ts_load_c(e, w, wi, &wr, &wim);
  bool gn = isnan(gr) || isnan(gim), wn = isnan(wr) || isnan(wim);
  if (gn || wn) return gn && wn ? 0 : INFINITY;
  if (!isfinite(gr) || !isfinite(gim) || !isfinite(wr) || !isfinite(wim))
    return gr == wr && gim == wim ? 0 : INFINITY;
  double d = hypot(gr - wr, gim - wim), m = hypot(wr, wim);
  return d / (m > floor_ ? m : floor_);
}

/* Compares the box ext[] of `got` (from its origin) with `want` at off[]. */
static void compare_box(const ts_array_t *want, const int64_t *off, const ts_array_t *got, const int64_t *ext,
                        double floor_, double rtol, cmp_t *r) {
  int rank = want->rank;
  int64_t ws[MAX_RANK], gs[MAX_RANK], idx[MAX_RANK] = {0};
  for (int k = 0; k < rank; k++)
    if (ext[k] <= 0) return;
  int64_t s = 1;
  for (int k = rank - 1; k >= 0; k--) ws[k] = s, s *= want->dims[k];
  s = 1;
  for (int k = rank - 1; k >= 0; k--) gs[k] = s, s *= got->dims[k];
  for (;;) {
    int64_t wi = 0, gi = 0;
    for (int k = 0; k < rank; k++) {
      wi += (off[k] + idx[k]) * ws[k];
      gi += idx[k] * gs[k];
    }
    double e = elem_error(want->elem, got->data, gi, want->data, wi, floor_);
    if (e > rtol) r->nbad++;
    if (!r->any || e > r->worst) {
      r->any = true;
      r->worst = e;
      r->got_flat = gi;
      r->want_flat = wi;
      for (int k = 0; k < rank; k++) r->at[k] = off[k] + idx[k];
    }
    int k = rank - 1;
    for (; k >= 0; k--) {
      if (++idx[k] < ext[k]) break;
      idx[k] = 0;
    }
    if (k < 0) break;
  }
}

static void print_elem(ts_elem_t e, const void *p, int64_t i) {
  if (is_exact(e)) {
    int64_t v = ts_load_i(e, p, i);
    if (ts_elem_is_unsigned_int(e)) printf("%llu", (unsigned long long)v);
    else printf("%lld", (long long)v);
  } else if (ts_elem_is_complex(e)) {
    double re, im;
    ts_load_c(e, p, i, &re, &im);
    printf("(%.9g, %.9g)", re, im);
  } else {
    printf("%.9g", ts_load_f(e, p, i));
  }
}

static void print_index(int rank, const int64_t *at) {
  printf("[");
  for (int k = 0; k < rank; k++) printf(k ? ",%lld" : "%lld", (long long)at[k]);
  printf("]");
}

/* Where r found the worst element, and that element in got and in want. */
static void print_worst(const cmp_t *r, const ts_array_t *got, const ts_array_t *want) {
  print_index(want->rank, r->at);
  printf(": got ");
  print_elem(got->elem, got->data, r->got_flat);
  printf(", want ");
  print_elem(want->elem, want->data, r->want_flat);
}

/* "out<k>" and, for tuple results, its tuple index "{i,j}". */
static int leaf_name(const ts_shape_t *s, int want, int *seen, char *path, size_t cap, size_t len) {
  if (s->elem != TS_TUPLE) return (*seen)++ == want;
  for (int i = 0; i < s->ntuple; i++) {
    int w = snprintf(path + len, cap - len, len > 1 ? ",%d" : "%d", i);
    if (w < 0 || (size_t)w >= cap - len) return 0;
    if (leaf_name(s->tuple[i], want, seen, path, cap, len + (size_t)w)) return 1;
    path[len] = 0;
  }
  return 0;
}

static void print_leaf_title(const ts_shape_t *root, int k, const ts_array_t *a) {
  char path[256] = "{";
  int seen = 0;
  printf("out%d %s[", k, ts_elem_name(a->elem));
  for (int d = 0; d < a->rank; d++) printf(d ? ",%lld" : "%lld", (long long)a->dims[d]);
  printf("]");
  if (root->elem == TS_TUPLE && leaf_name(root, k, &seen, path, sizeof path - 1, 1)) printf(" %s}", path);
}

/* Whether device `d` must hold a copy of its part of a leaf with sharding
 * sv (maximal: only its device; manual: device-specific data). */
static bool holds_copy(const ts_sharding_value_t *sv, int64_t d) {
  switch (sv->kind) {
  case TS_SHARD_REPLICATED: case TS_SHARD_UNKNOWN: return true;
  case TS_SHARD_MAXIMAL: return d == sv->device;
  case TS_SHARD_TILED:
    for (int k = 0; k < sv->nsubgroups; k++)
      if (sv->subgroups[k] != TS_SUBGROUP_REPLICATED) return false;
    for (int64_t t = 0; t < sv->ntiles; t++)
      if (sv->devices[t] == d) return true;
    return false;
  default: return false;
  }
}

/* Compares every leaf: the assembled output, then each device's copy.
 * Returns the number of mismatching leaves. */
int ts_interp_compare_outputs(const ts_hlo_module_t *m, ts_value_t *want, ts_value_t *got,
                           const ts_sharding_value_t *root_sv, ts_value_t *const *dev_outs, int ndev,
                           double tolerance, ts_status_t *st) {
  int n = ts_value_leaves(want, NULL, 0), bad = 0;
  ts_array_t *w = ts_calloc((size_t)n + 1, sizeof *w), *g = ts_calloc((size_t)n + 1, sizeof *g),
             *dv = ts_calloc((size_t)n + 1, sizeof *dv);
  *st = TS_OK;
  if (!w || !g || !dv) {
    *st = TS_ERR_NOMEM;
    goto done;
  }
  ts_value_leaves(want, w, n);
  ts_value_leaves(got, g, n);
  for (int k = 0; k < n; k++) {
    if (!ts_elem_is_array(w[k].elem)) continue;
    const ts_sharding_value_t *sv = root_sv->kind == TS_SHARD_TUPLE ? root_sv->tuple[k] : root_sv;
    double rtol = is_exact(w[k].elem) ? 0 : tolerance > 0 ? tolerance : rtol_of(w[k].elem);
    double s = is_exact(w[k].elem) ? 0 : max_abs(&w[k]);
    double floor_ = (s > 1 ? s : 1) / 16;
    int64_t zero[MAX_RANK] = {0};
    cmp_t r = {0};
    compare_box(&w[k], zero, &g[k], w[k].dims, floor_, rtol, &r);
    print_leaf_title(m->entry->root->shape, k, &w[k]);
    if (r.nbad) {
      bad++;
      printf(": MISMATCH: %lld of %lld elements differ", (long long)r.nbad, (long long)ts_array_count(&w[k]));
      if (!is_exact(w[k].elem)) printf(", max relative error %.3g > %.3g", r.worst, rtol);
      printf("; worst at ");
      print_worst(&r, &g[k], &w[k]);
      printf("\n");
      continue;
    }
    if (is_exact(w[k].elem)) printf(": match (exact)");
    else printf(": match, max relative error %.3g (tolerance %.3g)", r.any ? r.worst : 0.0, rtol);
    /* The copies the assembly did not read must agree too. */
    cmp_t worst = {0};
    int64_t worst_dev = -1;
    for (int d = 0; d < ndev; d++) {
      if (!holds_copy(sv, d)) continue;
      int64_t off[MAX_RANK], lim[MAX_RANK], ext[MAX_RANK];
      ts_shape_t full = {.elem = w[k].elem, .rank = w[k].rank, .dims = (int64_t *)w[k].dims};
      if (ts_value_leaves(dev_outs[d], dv, n) != n || dv[k].rank != w[k].rank ||
          ts_sharding_shard(sv, &full, d, off, lim) != TS_OK) {
        *st = TS_ERR_INTERNAL;
        goto done;
      }
      for (int j = 0; j < w[k].rank; j++) ext[j] = lim[j] - off[j];
      cmp_t r2 = {0};
      compare_box(&w[k], off, &dv[k], ext, floor_, rtol, &r2);
      if (r2.nbad && (worst_dev < 0 || r2.worst > worst.worst)) {
        worst = r2;
        worst_dev = d;
      }
    }
    if (worst_dev >= 0) {
      bad++;
      ts_value_leaves(dev_outs[worst_dev], dv, n);
      printf("; but MISMATCH on device %lld's copy: %lld elements differ; worst at ", (long long)worst_dev,
             (long long)worst.nbad);
      print_worst(&worst, &dv[k], &w[k]);
    }
    printf("\n");
  }
done:
  ts_free(w);
  ts_free(g);
  ts_free(dv);
  return bad;
}

