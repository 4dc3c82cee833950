/* Per-opcode shape rules for the verifier: re-derives an instruction's
 * result shape from its operands and attributes (XLA's operation semantics,
 * shared/seeds/xla_docs_full.txt "Operation semantics") and checks the
 * signatures of the computations it calls. Opcodes without a rule here are
 * accepted with any shape. */
#include "verifier_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------ */

#define NOMEM_IF(cond)             \
  do {                             \
    if (cond) return TS_ERR_NOMEM; \
  } while (0)

static ts_status_t err(ts_vctx_t *v, const ts_hlo_instr_t *i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ts_status_t err(ts_vctx_t *v, const ts_hlo_instr_t *i, const char *fmt, ...) {
  ts_buf_t b = {0};
  va_list ap;
  va_start(ap, fmt);
  ts_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  ts_status_t st = b.oom || !b.data ? TS_ERR_NOMEM : ts_vfy_error(v, i, (ts_loc_t){0, 0}, "%s", b.data);
  ts_buf_free(&b);
  return st;
}

static const char *S(ts_vctx_t *v, const ts_shape_t *s) { return ts_vfy_shape_str(v, s); }
static const char *opname(ts_opcode_t op) { return ts_opcode_name(op); }
static long long ll(int64_t x) { return (long long)x; }

static bool add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static bool mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

static bool is_array(const ts_shape_t *s) { return ts_elem_is_array(s->elem); }
static bool is_scalar(const ts_shape_t *s) { return is_array(s) && s->rank == 0; }
static bool is_dyn(const ts_shape_t *s, int d) { return s->dynamic && s->dynamic[d]; }
static bool is_int(ts_elem_t t) { return ts_elem_is_signed_int(t) || ts_elem_is_unsigned_int(t); }
static bool is_fp(ts_elem_t t) { return ts_elem_is_float(t) || ts_elem_is_complex(t); }

static bool any_unbounded(const ts_shape_t *s) {
  if (s->elem == TS_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      if (any_unbounded(s->tuple[k])) return true;
    return false;
  }
  for (int d = 0; d < s->rank; d++)
    if (s->dims[d] == TS_DIM_UNBOUNDED) return true;
  return false;
}

/* Type and dimensions equal (and dynamic markers when `dyn`); layouts are
 * ignored. `fp` treats every floating type as equal to every other, as XLA's
 * CompatibleIgnoringFpPrecision does for reducer signatures. */
static bool same_shape_x(const ts_shape_t *a, const ts_shape_t *b, bool dyn, bool fp) {
  if (a->elem != b->elem && !(fp && ts_elem_is_float(a->elem) && ts_elem_is_float(b->elem))) return false;
  if (a->elem == TS_TUPLE) {
    if (a->ntuple != b->ntuple) return false;
    for (int k = 0; k < a->ntuple; k++)
      if (!same_shape_x(a->tuple[k], b->tuple[k], dyn, fp)) return false;
    return true;
  }
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++) {
    if (a->dims[d] != b->dims[d]) return false;
    if (dyn && is_dyn(a, d) != is_dyn(b, d)) return false;
  }
  return true;
}
static bool same_dims(const ts_shape_t *a, const ts_shape_t *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

/* ---- shapes in the scratch arena ---------------------------------------- */

static ts_shape_t *new_array(ts_vctx_t *v, ts_elem_t elem, int rank) {
  ts_shape_t *s = ts_arena_alloc(v->scratch, sizeof *s);
  if (!s) return NULL;
  s->elem = elem;
  s->rank = rank;
  if (rank > 0) {
    s->dims = ts_arena_alloc(v->scratch, sizeof(int64_t) * (size_t)rank);
    s->dynamic = ts_arena_alloc(v->scratch, (size_t)rank);
    if (!s->dims || !s->dynamic) return NULL;
  }
  return s;
}

static ts_shape_t *copy_array(ts_vctx_t *v, const ts_shape_t *src, ts_elem_t elem) {
  ts_shape_t *s = new_array(v, elem, src->rank);
  if (!s) return NULL;
  for (int d = 0; d < src->rank; d++) {
    s->dims[d] = src->dims[d];
    s->dynamic[d] = is_dyn(src, d);
  }
  return s;
}

static ts_shape_t *new_tuple(ts_vctx_t *v, int n) {
  ts_shape_t *s = ts_arena_alloc(v->scratch, sizeof *s);
  if (!s) return NULL;
  s->elem = TS_TUPLE;
  s->ntuple = n;
  if (n > 0 && !(s->tuple = ts_arena_alloc(v->scratch, sizeof(ts_shape_t *) * (size_t)n))) return NULL;
  return s;
}

/* The operands' shapes as one shape: the single operand's own, else a tuple. */
static ts_shape_t *operands_shape(ts_vctx_t *v, const ts_hlo_instr_t *i, bool force_tuple) {
  if (i->nops == 1 && !force_tuple) return (ts_shape_t *)i->ops[0]->shape;
  ts_shape_t *t = new_tuple(v, i->nops);
  if (!t) return NULL;
  for (int k = 0; k < i->nops; k++) t->tuple[k] = (ts_shape_t *)i->ops[k]->shape;
  return t;
}

static ts_status_t check_result_note(ts_vctx_t *v, const ts_hlo_instr_t *i, const ts_shape_t *out,
                                     const ts_shape_t *want, bool dyn, const char *note) {
  if (same_shape_x(out, want, dyn, false)) return TS_OK;
  return err(v, i, "result shape %s does not match the inferred shape %s%s", S(v, out), S(v, want),
             note ? note : "");
}
static ts_status_t check_result(ts_vctx_t *v, const ts_hlo_instr_t *i, const ts_shape_t *out,
                                const ts_shape_t *want) {
  return check_result_note(v, i, out, want, true, NULL);
}

/* ---- attributes --------------------------------------------------------- */

static const char *kind_name(ts_attr_kind_t k) {
  switch (k) {
  case TS_ATTR_INT: return "an integer";
  case TS_ATTR_BOOL: return "a bool";
  case TS_ATTR_FLOAT: return "a float";
  case TS_ATTR_STRING: return "a string";
  case TS_ATTR_IDENT: return "a word";
  case TS_ATTR_INT_LIST: return "a list of integers";
  case TS_ATTR_INT_LISTS: return "a list of integer lists";
  case TS_ATTR_BOOL_LIST: return "a list of bools";
  case TS_ATTR_SLICE: return "slice ranges";
  case TS_ATTR_PADDING: return "a padding config";
  case TS_ATTR_WINDOW: return "a window";
  case TS_ATTR_CONV_DNUMS: return "dim labels";
  case TS_ATTR_REPLICA_GROUPS: return "replica groups";
  case TS_ATTR_COMP: return "a computation";
  case TS_ATTR_COMP_LIST: return "a list of computations";
  case TS_ATTR_SHAPE: return "a shape";
  case TS_ATTR_SHAPE_LIST: return "a list of shapes";
  case TS_ATTR_LITERAL: return "a literal";
  case TS_ATTR_LAYOUT_SIG: return "a computation layout";
  case TS_ATTR_ALIASES: return "an alias list";
  case TS_ATTR_DONORS: return "a buffer donor list";
  case TS_ATTR_BLOB: return "a brace blob";
  case TS_ATTR_RAW: return "unparsed text";
  }
  return "an unknown kind";
}

static bool payload_ok(const ts_hlo_attr_t *a) {
  switch (a->kind) {
  case TS_ATTR_INT_LIST:
  case TS_ATTR_BOOL_LIST: return a->v.list.n >= 0 && (a->v.list.n == 0 || a->v.list.v);
  case TS_ATTR_INT_LISTS:
    if (a->v.lists.n < 0 || (a->v.lists.n > 0 && !a->v.lists.lists)) return false;
    for (int k = 0; k < a->v.lists.n; k++)
      if (a->v.lists.lists[k].n < 0 || (a->v.lists.lists[k].n > 0 && !a->v.lists.lists[k].v)) return false;
    return true;
  case TS_ATTR_SLICE:
    return a->v.slice && a->v.slice->n >= 0 &&
           (a->v.slice->n == 0 || (a->v.slice->start && a->v.slice->limit && a->v.slice->stride));
  case TS_ATTR_PADDING:
    return a->v.padding && a->v.padding->n >= 0 &&
           (a->v.padding->n == 0 || (a->v.padding->lo && a->v.padding->hi && a->v.padding->interior));
  case TS_ATTR_WINDOW:
    return a->v.window && a->v.window->n >= 0 && (a->v.window->n == 0 || a->v.window->dims);
  case TS_ATTR_CONV_DNUMS:
    return a->v.conv && a->v.conv->rank >= 0 && a->v.conv->nspatial >= 0 &&
           (a->v.conv->nspatial == 0 ||
            (a->v.conv->in_spatial && a->v.conv->k_spatial && a->v.conv->out_spatial));
  case TS_ATTR_REPLICA_GROUPS:
    return a->v.rg && a->v.rg->ngroups >= 0 && (a->v.rg->ngroups == 0 || a->v.rg->groups);
  case TS_ATTR_COMP:
  case TS_ATTR_COMP_LIST: return a->v.comps.n >= 0 && (a->v.comps.n == 0 || a->v.comps.comps);
  case TS_ATTR_STRING:
  case TS_ATTR_IDENT:
  case TS_ATTR_BLOB:
  case TS_ATTR_RAW: return a->v.s != NULL;
  default: return true;
  }
}

/* Looks up attribute `name`; *out is NULL when it is absent (an error when
 * `required`). A present attribute of another kind is an error naming it. */
static ts_status_t attr(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const char *name,
                        ts_attr_kind_t kind, bool required, const ts_hlo_attr_t **out) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, name);
  *out = NULL;
  if (!a) {
    if (required) return err(v, i, "%s needs attribute %s", opname(op), name);
    return TS_OK;
  }
  if (a->kind != kind)
    return ts_vfy_error(v, i, a->loc, "attribute %s must be %s, got %s", name, kind_name(kind),
                        kind_name(a->kind));
  if (!payload_ok(a)) return ts_vfy_error(v, i, a->loc, "attribute %s has a malformed value", name);
  *out = a;
  return TS_OK;
}

static ts_status_t get_int(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const char *name,
                           bool required, int64_t dflt, int64_t *out) {
  const ts_hlo_attr_t *a;
  TS_CHECK(attr(v, i, op, name, TS_ATTR_INT, required, &a));
  *out = a ? a->v.i : dflt;
  return TS_OK;
}

static ts_status_t get_list(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const char *name,
                            bool required, ts_i64_list_t *out, ts_loc_t *loc) {
  const ts_hlo_attr_t *a;
  TS_CHECK(attr(v, i, op, name, TS_ATTR_INT_LIST, required, &a));
  *out = a ? a->v.list : (ts_i64_list_t){0, NULL};
  if (loc) *loc = a ? a->loc : (ts_loc_t){0, 0};
  return TS_OK;
}

/* `dimensions={d}`: exactly one value. */
static ts_status_t get_one_dim(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const char *name,
                               int64_t *d, ts_loc_t *loc) {
  ts_i64_list_t l;
  TS_CHECK(get_list(v, i, op, name, true, &l, loc));
  if (l.n != 1)
    return ts_vfy_error(v, i, *loc, "%s of %s must have exactly one value, got %d", name, opname(op), l.n);
  *d = l.v[0];
  return TS_OK;
}

static ts_status_t get_comp(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const char *name,
                            bool required, const ts_hlo_comp_t **out) {
  const ts_hlo_attr_t *a;
  TS_CHECK(attr(v, i, op, name, TS_ATTR_COMP, required, &a));
  *out = NULL;
  if (!a) return TS_OK;
  if (a->v.comps.n != 1 || !a->v.comps.comps[0])
    return ts_vfy_error(v, i, a->loc, "attribute %s must name one computation", name);
  *out = a->v.comps.comps[0];
  return TS_OK;
}

/* Every value of `l` in [0, rank) and none twice; `what` names the list. */
static ts_status_t check_dim_list(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_loc_t loc, const char *what,
                                  const ts_i64_list_t *l, const ts_shape_t *of) {
  uint8_t *seen = of->rank ? ts_arena_alloc(v->scratch, (size_t)of->rank) : NULL;
  NOMEM_IF(of->rank && !seen);
  for (int k = 0; k < l->n; k++) {
    int64_t d = l->v[k];
    if (d < 0 || d >= of->rank)
      return ts_vfy_error(v, i, loc, "%s value %lld is out of range for %s (rank %d)", what, ll(d), S(v, of),
                          of->rank);
    if (seen[d]) return ts_vfy_error(v, i, loc, "%s lists dimension %lld twice", what, ll(d));
    seen[d] = 1;
  }
  return TS_OK;
}

static bool list_has(const ts_i64_list_t *l, int64_t x) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == x) return true;
  return false;
}

static ts_status_t check_sorted(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_loc_t loc, const char *what,
                                const ts_i64_list_t *l) {
  for (int k = 1; k < l->n; k++)
    if (l->v[k] <= l->v[k - 1])
      return ts_vfy_error(v, i, loc, "%s must be sorted ascending without repeats", what);
  return TS_OK;
}

/* ---- operands ----------------------------------------------------------- */

static ts_status_t want_nops(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, int n) {
  if (i->nops == n) return TS_OK;
  return err(v, i, "%s takes %d operand%s, got %d", opname(op), n, n == 1 ? "" : "s", i->nops);
}

static ts_status_t want_min_nops(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, int n) {
  if (i->nops >= n) return TS_OK;
  return err(v, i, "%s takes at least %d operand%s, got %d", opname(op), n, n == 1 ? "" : "s", i->nops);
}

static ts_status_t want_array(ts_vctx_t *v, const ts_hlo_instr_t *i, int k) {
  const ts_shape_t *s = i->ops[k]->shape;
  if (is_array(s)) return TS_OK;
  return err(v, i, "operand %d must be an array, got %s", k, S(v, s));
}

static ts_status_t want_scalar(ts_vctx_t *v, const ts_hlo_instr_t *i, int k, const char *what) {
  const ts_shape_t *s = i->ops[k]->shape;
  if (is_scalar(s)) return TS_OK;
  return err(v, i, "%s (operand %d) must be a scalar, got %s", what, k, S(v, s));
}

static ts_status_t want_token(ts_vctx_t *v, const ts_hlo_instr_t *i, int k) {
  const ts_shape_t *s = i->ops[k]->shape;
  if (s->elem == TS_TOKEN) return TS_OK;
  return err(v, i, "operand %d must be a token, got %s", k, S(v, s));
}

static ts_status_t want_out_array(ts_vctx_t *v, const ts_hlo_instr_t *i, const ts_shape_t *out) {
  if (is_array(out)) return TS_OK;
  return err(v, i, "result shape %s must be an array", S(v, out));
}

/* All operands in [from, to) arrays with the type and dimensions of `from`. */
static ts_status_t same_operands(ts_vctx_t *v, const ts_hlo_instr_t *i, int from, int to, bool types) {
  for (int k = from; k < to; k++) TS_CHECK(want_array(v, i, k));
  const ts_shape_t *a = i->ops[from]->shape;
  for (int k = from + 1; k < to; k++) {
    const ts_shape_t *b = i->ops[k]->shape;
    if (!same_dims(a, b) || (types && a->elem != b->elem))
      return err(v, i, "operand shapes differ: %s and %s", S(v, a), S(v, b));
  }
  return TS_OK;
}

/* The operands' common dims with the union of their dynamic markers. */
static ts_shape_t *elementwise_shape(ts_vctx_t *v, const ts_hlo_instr_t *i, int from, int to,
                                     ts_elem_t elem) {
  ts_shape_t *s = copy_array(v, i->ops[from]->shape, elem);
  if (!s) return NULL;
  for (int k = from + 1; k < to; k++) {
    const ts_shape_t *b = i->ops[k]->shape;
    if (b->rank != s->rank) continue; /* a scalar clamp bound */
    for (int d = 0; d < s->rank; d++) s->dynamic[d] |= is_dyn(b, d);
  }
  return s;
}

/* ---- called computations ------------------------------------------------ */

static const ts_shape_t *comp_result(const ts_hlo_comp_t *c) { return c->root ? c->root->shape : NULL; }

static void put_sig(ts_vctx_t *v, ts_buf_t *b, int np, const ts_shape_t *const *params,
                    const ts_shape_t *result) {
  ts_buf_putc(b, '(');
  for (int k = 0; k < np; k++) {
    if (k) ts_buf_puts(b, ", ");
    ts_buf_puts(b, S(v, params[k]));
  }
  ts_buf_puts(b, ") -> ");
  ts_buf_puts(b, result ? S(v, result) : "?");
}

/* `c` (attribute `attr_name`) must take `params` and return `result`
 * (NULL: anything). `what` says what it is called for. */
static ts_status_t check_sig(ts_vctx_t *v, const ts_hlo_instr_t *i, const char *attr_name,
                             const ts_hlo_comp_t *c, int np, const ts_shape_t *const *params,
                             const ts_shape_t *result, bool fp, const char *what) {
  bool ok = c->nparams == np && c->root;
  for (int k = 0; ok && k < np; k++)
    ok = c->params[k] && same_shape_x(c->params[k]->shape, params[k], false, fp);
  if (ok && result) ok = same_shape_x(comp_result(c), result, false, fp);
  if (ok) return TS_OK;
  const ts_shape_t **got = ts_arena_alloc(v->scratch, sizeof *got * (size_t)(c->nparams + 1));
  NOMEM_IF(!got);
  for (int k = 0; k < c->nparams; k++) got[k] = c->params[k] ? c->params[k]->shape : NULL;
  ts_buf_t b = {0};
  ts_buf_printf(&b, "%s '%s' has the wrong signature for %s: expected ", attr_name, c->name, what);
  put_sig(v, &b, np, params, result ? result : comp_result(c));
  ts_buf_puts(&b, ", got ");
  bool nullp = false;
  for (int k = 0; k < c->nparams; k++) nullp |= !got[k];
  if (nullp)
    ts_buf_printf(&b, "%d parameters", c->nparams);
  else
    put_sig(v, &b, c->nparams, got, comp_result(c));
  ts_status_t st = b.oom ? TS_ERR_NOMEM : err(v, i, "%s", b.data);
  ts_buf_free(&b);
  return st;
}

/* A reducer over n values: (acc_0..acc_n-1, in_0..in_n-1) -> acc (a tuple
 * when n > 1), all scalars; floating types compare loosely, as in XLA. */
static ts_status_t check_reducer(ts_vctx_t *v, const ts_hlo_instr_t *i, const char *attr_name,
                                 const ts_hlo_comp_t *c, int n, const ts_elem_t *acc, const ts_elem_t *in,
                                 const char *what) {
  const ts_shape_t **params = ts_arena_alloc(v->scratch, sizeof *params * (size_t)(2 * n));
  ts_shape_t *res = n == 1 ? NULL : new_tuple(v, n);
  NOMEM_IF(!params || (n > 1 && !res));
  for (int k = 0; k < n; k++) {
    ts_shape_t *a = new_array(v, acc[k], 0), *b = new_array(v, in[k], 0);
    NOMEM_IF(!a || !b);
    params[k] = a;
    params[n + k] = b;
    if (n == 1)
      res = a;
    else
      res->tuple[k] = a;
  }
  return check_sig(v, i, attr_name, c, 2 * n, params, res, true, what);
}

/* The reducer's k-th result type (the accumulator XLA gives the result). */
static ts_elem_t reducer_elem(const ts_hlo_comp_t *c, int n, int k, ts_elem_t dflt) {
  const ts_shape_t *r = comp_result(c);
  if (!r) return dflt;
  if (n == 1 && is_scalar(r)) return r->elem;
  if (n > 1 && r->elem == TS_TUPLE && k < r->ntuple && is_scalar(r->tuple[k])) return r->tuple[k]->elem;
  return dflt;
}

/* ---- windows ------------------------------------------------------------ */

static bool dilated_bound(int64_t bound, int64_t dilation, int64_t *out) {
  if (bound == 0) return (*out = 0), true;
  int64_t t;
  return mul_ok(bound - 1, dilation, &t) && add_ok(t, 1, out);
}

/* Output size of one window dimension over an input of size `in`
 * (XLA's InferWindowOutputShape); false on overflow. */
static bool window_out(int64_t in, const ts_window_dim_t *w, int64_t *out) {
  int64_t base, padded, win;
  if (!dilated_bound(in, w->lhs_dilate, &base) || !add_ok(base, w->pad_lo, &padded) ||
      !add_ok(padded, w->pad_hi, &padded) || !dilated_bound(w->size, w->rhs_dilate, &win))
    return false;
  *out = win > padded ? 0 : (padded - win) / w->stride + 1;
  return true;
}

static ts_status_t check_window(ts_vctx_t *v, const ts_hlo_instr_t *i, const ts_hlo_attr_t *a) {
  for (int d = 0; d < a->v.window->n; d++) {
    const ts_window_dim_t *w = &a->v.window->dims[d];
    if (w->size <= 0 || w->stride <= 0 || w->lhs_dilate <= 0 || w->rhs_dilate <= 0)
      return ts_vfy_error(v, i, a->loc,
                          "window dimension %d needs positive size, stride and dilations (size=%lld "
                          "stride=%lld lhs_dilate=%lld rhs_dilate=%lld)",
                          d, ll(w->size), ll(w->stride), ll(w->lhs_dilate), ll(w->rhs_dilate));
  }
  return TS_OK;
}

/* Applies `window` to the dims of `in`: the result dims, as an array of `elem`. */
static ts_status_t windowed(ts_vctx_t *v, const ts_hlo_instr_t *i, const ts_hlo_attr_t *a,
                            const ts_shape_t *in, ts_elem_t elem, ts_shape_t **out) {
  const ts_window_t *w = a->v.window;
  if (w->n != in->rank)
    return ts_vfy_error(v, i, a->loc, "window has %d dimensions but the operand %s has rank %d", w->n,
                        S(v, in), in->rank);
  TS_CHECK(check_window(v, i, a));
  ts_shape_t *s = new_array(v, elem, in->rank);
  NOMEM_IF(!s);
  for (int d = 0; d < in->rank; d++)
    if (!window_out(in->dims[d], &w->dims[d], &s->dims[d]))
      return ts_vfy_error(v, i, a->loc, "window dimension %d overflows", d);
  *out = s;
  return TS_OK;
}

/* ---- elementwise -------------------------------------------------------- */

static ts_status_t unary(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  const ts_shape_t *x = i->ops[0]->shape;
  ts_elem_t t = x->elem, rt = t;
  const char *need = NULL;
  switch (op) {
  case TS_OP_FLOOR:
  case TS_OP_CEIL:
  case TS_OP_ROUND_NEAREST_AFZ:
  case TS_OP_ROUND_NEAREST_EVEN:
  case TS_OP_REDUCE_PRECISION:
    if (!ts_elem_is_float(t)) need = "a floating-point";
    break;
  case TS_OP_IS_FINITE:
    if (!ts_elem_is_float(t)) need = "a floating-point";
    rt = TS_PRED;
    break;
  case TS_OP_NOT:
    if (t != TS_PRED && !is_int(t)) need = "a pred or integer";
    break;
  case TS_OP_POPCNT:
  case TS_OP_COUNT_LEADING_ZEROS:
    if (!is_int(t)) need = "an integer";
    break;
  case TS_OP_ABS:
  case TS_OP_NEGATE:
  case TS_OP_SIGN:
    if (t == TS_PRED) need = "a numeric";
    if (op == TS_OP_ABS && ts_elem_is_complex(t)) rt = t == TS_C64 ? TS_F32 : TS_F64;
    break;
  case TS_OP_REAL:
  case TS_OP_IMAG:
    if (!is_fp(t)) need = "a complex or floating-point";
    if (ts_elem_is_complex(t)) rt = t == TS_C64 ? TS_F32 : TS_F64;
    break;
  default: /* exponential, log, sine, tanh, ...: transcendental */
    if (!is_fp(t)) need = "a floating-point or complex";
    break;
  }
  if (need) return err(v, i, "%s needs %s operand, got %s", opname(op), need, S(v, x));
  if (op == TS_OP_REDUCE_PRECISION) {
    int64_t e, mnt;
    TS_CHECK(get_int(v, i, op, "exponent_bits", true, 0, &e));
    TS_CHECK(get_int(v, i, op, "mantissa_bits", true, 0, &mnt));
    if (e < 1 || mnt < 0)
      return err(v, i, "reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0, got %lld and %lld",
                 ll(e), ll(mnt));
  }
  ts_shape_t *want = copy_array(v, x, rt);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

/* copy, opt-barrier, domain, add-dependency: the result is operand 0. */
static ts_status_t passthrough(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  int n = op == TS_OP_ADD_DEPENDENCY ? 2 : 1;
  TS_CHECK(want_nops(v, i, op, n));
  if (op == TS_OP_ADD_DEPENDENCY) TS_CHECK(want_token(v, i, 1));
  return check_result(v, i, out, i->ops[0]->shape);
}

static ts_status_t binary(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 2));
  TS_CHECK(same_operands(v, i, 0, 2, true));
  ts_elem_t t = i->ops[0]->shape->elem, rt = t;
  const char *need = NULL;
  switch (op) {
  case TS_OP_AND:
  case TS_OP_OR:
  case TS_OP_XOR:
    if (t != TS_PRED && !is_int(t)) need = "pred or integer";
    break;
  case TS_OP_SHIFT_LEFT:
  case TS_OP_SHIFT_RIGHT_ARITHMETIC:
  case TS_OP_SHIFT_RIGHT_LOGICAL:
  case TS_OP_MULHI:
    if (!is_int(t)) need = "integer";
    break;
  case TS_OP_ATAN2:
    if (!is_fp(t)) need = "floating-point or complex";
    break;
  case TS_OP_COMPLEX:
    if (t != TS_F32 && t != TS_F64) need = "f32 or f64";
    rt = t == TS_F64 ? TS_C128 : TS_C64;
    break;
  case TS_OP_COMPARE: {
    const ts_hlo_attr_t *a;
    TS_CHECK(attr(v, i, op, "direction", TS_ATTR_IDENT, true, &a));
    static const char *dirs[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
    bool ok = false;
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) ok |= strcmp(a->v.s, dirs[k]) == 0;
    if (!ok) return ts_vfy_error(v, i, a->loc, "direction must be one of EQ NE GE GT LE LT, got %s", a->v.s);
    rt = TS_PRED;
    /* type= fits the operands (XLA's CheckElementwiseInstruction): FLOAT or
     * TOTALORDER for floats, else the default: FLOAT for complex, SIGNED for
     * signed integers, UNSIGNED for unsigned integers and pred */
    const ts_hlo_attr_t *ty;
    TS_CHECK(attr(v, i, op, "type", TS_ATTR_IDENT, false, &ty));
    if (ty) {
      const char *want = ts_elem_is_complex(t)         ? "FLOAT"
                         : ts_elem_is_signed_int(t)    ? "SIGNED"
                         : ts_elem_is_unsigned_int(t) || t == TS_PRED ? "UNSIGNED"
                                                       : NULL;
      if (ts_elem_is_float(t)) {
        if (strcmp(ty->v.s, "FLOAT") && strcmp(ty->v.s, "TOTALORDER"))
          return ts_vfy_error(v, i, ty->loc, "compare of %s needs type=FLOAT or type=TOTALORDER, got type=%s",
                              S(v, i->ops[0]->shape), ty->v.s);
      } else if (want && strcmp(ty->v.s, want)) {
        return ts_vfy_error(v, i, ty->loc, "compare of %s needs type=%s, got type=%s", S(v, i->ops[0]->shape),
                            want, ty->v.s);
      }
    }
    break;
  }
  default: break;
  }
  if (need) return err(v, i, "%s needs %s operands, got %s", opname(op), need, S(v, i->ops[0]->shape));
  ts_shape_t *want = elementwise_shape(v, i, 0, 2, rt);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

static ts_status_t select_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 3));
  TS_CHECK(same_operands(v, i, 1, 3, true));
  TS_CHECK(want_array(v, i, 0));
  const ts_shape_t *p = i->ops[0]->shape, *x = i->ops[1]->shape;
  if (p->elem != TS_PRED) return err(v, i, "select predicate must be pred, got %s", S(v, p));
  if (p->rank != 0 && !same_dims(p, x))
    return err(v, i, "select predicate %s does not match the operands %s", S(v, p), S(v, x));
  ts_shape_t *want = elementwise_shape(v, i, 1, 3, x->elem);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

static ts_status_t clamp_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 3));
  for (int k = 0; k < 3; k++) TS_CHECK(want_array(v, i, k));
  const ts_shape_t *x = i->ops[1]->shape;
  for (int k = 0; k < 3; k += 2) {
    const ts_shape_t *b = i->ops[k]->shape;
    if (b->elem != x->elem || (b->rank != 0 && !same_dims(b, x)))
      return err(v, i, "clamp bound %s must be a scalar or match the operand %s", S(v, b), S(v, x));
  }
  ts_shape_t *want = elementwise_shape(v, i, 1, 2, x->elem);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

static ts_status_t convert_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  int n = op == TS_OP_STOCHASTIC_CONVERT ? 2 : 1;
  TS_CHECK(want_nops(v, i, op, n));
  for (int k = 0; k < n; k++) TS_CHECK(want_array(v, i, k));
  TS_CHECK(want_out_array(v, i, out));
  const ts_shape_t *x = i->ops[0]->shape;
  if (op == TS_OP_STOCHASTIC_CONVERT) {
    const ts_shape_t *r = i->ops[1]->shape;
    if (!same_dims(x, r) || !ts_elem_is_unsigned_int(r->elem) ||
        ts_elem_bits(r->elem) != ts_elem_bits(x->elem))
      return err(v, i,
                 "stochastic-convert random bits %s must be unsigned, as wide as %s, with its dimensions",
                 S(v, r), S(v, x));
  }
  ts_shape_t *want = copy_array(v, x, out->elem);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

static ts_status_t bitcast_convert(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                   const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  TS_CHECK(want_out_array(v, i, out));
  const ts_shape_t *x = i->ops[0]->shape;
  int in = ts_elem_bits(x->elem), to = ts_elem_bits(out->elem);
  ts_shape_t *want;
  if (in == to) {
    want = copy_array(v, x, out->elem);
  } else if (in > to) {
    if (to == 0 || in % to)
      return err(v, i, "bitcast-convert from %d-bit to %d-bit elements: the widths do not divide", in, to);
    want = new_array(v, out->elem, x->rank + 1);
    NOMEM_IF(!want);
    for (int d = 0; d < x->rank; d++) want->dims[d] = x->dims[d], want->dynamic[d] = is_dyn(x, d);
    want->dims[x->rank] = in / to;
  } else {
    if (in == 0 || to % in)
      return err(v, i, "bitcast-convert from %d-bit to %d-bit elements: the widths do not divide", in, to);
    if (x->rank == 0 || x->dims[x->rank - 1] != to / in)
      return err(v, i, "bitcast-convert from %s to %d-bit elements needs a last dimension of %d", S(v, x), to,
                 to / in);
    want = new_array(v, out->elem, x->rank - 1);
    NOMEM_IF(!want);
    for (int d = 0; d < x->rank - 1; d++) want->dims[d] = x->dims[d], want->dynamic[d] = is_dyn(x, d);
  }
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

/* ---- shape manipulation ------------------------------------------------- */

static ts_status_t broadcast_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  TS_CHECK(want_out_array(v, i, out));
  const ts_shape_t *x = i->ops[0]->shape;
  ts_i64_list_t dims;
  ts_loc_t loc;
  TS_CHECK(get_list(v, i, op, "dimensions", x->rank > 0, &dims, &loc));
  if (x->elem != out->elem)
    return err(v, i, "broadcast changes the element type: %s to %s", S(v, x), S(v, out));
  if (dims.n != x->rank)
    return ts_vfy_error(v, i, loc, "broadcast dimensions has %d values but the operand %s has rank %d",
                        dims.n, S(v, x), x->rank);
  TS_CHECK(check_dim_list(v, i, loc, "broadcast dimensions", &dims, out));
  for (int k = 0; k < dims.n; k++) {
    int64_t d = dims.v[k];
    if (out->dims[d] != x->dims[k])
      return err(v, i,
                 "broadcast maps operand dimension %d (size %lld) to result dimension %lld (size %lld): "
                 "%s to %s",
                 k, ll(x->dims[k]), ll(d), ll(out->dims[d]), S(v, x), S(v, out));
  }
  return TS_OK;
}

static bool elements(const ts_shape_t *s, int64_t *n) {
  *n = 1;
  for (int d = 0; d < s->rank; d++)
    if (!mul_ok(*n, s->dims[d], n)) return false;
  return true;
}

static ts_status_t reshape_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  TS_CHECK(want_out_array(v, i, out));
  const ts_shape_t *x = i->ops[0]->shape;
  if (x->elem != out->elem)
    return err(v, i, "reshape changes the element type: %s to %s", S(v, x), S(v, out));
  if (any_unbounded(x) || any_unbounded(out)) return TS_OK;
  int64_t a, b;
  bool oa = elements(x, &a), ob = elements(out, &b);
  if (!oa || !ob) return err(v, i, "reshape element count overflows: %s to %s", S(v, x), S(v, out));
  if (a != b)
    return err(v, i, "reshape changes the element count: %s has %lld elements, %s has %lld", S(v, x), ll(a),
               S(v, out), ll(b));
  return TS_OK;
}

static ts_status_t transpose_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  const ts_shape_t *x = i->ops[0]->shape;
  ts_i64_list_t p;
  ts_loc_t loc;
  TS_CHECK(get_list(v, i, op, "dimensions", true, &p, &loc));
  bool perm = p.n == x->rank;
  uint8_t *seen = x->rank ? ts_arena_alloc(v->scratch, (size_t)x->rank) : NULL;
  NOMEM_IF(x->rank && !seen);
  for (int k = 0; perm && k < p.n; k++) {
    perm = p.v[k] >= 0 && p.v[k] < x->rank && !seen[p.v[k]];
    if (perm) seen[p.v[k]] = 1;
  }
  if (!perm) {
    ts_buf_t b = {0};
    for (int k = 0; k < p.n; k++) ts_buf_printf(&b, "%s%lld", k ? "," : "", ll(p.v[k]));
    ts_status_t st = ts_vfy_error(v, i, loc, "transpose dimensions {%s} is not a permutation of 0..%d for %s",
                                  b.data ? b.data : "", x->rank - 1, S(v, x));
    ts_buf_free(&b);
    return st;
  }
  ts_shape_t *want = new_array(v, x->elem, x->rank);
  NOMEM_IF(!want);
  for (int d = 0; d < x->rank; d++)
    want->dims[d] = x->dims[p.v[d]], want->dynamic[d] = is_dyn(x, (int)p.v[d]);
  return check_result(v, i, out, want);
}

static ts_status_t reverse_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  ts_i64_list_t dims;
  ts_loc_t loc;
  TS_CHECK(get_list(v, i, op, "dimensions", true, &dims, &loc));
  TS_CHECK(check_dim_list(v, i, loc, "reverse dimensions", &dims, i->ops[0]->shape));
  return check_result(v, i, out, i->ops[0]->shape);
}

static ts_status_t slice_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  const ts_shape_t *x = i->ops[0]->shape;
  const ts_hlo_attr_t *a;
  TS_CHECK(attr(v, i, op, "slice", TS_ATTR_SLICE, true, &a));
  const ts_slice_t *sl = a->v.slice;
  if (sl->n != x->rank)
    return ts_vfy_error(v, i, a->loc, "slice has %d ranges but the operand %s has rank %d", sl->n, S(v, x),
                        x->rank);
  ts_shape_t *want = new_array(v, x->elem, x->rank);
  NOMEM_IF(!want);
  for (int d = 0; d < x->rank; d++) {
    int64_t s = sl->start[d], l = sl->limit[d], st = sl->stride[d];
    if (st <= 0)
      return ts_vfy_error(v, i, a->loc, "slice stride %lld of dimension %d must be positive", ll(st), d);
    if (s < 0 || s > l || l > x->dims[d])
      return ts_vfy_error(v, i, a->loc, "slice [%lld:%lld] of dimension %d is out of bounds for %s", ll(s),
                          ll(l), d, S(v, x));
    want->dims[d] = (l - s) / st + ((l - s) % st != 0);
  }
  return check_result_note(v, i, out, want, false, NULL);
}

/* Start indices from operand `first` on: `rank` integer scalars of one type. */
static ts_status_t start_indices(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, int first, int rank) {
  int n = i->nops - first;
  if (n == 1 && rank != 1 && i->ops[first]->shape->rank == 1) { /* the old index-vector form */
    const ts_shape_t *s = i->ops[first]->shape;
    if (!is_int(s->elem) || s->dims[0] != rank)
      return err(v, i, "%s start index vector %s must be an integer vector of %d", opname(op), S(v, s), rank);
    return TS_OK;
  }
  if (n != rank) return err(v, i, "%s needs %d start indices for rank %d, got %d", opname(op), rank, rank, n);
  for (int k = first; k < i->nops; k++) {
    const ts_shape_t *s = i->ops[k]->shape;
    if (!is_scalar(s) || !is_int(s->elem))
      return err(v, i, "%s start index (operand %d) must be an integer scalar, got %s", opname(op), k,
                 S(v, s));
    if (s->elem != i->ops[first]->shape->elem)
      return err(v, i, "%s start indices have different types: %s and %s", opname(op),
                 S(v, i->ops[first]->shape), S(v, s));
  }
  return TS_OK;
}

static ts_status_t dynamic_slice(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                 const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  const ts_shape_t *x = i->ops[0]->shape;
  TS_CHECK(start_indices(v, i, op, 1, x->rank));
  ts_i64_list_t sizes;
  ts_loc_t loc;
  TS_CHECK(get_list(v, i, op, "dynamic_slice_sizes", true, &sizes, &loc));
  if (sizes.n != x->rank)
    return ts_vfy_error(v, i, loc, "dynamic_slice_sizes has %d values but the operand %s has rank %d",
                        sizes.n, S(v, x), x->rank);
  ts_shape_t *want = new_array(v, x->elem, x->rank);
  NOMEM_IF(!want);
  for (int d = 0; d < x->rank; d++) {
    if (sizes.v[d] < 0 || sizes.v[d] > x->dims[d])
      return ts_vfy_error(v, i, loc, "dynamic slice size %lld of dimension %d is out of bounds for %s",
                          ll(sizes.v[d]), d, S(v, x));
    want->dims[d] = sizes.v[d];
  }
  return check_result_note(v, i, out, want, false, NULL);
}

static ts_status_t dynamic_update_slice(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                        const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 2));
  TS_CHECK(want_array(v, i, 0));
  TS_CHECK(want_array(v, i, 1));
  const ts_shape_t *x = i->ops[0]->shape, *u = i->ops[1]->shape;
  TS_CHECK(start_indices(v, i, op, 2, x->rank));
  if (u->elem != x->elem || u->rank != x->rank)
    return err(v, i, "update %s does not fit the operand %s", S(v, u), S(v, x));
  for (int d = 0; d < x->rank; d++)
    if (u->dims[d] > x->dims[d]) return err(v, i, "update %s does not fit the operand %s", S(v, u), S(v, x));
  return check_result(v, i, out, x);
}

static ts_status_t concatenate(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 1));
  int64_t cd;
  ts_loc_t loc;
  TS_CHECK(get_one_dim(v, i, op, "dimensions", &cd, &loc));
  for (int k = 0; k < i->nops; k++) TS_CHECK(want_array(v, i, k));
  const ts_shape_t *a = i->ops[0]->shape;
  if (cd < 0 || cd >= a->rank)
    return ts_vfy_error(v, i, loc, "concatenate dimension %lld is out of range for %s", ll(cd), S(v, a));
  ts_shape_t *want = copy_array(v, a, a->elem);
  NOMEM_IF(!want);
  for (int k = 1; k < i->nops; k++) {
    const ts_shape_t *b = i->ops[k]->shape;
    bool ok = b->elem == a->elem && b->rank == a->rank;
    for (int d = 0; ok && d < a->rank; d++) ok = d == cd || b->dims[d] == a->dims[d];
    if (!ok)
      return err(v, i, "operands differ outside the concatenated dimension %lld: %s and %s", ll(cd), S(v, a),
                 S(v, b));
    if (!add_ok(want->dims[cd], b->dims[cd], &want->dims[cd]))
      return err(v, i, "concatenated dimension %lld overflows", ll(cd));
    for (int d = 0; d < a->rank; d++) want->dynamic[d] |= is_dyn(b, d);
  }
  return check_result_note(v, i, out, want, false, NULL);
}

static ts_status_t pad_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 2));
  TS_CHECK(want_array(v, i, 0));
  TS_CHECK(want_scalar(v, i, 1, "padding value"));
  const ts_shape_t *x = i->ops[0]->shape;
  if (i->ops[1]->shape->elem != x->elem)
    return err(v, i, "padding value %s does not match the operand type %s", S(v, i->ops[1]->shape), S(v, x));
  const ts_hlo_attr_t *a;
  TS_CHECK(attr(v, i, op, "padding", TS_ATTR_PADDING, true, &a));
  const ts_padding_t *p = a->v.padding;
  if (p->n != x->rank)
    return ts_vfy_error(v, i, a->loc, "padding has %d dimensions but the operand %s has rank %d", p->n,
                        S(v, x), x->rank);
  ts_shape_t *want = new_array(v, x->elem, x->rank);
  NOMEM_IF(!want);
  for (int d = 0; d < x->rank; d++) {
    if (p->interior[d] < 0)
      return ts_vfy_error(v, i, a->loc, "interior padding %lld of dimension %d is negative",
                          ll(p->interior[d]), d);
    int64_t n = x->dims[d], in = 0, r;
    if (n > 0 && !mul_ok(n - 1, p->interior[d], &in)) in = INT64_MAX;
    if (!add_ok(n, in, &r) || !add_ok(r, p->lo[d], &r) || !add_ok(r, p->hi[d], &r))
      return ts_vfy_error(v, i, a->loc, "padded dimension %d overflows", d);
    if (r < 0)
      return ts_vfy_error(v, i, a->loc, "padding leaves dimension %d of %s with negative size %lld", d,
                          S(v, x), ll(r));
    want->dims[d] = r;
  }
  return check_result_note(v, i, out, want, false, NULL);
}

static ts_status_t iota_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 0));
  TS_CHECK(want_out_array(v, i, out));
  int64_t d = 0; /* set by get_one_dim; initialised for gcc -O3 */
  TS_CHECK(get_int(v, i, op, "iota_dimension", true, 0, &d));
  if (d < 0 || d >= out->rank)
    return err(v, i, "iota_dimension %lld is out of range for %s", ll(d), S(v, out));
  if (!is_int(out->elem) && !is_fp(out->elem))
    return err(v, i, "iota needs an integer, floating-point or complex result, got %s", S(v, out));
  return TS_OK;
}

static ts_status_t get_dimension_size(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                      const ts_shape_t *out) {
  int n = op == TS_OP_SET_DIMENSION_SIZE ? 2 : 1;
  TS_CHECK(want_nops(v, i, op, n));
  TS_CHECK(want_array(v, i, 0));
  const ts_shape_t *x = i->ops[0]->shape;
  int64_t d = 0; /* set by get_one_dim; initialised for gcc -O3 */
  ts_loc_t loc;
  TS_CHECK(get_one_dim(v, i, op, "dimensions", &d, &loc));
  if (d < 0 || d >= x->rank)
    return ts_vfy_error(v, i, loc, "dimension %lld is out of range for %s", ll(d), S(v, x));
  if (op == TS_OP_GET_DIMENSION_SIZE) {
    ts_shape_t *want = new_array(v, TS_S32, 0);
    NOMEM_IF(!want);
    return check_result(v, i, out, want);
  }
  const ts_shape_t *sz = i->ops[1]->shape;
  if (!is_scalar(sz) || sz->elem != TS_S32)
    return err(v, i, "set-dimension-size size must be s32[], got %s", S(v, sz));
  ts_shape_t *want = copy_array(v, x, x->elem);
  NOMEM_IF(!want);
  return check_result_note(v, i, out, want, false, NULL);
}

static ts_status_t tuple_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  ts_shape_t *want = operands_shape(v, i, true);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

static ts_status_t gte_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  const ts_shape_t *t = i->ops[0]->shape;
  if (t->elem != TS_TUPLE) return err(v, i, "get-tuple-element operand must be a tuple, got %s", S(v, t));
  int64_t k;
  TS_CHECK(get_int(v, i, op, "index", true, 0, &k));
  if (k < 0 || k >= t->ntuple)
    return err(v, i, "index %lld is out of range for a tuple of %d element%s: %s", ll(k), t->ntuple,
               t->ntuple == 1 ? "" : "s", S(v, t));
  return check_result(v, i, out, t->tuple[k]);
}

/* ---- reductions and data movement --------------------------------------- */

static ts_status_t reduce_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  if (i->nops < 2 || i->nops % 2)
    return err(v, i,
               "%s takes inputs then as many init values (an even count of at least 2), got %d operands",
               opname(op), i->nops);
  int n = i->nops / 2;
  TS_CHECK(same_operands(v, i, 0, n, false));
  ts_elem_t *acc = ts_arena_alloc(v->scratch, sizeof *acc * (size_t)n);
  ts_elem_t *in = ts_arena_alloc(v->scratch, sizeof *in * (size_t)n);
  NOMEM_IF(!acc || !in);
  for (int k = 0; k < n; k++) {
    char what[32];
    snprintf(what, sizeof what, "init value %d", k);
    TS_CHECK(want_scalar(v, i, n + k, what));
    acc[k] = i->ops[n + k]->shape->elem;
    in[k] = i->ops[k]->shape->elem;
    if (acc[k] != in[k] && !(ts_elem_is_float(acc[k]) && ts_elem_is_float(in[k])))
      return err(v, i, "init value %d %s does not match the input type %s", k, S(v, i->ops[n + k]->shape),
                 S(v, i->ops[k]->shape));
  }
  const ts_hlo_comp_t *c;
  TS_CHECK(get_comp(v, i, op, "to_apply", true, &c));
  char what[64];
  snprintf(what, sizeof what, "a %s of %d input%s", opname(op), n, n == 1 ? "" : "s");
  TS_CHECK(check_reducer(v, i, "to_apply", c, n, acc, in, what));

  const ts_shape_t *x = i->ops[0]->shape;
  ts_shape_t *one = NULL;
  const ts_hlo_attr_t *w = NULL;
  if (op == TS_OP_REDUCE) {
    ts_i64_list_t dims;
    ts_loc_t loc;
    TS_CHECK(get_list(v, i, op, "dimensions", true, &dims, &loc));
    TS_CHECK(check_dim_list(v, i, loc, "reduce dimensions", &dims, x));
    one = new_array(v, TS_PRED, x->rank - dims.n);
    NOMEM_IF(!one);
    for (int d = 0, r = 0; d < x->rank; d++)
      if (!list_has(&dims, d)) one->dims[r] = x->dims[d], one->dynamic[r++] = is_dyn(x, d);
  } else {
    TS_CHECK(attr(v, i, op, "window", TS_ATTR_WINDOW, true, &w));
    TS_CHECK(windowed(v, i, w, x, TS_PRED, &one));
  }
  ts_shape_t *want = n == 1 ? NULL : new_tuple(v, n);
  NOMEM_IF(n > 1 && !want);
  for (int k = 0; k < n; k++) {
    ts_shape_t *s = copy_array(v, one, reducer_elem(c, n, k, acc[k]));
    NOMEM_IF(!s);
    if (n == 1)
      want = s;
    else
      want->tuple[k] = s;
  }
  return check_result_note(v, i, out, want, op == TS_OP_REDUCE, NULL);
}

static ts_status_t select_and_scatter(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                      const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 3));
  TS_CHECK(want_array(v, i, 0));
  TS_CHECK(want_array(v, i, 1));
  TS_CHECK(want_scalar(v, i, 2, "init value"));
  const ts_shape_t *x = i->ops[0]->shape, *src = i->ops[1]->shape, *init = i->ops[2]->shape;
  const ts_hlo_comp_t *sel, *sc;
  TS_CHECK(get_comp(v, i, op, "select", true, &sel));
  TS_CHECK(get_comp(v, i, op, "scatter", true, &sc));
  ts_shape_t *px = new_array(v, x->elem, 0), *pred = new_array(v, TS_PRED, 0);
  NOMEM_IF(!px || !pred);
  const ts_shape_t *sp[2] = {px, px};
  TS_CHECK(check_sig(v, i, "select", sel, 2, sp, pred, true, "select-and-scatter selection"));
  TS_CHECK(check_reducer(v, i, "scatter", sc, 1, &init->elem, &src->elem, "select-and-scatter scatter"));
  const ts_hlo_attr_t *w;
  TS_CHECK(attr(v, i, op, "window", TS_ATTR_WINDOW, true, &w));
  ts_shape_t *win;
  TS_CHECK(windowed(v, i, w, x, src->elem, &win));
  if (!same_shape_x(src, win, false, false))
    return err(v, i, "source %s does not match the windowed operand shape %s", S(v, src), S(v, win));
  return check_result(v, i, out, x);
}

/* Checks that `l` (dims of `s`) are in range and disjoint from `used`. */
static ts_status_t dot_dims(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_loc_t loc, const char *what,
                            const ts_i64_list_t *l, const ts_shape_t *s, uint8_t *used) {
  for (int k = 0; k < l->n; k++) {
    int64_t d = l->v[k];
    if (d < 0 || d >= s->rank)
      return ts_vfy_error(v, i, loc, "%s value %lld is out of range for %s", what, ll(d), S(v, s));
    if (used[d]) return ts_vfy_error(v, i, loc, "%s uses dimension %lld of %s twice", what, ll(d), S(v, s));
    used[d] = 1;
  }
  return TS_OK;
}

static ts_status_t dot_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  if (i->nops < 2) return want_nops(v, i, op, 2);
  TS_CHECK(want_array(v, i, 0));
  TS_CHECK(want_array(v, i, 1));
  const ts_shape_t *l = i->ops[0]->shape, *r = i->ops[1]->shape;
  ts_i64_list_t lb, rb, lc, rc;
  ts_loc_t llb, lrb, llc, lrc;
  TS_CHECK(get_list(v, i, op, "lhs_batch_dims", false, &lb, &llb));
  TS_CHECK(get_list(v, i, op, "rhs_batch_dims", false, &rb, &lrb));
  TS_CHECK(get_list(v, i, op, "lhs_contracting_dims", false, &lc, &llc));
  TS_CHECK(get_list(v, i, op, "rhs_contracting_dims", false, &rc, &lrc));
  uint8_t *lu = ts_arena_alloc(v->scratch, (size_t)l->rank + 1),
          *ru = ts_arena_alloc(v->scratch, (size_t)r->rank + 1);
  NOMEM_IF(!lu || !ru);
  TS_CHECK(dot_dims(v, i, llb, "lhs_batch_dims", &lb, l, lu));
  TS_CHECK(dot_dims(v, i, llc, "lhs_contracting_dims", &lc, l, lu));
  TS_CHECK(dot_dims(v, i, lrb, "rhs_batch_dims", &rb, r, ru));
  TS_CHECK(dot_dims(v, i, lrc, "rhs_contracting_dims", &rc, r, ru));
  if (lb.n != rb.n)
    return err(v, i, "dot has %d lhs batch dimensions but %d rhs batch dimensions", lb.n, rb.n);
  if (lc.n != rc.n)
    return err(v, i, "dot has %d lhs contracting dimensions but %d rhs contracting dimensions", lc.n, rc.n);
  for (int k = 0; k < lb.n; k++)
    if (l->dims[lb.v[k]] != r->dims[rb.v[k]])
      return err(v, i,
                 "dot batch dimension sizes differ: lhs dimension %lld of %s and rhs dimension %lld of %s",
                 ll(lb.v[k]), S(v, l), ll(rb.v[k]), S(v, r));
  for (int k = 0; k < lc.n; k++)
    if (l->dims[lc.v[k]] != r->dims[rc.v[k]])
      return err(
          v, i,
          "dot contracting dimension sizes differ: lhs dimension %lld of %s and rhs dimension %lld of %s",
          ll(lc.v[k]), S(v, l), ll(rc.v[k]), S(v, r));
  /* batch dims, then lhs free dims, then rhs free dims */
  ts_shape_t *want =
      new_array(v, is_array(out) ? out->elem : l->elem, l->rank + r->rank - lb.n - lc.n - rc.n);
  NOMEM_IF(!want);
  int o = 0;
  for (int k = 0; k < lb.n; k++)
    want->dims[o] = l->dims[lb.v[k]], want->dynamic[o++] = is_dyn(l, (int)lb.v[k]);
  for (int d = 0; d < l->rank; d++)
    if (!lu[d]) want->dims[o] = l->dims[d], want->dynamic[o++] = is_dyn(l, d);
  for (int d = 0; d < r->rank; d++)
    if (!ru[d]) want->dims[o] = r->dims[d], want->dynamic[o++] = is_dyn(r, d);
  return check_result_note(v, i, out, want, false, NULL);
}

static ts_status_t convolution(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 2));
  TS_CHECK(want_array(v, i, 0));
  TS_CHECK(want_array(v, i, 1));
  const ts_shape_t *l = i->ops[0]->shape, *r = i->ops[1]->shape;
  const ts_hlo_attr_t *dl, *wa;
  TS_CHECK(attr(v, i, op, "dim_labels", TS_ATTR_CONV_DNUMS, true, &dl));
  const ts_conv_dnums_t *dn = dl->v.conv;
  if (dn->rank != l->rank || dn->rank != r->rank)
    return ts_vfy_error(v, i, dl->loc, "dim_labels describe rank %d but the operands are %s and %s", dn->rank,
                        S(v, l), S(v, r));
  int64_t idx[6] = {dn->in_batch,      dn->in_feature, dn->k_in_feature,
                    dn->k_out_feature, dn->out_batch,  dn->out_feature};
  bool ok = dn->nspatial == dn->rank - 2;
  for (int k = 0; ok && k < 6; k++) ok = idx[k] >= 0 && idx[k] < dn->rank;
  for (int k = 0; ok && k < dn->nspatial; k++)
    ok = dn->in_spatial[k] >= 0 && dn->in_spatial[k] < dn->rank && dn->k_spatial[k] >= 0 &&
         dn->k_spatial[k] < dn->rank && dn->out_spatial[k] >= 0 && dn->out_spatial[k] < dn->rank;
  if (!ok) return ts_vfy_error(v, i, dl->loc, "dim_labels are malformed");
  int64_t fgc, bgc;
  TS_CHECK(get_int(v, i, op, "feature_group_count", false, 1, &fgc));
  TS_CHECK(get_int(v, i, op, "batch_group_count", false, 1, &bgc));
  if (fgc < 1 || bgc < 1 || (fgc > 1 && bgc > 1))
    return err(v, i,
               "feature_group_count %lld and batch_group_count %lld must be positive, and not both above 1",
               ll(fgc), ll(bgc));
  TS_CHECK(attr(v, i, op, "window", TS_ATTR_WINDOW, dn->nspatial > 0, &wa));
  int wn = wa ? wa->v.window->n : 0;
  if (wn != dn->nspatial)
    return err(v, i, "window has %d dimensions but the convolution has %d spatial dimensions", wn,
               dn->nspatial);
  if (wa) TS_CHECK(check_window(v, i, wa));
  int64_t in_f = l->dims[dn->in_feature], k_in = r->dims[dn->k_in_feature],
          k_out = r->dims[dn->k_out_feature];
  int64_t batch = l->dims[dn->in_batch];
  if (in_f % fgc || in_f / fgc != k_in)
    return err(v, i,
               "input feature size %lld of %s is not the kernel input feature size %lld of %s times "
               "feature_group_count %lld",
               ll(in_f), S(v, l), ll(k_in), S(v, r), ll(fgc));
  if (k_out % fgc)
    return err(v, i, "kernel output feature size %lld is not divisible by feature_group_count %lld",
               ll(k_out), ll(fgc));
  if (batch % bgc || k_out % bgc)
    return err(
        v, i,
        "batch size %lld and kernel output feature size %lld must be divisible by batch_group_count %lld",
        ll(batch), ll(k_out), ll(bgc));
  ts_shape_t *want = new_array(v, is_array(out) ? out->elem : l->elem, dn->rank);
  NOMEM_IF(!want);
  want->dims[dn->out_batch] = batch / bgc;
  want->dims[dn->out_feature] = k_out;
  for (int k = 0; k < dn->nspatial; k++) {
    const ts_window_dim_t *w = &wa->v.window->dims[k];
    int64_t ks = r->dims[dn->k_spatial[k]];
    if (w->size != ks)
      return ts_vfy_error(v, i, wa->loc,
                          "window size %lld of spatial dimension %d does not match the kernel's %lld",
                          ll(w->size), k, ll(ks));
    if (!window_out(l->dims[dn->in_spatial[k]], w, &want->dims[dn->out_spatial[k]]))
      return ts_vfy_error(v, i, wa->loc, "window dimension %d overflows", k);
  }
  return check_result_note(v, i, out, want, false, NULL);
}

/* Dims of the indices without the index-vector dim, in order. */
static int index_batch_dims(const ts_shape_t *idx, int64_t ivd, int64_t *out) {
  int n = 0;
  for (int d = 0; d < idx->rank; d++)
    if (d != ivd) out[n++] = idx->dims[d];
  return n;
}

static ts_status_t gather_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 2));
  TS_CHECK(want_array(v, i, 0));
  TS_CHECK(want_array(v, i, 1));
  const ts_shape_t *x = i->ops[0]->shape, *idx = i->ops[1]->shape;
  ts_i64_list_t offset, collapsed, sim, sizes, obd, sibd;
  ts_loc_t lo, lc, ls, lz, lb, lsb;
  int64_t ivd;
  TS_CHECK(get_list(v, i, op, "offset_dims", true, &offset, &lo));
  TS_CHECK(get_list(v, i, op, "collapsed_slice_dims", false, &collapsed, &lc));
  TS_CHECK(get_list(v, i, op, "start_index_map", true, &sim, &ls));
  TS_CHECK(get_list(v, i, op, "slice_sizes", true, &sizes, &lz));
  TS_CHECK(get_list(v, i, op, "operand_batching_dims", false, &obd, &lb));
  TS_CHECK(get_list(v, i, op, "start_indices_batching_dims", false, &sibd, &lsb));
  TS_CHECK(get_int(v, i, op, "index_vector_dim", true, 0, &ivd));
  if (!is_int(idx->elem)) return err(v, i, "gather indices must be integers, got %s", S(v, idx));
  if (ivd < 0 || ivd > idx->rank)
    return err(v, i, "index_vector_dim %lld is out of range for the indices %s", ll(ivd), S(v, idx));
  if (sizes.n != x->rank)
    return ts_vfy_error(v, i, lz, "slice_sizes has %d values but the operand %s has rank %d", sizes.n,
                        S(v, x), x->rank);
  for (int d = 0; d < x->rank; d++)
    if (sizes.v[d] < 0 || sizes.v[d] > x->dims[d])
      return ts_vfy_error(v, i, lz, "slice size %lld of dimension %d is out of bounds for %s", ll(sizes.v[d]),
                          d, S(v, x));
  TS_CHECK(check_dim_list(v, i, lc, "collapsed_slice_dims", &collapsed, x));
  TS_CHECK(check_dim_list(v, i, lb, "operand_batching_dims", &obd, x));
  TS_CHECK(check_dim_list(v, i, ls, "start_index_map", &sim, x));
  for (int k = 0; k < obd.n; k++)
    if (list_has(&collapsed, obd.v[k]) || list_has(&sim, obd.v[k]))
      return ts_vfy_error(v, i, lb, "operand batching dimension %lld is also collapsed or in start_index_map",
                          ll(obd.v[k]));
  for (int k = 0; k < collapsed.n; k++)
    if (sizes.v[collapsed.v[k]] > 1)
      return ts_vfy_error(v, i, lc, "collapsed dimension %lld has slice size %lld, not 0 or 1",
                          ll(collapsed.v[k]), ll(sizes.v[collapsed.v[k]]));
  int64_t ivsize = ivd < idx->rank ? idx->dims[ivd] : 1;
  if (sim.n != ivsize)
    return ts_vfy_error(v, i, ls, "start_index_map has %d values but the index vector has %lld", sim.n,
                        ll(ivsize));
  if (x->rank != offset.n + collapsed.n + obd.n)
    return err(
        v, i,
        "operand rank %d is not offset_dims (%d) + collapsed_slice_dims (%d) + operand_batching_dims (%d)",
        x->rank, offset.n, collapsed.n, obd.n);
  TS_CHECK(check_sorted(v, i, lo, "offset_dims", &offset));
  int64_t *batch = ts_arena_alloc(v->scratch, sizeof(int64_t) * (size_t)(idx->rank + 1));
  NOMEM_IF(!batch);
  int nb = index_batch_dims(idx, ivd, batch);
  int orank = nb + offset.n;
  for (int k = 0; k < offset.n; k++)
    if (offset.v[k] < 0 || offset.v[k] >= orank)
      return ts_vfy_error(v, i, lo, "offset_dims value %lld is out of range for a result of rank %d",
                          ll(offset.v[k]), orank);
  ts_shape_t *want = new_array(v, x->elem, orank);
  NOMEM_IF(!want);
  int bo = 0, so = 0;
  for (int d = 0; d < orank; d++) {
    if (list_has(&offset, d)) {
      while (list_has(&collapsed, so) || list_has(&obd, so)) so++;
      want->dims[d] = sizes.v[so++];
    } else {
      want->dims[d] = batch[bo++];
    }
  }
  return check_result_note(v, i, out, want, false, NULL);
}

static ts_status_t scatter_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  if (i->nops < 3 || i->nops % 2 == 0)
    return err(v, i, "scatter takes N inputs, the indices and N updates (an odd count of at least 3), got %d",
               i->nops);
  int n = (i->nops - 1) / 2;
  TS_CHECK(same_operands(v, i, 0, n, false));
  TS_CHECK(want_array(v, i, n));
  TS_CHECK(same_operands(v, i, n + 1, 2 * n + 1, false));
  const ts_shape_t *x = i->ops[0]->shape, *idx = i->ops[n]->shape, *u = i->ops[n + 1]->shape;
  ts_i64_list_t uwd, iwd, sdod, ibd, sibd;
  ts_loc_t lu, li, ls, lb, lsb;
  int64_t ivd;
  TS_CHECK(get_list(v, i, op, "update_window_dims", true, &uwd, &lu));
  TS_CHECK(get_list(v, i, op, "inserted_window_dims", false, &iwd, &li));
  TS_CHECK(get_list(v, i, op, "scatter_dims_to_operand_dims", true, &sdod, &ls));
  TS_CHECK(get_list(v, i, op, "input_batching_dims", false, &ibd, &lb));
  TS_CHECK(get_list(v, i, op, "scatter_indices_batching_dims", false, &sibd, &lsb));
  TS_CHECK(get_int(v, i, op, "index_vector_dim", true, 0, &ivd));
  if (!is_int(idx->elem)) return err(v, i, "scatter indices must be integers, got %s", S(v, idx));
  if (ivd < 0 || ivd > idx->rank)
    return err(v, i, "index_vector_dim %lld is out of range for the indices %s", ll(ivd), S(v, idx));
  TS_CHECK(check_sorted(v, i, lu, "update_window_dims", &uwd));
  TS_CHECK(check_dim_list(v, i, lu, "update_window_dims", &uwd, u));
  TS_CHECK(check_sorted(v, i, li, "inserted_window_dims", &iwd));
  TS_CHECK(check_dim_list(v, i, li, "inserted_window_dims", &iwd, x));
  TS_CHECK(check_dim_list(v, i, lb, "input_batching_dims", &ibd, x));
  for (int k = 0; k < ibd.n; k++)
    if (list_has(&iwd, ibd.v[k]) || list_has(&sdod, ibd.v[k]))
      return ts_vfy_error(v, i, lb,
                          "input batching dimension %lld is also inserted or in scatter_dims_to_operand_dims",
                          ll(ibd.v[k]));
  int64_t *batch = ts_arena_alloc(v->scratch, sizeof(int64_t) * (size_t)(idx->rank + 1));
  NOMEM_IF(!batch);
  int nb = index_batch_dims(idx, ivd, batch);
  if (u->rank != uwd.n + nb)
    return err(v, i, "updates %s should have rank %d (update_window_dims %d + scatter dims %d)", S(v, u),
               uwd.n + nb, uwd.n, nb);
  if (x->rank != uwd.n + iwd.n + ibd.n)
    return err(v, i,
               "operand rank %d is not update_window_dims (%d) + inserted_window_dims (%d) + "
               "input_batching_dims (%d)",
               x->rank, uwd.n, iwd.n, ibd.n);
  int64_t ivsize = ivd < idx->rank ? idx->dims[ivd] : 1;
  if (sdod.n != ivsize)
    return ts_vfy_error(v, i, ls, "scatter_dims_to_operand_dims has %d values but the index vector has %lld",
                        sdod.n, ll(ivsize));
  TS_CHECK(check_dim_list(v, i, ls, "scatter_dims_to_operand_dims", &sdod, x));
  int wo = 0, so = 0;
  for (int d = 0; d < u->rank; d++) {
    if (list_has(&uwd, d)) {
      while (list_has(&iwd, wo) || list_has(&ibd, wo)) wo++;
      if (u->dims[d] > x->dims[wo])
        return err(v, i, "update window dimension %d of %s is larger than operand dimension %d of %s", d,
                   S(v, u), wo, S(v, x));
      wo++;
    } else if (u->dims[d] != batch[so++]) {
      return err(v, i, "update scatter dimension %d of %s does not match the indices %s", d, S(v, u),
                 S(v, idx));
    }
  }
  ts_elem_t *acc = ts_arena_alloc(v->scratch, sizeof *acc * (size_t)n);
  ts_elem_t *in = ts_arena_alloc(v->scratch, sizeof *in * (size_t)n);
  NOMEM_IF(!acc || !in);
  for (int k = 0; k < n; k++) acc[k] = i->ops[k]->shape->elem, in[k] = i->ops[n + 1 + k]->shape->elem;
  const ts_hlo_comp_t *c;
  TS_CHECK(get_comp(v, i, op, "to_apply", true, &c));
  char what[48];
  snprintf(what, sizeof what, "a scatter of %d input%s", n, n == 1 ? "" : "s");
  TS_CHECK(check_reducer(v, i, "to_apply", c, n, acc, in, what));
  ts_shape_t *want = n == 1 ? (ts_shape_t *)x : new_tuple(v, n);
  NOMEM_IF(!want);
  for (int k = 0; n > 1 && k < n; k++) want->tuple[k] = (ts_shape_t *)i->ops[k]->shape;
  return check_result(v, i, out, want);
}

static ts_status_t sort_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 1));
  TS_CHECK(same_operands(v, i, 0, i->nops, false));
  int64_t d = 0; /* set by get_one_dim; initialised for gcc -O3 */
  ts_loc_t loc;
  TS_CHECK(get_one_dim(v, i, op, "dimensions", &d, &loc));
  const ts_shape_t *x = i->ops[0]->shape;
  if (d < 0 || d >= x->rank)
    return ts_vfy_error(v, i, loc, "sort dimension %lld is out of range for %s", ll(d), S(v, x));
  const ts_hlo_comp_t *c;
  TS_CHECK(get_comp(v, i, op, "to_apply", true, &c));
  const ts_shape_t **params = ts_arena_alloc(v->scratch, sizeof *params * (size_t)(2 * i->nops));
  ts_shape_t *pred = new_array(v, TS_PRED, 0);
  NOMEM_IF(!params || !pred);
  for (int k = 0; k < i->nops; k++) {
    ts_shape_t *s = new_array(v, i->ops[k]->shape->elem, 0);
    NOMEM_IF(!s);
    params[2 * k] = params[2 * k + 1] = s;
  }
  TS_CHECK(check_sig(v, i, "to_apply", c, 2 * i->nops, params, pred, false, "a sort comparator"));
  ts_shape_t *want = operands_shape(v, i, false);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

static ts_status_t topk_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  const ts_shape_t *x = i->ops[0]->shape;
  int64_t k;
  TS_CHECK(get_int(v, i, op, "k", true, 0, &k));
  if (x->rank < 1) return err(v, i, "topk operand must have rank >= 1, got %s", S(v, x));
  if (k < 0 || k > x->dims[x->rank - 1])
    return err(v, i, "topk k=%lld is out of range for the last dimension of %s", ll(k), S(v, x));
  ts_shape_t *vals = copy_array(v, x, x->elem), *idxs = copy_array(v, x, TS_S32), *want = new_tuple(v, 2);
  NOMEM_IF(!vals || !idxs || !want);
  vals->dims[x->rank - 1] = idxs->dims[x->rank - 1] = k;
  want->tuple[0] = vals;
  want->tuple[1] = idxs;
  return check_result_note(v, i, out, want, false, NULL);
}

static ts_status_t map_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 1));
  TS_CHECK(same_operands(v, i, 0, i->nops, false));
  const ts_hlo_comp_t *c;
  TS_CHECK(get_comp(v, i, op, "to_apply", true, &c));
  const ts_shape_t **params = ts_arena_alloc(v->scratch, sizeof *params * (size_t)i->nops);
  NOMEM_IF(!params);
  for (int k = 0; k < i->nops; k++) NOMEM_IF(!(params[k] = new_array(v, i->ops[k]->shape->elem, 0)));
  const ts_shape_t *r = comp_result(c);
  ts_shape_t *rs = new_array(v, r && is_array(r) ? r->elem : i->ops[0]->shape->elem, 0);
  NOMEM_IF(!rs);
  TS_CHECK(check_sig(v, i, "to_apply", c, i->nops, params, rs, false, "a map"));
  ts_shape_t *want = copy_array(v, i->ops[0]->shape, rs->elem);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

/* ---- control flow and calls --------------------------------------------- */

/* Finds `key=value` at the top level of a frontend_attributes blob
 * (`{k="v",k2={...}}`); val and len give the value without its quotes. */
static bool fa_lookup(const char *blob, const char *key, const char **val, size_t *len) {
  size_t kl = strlen(key);
  const char *p = blob;
  if (*p == '{') p++;
  while (*p && *p != '}') {
    while (*p == ' ' || *p == ',' || *p == '\n') p++;
    const char *k = p;
    while (*p && *p != '=' && *p != ',' && *p != '}') p++;
    const char *ke = p;
    while (ke > k && ke[-1] == ' ') ke--;
    if (*p != '=') return false;
    p++;
    while (*p == ' ') p++;
    const char *v = p, *ve;
    if (*p == '"') {
      v = ++p;
      while (*p && *p != '"') p += p[0] == '\\' && p[1] ? 2 : 1;
      ve = p;
      if (*p) p++;
    } else {
      int depth = 0;
      while (*p && (depth > 0 || (*p != ',' && *p != '}'))) {
        if (*p == '{') depth++;
        if (*p == '}') depth--;
        p++;
      }
      ve = p;
    }
    if ((size_t)(ke - k) == kl && memcmp(k, key, kl) == 0) {
      *val = v, *len = (size_t)(ve - v);
      return true;
    }
  }
  return false;
}

/* XLA's HandleCall for is_composite=true: frontend attributes with a
 * non-empty composite.name, composite.attributes non-empty when given, and
 * composite.version a non-negative integer when given. */
static ts_status_t composite(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  const ts_hlo_attr_t *ic = ts_hlo_instr_attr(i, "is_composite");
  if (!ic || ic->kind != TS_ATTR_BOOL || !ic->v.b) return TS_OK;
  const ts_hlo_attr_t *fa = ts_hlo_instr_attr(i, "frontend_attributes");
  if (!fa || fa->kind != TS_ATTR_BLOB || !fa->v.s)
    return ts_vfy_error(v, i, ic->loc, "a composite call (is_composite=true) needs frontend_attributes");
  const char *val;
  size_t n;
  if (!fa_lookup(fa->v.s, "composite.name", &val, &n) || n == 0)
    return ts_vfy_error(v, i, fa->loc, "a composite call needs a non-empty composite.name in frontend_attributes");
  if (fa_lookup(fa->v.s, "composite.attributes", &val, &n) && n == 0)
    return ts_vfy_error(v, i, fa->loc, "a composite call's composite.attributes must be {} or non-empty");
  if (fa_lookup(fa->v.s, "composite.version", &val, &n)) {
    bool ok = n > 0 && n < 19;
    for (size_t k = 0; ok && k < n; k++) ok = val[k] >= '0' && val[k] <= '9';
    if (!ok)
      return ts_vfy_error(v, i, fa->loc, "a composite call's composite.version must be a non-negative integer, got \"%.*s\"",
                          (int)n, val);
  }
  return TS_OK;
}

static ts_status_t call_like(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  const char *name = op == TS_OP_CALL ? "to_apply" : "calls";
  const ts_hlo_comp_t *c;
  TS_CHECK(get_comp(v, i, op, name, true, &c));
  const ts_shape_t **params = ts_arena_alloc(v->scratch, sizeof *params * (size_t)(i->nops + 1));
  NOMEM_IF(!params);
  for (int k = 0; k < i->nops; k++) params[k] = i->ops[k]->shape;
  char what[48];
  snprintf(what, sizeof what, "a %s", opname(op));
  TS_CHECK(check_sig(v, i, name, c, i->nops, params, out, false, what));
  return op == TS_OP_CALL ? composite(v, i) : TS_OK;
}

static ts_status_t while_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  const ts_shape_t *state = i->ops[0]->shape;
  const ts_hlo_comp_t *cond, *body;
  TS_CHECK(get_comp(v, i, op, "condition", true, &cond));
  TS_CHECK(get_comp(v, i, op, "body", true, &body));
  ts_shape_t *pred = new_array(v, TS_PRED, 0);
  NOMEM_IF(!pred);
  const char *what = "a while loop";
  TS_CHECK(check_sig(v, i, "condition", cond, 1, &state, pred, false, what));
  TS_CHECK(check_sig(v, i, "body", body, 1, &state, state, false, what));
  return check_result(v, i, out, state);
}

static ts_status_t conditional(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 1));
  const ts_shape_t *p = i->ops[0]->shape;
  const ts_hlo_comp_t *branches[2];
  const ts_hlo_comp_t *const *bs;
  const char *names[2] = {"true_computation", "false_computation"};
  int nb;
  bool pred_form = is_scalar(p) && p->elem == TS_PRED;
  if (pred_form) {
    TS_CHECK(get_comp(v, i, op, "true_computation", true, &branches[0]));
    TS_CHECK(get_comp(v, i, op, "false_computation", true, &branches[1]));
    bs = branches;
    nb = 2;
  } else if (is_scalar(p) && p->elem == TS_S32) {
    const ts_hlo_attr_t *a;
    TS_CHECK(attr(v, i, op, "branch_computations", TS_ATTR_COMP_LIST, true, &a));
    bs = (const ts_hlo_comp_t *const *)a->v.comps.comps;
    nb = a->v.comps.n;
    if (nb < 1) return ts_vfy_error(v, i, a->loc, "branch_computations is empty");
  } else {
    return err(v, i, "conditional selector must be pred[] or s32[], got %s", S(v, p));
  }
  if (i->nops != nb + 1)
    return err(v, i, "conditional with %d branches takes %d operands, got %d", nb, nb + 1, i->nops);
  for (int b = 0; b < nb; b++) {
    char what[32];
    snprintf(what, sizeof what, "branch %d", b);
    const ts_shape_t *arg = i->ops[b + 1]->shape;
    TS_CHECK(check_sig(v, i, pred_form ? names[b] : "branch_computations", bs[b], 1, &arg, out, false, what));
  }
  return TS_OK;
}

/* ---- collectives -------------------------------------------------------- */

static ts_status_t allreduce_reducer(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op) {
  const ts_hlo_comp_t *c;
  TS_CHECK(get_comp(v, i, op, "to_apply", true, &c));
  ts_elem_t t = i->ops[0]->shape->elem;
  char what[48];
  snprintf(what, sizeof what, "an %s", opname(op));
  if (op == TS_OP_REDUCE_SCATTER) snprintf(what, sizeof what, "a reduce-scatter");
  return check_reducer(v, i, "to_apply", c, 1, &t, &t, what);
}

static ts_status_t all_reduce(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 1));
  for (int k = 0; k < i->nops; k++) TS_CHECK(want_array(v, i, k));
  ts_vgroup_t grp; /* validates replica_groups; the shape does not depend on it */
  TS_CHECK(ts_vfy_group_size(v, i, &grp));
  TS_CHECK(allreduce_reducer(v, i, op));
  ts_shape_t *want = operands_shape(v, i, false);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

/* The all-gather (mul) or reduce-scatter (!mul) result for group size n:
 * dimension d of each operand scaled by n. NULL in *out when d does not
 * divide (reduce-scatter). */
static ts_status_t scaled(ts_vctx_t *v, const ts_hlo_instr_t *i, int64_t d, int64_t n, bool mul,
                          ts_shape_t **out) {
  ts_shape_t *w = i->nops == 1 ? NULL : new_tuple(v, i->nops);
  NOMEM_IF(i->nops > 1 && !w);
  *out = NULL;
  for (int k = 0; k < i->nops; k++) {
    const ts_shape_t *x = i->ops[k]->shape;
    ts_shape_t *s = copy_array(v, x, x->elem);
    NOMEM_IF(!s);
    if (mul && !mul_ok(x->dims[d], n, &s->dims[d]))
      return err(v, i, "all-gather dimension %lld overflows for group size %lld", ll(d), ll(n));
    if (!mul && x->dims[d] % n) return TS_OK;
    if (!mul) s->dims[d] = x->dims[d] / n;
    if (i->nops == 1)
      w = s;
    else
      w->tuple[k] = s;
  }
  *out = w;
  return TS_OK;
}

/* all-gather and reduce-scatter: dimension d scaled by the group size. */
static ts_status_t gather_scatter(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                  const ts_shape_t *out) {
  bool mul = op == TS_OP_ALL_GATHER;
  TS_CHECK(want_min_nops(v, i, op, 1));
  for (int k = 0; k < i->nops; k++) TS_CHECK(want_array(v, i, k));
  int64_t d = 0; /* set by get_one_dim; initialised for gcc -O3 */
  ts_loc_t loc;
  TS_CHECK(get_one_dim(v, i, op, "dimensions", &d, &loc));
  for (int k = 0; k < i->nops; k++)
    if (d < 0 || d >= i->ops[k]->shape->rank)
      return ts_vfy_error(v, i, loc, "%s dimension %lld is out of range for %s", opname(op), ll(d),
                          S(v, i->ops[k]->shape));
  ts_vgroup_t grp;
  TS_CHECK(ts_vfy_group_size(v, i, &grp));
  int64_t g = grp.size, alt = grp.alt;
  if (!mul) TS_CHECK(allreduce_reducer(v, i, op));
  /* A group of 1 (counts unset) says nothing: XLA then takes the shard count
   * from operand 0 and the result and only checks the shapes agree with it. */
  const ts_shape_t *o0 = out->elem == TS_TUPLE && i->nops > 1 ? (out->ntuple > 0 ? out->tuple[0] : NULL) : out;
  if (g == 1 && alt == 1 && o0 && is_array(o0) && d < o0->rank) {
    int64_t a = i->ops[0]->shape->dims[d], b = o0->dims[d];
    int64_t n = mul ? (a > 0 ? b / a + (b % a != 0) : 1) : (b > 0 ? a / b + (a % b != 0) : 1);
    if (n > 1) {
      g = alt = n;
      grp.why = "taken from the result, as the counts are unset";
    }
  }
  ts_shape_t *want, *want_alt = NULL;
  TS_CHECK(scaled(v, i, d, g, mul, &want));
  if (want && same_shape_x(out, want, false, false)) return TS_OK;
  if (alt != g) {
    TS_CHECK(scaled(v, i, d, alt, mul, &want_alt));
    if (want_alt && same_shape_x(out, want_alt, false, false)) return TS_OK;
  }
  if (grp.from_header && g == 1 && alt == 1)
    return err(v, i, "%s group size is 1 (%s); %s", opname(op), grp.why, grp.hint);
  if (!want) {
    for (int k = 0; k < i->nops; k++)
      if (i->ops[k]->shape->dims[d] % g)
        return err(v, i, "reduce-scatter dimension %lld of %s is not divisible by the group size %lld (%s)",
                   ll(d), S(v, i->ops[k]->shape), ll(g), grp.why);
  }
  char note[256];
  snprintf(note, sizeof note, " (group size %lld: %s)", ll(g), grp.why);
  return check_result_note(v, i, out, want, false, note);
}

static ts_status_t all_to_all(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 1));
  for (int k = 0; k < i->nops; k++) TS_CHECK(want_array(v, i, k));
  ts_vgroup_t grp;
  TS_CHECK(ts_vfy_group_size(v, i, &grp));
  int64_t g = grp.size, alt = grp.alt;
  ts_i64_list_t dims;
  ts_loc_t loc;
  TS_CHECK(get_list(v, i, op, "dimensions", false, &dims, &loc));
  if (dims.n > 1)
    return ts_vfy_error(v, i, loc, "all-to-all dimensions must have at most one value, got %d", dims.n);
  if (dims.n == 1) {
    int64_t d = dims.v[0];
    for (int k = 0; k < i->nops; k++) {
      const ts_shape_t *x = i->ops[k]->shape;
      if (d < 0 || d >= x->rank)
        return ts_vfy_error(v, i, loc, "all-to-all dimension %lld is out of range for %s", ll(d), S(v, x));
      if (x->dims[d] % g && x->dims[d] % alt)
        return err(v, i, "all-to-all split dimension %lld of %s is not divisible by the group size %lld (%s)",
                   ll(d), S(v, x), ll(g), grp.why);
    }
  } else if (i->nops != g && i->nops != alt && g > 0) {
    /* XLA's HandleAllToAll: the tuple form has one operand per participant */
    return err(v, i, "all-to-all without dimensions takes one operand per participant: %d operands, group size %lld (%s)",
               i->nops, ll(g), grp.why);
  } else if (i->nops == 1 && out->elem == TS_TUPLE) {
    ts_shape_t *want = operands_shape(v, i, true);
    NOMEM_IF(!want);
    return check_result(v, i, out, want);
  }
  ts_shape_t *want = operands_shape(v, i, false);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

/* XLA's CheckBufferOffset: a buffer's offsets are a tuple with one scalar
 * per dimension, or a tuple of such tuples (one per slice). */
static bool offsets_fit(const ts_shape_t *buf, const ts_shape_t *off) {
  if (off->elem != TS_TUPLE || !is_array(buf)) return false;
  bool arrays = true, tuples = true;
  for (int k = 0; k < off->ntuple; k++) {
    arrays &= is_array(off->tuple[k]);
    tuples &= off->tuple[k]->elem == TS_TUPLE;
  }
  if (!arrays && !tuples) return false;
  if (arrays) return off->ntuple == buf->rank;
  for (int k = 0; k < off->ntuple; k++)
    if (off->tuple[k]->ntuple != buf->rank) return false;
  return true;
}

/* The in-place form collective-permute(input, output, input offsets, output
 * offsets): buffers and offsets pair up (XLA's CheckInplaceCollectivePermute). */
static ts_status_t inplace_permute(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  const ts_shape_t *in = i->ops[0]->shape, *out = i->ops[1]->shape, *io = i->ops[2]->shape,
                   *oo = i->ops[3]->shape;
  if (is_array(in) && is_array(out)) {
    if (!offsets_fit(in, io) || !offsets_fit(out, oo))
      return err(v, i, "in-place collective-permute offsets %s and %s do not fit the buffers %s and %s", S(v, io),
                 S(v, oo), S(v, in), S(v, out));
    return TS_OK;
  }
  if (in->elem != TS_TUPLE || out->elem != TS_TUPLE || in->ntuple != out->ntuple)
    return err(v, i, "in-place collective-permute input buffers %s and output buffers %s do not pair up", S(v, in),
               S(v, out));
  for (int side = 0; side < 2; side++) {
    const ts_shape_t *b = side ? out : in, *o = side ? oo : io;
    bool ok = o->elem == TS_TUPLE && o->ntuple == b->ntuple;
    for (int k = 0; ok && k < b->ntuple; k++) ok = offsets_fit(b->tuple[k], o->tuple[k]);
    if (!ok)
      return err(v, i, "in-place collective-permute %s offsets %s do not pair up with the %s buffers %s",
                 side ? "output" : "input", S(v, o), side ? "output" : "input", S(v, b));
  }
  return TS_OK;
}

static ts_status_t collective_permute(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                      const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 1));
  const ts_hlo_attr_t *a;
  TS_CHECK(attr(v, i, op, "source_target_pairs", TS_ATTR_INT_LISTS, true, &a));
  bool inplace = i->nops == 4;
  if (inplace) TS_CHECK(inplace_permute(v, i));
  /* Each id may be a source (and a target) once, or once per slice in the
   * in-place form; ids are replica ids without a channel_id, partition ids
   * with one, below that count unless it is 1 (unset). */
  int allowed = 1;
  if (inplace) {
    const ts_shape_t *io = i->ops[2]->shape;
    allowed = is_array(i->ops[0]->shape) ? io->ntuple : io->ntuple > 0 ? io->tuple[0]->ntuple : 1;
    if (allowed < 1) allowed = 1;
  }
  bool by_partition = ts_hlo_instr_attr(i, "channel_id") != NULL;
  int64_t limit = by_partition ? v->num_partitions : v->replica_count;
  for (int k = 0; k < a->v.lists.n; k++) {
    const ts_i64_list_t *p = &a->v.lists.lists[k];
    if (p->n != 2 || p->v[0] < 0 || p->v[1] < 0)
      return ts_vfy_error(v, i, a->loc, "source_target_pairs entry %d must be a pair of device ids", k);
    for (int e = 0; e < 2; e++)
      if (limit > 1 && p->v[e] >= limit)
        return ts_vfy_error(v, i, a->loc, "source_target_pairs %s %lld must be < %s=%lld", e ? "target" : "source",
                            ll(p->v[e]), by_partition ? "num_partitions" : "replica_count", ll(limit));
    int seen[2] = {0, 0};
    for (int j = 0; j < k; j++)
      for (int e = 0; e < 2; e++) seen[e] += a->v.lists.lists[j].v[e] == p->v[e];
    for (int e = 0; e < 2; e++)
      if (seen[e] >= allowed) {
        if (allowed == 1)
          return ts_vfy_error(v, i, a->loc, "source_target_pairs names %s %lld twice", e ? "target" : "source",
                              ll(p->v[e]));
        return ts_vfy_error(v, i, a->loc, "source_target_pairs names %s %lld more than %d times",
                            e ? "target" : "source", ll(p->v[e]), allowed);
      }
  }
  if (i->nops != 1) return TS_OK; /* in-place (4 operands) and combined forms */
  return check_result(v, i, out, i->ops[0]->shape);
}

static ts_status_t collective_broadcast(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                        const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 1));
  ts_vgroup_t grp;
  TS_CHECK(ts_vfy_group_size(v, i, &grp));
  /* has_dynamic_root=true: the last operand is the root's id, not data */
  const ts_hlo_attr_t *dr = ts_hlo_instr_attr(i, "has_dynamic_root");
  bool dynamic = dr && ((dr->kind == TS_ATTR_BOOL && dr->v.b) ||
                        ((dr->kind == TS_ATTR_IDENT || dr->kind == TS_ATTR_RAW) && dr->v.s && !strcmp(dr->v.s, "true")));
  int n = i->nops - (dynamic && i->nops >= 2 ? 1 : 0);
  ts_shape_t *want = n == 1 ? (ts_shape_t *)i->ops[0]->shape : new_tuple(v, n);
  NOMEM_IF(!want);
  for (int k = 0; n != 1 && k < n; k++) want->tuple[k] = (ts_shape_t *)i->ops[k]->shape;
  return check_result(v, i, out, want);
}

static ts_status_t scalar_u32(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 0));
  ts_shape_t *want = new_array(v, TS_U32, 0);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

/* ---- everything else ---------------------------------------------------- */

static ts_status_t constant_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 0));
  if (!i->literal || !i->literal->shape) return TS_OK;
  if (!same_shape_x(i->literal->shape, out, false, false))
    return err(v, i, "literal shape %s does not match the result shape %s", S(v, i->literal->shape),
               S(v, out));
  return TS_OK;
}

static ts_status_t rng_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 2));
  TS_CHECK(want_scalar(v, i, 0, "rng parameter"));
  TS_CHECK(want_scalar(v, i, 1, "rng parameter"));
  TS_CHECK(want_out_array(v, i, out));
  const ts_shape_t *a = i->ops[0]->shape, *b = i->ops[1]->shape;
  if (a->elem != b->elem) return err(v, i, "rng parameters differ in type: %s and %s", S(v, a), S(v, b));
  const ts_hlo_attr_t *d;
  TS_CHECK(attr(v, i, op, "distribution", TS_ATTR_IDENT, true, &d));
  if (strcmp(d->v.s, "rng_uniform") == 0) {
    if (!is_int(a->elem) && !ts_elem_is_float(a->elem) && a->elem != TS_PRED)
      return err(v, i, "rng_uniform needs integer, floating-point or pred parameters, got %s", S(v, a));
  } else if (strcmp(d->v.s, "rng_normal") == 0) {
    if (!ts_elem_is_float(a->elem)) return err(v, i, "rng_normal needs floating-point parameters, got %s", S(v, a));
  } else {
    return ts_vfy_error(v, i, d->loc, "distribution must be rng_uniform or rng_normal, got %s", d->v.s);
  }
  ts_shape_t *want = copy_array(v, out, a->elem);
  NOMEM_IF(!want);
  return check_result(v, i, out, want);
}

static ts_status_t rng_bit_generator(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                     const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  const ts_shape_t *st = i->ops[0]->shape;
  if (out->elem != TS_TUPLE || out->ntuple != 2 || !is_array(out->tuple[1]))
    return err(v, i, "rng-bit-generator result must be (state, bits), got %s", S(v, out));
  if (!same_shape_x(out->tuple[0], st, false, false))
    return err(v, i, "rng-bit-generator result state %s does not match the operand %s", S(v, out->tuple[0]),
               S(v, st));
  return TS_OK;
}

static ts_status_t batch_norm(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  int n = op == TS_OP_BATCH_NORM_TRAINING ? 3 : 5;
  TS_CHECK(want_nops(v, i, op, n));
  for (int k = 0; k < n; k++) TS_CHECK(want_array(v, i, k));
  const ts_shape_t *x = i->ops[0]->shape;
  int64_t f;
  TS_CHECK(get_int(v, i, op, "feature_index", true, 0, &f));
  if (f < 0 || f >= x->rank) return err(v, i, "feature_index %lld is out of range for %s", ll(f), S(v, x));
  ts_shape_t *feat = new_array(v, x->elem, 1);
  NOMEM_IF(!feat);
  feat->dims[0] = x->dims[f];
  /* grad's operand 4 is the output gradient, shaped like the input */
  for (int k = 1; k < n; k++) {
    const ts_shape_t *want = op == TS_OP_BATCH_NORM_GRAD && k == 4 ? x : feat;
    if (!same_shape_x(i->ops[k]->shape, want, false, false))
      return err(v, i, "operand %d %s should be %s", k, S(v, i->ops[k]->shape), S(v, want));
  }
  if (op == TS_OP_BATCH_NORM_INFERENCE) return check_result_note(v, i, out, x, false, NULL);
  ts_shape_t *want = new_tuple(v, 3);
  NOMEM_IF(!want);
  want->tuple[0] = (ts_shape_t *)x;
  want->tuple[1] = want->tuple[2] = feat;
  return check_result_note(v, i, out, want, false, NULL);
}

static ts_status_t fft_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(want_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  const ts_shape_t *x = i->ops[0]->shape;
  const ts_hlo_attr_t *t;
  ts_i64_list_t len;
  ts_loc_t loc;
  TS_CHECK(attr(v, i, op, "fft_type", TS_ATTR_IDENT, true, &t));
  TS_CHECK(get_list(v, i, op, "fft_length", true, &len, &loc));
  if (len.n < 1 || len.n > 3 || len.n > x->rank)
    return ts_vfy_error(v, i, loc, "fft_length must have 1 to 3 values, at most the rank of %s", S(v, x));
  ts_shape_t *want = copy_array(v, x, x->elem);
  NOMEM_IF(!want);
  int last = x->rank - 1;
  int64_t n = len.v[len.n - 1];
  if (strcmp(t->v.s, "RFFT") == 0) {
    if (x->elem != TS_F32 && x->elem != TS_F64) return err(v, i, "RFFT needs f32 or f64, got %s", S(v, x));
    want->elem = x->elem == TS_F32 ? TS_C64 : TS_C128;
    if (n != 0) want->dims[last] = n / 2 + 1;
  } else if (strcmp(t->v.s, "IRFFT") == 0) {
    if (!ts_elem_is_complex(x->elem)) return err(v, i, "IRFFT needs c64 or c128, got %s", S(v, x));
    want->elem = x->elem == TS_C64 ? TS_F32 : TS_F64;
    if (n != 0) want->dims[last] = n;
  } else if (strcmp(t->v.s, "FFT") == 0 || strcmp(t->v.s, "IFFT") == 0) {
    if (!ts_elem_is_complex(x->elem)) return err(v, i, "%s needs c64 or c128, got %s", t->v.s, S(v, x));
  } else {
    return ts_vfy_error(v, i, t->loc, "fft_type must be FFT, IFFT, RFFT or IRFFT, got %s", t->v.s);
  }
  return check_result_note(v, i, out, want, false, NULL);
}

static ts_status_t cholesky_like(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                 const ts_shape_t *out) {
  int n = op == TS_OP_CHOLESKY ? 1 : 2;
  TS_CHECK(want_nops(v, i, op, n));
  for (int k = 0; k < n; k++) TS_CHECK(want_array(v, i, k));
  const ts_shape_t *a = i->ops[0]->shape;
  if (a->rank < 2 || a->dims[a->rank - 1] != a->dims[a->rank - 2])
    return err(v, i, "%s needs square matrices in the last two dimensions, got %s", opname(op), S(v, a));
  return check_result(v, i, out, i->ops[n - 1]->shape);
}

static ts_status_t dynamic_reshape(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                   const ts_shape_t *out) {
  TS_CHECK(want_min_nops(v, i, op, 1));
  TS_CHECK(want_array(v, i, 0));
  TS_CHECK(want_out_array(v, i, out));
  if (i->nops != out->rank + 1)
    return err(v, i, "dynamic-reshape to rank %d takes %d size operands, got %d", out->rank, out->rank,
               i->nops - 1);
  for (int k = 1; k < i->nops; k++) {
    const ts_shape_t *s = i->ops[k]->shape;
    if (!is_scalar(s) || !is_int(s->elem))
      return err(v, i, "dynamic-reshape size (operand %d) must be an integer scalar, got %s", k, S(v, s));
  }
  if (i->ops[0]->shape->elem != out->elem)
    return err(v, i, "dynamic-reshape changes the element type: %s to %s", S(v, i->ops[0]->shape), S(v, out));
  return TS_OK;
}

static ts_status_t tokens(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  /* after-all: XLA checks only the result is a token, whatever the operands */
  if (op == TS_OP_OUTFEED) {
    TS_CHECK(want_nops(v, i, op, 2));
    TS_CHECK(want_token(v, i, 1));
  }
  if (op == TS_OP_INFEED) {
    TS_CHECK(want_nops(v, i, op, 1));
    TS_CHECK(want_token(v, i, 0));
    if (out->elem != TS_TUPLE || out->ntuple != 2 || out->tuple[1]->elem != TS_TOKEN)
      return err(v, i, "infeed result must be (data, token[]), got %s", S(v, out));
    return TS_OK;
  }
  if (out->elem != TS_TOKEN) return err(v, i, "%s result must be token[], got %s", opname(op), S(v, out));
  return TS_OK;
}

/* ---- async wrappers ----------------------------------------------------- */

static ts_status_t dispatch(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out);

/* `-done`: the result is element `k` of the start's (or update's) tuple. */
static ts_status_t done_op(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out,
                           int k) {
  TS_CHECK(want_nops(v, i, op, 1));
  const ts_shape_t *s = i->ops[0]->shape;
  if (s->elem != TS_TUPLE || s->ntuple <= k) return TS_OK;
  return check_result(v, i, out, s->tuple[k]);
}

/* XLA's CheckAsyncOpComputationShapes: an async value is ((operands...),
 * result, context...), and with calls= its first two elements are the wrapped
 * computation's parameters and root. */
static ts_status_t async_shape(ts_vctx_t *v, const ts_hlo_instr_t *i, const char *what, const ts_shape_t *s) {
  if (s->elem != TS_TUPLE || s->ntuple < 2 || s->tuple[0]->elem != TS_TUPLE)
    return err(v, i, "%s needs an async value ((operands...), result, context...), got %s", what, S(v, s));
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "calls");
  const ts_hlo_comp_t *c = a && a->kind == TS_ATTR_COMP && a->v.comps.n == 1 ? a->v.comps.comps[0] : NULL;
  if (!c || !c->root) return TS_OK;
  ts_shape_t *params = new_tuple(v, c->nparams);
  NOMEM_IF(!params);
  for (int k = 0; k < c->nparams; k++) {
    if (!c->params[k]) return TS_OK; /* reported with the computation */
    params->tuple[k] = (ts_shape_t *)c->params[k]->shape;
  }
  if (!same_shape_x(s->tuple[0], params, false, false))
    return err(v, i, "%s: async value element {0} %s does not match the parameters %s of '%s'", what,
               S(v, s->tuple[0]), S(v, params), c->name);
  if (!same_shape_x(s->tuple[1], c->root->shape, false, false))
    return err(v, i, "%s: async value element {1} %s does not match the root %s of '%s'", what, S(v, s->tuple[1]),
               S(v, c->root->shape), c->name);
  return TS_OK;
}

static ts_status_t async_start(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  TS_CHECK(async_shape(v, i, "async-start", out));
  ts_shape_t *ops = operands_shape(v, i, true);
  NOMEM_IF(!ops);
  if (!same_shape_x(out->tuple[0], ops, false, false))
    return err(v, i, "async-start operand shapes %s do not match the operands %s", S(v, out->tuple[0]),
               S(v, ops));
  const ts_hlo_comp_t *c;
  TS_CHECK(get_comp(v, i, op, "calls", false, &c));
  if (c) return TS_OK; /* async_shape checked it against the operands and result */
  if (i->async_wrapped < TS_OP_COUNT && i->async_wrapped != TS_OP_ASYNC_START)
    return dispatch(v, i, i->async_wrapped, out->tuple[1]);
  return TS_OK;
}

static ts_status_t all_gather_start(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                    const ts_shape_t *out) {
  /* (operand(s), result) */
  if (out->elem != TS_TUPLE || out->ntuple != 2)
    return err(v, i, "all-gather-start result must be (operands, result), got %s", S(v, out));
  ts_shape_t *ops = operands_shape(v, i, false);
  NOMEM_IF(!ops);
  if (!same_shape_x(out->tuple[0], ops, false, false))
    return err(v, i, "all-gather-start operand shape %s does not match the operands %s", S(v, out->tuple[0]),
               S(v, ops));
  return gather_scatter(v, i, TS_OP_ALL_GATHER, out->tuple[1]);
}

static ts_status_t permute_start(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op,
                                 const ts_shape_t *out) {
  /* (operand, result, context...) */
  if (out->elem != TS_TUPLE || out->ntuple < 2)
    return err(v, i, "collective-permute-start result must be (operand, result, ...), got %s", S(v, out));
  if (i->nops == 1 && !same_shape_x(out->tuple[0], i->ops[0]->shape, false, false))
    return err(v, i, "collective-permute-start operand shape %s does not match the operand %s",
               S(v, out->tuple[0]), S(v, i->ops[0]->shape));
  return collective_permute(v, i, TS_OP_COLLECTIVE_PERMUTE, out->tuple[1]);
}

static ts_status_t copy_start(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  /* (destination, source, context) */
  TS_CHECK(want_nops(v, i, op, 1));
  if (out->elem != TS_TUPLE || out->ntuple < 2)
    return err(v, i, "copy-start result must be (destination, source, context), got %s", S(v, out));
  for (int k = 0; k < 2; k++)
    if (!same_shape_x(out->tuple[k], i->ops[0]->shape, false, false))
      return err(v, i, "copy-start result %s does not match the operand %s", S(v, out),
                 S(v, i->ops[0]->shape));
  return TS_OK;
}

/* ---- dispatch ----------------------------------------------------------- */

static ts_status_t dispatch(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_opcode_t op, const ts_shape_t *out) {
  int arity = ts_opcode_arity(op);
  if (arity >= 0 && i->nops != arity && op != TS_OP_DOT) return want_nops(v, i, op, arity);
  for (int k = 0; k < i->nops; k++)
    if (any_unbounded(i->ops[k]->shape)) return TS_OK; /* `?` dims: no static rule applies */
  if (any_unbounded(out) && op != TS_OP_RESHAPE) return TS_OK;
  switch (op) {
  case TS_OP_ABS:
  case TS_OP_ACOS:
  case TS_OP_ACOSH:
  case TS_OP_ASIN:
  case TS_OP_ASINH:
  case TS_OP_ATAN:
  case TS_OP_ATANH:
  case TS_OP_CBRT:
  case TS_OP_CEIL:
  case TS_OP_COSINE:
  case TS_OP_COSH:
  case TS_OP_COUNT_LEADING_ZEROS:
  case TS_OP_ERF:
  case TS_OP_EXPONENTIAL:
  case TS_OP_EXPONENTIAL_MINUS_ONE:
  case TS_OP_FLOOR:
  case TS_OP_IMAG:
  case TS_OP_IS_FINITE:
  case TS_OP_LOG:
  case TS_OP_LOG_PLUS_ONE:
  case TS_OP_LOGISTIC:
  case TS_OP_NEGATE:
  case TS_OP_NOT:
  case TS_OP_POPCNT:
  case TS_OP_REAL:
  case TS_OP_REDUCE_PRECISION:
  case TS_OP_ROUND_NEAREST_AFZ:
  case TS_OP_ROUND_NEAREST_EVEN:
  case TS_OP_RSQRT:
  case TS_OP_SIGN:
  case TS_OP_SINE:
  case TS_OP_SINH:
  case TS_OP_SQRT:
  case TS_OP_TAN:
  case TS_OP_TANH: return unary(v, i, op, out);
  case TS_OP_COPY:
  case TS_OP_OPT_BARRIER:
  case TS_OP_DOMAIN:
  case TS_OP_ADD_DEPENDENCY: return passthrough(v, i, op, out);
  case TS_OP_ADD:
  case TS_OP_AND:
  case TS_OP_ATAN2:
  case TS_OP_COMPARE:
  case TS_OP_COMPLEX:
  case TS_OP_DIVIDE:
  case TS_OP_MAXIMUM:
  case TS_OP_MINIMUM:
  case TS_OP_MULHI:
  case TS_OP_MULTIPLY:
  case TS_OP_OR:
  case TS_OP_POWER:
  case TS_OP_REMAINDER:
  case TS_OP_SHIFT_LEFT:
  case TS_OP_SHIFT_RIGHT_ARITHMETIC:
  case TS_OP_SHIFT_RIGHT_LOGICAL:
  case TS_OP_SUBTRACT:
  case TS_OP_XOR: return binary(v, i, op, out);
  case TS_OP_SELECT: return select_op(v, i, op, out);
  case TS_OP_CLAMP: return clamp_op(v, i, op, out);
  case TS_OP_CONVERT:
  case TS_OP_STOCHASTIC_CONVERT: return convert_op(v, i, op, out);
  case TS_OP_BITCAST_CONVERT: return bitcast_convert(v, i, op, out);
  case TS_OP_BROADCAST: return broadcast_op(v, i, op, out);
  case TS_OP_RESHAPE: return reshape_op(v, i, op, out);
  case TS_OP_DYNAMIC_RESHAPE: return dynamic_reshape(v, i, op, out);
  case TS_OP_TRANSPOSE: return transpose_op(v, i, op, out);
  case TS_OP_REVERSE: return reverse_op(v, i, op, out);
  case TS_OP_SLICE: return slice_op(v, i, op, out);
  case TS_OP_DYNAMIC_SLICE: return dynamic_slice(v, i, op, out);
  case TS_OP_DYNAMIC_UPDATE_SLICE: return dynamic_update_slice(v, i, op, out);
  case TS_OP_CONCATENATE: return concatenate(v, i, op, out);
  case TS_OP_PAD: return pad_op(v, i, op, out);
  case TS_OP_IOTA: return iota_op(v, i, op, out);
  case TS_OP_GET_DIMENSION_SIZE:
  case TS_OP_SET_DIMENSION_SIZE: return get_dimension_size(v, i, op, out);
  case TS_OP_TUPLE: return tuple_op(v, i, op, out);
  case TS_OP_GET_TUPLE_ELEMENT: return gte_op(v, i, op, out);
  case TS_OP_REDUCE:
  case TS_OP_REDUCE_WINDOW: return reduce_op(v, i, op, out);
  case TS_OP_SELECT_AND_SCATTER: return select_and_scatter(v, i, op, out);
  case TS_OP_DOT: return dot_op(v, i, op, out);
  case TS_OP_CONVOLUTION: return convolution(v, i, op, out);
  case TS_OP_GATHER: return gather_op(v, i, op, out);
  case TS_OP_SCATTER: return scatter_op(v, i, op, out);
  case TS_OP_SORT: return sort_op(v, i, op, out);
  case TS_OP_TOPK: return topk_op(v, i, op, out);
  case TS_OP_MAP: return map_op(v, i, op, out);
  case TS_OP_CALL:
  case TS_OP_FUSION: return call_like(v, i, op, out);
  case TS_OP_WHILE: return while_op(v, i, op, out);
  case TS_OP_CONDITIONAL: return conditional(v, i, op, out);
  case TS_OP_ALL_REDUCE:
  case TS_OP_ALL_REDUCE_START: return all_reduce(v, i, TS_OP_ALL_REDUCE, out);
  case TS_OP_ALL_GATHER:
  case TS_OP_REDUCE_SCATTER: return gather_scatter(v, i, op, out);
  case TS_OP_ALL_GATHER_START: return all_gather_start(v, i, op, out);
  case TS_OP_ALL_TO_ALL: return all_to_all(v, i, op, out);
  case TS_OP_COLLECTIVE_PERMUTE: return collective_permute(v, i, op, out);
  case TS_OP_COLLECTIVE_PERMUTE_START: return permute_start(v, i, op, out);
  case TS_OP_COLLECTIVE_BROADCAST: return collective_broadcast(v, i, op, out);
  case TS_OP_ALL_REDUCE_DONE: return passthrough(v, i, op, out);
  case TS_OP_ALL_GATHER_DONE:
  case TS_OP_COLLECTIVE_PERMUTE_DONE: return done_op(v, i, op, out, 1);
  case TS_OP_ASYNC_DONE:
    TS_CHECK(want_nops(v, i, op, 1));
    TS_CHECK(async_shape(v, i, "async-done's operand", i->ops[0]->shape));
    return done_op(v, i, op, out, 1);
  case TS_OP_COPY_START: return copy_start(v, i, op, out);
  case TS_OP_COPY_DONE: return done_op(v, i, op, out, 0);
  case TS_OP_ASYNC_START: return async_start(v, i, op, out);
  case TS_OP_ASYNC_UPDATE:
    TS_CHECK(want_nops(v, i, op, 1));
    /* as XLA: the form, then operand == result, then the wrapped computation */
    if (out->elem != TS_TUPLE || out->ntuple < 2 || out->tuple[0]->elem != TS_TUPLE)
      return async_shape(v, i, "async-update", out);
    TS_CHECK(check_result(v, i, out, i->ops[0]->shape));
    return async_shape(v, i, "async-update", out);
  case TS_OP_PARTITION_ID:
  case TS_OP_REPLICA_ID: return scalar_u32(v, i, op, out);
  case TS_OP_CONSTANT: return constant_op(v, i, op, out);
  case TS_OP_RNG: return rng_op(v, i, op, out);
  case TS_OP_RNG_BIT_GENERATOR: return rng_bit_generator(v, i, op, out);
  case TS_OP_BATCH_NORM_GRAD:
  case TS_OP_BATCH_NORM_INFERENCE:
  case TS_OP_BATCH_NORM_TRAINING: return batch_norm(v, i, op, out);
  case TS_OP_FFT: return fft_op(v, i, op, out);
  case TS_OP_CHOLESKY:
  case TS_OP_TRIANGULAR_SOLVE: return cholesky_like(v, i, op, out);
  case TS_OP_AFTER_ALL:
  case TS_OP_INFEED:
  case TS_OP_OUTFEED: return tokens(v, i, op, out);
  default:
    /* parameter (checked with the computation), custom-call, bitcast
     * (layout-dependent), send/recv, scan, shuffle, ragged-*, scaled-dot,
     * collective-reduce, rng-get-and-update-state: any shape. */
    return TS_OK;
  }
}

ts_status_t ts_vfy_instr_shape(ts_vctx_t *v, const ts_hlo_instr_t *i) {
  /* XLA's verifier takes `?` dimensions only with allow_unbounded_dynamism */
  if (any_unbounded(i->shape))
    return err(v, i, "unbounded dynamic dimension in %s: XLA's verifier allows them only when asked to",
               S(v, i->shape));
  return dispatch(v, i, i->op, i->shape);
}
