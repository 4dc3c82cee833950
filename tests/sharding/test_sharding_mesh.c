/* Unit tests of sharding/: device meshes (slices) and Shardy input (frontend
 * attributes, meshes, shardings). Every golden is worked out by hand (the
 * derivation is in the comment next to it) or is an example from
 * hlo_text_format.md sections 8.3 and 9. */
#include "sharding_test.h"

/* ---- meshes ---- */

static void test_mesh(void) {
  ts_mesh_t m;
  EXPECT(ts_mesh_init(&m, 2, 4) == TS_OK && ts_mesh_num_devices(&m) == 8);
  int64_t s, i, d, r;
  EXPECT(ts_mesh_locate(&m, 5, &s, &i) == TS_OK && s == 1 && i == 1);
  EXPECT(ts_mesh_device(&m, 1, 3, &d) == TS_OK && d == 7);
  EXPECT(ts_mesh_rank(&m, 6, &r) == TS_OK && r == 6);
  EXPECT_EQ(ts_mesh_locate(&m, 8, &s, &i), TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ts_mesh_init(&m, 0, 4), TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ts_mesh_init(&m, 2, 4), TS_OK);
  bool crosses = true;
  EXPECT(ts_mesh_crosses_slices(&m, (const int64_t[]){0, 1, 2, 3}, 4, &crosses) == TS_OK && !crosses);
  EXPECT(ts_mesh_crosses_slices(&m, (const int64_t[]){3, 4}, 2, &crosses) == TS_OK && crosses);
  EXPECT_EQ(ts_mesh_crosses_slices(&m, (const int64_t[]){3, 9}, 2, &crosses), TS_ERR_INVALID_ARGUMENT);
  int64_t intra[8], cross[8], ns, per;
  EXPECT_EQ(ts_mesh_split_group(&m, (const int64_t[]){0, 1, 4, 5}, 4, intra, cross, &ns, &per), TS_OK);
  EXPECT(ns == 2 && per == 2);
  EXPECT_I64S(intra, 4, L(0, 1, 4, 5));
  EXPECT_I64S(cross, 4, L(0, 4, 1, 5));
  /* slices in order of first appearance, members in group order */
  EXPECT_EQ(ts_mesh_split_group(&m, (const int64_t[]){6, 2, 4, 0}, 4, intra, cross, &ns, &per), TS_OK);
  EXPECT_I64S(intra, 4, L(6, 4, 2, 0));
  EXPECT_I64S(cross, 4, L(6, 2, 4, 0));
  EXPECT_EQ(ts_mesh_split_group(&m, (const int64_t[]){0, 1, 4}, 3, intra, cross, &ns, &per), TS_ERR_UNSUPPORTED);
  EXPECT_EQ(ts_mesh_split_group(&m, (const int64_t[]){0, 0}, 2, intra, cross, &ns, &per), TS_ERR_INVALID_ARGUMENT);
  /* one slice: nothing crosses */
  EXPECT_EQ(ts_mesh_init(&m, 1, 8), TS_OK);
  EXPECT(ts_mesh_crosses_slices(&m, (const int64_t[]){0, 7}, 2, &crosses) == TS_OK && !crosses);
}

/* ---- Shardy ---- */

static ts_sdy_meshes_t *xyz;

#define SDY(text, dims) sdy_at(xyz, text, dims, __FILE__, __LINE__)

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
  EXPECT_EQ(ts_sharding_frontend_attr(A, "{k=\"open", "k", &v), TS_ERR_PARSE);
  EXPECT_EQ(ts_sharding_frontend_attr(A, "{k={a}", "k", &v), TS_ERR_PARSE);
}

static void test_sdy_meshes(void) {
  EXPECT_EQ(ts_sharding_sdy_meshes_parse(A, "{mesh = #sdy.mesh<[\"x\"=2, \"y\"=4, \"z\"=4]>}", &xyz), TS_OK);
  if (xyz) {
    EXPECT(xyz->n == 1 && !strcmp(xyz->meshes[0].name, "mesh") && xyz->meshes[0].naxes == 3);
    EXPECT(xyz->meshes[0].ndevices == 32 && xyz->meshes[0].device_ids == NULL);
    EXPECT(!strcmp(xyz->meshes[0].axis_names[1], "y") && xyz->meshes[0].axis_sizes[2] == 4);
  }
  ts_sdy_meshes_t *ms = NULL;
  EXPECT(ts_sharding_sdy_meshes_parse(A, "{}", &ms) == TS_OK && ms && ms->n == 0);
  EXPECT_EQ(ts_sharding_sdy_meshes_parse(A, "{maximal_mesh_0 = #sdy.mesh<[], device_ids=[0]>, "
                                         "empty_mesh = #sdy.mesh<[]>, "
                                         "m2 = #sdy.mesh<[\"a\"=2, \"b\"=2], device_ids=[0,2,1,3]>}",
                                      &ms), TS_OK);
  if (ms && ms->n == 3) {
    EXPECT(ms->meshes[0].naxes == 0 && ms->meshes[0].ndevices == 1 && ms->meshes[0].device_ids[0] == 0);
    EXPECT(ms->meshes[1].naxes == 0 && ms->meshes[1].device_ids == NULL);
    EXPECT_I64S(ms->meshes[2].device_ids, ms->meshes[2].ndevices, L(0, 2, 1, 3));
    EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@maximal_mesh_0, [{}, {}]>", "4,4", __FILE__, __LINE__),
                 S("{maximal device=0}", "4,4"));
    EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@empty_mesh, [{}, {}]>", "4,4", __FILE__, __LINE__), S("{replicated}", "4,4"));
    /* mesh array [[0,2],[1,3]]: "a" tile 0 is held by {0,2}, tile 1 by {1,3} */
    EXPECT_EQ_SH(sdy_at(ms, "#sdy.sharding<@m2, [{\"a\"}, {}]>", "4,4", __FILE__, __LINE__),
                 S("{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}", "4,4"));
  } else {
    EXPECT(!"three meshes");
  }
  /* wrong device count, duplicate ids, malformed */
  EXPECT_EQ(ts_sharding_sdy_meshes_parse(A, "{m = #sdy.mesh<[\"a\"=2], device_ids=[0]>}", &ms), TS_ERR_VERIFY);
  EXPECT_EQ(ts_sharding_sdy_meshes_parse(A, "{m = #sdy.mesh<[\"a\"=2], device_ids=[1,1]>}", &ms), TS_ERR_VERIFY);
  EXPECT_EQ(ts_sharding_sdy_meshes_parse(A, "{m = #sdy.mesh<[\"a\"=2]}", &ms), TS_ERR_PARSE);
  /* the module-level attribute of a parsed module */
  const char *text = "HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[\"x\"=2, \"y\"=4]>}}\n"
                     "ENTRY e {\n  ROOT p = f32[8,8] parameter(0)\n}\n";
  ts_source_t src = {"m.hlo", text, strlen(text)};
  ts_hlo_module_t *mod = NULL;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_hlo_parse(&src, NULL, &mod, &d), TS_OK);
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
  EXPECT_EQ(ts_sharding_from_sdy(A, xyz, "#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>, <@mesh, [{}]>]>", 2, shapes,
                              &t), TS_OK);
  EXPECT_EQ_SH(t, S("{{devices=[2,1,16]<=[32] last_tile_dim_replicate}, {replicated}}", "-"));
  /* errors */
  ts_sharding_value_t *e;
  const ts_shape_t *s88 = shp("8,8");
  EXPECT_EQ(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@mesh, [{\"w\"}, {}]>", 1, &s88, &e), TS_ERR_VERIFY);
  EXPECT_EQ(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@nomesh, [{}, {}]>", 1, &s88, &e), TS_ERR_VERIFY);
  EXPECT_EQ(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@mesh, [{}]>", 1, &s88, &e), TS_ERR_VERIFY);
  EXPECT_EQ(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@mesh, [{\"x\"}, {\"x\"}]>", 1, &s88, &e), TS_ERR_VERIFY);
  EXPECT_EQ(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@mesh, [{\"x\"}, {}>", 1, &s88, &e), TS_ERR_PARSE);
  EXPECT_EQ(ts_sharding_from_sdy(A, xyz, "#sdy.sharding<@mesh, [{\"y\":(3)2}, {}]>", 1, &s88, &e), TS_ERR_VERIFY);
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
      else EXPECT_EQ(st, TS_OK);
      free(p);
    }
  }
  EXPECT_EQ(ts_sharding_frontend_attr(A, texts[2], "xla.sdy.sharding", &(const char *){NULL}), TS_OK);
}

int test_sharding_mesh(void) {
  A = ts_arena_create();
  test_mesh();
  test_frontend_attrs();
  test_sdy_meshes();
  test_sdy_shardings();
  ts_arena_destroy(A);
  return failures;
}
