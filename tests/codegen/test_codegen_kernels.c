/* Every fusion kind (tests/fusion/fusion_cases.h) through codegen/: the
 * fusions it must compile are compiled, and each compiled kernel, called as
 * the runtime calls it, agrees with the interpreter evaluating the same
 * fused computation (over kernels/ and libm) on seeded random and edge-value
 * inputs: exactly for arithmetic, within a few ULPs where the compiled math
 * functions differ from libm, NaN for NaN, infinities and signed zeros
 * equal. s32 fusions (integer arithmetic, compares, converts) bit-exact on
 * every pair of edge values, divisors 0 and -1 and INT_MIN included. */
#include "codegen_internal.h" /* cg_fusion_compiles */
#include "codegen_test.h"
#include "fusion_cases.h"
#include "ts_codegen.h"
#include "ts_fusion.h"
#include "ts_interp.h"
#include "ts_test.h"

#include <math.h>
#include <stdlib.h>

static const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 1e-45f,
                              88.7f, -103.0f, 3.4e38f, -3.4e38f, 0.5f, 2.0f, 1.17549435e-38f, 7.0f, -0.625f, 3.0f};

/* Edge trials give s32 parameter 0 element i the edge i % NS32, parameter 1
 * the edge i / NS32 % NS32: NS32 * NS32 elements hold every pair. */
static const int32_t s32_edges[] = {0, 1, -1, 2, -2, 7, -7, 31, 32, 33, INT32_MIN, INT32_MAX, INT32_MIN + 1, -100};
#define NS32 ((int64_t)(sizeof s32_edges / sizeof s32_edges[0]))

static uint64_t rng(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static bool close(float got, float want) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got)) return got == want;
  if (got == want) return signbit(got) == signbit(want) || got != 0;
  return fabs((double)got - (double)want) <= 16 * ulp_of(want);
}

/* Runs fusion instruction fu's computation in the interpreter (as the entry
 * of its module for the moment) and its compiled kernel on the same args;
 * exact: f32 results must be bit-equal too. */
static void compare(ts_hlo_module_t *m, const ts_hlo_instr_t *fu, ts_kernel_fn fn, uint64_t seed, bool edge, bool exact) {
  ts_hlo_comp_t *fc = fu->called[0], *entry = m->entry;
  int np = fc->nparams;
  ts_value_t *args[64] = {0}, *want = NULL;
  ts_array_t in[64];
  uint64_t s = seed;
  for (int p = 0; p < np; p++) {
    args[p] = ts_value_new(fc->params[p]->shape);
    in[p] = args[p]->a;
    int64_t n = ts_array_count(&in[p]);
    for (int64_t i = 0; i < n; i++) {
      if (in[p].elem == TS_F32)
        ((float *)in[p].data)[i] = edge ? edges[rng(&s) % (sizeof edges / sizeof edges[0])]
                                        : (float)((double)rng(&s) / (1u << 31) * 8.0 - 4.0);
      else if (in[p].elem == TS_S32 && edge)
        ((int32_t *)in[p].data)[i] = s32_edges[p == 0 ? i % NS32 : p == 1 ? i / NS32 % NS32 : (int64_t)(rng(&s) % NS32)];
      else if (in[p].elem == TS_S32) /* a third small (divisors, shift amounts), the rest any 32 bits */
        ((int32_t *)in[p].data)[i] = rng(&s) % 3 == 0 ? (int32_t)(rng(&s) % 81) - 40
                                                      : (int32_t)(uint32_t)(rng(&s) << 1 ^ rng(&s));
      else
        ts_store_i(in[p].elem, in[p].data, i, (int64_t)(rng(&s) % 2));
    }
  }
  entry->is_entry = false;
  fc->is_entry = true;
  m->entry = fc;
  ts_interp_t *it = NULL;
  ts_diag_t d = {0};
  ts_status_t st = ts_interp_create(m, NULL, &it, &d);
  if (st == TS_OK) st = ts_interp_run(it, args, &want, &d);
  if (st != TS_OK) fprintf(stderr, "interp: %s\n", d.text ? d.text : "failed");
  EXPECT_EQ(st, TS_OK);
  m->entry = entry;
  fc->is_entry = false;
  entry->is_entry = true;
  ts_interp_destroy(it);
  ts_diag_free(&d);
  if (st == TS_OK) {
    ts_value_t *got = ts_value_new(fu->shape);
    EXPECT_EQ(fn(NULL, fu, in, np, &got->a, 1), TS_OK);
    int64_t n = ts_array_count(&got->a), bad = 0;
    for (int64_t i = 0; i < n; i++) {
      bool ok;
      if (got->a.elem == TS_F32) {
        float g = ((float *)got->a.data)[i], w = ((float *)want->a.data)[i];
        ok = exact ? memcmp(&g, &w, sizeof g) == 0 : close(g, w);
        if (!ok && bad < 3) fprintf(stderr, "  %s [%lld]: got %.9g want %.9g\n", fu->name, (long long)i, g, w);
      } else {
        ok = ts_load_i(got->a.elem, got->a.data, i) == ts_load_i(want->a.elem, want->a.data, i);
      }
      bad += !ok;
    }
    EXPECT_EQ(bad, 0);
    ts_value_unref(got);
  }
  ts_value_unref(want);
  for (int p = 0; p < np; p++) ts_value_unref(args[p]);
}

/* m's kernels, compiled; a failure is a test failure, its diagnostic printed. */
static ts_codegen_t *compile_module(ts_hlo_module_t *m, ts_codegen_stats_t *cs) {
  ts_codegen_t *cg = NULL;
  ts_diag_t d = {0};
  ts_status_t st = ts_codegen_compile(m, NULL, &cg, cs, &d);
  if (st != TS_OK) fprintf(stderr, "%s\n", d.text ? d.text : "?");
  EXPECT_EQ(st, TS_OK);
  ts_diag_free(&d);
  return cg;
}

static void check_case(const fusion_case_t *fc) {
  fprintf(stderr, "case %s\n", fc->name);
  ts_hlo_module_t *m = parse_text("case.hlo", fc->text);
  if (!m) return;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_fusion_run(m, NULL, NULL, &d), TS_OK);
  ts_codegen_stats_t cs;
  ts_codegen_t *cg = compile_module(m, &cs);
  EXPECT_EQ(cs.fusions, fc->loop + fc->input);
  EXPECT_EQ(cs.compiled, fc->compiled);
  for (int k = 0; k < m->entry->ninstrs; k++) {
    const ts_hlo_instr_t *i = m->entry->instrs[k];
    ts_kernel_fn fn = i->op == TS_OP_FUSION ? ts_codegen_kernel(cg, i) : NULL;
    if (!fn) continue;
    for (int trial = 0; trial < 6; trial++) compare(m, i, fn, 100 + (uint64_t)trial, trial % 2 == 1, false);
  }
  ts_diag_free(&d);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
}

static void all(void) {
  for (int k = 0; k < NFUSION_CASES; k++) check_case(&fusion_cases[k]);
}

/* Fusions the same up to names share one kernel; a different constant or
 * shape gets its own; each kernel still agrees with the interpreter. */
static void distinct(void) {
  static const char text[] =
      "HloModule distinct\n"
      "f1 {\n  p0 = f32[8] parameter(0)\n  c = f32[] constant(2)\n"
      "  b = f32[8] broadcast(c), dimensions={}\n  ROOT m = f32[8] multiply(p0, b)\n}\n"
      "f2 {\n  x = f32[8] parameter(0)\n  k = f32[] constant(2)\n"
      "  bb = f32[8] broadcast(k), dimensions={}\n  ROOT y = f32[8] multiply(x, bb)\n}\n"
      "f3 {\n  x3 = f32[8] parameter(0)\n  k3 = f32[] constant(3)\n"
      "  b3 = f32[8] broadcast(k3), dimensions={}\n  ROOT y3 = f32[8] multiply(x3, b3)\n}\n"
      "f4 {\n  x4 = f32[16] parameter(0)\n  k4 = f32[] constant(2)\n"
      "  b4 = f32[16] broadcast(k4), dimensions={}\n  ROOT y4 = f32[16] multiply(x4, b4)\n}\n"
      "ENTRY e {\n  a = f32[8] parameter(0)\n  q = f32[16] parameter(1)\n"
      "  u = f32[8] fusion(a), kind=kLoop, calls=f1\n  v = f32[8] fusion(u), kind=kLoop, calls=f2\n"
      "  w = f32[8] fusion(v), kind=kLoop, calls=f3\n  z = f32[16] fusion(q), kind=kLoop, calls=f4\n"
      "  ROOT t = (f32[8], f32[16]) tuple(w, z)\n}\n";
  ts_hlo_module_t *m = parse_text("distinct.hlo", text);
  if (!m) return;
  ts_codegen_stats_t cs;
  ts_codegen_t *cg = compile_module(m, &cs);
  EXPECT_EQ(cs.fusions, 4);
  EXPECT_EQ(cs.compiled, 4);
  EXPECT_EQ(cs.kernels, 3);
  const ts_hlo_comp_t *e = m->entry;
  ts_kernel_fn k[4];
  for (int f = 0; f < 4; f++) {
    const ts_hlo_instr_t *fu = ts_hlo_comp_find_instr(e, (const char *[]){"u", "v", "w", "z"}[f]);
    EXPECT(fu != NULL);
    k[f] = fu ? ts_codegen_kernel(cg, fu) : NULL;
    EXPECT(k[f] != NULL);
    for (int trial = 0; fu && k[f] && trial < 2; trial++) compare(m, fu, k[f], 7 + (uint64_t)trial, trial == 1, false);
  }
  EXPECT(k[0] == k[1]);
  EXPECT(k[2] != k[0] && k[3] != k[0] && k[3] != k[2]);
  EXPECT(ts_codegen_kernel(cg, e->root) == NULL);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
}

/* A module whose entry calls fusion computation `body` (its parameters
 * declared by `params`, the entry's by `eparams`, `args` naming them) with
 * a `shape` result: compiled (exactly one kernel), then that kernel against
 * the interpreter, bit-exact, on random and edge inputs. */
static void check_fusion(const char *params, const char *body, const char *shape, const char *eparams,
                         const char *args) {
  char text[4096];
  snprintf(text, sizeof text,
           "HloModule s32\nf {\n%s%s}\nENTRY e {\n%s  ROOT u = %s fusion(%s), kind=kLoop, calls=f\n}\n", params,
           body, eparams, shape, args);
  ts_hlo_module_t *m = parse_text("s32.hlo", text);
  if (!m) return;
  ts_codegen_stats_t cs;
  ts_codegen_t *cg = compile_module(m, &cs);
  EXPECT_EQ(cs.compiled, 1);
  const ts_hlo_instr_t *fu = m->entry->root;
  bool flat;
  EXPECT(cg_fusion_compiles(fu, &flat));
  ts_kernel_fn fn = ts_codegen_kernel(cg, fu);
  if (!fn) fprintf(stderr, "not compiled:\n%s", text);
  EXPECT(fn != NULL);
  for (int trial = 0; fn && trial < 6; trial++) compare(m, fu, fn, 300 + (uint64_t)trial, trial % 2 == 1, true);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
}

#define P2 "  p0 = s32[196] parameter(0)\n  p1 = s32[196] parameter(1)\n"
#define E2 "  a = s32[196] parameter(0)\n  b = s32[196] parameter(1)\n"

/* Each s32 binary and unary op alone, on every pair of edges. */
static void s32_ops(void) {
  static const char *const bin[] = {"add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and",
                                    "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical"};
  static const char *const un[] = {"negate", "abs", "not"};
  char body[256];
  for (size_t k = 0; k < sizeof bin / sizeof bin[0]; k++) {
    fprintf(stderr, "s32 %s\n", bin[k]);
    snprintf(body, sizeof body, "  ROOT r = s32[196] %s(p0, p1)\n", bin[k]);
    check_fusion(P2, body, "s32[196]", E2, "a, b");
  }
  for (size_t k = 0; k < sizeof un / sizeof un[0]; k++) {
    fprintf(stderr, "s32 %s\n", un[k]);
    snprintf(body, sizeof body, "  ROOT r = s32[196] %s(p0)\n", un[k]);
    check_fusion("  p0 = s32[196] parameter(0)\n", body, "s32[196]", "  a = s32[196] parameter(0)\n", "a");
  }
}

/* Compares (no type, SIGNED), select, and the converts between s32, f32
 * and pred: f32 -> s32 of values past +-2^31, infinities and NaN. */
static void s32_compare_convert(void) {
  static const char *const dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  char body[256];
  for (int k = 0; k < 6; k++) {
    fprintf(stderr, "s32 compare %s\n", dirs[k]);
    snprintf(body, sizeof body, "  ROOT r = pred[196] compare(p0, p1), direction=%s%s\n", dirs[k],
             k % 2 ? ", type=SIGNED" : "");
    check_fusion(P2, body, "pred[196]", E2, "a, b");
  }
  fprintf(stderr, "s32 select\n");
  check_fusion(P2, "  c = pred[196] compare(p0, p1), direction=LT\n  ROOT r = s32[196] select(c, p1, p0)\n",
               "s32[196]", E2, "a, b");
  fprintf(stderr, "s32 select of a pred parameter\n");
  check_fusion("  q = pred[196] parameter(0)\n  x = s32[196] parameter(1)\n  y = s32[196] parameter(2)\n",
               "  ROOT r = s32[196] select(q, x, y)\n", "s32[196]",
               "  a = pred[196] parameter(0)\n  b = s32[196] parameter(1)\n  c = s32[196] parameter(2)\n", "a, b, c");
  static const char *const cvt[][3] = {
      /* from, to, the fusion's body over p0 */
      {"s32", "f32", "  ROOT r = f32[196] convert(p0)\n"},
      {"s32", "pred", "  ROOT r = pred[196] convert(p0)\n"},
      {"pred", "s32", "  ROOT r = s32[196] convert(p0)\n"},
      {"f32", "s32", "  k = f32[] constant(6e+08)\n  kb = f32[196] broadcast(k), dimensions={}\n"
                     "  x = f32[196] multiply(p0, kb)\n  ROOT r = s32[196] convert(x)\n"},
      {"f32", "s32", "  ROOT r = s32[196] convert(p0)\n"},
  };
  for (size_t k = 0; k < sizeof cvt / sizeof cvt[0]; k++) {
    char params[64], eparams[64], shape[16];
    fprintf(stderr, "convert %s -> %s\n", cvt[k][0], cvt[k][1]);
    snprintf(params, sizeof params, "  p0 = %s[196] parameter(0)\n", cvt[k][0]);
    snprintf(eparams, sizeof eparams, "  a = %s[196] parameter(0)\n", cvt[k][0]);
    snprintf(shape, sizeof shape, "%s[196]", cvt[k][1]);
    check_fusion(params, cvt[k][2], shape, eparams, "a");
  }
}

/* s32 through the ops that move elements (nested loops): a broadcast
 * constant, transpose, slices, concatenate, reshape, iota. */
static void s32_layout(void) {
  check_fusion("  p0 = s32[4,8] parameter(0)\n",
               "  c = s32[] constant(-7)\n  bc = s32[4,8] broadcast(c), dimensions={}\n"
               "  m = s32[4,8] multiply(p0, bc)\n  t = s32[8,4] transpose(m), dimensions={1,0}\n"
               "  s1 = s32[8,2] slice(t), slice={[0:8], [1:3]}\n  s2 = s32[8,2] slice(t), slice={[0:8], [2:4]}\n"
               "  cc = s32[8,4] concatenate(s1, s2), dimensions={1}\n  r = s32[32] reshape(cc)\n"
               "  i = s32[32] iota(), iota_dimension=0\n  ROOT o = s32[32] add(r, i)\n",
               "s32[32]", "  a = s32[4,8] parameter(0)\n", "a");
  /* p0 broadcast along a new minor dimension, minus INT_MAX */
  check_fusion("  p0 = s32[8] parameter(0)\n",
               "  b = s32[8,5] broadcast(p0), dimensions={0}\n  c = s32[] constant(2147483647)\n"
               "  bc = s32[8,5] broadcast(c), dimensions={}\n  ROOT o = s32[8,5] subtract(b, bc)\n",
               "s32[8,5]", "  a = s32[8] parameter(0)\n", "a");
}

/* The MLP example's labels (examples/gen_mlp_train.py): (i*7 + j*13 + i*j*3)
 * % 17 - 8 over iotas, converted and scaled. The fusion pass makes it one
 * fusion, which now compiles and matches the interpreter bit for bit, and
 * values computed here. */
static void label(void) {
  static const char text[] =
      "HloModule labels\nENTRY e {\n"
      "  i = s32[256,16] iota(), iota_dimension=0\n  j = s32[256,16] iota(), iota_dimension=1\n"
      "  c7 = s32[] constant(7)\n  b7 = s32[256,16] broadcast(c7), dimensions={}\n"
      "  m1 = s32[256,16] multiply(i, b7)\n"
      "  c13 = s32[] constant(13)\n  b13 = s32[256,16] broadcast(c13), dimensions={}\n"
      "  m2 = s32[256,16] multiply(j, b13)\n  a1 = s32[256,16] add(m1, m2)\n"
      "  ij = s32[256,16] multiply(i, j)\n  c3 = s32[] constant(3)\n  b3 = s32[256,16] broadcast(c3), dimensions={}\n"
      "  m3 = s32[256,16] multiply(ij, b3)\n  a2 = s32[256,16] add(a1, m3)\n"
      "  c17 = s32[] constant(17)\n  b17 = s32[256,16] broadcast(c17), dimensions={}\n"
      "  r = s32[256,16] remainder(a2, b17)\n"
      "  c8 = s32[] constant(8)\n  b8 = s32[256,16] broadcast(c8), dimensions={}\n"
      "  s = s32[256,16] subtract(r, b8)\n  f = f32[256,16] convert(s)\n"
      "  h = f32[] constant(0.125)\n  bh = f32[256,16] broadcast(h), dimensions={}\n"
      "  ROOT y = f32[256,16] multiply(f, bh)\n}\n";
  ts_hlo_module_t *m = parse_text("labels.hlo", text);
  if (!m) return;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_fusion_run(m, NULL, NULL, &d), TS_OK);
  const ts_hlo_instr_t *fu = NULL;
  int nfusions = 0;
  for (int k = 0; k < m->entry->ninstrs; k++)
    if (m->entry->instrs[k]->op == TS_OP_FUSION) {
      fu = m->entry->instrs[k];
      nfusions++;
    }
  EXPECT_EQ(nfusions, 1);
  bool flat;
  EXPECT(fu && cg_fusion_compiles(fu, &flat));
  ts_codegen_stats_t cs;
  ts_codegen_t *cg = compile_module(m, &cs);
  EXPECT_EQ(cs.compiled, 1);
  ts_kernel_fn fn = fu ? ts_codegen_kernel(cg, fu) : NULL;
  EXPECT(fn != NULL);
  if (fn) {
    compare(m, fu, fn, 1, false, true);
    ts_value_t *got = ts_value_new(fu->shape);
    EXPECT_EQ(fn(NULL, fu, NULL, 0, &got->a, 1), TS_OK);
    int bad = 0;
    for (int i = 0; i < 256; i++)
      for (int j = 0; j < 16; j++)
        bad += ((float *)got->a.data)[i * 16 + j] != (float)((i * 7 + j * 13 + i * j * 3) % 17 - 8) * 0.125f;
    EXPECT_EQ(bad, 0);
    ts_value_unref(got);
  }
  ts_diag_free(&d);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
}

int main(int argc, char **argv) {
  static const ts_test_case_t cases[] = {{"all", all},
                                         {"distinct", distinct},
                                         {"s32_ops", s32_ops},
                                         {"s32_compare_convert", s32_compare_convert},
                                         {"s32_layout", s32_layout},
                                         {"label", label}};
  int rc = ts_test_cases("test_codegen_kernels", argc, argv, cases, 6);
  ts_interp_release_buffers();
  return rc;
}
