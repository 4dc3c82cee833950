/* The sharding value: construction from the parsed syntax, canonical form
 * (hlo_text_format.md 8.3, XLA's HloSharding::Subgroup / PartialTile) and
 * equality. */
#include "sharding_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- small helpers shared by the module ---- */

int64_t sh_product(int n, const int64_t *v) {
  int64_t p = 1;
  for (int k = 0; k < n; k++) p *= v[k];
  return p;
}

int64_t *sh_alloc(ts_arena_t *a, int64_t n) {
  return ts_arena_alloc(a, sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
}

int64_t *sh_dup(ts_arena_t *a, const int64_t *v, int64_t n) {
  int64_t *r = sh_alloc(a, n);
  if (r && n > 0) memcpy(r, v, sizeof(int64_t) * (size_t)n);
  return r;
}

int64_t sh_flat(int r, const int64_t *dims, const int64_t *index) {
  int64_t f = 0;
  for (int k = 0; k < r; k++) f = f * dims[k] + index[k];
  return f;
}

void sh_unflat(int r, const int64_t *dims, int64_t flat, int64_t *index) {
  for (int k = r - 1; k >= 0; k--) {
    index[k] = flat % dims[k];
    flat /= dims[k];
  }
}

void sh_transpose(int r, const int64_t *dims, const int64_t *src, const int *perm, int64_t *dst) {
  int64_t stride[SH_MAX_RANK], tdims[SH_MAX_RANK], tstride[SH_MAX_RANK], idx[SH_MAX_RANK];
  int64_t acc = 1;
  for (int i = r - 1; i >= 0; i--) {
    stride[i] = acc;
    acc *= dims[i];
  }
  for (int j = 0; j < r; j++) {
    tdims[j] = dims[perm[j]];
    tstride[j] = stride[perm[j]];
    idx[j] = 0;
  }
  int64_t off = 0;
  for (int64_t k = 0; k < acc; k++) {
    dst[k] = src[off];
    for (int j = r - 1; j >= 0; j--) { /* odometer over the output index */
      idx[j]++;
      off += tstride[j];
      if (idx[j] < tdims[j]) break;
      off -= idx[j] * tstride[j];
      idx[j] = 0;
    }
  }
}

bool sh_perm_moves_nothing(int r, const int64_t *dims, const int *perm) {
  int last = -1;
  for (int k = 0; k < r; k++)
    if (dims[perm[k]] > 1) {
      if (perm[k] < last) return false;
      last = perm[k];
    }
  return true;
}

int sh_cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

void sh_collect_leaves(const ts_shape_t *s, const ts_shape_t **out, int *n) {
  if (s->elem != TS_TUPLE) {
    out[(*n)++] = s;
    return;
  }
  for (int k = 0; k < s->ntuple; k++) sh_collect_leaves(s->tuple[k], out, n);
}

/* ---- the shared iota ---- */

/* 0, 1, ..., SH_IOTA_DEVICES-1, read-only and shared by every value whose
 * device array is the identity (the usual `<=[n]` assignment): such values
 * then hold no O(devices) array of their own, so deriving one costs
 * O(rank) memory whatever the device count. */
#define I1(n) (n)
#define I2(n) I1(n), I1((n) + 1)
#define I4(n) I2(n), I2((n) + 2)
#define I8(n) I4(n), I4((n) + 4)
#define I16(n) I8(n), I8((n) + 8)
#define I32(n) I16(n), I16((n) + 16)
#define I64(n) I32(n), I32((n) + 32)
#define I128(n) I64(n), I64((n) + 64)
#define I256(n) I128(n), I128((n) + 128)
#define I512(n) I256(n), I256((n) + 256)
#define I1024(n) I512(n), I512((n) + 512)
static const int64_t iota_table[SH_IOTA_DEVICES] = {I1024(0)};
_Static_assert(SH_IOTA_DEVICES == 1024, "iota_table is spelled out for 1024 entries");

/* Whether devices[0..n) is 0, 1, ..., n-1 and fits the shared table. */
static bool is_iota(const int64_t *devices, int64_t n) {
  if (devices == iota_table) return true; /* derived from an iota value */
  if (n > SH_IOTA_DEVICES) return false;
  for (int64_t k = 0; k < n; k++)
    if (devices[k] != k) return false;
  return true;
}

/* ---- canonical construction ---- */

static ts_sharding_value_t *new_value(ts_arena_t *a, ts_shard_kind_t kind) {
  ts_sharding_value_t *v = ts_arena_alloc(a, sizeof *v);
  if (v) v->kind = kind;
  return v;
}

/* XLA's order of merged subgroup kinds: by OpSharding::Type with REPLICATED
 * last (MAXIMAL=1 < MANUAL=4 < UNREDUCED=6, REPLICATED). */
static int kind_rank(ts_subgroup_t t) {
  switch (t) {
  case TS_SUBGROUP_MAXIMAL: return 0;
  case TS_SUBGROUP_MANUAL: return 1;
  case TS_SUBGROUP_UNREDUCED: return 2;
  case TS_SUBGROUP_REPLICATED: return 3;
  }
  return 4;
}

/* Whether the n device ids are exactly 0..n-1 in some order: the usual
 * case, where the device -> tile lookup is a direct inverse. */
static bool ids_dense(const int64_t *devices, int64_t n) {
  for (int64_t k = 0; k < n; k++)
    if (devices[k] < 0 || devices[k] >= n) return false;
  return true; /* with unique ids (checked by the caller), a permutation */
}

/* Stores a final canonical tile assignment (arrays copied into the arena,
 * or the shared iota when `iota`) and the device -> tile lookup: the
 * inverse permutation when the ids are dense (the iota is its own),
 * else (device, flat tile index) pairs sorted by device. */
static ts_status_t store_tiled(ts_arena_t *a, int ndims, const int64_t *dims, const int64_t *devices, int nsub,
                               const ts_subgroup_t *sub, bool dense, bool iota, ts_sharding_value_t **out) {
  int64_t n = sh_product(ndims, dims);
  ts_sharding_value_t *v = new_value(a, TS_SHARD_TILED);
  int64_t *d = sh_dup(a, dims, ndims);
  ts_subgroup_t *s = ts_arena_alloc(a, sizeof *s * (size_t)(nsub ? nsub : 1));
  if (!v || !d || !s) return TS_ERR_NOMEM;
  if (nsub) memcpy(s, sub, sizeof *s * (size_t)nsub);
  v->ndims = ndims;
  v->data_rank = ndims - nsub;
  v->nsubgroups = nsub;
  v->dims = d;
  v->subgroups = s;
  v->ntiles = n;
  *out = v;
  if (iota) {
    v->devices = v->tile_of_ = iota_table;
    return TS_OK;
  }
  int64_t *devs = sh_dup(a, devices, n), *lookup = sh_alloc(a, dense ? n : 2 * n);
  if (!devs || !lookup) return TS_ERR_NOMEM;
  v->devices = devs;
  if (dense) {
    for (int64_t k = 0; k < n; k++) lookup[devices[k]] = k;
    v->tile_of_ = lookup;
  } else {
    for (int64_t k = 0; k < n; k++) {
      lookup[2 * k] = devices[k];
      lookup[2 * k + 1] = k;
    }
    qsort(lookup, (size_t)n, 2 * sizeof *lookup, sh_cmp_i64); /* by device */
    v->by_device_ = lookup;
  }
  return TS_OK;
}

/* Sorts the devices of each group of the last dim (the replicated one);
 * groups built from an iota are sorted already. */
static void sort_last_dim_groups(int64_t n, int64_t group, int64_t *devices) {
  for (int64_t g = 0; g < n; g += group) {
    int64_t k = 1;
    while (k < group && devices[g + k - 1] < devices[g + k]) k++;
    if (k < group) qsort(devices + g, (size_t)group, sizeof *devices, sh_cmp_i64);
  }
}

/* Device ids must be >= 0 and unique (scratch: n entries). Dense ids
 * (*dense: all below n) are checked in one pass with scratch as a seen
 * table, others by sorting a copy. */
static bool ids_valid(const int64_t *devices, int64_t n, int64_t *scratch, bool *dense) {
  if ((*dense = ids_dense(devices, n))) {
    memset(scratch, 0, sizeof(int64_t) * (size_t)n);
    for (int64_t k = 0; k < n; k++) {
      if (scratch[devices[k]]) return false;
      scratch[devices[k]] = 1;
    }
    return true;
  }
  memcpy(scratch, devices, sizeof(int64_t) * (size_t)n);
  qsort(scratch, (size_t)n, sizeof *scratch, sh_cmp_i64);
  for (int64_t k = 0; k < n; k++)
    if (scratch[k] < 0 || (k && scratch[k] == scratch[k - 1])) return false;
  return true;
}

/* The canonical dim order (section 8.3): data dims, then the subgroup dims
 * of each kind in kind_rank order (merged into one), then the size-1
 * subgroup dims, which are dropped. perm gets that order of the input
 * dims; merged[] the data dims and one size per kind present, types[] the
 * kinds. Returns the number of kinds. */
static int canonical_order(int data, const int64_t *dims, int nsub, const ts_subgroup_t *sub, int *perm,
                           int64_t *merged, ts_subgroup_t *types) {
  int np = 0, ntypes = 0;
  for (int k = 0; k < data; k++) {
    perm[np++] = k;
    merged[k] = dims[k];
  }
  for (int r = 0; r <= 3; r++) {
    int64_t size = 1;
    for (int k = 0; k < nsub; k++)
      if (kind_rank(sub[k]) == r && dims[data + k] > 1) {
        perm[np++] = data + k;
        size *= dims[data + k];
        types[ntypes] = sub[k];
      }
    if (size > 1) merged[data + ntypes++] = size;
  }
  for (int k = 0; k < nsub; k++)
    if (dims[data + k] == 1) perm[np++] = data + k;
  return ntypes;
}

ts_status_t sh_make_tiled(ts_arena_t *a, int ndims, const int64_t *dims, const int64_t *devices, int nsub,
                          const ts_subgroup_t *sub, ts_sharding_value_t **out) {
  if (ndims < 1 || ndims > SH_MAX_RANK || nsub < 0 || nsub > ndims) return TS_ERR_INVALID_ARGUMENT;
  int64_t n = 1;
  for (int k = 0; k < ndims; k++)
    if (dims[k] <= 0 || __builtin_mul_overflow(n, dims[k], &n) || n > (INT64_C(1) << 32))
      return TS_ERR_INVALID_ARGUMENT;
  for (int k = 0; k < nsub; k++)
    if (kind_rank(sub[k]) > 3) return TS_ERR_INVALID_ARGUMENT;
  int data = ndims - nsub;
  int64_t data_tiles = sh_product(data, dims);
  int perm[SH_MAX_RANK];
  int64_t merged[SH_MAX_RANK];
  ts_subgroup_t types[SH_MAX_RANK];
  int ntypes = canonical_order(data, dims, nsub, sub, perm, merged, types), mrank = data + ntypes;
  bool identity = sh_perm_moves_nothing(ndims, dims, perm); /* the array is already in canonical order */
  /* The common case, an iota already in canonical order: valid, dense and
   * sorted, nothing to copy. */
  bool iota = identity && is_iota(devices, n), dense = true;
  /* Scratch on the stack for the usual device counts: this runs for
   * every derived sharding, so a malloc per call shows in profiles. */
  int64_t local[2 * SH_STACK_DEVICES];
  int64_t *scratch = iota || n <= SH_STACK_DEVICES ? local : ts_malloc(sizeof(int64_t) * (size_t)n * 2);
  if (!scratch) return TS_ERR_NOMEM;
  const int64_t *devs = devices;
  if (!iota) {
    if (!ids_valid(devices, n, scratch, &dense)) {
      if (scratch != local) ts_free(scratch);
      return TS_ERR_INVALID_ARGUMENT;
    }
    int64_t *canon = scratch + n;
    if (identity) memcpy(canon, devices, sizeof(int64_t) * (size_t)n);
    else sh_transpose(ndims, dims, devices, perm, canon);
    if (ntypes && types[ntypes - 1] == TS_SUBGROUP_REPLICATED) sort_last_dim_groups(n, merged[mrank - 1], canon);
    devs = canon;
    iota = is_iota(canon, n);
  }
  ts_status_t st;
  if (ntypes == 1 && data_tiles == 1 && types[0] == TS_SUBGROUP_REPLICATED) {
    st = ts_sharding_simple(a, TS_SHARD_REPLICATED, out);
  } else if (ntypes == 1 && data_tiles == 1 && types[0] == TS_SUBGROUP_MANUAL) {
    st = ts_sharding_simple(a, TS_SHARD_MANUAL, out);
  } else if (ntypes == 0 && n == 1) {
    st = ts_sharding_simple(a, TS_SHARD_REPLICATED, out); /* one device holds everything */
  } else {
    st = store_tiled(a, mrank, merged, devs, ntypes, types, dense, iota, out);
  }
  if (scratch != local) ts_free(scratch);
  return st;
}

ts_status_t ts_sharding_tiled(ts_arena_t *a, int ndims, const int64_t *dims, const int64_t *devices, int nsubgroups,
                              const ts_subgroup_t *subgroups, ts_sharding_value_t **out) {
  if (!a || !dims || !devices || !out || (nsubgroups && !subgroups)) return TS_ERR_INVALID_ARGUMENT;
  return sh_make_tiled(a, ndims, dims, devices, nsubgroups, subgroups, out);
}

ts_status_t ts_sharding_simple(ts_arena_t *a, ts_shard_kind_t kind, ts_sharding_value_t **out) {
  if (!a || !out) return TS_ERR_INVALID_ARGUMENT;
  if (kind != TS_SHARD_REPLICATED && kind != TS_SHARD_MANUAL && kind != TS_SHARD_UNKNOWN &&
      kind != TS_SHARD_UNREDUCED)
    return TS_ERR_INVALID_ARGUMENT;
  if (!(*out = new_value(a, kind))) return TS_ERR_NOMEM;
  return TS_OK;
}

ts_status_t ts_sharding_maximal(ts_arena_t *a, int64_t device, ts_sharding_value_t **out) {
  if (!a || !out || device < 0) return TS_ERR_INVALID_ARGUMENT;
  if (!(*out = new_value(a, TS_SHARD_MAXIMAL))) return TS_ERR_NOMEM;
  (*out)->device = device;
  return TS_OK;
}

ts_status_t ts_sharding_tuple(ts_arena_t *a, int n, ts_sharding_value_t *const *elems, ts_sharding_value_t **out) {
  if (!a || !out || n < 0 || (n && !elems)) return TS_ERR_INVALID_ARGUMENT;
  ts_sharding_value_t *v = new_value(a, TS_SHARD_TUPLE);
  ts_sharding_value_t **t = ts_arena_alloc(a, sizeof *t * (size_t)(n ? n : 1));
  if (!v || !t) return TS_ERR_NOMEM;
  for (int k = 0; k < n; k++) {
    if (!elems[k] || elems[k]->kind == TS_SHARD_TUPLE) return TS_ERR_INVALID_ARGUMENT;
    t[k] = elems[k];
  }
  v->ntuple = n;
  v->tuple = t;
  *out = v;
  return TS_OK;
}

/* ---- from the parsed syntax ---- */

static ts_status_t from_single(ts_arena_t *a, const ts_sharding_t *s, const ts_shape_t *shape,
                               ts_sharding_value_t **out) {
  ts_status_t st;
  switch (s->kind) {
  case TS_SHARD_NAMED: return TS_ERR_UNSUPPORTED;
  case TS_SHARD_TUPLE: return TS_ERR_VERIFY; /* nested */
  case TS_SHARD_MAXIMAL: st = ts_sharding_maximal(a, s->device, out); break;
  case TS_SHARD_TILED: {
    int nsub = s->last_tile_dim_replicate ? 1 : s->nsubgroups;
    ts_subgroup_t rep = TS_SUBGROUP_REPLICATED;
    const ts_subgroup_t *sub = s->last_tile_dim_replicate ? &rep : s->subgroups;
    if (nsub > s->tile_dims.n || s->devices.n != sh_product(s->tile_dims.n, s->tile_dims.v)) return TS_ERR_VERIFY;
    if (shape && shape->elem != TS_TOKEN && shape->rank != s->tile_dims.n - nsub) return TS_ERR_VERIFY;
    if (s->devices.n < 2) return TS_ERR_VERIFY; /* XLA: a single device is `maximal` */
    st = sh_make_tiled(a, s->tile_dims.n, s->tile_dims.v, s->devices.v, nsub, sub, out);
    if (st == TS_ERR_INVALID_ARGUMENT) st = TS_ERR_VERIFY; /* bad ids in user input */
    break;
  }
  default: st = ts_sharding_simple(a, s->kind, out); break;
  }
  if (st == TS_OK && s->shard_group) {
    (*out)->shard_group = s->shard_group;
    (*out)->shard_group_id = s->shard_group_id;
  }
  return st;
}

ts_status_t ts_sharding_from_syntax(ts_arena_t *a, const ts_sharding_t *syn, const ts_shape_t *shape,
                                    ts_sharding_value_t **out) {
  if (!a || !syn || !out) return TS_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (shape && shape->elem == TS_TOKEN) shape = NULL;
  int nleaves = shape && shape->elem == TS_TUPLE ? ts_shape_leaf_count(shape) : 0;
  if (!shape || (shape->elem != TS_TUPLE && syn->kind != TS_SHARD_TUPLE)) {
    if (syn->kind != TS_SHARD_TUPLE) return from_single(a, syn, shape, out);
    /* a tuple sharding kept as written, or on an array: one element */
    if (shape && syn->ntuple != 1) return TS_ERR_VERIFY;
  } else if (syn->kind == TS_SHARD_TUPLE && syn->ntuple != nleaves && !(nleaves == 0 && syn->ntuple == 1)) {
    return TS_ERR_VERIFY; /* an empty tuple takes `{}` or XLA's one element */
  }
  int n = syn->kind == TS_SHARD_TUPLE ? syn->ntuple : (nleaves ? nleaves : 1);
  const ts_shape_t **leaves = ts_malloc(sizeof *leaves * (size_t)(n + nleaves + 1));
  ts_sharding_value_t **elems = ts_malloc(sizeof *elems * (size_t)(n + 1));
  ts_status_t st = TS_OK;
  if (!leaves || !elems) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  int got = 0;
  if (nleaves) sh_collect_leaves(shape, leaves, &got);
  for (int k = 0; k < n; k++) {
    const ts_sharding_t *e = syn->kind == TS_SHARD_TUPLE ? syn->tuple[k] : syn;
    const ts_shape_t *leaf = nleaves ? leaves[k] : (shape && shape->elem != TS_TUPLE ? shape : NULL);
    if (!e) {
      st = TS_ERR_VERIFY;
      goto done;
    }
    TS_CHECK_GOTO(from_single(a, e, leaf, &elems[k]), st, done);
  }
  st = ts_sharding_tuple(a, n, elems, out);
done:
  ts_free(leaves);
  ts_free(elems);
  return st;
}

ts_status_t ts_sharding_parse(ts_arena_t *a, const char *text, const ts_shape_t *shape, ts_sharding_value_t **out,
                              ts_diag_t *diag) {
  if (!a || !text || !out) return TS_ERR_INVALID_ARGUMENT;
  *out = NULL;
  /* A one-instruction module; the sharding is alone on line 4 so located
   * errors show it with the right column. A token takes any sharding. */
  ts_buf_t b = {0};
  ts_buf_printf(&b, "HloModule sharding\nENTRY e {\n  ROOT p = token[] parameter(0), sharding=\n%s\n}\n", text);
  if (b.oom) {
    ts_buf_free(&b);
    return TS_ERR_NOMEM;
  }
  ts_source_t src = {"<sharding>", b.data, b.len};
  ts_diag_t local = {0};
  ts_hlo_module_t *m = NULL;
  ts_status_t st = ts_hlo_parse(&src, NULL, &m, diag ? diag : &local);
  if (st == TS_OK) {
    const ts_hlo_instr_t *p = m->entry && m->entry->root ? m->entry->root : NULL;
    st = p && p->sharding ? ts_sharding_from_syntax(a, p->sharding, shape, out) : TS_ERR_PARSE;
  }
  ts_hlo_module_destroy(m);
  ts_diag_free(&local);
  ts_buf_free(&b);
  return st;
}

/* ---- equality ---- */

bool ts_sharding_equal(const ts_sharding_value_t *x, const ts_sharding_value_t *y) {
  if (x == y) return true;
  if (!x || !y || x->kind != y->kind) return false;
  switch (x->kind) {
  case TS_SHARD_MAXIMAL: return x->device == y->device;
  case TS_SHARD_TUPLE:
    if (x->ntuple != y->ntuple) return false;
    for (int k = 0; k < x->ntuple; k++)
      if (!ts_sharding_equal(x->tuple[k], y->tuple[k])) return false;
    return true;
  case TS_SHARD_TILED:
    return x->ndims == y->ndims && x->nsubgroups == y->nsubgroups &&
           !memcmp(x->dims, y->dims, sizeof *x->dims * (size_t)x->ndims) &&
           !memcmp(x->subgroups, y->subgroups, sizeof *x->subgroups * (size_t)x->nsubgroups) &&
           !memcmp(x->devices, y->devices, sizeof *x->devices * (size_t)x->ntiles);
  default: return true;
  }
}
