/* Fusion -> LLVM IR -> default<O2> -> object file -> ORC LLJIT, the object
 * kept in the kernel cache (cache.c) so a later process skips the first
 * three. A fusion's kernel is emitted
 * with the ts_kernel_fn signature itself: it reads the operands' data
 * pointers out of the ts_array_t views and runs one loop over the (static)
 * element count (an input fusion, whose root is a reduce: kernels/'s reduce
 * loops, bit for bit), so the runtime calls it like any kernel. */
#include "ts_codegen.h"

#include "codegen_internal.h"
#include "ts_env.h"

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Object.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h> /* LLVM_VERSION_STRING: plain C macros */

#include "codegen_sources.h" /* CG_SOURCES_SHA256, generated (codegen/sources_hash.cmake) */

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- the process's JIT ------------------------------------------------------ */

static pthread_once_t jit_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t jit_mu = PTHREAD_MUTEX_INITIALIZER;
static LLVMOrcLLJITRef jit;
static LLVMTargetMachineRef opt_tm; /* for the pass pipeline's cost model */
static char jit_error[512];
static char *host_cpu, *host_features;

static void take_error(LLVMErrorRef e) {
  char *msg = LLVMGetErrorMessage(e);
  snprintf(jit_error, sizeof jit_error, "%s", msg);
  LLVMDisposeErrorMessage(msg);
}

static LLVMTargetMachineRef host_tm(void) {
  char *triple = LLVMGetDefaultTargetTriple(), *err = NULL;
  LLVMTargetRef t;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(triple, &t, &err) == 0)
    tm = LLVMCreateTargetMachine(t, triple, host_cpu, host_features, LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                 LLVMCodeModelJITDefault);
  else
    snprintf(jit_error, sizeof jit_error, "%s", err ? err : "no target for the host");
  LLVMDisposeMessage(err);
  LLVMDisposeMessage(triple);
  return tm;
}

static void jit_start(void) {
  if (ts_env_int(TS_ENV_CODEGEN_NO_JIT, 0)) { /* test hook: a JIT that cannot start */
    snprintf(jit_error, sizeof jit_error, "TESSERA_CODEGEN_NO_JIT is set");
    return;
  }
  if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
    snprintf(jit_error, sizeof jit_error, "LLVM has no native target");
    return;
  }
  host_cpu = LLVMGetHostCPUName();
  host_features = LLVMGetHostCPUFeatures();
  opt_tm = host_tm();
  LLVMTargetMachineRef jtm = host_tm();
  if (!opt_tm || !jtm) return;
  LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(b, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(jtm));
  LLVMOrcLLJITRef j;
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&j, b);
  if (e) {
    take_error(e);
    return;
  }
  jit = j;
}

/* ---- compiled modules ------------------------------------------------------- */

/* A fusion's kernel: one of the distinct kernels (fusions whose computations
 * are the same up to names share one). */
typedef struct {
  const ts_hlo_instr_t *instr;
  int kernel;
} kernel_t;

typedef struct {
  char sym[48];
  ts_kernel_fn fn;
  const ts_hlo_instr_t *rep; /* the first fusion with this kernel: the one emitted */
  bool flat;
  const char *key; /* kernel_key's text, keylen bytes (during ts_codegen_compile only) */
  size_t keylen;
} distinct_t;

struct ts_codegen {
  int n, ndistinct;
  kernel_t *k; /* sorted by instr, for ts_codegen_kernel */
  distinct_t *d;
  bool has_entry; /* opts.entry and an elementwise entry: entry_sym is compiled too */
  char entry_sym[48];
  char prefix[24]; /* every symbol's: "ts_<16 hex of the module key>_" */
  ts_codegen_loop_fn entry;
};



static ts_i64_list_t list_attr(const ts_hlo_instr_t *i, const char *name) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, name);
  return a && a->kind == TS_ATTR_INT_LIST ? a->v.list : (ts_i64_list_t){0, NULL};
}

static bool is_half(ts_elem_t e) { return e == TS_BF16 || e == TS_F16; }

/* The reducer of reduce instruction r when codegen/ compiles it, else
 * TS_OP_COUNT: one operand and one init value, both of r's element type,
 * the init a scalar constant or parameter, and a to_apply region that is
 * one op of its two scalar parameters (ts_reducer_op, as kernels/ picks its
 * fast path): add, multiply, maximum or minimum over f32, bf16, f16 and
 * s32, and, or or xor over s32 and pred. */
static ts_opcode_t reduce_op(const ts_hlo_instr_t *r) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(r, "to_apply"), *da = ts_hlo_instr_attr(r, "dimensions");
  if (r->nops != 2 || !a || a->kind != TS_ATTR_COMP || a->v.comps.n != 1 || !da || da->kind != TS_ATTR_INT_LIST)
    return TS_OP_COUNT;
  const ts_hlo_instr_t *x = r->ops[0], *init = r->ops[1];
  ts_elem_t e = r->shape->elem;
  if (!ts_shape_is_array(x->shape) || !ts_shape_is_array(init->shape) || x->shape->elem != e ||
      init->shape->elem != e || init->shape->rank != 0)
    return TS_OP_COUNT;
  if (init->op != TS_OP_CONSTANT && init->op != TS_OP_PARAMETER) return TS_OP_COUNT;
  /* dimensions: distinct dims of x; r keeps the others, in order */
  bool red[8] = {false};
  int kept = 0;
  if (x->shape->rank > 8) return TS_OP_COUNT;
  for (int k = 0; k < da->v.list.n; k++) {
    int64_t d = da->v.list.v[k];
    if (d < 0 || d >= x->shape->rank || red[d]) return TS_OP_COUNT;
    red[d] = true;
  }
  for (int d = 0; d < x->shape->rank; d++)
    if (!red[d] && (kept >= r->shape->rank || r->shape->dims[kept++] != x->shape->dims[d])) return TS_OP_COUNT;
  if (kept != r->shape->rank) return TS_OP_COUNT;
  const ts_hlo_comp_t *rc = a->v.comps.comps[0];
  ts_opcode_t op = ts_reducer_op(rc);
  if (op == TS_OP_COUNT || rc->root->shape->elem != e) return TS_OP_COUNT;
  for (int p = 0; p < 2; p++)
    if (!ts_shape_is_array(rc->params[p]->shape) || rc->params[p]->shape->rank != 0 || rc->params[p]->shape->elem != e)
      return TS_OP_COUNT;
  bool arith = op == TS_OP_ADD || op == TS_OP_MULTIPLY || op == TS_OP_MAXIMUM || op == TS_OP_MINIMUM;
  bool bits = op == TS_OP_AND || op == TS_OP_OR || op == TS_OP_XOR;
  return ((e == TS_F32 || is_half(e)) && arith) || (e == TS_S32 && (arith || bits)) || (e == TS_PRED && bits)
             ? op
             : TS_OP_COUNT;
}

/* The math functions compiled over bf16 and f16 values. kernels/ computes
 * them with libm in f32 and rounds to the type; ours (math.c) may differ
 * from libm by an f32 ULP or so, which can flip a rounding to bf16 or f16,
 * so only the functions whose rounded results equal the interpreter's on
 * every one of the 65536 inputs of the type are here (test_codegen_kernels'
 * half_math checks them all against the host's libm; glibc 2.36 here).
 * Left to kernels/: logistic (kernels/' 1 / (1 + expf(-x)) is 0 from x <=
 * -89 where ours keeps the subnormal tail, and 6 f16 results flip) and f16
 * expm1 (one input flips); power, of two operands, is not checked at all.
 * sqrt and rsqrt are correctly rounded on both sides: always compiled. */
static bool half_math_ok(ts_opcode_t op, ts_elem_t e) {
  switch (op) {
  case TS_OP_EXPONENTIAL: case TS_OP_LOG: case TS_OP_TANH: case TS_OP_LOG_PLUS_ONE: case TS_OP_ERF: case TS_OP_SINE:
  case TS_OP_COSINE:
    return true;
  case TS_OP_EXPONENTIAL_MINUS_ONE: return e == TS_BF16;
  default: return false;
  }
}

/* Whether the computation is a loop we emit: f32, s32, pred, bf16 and f16
 * arrays, ops from the list below (each with the element types it takes:
 * bf16 and f16 wherever f32 is, but for power and, until half_math_ok
 * says otherwise, the math functions), and at the
 * root, optionally, a reduce (reduce_op) of the values the others compute.
 * *flat: every value (but a reduce root) has the element count of the root
 * (of the reduce's operand) or one element and no op moves elements, so one
 * loop over the linear index (of any length n) does; otherwise nested loops
 * over the root's dimensions with each operand read at its index map (XLA's
 * elemental emitter). */
bool cg_supported(const ts_hlo_comp_t *c, int nin, bool *flat) {
  if (c->nparams > nin || c->nparams > MAX_IN) return false;
  const ts_hlo_instr_t *root = c->root;
  if (!root || !ts_shape_is_array(root->shape) || root->shape->rank > 8) return false;
  bool reduce = root->op == TS_OP_REDUCE;
  if (reduce && (root->shape->dynamic || reduce_op(root) == TS_OP_COUNT)) return false;
  int64_t n = ts_shape_elements(reduce ? root->ops[0]->shape : root->shape);
  *flat = true;
  for (int k = 0; k < c->ninstrs; k++) {
    const ts_hlo_instr_t *i = c->instrs[k];
    if (i == root && reduce) continue;
    if (!ts_shape_is_array(i->shape) || i->shape->dynamic || i->shape->rank > 8) return false;
    ts_elem_t e = i->shape->elem;
    if (e != TS_F32 && e != TS_PRED && e != TS_S32 && !is_half(e)) return false;
    int64_t cnt = ts_shape_elements(i->shape);
    if (cnt != n && cnt != 1) *flat = false;
    bool h = is_half(e), f = e == TS_F32 || h, s = e == TS_S32; /* f: a float, computed in f32 */
    switch (i->op) {
    case TS_OP_PARAMETER: break;
    case TS_OP_CONSTANT:
      if (cnt != 1 || !i->literal || i->literal->elided) return false;
      if (h ? !i->literal->f && !i->literal->i : f ? !i->literal->f : !i->literal->i) return false;
      break;
    case TS_OP_BROADCAST: {
      if (i->ops[0]->shape->elem != e) return false;
      int64_t oc = ts_shape_elements(i->ops[0]->shape);
      if (list_attr(i, "dimensions").n != i->ops[0]->shape->rank) return false;
      if (oc != 1 && !ts_shape_equal(i->ops[0]->shape, i->shape, false)) *flat = false;
      break;
    }
    case TS_OP_RESHAPE: case TS_OP_BITCAST: /* row-major: the same elements in order */
      if (i->ops[0]->shape->elem != e) return false;
      if (ts_shape_elements(i->ops[0]->shape) != cnt) return false;
      break;
    case TS_OP_TRANSPOSE:
      if (i->ops[0]->shape->elem != e) return false;
      if (list_attr(i, "dimensions").n != i->shape->rank) return false;
      *flat = false;
      break;
    case TS_OP_SLICE: {
      const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "slice");
      if (!a || a->kind != TS_ATTR_SLICE || a->v.slice->n != i->shape->rank) return false;
      if (i->ops[0]->shape->elem != e) return false;
      for (int d = 0; d < a->v.slice->n; d++)
        if (a->v.slice->stride[d] <= 0) return false;
      *flat = false;
      break;
    }
    case TS_OP_CONCATENATE:
      if (list_attr(i, "dimensions").n != 1 || i->nops > 64) return false;
      for (int o = 0; o < i->nops; o++)
        if (i->ops[o]->shape->elem != e) return false;
      *flat = false;
      break;
    case TS_OP_IOTA: {
      const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "iota_dimension");
      if (!a || a->kind != TS_ATTR_INT || (!f && !s)) return false;
      *flat = false;
      break;
    }
    case TS_OP_CONVERT: break;
    case TS_OP_COMPARE: { /* floats as FLOAT, s32 as SIGNED (each type's default) */
      ts_elem_t oe = i->ops[0]->shape->elem;
      const char *want = oe == TS_F32 || is_half(oe) ? "FLOAT" : oe == TS_S32 ? "SIGNED" : NULL;
      const ts_hlo_attr_t *d = ts_hlo_instr_attr(i, "direction"), *t = ts_hlo_instr_attr(i, "type");
      if (!want || !d || (d->kind != TS_ATTR_IDENT && d->kind != TS_ATTR_RAW)) return false;
      if (t && !(t->kind == TS_ATTR_IDENT && strcmp(t->v.s, want) == 0)) return false;
      break;
    }
    case TS_OP_SELECT: if ((!f && !s) || i->ops[0]->shape->elem != TS_PRED) return false; break;
    case TS_OP_AND: case TS_OP_OR: case TS_OP_XOR: case TS_OP_NOT: if (f) return false; break;
    case TS_OP_ADD: case TS_OP_SUBTRACT: case TS_OP_MULTIPLY: case TS_OP_DIVIDE: case TS_OP_MAXIMUM:
    case TS_OP_MINIMUM: case TS_OP_NEGATE: case TS_OP_ABS:
      if (!f && !s) return false;
      break;
    case TS_OP_REMAINDER: case TS_OP_SHIFT_LEFT: case TS_OP_SHIFT_RIGHT_ARITHMETIC: case TS_OP_SHIFT_RIGHT_LOGICAL:
      if (!s) return false;
      break;
    case TS_OP_FLOOR: case TS_OP_CEIL: case TS_OP_CLAMP: case TS_OP_SQRT: case TS_OP_RSQRT:
      if (!f) return false; /* exact, or correctly rounded as kernels/ computes them: bf16 and f16 too */
      break;
    case TS_OP_EXPONENTIAL: case TS_OP_LOG: case TS_OP_TANH: case TS_OP_LOGISTIC: case TS_OP_LOG_PLUS_ONE:
    case TS_OP_EXPONENTIAL_MINUS_ONE: case TS_OP_ERF: case TS_OP_SINE: case TS_OP_COSINE:
      if (!f || (h && !half_math_ok(i->op, e))) return false;
      break;
    case TS_OP_POWER: if (e != TS_F32) return false; break;
    default: return false;
    }
  }
  return true;
}

bool cg_fusion_compiles(const ts_hlo_instr_t *fusion, bool *flat) {
  return fusion->ncalled == 1 && ts_shape_is_array(fusion->shape) && cg_supported(fusion->called[0], fusion->nops, flat);
}

static LLVMValueRef cf(cg_t *g, double v) { return LLVMConstReal(g->f32, v); }

static LLVMValueRef fmax_xla(cg_t *g, LLVMValueRef x, LLVMValueRef y, bool is_min) {
  /* kernels/'s max: x > y ? x : y > x ? y : (x == y && x != 0) ? x : x + y
   * (NaN propagates, max(-0, +0) = +0); min mirrors it with -(-x + -y). */
  LLVMBuilderRef b = g->b;
  LLVMRealPredicate gt = is_min ? LLVMRealOLT : LLVMRealOGT;
  LLVMValueRef tie = is_min ? LLVMBuildFNeg(b, LLVMBuildFAdd(b, LLVMBuildFNeg(b, x, ""), LLVMBuildFNeg(b, y, ""), ""), "")
                            : LLVMBuildFAdd(b, x, y, "");
  LLVMValueRef eqnz = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, y, ""),
                                   LLVMBuildFCmp(b, LLVMRealONE, x, cf(g, 0.0), ""), "");
  LLVMValueRef r = LLVMBuildSelect(b, eqnz, x, tie, "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, gt, y, x, ""), y, r, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, gt, x, y, ""), x, r, "");
}

static LLVMValueRef call_f(cg_t *g, LLVMValueRef fn, LLVMValueRef x) {
  return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(fn), fn, &x, 1, "");
}

static LLVMValueRef ci(cg_t *g, int32_t v) { return LLVMConstInt(g->i32, (unsigned long long)(uint32_t)v, 0); }

/* An element's type in memory (f32: float, s32: i32, pred: one byte, bf16
 * and f16: i16, their bits) and in the emitted code (pred: i1; bf16 and f16
 * stay their bits, so that the ops that move or select elements copy them
 * as kernels/ does, NaN payloads included); from_mem/to_mem convert between
 * them. */
static LLVMTypeRef mem_type(cg_t *g, ts_elem_t e) {
  return e == TS_F32 ? g->f32 : e == TS_S32 ? g->i32 : is_half(e) ? g->i16 : g->i8;
}

static LLVMValueRef from_mem(cg_t *g, ts_elem_t e, LLVMValueRef x) {
  return e == TS_PRED ? LLVMBuildICmp(g->b, LLVMIntNE, x, LLVMConstInt(g->i8, 0, 0), "") : x;
}

static LLVMValueRef to_mem(cg_t *g, ts_elem_t e, LLVMValueRef v) {
  return e == TS_PRED ? LLVMBuildZExt(g->b, v, g->i8, "") : v;
}

/* ---- bf16 and f16 -------------------------------------------------------------
 * kernels/ computes an op on bf16 or f16 values in f32: its operands
 * widened (exactly), the f32 loop, the result rounded to nearest even into
 * the op's type; so every instruction of a fusion whose result is bf16 or
 * f16 rounds here too, not only the store. The conversions are integer
 * arithmetic on the bits, as common/elemconv.c and k_elementwise.c's
 * load_f32/store_f32 write them (LLVM 14 cannot select fpext from bfloat,
 * and its fpext from half keeps NaN payloads that elemconv.c drops), the
 * same on the CPU and the GPU. */

static LLVMValueRef c32(cg_t *g, uint32_t v) { return LLVMConstInt(g->i32, v, 0); }
static LLVMValueRef c16(cg_t *g, uint16_t v) { return LLVMConstInt(g->i16, v, 0); }
static LLVMValueRef bits_of(cg_t *g, LLVMValueRef f) { return LLVMBuildBitCast(g->b, f, g->i32, ""); }
static LLVMValueRef float_of(cg_t *g, LLVMValueRef u) { return LLVMBuildBitCast(g->b, u, g->f32, ""); }

/* bf16 bits h as f32: the bits shifted up, a NaN's payload kept (load_f32,
 * and so the elementwise ops and bf16 -> f32 convert), or, canonical, a NaN
 * made the quiet NaN of its sign (ts_elem_convert and ts_load_f, and so the
 * reduce steps). */
static LLVMValueRef bf16_widen(cg_t *g, LLVMValueRef h, bool canonical) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef u = LLVMBuildShl(b, LLVMBuildZExt(b, h, g->i32, ""), c32(g, 16), "");
  if (canonical) {
    LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntUGT, LLVMBuildAnd(b, u, c32(g, 0x7fffffff), ""), c32(g, 0x7f800000), "");
    u = LLVMBuildSelect(b, nan, LLVMBuildOr(b, LLVMBuildAnd(b, u, c32(g, 0x80000000), ""), c32(g, 0x7fc00000), ""),
                        u, "");
  }
  return float_of(g, u);
}

/* f16 bits h as f32 (elemconv.c's f32_from_f16): NaN the quiet NaN of its
 * sign, subnormals m 2^-24 (exact). */
static LLVMValueRef f16_widen(cg_t *g, LLVMValueRef h) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef x = LLVMBuildZExt(b, h, g->i32, "");
  LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, x, c32(g, 0x8000), ""), c32(g, 16), "");
  LLVMValueRef e = LLVMBuildAnd(b, LLVMBuildLShr(b, x, c32(g, 10), ""), c32(g, 0x1f), "");
  LLVMValueRef m = LLVMBuildAnd(b, x, c32(g, 0x3ff), "");
  LLVMValueRef normal = LLVMBuildOr(b, LLVMBuildShl(b, LLVMBuildAdd(b, e, c32(g, 112), ""), c32(g, 23), ""),
                                    LLVMBuildShl(b, m, c32(g, 13), ""), "");
  LLVMValueRef sub = bits_of(g, LLVMBuildFMul(b, LLVMBuildUIToFP(b, m, g->f32, ""), cf(g, 0x1p-24), ""));
  LLVMValueRef special = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntNE, m, c32(g, 0), ""), c32(g, 0x7fc00000),
                                         c32(g, 0x7f800000), "");
  LLVMValueRef mag = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, e, c32(g, 0), ""), sub, normal, "");
  mag = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, e, c32(g, 0x1f), ""), special, mag, "");
  return float_of(g, LLVMBuildOr(b, sign, mag, ""));
}

/* A bf16 or f16 value (its bits) as the f32 kernels/ computes on; the
 * canonical widening where kernels/ goes through ts_elem_convert. */
static LLVMValueRef widen(cg_t *g, ts_elem_t e, LLVMValueRef h, bool canonical) {
  return e == TS_BF16 ? bf16_widen(g, h, canonical) : f16_widen(g, h);
}

/* f32 x rounded to nearest even into bf16 or f16 bits (store_f32 and
 * elemconv.c's bf16_from_f32, f16_from_f32): a NaN keeps its sign and top
 * payload bits with the quiet bit set; f16 overflows to inf (from 65520 up)
 * and has subnormals, whose quantum 2^-24 is the ulp of 0.5f, so 0.5f + |x|
 * rounds |x| to them in one IEEE add. */
static LLVMValueRef narrow(cg_t *g, ts_elem_t e, LLVMValueRef x) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef u = bits_of(g, x), a = LLVMBuildAnd(b, u, c32(g, 0x7fffffff), "");
  LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntUGT, a, c32(g, 0x7f800000), "");
  LLVMValueRef r;
  if (e == TS_BF16) {
    LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, u, c32(g, 16), ""), c32(g, 1), "");
    LLVMValueRef rne = LLVMBuildAdd(b, LLVMBuildAdd(b, u, c32(g, 0x7fff), ""), odd, "");
    rne = LLVMBuildLShr(b, rne, c32(g, 16), "");
    r = LLVMBuildSelect(b, nan, LLVMBuildOr(b, LLVMBuildLShr(b, u, c32(g, 16), ""), c32(g, 0x40), ""), rne, "");
    return LLVMBuildTrunc(b, r, g->i16, "");
  }
  LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, c32(g, 16), ""), c32(g, 0x8000), "");
  LLVMValueRef payload = LLVMBuildAnd(b, LLVMBuildLShr(b, a, c32(g, 13), ""), c32(g, 0x3ff), "");
  LLVMValueRef qnan = LLVMBuildOr(b, c32(g, 0x7e00), payload, "");
  LLVMValueRef half_up = bits_of(g, LLVMBuildFAdd(b, float_of(g, a), cf(g, 0.5), ""));
  LLVMValueRef sub = LLVMBuildSub(b, half_up, c32(g, 0x3f000000), "");
  LLVMValueRef rb = LLVMBuildSub(b, a, c32(g, 0x38000000), ""); /* rebias 127 -> 15 */
  LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, rb, c32(g, 13), ""), c32(g, 1), "");
  LLVMValueRef nrm = LLVMBuildLShr(b, LLVMBuildAdd(b, LLVMBuildAdd(b, rb, c32(g, 0xfff), ""), odd, ""), c32(g, 13), "");
  r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, a, c32(g, 0x38800000), ""), sub, nrm, ""); /* below 2^-14 */
  r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGE, a, c32(g, 0x477ff000), ""), c32(g, 0x7c00), r, "");
  r = LLVMBuildSelect(b, nan, qnan, r, "");
  return LLVMBuildTrunc(b, LLVMBuildOr(b, sign, r, ""), g->i16, "");
}

/* s32 x as bf16 or f16 bits, rounded once from the exact integer, as
 * elemconv.c's generic convert does (through double): x rounded to odd
 * into f32 (the truncation of its RNE value, with the last bit set when
 * inexact), whose 24 bits are enough for the second, nearest-even rounding
 * to 8 or 11 bits to be exact (rounding to odd: S. Boldo, G. Melquiond,
 * "Emulation of FMA and correctly rounded sums: proved algorithms using
 * rounding to odd", IEEE TC 57(4), 2008). */
static LLVMValueRef int_to_half(cg_t *g, ts_elem_t e, LLVMValueRef x) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef f = LLVMBuildSIToFP(b, x, g->f32, ""), u = bits_of(g, f);
  /* |f| <= 2^31: fptosi into i64 is exact */
  LLVMValueRef d = LLVMBuildSub(b, LLVMBuildFPToSI(b, f, g->i64, ""), LLVMBuildSExt(b, x, g->i64, ""), "");
  LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0);
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, x, ci(g, 0), "");
  LLVMValueRef away = LLVMBuildSelect(b, neg, LLVMBuildICmp(b, LLVMIntSLT, d, zero, ""),
                                      LLVMBuildICmp(b, LLVMIntSGT, d, zero, ""), ""); /* |f| > |x| */
  LLVMValueRef t = LLVMBuildSub(b, u, LLVMBuildZExt(b, away, g->i32, ""), ""); /* the magnitude one ulp down */
  LLVMValueRef exact = LLVMBuildICmp(b, LLVMIntEQ, d, zero, "");
  LLVMValueRef odd = LLVMBuildSelect(b, exact, u, LLVMBuildOr(b, t, c32(g, 1), ""), "");
  return narrow(g, e, float_of(g, odd));
}

/* f32 x as s32 (k_convert): toward zero, NaN -> 0, saturating (fptosi of
 * the rest is poison, which the select does not pick). */
static LLVMValueRef float_to_s32(cg_t *g, LLVMValueRef a) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLE, a, cf(g, -2147483648.0), ""), ci(g, INT32_MIN),
                                   LLVMBuildFPToSI(b, a, g->i32, ""), "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGE, a, cf(g, 2147483648.0), ""), ci(g, INT32_MAX), r, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, a, a, ""), ci(g, 0), r, "");
}

/* convert from `from` to `to` (f32, s32, pred, bf16, f16) as kernels/'s
 * k_convert and elemconv.c's ts_elem_convert compute it. */
static LLVMValueRef emit_convert(cg_t *g, ts_elem_t from, ts_elem_t to, LLVMValueRef a) {
  LLVMBuilderRef b = g->b;
  if (from == to) /* bf16 -> bf16 goes through k_convert's f32 path, which quiets NaNs */
    return to == TS_BF16 ? narrow(g, to, widen(g, from, a, false)) : a;
  if (is_half(to)) {
    if (from == TS_S32) return int_to_half(g, to, a);
    LLVMValueRef x = from == TS_F32   ? a
                     : from == TS_PRED ? LLVMBuildUIToFP(b, a, g->f32, "")
                                       : widen(g, from, a, true); /* bf16 <-> f16 through double: one rounding */
    return narrow(g, to, x);
  }
  if (is_half(from)) a = widen(g, from, a, false), from = TS_F32; /* exact, and what f32's convert does next */
  if (from == to) return a;
  if (to == TS_F32) return from == TS_PRED ? LLVMBuildUIToFP(b, a, g->f32, "") : LLVMBuildSIToFP(b, a, g->f32, "");
  if (to == TS_PRED) /* != 0 (NaN is true) */
    return from == TS_F32 ? LLVMBuildFCmp(b, LLVMRealUNE, a, cf(g, 0.0), "")
                          : LLVMBuildICmp(b, LLVMIntNE, a, ci(g, 0), "");
  if (from == TS_PRED) return LLVMBuildZExt(b, a, g->i32, "");
  return float_to_s32(g, a);
}

/* A deliberately wrong value (TESSERA_CODEGEN_PERTURB; tests: --check
 * catches it): a float's times 1.01, rounded back for bf16 and f16; NULL
 * for other types, which are left alone. */
static LLVMValueRef perturb_value(cg_t *g, ts_elem_t e, LLVMValueRef v) {
  if (e == TS_F32) return LLVMBuildFMul(g->b, v, cf(g, 1.01), "");
  if (is_half(e)) return narrow(g, e, LLVMBuildFMul(g->b, widen(g, e, v, false), cf(g, 1.01), ""));
  return NULL;
}

/* s32 arithmetic as kernels/ computes it (XLA's integer semantics): add,
 * subtract, multiply, negate and abs wrap; x / 0 = -1, INT_MIN / -1 =
 * INT_MIN, x % 0 = x, INT_MIN % -1 = 0; shift amounts are unsigned, and
 * 32 or more give 0 (left, logical) or the sign fill (arithmetic). LLVM's
 * sdiv/srem are undefined for a divisor of 0 or -1 (INT_MIN / -1), so they
 * divide by 1 there and a select picks XLA's answer; shifts by 32 or more
 * are poison, so the amount is masked and a select picks. */
static LLVMValueRef emit_s32(cg_t *g, ts_opcode_t op, LLVMValueRef a, LLVMValueRef c) {
  LLVMBuilderRef b = g->b;
  switch (op) {
  case TS_OP_ADD: return LLVMBuildAdd(b, a, c, "");
  case TS_OP_SUBTRACT: return LLVMBuildSub(b, a, c, "");
  case TS_OP_MULTIPLY: return LLVMBuildMul(b, a, c, "");
  case TS_OP_NEGATE: return LLVMBuildSub(b, ci(g, 0), a, "");
  case TS_OP_ABS:
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, a, ci(g, 0), ""), LLVMBuildSub(b, ci(g, 0), a, ""), a, "");
  case TS_OP_MAXIMUM: return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, a, c, ""), a, c, "");
  case TS_OP_MINIMUM: return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, a, c, ""), a, c, "");
  case TS_OP_DIVIDE: case TS_OP_REMAINDER: {
    LLVMValueRef zero = LLVMBuildICmp(b, LLVMIntEQ, c, ci(g, 0), "");
    LLVMValueRef m1 = LLVMBuildICmp(b, LLVMIntEQ, c, ci(g, -1), "");
    LLVMValueRef safe = LLVMBuildSelect(b, LLVMBuildOr(b, zero, m1, ""), ci(g, 1), c, "");
    if (op == TS_OP_DIVIDE) {
      LLVMValueRef q = LLVMBuildSelect(b, m1, LLVMBuildSub(b, ci(g, 0), a, ""), LLVMBuildSDiv(b, a, safe, ""), "");
      return LLVMBuildSelect(b, zero, ci(g, -1), q, "");
    }
    LLVMValueRef r = LLVMBuildSelect(b, m1, ci(g, 0), LLVMBuildSRem(b, a, safe, ""), "");
    return LLVMBuildSelect(b, zero, a, r, "");
  }
  case TS_OP_SHIFT_LEFT: case TS_OP_SHIFT_RIGHT_LOGICAL: case TS_OP_SHIFT_RIGHT_ARITHMETIC: {
    LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGE, c, ci(g, 32), ""), s = LLVMBuildAnd(b, c, ci(g, 31), "");
    if (op == TS_OP_SHIFT_LEFT) return LLVMBuildSelect(b, big, ci(g, 0), LLVMBuildShl(b, a, s, ""), "");
    if (op == TS_OP_SHIFT_RIGHT_LOGICAL) return LLVMBuildSelect(b, big, ci(g, 0), LLVMBuildLShr(b, a, s, ""), "");
    return LLVMBuildAShr(b, a, LLVMBuildSelect(b, big, ci(g, 31), s, ""), ""); /* >> 31: the sign fill */
  }
  default: return NULL; /* cg_supported let no other op through */
  }
}

/* A bf16 or f16 scalar constant's bits, as the interpreter stores the
 * literal (ts_kernel_literal: its double rounded once, or its integer). */
static uint16_t half_literal(const ts_hlo_instr_t *i) {
  uint16_t h = 0;
  ts_array_t a = {i->shape->elem, 0, NULL, &h};
  (void)ts_kernel_literal(i->literal, &a); /* cg_supported: one element, not elided */
  return h;
}

static LLVMValueRef emit_float(cg_t *g, ts_opcode_t op, LLVMValueRef a, LLVMValueRef c, LLVMValueRef d);

/* The value of instruction i at loop index `idx` (the values of its
 * operands already in v[]). */
static LLVMValueRef emit_op(cg_t *g, const ts_hlo_instr_t *i, LLVMValueRef *ov, LLVMValueRef *inp,
                            LLVMValueRef idx) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef a = i->nops > 0 ? ov[0] : NULL, c = i->nops > 1 ? ov[1] : NULL;
  ts_elem_t e = i->shape->elem;
  bool f = e == TS_F32;
  switch (i->op) {
  case TS_OP_PARAMETER: {
    LLVMValueRef at = ts_shape_elements(i->shape) == 1 ? LLVMConstInt(g->i64, 0, 0) : idx;
    LLVMValueRef p = LLVMBuildGEP2(b, mem_type(g, e), inp[i->param_number], &at, 1, "");
    return from_mem(g, e, LLVMBuildLoad2(b, mem_type(g, e), p, ""));
  }
  case TS_OP_CONSTANT:
    return f ? cf(g, (double)(float)i->literal->f[0])
         : e == TS_S32 ? ci(g, (int32_t)(uint32_t)i->literal->i[0])
         : is_half(e) ? c16(g, half_literal(i))
                       : LLVMConstInt(g->i1, i->literal->i[0] != 0, 0);
  case TS_OP_BROADCAST: case TS_OP_RESHAPE: case TS_OP_BITCAST: return a;
  case TS_OP_CONVERT: return emit_convert(g, i->ops[0]->shape->elem, e, a);
  case TS_OP_COMPARE: {
    /* s32 signed, f32 ordered except NE (true on NaN), as kernels/ compares */
    static const struct {
      const char *name;
      LLVMIntPredicate s32;
      LLVMRealPredicate f32;
    } dirs[] = {{"EQ", LLVMIntEQ, LLVMRealOEQ},  {"NE", LLVMIntNE, LLVMRealUNE},  {"LT", LLVMIntSLT, LLVMRealOLT},
                {"LE", LLVMIntSLE, LLVMRealOLE}, {"GT", LLVMIntSGT, LLVMRealOGT}, {"GE", LLVMIntSGE, LLVMRealOGE}};
    const char *d = ts_hlo_instr_attr(i, "direction")->v.s;
    int k = 0;
    while (k < 5 && strcmp(d, dirs[k].name) != 0) k++; /* GE when none matched, as before */
    ts_elem_t oe = i->ops[0]->shape->elem;
    if (oe == TS_S32) return LLVMBuildICmp(b, dirs[k].s32, a, c, "");
    if (is_half(oe)) a = widen(g, oe, a, false), c = widen(g, oe, c, false);
    return LLVMBuildFCmp(b, dirs[k].f32, a, c, "");
  }
  case TS_OP_SELECT: return LLVMBuildSelect(b, a, c, ov[2], "");
  case TS_OP_AND: return LLVMBuildAnd(b, a, c, ""); /* pred or s32: the bits */
  case TS_OP_OR: return LLVMBuildOr(b, a, c, "");
  case TS_OP_XOR: return LLVMBuildXor(b, a, c, "");
  case TS_OP_NOT: return LLVMBuildNot(b, a, "");
  default:
    if (e == TS_S32) return emit_s32(g, i->op, a, c);
    break;
  }
  if (!is_half(e)) return emit_float(g, i->op, a, c, i->nops > 2 ? ov[2] : NULL);
  /* bf16, f16: in f32 from load_f32's widening, rounded to the type at once */
  LLVMValueRef w[3] = {NULL, NULL, NULL};
  for (int o = 0; o < i->nops && o < 3; o++) w[o] = widen(g, e, ov[o], false);
  return narrow(g, e, emit_float(g, i->op, w[0], w[1], w[2]));
}

/* Float op `op` on f32 operands a, c (and d: clamp's third). */
static LLVMValueRef emit_float(cg_t *g, ts_opcode_t op, LLVMValueRef a, LLVMValueRef c, LLVMValueRef d) {
  LLVMBuilderRef b = g->b;
  switch (op) {
  case TS_OP_ADD: return LLVMBuildFAdd(b, a, c, "");
  case TS_OP_SUBTRACT: return LLVMBuildFSub(b, a, c, "");
  case TS_OP_MULTIPLY: return LLVMBuildFMul(b, a, c, "");
  case TS_OP_DIVIDE: return LLVMBuildFDiv(b, a, c, "");
  case TS_OP_MAXIMUM: return fmax_xla(g, a, c, false);
  case TS_OP_MINIMUM: return fmax_xla(g, a, c, true);
  case TS_OP_CLAMP: /* clamp(lo, x, hi) = min(max(x, lo), hi) */
    return fmax_xla(g, fmax_xla(g, c, a, false), d, true);
  case TS_OP_NEGATE: return LLVMBuildFNeg(b, a, "");
  case TS_OP_ABS: return call_f(g, cg_intrinsic_f32(g->mod, "llvm.fabs.f32", 1), a);
  case TS_OP_FLOOR: return call_f(g, cg_intrinsic_f32(g->mod, "llvm.floor.f32", 1), a);
  case TS_OP_CEIL: return call_f(g, cg_intrinsic_f32(g->mod, "llvm.ceil.f32", 1), a);
  case TS_OP_POWER: {
    LLVMValueRef fn = cg_math_f32(g->mod, op), args[2] = {a, c};
    return LLVMBuildCall2(b, LLVMGlobalGetValueType(fn), fn, args, 2, "");
  }
  default: return call_f(g, cg_math_f32(g->mod, op), a);
  }
}

/* Instruction `want` of a flat computation at linear index i, emitted in
 * the current block (straight-line code: no branches; a reduce root, whose
 * operand `want` is then, is left out); NULL when out of memory. */
static LLVMValueRef flat_value(cg_t *g, const ts_hlo_comp_t *c, const ts_hlo_instr_t *want, LLVMValueRef *inp,
                               LLVMValueRef i) {
  /* per instruction id, written before read (operands come first in the
   * post-order): the compile's array, sized to the module once */
  LLVMValueRef *own = g->v ? NULL : ts_calloc((size_t)c->module->next_id + 1, sizeof *own);
  LLVMValueRef *v = g->v ? g->v : own, r = NULL;
  const ts_hlo_instr_t **order = ts_calloc((size_t)c->ninstrs + 1, sizeof *order);
  if (v && order && ts_hlo_comp_post_order(c, order) == TS_OK) {
    for (int k = 0; k < c->ninstrs; k++) {
      const ts_hlo_instr_t *ins = order[k];
      if (ins->op == TS_OP_REDUCE) continue; /* cg_supported: only at the root */
      LLVMValueRef ov[3] = {0};
      for (int o = 0; o < ins->nops && o < 3; o++) ov[o] = v[ins->ops[o]->id];
      LLVMValueRef x = emit_op(g, ins, ov, inp, i), y;
      if (g->perturb && strcmp(g->perturb, ts_opcode_name(ins->op)) == 0 && (y = perturb_value(g, ins->shape->elem, x)))
        x = y;
      v[ins->id] = x;
    }
    r = v[want->id];
  }
  ts_free(own);
  ts_free(order);
  return r;
}

LLVMValueRef cg_data(cg_t *g, ts_elem_t elem, LLVMValueRef raw) {
  return elem == TS_PRED ? raw : LLVMBuildBitCast(g->b, raw, LLVMPointerType(mem_type(g, elem), 0), "");
}

bool cg_emit_loop(cg_t *g, const ts_hlo_comp_t *c, bool flat, LLVMValueRef *inp, LLVMValueRef out,
                  LLVMValueRef first, LLVMValueRef step, LLVMValueRef n) {
  LLVMBuilderRef b = g->b;
  LLVMBasicBlockRef entry = LLVMGetInsertBlock(b);
  LLVMValueRef fn = LLVMGetBasicBlockParent(entry);
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(g->cx, fn, "loop");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(g->cx, fn, "exit");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, first, n, ""), loop, exit);
  LLVMPositionBuilderAtEnd(b, loop);
  LLVMValueRef i = LLVMBuildPhi(b, g->i64, "i");
  LLVMValueRef r = cg_element(g, c, flat, inp, i);
  if (!r) return false;
  ts_elem_t elem = c->root->shape->elem;
  LLVMValueRef outp = cg_data(g, elem, out);
  LLVMBuildStore(b, to_mem(g, elem, r), LLVMBuildGEP2(b, mem_type(g, elem), outp, &i, 1, ""));
  LLVMValueRef next = LLVMBuildAdd(b, i, step, "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, n, ""), loop, exit);
  LLVMBasicBlockRef from[2] = {entry, LLVMGetInsertBlock(b)};
  LLVMValueRef vals[2] = {first, next};
  LLVMAddIncoming(i, vals, from, 2);
  LLVMPositionBuilderAtEnd(b, exit);
  LLVMBuildRetVoid(b);
  return true;
}

/* Starts `void sym(i8** in, i8* out, i64 n)`, the CPU loops' signature: its
 * entry block, where inp[p] is in[p] as parameter p's data (cg_data). */
static LLVMValueRef begin_loop_fn(cg_t *g, const ts_hlo_comp_t *c, const char *sym, LLVMValueRef *inp) {
  LLVMTypeRef args[3] = {g->i8pp, g->i8p, g->i64};
  LLVMValueRef fn = LLVMAddFunction(g->mod, sym, LLVMFunctionType(LLVMVoidTypeInContext(g->cx), args, 3, 0));
  LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->cx, fn, "entry"));
  for (int p = 0; p < c->nparams; p++) {
    LLVMValueRef at = LLVMConstInt(g->i64, (unsigned long long)p, 0);
    LLVMValueRef slot = LLVMBuildGEP2(g->b, g->i8p, LLVMGetParam(fn, 0), &at, 1, "");
    inp[p] = cg_data(g, c->params[p]->shape->elem, LLVMBuildLoad2(g->b, g->i8p, slot, ""));
  }
  return fn;
}

/* Emits `void sym(i8** in, i8* out, i64 n)`: the computation's root over
 * n elements. */
static LLVMValueRef emit_loop(cg_t *g, const ts_hlo_comp_t *c, const char *sym) {
  LLVMValueRef inp[MAX_IN];
  LLVMValueRef fn = begin_loop_fn(g, c, sym, inp);
  LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0), one = LLVMConstInt(g->i64, 1, 0);
  return cg_emit_loop(g, c, true, inp, LLVMGetParam(fn, 1), zero, one, LLVMGetParam(fn, 2)) ? fn : NULL;
}

/* ---- nested loops with index maps ------------------------------------------ */

typedef struct {
  const ts_hlo_instr_t *i;
  int rank;
  LLVMValueRef idx[8];
  LLVMValueRef v;
} memo_t;

typedef struct {
  cg_t *g;
  LLVMValueRef *inp;
  memo_t *memo;
  int nmemo, cap;
} gen_t;

static LLVMValueRef i64c(cg_t *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

static LLVMValueRef linearize(cg_t *g, const ts_shape_t *sh, LLVMValueRef *idx) {
  LLVMValueRef lin = i64c(g, 0);
  int64_t st[8];
  ts_strides(sh->rank, sh->dims, st);
  for (int d = 0; d < sh->rank; d++)
    lin = LLVMBuildAdd(g->b, lin, LLVMBuildMul(g->b, idx[d], i64c(g, st[d]), ""), "");
  return lin;
}

/* The value of instruction i at multi-index idx (i's own shape). */
static LLVMValueRef gen(gen_t *G, const ts_hlo_instr_t *i, LLVMValueRef *idx) {
  cg_t *g = G->g;
  LLVMBuilderRef b = g->b;
  int r = i->shape->rank;
  for (int k = 0; k < G->nmemo; k++) {
    memo_t *e = &G->memo[k];
    if (e->i == i && (r == 0 || memcmp(e->idx, idx, sizeof *idx * (size_t)r) == 0)) return e->v;
  }
  LLVMValueRef v, oi[8];
  const ts_shape_t *os = i->nops ? i->ops[0]->shape : NULL;
  switch (i->op) {
  case TS_OP_PARAMETER: {
    ts_elem_t e = i->shape->elem;
    LLVMValueRef at = linearize(g, i->shape, idx);
    LLVMTypeRef et = mem_type(g, e);
    v = from_mem(g, e, LLVMBuildLoad2(b, et, LLVMBuildGEP2(b, et, G->inp[i->param_number], &at, 1, ""), ""));
    break;
  }
  case TS_OP_BROADCAST: {
    ts_i64_list_t dims = list_attr(i, "dimensions");
    for (int k = 0; k < dims.n; k++) oi[k] = idx[dims.v[k]];
    v = gen(G, i->ops[0], oi);
    break;
  }
  case TS_OP_TRANSPOSE: {
    ts_i64_list_t perm = list_attr(i, "dimensions"); /* output dim k is operand dim perm[k] */
    for (int k = 0; k < perm.n; k++) oi[perm.v[k]] = idx[k];
    v = gen(G, i->ops[0], oi);
    break;
  }
  case TS_OP_RESHAPE: case TS_OP_BITCAST: {
    LLVMValueRef lin = linearize(g, i->shape, idx);
    int64_t st[8];
    ts_strides(os->rank, os->dims, st);
    for (int k = 0; k < os->rank; k++)
      oi[k] = LLVMBuildURem(b, LLVMBuildUDiv(b, lin, i64c(g, st[k]), ""), i64c(g, os->dims[k]), "");
    v = gen(G, i->ops[0], oi);
    break;
  }
  case TS_OP_SLICE: {
    const ts_slice_t *sl = ts_hlo_instr_attr(i, "slice")->v.slice;
    for (int k = 0; k < r; k++)
      oi[k] = LLVMBuildAdd(b, i64c(g, sl->start[k]), LLVMBuildMul(b, idx[k], i64c(g, sl->stride[k]), ""), "");
    v = gen(G, i->ops[0], oi);
    break;
  }
  case TS_OP_CONCATENATE: {
    /* Every operand read at an index clamped into it; a select picks. */
    int64_t dim = list_attr(i, "dimensions").v[0], off = 0;
    v = NULL;
    for (int o = 0; o < i->nops; o++) {
      int64_t sz = i->ops[o]->shape->dims[dim];
      memcpy(oi, idx, sizeof *idx * (size_t)r);
      LLVMValueRef t = LLVMBuildSub(b, idx[dim], i64c(g, off), "");
      LLVMValueRef lo = LLVMBuildICmp(b, LLVMIntSLT, t, i64c(g, 0), "");
      t = LLVMBuildSelect(b, lo, i64c(g, 0), t, "");
      LLVMValueRef hi = LLVMBuildICmp(b, LLVMIntSGT, t, i64c(g, sz - 1), "");
      oi[dim] = LLVMBuildSelect(b, hi, i64c(g, sz - 1), t, "");
      LLVMValueRef x = gen(G, i->ops[o], oi);
      v = v ? LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGE, idx[dim], i64c(g, off), ""), x, v, "") : x;
      off += sz;
    }
    break;
  }
  case TS_OP_IOTA: {
    LLVMValueRef k = idx[ts_hlo_instr_attr(i, "iota_dimension")->v.i];
    ts_elem_t e = i->shape->elem;
    v = e == TS_F32 ? LLVMBuildSIToFP(b, k, g->f32, "")
        : is_half(e) ? int_to_half(g, e, LLVMBuildTrunc(b, k, g->i32, "")) /* k_iota: ts_store_i, one rounding */
                     : LLVMBuildTrunc(b, k, g->i32, "");
    break;
  }
  default: {
    LLVMValueRef ov[3] = {0};
    for (int o = 0; o < i->nops && o < 3; o++) ov[o] = gen(G, i->ops[o], idx);
    v = emit_op(g, i, ov, G->inp, NULL);
    break;
  }
  }
  LLVMValueRef pv;
  if (g->perturb && strcmp(g->perturb, ts_opcode_name(i->op)) == 0 && (pv = perturb_value(g, i->shape->elem, v)))
    v = pv;
  if (G->nmemo == G->cap) {
    int cap = G->cap ? G->cap * 2 : 64;
    memo_t *nm = realloc(G->memo, sizeof *nm * (size_t)cap);
    if (!nm) return v;
    G->memo = nm;
    G->cap = cap;
  }
  memo_t *e = &G->memo[G->nmemo++];
  e->i = i;
  e->rank = r;
  if (r) memcpy(e->idx, idx, sizeof *idx * (size_t)r);
  e->v = v;
  return v;
}

/* Emits `void sym(i8** in, i8* out, i64 n)` (n unused: the shapes are
 * static) as nested loops over the root's dimensions, innermost last. */
static LLVMValueRef emit_nested(cg_t *g, const ts_hlo_comp_t *c, const char *sym) {
  LLVMValueRef inp[MAX_IN];
  LLVMValueRef fn = begin_loop_fn(g, c, sym, inp);
  LLVMBuilderRef b = g->b;
  LLVMBasicBlockRef entry = LLVMGetInsertBlock(b);
  const ts_shape_t *rs = c->root->shape;
  int r = rs->rank;
  for (int d = 0; d < r; d++)
    if (rs->dims[d] == 0) { /* nothing to compute */
      LLVMBuildRetVoid(b);
      return fn;
    }
  LLVMValueRef outp = cg_data(g, rs->elem, LLVMGetParam(fn, 1));
  gen_t G = {.g = g, .inp = inp};
  if (r == 0) { /* a scalar: no loop */
    LLVMValueRef v = gen(&G, c->root, NULL);
    free(G.memo);
    LLVMBuildStore(b, to_mem(g, rs->elem, v), outp);
    LLVMBuildRetVoid(b);
    return fn;
  }
  LLVMBasicBlockRef L[8] = {0}, T[8] = {0}, exit;
  LLVMValueRef iv[8] = {0};
  for (int d = 0; d < r; d++) {
    L[d] = LLVMAppendBasicBlockInContext(g->cx, fn, "loop");
    T[d] = LLVMAppendBasicBlockInContext(g->cx, fn, "latch");
  }
  exit = LLVMAppendBasicBlockInContext(g->cx, fn, "exit");
  LLVMBuildBr(b, L[0]);
  for (int d = 0; d < r; d++) {
    LLVMPositionBuilderAtEnd(b, L[d]);
    iv[d] = LLVMBuildPhi(b, g->i64, "");
    if (d + 1 < r) LLVMBuildBr(b, L[d + 1]);
  }
  LLVMValueRef v = gen(&G, c->root, iv);
  free(G.memo);
  LLVMValueRef at = linearize(g, rs, iv);
  LLVMBuildStore(b, to_mem(g, rs->elem, v), LLVMBuildGEP2(b, mem_type(g, rs->elem), outp, &at, 1, ""));
  LLVMBuildBr(b, T[r - 1]);
  for (int d = r - 1; d >= 0; d--) {
    LLVMPositionBuilderAtEnd(b, T[d]);
    LLVMValueRef next = LLVMBuildAdd(b, iv[d], i64c(g, 1), "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, i64c(g, rs->dims[d]), ""), L[d], d ? T[d - 1] : exit);
    LLVMBasicBlockRef from[2] = {d ? L[d - 1] : entry, T[d]};
    LLVMValueRef vals[2] = {i64c(g, 0), next};
    LLVMAddIncoming(iv[d], vals, from, 2);
  }
  LLVMPositionBuilderAtEnd(b, exit);
  LLVMBuildRetVoid(b);
  return fn;
}

/* Instruction `want` of c (its root, or a reduce root's operand) at
 * row-major linear index lin of its own shape. */
static LLVMValueRef value_at(cg_t *g, const ts_hlo_comp_t *c, const ts_hlo_instr_t *want, bool flat, LLVMValueRef *inp,
                             LLVMValueRef lin) {
  if (flat) return flat_value(g, c, want, inp, lin);
  const ts_shape_t *rs = want->shape;
  LLVMValueRef idx[8];
  int64_t st[8];
  ts_strides(rs->rank, rs->dims, st);
  for (int d = 0; d < rs->rank; d++) /* row-major: the multi-index of linear index lin */
    idx[d] = LLVMBuildURem(g->b, LLVMBuildUDiv(g->b, lin, i64c(g, st[d]), ""), i64c(g, rs->dims[d]), "");
  gen_t G = {.g = g, .inp = inp};
  LLVMValueRef v = gen(&G, want, rs->rank ? idx : NULL);
  free(G.memo);
  return v;
}

/* ---- reduce roots -------------------------------------------------------------
 * Bit for bit what kernels/'s reduce (k_reduce.c, reduce_fast) computes: the
 * operand's dims with size-1 dims dropped and neighbours of the same kind
 * (reduced or kept) merged into groups; every output starts at the init
 * value; then, over the groups but the last in row-major order, the last
 * group's row of the operand is combined into the outputs: a kept last
 * group element by element into a row of outputs (out[j] = op(out[j],
 * x[j]), which vectorizes across outputs with no reassociation), a reduced
 * one into its one output through block(): under 16 elements in order, else
 * eight partials p[k] = x[k], p[k] = op(p[k], x[j + k]) for each whole
 * block of eight after the first, op(op(acc, p[0]), ...p[7]), then the tail
 * in order. Each output therefore sees the same chain of operations as in
 * the interpreter, whatever the association of the reducer. */

typedef struct {
  const ts_hlo_instr_t *x, *init;
  ts_opcode_t op; /* reduce_op */
  ts_elem_t e;
  int64_t nx, nout;
  int n; /* groups, at least one */
  int64_t dim[8], in_stride[8], out_stride[8];
  bool red[8];
} rplan_t;

/* r's plan (cg_supported passed it): kernels/' own groups (ts_reduce_groups). */
static void reduce_plan(const ts_hlo_instr_t *r, rplan_t *p) {
  *p = (rplan_t){.x = r->ops[0], .init = r->ops[1], .op = reduce_op(r), .e = r->shape->elem};
  const ts_shape_t *xs = p->x->shape;
  p->nx = ts_shape_elements(xs);
  p->nout = ts_shape_elements(r->shape);
  ts_i64_list_t dims = list_attr(r, "dimensions");
  ts_reduce_groups_t g;
  ts_reduce_groups(xs->rank, xs->dims, &dims, &g);
  p->n = g.n; /* at most the operand's rank, which cg_supported bounds by 8 */
  for (int d = 0; d < g.n; d++) {
    p->dim[d] = g.dim[d];
    p->in_stride[d] = g.in_stride[d];
    p->out_stride[d] = g.out_stride[d];
    p->red[d] = g.red[d];
  }
}

static LLVMValueRef reducer_f32(cg_t *g, ts_opcode_t op, LLVMValueRef a, LLVMValueRef x);

/* The reducer on two values, as k_reduce.c's op_<type> functions: f32
 * maximum/minimum as its max_f/min_f (a NaN accumulator stays, else a NaN
 * x is taken, and of +-0 the maximum is +0, the minimum -0), s32 wrapping,
 * pred (i1) bits; bf16 and f16 as its combine_one: both widened through
 * ts_load_f (canonical NaNs), the f32 op, rounded back (ts_store_f). */
static LLVMValueRef reducer(cg_t *g, const rplan_t *p, LLVMValueRef a, LLVMValueRef x) {
  LLVMBuilderRef b = g->b;
  if (is_half(p->e)) return narrow(g, p->e, reducer_f32(g, p->op, widen(g, p->e, a, true), widen(g, p->e, x, true)));
  if (p->e == TS_F32) return reducer_f32(g, p->op, a, x);
  switch (p->op) {
  case TS_OP_ADD: return LLVMBuildAdd(b, a, x, "");
  case TS_OP_MULTIPLY: return LLVMBuildMul(b, a, x, "");
  case TS_OP_MAXIMUM: return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, a, x, ""), a, x, "");
  case TS_OP_MINIMUM: return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, a, x, ""), a, x, "");
  case TS_OP_AND: return LLVMBuildAnd(b, a, x, "");
  case TS_OP_OR: return LLVMBuildOr(b, a, x, "");
  default: return LLVMBuildXor(b, a, x, "");
  }
}

static LLVMValueRef reducer_f32(cg_t *g, ts_opcode_t op, LLVMValueRef a, LLVMValueRef x) {
  LLVMBuilderRef b = g->b;
  if (op == TS_OP_ADD) return LLVMBuildFAdd(b, a, x, "");
  if (op == TS_OP_MULTIPLY) return LLVMBuildFMul(b, a, x, "");
  /* max_f(a, x) = (a > x || a != a) ? a : (x > a || x != x) ? x : signbit(a) ? x : a; min_f with < and a, x
   * swapped in the tie */
  bool mx = op == TS_OP_MAXIMUM;
  LLVMRealPredicate gt = mx ? LLVMRealOGT : LLVMRealOLT;
  LLVMValueRef ta = LLVMBuildOr(b, LLVMBuildFCmp(b, gt, a, x, ""), LLVMBuildFCmp(b, LLVMRealUNO, a, a, ""), "");
  LLVMValueRef tx = LLVMBuildOr(b, LLVMBuildFCmp(b, gt, x, a, ""), LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), "");
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildBitCast(b, a, g->i32, ""), ci(g, 0), "");
  LLVMValueRef tie = mx ? LLVMBuildSelect(b, neg, x, a, "") : LLVMBuildSelect(b, neg, a, x, "");
  return LLVMBuildSelect(b, ta, a, LLVMBuildSelect(b, tx, x, tie, ""), "");
}

/* A value's type in the emitted code (pred: i1). */
static LLVMTypeRef value_type(cg_t *g, ts_elem_t e) { return e == TS_PRED ? g->i1 : mem_type(g, e); }

/* A stack slot in the function's entry block (SROA makes it a register). */
static LLVMValueRef entry_slot(cg_t *g, LLVMTypeRef t) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(g->b));
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(g->cx);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first)
    LLVMPositionBuilderBefore(b, first);
  else
    LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef slot = LLVMBuildAlloca(b, t, "");
  LLVMDisposeBuilder(b);
  return slot;
}

/* `for (i = from; i < to; i += step)` over constants: rloop_open leaves the
 * builder in the body and returns i, rloop_close ends the body (wherever
 * the builder is then) and leaves the builder after the loop. */
typedef struct {
  LLVMBasicBlockRef pre, body, exit;
  LLVMValueRef i, from, to, step;
} rloop_t;

static LLVMValueRef rloop_open(cg_t *g, rloop_t *L, int64_t from, int64_t to, int64_t step) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(g->b));
  L->from = i64c(g, from);
  L->to = i64c(g, to);
  L->step = i64c(g, step);
  L->pre = LLVMGetInsertBlock(g->b);
  L->body = LLVMAppendBasicBlockInContext(g->cx, fn, "rloop");
  L->exit = LLVMAppendBasicBlockInContext(g->cx, fn, "rexit");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, L->from, L->to, ""), L->body, L->exit);
  LLVMPositionBuilderAtEnd(g->b, L->body);
  return L->i = LLVMBuildPhi(g->b, g->i64, "");
}

static void rloop_close(cg_t *g, rloop_t *L) {
  LLVMValueRef next = LLVMBuildAdd(g->b, L->i, L->step, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, next, L->to, ""), L->body, L->exit);
  LLVMValueRef vals[2] = {L->from, next};
  LLVMBasicBlockRef from[2] = {L->pre, latch};
  LLVMAddIncoming(L->i, vals, from, 2);
  LLVMPositionBuilderAtEnd(g->b, L->exit);
}

/* The reduce's operand at its linear index lin; NULL when out of memory. */
static LLVMValueRef operand_at(cg_t *g, const ts_hlo_comp_t *c, const rplan_t *p, bool flat, LLVMValueRef *inp,
                               LLVMValueRef lin) {
  return value_at(g, c, p->x, flat, inp, lin);
}

static LLVMValueRef init_value(cg_t *g, const rplan_t *p, LLVMValueRef *inp) {
  LLVMValueRef ov[1] = {NULL};
  return emit_op(g, p->init, ov, inp, i64c(g, 0)); /* a scalar constant or parameter */
}

/* *acc = op(*acc, the operand's elements row .. row + n) in block_<type>'s
 * order (see above; bf16 and f16 have no block_<type>: block_any combines
 * their elements one at a time, in order); acc is a slot of the value type.
 * false when out of memory. */
static bool reduce_block(cg_t *g, const ts_hlo_comp_t *c, const rplan_t *p, bool flat, LLVMValueRef *inp,
                         LLVMValueRef acc, LLVMValueRef row, int64_t n) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef vt = value_type(g, p->e);
  int64_t j0 = 0;
  rloop_t L;
  if (n >= 16 && !is_half(p->e)) {
    LLVMValueRef part[8];
    for (int k = 0; k < 8; k++) {
      LLVMValueRef x = operand_at(g, c, p, flat, inp, LLVMBuildAdd(b, row, i64c(g, k), ""));
      if (!x) return false;
      LLVMBuildStore(b, x, part[k] = entry_slot(g, vt));
    }
    j0 = n / 8 * 8;
    LLVMValueRef j = rloop_open(g, &L, 8, j0, 8);
    LLVMValueRef at = LLVMBuildAdd(b, row, j, "");
    for (int k = 0; k < 8; k++) {
      LLVMValueRef x = operand_at(g, c, p, flat, inp, LLVMBuildAdd(b, at, i64c(g, k), ""));
      if (!x) return false;
      LLVMBuildStore(b, reducer(g, p, LLVMBuildLoad2(b, vt, part[k], ""), x), part[k]);
    }
    rloop_close(g, &L);
    LLVMValueRef a = LLVMBuildLoad2(b, vt, acc, "");
    for (int k = 0; k < 8; k++) a = reducer(g, p, a, LLVMBuildLoad2(b, vt, part[k], ""));
    LLVMBuildStore(b, a, acc);
  }
  LLVMValueRef j = rloop_open(g, &L, j0, n, 1);
  LLVMValueRef x = operand_at(g, c, p, flat, inp, LLVMBuildAdd(b, row, j, ""));
  if (!x) return false;
  LLVMBuildStore(b, reducer(g, p, LLVMBuildLoad2(b, vt, acc, ""), x), acc);
  rloop_close(g, &L);
  return true;
}

/* For t, a row-major index over the groups [0, ng) of p (reduced: over the
 * reduced ones only): reduced, the operand offset of those groups' indices
 * (times in_stride); else the output offset of t's kept groups (times
 * out_stride). */
static LLVMValueRef group_offset(cg_t *g, const rplan_t *p, LLVMValueRef t, int ng, bool reduced) {
  LLVMValueRef off = i64c(g, 0);
  int64_t s = 1;
  for (int d = ng - 1; d >= 0; d--) {
    if (reduced && !p->red[d]) continue;
    if (reduced || !p->red[d]) {
      LLVMValueRef k = LLVMBuildURem(g->b, LLVMBuildUDiv(g->b, t, i64c(g, s), ""), i64c(g, p->dim[d]), "");
      LLVMValueRef st = i64c(g, reduced ? p->in_stride[d] : p->out_stride[d]);
      off = LLVMBuildAdd(g->b, off, LLVMBuildMul(g->b, k, st, ""), "");
    }
    s *= p->dim[d];
  }
  return off;
}

static bool perturbed(const cg_t *g, const rplan_t *p) {
  return g->perturb && (p->e == TS_F32 || is_half(p->e)) && strcmp(g->perturb, ts_opcode_name(TS_OP_REDUCE)) == 0;
}

/* One output of the reduce root of c at its linear index `lin`: the init,
 * then its chain of k_reduce.c (above) for that output alone; the GPU
 * kernels' element. New blocks; the builder ends in the last. */
static LLVMValueRef reduce_element(cg_t *g, const ts_hlo_comp_t *c, bool flat, LLVMValueRef *inp, LLVMValueRef lin) {
  LLVMBuilderRef b = g->b;
  rplan_t p;
  reduce_plan(c->root, &p);
  LLVMTypeRef vt = value_type(g, p.e);
  LLVMValueRef acc = entry_slot(g, vt);
  LLVMBuildStore(b, init_value(g, &p, inp), acc);
  if (p.nx > 0) {
    /* the output's kept-group indices, from its own linear index, as the operand's base offset */
    LLVMValueRef base = i64c(g, 0);
    for (int d = 0; d < p.n; d++) {
      if (p.red[d]) continue;
      LLVMValueRef k = LLVMBuildURem(b, LLVMBuildUDiv(b, lin, i64c(g, p.out_stride[d]), ""), i64c(g, p.dim[d]), "");
      base = LLVMBuildAdd(b, base, LLVMBuildMul(b, k, i64c(g, p.in_stride[d]), ""), "");
    }
    int last = p.n - 1, ng = p.red[last] ? last : p.n; /* the groups walked one element (row) at a time */
    int64_t nr = 1;
    for (int d = 0; d < ng; d++) nr *= p.red[d] ? p.dim[d] : 1;
    rloop_t L;
    LLVMValueRef r = rloop_open(g, &L, 0, nr, 1);
    LLVMValueRef at = LLVMBuildAdd(b, base, group_offset(g, &p, r, ng, true), "");
    if (p.red[last]) {
      if (!reduce_block(g, c, &p, flat, inp, acc, at, p.dim[last])) return NULL;
    } else {
      LLVMValueRef x = operand_at(g, c, &p, flat, inp, at);
      if (!x) return NULL;
      LLVMBuildStore(b, reducer(g, &p, LLVMBuildLoad2(b, vt, acc, ""), x), acc);
    }
    rloop_close(g, &L);
  }
  LLVMValueRef v = LLVMBuildLoad2(b, vt, acc, "");
  return perturbed(g, &p) ? perturb_value(g, p.e, v) : v;
}

/* Emits `void sym(i8** in, i8* out, i64 n)` (n unused: the shapes are
 * static) for c's reduce root in k_reduce.c's own loop order (above). */
static LLVMValueRef emit_reduce(cg_t *g, const ts_hlo_comp_t *c, bool flat, const char *sym) {
  LLVMValueRef inp[MAX_IN];
  LLVMValueRef fn = begin_loop_fn(g, c, sym, inp);
  LLVMBuilderRef b = g->b;
  rplan_t p;
  reduce_plan(c->root, &p);
  LLVMTypeRef mt = mem_type(g, p.e), vt = value_type(g, p.e);
  LLVMValueRef outp = cg_data(g, p.e, LLVMGetParam(fn, 1)), init = init_value(g, &p, inp);
  rloop_t L, R;
  LLVMValueRef o = rloop_open(g, &L, 0, p.nout, 1);
  LLVMBuildStore(b, to_mem(g, p.e, init), LLVMBuildGEP2(b, mt, outp, &o, 1, ""));
  rloop_close(g, &L);
  if (p.nx > 0) {
    int last = p.n - 1;
    int64_t inner = p.dim[last];
    LLVMValueRef t = rloop_open(g, &L, 0, p.nx / inner, 1); /* the groups but the last, row-major */
    LLVMValueRef row = LLVMBuildMul(b, t, i64c(g, inner), "");
    LLVMValueRef oi = group_offset(g, &p, t, last, false);
    if (p.red[last]) { /* one output: its row, through a register */
      LLVMValueRef at = LLVMBuildGEP2(b, mt, outp, &oi, 1, ""), acc = entry_slot(g, vt);
      LLVMBuildStore(b, from_mem(g, p.e, LLVMBuildLoad2(b, mt, at, "")), acc);
      if (!reduce_block(g, c, &p, flat, inp, acc, row, inner)) return NULL;
      LLVMBuildStore(b, to_mem(g, p.e, LLVMBuildLoad2(b, vt, acc, "")), at);
    } else { /* a row of outputs */
      LLVMValueRef j = rloop_open(g, &R, 0, inner, 1);
      LLVMValueRef oj = LLVMBuildAdd(b, oi, j, ""), at = LLVMBuildGEP2(b, mt, outp, &oj, 1, "");
      LLVMValueRef x = operand_at(g, c, &p, flat, inp, LLVMBuildAdd(b, row, j, ""));
      if (!x) return NULL;
      LLVMBuildStore(b, to_mem(g, p.e, reducer(g, &p, from_mem(g, p.e, LLVMBuildLoad2(b, mt, at, "")), x)), at);
      rloop_close(g, &R);
    }
    rloop_close(g, &L);
  }
  if (perturbed(g, &p)) { /* a deliberately wrong kernel (tests: --check catches it) */
    o = rloop_open(g, &L, 0, p.nout, 1);
    LLVMValueRef at = LLVMBuildGEP2(b, mt, outp, &o, 1, "");
    LLVMBuildStore(b, perturb_value(g, p.e, LLVMBuildLoad2(b, mt, at, "")), at);
    rloop_close(g, &L);
  }
  LLVMBuildRetVoid(b);
  return fn;
}

LLVMValueRef cg_element(cg_t *g, const ts_hlo_comp_t *c, bool flat, LLVMValueRef *inp, LLVMValueRef lin) {
  if (c->root->op == TS_OP_REDUCE) return reduce_element(g, c, flat, inp, lin);
  return value_at(g, c, c->root, flat, inp, lin);
}

void cg_types(cg_t *g, LLVMContextRef cx) {
  g->cx = cx;
  g->f32 = LLVMFloatTypeInContext(cx);
  g->i1 = LLVMInt1TypeInContext(cx);
  g->i8 = LLVMInt8TypeInContext(cx);
  g->i16 = LLVMInt16TypeInContext(cx);
  g->i32 = LLVMInt32TypeInContext(cx);
  g->i64 = LLVMInt64TypeInContext(cx);
  g->i8p = LLVMPointerType(g->i8, 0);
  g->i8pp = LLVMPointerType(g->i8p, 0);
}

/* Emits the ts_kernel_fn wrapper: i32 sym(ctx*, instr*, ts_array_t *in, i32
 * nin, ts_array_t *out, i32 nout) reading each view's data pointer. */
static void emit_kernel(cg_t *g, LLVMValueRef loop, int nparams, int64_t count, const char *sym) {
  LLVMTypeRef args[6] = {g->i8p, g->i8p, g->i8p, g->i32, g->i8p, g->i32};
  LLVMValueRef fn = LLVMAddFunction(g->mod, sym, LLVMFunctionType(g->i32, args, 6, 0));
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->cx, fn, "entry"));
  LLVMValueRef ptrs = LLVMBuildArrayAlloca(b, g->i8p, LLVMConstInt(g->i32, (unsigned long long)(nparams ? nparams : 1), 0), "");
  for (int p = 0; p < nparams; p++) {
    LLVMValueRef off = LLVMConstInt(g->i64, (unsigned long long)(p * sizeof(ts_array_t) + offsetof(ts_array_t, data)), 0);
    LLVMValueRef slot = LLVMBuildGEP2(b, g->i8, LLVMGetParam(fn, 2), &off, 1, "");
    LLVMValueRef data = LLVMBuildLoad2(b, g->i8p, LLVMBuildBitCast(b, slot, g->i8pp, ""), "");
    LLVMValueRef at = LLVMConstInt(g->i64, (unsigned long long)p, 0);
    LLVMBuildStore(b, data, LLVMBuildGEP2(b, g->i8p, ptrs, &at, 1, ""));
  }
  LLVMValueRef off = LLVMConstInt(g->i64, offsetof(ts_array_t, data), 0);
  LLVMValueRef oslot = LLVMBuildGEP2(b, g->i8, LLVMGetParam(fn, 4), &off, 1, "");
  LLVMValueRef odata = LLVMBuildLoad2(b, g->i8p, LLVMBuildBitCast(b, oslot, g->i8pp, ""), "");
  LLVMValueRef cargs[3] = {ptrs, odata, LLVMConstInt(g->i64, (unsigned long long)count, 0)};
  LLVMBuildCall2(b, LLVMGlobalGetValueType(loop), loop, cargs, 3, "");
  LLVMBuildRet(b, LLVMConstInt(g->i32, 0, 0));
}

/* ---- one kernel per distinct fusion ------------------------------------------ */

static void put_word(ts_buf_t *b, int64_t w) { ts_buf_append(b, (const char *)&w, sizeof w); }

static void put_list(ts_buf_t *b, ts_i64_list_t l) {
  put_word(b, l.n);
  for (int k = 0; k < l.n; k++) put_word(b, l.v[k]);
}

/* Everything the emitters read of a loop over computation c (its element
 * count, and the computation in post-order: opcodes, element types, dimensions, operands by
 * position, parameter numbers, constant values and the attributes
 * emit_op/gen look at), so that two fusions with the same key get the same
 * IR: the kernel is emitted and compiled once. Names, layouts and metadata,
 * which the emitters ignore, are left out. `pos` is scratch per instruction
 * id. Returns false when out of memory. */
static bool comp_key(const ts_hlo_comp_t *c, int64_t count, bool flat, int *pos, ts_buf_t *b) {
  const ts_hlo_instr_t **order = ts_calloc((size_t)c->ninstrs + 1, sizeof *order);
  if (!order || ts_hlo_comp_post_order(c, order) != TS_OK) {
    ts_free(order);
    return false;
  }
  b->len = 0;
  put_word(b, count);
  put_word(b, flat);
  put_word(b, c->nparams);
  for (int p = 0; p < c->nparams; p++) put_word(b, c->params[p]->shape->elem);
  for (int k = 0; k < c->ninstrs; k++) {
    const ts_hlo_instr_t *x = order[k];
    pos[x->id] = k;
    put_word(b, x->op);
    put_word(b, x->shape->elem);
    put_word(b, x->shape->rank);
    for (int d = 0; d < x->shape->rank; d++) put_word(b, x->shape->dims[d]);
    put_word(b, x->nops);
    for (int o = 0; o < x->nops; o++) put_word(b, pos[x->ops[o]->id]);
    put_word(b, x->param_number);
    put_word(b, x == c->root);
    switch (x->op) {
    case TS_OP_CONSTANT:
      if (x->shape->elem == TS_F32) {
        float f = (float)x->literal->f[0];
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        put_word(b, bits);
      } else if (is_half(x->shape->elem)) {
        put_word(b, half_literal(x));
      } else {
        put_word(b, x->shape->elem == TS_S32 ? (int64_t)(int32_t)(uint32_t)x->literal->i[0] : x->literal->i[0] != 0);
      }
      break;
    case TS_OP_BROADCAST: case TS_OP_TRANSPOSE: case TS_OP_CONCATENATE: put_list(b, list_attr(x, "dimensions")); break;
    case TS_OP_SLICE: {
      const ts_slice_t *sl = ts_hlo_instr_attr(x, "slice")->v.slice;
      put_list(b, (ts_i64_list_t){sl->n, sl->start});
      put_list(b, (ts_i64_list_t){sl->n, sl->limit});
      put_list(b, (ts_i64_list_t){sl->n, sl->stride});
      break;
    }
    case TS_OP_IOTA: put_word(b, ts_hlo_instr_attr(x, "iota_dimension")->v.i); break;
    case TS_OP_REDUCE: /* the init is an operand, keyed by position above */
      put_list(b, list_attr(x, "dimensions"));
      put_word(b, reduce_op(x));
      break;
    case TS_OP_COMPARE: {
      const char *d = ts_hlo_instr_attr(x, "direction")->v.s;
      put_word(b, (int64_t)strlen(d));
      ts_buf_append(b, d, strlen(d));
      break;
    }
    default: break;
    }
  }
  ts_free(order);
  return !b->oom;
}

/* Fusion i's kernel: its computation at i's element count. */
static bool kernel_key(const ts_hlo_instr_t *i, bool flat, int *pos, ts_buf_t *b) {
  return comp_key(i->called[0], ts_shape_elements(i->shape), flat, pos, b);
}

static int by_instr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const kernel_t *)a)->instr, y = (uintptr_t)((const kernel_t *)b)->instr;
  return x < y ? -1 : x > y;
}

/* The host CPU's, on every function; and no memset or memcpy made of a
 * loop (the init fill of a reduce): the JIT resolves no symbol outside the
 * kernels' object. */
static void set_target_attrs(LLVMContextRef cx, LLVMModuleRef mod) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    if (LLVMCountBasicBlocks(f) == 0) continue;
    static const char *const nob[] = {"no-builtin-memset", "no-builtin-memcpy", "no-builtin-memmove"};
    for (int k = 0; k < 3; k++)
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                              LLVMCreateStringAttribute(cx, nob[k], (unsigned)strlen(nob[k]), "", 0));
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(cx, "target-cpu", 10, host_cpu, (unsigned)strlen(host_cpu)));
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(cx, "target-features", 15, host_features,
                                                      (unsigned)strlen(host_features)));
  }
}

/* ---- compiling a module, or loading it ------------------------------------------ */

/* The knobs that change the code, read once per compile (each is a field of
 * the module key). */
typedef struct {
  const char *perturb; /* TESSERA_CODEGEN_PERTURB; NULL: none */
  bool unroll;         /* TESSERA_CODEGEN_UNROLL */
  const char *passes;  /* TESSERA_CODEGEN_PASSES, else default<O2> */
  bool dump;           /* TESSERA_CODEGEN_DUMP: wants the IR, so no cache read */
} knobs_t;

static knobs_t read_knobs(void) {
  knobs_t k = {.perturb = ts_env_get(TS_ENV_CODEGEN_PERTURB), .passes = ts_env_get(TS_ENV_CODEGEN_PASSES)};
  if (k.perturb && !*k.perturb) k.perturb = NULL;
  if (!k.passes || !*k.passes) k.passes = "default<O2>";
  k.unroll = ts_env_int(TS_ENV_CODEGEN_UNROLL, 0) != 0; /* full unrolls of static trip counts cost JIT time, buy little */
  k.dump = ts_env_int(TS_ENV_CODEGEN_DUMP, 0) != 0;
  return k;
}

/* The distinct kernels of m's compilable fusions (cg->d, each with its key
 * copied into `keys`) and every fusion's kernel (cg->k, sorted); with
 * opts->entry and an elementwise entry, its key in *ekey. */
static ts_status_t collect(const ts_hlo_module_t *m, const ts_codegen_opts_t *opts, ts_arena_t *keys, ts_codegen_t *cg,
                           ts_buf_t *ekey, bool *eflat, ts_codegen_stats_t *s) {
  int *pos = ts_calloc((size_t)m->next_id + 1, sizeof *pos);
  ts_strmap_t seen = {0}; /* key -> distinct kernel index + 1 */
  ts_buf_t key = {0};
  ts_status_t st = pos ? TS_OK : TS_ERR_NOMEM;
  for (int c = 0; c < m->ncomps && st == TS_OK; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      const ts_hlo_instr_t *i = m->comps[c]->instrs[k];
      if (i->op != TS_OP_FUSION) continue;
      s->fusions++;
      bool flat;
      if (!cg_fusion_compiles(i, &flat)) continue;
      if (!kernel_key(i, flat, pos, &key)) {
        st = TS_ERR_NOMEM;
        break;
      }
      int d = (int)(intptr_t)ts_strmap_get(&seen, key.data, key.len) - 1;
      if (d < 0) {
        char *kcopy = ts_arena_alloc(keys, key.len);
        d = cg->ndistinct++;
        cg->d[d] = (distinct_t){.rep = i, .flat = flat, .key = kcopy, .keylen = key.len};
        if (!kcopy || !ts_strmap_put(&seen, memcpy(kcopy, key.data, key.len), key.len, (void *)(intptr_t)(d + 1))) {
          st = TS_ERR_NOMEM;
          break;
        }
      }
      cg->k[cg->n++] = (kernel_t){i, d};
    }
  /* the entry's loop computes out[i] for each i < n: never a reduce */
  if (st == TS_OK && opts && opts->entry && m->entry->root && m->entry->root->op != TS_OP_REDUCE &&
      cg_supported(m->entry, m->entry->nparams, eflat)) {
    cg->has_entry = true;
    if (!comp_key(m->entry, ts_shape_elements(m->entry->root->shape), *eflat, pos, ekey)) st = TS_ERR_NOMEM;
  }
  qsort(cg->k, (size_t)cg->n, sizeof *cg->k, by_instr);
  ts_free(pos);
  ts_buf_free(&key);
  ts_strmap_free(&seen);
  return st;
}

static void put_text(ts_buf_t *b, const char *s) {
  put_word(b, (int64_t)strlen(s));
  ts_buf_append(b, s, strlen(s));
}

/* The module key: the SHA-256 of everything the object code depends on.
 * The code generator itself (CG_SOURCES_SHA256: its sources and the opcode
 * and element-type tables kernel_key numbers by, hashed at build time, so an
 * edited emitter never meets an older build's kernels), LLVM, the target and
 * host CPU, the ts_array_t layout emit_kernel reads, the knobs, then each
 * distinct kernel's key in order (kernel d is symbol _k<d>) and the entry's. */
static bool module_key(const ts_codegen_t *cg, const knobs_t *kn, const ts_buf_t *ekey, unsigned char out[CG_KEY_LEN]) {
  ts_buf_t b = {0};
  put_text(&b, "tessera kernel cache");
  put_word(&b, CG_CACHE_FORMAT);
  put_text(&b, CG_SOURCES_SHA256);
  put_text(&b, LLVM_VERSION_STRING);
  char *triple = LLVMGetTargetMachineTriple(opt_tm);
  put_text(&b, triple);
  LLVMDisposeMessage(triple);
  put_text(&b, host_cpu);
  put_text(&b, host_features);
  put_word(&b, (int64_t)sizeof(ts_array_t));
  put_word(&b, (int64_t)offsetof(ts_array_t, data));
  put_text(&b, kn->perturb ? kn->perturb : "");
  put_word(&b, kn->unroll);
  put_text(&b, kn->passes);
  put_word(&b, cg->ndistinct);
  for (int d = 0; d < cg->ndistinct; d++) {
    put_word(&b, (int64_t)cg->d[d].keylen);
    ts_buf_append(&b, cg->d[d].key, cg->d[d].keylen);
  }
  put_word(&b, cg->has_entry);
  if (cg->has_entry) {
    put_word(&b, (int64_t)ekey->len);
    ts_buf_append(&b, ekey->data, ekey->len);
  }
  bool ok = !b.oom && cg_sha256(b.data, b.len, out);
  ts_buf_free(&b);
  return ok;
}

/* Symbols named by the module key, so that a cached object's names are the
 * ones this process looks up: ts_<16 hex>_k<d>, ts_<16 hex>_entry. */
static void name_symbols(ts_codegen_t *cg, const unsigned char key[CG_KEY_LEN]) {
  char hex[2 * CG_KEY_LEN + 1];
  cg_key_hex(key, hex);
  snprintf(cg->prefix, sizeof cg->prefix, "ts_%.16s_", hex);
  for (int d = 0; d < cg->ndistinct; d++) snprintf(cg->d[d].sym, sizeof cg->d[d].sym, "%sk%d", cg->prefix, d);
  if (cg->has_entry) snprintf(cg->entry_sym, sizeof cg->entry_sym, "%sentry", cg->prefix);
}

/* Builds the module's IR, optimizes it and emits its object file (*obj: the
 * caller disposes it). */
static ts_status_t compile_object(const ts_codegen_t *cg, const ts_hlo_module_t *m, bool eflat, const knobs_t *kn,
                                  LLVMMemoryBufferRef *obj, ts_codegen_stats_t *s, ts_diag_t *diag) {
  double t0 = ts_now_ms();
  LLVMValueRef *values = ts_calloc((size_t)m->next_id + 1, sizeof *values);
  if (!values) return TS_ERR_NOMEM;
  cg_t g = {0};
  cg_types(&g, LLVMContextCreate());
  g.mod = LLVMModuleCreateWithNameInContext("tessera_fusions", g.cx);
  g.b = LLVMCreateBuilderInContext(g.cx);
  g.perturb = kn->perturb;
  g.v = values;
  ts_status_t st = TS_OK;
  for (int d = 0; d < cg->ndistinct && st == TS_OK; d++) {
    const distinct_t *dk = &cg->d[d];
    const ts_hlo_comp_t *c = dk->rep->called[0];
    char lsym[64];
    snprintf(lsym, sizeof lsym, "%s_loop", dk->sym);
    LLVMValueRef loop = c->root->op == TS_OP_REDUCE ? emit_reduce(&g, c, dk->flat, lsym)
                        : dk->flat                   ? emit_loop(&g, c, lsym)
                                                     : emit_nested(&g, c, lsym);
    if (!loop) {
      st = TS_ERR_NOMEM;
      break;
    }
    LLVMSetLinkage(loop, LLVMInternalLinkage);
    emit_kernel(&g, loop, c->nparams, ts_shape_elements(dk->rep->shape), dk->sym);
  }
  if (st == TS_OK && cg->has_entry &&
      !(eflat ? emit_loop(&g, m->entry, cg->entry_sym) : emit_nested(&g, m->entry, cg->entry_sym)))
    st = TS_ERR_NOMEM;
  LLVMDisposeBuilder(g.b);
  ts_free(values);
  double t1 = ts_now_ms(), t2 = t1;
  if (st == TS_OK) {
    set_target_attrs(g.cx, g.mod);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(opt_tm);
    char *dl = LLVMCopyStringRepOfTargetData(td);
    LLVMDisposeTargetData(td);
    LLVMSetDataLayout(g.mod, dl);
    LLVMDisposeMessage(dl);
    char *triple = LLVMGetTargetMachineTriple(opt_tm);
    LLVMSetTarget(g.mod, triple);
    LLVMDisposeMessage(triple);
    t1 = ts_now_ms();
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
    LLVMPassBuilderOptionsSetLoopUnrolling(po, kn->unroll);
    LLVMErrorRef e = LLVMRunPasses(g.mod, kn->passes, opt_tm, po);
    LLVMDisposePassBuilderOptions(po);
    t2 = ts_now_ms();
    if (e) {
      take_error(e);
      ts_diag_plain(diag, "LLVM passes failed: %s", jit_error);
      st = TS_ERR_INTERNAL;
    }
  }
  if (st == TS_OK) {
    if (kn->dump) LLVMDumpModule(g.mod);
    t2 = ts_now_ms();
    char *err = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(opt_tm, g.mod, LLVMObjectFile, &err, obj)) {
      ts_diag_plain(diag, "LLVM could not emit the kernels' object file: %s", err ? err : "unknown reason");
      st = TS_ERR_INTERNAL;
    }
    LLVMDisposeMessage(err);
  }
  s->ir_ms += t1 - t0;
  s->opt_ms = t2 - t1;
  s->jit_ms = ts_now_ms() - t2;
  LLVMDisposeModule(g.mod);
  LLVMContextDispose(g.cx);
  return st;
}

/* Whether object file p[0..n) defines every symbol cg looks up: a cached
 * entry that passed its digest but is no object of this module is
 * recompiled, never loaded. */
static bool object_defines(const ts_codegen_t *cg, const char *p, size_t n) {
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(p, n, "cached kernels", 0);
  char *err = NULL;
  LLVMBinaryRef bin = LLVMCreateBinary(mb, NULL, &err);
  LLVMDisposeMessage(err);
  bool *have = ts_calloc((size_t)cg->ndistinct + 1, sizeof *have), entry = false;
  int found = 0;
  if (bin && have && LLVMBinaryGetType(bin) >= LLVMBinaryTypeCOFF) { /* the object kinds, not archives or IR */
    size_t pre = strlen(cg->prefix);
    LLVMSymbolIteratorRef it = LLVMObjectFileCopySymbolIterator(bin);
    for (; it && !LLVMObjectFileIsSymbolIteratorAtEnd(bin, it); LLVMMoveToNextSymbol(it)) {
      const char *name = LLVMGetSymbolName(it);
      if (!name || strncmp(name, cg->prefix, pre) != 0) continue;
      char *end;
      long d = name[pre] == 'k' ? strtol(name + pre + 1, &end, 10) : -1;
      if (d >= 0 && d < cg->ndistinct && !*end && !have[d]) {
        have[d] = true;
        found++;
      }
      if (cg->has_entry && strcmp(name, cg->entry_sym) == 0) entry = true;
    }
    if (it) LLVMDisposeSymbolIterator(it);
  }
  if (bin) LLVMDisposeBinary(bin);
  LLVMDisposeMemoryBuffer(mb);
  ts_free(have);
  return found == cg->ndistinct && (entry || !cg->has_entry);
}

static ts_status_t add_object(const char *p, size_t n, ts_diag_t *diag) {
  /* the JIT owns the copy (and keeps the code after the module is gone) */
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(p, n, "tessera kernels");
  LLVMErrorRef e = LLVMOrcLLJITAddObjectFile(jit, LLVMOrcLLJITGetMainJITDylib(jit), mb);
  if (!e) return TS_OK;
  take_error(e);
  ts_diag_plain(diag, "the LLVM JIT rejected the kernels' object file: %s", jit_error);
  return TS_ERR_INTERNAL;
}

static ts_status_t lookup_all(ts_codegen_t *cg, ts_diag_t *diag) {
  LLVMErrorRef e;
  for (int k = 0; k < cg->ndistinct; k++) {
    LLVMOrcExecutorAddress addr = 0;
    if ((e = LLVMOrcLLJITLookup(jit, &addr, cg->d[k].sym))) {
      take_error(e);
      ts_diag_plain(diag, "the LLVM JIT could not compile %s: %s", cg->d[k].rep->name, jit_error);
      return TS_ERR_INTERNAL;
    }
    cg->d[k].fn = (ts_kernel_fn)(uintptr_t)addr;
  }
  if (cg->has_entry) {
    LLVMOrcExecutorAddress addr = 0;
    if ((e = LLVMOrcLLJITLookup(jit, &addr, cg->entry_sym))) {
      take_error(e);
      ts_diag_plain(diag, "the LLVM JIT could not compile the entry: %s", jit_error);
      return TS_ERR_INTERNAL;
    }
    cg->entry = (ts_codegen_loop_fn)(uintptr_t)addr;
  }
  return TS_OK;
}

/* The modules in this process's JIT, by module key (the keys live in
 * loaded_keys, for the process): the same module again is looked up, since
 * adding its object twice would define its symbols twice. Under jit_mu. */
static ts_strmap_t loaded;
static ts_arena_t *loaded_keys;

/* Puts cg's code in the JIT (or finds it there) and looks its symbols up:
 * from the cache entry when there is a good one, else compiled from IR,
 * and that same object added and stored. Under jit_mu. */
static ts_status_t load(ts_codegen_t *cg, const ts_hlo_module_t *m, bool eflat, const knobs_t *kn,
                        const unsigned char key[CG_KEY_LEN], bool no_cache, ts_codegen_stats_t *s, ts_diag_t *diag) {
  double t = ts_now_ms();
  if (ts_strmap_get(&loaded, (const char *)key, CG_KEY_LEN)) {
    ts_status_t st = lookup_all(cg, diag);
    s->jit_ms = ts_now_ms() - t;
    return st;
  }
  if (!loaded_keys && !(loaded_keys = ts_arena_create())) return TS_ERR_NOMEM;
  char *kcopy = ts_arena_alloc(loaded_keys, CG_KEY_LEN);
  if (!kcopy) return TS_ERR_NOMEM;
  char *dir = no_cache ? NULL : cg_cache_dir(), *entry = NULL;
  const char *obj = NULL;
  size_t len = 0;
  s->cache_on = dir != NULL;
  if (dir && !kn->dump && (entry = cg_cache_load(dir, key, &obj, &len)) && !object_defines(cg, obj, len)) {
    char *path = cg_cache_path(dir, key);
    cg_cache_warn("'%s' is unusable (not an object defining its kernels); recompiling it", path ? path : dir);
    ts_free(path);
    ts_free(entry);
    entry = NULL;
  }
  s->cache_hit = entry != NULL;
  s->cache_ms = ts_now_ms() - t;
  LLVMMemoryBufferRef made = NULL;
  ts_status_t st = TS_OK;
  if (!entry && (st = compile_object(cg, m, eflat, kn, &made, s, diag)) == TS_OK) {
    obj = LLVMGetBufferStart(made);
    len = LLVMGetBufferSize(made);
  }
  t = ts_now_ms();
  if (st == TS_OK) st = add_object(obj, len, diag);
  if (st == TS_OK) st = lookup_all(cg, diag);
  s->jit_ms += ts_now_ms() - t;
  if (st == TS_OK && !ts_strmap_put(&loaded, memcpy(kcopy, key, CG_KEY_LEN), CG_KEY_LEN, (void *)1)) st = TS_ERR_NOMEM;
  if (st == TS_OK && made && dir) { /* stored once it linked: the cache holds only objects that load */
    t = ts_now_ms();
    cg_cache_store(dir, key, obj, len);
    s->cache_ms += ts_now_ms() - t;
  }
  if (made) LLVMDisposeMemoryBuffer(made);
  ts_free(entry);
  ts_free(dir);
  return st;
}

ts_status_t ts_codegen_compile(const ts_hlo_module_t *m, const ts_codegen_opts_t *opts, ts_codegen_t **out,
                               ts_codegen_stats_t *stats, ts_diag_t *diag) {
  *out = NULL;
  pthread_once(&jit_once, jit_start);
  if (!jit) {
    ts_diag_plain(diag, "the LLVM JIT did not start: %s", jit_error[0] ? jit_error : "unknown reason");
    return TS_ERR_SYSTEM;
  }
  double t0 = ts_now_ms();
  ts_codegen_stats_t s = {0};
  knobs_t kn = read_knobs();
  int nf = 0;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) nf += m->comps[c]->instrs[k]->op == TS_OP_FUSION;
  ts_codegen_t *cg = ts_calloc(1, sizeof *cg);
  ts_arena_t *keys = ts_arena_create(); /* the kernels' keys, for this call */
  ts_buf_t ekey = {0};
  bool eflat = false;
  unsigned char key[CG_KEY_LEN];
  ts_status_t st = TS_ERR_NOMEM;
  if (cg && keys && (cg->k = ts_calloc((size_t)nf + 1, sizeof *cg->k)) &&
      (cg->d = ts_calloc((size_t)nf + 1, sizeof *cg->d)))
    st = collect(m, opts, keys, cg, &ekey, &eflat, &s);
  if (st == TS_OK && !module_key(cg, &kn, &ekey, key)) st = TS_ERR_NOMEM;
  s.ir_ms = ts_now_ms() - t0;
  if (st == TS_OK && (cg->ndistinct || cg->has_entry)) { /* else nothing to compile, nothing to cache */
    name_symbols(cg, key);
    pthread_mutex_lock(&jit_mu);
    st = load(cg, m, eflat, &kn, key, opts && opts->no_cache, &s, diag);
    pthread_mutex_unlock(&jit_mu);
  }
  ts_buf_free(&ekey);
  ts_arena_destroy(keys);
  if (st != TS_OK) {
    ts_codegen_destroy(cg);
    return st;
  }
  for (int d = 0; d < cg->ndistinct; d++) cg->d[d].key = NULL; /* the arena is gone */
  s.compiled = cg->n;
  s.kernels = cg->ndistinct;
  if (stats) *stats = s;
  *out = cg;
  return TS_OK;
}

void ts_codegen_destroy(ts_codegen_t *cg) {
  if (!cg) return;
  ts_free(cg->k);
  ts_free(cg->d);
  ts_free(cg);
}

ts_kernel_fn ts_codegen_kernel(void *state, const ts_hlo_instr_t *fusion) {
  const ts_codegen_t *cg = state;
  if (!cg) return NULL;
  kernel_t key = {fusion, 0};
  const kernel_t *k = bsearch(&key, cg->k, (size_t)cg->n, sizeof *cg->k, by_instr);
  return k ? cg->d[k->kernel].fn : NULL;
}

ts_codegen_loop_fn ts_codegen_entry(const ts_codegen_t *cg) { return cg ? cg->entry : NULL; }
