/* Values (reference-counted arrays and tuples) and constants. The array view,
 * element access and the kernel context come from kernels/ts_kernels.h. */
#include "interp_internal.h"

#include <stdlib.h>

/* ---- buffers ------------------------------------------------------------ */

/* Large array buffers are recycled: a step of a training program allocates
 * the same sizes over and over, and fresh pages from the kernel cost more
 * than the kernels' own work (first-touch faults). Per thread, exact sizes,
 * bounded in count and bytes. */
#define CACHE_SLOTS 32
#define CACHE_MIN_BYTES ((size_t)64 << 10)
#define CACHE_MAX_BYTES ((size_t)2 << 30)

static _Thread_local struct {
  size_t size[CACHE_SLOTS];
  void *ptr[CACHE_SLOTS];
  int n;
  size_t bytes;
} cache;

static void *buffer_get(size_t bytes, bool zero) {
  if (bytes >= CACHE_MIN_BYTES)
    for (int k = cache.n - 1; k >= 0; k--)
      if (cache.size[k] == bytes) {
        void *p = cache.ptr[k];
        cache.bytes -= bytes;
        cache.n--;
        cache.size[k] = cache.size[cache.n];
        cache.ptr[k] = cache.ptr[cache.n];
        if (zero) memset(p, 0, bytes);
        return p;
      }
  return zero ? ts_calloc(bytes ? bytes : 1, 1) : ts_malloc(bytes ? bytes : 1);
}

static void buffer_put(void *p, size_t bytes) {
  if (!p) return;
  if (bytes < CACHE_MIN_BYTES || bytes > CACHE_MAX_BYTES) {
    ts_free(p);
    return;
  }
  while (cache.n > 0 && (cache.n == CACHE_SLOTS || cache.bytes + bytes > CACHE_MAX_BYTES)) {
    ts_free(cache.ptr[0]); /* the oldest */
    cache.bytes -= cache.size[0];
    cache.n--;
    memmove(&cache.size[0], &cache.size[1], (size_t)cache.n * sizeof cache.size[0]);
    memmove(&cache.ptr[0], &cache.ptr[1], (size_t)cache.n * sizeof cache.ptr[0]);
  }
  cache.size[cache.n] = bytes;
  cache.ptr[cache.n++] = p;
  cache.bytes += bytes;
}

void ts_interp_release_buffers(void) {
  for (int k = 0; k < cache.n; k++) ts_free(cache.ptr[k]);
  cache.n = 0;
  cache.bytes = 0;
}

/* ---- values ------------------------------------------------------------- */

static ts_value_t *value_new(const ts_shape_t *shape, bool zero);

ts_value_t *ts_value_new(const ts_shape_t *shape) { return value_new(shape, true); }
ts_value_t *ts_value_new_uninit(const ts_shape_t *shape) { return value_new(shape, false); }

static size_t value_bytes(const ts_value_t *v) {
  return ts_elem_is_array(v->a.elem) ? ts_array_bytes(&v->a) : 0;
}

static ts_value_t *value_new(const ts_shape_t *shape, bool zero) {
  ts_value_t *v = ts_calloc(1, sizeof *v);
  if (!v) return NULL;
  atomic_init(&v->refs, 1);
  v->shape = shape;
  if (shape->elem == TS_TUPLE) {
    v->ntuple = shape->ntuple;
    v->tuple = ts_calloc((size_t)(shape->ntuple ? shape->ntuple : 1), sizeof *v->tuple);
    if (!v->tuple) goto oom;
    for (int i = 0; i < shape->ntuple; i++)
      if (!(v->tuple[i] = value_new(shape->tuple[i], zero))) goto oom;
    return v;
  }
  v->a.elem = shape->elem;
  v->a.rank = shape->rank;
  v->a.dims = shape->dims;
  /* Tokens and empty arrays still get a non-NULL pointer. */
  v->a.data = buffer_get(value_bytes(v), zero);
  if (!v->a.data) goto oom;
  return v;
oom:
  ts_value_unref(v);
  return NULL;
}

ts_value_t *ts_value_new_tuple(const ts_shape_t *shape, ts_value_t **elems) {
  ts_value_t *v = ts_calloc(1, sizeof *v);
  ts_value_t **t = ts_calloc((size_t)(shape->ntuple ? shape->ntuple : 1), sizeof *t);
  if (!v || !t) {
    ts_free(v);
    ts_free(t);
    for (int i = 0; i < shape->ntuple; i++) ts_value_unref(elems[i]);
    return NULL;
  }
  atomic_init(&v->refs, 1);
  v->shape = shape;
  v->ntuple = shape->ntuple;
  v->tuple = t;
  for (int i = 0; i < shape->ntuple; i++) t[i] = elems[i];
  return v;
}

ts_value_t *ts_value_ref(ts_value_t *v) {
  if (v) atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
  return v;
}

void ts_value_unref(ts_value_t *v) {
  if (!v || atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1) return;
  if (v->tuple) {
    for (int i = 0; i < v->ntuple; i++) ts_value_unref(v->tuple[i]);
    ts_free(v->tuple);
  }
  if (v->a.data) buffer_put(v->a.data, value_bytes(v));
  ts_free(v);
}

static int leaves(ts_value_t *v, ts_array_t *out, int max, int n) {
  if (!v->tuple) {
    if (n < max) out[n] = v->a;
    return n + 1;
  }
  for (int i = 0; i < v->ntuple; i++) n = leaves(v->tuple[i], out, max, n);
  return n;
}

int ts_value_leaves(ts_value_t *v, ts_array_t *out, int max) { return leaves(v, out, max, 0); }

static ts_status_t fill_literal(const ts_literal_t *lit, ts_value_t *v) {
  if (lit->ntuple || v->tuple) {
    if (lit->ntuple != v->ntuple) return TS_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < lit->ntuple; i++) TS_CHECK(fill_literal(lit->tuple[i], v->tuple[i]));
    return TS_OK;
  }
  if (lit->elided || !ts_elem_is_array(v->a.elem)) return TS_OK; /* zeros */
  int64_t n = ts_array_count(&v->a);
  if (lit->count != n) return TS_ERR_INVALID_ARGUMENT;
  ts_elem_t e = v->a.elem;
  if (ts_elem_is_complex(e)) {
    for (int64_t k = 0; k < n; k++) ts_store_c(e, v->a.data, k, lit->f[2 * k], lit->f[2 * k + 1]);
  } else if (lit->f) {
    for (int64_t k = 0; k < n; k++) ts_store_f(e, v->a.data, k, lit->f[k]);
  } else if (lit->i) {
    for (int64_t k = 0; k < n; k++) ts_store_i(e, v->a.data, k, lit->i[k]);
  }
  return TS_OK;
}

ts_status_t ts_value_from_literal(const ts_literal_t *lit, ts_value_t **out) {
  *out = ts_value_new(lit->shape);
  if (!*out) return TS_ERR_NOMEM;
  ts_status_t st = fill_literal(lit, *out);
  if (st != TS_OK) {
    ts_value_unref(*out);
    *out = NULL;
  }
  return st;
}
