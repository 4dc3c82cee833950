/* Element types: the HLO primitive types (XLA's PrimitiveType, spelled as
 * in HLO text), their sizes and names, and conversions between them. A leaf
 * of common/: the IR, the collectives, the interpreter and the runtime all
 * speak it. */
#ifndef TS_ELEM_H
#define TS_ELEM_H

#include "ts_common.h"

typedef enum {
#define X(e, s, bits) TS_##e,
#include "elemtypes.def"
#undef X
  TS_ELEM_COUNT
} ts_elem_t;

const char *ts_elem_name(ts_elem_t t);
int ts_elem_bits(ts_elem_t t); /* storage bits of one element; 0 for token/tuple/opaque */
bool ts_elem_is_array(ts_elem_t t); /* not tuple, token or opaque */
bool ts_elem_is_float(ts_elem_t t); /* f*, bf16, f8*, f6*, f4* (not complex) */
bool ts_elem_is_complex(ts_elem_t t);
bool ts_elem_is_signed_int(ts_elem_t t);
bool ts_elem_is_unsigned_int(ts_elem_t t);
/* Looks up a type spelling; returns false when `s[0..n)` is not a type. */
bool ts_elem_from_name(const char *s, size_t n, ts_elem_t *out);

/* ---- conversion (elemconv.c) -------------------------------------------- */

/* Storage: one element per unit of ts_elem_bits rounded up to 8/16/32/64
 * bits (c64: two f32, c128: two f64, real part first); sub-byte types one
 * per byte, signed ones sign-extended, unsigned ones and f4/f6 in the low
 * bits. Returns 0 for token/tuple/opaque. */
int ts_elem_storage_bytes(ts_elem_t t);

/* True for the float types of <= 32 bits that ts_elem_from_double and
 * ts_elem_to_double handle (f32, f16, bf16, every f8, f6 and f4). */
bool ts_elem_is_storage_float(ts_elem_t t);

/* double -> bits of float type t (in the low bits), round to nearest even,
 * subnormals kept. What does not fit (0 for a non-float type):
 *   f32 f16 bf16 f8e5m2 f8e4m3 f8e3m4 (IEEE): overflow -> +-inf; NaN keeps
 *     its sign and top payload bits, quiet bit set.
 *   f8e4m3fn: no inf; overflow and +-inf -> NaN with the sign (0x7F / 0xFF),
 *     as ml_dtypes' non-saturating convert does.
 *   f8e4m3fnuz f8e5m2fnuz f8e4m3b11fnuz: NaN is 0x80 only, no -0 (-0 and
 *     negative underflow -> 0x00); overflow and +-inf -> 0x80.
 *   f8e8m0fnu (2^(e-127), unsigned): 0xFF is NaN; negative, overflow, inf
 *     -> 0xFF; +-0 and underflow -> 0x00 (2^-127: no zero exists); ties
 *     go to the even exponent field.
 *   f4e2m1fn f6e2m3fn f6e3m2fn (no inf/NaN): overflow and +-inf saturate
 *     to +-max (OCP MX); NaN -> +0. */
uint32_t ts_elem_from_double(ts_elem_t t, double v);

/* Bits (low bits used, the rest ignored) of float type t -> double; exact. */
double ts_elem_to_double(ts_elem_t t, uint32_t bits);

/* XLA's convert over n elements (storage as above; src and dst must not
 * overlap unless from == to). Float -> float: one rounding to nearest even.
 * Int -> float: to nearest even (64-bit integers too: no double rounding).
 * Float -> int: toward zero, NaN -> 0, out of range saturates to the
 * target's min/max (XLA's fptosi.sat). Int -> int: wraps (two's
 * complement truncation). Anything -> pred: != 0. Complex -> real: the real
 * part; real -> complex: imaginary part 0. TS_ERR_INVALID_ARGUMENT for
 * token/tuple/opaque or n < 0. */
ts_status_t ts_elem_convert(ts_elem_t from, const void *src, ts_elem_t to, void *dst, int64_t n);

/* Whether bitcast-convert from -> to is allowed: both array types, both or
 * neither complex, one bit width a multiple of the other. When wider to
 * narrower the result gets a new minor dimension of *out_minor elements;
 * when narrower to wider the operand's last dimension must be *in_minor and
 * is dropped (both 1 when widths are equal; either pointer may be NULL). */
bool ts_elem_bitcast_ok(ts_elem_t from, ts_elem_t to, int *out_minor, int *in_minor);

#endif
