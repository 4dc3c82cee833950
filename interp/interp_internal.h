/* interp/ internals. The interpreter evaluates every opcode through the
 * kernels of kernels/ (ts_kernel_for, ts_reducer_op): one implementation of
 * each op's arithmetic. What makes it the oracle is the evaluator around
 * them (eval.c: values, control flow, simulated devices and collectives),
 * which shares nothing with the runtime's program, buffers and collectives;
 * once kernels are compiled (LLVM fusions), the runtime's differ too. */
#ifndef TS_INTERP_INTERNAL_H
#define TS_INTERP_INTERNAL_H

#include "ts_interp.h"
#include "ts_kernels.h"

#include <string.h>

#endif
