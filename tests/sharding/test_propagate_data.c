/* Unit tests of sharding propagation: defaults for unannotated values,
 * slice/pad/concatenate, dynamic-slice, iota and clamp, sort, gather,
 * scatter. One small module per op family; each expected sharding is worked
 * out by hand from the rule in the comment next to it (sharding/propagate.c
 * states the rules). */
#include "propagate_test.h"

/* Defaults and special kinds: in an all-maximal module the init value z
 * takes the reduce's device backward (a scalar operand's rule) and the
 * reducer's parameters take the scalar view of the reduce (an applied
 * computation's rule), so nothing is left to the default; manual flows
 * through elementwise ops and is never replaced by a replicated operand;
 * iota and constants with no tiled neighbour end replicated. */
static void test_defaults(void) {
  ts_sharding_propagate_stats_t st = {0};
  EXPECT_PROPAGATION_STATS("HloModule m, num_partitions=2\n"
                           SUM_F32
                           "ENTRY e {\n"
                           "  p = f32[8] parameter(0), sharding={maximal device=1}\n"
                           "  z = f32[] constant(0)\n"
                           "  n = f32[8] negate(p)\n"
                           "  ROOT r = f32[] reduce(n, z), dimensions={0}, to_apply=sum\n"
                           "}\n",
                           &st,
                           {"n", "{maximal device=1}"},
                           {"r", "{maximal device=1}"},
                           {"x", "{maximal device=1}"},
                           {"z", "{maximal device=1}"},
                           {"s", "{maximal device=1}"});
  EXPECT(st.annotated == 1 && st.propagated == 6 && st.defaulted == 0 && st.converged);

  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
                     "ENTRY e {\n"
                     "  p = f32[8] parameter(0), sharding={manual}\n"
                     "  c = f32[] constant(1)\n"
                     "  b = f32[8] broadcast(c), dimensions={}\n"
                     "  a = f32[8] add(b, p)\n"
                     "  io = s32[8] iota(), iota_dimension=0\n"
                     "  ROOT t = (f32[8], s32[8]) tuple(a, io)\n"
                     "}\n",
                     {"a", "{manual}"},
                     {"b", "{manual}"},
                     {"io", "{replicated}"},
                     {"t", "{{manual}, {replicated}}"});
}

/* Slice, pad, concatenate keep a dim's tiling while it still has at least
 * as many elements as tiles. p [2,2]<=[4]: sl (8x2) keeps both; s1 (8x1)
 * has 1 element for 2 tiles on dim 1, so that tiling becomes a replicated
 * subgroup; pd (padded) keeps both; the pad value c takes the scalar view
 * ({replicated}); cat (dim 1 concatenated, 32 >= 2) keeps p's tiling and q
 * gets it backward. Backward through a slice: ann's [4,1] reaches su and
 * then u (8 >= 4 rows). */
static void test_slice_pad_concat(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     "ENTRY e {\n"
                     "  p = f32[8,16] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                     "  q = f32[8,16] parameter(1)\n"
                     "  u = f32[8,16] parameter(2)\n"
                     "  c = f32[] constant(0)\n"
                     "  sl = f32[8,2] slice(p), slice={[0:8], [0:2]}\n"
                     "  s1 = f32[8,1] slice(p), slice={[0:8], [3:4]}\n"
                     "  pd = f32[10,20] pad(p, c), padding=1_1x2_2\n"
                     "  cat = f32[8,32] concatenate(p, q), dimensions={1}\n"
                     "  su = f32[4,16] slice(u), slice={[0:4], [0:16]}\n"
                     "  ann = f32[4,16] custom-call(su), custom_call_target=\"Sharding\", sharding={devices=[4,1]<=[4]}\n"
                     "  ROOT t = (f32[8,2], f32[8,1], f32[10,20], f32[8,32], f32[4,16]) tuple(sl, s1, pd, cat, ann)\n"
                     "}\n",
                     {"sl", "{devices=[2,2]<=[4]}"},
                     {"s1", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"},
                     {"pd", "{devices=[2,2]<=[4]}"},
                     {"c", "{replicated}"},
                     {"cat", "{devices=[2,2]<=[4]}"},
                     {"q", "{devices=[2,2]<=[4]}"},
                     {"su", "{devices=[4,1]<=[4]}"},
                     {"u", "{devices=[4,1]<=[4]}"});
}

/* Dynamic-slice / dynamic-update-slice: a dim sliced whole keeps its
 * tiling, a sliced dim is untiled (tiling to a replicated subgroup), start
 * indices take the scalar view ({replicated}). ds keeps p's dim 0 only;
 * dus follows its operand p; upd (8x4 in 8x16) gets dim 0 backward; v
 * gets s2's dim-1 tiling backward (dim 1 whole). */
static void test_dynamic_slice(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     "ENTRY e {\n"
                     "  p = f32[8,16] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                     "  i = s32[] parameter(1)\n"
                     "  z = s32[] constant(0)\n"
                     "  upd = f32[8,4] parameter(2)\n"
                     "  v = f32[4,16] parameter(3)\n"
                     "  ds = f32[8,4] dynamic-slice(p, z, i), dynamic_slice_sizes={8,4}\n"
                     "  dus = f32[8,16] dynamic-update-slice(p, upd, z, i)\n"
                     "  ds2 = f32[1,16] dynamic-slice(v, i, z), dynamic_slice_sizes={1,16}\n"
                     "  s2 = f32[1,16] custom-call(ds2), custom_call_target=\"Sharding\", sharding={devices=[1,4]<=[4]}\n"
                     "  ROOT t = (f32[8,4], f32[8,16], f32[1,16]) tuple(ds, dus, s2)\n"
                     "}\n",
                     {"ds", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"},
                     {"dus", "{devices=[2,2]<=[4]}"},
                     {"upd", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"},
                     {"ds2", "{devices=[1,4]<=[4]}"},
                     {"v", "{devices=[1,4]<=[4]}"},
                     {"i", "{replicated}"},
                     {"z", "{replicated}"});
}

/* Iota is replicated forward and takes a user's tiling backward (a [2,1]
 * add beats {replicated}); io2, with no tiled user, stays {replicated}
 * but counts as propagated. Clamp with scalar bounds is elementwise over
 * the array operand. */
static void test_iota_clamp(void) {
  ts_sharding_propagate_stats_t st = {0};
  EXPECT_PROPAGATION_STATS("HloModule m, num_partitions=2\n"
                           "ENTRY e {\n"
                           "  p = s32[8,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
                           "  io = s32[8,16] iota(), iota_dimension=1\n"
                           "  a = s32[8,16] add(io, p)\n"
                           "  io2 = s32[8] iota(), iota_dimension=0\n"
                           "  lo = s32[] constant(0)\n"
                           "  hi = s32[] constant(5)\n"
                           "  cl = s32[8,16] clamp(lo, a, hi)\n"
                           "  ROOT t = (s32[8,16], s32[8]) tuple(cl, io2)\n"
                           "}\n",
                           &st,
                           {"io", "{devices=[2,1]<=[2]}"},
                           {"a", "{devices=[2,1]<=[2]}"},
                           {"cl", "{devices=[2,1]<=[2]}"},
                           {"io2", "{replicated}"},
                           {"t", "{{devices=[2,1]<=[2]}, {replicated}}"});
  /* lo and hi: clamp passes nothing to a scalar bound */
  EXPECT(st.annotated == 1 && st.propagated == 5 && st.defaulted == 2);
}

/* Sort along dim 1, which k tiles: XLA keeps a sharded sort dim (the
 * partitioner sorts it), one sharding for every operand and output: k's
 * [2,2] on both outputs, and it reaches v backward. */
static void test_sort(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     "cmp {\n"
                     "  a = f32[] parameter(0)\n"
                     "  b = f32[] parameter(1)\n"
                     "  c = s32[] parameter(2)\n"
                     "  d = s32[] parameter(3)\n"
                     "  ROOT lt = pred[] compare(a, b), direction=LT\n"
                     "}\n"
                     "ENTRY e {\n"
                     "  k = f32[8,16] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                     "  v = s32[8,16] parameter(1)\n"
                     "  ROOT s = (f32[8,16], s32[8,16]) sort(k, v), dimensions={1}, to_apply=cmp\n"
                     "}\n",
                     {"s", "{{devices=[2,2]<=[4]}, {devices=[2,2]<=[4]}}"},
                     {"v", "{devices=[2,2]<=[4]}"});
}

/* Gather (embedding lookup [32,16] by ids [4,6,1] -> [4,6,16]): output
 * batch dims follow the indices, the offset dim follows the operand's
 * non-collapsed dim 1 (sliced whole); the collapsed vocabulary dim's
 * tiling becomes a replicated subgroup. emb [2,2] on devices
 * [[0,1],[2,3]] gives g [1,1,2] tiles over devices (0,2),(1,3): the iota
 * [2,2]T(1,0). Backward: a2's [2,1,2] on g2 gives ids2 its batch dim 0
 * (the D tiling replicated) and emb2 its dim 1 (the B tiling replicated,
 * devices again [2,2]T(1,0)). */
static void test_gather(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     "ENTRY e {\n"
                     "  emb = f32[32,16] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                     "  ids = s32[4,6,1] parameter(1)\n"
                     "  g = f32[4,6,16] gather(emb, ids), offset_dims={2}, collapsed_slice_dims={0}, "
                     "start_index_map={0}, index_vector_dim=2, slice_sizes={1,16}\n"
                     "  emb2 = f32[32,16] parameter(2)\n"
                     "  ids2 = s32[4,6,1] parameter(3)\n"
                     "  g2 = f32[4,6,16] gather(emb2, ids2), offset_dims={2}, collapsed_slice_dims={0}, "
                     "start_index_map={0}, index_vector_dim=2, slice_sizes={1,16}\n"
                     "  a2 = f32[4,6,16] custom-call(g2), custom_call_target=\"Sharding\", sharding={devices=[2,1,2]<=[4]}\n"
                     "  ROOT t = (f32[4,6,16], f32[4,6,16]) tuple(g, a2)\n"
                     "}\n",
                     {"g", "{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}"},
                     {"ids", "{replicated}"},
                     {"g2", "{devices=[2,1,2]<=[4]}"},
                     {"ids2", "{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}"},
                     {"emb2", "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}"});
}

/* Scatter (embedding gradient): the output follows the operand both ways
 * (r's [1,2]+replicated reaches sc and then z; z2's [2,1]+replicated gives
 * sc2); the updates follow the indices' batch tiling (ids [4,1,1]: score
 * 8) over the output's view of them (D tiled 2 with a replicated
 * subgroup: score 4). */
static void test_scatter(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     SUM_F32
                     "ENTRY e {\n"
                     "  z = f32[32,16] parameter(0)\n"
                     "  ids = s32[4,6,1] parameter(1), sharding={devices=[4,1,1]<=[4]}\n"
                     "  upd = f32[4,6,16] parameter(2)\n"
                     "  z2 = f32[32,16] parameter(3), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
                     "  sc = f32[32,16] scatter(z, ids, upd), update_window_dims={2}, inserted_window_dims={0}, "
                     "scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=sum\n"
                     "  r = f32[32,16] copy(sc), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}\n"
                     "  sc2 = f32[32,16] scatter(z2, ids, upd), update_window_dims={2}, inserted_window_dims={0}, "
                     "scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=sum\n"
                     "  ROOT t = (f32[32,16], f32[32,16]) tuple(r, sc2)\n"
                     "}\n",
                     {"sc", "{devices=[1,2,2]<=[4] last_tile_dim_replicate}"},
                     {"z", "{devices=[1,2,2]<=[4] last_tile_dim_replicate}"},
                     {"upd", "{devices=[4,1,1]<=[4]}"},
                     {"sc2", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"},
                     /* the combiner's parameters: the scalar view of a tiled scatter */
                     {"x", "{replicated}"});
}

int test_propagate_data(void) {
  test_defaults();
  test_slice_pad_concat();
  test_dynamic_slice();
  test_iota_clamp();
  test_sort();
  test_gather();
  test_scatter();
  return failures;
}
