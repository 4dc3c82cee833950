/* Unit tests of ts_interp_shard_value / ts_interp_unshard_values: shard
 * contents worked out by hand for two cases, and shard-then-assemble is the
 * identity on even and uneven shapes, partial replication, replicated,
 * maximal and tuple values. */
#include "ts_interp.h"
#include "ts_sharding.h"

#include "ts_test.h"

#include <stdlib.h>
#include <string.h>

static ts_arena_t *A;

/* An array shape of `elem` from "5,3" ("" is a scalar). */
static ts_shape_t *shp(ts_elem_t elem, const char *dims) {
  ts_shape_t *s = ts_arena_alloc(A, sizeof *s);
  s->elem = elem;
  s->dims = ts_arena_alloc(A, sizeof(int64_t) * 16);
  for (const char *p = dims; *p;) {
    s->dims[s->rank++] = strtoll(p, (char **)&p, 10);
    if (*p == ',') p++;
  }
  return s;
}

static ts_shape_t *tup2(ts_shape_t *a, ts_shape_t *b) {
  ts_shape_t *s = ts_arena_alloc(A, sizeof *s);
  s->elem = TS_TUPLE;
  s->ntuple = 2;
  s->tuple = ts_arena_alloc(A, 2 * sizeof *s->tuple);
  s->tuple[0] = a;
  s->tuple[1] = b;
  return s;
}

static ts_sharding_value_t *S(const char *text, const ts_shape_t *shape) {
  ts_sharding_value_t *v = NULL;
  if (ts_sharding_parse(A, text, shape, &v, NULL) != TS_OK) {
    fprintf(stderr, "FAIL: sharding %s does not build\n", text);
    failures++;
  }
  return v;
}

/* Element k of every leaf = 1000 * leaf + k + 1 (never 0, so padding shows). */
static ts_value_t *filled(const ts_shape_t *shape) {
  ts_value_t *v = ts_value_new(shape);
  ts_array_t leaves[8];
  int n = ts_value_leaves(v, leaves, 8);
  for (int l = 0; l < n; l++)
    for (int64_t k = 0; k < ts_array_count(&leaves[l]); k++) ts_store_i(leaves[l].elem, leaves[l].data, k, 1000 * l + k + 1);
  return v;
}

static bool same_values(ts_value_t *x, ts_value_t *y) {
  ts_array_t a[8], b[8];
  int n = ts_value_leaves(x, a, 8);
  if (ts_value_leaves(y, b, 8) != n) return false;
  for (int l = 0; l < n; l++)
    if (a[l].elem != b[l].elem || ts_array_bytes(&a[l]) != ts_array_bytes(&b[l]) ||
        memcmp(a[l].data, b[l].data, ts_array_bytes(&a[l])) != 0)
      return false;
  return true;
}

static void expect_s32_at(ts_value_t *v, const int32_t *want, int n, int line) {
  if (!v || v->tuple || v->a.elem != TS_S32 || ts_array_count(&v->a) != n ||
      memcmp(v->a.data, want, (size_t)n * 4) != 0) {
    fprintf(stderr, "%s:%d: FAIL: shard contents differ:", __FILE__, line);
    for (int64_t k = 0; v && !v->tuple && k < ts_array_count(&v->a); k++)
      fprintf(stderr, " %d", ((const int32_t *)v->a.data)[k]);
    fprintf(stderr, "\n");
    failures++;
  }
}
#define EXPECT_S32(v, ...) \
  expect_s32_at(v, (const int32_t[]){__VA_ARGS__}, (int)(sizeof((const int32_t[]){__VA_ARGS__}) / 4), __LINE__)

/* Shards `full` for every device (shard shapes from ts_sharding_shard_dims
 * per leaf), assembles them, and expects the original back. `scramble`
 * overwrites the shards the assembly must not read with garbage first. */
static void roundtrip_at(const ts_shape_t *shape, const ts_shape_t *shard_shape, const char *sharding, int ndev,
                         int scramble_dev, int line) {
  ts_sharding_value_t *sv = S(sharding, shape);
  if (!sv) return;
  ts_value_t *full = filled(shape), *shards[16] = {0}, *back = NULL;
  bool ok = true;
  for (int d = 0; d < ndev; d++)
    if (ts_interp_shard_value(full, sv, d, shard_shape, &shards[d]) != TS_OK) ok = false;
  if (ok && scramble_dev >= 0) {
    ts_array_t leaves[8];
    int n = ts_value_leaves(shards[scramble_dev], leaves, 8);
    for (int l = 0; l < n; l++) memset(leaves[l].data, 0x5a, ts_array_bytes(&leaves[l]));
  }
  if (ok && ts_interp_unshard_values(shards, ndev, sv, shape, &back) != TS_OK) ok = false;
  if (!ok || !same_values(full, back)) {
    fprintf(stderr, "%s:%d: FAIL: shard/unshard under %s is not the identity%s\n", __FILE__, line, sharding,
            ok ? "" : " (an error)");
    failures++;
  }
  for (int d = 0; d < ndev; d++) ts_value_unref(shards[d]);
  ts_value_unref(full);
  ts_value_unref(back);
}
#define ROUNDTRIP(shape, shard_shape, sharding, ndev, scramble) \
  roundtrip_at(shape, shard_shape, sharding, ndev, scramble, __LINE__)

/* Hand-computed: s32[5,3] holding 1..15 row-major over 2 row tiles: chunk
 * ceil(5/2) = 3 rows; device 0 rows 0-2, device 1 rows 3-4 and one padding
 * row of zeros. */
static void test_uneven_rows(void) {
  ts_shape_t *full_s = shp(TS_S32, "5,3"), *shard_s = shp(TS_S32, "3,3");
  ts_sharding_value_t *sv = S("{devices=[2,1]0,1}", full_s);
  ts_value_t *full = filled(full_s), *d0 = NULL, *d1 = NULL;
  EXPECT_EQ(ts_interp_shard_value(full, sv, 0, shard_s, &d0), TS_OK);
  EXPECT_EQ(ts_interp_shard_value(full, sv, 1, shard_s, &d1), TS_OK);
  EXPECT_S32(d0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  EXPECT_S32(d1, 10, 11, 12, 13, 14, 15, 0, 0, 0);
  ts_value_unref(d0);
  ts_value_unref(d1);
  /* A shard shape too small for the device's part is refused. */
  EXPECT(ts_interp_shard_value(full, sv, 0, shp(TS_S32, "2,3"), &d0) == TS_ERR_INVALID_ARGUMENT && !d0);
  /* So is a device the sharding does not name. */
  EXPECT(ts_interp_shard_value(full, sv, 2, shard_s, &d0) == TS_ERR_INVALID_ARGUMENT && !d0);
  ts_value_unref(full);
}

/* Hand-computed: s32[3,3] holding 1..9 over a 2x2 tile grid with devices
 * 3,2,1,0 (row-major): tiles are 2x2 (ceil(3/2)). Device 3 holds tile (0,0):
 * rows 0-1, cols 0-1; device 0 tile (1,1): row 2, col 2 and padding. */
static void test_permuted_grid(void) {
  ts_shape_t *full_s = shp(TS_S32, "3,3"), *shard_s = shp(TS_S32, "2,2");
  ts_sharding_value_t *sv = S("{devices=[2,2]3,2,1,0}", full_s);
  ts_value_t *full = filled(full_s), *v = NULL;
  EXPECT_EQ(ts_interp_shard_value(full, sv, 3, shard_s, &v), TS_OK);
  EXPECT_S32(v, 1, 2, 4, 5);
  ts_value_unref(v);
  EXPECT_EQ(ts_interp_shard_value(full, sv, 2, shard_s, &v), TS_OK);
  EXPECT_S32(v, 3, 0, 6, 0);
  ts_value_unref(v);
  EXPECT_EQ(ts_interp_shard_value(full, sv, 0, shard_s, &v), TS_OK);
  EXPECT_S32(v, 9, 0, 0, 0);
  ts_value_unref(v);
  ts_value_unref(full);
}

static void test_roundtrips(void) {
  /* even and uneven tilings */
  ROUNDTRIP(shp(TS_F32, "4,6"), shp(TS_F32, "2,3"), "{devices=[2,2]<=[4]}", 4, -1);
  ROUNDTRIP(shp(TS_F32, "5,7"), shp(TS_F32, "3,3"), "{devices=[2,3]<=[3,2]T(1,0)}", 6, -1);
  ROUNDTRIP(shp(TS_S32, "5"), shp(TS_S32, "2"), "{devices=[4]0,2,1,3}", 4, -1);
  ROUNDTRIP(shp(TS_S8, "3,1,5"), shp(TS_S8, "1,1,5"), "{devices=[4,1,1]<=[4]}", 4, -1); /* an empty shard */
  ROUNDTRIP(shp(TS_BF16, "6,2"), shp(TS_BF16, "2,2"), "{devices=[3,1]<=[3]}", 3, -1);
  /* partial replication: devices 1 and 3 are replicas of 0 and 2 and are
   * not read (scrambled: still the identity) */
  ROUNDTRIP(shp(TS_F32, "6,4"), shp(TS_F32, "3,4"), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", 4, 1);
  /* replicated: device 0 is read; maximal: only its device */
  ROUNDTRIP(shp(TS_F32, "3,2"), shp(TS_F32, "3,2"), "{replicated}", 2, 1);
  ROUNDTRIP(shp(TS_S32, ""), shp(TS_S32, ""), "{replicated}", 3, 2);
  ROUNDTRIP(shp(TS_F32, "3,2"), shp(TS_F32, "3,2"), "{maximal device=1}", 2, 0);
  /* tuples: one sharding per leaf */
  ROUNDTRIP(tup2(shp(TS_F32, "5,3"), shp(TS_S32, "2")), tup2(shp(TS_F32, "3,3"), shp(TS_S32, "2")),
            "{{devices=[2,1]0,1}, {replicated}}", 2, -1);
}

int main(void) {
  A = ts_arena_create();
  test_uneven_rows();
  test_permuted_grid();
  test_roundtrips();
  ts_arena_destroy(A);
  ts_interp_release_buffers();
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures != 0;
}
