/* Tessera codegen: LLVM kernels for fusions. Each fusion whose computation
 * is elementwise (f32 and pred values; scalar broadcasts, same-size
 * reshapes, scalar constants) becomes one loop in LLVM IR built with the C
 * API, optimized with the new pass manager (default<O2>: the loop vectorizer
 * widens it for the host CPU), and JIT-compiled with ORC LLJIT. Math
 * functions (exp, log, tanh, logistic) are our own range reduction plus
 * polynomial, emitted as IR so that they vectorize (codegen/math.c). The
 * rest stays on kernels/. One JIT per process; code lives until exit. */
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
} ts_codegen_opts_t;

typedef struct {
  int fusions, compiled; /* fusions seen, fusions compiled */
  int kernels;           /* distinct kernels emitted: fusions the same up to names share one */
  double ir_ms, opt_ms, jit_ms;
} ts_codegen_stats_t;

/* Compiles the fusions of `m` (which must outlive the result) it can, all
 * into one LLVM module: one optimization run, one JIT add. A JIT that cannot
 * start returns TS_ERR_SYSTEM with the reason in diag (the caller runs on
 * kernels/ instead). opts and stats may be NULL. */
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

#endif
