/* tessera run's compiled kernels (--kernels=compiled, the default): the
 * fusion pass on the per-device program after scheduling, then LLVM kernels
 * for the fusions codegen/ can compile; a JIT that cannot start leaves the
 * run on kernels/ with one warning. */
#include "run_internal.h"
#include "ts_codegen.h"
#include "ts_fusion.h"

#include <stdio.h>
#include <string.h>

ts_status_t run_compiled_kernels(ts_hlo_module_t *pm, int64_t R, int64_t P, bool report, bool kernel_cache,
                                 ts_rt_program_opts_t *po, ts_codegen_t **cg, ts_diag_t *diag) {
  *cg = NULL;
  double t0 = ts_now_ms();
  ts_fusion_stats_t fs;
  TS_CHECK(ts_fusion_run(pm, NULL, &fs, diag));
  ts_status_t st;
#ifndef NDEBUG
  /* Debug builds (the sanitizer CI) verify the fused program; release
   * builds trust the pass, whose every rewrite the fusion tests verify
   * (opt --stage=fused): at 1M instructions this check cost more than the
   * fusion itself. */
  ts_hlo_verify_opts_t vo = {.replica_count = R, .num_partitions = P};
  ts_diag_t vd = {0};
  if ((st = ts_hlo_verify(pm, &vo, &vd)) != TS_OK) {
    ts_diag_plain(diag, "the fused module does not verify (a fusion bug): %s", vd.text ? vd.text : ts_status_string(st));
    ts_diag_free(&vd);
    return TS_ERR_INTERNAL;
  }
#else
  (void)R;
  (void)P;
#endif
  double t1 = ts_now_ms();
  ts_codegen_stats_t cs = {0};
  ts_diag_t cd = {0};
  ts_codegen_opts_t co = {.no_cache = !kernel_cache};
  st = ts_codegen_compile(pm, &co, cg, &cs, &cd);
  if (st == TS_ERR_SYSTEM) { /* no JIT: the plain kernels run everything */
    const char *why = cd.text ? cd.text : "the LLVM JIT did not start";
    if (strncmp(why, "error: ", 7) == 0) why += 7;
    int n = (int)strcspn(why, "\n");
    fprintf(stderr, "tessera run: warning: %.*s; running on the plain kernels\n", n, why);
    ts_diag_free(&cd);
    return TS_OK;
  }
  if (st != TS_OK) {
    ts_diag_plain(diag, "%s", cd.text ? cd.text : ts_status_string(st));
    ts_diag_free(&cd);
    return st;
  }
  po->fusion_kernel = ts_codegen_kernel;
  po->fusion_state = *cg;
  if (report)
    printf("compiled kernels: %d loop + %d input fusions (%d instructions), %d compiled; fusion %.1f ms, "
           "codegen %.1f ms (IR %.1f, optimize %.1f, JIT %.1f, kernel cache %s %.1f)\n",
           fs.loop_fusions, fs.input_fusions, fs.fused_instrs, cs.compiled, t1 - t0, ts_now_ms() - t1,
           cs.ir_ms, cs.opt_ms, cs.jit_ms, !cs.cache_on ? "off" : cs.cache_hit ? "hit" : "miss", cs.cache_ms);
  return TS_OK;
}
