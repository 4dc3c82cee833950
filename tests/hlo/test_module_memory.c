/* Unit tests for how a parsed module holds its memory: equal shapes are one
 * object, attribute arrays are exactly sized, attribute names are shared,
 * the source text can be borrowed, and the per-computation name table is
 * emptied between computations. */
#include "ts_hlo.h"

#include "ts_test.h"

#include <stdio.h>
#include <string.h>

static ts_hlo_module_t *parse_text(const char *text, const ts_hlo_parse_opts_t *opts) {
  ts_source_t src = {"mem.hlo", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t d = {0};
  ts_status_t st = ts_hlo_parse(&src, opts, &m, &d);
  if (st != TS_OK) fprintf(stderr, "parse failed: %s\n", d.text ? d.text : ts_status_string(st));
  ts_diag_free(&d);
  return m;
}

static const ts_shape_t *shape_of(const ts_hlo_module_t *m, const char *name) {
  const ts_hlo_instr_t *i = ts_hlo_comp_find_instr(m->entry, name);
  EXPECT(i != NULL);
  return i ? i->shape : NULL;
}

/* Parse, print, parse, print: the same text both times. */
static void expect_round_trip(const ts_hlo_module_t *m) {
  ts_buf_t a = {0}, b = {0};
  EXPECT_EQ(ts_hlo_print(m, &a), TS_OK);
  ts_hlo_module_t *m2 = parse_text(a.data, NULL);
  EXPECT(m2 != NULL);
  if (m2) EXPECT_EQ(ts_hlo_print(m2, &b), TS_OK);
  EXPECT_STREQ(b.data, a.data);
  ts_hlo_module_destroy(m2);
  ts_buf_free(&a);
  ts_buf_free(&b);
}

static const char shapes_text[] =
    "HloModule shapes\n"
    "ENTRY main {\n"
    "  a = f32[2,3]{1,0} parameter(0)\n"
    "  b = f32[2,3]{1,0} negate(a)\n"
    "  c = f32[2, 3]{1,0} negate(b)\n"
    "  d = f32[2,3] negate(c)\n"
    "  e = f32[2,3]{0,1} parameter(1)\n"
    "  t1 = bf16[8,128]{1,0:T(8,128)(2,1)} parameter(2)\n"
    "  t2 = bf16[8,128]{1,0:T(8,128)(2,1)} negate(t1)\n"
    "  t3 = bf16[8,128]{1,0:T(8,128)} parameter(3)\n"
    "  y = f32[<=4] parameter(4)\n"
    "  z = f32[4] parameter(5)\n"
    "  i = s32[] parameter(6)\n"
    "  p = (f32[2,3]{1,0}, s32[]) tuple(a, i)\n"
    "  q = (f32[2,3]{1,0}, s32[]) tuple(b, i)\n"
    "  ROOT r = (f32[2, 3]{1,0}, s32[]) tuple(c, i)\n"
    "}\n";

/* Equal shapes, written alike or not, are one object; shapes that differ
 * in layout, tiling or dynamic markers are not. */
static void test_shared_shapes(void) {
  ts_hlo_module_t *m = parse_text(shapes_text, NULL);
  EXPECT(m != NULL);
  if (!m) return;
  const ts_shape_t *a = shape_of(m, "a");
  EXPECT(a == shape_of(m, "b"));             /* the same text */
  EXPECT(a == shape_of(m, "c"));             /* the same shape written with a blank */
  EXPECT(a != shape_of(m, "d"));             /* no layout */
  EXPECT(a != shape_of(m, "e"));             /* another layout */
  EXPECT(shape_of(m, "t1") == shape_of(m, "t2"));
  EXPECT(shape_of(m, "t1") != shape_of(m, "t3")); /* another tiling */
  EXPECT(shape_of(m, "y") != shape_of(m, "z"));   /* a dynamic dimension */
  const ts_shape_t *p = shape_of(m, "p");
  EXPECT(p == shape_of(m, "q"));
  EXPECT(p == shape_of(m, "r"));
  EXPECT(p && p->elem == TS_TUPLE && p->ntuple == 2 && p->tuple[0] == a && p->tuple[1] == shape_of(m, "i"));
  EXPECT_EQ(ts_hlo_verify(m, NULL, NULL), TS_OK);
  expect_round_trip(m);
  ts_hlo_module_destroy(m);
}

/* ts_hlo_shape_intern: a copy per distinct shape, shared by equal ones. */
static void test_shape_intern(void) {
  ts_hlo_module_t *m = ts_hlo_module_create("intern");
  int64_t d23[] = {2, 3}, d32[] = {3, 2};
  ts_shape_t *x = ts_hlo_shape_array(m, TS_F32, 2, d23), *y = ts_hlo_shape_array(m, TS_F32, 2, d23);
  const ts_shape_t *ix = ts_hlo_shape_intern(m, x);
  EXPECT(ix != NULL && ix != x && ix->dims != x->dims);
  EXPECT(ts_hlo_shape_intern(m, y) == ix);
  EXPECT(ts_hlo_shape_intern(m, ix) == ix);
  EXPECT(ts_hlo_shape_intern(m, ts_hlo_shape_array(m, TS_F32, 2, d32)) != ix);
  EXPECT(ts_hlo_shape_intern(m, ts_hlo_shape_array(m, TS_S32, 2, d23)) != ix);
  x->dims[0] = 7; /* the shared copy does not see its source change */
  EXPECT(ix->dims[0] == 2 && ix->dims[1] == 3);

  uint8_t dyn[] = {0, 1};
  y->dynamic = dyn;
  const ts_shape_t *iy = ts_hlo_shape_intern(m, y);
  EXPECT(iy != ix && iy->dynamic && iy->dynamic[1] == 1 && iy->dynamic != dyn);

  int64_t m2m[] = {1, 0}, t0[] = {8, 128}, t1[] = {2, 1};
  ts_i64_list_t tiles[] = {{2, t0}, {2, t1}};
  ts_layout_t l1 = {.rank = 2, .minor_to_major = m2m, .ntiles = 1, .tiles = tiles};
  ts_layout_t l2 = l1;
  l2.ntiles = 2;
  ts_shape_t *w1 = ts_hlo_shape_array(m, TS_F32, 2, d23), *w2 = ts_hlo_shape_array(m, TS_F32, 2, d23);
  w1->layout = &l1;
  w2->layout = &l2;
  const ts_shape_t *iw1 = ts_hlo_shape_intern(m, w1), *iw2 = ts_hlo_shape_intern(m, w2);
  EXPECT(iw1 != ix && iw1 != iw2 && iw1->layout != &l1);
  EXPECT(iw2->layout->ntiles == 2 && iw2->layout->tiles[1].v[0] == 2);
  l1.memory_space = 1;
  EXPECT(ts_hlo_shape_intern(m, w1) != iw1);

  ts_shape_t *e1[] = {x, y}, *e2[] = {ts_hlo_shape_array(m, TS_F32, 2, d23), y};
  e2[0]->dims[0] = 7;
  const ts_shape_t *t = ts_hlo_shape_intern(m, ts_hlo_shape_tuple(m, 2, e1));
  EXPECT(t != NULL && t == ts_hlo_shape_intern(m, ts_hlo_shape_tuple(m, 2, e2)));
  EXPECT(t && t->tuple[1] == iy && t->tuple[0] == ts_hlo_shape_intern(m, x));
  EXPECT(ts_hlo_shape_intern(m, ts_hlo_shape_tuple(m, 1, e1)) != t);
  ts_shape_t *many[10]; /* past the small-tuple fast path */
  for (int k = 0; k < 10; k++) many[k] = ts_hlo_shape_array(m, TS_S32, 0, NULL);
  const ts_shape_t *big = ts_hlo_shape_intern(m, ts_hlo_shape_tuple(m, 10, many));
  many[9] = x;
  EXPECT(big && big->ntuple == 10 && big->tuple[9] == big->tuple[0]);
  EXPECT(ts_hlo_shape_intern(m, ts_hlo_shape_tuple(m, 10, many)) != big);
  many[9] = many[0];
  EXPECT(ts_hlo_shape_intern(m, ts_hlo_shape_tuple(m, 10, many)) == big);
  ts_hlo_module_destroy(m);
}

static const char attrs_text[] =
    "HloModule attrs\n"
    "ENTRY main {\n"
    "  a = f32[4]{0} parameter(0), metadata={op_name=\"a\"}\n"
    "  b = f32[4]{0} negate(a), metadata={op_name=\"b\"}, my_attr=1\n"
    "  c = f32[2,4]{1,0} broadcast(b), dimensions={1}, my_attr=2, metadata={op_name=\"c\"}\n"
    "  d = f32[4]{0} negate(a)\n"
    "  ROOT e = f32[4]{0} custom-call(b, d), custom_call_target=\"t\", u1=1, u2=2, u3=3, u4=4,\n"
    "      u5=5, u6=6, u7=7, u8=8, u9=9, u10=10, u11=11, u12=12, u13=13, u14=14, u15=15, u16=16,\n"
    "      u17=17, u18=18\n"
    "}\n";

/* The parser sizes attribute arrays to what the instruction has; passes
 * can still append. */
static void test_exact_attrs(void) {
  ts_hlo_module_t *m = parse_text(attrs_text, NULL);
  EXPECT(m != NULL);
  if (!m) return;
  ts_hlo_instr_t *a = ts_hlo_comp_find_instr(m->entry, "a"), *b = ts_hlo_comp_find_instr(m->entry, "b");
  ts_hlo_instr_t *c = ts_hlo_comp_find_instr(m->entry, "c"), *d = ts_hlo_comp_find_instr(m->entry, "d");
  ts_hlo_instr_t *e = ts_hlo_comp_find_instr(m->entry, "e");
  EXPECT(a && b && c && d && e);
  if (!a || !b || !c || !d || !e) return;
  EXPECT(a->nattrs == 1 && a->attrs_cap == 1);
  EXPECT(b->nattrs == 2 && b->attrs_cap == 2);
  EXPECT(c->nattrs == 3 && c->attrs_cap == 3);
  EXPECT(d->nattrs == 0 && d->attrs_cap == 0 && d->attrs == NULL);
  EXPECT_EQ(e->nattrs, 19); /* past the parser's stack room: still all there, in order */
  EXPECT_STREQ(e->attrs[0].name, "custom_call_target");
  EXPECT(strcmp(e->attrs[18].name, "u18") == 0 && strcmp(e->attrs[18].v.s, "18") == 0);
  EXPECT(strcmp(c->attrs[0].name, "dimensions") == 0 && c->attrs[0].v.list.n == 1 && c->attrs[0].v.list.v[0] == 1);
  EXPECT_STREQ(c->attrs[2].v.s, "{op_name=\"c\"}");

  ts_hlo_attr_t x = {.name = "channel_id", .kind = TS_ATTR_INT, .v.i = 5};
  EXPECT_EQ(ts_hlo_instr_add_attr(a, &x), TS_OK);
  EXPECT_EQ(ts_hlo_instr_add_attr(d, &x), TS_OK);
  EXPECT(a->nattrs == 2 && strcmp(a->attrs[0].v.s, "{op_name=\"a\"}") == 0 && a->attrs[1].v.i == 5);
  EXPECT(d->nattrs == 1 && ts_hlo_instr_attr(d, "channel_id") == &d->attrs[0]);
  EXPECT_EQ(ts_hlo_verify(m, NULL, NULL), TS_OK);
  ts_hlo_module_destroy(m);
}

/* Attribute names are not copied per attribute: the parser's own names are
 * static, others are interned per module. */
static void test_interned_names(void) {
  ts_hlo_module_t *m = parse_text(attrs_text, NULL);
  EXPECT(m != NULL);
  if (!m) return;
  ts_hlo_instr_t *a = ts_hlo_comp_find_instr(m->entry, "a"), *b = ts_hlo_comp_find_instr(m->entry, "b");
  ts_hlo_instr_t *c = ts_hlo_comp_find_instr(m->entry, "c");
  EXPECT(a->attrs[0].name == b->attrs[0].name);         /* metadata */
  EXPECT(b->attrs[1].name == c->attrs[1].name);         /* my_attr */
  EXPECT_STREQ(b->attrs[1].name, "my_attr");
  EXPECT(b->attrs[1].name == ts_hlo_intern(m, "my_attr", 7));
  const char *ab = ts_hlo_intern(m, "abc", 2);
  EXPECT(ab && strcmp(ab, "ab") == 0 && ab == ts_hlo_intern(m, "ab", 2) && ab != ts_hlo_intern(m, "abc", 3));
  ts_hlo_module_destroy(m);
}

/* ts_hlo_instr_reserve_attrs makes room exactly once. */
static void test_reserve_attrs(void) {
  ts_hlo_module_t *m = ts_hlo_module_create("reserve");
  ts_hlo_comp_t *c;
  ts_hlo_instr_t *i;
  EXPECT_EQ(ts_hlo_comp_add(m, "c", &c), TS_OK);
  EXPECT_EQ(ts_hlo_instr_add(c, TS_OP_PARAMETER, ts_hlo_shape_array(m, TS_F32, 0, NULL), NULL, 0, "p", &i), TS_OK);
  EXPECT_EQ(ts_hlo_instr_reserve_attrs(i, 3), TS_OK);
  EXPECT_EQ(i->attrs_cap, 3);
  ts_hlo_attr_t *arr = i->attrs;
  for (int k = 0; k < 3; k++) {
    ts_hlo_attr_t a = {.name = "k", .kind = TS_ATTR_INT, .v.i = k};
    EXPECT_EQ(ts_hlo_instr_add_attr(i, &a), TS_OK);
  }
  EXPECT(i->attrs == arr && i->nattrs == 3 && i->attrs_cap == 3 && i->attrs[2].v.i == 2);
  EXPECT_EQ(ts_hlo_instr_reserve_attrs(i, 0), TS_OK);
  EXPECT(i->attrs == arr);
  EXPECT_EQ(ts_hlo_instr_reserve_attrs(i, 2), TS_OK);
  EXPECT(i->attrs != arr && i->attrs_cap == 5 && i->attrs[0].v.i == 0 && i->attrs[2].v.i == 2);
  ts_hlo_module_destroy(m);
}

/* borrow_text: the module's source is the caller's text when it ends in a
 * NUL, a copy otherwise; located errors read the same either way. */
static void test_borrow_text(void) {
  static const char text[] = "ENTRY main {\n  ROOT p = f32[] parameter(0)\n}\n";
  ts_hlo_parse_opts_t borrow = {.borrow_text = true};
  ts_hlo_module_t *m = parse_text(text, &borrow), *copied = parse_text(text, NULL);
  EXPECT(m && copied);
  if (!m || !copied) return;
  EXPECT(m->source.text == text && m->source.len == strlen(text));
  EXPECT(copied->source.text != text && strcmp(copied->source.text, text) == 0);
  ts_hlo_module_destroy(m);
  ts_hlo_module_destroy(copied);

  char unterminated[sizeof text];
  memcpy(unterminated, text, sizeof text);
  size_t n = strlen(text) - 1; /* the text without its last '\n', which stays after it */
  ts_source_t src = {"mem.hlo", unterminated, n};
  EXPECT_EQ(ts_hlo_parse(&src, &borrow, &m, NULL), TS_OK);
  EXPECT(m && m->source.text != unterminated && m->source.len == n && m->source.text[n] == '\0');
  ts_hlo_module_destroy(m);

  static const char bad[] = "ENTRY main {\n  ROOT p = f32[] parameter(0)\n  q = f32[] negate(nope)\n}\n";
  ts_source_t bsrc = {"bad.hlo", bad, strlen(bad)};
  ts_diag_t d1 = {0}, d2 = {0};
  EXPECT_EQ(ts_hlo_parse(&bsrc, &borrow, &m, &d1), TS_ERR_PARSE);
  EXPECT_EQ(ts_hlo_parse(&bsrc, NULL, &m, &d2), TS_ERR_PARSE);
  EXPECT(d1.text && strstr(d1.text, "bad.hlo:3:20: error: undefined operand 'nope'"));
  EXPECT_STREQ(d1.text, d2.text);
  ts_diag_free(&d1);
  ts_diag_free(&d2);
}

/* The name table is kept between computations but emptied: a name from
 * the computation before is not defined in the next, and may be defined
 * there again. */
static void test_names_per_computation(void) {
  ts_buf_t t = {0};
  ts_buf_puts(&t, "HloModule names\nfirst {\n  x0 = f32[] parameter(0)\n");
  for (int k = 1; k < 40; k++) ts_buf_printf(&t, "  x%d = f32[] negate(x%d)\n", k, k - 1);
  ts_buf_puts(&t, "}\nENTRY second {\n  x0 = f32[] parameter(0)\n  ROOT x1 = f32[] call(x0), to_apply=first\n}\n");
  ts_hlo_module_t *m = parse_text(t.data, NULL);
  EXPECT(m != NULL);
  if (m) {
    const ts_hlo_instr_t *x1 = ts_hlo_comp_find_instr(m->entry, "x1.1");
    EXPECT(x1 && x1->nops == 1 && x1->ops[0]->parent == m->entry && strcmp(x1->ops[0]->name, "x0.1") == 0);
  }
  ts_hlo_module_destroy(m);

  ts_buf_free(&t);
  ts_buf_puts(&t, "HloModule names\nfirst {\n  x0 = f32[] parameter(0)\n");
  for (int k = 1; k < 40; k++) ts_buf_printf(&t, "  x%d = f32[] negate(x%d)\n", k, k - 1);
  ts_buf_puts(&t, "}\nENTRY second {\n  y = f32[] parameter(0)\n  ROOT z = f32[] negate(x5)\n}\n");
  ts_source_t src = {"names.hlo", t.data, t.len};
  ts_diag_t d = {0};
  m = NULL;
  EXPECT_EQ(ts_hlo_parse(&src, NULL, &m, &d), TS_ERR_PARSE);
  EXPECT(d.text && strstr(d.text, "undefined operand 'x5' in computation 'second'"));
  ts_diag_free(&d);
  ts_buf_free(&t);
}

static const ts_test_case_t cases[] = {
    {"shared_shapes", test_shared_shapes},
    {"shape_intern", test_shape_intern},
    {"exact_attrs", test_exact_attrs},
    {"interned_names", test_interned_names},
    {"reserve_attrs", test_reserve_attrs},
    {"borrow_text", test_borrow_text},
    {"names_per_computation", test_names_per_computation},
};

int main(int argc, char **argv) {
  return ts_test_cases("test_module_memory", argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
