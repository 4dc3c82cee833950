/* Tessera fusion: XLA-style instruction fusion on a (per-device) module.
 * Loop fusions (kind=kLoop) group elementwise ops with the broadcasts,
 * reshapes, transposes, slices, concatenates, iotas, selects, converts and
 * compares that feed them; a reduce becomes the root of an input fusion
 * (kind=kInput) with its producers fused in. Dots, collectives, control flow
 * and everything with side effects stay outside. An instruction is moved
 * into a fusion only when every user is in it, so nothing expensive is ever
 * computed twice; cheap producers (scalar constants, iota, broadcasts) may be
 * duplicated into each fusion that reads them. The result is ordinary HLO
 * (`fusion(...), kind=kLoop, calls=%fused_computation`) that the verifier
 * accepts and the interpreter runs by evaluating the called computation. */
#ifndef TS_FUSION_H
#define TS_FUSION_H

#include "ts_common.h"
#include "ts_hlo.h"

typedef struct {
  int min_size; /* fewest instructions worth a fusion (constants not counted); 0 means 2 */
} ts_fusion_opts_t;

typedef struct {
  int loop_fusions, input_fusions; /* fusions made */
  int fused_instrs;                /* instructions moved or copied into them */
} ts_fusion_stats_t;

/* Fuses in place: the entry, and the bodies of while, conditional and call
 * reached from it (not computations applied per element: reducers,
 * comparators). Scheduled modules keep their order (a fusion takes its
 * root's place). opts and stats may be NULL. */
ts_status_t ts_fusion_run(ts_hlo_module_t *m, const ts_fusion_opts_t *opts, ts_fusion_stats_t *stats,
                          ts_diag_t *diag);

/* Whether the opcode is elementwise in XLA's sense (one result element from
 * the same index of every operand). */
bool ts_fusion_is_elementwise(ts_opcode_t op);

#endif
