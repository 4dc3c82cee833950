/* Unit tests for ts_hlo_verify on modules built with the builder API (no
 * source text): each case breaks one rule and checks the exact message. The
 * expected texts are written by hand from the rules, not captured. */
#include "ts_hlo.h"

#include "ts_test.h"

#include <stdio.h>
#include <string.h>


/* ---- building ---- */

typedef struct {
  ts_hlo_module_t *m;
  ts_hlo_comp_t *c; /* the computation being built */
} bld_t;

static ts_shape_t *arr(bld_t *b, ts_elem_t t, int rank, const int64_t *dims) {
  return ts_hlo_shape_array(b->m, t, rank, dims);
}
#define F32(...) arr(b, TS_F32, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define SCALAR(t) arr(b, t, 0, NULL)

static ts_hlo_comp_t *comp(bld_t *b, const char *name, bool entry) {
  ts_hlo_comp_t *c = NULL;
  EXPECT_EQ(ts_hlo_comp_add(b->m, name, &c), TS_OK);
  if (entry) {
    c->is_entry = true;
    b->m->entry = c;
  }
  b->c = c;
  return c;
}

static ts_hlo_instr_t *param(bld_t *b, const char *name, const ts_shape_t *s) {
  ts_hlo_instr_t *i = NULL;
  EXPECT_EQ(ts_hlo_instr_add(b->c, TS_OP_PARAMETER, s, NULL, 0, name, &i), TS_OK);
  ts_hlo_comp_t *c = b->c;
  ts_hlo_instr_t **p = ts_arena_alloc(b->m->arena, sizeof *p * (size_t)(c->nparams + 1));
  if (c->nparams) memcpy(p, c->params, sizeof *p * (size_t)c->nparams);
  i->param_number = c->nparams;
  p[c->nparams++] = i;
  c->params = p;
  return i;
}

static ts_hlo_instr_t *op(bld_t *b, ts_opcode_t code, const ts_shape_t *s, const char *name, int n,
                          ts_hlo_instr_t *const *ops) {
  ts_hlo_instr_t *i = NULL;
  EXPECT_EQ(ts_hlo_instr_add(b->c, code, s, ops, n, name, &i), TS_OK);
  return i;
}
#define OP(code, shape, name, ...) \
  op(b, code, shape, name, (int)(sizeof((ts_hlo_instr_t *[]){__VA_ARGS__}) / sizeof(void *)), (ts_hlo_instr_t *[]){__VA_ARGS__})

static ts_hlo_instr_t *leaf(bld_t *b, ts_opcode_t code, const ts_shape_t *s, const char *name) {
  return op(b, code, s, name, 0, NULL);
}

static void root(bld_t *b, ts_hlo_instr_t *i) { ts_hlo_comp_set_root(b->c, i); }

static void attr_list(bld_t *b, ts_hlo_instr_t *i, const char *name, int n, const int64_t *v) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_INT_LIST};
  a.v.list.n = n;
  a.v.list.v = ts_arena_alloc(b->m->arena, sizeof(int64_t) * (size_t)(n + 1));
  if (n) memcpy(a.v.list.v, v, sizeof(int64_t) * (size_t)n);
  EXPECT_EQ(ts_hlo_instr_add_attr(i, &a), TS_OK);
}
#define LIST(i, name, ...) \
  attr_list(b, i, name, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

static void attr_int(ts_hlo_instr_t *i, const char *name, int64_t v) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_INT, .v.i = v};
  EXPECT_EQ(ts_hlo_instr_add_attr(i, &a), TS_OK);
}

static void attr_comp(bld_t *b, ts_hlo_instr_t *i, const char *name, ts_hlo_comp_t *c) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_COMP};
  a.v.comps.n = 1;
  a.v.comps.comps = ts_arena_alloc(b->m->arena, sizeof c);
  a.v.comps.comps[0] = c;
  EXPECT_EQ(ts_hlo_instr_add_attr(i, &a), TS_OK);
}

/* %add (x: f32[], y: f32[]) -> f32[] */
static ts_hlo_comp_t *add_comp(bld_t *b, const char *name, int nparams) {
  ts_hlo_comp_t *c = comp(b, name, false);
  ts_hlo_instr_t *x = param(b, NULL, SCALAR(TS_F32));
  ts_hlo_instr_t *y = param(b, NULL, SCALAR(TS_F32));
  for (int k = 2; k < nparams; k++) param(b, NULL, SCALAR(TS_F32));
  root(b, OP(TS_OP_ADD, SCALAR(TS_F32), NULL, x, y));
  return c;
}

/* ---- checking ---- */

static void expect_verify(ts_hlo_module_t *m, const ts_hlo_verify_opts_t *o, const char *want, int line) {
  ts_diag_t d = {0};
  ts_status_t st = ts_hlo_verify(m, o, &d);
  if (!want) {
    if (st != TS_OK) {
      fprintf(stderr, "%s:%d: FAIL: expected to verify, got %s%s", __FILE__, line, ts_status_string(st),
              d.text ? d.text : "\n");
      failures++;
    }
  } else if (st != TS_ERR_VERIFY || !d.text || strcmp(d.text, want) != 0) {
    fprintf(stderr, "%s:%d: FAIL: status %s\n--- want\n%s--- got\n%s", __FILE__, line, ts_status_string(st), want,
            d.text ? d.text : "(none)\n");
    failures++;
  }
  ts_diag_free(&d);
}
#define VERIFIES(m, o) expect_verify(m, o, NULL, __LINE__)
#define FAILS(m, o, want) expect_verify(m, o, want, __LINE__)

static bld_t start(const char *name) { return (bld_t){ts_hlo_module_create(name), NULL}; }

/* ---- cases ---- */

/* A small MLP step: dot, broadcast, add, reduce; verifies. Then the dot's
 * result is made wrong. */
static void test_mlp(void) {
  bld_t bb = start("mlp"), *b = &bb;
  ts_hlo_comp_t *add = add_comp(b, "add", 2);
  comp(b, "main", true);
  ts_hlo_instr_t *x = param(b, "x", F32(8, 16)), *w = param(b, "w", F32(16, 4));
  ts_hlo_instr_t *dot = OP(TS_OP_DOT, F32(8, 4), "dot", x, w);
  LIST(dot, "lhs_contracting_dims", 1);
  LIST(dot, "rhs_contracting_dims", 0);
  ts_hlo_instr_t *bias = param(b, "bias", F32(4));
  ts_hlo_instr_t *bc = OP(TS_OP_BROADCAST, F32(8, 4), "bc", bias);
  LIST(bc, "dimensions", 1);
  ts_hlo_instr_t *sum = OP(TS_OP_ADD, F32(8, 4), "sum", dot, bc);
  ts_hlo_instr_t *zero = leaf(b, TS_OP_CONSTANT, SCALAR(TS_F32), "zero");
  ts_hlo_instr_t *red = OP(TS_OP_REDUCE, F32(8), "red", sum, zero);
  LIST(red, "dimensions", 1);
  attr_comp(b, red, "to_apply", add);
  root(b, red);
  VERIFIES(b->m, NULL);

  dot->shape = F32(8, 8);
  FAILS(b->m, NULL, "mlp: error: 'dot': result shape f32[8,8] does not match the inferred shape f32[8,4]\n");
  dot->shape = F32(8, 4);
  sum->shape = F32(8, 3);
  FAILS(b->m, NULL, "mlp: error: 'sum': result shape f32[8,3] does not match the inferred shape f32[8,4]\n");
  ts_hlo_module_destroy(b->m);
}

static void test_elementwise_mismatch(void) {
  bld_t bb = start("m"), *b = &bb;
  comp(b, "main", true);
  ts_hlo_instr_t *p = param(b, "p", F32(4)), *q = param(b, "q", F32(3));
  root(b, OP(TS_OP_ADD, F32(4), "add.3", p, q));
  FAILS(b->m, NULL, "m: error: 'add.3': operand shapes differ: f32[4] and f32[3]\n");
  ts_hlo_module_destroy(b->m);
}

/* x = tuple(p, y), y = get-tuple-element(x): a cycle through operands. */
static void test_cycle(void) {
  bld_t bb = start("m"), *b = &bb;
  comp(b, "main", true);
  ts_hlo_instr_t *p = param(b, "p", F32(4));
  ts_shape_t *t2[] = {F32(4), F32(4)};
  ts_hlo_instr_t *x = OP(TS_OP_TUPLE, ts_hlo_shape_tuple(b->m, 2, t2), "x", p);
  ts_hlo_instr_t *y = OP(TS_OP_GET_TUPLE_ELEMENT, F32(4), "y", x);
  attr_int(y, "index", 1);
  EXPECT_EQ(ts_hlo_instr_add_operand(x, y), TS_OK);
  root(b, y);
  FAILS(b->m, NULL, "m: error: 'x': cycle through operands: x -> y -> x\n");
  ts_hlo_module_destroy(b->m);
}

/* a has control predecessor b, and b uses a. */
static void test_control_cycle(void) {
  bld_t bb = start("m"), *b = &bb;
  comp(b, "main", true);
  ts_hlo_instr_t *p = param(b, "p", F32(4));
  ts_hlo_instr_t *a = OP(TS_OP_NEGATE, F32(4), "a", p);
  ts_hlo_instr_t *bi = OP(TS_OP_NEGATE, F32(4), "b", a);
  a->ctrl_preds = ts_arena_alloc(b->m->arena, sizeof bi);
  a->ctrl_preds[0] = bi;
  a->nctrl_preds = 1;
  root(b, bi);
  FAILS(b->m, NULL, "m: error: 'a': cycle through operands and control-predecessors: a -> b -> a\n");
  ts_hlo_module_destroy(b->m);
}

/* Links edited by hand, as a buggy pass would. */
static void test_links(void) {
  bld_t bb = start("m"), *b = &bb;
  comp(b, "main", true);
  ts_hlo_instr_t *p = param(b, "p", F32(4));
  ts_hlo_instr_t *n = OP(TS_OP_NEGATE, F32(4), "n", p);
  root(b, n);
  VERIFIES(b->m, NULL);
  p->nusers = 0;
  FAILS(b->m, NULL, "m: error: 'p': used by 'n' but missing from its users list\n");
  p->nusers = 1;
  n->ops[0] = NULL;
  FAILS(b->m, NULL, "m: error: 'n': operand 0 is NULL\n");
  n->ops[0] = p;
  n->is_root = false;
  FAILS(b->m, NULL, "m: error: 'n': is the root of computation 'main' but not marked as root\n");
  n->is_root = true;
  p->param_number = 1;
  FAILS(b->m, NULL,
        "m: error: 'p': parameter number 1 leaves a gap: computation 'main' has 1 parameter, numbered 0..0\n");
  p->param_number = 0;
  n->name = "p"; /* renamed behind the module's back: a clash */
  FAILS(b->m, NULL, "m: error: 'p': name is already used by an instruction in computation 'main'\n");
  n->name = "n2"; /* renamed, but unique */
  VERIFIES(b->m, NULL);
  ts_hlo_module_destroy(b->m);
}

/* Signatures of called computations. */
static void test_reduce_signature(void) {
  bld_t bb = start("m"), *b = &bb;
  ts_hlo_comp_t *add3 = add_comp(b, "add3", 3);
  comp(b, "main", true);
  ts_hlo_instr_t *p = param(b, "p", F32(4, 8));
  ts_hlo_instr_t *zero = leaf(b, TS_OP_CONSTANT, SCALAR(TS_F32), "zero");
  ts_hlo_instr_t *red = OP(TS_OP_REDUCE, F32(4), "red", p, zero);
  LIST(red, "dimensions", 1);
  attr_comp(b, red, "to_apply", add3);
  root(b, red);
  FAILS(b->m, NULL,
        "m: error: 'red': to_apply 'add3' has the wrong signature for a reduce of 1 input: expected "
        "(f32[], f32[]) -> f32[], got (f32[], f32[], f32[]) -> f32[]\n");
  ts_hlo_module_destroy(b->m);
}

/* An all-gather without replica_groups takes its group size from the
 * counts; with no counts set (group size 1) XLA takes the shard count from
 * the result, so that verifies too. */
static void test_all_gather_group(void) {
  bld_t bb = start("ag"), *b = &bb;
  comp(b, "main", true);
  ts_hlo_instr_t *a = param(b, "a", arr(b, TS_U4, 2, (int64_t[]){1024, 512}));
  ts_hlo_instr_t *g = OP(TS_OP_ALL_GATHER, arr(b, TS_U4, 2, (int64_t[]){1024, 4096}), "g", a);
  LIST(g, "dimensions", 1);
  root(b, g);
  VERIFIES(b->m, NULL);
  ts_hlo_verify_opts_t o = {.replica_count = 8};
  VERIFIES(b->m, &o);
  o.replica_count = 4;
  FAILS(b->m, &o,
        "ag: error: 'g': result shape u4[1024,4096] does not match the inferred shape u4[1024,2048] (group size 4: no "
        "replica_groups and replica_count=4)\n");
  ts_hlo_module_destroy(b->m);
}

/* Odd IR never crashes: wrong attribute kinds, huge dims, bad shardings. */
static void test_odd_ir(void) {
  bld_t bb = start("m"), *b = &bb;
  comp(b, "main", true);
  ts_hlo_instr_t *p = param(b, "p", F32(4, 8));
  ts_hlo_instr_t *t = OP(TS_OP_TRANSPOSE, F32(8, 4), "t", p);
  attr_int(t, "dimensions", 1);
  root(b, t);
  FAILS(b->m, NULL, "m: error: 't': attribute dimensions must be a list of integers, got an integer\n");
  t->attrs[0].kind = TS_ATTR_INT_LIST;
  t->attrs[0].v.list = (ts_i64_list_t){2, (int64_t[]){1, 1}};
  FAILS(b->m, NULL, "m: error: 't': transpose dimensions {1,1} is not a permutation of 0..1 for f32[4,8]\n");
  t->attrs[0].v.list = (ts_i64_list_t){2, (int64_t[]){1, 0}};
  VERIFIES(b->m, NULL);
  t->attrs[0].v.list = (ts_i64_list_t){2, NULL};
  FAILS(b->m, NULL, "m: error: 't': attribute dimensions has a malformed value\n");
  t->attrs[0].v.list = (ts_i64_list_t){2, (int64_t[]){1, 0}};
  t->attrs[0].name = NULL;
  FAILS(b->m, NULL, "m: error: 't': malformed attributes or literal: an attribute without a name\n");
  t->attrs[0].name = "dimensions";

  /* 2^62 x 4 elements overflow int64 */
  p->shape = F32(INT64_C(1) << 62, 4);
  t->shape = F32(4, INT64_C(1) << 62);
  VERIFIES(b->m, NULL);
  ts_hlo_instr_t *r = OP(TS_OP_RESHAPE, F32(16), "r", t);
  root(b, r);
  FAILS(b->m, NULL, "m: error: 'r': reshape element count overflows: f32[4,4611686018427387904] to f32[16]\n");

  ts_hlo_module_destroy(b->m);
}

/* Sharding ranks and device ids. */
static void test_sharding(void) {
  bld_t bb = start("m"), *b = &bb;
  comp(b, "main", true);
  ts_hlo_instr_t *p = param(b, "p", F32(4, 8));
  ts_hlo_instr_t *n = OP(TS_OP_NEGATE, F32(4, 8), "n", p);
  root(b, n);
  n->sharding = ts_arena_alloc(b->m->arena, sizeof *n->sharding);
  n->sharding->kind = TS_SHARD_TILED;
  n->sharding->iota = true;
  n->sharding->tile_dims = (ts_i64_list_t){3, (int64_t[]){2, 1, 2}};
  n->sharding->devices = (ts_i64_list_t){4, (int64_t[]){0, 1, 2, 3}};
  n->sharding->iota_reshape = (ts_i64_list_t){1, (int64_t[]){4}};
  FAILS(b->m, NULL,
        "m: error: 'n': sharding {devices=[2,1,2]<=[4]} tiles 3 data dimensions but the shape f32[4,8] has rank 2\n");
  n->sharding->last_tile_dim_replicate = true;
  VERIFIES(b->m, NULL);
  ts_hlo_verify_opts_t o = {.num_partitions = 2};
  FAILS(b->m, &o,
        "m: error: 'n': sharding device 2 is out of range: the module has 2 devices (replica_count=1, "
        "num_partitions=2): {devices=[2,1,2]<=[4] last_tile_dim_replicate}\n");
  o.num_partitions = 4;
  VERIFIES(b->m, &o);
  ts_hlo_module_destroy(b->m);
}

/* A module with source text: the message is located, with the line and caret. */
static void test_located(void) {
  bld_t bb = start("m"), *b = &bb;
  static const char text[] = "ENTRY main {\n  p = f32[4] parameter(0)\n  ROOT s = f32[4] sqrt(p)\n}\n";
  b->m->source = (ts_source_t){"t.hlo", text, sizeof text - 1};
  comp(b, "main", true);
  ts_hlo_instr_t *p = param(b, "p", arr(b, TS_S32, 1, (int64_t[]){4}));
  ts_hlo_instr_t *s = OP(TS_OP_SQRT, arr(b, TS_S32, 1, (int64_t[]){4}), "s", p);
  p->loc = (ts_loc_t){2, 3};
  s->loc = (ts_loc_t){3, 8};
  root(b, s);
  FAILS(b->m, NULL,
        "t.hlo:3:8: error: 's': sqrt needs a floating-point or complex operand, got s32[4]\n"
        "  ROOT s = f32[4] sqrt(p)\n"
        "       ^\n");
  ts_hlo_module_destroy(b->m);
}

/* while: the body must return the state it takes. */
static void test_while_body(void) {
  bld_t bb = start("m"), *b = &bb;
  ts_hlo_comp_t *cond = comp(b, "cond", false);
  ts_hlo_instr_t *s = param(b, "s", SCALAR(TS_S32));
  ts_hlo_instr_t *n = leaf(b, TS_OP_CONSTANT, SCALAR(TS_S32), "n");
  ts_hlo_instr_t *lt = OP(TS_OP_COMPARE, SCALAR(TS_PRED), "lt", s, n);
  ts_hlo_attr_t dir = {.name = "direction", .kind = TS_ATTR_IDENT, .v.s = "LT"};
  EXPECT_EQ(ts_hlo_instr_add_attr(lt, &dir), TS_OK);
  root(b, lt);
  ts_hlo_comp_t *body = comp(b, "body", false);
  ts_hlo_instr_t *s2 = param(b, "s2", SCALAR(TS_S32));
  root(b, OP(TS_OP_CONVERT, SCALAR(TS_F32), "f", s2));
  comp(b, "main", true);
  ts_hlo_instr_t *i0 = param(b, "i0", SCALAR(TS_S32));
  ts_hlo_instr_t *w = OP(TS_OP_WHILE, SCALAR(TS_S32), "w", i0);
  attr_comp(b, w, "condition", cond);
  attr_comp(b, w, "body", body);
  root(b, w);
  FAILS(b->m, NULL,
        "m: error: 'w': body 'body' has the wrong signature for a while loop: expected (s32[]) -> s32[], got "
        "(s32[]) -> f32[]\n");
  ts_hlo_module_destroy(b->m);
}

/* 200k instructions in one chain: every walk is iterative. */
static void test_long_chain(void) {
  bld_t bb = start("m"), *b = &bb;
  comp(b, "main", true);
  ts_shape_t *s = F32(4);
  ts_hlo_instr_t *x = param(b, "p", s);
  for (int k = 0; k < 200000; k++) {
    char name[32];
    snprintf(name, sizeof name, "n%d", k); /* distinct: the builder's uniquer is linear per clash */
    x = OP(TS_OP_NEGATE, s, name, x);
  }
  root(b, x);
  VERIFIES(b->m, NULL);
  ts_hlo_module_destroy(b->m);
}

/* A computation that calls itself through another. */
static void test_recursive_call(void) {
  bld_t bb = start("m"), *b = &bb;
  ts_hlo_comp_t *f = comp(b, "f", false);
  ts_hlo_instr_t *x = param(b, "x", F32(4));
  ts_hlo_instr_t *cf = OP(TS_OP_CALL, F32(4), "cf", x);
  root(b, cf);
  ts_hlo_comp_t *g = comp(b, "g", false);
  ts_hlo_instr_t *y = param(b, "y", F32(4));
  root(b, OP(TS_OP_CALL, F32(4), "cg", y));
  attr_comp(b, g->root, "to_apply", f);
  attr_comp(b, cf, "to_apply", g);
  comp(b, "main", true);
  ts_hlo_instr_t *p = param(b, "p", F32(4));
  ts_hlo_instr_t *c = OP(TS_OP_CALL, F32(4), "c", p);
  attr_comp(b, c, "to_apply", f);
  root(b, c);
  FAILS(b->m, NULL, "m: error: computation 'f': calls itself: f -> g -> f\n");
  ts_hlo_module_destroy(b->m);
}

int test_verifier_built(void) {
  test_mlp();
  test_elementwise_mismatch();
  test_cycle();
  test_control_cycle();
  test_links();
  test_reduce_signature();
  test_all_gather_group();
  test_odd_ir();
  test_sharding();
  test_located();
  test_while_body();
  test_long_chain();
  test_recursive_call();
  return failures;
}
