/* Tessera codegen: LLVM kernels for fusions. Each fusion whose computation
 * is elementwise or moves elements by index maps (f32, s32, pred, bf16 and
 * f16 values; broadcasts, reshapes, transposes, slices, ...), optionally
 * with a reduce at its root (an input fusion, accumulated in kernels/'
 * order), becomes loops in LLVM IR built with the C
 * API, optimized with the new pass manager (default<O2>: the loop vectorizer
 * widens it for the host CPU), and JIT-compiled with ORC LLJIT. Math
 * functions (exp, log, log1p, expm1, tanh, logistic, erf, power, sine,
 * cosine) are our own range reduction plus polynomial, emitted as IR so
 * that they vectorize (codegen/math.c). bf16 and f16 compute as kernels/
 * does: widened to f32, each instruction's result rounded to nearest even
 * into its type, so the kernels are bit-identical to the interpreter
 * (NaN payloads of arithmetic results aside, as for f32); the math
 * functions on them only where their rounded results equal libm's for
 * every input (not logistic, f16 expm1, power). The
 * rest stays on kernels/. One JIT per process; code lives until exit.
 * The optimized module's object file is kept in an on-disk cache
 * (codegen/cache.c: $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else
 * ~/.cache/tessera) keyed by the SHA-256 of the kernels, the host CPU, the
 * LLVM version and the code generator's sources, so a later process loads
 * the machine code instead of optimizing again. */
#ifndef TS_CODEGEN_H
#define TS_CODEGEN_H

#include "ts_common.h"
#include "ts_hlo.h"
#include "ts_kernels.h"

typedef struct ts_codegen ts_codegen_t;

typedef struct {
  /* Also compile the entry computation itself as one kernel (tests: a
   * module whose entry is elementwise); ts_codegen_entry gives it. */
  bool entry;
  /* Neither read nor write the on-disk kernel cache (tessera run
   * --no-kernel-cache; TESSERA_CACHE_DIR="" or "off" does the same). */
  bool no_cache;
} ts_codegen_opts_t;

typedef struct {
  int fusions, compiled; /* fusions seen, fusions compiled */
  int kernels;           /* distinct kernels emitted: fusions the same up to names share one */
  /* The kernels' keys and IR, optimization, and machine code (object
   * emission plus linking into the JIT); a cache hit builds no IR and
   * optimizes nothing. */
  double ir_ms, opt_ms, jit_ms;
  bool cache_on;   /* the on-disk kernel cache was consulted */
  bool cache_hit;  /* the machine code came from it */
  double cache_ms; /* reading, checking and writing its entry */
} ts_codegen_stats_t;

/* Compiles the fusions of `m` (which must outlive the result) it can, all
 * into one LLVM module: one optimization run, one JIT add. The same module
 * (the same kernels, up to names) compiled again in this process reuses the
 * code; one compiled by an earlier process comes from the kernel cache. A
 * cache that cannot be read or written warns once on stderr and the module
 * is compiled from IR. A JIT that cannot start returns TS_ERR_SYSTEM with the
 * reason in diag (the caller runs on kernels/ instead). opts and stats may be
 * NULL. */
ts_status_t ts_codegen_compile(const ts_hlo_module_t *m, const ts_codegen_opts_t *opts, ts_codegen_t **out,
                               ts_codegen_stats_t *stats, ts_diag_t *diag);
void ts_codegen_destroy(ts_codegen_t *cg); /* NULL is a no-op; the machine code stays */

/* The compiled kernel of a fusion instruction (ts_kernel_fn convention), or
 * NULL when it was not compiled. Thread-safe. `state` is the ts_codegen_t,
 * so this fits ts_rt_program_opts_t.fusion_kernel. */
ts_kernel_fn ts_codegen_kernel(void *state, const ts_hlo_instr_t *fusion);

/* A compiled loop: out[i] = f(in[0][i or 0], in[1][...], ...) for i < n. */
typedef void (*ts_codegen_loop_fn)(void *const *in, void *out, int64_t n);
/* The entry's loop (opts.entry), or NULL. */
ts_codegen_loop_fn ts_codegen_entry(const ts_codegen_t *cg);

/* ---- PTX for the GPU (nvptx.c) ----------------------------------------------
 * The same fusions (the same element IR as the CPU loops) as NVPTX kernels,
 * one PTX module per call through LLVM's NVPTX backend: target sm_86, PTX
 * ISA 7.5, the newest LLVM 14 knows; the driver (and ptxas -arch=sm_90)
 * compiles that PTX for newer GPUs. Math functions are codegen/'s own IR:
 * no libdevice, no external calls; bf16 and f16 are 16-bit integers in
 * memory and registers, converted by integer arithmetic (and f32 adds, which
 * the NVPTX backend leaves IEEE: no flush to zero), as on the CPU. Each kernel is
 *   .entry NAME(.param .u64 in0, ..., .param .u64 in<nparams-1>, .param .u64 out, .param .u64 n)
 * (device pointers, n the element count) and covers its n elements with a
 * grid-stride loop, so any grid size is correct. */
#define TS_CODEGEN_PTX_SM "sm_86"
#define TS_CODEGEN_PTX_ISA "ptx75"

typedef struct {
  const ts_hlo_instr_t *instr; /* the fusion */
  char name[48];               /* its .entry */
  int nparams;                 /* device pointers before out */
  int64_t elements;            /* n */
} ts_codegen_ptx_kernel_t;

typedef struct {
  char *ptx; /* NUL-terminated PTX text; owned */
  size_t len;
  int n; /* kernels */
  ts_codegen_ptx_kernel_t *k;
} ts_codegen_ptx_t;

/* Emits every fusion of `m` that ts_codegen_compile would compile as one
 * kernel of one PTX module (stats: fusions seen, compiled, times). An LLVM
 * without the NVPTX target returns TS_ERR_UNSUPPORTED with the reason in
 * diag. Thread-safe; needs no GPU. */
ts_status_t ts_codegen_ptx(const ts_hlo_module_t *m, ts_codegen_ptx_t **out, ts_codegen_stats_t *stats,
                           ts_diag_t *diag);
void ts_codegen_ptx_destroy(ts_codegen_ptx_t *p); /* NULL is a no-op */
/* The kernel of a fusion instruction, or NULL when it has none. */
const ts_codegen_ptx_kernel_t *ts_codegen_ptx_kernel(const ts_codegen_ptx_t *p, const ts_hlo_instr_t *fusion);

#endif
