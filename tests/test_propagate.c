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

/* Defaults and special kinds: an all-maximal module puts what nothing
 * reaches (the reducer's scalars) on the same device; manual flows
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
  EXPECT(st.annotated == 1 && st.propagated == 2 && st.defaulted == 4 && st.converged);
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
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
