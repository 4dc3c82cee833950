/* Unit tests for the XLA syntax the parser learned for issue 15: compact
 * tuple-element operands, inline computations, mesh replica groups, nested
 * anonymous operands, the rank-0 window default, and the literal range
 * rejections. Expected values are worked out by hand in the comments. */
#include "ts_hlo.h"

#include "ts_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ts_hlo_module_t *parse(const char *text, char **err) {
  ts_source_t src = {"t.hlo", text, strlen(text)};
  ts_diag_t d = {0};
  ts_hlo_module_t *m = NULL;
  ts_status_t st = ts_hlo_parse(&src, NULL, &m, &d);
  if (err) {
    *err = NULL;
    if (d.text && (*err = malloc(strlen(d.text) + 1))) memcpy(*err, d.text, strlen(d.text) + 1);
  }
  if (st != TS_OK && !err) fprintf(stderr, "unexpected parse error: %s\n", d.text ? d.text : "?");
  ts_diag_free(&d);
  return st == TS_OK ? m : NULL;
}

static const ts_hlo_instr_t *find(const ts_hlo_comp_t *c, ts_opcode_t op, int nth) {
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->op == op && nth-- == 0) return c->instrs[k];
  return NULL;
}

static void expect_error(const char *text, const char *substr) {
  char *err = NULL;
  ts_hlo_module_t *m = parse(text, &err);
  EXPECT(m == NULL);
  EXPECT(err && strstr(err, substr));
  if (!err || !strstr(err, substr)) fprintf(stderr, "  want '%s' in: %s\n", substr, err ? err : "(no error)");
  ts_hlo_module_destroy(m);
  free(err);
}

/* `%p#1#0`: two get-tuple-elements, (f32[2], (s32[3], pred[])) -> index 1 ->
 * (s32[3], pred[]) -> index 0 -> s32[3]. */
static void test_compact_gte(void) {
  ts_hlo_module_t *m = parse("HloModule m:\n"
                             "ENTRY e {\n"
                             "  p = (f32[2], (s32[3], pred[])) parameter(0)\n"
                             "  ROOT n = s32[3] negate(%p#1#0)\n"
                             "}\n",
                             NULL);
  EXPECT(m != NULL);
  if (!m) return;
  EXPECT(strcmp(m->name, "m") == 0);
  const ts_hlo_instr_t *outer = find(m->entry, TS_OP_GET_TUPLE_ELEMENT, 0);
  const ts_hlo_instr_t *inner = find(m->entry, TS_OP_GET_TUPLE_ELEMENT, 1);
  EXPECT(outer && inner);
  if (outer && inner) {
    EXPECT(ts_hlo_instr_attr(outer, "index")->v.i == 1 && outer->shape->elem == TS_TUPLE);
    EXPECT(ts_hlo_instr_attr(inner, "index")->v.i == 0 && inner->ops[0] == outer);
    EXPECT(inner->shape->elem == TS_S32 && inner->shape->rank == 1 && inner->shape->dims[0] == 3);
    EXPECT(m->entry->root->ops[0] == inner);
  }
  ts_hlo_module_destroy(m);
  expect_error("ENTRY e {\n  p = f32[10] parameter(0)\n  ROOT r = f32[10] negate(%p#0)\n}\n",
               "GTE operand must be tuple");
  expect_error("ENTRY e {\n  p = (f32[10]) parameter(0)\n  ROOT r = f32[10] negate(%p#2)\n}\n",
               "GTE index 2 out of bounds");
}

/* to_apply={...}: the reduce calls a new computation with two parameters. */
static void test_inline_computation(void) {
  ts_hlo_module_t *m = parse("ENTRY e {\n"
                             "  p = f32[4] parameter(0)\n"
                             "  z = f32[] constant(0)\n"
                             "  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply={\n"
                             "    a = f32[] parameter(0)\n"
                             "    b = f32[] parameter(1)\n"
                             "    ROOT s = f32[] add(a, b)\n"
                             "  }\n"
                             "}\n",
                             NULL);
  EXPECT(m != NULL);
  if (!m) return;
  EXPECT(m->ncomps == 2);
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(m->entry->root, "to_apply");
  EXPECT(a && a->kind == TS_ATTR_COMP && a->v.comps.n == 1);
  if (a) {
    const ts_hlo_comp_t *c = a->v.comps.comps[0];
    EXPECT(c->nparams == 2 && c->root->op == TS_OP_ADD);
  }
  /* the entry's users survive the computation parsed in its middle */
  EXPECT(m->entry->instrs[0]->nusers == 1 && m->entry->instrs[0]->users[0] == m->entry->root);
  ts_hlo_module_destroy(m);
}

/* mesh['x'=2,'y'=2] {'y'}: devices 0..3 row-major, x major; groups span y:
 * {0,1},{2,3}. With {'x'}: {0,2},{1,3}. With device_ids=(3,2,1,0) and {'y'}:
 * {3,2},{1,0}. */
static void expect_mesh(const char *rg, int ngroups, const int64_t *want) {
  char text[512];
  snprintf(text, sizeof text,
           "HloModule m, replica_count=4\n"
           "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
           "ENTRY e {\n  p = f32[8] parameter(0)\n"
           "  ROOT r = f32[8] all-reduce(p), replica_groups=%s, to_apply=add\n}\n",
           rg);
  ts_hlo_module_t *m = parse(text, NULL);
  EXPECT(m != NULL);
  if (!m) return;
  const ts_replica_groups_t *g = ts_hlo_instr_attr(m->entry->root, "replica_groups")->v.rg;
  EXPECT(g->ngroups == ngroups && g->mesh && strcmp(g->mesh, rg) == 0);
  for (int k = 0; k < g->ngroups && k < ngroups; k++) {
    EXPECT(g->groups[k].n == 2);
    EXPECT(g->groups[k].v[0] == want[2 * k] && g->groups[k].v[1] == want[2 * k + 1]);
  }
  ts_hlo_module_destroy(m);
}

static void test_mesh_groups(void) {
  expect_mesh("mesh['x'=2,'y'=2] {'y'}", 2, (const int64_t[]){0, 1, 2, 3});
  expect_mesh("mesh['x'=2,'y'=2] {'x'}", 2, (const int64_t[]){0, 2, 1, 3});
  expect_mesh("mesh['x'=2,'y'=2] {'0'}", 2, (const int64_t[]){0, 2, 1, 3});
  expect_mesh("mesh['x'=2,'y'=2, device_ids=(3,2,1,0)] {'y'}", 2, (const int64_t[]){3, 2, 1, 0});
}

/* add(f32[2] parameter(0), multiply(...)) builds three parameters and a
 * shape-inferred multiply; a declared operand shape must match. */
static void test_nested_operands(void) {
  ts_hlo_module_t *m =
      parse("ENTRY e {\n"
            "  ROOT r = f32[2] add(f32[2] parameter(0), multiply(f32[2] parameter(1), f32[2] parameter(2)))\n"
            "}\n",
            NULL);
  EXPECT(m != NULL);
  if (m) {
    EXPECT(m->entry->nparams == 3);
    const ts_hlo_instr_t *mul = find(m->entry, TS_OP_MULTIPLY, 0);
    EXPECT(mul && mul->shape && mul->shape->rank == 1 && mul->shape->dims[0] == 2);
  }
  ts_hlo_module_destroy(m);
  expect_error("ENTRY e {\n  p = f32[2,2] parameter(0)\n  ROOT r = f32[2,2] add(f32[2,2] p, f32[2,5] p)\n}\n",
               "The declared operand shape f32[2,5] is not compatible");
}

static void test_literal_ranges(void) {
  expect_error("ENTRY e {\n  ROOT c = f16[] constant(-65520)\n}\n", "out of range for literal's primitive type F16");
  expect_error("ENTRY e {\n  ROOT c = bf16[] constant(1e100)\n}\n", "out of range for literal's primitive type BF16");
  expect_error("ENTRY e {\n  ROOT c = f64[] constant(1.8e308)\n}\n", "out of range for literal's primitive type F64");
  expect_error("ENTRY e {\n  ROOT c = bf16[1] constant({nan(0x3ff)})\n}\n", "tries to set NaN payload 0x3ff");
  ts_hlo_module_t *m = parse("ENTRY e {\n  ROOT c = bf16[2] constant({-65505, -nan(0x7f)})\n}\n", NULL);
  EXPECT(m != NULL); /* -65505 rounds to a finite bf16; 0x7f fits bf16's 7 mantissa bits */
  ts_hlo_module_destroy(m);
}

/* A rank-0 reduce-window may leave window= out; the printer leaves it out too. */
static void test_rank0_window(void) {
  ts_hlo_module_t *m = parse("add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
                             "ENTRY e {\n  x = f32[] parameter(0)\n  z = f32[] constant(0)\n"
                             "  ROOT r = f32[] reduce-window(x, z), to_apply=add\n}\n",
                             NULL);
  EXPECT(m != NULL);
  if (!m) return;
  const ts_hlo_attr_t *w = ts_hlo_instr_attr(m->entry->root, "window");
  EXPECT(w && w->kind == TS_ATTR_WINDOW && w->v.window->n == 0);
  ts_buf_t b = {0};
  EXPECT(ts_hlo_print(m, &b) == TS_OK && b.data && !strstr(b.data, "window="));
  ts_buf_free(&b);
  ts_hlo_module_destroy(m);
}

int main(void) {
  test_compact_gte();
  test_inline_computation();
  test_mesh_groups();
  test_nested_operands();
  test_literal_ranges();
  test_rank0_window();
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  return failures != 0;
}
