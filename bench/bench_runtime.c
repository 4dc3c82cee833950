/* The runtime's step on one device against the reference interpreter's run
 * of the same module and inputs, and the runtime's own per-step overhead
 * outside kernels (ts_rt_step_times: other = total - kernels - collectives:
 * dispatch, control-flow copies, the step's alias copies). Medians of
 * --reps steps after one warm-up step each.
 *   bench_runtime [--reps N] MODULE.hlo... */
#include "bench_util.h"
#include "ts_interp.h"
#include "ts_runtime.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_runtime [--reps N] MODULE.hlo...\n"
          "Times one step of each module on one device: the runtime (its kernel time and the\n"
          "overhead outside kernels) and the reference interpreter on the same inputs.\n");
}

static double median_of(double *t, int n) {
  double best, med;
  ts_bench_best_median(t, n, &best, &med);
  return med;
}

static int bench_one(const char *path, int reps, int w) {
  ts_diag_t diag = {0};
  char *text = NULL;
  size_t len = 0;
  ts_hlo_module_t *m = NULL;
  ts_rt_program_t *p = NULL;
  ts_rt_device_t *d = NULL;
  ts_interp_t *it = NULL;
  ts_value_t **args = NULL;
  int rc = 1;
  if (ts_read_file(path, &text, &len, &diag) != TS_OK) goto done;
  ts_source_t src = {path, text, len};
  if (ts_hlo_parse(&src, NULL, &m, &diag) != TS_OK || ts_hlo_verify(m, NULL, &diag) != TS_OK) goto done;
  /* one device: the module's unpartitioned meaning (shardings are identities) */
  ts_rt_program_opts_t po = {.replica_count = 1, .num_partitions = 1};
  if (ts_rt_program_create(m, &po, &p, &diag) != TS_OK) goto done;
  ts_rt_device_opts_t dopts = {.device_id = 0};
  if (ts_rt_device_create(p, &dopts, &d, &diag) != TS_OK) goto done;
  int np = m->entry->nparams;
  args = calloc((size_t)np + 1, sizeof *args);
  if (!args || ts_interp_random_args(m, 1, args) != TS_OK) goto done;
  for (int q = 0, i = 0; q < np; q++) {
    ts_array_t leaves[4096];
    int n = ts_value_leaves(args[q], leaves, 4096);
    for (int k = 0; k < n && k < 4096; k++, i++) memcpy(ts_rt_device_input(d, i)->data, leaves[k].data, ts_array_bytes(&leaves[k]));
  }
  double rt[TS_BENCH_MAX_REPS], other[TS_BENCH_MAX_REPS], kern[TS_BENCH_MAX_REPS], in[TS_BENCH_MAX_REPS];
  for (int r = -1; r < reps; r++) {
    if (ts_rt_device_run(d, r + 2, &diag) != TS_OK) goto done;
    ts_rt_step_times_t t;
    ts_rt_device_step_times(d, &t);
    if (r < 0) continue;
    rt[r] = (double)t.total_ns * 1e-9;
    kern[r] = (double)t.kernel_ns * 1e-9;
    other[r] = (double)t.other_ns * 1e-9;
  }
  ts_interp_opts_t io = {0};
  if (ts_interp_create(m, &io, &it, &diag) != TS_OK) goto done;
  for (int r = -1; r < reps; r++) {
    ts_value_t *out = NULL;
    double t0 = ts_bench_now();
    if (ts_interp_run(it, args, &out, &diag) != TS_OK) goto done;
    double t1 = ts_bench_now();
    ts_value_unref(out);
    if (r >= 0) in[r] = t1 - t0;
  }
  ts_rt_memory_t mem;
  ts_rt_program_memory(p, &mem);
  double mrt = median_of(rt, reps), mk = median_of(kern, reps), mo = median_of(other, reps), mi = median_of(in, reps);
  printf("%-*s %7lld %10.3f %10.3f %10.1f %7.2f%% %10.3f %7.2fx %9.1f %9.1f\n", w, ts_bench_base_name(path),
         (long long)ts_bench_count_instrs(m), mrt * 1e3, mk * 1e3, mo * 1e6, mrt > 0 ? 100.0 * mo / mrt : 0.0,
         mi * 1e3, mrt > 0 ? mi / mrt : 0.0, (double)mem.peak / 1024.0, (double)mem.naive / 1024.0);
  rc = 0;
done:
  if (rc) fprintf(stderr, "%s: %s\n", path, diag.text ? diag.text : "failed");
  if (args)
    for (int q = 0; q < (m ? m->entry->nparams : 0); q++) ts_value_unref(args[q]);
  free(args);
  ts_interp_destroy(it);
  ts_interp_release_buffers();
  ts_rt_device_destroy(d);
  ts_rt_program_destroy(p);
  ts_hlo_module_destroy(m);
  ts_free(text);
  ts_diag_free(&diag);
  return rc;
}

int main(int argc, char **argv) {
  int reps = 20, first = 0, w = 0;
  int rc = ts_bench_args(argc, argv, "bench_runtime", usage, &reps, &first, &w);
  if (rc >= 0) return rc;
  if (w < 6) w = 6;
  printf("%-*s %7s %10s %10s %10s %8s %10s %8s %9s %9s\n", w, "module", "instrs", "step_ms", "kernel_ms", "other_us",
         "other%", "interp_ms", "speedup", "peak_KiB", "naive_KiB");
  int bad = 0;
  for (int k = first; k < argc; k++) bad |= bench_one(argv[k], reps, w);
  return bad;
}
