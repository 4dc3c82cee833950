/* Arguments and results: seeded random inputs (with index parameters drawn
 * in range), .npy inputs, .npy outputs. */
#include "interp_internal.h"
#include "ts_npy.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

/* ---- random inputs ------------------------------------------------------ */

/* SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014): counter-based here, so element k of parameter
 * p depends only on (seed, p, k) and is the same on every machine. */
static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t draw(uint64_t seed, int64_t param, int64_t k) {
  return mix64(mix64(mix64(seed) ^ (uint64_t)param) ^ (uint64_t)k);
}

/* How far an index value that flows from `i` into an index operand may go:
 * the smallest bound over the uses found, INT64_MAX when none. Follows the
 * ops that carry an index through unchanged in value (convert, reshape,
 * broadcast, copy, slice, concatenate, select, clamp, JAX's negative-index
 * fix-up `select(x < 0, x + n, x)`) and into and out of called
 * computations (`caller` is the call whose callee `i` is in, if any). */
static int64_t index_bound(const ts_hlo_instr_t *i, const ts_hlo_instr_t *caller, int depth) {
  if (depth > 32) return INT64_MAX;
  int64_t best = INT64_MAX;
  /* A callee's result carries the index on past the call. */
  if (i->is_root && caller) best = index_bound(caller, NULL, depth + 1);
  for (int u = 0; u < i->nusers; u++) {
    const ts_hlo_instr_t *user = i->users[u];
    int64_t b = INT64_MAX;
    switch (user->op) {
    case TS_OP_GATHER: {
      if (user->ops[1] != i) break;
      const ts_hlo_attr_t *map = ts_hlo_instr_attr(user, "start_index_map");
      const ts_hlo_attr_t *sizes = ts_hlo_instr_attr(user, "slice_sizes");
      const ts_shape_t *os = user->ops[0]->shape;
      for (int k = 0; map && sizes && k < map->v.list.n; k++) {
        int64_t d = map->v.list.v[k];
        if (d >= 0 && d < os->rank && d < sizes->v.list.n) {
          int64_t lim = os->dims[d] - sizes->v.list.v[d] + 1;
          if (lim < b) b = lim;
        }
      }
      break;
    }
    case TS_OP_SCATTER: {
      int n = (user->nops - 1) / 2;
      if (user->nops < 3 || user->ops[n] != i) break;
      const ts_hlo_attr_t *map = ts_hlo_instr_attr(user, "scatter_dims_to_operand_dims");
      const ts_shape_t *os = user->ops[0]->shape;
      for (int k = 0; map && k < map->v.list.n; k++) {
        int64_t d = map->v.list.v[k];
        if (d >= 0 && d < os->rank && os->dims[d] < b) b = os->dims[d];
      }
      break;
    }
    case TS_OP_DYNAMIC_SLICE:
    case TS_OP_DYNAMIC_UPDATE_SLICE: {
      int first = user->op == TS_OP_DYNAMIC_SLICE ? 1 : 2;
      const ts_shape_t *os = user->ops[0]->shape;
      for (int o = first; o < user->nops; o++) {
        if (user->ops[o] != i) continue;
        int d = o - first;
        int64_t size = user->op == TS_OP_DYNAMIC_SLICE ? user->shape->dims[d] : user->ops[1]->shape->dims[d];
        if (d < os->rank && os->dims[d] - size + 1 < b) b = os->dims[d] - size + 1;
      }
      break;
    }
    case TS_OP_CONVERT: case TS_OP_RESHAPE: case TS_OP_BROADCAST: case TS_OP_COPY: case TS_OP_BITCAST:
    case TS_OP_SLICE: case TS_OP_CONCATENATE: case TS_OP_SELECT: case TS_OP_CLAMP: case TS_OP_ADD:
    case TS_OP_TRANSPOSE:
      if (ts_elem_is_int(user->shape->elem)) b = index_bound(user, caller, depth + 1);
      break;
    case TS_OP_CALL:
      for (int o = 0; o < user->nops && user->ncalled; o++)
        if (user->ops[o] == i && o < user->called[0]->nparams) {
          int64_t c = index_bound(user->called[0]->params[o], user, depth + 1);
          if (c < b) b = c;
        }
      break;
    default: break;
    }
    if (b < best) best = b;
  }
  return best;
}

static void fill_random(ts_array_t *a, uint64_t seed, int64_t param, int64_t bound) {
  int64_t n = ts_array_count(a);
  ts_elem_t e = a->elem;
  if (e == TS_F32) { /* the common case, without the generic store */
    float *f = a->data;
    for (int64_t k = 0; k < n; k++) f[k] = (float)((double)((draw(seed, param, k) >> 11) + 1) * 0x1p-53);
    return;
  }
  for (int64_t k = 0; k < n; k++) {
    uint64_t r = draw(seed, param, k);
    if (e == TS_PRED) {
      ts_store_i(e, a->data, k, (int64_t)(r & 1));
    } else if (ts_elem_is_int(e)) {
      /* Indices in [0, bound); other integers small, so that shifts,
       * powers and divisions stay meaningful. */
      int64_t lo = 0, span = 16;
      if (bound != INT64_MAX) span = bound > 0 ? bound : 1;
      else if (ts_elem_is_signed_int(e)) lo = -8;
      int bits = ts_elem_bits(e);
      if (bits < 6 && ts_elem_is_signed_int(e)) lo = -(1 << (bits - 1)), span = (int64_t)1 << bits;
      else if (bits < 5) span = (int64_t)1 << bits;
      ts_store_i(e, a->data, k, lo + (int64_t)(r % (uint64_t)span));
    } else {
      /* Uniform in (0, 1]: positive, so that sqrt, log and power of
       * random optimizer state (second moments, step counts) stay finite,
       * as they do for real state. */
      double u = (double)((r >> 11) + 1) * 0x1p-53;
      if (ts_elem_is_complex(e)) {
        double v = (double)((mix64(r) >> 11) + 1) * 0x1p-53;
        ts_store_c(e, a->data, k, u, v);
      } else {
        ts_store_f(e, a->data, k, u);
      }
    }
  }
}

ts_status_t ts_interp_random_param(const ts_hlo_module_t *m, uint64_t seed, int p, ts_value_t **out) {
  const ts_hlo_comp_t *e = m->entry;
  ts_value_t *v = ts_value_new(e->params[p]->shape);
  if (!v) return TS_ERR_NOMEM;
  ts_array_t leaves[256];
  int n = ts_value_leaves(v, leaves, 256);
  int64_t bound = index_bound(e->params[p], NULL, 0);
  for (int k = 0; k < n && k < 256; k++) fill_random(&leaves[k], seed, p * 256 + k, bound);
  *out = v;
  return TS_OK;
}

ts_status_t ts_interp_random_args(const ts_hlo_module_t *m, uint64_t seed, ts_value_t **args) {
  const ts_hlo_comp_t *e = m->entry;
  for (int p = 0; p < e->nparams; p++) args[p] = NULL;
  for (int p = 0; p < e->nparams; p++) {
    ts_status_t st = ts_interp_random_param(m, seed, p, &args[p]);
    if (st != TS_OK) {
      for (int q = 0; q < p; q++) {
        ts_value_unref(args[q]);
        args[q] = NULL;
      }
      return st;
    }
  }
  return TS_OK;
}

ts_status_t ts_interp_init_weight(const ts_hlo_module_t *m, uint64_t seed, int p, ts_value_t **out) {
  const ts_hlo_comp_t *e = m->entry;
  ts_value_t *v = ts_value_new(e->params[p]->shape); /* zero-filled: biases and non-float leaves stay 0 */
  if (!v) return TS_ERR_NOMEM;
  ts_array_t leaves[256];
  int n = ts_value_leaves(v, leaves, 256);
  for (int k = 0; k < n && k < 256; k++) {
    ts_array_t *a = &leaves[k];
    if (a->rank < 2 || !ts_elem_is_float(a->elem)) continue;
    /* Uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)], fan_in the leading
     * dimension (weights stored [in, out], as JAX's Dense kernels are). */
    double scale = 1.0 / sqrt((double)a->dims[0]);
    int64_t cnt = ts_array_count(a);
    for (int64_t j = 0; j < cnt; j++) {
      double u = (double)(draw(seed, p * 256 + k, j) >> 11) * 0x1p-53; /* [0, 1) */
      ts_store_f(a->elem, a->data, j, (2 * u - 1) * scale);
    }
  }
  *out = v;
  return TS_OK;
}

/* ---- .npy inputs and outputs -------------------------------------------- */

ts_status_t ts_interp_load_param(const ts_hlo_module_t *m, const char *path, int p, ts_value_t **out,
                                 ts_diag_t *diag) {
  const ts_hlo_instr_t *pi = m->entry->params[p];
  if (!ts_shape_is_array(pi->shape)) {
    ts_diag_plain(diag, "%s: parameter %d (%%%s) is a tuple; only array parameters load from .npy", path, p,
                  pi->name);
    return TS_ERR_INVALID_ARGUMENT;
  }
  ts_npy_array_t a = {0};
  TS_CHECK(ts_npy_read_as(path, pi->shape->elem, &a, diag));
  bool same = a.rank == pi->shape->rank;
  for (int d = 0; same && d < a.rank; d++) same = a.dims[d] == pi->shape->dims[d];
  ts_status_t st = TS_OK;
  if (!same) {
    ts_buf_t want = {0}, got = {0};
    ts_shape_print(&want, pi->shape, false);
    ts_buf_puts(&got, "(");
    for (int d = 0; d < a.rank; d++) ts_buf_printf(&got, d ? ", %lld" : "%lld", (long long)a.dims[d]);
    ts_buf_puts(&got, a.rank == 1 ? ",)" : ")");
    ts_diag_plain(diag, "%s: error: shape %s where parameter %d (%%%s) is %s", path, got.data, p, pi->name,
                  want.data);
    ts_buf_free(&want);
    ts_buf_free(&got);
    st = TS_ERR_PARSE;
  } else {
    ts_value_t *v = ts_value_new(pi->shape);
    if (!v) st = TS_ERR_NOMEM;
    else memcpy(v->a.data, a.data, ts_array_bytes(&v->a));
    *out = v;
  }
  ts_npy_free(&a);
  return st;
}

ts_status_t ts_interp_load_args(const ts_hlo_module_t *m, const char *dir, ts_value_t **args,
                                ts_diag_t *diag) {
  const ts_hlo_comp_t *e = m->entry;
  for (int p = 0; p < e->nparams; p++) args[p] = NULL;
  ts_status_t st = TS_OK;
  for (int p = 0; p < e->nparams && st == TS_OK; p++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/param%d.npy", dir, p);
    st = ts_interp_load_param(m, path, p, &args[p], diag);
  }
  if (st != TS_OK)
    for (int p = 0; p < e->nparams; p++) {
      ts_value_unref(args[p]);
      args[p] = NULL;
    }
  return st;
}

/* out<i>.npy: the names an output set owns in its folder. */
static bool is_output_name(const char *name) {
  if (strncmp(name, "out", 3) != 0 || !isdigit((unsigned char)name[3])) return false;
  const char *p = name + 3;
  while (isdigit((unsigned char)*p)) p++;
  return strcmp(p, ".npy") == 0;
}

ts_status_t ts_interp_check_outputs(const char *dir, ts_diag_t *diag) { return ts_file_set_check(dir, diag); }

ts_status_t ts_interp_write_outputs(const char *dir, ts_value_t *result, ts_diag_t *diag) {
  ts_array_t leaves[4096];
  int n = ts_value_leaves(result, leaves, 4096);
  if (n > 4096) {
    ts_diag_plain(diag, "%d outputs: at most 4096 are written", n);
    return TS_ERR_INVALID_ARGUMENT;
  }
  /* Staged, then put in place as a set: a full disk midway leaves the
   * previous outputs whole, never old and new mixed. */
  ts_file_set_t set;
  TS_CHECK(ts_file_set_open(&set, dir, is_output_name, diag));
  ts_status_t st = TS_OK;
  for (int k = 0; k < n && st == TS_OK; k++) {
    char name[32];
    snprintf(name, sizeof name, "out%d.npy", k);
    ts_atomic_file_t af;
    if ((st = ts_file_set_file(&set, name, &af, diag)) != TS_OK) break;
    st = ts_npy_write_file(af.f, af.path, leaves[k].elem, leaves[k].rank, leaves[k].dims, leaves[k].data, diag);
    ts_status_t cst = ts_atomic_file_close(&af, st == TS_OK, diag);
    if (st == TS_OK) st = cst;
  }
  ts_status_t cst = ts_file_set_close(&set, st == TS_OK, diag);
  return st != TS_OK ? st : cst;
}
