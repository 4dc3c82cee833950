/* f32 math functions emitted as LLVM IR, so that a fused loop calling them
 * vectorizes (no libm call in the loop). Every function is plain fadd/fmul
 * (no fast-math flags, no fma contraction), so scalar and vector code round
 * identically. Methods:
 *   exp:  Cody-Waite range reduction x = n ln2 + r, ln2 split in two parts
 *         (0.693359375 exact in 9 bits, plus -2.12194440e-4), |r| <= ln2/2;
 *         exp(r) = 1 + r + r^2 P(r) with the degree-5 minimax P of
 *         S. Moshier's Cephes expf; 2^n applied as two exact power-of-two
 *         multiplies so that subnormal results round once.
 *   log:  x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals pre-scaled
 *         by 2^23), log(1+f) = f - f^2/2 + f^3 P(f) with Cephes logf's
 *         degree-8 minimax P, e ln2 added in two parts (Cody-Waite again).
 *   tanh: |x| < 0.625: x + x^3 P(x^2), Cephes tanhf's degree-4 minimax;
 *         else 1 - 2 / (exp(2|x|) + 1) with x's sign.
 *   logistic: e = exp(-|x|), 1/(1+e) for x >= 0 and e/(1+e) below, so the
 *         tail toward -inf keeps its subnormal results.
 *   log1p: u = 1 + x; x where u == 1, else log(u) * (x / (u - 1)): the
 *         rounding error of 1 + x cancels (D. Goldberg, "What every computer
 *         scientist should know about floating-point arithmetic", 1991).
 *   expm1: u = exp(x); x where u == 1, -1 where u - 1 == -1, else
 *         (u - 1) * (x / log(u)) (W. Kahan's trick, same paper).
 *   sqrt: llvm.sqrt (IEEE, correctly rounded: sqrtps); rsqrt: 1/sqrt (two
 *         correct roundings: at most 1.5 ULP, as kernels/ computes it).
 * erf, power, sine and cosine compute in double and round once to f32 at the
 * end (their polynomials are Chebyshev fits printed by math_coeffs.py, whose
 * errors lie near 2^-33 or below, so the one rounding dominates):
 *   sine/cosine: |x| < 2^23: Cody-Waite in double, x = k pi/2 + r with pi/2
 *         in three parts (two of 30 bits, so k P1 and k P2 are exact for
 *         k < 2^23); |x| >= 2^23: Payne-Hanek (M. Payne, R. Hanek, "Radian
 *         reduction for trigonometric functions", SIGNUM Newsletter 18, 1983):
 *         the 24-bit mantissa times the 96 bits of 2/pi that matter for its
 *         exponent, modulo 4 in fixed point, read from a constant word table
 *         by selects (no memory access in the loop). Both hold for every
 *         finite f32; then sin r = r S(r^2), cos r = C(r^2), |r| <= pi/4,
 *         picked and negated by the quadrant.
 *   erf:  |x| < 1: x P(x^2); 1 <= |x| <= 4: 1 - exp(-x^2) R(|x| - 2.5) (R is
 *         erfc(x) e^(x^2), smooth; the rounding of x^2 hardly matters, as
 *         exp(-x^2) is small where x^2 is large); erf(4) rounds to 1.
 *   power: exp2(y log2 |x|) in double: log2 from x = 2^e m, m in
 *         [sqrt(1/2), sqrt(2)), log m = 2 s A(s^2), s = (m - 1)/(m + 1);
 *         exp2 as 2^n E(t), |t| <= 1/2. y log2|x| keeps about 2^-45 relative
 *         error, which 2^w turns into |w| 2^-45 <= 2^-37 for results in f32's
 *         range. The IEEE 754 / C99 F.9.4.4 special cases as C's powf (what
 *         kernels/ calls): pow(x, +-0) = 1 and pow(1, y) = 1 even for NaN,
 *         pow(-1, +-inf) = 1, x < 0 finite with non-integer y is NaN, the
 *         sign of x < 0 (and -0, -inf) kept for odd integer y, 0^y and inf^y
 *         by the sign of y, |x| vs 1 for y = +-inf. */
#include "codegen_internal.h"

#include <string.h>

typedef struct {
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef f32, f64, i32, i64, i1;
} mb_t;

static LLVMValueRef cf(mb_t *m, double v) { return LLVMConstReal(m->f32, v); }
static LLVMValueRef cd(mb_t *m, double v) { return LLVMConstReal(m->f64, v); }
static LLVMValueRef ci(mb_t *m, int64_t v) { return LLVMConstInt(m->i32, (unsigned long long)v, 1); }
static LLVMValueRef cl(mb_t *m, int64_t v) { return LLVMConstInt(m->i64, (unsigned long long)v, 1); }
static LLVMValueRef add(mb_t *m, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(m->b, a, b, ""); }
static LLVMValueRef sub(mb_t *m, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(m->b, a, b, ""); }
static LLVMValueRef mul(mb_t *m, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(m->b, a, b, ""); }
static LLVMValueRef sel(mb_t *m, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(m->b, c, a, b, "");
}
static LLVMValueRef fcmp(mb_t *m, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(m->b, p, a, b, "");
}

LLVMValueRef cg_intrinsic(LLVMModuleRef mod, const char *name, LLVMTypeRef t, int nargs) {
  LLVMValueRef f = LLVMGetNamedFunction(mod, name);
  if (f) return f;
  LLVMTypeRef args[3] = {t, t, t};
  return LLVMAddFunction(mod, name, LLVMFunctionType(t, args, (unsigned)nargs, 0));
}

LLVMValueRef cg_intrinsic_f32(LLVMModuleRef mod, const char *name, int nargs) {
  return cg_intrinsic(mod, name, LLVMFloatTypeInContext(LLVMGetModuleContext(mod)), nargs);
}

static LLVMValueRef call1(mb_t *m, LLVMValueRef fn, LLVMValueRef x) {
  return LLVMBuildCall2(m->b, LLVMGlobalGetValueType(fn), fn, &x, 1, "");
}
/* name is the intrinsic for x's type (llvm.fabs.f32 or llvm.fabs.f64). */
static LLVMValueRef intr1(mb_t *m, const char *name, LLVMValueRef x) {
  return call1(m, cg_intrinsic(m->mod, name, LLVMTypeOf(x), 1), x);
}
static LLVMValueRef intr2(mb_t *m, const char *name, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef fn = cg_intrinsic(m->mod, name, LLVMTypeOf(x), 2), a[2] = {x, y};
  return LLVMBuildCall2(m->b, LLVMGlobalGetValueType(fn), fn, a, 2, "");
}

/* Horner in x's type: c[0] x^(n-1) + ... + c[n-1]. */
static LLVMValueRef horner(mb_t *m, LLVMValueRef x, const double *c, int n) {
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMValueRef y = LLVMConstReal(t, c[0]);
  for (int k = 1; k < n; k++) y = add(m, mul(m, y, x), LLVMConstReal(t, c[k]));
  return y;
}

/* 2^k for k in [-126, 127], exactly. */
static LLVMValueRef pow2i(mb_t *m, LLVMValueRef k) {
  LLVMValueRef bits = LLVMBuildShl(m->b, LLVMBuildAdd(m->b, k, ci(m, 127), ""), ci(m, 23), "");
  return LLVMBuildBitCast(m->b, bits, m->f32, "");
}

/* x = mant * 2^e for an f32 x > 0 (subnormals too): returns mant in
 * [sqrt(1/2), sqrt(2)) and sets *e (i32). Other x: values the caller
 * replaces. */
static LLVMValueRef split_mantissa(mb_t *m, LLVMValueRef x, LLVMValueRef *e) {
  LLVMValueRef den = fcmp(m, LLVMRealOLT, x, cf(m, 1.17549435082228750797e-38));
  LLVMValueRef xs = sel(m, den, mul(m, x, cf(m, 8388608.0)), x);
  LLVMValueRef bits = LLVMBuildBitCast(m->b, xs, m->i32, "");
  *e = LLVMBuildSub(m->b, LLVMBuildAnd(m->b, LLVMBuildLShr(m->b, bits, ci(m, 23), ""), ci(m, 0xff), ""),
                     ci(m, 126), "");
  *e = LLVMBuildSub(m->b, *e, sel(m, den, ci(m, 23), ci(m, 0)), "");
  LLVMValueRef mb = LLVMBuildOr(m->b, LLVMBuildAnd(m->b, bits, ci(m, 0x007fffff), ""), ci(m, 0x3f000000), "");
  LLVMValueRef mm = LLVMBuildBitCast(m->b, mb, m->f32, ""); /* [0.5, 1) */
  LLVMValueRef lo = fcmp(m, LLVMRealOLT, mm, cf(m, 0.707106781186547524));
  *e = LLVMBuildSub(m->b, *e, sel(m, lo, ci(m, 1), ci(m, 0)), "");
  return sel(m, lo, add(m, mm, mm), mm);
}

static LLVMValueRef emit_exp(mb_t *m, LLVMValueRef x) {
  static const double p[] = {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3,
                             4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1};
  /* n = rint(x log2 e), clamped so the integer conversion is defined. */
  LLVMValueRef n = intr1(m, "llvm.rint.f32", mul(m, x, cf(m, 1.44269504088896341)));
  n = intr2(m, "llvm.minnum.f32", intr2(m, "llvm.maxnum.f32", n, cf(m, -150.0)), cf(m, 128.0));
  LLVMValueRef r = sub(m, sub(m, x, mul(m, n, cf(m, 0.693359375))), mul(m, n, cf(m, -2.12194440e-4)));
  LLVMValueRef z = mul(m, r, r);
  LLVMValueRef y = add(m, add(m, mul(m, horner(m, r, p, 6), z), r), cf(m, 1.0));
  LLVMValueRef ni = LLVMBuildFPToSI(m->b, n, m->i32, "");
  LLVMValueRef n1 = LLVMBuildAShr(m->b, ni, ci(m, 1), "");
  LLVMValueRef n2 = LLVMBuildSub(m->b, ni, n1, "");
  y = mul(m, mul(m, y, pow2i(m, n1)), pow2i(m, n2));
  y = sel(m, fcmp(m, LLVMRealOGT, x, cf(m, 88.72283935546875)), cf(m, __builtin_inf()), y);
  y = sel(m, fcmp(m, LLVMRealOLT, x, cf(m, -104.0)), cf(m, 0.0), y);
  return sel(m, fcmp(m, LLVMRealUNO, x, x), x, y);
}

static LLVMValueRef emit_log(mb_t *m, LLVMValueRef x) {
  static const double p[] = {7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1,
                             -1.2420140846E-1, 1.4249322787E-1, -1.6668057665E-1,
                             2.0000714765E-1,  -2.4999993993E-1, 3.3333331174E-1};
  LLVMValueRef e, f = sub(m, split_mantissa(m, x, &e), cf(m, 1.0));
  LLVMValueRef z = mul(m, f, f);
  LLVMValueRef y = mul(m, mul(m, f, z), horner(m, f, p, 9));
  LLVMValueRef fe = LLVMBuildSIToFP(m->b, e, m->f32, "");
  y = add(m, y, mul(m, fe, cf(m, -2.12194440e-4)));
  y = sub(m, y, mul(m, z, cf(m, 0.5)));
  LLVMValueRef r = add(m, add(m, f, y), mul(m, fe, cf(m, 0.693359375)));
  r = sel(m, fcmp(m, LLVMRealOEQ, x, cf(m, __builtin_inf())), x, r);
  r = sel(m, fcmp(m, LLVMRealOLT, x, cf(m, 0.0)), cf(m, __builtin_nan("")), r);
  r = sel(m, fcmp(m, LLVMRealOEQ, x, cf(m, 0.0)), cf(m, -__builtin_inf()), r);
  return sel(m, fcmp(m, LLVMRealUNO, x, x), x, r);
}

static LLVMValueRef emit_tanh(mb_t *m, LLVMValueRef x, LLVMValueRef expf) {
  static const double p[] = {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1,
                             -3.33332819422E-1};
  LLVMValueRef ax = intr1(m, "llvm.fabs.f32", x);
  LLVMValueRef z = mul(m, x, x);
  LLVMValueRef small = add(m, mul(m, mul(m, horner(m, z, p, 5), z), x), x);
  small = sel(m, fcmp(m, LLVMRealOEQ, x, cf(m, 0.0)), x, small); /* tanh(-0) = -0 */
  LLVMValueRef e = call1(m, expf, add(m, ax, ax));
  LLVMValueRef big = sub(m, cf(m, 1.0), LLVMBuildFDiv(m->b, cf(m, 2.0), add(m, e, cf(m, 1.0)), ""));
  big = intr2(m, "llvm.copysign.f32", big, x);
  return sel(m, fcmp(m, LLVMRealOLT, ax, cf(m, 0.625)), small, big);
}

static LLVMValueRef emit_logistic(mb_t *m, LLVMValueRef x, LLVMValueRef expf) {
  LLVMValueRef e = call1(m, expf, LLVMBuildFNeg(m->b, intr1(m, "llvm.fabs.f32", x), ""));
  LLVMValueRef r = LLVMBuildFDiv(m->b, cf(m, 1.0), add(m, cf(m, 1.0), e), "");
  LLVMValueRef y = sel(m, fcmp(m, LLVMRealOGE, x, cf(m, 0.0)), r, mul(m, e, r));
  return sel(m, fcmp(m, LLVMRealUNO, x, x), x, y);
}

static LLVMValueRef emit_log1p(mb_t *m, LLVMValueRef x, LLVMValueRef logf) {
  LLVMValueRef u = add(m, cf(m, 1.0), x);
  /* x / (u - 1) is near 1: no overflow for huge x */
  LLVMValueRef y = mul(m, call1(m, logf, u), LLVMBuildFDiv(m->b, x, sub(m, u, cf(m, 1.0)), ""));
  y = sel(m, fcmp(m, LLVMRealOEQ, u, cf(m, 1.0)), x, y);
  y = sel(m, fcmp(m, LLVMRealOEQ, x, cf(m, __builtin_inf())), x, y);
  return sel(m, fcmp(m, LLVMRealOEQ, u, cf(m, 0.0)), cf(m, -__builtin_inf()), y); /* x = -1 */
}

static LLVMValueRef emit_expm1(mb_t *m, LLVMValueRef x, LLVMValueRef expf, LLVMValueRef logf) {
  LLVMValueRef u = call1(m, expf, x), um1 = sub(m, u, cf(m, 1.0));
  LLVMValueRef y = mul(m, um1, LLVMBuildFDiv(m->b, x, call1(m, logf, u), ""));
  y = sel(m, fcmp(m, LLVMRealOEQ, um1, cf(m, -1.0)), cf(m, -1.0), y);
  y = sel(m, fcmp(m, LLVMRealOEQ, u, cf(m, 1.0)), x, y);
  y = sel(m, fcmp(m, LLVMRealOEQ, u, cf(m, __builtin_inf())), u, y);
  return sel(m, fcmp(m, LLVMRealUNO, x, x), x, y);
}

/* ---- double-evaluated functions: erf, power, sine, cosine ---------------- */

static LLVMValueRef ext(mb_t *m, LLVMValueRef x) { return LLVMBuildFPExt(m->b, x, m->f64, ""); }
static LLVMValueRef trunc32(mb_t *m, LLVMValueRef x) { return LLVMBuildFPTrunc(m->b, x, m->f32, ""); }
static LLVMValueRef icmp(mb_t *m, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildICmp(m->b, p, a, b, "");
}
static LLVMValueRef bit_set(mb_t *m, LLVMValueRef v, int64_t mask) { /* (v & mask) != 0, i32 */
  return icmp(m, LLVMIntNE, LLVMBuildAnd(m->b, v, ci(m, mask), ""), ci(m, 0));
}

/* 2^w in double, w clamped to [-1020, 1020] (so NaN is the caller's to
 * handle): 2^n E(t), n = rint(w), t = w - n exact, 2^n from its bits. */
static LLVMValueRef emit_exp2_f64(mb_t *m, LLVMValueRef w) {
  static const double e[] = {1.0205905413765596e-7, 1.325964524488711e-6,  1.5252672924850736e-5,
                             1.5403433751251009e-4, 1.3333558200794593e-3, 9.6181291939343134e-3,
                             5.5504108664651672e-2, 2.402265069564034e-1,  6.9314718055994616e-1,
                             1.0000000000000135};
  w = intr2(m, "llvm.minnum.f64", intr2(m, "llvm.maxnum.f64", w, cd(m, -1020.0)), cd(m, 1020.0));
  LLVMValueRef n = intr1(m, "llvm.rint.f64", w), t = sub(m, w, n);
  LLVMValueRef k = LLVMBuildAdd(m->b, LLVMBuildFPToSI(m->b, n, m->i64, ""), cl(m, 1023), "");
  LLVMValueRef scale = LLVMBuildBitCast(m->b, LLVMBuildShl(m->b, k, cl(m, 52), ""), m->f64, "");
  return mul(m, horner(m, t, e, 10), scale);
}

/* log2 x in double for an f32 x > 0 finite (other x: a finite value the
 * caller replaces). */
static LLVMValueRef emit_log2_f64(mb_t *m, LLVMValueRef x) {
  static const double a[] = {9.8040478198765264e-2, 1.1087124955038745e-1, 1.4286083072937863e-1,
                             1.9999997445916191e-1, 3.3333333339789626e-1, 9.9999999999997359e-1};
  LLVMValueRef e, md = ext(m, split_mantissa(m, x, &e));
  /* m - 1 and m + 1 are exact in double */
  LLVMValueRef s = LLVMBuildFDiv(m->b, sub(m, md, cd(m, 1.0)), add(m, md, cd(m, 1.0)), "");
  LLVMValueRef l = mul(m, mul(m, s, horner(m, mul(m, s, s), a, 6)), cd(m, 2.8853900817779268)); /* 2 log2(e) */
  return add(m, LLVMBuildSIToFP(m->b, e, m->f64, ""), l);
}

static LLVMValueRef emit_pow(mb_t *m, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef ax = intr1(m, "llvm.fabs.f32", x), ay = intr1(m, "llvm.fabs.f32", y);
  LLVMValueRef l = emit_log2_f64(m, ax);
  l = sel(m, fcmp(m, LLVMRealOEQ, ax, cf(m, 0.0)), cd(m, -__builtin_inf()), l);
  l = sel(m, fcmp(m, LLVMRealOEQ, ax, cf(m, __builtin_inf())), cd(m, __builtin_inf()), l);
  /* |w| > 1020 (infinite included) rounds to inf or 0 in f32 anyway */
  LLVMValueRef r = trunc32(m, emit_exp2_f64(m, mul(m, ext(m, y), l)));
  /* y's parity: every f32 of magnitude >= 2^24 (and inf) is an even integer */
  LLVMValueRef yint = fcmp(m, LLVMRealOEQ, intr1(m, "llvm.floor.f32", y), y);
  LLVMValueRef small = fcmp(m, LLVMRealOLT, ay, cf(m, 16777216.0));
  LLVMValueRef yi = LLVMBuildFPToSI(m->b, sel(m, small, y, cf(m, 0.0)), m->i32, "");
  LLVMValueRef odd = LLVMBuildAnd(m->b, LLVMBuildAnd(m->b, yint, small, ""), bit_set(m, yi, 1), "");
  LLVMValueRef xneg = icmp(m, LLVMIntSLT, LLVMBuildBitCast(m->b, x, m->i32, ""), ci(m, 0)); /* -0 and -inf too */
  r = sel(m, LLVMBuildAnd(m->b, xneg, odd, ""), LLVMBuildFNeg(m->b, r, ""), r);
  LLVMValueRef fin_neg = LLVMBuildAnd(m->b, fcmp(m, LLVMRealOLT, x, cf(m, 0.0)),
                                      fcmp(m, LLVMRealOGT, x, cf(m, -__builtin_inf())), "");
  r = sel(m, LLVMBuildAnd(m->b, fin_neg, LLVMBuildNot(m->b, yint, ""), ""), cf(m, __builtin_nan("")), r);
  r = sel(m, fcmp(m, LLVMRealUNO, x, y), add(m, x, y), r);
  LLVMValueRef one = LLVMBuildAnd(m->b, fcmp(m, LLVMRealOEQ, ax, cf(m, 1.0)),
                                  fcmp(m, LLVMRealOEQ, ay, cf(m, __builtin_inf())), ""); /* (-1)^+-inf */
  one = LLVMBuildOr(m->b, one, fcmp(m, LLVMRealOEQ, x, cf(m, 1.0)), "");
  one = LLVMBuildOr(m->b, one, fcmp(m, LLVMRealOEQ, y, cf(m, 0.0)), "");
  return sel(m, one, cf(m, 1.0), r);
}

/* The first 224 fraction bits of 2/pi (math_coeffs.py), after one zero word
 * so that the exponents near 2^23 read leading zeros. */
static const uint32_t two_over_pi[8] = {0,          0xa2f9836e, 0x4e441529, 0xfc2757d1,
                                        0xf534ddc0, 0xdb629599, 0x3c439041, 0xfe5163ab};

/* x = k pi/2 + r for an f32 x >= 0 finite: r in double, |r| <= pi/4 (a hair
 * more where k's rounding ties), and k mod 4 in *quadrant (i32). */
static LLVMValueRef emit_reduce_pi2(mb_t *m, LLVMValueRef ax, LLVMValueRef *quadrant) {
  LLVMBuilderRef b = m->b;
  LLVMValueRef bits = LLVMBuildBitCast(b, ax, m->i32, "");
  LLVMValueRef be = LLVMBuildLShr(b, bits, ci(m, 23), ""); /* biased exponent: ax >= 0 */
  LLVMValueRef big = icmp(m, LLVMIntUGE, be, ci(m, 150)); /* ax >= 2^23 */
  /* Cody-Waite, |x| < 2^23: k < 2^23, so k P1 and k P2 are exact and
   * x - k P1 is exact (both multiples of 2^-29, the difference below 1). */
  LLVMValueRef xd = sel(m, big, cd(m, 0.0), ext(m, ax));
  LLVMValueRef k = intr1(m, "llvm.rint.f64", mul(m, xd, cd(m, 0x1.45f306dc9c883p-1)));
  LLVMValueRef r1 = sub(m, xd, mul(m, k, cd(m, 0x1.921fb54p+0)));
  r1 = sub(m, r1, mul(m, k, cd(m, 0x1.10b46118p-30)));
  r1 = sub(m, r1, mul(m, k, cd(m, 0x1.313198a2e037p-61)));
  LLVMValueRef q1 = LLVMBuildAnd(b, LLVMBuildFPToSI(b, k, m->i32, ""), ci(m, 3), "");
  /* Payne-Hanek, |x| = mant 2^E, E = be - 150 in [0, 104]: the bits of 2/pi
   * before position E - 1 add multiples of 4 times the integer mant, so
   * x 2/pi mod 4 = mant G mod 4 with G the 96 bits from position E - 1
   * (2 integer bits, 94 fraction bits): mod 2^96 in integers. G starts at
   * bit P = E + 30 of the padded table: word j = P / 32, shift s = P % 32. */
  LLVMValueRef e = LLVMBuildSub(b, be, ci(m, 150), "");
  e = sel(m, icmp(m, LLVMIntSLT, e, ci(m, 0)), ci(m, 0), e);
  e = sel(m, icmp(m, LLVMIntSGT, e, ci(m, 104)), ci(m, 104), e); /* inf and NaN: the caller's */
  LLVMValueRef p = LLVMBuildAdd(b, e, ci(m, 30), "");
  LLVMValueRef j = LLVMBuildLShr(b, p, ci(m, 5), "");
  LLVMValueRef sh = LLVMBuildZExt(b, LLVMBuildAnd(b, p, ci(m, 31), ""), m->i64, "");
  LLVMValueRef w[4];
  for (int t = 0; t < 4; t++) { /* w[t] = two_over_pi[j + t], j in [0, 4] */
    w[t] = cl(m, two_over_pi[t]);
    for (int jj = 1; jj <= 4; jj++) w[t] = sel(m, icmp(m, LLVMIntEQ, j, ci(m, jj)), cl(m, two_over_pi[jj + t]), w[t]);
  }
  LLVMValueRef g[3], mask32 = cl(m, 0xffffffff);
  for (int t = 0; t < 3; t++) { /* 32 bits at shift sh into w[t] w[t+1] */
    LLVMValueRef pair = LLVMBuildOr(b, LLVMBuildShl(b, w[t], cl(m, 32), ""), w[t + 1], "");
    g[t] = LLVMBuildLShr(b, LLVMBuildShl(b, pair, sh, ""), cl(m, 32), "");
  }
  LLVMValueRef mant = LLVMBuildZExt(b, LLVMBuildOr(b, LLVMBuildAnd(b, bits, ci(m, 0x7fffff), ""), ci(m, 0x800000), ""),
                                    m->i64, "");
  LLVMValueRef p0 = LLVMBuildMul(b, mant, g[0], ""), p1 = LLVMBuildMul(b, mant, g[1], ""),
               p2 = LLVMBuildMul(b, mant, g[2], ""); /* each < 2^56 */
  LLVMValueRef lo = LLVMBuildAnd(b, p2, mask32, "");
  LLVMValueRef t = LLVMBuildAdd(b, LLVMBuildLShr(b, p2, cl(m, 32), ""), LLVMBuildAnd(b, p1, mask32, ""), "");
  LLVMValueRef hi = LLVMBuildAdd(b, LLVMBuildAdd(b, p0, LLVMBuildLShr(b, p1, cl(m, 32), ""), ""),
                                 LLVMBuildLShr(b, t, cl(m, 32), ""), "");
  /* h = the top 64 of the 96 product bits: the quadrant in 2, then the
   * fraction; + 1/2 so that the quadrant is the nearest, the fraction signed */
  LLVMValueRef h = LLVMBuildOr(b, LLVMBuildShl(b, hi, cl(m, 32), ""), LLVMBuildAnd(b, t, mask32, ""), "");
  h = LLVMBuildAdd(b, h, cl(m, (int64_t)1 << 61), "");
  LLVMValueRef q2 = LLVMBuildTrunc(b, LLVMBuildLShr(b, h, cl(m, 62), ""), m->i32, "");
  LLVMValueRef f = LLVMBuildSub(b, LLVMBuildAnd(b, h, cl(m, ((int64_t)1 << 62) - 1), ""), cl(m, (int64_t)1 << 61), "");
  /* f 2^-62 + lo 2^-94 quadrants, converted in 32-bit parts (AVX2 has no
   * packed i64 -> double) */
  LLVMValueRef fh = LLVMBuildSIToFP(b, LLVMBuildTrunc(b, LLVMBuildAShr(b, f, cl(m, 32), ""), m->i32, ""), m->f64, "");
  LLVMValueRef fl = LLVMBuildUIToFP(b, LLVMBuildTrunc(b, f, m->i32, ""), m->f64, "");
  LLVMValueRef fo = LLVMBuildUIToFP(b, LLVMBuildTrunc(b, lo, m->i32, ""), m->f64, "");
  LLVMValueRef fr = add(m, add(m, mul(m, fh, cd(m, 0x1p-30)), mul(m, fl, cd(m, 0x1p-62))), mul(m, fo, cd(m, 0x1p-94)));
  LLVMValueRef r2 = mul(m, fr, cd(m, 0x1.921fb54442d18p+0));
  *quadrant = sel(m, big, q2, q1);
  return sel(m, big, r2, r1);
}

static LLVMValueRef emit_sincos(mb_t *m, LLVMValueRef x, bool is_cos) {
  static const double s[] = {2.7173456841089953e-6, -1.98392022122311e-4, 8.3333287824588803e-3,
                             -1.6666666631591165e-1, 9.9999999999567308e-1};
  static const double c[] = {2.4379831251175366e-5, -1.3886617999647076e-3, 4.1666616692532826e-2,
                             -4.9999999614857608e-1, 9.9999999995248942e-1};
  LLVMValueRef ax = intr1(m, "llvm.fabs.f32", x), q;
  LLVMValueRef r = emit_reduce_pi2(m, ax, &q), z = mul(m, r, r);
  LLVMValueRef sv = mul(m, r, horner(m, z, s, 5)), cv = horner(m, z, c, 5);
  /* sin(k pi/2 + r) = sin r, cos r, -sin r, -cos r for k mod 4 = 0..3; cos
   * is sin a quadrant on */
  if (is_cos) q = LLVMBuildAdd(m->b, q, ci(m, 1), "");
  LLVMValueRef v = sel(m, bit_set(m, q, 1), cv, sv), neg = bit_set(m, q, 2);
  if (!is_cos) neg = LLVMBuildXor(m->b, neg, icmp(m, LLVMIntSLT, LLVMBuildBitCast(m->b, x, m->i32, ""), ci(m, 0)), "");
  LLVMValueRef y = trunc32(m, sel(m, neg, LLVMBuildFNeg(m->b, v, ""), v));
  y = sel(m, fcmp(m, LLVMRealOEQ, ax, cf(m, __builtin_inf())), cf(m, __builtin_nan("")), y);
  return sel(m, fcmp(m, LLVMRealUNO, x, x), x, y);
}

static LLVMValueRef emit_erf(mb_t *m, LLVMValueRef x) {
  static const double p[] = {-9.6670445714869964e-6, 1.1265959025606609e-4, -8.4840804055351063e-4,
                             5.2210318078580228e-3,  -2.6865430727670243e-2, 1.1283782495236845e-1,
                             -3.761263846802871e-1,  1.1283791670615434};
  static const double r[] = {-2.5171827172035952e-8, 1.0640273000123519e-7, -2.4285129596710037e-7,
                             9.5358168251325271e-7,  -4.2622102762483794e-6, 1.6171662364662953e-5,
                             -5.8830453968274178e-5, 2.1085107298742636e-4, -7.3360554741770438e-4,
                             2.4671008626105985e-3,  -8.0015673155146859e-3, 2.4937988025560304e-2,
                             -7.434734683729572e-2,  2.1080636426942343e-1};
  LLVMValueRef xd = ext(m, x), ad = intr1(m, "llvm.fabs.f64", xd);
  LLVMValueRef small = mul(m, xd, horner(m, mul(m, xd, xd), p, 8)); /* erf(-0) = -0 */
  LLVMValueRef a4 = intr2(m, "llvm.minnum.f64", ad, cd(m, 4.0));
  LLVMValueRef e = emit_exp2_f64(m, mul(m, LLVMBuildFNeg(m->b, mul(m, a4, a4), ""), cd(m, 1.4426950408889634)));
  LLVMValueRef big = sub(m, cd(m, 1.0), mul(m, e, horner(m, sub(m, a4, cd(m, 2.5)), r, 14)));
  big = intr2(m, "llvm.copysign.f64", big, xd);
  LLVMValueRef y = trunc32(m, sel(m, fcmp(m, LLVMRealOLT, ad, cd(m, 1.0)), small, big));
  return sel(m, fcmp(m, LLVMRealUNO, x, x), x, y);
}

LLVMValueRef cg_math_f32(LLVMModuleRef mod, ts_opcode_t op) {
  static const struct {
    ts_opcode_t op;
    const char *name;
  } fns[] = {
      {TS_OP_EXPONENTIAL, "ts_expf"},
      {TS_OP_LOG, "ts_logf"},
      {TS_OP_TANH, "ts_tanhf"},
      {TS_OP_LOGISTIC, "ts_logisticf"},
      {TS_OP_SQRT, "ts_sqrtf"},
      {TS_OP_LOG_PLUS_ONE, "ts_log1pf"},
      {TS_OP_EXPONENTIAL_MINUS_ONE, "ts_expm1f"},
      {TS_OP_RSQRT, "ts_rsqrtf"},
      {TS_OP_ERF, "ts_erff"},
      {TS_OP_POWER, "ts_powf"},
      {TS_OP_SINE, "ts_sinf"},
      {TS_OP_COSINE, "ts_cosf"},
  };
  const char *name = NULL;
  for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++)
    if (fns[k].op == op) name = fns[k].name;
  if (!name) return NULL;
  LLVMValueRef fn = LLVMGetNamedFunction(mod, name);
  if (fn) return fn;
  LLVMValueRef expf = NULL, logf = NULL;
  if (op == TS_OP_TANH || op == TS_OP_LOGISTIC || op == TS_OP_EXPONENTIAL_MINUS_ONE)
    expf = cg_math_f32(mod, TS_OP_EXPONENTIAL);
  if (op == TS_OP_LOG_PLUS_ONE || op == TS_OP_EXPONENTIAL_MINUS_ONE) logf = cg_math_f32(mod, TS_OP_LOG);
  LLVMContextRef cx = LLVMGetModuleContext(mod);
  mb_t m = {.mod = mod, .f32 = LLVMFloatTypeInContext(cx), .f64 = LLVMDoubleTypeInContext(cx),
            .i32 = LLVMInt32TypeInContext(cx), .i64 = LLVMInt64TypeInContext(cx), .i1 = LLVMInt1TypeInContext(cx)};
  LLVMTypeRef params[2] = {m.f32, m.f32};
  LLVMTypeRef ft = LLVMFunctionType(m.f32, params, op == TS_OP_POWER ? 2 : 1, 0);
  fn = LLVMAddFunction(mod, name, ft);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  unsigned kind = LLVMGetEnumAttributeKindForName("alwaysinline", strlen("alwaysinline"));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cx, kind, 0));
  m.b = LLVMCreateBuilderInContext(cx);
  LLVMPositionBuilderAtEnd(m.b, LLVMAppendBasicBlockInContext(cx, fn, "entry"));
  LLVMValueRef x = LLVMGetParam(fn, 0), y;
  switch (op) {
  case TS_OP_EXPONENTIAL: y = emit_exp(&m, x); break;
  case TS_OP_LOG: y = emit_log(&m, x); break;
  case TS_OP_TANH: y = emit_tanh(&m, x, expf); break;
  case TS_OP_LOGISTIC: y = emit_logistic(&m, x, expf); break;
  case TS_OP_SQRT: y = intr1(&m, "llvm.sqrt.f32", x); break;
  case TS_OP_LOG_PLUS_ONE: y = emit_log1p(&m, x, logf); break;
  case TS_OP_EXPONENTIAL_MINUS_ONE: y = emit_expm1(&m, x, expf, logf); break;
  case TS_OP_ERF: y = emit_erf(&m, x); break;
  case TS_OP_POWER: y = emit_pow(&m, x, LLVMGetParam(fn, 1)); break;
  case TS_OP_SINE: y = emit_sincos(&m, x, false); break;
  case TS_OP_COSINE: y = emit_sincos(&m, x, true); break;
  default: y = LLVMBuildFDiv(m.b, cf(&m, 1.0), intr1(&m, "llvm.sqrt.f32", x), ""); break;
  }
  LLVMBuildRet(m.b, y);
  LLVMDisposeBuilder(m.b);
  return fn;
}
