/* gpu/cuda.c on a GPU: cuBLAS sgemm against a double-precision loop; every
 * fusion kind's PTX kernel (codegen/nvptx.c), loaded by the driver and
 * launched over arena buffers, against the CPU kernel of the same fusion
 * (the same element IR, so within a few ULPs, NaN for NaN); an arena too
 * large for the device is an error naming its size. Skips (77) without a
 * device: it has never run where it was written. */
#include "fusion_cases.h"
#include "ts_codegen.h"
#include "ts_fusion.h"
#include "ts_gpu.h"
#include "ts_test.h"

#include <math.h>
#include <stdlib.h>

#define ARENA (64u << 20)

static ts_gpu_t *gpu;

static uint64_t rng(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static float uniform(uint64_t *s) { return (float)((double)rng(s) / (1u << 31) * 8.0 - 4.0); }

static bool close_ulps(float got, float want, int ulps) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got)) return got == want;
  float a = fabsf(want);
  int e;
  frexpf(a < 1.17549435e-38f ? 1.17549435e-38f : a, &e);
  return fabs((double)got - (double)want) <= ulps * ldexp(1.0, e - 24);
}

static void sgemm(void) {
  const int64_t M = 67, N = 45, K = 130;
  float *a = malloc(sizeof *a * M * K), *b = malloc(sizeof *b * K * N), *c = malloc(sizeof *c * M * N);
  uint64_t s = 7;
  for (int64_t i = 0; i < M * K; i++) a[i] = uniform(&s);
  for (int64_t i = 0; i < K * N; i++) b[i] = uniform(&s);
  float *da = ts_gpu_at(gpu, 0), *db = ts_gpu_at(gpu, 1u << 20), *dc = ts_gpu_at(gpu, 2u << 20);
  ts_diag_t d = {0};
  EXPECT_EQ(ts_gpu_copy_in(gpu, da, a, sizeof *a * M * K, &d), TS_OK);
  EXPECT_EQ(ts_gpu_copy_in(gpu, db, b, sizeof *b * K * N, &d), TS_OK);
  EXPECT_EQ(ts_gpu_sgemm(gpu, M, N, K, da, db, dc, &d), TS_OK);
  EXPECT_EQ(ts_gpu_copy_out(gpu, c, dc, sizeof *c * M * N, &d), TS_OK);
  EXPECT_EQ(ts_gpu_sync(gpu, &d), TS_OK);
  if (d.text) fprintf(stderr, "%s", d.text);
  int bad = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double want = 0, mag = 0;
      for (int64_t k = 0; k < K; k++) {
        want += (double)a[i * K + k] * b[k * N + j];
        mag += fabs((double)a[i * K + k] * b[k * N + j]);
      }
      if (fabs(c[i * N + j] - want) > 1e-5 * mag + 1e-6) {
        if (bad++ < 3) fprintf(stderr, "sgemm [%lld,%lld]: got %.9g want %.9g\n", (long long)i, (long long)j, c[i * N + j], want);
      }
    }
  EXPECT_EQ(bad, 0);
  ts_diag_free(&d);
  free(a);
  free(b);
  free(c);
}

/* One fusion: random inputs, the CPU kernel, the GPU kernel, compared. */
static void fusion(const ts_hlo_instr_t *fu, ts_kernel_fn cpu, ts_gpu_module_t *mod, const ts_codegen_ptx_kernel_t *k,
                   uint64_t seed) {
  const ts_hlo_comp_t *fc = fu->called[0];
  int np = fc->nparams;
  ts_array_t in[256];
  void *dptr[256 + 1];
  size_t off = 0;
  uint64_t s = seed;
  ts_diag_t d = {0};
  for (int p = 0; p < np; p++) {
    const ts_shape_t *sh = fc->params[p]->shape;
    int64_t n = ts_shape_elements(sh);
    size_t bytes = (size_t)n * ts_elem_storage_bytes(sh->elem);
    in[p] = (ts_array_t){sh->elem, sh->rank, sh->dims, calloc(1, bytes + 1)};
    for (int64_t i = 0; i < n; i++) {
      if (sh->elem == TS_F32) ((float *)in[p].data)[i] = uniform(&s);
      else ((uint8_t *)in[p].data)[i] = (uint8_t)(rng(&s) % 2);
    }
    dptr[p] = ts_gpu_at(gpu, off);
    EXPECT_EQ(ts_gpu_copy_in(gpu, dptr[p], in[p].data, bytes, &d), TS_OK);
    off += (bytes + 255) & ~(size_t)255;
  }
  int64_t n = ts_shape_elements(fu->shape);
  size_t obytes = (size_t)n * ts_elem_storage_bytes(fu->shape->elem);
  void *want = calloc(1, obytes + 1), *got = calloc(1, obytes + 1);
  ts_array_t out = {fu->shape->elem, fu->shape->rank, fu->shape->dims, want};
  EXPECT_EQ(cpu(NULL, fu, in, np, &out, 1), TS_OK);
  dptr[np] = ts_gpu_at(gpu, off);
  EXPECT_EQ(ts_gpu_launch(gpu, mod, k->name, dptr, np + 1, n, &d), TS_OK);
  EXPECT_EQ(ts_gpu_copy_out(gpu, got, dptr[np], obytes, &d), TS_OK);
  EXPECT_EQ(ts_gpu_sync(gpu, &d), TS_OK);
  if (d.text) fprintf(stderr, "%s: %s", fu->name, d.text);
  int bad = 0, exact = 0;
  for (int64_t i = 0; i < n; i++) {
    bool ok;
    if (fu->shape->elem == TS_F32) {
      float g = ((float *)got)[i], w = ((float *)want)[i];
      ok = close_ulps(g, w, 4);
      exact += memcmp(&g, &w, sizeof g) == 0;
      if (!ok && bad < 3) fprintf(stderr, "  %s [%lld]: gpu %.9g cpu %.9g\n", fu->name, (long long)i, g, w);
    } else {
      ok = ((uint8_t *)got)[i] == ((uint8_t *)want)[i];
      exact += ok;
    }
    bad += !ok;
  }
  fprintf(stderr, "%s: %lld elements, %d bit-identical to the CPU kernel, %d beyond 4 ulps\n", fu->name,
          (long long)n, exact, bad);
  EXPECT_EQ(bad, 0);
  for (int p = 0; p < np; p++) free(in[p].data);
  free(want);
  free(got);
  ts_diag_free(&d);
}

static void fusion_kinds(void) {
  for (int c = 0; c < NFUSION_CASES; c++) {
    const fusion_case_t *fc = &fusion_cases[c];
    ts_source_t src = {"case.hlo", fc->text, strlen(fc->text)};
    ts_hlo_module_t *m = NULL;
    ts_codegen_t *cg = NULL;
    ts_codegen_ptx_t *ptx = NULL;
    ts_gpu_module_t *mod = NULL;
    ts_diag_t d = {0};
    EXPECT_EQ(ts_hlo_parse(&src, NULL, &m, &d), TS_OK);
    if (m && ts_fusion_run(m, NULL, NULL, &d) == TS_OK && ts_codegen_compile(m, NULL, &cg, NULL, &d) == TS_OK &&
        ts_codegen_ptx(m, &ptx, NULL, &d) == TS_OK && ptx->n > 0) {
      EXPECT_EQ(ts_gpu_load_ptx(gpu, ptx->ptx, &mod, &d), TS_OK);
      for (int k = 0; mod && k < ptx->n; k++) {
        ts_kernel_fn cpu = ts_codegen_kernel(cg, ptx->k[k].instr);
        EXPECT(cpu != NULL);
        if (cpu) fusion(ptx->k[k].instr, cpu, mod, &ptx->k[k], 11 + (uint64_t)k);
      }
    }
    if (d.text) fprintf(stderr, "%s: %s", fc->name, d.text);
    ts_codegen_ptx_destroy(ptx);
    ts_codegen_destroy(cg);
    ts_hlo_module_destroy(m);
    ts_diag_free(&d);
  }
}

static void out_of_memory(void) {
  ts_gpu_t *g = NULL;
  ts_diag_t d = {0};
  size_t huge = (size_t)1 << 50; /* 1 PiB */
  EXPECT_EQ(ts_gpu_open(0, huge, &g, &d), TS_ERR_UNSUPPORTED);
  EXPECT(g == NULL);
  EXPECT(d.text && strstr(d.text, "out of device memory: the buffer arena needs 1125899906842624 bytes"));
  if (d.text) fprintf(stderr, "as expected: %s", d.text);
  ts_diag_free(&d);
}

int main(int argc, char **argv) {
  int ndev = 0;
  ts_diag_t d = {0};
  if (ts_gpu_device_count(&ndev, &d) != TS_OK) {
    const char *why = d.text ? d.text : "no CUDA device\n";
    printf("SKIP: %s", strncmp(why, "error: ", 7) == 0 ? why + 7 : why);
    ts_diag_free(&d);
    return 77;
  }
  if (ts_gpu_open(0, ARENA, &gpu, &d) != TS_OK) {
    fprintf(stderr, "%s", d.text ? d.text : "cannot open device 0\n");
    return 1;
  }
  static const ts_test_case_t cases[] = {{"sgemm", sgemm}, {"fusion_kinds", fusion_kinds}, {"out_of_memory", out_of_memory}};
  int rc = ts_test_cases("test_gpu_device", argc, argv, cases, 3);
  ts_gpu_close(gpu);
  return rc;
}
