/* Unit tests of sharding propagation: tuples, while loops (and their tuple
 * state), calls and conditionals (and their branches), shard_map regions.
 * One small module per op family; each expected sharding is worked out by
 * hand from the rule in the comment next to it (sharding/propagate.c states
 * the rules). */
#include "propagate_test.h"

/* Tuples move leaves: get-tuple-element 1 of tuple(p0, p1) is p1's; the
 * tuple itself holds both; a backward GTE fills the matching leaf. */
static void test_tuple(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
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
                     "}\n",
                     {"t", "{{devices=[2]<=[2]}, {devices=[1,2]<=[2]}}"},
                     {"g", "{devices=[1,2]<=[2]}"},
                     {"g2", "{{replicated}, {devices=[2]<=[2]}}"},
                     {"q", "{{replicated}, {replicated}, {devices=[2]<=[2]}}"});
}

/* While: operand, result, body parameter and root, condition parameter
 * share leaves; the counter stays replicated, the carried f32[8] keeps
 * p's [2] through the body's negate. */
static void test_while(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
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
                     "}\n",
                     {"w", "{{replicated}, {devices=[2]<=[2]}}"},
                     {"bp", "{{replicated}, {devices=[2]<=[2]}}"},
                     {"cp", "{{replicated}, {devices=[2]<=[2]}}"},
                     {"y", "{devices=[2]<=[2]}"},
                     {"bt", "{{replicated}, {devices=[2]<=[2]}}"},
                     {"out", "{devices=[2]<=[2]}"});
}

/* Call: the operand's sharding reaches the callee's parameter, the
 * callee's root reaches the call. Conditional: each branch parameter takes
 * its operand's, the result the first branch root's. */
static void test_call_conditional(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
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
                     "}\n",
                     {"fp", "{devices=[2]<=[2]}"},
                     {"fn", "{devices=[2]<=[2]}"},
                     {"c", "{devices=[2]<=[2]}"},
                     {"tp", "{devices=[2]<=[2]}"},
                     {"fbp", "{devices=[2,1]<=[2]}"},
                     {"fbr", "{devices=[2]<=[2]}"},
                     {"k", "{devices=[2]<=[2]}"},
                     {"b", "{replicated}"});
}

/* Shardy shard_map boundaries: GlobalToLocalShape gives its operand the
 * in_shardings ([{"x"}, {}] on mesh x=2: [2,1]) and its result {manual};
 * the body runs manual; LocalToGlobalShape's result is its out_shardings
 * ([{}, {"x"}]: [1,2]). */
static void test_shard_map(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2, "
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
                     "}\n",
                     {"p", "{devices=[2,1]<=[2]}"},
                     {"g", "{manual}"},
                     {"a", "{manual}"},
                     {"n", "{manual}"},
                     {"c", "{manual}"},
                     {"l", "{devices=[1,2]<=[2]}"});
}

/* While with tuple state whose shardings come from inside and after the
 * loop: the body's Sharding call on leaf 1 reaches x backward, then the
 * body parameter, the init tuple (a caller operand takes the body
 * parameter's view) and a; the Sharding call after the loop on leaf 2
 * reaches the while result, the body root (a callee root takes its
 * caller's) and, around the loop, b. Every view of the state agrees. */
static void test_while_tuple_state(void) {
  const char *state = "{{replicated}, {devices=[2]<=[2]}, {devices=[1,2]<=[2]}}";
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
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
                     "}\n",
                     {"w", state},
                     {"init", state},
                     {"bp", state},
                     {"cp", state},
                     {"bt", state},
                     {"a", "{devices=[2]<=[2]}"},
                     {"b", "{devices=[1,2]<=[2]}"},
                     {"y", "{devices=[1,2]<=[2]}"},
                     {"i1", "{replicated}"});
}

/* Indexed conditional: branch k's parameter is operand k+1. b0 takes the
 * tuple t (x tiled, y not) and adds its leaves, so the result c takes x's
 * [2] from the first branch root; b1's root then takes c's backward, and
 * its parameter and operand z follow; y gets it through the add, the
 * tuple leaf and t. The branch index is a scalar nobody tiles. */
static void test_conditional_branches(void) {
  EXPECT_PROPAGATION("HloModule m, num_partitions=2\n"
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
                     "}\n",
                     {"c", "{devices=[2]<=[2]}"},
                     {"r1", "{devices=[2]<=[2]}"},
                     {"p1", "{devices=[2]<=[2]}"},
                     {"z", "{devices=[2]<=[2]}"},
                     {"y", "{devices=[2]<=[2]}"},
                     {"p0", "{{devices=[2]<=[2]}, {devices=[2]<=[2]}}"},
                     {"i", "{replicated}"});
}

int test_propagate_control(void) {
  test_tuple();
  test_while();
  test_call_conditional();
  test_shard_map();
  test_while_tuple_state();
  test_conditional_branches();
  return failures;
}
