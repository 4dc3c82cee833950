/* Unit tests of sharding/: queries: shard extents, tile lookup, device
 * groups (8.3). Every golden is worked out by hand (the derivation is in the
 * comment next to it) or is an example from hlo_text_format.md sections 8.3
 * and 9. */
#include "sharding_test.h"

/* ---- 8.3: queries ---- */

static void test_shard_extents(void) {
  int64_t o[4], l[4], d[4];
  /* N=10 over 4 tiles: c=3 -> [0,3),[3,6),[6,9),[9,10) */
  ts_sharding_value_t *v = S("{devices=[4]0,1,2,3}", "10");
  const ts_shape_t *s10 = shp("10");
  const int64_t want10[4][2] = {{0, 3}, {3, 6}, {6, 9}, {9, 10}};
  for (int k = 0; v && k < 4; k++) {
    EXPECT_EQ(ts_sharding_shard(v, s10, k, o, l), TS_OK);
    EXPECT(o[0] == want10[k][0] && l[0] == want10[k][1]);
  }
  EXPECT(v && ts_sharding_shard_dims(v, s10, d) == TS_OK && d[0] == 3);
  /* N=2 over 4 tiles: c=1 -> [0,1),[1,2), then two empty shards [2,2) */
  const ts_shape_t *s2 = shp("2");
  v = S("{devices=[4]3,2,1,0}", "2"); /* device 3 holds tile 0 */
  const int64_t want2[4][2] = {{2, 2}, {2, 2}, {1, 2}, {0, 1}}; /* by device */
  for (int k = 0; v && k < 4; k++) {
    EXPECT_EQ(ts_sharding_shard(v, s2, k, o, l), TS_OK);
    EXPECT(o[0] == want2[k][0] && l[0] == want2[k][1]);
  }
  EXPECT(v && ts_sharding_shard_dims(v, s2, d) == TS_OK && d[0] == 1);
  EXPECT(v && ts_sharding_shard(v, s2, 4, o, l) == TS_ERR_INVALID_ARGUMENT); /* not a device of v */
  /* f32[8,6] on [2,2]: device 2 is tile (1,0): rows [4,8), cols [0,3) */
  v = S("{devices=[2,2]<=[4]}", "8,6");
  EXPECT(v && ts_sharding_shard(v, shp("8,6"), 2, o, l) == TS_OK && o[0] == 4 && l[0] == 8 && o[1] == 0 &&
         l[1] == 3);
  /* partial replication: f32[16,16], [1,2,4]: device 5 = (0,1,1) holds
   * rows [0,16), cols [8,16) */
  v = S("{devices=[1,2,4]<=[8] last_tile_dim_replicate}", "16,16");
  EXPECT(v && ts_sharding_shard(v, shp("16,16"), 5, o, l) == TS_OK && o[0] == 0 && l[0] == 16 && o[1] == 8 &&
         l[1] == 16);
  EXPECT(v && ts_sharding_shard_dims(v, shp("16,16"), d) == TS_OK && d[0] == 16 && d[1] == 8);
  /* non-tiled: the whole array */
  v = S("{maximal device=3}", "5,7");
  EXPECT(v && ts_sharding_shard(v, shp("5,7"), 0, o, l) == TS_OK && o[0] == 0 && l[0] == 5 && l[1] == 7);
}

static void test_tile_lookup(void) {
  /* [[0,2,4,6],[1,3,5,7]]: tile (1,2) is device 5; device 6 is tile (0,3) */
  ts_sharding_value_t *v = S("{devices=[2,4]<=[4,2]T(1,0)}", "8,8");
  int64_t dev = -1, idx[3];
  EXPECT(v && ts_sharding_tile_device(v, (const int64_t[]){1, 2}, &dev) == TS_OK && dev == 5);
  EXPECT(v && ts_sharding_tile_index(v, 6, idx) == TS_OK && idx[0] == 0 && idx[1] == 3);
  EXPECT(v && ts_sharding_tile_index(v, 8, idx) == TS_ERR_INVALID_ARGUMENT);
  EXPECT(v && ts_sharding_tile_device(v, (const int64_t[]){2, 0}, &dev) == TS_ERR_INVALID_ARGUMENT);
  /* every device: index -> device round trip, over a partially manual value */
  v = S("{devices=[2,3,2]<=[3,2,2]T(2,0,1) last_tile_dims={manual}}", "8,9");
  for (int64_t d = 0; v && d < 12; d++) {
    EXPECT(ts_sharding_tile_index(v, d, idx) == TS_OK && ts_sharding_tile_device(v, idx, &dev) == TS_OK);
    EXPECT_EQ(dev, d);
  }
  EXPECT_EQ(ts_sharding_num_devices(S("{replicated}", "8")), 0);
  EXPECT_EQ(ts_sharding_num_devices(S("{maximal device=3}", "8")), 1);
}

static void test_groups(void) {
  int64_t ng, gs, *g;
  /* A[i,m,r] = 4i+2m+r: identical data varies r, a manual program has one m */
  ts_sharding_value_t *v = S("{devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}", "8");
  EXPECT(v && ts_sharding_replication_groups(A, v, 0, &ng, &gs, &g) == TS_OK);
  if (v) EXPECT_I64S(g, ng * gs, L(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT(v && ng == 4 && gs == 2);
  EXPECT(v && ts_sharding_manual_groups(A, v, &ng, &gs, &g) == TS_OK && ng == 2 && gs == 4);
  if (v) EXPECT_I64S(g, ng * gs, L(0, 1, 4, 5, 2, 3, 6, 7));
  /* [[0,2,4,6],[1,3,5,7]] with a replicated dim of 4 after data tiles [2]:
   * groups are the rows */
  v = S("{devices=[2,4]<=[4,2]T(1,0) last_tile_dim_replicate}", "8");
  EXPECT(v && ts_sharding_replication_groups(A, v, 0, &ng, &gs, &g) == TS_OK && ng == 2 && gs == 4);
  if (v) EXPECT_I64S(g, ng * gs, L(0, 2, 4, 6, 1, 3, 5, 7));
  /* fully tiled: groups of one; no manual dims: one group of all */
  v = S("{devices=[2,2]3,1,2,0}", "8,8");
  EXPECT(v && ts_sharding_replication_groups(A, v, 0, &ng, &gs, &g) == TS_OK && ng == 4 && gs == 1);
  if (v) EXPECT_I64S(g, ng * gs, L(0, 1, 2, 3));
  EXPECT(v && ts_sharding_manual_groups(A, v, &ng, &gs, &g) == TS_OK && ng == 1 && gs == 4);
  if (v) EXPECT_I64S(g, ng * gs, L(0, 1, 2, 3));
  /* replicated: everyone */
  EXPECT(ts_sharding_replication_groups(A, S("{replicated}", "8"), 3, &ng, &gs, &g) == TS_OK && ng == 1 && gs == 3);
  EXPECT_I64S(g, 3, L(0, 1, 2));
}

int test_sharding_queries(void) {
  A = ts_arena_create();
  test_shard_extents();
  test_tile_lookup();
  test_groups();
  ts_arena_destroy(A);
  return failures;
}
