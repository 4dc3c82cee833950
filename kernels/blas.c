/* OpenBLAS's kernels for this CPU: cpuid features to a core type, the
 * re-execution plan, and the start-up check of sgemm (ts_kernels_blas.h). */
#include "ts_kernels_blas.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* ---- the CPU ------------------------------------------------------------ */

void ts_kernels_cpu_detect(ts_kernels_cpu_t *cpu) {
  memset(cpu, 0, sizeof *cpu);
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  bool osxsave = c & (1u << 27);
  cpu->avx = c & (1u << 28);
  cpu->fma = c & (1u << 12);
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    cpu->avx2 = b & (1u << 5);
    cpu->avx512f = b & (1u << 16);
    cpu->avx512dq = b & (1u << 17);
    cpu->avx512bw = b & (1u << 30);
    cpu->avx512vl = b & (1u << 31);
  }
  if (osxsave) {
    /* XGETBV is only defined when the OS has set CR4.OSXSAVE. */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    cpu->os_ymm = (lo & 0x6) == 0x6;
    cpu->os_zmm = (lo & 0xe6) == 0xe6;
  }
#endif
}

const char *ts_kernels_blas_coretype_for(const ts_kernels_cpu_t *cpu) {
  if (cpu->avx512f && cpu->avx512bw && cpu->avx512dq && cpu->avx512vl && cpu->avx2 && cpu->fma && cpu->os_zmm)
    return "SkylakeX";
  if (cpu->avx2 && cpu->fma && cpu->avx && cpu->os_ymm) return "Haswell";
  if (cpu->avx && cpu->os_ymm) return "Sandybridge";
  return NULL;
}

/* Safest last. */
static const char *const chain[] = {"SkylakeX", "Haswell", "Sandybridge"};
enum { CHAIN_LEN = sizeof chain / sizeof chain[0] };

static int chain_index(const char *coretype) {
  for (int i = 0; coretype && i < CHAIN_LEN; i++)
    if (strcasecmp(coretype, chain[i]) == 0) return i;
  return -1;
}

const char *ts_kernels_blas_coretype_safer(const char *coretype) {
  int i = chain_index(coretype);
  return i >= 0 && i + 1 < CHAIN_LEN ? chain[i + 1] : NULL;
}

/* ---- the plan ----------------------------------------------------------- */

static const char *nonempty(const char *s) { return s && *s ? s : NULL; }

ts_kernels_blas_source_t ts_kernels_blas_source(const ts_kernels_blas_env_t *env) {
  const char *core = nonempty(env->coretype), *chosen = nonempty(env->chosen);
  if (core) return chosen && strcasecmp(core, chosen) == 0 ? TS_BLAS_FROM_TESSERA : TS_BLAS_FROM_USER;
  return chosen && strcasecmp(chosen, "none") == 0 ? TS_BLAS_FROM_TESSERA : TS_BLAS_FROM_LIBRARY;
}

/* How wide the kernels of a core type are: 3 AVX-512, 2 AVX2, 1 AVX, 0
 * anything older or unknown (OpenBLAS's own names for the same widths
 * included, so that a model the library knows is left alone). */
static int tier(const char *coretype) {
  static const struct {
    const char *name;
    int tier;
  } tiers[] = {{"SkylakeX", 3}, {"Cooperlake", 3}, {"SapphireRapids", 3}, {"Haswell", 2},
               {"Zen", 2},      {"Sandybridge", 1}};
  for (size_t i = 0; coretype && i < sizeof tiers / sizeof tiers[0]; i++)
    if (strcasecmp(coretype, tiers[i].name) == 0) return tiers[i].tier;
  return 0;
}

bool ts_kernels_blas_plan_start(const ts_kernels_blas_env_t *env, const char *detected, const char *running,
                                ts_kernels_blas_env_t *next) {
  if (ts_kernels_blas_source(env) != TS_BLAS_FROM_LIBRARY) return false;
  /* A known name in TESSERA_BLAS_CORETYPE (with OPENBLAS_CORETYPE unset) is
   * a request; anything else there is ignored. */
  const char *want = chain_index(env->chosen) >= 0 ? env->chosen : nonempty(detected);
  if (!want) return false;
  if (want != env->chosen && tier(running) >= tier(want)) return false; /* OpenBLAS knows this CPU */
  *next = (ts_kernels_blas_env_t){want, want};
  return true;
}

bool ts_kernels_blas_plan_fallback(const ts_kernels_blas_env_t *env, const char *running,
                                   ts_kernels_blas_env_t *next) {
  ts_kernels_blas_source_t source = ts_kernels_blas_source(env);
  if (source == TS_BLAS_FROM_LIBRARY) {
    /* OpenBLAS's own pick failed: the chain below its width. */
    int t = tier(running);
    if (t < 2) return false;
    const char *safer = chain[CHAIN_LEN - t + 1];
    *next = (ts_kernels_blas_env_t){safer, safer};
    return true;
  }
  if (source != TS_BLAS_FROM_TESSERA || !nonempty(env->coretype)) return false;
  const char *safer = ts_kernels_blas_coretype_safer(env->coretype);
  *next = (ts_kernels_blas_env_t){safer, safer ? safer : "none"};
  return true;
}

/* ---- the start-up check ------------------------------------------------- */

void ts_kernels_blas_sgemm(bool trans_a, bool trans_b, int m, int n, int k, const float *a, int lda,
                           const float *b, int ldb, float beta, float *c, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k,
              1.0f, a, lda, b, ldb, beta, c, ldc);
}

typedef struct {
  bool ta, tb;
  int m, n, k;
  float beta;
} gemm_case_t;

/* Odd sizes so no kernel's block divides them; the last is above OpenBLAS's
 * small-matrix threshold (M*N*K around 1e6 for the AVX-512 kernels), so it
 * takes the packed path that the runtime's large dots take. */
static const gemm_case_t cases[] = {
    {false, false, 37, 29, 67, 0.0f}, {true, false, 29, 41, 37, 1.0f},  {false, true, 53, 19, 31, 0.0f},
    {true, true, 17, 45, 59, 1.0f},   {false, false, 1, 33, 17, 0.0f},  {false, false, 157, 131, 83, 1.0f},
};

static uint64_t next_random(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

/* Uniform in [-1, 1), exactly representable. */
static float random_unit(uint64_t *s) { return (float)((int32_t)(next_random(s) >> 40) - (1 << 23)) / (1 << 23); }

static double check_case(ts_kernels_sgemm_fn gemm, const gemm_case_t *g, float *a, float *b, float *c, float *c0,
                         uint64_t *seed) {
  /* Stored shapes, padded by 3 so leading dimensions are not the widths. */
  int ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
  int br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
  int lda = ac + 3, ldb = bc + 3, ldc = g->n + 3;
  for (int i = 0; i < ar * lda; i++) a[i] = random_unit(seed);
  for (int i = 0; i < br * ldb; i++) b[i] = random_unit(seed);
  for (int i = 0; i < g->m * ldc; i++) c[i] = c0[i] = random_unit(seed);
  gemm(g->ta, g->tb, g->m, g->n, g->k, a, lda, b, ldb, g->beta, c, ldc);
  double worst = 0;
  for (int i = 0; i < g->m; i++)
    for (int j = 0; j < g->n; j++) {
      double sum = 0, mag = 0;
      for (int p = 0; p < g->k; p++) {
        double x = g->ta ? a[p * lda + i] : a[i * lda + p];
        double y = g->tb ? b[j * ldb + p] : b[p * ldb + j];
        sum += x * y;
        mag += fabs(x * y);
      }
      double bc0 = (double)g->beta * c0[i * ldc + j];
      sum += bc0;
      mag += fabs(bc0);
      double bound = (g->k + 2) * (double)FLT_EPSILON * mag + FLT_MIN;
      double err = fabs((double)c[i * ldc + j] - sum) / bound;
      if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
    }
  /* The padding between rows is not gemm's to write. */
  for (int i = 0; i < g->m; i++)
    for (int j = g->n; j < ldc; j++)
      if (memcmp(&c[i * ldc + j], &c0[i * ldc + j], sizeof *c) != 0) worst = INFINITY;
  return worst;
}

ts_status_t ts_kernels_blas_check(ts_kernels_sgemm_fn gemm, bool *ok, double *worst) {
  size_t cap = 0; /* the largest stored matrix of any case, as check_case pads them */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const gemm_case_t *g = &cases[i];
    size_t sizes[] = {(size_t)(g->m + 3) * (size_t)(g->k + 3), (size_t)(g->k + 3) * (size_t)(g->n + 3),
                      (size_t)g->m * (size_t)(g->n + 3)};
    for (int s = 0; s < 3; s++) cap = sizes[s] > cap ? sizes[s] : cap;
  }
  float *a = ts_malloc(cap * sizeof *a), *b = ts_malloc(cap * sizeof *b);
  float *c = ts_malloc(cap * sizeof *c), *c0 = ts_malloc(cap * sizeof *c0);
  ts_status_t st = TS_OK;
  if (!a || !b || !c || !c0) {
    st = TS_ERR_NOMEM;
    goto done;
  }
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  double w = 0;
  /* One thread: ranks that start together on a host would otherwise each
   * run all the cores' worth; the kernels under test are the same. */
  int threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double e = check_case(gemm, &cases[i], a, b, c, c0, &seed);
    if (!(e <= w)) w = e;
  }
  openblas_set_num_threads(threads);
  *ok = w <= 1.0;
  if (worst) *worst = w;
done:
  ts_free(c0);
  ts_free(c);
  ts_free(b);
  ts_free(a);
  return st;
}

const char *ts_kernels_blas_corename(void) {
  const char *name = openblas_get_corename();
  return name ? name : "unknown";
}
