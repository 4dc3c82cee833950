/* The runtime's opcode -> kernel table, filled once by every kernel file. */
#include "kernels_internal.h"

#include <pthread.h>

static ts_kernel_fn table[TS_OP_COUNT];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void fill_table(void) {
  ts_kernels_elementwise(table);
  ts_kernels_rng(table);
  ts_kernels_movement(table);
  ts_kernels_gather(table);
  ts_kernels_sort(table);
  ts_kernels_reduce(table);
  ts_kernels_dot(table);
  ts_kernels_linalg(table);
}

ts_kernel_fn ts_kernel_for(ts_opcode_t op) {
  pthread_once(&table_once, fill_table);
  return (unsigned)op < TS_OP_COUNT ? table[op] : NULL;
}
