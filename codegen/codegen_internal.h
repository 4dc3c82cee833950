/* codegen/ internals: what codegen.c emits for one element of a fusion
 * (the CPU loops there and the GPU kernels of nvptx.c share it), and the
 * math functions math.c emits into a module. */
#ifndef CODEGEN_INTERNAL_H
#define CODEGEN_INTERNAL_H

#include "ts_hlo.h"

#include <llvm-c/Core.h>

#define MAX_IN 256 /* parameters of a compiled fusion, at most */

typedef struct {
  LLVMContextRef cx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef f32, i1, i8, i32, i64, i8p, i8pp;
  const char *perturb; /* TESSERA_CODEGEN_PERTURB: an opcode whose results are made wrong */
  LLVMValueRef *v;     /* per instruction id: its value in the loop being emitted, or NULL (each loop allocates) */
} cg_t;

/* Sets g's context and types (mod, b and perturb are the caller's). */
void cg_types(cg_t *g, LLVMContextRef cx);

/* Whether computation c (called with nin operands) is one codegen/
 * compiles; *flat: one loop over the linear index does (else each operand
 * is read at its index map). */
bool cg_supported(const ts_hlo_comp_t *c, int nin, bool *flat);
/* Whether fusion instruction `fusion` gets a kernel: an array result and a
 * supported called computation (flat: see cg_supported). The CPU JIT and
 * the NVPTX kernels compile the same set. */
bool cg_fusion_compiles(const ts_hlo_instr_t *fusion, bool *flat);

/* The value of c's root (float, or i1 for pred) at row-major linear index
 * `lin` (i64), emitted at g->b's position as straight-line code; inp[p] is
 * parameter p's data (float* for f32, i8* for pred). NULL when out of
 * memory. */
LLVMValueRef cg_element(cg_t *g, const ts_hlo_comp_t *c, bool flat, LLVMValueRef *inp, LLVMValueRef lin);

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
