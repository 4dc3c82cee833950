/* OpenBLAS's kernels for this CPU (kernels/blas.c): the core type the CPU's
 * features call for, the plan that makes it take effect, and the start-up
 * check of sgemm against a plain loop.
 *
 * OpenBLAS 0.3.21 built with DYNAMIC_ARCH picks its kernels from the CPU
 * model; a model it does not know (VMs that report a generic "Intel Xeon
 * Processor") gets the SSE3 kernels of Prescott, a quarter of what the
 * AVX-512 ones do. The library reads OPENBLAS_CORETYPE once, in its
 * constructor, before main: so the launcher re-executes itself with the
 * variable set (ts_kernels_blas_plan_start), and TESSERA_BLAS_CORETYPE
 * records what it set, so that the next image knows the choice was
 * tessera's and does not do it again. Forced core types have computed wrong
 * results on some processors: a failed check moves one step down the chain
 * SkylakeX, Haswell, Sandybridge, none (OpenBLAS's own detection). A user's
 * own OPENBLAS_CORETYPE always wins. */
#ifndef TS_KERNELS_BLAS_H
#define TS_KERNELS_BLAS_H

#include "ts_common.h"

/* ---- the CPU ------------------------------------------------------------ */

/* What cpuid says the CPU has, and what XGETBV says the OS saves on a
 * context switch (an instruction set is usable only with both). */
typedef struct {
  bool avx, avx2, fma;                          /* leaf 1 ECX 28, 12; leaf 7 EBX 5 */
  bool avx512f, avx512bw, avx512dq, avx512vl;   /* leaf 7 EBX 16, 30, 17, 31 */
  bool os_ymm;                                  /* XCR0 bits 1-2: SSE and AVX state */
  bool os_zmm;                                  /* XCR0 bits 5-7 as well: opmask, ZMM */
} ts_kernels_cpu_t;

/* This CPU's features (all false off x86 or without OSXSAVE). */
void ts_kernels_cpu_detect(ts_kernels_cpu_t *cpu);

/* The OpenBLAS core type whose kernels the features can run: "SkylakeX"
 * (AVX-512 F/BW/DQ/VL with the ZMM state), "Haswell" (AVX2 and FMA with the
 * YMM state), "Sandybridge" (AVX with the YMM state), or NULL (nothing
 * better than the library's own choice). A pure function of `cpu`. */
const char *ts_kernels_blas_coretype_for(const ts_kernels_cpu_t *cpu);

/* The next safer core type of the chain: SkylakeX -> Haswell ->
 * Sandybridge -> NULL (OpenBLAS's own detection); NULL for any other name
 * (compared case-insensitively, as OpenBLAS does). */
const char *ts_kernels_blas_coretype_safer(const char *coretype);

/* ---- the plan: which core type a process image runs ---------------------- */

/* The two variables as a process image finds them, or as the next image
 * should get them. Empty values count as unset. */
typedef struct {
  const char *coretype; /* OPENBLAS_CORETYPE; NULL: unset */
  const char *chosen;   /* TESSERA_BLAS_CORETYPE: the core type an earlier image set,
                           "none" for OpenBLAS's own detection; NULL: unset */
} ts_kernels_blas_env_t;

typedef enum {
  TS_BLAS_FROM_LIBRARY, /* nothing forced: OpenBLAS's own detection */
  TS_BLAS_FROM_TESSERA, /* tessera's choice: from cpuid, a fallback, or "none" */
  TS_BLAS_FROM_USER,    /* the user's OPENBLAS_CORETYPE (never overridden) */
} ts_kernels_blas_source_t;

/* Whose choice runs: the user's when OPENBLAS_CORETYPE is set and is not
 * what TESSERA_BLAS_CORETYPE records. */
ts_kernels_blas_source_t ts_kernels_blas_source(const ts_kernels_blas_env_t *env);

/* At start-up, before the check: true when the process should re-execute
 * itself with `*next` so that a core type takes effect: `detected` (from
 * ts_kernels_blas_coretype_for; NULL: none to force) unless `running`
 * (what OpenBLAS picked itself in this image) is as wide already (a model
 * it knows: Cooperlake, Zen, ...), or the one a user wrote into
 * TESSERA_BLAS_CORETYPE. False (keep this image) when anything was already
 * decided: a user's OPENBLAS_CORETYPE, an earlier image's choice, or
 * "none". `next`'s strings are `env`'s, `detected` or static. */
bool ts_kernels_blas_plan_start(const ts_kernels_blas_env_t *env, const char *detected, const char *running,
                                ts_kernels_blas_env_t *next);

/* After a failed check of `running`: true with the next safer `*next` when
 * the core type was tessera's choice (one place down SkylakeX, Haswell,
 * Sandybridge, none) or OpenBLAS's own pick (the chain below its width:
 * Haswell below AVX-512 kernels, Sandybridge below AVX2 ones); false when
 * nothing safer is left or the user chose. "none" has no next, so a chain
 * of re-executions ends after at most four. */
bool ts_kernels_blas_plan_fallback(const ts_kernels_blas_env_t *env, const char *running,
                                   ts_kernels_blas_env_t *next);

/* ---- the start-up check ------------------------------------------------- */

/* C = A' B' + beta C on row-major f32 matrices, A' = trans_a ? A^T : A
 * (m x k), B' = trans_b ? B^T : B (k x n), as cblas_sgemm with alpha 1. */
typedef void (*ts_kernels_sgemm_fn)(bool trans_a, bool trans_b, int m, int n, int k, const float *a, int lda,
                                    const float *b, int ldb, float beta, float *c, int ldc);

/* OpenBLAS's cblas_sgemm behind that signature. */
void ts_kernels_blas_sgemm(bool trans_a, bool trans_b, int m, int n, int k, const float *a, int lda,
                           const float *b, int ldb, float beta, float *c, int ldc);

/* Runs `gemm` on a few cases (odd sizes, each transpose pair, beta 0 and 1,
 * padded leading dimensions, one large enough for OpenBLAS's blocked path
 * rather than its small-matrix kernels) and compares every element with a
 * loop in double: *ok when each is within (k + 2) * FLT_EPSILON *
 * (sum |a b| + |beta c|), a rigorous bound for f32 accumulation. `*worst`
 * (may be NULL) gets the largest error as a multiple of that bound
 * (infinity for a NaN). Runs on one OpenBLAS thread (the count is restored
 * after) and takes a few milliseconds. TS_ERR_NOMEM. */
ts_status_t ts_kernels_blas_check(ts_kernels_sgemm_fn gemm, bool *ok, double *worst);

/* The core type OpenBLAS runs (openblas_get_corename), e.g. "SkylakeX". */
const char *ts_kernels_blas_corename(void);

#endif
