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
  EXPECT(ts_hlo_comp_add(b->m, name, &c) == TS_OK);
  if (entry) {
    c->is_entry = true;
    b->m->entry = c;
  }
  b->c = c;
  return c;
}

static ts_hlo_instr_t *param(bld_t *b, const char *name, const ts_shape_t *s) {
  ts_hlo_instr_t *i = NULL;
  EXPECT(ts_hlo_instr_add(b->c, TS_OP_PARAMETER, s, NULL, 0, name, &i) == TS_OK);
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
  EXPECT(ts_hlo_instr_add(b->c, code, s, ops, n, name, &i) == TS_OK);
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
  EXPECT(ts_hlo_instr_add_attr(i, &a) == TS_OK);
}
#define LIST(i, name, ...) \
  attr_list(b, i, name, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

static void attr_int(ts_hlo_instr_t *i, const char *name, int64_t v) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_INT, .v.i = v};
  EXPECT(ts_hlo_instr_add_attr(i, &a) == TS_OK);
}

static void attr_comp(bld_t *b, ts_hlo_instr_t *i, const char *name, ts_hlo_comp_t *c) {
  ts_hlo_attr_t a = {.name = name, .kind = TS_ATTR_COMP};
  a.v.comps.n = 1;
  a.v.comps.comps = ts_arena_alloc(b->m->arena, sizeof c);
  a.v.comps.comps[0] = c;
  EXPECT(ts_hlo_instr_add_attr(i, &a) == TS_OK);
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
      fprintf(stderr, "test_verifier.c:%d: FAIL: expected to verify, got %s%s", line, ts_status_string(st),
              d.text ? d.text : "\n");
      failures++;
    }
  } else if (st != TS_ERR_VERIFY || !d.text || strcmp(d.text, want) != 0) {
    fprintf(stderr, "test_verifier.c:%d: FAIL: status %s\n--- want\n%s--- got\n%s", line, ts_status_string(st), want,
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
  EXPECT(ts_hlo_instr_add_operand(x, y) == TS_OK);
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

/* An all-gather without replica_groups takes its group size from the counts. */
static void test_all_gather_group(void) {
  bld_t bb = start("ag"), *b = &bb;
  comp(b, "main", true);
  ts_hlo_instr_t *a = param(b, "a", arr(b, TS_U4, 2, (int64_t[]){1024, 512}));
  ts_hlo_instr_t *g = OP(TS_OP_ALL_GATHER, arr(b, TS_U4, 2, (int64_t[]){1024, 4096}), "g", a);
  LIST(g, "dimensions", 1);
  root(b, g);
  FAILS(b->m, NULL,
        "ag: error: 'g': all-gather group size is 1 (no replica_groups and replica_count=1); pass --replica-count N "
        "or set replica_count\n");
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
  EXPECT(ts_hlo_instr_add_attr(lt, &dir) == TS_OK);
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


/* ---- parsed text: every inferred opcode once, then one broken rule each ---- */

/* Parses and verifies `text`; `want` is the expected message after
 * "error: " on the first line, or NULL for a module that must verify. */
static void expect_text(const char *text, const ts_hlo_verify_opts_t *o, const char *want, int line) {
  ts_source_t src = {"t.hlo", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t d = {0};
  ts_status_t st = ts_hlo_parse(&src, NULL, &m, &d);
  if (st != TS_OK) {
    fprintf(stderr, "test_verifier.c:%d: FAIL: does not parse: %s", line, d.text ? d.text : "?\n");
    failures++;
  } else {
    st = ts_hlo_verify(m, o, &d);
    const char *msg = d.text ? strstr(d.text, "error: ") : NULL;
    size_t len = msg ? strcspn(msg + 7, "\n") : 0;
    bool ok = want ? st == TS_ERR_VERIFY && msg && len == strlen(want) && strncmp(msg + 7, want, len) == 0
                   : st == TS_OK;
    if (!ok) {
      fprintf(stderr, "test_verifier.c:%d: FAIL\n--- want\n%s\n--- got\n%s", line, want ? want : "(verifies)",
              d.text ? d.text : "(verifies)\n");
      failures++;
    }
  }
  ts_diag_free(&d);
  ts_hlo_module_destroy(m);
}
#define TEXT_OK(text, o) expect_text(text, o, NULL, __LINE__)
#define TEXT_FAILS(text, o, want) expect_text(text, o, want, __LINE__)

/* Result shapes below are worked out by hand from the operation semantics. */
static const char zoo[] =
    "HloModule zoo, replica_count=2, num_partitions=2\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "mul {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] multiply(a, b)\n}\n"
    "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT p = pred[] compare(a, b), direction=GE\n}\n"
    "cmp2 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
    "  ROOT p = pred[] compare(a, b), direction=LT\n}\n"
    "add2 {\n  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n  c = f32[] parameter(2)\n  d = s32[] parameter(3)\n"
    "  s = f32[] add(a, c)\n  t = s32[] add(b, d)\n  ROOT r = (f32[], s32[]) tuple(s, t)\n}\n"
    "neg {\n  a = f32[8] parameter(0)\n  ROOT n = f32[8] negate(a)\n}\n"
    "br0 {\n  a = f32[8] parameter(0)\n  ROOT n = f32[8] negate(a)\n}\n"
    "br1 {\n  a = f32[8] parameter(0)\n  ROOT n = f32[8] exponential(a)\n}\n"
    "ENTRY main {\n"
    "  x = f32[2,3,4] parameter(0)\n"
    "  img = f32[8,32,32,16] parameter(1)\n"
    "  k = f32[3,3,16,32] parameter(2)\n"
    "  idx = s32[] parameter(3)\n"
    "  z = c64[8] parameter(4)\n"
    "  r = f32[8] parameter(5)\n"
    "  m = f32[4,4] parameter(6)\n"
    "  src = f32[8,16,16,16] parameter(7)\n"
    "  lhs = f32[5,2,3] parameter(8)\n"
    "  rhs = f32[5,3,7,2] parameter(9)\n"
    "  kg = f32[3,3,8,32] parameter(10)\n"
    "  scale = f32[16] parameter(11)\n"
    "  table = f32[100,64] parameter(12)\n"
    "  ids = s32[16,1] parameter(13)\n"
    "  st = u64[2] parameter(14)\n"
    "  tok = token[] after-all()\n"
    "  clz = s32[] count-leading-zeros(idx)\n"
    "  pop = s32[] popcnt(idx)\n"
    "  fin = pred[8] is-finite(r)\n"
    "  re = f32[8] real(z)\n"
    "  im = f32[8] imag(z)\n"
    "  cx = c64[8] complex(re, im)\n"
    "  ab = f32[8] abs(z)\n"
    "  lo = f32[] constant(0)\n"
    "  hi = f32[] constant(1)\n"
    "  cl = f32[8] clamp(lo, r, hi)\n"
    "  h = f16[8,2] bitcast-convert(r)\n"
    "  w = f32[8] bitcast-convert(h)\n"
    "  u = u32[8] bitcast-convert(r)\n"
    "  cv = s8[2,3,4] convert(x)\n"
    "  rp = f32[8] reduce-precision(r), exponent_bits=5, mantissa_bits=10\n"
    "  sel = f32[8] select(fin, r, re)\n"
    "  rev = f32[2,3,4] reverse(x), dimensions={0,2}\n"
    "  tr = f32[4,2,3] transpose(x), dimensions={2,0,1}\n"
    "  sl = f32[1,2,2] slice(x), slice={[1:2], [0:3:2], [1:4:2]}\n"
    "  ds = f32[2,2,2] dynamic-slice(x, idx, idx, idx), dynamic_slice_sizes={2,2,2}\n"
    "  upd = f32[1,3,4] slice(x), slice={[0:1], [0:3], [0:4]}\n"
    "  dus = f32[2,3,4] dynamic-update-slice(x, upd, idx, idx, idx)\n"
    "  cat = f32[2,6,4] concatenate(x, x), dimensions={1}\n"
    "  pd = f32[3,10,9] pad(x, lo), padding=1_0x0_1_3x-1_0_2\n"
    "  io = s32[4,5] iota(), iota_dimension=1\n"
    "  gds = s32[] get-dimension-size(x), dimensions={1}\n"
    "  sds = f32[2,<=3,4] set-dimension-size(x, idx), dimensions={1}\n"
    "  bc = f32[3,2,7,4] broadcast(x), dimensions={1,0,3}\n"
    "  rs = f32[6,4] reshape(x)\n"
    "  red = f32[3] reduce(x, lo), dimensions={0,2}, to_apply=add\n"
    "  xi = s32[2,3,4] convert(x)\n"
    "  zi = s32[] constant(0)\n"
    "  vred = (f32[2], s32[2]) reduce(x, xi, lo, zi), dimensions={1,2}, to_apply=add2\n"
    "  rw = f32[8,16,16,16] reduce-window(img, lo), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=add\n"
    "  rwp = f32[8,33,32,16] reduce-window(img, lo), window={size=1x3x3x1 pad=0_0x1_2x1_1x0_0}, to_apply=add\n"
    "  sas = f32[8,32,32,16] select-and-scatter(img, src, lo), window={size=1x2x2x1 stride=1x2x2x1}, select=ge, "
    "scatter=add\n"
    "  dt = f32[5,2,7,2] dot(lhs, rhs), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
    "rhs_contracting_dims={1}\n"
    "  conv = f32[8,16,16,32] convolution(img, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
    "  gconv = f32[8,32,32,32] convolution(img, kg), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
    "feature_group_count=2\n"
    "  bconv = f32[4,28,28,32] convolution(img, k), window={size=3x3 rhs_dilate=2x2}, dim_labels=b01f_01io->b01f, "
    "batch_group_count=2\n"
    "  dconv = f32[8,61,61,32] convolution(img, k), window={size=3x3 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f\n"
    "  tconv = f32[32,30,30,8] convolution(img, k), window={size=3x3}, dim_labels=b01f_01io->f01b\n"
    "  ff = c64[8] fft(z), fft_type=FFT, fft_length={8}\n"
    "  rf = c64[5] fft(r), fft_type=RFFT, fft_length={8}\n"
    "  ir = f32[8] fft(rf), fft_type=IRFFT, fft_length={8}\n"
    "  ch = f32[4,4] cholesky(m), lower=true\n"
    "  trs = f32[4,4] triangular-solve(m, m), left_side=true, lower=true, transpose_a=NO_TRANSPOSE\n"
    "  bnt = (f32[8,32,32,16], f32[16], f32[16]) batch-norm-training(img, scale, scale), epsilon=0.001, "
    "feature_index=3\n"
    "  bni = f32[8,32,32,16] batch-norm-inference(img, scale, scale, scale, scale), epsilon=0.001, feature_index=3\n"
    "  bng = (f32[8,32,32,16], f32[16], f32[16]) batch-norm-grad(img, scale, scale, scale, img), epsilon=0.001, "
    "feature_index=3\n"
    "  g = f32[16,64] gather(table, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
    "index_vector_dim=1, slice_sizes={1,64}\n"
    "  g2 = f32[16,1,8] gather(table, ids), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, "
    "index_vector_dim=1, slice_sizes={1,8}\n"
    "  sc = f32[100,64] scatter(table, ids, g), update_window_dims={1}, inserted_window_dims={0}, "
    "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"
    "  si = s32[8] iota(), iota_dimension=0\n"
    "  srt = (f32[8], s32[8]) sort(r, si), dimensions={0}, to_apply=cmp2\n"
    "  tk = (f32[3], s32[3]) topk(r), k=3, largest=true\n"
    "  mp = f32[8] map(r, r), dimensions={0}, to_apply=mul\n"
    "  rn = f32[3,3] rng(lo, hi), distribution=rng_uniform\n"
    "  rbg = (u64[2], u32[4,4]) rng-bit-generator(st), algorithm=rng_default\n"
    "  ar = f32[8] all-reduce(r), replica_groups={{0,1}}, to_apply=add\n"
    "  ar2 = (f32[8], f32[4,4]) all-reduce(r, m), to_apply=add\n"
    "  ag = f32[16] all-gather(r), dimensions={0}, replica_groups={{0,1}}\n"
    "  agc = f32[32] all-gather(r), dimensions={0}, channel_id=1\n"
    "  agg = f32[32] all-gather(r), dimensions={0}, channel_id=2, replica_groups={{0,1,2,3}}, "
    "use_global_device_ids=true\n"
    "  rsc = f32[4] reduce-scatter(r), dimensions={0}, replica_groups={{0,1}}, to_apply=add\n"
    "  a2a = f32[8] all-to-all(r), dimensions={0}, replica_groups={{0,1}}\n"
    "  a2p = f32[8] all-to-all(r), dimensions={0}, channel_id=3\n"
    "  cp = f32[8] collective-permute(r), source_target_pairs={{0,1},{1,0}}\n"
    "  pid = u32[] partition-id()\n"
    "  rid = u32[] replica-id()\n"
    "  dep = f32[8] add-dependency(r, tok)\n"
    "  inf = ((f32[2]), token[]) infeed(tok)\n"
    "  outf = token[] outfeed(r, tok), outfeed_shape=f32[8]\n"
    "  tp = (f32[8], f32[8]) tuple(r, r)\n"
    "  ob = (f32[8], f32[8]) opt-barrier(tp)\n"
    "  gte = f32[8] get-tuple-element(ob), index=1\n"
    "  cl2 = f32[8] call(r), to_apply=neg\n"
    "  cond = f32[8] conditional(idx, r, cl2), branch_computations={br0, br1}\n"
    "  fu = f32[8] fusion(r), kind=kLoop, calls=neg\n"
    "  cc = f32[99] custom-call(r), custom_call_target=\"anything\"\n"
    "  ROOT out = (f32[8], f32[8], f32[99]) tuple(cond, fu, cc)\n"
    "}\n";

static void test_zoo(void) { TEXT_OK(zoo, NULL); }

/* One broken rule per module; the message is what the rule says. */
static void test_broken_rules(void) {
#define ENTRY1(body) "HloModule t\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT sum = f32[] add(a, b)\n}\n" \
                     "ENTRY main {\n" body "}\n"
  TEXT_FAILS(ENTRY1("  img = f32[8,32,32,16] parameter(0)\n  k = f32[3,3,8,32] parameter(1)\n"
                    "  ROOT c = f32[8,30,30,32] convolution(img, k), window={size=3x3}, dim_labels=b01f_01io->b01f\n"),
             NULL,
             "'c': input feature size 16 of f32[8,32,32,16] is not the kernel input feature size 8 of f32[3,3,8,32] "
             "times feature_group_count 1");
  TEXT_FAILS(ENTRY1("  img = f32[8,32,32,16] parameter(0)\n  k = f32[3,3,16,32] parameter(1)\n"
                    "  ROOT c = f32[8,30,30,32] convolution(img, k), window={size=3x5}, dim_labels=b01f_01io->b01f\n"),
             NULL, "'c': window size 5 of spatial dimension 1 does not match the kernel's 3");
  TEXT_FAILS(ENTRY1("  img = f32[8,32,32,16] parameter(0)\n  k = f32[3,3,16,32] parameter(1)\n"
                    "  ROOT c = f32[8,32,32,32] convolution(img, k), window={size=3x3}, dim_labels=b01f_01io->b01f\n"),
             NULL, "'c': result shape f32[8,32,32,32] does not match the inferred shape f32[8,30,30,32]");
  TEXT_FAILS(ENTRY1("  p = f32[8,32] parameter(0)\n  z = f32[] constant(0)\n"
                    "  ROOT w = f32[8,16] reduce-window(p, z), window={size=1x3 stride=1x2}, to_apply=add\n"),
             NULL, "'w': result shape f32[8,16] does not match the inferred shape f32[8,15]");
  TEXT_FAILS(ENTRY1("  t = f32[100,64] parameter(0)\n  i = s32[16,1] parameter(1)\n"
                    "  ROOT g = f32[16,65] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
                    "start_index_map={0}, index_vector_dim=1, slice_sizes={1,65}\n"),
             NULL, "'g': slice size 65 of dimension 1 is out of bounds for f32[100,64]");
  TEXT_FAILS(ENTRY1("  t = f32[100,64] parameter(0)\n  i = s32[16,1] parameter(1)\n  u = f32[8,64] parameter(2)\n"
                    "  ROOT s = f32[100,64] scatter(t, i, u), update_window_dims={1}, inserted_window_dims={0}, "
                    "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"),
             NULL, "'s': update scatter dimension 0 of f32[8,64] does not match the indices s32[16,1]");
  TEXT_FAILS(ENTRY1("  a = f32[2,3] parameter(0)\n  b = f32[4,5] parameter(1)\n"
                    "  ROOT d = f32[2,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"),
             NULL,
             "'d': dot contracting dimension sizes differ: lhs dimension 1 of f32[2,3] and rhs dimension 0 of "
             "f32[4,5]");
  TEXT_FAILS("HloModule t, replica_count=4\n"
             "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
             "ENTRY main {\n  p = f32[6] parameter(0)\n"
             "  ROOT r = f32[1] reduce-scatter(p), dimensions={0}, to_apply=add\n}\n",
             NULL,
             "'r': reduce-scatter dimension 0 of f32[6] is not divisible by the group size 4 (no replica_groups and "
             "replica_count=4)");
  TEXT_FAILS(ENTRY1("  p = f32[4] parameter(0)\n  ROOT s = f32[4] select(p, p, p)\n"), NULL,
             "'s': select predicate must be pred, got f32[4]");
  TEXT_FAILS(ENTRY1("  p = f32[4] parameter(0)\n  b = f32[2] parameter(1)\n  ROOT c = f32[4] clamp(b, p, b)\n"),
             NULL, "'c': clamp bound f32[2] must be a scalar or match the operand f32[4]");
  TEXT_FAILS(ENTRY1("  p = f32[4,3] parameter(0)\n  ROOT c = f64[4] bitcast-convert(p)\n"), NULL,
             "'c': bitcast-convert from f32[4,3] to 64-bit elements needs a last dimension of 2");
  TEXT_FAILS(ENTRY1("  ROOT i = s32[4] iota(), iota_dimension=1\n"), NULL,
             "'i': iota_dimension 1 is out of range for s32[4]");
  TEXT_FAILS(ENTRY1("  p = f32[4] parameter(0)\n  i = s32[] parameter(1)\n"
                    "  ROOT d = f32[5] dynamic-slice(p, i), dynamic_slice_sizes={5}\n"),
             NULL, "'d': dynamic slice size 5 of dimension 0 is out of bounds for f32[4]");
  TEXT_FAILS(ENTRY1("  p = f32[4] parameter(0)\n  ROOT s = f32[4] sort(p), dimensions={0}, to_apply=add\n"), NULL,
             "'s': to_apply 'add' has the wrong signature for a sort comparator: expected (f32[], f32[]) -> pred[], "
             "got (f32[], f32[]) -> f32[]");
  TEXT_FAILS(ENTRY1("  p = f32[4] parameter(0)\n  ROOT t = (f32[5], s32[5]) topk(p), k=5\n"), NULL,
             "'t': topk k=5 is out of range for the last dimension of f32[4]");
  TEXT_FAILS(ENTRY1("  p = f32[4] parameter(0)\n"
                    "  ROOT c = f32[4] collective-permute(p), source_target_pairs={{0,1},{0,2}}\n"),
             NULL, "'c': source_target_pairs names source 0 twice");
  TEXT_FAILS(ENTRY1("  p = f32[4] parameter(0)\n"
                    "  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1}}, use_global_device_ids=true, "
                    "to_apply=add\n"),
             NULL, "'r': use_global_device_ids=true needs a channel_id");
  TEXT_FAILS(ENTRY1("  p = f32[4] parameter(0)\n"
                    "  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1},{1,2}}, to_apply=add\n"),
             NULL, "'r': replica_groups name id 1 more than once");
  TEXT_FAILS(ENTRY1("  p = f32[4] parameter(0)\n"
                    "  ROOT t = (f32[4], f32[4]) tuple(p, p), sharding={{replicated}, {replicated}, {replicated}}\n"),
             NULL, "'t': tuple sharding has 3 elements but the shape (f32[4], f32[4]) has 2 leaves");
  TEXT_FAILS("HloModule t\nf {\n  a = f32[4] parameter(0)\n  ROOT n = f32[4] negate(a)\n}\n"
             "ENTRY main {\n  p = f32[4] parameter(0)\n  ROOT x = f32[8] fusion(p), kind=kLoop, calls=f\n}\n",
             NULL, "'x': calls 'f' has the wrong signature for a fusion: expected (f32[4]) -> f32[8], got (f32[4]) -> "
                   "f32[4]");
  TEXT_FAILS("HloModule t\nf {\n  a = f32[4] parameter(0)\n  ROOT n = f32[4] negate(a)\n}\n"
             "ENTRY main {\n  p = f32[5] parameter(0)\n  ROOT x = f32[4] call(p), to_apply=f\n}\n",
             NULL, "'x': to_apply 'f' has the wrong signature for a call: expected (f32[5]) -> f32[4], got (f32[4]) -> "
                   "f32[4]");
  TEXT_FAILS(ENTRY1("  p = f32[4] parameter(0)\n  ROOT n = s32[4] exponential(p)\n"), NULL,
             "'n': result shape s32[4] does not match the inferred shape f32[4]");
  TEXT_FAILS(ENTRY1("  p = s32[4] parameter(0)\n  q = s32[4] parameter(1)\n  ROOT n = s32[4] atan2(p, q)\n"), NULL,
             "'n': atan2 needs floating-point or complex operands, got s32[4]");
  TEXT_FAILS(ENTRY1("  p = f32[4,4] parameter(0)\n  z = f32[] constant(0)\n"
                    "  ROOT r = f32[4] reduce(p, z), dimensions={2}, to_apply=add\n"),
             NULL, "'r': reduce dimensions value 2 is out of range for f32[4,4] (rank 2)");
#undef ENTRY1
}

int main(void) {
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
  test_zoo();
  test_broken_rules();
  if (failures) {
    fprintf(stderr, "test_verifier: %d failure%s\n", failures, failures == 1 ? "" : "s");
    return 1;
  }
  printf("test_verifier: ok\n");
  return 0;
}
