/* Element-type conversion shared by the reference interpreter and the runtime:
 * scalar float formats <-> double with round-to-nearest-even, XLA's convert
 * over arrays, and the width rule of bitcast-convert. Formats as in
 * ml_dtypes (float8.h, mxfloat.h) and the OCP 8-bit / MX specifications. */
#include <math.h>
#include <string.h>

#include "ts_elem.h"

/* How a format spends its top encodings on specials. */
typedef enum {
  SPECIAL_IEEE, /* exponent all ones: inf (mantissa 0) or NaN */
  SPECIAL_FN,   /* only S.1..1.1..1 is NaN; no inf */
  SPECIAL_FNUZ, /* only 1.0..0.0..0 (negative zero's encoding) is NaN; no inf, no -0 */
  SPECIAL_NONE, /* every encoding is finite (MX f4/f6) */
  SPECIAL_E8M0, /* unsigned, no zero; 0xFF is NaN */
} special_t;

typedef struct {
  int ebits, mbits, bias;
  special_t special;
} fmt_t;

/* Returns false for types that are not a storage float format. */
static bool fmt_of(ts_elem_t t, fmt_t *f) {
  switch (t) {
  case TS_F16: *f = (fmt_t){5, 10, 15, SPECIAL_IEEE}; return true;
  case TS_BF16: *f = (fmt_t){8, 7, 127, SPECIAL_IEEE}; return true;
  case TS_F32: *f = (fmt_t){8, 23, 127, SPECIAL_IEEE}; return true;
  case TS_F8E5M2: *f = (fmt_t){5, 2, 15, SPECIAL_IEEE}; return true;
  case TS_F8E4M3: *f = (fmt_t){4, 3, 7, SPECIAL_IEEE}; return true;
  case TS_F8E3M4: *f = (fmt_t){3, 4, 3, SPECIAL_IEEE}; return true;
  case TS_F8E4M3FN: *f = (fmt_t){4, 3, 7, SPECIAL_FN}; return true;
  case TS_F8E4M3FNUZ: *f = (fmt_t){4, 3, 8, SPECIAL_FNUZ}; return true;
  case TS_F8E5M2FNUZ: *f = (fmt_t){5, 2, 16, SPECIAL_FNUZ}; return true;
  case TS_F8E4M3B11FNUZ: *f = (fmt_t){4, 3, 11, SPECIAL_FNUZ}; return true;
  case TS_F8E8M0FNU: *f = (fmt_t){8, 0, 127, SPECIAL_E8M0}; return true;
  case TS_F4E2M1FN: *f = (fmt_t){2, 1, 1, SPECIAL_NONE}; return true;
  case TS_F6E2M3FN: *f = (fmt_t){2, 3, 1, SPECIAL_NONE}; return true;
  case TS_F6E3M2FN: *f = (fmt_t){3, 2, 3, SPECIAL_NONE}; return true;
  default: return false;
  }
}

static uint32_t sign_bit(const fmt_t *f) {
  return f->special == SPECIAL_E8M0 ? 0 : UINT32_C(1) << (f->ebits + f->mbits);
}

/* Largest finite magnitude's encoding (sign bit clear). */
static uint32_t max_mag(const fmt_t *f) {
  uint32_t all = (UINT32_C(1) << (f->ebits + f->mbits)) - 1;
  switch (f->special) {
  case SPECIAL_IEEE: return all - (UINT32_C(1) << f->mbits); /* exponent all ones minus one, mantissa all ones */
  case SPECIAL_FN: return all - 1;
  case SPECIAL_E8M0: return 0xFE;
  default: return all;
  }
}

static uint32_t inf_mag(const fmt_t *f) { return ((UINT32_C(1) << f->ebits) - 1) << f->mbits; }

static uint32_t nan_bits(const fmt_t *f, bool neg) {
  switch (f->special) {
  case SPECIAL_IEEE: return (neg ? sign_bit(f) : 0) | inf_mag(f) | UINT32_C(1) << (f->mbits - 1); /* quiet */
  case SPECIAL_FN: return (neg ? sign_bit(f) : 0) | (sign_bit(f) - 1);
  case SPECIAL_FNUZ: return sign_bit(f);
  case SPECIAL_E8M0: return 0xFF;
  default: return 0; /* SPECIAL_NONE has no NaN: see ts_elem_from_double */
  }
}

bool ts_elem_is_storage_float(ts_elem_t t) {
  fmt_t f;
  return fmt_of(t, &f);
}

uint32_t ts_elem_from_double(ts_elem_t t, double v) {
  fmt_t f;
  if (!fmt_of(t, &f)) return 0;
  if (t == TS_F32) { /* the hardware's conversion is the same rounding (default FP environment) */
    float x = (float)v;
    uint32_t b;
    memcpy(&b, &x, 4);
    return b;
  }
  bool neg = signbit(v) != 0;
  uint32_t sign = neg ? sign_bit(&f) : 0;
  if (isnan(v)) {
    if (f.special != SPECIAL_IEEE) return nan_bits(&f, neg);
    /* Keep the sign and the top payload bits, set the quiet bit: what
     * cvtsd2ss / vcvtps2ph do for f32 and f16. */
    uint64_t d;
    memcpy(&d, &v, 8);
    uint32_t payload = (uint32_t)((d & ((UINT64_C(1) << 52) - 1)) >> (52 - f.mbits));
    return nan_bits(&f, neg) | payload;
  }
  if (f.special == SPECIAL_E8M0 && neg && v != 0) return 0xFF;
  uint32_t overflow;
  switch (f.special) {
  case SPECIAL_IEEE: overflow = sign | inf_mag(&f); break; /* inf */
  case SPECIAL_NONE: overflow = sign | max_mag(&f); break;                                /* saturate */
  default: overflow = nan_bits(&f, neg); break;                                           /* NaN */
  }
  if (isinf(v)) return overflow;
  double a = fabs(v);
  if (a == 0) return f.special == SPECIAL_FNUZ || f.special == SPECIAL_E8M0 ? 0 : sign;

  /* a = q * 2^(E - mbits) with E the exponent of the result's binade,
   * clamped to the least normal one so subnormals share the quantum. */
  int emin = (f.special == SPECIAL_E8M0 ? 0 : 1) - f.bias;
  int e;
  (void)frexp(a, &e);
  int E = e - 1 < emin ? emin : e - 1;
  double q = ldexp(a, f.mbits - E); /* exact: a power-of-two scaling that stays normal */
  double m = floor(q), frac = q - m;
  /* Round half to even: "even" is the encoding's last bit, which for e8m0
   * (no mantissa) is the exponent field's. */
  bool odd = f.mbits ? ((uint64_t)m & 1) != 0 : ((E + f.bias) & 1) != 0; /* m < 2^25 */
  if (frac > 0.5 || (frac == 0.5 && odd)) m += 1;
  uint32_t M = (uint32_t)m, mag;
  if (M >= (UINT32_C(2) << f.mbits)) { /* rounded up into the next binade */
    M >>= 1;
    E++;
  }
  if (M == 0) {
    /* Underflow to zero: fnuz has no -0; e8m0 has no zero and keeps its
     * least value 2^-127. */
    return f.special == SPECIAL_FNUZ || f.special == SPECIAL_E8M0 ? 0 : sign;
  }
  if (M < (UINT32_C(1) << f.mbits)) mag = M; /* subnormal: exponent field 0 */
  else if (E + f.bias > (1 << f.ebits) - 1) return overflow;
  else mag = (uint32_t)(E + f.bias) << f.mbits | (M - (UINT32_C(1) << f.mbits));
  if (mag > max_mag(&f)) return overflow;
  return sign | mag;
}

double ts_elem_to_double(ts_elem_t t, uint32_t bits) {
  fmt_t f;
  if (!fmt_of(t, &f)) return 0;
  if (t == TS_F32) {
    float x;
    memcpy(&x, &bits, 4);
    return x;
  }
  uint32_t sbit = sign_bit(&f), mmask = (UINT32_C(1) << f.mbits) - 1;
  bits &= (f.special == SPECIAL_E8M0 ? 0xFF : sbit | (sbit - 1));
  bool neg = (bits & sbit) != 0;
  uint32_t mag = bits & ~sbit;
  switch (f.special) {
  case SPECIAL_IEEE:
    if (mag > max_mag(&f)) {
      if ((mag & mmask) == 0) return neg ? -INFINITY : INFINITY;
      return copysign(NAN, neg ? -1 : 1);
    }
    break;
  case SPECIAL_FN:
    if (mag == sbit - 1) return copysign(NAN, neg ? -1 : 1);
    break;
  case SPECIAL_FNUZ:
    if (bits == sbit) return NAN;
    break;
  case SPECIAL_E8M0:
    if (bits == 0xFF) return NAN;
    return ldexp(1.0, (int)bits - 127);
  case SPECIAL_NONE: break;
  }
  int efield = (int)(mag >> f.mbits);
  uint32_t mant = mag & mmask;
  double a = efield == 0 ? ldexp((double)mant, 1 - f.bias - f.mbits)
                         : ldexp((double)(mant | (mmask + 1)), efield - f.bias - f.mbits);
  return neg ? -a : a;
}

/* ---- integers --------------------------------------------------------- */

/* Nearest double to x by round-to-odd when x needs more than 53 bits, so a
 * second rounding to any format of <= 51 significant bits is correct RNE. */
static double odd_from_u64(uint64_t x) {
  if (x < (UINT64_C(1) << 53)) return (double)x;
  int s = 0;
  while ((x >> s) >= (UINT64_C(1) << 53)) s++;
  uint64_t m = x >> s;
  if (x & ((UINT64_C(1) << s) - 1)) m |= 1;
  return ldexp((double)m, s);
}

static double odd_from_s64(int64_t x) {
  uint64_t u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
  double d = odd_from_u64(u);
  return x < 0 ? -d : d;
}

/* XLA's float -> integer: truncate toward zero, NaN -> 0, saturate out of
 * range (the semantics of its elemental emitter's fptosi.sat / fptoui.sat). */
static int64_t sat_s(double v, int bits) {
  if (isnan(v)) return 0;
  double hi = ldexp(1.0, bits - 1); /* 2^(bits-1): first value out of range */
  if (v >= hi) return (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
  if (v <= -hi) return bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
  return (int64_t)trunc(v);
}

static uint64_t sat_u(double v, int bits) {
  if (isnan(v) || v <= 0) return 0;
  double hi = ldexp(1.0, bits);
  if (v >= hi) return bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
  return (uint64_t)trunc(v);
}

/* ---- arrays ------------------------------------------------------------ */

int ts_elem_storage_bytes(ts_elem_t t) {
  int b = ts_elem_bits(t);
  if (b <= 0) return 0;
  if (b <= 8) return 1;
  if (b <= 16) return 2;
  if (b <= 32) return 4;
  if (b <= 64) return 8;
  return 16;
}

/* One element in flight: integers keep all 64 bits, floats go through
 * double (every format here embeds exactly), complex keeps both parts. */
typedef enum { VAL_S, VAL_U, VAL_F } val_kind_t;
typedef struct {
  val_kind_t kind;
  int64_t s;
  uint64_t u;
  double re, im;
} val_t;

static val_t load(ts_elem_t t, const unsigned char *p) {
  val_t v = {VAL_F, 0, 0, 0, 0};
  int bits = ts_elem_bits(t);
  switch (t) {
  case TS_PRED: v.kind = VAL_U; v.u = p[0] != 0; return v;
  case TS_S1: case TS_S2: case TS_S4: { /* sign-extend the low bits */
    int sh = 8 - bits;
    v.kind = VAL_S;
    v.s = (int8_t)(uint8_t)(p[0] << sh) >> sh;
    return v;
  }
  case TS_U1: case TS_U2: case TS_U4: v.kind = VAL_U; v.u = p[0] & ((1u << bits) - 1); return v;
  case TS_S8: v.kind = VAL_S; v.s = (int8_t)p[0]; return v;
  case TS_U8: v.kind = VAL_U; v.u = p[0]; return v;
  case TS_S16: { int16_t x; memcpy(&x, p, 2); v.kind = VAL_S; v.s = x; return v; }
  case TS_U16: { uint16_t x; memcpy(&x, p, 2); v.kind = VAL_U; v.u = x; return v; }
  case TS_S32: { int32_t x; memcpy(&x, p, 4); v.kind = VAL_S; v.s = x; return v; }
  case TS_U32: { uint32_t x; memcpy(&x, p, 4); v.kind = VAL_U; v.u = x; return v; }
  case TS_S64: memcpy(&v.s, p, 8); v.kind = VAL_S; return v;
  case TS_U64: memcpy(&v.u, p, 8); v.kind = VAL_U; return v;
  case TS_F64: memcpy(&v.re, p, 8); return v;
  case TS_C64: { float x[2]; memcpy(x, p, 8); v.re = x[0]; v.im = x[1]; return v; }
  case TS_C128: memcpy(&v.re, p, 8); memcpy(&v.im, p + 8, 8); return v;
  default: break;
  }
  uint32_t b = 0;
  switch (ts_elem_storage_bytes(t)) {
  case 1: b = p[0]; break;
  case 2: { uint16_t x; memcpy(&x, p, 2); b = x; break; }
  default: memcpy(&b, p, 4); break;
  }
  v.re = ts_elem_to_double(t, b);
  return v;
}

/* The value as a double for a float target of <= 24 significant bits:
 * integers are rounded to odd so the final RNE is not a double rounding. */
static double as_double(const val_t *v, bool exact_f64) {
  switch (v->kind) {
  case VAL_S: return exact_f64 ? (double)v->s : odd_from_s64(v->s);
  case VAL_U: return exact_f64 ? (double)v->u : odd_from_u64(v->u);
  default: return v->re;
  }
}

static void store(ts_elem_t t, unsigned char *p, const val_t *v) {
  int bits = ts_elem_bits(t);
  if (t == TS_PRED) {
    p[0] = v->kind == VAL_F ? v->re != 0 : (v->s | (int64_t)v->u) != 0;
    return;
  }
  if (ts_elem_is_signed_int(t) || ts_elem_is_unsigned_int(t)) {
    uint64_t x; /* two's complement bits, wrapped to 64 */
    if (v->kind == VAL_S) x = (uint64_t)v->s;
    else if (v->kind == VAL_U) x = v->u;
    else if (ts_elem_is_signed_int(t)) x = (uint64_t)sat_s(v->re, bits);
    else x = sat_u(v->re, bits);
    if (bits < 8) { /* one per byte: signed sign-extended, unsigned masked */
      unsigned sh = 8u - (unsigned)bits;
      uint8_t low = (uint8_t)((x & ((1u << bits) - 1)) << sh);
      p[0] = ts_elem_is_signed_int(t) ? (uint8_t)((int8_t)low >> sh) : (uint8_t)(low >> sh);
      return;
    }
    switch (bits) {
    case 8: p[0] = (uint8_t)x; return;
    case 16: { uint16_t y = (uint16_t)x; memcpy(p, &y, 2); return; }
    case 32: { uint32_t y = (uint32_t)x; memcpy(p, &y, 4); return; }
    default: memcpy(p, &x, 8); return;
    }
  }
  switch (t) {
  case TS_F64: { double d = as_double(v, true); memcpy(p, &d, 8); return; }
  case TS_C64: { /* im is 0 for a real or integer source */
    float x[2] = {(float)as_double(v, false), (float)v->im};
    memcpy(p, x, 8);
    return;
  }
  case TS_C128: {
    double x[2] = {as_double(v, true), v->im};
    memcpy(p, x, 16);
    return;
  }
  default: break;
  }
  uint32_t b = ts_elem_from_double(t, as_double(v, false));
  switch (ts_elem_storage_bytes(t)) {
  case 1: p[0] = (uint8_t)b; break;
  case 2: { uint16_t y = (uint16_t)b; memcpy(p, &y, 2); break; }
  default: memcpy(p, &b, 4); break;
  }
}

static bool convertible(ts_elem_t t) {
  return t < TS_ELEM_COUNT && ts_elem_is_array(t) && ts_elem_bits(t) > 0;
}

/* Bit-exact fast paths for the conversions training programs run most;
 * they give the same bits as the generic load/store (round to nearest
 * even; narrowing keeps a NaN's sign and top payload bits with the quiet
 * bit set, widening gives the canonical quiet NaN with the sign). */
static uint16_t bf16_from_f32(uint32_t x) {
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static uint16_t f16_from_f32(uint32_t x) {
  uint32_t sign = (x >> 16) & 0x8000, a = x & 0x7fffffff;
  if (a > 0x7f800000) return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));
  if (a >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* >= 65520 rounds to inf */
  if (a < 0x38800000) { /* below 2^-14: a multiple of the subnormal quantum 2^-24 */
    float f;
    memcpy(&f, &a, 4);
    return (uint16_t)(sign | (uint32_t)rintf(f * 16777216.0f)); /* exact scaling, RNE */
  }
  uint32_t r = a - 0x38000000; /* rebias 127 -> 15 */
  r += 0xfff + ((r >> 13) & 1);
  return (uint16_t)(sign | (r >> 13));
}

static uint32_t f32_from_f16(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return sign | 0x7f800000 | (m ? 0x00400000 : 0); /* NaN: canonical, as the generic path */
  if (e == 0) {
    float f = (float)m * 0x1p-24f;
    uint32_t b;
    memcpy(&b, &f, 4);
    return sign | b;
  }
  return sign | ((e + 112) << 23) | (m << 13);
}

static uint32_t f32_from_bf16(uint16_t h) {
  uint32_t b = (uint32_t)h << 16;
  if ((b & 0x7fffffff) > 0x7f800000) b = (b & 0x80000000) | 0x7fc00000; /* NaN: as the generic path */
  return b;
}

/* Element i of an unaligned array of 16- or 32-bit words: read from s,
 * written to d. */
static uint16_t get16(const unsigned char *s, int64_t i) {
  uint16_t x;
  memcpy(&x, s + i * 2, 2);
  return x;
}
static uint32_t get32(const unsigned char *s, int64_t i) {
  uint32_t x;
  memcpy(&x, s + i * 4, 4);
  return x;
}
static void put16(unsigned char *d, int64_t i, uint16_t x) { memcpy(d + i * 2, &x, 2); }
static void put32(unsigned char *d, int64_t i, uint32_t x) { memcpy(d + i * 4, &x, 4); }

static bool convert_fast(ts_elem_t from, const unsigned char *s, ts_elem_t to, unsigned char *d, int64_t n) {
  if (from == TS_F32 && to == TS_BF16)
    for (int64_t i = 0; i < n; i++) put16(d, i, bf16_from_f32(get32(s, i)));
  else if (from == TS_F32 && to == TS_F16)
    for (int64_t i = 0; i < n; i++) put16(d, i, f16_from_f32(get32(s, i)));
  else if (from == TS_BF16 && to == TS_F32)
    for (int64_t i = 0; i < n; i++) put32(d, i, f32_from_bf16(get16(s, i)));
  else if (from == TS_F16 && to == TS_F32)
    for (int64_t i = 0; i < n; i++) put32(d, i, f32_from_f16(get16(s, i)));
  else if (from == TS_F32 && to == TS_F64) /* the common widening, without the switch */
    for (int64_t i = 0; i < n; i++) {
      float x;
      memcpy(&x, s + i * 4, 4);
      double y = x;
      memcpy(d + i * 8, &y, 8);
    }
  else
    return false;
  return true;
}

ts_status_t ts_elem_convert(ts_elem_t from, const void *src, ts_elem_t to, void *dst, int64_t n) {
  if (!convertible(from) || !convertible(to) || n < 0 || (n > 0 && (!src || !dst)))
    return TS_ERR_INVALID_ARGUMENT;
  int sb = ts_elem_storage_bytes(from), db = ts_elem_storage_bytes(to);
  const unsigned char *s = src;
  unsigned char *d = dst;
  if (from == to) {
    memmove(d, s, (size_t)n * (size_t)sb);
    return TS_OK;
  }
  if (convert_fast(from, s, to, d, n)) return TS_OK;
  for (int64_t i = 0; i < n; i++) {
    val_t v = load(from, s + i * sb);
    store(to, d + i * db, &v);
  }
  return TS_OK;
}

bool ts_elem_bitcast_ok(ts_elem_t from, ts_elem_t to, int *out_minor, int *in_minor) {
  if (!convertible(from) || !convertible(to)) return false;
  if (ts_elem_is_complex(from) != ts_elem_is_complex(to)) return false;
  int a = ts_elem_bits(from), b = ts_elem_bits(to);
  if (a % b != 0 && b % a != 0) return false;
  if (out_minor) *out_minor = a > b ? a / b : 1;
  if (in_minor) *in_minor = b > a ? b / a : 1;
  return true;
}
