/* The interpreter's opcode -> kernel table, filled once by every kernel file. */
#include "interp_internal.h"

#include <pthread.h>

static ts_kernel_fn table[TS_OP_COUNT];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void fill_table(void) {
  interp_kernels_elementwise(table);
  interp_kernels_rng(table);
  interp_kernels_movement(table);
  interp_kernels_gather(table);
  interp_kernels_sort(table);
  interp_kernels_reduce(table);
  interp_kernels_dot(table);
  interp_kernels_linalg(table);
}

ts_kernel_fn interp_kernel_for(ts_opcode_t op) {
  pthread_once(&table_once, fill_table);
  return (unsigned)op < TS_OP_COUNT ? table[op] : NULL;
}
