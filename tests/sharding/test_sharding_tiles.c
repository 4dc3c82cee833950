/* Unit tests of sharding/: tile assignments, canonical form and equality,
 * build errors (hlo_text_format.md 8.3). Every golden is worked out by hand
 * (the derivation is in the comment next to it) or is an example from
 * hlo_text_format.md sections 8.3 and 9. */
#include "sharding_test.h"

/* ---- 8.3: tile assignments ---- */

static void test_tile_assignments(void) {
  /* [4,2]<=[8] => [[0,1],[2,3],[4,5],[6,7]] */
  ts_sharding_value_t *v = S("{devices=[4,2]<=[8]}", "8,8");
  if (v) {
    EXPECT(v->kind == TS_SHARD_TILED && v->ndims == 2 && v->data_rank == 2 && v->ntiles == 8);
    EXPECT_I64S(v->dims, v->ndims, L(4, 2));
    EXPECT_I64S(v->devices, v->ntiles, L(0, 1, 2, 3, 4, 5, 6, 7));
  }
  /* [2,4]<=[4,2]T(1,0) => [[0,2,4,6],[1,3,5,7]] */
  v = S("{devices=[2,4]<=[4,2]T(1,0)}", "8,8");
  if (v) EXPECT_I64S(v->devices, v->ntiles, L(0, 2, 4, 6, 1, 3, 5, 7));
  /* tile_assignment.h: dims [4,4,1], reshape [4,2,2], T(1,0,2): element
   * [a,b,c] = 4a+2b+c read in (b,a,c) order. */
  v = S("{devices=[4,4,1]<=[4,2,2]T(1,0,2)}", "8,8,8");
  if (v) EXPECT_I64S(v->devices, v->ntiles, L(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
  EXPECT_PRINT(v, "{devices=[4,4,1]<=[4,2,2]T(1,0,2)}");
  /* Subgroup dims: f32[16,16] with [1,2,4] last_tile_dim_replicate has data
   * tiles [1,2] and replication groups of 4. */
  v = S("{devices=[1,2,4]<=[8] last_tile_dim_replicate}", "16,16");
  if (v) {
    EXPECT(v->data_rank == 2 && v->nsubgroups == 1 && v->subgroups[0] == TS_SUBGROUP_REPLICATED);
    EXPECT_EQ(ts_sharding_num_devices(v), 8);
  }
}

static void test_canonical_equality(void) {
  /* Two sharding texts on one shape, and whether their values are equal. */
  static const struct {
    const char *dims, *a, *b;
    bool equal;
  } pairs[] = {
      /* explicit vs iota */
      {"8,8", "{devices=[2,4]<=[4,2]T(1,0)}", "{devices=[2,4]0,2,4,6,1,3,5,7}", true},
      {"8,8,8", "{devices=[8,1,1]<=[8]}", "{devices=[8,1,1]0,1,2,3,4,5,6,7}", true},
      /* a lone replicated subgroup over every device is {replicated} */
      {"8,8", "{devices=[1,1,4]<=[4] last_tile_dim_replicate}", "{replicated}", true},
      {"8", "{devices=[1,8]<=[8] last_tile_dim_replicate}", "{replicated}", true},
      /* ... and a lone manual one over every device is {manual} */
      {"8,8", "{devices=[1,1,4]<=[4] last_tile_dims={manual}}", "{manual}", true},
      /* subgroup dims of size 1 are dropped */
      {"8", "{devices=[2,1]0,1 last_tile_dim_replicate}", "{devices=[2]0,1}", true},
      {"8", "{devices=[4,1]<=[4] last_tile_dims={manual}}", "{devices=[4]0,1,2,3}", true},
      /* same-kind subgroups merge: two replicated dims of 2 are one of 4 */
      {"8", "{devices=[2,2,2]<=[8] last_tile_dims={replicated, replicated}}",
       "{devices=[2,4]<=[8] last_tile_dim_replicate}", true},
      /* devices inside a replication group are sorted */
      {"8,8", "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
       "{devices=[2,1,4]0,3,2,1,7,6,5,4 last_tile_dim_replicate}", true},
      /* ... but not across groups, and tile order matters */
      {"8,8", "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
       "{devices=[2,1,4]4,5,6,7,0,1,2,3 last_tile_dim_replicate}", false},
      {"8,8", "{devices=[2,1]0,1}", "{devices=[2,1]1,0}", false},
      {"8,8", "{devices=[2,1]0,1}", "{devices=[1,2]0,1}", false},
      {"8", "{maximal device=0}", "{maximal device=1}", false},
      {"8", "{maximal device=1}", "{maximal device=1}", true},
      {"8", "{replicated}", "{manual}", false},
      {"8", "{devices=[2,2]<=[4] last_tile_dim_replicate}", "{devices=[2,2]<=[4] last_tile_dims={manual}}",
       false},
      /* shard groups are hints, not placement */
      {"8,8", "{devices=[2,1]0,1 shard_as 1}", "{devices=[2,1]0,1}", true},
      /* tuples: element-wise */
      {"-", "{{replicated}, {devices=[2]<=[2]}}", "{{replicated}, {devices=[2]0,1}}", true},
  };
  for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
    bool equal = ts_sharding_equal(S(pairs[k].a, pairs[k].dims), S(pairs[k].b, pairs[k].dims));
    if (equal != pairs[k].equal) {
      fprintf(stderr, "%s:%d: FAIL: %s vs %s on [%s]: got %s, want %s\n", __FILE__, __LINE__, pairs[k].a, pairs[k].b,
              pairs[k].dims, equal ? "equal" : "different", pairs[k].equal ? "equal" : "different");
      failures++;
    }
  }
  /* replicated sorts last: A[i,r,m] = 4i+2r+m read in (i,m,r) order is
   * 0,2,1,3,4,6,5,7 */
  ts_sharding_value_t *v = S("{devices=[2,2,2]<=[8] last_tile_dims={replicated, manual}}", "8");
  EXPECT_EQ_SH(v, S("{devices=[2,2,2]0,2,1,3,4,6,5,7 last_tile_dims={manual, replicated}}", "8"));
  if (v) EXPECT(v->nsubgroups == 2 && v->subgroups[0] == TS_SUBGROUP_MANUAL && v->subgroups[1] == TS_SUBGROUP_REPLICATED);
  /* that array is iota(8).reshape(2,2,2).transpose(0,2,1) */
  EXPECT_PRINT(v, "{devices=[2,2,2]<=[2,2,2]T(0,2,1) last_tile_dims={manual, replicated}}");
  /* devices inside a replication group are sorted: [3,1],[2,0] -> [1,3],[0,2] */
  v = S("{devices=[2,2]3,1,2,0 last_tile_dim_replicate}", "8");
  EXPECT_EQ_SH(v, S("{devices=[2,2]1,3,0,2 last_tile_dim_replicate}", "8"));
  if (v) EXPECT_I64S(v->devices, v->ntiles, L(1, 3, 0, 2));
  /* a non-tuple sharding on a tuple shape is copied to every leaf */
  ts_shape_t *leaves[2] = {(ts_shape_t *)shp("4"), (ts_shape_t *)shp("6")};
  ts_shape_t tup = {.elem = TS_TUPLE, .ntuple = 2, .tuple = leaves};
  ts_sharding_value_t *t = NULL;
  ts_sharding_value_t *single = S("{devices=[2]0,1}", "-");
  ts_sharding_t *syn = NULL;
  EXPECT(single && ts_sharding_to_syntax(A, single, &syn) == TS_OK);
  EXPECT(syn && ts_sharding_from_syntax(A, syn, &tup, &t) == TS_OK);
  if (t) {
    EXPECT(t->kind == TS_SHARD_TUPLE && t->ntuple == 2);
    EXPECT_EQ_SH(t, S("{{devices=[2]0,1}, {devices=[2]0,1}}", "-"));
  }
}

static void test_build_errors(void) {
  ts_sharding_value_t *v;
  /* data rank must match the shape */
  EXPECT_EQ(ts_sharding_parse(A, "{devices=[2,1]0,1}", shp("8"), &v, NULL), TS_ERR_VERIFY);
  EXPECT_EQ(ts_sharding_parse(A, "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", shp("8,8,8"), &v, NULL), TS_ERR_VERIFY);
  /* tuple leaf count */
  ts_shape_t *leaves[2] = {(ts_shape_t *)shp("4"), (ts_shape_t *)shp("6")};
  ts_shape_t tup = {.elem = TS_TUPLE, .ntuple = 2, .tuple = leaves};
  EXPECT_EQ(ts_sharding_parse(A, "{{replicated}}", &tup, &v, NULL), TS_ERR_VERIFY);
  /* V3 is not supported yet; syntax errors are parse errors */
  EXPECT_EQ(ts_sharding_parse(A, "{mesh[x=2], [{x}]}", NULL, &v, NULL), TS_ERR_UNSUPPORTED);
  ts_diag_t d = {0};
  EXPECT_EQ(ts_sharding_parse(A, "{devices=[2]0}", NULL, &v, &d), TS_ERR_PARSE);
  EXPECT(d.text && strstr(d.text, "<sharding>:4:"));
  ts_diag_free(&d);
  /* constructor argument checks: duplicate ids */
  EXPECT_EQ(ts_sharding_tiled(A, 1, (const int64_t[]){2}, (const int64_t[]){1, 1}, 0, NULL, &v), TS_ERR_INVALID_ARGUMENT);
}

int test_sharding_tiles(void) {
  A = ts_arena_create();
  test_tile_assignments();
  test_canonical_equality();
  test_build_errors();
  ts_arena_destroy(A);
  return failures;
}
