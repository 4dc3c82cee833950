/* Unit tests of sharding propagation, one small module per op family. Each
 * expected sharding is worked out by hand from the rule in the comment next
 * to it (sharding/propagate.c states the rules). */
#include "ts_sharding.h"

#include "ts_test.h"

#include <stdio.h>
#include <string.h>

/* Parses, verifies, propagates and verifies again; NULL (and a failure)
 * when any step fails. */
static ts_hlo_module_t *run_at(const char *text, ts_sharding_propagate_stats_t *stats, int line) {
  ts_source_t src = {"<test>", text, strlen(text)};
  ts_diag_t d = {0};
  ts_hlo_module_t *m = NULL;
  ts_sharding_propagate_opts_t opts = {.stats = stats};
  ts_status_t st = ts_hlo_parse(&src, NULL, &m, &d);
  if (st == TS_OK) st = ts_hlo_verify(m, NULL, &d);
  if (st == TS_OK) st = ts_sharding_propagate(m, &opts, &d);
  if (st == TS_OK) st = ts_hlo_verify(m, NULL, &d);
  if (st != TS_OK) {
    fprintf(stderr, "%s:%d: FAIL: %s\n%s", __FILE__, line, ts_status_string(st), d.text ? d.text : "");
    failures++;
    ts_hlo_module_destroy(m);
    m = NULL;
  }
  ts_diag_free(&d);
  return m;
}
#define RUN(text) run_at(text, NULL, __LINE__)

static const ts_hlo_instr_t *find(const ts_hlo_module_t *m, const char *name) {
  for (int c = 0; c < m->ncomps; c++) {
    const ts_hlo_instr_t *i = ts_hlo_comp_find_instr(m->comps[c], name);
    if (i) return i;
  }
  return NULL;
}

static void expect_sharding_at(const ts_hlo_module_t *m, const char *name, const char *want, int line) {
  if (!m) return;
  const ts_hlo_instr_t *i = find(m, name);
  ts_buf_t b = {0};
  if (i && i->sharding) ts_sharding_print(&b, i->sharding);
  if (!i || !b.data || strcmp(b.data, want) != 0) {
    fprintf(stderr, "%s:%d: FAIL: %s: got %s want %s\n", __FILE__, line, name,
            !i ? "(no such instruction)" : b.data ? b.data : "(none)", want);
    failures++;
  }
  ts_buf_free(&b);
}
#define EXPECT_SHARDING(m, name, want) expect_sharding_at(m, name, want, __LINE__)

/* Same sharding through elementwise ops, both ways: add takes p0's tiling
 * forward, p1 (the other operand) takes it backward; compare and select
 * keep it; a user annotation ({replicated} on r) is never overwritten. */
static void test_elementwise(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
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
                           "}\n");
  EXPECT_SHARDING(m, "p1", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "add", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "neg", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "cmp", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "sel", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "cvt", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "r", "{replicated}");
  EXPECT_SHARDING(m, "out", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* The more specific candidate wins: add(a 2-way, b 4-way) takes b's 2x2
 * tiling although a comes first; at equal specificity the first operand
 * wins (c [2,1] before d [1,2]). */
static void test_priority(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=4\n"
                           "ENTRY e {\n"
                           "  a = f32[8,16] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
                           "  b = f32[8,16] parameter(1), sharding={devices=[2,2]<=[4]}\n"
                           "  c = f32[8,16] parameter(2), sharding={devices=[2,1]<=[2]}\n"
                           "  d = f32[8,16] parameter(3), sharding={devices=[1,2]<=[2]}\n"
                           "  ab = f32[8,16] add(a, b)\n"
                           "  cd = f32[8,16] add(c, d)\n"
                           "  ROOT t = (f32[8,16], f32[8,16]) tuple(ab, cd)\n"
                           "}\n");
  EXPECT_SHARDING(m, "ab", "{devices=[2,2]<=[4]}");
  EXPECT_SHARDING(m, "cd", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "t", "{{devices=[2,2]<=[4]}, {devices=[2,1]<=[2]}}");
  ts_hlo_module_destroy(m);
}

/* Broadcast forward: operand dim 0 lands on result dim 1, the new dim 0 is
 * untiled: [2] -> [1,2]. Backward: q (f32[8], dimensions={0}) sees the
 * user's [2,2]<=[4]: dim 0 keeps 2 tiles, the dropped dim 1's 2 tiles
 * become a replicated subgroup; the device array [[0,1],[2,3]] stays as is. */
static void test_broadcast(void) {
  ts_hlo_module_t *m;
  m = RUN("HloModule m, num_partitions=4\n"
          "ENTRY e {\n"
          "  p = f32[16] parameter(0), sharding={devices=[2]<=[2]}\n"
          "  q = f32[8] parameter(1)\n"
          "  x = f32[8,16] parameter(2), sharding={devices=[2,2]<=[4]}\n"
          "  bp = f32[8,16] broadcast(p), dimensions={1}\n"
          "  bq = f32[8,16] broadcast(q), dimensions={0}\n"
          "  add = f32[8,16] add(bq, x)\n"
          "  ROOT t = (f32[8,16], f32[8,16]) tuple(bp, add)\n"
          "}\n");
  EXPECT_SHARDING(m, "bp", "{devices=[1,2]<=[2]}");
  EXPECT_SHARDING(m, "bq", "{devices=[2,2]<=[4]}");
  EXPECT_SHARDING(m, "q", "{devices=[2,2]<=[4] last_tile_dim_replicate}");
  ts_hlo_module_destroy(m);
}

/* Transpose: result dim i is operand dim perm[i], so [1,2] -> [2,1];
 * backward the Sharding custom-call's [2,1] on the result of a transpose
 * of u reaches u as [1,2]. */
static void test_transpose(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
                           "ENTRY e {\n"
                           "  p = f32[8,16] parameter(0), sharding={devices=[1,2]<=[2]}\n"
                           "  t = f32[16,8] transpose(p), dimensions={1,0}\n"
                           "  u = f32[4,6] parameter(1)\n"
                           "  tu = f32[6,4] transpose(u), dimensions={1,0}\n"
                           "  s = f32[6,4] custom-call(tu), custom_call_target=\"Sharding\", sharding={devices=[2,1]<=[2]}\n"
                           "  ROOT r = (f32[16,8], f32[6,4]) tuple(t, s)\n"
                           "}\n");
  EXPECT_SHARDING(m, "t", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "tu", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "u", "{devices=[1,2]<=[2]}");
  EXPECT_SHARDING(m, "s", "{devices=[2,1]<=[2]}");
  ts_hlo_module_destroy(m);
}

/* Reshape: [8,16] tiled 2 on the major dim merges into f32[128] tiled 2
 * (each device's 64 elements stay contiguous); tiled on the minor dim it
 * cannot merge, so the result is {replicated}; splitting f32[128] tiled 4
 * into [4,32] puts the tiles on the major dim. */
static void test_reshape(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=4\n"
                           "ENTRY e {\n"
                           "  a = f32[8,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
                           "  b = f32[8,16] parameter(1), sharding={devices=[1,2]<=[2]}\n"
                           "  c = f32[128] parameter(2), sharding={devices=[4]<=[4]}\n"
                           "  ra = f32[128] reshape(a)\n"
                           "  rb = f32[128] reshape(b)\n"
                           "  rc = f32[4,32] reshape(c)\n"
                           "  ROOT t = (f32[128], f32[128], f32[4,32]) tuple(ra, rb, rc)\n"
                           "}\n");
  EXPECT_SHARDING(m, "ra", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "rb", "{replicated}");
  EXPECT_SHARDING(m, "rc", "{devices=[4,1]<=[4]}");
  ts_hlo_module_destroy(m);
}

/* Reduce drops the reduced dims; their tiling becomes a replicated
 * subgroup. p is [2,2]<=[4], tile array [[0,1],[2,3]]. Reducing dim 1
 * keeps rows: [2,2] with groups {0,1},{2,3} = <=[4]. Reducing dim 0 keeps
 * columns: device array transposed to [[0,2],[1,3]] = <=[2,2]T(1,0).
 * Reducing both leaves nothing tiled: {replicated}. */
static void test_reduce(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=4\n"
                           "sum {\n"
                           "  x = f32[] parameter(0)\n"
                           "  y = f32[] parameter(1)\n"
                           "  ROOT s = f32[] add(x, y)\n"
                           "}\n"
                           "ENTRY e {\n"
                           "  p = f32[8,16] parameter(0), sharding={devices=[2,2]<=[4]}\n"
                           "  z = f32[] constant(0)\n"
                           "  r1 = f32[8] reduce(p, z), dimensions={1}, to_apply=sum\n"
                           "  r0 = f32[16] reduce(p, z), dimensions={0}, to_apply=sum\n"
                           "  r01 = f32[] reduce(p, z), dimensions={0,1}, to_apply=sum\n"
                           "  ROOT t = (f32[8], f32[16], f32[]) tuple(r1, r0, r01)\n"
                           "}\n");
  EXPECT_SHARDING(m, "r1", "{devices=[2,2]<=[4] last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "r0", "{devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "r01", "{replicated}");
  EXPECT_SHARDING(m, "z", "{replicated}");
  EXPECT_SHARDING(m, "s", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* Reduce backward: the result's [2] tiling reaches the input's kept dim 0,
 * the reduced dim 1 untiled. */
static void test_reduce_backward(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
                           "sum {\n"
                           "  x = f32[] parameter(0)\n"
                           "  y = f32[] parameter(1)\n"
                           "  ROOT s = f32[] add(x, y)\n"
                           "}\n"
                           "ENTRY e {\n"
                           "  p = f32[8,16] parameter(0)\n"
                           "  z = f32[] constant(0)\n"
                           "  ROOT r = f32[8] reduce(p, z), dimensions={1}, to_apply=sum, sharding={devices=[2]<=[2]}\n"
                           "}\n");
  EXPECT_SHARDING(m, "p", "{devices=[2,1]<=[2]}");
  ts_hlo_module_destroy(m);
}

/* Dot [8,16]x[16,32]: lhs rows tiled 2 -> output rows tiled 2; rhs (only
 * contracting dim 0 and free dim 1) gets nothing tiled back: replicated.
 * rhs columns tiled -> output columns. Tiling on the contracting dim
 * becomes a replicated subgroup, i.e. {replicated} here. With equal
 * scores the lhs wins. Batch dims follow the operands and flow backward to
 * the other operand's batch dim. */
static void test_dot(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
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
                           "}\n");
  EXPECT_SHARDING(m, "d", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "d2", "{devices=[1,2]<=[2]}");
  EXPECT_SHARDING(m, "d3", "{replicated}");
  EXPECT_SHARDING(m, "d4", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "bd", "{devices=[2,1,1]<=[2]}");
  EXPECT_SHARDING(m, "br", "{devices=[2,1,1]<=[2]}");
  /* l2 gets d2's view of it: only its free dim 0, untiled in d2: replicated */
  EXPECT_SHARDING(m, "l2", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* Dot backward: the annotated output [2,1] reaches the lhs rows. */
static void test_dot_backward(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
                           "ENTRY e {\n"
                           "  l = f32[8,16] parameter(0)\n"
                           "  r = f32[16,32] parameter(1)\n"
                           "  ROOT d = f32[8,32] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
                           "sharding={devices=[2,1]<=[2]}\n"
                           "}\n");
  EXPECT_SHARDING(m, "l", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "r", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* Tuples move leaves: get-tuple-element 1 of tuple(p0, p1) is p1's; the
 * tuple itself holds both; a backward GTE fills the matching leaf. */
static void test_tuple(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
                           "ENTRY e {\n"
                           "  p0 = f32[8] parameter(0), sharding={devices=[2]<=[2]}\n"
                           "  p1 = f32[4,4] parameter(1), sharding={devices=[1,2]<=[2]}\n"
                           "  t = (f32[8], f32[4,4]) tuple(p0, p1)\n"
                           "  g = f32[4,4] get-tuple-element(t), index=1\n"
                           "  q = (f32[8], (f32[2], f32[4])) parameter(2)\n"
                           "  g2 = (f32[2], f32[4]) get-tuple-element(q), index=1\n"
                           "  g3 = f32[4] get-tuple-element(g2), index=1\n"
                           "  s = f32[4] custom-call(g3), custom_call_target=\"Sharding\", sharding={devices=[2]<=[2]}\n"
                           "  ROOT r = (f32[4,4], f32[4]) tuple(g, s)\n"
                           "}\n");
  EXPECT_SHARDING(m, "t", "{{devices=[2]<=[2]}, {devices=[1,2]<=[2]}}");
  EXPECT_SHARDING(m, "g", "{devices=[1,2]<=[2]}");
  EXPECT_SHARDING(m, "g2", "{{replicated}, {devices=[2]<=[2]}}");
  EXPECT_SHARDING(m, "q", "{{replicated}, {replicated}, {devices=[2]<=[2]}}");
  ts_hlo_module_destroy(m);
}

/* While: operand, result, body parameter and root, condition parameter
 * share leaves; the counter stays replicated, the carried f32[8] keeps
 * p's [2] through the body's negate. */
static void test_while(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
                           "cond {\n"
                           "  cp = (s32[], f32[8]) parameter(0)\n"
                           "  ci = s32[] get-tuple-element(cp), index=0\n"
                           "  n = s32[] constant(4)\n"
                           "  ROOT lt = pred[] compare(ci, n), direction=LT\n"
                           "}\n"
                           "body {\n"
                           "  bp = (s32[], f32[8]) parameter(0)\n"
                           "  i = s32[] get-tuple-element(bp), index=0\n"
                           "  x = f32[8] get-tuple-element(bp), index=1\n"
                           "  one = s32[] constant(1)\n"
                           "  i1 = s32[] add(i, one)\n"
                           "  y = f32[8] negate(x)\n"
                           "  ROOT bt = (s32[], f32[8]) tuple(i1, y)\n"
                           "}\n"
                           "ENTRY e {\n"
                           "  p = f32[8] parameter(0), sharding={devices=[2]<=[2]}\n"
                           "  z = s32[] constant(0)\n"
                           "  init = (s32[], f32[8]) tuple(z, p)\n"
                           "  w = (s32[], f32[8]) while(init), condition=cond, body=body\n"
                           "  ROOT out = f32[8] get-tuple-element(w), index=1\n"
                           "}\n");
  EXPECT_SHARDING(m, "w", "{{replicated}, {devices=[2]<=[2]}}");
  EXPECT_SHARDING(m, "bp", "{{replicated}, {devices=[2]<=[2]}}");
  EXPECT_SHARDING(m, "cp", "{{replicated}, {devices=[2]<=[2]}}");
  EXPECT_SHARDING(m, "y", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "bt", "{{replicated}, {devices=[2]<=[2]}}");
  EXPECT_SHARDING(m, "out", "{devices=[2]<=[2]}");
  ts_hlo_module_destroy(m);
}

/* Call: the operand's sharding reaches the callee's parameter, the
 * callee's root reaches the call. Conditional: each branch parameter takes
 * its operand's, the result the first branch root's. */
static void test_call_conditional(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
                           "f {\n"
                           "  fp = f32[8] parameter(0)\n"
                           "  ROOT fn = f32[8] negate(fp)\n"
                           "}\n"
                           "tb {\n"
                           "  tp = f32[8] parameter(0)\n"
                           "  ROOT tr = f32[8] abs(tp)\n"
                           "}\n"
                           "fb {\n"
                           "  fbp = f32[4,2] parameter(0)\n"
                           "  ROOT fbr = f32[8] reshape(fbp)\n"
                           "}\n"
                           "ENTRY e {\n"
                           "  p = f32[8] parameter(0), sharding={devices=[2]<=[2]}\n"
                           "  q = f32[4,2] parameter(1), sharding={devices=[2,1]<=[2]}\n"
                           "  c = f32[8] call(p), to_apply=f\n"
                           "  b = pred[] parameter(2)\n"
                           "  k = f32[8] conditional(b, c, q), true_computation=tb, false_computation=fb\n"
                           "  ROOT r = f32[8] add(k, c)\n"
                           "}\n");
  EXPECT_SHARDING(m, "fp", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "fn", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "c", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "tp", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "fbp", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "fbr", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "k", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "b", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* Defaults and special kinds: in an all-maximal module the init value z
 * takes the reduce's device backward (a scalar operand's rule) and the
 * reducer's parameters take the scalar view of the reduce (an applied
 * computation's rule), so nothing is left to the default; manual flows
 * through elementwise ops and is never replaced by a replicated operand;
 * iota and constants with no tiled neighbour end replicated. */
static void test_defaults(void) {
  ts_sharding_propagate_stats_t st = {0};
  ts_hlo_module_t *m = run_at("HloModule m, num_partitions=2\n"
                              "sum {\n"
                              "  x = f32[] parameter(0)\n"
                              "  y = f32[] parameter(1)\n"
                              "  ROOT s = f32[] add(x, y)\n"
                              "}\n"
                              "ENTRY e {\n"
                              "  p = f32[8] parameter(0), sharding={maximal device=1}\n"
                              "  z = f32[] constant(0)\n"
                              "  n = f32[8] negate(p)\n"
                              "  ROOT r = f32[] reduce(n, z), dimensions={0}, to_apply=sum\n"
                              "}\n",
                              &st, __LINE__);
  EXPECT_SHARDING(m, "n", "{maximal device=1}");
  EXPECT_SHARDING(m, "r", "{maximal device=1}");
  EXPECT_SHARDING(m, "x", "{maximal device=1}");
  EXPECT_SHARDING(m, "z", "{maximal device=1}");
  EXPECT_SHARDING(m, "s", "{maximal device=1}");
  EXPECT(st.annotated == 1 && st.propagated == 6 && st.defaulted == 0 && st.converged);
  ts_hlo_module_destroy(m);

  m = RUN("HloModule m, num_partitions=2\n"
          "ENTRY e {\n"
          "  p = f32[8] parameter(0), sharding={manual}\n"
          "  c = f32[] constant(1)\n"
          "  b = f32[8] broadcast(c), dimensions={}\n"
          "  a = f32[8] add(b, p)\n"
          "  io = s32[8] iota(), iota_dimension=0\n"
          "  ROOT t = (f32[8], s32[8]) tuple(a, io)\n"
          "}\n");
  EXPECT_SHARDING(m, "a", "{manual}");
  EXPECT_SHARDING(m, "b", "{manual}");
  EXPECT_SHARDING(m, "io", "{replicated}");
  EXPECT_SHARDING(m, "t", "{{manual}, {replicated}}");
  ts_hlo_module_destroy(m);
}

/* Slice, pad, concatenate keep a dim's tiling while it still has at least
 * as many elements as tiles. p [2,2]<=[4]: sl (8x2) keeps both; s1 (8x1)
 * has 1 element for 2 tiles on dim 1, so that tiling becomes a replicated
 * subgroup; pd (padded) keeps both; the pad value c takes the scalar view
 * ({replicated}); cat (dim 1 concatenated, 32 >= 2) keeps p's tiling and q
 * gets it backward. Backward through a slice: ann's [4,1] reaches su and
 * then u (8 >= 4 rows). */
static void test_slice_pad_concat(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=4\n"
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
                           "}\n");
  EXPECT_SHARDING(m, "sl", "{devices=[2,2]<=[4]}");
  EXPECT_SHARDING(m, "s1", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "pd", "{devices=[2,2]<=[4]}");
  EXPECT_SHARDING(m, "c", "{replicated}");
  EXPECT_SHARDING(m, "cat", "{devices=[2,2]<=[4]}");
  EXPECT_SHARDING(m, "q", "{devices=[2,2]<=[4]}");
  EXPECT_SHARDING(m, "su", "{devices=[4,1]<=[4]}");
  EXPECT_SHARDING(m, "u", "{devices=[4,1]<=[4]}");
  ts_hlo_module_destroy(m);
}

/* Dynamic-slice / dynamic-update-slice: a dim sliced whole keeps its
 * tiling, a sliced dim is untiled (tiling to a replicated subgroup), start
 * indices take the scalar view ({replicated}). ds keeps p's dim 0 only;
 * dus follows its operand p; upd (8x4 in 8x16) gets dim 0 backward; v
 * gets s2's dim-1 tiling backward (dim 1 whole). */
static void test_dynamic_slice(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=4\n"
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
                           "}\n");
  EXPECT_SHARDING(m, "ds", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "dus", "{devices=[2,2]<=[4]}");
  EXPECT_SHARDING(m, "upd", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "ds2", "{devices=[1,4]<=[4]}");
  EXPECT_SHARDING(m, "v", "{devices=[1,4]<=[4]}");
  EXPECT_SHARDING(m, "i", "{replicated}");
  EXPECT_SHARDING(m, "z", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* Iota is replicated forward and takes a user's tiling backward (a [2,1]
 * add beats {replicated}); io2, with no tiled user, stays {replicated}
 * but counts as propagated. Clamp with scalar bounds is elementwise over
 * the array operand. */
static void test_iota_clamp(void) {
  ts_sharding_propagate_stats_t st = {0};
  ts_hlo_module_t *m = run_at("HloModule m, num_partitions=2\n"
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
                              &st, __LINE__);
  EXPECT_SHARDING(m, "io", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "a", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "cl", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "io2", "{replicated}");
  EXPECT_SHARDING(m, "t", "{{devices=[2,1]<=[2]}, {replicated}}");
  /* lo and hi: clamp passes nothing to a scalar bound */
  EXPECT(st.annotated == 1 && st.propagated == 5 && st.defaulted == 2);
  ts_hlo_module_destroy(m);
}

/* Sort along dim 1: that dim untiled, the other kept, one sharding for
 * every operand and output: k's [2,2] becomes [2,1] + a replicated
 * subgroup of 2 on both outputs, and reaches v backward. */
static void test_sort(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=4\n"
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
                           "}\n");
  EXPECT_SHARDING(m, "s", "{{devices=[2,1,2]<=[4] last_tile_dim_replicate}, "
                          "{devices=[2,1,2]<=[4] last_tile_dim_replicate}}");
  EXPECT_SHARDING(m, "v", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  ts_hlo_module_destroy(m);
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
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=4\n"
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
                           "}\n");
  EXPECT_SHARDING(m, "g", "{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "ids", "{replicated}");
  EXPECT_SHARDING(m, "g2", "{devices=[2,1,2]<=[4]}");
  EXPECT_SHARDING(m, "ids2", "{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "emb2", "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
  ts_hlo_module_destroy(m);
}

/* Scatter (embedding gradient): the output follows the operand both ways
 * (r's [1,2]+replicated reaches sc and then z; z2's [2,1]+replicated gives
 * sc2); the updates follow the indices' batch tiling (ids [4,1,1]: score
 * 8) over the output's view of them (D tiled 2 with a replicated
 * subgroup: score 4). */
static void test_scatter(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=4\n"
                           "add {\n"
                           "  x = f32[] parameter(0)\n"
                           "  y = f32[] parameter(1)\n"
                           "  ROOT s = f32[] add(x, y)\n"
                           "}\n"
                           "ENTRY e {\n"
                           "  z = f32[32,16] parameter(0)\n"
                           "  ids = s32[4,6,1] parameter(1), sharding={devices=[4,1,1]<=[4]}\n"
                           "  upd = f32[4,6,16] parameter(2)\n"
                           "  z2 = f32[32,16] parameter(3), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
                           "  sc = f32[32,16] scatter(z, ids, upd), update_window_dims={2}, inserted_window_dims={0}, "
                           "scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=add\n"
                           "  r = f32[32,16] copy(sc), sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}\n"
                           "  sc2 = f32[32,16] scatter(z2, ids, upd), update_window_dims={2}, inserted_window_dims={0}, "
                           "scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=add\n"
                           "  ROOT t = (f32[32,16], f32[32,16]) tuple(r, sc2)\n"
                           "}\n");
  EXPECT_SHARDING(m, "sc", "{devices=[1,2,2]<=[4] last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "z", "{devices=[1,2,2]<=[4] last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "upd", "{devices=[4,1,1]<=[4]}");
  EXPECT_SHARDING(m, "sc2", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  /* the combiner's parameters: the scalar view of a tiled scatter */
  EXPECT_SHARDING(m, "x", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* Convolution b01f_01io->b01f: with a 1x1 window lhs batch and spatial
 * tiling carry over (c1 = lhs's [2,2,1,1]); with a 3x3 window the spatial
 * tiling becomes a replicated subgroup, and lhs (first, score 4) ties with
 * rhs3's output-feature tiling (score 4) and wins. Backward: c4's batch
 * tiling reaches l4; rhs sees only untiled feature dims: {replicated}. */
static void test_convolution(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=4\n"
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
                           "}\n");
  EXPECT_SHARDING(m, "c1", "{devices=[2,2,1,1]<=[4]}");
  EXPECT_SHARDING(m, "c2", "{devices=[2,1,1,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "l4", "{devices=[4,1,1,1]<=[4]}");
  EXPECT_SHARDING(m, "rhs", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* Shardy shard_map boundaries: GlobalToLocalShape gives its operand the
 * in_shardings ([{"x"}, {}] on mesh x=2: [2,1]) and its result {manual};
 * the body runs manual; LocalToGlobalShape's result is its out_shardings
 * ([{}, {"x"}]: [1,2]). */
static void test_shard_map(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2, "
                           "frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[\"x\"=2]>}}\n"
                           "body {\n"
                           "  a = f32[4,8] parameter(0)\n"
                           "  ROOT n = f32[4,8] negate(a)\n"
                           "}\n"
                           "ENTRY e {\n"
                           "  p = f32[8,8] parameter(0)\n"
                           "  g = f32[4,8] custom-call(p), custom_call_target=\"xla.sdy.GlobalToLocalShape\", "
                           "frontend_attributes={xla.sdy.in_shardings=\"#sdy.sharding_per_value<[<@mesh, [{\\\"x\\\"}, {}]>]>\"}\n"
                           "  c = f32[4,8] call(g), to_apply=body\n"
                           "  ROOT l = f32[8,8] custom-call(c), custom_call_target=\"xla.sdy.LocalToGlobalShape\", "
                           "frontend_attributes={xla.sdy.out_shardings=\"#sdy.sharding_per_value<[<@mesh, [{}, {\\\"x\\\"}]>]>\"}\n"
                           "}\n");
  EXPECT_SHARDING(m, "p", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "g", "{manual}");
  EXPECT_SHARDING(m, "a", "{manual}");
  EXPECT_SHARDING(m, "n", "{manual}");
  EXPECT_SHARDING(m, "c", "{manual}");
  EXPECT_SHARDING(m, "l", "{devices=[1,2]<=[2]}");
  ts_hlo_module_destroy(m);
}

/* Variadic reduce: both outputs take p's kept dim 0 ([2]); q gets [2,1]
 * backward from the outputs; the init values take the scalar view. */
static void test_reduce_variadic(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
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
                           "}\n");
  EXPECT_SHARDING(m, "r", "{{devices=[2]<=[2]}, {devices=[2]<=[2]}}");
  EXPECT_SHARDING(m, "q", "{devices=[2,1]<=[2]}");
  EXPECT_SHARDING(m, "zi", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* While with tuple state whose shardings come from inside and after the
 * loop: the body's Sharding call on leaf 1 reaches x backward, then the
 * body parameter, the init tuple (a caller operand takes the body
 * parameter's view) and a; the Sharding call after the loop on leaf 2
 * reaches the while result, the body root (a callee root takes its
 * caller's) and, around the loop, b. Every view of the state agrees. */
static void test_while_tuple_state(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
                           "cond {\n"
                           "  cp = (s32[], f32[8], f32[4,4]) parameter(0)\n"
                           "  ci = s32[] get-tuple-element(cp), index=0\n"
                           "  n = s32[] constant(4)\n"
                           "  ROOT lt = pred[] compare(ci, n), direction=LT\n"
                           "}\n"
                           "body {\n"
                           "  bp = (s32[], f32[8], f32[4,4]) parameter(0)\n"
                           "  i = s32[] get-tuple-element(bp), index=0\n"
                           "  x = f32[8] get-tuple-element(bp), index=1\n"
                           "  y = f32[4,4] get-tuple-element(bp), index=2\n"
                           "  one = s32[] constant(1)\n"
                           "  i1 = s32[] add(i, one)\n"
                           "  xs = f32[8] custom-call(x), custom_call_target=\"Sharding\", sharding={devices=[2]<=[2]}\n"
                           "  xn = f32[8] negate(xs)\n"
                           "  yn = f32[4,4] negate(y)\n"
                           "  ROOT bt = (s32[], f32[8], f32[4,4]) tuple(i1, xn, yn)\n"
                           "}\n"
                           "ENTRY e {\n"
                           "  a = f32[8] parameter(0)\n"
                           "  b = f32[4,4] parameter(1)\n"
                           "  z = s32[] constant(0)\n"
                           "  init = (s32[], f32[8], f32[4,4]) tuple(z, a, b)\n"
                           "  w = (s32[], f32[8], f32[4,4]) while(init), condition=cond, body=body\n"
                           "  o = f32[4,4] get-tuple-element(w), index=2\n"
                           "  ROOT s = f32[4,4] custom-call(o), custom_call_target=\"Sharding\", "
                           "sharding={devices=[1,2]<=[2]}\n"
                           "}\n");
  const char *state = "{{replicated}, {devices=[2]<=[2]}, {devices=[1,2]<=[2]}}";
  EXPECT_SHARDING(m, "w", state);
  EXPECT_SHARDING(m, "init", state);
  EXPECT_SHARDING(m, "bp", state);
  EXPECT_SHARDING(m, "cp", state);
  EXPECT_SHARDING(m, "bt", state);
  EXPECT_SHARDING(m, "a", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "b", "{devices=[1,2]<=[2]}");
  EXPECT_SHARDING(m, "y", "{devices=[1,2]<=[2]}");
  EXPECT_SHARDING(m, "i1", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* Indexed conditional: branch k's parameter is operand k+1. b0 takes the
 * tuple t (x tiled, y not) and adds its leaves, so the result c takes x's
 * [2] from the first branch root; b1's root then takes c's backward, and
 * its parameter and operand z follow; y gets it through the add, the
 * tuple leaf and t. The branch index is a scalar nobody tiles. */
static void test_conditional_branches(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=2\n"
                           "b0 {\n"
                           "  p0 = (f32[8], f32[8]) parameter(0)\n"
                           "  g0 = f32[8] get-tuple-element(p0), index=0\n"
                           "  g1 = f32[8] get-tuple-element(p0), index=1\n"
                           "  ROOT r0 = f32[8] add(g0, g1)\n"
                           "}\n"
                           "b1 {\n"
                           "  p1 = f32[8] parameter(0)\n"
                           "  ROOT r1 = f32[8] negate(p1)\n"
                           "}\n"
                           "ENTRY e {\n"
                           "  i = s32[] parameter(0)\n"
                           "  x = f32[8] parameter(1), sharding={devices=[2]<=[2]}\n"
                           "  y = f32[8] parameter(2)\n"
                           "  t = (f32[8], f32[8]) tuple(x, y)\n"
                           "  z = f32[8] parameter(3)\n"
                           "  ROOT c = f32[8] conditional(i, t, z), branch_computations={b0, b1}\n"
                           "}\n");
  EXPECT_SHARDING(m, "c", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "r1", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "p1", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "z", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "y", "{devices=[2]<=[2]}");
  EXPECT_SHARDING(m, "p0", "{{devices=[2]<=[2]}, {devices=[2]<=[2]}}");
  EXPECT_SHARDING(m, "i", "{replicated}");
  ts_hlo_module_destroy(m);
}

/* Dots whose operands disagree. d: lhs rows [2] on 0,1 vs rhs columns on
 * 1,0, both 2 tiles: the lhs wins the tie. bd: lhs batch 2-way (partially
 * replicated), rhs batch 4-way: the more specific rhs wins. Backward, r's
 * only tiled candidate is l's contracting tiling (d2's view of r has its
 * dim 1 untiled and the lhs rows as a replicated subgroup: {replicated}),
 * so r takes [2,1]. */
static void test_dot_disagree(void) {
  ts_hlo_module_t *m = RUN("HloModule m, num_partitions=4\n"
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
                           "}\n");
  EXPECT_SHARDING(m, "d", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_SHARDING(m, "bd", "{devices=[4,1,1]<=[4]}");
  EXPECT_SHARDING(m, "r2", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  ts_hlo_module_destroy(m);
}

int main(void) {
  test_elementwise();
  test_priority();
  test_broadcast();
  test_transpose();
  test_reshape();
  test_reduce();
  test_reduce_backward();
  test_dot();
  test_dot_backward();
  test_tuple();
  test_while();
  test_call_conditional();
  test_defaults();
  test_slice_pad_concat();
  test_dynamic_slice();
  test_iota_clamp();
  test_sort();
  test_gather();
  test_scatter();
  test_convolution();
  test_shard_map();
  test_reduce_variadic();
  test_while_tuple_state();
  test_conditional_branches();
  test_dot_disagree();
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
