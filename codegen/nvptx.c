/* Fusion -> NVPTX kernel -> default<O2> -> PTX text, through LLVM's NVPTX
 * backend on the element IR codegen.c emits for the CPU (cg_element), so the
 * GPU computes what the CPU kernels compute, with the same math functions.
 * NVPTX rather than NVRTC from generated CUDA C: one IR generator instead of
 * a second one in another language, the math functions (fitted in IR,
 * checked against libm in test_codegen_math) reused as they are, and no
 * CUDA needed to make the PTX: it is built and checked (ptxas) on machines
 * without a GPU or a CUDA build. */
#include "ts_codegen.h"

#include "codegen_internal.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRIPLE "nvptx64-nvidia-cuda"

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;
static LLVMTargetRef nvptx_target;
static char nvptx_error[256];

static void nvptx_init(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  char *err = NULL;
  if (LLVMGetTargetFromTriple(TRIPLE, &nvptx_target, &err) != 0) {
    snprintf(nvptx_error, sizeof nvptx_error, "LLVM has no NVPTX target: %s", err ? err : "unknown reason");
    nvptx_target = NULL;
  }
  LLVMDisposeMessage(err);
}

static LLVMValueRef sreg(cg_t *g, const char *name) {
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
  if (!fn) fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->i32, NULL, 0, 0));
  LLVMValueRef v = LLVMBuildCall2(g->b, LLVMGlobalGetValueType(fn), fn, NULL, 0, "");
  return LLVMBuildZExt(g->b, v, g->i64, "");
}

/* Emits the kernel of fusion computation c: params (i8* in..., i8* out,
 * i64 n); i from ctaid.x * ntid.x + tid.x by nctaid.x * ntid.x while i < n. */
static bool emit_kernel(cg_t *g, const ts_hlo_comp_t *c, bool flat, const char *sym) {
  LLVMTypeRef args[MAX_IN + 2];
  int np = c->nparams;
  for (int p = 0; p <= np; p++) args[p] = g->i8p;
  args[np + 1] = g->i64;
  LLVMValueRef fn = LLVMAddFunction(g->mod, sym, LLVMFunctionType(LLVMVoidTypeInContext(g->cx), args, (unsigned)np + 2, 0));
  LLVMBuilderRef b = g->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->cx, fn, "entry"));
  LLVMValueRef inp[MAX_IN];
  for (int p = 0; p < np; p++) inp[p] = cg_data(g, c->params[p]->shape->elem, LLVMGetParam(fn, (unsigned)p));
  LLVMValueRef ntid = sreg(g, "llvm.nvvm.read.ptx.sreg.ntid.x");
  LLVMValueRef first = LLVMBuildAdd(b, LLVMBuildMul(b, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"), ntid, ""),
                                    sreg(g, "llvm.nvvm.read.ptx.sreg.tid.x"), "");
  LLVMValueRef stride = LLVMBuildMul(b, sreg(g, "llvm.nvvm.read.ptx.sreg.nctaid.x"), ntid, "");
  LLVMValueRef outp = LLVMGetParam(fn, (unsigned)np), n = LLVMGetParam(fn, (unsigned)np + 1);
  if (!cg_emit_loop(g, c, flat, inp, outp, first, stride, n)) return false;
  /* !nvvm.annotations = !{!{fn, !"kernel", i32 1}}: an .entry, not a .func */
  LLVMValueRef md[3] = {fn, LLVMMDStringInContext(g->cx, "kernel", 6), LLVMConstInt(g->i32, 1, 0)};
  LLVMAddNamedMetadataOperand(g->mod, "nvvm.annotations", LLVMMDNodeInContext(g->cx, md, 3));
  return true;
}

ts_status_t ts_codegen_ptx(const ts_hlo_module_t *m, ts_codegen_ptx_t **out, ts_codegen_stats_t *stats,
                           ts_diag_t *diag) {
  *out = NULL;
  pthread_once(&nvptx_once, nvptx_init);
  if (!nvptx_target) {
    ts_diag_plain(diag, "%s", nvptx_error);
    return TS_ERR_UNSUPPORTED;
  }
  int nf = 0;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) nf += m->comps[c]->instrs[k]->op == TS_OP_FUSION;
  ts_codegen_ptx_t *p = ts_calloc(1, sizeof *p);
  if (!p || !(p->k = ts_calloc((size_t)nf + 1, sizeof *p->k))) {
    ts_free(p);
    return TS_ERR_NOMEM;
  }
  ts_codegen_stats_t st0 = {0};
  ts_status_t st = TS_OK;
  double t0 = ts_now_ms();
  cg_t g = {0};
  cg_types(&g, LLVMContextCreate());
  g.mod = LLVMModuleCreateWithNameInContext("tessera_fusions_ptx", g.cx);
  g.b = LLVMCreateBuilderInContext(g.cx);
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(nvptx_target, TRIPLE, TS_CODEGEN_PTX_SM, "+" TS_CODEGEN_PTX_ISA,
                                                    LLVMCodeGenLevelAggressive, LLVMRelocDefault, LLVMCodeModelDefault);
  LLVMSetTarget(g.mod, TRIPLE);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *dl = LLVMCopyStringRepOfTargetData(td);
  LLVMSetDataLayout(g.mod, dl);
  LLVMDisposeMessage(dl);
  LLVMDisposeTargetData(td);
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      const ts_hlo_instr_t *i = m->comps[c]->instrs[k];
      if (i->op != TS_OP_FUSION) continue;
      st0.fusions++;
      bool flat;
      if (!cg_fusion_compiles(i, &flat)) continue;
      ts_codegen_ptx_kernel_t *kk = &p->k[p->n];
      snprintf(kk->name, sizeof kk->name, "ts_fusion_%d", p->n);
      if (!emit_kernel(&g, i->called[0], flat, kk->name)) {
        st = TS_ERR_NOMEM;
        goto done;
      }
      kk->instr = i;
      kk->nparams = i->called[0]->nparams;
      kk->elements = ts_shape_elements(i->shape);
      p->n++;
    }
  char *verr = NULL;
  if (LLVMVerifyModule(g.mod, LLVMReturnStatusAction, &verr)) {
    ts_diag_plain(diag, "the NVPTX module does not verify (a codegen bug): %s", verr ? verr : "");
    LLVMDisposeMessage(verr);
    st = TS_ERR_INTERNAL;
    goto done;
  }
  LLVMDisposeMessage(verr);
  double t1 = ts_now_ms();
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(g.mod, "default<O2>", tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    ts_diag_plain(diag, "LLVM passes failed on the NVPTX module: %s", msg);
    LLVMDisposeErrorMessage(msg);
    st = TS_ERR_INTERNAL;
    goto done;
  }
  double t2 = ts_now_ms();
  LLVMMemoryBufferRef buf = NULL;
  char *err = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, g.mod, LLVMAssemblyFile, &err, &buf)) {
    ts_diag_plain(diag, "the NVPTX backend failed: %s", err ? err : "unknown reason");
    LLVMDisposeMessage(err);
    st = TS_ERR_INTERNAL;
    goto done;
  }
  size_t len = LLVMGetBufferSize(buf);
  if (!(p->ptx = ts_malloc(len + 1))) {
    LLVMDisposeMemoryBuffer(buf);
    st = TS_ERR_NOMEM;
    goto done;
  }
  memcpy(p->ptx, LLVMGetBufferStart(buf), len);
  p->ptx[len] = '\0';
  p->len = strlen(p->ptx); /* the buffer may carry a trailing NUL */
  LLVMDisposeMemoryBuffer(buf);
  st0.compiled = p->n;
  st0.ir_ms = t1 - t0;
  st0.opt_ms = t2 - t1;
  st0.jit_ms = ts_now_ms() - t2; /* here: the NVPTX backend */
  if (stats) *stats = st0;
  *out = p;
done:
  LLVMDisposeBuilder(g.b);
  LLVMDisposeModule(g.mod);
  LLVMContextDispose(g.cx);
  LLVMDisposeTargetMachine(tm);
  if (st != TS_OK) ts_codegen_ptx_destroy(p);
  return st;
}

void ts_codegen_ptx_destroy(ts_codegen_ptx_t *p) {
  if (!p) return;
  ts_free(p->ptx);
  ts_free(p->k);
  ts_free(p);
}

const ts_codegen_ptx_kernel_t *ts_codegen_ptx_kernel(const ts_codegen_ptx_t *p, const ts_hlo_instr_t *fusion) {
  if (!p) return NULL;
  for (int k = 0; k < p->n; k++)
    if (p->k[k].instr == fusion) return &p->k[k];
  return NULL;
}
