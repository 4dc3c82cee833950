/* The collectives correctness matrix shared by the threads unit test and the
 * MPI launches: every operation x element-type class x group shape x
 * algorithm, with nccl-tests `-c` style inputs (small integers, so every sum
 * is exact in any order and the expected bits are known in closed form). */
#ifndef COLL_MATRIX_H
#define COLL_MATRIX_H

#include <stdint.h>
#include <stdio.h>

#include "ts_coll.h"

/* Sums a per-rank count over the world (the harness's own reduction, not
 * the library's: a broken all-reduce must not hide its own failures). */
typedef int64_t (*coll_matrix_sum_fn)(int64_t local, void *ctx);

typedef struct {
  coll_matrix_sum_fn sum;
  void *sum_ctx;
  FILE *report;  /* world rank 0 prints one line per case here; NULL: quiet */
  bool quick;    /* fewer counts and types (sanitizer builds) */
  /* buffers: 0 malloc; 1 ts_coll_alloc on every rank; 2 ts_coll_alloc on odd
   * world ranks only (mixed). 1 and 2 add a count above the eager size. */
  int alloc;
  /* > 1: the world gets this slice layout (ts_coll_comm_set_slices) and the
   * all-reduce, all-gather and reduce-scatter cases on it run hierarchical,
   * forced and by the table, besides the flat algorithms */
  int slices;
} coll_matrix_opts_t;

/* Runs the matrix on `world` (every rank calls it). Returns the number of
 * failed cases, the same on every rank. */
int coll_matrix_run(ts_coll_comm_t *world, const coll_matrix_opts_t *o);

#endif
