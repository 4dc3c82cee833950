/* Shared inside sharding/: the canonicalising constructor and array helpers. */
#ifndef TS_SHARDING_INTERNAL_H
#define TS_SHARDING_INTERNAL_H

#include "ts_sharding.h"

/* Tile-assignment ranks above this are rejected (XLA's arrays are far
 * smaller); it keeps index scratch on the stack. */
#define SH_MAX_RANK 64

/* Device counts up to this keep per-call scratch on the stack (2 x 2 KiB). */
#define SH_STACK_DEVICES 256

/* Values whose device array is 0..n-1 with n up to this share one
 * read-only array (value.c) for their devices and device -> tile lookup. */
#define SH_IOTA_DEVICES 1024

/* Builds a canonical TILED (or collapsed) value from a tile-assignment
 * array. Inputs are not retained. Checks device ids (>= 0, unique). */
ts_status_t sh_make_tiled(ts_arena_t *a, int ndims, const int64_t *dims, const int64_t *devices, int nsub,
                          const ts_subgroup_t *sub, ts_sharding_value_t **out);

/* dst = src (shape dims, rank r) transposed by perm: dst dim i is src dim
 * perm[i]. dst must not alias src. */
void sh_transpose(int r, const int64_t *dims, const int64_t *src, const int *perm, int64_t *dst);

/* Whether transposing by perm leaves a row-major array of shape dims as it
 * is: the dims of size > 1 keep their relative order. */
bool sh_perm_moves_nothing(int r, const int64_t *dims, const int *perm);

/* Row-major flat index <-> multi-index. */
int64_t sh_flat(int r, const int64_t *dims, const int64_t *index);
void sh_unflat(int r, const int64_t *dims, int64_t flat, int64_t *index);

int64_t sh_product(int n, const int64_t *v);

/* qsort/bsearch order on the first int64_t of each element: plain ids, or
 * (id, payload) pairs sorted by id. */
int sh_cmp_i64(const void *x, const void *y);

/* Appends the array (and token) leaves of a possibly nested tuple shape to
 * out[*n...], in leaf order; out needs ts_shape_leaf_count(s) entries. */
void sh_collect_leaves(const ts_shape_t *s, const ts_shape_t **out, int *n);

/* Arena copies; NULL on OOM (n == 0 gives a non-NULL pointer). */
int64_t *sh_dup(ts_arena_t *a, const int64_t *v, int64_t n);
int64_t *sh_alloc(ts_arena_t *a, int64_t n);


#endif
