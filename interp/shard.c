/* Cutting a full value into one device's shard and assembling the devices'
 * shards back, under a sharding (GSPMD's layout of data on devices: tile k
 * of a dimension of size N over t tiles covers [k*c, (k+1)*c) with
 * c = ceil(N/t), clipped; shards are padded to c). */
#include "interp_internal.h"
#include "ts_sharding.h"

#include <stdlib.h>

/* Copies the box of extent ext[] from src (at soff[]) to dst (at doff[]),
 * one memcpy per innermost row. */
static void copy_box(size_t esize, int rank, const int64_t *ext, const ts_array_t *src, const int64_t *soff,
                     ts_array_t *dst, const int64_t *doff) {
  int64_t ss[TS_MAX_RANK], ds[TS_MAX_RANK], idx[TS_MAX_RANK] = {0};
  for (int k = 0; k < rank; k++)
    if (ext[k] <= 0) return;
  if (rank == 0) {
    memcpy(dst->data, src->data, esize);
    return;
  }
  ts_strides(rank, src->dims, ss);
  ts_strides(rank, dst->dims, ds);
  size_t row = (size_t)ext[rank - 1] * esize;
  do {
    int64_t so = soff[rank - 1], dof = doff[rank - 1];
    for (int k = 0; k < rank - 1; k++) {
      so += (soff[k] + idx[k]) * ss[k];
      dof += (doff[k] + idx[k]) * ds[k];
    }
    memcpy((char *)dst->data + (size_t)dof * esize, (const char *)src->data + (size_t)so * esize, row);
  } while (ts_index_next(rank - 1, ext, idx));
}

/* The sharding of array leaf k. */
static const ts_sharding_value_t *leaf_sharding(const ts_sharding_value_t *sv, int k, int nleaves) {
  if (sv->kind != TS_SHARD_TUPLE) return sv;
  return k < sv->ntuple && sv->ntuple == nleaves ? sv->tuple[k] : NULL;
}

/* The array leaves of a value in a new array (free with ts_free). */
static ts_status_t leaves_of(ts_value_t *v, ts_array_t **out, int *n) {
  *n = ts_value_leaves(v, NULL, 0);
  *out = ts_calloc((size_t)*n + 1, sizeof **out);
  if (!*out) return TS_ERR_NOMEM;
  ts_value_leaves(v, *out, *n);
  return TS_OK;
}

/* [offset, limit) of `device`'s part of array `a` under sv. */
static ts_status_t part_of(const ts_sharding_value_t *sv, const ts_array_t *a, int64_t device, int64_t *off,
                           int64_t *lim) {
  if (sv->kind == TS_SHARD_UNREDUCED || sv->kind == TS_SHARD_TUPLE) return TS_ERR_UNSUPPORTED;
  if (sv->kind == TS_SHARD_TILED && sv->data_rank != a->rank) return TS_ERR_INVALID_ARGUMENT;
  ts_shape_t shape = {.elem = a->elem, .rank = a->rank, .dims = (int64_t *)a->dims};
  return ts_sharding_shard(sv, &shape, device, off, lim);
}

ts_status_t ts_interp_shard_value(const ts_value_t *full, const ts_sharding_value_t *sharding, int64_t device,
                                  const ts_shape_t *shard_shape, ts_value_t **out) {
  ts_array_t *src = NULL, *dst = NULL;
  int nsrc = 0, ndst = 0;
  ts_status_t st = TS_OK;
  *out = ts_value_new(shard_shape);
  if (!*out) return TS_ERR_NOMEM;
  TS_CHECK_GOTO(leaves_of((ts_value_t *)full, &src, &nsrc), st, done);
  TS_CHECK_GOTO(leaves_of(*out, &dst, &ndst), st, done);
  if (nsrc != ndst) {
    st = TS_ERR_INVALID_ARGUMENT;
    goto done;
  }
  for (int k = 0; k < nsrc; k++) {
    const ts_sharding_value_t *sv = leaf_sharding(sharding, k, nsrc);
    int64_t off[TS_MAX_RANK], lim[TS_MAX_RANK], ext[TS_MAX_RANK], zero[TS_MAX_RANK] = {0};
    if (!sv || src[k].elem != dst[k].elem || src[k].rank != dst[k].rank || src[k].rank > TS_MAX_RANK) {
      st = TS_ERR_INVALID_ARGUMENT;
      goto done;
    }
    if (!ts_elem_is_array(src[k].elem)) continue; /* tokens carry nothing */
    TS_CHECK_GOTO(part_of(sv, &src[k], device, off, lim), st, done);
    for (int d = 0; d < src[k].rank; d++) {
      ext[d] = lim[d] - off[d];
      if (ext[d] > dst[k].dims[d]) {
        st = TS_ERR_INVALID_ARGUMENT; /* the shard shape is too small */
        goto done;
      }
    }
    copy_box((size_t)ts_elem_storage_bytes(src[k].elem), src[k].rank, ext, &src[k], off, &dst[k], zero);
  }
done:
  ts_free(src);
  ts_free(dst);
  if (st != TS_OK) {
    ts_value_unref(*out);
    *out = NULL;
  }
  return st;
}

/* Places device `dev`'s part of one leaf into the full array. */
static ts_status_t place(const ts_sharding_value_t *sv, int64_t dev, ts_value_t *const *per_device, int ndev,
                         int leaf, ts_array_t *full) {
  int64_t off[TS_MAX_RANK], lim[TS_MAX_RANK], ext[TS_MAX_RANK], zero[TS_MAX_RANK] = {0};
  if (dev < 0 || dev >= ndev) return TS_ERR_INVALID_ARGUMENT;
  ts_array_t *src = NULL;
  int nsrc = 0;
  ts_status_t st;
  TS_CHECK(leaves_of(per_device[dev], &src, &nsrc));
  const ts_array_t *s = leaf < nsrc ? &src[leaf] : NULL;
  if (!s || s->elem != full->elem || s->rank != full->rank) {
    st = TS_ERR_INVALID_ARGUMENT;
    goto done;
  }
  TS_CHECK_GOTO(part_of(sv, full, dev, off, lim), st, done);
  for (int d = 0; d < full->rank; d++) {
    ext[d] = lim[d] - off[d];
    if (ext[d] > s->dims[d]) {
      st = TS_ERR_INVALID_ARGUMENT;
      goto done;
    }
  }
  copy_box((size_t)ts_elem_storage_bytes(full->elem), full->rank, ext, s, zero, full, off);
done:
  ts_free(src);
  return st;
}

ts_status_t ts_interp_unshard_values(ts_value_t *const *per_device, int ndev, const ts_sharding_value_t *sharding,
                                     const ts_shape_t *full_shape, ts_value_t **out) {
  ts_array_t *dst = NULL;
  int n = 0;
  ts_status_t st = TS_OK;
  *out = NULL;
  if (ndev < 1) return TS_ERR_INVALID_ARGUMENT;
  *out = ts_value_new(full_shape);
  if (!*out) return TS_ERR_NOMEM;
  TS_CHECK_GOTO(leaves_of(*out, &dst, &n), st, done);
  for (int k = 0; k < n; k++) {
    const ts_sharding_value_t *sv = leaf_sharding(sharding, k, n);
    if (!sv || dst[k].rank > TS_MAX_RANK) {
      st = TS_ERR_INVALID_ARGUMENT;
      goto done;
    }
    if (!ts_elem_is_array(dst[k].elem)) continue;
    switch (sv->kind) {
    case TS_SHARD_MAXIMAL: /* only the named device holds it */
      TS_CHECK_GOTO(place(sv, sv->device, per_device, ndev, k, &dst[k]), st, done);
      break;
    case TS_SHARD_TILED:
      /* Each tile once: from the device whose subgroup indices are all 0
       * (its replicas hold the same data). */
      for (int64_t t = 0; t < sv->ntiles; t++) {
        int64_t rest = t, sub = 0;
        for (int d = sv->ndims - 1; d >= sv->data_rank; d--) {
          sub += rest % sv->dims[d];
          rest /= sv->dims[d];
        }
        if (sub == 0) TS_CHECK_GOTO(place(sv, sv->devices[t], per_device, ndev, k, &dst[k]), st, done);
      }
      break;
    case TS_SHARD_REPLICATED:
    case TS_SHARD_MANUAL:
    case TS_SHARD_UNKNOWN: /* every device holds the whole array */
      TS_CHECK_GOTO(place(sv, 0, per_device, ndev, k, &dst[k]), st, done);
      break;
    default: st = TS_ERR_UNSUPPORTED; goto done; /* UNREDUCED: partial sums */
    }
  }
done:
  ts_free(dst);
  if (st != TS_OK) {
    ts_value_unref(*out);
    *out = NULL;
  }
  return st;
}
