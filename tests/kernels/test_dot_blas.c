/* The dot kernel on BLAS for every layout it folds or packs: transposed and
 * contracting-dim-first operands, batch dims leading or not, several
 * contracting dims, interleaved free/contracting dims, bf16/f16 operands
 * converted in blocks (K beyond one block), f64 and c64. Each result is
 * checked against a plain loop over the dot's definition written here in
 * double (the interpreter evaluates dots through this same kernel, so it is
 * no independent oracle for it).
 *   test_dot_blas [CASE] */
#include "ts_test.h"
#include "ts_hlo.h"
#include "ts_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name;
  const char *lhs, *rhs, *out; /* shapes as HLO text */
  /* the dot's dimension numbers: lhs batch, lhs contracting, rhs batch and
   * rhs contracting dims, as HLO lists without braces ("" for none) */
  const char *dims[4];
} dot_case_t;

static const dot_case_t cases[] = {
    {"plain", "f32[33,47]", "f32[47,29]", "f32[33,29]", {"", "1", "", "0"}},
    {"lhs_contracting_first", "f32[47,33]", "f32[47,29]", "f32[33,29]", {"", "0", "", "0"}},
    {"rhs_transposed", "f32[33,47]", "f32[29,47]", "f32[33,29]", {"", "1", "", "1"}},
    {"both_transposed", "f32[47,33]", "f32[29,47]", "f32[33,29]", {"", "0", "", "1"}},
    {"batched", "f32[3,17,23]", "f32[3,23,19]", "f32[3,17,19]", {"0", "2", "0", "1"}},
    {"batch_inside", "f32[17,3,23]", "f32[23,3,19]", "f32[3,17,19]", {"1", "2", "1", "0"}},
    /* attention's scores: [b,s,h,d] x [b,t,h,d] -> [b,h,s,t] */
    {"attention", "f32[2,13,3,8]", "f32[2,11,3,8]", "f32[2,3,13,11]", {"0,2", "3", "0,2", "3"}},
    /* attention's context: [b,h,s,t] x [b,t,h,d] -> [b,h,s,d] (rhs contracting dim first of its block) */
    {"attention_context", "f32[2,3,13,11]", "f32[2,11,3,8]", "f32[2,3,13,8]", {"0,1", "3", "0,2", "1"}},
    /* small gemms per batch whose strided and transposed operands are copied
     * into contiguous panels first (rhs transposed with M >= 64; lhs
     * transposed with N >= 64; f64 as well) */
    {"attention_wide", "f32[2,64,3,8]", "f32[2,11,3,8]", "f32[2,3,64,11]", {"0,2", "3", "0,2", "3"}},
    {"attention_context_t", "f32[2,3,11,13]", "f32[2,11,3,64]", "f32[2,3,13,64]", {"0,1", "2", "0,2", "1"}},
    {"f64_attention_wide", "f64[2,64,3,8]", "f64[2,11,3,8]", "f64[2,3,64,11]", {"0,2", "3", "0,2", "3"}},
    {"two_contracting", "f32[5,7,9]", "f32[7,9,6]", "f32[5,6]", {"", "1,2", "", "0,1"}},
    {"contracting_reversed", "f32[5,9,7]", "f32[7,9,6]", "f32[5,6]", {"", "2,1", "", "0,1"}},
    {"interleaved", "f32[4,9,5]", "f32[9,6]", "f32[4,5,6]", {"", "1", "", "0"}},
    {"unit_dims", "f32[1,33,1,47]", "f32[47,1,29]", "f32[1,33,1,1,29]", {"", "3", "", "0"}},
    {"vector_matrix", "f32[47]", "f32[29,47]", "f32[29]", {"", "0", "", "1"}},
    {"outer", "f32[7]", "f32[5]", "f32[7,5]", {"", "", "", ""}},
    {"f32_long_k", "f32[1100,9]", "f32[1100,7]", "f32[9,7]", {"", "0", "", "0"}},
    {"bf16", "bf16[33,47]", "bf16[47,29]", "f32[33,29]", {"", "1", "", "0"}},
    {"bf16_out", "bf16[3,17,23]", "bf16[3,19,23]", "bf16[3,17,19]", {"0", "2", "0", "2"}},
    {"bf16_long_k", "bf16[9,1300]", "bf16[1300,7]", "f32[9,7]", {"", "1", "", "0"}},
    {"bf16_f32", "bf16[33,47]", "f32[47,29]", "f32[33,29]", {"", "1", "", "0"}},
    {"f16", "f16[47,33]", "f16[29,47]", "f16[33,29]", {"", "0", "", "1"}},
    {"f64_transposed", "f64[47,33]", "f64[47,29]", "f64[33,29]", {"", "0", "", "0"}},
    {"c64_batch_inside", "c64[7,3,5]", "c64[5,3,4]", "c64[3,7,4]", {"1", "2", "1", "0"}},
};

static const int64_t *list_of(const ts_hlo_instr_t *i, const char *name, int *n) {
  const ts_hlo_attr_t *a = ts_hlo_instr_attr(i, name);
  *n = a && a->kind == TS_ATTR_INT_LIST ? a->v.list.n : 0;
  return *n ? a->v.list.v : NULL;
}

static bool has(const int64_t *l, int n, int64_t d) {
  for (int k = 0; k < n; k++)
    if (l[k] == d) return true;
  return false;
}

/* Operand values: small integers over 8 (exact in bf16 and f16, so every
 * product and sum is exact in f32 up to these sizes unless rounded at the end). */
static void fill(const ts_shape_t *s, void *data, unsigned *seed, bool complex) {
  int64_t n = 1;
  for (int d = 0; d < s->rank; d++) n *= s->dims[d];
  for (int64_t i = 0; i < n * (complex ? 2 : 1); i++) {
    *seed = *seed * 1103515245u + 12345u;
    double v = (double)((int)((*seed >> 16) % 17) - 8) / 8.0;
    if (complex) ((float *)data)[i] = (float)v;
    else ts_store_f(s->elem, data, i, v);
  }
}

static int64_t count(const ts_shape_t *s) {
  int64_t n = 1;
  for (int d = 0; d < s->rank; d++) n *= s->dims[d];
  return n;
}

/* out[...] by the definition: for every output index (batch, lhs free, rhs
 * free), the sum over every contracting index of lhs * rhs. Complex values
 * as (re, im) pairs. */
static void reference(const ts_hlo_instr_t *dot, const ts_shape_t *ls, const ts_shape_t *rs, const void *l,
                      const void *r, bool complex, double *want) {
  int nlb, nrb, nlc, nrc;
  const int64_t *lb = list_of(dot, "lhs_batch_dims", &nlb), *rb = list_of(dot, "rhs_batch_dims", &nrb);
  const int64_t *lc = list_of(dot, "lhs_contracting_dims", &nlc), *rc = list_of(dot, "rhs_contracting_dims", &nrc);
  int lfree[16], nlf = 0, rfree[16], nrf = 0;
  for (int d = 0; d < ls->rank; d++)
    if (!has(lb, nlb, d) && !has(lc, nlc, d)) lfree[nlf++] = d;
  for (int d = 0; d < rs->rank; d++)
    if (!has(rb, nrb, d) && !has(rc, nrc, d)) rfree[nrf++] = d;
  const ts_shape_t *os = dot->shape;
  int64_t nout = count(os), ncon = 1;
  for (int k = 0; k < nlc; k++) ncon *= ls->dims[lc[k]];
  for (int64_t o = 0; o < nout; o++) {
    int64_t oi[16], rem = o;
    for (int d = os->rank - 1; d >= 0; d--) oi[d] = rem % os->dims[d], rem /= os->dims[d];
    int64_t li[16] = {0}, ri[16] = {0};
    for (int k = 0; k < nlb; k++) li[lb[k]] = ri[rb[k]] = oi[k];
    for (int k = 0; k < nlf; k++) li[lfree[k]] = oi[nlb + k];
    for (int k = 0; k < nrf; k++) ri[rfree[k]] = oi[nlb + nlf + k];
    double re = 0, im = 0;
    for (int64_t c = 0; c < ncon; c++) {
      int64_t crem = c;
      for (int k = nlc - 1; k >= 0; k--) {
        int64_t v = crem % ls->dims[lc[k]];
        crem /= ls->dims[lc[k]];
        li[lc[k]] = v, ri[rc[k]] = v;
      }
      int64_t lo = 0, ro = 0;
      for (int d = 0; d < ls->rank; d++) lo = lo * ls->dims[d] + li[d];
      for (int d = 0; d < rs->rank; d++) ro = ro * rs->dims[d] + ri[d];
      if (complex) {
        const float *a = (const float *)l + 2 * lo, *b = (const float *)r + 2 * ro;
        re += (double)a[0] * b[0] - (double)a[1] * b[1];
        im += (double)a[0] * b[1] + (double)a[1] * b[0];
      } else {
        re += ts_load_f(ls->elem, l, lo) * ts_load_f(rs->elem, r, ro);
      }
    }
    if (complex) want[2 * o] = re, want[2 * o + 1] = im;
    else want[o] = re;
  }
}

static int run_case(const dot_case_t *c) {
  int before = failures;
  static const char *const attrs[4] = {"lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims",
                                       "rhs_contracting_dims"};
  char dnums[512] = "", text[1024];
  size_t len = 0;
  for (int k = 0; k < 4; k++) /* batch dims only where there are some */
    if (k % 2 || *c->dims[k])
      len += (size_t)snprintf(dnums + len, sizeof dnums - len, "%s%s={%s}", len ? ", " : "", attrs[k], c->dims[k]);
  snprintf(text, sizeof text,
           "HloModule m\nENTRY e {\n  a = %s parameter(0)\n  b = %s parameter(1)\n  ROOT d = %s dot(a, b), %s\n}\n",
           c->lhs, c->rhs, c->out, dnums);
  ts_source_t src = {c->name, text, strlen(text)};
  ts_diag_t diag = {0};
  ts_hlo_module_t *m = NULL;
  ts_status_t st = ts_hlo_parse(&src, NULL, &m, &diag);
  if (st == TS_OK) st = ts_hlo_verify(m, NULL, &diag);
  EXPECT_EQ(st, TS_OK);
  if (st != TS_OK) {
    fprintf(stderr, "%s: %s", c->name, diag.text ? diag.text : "");
    ts_diag_free(&diag);
    ts_hlo_module_destroy(m);
    return failures - before;
  }
  const ts_hlo_instr_t *dot = m->entry->root;
  const ts_shape_t *ls = m->entry->params[0]->shape, *rs = m->entry->params[1]->shape, *os = dot->shape;
  bool complex = os->elem == TS_C64;
  size_t lb = (size_t)count(ls) * (size_t)ts_elem_storage_bytes(ls->elem);
  size_t rbytes = (size_t)count(rs) * (size_t)ts_elem_storage_bytes(rs->elem);
  size_t ob = (size_t)count(os) * (size_t)ts_elem_storage_bytes(os->elem);
  void *l = calloc(1, lb + 8), *r = calloc(1, rbytes + 8), *o = calloc(1, ob + 8);
  double *want = calloc((size_t)count(os) * 2 + 1, sizeof *want);
  unsigned seed = 7;
  fill(ls, l, &seed, complex);
  fill(rs, r, &seed, complex);
  reference(dot, ls, rs, l, r, complex, want);
  ts_array_t in[2] = {{ls->elem, ls->rank, ls->dims, l}, {rs->elem, rs->rank, rs->dims, r}};
  ts_array_t out = {os->elem, os->rank, os->dims, o};
  ts_kernel_ctx_t ctx = {.diag = &diag};
  EXPECT_EQ(ts_kernel_for(TS_OP_DOT)(&ctx, dot, in, 2, &out, 1), TS_OK);
  /* Exact in f32 (inputs are multiples of 1/8 and sums stay far below 2^24
   * eighths); a bf16/f16 result is the exact sum rounded once. */
  int64_t n = count(os) * (complex ? 2 : 1), bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double got = complex ? ((const float *)o)[i] : ts_load_f(os->elem, o, i);
    double w = want[i];
    if (os->elem == TS_BF16 || os->elem == TS_F16) {
      unsigned char t[8];
      ts_store_f(os->elem, t, 0, w);
      w = ts_load_f(os->elem, t, 0);
    }
    if (got != w && bad++ < 3)
      fprintf(stderr, "%s: element %lld: got %.9g, want %.9g\n", c->name, (long long)i, got, w);
  }
  EXPECT_EQ(bad, 0);
  ts_kernel_ctx_free(&ctx);
  ts_diag_free(&diag);
  free(l), free(r), free(o), free(want);
  ts_hlo_module_destroy(m);
  return failures - before;
}

int main(int argc, char **argv) {
  int n = (int)(sizeof cases / sizeof cases[0]), ran = 0;
  for (int k = 0; k < n; k++) {
    if (argc > 1 && strcmp(argv[1], cases[k].name) != 0) continue;
    run_case(&cases[k]);
    ran++;
  }
  if (!ran) {
    fprintf(stderr, "test_dot_blas: no case '%s'\n", argc > 1 ? argv[1] : "");
    return 2;
  }
  if (failures) fprintf(stderr, "test_dot_blas: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
