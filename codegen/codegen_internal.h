/* codegen/ internals: the math functions math.c emits into a module. */
#ifndef CODEGEN_INTERNAL_H
#define CODEGEN_INTERNAL_H

#include "ts_hlo.h"

#include <llvm-c/Core.h>

/* An internal, always-inlined `float f(float)` computing `op` (exp, log,
 * log1p, expm1, tanh, logistic, sqrt, rsqrt) in module `mod`, created on first use; NULL
 * for an opcode with no implementation here. */
LLVMValueRef cg_math_f32(LLVMModuleRef mod, ts_opcode_t op);

/* An LLVM intrinsic over f32 (llvm.fabs.f32, llvm.rint.f32, ...), declared on first use. */
LLVMValueRef cg_intrinsic_f32(LLVMModuleRef mod, const char *name, int nargs);

#endif
