/* npy_allclose: compares .npy arrays pairwise (a numpy-made golden against
 * what tessera wrote), so that example tests need no numpy at run time.
 *   npy_allclose [--rtol R] WANT.npy GOT.npy [WANT.npy GOT.npy]...
 * Floats match when |got - want| <= R * max(|want|, F), F = max(S, 1) / 16
 * with S the largest |want| of that array: tessera check's rule (an absolute
 * floor near zero, where summation order dominates). Integers and pred must
 * be equal. Exit 0 when every pair matches, 1 on a mismatch, 2 on usage or
 * file errors. */
#include "ts_npy.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_float(ts_elem_t e) { return e == TS_F32 || e == TS_F64; }

/* Element k of a as a double; a holds one of the types numpy spells. */
static double elem_at(const ts_npy_array_t *a, int64_t k) {
  const void *p = a->data;
  switch (a->elem) {
  case TS_F32: return ((const float *)p)[k];
  case TS_F64: return ((const double *)p)[k];
  case TS_PRED:
  case TS_U8: return ((const uint8_t *)p)[k];
  case TS_S8: return ((const int8_t *)p)[k];
  case TS_S16: return ((const int16_t *)p)[k];
  case TS_U16: return ((const uint16_t *)p)[k];
  case TS_S32: return ((const int32_t *)p)[k];
  case TS_U32: return ((const uint32_t *)p)[k];
  case TS_S64: return (double)((const int64_t *)p)[k];
  case TS_U64: return (double)((const uint64_t *)p)[k];
  default: return NAN;
  }
}

static bool supported(ts_elem_t e) {
  return e == TS_F32 || e == TS_F64 || e == TS_PRED || e == TS_U8 || e == TS_S8 || e == TS_S16 ||
         e == TS_U16 || e == TS_S32 || e == TS_U32 || e == TS_S64 || e == TS_U64;
}

/* Returns 0 (match), 1 (mismatch) or 2 (cannot compare). */
static int compare_pair(const char *want_path, const char *got_path, double rtol) {
  ts_npy_array_t want = {0}, got = {0};
  ts_diag_t d = {0};
  int rc = 2;
  if (ts_npy_read(want_path, &want, &d) != TS_OK || ts_npy_read(got_path, &got, &d) != TS_OK) {
    fprintf(stderr, "%s", d.text ? d.text : "npy_allclose: cannot read a file\n");
    goto done;
  }
  if (!supported(want.elem) || want.elem != got.elem) {
    fprintf(stderr, "%s: element type %s, %s has %s\n", got_path, ts_npy_descr(got.elem), want_path,
            ts_npy_descr(want.elem));
    rc = 1;
    goto done;
  }
  bool same_dims = want.rank == got.rank;
  for (int k = 0; same_dims && k < want.rank; k++) same_dims = want.dims[k] == got.dims[k];
  if (!same_dims) {
    fprintf(stderr, "%s: shape differs from %s\n", got_path, want_path);
    rc = 1;
    goto done;
  }
  double scale = 0;
  for (int64_t k = 0; k < want.count; k++) scale = fmax(scale, fabs(elem_at(&want, k)));
  double floor = fmax(scale, 1.0) / 16;
  double worst = 0;
  int64_t worst_at = 0, bad = 0;
  for (int64_t k = 0; k < want.count; k++) {
    double w = elem_at(&want, k), g = elem_at(&got, k);
    double err = is_float(want.elem) ? fabs(g - w) / fmax(fabs(w), floor) : (g == w ? 0 : INFINITY);
    if (!(err <= (is_float(want.elem) ? rtol : 0))) bad++;
    if (!(err <= worst)) {
      worst = err;
      worst_at = k;
    }
  }
  if (bad == 0) {
    printf("%s: match, max relative error %.3g (rtol %g)\n", got_path, worst, rtol);
    rc = 0;
  } else {
    printf("%s: MISMATCH: %lld of %lld elements, worst at flat index %lld: got %.9g, want %.9g\n",
           got_path, (long long)bad, (long long)want.count, (long long)worst_at,
           elem_at(&got, worst_at), elem_at(&want, worst_at));
    rc = 1;
  }
done:
  ts_diag_free(&d);
  ts_npy_free(&want);
  ts_npy_free(&got);
  return rc;
}

static void usage(FILE *f) {
  fprintf(f, "usage: npy_allclose [--rtol R] WANT.npy GOT.npy [WANT.npy GOT.npy]...\n"
             "Compares arrays pairwise: floats within R (default 1e-5) relative to\n"
             "max(|want|, max(S, 1)/16), S the largest |want|; other types exactly.\n"
             "Exit 0 all match, 1 a mismatch, 2 usage or file errors.\n");
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"rtol", required_argument, NULL, 'r'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  double rtol = 1e-5;
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    char *end = NULL;
    if (c != 'r' || (rtol = strtod(optarg, &end), *end != 0 || !(rtol >= 0))) {
      usage(stderr);
      return 2;
    }
  }
  int n = argc - optind;
  if (n == 0 || n % 2) {
    usage(stderr);
    return 2;
  }
  int rc = 0;
  for (int k = optind; k < argc; k += 2) {
    int r = compare_pair(argv[k], argv[k + 1], rtol);
    if (r > rc) rc = r;
  }
  return rc;
}
