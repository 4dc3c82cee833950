/* The compiled math functions (codegen/math.c) against libm: each is JITed
 * as a loop over f32 and swept over every 61st bit pattern of the 2^32 (all
 * signs, subnormals, both infinities, NaNs) plus the special values; the
 * reference is libm in double precision, which rounds to the nearest f32
 * (correctly rounded but for ties far rarer than this sweep). Error in ULPs
 * of the f32 result (2^-149 for subnormal results); a NaN, infinity or
 * signed zero must match exactly. Prints the table README.md quotes and
 * fails above each function's stated bound. */
#include "ts_codegen.h"
#include "ts_test.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

typedef struct {
  const char *op;
  double (*ref)(double);
  double bound; /* max ULP allowed */
} fn_t;

static double ref_logistic(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_rsqrt(double x) { return 1.0 / sqrt(x); }

static double ulp_of(float y) {
  float a = fabsf(y);
  if (a < 1.17549435e-38f) return ldexp(1.0, -149);
  int e;
  frexpf(a, &e);
  return ldexp(1.0, e - 24);
}

/* The error of got in ULPs of the correctly rounded result; INFINITY for a
 * wrong NaN/infinity/sign of zero. */
static double ulps(float got, double ref) {
  float rf = (float)ref;
  if (isnan(ref)) return isnan(got) ? 0 : INFINITY;
  if (isnan(got)) return INFINITY;
  if (isinf(rf) || isinf(got)) {
    if (got == rf) return 0;
    /* ref just past FLT_MAX rounds to inf; a finite FLT_MAX is 1 ulp off */
    if (isinf(got) && !isinf(rf)) return fabs((double)FLT_MAX - ref) / ulp_of(FLT_MAX) + 1;
    return isinf(rf) && fabsf(got) == FLT_MAX ? 1 : INFINITY;
  }
  if (got == 0 && rf == 0 && signbit(got) != signbit(rf)) return INFINITY;
  return fabs((double)got - ref) / ulp_of(rf);
}

static void sweep(const fn_t *f) {
  char text[256];
  snprintf(text, sizeof text, "HloModule m\nENTRY e {\n p = f32[16] parameter(0)\n ROOT r = f32[16] %s(p)\n}\n", f->op);
  ts_source_t src = {"math.hlo", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_codegen_t *cg = NULL;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_hlo_parse(&src, NULL, &m, &d), TS_OK);
  ts_codegen_opts_t o = {.entry = true};
  ts_status_t st = m ? ts_codegen_compile(m, &o, &cg, NULL, &d) : TS_ERR_INTERNAL;
  if (st != TS_OK) fprintf(stderr, "%s\n", d.text ? d.text : "compile failed");
  EXPECT_EQ(st, TS_OK);
  ts_codegen_loop_fn fn = ts_codegen_entry(cg);
  EXPECT(fn != NULL);
  if (!fn) goto done;
  enum { CHUNK = 1 << 16 };
  float *in = malloc(CHUNK * sizeof *in), *out = malloc(CHUNK * sizeof *out);
  static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f, -1e-45f, 1e-40f,
                                  1.17549435e-38f, 3.40282347e38f, -3.40282347e38f, 1.0f, -1.0f, 88.72283f,
                                  88.7228394f, -87.33654f, -103.9f, -104.0f, 0.625f, -0.625f, 9.0f, 0.5f};
  double worst = 0;
  float worst_x = 0;
  uint64_t n = 0;
  uint32_t bits = 0;
  bool first = true;
  for (;;) {
    int k = 0;
    if (first) {
      for (; k < (int)(sizeof special / sizeof special[0]); k++) in[k] = special[k];
      first = false;
    }
    for (; k < CHUNK && bits <= UINT32_MAX - 61; k++, bits += 61) memcpy(&in[k], &bits, 4);
    if (k == 0) break;
    void *ins[1] = {in};
    fn(ins, out, k);
    for (int i = 0; i < k; i++) {
      double e = ulps(out[i], f->ref((double)in[i]));
      if (e > worst) {
        worst = e;
        worst_x = in[i];
      }
    }
    n += (uint64_t)k;
    if (bits > UINT32_MAX - 61) break;
  }
  printf("%-12s max %.3g ULP over %llu inputs (worst at x = %.9g)\n", f->op, worst, (unsigned long long)n,
         worst_x);
  if (!(worst <= f->bound)) fprintf(stderr, "%s: %.3g ULP exceeds the bound %.3g\n", f->op, worst, f->bound);
  EXPECT(worst <= f->bound);
  free(in);
  free(out);
done:
  ts_diag_free(&d);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
}

static const fn_t fns[] = {
    {"exponential", exp, 1}, {"log", log, 1}, {"tanh", tanh, 2},
    {"logistic", ref_logistic, 3}, {"sqrt", sqrt, 0.5}, {"rsqrt", ref_rsqrt, 1.5},
    {"log-plus-one", log1p, 3}, {"exponential-minus-one", expm1, 3},
};

static void exp_(void) { sweep(&fns[0]); }
static void log_(void) { sweep(&fns[1]); }
static void tanh_(void) { sweep(&fns[2]); }
static void logistic(void) { sweep(&fns[3]); }
static void sqrt_(void) { sweep(&fns[4]); }
static void rsqrt(void) { sweep(&fns[5]); }
static void log1p_(void) { sweep(&fns[6]); }
static void expm1_(void) { sweep(&fns[7]); }

int main(int argc, char **argv) {
  static const ts_test_case_t cases[] = {{"exp", exp_},   {"log", log_},   {"tanh", tanh_},
                                         {"logistic", logistic}, {"sqrt", sqrt_}, {"rsqrt", rsqrt},
                                         {"log1p", log1p_}, {"expm1", expm1_}};
  return ts_test_cases("test_codegen_math", argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
