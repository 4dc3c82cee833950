/* kernels/ internals: index arithmetic, the reducer recognizer, kernel registration. */
#ifndef TS_KERNELS_INTERNAL_H
#define TS_KERNELS_INTERNAL_H

#include "ts_kernels.h"

#include <string.h>

/* ---- kernel registration ------------------------------------------------ */
/* Each kernel file fills the table entries of the opcodes it implements. */
void ts_kernels_elementwise(ts_kernel_fn *table); /* k_elementwise.c */
void ts_kernels_rng(ts_kernel_fn *table);         /* k_rng.c */
void ts_kernels_movement(ts_kernel_fn *table);    /* k_movement.c */
void ts_kernels_gather(ts_kernel_fn *table);      /* k_gather.c: gather, scatter */
void ts_kernels_sort(ts_kernel_fn *table);        /* k_sort.c: sort, top-k */
void ts_kernels_reduce(ts_kernel_fn *table);      /* k_reduce.c */
void ts_kernels_dot(ts_kernel_fn *table);         /* k_dot.c: dot, convolution */
void ts_kernels_linalg(ts_kernel_fn *table);      /* k_linalg.c: cholesky, triangular-solve, fft, batch-norm */

#endif
