/* kernels/blas.c: the cpuid features -> OpenBLAS core type mapping, the
 * fallback chain, the re-execution plan (it must end), and the start-up
 * sgemm check with gemms injected through its function pointer: a correct
 * one written here passes, wrong ones (an element off, a NaN, a dropped
 * term, a write into the padding) fail. */
#include "ts_kernels_blas.h"
#include "ts_test.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

/* ---- the mapping, a pure function of the features ---------------------- */

static ts_kernels_cpu_t skylake_x(void) {
  return (ts_kernels_cpu_t){.avx = true, .avx2 = true, .fma = true, .avx512f = true, .avx512bw = true,
                            .avx512dq = true, .avx512vl = true, .os_ymm = true, .os_zmm = true};
}

static void test_mapping(void) {
  ts_kernels_cpu_t c = skylake_x();
  EXPECT_STREQ(ts_kernels_blas_coretype_for(&c), "SkylakeX");
  /* AVX-512 without the OS saving the ZMM state (XCR0 bits 5-7): AVX2 kernels. */
  c.os_zmm = false;
  EXPECT_STREQ(ts_kernels_blas_coretype_for(&c), "Haswell");
  /* Knights Landing style: AVX-512F without BW/DQ/VL is not SkylakeX. */
  c = skylake_x();
  c.avx512bw = c.avx512vl = false;
  EXPECT_STREQ(ts_kernels_blas_coretype_for(&c), "Haswell");
  c = skylake_x();
  c.avx512dq = false;
  EXPECT_STREQ(ts_kernels_blas_coretype_for(&c), "Haswell");
  /* AVX2 without FMA (a VM that masks FMA) cannot run the Haswell kernels. */
  c = skylake_x();
  c.fma = false;
  EXPECT_STREQ(ts_kernels_blas_coretype_for(&c), "Sandybridge");
  c = (ts_kernels_cpu_t){.avx = true, .avx2 = true, .fma = true, .os_ymm = true};
  EXPECT_STREQ(ts_kernels_blas_coretype_for(&c), "Haswell");
  c = (ts_kernels_cpu_t){.avx = true, .os_ymm = true};
  EXPECT_STREQ(ts_kernels_blas_coretype_for(&c), "Sandybridge");
  /* AVX without the OS saving YMM: nothing to force. */
  c.os_ymm = false;
  EXPECT_STREQ(ts_kernels_blas_coretype_for(&c), NULL);
  c = (ts_kernels_cpu_t){0};
  EXPECT_STREQ(ts_kernels_blas_coretype_for(&c), NULL);
  /* The CPU this runs on: whatever it has, the ZMM state implies the YMM state. */
  ts_kernels_cpu_detect(&c);
  EXPECT(!c.os_zmm || c.os_ymm);
  EXPECT(!c.avx2 || c.avx);
}

static void test_chain(void) {
  EXPECT_STREQ(ts_kernels_blas_coretype_safer("SkylakeX"), "Haswell");
  EXPECT_STREQ(ts_kernels_blas_coretype_safer("skylakex"), "Haswell"); /* OpenBLAS ignores case */
  EXPECT_STREQ(ts_kernels_blas_coretype_safer("Haswell"), "Sandybridge");
  EXPECT_STREQ(ts_kernels_blas_coretype_safer("Sandybridge"), NULL);
  EXPECT_STREQ(ts_kernels_blas_coretype_safer("Cooperlake"), NULL);
  EXPECT_STREQ(ts_kernels_blas_coretype_safer(NULL), NULL);
}

/* ---- the plan ----------------------------------------------------------- */

static void test_plan_start(void) {
  ts_kernels_blas_env_t next = {0};
  /* Nothing set: re-execute with what cpuid calls for, recorded as tessera's. */
  ts_kernels_blas_env_t e = {NULL, NULL};
  EXPECT_EQ(ts_kernels_blas_source(&e), TS_BLAS_FROM_LIBRARY);
  EXPECT(ts_kernels_blas_plan_start(&e, "SkylakeX", "Prescott", &next));
  EXPECT_STREQ(next.coretype, "SkylakeX");
  EXPECT_STREQ(next.chosen, "SkylakeX");
  /* The image that re-execution makes: tessera's choice, no second exec. */
  EXPECT_EQ(ts_kernels_blas_source(&next), TS_BLAS_FROM_TESSERA);
  ts_kernels_blas_env_t again;
  EXPECT(!ts_kernels_blas_plan_start(&next, "SkylakeX", "Prescott", &again));
  /* Empty values count as unset. */
  e = (ts_kernels_blas_env_t){"", ""};
  EXPECT(ts_kernels_blas_plan_start(&e, "Haswell", "Prescott", &next));
  EXPECT_STREQ(next.coretype, "Haswell");
  /* Nothing to force. */
  e = (ts_kernels_blas_env_t){NULL, NULL};
  EXPECT(!ts_kernels_blas_plan_start(&e, NULL, "Prescott", &next));
  /* The user's OPENBLAS_CORETYPE wins, whatever cpuid says. */
  e = (ts_kernels_blas_env_t){"Prescott", NULL};
  EXPECT_EQ(ts_kernels_blas_source(&e), TS_BLAS_FROM_USER);
  EXPECT(!ts_kernels_blas_plan_start(&e, "SkylakeX", "Prescott", &next));
  /* ... also when it differs from what an earlier image recorded. */
  e = (ts_kernels_blas_env_t){"Zen", "SkylakeX"};
  EXPECT_EQ(ts_kernels_blas_source(&e), TS_BLAS_FROM_USER);
  EXPECT(!ts_kernels_blas_plan_start(&e, "SkylakeX", "Prescott", &next));
  /* TESSERA_BLAS_CORETYPE=none: OpenBLAS's own, no exec. */
  e = (ts_kernels_blas_env_t){NULL, "none"};
  EXPECT_EQ(ts_kernels_blas_source(&e), TS_BLAS_FROM_TESSERA);
  EXPECT(!ts_kernels_blas_plan_start(&e, "SkylakeX", "Prescott", &next));
  /* A known name there is a request; an unknown one is ignored. */
  e = (ts_kernels_blas_env_t){NULL, "Sandybridge"};
  EXPECT(ts_kernels_blas_plan_start(&e, "SkylakeX", "Prescott", &next));
  EXPECT_STREQ(next.coretype, "Sandybridge");
  e = (ts_kernels_blas_env_t){NULL, "Bogus"};
  EXPECT(ts_kernels_blas_plan_start(&e, "Haswell", "Prescott", &next));
  EXPECT_STREQ(next.coretype, "Haswell");
  /* OpenBLAS knows the CPU and picked kernels as wide: no exec. */
  e = (ts_kernels_blas_env_t){NULL, NULL};
  EXPECT(!ts_kernels_blas_plan_start(&e, "SkylakeX", "SkylakeX", &next));
  EXPECT(!ts_kernels_blas_plan_start(&e, "SkylakeX", "cooperlake", &next));
  EXPECT(!ts_kernels_blas_plan_start(&e, "Haswell", "Zen", &next));
  EXPECT(!ts_kernels_blas_plan_start(&e, "Haswell", "SkylakeX", &next));
  /* ... narrower than the CPU allows: exec. */
  EXPECT(ts_kernels_blas_plan_start(&e, "SkylakeX", "Zen", &next));
  EXPECT_STREQ(next.coretype, "SkylakeX");
  EXPECT(ts_kernels_blas_plan_start(&e, "SkylakeX", "Sandybridge", &next));
  EXPECT(ts_kernels_blas_plan_start(&e, "Sandybridge", "Nehalem", &next));
  EXPECT(ts_kernels_blas_plan_start(&e, "Sandybridge", NULL, &next));
  /* A request in TESSERA_BLAS_CORETYPE is followed whatever OpenBLAS picked. */
  e = (ts_kernels_blas_env_t){NULL, "Haswell"};
  EXPECT(ts_kernels_blas_plan_start(&e, "SkylakeX", "Cooperlake", &next));
  EXPECT_STREQ(next.coretype, "Haswell");
}

/* A check that fails in every image: the chain of re-executions ends after
 * SkylakeX, Haswell, Sandybridge and none, and never repeats a setting. */
static void test_plan_fallback_ends(void) {
  ts_kernels_blas_env_t img = {NULL, NULL}, next;
  const char *want[] = {"SkylakeX", "Haswell", "Sandybridge", NULL};
  EXPECT(ts_kernels_blas_plan_start(&img, "SkylakeX", "Prescott", &next));
  img = next;
  int execs = 1;
  for (int step = 0; step < 10; step++) {
    EXPECT(!ts_kernels_blas_plan_start(&img, "SkylakeX", "Prescott", &next)); /* an image decides once */
    EXPECT_STREQ(img.coretype, want[step < 4 ? step : 3]);
    if (!ts_kernels_blas_plan_fallback(&img, img.coretype ? img.coretype : "Prescott", &next)) break;
    img = next;
    execs++;
  }
  EXPECT_EQ(execs, 4);
  EXPECT_STREQ(img.coretype, NULL);
  EXPECT_STREQ(img.chosen, "none");
  /* The user's choice has no fallback, nor has OpenBLAS's own when it is
   * no wider than AVX. */
  ts_kernels_blas_env_t user = {"SkylakeX", NULL}, lib = {NULL, NULL};
  EXPECT(!ts_kernels_blas_plan_fallback(&user, "SkylakeX", &next));
  EXPECT(!ts_kernels_blas_plan_fallback(&lib, "Prescott", &next));
  EXPECT(!ts_kernels_blas_plan_fallback(&lib, "Sandybridge", &next));
  /* OpenBLAS's own wide pick failing: the chain below its width, and on to the end. */
  EXPECT(ts_kernels_blas_plan_fallback(&lib, "Zen", &next));
  EXPECT_STREQ(next.coretype, "Sandybridge");
  EXPECT(ts_kernels_blas_plan_fallback(&lib, "Cooperlake", &next));
  EXPECT_STREQ(next.coretype, "Haswell");
  EXPECT_STREQ(next.chosen, "Haswell");
  execs = 1;
  for (img = next; ts_kernels_blas_plan_fallback(&img, img.coretype ? img.coretype : "Cooperlake", &next) && execs < 10;
       img = next)
    execs++;
  EXPECT_EQ(execs, 3); /* Haswell, Sandybridge, none */
  EXPECT_STREQ(img.chosen, "none");
  /* A chosen type outside the chain (only a user can write one) ends at none. */
  ts_kernels_blas_env_t odd = {"Cooperlake", "Cooperlake"};
  EXPECT(ts_kernels_blas_plan_fallback(&odd, "Cooperlake", &next));
  EXPECT_STREQ(next.coretype, NULL);
  EXPECT_STREQ(next.chosen, "none");
}

/* ---- the start-up check, gemm injected ---------------------------------- */

/* The definition, summed in double and rounded once: correct to the bound. */
static void plain_gemm(bool ta, bool tb, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
                       float beta, float *c, int ldc) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double s = beta != 0 ? (double)beta * c[i * ldc + j] : 0;
      for (int p = 0; p < k; p++) s += (double)(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = (float)s;
    }
}

/* Naive f32 accumulation in order: the worst a correct kernel does. */
static void f32_gemm(bool ta, bool tb, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
                     float beta, float *c, int ldc) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float s = 0;
      for (int p = 0; p < k; p++) s += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = beta != 0 ? s + beta * c[i * ldc + j] : s;
    }
}

static int calls;

/* Wrong in the last case only (the large one, OpenBLAS's packed path). */
static void off_by_one_element(bool ta, bool tb, int m, int n, int k, const float *a, int lda, const float *b,
                               int ldb, float beta, float *c, int ldc) {
  plain_gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
  if (++calls == 6) c[(m - 1) * ldc + n - 1] += 0.001f;
}

static void one_nan(bool ta, bool tb, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
                    float beta, float *c, int ldc) {
  plain_gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
  c[0] = NAN;
}

/* A kernel that drops the last term of k (an edge-block bug). */
static void short_k(bool ta, bool tb, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
                    float beta, float *c, int ldc) {
  plain_gemm(ta, tb, m, n, k - 1, a, lda, b, ldb, beta, c, ldc);
}

/* Ignores beta (always overwrites). */
static void no_beta(bool ta, bool tb, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
                    float beta, float *c, int ldc) {
  plain_gemm(ta, tb, m, n, k, a, lda, b, ldb, 0.0f, c, ldc);
}

/* Right values, but it writes the padding past column n. */
static void writes_padding(bool ta, bool tb, int m, int n, int k, const float *a, int lda, const float *b, int ldb,
                           float beta, float *c, int ldc) {
  plain_gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
  c[n] = 0.0f;
}

static bool check(ts_kernels_sgemm_fn gemm, double *worst) {
  bool ok = false;
  EXPECT_EQ(ts_kernels_blas_check(gemm, &ok, worst), TS_OK);
  return ok;
}

static void test_check(void) {
  double worst = -1;
  EXPECT(check(plain_gemm, &worst));
  EXPECT(worst >= 0 && worst < 0.1);
  EXPECT(check(f32_gemm, &worst));
  EXPECT(worst <= 1.0);
  calls = 0;
  EXPECT(!check(off_by_one_element, &worst));
  EXPECT(worst > 1.0 && isfinite(worst));
  EXPECT_EQ(calls, 6);
  EXPECT(!check(one_nan, &worst));
  EXPECT(isinf(worst));
  EXPECT(!check(short_k, &worst));
  EXPECT(!check(no_beta, &worst));
  EXPECT(!check(writes_padding, &worst));
  EXPECT(isinf(worst));
  EXPECT(check(plain_gemm, NULL));
}

/* The OpenBLAS this test links, with whatever core type it picked. */
static void test_check_openblas(void) {
  double worst = -1;
  EXPECT(check(ts_kernels_blas_sgemm, &worst));
  EXPECT(worst >= 0 && worst <= 1.0);
  const char *name = ts_kernels_blas_corename();
  EXPECT(name && *name);
  fprintf(stderr, "OpenBLAS runs %s: worst error %.3g of the bound\n", name, worst);
}

/* The kernels cpuid calls for (those tessera run forces) pass the check:
 * main re-executed this program with OPENBLAS_CORETYPE set to them. */
static void test_check_chosen(void) {
  ts_kernels_cpu_t cpu;
  ts_kernels_cpu_detect(&cpu);
  const char *want = ts_kernels_blas_coretype_for(&cpu);
  if (!want) {
    fprintf(stderr, "cpuid calls for no core type; OpenBLAS's own checked in check_openblas\n");
    return;
  }
  EXPECT_STREQ(getenv("OPENBLAS_CORETYPE"), want);
  EXPECT(strcasecmp(ts_kernels_blas_corename(), want) == 0);
  test_check_openblas();
}

static const ts_test_case_t cases[] = {
    {"mapping", test_mapping},         {"chain", test_chain}, {"plan_start", test_plan_start},
    {"plan_fallback", test_plan_fallback_ends}, {"check", test_check}, {"check_openblas", test_check_openblas},
    {"check_chosen", test_check_chosen},
};

int main(int argc, char **argv) {
  /* check_chosen (alone or in the whole run) needs the core type set before
   * OpenBLAS initialises; check_openblas alone keeps OpenBLAS's own. */
  ts_kernels_cpu_t cpu;
  ts_kernels_cpu_detect(&cpu);
  const char *want = ts_kernels_blas_coretype_for(&cpu);
  if ((argc == 1 || strcmp(argv[1], "check_chosen") == 0) && want && !getenv("OPENBLAS_CORETYPE")) {
    setenv("OPENBLAS_CORETYPE", want, 1);
    execv("/proc/self/exe", argv);
    perror("test_blas: execv /proc/self/exe");
    return 1;
  }
  return ts_test_cases("test_blas", argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
