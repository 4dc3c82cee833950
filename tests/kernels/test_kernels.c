/* Unit tests of kernels/: the runtime's kernel table covers what the
 * interpreter evaluates, constants written by ts_kernel_literal, and a dot
 * whose values are worked out by hand. `test_kernels SCENARIO` runs one. */
#include "ts_hlo.h"
#include "ts_kernels.h"

#include "ts_test.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The kernel table covers the array opcodes and leaves to the executors
 * (the runtime's program, the interpreter's evaluator) what they handle
 * themselves: parameters, control flow, out-of-range opcodes. */
static int test_table(void) {
  int before = failures;
  int n = 0;
  for (int op = 0; op < TS_OP_COUNT; op++) n += ts_kernel_for((ts_opcode_t)op) != NULL;
  EXPECT(ts_kernel_for(TS_OP_DOT) != NULL && ts_kernel_for(TS_OP_ADD) != NULL);
  EXPECT(ts_kernel_for(TS_OP_TOPK) != NULL && ts_kernel_for(TS_OP_CONVOLUTION) != NULL);
  EXPECT(ts_kernel_for(TS_OP_PARAMETER) == NULL && ts_kernel_for(TS_OP_WHILE) == NULL);
  EXPECT(ts_kernel_for(TS_OP_COUNT) == NULL);
  EXPECT(n > 50);
  return failures - before;
}

/* Literals narrowed to the array's type: f32 rounds to nearest even, s8
 * wraps (XLA's convert of an integer literal is a truncation to the width),
 * pred is v != 0; an elided literal leaves the (zeroed) buffer as it is; a
 * count that is not the array's is an error. */
static int test_literal(void) {
  int before = failures;
  int64_t d3[] = {3};
  double f[] = {0.1, 1.0 / 3.0, -2.5};
  ts_literal_t lf = {.count = 3, .f = f};
  float fo[3] = {0};
  ts_array_t af = {TS_F32, 1, d3, fo};
  EXPECT_EQ(ts_kernel_literal(&lf, &af), TS_OK);
  EXPECT_EQ(fo[0], 0.1f);
  EXPECT_EQ(fo[1], 1.0f / 3.0f);
  EXPECT_EQ(fo[2], -2.5f);

  int64_t iv[] = {300, -129, 7};
  ts_literal_t li = {.count = 3, .i = iv};
  int8_t so[3] = {0};
  ts_array_t as = {TS_S8, 1, d3, so};
  EXPECT_EQ(ts_kernel_literal(&li, &as), TS_OK);
  EXPECT_EQ(so[0], 44);  /* 300 - 256 */
  EXPECT_EQ(so[1], 127); /* -129 + 256 */
  EXPECT_EQ(so[2], 7);

  int64_t pv[] = {0, 2, -1};
  ts_literal_t lp = {.count = 3, .i = pv};
  uint8_t po[3] = {9, 9, 9};
  ts_array_t ap = {TS_PRED, 1, d3, po};
  EXPECT_EQ(ts_kernel_literal(&lp, &ap), TS_OK);
  EXPECT_EQ(po[0], 0);
  EXPECT_EQ(po[1], 1);
  EXPECT_EQ(po[2], 1);

  int64_t d1[] = {1};
  double c[] = {1.5, -0.25};
  ts_literal_t lc = {.count = 1, .f = c};
  float co[2] = {0};
  ts_array_t ac = {TS_C64, 1, d1, co};
  EXPECT_EQ(ts_kernel_literal(&lc, &ac), TS_OK);
  EXPECT_EQ(co[0], 1.5f);
  EXPECT_EQ(co[1], -0.25f);

  ts_literal_t le = {.elided = true};
  float eo[3] = {0};
  ts_array_t ae = {TS_F32, 1, d3, eo};
  EXPECT_EQ(ts_kernel_literal(&le, &ae), TS_OK);
  EXPECT_EQ(eo[0] + eo[1] + eo[2], 0.0f);

  ts_literal_t lbad = {.count = 2, .f = f};
  EXPECT_EQ(ts_kernel_literal(&lbad, &af), TS_ERR_INVALID_ARGUMENT);
  return failures - before;
}

/* The module of a test's text, or NULL after counting a failure and
 * printing the parser's error (diag is freed then). */
static ts_hlo_module_t *parse_text(const char *text, ts_diag_t *diag) {
  ts_source_t src = {"<test>", text, strlen(text)};
  ts_hlo_module_t *m = NULL;
  EXPECT_EQ(ts_hlo_parse(&src, NULL, &m, diag), TS_OK);
  if (!m) {
    fprintf(stderr, "%s", diag->text ? diag->text : "");
    ts_diag_free(diag);
  }
  return m;
}

/* f32[2,3] x f32[3,2] -> f32[2,2] through the runtime's dot (OpenBLAS sgemm),
 * and the same contraction with the lhs transposed (contracting dim 0):
 *   [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]]. */
static int test_dot(void) {
  int before = failures;
  static const char text[] =
      "HloModule m\n"
      "ENTRY e {\n"
      "  a = f32[2,3] parameter(0)\n"
      "  b = f32[3,2] parameter(1)\n"
      "  at = f32[3,2] parameter(2)\n"
      "  d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  ROOT dt = f32[2,2] dot(at, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
      "}\n";
  ts_diag_t diag = {0};
  ts_hlo_module_t *m = parse_text(text, &diag);
  if (!m) return failures - before;
  float a[] = {1, 2, 3, 4, 5, 6}, b[] = {7, 8, 9, 10, 11, 12}, at[] = {1, 4, 2, 5, 3, 6}, out[4];
  int64_t d23[] = {2, 3}, d32[] = {3, 2}, d22[] = {2, 2};
  ts_kernel_ctx_t ctx = {.diag = &diag};
  const char *names[] = {"d", "dt"};
  for (int k = 0; k < 2; k++) {
    const ts_hlo_instr_t *i = ts_hlo_comp_find_instr(m->entry, names[k]);
    EXPECT(i != NULL);
    if (!i) continue;
    ts_array_t in[2] = {k == 0 ? (ts_array_t){TS_F32, 2, d23, a} : (ts_array_t){TS_F32, 2, d32, at},
                        {TS_F32, 2, d32, b}};
    ts_array_t o = {TS_F32, 2, d22, out};
    memset(out, 0, sizeof out);
    EXPECT_EQ(ts_kernel_for(TS_OP_DOT)(&ctx, i, in, 2, &o, 1), TS_OK);
    EXPECT_EQ(out[0], 58.0f);
    EXPECT_EQ(out[1], 64.0f);
    EXPECT_EQ(out[2], 139.0f);
    EXPECT_EQ(out[3], 154.0f);
  }
  ts_kernel_ctx_free(&ctx);
  ts_diag_free(&diag);
  ts_hlo_module_destroy(m);
  return failures - before;
}

/* XLA's maximum (max = true) or minimum of two f32, as the definition
 * reads: NaN propagates (the first NaN), -0 < +0. */
static float xla_minmax(bool max, float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return (signbit(a) != 0) == max ? b : a;
  return (max ? a > b : a < b) ? a : b;
}

static uint32_t bits_of(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return u;
}

/* f32 max and min reduces over rows of every length from 1 to 40 and 128
 * (the vector loop, its tail and rows shorter than one step): values of
 * both signs, +-0 (the maximum of -0 and +0 is +0, the minimum -0), +-inf,
 * denormals and the extremes, each result's bits against the definition
 * applied in row order (among non-NaN values any order gives the same
 * bits); rows with one NaN, whose bits must come out whatever the order,
 * and a NaN init. */
static int test_minmax_reduce(void) {
  int before = failures;
  static const char form_text[] =
      "HloModule m\n"
      "mx { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT r = f32[] maximum(a, b) }\n"
      "mn { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT r = f32[] minimum(a, b) }\n"
      "ENTRY e {\n"
      "  x = f32[6,%d] parameter(0)\n"
      "  z = f32[] parameter(1)\n"
      "  hi = f32[6] reduce(x, z), dimensions={1}, to_apply=mx\n"
      "  ROOT lo = f32[6] reduce(x, z), dimensions={1}, to_apply=mn\n"
      "}\n";
  static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1e-45f, -1e-45f, 1e-40f, -3e-39f,
                                  FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1.0f, -1.0f, 0.5f, -2.5f};
  enum { R = 6, W = 128 };
  float x[R * W], out[R];
  int64_t dx[2] = {R, 0}, dout[1] = {R};
  unsigned seed = 7;
  for (int w = 1; w <= W; w = w < 40 ? w + 1 : W + 1) {
    char text[sizeof form_text + 16];
    snprintf(text, sizeof text, form_text, w);
    ts_diag_t diag = {0};
    ts_hlo_module_t *m = parse_text(text, &diag);
    if (!m) return failures - before;
    const ts_hlo_instr_t *red[2] = {ts_hlo_comp_find_instr(m->entry, "hi"), ts_hlo_comp_find_instr(m->entry, "lo")};
    EXPECT(red[0] != NULL && red[1] != NULL);
    ts_kernel_ctx_t ctx = {.diag = &diag};
    dx[1] = w;
    for (int form = 0; form < 4 && red[0] && red[1]; form++) { /* 0, 1: no NaN; 2: one NaN a row; 3: a NaN init */
      for (int i = 0; i < R * w; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = seed >> 8;
        x[i] = r % 3 == 0 ? special[r / 3 % 16] : (float)((int)(r % 2001) - 1000) / 64.0f;
        if (form == 1) x[i] = (r & 1) ? 0.0f : -0.0f; /* rows of zeros of both signs */
      }
      if (form == 2)
        for (int row = 0; row < R; row++) {
          uint32_t nan = 0x7fc00000u | (uint32_t)(row + 1) | (row & 1 ? 0x80000000u : 0);
          memcpy(&x[row * w + (row * 5) % w], &nan, sizeof nan);
        }
      uint32_t zn = 0xffc00123u;
      float z;
      memcpy(&z, &zn, sizeof z);
      for (int k = 0; k < 2; k++) {
        float init = form == 3 ? z : k == 0 ? -INFINITY : INFINITY;
        ts_array_t in[2] = {{TS_F32, 2, dx, x}, {TS_F32, 0, NULL, &init}};
        ts_array_t o = {TS_F32, 1, dout, out};
        EXPECT_EQ(ts_kernel_for(TS_OP_REDUCE)(&ctx, red[k], in, 2, &o, 1), TS_OK);
        for (int row = 0; row < R; row++) {
          float want = init;
          for (int j = 0; j < w; j++) want = xla_minmax(k == 0, want, x[row * w + j]);
          if (bits_of(out[row]) != bits_of(want)) {
            fprintf(stderr, "%s, row length %d, form %d, row %d: got %08x, want %08x\n", k ? "min" : "max", w, form,
                    row, bits_of(out[row]), bits_of(want));
            failures++;
          }
        }
      }
    }
    ts_kernel_ctx_free(&ctx);
    ts_diag_free(&diag);
    ts_hlo_module_destroy(m);
  }
  return failures - before;
}

static const ts_test_group_t scenarios[] = {
    {"table", test_table},
    {"literal", test_literal},
    {"dot", test_dot},
    {"minmax_reduce", test_minmax_reduce},
};

int main(int argc, char **argv) {
  return ts_test_main("test_kernels", argc, argv, scenarios, (int)(sizeof scenarios / sizeof scenarios[0]));
}
