/* Tessera npy: the one reader and writer of numpy's .npy files (format
 * versions 1.0, 2.0 and 3.0, numpy's NEP 1 "A simple file format for NumPy
 * arrays"), used for the reference interpreter's inputs and outputs. */
#ifndef TS_NPY_H
#define TS_NPY_H

#include "ts_common.h"
#include "ts_hlo.h"

/* numpy's NPY_MAXDIMS (numpy 2.x); a file with more dimensions is rejected. */
#define TS_NPY_MAX_RANK 64
/* Largest header (the dict text) accepted, so that a garbage length field
 * never drives an allocation. numpy's own headers are a few hundred bytes. */
#define TS_NPY_MAX_HEADER (1u << 20)

/* An array read from a file. The element type is one that numpy spells:
 * PRED (|b1), S8..S64, U8..U64, F16, F32, F64, C64, C128 -- or, after
 * ts_npy_read_as, the type that was asked for. */
typedef struct {
  ts_elem_t elem;
  int rank;
  int64_t dims[TS_NPY_MAX_RANK];
  /* Row-major (C order), little-endian, densely packed: one element per
   * ts_elem_bits/8 bytes (sub-byte types s4/u4/s2/u2/s1/u1 one per byte,
   * as XLA's host literals hold them). Owned: free with ts_npy_free.
   * Never NULL after a successful read, even when nbytes is 0. */
  void *data;
  size_t nbytes;
  int64_t count; /* number of elements: the product of dims (1 for rank 0) */
} ts_npy_array_t;

/* Reads `path`. Big-endian files are byteswapped; fortran_order True files are
 * transposed into row-major order. Every problem with the file is one error
 * in diag, "PATH: error: what" (e.g. "x.npy: error: unsupported dtype '<U8'"),
 * returning TS_ERR_PARSE (bad or unsupported content; data shorter or longer
 * than the header says is an error too), TS_ERR_INVALID_ARGUMENT (cannot open
 * or read), or TS_ERR_NOMEM. On error *out is left empty (safe to ts_npy_free). */
ts_status_t ts_npy_read(const char *path, ts_npy_array_t *out, ts_diag_t *diag);

/* Reads `path` as an array of element type `want`, applying the mapping for
 * types numpy lacks (issue 3, "Inputs and outputs"):
 *   want bf16, f8*, f6*, f4*: the file holds f32 (rounded to nearest even by
 *       ts_elem_convert) or the raw bits (<u2 for bf16, u1 for the others,
 *       one element per byte);
 *   want s4/u4 (and s2/u2/s1/u1): the file holds s8/u8 (or any int type whose
 *       values fit); stored one element per byte;
 *   any other want: the file's dtype must be exactly `want`.
 * A mismatch is "PATH: error: dtype <f8 where f32 is expected" (TS_ERR_PARSE). */
ts_status_t ts_npy_read_as(const char *path, ts_elem_t want, ts_npy_array_t *out,
                           ts_diag_t *diag);

/* Frees out->data and empties *a. NULL or an empty array is a no-op. */
void ts_npy_free(ts_npy_array_t *a);

/* Writes a row-major little-endian buffer (layout as ts_npy_array_t.data) as a
 * version 1.0 .npy (2.0 when the header needs it), always little-endian and
 * C order. Types numpy lacks are written as issue 3 says: bf16, f8*, f6* and
 * f4* upcast to f32 (exact), s4/s2/s1 as s8 and u4/u2/u1 as u8. Atomic: the bytes go to PATH.tmp.XXXXXX in the same
 * folder, which is renamed over PATH only when complete, so PATH never holds
 * a half-written file. `dims` may be NULL when rank is 0. */
ts_status_t ts_npy_write(const char *path, ts_elem_t elem, int rank, const int64_t *dims,
                         const void *data, ts_diag_t *diag);

/* The same into an open stream (a file of a ts_file_set_t): errors about
 * the array name `path`; a failed write is left in f's error flag and
 * errno, for ts_atomic_file_close to report with the cause. */
ts_status_t ts_npy_write_file(FILE *f, const char *path, ts_elem_t elem, int rank, const int64_t *dims,
                              const void *data, ts_diag_t *diag);

/* The numpy dtype string an element type is written with ("<f4", "|b1"),
 * after the mapping above; NULL when it cannot be written. */
const char *ts_npy_descr(ts_elem_t elem);

#endif
