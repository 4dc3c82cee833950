/* interp/ internals: index arithmetic, the reducer recognizer, the
 * interpreter's own kernel table (its copy of the per-opcode code, kept apart
 * from kernels/ so that the oracle stays independent of the runtime). */
#ifndef TS_INTERP_INTERNAL_H
#define TS_INTERP_INTERNAL_H

#include "ts_interp.h"

#include <string.h>

#define TS_MAX_RANK 64

/* Whether the type computes as an integer (signed, unsigned or pred). */
static inline bool ts_elem_is_int(ts_elem_t e) {
  return e == TS_PRED || ts_elem_is_signed_int(e) || ts_elem_is_unsigned_int(e);
}

/* ---- index arithmetic --------------------------------------------------- */

/* Row-major strides in elements. */
static inline void ts_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= dims[d];
  }
}

/* Advances a multi-index in row-major order; false after the last one. */
static inline bool ts_index_next(int rank, const int64_t *dims, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

/* ---- reducers ----------------------------------------------------------- */

/* What a two-parameter scalar computation computes, when it is one binary op
 * of its two parameters (either order): the fast paths of reduce, scatter,
 * reduce-window and all-reduce use it. TS_OP_COUNT when it is anything else
 * (the caller then goes through ctx->apply). */
ts_opcode_t interp_reducer_op(const ts_hlo_comp_t *comp);

/* ---- the interpreter's kernels ------------------------------------------ */

/* The interpreter's kernel for an opcode; NULL for the ones the evaluator
 * itself handles (parameter, constant, tuple, get-tuple-element, call,
 * while, conditional, collectives, custom-call, ...) and for those with none. */
ts_kernel_fn interp_kernel_for(ts_opcode_t op);

/* Each kernel file fills the table entries of the opcodes it implements. */
void interp_kernels_elementwise(ts_kernel_fn *table); /* k_elementwise.c */
void interp_kernels_rng(ts_kernel_fn *table);         /* k_rng.c */
void interp_kernels_movement(ts_kernel_fn *table);    /* k_movement.c */
void interp_kernels_gather(ts_kernel_fn *table);      /* k_gather.c: gather, scatter */
void interp_kernels_sort(ts_kernel_fn *table);        /* k_sort.c: sort, top-k */
void interp_kernels_reduce(ts_kernel_fn *table);      /* k_reduce.c */
void interp_kernels_dot(ts_kernel_fn *table);         /* k_dot.c: dot, convolution */
void interp_kernels_linalg(ts_kernel_fn *table);      /* k_linalg.c: cholesky, triangular-solve, fft, batch-norm */

#endif
