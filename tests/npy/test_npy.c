/* The .npy reader and writer: numpy-made goldens (tests/npy/goldens, made by
 * make_goldens.py), write->read round trips, and hand-made bad files. */
#include "ts_npy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ts_test.h"

static char golden_dir[4096];
static const char *SCRATCH = "test_npy_scratch.npy";

static ts_status_t read_golden(const char *name, ts_npy_array_t *a) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.npy", golden_dir, name);
  ts_diag_t d = {0};
  ts_status_t st = ts_npy_read(path, a, &d);
  if (st != TS_OK) fprintf(stderr, "%s: %s", name, d.text ? d.text : "(no message)\n");
  ts_diag_free(&d);
  return st;
}

/* Reads golden `name`, expects elem and dims, and data equal to `want`. */
static void check_golden(const char *name, ts_elem_t elem, int rank, const int64_t *dims,
                         const void *want, size_t nbytes) {
  ts_npy_array_t a;
  EXPECT_EQ(read_golden(name, &a), TS_OK);
  EXPECT_EQ(a.elem, elem);
  EXPECT_EQ(a.rank, rank);
  for (int k = 0; k < rank && k < a.rank; k++) EXPECT_EQ(a.dims[k], dims[k]);
  EXPECT_EQ(a.nbytes, nbytes);
  EXPECT(a.data != NULL);
  if (a.nbytes == nbytes && nbytes && memcmp(a.data, want, nbytes) != 0) {
    fprintf(stderr, "golden %s: data differs\n", name);
    failures++;
  }
  ts_npy_free(&a);
}

static const int64_t D23[] = {2, 3};

static void test_goldens(void) {
  static const uint8_t b1[] = {1, 0, 1, 0, 0, 1};
  static const int8_t i1[] = {0, 1, -1, 127, -128, 7};
  static const uint8_t u1[] = {0, 1, 255, 128, 42, 7};
  static const int16_t i2[] = {0, 1, -1, 32767, -32768, 7};
  static const uint16_t u2[] = {0, 1, 65535, 32768, 42, 7};
  static const int32_t i4[] = {0, 1, -1, INT32_MAX, INT32_MIN, 7};
  static const uint32_t u4[] = {0, 1, UINT32_MAX, 2147483648u, 42, 7};
  static const int64_t i8[] = {0, 1, -1, INT64_MAX, INT64_MIN, 7};
  static const uint64_t u8[] = {0, 1, UINT64_MAX, 9223372036854775808ull, 42, 7};
  static const uint16_t f2[] = {0x0000, 0x3c00, 0xc000, 0x3800, 0x7bff, 0x7c00}; /* by hand */
  static const float f4[] = {0.0f, 1.0f, -2.5f, 0.1f, 3.4e38f, -INFINITY};
  static const double f8[] = {0.0, 1.0, -2.5, 0.1, 1e300, -INFINITY};
  /* Python's -3.5j is -(0+3.5j): its real part is -0.0 */
  static const float c8[] = {0, 0, 1, 2, -0.0f, -3.5f, 0.5f, 0, -1, -1, 2, 0};
  static const double c16[] = {0, 0, 1, 2, -0.0, -3.5, 0.5, 0, -1, -1, 2, 0};
  check_golden("b1", TS_PRED, 2, D23, b1, sizeof b1);
  check_golden("i1", TS_S8, 2, D23, i1, sizeof i1);
  check_golden("u1", TS_U8, 2, D23, u1, sizeof u1);
  check_golden("i2", TS_S16, 2, D23, i2, sizeof i2);
  check_golden("u2", TS_U16, 2, D23, u2, sizeof u2);
  check_golden("i4", TS_S32, 2, D23, i4, sizeof i4);
  check_golden("u4", TS_U32, 2, D23, u4, sizeof u4);
  check_golden("i8", TS_S64, 2, D23, i8, sizeof i8);
  check_golden("u8", TS_U64, 2, D23, u8, sizeof u8);
  check_golden("f2", TS_F16, 2, D23, f2, sizeof f2);
  check_golden("f4", TS_F32, 2, D23, f4, sizeof f4);
  check_golden("f8", TS_F64, 2, D23, f8, sizeof f8);
  check_golden("c8", TS_C64, 2, D23, c8, sizeof c8);
  check_golden("c16", TS_C128, 2, D23, c16, sizeof c16);
  /* big-endian files read as the same values */
  check_golden("be_i4", TS_S32, 2, D23, i4, sizeof i4);
  check_golden("be_u2", TS_U16, 2, D23, u2, sizeof u2);
  check_golden("be_f8", TS_F64, 2, D23, f8, sizeof f8);
  check_golden("be_c8", TS_C64, 2, D23, c8, sizeof c8);

  static const double scalar[] = {3.5};
  check_golden("scalar_f8", TS_F64, 0, NULL, scalar, sizeof scalar);
  static const int32_t vec[] = {0, 1, 2, 3, 4};
  static const int64_t d5[] = {5};
  check_golden("vec5_i4", TS_S32, 1, d5, vec, sizeof vec);
  check_golden("v2_i4", TS_S32, 1, d5, vec, sizeof vec);
  check_golden("v3_i4", TS_S32, 1, d5, vec, sizeof vec);
  static const int64_t d03[] = {0, 3}, d204[] = {2, 0, 4};
  check_golden("empty_0x3_f4", TS_F32, 2, d03, NULL, 0);
  check_golden("empty_2x0x4_i8", TS_S64, 3, d204, NULL, 0);

  /* fortran order: transposed into row-major; [i][j][k] = 100i + 10j + k */
  int32_t f3[24];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) f3[(i * 3 + j) * 4 + k] = 100 * i + 10 * j + k;
  static const int64_t d234[] = {2, 3, 4};
  check_golden("fortran_2x3x4_i4", TS_S32, 3, d234, f3, sizeof f3);
  static const float f23[] = {1, 2, 3, 4, 5, 6};
  check_golden("fortran_2x3_f4", TS_F32, 2, D23, f23, sizeof f23);
}

static void *slurp(const char *path, size_t *n) {
  char *text = NULL;
  ts_diag_t d = {0};
  if (ts_read_file(path, &text, n, &d) != TS_OK) *n = 0;
  ts_diag_free(&d);
  return text;
}

/* The writer's bytes equal numpy's for the same array (header included). */
static void test_write_matches_numpy(void) {
  static const float f4[] = {0.0f, 1.0f, -2.5f, 0.1f, 3.4e38f, -INFINITY};
  static const int32_t vec[] = {0, 1, 2, 3, 4};
  static const double scalar = 3.5;
  static const int64_t d5[] = {5};
  struct {
    const char *golden;
    ts_elem_t elem;
    int rank;
    const int64_t *dims;
    const void *data;
  } cases[] = {
      {"f4", TS_F32, 2, D23, f4},
      {"vec5_i4", TS_S32, 1, d5, vec},
      {"scalar_f8", TS_F64, 0, NULL, &scalar},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ts_diag_t d = {0};
    EXPECT_EQ(ts_npy_write(SCRATCH, cases[i].elem, cases[i].rank, cases[i].dims, cases[i].data, &d), TS_OK);
    ts_diag_free(&d);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.npy", golden_dir, cases[i].golden);
    size_t n1, n2;
    char *a = slurp(SCRATCH, &n1), *b = slurp(path, &n2);
    EXPECT(a && b && n1 == n2 && memcmp(a, b, n1) == 0);
    ts_free(a);
    ts_free(b);
  }
}

/* Every numpy type: write, read back, same type, shape and bytes. */
static void test_roundtrip(void) {
  static const ts_elem_t elems[] = {TS_PRED, TS_S8,  TS_S16, TS_S32, TS_S64, TS_U8,  TS_U16,
                                    TS_U32,  TS_U64, TS_F16, TS_F32, TS_F64, TS_C64, TS_C128};
  unsigned char buf[16 * 24];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 37 + 11);
  static const int64_t dims[] = {2, 3, 4};
  for (size_t e = 0; e < sizeof elems / sizeof elems[0]; e++) {
    size_t nbytes = 24 * (size_t)ts_elem_bits(elems[e]) / 8;
    if (elems[e] == TS_PRED)
      for (size_t i = 0; i < 24; i++) buf[i] = i % 3 == 0;
    ts_diag_t d = {0};
    EXPECT_EQ(ts_npy_write(SCRATCH, elems[e], 3, dims, buf, &d), TS_OK);
    ts_npy_array_t a;
    EXPECT_EQ(ts_npy_read(SCRATCH, &a, &d), TS_OK);
    EXPECT(a.elem == elems[e] && a.rank == 3 && a.dims[2] == 4 && a.count == 24);
    EXPECT(a.nbytes == nbytes && memcmp(a.data, buf, nbytes) == 0);
    ts_npy_free(&a);
    EXPECT(d.text == NULL);
    ts_diag_free(&d);
  }
  /* 0-d and zero-size */
  ts_diag_t d = {0};
  int64_t v = -5;
  ts_npy_array_t a;
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_S64, 0, NULL, &v, &d), TS_OK);
  EXPECT_EQ(ts_npy_read(SCRATCH, &a, &d), TS_OK);
  EXPECT(a.rank == 0 && a.count == 1 && *(int64_t *)a.data == -5);
  ts_npy_free(&a);
  static const int64_t dz[] = {3, 0};
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_F32, 2, dz, NULL, &d), TS_OK);
  EXPECT_EQ(ts_npy_read(SCRATCH, &a, &d), TS_OK);
  EXPECT(a.rank == 2 && a.count == 0 && a.nbytes == 0 && a.data != NULL);
  ts_npy_free(&a);
  EXPECT(d.text == NULL);
  ts_diag_free(&d);
}

/* Types numpy lacks (issue 3): bf16 as f32 (exact) or raw <u2; s4/u4 as s8/u8. */
static void test_mapped_types(void) {
  ts_diag_t d = {0};
  ts_npy_array_t a;
  /* bf16 1.0, -2.0, 0.5, +inf, the largest, smallest subnormal */
  static const uint16_t bf[] = {0x3f80, 0xc000, 0x3f00, 0x7f80, 0x7f7f, 0x0001};
  static const float bf_f32[] = {1.0f, -2.0f, 0.5f, INFINITY, 3.3895313892515355e38f, 9.183549615799121e-41f};
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_BF16, 2, D23, bf, &d), TS_OK);
  EXPECT_EQ(ts_npy_read(SCRATCH, &a, &d), TS_OK);
  EXPECT(a.elem == TS_F32 && a.nbytes == sizeof bf_f32 && memcmp(a.data, bf_f32, sizeof bf_f32) == 0);
  ts_npy_free(&a);
  EXPECT_EQ(ts_npy_read_as(SCRATCH, TS_BF16, &a, &d), TS_OK);
  EXPECT(a.elem == TS_BF16 && a.nbytes == sizeof bf && memcmp(a.data, bf, sizeof bf) == 0);
  ts_npy_free(&a);
  /* f32 -> bf16 rounds to nearest even (bit patterns by hand) */
  static const uint32_t in[] = {
      0x3f808000, /* halfway, even below: 0x3f80 */
      0x3f818000, /* halfway, odd below: up to 0x3f82 */
      0x3f808001, /* above halfway: 0x3f81 */
      0x7f7fffff, /* rounds to +inf */
      0xffc00001, /* NaN stays NaN: 0xffc0 */
      0x7f800001, /* signalling NaN made quiet: 0x7fc0 */
  };
  static const uint16_t out[] = {0x3f80, 0x3f82, 0x3f81, 0x7f80, 0xffc0, 0x7fc0};
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_F32, 2, D23, in, &d), TS_OK);
  EXPECT_EQ(ts_npy_read_as(SCRATCH, TS_BF16, &a, &d), TS_OK);
  EXPECT(a.elem == TS_BF16 && a.nbytes == 12 && memcmp(a.data, out, 12) == 0);
  ts_npy_free(&a);
  /* raw bits as <u2 */
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_U16, 2, D23, bf, &d), TS_OK);
  EXPECT_EQ(ts_npy_read_as(SCRATCH, TS_BF16, &a, &d), TS_OK);
  EXPECT(a.elem == TS_BF16 && memcmp(a.data, bf, sizeof bf) == 0);
  ts_npy_free(&a);
  /* s4 written as s8 (sign-extended from the low 4 bits), u4 as u8 */
  static const uint8_t s4[] = {0x0, 0x7, 0x8, 0xf, 0x1, 0xe};
  static const int8_t s4_s8[] = {0, 7, -8, -1, 1, -2};
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_S4, 2, D23, s4, &d), TS_OK);
  EXPECT_EQ(ts_npy_read(SCRATCH, &a, &d), TS_OK);
  EXPECT(a.elem == TS_S8 && memcmp(a.data, s4_s8, 6) == 0);
  ts_npy_free(&a);
  EXPECT_EQ(ts_npy_read_as(SCRATCH, TS_S4, &a, &d), TS_OK);
  EXPECT(a.elem == TS_S4 && memcmp(a.data, s4_s8, 6) == 0);
  ts_npy_free(&a);
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_U4, 2, D23, s4, &d), TS_OK);
  EXPECT_EQ(ts_npy_read_as(SCRATCH, TS_U4, &a, &d), TS_OK);
  EXPECT(a.elem == TS_U4 && memcmp(a.data, s4, 6) == 0);
  ts_npy_free(&a);
  EXPECT(d.text == NULL);
  ts_diag_free(&d);
  /* out of range for s4 */
  static const int8_t big[] = {0, 1, 2, 3, 8, 5};
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_S8, 2, D23, big, &d), TS_OK);
  EXPECT_EQ(ts_npy_read_as(SCRATCH, TS_S4, &a, &d), TS_ERR_PARSE);
  EXPECT(d.text && strcmp(d.text, "test_npy_scratch.npy: error: value 8 at index 4 does not fit in s4\n") == 0);
  EXPECT(a.data == NULL);
  ts_diag_free(&d);
  /* a mismatch */
  EXPECT_EQ(ts_npy_read_as(SCRATCH, TS_F32, &a, &d), TS_ERR_PARSE);
  EXPECT(d.text && strcmp(d.text, "test_npy_scratch.npy: error: dtype '|i1' (s8) where f32 is expected\n") == 0);
  ts_diag_free(&d);
  /* f8 (bit patterns by hand): e4m3fn 0x38 = 1, 0x7e = 448 (max), 0xc0 = -2,
   * 0x01 = 2^-9 (smallest subnormal), 0x00 = 0, 0x3c = 1.5; written as f32. */
  static const uint8_t e4m3[] = {0x38, 0x7e, 0xc0, 0x01, 0x00, 0x3c};
  static const float e4m3_f32[] = {1.0f, 448.0f, -2.0f, 0.001953125f, 0.0f, 1.5f};
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_F8E4M3FN, 2, D23, e4m3, &d), TS_OK);
  EXPECT_EQ(ts_npy_read(SCRATCH, &a, &d), TS_OK);
  EXPECT(a.elem == TS_F32 && memcmp(a.data, e4m3_f32, sizeof e4m3_f32) == 0);
  ts_npy_free(&a);
  EXPECT_EQ(ts_npy_read_as(SCRATCH, TS_F8E4M3FN, &a, &d), TS_OK);
  EXPECT(a.elem == TS_F8E4M3FN && a.nbytes == 6 && memcmp(a.data, e4m3, 6) == 0);
  ts_npy_free(&a);
  /* f32 -> f8e5m2 rounds to nearest even: 1 + 2^-3 is halfway between 0x3c
   * (1.0) and 0x3d (1.25), even below -> 0x3c; 57344 = 0x7b (max). Raw u1
   * bits are taken as they are. */
  static const float to_e5m2[] = {1.125f, 57344.0f, -1.0f, 2.0f, 0.5f, 1.375f};
  static const uint8_t e5m2[] = {0x3c, 0x7b, 0xbc, 0x40, 0x38, 0x3e};
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_F32, 2, D23, to_e5m2, &d), TS_OK);
  EXPECT_EQ(ts_npy_read_as(SCRATCH, TS_F8E5M2, &a, &d), TS_OK);
  EXPECT(a.elem == TS_F8E5M2 && memcmp(a.data, e5m2, 6) == 0);
  ts_npy_free(&a);
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_U8, 2, D23, e5m2, &d), TS_OK);
  EXPECT_EQ(ts_npy_read_as(SCRATCH, TS_F8E5M2, &a, &d), TS_OK);
  EXPECT(a.elem == TS_F8E5M2 && memcmp(a.data, e5m2, 6) == 0);
  ts_npy_free(&a);
  EXPECT(d.text == NULL);
  EXPECT_EQ(ts_npy_write(SCRATCH, TS_TUPLE, 0, NULL, big, &d), TS_ERR_INVALID_ARGUMENT);
  ts_diag_free(&d);
}

/* ---- bad files ------------------------------------------------------------ */

/* A version-1.0 file with header `dict` (padded as numpy pads) then `ndata`
 * bytes of data; `hlen_delta` is added to the header length field. */
static size_t make_file(unsigned char *buf, const char *dict, size_t ndata, int hlen_delta) {
  size_t dl = strlen(dict);
  size_t total = (10 + dl + 1 + 63) / 64 * 64;
  size_t hlen = total - 10 + (size_t)hlen_delta;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (unsigned char)(hlen & 0xff);
  buf[9] = (unsigned char)(hlen >> 8);
  memcpy(buf + 10, dict, dl);
  memset(buf + 10 + dl, ' ', total - 10 - dl - 1);
  buf[total - 1] = '\n';
  memset(buf + total, 0xab, ndata);
  return total + ndata;
}

/* Reading `bytes` fails with want_st and exactly the one message want_msg;
 * a failure names the check as "`what` `k`". */
static void expect_bad(const char *what, int k, const void *bytes, size_t n, ts_status_t want_st,
                       const char *want_msg) {
  FILE *f = fopen(SCRATCH, "wb");
  EXPECT(f && fwrite(bytes, 1, n, f) == n);
  if (f) fclose(f);
  ts_npy_array_t a;
  ts_diag_t d = {0};
  ts_status_t st = ts_npy_read(SCRATCH, &a, &d);
  char want[512];
  snprintf(want, sizeof want, "%s: error: %s\n", SCRATCH, want_msg);
  if (st != want_st || !d.text || strcmp(d.text, want) != 0 || d.count != 1 || a.data) {
    fprintf(stderr, "%s %d: status %d (want %d), message:\n  %s  want:\n  %s", what, k, st, want_st,
            d.text ? d.text : "(none)\n", want);
    failures++;
  }
  ts_diag_free(&d);
}
#define BAD_RAW(bytes, n, msg) expect_bad("line", __LINE__, bytes, n, TS_ERR_PARSE, msg)

static void test_bad_files(void) {
  static unsigned char file[1 << 16];
  const char *ok23 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  size_t n = make_file(file, ok23, 24, 0);
  { /* the template itself is good */
    FILE *f = fopen(SCRATCH, "wb");
    fwrite(file, 1, n, f);
    fclose(f);
    ts_npy_array_t a;
    EXPECT(ts_npy_read(SCRATCH, &a, NULL) == TS_OK && a.count == 6);
    ts_npy_free(&a);
  }
  BAD_RAW("", 0, "file ends inside the magic string (0 bytes)");
  BAD_RAW("\x93NUM", 4, "file ends inside the magic string (4 bytes)");
  BAD_RAW("\x93NUMPY\x01", 7, "file ends inside the header (7 bytes)");
  BAD_RAW("\x93NUMPY\x02\x00\x10\x00", 10, "file ends inside the header (10 bytes)");
  BAD_RAW("PK\x03\x04 this is a zip", 18, "not a .npy file (no \\x93NUMPY magic string)");
  n = make_file(file, ok23, 24, 0);
  file[6] = 4;
  BAD_RAW(file, n, "unsupported .npy format version 4.0");
  file[6] = 1, file[7] = 1;
  BAD_RAW(file, n, "unsupported .npy format version 1.1");
  BAD_RAW("\x93NUMPY\x01\x00\x00\x10{}", 12, "header length 4096 runs past the end of the file (12 bytes)");
  BAD_RAW("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14, "header length 4294967295 exceeds the limit of 1048576 bytes");
  /* bad headers: the dictionary, the data bytes after it, and what is added
   * to the header length field (make_file) */
  const struct {
    const char *dict;
    size_t ndata;
    int hlen_delta;
    const char *msg;
  } bad[] = {
      {"{'descr': '<f4', 'shape': (2, 3), }", 24, 0,
       "bad header: no 'fortran_order' key"},
      {"{'descr': '<f4', 'fortran_order': False}", 24, 0,
       "bad header: no 'shape' key"},
      {"{'shape': (2, 3), 'fortran_order': False}", 24, 0,
       "bad header: no 'descr' key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 24, 0,
       "bad header: unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 24, 0,
       "bad header: key 'descr' appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, }", 24, 0,
       "bad header: expected a dimension, found '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", 24, 0,
       "bad header: expected ',' or ')' in the shape, found '3'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", 24, 0,
       "bad header: shape (N) must be written (N,)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", 24, 0,
       "bad header: expected '(' starting the shape, found '['"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", 24, 0,
       "bad header: expected True or False for 'fortran_order', found '0'"},
      {"{'descr': '<f4', 'fortran_order': Falsehood, 'shape': (2, 3), }", 24, 0,
       "bad header: expected True or False for 'fortran_order', found 'F'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }", 24, 0,
       "bad header: expected ',' or '}' after a value, found 'f'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x", 24, 0,
       "bad header: expected nothing after the closing '}', found 'x'"},
      {"['descr', '<f4']", 24, 0,
       "bad header: expected '{', found '['"},
      {"{'descr': '<U8', 'fortran_order': False, 'shape': (2, 3), }", 24, 0,
       "unsupported dtype '<U8'"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }", 24, 0,
       "unsupported dtype '|O'"},
      {"{'descr': '<f16', 'fortran_order': False, 'shape': (2, 3), }", 24, 0,
       "unsupported dtype '<f16'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }", 24, 0,
       "unsupported dtype: structured arrays are not supported"},
      {ok23, 20, 0,
       "header says 24 bytes of data, file has 20"},
      {ok23, 28, 0,
       "header says 24 bytes of data, file has 28"}, /* too long is an error too */
      {ok23, 24, -2,
       "header says 24 bytes of data, file has 26"},
      {ok23, 24, 2,
       "bad header: expected nothing after the closing '}', found byte 0xab"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 24, 0,
       "negative dimension -3 in shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 24, 0,
       "shape has too many elements (the size overflows 64 bits)"},
      {"{'descr': '<c16', 'fortran_order': False, 'shape': (1152921504606846976,), }", 24, 0,
       "shape has too many elements (the size overflows 64 bits)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 24, 0,
       "bad header: dimension does not fit in 64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
       "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
       "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), }", 4, 0,
       "shape has more than 64 dimensions"},
      {"{'descr': '<f\\4', 'fortran_order': False, 'shape': (2, 3), }", 24, 0,
       "bad header: unsupported character in string"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    n = make_file(file, bad[i].dict, bad[i].ndata, bad[i].hlen_delta);
    expect_bad("bad[]", (int)i, file, n, TS_ERR_PARSE, bad[i].msg);
  }
  /* accepted variations: key order, spacing, no trailing comma, double quotes, 1L */
  static const char *good[] = {
      "{'shape': (6,), 'fortran_order': False, 'descr': '<f4'}",
      "{ \"descr\" : \">f4\" ,'fortran_order':True,'shape':( 2 , 3 ) , }",
      "{'descr': '=f4', 'fortran_order': False, 'shape': (2L, 3L), }",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    n = make_file(file, good[i], 24, 0);
    FILE *f = fopen(SCRATCH, "wb");
    fwrite(file, 1, n, f);
    fclose(f);
    ts_npy_array_t a;
    ts_diag_t d = {0};
    EXPECT(ts_npy_read(SCRATCH, &a, &d) == TS_OK && a.count == 6 && a.elem == TS_F32);
    if (d.text) fprintf(stderr, "good[%zu]: %s", i, d.text);
    ts_npy_free(&a);
    ts_diag_free(&d);
  }
  /* garbage of every length: no crash, one message each */
  for (size_t len = 0; len < 200; len++) {
    unsigned char g[200];
    n = make_file(file, ok23, 24, 0);
    for (size_t i = 0; i < len; i++) g[i] = i < n ? file[i] ^ (unsigned char)(i % 7 == 3) : 0x20;
    FILE *f = fopen(SCRATCH, "wb");
    fwrite(g, 1, len, f);
    fclose(f);
    ts_npy_array_t a;
    ts_diag_t d = {0};
    ts_status_t st = ts_npy_read(SCRATCH, &a, &d);
    EXPECT(st == TS_ERR_PARSE && d.count == 1);
    ts_npy_free(&a);
    ts_diag_free(&d);
  }
  /* a missing file and a directory */
  ts_npy_array_t a;
  ts_diag_t d = {0};
  EXPECT_EQ(ts_npy_read("no/such/file.npy", &a, &d), TS_ERR_INVALID_ARGUMENT);
  EXPECT(d.text && strcmp(d.text, "error: cannot open 'no/such/file.npy': No such file or directory\n") == 0);
  ts_diag_free(&d);
  EXPECT_EQ(ts_npy_read(".", &a, &d), TS_ERR_INVALID_ARGUMENT);
  EXPECT(d.text && strcmp(d.text, ".: error: not a regular file\n") == 0);
  ts_diag_free(&d);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : getenv("TS_NPY_GOLDENS");
  if (!dir) {
    fprintf(stderr, "usage: test_npy GOLDENS_DIR (or TS_NPY_GOLDENS)\n");
    return 2;
  }
  snprintf(golden_dir, sizeof golden_dir, "%s", dir);
  test_goldens();
  test_write_matches_numpy();
  test_roundtrip();
  test_mapped_types();
  test_bad_files();
  remove(SCRATCH);
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  return failures != 0;
}
