/* The fusion pass on every fusion kind (fusion_cases.h): the fusions it
 * makes (kinds, counts, nothing expensive duplicated), that the fused module
 * verifies and prints back to itself, and that the interpreter computes the
 * same values from the fused module as from the original, bit for bit, on
 * seeded random inputs and on edge values (+-0, +-inf, NaN, subnormals,
 * extremes). */
#include "fusion_cases.h"
#include "ts_fusion.h"
#include "ts_interp.h"
#include "ts_test.h"

#include <math.h>
#include <stdlib.h>

static ts_hlo_module_t *parse(const char *text) {
  ts_source_t src = {"case.hlo", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  ts_diag_t d = {0};
  if (ts_hlo_parse(&src, NULL, &m, &d) != TS_OK || ts_hlo_verify(m, NULL, &d) != TS_OK) {
    fprintf(stderr, "%s\n", d.text ? d.text : "parse failed");
    ts_hlo_module_destroy(m);
    m = NULL;
  }
  ts_diag_free(&d);
  return m;
}

static const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 1e-45f,
                              88.7f, -103.0f, 3.4e38f, -3.4e38f, 0.5f, 2.0f, 1.17549435e-38f, 7.0f, -0.625f};

/* Arguments: seeded random values, or edge values cycled through the f32
 * parameters (the others random). */
static ts_status_t make_args(const ts_hlo_module_t *m, uint64_t seed, bool edge, ts_value_t **args) {
  TS_CHECK(ts_interp_random_args(m, seed, args));
  if (!edge) return TS_OK;
  for (int p = 0; p < m->entry->nparams; p++) {
    ts_array_t *a = &args[p]->a;
    if (a->elem != TS_F32) continue;
    float *f = a->data;
    for (int64_t i = 0; i < ts_array_count(a); i++) f[i] = edges[(i * 7 + p * 3) % (int64_t)(sizeof edges / sizeof edges[0])];
  }
  return TS_OK;
}

static bool same_bits(ts_value_t *a, ts_value_t *b) {
  ts_array_t x[16], y[16];
  int n = ts_value_leaves(a, x, 16);
  if (n != ts_value_leaves(b, y, 16)) return false;
  for (int k = 0; k < n; k++) {
    size_t bytes = ts_array_bytes(&x[k]);
    if (bytes != ts_array_bytes(&y[k])) return false;
    if (x[k].elem == TS_F32) {
      const float *p = x[k].data, *q = y[k].data;
      for (int64_t i = 0; i < ts_array_count(&x[k]); i++)
        if (!(isnan(p[i]) && isnan(q[i])) && memcmp(&p[i], &q[i], 4) != 0) {
          fprintf(stderr, "  leaf %d [%lld]: %.9g vs %.9g\n", k, (long long)i, p[i], q[i]);
          return false;
        }
    } else if (memcmp(x[k].data, y[k].data, bytes) != 0) {
      return false;
    }
  }
  return true;
}

static ts_value_t *run(const ts_hlo_module_t *m, ts_value_t **args) {
  ts_interp_t *it = NULL;
  ts_value_t *out = NULL;
  ts_diag_t d = {0};
  if (ts_interp_create(m, NULL, &it, &d) != TS_OK || ts_interp_run(it, args, &out, &d) != TS_OK) {
    fprintf(stderr, "interp: %s\n", d.text ? d.text : "failed");
    ts_value_unref(out);
    out = NULL;
  }
  ts_interp_destroy(it);
  ts_diag_free(&d);
  return out;
}

static int count(const ts_hlo_module_t *m, const char *kind) {
  int n = 0;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      const ts_hlo_instr_t *i = m->comps[c]->instrs[k];
      if (i->op != TS_OP_FUSION) continue;
      const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, "kind");
      n += a && strcmp(a->v.s, kind) == 0;
    }
  return n;
}

static void check_case(const fusion_case_t *fc) {
  fprintf(stderr, "case %s\n", fc->name);
  ts_hlo_module_t *m = parse(fc->text), *f = parse(fc->text);
  EXPECT(m && f);
  if (!m || !f) goto done;
  ts_fusion_stats_t st;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_fusion_run(f, NULL, &st, &d), TS_OK);
  ts_status_t vs = ts_hlo_verify(f, NULL, &d);
  if (vs != TS_OK) fprintf(stderr, "%s\n", d.text);
  EXPECT_EQ(vs, TS_OK);
  ts_diag_free(&d);
  EXPECT_EQ(count(f, "kLoop"), fc->loop);
  EXPECT_EQ(count(f, "kInput"), fc->input);
  EXPECT_EQ(st.loop_fusions, fc->loop);
  EXPECT_EQ(st.input_fusions, fc->input);
  /* Fused text parses back to the same text. */
  ts_buf_t t1 = {0}, t2 = {0};
  EXPECT_EQ(ts_hlo_print(f, &t1), TS_OK);
  EXPECT(strstr(t1.data, "calls=%fused_computation") != NULL);
  ts_hlo_module_t *g = parse(t1.data);
  EXPECT(g != NULL);
  if (g) {
    EXPECT_EQ(ts_hlo_print(g, &t2), TS_OK);
    EXPECT_STREQ(t2.data, t1.data);
  }
  ts_hlo_module_destroy(g);
  ts_buf_free(&t1);
  ts_buf_free(&t2);
  if (strcmp(fc->name, "no_duplicate_expensive") == 0) {
    int nexp = 0; /* exponential is computed once in the whole module */
    for (int c = 0; c < f->ncomps; c++)
      for (int k = 0; k < f->comps[c]->ninstrs; k++) nexp += f->comps[c]->instrs[k]->op == TS_OP_EXPONENTIAL;
    EXPECT_EQ(nexp, 1);
  }
  for (int trial = 0; trial < 4; trial++) {
    ts_value_t *args[8] = {0};
    int np = m->entry->nparams;
    EXPECT_EQ(make_args(m, 11 + (uint64_t)trial, trial >= 2, args), TS_OK);
    ts_value_t *want = run(m, args), *got = run(f, args);
    EXPECT(want && got);
    if (want && got) EXPECT(same_bits(got, want));
    ts_value_unref(want);
    ts_value_unref(got);
    for (int p = 0; p < np; p++) ts_value_unref(args[p]);
  }
done:
  ts_hlo_module_destroy(m);
  ts_hlo_module_destroy(f);
}

#define CASE(n) \
  static void n(void) { check_case(&fusion_cases[n##_i]); }
/* fusion_cases' order: each case checks its own entry */
enum { elementwise_i, math_i, transcendental_i, select_compare_convert_i, index_maps_i, slice_concat_iota_i,
       reduce_input_i, no_duplicate_expensive_i, pred_output_i, bf16_mixed_i, bf16_reduce_i };
CASE(elementwise)
CASE(math)
CASE(transcendental)
CASE(select_compare_convert)
CASE(index_maps)
CASE(slice_concat_iota)
CASE(reduce_input)
CASE(no_duplicate_expensive)
CASE(pred_output)
CASE(bf16_mixed)
CASE(bf16_reduce)

int main(int argc, char **argv) {
  static const ts_test_case_t cases[] = {
      {"elementwise", elementwise}, {"math", math}, {"transcendental", transcendental},
      {"select_compare_convert", select_compare_convert}, {"index_maps", index_maps},
      {"slice_concat_iota", slice_concat_iota}, {"reduce_input", reduce_input},
      {"no_duplicate_expensive", no_duplicate_expensive}, {"pred_output", pred_output},
      {"bf16_mixed", bf16_mixed}, {"bf16_reduce", bf16_reduce},
  };
  int rc = ts_test_cases("test_fusion", argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
  ts_interp_release_buffers();
  return rc;
}
