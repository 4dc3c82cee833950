/* The value back to syntax and text: XLA's canonical spelling, with the
 * iota form (`<=[dims]T(perm)`, TileAssignment's IotaTileAssignment) when
 * the device array is a transposed iota. */
#include "sharding_internal.h"

#include <string.h>

/* Peels the device array from the minor end: each level is the longest run
 * devices[block*j] == j*stride. A transposed iota with merged reshape dims
 * has exactly these runs (two adjacent dims whose strides continue each
 * other are one merged dim), so the greedy split is its canonical form;
 * then every element is checked and the strides must form a mixed radix. */
bool ts_sharding_iota_form(const int64_t *devices, int64_t n, int *rank, int64_t *reshape, int64_t *perm) {
  if (!devices || n < 1 || devices[0] != 0) return false;
  int64_t len[SH_MAX_RANK], stride[SH_MAX_RANK]; /* level 0 is minor-most */
  int m = 0;
  int64_t block = 1;
  while (block < n) {
    int64_t s = devices[block], l = 1;
    if (s <= 0 || m == SH_MAX_RANK) return false;
    while (block * l < n && devices[block * l] == l * s) l++;
    if ((n / block) % l != 0) return false;
    len[m] = l;
    stride[m] = s;
    m++;
    block *= l;
  }
  if (m == 0) { /* one device */
    len[0] = 1;
    stride[0] = 1;
    m = 1;
  }
  int64_t idx[SH_MAX_RANK] = {0}, off = 0;
  for (int64_t k = 0; k < n; k++) {
    if (devices[k] != off) return false;
    for (int j = 0; j < m; j++) { /* odometer, level 0 fastest */
      idx[j]++;
      off += stride[j];
      if (idx[j] < len[j]) break;
      off -= idx[j] * stride[j];
      idx[j] = 0;
    }
  }
  /* Levels by stride descending are the reshape dims, major first. */
  int order[SH_MAX_RANK];
  for (int j = 0; j < m; j++) order[j] = j;
  for (int j = 1; j < m; j++)
    for (int i = j; i > 0 && stride[order[i - 1]] < stride[order[i]]; i--) {
      int t = order[i];
      order[i] = order[i - 1];
      order[i - 1] = t;
    }
  int64_t expect = 1;
  for (int i = m - 1; i >= 0; i--) {
    if (stride[order[i]] != expect) return false;
    expect *= len[order[i]];
  }
  *rank = m;
  for (int i = 0; i < m; i++) reshape[i] = len[order[i]];
  /* Transposed dim j (major first) is level m-1-j. */
  for (int j = 0; j < m; j++)
    for (int i = 0; i < m; i++)
      if (order[i] == m - 1 - j) perm[j] = i;
  return true;
}

static ts_status_t list(ts_arena_t *a, ts_i64_list_t *l, const int64_t *v, int64_t n) {
  l->n = (int)n;
  l->v = sh_dup(a, v, n);
  return l->v ? TS_OK : TS_ERR_NOMEM;
}

ts_status_t ts_sharding_to_syntax(ts_arena_t *a, const ts_sharding_value_t *v, ts_sharding_t **out) {
  if (!a || !v || !out) return TS_ERR_INVALID_ARGUMENT;
  ts_sharding_t *s = ts_arena_alloc(a, sizeof *s);
  if (!s) return TS_ERR_NOMEM;
  *out = s;
  s->kind = v->kind;
  s->device = v->device;
  s->shard_group = v->shard_group;
  s->shard_group_id = v->shard_group_id;
  if (v->kind == TS_SHARD_TUPLE) {
    s->ntuple = v->ntuple;
    s->tuple = ts_arena_alloc(a, sizeof *s->tuple * (size_t)(v->ntuple ? v->ntuple : 1));
    if (!s->tuple) return TS_ERR_NOMEM;
    for (int k = 0; k < v->ntuple; k++) TS_CHECK(ts_sharding_to_syntax(a, v->tuple[k], &s->tuple[k]));
    return TS_OK;
  }
  if (v->kind != TS_SHARD_TILED) return TS_OK;
  TS_CHECK(list(a, &s->tile_dims, v->dims, v->ndims));
  TS_CHECK(list(a, &s->devices, v->devices, v->ntiles));
  int rank;
  int64_t reshape[SH_MAX_RANK], perm[SH_MAX_RANK];
  if (ts_sharding_iota_form(v->devices, v->ntiles, &rank, reshape, perm)) {
    s->iota = true;
    TS_CHECK(list(a, &s->iota_reshape, reshape, rank));
    if (rank > 1) TS_CHECK(list(a, &s->iota_perm, perm, rank));
  }
  if (v->nsubgroups == 1 && v->subgroups[0] == TS_SUBGROUP_REPLICATED) {
    s->last_tile_dim_replicate = true;
  } else if (v->nsubgroups) {
    s->nsubgroups = v->nsubgroups;
    s->subgroups = ts_arena_alloc(a, sizeof *s->subgroups * (size_t)v->nsubgroups);
    if (!s->subgroups) return TS_ERR_NOMEM;
    memcpy(s->subgroups, v->subgroups, sizeof *s->subgroups * (size_t)v->nsubgroups);
  }
  return TS_OK;
}

void ts_sharding_value_print(ts_buf_t *b, const ts_sharding_value_t *v) {
  ts_arena_t *a = ts_arena_create();
  ts_sharding_t *s = NULL;
  if (!a || ts_sharding_to_syntax(a, v, &s) != TS_OK)
    b->oom = true;
  else
    ts_sharding_print(b, s);
  ts_arena_destroy(a);
}
