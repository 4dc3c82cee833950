/* Unit tests for the IR builder and the printer: modules built through the
 * API print as the hand-written canonical text below. */
#include "ts_hlo.h"

#include "ts_test.h"

#include <stdio.h>
#include <string.h>


static void expect_text(const char *got, const char *want) {
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "FAIL: printed text differs\n--- want\n%s--- got\n%s", want, got);
    failures++;
  }
}

static ts_hlo_attr_t int_list(ts_hlo_module_t *m, const char *name, int n, const int64_t *v) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_INT_LIST};
  a.v.list.n = n;
  a.v.list.v = ts_arena_alloc(m->arena, sizeof(int64_t) * (size_t)n);
  memcpy(a.v.list.v, v, sizeof(int64_t) * (size_t)n);
  return a;
}

static void test_build_and_print(void) {
  ts_hlo_module_t *m = ts_hlo_module_create("mlp");
  EXPECT(m != NULL);
  ts_hlo_attr_t np = {.name = "num_partitions", .kind = TS_ATTR_INT, .v.i = 2};
  EXPECT(ts_hlo_module_add_attr(m, &np) == TS_OK && m->num_partitions == 2);

  /* %add (a: f32[], b: f32[]) -> f32[] */
  ts_hlo_comp_t *add, *main_c;
  EXPECT_EQ(ts_hlo_comp_add(m, "add", &add), TS_OK);
  EXPECT_EQ(ts_hlo_comp_add(m, "add", &main_c), TS_ERR_INVALID_ARGUMENT); /* duplicate */
  ts_shape_t *scalar = ts_hlo_shape_array(m, TS_F32, 0, NULL);
  ts_hlo_instr_t *a, *b, *sum;
  EXPECT_EQ(ts_hlo_instr_add(add, TS_OP_PARAMETER, scalar, NULL, 0, "a", &a), TS_OK);
  EXPECT_EQ(ts_hlo_instr_add(add, TS_OP_PARAMETER, scalar, NULL, 0, "b", &b), TS_OK);
  a->param_number = 0;
  b->param_number = 1;
  ts_hlo_instr_t *ab[] = {a, b};
  add->params = ts_arena_alloc(m->arena, sizeof ab);
  memcpy(add->params, ab, sizeof ab);
  add->nparams = 2;
  EXPECT_EQ(ts_hlo_instr_add(add, TS_OP_ADD, scalar, ab, 2, "sum", &sum), TS_OK);
  ts_hlo_comp_set_root(add, sum);

  EXPECT_EQ(ts_hlo_comp_add(m, "main", &main_c), TS_OK);
  main_c->is_entry = true;
  m->entry = main_c;
  int64_t d[] = {8, 16};
  ts_shape_t *x_shape = ts_hlo_shape_array(m, TS_F32, 2, d);
  ts_hlo_instr_t *x, *r, *z;
  /* The same name as in %add: the builder makes it unique, XLA style. */
  EXPECT_EQ(ts_hlo_instr_add(main_c, TS_OP_PARAMETER, x_shape, NULL, 0, "a", &x), TS_OK);
  EXPECT_STREQ(x->name, "a.1");
  x->param_number = 0;
  main_c->params = ts_arena_alloc(m->arena, sizeof x);
  main_c->params[0] = x;
  main_c->nparams = 1;
  x->sharding = ts_arena_alloc(m->arena, sizeof *x->sharding);
  x->sharding->kind = TS_SHARD_TILED;
  x->sharding->iota = true;
  int64_t tiles[] = {2, 1}, reshape[] = {2};
  x->sharding->tile_dims = (ts_i64_list_t){2, tiles};
  x->sharding->iota_reshape = (ts_i64_list_t){1, reshape};

  ts_hlo_instr_t *zops[] = {};
  EXPECT_EQ(ts_hlo_instr_add(main_c, TS_OP_CONSTANT, scalar, zops, 0, "zero", &z), TS_OK);
  z->literal = ts_arena_alloc(m->arena, sizeof *z->literal);
  z->literal->shape = scalar;
  z->literal->count = 1;
  z->literal->f = ts_arena_alloc(m->arena, sizeof(double));
  z->literal->f[0] = 0.1;

  int64_t red_dims[] = {8};
  ts_hlo_instr_t *rops[] = {x, z};
  EXPECT_EQ(ts_hlo_instr_add(main_c, TS_OP_REDUCE, ts_hlo_shape_array(m, TS_F32, 1, red_dims), rops, 2,
                          "reduce", &r), TS_OK);
  int64_t one[] = {1};
  ts_hlo_attr_t dims = int_list(m, "dimensions", 1, one);
  EXPECT_EQ(ts_hlo_instr_add_attr(r, &dims), TS_OK);
  ts_hlo_attr_t to_apply = {.name = "to_apply", .kind = TS_ATTR_COMP};
  to_apply.v.comps.n = 1;
  to_apply.v.comps.comps = ts_arena_alloc(m->arena, sizeof(ts_hlo_comp_t *));
  to_apply.v.comps.comps[0] = add;
  EXPECT_EQ(ts_hlo_instr_add_attr(r, &to_apply), TS_OK);
  EXPECT(r->ncalled == 1 && r->called[0] == add);
  ts_hlo_comp_set_root(main_c, r);

  /* Users are kept, unique, in order of first use. */
  EXPECT(x->nusers == 1 && x->users[0] == r && z->nusers == 1);
  EXPECT(ts_hlo_instr_attr(r, "dimensions") == &r->attrs[0]);
  EXPECT(ts_hlo_comp_find_instr(main_c, "a.1") == x && ts_hlo_comp_find_instr(main_c, "a") == NULL);
  EXPECT(ts_hlo_module_find_comp(m, "add") == add);

  ts_buf_t out = {0};
  EXPECT_EQ(ts_hlo_print(m, &out), TS_OK);
  expect_text(out.data,
              "HloModule mlp, num_partitions=2\n"
              "\n"
              "%add (a: f32[], b: f32[]) -> f32[] {\n"
              "  %a = f32[] parameter(0)\n"
              "  %b = f32[] parameter(1)\n"
              "  ROOT %sum = f32[] add(%a, %b)\n"
              "}\n"
              "\n"
              "ENTRY %main (a.1: f32[8,16]) -> f32[8] {\n"
              "  %a.1 = f32[8,16] parameter(0), sharding={devices=[2,1]<=[2]}\n"
              "  %zero = f32[] constant(0.1)\n"
              "  ROOT %reduce = f32[8] reduce(%a.1, %zero), dimensions={1}, to_apply=%add\n"
              "}\n");
  ts_buf_free(&out);
  ts_hlo_module_destroy(m);
}

static void test_shapes(void) {
  ts_hlo_module_t *m = ts_hlo_module_create("s");
  int64_t d[] = {4, 3};
  ts_shape_t *a = ts_hlo_shape_array(m, TS_BF16, 2, d);
  a->layout = ts_arena_alloc(m->arena, sizeof *a->layout);
  a->layout->rank = 2;
  a->layout->minor_to_major = ts_arena_alloc(m->arena, 2 * sizeof(int64_t));
  a->layout->minor_to_major[0] = 0;
  a->layout->minor_to_major[1] = 1;
  a->layout->memory_space = 1;
  ts_shape_t *dyn = ts_hlo_shape_array(m, TS_S32, 2, d);
  dyn->dynamic = ts_arena_alloc(m->arena, 2);
  dyn->dynamic[0] = 1;
  dyn->dims[1] = TS_DIM_UNBOUNDED;
  dyn->dynamic[1] = 1;
  ts_shape_t *tok = ts_hlo_shape_array(m, TS_TOKEN, 0, NULL);
  ts_shape_t *elems[] = {a, dyn, tok};
  ts_shape_t *t = ts_hlo_shape_tuple(m, 3, elems);
  ts_buf_t b = {0};
  ts_shape_print(&b, t, true);
  expect_text(b.data, "(bf16[4,3]{0,1:S(1)}, s32[<=4,?], token[])");
  ts_buf_free(&b);
  ts_shape_print(&b, t, false);
  expect_text(b.data, "(bf16[4,3], s32[<=4,?], token[])");
  ts_buf_free(&b);
  EXPECT(ts_shape_leaf_count(t) == 3 && ts_shape_elements(a) == 12);
  EXPECT(ts_shape_equal(a, a, true) && !ts_shape_equal(a, dyn, false));
  ts_hlo_module_destroy(m);
}

static void test_tables(void) {
  ts_opcode_t op;
  EXPECT(ts_opcode_from_name("reduce-scatter", 14, &op) && op == TS_OP_REDUCE_SCATTER);
  EXPECT(!ts_opcode_from_name("exp", 3, &op));
  EXPECT_STREQ(ts_opcode_name(TS_OP_EXPONENTIAL_MINUS_ONE), "exponential-minus-one");
  EXPECT(ts_opcode_arity(TS_OP_SELECT) == 3 && ts_opcode_arity(TS_OP_TUPLE) == -1);
  EXPECT_EQ(TS_OP_COUNT, 136);
  ts_elem_t t;
  EXPECT(ts_elem_from_name("f8e4m3fn", 8, &t) && t == TS_F8E4M3FN && ts_elem_bits(t) == 8);
  EXPECT(!ts_elem_from_name("tuple", 5, &t));
  EXPECT(ts_elem_is_float(TS_BF16) && !ts_elem_is_float(TS_C64) && ts_elem_is_complex(TS_C64));
  EXPECT(ts_elem_is_signed_int(TS_S4) && ts_elem_is_unsigned_int(TS_U1) && !ts_elem_is_array(TS_TOKEN));
}

/* Clashing names get `.N` suffixes above any suffix already present, and
 * the next N per stem is remembered (50k clashes stay linear). */
static void test_unique_names(void) {
  ts_hlo_module_t *m = ts_hlo_module_create("names");
  ts_hlo_comp_t *c;
  EXPECT_EQ(ts_hlo_comp_add(m, "c", &c), TS_OK);
  ts_shape_t *s = ts_hlo_shape_array(m, TS_F32, 0, NULL);
  ts_hlo_instr_t *i = NULL;
  for (int k = 0; k < 50000; k++) EXPECT_EQ(ts_hlo_instr_add(c, TS_OP_CONSTANT, s, NULL, 0, "add", &i), TS_OK);
  EXPECT_STREQ(i->name, "add.49999");
  EXPECT(ts_hlo_instr_add(c, TS_OP_CONSTANT, s, NULL, 0, "x.7", &i) == TS_OK && strcmp(i->name, "x.7") == 0);
  EXPECT(ts_hlo_instr_add(c, TS_OP_CONSTANT, s, NULL, 0, "x.7", &i) == TS_OK && strcmp(i->name, "x.8") == 0);
  EXPECT(ts_hlo_instr_add(c, TS_OP_CONSTANT, s, NULL, 0, "x", &i) == TS_OK && strcmp(i->name, "x") == 0);
  EXPECT(ts_hlo_instr_add(c, TS_OP_CONSTANT, s, NULL, 0, "x", &i) == TS_OK && strcmp(i->name, "x.9") == 0);
  EXPECT(ts_hlo_instr_add(c, TS_OP_CONSTANT, s, NULL, 0, NULL, &i) == TS_OK && strcmp(i->name, "constant") == 0);
  ts_hlo_module_destroy(m);
}

static const ts_test_case_t cases[] = {
    {"tables", test_tables},
    {"unique_names", test_unique_names},
    {"shapes", test_shapes},
    {"build_and_print", test_build_and_print},
};

int main(int argc, char **argv) {
  return ts_test_cases("test_printer", argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
