/* Element conversion: hand-derived bit patterns for every float format,
 * exhaustive round trips, ties to even between neighbours, and XLA's
 * integer rules. No ml_dtypes here (not installable offline): each golden
 * below is worked out from the format's definition (sign, exponent bits,
 * bias, mantissa bits) in the comment next to it. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ts_hlo.h"
#include "ts_test.h"

#define ENC(t, v, bits) EXPECT(ts_elem_from_double(t, v) == (bits))
#define DEC(t, bits, v) EXPECT(ts_elem_to_double(t, bits) == (v))
#define P2(k) ldexp(1.0, k)

static void test_bf16(void) {
  ts_elem_t t = TS_BF16;
  ENC(t, 1.0, 0x3F80);                 /* exp 127, mantissa 0 */
  ENC(t, 1 + P2(-8), 0x3F80);          /* halfway 0x3F80/0x3F81: even */
  ENC(t, 1 + 3 * P2(-8), 0x3F82);      /* halfway 0x3F81/0x3F82: even */
  ENC(t, 1 + P2(-8) + P2(-30), 0x3F81); /* just above halfway */
  ENC(t, -2.0, 0xC000);
  ENC(t, (2 - P2(-7)) * P2(127), 0x7F7F); /* max */
  ENC(t, (2 - P2(-8)) * P2(127), 0x7F80); /* halfway max/2^128: even -> inf */
  ENC(t, P2(-133), 0x0001);               /* least subnormal 2^(1-127-7) */
  ENC(t, P2(-134), 0x0000);               /* halfway 0 / least: even */
  ENC(t, INFINITY, 0x7F80);
  ENC(t, -INFINITY, 0xFF80);
  ENC(t, NAN, 0x7FC0);
  DEC(t, 0x0001, P2(-133));
  DEC(t, 0x3F81, 1 + P2(-7));
  EXPECT(isnan(ts_elem_to_double(t, 0x7F81)));
}

static void test_f16(void) {
  ts_elem_t t = TS_F16;
  ENC(t, 1.0, 0x3C00);
  ENC(t, 65504, 0x7BFF);             /* max: 2^15 * (2 - 2^-10) */
  ENC(t, 65519.99, 0x7BFF);          /* below halfway to 2^16 */
  ENC(t, 65520, 0x7C00);             /* halfway, 0x7BFF is odd -> inf */
  ENC(t, P2(-24), 0x0001);           /* least subnormal 2^(1-15-10) */
  ENC(t, P2(-25), 0x0000);           /* halfway 0 / 2^-24: even */
  ENC(t, P2(-25) * 1.000001, 0x0001);
  ENC(t, 3 * P2(-25), 0x0002);       /* halfway 1/2 ulps: even */
  ENC(t, P2(-14), 0x0400);           /* least normal */
  ENC(t, -0.0, 0x8000);
  ENC(t, 0.1, 0x2E66);               /* 0.1 = 1.6 * 2^-4: mantissa 0x266 (0.6*1024 = 614.4) */
  ENC(t, -NAN, 0xFE00);
  DEC(t, 0x7BFF, 65504);
  DEC(t, 0x03FF, 1023 * P2(-24));
  DEC(t, 0xFC00, -INFINITY);
}

static void test_f8(void) {
  /* e5m2, bias 15, IEEE */
  ENC(TS_F8E5M2, 57344, 0x7B);       /* 1.75 * 2^15 */
  ENC(TS_F8E5M2, 61440, 0x7C);       /* halfway 57344 / 2^16, odd -> inf */
  ENC(TS_F8E5M2, 1.0, 0x3C);
  ENC(TS_F8E5M2, P2(-16), 0x01);     /* 2^(1-15-2) */
  ENC(TS_F8E5M2, NAN, 0x7E);
  DEC(TS_F8E5M2, 0x7C, INFINITY);
  /* e4m3, bias 7, IEEE */
  ENC(TS_F8E4M3, 1.0, 0x38);
  ENC(TS_F8E4M3, 240, 0x77);         /* 1.875 * 2^7 */
  ENC(TS_F8E4M3, 248, 0x78);         /* halfway 240 / 256 -> inf */
  ENC(TS_F8E4M3, P2(-9), 0x01);      /* 2^(1-7-3) */
  DEC(TS_F8E4M3, 0xF8, -INFINITY);
  /* e4m3fn: bias 7, only S.1111.111 is NaN */
  ENC(TS_F8E4M3FN, 448, 0x7E);       /* 1.75 * 2^8 */
  ENC(TS_F8E4M3FN, 464, 0x7E);       /* halfway 448 / 480: 0x7E even */
  ENC(TS_F8E4M3FN, 480, 0x7F);       /* rounds past max: NaN */
  ENC(TS_F8E4M3FN, 1e6, 0x7F);
  ENC(TS_F8E4M3FN, -1e6, 0xFF);
  ENC(TS_F8E4M3FN, INFINITY, 0x7F);
  ENC(TS_F8E4M3FN, NAN, 0x7F);
  ENC(TS_F8E4M3FN, 1.0, 0x38);
  ENC(TS_F8E4M3FN, P2(-9), 0x01);
  ENC(TS_F8E4M3FN, -0.0, 0x80);
  DEC(TS_F8E4M3FN, 0x78, 256);       /* exponent 1111 is an ordinary binade */
  EXPECT(isnan(ts_elem_to_double(TS_F8E4M3FN, 0x7F)));
  EXPECT(isnan(ts_elem_to_double(TS_F8E4M3FN, 0xFF)));
  /* e4m3fnuz: bias 8, NaN 0x80, no -0 */
  ENC(TS_F8E4M3FNUZ, 1.0, 0x40);
  ENC(TS_F8E4M3FNUZ, 240, 0x7F);     /* 1.875 * 2^7 */
  ENC(TS_F8E4M3FNUZ, P2(-10), 0x01); /* 2^(1-8-3) */
  ENC(TS_F8E4M3FNUZ, -0.0, 0x00);
  ENC(TS_F8E4M3FNUZ, -P2(-12), 0x00); /* negative underflow: +0 */
  ENC(TS_F8E4M3FNUZ, NAN, 0x80);
  ENC(TS_F8E4M3FNUZ, -1000, 0x80);
  ENC(TS_F8E4M3FNUZ, -1.0, 0xC0);
  EXPECT(isnan(ts_elem_to_double(TS_F8E4M3FNUZ, 0x80)));
  /* e5m2fnuz: bias 16 */
  ENC(TS_F8E5M2FNUZ, 1.0, 0x40);
  ENC(TS_F8E5M2FNUZ, 57344, 0x7F);   /* 1.75 * 2^15 */
  ENC(TS_F8E5M2FNUZ, P2(-17), 0x01); /* 2^(1-16-2) */
  ENC(TS_F8E5M2FNUZ, INFINITY, 0x80);
  /* e4m3b11fnuz: bias 11 */
  ENC(TS_F8E4M3B11FNUZ, 1.0, 0x58);
  ENC(TS_F8E4M3B11FNUZ, 30, 0x7F);   /* 1.875 * 2^4 */
  ENC(TS_F8E4M3B11FNUZ, 31, 0x80);   /* halfway 30 / 32 rounds past max */
  ENC(TS_F8E4M3B11FNUZ, P2(-13), 0x01);
  /* e3m4: bias 3, IEEE */
  ENC(TS_F8E3M4, 1.0, 0x30);
  ENC(TS_F8E3M4, 15.5, 0x6F);        /* 1.9375 * 2^3 */
  ENC(TS_F8E3M4, 16, 0x70);          /* inf */
  ENC(TS_F8E3M4, P2(-6), 0x01);      /* 2^(1-3-4) */
  /* e8m0fnu: 2^(e-127), unsigned, 0xFF NaN */
  ENC(TS_F8E8M0FNU, 1.0, 0x7F);
  ENC(TS_F8E8M0FNU, P2(-127), 0x00);
  ENC(TS_F8E8M0FNU, P2(127), 0xFE);
  ENC(TS_F8E8M0FNU, P2(128), 0xFF);
  ENC(TS_F8E8M0FNU, 0.0, 0x00);
  ENC(TS_F8E8M0FNU, -1.0, 0xFF);
  ENC(TS_F8E8M0FNU, 1.5, 0x80);      /* tie 0x7F/0x80: even field */
  ENC(TS_F8E8M0FNU, 3.0, 0x80);      /* tie 0x80/0x81: even field */
  ENC(TS_F8E8M0FNU, 6.0, 0x82);      /* tie 0x81/0x82 */
  ENC(TS_F8E8M0FNU, 1.4, 0x7F);
  ENC(TS_F8E8M0FNU, 1.6, 0x80);
  DEC(TS_F8E8M0FNU, 0x00, P2(-127));
  EXPECT(isnan(ts_elem_to_double(TS_F8E8M0FNU, 0xFF)));
  /* e2m1fn: bias 1, values 0 .5 1 1.5 2 3 4 6, no inf/NaN */
  ENC(TS_F4E2M1FN, 1.0, 0x2);
  ENC(TS_F4E2M1FN, 6.0, 0x7);
  ENC(TS_F4E2M1FN, 7.0, 0x7);        /* saturates */
  ENC(TS_F4E2M1FN, 5.0, 0x6);        /* tie 4 (0x6) / 6 (0x7): even */
  ENC(TS_F4E2M1FN, 0.25, 0x0);       /* tie 0 / 0.5 */
  ENC(TS_F4E2M1FN, 0.75, 0x2);       /* tie 0.5 (0x1) / 1 (0x2) */
  ENC(TS_F4E2M1FN, -1.0, 0xA);
  ENC(TS_F4E2M1FN, INFINITY, 0x7);
  ENC(TS_F4E2M1FN, -INFINITY, 0xF);
  ENC(TS_F4E2M1FN, NAN, 0x0);
  DEC(TS_F4E2M1FN, 0x1, 0.5);
  DEC(TS_F4E2M1FN, 0xF0 | 0x5, 3.0); /* bits above the width are ignored */
  /* e2m3fn: bias 1, max 1.875 * 4; e3m2fn: bias 3, max 1.75 * 16 */
  ENC(TS_F6E2M3FN, 7.5, 0x1F);
  ENC(TS_F6E2M3FN, 100, 0x1F);
  ENC(TS_F6E2M3FN, 0.125, 0x01);     /* 2^(1-1-3) */
  ENC(TS_F6E2M3FN, 1.0, 0x08);
  ENC(TS_F6E2M3FN, -1.0, 0x28);
  ENC(TS_F6E3M2FN, 28, 0x1F);
  ENC(TS_F6E3M2FN, -30, 0x3F);
  ENC(TS_F6E3M2FN, 1.0, 0x0C);
  ENC(TS_F6E3M2FN, P2(-4), 0x01);    /* 2^(1-3-2) */
  /* f32 through the same entry points */
  ENC(TS_F32, 1 + P2(-24), 0x3F800000);
  ENC(TS_F32, 1 + 3 * P2(-24), 0x3F800002);
  DEC(TS_F32, 0x00000001, P2(-149));
}

static const ts_elem_t small_floats[] = {
    TS_F16, TS_BF16, TS_F8E5M2, TS_F8E4M3, TS_F8E4M3FN, TS_F8E4M3FNUZ, TS_F8E5M2FNUZ,
    TS_F8E4M3B11FNUZ, TS_F8E3M4, TS_F8E8M0FNU, TS_F4E2M1FN, TS_F6E2M3FN, TS_F6E3M2FN,
};
#define NSMALL (sizeof small_floats / sizeof small_floats[0])

/* Every bit pattern decodes and re-encodes to itself; NaNs stay NaN. */
static void test_round_trip(void) {
  for (size_t k = 0; k < NSMALL; k++) {
    ts_elem_t t = small_floats[k];
    uint32_t n = UINT32_C(1) << ts_elem_bits(t);
    int bad = 0;
    for (uint32_t b = 0; b < n; b++) {
      double v = ts_elem_to_double(t, b);
      uint32_t back = ts_elem_from_double(t, v);
      if (isnan(v) ? !isnan(ts_elem_to_double(t, back)) || (signbit(v) != 0) != (signbit(ts_elem_to_double(t, back)) != 0)
                   : back != b) {
        if (bad++ < 3) fprintf(stderr, "%s: 0x%x -> %g -> 0x%x\n", ts_elem_name(t), b, v, back);
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

/* Walking the positive encodings upward: values strictly increase, each
 * midpoint goes to the even encoding and its neighbours either side to the
 * nearer value; the same for the negatives. */
static void test_ties(void) {
  for (size_t k = 0; k < NSMALL; k++) {
    ts_elem_t t = small_floats[k];
    int w = ts_elem_bits(t);
    bool has_sign = t != TS_F8E8M0FNU;
    uint32_t npos = has_sign ? UINT32_C(1) << (w - 1) : UINT32_C(1) << w;
    int bad = 0;
    for (uint32_t b = 0; b + 1 < npos; b++) {
      double a = ts_elem_to_double(t, b), c = ts_elem_to_double(t, b + 1);
      if (isnan(c) || isinf(c)) break;
      double mid = (a + c) / 2;
      uint32_t even = (b & 1) ? b + 1 : b;
      int ok = a < c && ts_elem_from_double(t, mid) == even &&
               ts_elem_from_double(t, nextafter(mid, 0)) == b &&
               ts_elem_from_double(t, nextafter(mid, INFINITY)) == b + 1;
      if (ok && has_sign && b > 0) { /* negative side (skip -0: fnuz has none) */
        uint32_t s = npos;
        ok = ts_elem_from_double(t, -mid) == (s | even) &&
             ts_elem_from_double(t, nextafter(-mid, 0)) == (s | b) &&
             ts_elem_from_double(t, nextafter(-mid, -INFINITY)) == (s | (b + 1));
      }
      if (!ok && bad++ < 3) fprintf(stderr, "%s: ties at 0x%x\n", ts_elem_name(t), b);
    }
    EXPECT_EQ(bad, 0);
  }
}

static void test_float_to_int(void) {
  float f[] = {NAN, 3e9f, -3e9f, -2.7f, 2.7f, -0.0f};
  int32_t s32[6];
  EXPECT_EQ(ts_elem_convert(TS_F32, f, TS_S32, s32, 6), TS_OK);
  EXPECT(s32[0] == 0 && s32[1] == INT32_MAX && s32[2] == INT32_MIN);
  EXPECT(s32[3] == -2 && s32[4] == 2 && s32[5] == 0);

  double d[] = {-1.0, 300, 255.9, -0.9, INFINITY};
  uint8_t u8[5];
  EXPECT_EQ(ts_elem_convert(TS_F64, d, TS_U8, u8, 5), TS_OK);
  EXPECT(u8[0] == 0 && u8[1] == 255 && u8[2] == 255 && u8[3] == 0 && u8[4] == 255);

  double big[] = {1e19, -1e19, -P2(63), P2(63) - 1024, -INFINITY};
  int64_t s64[5];
  EXPECT_EQ(ts_elem_convert(TS_F64, big, TS_S64, s64, 5), TS_OK);
  EXPECT(s64[0] == INT64_MAX && s64[1] == INT64_MIN && s64[2] == INT64_MIN);
  EXPECT(s64[3] == INT64_MAX - 1023 && s64[4] == INT64_MIN);
  double ubig[] = {P2(64), P2(63), NAN};
  uint64_t u64[3];
  EXPECT_EQ(ts_elem_convert(TS_F64, ubig, TS_U64, u64, 3), TS_OK);
  EXPECT(u64[0] == UINT64_MAX && u64[1] == (UINT64_C(1) << 63) && u64[2] == 0);

  float g[] = {10, -10, NAN, -3.5f};
  int8_t s4[4];
  uint8_t u4[4];
  EXPECT_EQ(ts_elem_convert(TS_F32, g, TS_S4, s4, 4), TS_OK);
  EXPECT(s4[0] == 7 && s4[1] == -8 && s4[2] == 0 && s4[3] == -3);
  EXPECT_EQ(ts_elem_convert(TS_F32, g, TS_U4, u4, 4), TS_OK);
  EXPECT(u4[0] == 10 && u4[1] == 0 && u4[2] == 0 && u4[3] == 0);
  float h = 20;
  EXPECT(ts_elem_convert(TS_F32, &h, TS_U4, u4, 1) == TS_OK && u4[0] == 15);

  /* bf16 in, s16 out: 0x4780 = 2^16 saturates, 0xC700 = -32768 exactly */
  uint16_t bf[] = {0x4780, 0xC700, 0x7FC0};
  int16_t s16[3];
  EXPECT_EQ(ts_elem_convert(TS_BF16, bf, TS_S16, s16, 3), TS_OK);
  EXPECT(s16[0] == INT16_MAX && s16[1] == INT16_MIN && s16[2] == 0);
}

static void test_int_to_int(void) {
  int32_t a[] = {300, -129, -1};
  int8_t s8[3];
  EXPECT_EQ(ts_elem_convert(TS_S32, a, TS_S8, s8, 3), TS_OK);
  EXPECT(s8[0] == 44 && s8[1] == 127 && s8[2] == -1);
  uint32_t b[] = {9, 16, 7};
  int8_t s4[3];
  EXPECT_EQ(ts_elem_convert(TS_U32, b, TS_S4, s4, 3), TS_OK);
  EXPECT(s4[0] == -7 && s4[1] == 0 && s4[2] == 7); /* 1001 -> -7 */
  int8_t m1 = -1;
  uint8_t u8;
  uint64_t u64;
  EXPECT(ts_elem_convert(TS_S8, &m1, TS_U8, &u8, 1) == TS_OK && u8 == 255);
  EXPECT(ts_elem_convert(TS_S8, &m1, TS_U64, &u64, 1) == TS_OK && u64 == UINT64_MAX);
  uint8_t x = 255;
  int64_t s64;
  EXPECT(ts_elem_convert(TS_U8, &x, TS_S64, &s64, 1) == TS_OK && s64 == 255);
  /* sub-byte loads ignore the bits above the width */
  uint8_t raw[] = {0x0F, 0xF3};
  int32_t out[2];
  EXPECT(ts_elem_convert(TS_S4, raw, TS_S32, out, 1) == TS_OK && out[0] == -1);
  EXPECT(ts_elem_convert(TS_U4, raw + 1, TS_S32, out, 1) == TS_OK && out[0] == 3);
  EXPECT(ts_elem_convert(TS_S2, raw + 1, TS_S32, out, 1) == TS_OK && out[0] == -1); /* 11 */
  uint8_t u1[2];
  int32_t two[] = {2, 3};
  EXPECT(ts_elem_convert(TS_S32, two, TS_U1, u1, 2) == TS_OK && u1[0] == 0 && u1[1] == 1);
}

static void test_pred(void) {
  int32_t a[] = {2, 0, -1};
  float f[] = {NAN, -0.0f, 0.5f};
  uint8_t p[3];
  EXPECT_EQ(ts_elem_convert(TS_S32, a, TS_PRED, p, 3), TS_OK);
  EXPECT(p[0] == 1 && p[1] == 0 && p[2] == 1);
  EXPECT_EQ(ts_elem_convert(TS_F32, f, TS_PRED, p, 3), TS_OK);
  EXPECT(p[0] == 1 && p[1] == 0 && p[2] == 1);
  uint8_t q[] = {5, 0};
  int32_t o[2];
  float of[2];
  EXPECT(ts_elem_convert(TS_PRED, q, TS_S32, o, 2) == TS_OK && o[0] == 1 && o[1] == 0);
  EXPECT(ts_elem_convert(TS_PRED, q, TS_F32, of, 2) == TS_OK && of[0] == 1 && of[1] == 0);
}

static void test_int_to_float(void) {
  /* 2^60 + 2^52 + 1 in bf16 (quantum 2^53 at 2^60): just above the tie,
   * rounds up to 2^60 + 2^53 = exp 187 (0xBB), mantissa 1 -> 0x5D81. Going
   * through (double) first would land on the tie and give 0x5D80. */
  int64_t s = (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1;
  uint16_t bf;
  EXPECT(ts_elem_convert(TS_S64, &s, TS_BF16, &bf, 1) == TS_OK && bf == 0x5D81);
  int64_t ns = -s;
  EXPECT(ts_elem_convert(TS_S64, &ns, TS_BF16, &bf, 1) == TS_OK && bf == 0xDD81);
  /* 2^63 + 2^39 + 1 in f32 (quantum 2^40): up to 2^63 + 2^40 = 0x5F000001 */
  uint64_t u = (UINT64_C(1) << 63) + (UINT64_C(1) << 39) + 1;
  float f;
  uint32_t fb;
  EXPECT_EQ(ts_elem_convert(TS_U64, &u, TS_F32, &f, 1), TS_OK);
  memcpy(&fb, &f, 4);
  EXPECT_EQ(fb, 0x5F000001);
  int64_t t53 = (INT64_C(1) << 53) + 1;
  double d;
  EXPECT(ts_elem_convert(TS_S64, &t53, TS_F64, &d, 1) == TS_OK && d == P2(53)); /* tie: even */
  int32_t a[] = {65520, 2049, 2051, -7};
  uint16_t h[4];
  EXPECT_EQ(ts_elem_convert(TS_S32, a, TS_F16, h, 4), TS_OK);
  EXPECT(h[0] == 0x7C00 && h[1] == 0x6800 && h[2] == 0x6802 && h[3] == 0xC700);
  uint8_t f8[4];
  EXPECT_EQ(ts_elem_convert(TS_S32, a, TS_F8E4M3FN, f8, 4), TS_OK);
  EXPECT(f8[0] == 0x7F && f8[3] == 0xCE); /* -7 = -1.75 * 2^2: exp 9 */
}

static void test_float_to_float(void) {
  float f[] = {1.0f, 1 + 0x1p-8f, 1 + 3 * 0x1p-8f, INFINITY};
  uint16_t bf[4];
  EXPECT_EQ(ts_elem_convert(TS_F32, f, TS_BF16, bf, 4), TS_OK);
  EXPECT(bf[0] == 0x3F80 && bf[1] == 0x3F80 && bf[2] == 0x3F82 && bf[3] == 0x7F80);
  double d = 1 + P2(-24);
  float g;
  EXPECT(ts_elem_convert(TS_F64, &d, TS_F32, &g, 1) == TS_OK && g == 1.0f);
  uint16_t h[] = {0x7BFF, 0x0001, 0x3C00}; /* 65504, 2^-24, 1 */
  uint8_t e4[3];
  EXPECT_EQ(ts_elem_convert(TS_F16, h, TS_F8E4M3FN, e4, 3), TS_OK);
  EXPECT(e4[0] == 0x7F && e4[1] == 0x00 && e4[2] == 0x38);
  uint8_t e5[] = {0x7B, 0x01};
  float back[2];
  EXPECT_EQ(ts_elem_convert(TS_F8E5M2, e5, TS_F32, back, 2), TS_OK);
  EXPECT(back[0] == 57344 && back[1] == 0x1p-16f);
  float w[] = {1.5f, -2.0f};
  double wd[2];
  EXPECT(ts_elem_convert(TS_F32, w, TS_F64, wd, 2) == TS_OK && wd[0] == 1.5 && wd[1] == -2.0);
  uint8_t same[] = {1, 2, 3}, same_out[3];
  EXPECT_EQ(ts_elem_convert(TS_F8E4M3, same, TS_F8E4M3, same_out, 3), TS_OK);
  EXPECT_EQ(memcmp(same, same_out, 3), 0);
}

static void test_complex(void) {
  float c[] = {1.5f, 2.5f, -3.75f, 4.0f};
  float re[2];
  int32_t ir[2];
  double c128[4];
  EXPECT(ts_elem_convert(TS_C64, c, TS_F32, re, 2) == TS_OK && re[0] == 1.5f && re[1] == -3.75f);
  EXPECT(ts_elem_convert(TS_C64, c, TS_S32, ir, 2) == TS_OK && ir[0] == 1 && ir[1] == -3);
  EXPECT_EQ(ts_elem_convert(TS_C64, c, TS_C128, c128, 2), TS_OK);
  EXPECT(c128[0] == 1.5 && c128[1] == 2.5 && c128[2] == -3.75 && c128[3] == 4.0);
  int32_t seven = 7;
  float cz[2] = {-1, -1};
  EXPECT(ts_elem_convert(TS_S32, &seven, TS_C64, cz, 1) == TS_OK && cz[0] == 7 && cz[1] == 0);
  double x = 0.1;
  double cx[2] = {-1, -1};
  EXPECT(ts_elem_convert(TS_F64, &x, TS_C128, cx, 1) == TS_OK && cx[0] == 0.1 && cx[1] == 0);
}

static void test_errors_and_bitcast(void) {
  float f = 1;
  EXPECT_EQ(ts_elem_convert(TS_TUPLE, &f, TS_F32, &f, 1), TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ts_elem_convert(TS_F32, &f, TS_TOKEN, &f, 1), TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ts_elem_convert(TS_F32, &f, TS_F64, &f, -1), TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ts_elem_convert(TS_F32, NULL, TS_F64, NULL, 0), TS_OK);
  EXPECT(ts_elem_storage_bytes(TS_S4) == 1 && ts_elem_storage_bytes(TS_F6E3M2FN) == 1);
  EXPECT(ts_elem_storage_bytes(TS_BF16) == 2 && ts_elem_storage_bytes(TS_C128) == 16);
  EXPECT_EQ(ts_elem_storage_bytes(TS_TUPLE), 0);
  EXPECT(ts_elem_is_storage_float(TS_F8E8M0FNU) && !ts_elem_is_storage_float(TS_F64));

  int om = 0, im = 0;
  EXPECT(ts_elem_bitcast_ok(TS_F32, TS_F16, &om, &im) && om == 2 && im == 1);
  EXPECT(ts_elem_bitcast_ok(TS_F16, TS_F32, &om, &im) && om == 1 && im == 2);
  EXPECT(ts_elem_bitcast_ok(TS_S32, TS_F32, &om, &im) && om == 1 && im == 1);
  EXPECT(ts_elem_bitcast_ok(TS_F64, TS_F8E4M3FN, &om, &im) && om == 8 && im == 1);
  EXPECT(ts_elem_bitcast_ok(TS_S4, TS_S8, &om, &im) && om == 1 && im == 2);
  EXPECT(ts_elem_bitcast_ok(TS_C64, TS_C128, NULL, &im) && im == 2);
  EXPECT(!ts_elem_bitcast_ok(TS_F32, TS_C64, NULL, NULL));
  EXPECT(!ts_elem_bitcast_ok(TS_F6E2M3FN, TS_S8, NULL, NULL));
  EXPECT(!ts_elem_bitcast_ok(TS_TUPLE, TS_S8, NULL, NULL));
}

/* The f32 <-> bf16/f16 fast paths of ts_elem_convert agree bit for bit with
 * the one-element formulas (ts_elem_from_double / ts_elem_to_double): every
 * 16-bit pattern, and f32 patterns with every high half and the low halves
 * that matter for rounding (ties, just below/above, all ones). */
static void test_fast_paths(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    uint16_t x = (uint16_t)h;
    for (int k = 0; k < 2; k++) {
      ts_elem_t t = k ? TS_F16 : TS_BF16;
      float got;
      ts_elem_convert(t, &x, TS_F32, &got, 1);
      float want = (float)ts_elem_to_double(t, x);
      uint32_t gb, wb;
      memcpy(&gb, &got, 4);
      memcpy(&wb, &want, 4);
      if (gb != wb && bad++ < 5) printf("%s 0x%04x -> f32: got 0x%08x, want 0x%08x\n", ts_elem_name(t), h, gb, wb);
    }
  }
  static const uint32_t lows[] = {0, 1, 0x0fff, 0x1000, 0x1001, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff};
  for (uint32_t hi = 0; hi < 65536; hi++)
    for (size_t l = 0; l < sizeof lows / sizeof lows[0]; l++) {
      uint32_t b = hi << 16 | lows[l];
      float f;
      memcpy(&f, &b, 4);
      for (int k = 0; k < 2; k++) {
        ts_elem_t t = k ? TS_F16 : TS_BF16;
        uint16_t got;
        ts_elem_convert(TS_F32, &f, t, &got, 1);
        uint32_t want = ts_elem_from_double(t, (double)f);
        if (got != want && bad++ < 5) printf("f32 0x%08x -> %s: got 0x%04x, want 0x%04x\n", b, ts_elem_name(t), got, want);
      }
    }
  EXPECT_EQ(bad, 0);
}

static const ts_test_case_t cases[] = {
    {"fast_paths", test_fast_paths},
    {"bf16", test_bf16},
    {"f16", test_f16},
    {"f8", test_f8},
    {"round_trip", test_round_trip},
    {"ties", test_ties},
    {"float_to_int", test_float_to_int},
    {"int_to_int", test_int_to_int},
    {"pred", test_pred},
    {"int_to_float", test_int_to_float},
    {"float_to_float", test_float_to_float},
    {"complex", test_complex},
    {"errors_and_bitcast", test_errors_and_bitcast},
};

int main(int argc, char **argv) {
  return ts_test_cases("test_elemconv", argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
