/* Kernels: reduce, reduce-window and select-and-scatter.
 *
 * A reducer that is one binary op of its two parameters (ts_reducer_op) runs
 * in typed loops; anything else (variadic argmax reducers, custom selects)
 * goes through ctx->apply one element at a time, in XLA's evaluation order:
 * the init value first, then the reduced elements in row-major order.
 * Floats of 32 bits or fewer compute each step in f32 and round to their type;
 * fast float reductions may reassociate (XLA allows it), integers are exact. */
#include "kernels_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- scalar arithmetic of the reducer fast paths ------------------------ */

/* XLA's maximum/minimum: NaN propagates, -0 < +0. */
static inline double max_d(double a, double b) {
  return (a > b || a != a) ? a : (b > a || b != b) ? b : (signbit(a) ? b : a);
}
static inline double min_d(double a, double b) {
  return (a < b || a != a) ? a : (b < a || b != b) ? b : (signbit(a) ? a : b);
}
static inline float max_f(float a, float b) {
  return (a > b || a != a) ? a : (b > a || b != b) ? b : (signbit(a) ? b : a);
}
static inline float min_f(float a, float b) {
  return (a < b || a != a) ? a : (b < a || b != b) ? b : (signbit(a) ? a : b);
}

/* Per-type ops, named op_<type>. Integers wrap (computed unsigned); the
 * bitwise ops of the float types are never selected (see fast_ok). */
#define FLOAT_OPS(S, T, MAX, MIN)                                    \
  static inline T add_##S(T a, T b) { return a + b; }                \
  static inline T mul_##S(T a, T b) { return a * b; }                \
  static inline T max_##S(T a, T b) { return MAX(a, b); }            \
  static inline T min_##S(T a, T b) { return MIN(a, b); }            \
  static inline T and_##S(T a, T b) { (void)b; return a; }           \
  static inline T or_##S(T a, T b) { (void)b; return a; }            \
  static inline T xor_##S(T a, T b) { (void)b; return a; }
#define INT_OPS(S, T, U)                                                    \
  static inline T add_##S(T a, T b) { return (T)(U)((U)a + (U)b); }         \
  static inline T mul_##S(T a, T b) { return (T)(U)((U)a * (U)b); }         \
  static inline T max_##S(T a, T b) { return a > b ? a : b; }               \
  static inline T min_##S(T a, T b) { return a < b ? a : b; }               \
  static inline T and_##S(T a, T b) { return a & b; }                       \
  static inline T or_##S(T a, T b) { return a | b; }                        \
  static inline T xor_##S(T a, T b) { return a ^ b; }
FLOAT_OPS(f32, float, max_f, min_f)
FLOAT_OPS(f64, double, max_d, min_d)
INT_OPS(s32, int32_t, uint32_t)
INT_OPS(s64, int64_t, uint64_t)

/* Expands LOOP(fn) with the per-type function of `op`. */
#define OP_DISPATCH(op, S, LOOP)             \
  switch (op) {                              \
  case TS_OP_ADD: LOOP(add_##S); break;      \
  case TS_OP_MULTIPLY: LOOP(mul_##S); break; \
  case TS_OP_MAXIMUM: LOOP(max_##S); break;  \
  case TS_OP_MINIMUM: LOOP(min_##S); break;  \
  case TS_OP_AND: LOOP(and_##S); break;      \
  case TS_OP_OR: LOOP(or_##S); break;        \
  default: LOOP(xor_##S); break;             \
  }

/* *acc = op(*acc, x[0..n)) with 8 independent partials, so it vectorizes
 * (reassociation is allowed for floats and exact for the integer ops). */
#define BLOCK_LOOP(fn)                                                  \
  do {                                                                  \
    int64_t j = 0;                                                      \
    if (n >= 16) {                                                      \
      val_t p[8];                                                       \
      for (int k = 0; k < 8; k++) p[k] = x[k];                          \
      for (j = 8; j + 8 <= n; j += 8)                                   \
        for (int k = 0; k < 8; k++) p[k] = fn(p[k], x[j + k]);          \
      for (int k = 0; k < 8; k++) a = fn(a, p[k]);                      \
    }                                                                   \
    for (; j < n; j++) a = fn(a, x[j]);                                 \
  } while (0)
/* out[j] = op(out[j], x[j]) */
#define ROWS_LOOP(fn) for (int64_t j = 0; j < n; j++) out[j] = fn(out[j], x[j])
/* *acc = op(*acc, x[idx[j]]), in order */
#define GATHER_LOOP(fn) for (int64_t j = 0; j < n; j++) a = fn(a, x[idx[j]])

#define TYPED_LOOPS(S, T)                                                                      \
  static void block_##S(ts_opcode_t op, const T *x, int64_t n, T *acc) {                       \
    typedef T val_t;                                                                           \
    val_t a = *acc;                                                                            \
    OP_DISPATCH(op, S, BLOCK_LOOP)                                                             \
    *acc = a;                                                                                  \
  }                                                                                            \
  static void rows_##S(ts_opcode_t op, const T *x, int64_t n, T *out) {                        \
    OP_DISPATCH(op, S, ROWS_LOOP)                                                              \
  }                                                                                            \
  static void gather_##S(ts_opcode_t op, const T *x, const int64_t *idx, int64_t n, T *acc) {  \
    T a = *acc;                                                                                \
    OP_DISPATCH(op, S, GATHER_LOOP)                                                            \
    *acc = a;                                                                                  \
  }
TYPED_LOOPS(f32, float)
TYPED_LOOPS(f64, double)
TYPED_LOOPS(s32, int32_t)
TYPED_LOOPS(s64, int64_t)

/* One op on two values, for the element-at-a-time paths. */
#define APPLY_FN(S, T)                                  \
  static inline T apply_##S(ts_opcode_t op, T a, T b) { \
    switch (op) {                                       \
    case TS_OP_ADD: return add_##S(a, b);               \
    case TS_OP_MULTIPLY: return mul_##S(a, b);          \
    case TS_OP_MAXIMUM: return max_##S(a, b);           \
    case TS_OP_MINIMUM: return min_##S(a, b);           \
    case TS_OP_AND: return and_##S(a, b);               \
    case TS_OP_OR: return or_##S(a, b);                 \
    default: return xor_##S(a, b);                      \
    }                                                   \
  }
APPLY_FN(f32, float)
APPLY_FN(f64, double)
APPLY_FN(s64, int64_t)

/* acc[ai] = op(acc[ai], x[xi]) for any element type, in XLA's arithmetic:
 * floats of <= 32 bits in f32 rounded to the type, complex add/multiply,
 * integers wrapping, pred as bools (add is or, multiply is and). */
static void combine_one(ts_opcode_t op, ts_elem_t e, void *acc, int64_t ai, const void *x, int64_t xi) {
  if (ts_elem_is_complex(e)) {
    double ar, aim, xr, xim;
    ts_load_c(e, acc, ai, &ar, &aim);
    ts_load_c(e, x, xi, &xr, &xim);
    if (op == TS_OP_ADD)
      ts_store_c(e, acc, ai, ar + xr, aim + xim);
    else
      ts_store_c(e, acc, ai, ar * xr - aim * xim, ar * xim + aim * xr);
  } else if (e == TS_F64) {
    double *a = acc;
    a[ai] = apply_f64(op, a[ai], ((const double *)x)[xi]);
  } else if (ts_elem_is_float(e)) {
    float r = apply_f32(op, (float)ts_load_f(e, acc, ai), (float)ts_load_f(e, x, xi));
    ts_store_f(e, acc, ai, r);
  } else if (e == TS_U64 && (op == TS_OP_MAXIMUM || op == TS_OP_MINIMUM)) {
    uint64_t *a = acc, b = ((const uint64_t *)x)[xi];
    if (op == TS_OP_MAXIMUM ? b > a[ai] : b < a[ai]) a[ai] = b;
  } else {
    ts_store_i(e, acc, ai, apply_s64(op, ts_load_i(e, acc, ai), ts_load_i(e, x, xi)));
  }
}

/* Whether a reducer op runs on the fast path for this type. */
static bool fast_ok(ts_opcode_t op, ts_elem_t e) {
  if (op == TS_OP_COUNT) return false;
  if (ts_elem_is_complex(e)) return op == TS_OP_ADD || op == TS_OP_MULTIPLY;
  if (ts_elem_is_float(e)) return op == TS_OP_ADD || op == TS_OP_MULTIPLY || op == TS_OP_MAXIMUM || op == TS_OP_MINIMUM;
  return ts_elem_is_int(e);
}

/* An f32 maximum/minimum block without NaNs, the same value block_f32's
 * partials give: among non-NaN values the XLA maximum is the element of
 * greatest integer key (sign-magnitude bits made two's complement: -0 below
 * +0, the rest as the floats), whatever the order, and equal keys are equal
 * bits. Two 4-lane vectors of keys and a NaN mask (GNU C vector types, which
 * gcc and clang keep in registers): block_f32's max_f, comparisons joined by
 * ||, ran one branchy element at a time, a max reduce at 4.4 GB/s against
 * the sum's 31. false when *acc or an element is NaN: then the order of the
 * partials decides which NaN, and block_f32 runs instead. Not inlined:
 * inlined into reduce_fast, they cost its add and column loops 20-40%. */
typedef int32_t v4i32 __attribute__((vector_size(16)));
typedef float v4f32 __attribute__((vector_size(16)));

static inline int32_t key_f32(float v) { /* its own inverse on the bits */
  int32_t i;
  memcpy(&i, &v, sizeof i);
  return i ^ ((i >> 31) & INT32_MAX);
}

static inline v4i32 key_v(v4f32 v) {
  v4i32 i = (v4i32)v;
  return i ^ ((i >> 31) & INT32_MAX);
}

#define MINMAX_F32(NAME, GT)                                                    \
  __attribute__((noinline)) static bool NAME(const float *x, int64_t n, float *acc) { \
    if (*acc != *acc) return false;                                            \
    int32_t b = key_f32(*acc);                                                 \
    v4i32 b0 = {b, b, b, b}, b1 = b0, nan = {0, 0, 0, 0};                      \
    int64_t j = 0;                                                             \
    for (; j + 8 <= n; j += 8) {                                               \
      v4f32 f0, f1;                                                            \
      memcpy(&f0, x + j, sizeof f0);                                           \
      memcpy(&f1, x + j + 4, sizeof f1);                                       \
      v4i32 k0 = key_v(f0), k1 = key_v(f1), g0 = GT(k0, b0), g1 = GT(k1, b1);  \
      b0 = (k0 & g0) | (b0 & ~g0);                                             \
      b1 = (k1 & g1) | (b1 & ~g1);                                             \
      nan |= (f0 != f0) | (f1 != f1);                                          \
    }                                                                          \
    int32_t any = 0;                                                           \
    for (int k = 0; k < 4; k++) {                                              \
      b = GT(b0[k], b) ? b0[k] : b;                                            \
      b = GT(b1[k], b) ? b1[k] : b;                                            \
      any |= nan[k];                                                           \
    }                                                                          \
    for (; j < n; j++) {                                                       \
      int32_t k = key_f32(x[j]);                                               \
      b = GT(k, b) ? k : b;                                                    \
      any |= x[j] != x[j];                                                     \
    }                                                                          \
    if (any) return false;                                                     \
    b ^= (b >> 31) & INT32_MAX;                                                \
    memcpy(acc, &b, sizeof *acc);                                              \
    return true;                                                               \
  }
#define KEY_ABOVE(a, b) ((a) > (b))
#define KEY_BELOW(a, b) ((a) < (b))
MINMAX_F32(max_block_f32, KEY_ABOVE)
MINMAX_F32(min_block_f32, KEY_BELOW)

static void block_any(ts_opcode_t op, ts_elem_t e, const void *x, int64_t xi, int64_t n, void *acc, int64_t ai) {
  switch (e) {
  case TS_F32:
    if (op == TS_OP_MAXIMUM && max_block_f32((const float *)x + xi, n, (float *)acc + ai)) return;
    if (op == TS_OP_MINIMUM && min_block_f32((const float *)x + xi, n, (float *)acc + ai)) return;
    block_f32(op, (const float *)x + xi, n, (float *)acc + ai);
    return;
  case TS_F64: block_f64(op, (const double *)x + xi, n, (double *)acc + ai); return;
  case TS_S32: block_s32(op, (const int32_t *)x + xi, n, (int32_t *)acc + ai); return;
  case TS_S64: block_s64(op, (const int64_t *)x + xi, n, (int64_t *)acc + ai); return;
  default:
    for (int64_t j = 0; j < n; j++) combine_one(op, e, acc, ai, x, xi + j);
  }
}

static void rows_any(ts_opcode_t op, ts_elem_t e, const void *x, int64_t xi, int64_t n, void *out, int64_t oi) {
  switch (e) {
  case TS_F32: rows_f32(op, (const float *)x + xi, n, (float *)out + oi); return;
  case TS_F64: rows_f64(op, (const double *)x + xi, n, (double *)out + oi); return;
  case TS_S32: rows_s32(op, (const int32_t *)x + xi, n, (int32_t *)out + oi); return;
  case TS_S64: rows_s64(op, (const int64_t *)x + xi, n, (int64_t *)out + oi); return;
  default:
    for (int64_t j = 0; j < n; j++) combine_one(op, e, out, oi + j, x, xi + j);
  }
}

static void gather_any(ts_opcode_t op, ts_elem_t e, const void *x, int64_t base, const int64_t *idx, int64_t n,
                       void *acc, int64_t ai) {
  switch (e) {
  case TS_F32: gather_f32(op, (const float *)x + base, idx, n, (float *)acc + ai); return;
  case TS_F64: gather_f64(op, (const double *)x + base, idx, n, (double *)acc + ai); return;
  case TS_S32: gather_s32(op, (const int32_t *)x + base, idx, n, (int32_t *)acc + ai); return;
  case TS_S64: gather_s64(op, (const int64_t *)x + base, idx, n, (int64_t *)acc + ai); return;
  default:
    for (int64_t j = 0; j < n; j++) combine_one(op, e, acc, ai, x, base + idx[j]);
  }
}

/* Writes the scalar `init` into all n elements of `out`. */
static void fill(ts_elem_t e, void *out, int64_t n, const void *init) {
  size_t sz = (size_t)ts_elem_storage_bytes(e);
  for (int64_t i = 0; i < n; i++) memcpy((char *)out + (size_t)i * sz, init, sz);
}

static const ts_hlo_comp_t *comp_attr(const ts_hlo_instr_t *instr, const char *name) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, name);
  return a && a->kind == TS_ATTR_COMP && a->v.comps.n == 1 ? a->v.comps.comps[0] : NULL;
}

/* A rank-0 view of element i of `a` (for ctx->apply). */
static const int64_t no_dims[1];
static ts_array_t elem_view(ts_elem_t e, const void *data, int64_t i) {
  ts_array_t v = {e, 0, no_dims, (char *)data + (size_t)i * (size_t)ts_elem_storage_bytes(e)};
  return v;
}

/* Element i as parameter p of comp: converted through tmp when the
 * parameter declares another type (floats match loosely in the verifier). */
static ts_array_t param_view(const ts_hlo_comp_t *comp, int p, ts_elem_t e, const void *data, int64_t i,
                             unsigned char *tmp) {
  ts_array_t v = elem_view(e, data, i);
  ts_elem_t want = p < comp->nparams ? comp->params[p]->shape->elem : e;
  if (want == e || !ts_elem_is_array(want)) return v;
  ts_elem_convert(e, v.data, want, tmp, 1);
  return elem_view(want, tmp, 0);
}

/* Variadic reducers keep their accumulators on the stack. */
#define MAX_VARIADIC 32
#define MAX_ELEM_BYTES 16

/* The accumulator state of a generic (ctx->apply) reduction of n operands:
 * two sets of scalars, flipped after each step because the outputs of one
 * apply must not alias its arguments. */
typedef struct {
  int n;
  int cur;
  ts_elem_t acc_elem[MAX_VARIADIC];
  _Alignas(16) unsigned char buf[2][MAX_VARIADIC][MAX_ELEM_BYTES];
  _Alignas(16) unsigned char conv[2 * MAX_VARIADIC][MAX_ELEM_BYTES]; /* param_view's */
} accum_t;

static void accum_init(accum_t *s, const ts_array_t *init) {
  s->cur = 0;
  for (int k = 0; k < s->n; k++) ts_elem_convert(init[k].elem, init[k].data, s->acc_elem[k], s->buf[0][k], 1);
}

/* acc = comp(acc..., x_0[i], ..., x_n-1[i]). */
static ts_status_t accum_step(ts_kernel_ctx_t *ctx, const ts_hlo_comp_t *comp, accum_t *s, const ts_array_t *x,
                              int64_t i) {
  ts_array_t args[2 * MAX_VARIADIC], outs[MAX_VARIADIC];
  for (int k = 0; k < s->n; k++) {
    args[k] = param_view(comp, k, s->acc_elem[k], s->buf[s->cur][k], 0, s->conv[k]);
    args[s->n + k] = param_view(comp, s->n + k, x[k].elem, x[k].data, i, s->conv[s->n + k]);
    outs[k] = elem_view(s->acc_elem[k], s->buf[!s->cur][k], 0);
  }
  TS_CHECK(ctx->apply(ctx, comp, args, 2 * s->n, outs, s->n));
  s->cur = !s->cur;
  return TS_OK;
}

static void accum_store(const accum_t *s, ts_array_t *out, int64_t o) {
  for (int k = 0; k < s->n; k++) {
    size_t sz = (size_t)ts_elem_storage_bytes(s->acc_elem[k]);
    memcpy((char *)out[k].data + (size_t)o * sz, s->buf[s->cur][k], sz);
  }
}

static ts_status_t accum_setup(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, accum_t *s, int n,
                               const ts_array_t *in, const ts_array_t *out) {
  if (n > MAX_VARIADIC)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "more than %d reduced operands (%d)", MAX_VARIADIC,
                          n);
  s->n = n;
  for (int k = 0; k < n; k++) {
    s->acc_elem[k] = out[k].elem;
    if (!ts_elem_is_array(out[k].elem) || !ts_elem_is_array(in[n + k].elem))
      return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "result %d is not an array", k);
  }
  return TS_OK;
}

/* Whether a reduction runs on the typed fast path: one operand, a reducer
 * that is one op, init and result of one type. A float operand of another
 * float type (an f32 reducer over bf16 data, which the verifier allows) is
 * converted to it first. */
static bool fast_path(ts_opcode_t op, int n, const ts_array_t *in, const ts_array_t *out) {
  if (n != 1) return false;
  ts_elem_t e = out[0].elem, x = in[0].elem;
  return fast_ok(op, e) && in[1].elem == e && (x == e || (ts_elem_is_float(x) && ts_elem_is_float(e)));
}

/* ---- reduce ------------------------------------------------------------- */

void ts_reduce_groups(int rank, const int64_t *dims, const ts_i64_list_t *reduced, ts_reduce_groups_t *g) {
  bool red[TS_MAX_RANK] = {false};
  for (int k = 0; k < reduced->n; k++) red[reduced->v[k]] = true;
  g->n = 0;
  for (int d = 0; d < rank; d++) {
    if (dims[d] == 1) continue;
    if (g->n > 0 && g->red[g->n - 1] == red[d]) {
      g->dim[g->n - 1] *= dims[d];
    } else {
      g->dim[g->n] = dims[d];
      g->red[g->n++] = red[d];
    }
  }
  if (g->n == 0) { /* one element: combine it into the one output */
    g->dim[0] = 1;
    g->red[0] = false;
    g->n = 1;
  }
  int64_t si = 1, so = 1;
  for (int d = g->n - 1; d >= 0; d--) {
    g->in_stride[d] = si;
    si *= g->dim[d];
    g->out_stride[d] = g->red[d] ? 0 : so;
    if (!g->red[d]) so *= g->dim[d];
  }
}

/* One reducer op over same-typed operand, init and result. */
static void reduce_fast(ts_opcode_t op, const ts_array_t *x, const ts_array_t *init, ts_array_t *out,
                        const ts_i64_list_t *dims) {
  ts_elem_t e = x->elem;
  fill(e, out->data, ts_array_count(out), init->data);
  if (ts_array_count(x) == 0) return;
  ts_reduce_groups_t g;
  ts_reduce_groups(x->rank, x->dims, dims, &g);
  int last = g.n - 1;
  int64_t inner = g.dim[last];
  int64_t idx[TS_MAX_RANK] = {0};
  int64_t ii = 0, oi = 0;
  for (;;) {
    if (g.red[last])
      block_any(op, e, x->data, ii, inner, out->data, oi);
    else
      rows_any(op, e, x->data, ii, inner, out->data, oi);
    int d = last - 1;
    for (; d >= 0; d--) {
      ii += g.in_stride[d];
      oi += g.out_stride[d];
      if (++idx[d] < g.dim[d]) break;
      ii -= g.in_stride[d] * g.dim[d];
      oi -= g.out_stride[d] * g.dim[d];
      idx[d] = 0;
    }
    if (d < 0) break;
  }
}

/* Any reducer, through ctx->apply: for each result element in row-major
 * order, the init values then the reduced elements in row-major order. */
static ts_status_t reduce_apply(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_hlo_comp_t *comp,
                                int n, const ts_array_t *in, ts_array_t *out, const ts_i64_list_t *dims) {
  accum_t s;
  TS_CHECK(accum_setup(ctx, instr, &s, n, in, out));
  const ts_array_t *x = &in[0];
  bool red[TS_MAX_RANK] = {false};
  for (int k = 0; k < dims->n; k++) red[dims->v[k]] = true;
  int64_t stride[TS_MAX_RANK];
  ts_strides(x->rank, x->dims, stride);
  /* kept dims (k*) and reduced dims (r*) of the operand */
  int nk = 0, nr = 0;
  int64_t kdim[TS_MAX_RANK], kstr[TS_MAX_RANK], rdim[TS_MAX_RANK], rstr[TS_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    if (red[d])
      rdim[nr] = x->dims[d], rstr[nr++] = stride[d];
    else
      kdim[nk] = x->dims[d], kstr[nk++] = stride[d];
  }
  int64_t nout = ts_array_count(out), nred = 1;
  for (int d = 0; d < nr; d++) nred *= rdim[d];
  int64_t kidx[TS_MAX_RANK] = {0};
  for (int64_t o = 0; o < nout; o++) {
    int64_t base = 0;
    for (int d = 0; d < nk; d++) base += kidx[d] * kstr[d];
    accum_init(&s, in + n);
    int64_t ridx[TS_MAX_RANK] = {0};
    for (int64_t r = 0; r < nred; r++) {
      int64_t off = base;
      for (int d = 0; d < nr; d++) off += ridx[d] * rstr[d];
      TS_CHECK(accum_step(ctx, comp, &s, in, off));
      ts_index_next(nr, rdim, ridx);
    }
    accum_store(&s, out, o);
    ts_index_next(nk, kdim, kidx);
  }
  return TS_OK;
}

static ts_status_t k_reduce(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                            ts_array_t *out, int nout) {
  int n = nin / 2;
  const ts_hlo_attr_t *da = ts_hlo_instr_attr(instr, "dimensions");
  const ts_hlo_comp_t *comp = comp_attr(instr, "to_apply");
  if (!da || da->kind != TS_ATTR_INT_LIST || !comp || nout != n)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "needs dimensions= and to_apply=");
  ts_opcode_t op = n == 1 ? ts_reducer_op(comp) : TS_OP_COUNT;
  if (!fast_path(op, n, in, out)) return reduce_apply(ctx, instr, comp, n, in, out, &da->v.list);
  ts_array_t x = in[0];
  if (x.elem != out[0].elem) {
    x.elem = out[0].elem;
    if (!(x.data = ts_kernel_scratch(ctx, ts_array_bytes(&x) + 1)))
      return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory converting the operand");
    ts_elem_convert(in[0].elem, in[0].data, x.elem, x.data, ts_array_count(&x));
  }
  reduce_fast(op, &x, &in[1], &out[0], &da->v.list);
  return TS_OK;
}

/* ---- windows ------------------------------------------------------------ */

/* Per window dimension d and output position o, the operand offsets
 * (coordinate * stride) the window covers, in window order, with padding and
 * base-dilation holes left out: XLA combines only in-bounds elements into
 * the init value (for an identity init the same as padding with it). */
typedef struct {
  int rank;
  int64_t size[TS_MAX_RANK];
  int64_t *cnt[TS_MAX_RANK]; /* [output position] */
  int64_t *tap[TS_MAX_RANK]; /* [output position][size] */
} taps_t;

/* int64s taps_build needs for `rank` window dims over output dims `odims`. */
static size_t taps_words(const ts_window_t *w, int rank, const int64_t *odims) {
  size_t n = 2;
  for (int d = 0; d < rank; d++) n += (size_t)odims[d] * (size_t)(w->dims[d].size + 1);
  return n;
}

/* A rank-0 operand is treated as one element under a 1-wide window. */
static void taps_build(taps_t *t, const ts_window_t *w, const ts_array_t *x, const int64_t *odims, int64_t *buf) {
  if (x->rank == 0) {
    t->rank = 1;
    t->size[0] = 1;
    t->cnt[0] = buf;
    t->tap[0] = buf + 1;
    buf[0] = 1;
    buf[1] = 0;
    return;
  }
  int64_t stride[TS_MAX_RANK];
  ts_strides(x->rank, x->dims, stride);
  t->rank = x->rank;
  for (int d = 0; d < x->rank; d++) {
    const ts_window_dim_t *wd = &w->dims[d];
    t->size[d] = wd->size;
    t->cnt[d] = buf;
    t->tap[d] = buf + odims[d];
    buf += odims[d] * (wd->size + 1);
    for (int64_t o = 0; o < odims[d]; o++) {
      int64_t c = 0, *tap = t->tap[d] + o * wd->size;
      for (int64_t k = 0; k < wd->size; k++) {
        int64_t p = o * wd->stride + k * wd->rhs_dilate - wd->pad_lo;
        if (p < 0 || p % wd->lhs_dilate) continue;
        p /= wd->lhs_dilate;
        if (p < x->dims[d]) tap[c++] = p * stride[d];
      }
      t->cnt[d][o] = c;
    }
  }
}

/* Walks the window of one output position row by row: each row is the list
 * of innermost-dimension offsets `row` (n of them), relative to `base`. */
typedef struct {
  const taps_t *t;
  const int64_t *list[TS_MAX_RANK];
  int64_t cnt[TS_MAX_RANK], j[TS_MAX_RANK];
  int64_t base;
  const int64_t *row;
  int64_t n;
} witer_t;

static void witer_base(witer_t *it) {
  it->base = 0;
  for (int d = 0; d + 1 < it->t->rank; d++) it->base += it->list[d][it->j[d]];
}

/* False when the window holds no operand element. */
static bool witer_start(witer_t *it, const taps_t *t, const int64_t *oidx) {
  it->t = t;
  for (int d = 0; d < t->rank; d++) {
    int64_t o = oidx[d]; /* a rank-0 operand's fake dim reads oidx[0] == 0 */
    it->list[d] = t->tap[d] + o * t->size[d];
    it->cnt[d] = t->cnt[d][o];
    it->j[d] = 0;
    if (it->cnt[d] == 0) return false;
  }
  it->row = it->list[t->rank - 1];
  it->n = it->cnt[t->rank - 1];
  witer_base(it);
  return true;
}

static bool witer_next(witer_t *it) {
  for (int d = it->t->rank - 2; d >= 0; d--) {
    if (++it->j[d] < it->cnt[d]) {
      witer_base(it);
      return true;
    }
    it->j[d] = 0;
  }
  return false;
}

static const ts_window_t *window_attr(const ts_hlo_instr_t *instr) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, "window");
  return a && a->kind == TS_ATTR_WINDOW ? a->v.window : NULL;
}

/* ---- reduce-window ------------------------------------------------------ */

static ts_status_t k_reduce_window(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                                   ts_array_t *out, int nout) {
  int n = nin / 2;
  const ts_window_t *w = window_attr(instr);
  const ts_hlo_comp_t *comp = comp_attr(instr, "to_apply");
  if ((!w && in[0].rank > 0) || !comp || nout != n)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "needs window= and to_apply=");
  const ts_array_t *x = &in[0];
  int64_t nout_elems = ts_array_count(&out[0]);
  if (nout_elems == 0) return TS_OK;
  ts_opcode_t op = n == 1 ? ts_reducer_op(comp) : TS_OP_COUNT;
  ts_elem_t e = out[0].elem;
  bool fast = fast_path(op, n, in, out);

  /* The apply path may run kernels on this ctx, which reuse its scratch. */
  size_t bytes = taps_words(w, x->rank, out[0].dims) * sizeof(int64_t);
  bool convert = fast && x->elem != e;
  size_t xbytes = convert ? (size_t)ts_array_count(x) * (size_t)ts_elem_storage_bytes(e) : 0;
  int64_t *buf = fast ? ts_kernel_scratch(ctx, bytes + xbytes) : ts_malloc(bytes);
  if (!buf) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory for %zu bytes of window taps", bytes);
  taps_t t;
  taps_build(&t, w, x, out[0].dims, buf);
  ts_array_t xc = *x;
  if (convert) {
    xc.elem = e;
    xc.data = (char *)buf + bytes;
    ts_elem_convert(x->elem, x->data, e, xc.data, ts_array_count(x));
    x = &xc;
  }

  ts_status_t st = TS_OK;
  accum_t s;
  if (!fast) TS_CHECK_GOTO(accum_setup(ctx, instr, &s, n, in, out), st, done);
  int64_t oidx[TS_MAX_RANK] = {0};
  for (int64_t o = 0; o < nout_elems; o++) {
    witer_t it;
    if (fast) {
      fill(e, (char *)out[0].data + (size_t)o * (size_t)ts_elem_storage_bytes(e), 1, in[1].data);
      if (witer_start(&it, &t, oidx)) do {
          gather_any(op, e, x->data, it.base, it.row, it.n, out[0].data, o);
        } while (witer_next(&it));
    } else {
      accum_init(&s, in + n);
      if (witer_start(&it, &t, oidx)) do {
          for (int64_t j = 0; j < it.n; j++) TS_CHECK_GOTO(accum_step(ctx, comp, &s, in, it.base + it.row[j]), st, done);
        } while (witer_next(&it));
      accum_store(&s, out, o);
    }
    ts_index_next(out[0].rank, out[0].dims, oidx);
  }
done:
  if (!fast) ts_free(buf);
  return st;
}

/* ---- select-and-scatter ------------------------------------------------- */

enum { SEL_GE, SEL_GT, SEL_LE, SEL_LT, SEL_NONE };

/* A select computation that is one compare of its two parameters with a
 * plain (partial-order) comparison: GE/GT/LE/LT of (param 0, param 1). */
static int select_dir(const ts_hlo_comp_t *c, ts_elem_t e) {
  if (!c || c->nparams != 2 || !c->root || c->root->op != TS_OP_COMPARE || c->root->nops != 2) return SEL_NONE;
  if (ts_elem_is_complex(e) || e == TS_U64) return SEL_NONE;
  const ts_hlo_instr_t *r = c->root;
  bool swapped = r->ops[0] == c->params[1] && r->ops[1] == c->params[0];
  if (!swapped && !(r->ops[0] == c->params[0] && r->ops[1] == c->params[1])) return SEL_NONE;
  const ts_hlo_attr_t *dir = ts_hlo_instr_attr(r, "direction");
  const ts_hlo_attr_t *type = ts_hlo_instr_attr(r, "type");
  if (!dir || dir->kind != TS_ATTR_IDENT) return SEL_NONE;
  if (type && type->kind == TS_ATTR_IDENT && strcmp(type->v.s, "TOTALORDER") == 0) return SEL_NONE;
  static const char *const names[] = {"GE", "GT", "LE", "LT"};
  for (int k = 0; k < 4; k++)
    if (strcmp(dir->v.s, names[k]) == 0) return swapped ? k ^ 2 : k; /* GE<->LE, GT<->LT */
  return SEL_NONE;
}

static bool select_fast(int dir, ts_elem_t e, const void *x, int64_t a, int64_t b) {
  if (ts_elem_is_float(e)) {
    double va = ts_load_f(e, x, a), vb = ts_load_f(e, x, b);
    switch (dir) {
    case SEL_GE: return va >= vb;
    case SEL_GT: return va > vb;
    case SEL_LE: return va <= vb;
    default: return va < vb;
    }
  }
  int64_t va = ts_load_i(e, x, a), vb = ts_load_i(e, x, b);
  switch (dir) {
  case SEL_GE: return va >= vb;
  case SEL_GT: return va > vb;
  case SEL_LE: return va <= vb;
  default: return va < vb;
  }
}

static ts_status_t k_select_and_scatter(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                                        int nin, ts_array_t *out, int nout) {
  const ts_array_t *x = &in[0], *src = &in[1], *init = &in[2];
  const ts_window_t *w = window_attr(instr);
  const ts_hlo_comp_t *sel = comp_attr(instr, "select"), *sc = comp_attr(instr, "scatter");
  if ((!w && x->rank > 0) || !sel || !sc)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "needs window=, select= and scatter=");
  ts_elem_t e = out[0].elem;
  size_t esz = (size_t)ts_elem_storage_bytes(e);
  unsigned char initv[MAX_ELEM_BYTES];
  ts_elem_convert(init->elem, init->data, e, initv, 1);
  fill(e, out[0].data, ts_array_count(&out[0]), initv);
  int64_t nsrc = ts_array_count(src);
  if (nsrc == 0 || ts_array_count(x) == 0) return TS_OK;

  int dir = select_dir(sel, x->elem);
  ts_opcode_t op = ts_reducer_op(sc);
  bool fast_scatter = fast_ok(op, e) && src->elem == e;
  bool fast = dir != SEL_NONE && fast_scatter;
  size_t bytes = taps_words(w, x->rank, src->dims) * sizeof(int64_t);
  int64_t *buf = fast ? ts_kernel_scratch(ctx, bytes) : ts_malloc(bytes);
  if (!buf) return ts_kernel_fail(ctx, instr, TS_ERR_NOMEM, "out of memory for %zu bytes of window taps", bytes);
  taps_t t;
  taps_build(&t, w, x, src->dims, buf);

  ts_status_t st = TS_OK;
  int64_t sidx[TS_MAX_RANK] = {0};
  for (int64_t s = 0; s < nsrc; s++, ts_index_next(src->rank, src->dims, sidx)) {
    witer_t it;
    if (!witer_start(&it, &t, sidx)) continue;
    /* The first element in window order, replaced by each later one the
     * select computation does not prefer it to. */
    int64_t best = -1;
    do {
      for (int64_t j = 0; j < it.n; j++) {
        int64_t cand = it.base + it.row[j];
        if (best < 0) {
          best = cand;
          continue;
        }
        bool keep;
        if (dir != SEL_NONE) {
          keep = select_fast(dir, x->elem, x->data, best, cand);
        } else {
          unsigned char t0[MAX_ELEM_BYTES], t1[MAX_ELEM_BYTES];
          ts_array_t args[2] = {param_view(sel, 0, x->elem, x->data, best, t0),
                                param_view(sel, 1, x->elem, x->data, cand, t1)};
          uint8_t pred = 0;
          ts_array_t res = elem_view(TS_PRED, &pred, 0);
          TS_CHECK_GOTO(ctx->apply(ctx, sel, args, 2, &res, 1), st, done);
          keep = pred != 0;
        }
        if (!keep) best = cand;
      }
    } while (witer_next(&it));
    if (fast_scatter) {
      combine_one(op, e, out[0].data, best, src->data, s);
    } else {
      unsigned char tmp[MAX_ELEM_BYTES], t0[MAX_ELEM_BYTES], t1[MAX_ELEM_BYTES];
      ts_array_t args[2] = {param_view(sc, 0, e, out[0].data, best, t0), param_view(sc, 1, src->elem, src->data, s, t1)};
      ts_array_t res = elem_view(e, tmp, 0);
      TS_CHECK_GOTO(ctx->apply(ctx, sc, args, 2, &res, 1), st, done);
      memcpy((char *)out[0].data + (size_t)best * esz, tmp, esz);
    }
  }
done:
  if (!fast) ts_free(buf);
  return st;
}

void ts_kernels_reduce(ts_kernel_fn *table) {
  table[TS_OP_REDUCE] = k_reduce;
  table[TS_OP_REDUCE_WINDOW] = k_reduce_window;
  table[TS_OP_SELECT_AND_SCATTER] = k_select_and_scatter;
}
