/* Buffers of a computation in a given instruction order: which array leaf
 * of which instruction defines a buffer and which only refers to an
 * operand's, each buffer's live range, and the first-fit packing of those
 * ranges into one arena. The one definition of liveness that the runtime's
 * buffer assignment (runtime/program.c) and the scheduler's memory model
 * (scheduler/lhs.c) both use, so that what the scheduler predicts for an
 * order is what the runtime assigns for it. */
#ifndef TS_HLO_BUFFERS_H
#define TS_HLO_BUFFERS_H

#include "ts_hlo.h"

/* Offsets and sizes in an arena are multiples of this. */
#define TS_HLO_BUFFER_ALIGN 64

/* What leaf `leaf` (a flattened array leaf of the instruction's shape) is:
 * a buffer of its own, an operand's leaf under another name (tuple,
 * get-tuple-element, bitcast, reshape, copy, dones, sharding custom-calls,
 * ...: values are never written in place, so these share bytes), one of the
 * computation's parameter leaves, or a constant's read-only data. */
typedef enum {
  TS_LEAF_DEFINED,
  TS_LEAF_ALIASED,   /* the same buffer as leaf `op_leaf` of operand `op` */
  TS_LEAF_PARAMETER, /* a parameter instruction's leaf: the caller's buffer */
  TS_LEAF_CONSTANT,
} ts_leaf_kind_t;

typedef struct {
  ts_leaf_kind_t kind;
  int op, op_leaf; /* TS_LEAF_ALIASED only */
} ts_leaf_source_t;

ts_leaf_source_t ts_hlo_leaf_source(const ts_hlo_instr_t *i, int leaf);
/* The storage bytes of that leaf (0 for tokens), before alignment. */
uint64_t ts_hlo_leaf_bytes(const ts_hlo_instr_t *i, int leaf);

/* An async start's done, update or copy-done keeps the start's operands
 * live until it runs: the start this instruction belongs to, else NULL. */
const ts_hlo_instr_t *ts_hlo_async_start_of(const ts_hlo_instr_t *i);

typedef struct {
  const ts_hlo_instr_t *def; /* the defining instruction */
  int leaf;                  /* its leaf */
  uint64_t bytes;            /* storage bytes (0 for tokens), unaligned */
  int first, last;           /* order positions: defined at first, last read at last (n: live out) */
  int64_t offset;            /* ts_hlo_first_fit's placement; -1 before */
} ts_hlo_buffer_t;

/* The buffers of `c` run in `order` (a permutation of c->instrs, every
 * instruction after its operands). A buffer lives from its definition to
 * the last instruction that reads any leaf of a value holding it (reading a
 * tuple reads all of its leaves), an async done also reading its start's
 * operands; the root's leaves live to the end (position n). Buffers come in
 * (position, leaf) order. leaf_buf[leaf_start[q] + j] is the buffer of leaf
 * j of order[q]: an index into bufs, TS_HLO_CONSTANT_LEAF, or
 * TS_HLO_PARAM_LEAF(p) for the computation's parameter leaf p (parameters
 * flattened in parameter-number order), whose last read is param_last[p]
 * (-1: never read). The caller frees with ts_hlo_liveness_free. */
#define TS_HLO_CONSTANT_LEAF (-1)
#define TS_HLO_PARAM_LEAF(p) (-2 - (p))
typedef struct {
  int n;
  int nbufs;
  ts_hlo_buffer_t *bufs;
  int *leaf_start; /* [n + 1] */
  int *leaf_buf;
  int nparam_leaves;
  int *param_last; /* [nparam_leaves] */
} ts_hlo_liveness_t;

ts_status_t ts_hlo_liveness(const ts_hlo_comp_t *c, const ts_hlo_instr_t *const *order, ts_hlo_liveness_t *out);
void ts_hlo_liveness_free(ts_hlo_liveness_t *l); /* a zeroed one is fine */

/* Places every buffer of b[0..n) with bytes > 0 at the lowest
 * TS_HLO_BUFFER_ALIGN-aligned offset free over its whole live range
 * [first, last], the largest first (ties: earlier first, then lower index):
 * the greedy-by-size order of XLA's heap simulator. Sets each offset
 * (0 for empty buffers) and *arena_bytes, the arena's size. O((n + k) log n)
 * for k overlapping pairs (a segment tree over positions). */
ts_status_t ts_hlo_first_fit(ts_hlo_buffer_t *b, int n, uint64_t *arena_bytes);

#endif
