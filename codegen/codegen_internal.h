/* codegen/ internals: the math functions math.c emits into a module. */
#ifndef CODEGEN_INTERNAL_H
#define CODEGEN_INTERNAL_H

#include "ts_hlo.h"

#include <llvm-c/Core.h>

/* An internal, always-inlined `float f(float)` computing `op` (exp, log,
 * log1p, expm1, tanh, logistic, sqrt, rsqrt, erf, sine, cosine; `float
 * f(float x, float y)` for power, x^y) in module `mod`, created on first
 * use; NULL for an opcode with no implementation here. */
LLVMValueRef cg_math_f32(LLVMModuleRef mod, ts_opcode_t op);

/* An LLVM intrinsic over type t (llvm.fabs.f64 over double, ...), declared
 * on first use; cg_intrinsic_f32 over float (llvm.fabs.f32, llvm.rint.f32, ...). */
LLVMValueRef cg_intrinsic(LLVMModuleRef mod, const char *name, LLVMTypeRef t, int nargs);
LLVMValueRef cg_intrinsic_f32(LLVMModuleRef mod, const char *name, int nargs);

#endif
