/* Unit tests of sharding/: values, canonical form, queries, transforms,
 * reshard classification, meshes and Shardy input. Every golden is worked
 * out by hand (the derivation is in the comment next to it) or is an
 * example from hlo_text_format.md sections 8.3 and 9. */
#include "ts_sharding.h"

#include "ts_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ts_arena_t *A;

/* An array shape from "8,8" ("" is a scalar). */
static const ts_shape_t *shp(const char *dims) {
  ts_shape_t *s = ts_arena_alloc(A, sizeof *s);
  s->elem = TS_F32;
  s->dims = ts_arena_alloc(A, sizeof(int64_t) * 16);
  for (const char *p = dims; *p;) {
    s->dims[s->rank++] = strtoll(p, (char **)&p, 10);
    if (*p == ',') p++;
  }
  return s;
}

/* The value of sharding text on a shape ("-" for none); NULL (and a
 * failure) when it does not build. */
static ts_sharding_value_t *S_at(const char *text, const char *dims, int line) {
  ts_sharding_value_t *v = NULL;
  ts_diag_t d = {0};
  ts_status_t st = ts_sharding_parse(A, text, strcmp(dims, "-") ? shp(dims) : NULL, &v, &d);
  if (st != TS_OK) {
    fprintf(stderr, "%s:%d: FAIL: %s does not build (%s)\n%s", __FILE__, line, text, ts_status_string(st),
            d.text ? d.text : "");
    failures++;
  }
  ts_diag_free(&d);
  return v;
}
#define S(text, dims) S_at(text, dims, __LINE__)

static void expect_i64s_at(const int64_t *got, int64_t n, const int64_t *want, int64_t wn, int line) {
  bool ok = got && n == wn;
  for (int64_t k = 0; ok && k < n; k++) ok = got[k] == want[k];
  if (!ok) {
    fprintf(stderr, "%s:%d: FAIL: got [", __FILE__, line);
    for (int64_t k = 0; got && k < n; k++) fprintf(stderr, "%s%lld", k ? "," : "", (long long)got[k]);
    fprintf(stderr, "] want [");
    for (int64_t k = 0; k < wn; k++) fprintf(stderr, "%s%lld", k ? "," : "", (long long)want[k]);
    fprintf(stderr, "]\n");
    failures++;
  }
}
#define L(...) ((const int64_t[]){__VA_ARGS__}), (int64_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define EXPECT_I64S(got, n, ...) expect_i64s_at(got, n, __VA_ARGS__, __LINE__)

static void expect_print_at(const ts_sharding_value_t *v, const char *want, int line) {
  if (!v) return;
  ts_buf_t b = {0};
  ts_sharding_value_print(&b, v);
  if (!b.data || strcmp(b.data, want) != 0) {
    fprintf(stderr, "%s:%d: FAIL: printed %s, want %s\n", __FILE__, line, b.data ? b.data : "(null)", want);
    failures++;
  }
  ts_buf_free(&b);
}
#define EXPECT_PRINT(v, want) expect_print_at(v, want, __LINE__)

#define EXPECT_EQ_SH(x, y) EXPECT(ts_sharding_equal(x, y))
#define EXPECT_NE_SH(x, y) EXPECT(!ts_sharding_equal(x, y))

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
    EXPECT(ts_sharding_num_devices(v) == 8);
  }
}

static void test_canonical_equality(void) {
  /* explicit vs iota */
  EXPECT_EQ_SH(S("{devices=[2,4]<=[4,2]T(1,0)}", "8,8"), S("{devices=[2,4]0,2,4,6,1,3,5,7}", "8,8"));
  EXPECT_EQ_SH(S("{devices=[8,1,1]<=[8]}", "8,8,8"), S("{devices=[8,1,1]0,1,2,3,4,5,6,7}", "8,8,8"));
  /* a lone replicated subgroup over every device is {replicated} */
  EXPECT_EQ_SH(S("{devices=[1,1,4]<=[4] last_tile_dim_replicate}", "8,8"), S("{replicated}", "8,8"));
  EXPECT_EQ_SH(S("{devices=[1,8]<=[8] last_tile_dim_replicate}", "8"), S("{replicated}", "8"));
  /* ... and a lone manual one over every device is {manual} */
  EXPECT_EQ_SH(S("{devices=[1,1,4]<=[4] last_tile_dims={manual}}", "8,8"), S("{manual}", "8,8"));
  /* subgroup dims of size 1 are dropped */
  EXPECT_EQ_SH(S("{devices=[2,1]0,1 last_tile_dim_replicate}", "8"), S("{devices=[2]0,1}", "8"));
  EXPECT_EQ_SH(S("{devices=[4,1]<=[4] last_tile_dims={manual}}", "8"), S("{devices=[4]0,1,2,3}", "8"));
  /* same-kind subgroups merge: two replicated dims of 2 are one of 4 */
  EXPECT_EQ_SH(S("{devices=[2,2,2]<=[8] last_tile_dims={replicated, replicated}}", "8"),
               S("{devices=[2,4]<=[8] last_tile_dim_replicate}", "8"));
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
  EXPECT_EQ_SH(S("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", "8,8"),
               S("{devices=[2,1,4]0,3,2,1,7,6,5,4 last_tile_dim_replicate}", "8,8"));
  /* ... but not across groups, and tile order matters */
  EXPECT_NE_SH(S("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", "8,8"),
               S("{devices=[2,1,4]4,5,6,7,0,1,2,3 last_tile_dim_replicate}", "8,8"));
  EXPECT_NE_SH(S("{devices=[2,1]0,1}", "8,8"), S("{devices=[2,1]1,0}", "8,8"));
  EXPECT_NE_SH(S("{devices=[2,1]0,1}", "8,8"), S("{devices=[1,2]0,1}", "8,8"));
  EXPECT_NE_SH(S("{maximal device=0}", "8"), S("{maximal device=1}", "8"));
  EXPECT_EQ_SH(S("{maximal device=1}", "8"), S("{maximal device=1}", "8"));
  EXPECT_NE_SH(S("{replicated}", "8"), S("{manual}", "8"));
  EXPECT_NE_SH(S("{devices=[2,2]<=[4] last_tile_dim_replicate}", "8"),
               S("{devices=[2,2]<=[4] last_tile_dims={manual}}", "8"));
  /* shard groups are hints, not placement */
  EXPECT_EQ_SH(S("{devices=[2,1]0,1 shard_as 1}", "8,8"), S("{devices=[2,1]0,1}", "8,8"));
  /* tuples: element-wise; a non-tuple sharding on a tuple shape is copied to
   * every leaf */
  EXPECT_EQ_SH(S("{{replicated}, {devices=[2]<=[2]}}", "-"), S("{{replicated}, {devices=[2]0,1}}", "-"));
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
  EXPECT(ts_sharding_parse(A, "{devices=[2,1]0,1}", shp("8"), &v, NULL) == TS_ERR_VERIFY);
  EXPECT(ts_sharding_parse(A, "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", shp("8,8,8"), &v, NULL) ==
         TS_ERR_VERIFY);
  /* tuple leaf count */
  ts_shape_t *leaves[2] = {(ts_shape_t *)shp("4"), (ts_shape_t *)shp("6")};
  ts_shape_t tup = {.elem = TS_TUPLE, .ntuple = 2, .tuple = leaves};
  EXPECT(ts_sharding_parse(A, "{{replicated}}", &tup, &v, NULL) == TS_ERR_VERIFY);
  /* V3 is not supported yet; syntax errors are parse errors */
  EXPECT(ts_sharding_parse(A, "{mesh[x=2], [{x}]}", NULL, &v, NULL) == TS_ERR_UNSUPPORTED);
  ts_diag_t d = {0};
  EXPECT(ts_sharding_parse(A, "{devices=[2]0}", NULL, &v, &d) == TS_ERR_PARSE);
  EXPECT(d.text && strstr(d.text, "<sharding>:4:"));
  ts_diag_free(&d);
  /* constructor argument checks: duplicate ids */
  EXPECT(ts_sharding_tiled(A, 1, (const int64_t[]){2}, (const int64_t[]){1, 1}, 0, NULL, &v) ==
         TS_ERR_INVALID_ARGUMENT);
}

/* ---- 8.3: queries ---- */

static void test_shard_extents(void) {
  int64_t o[4], l[4], d[4];
  /* N=10 over 4 tiles: c=3 -> [0,3),[3,6),[6,9),[9,10) */
  ts_sharding_value_t *v = S("{devices=[4]0,1,2,3}", "10");
  const ts_shape_t *s10 = shp("10");
  const int64_t want10[4][2] = {{0, 3}, {3, 6}, {6, 9}, {9, 10}};
  for (int k = 0; v && k < 4; k++) {
    EXPECT(ts_sharding_shard(v, s10, k, o, l) == TS_OK);
    EXPECT(o[0] == want10[k][0] && l[0] == want10[k][1]);
  }
  EXPECT(v && ts_sharding_shard_dims(v, s10, d) == TS_OK && d[0] == 3);
  /* N=2 over 4 tiles: c=1 -> [0,1),[1,2), then two empty shards [2,2) */
  const ts_shape_t *s2 = shp("2");
  v = S("{devices=[4]3,2,1,0}", "2"); /* device 3 holds tile 0 */
  const int64_t want2[4][2] = {{2, 2}, {2, 2}, {1, 2}, {0, 1}}; /* by device */
  for (int k = 0; v && k < 4; k++) {
    EXPECT(ts_sharding_shard(v, s2, k, o, l) == TS_OK);
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
    EXPECT(dev == d);
  }
  EXPECT(ts_sharding_num_devices(S("{replicated}", "8")) == 0);
  EXPECT(ts_sharding_num_devices(S("{maximal device=3}", "8")) == 1);
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

static ts_sharding_value_t *reshaped(const char *text, const char *from, const char *to) {
  ts_sharding_value_t *v = S(text, from), *r = NULL;
  if (!v) return NULL;
  EXPECT(ts_sharding_reshape(A, v, shp(from), shp(to), &r) == TS_OK);
  return r;
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

static ts_reshard_t reshard(const char *from, const char *to, const char *dims) {
  ts_reshard_t r = {.kind = TS_RESHARD_OTHER};
  ts_sharding_value_t *f = S(from, dims), *t = S(to, dims);
  EXPECT(f && t && ts_sharding_reshard(A, f, t, shp(dims), &r) == TS_OK);
  return r;
}

static void test_reshard(void) {
  ts_reshard_t r = reshard("{devices=[2,4]<=[4,2]T(1,0)}", "{devices=[2,4]0,2,4,6,1,3,5,7}", "8,8");
  EXPECT(r.kind == TS_RESHARD_NONE);
  r = reshard("{replicated}", "{devices=[2,1]0,1}", "8,8");
  EXPECT(r.kind == TS_RESHARD_DYNAMIC_SLICE);
  /* tile i held by {2i,2i+1} -> [2,2]: each device already has its rows */
  r = reshard("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "{devices=[2,2]<=[4]}", "8,8");
  EXPECT(r.kind == TS_RESHARD_DYNAMIC_SLICE);
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
  EXPECT(r.kind == TS_RESHARD_OTHER);
  /* rows -> cols, same device order: all-to-all */
  r = reshard("{devices=[2,1]0,1}", "{devices=[1,2]0,1}", "8,8");
  EXPECT(r.kind == TS_RESHARD_ALL_TO_ALL && r.dim == 0 && r.split_dim == 1);
  EXPECT_I64S(r.groups, r.ngroups * r.group_size, L(0, 1));
  r = reshard("{devices=[1,4,2]<=[8] last_tile_dim_replicate}", "{devices=[4,1,2]<=[8] last_tile_dim_replicate}",
              "8,8");
  EXPECT(r.kind == TS_RESHARD_ALL_TO_ALL && r.dim == 1 && r.split_dim == 0 && r.ngroups == 2);
  EXPECT_I64S(r.groups, r.ngroups * r.group_size, L(0, 2, 4, 6, 1, 3, 5, 7));
  r = reshard("{devices=[4,1]<=[4]}", "{devices=[1,4]3,2,1,0}", "8,8");
  EXPECT(r.kind == TS_RESHARD_OTHER);
  /* same tiles, other devices */
  r = reshard("{devices=[2,1]0,1}", "{devices=[2,1]1,0}", "8,8");
  EXPECT(r.kind == TS_RESHARD_COLLECTIVE_PERMUTE && r.npairs == 2);
  EXPECT_I64S(r.pairs, 2 * r.npairs, L(0, 1, 1, 0));
  r = reshard("{devices=[2,2]<=[4]}", "{devices=[2,2]0,2,1,3}", "8,8");
  EXPECT(r.kind == TS_RESHARD_COLLECTIVE_PERMUTE);
  EXPECT_I64S(r.pairs, 2 * r.npairs, L(0, 0, 1, 2, 2, 1, 3, 3));
  /* two dims at once, or not tiled: more than one step */
  r = reshard("{devices=[2,2]<=[4]}", "{replicated}", "8,8");
  EXPECT(r.kind == TS_RESHARD_OTHER);
  r = reshard("{maximal device=0}", "{replicated}", "8,8");
  EXPECT(r.kind == TS_RESHARD_OTHER);
  EXPECT(!strcmp(ts_reshard_kind_name(TS_RESHARD_ALL_TO_ALL), "all-to-all"));
}

/* ---- text and syntax ---- */

static void test_print(void) {
  EXPECT_PRINT(S("{devices=[2,4]0,2,4,6,1,3,5,7}", "8,8"), "{devices=[2,4]<=[4,2]T(1,0)}");
  EXPECT_PRINT(S("{devices=[4,1]0,1,2,3}", "8,8"), "{devices=[4,1]<=[4]}");
  EXPECT_PRINT(S("{devices=[2,2]3,1,2,0}", "8,8"), "{devices=[2,2]3,1,2,0}");
  EXPECT_PRINT(S("{devices=[2,1,16]<=[32] last_tile_dim_replicate}", "8,8"),
               "{devices=[2,1,16]<=[32] last_tile_dim_replicate}");
  EXPECT_PRINT(S("{devices=[2,1]0,1 last_tile_dim_replicate}", "8"), "{devices=[2]<=[2]}");
  EXPECT_PRINT(S("{devices=[1,1,4]<=[4] last_tile_dim_replicate}", "8,8"), "{replicated}");
  EXPECT_PRINT(S("{maximal device=3}", "8"), "{maximal device=3}");
  EXPECT_PRINT(S("{manual}", "8"), "{manual}");
  EXPECT_PRINT(S("{unknown}", "8"), "{unknown}");
  EXPECT_PRINT(S("{replicated shard_like 0}", "8"), "{replicated shard_like 0}");
  EXPECT_PRINT(S("{{replicated}, {devices=[2]0,1}}", "-"), "{{replicated}, {devices=[2]<=[2]}}");
  /* to_syntax gives the struct the printer of hlo/ prints the same way */
  ts_sharding_value_t *v = S("{devices=[2,2,2]0,2,1,3,4,6,5,7 last_tile_dims={manual, replicated}}", "8");
  ts_sharding_t *s = NULL;
  EXPECT(v && ts_sharding_to_syntax(A, v, &s) == TS_OK);
  if (s) {
    EXPECT(s->kind == TS_SHARD_TILED && s->iota && s->iota_reshape.n == 3 && s->iota_perm.n == 3);
    EXPECT_I64S(s->devices.v, s->devices.n, L(0, 2, 1, 3, 4, 6, 5, 7));
    EXPECT(s->nsubgroups == 2 && !s->last_tile_dim_replicate);
  }
  int rank;
  int64_t reshape[64], perm[64];
  EXPECT(ts_sharding_iota_form((const int64_t[]){0, 2, 4, 6, 1, 3, 5, 7}, 8,
                               &rank, reshape, perm));
  EXPECT(rank == 2 && reshape[0] == 4 && reshape[1] == 2 && perm[0] == 1 && perm[1] == 0);
  EXPECT(!ts_sharding_iota_form((const int64_t[]){0, 2, 1, 4, 3, 5}, 6, &rank, reshape, perm));
  EXPECT(!ts_sharding_iota_form((const int64_t[]){1, 0}, 2, &rank, reshape, perm));
}

/* Every iota form the HLO parser expands (its own code in hlo/parser.c) is
 * found again by ts_sharding_iota_form, in merged form (no size-1 dims, no
 * two transposed dims that are adjacent in the reshape), and expands back
 * to the same devices. All reshapes of up to 4 dims of sizes 1..4 with every
 * permutation. */
static int next_perm(int64_t *p, int n) {
  int i = n - 2;
  while (i >= 0 && p[i] >= p[i + 1]) i--;
  if (i < 0) return 0;
  int j = n - 1;
  while (p[j] <= p[i]) j--;
  int64_t t = p[i];
  p[i] = p[j];
  p[j] = t;
  for (int a = i + 1, b = n - 1; a < b; a++, b--) t = p[a], p[a] = p[b], p[b] = t;
  return 1;
}

static void iota_text(ts_buf_t *b, int64_t n, int r, const int64_t *reshape, const int64_t *perm) {
  ts_buf_printf(b, "{devices=[%lld]<=[", (long long)n);
  for (int k = 0; k < r; k++) ts_buf_printf(b, "%s%lld", k ? "," : "", (long long)reshape[k]);
  ts_buf_puts(b, "]");
  if (r > 1) {
    ts_buf_puts(b, "T(");
    for (int k = 0; k < r; k++) ts_buf_printf(b, "%s%lld", k ? "," : "", (long long)perm[k]);
    ts_buf_puts(b, ")");
  }
  ts_buf_puts(b, "}");
}

static void test_iota_forms(void) {
  int cases = 0;
  for (int r = 1; r <= 4; r++) {
    int64_t dims[4];
    int total_shapes = 1;
    for (int k = 0; k < r; k++) total_shapes *= 4;
    for (int code = 0; code < total_shapes; code++) {
      int64_t n = 1;
      for (int k = 0, c = code; k < r; k++, c /= 4) n *= dims[k] = c % 4 + 1;
      if (n < 2) continue;
      int64_t perm[4] = {0, 1, 2, 3};
      do {
        ts_buf_t b = {0};
        iota_text(&b, n, r, dims, perm);
        ts_sharding_value_t *v = S(b.data, "-");
        int rank = 0;
        int64_t rs[64], pm[64];
        bool found = v && ts_sharding_iota_form(v->devices, v->ntiles, &rank, rs, pm);
        EXPECT(found);
        for (int k = 0; found && k < rank; k++) {
          EXPECT(rs[k] > 1);
          if (k + 1 < rank) EXPECT(pm[k + 1] != pm[k] + 1);
        }
        if (found) {
          ts_buf_t b2 = {0};
          iota_text(&b2, n, rank, rs, pm);
          ts_sharding_value_t *w = S(b2.data, "-");
          EXPECT(w && v && !memcmp(w->devices, v->devices, sizeof(int64_t) * (size_t)n));
          ts_buf_free(&b2);
        }
        ts_buf_free(&b);
        cases++;
      } while (next_perm(perm, r));
    }
  }
  EXPECT(cases > 1000);
}

/* ---- meshes ---- */

static void test_mesh(void) {
  ts_mesh_t m;
  EXPECT(ts_mesh_init(&m, 2, 4) == TS_OK && ts_mesh_num_devices(&m) == 8);
  int64_t s, i, d, r;
  EXPECT(ts_mesh_locate(&m, 5, &s, &i) == TS_OK && s == 1 && i == 1);
  EXPECT(ts_mesh_device(&m, 1, 3, &d) == TS_OK && d == 7);
  EXPECT(ts_mesh_rank(&m, 6, &r) == TS_OK && r == 6);
  EXPECT(ts_mesh_locate(&m, 8, &s, &i) == TS_ERR_INVALID_ARGUMENT);
  EXPECT(ts_mesh_init(&m, 0, 4) == TS_ERR_INVALID_ARGUMENT);
  EXPECT(ts_mesh_init(&m, 2, 4) == TS_OK);
  bool crosses = true;
  EXPECT(ts_mesh_crosses_slices(&m, (const int64_t[]){0, 1, 2, 3}, 4, &crosses) == TS_OK && !crosses);
  EXPECT(ts_mesh_crosses_slices(&m, (const int64_t[]){3, 4}, 2, &crosses) == TS_OK && crosses);
  EXPECT(ts_mesh_crosses_slices(&m, (const int64_t[]){3, 9}, 2, &crosses) == TS_ERR_INVALID_ARGUMENT);
  int64_t intra[8], cross[8], ns, per;
  EXPECT(ts_mesh_split_group(&m, (const int64_t[]){0, 1, 4, 5}, 4, intra, cross, &ns, &per) == TS_OK);
  EXPECT(ns == 2 && per == 2);
  EXPECT_I64S(intra, 4, L(0, 1, 4, 5));
  EXPECT_I64S(cross, 4, L(0, 4, 1, 5));
  /* slices in order of first appearance, members in group order */
  EXPECT(ts_mesh_split_group(&m, (const int64_t[]){6, 2, 4, 0}, 4, intra, cross, &ns, &per) == TS_OK);
  EXPECT_I64S(intra, 4, L(6, 4, 2, 0));
  EXPECT_I64S(cross, 4, L(6, 2, 4, 0));
  EXPECT(ts_mesh_split_group(&m, (const int64_t[]){0, 1, 4}, 3, intra, cross, &ns, &per) == TS_ERR_UNSUPPORTED);
  EXPECT(ts_mesh_split_group(&m, (const int64_t[]){0, 0}, 2, intra, cross, &ns, &per) == TS_ERR_INVALID_ARGUMENT);
  /* one slice: nothing crosses */
  EXPECT(ts_mesh_init(&m, 1, 8) == TS_OK);
  EXPECT(ts_mesh_crosses_slices(&m, (const int64_t[]){0, 7}, 2, &crosses) == TS_OK && !crosses);
}

/* ---- Shardy ---- */

static ts_sdy_meshes_t *xyz;

static ts_sharding_value_t *sdy_at(const ts_sdy_meshes_t *ms, const char *text, const char *dims, int line) {
  ts_sharding_value_t *v = NULL;
  const ts_shape_t *s = shp(dims);
  ts_status_t st = ts_sharding_from_sdy(A, ms, text, 1, &s, &v);
  if (st != TS_OK) {
    fprintf(stderr, "%s:%d: FAIL: %s: %s\n", __FILE__, line, text, ts_status_string(st));
    failures++;
  }
  return v;
}
#define SDY(text, dims) sdy_at(xyz, text, dims, __LINE__)

static void test_frontend_attrs(void) {
  const char *v = NULL;
  const char *blob = "{xla.sdy.in_shardings=\"#sdy.sharding_per_value<[<@mesh, [{\\\"x\\\"}, {}]>]>\","
                     "xla.sdy.manual_axes=\"#sdy<manual_axes{\\\"x\\\"}>\", inlineable=\"false\", n=3}";
  EXPECT(ts_sharding_frontend_attr(A, blob, "xla.sdy.in_shardings", &v) == TS_OK && v &&
         !strcmp(v, "#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>"));
  EXPECT(ts_sharding_frontend_attr(A, blob, "xla.sdy.manual_axes", &v) == TS_OK && v &&
         !strcmp(v, "#sdy<manual_axes{\"x\"}>"));
  EXPECT(ts_sharding_frontend_attr(A, blob, "inlineable", &v) == TS_OK && v && !strcmp(v, "false"));
  EXPECT(ts_sharding_frontend_attr(A, blob, "n", &v) == TS_OK && v && !strcmp(v, "3"));
  EXPECT(ts_sharding_frontend_attr(A, blob, "xla.sdy", &v) == TS_OK && v == NULL);
  EXPECT(ts_sharding_frontend_attr(A, "{xla.sdy.meshes={mesh = #sdy.mesh<[\"x\"=2]>}}", "xla.sdy.meshes", &v) ==
             TS_OK &&
         v && !strcmp(v, "{mesh = #sdy.mesh<[\"x\"=2]>}"));
  EXPECT(ts_sharding_frontend_attr(A, "{}", "k", &v) == TS_OK && v == NULL);
  EXPECT(ts_sharding_frontend_attr(A, "{k=\"a\\tb\\\\\"}", "k", &v) == TS_OK && v && !strcmp(v, "a\tb\\"));
  EXPECT(ts_sharding_frontend_attr(A, "{k=\"open", "k", &v) == TS_ERR_PARSE);
  EXPECT(ts_sharding_frontend_attr(A, "{k={a}", "k", &v) == TS_ERR_PARSE);
}

static void test_sdy_meshes(void) {
  EXPECT(ts_sharding_sdy_meshes_parse(A, "{mesh = #sdy.mesh<[\"x\"=2, \"y\"=4, \"z\"=4]>}", &xyz) == TS_OK);
  if (xyz) {
    EXPECT(xyz->n == 1 && !strcmp(xyz->meshes[0].name, "mesh") && xyz->meshes[0].naxes == 3);
    EXPECT(xyz->meshes[0].ndevices == 32 && xyz->meshes[0].device_ids == NULL);
    EXPECT(!strcmp(xyz->meshes[0].axis_names[1], "y") && xyz->meshes[0].axis_sizes[2] == 4);
  }
  ts_sdy_meshes_t *ms = NULL;
  EXPECT(ts_sharding_sdy_meshes_parse(A, "{}", &ms) == TS_OK && ms && ms->n == 0);
  EXPECT(ts_sharding_sdy_meshes_parse(A, "{maximal_mesh_0 = #sdy.mesh<[], device_ids=[0]>, "
                                         "empty_mesh = #sdy.mesh<[]>, "
                                         "m2 = #sdy.mesh<[\"a\"=2, \"b\"=2], device_ids=[0,2,1,3]>}",
                                      &ms) == TS_OK);
  if (ms && ms->n == 3) {
    EXPECT(ms->meshes[0].naxes == 0 && ms->meshes[0].ndevices == 1 && ms->meshes[0].device_ids[0] == 0);
    EXPECT(ms->meshes[1].naxes == 0 && ms->meshes[1].device_ids == NULL);
    EXPECT_I64S(ms->meshes[2].device_ids, ms->meshes[2].ndevices, L(0, 2, 1, 3));
    EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@maximal_mesh_0, [{}, {}]>", "4,4", __LINE__),
                 S("{maximal device=0}", "4,4"));
    EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@empty_mesh, [{}, {}]>", "4,4", __LINE__), S("{replicated}", "4,4"));
    /* mesh array [[0,2],[1,3]]: "a" tile 0 is held by {0,2}, tile 1 by {1,3} */
    EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@m2, [{\"a\"}, {}]>", "4,4", __LINE__),
                 S("{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}", "4,4"));
  } else {
    EXPECT(!"three meshes");
  }
  /* wrong device count, duplicate ids, malformed */
  EXPECT(ts_sharding_sdy_meshes_parse(A, "{m = #sdy.mesh<[\"a\"=2], device_ids=[0]>}", &ms) == TS_ERR_VERIFY);
  EXPECT(ts_sharding_sdy_meshes_parse(A, "{m = #sdy.mesh<[\"a\"=2], device_ids=[1,1]>}", &ms) == TS_ERR_VERIFY);
  EXPECT(ts_sharding_sdy_meshes_parse(A, "{m = #sdy.mesh<[\"a\"=2]}", &ms) == TS_ERR_PARSE);
  /* the module-level attribute of a parsed module */
  const char *text = "HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[\"x\"=2, \"y\"=4]>}}\n"
                     "ENTRY e {\n  ROOT p = f32[8,8] parameter(0)\n}\n";
  ts_source_t src = {"m.hlo", text, strlen(text)};
  ts_hlo_module_t *mod = NULL;
  ts_diag_t d = {0};
  EXPECT(ts_hlo_parse(&src, NULL, &mod, &d) == TS_OK);
  ms = NULL;
  EXPECT(mod && ts_sharding_sdy_module_meshes(A, mod, &ms) == TS_OK && ms && ms->n == 1 &&
         ms->meshes[0].ndevices == 8);
  ts_hlo_module_destroy(mod);
  ts_diag_free(&d);
}

static void test_sdy_shardings(void) {
  /* section 9: with x=2, y=4, z=4 */
  EXPECT_EQ_SH(SDY("#sdy.sharding<@mesh, [{\"x\"}, {}]>", "8,8"),
               S("{devices=[2,1,16]<=[32] last_tile_dim_replicate}", "8,8"));
  ts_sharding_value_t *v = SDY("#sdy.sharding<@mesh, [{}, {\"y\"}]>", "8,8");
  EXPECT_EQ_SH(v, S("{devices=[1,4,8]<=[2,4,4]T(1,0,2) last_tile_dim_replicate}", "8,8"));
  EXPECT_PRINT(v, "{devices=[1,4,8]<=[2,4,4]T(1,0,2) last_tile_dim_replicate}");
  /* all axes on one dim, major first: a plain iota */
  EXPECT_EQ_SH(SDY("#sdy.sharding<@mesh, [{\"x\", \"y\", \"z\"}, {}]>", "64,8"), S("{devices=[32,1]<=[32]}", "64,8"));
  /* z then x: tiles [4,2], y left over; order of axes (z,x,y) = T(2,0,1) */
  EXPECT_EQ_SH(SDY("#sdy.sharding<@mesh, [{\"z\"}, {\"x\"}]>", "8,8"),
               S("{devices=[4,2,4]<=[2,4,4]T(2,0,1) last_tile_dim_replicate}", "8,8"));
  /* two axes on one dim, minor-first order: "y","x" is T(1,0,2) with tile 8 */
  EXPECT_EQ_SH(SDY("#sdy.sharding<@mesh, [{\"y\", \"x\"}, {}]>", "8,8"),
               S("{devices=[8,1,4]<=[2,4,4]T(1,0,2) last_tile_dim_replicate}", "8,8"));
  /* sub-axes: y = y0(2) y1(2) major first; dim 0 on y0, dim 1 on y1, x and z
   * replicated: mesh reshaped [2,2,2,4] (x,y0,y1,z) read as (y0,y1,x,z) */
  EXPECT_EQ_SH(SDY("#sdy.sharding<@mesh, [{\"y\":(1)2}, {\"y\":(2)2}]>", "8,8"),
               S("{devices=[2,2,8]<=[2,2,2,4]T(1,2,0,3) last_tile_dim_replicate}", "8,8"));
  /* the sub-axes of y in order are y itself */
  EXPECT_EQ_SH(SDY("#sdy.sharding<@mesh, [{\"y\":(1)2, \"y\":(2)2}, {}]>", "8,8"),
               SDY("#sdy.sharding<@mesh, [{\"y\"}, {}]>", "8,8"));
  /* open dims, priorities and explicitly replicated axes change nothing here */
  EXPECT_EQ_SH(SDY("#sdy.sharding<@mesh, [{\"x\", ?}p1, {?}], replicated={\"y\"}>", "8,8"),
               SDY("#sdy.sharding<@mesh, [{\"x\"}, {}]>", "8,8"));
  /* inline mesh (hlo_text_format.md 9: f32[10,20] next to {devices=[1,2]<=[2]}) */
  EXPECT_EQ_SH(SDY("#sdy.sharding<mesh<[\"x\"=2]>, [{}, {\"x\"}]>", "10,20"), S("{devices=[1,2]<=[2]}", "10,20"));
  /* per value: a tuple */
  ts_sharding_value_t *t = NULL;
  const ts_shape_t *shapes[2] = {shp("8,8"), shp("4")};
  EXPECT(ts_sharding_from_sdy(A, xyz, "#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>, <@mesh, [{}]>]>", 2, shapes,
                              &t) == TS_OK);
  EXPECT_EQ_SH(t, S("{{devices=[2,1,16]<=[32] last_tile_dim_replicate}, {replicated}}", "-"));
  /* errors */
  ts_sharding_value_t *e;
  const ts_shape_t *s88 = shp("8,8");
  EXPECT(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@mesh, [{\"w\"}, {}]>", 1, &s88, &e) == TS_ERR_VERIFY);
  EXPECT(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@nomesh, [{}, {}]>", 1, &s88, &e) == TS_ERR_VERIFY);
  EXPECT(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@mesh, [{}]>", 1, &s88, &e) == TS_ERR_VERIFY);
  EXPECT(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@mesh, [{\"x\"}, {\"x\"}]>", 1, &s88, &e) == TS_ERR_VERIFY);
  EXPECT(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@mesh, [{\"x\"}, {}>", 1, &s88, &e) == TS_ERR_PARSE);
  EXPECT(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@mesh, [{\"y\":(3)2}, {}]>", 1, &s88, &e) == TS_ERR_VERIFY);
  /* every proper prefix of valid text is an error, never a crash (ASan) */
  static const char *const texts[] = {
      "#sdy.sharding_per_value<[<@mesh, [{\"x\", ?}p1, {\"y\":(2)2}], replicated={\"z\"}>, <mesh<[\"a\"=2]>, [{}]>]>",
      "{m = #sdy.mesh<[\"a\"=2, \"b\"=2], device_ids=[0,2,1,3]>, e = #sdy.mesh<[]>}",
      "{xla.sdy.sharding=\"#sdy.sharding<@mesh, [{\\\"x\\\"}]>\", k={a={b}}, n=3}",
  };
  for (int t = 0; t < 3; t++) {
    size_t n = strlen(texts[t]);
    for (size_t k = 0; k <= n; k++) {
      char *p = malloc(k + 1);
      memcpy(p, texts[t], k);
      p[k] = 0;
      ts_sdy_meshes_t *ms = NULL;
      const char *v = NULL;
      ts_status_t st = t == 0   ? ts_sharding_from_sdy(A, xyz, p, 0, NULL, &e)
                       : t == 1 ? ts_sharding_sdy_meshes_parse(A, p, &ms)
                                : ts_sharding_frontend_attr(A, p, "n", &v);
      if (k < n) EXPECT(st != TS_OK);
      else EXPECT(st == TS_OK);
      free(p);
    }
  }
  EXPECT(ts_sharding_frontend_attr(A, texts[2], "xla.sdy.sharding", &(const char *){NULL}) == TS_OK);
}

/* ---- edge cases (review of issue 4) ---- */

/* Uneven and empty shards, rank 0, and tuple shapes. */
static void test_edge_shapes(void) {
  int64_t o[4], l[4], d[4];
  /* N=3 over 4 tiles: c=1 -> [0,1),[1,2),[2,3) and an empty [3,3) */
  ts_sharding_value_t *v = S("{devices=[4]<=[4]}", "3");
  const ts_shape_t *s3 = shp("3");
  for (int k = 0; v && k < 4; k++) {
    EXPECT(ts_sharding_shard(v, s3, k, o, l) == TS_OK);
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
  EXPECT(ts_sharding_parse(A, "{devices=[2]0,1}", shp(""), &e, NULL) == TS_ERR_VERIFY);
  v = S("{replicated}", "");
  EXPECT(v && ts_sharding_shard(v, shp(""), 0, o, l) == TS_OK);
  /* a non-tuple sharding on a tuple shape goes to every leaf; a tiling
   * that does not fit one leaf is an error */
  ts_shape_t tup = {.elem = TS_TUPLE, .ntuple = 2};
  ts_shape_t *leaves[2] = {(ts_shape_t *)shp("4"), (ts_shape_t *)shp("2,2")};
  tup.tuple = leaves;
  EXPECT(ts_sharding_parse(A, "{replicated}", &tup, &v, NULL) == TS_OK && v->kind == TS_SHARD_TUPLE &&
         v->ntuple == 2 && v->tuple[1]->kind == TS_SHARD_REPLICATED);
  EXPECT(ts_sharding_parse(A, "{devices=[2]0,1}", &tup, &e, NULL) == TS_ERR_VERIFY);
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
  EXPECT(ts_sharding_tiled(A, 2, (const int64_t[]){2, 2}, (const int64_t[]){0, 1, 2, 3}, 1, &bad, &v) ==
         TS_ERR_INVALID_ARGUMENT);
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
  EXPECT(r.kind == TS_RESHARD_DYNAMIC_SLICE);
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
  EXPECT(r.kind == TS_RESHARD_OTHER);
  r = reshard("{manual}", "{replicated}", "8");
  EXPECT(r.kind == TS_RESHARD_OTHER);
  for (int k = TS_RESHARD_NONE; k <= TS_RESHARD_OTHER; k++) EXPECT(strcmp(ts_reshard_kind_name(k), "?") != 0);
}

/* Meshes of one slice, and of one device per slice. */
static void test_edge_mesh(void) {
  ts_mesh_t m;
  int64_t intra[4], cross[4], ns, per, s, i;
  bool crosses = true;
  EXPECT(ts_mesh_init(&m, 1, 4) == TS_OK);
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
  EXPECT(ts_mesh_rank(&m, 4, &r) == TS_ERR_INVALID_ARGUMENT);
  EXPECT(ts_mesh_init(&m, INT64_MAX, 2) == TS_ERR_INVALID_ARGUMENT);
}

/* Shardy meshes with device_ids, and sub-axes over them. */
static void test_edge_sdy(void) {
  ts_sdy_meshes_t *ms = NULL;
  EXPECT(ts_sharding_sdy_meshes_parse(A,
                                      "{r = #sdy.mesh<[\"x\"=4], device_ids=[3,2,1,0]>, "
                                      "q = #sdy.mesh<[\"x\"=2, \"y\"=4], device_ids=[7,6,5,4,3,2,1,0]>, "
                                      "one = #sdy.mesh<[], device_ids=[5]>}",
                                      &ms) == TS_OK);
  if (!ms) return;
  /* x = (a, b), device at x = 2a+b is ids[x] = 3-x; dim 0 on b:
   * tile b holds x = b, b+2 -> tile 0 {3,1}, tile 1 {2,0}, sorted */
  EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@r, [{\"x\":(2)2}]>", "8", __LINE__),
               S("{devices=[2,2]1,3,0,2 last_tile_dim_replicate}", "8"));
  /* the whole axis over reversed ids */
  EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@r, [{\"x\"}]>", "8", __LINE__), S("{devices=[4]3,2,1,0}", "8"));
  /* mesh (x, ya, yb), flat 4x+2ya+yb, id 7-flat; dim 0 on yb, dim 1 on x,
   * ya left: tile (i,j) group {7-(4j+i), 7-(4j+2+i)} */
  EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@q, [{\"y\":(2)2}, {\"x\"}]>", "8,8", __LINE__),
               S("{devices=[2,2,2]5,7,1,3,4,6,0,2 last_tile_dim_replicate}", "8,8"));
  /* a mesh with no axes and one device id: maximal on it */
  ts_sharding_value_t *v = sdy_at(ms, "#sdy.sharding<@one, [{}]>", "8", __LINE__);
  EXPECT(v && v->kind == TS_SHARD_MAXIMAL && v->device == 5);
  /* a sub-axis whose pre * size overflows int64 is an error, not a crash */
  ts_sharding_value_t *e = NULL;
  const ts_shape_t *s8 = shp("8");
  EXPECT(ts_sharding_from_sdy(A, ms, "#sdy.sharding<@r, [{\"x\":(4294967296)4294967296}]>", 1, &s8, &e) ==
         TS_ERR_VERIFY);
  EXPECT(ts_sharding_from_sdy(A, ms, "#sdy.sharding<@r, [{\"x\":(2)4}]>", 1, &s8, &e) == TS_ERR_VERIFY);
  /* a scalar on a 4-device mesh: replicated */
  EXPECT_PRINT(sdy_at(ms, "#sdy.sharding<@r, []>", "", __LINE__), "{replicated}");
}

int main(void) {
  A = ts_arena_create();
  test_tile_assignments();
  test_canonical_equality();
  test_build_errors();
  test_shard_extents();
  test_tile_lookup();
  test_groups();
  test_transpose();
  test_reshape();
  test_reshard();
  test_print();
  test_iota_forms();
  test_mesh();
  test_frontend_attrs();
  test_sdy_meshes();
  test_sdy_shardings();
  test_edge_shapes();
  test_edge_subgroups();
  test_edge_reshape();
  test_edge_reshard();
  test_edge_mesh();
  test_edge_sdy();
  ts_arena_destroy(A);
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
