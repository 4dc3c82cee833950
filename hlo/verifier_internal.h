/* Shared by the verifier's two halves: verifier.c (structure, collectives,
 * shardings, the driver) and shape_inference.c (per-opcode shape rules and
 * called-computation signatures). Nothing outside hlo/ includes this. */
#ifndef TS_HLO_VERIFIER_INTERNAL_H
#define TS_HLO_VERIFIER_INTERNAL_H

#include "ts_hlo.h"

typedef struct {
  const ts_hlo_module_t *m;
  ts_source_t src; /* m->source, or a text-less one named after the module */
  ts_diag_t *diag;
  ts_arena_t *scratch;   /* inferred shapes and printed names; dies with the call */
  int64_t replica_count; /* effective: opts override the header */
  int64_t num_partitions;
} ts_vctx_t;

/* Reports `'<instr name>': <message>` at `loc` (the instruction's own
 * location when loc.line == 0) and returns TS_ERR_VERIFY. */
ts_status_t ts_vfy_error(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_loc_t loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A shape as text (`f32[2,3]`, no layout), in the scratch arena. */
const char *ts_vfy_shape_str(ts_vctx_t *v, const ts_shape_t *s);

/* The participants in each group of a collective. */
typedef struct {
  int64_t size;     /* from replica_groups, else the mode table of
                       hlo_text_format.md section 7 */
  int64_t alt;      /* a second size XLA also accepts (legacy per-replica
                       counts in cross-replica-and-partition mode); == size
                       otherwise */
  bool from_header; /* no replica_groups: the size came from the counts */
  const char *why;  /* where the size came from, for messages */
  const char *hint; /* how to change it, when from_header */
} ts_vgroup_t;

/* Validates collective `i`'s replica_groups and mode attributes and
 * returns its group size. */
ts_status_t ts_vfy_group_size(ts_vctx_t *v, const ts_hlo_instr_t *i, ts_vgroup_t *g);

/* Checks the attributes, operands, called-computation signatures and result
 * shape of one instruction against its opcode's rules. */
ts_status_t ts_vfy_instr_shape(ts_vctx_t *v, const ts_hlo_instr_t *i);

/* schedule_verifier.c: async pairs are one value; an is_scheduled module's
 * order respects data, control and buffer dependencies. */
ts_status_t ts_vfy_schedule(ts_vctx_t *v);

#endif
