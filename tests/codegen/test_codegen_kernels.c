/* Every fusion kind (tests/fusion/fusion_cases.h) through codegen/: the
 * fusions it must compile are compiled, and each compiled kernel, called as
 * the runtime calls it, agrees with the interpreter evaluating the same
 * fused computation (over kernels/ and libm) on seeded random and edge-value
 * inputs: exactly for arithmetic, within a few ULPs where the compiled math
 * functions differ from libm, NaN for NaN, infinities and signed zeros
 * equal. */
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
 * of its module for the moment) and its compiled kernel on the same args. */
static void compare(ts_hlo_module_t *m, const ts_hlo_instr_t *fu, ts_kernel_fn fn, uint64_t seed, bool edge) {
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
        ok = close(g, w);
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

static void check_case(const fusion_case_t *fc) {
  fprintf(stderr, "case %s\n", fc->name);
  ts_hlo_module_t *m = parse_text("case.hlo", fc->text);
  if (!m) return;
  ts_codegen_t *cg = NULL;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_fusion_run(m, NULL, NULL, &d), TS_OK);
  ts_codegen_stats_t cs;
  ts_status_t st = ts_codegen_compile(m, NULL, &cg, &cs, &d);
  if (st != TS_OK) fprintf(stderr, "%s\n", d.text ? d.text : "?");
  EXPECT_EQ(st, TS_OK);
  EXPECT_EQ(cs.fusions, fc->loop + fc->input);
  EXPECT_EQ(cs.compiled, fc->compiled);
  for (int k = 0; k < m->entry->ninstrs; k++) {
    const ts_hlo_instr_t *i = m->entry->instrs[k];
    ts_kernel_fn fn = i->op == TS_OP_FUSION ? ts_codegen_kernel(cg, i) : NULL;
    if (!fn) continue;
    for (int trial = 0; trial < 6; trial++) compare(m, i, fn, 100 + (uint64_t)trial, trial % 2 == 1);
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
  ts_codegen_t *cg = NULL;
  ts_diag_t d = {0};
  ts_codegen_stats_t cs;
  EXPECT_EQ(ts_codegen_compile(m, NULL, &cg, &cs, &d), TS_OK);
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
    for (int trial = 0; fu && k[f] && trial < 2; trial++) compare(m, fu, k[f], 7 + (uint64_t)trial, trial == 1);
  }
  EXPECT(k[0] == k[1]);
  EXPECT(k[2] != k[0] && k[3] != k[0] && k[3] != k[2]);
  EXPECT(ts_codegen_kernel(cg, e->root) == NULL);
  ts_diag_free(&d);
  ts_codegen_destroy(cg);
  ts_hlo_module_destroy(m);
}

int main(int argc, char **argv) {
  static const ts_test_case_t cases[] = {{"all", all}, {"distinct", distinct}};
  int rc = ts_test_cases("test_codegen_kernels", argc, argv, cases, 2);
  ts_interp_release_buffers();
  return rc;
}
