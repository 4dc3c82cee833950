/* Unit tests of sharding/: edge cases found in the review of issue 4:
 * shapes, subgroups, reshape, reshard, meshes, Shardy. Every golden is
 * worked out by hand (the derivation is in the comment next to it) or is an
 * example from hlo_text_format.md sections 8.3 and 9. */
#include "sharding_test.h"

/* ---- edge cases (review of issue 4) ---- */

/* Uneven and empty shards, rank 0, and tuple shapes. */
static void test_edge_shapes(void) {
  int64_t o[4], l[4], d[4];
  /* N=3 over 4 tiles: c=1 -> [0,1),[1,2),[2,3) and an empty [3,3) */
  ts_sharding_value_t *v = S("{devices=[4]<=[4]}", "3");
  const ts_shape_t *s3 = shp("3");
  for (int k = 0; v && k < 4; k++) {
    EXPECT_EQ(ts_sharding_shard(v, s3, k, o, l), TS_OK);
    EXPECT(o[0] == (k < 3 ? k : 3) && l[0] == (k < 3 ? k + 1 : 3));
  }
  /* N=0: every shard [0,0), padded shard 0 */
  v = S("{devices=[2]0,1}", "0");
  EXPECT(v && ts_sharding_shard(v, shp("0"), 1, o, l) == TS_OK && o[0] == 0 && l[0] == 0);
  EXPECT(v && ts_sharding_shard_dims(v, shp("0"), d) == TS_OK && d[0] == 0);
  /* rank 0: a replicated subgroup alone is {replicated}, a manual one
   * {manual}; a data tiling does not fit a scalar */
  EXPECT_PRINT(S("{devices=[2]0,1 last_tile_dim_replicate}", ""), "{replicated}");
  EXPECT_PRINT(S("{devices=[2]1,0 last_tile_dims={manual}}", ""), "{manual}");
  ts_sharding_value_t *e = NULL;
  EXPECT_EQ(ts_sharding_parse(A, "{devices=[2]0,1}", shp(""), &e, NULL), TS_ERR_VERIFY);
  v = S("{replicated}", "");
  EXPECT(v && ts_sharding_shard(v, shp(""), 0, o, l) == TS_OK);
  /* a non-tuple sharding on a tuple shape goes to every leaf; a tiling
   * that does not fit one leaf is an error */
  ts_shape_t tup = {.elem = TS_TUPLE, .ntuple = 2};
  ts_shape_t *leaves[2] = {(ts_shape_t *)shp("4"), (ts_shape_t *)shp("2,2")};
  tup.tuple = leaves;
  EXPECT(ts_sharding_parse(A, "{replicated}", &tup, &v, NULL) == TS_OK && v->kind == TS_SHARD_TUPLE &&
         v->ntuple == 2 && v->tuple[1]->kind == TS_SHARD_REPLICATED);
  EXPECT_EQ(ts_sharding_parse(A, "{devices=[2]0,1}", &tup, &e, NULL), TS_ERR_VERIFY);
  EXPECT(ts_sharding_parse(A, "{{maximal device=1}, {devices=[1,2]0,1}}", &tup, &v, NULL) == TS_OK &&
         v->ntuple == 2 && v->tuple[0]->device == 1);
  /* the empty tuple: the verifier's `{}` and XLA's one-element form both read */
  ts_shape_t empty = {.elem = TS_TUPLE, .ntuple = 0};
  EXPECT(ts_sharding_parse(A, "{}", &empty, &v, NULL) == TS_OK && v->kind == TS_SHARD_TUPLE && v->ntuple == 0);
  EXPECT(ts_sharding_parse(A, "{{replicated}}", &empty, &v, NULL) == TS_OK && v->kind == TS_SHARD_TUPLE);
}

/* Partial replication over a transposed iota, and manual + replicated
 * subgroups. */
static void test_edge_subgroups(void) {
  /* <=[2,2]T(1,0) = 0,2,1,3: groups {0,2},{1,3} already ascending */
  ts_sharding_value_t *v = S("{devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}", "8");
  EXPECT_PRINT(v, "{devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
  /* explicit 3,1,2,0: groups sorted to {1,3},{0,2}: not an iota */
  EXPECT_PRINT(S("{devices=[2,2]3,1,2,0 last_tile_dim_replicate}", "8"),
               "{devices=[2,2]1,3,0,2 last_tile_dim_replicate}");
  /* transpose of [2,1,4]<=[4,2]T(1,0) (rows {0,2,4,6},{1,3,5,7}) by (1,0):
   * the data dims swap, the replicated groups stay */
  ts_sharding_value_t *r = NULL;
  v = S("{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}", "8,8");
  EXPECT(v && ts_sharding_transpose(A, v, 2, (const int64_t[]){1, 0}, &r) == TS_OK);
  EXPECT_PRINT(r, "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}");
  /* [2,2,2]<=[8] replicated last, A[i,j,r] = 4i+2j+r, transposed (1,0):
   * A'[j,i,r] -> 0,1,4,5,2,3,6,7 */
  v = S("{devices=[2,2,2]<=[8] last_tile_dim_replicate}", "4,4");
  EXPECT(v && ts_sharding_transpose(A, v, 2, (const int64_t[]){1, 0}, &r) == TS_OK);
  EXPECT_EQ_SH(r, S("{devices=[2,2,2]0,1,4,5,2,3,6,7 last_tile_dim_replicate}", "4,4"));
  /* {replicated, manual} is reordered to {manual, replicated}:
   * A[i,r,m] = 4i+2r+m read in (i,m,r) order -> 0,2,1,3,4,6,5,7 */
  v = S("{devices=[2,2,2]<=[8] last_tile_dims={replicated, manual}}", "8");
  EXPECT_PRINT(v, "{devices=[2,2,2]<=[2,2,2]T(0,2,1) last_tile_dims={manual, replicated}}");
  EXPECT_EQ_SH(v, S("{devices=[2,2,2]0,2,1,3,4,6,5,7 last_tile_dims={manual, replicated}}", "8"));
  int64_t ng, gs, *g;
  EXPECT(v && ts_sharding_replication_groups(A, v, 0, &ng, &gs, &g) == TS_OK && ng == 4 && gs == 2);
  if (v) EXPECT_I64S(g, ng * gs, L(0, 2, 1, 3, 4, 6, 5, 7));
  EXPECT(v && ts_sharding_manual_groups(A, v, &ng, &gs, &g) == TS_OK && ng == 2 && gs == 4);
  if (v) EXPECT_I64S(g, ng * gs, L(0, 2, 4, 6, 1, 3, 5, 7));
  /* a subgroup kind outside the enum is refused, not read past */
  ts_subgroup_t bad = (ts_subgroup_t)99;
  EXPECT_EQ(ts_sharding_tiled(A, 2, (const int64_t[]){2, 2}, (const int64_t[]){0, 1, 2, 3}, 1, &bad, &v), TS_ERR_INVALID_ARGUMENT);
  /* no data tiling but two subgroup kinds: stays tiled (XLA's Subgroup) */
  v = S("{devices=[1,2,2]<=[4] last_tile_dims={manual, replicated}}", "8");
  EXPECT(v && v->kind == TS_SHARD_TILED && v->nsubgroups == 2);
}

/* Reshapes where the tiled dim is unchanged but uneven, minor, or does not
 * divide. */
static void test_edge_reshape(void) {
  /* dim 0 (6 rows, 4 tiles: 2,2,2,0) is untouched by [6,8] -> [6,2,4]:
   * every device keeps its rows */
  EXPECT_EQ_SH(reshaped("{devices=[4,1]<=[4]}", "6,8", "6,2,4"), S("{devices=[4,1,1]<=[4]}", "6,2,4"));
  EXPECT_EQ_SH(reshaped("{devices=[4]<=[4]}", "10", "10,1"), S("{devices=[4,1]<=[4]}", "10,1"));
  EXPECT_EQ_SH(reshaped("{devices=[4,2]<=[8] last_tile_dim_replicate}", "6", "1,6"),
               S("{devices=[1,4,2]<=[8] last_tile_dim_replicate}", "1,6"));
  /* minor dim split: cols of 8 in 4 tiles -> (2,4): col c is (c/4, c%4),
   * device 1's cols [2,4) are (0, [2,4)): tile (0,0,1) */
  EXPECT_EQ_SH(reshaped("{devices=[1,4]<=[4]}", "2,8", "2,2,4"), S("{devices=[1,2,2]<=[4]}", "2,2,4"));
  /* merge [2,3] rows tiled: row i is flat [3i,3i+3) = tile i of [6] */
  EXPECT_EQ_SH(reshaped("{devices=[2,1]1,0}", "2,3", "6"), S("{devices=[2]1,0}", "6"));
  /* merge with the minor dim not dividing: [2,5] tiled [2,2] holds cols
   * [0,3),[3,5) per row, not the [10]/4 chunks of 3 */
  EXPECT(reshaped("{devices=[2,2]<=[4]}", "2,5", "10") == NULL);
  /* merge with an uneven major dim: rows [0,2),[2,3) of [3,4] are flat
   * [0,8),[8,12), not [0,6),[6,12) */
  EXPECT(reshaped("{devices=[2,1]0,1}", "3,4", "12") == NULL);
}

/* Reshard classification, one case per kind the review asked about. */
static void test_edge_reshard(void) {
  /* f32[2,4] on [4,2]: rows 2,3 are empty, so devices 4..7 hold nothing;
   * swapping 4 and 7 moves no data: a local slice */
  ts_reshard_t r = reshard("{devices=[4,2]<=[8]}", "{devices=[4,2]0,1,2,3,7,5,6,4}", "2,4");
  EXPECT_EQ(r.kind, TS_RESHARD_DYNAMIC_SLICE);
  /* the same swap on f32[8,4] moves two tiles */
  r = reshard("{devices=[4,2]<=[8]}", "{devices=[4,2]0,1,2,3,7,5,6,4}", "8,4");
  EXPECT(r.kind == TS_RESHARD_COLLECTIVE_PERMUTE && r.npairs == 8);
  /* uneven all-gather: [2] on f32[3] -> replicated, one group {0,1} */
  r = reshard("{devices=[2]0,1}", "{replicated}", "3");
  EXPECT(r.kind == TS_RESHARD_ALL_GATHER && r.dim == 0 && r.ngroups == 1);
  EXPECT_I64S(r.groups, r.ngroups * r.group_size, L(0, 1));
  /* all-to-all under a replicated subgroup with a transposed iota:
   * [2,1,2]<=[2,2]T(1,0) has tile i = {i, i+2}; same groups after */
  r = reshard("{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
              "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}", "8,8");
  EXPECT(r.kind == TS_RESHARD_ALL_TO_ALL && r.dim == 0 && r.split_dim == 1 && r.ngroups == 2);
  EXPECT_I64S(r.groups, r.ngroups * r.group_size, L(0, 1, 2, 3));
  /* manual subgroups on one side only, or a manual value: not modelled */
  r = reshard("{devices=[2,2]<=[4] last_tile_dims={manual}}", "{devices=[2,2]<=[4] last_tile_dim_replicate}", "8");
  EXPECT_EQ(r.kind, TS_RESHARD_OTHER);
  r = reshard("{manual}", "{replicated}", "8");
  EXPECT_EQ(r.kind, TS_RESHARD_OTHER);
  for (int k = TS_RESHARD_NONE; k <= TS_RESHARD_OTHER; k++) EXPECT(strcmp(ts_reshard_kind_name(k), "?") != 0);
}

/* Meshes of one slice, and of one device per slice. */
static void test_edge_mesh(void) {
  ts_mesh_t m;
  int64_t intra[4], cross[4], ns, per, s, i;
  bool crosses = true;
  EXPECT_EQ(ts_mesh_init(&m, 1, 4), TS_OK);
  EXPECT(ts_mesh_split_group(&m, (const int64_t[]){2, 0, 3}, 3, intra, cross, &ns, &per) == TS_OK && ns == 1 &&
         per == 3);
  EXPECT_I64S(intra, 3, L(2, 0, 3));
  EXPECT_I64S(cross, 3, L(2, 0, 3)); /* three groups of one */
  EXPECT(ts_mesh_init(&m, 4, 1) == TS_OK && ts_mesh_num_devices(&m) == 4);
  EXPECT(ts_mesh_locate(&m, 3, &s, &i) == TS_OK && s == 3 && i == 0);
  EXPECT(ts_mesh_crosses_slices(&m, (const int64_t[]){1, 3}, 2, &crosses) == TS_OK && crosses);
  EXPECT(ts_mesh_crosses_slices(&m, (const int64_t[]){2}, 1, &crosses) == TS_OK && !crosses);
  EXPECT(ts_mesh_split_group(&m, (const int64_t[]){3, 1}, 2, intra, cross, &ns, &per) == TS_OK && ns == 2 &&
         per == 1);
  EXPECT_I64S(intra, 2, L(3, 1)); /* two groups of one */
  EXPECT_I64S(cross, 2, L(3, 1)); /* one group across both slices */
  int64_t r;
  EXPECT_EQ(ts_mesh_rank(&m, 4, &r), TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ts_mesh_init(&m, INT64_MAX, 2), TS_ERR_INVALID_ARGUMENT);
}

/* Shardy meshes with device_ids, and sub-axes over them. */
static void test_edge_sdy(void) {
  ts_sdy_meshes_t *ms = NULL;
  EXPECT_EQ(ts_sharding_sdy_meshes_parse(A,
                                      "{r = #sdy.mesh<[\"x\"=4], device_ids=[3,2,1,0]>, "
                                      "q = #sdy.mesh<[\"x\"=2, \"y\"=4], device_ids=[7,6,5,4,3,2,1,0]>, "
                                      "one = #sdy.mesh<[], device_ids=[5]>}",
                                      &ms), TS_OK);
  if (!ms) return;
  /* x = (a, b), device at x = 2a+b is ids[x] = 3-x; dim 0 on b:
   * tile b holds x = b, b+2 -> tile 0 {3,1}, tile 1 {2,0}, sorted */
  EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@r, [{\"x\":(2)2}]>", "8", __FILE__, __LINE__),
               S("{devices=[2,2]1,3,0,2 last_tile_dim_replicate}", "8"));
  /* the whole axis over reversed ids */
  EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@r, [{\"x\"}]>", "8", __FILE__, __LINE__), S("{devices=[4]3,2,1,0}", "8"));
  /* mesh (x, ya, yb), flat 4x+2ya+yb, id 7-flat; dim 0 on yb, dim 1 on x,
   * ya left: tile (i,j) group {7-(4j+i), 7-(4j+2+i)} */
  EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@q, [{\"y\":(2)2}, {\"x\"}]>", "8,8", __FILE__, __LINE__),
               S("{devices=[2,2,2]5,7,1,3,4,6,0,2 last_tile_dim_replicate}", "8,8"));
  /* a mesh with no axes and one device id: maximal on it */
  ts_sharding_value_t *v = sdy_at(ms, "#sdy.sharding<@one, [{}]>", "8", __FILE__, __LINE__);
  EXPECT(v && v->kind == TS_SHARD_MAXIMAL && v->device == 5);
  /* a sub-axis whose pre * size overflows int64 is an error, not a crash */
  ts_sharding_value_t *e = NULL;
  const ts_shape_t *s8 = shp("8");
  EXPECT_EQ(ts_sharding_from_sdy(A, ms, "#sdy.sharding<@r, [{\"x\":(4294967296)4294967296}]>", 1, &s8, &e), TS_ERR_VERIFY);
  EXPECT_EQ(ts_sharding_from_sdy(A, ms, "#sdy.sharding<@r, [{\"x\":(2)4}]>", 1, &s8, &e), TS_ERR_VERIFY);
  /* a scalar on a 4-device mesh: replicated */
  EXPECT_PRINT(sdy_at(ms, "#sdy.sharding<@r, []>", "", __FILE__, __LINE__), "{replicated}");
}

int test_sharding_edge(void) {
  A = ts_arena_create();
  test_edge_shapes();
  test_edge_subgroups();
  test_edge_reshape();
  test_edge_reshard();
  test_edge_mesh();
  test_edge_sdy();
  ts_arena_destroy(A);
  return failures;
}
