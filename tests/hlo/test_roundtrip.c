/* Corpus check for one HLO file: it parses, verifies, and round-trips.
 *   test_roundtrip [--replica-count N] [--num-partitions N] FILE
 * Round-trip means: print(parse(text)) == print(parse(print(parse(text))))
 * (a fixed point), and the module parsed back from the printed text has the
 * same computations, instructions, operands, shapes (with layouts),
 * attributes and constants as the module parsed from the original. */
#include "ts_hlo.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define EXPECT(cond, ...)                  \
  do {                                     \
    if (!(cond)) {                         \
      fprintf(stderr, "FAIL: " __VA_ARGS__); \
      fputc('\n', stderr);                 \
      failures++;                          \
      return;                              \
    }                                      \
  } while (0)

static bool lists_equal(const ts_i64_list_t *a, const ts_i64_list_t *b) {
  return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, sizeof(int64_t) * (size_t)a->n) == 0);
}

static bool shapes_print_equal(const ts_shape_t *a, const ts_shape_t *b) {
  ts_buf_t x = {0}, y = {0};
  ts_shape_print(&x, a, true);
  ts_shape_print(&y, b, true);
  bool eq = x.data && y.data && strcmp(x.data, y.data) == 0;
  ts_buf_free(&x);
  ts_buf_free(&y);
  return eq;
}

static void compare_literals(const char *where, const ts_literal_t *a, const ts_literal_t *b) {
  EXPECT(!a == !b, "%s: constant literal present in one module only", where);
  if (!a) return;
  EXPECT(a->elided == b->elided && a->count == b->count && a->ntuple == b->ntuple,
         "%s: constant differs (elided/count/tuple)", where);
  if (a->f) {
    int64_t n = a->count * (ts_elem_is_complex(a->shape->elem) ? 2 : 1);
    for (int64_t k = 0; k < n; k++)
      EXPECT(memcmp(&a->f[k], &b->f[k], sizeof(double)) == 0, /* bitwise: NaN payloads, -0 */
             "%s: constant element %lld differs: %.17g vs %.17g", where, (long long)k, a->f[k], b->f[k]);
  }
  if (a->i)
    for (int64_t k = 0; k < a->count; k++)
      EXPECT(a->i[k] == b->i[k], "%s: constant element %lld differs", where, (long long)k);
  for (int k = 0; k < a->ntuple; k++) compare_literals(where, a->tuple[k], b->tuple[k]);
}

static void compare_attrs(const char *where, const ts_hlo_attr_t *a, const ts_hlo_attr_t *b) {
  EXPECT(strcmp(a->name, b->name) == 0, "%s: attribute '%s' became '%s'", where, a->name, b->name);
  EXPECT(a->kind == b->kind, "%s: attribute '%s' changed kind %d -> %d", where, a->name, a->kind, b->kind);
  switch (a->kind) {
  case TS_ATTR_INT: EXPECT(a->v.i == b->v.i, "%s: %s value differs", where, a->name); break;
  case TS_ATTR_BOOL: EXPECT(a->v.b == b->v.b, "%s: %s value differs", where, a->name); break;
  case TS_ATTR_FLOAT: EXPECT(a->v.f == b->v.f, "%s: %s value differs", where, a->name); break;
  case TS_ATTR_STRING:
  case TS_ATTR_IDENT:
  case TS_ATTR_BLOB:
  case TS_ATTR_RAW:
    EXPECT(strcmp(a->v.s, b->v.s) == 0, "%s: %s value '%s' became '%s'", where, a->name, a->v.s, b->v.s);
    break;
  case TS_ATTR_INT_LIST:
  case TS_ATTR_BOOL_LIST:
    EXPECT(lists_equal(&a->v.list, &b->v.list), "%s: %s list differs", where, a->name);
    break;
  case TS_ATTR_INT_LISTS:
    EXPECT(a->v.lists.n == b->v.lists.n, "%s: %s list count differs", where, a->name);
    for (int k = 0; k < a->v.lists.n; k++)
      EXPECT(lists_equal(&a->v.lists.lists[k], &b->v.lists.lists[k]), "%s: %s list differs", where, a->name);
    break;
  case TS_ATTR_REPLICA_GROUPS:
    EXPECT(a->v.rg->ngroups == b->v.rg->ngroups && a->v.rg->iota == b->v.rg->iota,
           "%s: replica groups differ", where);
    for (int k = 0; k < a->v.rg->ngroups; k++)
      EXPECT(lists_equal(&a->v.rg->groups[k], &b->v.rg->groups[k]), "%s: replica group %d differs", where, k);
    break;
  case TS_ATTR_WINDOW:
    EXPECT(a->v.window->n == b->v.window->n &&
               (a->v.window->n == 0 || memcmp(a->v.window->dims, b->v.window->dims,
                                              sizeof(ts_window_dim_t) * (size_t)a->v.window->n) == 0),
           "%s: window differs", where);
    break;
  case TS_ATTR_COMP:
  case TS_ATTR_COMP_LIST:
    EXPECT(a->v.comps.n == b->v.comps.n, "%s: %s count differs", where, a->name);
    for (int k = 0; k < a->v.comps.n; k++)
      EXPECT(strcmp(a->v.comps.comps[k]->name, b->v.comps.comps[k]->name) == 0, "%s: %s differs", where, a->name);
    break;
  default: break; /* compared through the printed text */
  }
}

static void compare_instrs(const ts_hlo_instr_t *a, const ts_hlo_instr_t *b) {
  const char *w = a->name;
  EXPECT(strcmp(a->name, b->name) == 0, "instruction '%s' became '%s'", a->name, b->name);
  EXPECT(a->op == b->op && a->async_wrapped == b->async_wrapped, "%s: opcode changed", w);
  EXPECT(a->is_root == b->is_root, "%s: ROOT marker changed", w);
  EXPECT(ts_shape_equal(a->shape, b->shape, true) && shapes_print_equal(a->shape, b->shape),
         "%s: shape changed", w);
  EXPECT(a->nops == b->nops, "%s: operand count %d became %d", w, a->nops, b->nops);
  for (int k = 0; k < a->nops; k++)
    EXPECT(strcmp(a->ops[k]->name, b->ops[k]->name) == 0, "%s: operand %d changed", w, k);
  EXPECT(a->nctrl_preds == b->nctrl_preds, "%s: control predecessors changed", w);
  EXPECT(a->param_number == b->param_number, "%s: parameter number changed", w);
  EXPECT(!a->sharding == !b->sharding, "%s: sharding present in one module only", w);
  EXPECT(a->nattrs == b->nattrs, "%s: attribute count %d became %d", w, a->nattrs, b->nattrs);
  for (int k = 0; k < a->nattrs; k++) compare_attrs(w, &a->attrs[k], &b->attrs[k]);
  compare_literals(w, a->literal, b->literal);
}

static void compare_modules(const ts_hlo_module_t *a, const ts_hlo_module_t *b) {
  EXPECT(strcmp(a->name, b->name) == 0, "module name '%s' became '%s'", a->name, b->name);
  EXPECT(a->nattrs == b->nattrs, "module attribute count %d became %d", a->nattrs, b->nattrs);
  for (int k = 0; k < a->nattrs; k++) compare_attrs("module", &a->attrs[k], &b->attrs[k]);
  EXPECT(a->ncomps == b->ncomps, "computation count %d became %d", a->ncomps, b->ncomps);
  for (int c = 0; c < a->ncomps; c++) {
    const ts_hlo_comp_t *x = a->comps[c], *y = b->comps[c];
    EXPECT(strcmp(x->name, y->name) == 0, "computation '%s' became '%s'", x->name, y->name);
    EXPECT(x->is_entry == y->is_entry, "%s: ENTRY marker changed", x->name);
    EXPECT(x->ninstrs == y->ninstrs, "%s: instruction count %d became %d", x->name, x->ninstrs, y->ninstrs);
    for (int i = 0; i < x->ninstrs; i++) compare_instrs(x->instrs[i], y->instrs[i]);
  }
}

static ts_status_t load(const ts_source_t *src, const ts_hlo_verify_opts_t *vo, ts_hlo_module_t **m,
                        ts_buf_t *printed) {
  ts_diag_t diag = {0};
  ts_status_t st = ts_hlo_parse(src, NULL, m, &diag);
  if (st == TS_OK) st = ts_hlo_verify(*m, vo, &diag);
  if (st == TS_OK) st = ts_hlo_print(*m, printed);
  if (st != TS_OK) fprintf(stderr, "FAIL (%s): %s", src->name, diag.text ? diag.text : ts_status_string(st));
  ts_diag_free(&diag);
  return st;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"replica-count", required_argument, NULL, 'r'},
      {"num-partitions", required_argument, NULL, 'p'},
      {NULL, 0, NULL, 0},
  };
  ts_hlo_verify_opts_t vo = {0};
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 'r') vo.replica_count = atoll(optarg);
    else if (c == 'p') vo.num_partitions = atoll(optarg);
    else return 2;
  }
  int a = optind;
  if (a != argc - 1) {
    fprintf(stderr, "usage: test_roundtrip [--replica-count N] [--num-partitions N] FILE\n");
    return 2;
  }
  ts_diag_t diag = {0};
  char *text;
  size_t len;
  if (ts_read_file(argv[a], &text, &len, &diag) != TS_OK) {
    fprintf(stderr, "%s", diag.text);
    return 1;
  }
  ts_source_t src = {argv[a], text, len};
  ts_hlo_module_t *m1 = NULL, *m2 = NULL;
  ts_buf_t p1 = {0}, p2 = {0};
  if (load(&src, &vo, &m1, &p1) != TS_OK) return 1;
  ts_source_t src2 = {"<printed>", p1.data, p1.len};
  if (load(&src2, &vo, &m2, &p2) != TS_OK) {
    fprintf(stderr, "--- printed text ---\n%s", p1.data);
    return 1;
  }
  compare_modules(m1, m2);
  if (strcmp(p1.data, p2.data) != 0) {
    fprintf(stderr, "FAIL: printing is not a fixed point\n");
    failures++;
  }
  int ninstr = 0;
  for (int c = 0; c < m1->ncomps; c++) ninstr += m1->comps[c]->ninstrs;
  if (!failures)
    printf("ok: %s: %d computations, %d instructions, %zu bytes printed\n", argv[a], m1->ncomps, ninstr, p1.len);
  ts_buf_free(&p1);
  ts_buf_free(&p2);
  ts_hlo_module_destroy(m1);
  ts_hlo_module_destroy(m2);
  ts_free(text);
  return failures ? 1 : 0;
}
