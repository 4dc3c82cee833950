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
 *         correct roundings: at most 1.5 ULP, as kernels/ computes it). */
#include "codegen_internal.h"

#include <string.h>

typedef struct {
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef f32, i32, i1;
} mb_t;

static LLVMValueRef cf(mb_t *m, double v) { return LLVMConstReal(m->f32, v); }
static LLVMValueRef ci(mb_t *m, int64_t v) { return LLVMConstInt(m->i32, (unsigned long long)v, 1); }
static LLVMValueRef add(mb_t *m, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(m->b, a, b, ""); }
static LLVMValueRef sub(mb_t *m, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(m->b, a, b, ""); }
static LLVMValueRef mul(mb_t *m, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(m->b, a, b, ""); }
static LLVMValueRef sel(mb_t *m, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(m->b, c, a, b, "");
}
static LLVMValueRef fcmp(mb_t *m, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(m->b, p, a, b, "");
}

LLVMValueRef cg_intrinsic_f32(LLVMModuleRef mod, const char *name, int nargs) {
  LLVMValueRef f = LLVMGetNamedFunction(mod, name);
  if (f) return f;
  LLVMTypeRef f32 = LLVMFloatTypeInContext(LLVMGetModuleContext(mod));
  LLVMTypeRef args[3] = {f32, f32, f32};
  return LLVMAddFunction(mod, name, LLVMFunctionType(f32, args, (unsigned)nargs, 0));
}

static LLVMValueRef call1(mb_t *m, LLVMValueRef fn, LLVMValueRef x) {
  return LLVMBuildCall2(m->b, LLVMGlobalGetValueType(fn), fn, &x, 1, "");
}
static LLVMValueRef intr1(mb_t *m, const char *name, LLVMValueRef x) {
  return call1(m, cg_intrinsic_f32(m->mod, name, 1), x);
}
static LLVMValueRef intr2(mb_t *m, const char *name, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef fn = cg_intrinsic_f32(m->mod, name, 2), a[2] = {x, y};
  return LLVMBuildCall2(m->b, LLVMGlobalGetValueType(fn), fn, a, 2, "");
}

/* Horner: c[0] x^(n-1) + ... + c[n-1]. */
static LLVMValueRef horner(mb_t *m, LLVMValueRef x, const double *c, int n) {
  LLVMValueRef y = cf(m, c[0]);
  for (int k = 1; k < n; k++) y = add(m, mul(m, y, x), cf(m, c[k]));
  return y;
}

/* 2^k for k in [-126, 127], exactly. */
static LLVMValueRef pow2i(mb_t *m, LLVMValueRef k) {
  LLVMValueRef bits = LLVMBuildShl(m->b, LLVMBuildAdd(m->b, k, ci(m, 127), ""), ci(m, 23), "");
  return LLVMBuildBitCast(m->b, bits, m->f32, "");
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
  LLVMValueRef den = fcmp(m, LLVMRealOLT, x, cf(m, 1.17549435082228750797e-38));
  LLVMValueRef xs = sel(m, den, mul(m, x, cf(m, 8388608.0)), x);
  LLVMValueRef bits = LLVMBuildBitCast(m->b, xs, m->i32, "");
  LLVMValueRef e = LLVMBuildSub(m->b, LLVMBuildAnd(m->b, LLVMBuildLShr(m->b, bits, ci(m, 23), ""), ci(m, 0xff), ""),
                                ci(m, 126), "");
  e = LLVMBuildSub(m->b, e, sel(m, den, ci(m, 23), ci(m, 0)), "");
  LLVMValueRef mb = LLVMBuildOr(m->b, LLVMBuildAnd(m->b, bits, ci(m, 0x007fffff), ""), ci(m, 0x3f000000), "");
  LLVMValueRef mm = LLVMBuildBitCast(m->b, mb, m->f32, ""); /* [0.5, 1) */
  LLVMValueRef lo = fcmp(m, LLVMRealOLT, mm, cf(m, 0.707106781186547524));
  e = LLVMBuildSub(m->b, e, sel(m, lo, ci(m, 1), ci(m, 0)), "");
  LLVMValueRef f = sub(m, sel(m, lo, add(m, mm, mm), mm), cf(m, 1.0));
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

LLVMValueRef cg_math_f32(LLVMModuleRef mod, ts_opcode_t op) {
  const char *name;
  switch (op) {
  case TS_OP_EXPONENTIAL: name = "ts_expf"; break;
  case TS_OP_LOG: name = "ts_logf"; break;
  case TS_OP_TANH: name = "ts_tanhf"; break;
  case TS_OP_LOGISTIC: name = "ts_logisticf"; break;
  case TS_OP_SQRT: name = "ts_sqrtf"; break;
  case TS_OP_LOG_PLUS_ONE: name = "ts_log1pf"; break;
  case TS_OP_EXPONENTIAL_MINUS_ONE: name = "ts_expm1f"; break;
  case TS_OP_RSQRT: name = "ts_rsqrtf"; break;
  default: return NULL;
  }
  LLVMValueRef fn = LLVMGetNamedFunction(mod, name);
  if (fn) return fn;
  LLVMValueRef expf = NULL, logf = NULL;
  if (op == TS_OP_TANH || op == TS_OP_LOGISTIC || op == TS_OP_EXPONENTIAL_MINUS_ONE)
    expf = cg_math_f32(mod, TS_OP_EXPONENTIAL);
  if (op == TS_OP_LOG_PLUS_ONE || op == TS_OP_EXPONENTIAL_MINUS_ONE) logf = cg_math_f32(mod, TS_OP_LOG);
  LLVMContextRef cx = LLVMGetModuleContext(mod);
  mb_t m = {.mod = mod, .f32 = LLVMFloatTypeInContext(cx), .i32 = LLVMInt32TypeInContext(cx),
            .i1 = LLVMInt1TypeInContext(cx)};
  LLVMTypeRef ft = LLVMFunctionType(m.f32, &m.f32, 1, 0);
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
  default: y = LLVMBuildFDiv(m.b, cf(&m, 1.0), intr1(&m, "llvm.sqrt.f32", x), ""); break;
  }
  LLVMBuildRet(m.b, y);
  LLVMDisposeBuilder(m.b);
  return fn;
}
