/* Unit tests of sharding/: transforms (transpose, reshape) and reshard
 * classification. Every golden is worked out by hand (the derivation is in
 * the comment next to it) or is an example from hlo_text_format.md sections
 * 8.3 and 9. */
#include "sharding_test.h"

/* ---- transforms ---- */

static void test_transpose(void) {
  ts_sharding_value_t *r = NULL;
  /* A'[j,i] = A[i,j] = 4i+j read in (j,i) order: 0,4,1,5,2,6,3,7, which is
   * iota(8).reshape(2,4).transpose(1,0) */
  ts_sharding_value_t *v = S("{devices=[2,4]<=[8]}", "8,8");
  EXPECT(v && ts_sharding_transpose(A, v, 2, (const int64_t[]){1, 0}, &r) == TS_OK);
  EXPECT_EQ_SH(r, S("{devices=[4,2]<=[2,4]T(1,0)}", "8,8"));
  if (r) EXPECT_I64S(r->devices, r->ntiles, L(0, 4, 1, 5, 2, 6, 3, 7));
  EXPECT_PRINT(r, "{devices=[4,2]<=[2,4]T(1,0)}");
  /* subgroup dims stay last */
  v = S("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "8,8");
  EXPECT(v && ts_sharding_transpose(A, v, 2, (const int64_t[]){1, 0}, &r) == TS_OK);
  EXPECT_EQ_SH(r, S("{devices=[1,2,2]<=[4] last_tile_dim_replicate}", "8,8"));
  /* rank-3: perm (2,0,1) on [2,1,4]: result dims [4,2,1],
   * A'[c,a,b] = A[a,b,c] = 4a+c -> 0,4,1,5,2,6,3,7 */
  v = S("{devices=[2,1,4]<=[8]}", "2,3,4");
  EXPECT(v && ts_sharding_transpose(A, v, 3, (const int64_t[]){2, 0, 1}, &r) == TS_OK);
  EXPECT_EQ_SH(r, S("{devices=[4,2,1]0,4,1,5,2,6,3,7}", "4,2,3"));
  EXPECT(v && ts_sharding_transpose(A, v, 3, (const int64_t[]){0, 0, 1}, &r) == TS_ERR_INVALID_ARGUMENT);
  v = S("{replicated}", "8,8");
  EXPECT(ts_sharding_transpose(A, v, 2, (const int64_t[]){1, 0}, &r) == TS_OK && r == v);
}

static void test_reshape(void) {
  /* split [8] by 4 into [2,4]: 2 tiles on the major dim, 2 on the minor;
   * device 1 holds flat [2,4) = row 0, cols [2,4) = tile (0,1) */
  EXPECT_EQ_SH(reshaped("{devices=[4]<=[4]}", "8", "2,4"), S("{devices=[2,2]<=[4]}", "2,4"));
  EXPECT_EQ_SH(reshaped("{devices=[2]0,1}", "8", "2,4"), S("{devices=[2,1]0,1}", "2,4"));
  EXPECT_EQ_SH(reshaped("{devices=[2]1,0}", "8", "4,2"), S("{devices=[2,1]1,0}", "4,2"));
  /* merge: the major dim tiled */
  EXPECT_EQ_SH(reshaped("{devices=[2,1]0,1}", "4,2", "8"), S("{devices=[2]0,1}", "8"));
  /* merge: minor dim tiled after a major dim split into single elements */
  EXPECT_EQ_SH(reshaped("{devices=[4,2]<=[8]}", "4,2", "8"), S("{devices=[8]<=[8]}", "8"));
  /* not expressible: the minor dim tiled under an unsplit major dim, or a
   * dim that does not divide */
  EXPECT(reshaped("{devices=[1,2]0,1}", "4,2", "8") == NULL);
  EXPECT(reshaped("{devices=[4]<=[4]}", "6", "2,3") == NULL);
  EXPECT(reshaped("{devices=[4]<=[4]}", "8", "2,2,2") != NULL); /* [2,2,1] */
  EXPECT_EQ_SH(reshaped("{devices=[4]<=[4]}", "8", "2,2,2"), S("{devices=[2,2,1]<=[4]}", "2,2,2"));
  /* groups: [16,4] -> [4,4,4] is 16->(4,4) and 4->4; subgroups carried */
  EXPECT_EQ_SH(reshaped("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "16,4", "4,4,4"),
               S("{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}", "4,4,4"));
  /* size-1 dims come and go */
  EXPECT_EQ_SH(reshaped("{devices=[1,4]<=[4]}", "1,8", "8,1"), S("{devices=[4,1]<=[4]}", "8,1"));
  /* [4,6] -> [6,4] is one group of 24: 2 tiles of 12 = rows of 3 */
  EXPECT_EQ_SH(reshaped("{devices=[2,1]0,1}", "4,6", "6,4"), S("{devices=[2,1]0,1}", "6,4"));
  /* non-tiled values pass through */
  EXPECT_EQ_SH(reshaped("{replicated}", "4,6", "24"), S("{replicated}", "24"));
}

/* ---- resharding ---- */

static void test_reshard(void) {
  ts_reshard_t r = reshard("{devices=[2,4]<=[4,2]T(1,0)}", "{devices=[2,4]0,2,4,6,1,3,5,7}", "8,8");
  EXPECT_EQ(r.kind, TS_RESHARD_NONE);
  r = reshard("{replicated}", "{devices=[2,1]0,1}", "8,8");
  EXPECT_EQ(r.kind, TS_RESHARD_DYNAMIC_SLICE);
  /* tile i held by {2i,2i+1} -> [2,2]: each device already has its rows */
  r = reshard("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[2,2]<=[4]}", "8,8");
  EXPECT_EQ(r.kind, TS_RESHARD_DYNAMIC_SLICE);
  /* [2,2] A[i,j]=2i+j -> rows only: gather dim 1 in groups {0,1},{2,3} */
  r = reshard("{devices=[2,2]<=[4]}", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "8,8");
  EXPECT(r.kind == TS_RESHARD_ALL_GATHER && r.dim == 1 && r.ngroups == 2 && r.group_size == 2);
  EXPECT_I64S(r.groups, r.ngroups * r.group_size, L(0, 1, 2, 3));
  /* ... or cols only: gather dim 0 in groups {0,2},{1,3} */
  r = reshard("{devices=[2,2]<=[4]}", "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}", "8,8");
  EXPECT(r.kind == TS_RESHARD_ALL_GATHER && r.dim == 0 && r.group_size == 2);
  EXPECT_I64S(r.groups, r.ngroups * r.group_size, L(0, 2, 1, 3));
  r = reshard("{devices=[2,1]0,1}", "{replicated}", "8,8");
  EXPECT(r.kind == TS_RESHARD_ALL_GATHER && r.dim == 0);
  EXPECT_I64S(r.groups, r.ngroups * r.group_size, L(0, 1));
  /* a partially replicated source: groups pick one device per tile */
  r = reshard("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{replicated}", "8,8");
  EXPECT(r.kind == TS_RESHARD_ALL_GATHER && r.dim == 0);
  EXPECT_I64S(r.groups, r.ngroups * r.group_size, L(0, 2, 1, 3));
  /* the wrong devices after gathering: not one all-gather */
  r = reshard("{devices=[2,2]<=[4]}", "{devices=[2,1,2]2,3,0,1 last_tile_dim_replicate}", "8,8");
  EXPECT_EQ(r.kind, TS_RESHARD_OTHER);
  /* rows -> cols, same device order: all-to-all */
  r = reshard("{devices=[2,1]0,1}", "{devices=[1,2]0,1}", "8,8");
  EXPECT(r.kind == TS_RESHARD_ALL_TO_ALL && r.dim == 0 && r.split_dim == 1);
  EXPECT_I64S(r.groups, r.ngroups * r.group_size, L(0, 1));
  r = reshard("{devices=[1,4,2]<=[8] last_tile_dim_replicate}", "{devices=[4,1,2]<=[8] last_tile_dim_replicate}",
              "8,8");
  EXPECT(r.kind == TS_RESHARD_ALL_TO_ALL && r.dim == 1 && r.split_dim == 0 && r.ngroups == 2);
  EXPECT_I64S(r.groups, r.ngroups * r.group_size, L(0, 2, 4, 6, 1, 3, 5, 7));
  r = reshard("{devices=[4,1]<=[4]}", "{devices=[1,4]3,2,1,0}", "8,8");
  EXPECT_EQ(r.kind, TS_RESHARD_OTHER);
  /* same tiles, other devices */
  r = reshard("{devices=[2,1]0,1}", "{devices=[2,1]1,0}", "8,8");
  EXPECT(r.kind == TS_RESHARD_COLLECTIVE_PERMUTE && r.npairs == 2);
  EXPECT_I64S(r.pairs, 2 * r.npairs, L(0, 1, 1, 0));
  r = reshard("{devices=[2,2]<=[4]}", "{devices=[2,2]0,2,1,3}", "8,8");
  EXPECT_EQ(r.kind, TS_RESHARD_COLLECTIVE_PERMUTE);
  EXPECT_I64S(r.pairs, 2 * r.npairs, L(0, 0, 1, 2, 2, 1, 3, 3));
  /* two dims at once, or not tiled: more than one step */
  r = reshard("{devices=[2,2]<=[4]}", "{replicated}", "8,8");
  EXPECT_EQ(r.kind, TS_RESHARD_OTHER);
  r = reshard("{maximal device=0}", "{replicated}", "8,8");
  EXPECT_EQ(r.kind, TS_RESHARD_OTHER);
  EXPECT_STREQ(ts_reshard_kind_name(TS_RESHARD_ALL_TO_ALL), "all-to-all");
}

int test_sharding_transforms(void) {
  A = ts_arena_create();
  test_transpose();
  test_reshape();
  test_reshard();
  ts_arena_destroy(A);
  return failures;
}
