/* Kernels: elementwise ops (unary and binary arithmetic, compare, select,
 * clamp, convert, bitcast-convert, bitcast, reduce-precision, iota, map,
 * stochastic-convert) with XLA's semantics (operation_semantics.md).
 *
 * How each element class computes: f32 and f64 run one tight loop per op
 * over the data (the op is switched on once per call, never per element);
 * the other real floats (bf16, f16, f8, f6, f4) are widened to f32 in chunks,
 * computed by the same f32 loops and rounded once to their type, as XLA's CPU
 * backend does; integers and pred compute in 64 bits in chunks and wrap to
 * their width when stored (s32 has direct loops for the common ops); complex
 * computes in double complex. */
#include "kernels_internal.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* GCC's -O2 vectorizes only loops that need no scalar epilogue; these loops
 * are the runtime's hot path. None reads errno. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "no-math-errno", "no-trapping-math")
#endif

enum { CHUNK = 512 }; /* elements per chunk on the widened paths */

#define FOR(body)                                                                                  \
  for (int64_t i = 0; i < n; i++) {                                                                \
    body;                                                                                          \
  }

static size_t esz(ts_elem_t t) { return (size_t)ts_elem_storage_bytes(t); }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static ts_status_t unsupported(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, ts_elem_t t) {
  return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "%s is not supported for %s operands",
                        ts_opcode_name(instr->op), ts_elem_name(t));
}

/* ---- chunked element access --------------------------------------------- */

/* n elements from element `off` of a real float array, as f32 (exact for
 * every real float type but f64). */
static void load_f32(ts_elem_t t, const void *src, int64_t off, int64_t n, float *restrict dst) {
  if (t == TS_F32) {
    memcpy(dst, (const float *)src + off, (size_t)n * sizeof(float));
  } else if (t == TS_BF16) {
    const uint16_t *s = (const uint16_t *)src + off;
    for (int64_t i = 0; i < n; i++) {
      uint32_t b = (uint32_t)s[i] << 16;
      memcpy(&dst[i], &b, 4);
    }
  } else {
    ts_elem_convert(t, (const char *)src + (size_t)off * esz(t), TS_F32, dst, n);
  }
}

/* Rounds n f32 values once (to nearest even) into elements off.. of dst. */
static void store_f32(ts_elem_t t, const float *restrict src, void *dst, int64_t off, int64_t n) {
  if (t == TS_F32) {
    memcpy((float *)dst + off, src, (size_t)n * sizeof(float));
  } else if (t == TS_BF16) {
    uint16_t *d = (uint16_t *)dst + off;
    for (int64_t i = 0; i < n; i++) {
      uint32_t b;
      memcpy(&b, &src[i], 4);
      d[i] = (b & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((b >> 16) | 0x40) /* quiet NaN */
                                              : (uint16_t)((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
    }
  } else {
    ts_elem_convert(TS_F32, src, t, (char *)dst + (size_t)off * esz(t), n);
  }
}

/* n integer or pred elements as int64: signed types sign-extended, unsigned
 * ones zero-extended (u64 as its bit pattern). */
static void load_i64(ts_elem_t t, const void *src, int64_t off, int64_t n, int64_t *restrict dst) {
#define LOAD(T)                                                                                    \
  do {                                                                                             \
    const T *s = (const T *)src + off;                                                             \
    FOR(dst[i] = (int64_t)s[i]);                                                                   \
  } while (0)
  switch (t) {
  case TS_S8: LOAD(int8_t); break;
  case TS_U8: case TS_PRED: LOAD(uint8_t); break;
  case TS_S16: LOAD(int16_t); break;
  case TS_U16: LOAD(uint16_t); break;
  case TS_S32: LOAD(int32_t); break;
  case TS_U32: LOAD(uint32_t); break;
  case TS_S64: case TS_U64: memcpy(dst, (const int64_t *)src + off, (size_t)n * 8); break;
  default: ts_elem_convert(t, (const char *)src + (size_t)off * esz(t), TS_S64, dst, n); break;
  }
#undef LOAD
}

/* Stores int64 values wrapped to the type's width (pred: != 0). */
static void store_i64(ts_elem_t t, const int64_t *restrict src, void *dst, int64_t off, int64_t n) {
#define STORE(T)                                                                                   \
  do {                                                                                             \
    T *d = (T *)dst + off;                                                                         \
    FOR(d[i] = (T)(uint64_t)src[i]);                                                               \
  } while (0)
  switch (t) {
  case TS_S8: case TS_U8: STORE(uint8_t); break;
  case TS_PRED: {
    uint8_t *d = (uint8_t *)dst + off;
    FOR(d[i] = src[i] != 0);
    break;
  }
  case TS_S16: case TS_U16: STORE(uint16_t); break;
  case TS_S32: case TS_U32: STORE(uint32_t); break;
  case TS_S64: case TS_U64: memcpy((int64_t *)dst + off, src, (size_t)n * 8); break;
  default: ts_elem_convert(TS_S64, src, t, (char *)dst + (size_t)off * esz(t), n); break;
  }
#undef STORE
}

static inline int64_t sext(int64_t v, int bits) {
  return bits >= 64 ? v : (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits);
}
static inline uint64_t zext(int64_t v, int bits) {
  return bits >= 64 ? (uint64_t)v : (uint64_t)v & ((UINT64_C(1) << bits) - 1);
}

/* ---- real floats -------------------------------------------------------- */

#define F32FN(fn) fn##f
#define F64FN(fn) fn

/* XLA's maximum/minimum (llvm.maximum/minimum): NaN if either is NaN, and
 * -0 < +0. Written as selects so that the loops vectorize. */
#define DEF_MINMAX(T, S)                                                                           \
  static inline T max_##S(T x, T y) { return x > y ? x : y > x ? y : x == y && x != 0 ? x : x + y; } \
  static inline T min_##S(T x, T y) {                                                              \
    return x < y ? x : y < x ? y : x == y && x != 0 ? x : -(-x + -y);                              \
  }
DEF_MINMAX(float, f32)
DEF_MINMAX(double, f64)

/* y = op(x); false (before touching anything) when op is not a real unary
 * op, so a call with n == 0 asks whether op is supported. */
#define DEF_UNARY(NAME, T, F)                                                                      \
  static bool NAME(ts_opcode_t op, const T *restrict x, T *restrict y, int64_t n) {                \
    switch (op) {                                                                                  \
    case TS_OP_ABS: FOR(y[i] = F(fabs)(x[i])) return true;                                         \
    case TS_OP_NEGATE: FOR(y[i] = -x[i]) return true;                                              \
    case TS_OP_SIGN: FOR(y[i] = x[i] > 0 ? (T)1 : x[i] < 0 ? (T)-1 : x[i]) return true;            \
    case TS_OP_FLOOR: FOR(y[i] = F(floor)(x[i])) return true;                                      \
    case TS_OP_CEIL: FOR(y[i] = F(ceil)(x[i])) return true;                                        \
    case TS_OP_ROUND_NEAREST_AFZ: FOR(y[i] = F(round)(x[i])) return true;                          \
    case TS_OP_ROUND_NEAREST_EVEN: FOR(y[i] = F(rint)(x[i])) return true;                          \
    case TS_OP_SQRT: FOR(y[i] = F(sqrt)(x[i])) return true;                                        \
    case TS_OP_RSQRT: FOR(y[i] = (T)1 / F(sqrt)(x[i])) return true;                                \
    case TS_OP_CBRT: FOR(y[i] = F(cbrt)(x[i])) return true;                                        \
    case TS_OP_EXPONENTIAL: FOR(y[i] = F(exp)(x[i])) return true;                                  \
    case TS_OP_EXPONENTIAL_MINUS_ONE: FOR(y[i] = F(expm1)(x[i])) return true;                      \
    case TS_OP_LOG: FOR(y[i] = F(log)(x[i])) return true;                                          \
    case TS_OP_LOG_PLUS_ONE: FOR(y[i] = F(log1p)(x[i])) return true;                               \
    case TS_OP_LOGISTIC: FOR(y[i] = (T)1 / ((T)1 + F(exp)(-x[i]))) return true;                   \
    case TS_OP_SINE: FOR(y[i] = F(sin)(x[i])) return true;                                         \
    case TS_OP_COSINE: FOR(y[i] = F(cos)(x[i])) return true;                                       \
    case TS_OP_TAN: FOR(y[i] = F(tan)(x[i])) return true;                                          \
    case TS_OP_TANH: FOR(y[i] = F(tanh)(x[i])) return true;                                        \
    case TS_OP_ATAN: FOR(y[i] = F(atan)(x[i])) return true;                                        \
    case TS_OP_SINH: FOR(y[i] = F(sinh)(x[i])) return true;                                        \
    case TS_OP_COSH: FOR(y[i] = F(cosh)(x[i])) return true;                                        \
    case TS_OP_ASIN: FOR(y[i] = F(asin)(x[i])) return true;                                        \
    case TS_OP_ACOS: FOR(y[i] = F(acos)(x[i])) return true;                                        \
    case TS_OP_ASINH: FOR(y[i] = F(asinh)(x[i])) return true;                                      \
    case TS_OP_ACOSH: FOR(y[i] = F(acosh)(x[i])) return true;                                      \
    case TS_OP_ATANH: FOR(y[i] = F(atanh)(x[i])) return true;                                      \
    case TS_OP_ERF: FOR(y[i] = F(erf)(x[i])) return true;                                          \
    case TS_OP_REAL: FOR(y[i] = x[i]) return true;                                                 \
    case TS_OP_IMAG: FOR(y[i] = 0) return true; /* a real number's imaginary part */               \
    default: return false;                                                                         \
    }                                                                                              \
  }
DEF_UNARY(unary_f32, float, F32FN)
DEF_UNARY(unary_f64, double, F64FN)

/* o = a op b; false when op is not a real binary op (as DEF_UNARY). */
#define DEF_BINARY(NAME, T, F, S)                                                                  \
  static bool NAME(ts_opcode_t op, const T *restrict a, const T *restrict b, T *restrict o,         \
                   int64_t n) {                                                                    \
    switch (op) {                                                                                  \
    case TS_OP_ADD: FOR(o[i] = a[i] + b[i]) return true;                                           \
    case TS_OP_SUBTRACT: FOR(o[i] = a[i] - b[i]) return true;                                      \
    case TS_OP_MULTIPLY: FOR(o[i] = a[i] * b[i]) return true;                                      \
    case TS_OP_DIVIDE: FOR(o[i] = a[i] / b[i]) return true;                                        \
    case TS_OP_REMAINDER: FOR(o[i] = F(fmod)(a[i], b[i])) return true;                             \
    case TS_OP_POWER: FOR(o[i] = F(pow)(a[i], b[i])) return true;                                  \
    case TS_OP_ATAN2: FOR(o[i] = F(atan2)(a[i], b[i])) return true;                                \
    case TS_OP_MAXIMUM: FOR(o[i] = max_##S(a[i], b[i])) return true;                               \
    case TS_OP_MINIMUM: FOR(o[i] = min_##S(a[i], b[i])) return true;                               \
    default: return false;                                                                         \
    }                                                                                              \
  }
DEF_BINARY(binary_f32, float, F32FN, f32)
DEF_BINARY(binary_f64, double, F64FN, f64)

/* ---- integers (and pred) in 64 bits -------------------------------------- */
/* Values arrive sign- or zero-extended from `bits`; results may carry high
 * garbage, which the store's wrap drops. */

/* XLA's integer division (its elemental emitter): x / 0 = -1 (all ones, so
 * UINT_MAX for unsigned), INT_MIN / -1 = INT_MIN; x % 0 = x, INT_MIN % -1 = 0. */
static inline int64_t sdiv(int64_t a, int64_t b) {
  return b == 0 ? -1 : b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
}
static inline int64_t srem(int64_t a, int64_t b) { return b == 0 ? a : b == -1 ? 0 : a % b; }
static inline int64_t udiv(int64_t a, int64_t b) { return b == 0 ? -1 : (int64_t)((uint64_t)a / (uint64_t)b); }
static inline int64_t urem(int64_t a, int64_t b) { return b == 0 ? a : (int64_t)((uint64_t)a % (uint64_t)b); }

/* Integer power as XLA's emitter: a negative (signed) exponent gives 1 for
 * base 1 and 0 otherwise; otherwise exact modulo 2^64 (so modulo the width). */
static int64_t ipow(int64_t base, int64_t e, bool sgn) {
  if (sgn && e < 0) return base == 1;
  uint64_t r = 1, x = (uint64_t)base, k = (uint64_t)e;
  while (k) {
    if (k & 1) r *= x;
    x *= x;
    k >>= 1;
  }
  return (int64_t)r;
}

static uint64_t umulhi64(uint64_t a, uint64_t b) {
  uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* The high `bits` bits of the 2*bits-bit product. */
static inline int64_t mulhi(int64_t a, int64_t b, int bits, bool sgn) {
  if (bits < 64) {
    if (sgn) return (a * b) >> bits; /* |a*b| < 2^62 for bits <= 32 */
    return (int64_t)(((uint64_t)a * (uint64_t)b) >> bits);
  }
  uint64_t h = umulhi64((uint64_t)a, (uint64_t)b);
  if (sgn) h -= (a < 0 ? (uint64_t)b : 0) + (b < 0 ? (uint64_t)a : 0);
  return (int64_t)h;
}

static bool unary_int(ts_opcode_t op, const int64_t *restrict x, int64_t *restrict y, int64_t n, int bits,
                      bool sgn, bool pred) {
  switch (op) {
  case TS_OP_ABS:
    if (sgn) FOR(y[i] = x[i] < 0 ? (int64_t)(0 - (uint64_t)x[i]) : x[i]) else FOR(y[i] = x[i])
    return true;
  case TS_OP_NEGATE: FOR(y[i] = (int64_t)(0 - (uint64_t)x[i])) return true;
  case TS_OP_SIGN:
    if (sgn) FOR(y[i] = (x[i] > 0) - (x[i] < 0)) else FOR(y[i] = x[i] != 0)
    return true;
  case TS_OP_NOT:
    if (pred) FOR(y[i] = !x[i]) else FOR(y[i] = ~x[i])
    return true;
  case TS_OP_POPCNT: FOR(y[i] = __builtin_popcountll(zext(x[i], bits))) return true;
  case TS_OP_COUNT_LEADING_ZEROS: {
    FOR(uint64_t v = zext(x[i], bits); y[i] = v ? __builtin_clzll(v) - (64 - bits) : bits)
    return true;
  }
  default: return false;
  }
}

static bool binary_int(ts_opcode_t op, const int64_t *restrict a, const int64_t *restrict b, int64_t *restrict o,
                       int64_t n, int bits, bool sgn) {
  switch (op) {
  case TS_OP_ADD: FOR(o[i] = (int64_t)((uint64_t)a[i] + (uint64_t)b[i])) return true;
  case TS_OP_SUBTRACT: FOR(o[i] = (int64_t)((uint64_t)a[i] - (uint64_t)b[i])) return true;
  case TS_OP_MULTIPLY: FOR(o[i] = (int64_t)((uint64_t)a[i] * (uint64_t)b[i])) return true;
  case TS_OP_DIVIDE:
    if (sgn) FOR(o[i] = sdiv(a[i], b[i])) else FOR(o[i] = udiv(a[i], b[i]))
    return true;
  case TS_OP_REMAINDER:
    if (sgn) FOR(o[i] = srem(a[i], b[i])) else FOR(o[i] = urem(a[i], b[i]))
    return true;
  case TS_OP_POWER: FOR(o[i] = ipow(a[i], b[i], sgn)) return true;
  case TS_OP_MAXIMUM:
    if (sgn) FOR(o[i] = a[i] > b[i] ? a[i] : b[i]) else FOR(o[i] = (uint64_t)a[i] > (uint64_t)b[i] ? a[i] : b[i])
    return true;
  case TS_OP_MINIMUM:
    if (sgn) FOR(o[i] = a[i] < b[i] ? a[i] : b[i]) else FOR(o[i] = (uint64_t)a[i] < (uint64_t)b[i] ? a[i] : b[i])
    return true;
  case TS_OP_AND: FOR(o[i] = a[i] & b[i]) return true;
  case TS_OP_OR: FOR(o[i] = a[i] | b[i]) return true;
  case TS_OP_XOR: FOR(o[i] = a[i] ^ b[i]) return true;
  /* Shift amounts are unsigned in the type's width; XLA gives 0 (logical)
   * or the sign fill (arithmetic) for amounts >= the width, negative
   * amounts included. Arithmetic shifts use the bit pattern's top bit,
   * whatever the type's signedness. */
  case TS_OP_SHIFT_LEFT: {
    FOR(uint64_t s = zext(b[i], bits); o[i] = s >= (uint64_t)bits ? 0 : (int64_t)((uint64_t)a[i] << s))
    return true;
  }
  case TS_OP_SHIFT_RIGHT_LOGICAL: {
    FOR(uint64_t s = zext(b[i], bits); o[i] = s >= (uint64_t)bits ? 0 : (int64_t)(zext(a[i], bits) >> s))
    return true;
  }
  case TS_OP_SHIFT_RIGHT_ARITHMETIC: {
    FOR(uint64_t s = zext(b[i], bits); int64_t v = sext(a[i], bits);
        o[i] = s >= (uint64_t)bits ? (v < 0 ? -1 : 0) : v >> s)
    return true;
  }
  case TS_OP_MULHI: FOR(o[i] = mulhi(a[i], b[i], bits, sgn)) return true;
  default: return false;
  }
}

/* s32's common ops without the widening; false for the others. */
static bool binary_s32(ts_opcode_t op, const int32_t *restrict a, const int32_t *restrict b, int32_t *restrict o,
                       int64_t n) {
  switch (op) {
  case TS_OP_ADD: FOR(o[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i])) return true;
  case TS_OP_SUBTRACT: FOR(o[i] = (int32_t)((uint32_t)a[i] - (uint32_t)b[i])) return true;
  case TS_OP_MULTIPLY: FOR(o[i] = (int32_t)((uint32_t)a[i] * (uint32_t)b[i])) return true;
  case TS_OP_MAXIMUM: FOR(o[i] = a[i] > b[i] ? a[i] : b[i]) return true;
  case TS_OP_MINIMUM: FOR(o[i] = a[i] < b[i] ? a[i] : b[i]) return true;
  case TS_OP_AND: FOR(o[i] = a[i] & b[i]) return true;
  case TS_OP_OR: FOR(o[i] = a[i] | b[i]) return true;
  case TS_OP_XOR: FOR(o[i] = a[i] ^ b[i]) return true;
  default: return false;
  }
}

/* ---- complex -------------------------------------------------------------- */

/* re + im*i without arithmetic (which would turn an infinite part into NaNs).
 * CMPLX is C11 but clang's headers lack it; C11 6.2.5p13 lays a complex out
 * as double[2], so a union builds it portably. */
static double complex cplx(double re, double im) {
  union {
    double d[2];
    double complex z;
  } u = {.d = {re, im}};
  return u.z;
}

static bool complex_unary_ok(ts_opcode_t op) {
  switch (op) {
  case TS_OP_ABS: case TS_OP_NEGATE: case TS_OP_SIGN: case TS_OP_SQRT: case TS_OP_RSQRT:
  case TS_OP_EXPONENTIAL: case TS_OP_EXPONENTIAL_MINUS_ONE: case TS_OP_LOG: case TS_OP_LOG_PLUS_ONE:
  case TS_OP_LOGISTIC: case TS_OP_SINE: case TS_OP_COSINE: case TS_OP_TAN: case TS_OP_TANH:
  case TS_OP_ATAN: case TS_OP_SINH: case TS_OP_COSH: case TS_OP_ASIN: case TS_OP_ACOS:
  case TS_OP_ASINH: case TS_OP_ACOSH: case TS_OP_ATANH: case TS_OP_REAL: case TS_OP_IMAG:
    return true;
  default: return false;
  }
}

static double complex complex_unary1(ts_opcode_t op, double complex z) {
  double re = creal(z), im = cimag(z);
  switch (op) {
  case TS_OP_ABS: return cabs(z);
  case TS_OP_NEGATE: return -z;
  case TS_OP_SIGN: return re == 0 && im == 0 ? z : z / cabs(z);
  case TS_OP_SQRT: return csqrt(z);
  case TS_OP_RSQRT: return 1 / csqrt(z);
  case TS_OP_EXPONENTIAL: return cexp(z);
  case TS_OP_EXPONENTIAL_MINUS_ONE: { /* exp(re)cos(im) - 1 without the cancellation */
    double s = sin(im / 2);
    return cplx(expm1(re) * cos(im) - 2 * s * s, exp(re) * sin(im));
  }
  case TS_OP_LOG: return clog(z);
  case TS_OP_LOG_PLUS_ONE: /* log|1+z| = log1p(2re + re^2 + im^2) / 2 */
    return cplx(0.5 * log1p(re * (2 + re) + im * im), atan2(im, 1 + re));
  case TS_OP_LOGISTIC: return 1 / (1 + cexp(-z));
  case TS_OP_SINE: return csin(z);
  case TS_OP_COSINE: return ccos(z);
  case TS_OP_TAN: return ctan(z);
  case TS_OP_TANH: return ctanh(z);
  case TS_OP_ATAN: return catan(z);
  case TS_OP_SINH: return csinh(z);
  case TS_OP_COSH: return ccosh(z);
  case TS_OP_ASIN: return casin(z);
  case TS_OP_ACOS: return cacos(z);
  case TS_OP_ASINH: return casinh(z);
  case TS_OP_ACOSH: return cacosh(z);
  case TS_OP_ATANH: return catanh(z);
  case TS_OP_REAL: return re;
  case TS_OP_IMAG: return im;
  default: return NAN;
  }
}

/* Complex operands; the result is complex, or real for abs/real/imag. */
static ts_status_t complex_unary(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *x,
                                 ts_array_t *y) {
  if (!complex_unary_ok(instr->op)) return unsupported(ctx, instr, x->elem);
  int64_t n = ts_array_count(x);
  bool cout = ts_elem_is_complex(y->elem);
  for (int64_t i = 0; i < n; i++) {
    double re, im;
    ts_load_c(x->elem, x->data, i, &re, &im);
    double complex r = complex_unary1(instr->op, cplx(re, im));
    if (cout)
      ts_store_c(y->elem, y->data, i, creal(r), cimag(r));
    else
      ts_store_f(y->elem, y->data, i, creal(r));
  }
  return TS_OK;
}

static ts_status_t complex_binary(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *a,
                                  const ts_array_t *b, ts_array_t *o) {
  ts_opcode_t op = instr->op;
  if (op != TS_OP_ADD && op != TS_OP_SUBTRACT && op != TS_OP_MULTIPLY && op != TS_OP_DIVIDE && op != TS_OP_POWER)
    return unsupported(ctx, instr, a->elem);
  int64_t n = ts_array_count(a);
  for (int64_t i = 0; i < n; i++) {
    double ar, ai, br, bi;
    ts_load_c(a->elem, a->data, i, &ar, &ai);
    ts_load_c(b->elem, b->data, i, &br, &bi);
    double complex x = cplx(ar, ai), y = cplx(br, bi), r;
    switch (op) {
    case TS_OP_ADD: r = x + y; break;
    case TS_OP_SUBTRACT: r = x - y; break;
    case TS_OP_MULTIPLY: r = x * y; break;
    case TS_OP_DIVIDE: r = x / y; break;
    default: r = cpow(x, y); break;
    }
    ts_store_c(o->elem, o->data, i, creal(r), cimag(r));
  }
  return TS_OK;
}

/* ---- unary and binary kernels --------------------------------------------- */

static ts_status_t is_finite(const ts_array_t *x, uint8_t *restrict o) {
  int64_t n = ts_array_count(x);
  if (x->elem == TS_F64) {
    const uint64_t *b = x->data;
    FOR(o[i] = (b[i] & UINT64_C(0x7ff0000000000000)) != UINT64_C(0x7ff0000000000000))
    return TS_OK;
  }
  float buf[CHUNK];
  for (int64_t off = 0; off < n; off += CHUNK) {
    int64_t m = min64(CHUNK, n - off);
    const float *v = buf;
    if (x->elem == TS_F32)
      v = (const float *)x->data + off;
    else
      load_f32(x->elem, x->data, off, m, buf);
    for (int64_t i = 0; i < m; i++) o[off + i] = isfinite(v[i]) != 0;
  }
  return TS_OK;
}

static ts_status_t k_unary(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                           ts_array_t *out, int nout) {
  ts_opcode_t op = instr->op;
  ts_elem_t t = in[0].elem, rt = out[0].elem;
  int64_t n = ts_array_count(&in[0]);
  const void *x = in[0].data;
  void *y = out[0].data;
  if (ts_elem_is_complex(t)) return complex_unary(ctx, instr, &in[0], &out[0]);
  if (op == TS_OP_IS_FINITE) {
    if (!ts_elem_is_float(t)) return unsupported(ctx, instr, t);
    return is_finite(&in[0], y);
  }
  if (t == TS_F64) {
    if (!unary_f64(op, NULL, NULL, 0)) return unsupported(ctx, instr, t);
    unary_f64(op, x, y, n);
    return TS_OK;
  }
  if (ts_elem_is_float(t)) {
    if (!unary_f32(op, NULL, NULL, 0)) return unsupported(ctx, instr, t);
    if (t == TS_F32 && rt == TS_F32) {
      unary_f32(op, x, y, n);
      return TS_OK;
    }
    float a[CHUNK], b[CHUNK];
    for (int64_t off = 0; off < n; off += CHUNK) {
      int64_t m = min64(CHUNK, n - off);
      load_f32(t, x, off, m, a);
      unary_f32(op, a, b, m);
      store_f32(rt, b, y, off, m);
    }
    return TS_OK;
  }
  int bits = ts_elem_bits(t);
  bool sgn = ts_elem_is_signed_int(t), pred = t == TS_PRED;
  if (!ts_elem_is_int(t) || !unary_int(op, NULL, NULL, 0, bits, sgn, pred)) return unsupported(ctx, instr, t);
  int64_t a[CHUNK], b[CHUNK];
  for (int64_t off = 0; off < n; off += CHUNK) {
    int64_t m = min64(CHUNK, n - off);
    load_i64(t, x, off, m, a);
    unary_int(op, a, b, m, bits, sgn, pred);
    store_i64(rt, b, y, off, m);
  }
  return TS_OK;
}

static ts_status_t k_binary(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                            ts_array_t *out, int nout) {
  ts_opcode_t op = instr->op;
  ts_elem_t t = in[0].elem, rt = out[0].elem;
  int64_t n = ts_array_count(&in[0]);
  const void *a = in[0].data, *b = in[1].data;
  void *o = out[0].data;
  if (ts_elem_is_complex(t)) return complex_binary(ctx, instr, &in[0], &in[1], &out[0]);
  if (t == TS_F64) {
    if (!binary_f64(op, NULL, NULL, NULL, 0)) return unsupported(ctx, instr, t);
    binary_f64(op, a, b, o, n);
    return TS_OK;
  }
  if (ts_elem_is_float(t)) {
    if (!binary_f32(op, NULL, NULL, NULL, 0)) return unsupported(ctx, instr, t);
    if (t == TS_F32) {
      binary_f32(op, a, b, o, n);
      return TS_OK;
    }
    float x[CHUNK], y[CHUNK], r[CHUNK];
    for (int64_t off = 0; off < n; off += CHUNK) {
      int64_t m = min64(CHUNK, n - off);
      load_f32(t, a, off, m, x);
      load_f32(t, b, off, m, y);
      binary_f32(op, x, y, r, m);
      store_f32(rt, r, o, off, m);
    }
    return TS_OK;
  }
  int bits = ts_elem_bits(t);
  bool sgn = ts_elem_is_signed_int(t);
  if (!ts_elem_is_int(t) || !binary_int(op, NULL, NULL, NULL, 0, bits, sgn)) return unsupported(ctx, instr, t);
  if (t == TS_S32 && binary_s32(op, a, b, o, n)) return TS_OK;
  int64_t x[CHUNK], y[CHUNK], r[CHUNK];
  for (int64_t off = 0; off < n; off += CHUNK) {
    int64_t m = min64(CHUNK, n - off);
    load_i64(t, a, off, m, x);
    load_i64(t, b, off, m, y);
    binary_int(op, x, y, r, m, bits, sgn);
    store_i64(rt, r, o, off, m);
  }
  return TS_OK;
}

/* complex(re, im): f32 -> c64, f64 -> c128. */
static ts_status_t k_complex(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                             ts_array_t *out, int nout) {
  int64_t n = ts_array_count(&in[0]);
  if (in[0].elem == TS_F32 && out[0].elem == TS_C64) {
    const float *re = in[0].data, *im = in[1].data;
    float *o = out[0].data;
    FOR(o[2 * i] = re[i]; o[2 * i + 1] = im[i])
    return TS_OK;
  }
  if (in[0].elem == TS_F64 && out[0].elem == TS_C128) {
    const double *re = in[0].data, *im = in[1].data;
    double *o = out[0].data;
    FOR(o[2 * i] = re[i]; o[2 * i + 1] = im[i])
    return TS_OK;
  }
  return unsupported(ctx, instr, in[0].elem);
}

/* ---- compare ---------------------------------------------------------------- */

typedef enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE } cmp_dir_t;
typedef enum { CMPT_FLOAT, CMPT_TOTALORDER, CMPT_SIGNED, CMPT_UNSIGNED } cmp_type_t;

#define CMP_LOOPS(dir, A, B)                                                                       \
  do {                                                                                             \
    switch (dir) {                                                                                 \
    case CMP_EQ: FOR(o[i] = (A) == (B)) break;                                                     \
    case CMP_NE: FOR(o[i] = (A) != (B)) break;                                                     \
    case CMP_LT: FOR(o[i] = (A) < (B)) break;                                                      \
    case CMP_LE: FOR(o[i] = (A) <= (B)) break;                                                     \
    case CMP_GT: FOR(o[i] = (A) > (B)) break;                                                      \
    case CMP_GE: FOR(o[i] = (A) >= (B)) break;                                                     \
    }                                                                                              \
  } while (0)

/* Keys whose signed order is XLA's total order on floats:
 * -NaN < -Inf < -finite < -0 < +0 < +finite < +Inf < +NaN. */
static inline int32_t total_f32(float x) {
  int32_t k;
  memcpy(&k, &x, 4);
  return k ^ (int32_t)((uint32_t)(k >> 31) >> 1);
}
static inline int64_t total_f64(double x) {
  int64_t k;
  memcpy(&k, &x, 8);
  return k ^ (int64_t)((uint64_t)(k >> 63) >> 1);
}

/* o[i] = a[i] dir b[i] for n elements of type kt: f32, f64, s32 or (any
 * other kt) s64. */
static void cmp_loop(cmp_dir_t dir, ts_elem_t kt, const void *a, const void *b, uint8_t *restrict o, int64_t n) {
  switch (kt) {
  case TS_F32: { const float *restrict x = a, *restrict y = b; CMP_LOOPS(dir, x[i], y[i]); } break;
  case TS_F64: { const double *restrict x = a, *restrict y = b; CMP_LOOPS(dir, x[i], y[i]); } break;
  case TS_S32: { const int32_t *restrict x = a, *restrict y = b; CMP_LOOPS(dir, x[i], y[i]); } break;
  default: { const int64_t *restrict x = a, *restrict y = b; CMP_LOOPS(dir, x[i], y[i]); } break;
  }
}

/* One chunk of an operand as cmp_loop compares it (either member: the
 * union's address is both arrays'). */
typedef union {
  float f[CHUNK];
  int64_t k[CHUNK];
} cmp_chunk_t;

/* Elements [off, off + m) of operand x (type t) into c: their f32 values for
 * a FLOAT comparison (returns TS_F32; f32 and f64 operands go to cmp_loop as
 * they are instead), else int64 keys whose signed order is the comparison's
 * (returns TS_S64): XLA's total order for TOTALORDER, the integers
 * re-extended by the comparison type's sign (UNSIGNED: sign bit flipped, so
 * that signed order is unsigned order). */
static ts_elem_t cmp_operand(ts_elem_t t, cmp_type_t ty, const void *x, int64_t off, int64_t m, cmp_chunk_t *c) {
  if (ty == CMPT_FLOAT) {
    load_f32(t, x, off, m, c->f);
    return TS_F32;
  }
  if (t == TS_F64) {
    const double *d = (const double *)x + off;
    for (int64_t i = 0; i < m; i++) c->k[i] = total_f64(d[i]);
  } else if (ty == CMPT_TOTALORDER) {
    float f[CHUNK];
    load_f32(t, x, off, m, f);
    for (int64_t i = 0; i < m; i++) c->k[i] = total_f32(f[i]);
  } else {
    int bits = ts_elem_bits(t);
    bool uns = ty == CMPT_UNSIGNED;
    load_i64(t, x, off, m, c->k);
    if (uns == ts_elem_is_signed_int(t))
      for (int64_t i = 0; i < m; i++) c->k[i] = uns ? (int64_t)zext(c->k[i], bits) : sext(c->k[i], bits);
    if (uns)
      for (int64_t i = 0; i < m; i++) c->k[i] = (int64_t)((uint64_t)c->k[i] ^ (UINT64_C(1) << 63));
  }
  return TS_S64;
}

static ts_status_t k_compare(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                             ts_array_t *out, int nout) {
  static const char *const dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  static const char *const types[] = {"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
  const ts_hlo_attr_t *da = ts_hlo_instr_attr(instr, "direction"), *ta = ts_hlo_instr_attr(instr, "type");
  ts_elem_t t = in[0].elem;
  int dir = -1, ty = -1;
  for (int k = 0; da && da->kind == TS_ATTR_IDENT && k < 6; k++)
    if (strcmp(da->v.s, dirs[k]) == 0) dir = k;
  if (dir < 0) return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "compare needs a direction");
  if (ta && ta->kind == TS_ATTR_IDENT) {
    for (int k = 0; k < 4; k++)
      if (strcmp(ta->v.s, types[k]) == 0) ty = k;
    if (ty < 0) return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "unknown comparison type %s", ta->v.s);
  } else {
    ty = ts_elem_is_float(t) || ts_elem_is_complex(t) ? CMPT_FLOAT
         : ts_elem_is_signed_int(t)                   ? CMPT_SIGNED
                                                      : CMPT_UNSIGNED;
  }
  bool fl = ts_elem_is_float(t) || ts_elem_is_complex(t);
  if (fl != (ty == CMPT_FLOAT || ty == CMPT_TOTALORDER))
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "comparison type %s does not apply to %s operands",
                          types[ty], ts_elem_name(t));
  int64_t n = ts_array_count(&in[0]);
  uint8_t *o = out[0].data;
  bool total = ty == CMPT_TOTALORDER;
  if (ts_elem_is_complex(t)) {
    if ((dir != CMP_EQ && dir != CMP_NE) || total)
      return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "complex operands compare only with EQ or NE");
    for (int64_t i = 0; i < n; i++) {
      double ar, ai, br, bi;
      ts_load_c(t, in[0].data, i, &ar, &ai);
      ts_load_c(t, in[1].data, i, &br, &bi);
      o[i] = (ar == br && ai == bi) == (dir == CMP_EQ);
    }
    return TS_OK;
  }
  if (!total && (t == TS_F32 || t == TS_F64 || (t == TS_S32 && ty == CMPT_SIGNED))) {
    cmp_loop(dir, t, in[0].data, in[1].data, o, n); /* the operands as they are */
    return TS_OK;
  }
  cmp_chunk_t x, y;
  for (int64_t off = 0; off < n; off += CHUNK) {
    int64_t m = min64(CHUNK, n - off);
    ts_elem_t kt = cmp_operand(t, ty, in[0].data, off, m, &x);
    cmp_operand(t, ty, in[1].data, off, m, &y);
    cmp_loop(dir, kt, &x, &y, o + off, m);
  }
  return TS_OK;
}

/* ---- select and clamp --------------------------------------------------------- */

static ts_status_t k_select(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                            ts_array_t *out, int nout) {
  const uint8_t *p = in[0].data;
  size_t sz = esz(out[0].elem);
  int64_t n = ts_array_count(&out[0]);
  if (in[0].rank == 0) {
    memcpy(out[0].data, p[0] ? in[1].data : in[2].data, (size_t)n * sz);
    return TS_OK;
  }
#define SEL(T)                                                                                     \
  do {                                                                                             \
    const T *a = in[1].data, *b = in[2].data;                                                      \
    T *o = out[0].data;                                                                            \
    FOR(o[i] = p[i] ? a[i] : b[i]);                                                                \
  } while (0)
  switch (sz) {
  case 1: SEL(uint8_t); break;
  case 2: SEL(uint16_t); break;
  case 4: SEL(uint32_t); break;
  case 8: SEL(uint64_t); break;
  default: {
    char *o = out[0].data;
    const char *a = in[1].data, *b = in[2].data;
    FOR(memcpy(o + (size_t)i * sz, (p[i] ? a : b) + (size_t)i * sz, sz));
    break;
  }
  }
#undef SEL
  return TS_OK;
}

/* clamp(lo, x, hi) = min(max(lo, x), hi) with XLA's max and min (so a NaN
 * anywhere gives NaN); lo and hi are scalars (stride 0) or arrays. */
#define DEF_CLAMP(NAME, T, S)                                                                      \
  static void NAME(const T *restrict l, int64_t ls, const T *restrict v, const T *restrict h,       \
                   int64_t hs, T *restrict o, int64_t n) {                                         \
    if (ls == 0 && hs == 0) {                                                                      \
      T lo = l[0], hi = h[0];                                                                      \
      FOR(o[i] = min_##S(max_##S(lo, v[i]), hi))                                                   \
    } else {                                                                                       \
      FOR(o[i] = min_##S(max_##S(l[i * ls], v[i]), h[i * hs]))                                     \
    }                                                                                              \
  }
DEF_CLAMP(clamp_f32, float, f32)
DEF_CLAMP(clamp_f64, double, f64)

static void clamp_i64(const int64_t *l, int64_t ls, const int64_t *v, const int64_t *h, int64_t hs, int64_t *o,
                      int64_t n, bool sgn) {
  if (sgn) {
    FOR(int64_t x = v[i] > l[i * ls] ? v[i] : l[i * ls]; o[i] = x < h[i * hs] ? x : h[i * hs])
  } else {
    FOR(uint64_t x = (uint64_t)v[i] > (uint64_t)l[i * ls] ? (uint64_t)v[i] : (uint64_t)l[i * ls];
        o[i] = (int64_t)(x < (uint64_t)h[i * hs] ? x : (uint64_t)h[i * hs]))
  }
}

static ts_status_t k_clamp(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                           ts_array_t *out, int nout) {
  const ts_array_t *lo = &in[0], *x = &in[1], *hi = &in[2];
  ts_elem_t t = x->elem;
  int64_t n = ts_array_count(x);
  /* A scalar bound reads element 0 for every element. */
  int64_t ls = ts_array_count(lo) == 1 ? 0 : 1, hs = ts_array_count(hi) == 1 ? 0 : 1;
  if (t == TS_F32) {
    clamp_f32(lo->data, ls, x->data, hi->data, hs, out[0].data, n);
    return TS_OK;
  }
  if (t == TS_F64) {
    clamp_f64(lo->data, ls, x->data, hi->data, hs, out[0].data, n);
    return TS_OK;
  }
  if (ts_elem_is_float(t)) {
    float l[CHUNK], v[CHUNK], h[CHUNK], r[CHUNK];
    for (int64_t off = 0; off < n; off += CHUNK) {
      int64_t m = min64(CHUNK, n - off);
      load_f32(t, lo->data, ls * off, ls ? m : 1, l);
      load_f32(t, x->data, off, m, v);
      load_f32(t, hi->data, hs * off, hs ? m : 1, h);
      clamp_f32(l, ls, v, h, hs, r, m);
      store_f32(t, r, out[0].data, off, m);
    }
    return TS_OK;
  }
  if (!ts_elem_is_int(t)) return unsupported(ctx, instr, t);
  bool sgn = ts_elem_is_signed_int(t);
  int64_t l[CHUNK], v[CHUNK], h[CHUNK], r[CHUNK];
  for (int64_t off = 0; off < n; off += CHUNK) {
    int64_t m = min64(CHUNK, n - off);
    load_i64(t, lo->data, ls * off, ls ? m : 1, l);
    load_i64(t, x->data, off, m, v);
    load_i64(t, hi->data, hs * off, hs ? m : 1, h);
    clamp_i64(l, ls, v, h, hs, r, m, sgn);
    store_i64(t, r, out[0].data, off, m);
  }
  return TS_OK;
}

/* ---- conversions ---------------------------------------------------------------- */

static ts_status_t k_convert(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                             ts_array_t *out, int nout) {
  ts_elem_t from = in[0].elem, to = out[0].elem;
  int64_t n = ts_array_count(&in[0]);
  const void *s = in[0].data;
  void *d = out[0].data;
  if ((from == TS_F32 || from == TS_BF16) && (to == TS_F32 || to == TS_BF16)) {
    float buf[CHUNK];
    for (int64_t off = 0; off < n; off += CHUNK) {
      int64_t m = min64(CHUNK, n - off);
      load_f32(from, s, off, m, buf);
      store_f32(to, buf, d, off, m);
    }
    return TS_OK;
  }
  if (from == TS_S32 && to == TS_F32) { /* int -> float rounds to nearest even */
    const int32_t *a = s;
    float *o = d;
    FOR(o[i] = (float)a[i])
    return TS_OK;
  }
  if (from == TS_F32 && to == TS_S32) { /* toward zero, NaN -> 0, saturating */
    const float *a = s;
    int32_t *o = d;
    FOR(o[i] = a[i] != a[i] ? 0 : a[i] >= 2147483648.0f ? INT32_MAX : a[i] <= -2147483648.0f ? INT32_MIN : (int32_t)a[i])
    return TS_OK;
  }
  if (ts_elem_convert(from, s, to, d, n) != TS_OK)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "cannot convert %s to %s", ts_elem_name(from),
                          ts_elem_name(to));
  return TS_OK;
}

/* The raw bits of element i (its ts_elem_bits low bits). */
static uint64_t raw_bits(ts_elem_t t, const void *p, int64_t i) {
  int bits = ts_elem_bits(t);
  uint64_t v = 0;
  memcpy(&v, (const char *)p + (size_t)i * esz(t), esz(t)); /* little-endian host */
  return bits >= 64 ? v : v & ((UINT64_C(1) << bits) - 1);
}

static void put_bits(ts_elem_t t, void *p, int64_t i, uint64_t v) {
  int bits = ts_elem_bits(t);
  if (t == TS_PRED) v = v != 0;
  else if (bits < 8 && ts_elem_is_signed_int(t)) v = (uint64_t)sext((int64_t)v, bits); /* sign-extended storage */
  memcpy((char *)p + (size_t)i * esz(t), &v, esz(t));
}

/* Same width: the bits; different widths: the wider element spans
 * consecutive narrower ones in the new (or dropped) minor dimension,
 * least significant first, as the bytes lie in memory on a little-endian
 * machine (XLA's CPU backend); sub-byte types are packed the same way. */
static ts_status_t k_bitcast_convert(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                                     int nin, ts_array_t *out, int nout) {
  ts_elem_t from = in[0].elem, to = out[0].elem;
  int fb = ts_elem_bits(from), tb = ts_elem_bits(to);
  if (!ts_elem_bitcast_ok(from, to, NULL, NULL))
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "cannot bitcast-convert %s to %s",
                          ts_elem_name(from), ts_elem_name(to));
  int64_t nin_e = ts_array_count(&in[0]), nout_e = ts_array_count(&out[0]);
  bool packed = fb % 8 || tb % 8 || from == TS_PRED || to == TS_PRED;
  if (!packed) {
    memcpy(out[0].data, in[0].data, (size_t)nin_e * esz(from));
    return TS_OK;
  }
  if (fb == tb) {
    for (int64_t i = 0; i < nin_e; i++) put_bits(to, out[0].data, i, raw_bits(from, in[0].data, i));
  } else if (fb > tb) {
    int r = fb / tb;
    uint64_t mask = (UINT64_C(1) << tb) - 1;
    for (int64_t i = 0; i < nin_e; i++) {
      uint64_t v = raw_bits(from, in[0].data, i);
      for (int q = 0; q < r; q++) put_bits(to, out[0].data, i * r + q, (v >> (q * tb)) & mask);
    }
  } else {
    int r = tb / fb;
    for (int64_t i = 0; i < nout_e; i++) {
      uint64_t v = 0;
      for (int q = 0; q < r; q++) v |= raw_bits(from, in[0].data, i * r + q) << (q * fb);
      put_bits(to, out[0].data, i, v);
    }
  }
  return TS_OK;
}

/* bitcast: the same bytes under another shape. Arrays here are row-major
 * whatever the layout, so this is a reshape when the element type stays. */
static ts_status_t k_bitcast(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                             ts_array_t *out, int nout) {
  ts_elem_t from = in[0].elem, to = out[0].elem;
  size_t ib = ts_array_bytes(&in[0]), ob = ts_array_bytes(&out[0]);
  bool whole = ts_elem_bits(from) % 8 == 0 && ts_elem_bits(to) % 8 == 0 && from != TS_PRED && to != TS_PRED;
  if (ib != ob || (from != to && !whole))
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "bitcast from %s (%zu bytes) to %s (%zu bytes)",
                          ts_elem_name(from), ib, ts_elem_name(to), ob);
  memcpy(out[0].data, in[0].data, ib);
  return TS_OK;
}

/* XLA's reduce-precision on the bits of a float with `ebits` exponent and
 * `mbits` mantissa bits in `nbits` (its elemental emitter): round the
 * mantissa to m bits, ties to even; exponents above the reduced range give
 * +-inf and those at or below its minimum normal exponent give +-0 (no
 * subnormals); NaN stays NaN (becomes +-inf when m == 0: no NaN encoding). */
static uint64_t reduce_bits(uint64_t x, int nbits, int ebits, int mbits, int64_t e, int64_t m) {
  uint64_t sign = UINT64_C(1) << (nbits - 1), exp_mask = ((UINT64_C(1) << ebits) - 1) << mbits;
  bool nan = (x & (sign - 1)) > exp_mask;
  if (nan) return m > 0 ? x : (x & sign) | exp_mask;
  if (m < mbits) {
    int sh = mbits - (int)m;
    uint64_t last = UINT64_C(1) << sh;
    x = (x + (last >> 1) - 1 + ((x >> sh) & 1)) & ~(last - 1);
  }
  if (e < ebits) {
    int64_t bias = (INT64_C(1) << (ebits - 1)) - 1, rbias = (INT64_C(1) << (e - 1)) - 1;
    uint64_t xe = x & exp_mask;
    if (xe > (uint64_t)(bias + rbias) << mbits)
      x = (x & sign) | exp_mask;
    else if (xe <= (uint64_t)(bias - rbias) << mbits)
      x &= sign;
  }
  return x;
}

static ts_status_t k_reduce_precision(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                                      int nin, ts_array_t *out, int nout) {
  const ts_hlo_attr_t *ea = ts_hlo_instr_attr(instr, "exponent_bits"), *ma = ts_hlo_instr_attr(instr, "mantissa_bits");
  if (!ea || !ma || ea->kind != TS_ATTR_INT || ma->kind != TS_ATTR_INT || ea->v.i < 1 || ma->v.i < 0)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "reduce-precision needs exponent_bits and mantissa_bits");
  ts_elem_t t = in[0].elem;
  int64_t n = ts_array_count(&in[0]), e = ea->v.i, m = ma->v.i;
  if (e > 64) e = 64; /* anything wider than the source is a no-op */
  if (t == TS_F64) {
    const uint64_t *x = in[0].data;
    uint64_t *y = out[0].data;
    FOR(y[i] = reduce_bits(x[i], 64, 11, 52, e, m))
  } else if (t == TS_F16 || t == TS_BF16) {
    const uint16_t *x = in[0].data;
    uint16_t *y = out[0].data;
    int eb = t == TS_F16 ? 5 : 8, mb = t == TS_F16 ? 10 : 7;
    FOR(y[i] = (uint16_t)reduce_bits(x[i], 16, eb, mb, e, m))
  } else if (ts_elem_is_float(t)) {
    float buf[CHUNK];
    for (int64_t off = 0; off < n; off += CHUNK) {
      int64_t k = min64(CHUNK, n - off);
      load_f32(t, in[0].data, off, k, buf);
      for (int64_t i = 0; i < k; i++) {
        uint32_t b;
        memcpy(&b, &buf[i], 4);
        b = (uint32_t)reduce_bits(b, 32, 8, 23, e, m);
        memcpy(&buf[i], &b, 4);
      }
      store_f32(t, buf, out[0].data, off, k);
    }
  } else {
    return unsupported(ctx, instr, t);
  }
  return TS_OK;
}

/* stochastic-convert(x, random): float -> integer, rounding |x| up when the
 * random bits are below its fraction scaled to their width (as XLA's
 * stochastic_convert_decomposer), then the sign; NaN gives 0 and values
 * beyond the integer type saturate, as convert does. */
static ts_status_t k_stochastic_convert(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in,
                                        int nin, ts_array_t *out, int nout) {
  ts_elem_t t = in[0].elem, rt = out[0].elem;
  if (!ts_elem_is_float(t) || (!ts_elem_is_signed_int(rt) && !ts_elem_is_unsigned_int(rt)))
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT,
                          "stochastic-convert is supported from floats to integers only, not %s to %s",
                          ts_elem_name(t), ts_elem_name(rt));
  int bits = ts_elem_bits(in[1].elem), obits = ts_elem_bits(rt);
  bool osgn = ts_elem_is_signed_int(rt);
  double lo = osgn ? -ldexp(1, obits - 1) : 0, hi = osgn ? ldexp(1, obits - 1) - 1 : ldexp(1, obits) - 1;
  int64_t n = ts_array_count(&in[0]);
  for (int64_t i = 0; i < n; i++) {
    double x = ts_load_f(t, in[0].data, i);
    uint64_t r = zext(ts_load_i(in[1].elem, in[1].data, i), bits);
    if (isnan(x)) {
      ts_store_i(rt, out[0].data, i, 0);
      continue;
    }
    double a = fabs(x), f = floor(a);
    if (isfinite(a) && (long double)r < ldexpl((long double)(a - f), bits)) f += 1;
    double v = x < 0 ? -f : f;
    if (v <= lo) v = lo;
    if (v >= hi) v = hi;
    ts_store_f(rt, out[0].data, i, v);
  }
  return TS_OK;
}

/* ---- iota and map ------------------------------------------------------------------ */

static ts_status_t k_iota(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                          ts_array_t *out, int nout) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, "iota_dimension");
  const ts_array_t *o = &out[0];
  if (!a || a->kind != TS_ATTR_INT || a->v.i < 0 || a->v.i >= o->rank)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "iota needs an iota_dimension below the rank");
  int d = (int)a->v.i;
  int64_t outer = 1, len = o->dims[d], inner = 1;
  for (int k = 0; k < d; k++) outer *= o->dims[k];
  for (int k = d + 1; k < o->rank; k++) inner *= o->dims[k];
  int64_t block = len * inner; /* one block holds 0..len-1, each repeated `inner` times */
  if (block == 0 || outer == 0) return TS_OK;
  ts_elem_t t = o->elem;
  size_t sz = esz(t);
  if (t == TS_S32) {
    int32_t *p = o->data;
    for (int64_t j = 0; j < len; j++)
      for (int64_t k = 0; k < inner; k++) p[j * inner + k] = (int32_t)j;
  } else if (t == TS_F32) {
    float *p = o->data;
    for (int64_t j = 0; j < len; j++)
      for (int64_t k = 0; k < inner; k++) p[j * inner + k] = (float)j;
  } else if (ts_elem_is_int(t) || ts_elem_is_float(t) || ts_elem_is_complex(t)) {
    /* Integer iota converted to the type (one rounding for floats). */
    for (int64_t j = 0; j < len; j++) {
      ts_store_i(t, o->data, j * inner, j);
      for (int64_t k = 1; k < inner; k++)
        memcpy((char *)o->data + (size_t)(j * inner + k) * sz, (char *)o->data + (size_t)(j * inner) * sz, sz);
    }
  } else {
    return unsupported(ctx, instr, t);
  }
  for (int64_t q = 1; q < outer; q++) memcpy((char *)o->data + (size_t)(q * block) * sz, o->data, (size_t)block * sz);
  return TS_OK;
}

/* Ops whose kernel here maps equal-shaped arrays elementwise: map runs them
 * directly over the whole arrays when they are its computation's root. */
static bool whole_array_op(ts_opcode_t op);

static ts_status_t k_map(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                         ts_array_t *out, int nout) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(instr, "to_apply");
  if (!a || a->kind != TS_ATTR_COMP || a->v.comps.n != 1)
    return ts_kernel_fail(ctx, instr, TS_ERR_INVALID_ARGUMENT, "map needs to_apply");
  const ts_hlo_comp_t *c = a->v.comps.comps[0];
  const ts_hlo_instr_t *r = c->root;
  int64_t n = ts_array_count(&out[0]);
  size_t osz = esz(out[0].elem);
  /* Fast paths: the root is a parameter, or one elementwise op of parameters. */
  for (int p = 0; p < c->nparams && p < nin; p++)
    if (r == c->params[p]) {
      memcpy(out[0].data, in[p].data, (size_t)n * osz);
      return TS_OK;
    }
  if (c->ninstrs == c->nparams + 1 && whole_array_op(r->op) && r->nops <= 3) {
    ts_array_t args[3];
    bool ok = true;
    for (int k = 0; k < r->nops && ok; k++) {
      ok = false;
      for (int p = 0; p < c->nparams && p < nin; p++)
        if (r->ops[k] == c->params[p]) {
          args[k] = in[p];
          ok = true;
        }
    }
    ts_kernel_fn fn = ts_kernel_for(r->op);
    if (ok && fn) return fn(ctx, r, args, r->nops, out, 1);
  }
  /* One call per element, on scalar views into the arrays. */
  ts_array_t sargs[16], *args = nin <= 16 ? sargs : ts_malloc(sizeof *args * (size_t)nin);
  if (!args) return TS_ERR_NOMEM;
  ts_status_t st = TS_OK;
  for (int64_t i = 0; i < n && st == TS_OK; i++) {
    for (int k = 0; k < nin; k++)
      args[k] = (ts_array_t){in[k].elem, 0, NULL, (char *)in[k].data + (size_t)i * esz(in[k].elem)};
    ts_array_t res = {out[0].elem, 0, NULL, (char *)out[0].data + (size_t)i * osz};
    st = ctx->apply(ctx, c, args, nin, &res, 1);
  }
  if (args != sargs) ts_free(args);
  return st;
}

/* ---- registration ------------------------------------------------------------------ */

static const ts_opcode_t unary_ops[] = {
    TS_OP_ABS, TS_OP_NEGATE, TS_OP_SIGN, TS_OP_NOT, TS_OP_FLOOR, TS_OP_CEIL, TS_OP_ROUND_NEAREST_AFZ,
    TS_OP_ROUND_NEAREST_EVEN, TS_OP_SQRT, TS_OP_RSQRT, TS_OP_CBRT, TS_OP_EXPONENTIAL,
    TS_OP_EXPONENTIAL_MINUS_ONE, TS_OP_LOG, TS_OP_LOG_PLUS_ONE, TS_OP_LOGISTIC, TS_OP_SINE, TS_OP_COSINE,
    TS_OP_TAN, TS_OP_TANH, TS_OP_ATAN, TS_OP_SINH, TS_OP_COSH, TS_OP_ASIN, TS_OP_ACOS, TS_OP_ASINH,
    TS_OP_ACOSH, TS_OP_ATANH, TS_OP_ERF, TS_OP_IS_FINITE, TS_OP_POPCNT, TS_OP_COUNT_LEADING_ZEROS,
    TS_OP_REAL, TS_OP_IMAG,
};

static const ts_opcode_t binary_ops[] = {
    TS_OP_ADD, TS_OP_SUBTRACT, TS_OP_MULTIPLY, TS_OP_DIVIDE, TS_OP_REMAINDER, TS_OP_POWER, TS_OP_MAXIMUM,
    TS_OP_MINIMUM, TS_OP_ATAN2, TS_OP_AND, TS_OP_OR, TS_OP_XOR, TS_OP_SHIFT_LEFT,
    TS_OP_SHIFT_RIGHT_ARITHMETIC, TS_OP_SHIFT_RIGHT_LOGICAL, TS_OP_MULHI,
};

static bool whole_array_op(ts_opcode_t op) {
  for (size_t k = 0; k < sizeof unary_ops / sizeof unary_ops[0]; k++)
    if (unary_ops[k] == op) return true;
  for (size_t k = 0; k < sizeof binary_ops / sizeof binary_ops[0]; k++)
    if (binary_ops[k] == op) return true;
  switch (op) {
  case TS_OP_COMPARE: case TS_OP_SELECT: case TS_OP_CLAMP: case TS_OP_CONVERT: case TS_OP_COMPLEX:
  case TS_OP_REDUCE_PRECISION: case TS_OP_STOCHASTIC_CONVERT:
    return true;
  default: return false;
  }
}

void ts_kernels_elementwise(ts_kernel_fn *table) {
  for (size_t k = 0; k < sizeof unary_ops / sizeof unary_ops[0]; k++) table[unary_ops[k]] = k_unary;
  for (size_t k = 0; k < sizeof binary_ops / sizeof binary_ops[0]; k++) table[binary_ops[k]] = k_binary;
  table[TS_OP_COMPLEX] = k_complex;
  table[TS_OP_COMPARE] = k_compare;
  table[TS_OP_SELECT] = k_select;
  table[TS_OP_CLAMP] = k_clamp;
  table[TS_OP_CONVERT] = k_convert;
  table[TS_OP_BITCAST_CONVERT] = k_bitcast_convert;
  table[TS_OP_BITCAST] = k_bitcast;
  table[TS_OP_REDUCE_PRECISION] = k_reduce_precision;
  table[TS_OP_STOCHASTIC_CONVERT] = k_stochastic_convert;
  table[TS_OP_IOTA] = k_iota;
  table[TS_OP_MAP] = k_map;
}
