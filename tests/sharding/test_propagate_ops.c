/* Unit tests of sharding propagation: elementwise ops and priorities,
 * broadcast, transpose, reshape, reduce (forward, backward, variadic), dot
 * (forward, backward, disagreeing operands), convolution. One small module
 * per op family; each expected sharding is worked out by hand from the rule
 * in the comment next to it (sharding/propagate.c states the rules). */
#include "propagate_test.h"

/* Same sharding through elementwise ops, both ways: add takes p0's tiling
 * forward, p1 (the other operand) takes it backward; compare and select
 * keep it; a user annotation ({replicated} on r) is never overwritten. */
static void test_elementwise(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
                     "ENTRY e {\n"
                     "  p0 = f32[8,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
                     "  p1 = f32[8,16] parameter(1)\n"
                     "  add = f32[8,16] add(p0, p1)\n"
                     "  neg = f32[8,16] negate(add)\n"
                     "  cmp = pred[8,16] compare(neg, p1), direction=LT\n"
                     "  sel = f32[8,16] select(cmp, neg, p1)\n"
                     "  cvt = s32[8,16] convert(sel)\n"
                     "  r = s32[8,16] copy(cvt), sharding={replicated}\n"
                     "  ROOT out = s32[8,16] abs(r)\n"
                     "}\n",
                     {"p1", "{devices=[2,1]<=[2]}"},
                     {"add", "{devices=[2,1]<=[2]}"},
                     {"neg", "{devices=[2,1]<=[2]}"},
                     {"cmp", "{devices=[2,1]<=[2]}"},
                     {"sel", "{devices=[2,1]<=[2]}"},
                     {"cvt", "{devices=[2,1]<=[2]}"},
                     {"r", "{replicated}"},
                     {"out", "{replicated}"});
}

/* The more specific candidate wins: add(a 2-way, b 4-way) takes b's 2x2
 * tiling although a comes first; at equal specificity the first operand
 * wins (c [2,1] before d [1,2]). */
static void test_priority(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     "ENTRY e {\n"
                     "  a = f32[8,16] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
                     "  b = f32[8,16] parameter(1), sharding={devices=[2,2]<=[4]}\n"
                     "  c = f32[8,16] parameter(2), sharding={devices=[2,1]<=[2]}\n"
                     "  d = f32[8,16] parameter(3), sharding={devices=[1,2]<=[2]}\n"
                     "  ab = f32[8,16] add(a, b)\n"
                     "  cd = f32[8,16] add(c, d)\n"
                     "  ROOT t = (f32[8,16], f32[8,16]) tuple(ab, cd)\n"
                     "}\n",
                     {"ab", "{devices=[2,2]<=[4]}"},
                     {"cd", "{devices=[2,1]<=[2]}"},
                     {"t", "{{devices=[2,2]<=[4]}, {devices=[2,1]<=[2]}}"});
}

/* Broadcast forward: operand dim 0 lands on result dim 1, the new dim 0 is
 * untiled: [2] -> [1,2]. Backward: q (f32[8], dimensions={0}) sees the
 * user's [2,2]<=[4]: dim 0 keeps 2 tiles, the dropped dim 1's 2 tiles
 * become a replicated subgroup; the device array [[0,1],[2,3]] stays as is. */
static void test_broadcast(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     "ENTRY e {\n"
                     "  p = f32[16] parameter(0), sharding={devices=[2]<=[2]}\n"
                     "  q = f32[8] parameter(1)\n"
                     "  x = f32[8,16] parameter(2), sharding={devices=[2,2]<=[4]}\n"
                     "  bp = f32[8,16] broadcast(p), dimensions={1}\n"
                     "  bq = f32[8,16] broadcast(q), dimensions={0}\n"
                     "  add = f32[8,16] add(bq, x)\n"
                     "  ROOT t = (f32[8,16], f32[8,16]) tuple(bp, add)\n"
                     "}\n",
                     {"bp", "{devices=[1,2]<=[2]}"},
                     {"bq", "{devices=[2,2]<=[4]}"},
                     {"q", "{devices=[2,2]<=[4] last_tile_dim_replicate}"});
}

/* Transpose: result dim i is operand dim perm[i], so [1,2] -> [2,1];
 * backward the Sharding custom-call's [2,1] on the result of a transpose
 * of u reaches u as [1,2]. */
static void test_transpose(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
                     "ENTRY e {\n"
                     "  p = f32[8,16] parameter(0), sharding={devices=[1,2]<=[2]}\n"
                     "  t = f32[16,8] transpose(p), dimensions={1,0}\n"
                     "  u = f32[4,6] parameter(1)\n"
                     "  tu = f32[6,4] transpose(u), dimensions={1,0}\n"
                     "  s = f32[6,4] custom-call(tu), custom_call_target=\"Sharding\", sharding={devices=[2,1]<=[2]}\n"
                     "  ROOT r = (f32[16,8], f32[6,4]) tuple(t, s)\n"
                     "}\n",
                     {"t", "{devices=[2,1]<=[2]}"},
                     {"tu", "{devices=[2,1]<=[2]}"},
                     {"u", "{devices=[1,2]<=[2]}"},
                     {"s", "{devices=[2,1]<=[2]}"});
}

/* Reshape: [8,16] tiled 2 on the major dim merges into f32[128] tiled 2
 * (each device's 64 elements stay contiguous); tiled on the minor dim it
 * cannot merge, so the result is {replicated}; splitting f32[128] tiled 4
 * into [4,32] puts the tiles on the major dim. */
static void test_reshape(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     "ENTRY e {\n"
                     "  a = f32[8,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
                     "  b = f32[8,16] parameter(1), sharding={devices=[1,2]<=[2]}\n"
                     "  c = f32[128] parameter(2), sharding={devices=[4]<=[4]}\n"
                     "  ra = f32[128] reshape(a)\n"
                     "  rb = f32[128] reshape(b)\n"
                     "  rc = f32[4,32] reshape(c)\n"
                     "  ROOT t = (f32[128], f32[128], f32[4,32]) tuple(ra, rb, rc)\n"
                     "}\n",
                     {"ra", "{devices=[2]<=[2]}"},
                     {"rb", "{replicated}"},
                     {"rc", "{devices=[4,1]<=[4]}"});
}

/* Reduce drops the reduced dims; their tiling becomes a replicated
 * subgroup. p is [2,2]<=[4], tile array [[0,1],[2,3]]. Reducing dim 1
 * keeps rows: [2,2] with groups {0,1},{2,3} = <=[4]. Reducing dim 0 keeps
 * columns: device array transposed to [[0,2],[1,3]] = <=[2,2]T(1,0).
 * Reducing both leaves nothing tiled: {replicated}. */
static void test_reduce(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     SUM_F32
                     "ENTRY e {\n"
                     "  p = f32[8,16] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                     "  z = f32[] constant(0)\n"
                     "  r1 = f32[8] reduce(p, z), dimensions={1}, to_apply=sum\n"
                     "  r0 = f32[16] reduce(p, z), dimensions={0}, to_apply=sum\n"
                     "  r01 = f32[] reduce(p, z), dimensions={0,1}, to_apply=sum\n"
                     "  ROOT t = (f32[8], f32[16], f32[]) tuple(r1, r0, r01)\n"
                     "}\n",
                     {"r1", "{devices=[2,2]<=[4] last_tile_dim_replicate}"},
                     {"r0", "{devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}"},
                     {"r01", "{replicated}"},
                     {"z", "{replicated}"},
                     {"s", "{replicated}"});
}

/* Reduce backward: the result's [2] tiling reaches the input's kept dim 0,
 * the reduced dim 1 untiled. */
static void test_reduce_backward(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
                     SUM_F32
                     "ENTRY e {\n"
                     "  p = f32[8,16] parameter(0)\n"
                     "  z = f32[] constant(0)\n"
                     "  ROOT r = f32[8] reduce(p, z), dimensions={1}, to_apply=sum, sharding={devices=[2]<=[2]}\n"
                     "}\n",
                     {"p", "{devices=[2,1]<=[2]}"});
}

/* Dot [8,16]x[16,32]: lhs rows tiled 2 -> output rows tiled 2; rhs (only
 * contracting dim 0 and free dim 1) gets nothing tiled back: replicated.
 * rhs columns tiled -> output columns. Tiling on the contracting dim
 * becomes a replicated subgroup, i.e. {replicated} here. With equal
 * scores the lhs wins. Batch dims follow the operands and flow backward to
 * the other operand's batch dim. */
static void test_dot(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
                     "ENTRY e {\n"
                     "  l = f32[8,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
                     "  r = f32[16,32] parameter(1)\n"
                     "  d = f32[8,32] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                     "  l2 = f32[8,16] parameter(2)\n"
                     "  r2 = f32[16,32] parameter(3), sharding={devices=[1,2]<=[2]}\n"
                     "  d2 = f32[8,32] dot(l2, r2), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                     "  l3 = f32[8,16] parameter(4), sharding={devices=[1,2]<=[2]}\n"
                     "  d3 = f32[8,32] dot(l3, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                     "  d4 = f32[8,32] dot(l, r2), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                     "  bl = f32[4,8,16] parameter(5), sharding={devices=[2,1,1]<=[2]}\n"
                     "  br = f32[4,16,32] parameter(6)\n"
                     "  bd = f32[4,8,32] dot(bl, br), lhs_batch_dims={0}, rhs_batch_dims={0}, "
                     "lhs_contracting_dims={2}, rhs_contracting_dims={1}\n"
                     "  ROOT t = (f32[8,32], f32[8,32], f32[8,32], f32[8,32], f32[4,8,32]) tuple(d, d2, d3, d4, bd)\n"
                     "}\n",
                     {"d", "{devices=[2,1]<=[2]}"},
                     {"d2", "{devices=[1,2]<=[2]}"},
                     {"d3", "{replicated}"},
                     {"d4", "{devices=[1,2]<=[2]}"},
                     {"bd", "{devices=[2,1,1]<=[2]}"},
                     {"br", "{devices=[2,1,1]<=[2]}"},
                     /* l2 gets d2's view of it: only its free dim 0, untiled in d2: replicated */
                     {"l2", "{replicated}"});
}

/* Dot backward: the annotated output [2,1] reaches the lhs rows. */
static void test_dot_backward(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
                     "ENTRY e {\n"
                     "  l = f32[8,16] parameter(0)\n"
                     "  r = f32[16,32] parameter(1)\n"
                     "  ROOT d = f32[8,32] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
                     "sharding={devices=[2,1]<=[2]}\n"
                     "}\n",
                     {"l", "{devices=[2,1]<=[2]}"},
                     {"r", "{replicated}"});
}

/* Convolution b01f_01io->b01f: with a 1x1 window lhs batch and spatial
 * tiling carry over (c1 = lhs's [2,2,1,1]); with a 3x3 window the spatial
 * tiling becomes a replicated subgroup, and lhs (first, score 4) ties with
 * rhs3's output-feature tiling (score 4) and wins. Backward: c4's batch
 * tiling reaches l4; rhs sees only untiled feature dims: {replicated}. */
static void test_convolution(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     "ENTRY e {\n"
                     "  lhs = f32[8,32,32,3] parameter(0), sharding={devices=[2,2,1,1]<=[4]}\n"
                     "  rhs = f32[1,1,3,16] parameter(1)\n"
                     "  rhs3 = f32[3,3,3,16] parameter(2), sharding={devices=[1,1,1,2,2]<=[4] last_tile_dim_replicate}\n"
                     "  l4 = f32[8,32,32,3] parameter(3)\n"
                     "  c1 = f32[8,32,32,16] convolution(lhs, rhs), window={size=1x1}, dim_labels=b01f_01io->b01f\n"
                     "  c2 = f32[8,30,30,16] convolution(lhs, rhs3), window={size=3x3}, dim_labels=b01f_01io->b01f\n"
                     "  c4 = f32[8,32,32,16] convolution(l4, rhs), window={size=1x1}, dim_labels=b01f_01io->b01f, "
                     "sharding={devices=[4,1,1,1]<=[4]}\n"
                     "  ROOT t = (f32[8,32,32,16], f32[8,30,30,16], f32[8,32,32,16]) tuple(c1, c2, c4)\n"
                     "}\n",
                     {"c1", "{devices=[2,2,1,1]<=[4]}"},
                     {"c2", "{devices=[2,2,1,1]<=[4]}"},
                     {"l4", "{devices=[4,1,1,1]<=[4]}"},
                     {"rhs", "{replicated}"});
}

/* Variadic reduce: both outputs take p's kept dim 0 ([2]); q gets [2,1]
 * backward from the outputs; the init values take the scalar view. */
static void test_reduce_variadic(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
                     "sum2 {\n"
                     "  a = f32[] parameter(0)\n"
                     "  b = s32[] parameter(1)\n"
                     "  c = f32[] parameter(2)\n"
                     "  d = s32[] parameter(3)\n"
                     "  ac = f32[] add(a, c)\n"
                     "  bd = s32[] add(b, d)\n"
                     "  ROOT t = (f32[], s32[]) tuple(ac, bd)\n"
                     "}\n"
                     "ENTRY e {\n"
                     "  p = f32[8,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
                     "  q = s32[8,16] parameter(1)\n"
                     "  z = f32[] constant(0)\n"
                     "  zi = s32[] constant(0)\n"
                     "  ROOT r = (f32[8], s32[8]) reduce(p, q, z, zi), dimensions={1}, to_apply=sum2\n"
                     "}\n",
                     {"r", "{{devices=[2]<=[2]}, {devices=[2]<=[2]}}"},
                     {"q", "{devices=[2,1]<=[2]}"},
                     {"zi", "{replicated}"});
}

/* Dots whose operands disagree. d: lhs rows [2] on 0,1 vs rhs columns on
 * 1,0, both 2 tiles: the lhs wins the tie. bd: lhs batch 2-way (partially
 * replicated), rhs batch 4-way: the more specific rhs wins. Backward, r's
 * only tiled candidate is l's contracting tiling (d2's view of r has its
 * dim 1 untiled and the lhs rows as a replicated subgroup: {replicated}),
 * so r takes [2,1]. */
static void test_dot_disagree(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=4\n"
                     "ENTRY e {\n"
                     "  l = f32[8,16] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
                     "  r = f32[16,32] parameter(1), sharding={devices=[1,2,2]2,3,0,1 last_tile_dim_replicate}\n"
                     "  d = f32[8,32] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                     "  bl = f32[4,8,16] parameter(2), sharding={devices=[2,1,1,2]<=[4] last_tile_dim_replicate}\n"
                     "  br = f32[4,16,32] parameter(3), sharding={devices=[4,1,1]<=[4]}\n"
                     "  bd = f32[4,8,32] dot(bl, br), lhs_batch_dims={0}, rhs_batch_dims={0}, "
                     "lhs_contracting_dims={2}, rhs_contracting_dims={1}\n"
                     "  l2 = f32[8,16] parameter(4), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}\n"
                     "  r2 = f32[16,32] parameter(5)\n"
                     "  d2 = f32[8,32] dot(l2, r2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
                     "sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
                     "  ROOT t = (f32[8,32], f32[4,8,32], f32[8,32]) tuple(d, bd, d2)\n"
                     "}\n",
                     {"d", "{devices=[1,2,2]2,3,0,1 last_tile_dim_replicate}"},
                     {"bd", "{devices=[4,1,1]<=[4]}"},
                     {"r2", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"});
}

int test_propagate_ops(void) {
  test_elementwise();
  test_priority();
  test_broadcast();
  test_transpose();
  test_reshape();
  test_reduce();
  test_reduce_backward();
  test_dot();
  test_dot_backward();
  test_convolution();
  test_reduce_variadic();
  test_dot_disagree();
  return failures;
}
