/* Every fusion kind (tests/fusion/fusion_cases.h) through codegen/: the
 * fusions it must compile are compiled, and each compiled kernel, called as
 * the runtime calls it, agrees with the interpreter evaluating the same
 * fused computation (over kernels/ and libm) on seeded random and edge-value
 * inputs: exactly for arithmetic, within a few ULPs where the compiled math
 * functions differ from libm, NaN for NaN, infinities and signed zeros
 * equal. s32 fusions (integer arithmetic, compares, converts) bit-exact on
 * every pair of edge values, divisors 0 and -1 and INT_MIN included. bf16
 * and f16 fusions (half_*) bit-exact: each op, chains, converts of every
 * 16-bit value and of f32 and s32 rounding patterns, index maps, mixed
 * types, reduces, and the math functions on every input. */
#include "codegen_internal.h" /* cg_fusion_compiles */
#include "codegen_test.h"
#include "fusion_cases.h"
#include "ts_codegen.h"
#include "ts_fusion.h"
#include "ts_interp.h"
#include "ts_test.h"

#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
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

/* bf16 and f16 edge values (bits), NH of each, given to parameters 0 and 1
 * in every pair as s32_edges are: zeros, ones, infinities, quiet NaNs of
 * either sign and NaNs with payloads (signaling ones among them; moved and
 * selected elements keep their bits), the least and greatest subnormals,
 * the least normal and greatest finite values, and addends that make ties:
 * bf16 1 + 2^-8 and 1.0078125 + 2^-8, f16 1 + 2^-11, 65504 + 16 (rounds
 * to inf) and 3 * 2^-24 * 0.5 (a subnormal halfway). */
static const uint16_t bf16_edges[] = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0, 0xffc0,
                                      0x7f81, 0xffa5, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f,
                                      0x3f81, 0x3b80, 0x3c00, 0x3f00, 0x4000, 0x4040, 0xc0a0, 0x0003};
static const uint16_t f16_edges[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0xfe00,
                                     0x7d01, 0xfd55, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff,
                                     0x3c01, 0x1000, 0x1400, 0x3800, 0x4000, 0x4c00, 0xc500, 0x0003};
#define NH ((int64_t)(sizeof bf16_edges / sizeof bf16_edges[0]))

static bool is_half(ts_elem_t e) { return e == TS_BF16 || e == TS_F16; }

/* bf16 or f16 bits h as f32 (for NaN tests and messages). */
static float half_value(ts_elem_t e, uint16_t h) {
  float f;
  ts_elem_convert(e, &h, TS_F32, &f, 1);
  return f;
}

/* Inputs that sweep conversions instead of random and edge values:
 * all16: a bf16 or f16 parameter's element i is the bit pattern i % 65536
 * (every value, NaNs and subnormals included); patterns: an f32
 * parameter's element i has sign and exponent i % 512 (all, subnormals,
 * infinities and NaNs among them) and mantissa f32_mantissas[i / 512] (the
 * ties and near-ties of rounding to bf16 and f16, their odd and even
 * cases) or, past that list, random bits; an s32 one's elements are
 * s32_patterns, then random. */
static bool all16, patterns;
static const uint32_t f32_mantissas[] = {
    0x000000, 0x000001, 0x7fffff, 0x400000, 0x400001, 0x200000, 0x600000, 0x100000, 0x300000, 0x080000,
    0x008000, 0x007fff, 0x008001, 0x018000, 0x017fff, 0x018001, 0x7f8000, 0x7f7fff, 0x7fc000, 0x3f8000,
    0x001000, 0x000fff, 0x001001, 0x003000, 0x002fff, 0x003001, 0x7fe000, 0x7ff000, 0x7fefff, 0x7ff001,
    0x000800, 0x001800, 0x002000, 0x004000, 0x00c000, 0x010000, 0x020000, 0x040000, 0x7f0000, 0x7e0000};
static const int32_t s32_patterns[] = {
    0, 1, -1, 2, 3, 255, 256, 257, 511, 65504, 65519, 65520, 65535, 65536, -65520, -65519, 2047, 2048, 2049,
    4097, 4098, 4099, 4101, 16777216, 16777217, 16777218, 16842752, 16842753, 16842751, 16908288, 16908289,
    -16842753, -16908289, 33685505, 33685504, 33816576, INT32_MIN, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1,
    2139095040, 2139095041, 2147450880, 2147450881, 2147418112, 2147418111, -2147450881, 1073807360, 1073807361};
#define NF32M ((int64_t)(sizeof f32_mantissas / sizeof f32_mantissas[0]))
#define NS32P ((int64_t)(sizeof s32_patterns / sizeof s32_patterns[0]))

static bool close(float got, float want) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got)) return got == want;
  if (got == want) return signbit(got) == signbit(want) || got != 0;
  return fabs((double)got - (double)want) <= 16 * ulp_of(want);
}

/* Computation fc of m on args in the interpreter (as the entry of its
 * module for the moment): *want, TS_OK, or the failure printed. */
static ts_status_t interp_run(ts_hlo_module_t *m, ts_hlo_comp_t *fc, ts_value_t **args, ts_value_t **want) {
  ts_hlo_comp_t *entry = m->entry;
  entry->is_entry = false;
  fc->is_entry = true;
  m->entry = fc;
  ts_interp_t *it = NULL;
  ts_diag_t d = {0};
  ts_status_t st = ts_interp_create(m, NULL, &it, &d);
  if (st == TS_OK) st = ts_interp_run(it, args, want, &d);
  if (st != TS_OK) fprintf(stderr, "interp: %s\n", d.text ? d.text : "failed");
  m->entry = entry;
  fc->is_entry = false;
  entry->is_entry = true;
  ts_interp_destroy(it);
  ts_diag_free(&d);
  return st;
}

static bool nan_bits; /* compare_pool's exact compares NaNs' bits too */

/* Runs fusion instruction fu's computation in the interpreter and its
 * compiled kernel on the same args: f32 parameters seeded random in [-4, 4)
 * or, with a pool, random picks from pool[0..npool); exact: f32 results
 * must be bit-equal too. */
static void compare_pool(ts_hlo_module_t *m, const ts_hlo_instr_t *fu, ts_kernel_fn fn, uint64_t seed,
                         const float *pool, size_t npool, bool exact) {
  ts_hlo_comp_t *fc = fu->called[0];
  int np = fc->nparams;
  bool edge = pool != NULL;
  ts_value_t *args[64] = {0}, *want = NULL;
  ts_array_t in[64];
  uint64_t s = seed;
  for (int p = 0; p < np; p++) {
    args[p] = ts_value_new(fc->params[p]->shape);
    in[p] = args[p]->a;
    int64_t n = ts_array_count(&in[p]);
    for (int64_t i = 0; i < n; i++) {
      ts_elem_t e = in[p].elem;
      if (e == TS_F32 && patterns) {
        uint32_t m = i / 512 < NF32M ? f32_mantissas[i / 512] : (uint32_t)(rng(&s) << 1 ^ rng(&s)) & 0x7fffff;
        uint32_t u = (uint32_t)(i % 512) << 23 | m;
        memcpy((float *)in[p].data + i, &u, 4);
      } else if (e == TS_S32 && patterns) {
        ((int32_t *)in[p].data)[i] = i < NS32P ? s32_patterns[i] : (int32_t)(uint32_t)(rng(&s) << 1 ^ rng(&s));
      } else if (is_half(e) && all16) {
        ((uint16_t *)in[p].data)[i] = (uint16_t)i;
      } else if (is_half(e) && edge) { /* every pair of parameters 0 and 1, the rest random picks */
        const uint16_t *hp = e == TS_BF16 ? bf16_edges : f16_edges;
        ((uint16_t *)in[p].data)[i] = hp[p == 0 ? i % NH : p == 1 ? i / NH % NH : (int64_t)(rng(&s) % NH)];
      } else if (is_half(e)) { /* any bits a quarter of the time, else [-4, 4) rounded */
        float f = (float)((double)rng(&s) / (1u << 31) * 8.0 - 4.0);
        uint16_t h = (uint16_t)rng(&s);
        if (rng(&s) % 4) ts_elem_convert(TS_F32, &f, e, &h, 1);
        ((uint16_t *)in[p].data)[i] = h;
      } else if (e == TS_F32)
        ((float *)in[p].data)[i] = edge ? pool[rng(&s) % npool] : (float)((double)rng(&s) / (1u << 31) * 8.0 - 4.0);
      else if (in[p].elem == TS_S32 && edge)
        ((int32_t *)in[p].data)[i] = s32_edges[p == 0 ? i % NS32 : p == 1 ? i / NS32 % NS32 : (int64_t)(rng(&s) % NS32)];
      else if (in[p].elem == TS_S32) /* a third small (divisors, shift amounts), the rest any 32 bits */
        ((int32_t *)in[p].data)[i] = rng(&s) % 3 == 0 ? (int32_t)(rng(&s) % 81) - 40
                                                      : (int32_t)(uint32_t)(rng(&s) << 1 ^ rng(&s));
      else
        ts_store_i(in[p].elem, in[p].data, i, (int64_t)(rng(&s) % 2));
    }
  }
  ts_status_t st = interp_run(m, fc, args, &want);
  EXPECT_EQ(st, TS_OK);
  if (st == TS_OK) {
    ts_value_t *got = ts_value_new(fu->shape);
    EXPECT_EQ(fn(NULL, fu, in, np, &got->a, 1), TS_OK);
    int64_t n = ts_array_count(&got->a), bad = 0;
    for (int64_t i = 0; i < n; i++) {
      bool ok;
      if (got->a.elem == TS_F32) {
        float g = ((float *)got->a.data)[i], w = ((float *)want->a.data)[i];
        /* LLVM leaves a NaN's sign and payload open (an fadd of two NaNs
         * may return either), so NaN matches NaN; nan_bits: a maximum or
         * minimum, which picks one of its operands, as its bits */
        ok = exact ? memcmp(&g, &w, sizeof g) == 0 || (!nan_bits && isnan(g) && isnan(w)) : close(g, w);
        if (!ok && bad < 3) fprintf(stderr, "  %s [%lld]: got %.9g want %.9g\n", fu->name, (long long)i, g, w);
      } else if (is_half(got->a.elem)) { /* bit for bit, even for math functions (half_math) */
        ts_elem_t e = got->a.elem;
        uint16_t g = ((uint16_t *)got->a.data)[i], w = ((uint16_t *)want->a.data)[i];
        ok = g == w || (!nan_bits && isnan(half_value(e, g)) && isnan(half_value(e, w)));
        if (!ok && bad < 3)
          fprintf(stderr, "  %s [%lld]: got %#06x (%.9g) want %#06x (%.9g)\n", fu->name, (long long)i, g,
                  half_value(e, g), w, half_value(e, w));
      } else {
        int64_t g = ts_load_i(got->a.elem, got->a.data, i), w = ts_load_i(want->a.elem, want->a.data, i);
        ok = g == w;
        if (!ok && bad < 3)
          fprintf(stderr, "  %s [%lld]: got %lld want %lld\n", fu->name, (long long)i, (long long)g, (long long)w);
      }
      bad += !ok;
    }
    EXPECT_EQ(bad, 0);
    ts_value_unref(got);
  }
  ts_value_unref(want);
  for (int p = 0; p < np; p++) ts_value_unref(args[p]);
}

static void compare(ts_hlo_module_t *m, const ts_hlo_instr_t *fu, ts_kernel_fn fn, uint64_t seed, bool edge,
                    bool exact) {
  compare_pool(m, fu, fn, seed, edge ? edges : NULL, sizeof edges / sizeof edges[0], exact);
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

/* Parses text, whose entry root is a fusion, and compiles it: exactly one
 * kernel, the root's (*fn, NULL when it did not compile). *m is NULL when
 * the text does not parse (nothing to free then). */
static ts_codegen_t *compile_root_fusion(const char *name, const char *text, ts_hlo_module_t **m, ts_kernel_fn *fn) {
  *fn = NULL;
  if (!(*m = parse_text(name, text))) return NULL;
  ts_codegen_stats_t cs;
  ts_codegen_t *cg = compile_module(*m, &cs);
  EXPECT_EQ(cs.compiled, 1);
  bool flat;
  EXPECT(cg_fusion_compiles((*m)->entry->root, &flat));
  *fn = ts_codegen_kernel(cg, (*m)->entry->root);
  if (!*fn) fprintf(stderr, "not compiled:\n%s", text);
  EXPECT(*fn != NULL);
  return cg;
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
  ts_hlo_module_t *m;
  ts_kernel_fn fn;
  ts_codegen_t *cg = compile_root_fusion("s32.hlo", text, &m, &fn);
  if (!m) return;
  const ts_hlo_instr_t *fu = m->entry->root;
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

/* ---- input fusions whose root is a reduce ----------------------------------
 * Each compiled kernel must equal kernels/'s reduce bit for bit (the same
 * chain of operations per output, k_reduce.c's order); the same module's
 * PTX must build too (the GPU kernels reduce one output per thread). */

#define SUM_F32 "sum {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n  ROOT a = f32[] add(p, q)\n}\n"

/* A scalar region `name`: ROOT = op(p, q) over `ty`. */
static void region(char *buf, size_t n, const char *name, const char *ty, const char *op) {
  snprintf(buf, n,
           "%s {\n  p.%s = %s[] parameter(0)\n  q.%s = %s[] parameter(1)\n"
           "  ROOT r.%s = %s[] %s(p.%s, q.%s)\n}\n",
           name, name, ty, name, ty, name, ty, op, name, name);
}

/* m's fusions as PTX: as many kernels as the CPU compiled, or no NVPTX target. */
static void ptx_builds(const ts_hlo_module_t *m, int compiled) {
  ts_codegen_ptx_t *p = NULL;
  ts_diag_t d = {0};
  ts_status_t st = ts_codegen_ptx(m, &p, NULL, &d);
  if (st != TS_ERR_UNSUPPORTED) {
    if (st != TS_OK) fprintf(stderr, "ptx: %s\n", d.text ? d.text : "?");
    EXPECT_EQ(st, TS_OK);
    EXPECT(p && p->n == compiled);
  }
  ts_codegen_ptx_destroy(p);
  ts_diag_free(&d);
}

/* The GPU kernels' form of a fusion (cg_emit_loop: outputs first, first +
 * step, ... each computed alone; nvptx.c's grid-stride loop), JIT-compiled
 * for the CPU here, since no GPU runs these tests: `void f(i8 **in, i8
 * *out, i64 first, i64 step, i64 n)`. */
typedef void (*strided_fn)(void *const *in, void *out, int64_t first, int64_t step, int64_t n);
static LLVMOrcLLJITRef strided_jit;
static strided_fn strided;

static strided_fn strided_compile(const ts_hlo_instr_t *fu) {
  static int nmod;
  if (!strided_jit) {
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMErrorRef e = LLVMOrcCreateLLJIT(&strided_jit, NULL);
    if (e) {
      LLVMConsumeError(e);
      strided_jit = NULL;
      return NULL;
    }
  }
  const ts_hlo_comp_t *c = fu->called[0];
  bool flat;
  if (!cg_fusion_compiles(fu, &flat)) return NULL;
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  cg_t g = {0};
  cg_types(&g, LLVMOrcThreadSafeContextGetContext(tsc));
  char name[32];
  snprintf(name, sizeof name, "strided%d", nmod++);
  g.mod = LLVMModuleCreateWithNameInContext(name, g.cx);
  g.b = LLVMCreateBuilderInContext(g.cx);
  LLVMTypeRef args[5] = {g.i8pp, g.i8p, g.i64, g.i64, g.i64};
  LLVMValueRef fn = LLVMAddFunction(g.mod, name, LLVMFunctionType(LLVMVoidTypeInContext(g.cx), args, 5, 0));
  LLVMPositionBuilderAtEnd(g.b, LLVMAppendBasicBlockInContext(g.cx, fn, "entry"));
  LLVMValueRef inp[MAX_IN];
  for (int p = 0; p < c->nparams; p++) {
    LLVMValueRef at = LLVMConstInt(g.i64, (unsigned long long)p, 0);
    LLVMValueRef slot = LLVMBuildGEP2(g.b, g.i8p, LLVMGetParam(fn, 0), &at, 1, "");
    inp[p] = cg_data(&g, c->params[p]->shape->elem, LLVMBuildLoad2(g.b, g.i8p, slot, ""));
  }
  bool ok = cg_emit_loop(&g, c, flat, inp, LLVMGetParam(fn, 1), LLVMGetParam(fn, 2), LLVMGetParam(fn, 3),
                         LLVMGetParam(fn, 4));
  LLVMDisposeBuilder(g.b);
  EXPECT(ok);
  LLVMOrcExecutorAddress addr = 0;
  LLVMErrorRef e = LLVMOrcLLJITAddLLVMIRModule(strided_jit, LLVMOrcLLJITGetMainJITDylib(strided_jit),
                                               LLVMOrcCreateNewThreadSafeModule(g.mod, tsc));
  if (!e) e = LLVMOrcLLJITLookup(strided_jit, &addr, name);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    fprintf(stderr, "strided JIT: %s\n", msg);
    LLVMDisposeErrorMessage(msg);
    addr = 0;
  }
  LLVMOrcDisposeThreadSafeContext(tsc);
  return (strided_fn)(uintptr_t)addr;
}

/* `strided` as a ts_kernel_fn: three interleaved "threads" (first 2, 0,
 * 1, step 3), so that every output is computed by itself. */
static ts_status_t strided_kernel(ts_kernel_ctx_t *ctx, const ts_hlo_instr_t *instr, const ts_array_t *in, int nin,
                                  ts_array_t *out, int nout) {
  (void)ctx, (void)instr, (void)nout;
  void *ptrs[64];
  for (int p = 0; p < nin; p++) ptrs[p] = in[p].data;
  for (int64_t t = 2; t >= 0; t--) strided(ptrs, out[0].data, t, 3, ts_array_count(&out[0]));
  return TS_OK;
}

/* A module of the regions `regions` and an entry calling input fusion f
 * (parameters `params`, then `body` ending in its ROOT reduce) with a
 * `shape` result (the entry's parameters `eparams`, named by `args`): f
 * compiles, and agrees with the interpreter bit for bit on random inputs
 * and on picks from pool[0..npool) (NULL: the edge values). */
static void check_reduce(const char *regions, const char *params, const char *body, const char *shape,
                         const char *eparams, const char *args, const float *pool, size_t npool) {
  char text[8192];
  snprintf(text, sizeof text,
           "HloModule reduce\n%sf {\n%s%s}\nENTRY e {\n%s  ROOT u = %s fusion(%s), kind=kInput, calls=f\n}\n", regions,
           params, body, eparams, shape, args);
  ts_hlo_module_t *m;
  ts_kernel_fn fn;
  ts_codegen_t *cg = compile_root_fusion("reduce.hlo", text, &m, &fn);
  if (!m) return;
  const ts_hlo_instr_t *fu = m->entry->root;
  if (!pool) pool = edges, npool = sizeof edges / sizeof edges[0];
  for (int trial = 0; fn && trial < 4; trial++)
    compare_pool(m, fu, fn, 500 + (uint64_t)trial, trial % 2 ? pool : NULL, npool, true);
  strided = strided_compile(fu);
  EXPECT(strided != NULL);
  for (int trial = 0; strided && trial < 2; trial++)
    compare_pool(m, fu, strided_kernel, 600 + (uint64_t)trial, trial % 2 ? pool : NULL, npool, true);
  ptx_builds(m, 1);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
}

/* One parameter p0 = `ty`[dims] reduced over `rdims` by `op` from init
 * `init` (a constant's text) to `ty`[odims]. */
static void check_reduce1(const char *ty, const char *dims, const char *rdims, const char *odims, const char *op,
                          const char *init, const float *pool, size_t npool) {
  char reg[256], params[128], body[512], shape[64], eparams[128];
  fprintf(stderr, "reduce %s[%s] dimensions={%s} by %s from %s\n", ty, dims, rdims, op, init);
  region(reg, sizeof reg, "red", ty, op);
  snprintf(params, sizeof params, "  p0 = %s[%s] parameter(0)\n", ty, dims);
  snprintf(body, sizeof body,
           "  c = %s[] constant(%s)\n  ROOT r = %s[%s] reduce(p0, c), dimensions={%s}, to_apply=red\n", ty, init, ty,
           odims, rdims);
  snprintf(shape, sizeof shape, "%s[%s]", ty, odims);
  snprintf(eparams, sizeof eparams, "  a = %s[%s] parameter(0)\n", ty, dims);
  check_reduce(reg, params, body, shape, eparams, "a", pool, npool);
}

/* A row sum of exp (the MLP's softmax denominator, fused_computation.10):
 * against the interpreter within the compiled exp's few ULPs, and bit for
 * bit against the interpreter's reduce of the compiled exp (a kLoop
 * kernel of the same exp), for rows under 16 and over (k_reduce.c's eight
 * partials and tails). */
static void reduce_row_exp(void) {
  static const char *const shapes[][2] = {{"64,16", "64"}, {"37,515", "37"}, {"9,13", "9"}};
  for (int k = 0; k < 3; k++) {
    const char *xs = shapes[k][0], *os = shapes[k][1];
    fprintf(stderr, "reduce of exp f32[%s] dimensions={1}\n", xs);
    char text[2048];
    snprintf(text, sizeof text,
             "HloModule rexp\n" SUM_F32
             "f {\n  p0 = f32[%s] parameter(0)\n  c = f32[] constant(0)\n  x = f32[%s] exponential(p0)\n"
             "  ROOT r = f32[%s] reduce(x, c), dimensions={1}, to_apply=sum\n}\n"
             "fe {\n  q0 = f32[%s] parameter(0)\n  ROOT y = f32[%s] exponential(q0)\n}\n"
             "fr {\n  s0 = f32[%s] parameter(0)\n  z = f32[] constant(0)\n"
             "  ROOT t = f32[%s] reduce(s0, z), dimensions={1}, to_apply=sum\n}\n"
             "ENTRY e {\n  a = f32[%s] parameter(0)\n  u = f32[%s] fusion(a), kind=kInput, calls=f\n"
             "  v = f32[%s] fusion(a), kind=kLoop, calls=fe\n  ROOT o = (f32[%s], f32[%s]) tuple(u, v)\n}\n",
             xs, xs, os, xs, xs, xs, os, xs, os, xs, os, xs);
    ts_hlo_module_t *m = parse_text("rexp.hlo", text);
    if (!m) return;
    ts_codegen_stats_t cs;
    ts_codegen_t *cg = compile_module(m, &cs);
    EXPECT_EQ(cs.compiled, 2);
    const ts_hlo_instr_t *u = ts_hlo_comp_find_instr(m->entry, "u"), *v = ts_hlo_comp_find_instr(m->entry, "v");
    ts_kernel_fn fu = u ? ts_codegen_kernel(cg, u) : NULL, fv = v ? ts_codegen_kernel(cg, v) : NULL;
    EXPECT(fu && fv);
    for (int trial = 0; fu && trial < 4; trial++) compare(m, u, fu, 40 + (uint64_t)trial, trial % 2 == 1, false);
    ts_hlo_comp_t *fr = NULL;
    for (int c = 0; c < m->ncomps; c++)
      if (strcmp(m->comps[c]->name, "fr") == 0) fr = m->comps[c];
    EXPECT(fr != NULL);
    for (int trial = 0; fu && fv && fr && trial < 2; trial++) {
      ts_value_t *a = ts_value_new(u->called[0]->params[0]->shape), *x = ts_value_new(v->shape);
      ts_value_t *got = ts_value_new(u->shape), *want = NULL;
      uint64_t s = 60 + (uint64_t)trial;
      int64_t n = ts_array_count(&a->a);
      for (int64_t i = 0; i < n; i++)
        ((float *)a->a.data)[i] = trial ? edges[rng(&s) % (sizeof edges / sizeof edges[0])]
                                        : (float)((double)rng(&s) / (1u << 31) * 8.0 - 4.0);
      EXPECT_EQ(fv(NULL, v, &a->a, 1, &x->a, 1), TS_OK);
      EXPECT_EQ(fu(NULL, u, &a->a, 1, &got->a, 1), TS_OK);
      EXPECT_EQ(interp_run(m, fr, &x, &want), TS_OK);
      int64_t no = ts_array_count(&got->a), bad = 0;
      for (int64_t i = 0; want && i < no; i++) {
        float g = ((float *)got->a.data)[i], w = ((float *)want->a.data)[i];
        if (memcmp(&g, &w, sizeof g) != 0 && !(isnan(g) && isnan(w)) && bad++ < 3)
          fprintf(stderr, "  exp row sum [%lld]: got %.9g want %.9g\n", (long long)i, g, w);
      }
      EXPECT(want != NULL);
      EXPECT_EQ(bad, 0);
      ts_value_unref(a);
      ts_value_unref(x);
      ts_value_unref(got);
      ts_value_unref(want);
    }
    ptx_builds(m, 2);
    ts_codegen_destroy(cg);
    ts_hlo_module_destroy(m);
  }
}

/* Column sums (dims={0}: whole rows accumulated into a row of outputs) and
 * row sums of odd sizes, for the vector loops' tails. */
static void reduce_column(void) {
  check_reduce1("f32", "37,515", "0", "515", "add", "0", NULL, 0);
  check_reduce1("f32", "37,515", "1", "37", "add", "0", NULL, 0);
  check_reduce1("f32", "37,515", "0", "515", "multiply", "1", NULL, 0);
  check_reduce1("f32", "515,3", "0", "3", "add", "0.5", NULL, 0);
}

/* Everything to a scalar: one row of 19055 (partials, tail), and the MLP's
 * fused_computation.8: a product of two parameters summed over {0,1}. */
static void reduce_full(void) {
  check_reduce1("f32", "37,515", "0,1", "", "add", "0", NULL, 0);
  check_reduce1("f32", "7", "0", "", "add", "-0", NULL, 0);
  check_reduce1("f32", "1,1", "0,1", "", "add", "-0", NULL, 0);
  fprintf(stderr, "reduce of a product of two parameters f32[64,16] dimensions={0,1}\n");
  check_reduce(SUM_F32, "  p0 = f32[64,16] parameter(0)\n  p1 = f32[64,16] parameter(1)\n",
               "  m = f32[64,16] multiply(p0, p1)\n  c = f32[] constant(0)\n"
               "  ROOT r = f32[] reduce(m, c), dimensions={0,1}, to_apply=sum\n",
               "f32[]", "  a = f32[64,16] parameter(0)\n  b = f32[64,16] parameter(1)\n", "a, b", NULL, 0);
}

/* Reduced and kept dims interleaved (groups R K R, K R K), size-1 dims
 * dropped, no dims at all; operands through index maps (a transpose, a
 * broadcast) rather than one flat loop. */
static void reduce_rank3(void) {
  check_reduce1("f32", "3,5,7", "1", "3,7", "add", "0", NULL, 0);
  check_reduce1("f32", "3,5,7", "0,2", "5", "add", "0", NULL, 0);
  check_reduce1("f32", "3,5,40", "0,2", "5", "add", "0", NULL, 0);
  check_reduce1("f32", "4,1,33", "0,1", "33", "add", "0", NULL, 0);
  check_reduce1("f32", "3,5,7", "", "3,5,7", "add", "0.25", NULL, 0);
  fprintf(stderr, "reduce of a transpose f32[7,5,3] -> [3,5,7] dimensions={1}\n");
  check_reduce(SUM_F32, "  p0 = f32[7,5,3] parameter(0)\n",
               "  t = f32[3,5,7] transpose(p0), dimensions={2,1,0}\n  c = f32[] constant(0)\n"
               "  ROOT r = f32[3,7] reduce(t, c), dimensions={1}, to_apply=sum\n",
               "f32[3,7]", "  a = f32[7,5,3] parameter(0)\n", "a", NULL, 0);
  fprintf(stderr, "reduce of a broadcast product f32[3,5,20] dimensions={2}\n");
  check_reduce(SUM_F32, "  p0 = f32[5] parameter(0)\n  p1 = f32[3,5,20] parameter(1)\n",
               "  b = f32[3,5,20] broadcast(p0), dimensions={1}\n  m = f32[3,5,20] multiply(b, p1)\n"
               "  c = f32[] constant(0)\n  ROOT r = f32[3,5] reduce(m, c), dimensions={2}, to_apply=sum\n",
               "f32[3,5]", "  a = f32[5] parameter(0)\n  b = f32[3,5,20] parameter(1)\n", "a, b", NULL, 0);
}

/* maximum and minimum on NaNs of either sign, infinities and signed zeros:
 * which NaN comes out (the accumulator's, else the element's) and which
 * zero show in the bits. */
static void reduce_max_nan(void) {
  static const float pool[] = {NAN, -NAN, -INFINITY, INFINITY, 0.0f, -0.0f, 1.0f, -1.0f, 2.5f, -3.0f, -INFINITY, 0.0f};
  static float nan_pool[12];
  memcpy(nan_pool, pool, sizeof pool);
  nan_pool[1] = copysignf(NAN, -1.0f);
  const size_t n = sizeof pool / sizeof pool[0];
  nan_bits = true;
  check_reduce1("f32", "37,515", "1", "37", "maximum", "-inf", nan_pool, n);
  check_reduce1("f32", "37,515", "0", "515", "maximum", "-inf", nan_pool, n);
  check_reduce1("f32", "37,515", "1", "37", "minimum", "inf", nan_pool, n);
  check_reduce1("f32", "37,515", "0", "515", "minimum", "inf", nan_pool, n);
  check_reduce1("f32", "6,7", "1", "6", "maximum", "-0", nan_pool, n);
  check_reduce1("f32", "6,7", "1", "6", "minimum", "0", nan_pool, n);
  nan_bits = false;
}

/* s32 reducers (wrapping add and multiply, max, min, the bit ops), pred
 * and/or/xor. */
static void reduce_s32(void) {
  check_reduce1("s32", "37,515", "1", "37", "add", "0", NULL, 0);
  check_reduce1("s32", "37,515", "0", "515", "add", "7", NULL, 0);
  static const char *const ops[] = {"multiply", "maximum", "minimum", "and", "or", "xor"};
  for (int k = 0; k < 6; k++) check_reduce1("s32", "14,196", "1", "14", ops[k], k == 3 ? "-1" : "1", NULL, 0);
  check_reduce1("s32", "3,5,7", "0,2", "5", "maximum", "-2147483648", NULL, 0);
  for (int k = 3; k < 6; k++) check_reduce1("pred", "9,20", "1", "9", ops[k], k == 3 ? "true" : "false", NULL, 0);
}

/* The init a parameter of the fusion (XLA's reduce of a traced init). */
static void reduce_init_param(void) {
  static const char *const ops[] = {"add", "maximum"};
  for (int k = 0; k < 2; k++) {
    char reg[256], body[256];
    fprintf(stderr, "reduce f32[37,515] dimensions={1} by %s from parameter 1\n", ops[k]);
    region(reg, sizeof reg, "red", "f32", ops[k]);
    snprintf(body, sizeof body, "  ROOT r = f32[37] reduce(p0, p1), dimensions={1}, to_apply=red\n");
    check_reduce(reg, "  p0 = f32[37,515] parameter(0)\n  p1 = f32[] parameter(1)\n", body, "f32[37]",
                 "  a = f32[37,515] parameter(0)\n  b = f32[] parameter(1)\n", "a, b", NULL, 0);
  }
  fprintf(stderr, "reduce s32[3,5,7] dimensions={1} by add from parameter 0\n");
  check_reduce("sum {\n  p = s32[] parameter(0)\n  q = s32[] parameter(1)\n  ROOT a = s32[] add(p, q)\n}\n",
               "  p0 = s32[] parameter(0)\n  p1 = s32[3,5,7] parameter(1)\n",
               "  ROOT r = s32[3,7] reduce(p1, p0), dimensions={1}, to_apply=sum\n", "s32[3,7]",
               "  a = s32[] parameter(0)\n  b = s32[3,5,7] parameter(1)\n", "a, b", NULL, 0);
}

/* The kernels of entry fusions u1..un into k[], each compared with the
 * interpreter on two random inputs (the second with edge values); all n
 * compiled, as nkernels distinct kernels. */
static void entry_kernels(ts_hlo_module_t *m, ts_codegen_t *cg, const ts_codegen_stats_t *cs, int n, int nkernels,
                          ts_kernel_fn *k, uint64_t seed) {
  EXPECT_EQ(cs->fusions, n);
  EXPECT_EQ(cs->compiled, n);
  EXPECT_EQ(cs->kernels, nkernels);
  for (int f = 0; f < n; f++) {
    char name[8];
    snprintf(name, sizeof name, "u%d", f + 1);
    const ts_hlo_instr_t *fu = ts_hlo_comp_find_instr(m->entry, name);
    EXPECT(fu != NULL);
    k[f] = fu ? ts_codegen_kernel(cg, fu) : NULL;
    EXPECT(k[f] != NULL);
    for (int trial = 0; fu && k[f] && trial < 2; trial++) compare(m, fu, k[f], seed + (uint64_t)trial, trial == 1, true);
  }
}

/* The kernel key tells reduces apart by dims, reducer and init (value or
 * parameter) and shares one kernel between reduces equal up to names. */
static void reduce_keys(void) {
  static const char text[] =
      "HloModule keys\n"
      "sum {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n  ROOT a = f32[] add(p, q)\n}\n"
      "sum2 {\n  p2 = f32[] parameter(0)\n  q2 = f32[] parameter(1)\n  ROOT a2 = f32[] add(p2, q2)\n}\n"
      "mx {\n  pm = f32[] parameter(0)\n  qm = f32[] parameter(1)\n  ROOT am = f32[] maximum(pm, qm)\n}\n"
      "f1 {\n  x1 = f32[8,8] parameter(0)\n  c1 = f32[] constant(0)\n"
      "  ROOT r1 = f32[8] reduce(x1, c1), dimensions={1}, to_apply=sum\n}\n"
      "f2 {\n  x2 = f32[8,8] parameter(0)\n  c2 = f32[] constant(0)\n"
      "  ROOT r2 = f32[8] reduce(x2, c2), dimensions={1}, to_apply=sum2\n}\n"
      "f3 {\n  x3 = f32[8,8] parameter(0)\n  c3 = f32[] constant(0)\n"
      "  ROOT r3 = f32[8] reduce(x3, c3), dimensions={0}, to_apply=sum\n}\n"
      "f4 {\n  x4 = f32[8,8] parameter(0)\n  c4 = f32[] constant(0)\n"
      "  ROOT r4 = f32[8] reduce(x4, c4), dimensions={1}, to_apply=mx\n}\n"
      "f5 {\n  x5 = f32[8,8] parameter(0)\n  c5 = f32[] constant(1)\n"
      "  ROOT r5 = f32[8] reduce(x5, c5), dimensions={1}, to_apply=sum\n}\n"
      "f6 {\n  x6 = f32[8,8] parameter(0)\n  c6 = f32[] parameter(1)\n"
      "  ROOT r6 = f32[8] reduce(x6, c6), dimensions={1}, to_apply=sum\n}\n"
      "ENTRY e {\n  a = f32[8,8] parameter(0)\n  z = f32[] parameter(1)\n"
      "  u1 = f32[8] fusion(a), kind=kInput, calls=f1\n  u2 = f32[8] fusion(a), kind=kInput, calls=f2\n"
      "  u3 = f32[8] fusion(a), kind=kInput, calls=f3\n  u4 = f32[8] fusion(a), kind=kInput, calls=f4\n"
      "  u5 = f32[8] fusion(a), kind=kInput, calls=f5\n  u6 = f32[8] fusion(a, z), kind=kInput, calls=f6\n"
      "  ROOT t = (f32[8], f32[8], f32[8], f32[8], f32[8], f32[8]) tuple(u1, u2, u3, u4, u5, u6)\n}\n";
  ts_hlo_module_t *m = parse_text("keys.hlo", text);
  if (!m) return;
  ts_codegen_stats_t cs;
  ts_codegen_t *cg = compile_module(m, &cs);
  ts_kernel_fn k[6];
  entry_kernels(m, cg, &cs, 6, 5, k, 70);
  EXPECT(k[0] == k[1]);
  for (int f = 2; f < 6; f++)
    for (int h = 0; h < f; h++) EXPECT(h == 1 || k[f] != k[h]);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
}

/* Reduces codegen/ leaves to the interpreter: a reducer that is no single
 * op of its parameters (subtract, an op with a constant), a bit op over
 * f32, a computed init, a reduce that is not the root, mixed types. */
static void reduce_rejects(void) {
  static const char *const bodies[] = {
      "sub {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n  ROOT s = f32[] subtract(p, q)\n}\n"
      "f {\n  x = f32[8,8] parameter(0)\n  c = f32[] constant(0)\n"
      "  ROOT r = f32[8] reduce(x, c), dimensions={1}, to_apply=sub\n}\n",
      "addc {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n  k = f32[] constant(1)\n  s = f32[] add(p, k)\n"
      "  ROOT a = f32[] add(s, q)\n}\n"
      "f {\n  x = f32[8,8] parameter(0)\n  c = f32[] constant(0)\n"
      "  ROOT r = f32[8] reduce(x, c), dimensions={1}, to_apply=addc\n}\n",
      "andf {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n  ROOT s = f32[] and(p, q)\n}\n"
      "f {\n  x = f32[8,8] parameter(0)\n  c = f32[] constant(0)\n"
      "  ROOT r = f32[8] reduce(x, c), dimensions={1}, to_apply=andf\n}\n",
      "sum {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n  ROOT a = f32[] add(p, q)\n}\n"
      "f {\n  x = f32[8,8] parameter(0)\n  c = f32[] constant(1)\n  c2 = f32[] add(c, c)\n"
      "  ROOT r = f32[8] reduce(x, c2), dimensions={1}, to_apply=sum\n}\n",
      "sum {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n  ROOT a = f32[] add(p, q)\n}\n"
      "f {\n  x = f32[8,8] parameter(0)\n  c = f32[] constant(0)\n"
      "  r = f32[8] reduce(x, c), dimensions={1}, to_apply=sum\n  ROOT n = f32[8] negate(r)\n}\n",
      "sum {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n  ROOT a = f32[] add(p, q)\n}\n"
      "f {\n  x = f32[8,8] parameter(0)\n  c = f32[] constant(0)\n  y = f32[8,8] exponential(x)\n"
      "  r = f32[8] reduce(y, c), dimensions={1}, to_apply=sum\n  ROOT t = (f32[8], f32[8,8]) tuple(r, y)\n}\n",
  };
  static const char *const shapes[] = {"f32[8]", "f32[8]", "f32[8]", "f32[8]", "f32[8]", "(f32[8], f32[8,8])"};
  for (int k = 0; k < 6; k++) {
    char text[2048];
    snprintf(text, sizeof text,
             "HloModule rej\n%sENTRY e {\n  a = f32[8,8] parameter(0)\n"
             "  ROOT u = %s fusion(a), kind=kInput, calls=f\n}\n",
             bodies[k], shapes[k]);
    ts_hlo_module_t *m = parse_text("rej.hlo", text);
    if (!m) continue;
    bool flat;
    EXPECT(!cg_fusion_compiles(m->entry->root, &flat));
    ts_codegen_stats_t cs;
    ts_codegen_t *cg = compile_module(m, &cs);
    EXPECT_EQ(cs.fusions, 1);
    EXPECT_EQ(cs.compiled, 0);
    EXPECT(ts_codegen_kernel(cg, m->entry->root) == NULL);
    ts_codegen_destroy(cg);
    ts_hlo_module_destroy(m);
  }
}

/* ---- bf16 and f16 -------------------------------------------------------------
 * kernels/ computes an op on bf16 or f16 values in f32 and rounds its result
 * to the type (nearest even) before the next op reads it; the compiled
 * kernels must do the same at every instruction, not only at the store. All
 * bit for bit against the interpreter: NaN for NaN where an arithmetic op
 * makes one (LLVM leaves a NaN's payload open, as for f32), the bits
 * themselves (nan_bits) where elements are only moved, selected or
 * converted. */

/* T[n] over parameters p0, p1 of T (n = NH * NH: every pair of edges). */
static void check_half2(const char *ty, const char *body) {
  char params[128], eparams[128], shape[32];
  snprintf(params, sizeof params, "  p0 = %s[576] parameter(0)\n  p1 = %s[576] parameter(1)\n", ty, ty);
  snprintf(eparams, sizeof eparams, "  a = %s[576] parameter(0)\n  b = %s[576] parameter(1)\n", ty, ty);
  snprintf(shape, sizeof shape, "%s[576]", ty);
  char text[1024];
  snprintf(text, sizeof text, body, ty, ty, ty, ty, ty, ty, ty, ty, ty, ty);
  check_fusion(params, text, shape, eparams, "a, b");
}

static const char *const half_types[] = {"bf16", "f16"};

/* Each op alone, then chains whose intermediate roundings matter: bf16
 * (1 + 2^-8) + 2^-8 is 1 with a rounding after each add and 1 + 2^-7
 * without; f16 65504 + 16 overflows to inf, subnormal products round
 * halfway cases to even, and a multiply by a broadcast 0.5 constant
 * underflows. */
static void half_ops(void) {
  static const char *const bin[] = {"add", "subtract", "multiply", "divide", "maximum", "minimum"};
  static const char *const un[] = {"negate", "abs", "floor", "ceil", "sqrt", "rsqrt"};
  char body[256];
  for (int t = 0; t < 2; t++) {
    const char *ty = half_types[t];
    for (size_t k = 0; k < sizeof bin / sizeof bin[0]; k++) {
      fprintf(stderr, "%s %s\n", ty, bin[k]);
      snprintf(body, sizeof body, "  ROOT r = %%s[576] %s(p0, p1)\n", bin[k]);
      check_half2(ty, body);
    }
    for (size_t k = 0; k < sizeof un / sizeof un[0]; k++) {
      fprintf(stderr, "%s %s\n", ty, un[k]);
      snprintf(body, sizeof body, "  ROOT r = %%s[576] %s(p0)\n", un[k]);
      check_half2(ty, body);
    }
    fprintf(stderr, "%s clamp, compare and select\n", ty);
    check_half2(ty, "  c = %s[] constant(-1.5)\n  cb = %s[576] broadcast(c), dimensions={}\n"
                    "  k = %s[576] clamp(cb, p0, p1)\n  lt = pred[576] compare(p0, p1), direction=LT\n"
                    "  ROOT r = %s[576] select(lt, k, p1)\n");
  }
}

static void half_chain(void) {
  for (int t = 0; t < 2; t++) {
    const char *ty = half_types[t];
    fprintf(stderr, "%s add, multiply, maximum chain\n", ty);
    check_half2(ty, "  a = %s[576] add(p0, p1)\n  a2 = %s[576] add(a, p1)\n  m = %s[576] multiply(a2, p0)\n"
                    "  x = %s[576] maximum(m, p1)\n  s = %s[576] subtract(x, p0)\n  d = %s[576] divide(s, p1)\n"
                    "  n = %s[576] negate(d)\n  ROOT r = %s[576] minimum(n, a)\n");
    fprintf(stderr, "%s products, sums and a halving (overflow, subnormals)\n", ty);
    check_half2(ty, "  m = %s[576] multiply(p0, p1)\n  a = %s[576] add(m, p0)\n  h = %s[] constant(0.5)\n"
                    "  hb = %s[576] broadcast(h), dimensions={}\n  x = %s[576] multiply(a, hb)\n"
                    "  y = %s[576] multiply(x, hb)\n  ROOT r = %s[576] add(y, m)\n");
  }
}

/* Every bf16 and f16 value converted to each type; f32 sign-exponent
 * pairs with the mantissas of ties and near-ties converted to bf16 and f16;
 * s32 values around the roundings (and beyond f16's range) to both, which
 * must round once from the integer, not through f32; pred to both; a chain
 * through every type, and bf16 -> bf16 (k_convert's f32 path quiets NaNs). */
static void half_convert(void) {
  static const char *const to[] = {"f32", "bf16", "f16", "s32", "pred"};
  char params[64], body[128], shape[32], eparams[64];
  nan_bits = true;
  all16 = true;
  for (int t = 0; t < 2; t++)
    for (int k = 0; k < 5; k++) {
      fprintf(stderr, "convert every %s to %s\n", half_types[t], to[k]);
      snprintf(params, sizeof params, "  p0 = %s[65536] parameter(0)\n", half_types[t]);
      snprintf(eparams, sizeof eparams, "  a = %s[65536] parameter(0)\n", half_types[t]);
      snprintf(body, sizeof body, "  ROOT r = %s[65536] convert(p0)\n", to[k]);
      snprintf(shape, sizeof shape, "%s[65536]", to[k]);
      check_fusion(params, body, shape, eparams, "a");
    }
  all16 = false;
  patterns = true;
  for (int t = 0; t < 2; t++) {
    fprintf(stderr, "convert f32 patterns to %s\n", half_types[t]);
    snprintf(body, sizeof body, "  ROOT r = %s[262144] convert(p0)\n", half_types[t]);
    snprintf(shape, sizeof shape, "%s[262144]", half_types[t]);
    check_fusion("  p0 = f32[262144] parameter(0)\n", body, shape, "  a = f32[262144] parameter(0)\n", "a");
    fprintf(stderr, "convert s32 patterns to %s\n", half_types[t]);
    snprintf(body, sizeof body, "  ROOT r = %s[4096] convert(p0)\n", half_types[t]);
    snprintf(shape, sizeof shape, "%s[4096]", half_types[t]);
    check_fusion("  p0 = s32[4096] parameter(0)\n", body, shape, "  a = s32[4096] parameter(0)\n", "a");
    fprintf(stderr, "convert pred to %s\n", half_types[t]);
    snprintf(body, sizeof body, "  ROOT r = %s[64] convert(p0)\n", half_types[t]);
    snprintf(shape, sizeof shape, "%s[64]", half_types[t]);
    check_fusion("  p0 = pred[64] parameter(0)\n", body, shape, "  a = pred[64] parameter(0)\n", "a");
  }
  fprintf(stderr, "convert f32 -> bf16 -> f16 -> s32 -> bf16 -> bf16 -> f16 -> f32\n");
  check_fusion("  p0 = f32[262144] parameter(0)\n",
               "  a = bf16[262144] convert(p0)\n  b = f16[262144] convert(a)\n  c = s32[262144] convert(b)\n"
               "  d = bf16[262144] convert(c)\n  e = bf16[262144] convert(d)\n  h = f16[262144] convert(e)\n"
               "  ROOT r = f32[262144] convert(h)\n",
               "f32[262144]", "  a = f32[262144] parameter(0)\n", "a");
  patterns = false;
  all16 = true;
  fprintf(stderr, "convert bf16 -> bf16\n");
  check_fusion("  p0 = bf16[65536] parameter(0)\n", "  ROOT r = bf16[65536] convert(p0)\n", "bf16[65536]",
               "  a = bf16[65536] parameter(0)\n", "a");
  all16 = false;
  nan_bits = false;
}

/* bf16 and f16 through index maps (nested loops): a transpose, a broadcast
 * along the major dimension, slices, a concatenate, a reshape and an iota
 * past the integers bf16 holds exactly (256) feeding arithmetic; elements
 * only moved and selected keep their bits, NaN payloads included; f16 iota
 * past 2048, rounded once from the integer. */
static void half_index(void) {
  char params[128], body[1024], shape[32], eparams[128];
  for (int t = 0; t < 2; t++) {
    const char *ty = half_types[t];
    fprintf(stderr, "%s transpose, broadcast, slice, concatenate, reshape, iota\n", ty);
    snprintf(params, sizeof params, "  p0 = %s[24,25] parameter(0)\n  p1 = %s[25] parameter(1)\n", ty, ty);
    snprintf(eparams, sizeof eparams, "  a = %s[24,25] parameter(0)\n  b = %s[25] parameter(1)\n", ty, ty);
    snprintf(body, sizeof body,
             "  t = %s[25,24] transpose(p0), dimensions={1,0}\n  b = %s[25,24] broadcast(p1), dimensions={0}\n"
             "  a = %s[25,24] add(t, b)\n  s1 = %s[25,10] slice(a), slice={[0:25], [1:11]}\n"
             "  s2 = %s[25,7] slice(t), slice={[0:25], [3:24:3]}\n  s3 = %s[25,7] slice(b), slice={[0:25], [0:7]}\n"
             "  cc = %s[25,24] concatenate(s1, s2, s3), dimensions={1}\n  r = %s[600] reshape(cc)\n"
             "  i = %s[600] iota(), iota_dimension=0\n  ROOT o = %s[600] multiply(r, i)\n",
             ty, ty, ty, ty, ty, ty, ty, ty, ty, ty);
    snprintf(shape, sizeof shape, "%s[600]", ty);
    check_fusion(params, body, shape, eparams, "a, b");
    fprintf(stderr, "%s moved and selected bits\n", ty);
    snprintf(body, sizeof body,
             "  t = %s[25,24] transpose(p0), dimensions={1,0}\n  b = %s[25,24] broadcast(p1), dimensions={0}\n"
             "  lt = pred[25,24] compare(t, b), direction=LT\n  s = %s[25,24] select(lt, b, t)\n"
             "  ROOT r = %s[600] reshape(s)\n",
             ty, ty, ty, ty);
    nan_bits = true;
    check_fusion(params, body, shape, eparams, "a, b");
    nan_bits = false;
  }
  fprintf(stderr, "f16 iota past 2048, bf16 iota past 256\n");
  check_fusion("  p0 = f16[5000] parameter(0)\n",
               "  i = f16[5000] iota(), iota_dimension=0\n  j = s32[5000] iota(), iota_dimension=0\n"
               "  b = bf16[5000] convert(j)\n  f = f16[5000] convert(b)\n  ROOT r = f16[5000] subtract(i, f)\n",
               "f16[5000]", "  a = f16[5000] parameter(0)\n", "a");
}

/* Mixed types: bf16 in, f32 out (the convert exact, the arithmetic f32);
 * f32 in, bf16 out; a compare of f16 values selecting f32 ones; an f32
 * compare selecting bf16 values. */
static void half_mixed(void) {
  fprintf(stderr, "bf16 in, f32 out\n");
  check_fusion("  p0 = bf16[576] parameter(0)\n  p1 = f32[576] parameter(1)\n",
               "  c = f32[576] convert(p0)\n  m = f32[576] multiply(c, p1)\n  ROOT r = f32[576] add(m, c)\n",
               "f32[576]", "  a = bf16[576] parameter(0)\n  b = f32[576] parameter(1)\n", "a, b");
  fprintf(stderr, "f32 in, bf16 out\n");
  check_fusion("  p0 = f32[576] parameter(0)\n  p1 = bf16[576] parameter(1)\n",
               "  c = bf16[576] convert(p0)\n  a = bf16[576] add(c, p1)\n  m = bf16[576] multiply(a, c)\n"
               "  ROOT r = bf16[576] subtract(m, p1)\n",
               "bf16[576]", "  a = f32[576] parameter(0)\n  b = bf16[576] parameter(1)\n", "a, b");
  fprintf(stderr, "f16 compare selecting f32\n");
  check_fusion("  p0 = f16[576] parameter(0)\n  p1 = f16[576] parameter(1)\n",
               "  x = f32[576] convert(p0)\n  y = f32[576] convert(p1)\n"
               "  ge = pred[576] compare(p0, p1), direction=GE, type=FLOAT\n  ROOT r = f32[576] select(ge, x, y)\n",
               "f32[576]", "  a = f16[576] parameter(0)\n  b = f16[576] parameter(1)\n", "a, b");
  fprintf(stderr, "f32 compare selecting bf16\n");
  check_fusion("  p0 = f32[576] parameter(0)\n  p1 = bf16[576] parameter(1)\n",
               "  c = bf16[576] convert(p0)\n  ne = pred[576] compare(p0, p0), direction=NE\n"
               "  s = bf16[576] select(ne, p1, c)\n  ROOT r = bf16[576] add(s, p1)\n",
               "bf16[576]", "  a = f32[576] parameter(0)\n  b = bf16[576] parameter(1)\n", "a, b");
}

/* bf16 and f16 reduces: kernels/ combines them one element at a time, in
 * order (no eight partials, whatever the row length), each step in f32
 * from canonical NaNs and rounded to the type: rows over 16, columns, the
 * whole array, rank 3, a computed operand, an init parameter, maximum and
 * minimum on NaNs, infinities and signed zeros (their bits). */
static void half_reduce(void) {
  for (int t = 0; t < 2; t++) {
    const char *ty = half_types[t];
    check_reduce1(ty, "37,515", "1", "37", "add", "0", NULL, 0);
    check_reduce1(ty, "37,515", "0", "515", "add", "0", NULL, 0);
    check_reduce1(ty, "37,515", "0,1", "", "add", "-0", NULL, 0);
    check_reduce1(ty, "9,13", "1", "9", "add", "0.25", NULL, 0);
    check_reduce1(ty, "14,30", "1", "14", "multiply", "1", NULL, 0);
    check_reduce1(ty, "3,5,40", "0,2", "5", "add", "0", NULL, 0);
    nan_bits = true;
    check_reduce1(ty, "37,515", "1", "37", "maximum", "-inf", NULL, 0);
    check_reduce1(ty, "37,515", "0", "515", "minimum", "inf", NULL, 0);
    check_reduce1(ty, "6,7", "1", "6", "maximum", "-0", NULL, 0);
    check_reduce1(ty, "6,7", "1", "6", "minimum", "0", NULL, 0);
    nan_bits = false;
    char reg[256], params[128], body[512], shape[32], eparams[128];
    fprintf(stderr, "reduce of a %s product of converted f32 [8,40] dimensions={1}\n", ty);
    region(reg, sizeof reg, "sum", ty, "add");
    snprintf(body, sizeof body,
             "  c = %s[8,40] convert(p0)\n  m = %s[8,40] multiply(c, c)\n  z = %s[] constant(0)\n"
             "  ROOT r = %s[8] reduce(m, z), dimensions={1}, to_apply=sum\n",
             ty, ty, ty, ty);
    snprintf(shape, sizeof shape, "%s[8]", ty);
    check_reduce(reg, "  p0 = f32[8,40] parameter(0)\n", body, shape, "  a = f32[8,40] parameter(0)\n", "a", NULL, 0);
    fprintf(stderr, "reduce %s[37,515] dimensions={1} from parameter 1\n", ty);
    snprintf(params, sizeof params, "  p0 = %s[37,515] parameter(0)\n  p1 = %s[] parameter(1)\n", ty, ty);
    snprintf(eparams, sizeof eparams, "  a = %s[37,515] parameter(0)\n  b = %s[] parameter(1)\n", ty, ty);
    snprintf(shape, sizeof shape, "%s[37]", ty);
    snprintf(body, sizeof body, "  ROOT r = %s[37] reduce(p0, p1), dimensions={1}, to_apply=sum\n", ty);
    check_reduce(reg, params, body, shape, eparams, "a, b", NULL, 0);
  }
}

/* The math functions on every bf16 and f16 value. kernels/ computes libm's
 * f32 function and rounds it to the type; ours (codegen/math.c) are within a
 * few f32 ULPs of libm, which can flip a rounding, so codegen/ compiles a
 * function for bf16 and f16 only where the rounded results equal the
 * interpreter's on all 65536 inputs of both types (half_math_ok): those
 * must match here bit for bit, and the others must stay uncompiled. */
static void half_math(void) {
  static const struct {
    const char *op;
    bool compiled[2]; /* half_math_ok's answer for bf16, f16 */
  } fns[] = {{"exponential", {true, true}},
             {"log", {true, true}},
             {"tanh", {true, true}},
             {"log-plus-one", {true, true}},
             {"exponential-minus-one", {true, false}}, /* f16: one of 65536 flips */
             {"erf", {true, true}},
             {"sine", {true, true}},
             {"cosine", {true, true}},
             {"sqrt", {true, true}},
             {"rsqrt", {true, true}},
             {"logistic", {false, false}}}; /* bf16: kernels/ underflows to 0 below -89; f16: 6 flips */
  all16 = true;
  for (int t = 0; t < 2; t++)
    for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
      char text[512];
      snprintf(text, sizeof text,
               "HloModule hm\nf {\n  p0 = %s[65536] parameter(0)\n  ROOT r = %s[65536] %s(p0)\n}\n"
               "ENTRY e {\n  a = %s[65536] parameter(0)\n  ROOT u = %s[65536] fusion(a), kind=kLoop, calls=f\n}\n",
               half_types[t], half_types[t], fns[k].op, half_types[t], half_types[t]);
      bool want = fns[k].compiled[t];
      fprintf(stderr, "%s %s on every value: %s\n", half_types[t], fns[k].op,
              want ? "compiled, bit for bit" : "left to kernels/");
      ts_hlo_module_t *m = parse_text("hm.hlo", text);
      if (!m) continue;
      bool flat;
      EXPECT_EQ(cg_fusion_compiles(m->entry->root, &flat), want);
      ts_hlo_module_destroy(m);
      if (!want) continue;
      ts_kernel_fn fn;
      ts_codegen_t *cg = compile_root_fusion("hm.hlo", text, &m, &fn);
      if (fn) compare(m, m->entry->root, fn, 1, false, true);
      ts_codegen_destroy(cg);
      ts_hlo_module_destroy(m);
    }
  all16 = false;
}

/* The kernel key holds the element types and a bf16 or f16 constant's
 * rounded bits: multiplies by 1 and by 1.001 share a bf16 kernel (both
 * round to 1) but not an f16 one (1.001 rounds to 1 + 2^-10), and the same
 * computation over bf16, f16 and f32 gets three kernels. */
static void half_keys(void) {
  static const char text[] =
      "HloModule hkeys\n"
      "f1 {\n  x1 = bf16[8] parameter(0)\n  c1 = bf16[] constant(1)\n  b1 = bf16[8] broadcast(c1), dimensions={}\n"
      "  ROOT y1 = bf16[8] multiply(x1, b1)\n}\n"
      "f2 {\n  x2 = bf16[8] parameter(0)\n  c2 = bf16[] constant(1.001)\n  b2 = bf16[8] broadcast(c2), dimensions={}\n"
      "  ROOT y2 = bf16[8] multiply(x2, b2)\n}\n"
      "f3 {\n  x3 = f16[8] parameter(0)\n  c3 = f16[] constant(1)\n  b3 = f16[8] broadcast(c3), dimensions={}\n"
      "  ROOT y3 = f16[8] multiply(x3, b3)\n}\n"
      "f4 {\n  x4 = f16[8] parameter(0)\n  c4 = f16[] constant(1.001)\n  b4 = f16[8] broadcast(c4), dimensions={}\n"
      "  ROOT y4 = f16[8] multiply(x4, b4)\n}\n"
      "f5 {\n  x5 = f32[8] parameter(0)\n  c5 = f32[] constant(1)\n  b5 = f32[8] broadcast(c5), dimensions={}\n"
      "  ROOT y5 = f32[8] multiply(x5, b5)\n}\n"
      "ENTRY e {\n  a = bf16[8] parameter(0)\n  h = f16[8] parameter(1)\n  q = f32[8] parameter(2)\n"
      "  u1 = bf16[8] fusion(a), kind=kLoop, calls=f1\n  u2 = bf16[8] fusion(a), kind=kLoop, calls=f2\n"
      "  u3 = f16[8] fusion(h), kind=kLoop, calls=f3\n  u4 = f16[8] fusion(h), kind=kLoop, calls=f4\n"
      "  u5 = f32[8] fusion(q), kind=kLoop, calls=f5\n"
      "  ROOT t = (bf16[8], bf16[8], f16[8], f16[8], f32[8]) tuple(u1, u2, u3, u4, u5)\n}\n";
  ts_hlo_module_t *m = parse_text("hkeys.hlo", text);
  if (!m) return;
  ts_codegen_stats_t cs;
  ts_codegen_t *cg = compile_module(m, &cs);
  ts_kernel_fn k[5];
  entry_kernels(m, cg, &cs, 5, 4, k, 80);
  EXPECT(k[0] == k[1]);
  EXPECT(k[2] != k[0] && k[3] != k[2] && k[4] != k[0] && k[4] != k[2] && k[4] != k[3]);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
}

/* bf16 and f16 fusions left to kernels/: power (no exhaustive check over
 * pairs), a reduce of bf16 data by an f32 region into f32, a
 * TOTALORDER compare. */
static void half_rejects(void) {
  static const char *const texts[] = {
      "HloModule r\nf {\n  p0 = bf16[8] parameter(0)\n  ROOT r = bf16[8] power(p0, p0)\n}\n"
      "ENTRY e {\n  a = bf16[8] parameter(0)\n  ROOT u = bf16[8] fusion(a), kind=kLoop, calls=f\n}\n",
      "HloModule r\nf {\n  p0 = f16[8] parameter(0)\n  ROOT r = f16[8] power(p0, p0)\n}\n"
      "ENTRY e {\n  a = f16[8] parameter(0)\n  ROOT u = f16[8] fusion(a), kind=kLoop, calls=f\n}\n",
      "HloModule r\nsum {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n  ROOT a = f32[] add(p, q)\n}\n"
      "f {\n  p0 = bf16[8,8] parameter(0)\n  c = f32[] constant(0)\n"
      "  ROOT r = f32[8] reduce(p0, c), dimensions={1}, to_apply=sum\n}\n"
      "ENTRY e {\n  a = bf16[8,8] parameter(0)\n  ROOT u = f32[8] fusion(a), kind=kInput, calls=f\n}\n",
      "HloModule r\nf {\n  p0 = bf16[8] parameter(0)\n"
      "  ROOT r = pred[8] compare(p0, p0), direction=LT, type=TOTALORDER\n}\n"
      "ENTRY e {\n  a = bf16[8] parameter(0)\n  ROOT u = pred[8] fusion(a), kind=kLoop, calls=f\n}\n",
  };
  for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
    ts_hlo_module_t *m = parse_text("hrej.hlo", texts[k]);
    if (!m) continue;
    bool flat;
    EXPECT(!cg_fusion_compiles(m->entry->root, &flat));
    ts_codegen_stats_t cs;
    ts_codegen_t *cg = compile_module(m, &cs);
    EXPECT_EQ(cs.fusions, 1);
    EXPECT_EQ(cs.compiled, 0);
    ts_codegen_destroy(cg);
    ts_hlo_module_destroy(m);
  }
}

int main(int argc, char **argv) {
  static const ts_test_case_t cases[] = {{"all", all},
                                         {"distinct", distinct},
                                         {"s32_ops", s32_ops},
                                         {"s32_compare_convert", s32_compare_convert},
                                         {"s32_layout", s32_layout},
                                         {"label", label},
                                         {"reduce_row_exp", reduce_row_exp},
                                         {"reduce_column", reduce_column},
                                         {"reduce_full", reduce_full},
                                         {"reduce_rank3", reduce_rank3},
                                         {"reduce_max_nan", reduce_max_nan},
                                         {"reduce_s32", reduce_s32},
                                         {"reduce_init_param", reduce_init_param},
                                         {"reduce_keys", reduce_keys},
                                         {"reduce_rejects", reduce_rejects},
                                         {"half_ops", half_ops},
                                         {"half_chain", half_chain},
                                         {"half_convert", half_convert},
                                         {"half_index", half_index},
                                         {"half_mixed", half_mixed},
                                         {"half_reduce", half_reduce},
                                         {"half_math", half_math},
                                         {"half_keys", half_keys},
                                         {"half_rejects", half_rejects}};
  int rc = ts_test_cases("test_codegen_kernels", argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
  ts_interp_release_buffers();
  if (strided_jit) LLVMOrcDisposeLLJIT(strided_jit);
  return rc;
}
